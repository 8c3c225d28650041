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
