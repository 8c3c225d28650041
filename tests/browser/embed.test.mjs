// <nanobragg-view> loaded from another directory on a page served WITHOUT COOP/COEP.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { launch, open, ARTIFACTS, setup } from './helpers.mjs';

const env = setup({ isolation: false });

for (const webgpu of [false, true]) {
  test(`<nanobragg-view> renders without cross-origin isolation (WebGPU ${webgpu ? 'on' : 'off'})`, { timeout: 180_000 }, async () => {
    const ctx = await launch({ webgpu });
    try {
      const { page, errors } = await open(ctx, `${env.base}/examples/embed.html`);
      const res = await page.evaluate(() => Promise.all(['v1', 'v2'].map((id) => new Promise((ok, fail) => {
        const el = document.getElementById(id);
        if (el.result) return ok({ backend: el.result.backend, w: el.result.width });
        el.addEventListener('render', (e) => ok({ backend: e.detail.backend, w: e.detail.width }), { once: true });
        el.addEventListener('error', (e) => fail(new Error(e.detail.message)), { once: true });
      }))));
      const iso = await page.evaluate(() => crossOriginIsolated);
      assert.equal(iso, false);
      assert.equal(res.length, 2);
      for (const r of res) assert.equal(r.w, 256);
      const spread = await page.evaluate(() => {
        const c = document.getElementById('v1').shadowRoot.querySelector('canvas');
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let s = 0, s2 = 0, n = 0;
        for (let i = 0; i < d.length; i += 16) { s += d[i]; s2 += d[i] * d[i]; n++; }
        return Math.sqrt(s2 / n - (s / n) ** 2);
      });
      assert.ok(spread > 5, 'element canvas is not blank');
      const status = await page.evaluate(() => document.getElementById('v1').shadowRoot.querySelector('.bar').textContent);
      console.log('# embed:', JSON.stringify({ webgpu, res, status }));
      await page.screenshot({ path: join(ARTIFACTS, `embed-no-isolation${webgpu ? '-webgpu' : ''}.png`) });
      assert.deepEqual(errors, []);
    } finally {
      await ctx.close();
    }
  });
}

test('<nanobragg-view derivative="…"> shows ∂I/∂p from the crate\'s tangent kernel; the attribute switches it, names a bad parameter, and its removal brings the image back', { timeout: 180_000 }, async () => {
  const ctx = await launch({ webgpu: false });
  try {
    const { page, errors } = await open(ctx, `${env.base}/examples/embed.html`);
    const first = await page.evaluate(() => new Promise((ok, fail) => {
      const el = document.getElementById('v3');
      const done = () => ok({ param: el.tangent.param, unit: el.tangent.unit, engine: el.tangent.engine, w: el.tangent.width, status: el.shadowRoot.querySelector('.bar').textContent });
      if (el.tangent) return done();
      el.addEventListener('render', done, { once: true });
      el.addEventListener('error', (e) => fail(new Error(e.detail.message)), { once: true });
    }));
    assert.deepEqual([first.param, first.unit, first.engine, first.w], ['rot_x', 'rad', 'cpu', 256]);
    assert.match(first.status, /^∂I\/∂rot_x \(photons per rad\) · 256×256 · CPU/);
    // a signed image (each spot a dipole), drawn in the diverging map
    const check = await page.evaluate(() => {
      const el = document.getElementById('v3');
      let pos = 0, neg = 0;
      for (const v of el.tangent.tangent) { if (v > 0) pos++; else if (v < 0) neg++; }
      return { pos, neg, cmap: el.view.settings.cmap, signed: el.view.signed };
    });
    assert.ok(check.pos > 100 && check.neg > 100, JSON.stringify(check));
    assert.equal(check.cmap, 'diverging');
    assert.equal(check.signed, true);
    // the attribute switches the parameter; a bad name is the crate's error naming it
    const dist = await page.evaluate(() => new Promise((ok) => {
      const el = document.getElementById('v3');
      el.addEventListener('render', (e) => ok(e.detail.derivative), { once: true });
      el.setAttribute('derivative', 'distance');
    }));
    assert.equal(dist, 'distance');
    const bad = await page.evaluate(() => new Promise((ok) => {
      const el = document.getElementById('v3');
      el.addEventListener('error', (e) => ok(e.detail.message), { once: true });
      el.setAttribute('derivative', 'rot_q');
    }));
    assert.match(bad, /unknown parameter 'rot_q' \(did you mean rot_x\?\)/);
    // without the attribute the element shows the image again (and v2's image: the same words)
    const img = await page.evaluate(() => new Promise((ok) => {
      const el = document.getElementById('v3');
      el.addEventListener('render', () => {
        const a = el.result.data, b = document.getElementById('v2').result.data;
        let same = a.length === b.length;
        for (let i = 0; same && i < a.length; i++) same = a[i] === b[i];
        ok({ tangent: el.tangent, same });
      }, { once: true });
      el.removeAttribute('derivative');
    }));
    assert.deepEqual(img, { tangent: null, same: true });
    await page.evaluate(() => document.getElementById('v3').setAttribute('derivative', 'rot_x'));
    await page.waitForFunction(() => document.getElementById('v3').tangent?.param === 'rot_x', null, { timeout: 60_000 });
    await page.locator('#v3').scrollIntoViewIfNeeded();
    await page.locator('#v3').screenshot({ path: join(ARTIFACTS, 'embed-derivative.png') });
    assert.deepEqual(errors, []);
  } finally {
    await ctx.close();
  }
});

