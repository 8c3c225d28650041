// Overlays and readout from the crate's resolved geometry: on a tilted (two-theta) detector the
// positions lie on the detector plane and the rings are conics of constant 2θ (not circles about
// the beam centre); on the curved detector every position lies on the sphere of radius
// `distance` about the sample; the readout (the crate's `pixel_geometry`, asked through the
// worker) agrees with the ring drawn through the pointer, with the crate's prediction, and with
// d and 2θ worked out here from the flat detector's distance, pixel and beam centre.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { launch, open, waitRendered, ARTIFACTS, setup } from './helpers.mjs';

const env = setup({ webgpu: false });

/** Geometry facts computed in the page from the last render's crate geometry. */
function facts(page) {
  return page.evaluate(() => {
    const g = window.nanobragg.lastRender().result.geometry;
    const { f, s, pos } = g.grid;
    const dot = (a, b) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
    let planeDev = 0, sphereDev = 0;
    const n0 = dot(g.pix0, g.odet);
    for (let k = 0; k < pos.length; k += 3) {
      const p = [pos[k], pos[k + 1], pos[k + 2]];
      planeDev = Math.max(planeDev, Math.abs(dot(p, g.odet) - n0));
      sphereDev = Math.max(sphereDev, Math.abs(Math.hypot(...p) - g.distance));
    }
    const v = window.nanobragg.view;
    const bc = v.beamCentre;
    return { nodes: f.length * s.length, planeDev, sphereDev, distance: g.distance, pixel: g.pixel, bc, curved: g.curved };
  });
}

test('two-theta detector: positions on the plane, rings of constant 2θ that are not centred on the beam', { timeout: 120_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&twotheta=25&detpixels=512&lambda=1.5&cell=30+30+30+90+90+90&distance=80`);
  await waitRendered(page, 1);
  const f = await facts(page);
  assert.ok(f.nodes > 100);
  assert.ok(f.planeDev < 1e-12, `max distance from the plane ${f.planeDev} m`);
  // every ring point has the ring's 2θ according to the readout at that point
  const r = await page.evaluate(async () => {
    const v = window.nanobragg.view;
    const out = [];
    for (const ring of v.rings) {
      const tt = (2 * Math.asin(1.5 / (2 * ring.d)) * 180) / Math.PI;
      let worst = 0, fmin = Infinity, fmax = -Infinity, smin = Infinity, smax = -Infinity;
      for (let i = 0; i < ring.segments.length; i += 2) {
        const info = await window.nanobragg.pixelGeometry(ring.segments[i], ring.segments[i + 1]);
        worst = Math.max(worst, Math.abs(info.two_theta - tt));
        fmin = Math.min(fmin, ring.segments[i]); fmax = Math.max(fmax, ring.segments[i]);
        smin = Math.min(smin, ring.segments[i + 1]); smax = Math.max(smax, ring.segments[i + 1]);
      }
      out.push({ d: ring.d, worst, centre: [(fmin + fmax) / 2, (smin + smax) / 2], closed: fmin > 1 && smin > 1 && fmax < 511 && smax < 511 });
    }
    return { rings: out, bc: v.beamCentre };
  });
  console.log('# two-theta rings:', JSON.stringify(r));
  assert.ok(r.rings.length >= 2);
  for (const ring of r.rings) assert.ok(ring.worst < 0.02, `ring ${ring.d} Å: 2θ off by ${ring.worst}°`);
  // a closed ring on the tilted detector is an ellipse whose centre is not the beam centre
  const closed = r.rings.filter((x) => x.closed);
  assert.ok(closed.length >= 1, 'a closed ring');
  for (const x of closed) assert.ok(Math.hypot(x.centre[0] - r.bc[0], x.centre[1] - r.bc[1]) > 2, `ring ${x.d} centred at ${x.centre} vs beam ${r.bc}`);
  await page.screenshot({ path: join(ARTIFACTS, 'geometry-twotheta-rings.png') });
  assert.deepEqual(errors, []);
});

test('curved detector: positions on the sphere of radius distance; readout follows the crate', { timeout: 120_000 }, async () => {
  const { page } = await open(env.ctx, `${env.base}/?backend=cpu&curved_det=1&detpixels=512&pixel=0.4&distance=60&lambda=1.5&cell=30+30+30+90+90+90`);
  await waitRendered(page, 1);
  const f = await facts(page);
  assert.equal(f.curved, true);
  assert.ok(f.sphereDev < 1e-9 * f.distance + 1e-12, `max distance from the sphere ${f.sphereDev} m`);
  // at the far corner a flat detector would give a larger 2θ than the curved one: the readout
  // uses the sphere (2θ = arc length / distance for the curved detector's pixel along one axis)
  const far = await page.evaluate(async () => (await window.nanobragg.pixelGeometry(511.5, 255.5)).two_theta);
  const bc = f.bc;
  const arc = ((511.5 - bc[0]) * f.pixel) / f.distance; // radians along the fast axis
  console.log(`# curved: 2θ at the fast edge ${far.toFixed(3)}°, arc/distance ${(arc * 180 / Math.PI).toFixed(3)}°, beam centre ${bc}`);
  assert.ok(Math.abs(far - (arc * 180) / Math.PI) < 0.05, `${far} vs ${(arc * 180) / Math.PI}`);
  await page.screenshot({ path: join(ARTIFACTS, 'geometry-curved.png') });
});

