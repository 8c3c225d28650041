// Every snippet of the embedding guide (docs/embedding.md) and the README's element snippet,
// verbatim, on a page served WITHOUT COOP/COEP with the built site at /nanobragg/ (as their paths
// assume): the <nanobragg-view> element, the iframe embed (renders with its minimal controls), the
// 3D view in both, and the scripting API on the app page.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open, waitRendered, isolationSettled, setup, ROOT, DIST, ARTIFACTS } from './helpers.mjs';

const fence = (text, lang) => [...text.matchAll(new RegExp('```' + lang + '\\n([\\s\\S]*?)```', 'g'))].map((m) => m[1]);
const guide = readFileSync(join(ROOT, 'docs', 'embedding.md'), 'utf8');
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
const html = fence(guide, 'html');
const js = fence(guide, 'js');

const env = setup({
  isolation: false,
  webgpu: false,
  prepare: () => {
    const site = mkdtempSync(join(tmpdir(), 'nb-readme-'));
    symlinkSync(DIST, join(site, 'nanobragg'));
    writeFileSync(join(site, 'element.html'), `<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><title>element</title><body style="width:420px">\n${html[0]}\n</body>`);
    writeFileSync(join(site, 'iframe.html'), `<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><title>iframe</title><body>\n${html[1]}\n</body>`);
    // the element and the iframe inside a page taller than the window, to scroll with the wheel
    const tall = '<div style="height:900px">text above</div>';
    writeFileSync(join(site, 'scroll.html'), `<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><title>scroll</title><body>${tall}\n${html[0]}\n${tall}\n${html[1]}\n${tall}</body>`);
    writeFileSync(join(site, 'view3d.html'), `<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><title>3D</title><script type="module" src="/nanobragg/nanobragg-view.js"></script><body>\n${html[2]}\n</body>`);
    return site;
  },
});

test('the embedding guide has the element, iframe, 3D and API snippets; the README shows the element\'s', () => {
  assert.equal(html.length, 3, 'three html snippets (element, iframe, the 3D view in both)');
  assert.match(html[2], /<nanobragg-view view3d/);
  assert.match(html[2], /<iframe [^>]*view3d=1/);
  assert.match(html[0], /<nanobragg-view /);
  assert.match(html[1], /<iframe /);
  assert.equal(js.length, 1);
  // the README's one browser snippet is the guide's element, rendered below
  assert.deepEqual(fence(readme, 'html'), [html[0]]);
  assert.deepEqual(fence(readme, 'js'), []);
  // every iframe has a title: a screen reader names a frame by it (axe: "frame-title", serious)
  const frames = [...html, ...fence(readme, 'html')].flatMap((h) => h.match(/<iframe\b[^>]*>/g) ?? []);
  assert.equal(frames.length, 2);
  for (const f of frames) assert.match(f, /\stitle="[^"]{8,}"/, `an iframe without a title: ${f}`);
});

