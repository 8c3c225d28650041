// Teaching controls (issue 8 §3; www/src/teach/): Shift+drag and Alt+drag on the image turn the
// crystal (checked against recip/rotate.ts's maths and the image), the misset sliders and a
// random misset taken over, the orientation in the URL reproduces the image, the φ player shows
// different frames, the video export plays, the PNG export, and every teaching preset renders
// and shows its sentence (screenshots at 1280×720 and 1920×1080 in tests/artifacts/teach-*.png).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { open, waitRendered, canvasSpread, pearson, setup, ARTIFACTS } from './helpers.mjs';
import { importTs } from '../unit/helpers.mjs';

const env = setup({ webgpu: false });
const R = await importTs('www/src/recip/rotate.ts');
const { PRESETS } = await importTs('www/src/state.ts');

/** A copy of the float image shown last, with its size, preview flag and render count. */
const shown = (page) => page.evaluate(() => {
  const l = window.nanobragg.lastRender();
  return { data: Array.from(l.result.data), w: l.result.width, preview: l.preview, count: l.count, ms: l.result.timings.render };
});

/** Wait for a full (not preview) image after render number `n`. */
async function waitFull(page, n, timeout = 120_000) {
  await page.waitForFunction((n) => {
    const l = window.nanobragg.lastRender();
    return l.count > n && !l.preview;
  }, n, { timeout });
  // and nothing still scheduled (a full render follows the last preview)
  await page.waitForTimeout(300);
  await page.waitForFunction(() => !window.nanobragg.lastRender().preview && !window.nanobragg.client.busy, null, { timeout });
}

const urlMisset = (page) => page.evaluate(() => new URL(location.href).searchParams.get('misset'));
const angles = (s) => s.trim().split(/\s+/).map(Number);

/** The rotation D = U'·Uᵀ between two misset triples, as axis and angle (degrees). */
function rotationBetween(a, b) {
  const d = R.matMul(R.missetMatrix(b), R.transpose(R.missetMatrix(a)));
  const v = [d[2][1] - d[1][2], d[0][2] - d[2][0], d[1][0] - d[0][1]];
  const s = Math.hypot(...v) / 2, c = (d[0][0] + d[1][1] + d[2][2] - 1) / 2;
  return { axis: v.map((x) => x / (2 * s)), deg: (Math.atan2(s, c) * 180) / Math.PI };
}

async function dragOnImage(page, { dx, dy, modifiers = [], from = [0.5, 0.5] }) {
  const box = await page.locator('#canvas-host > .nb-canvas').boundingBox();
  const x = box.x + box.width * from[0], y = box.y + box.height * from[1];
  for (const m of modifiers) await page.keyboard.down(m);
  await page.mouse.move(x, y);
  await page.mouse.down();
  await page.mouse.move(x + dx, y + dy, { steps: 12 });
  await page.mouse.up();
  for (const m of modifiers) await page.keyboard.up(m);
}

const BASE = '?preset=cubic&detpixels=256&pixel=0.4&backend=cpu';

test('Shift+drag tilts the crystal (URL and image change, no pan); a plain drag still pans; the link reproduces the image', { timeout: 240_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/${BASE}`);
  await waitRendered(page, 1);
  await waitFull(page, 0);
  const before = await shown(page);
  assert.equal(await urlMisset(page), null, 'no misset at the start');
  await dragOnImage(page, { dx: 60, dy: -30, modifiers: ['Shift'] });
  await waitFull(page, before.count);
  await page.waitForFunction(() => new URL(location.href).searchParams.get('misset'));
  const m = angles(await urlMisset(page));
  assert.equal(m.length, 3);
  const rot = rotationBetween([0, 0, 0], m);
  console.log(`# Shift+drag: misset ${m.join(' ')}; axis ${rot.axis.map((x) => x.toFixed(3))}, ${rot.deg.toFixed(2)}°`);
  assert.ok(Math.abs(rot.axis[0]) < 0.01, 'the tilt axis is perpendicular to the beam (+x, MOSFLM)');
  assert.ok(rot.deg > 5 && rot.deg < 25, `turned ${rot.deg}° for a 67-pixel drag`);
  const after = await shown(page);
  assert.equal(after.w, before.w);
  const r = pearson(before.data, after.data);
  assert.ok(r < 0.8, `the image changed (correlation ${r.toFixed(3)})`);
  assert.equal(await page.evaluate(() => window.nanobragg.view.fitted), true, 'a Shift+drag does not pan');
  assert.equal(await page.inputValue('#misset-x-value'), String(m[0]), 'the sliders follow');
  await page.screenshot({ path: join(ARTIFACTS, 'teach-shift-drag.png') });

  // plain drag: pans, the orientation stays
  await dragOnImage(page, { dx: 40, dy: 20 });
  await page.waitForTimeout(400);
  assert.equal(await page.evaluate(() => window.nanobragg.view.fitted), false, 'a plain drag pans');
  assert.deepEqual(angles(await urlMisset(page)), m);

  // the link reproduces the image
  const url = page.url();
  const { page: p2 } = await open(env.ctx, url);
  await waitRendered(p2, 1);
  await waitFull(p2, 0);
  const again = await shown(p2);
  assert.ok(pearson(after.data, again.data) > 0.9999, 'the copied link gives the same image');
  await p2.close();
  assert.deepEqual(errors, []);
  await page.close();
});

