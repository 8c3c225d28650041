import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fmtCount } from '../../www/src/realistic';

test('counts with thousands commas, as toLocaleString("en") writes whole numbers', () => {
  const values = [0, 7, 42, 999, 1000, 4104, 12345, 194227, 999999, 1000000, 4471016, 123456789, -5, -1234, -1234567];
  for (const v of values) assert.equal(fmtCount(v), v.toLocaleString('en'), String(v));
  assert.equal(fmtCount(194227), '194,227');
});
