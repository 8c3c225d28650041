// Live frames and cancel, as a user meets them: a slider drag shows frames on both backends
// (counted through the page's `nanobragg-frame` events), ends on the full image, overlays keep
// their place during previews; Cancel stops a long render within the bound; progress moves.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { launch, open, waitRendered, dragSlider, ARTIFACTS, setup } from './helpers.mjs';

const env = setup({ webgpu: false });

for (const backend of ['cpu', 'gpu']) {
  test(`a slider drag shows frames (${backend === 'gpu' ? 'WebGPU on SwiftShader' : 'CPU threads'}) and ends on the full image`, { timeout: 180_000 }, async () => {
    const ctx = backend === 'gpu' ? await launch({ webgpu: true }) : env.ctx;
    try {
      const n = backend === 'gpu' ? 256 : 512;
      const { page, errors } = await open(ctx, `${env.base}/?backend=${backend}&detpixels=${n}`);
      await waitRendered(page, 1, 150_000);
      const r = await dragSlider(page, { ms: 1500, from: 100, to: 150 });
      console.log(`# ${backend} drag:`, JSON.stringify(r));
      // no starvation: frames keep arriving while the slider moves (the benchmark measures rates)
      assert.ok(r.frames >= (backend === 'gpu' ? 2 : 10), `${r.frames} frames in 1.5 s`);
      assert.deepEqual(r.backends, [backend]);
      assert.equal(r.finalWidth, n);
      assert.equal(r.finalPreview, false);
      assert.equal(await page.evaluate(() => window.nanobragg.state().distance), '150');
      assert.deepEqual(errors, []);
      await page.close();
    } finally {
      if (ctx !== env.ctx) await ctx.close();
    }
  });
}

test('during a preview the beam centre and rings stay where the full image puts them', { timeout: 120_000 }, async () => {
  const ctx = env.ctx;
  {
    const { page } = await open(ctx, `${env.base}/?backend=cpu&Xbeam=40&Ybeam=60`);
    await waitRendered(page, 1);
    const full = await page.evaluate(() => window.nanobragg.view.beamCentre);
    // one preview frame: a slider input of the same value
    const preview = await page.evaluate(() => new Promise((ok) => {
      window.addEventListener('nanobragg-frame', (e) => ok({ preview: e.detail.preview, w: e.detail.width, bc: window.nanobragg.view.beamCentre }), { once: true });
      const s = document.getElementById('f-N-slider');
      s.value = '5';
      s.dispatchEvent(new Event('input', { bubbles: true }));
    }));
    assert.equal(preview.preview, true, JSON.stringify(preview));
    assert.ok(preview.w < 512);
    // Xbeam/Ybeam are in mm: the preview's coarser pixels land the beam at the same place
    // (within one preview pixel)
    const scale = 512 / preview.w;
    assert.ok(Math.abs(preview.bc[0] - full[0]) <= scale && Math.abs(preview.bc[1] - full[1]) <= scale, `${preview.bc} vs ${full}`);
    assert.ok(Math.abs(full[0] - 300) < 1 && Math.abs(full[1] - 200) < 1, `full-image beam centre ${full} (MOSFLM: Xbeam along slow)`);
    await page.screenshot({ path: join(ARTIFACTS, 'live-preview-overlays.png') });
    await page.close();
  }
});

test('Cancel stops a long render within 100 ms; the next render runs', { timeout: 180_000 }, async () => {
  const ctx = env.ctx;
  {
    const { page } = await open(ctx, `${env.base}/?backend=cpu`);
    await waitRendered(page, 1);
    // a render of many seconds: 20000 mosaic domains on 512²
    await page.fill('#f-mosaic', '1');
    await page.fill('#f-mosaic_domains', '20000');
    await page.press('#f-mosaic_domains', 'Enter');
    await page.waitForFunction(() => !document.getElementById('cancel').disabled);
    // announced before it runs: the cost from the plan and the speed measured on the first image
    await page.waitForFunction(() => /This render will take about [\d.]+ (s|ms) on the CPU/.test(document.getElementById('notice-text').textContent));
    await page.waitForTimeout(1200);
    assert.ok(await page.evaluate(() => window.nanobragg.client.busy), 'still rendering after 1.2 s');
    const cancel = await page.evaluate(async () => {
      const c = window.nanobragg.client;
      const t0 = performance.now();
      document.getElementById('cancel').click();
      while (c.busy && performance.now() - t0 < 5000) await new Promise((r) => setTimeout(r, 5));
      return { ms: performance.now() - t0, busy: c.busy, restarts: c.restarts, text: document.getElementById('timing').textContent };
    });
    console.log('# cancel:', JSON.stringify(cancel));
    assert.equal(cancel.busy, false);
    assert.ok(cancel.ms <= 100, `cancel took ${cancel.ms.toFixed(0)} ms`);
    assert.equal(cancel.text, 'cancelled');
    // and the page renders again
    await page.fill('#f-mosaic_domains', '2');
    const before = await page.evaluate(() => window.nanobragg.lastRender().count);
    await page.press('#f-mosaic_domains', 'Enter');
    await waitRendered(page, before + 1, 60_000);
    await page.close();
  }
});

test('progress moves during a render over 300 ms', { timeout: 120_000 }, async () => {
  const { page } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=64`);
  await waitRendered(page, 1);
  const seen = await page.evaluate(async () => {
    const bar = document.getElementById('progress');
    const values = [];
    const t0 = performance.now();
    const s = document.getElementById('f-oversample');
    document.getElementById('f-detpixels').value = '2048';
    document.getElementById('f-detpixels').dispatchEvent(new Event('change'));
    s.value = '4';
    s.dispatchEvent(new Event('change'));
    const before = Number(document.body.dataset.rendered);
    while (Number(document.body.dataset.rendered) === before && performance.now() - t0 < 60_000) {
      values.push(bar.value);
      await new Promise((r) => requestAnimationFrame(r));
    }
    return { values: [...new Set(values)], ms: performance.now() - t0 };
  });
  console.log(`# progress during a ${seen.ms.toFixed(0)} ms render: ${seen.values.length} distinct values`);
  assert.ok(seen.ms > 300, `the render took ${seen.ms} ms`);
  assert.ok(seen.values.filter((v) => v > 0 && v < 1).length >= 3, JSON.stringify(seen.values.slice(0, 20)));
  await page.close();
});
