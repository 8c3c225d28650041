// A measured image beside and over the simulation (www/src/measured/): files made by
// scripts/make_measured.py (h5py + hdf5plugin, fabio) open through the page's "Open measured
// image…" input; the measured view holds the file's pixels as h5py/fabio read them; the file's
// geometry is in the form; the modes place the views; errors name the file; an EIGER2
// 16M-sized frame opens within 5 s (MEASURED_BENCH=1 prints the timings) and zoom/pan stay
// responsive; screenshots at 1280×720 and 1920×1080 in tests/artifacts/measured-*.png.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open, waitRendered, ARTIFACTS, ROOT, setup } from './helpers.mjs';

const env = setup({ webgpu: false });
const dir = mkdtempSync(join(tmpdir(), 'nb-measured-'));
let cases = [];

before(() => {
  const py = process.env.NANOBRAGG_PYTHON ?? join(ROOT, 'target', 'pyvenv', 'bin', 'python');
  const r = spawnSync(py, [join(ROOT, 'scripts', 'make_measured.py'), dir, '--eiger16m'], { encoding: 'utf8' });
  assert.equal(r.status, 0, `make_measured.py (h5py, hdf5plugin, fabio: scripts/setup.sh python): ${r.error ?? ''}${r.stderr}`);
  cases = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'));
});

/** The expected pixels as the page shows them: the file's values (h5py/fabio), flagged → −1. */
function expected(c) {
  const b = readFileSync(join(dir, `${c.name}.expect`));
  const ab = b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
  const src = { uint32: Uint32Array, int32: Int32Array, uint16: Uint16Array, int16: Int16Array, uint8: Uint8Array }[c.dtype];
  const v = new src(ab);
  const flag = c.dtype === 'uint32' ? 0xffffffff : c.dtype === 'uint16' ? 0xffff : null;
  return Float32Array.from(v, (x) => (x === flag || x < 0 ? -1 : x));
}

async function openMeasured(page, files) {
  const t0 = Date.now();
  await page.setInputFiles('.mbar .mfile', files.map((f) => join(dir, f)));
  await page.waitForFunction((name) => window.nanobragg.measured?.info?.name === name, files.find((f) => /master|\.cbf|\.img|gzip|lz4/.test(f)) ?? files[0], { timeout: 60_000 });
  return Date.now() - t0;
}

/** Compare the measured view's pixels with the file's (hash-free: exact, element by element). */
async function shownPixels(page) {
  return page.evaluate(() => {
    const m = window.nanobragg.measured;
    return { w: m.info.width, h: m.info.height, data: Array.from(m.mview.image.data) };
  });
}

