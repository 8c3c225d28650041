// The reciprocal-space view (www/src/recip/) through its standalone demo (www/recip-demo.html,
// built here by scripts/build-recip.mjs; no wasm needed): WebGL2 in headless Debian chromium
// (SwiftShader: CPU emulation). Renders, shows the sphere and the lattice, hover reports the hkl
// under the cursor, highlight() changes a point's pixels, mouse orbit moves the camera, the
// detector panel's Shift/Alt+drag turns the crystal, dispose() frees. Screenshots go to
// tests/artifacts/recip-*.png; the frame rate with ~10^5 points to tests/artifacts/recip-fps.json.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { launch, serve, open, ARTIFACTS } from './helpers.mjs';
import { buildRecip } from '../../scripts/build-recip.mjs';

let server, base, ctx, sizes;
before(async () => {
  sizes = await buildRecip({ quiet: true });
  const s = await serve({ isolation: false, root: sizes.dir });
  server = s.server;
  base = s.url;
  ctx = await launch({ webgpu: false });
});
after(async () => {
  await ctx?.close();
  server?.close();
});

async function openDemo(query = '') {
  const { page, errors } = await open(ctx, `${base}/recip-demo.html${query}`);
  await page.waitForFunction(() => document.body.dataset.ready === '1' || document.body.dataset.error, null, { timeout: 60_000 });
  const err = await page.evaluate(() => document.body.dataset.error);
  assert.equal(err, undefined, `the view did not open: ${err}`);
  return { page, errors: errors.filter((e) => !/favicon|404/.test(e)) };
}

/** Settle: two animation frames (the view renders on demand). */
const frames = (page) => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));

/** Mean absolute RGB difference from `ref` over a w×h patch centred on (x, y). */
function patchStats(page, x, y, r) {
  return page.evaluate(([x, y, r]) => {
    const dbg = window.recipDemo.view.debug;
    const p = dbg.pixels(x - r, y - r, 2 * r + 1, 2 * r + 1);
    return Array.from(p.data);
  }, [x, y, r]);
}

test('the view opens lazily, renders the sphere, the lattice, the detector and labelled axes', { timeout: 120_000 }, async () => {
  const { page, errors } = await openDemo();
  // three.js is a separate chunk, loaded when the view opens
  assert.ok(sizes.chunks.some((c) => /^recip\/view3d-/.test(c.file)), JSON.stringify(sizes));
  assert.ok(sizes.entry.bytes < 40_000, `entry ${sizes.entry.bytes} bytes should not carry three.js`);
  const counts = await page.evaluate(() => window.recipDemo.view.debug.counts());
  assert.ok(counts.points > 90_000 && counts.points < 110_000, `points ${counts.points}`);
  assert.ok(counts.inCondition > 50, `in condition ${counts.inCondition}`);
  assert.equal(counts.spheres, 1);
  assert.equal(counts.detector, true);
  for (const l of ['a*', 'b*', 'c*']) assert.ok(counts.labels.some((x) => x.startsWith(l)), `label ${l} in ${counts.labels}`);
  assert.ok(counts.labels.some((x) => /Ewald sphere, radius 1\/λ = 1\.000/.test(x)), counts.labels.join(' | '));
  // pixels: the canvas is not blank, and the sphere's rim differs from the background
  const r = await page.evaluate(() => {
    const dbg = window.recipDemo.view.debug;
    const w = dbg.canvas.clientWidth, h = dbg.canvas.clientHeight;
    const bg = dbg.background();
    const all = dbg.pixels(0, 0, w, h).data;
    let differ = 0;
    for (let i = 0; i < all.length; i += 4) if (Math.abs(all[i] - bg[0]) + Math.abs(all[i + 1] - bg[1]) + Math.abs(all[i + 2] - bg[2]) > 24) differ++;
    const s = dbg.scene();
    // a point just inside the sphere's silhouette, above its centre as seen from the camera
    const top = s.center.map((c, i) => c + s.up[i] * s.radius * 0.985);
    const p = dbg.projectPoint(top);
    const px = dbg.pixels(Math.round(p.x), Math.round(p.y), 1, 1).data;
    return { frac: differ / (all.length / 4), rim: Array.from(px.slice(0, 3)), bg };
  });
  assert.ok(r.frac > 0.05, `non-background fraction ${r.frac}`);
  const rimDiff = r.rim.reduce((s, v, i) => s + Math.abs(v - r.bg[i]), 0);
  assert.ok(rimDiff > 30, `sphere rim ${r.rim} vs background ${r.bg}`);
  await page.screenshot({ path: join(ARTIFACTS, 'recip-overview.png') });
  assert.deepEqual(errors, []);
});

