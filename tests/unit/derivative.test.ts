import { test } from 'node:test';
import assert from 'node:assert/strict';
import { derivativeFileName, fmtValue, largestMagnitude, paramLabel, symmetricLimit } from '../../www/src/derivative/logic';
import { colourLut } from '../../www/src/view';
import { DERIVATIVE_PARAMS, PARAM_BY_KEY } from '../../www/src/params';

test('the colour range of a signed image: a quantile of |v| over the pixels that move', () => {
  // 10 000 still pixels and 100 moving ones, |v| = 1 … 100 with alternating signs
  const d = new Float32Array(10_100);
  for (let i = 0; i < 100; i++) d[10_000 + i] = (i % 2 ? -1 : 1) * (i + 1);
  // the 99th percentile of the 100 moving pixels (not of all: that would be 0)
  assert.equal(symmetricLimit(d), 100);
  assert.equal(symmetricLimit(d, 0.5), 51);
  // nothing moves: a range of 1, not 0 (levels need hi > lo)
  assert.equal(symmetricLimit(new Float32Array(50)), 1);
  // NaN and infinities are left out
  assert.equal(symmetricLimit(Float32Array.from([NaN, Infinity, -3, 0]), 0.99), 3);
  // a large image is sampled: still the right scale
  const big = new Float32Array(1_000_000).map((_, i) => (i % 3 === 0 ? -(i % 1000) : 0));
  const lim = symmetricLimit(big);
  assert.ok(lim > 980 && lim <= 999, `${lim}`);
});

test('largest magnitude, labels, numbers and the file name', () => {
  assert.equal(largestMagnitude(Float32Array.from([0, 2, -5, 1, 0])), 5);
  assert.equal(largestMagnitude(new Float32Array(3)), 0);
  assert.equal(paramLabel('rot_x', 'rad'), 'rot_x — crystal rotation about x (per rad)');
  assert.equal(paramLabel('new_one', 'mm'), 'new_one (per mm)');
  assert.equal(fmtValue(0), '0');
  assert.equal(fmtValue(1234.5678), '1235');
  assert.equal(fmtValue(-2.5e-5), '-2.500e-5');
  assert.equal(fmtValue(3e7), '3.000e+7');
  assert.equal(derivativeFileName('nanobragg_d', 'cell_a'), 'nanobragg_d_cell_a.bin');
});

test("the crate's derivative parameters (params.ts, generated): each described, each fit lands in a form field", () => {
  assert.ok(DERIVATIVE_PARAMS.length >= 20);
  for (const p of DERIVATIVE_PARAMS) {
    assert.ok(p.description.length > 0, p.name);
    const field = PARAM_BY_KEY.get(p.field);
    assert.ok(field, `${p.name}: ${p.field} is no form field`);
  }
  assert.equal(PARAM_BY_KEY.get(DERIVATIVE_PARAMS.find((p) => p.name === 'cell_alpha')!.field)!.flag, '-cell');
  assert.equal(PARAM_BY_KEY.get(DERIVATIVE_PARAMS.find((p) => p.name === 'beam_y')!.field)!.flag, '-Ybeam');
});

test('the diverging colour map: blue at the bottom, white in the middle, red at the top', () => {
  const lut = colourLut('diverging');
  const rgb = (i: number) => [lut[i] & 255, (lut[i] >> 8) & 255, (lut[i] >> 16) & 255];
  const [r0, , b0] = rgb(0);
  const [r1, , b1] = rgb(255);
  assert.ok(b0 > r0 + 50, `bottom is blue: ${rgb(0)}`);
  assert.ok(r1 > b1 + 50, `top is red: ${rgb(255)}`);
  const mid = [rgb(127), rgb(128)];
  for (const m of mid) for (const c of m) assert.ok(c > 235, `middle is near white: ${m}`);
});
