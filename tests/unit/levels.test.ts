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