test('hovering a lattice point reports its hkl; highlight() changes its pixels; the detector panel lights it', { timeout: 120_000 }, async () => {
  const { page, errors } = await openDemo('?dmin=6');
  await page.evaluate(() => window.recipDemo.view.resetCamera('lattice'));
  await frames(page);
  // an in-condition point with a spot, well inside the canvas, with no other in-condition point
  // within 14 px on screen (so the expected answer is unambiguous)
  const pick = await page.evaluate(() => {
    const d = window.recipDemo;
    const dbg = d.view.debug;
    const t = d.lattice().data.reflections;
    const W = dbg.canvas.clientWidth, H = dbg.canvas.clientHeight;
    const cand = d.spots().map((i) => ({ i, p: dbg.project(i) })).filter((c) => c.p && c.p.x > 60 && c.p.x < W - 60 && c.p.y > 60 && c.p.y < H - 160);
    for (let k = cand.length - 1; k >= 0; k--) {
      const c = cand[k];
      if (cand.every((o) => o === c || Math.hypot(o.p.x - c.p.x, o.p.y - c.p.y) > 14)) {
        return { i: c.i, x: c.p.x, y: c.p.y, hkl: Array.from(t.hkl.slice(3 * c.i, 3 * c.i + 3)) };
      }
    }
    return null;
  });
  assert.ok(pick, 'an isolated in-condition point');
  const box = await page.locator('#view canvas').boundingBox();
  await page.mouse.move(box.x + pick.x, box.y + pick.y);
  await page.waitForFunction((h) => document.getElementById('readout').textContent.startsWith(`(${h.join(' ')})`), pick.hkl, { timeout: 10_000 });
  const readout = await page.textContent('#readout');
  assert.match(readout, /^\(-?\d+ -?\d+ -?\d+\)\s+d = [\d.]+ Å\s+2θ = [\d.]+°\nε = \S+ Å⁻¹\s+spot \([\d.]+, [\d.]+\)/);
  await page.screenshot({ path: join(ARTIFACTS, 'recip-hover.png') });
  // a click picks it
  await page.mouse.click(box.x + pick.x, box.y + pick.y);
  await page.waitForFunction((h) => document.body.dataset.picked === h.join(' '), pick.hkl, { timeout: 10_000 });
  // leave: hover clears
  await page.mouse.move(box.x + 5, box.y + 5);
  await page.waitForFunction(() => document.getElementById('readout').textContent === '', null, { timeout: 10_000 });

  // highlight(): the pixels around the point change (marker ring), and back when cleared
  const R = 16;
  const before = await patchStats(page, pick.x, pick.y, R);
  await page.evaluate((h) => window.recipDemo.view.highlight(h), pick.hkl);
  const lit = await patchStats(page, pick.x, pick.y, R);
  await page.evaluate(() => window.recipDemo.view.highlight(null));
  const cleared = await patchStats(page, pick.x, pick.y, R);
  const diff = (a, b) => a.reduce((s, v, i) => s + (i % 4 === 3 ? 0 : Math.abs(v - b[i])), 0) / (a.length / 4);
  assert.ok(diff(before, lit) > 8, `highlight changes the patch (${diff(before, lit)})`);
  assert.ok(diff(before, cleared) < 1, `clearing restores it (${diff(before, cleared)})`);
  assert.equal(await page.evaluate((h) => window.recipDemo.view.debug.indexOf(h), pick.hkl), pick.i);

  // the page side: hovering the spot on the detector panel highlights that lattice point
  const spotXY = await page.evaluate((i) => window.recipDemo.detectorCanvasPosition(i), pick.i);
  const det = await page.locator('#det').boundingBox();
  const scale = det.width / 356;
  await page.mouse.move(det.x + 1 + spotXY[0] * scale, det.y + 1 + spotXY[1] * scale);
  await frames(page);
  const viaPanel = await patchStats(page, pick.x, pick.y, R);
  assert.ok(diff(before, viaPanel) > 8, `hovering the spot lights the point (${diff(before, viaPanel)})`);
  await page.screenshot({ path: join(ARTIFACTS, 'recip-highlight-from-detector.png') });
  assert.deepEqual(errors, []);
});

