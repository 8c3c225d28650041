// The 3D view in the app (www/src/panel3d.ts, spots.ts, predictfeed.ts): it opens beside the
// image on a page without WebGPU (CPU backend), shows the Ewald sphere and the crate's lattice,
// is linked both ways with the image (a spot hovered on the image lights its lattice point; a
// point hovered in 3D rings its spot), Shift+drag in 3D turns the crystal (misset in the URL,
// a new image), hkl labels on the strongest spots, and the element's `view3d` attribute and the
// iframe's ?view3d=1. Screenshots: tests/artifacts/teach3d-*.png; the 3D frame rate while
// orbiting with the app's own points: tests/artifacts/teach3d-fps.json.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { readFileSync, writeFileSync } from 'node:fs';
import { open, waitRendered, ARTIFACTS, DIST, setup } from './helpers.mjs';

const env = setup({ webgpu: false });

/** Open the app and its 3D view (by the toolbar button unless the URL asks for it). */
async function openApp(query, { viewport, click = true } = {}) {
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu${query}`, { viewport });
  await waitRendered(page, 1);
  if (click) await page.click('#view3d');
  await page.waitForFunction(() => document.querySelector('.p3d')?.dataset.points || document.querySelector('.p3d')?.dataset.error, null, { timeout: 120_000 });
  assert.equal(await page.evaluate(() => document.querySelector('.p3d').dataset.error), undefined);
  return { page, errors };
}

const settle = (page) => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));

/** CSS position on the page of a predicted spot (the strongest n-th), with its hkl. */
async function spotOnPage(page, n = 0) {
  const s = await page.evaluate((n) => {
    const t = window.nanobragg.teach3d;
    const spot = t.spots.strongest(n + 1)[n];
    const [x, y] = window.nanobragg.view.fromDetector(spot.fast, spot.slow);
    return { hkl: spot.hkl, x, y, fast: spot.fast, slow: spot.slow };
  }, n);
  const box = await page.locator('#canvas-host .nb-canvas').boundingBox();
  return { ...s, px: box.x + s.x, py: box.y + s.y };
}

test('the 3D view opens beside the image with the Ewald sphere and the crate\'s lattice (no WebGPU)', { timeout: 240_000 }, async () => {
  const { page, errors } = await openApp('');
  const r = await page.evaluate(async () => {
    const t = window.nanobragg.teach3d;
    const built = window.nanobragg.lastRender().result.args;
    // the crate's prediction, asked independently through the page's API
    const p = await window.nanobragg.predict(built);
    return {
      counts: t.view.debug.counts(), gl: t.view.debug.gl(), predicted: p.reflections.length,
      inCondition: p.reflections.filter((x) => x.in_condition).length,
      url: location.href, backend: window.nanobragg.lastRender().result.backend,
      image: document.querySelector('#canvas-host').getBoundingClientRect().toJSON(),
      panel: document.querySelector('.p3d').getBoundingClientRect().toJSON(),
      chunks: performance.getEntriesByType('resource').map((e) => e.name).filter((n) => /chunks\//.test(n)),
    };
  });
  console.log(`# 3D view: ${JSON.stringify({ counts: { ...r.counts, labels: r.counts.labels.length }, predicted: r.predicted, gl: r.gl })}`);
  assert.equal(r.backend, 'cpu');
  assert.equal(r.counts.points, r.predicted, 'every predicted lattice point is drawn');
  assert.ok(r.counts.points > 1000, `points ${r.counts.points}`);
  assert.equal(r.counts.inCondition, r.inCondition);
  assert.ok(r.counts.inCondition > 10, `in condition ${r.counts.inCondition}`);
  assert.ok(r.counts.spheres >= 1, 'the Ewald sphere is drawn');
  assert.equal(r.counts.detector, true);
  for (const l of ['a*', 'b*', 'c*']) assert.ok(r.counts.labels.some((x) => x.startsWith(l)), `label ${l}`);
  assert.match(r.url, /[?&]view3d=1/);
  // three.js came as a lazily loaded chunk
  assert.ok(r.chunks.some((n) => /chunks\/view3d-/.test(n)), r.chunks.join(' '));
  const app = readFileSync(join(DIST, 'app.js'), 'utf8');
  assert.ok(!app.includes('WebGLRenderer'), `app.js (${app.length} bytes) must not carry three.js`);
  // side by side at 1280×720, neither squashed
  assert.ok(r.panel.x >= r.image.x + r.image.width - 2, JSON.stringify(r));
  assert.ok(r.image.width > 350 && r.panel.width > 350, JSON.stringify(r));
  await settle(page);
  await page.screenshot({ path: join(ARTIFACTS, 'teach3d-app-1280.png') });
  // the c* label is not under the spindle's (c* of the unrotated cell lies on the spindle)
  const hit = await page.evaluate(() => {
    const ls = [...document.querySelectorAll('.p3d .nbr-label')].filter((e) => e.offsetParent && e.style.display !== 'none');
    const box = (re) => ls.find((e) => re.test(e.textContent))?.getBoundingClientRect();
    const a = box(/^c\*/), b = box(/^φ axis$/);
    if (!a || !b) return `missing: c* ${!!a}, φ axis ${!!b}`;
    const overlap = Math.max(0, Math.min(a.right, b.right) - Math.max(a.left, b.left)) * Math.max(0, Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top));
    return overlap;
  });
  assert.equal(hit, 0, `c* and φ axis labels overlap: ${hit}`);
  // closes and reopens; the URL follows
  await page.click('.p3d-close');
  await page.waitForFunction(() => !document.querySelector('.p3d') && !/view3d=/.test(location.href));
  assert.equal(await page.getAttribute('#view3d', 'aria-pressed'), 'false');
  await page.keyboard.press('3');
  await page.waitForFunction(() => document.querySelector('.p3d')?.dataset.points);
  assert.deepEqual(errors, []);
});

