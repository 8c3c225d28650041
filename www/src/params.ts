// The model's parameters (MODEL.md §2) as UI fields: the flag schema the form, the URL codec
// (state.ts) and the argument builder (args.ts) share. Each field's key is its URL parameter name
// and (lower-cased) the <nanobragg-view> attribute name. No defaults here: see state.ts.

import DETECTORS from './detectors.json';

export type Kind = 'num' | 'int' | 'vec' | 'choice' | 'bool' | 'file' | 'text';
export type GroupId = 'crystal' | 'sf' | 'beam' | 'detector' | 'layers' | 'gonio' | 'noise' | 'advanced';

export interface ParamDef {
  key: string;
  flag: string;
  label: string;
  group: GroupId;
  kind: Kind;
  unit?: string;
  /** Number of values for 'vec' (min..max). */
  n?: [number, number];
  /** Range slider bounds and step (live updates while dragging). */
  slider?: [number, number, number];
  choices?: { value: string; label: string; flags: string[] }[];
  help?: string;
  /** Accepts this word instead of numbers (misset random). */
  word?: string;
  /** A layer on top of the simulation (background, detector effects: the realistic chain,
   * crate/src/realistic.rs): no nanoBragg word; `flag` is empty. */
  layer?: boolean;
  placeholder?: string;
}

export const GROUPS: { id: GroupId; label: string }[] = [
  { id: 'crystal', label: 'Crystal' },
  { id: 'sf', label: 'Structure factors' },
  { id: 'beam', label: 'Beam' },
  { id: 'detector', label: 'Detector' },
  { id: 'layers', label: 'Background and detector effects' },
  { id: 'gonio', label: 'Goniometer' },
  { id: 'noise', label: 'Noise and SMV output' },
  { id: 'advanced', label: 'Advanced' },
];

const yes = (flag: string) => [flag];

