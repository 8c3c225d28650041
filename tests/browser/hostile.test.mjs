// Files a user drops that are damaged or crafted (issue 29; the crate's readers refuse them with
// an error naming the file, fuzz/regressions/): opened on the page, each is refused in a few
// seconds with a message naming the file, the measured-image worker survives (no trap: it is not
// replaced) and the page goes on rendering. A DIALS .expt or CrystFEL .geom that is refused
// leaves the simulation's error naming the file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open, waitRendered, ROOT, setup } from './helpers.mjs';

const env = setup({ webgpu: false });
const REG = join(ROOT, 'fuzz', 'regressions');
const dir = mkdtempSync(join(tmpdir(), 'nb-hostile-'));
/** A regression input under a name with the extension a user's file would have. */
function file(target, input, name) {
  const p = join(dir, name);
  copyFileSync(join(REG, target, input), p);
  return p;
}

test('damaged measured images are refused naming the file; the worker and the page go on', { timeout: 180_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=128`);
  await waitRendered(page, 1);
  for (const [target, input, name] of [
    ['cbf', 'dims-2e20-squared', 'huge-dims.cbf'],
    ['cbf', 'value-beyond-i32', 'overflow.cbf'],
    ['measured', 'bslz4-total-2e40', 'bslz4-total.h5'],
    ['measured', 'gzip-30000-squared-unwritten', 'gzip-30000.h5'],
    ['measured', 'btree-offset-beyond-width-bslz4', 'btree-offset.h5'],
    ['measured', 'omega-nan', 'omega-nan.h5'],
  ]) {
    const t0 = Date.now();
    await page.evaluate(() => { document.getElementById('notice-text').textContent = ''; });
    await page.setInputFiles('.mbar .mfile', [file(target, input, name)]);
    await page.waitForFunction((name) => document.getElementById('notice-text').textContent.includes(name), name, { timeout: 30_000 });
    const ms = Date.now() - t0;
    const text = await page.textContent('#notice-text');
    console.log(`# ${name}: ${ms} ms: ${text}`);
    assert.ok(ms < 10_000, `${name} took ${ms} ms to refuse`);
    assert.doesNotMatch(text, /unreachable|RuntimeError|panicked/, text);
  }
  assert.equal(await page.evaluate(() => window.nanobragg.measured.workersReplaced), 0, 'no trap in the reader');
  assert.equal(await page.evaluate(() => window.nanobragg.measured.info), null, 'no image was taken from them');
  // the page renders on
  const n = await page.evaluate(() => Number(document.body.dataset.rendered));
  await page.fill('#f-distance', '120');
  await page.press('#f-distance', 'Enter');
  await waitRendered(page, n + 1);
  assert.deepEqual(errors.filter((e) => !/nanobragg/.test(e)), []);
  await page.close();
});

for (const [target, input, name, key] of [['geom', 'vector-non-ascii', 'panels.geom', 'p0/fs'], ['expt', 'image-size-1e19', 'indexed.expt', 'image_size']]) {
  test(`a refused ${name.split('.')[1]} names the file and the key; the page stays usable`, { timeout: 120_000 }, async () => {
    const { page } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=128`);
    await waitRendered(page, 1);
    await page.setInputFiles('.mbar .mfile', [file(target, input, name)]);
    await page.waitForFunction((name) => document.getElementById('error').textContent.includes(name), name, { timeout: 30_000 });
    const text = await page.textContent('#error');
    console.log(`# ${name}: ${text}`);
    assert.doesNotMatch(text, /unreachable|RuntimeError|panicked/, text);
    assert.ok(text.includes(`${key}:`), `the key ${key} is named: ${text}`);
    // the user takes the file out of the form (its field's ×): the simulation renders again
    const n = await page.evaluate(() => Number(document.body.dataset.rendered));
    await page.click(`.field[data-key="${target}"] button[title="Remove"]`);
    await waitRendered(page, n + 1);
    await page.close();
  });
}
