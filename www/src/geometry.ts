// The detector's geometry as the crate gives it, for the overlays (pure). Nothing is derived
// here: `Geometry` (crate/src/wasm/mod.rs) carries, on a grid of continuous pixel coordinates,
// the kernel's own sensor positions and the resolution d at each node (`predict::pixel_geometry`),
// and the beam centre; the cursor readout asks the crate for d, 2θ and hkl at the pixel
// (`NanoBraggClient.pixelGeometry`). This file only interpolates positions (for the link with
// the 3D view) and draws contours of the crate's d: the resolution rings, whatever the
// detector's tilt or shape (circles, ellipses, hyperbolas). Pixel i spans [i, i+1).
import type { Geometry, V3 } from './protocol';

/** A ring of constant resolution as line segments (pixel coordinates). */
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

  constructor(g: Geometry) {
    this.g = g;
  }

  get width() {
    return this.g.width;
  }
  get height() {
    return this.g.height;
  }

  /** Lab position (m) of continuous pixel coordinate (f, s) on the sensor surface: the crate's
   * positions, interpolated bilinearly inside a grid cell (exact for a flat detector). */
  position(f: number, s: number): V3 {
    const { f: fn, s: sn, pos } = this.g.grid;
    if (fn.length < 2 || sn.length < 2) {
      // a single row or column of pixels: the plane of the detector's axes
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

  /** Where the direct beam meets the sensor (pixel coordinates; may lie off the detector), or
   * null if it misses: the crate's. */
  beamCentre(): [number, number] | null {
    return this.g.beamCentre ?? null;
  }

  /** Smallest resolution (Å) at the grid's nodes: the detector's reach. */
  dMin(): number {
    let m = Infinity;
    for (const d of this.g.grid.d) if (d < m) m = d;
    return m;
  }

  /** Resolutions (Å) for a few rings spread over the detector: nice values at about 1/4, 1/2,
   * 3/4 and all of the reach in 1/d. */
  ringResolutions(): number[] {
    const qMax = 1 / this.dMin();
    if (!(qMax > 0) || !Number.isFinite(qMax)) return [];
    return [...new Set([0.25, 0.5, 0.75, 0.98].map((frac) => nice(1 / (qMax * frac))))];
  }

  /** The ring of resolution d (Å): the contour 1/d = const of the crate's grid (marching
   * squares; 1/d is smooth through the beam, where d is infinite). */
  ring(dAng: number): Ring {
    const segments: number[] = [];
    const { f: fn, s: sn, d } = this.g.grid;
    const nf = fn.length, ns = sn.length;
    if (nf < 2 || ns < 2 || d.length !== nf * ns) return { d: dAng, segments };
    const level = 1 / dAng;
    const q = (i: number, j: number) => 1 / d[j * nf + i];
    const lerp = (a: number, b: number) => (level - a) / (b - a);
    for (let j = 0; j + 1 < ns; j++) {
      for (let i = 0; i + 1 < nf; i++) {
        const v00 = q(i, j), v10 = q(i + 1, j), v01 = q(i, j + 1), v11 = q(i + 1, j + 1);
        const x0 = fn[i], x1 = fn[i + 1], y0 = sn[j], y1 = sn[j + 1];
        const pts: number[] = [];
        // edges: top (00-10), right (10-11), bottom (01-11), left (00-01)
        if ((v00 < level) !== (v10 < level)) pts.push(x0 + lerp(v00, v10) * (x1 - x0), y0);
        if ((v10 < level) !== (v11 < level)) pts.push(x1, y0 + lerp(v10, v11) * (y1 - y0));
        if ((v01 < level) !== (v11 < level)) pts.push(x0 + lerp(v01, v11) * (x1 - x0), y1);
        if ((v00 < level) !== (v01 < level)) pts.push(x0, y0 + lerp(v00, v01) * (y1 - y0));
        for (let k = 0; k + 3 < pts.length; k += 4) segments.push(pts[k], pts[k + 1], pts[k + 2], pts[k + 3]);
      }
    }
    return { d: dAng, segments };
  }
}

function nice(d: number): number {
  const p = Math.pow(10, Math.floor(Math.log10(d)) - 1);
  return +(Math.round(d / p) * p).toPrecision(3);
}
