// The app page in headless chromium: default render (WebGPU via SwiftShader when the kernel is
// available), CPU threads, URL round trip, HKL upload, malformed HKL, SMV download, embed mode.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { launch, open, waitRendered, goldenDir, canvasSpread, setup, ARTIFACTS } from './helpers.mjs';

const env = setup();

test('app loads, renders the default preset and shows the backend; Auto passes a software WebGPU over, WebGPU still uses it', { timeout: 180_000 }, async () => {
  const ctx = await launch({ webgpu: true });
  try {
    const { page, errors } = await open(ctx, `${env.base}/`);
    await page.evaluate(() => { window.__frames = []; window.addEventListener('nanobragg-frame', (e) => window.__frames.push(e.detail)); });
    await waitRendered(page, 1);
    const st = await page.evaluate(async () => ({
      label: document.getElementById('backend-label').textContent,
      backend: document.getElementById('backend-label').dataset.backend,
      notice: document.getElementById('notice').textContent,
      gpu: !!navigator.gpu, iso: crossOriginIsolated,
      // what the browser says of its adapter (SwiftShader here: a fallback adapter)
      fallback: (await navigator.gpu?.requestAdapter())?.info?.isFallbackAdapter ?? null,
      frame: window.__frames.at(-1) ?? null,
    }));
    test.diagnostic?.(JSON.stringify(st));
    console.log('# default render:', JSON.stringify(st));
    assert.ok(st.gpu, 'navigator.gpu exists (SwiftShader)');
    assert.ok(st.label.length > 3, 'backend shown');
    if (st.fallback) {
      // the CPU kernel beats a CPU emulating a GPU: Auto renders there and says why
      assert.equal(st.backend, 'cpu', JSON.stringify(st));
      assert.match(st.notice, /^WebGPU here is a software renderer: running on the CPU, \d+ threads?/);
      assert.equal(st.frame?.backend, 'cpu');
      assert.match(st.frame?.notice ?? '', /software renderer/);
    } else if (st.backend === 'gpu') assert.match(st.label, /WebGPU/);
    else assert.match(st.notice, /^(No WebGPU in this browser|WebGPU failed): running on the CPU, \d+ threads?/, 'a CPU fallback says so in one plain line');
    assert.ok((await canvasSpread(page)) > 5, 'canvas is not blank');
    await page.screenshot({ path: join(ARTIFACTS, 'app-default.png') });
    // asked for by name, WebGPU renders whatever its adapter is
    const n = Number(await page.evaluate(() => document.body.dataset.rendered));
    await page.selectOption('#backend', 'gpu');
    await waitRendered(page, n + 1);
    const gpu = await page.evaluate(() => ({ backend: document.getElementById('backend-label').dataset.backend, label: document.getElementById('backend-label').textContent }));
    assert.equal(gpu.backend, 'gpu', JSON.stringify(gpu));
    assert.match(gpu.label, /WebGPU/);
    assert.ok((await canvasSpread(page)) > 5, 'the WebGPU image is not blank');
    assert.deepEqual(errors.filter((e) => !/favicon/.test(e)), []);
  } finally {
    await ctx.close();
  }
});

test('with WebGPU disabled it renders on CPU threads (> 1 when isolated)', { timeout: 180_000 }, async () => {
  const ctx = await launch({ webgpu: false });
  try {
    const { page } = await open(ctx, `${env.base}/?preset=protein&cell=79+79+38+90+90+90&lambda=1.0&N=12&default_F=100&distance=120&detpixels=512&pixel=0.3&misset=10+25+5&mosaic=0.3&mosaic_domains=12&oversample=1&cmap=viridis`);
    await waitRendered(page, 1);
    const st = await page.evaluate(() => ({
      iso: crossOriginIsolated, gpu: !!navigator.gpu,
      threads: Number(document.getElementById('backend-label').dataset.threads),
      label: document.getElementById('backend-label').textContent,
      backend: window.nanobragg.lastRender().result.backend,
    }));
    console.log('# cpu render:', JSON.stringify(st));
    assert.equal(st.iso, true);
    assert.equal(st.backend, 'cpu');
    assert.ok(st.threads > 1, `threads ${st.threads}`);
    assert.match(st.label, /CPU.*threads/);
    assert.ok((await canvasSpread(page)) > 5, 'canvas is not blank');
    // the automatic white level shows whole in its box (placeholder), and is the view's level
    const lv = await page.evaluate(() => {
      const el = document.getElementById('level-max');
      const ctx = document.createElement('canvas').getContext('2d');
      ctx.font = getComputedStyle(el).font;
      return { text: el.placeholder, width: ctx.measureText(el.placeholder).width, box: el.clientWidth, hi: window.nanobragg.view.imageSize.levels[1] };
    });
    assert.ok(lv.width <= lv.box - 4, `white level placeholder fits: ${JSON.stringify(lv)}`);
    assert.ok(Math.abs(Number(lv.text) - lv.hi) <= 1e-3 * lv.hi, `placeholder is the automatic level: ${JSON.stringify(lv)}`);
    // no WebGPU: one plain, closable line that stays closed
    assert.equal(await page.textContent('#notice-text'), `No WebGPU in this browser: running on the CPU, ${st.threads} threads`);
    await page.click('#notice-close');
    assert.equal(await page.isHidden('#notice'), true);
    await page.fill('#f-N', '6');
    await page.press('#f-N', 'Enter');
    await waitRendered(page, 2);
    assert.equal(await page.isHidden('#notice'), true, 'a closed notice stays closed');
    await page.screenshot({ path: join(ARTIFACTS, 'app-cpu-protein.png') });
    // the simulate API on the CPU reports its threads too
    const r = await page.evaluate(async () => {
      const r = await window.nanobragg.simulate('-cell 100 100 100 90 90 90 -lambda 6.2 -N 5 -default_F 100 -distance 100 -detpixels 64', { backend: 'cpu' });
      return { threads: r.threads, w: r.width, h: r.height, n: r.data.length, t: r.timings };
    });
    assert.ok(r.threads > 1);
    assert.equal(r.n, 64 * 64);
  } finally {
    await ctx.close();
  }
});

