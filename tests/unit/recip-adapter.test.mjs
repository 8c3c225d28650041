// The reciprocal view's adapter (crate prediction -> view input) and the demo's synthetic lattice
// (www/src/recip/adapter.ts, lattice.ts), checked against independent geometry. Run: node --test tests/unit/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { importTs } from './helpers.mjs';

const A = await importTs('www/src/recip/adapter.ts');
const L = await importTs('www/src/recip/lattice.ts');
const PS = await importTs('www/src/recip/pointstyle.ts');
const dot = (a, b) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
const norm = (a) => Math.hypot(a[0], a[1], a[2]);

test('reciprocalBasis: a·a* = 1, a·b* = 0 for a triclinic cell; coplanar vectors are an error', () => {
  const [a, b, c] = L.cellVectors([5.8, 7.1, 9.3, 81, 77, 68]);
  // the cell vectors have the requested lengths and angles
  assert.ok(Math.abs(norm(a) - 5.8) < 1e-12 && Math.abs(norm(b) - 7.1) < 1e-12 && Math.abs(norm(c) - 9.3) < 1e-12);
  const ang = (u, v) => (Math.acos(dot(u, v) / norm(u) / norm(v)) * 180) / Math.PI;
  assert.ok(Math.abs(ang(b, c) - 81) < 1e-9 && Math.abs(ang(a, c) - 77) < 1e-9 && Math.abs(ang(a, b) - 68) < 1e-9);
  const s = A.reciprocalBasis(a, b, c);
  const real = [a, b, c], rec = [s.a, s.b, s.c];
  for (let i = 0; i < 3; i++) for (let j = 0; j < 3; j++) assert.ok(Math.abs(dot(real[i], rec[j]) - (i === j ? 1 : 0)) < 1e-12);
  assert.throws(() => A.reciprocalBasis([1, 0, 0], [0, 1, 0], [1, 1, 0]), /coplanar/);
});

test('fromPrediction maps the crate records (snake_case, null spots) onto columns', () => {
  const rec = (h, k, l, extra = {}) => ({
    h, k, l, r: [h * 0.01, k * 0.01, l * 0.01], d: 100 / Math.hypot(h, k, l), f: 10 + h, excitation_error: 1e-4 * h,
    tolerance: 2e-4, in_condition: h === 1, two_theta: 5 + h, fast: 10.5 + h, slow: 20.25, on_detector: true, intensity: 3 * h, ...extra,
  });
  const pred = {
    wavelength: 1.2, beam: [1, 0, 0], ewald_radius_range: [1 / 1.21, 1 / 1.19], divergence: 0, a_star: [0.01, 0, 0],
    b_star: [0, 0.01, 0], c_star: [0, 0, 0.01], spindle: [0, 0, 1],
    detector_outline: [[0.1, 0.05, -0.05], [0.1, 0.05, 0.05], [0.1, -0.05, 0.05], [0.1, -0.05, -0.05]],
    reflections: [rec(1, 2, 3), rec(2, -1, 0, { fast: null, slow: null, on_detector: false }), rec(3, 0, 0, { on_detector: false })],
  };
  const d = A.fromPrediction(pred);
  const t = d.reflections;
  assert.equal(t.count, 3);
  assert.deepEqual(Array.from(t.hkl), [1, 2, 3, 2, -1, 0, 3, 0, 0]);
  assert.ok(Math.abs(t.r[1] - 0.02) < 1e-7);
  assert.deepEqual(Array.from(t.inCondition), [1, 0, 0]);
  assert.equal(t.fast[0], 11.5);
  assert.ok(Number.isNaN(t.fast[1]) && Number.isNaN(t.slow[2]), 'null or off-detector spots are NaN');
  assert.ok(Math.abs(t.strength[1] - 144) < 1e-9, 'strength = F²');
  assert.ok(Math.abs(t.tolerance[0] - 2e-4) < 1e-9);
  assert.equal(d.lambda, 1.2);
  assert.deepEqual(d.ewaldRadiusRange, [1 / 1.21, 1 / 1.19]);
  assert.equal(d.divergence, undefined, 'no divergence: no tilted spheres');
  assert.equal(d.detector.outline.length, 4);
});

test('flatDetector: corners and the pixel -> lab mapping', () => {
  const det = A.flatDetector([0.1, 0.05, -0.05], [0, 0, 1], [0, -1, 0], 1e-4, 1000, 1000);
  assert.deepEqual(det.outline[2].map((x) => +x.toFixed(12)), [0.1, -0.05, 0.05]);
  assert.deepEqual(det.position(500, 500).map((x) => +x.toFixed(12)), [0.1, 0, 0]);
});