test('README <nanobragg-view> snippet renders without cross-origin isolation', { timeout: 120_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/element.html`);
  const r = await page.evaluate(() => new Promise((ok, fail) => {
    const el = document.querySelector('nanobragg-view');
    if (el.result) return ok({ w: el.result.width, backend: el.result.backend });
    el.addEventListener('render', (e) => ok({ w: e.detail.width, backend: e.detail.backend }), { once: true });
    el.addEventListener('error', (e) => fail(new Error(e.detail.message)), { once: true });
  }));
  assert.equal(r.w, 256);
  assert.equal(await page.evaluate(() => crossOriginIsolated), false);
  // the status bar sits below the image, not over it
  const geo = await page.evaluate(() => {
    const root = document.querySelector('nanobragg-view').shadowRoot;
    const c = root.querySelector('canvas').getBoundingClientRect(), b = root.querySelector('.bar').getBoundingClientRect();
    return { canvasBottom: c.bottom, barTop: b.top };
  });
  assert.ok(geo.barTop >= geo.canvasBottom - 0.5, JSON.stringify(geo));
  // a pattern, not a flat square: neither saturated (one colour) nor blank
  const look = await page.evaluate(() => {
    const c = document.querySelector('nanobragg-view').shadowRoot.querySelector('canvas');
    const r = c.getBoundingClientRect();
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    // the image's own area: the drawn pixels of the (square) image in the middle of the canvas
    const side = Math.min(c.width, c.height);
    const x0 = Math.floor((c.width - side) / 2), y0 = Math.floor((c.height - side) / 2);
    const counts = new Map();
    let n = 0, s = 0, s2 = 0;
    for (let y = y0 + 2; y < y0 + side - 2; y += 2) for (let x = x0 + 2; x < x0 + side - 2; x += 2) {
      const i = (y * c.width + x) * 4;
      const key = (d[i] << 16) | (d[i + 1] << 8) | d[i + 2];
      counts.set(key, (counts.get(key) ?? 0) + 1);
      const l = 0.3 * d[i] + 0.59 * d[i + 1] + 0.11 * d[i + 2];
      s += l; s2 += l * l; n++;
    }
    const top = Math.max(...counts.values());
    return { commonest: top / n, colours: counts.size, spread: Math.sqrt(s2 / n - (s / n) ** 2), w: r.width, h: r.height };
  });
  console.log('README element:', JSON.stringify(look));
  assert.ok(look.commonest < 0.6, `one colour covers ${(100 * look.commonest).toFixed(0)} % of the image (saturated or blank)`);
  assert.ok(look.spread > 20 && look.colours > 30, `no pattern: ${JSON.stringify(look)}`);
  // a sensible default size: not the page's full width
  assert.ok(look.w <= 420 && look.w >= 200, `default width ${look.w}`);
  await page.screenshot({ path: join(ARTIFACTS, 'readme-element.png') });
  assert.deepEqual(errors, []);
});

test('the wheel over an unfocused element or iframe scrolls the page; Ctrl+wheel or a focused image zooms', { timeout: 180_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/scroll.html`, { viewport: { width: 1280, height: 720 } });
  await page.waitForFunction(() => document.querySelector('nanobragg-view')?.result, null, { timeout: 90_000 });
  const el = page.locator('nanobragg-view');
  await el.scrollIntoViewIfNeeded();
  const zoomOf = () => page.evaluate(() => document.querySelector('nanobragg-view').shadowRoot.querySelector('canvas') && document.querySelector('nanobragg-view').view.zoom);
  const y0 = await page.evaluate(() => scrollY);
  const z0 = await zoomOf();
  const box = await el.boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await page.mouse.wheel(0, 200);
  await page.waitForFunction((y0) => scrollY > y0, y0, { timeout: 5000 });
  assert.equal(await zoomOf(), z0, 'the unfocused element does not zoom');
  // Ctrl+wheel zooms (a trackpad pinch) and leaves the page where it is
  const b2 = await el.boundingBox();
  await page.mouse.move(b2.x + b2.width / 2, b2.y + b2.height / 2);
  const y1 = await page.evaluate(() => scrollY);
  await page.keyboard.down('Control');
  await page.mouse.wheel(0, -200);
  await page.keyboard.up('Control');
  await page.waitForTimeout(200);
  assert.ok((await zoomOf()) > z0, 'Ctrl+wheel zooms');
  assert.equal(await page.evaluate(() => scrollY), y1);
  // zoom="off": never
  await page.evaluate(() => document.querySelector('nanobragg-view').setAttribute('zoom', 'off'));
  const z1 = await zoomOf();
  await page.keyboard.down('Control');
  await page.mouse.wheel(0, -200);
  await page.keyboard.up('Control');
  await page.waitForTimeout(200);
  assert.equal(await zoomOf(), z1, 'zoom="off"');
  // the iframe: the page scrolls over it too
  const frameEl = page.locator('iframe');
  await frameEl.scrollIntoViewIfNeeded();
  const frame = await (await frameEl.elementHandle()).contentFrame();
  await frame.waitForFunction(() => Number(document.body.dataset.rendered ?? 0) >= 1, null, { timeout: 90_000 });
  const fb = await frameEl.boundingBox();
  const y2 = await page.evaluate(() => scrollY);
  await page.mouse.move(fb.x + fb.width / 2, fb.y + fb.height / 2);
  await page.mouse.wheel(0, 200);
  await page.waitForFunction((y) => scrollY > y, y2, { timeout: 5000 });
  assert.deepEqual(errors, []);
});

