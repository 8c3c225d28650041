import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fmtField, paramsOf, perturbation, plotPoints, withFitted } from '../../www/src/fit/logic';
import type { Fitted } from '../../www/src/protocol';

const none: Fitted = { misset: null, cell: null, distance: null, xbeam: null, ybeam: null, fluence: null, lambda: null, mosaic: null, n: null, detector_rot: null, default_f: null };

test('the fitted flag values land in their form fields, nothing else moves', () => {
  const m = { cell: '100', misset: 'random', distance: '100', N: '10' };
  const f: Fitted = { ...none, misset: [10.00004, -20.5, 30], cell: [100.12345678, 100, 100, 90, 90, 90], distance: ['-distance', 101.25], xbeam: 25.6, ybeam: 25.6 };
  assert.deepEqual(withFitted(m, f), { cell: '100.1235 100 100 90 90 90', misset: '10 -20.5 30', distance: '101.25', N: '10', Xbeam: '25.6', Ybeam: '25.6' });
  assert.deepEqual(withFitted(m, { ...none, distance: ['-close_distance', 80] }), { ...m, close_distance: '80' });
  assert.equal(withFitted(m, { ...none, fluence: 1.23456789e24 }).fluence, '1.23457e+24');
  assert.equal(fmtField(-1.789e-15), '0', 'a fitted misset of 1e-15° is 0 in the form');
  assert.equal(fmtField(-0.00012), '-0.0001');
  assert.equal(fmtField(2.5e9), '2.5e+9');
  assert.equal(fmtField(0), '0');
});

test('parameter groups and the perturbation', () => {
  assert.deepEqual(paramsOf(['cell', 'orientation']), ['rot_x', 'rot_y', 'rot_z', 'cell_a', 'cell_b', 'cell_c']);
  const p = perturbation(['rot_x', 'rot_y', 'rot_z', 'cell_a', 'cell_b', 'cell_c', 'distance'], 0.5, 1, [60, 70, 80]);
  assert.deepEqual(p.map((v) => +v.toFixed(6)), [+(0.5 * Math.PI / 180).toFixed(6), -(0.5 * Math.PI / 180).toFixed(6), +(0.5 * Math.PI / 180).toFixed(6), 0.6, -0.7, 0.8, 0]);
  assert.deepEqual(perturbation(['cell_a'], 1, 1, null), [0]);
});

test('the residual plot falls from the top left to the bottom right', () => {
  const pts = plotPoints([100, 10, 1], 104, 24, 2);
  assert.deepEqual(pts, [{ x: 2, y: 2 }, { x: 52, y: 12 }, { x: 102, y: 22 }]);
  assert.deepEqual(plotPoints([NaN], 10, 10), []);
});
