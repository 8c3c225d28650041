// The realistic image as the page's one image (www/src/layers.ts, www/src/realistic.ts,
// crate/src/wasm/realistic.rs): the one-click preset gives spots over a water/air background
// with noise; downloads, the URL, the 3D view and labels, the readout and Cancel all act on the
// still shown (issue 16 §1); the layer fields change the image without new structure factors,
// a bad model is an error naming file and line, and a geometry change reuses the
// structure-factor table. Screenshots at 1280×720 and 1920×1080 (tests/artifacts/realistic-*.png).
// `REALISTIC_BENCH=1` also times the structure factors in the browser's CPU path (docs/benchmarks.md).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { readFileSync, writeFileSync } from 'node:fs';
import { open, ARTIFACTS, setup } from './helpers.mjs';

const env = setup({ webgpu: false });

/** Realistic images shown so far. */
const shown = (page) => page.evaluate(() => Number(document.body.dataset.realistic ?? 0));
const waitShown = (page, n, timeout = 400_000) =>
  page.waitForFunction((n) => Number(document.body.dataset.realistic ?? 0) >= n, n, { timeout });
/** Statistics of the shown image: median, mean, max, pixels far above the median (spots),
 * and the median of pixels at least 8 pixels from any such pixel (background away from spots). */
function stats(page) {
  return page.evaluate(() => {
    const r = window.nanobraggRealistic;
    const { data, width: w, height: h } = r;
    const vals = [];
    for (let i = 0; i < data.length; i += 7) if (data[i] > 0) vals.push(data[i]);
    vals.sort((a, b) => a - b);
    const median = vals.length ? vals[vals.length >> 1] : 0;
    let sum = 0, max = 0, n = 0;
    for (const v of data) { sum += v; if (v > max) max = v; n++; }
    const thr = median + 10 * Math.sqrt(median + 1) + 20;
    const hot = new Uint8Array(w * h);
    let spots = 0;
    for (let i = 0; i < data.length; i++) if (data[i] > thr) { hot[i] = 1; spots++; }
    // background away from spots: sample a coarse grid, skip points near a hot pixel
    const away = [];
    for (let s = 8; s < h - 8; s += 16) for (let f = 8; f < w - 8; f += 16) {
      let near = false;
      for (let ds = -8; ds <= 8 && !near; ds += 2) for (let df = -8; df <= 8; df += 2) if (hot[(s + ds) * w + f + df]) { near = true; break; }
      if (!near) away.push(data[s * w + f]);
    }
    away.sort((a, b) => a - b);
    return { median, mean: sum / n, max, spots, awayMedian: away.length ? away[away.length >> 1] : 0, away: away.length, layers: r.layers, sf: r.sf, timings: r.timings };
  });
}

async function pressPreset(page, { announced = false } = {}) {
  const n = await shown(page);
  await page.click('#rl-preset');
  if (announced) {
    // a long render is announced before it runs (api::estimate_cost, scaled to the browser)
    await page.waitForFunction(() => /realistic image will take about/.test(document.getElementById('notice-text').textContent));
  }
  await waitShown(page, n + 1);
}

/** Change a form field (select, checkbox or text) and wait for the next image. */
async function change(page, id, value) {
  const n = await shown(page);
  const kind = await page.evaluate((id) => document.getElementById(id).type, id);
  if (kind === 'checkbox') await page.setChecked(`#${id}`, value);
  else if (kind.startsWith('select')) await page.selectOption(`#${id}`, value);
  else { await page.fill(`#${id}`, value); await page.press(`#${id}`, 'Enter'); }
  await waitShown(page, n + 1);
}

/** The `n` pixels of a miniCBF's byte-offset binary section (after its 0C 1A 04 D5 marker). */
function byteOffset(bytes, n) {
  let p = bytes.indexOf(Buffer.from([0x0c, 0x1a, 0x04, 0xd5])) + 4;
  const out = new Int32Array(n);
  let v = 0;
  for (let i = 0; i < n; i++) {
    let d = bytes.readInt8(p++);
    if (d === -128) {
      d = bytes.readInt16LE(p); p += 2;
      if (d === -32768) { d = bytes.readInt32LE(p); p += 4; }
    }
    v += d;
    out[i] = v;
  }
  return out;
}

/** SMV header fields of a download. */
function smvHeader(bytes) {
  const text = bytes.subarray(0, 4096).toString('latin1');
  const size = Number(/HEADER_BYTES=\s*(\d+)/.exec(text)[1]);
  const fields = Object.fromEntries([...bytes.subarray(0, size).toString('latin1').matchAll(/(\w+)=([^;]*);/g)].map((m) => [m[1], m[2].trim()]));
  return { size, fields };
}

