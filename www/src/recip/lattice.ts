// A synthetic reciprocal lattice for the demo page and the tests of the view (recip-demo.html):
// every h,k,l within a resolution limit, its excitation error and where its ray meets a flat
// MOSFLM-convention detector. DEMO ONLY: in the app the points come from the crate's prediction
// (crate/src/predict.rs), which is the one source of geometry; the "structure factors" here are
// pseudo-random (a Wilson-like distribution), not physics.
import { flatDetector, reciprocalBasis } from './adapter';
import { apply, missetMatrix } from './rotate';
import type { RecipData, ReflectionTable, V3 } from './types';

export interface SyntheticOptions {
  /** a b c α β γ (Å, degrees). */
  cell: [number, number, number, number, number, number];
  /** Å */
  lambda: number;
  /** Resolution limit (Å). */
  dmin: number;
  /** Misset angles (degrees), upstream's convention (rotate.ts). */
  misset: V3;
  /** Unit cells along each edge (peak width ≈ 1/(N·a)). */
  ncells: number;
  /** Mosaic spread (degrees). */
  mosaic?: number;
  /** Full width Δλ/λ. */
  dispersion?: number;
  /** Full divergence angle (degrees). */
  divergence?: number;
  /** Flat detector: distance (mm), pixels per side, pixel pitch (mm). Beam at the centre. */
  distance?: number;
  pixels?: number;
  pixel?: number;
}

export const DEMO_DEFAULTS: SyntheticOptions = {
  cell: [100, 100, 100, 90, 90, 90], lambda: 1, dmin: 3.5, misset: [0, 0, 0], ncells: 20,
  mosaic: 0, dispersion: 0, divergence: 0, distance: 100, pixels: 1024, pixel: 0.1,
};

export interface SyntheticLattice {
  data: RecipData;
  /** The detector (MOSFLM): origin of pixel (0,0) (m), fast, slow, pitch (m), pixels. */
  detector: { origin: V3; fast: V3; slow: V3; pixel: number; width: number; height: number };
}

const RAD = Math.PI / 180;

/** Real-space cell vectors (Å): a along x, b in the xy plane. */
export function cellVectors(cell: SyntheticOptions['cell']): [V3, V3, V3] {
  const [a, b, c, al, be, ga] = cell;
  const ca = Math.cos(al * RAD), cb = Math.cos(be * RAD), cg = Math.cos(ga * RAD), sg = Math.sin(ga * RAD);
  const cy = (ca - cb * cg) / sg;
  const cz = Math.sqrt(Math.max(0, 1 - cb * cb - cy * cy));
  return [[a, 0, 0], [b * cg, b * sg, 0], [c * cb, c * cy, c * cz]];
}

/** Deterministic pseudo-random number in (0, 1) from h, k, l. */
function hash01(h: number, k: number, l: number): number {
  let x = Math.imul(h | 0, 73856093) ^ Math.imul(k | 0, 19349663) ^ Math.imul(l | 0, 83492791);
  x = Math.imul(x ^ (x >>> 16), 0x45d9f3b);
  x = Math.imul(x ^ (x >>> 16), 0x45d9f3b);
  x ^= x >>> 16;
  return ((x >>> 0) + 0.5) / 4294967296;
}

