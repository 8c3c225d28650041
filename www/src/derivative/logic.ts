// The derivative view's pure parts (no DOM, no wasm; tests/unit/derivative.test.ts): what each
// parameter is called for a person, the symmetric colour range of a signed image, and the
// float file of a derivative. No physics here: the values come from the crate
// (`render_tangent`, crate/src/wasm/gradients.rs).

import { DERIVATIVE_PARAMS } from '../params';

/** What each of the crate's parameters (`tangent::ROWS` names) moves, for the menu (from the
 * crate's rows, params.ts); a name the crate adds later shows as itself. */
export const DESCRIPTIONS: Record<string, string> = Object.fromEntries(
  DERIVATIVE_PARAMS.map((p) => [p.name, p.description]),
);

/** The menu's label of a parameter: "rot_x — crystal rotation about x (per rad)". */
export function paramLabel(name: string, unit: string): string {
  const d = DESCRIPTIONS[name];
  return `${name}${d ? ` — ${d}` : ''} (per ${unit})`;
}

/** The colour range ±lim of a signed image: the q-quantile of |v| over its pixels that are not
 * 0 (most of a diffraction image's derivative is 0 away from the spots: a quantile over every
 * pixel would be 0), from a sample of at most 2^17 of them; 1 when every pixel is 0. */
export function symmetricLimit(data: Float32Array, q = 0.99): number {
  let nz = 0;
  for (let i = 0; i < data.length; i++) if (data[i] !== 0 && Number.isFinite(data[i])) nz++;
  if (nz === 0) return 1;
  const step = Math.max(1, Math.floor(nz / 131072));
  const s = new Float32Array(Math.ceil(nz / step));
  let j = 0, k = 0;
  for (let i = 0; i < data.length; i++) {
    const v = data[i];
    if (v === 0 || !Number.isFinite(v)) continue;
    if (k++ % step === 0) s[j++] = Math.abs(v);
  }
  const t = s.subarray(0, j).sort();
  const lim = t[Math.min(t.length - 1, Math.floor(q * t.length))];
  return lim > 0 ? lim : 1;
}

/** The largest |v| of an image. */
export function largestMagnitude(data: Float32Array): number {
  let maxAbs = 0;
  for (let i = 0; i < data.length; i++) {
    const a = Math.abs(data[i]);
    if (a > maxAbs) maxAbs = a;
  }
  return maxAbs;
}

/** A number for the readout and the bar: 4 significant digits, exponent form when small or large. */
export function fmtValue(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  if (v === 0) return '0';
  const a = Math.abs(v);
  return a >= 1e5 || a < 1e-3 ? v.toExponential(3) : String(+v.toPrecision(4));
}

/** The file name of a derivative's float image: what the CLI's `-gradfile PREFIX` writes for
 * one parameter (`PREFIX_<name>.bin`, raw little-endian float32, fast-major). */
export function derivativeFileName(prefix: string, param: string): string {
  return `${prefix}_${param}.bin`;
}