test('the preset\'s still is the page\'s image: downloads, URL, 3D view, labels, readout and frame event follow it', { timeout: 900_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu`, { viewport: { width: 1280, height: 720 } });
  await page.evaluate(() => { window.frames_ = []; window.addEventListener('nanobragg-frame', (e) => window.frames_.push(e.detail)); });
  await pressPreset(page, { announced: true });
  const noisy = await stats(page);
  console.log('realistic preset:', JSON.stringify({ ...noisy, layers: undefined }));
  assert.equal(noisy.sf.computations, 1);
  assert.ok(noisy.awayMedian >= 1, `background away from spots: median ${noisy.awayMedian} ADU`);
  assert.ok(noisy.spots > 50, `only ${noisy.spots} spot pixels`);
  assert.ok(noisy.max > 20 * noisy.median, `max ${noisy.max} vs median ${noisy.median}`);
  assert.match(await page.textContent('#rl-status'), /structure factors computed/);
  assert.ok(await page.isHidden('#notice'), 'the announcement goes once the image is shown');
  assert.match(await page.textContent('#timing'), /2068×2162 realistic/);
  await page.screenshot({ path: join(ARTIFACTS, 'realistic-still-1280.png') });
  // the fitted still is drawn from the block maxima the worker sent with it (the crate's
  // `realistic_block_maxima`): each the largest pixel of its block, as a pass over the image
  // here finds it, to the bit
  const blocks = await page.evaluate(() => {
    const { data, maxima, width: w, height: h } = window.nanobraggRealistic;
    const drawn = window.nanobragg.view.drawnFrom;
    if (!maxima) return { drawn, maxima: null };
    const b = maxima.block, pw = Math.ceil(w / b), ph = Math.ceil(h / b);
    const want = new Float32Array(pw * ph).fill(-Infinity);
    for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) {
      const i = ((y / b) | 0) * pw + ((x / b) | 0);
      if (data[y * w + x] > want[i]) want[i] = data[y * w + x];
    }
    let differ = maxima.data.length === want.length ? 0 : -1;
    for (let i = 0; differ >= 0 && i < want.length; i++) if (!Object.is(want[i], maxima.data[i])) differ++;
    return { drawn, maxima: { block: b, length: maxima.data.length, differ } };
  });
  console.log('block maxima:', JSON.stringify(blocks));
  assert.ok(blocks.maxima && blocks.maxima.block >= 2, JSON.stringify(blocks));
  assert.equal(blocks.maxima.differ, 0, JSON.stringify(blocks));
  assert.deepEqual(blocks.drawn, { block: blocks.maxima.block, given: true });
  // the spots stand out of the noise, at fit and zoomed in: the preset's square-root scale, black
  // at the background's median, its top (99.9th percentile) in the lightest tenth of the range,
  // most spot pixels in the darker half of the grey scale
  assert.equal(await page.inputValue('#scaling'), 'sqrt');
  const lv = await page.evaluate(() => {
    const [lo, hi] = window.nanobragg.view.imageSize.levels;
    const v = Array.from(window.nanobraggRealistic.data).filter((x) => x >= 0).sort((a, b) => a - b);
    const top = v[Math.floor(0.999 * v.length)];
    const spots = v.filter((x) => x > 300);
    return { lo, hi, top, median: v[v.length >> 1], spots: spots.length, dark: spots.filter((x) => Math.sqrt((x - lo) / (hi - lo)) >= 0.5).length };
  });
  console.log('levels over the background:', JSON.stringify(lv));
  assert.ok(Math.abs(lv.lo - lv.median) <= 2, `black at the median: ${JSON.stringify(lv)}`);
  assert.ok((lv.top - lv.lo) / (lv.hi - lv.lo) <= 0.12, `the noise stays light: ${JSON.stringify(lv)}`);
  assert.ok(lv.spots > 20 && lv.dark >= 0.5 * lv.spots, `the spots are dark: ${JSON.stringify(lv)}`);
  // the preset's note and the section sit at the top of the panel, in view at 1280×720
  const top = await page.evaluate(() => ({ note: document.getElementById('preset-note').getBoundingClientRect().top, hidden: document.getElementById('preset-note').hidden }));
  assert.ok(!top.hidden && top.note < 300, `preset note at ${top.note} px`);

  // the nanobragg-frame event tells of the still
  const frames = await page.evaluate(() => window.frames_);
  assert.ok(frames.some((f) => f.width === 2068 && f.height === 2162 && f.realistic && f.unit === 'ADU'), JSON.stringify(frames));

  // the readout speaks of ADU
  const box = await page.locator('#canvas-host > .nb-canvas').boundingBox();
  await page.mouse.move(box.x + box.width * 0.6, box.y + box.height * 0.6);
  await page.waitForFunction(() => /I = /.test(document.getElementById('readout').textContent));
  assert.match(await page.textContent('#readout'), /ADU/);
  assert.doesNotMatch(await page.textContent('#readout'), /photons/);

  // downloads: the detector's pixels and header, the ADU shown; the still stays on screen
  const rendered = await page.evaluate(() => document.body.dataset.rendered);
  const shownData = await page.evaluate(() => Array.from(window.nanobraggRealistic.data.subarray(0, 2068 * 50)));
  const dl = async (id) => {
    await page.click('.downloads summary');
    const [d] = await Promise.all([page.waitForEvent('download'), page.click(`#${id}`)]);
    return { name: d.suggestedFilename(), bytes: readFileSync(await d.path()) };
  };
  // the still has its noise: one SMV entry that says so (a second saved the same bytes), with the
  // pixels it clips counted; the detector's own format next to it
  await page.click('.downloads summary');
  const menu = await page.evaluate(() => Object.fromEntries(['dl-int', 'dl-noise', 'dl-cbf'].map((id) => {
    const b = document.getElementById(id);
    return [id, { hidden: b.hidden || !b.offsetParent, text: b.textContent }];
  })));
  await page.click('.downloads summary');
  const over16 = await page.evaluate(() => Array.from(window.nanobraggRealistic.data).filter((x) => x > 65535.5).length);
  console.log(`# download menu: ${JSON.stringify(menu)}; ${over16} pixels above 65,535`);
  assert.equal(menu['dl-noise'].hidden, true, 'no second SMV entry for the same bytes');
  assert.match(menu['dl-int'].text, /noise included/);
  assert.match(menu['dl-int'].text, over16 ? new RegExp(`${over16.toLocaleString('en-US')} pixels? above 65,535 clipped`) : /up to 65,535/);
  assert.ok(!menu['dl-cbf'].hidden && /miniCBF/.test(menu['dl-cbf'].text), JSON.stringify(menu));
  for (const id of ['dl-int']) {
    const { name, bytes } = await dl(id);
    const { size, fields } = smvHeader(bytes);
    assert.equal(fields.SIZE1, '2068', `${id} ${name}: SIZE1`);
    assert.equal(fields.SIZE2, '2162', `${id}: SIZE2`);
    assert.equal(Number(fields.PIXEL_SIZE), 0.075, `${id}: PIXEL_SIZE`);
    assert.equal(Number(fields.DISTANCE), 120, `${id}: DISTANCE`);
    assert.equal(Number(fields.WAVELENGTH), 1, `${id}: WAVELENGTH`);
    assert.equal(bytes.length, size + 2068 * 2162 * 2, `${id}: size`);
    // the noise shown: the pixels are the ADU on screen (the noise layer is on)
    const px = new Uint16Array(bytes.buffer.slice(bytes.byteOffset + size, bytes.byteOffset + size + 2068 * 50 * 2));
    let same = 0;
    for (let i = 0; i < px.length; i++) if (px[i] === Math.min(65535, Math.round(shownData[i]))) same++;
    assert.equal(same, px.length, `${id}: pixels equal the image shown`);
  }
  // the miniCBF: every pixel's ADU (not clipped at 65,535), the module gaps −1, the EIGER's header;
  // kept as tests/artifacts/realistic-still.cbf for scripts/check_cbf.py's reader (fabio)
  const cbf = await dl('dl-cbf');
  assert.match(cbf.name, /_2068x2162\.cbf$/);
  writeFileSync(join(ARTIFACTS, 'realistic-still.cbf'), cbf.bytes);
  const cbfText = cbf.bytes.subarray(0, 4096).toString('latin1');
  assert.match(cbfText, /Detector: .*DECTRIS EIGER2 X 4M/);
  assert.match(cbfText, /# Pixel_size 75e-6 m x 75e-6 m/);
  assert.match(cbfText, /# Wavelength 1.000000 A/);
  const cpx = byteOffset(cbf.bytes, 2068 * 2162);
  const gaps = cpx.filter((v) => v === -1).length;
  // 2 × 4 modules of 1028 × 512 pixels on 2068 × 2162
  assert.equal(gaps, 2068 * 2162 - 8 * 1028 * 512, 'the module gaps are −1');
  assert.match(cbfText, new RegExp(`N_excluded_pixels = ${gaps}`));
  let agree = 0, checked = 0;
  for (let i = 0; i < shownData.length; i++) {
    if (cpx[i] === -1) continue;
    checked++;
    if (cpx[i] === Math.round(shownData[i])) agree++;
  }
  assert.ok(checked > 0.9 * shownData.length && agree === checked, `the miniCBF holds the ADU shown: ${agree} of ${checked}`);
  const cbfTop = cpx.reduce((a, b) => (b > a ? b : a), 0);
  if (over16) assert.ok(cbfTop > 65535, `the miniCBF keeps counts above 65,535 (${cbfTop})`);
  const fl = await dl('dl-float');
  assert.equal(fl.bytes.length, 2068 * 2162 * 4);
  assert.equal(new Float32Array(fl.bytes.buffer.slice(fl.bytes.byteOffset, fl.bytes.byteOffset + 400))[7], shownData[7]);
  const png = await dl('dl-png');
  assert.ok(png.bytes.subarray(1, 4).toString() === 'PNG');
  await page.waitForTimeout(500);
  assert.equal(await page.evaluate(() => document.body.dataset.rendered), rendered, 'no render after the downloads');
  assert.match(await page.textContent('#timing'), /2068×2162 realistic/, 'the still stays on screen');
  assert.equal(await page.evaluate(() => window.nanobragg.lastRender().result.width), 2068);

  // the 3D view and the labels predict the shown crystal: the model's cell on the EIGER
  await page.check('#labels');
  await page.waitForFunction(() => window.nanobragg.teach3d.feed?.current, null, { timeout: 120_000 });
  const pred = await page.evaluate(() => {
    const t = window.nanobragg.teach3d;
    const args = t.last.args;
    const r = t.feed.current.data.reflections;
    let maxFast = 0;
    for (let i = 0; i < r.count; i++) if (r.fast && r.onDetector?.[i] !== 0 && r.fast[i] > maxFast) maxFast = r.fast[i];
    return { args, maxFast, cell: window.nanobraggRealistic.model.pdb };
  });
  const cellAt = pred.args.indexOf('-cell');
  assert.ok(cellAt >= 0 && pred.args.includes('-detector') && pred.args[pred.args.indexOf('-detector') + 1] === 'eiger2-4m', pred.args.join(' '));
  assert.deepEqual(pred.args.slice(-2), ['-pdb', '1pfe.cif'], 'predicts the model the chain read (its structure factors)');
  assert.ok(pred.maxFast > 1000, `labels lie across the 2068-pixel detector (largest fast ${pred.maxFast})`);
  // the labelled spots are the bright ones of the image: the prediction has the model's F
  const lit = await page.evaluate(() => {
    const t = window.nanobragg.teach3d;
    const r = t.feed.current.data.reflections;
    const { data, width: w, height: h } = window.nanobraggRealistic;
    const peak = (i) => {
      const f = Math.floor(r.fast[i]), s = Math.floor(r.slow[i]);
      let m = 0;
      for (let dy = -2; dy <= 2; dy++) for (let dx = -2; dx <= 2; dx++) {
        const x = f + dx, y = s + dy;
        if (x >= 0 && y >= 0 && x < w && y < h) m = Math.max(m, data[y * w + x]);
      }
      return m;
    };
    const vals = t.spots.spots.slice(0, 24).map(peak).sort((a, b) => a - b);
    return { median: vals[vals.length >> 1], n: vals.length };
  });
  console.log('labelled spots: median peak', JSON.stringify(lit), 'background', noisy.awayMedian);
  assert.ok(lit.n >= 10 && lit.median > 4 * noisy.awayMedian, `labelled spots are bright: ${JSON.stringify(lit)} vs background ${noisy.awayMedian}`);
  await page.screenshot({ path: join(ARTIFACTS, 'realistic-labels-1280.png') });

  // the URL holds the still's settings: a reload shows the same image
  const url = await page.evaluate(() => { return location.href; });
  assert.match(url, /pdb=1pfe\.cif/);
  assert.match(url, /detector=eiger2-4m/);
  const first = await page.evaluate(() => { const d = window.nanobraggRealistic.data; let h = 0; for (let i = 0; i < d.length; i += 3) h = (h * 31 + d[i]) % 1e9; return h; });
  const { page: again } = await open(env.ctx, url);
  await waitShown(again, 1);
  const second = await again.evaluate(() => { const d = window.nanobraggRealistic.data; let h = 0; for (let i = 0; i < d.length; i += 3) h = (h * 31 + d[i]) % 1e9; return h; });
  assert.equal(second, first, 'the link reproduces the still');
  await again.close();

  // noise off: the noiseless detector image (same mean, different pixels, smoother background),
  // without new structure factors
  const before = await page.evaluate(() => window.nanobraggRealistic.data.slice());
  await change(page, 'f-detnoise', false);
  const clean = await stats(page);
  const diff = await page.evaluate((before) => {
    const d = window.nanobraggRealistic.data;
    let differ = 0, roughA = 0, roughB = 0;
    for (let i = 0; i < d.length; i++) if (d[i] !== before[i]) differ++;
    for (let i = 1; i < d.length; i += 3) { roughA += Math.abs(before[i] - before[i - 1]); roughB += Math.abs(d[i] - d[i - 1]); }
    return { differ: differ / d.length, roughNoisy: roughA, roughClean: roughB };
  }, before);
  assert.ok(diff.differ > 0.3, `noise changes ${diff.differ} of the pixels`);
  assert.ok(diff.roughClean < 0.7 * diff.roughNoisy, `noise makes the image rougher: ${JSON.stringify(diff)}`);
  assert.ok(Math.abs(clean.mean / noisy.mean - 1) < 0.1, `means ${clean.mean} and ${noisy.mean}`);
  await change(page, 'f-show', 'spots');
  const spotsOnly = await stats(page);
  assert.ok(spotsOnly.awayMedian < 0.5, `spots only: background ${spotsOnly.awayMedian}`);
  await change(page, 'f-show', 'background');
  const bgOnly = await stats(page);
  assert.ok(bgOnly.max < noisy.max / 5, `background only: max ${bgOnly.max} vs ${noisy.max}`);
  await change(page, 'f-show', '');
  assert.equal((await stats(page)).sf.computations, 1, 'the layer fields never computed structure factors again');

  await page.setViewportSize({ width: 1920, height: 1080 });
  await page.waitForTimeout(500);
  await page.screenshot({ path: join(ARTIFACTS, 'realistic-still-1920.png') });
  await page.mouse.move(box.x + box.width * 0.62, box.y + box.height * 0.62);
  for (let i = 0; i < 6; i++) await page.mouse.wheel(0, -240);
  await page.waitForTimeout(300);
  await page.screenshot({ path: join(ARTIFACTS, 'realistic-still-zoom-1920.png') });
  assert.deepEqual(errors, []);
});

test('Cancel is enabled during a realistic render and stops it within 100 ms; stage names are honest', { timeout: 600_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu`);
  await page.waitForFunction(() => document.getElementById('backend-label')?.dataset.threads);
  await page.click('#rl-preset');
  await page.waitForFunction(() => /spots/.test(document.getElementById('timing').textContent), null, { timeout: 300_000 });
  assert.match(await page.textContent('#timing'), /^spots… \(step \d of 5\)/);
  assert.equal(await page.isEnabled('#cancel'), true, 'Cancel is enabled while the still renders');
  const ms = await page.evaluate(() => new Promise((res) => {
    const t0 = performance.now();
    new MutationObserver(() => res(performance.now() - t0)).observe(document.body, { attributeFilter: ['data-cancelled'] });
    document.getElementById('cancel').click();
  }));
  console.log(`realistic cancel: ${ms.toFixed(1)} ms`);
  assert.ok(ms < 100, `stopped after ${ms} ms`);
  assert.equal(await page.textContent('#timing'), 'cancelled');
  // the worker is free at once: a teaching preset renders next
  const n = await page.evaluate(() => Number(document.body.dataset.rendered ?? 0));
  const t0 = Date.now();
  await page.selectOption('#preset', 'cubic');
  await page.waitForFunction((n) => Number(document.body.dataset.rendered ?? 0) > n, n, { timeout: 60_000 });
  console.log(`cancel to next image: ${Date.now() - t0} ms`);
  assert.match(await page.textContent('#timing'), /^512×512/);
  assert.deepEqual(errors, []);
});

test('switching the layers off during a realistic render: the status says what came of it (no stale stage), and gain 1 is no layer', { timeout: 600_000 }, async () => {
  const { page } = await open(env.ctx, `${env.base}/?backend=cpu`);
  await page.waitForFunction(() => document.getElementById('backend-label')?.dataset.threads);
  await page.click('#rl-preset');
  await page.waitForFunction(() => /spots/.test(document.getElementById('timing').textContent), null, { timeout: 300_000 });
  // as a user would: the model to the form's, no air, no detector noise (gain stays 1)
  await page.selectOption('#rl-model', '');
  await page.fill('#f-air', '0');
  await page.press('#f-air', 'Enter');
  await page.uncheck('#f-detnoise');
  // the preset's crystal came from the model: the plain render says what is missing, and the
  // status line no longer shows the stage of the render it replaced
  await page.waitForFunction(() => !/step \d of \d/.test(document.getElementById('timing').textContent), null, { timeout: 120_000 });
  assert.equal(await page.textContent('#timing'), 'not rendered: see the message above');
  assert.match(await page.textContent('#error'), /no crystal: give -cell/);
  assert.equal(await page.isDisabled('#cancel'), true, 'nothing runs');
  // a crystal for the form: the plain render follows, with gain = 1 still in the form
  const n = await page.evaluate(() => Number(document.body.dataset.rendered ?? 0));
  await page.fill('#f-cell', '79 79 38 90 90 90');
  await page.press('#f-cell', 'Enter');
  await page.fill('#f-default_F', '100');
  await page.press('#f-default_F', 'Enter');
  await page.waitForFunction((n) => Number(document.body.dataset.rendered ?? 0) > n, n, { timeout: 120_000 });
  assert.equal((await page.evaluate(() => window.nanobragg.state())).gain, '1');
  assert.match(await page.textContent('#timing'), /^\d+×\d+ · /, 'a plain render (no realistic stages)');
});

test('the detector presets come from the crate, with the effects of their kind', { timeout: 120_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu`);
  await page.waitForFunction(() => document.getElementById('backend-label')?.dataset.threads);
  const label = await page.evaluate(() => document.querySelector('#f-detector option[value=mx300]').textContent);
  assert.match(label, /4096×4096/);
  assert.match(label, /73\.24 µm/);
  // with the layers on, a CCD brings its read-out noise and PSF
  // the still's settings on a small square detector (a quick render)
  await page.goto(`${env.base}/?backend=cpu&preset=protein-still&detpixels=64&detector=`);
  await page.waitForFunction(() => document.getElementById('backend-label')?.dataset.threads);
  await page.selectOption('#f-detector', 'mx300');
  await page.waitForFunction(() => document.getElementById('f-readout').value === '3');
  assert.equal(await page.inputValue('#f-psf'), '46');
  await page.selectOption('#f-detector', 'eiger2-4m');
  await page.waitForFunction(() => document.getElementById('f-readout').value === '0');
  assert.equal(await page.inputValue('#f-psf'), '0');
  // only one distance, one wavelength and one beam size on the page
  for (const label of ['Distance', 'Wavelength', 'Beam size']) {
    const n = await page.evaluate((l) => [...document.querySelectorAll('label')].filter((x) => new RegExp(`^${l}( \\(|$)`).test(x.textContent.trim())).length, label);
    assert.equal(n, 1, `${label}: ${n} fields`);
  }
  assert.deepEqual(errors.filter((e) => !/cancel/i.test(e)), []);
});