test('hovering a spot on the image lights its lattice point; hovering a lattice point rings its spot', { timeout: 240_000 }, async () => {
  const { page, errors } = await openApp('');
  const spot = await spotOnPage(page, 0);
  await page.mouse.move(spot.px + 1, spot.py + 1);
  await page.waitForFunction((h) => document.querySelector('.p3d').dataset.highlight === h, spot.hkl.join(' '), { timeout: 10_000 });
  await page.waitForFunction(() => /^d = /.test(document.getElementById('readout').textContent), null, { timeout: 10_000 });
  const lit = await page.evaluate(() => {
    const t = window.nanobragg.teach3d;
    return {
      highlighted: t.highlighted, info: document.querySelector('.p3d-info').textContent,
      readout: document.getElementById('readout').textContent,
      labels: t.view.debug.counts().labels,
    };
  });
  assert.deepEqual(lit.highlighted, spot.hkl);
  // the page shows hkl, d, 2θ and the excitation error of that reflection
  assert.match(lit.info, new RegExp(`\\(${spot.hkl.map((x) => String(x).replace('-', '−')).join(' ')}\\)\\s+d = [\\d.]+ Å\\s+2θ = [\\d.]+°\\s+ε = \\S+ Å⁻¹`));
  // the 3D view's own label names the same point
  assert.ok(lit.labels.some((l) => l.includes(`(${spot.hkl.join(' ')})`)), lit.labels.join(' | '));
  // and the cursor readout (the crate's per-pixel geometry) agrees on the hkl
  assert.match(lit.readout, new RegExp(`hkl ≈ \\(${spot.hkl.join(' ')}\\)`));
  await page.screenshot({ path: join(ARTIFACTS, 'teach3d-hover-image.png') });
  await page.mouse.move(5, 5);
  await page.waitForFunction(() => !document.querySelector('.p3d').dataset.highlight);

  // the other way: a point in 3D -> its spot ringed on the image
  const target = (await spotOnPage(page, 3)).hkl;
  const p3 = await page.evaluate((hkl) => {
    const v = window.nanobragg.teach3d.view;
    v.resetCamera('lattice');
    const i = v.debug.indexOf(hkl);
    return v.debug.project(i);
  }, target);
  await settle(page);
  const canvasBox = await page.locator('.p3d-view canvas').boundingBox();
  await page.mouse.move(canvasBox.x + p3.x, canvasBox.y + p3.y);
  await page.waitForFunction(() => document.querySelector('.p3d').dataset.hover, null, { timeout: 10_000 });
  await settle(page);
  const marked = await page.evaluate(() => {
    const t = window.nanobragg.teach3d;
    const m = t.spots.markedSpot;
    if (!m) return { hover: document.querySelector('.p3d').dataset.hover, m: null };
    const [x, y] = window.nanobragg.view.fromDetector(m.fast, m.slow);
    // the ring drawn around it: the marker colour on a circle of radius 11 px around the spot
    const c = window.nanobragg.view.canvas;
    const dpr = c.width / c.clientWidth;
    const d = c.getContext('2d').getImageData(Math.round((x - 16) * dpr), Math.round((y - 16) * dpr), Math.round(32 * dpr), Math.round(32 * dpr)).data;
    let hot = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i] > 180 && d[i + 1] > 50 && d[i + 1] < 120 && d[i + 2] < 60) hot++;
    return { hover: document.querySelector('.p3d').dataset.hover, m: m.hkl.join(' '), hot };
  });
  console.log(`# 3D hover: aimed at (${target.join(' ')}), hovered (${marked.hover}), ringed (${marked.m}), ring pixels ${marked.hot}`);
  assert.equal(marked.m, marked.hover, 'the hovered lattice point\'s spot is ringed');
  assert.ok(marked.hot > 20, `ring pixels ${marked.hot}`);
  await page.screenshot({ path: join(ARTIFACTS, 'teach3d-hover-3d.png') });
  // the 3D view's hover box stays inside the view for spots all over the image (it ran off the
  // right edge for points near it)
  await page.evaluate(() => window.nanobragg.teach3d.view.resetCamera('overview'));
  const outside = [];
  for (let n = 0; n < 12; n++) {
    const s = await spotOnPage(page, n);
    await page.mouse.move(s.px + 1, s.py + 1);
    await page.waitForFunction((h) => document.querySelector('.p3d').dataset.highlight === h, s.hkl.join(' '), { timeout: 10_000 });
    await settle(page);
    const r = await page.evaluate(() => {
      const b = document.querySelector('.nbr-label.info').getBoundingClientRect();
      const c = document.querySelector('.p3d-view canvas').getBoundingClientRect();
      return { left: b.left - c.left, right: c.right - b.right };
    });
    if (r.left < 0 || r.right < 0) outside.push({ hkl: s.hkl.join(' '), ...r });
  }
  assert.deepEqual(outside, [], 'hover boxes cut by the view\'s edge');
  assert.deepEqual(errors, []);
});

