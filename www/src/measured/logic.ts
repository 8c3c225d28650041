// The measured-image comparison's pure parts (unit-tested in tests/unit/measured.test.ts): what a
// dropped file is, the form fields a file's geometry sets, and the difference image.
import { PARAMS, type ModelState } from '../params';

export type MeasuredKind = 'smv' | 'cbf' | 'hdf5' | 'expt' | 'geom' | null;

const HDF5 = [0x89, 0x48, 0x44, 0x46, 0x0d, 0x0a, 0x1a, 0x0a];

/** What a file is, by content: an SMV image, a miniCBF, an HDF5 file, a DIALS experiment list,
 * a CrystFEL geometry file (a panel's `name/fs`, `/ss`, `/corner_x` … line). */
export function measuredKind(bytes: Uint8Array): MeasuredKind {
  if (HDF5.every((b, i) => bytes[i] === b)) return 'hdf5';
  const head = new TextDecoder('latin1').decode(bytes.subarray(0, Math.min(bytes.length, 4096)));
  if (/^\{\s*\n?\s*HEADER_BYTES\s*=/.test(head)) return 'smv';
  if (head.startsWith('###CBF') || /_array_data\.data|x-CBF_BYTE_OFFSET/i.test(head)) return 'cbf';
  if (/^\s*\{/.test(head) && /"__id__"\s*:\s*"ExperimentList"/.test(head)) return 'expt';
  if (/^[ \t]*[A-Za-z0-9_]+\/(fs|ss|corner_x|corner_y|min_fs|max_fs|min_ss|max_ss)[ \t]*=/m.test(head)) return 'geom';
  return null;
}

/** What a file's name says it is (its content said nothing): a measured image (miniCBF,
 * NeXus/HDF5), an SMV image, a DIALS experiment list, a CrystFEL geometry file. */
export function kindByName(name: string): 'image' | 'smv' | 'expt' | 'geom' | null {
  const n = name.toLowerCase().replace(/\.(gz|bz2|xz)$/, '');
  if (/\.(cbf|h5|hdf5|hdf|nxs|nx5)$/.test(n)) return 'image';
  if (/\.(img|smv)$/.test(n)) return 'smv';
  if (/\.expt$/.test(n)) return 'expt';
  if (/\.geom$/.test(n)) return 'geom';
  return null;
}

/** What is said of a file the measured-image reader does not recognise by its content:
 * null where the file goes to its field anyway (a damaged `.expt` or `.geom`: the crate's reader
 * then says what is wrong, naming the file and line, at that field), or where a drop leaves it to
 * the simulation's fields (`chosen` false: anything but a measured image's name). */
export function unrecognised(name: string, chosen: boolean): string | null {
  const k = kindByName(name);
  if (k === 'expt' || k === 'geom') return null;
  if (k === 'image' || (chosen && k === 'smv')) return `${name}: not a readable CBF, HDF5 or SMV image`;
  if (!chosen) return null;
  return `${name}: not a measured image (CBF, HDF5 or SMV), a DIALS experiment list (.expt) or a CrystFEL geometry file (.geom)`;
}

/** Of HDF5 files given together, the master (the one named so, else the first). */
export function masterOf(names: string[]): number {
  const i = names.findIndex((n) => /master/i.test(n));
  return i >= 0 ? i : 0;
}

/** Fields a file's geometry replaces, cleared first: a detector preset, the square size, a
 * header image, a convention other than MOSFLM's (the beam centre is given in it), a region and
 * a mask of another size, an energy that would override the wavelength. */
export const CLEARED_BY_FILE = ['detector', 'detpixels', 'detsize', 'img', 'convention', 'roi', 'mask', 'energy'];

/** A flag's value as the form shows it: each number to 12 significant digits, so the float
 * noise of a conversion (51.400000000000006 mm) does not land in the form and the URL; a number
 * of 12 digits or fewer is kept as written. */
export function tidyValue(value: string): string {
  return value.replace(/[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?/g, (t) => {
    const digits = (t.split(/[eE]/)[0].match(/\d/g) ?? []).length;
    return digits > 12 ? String(Number(Number(t).toPrecision(12))) : t;
  });
}

/** The model with a file's geometry ([flag, value] words from the crate) in its fields. */
export function withFileGeometry(model: ModelState, words: [string, string][]): { model: ModelState; set: string[] } {
  const next: ModelState = { ...model };
  for (const k of CLEARED_BY_FILE) delete next[k];
  const set: string[] = [];
  for (const [flag, value] of words) {
    const p = PARAMS.find((q) => q.flag === flag);
    if (!p) continue;
    next[p.key] = tidyValue(value);
    set.push(p.key);
  }
  return { model: next, set };
}

/** A sum over the pixels both images trust (measured ≥ 0): the simulation's scale onto the
 * measured counts, Σm / Σs (1 when the simulation is empty). `sim` has `scale` detector pixels
 * per pixel (a preview). */
export function simScale(measured: Float32Array, w: number, h: number, sim: Float32Array, sw: number, scale: number): number {
  let sm = 0, ss = 0;
  for (let y = 0; y < h; y++) {
    const srow = Math.floor(y / scale) * sw;
    for (let x = 0; x < w; x++) {
      const m = measured[y * w + x];
      if (!(m >= 0)) continue;
      sm += m;
      ss += sim[srow + Math.floor(x / scale)];
    }
  }
  return ss > 0 ? sm / ss : 1;
}

/** measured − k·simulated per pixel (untrusted measured pixels: 0). */
export function difference(measured: Float32Array, w: number, h: number, sim: Float32Array, sw: number, scale: number, k: number): Float32Array {
  const out = new Float32Array(w * h);
  for (let y = 0; y < h; y++) {
    const srow = Math.floor(y / scale) * sw;
    for (let x = 0; x < w; x++) {
      const m = measured[y * w + x];
      out[y * w + x] = m >= 0 ? m - k * sim[srow + Math.floor(x / scale)] : 0;
    }
  }
  return out;
}

/** Whether a DIALS experiment list (`.expt` bytes) holds a crystal: its first experiment names
 * one and the list has it (the crate then takes the crystal from the file's matrix). */
export function hasCrystal(bytes: Uint8Array): boolean {
  try {
    const j = JSON.parse(new TextDecoder().decode(bytes)) as { experiment?: { crystal?: number }[]; crystal?: unknown[] };
    const i = j.experiment?.[0]?.crystal;
    return typeof i === 'number' && Array.isArray(j.crystal) && i >= 0 && i < j.crystal.length;
  } catch {
    return false;
  }
}