test('Alt+drag and Ctrl+Shift+drag spin the crystal about the beam; the Spin mode does it without keys', { timeout: 240_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/${BASE}&misset=10+20+30`);
  await waitRendered(page, 1);
  await waitFull(page, 0);
  const start = [10, 20, 30];
  let n = (await shown(page)).count;
  const checkSpin = async (label) => {
    const m = angles(await urlMisset(page));
    const rot = rotationBetween(start, m);
    console.log(`# ${label}: misset ${m.join(' ')}; axis ${rot.axis.map((x) => x.toFixed(3))}, ${rot.deg.toFixed(2)}°`);
    assert.ok(Math.abs(Math.abs(rot.axis[0]) - 1) < 0.01, `${label}: the axis is the beam (+x): ${rot.axis}`);
    assert.ok(rot.deg > 3, `${label}: turned ${rot.deg}°`);
    return m;
  };
  // from right of the beam spot, downwards: a clockwise turn on screen
  await dragOnImage(page, { dx: 0, dy: 60, modifiers: ['Alt'], from: [0.75, 0.5] });
  await waitFull(page, n);
  const a = await checkSpin('Alt+drag');
  await page.screenshot({ path: join(ARTIFACTS, 'teach-alt-drag.png') });
  // back with Ctrl+Shift: the opposite sense, about the same axis, returns near the start
  n = (await shown(page)).count;
  await dragOnImage(page, { dx: 0, dy: -60, modifiers: ['Control', 'Shift'], from: [0.75, 0.5] });
  await waitFull(page, n);
  const back = angles(await urlMisset(page));
  const rback = rotationBetween(start, back);
  assert.ok(rback.deg < 2, `Ctrl+Shift+drag spun back: ${rback.deg}° from the start (after ${a.join(' ')})`);
  // the Spin mode button: a plain drag spins
  await page.click('#drag-mode button[data-mode=spin]');
  n = (await shown(page)).count;
  await dragOnImage(page, { dx: 0, dy: 60, from: [0.75, 0.5] });
  await waitFull(page, n);
  await checkSpin('Spin mode');
  assert.equal(await page.evaluate(() => window.nanobragg.view.fitted), true, 'no pan in Spin mode');
  assert.deepEqual(errors, []);
  await page.close();
});

test('misset sliders set the orientation; a random misset is taken over without changing the image', { timeout: 240_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/${BASE}&misset=random&misset_seed=7`);
  await waitRendered(page, 1);
  await waitFull(page, 0);
  const rnd = await shown(page);
  assert.match(await page.textContent('#misset-random-note'), /Random orientation/);
  await page.evaluate(() => window.nanobragg.teach.takeOverRandom());
  await waitFull(page, rnd.count);
  const m = angles(await urlMisset(page));
  assert.equal(m.length, 3, `misset now angles: ${m}`);
  const taken = await shown(page);
  const r = pearson(rnd.data, taken.data);
  console.log(`# random misset (seed 7) taken over as ${m.join(' ')}: image correlation ${r.toFixed(5)}`);
  assert.ok(r > 0.99, `the same orientation (correlation ${r})`);
  assert.equal(await page.textContent('#misset-random-note'), '');
  // a slider: the y angle moves, the others stay
  const n = taken.count;
  await page.evaluate(() => {
    const s = document.getElementById('misset-y');
    s.value = '40';
    s.dispatchEvent(new Event('input', { bubbles: true }));
    s.dispatchEvent(new Event('change', { bubbles: true }));
  });
  await waitFull(page, n);
  const m2 = angles(await urlMisset(page));
  assert.deepEqual([m2[0], m2[1], m2[2]], [m[0], 40, m[2]]);
  await page.click('#misset-reset');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('misset') === '0 0 0');
  assert.deepEqual(errors, []);
  await page.close();
});

