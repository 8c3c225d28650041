// The layers on top of the one simulation (www/src/layers.ts) and the "protein still" preset
// (state.ts): the spots' words are the state's words without the model and the water, the
// background words carry the state's beam, the detector effects come from the state's fields,
// and the 3D view predicts the shown crystal (the model's cell in place of the model).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildArgs } from '../../www/src/args';
import { BUNDLED_MODEL, crystalWords, effectsOf, isLayered, layersOf, materialWords, predictWords, spotsWords } from '../../www/src/layers';
import { PRESETS, decodeUrl, encodeUrl, localFiles, VIEW_DEFAULTS, createStore } from '../../www/src/state';

const valueOf = (words: string[], flag: string) => words[words.indexOf(flag) + 1];
const still = PRESETS.find((p) => p.id === 'protein-still')!.state;

test('the protein still is one state: a model, a detector preset, layers; its words carry the units the flags take', () => {
  assert.ok(isLayered(still));
  assert.ok(!isLayered(PRESETS[0].state), 'a teaching preset renders plainly');
  // the detector effects at their identity keep the plain render (gain 1 is no chain)
  const plain = PRESETS[0].state;
  for (const [k, v] of [['gain', '1'], ['gain', '1.0'], ['readout', '0'], ['psf', '0']]) assert.ok(!isLayered({ ...plain, [k]: v }), `${k} = ${v}`);
  for (const [k, v] of [['gain', '2'], ['readout', '3'], ['psf', '50'], ['gain', 'abc']]) assert.ok(isLayered({ ...plain, [k]: v }), `${k} = ${v}`);
  const w = spotsWords(buildArgs(still).args);
  assert.equal(valueOf(w, '-detector'), 'eiger2-4m');
  assert.equal(Number(valueOf(w, '-xtal_size')), 0.001, 'mm');
  assert.equal(Number(valueOf(w, '-beamsize')), 0.001, 'mm');
  assert.equal(valueOf(w, '-misset'), 'random');
  assert.ok(w.indexOf('-misset_seed') < w.indexOf('-misset'), '-misset_seed first');
  assert.ok(!w.includes('-pdb') && !w.includes('-water'), 'the model and the water are the chain\'s');
  assert.ok(!w.includes('-cell') && !w.includes('-hkl'), 'the cell and the table come from the model');
  const withCell = spotsWords(buildArgs({ ...still, cell: '100 100 100 90 90 90', default_F: '100' }).args);
  assert.ok(!withCell.includes('-cell') && !withCell.includes('-default_F') && !withCell.includes('100'), 'the model replaces the form\'s crystal');
  const noModel = spotsWords(buildArgs({ ...still, pdb: '', cell: '100 100 100 90 90 90', default_F: '100' }).args);
  assert.equal(valueOf(noModel, '-default_F'), '100', 'without a model the form\'s crystal stays');
  assert.ok(buildArgs(still).args.includes('-pdb'), 'the command line names the model');
  // -detector precedes the pixel fields, so that they override it
  const withPx = buildArgs({ ...still, detpixels: '512' }).args;
  assert.ok(withPx.indexOf('-detector') < withPx.indexOf('-detpixels'));
});

test('background words: one list per material with the state\'s beam, separated by --, empty when none', () => {
  const lists = materialWords(still).join(' ').split(' -- ').map((s) => s.split(' '));
  assert.equal(lists.length, 2);
  assert.equal(valueOf(lists[0], '-stol'), 'water.stol');
  assert.equal(Number(valueOf(lists[0], '-thickness')), 0.02, 'µm → mm');
  assert.equal(valueOf(lists[1], '-stol'), 'air.stol');
  assert.equal(valueOf(lists[1], '-MW'), '29');
  for (const l of lists) assert.equal(valueOf(l, '-flux'), '1e12');
  assert.deepEqual(materialWords({ ...still, water: '', air: '0' }), []);
  const airOnly = materialWords({ ...still, water: '0' });
  assert.ok(!airOnly.includes('water.stol') && airOnly.includes('air.stol'));
});

test('detector effects and layers shown come from the state', () => {
  const e = effectsOf({ ...still, psf: '80', readout: '3', seed: '7.4' });
  assert.deepEqual([e.psfUm, e.readout, e.seed, e.gain], [80, 3, 7, 1]);
  assert.deepEqual(layersOf(still), { spots: true, background: true, noise: true });
  assert.deepEqual(layersOf({ ...still, show: 'spots', detnoise: '0' }), { spots: true, background: false, noise: false });
});

test('the 3D view predicts the shown crystal: the model\'s cell, and its name for its structure factors', () => {
  const cell = [79.5, 79.5, 38.1, 90, 90, 120];
  const args = buildArgs({ ...still, cell: '100 100 100 90 90 90', default_F: '100' }).args;
  const w = crystalWords(args, cell);
  assert.deepEqual(w.slice(w.indexOf('-cell') + 1, w.indexOf('-cell') + 7), cell.map(String));
  assert.equal(w.filter((x) => x === '-cell').length, 1);
  assert.ok(!w.includes('-pdb') && !w.includes('-water'), 'a render of the crystal reads no model file');
  const p = predictWords(args, cell);
  assert.deepEqual(p.slice(0, w.length), w);
  assert.deepEqual(p.slice(w.length), ['-pdb', '1pfe.cif'], 'the worker swaps in the model it read');
  assert.deepEqual(predictWords(args, null), spotsWords(args), 'the cell unknown: no model words');
});

test('a link holds the realistic settings and does not ask for the bundled model', () => {
  const q = encodeUrl(still, VIEW_DEFAULTS);
  const back = decodeUrl(new URLSearchParams(q)).model;
  for (const [k, v] of Object.entries(still)) assert.equal(back[k], v, k);
  assert.deepEqual(localFiles(still), [], 'the bundled model travels with the page');
  assert.deepEqual(localFiles({ ...still, pdb: 'mine.cif' }), ['mine.cif']);
  const s = createStore(still);
  assert.deepEqual(s.inputErrors.value, {}, 'the bundled model needs no dropped file');
  assert.equal(BUNDLED_MODEL.name, still.pdb);
});