export function syntheticLattice(o: SyntheticOptions): SyntheticLattice {
  const opt = { ...DEMO_DEFAULTS, ...o };
  const [ra, rb, rc] = cellVectors(opt.cell);
  const base = reciprocalBasis(ra, rb, rc);
  const U = missetMatrix(opt.misset);
  const as = apply(U, base.a), bs = apply(U, base.b), cs = apply(U, base.c);
  const beam: V3 = [1, 0, 0];
  const k0 = 1 / opt.lambda;
  const smax = 1 / opt.dmin;
  const hmax = Math.ceil(opt.cell[0] * smax), kmax = Math.ceil(opt.cell[1] * smax), lmax = Math.ceil(opt.cell[2] * smax);

  // detector (MOSFLM: beam +x, fast +z, slow −y), beam at the centre
  const px = opt.pixel! / 1000, npx = opt.pixels!, dist = opt.distance! / 1000;
  const fast: V3 = [0, 0, 1], slow: V3 = [0, -1, 0];
  const half = (npx * px) / 2;
  const origin: V3 = [dist, half, -half]; // dist·b − half·f − half·s
  const det = flatDetector(origin, fast, slow, px, npx, npx);

  const cap = (2 * hmax + 1) * (2 * kmax + 1) * (2 * lmax + 1);
  const hkl = new Int32Array(3 * cap), r = new Float32Array(3 * cap);
  const exc = new Float32Array(cap), d = new Float32Array(cap), tt = new Float32Array(cap);
  const inten = new Float32Array(cap), strength = new Float32Array(cap), inCond = new Uint8Array(cap), tols = new Float32Array(cap);
  const fs = new Float32Array(cap), ss = new Float32Array(cap);
  const amax = Math.max(opt.cell[0], opt.cell[1], opt.cell[2]);
  const peak = 1 / (opt.ncells * amax);
  const mosaic = (opt.mosaic ?? 0) * RAD, div = (opt.divergence ?? 0) * RAD, disp = opt.dispersion ?? 0;
  let n = 0;
  for (let h = -hmax; h <= hmax; h++) {
    for (let k = -kmax; k <= kmax; k++) {
      for (let l = -lmax; l <= lmax; l++) {
        const x = h * as[0] + k * bs[0] + l * cs[0];
        const y = h * as[1] + k * bs[1] + l * cs[1];
        const z = h * as[2] + k * bs[2] + l * cs[2];
        const q2 = x * x + y * y + z * z;
        if (q2 > smax * smax || q2 === 0) continue;
        const q = Math.sqrt(q2);
        const kx = x + k0, ky = y, kz = z; // s0 + r
        const km = Math.sqrt(kx * kx + ky * ky + kz * kz);
        const eps = km - k0;
        // tolerance: lattice peak, mosaic, divergence, dispersion (the shell is |r|²λ·Δλ/λ/2 wide)
        const tol = peak + q * (mosaic + div) / 2 + (q2 * opt.lambda * disp) / 4;
        const sF = Math.exp((-15 * q2) / 4) * -Math.log(hash01(h, k, l));
        hkl[3 * n] = h; hkl[3 * n + 1] = k; hkl[3 * n + 2] = l;
        r[3 * n] = x; r[3 * n + 1] = y; r[3 * n + 2] = z;
        exc[n] = eps;
        d[n] = 1 / q;
        tt[n] = Math.acos(Math.max(-1, Math.min(1, kx / km))) / RAD;
        strength[n] = sF;
        inten[n] = sF * Math.exp(-Math.LN2 * (eps / tol) ** 2);
        inCond[n] = Math.abs(eps) <= tol ? 1 : 0;
        tols[n] = tol;
        // where unit(s0 + r) meets the detector plane x = dist
        if (kx > 0) {
          const t = dist / (kx / km);
          const px3 = [t * (kx / km) - origin[0], t * (ky / km) - origin[1], t * (kz / km) - origin[2]];
          const f = (px3[0] * fast[0] + px3[1] * fast[1] + px3[2] * fast[2]) / px;
          const s = (px3[0] * slow[0] + px3[1] * slow[1] + px3[2] * slow[2]) / px;
          const on = f >= 0 && f < npx && s >= 0 && s < npx;
          fs[n] = on ? f : NaN;
          ss[n] = on ? s : NaN;
        } else {
          fs[n] = NaN;
          ss[n] = NaN;
        }
        n++;
      }
    }
  }
  const table: ReflectionTable = {
    count: n, hkl: hkl.slice(0, 3 * n), r: r.slice(0, 3 * n), excitation: exc.slice(0, n), d: d.slice(0, n),
    twoTheta: tt.slice(0, n), intensity: inten.slice(0, n), strength: strength.slice(0, n), tolerance: tols.slice(0, n), inCondition: inCond.slice(0, n),
    fast: fs.slice(0, n), slow: ss.slice(0, n),
  };
  const lmin = opt.lambda * (1 - disp / 2), lmaxx = opt.lambda * (1 + disp / 2);
  return {
    data: {
      reflections: table, beam, lambda: opt.lambda,
      ewaldRadiusRange: disp > 0 ? [1 / lmaxx, 1 / lmin] : undefined,
      divergence: div > 0 ? div / 2 : undefined,
      axes: { a: as, b: bs, c: cs }, spindle: [0, 0, 1], detector: det,
    },
    detector: { origin, fast, slow, pixel: px, width: npx, height: npx },
  };
}
