// Bad input and the fixes found when the app was tried as its users: errors attach to the field
// the user changed, "the image shows the last good settings" only when there is an image, a bad
// <nanobragg-view> attribute is named, dropped files go to their field by content, the HKL
// summary, the readout clears, contrast and explicit levels, no wasm-bindgen deprecation warning.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { launch, open, waitRendered, goldenDir, ARTIFACTS, setup } from './helpers.mjs';

const env = setup({ webgpu: false });

const msgOf = (page, key) => page.textContent(`#f-${key}-msg`);
async function setField(page, key, value) {
  const before = await page.evaluate(() => Number(document.body.dataset.error ?? 0));
  await page.fill(`#f-${key}`, value);
  await page.press(`#f-${key}`, 'Enter');
  return before;
}
const waitError = (page, since) => page.waitForFunction((t) => Number(document.body.dataset.error ?? 0) > t, since, { timeout: 60_000 });

test('simulator errors attach to the field the user changed', { timeout: 120_000 }, async () => {
  // oversample= clears the default preset's -oversample 1, so that the crate chooses it
  const { page, warnings } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=64&oversample=`);
  await waitRendered(page, 1);
  assert.equal(await page.evaluate(() => window.nanobragg.state().oversample ?? ''), '');
  // N = 100000: the crate complains about the automatic oversampling; the user changed N
  await waitError(page, await setField(page, 'N', '100000'));
  assert.match(await msgOf(page, 'N'), /oversampl|unreasonably large/);
  assert.equal(await msgOf(page, 'oversample'), '');
  assert.match(await page.textContent('#error'), /the image shows the last good settings/);
  await setField(page, 'N', '5');
  await waitRendered(page, 2);
  assert.equal(await msgOf(page, 'N'), '');
  // sampling counts too large: no flag named, the changed field gets it
  await setField(page, 'mosaic', '1');
  await waitRendered(page, 3);
  await waitError(page, await setField(page, 'mosaic_domains', '100000000'));
  assert.match(await msgOf(page, 'mosaic_domains'), /sampling|mosaic/i);
  await setField(page, 'mosaic_domains', '');
  await waitRendered(page, 4);
  // a zero distance is an error at the distance field
  await waitError(page, await setField(page, 'distance', '0'));
  assert.notEqual(await msgOf(page, 'distance'), '');
  await setField(page, 'distance', '100');
  await waitRendered(page, 5);
  // -N abc typed in Extra flags is blamed on Extra flags, not on N
  await page.click('summary:has-text("Advanced")');
  await waitError(page, await setField(page, 'extra', '-N abc'));
  assert.match(await msgOf(page, 'extra'), /-N/);
  assert.equal(await msgOf(page, 'N'), '');
  await page.screenshot({ path: join(ARTIFACTS, 'inputs-extra-flags-error.png') });
  assert.deepEqual(warnings.filter((w) => /deprecated/i.test(w)), [], 'no wasm-bindgen deprecation warning');
});

test('"the image shows the last good settings" is said only when there is an image', { timeout: 120_000 }, async () => {
  const { page } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=64&lambda=abc`);
  await page.waitForFunction(() => !document.getElementById('error').hidden);
  const text = await page.textContent('#error');
  assert.doesNotMatch(text, /last good/);
  assert.match(await msgOf(page, 'lambda'), /-lambda: "abc" is not a number/);
  // a simulator error with no image yet
  const { page: p2 } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=64&extra=-distance+x`);
  await p2.waitForFunction(() => !document.getElementById('error').hidden);
  assert.doesNotMatch(await p2.textContent('#error'), /last good/);
  assert.match(await msgOf(p2, 'extra'), /-distance/);
});

test('a bad <nanobragg-view> attribute is named', { timeout: 120_000 }, async () => {
  const { page } = await open(env.ctx, `${env.base}/examples/embed.html`);
  const msgs = await page.evaluate(async () => {
    const out = [];
    for (const [k, v] of [['lambda', 'abc'], ['cmap', 'rainbow'], ['misset', '1 2'], ['extra', '']]) {
      const el = document.createElement('nanobragg-view');
      el.setAttribute('detpixels', '32');
      if (k === 'extra') el.setAttribute('args', '-distance abc');
      else el.setAttribute(k, v);
      document.body.appendChild(el);
      out.push(await new Promise((ok) => {
        el.addEventListener('error', (e) => ok(e.detail.message), { once: true });
        el.addEventListener('render', () => ok('rendered'), { once: true });
      }));
    }
    return out;
  });
  assert.match(msgs[0], /attribute lambda: "abc" is not a number/);
  assert.match(msgs[1], /attribute cmap: "rainbow"/);
  assert.match(msgs[2], /attribute misset: needs 3 numbers/);
  assert.match(msgs[3], /-distance/);
});

/** Drop files on the page as the browser would. */
function drop(page, files) {
  return page.evaluate((files) => {
    const dt = new DataTransfer();
    for (const f of files) dt.items.add(new File([Uint8Array.from(f.bytes)], f.name));
    window.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, files.map((f) => ({ name: f.name, bytes: [...f.bytes] })));
}

test('dropped files go to their field by content; the HKL summary; downloads named after the settings', { timeout: 150_000 }, async () => {
  const g = goldenDir();
  const hklText = readFileSync(join(g, 'hkl_interpolate_explicit', 'input.hkl'), 'utf8');
  const { page } = await open(env.ctx, `${env.base}/?backend=cpu&cell=50+50+50+90+90+90&lambda=1.5&distance=100&pixel=0.1&detpixels=128&N=5`);
  await waitRendered(page, 1);
  // an SMV image of the page's own rendering, named like an HKL file: it is an image header
  const smv = await page.evaluate(async () => [...await window.nanobragg.client.exportImage('int')]);
  await drop(page, [{ name: 'looks-like.hkl', bytes: smv }]);
  await page.waitForFunction(() => document.getElementById('f-img-name').textContent.startsWith('looks-like.hkl'));
  assert.equal(await page.textContent('#f-hkl-name'), 'none');
  await waitRendered(page, 2);
  await page.click('button[aria-label^="Remove Header"]');
  await waitRendered(page, 3);
  // h k l F rows named .txt: structure factors, with a summary checked against the file itself
  await drop(page, [{ name: 'sf.txt', bytes: [...Buffer.from(hklText)] }]);
  await page.waitForFunction(() => document.getElementById('f-hkl-name').textContent === 'sf.txt');
  await page.waitForFunction(() => document.getElementById('hkl-summary').textContent.length > 0, null, { timeout: 60_000 });
  const rows = hklText.trim().split('\n').map((l) => l.trim().split(/\s+/).map(Number));
  const rng = (i) => [Math.min(...rows.map((r) => r[i])), Math.max(...rows.map((r) => r[i]))];
  const ds = rows.filter((r) => r[0] || r[1] || r[2]).map((r) => 50 / Math.hypot(r[0], r[1], r[2]));
  const summary = await page.textContent('#hkl-summary');
  console.log('# HKL summary:', summary);
  assert.match(summary, new RegExp(`${rows.length.toLocaleString('en')} reflections`));
  assert.match(summary, new RegExp(`h ${rng(0)[0]}…${rng(0)[1]}, k ${rng(1)[0]}…${rng(1)[1]}, l ${rng(2)[0]}…${rng(2)[1]}`));
  const [, dmax, dmin] = summary.match(/resolution ([\d.∞]+)–([\d.]+) Å/);
  assert.ok(Math.abs(Number(dmin) - Math.min(...ds)) < 0.01, `${dmin} vs ${Math.min(...ds)}`);
  assert.ok(Math.abs(Number(dmax) - Math.max(...ds)) < 0.01, `${dmax} vs ${Math.max(...ds)}`);
  // nine numbers: a matrix; junk: a notice, no field
  await drop(page, [{ name: 'junk.bin', bytes: [0, 1, 2, 200, 3] }]);
  await page.waitForFunction(() => /junk\.bin/.test(document.getElementById('notice-text').textContent));
  assert.match(await page.textContent('#notice-text'), /by hand/);
  await page.screenshot({ path: join(ARTIFACTS, 'inputs-hkl-summary.png') });
  // downloads are named after the settings
  await waitRendered(page, 4);
  await page.click('.downloads > summary');
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#dl-int')]);
  assert.equal(dl.suggestedFilename(), 'nanobragg_sf_lambda1.5_N5_dist100_128x128.img');
});

test('readout clears when the pointer leaves or the parameters change; contrast value and explicit levels', { timeout: 120_000 }, async () => {
  const { page } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=256`);
  await waitRendered(page, 1);
  const box = await page.locator('#canvas-host > .nb-canvas').boundingBox();
  const hint = await page.textContent('#readout');
  await page.mouse.move(box.x + box.width / 2 + 40, box.y + box.height / 2 + 10);
  // d, 2θ and hkl come from the crate through the worker: a moment after the pointer
  await page.waitForFunction(() => /^d = .*pixel \(/.test(document.getElementById('readout').textContent), null, { timeout: 10_000 });
  await page.mouse.move(box.x - 100, box.y + 10);
  assert.equal(await page.textContent('#readout'), hint, 'cleared on leave');
  await page.mouse.move(box.x + box.width / 2 + 40, box.y + box.height / 2 + 10);
  // d, 2θ and hkl come from the crate through the worker: a moment after the pointer
  await page.waitForFunction(() => /^d = .*pixel \(/.test(document.getElementById('readout').textContent), null, { timeout: 10_000 });
  await page.evaluate(() => { const s = document.getElementById('f-distance'); s.value = '120'; s.dispatchEvent(new Event('change')); });
  await waitRendered(page, 2);
  assert.equal(await page.textContent('#readout'), hint, 'cleared when the parameters change');
  // contrast shows its value
  await page.evaluate(() => { const c = document.getElementById('contrast'); c.value = '55'; c.dispatchEvent(new Event('input')); });
  assert.equal(await page.textContent('#contrast-value'), '55');
  // explicit levels: white level 1 photon saturates more pixels than the automatic one
  const white = () => page.evaluate(() => {
    const c = document.querySelector('.nb-canvas');
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i] < 5) n++; // inverted grey: saturated = black
    return n;
  });
  const auto = await white();
  await page.fill('#level-max', '0.001');
  await page.press('#level-max', 'Enter');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('max') === '0.001');
  assert.ok((await white()) > auto * 1.5, `${await white()} vs ${auto}`);
  assert.equal(await page.isDisabled('#contrast'), true);
  await page.fill('#level-max', 'lots');
  await page.press('#level-max', 'Enter');
  assert.match(await page.getAttribute('#level-max', 'title'), /white level: "lots"/);
});