test('mouse drag orbits the camera; Shift/Alt+drag on the detector panel turns the crystal', { timeout: 120_000 }, async () => {
  const { page, errors } = await openDemo('?dmin=6');
  const cam0 = await page.evaluate(() => window.recipDemo.view.debug.camera());
  const box = await page.locator('#view canvas').boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await page.mouse.down();
  for (let i = 1; i <= 10; i++) await page.mouse.move(box.x + box.width / 2 + 12 * i, box.y + box.height / 2 + 3 * i);
  await page.mouse.up();
  await page.waitForTimeout(300);
  const cam1 = await page.evaluate(() => window.recipDemo.view.debug.camera());
  const moved = Math.hypot(...cam1.position.map((v, i) => v - cam0.position[i]));
  assert.ok(moved > 0.1, `camera moved by ${moved} (sphere radius 1)`);
  assert.deepEqual(cam1.target, cam0.target, 'orbit keeps the target');
  await page.screenshot({ path: join(ARTIFACTS, 'recip-orbited.png') });

  // Shift+drag tilts (about an axis perpendicular to the beam), Alt+drag spins about the beam
  const det = await page.locator('#det').boundingBox();
  const drag = async (mod, dx, dy) => {
    const x0 = det.x + det.width * 0.7, y0 = det.y + det.height * 0.5;
    await page.keyboard.down(mod);
    await page.mouse.move(x0, y0);
    await page.mouse.down();
    for (let i = 1; i <= 5; i++) await page.mouse.move(x0 + (dx * i) / 5, y0 + (dy * i) / 5);
    await page.mouse.up();
    await page.keyboard.up(mod);
    await frames(page);
  };
  const m0 = await page.evaluate(() => [...window.recipDemo.state.misset]);
  assert.deepEqual(m0, [0, 0, 0]);
  const n0 = await page.evaluate(() => window.recipDemo.timings.updates);
  // MOSFLM (beam along lab x): a spin about the beam from (0, 0, 0) changes the x angle only
  await drag('Alt', 0, 60);
  const m1 = await page.evaluate(() => [...window.recipDemo.state.misset]);
  assert.ok(Math.abs(m1[0]) > 1, `spin changes misset x: ${m1}`);
  assert.ok(Math.abs(m1[1]) < 1e-6 && Math.abs(m1[2]) < 1e-6, `spin keeps y and z: ${m1}`);
  // then a horizontal Shift+drag turns about lab −y: Ry(−θ)·Rx(rx) changes the y angle only
  await drag('Shift', 60, 0);
  const m2 = await page.evaluate(() => [...window.recipDemo.state.misset]);
  assert.ok(Math.abs(m2[1]) > 1, `tilt changes misset y: ${m2}`);
  assert.ok(Math.abs(m2[0] - m1[0]) < 1e-6 && Math.abs(m2[2]) < 1e-6, `tilt keeps x and z: ${m2}`);
  assert.ok((await page.evaluate(() => window.recipDemo.timings.updates)) > n0 + 2, 'the view updated live during the drags');
  // Shift+drag in the 3D view turns the crystal, not the camera (beyond the orbit's last damping)
  const cam2 = await page.evaluate(() => window.recipDemo.view.debug.camera());
  await page.keyboard.down('Shift');
  await page.mouse.move(box.x + 200, box.y + 300);
  await page.mouse.down();
  for (let i = 1; i <= 5; i++) await page.mouse.move(box.x + 200 + 10 * i, box.y + 300);
  await page.mouse.up();
  await page.keyboard.up('Shift');
  await frames(page);
  const m3 = await page.evaluate(() => [...window.recipDemo.state.misset]);
  const cam3 = await page.evaluate(() => window.recipDemo.view.debug.camera());
  assert.ok(Math.hypot(...m3.map((v, i) => v - m2[i])) > 1, `3D Shift+drag turns the crystal: ${m2} -> ${m3}`);
  const drift = Math.hypot(...cam3.position.map((v, i) => v - cam2.position[i]));
  assert.ok(drift < 0.01, `and leaves the camera (moved ${drift}; the orbit above moved ${moved})`);
  assert.match(new URL(page.url()).searchParams.get('misset'), /^-?[\d.]+,-?[\d.]+,-?[\d.]+$/);
  assert.deepEqual(errors, []);
});