test('nanobragg.predict: the readout\'s hkl at each predicted spot is the spot\'s hkl; exports still work after it', { timeout: 120_000 }, async () => {
  const { page } = await open(env.ctx, `${env.base}/?backend=cpu&preset=triclinic`);
  await waitRendered(page, 1);
  const r = await page.evaluate(async () => {
    const p = await window.nanobragg.predict(window.nanobragg.lastRender().result.args, { maxExcitationError: 0.002 });
    const on = p.reflections.filter((x) => x.on_detector && x.fast !== null);
    const bad = [];
    for (const x of on) {
      const i = await window.nanobragg.pixelGeometry(x.fast, x.slow);
      if (i.nearest[0] !== x.h || i.nearest[1] !== x.k || i.nearest[2] !== x.l || Math.abs(i.d - x.d) > 1e-3 * x.d) bad.push(x); // d of the lattice point vs of the sphere point its ray meets
    }
    return { n: on.length, bad: bad.slice(0, 5).map((x) => [x.h, x.k, x.l, x.fast, x.slow]), first: on[0] };
  });
  console.log(`# ${r.n} predicted spots on the detector, ${r.bad.length} disagree`);
  assert.ok(r.n >= 5, `${r.n} spots`);
  assert.deepEqual(r.bad, []);
  // the pointer over one spot: the readout names its hkl
  const box = await page.locator('#canvas-host > .nb-canvas').boundingBox();
  const [x, y] = await page.evaluate(([f, s]) => window.nanobragg.view.fromDetector(f, s), [r.first.fast, r.first.slow]);
  await page.mouse.move(box.x + x, box.y + y);
  const want = new RegExp(`hkl ≈ \\(${r.first.h} ${r.first.k} ${r.first.l}\\)`);
  await page.waitForFunction((src) => new RegExp(src).test(document.getElementById('readout').textContent), want.source, { timeout: 10_000 });
  // the prediction replaced the worker's plan: a download renders the current image again
  await page.click('.downloads > summary');
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#dl-float')]);
  assert.equal(readFileSync(await dl.path()).length, 4 * 512 * 512);
  // errors name the flag
  const err = await page.evaluate(() => window.nanobragg.predict('-cell 100 100 100 90 90 90 -default_F 1 -lambda abc', {}).then(() => '', (e) => e.message));
  assert.match(err, /-lambda/);
});

test('readout at known pixels: the crate\'s d, 2θ and hkl (flat detector worked out here), shown under the pointer', { timeout: 120_000 }, async () => {
  // MOSFLM convention (the default), 1024 × 0.1 mm pixels at 100 mm: the default beam centre is
  // (D + px)/2 plus MOSFLM's half pixel on each axis = 51.3 mm, pixel coordinate 513 (MODEL §3)
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=1024&pixel=0.1&distance=100&lambda=1&cell=50+50+50+90+90+90&N=5`);
  await waitRendered(page, 1);
  const pts = [[513, 513], [612.5, 513.5], [900.5, 300.5], [10.5, 1000.5]];
  const got = await page.evaluate(async (pts) => {
    const out = [];
    for (const [f, s] of pts) out.push(await window.nanobragg.pixelGeometry(f, s));
    return { out, bc: window.nanobragg.view.beamCentre };
  }, pts);
  // the beam centre is the crate's: where the beam meets the plane
  assert.ok(Math.abs(got.bc[0] - 513) < 1e-6 && Math.abs(got.bc[1] - 513) < 1e-6, `beam centre ${got.bc}`);
  for (let i = 0; i < pts.length; i++) {
    const [f, s] = pts[i];
    const r = Math.hypot(f - 513, s - 513) * 0.1; // mm from the beam
    const tt = Math.atan2(r, 100);
    const g = got.out[i];
    assert.ok(Math.abs(g.two_theta - (tt * 180) / Math.PI) < 1e-9, `(${f}, ${s}): 2θ ${g.two_theta} vs ${(tt * 180) / Math.PI}`);
    if (r === 0) assert.ok(!Number.isFinite(g.d) || g.d > 1e12, `d at the beam ${g.d}`);
    else assert.ok(Math.abs(g.d - 1 / (2 * Math.sin(tt / 2))) < 1e-9 * g.d, `(${f}, ${s}): d ${g.d}`);
    // |hkl| = a/d for the cubic cell
    if (r > 0) assert.ok(Math.abs(Math.hypot(...g.hkl) - 50 / g.d) < 1e-9 * 50 / g.d);
  }
  // under the pointer: the readout shows the crate's numbers for the pixel's centre
  const box = await page.locator('#canvas-host > .nb-canvas').boundingBox();
  const [x, y] = await page.evaluate(() => window.nanobragg.view.fromDetector(900.5, 300.5));
  await page.mouse.move(box.x + x, box.y + y);
  await page.waitForFunction(() => /pixel \(900, 300\)/.test(document.getElementById('readout').textContent) && /^d = /.test(document.getElementById('readout').textContent), null, { timeout: 10_000 });
  const text = await page.textContent('#readout');
  const g = got.out[2];
  assert.ok(text.includes(`d = ${g.d.toFixed(3)} Å`) && text.includes(`2θ = ${g.two_theta.toFixed(3)}°`) && text.includes(`(${g.nearest.join(' ')})`), text);
  assert.deepEqual(errors, []);
});
