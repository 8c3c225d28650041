import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fieldOfError, buildArgs, normaliseArgs, placeWarnings, previewArgs, previewFactor, splitArgs, validate } from '../../www/src/args';
import { DEFAULT_MODEL } from '../../www/src/state';

const spec = JSON.parse(readFileSync(join(process.cwd(), 'tests', 'unit', 'split-args.json'), 'utf8')) as { cases: [string, string[]][] };

test('splitArgs follows the shared spec (the crate passes the same spec in build.test.mjs)', () => {
  for (const [input, words] of spec.cases) assert.deepEqual(splitArgs(input), words, JSON.stringify(input));
});

test('buildArgs: switches first, each word knows its field; Extra flags split like the crate', () => {
  const b = buildArgs({ cell: '100 100 100 90 90 90', N: '5', curved_det: '1', convention: 'xds', extra: '-phisteps 3 -hkl "my file.hkl"' });
  assert.deepEqual(b.args, ['-xds', '-curved_det', '-cell', '100', '100', '100', '90', '90', '90', '-N', '5', '-phisteps', '3', '-hkl', 'my file.hkl']);
  assert.equal(b.origin[0], 'convention');
  assert.equal(b.origin[1], 'curved_det');
  assert.equal(b.origin[b.args.indexOf('-N')], 'N');
  assert.equal(b.origin[b.args.indexOf('-phisteps')], 'extra');
  // a value of "0"/"off" leaves a switch out
  assert.deepEqual(buildArgs({ nopolar: '0', point_pixel: 'off' }).args, []);
});

test('normaliseArgs takes the page flags and drops output files', () => {
  const n = normaliseArgs('-N 5 -backend webgpu -precision f64 -threads 4 -floatfile x.bin -intfile y.img');
  assert.deepEqual(n, { args: ['-N', '5'], backend: 'gpu', precision: 'f64' });
  // every output-file flag of the crate's table, aliases included (www/src/flags.json)
  const o = normaliseArgs('-cbffile a.cbf -hklout b.hkl -predict c.txt -floatimage d.bin -stolout e.stol -N 3');
  assert.deepEqual(o.args, ['-N', '3']);
});

test('validate names the flag (app) or the attribute (element)', () => {
  assert.deepEqual(validate({ N: 'abc', lambda: '1.5' }), { N: '-N: "abc" is not a whole number' });
  const e = validate({ lambda: 'x', misset: '1 2', shape: 'blob' }, (p) => `attribute ${p.key.toLowerCase()}`);
  assert.match(e.lambda, /^attribute lambda: "x" is not a number/);
  assert.match(e.misset, /^attribute misset: needs 3 numbers or "random"/);
  assert.match(e.shape, /^attribute shape: "blob" is not one of "round", "gauss", "tophat"/);
  assert.deepEqual(validate({ misset: 'random', cell: '50' }), {});
});

test('previewArgs: same detector at 1/factor the pixels; refuses pixel-unit flags', () => {
  assert.deepEqual(previewArgs(['-N', '5'], 512, 400, 0.2, 2), ['-N', '5', '-detpixels_f', '256', '-detpixels_s', '200', '-pixel', '0.4', '-oversample', '1']);
  assert.equal(previewArgs(['-N', '5'], 512, 512, 0.2, 1), null);
  assert.equal(previewArgs(['-roi', '0', '10', '0', '10'], 512, 512, 0.2, 2), null);
  // pixel-unit flags come from the crate's flag table, aliases included
  for (const f of ['-img', '-mask', '-ORGX', '-pix0_vector_mm', '-printout_pixel']) assert.equal(previewArgs([f, '1'], 512, 512, 0.2, 2), null, f);
  assert.notEqual(previewArgs(['-Xclose', '10'], 512, 512, 0.2, 2), null);
  // no fixed cost: the render alone against the budget
  assert.equal(previewFactor(10, 0, 25), 1);
  assert.equal(previewFactor(100, 0, 25), 2);
  assert.equal(previewFactor(470, 0, 25), 5);
  assert.equal(previewFactor(1e6, 0, 25), 8);
  // a 3 ms render with 5 ms of transfer fits a 16 ms frame: full resolution
  assert.equal(previewFactor(3, 5, 16), 1);
  // the fixed cost takes from the budget (11 ms left for 100 ms: 4×), never all of it
  assert.equal(previewFactor(100, 5, 16), 4);
  assert.equal(previewFactor(100, 40, 16), 5);
  assert.equal(previewFactor(NaN, 0, 16), 1);
});