test('synthetic lattice: excitation errors, 2θ and spot positions agree with the Ewald construction', () => {
  const lam = 1.3;
  const { data, detector } = L.syntheticLattice({ cell: [40, 50, 60, 90, 100, 90], lambda: lam, dmin: 4, misset: [10, -20, 30], ncells: 10 });
  const t = data.reflections;
  assert.ok(t.count > 1000);
  const s0 = data.beam.map((x) => x / lam);
  let onSphere = 0, spots = 0;
  for (let i = 0; i < t.count; i++) {
    const r = [t.r[3 * i], t.r[3 * i + 1], t.r[3 * i + 2]];
    const q = norm(r);
    assert.ok(q <= 1 / 4 + 1e-6, 'within the resolution limit');
    assert.ok(Math.abs(t.d[i] - 1 / q) < 1e-3 * t.d[i]);
    // Miller indices: h = a·r with the rotated real-space vectors (independent of the enumeration)
    const k = [s0[0] + r[0], s0[1] + r[1], s0[2] + r[2]];
    assert.ok(Math.abs(t.excitation[i] - (norm(k) - 1 / lam)) < 1e-6);
    if (Math.abs(t.excitation[i]) < 2e-4) {
      onSphere++;
      // Bragg's law on the sphere: 2θ = 2 asin(λ / 2d)
      const bragg = (2 * Math.asin(lam / (2 * t.d[i])) * 180) / Math.PI;
      assert.ok(Math.abs(t.twoTheta[i] - bragg) < 0.05, `2θ ${t.twoTheta[i]} vs Bragg ${bragg}`);
    }
    if (Number.isFinite(t.fast[i])) {
      spots++;
      // the pixel's lab position lies on the ray along unit(s0 + r)
      const p = data.detector.position(t.fast[i], t.slow[i]);
      const u = k.map((x) => x / norm(k));
      const c = dot(p, u) / norm(p);
      assert.ok(c > 1 - 1e-9, `spot direction cos ${c}`);
      assert.ok(t.fast[i] >= 0 && t.fast[i] < detector.width && t.slow[i] >= 0 && t.slow[i] < detector.height);
    }
  }
  assert.ok(onSphere > 10 && spots > 10, `${onSphere} on the sphere, ${spots} spots`);
  // r = h a* + k b* + l c* with the axes the view is given
  const i0 = 5;
  const h = t.hkl[3 * i0], kk = t.hkl[3 * i0 + 1], l = t.hkl[3 * i0 + 2];
  const rr = [0, 1, 2].map((c) => h * data.axes.a[c] + kk * data.axes.b[c] + l * data.axes.c[c]);
  assert.ok(Math.abs(rr[0] - t.r[0 + 3 * i0]) < 1e-6 && Math.abs(rr[2] - t.r[2 + 3 * i0]) < 1e-6);
});

