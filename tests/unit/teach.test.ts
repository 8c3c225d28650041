// The teaching controls' pure modules: www/src/teach/orientation.ts, phi.ts and drag.ts's
// modifier logic. Run: npm run test:unit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dragMisset, formatMisset, imageFrame, parseMisset } from '../../www/src/teach/orientation';
import { advance, formatPhi, frameModel, parseRange, stepPhi, sweepFrames } from '../../www/src/teach/phi';
import { dragKind } from '../../www/src/teach/drag';
import { apply, axisAngle, matMul, missetMatrix, transpose, MOSFLM_FRAME, type M3, type V3 } from '../../www/src/recip/rotate';

const close = (a: number, b: number, tol = 1e-9) => Math.abs(a - b) <= tol;
function sameMatrix(a: M3, b: M3, tol = 1e-9) {
  for (let i = 0; i < 3; i++) for (let j = 0; j < 3; j++) if (!close(a[i][j], b[i][j], tol)) return false;
  return true;
}
/** Rotation axis (unit) and angle (rad) of a rotation matrix. */
function axisOf(r: M3): { axis: V3; angle: number } {
  const v: V3 = [r[2][1] - r[1][2], r[0][2] - r[2][0], r[1][0] - r[0][1]];
  const s = Math.hypot(...v) / 2;
  const c = (r[0][0] + r[1][1] + r[2][2] - 1) / 2;
  return { axis: v.map((x) => x / (2 * s || 1)) as V3, angle: Math.atan2(s, c) };
}

test('misset text: angles, random, none, bad', () => {
  assert.deepEqual(parseMisset('10 -20 30.5'), [10, -20, 30.5]);
  assert.deepEqual(parseMisset('1,2,3'), [1, 2, 3]);
  assert.deepEqual(parseMisset(''), [0, 0, 0]);
  assert.deepEqual(parseMisset(undefined), [0, 0, 0]);
  assert.equal(parseMisset(' Random '), 'random');
  assert.equal(parseMisset('1 2'), null);
  assert.equal(parseMisset('1 2 x'), null);
  assert.equal(formatMisset([-0.001, 12.3456, 180]), '0 12.35 180');
  assert.equal(formatMisset([-1e-12, -3.004, 0.005]), '0 -3 0.01');
});

test('the image frame is the crate\'s geometry (beam, detector axes, spindle) at the model\'s φ', () => {
  const f = imageFrame({ beam: [1, 0, 0], fdet: [0, 0, 1], sdet: [0, -1, 0], spindle: [0, 1, 0] }, { phi: '30' });
  assert.deepEqual(f, { beam: [1, 0, 0], fast: [0, 0, 1], slow: [0, -1, 0], spindle: [0, 1, 0], phi: 30 });
});

test('Shift+drag tilts about an axis perpendicular to the beam; Alt+drag spins about the beam', () => {
  const start: V3 = [10, 25, 5];
  const u0 = missetMatrix(start);
  for (const [dx, dy] of [[40, 0], [0, -30], [25, 25]]) {
    const out = parseMisset(dragMisset(start, { mode: 'tilt', dx, dy }, MOSFLM_FRAME)) as V3;
    const d = axisOf(matMul(missetMatrix(out), transpose(u0)));
    assert.ok(Math.abs(d.axis[0]) < 1e-3, `tilt axis ${d.axis} ⟂ beam (+x)`);
    // 0.2° per pixel of drag (the text keeps 2 decimals)
    assert.ok(close((d.angle * 180) / Math.PI, 0.2 * Math.hypot(dx, dy), 0.05), `angle ${(d.angle * 180) / Math.PI}`);
  }
  const spun = parseMisset(dragMisset(start, { mode: 'spin', dx: 50, dy: 0 }, MOSFLM_FRAME)) as V3;
  const s = axisOf(matMul(missetMatrix(spun), transpose(u0)));
  assert.ok(Math.abs(Math.abs(s.axis[0]) - 1) < 1e-3, `spin axis ${s.axis} ∥ beam`);
  assert.ok(close((s.angle * 180) / Math.PI, 10, 0.02));
  // at φ = 90° the drag still turns the crystal about lab axes (as seen now)
  const f90 = { ...MOSFLM_FRAME, phi: 90 };
  const t90 = parseMisset(dragMisset(start, { mode: 'spin', dx: 50, dy: 0 }, f90)) as V3;
  const r = axisAngle([0, 0, 1], Math.PI / 2);
  const lab = axisOf(matMul(matMul(r, missetMatrix(t90)), transpose(matMul(r, u0))));
  assert.ok(Math.abs(Math.abs(lab.axis[0]) - 1) < 1e-3, `lab spin axis at φ=90: ${lab.axis}`);
});