test('a random misset seeded from the clock (no -misset_seed) is taken over as the orientation on screen', { timeout: 240_000 }, async () => {
  // upstream draws it from the clock's second: only the plan of the image shown knows it (a new
  // plan a second later draws another one)
  const { page, errors } = await open(env.ctx, `${env.base}/${BASE}&misset=random&misset_seed=`);
  await waitRendered(page, 1);
  await waitFull(page, 0);
  const rnd = await shown(page);
  await page.waitForTimeout(1200);
  await page.evaluate(() => window.nanobragg.teach.takeOverRandom());
  await waitFull(page, rnd.count);
  const m = angles(await urlMisset(page));
  assert.equal(m.length, 3, `misset now angles: ${m}`);
  const r = pearson(rnd.data, (await shown(page)).data);
  console.log(`# clock-seeded random misset taken over as ${m.join(' ')}: image correlation ${r.toFixed(5)}`);
  assert.ok(r > 0.99, `the same orientation (correlation ${r})`);
  assert.deepEqual(errors, []);
  await page.close();
});

test("drags turn about the crate's own spindle axis (Geometry.spindle): the conventions' axes", { timeout: 240_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/${BASE}`);
  await waitRendered(page, 1);
  const unit = (v) => { const n = Math.hypot(...v); return v.map((x) => x / n); };
  // upstream's conventions: MOSFLM/DENZO +z, XDS/ADXV +x, DIALS +y, or -spindle_axis
  for (const [flags, axis] of [
    ['', [0, 0, 1]], ['-xds', [1, 0, 0]], ['-adxv', [1, 0, 0]], ['-dials', [0, 1, 0]], ['-denzo', [0, 0, 1]],
    ['-spindle_axis 0 1 1', [0, 1, 1]],
  ]) {
    const g = await page.evaluate(async (f) => (await window.nanobragg.simulate(
      `-cell 50 50 50 90 90 90 -default_F 10 -N 2 -detpixels 8 ${f}`)).geometry, flags);
    const want = unit(axis);
    assert.ok(g.spindle.every((x, i) => Math.abs(x - want[i]) < 1e-12), `${flags || 'MOSFLM'}: crate ${g.spindle}, page ${want}`);
  }
  assert.deepEqual(errors, []);
  await page.close();
});

test('φ play shows several different frames; pause gives the full image; step moves by the step', { timeout: 240_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/${BASE}&misset=5+3+0`);
  await waitRendered(page, 1);
  await waitFull(page, 0);
  await page.fill('#phi-speed', '20');
  const r = await page.evaluate(async () => {
    const frames = [];
    const sums = new Set();
    const speedX = new Set();
    const on = (e) => {
      speedX.add(document.getElementById('phi-speed').getBoundingClientRect().x);
      const l = window.nanobragg.lastRender();
      let s = 0;
      const d = l.result.data;
      for (let i = 0; i < d.length; i += 7) s += d[i] * ((i % 13) + 1);
      sums.add(s.toPrecision(8));
      frames.push({ phi: window.nanobragg.state().phi, preview: e.detail.preview, w: e.detail.width });
    };
    window.addEventListener('nanobragg-frame', on);
    document.getElementById('phi-play').click();
    await new Promise((ok) => setTimeout(ok, 3000));
    const playing = window.nanobragg.teach.player.playing;
    document.getElementById('phi-play').click();
    await new Promise((ok) => setTimeout(ok, 100));
    window.removeEventListener('nanobragg-frame', on);
    return { frames, distinct: sums.size, playing, speedX: [...speedX] };
  });
  // the controls right of "φ 12.3°" stay put while the number grows and Play becomes Pause
  // (they jumped at φ 10° and at each play/pause)
  assert.equal(r.speedX.length, 1, `the speed box moved: ${r.speedX}`);
  const phis = new Set(r.frames.map((f) => f.phi));
  console.log(`# φ play 3 s at 20°/s: ${r.frames.length} frames, ${phis.size} φ values, ${r.distinct} distinct images; sizes ${[...new Set(r.frames.map((f) => f.w))].join(',')}`);
  assert.equal(r.playing, true);
  assert.ok(r.frames.length >= 4, `${r.frames.length} frames in 3 s`);
  assert.ok(phis.size >= 4, `${phis.size} φ values`);
  assert.ok(r.distinct >= 3, `${r.distinct} different images`);
  const n = (await shown(page)).count;
  await waitFull(page, n - 1);
  const phi = Number(await page.evaluate(() => window.nanobragg.state().phi));
  assert.ok(phi > 20 && phi < 90, `stopped at φ ${phi}`);
  assert.equal(Number(new URL(page.url()).searchParams.get('phi')), phi, 'φ in the URL');
  // step forward by 1°
  await page.fill('#phi-step', '2.5');
  await page.click('#phi-fwd');
  await page.waitForFunction((p) => Number(window.nanobragg.state().phi) === p, +(phi + 2.5).toFixed(3));
  // rotation photographs: the frame's fields
  await page.selectOption('#phi-mode', 'rotation');
  await page.waitForFunction(() => window.nanobragg.state().osc === '1' && window.nanobragg.state().phisteps === '5');
  await page.selectOption('#phi-mode', 'stills');
  await page.waitForFunction(() => !window.nanobragg.state().osc);
  assert.deepEqual(errors, []);
  await page.close();
});

