import { test } from 'node:test';
import assert from 'node:assert/strict';
import { downloadName, routeFile } from '../../www/src/files';
import { DEFAULT_MODEL } from '../../www/src/state';

const enc = (s: string) => new TextEncoder().encode(s);
function smv(pixels: number[]): Uint8Array {
  let head = `{\nHEADER_BYTES=512;\nDIM=2;\nBYTE_ORDER=little_endian;\nTYPE=unsigned_short;\nSIZE1=${pixels.length};\nSIZE2=1;\n}\n`;
  head = head.padEnd(512, ' ');
  const out = new Uint8Array(512 + 2 * pixels.length);
  out.set(enc(head));
  const dv = new DataView(out.buffer);
  pixels.forEach((v, i) => dv.setUint16(512 + 2 * i, v, true));
  return out;
}

test('dropped files are routed by their content', () => {
  assert.equal(routeFile(new TextEncoder().encode('CRYST1   20.000   25.000   30.000  90.00  90.00  90.00 P 1           1\nATOM      1  N   GLY A   1       1.000   2.000   3.000  1.00 10.00           N\n')).key, 'pdb');
  assert.equal(routeFile(new TextEncoder().encode('data_1PFE\n#\n_cell.length_a 1\n')).key, 'pdb');
  assert.equal(routeFile(smv([0, 1, 1, 0, 1])).key, 'mask');
  assert.equal(routeFile(smv([0, 17, 300, 2])).key, 'img');
  assert.equal(routeFile(enc('-0.0123 0.0045 0.0101\n0.0031 -0.0119 0.0043\n0.0088 0.0022 0.0127\n 0.0 0.0 0.0\n')).key, 'mat');
  assert.equal(routeFile(enc('# comment\n1 0 0 100.5\n-1 2 3 50\n0 0 4 12 extra\n')).key, 'hkl');
  assert.equal(routeFile(enc('-10 0 0 1 1.0e-10\n-10 0.001 0 1 1.0e-10\n')).key, 'sourcefile');
  assert.equal(routeFile(enc('hello world\n')).key, null);
  // a UTF-16 file (PowerShell's >) goes to the field its numbers say, whose reader says what to do
  const utf16 = (t: string, le: boolean) => {
    const out = [le ? 0xff : 0xfe, le ? 0xfe : 0xff];
    for (let i = 0; i < t.length; i++) { const c = t.charCodeAt(i); out.push(...(le ? [c & 255, c >> 8] : [c >> 8, c & 255])); }
    return new Uint8Array(out);
  };
  assert.equal(routeFile(utf16('1 0 0 100.5\n-1 2 3 50\n', true)).key, 'hkl');
  assert.equal(routeFile(utf16('0.01 0 0\n0 0.01 0\n0 0 0.01\n', false)).key, 'mat');
  assert.equal(routeFile(new Uint8Array([0, 1, 2, 3, 200, 5])).key, null);
  // a file named like a matrix but holding h k l F is HKL
  assert.equal(routeFile(enc('1 2 3 4.5\n2 2 2 1\n3 3 3 1\n')).key, 'hkl');
});

test('a dropped file that breaks its own pattern names the first bad line', () => {
  // line numbers count comments and blank lines, as an editor does
  const hkl = routeFile(enc('# F from a model\n0 0 1 1000\n\n1 1 0 500\n1 x 0 3\n2 0 0 7\n'));
  assert.equal(hkl.key, null);
  assert.match(hkl.reason, /^line 5 \("1 x 0 3"\) is not an "h k l F" row/);
  const src = routeFile(enc('-10 0.5 0 1 1.0e-10\n-10 0.001 0 1\n'));
  assert.equal(src.key, null);
  assert.match(src.reason, /^line 2 \("-10 0.001 0 1"\) is not a source row/);
  // no pattern to break: the general message
  assert.match(routeFile(enc('hello world\n1 2 3 4\n')).reason, /^not an SMV image/);
});

test('download names come from the settings', () => {
  assert.equal(downloadName({ ...DEFAULT_MODEL }, { width: 512, height: 512 }, 'int'), 'nanobragg_cell100-100-100-90-90-90_lambda6.2_N10_dist100_512x512.img');
  assert.equal(downloadName({ ...DEFAULT_MODEL, hkl: 'P1 data.hkl', misset: '1 2 3' }, { width: 64, height: 32 }, 'noise'), 'nanobragg_P1-data_lambda6.2_N10_dist100_misset1-2-3_64x32_noise.img');
  assert.match(downloadName(DEFAULT_MODEL, { width: 8, height: 8 }, 'float'), /_float\.bin$/);
  assert.match(downloadName(DEFAULT_MODEL, { width: 8, height: 8 }, 'png'), /\.png$/);
});
