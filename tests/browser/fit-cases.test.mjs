// "Fit to image" beyond the plain teaching crystal (issue 31): with a DIALS `.expt` crystal (the
// crystal is the file's matrix: the cell field shows the file's cell, the fit moves orientation
// and, through the matrix, the cell: the crate's `-cell` with `-expt`), and on the realistic
// still (ADU over water and air, the atomic model's structure factors: the crate's local
// background and gain), where it either recovers the orientation or says it did
// not converge (on this 512² detector of 0.3 mm pixels the crate's fit ends 0.04–0.08° off and
// says so: crate/tests/refine_realistic.rs; it must then not move the crystal far). The local
// background follows the water and air rings (radial profile + blocks, MODEL §10.4), so the ring
// is no longer taken for spots. Screenshots: tests/artifacts/fit-expt-{1280,390}.png,
// fit-realistic-{1280,390}.png.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { open, waitRendered, setup, ARTIFACTS } from './helpers.mjs';
import { importTs } from '../unit/helpers.mjs';

const env = setup({ webgpu: false });
const R = await importTs('www/src/recip/rotate.ts');

/** The angle (degrees) of the rotation between two misset triples. */
function angleBetween(a, b) {
  const d = R.matMul(R.missetMatrix(b), R.transpose(R.missetMatrix(a)));
  const c = Math.min(1, Math.max(-1, (d[0][0] + d[1][1] + d[2][2] - 1) / 2));
  return (Math.acos(c) * 180) / Math.PI;
}
const nums = (s) => s.trim().split(/\s+/).map(Number);
const dot = (x, y) => x[0] * y[0] + x[1] * y[1] + x[2] * y[2];
const len = (x) => Math.sqrt(dot(x, x));
const deg = (x, y) => (Math.acos(dot(x, y) / (len(x) * len(y))) * 180) / Math.PI;
/** v turned by `angle` degrees about the unit vector of `axis` (Rodrigues). */
function turn(v, axis, angle) {
  const n = len(axis);
  const u = axis.map((x) => x / n);
  const t = (angle * Math.PI) / 180;
  const [s, c] = [Math.sin(t), Math.cos(t)];
  const x = [u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]];
  return v.map((vi, i) => vi * c + x[i] * s + u[i] * dot(u, v) * (1 - c));
}

async function idle(page) {
  await page.waitForFunction(() => !window.nanobragg.client.busy && !window.nanobragg.fit.running, null, { timeout: 120_000 });
}