test('a geometry change reuses the structure factors', { timeout: 900_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu`);
  await pressPreset(page);
  assert.equal(await page.getAttribute('#realistic', 'data-sf-computations'), '1');
  // farther detector: a lower resolution, inside the table
  await change(page, 'f-distance', '200');
  assert.equal(await page.getAttribute('#realistic', 'data-sf-computations'), '1', 'no second computation');
  assert.equal(await page.getAttribute('#realistic', 'data-sf'), 'cached');
  assert.match(await page.textContent('#rl-status'), /structure factors cached/);
  // a closer detector reaches a finer resolution: computed again, once
  await change(page, 'f-distance', '80');
  assert.equal(await page.getAttribute('#realistic', 'data-sf-computations'), '2');
  assert.match(await page.textContent('#rl-status'), /structure factors computed/);
  assert.deepEqual(errors, []);
});

test('Shift+drag on the still turns the shown crystal and renders the still again (not the teaching crystal)', { timeout: 600_000 }, async () => {
  // the still's model and layers on a small square detector: a quick realistic render
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&preset=protein-still&detector=&detpixels=128&pixel=0.6`);
  await waitShown(page, 1);
  const before = await page.evaluate(() => ({ data: window.nanobraggRealistic.data.slice(), misset: window.nanobragg.state().misset }));
  assert.equal(before.misset, 'random');
  const box = await page.locator('#canvas-host > .nb-canvas').boundingBox();
  const x = box.x + box.width / 2, y = box.y + box.height / 2;
  await page.keyboard.down('Shift');
  await page.mouse.move(x, y);
  await page.mouse.down();
  await page.mouse.move(x + 60, y - 30, { steps: 12 });
  await page.mouse.up();
  await page.keyboard.up('Shift');
  // the random orientation was taken over (the crate's angles), then turned; a new still follows
  await page.waitForFunction(() => /^-?[\d.]+ -?[\d.]+ -?[\d.]+$/.test(window.nanobragg.state().misset ?? ''), null, { timeout: 60_000 });
  // the still of the final orientation (the take-over and the drag each render one)
  await page.waitForFunction(() => !window.nanobragg.client.realisticBusy && window.nanobraggRealistic.model.misset === window.nanobragg.state().misset
    && window.nanobragg.state().misset !== 'random', null, { timeout: 300_000 });
  const after = await page.evaluate(() => ({ w: window.nanobraggRealistic.width, timing: document.getElementById('timing').textContent, misset: window.nanobragg.state().misset, url: location.href }));
  assert.equal(after.w, 128);
  assert.match(after.timing, /128×128 realistic/, 'the still is shown again, not the teaching crystal');
  assert.match(after.url, /pdb=1pfe\.cif/);
  const changed = await page.evaluate((b) => { const d = window.nanobraggRealistic.data; let n = 0; for (let i = 0; i < d.length; i++) if (d[i] !== b[i]) n++; return n / d.length; }, before.data);
  // the spots moved; the noise of a pixel is a pure function of the seed and the pixel (the
  // counter generator, docs/realistic.md) and the water and air did not change, so only the
  // pixels whose photons changed differ (with upstream's sequential generator every pixel did)
  assert.ok(changed > 0.01 && changed < 0.5, `the still changed where the spots did (${changed} of the pixels)`);
  assert.deepEqual(errors, []);
});