test('themes, the "near the sphere" filter, and dispose() frees the GPU objects and the DOM', { timeout: 120_000 }, async () => {
  const { page, errors } = await openDemo('?theme=dark&dispersion=0.04&divergence=0.5&dmin=6');
  const c = await page.evaluate(() => window.recipDemo.view.debug.counts());
  assert.equal(c.spheres, 1 + 2 + 4, 'nominal sphere + two dispersion extremes + four divergence tilts');
  const bg = await page.evaluate(() => {
    const dbg = window.recipDemo.view.debug;
    return Array.from(dbg.pixels(2, 2, 1, 1).data.slice(0, 3));
  });
  assert.ok(bg.every((v) => v < 40), `dark background ${bg}`);
  await page.evaluate(() => window.recipDemo.view.resetCamera('overview'));
  await frames(page);
  await page.screenshot({ path: join(ARTIFACTS, 'recip-dark-shell.png') });
  await page.click('#near');
  const near = await page.evaluate(() => window.recipDemo.view.debug.counts());
  assert.ok(near.visible < c.points / 5 && near.visible >= near.inCondition, `near filter: ${near.visible} of ${c.points}`);
  await page.evaluate(() => window.recipDemo.view.resetCamera('lattice'));
  await frames(page);
  await page.screenshot({ path: join(ARTIFACTS, 'recip-dark-near-lattice.png') });
  await page.click('#theme');
  await page.evaluate(() => window.recipDemo.view.resetCamera('overview'));
  const light = await page.evaluate(() => Array.from(window.recipDemo.view.debug.pixels(2, 2, 1, 1).data.slice(0, 3)));
  assert.ok(light.every((v) => v > 200), `light background ${light}`);

  const freed = await page.evaluate(() => {
    const v = window.recipDemo.view;
    const canvas = v.debug.canvas;
    const before = v.debug.memory();
    v.dispose();
    let threw = '';
    try {
      v.update(window.recipDemo.lattice().data);
    } catch (e) {
      threw = e.message;
    }
    return { before, after: v.debug.memory(), attached: document.contains(canvas), labels: document.querySelectorAll('#view .nbr-label').length, threw };
  });
  assert.ok(freed.before.geometries > 5, JSON.stringify(freed));
  assert.deepEqual(freed.after, { geometries: 0, textures: 0 });
  assert.equal(freed.attached, false);
  assert.equal(freed.labels, 0);
  assert.match(freed.threw, /after dispose/);
  assert.deepEqual(errors, []);
});

test('frame rate with ~10^5 points (SwiftShader: CPU-emulated WebGL) and pick time', { timeout: 120_000 }, async () => {
  const { page } = await openDemo();
  const r = await page.evaluate(async () => {
    const d = window.recipDemo;
    const dbg = d.view.debug;
    const out = { points: dbg.counts().points, gl: dbg.gl(), loadMs: d.loadMs, updateMs: d.timings.update };
    out.overview = await dbg.measureFps(1500);
    d.view.resetCamera('lattice');
    out.lattice = await dbg.measureFps(1500);
    const picks = [];
    for (let i = 0; i < 5; i++) picks.push(dbg.timePick());
    out.pickMs = Math.min(...picks);
    // rotating the crystal: regenerate (demo lattice) + update + render, per step
    const t0 = performance.now();
    for (let i = 0; i < 3; i++) {
      d.regenerate({ misset: [0, i * 2, 0] });
      dbg.pixels(0, 0, 1, 1);
    }
    out.rotateStepMs = (performance.now() - t0) / 3;
    out.updateOnlyMs = d.timings.update;
    return out;
  });
  r.device = 'headless Debian chromium, SwiftShader WebGL2 (CPU emulation)';
  writeFileSync(join(ARTIFACTS, 'recip-fps.json'), JSON.stringify(r, null, 2));
  console.log(`# reciprocal view: ${JSON.stringify(r)}`);
  assert.ok(r.overview.frames > 3 && r.lattice.frames > 3, JSON.stringify(r));
  assert.ok(r.pickMs < 100, `one pick over ${r.points} points took ${r.pickMs} ms`);
});