test('Shift+drag in the 3D view turns the crystal: misset in the URL, a new image, the lattice follows; Alt+drag spins it', { timeout: 240_000 }, async () => {
  const { page, errors } = await openApp('');
  const before = await page.evaluate(() => ({
    count: window.nanobragg.lastRender().count, data: Array.from(window.nanobragg.lastRender().result.data.slice(0, 1 << 16)),
    misset: new URL(location.href).searchParams.get('misset'), updates: window.nanobragg.teach3d.stats.updates,
    a: window.nanobragg.teach3d.feed.current.data.axes.a,
  }));
  assert.ok(!before.misset, `no misset at first (${before.misset})`);
  const box = await page.locator('.p3d-view canvas').boundingBox();
  const x0 = box.x + box.width * 0.5, y0 = box.y + box.height * 0.45;
  await page.mouse.move(x0, y0);
  await page.keyboard.down('Shift');
  await page.mouse.down();
  for (let i = 1; i <= 12; i++) await page.mouse.move(x0 + 6 * i, y0 + 2 * i);
  await page.mouse.up();
  await page.keyboard.up('Shift');
  await page.waitForFunction(() => /^-?[\d.]+ -?[\d.]+ -?[\d.]+$/.test(new URL(location.href).searchParams.get('misset') ?? ''), null, { timeout: 10_000 });
  // the full image of the new orientation
  await page.waitForFunction((n) => {
    const l = window.nanobragg.lastRender();
    return l.count > n && !l.preview && l.result.args.join(' ').includes(`-misset ${window.nanobragg.state().misset}`);
  }, before.count, { timeout: 120_000 });
  await page.waitForFunction((u) => window.nanobragg.teach3d.stats.updates > u && !window.nanobragg.teach3d.feed.busy, before.updates, { timeout: 60_000 });
  const after = await page.evaluate(() => ({
    data: Array.from(window.nanobragg.lastRender().result.data.slice(0, 1 << 16)),
    misset: window.nanobragg.state().misset, field: document.getElementById('f-misset').value,
    a: window.nanobragg.teach3d.feed.current.data.axes.a,
  }));
  console.log(`# misset after the drag: ${after.misset}`);
  const angles = after.misset.split(' ').map(Number);
  assert.ok(angles.some((x) => Math.abs(x) > 1), after.misset);
  assert.equal(after.field, after.misset);
  let diff = 0;
  for (let i = 0; i < after.data.length; i++) diff += Math.abs(after.data[i] - before.data[i]);
  assert.ok(diff > 0, 'the image changed');
  // the lattice drawn in 3D turned with it (a* of the new prediction)
  const turned = Math.hypot(...after.a.map((x, i) => x - before.a[i])) / Math.hypot(...before.a);
  assert.ok(turned > 0.01, `a* moved by ${turned}`);
  await page.screenshot({ path: join(ARTIFACTS, 'teach3d-turned.png') });
  // Alt+drag spins the crystal about the line of sight: the misset changes again
  await page.mouse.move(x0 + 60, y0 - 40);
  await page.keyboard.down('Alt');
  await page.mouse.down();
  for (let i = 1; i <= 10; i++) await page.mouse.move(x0 + 60 - 8 * i, y0 - 40 + 3 * i);
  await page.mouse.up();
  await page.keyboard.up('Alt');
  await page.waitForFunction((m) => {
    const v = new URL(location.href).searchParams.get('misset');
    return v && v !== m && /^-?[\d.]+ -?[\d.]+ -?[\d.]+$/.test(v);
  }, after.misset, { timeout: 10_000 });
  assert.deepEqual(errors, []);
});