/** A P1 model of `n` atoms at pseudo-random positions in a cubic cell of `a` Å. */
function bigModel(n, a) {
  let seed = 7;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  const f = (v, w, d) => v.toFixed(d).padStart(w);
  const lines = [`CRYST1${f(a, 9, 3)}${f(a, 9, 3)}${f(a, 9, 3)}${f(90, 7, 2)}${f(90, 7, 2)}${f(90, 7, 2)} P 1           1`];
  for (let i = 0; i < n; i++) {
    const el = ['C', 'N', 'O', 'C'][i % 4];
    lines.push(`ATOM  ${String((i % 99999) + 1).padStart(5)}  ${el.padEnd(3)} ALA A${String((i >> 3) % 9999 + 1).padStart(4)}    ` +
      `${f(rnd() * a, 8, 3)}${f(rnd() * a, 8, 3)}${f(rnd() * a, 8, 3)}  1.00 20.00          ${el.padStart(2)}`);
  }
  return lines.join('\n') + '\nEND\n';
}

// the still's layers on a small square detector with the form's crystal (no model yet)
const SMALL = 'preset=protein-still&pdb=&detpixels=64&detector=&cell=100+100+100+90+90+90&default_F=10';

test('structure factors: an honest stage name, and Cancel stops them', { timeout: 600_000 }, async () => {
  // large pixels: the detector reaches about 1.5 Å, so that the big model's table takes long
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&${SMALL}&pixel=2.5`);
  await page.waitForFunction(() => document.getElementById('backend-label')?.dataset.threads);
  await page.setInputFiles('#rl-file', { name: 'big.pdb', mimeType: 'chemical/x-pdb', buffer: Buffer.from(bigModel(30000, 100)) });
  await page.waitForFunction(() => document.getElementById('realistic').dataset.sf === 'computing', null, { timeout: 120_000 });
  assert.match(await page.textContent('#rl-status'), /computing structure factors/);
  assert.match(await page.textContent('#timing'), /computing structure factors… \(step 2 of 5\)/);
  assert.equal(await page.isEnabled('#cancel'), true);
  const t0 = Date.now();
  await page.click('#cancel');
  await page.waitForFunction(() => document.getElementById('rl-status').textContent === 'cancelled');
  // the worker is free again at once: the bundled model renders next
  await page.selectOption('#rl-model', '1pfe.cif');
  await waitShown(page, 1);
  console.log(`cancel to next image: ${Date.now() - t0} ms`);
  assert.ok((await stats(page)).spots > 50);
  assert.deepEqual(errors, []);
});

test('bad models: errors name the file and the line', { timeout: 300_000 }, async () => {
  const { page } = await open(env.ctx, `${env.base}/?backend=cpu&${SMALL}`);
  await page.waitForFunction(() => document.getElementById('backend-label')?.dataset.threads);
  const cases = [
    ['unknown.pdb', 'CRYST1   20.000   25.000   30.000  90.00  90.00  90.00 P 1           1\n' +
      'ATOM      1  N   GLY A   1       1.000   2.000   3.000  1.00 10.00           N\n' +
      'ATOM      2  QQ  GLY A   1       2.000   2.500   3.500  1.00 12.00          QQ\n', /unknown\.pdb.*line 3.*QQ|unknown\.pdb.*QQ.*line 3/],
    ['nocryst.pdb', 'ATOM      1  N   GLY A   1       1.000   2.000   3.000  1.00 10.00           N\n', /nocryst\.pdb.*CRYST1|nocryst\.pdb.*cell/i],
    ['short.pdb', 'CRYST1   20.000   25.000   30.000  90.00  90.00  90.00 P 1           1\nATOM      1  N   GLY A   1       1.000   2.0\n', /short\.pdb.*line 2/],
  ];
  for (const [name, text, re] of cases) {
    await page.setInputFiles('#rl-file', { name, mimeType: 'text/plain', buffer: Buffer.from(text) });
    // a model opened in the section and refused: the section's status line says why (the
    // model before it stays chosen); "reading NAME…" comes first and names it too
    await page.waitForFunction((name) => (document.getElementById('rl-status').textContent ?? '').includes(`${name} was not used`), name, { timeout: 60_000 });
    const msg = await page.textContent('#rl-status');
    console.log(`${name}: ${msg}`);
    assert.match(msg, re);
    assert.doesNotMatch(msg, /panic|unreachable/i);
  }
  await page.screenshot({ path: join(ARTIFACTS, 'realistic-bad-model.png') });
  // the page still works: the bundled model renders
  await page.selectOption('#rl-model', '1pfe.cif');
  await waitShown(page, 1);
});

test('structure-factor timing in the browser (REALISTIC_BENCH=1)', { timeout: 600_000, skip: !process.env.REALISTIC_BENCH }, async () => {
  const { page } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=64`);
  await page.waitForFunction(() => document.getElementById('backend-label')?.dataset.threads);
  const bundled = await (await fetch(`${env.base}/samples/1pfe.cif`)).text();
  // ~1000 atoms in lysozyme's cell and space group (as crate/tests/sf_bench.rs)
  const lines = ['CRYST1   79.100   79.100   37.900  90.00  90.00  90.00 P 43 21 2     8'];
  let seed = 12345;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  for (let i = 0; i < 1000; i++) {
    const el = ['C', 'C', 'C', 'N', 'O'][i % 5];
    const x = (rnd() * 79.1).toFixed(3).padStart(8), y = (rnd() * 79.1).toFixed(3).padStart(8), z = (rnd() * 37.9).toFixed(3).padStart(8);
    lines.push(`ATOM  ${String(i + 1).padStart(5)}  ${el.padEnd(3)} ALA A${String((i >> 3) + 1).padStart(4)}    ${x}${y}${z}  1.00 20.00          ${el.padStart(2)}`);
  }
  const lyso = lines.join('\n') + '\nEND\n';
  const out = await page.evaluate(async ({ bundled, lyso }) => {
    const src = `
      const m = await import(${JSON.stringify(new URL('pkg-parallel/nanobragg.js', location.href).href)});
      await m.default({ module_or_path: ${JSON.stringify(new URL('pkg-parallel/nanobragg_bg.wasm', location.href).href)} });
      await m.initThreadPool(2);
      onmessage = (e) => {
        const enc = new TextEncoder();
        const r = {};
        for (const [name, text, d] of e.data) {
          const t = [];
          for (let i = 0; i < 3; i++) t.push(m.realistic_sf_benchmark(name, enc.encode(text), d));
          r[name + ' ' + d] = Math.min(...t);
        }
        postMessage(r);
      };
      postMessage('ready');`;
    const w = new Worker(URL.createObjectURL(new Blob([src], { type: 'text/javascript' })), { type: 'module' });
    await new Promise((res) => (w.onmessage = () => res()));
    return new Promise((res) => {
      w.onmessage = (e) => res(e.data);
      w.postMessage([['1pfe.cif', bundled, 1.5], ['1pfe.cif', bundled, 1.2], ['lyso1000.pdb', lyso, 1.5]]);
    });
  }, { bundled, lyso });
  console.log('structure factors in the browser (ms, best of 3, 2 threads):', JSON.stringify(out));
  const { page: p2 } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=64`);
  await pressPreset(p2);
  const s = await stats(p2);
  console.log('realistic preset timings (ms):', JSON.stringify(s.timings));
});
