// The teaching presets show their lesson (issue 16 §3): the crystal-size preset's spots get
// narrower as the crystal gets larger (width ∝ 1/N: the same reflection measured at N = 6, 10
// and 20 on the preset's own settings), and the page opens it with the scale the lesson needs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { open, waitRendered, setup, ARTIFACTS } from './helpers.mjs';

const env = setup({ webgpu: false });

test('crystal-size preset: the spot width falls as N grows (6 → 10 → 20), about as 1/N', { timeout: 300_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&preset=crystal-size`);
  await waitRendered(page, 1);
  assert.equal(await page.inputValue('#scaling'), 'sqrt', 'the preset opens with its scale');
  const r = await page.evaluate(async () => {
    const args = window.nanobragg.lastRender().result.args;
    const at = args.indexOf('-N');
    const img = async (n) => {
      const a = [...args];
      a[at + 1] = String(n);
      return window.nanobragg.simulate(a, { backend: 'cpu' });
    };
    // the strongest spot of the sharpest image away from the direct beam (the forward spot 000
    // is no lattice spot): the reflection to follow
    const sharp = await img(20);
    const W = sharp.width, H = sharp.height;
    const [bf, bs] = window.nanobragg.view.beamCentre;
    let best = -1;
    for (let i = 0; i < sharp.data.length; i++) {
      const f = i % W, s = Math.floor(i / W);
      if (Math.hypot(f - bf, s - bs) < 30 || f < 45 || s < 45 || f >= W - 45 || s >= H - 45) continue;
      if (best < 0 || sharp.data[i] > sharp.data[best]) best = i;
    }
    const f0 = best % W, s0 = Math.floor(best / W);
    /** Its width in pixels: √(area at or above half its peak) within ±40 px. */
    const width = (d) => {
      let peak = 0, pf = f0, ps = s0;
      for (let s = s0 - 4; s <= s0 + 4; s++) for (let f = f0 - 4; f <= f0 + 4; f++) if (d[s * W + f] > peak) { peak = d[s * W + f]; pf = f; ps = s; }
      let area = 0;
      for (let s = Math.max(0, ps - 40); s < Math.min(H, ps + 41); s++) for (let f = Math.max(0, pf - 40); f < Math.min(W, pf + 41); f++) if (d[s * W + f] >= peak / 2) area++;
      return Math.sqrt(area);
    };
    const out = { spot: [f0, s0], widths: {} };
    for (const n of [6, 10]) out.widths[n] = width((await img(n)).data);
    out.widths[20] = width(sharp.data);
    return out;
  });
  console.log(`# crystal-size preset: spot at ${r.spot}, half-maximum widths ${JSON.stringify(r.widths)} px`);
  const w = r.widths;
  assert.ok(w[6] > w[10] && w[10] > w[20], `widths fall with N: ${JSON.stringify(w)}`);
  // ∝ 1/N within the pixel sampling (20/6 = 3.3, 10/6 = 1.7)
  assert.ok(w[6] / w[20] > 2.7 && w[6] / w[20] < 4, `ratio N 6 / N 20 = ${(w[6] / w[20]).toFixed(2)}`);
  assert.ok(w[6] / w[10] > 1.35 && w[6] / w[10] < 2.1, `ratio N 6 / N 10 = ${(w[6] / w[10]).toFixed(2)}`);
  assert.ok(w[20] >= 1.5, `the N 20 spot is more than a hot pixel (${w[20]} px)`);
  await page.screenshot({ path: join(ARTIFACTS, 'lesson-crystal-size.png') });
  assert.deepEqual(errors, []);
});
