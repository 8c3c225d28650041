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

test('halve: the maximum of each 2×2 block, as a pixel-by-pixel pass over the image gives it', async () => {
  const { halve, percentile, percentiles } = await import('../../www/src/view');
  // the reference: every input pixel in turn into its block (the view's loop before the blocks)
  const byPixel = (d: Float32Array, pw: number, ph: number, signed: boolean) => {
    const w = Math.ceil(pw / 2), h = Math.ceil(ph / 2);
    const out = new Float32Array(w * h).fill(signed ? 0 : -Infinity);
    for (let y = 0; y < ph; y++) for (let x = 0; x < pw; x++) {
      const v = d[y * pw + x], i = (y >> 1) * w + (x >> 1);
      if (signed ? Math.abs(v) > Math.abs(out[i]) : v > out[i]) out[i] = v;
    }
    return out;
  };
  let seed = 7;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
  for (const [pw, ph] of [[1, 1], [2, 2], [3, 1], [1, 3], [5, 7], [8, 6], [33, 17]]) {
    const d = new Float32Array(pw * ph).map(() => {
      const r = rnd();
      return r < 0.05 ? NaN : r < 0.1 ? -0 : r < 0.15 ? -Infinity : (rnd() - 0.3) * 1000;
    });
    for (const signed of [false, true]) {
      const got = halve(d, pw, ph, signed), want = byPixel(d, pw, ph, signed);
      assert.equal(got.length, Math.ceil(pw / 2) * Math.ceil(ph / 2));
      // Object.is: -0 and NaN as the reference has them
      got.forEach((v, i) => assert.ok(Object.is(v, want[i]), `${pw}×${ph} signed ${signed} pixel ${i}: ${v} vs ${want[i]}`));
    }
  }
  // a known block: [1 5 | 2; 3 4 | 9] → [5, 9]
  assert.deepEqual([...halve(new Float32Array([1, 5, 2, 3, 4, 9]), 3, 2, false)], [5, 9]);
  // several quantiles from one sample: every 3rd pixel of 200,003 (at most 2^16 of them), sorted
  const img = new Float32Array(200_003).map(() => rnd() * 100);
  const sample = img.filter((_, i) => i % 3 === 0).sort();
  assert.equal(sample.length, 66_668);
  assert.deepEqual(percentiles(img, [0.99, 0.5, 0.999]), [sample[66_001], sample[33_334], sample[66_601]]);
  assert.equal(percentile(img, 0.5), sample[33_334]);
  assert.deepEqual(percentiles(new Float32Array(0), [0.5, 0.9]), [0, 0]);
});