test('SMV, miniCBF and NeXus/HDF5 open with the pixels h5py and fabio read, and their geometry in the form', { timeout: 240_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=64`);
  await waitRendered(page, 1);
  for (const [name, files] of [
    ['gzip_i32', ['gzip.h5']],
    ['adsc_be', ['adsc_be.img']],
    ['fabio_cbf', ['fabio.cbf']],
    ['eiger_bslz4', ['eiger_master.h5', 'eiger_data_000001.h5', 'eiger_data_000002.h5']],
    ['tiles_bslz4_u16', ['tiles_master.h5', 'tiles_data_000001.h5']],
  ]) {
    const c = cases.find((x) => x.name === name);
    await openMeasured(page, files);
    const shown = await shownPixels(page);
    assert.deepEqual([shown.h, shown.w], c.shape, name);
    const want = expected(c);
    let bad = -1;
    for (let i = 0; i < want.length; i++) if (shown.data[i] !== want[i]) { bad = i; break; }
    assert.equal(bad, -1, `${name}: the overlay's pixel ${bad} is ${shown.data[bad]}, the file's ${want[bad]}`);
    // the geometry is the form's
    const st = await page.evaluate(() => window.nanobragg.state());
    assert.equal(st.detpixels_f, String(c.shape[1]), name);
    assert.equal(st.detpixels_s, String(c.shape[0]), name);
    if (c.geometry.pixel_mm) assert.ok(Math.abs(Number(st.pixel) - c.geometry.pixel_mm) < 1e-9, `${name}: pixel ${st.pixel}`);
    if (c.geometry.distance_mm) assert.ok(Math.abs(Number(st.distance) - c.geometry.distance_mm) < 1e-9, `${name}: distance ${st.distance}`);
    if (c.geometry.wavelength_a) assert.ok(Math.abs(Number(st.lambda) - c.geometry.wavelength_a) < 1e-12, `${name}: lambda ${st.lambda}`);
  }
  // a file that does not say its wavelength: named in the note, the form's kept
  await openMeasured(page, ['lz4.h5']);
  assert.match(await page.textContent('.mbar .mnote'), /does not say the .*wavelength.*the form's values are kept/);
  assert.deepEqual(errors, []);
  await page.close();
});

test('the modes place the measured view beside, over, blinking and as the difference', { timeout: 240_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=64`);
  await waitRendered(page, 1);
  await openMeasured(page, ['gzip.h5']);
  // the simulation of the file's detector (131 × 97) is rendered: the views share its geometry
  await page.waitForFunction(() => window.nanobragg.lastRender().result?.width === 131 && !window.nanobragg.lastRender().preview, null, { timeout: 120_000 });
  const where = () => page.evaluate(() => {
    const m = window.nanobragg.measured;
    return { parent: m.mhost.parentElement.id || m.mhost.parentElement.className, hidden: m.mhost.hidden, opacity: m.mhost.style.opacity };
  });
  await page.selectOption('.mbar .mmode', 'side');
  assert.deepEqual(await where(), { parent: 'stage', hidden: false, opacity: '' });
  // one zoom and pan: zooming the measured view moves the simulation's
  const vp = await page.evaluate(() => {
    const m = window.nanobragg.measured;
    m.mview.zoomBy(2);
    m.mview.panBy(30, -10);
    return [m.mview.viewport, window.nanobragg.view.viewport];
  });
  assert.deepEqual(vp[0], vp[1]);
  await page.selectOption('.mbar .mmode', 'blend');
  await page.fill('.mbar .mblend', '0.25');
  await page.dispatchEvent('.mbar .mblend', 'input');
  assert.deepEqual(await where(), { parent: 'canvas-host', hidden: false, opacity: '0.75' });
  await page.selectOption('.mbar .mmode', 'blink');
  const vis = await page.evaluate(async () => {
    const m = window.nanobragg.measured.mhost;
    const seen = new Set();
    const t0 = performance.now();
    while (performance.now() - t0 < 1800) { seen.add(m.style.visibility || 'visible'); await new Promise((r) => setTimeout(r, 50)); }
    return [...seen].sort();
  });
  assert.deepEqual(vis, ['hidden', 'visible']);
  await page.selectOption('.mbar .mmode', 'diff');
  const diff = await page.evaluate(() => {
    const m = window.nanobragg.measured;
    const sim = window.nanobragg.view.image;
    const k = Number(document.querySelector('.mbar .mnote').dataset.k);
    const md = m.info.pixels, d = m.mview.image.data;
    let worst = 0;
    for (let i = 0; i < d.length; i++) {
      const want = md[i] >= 0 ? Math.fround(md[i] - k * sim.data[i]) : 0;
      worst = Math.max(worst, Math.abs(d[i] - want));
    }
    return { k, worst, n: d.length, geometry: m.mview.geometry !== null };
  });
  assert.ok(diff.k > 0 && diff.worst === 0, JSON.stringify(diff));
  assert.ok(diff.geometry, 'the measured view has the simulation\'s geometry (rings, d, hkl)');
  // the readout gives both values
  await page.selectOption('.mbar .mmode', 'side');
  const box = await page.locator('.mhost canvas').boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  assert.match(await page.textContent('.mbar .mread'), /^pixel \(\d+, \d+\)  measured \S+  ·  simulated \S+/);
  // and the status bar's readout has the crate's d, 2θ, hkl at that pixel
  await page.waitForFunction(() => /d = .* Å .*2θ/.test(document.getElementById('readout').textContent), null, { timeout: 30_000 });
  await page.selectOption('.mbar .mmode', 'sim');
  assert.equal((await where()).hidden, true);
  // errors name the file: an EIGER master without its data file
  await page.setInputFiles('.mbar .mfile', [join(dir, 'eiger_master.h5')]);
  await page.waitForFunction(() => /eiger_master\.h5: .*eiger_data_000001\.h5, which was not given/.test(document.getElementById('notice-text').textContent), null, { timeout: 30_000 });
  assert.deepEqual(errors, []);
  await page.close();
});

