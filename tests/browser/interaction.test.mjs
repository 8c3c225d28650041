// Interaction: presets, cursor readout, keyboard zoom, latest-wins and cancel through the API,
// field errors (slider drags and the Cancel button: live.test.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { launch, open, waitRendered, ARTIFACTS, setup } from './helpers.mjs';

const env = setup({ webgpu: false });

test('preset, cursor readout (pixel, I, d, 2θ, hkl) and keyboard zoom', { timeout: 120_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu`);
  await waitRendered(page, 1);
  await page.selectOption('#preset', 'triclinic');
  await waitRendered(page, 2);
  await page.waitForFunction(() => new URL(location.href).searchParams.get('cell') === '5.8 7.1 9.3 81 77 68');
  const box = await page.locator('#canvas-host > .nb-canvas').boundingBox();
  await page.mouse.move(box.x + box.width / 2 + 120, box.y + box.height / 2 - 60);
  // d, 2θ and hkl come from the crate (asked through the worker): wait for them
  await page.waitForFunction(() => /^d = /.test(document.getElementById('readout').textContent), null, { timeout: 10_000 });
  const text = await page.textContent('#readout');
  assert.match(text, /^d = [\d.]+ Å\s+2θ = [\d.]+°\s+hkl ≈ \(-?\d+ -?\d+ -?\d+\)\s+\[[^\]]+\]\s+I = \S+ photons\s+pixel \(\d+, \d+\)$/);
  // at 1280×720 the hkl is in view (the line is cut at its end, where the pixel position is)
  const shown = await page.evaluate(() => {
    const el = document.getElementById('readout');
    const ctx = document.createElement('canvas').getContext('2d');
    ctx.font = getComputedStyle(el).font;
    const upToHkl = el.textContent.slice(0, el.textContent.indexOf(')') + 1);
    return { need: ctx.measureText(upToHkl).width, box: el.clientWidth };
  });
  assert.ok(shown.need <= shown.box, `d, 2θ and hkl fit the readout: ${JSON.stringify(shown)}`);
  // the automatic white level of this preset (about 1e6 photons, written 1.13e+6) fits its box
  const lv = await page.evaluate(() => {
    const el = document.getElementById('level-max');
    const ctx = document.createElement('canvas').getContext('2d');
    ctx.font = getComputedStyle(el).font;
    return { text: el.placeholder, width: ctx.measureText(el.placeholder).width, box: el.clientWidth };
  });
  assert.ok(lv.width <= lv.box - 4, `white level placeholder fits: ${JSON.stringify(lv)}`);
  await page.screenshot({ path: join(ARTIFACTS, 'app-triclinic-readout.png') });
  // keyboard: focus the image and zoom in; the readout under the same point changes pixel
  await page.focus('#canvas-host > .nb-canvas');
  await page.keyboard.press('+');
  await page.keyboard.press('+');
  await page.mouse.move(box.x + box.width / 2 + 121, box.y + box.height / 2 - 60);
  const zoomed = await page.textContent('#readout');
  assert.notEqual(zoomed, text);
  await page.keyboard.press('0');
  assert.deepEqual(errors, []);
});

test('latest wins: superseded requests reject with AbortError; cancel stops a long render', { timeout: 180_000 }, async () => {
  const { page } = await open(env.ctx, `${env.base}/?detpixels=16&cell=100+100+100+90+90+90&default_F=1&backend=cpu`);
  await waitRendered(page, 1);
  const r = await page.evaluate(async () => {
    const big = '-cell 100 100 100 90 90 90 -lambda 1 -N 20 -default_F 100 -mosaic 1 -mosaic_domains 50 -detpixels 1024 -oversample 2';
    const small = '-cell 100 100 100 90 90 90 -lambda 6.2 -N 5 -default_F 100 -detpixels 64';
    const out = await Promise.allSettled([
      window.nanobragg.simulate(big, { backend: 'cpu' }),
      window.nanobragg.simulate(big, { backend: 'cpu' }),
      window.nanobragg.simulate(small, { backend: 'cpu' }),
    ]);
    const t0 = performance.now();
    const p = window.nanobragg.simulate(big, { backend: 'cpu', channel: 'x' });
    await new Promise((r) => setTimeout(r, 300));
    window.nanobragg.client.cancel();
    const cancelled = await p.then(() => 'resolved', (e) => e.name);
    const after = await window.nanobragg.simulate(small, { backend: 'cpu' });
    return {
      states: out.map((o) => (o.status === 'fulfilled' ? `ok ${o.value.width}` : o.reason.name)),
      cancelled, cancelMs: performance.now() - t0, after: after.width,
    };
  });
  assert.deepEqual(r.states, ['AbortError', 'AbortError', 'ok 64']);
  assert.equal(r.cancelled, 'AbortError');
  assert.equal(r.after, 64);
  console.log(`# cancel of a long render returned after ${r.cancelMs.toFixed(0)} ms`);
});

