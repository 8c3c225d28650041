// Small screens (issue 31): a phone (390×844) and a tablet in portrait (768×1024). The image
// comes first, square, at the page's whole width; nothing is wider than the screen; the
// parameters are below it (the header's "Parameters ↓" jumps there); presets, the φ player and
// a touch drag in Tilt mode work. Screenshots in tests/artifacts/layout-*.png.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { open, waitRendered, canvasSpread, ARTIFACTS, setup } from './helpers.mjs';

const env = setup({ webgpu: false });

for (const [name, width, height] of [['phone', 390, 844], ['tablet', 768, 1024]]) {
  test(`${name} ${width}×${height}: image first and whole, no sideways scrolling, parameters below, presets, φ player, touch tilt`, { timeout: 180_000 }, async () => {
    const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=256`, { viewport: { width, height } });
    await waitRendered(page, 1);
    const box = () => page.evaluate(() => {
      const r = document.getElementById('canvas-host').getBoundingClientRect();
      return { left: r.left, top: r.top, width: r.width, height: r.height, scrollW: document.documentElement.scrollWidth, innerW: innerWidth, innerH: innerHeight };
    });
    const b = await box();
    assert.ok(b.scrollW <= b.innerW, `no sideways scrolling: the page is ${b.scrollW} px wide on a ${b.innerW} px screen`);
    assert.ok(b.width >= 0.75 * b.innerW, `the image takes ${b.width} of ${b.innerW} px`);
    assert.ok(b.height >= 0.75 * b.width, `the image is ${b.width}×${b.height} px`);
    assert.ok(b.top < 0.5 * b.innerH, `the image starts at ${b.top} px, in the first half of the screen`);
    assert.ok((await canvasSpread(page)) > 5, 'the image is not blank');
    await page.screenshot({ path: join(ARTIFACTS, `layout-${name}.png`) });
    // the parameters: below the image, as wide as the page, reached from the header
    await page.click('a.to-params');
    await page.waitForFunction(() => document.getElementById('controls').getBoundingClientRect().top < innerHeight / 2);
    const aside = await page.evaluate(() => document.getElementById('controls').getBoundingClientRect().width);
    assert.ok(aside >= 0.9 * width, `the parameters are ${aside} px wide`);
    await page.screenshot({ path: join(ARTIFACTS, `layout-${name}-parameters.png`) });
    await page.evaluate(() => scrollTo(0, 0));
    // a preset
    let n = Number(await page.evaluate(() => document.body.dataset.rendered));
    await page.selectOption('#preset', 'triclinic');
    await waitRendered(page, n + 1);
    await page.waitForFunction(() => new URL(location.href).searchParams.get('cell') === '5.8 7.1 9.3 81 77 68');
    // a touch drag in Tilt mode turns the crystal (no Shift key on a phone)
    await page.click('#drag-mode button:has-text("Tilt")');
    const before = await page.evaluate(() => new URL(location.href).searchParams.get('misset'));
    n = Number(await page.evaluate(() => document.body.dataset.rendered));
    await page.evaluate(async () => {
      const c = document.querySelector('#canvas-host > .nb-canvas');
      const r = c.getBoundingClientRect();
      const ev = (type, x, y) => c.dispatchEvent(new PointerEvent(type, {
        bubbles: true, cancelable: true, pointerId: 3, pointerType: 'touch', isPrimary: true,
        button: 0, buttons: type === 'pointerup' ? 0 : 1, clientX: x, clientY: y,
      }));
      const [x0, y0] = [r.left + r.width / 2, r.top + r.height / 2];
      ev('pointerdown', x0, y0);
      for (let i = 1; i <= 20; i++) {
        ev('pointermove', x0 + 4 * i, y0 + 2 * i);
        await new Promise((f) => requestAnimationFrame(f));
      }
      ev('pointerup', x0 + 80, y0 + 40);
    });
    await page.waitForFunction((b) => new URL(location.href).searchParams.get('misset') !== b, before, { timeout: 20_000 });
    await waitRendered(page, n + 1);
    // the φ player turns the crystal and shows each frame
    n = Number(await page.evaluate(() => document.body.dataset.rendered));
    const phi0 = await page.textContent('.phi-now');
    await page.click('.player .play');
    await waitRendered(page, n + 2);
    await page.click('.player .play');
    assert.notEqual(await page.textContent('.phi-now'), phi0);
    const after = await box();
    assert.ok(after.scrollW <= after.innerW, `still no sideways scrolling after the preset and the player: ${after.scrollW} px`);
    assert.deepEqual(errors, []);
  });
}

// The bars under the image's toolbar, open on a phone: "Fit to image" (its parameter checkboxes
// wrap; they ran 22 px past a 390 px screen and the page scrolled sideways) and the derivative.
test('phone 390×844 and 844×390: the Fit and Derivative bars open fit the screen', { timeout: 180_000 }, async () => {
  for (const viewport of [{ width: 390, height: 844 }, { width: 844, height: 390 }]) {
    const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=128`, { viewport });
    await waitRendered(page, 1);
    await page.click('.fitopen');
    await page.click('.dopen');
    await page.waitForFunction(() => !document.querySelector('.fitbar').hidden && !document.querySelector('.dbar').hidden);
    const r = await page.evaluate(() => {
      const W = document.documentElement.clientWidth;
      const out = [...document.querySelectorAll('.fitbar, .fitbar *, .dbar, .dbar *')]
        .filter((e) => e.getClientRects().length && e.getBoundingClientRect().right > W + 0.5)
        .map((e) => `${e.tagName.toLowerCase()}.${e.className}: right ${Math.round(e.getBoundingClientRect().right)}`);
      return { out, scrollW: document.documentElement.scrollWidth, W };
    });
    assert.deepEqual(r.out, [], `${viewport.width}×${viewport.height}: past the ${r.W} px screen`);
    assert.ok(r.scrollW <= r.W, `${viewport.width}×${viewport.height}: the page is ${r.scrollW} px wide`);
    await page.evaluate(() => document.querySelector('.fitbar').scrollIntoView());
    await page.screenshot({ path: join(ARTIFACTS, `layout-bars-${viewport.width}.png`) });
    assert.deepEqual(errors, []);
    await page.close();
  }
});

// The 3D view open on a phone in portrait: stacked under the image, the stage grows to hold both
// (in the image's square the scene was 80 px high, under its legend).
test('phone 390×844: the 3D view opens under the whole image with room for its scene', { timeout: 180_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=128&view3d=1`, { viewport: { width: 390, height: 844 } });
  await waitRendered(page, 1);
  await page.waitForSelector('.p3d-view canvas');
  const r = await page.evaluate(() => ({
    view: document.querySelector('.p3d-view').getBoundingClientRect().toJSON(),
    img: document.getElementById('canvas-host').getBoundingClientRect().toJSON(),
    scrollW: document.documentElement.scrollWidth,
  }));
  assert.ok(r.img.height >= 0.95 * r.img.width && r.img.width >= 380, `the image ${r.img.width}×${r.img.height}`);
  assert.ok(r.view.top >= r.img.bottom, 'the 3D view under the image');
  assert.ok(r.view.height >= 0.6 * r.view.width, `the 3D scene ${r.view.width}×${r.view.height}`);
  assert.ok(r.scrollW <= 390, `the page is ${r.scrollW} px wide`);
  await page.evaluate(() => document.querySelector('.p3d').scrollIntoView());
  await page.screenshot({ path: join(ARTIFACTS, 'layout-phone-3d.png') });
  assert.deepEqual(errors, []);
  await page.close();
});
