// The panels around the image: the readout (readout.ts, the crate's geometry through
// pixelquery.ts), the Download menu (downloads.ts), the teaching controls (teach/), the measured
// image (measured/), "Fit to image" (fit/), the derivative image (derivative/), the Help link and
// file drops. Each reads the image shown from the store (`shown`, `current`) and the measured
// image from `store.measured`; none holds another.
import { PARAM_BY_KEY } from '../params';
import { effectsOf } from '../layers';
import { downloadName, routeFile } from '../files';
import { installReadout } from '../readout';
import { pixelQuery } from '../pixelquery';
import { installDownloads } from '../downloads';
import { installTeaching } from '../teach';
import { installMeasured } from '../measured';
import { unrecognised } from '../measured/logic';
import { installFit } from '../fit';
import { installDerivative } from '../derivative';
import { panel } from '../panel';

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;

// d, 2θ and hkl from the crate, for the crystal and detector shown at full resolution; the
// value in the image's unit
export const readoutPanel = panel('readout', ({ store, client, view, page }) => {
  const query = pixelQuery(() => client, () => (store.shown.peek() ? page.words() : null));
  installReadout(view, $('readout'), () => store.shown.peek()?.unit ?? 'photons', query);
  page.api.pixelGeometry = query;
});

export const downloadsPanel = panel('downloads', ({ store, client, view, page }, scope) => {
  page.save = installDownloads({
    client, view,
    shown: () => {
      const s = store.shown.peek();
      const realistic = s?.kind === 'realistic';
      return { realistic, model: realistic ? s.model : store.model.peek(), width: s?.width ?? 0, height: s?.height ?? 0 };
    },
    ensureFull: () => page.ensureFull(), error: (m) => page.showError(m),
  }, scope);
});

// orientation sliders, rotation by drag, φ player, preset notes
export const teachPanel = panel('teach', ({ store, client, view, page }) => {
  page.api.teach = installTeaching({
    store, view, client,
    geometry: () => store.shown.peek()?.geometry ?? null,
    shownGeometry: () => store.current.peek()?.geometry ?? null,
    save: (blob, name) => page.save(blob, name, blob.type),
    png: () => $('dl-png').click(),
    name: (ext, phi) => {
      const s = store.shown.peek();
      return downloadName(phi === undefined ? store.model.peek() : { ...store.model.peek(), phi }, { width: page.fullSize.w || (s?.width ?? 0), height: page.fullSize.h || (s?.height ?? 0) }, 'png').replace(/\.png$/, `.${ext}`);
    },
    notice: page.showNotice,
  });
});

// a measured image beside and over the simulation; its bar holds the image panels' buttons
export const measuredPanel = panel('measured', ({ store, client, view, page }) => {
  const measured = installMeasured({ store, client, view, host: $('canvas-host'), stage: $('stage'), notice: page.showNotice });
  page.api.measured = measured;
  page.bar = measured.bar;
});

// fit to image: the measured image, or a perturbed copy of the image shown
export const fitPanel = panel('fit', ({ store, client, view, page }, scope) => {
  const fit = installFit({
    store, client, view, bar: page.bar!, notice: page.showNotice,
    shown: () => {
      const s = store.current.peek();
      if (!s || s.kind === 'preview') return null;
      if (s.kind === 'realistic') {
        // the realistic still of the form's state: ADU over its water and air, the crate's local
        // background (a radial profile that follows the rings, plus blocks), and the spot-centroid
        // stage first: its spots are a pixel or two, so the pixel cost alone does not see a
        // crystal 0.5° off (fit-cases.test.mjs: without it 60 evaluations leave it 0.52° off,
        // with it 0.05°; crate/tests/refine_realistic.rs). On 0.3 mm pixels neither reaches
        // 0.02°, and the fit says "did not converge".
        const m = s.model;
        return {
          data: s.data, width: s.width, height: s.height, geometry: s.geometry, args: page.words(),
          units: { background: 'local', gain: effectsOf(m).gain, adc: effectsOf(m).adc, centroids: true },
          modelCell: !!(m.pdb ?? '').trim(),
        };
      }
      return { data: s.data, width: s.width, height: s.height, geometry: s.geometry, args: s.args,
        units: { background: 'none', gain: 1, adc: 0, centroids: false }, modelCell: false };
    },
    words: () => page.words(),
  });
  page.api.fit = fit;
  scope.on(window, 'nanobragg-frame', () => fit.refresh());
});

// the derivative image beside the image: the crate's tangent kernel, of the full plain image
// shown (not while a fit runs)
export const derivativePanel = panel('derivative', ({ store, client, view, page }) => {
  page.api.derivative = installDerivative({
    store, client, view, host: $('canvas-host'), stage: $('stage'), bar: page.bar!,
    shownArgs: () => {
      const s = store.current.peek();
      return s?.kind === 'full' && !store.tasks.peek().has('fit') ? s.args : null;
    },
    rest: page.rest, urlChanged: () => store.setView({}), notice: page.showNotice,
  });
});

// the documentation (docs/ of the built site), at the end of the bar of panels
export const helpPanel = panel('help', ({ page }) => {
  const help = document.createElement('a');
  help.className = 'help-link';
  help.href = 'docs/page.html';
  help.target = '_blank';
  help.rel = 'noopener';
  help.textContent = 'Help';
  help.title = 'How to use the page: the documentation, in a new tab';
  page.bar!.insertBefore(help, page.bar!.querySelector('.mnote'));
  return () => help.remove();
});

// drag and drop anywhere: routed by content
export const dropPanel = panel('drop', ({ store, page }, scope) => {
  scope.on(window, 'dragover', (e) => e.preventDefault());
  scope.on(window, 'drop', async (e) => {
    e.preventDefault();
    // measured images (miniCBF, NeXus/HDF5 with their data files, with a DIALS .expt) open beside
    // the simulation; what they leave (an HKL dropped with them) goes to the simulation's fields
    const dropped = Array.from(e.dataTransfer?.files ?? []);
    const { rest, said } = page.api.measured ? await page.api.measured.openFiles(dropped) : { rest: dropped, said: [] };
    // one notice for the whole drop: what the measured images' reader said, then each file routed
    const notes = [...said];
    for (const f of rest) {
      const bytes = new Uint8Array(await f.arrayBuffer());
      const r = routeFile(bytes);
      if (!r.key) {
        // a measured image's name (a damaged one): said as the measured panel says it
        notes.push({ text: unrecognised(f.name, false) ?? `${f.name}: ${r.reason}; choose its field by hand`, warn: true });
        continue;
      }
      store.addFile(f.name, bytes);
      store.setField(r.key, f.name);
      // "mine.hkl → HKL file (h k l F): "h k l F" rows (structure factors)": the reason after
      // a colon, not in brackets after the label's own
      notes.push({ text: `${f.name} → ${PARAM_BY_KEY.get(r.key)!.label}: ${r.reason}`, warn: false });
    }
    if (notes.length) page.showNotice(notes.map((n) => n.text).join('; '), notes.some((n) => n.warn) ? 'warn' : 'info');
  });
});