test('hkl labels on the strongest spots: toggle, URL, drawn', { timeout: 240_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu`);
  await waitRendered(page, 1);
  assert.equal(await page.evaluate(() => window.nanobragg.teach3d.spots.lastLabels.length), 0);
  await page.check('#labels');
  await page.waitForFunction(() => window.nanobragg.teach3d.spots.lastLabels.length >= 5, null, { timeout: 60_000 });
  await page.waitForFunction(() => new URL(location.href).searchParams.get('labels') === '1');
  const r = await page.evaluate(() => {
    const t = window.nanobragg.teach3d;
    const strongest = t.spots.strongest(200).map((s) => s.hkl.join(' '));
    const c = window.nanobragg.view.canvas;
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let ink = 0; // the label colour (#1546a8) on the inverted-grey map
    for (let i = 0; i < d.length; i += 4) if (Math.abs(d[i] - 0x15) < 30 && Math.abs(d[i + 1] - 0x46) < 30 && Math.abs(d[i + 2] - 0xa8) < 30) ink++;
    return { labels: t.spots.lastLabels.map((l) => l.hkl.join(' ')), strongest, ink };
  });
  console.log(`# labels: ${r.labels.slice(0, 8).join(', ')}… (${r.labels.length}), ink pixels ${r.ink}`);
  for (const l of r.labels) assert.ok(r.strongest.includes(l), `label ${l} is a strong predicted spot`);
  assert.ok(r.ink > 200, `label pixels ${r.ink}`);
  await page.screenshot({ path: join(ARTIFACTS, 'teach3d-labels.png') });
  await page.uncheck('#labels');
  await page.waitForFunction(() => window.nanobragg.teach3d.spots.lastLabels.length === 0);
  // persisted like the other view settings: a link with labels=1 shows them
  const again = await open(env.ctx, `${env.base}/?backend=cpu&labels=1`);
  await waitRendered(again.page, 1);
  await again.page.waitForFunction(() => window.nanobragg.teach3d.spots.lastLabels.length >= 5, null, { timeout: 60_000 });
  assert.equal(await again.page.isChecked('#labels'), true);
  assert.deepEqual([...errors, ...again.errors], []);
});

