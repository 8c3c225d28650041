// The published folder (www/dist) on a plain static host: tests/browser/helpers.mjs plainServer
// sends files and their types only (no COOP/COEP), as GitHub Pages or `python3 -m http.server`
// do, and serves the site under /user/project/ (a project page's base path). The service worker
// (www/site/coi.js + sw.js) adds the headers: after its one reload the app is crossOriginIsolated
// and renders on more than one thread, the element's example page too; with the server gone, a
// second visit is served from the worker's cache; without service workers the page renders on
// one thread and says why.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { launch, open, canvasSpread, plainServer, ARTIFACTS } from './helpers.mjs';

const PREFIX = '/user/project/';
let host, ctx;
before(async () => {
  host = await plainServer({ prefix: PREFIX });
  ctx = await launch({ webgpu: false });
});
after(async () => {
  await ctx?.close();
  await host?.stop();
});

/** Poll `fn` in the page until it returns a truthy value (across the service worker's reload). */
async function until(page, fn, arg, timeout = 150_000) {
  const t0 = Date.now();
  let last;
  while (Date.now() - t0 < timeout) {
    try {
      last = await page.evaluate(fn, arg);
      if (last) return last;
    } catch { /* the page is reloading */ }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`timed out; last ${JSON.stringify(last)}`);
}

const appState = () => ({
  iso: crossOriginIsolated,
  rendered: Number(document.body.dataset.rendered ?? 0),
  label: document.getElementById('backend-label')?.textContent,
  threads: Number(document.getElementById('backend-label')?.dataset.threads ?? 0),
  coi: window.nanobraggIsolation?.state,
});

test('plain host under /user/project/: the service worker isolates the page, the app renders on threads', { timeout: 200_000 }, async () => {
  const { page, errors } = await open(ctx, `${host.url}/`);
  const s = await until(page, () => crossOriginIsolated && Number(document.body.dataset.rendered ?? 0) >= 1
    && Number(document.getElementById('backend-label').dataset.threads) > 0 && {
    iso: crossOriginIsolated, label: document.getElementById('backend-label').textContent,
    threads: Number(document.getElementById('backend-label').dataset.threads), coi: window.nanobraggIsolation.state,
    controlled: !!navigator.serviceWorker.controller,
  });
  console.log('# site app:', JSON.stringify(s));
  assert.equal(s.iso, true);
  assert.equal(s.controlled, true);
  assert.equal(s.coi, 'isolated');
  assert.ok(s.threads > 1, `threads: ${JSON.stringify(s)}`);
  assert.match(s.label, /^CPU · \d+ threads$/);
  assert.ok((await canvasSpread(page)) > 5, 'the image is not blank');
  await page.screenshot({ path: join(ARTIFACTS, 'site-plain-host.png') });
  // every file came from under the base path: the site's URLs are relative
  assert.deepEqual(host.misses, []);
  assert.deepEqual(errors, []);
  await page.close();
});

// examples/embed.html has no coi.js (it is the page a documentation author writes): the worker the
// app's visit installed controls it all the same (the same scope)
test('plain host: the element\'s example page is isolated by the same worker and renders on threads', { timeout: 200_000 }, async () => {
  const { page, errors } = await open(ctx, `${host.url}/examples/embed.html`);
  const r = await until(page, () => {
    const el = document.getElementById('v1');
    return crossOriginIsolated && el?.result && { iso: crossOriginIsolated, w: el.result.width, threads: el.result.threads, bar: el.shadowRoot.querySelector('.bar').textContent };
  });
  console.log('# site element:', JSON.stringify(r));
  assert.equal(r.w, 256);
  assert.ok(r.threads > 1, JSON.stringify(r));
  assert.match(r.bar, /CPU \d+ threads/);
  const spread = await page.evaluate(() => {
    const c = document.getElementById('v1').shadowRoot.querySelector('canvas');
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let s = 0, s2 = 0, n = 0;
    for (let i = 0; i < d.length; i += 16) { s += d[i + 1]; s2 += d[i + 1] ** 2; n++; }
    return Math.sqrt(s2 / n - (s / n) ** 2);
  });
  assert.ok(spread > 5, `element canvas is not blank (${spread})`);
  assert.deepEqual(host.misses, []);
  assert.deepEqual(errors, []);
  await page.close();
});

test('with the host gone, a second visit is served from the service worker\'s cache, isolated and threaded', { timeout: 200_000 }, async () => {
  const before = host.requests.length;
  await host.stop();
  const { page, errors } = await open(ctx, `${host.url}/`);
  const s = await until(page, () => Number(document.body.dataset.rendered ?? 0) >= 1 && {
    iso: crossOriginIsolated, threads: Number(document.getElementById('backend-label').dataset.threads),
  });
  assert.equal(host.requests.length, before, 'nothing reached the (stopped) server');
  assert.equal(s.iso, true);
  assert.ok(s.threads > 1, JSON.stringify(s));
  assert.ok((await canvasSpread(page)) > 5, 'the image is not blank');
  assert.deepEqual(errors, []);
  await page.close();
});

test('where no service worker can run, the page renders on one thread and says why', { timeout: 200_000 }, async () => {
  const h = await plainServer({ prefix: PREFIX });
  const c = await launch({ webgpu: false });
  try {
    // as in a browser without service workers (Firefox's private windows)
    await c.addInitScript(() => Object.defineProperty(Navigator.prototype, 'serviceWorker', { get: () => undefined }));
    const { page, errors } = await open(c, `${h.url}/`);
    await until(page, () => Number(document.body.dataset.rendered ?? 0) >= 1);
    const s = await page.evaluate(() => ({ iso: crossOriginIsolated, label: document.getElementById('backend-label').textContent, coi: window.nanobraggIsolation }));
    console.log('# site fallback:', JSON.stringify(s));
    assert.equal(s.iso, false);
    assert.equal(s.coi.state, 'unavailable');
    assert.match(s.label, /^CPU · 1 thread \(single-threaded module: no service worker to add COOP\/COEP\)$/);
    assert.ok((await canvasSpread(page)) > 5, 'the image is not blank');
    await page.screenshot({ path: join(ARTIFACTS, 'site-no-service-worker.png') });
    assert.deepEqual(errors, []);
  } finally {
    await c.close();
    await h.stop();
  }
});
