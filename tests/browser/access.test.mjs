// Keyboard and finger: "Skip to image" is the first stop of the Tab key (past the ~60 fields of
// the form) and takes the focus to the image; on a phone (portrait or landscape) every control
// on the screen is a touch target of 24 px or more.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { open, waitRendered, setup, ARTIFACTS } from './helpers.mjs';

const env = setup({ webgpu: false });

test('the first Tab lands on "Skip to image", shown while focused; Enter takes the focus to the image', { timeout: 60_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=64`);
  await waitRendered(page, 1);
  const hidden = await page.evaluate(() => document.getElementById('skip-to-image').getBoundingClientRect().bottom);
  assert.ok(hidden <= 0, 'off the screen until focused');
  await page.keyboard.press('Tab');
  const link = await page.evaluate(() => {
    const a = document.activeElement;
    const r = a.getBoundingClientRect();
    return { id: a.id, text: a.textContent, top: r.top, bottom: r.bottom, left: r.left, h: innerHeight };
  });
  assert.equal(link.id, 'skip-to-image');
  assert.equal(link.text, 'Skip to image');
  assert.ok(link.top >= 0 && link.bottom <= link.h && link.left >= 0, `on the screen while focused: ${JSON.stringify(link)}`);
  await page.screenshot({ path: join(ARTIFACTS, 'access-skip-link.png') });
  await page.keyboard.press('Enter');
  assert.equal(await page.evaluate(() => document.activeElement?.matches('#canvas-host .nb-canvas')), true, 'the image has the focus');
  // the image's keys work from there: + zooms
  assert.equal(await page.evaluate(() => window.nanobragg.view.fitted), true);
  await page.keyboard.press('+');
  assert.equal(await page.evaluate(() => window.nanobragg.view.fitted), false, '+ zooms the focused image');
  assert.deepEqual(errors, []);
  await page.close();
});

for (const [width, height] of [[390, 844], [844, 390]]) {
  test(`${width}×${height}: every control on the page is at least 24 px wide and high (check boxes, sliders, small buttons)`, { timeout: 60_000 }, async () => {
    const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=64`, { viewport: { width, height } });
    await waitRendered(page, 1);
    // every group of the form open: its check boxes too
    await page.evaluate(() => { for (const d of document.querySelectorAll('details.group')) d.open = true; });
    const small = await page.evaluate(() => {
      const out = [];
      for (const el of document.querySelectorAll('button, input, select, summary, a[href], textarea')) {
        if (el.type === 'hidden' || el.id === 'skip-to-image') continue;
        const r = el.getBoundingClientRect();
        if (!r.width || !r.height || getComputedStyle(el).visibility === 'hidden') continue;
        if (r.width < 24 || r.height < 24) out.push(`${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ''}${el.type ? `[${el.type}]` : ''} ${r.width.toFixed(0)}×${r.height.toFixed(0)}`);
      }
      return out;
    });
    assert.deepEqual(small, [], `targets under 24 px at ${width}×${height}`);
    const n = await page.evaluate(() => document.querySelectorAll('input[type=checkbox]').length);
    assert.ok(n >= 5, `check boxes measured: ${n}`);
    await page.screenshot({ path: join(ARTIFACTS, `access-touch-${width}x${height}.png`) });
    assert.deepEqual(errors, []);
    await page.close();
  });
}