test('layouts: 1920×1080 protein preset, dark theme, presentation mode, narrow window stacked', { timeout: 300_000 }, async () => {
  const shots = [
    ['teach3d-protein-1920.png', '&preset=protein&labels=1', { width: 1920, height: 1080 }],
    ['teach3d-dark-1280.png', '&theme=dark&labels=1', { width: 1280, height: 720 }],
    ['teach3d-present-1920.png', '&present=1&theme=dark&labels=1', { width: 1920, height: 1080 }],
    ['teach3d-narrow-800.png', '', { width: 800, height: 1000 }],
  ];
  for (const [name, q, viewport] of shots) {
    const { page, errors } = await openApp(`${q}&view3d=1`, { viewport, click: false });
    const r = await page.evaluate(() => ({
      image: document.querySelector('#canvas-host').getBoundingClientRect().toJSON(),
      panel: document.querySelector('.p3d').getBoundingClientRect().toJSON(),
      stacked: document.getElementById('stage').classList.contains('stacked'),
      bg: window.nanobragg.teach3d.view.debug.background(),
    }));
    if (/narrow/.test(name)) {
      assert.equal(r.stacked, true);
      assert.ok(r.panel.y >= r.image.y + r.image.height - 2, JSON.stringify(r));
    } else {
      assert.equal(r.stacked, false);
      assert.ok(r.image.width > 0.3 * viewport.width && r.panel.width > 0.3 * viewport.width, JSON.stringify(r));
    }
    if (/dark/.test(q)) assert.ok(r.bg.every((c) => c < 80), `dark 3D background ${r.bg}`);
    await settle(page);
    await page.screenshot({ path: join(ARTIFACTS, name) });
    assert.deepEqual(errors, [], name);
    await page.close();
  }
});