test('fromPrediction reads the crate\'s columns (predict(…, columns = true)) as it reads its records', () => {
  const recs = [
    { h: 1, k: 2, l: 3, r: [0.01, 0.02, 0.03], d: 26.7, f: 11, excitation_error: 1e-4, tolerance: 2e-4, in_condition: true, two_theta: 6, fast: 11.5, slow: 20.25, on_detector: true, intensity: 3 },
    { h: -2, k: 1, l: 0, r: [-0.02, 0.01, 0], d: 44.7, f: 8, excitation_error: -3e-3, tolerance: 2e-4, in_condition: false, two_theta: 7, fast: null, slow: null, on_detector: false, intensity: 6 },
    { h: 3, k: 0, l: 0, r: [0.03, 0, 0], d: 33.3, f: 13, excitation_error: 2e-3, tolerance: 2e-4, in_condition: false, two_theta: 8, fast: 400.5, slow: 2.5, on_detector: false, intensity: 9 },
  ];
  const bytes = (Type, values, offset = 0) => {
    const a = new Type(values);
    const u8 = new Uint8Array(a.byteLength + offset);
    u8.set(new Uint8Array(a.buffer), offset);
    return u8.subarray(offset); // offset 1: not 4-byte aligned, as a copy may be
  };
  const f32 = (k, per = 1, off = 0) => bytes(Float32Array, recs.flatMap((x) => (per === 3 ? Array.from(x[k]) : [x[k] ?? NaN])), off);
  const columns = {
    count: 3, hkl: bytes(Int32Array, recs.flatMap((x) => [x.h, x.k, x.l])), r: f32('r', 3, 1), d: f32('d'), f: f32('f'),
    excitation_error: f32('excitation_error'), tolerance: f32('tolerance'), two_theta: f32('two_theta'), fast: f32('fast'), slow: f32('slow'),
    intensity: f32('intensity'), flags: new Uint8Array(recs.map((x) => (x.in_condition ? 1 : 0) | (x.on_detector ? 2 : 0))),
  };
  const base = { wavelength: 1, beam: [1, 0, 0], ewald_radius_range: [1, 1], divergence: 0, a_star: [0.01, 0, 0], b_star: [0, 0.01, 0], c_star: [0, 0, 0.01], spindle: [0, 0, 1], detector_outline: [] };
  const a = A.fromPrediction({ ...base, reflections: recs }).reflections;
  const b = A.fromPrediction({ ...base, reflections: [], columns }).reflections;
  assert.equal(b.count, 3);
  for (const k of ['hkl', 'r', 'excitation', 'd', 'twoTheta', 'intensity', 'strength', 'tolerance', 'inCondition', 'fast', 'slow']) {
    assert.deepEqual(Array.from(b[k]), Array.from(a[k]), k);
  }
  // a spot off the detector has no position even where the crate gave one
  assert.ok(Number.isNaN(b.fast[2]) && Number.isNaN(b.slow[1]));
  assert.throws(() => A.tableFromColumns({ ...columns, d: columns.d.subarray(4) }), /"d" missing or of the wrong length/);
  assert.throws(() => A.tableFromColumns({ ...columns, flags: undefined }), /"flags"/);
});

// issue 31: the points in the condition were coloured by `intensity`, which the crate gives as
// the pixel's value for a spot that lands on a pixel and as the peak estimate for the others
// (off the detector, in a gap): two points of the same peak got colours apart by the pixel's
// share of the peak. The colour now compares the crate's `peak` column for all.
test('pointStyle colours the points in the condition by the peak estimate, one quantity for all', () => {

  const n = 4;
  const t = {
    count: n, hkl: new Int32Array(3 * n), r: new Float32Array([0.01, 0, 0, 0, 0.01, 0, 0, 0, 0.01, 0.01, 0.01, 0]),
    excitation: new Float32Array(n), d: new Float32Array(n).fill(50), twoTheta: new Float32Array(n),
    // the first two on a pixel (its value: a fifth and a tenth of the peak), the others off the detector (the peak)
    intensity: new Float32Array([20, 10, 100, 100]),
    peak: new Float32Array([100, 100, 100, 100]),
    strength: new Float32Array(n).fill(1), inCondition: new Uint8Array([1, 1, 1, 1]),
  };
  const d = { reflections: t, axes: { a: [0.01, 0, 0], b: [0, 0.01, 0], c: [0, 0, 0.01] } };
  const s = PS.pointStyle(d, undefined, { sizes: new Float32Array(0), info: new Float32Array(0) });
  const colour = [0, 1, 2, 3].map((i) => s.info[3 * i + 1]);
  assert.deepEqual(colour, [1, 1, 1, 1], 'equal peaks, equal colours');
  // without a peak column (the demo's own lattice) the intensity colours
  const s2 = PS.pointStyle({ ...d, reflections: { ...t, peak: undefined } }, undefined, { sizes: new Float32Array(0), info: new Float32Array(0) });
  assert.ok(s2.info[1] < s2.info[3 * 2 + 1]);
});

test('fromPrediction carries the crate\'s peak column next to its intensity', () => {
  const f32 = (a) => new Uint8Array(new Float32Array(a).buffer);
  const c = {
    count: 2, hkl: new Uint8Array(new Int32Array([1, 0, 0, 0, 1, 0]).buffer), r: f32([0.01, 0, 0, 0, 0.01, 0]),
    d: f32([100, 100]), f: f32([1, 2]), excitation_error: f32([0, 0]), tolerance: f32([1e-4, 1e-4]), two_theta: f32([1, 1]),
    fast: f32([10, NaN]), slow: f32([20, NaN]), intensity: f32([3, 50]), peak: f32([40, 50]), flags: new Uint8Array([3, 1]),
  };
  const t = A.tableFromColumns(c);
  assert.deepEqual(Array.from(t.intensity), [3, 50]);
  assert.deepEqual(Array.from(t.peak), [40, 50]);
  const { peak: _, ...old } = c;
  assert.equal(A.tableFromColumns(old).peak, undefined);
});
