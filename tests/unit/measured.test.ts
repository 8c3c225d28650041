import { test } from 'node:test';
import assert from 'node:assert/strict';
import { difference, hasCrystal, masterOf, measuredKind, simScale, tidyValue, withFileGeometry } from '../../www/src/measured/logic';

const enc = (s: string) => new TextEncoder().encode(s);

test('measured files are told by content', () => {
  assert.equal(measuredKind(new Uint8Array([0x89, 0x48, 0x44, 0x46, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0])), 'hdf5');
  assert.equal(measuredKind(enc('{\nHEADER_BYTES=512;\nDIM=2;\n}')), 'smv');
  assert.equal(measuredKind(enc('###CBF: VERSION 1.5\ndata_x\n')), 'cbf');
  assert.equal(measuredKind(enc('{\n  "__id__": "ExperimentList",\n  "experiment": []\n}')), 'expt');
  assert.equal(measuredKind(enc('; CrystFEL\nclen = 0.1\np0/min_fs = 0\np0/fs = x\n')), 'geom');
  assert.equal(measuredKind(enc('1 2 3 100\n')), null);
  assert.equal(masterOf(['x_data_000001.h5', 'x_master.h5']), 1);
  assert.equal(masterOf(['a.h5', 'b.h5']), 0);
});

test('an experiment list holds a crystal when its first experiment names one it has', () => {
  const list = (exp: object, crystals: unknown[] | undefined) => enc(JSON.stringify({ __id__: 'ExperimentList', experiment: [exp], ...(crystals ? { crystal: crystals } : {}) }));
  const xtal = { real_space_a: [40, 0, 0], real_space_b: [0, 50, 0], real_space_c: [0, 0, 60] };
  assert.equal(hasCrystal(list({ beam: 0, detector: 0, crystal: 0 }, [xtal])), true);
  assert.equal(hasCrystal(list({ beam: 0, detector: 0, crystal: 1 }, [xtal, xtal])), true);
  assert.equal(hasCrystal(list({ beam: 0, detector: 0 }, [xtal])), false, 'the experiment names none');
  assert.equal(hasCrystal(list({ beam: 0, detector: 0, crystal: 1 }, [xtal])), false, 'the list lacks it');
  assert.equal(hasCrystal(list({ beam: 0, detector: 0, crystal: 0 }, undefined)), false);
  assert.equal(hasCrystal(enc('{"experiment": [{"crystal": 0}], "crystal": [{}]')), false, 'not JSON');
});

test("a file's geometry replaces the detector fields it conflicts with", () => {
  const model = { cell: '100 100 100 90 90 90', detector: 'eiger2-4m', detpixels: '512', convention: 'xds', lambda: '6.2', energy: '12000', distance: '100' };
  const { model: next, set } = withFileGeometry(model, [['-detpixels_f', '131'], ['-detpixels_s', '97'], ['-pixel', '0.1'], ['-distance', '150'], ['-Xbeam', '4.75'], ['-Ybeam', '6.45']]);
  assert.deepEqual(next, { cell: '100 100 100 90 90 90', lambda: '6.2', distance: '150', detpixels_f: '131', detpixels_s: '97', pixel: '0.1', Xbeam: '4.75', Ybeam: '6.45' });
  assert.deepEqual(set, ['detpixels_f', 'detpixels_s', 'pixel', 'distance', 'Xbeam', 'Ybeam']);
});

test("a file's numbers reach the form without float noise", () => {
  const { model } = withFileGeometry({}, [['-Xbeam', '51.400000000000006'], ['-Ybeam', '6.45'], ['-pixel', '0.000172'], ['-lambda', '0.97625999999999995']]);
  assert.deepEqual(model, { Xbeam: '51.4', Ybeam: '6.45', pixel: '0.000172', lambda: '0.97626' });
  assert.equal(tidyValue('1 -0.30000000000000004 1.0000000000000002e-10'), '1 -0.3 1e-10');
  assert.equal(tidyValue('1.0 100.000 12345.6789012'), '1.0 100.000 12345.6789012'); // 12 digits or fewer: as written
});

test('the difference scales the simulation onto the trusted measured counts', () => {
  // a 2×2 preview (scale 2) of a 4×4 detector; one flagged measured pixel
  const sim = new Float32Array([1, 2, 3, 4]);
  const m = new Float32Array([2, 2, 4, 4, 2, 2, 4, 4, 6, 6, 8, -1, 6, 6, 8, 8]);
  const k = simScale(m, 4, 4, sim, 2, 2);
  assert.equal(k, (2 * 4 + 4 * 4 + 6 * 4 + 8 * 3) / (1 * 4 + 2 * 4 + 3 * 4 + 4 * 3));
  const d = difference(m, 4, 4, sim, 2, 2, 2);
  assert.deepEqual(Array.from(d), [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
  const d1 = difference(m, 4, 4, sim, 2, 2, 1);
  assert.equal(d1[0], 1);
  assert.equal(d1[11], 0); // flagged: left out
});