test('<nanobragg-view view3d> and the iframe\'s ?embed=1&view3d=1 open the 3D view', { timeout: 240_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/examples/embed.html`, { viewport: { width: 1280, height: 900 } });
  await page.evaluate(() => {
    document.body.insertAdjacentHTML('afterbegin', '<nanobragg-view id="v3" view3d labels detpixels="256" pixel="0.4" style="width:900px"></nanobragg-view>');
  });
  await page.waitForFunction(() => document.getElementById('v3')?.shadowRoot?.querySelector('.p3d')?.dataset.points, null, { timeout: 120_000 });
  // the labels follow the prediction of the element's full image (not of its previews)
  await page.waitForFunction(() => document.getElementById('v3').teach3d?.spots.lastLabels.length > 0, null, { timeout: 60_000 })
    .catch(() => {});
  const r = await page.evaluate(() => {
    const el = document.getElementById('v3');
    const t = el.teach3d;
    return { counts: t.view.debug.counts(), labels: t.spots.lastLabels.length, styled: !!el.shadowRoot.querySelector('#nbr-recip-style') };
  });
  assert.ok(r.counts.points > 1000 && r.counts.spheres >= 1, JSON.stringify(r.counts));
  assert.ok(r.labels > 0, 'labels attribute');
  assert.equal(r.styled, true);
  // the page's other elements still render on the shared worker
  await page.waitForFunction(() => ['v1', 'v2'].every((id) => document.getElementById(id).result), null, { timeout: 120_000 });
  // closing it removes the attribute
  await page.evaluate(() => document.getElementById('v3').scrollIntoView());
  await page.screenshot({ path: join(ARTIFACTS, 'teach3d-element.png') });
  await page.evaluate(() => document.getElementById('v3').shadowRoot.querySelector('.p3d-close').click());
  await page.waitForFunction(() => !document.getElementById('v3').hasAttribute('view3d'));
  // the iframe embed
  const frame = await open(env.ctx, `${env.base}/?embed=1&backend=cpu&view3d=1`, { viewport: { width: 900, height: 520 } });
  await frame.page.waitForFunction(() => document.querySelector('.p3d')?.dataset.points, null, { timeout: 120_000 });
  await settle(frame.page);
  await frame.page.screenshot({ path: join(ARTIFACTS, 'teach3d-iframe.png') });
  assert.deepEqual([...errors, ...frame.errors].filter((e) => !/favicon/.test(e)), []);
});

// A measurement, not a check (speed is recorded in docs/benchmarks.md, not asserted): run it with
// NANOBRAGG_BENCH=1 node --test tests/browser/teach3d.test.mjs
test('frame rate of the 3D view while orbiting, with the app\'s own points (default and protein presets) (NANOBRAGG_BENCH=1)', { timeout: 300_000, skip: !process.env.NANOBRAGG_BENCH }, async () => {
  const out = {};
  for (const [name, q] of [['default', ''], ['protein', '&preset=protein']]) {
    const { page } = await openApp(`${q}&view3d=1`, { click: false });
    const r = await page.evaluate(async () => {
      const t = window.nanobragg.teach3d;
      const dbg = t.view.debug;
      const near = document.querySelector('.p3d-near').getAttribute('aria-pressed') === 'true';
      const c = dbg.counts();
      const overview = await dbg.measureFps(3000);
      t.view.resetCamera('lattice');
      const lattice = await dbg.measureFps(3000);
      const r = { points: c.points, visible: c.visible, near, overview, lattice, pickMs: dbg.timePick(), updateMs: t.stats.updateMs, predictMs: t.stats.predictMs, gl: dbg.gl() };
      if (near) {
        // and with every point shown
        t.setNear(false);
        t.view.resetCamera('overview');
        r.all = { visible: dbg.counts().visible, overview: await dbg.measureFps(3000), pickMs: dbg.timePick() };
        t.setNear(true);
        t.view.resetCamera('lattice');
      }
      return r;
    });
    // turning the crystal by Shift+drag in 3D for 3 s: image frames and 3D updates per second
    await page.evaluate(() => {
      window.__frames = 0;
      window.addEventListener('nanobragg-frame', () => window.__frames++);
      window.__u0 = window.nanobragg.teach3d.stats.updates;
      const f = window.nanobragg.teach3d.feed;
      window.__f0 = { sent: f.sent, requested: f.requested };
    });
    const box = await page.locator('.p3d-view canvas').boundingBox();
    const x0 = box.x + box.width * 0.3, y0 = box.y + box.height * 0.5;
    await page.mouse.move(x0, y0);
    await page.keyboard.down('Shift');
    await page.mouse.down();
    const t0 = Date.now();
    let steps = 0;
    while (Date.now() - t0 < 3000) {
      steps++;
      await page.mouse.move(x0 + 40 * Math.sin(steps / 10), y0 + 30 * Math.cos(steps / 13));
      await new Promise((res) => setTimeout(res, 16));
    }
    const dragS = (Date.now() - t0) / 1000;
    const during = await page.evaluate(() => {
      const f = window.nanobragg.teach3d.feed;
      return { frames: window.__frames, updates: window.nanobragg.teach3d.stats.updates - window.__u0, sent: f.sent - window.__f0.sent, requested: f.requested - window.__f0.requested };
    });
    await page.mouse.up();
    await page.keyboard.up('Shift');
    // when the drag ends the whole lattice is predicted again
    await page.waitForFunction((n) => window.nanobragg.teach3d.view.debug.counts().points === n && !window.nanobragg.teach3d.feed.busy, r.points, { timeout: 60_000 });
    r.drag = { seconds: dragS, moves: steps, imageFps: during.frames / dragS, updatesPerS: during.updates / dragS, predictionsSent: during.sent, predictionsRequested: during.requested };
    console.log(`# ${name}, Shift+drag in 3D for ${dragS.toFixed(1)} s (${steps} moves): ${r.drag.imageFps.toFixed(1)} image frames/s, ${r.drag.updatesPerS.toFixed(1)} 3D updates/s, predictions: ${during.sent} sent of ${during.requested} asked (one in flight, the latest wins)`);
    assert.ok(during.frames > 0 && during.updates > 0, JSON.stringify(during));
    assert.ok(during.sent <= during.requested, JSON.stringify(during));
    out[name] = r;
    console.log(`# ${name}: ${r.points} points (${r.visible} shown${r.near ? ', near the sphere only' : ''}), orbit ${r.overview.fps.toFixed(1)} fps (overview), ${r.lattice.fps.toFixed(1)} fps (lattice), pick ${r.pickMs.toFixed(1)} ms, prediction ${r.predictMs.toFixed(0)} ms, update ${r.updateMs.toFixed(0)} ms, ${r.gl.name}`);
    if (r.all) console.log(`# ${name}, every point shown (${r.all.visible}): orbit ${r.all.overview.fps.toFixed(1)} fps (overview), pick ${r.all.pickMs.toFixed(1)} ms`);
    if (name === 'protein') assert.equal(r.near, true, 'a protein lattice starts with the points near the sphere');
    assert.ok(r.overview.frames > 0 && r.lattice.frames > 0);
    await page.close();
  }
  writeFileSync(join(ARTIFACTS, 'teach3d-fps.json'), JSON.stringify(out, null, 2));
});