test('bad numeric input is shown next to the field and the image stays', { timeout: 120_000 }, async () => {
  const { page } = await open(env.ctx, `${env.base}/?cell=100+100+100+90+90+90&lambda=6.2&N=5&default_F=100&detpixels=256&backend=cpu`);
  await waitRendered(page, 1);
  await page.fill('#f-lambda', 'abc');
  await page.press('#f-lambda', 'Enter');
  await page.waitForFunction(() => document.getElementById('f-lambda-msg').textContent.length > 0);
  assert.match(await page.textContent('#f-lambda-msg'), /-lambda/);
  assert.equal(await page.getAttribute('#f-lambda', 'aria-invalid'), 'true');
  assert.equal(await page.evaluate(() => window.nanobragg.lastRender().count), 1);
  // an error that only the simulator sees: it names the flag, shown at that field
  await page.fill('#f-lambda', '6.2');
  await page.fill('#f-cell', '100 100 100 90 90 90');
  await page.click('summary:has-text("Advanced")');
  await page.fill('#f-extra', '-detpixels_f');
  await page.press('#f-extra', 'Enter');
  await page.waitForFunction(() => !document.getElementById('error').hidden);
  const banner = await page.textContent('#error');
  console.log(`# simulator error: ${banner}`);
  assert.match(banner, /detpixels_f/);
  await page.screenshot({ path: join(ARTIFACTS, 'app-bad-flag.png') });
});

test('a detector too large for the browser is an error at its field and the image stays', { timeout: 120_000 }, async () => {
  const { page } = await open(env.ctx, `${env.base}/?cell=100+100+100+90+90+90&lambda=6.2&N=5&default_F=100&detpixels=128&backend=cpu`);
  await waitRendered(page, 1);
  await page.fill('#f-detpixels', '20000');
  await page.press('#f-detpixels', 'Enter');
  await page.waitForFunction(() => document.getElementById('f-detpixels-msg').textContent.length > 0);
  const msg = await page.textContent('#f-detpixels-msg');
  console.log(`# detector too large: ${msg}`);
  assert.match(msg, /-detpixels: a 20000x20000 detector needs \d+ MiB/);
  assert.equal(await page.evaluate(() => window.nanobragg.lastRender().count), 1);
});

test('a zoomed-out large image keeps one-pixel spots visible (block maxima, not averages)', { timeout: 120_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu`);
  await waitRendered(page, 1);
  const dark = await page.evaluate(async () => {
    // the geometry of a 2048² detector (one pixel rendered), a synthetic image: zeros and a
    // few isolated one-pixel spots
    const n = 2048;
    const r = await window.nanobragg.simulate(`-cell 100 100 100 90 90 90 -default_F 1 -N 1 -detpixels ${n} -pixel 0.05 -roi 0 0 0 0`);
    const data = new Float32Array(n * n);
    for (const [x, y] of [[300, 400], [1000, 1000], [1701, 1333], [77, 1900]]) data[y * n + x] = 1000;
    const view = window.nanobragg.view;
    view.update({ cmap: 'inverted-grey', scaling: 'linear', contrast: 0, min: null, max: null, rings: false, beamc: false });
    view.setImage(data, n, n, r.geometry);
    view.fit();
    const c = document.querySelector('.nb-canvas');
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let count = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i] < 64 && d[i + 1] < 64 && d[i + 2] < 64) count++;
    let min = 255; for (let i = 0; i < d.length; i += 4) min = Math.min(min, d[i]);
    return { count, min, canvas: [c.width, c.height], dpr: devicePixelRatio };
  });
  console.log(`# one-pixel spots of a 2048² image on a ${dark.canvas.join("x")} canvas: ${dark.count} dark pixels, darkest ${dark.min}, dpr ${dark.dpr}`);
  assert.ok(dark.canvas[0] < 2048 / 2, 'the view shows at least two image pixels per screen pixel');
  assert.ok(dark.count >= 4, `each spot is still drawn dark (${dark.count} dark pixels)`);
  assert.deepEqual(errors, []);
  await page.close();
});
