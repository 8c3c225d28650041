// Shared set-up for the browser tests: the static server (with or without COOP/COEP) and
// headless Debian chromium through playwright-core (WebGPU via SwiftShader). Never downloads a
// browser: the executable is /usr/bin/chromium (or $CHROMIUM).
import { before, after } from 'node:test';
import { chromium } from 'playwright-core';
import { mkdtempSync, mkdirSync, existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '../../scripts/serve.mjs';
import { createServer } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { extname, normalize, resolve } from 'node:path';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const DIST = join(ROOT, 'www', 'dist');
export const ARTIFACTS = join(ROOT, 'tests', 'artifacts');
mkdirSync(ARTIFACTS, { recursive: true });

export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

/** Golden fixtures: the core branch's copy, or the shared one. */
export function goldenDir() {
  for (const d of [process.env.GOLDEN_DIR, join(ROOT, 'tests', 'fixtures', 'golden'), join(ROOT, '..', 'shared', 'golden')]) {
    if (d && existsSync(d)) return d;
  }
  return null;
}

/**
 * A plain static server, as GitHub Pages or `python3 -m http.server` are: files and their
 * Content-Type, no other header (no COOP/COEP, no CORP). Serves `root` under the URL path
 * `prefix` (a site under /user/project/); every other path is a 404, and `misses` lists the
 * paths asked for outside it. Resolves to {server, url, misses, requests, stop()}.
 */
export async function plainServer({ root = DIST, prefix = '/' } = {}) {
  const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.json': 'application/json',
    '.wasm': 'application/wasm', '.cif': 'text/plain', '.md': 'text/plain', '.txt': 'text/plain', '.png': 'image/png' };
  const base = resolve(root);
  const misses = [];
  const requests = [];
  const server = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    requests.push(path);
    if (!path.startsWith(prefix)) { misses.push(path); res.writeHead(404).end(); return; }
    let file = normalize(join(base, path.slice(prefix.length)));
    if (!file.startsWith(base)) { res.writeHead(403).end(); return; }
    try {
      if ((await stat(file)).isDirectory()) file = join(file, 'index.html');
      const body = await readFile(file);
      res.writeHead(200, { 'Content-Type': TYPES[extname(file)] ?? 'application/octet-stream' }).end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  const stop = () => new Promise((ok) => { server.close(() => ok()); server.closeAllConnections(); });
  return { server, url: `http://127.0.0.1:${server.address().port}${prefix.replace(/\/$/, '')}`, misses, requests, stop };
}

export async function launch({ webgpu = true, viewport = { width: 1280, height: 720 }, colorScheme = 'light' } = {}) {
  const args = [
    '--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run',
    '--disable-dev-shm-usage',
  ];
  if (webgpu) args.push('--enable-unsafe-webgpu', '--use-webgpu-adapter=swiftshader', '--enable-features=Vulkan');
  else args.push('--disable-webgpu', '--disable-features=WebGPU,Vulkan');
  const userDataDir = mkdtempSync(join(tmpdir(), 'nb-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM, headless: true, args, viewport, acceptDownloads: true, colorScheme,
  });
  return context;
}

export async function serve({ isolation = true, root = DIST } = {}) {
  return startServer({ port: 0, root, isolation });
}

/** Open a page and collect console errors and page errors (and warnings, separately). */
export async function open(context, url, { viewport, colorScheme } = {}) {
  const page = await context.newPage();
  if (viewport) await page.setViewportSize(viewport);
  if (colorScheme) await page.emulateMedia({ colorScheme });
  const errors = [];
  const warnings = [];
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()}`);
    if (m.type() === 'warning') warnings.push(m.text());
  });
  await page.goto(url);
  return { page, errors, warnings };
}

/** Standard deviation of a canvas's pixels (0 = blank); `sel` in the page or a shadow root. */
export async function canvasSpread(page, sel = '.nb-canvas') {
  return page.evaluate((sel) => {
    const c = typeof sel === 'string' ? document.querySelector(sel) : null;
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let s = 0, s2 = 0, n = 0;
    for (let i = 0; i < d.length; i += 16) { const v = d[i]; s += v; s2 += v * v; n++; }
    const m = s / n;
    return Math.sqrt(s2 / n - m * m);
  }, sel);
}

/**
 * On a host without COOP/COEP the site's service worker (www/site/coi.js) reloads the page once,
 * on the first visit: wait until that is settled (isolated, or given up), across the reload.
 */
export async function isolationSettled(page, timeout = 60_000) {
  const t0 = Date.now();
  while (Date.now() - t0 < timeout) {
    const s = await page.evaluate(() => window.nanobraggIsolation?.state).catch(() => null);
    if (['isolated', 'failed', 'unavailable'].includes(s)) return s;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the page did not settle its cross-origin isolation');
}

/** Wait until the app has shown `n` renders. */
export async function waitRendered(page, n = 1, timeout = 120_000) {
  await page.waitForFunction((n) => Number(document.body.dataset.rendered ?? 0) >= n, n, { timeout });
}

export function pearson(a, b) {
  const n = a.length;
  let ma = 0, mb = 0;
  for (let i = 0; i < n; i++) { ma += a[i]; mb += b[i]; }
  ma /= n; mb /= n;
  let sab = 0, saa = 0, sbb = 0;
  for (let i = 0; i < n; i++) {
    const x = a[i] - ma, y = b[i] - mb;
    sab += x * y; saa += x * x; sbb += y * y;
  }
  return sab / Math.sqrt(saa * sbb);
}

export function readFloats(path) {
  const b = readFileSync(path);
  return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
}

/**
 * In the page: `drive` (an in-page function of `args`) gives {move(t), release(), extra?()}:
 * `move` runs once per animation frame for `args.ms` milliseconds (t: ms since the start),
 * then `release`; counts the `nanobragg-frame` events shown meanwhile and waits for the final
 * full image. Returns {frames, fps, previews, sizes, backends, sizeCounts, sizeMs, renderMs,
 * finalWidth, finalPreview, ...extra()}.
 */
function measureDrag(page, drive, args) {
  return page.evaluate(`(${framesDuringDrag})((${drive})(${JSON.stringify(args)}), ${JSON.stringify(args.ms)})`);
}

// (in the page, serialized by measureDrag)
async function framesDuringDrag({ move, release, extra }, ms) {
  const frames = [];
  const onFrame = (e) => frames.push({ t: performance.now(), ...e.detail });
  window.addEventListener('nanobragg-frame', onFrame);
  const t0 = performance.now();
  await new Promise((done) => {
    const step = () => {
      const t = performance.now() - t0;
      if (t >= ms) return done();
      move(t);
      requestAnimationFrame(step);
    };
    requestAnimationFrame(step);
  });
  const during = frames.filter((f) => f.t - t0 <= ms);
  release();
  const t1 = performance.now();
  while (performance.now() - t1 < 120_000) {
    const last = frames[frames.length - 1];
    if (last && !last.preview && last.t > t1) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  window.removeEventListener('nanobragg-frame', onFrame);
  const last = frames[frames.length - 1];
  const size = (f) => `${f.width}x${f.height}`;
  return {
    frames: during.length, fps: (during.length * 1000) / ms, previews: during.filter((f) => f.preview).length,
    sizes: [...new Set(during.map(size))], backends: [...new Set(during.map((f) => f.backend))],
    // frames shown per size (e.g. {"512x512": 40, "256x256": 3}) and per size the mean render time
    sizeCounts: during.reduce((m, f) => ({ ...m, [size(f)]: (m[size(f)] ?? 0) + 1 }), {}),
    sizeMs: Object.fromEntries([...new Set(during.map(size))].map((s) => {
      const fs = during.filter((f) => size(f) === s);
      return [s, +(fs.reduce((a, f) => a + f.renderMs, 0) / fs.length).toFixed(1)];
    })),
    renderMs: during.length ? during.reduce((a, f) => a + f.renderMs, 0) / during.length : 0,
    finalWidth: last?.width, finalPreview: last?.preview,
    ...extra?.(),
  };
}

/**
 * Drag a slider of the app for `ms` milliseconds (one input event per animation frame, as a
 * mouse drag gives), then release it; counts the `nanobragg-frame` events shown during the drag
 * and waits for the final full image (`measureDrag`).
 */
export async function dragSlider(page, { slider = 'f-distance-slider', from = 100, to = 160, ms = 3000 } = {}) {
  return measureDrag(page, ({ slider, from, to, ms }) => {
    const el = document.getElementById(slider);
    return {
      move: (t) => {
        el.value = String(from + ((to - from) * t) / ms);
        el.dispatchEvent(new Event('input', { bubbles: true }));
      },
      release: () => {
        el.value = String(to);
        el.dispatchEvent(new Event('change', { bubbles: true }));
      },
    };
  }, { slider, from, to, ms });
}

/**
 * The usual set-up of a test file: a static server (with or without COOP/COEP, of `root` or
 * the build, or of a folder `prepare()` returns) and, when `webgpu` is given, one browser for
 * the file. Returns an object whose `base`, `ctx` and `server` are filled in before the tests.
 */
export function setup({ isolation = true, webgpu, prepare } = {}) {
  const env = { base: '', ctx: null, server: null };
  before(async () => {
    const s = await serve({ isolation, root: prepare ? await prepare() : DIST });
    env.server = s.server;
    env.base = s.url;
    if (webgpu !== undefined) env.ctx = await launch({ webgpu });
  });
  after(async () => {
    await env.ctx?.close();
    env.server?.close();
  });
  return env;
}

/**
 * Rotate the crystal by a Shift+drag (or Alt+drag: `spin`) on the app's image for `ms`
 * milliseconds: synthetic pointer events, one move per animation frame, `pxPerFrame` pixels
 * each (a circle around the image centre for tilt, an arc for spin); counts the
 * `nanobragg-frame` events during the drag and waits for the final full image (`measureDrag`,
 * with the final `misset`).
 */
export async function dragRotate(page, { ms = 3000, spin = false, pxPerFrame = 4 } = {}) {
  return measureDrag(page, ({ spin, pxPerFrame }) => {
    const c = document.querySelector('.nb-canvas');
    const box = c.getBoundingClientRect();
    const cx = box.left + box.width / 2, cy = box.top + box.height / 2;
    const rad = Math.min(box.width, box.height) / 4;
    const ev = (type, x, y) => c.dispatchEvent(new PointerEvent(type, {
      bubbles: true, cancelable: true, composed: true, pointerId: 7, pointerType: 'mouse', isPrimary: true,
      button: 0, buttons: type === 'pointerup' ? 0 : 1, clientX: x, clientY: y, shiftKey: !spin, altKey: spin,
    }));
    let a = 0;
    const at = () => [cx + rad * Math.cos(a), cy + rad * Math.sin(a)];
    ev('pointerdown', ...at());
    return {
      move: () => {
        a += pxPerFrame / rad;
        ev('pointermove', ...at());
      },
      release: () => ev('pointerup', ...at()),
      extra: () => ({ misset: window.nanobragg.state().misset }),
    };
  }, { ms, spin, pxPerFrame });
}
