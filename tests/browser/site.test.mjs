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

test('the documentation is part of the site: every page reached from the map, no dead link or anchor, readable on a phone', { timeout: 120_000 }, async () => {
  const { page, errors } = await open(ctx, `${host.url}/docs/`, { viewport: { width: 390, height: 844 } });
  await page.waitForSelector('main h1');
  // walk the pages from the map: every local link answers, every anchor is a heading's id
  const seen = await page.evaluate(async () => {
    const pages = new Map(), queue = [new URL('index.html', location.href).href], anchors = [], bad = [];
    while (queue.length) {
      const url = queue.shift();
      if (pages.has(url)) continue;
      const r = await fetch(url);
      if (!r.ok) { bad.push(`${url}: ${r.status}`); pages.set(url, null); continue; }
      const doc = new DOMParser().parseFromString(await r.text(), 'text/html');
      pages.set(url, doc);
      for (const a of doc.querySelectorAll('main a[href]')) {
        const u = new URL(a.getAttribute('href'), url);
        if (u.origin !== location.origin) continue;
        const target = u.href.split('#')[0];
        if (target.endsWith('.html')) queue.push(target);
        if (u.hash) anchors.push([target, u.hash.slice(1), url]);
      }
      for (const img of doc.querySelectorAll('main img')) {
        const r2 = await fetch(new URL(img.getAttribute('src'), url));
        if (!r2.ok || !(r2.headers.get('content-type') ?? '').startsWith('image/')) bad.push(`${url}: image ${img.getAttribute('src')}`);
      }
    }
    for (const [target, id, from] of anchors) {
      let doc = pages.get(target);
      if (doc === undefined) { doc = new DOMParser().parseFromString(await (await fetch(target)).text(), 'text/html'); pages.set(target, doc); }
      if (!doc?.getElementById(decodeURIComponent(id))) bad.push(`${from} -> ${target}#${id}: no such anchor`);
    }
    const names = [...pages.keys()].map((k) => k.split('/').pop());
    return { names, bad };
  });
  console.log('# docs pages:', seen.names.join(' '));
  assert.deepEqual(seen.bad, []);
  for (const name of ['index.html', 'readme.html', 'page.html', 'embedding.html', 'cli.html', 'realistic.html', 'fitting.html',
    'python.html', 'datasets.html', 'contributing.html', 'ARCHITECTURE.html', 'MODEL.html', 'benchmarks.html']) {
    assert.ok(seen.names.includes(name), `${name} is reached from the map`);
  }
  // a phone: the text fits the width (wide tables and code scroll inside themselves)
  for (const name of ['index.html', 'cli.html', 'benchmarks.html']) {
    await page.goto(`${host.url}/docs/${name}`);
    const w = await page.evaluate(() => ({ doc: document.documentElement.scrollWidth, win: innerWidth }));
    assert.ok(w.doc <= w.win + 1, `${name} scrolls sideways on a phone: ${JSON.stringify(w)}`);
  }
  await page.goto(`${host.url}/docs/readme.html`);
  await page.screenshot({ path: join(ARTIFACTS, 'site-docs-phone.png') });
  // the header's link opens the app
  await page.click('header a[href="../index.html"]');
  await until(page, () => Number(document.body.dataset.rendered ?? 0) >= 1);
  // and the app's Help link opens the page's guide
  const help = await page.evaluate(async () => {
    const a = document.querySelector('.help-link');
    const r = await fetch(a.href);
    return { href: a.getAttribute('href'), ok: r.ok, title: new DOMParser().parseFromString(await r.text(), 'text/html').title };
  });
  assert.deepEqual(help, { href: 'docs/page.html', ok: true, title: 'The page · nanoBragg Web' });
  assert.deepEqual(errors, []);
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
