// The "Realistic image" section (www/src/realistic.ts, crate/src/wasm/realistic.rs): the
// one-click preset gives spots over a water/air background with noise, the layer toggles change
// the image, structure factors show progress and can be cancelled, a bad model is an error
// naming file and line, and a geometry change reuses the structure-factor table. Screenshots at
// 1280×720 and 1920×1080 (tests/artifacts/realistic-*.png). `REALISTIC_BENCH=1` also times the
// structure factors in the browser's CPU path (docs/benchmarks.md).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { open, ARTIFACTS, setup } from './helpers.mjs';

const env = setup({ webgpu: false });

/** Realistic images shown so far. */
const shown = (page) => page.evaluate(() => Number(document.body.dataset.realistic ?? 0));
const waitShown = (page, n, timeout = 300_000) =>
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

async function toggle(page, id, on) {
  const n = await shown(page);
  await page.setChecked(`#${id}`, on);
  await waitShown(page, n + 1);
}

test('one-click preset: spots over water and air, noise, and layer toggles', { timeout: 600_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=64`, { viewport: { width: 1280, height: 720 } });
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

  // noise off: the noiseless detector image (same mean, different pixels, smoother background)
  const before = await page.evaluate(() => window.nanobraggRealistic.data.slice());
  await toggle(page, 'rl-noise', false);
  const clean = await stats(page);
  const diff = await page.evaluate((before) => {
    const d = window.nanobraggRealistic.data;
    let differ = 0, roughA = 0, roughB = 0;
    for (let i = 0; i < d.length; i++) if (d[i] !== before[i]) differ++;
    // pixel-to-pixel roughness along rows in the background
    for (let i = 1; i < d.length; i += 3) { roughA += Math.abs(before[i] - before[i - 1]); roughB += Math.abs(d[i] - d[i - 1]); }
    return { differ: differ / d.length, roughNoisy: roughA, roughClean: roughB };
  }, before);
  assert.ok(diff.differ > 0.3, `noise changes ${diff.differ} of the pixels`);
  assert.ok(diff.roughClean < 0.7 * diff.roughNoisy, `noise makes the image rougher: ${JSON.stringify(diff)}`);
  assert.ok(Math.abs(clean.mean / noisy.mean - 1) < 0.1, `means ${clean.mean} and ${noisy.mean}`);

  // background off: away from the spots the noiseless image is empty
  await toggle(page, 'rl-bg', false);
  const spotsOnly = await stats(page);
  assert.ok(spotsOnly.awayMedian < 0.5, `spots only: background ${spotsOnly.awayMedian}`);
  assert.ok(spotsOnly.max > 0);
  // spots off, background on: no spots left
  await toggle(page, 'rl-bg', true);
  await toggle(page, 'rl-spots', false);
  const bgOnly = await stats(page);
  assert.ok(bgOnly.max < noisy.max / 5, `background only: max ${bgOnly.max} vs ${noisy.max}`);
  assert.ok(bgOnly.awayMedian >= 1);
  await toggle(page, 'rl-spots', true);
  await toggle(page, 'rl-noise', true);
  // the layer toggles never computed structure factors again
  assert.equal((await stats(page)).sf.computations, 1);

  await page.setViewportSize({ width: 1920, height: 1080 });
  await page.waitForTimeout(500);
  await page.screenshot({ path: join(ARTIFACTS, 'realistic-still-1920.png') });
  // zoomed in on the water ring, as one inspects a still: spots over the ring and noise
  const box = await page.locator('.nb-canvas').boundingBox();
  await page.mouse.move(box.x + box.width * 0.62, box.y + box.height * 0.62);
  for (let i = 0; i < 6; i++) await page.mouse.wheel(0, -240);
  await page.waitForTimeout(300);
  await page.screenshot({ path: join(ARTIFACTS, 'realistic-still-zoom-1920.png') });
  assert.deepEqual(errors, []);
});

test('a geometry change reuses the structure factors', { timeout: 600_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=64`);
  await pressPreset(page);
  assert.equal(await page.getAttribute('#realistic', 'data-sf-computations'), '1');
  // farther detector: a lower resolution, inside the table
  const n = await shown(page);
  await page.fill('#rl-distance', '200');
  await page.press('#rl-distance', 'Enter');
  await waitShown(page, n + 1);
  assert.equal(await page.getAttribute('#realistic', 'data-sf-computations'), '1', 'no second computation');
  assert.equal(await page.getAttribute('#realistic', 'data-sf'), 'cached');
  assert.match(await page.textContent('#rl-status'), /structure factors cached/);
  // a closer detector reaches a finer resolution: computed again, once (the table depends only
  // on the model and the resolution, so crystal or beam changes keep it: SfCache unit tests in
  // crate/src/realistic.rs)
  await page.fill('#rl-distance', '80');
  await page.press('#rl-distance', 'Enter');
  await waitShown(page, n + 2);
  assert.equal(await page.getAttribute('#realistic', 'data-sf-computations'), '2');
  assert.match(await page.textContent('#rl-status'), /structure factors computed/);
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

test('structure factors show progress and cancel stops them', { timeout: 600_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=64`);
  await page.waitForFunction(() => document.getElementById('backend-label')?.dataset.threads);
  await page.setInputFiles('#rl-file', { name: 'big.pdb', mimeType: 'chemical/x-pdb', buffer: Buffer.from(bigModel(30000, 100)) });
  await page.waitForFunction(() => document.getElementById('realistic').dataset.sf === 'computing', null, { timeout: 120_000 });
  assert.match(await page.textContent('#rl-status'), /computing structure factors/);
  await page.waitForFunction(() => document.getElementById('rl-progress').value > 0.01, null, { timeout: 120_000 });
  const p = await page.evaluate(() => document.getElementById('rl-progress').value);
  assert.ok(p > 0 && p < 1, `progress ${p}`);
  const t0 = Date.now();
  await page.click('#rl-cancel');
  await page.waitForFunction(() => document.getElementById('realistic').dataset.state === 'cancelled');
  assert.match(await page.textContent('#rl-status'), /structure factors cancelled/);
  // the worker is free again at once: the bundled model renders next
  await page.selectOption('#rl-model', 'bundled');
  await waitShown(page, 1);
  console.log(`cancel to next image: ${Date.now() - t0} ms`);
  assert.ok((await stats(page)).spots > 50);
  assert.deepEqual(errors, []);
});

test('bad models: errors name the file and the line', { timeout: 300_000 }, async () => {
  const { page } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=64`);
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
    await page.waitForFunction((name) => (document.getElementById('rl-error').textContent ?? '').includes(name), name, { timeout: 60_000 });
    const msg = await page.textContent('#rl-error');
    console.log(`${name}: ${msg}`);
    assert.match(msg, re);
    assert.doesNotMatch(msg, /panic|unreachable/i);
  }
  await page.screenshot({ path: join(ARTIFACTS, 'realistic-bad-model.png') });
  // the page still works: the bundled model renders
  await page.selectOption('#rl-model', 'bundled');
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
