// Smaller defects found by trying the page as a teacher and an author (issue 31 §5), each checked
// where it was seen: the 3D view's labels in presentation mode at 1280×720 (none covers another
// or the legend; the hint is whole), a dark element's 3D panel, the preset note's title after a
// slider moved, ring labels on the image, menu texts that fit at 1280 and at 390 px, and the
// pressed buttons' contrast in the dark theme. Screenshots: tests/artifacts/polish-*.png.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { open, waitRendered, ARTIFACTS, setup } from './helpers.mjs';

const env = setup({ webgpu: false });
const settle = (page) => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));

/** WCAG contrast ratio of two CSS rgb() colours (as getComputedStyle gives them). */
function contrast(fg, bg) {
  const lum = (c) => {
    const [r, g, b] = c.match(/[\d.]+/g).slice(0, 3).map((x) => {
      const v = Number(x) / 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
  return (a + 0.05) / (b + 0.05);
}

/** The 3D view's shown labels and legend (CSS px) and the pairs that overlap by more than 2 px. */
async function labelOverlaps(page, root = 'document') {
  return page.evaluate((root) => {
    const doc = root === 'document' ? document : document.querySelector(root).shadowRoot;
    const p = doc.querySelector('.p3d');
    const boxes = [...p.querySelectorAll('.nbr-label')]
      .filter((e) => e.offsetParent && e.style.display !== 'none' && getComputedStyle(e).visibility !== 'hidden' && e.textContent && !e.classList.contains('info'))
      .map((e) => ({ text: e.textContent, r: e.getBoundingClientRect().toJSON() }));
    const legend = p.querySelector('.nbr-legend');
    if (legend && legend.offsetParent) boxes.push({ text: 'legend', r: legend.getBoundingClientRect().toJSON() });
    const over = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 2 && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 2;
    const pairs = [];
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) if (over(boxes[i].r, boxes[j].r)) pairs.push(`${boxes[i].text} × ${boxes[j].text}`);
    return { labels: boxes.map((b) => b.text), pairs };
  }, root);
}

test('3D labels: none covers another or the legend at 1280×720, plain and in presentation mode; the hint is whole', { timeout: 300_000 }, async () => {
  for (const [name, q] of [['polish-3d-1280.png', ''], ['polish-3d-present-1280.png', '&present=1']]) {
    const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&view3d=1${q}`, { viewport: { width: 1280, height: 720 } });
    await waitRendered(page, 1);
    await page.waitForFunction(() => document.querySelector('.p3d')?.dataset.points, null, { timeout: 120_000 });
    await page.waitForTimeout(500);
    await settle(page);
    const r = await labelOverlaps(page);
    const info = await page.evaluate(() => { const i = document.querySelector('.p3d-info'); return { text: i.textContent, scroll: i.scrollHeight, box: i.clientHeight }; });
    await page.screenshot({ path: join(ARTIFACTS, name) });
    console.log(`# ${name}: labels ${JSON.stringify(r.labels)}; info ${JSON.stringify(info)}`);
    assert.deepEqual(r.pairs, [], `${name}: overlapping labels`);
    for (const l of ['a*', 'b*', 'c*']) assert.ok(r.labels.some((x) => x.startsWith(l)), `${name}: the ${l} label is shown`);
    assert.match(info.text, /Alt\+drag spins it$/);
    assert.ok(info.scroll <= info.box + 1, `${name}: the hint is cut off ${JSON.stringify(info)}`);
    assert.deepEqual(errors, []);
    await page.close();
  }
});

test('a dark <nanobragg-view>\'s 3D panel is dark, its pressed button readable', { timeout: 240_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/examples/embed.html`, { viewport: { width: 1280, height: 900 } });
  await page.evaluate(() => document.body.insertAdjacentHTML('afterbegin', '<nanobragg-view id="d3" theme="dark" view3d detpixels="256" pixel="0.4" style="width:900px"></nanobragg-view>'));
  await page.waitForFunction(() => document.getElementById('d3')?.shadowRoot?.querySelector('.p3d')?.dataset.points, null, { timeout: 120_000 });
  await page.evaluate(() => document.getElementById('d3').shadowRoot.querySelector('.p3d-near').click());
  await page.waitForTimeout(300);
  const r = await page.evaluate(() => {
    const root = document.getElementById('d3').shadowRoot;
    const cs = (sel) => getComputedStyle(root.querySelector(sel));
    return {
      panel: cs('.p3d').backgroundColor, ink: cs('.p3d').color, info: cs('.p3d-info').color,
      pressed: [cs('.p3d-near').color, cs('.p3d-near').backgroundColor], button: [cs('.p3d-overview').color, cs('.p3d-overview').backgroundColor],
      scene: document.getElementById('d3').teach3d.view.debug.background(),
    };
  });
  await page.evaluate(() => document.getElementById('d3').scrollIntoView());
  await settle(page);
  await page.screenshot({ path: join(ARTIFACTS, 'polish-element-dark.png') });
  console.log(`# dark element: ${JSON.stringify(r)}`);
  const lum = (c) => c.match(/[\d.]+/g).slice(0, 3).reduce((a, x) => a + Number(x), 0) / 3;
  assert.ok(lum(r.panel) < 60, `the panel is dark: ${r.panel}`);
  assert.ok(r.scene.every((c) => c < 80), `the scene is dark: ${r.scene}`);
  assert.ok(contrast(r.ink, r.panel) >= 4.5 && contrast(r.info, r.panel) >= 4.5, JSON.stringify(r));
  assert.ok(contrast(...r.pressed) >= 4.5, `pressed button ${r.pressed}`);
  assert.ok(contrast(...r.button) >= 4.5, `button ${r.button}`);
  assert.deepEqual(errors.filter((e) => !/favicon/.test(e)), []);
  await page.close();
});

test('the pressed Drag button has at least 4.5:1 contrast in both themes', { timeout: 120_000 }, async () => {
  for (const theme of ['dark', 'light']) {
    const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&theme=${theme}`, { viewport: { width: 1280, height: 720 } });
    await waitRendered(page, 1);
    const r = await page.evaluate(() => [...document.querySelectorAll('button[aria-pressed=true]')].map((b) => {
      const cs = getComputedStyle(b);
      return { text: b.textContent.trim(), fg: cs.color, bg: cs.backgroundColor };
    }));
    assert.ok(r.some((b) => b.text === 'Pan'), JSON.stringify(r));
    for (const b of r) assert.ok(contrast(b.fg, b.bg) >= 4.5, `${theme}: ${b.text} ${b.fg} on ${b.bg}: ${contrast(b.fg, b.bg).toFixed(2)}:1`);
    if (theme === 'dark') await page.screenshot({ path: join(ARTIFACTS, 'polish-dark-pan.png'), clip: { x: 340, y: 100, width: 400, height: 50 } });
    assert.deepEqual(errors, []);
    await page.close();
  }
});

test('the preset note says when a slider changed the lesson\'s state, and the preset\'s own title comes back with it', { timeout: 240_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&preset=wavelength`, { viewport: { width: 1280, height: 720 } });
  await waitRendered(page, 1);
  const title = () => page.textContent('#preset-note strong');
  const label = await page.evaluate(() => document.getElementById('preset').selectedOptions[0].text);
  assert.equal(await title(), `${label}. `);
  const n = await page.evaluate(() => Number(document.body.dataset.rendered));
  await page.evaluate(() => {
    const r = document.getElementById('f-lambda-slider');
    r.value = String(Number(r.value) * 1.5);
    r.dispatchEvent(new Event('input', { bubbles: true }));
    r.dispatchEvent(new Event('change', { bubbles: true }));
  });
  await waitRendered(page, n + 1);
  assert.equal(await page.inputValue('#preset'), '', 'the Preset menu no longer names it');
  assert.equal(await title(), `${label}, changed: wavelength. `);
  await page.screenshot({ path: join(ARTIFACTS, 'polish-note-changed.png'), clip: { x: 0, y: 40, width: 340, height: 200 } });
  await page.selectOption('#preset', 'wavelength');
  await page.waitForFunction((l) => document.querySelector('#preset-note strong').textContent === `${l}. `, label);
  assert.deepEqual(errors, []);
  await page.close();
});

test('ring labels stay on the image (a tall detector beside a wide view)', { timeout: 240_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels_f=300&detpixels_s=600&distance=60`, { viewport: { width: 1280, height: 720 } });
  await waitRendered(page, 1);
  await settle(page);
  const r = await page.evaluate(() => {
    const v = window.nanobragg.view;
    return { image: v.imageRect(), boxes: v.drawnBoxes, rings: v.rings.length };
  });
  await page.screenshot({ path: join(ARTIFACTS, 'polish-ring-labels.png') });
  console.log(`# ring labels: ${JSON.stringify(r)}`);
  const im = r.image;
  const [x0, y0, x1, y1] = 'x' in im ? [im.x, im.y, im.x + im.width, im.y + im.height] : [im.x0, im.y0, im.x1, im.y1];
  assert.ok(r.rings >= 2 && r.boxes.length >= 2, JSON.stringify(r));
  for (const b of r.boxes) assert.ok(b[0] >= x0 - 0.5 && b[2] <= x1 + 0.5 && b[1] >= y0 - 0.5 && b[3] <= y1 + 0.5, `a label outside the image ${JSON.stringify({ b, im })}`);
  assert.deepEqual(errors, []);
  await page.close();
});

test('no ring label covers the beam centre\'s cross, zoomed out and in presentation mode', { timeout: 240_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=128`, { viewport: { width: 1280, height: 720 } });
  await waitRendered(page, 1);
  await settle(page);
  const r = await page.evaluate(() => {
    const v = window.nanobragg.view;
    const over = [];
    let labels = 0;
    for (const large of [false, true]) {
      for (let z = 0; z < 12; z++) {
        v.large = large;
        v.fit();
        v.zoomBy(0.85 ** z);
        const [f, s] = v.beamCentre;
        const [x, y] = v.fromDetector(f, s);
        const arm = large ? 16 : 8;
        const cross = [x - arm, y - arm, x + arm, y + arm];
        // the boxes are the ring labels' and the cross's own (the same box)
        const rings = v.drawnBoxes.filter((b) => b.some((c, i) => Math.abs(c - cross[i]) > 1e-6));
        labels += rings.length;
        for (const b of rings) if (b[0] < cross[2] && cross[0] < b[2] && b[1] < cross[3] && cross[1] < b[3]) over.push({ large, z, b, cross });
      }
    }
    v.large = false;
    v.fit();
    return { over, labels };
  });
  assert.ok(r.labels > 20, `ring labels drawn: ${r.labels}`);
  assert.deepEqual(r.over, [], 'a ring label over the beam centre');
  assert.deepEqual(errors, []);
  await page.close();
});

// The ring labels' colour on a colour map's bright middle (viridis's yellow-green under cyan
// text, as the embedding example shows it) read only with a halo: the text's pixels against the
// pixels just around them.
test('ring labels stand out from a bright colour map (viridis): a halo around the text', { timeout: 240_000 }, async () => {
  const q = 'cell=100+100+100+90+90+90&lambda=6.2&N=5&default_F=100&distance=100&detpixels=256&pixel=0.4&misset=10+20+30&cmap=viridis';
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&${q}`, { viewport: { width: 1280, height: 720 } });
  await waitRendered(page, 1);
  await settle(page);
  const r = await page.evaluate(() => {
    const v = window.nanobragg.view;
    v.draw();
    const c = v.canvas, dpr = c.width / c.getBoundingClientRect().width;
    const ctx = c.getContext('2d');
    const lum = (d, i) => {
      const f = (x) => { const u = x / 255; return u <= 0.03928 ? u / 12.92 : ((u + 0.055) / 1.055) ** 2.4; };
      return 0.2126 * f(d[i]) + 0.7152 * f(d[i + 1]) + 0.0722 * f(d[i + 2]);
    };
    const bc = v.beamCentre, [bx, by] = v.fromDetector(bc[0], bc[1]);
    const out = [];
    for (const b of v.drawnBoxes) {
      if (b[0] <= bx && bx <= b[2] && b[1] <= by && by <= b[3]) continue; // the beam centre's box
      const x0 = Math.floor(b[0] * dpr) - 3, y0 = Math.floor(b[1] * dpr) - 3;
      const w = Math.ceil((b[2] - b[0]) * dpr) + 6, h = Math.ceil((b[3] - b[1]) * dpr) + 6;
      const d = ctx.getImageData(x0, y0, w, h).data;
      // the text's pixels: the accent colour (cyan on viridis)
      const text = (i) => Math.abs(d[i] - 56) + Math.abs(d[i + 1] - 217) + Math.abs(d[i + 2] - 245) < 60;
      const ratios = [];
      for (let y = 3; y < h - 3; y++) for (let x = 3; x < w - 3; x++) {
        const i = (y * w + x) * 4;
        if (!text(i)) continue;
        let best = 1;
        for (let dy = -2; dy <= 2; dy++) for (let dx = -2; dx <= 2; dx++) {
          const j = ((y + dy) * w + x + dx) * 4;
          if (text(j)) continue;
          const [a, z] = [lum(d, i), lum(d, j)].sort((p, q) => q - p);
          best = Math.max(best, (a + 0.05) / (z + 0.05));
        }
        ratios.push(best);
      }
      ratios.sort((p, q) => p - q);
      out.push({ box: b.map(Math.round), pixels: ratios.length, median: ratios[ratios.length >> 1] ?? 0 });
    }
    return out;
  });
  console.log(`# ring labels on viridis: ${JSON.stringify(r)}`);
  assert.ok(r.length >= 2, JSON.stringify(r));
  for (const l of r) {
    assert.ok(l.pixels > 10, `a label's text found: ${JSON.stringify(l)}`);
    assert.ok(l.median >= 3, `the label at ${l.box} stands out ${l.median.toFixed(2)}:1 from the pixels around it`);
  }
  await page.screenshot({ path: join(ARTIFACTS, 'polish-ring-labels-viridis.png') });
  assert.deepEqual(errors, []);
  await page.close();
});

test('menu texts fit their menus at 1280 and at 390 px: presets, structure factors, downloads', { timeout: 240_000 }, async () => {
  for (const viewport of [{ width: 1280, height: 720 }, { width: 390, height: 844 }]) {
    const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu`, { viewport });
    await waitRendered(page, 1);
    const r = await page.evaluate(() => {
      const ctx = document.createElement('canvas').getContext('2d');
      const cut = [];
      for (const id of ['preset', 'rl-model']) {
        const sel = document.getElementById(id);
        ctx.font = getComputedStyle(sel).font;
        // the text, the padding and the arrow
        for (const o of sel.options) if (ctx.measureText(o.text).width + 20 > sel.clientWidth) cut.push(`${id}: "${o.text}" (${ctx.measureText(o.text).width.toFixed(0)} px in ${sel.clientWidth})`);
      }
      return cut;
    });
    assert.deepEqual(r, [], `${viewport.width}: cut menu texts`);
    // the download menu, as it is for a realistic still (its longest entries), inside the window
    await page.click('.downloads summary');
    const m = await page.evaluate(() => {
      for (const id of ['dl-int', 'dl-noise', 'dl-cbf']) {
        const b = document.getElementById(id);
        b.hidden = false;
        b.innerHTML = id === 'dl-cbf' ? 'miniCBF (the detector’s format)<small>32-bit counts, module gaps −1</small>'
          : "SMV + the detector's noise<small>16-bit: 1,234,567 pixels above 65,535 clipped</small>";
      }
      const menu = document.querySelector('.downloads .menu').getBoundingClientRect();
      const cut = [...document.querySelectorAll('.downloads .menu button')].filter((b) => b.scrollWidth > b.clientWidth + 1).map((b) => b.textContent);
      return { menu: menu.toJSON(), cut, width: innerWidth };
    });
    await page.screenshot({ path: join(ARTIFACTS, `polish-menus-${viewport.width}.png`) });
    assert.deepEqual(m.cut, [], `${viewport.width}: cut download entries`);
    assert.ok(m.menu.left >= 0 && m.menu.right <= m.width, `${viewport.width}: the download menu leaves the window ${JSON.stringify(m)}`);
    assert.deepEqual(errors, []);
    await page.close();
  }
});
