// The f32 row kernel's hand-written simd128 lanes (crate/src/cpu/row32.rs `wasm_lanes`: the
// terms' Miller indices, f64 or hybrid, structure-factor cells and lattice factors) against the
// portable scalar loops of the same wasm binary (`set_hand_lanes(false)`): each of the page's two
// modules (the plain one and the threaded one, on a pool of two threads) renders one image both
// ways in a Chromium worker, as the page's worker does, with the hybrid indices
// (`row32::HybridIndices`, the mosaic domains' default) and with the f64 indices
// (`set_hybrid_indices(false)`), and the f32 bits must be identical. The golden tests only bound
// these lanes by correlation (>= 0.9999); this is their bit-for-bit guard.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup, open } from './helpers.mjs';

const env = setup({ webgpu: false });

// A structure-factor table (so the lanes find each term's cell; reflections beyond +-9 fall
// outside it and take default_F) on a triclinic cell with misset, 6 mosaic domains, 2x2
// sub-pixels, a resolution limit (the lanes' pass mask) and a detector 250 pixels wide (blocks of
// 64 with a tail of 58: the scalar remainder after the vector lanes). Square shape, nearest
// look-up, flat detector: the row kernel's case (`row32::applies`).
const ARGS = '-hkl lanes.hkl -nointerpolate -default_F 3 -cell 70 80 90 85 95 100 -misset 10 20 30 ' +
  '-N 12 -lambda 1 -distance 80 -detpixels 250 -pixel 0.3 -mosaic 1 -mosaic_domains 6 -oversample 2 -dmin 1.6';

function hkl() {
  const lines = [];
  for (let h = -9; h <= 9; h++)
    for (let k = -9; k <= 9; k++)
      for (let l = -9; l <= 9; l++) lines.push(`${h} ${k} ${l} ${1 + ((h * 7 + k * 13 + l * 17) % 11 + 11) % 11}`);
  return lines.join('\n') + '\n';
}

// What a module worker runs: load the module (`dir`: pkg or pkg-parallel, whose thread pool
// needs a worker: the main thread may not block), render both ways, compare.
const WORKER = `
self.onmessage = async ({ data: { origin, dir, args, table } }) => {
  try {
    const m = await import(origin + '/' + dir + '/nanobragg.js');
    await m.default({ module_or_path: origin + '/' + dir + '/nanobragg_bg.wasm' });
    if (m.initThreadPool) await m.initThreadPool(2);
    m.set_file('lanes.hkl', new TextEncoder().encode(table));
    m.prepare(m.split_args(args));
    const render = async (hand) => {
      const had = m.set_hand_lanes(hand);
      m.hand_lane_blocks();
      const img = m.render_cpu(false);
      const blocks = m.hand_lane_blocks();
      const sha = new Uint8Array(await crypto.subtle.digest('SHA-256', img));
      return { had, img, blocks, sha: Array.from(sha, (b) => b.toString(16).padStart(2, '0')).join('') };
    };
    m.set_hybrid_indices(false);
    const f64a = await render(true);
    const f64b = await render(false);
    m.set_hybrid_indices(true);
    const a = await render(true);
    const b = await render(false);
    m.set_hand_lanes(true);
    const same = (x, y) => { const ux = new Uint32Array(x.img.buffer), uy = new Uint32Array(y.img.buffer); let d = 0; for (let i = 0; i < ux.length; i++) d += ux[i] !== uy[i]; return d; };
    const f64diff = same(f64a, f64b), hybridRan = same(a, f64a);
    const ua = new Uint32Array(a.img.buffer), ub = new Uint32Array(b.img.buffer);
    let diff = 0, first = -1, max = 0, nonzero = 0;
    const distinct = new Set();
    for (let i = 0; i < ua.length; i++) {
      if (ua[i] !== ub[i]) { diff++; if (first < 0) first = i; }
      max = Math.max(max, a.img[i]);
      if (a.img[i] > 0) nonzero++;
      if (distinct.size < 5000) distinct.add(ua[i]);
    }
    self.postMessage({ had: a.had && b.had, threaded: !!m.initThreadPool, blocks: [a.blocks, b.blocks], n: ua.length, diff, first,
      max, nonzero, distinct: distinct.size, sha: [a.sha, b.sha], f64diff, hybridRan, info: m.build_info() });
  } catch (e) {
    self.postMessage({ error: String(e && e.stack || e) });
  }
};`;

for (const dir of ['pkg', 'pkg-parallel']) {
  test(`f32 row kernel (${dir}): simd128 hand lanes and portable loops give the same bits`, { timeout: 120_000 }, async () => {
    const { page, errors } = await open(env.ctx, `${env.base}/build-info.json`);
    const out = await page.evaluate(async ({ src, dir, args, table }) => {
      const w = new Worker(URL.createObjectURL(new Blob([src], { type: 'text/javascript' })), { type: 'module' });
      const r = await new Promise((ok) => {
        w.onmessage = (e) => ok(e.data);
        w.onerror = (e) => ok({ error: e.message });
        w.postMessage({ origin: location.origin, dir, args, table });
      });
      w.terminate();
      return { ...r, isolated: self.crossOriginIsolated };
    }, { src: WORKER, dir, args: ARGS, table: hkl() });
    assert.equal(out.error, undefined, out.error);
    // (a bare document: the browser's request for /favicon.ico is the one 404 expected)
    assert.deepEqual(errors.filter((e) => !e.includes('404')), []);
    assert.ok(out.had, `this module has no hand simd128 lanes (${out.info})`);
    assert.equal(out.threaded, dir === 'pkg-parallel', `${dir}: a thread pool iff the threaded module (isolated: ${out.isolated})`);
    // the hand lanes ran on every block of the first render (250 rows of 4 blocks, 2x2
    // sub-pixels) and on none of the second
    assert.ok(out.blocks[0] >= 1000 && out.blocks[1] === 0, `hand-lane blocks ${out.blocks}`);
    assert.equal(out.n, 250 * 250);
    // a real image: spots over a range of values, no blank or constant image
    assert.ok(out.nonzero > out.n / 2 && out.distinct >= 5000 && out.max > 0, JSON.stringify(out));
    assert.equal(out.diff, 0, `${out.diff} pixels differ, the first at ${out.first}`);
    assert.equal(out.sha[0], out.sha[1]);
    // the f64 indices: the same bits both ways too; the hybrid ran (its image is not theirs)
    assert.equal(out.f64diff, 0, `f64 indices: ${out.f64diff} pixels differ`);
    assert.ok(out.hybridRan > 1000, `the hybrid indices changed ${out.hybridRan} pixels`);
    console.log(`# lanes ${dir}: sha256 ${out.sha[0].slice(0, 16)}; ${out.blocks[0]} blocks in the hand lanes (${out.info})`);
  });
}
