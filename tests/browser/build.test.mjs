// The built site: both wasm modules present, within the size budget (1.5 MB gzipped each), the
// files the pages load are there, the generated declarations, and the crate's word splitter
// against the spec the page's splitter is tested on (www/test/split-args.json).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { DIST, ROOT } from './helpers.mjs';

const BUDGET = 1.5e6;

for (const pkg of ['pkg', 'pkg-parallel']) {
  test(`${pkg} wasm is within ${BUDGET / 1e6} MB gzipped`, (t) => {
    const f = join(DIST, pkg, 'nanobragg_bg.wasm');
    assert.ok(existsSync(f), `${f} missing: run npm run build`);
    const gz = gzipSync(readFileSync(f), { level: 9 }).length;
    t.diagnostic(`${pkg}: ${(gz / 1024).toFixed(0)} KiB gzipped`);
    assert.ok(gz <= BUDGET, `${gz} bytes gzipped`);
  });
}

test('static files of the site and the element exist', () => {
  for (const f of ['index.html', 'style.css', 'app.js', 'worker.js', 'nanobragg-view.js', 'examples/embed.html', 'pkg/nanobragg.js', 'pkg-parallel/nanobragg.js']) {
    assert.ok(existsSync(join(DIST, f)), f);
  }
  // the threaded module's rayon helper is beside its glue (wasm-bindgen-rayon no-bundler)
  assert.match(readFileSync(join(DIST, 'pkg-parallel', 'nanobragg.js'), 'utf8'), /workerHelpers/);
});

test('the crate\'s word splitter (through the wasm module) follows the shared spec, as the page\'s does', async () => {
  // the plain module instantiates in node: the same split_args the worker exports
  const glue = await import(pathToFileURL(join(DIST, 'pkg', 'nanobragg.js')).href);
  await glue.default({ module_or_path: readFileSync(join(DIST, 'pkg', 'nanobragg_bg.wasm')) });
  const spec = JSON.parse(readFileSync(join(ROOT, 'tests', 'unit', 'split-args.json'), 'utf8'));
  for (const [input, words] of spec.cases) assert.deepEqual(glue.split_args(input), words, JSON.stringify(input));
});

test('the generated TypeScript declarations type the structured values', () => {
  const dts = readFileSync(join(DIST, 'pkg', 'nanobragg.d.ts'), 'utf8');
  assert.match(dts, /export interface Geometry \{/);
  assert.match(dts, /export function prepare\(args: string\[\]\): PrepareInfo;/);
  assert.match(dts, /export function hkl_summary\(\): HklSummary \| null;/);
});

test('the threaded module\'s pool workers use the non-deprecated init call', () => {
  const helpers = readdirSync(join(DIST, 'pkg-parallel', 'snippets'), { recursive: true }).filter((f) => String(f).endsWith('workerHelpers.no-bundler.js'));
  assert.equal(helpers.length, 1);
  const src = readFileSync(join(DIST, 'pkg-parallel', 'snippets', String(helpers[0])), 'utf8');
  assert.match(src, /pkg\.default\(\{ module_or_path: data\.module, memory: data\.memory \}\)/);
});