test('the README\'s first <nanobragg-view> snippet, in a plain block, fills its box with the image', { timeout: 120_000 }, async () => {
  const ctx = await launch({ webgpu: false });
  try {
    const { page, errors } = await open(ctx, `${env.base}/examples/embed.html`);
    await page.setContent(`<div style="width: 600px"><nanobragg-view id="r1" cell="100 100 100 90 90 90" lambda="6.2" n="5" default_f="100"
      distance="100" detpixels="256" pixel="0.4" cmap="viridis"></nanobragg-view></div>`);
    await page.addScriptTag({ type: 'module', url: `${env.base}/nanobragg-view.js` });
    await page.waitForFunction(() => document.getElementById('r1')?.result, null, { timeout: 60_000 });
    const r = await page.evaluate(() => {
      const el = document.getElementById('r1');
      const c = el.shadowRoot.querySelector('canvas');
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let s = 0, s2 = 0, n = 0;
      for (let i = 0; i < d.length; i += 16) { s += d[i + 1]; s2 += d[i + 1] ** 2; n++; }
      return { w: el.getBoundingClientRect().width, el: el.getBoundingClientRect().height, canvas: c.getBoundingClientRect().height, spread: Math.sqrt(s2 / n - (s / n) ** 2) };
    });
    // the canvas takes the element's height less its status line (it was 0 px high: a grey box);
    // the element has its documented default size in a wider block (420 px, a little taller)
    assert.ok(r.canvas > 0.85 * r.el && r.el > 420, JSON.stringify(r));
    assert.equal(r.w, 420);
    assert.ok(r.spread > 5, `element canvas is not blank: ${JSON.stringify(r)}`);
    // hover: the status line leads with d, 2θ and hkl (a narrow element cuts its end)
    const box = await page.locator('#r1').boundingBox();
    await page.mouse.move(box.x + box.width * 0.7, box.y + box.height * 0.3);
    // the value shows at once, d, 2θ and hkl when the crate's answer comes (an asynchronous
    // request to the worker): wait for it, then check the whole line
    await page.waitForFunction(() => /^d=/.test(document.getElementById('r1').shadowRoot.querySelector('.bar').textContent),
      null, { timeout: 10_000 }).catch(() => {});
    const bar = await page.evaluate(() => document.getElementById('r1').shadowRoot.querySelector('.bar').textContent);
    assert.match(bar, /^d=[\d.]+ Å 2θ=[\d.]+° hkl≈\(-?\d+ -?\d+ -?\d+\) I=\S+ \(\d+, \d+\)$/);
    await page.screenshot({ path: join(ARTIFACTS, 'embed-readme-snippet.png') });
    assert.deepEqual(errors, []);
  } finally {
    await ctx.close();
  }
});

test('the example page on a phone (390×844): its figures stack, nothing is wider than the screen', { timeout: 120_000 }, async () => {
  const ctx = await launch({ webgpu: false, viewport: { width: 390, height: 844 } });
  try {
    const { page, errors } = await open(ctx, `${env.base}/examples/embed.html`);
    await page.waitForFunction(() => ['v1', 'v2'].every((id) => document.getElementById(id).result), null, { timeout: 60_000 });
    const r = await page.evaluate(() => ({
      scrollW: document.documentElement.scrollWidth, W: document.documentElement.clientWidth,
      els: ['v1', 'v2', 'v3'].map((id) => document.getElementById(id).getBoundingClientRect().toJSON()),
    }));
    assert.ok(r.scrollW <= r.W, `the page is ${r.scrollW} px wide on a ${r.W} px screen`);
    for (const e of r.els) assert.ok(e.right <= r.W && e.width >= 0.8 * r.W, JSON.stringify(e));
    assert.ok(r.els[1].top >= r.els[0].bottom, 'the second figure under the first');
    await page.screenshot({ path: join(ARTIFACTS, 'embed-phone.png'), fullPage: true });
    assert.deepEqual(errors, []);
  } finally {
    await ctx.close();
  }
});
