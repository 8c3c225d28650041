// Cross-origin isolation on a host that cannot send COOP/COEP (GitHub Pages, Read the Docs,
// `python3 -m http.server`): the approach of coi-serviceworker, written for this site rather than
// taken from npm (its ~100 lines also keep the offline copy and tell the page why it is not
// isolated, and the build writes the site's version and file list into sw.js). A classic
// script, loaded first by index.html: it registers sw.js (beside this file; its
// scope is this folder, so the site works under any base path) which adds the headers to every
// response and keeps a copy of the site for offline visits; the first visit reloads once, when
// the worker controls the page. Where even that is impossible (no service workers: a private
// window, file://, plain http on another host), the page stays single-threaded and says why in
// window.nanobraggIsolation = { state, why } (the app's status line shows `why`). A page the host
// already isolates registers nothing (no offline copy there).
(() => {
  const KEY = 'nanobragg-coi-reload';
  const set = (state, why) => { window.nanobraggIsolation = { state, why }; };
  const script = document.currentScript;
  const sw = navigator.serviceWorker;
  if (!window.isSecureContext || !sw) {
    set(window.crossOriginIsolated ? 'isolated' : 'unavailable',
      window.crossOriginIsolated ? '' : 'no service worker to add COOP/COEP');
    return;
  }
  if (window.crossOriginIsolated) {
    // the host sends the headers (or the worker already added them): nothing to do
    sessionStorage.removeItem(KEY);
    set('isolated', '');
    return;
  }
  if (window.top !== window) {
    // a frame is isolated only when the page around it is: a reload here cannot help
    set('unavailable', 'in a frame of a page without COOP/COEP');
    return;
  }
  set('pending', 'waiting for the service worker');
  const url = new URL('sw.js', script ? script.src : location.href);
  sw.register(url.href).then((reg) => {
    let done = false;
    const reload = () => {
      if (done) return;
      done = true;
      if (sessionStorage.getItem(KEY)) {
        // reloaded once already and still not isolated: the browser refuses (give up, say so)
        set('failed', 'the browser refused the service worker\'s COOP/COEP');
        return;
      }
      sessionStorage.setItem(KEY, '1');
      set('reloading', 'reloading under the service worker');
      location.reload();
    };
    // once a worker is active, a navigation goes through it: the first visit, and a hard reload
    // (which bypasses the worker) come back isolated
    sw.ready.then(reload);
    return reg;
  }).catch((e) => set('failed', `the service worker did not register (${e && e.message || e})`));
})();