test('fieldOfError: the crate\'s structured error attaches to the field the user changed', () => {
  // (no -oversample: the sampling is automatic)
  const model = { ...DEFAULT_MODEL, N: '100000', oversample: '' };
  const built = buildArgs(model);
  // the crate blames the automatic oversampling: the user changed N
  assert.equal(fieldOfError({ flag: '-oversample' }, model, built, 'N'), 'N');
  // no flag at all: the changed field
  const m2 = { ...DEFAULT_MODEL, mosaic_domains: '100000000', mosaic: '1' };
  assert.equal(fieldOfError({ flag: null }, m2, buildArgs(m2), 'mosaic_domains'), 'mosaic_domains');
  // -N abc typed in Extra flags is the Extra flags field's, not N's
  const m3 = { ...DEFAULT_MODEL, extra: '-N abc' };
  assert.equal(fieldOfError({ flag: '-N' }, m3, buildArgs(m3), 'extra'), 'extra');
  // ... also when the user last touched something else
  assert.equal(fieldOfError({ flag: '-N' }, { ...DEFAULT_MODEL, N: '', extra: '-N abc' }, buildArgs({ ...DEFAULT_MODEL, N: '', extra: '-N abc' }), 'lambda'), 'extra');
  // a file error names the file's field
  const m4 = { ...DEFAULT_MODEL, hkl: 'bad.hkl' };
  assert.equal(fieldOfError({ flag: '-hkl', file: 'bad.hkl' }, m4, buildArgs(m4), 'distance'), 'hkl');
  assert.equal(fieldOfError({ file: 'bad.hkl' }, m4, buildArgs(m4), 'distance'), 'hkl');
  const m5 = { ...DEFAULT_MODEL, detpixels_f: 'x' };
  assert.equal(fieldOfError({ flag: '-detpixels_f' }, m5, buildArgs(m5), null), 'detpixels_f');
  // a flag given twice: the later occurrence (Extra flags come last)
  const m6 = { ...DEFAULT_MODEL, extra: '-distance x' };
  assert.equal(fieldOfError({ flag: '-distance' }, m6, buildArgs(m6), null), 'extra');
  // a flag no word carries: the field that would own it
  assert.equal(fieldOfError({ flag: '-mosaic_seed' }, DEFAULT_MODEL, buildArgs(DEFAULT_MODEL), null), 'mosaic_seed');
  // nothing to go on: no field
  assert.equal(fieldOfError({}, DEFAULT_MODEL, buildArgs(DEFAULT_MODEL), null), null);
});

test('placeWarnings: a warning naming a flag goes to its field and the notice; upstream\'s log lines to neither', () => {
  const state = { ...DEFAULT_MODEL, distance: '-30' };
  const built = buildArgs(state);
  const [neg, odet, over] = placeWarnings([
    'WARNING: -distance -30: a negative distance is used as 30 mm (as upstream does)',
    'WARNING: auto-generating odet_vector',
    'oversampling of 1 is less than the recommended 4',
  ], state, built);
  assert.deepEqual(neg, { text: '-distance -30: a negative distance is used as 30 mm (as upstream does)', key: 'distance', notice: true });
  assert.deepEqual(odet, { text: 'auto-generating odet_vector', key: null, notice: false });
  assert.equal(over.notice, false);
});
