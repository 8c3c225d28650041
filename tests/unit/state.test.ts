import { test } from 'node:test';
import assert from 'node:assert/strict';
import { effect } from '@preact/signals-core';
import { DEFAULT_MODEL, PRESETS, VIEW_DEFAULTS, createStore, decodeAttributes, decodeUrl, encodeUrl, inputErrorLine, localFiles, presetOf } from '../../www/src/state';

test('URL parameters apply on top of the default model (the README iframe link renders)', () => {
  const d = decodeUrl(new URLSearchParams('embed=1&cell=100+100+100+90+90+90&lambda=6.2'));
  assert.equal(d.model.default_F, DEFAULT_MODEL.default_F, 'structure factors from the defaults');
  assert.equal(d.model.lambda, '6.2');
  assert.deepEqual(d.rest, { embed: '1' });
  const big = decodeUrl(new URLSearchParams('detpixels=1024'));
  assert.deepEqual(big.model, { ...DEFAULT_MODEL, detpixels: '1024' });
  // an empty value removes a default; preset= starts from a preset
  assert.equal(decodeUrl(new URLSearchParams('N=')).model.N, undefined);
  assert.equal(decodeUrl(new URLSearchParams('preset=protein')).model.mosaic, '0.3');
});

test('URL round trip of model and view; defaults of the view are left out', () => {
  const model = { ...DEFAULT_MODEL, misset: '5 10 15', N: '' };
  delete (model as Record<string, string>).N;
  const view = { ...VIEW_DEFAULTS, cmap: 'viridis' as const, contrast: 45, max: 120, theme: 'dark' as const };
  const q = encodeUrl(model, view, { embed: '1' });
  assert.match(q, /misset=5\+10\+15/);
  assert.match(q, /(^|&)N=(&|$)/, 'removed default written as N=');
  assert.doesNotMatch(q, /scaling=/);
  const d = decodeUrl(new URLSearchParams(q));
  assert.deepEqual(d.model, model);
  assert.deepEqual(d.view, view);
  assert.deepEqual(d.rest, { embed: '1' });
});

test('bad view values in the URL are reported, not applied', () => {
  const d = decodeUrl(new URLSearchParams('cmap=rainbow&contrast=500&backend=webgpu'));
  assert.equal(d.view.cmap, VIEW_DEFAULTS.cmap);
  assert.equal(d.view.backend, 'gpu');
  assert.match(d.errors.cmap, /^cmap: "rainbow" is not one of/);
  assert.match(d.errors.contrast, /0 to 100/);
});

test('element attributes: same defaults, errors name the attribute', () => {
  const attrs: Record<string, string> = { lambda: '1.5', n: 'ten', cmap: 'rainbow', curved_det: '', theme: 'dark' };
  const d = decodeAttributes((n) => attrs[n] ?? null);
  assert.equal(d.model.cell, DEFAULT_MODEL.cell);
  assert.equal(d.model.curved_det, '1', 'a bare boolean attribute is on');
  assert.equal(d.view.theme, 'dark');
  assert.match(d.errors.N, /^attribute n: "ten" is not a whole number/);
  assert.match(d.errors.cmap, /^attribute cmap: "rainbow"/);
});

test('presets, local files', () => {
  assert.equal(presetOf({ ...PRESETS[1].state })?.id, 'protein');
  assert.equal(presetOf({ ...DEFAULT_MODEL, N: '7' }), undefined); // (N 6 is the crystal-size preset)
  assert.deepEqual(localFiles({ ...DEFAULT_MODEL, hkl: 'P1.hkl', mat: 'A.mat' }), ['A.mat', 'P1.hkl']);
});

test('store: one change, one notification; args and input errors follow', () => {
  const s = createStore();
  let runs = 0;
  effect(() => { void s.model.value; runs++; });
  s.setField('N', '7', 'preview');
  assert.equal(runs, 2);
  assert.deepEqual(s.changed.value, { key: 'N', mode: 'preview' });
  assert.equal(s.args.value.args[s.args.value.args.indexOf('-N') + 1], '7');
  s.setField('lambda', 'x');
  assert.match(s.inputErrors.value.lambda, /-lambda/);
  s.setField('hkl', 'x.hkl');
  assert.match(s.inputErrors.value.hkl, /please choose or drop/);
  s.addFile('x.hkl', new Uint8Array([49]));
  assert.equal(s.inputErrors.value.hkl, undefined);
  s.setField('N', '');
  assert.equal(s.model.value.N, undefined);
});

test("a preset's view settings come with it (the lesson's scale); the URL's win", () => {
  assert.equal(decodeUrl(new URLSearchParams('preset=crystal-size')).view.scaling, 'sqrt');
  assert.equal(decodeUrl(new URLSearchParams('preset=crystal-size&scaling=log')).view.scaling, 'log');
  assert.equal(decodeUrl(new URLSearchParams('preset=cubic')).view.scaling, 'log');
});

test("the error line names a link's missing files and their fields, else the first field's message", () => {
  const store = createStore({ ...DEFAULT_MODEL, hkl: 'mine.hkl' }, { ...VIEW_DEFAULTS });
  const one = inputErrorLine(store.inputErrors.value, store.model.value, store.files.value);
  assert.deepEqual(one, { text: 'This link uses mine.hkl as its HKL file (h k l F): choose or drop it in the form', key: 'hkl' });
  const two = inputErrorLine(createStore({ ...DEFAULT_MODEL, hkl: 'mine.hkl', mat: 'theirs.mat', geom: 'det.geom' }, { ...VIEW_DEFAULTS }).inputErrors.value,
    { ...DEFAULT_MODEL, hkl: 'mine.hkl', mat: 'theirs.mat', geom: 'det.geom' }, new Map());
  assert.equal(two?.text, 'This link uses theirs.mat as its orientation matrix file (MOSFLM A), mine.hkl as its HKL file (h k l F) and det.geom as its CrystFEL geometry (.geom): choose or drop them in the form');
  store.addFile('mine.hkl', new TextEncoder().encode('1 2 3 4\n'));
  assert.equal(inputErrorLine(store.inputErrors.value, store.model.value, store.files.value), null);
  const typed = inputErrorLine({ distance: 'not a number' }, store.model.value, store.files.value);
  assert.equal(typed?.key, 'distance');
  assert.match(typed!.text, /^Fix the highlighted input: .*distance.*: not a number$/i);
});