test('README iframe snippet renders with the minimal controls', { timeout: 120_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/iframe.html`);
  const frame = page.frames().find((f) => f.url().includes('embed=1')) ?? (await (await page.waitForSelector('iframe')).contentFrame());
  await frame.waitForFunction(() => Number(document.body.dataset.rendered ?? 0) >= 1 || document.body.dataset.error, null, { timeout: 90_000 });
  const st = await frame.evaluate(() => ({
    error: document.getElementById('error').hidden ? '' : document.getElementById('error').textContent,
    aside: getComputedStyle(document.getElementById('controls')).display,
    toolbar: getComputedStyle(document.querySelector('.toolbar')).display,
    cmap: getComputedStyle(document.getElementById('cmap')).display,
    notice: document.getElementById('notice').hidden,
    width: window.nanobragg.lastRender().result?.width,
    openFull: document.getElementById('open-full').getAttribute('href'),
  }));
  assert.equal(st.error, '', 'renders (no "no structure factors")');
  assert.equal(st.aside, 'none', 'no parameter panel');
  assert.notEqual(st.toolbar, 'none', 'a minimal toolbar');
  assert.notEqual(st.cmap, 'none');
  assert.equal(st.notice, true, 'no notices in an embed');
  assert.equal(st.width, 512);
  assert.match(st.openFull, /lambda=6\.2/);
  await page.screenshot({ path: join(ARTIFACTS, 'readme-iframe.png') });
  assert.deepEqual(errors, []);
});

test('README 3D snippet: the element and the iframe open the 3D view (no isolation)', { timeout: 180_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/view3d.html`, { viewport: { width: 1280, height: 1200 } });
  await page.waitForFunction(() => document.querySelector('nanobragg-view')?.shadowRoot?.querySelector('.p3d')?.dataset.points, null, { timeout: 120_000 });
  const frame = await (await page.waitForSelector('iframe')).contentFrame();
  await frame.waitForFunction(() => document.querySelector('.p3d')?.dataset.points, null, { timeout: 120_000 });
  const n = await frame.evaluate(() => window.nanobragg.teach3d.view.debug.counts());
  assert.ok(n.points > 1000 && n.spheres >= 1, JSON.stringify(n));
  // the element's hkl labels (a 450-px image): none over another label, another labelled spot's
  // ring, a resolution ring's label or the beam centre
  await page.waitForFunction(() => document.querySelector('nanobragg-view').teach3d?.spots.lastLabels.length >= 5, null, { timeout: 60_000 });
  const drawn = await page.evaluate(() => {
    const el = document.querySelector('nanobragg-view');
    return { labels: el.teach3d.spots.lastLabels, other: el.view.drawnBoxes };
  });
  const meet = (a, b) => a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3];
  for (const [i, a] of drawn.labels.entries()) {
    for (const o of drawn.other) assert.ok(!meet(a.box, o), `label ${a.hkl} over a ring label or the beam centre ${o}`);
    for (const [j, b] of drawn.labels.entries()) {
      if (i === j) continue;
      assert.ok(!meet(a.box, b.box), `labels ${a.hkl} and ${b.hkl} overlap`);
      assert.ok(!meet(a.box, [b.x - 6, b.y - 6, b.x + 6, b.y + 6]), `label ${a.hkl} over the spot ${b.hkl}`);
    }
  }
  await page.screenshot({ path: join(ARTIFACTS, 'readme-view3d.png') });
  assert.deepEqual(errors, []);
});

test('README scripting snippet runs verbatim on the app page (no isolation)', { timeout: 120_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/nanobragg/index.html?detpixels=64`);
  // the first visit of the app on this header-less host: its service worker reloads it once
  await isolationSettled(page);
  await waitRendered(page, 1);
  const r = await page.evaluate(`(async () => { ${js[0]}; return { w: r.width, h: r.height, n: r.data.length, backend: r.backend, sum: r.data.reduce((a, b) => a + b, 0) }; })()`);
  assert.equal(r.n, r.w * r.h);
  assert.ok(r.w > 0 && r.sum > 0, JSON.stringify(r));
  assert.deepEqual(errors, []);
});

test('?detpixels=1024 alone renders the default crystal on a 1024² detector', { timeout: 120_000 }, async () => {
  const { page } = await open(env.ctx, `${env.base}/nanobragg/index.html?detpixels=1024`);
  await isolationSettled(page);
  await waitRendered(page, 1);
  const st = await page.evaluate(() => ({ w: window.nanobragg.lastRender().result.width, err: document.getElementById('error').hidden }));
  assert.deepEqual(st, { w: 1024, err: true });
});
