// How the reciprocal-space view draws each lattice point (view3d.ts): its flag (2 in the
// diffraction condition, by the crate's flag or the view's own tolerance; 1 near the sphere,
// within 3 tolerances; 0 the haze), its size (∝ √strength, relative to the 99th percentile;
// larger in the condition) and its colour weights (strength, and the peak estimate relative to
// the 98th percentile of the points in the condition). The colour compares one quantity for
// every point, the crate's peak estimate (`peak`), not its `intensity`, which for the spots in
// the condition that land on a pixel is that pixel's value and for the others the peak.
import { len, quantile } from './scene-util';
import type { RecipData } from './types';

export interface PointStyle {
  /** World diameter per point, and (strength, intensity, flag) per point, in the table's order. */
  sizes: Float32Array;
  info: Float32Array;
  /** Points flagged 1 or 2, and the largest |r| (0 without points). */
  nNear: number;
  rMax: number;
}

/** `reuse`: the arrays of the previous call, kept when the count is unchanged. */
export function pointStyle(d: RecipData, nearWidth: number | undefined, reuse: { sizes: Float32Array; info: Float32Array }): PointStyle {
  const t = d.reflections;
  const n = t.count;
  const a = d.axes;
  const minSpacing = Math.min(len(a.a), len(a.b), len(a.c)) || 1;
  const nearW = nearWidth ?? minSpacing * 0.01;
  const strength = t.strength ?? t.intensity;
  const peak = t.peak ?? t.intensity;
  const sRef = quantile(strength, 0.99);
  // intensities of the points in condition
  const inI: number[] = [];
  for (let i = 0; i < n; i++) {
    const tol = t.tolerance ? t.tolerance[i] : nearW;
    if (t.inCondition ? t.inCondition[i] : Math.abs(t.excitation[i]) <= tol) inI.push(peak[i]);
  }
  inI.sort((x, y) => x - y);
  const iRef = inI.length ? inI[Math.min(inI.length - 1, Math.floor(0.98 * inI.length))] || 1 : 1;
  const sizes = reuse.sizes.length === n ? reuse.sizes : new Float32Array(n);
  const info = reuse.sizes.length === n ? reuse.info : new Float32Array(3 * n);
  const base = minSpacing * 0.32;
  let rmax = 0, nNear = 0;
  for (let i = 0; i < n; i++) {
    const ts = Math.min(1, Math.sqrt(Math.max(0, strength[i]) / (sRef || 1)));
    const tol = t.tolerance ? t.tolerance[i] : nearW;
    const inC = t.inCondition ? t.inCondition[i] === 1 : Math.abs(t.excitation[i]) <= tol;
    const near = !inC && Math.abs(t.excitation[i]) <= 3 * tol;
    const flag = inC ? 2 : near ? 1 : 0;
    info[3 * i] = ts;
    info[3 * i + 1] = Math.min(1, Math.sqrt(Math.max(0, peak[i]) / iRef));
    info[3 * i + 2] = flag;
    if (flag > 0) nNear++;
    sizes[i] = base * (0.35 + 0.65 * ts) * (flag === 2 ? 1.6 : 1);
    const rr = t.r[3 * i] ** 2 + t.r[3 * i + 1] ** 2 + t.r[3 * i + 2] ** 2;
    if (rr > rmax) rmax = rr;
  }
  return { sizes, info, nNear, rMax: Math.sqrt(rmax) };
}
