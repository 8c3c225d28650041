// Thin adapter from the crate's reflection prediction (crate/src/predict.rs `Prediction`, passed
// through serde-wasm-bindgen: snake_case fields, `Option` as null/undefined, `[f64; 3]` as arrays)
// to the view's input (types.ts). Only the fields the view uses are declared.
import type { PointInfo, RecipData, RecipDetector, ReflectionTable, V3 } from './types';

/** Row `i` of a reflection table as one record (used by the 3D view's hover and by the image's
 * spot overlay): the spot is null where the ray misses the detector. */
export function reflectionInfo(t: ReflectionTable, i: number): PointInfo {
  const f = t.fast?.[i], s = t.slow?.[i];
  return {
    index: i,
    hkl: [t.hkl[3 * i], t.hkl[3 * i + 1], t.hkl[3 * i + 2]],
    d: t.d[i],
    twoTheta: t.twoTheta[i],
    excitation: t.excitation[i],
    intensity: t.intensity[i],
    inCondition: !!t.inCondition?.[i],
    fast: f !== undefined && Number.isFinite(f) ? f : null,
    slow: s !== undefined && Number.isFinite(s) ? s : null,
  };
}

export interface CrateReflection {
  h: number;
  k: number;
  l: number;
  r: ArrayLike<number>;
  d: number;
  f: number;
  excitation_error: number;
  tolerance: number;
  in_condition: boolean;
  two_theta: number;
  fast?: number | null;
  slow?: number | null;
  on_detector: boolean;
  intensity: number;
  /** The one-term peak estimate (every reflection). */
  peak?: number;
}

export interface CratePrediction {
  wavelength: number;
  beam: ArrayLike<number>;
  ewald_radius_range: ArrayLike<number>;
  divergence: number;
  a_star: ArrayLike<number>;
  b_star: ArrayLike<number>;
  c_star: ArrayLike<number>;
  spindle: ArrayLike<number>;
  detector_outline: ArrayLike<number>[];
  reflections: CrateReflection[];
  /** `predict(…, columns = true)`: the reflections as little-endian bytes (crate/src/wasm/mod.rs
   * `Columns`); `reflections` is then empty. */
  columns?: CrateColumns;
}

/** The crate's columns: `hkl` (i32 ×3), `r` (f32 ×3), `d`, `f`, `excitation_error`, `tolerance`,
 * `two_theta`, `fast`, `slow`, `intensity`, `peak` (f32), `flags` (u8: 1 in condition, 2 on the detector). */
export interface CrateColumns {
  count: number;
  [column: string]: Uint8Array | number;
}

const v3 = (a: ArrayLike<number>): V3 => [a[0], a[1], a[2]];

/** Columns from records (10^5 records: one pass, typed arrays). */
export function tableFromRecords(recs: CrateReflection[]): ReflectionTable {
  const n = recs.length;
  const t: ReflectionTable = {
    count: n,
    hkl: new Int32Array(3 * n),
    r: new Float32Array(3 * n),
    excitation: new Float32Array(n),
    d: new Float32Array(n),
    twoTheta: new Float32Array(n),
    intensity: new Float32Array(n),
    peak: new Float32Array(n),
    strength: new Float32Array(n),
    tolerance: new Float32Array(n),
    inCondition: new Uint8Array(n),
    fast: new Float32Array(n),
    slow: new Float32Array(n),
  };
  for (let i = 0; i < n; i++) {
    const x = recs[i];
    t.hkl[3 * i] = x.h;
    t.hkl[3 * i + 1] = x.k;
    t.hkl[3 * i + 2] = x.l;
    t.r[3 * i] = x.r[0];
    t.r[3 * i + 1] = x.r[1];
    t.r[3 * i + 2] = x.r[2];
    t.excitation[i] = x.excitation_error;
    t.d[i] = x.d;
    t.twoTheta[i] = x.two_theta;
    t.intensity[i] = x.intensity;
    t.peak![i] = x.peak ?? x.intensity;
    t.strength![i] = x.f * x.f;
    t.tolerance![i] = x.tolerance;
    t.inCondition![i] = x.in_condition ? 1 : 0;
    const on = x.on_detector && x.fast != null && x.slow != null;
    t.fast![i] = on ? (x.fast as number) : NaN;
    t.slow![i] = on ? (x.slow as number) : NaN;
  }
  return t;
}