test('.expt crystal: the cell field is the file\'s cell; perturbed 0.5°/0.5 %, the fit brings orientation and cell back through the matrix', { timeout: 240_000 }, async () => {
  // a 128² detector of 0.8 mm pixels at 100 mm, λ 6.2 Å; a crystal of 100 × 110 × 120 Å, not
  // quite orthogonal, turned 20° about (1, 2, 3)
  const axes = [[100, 0, 0], [2, 110, 0], [0, -3, 120]].map((v) => turn(v, [1, 2, 3], 20));
  const [a, b, c] = axes;
  const truth = [len(a), len(b), len(c), deg(b, c), deg(c, a), deg(a, b)];
  const expt = JSON.stringify({
    __id__: 'ExperimentList',
    experiment: [{ beam: 0, detector: 0, crystal: 0 }],
    beam: [{ direction: [0, 0, 1], wavelength: 6.2 }],
    detector: [{ panels: [{ origin: [-51.2, 51.2, -100], fast_axis: [1, 0, 0], slow_axis: [0, -1, 0], pixel_size: [0.8, 0.8], image_size: [128, 128] }] }],
    crystal: [{ real_space_a: a, real_space_b: b, real_space_c: c }],
  });
  const { page, errors } = await open(env.ctx, `${env.base}/?lambda=6.2&N=10&default_F=100&detpixels=128&pixel=0.8&misset=10+20+30&shape=gauss&oversample=1&backend=cpu&precision=f64`);
  await waitRendered(page, 1);
  let n = await page.evaluate(() => window.nanobragg.lastRender().count);
  await page.evaluate((text) => window.nanobragg.measured.openFiles([new File([text], 'xtal.expt')]), expt);
  await waitRendered(page, n + 1);
  await idle(page);
  // the form shows the file's crystal: its cell (not the default 100 100 100), no misset
  let st = await page.evaluate(() => window.nanobragg.state());
  assert.equal(st.expt, 'xtal.expt');
  assert.equal((st.misset ?? '').trim(), '');
  const shownCell = nums(st.cell);
  for (let i = 0; i < 6; i++) assert.ok(Math.abs(shownCell[i] - truth[i]) < 2e-4, `cell field ${st.cell}, the file's ${truth.map((v) => v.toFixed(4)).join(' ')}`);

  await page.click('.fitopen');
  n = await page.evaluate(() => window.nanobragg.lastRender().count);
  await page.click('.fitbar .fmake');
  await waitRendered(page, n + 1);
  await idle(page);
  st = await page.evaluate(() => window.nanobragg.state());
  assert.ok(angleBetween([0, 0, 0], nums(st.misset)) > 0.7, `perturbed misset ${st.misset}`);
  assert.ok(Math.abs(nums(st.cell)[0] / truth[0] - 1.005) < 1e-5, `perturbed cell ${st.cell}`);
  await page.evaluate(() => { window.nanobragg.fit.result = null; });
  await page.click('.fitbar .frun');
  await page.waitForFunction(() => window.nanobragg.fit.result !== null || /failed/.test(document.querySelector('.fitbar .fstatus').textContent), null, { timeout: 170_000 });
  const status = await page.textContent('.fitbar .fstatus');
  assert.doesNotMatch(status, /not given by -cell|failed/, status);
  const r = await page.evaluate(() => window.nanobragg.fit.result);
  assert.equal(r.converged, true, status);
  await idle(page);
  st = await page.evaluate(() => window.nanobragg.state());
  const rot = angleBetween([0, 0, 0], nums(st.misset));
  const cell = nums(st.cell);
  console.log(`.expt: ${r.iterations} evaluations, ${(r.ms / 1000).toFixed(1)} s; orientation ${rot.toFixed(4)}° off, cell ${st.cell} (file ${truth.slice(0, 3).map((v) => v.toFixed(3)).join(' ')})`);
  assert.ok(rot < 0.02, `orientation ${rot}° off the file's`);
  for (let i = 0; i < 3; i++) assert.ok(Math.abs(cell[i] / truth[i] - 1) < 5e-4, `cell ${st.cell}`);
  await page.screenshot({ path: join(ARTIFACTS, 'fit-expt-1280.png') });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.waitForTimeout(300);
  await page.screenshot({ path: join(ARTIFACTS, 'fit-expt-390.png') });
  assert.deepEqual(errors, []);
  await page.close();
});

const TURN = Number(process.env.REALISTIC_FIT_TURN ?? 0.3);

