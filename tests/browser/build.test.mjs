// The built site: both wasm modules present, within the size budget (1.5 MB gzipped each), the
// files the pages load are there, the generated declarations, and the crate's word splitter
// against the spec the page's splitter is tested on (www/test/split-args.json).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync, readdirSync, statSync } from 'node:fs';
import { join, dirname } from 'node:path';
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

test('the published folder holds each file once, no source maps, only relative URLs', () => {
  const files = readdirSync(DIST, { recursive: true }).map(String).filter((f) => statSync(join(DIST, f)).isFile());
  assert.deepEqual(files.filter((f) => f.endsWith('.map')), [], 'source maps are in www/dist-maps, not the site');
  // one three.js chunk, imported by both the page and the element
  const three = files.filter((f) => /view3d-.*\.js$/.test(f));
  assert.equal(three.length, 1, three.join(' '));
  // the files each entry imports, statically or lazily (relative specifiers), transitively
  const reach = (entry) => {
    const seen = new Set([entry]);
    for (const f of seen) {
      const src = readFileSync(join(DIST, f), 'utf8');
      for (const m of src.matchAll(/(?:from|import)\s*\(?\s*"(\.{1,2}\/[^"]+\.js)"/g)) {
        seen.add(join(dirname(f), m[1]));
      }
    }
    return seen;
  };
  for (const entry of ['app.js', 'nanobragg-view.js']) assert.ok(reach(entry).has(three[0]), `${entry} reaches ${three[0]}`);
  assert.ok(!files.some((f) => f.startsWith('recip')), 'the 3D demo is not part of the site');
  // no file of the same content twice (above 10 kB)
  const seen = new Map();
  for (const f of files) {
    const b = readFileSync(join(DIST, f));
    if (b.length < 10_000) continue;
    const k = `${b.length}:${b.subarray(0, 4096).toString('base64')}`;
    assert.ok(!seen.has(k), `${f} repeats ${seen.get(k)}`);
    seen.set(k, f);
  }
  // the service worker carries the site's version and file list (written by the build)
  const sw = readFileSync(join(DIST, 'sw.js'), 'utf8');
  assert.doesNotMatch(sw, /__NB_/);
  assert.match(sw, /"pkg-parallel\/nanobragg_bg\.wasm"/);
  // relative URLs only: the site works under any base path
  for (const f of ['index.html', 'examples/embed.html']) {
    assert.doesNotMatch(readFileSync(join(DIST, f), 'utf8'), /(src|href)="\/(?!\/)/, f);
  }
  const total = files.reduce((s, f) => s + statSync(join(DIST, f)).size, 0);
  assert.ok(total < 8e6, `the site is ${(total / 1e6).toFixed(1)} MB`);
});