test('URL round trip: parameters in the URL fill the form, edits update the URL', { timeout: 180_000 }, async () => {
  const ctx = await launch({ webgpu: false });
  try {
    const q = 'cell=60+70+80+90+90+90&lambda=1.5&N=7&default_F=50&distance=150&detpixels=256&misset=5+10+15&cmap=viridis&scaling=sqrt&backend=cpu';
    const { page } = await open(ctx, `${env.base}/?${q}`);
    await waitRendered(page, 1);
    const f = await page.evaluate(() => ({
      cell: document.getElementById('f-cell').value, lambda: document.getElementById('f-lambda').value,
      N: document.getElementById('f-N').value, misset: document.getElementById('f-misset').value,
      cmap: document.getElementById('cmap').value, scaling: document.getElementById('scaling').value,
      backend: document.getElementById('backend').value, w: window.nanobragg.lastRender().result.width,
    }));
    assert.deepEqual(f, { cell: '60 70 80 90 90 90', lambda: '1.5', N: '7', misset: '5 10 15', cmap: 'viridis', scaling: 'sqrt', backend: 'cpu', w: 256 });
    await page.fill('#f-distance', '175');
    await page.press('#f-distance', 'Enter');
    await waitRendered(page, 2);
    await page.waitForFunction(() => new URL(location.href).searchParams.get('distance') === '175');
    const u = new URL(page.url());
    assert.equal(u.searchParams.get('distance'), '175');
    assert.equal(u.searchParams.get('cell'), '60 70 80 90 90 90');
    // reload from the new URL: same state
    const { page: p2 } = await open(ctx, page.url());
    await waitRendered(p2, 1);
    assert.equal(await p2.evaluate(() => document.getElementById('f-distance').value), '175');
    assert.equal(await p2.evaluate(() => window.nanobragg.state().N), '7');
    await page.screenshot({ path: join(ARTIFACTS, 'app-url-viridis.png') });
  } finally {
    await ctx.close();
  }
});

test('HKL upload through the UI renders; a malformed HKL shows the error and keeps the image', { timeout: 180_000 }, async (t) => {
  const g = goldenDir();
  const hklPath = g && join(g, 'hkl_interpolate_explicit', 'input.hkl');
  assert.ok(hklPath && existsSync(hklPath), 'HKL fixture missing');
  const ctx = await launch({ webgpu: false });
  try {
    const { page } = await open(ctx, `${env.base}/?cell=50+50+50+90+90+90&N=5&default_F=10&lambda=1.5&distance=100&detpixels=256&pixel=0.1&backend=cpu`);
    await waitRendered(page, 1);
    await page.setInputFiles('#f-hkl-file', { name: 'input.hkl', mimeType: 'text/plain', buffer: readFileSync(hklPath) });
    await waitRendered(page, 2);
    await page.waitForFunction(() => new URL(location.href).searchParams.get('hkl') === 'input.hkl');
    const s1 = await page.evaluate(() => ({
      name: document.getElementById('f-hkl-name').textContent, url: new URL(location.href).searchParams.get('hkl'),
      args: window.nanobragg.lastRender().result.args.join(' '), err: document.getElementById('error').hidden,
    }));
    assert.equal(s1.name, 'input.hkl');
    assert.equal(s1.url, 'input.hkl');
    assert.match(s1.args, /-hkl input\.hkl/);
    assert.equal(s1.err, true, 'no error shown');
    await page.screenshot({ path: join(ARTIFACTS, 'app-hkl.png') });
    const before = await page.evaluate(() => window.nanobragg.lastRender().count);
    const sum = () => page.evaluate(() => window.nanobragg.lastRender().result.data.reduce((a, b) => a + b, 0));
    const snapshot = await sum();
    // malformed: a line that is not four numbers, first thing in the file
    await page.setInputFiles('#f-hkl-file', { name: 'bad.hkl', mimeType: 'text/plain', buffer: Buffer.from('1 2 three 4\nfoo\n') });
    await page.waitForFunction(() => !document.getElementById('f-hkl-msg').textContent === false, null, { timeout: 60_000 });
    const s2 = await page.evaluate(() => ({
      msg: document.getElementById('f-hkl-msg').textContent, banner: document.getElementById('error').textContent,
      count: window.nanobragg.lastRender().count, bad: document.querySelector('.field[data-key=hkl]').classList.contains('bad'),
    }));
    console.log('# malformed HKL:', JSON.stringify(s2));
    assert.ok(s2.msg.length > 0 && s2.bad, 'error next to the HKL input');
    assert.match(s2.msg, /bad\.hkl|hkl/i);
    assert.equal(s2.count, before, 'no new image');
    assert.equal(await sum(), snapshot, 'old image kept');
    assert.ok((await canvasSpread(page)) > 5, 'canvas still shows the image');
    await page.screenshot({ path: join(ARTIFACTS, 'app-bad-hkl.png') });
  } finally {
    await ctx.close();
  }
});