test('a realistic still: Start fit runs (ADU, local background); perturbed 0.3°, it recovers the orientation or says it did not converge', { timeout: 900_000 }, async () => {
  // the realistic preset's still (1PFE, 1 µm crystal and beam, water, air, photon noise) on a
  // 512² detector of 0.3 mm pixels: the preset's EIGER2 X 4M has 16× the pixels, and its fit
  // took more than 400 s in the single-threaded module on this test's shared CPU
  const still = 'pdb=1pfe.cif&distance=120&lambda=1&xtal_size=0.001&mosaic=0.3&mosaic_domains=12&misset_seed=3&misset=random' +
    '&shape=&flux=1e12&exposure=0.5&beamsize=0.001&oversample=1&water=20&air=10&detnoise=1&gain=1&seed=1&detpixels=512&pixel=0.3';
  // shape= : the preset's square lattice. Left out, the URL keeps the default state's Gaussian
  // lattice, whose spots (no tails) one sample per 0.3 mm pixel misses: the target's strongest
  // "spots" were then single noise pixels of ~200 ADU, and the fit stopped after 1 evaluation
  const { page, errors } = await open(env.ctx, `${env.base}/?${still}&backend=cpu`);
  const shown = () => page.evaluate(() => Number(document.body.dataset.realistic ?? 0));
  await page.waitForFunction(() => Number(document.body.dataset.realistic ?? 0) > 0, null, { timeout: 400_000 });
  let k;
  await page.click('.fitopen');
  await page.waitForFunction(() => !document.querySelector('.fitbar .fmake').disabled, null, { timeout: 60_000 });
  // the truth: the preset's random misset as the crate drew it (its fitted value at no offset)
  const truth = await page.evaluate(async () => {
    const s = window.nanobragg.fit.d.shown();
    const files = Object.fromEntries(window.nanobragg.fit.d.store.files.peek());
    return (await window.nanobragg.client.fittedValues(s.args, files, 'rot_x,rot_y,rot_z', [0, 0, 0])).misset;
  });
  await page.fill('.fitbar .fdeg', String(TURN));
  k = await shown();
  await page.click('.fitbar .fmake');
  await page.waitForFunction((k) => Number(document.body.dataset.realistic ?? 0) > k, k, { timeout: 400_000 });
  await page.waitForFunction(() => !document.querySelector('.fitbar .frun').disabled, null, { timeout: 60_000 });
  const target = await page.textContent('.fitbar .ftarget');
  assert.match(target, /realistic still before the perturbation \(ADU, gain 1; .*local map.*the cell is the atomic model's/);
  const st0 = await page.evaluate(() => window.nanobragg.state());
  const start = angleBetween(truth, nums(st0.misset));
  assert.ok(Math.abs(start / (TURN * Math.sqrt(3)) - 1) < 0.2, `perturbed by ${start}° (${TURN}° about each axis)`);
  k = await shown();
  await page.evaluate(() => { window.nanobragg.fit.result = null; });
  await page.click('.fitbar .frun');
  await page.waitForFunction(() => window.nanobragg.fit.result !== null || /failed/.test(document.querySelector('.fitbar .fstatus').textContent), null, { timeout: 400_000 });
  const status = await page.textContent('.fitbar .fstatus');
  const r = await page.evaluate(() => window.nanobragg.fit.result);
  assert.ok(r, status);
  // the fitted crystal is rendered through the realistic chain again
  await page.waitForFunction((k) => Number(document.body.dataset.realistic ?? 0) > k, k, { timeout: 400_000 });
  const st = await page.evaluate(() => window.nanobragg.state());
  const rot = angleBetween(truth, nums(st.misset));
  console.log(`realistic: converged ${r.converged}, ${r.iterations} evaluations, ${(r.ms / 1000).toFixed(1)} s; ${start.toFixed(3)}° → ${rot.toFixed(4)}° off the truth; ${status}`);
  if (r.converged) {
    assert.match(status, /^Fitted in \d+ evaluations/);
    assert.ok(rot < 0.05, `said fitted ${rot}° off the truth`);
  } else {
    assert.match(status, /^Did not converge \(\d+ evaluations/);
  }
  if (rot > 0.2) assert.equal(r.converged, false, `${rot}° off the truth, said converged`);
  // the fit (its centroid stage first) brings the crystal at least halfway back (measured: 0.52° →
  // 0.05°, "did not converge" on these 0.3 mm pixels, as the crate's test)
  assert.ok(rot < start / 2, `the fit moved the crystal from ${start}° to ${rot}° off the truth`);
  await page.screenshot({ path: join(ARTIFACTS, 'fit-realistic-1280.png') });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.waitForTimeout(300);
  await page.screenshot({ path: join(ARTIFACTS, 'fit-realistic-390.png') });
  assert.deepEqual(errors, []);
  await page.close();
});
