// The derivative view (issue 20: derivatives from the page, on the GPU in a browser;
// www/src/derivative/, crate/src/wasm/gradients.rs): "Derivative…" opens ∂I/∂p beside the
// image, computed by the crate's WGSL tangent kernel on WebGPU (SwiftShader here). Checked: the
// engine is the GPU's; the derivative agrees with the crate's f64 CPU tangent kernel (the same
// request on the CPU) and that one with a central finite difference of two images the page
// renders (distance ± 0.01 mm); the image it came with is the image shown; the readout gives
// the derivative at the pointer; the download is the derivative's floats (the CLI's -gradfile
// file); a parameter the set-up has no derivative by is the crate's error in the bar; a new
// image (another distance) is followed by its derivative; without WebGPU the CPU's tangent kernel
// computes it and the bar says so; the URL holds the view (`deriv=NAME`). Screenshots of the view go to
// tests/artifacts/derivative-*.png (1280×720 and 1920×1080).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { open, launch, waitRendered, setup, pearson, ARTIFACTS } from './helpers.mjs';

const env = setup({ webgpu: true });

/** The teaching crystal on a 128² detector, f32 on the GPU where it opens. */
const BASE = '?cell=100+110+120+90+90+90&lambda=6.2&N=10&default_F=100&distance=100&detpixels=128&pixel=0.8&misset=10+20+30&shape=gauss&oversample=1&backend=gpu&precision=f32';

async function derivativeOf(page, param) {
  await page.waitForFunction((p) => {
    const d = window.nanobragg.derivative;
    return (!d.busy && d.result?.param === p) || document.querySelector('.dstatus')?.dataset.kind === 'error';
  }, param, { timeout: 120_000 });
  return page.evaluate(() => {
    const r = window.nanobragg.derivative.result;
    return r && { ...r, tangent: Array.from(r.tangent), image: Array.from(r.image) };
  });
}

/** Σ|a − b| / Σ|b| over the pixels where |b| is above 1e-3 of its largest value. */
function relError(a, b) {
  let max = 0;
  for (const v of b) max = Math.max(max, Math.abs(v));
  let num = 0, den = 0;
  for (let i = 0; i < b.length; i++) {
    if (Math.abs(b[i]) < 1e-3 * max) continue;
    num += Math.abs(a[i] - b[i]);
    den += Math.abs(b[i]);
  }
  return num / den;
}

