// The site's service worker (registered by coi.js): adds the cross-origin isolation headers
// (COOP/COEP, and CORP for each file) to every response, so that a plain static host serves a
// crossOriginIsolated page (SharedArrayBuffer: the threaded wasm module); and keeps a copy of
// each file of the site it has served (network first, the copy when offline). The build writes
// the site's version (a hash of its files) and its file list into the two constants below.
const VERSION = '__NB_VERSION__';
const PRECACHE = '__NB_PRECACHE__';
const CACHE = `nanobragg-${VERSION}`;
const SCOPE = new URL(self.registration.scope);

self.addEventListener('install', () => self.skipWaiting());

self.addEventListener('activate', (event) => {
  event.waitUntil((async () => {
    for (const k of await caches.keys()) if (k.startsWith('nanobragg-') && k !== CACHE) await caches.delete(k);
    await self.clients.claim();
  })());
  // the files not fetched yet (the 3D view, the other wasm module), in the background
  caches.open(CACHE).then(async (cache) => {
    for (const f of Array.isArray(PRECACHE) ? PRECACHE : []) {
      const u = new URL(f, SCOPE);
      if (!(await cache.match(u))) await cache.add(u).catch(() => {});
    }
  });
});

function isolated(r) {
  if (!r || r.status === 0) return r; // opaque: nothing to add
  const h = new Headers(r.headers);
  h.set('Cross-Origin-Opener-Policy', 'same-origin');
  h.set('Cross-Origin-Embedder-Policy', 'require-corp');
  h.set('Cross-Origin-Resource-Policy', 'cross-origin');
  return new Response(r.body, { status: r.status, statusText: r.statusText, headers: h });
}

self.addEventListener('fetch', (event) => {
  const req = event.request;
  if (req.method !== 'GET') return;
  if (req.cache === 'only-if-cached' && req.mode !== 'same-origin') return;
  const url = new URL(req.url);
  const ours = url.origin === SCOPE.origin && url.pathname.startsWith(SCOPE.pathname);
  event.respondWith((async () => {
    try {
      const r = await fetch(req);
      if (ours && r.ok && r.type === 'basic') {
        const copy = r.clone();
        event.waitUntil(caches.open(CACHE).then((c) => c.put(req, copy)));
      }
      return isolated(r);
    } catch (err) {
      // offline: the copy (a page under any query: the app keeps its state in the URL)
      const hit = ours && (await caches.match(req, { cacheName: CACHE, ignoreSearch: req.mode === 'navigate' }));
      if (hit) return isolated(hit);
      throw err;
    }
  })());
});
