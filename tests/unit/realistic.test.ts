// The realistic section's pure parts (www/src/realistic.ts): the words sent to the worker for the
// spots (nanoBragg) and the background (nonBragg), the detector effects, and input checks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PROTEIN_STILL, checkSettings, detectorEffects, materialArgs, spotsArgs } from '../../www/src/realistic';

const valueOf = (words: string[], flag: string) => words[words.indexOf(flag) + 1];

test('the preset is valid and its spots words carry the units the flags take', () => {
  assert.deepEqual(checkSettings(PROTEIN_STILL), {});
  const w = spotsArgs(PROTEIN_STILL);
  assert.equal(valueOf(w, '-detector'), 'eiger2-4m');
  assert.equal(Number(valueOf(w, '-xtalsize')), PROTEIN_STILL.crystal / 1000, 'µm → mm');
  assert.equal(Number(valueOf(w, '-beamsize')), PROTEIN_STILL.beam / 1000, 'µm → mm');
  assert.equal(valueOf(w, '-misset'), 'random');
  assert.equal(valueOf(w, '-oversample'), '1');
  assert.ok(!w.includes('-cell') && !w.includes('-hkl'), 'the cell and the table come from the model');
});

test('background words: one list per material, separated by --, empty when none', () => {
  const both = materialArgs({ ...PROTEIN_STILL, water: 20, air: 10 });
  const lists = both.join(' ').split(' -- ').map((s) => s.split(' '));
  assert.equal(lists.length, 2);
  assert.equal(valueOf(lists[0], '-stol'), 'water.stol');
  assert.equal(Number(valueOf(lists[0], '-thickness')), 0.02, 'µm → mm');
  assert.equal(valueOf(lists[1], '-stol'), 'air.stol');
  assert.equal(valueOf(lists[1], '-MW'), '29');
  for (const l of lists) assert.equal(valueOf(l, '-flux'), String(PROTEIN_STILL.flux));
  assert.deepEqual(materialArgs({ ...PROTEIN_STILL, water: 0, air: 0 }), []);
  const airOnly = materialArgs({ ...PROTEIN_STILL, water: 0 });
  assert.ok(!airOnly.includes('water.stol') && airOnly.includes('air.stol'));
});

test('detector effects and input errors name the field', () => {
  const e = detectorEffects({ ...PROTEIN_STILL, psf: 80, readout: 3, seed: 7.4 });
  assert.deepEqual([e.psfUm, e.readout, e.seed, e.gain], [80, 3, 7, 1]);
  const errs = checkSettings({ ...PROTEIN_STILL, distance: NaN, crystal: -1 });
  assert.match(errs.distance, /^Distance: not a number/);
  assert.match(errs.crystal, /^Crystal size: must be between/);
  assert.equal(Object.keys(errs).length, 2);
});
