// Golden cases from upstream nanoBragg (C) through window.nanobragg.simulate on both backends:
// Pearson correlation of the float image >= 0.9999 (golden/README.md "Comparing").
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { launch, serve, open, goldenDir, pearson, readFloats } from './helpers.mjs';

const CASES = [
  'cubic_basic_mosflm',          // simple cubic, MOSFLM
  'hkl_interpolate_explicit',    // HKL file + tricubic interpolation
  'mat_mosflm9_hkl_nearest',     // MOSFLM matrix file + HKL
  'mosaic_domains_seed_noise',   // mosaic spread, 12 domains
  'precision_cubic300_N50',      // precision stress: 300 Å cell, N=50
  'precision_triclinic_big',     // precision stress: big triclinic, oversample 2
  'triclinic_misset_xybeam',     // triclinic + misset + beam centre
  'sourcefile_3sources',         // source file
];
const OUTPUT_FILES = new Set(['args.txt', 'float.bin', 'int.img', 'image.pgm', 'noise.img', 'stdout.txt']);

const dir = goldenDir();
let ctx, server, page, gpuNote = '';

before(async () => {
  const s = await serve();
  server = s.server;
  ctx = await launch({ webgpu: true });
  ({ page } = await open(ctx, `${s.url}/?detpixels=16`));
  await page.evaluate(() => window.nanobragg.ready);
  // Is the WebGPU kernel usable here?
  const probe = await page.evaluate(async () => {
    const r = await window.nanobragg.simulate('-cell 100 100 100 90 90 90 -default_F 1 -detpixels 8', { backend: 'webgpu' });
    return { backend: r.backend, notice: r.notice };
  });
  if (probe.backend !== 'gpu') gpuNote = probe.notice || 'WebGPU backend not used';
});

after(async () => {
  await ctx?.close();
  server?.close();
});

function loadCase(name) {
  const d = join(dir, name);
  const args = readFileSync(join(d, 'args.txt'), 'utf8').trim();
  const files = {};
  for (const f of readdirSync(d)) if (!OUTPUT_FILES.has(f)) files[f] = readFileSync(join(d, f)).toString('base64');
  return { args, files, ref: readFloats(join(d, 'float.bin')) };
}

for (const backend of ['cpu', 'gpu']) {
  for (const name of CASES) {
    test(`golden ${name} on ${backend}`, { timeout: 300_000 }, async (t) => {
      assert.ok(dir && existsSync(join(dir, name)), `golden fixture ${name} not found`);
      // WebGPU must work here (SwiftShader in headless chromium): no silent skip
      if (backend === 'gpu') assert.equal(gpuNote, '', `WebGPU backend not usable: ${gpuNote}`);
      const { args, files, ref } = loadCase(name);
      const out = await page.evaluate(async ({ args, files, backend }) => {
        const bin = (b64) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
        const f = Object.fromEntries(Object.entries(files).map(([k, v]) => [k, bin(v)]));
        const r = await window.nanobragg.simulate(args, { backend, files: f });
        const u8 = new Uint8Array(r.data.buffer, r.data.byteOffset, r.data.byteLength);
        let s = '';
        for (let i = 0; i < u8.length; i += 0x8000) s += String.fromCharCode(...u8.subarray(i, i + 0x8000));
        return { backend: r.backend, width: r.width, height: r.height, data: btoa(s), ms: r.timings.render, notice: r.notice };
      }, { args, files, backend });
      const buf = Buffer.from(out.data, 'base64');
      const img = new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength / 4);
      assert.equal(out.backend, backend, out.notice);
      assert.equal(img.length, ref.length, `image size ${out.width}x${out.height}`);
      assert.ok(img.every(Number.isFinite), 'no NaN/inf');
      const r = pearson(ref, img);
      let sr = 0, st = 0;
      for (let i = 0; i < ref.length; i++) { sr += ref[i]; st += img[i]; }
      t.diagnostic(`${out.width}x${out.height} ${backend}: pearson=${r.toFixed(7)} sum ratio=${(st / sr).toFixed(6)} render=${out.ms.toFixed(0)} ms`);
      assert.ok(r >= 0.9999, `Pearson ${r} < 0.9999`);
    });
  }
}