test('the camera fits the sphere and the lattice when λ changes them (the wavelength lesson)', { timeout: 240_000 }, async () => {
  const { page, errors } = await openApp('&preset=wavelength');
  await settle(page);
  const look = () => page.evaluate(() => {
    const d = window.nanobragg.teach3d.view.debug;
    const c = d.camera(), s = d.scene();
    const dist = Math.hypot(...c.position.map((x, i) => x - c.target[i]));
    // the sphere's top and bottom on screen: inside the view, not a dot
    const top = d.projectPoint(s.center.map((x, i) => x + s.radius * s.up[i]));
    const bottom = d.projectPoint(s.center.map((x, i) => x - s.radius * s.up[i]));
    const h = document.querySelector('.p3d canvas').clientHeight;
    return { dist, radius: s.radius, span: top && bottom ? Math.abs(bottom.y - top.y) / h : 0 };
  });
  const at2 = await look();
  const updates = await page.evaluate(() => window.nanobragg.teach3d.stats.updates);
  await page.fill('#f-lambda', '6');
  await page.press('#f-lambda', 'Enter');
  await page.waitForFunction((u) => window.nanobragg.teach3d.stats.updates > u && !window.nanobragg.teach3d.feed.busy, updates, { timeout: 60_000 });
  await page.waitForFunction((r) => window.nanobragg.teach3d.view.debug.scene().radius < r * 0.5, at2.radius, { timeout: 60_000 });
  await settle(page);
  const at6 = await look();
  console.log(`# camera: λ 2 Å ${JSON.stringify(at2)}, λ 6 Å ${JSON.stringify(at6)}`);
  assert.ok(at6.dist < 0.6 * at2.dist, `the camera came closer for the smaller sphere: ${at2.dist} -> ${at6.dist}`);
  assert.ok(at6.span > 0.25 && at6.span < 1.05, `the sphere fills the view: ${at6.span}`);
  assert.deepEqual(errors, []);
});

