import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DetectorMap } from '../../www/src/geometry';
import type { Geometry, V3 } from '../../www/src/protocol';

const deg = Math.PI / 180;
type M = [V3, V3, V3];
const rotY = (t: number): M => [[Math.cos(t), 0, Math.sin(t)], [0, 1, 0], [-Math.sin(t), 0, Math.cos(t)]];
const app = (m: M, v: V3): V3 => [0, 1, 2].map((i) => m[i][0] * v[0] + m[i][1] * v[1] + m[i][2] * v[2]) as V3;

/** A flat detector (MOSFLM-like: beam along +x, fast = -z, slow = +y... any orthonormal axes),
 * `n` pixels of `pixel` m at `dist` m, rotated by `tilt` about the lab y axis through the
 * crystal, λ = 1 Å. The grid is filled with the plane formula: positions, d and the beam centre
 * as the crate would send them (`predict::pixel_geometry`). */
function flat(n: number, pixel: number, dist: number, tilt = 0): Geometry {
  const R = rotY(tilt);
  const fdet = app(R, [0, 0, 1]), sdet = app(R, [0, -1, 0]), odet = app(R, [1, 0, 0]);
  const half = (n * pixel) / 2;
  const pix0 = [0, 1, 2].map((c) => dist * odet[c] - half * fdet[c] - half * sdet[c]) as V3;
  const nodes = Array.from({ length: 49 }, (_, i) => 0.5 + (i / 48) * (n - 1));
  const pos: number[] = [], twoTheta: number[] = [], d: number[] = [];
  for (const s of nodes) {
    for (const f of nodes) {
      const p = [0, 1, 2].map((c) => pix0[c] + f * pixel * fdet[c] + s * pixel * sdet[c]);
      pos.push(...p);
      const tt = Math.acos(p[0] / Math.hypot(p[0], p[1], p[2]));
      twoTheta.push(tt / deg);
      d.push(1 / (2 * Math.sin(tt / 2)));
    }
  }
  // where the beam (+x) meets the plane: t·x = pix0 + f·F + s·S
  const t = (pix0[0] * odet[0] + pix0[1] * odet[1] + pix0[2] * odet[2]) / odet[0];
  const rel = [t - pix0[0], -pix0[1], -pix0[2]];
  const dotv = (a: number[], b: number[]) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
  const beamCentre: [number, number] = [dotv(rel, fdet) / pixel, dotv(rel, sdet) / pixel];
  return {
    width: n, height: n, pixel, pix0, fdet, sdet, odet, beam: [1, 0, 0], lambda: 1e-10,
    a: [50e-10, 0, 0], b: [0, 50e-10, 0], c: [0, 0, 50e-10], curved: false, distance: dist,
    spindle: [0, 0, 1], randomMisset: null, grid: { f: nodes, s: nodes, pos, twoTheta, d }, beamCentre,
  };
}

/** 2θ of continuous pixel coordinate (f, s) straight from the plane (independent of the grid). */
function planeTwoTheta(g: Geometry, f: number, s: number) {
  const p = [0, 1, 2].map((c) => g.pix0[c] + f * g.pixel * g.fdet[c] + s * g.pixel * g.sdet[c]);
  const r = Math.hypot(p[0], p[1], p[2]);
  return Math.acos(p[0] / r);
}

test('untilted detector: beam centre in the middle, circular rings of radius L·tan 2θ', () => {
  const g = flat(400, 1e-4, 0.1);
  const m = new DetectorMap(g);
  const [bf, bs] = m.beamCentre()!;
  assert.ok(Math.abs(bf - 200) < 1e-6 && Math.abs(bs - 200) < 1e-6, `${bf} ${bs}`);
  const d = 6; // Å
  const tt = 2 * Math.asin(1 / (2 * d));
  const r = (0.1 * Math.tan(tt)) / 1e-4;
  const seg = m.ring(d).segments;
  assert.ok(seg.length > 40);
  for (let i = 0; i < seg.length; i += 2) assert.ok(Math.abs(Math.hypot(seg[i] - 200, seg[i + 1] - 200) - r) < 0.05 * 400 / 256, `radius ${Math.hypot(seg[i] - 200, seg[i + 1] - 200)} vs ${r}`);
  // positions between the nodes: the plane's (bilinear is exact on a flat detector)
  const p = m.position(123.4, 321.7);
  const want = [0, 1, 2].map((c) => g.pix0[c] + 123.4 * g.pixel * g.fdet[c] + 321.7 * g.pixel * g.sdet[c]);
  for (let c = 0; c < 3; c++) assert.ok(Math.abs(p[c] - want[c]) < 1e-15, `position ${p} vs ${want}`);
});

test('tilted detector: rings are conics of constant 2θ, beam centre where the beam meets the plane', () => {
  const g = flat(512, 1e-4, 0.08, 25 * deg);
  const m = new DetectorMap(g);
  // beam centre: the pixel whose direction is the beam
  const [bf, bs] = m.beamCentre()!;
  assert.ok(planeTwoTheta(g, bf, bs) < 1e-9, `beam centre 2θ ${planeTwoTheta(g, bf, bs)}`);
  for (const d of m.ringResolutions()) {
    const target = 2 * Math.asin(1 / (2 * d));
    const seg = m.ring(d).segments;
    let fmin = Infinity, fmax = -Infinity, smin = Infinity, smax = -Infinity;
    for (let i = 0; i < seg.length; i += 2) {
      // every ring point has the ring's 2θ (to a small fraction of a degree)
      assert.ok(Math.abs(planeTwoTheta(g, seg[i], seg[i + 1]) - target) < 0.02 * deg, `d=${d}`);
      fmin = Math.min(fmin, seg[i]); fmax = Math.max(fmax, seg[i]); smin = Math.min(smin, seg[i + 1]); smax = Math.max(smax, seg[i + 1]);
    }
    // closed ellipse on the detector: not centred on the beam centre along the tilt direction
    if (fmin > 1 && fmax < 511 && smin > 1 && smax < 511) assert.ok(Math.abs((fmin + fmax) / 2 - bf) > 0.5, 'ellipse centre off the beam centre');
  }
});

