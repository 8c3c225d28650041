// The model's parameters (MODEL.md §2) as UI fields. Each field's key is its URL parameter
// name and the <nanobragg-view> attribute name; `argsFromState` turns a state into upstream
// nanoBragg command-line words.
import { splitArgs } from './client';

export type Kind = 'num' | 'int' | 'vec' | 'choice' | 'bool' | 'file' | 'text';
export type GroupId = 'crystal' | 'sf' | 'beam' | 'detector' | 'gonio' | 'noise' | 'advanced';

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
  placeholder?: string;
}

export const GROUPS: { id: GroupId; label: string }[] = [
  { id: 'crystal', label: 'Crystal' },
  { id: 'sf', label: 'Structure factors' },
  { id: 'beam', label: 'Beam' },
  { id: 'detector', label: 'Detector' },
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
  },
  { key: 'fudge', flag: '-fudge', label: 'Shape fudge factor', group: 'crystal', kind: 'num' },
  // ---- structure factors ----
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
  { key: 'img', flag: '-img', label: 'Header from an SMV image', group: 'detector', kind: 'file', help: 'detector size, distance, beam centre, wavelength; later fields override' },
  { key: 'dmin', flag: '-dmin', label: 'Resolution limit', group: 'detector', kind: 'num', unit: 'Å' },
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

export type State = Record<string, string>;

/** View, backend and precision settings that also travel in the URL. */
export const VIEW_KEYS = ['backend', 'precision', 'cmap', 'scaling', 'contrast', 'rings', 'beamc'] as const;

export interface Preset {
  id: string;
  label: string;
  state: State;
}

export const PRESETS: Preset[] = [
  {
    id: 'cubic', label: 'Simple cubic (teaching)',
    state: { cell: '100 100 100 90 90 90', lambda: '6.2', N: '5', default_F: '100', distance: '100', detpixels: '512', pixel: '0.2' },
  },
  {
    id: 'protein', label: 'Protein-sized cell with mosaicity',
    state: {
      cell: '79 79 38 90 90 90', lambda: '1.0', N: '12', default_F: '100', distance: '120', detpixels: '512', pixel: '0.3',
      misset: '10 25 5', mosaic: '0.3', mosaic_domains: '12', oversample: '1',
    },
  },
  {
    id: 'triclinic', label: 'Small-molecule triclinic',
    state: {
      cell: '5.8 7.1 9.3 81 77 68', lambda: '0.71', N: '25', default_F: '100', distance: '50', detpixels: '512', pixel: '0.3',
      misset: '12 -35 50', oversample: '1',
    },
  },
];

export const DEFAULT_PRESET = PRESETS[0];

/** Per-field input errors (empty when the state is well-formed). */
export function validate(state: State): Record<string, string> {
  const errs: Record<string, string> = {};
  for (const p of PARAMS) {
    const v = (state[p.key] ?? '').trim();
    if (!v) continue;
    if (p.kind === 'num' && !isNum(v)) errs[p.key] = `${p.flag}: "${v}" is not a number`;
    if (p.kind === 'int' && !/^[+-]?\d+$/.test(v)) errs[p.key] = `${p.flag}: "${v}" is not a whole number`;
    if (p.kind === 'vec') {
      const words = v.split(/[\s,]+/).filter(Boolean);
      if (p.word && words.length === 1 && words[0] === p.word) continue;
      const [lo, hi] = p.n!;
      if (words.length < lo || words.length > hi || !words.every(isNum)) {
        errs[p.key] = `${p.flag}: needs ${lo === hi ? lo : `${lo} to ${hi}`} numbers${p.word ? ` or "${p.word}"` : ''}`;
      }
    }
  }
  return errs;
}

function isNum(s: string) {
  return /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(s);
}

/** Command-line words for a state. Bare switches come first (upstream ignores -curved_det when
 * it is the last word), and -misset_seed precedes -misset (see golden/README.md). */
export function argsFromState(state: State): string[] {
  const switches: string[] = [];
  const words: string[] = [];
  for (const p of PARAMS) {
    const v = (state[p.key] ?? '').trim();
    if (!v) continue;
    switch (p.kind) {
      case 'bool':
        if (v !== '0' && v !== 'false') switches.push(p.flag);
        break;
      case 'choice': {
        const c = p.choices!.find((c) => c.value === v);
        if (c) switches.push(...c.flags);
        break;
      }
      case 'vec':
        words.push(p.flag, ...v.split(/[\s,]+/).filter(Boolean));
        break;
      case 'text':
        words.push(...splitArgs(v));
        break;
      default:
        words.push(p.flag, v);
    }
  }
  return [...switches, ...words];
}

/** The field a simulator error message is about: the longest flag it names. */
export function fieldForError(message: string): string | null {
  let best: ParamDef | null = null;
  for (const p of PARAMS) {
    const flags = p.kind === 'choice' ? p.choices!.flatMap((c) => c.flags) : p.flag ? [p.flag] : [];
    for (const f of flags) {
      const re = new RegExp(`(^|[^\\w-])${f.replace(/[-]/g, '\\-')}(?![\\w])`);
      if (re.test(message) && (!best || f.length > (best.flag?.length ?? 0))) best = p;
    }
  }
  if (best) return best.key;
  // File errors name the file: find a file field whose value is mentioned.
  return null;
}

export function stateFromUrl(params: URLSearchParams): State | null {
  const s: State = {};
  let any = false;
  for (const p of PARAMS) {
    const v = params.get(p.key);
    if (v !== null) { s[p.key] = v; any = true; }
  }
  return any ? s : null;
}

export function stateToUrl(state: State, view: Record<string, string>, base: URLSearchParams): URLSearchParams {
  const out = new URLSearchParams();
  for (const [k, v] of base) if (!PARAM_BY_KEY.has(k) && !(VIEW_KEYS as readonly string[]).includes(k)) out.set(k, v);
  for (const p of PARAMS) {
    const v = (state[p.key] ?? '').trim();
    if (v) out.set(p.key, v);
  }
  for (const [k, v] of Object.entries(view)) if (v !== '') out.set(k, v);
  return out;
}

/** Words for a fast reduced-resolution preview of the same detector: 1/factor the pixels,
 * factor× the pixel size, one sub-pixel. Null when the flags use pixel units (ROI, ORGX, mask). */
export function previewArgs(args: string[], width: number, height: number, pixelMm: number, factor: number): string[] | null {
  if (factor <= 1) return null;
  if (args.some((a) => /^-(roi|ORGX|ORGY|mask|img|Xclose|Yclose|pix0_vector)/.test(a))) return null;
  return [
    ...args,
    '-detpixels_f', String(Math.max(1, Math.round(width / factor))),
    '-detpixels_s', String(Math.max(1, Math.round(height / factor))),
    '-pixel', String(pixelMm * factor),
    '-oversample', '1',
  ];
}
