import { test } from 'node:test';
import assert from 'node:assert/strict';
import { levels, type ImageSettings } from '../../www/src/view';

const S: ImageSettings = { cmap: 'inverted-grey', scaling: 'log', contrast: 20, min: null, max: null, rings: true, beamc: true };

test('automatic levels: black at 0 for a simulated image, at the background for a detector image', () => {
  // contrast 20: the white level a tenth of the way from black to the maximum
  assert.deepEqual(levels(S, 1000), [0, 100]);
  const [lo, hi] = levels(S, 1030, 0, 30);
  assert.equal(lo, 30);
  assert.ok(Math.abs(hi - 130) < 1e-9, `white ${hi}`);
  // the 99th-percentile floor still holds
  assert.deepEqual(levels(S, 1000, 500, 30), [30, 500]);
  // explicit levels win over the background
  assert.deepEqual(levels({ ...S, min: 5, max: 50 }, 1000, 0, 30), [5, 50]);
  assert.deepEqual(levels({ ...S, min: 5 }, 1000, 0, 30), [5, 100]);
});

test('automatic levels over a noisy background: the white level follows the background, not the brightest spot', () => {
  const C30 = { ...S, contrast: 30 };
  // the protein still's figures: median 30 ADU, 99.9th percentile 101, brightest pixel 69,728
  const [lo, hi] = levels(C30, 69728, 90, 30, 101);
  assert.equal(lo, 30);
  assert.ok(Math.abs(hi - 740) < 1e-9, `white ${hi}`);
  // a spot of 380 ADU sits above the middle of the range; the background's top at a tenth
  assert.ok((380 - lo) / (hi - lo) > 0.45 && (101 - lo) / (hi - lo) <= 0.1 + 1e-12);
  // contrast: 20 more divides the range by ten; never above the maximum
  assert.ok(Math.abs(levels({ ...S, contrast: 50 }, 69728, 90, 30, 101)[1] - 101) < 1e-9);
  assert.equal(levels({ ...S, contrast: 0 }, 500, 90, 30, 101)[1], 500);
  // an explicit black level leaves the maximum-based white level
  assert.deepEqual(levels({ ...C30, min: 0 }, 1000, 0, 30, 101), [0, 1000 / Math.pow(10, 1.5)]);
});
