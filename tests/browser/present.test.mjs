// Presentation as a teacher on a projector meets it: the first image is not cropped at 1280×720
// or 1920×1080, the view re-fits when its container changes (a notice, presentation mode, a
// resize) unless the user zoomed, presentation mode hides the form (the preset's note and the orientation stay) and enlarges labels and
// readout, the dark theme (system or toggle), and Copy link with its local-file warning.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { launch, open, waitRendered, ARTIFACTS, setup } from './helpers.mjs';

const env = setup({ webgpu: false });

/** The image's rectangle inside the canvas: whole (not cropped) and filling one dimension. */
async function imageFits(page) {
  const r = await page.evaluate(() => window.nanobragg.view.imageRect());
  const inside = r.x0 >= -0.5 && r.y0 >= -0.5 && r.x1 <= r.width + 0.5 && r.y1 <= r.height + 0.5;
  const fills = Math.abs(r.x1 - r.x0 - r.width) < 1 || Math.abs(r.y1 - r.y0 - r.height) < 1;
  return { inside, fills, r };
}

for (const viewport of [{ width: 1280, height: 720 }, { width: 1920, height: 1080 }]) {
  const tag = `${viewport.width}x${viewport.height}`;
  test(`${tag}: first image fits, presentation mode enlarges it and re-fits, a notice re-fits`, { timeout: 150_000 }, async () => {
    const page0 = await env.ctx.newPage();
    await page0.setViewportSize(viewport);
    try {
      const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu`, { viewport });
      await waitRendered(page, 1);
      let f = await imageFits(page);
      assert.ok(f.inside && f.fills, `first load: ${JSON.stringify(f.r)}`);
      const normalSize = f.r.x1 - f.r.x0;
      await page.screenshot({ path: join(ARTIFACTS, `present-${tag}-normal.png`) });
      // presentation mode (key P): panel hidden, a larger image, large readout
      await page.keyboard.press('p');
      await page.waitForFunction(() => document.body.classList.contains('present'));
      await page.waitForTimeout(100);
      f = await imageFits(page);
      assert.ok(f.inside && f.fills, `presentation: ${JSON.stringify(f.r)}`);
      assert.ok(f.r.x1 - f.r.x0 > normalSize * 1.05, `image grew: ${normalSize} -> ${f.r.x1 - f.r.x0}`);
      const st = await page.evaluate(() => ({
        form: getComputedStyle(document.getElementById('params')).display,
        orientation: document.getElementById('orientation').getBoundingClientRect().height,
        readoutPx: parseFloat(getComputedStyle(document.getElementById('readout')).fontSize),
      }));
      await page.waitForFunction(() => new URL(location.href).searchParams.get('present') === '1');
      assert.equal(st.form, 'none', 'the form is hidden');
      assert.ok(st.orientation > 40, 'the orientation sliders stay');
      assert.ok(st.readoutPx >= 24, `readout ${st.readoutPx}px`);
      const box = await page.locator('#canvas-host > .nb-canvas').boundingBox();
      await page.mouse.move(box.x + box.width * 0.7, box.y + box.height * 0.3);
      await page.screenshot({ path: join(ARTIFACTS, `present-${tag}-presentation.png`) });
      // a notice appearing shrinks the view: it re-fits
      await page.evaluate(() => { document.getElementById('notice-text').textContent = 'a notice'; document.getElementById('notice').hidden = false; });
      await page.waitForTimeout(100);
      f = await imageFits(page);
      assert.ok(f.inside, `after a notice: ${JSON.stringify(f.r)}`);
      // once the user zooms, resizes keep the zoom
      await page.focus('#canvas-host > .nb-canvas');
      await page.keyboard.press('+');
      const zoomed = await page.evaluate(() => window.nanobragg.view.imageRect());
      await page.evaluate(() => { document.getElementById('notice').hidden = true; });
      await page.waitForTimeout(100);
      assert.equal(await page.evaluate(() => window.nanobragg.view.fitted), false);
      const after = await page.evaluate(() => window.nanobragg.view.imageRect());
      assert.ok(Math.abs((after.x1 - after.x0) - (zoomed.x1 - zoomed.x0)) < 1, 'zoom kept');
      await page.keyboard.press('Escape');
      await page.waitForFunction(() => !document.body.classList.contains('present'));
      assert.deepEqual(errors, []);
      await page.close();
    } finally {
      await page0.close();
    }
  });
}

test('dark theme: from the system, and the toggle; the element takes a theme attribute', { timeout: 120_000 }, async () => {
  const { page } = await open(env.ctx, `${env.base}/?backend=cpu&cmap=inferno`, { colorScheme: 'dark' });
  try {
    await waitRendered(page, 1);
    const bg = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    const lum = (c) => { const [r, g, b] = c.match(/\d+/g).map(Number); return 0.3 * r + 0.59 * g + 0.11 * b; };
    assert.ok(lum(await bg()) < 60, `dark from the system: ${await bg()}`);
    await page.screenshot({ path: join(ARTIFACTS, 'theme-dark-system.png') });
    await page.click('#theme'); // auto -> dark
    await page.click('#theme'); // dark -> light
    assert.ok(lum(await bg()) > 200, `light by the toggle: ${await bg()}`);
    await page.waitForFunction(() => new URL(location.href).searchParams.get('theme') === 'light');
    await page.click('#theme'); // light -> auto
    assert.ok(lum(await bg()) < 60);
    // inverted grey (a white image): the surround of the image follows the theme, not a light
    // grey slab around the image on a dark page (a projector's glare)
    const corner = () => page.evaluate(() => {
      const c = document.querySelector('.nb-canvas');
      const [r, g, b] = c.getContext('2d').getImageData(2, 2, 1, 1).data;
      return 0.3 * r + 0.59 * g + 0.11 * b;
    });
    await page.selectOption('#cmap', 'inverted-grey');
    await page.waitForFunction(() => new URL(location.href).searchParams.get('cmap') !== 'inferno');
    assert.ok(await corner() < 60, `dark surround: ${await corner()}`);
    await page.click('#theme'); // auto -> dark
    assert.ok(await corner() < 60, `dark surround: ${await corner()}`);
    await page.click('#theme'); // dark -> light
    assert.ok(await corner() > 150, `light surround: ${await corner()}`);
    await page.click('#theme'); // light -> auto
    // the element
    await page.setContent(`<nanobragg-view theme="dark" detpixels="64"></nanobragg-view><nanobragg-view theme="light" detpixels="64"></nanobragg-view>`);
    await page.addScriptTag({ type: 'module', url: `${env.base}/nanobragg-view.js` });
    const cols = await page.evaluate(() => [...document.querySelectorAll('nanobragg-view')].map((el) => getComputedStyle(el.shadowRoot.querySelector('.bar')).backgroundColor));
    assert.ok(lum(cols[0]) < 60 && lum(cols[1]) > 200, JSON.stringify(cols));
  } finally {
    await page.close();
  }
});

test('Copy link copies the URL and warns when it names local files', { timeout: 120_000 }, async () => {
  await env.ctx.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: env.base });
  const { page } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=128`);
  try {
    await waitRendered(page, 1);
    await page.click('#copylink');
    await page.waitForFunction(() => !document.getElementById('notice').hidden);
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), page.url());
    assert.doesNotMatch(await page.textContent('#notice-text'), /local file/);
    await page.setInputFiles('#f-hkl-file', { name: 'mine.hkl', mimeType: 'text/plain', buffer: Buffer.from('1 0 0 10\n0 1 0 20\n') });
    await waitRendered(page, 2);
    await page.click('#copylink');
    await page.waitForFunction(() => /local file/.test(document.getElementById('notice-text').textContent));
    const text = await page.textContent('#notice-text');
    assert.match(text, /mine\.hkl/);
    assert.match(await page.evaluate(() => navigator.clipboard.readText()), /hkl=mine\.hkl/);
    await page.screenshot({ path: join(ARTIFACTS, 'copy-link-warning.png') });
  } finally {
    await page.close();
  }
});