/** A typed-array view of a column's bytes (copied when they are not 4-byte aligned). */
function column<T extends Float32Array | Int32Array>(c: CrateColumns, name: string, per: number, Type: { new (b: ArrayBuffer, o: number, n: number): T; new (n: number): T }): T {
  const u8 = c[name];
  if (!(u8 instanceof Uint8Array) || u8.byteLength !== 4 * per * c.count) throw new Error(`prediction columns: "${name}" missing or of the wrong length`);
  const aligned = u8.byteOffset % 4 === 0 ? u8 : u8.slice();
  return new Type(aligned.buffer as ArrayBuffer, aligned.byteOffset, per * c.count);
}

/** Columns from the crate's column bytes (no per-point objects). */
export function tableFromColumns(c: CrateColumns): ReflectionTable {
  const n = c.count;
  const f = column(c, 'f', 1, Float32Array);
  const flags = c.flags;
  if (!(flags instanceof Uint8Array) || flags.length !== n) throw new Error('prediction columns: "flags" missing or of the wrong length');
  const strength = new Float32Array(n);
  const inCondition = new Uint8Array(n);
  const fast = column(c, 'fast', 1, Float32Array).slice();
  const slow = column(c, 'slow', 1, Float32Array).slice();
  for (let i = 0; i < n; i++) {
    strength[i] = f[i] * f[i];
    inCondition[i] = flags[i] & 1;
    if (!(flags[i] & 2)) fast[i] = slow[i] = NaN;
  }
  return {
    count: n,
    hkl: column(c, 'hkl', 3, Int32Array),
    r: column(c, 'r', 3, Float32Array),
    excitation: column(c, 'excitation_error', 1, Float32Array),
    d: column(c, 'd', 1, Float32Array),
    twoTheta: column(c, 'two_theta', 1, Float32Array),
    intensity: column(c, 'intensity', 1, Float32Array),
    ...(c.peak ? { peak: column(c, 'peak', 1, Float32Array) } : {}),
    strength,
    tolerance: column(c, 'tolerance', 1, Float32Array),
    inCondition,
    fast,
    slow,
  };
}

/** The view's input from a crate prediction. `position` (the page's pixel -> lab mapping, e.g.
 * its DetectorMap) puts a hovered spot exactly where the image shows it. */
export function fromPrediction(p: CratePrediction, position?: RecipDetector['position']): RecipData {
  const rr = p.ewald_radius_range;
  return {
    reflections: p.columns ? tableFromColumns(p.columns) : tableFromRecords(p.reflections),
    beam: v3(p.beam),
    lambda: p.wavelength,
    ewaldRadiusRange: rr && rr[0] !== rr[1] ? [rr[0], rr[1]] : undefined,
    divergence: p.divergence || undefined,
    axes: { a: v3(p.a_star), b: v3(p.b_star), c: v3(p.c_star) },
    spindle: v3(p.spindle),
    detector: p.detector_outline?.length ? { outline: p.detector_outline.map(v3), position } : undefined,
  };
}

/** A flat detector from its origin (outer corner of pixel (0,0), m), unit fast/slow axes, pixel
 * pitch (m) and size in pixels: outline and pixel -> lab mapping. */
export function flatDetector(origin: V3, fast: V3, slow: V3, pixel: number, width: number, height: number): RecipDetector {
  const position = (f: number, s: number): V3 => [0, 1, 2].map((c) => origin[c] + (fast[c] * f + slow[c] * s) * pixel) as V3;
  return { outline: [position(0, 0), position(width, 0), position(width, height), position(0, height)], position, fast, slow };
}

/** Reciprocal basis a* = (b × c)/V … of real-space vectors (units 1/length of the input). */
export function reciprocalBasis(a: V3, b: V3, c: V3): { a: V3; b: V3; c: V3 } {
  const cross = (u: V3, v: V3): V3 => [u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]];
  const bc = cross(b, c), ca = cross(c, a), ab = cross(a, b);
  const vol = a[0] * bc[0] + a[1] * bc[1] + a[2] * bc[2];
  if (!(Math.abs(vol) > 0)) throw new Error('reciprocalBasis: the cell vectors are coplanar');
  const s = (v: V3): V3 => [v[0] / vol, v[1] / vol, v[2] / vol];
  return { a: s(bc), b: s(ca), c: s(ab) };
}