// issue 31: the camera used to re-frame on every frame of a λ slider drag, so the sphere never
// visibly shrank ("watch the sphere shrink"); it now holds still while the slider is held and
// frames the scene again on release.
test('while the λ slider is dragged the camera holds still and the sphere shrinks on screen; it re-frames on release', { timeout: 240_000 }, async () => {
  const { page, errors } = await openApp('&preset=wavelength');
  await settle(page);
  const look = () => page.evaluate(() => {
    const d = window.nanobragg.teach3d.view.debug;
    const c = d.camera(), s = d.scene();
    const top = d.projectPoint(s.center.map((x, i) => x + s.radius * s.up[i]));
    const bottom = d.projectPoint(s.center.map((x, i) => x - s.radius * s.up[i]));
    return { dist: Math.hypot(...c.position.map((x, i) => x - c.target[i])), radius: s.radius, px: top && bottom ? Math.abs(bottom.y - top.y) : 0 };
  });
  const before = await look();
  // the points are coloured by the crate's peak column (one quantity for every point)
  const pk = await page.evaluate(() => { const t = window.nanobragg.teach3d.feed.current.data.reflections; return { n: t.count, peak: t.peak?.length ?? 0 }; });
  assert.ok(pk.n > 100 && pk.peak === pk.n, `the crate's peak column reaches the 3D view: ${JSON.stringify(pk)}`);
  const lambda0 = Number(await page.inputValue('#f-lambda'));
  // a drag: 'input' events (previews), the pointer still down
  const frames = [];
  for (const k of [1.3, 1.7, 2.2]) {
    const updates = await page.evaluate(() => window.nanobragg.teach3d.stats.updates);
    await page.evaluate((v) => {
      const r = document.getElementById('f-lambda-slider');
      r.value = String(v);
      r.dispatchEvent(new Event('input', { bubbles: true }));
    }, lambda0 * k);
    await page.waitForFunction((u) => window.nanobragg.teach3d.stats.updates > u && !window.nanobragg.teach3d.feed.busy, updates, { timeout: 60_000 });
    await settle(page);
    frames.push(await look());
  }
  await page.screenshot({ path: join(ARTIFACTS, 'teach3d-lambda-drag.png') });
  console.log(`# λ drag: before ${JSON.stringify(before)}, frames ${JSON.stringify(frames)}`);
  for (const f of frames) assert.ok(Math.abs(f.dist / before.dist - 1) < 1e-6, `the camera held still: ${before.dist} -> ${f.dist}`);
  assert.ok(frames[2].radius < 0.5 * before.radius, `λ ×2.2 shrank the sphere: ${before.radius} -> ${frames[2].radius}`);
  assert.ok(frames[2].px < 0.55 * before.px && frames[0].px > frames[1].px && frames[1].px > frames[2].px,
    `the sphere shrinks on screen during the drag: ${before.px} ${frames.map((f) => f.px)}`);
  // release: 'change' frames the smaller sphere again
  await page.evaluate(() => document.getElementById('f-lambda-slider').dispatchEvent(new Event('change', { bubbles: true })));
  await page.waitForFunction((d) => {
    const c = window.nanobragg.teach3d.view.debug.camera();
    return Math.hypot(...c.position.map((x, i) => x - c.target[i])) < 0.6 * d;
  }, before.dist, { timeout: 60_000 });
  await settle(page);
  const after = await look();
  assert.ok(after.px > 0.6 * before.px, `re-framed on release: ${JSON.stringify(after)}`);
  await page.screenshot({ path: join(ARTIFACTS, 'teach3d-lambda-release.png') });
  assert.deepEqual(errors, []);
});