test('which drags rotate', () => {
  const k = (shiftKey: boolean, altKey: boolean, ctrlKey: boolean) => ({ shiftKey, altKey, ctrlKey });
  assert.equal(dragKind(k(false, false, false), 'pan'), null);
  assert.equal(dragKind(k(true, false, false), 'pan'), 'tilt');
  assert.equal(dragKind(k(false, true, false), 'pan'), 'spin');
  assert.equal(dragKind(k(true, false, true), 'pan'), 'spin');
  assert.equal(dragKind(k(false, false, true), 'pan'), null);
  assert.equal(dragKind(k(false, false, false), 'tilt'), 'tilt');
  assert.equal(dragKind(k(false, false, false), 'spin'), 'spin');
  assert.equal(dragKind(k(true, false, false), 'spin'), 'tilt');
});

test('φ player arithmetic: advance, loop, steps, ranges', () => {
  const s = { from: 0, to: 90, speed: 10, loop: true };
  assert.deepEqual(advance(10, 0.5, s), { phi: 15, ended: false });
  assert.deepEqual(advance(85, 1, s), { phi: 5, ended: false });
  assert.deepEqual(advance(85, 1, { ...s, loop: false }), { phi: 90, ended: true });
  assert.deepEqual(advance(5, 1, { ...s, speed: -10 }), { phi: 85, ended: false });
  assert.deepEqual(advance(200, 0.1, s), { phi: 1, ended: false }, 'outside the range: from its start');
  assert.equal(stepPhi(89.5, 1, s), 0.5);
  assert.equal(stepPhi(0, -1, s), 89);
  assert.equal(stepPhi(10, 1, s), 11);
  assert.deepEqual(parseRange('90', '0'), { from: 0, to: 90 });
  assert.match((parseRange('x', '3') as { error: string }).error, /^loop from: "x" is not a number/);
  assert.match((parseRange('1', '') as { error: string }).error, /^loop to/);
  assert.match((parseRange('4', '4') as { error: string }).error, /same angle/);
  assert.equal(formatPhi(12.34567), '12.346');
  assert.equal(formatPhi(-0.0001), '0');
  assert.deepEqual(sweepFrames(0, 2, 1), [0, 1, 2]);
  assert.deepEqual(sweepFrames(0, 1, 0.3).map((x) => +x.toFixed(6)), [0, 0.3, 0.6, 0.9]);
  assert.deepEqual(sweepFrames(5, 4, 1), [5]);
});

test('a frame as a still or a rotation photograph', () => {
  const m = { cell: '100 100 100 90 90 90', osc: '2', phisteps: '10', phistep: '0.2', phi: '3' };
  assert.deepEqual(frameModel(m, 12.5, 'stills', 1, 5), { cell: '100 100 100 90 90 90', phi: '12.5' });
  assert.deepEqual(frameModel(m, 12.5, 'rotation', 0.5, 4.4), { cell: '100 100 100 90 90 90', phi: '12.5', osc: '0.5', phisteps: '4' });
  assert.equal(m.phi, '3', 'the model given is not changed');
});