export const PARAMS: ParamDef[] = [
  // ---- crystal ----
  { key: 'cell', flag: '-cell', label: 'Unit cell a b c α β γ', group: 'crystal', kind: 'vec', n: [1, 6], unit: 'Å, °', placeholder: '100 100 100 90 90 90' },
  { key: 'mat', flag: '-mat', label: 'Orientation matrix file (MOSFLM A)', group: 'crystal', kind: 'file', help: 'overrides the cell orientation; -cell still sets the lengths' },
  { key: 'N', flag: '-N', label: 'Cells per axis N', group: 'crystal', kind: 'int', slider: [1, 60, 1] },
  { key: 'Na', flag: '-Na', label: 'Cells along a', group: 'crystal', kind: 'int' },
  { key: 'Nb', flag: '-Nb', label: 'Cells along b', group: 'crystal', kind: 'int' },
  { key: 'Nc', flag: '-Nc', label: 'Cells along c', group: 'crystal', kind: 'int' },
  { key: 'xtal_size', flag: '-xtal_size', label: 'Crystal size', group: 'crystal', kind: 'num', unit: 'mm', help: 'overrides N' },
  { key: 'misset_seed', flag: '-misset_seed', label: 'Random misset seed', group: 'crystal', kind: 'int' },
  { key: 'misset', flag: '-misset', label: 'Misset angles x y z (or "random")', group: 'crystal', kind: 'vec', n: [3, 3], unit: '°', word: 'random' },
  { key: 'mosaic', flag: '-mosaic', label: 'Mosaic spread', group: 'crystal', kind: 'num', unit: '°', slider: [0, 3, 0.01] },
  { key: 'mosaic_domains', flag: '-mosaic_domains', label: 'Mosaic domains', group: 'crystal', kind: 'int', slider: [1, 100, 1] },
  { key: 'mosaic_seed', flag: '-mosaic_seed', label: 'Mosaic seed', group: 'crystal', kind: 'int' },
  {
    key: 'shape', flag: '', label: 'Crystal shape (spot profile)', group: 'crystal', kind: 'choice', choices: [
      { value: '', label: 'Square (default)', flags: [] },
      { value: 'round', label: 'Round', flags: yes('-round_xtal') },
      { value: 'gauss', label: 'Gaussian', flags: yes('-gauss_xtal') },
      { value: 'tophat', label: 'Top-hat', flags: yes('-tophat_spots') },
    ],
    help: "Gaussian and top-hat are upstream's: their spot width scales as 1/N³ and with the cell in Å (MODEL.md C-QUIRK 16), so N changes them far more than it would a real crystal's; square and round scale as 1/N",
  },
  { key: 'fudge', flag: '-fudge', label: 'Shape fudge factor', group: 'crystal', kind: 'num' },
  // ---- structure factors ----
  { key: 'pdb', flag: '-pdb', label: 'Atomic model (PDB / mmCIF)', group: 'sf', kind: 'file', help: 'structure factors and cell from a model (computed once, then cached); overrides the cell, HKL file and default F' },
  { key: 'hkl', flag: '-hkl', label: 'HKL file (h k l F)', group: 'sf', kind: 'file' },
  { key: 'default_F', flag: '-default_F', label: 'Default F', group: 'sf', kind: 'num', slider: [0, 1000, 1], unit: 'e⁻' },
  {
    key: 'interpolate', flag: '', label: 'Tricubic F interpolation', group: 'sf', kind: 'choice', choices: [
      { value: '', label: 'Automatic', flags: [] },
      { value: 'on', label: 'On', flags: yes('-interpolate') },
      { value: 'off', label: 'Off', flags: yes('-nointerpolate') },
    ],
  },
  // ---- beam ----
  { key: 'lambda', flag: '-lambda', label: 'Wavelength', group: 'beam', kind: 'num', unit: 'Å', slider: [0.3, 10, 0.01] },
  { key: 'energy', flag: '-energy', label: 'Photon energy (instead of λ)', group: 'beam', kind: 'num', unit: 'eV' },
  { key: 'dispersion', flag: '-dispersion', label: 'Spectral dispersion Δλ/λ', group: 'beam', kind: 'num', unit: '%', slider: [0, 10, 0.1] },
  { key: 'dispsteps', flag: '-dispsteps', label: 'Wavelength steps', group: 'beam', kind: 'int' },
  { key: 'divergence', flag: '-divergence', label: 'Beam divergence', group: 'beam', kind: 'num', unit: 'mrad', slider: [0, 10, 0.1] },
  { key: 'hdivrange', flag: '-hdivrange', label: 'Horizontal divergence', group: 'beam', kind: 'num', unit: 'mrad' },
  { key: 'vdivrange', flag: '-vdivrange', label: 'Vertical divergence', group: 'beam', kind: 'num', unit: 'mrad' },
  { key: 'divsteps', flag: '-divsteps', label: 'Divergence steps', group: 'beam', kind: 'int' },
  {
    key: 'div_shape', flag: '', label: 'Divergence grid', group: 'beam', kind: 'choice', choices: [
      { value: '', label: 'Round (default)', flags: [] },
      { value: 'square', label: 'Square', flags: yes('-square_div') },
    ],
  },
  { key: 'sourcefile', flag: '-sourcefile', label: 'Source file (X Y Z weight λ)', group: 'beam', kind: 'file' },
  { key: 'polar', flag: '-polar', label: 'Kahn polarisation factor', group: 'beam', kind: 'num', slider: [0, 1, 0.01] },
  { key: 'nopolar', flag: '-nopolar', label: 'No polarisation correction', group: 'beam', kind: 'bool' },
  { key: 'fluence', flag: '-fluence', label: 'Fluence', group: 'beam', kind: 'num', unit: 'photons/m²' },
  { key: 'flux', flag: '-flux', label: 'Flux', group: 'beam', kind: 'num', unit: 'photons/s' },
  { key: 'exposure', flag: '-exposure', label: 'Exposure', group: 'beam', kind: 'num', unit: 's' },
  { key: 'beamsize', flag: '-beamsize', label: 'Beam size', group: 'beam', kind: 'num', unit: 'mm' },
  { key: 'water', flag: '-water', label: 'Water background thickness', group: 'beam', kind: 'num', unit: 'µm', slider: [0, 1000, 1] },
  // ---- detector ----
  {
    key: 'convention', flag: '', label: 'Convention', group: 'detector', kind: 'choice', choices: [
      { value: '', label: 'MOSFLM (default)', flags: [] },
      { value: 'xds', label: 'XDS', flags: yes('-xds') },
      { value: 'dials', label: 'DIALS', flags: yes('-dials') },
      { value: 'adxv', label: 'ADXV', flags: yes('-adxv') },
      { value: 'denzo', label: 'DENZO', flags: yes('-denzo') },
    ],
  },
  {
    // the crate's detector presets (`presets::PRESETS`, copied to detectors.json and kept equal by
    // crate/tests/detectors_json.rs): names, labels, pixels and pixel size
    key: 'detector', flag: '-detector', label: 'Detector model', group: 'detector', kind: 'choice', choices: [
      { value: '', label: 'Square pixels (the fields below)', flags: [] },
      ...DETECTORS.map((d) => ({
        value: d.name, label: `${d.label} (${d.fast_pixels}×${d.slow_pixels}, ${+(d.pixel_mm * 1000).toPrecision(4)} µm)`, flags: ['-detector', d.name],
      })),
    ],
  },
  { key: 'distance', flag: '-distance', label: 'Distance', group: 'detector', kind: 'num', unit: 'mm', slider: [20, 1000, 1] },
  { key: 'detpixels', flag: '-detpixels', label: 'Pixels per side', group: 'detector', kind: 'int' },
  { key: 'detpixels_f', flag: '-detpixels_f', label: 'Fast pixels', group: 'detector', kind: 'int' },
  { key: 'detpixels_s', flag: '-detpixels_s', label: 'Slow pixels', group: 'detector', kind: 'int' },
  { key: 'pixel', flag: '-pixel', label: 'Pixel size', group: 'detector', kind: 'num', unit: 'mm' },
  { key: 'detsize', flag: '-detsize', label: 'Detector size', group: 'detector', kind: 'num', unit: 'mm' },
  { key: 'Xbeam', flag: '-Xbeam', label: 'Beam centre X', group: 'detector', kind: 'num', unit: 'mm' },
  { key: 'Ybeam', flag: '-Ybeam', label: 'Beam centre Y', group: 'detector', kind: 'num', unit: 'mm' },
  { key: 'twotheta', flag: '-twotheta', label: 'Detector two-theta', group: 'detector', kind: 'num', unit: '°', slider: [-90, 90, 0.5] },
  { key: 'detector_rotx', flag: '-detector_rotx', label: 'Detector rotation x', group: 'detector', kind: 'num', unit: '°', slider: [-45, 45, 0.5] },
  { key: 'detector_roty', flag: '-detector_roty', label: 'Detector rotation y', group: 'detector', kind: 'num', unit: '°', slider: [-45, 45, 0.5] },
  { key: 'detector_rotz', flag: '-detector_rotz', label: 'Detector rotation z', group: 'detector', kind: 'num', unit: '°', slider: [-180, 180, 1] },
  { key: 'curved_det', flag: '-curved_det', label: 'Curved (spherical) detector', group: 'detector', kind: 'bool' },
  { key: 'point_pixel', flag: '-point_pixel', label: 'Point pixels (1/R²)', group: 'detector', kind: 'bool' },
  { key: 'detector_thick', flag: '-detector_thick', label: 'Sensor thickness', group: 'detector', kind: 'num', unit: 'µm' },
  { key: 'detector_abs', flag: '-detector_abs', label: 'Sensor attenuation depth', group: 'detector', kind: 'num', unit: 'µm' },
  { key: 'thicksteps', flag: '-thicksteps', label: 'Sensor layers', group: 'detector', kind: 'int' },
  { key: 'oversample', flag: '-oversample', label: 'Sub-pixels per axis', group: 'detector', kind: 'int', slider: [1, 8, 1] },
  { key: 'roi', flag: '-roi', label: 'Region of interest xmin xmax ymin ymax', group: 'detector', kind: 'vec', n: [4, 4], unit: 'px' },
  { key: 'mask', flag: '-mask', label: 'Mask image (SMV; 0 = skip pixel)', group: 'detector', kind: 'file' },
  { key: 'expt', flag: '-expt', label: 'DIALS experiment (.expt)', group: 'detector', kind: 'file', help: 'detector, beam, spindle and the crystal DIALS refined; replaces the detector fields; the misset and cell fields turn and resize its crystal (the cell field starts at the file\'s)' },
  { key: 'geom', flag: '-geom', label: 'CrystFEL geometry (.geom)', group: 'detector', kind: 'file', help: 'panels (corner, fs/ss vectors, res, clen), bad regions as masks; replaces the detector fields (docs/geometry.md)' },
  { key: 'img', flag: '-img', label: 'Header from an SMV image', group: 'detector', kind: 'file', help: 'detector size, distance, beam centre, wavelength; later fields override' },
  { key: 'dmin', flag: '-dmin', label: 'Resolution limit', group: 'detector', kind: 'num', unit: 'Å' },
  // ---- layers (the realistic chain) ----
  { key: 'air', flag: '', layer: true, label: 'Air path (background)', group: 'layers', kind: 'num', unit: 'mm', help: 'air scattering (nonBragg); with any layer on, the water above is nonBragg\'s water layer too' },
  { key: 'detnoise', flag: '', layer: true, label: 'Detector noise (Poisson, read-out)', group: 'layers', kind: 'bool', help: 'the image is then in ADU, as the detector records it' },
  { key: 'readout', flag: '', layer: true, label: 'Read-out noise', group: 'layers', kind: 'num', unit: 'ADU' },
  { key: 'psf', flag: '', layer: true, label: 'PSF FWHM', group: 'layers', kind: 'num', unit: 'µm' },
  { key: 'gain', flag: '', layer: true, label: 'Gain', group: 'layers', kind: 'num', unit: 'ADU/photon' },
  {
    key: 'show', flag: '', layer: true, label: 'Layers shown', group: 'layers', kind: 'choice', choices: [
      { value: '', label: 'Spots and background', flags: [] },
      { value: 'spots', label: 'Spots only', flags: [] },
      { value: 'background', label: 'Background only', flags: [] },
    ],
  },
  // ---- goniometer ----
  { key: 'phi', flag: '-phi', label: 'Spindle start φ', group: 'gonio', kind: 'num', unit: '°', slider: [0, 360, 0.5] },
  { key: 'osc', flag: '-osc', label: 'Oscillation range', group: 'gonio', kind: 'num', unit: '°', slider: [0, 5, 0.05] },
  { key: 'phisteps', flag: '-phisteps', label: 'φ steps', group: 'gonio', kind: 'int' },
  { key: 'phistep', flag: '-phistep', label: 'φ step', group: 'gonio', kind: 'num', unit: '°' },
  { key: 'spindle_axis', flag: '-spindle_axis', label: 'Spindle axis x y z', group: 'gonio', kind: 'vec', n: [3, 3] },
  // ---- noise / SMV ----
  { key: 'seed', flag: '-seed', label: 'Noise seed', group: 'noise', kind: 'int' },
  { key: 'adc', flag: '-adc', label: 'ADC offset', group: 'noise', kind: 'num' },
  { key: 'scale', flag: '-scale', label: 'SMV scale (0 = auto)', group: 'noise', kind: 'num' },
  // ---- advanced ----
  { key: 'extra', flag: '', label: 'Extra flags (upstream syntax)', group: 'advanced', kind: 'text', placeholder: '-oversample_omega -phisteps 3' },
];

export const PARAM_BY_KEY = new Map(PARAMS.map((p) => [p.key, p]));

/** Model parameters by field key (values as typed; empty = flag absent). */
export type ModelState = Record<string, string>;

/** Flags a field can produce (the choice fields produce switches). */
export function fieldFlags(p: ParamDef): string[] {
  return p.kind === 'choice' ? p.choices!.flatMap((c) => c.flags.filter((f) => f.startsWith('-'))) : p.flag ? [p.flag] : [];
}
