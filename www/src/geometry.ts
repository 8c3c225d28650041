// Per-pixel geometry for the cursor readout and the overlays, from the plan's detector and
// crystal vectors (flat detector; the curved detector is approximated by its tangent plane).
import type { Geometry, V3 } from './protocol';

const dot = (a: V3, b: V3) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
const add = (a: V3, b: V3): V3 => [a[0] + b[0], a[1] + b[1], a[2] + b[2]];
const sub = (a: V3, b: V3): V3 => [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
const mul = (a: V3, s: number): V3 => [a[0] * s, a[1] * s, a[2] * s];
const norm = (a: V3) => Math.sqrt(dot(a, a));
const unit = (a: V3): V3 => mul(a, 1 / (norm(a) || 1));
const cross = (a: V3, b: V3): V3 => [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];

export interface PixelInfo {
  /** Two-theta (degrees). */
  twoTheta: number;
  /** Resolution (Å); Infinity at the direct beam. */
  d: number;
  /** Fractional and nearest Miller indices of the first orientation. */
  hkl: V3;
  nearest: V3;
}

/** Geometry of pixel centre (f, s) in pixel units (fractional allowed: f=10.5 is a pixel edge). */
export function pixelInfo(g: Geometry, f: number, s: number): PixelInfo {
  const p = add(g.pix0, add(mul(g.fdet, f * g.pixel), mul(g.sdet, s * g.pixel)));
  const dir = unit(p);
  const inc = unit(g.beam);
  const cos2t = Math.max(-1, Math.min(1, dot(dir, inc)));
  const twoTheta = (Math.acos(cos2t) * 180) / Math.PI;
  const S = mul(sub(dir, inc), 1 / g.lambda); // 1/m
  const sMag = norm(S);
  const d = sMag > 0 ? 1e10 / sMag : Infinity;
  const hkl: V3 = [dot(S, g.a), dot(S, g.b), dot(S, g.c)];
  return { twoTheta, d, hkl, nearest: hkl.map((x) => Math.round(x) + 0) as V3 };
}

/** Where the direct beam meets the detector plane, in pixel units (null if it misses). */
export function beamCentre(g: Geometry): [number, number] | null {
  return directionToPixel(g, unit(g.beam));
}

function directionToPixel(g: Geometry, dir: V3): [number, number] | null {
  const denom = dot(dir, g.odet);
  if (Math.abs(denom) < 1e-12) return null;
  const t = dot(g.pix0, g.odet) / denom;
  if (t <= 0) return null;
  const rel = sub(mul(dir, t), g.pix0);
  return [dot(rel, g.fdet) / g.pixel, dot(rel, g.sdet) / g.pixel];
}

/** Points (pixel units) of the ring of constant two-theta for resolution d (Å). */
export function resolutionRing(g: Geometry, dAng: number, n = 180): [number, number][][] {
  const lambdaAng = g.lambda * 1e10;
  const x = lambdaAng / (2 * dAng);
  if (x >= 1) return [];
  const tt = 2 * Math.asin(x);
  const b = unit(g.beam);
  const helper: V3 = Math.abs(b[0]) < 0.9 ? [1, 0, 0] : [0, 1, 0];
  const e1 = unit(cross(b, helper));
  const e2 = cross(b, e1);
  const segs: [number, number][][] = [];
  let cur: [number, number][] = [];
  for (let i = 0; i <= n; i++) {
    const phi = (2 * Math.PI * i) / n;
    const dir = add(mul(b, Math.cos(tt)), mul(add(mul(e1, Math.cos(phi)), mul(e2, Math.sin(phi))), Math.sin(tt)));
    const p = directionToPixel(g, dir);
    if (p) cur.push(p);
    else if (cur.length) {
      segs.push(cur);
      cur = [];
    }
  }
  if (cur.length) segs.push(cur);
  return segs;
}

/** Resolutions (Å) for a few rings spread over the detector: the corner resolution and nice
 * values at about 1/4, 1/2, 3/4 of the largest two-theta. */
export function ringResolutions(g: Geometry): number[] {
  let maxTT = 0;
  for (const [f, s] of [[0, 0], [g.width, 0], [0, g.height], [g.width, g.height], [g.width / 2, 0], [0, g.height / 2], [g.width, g.height / 2], [g.width / 2, g.height]]) {
    maxTT = Math.max(maxTT, pixelInfo(g, f, s).twoTheta);
  }
  const lambdaAng = g.lambda * 1e10;
  const out: number[] = [];
  for (const frac of [0.25, 0.5, 0.75, 0.98]) {
    const tt = ((maxTT * frac) / 180) * Math.PI;
    if (tt <= 0) continue;
    const d = lambdaAng / (2 * Math.sin(tt / 2));
    out.push(nice(d));
  }
  return [...new Set(out)];
}

function nice(d: number): number {
  const p = Math.pow(10, Math.floor(Math.log10(d)) - 1);
  return Math.round(d / p) * p;
}
