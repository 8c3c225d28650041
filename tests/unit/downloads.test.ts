// The Download menu's entries (www/src/downloads.ts `menuEntries`) and file names (files.ts):
// issue 31 found that for the realistic still "SMV image" and "SMV + Poisson noise" saved the
// same bytes (the still already has its noise), the SMV clipped at 65,535 without a word, and
// module gaps were 0 rather than flagged.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { menuEntries } from '../../www/src/downloads';
import { downloadName } from '../../www/src/files';
import { DEFAULT_MODEL } from '../../www/src/state';

test('a plain render offers SMV and SMV + Poisson noise, no miniCBF', () => {
  const e = menuEntries(false, false, 0);
  assert.equal(e.int.text, 'SMV image');
  assert.equal(e.noise.text, 'SMV + Poisson noise');
  assert.ok(!e.noise.hidden && e.cbf.hidden);
});

test('a realistic still with its noise: one SMV entry that says so, the clipped pixels counted, the miniCBF offered', () => {
  const e = menuEntries(true, true, 1234);
  assert.match(e.int.text, /noise included/);
  assert.equal(e.noise.hidden, true, 'no second entry saving the same bytes');
  assert.match(e.int.detail!, /1,234 pixels above 65,535 clipped/);
  assert.ok(!e.cbf.hidden && /miniCBF/.test(e.cbf.text) && /gaps −1/.test(e.cbf.detail!));
  // nothing above 16 bits: no clipping claimed
  assert.doesNotMatch(menuEntries(true, true, 0).int.detail!, /clipped/);
  assert.match(menuEntries(true, true, 1).int.detail!, /1 pixel above/);
});

test('a realistic still without its noise layer: the SMV without and the SMV with the detector\'s noise', () => {
  const e = menuEntries(true, false, 0);
  assert.match(e.int.text, /no noise/);
  assert.ok(!e.noise.hidden && /noise/.test(e.noise.text));
});

test('the miniCBF is named .cbf', () => {
  assert.match(downloadName(DEFAULT_MODEL, { width: 2068, height: 2162 }, 'cbf'), /_2068x2162\.cbf$/);
});