test('downloaded SMV image parses with the right header', { timeout: 180_000 }, async () => {
  const ctx = await launch({ webgpu: false });
  try {
    const { page } = await open(ctx, `${env.base}/?cell=100+100+100+90+90+90&lambda=6.2&N=5&default_F=100&distance=100&detpixels_f=200&detpixels_s=160&pixel=0.2&backend=cpu`);
    await waitRendered(page, 1);
    const stem = 'nanobragg_cell100-100-100-90-90-90_lambda6.2_N5_dist100_200x160';
    for (const [id, name] of [['#dl-int', `${stem}.img`], ['#dl-noise', `${stem}_noise.img`]]) {
      await page.click('.downloads > summary');
      const [dl] = await Promise.all([page.waitForEvent('download'), page.click(id)]);
      assert.equal(dl.suggestedFilename(), name);
      const buf = readFileSync(await dl.path());
      const head = buf.subarray(0, 512).toString('latin1');
      assert.ok(head.startsWith('{\n'), 'header starts with {');
      const kv = Object.fromEntries([...head.matchAll(/^([A-Z_0-9]+)=([^;\n]*);?$/gm)].map((m) => [m[1], m[2]]));
      assert.equal(kv.HEADER_BYTES, '512');
      assert.equal(kv.TYPE, 'unsigned_short');
      assert.equal(kv.BYTE_ORDER, 'little_endian');
      assert.equal(kv.SIZE1, '200');
      assert.equal(kv.SIZE2, '160');
      assert.equal(Number(kv.PIXEL_SIZE), 0.2);
      assert.equal(Number(kv.DISTANCE), 100);
      assert.equal(Number(kv.WAVELENGTH), 6.2);
      assert.equal(buf.length, 512 + 2 * 200 * 160);
    }
    await page.click('.downloads > summary');
    const [fl] = await Promise.all([page.waitForEvent('download'), page.click('#dl-float')]);
    assert.equal(fl.suggestedFilename(), `${stem}_float.bin`);
    assert.equal(readFileSync(await fl.path()).length, 4 * 200 * 160);
    await page.click('.downloads > summary');
    const [png] = await Promise.all([page.waitForEvent('download'), page.click('#dl-png')]);
    assert.equal(readFileSync(await png.path()).subarray(1, 4).toString(), 'PNG');
  } finally {
    await ctx.close();
  }
});

test('?embed=1 iframe mode shows the image with minimal controls', { timeout: 120_000 }, async () => {
  const ctx = await launch({ webgpu: false });
  try {
    const { page } = await open(ctx, `${env.base}/?embed=1&cell=100+100+100+90+90+90&lambda=6.2&N=5&default_F=100&detpixels=256&pixel=0.4&cmap=inferno`);
    await waitRendered(page, 1);
    assert.equal(await page.evaluate(() => getComputedStyle(document.getElementById('controls')).display), 'none');
    assert.ok((await canvasSpread(page)) > 5);
    await page.screenshot({ path: join(ARTIFACTS, 'app-embed-iframe-mode.png') });
    // the minimal controls the docs list (docs/embedding.md), not the measured image's bar: in a
    // phone-sized frame the image keeps most of the height
    await page.setViewportSize({ width: 390, height: 390 });
    await page.waitForFunction(() => document.getElementById('canvas-host').getBoundingClientRect().width <= 390);
    const r = await page.evaluate(() => ({
      mbar: document.querySelector('.mbar') && getComputedStyle(document.querySelector('.mbar')).display,
      host: document.getElementById('canvas-host').getBoundingClientRect().height,
      scrollH: document.documentElement.scrollHeight,
    }));
    assert.equal(r.mbar, 'none', 'no measured image bar in the frame');
    assert.ok(r.host >= 0.6 * 390 && r.scrollH <= 390, JSON.stringify(r));
  } finally {
    await ctx.close();
  }
});