test('∂I/∂p beside the image: WebGPU, against the f64 CPU kernel and a finite difference; readout, download, errors, a new image', { timeout: 300_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/${BASE}`);
  await waitRendered(page, 1);
  await page.click('.dopen');
  assert.equal(await page.locator('.dbar').isVisible(), true);
  assert.equal(await page.locator('.dopen').getAttribute('aria-expanded'), 'true');
  // every parameter of the crate is offered, with its unit
  const options = await page.locator('.dparam option').evaluateAll((o) => o.map((x) => x.value));
  for (const p of ['rot_x', 'rot_y', 'rot_z', 'cell_a', 'n_cells', 'mosaic', 'distance', 'beam_x', 'lambda', 'scale']) assert.ok(options.includes(p), p);

  const gpu = await derivativeOf(page, 'rot_x');
  assert.ok(gpu, await page.locator('.dstatus').textContent());
  assert.equal(gpu.engine, 'gpu', 'WebGPU opens here (SwiftShader): the WGSL tangent kernel');
  assert.equal(gpu.unit, 'rad');
  assert.equal(gpu.tangent.length, 128 * 128);
  assert.match(await page.locator('.dstatus').textContent(), /tangent kernel on WebGPU/);
  assert.match(await page.locator('.dhost .mtag').textContent(), /∂I\/∂rot_x \(photons per rad\)/);
  // the image that came with it is the image shown (the same words; the GPU's image kernels)
  const shown = await page.evaluate(() => Array.from(window.nanobragg.view.image.data));
  assert.ok(pearson(gpu.image, shown) > 0.99999, 'the derivative is of the image shown');

  // the same derivative from the crate's f64 CPU tangent kernel
  const args = await page.evaluate(() => window.nanobragg.lastRender().result.args);
  const cpu = await page.evaluate(async ([a]) => {
    const r = await window.nanobragg.client.renderTangent(a, {}, 'rot_x', 'cpu', 'f64');
    return { engine: r.engine, tangent: Array.from(r.tangent) };
  }, [args]);
  assert.equal(cpu.engine, 'cpu');
  const e32 = relError(gpu.tangent, cpu.tangent);
  assert.ok(pearson(gpu.tangent, cpu.tangent) > 0.9999 && e32 < 2e-3, `GPU f32 against CPU f64: relative error ${e32}`);
  let moving = 0;
  for (const v of cpu.tangent) if (Math.abs(v) > 1) moving++;
  assert.ok(moving > 200, `the spots move: ${moving} pixels`);

  // the CPU's ∂I/∂distance against a central difference of two images the page renders
  const h = 0.01;
  const fd = await page.evaluate(async ([a, h]) => {
    const at = (d) => {
      const w = a.slice();
      w[w.indexOf('-distance') + 1] = String(d);
      return window.nanobragg.simulate(w, { backend: 'cpu', precision: 'f64' });
    };
    const base = +a[a.indexOf('-distance') + 1];
    const [p, m] = [await at(base + h), await at(base - h)];
    const t = await window.nanobragg.client.renderTangent(a, {}, 'distance', 'cpu', 'f64');
    return { fd: Array.from(p.data, (v, i) => (v - m.data[i]) / (2 * h)), tangent: Array.from(t.tangent), unit: t.unit };
  }, [args, h]);
  assert.equal(fd.unit, 'mm');
  const efd = relError(fd.tangent, fd.fd);
  assert.ok(efd < 1e-3, `∂I/∂distance against (I(d+h) − I(d−h))/2h, h = ${h} mm: relative error ${efd}`);

  // the readout: the derivative under the pointer, with the image's value
  const box = await page.locator('.dhost canvas').boundingBox();
  const peak = gpu.tangent.reduce((b, v, i) => (Math.abs(v) > Math.abs(gpu.tangent[b]) ? i : b), 0);
  const [pf, ps] = [peak % 128, Math.floor(peak / 128)];
  const vp = await page.evaluate(() => window.nanobragg.view.viewport);
  await page.mouse.move(box.x + box.width / 2 + (pf + 0.5 - vp.cx) * vp.zoom, box.y + box.height / 2 + (ps + 0.5 - vp.cy) * vp.zoom);
  await page.waitForFunction(() => document.querySelector('.dread').textContent.includes('∂I/∂rot_x'), null, { timeout: 10_000 });
  const read = await page.locator('.dread').textContent();
  const m = read.match(/pixel \((\d+), (\d+)\).*∂I\/∂rot_x (\S+) photons per rad/);
  assert.ok(m, read);
  const [f, s] = [+m[1], +m[2]];
  assert.ok(Math.abs(f - pf) <= 1 && Math.abs(s - ps) <= 1, `pointer on (${pf}, ${ps}): ${read}`);
  const want = gpu.tangent[s * 128 + f];
  assert.ok(Math.abs(+m[3] - want) <= 1e-3 * Math.abs(want) + 1e-30, `${read} against ${want}`);
  await page.screenshot({ path: join(ARTIFACTS, 'derivative-rot_x-1280.png') });

  // the download: the derivative's floats, named as the CLI's -gradfile names them
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('.dsave')]);
  assert.equal(dl.suggestedFilename(), 'nanobragg_d_rot_x.bin');
  const b = readFileSync(await dl.path());
  const got = new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
  assert.deepEqual(Array.from(got), gpu.tangent);

  // a parameter this set-up has no derivative by: the crate's error, in the bar
  await page.selectOption('.dparam', 'mosaic');
  await page.waitForFunction(() => document.querySelector('.dstatus').dataset.kind === 'error', null, { timeout: 60_000 });
  assert.match(await page.locator('.dstatus').textContent(), /mosaic spread is 0/);
  assert.equal(await page.locator('.dsave').isDisabled(), true);

  // a new image: its derivative follows (another distance, ∂I/∂distance); the URL holds the view
  await page.selectOption('.dparam', 'distance');
  await derivativeOf(page, 'distance');
  await page.waitForFunction(() => new URLSearchParams(location.search).get('deriv') === 'distance', null, { timeout: 5_000 });
  const before = await page.evaluate(() => window.nanobragg.derivative.resultArgs.join(' '));
  const n = await page.evaluate(() => window.nanobragg.lastRender().count);
  await page.fill('#f-distance', '120');
  await page.press('#f-distance', 'Enter');
  await waitRendered(page, n + 1);
  await page.waitForFunction((b) => {
    const d = window.nanobragg.derivative;
    return !d.busy && d.result?.param === 'distance' && d.resultArgs.join(' ') !== b;
  }, before, { timeout: 120_000 });
  const after = await page.evaluate(() => window.nanobragg.derivative.resultArgs);
  assert.equal(after[after.indexOf('-distance') + 1], '120');

  // the toolbar's Rings and Beam apply to the derivative too
  await page.uncheck('#rings');
  assert.equal(await page.evaluate(() => window.nanobragg.derivative.dview.settings.rings), false);
  await page.check('#rings');
  assert.equal(await page.evaluate(() => window.nanobragg.derivative.dview.settings.rings), true);

  // the view at 1920×1080
  await page.setViewportSize({ width: 1920, height: 1080 });
  await page.waitForTimeout(500);
  await page.screenshot({ path: join(ARTIFACTS, 'derivative-distance-1920.png') });
  // closing it hides the view and its tag
  await page.click('.dclose');
  assert.equal(await page.locator('.dhost').isVisible(), false);
  await page.waitForFunction(() => !new URLSearchParams(location.search).has('deriv'), null, { timeout: 5_000 });
  assert.deepEqual(errors, []);
  await page.close();
});

test('a link with deriv=NAME opens the view; without WebGPU the CPU tangent kernel computes it, and the bar says why', { timeout: 120_000 }, async () => {
  const ctx = await launch({ webgpu: false });
  try {
    const { page, errors } = await open(ctx, `${env.base}/${BASE.replace("backend=gpu", "backend=auto")}&deriv=rot_x`);
    await waitRendered(page, 1);
    const r = await derivativeOf(page, 'rot_x');
    assert.equal(await page.locator('.dbar').isVisible(), true);
    assert.ok(r, await page.locator('.dstatus').textContent());
    assert.equal(r.engine, 'cpu');
    assert.match(await page.locator('.dstatus').textContent(), /tangent kernel on the CPU \(no WebGPU in this browser\)/);
    // the f32 CPU kernel's derivative: the same as asking the crate for it on the CPU
    const args = await page.evaluate(() => window.nanobragg.lastRender().result.args);
    const cpu = await page.evaluate(async ([a]) => Array.from((await window.nanobragg.client.renderTangent(a, {}, 'rot_x', 'cpu', 'f32')).tangent), [args]);
    assert.deepEqual(r.tangent, cpu);
    assert.deepEqual(errors, []);
  } finally {
    await ctx.close();
  }
});
