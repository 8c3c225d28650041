// The built site: both wasm modules present, within the size budget (1.5 MB gzipped each), and
// the files the pages load are there.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { DIST } from './helpers.mjs';

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
