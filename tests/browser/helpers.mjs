// Shared set-up for the browser tests: the static server (with or without COOP/COEP) and
// headless Debian chromium through playwright-core (WebGPU via SwiftShader). Never downloads a
// browser: the executable is /usr/bin/chromium (or $CHROMIUM).
import { chromium } from 'playwright-core';
import { mkdtempSync, mkdirSync, existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '../../scripts/serve.mjs';

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

export async function launch({ webgpu = true } = {}) {
  const args = [
    '--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run',
    '--disable-dev-shm-usage',
  ];
  if (webgpu) args.push('--enable-unsafe-webgpu', '--use-webgpu-adapter=swiftshader', '--enable-features=Vulkan');
  else args.push('--disable-webgpu', '--disable-features=WebGPU,Vulkan');
  const userDataDir = mkdtempSync(join(tmpdir(), 'nb-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM, headless: true, args, viewport: { width: 1280, height: 720 }, acceptDownloads: true,
  });
  return context;
}

export async function serve({ isolation = true, root = DIST } = {}) {
  return startServer({ port: 0, root, isolation });
}

/** Open a page and collect console errors and page errors. */
export async function open(context, url) {
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(`console: ${m.text()}`); });
  await page.goto(url);
  return { page, errors };
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