test('a CrystFEL .geom dropped or opened becomes the simulation\'s -geom: its panels are rendered', { timeout: 240_000 }, async () => {
  // one 100 × 100 plane cut in two panels at ss 40 (crate/tests/panels.rs checks the kernels on
  // the same cut); the page must render the file's detector, 100 × 100 pixels of 0.1 mm
  const geom = join(dir, 'two.geom');
  writeFileSync(geom, 'photon_energy = 12398.419843320026 eV\nres = 10000\nclen = 0.1 m\n' +
    'a/min_fs = 0\na/max_fs = 99\na/min_ss = 0\na/max_ss = 39\na/fs = -1.0x\na/ss = -1.0y\na/corner_x = 48.5\na/corner_y = 51.0\n' +
    'b/min_fs = 0\nb/max_fs = 99\nb/min_ss = 40\nb/max_ss = 99\nb/fs = -1.0x\nb/ss = -1.0y\nb/corner_x = 48.5\nb/corner_y = 11.0\n');
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=64`);
  await waitRendered(page, 1);
  await page.setInputFiles('.mbar .mfile', [geom]);
  await page.waitForFunction(() => window.nanobragg.lastRender().result?.width === 100 && window.nanobragg.lastRender().result?.height === 100 && !window.nanobragg.lastRender().preview, null, { timeout: 120_000 });
  assert.match(page.url(), /geom=two\.geom/);
  assert.match(await page.textContent('.mbar'), /two\.geom: the simulation uses its panels \(-geom\)/);
  const px = await page.evaluate(() => window.nanobragg.lastRender().result.geometry.pixel);
  assert.ok(Math.abs(px - 0.1) < 1e-9, `pixel ${px} mm`);
  assert.deepEqual(errors, []);
  await page.close();
});

test('an EIGER2 16M frame opens within 5 s; zoom and pan stay responsive; screenshots', { timeout: 300_000 }, async () => {
  for (const vp of [{ width: 1280, height: 720 }, { width: 1920, height: 1080 }]) {
    const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=64&cell=79+79+38+90+90+90&lambda=0.9763&N=12&misset=10+25+5&default_F=100`, { viewport: vp });
    await waitRendered(page, 1);
    const ms = await openMeasured(page, ['eiger16m_master.h5', 'eiger16m_data_000001.h5']);
    const t = await page.evaluate(() => window.nanobragg.measured.timings);
    if (process.env.MEASURED_BENCH) console.log(`# 16M open at ${vp.width}x${vp.height}: ${ms} ms (page ${JSON.stringify(t)})`);
    assert.ok(ms < 5000, `the 16M frame opened in ${ms} ms`);
    // responsiveness: 30 zoom and pan steps, each drawn at once (both views); the median step
    const perDraw = await page.evaluate(() => {
      const m = window.nanobragg.measured.mview;
      const t = [];
      for (let i = 0; i < 15; i++) {
        for (const step of [() => m.zoomBy(1.15), () => m.panBy(7, 5)]) {
          const t0 = performance.now();
          step();
          t.push(performance.now() - t0);
        }
      }
      t.sort((a, b) => a - b);
      return { median: t[15], max: t[29] };
    });
    if (process.env.MEASURED_BENCH) console.log(`# zoom/pan step: median ${perDraw.median.toFixed(1)} ms, slowest ${perDraw.max.toFixed(1)} ms`);
    assert.ok(perDraw.median < 100, `a zoom/pan step takes ${perDraw.median} ms (median)`);
    // the predicted spots (what is on the image, predicted in the measured-image worker while
    // the simulation's worker renders the 16M detector)
    await page.waitForFunction(() => window.nanobragg.measured.spotCount > 100, null, { timeout: 120_000 });
    const spots = await page.evaluate(() => ({ n: window.nanobragg.measured.spotCount, ms: window.nanobragg.measured.predictMs }));
    if (process.env.MEASURED_BENCH) console.log(`# spots on the 16M detector: ${spots.n} predicted in ${spots.ms.toFixed(0)} ms`);
    // drawn over the measured image (green rings), before the simulation of its detector exists
    await page.evaluate(() => window.nanobragg.measured.mview.fit());
    const green = await page.evaluate(() => {
      const c = window.nanobragg.measured.mview.canvas;
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 0; i < d.length; i += 4) if (d[i + 1] > d[i] + 60 && d[i + 1] > d[i + 2] + 30) n++;
      return n;
    });
    assert.ok(green > 5 * spots.n, `${green} spot-ring pixels for ${spots.n} spots`);
    await page.evaluate(() => window.nanobragg.measured.mview.fit());
    await page.screenshot({ path: join(ARTIFACTS, `measured-16m-side-${vp.width}.png`) });
    await page.selectOption('.mbar .mmode', 'blend');
    await page.screenshot({ path: join(ARTIFACTS, `measured-16m-blend-${vp.width}.png`) });
    assert.deepEqual(errors, []);
    await page.close();
  }
});