test('video export gives a playable WebM; PNG export gives a PNG named by the settings', { timeout: 240_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/?preset=cubic&detpixels=128&pixel=0.8&backend=cpu&misset=5+3+0`);
  await waitRendered(page, 1);
  await page.fill('#phi-from', '0');
  await page.fill('#phi-to', '3');
  await page.fill('#phi-step', '1');
  await page.fill('#phi-speed', '10');
  const [dl] = await Promise.all([page.waitForEvent('download', { timeout: 120_000 }), page.click('#phi-record')]);
  const name = dl.suggestedFilename();
  const bytes = readFileSync(await dl.path());
  console.log(`# video ${name}: ${bytes.length} bytes; ${await page.textContent('#phi-msg')}`);
  assert.match(name, /^nanobragg_.*\.webm$/);
  // named after the φ range recorded (frames 0, 1, 2 … at step 1), not the last frame's φ
  const frames = Number((await page.textContent('#phi-msg')).match(/video: (\d+) frames/)[1]);
  assert.match(name, new RegExp(`_phi0-${frames - 1}_`), name);
  assert.ok(bytes.length > 1000, 'not empty');
  assert.deepEqual([...bytes.subarray(0, 4)], [0x1a, 0x45, 0xdf, 0xa3], 'an EBML (WebM) header');
  const v = await page.evaluate(async () => {
    const video = document.createElement('video');
    video.muted = true;
    video.src = URL.createObjectURL(window.nanobragg.teach.player.lastVideo);
    document.body.appendChild(video);
    await new Promise((ok, fail) => { video.onloadedmetadata = ok; video.onerror = () => fail(new Error(`video error ${video.error?.code}`)); });
    const r = { readyState: video.readyState, duration: video.duration, w: video.videoWidth, h: video.videoHeight };
    video.remove();
    return r;
  });
  console.log(`# video metadata: ${JSON.stringify(v)}`);
  assert.ok(v.readyState >= 1 && v.w > 0 && v.h > 0, 'loads as a video');
  assert.ok(v.duration > 0, `duration ${v.duration}`);
  // a second click on Record stops a long recording with the frames so far
  await page.fill('#phi-to', '60');
  const stopped = page.waitForEvent('download', { timeout: 120_000 });
  await page.click('#phi-record');
  assert.equal(await page.textContent('#phi-record'), '■ Stop recording');
  await page.waitForFunction(() => /recording frame [3-9]/.test(document.getElementById('phi-msg').textContent));
  await page.click('#phi-record');
  const short = await stopped;
  const msg = await page.textContent('#phi-msg');
  const k = Number(/video: (\d+) frames/.exec(msg)?.[1]);
  assert.ok(k >= 2 && k < 61, `stopped after ${k} of 61 frames (${msg})`);
  assert.ok(readFileSync(await short.path()).length > 1000);
  assert.equal(await page.textContent('#phi-record'), '● Record video');
  const [png] = await Promise.all([page.waitForEvent('download'), page.click('#phi-png')]);
  const pb = readFileSync(await png.path());
  assert.deepEqual([...pb.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'PNG signature');
  assert.match(png.suggestedFilename(), /^nanobragg_cell100-100-100-90-90-90_lambda6\.2_N10_dist100_phi\d+_misset5-3-0_128x128\.png$/);
  assert.equal(png.suggestedFilename().match(/_phi(\d+)_/)[1], await page.evaluate(() => window.nanobragg.state().phi), 'the file name has the frame\'s φ');
  assert.deepEqual(errors, []);
  await page.close();
});

test('each teaching preset renders at 512² and shows its sentence (screenshots at 1280×720 and 1920×1080)', { timeout: 600_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu`);
  await waitRendered(page, 1);
  // the teaching presets (the realistic still has its own test: realistic.test.mjs)
  const withNotes = PRESETS.filter((p) => p.note && !p.state.pdb);
  assert.ok(withNotes.length >= 8, 'the teaching presets have notes');
  for (const p of withNotes) {
    const n = (await shown(page)).count;
    await page.selectOption('#preset', p.id);
    await waitFull(page, n);
    const s = await shown(page);
    const note = await page.textContent('#preset-note');
    // spots, not an empty image with rings: local maxima above 1/1000 of the brightest pixel
    // (what the default log display shows)
    const max = s.data.reduce((a, b) => (b > a ? b : a), 0);
    let spots = 0;
    for (let y = 1; y < s.w - 1; y++) {
      for (let x = 1; x < s.w - 1; x++) {
        const i = y * s.w + x, v = s.data[i];
        if (v > 1e-3 * max && v > s.data[i - 1] && v >= s.data[i + 1] && v > s.data[i - s.w] && v >= s.data[i + s.w]) spots++;
      }
    }
    console.log(`# preset ${p.id}: ${s.w}² render ${s.ms.toFixed(0)} ms, ${spots} spots (local maxima above max/1000)`);
    assert.ok(spots >= 20, `${p.id}: spots on the image (${spots})`);
    assert.ok(note.includes(p.note.slice(0, 40)), `${p.id}: its sentence is shown`);
    // the preset's name is readable in the menu at 1280×720 (it was cut to "Teach: wavelength vs")
    const fit = await page.evaluate(() => {
      const sel = document.getElementById('preset');
      const ctx = document.createElement('canvas').getContext('2d');
      ctx.font = getComputedStyle(sel).font;
      return { text: ctx.measureText(sel.selectedOptions[0].text).width, box: sel.clientWidth };
    });
    assert.ok(fit.text + 16 <= fit.box, `${p.id}: its name fits the preset menu ${JSON.stringify(fit)}`);
    // all six numbers of the cell are visible (γ was cut off in a 150 px field)
    const cell = await page.evaluate(() => { const c = document.getElementById('f-cell'); return { value: c.value, scroll: c.scrollWidth, box: c.clientWidth }; });
    assert.ok(cell.scroll <= cell.box, `${p.id}: the cell field shows its whole value ${JSON.stringify(cell)}`);
    assert.equal(s.w, 512);
    assert.ok((await canvasSpread(page)) > 5, `${p.id}: not blank`);
    await page.screenshot({ path: join(ARTIFACTS, `teach-preset-${p.id}-1280.png`) });
  }
  await page.setViewportSize({ width: 1920, height: 1080 });
  for (const id of ['cubic', 'rotation']) {
    const n = (await shown(page)).count;
    await page.selectOption('#preset', id);
    await waitFull(page, n);
    await page.screenshot({ path: join(ARTIFACTS, `teach-preset-${id}-1920.png`) });
  }
  assert.deepEqual(errors, []);
  await page.close();
});
