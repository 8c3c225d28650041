import { test } from 'node:test';
import assert from 'node:assert/strict';
import { blockOf, fittedBlock, poolOf } from '../../www/src/blocks';

test('block sizes: drawn at least 1:1, at most 1.5 times the reduction, from a power-of-two level', () => {
  for (let k = 2; k <= 200; k++) {
    const { p, b, kEff } = blockOf(k);
    assert.equal(kEff, b * p);
    assert.ok((p & (p - 1)) === 0 && 2 * p <= k, `k ${k}: level ${p}`);
    assert.ok(kEff >= k && kEff <= 1.5 * k, `k ${k}: blocks of ${kEff}`);
  }
  assert.deepEqual([2, 3, 4, 5, 7, 8].map((k) => blockOf(k).kEff), [2, 3, 4, 6, 8, 8]);
  // a detector image's maxima start just below 1:1, another image's beyond 1.5
  assert.deepEqual([poolOf(1.01, true), poolOf(1.03, true), poolOf(1.4, false), poolOf(1.6, false)], [1, 2, 1, 2]);
});

test('the fitted block: the reduction of the whole detector shown in the box', () => {
  // the realistic still (EIGER2 X 4M, 2068 × 2162) in an 800 × 600 box: 3.6 image pixels per
  // CSS pixel (blocks of 4), 1.8 per device pixel at 2× (blocks of 2)
  assert.equal(fittedBlock({ width: 800, height: 600, dpr: 1 }, 2068, 2162, 1, true), blockOf(4).kEff);
  assert.equal(fittedBlock({ width: 800, height: 600, dpr: 2 }, 2068, 2162, 1, true), 2);
  // a preview of 2 detector pixels per image pixel: per image pixel
  assert.equal(fittedBlock({ width: 300, height: 300, dpr: 1 }, 1000, 1000, 2, false), blockOf(4).kEff);
  // shown 1:1 or larger, or no box: no maxima
  assert.equal(fittedBlock({ width: 3000, height: 3000, dpr: 1 }, 2068, 2162, 1, true), 1);
  assert.equal(fittedBlock({ width: 0, height: 0, dpr: 1 }, 2068, 2162, 1, true), 1);
});
