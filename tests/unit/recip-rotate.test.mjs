// Orientation maths of direct manipulation (www/src/recip/rotate.ts). Run: node --test tests/unit/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { importTs } from './helpers.mjs';

const R = await importTs('www/src/recip/rotate.ts');
const RAD = Math.PI / 180;

// Independent reference: upstream's rotxyz as the crate writes it (crate/src/vec3.rs): rotate a
// vector about x, then the result about y, then about z.
function rotxyz(v, rx, ry, rz) {
  let [x, y, z] = v;
  let c = Math.cos(rx), s = Math.sin(rx);
  [y, z] = [y * c - z * s, y * s + z * c];
  c = Math.cos(ry); s = Math.sin(ry);
  [x, z] = [x * c + z * s, -x * s + z * c];
  c = Math.cos(rz); s = Math.sin(rz);
  [x, y] = [x * c - y * s, x * s + y * c];
  return [x, y, z];
}
// Independent Rodrigues rotation (upstream's rotaxis, MODEL §3.1).
function rotaxis(v, u, phi) {
  const c = Math.cos(phi), s = Math.sin(phi);
  const d = (u[0] * v[0] + u[1] * v[1] + u[2] * v[2]) * (1 - c);
  return [
    u[0] * d + v[0] * c + (-u[2] * v[1] + u[1] * v[2]) * s,
    u[1] * d + v[1] * c + (u[2] * v[0] - u[0] * v[2]) * s,
    u[2] * d + v[2] * c + (-u[1] * v[0] + u[0] * v[1]) * s,
  ];
}
const dot = (a, b) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
const close = (a, b, tol, what) => {
  for (let i = 0; i < a.length; i++) {
    if (Array.isArray(a[i])) close(a[i], b[i], tol, what);
    else assert.ok(Math.abs(a[i] - b[i]) <= tol, `${what}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
  }
};
function lcg(seed) {
  let s = seed >>> 0;
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32);
}
const E = [[1, 0, 0], [0, 1, 0], [0, 0, 1]];
const apply = (m, v) => m.map((row) => dot(row, v));

test('missetMatrix is Rz·Ry·Rx and acts like upstream rotxyz (x, then y, then z)', () => {
  const rnd = lcg(1);
  for (let n = 0; n < 200; n++) {
    const ang = [rnd() * 360 - 180, rnd() * 360 - 180, rnd() * 360 - 180];
    const U = R.missetMatrix(ang);
    const prod = R.matMul(R.rotZ(ang[2] * RAD), R.matMul(R.rotY(ang[1] * RAD), R.rotX(ang[0] * RAD)));
    close(U, prod, 1e-15, 'product');
    const v = [rnd() - 0.5, rnd() - 0.5, rnd() - 0.5];
    close(R.apply(U, v), rotxyz(v, ang[0] * RAD, ang[1] * RAD, ang[2] * RAD), 1e-14, 'rotxyz');
  }
  // a concrete sign check: +90° about x takes y to z (right-handed)
  close(R.apply(R.missetMatrix([90, 0, 0]), [0, 1, 0]), [0, 0, 1], 1e-15, 'Rx(90) y');
  close(R.apply(R.missetMatrix([0, 90, 0]), [0, 0, 1]), [1, 0, 0], 1e-15, 'Ry(90) z');
  close(R.apply(R.missetMatrix([0, 0, 90]), [1, 0, 0]), [0, 1, 0], 1e-15, 'Rz(90) x');
});

test('round trip angles -> matrix -> angles (canonical branch |ry| <= 90°, as umat2misset)', () => {
  const rnd = lcg(7);
  for (let n = 0; n < 2000; n++) {
    const ang = [rnd() * 359.9 - 179.9, rnd() * 179.8 - 89.9, rnd() * 359.9 - 179.9];
    const back = R.matrixToMisset(R.missetMatrix(ang));
    close(back, ang, 1e-9, 'angles');
  }
  // the reference random misset of MODEL §4.3 survives the round trip too
  const ref = [4.6629571628, -11.8449788458, 17.6225480239];
  close(R.matrixToMisset(R.missetMatrix(ref)), ref, 1e-9, 'reference misset');
});

test('near gimbal lock (ry = ±90°) the angles reproduce the matrix and are finite', () => {
  for (const ry of [90, -90, 90 - 1e-7, -90 + 1e-7, 90 - 1e-3, 89.99999999, 90 + 1e-9]) {
    for (const [rx, rz] of [[0, 0], [30, -40], [-170, 175], [12.5, 12.5]]) {
      const U = R.missetMatrix([rx, ry, rz]);
      for (const near of [undefined, [rx, ry, rz], [rx + 3, ry, rz - 3]]) {
        const a = R.matrixToMisset(U, near);
        assert.ok(a.every(Number.isFinite), `finite ${a}`);
        close(R.missetMatrix(a), U, 1e-9, `matrix at ry=${ry} rx=${rx} rz=${rz}`);
      }
    }
  }
  // exactly locked: rx is kept from `near`, rz absorbs the rest
  const U = R.missetMatrix([25, 90, -15]);
  const a = R.matrixToMisset(U, [25, 90, -15]);
  close(a, [25, 90, -15], 1e-9, 'locked keeps rx');
});

test('the composed rotation equals the matrix product D·U (and Rφᵀ·D·Rφ·U at φ ≠ 0)', () => {
  const rnd = lcg(3);
  for (let n = 0; n < 200; n++) {
    const ang = [rnd() * 360 - 180, rnd() * 170 - 85, rnd() * 360 - 180];
    const drag = { mode: rnd() < 0.5 ? 'tilt' : 'spin', dx: rnd() * 200 - 100, dy: rnd() * 200 - 100, sensitivity: 0.3 };
    const phi = n % 2 ? rnd() * 360 - 180 : 0;
    const frame = { ...R.MOSFLM_FRAME, phi };
    const next = R.rotateMisset(ang, drag, frame);
    const D = R.dragRotation(drag, frame);
    // lab frame, independently: reciprocal vectors through rotxyz then rotaxis(φ) (what the
    // simulator does), before and after; the new orientation is D applied to the old one
    for (const v of E) {
      const before = rotaxis(rotxyz(v, ang[0] * RAD, ang[1] * RAD, ang[2] * RAD), [0, 0, 1], phi * RAD);
      const after = rotaxis(rotxyz(v, next[0] * RAD, next[1] * RAD, next[2] * RAD), [0, 0, 1], phi * RAD);
      close(after, apply(D, before), 1e-9, `vector ${v} φ=${phi}`);
    }
    // D is a proper rotation
    close(R.matMul(D, R.transpose(D)), E, 1e-12, 'orthonormal');
  }
});

/** Axis (unit, sign of the rotation's sense) and angle (rad) of a rotation matrix. */
function axisOf(m) {
  const angle = Math.acos(Math.max(-1, Math.min(1, (m[0][0] + m[1][1] + m[2][2] - 1) / 2)));
  const ax = [m[2][1] - m[1][2], m[0][2] - m[2][0], m[1][0] - m[0][1]];
  const n = Math.hypot(...ax);
  return { axis: ax.map((x) => x / n), angle };
}

test('Shift+drag: a drag perpendicular to the beam turns the crystal about the expected axis', () => {
  const sens = 0.25;
  // MOSFLM: beam +x, image right = fast +z, image down = slow −y
  let D = R.dragRotation({ mode: 'tilt', dx: 40, dy: 0, sensitivity: sens }, R.MOSFLM_FRAME);
  let { axis, angle } = axisOf(D);
  close(axis, [0, -1, 0], 1e-12, 'drag right: axis beam × fast = −y');
  assert.ok(Math.abs(angle - 40 * sens * RAD) < 1e-12);
  // the crystal direction along the beam moves towards the drag (image right = +z)
  assert.ok(apply(D, [1, 0, 0])[2] > 0);
  D = R.dragRotation({ mode: 'tilt', dx: 0, dy: 30, sensitivity: sens }, R.MOSFLM_FRAME);
  ({ axis, angle } = axisOf(D));
  close(axis, [0, 0, -1], 1e-12, 'drag down: axis beam × slow = x × −y = −z');
  assert.ok(apply(D, [1, 0, 0])[1] < 0, 'beam-direction moves towards slow (−y)');
  assert.ok(Math.abs(angle - 30 * sens * RAD) < 1e-12);
  // the axis is always perpendicular to the beam, and a diagonal drag turns by its length
  D = R.dragRotation({ mode: 'tilt', dx: 30, dy: 40, sensitivity: sens }, R.MOSFLM_FRAME);
  ({ axis, angle } = axisOf(D));
  assert.ok(Math.abs(axis[0]) < 1e-12);
  assert.ok(Math.abs(angle - 50 * sens * RAD) < 1e-12);
  // XDS frame: beam +z, fast +x, slow +y
  const xds = { beam: [0, 0, 1], fast: [1, 0, 0], slow: [0, 1, 0] };
  ({ axis } = axisOf(R.dragRotation({ mode: 'tilt', dx: 10, dy: 0 }, xds)));
  close(axis, [0, 1, 0], 1e-12, 'XDS drag right: z × x = +y');
  // a tilted detector: only the components perpendicular to the beam count
  const tilted = { beam: [1, 0, 0], fast: [Math.sin(0.3), 0, Math.cos(0.3)], slow: [0, -1, 0] };
  ({ axis } = axisOf(R.dragRotation({ mode: 'tilt', dx: 10, dy: 0 }, tilted)));
  close(axis, [0, -1, 0], 1e-12, 'tilted detector');
  // through the misset angles: the lab-frame reciprocal vectors turn about −y
  const ang = [10, 20, 30];
  const next = R.rotateMisset(ang, { mode: 'tilt', dx: 40, dy: 0, sensitivity: sens });
  for (const v of E) {
    const before = rotxyz(v, ang[0] * RAD, ang[1] * RAD, ang[2] * RAD);
    const after = rotxyz(v, next[0] * RAD, next[1] * RAD, next[2] * RAD);
    close(after, rotaxis(before, [0, -1, 0], 40 * sens * RAD), 1e-9, 'about −y');
  }
});

test('Alt+drag spins about the beam: clockwise on the image for a drag to the right', () => {
  const D = R.dragRotation({ mode: 'spin', dx: 20, dy: 0, sensitivity: 0.5 }, R.MOSFLM_FRAME);
  const { axis, angle } = axisOf(D);
  close(axis, [1, 0, 0], 1e-12, 'axis = beam');
  assert.ok(Math.abs(angle - 10 * RAD) < 1e-12);
  // image right (fast) turns towards image down (slow): clockwise as seen on the image
  assert.ok(dot(apply(D, R.MOSFLM_FRAME.fast), R.MOSFLM_FRAME.slow) > 0);
  // around the beam spot: from (100, 0) down by 100 px sweeps 45° clockwise, whatever the sensitivity
  const S = R.dragRotation({ mode: 'spin', dx: 0, dy: 100, around: [100, 0], sensitivity: 5 }, R.MOSFLM_FRAME);
  const s = axisOf(S);
  close(s.axis, [1, 0, 0], 1e-12, 'around: axis');
  assert.ok(Math.abs(s.angle - 45 * RAD) < 1e-12);
  // a mirrored image (slow up instead of down) keeps "clockwise on the image"
  const mirrored = { beam: [1, 0, 0], fast: [0, 0, 1], slow: [0, 1, 0] };
  const M = R.dragRotation({ mode: 'spin', dx: 20, dy: 0, sensitivity: 0.5 }, mirrored);
  assert.ok(dot(apply(M, mirrored.fast), mirrored.slow) > 0);
  // through the misset angles: the beam direction is fixed, every vector turns about x
  const ang = [-40, 60, 100];
  const next = R.rotateMisset(ang, { mode: 'spin', dx: 20, dy: 0, sensitivity: 0.5 });
  for (const v of E) {
    const before = rotxyz(v, ang[0] * RAD, ang[1] * RAD, ang[2] * RAD);
    const after = rotxyz(v, next[0] * RAD, next[1] * RAD, next[2] * RAD);
    close(after, rotaxis(before, [1, 0, 0], 10 * RAD), 1e-9, 'about the beam');
  }
});

test('a drag across ry = 90° keeps the angles continuous (no slider jumps)', () => {
  // a rotation about lab y turns Ry(80)·Rx(5) into Ry(120)·Rx(5), through the pole ry = 90°
  let ang = [5, 80, 0];
  const frame = { beam: [0, 0, 1], fast: [1, 0, 0], slow: [0, 1, 0] }; // tilt dx: about +y
  let maxStep = 0;
  for (let i = 0; i < 40; i++) {
    const next = R.rotateMisset(ang, { mode: 'tilt', dx: 2, dy: 0, sensitivity: 0.5 }, frame);
    for (let k = 0; k < 3; k++) maxStep = Math.max(maxStep, Math.abs(R.wrapDeg(next[k] - ang[k])));
    ang = next;
  }
  close(ang, [5, 120, 0], 1e-6, 'passed the pole on the continuous branch');
  assert.ok(maxStep < 1.0001, `largest single-step change ${maxStep}°`);
});

test('bad frames are clear errors, zero drags are the identity', () => {
  assert.throws(() => R.dragRotation({ mode: 'tilt', dx: 1, dy: 0 }, { beam: [0, 0, 0], fast: [1, 0, 0], slow: [0, 1, 0] }), /zero-length/);
  assert.throws(() => R.dragRotation({ mode: 'tilt', dx: 1, dy: 0 }, { beam: [1, 0, 0], fast: [1, 0, 0], slow: [0, 1, 0] }), /parallel to the beam/);
  close(R.rotateMisset([1, 2, 3], { mode: 'tilt', dx: 0, dy: 0 }), [1, 2, 3], 1e-12, 'no drag');
});
