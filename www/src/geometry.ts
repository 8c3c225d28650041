// Per-pixel geometry for the cursor readout and the overlays (pure). Everything comes from the
// resolved geometry the crate passes (`Geometry` in crate/src/wasm/mod.rs): sensor positions on a
// grid computed by the kernel's own pixel-position function, so tilted, two-theta and curved
// detectors are handled alike. Inside a grid cell positions are interpolated bilinearly (exact
// for a flat detector). Pixel coordinates are continuous: pixel i spans [i, i+1).
import type { Geometry, V3 } from './protocol';

const dot = (a: V3, b: V3) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
const sub = (a: V3, b: V3): V3 => [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
const mul = (a: V3, s: number): V3 => [a[0] * s, a[1] * s, a[2] * s];
const norm = (a: V3) => Math.sqrt(dot(a, a));
const unit = (a: V3): V3 => mul(a, 1 / (norm(a) || 1));

export interface PixelInfo {
  /** Two-theta (degrees). */
  twoTheta: number;
  /** Resolution (Å); Infinity at the direct beam. */
  d: number;
  /** Fractional and nearest Miller indices of the first orientation. */
  hkl: V3;
  nearest: V3;
}

/** A ring of constant resolution as line segments (pixel coordinates) and a label position. */
export interface Ring {
  d: number;
  /** Flat list of segments: x0 y0 x1 y1 … */
  segments: number[];
}

/** Index i with nodes[i] <= x < nodes[i+1], clamped to the end cells (for extrapolation). */
function cell(nodes: number[], x: number): number {
  const n = nodes.length;
  if (n < 2) return 0;
  let lo = 0, hi = n - 2;
  if (x <= nodes[1]) return 0;
  if (x >= nodes[n - 2]) return n - 2;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (nodes[mid] <= x) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

export class DetectorMap {
  readonly g: Geometry;
  private beam: V3;
  private field: { n: number; m: number; tt: Float64Array } | null = null;

  constructor(g: Geometry) {
    this.g = g;
    this.beam = unit(g.beam);
  }

  get width() {
    return this.g.width;
  }
  get height() {
    return this.g.height;
  }

  /** Lab position (m) of continuous pixel coordinate (f, s) on the sensor surface. */
  position(f: number, s: number): V3 {
    const { f: fn, s: sn, pos } = this.g.grid;
    if (fn.length < 2 || sn.length < 2) {
      // a single row or column of pixels: the flat formula
      const g = this.g;
      return [0, 1, 2].map((c) => g.pix0[c] + g.fdet[c] * f * g.pixel + g.sdet[c] * s * g.pixel) as V3;
    }
    const i = cell(fn, f), j = cell(sn, s);
    const u = (f - fn[i]) / (fn[i + 1] - fn[i]);
    const v = (s - sn[j]) / (sn[j + 1] - sn[j]);
    const nf = fn.length;
    const at = (ii: number, jj: number, c: number) => pos[3 * (jj * nf + ii) + c];
    const out: V3 = [0, 0, 0];
    for (let c = 0; c < 3; c++) {
      out[c] = (1 - v) * ((1 - u) * at(i, j, c) + u * at(i + 1, j, c)) + v * ((1 - u) * at(i, j + 1, c) + u * at(i + 1, j + 1, c));
    }
    return out;
  }

  twoTheta(f: number, s: number): number {
    const d = unit(this.position(f, s));
    return Math.acos(Math.max(-1, Math.min(1, dot(d, this.beam))));
  }

  /** d, 2θ and hkl at continuous pixel coordinate (f, s) (pixel centre: f + 0.5). */
  pixelInfo(f: number, s: number): PixelInfo {
    const g = this.g;
    const dir = unit(this.position(f, s));
    const cos2t = Math.max(-1, Math.min(1, dot(dir, this.beam)));
    const S = mul(sub(dir, this.beam), 1 / g.lambda); // 1/m
    const sMag = norm(S);
    const hkl: V3 = [dot(S, g.a), dot(S, g.b), dot(S, g.c)];
    return {
      twoTheta: (Math.acos(cos2t) * 180) / Math.PI,
      d: sMag > 0 ? 1e10 / sMag : Infinity,
      hkl,
      nearest: hkl.map((x) => Math.round(x) + 0) as V3,
    };
  }

  /** Where the direct beam meets the sensor (pixel coordinates; may lie off the detector), or
   * null if it misses. Gauss-Newton on the position map, from the flat-plane intersection. */
  beamCentre(): [number, number] | null {
    const g = this.g, b = this.beam;
    const denom = dot(b, g.odet);
    if (Math.abs(denom) < 1e-12) return null;
    const t = dot(g.pix0, g.odet) / denom;
    if (t <= 0) return null;
    const rel = sub(mul(b, t), g.pix0);
    let f = dot(rel, g.fdet) / g.pixel, s = dot(rel, g.sdet) / g.pixel;
    // residual: the position's component perpendicular to the beam (0 on the beam)
    const r = (f: number, s: number): V3 => {
      const p = this.position(f, s);
      return sub(p, mul(b, dot(p, b)));
    };
    for (let it = 0; it < 8; it++) {
      const r0 = r(f, s);
      if (norm(r0) < 1e-4 * g.pixel) break;
      const h = 0.5;
      const jf = mul(sub(r(f + h, s), r0), 1 / h), js = mul(sub(r(f, s + h), r0), 1 / h);
      const a11 = dot(jf, jf), a12 = dot(jf, js), a22 = dot(js, js);
      const b1 = -dot(jf, r0), b2 = -dot(js, r0);
      const det = a11 * a22 - a12 * a12;
      if (Math.abs(det) < 1e-30) break;
      f += (a22 * b1 - a12 * b2) / det;
      s += (a11 * b2 - a12 * b1) / det;
    }
    const p = this.position(f, s);
    return dot(p, b) > 0 ? [f, s] : null;
  }

  /** 2θ sampled on an (n+1)×(m+1) lattice of points spanning the detector (cached). The
   * bilinear interpolation is unrolled here: this runs for every frame shown. */
  private ttField() {
    if (this.field) return this.field;
    const W = this.g.width, H = this.g.height;
    const n = Math.min(96, Math.max(8, W)), m = Math.min(96, Math.max(8, H));
    const tt = new Float64Array((n + 1) * (m + 1));
    const { f: fn, s: sn, pos } = this.g.grid;
    const [bx, by, bz] = this.beam;
    if (fn.length < 2 || sn.length < 2) {
      for (let j = 0; j <= m; j++) for (let i = 0; i <= n; i++) tt[j * (n + 1) + i] = this.twoTheta((i * W) / n, (j * H) / m);
      return (this.field = { n, m, tt });
    }
    const nf = fn.length;
    const ci = new Int32Array(n + 1), cu = new Float64Array(n + 1);
    for (let i = 0; i <= n; i++) {
      const f = (i * W) / n, c = cell(fn, f);
      ci[i] = c;
      cu[i] = (f - fn[c]) / (fn[c + 1] - fn[c]);
    }
    for (let j = 0; j <= m; j++) {
      const s = (j * H) / m, cj = cell(sn, s), v = (s - sn[cj]) / (sn[cj + 1] - sn[cj]);
      for (let i = 0; i <= n; i++) {
        const u = cu[i];
        const o00 = 3 * (cj * nf + ci[i]), o10 = o00 + 3, o01 = o00 + 3 * nf, o11 = o01 + 3;
        const w00 = (1 - u) * (1 - v), w10 = u * (1 - v), w01 = (1 - u) * v, w11 = u * v;
        const x = w00 * pos[o00] + w10 * pos[o10] + w01 * pos[o01] + w11 * pos[o11];
        const y = w00 * pos[o00 + 1] + w10 * pos[o10 + 1] + w01 * pos[o01 + 1] + w11 * pos[o11 + 1];
        const z = w00 * pos[o00 + 2] + w10 * pos[o10 + 2] + w01 * pos[o01 + 2] + w11 * pos[o11 + 2];
        const c = (x * bx + y * by + z * bz) / Math.sqrt(x * x + y * y + z * z);
        tt[j * (n + 1) + i] = Math.acos(c > 1 ? 1 : c < -1 ? -1 : c);
      }
    }
    return (this.field = { n, m, tt });
  }

  /** Largest 2θ (radians) on the detector. */
  maxTwoTheta(): number {
    let m = 0;
    for (const x of this.ttField().tt) if (x > m) m = x;
    return m;
  }

  /** Resolutions (Å) for a few rings spread over the detector: nice values at about 1/4, 1/2,
   * 3/4 and all of the largest 2θ. */
  ringResolutions(): number[] {
    const maxTT = this.maxTwoTheta();
    const lambdaAng = this.g.lambda * 1e10;
    const out: number[] = [];
    for (const frac of [0.25, 0.5, 0.75, 0.98]) {
      const tt = maxTT * frac;
      if (tt <= 0) continue;
      out.push(nice(lambdaAng / (2 * Math.sin(tt / 2))));
    }
    return [...new Set(out)];
  }

  /** The ring of resolution d (Å): the 2θ = 2 asin(λ/2d) contour (marching squares), whatever
   * the detector's tilt or shape: circles, ellipses, hyperbolas. */
  ring(dAng: number): Ring {
    const x = (this.g.lambda * 1e10) / (2 * dAng);
    const segments: number[] = [];
    if (!(x < 1)) return { d: dAng, segments };
    const level = 2 * Math.asin(x);
    const { n, m, tt } = this.ttField();
    const sx = this.g.width / n, sy = this.g.height / m;
    const lerp = (a: number, b: number) => (level - a) / (b - a);
    for (let j = 0; j < m; j++) {
      for (let i = 0; i < n; i++) {
        const v00 = tt[j * (n + 1) + i], v10 = tt[j * (n + 1) + i + 1];
        const v01 = tt[(j + 1) * (n + 1) + i], v11 = tt[(j + 1) * (n + 1) + i + 1];
        const pts: number[] = [];
        // edges: top (00-10), right (10-11), bottom (01-11), left (00-01)
        if ((v00 < level) !== (v10 < level)) pts.push(i + lerp(v00, v10), j);
        if ((v10 < level) !== (v11 < level)) pts.push(i + 1, j + lerp(v10, v11));
        if ((v01 < level) !== (v11 < level)) pts.push(i + lerp(v01, v11), j + 1);
        if ((v00 < level) !== (v01 < level)) pts.push(i, j + lerp(v00, v01));
        for (let k = 0; k + 3 < pts.length; k += 4) segments.push(pts[k] * sx, pts[k + 1] * sy, pts[k + 2] * sx, pts[k + 3] * sy);
      }
    }
    return { d: dAng, segments };
  }
}

function nice(d: number): number {
  const p = Math.pow(10, Math.floor(Math.log10(d)) - 1);
  return +(Math.round(d / p) * p).toPrecision(3);
}
