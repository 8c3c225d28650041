// The app page: it creates the store, the worker client and the image view and wires the page's
// parts to them: the parameter form (form.ts), the view settings (viewcontrols.ts), theme,
// presentation, copy link and notices (pagechrome.ts), the 3D view (panel3d.ts), the render loop
// with frame pacing for a plain state (here) and the realistic chain for a layered one
// (layered.ts), the readout (readout.ts, the crate's geometry through pixelquery.ts), downloads,
// teaching controls and file drops. State lives in a Store (state.ts); the parts subscribe to its
// signals. `window.nanobragg` is the scripting / test API. Overlays on the image (predicted
// spots, later a measured image) go through `view.overlays` and hook in after the readout.
import { computed, effect } from '@preact/signals-core';
import { NanoBraggClient, type Prediction, type SimulateOptions, type SimulateResult } from './client';
import { PARAM_BY_KEY } from './params';
import { fieldOfError, previewArgs, previewFactor } from './args';
import { PRESETS, VIEW_DEFAULTS, createStore, decodeUrl, encodeUrl, sameModel, type ModelState, type RenderMode } from './state';
import { ImageView } from './view';
import { downloadName, routeFile } from './files';
import type { HklSummary } from './protocol';
import { Teach3D } from './panel3d';
import { installTeaching, type Teach } from './teach';
import { initRealistic } from './realistic';
import { createForm } from './form';
import { installReadout } from './readout';
import { pixelQuery, type PixelQuery } from './pixelquery';
import { installDownloads } from './downloads';
import { installMeasured, type MeasuredCompare } from './measured';
import { installFit, type FitPanel } from './fit';
import { installDerivative, type DerivativeView } from './derivative';
import { installViewControls } from './viewcontrols';
import { createLayeredRender } from './layered';
import { installPageChrome } from './pagechrome';
import { effectsOf, isLayered, layersOf, predictWords } from './layers';
import { errorInfo, type DetectorChoice, type RealisticResult } from './protocol';

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;
const initial = decodeUrl(new URL(location.href).searchParams);
const rest = initial.rest;
const embed = rest.embed === '1';
document.body.classList.toggle('embed', embed);

const store = createStore(initial.model, initial.view);
// the worker beside app.js (client.ts sits in a chunk shared with the element: name it here)
const client = new NanoBraggClient({ workerUrl: new URL('./worker.js', import.meta.url) });
const view = new ImageView($('canvas-host'));
// embedded in another page (an iframe), the wheel scrolls that page unless the image has the focus
if (embed) view.wheel = 'focus';

/** Frames shown so far, the last one and whether it was a preview. */
let last: SimulateResult | null = null;
let lastWasPreview = false;
/** The settings (the store's words) the image shown was rendered from. */
let lastBuilt = '';
let renderCount = 0;
/** The realistic chain's image when it is the one shown (null: a plain render is shown), with
 * the state it was rendered from. */
let realistic: { model: ModelState; result: RealisticResult } | null = null;
/** Cells of the atomic models the chain has read (the 3D view predicts the shown crystal). */
const modelCells = new Map<string, number[]>();
/** Field errors from the simulator (input errors come from the store). */
let simErrors: Record<string, string> = {};
/** A fit is running (fit/): it sends the images shown, the page renders nothing itself. */
let fitting = false;
/** Some work that Cancel stops is running: a render, the realistic chain or a fit (a plain
 * render that ends while the realistic chain runs must leave Cancel enabled). */
// (the realistic chain's own flag is installed below, where it is created)
let layeredBusy = () => false;
const cancellable = () => client.busy || client.realisticBusy || layeredBusy() || fitting;

// ---- API for scripts and tests ----------------------------------------------------------
declare global {
  interface Window {
    nanobragg: {
      simulate: (args: string | string[], opts?: SimulateOptions) => Promise<SimulateResult>;
      predict: (args: string | string[], opts?: { files?: SimulateOptions['files']; maxExcitationError?: number }) => Promise<Prediction>;
      ready: Promise<unknown>;
      client: NanoBraggClient;
      lastRender: () => { result: SimulateResult | null; preview: boolean; count: number };
      state: () => ModelState;
      view: ImageView;
      /** The 3D view and the predicted spots on the image (panel3d.ts). */
      teach3d: Teach3D;
      /** Teaching controls: the φ player, taking over a random misset (teach/index.ts). */
      teach?: Teach;
      /** The measured image beside and over the simulation (measured/index.ts). */
      measured?: MeasuredCompare;
      /** "Fit to image" (fit/index.ts). */
      fit?: FitPanel;
      /** The derivative image ∂I/∂p beside the image (derivative/index.ts). */
      derivative?: DerivativeView;
      /** The crate's geometry (d, 2θ, hkl, lab position) at continuous full-resolution pixel
       * coordinates of the image shown (pixel centres at i + 0.5): what the readout shows. */
      pixelGeometry?: PixelQuery;
    };
  }
}
window.nanobragg = {
  simulate: (args, opts = {}) => client.simulate(args, { channel: 'api', ...opts }),
  predict: (args, opts = {}) => client.predict(args, opts),
  ready: client.ready,
  client,
  lastRender: () => ({ result: last, preview: lastWasPreview, count: renderCount }),
  state: () => ({ ...store.model.value }),
  view,
  teach3d: null as unknown as Teach3D, // set below
};

// ---- form (form.ts) ------------------------------------------------------------------------
const form = $('params');
const presetSel = $<HTMLSelectElement>('preset');
for (const p of PRESETS) presetSel.add(new Option(p.label, p.id));
const { inputs, showFieldErrors: showErrorsOf } = createForm({ store, form, presetSel, setDetector: (v) => setDetector(v) });
const showFieldErrors = () => showErrorsOf(simErrors);


$('fit').addEventListener('click', () => view.fit());

// The URL follows the state (at most a few times a second: browsers throttle history updates).
let urlTimer = 0;
function writeUrl() {
  urlTimer = 0;
  const q = encodeUrl(store.model.peek(), store.view.peek(), rest);
  history.replaceState(null, '', `${location.pathname}?${q}`);
  ($('open-full') as HTMLAnchorElement).href = `${location.pathname}?${encodeUrl(store.model.peek(), store.view.peek(), {})}`;
}
effect(() => {
  void store.model.value;
  void store.view.value;
  if (!urlTimer) urlTimer = window.setTimeout(writeUrl, 200);
});
writeUrl();

// ---- theme, presentation, full screen, copy link, notices and errors (pagechrome.ts) ------------
const { applyTheme, setPresent, showNotice, showError, clearEstimateNotice } = installPageChrome({
  store, view, rest, embed,
  copyUrl: () => {
    clearTimeout(urlTimer);
    writeUrl();
    return location.href;
  },
});
if (rest.present === '1') setPresent(true);

// ---- view settings (viewcontrols.ts) ----------------------------------------------------------
const showLevels = installViewControls(store, view, (t) => applyTheme(t));

const rsec = initRealistic(document.querySelector('.teach-panel')!, store);

// ---- 3D view and predicted spots (panel3d.ts) ------------------------------------------------
const teach = new Teach3D({
  client, image: view, stage: $('stage'), styleRoot: document,
  misset: () => store.model.peek().misset ?? '',
  phi: () => Number(store.model.peek().phi) || 0,
  setMisset: (v, final) => store.setField('misset', v, final ? 'full' : 'preview'),
  onOpenChange: (open) => set3d(open),
});
window.nanobragg.teach3d = teach;
const dark = matchMedia('(prefers-color-scheme: dark)');
const theme3d = () => {
  const t = store.view.value.theme;
  teach.setTheme(t === 'auto' ? (dark.matches ? 'dark' : 'light') : t);
};
dark.addEventListener('change', theme3d);
effect(theme3d);
effect(() => teach.setLabels(store.view.value.labels));
// the prediction follows the model (one in flight, the latest wins: predictfeed.ts)
const fileIds = new WeakMap<object, number>();
let fileSeq = 0;
effect(() => {
  const built = store.args.value;
  const files = store.files.value;
  if (Object.keys(store.inputErrors.value).length) return;
  if (!fileIds.has(files)) fileIds.set(files, ++fileSeq);
  // the shown crystal: with an atomic model, its cell once the chain has read it
  if (isLayered(store.model.peek()) && (store.model.peek().pdb ?? '').trim() && !modelCells.has(store.model.peek().pdb.trim())) return;
  void built;
  teach.update(teachWords(), Object.fromEntries(files), String(fileIds.get(files)), store.changed.peek().mode === 'preview');
});
function set3d(open: boolean) {
  $('view3d').setAttribute('aria-pressed', String(open));
  if (open) rest.view3d = '1';
  else delete rest.view3d;
  store.setView({}); // rewrite the URL
  if (open && !teach.isOpen) {
    teach.open().catch((e) => showNotice((e as Error).message, 'warn'));
  } else if (!open && teach.isOpen) teach.close();
}
$('view3d').addEventListener('click', () => set3d(!teach.isOpen));
window.addEventListener('keydown', (e) => {
  const t = e.target as HTMLElement;
  if (t.closest('input, select, textarea') || e.ctrlKey || e.metaKey || e.altKey || e.key !== '3') return;
  set3d(!teach.isOpen);
});
if (rest.view3d === '1') set3d(true);

// ---- presets --------------------------------------------------------------------------------
presetSel.addEventListener('change', () => {
  const p = PRESETS.find((p) => p.id === presetSel.value);
  if (p) {
    store.setModel(p.state);
    // the lesson's view (the crystal-size preset's linear-ish scale), or back to the defaults'
    const v = store.view.peek();
    if (p.view) store.setView(p.view);
    else if (v.scaling !== VIEW_DEFAULTS.scaling && PRESETS.some((q) => q.view?.scaling === v.scaling)) store.setView({ scaling: VIEW_DEFAULTS.scaling });
  }
});

// ---- rendering: frame pacing ------------------------------------------------------------------------
// Each change schedules one render per animation frame. While a slider is dragged, renders are
// reduced-resolution previews sized from the measured speed, sent as live requests: the client
// keeps one in flight and coalesces the rest to the latest, so every finished frame is shown.
// The full image follows when the drag ends.
const progress = $<HTMLProgressElement>('progress');
const cancelBtn = $<HTMLButtonElement>('cancel');
const timing = $('timing');
/** Per backend: the kernel's time at full resolution (ms; from the last full render, kept
 * current by the previews' times × their reduction²) and a round trip's fixed cost (prepare,
 * transfer: not scaled), to size previews (`previewFactor`). */
const speed: Record<string, { renderMs: number; fixedMs: number }> = {};
let fullSize = { w: 0, h: 0, pixel: 0 };
let scheduled: RenderMode | null = null;
let rafHandle = 0;
/** Frame time target while dragging: a preview's round trip (prepare, render, transfer) should
 * take at most this long, so that with the page's drawing in parallel a drag shows 30+ frames/s. */
const PREVIEW_MS = 16;

function schedule(mode: RenderMode) {
  scheduled = mode;
  if (!rafHandle) rafHandle = requestAnimationFrame(() => {
    rafHandle = 0;
    const m = scheduled!;
    scheduled = null;
    void render(m);
  });
}

// Anything the image depends on schedules a render (mode from the change that caused it); the
// view settings only through backend and precision (a colour change does not re-render).
const engine = computed(() => `${store.view.value.backend}|${store.view.value.precision}`);
let firstRun = true;
effect(() => {
  void store.model.value;
  void store.files.value;
  void engine.value;
  const mode = store.changed.peek().mode;
  if (!firstRun) view.clearReadout();
  firstRun = false;
  schedule(mode);
});

async function render(mode: RenderMode) {
  if (fitting) return;
  simErrors = {};
  const inputErrs = store.inputErrors.value;
  showFieldErrors();
  if (Object.keys(inputErrs).length) {
    showError(`Fix the highlighted input${view.hasImage ? '; the image shows the last good settings' : ''}.`);
    return;
  }
  if (isLayered(store.model.peek())) return renderLayered(mode);
  if (client.realisticBusy) {
    layered.supersede(); // its result is no longer wanted
    client.cancelRealistic('superseded by a newer render');
  }
  const built = store.args.value;
  const changed = store.changed.peek().key;
  let args = built.args;
  let scale = 1;
  const { backend, precision } = store.view.peek();
  if (mode === 'preview' && fullSize.w) {
    const sp = speed[backend] ?? speed.any ?? { renderMs: 100, fixedMs: 0 };
    // at least 128 pixels across: smaller previews say too little
    const factor = previewFactor(sp.renderMs, sp.fixedMs, PREVIEW_MS, Math.max(1, Math.floor(Math.min(fullSize.w, fullSize.h) / 128)));
    const pa = previewArgs(args, fullSize.w, fullSize.h, fullSize.pixel * 1000, factor);
    if (pa) { args = pa; scale = factor; }
  }
  cancelBtn.disabled = false;
  const t0 = performance.now();
  let shownProgress = false;
  const progressTimer = setTimeout(() => { shownProgress = true; progress.classList.add('busy'); }, 150);
  try {
    const r = await client.simulate(args, {
      backend, precision, files: Object.fromEntries(store.files.value), channel: 'ui', live: mode === 'preview',
      onProgress: (p) => {
        if (Number.isNaN(p)) progress.removeAttribute('value');
        else progress.value = p;
      },
      onEstimate: (ms, b) => showNotice(`This render will take about ${fmtMs(ms)} on the ${b === 'gpu' ? 'GPU' : 'CPU'}: Cancel stops it.`, 'warn'),
    });
    last = r;
    lastBuilt = built.args.join('\n');
    lastWasPreview = scale > 1;
    // the kernel's time scales with the pixels (a preview is 1/scale² of the work), the rest
    // of the round trip does not
    const now = { renderMs: r.timings.render * scale * scale, fixedMs: Math.max(0, r.timings.total - r.timings.render) };
    const was = speed[backend];
    if (!lastWasPreview) fullSize = { w: r.width, h: r.height, pixel: r.geometry.pixel };
    speed[backend] = speed.any = !lastWasPreview || !was ? now
      : { renderMs: 0.5 * was.renderMs + 0.5 * now.renderMs, fixedMs: 0.5 * was.fixedMs + 0.5 * now.fixedMs };
    renderCount++;
    realistic = null;
    view.backgroundBlack = false;
    view.setImage(r.data, r.width, r.height, r.geometry, scale);
    showLevels();
    window.dispatchEvent(new CustomEvent('nanobragg-frame', {
      detail: { width: r.width, height: r.height, backend: r.backend, notice: r.notice, preview: lastWasPreview, renderMs: r.timings.render },
    }));
    if (renderCount === 1) performance.mark('nb-first-image');
    showError('');
    progress.value = 1;
    timing.textContent = `${r.width}×${r.height}${lastWasPreview ? ' preview' : ''} · ${fmtMs(r.timings.render)}`;
    timing.title = `total ${fmtMs(performance.now() - t0)} (prepare ${fmtMs(r.timings.prepare)})`;
    showBackend(r);
    if (r.hkl !== undefined) showHklSummary(r.hkl);
    if (r.notice) showNotice(r.notice, 'info');
    else clearEstimateNotice();
    document.body.dataset.rendered = String(renderCount);
  } catch (e) {
    const err = e as Error;
    if (err.name === 'AbortError') return;
    const key = fieldOfError(errorInfo(err), store.model.peek(), built, changed);
    if (key) {
      simErrors = { [key]: err.message };
      showFieldErrors();
      const row = form.querySelector<HTMLElement>(`.field[data-key="${key}"]`);
      const group = row?.closest('details');
      if (group) group.open = true;
      row?.scrollIntoView({ block: 'nearest' });
    }
    showError(`${err.message}${view.hasImage ? ' (the image shows the last good settings)' : ''}`);
    // the status line and the realistic section say no new image came (not a stage of a
    // realistic render that this one replaced)
    timing.textContent = 'not rendered: see the message above';
    progress.value = 0;
    rsec.stage('');
    document.body.dataset.error = String(Date.now());
  } finally {
    clearTimeout(progressTimer);
    if (shownProgress) progress.classList.remove('busy');
    if (!cancellable()) cancelBtn.disabled = true;
  }
}

// ---- the realistic chain: the same state with its layers (layered.ts) ------------------------
const layered = createLayeredRender({
  store, client, ui: { progress, cancelBtn, timing }, rsec, showNotice, showError,
  hasImage: () => view.hasImage,
  shownRealistic: () => realistic,
  onModelCell: (name, cell) => modelCells.set(name, cell),
  show: (r, m, ms) => {
    realistic = { model: m, result: r };
    showRealistic(r, ms);
  },
});
layeredBusy = () => layered.busy;
const renderLayered = (mode: RenderMode) => layered.render(mode);

function showRealistic(r: RealisticResult, ms: number) {
  const g = r.geometry!;
  renderCount++;
  const built = store.args.peek();
  last = {
    width: g.width, height: g.height, data: r.data, backend: r.backend, threads: client.info?.threads ?? 1, adapter: '', notice: '',
    geometry: g, timings: { prepare: 0, render: r.timings.total, total: ms }, args: built.args, warnings: r.warnings,
  };
  lastBuilt = built.args.join('\n');
  lastWasPreview = false;
  fullSize = { w: g.width, h: g.height, pixel: g.pixel };
  view.backgroundBlack = true; // counts over water, air and noise: black at the background
  view.setImage(r.data, g.width, g.height, g, 1);
  showLevels();
  const t = r.timings;
  timing.textContent = `${g.width}×${g.height} realistic · ${fmtMs(t.total)}`;
  timing.title = `structure factors ${fmtMs(t.sf)}, spots ${fmtMs(t.spots)}, background ${fmtMs(t.background)}, detector ${fmtMs(t.detector)}`;
  rsec.report(r.sf, r.model);
  if (r.sf === null && !r.model) rsec.stage(`${g.width}×${g.height} on the ${r.backend.toUpperCase()}: spots ${fmtMs(t.spots)}, background ${fmtMs(t.background)}, detector ${fmtMs(t.detector)}`);
  showBackend({ ...last, backend: r.backend });
  teach.update(teachWords(), Object.fromEntries(store.files.peek()), String(fileIds.get(store.files.peek()) ?? 0), false);
  // for scripts and tests: the image shown (ADU), its layers and the structure-factor count
  (window as unknown as { nanobraggRealistic: unknown }).nanobraggRealistic = {
    data: r.data, width: g.width, height: g.height, layers: layersOf(realistic!.model), sf: r.sf, timings: r.timings, model: { ...realistic!.model },
  };
  document.body.dataset.realistic = String(Number(document.body.dataset.realistic ?? 0) + 1);
  window.dispatchEvent(new CustomEvent('nanobragg-realistic', { detail: { layers: layersOf(realistic!.model), timings: r.timings } }));
  window.dispatchEvent(new CustomEvent('nanobragg-frame', {
    detail: { width: g.width, height: g.height, backend: r.backend, preview: false, renderMs: r.timings.total, realistic: true, unit: 'ADU' },
  }));
  if (r.warnings.length) console.info('realistic image:', r.warnings.join('; '));
  progress.value = 1;
  document.body.dataset.rendered = String(renderCount);
}

/** The detector model: its pixels come from the crate's preset; with the layers on, its kind's
 * detector effects come too (a CCD's read-out noise and PSF, a photon counter's none). */
function setDetector(name: string) {
  const m = { ...store.model.peek() };
  if (name) m.detector = name;
  else delete m.detector;
  const d = detectors().find((x) => x.name === name);
  if (d && isLayered(m)) {
    m.readout = String(d.effects.readout);
    m.psf = String(d.effects.psfUm);
    m.gain = String(d.effects.gain);
  }
  store.setModel(m);
}
/** The crate's detector presets, kept from the first module that started (a cancelled render
 * restarts the worker; its list does not change). */
let detectorList: DetectorChoice[] = [];
const detectors = (): DetectorChoice[] => (detectorList = client.info?.detectors ?? detectorList);

/** Words the 3D view and labels predict from: the shown crystal. */
function teachWords(): string[] {
  const m = store.model.peek();
  const args = store.args.peek().args;
  if (!isLayered(m)) return args;
  return predictWords(args, modelCells.get((m.pdb ?? '').trim()) ?? null);
}

function showHklSummary(s: HklSummary | null) {
  const el = document.getElementById('hkl-summary');
  if (!el) return;
  el.textContent = s
    ? `${s.file}: ${s.reflections.toLocaleString('en')} reflections, h ${s.h[0]}…${s.h[1]}, k ${s.k[0]}…${s.k[1]}, l ${s.l[0]}…${s.l[1]}, ` +
      `resolution ${fmtNum(s.dMax)}–${fmtNum(s.dMin)} Å`
    : '';
}

function fmtMs(ms: number) {
  return ms < 1000 ? `${ms.toFixed(0)} ms` : `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 0)} s`;
}
function fmtNum(v: number) {
  if (!Number.isFinite(v)) return '∞';
  return Math.abs(v) >= 1e4 || (v !== 0 && Math.abs(v) < 1e-2) ? v.toExponential(2) : +v.toPrecision(4);
}

function showBackend(r?: SimulateResult) {
  const info = client.info;
  const label = $('backend-label');
  if (!info) return;
  const cpu = `CPU · ${info.threads} thread${info.threads === 1 ? '' : 's'}`;
  if (r?.backend === 'gpu') label.textContent = `WebGPU · ${r.adapter}`;
  // single-threaded: say why when the page could not be isolated (www/site/coi.js)
  const iso = (window as unknown as { nanobraggIsolation?: { why: string } }).nanobraggIsolation;
  const why = !crossOriginIsolated && iso?.why ? `: ${iso.why}` : '';
  if (r?.backend !== 'gpu') label.textContent = cpu + (info.kind === 'plain' ? ` (single-threaded module${why})` : '');
  label.title = `wasm ${info.buildInfo}; module ${info.kind}${info.parallelNote ? ` — ${info.parallelNote}` : ''}`;
  label.dataset.backend = r?.backend ?? '';
  label.dataset.threads = String(info.threads);
}

cancelBtn.addEventListener('click', () => {
  if (client.fitBusy) fitPanel.cancel();
  layered.cancel();
  if (client.realisticBusy) client.cancelRealistic();
  client.cancel('ui');
  cancelBtn.disabled = true;
  timing.textContent = 'cancelled';
  progress.value = 0;
});

// ---- readout and downloads (readout.ts, downloads.ts): both speak of the image shown ---------
// d, 2θ and hkl from the crate, for the crystal and detector shown at full resolution
const readoutQuery = pixelQuery(() => client, () => (last ? teachWords() : null));
installReadout(view, $('readout'), () => (realistic ? 'ADU' : 'photons'), readoutQuery);
window.nanobragg.pixelGeometry = readoutQuery;

// ---- overlays on the image shown -----------------------------------------------------------------
// Drawn by the view after the image, in its coordinates (`view.overlays`, `view.fromDetector`):
// predicted spots and hkl labels come from panel3d.ts (spots.ts); a measured image over the
// simulated one installs here.

async function ensureFull() {
  // the worker must hold the full image of the current settings (an API render or prediction
  // may have replaced it)
  const held = client.lastRendered;
  if (lastWasPreview || !last || !held || held.join('\u0000') !== last.args.join('\u0000')) await render('full');
}
const save = installDownloads({
  client, view,
  shown: () => ({ realistic: !!realistic, model: realistic?.model ?? store.model.peek(), width: last?.width ?? 0, height: last?.height ?? 0 }),
  ensureFull, error: (m) => showError(m),
});

// ---- teaching: orientation sliders, rotation by drag, φ player, preset notes -------------------
window.nanobragg.teach = installTeaching({
  store, view, client,
  geometry: () => last?.geometry ?? null,
  shownGeometry: () => (last && lastBuilt === store.args.peek().args.join('\n') ? last.geometry : null),
  save: (blob, name) => save(blob, name, blob.type),
  png: () => $('dl-png').click(),
  name: (ext) => downloadName(store.model.peek(), { width: fullSize.w || (last?.width ?? 0), height: fullSize.h || (last?.height ?? 0) }, 'png').replace(/\.png$/, `.${ext}`),
  notice: showNotice,
});

// ---- a measured image beside and over the simulation (measured/) ----------------------------------
const measured = installMeasured({ store, client, view, host: $('canvas-host'), stage: $('stage'), notice: showNotice });
window.nanobragg.measured = measured;

// ---- fit to image (fit/): the measured image, or a perturbed copy of the image shown --------------
const fitPanel = installFit({
  store, client, view, measured, after: measured.bar, notice: showNotice,
  shown: () => {
    const m = store.model.peek();
    if (realistic) {
      // the realistic still of the form's state: ADU over its water and air, the crate's local
      // background (a radial profile that follows the rings, plus blocks). Without the
      // spot-centroid stage: on a 512² detector of 0.3 mm pixels neither way reaches 0.02°
      // (crate/tests/refine_realistic.rs: 0.04–0.08° off, said "did not converge")
      const r = realistic.result;
      if (!r.geometry || !sameModel(realistic.model, m)) return null;
      return {
        data: r.data, width: r.width, height: r.height, geometry: r.geometry, args: teachWords(),
        units: { background: 'local', gain: effectsOf(m).gain, adc: effectsOf(m).adc, centroids: false },
        modelCell: !!(m.pdb ?? '').trim(),
      };
    }
    return last && !lastWasPreview && lastBuilt === store.args.peek().args.join('\n')
      ? { data: last.data, width: last.width, height: last.height, geometry: last.geometry, args: last.args,
        units: { background: 'none', gain: 1, adc: 0, centroids: false }, modelCell: false }
      : null;
  },
  words: () => teachWords(),
  setFitting: (on) => {
    fitting = on;
    cancelBtn.disabled = !cancellable();
    progress.classList.toggle('busy', on);
    if (on) progress.removeAttribute('value');
    else progress.value = 1;
  },
});
window.nanobragg.fit = fitPanel;
window.addEventListener('nanobragg-frame', () => fitPanel.refresh());

// ---- the derivative image beside the image (derivative/): the crate's tangent kernel ---------------
window.nanobragg.derivative = installDerivative({
  store, client, view, host: $('canvas-host'), stage: $('stage'), measured,
  shownArgs: () => (last && !realistic && !lastWasPreview && !fitting && lastBuilt === store.args.peek().args.join('\n') ? last.args : null),
  rest, urlChanged: () => store.setView({}), notice: showNotice,
});

// ---- the documentation (docs/ of the built site), at the end of the bar of panels -----------------
{
  const help = document.createElement('a');
  help.className = 'help-link';
  help.href = 'docs/page.html';
  help.target = '_blank';
  help.rel = 'noopener';
  help.textContent = 'Help';
  help.title = 'How to use the page: the documentation, in a new tab';
  measured.bar.insertBefore(help, measured.bar.querySelector('.mnote'));
}

// ---- drag and drop anywhere: routed by content ---------------------------------------------------
window.addEventListener('dragover', (e) => e.preventDefault());
window.addEventListener('drop', async (e) => {
  e.preventDefault();
  // measured images (miniCBF, NeXus/HDF5 with their data files, with a DIALS .expt) open beside the simulation
  if (await measured.openFiles(Array.from(e.dataTransfer?.files ?? []))) return;
  const notes: string[] = [];
  for (const f of Array.from(e.dataTransfer?.files ?? [])) {
    const bytes = new Uint8Array(await f.arrayBuffer());
    const r = routeFile(bytes);
    if (!r.key) {
      notes.push(`${f.name}: ${r.reason}; choose its field by hand`);
      continue;
    }
    store.addFile(f.name, bytes);
    store.setField(r.key, f.name);
    notes.push(`${f.name} → ${PARAM_BY_KEY.get(r.key)!.label} (${r.reason})`);
  }
  if (notes.length) showNotice(notes.join('; '), notes.some((n) => n.includes('by hand')) ? 'warn' : 'info');
});

// ---- start --------------------------------------------------------------------------------------
const urlErrors = Object.values(initial.errors);
if (urlErrors.length) showNotice(`Ignored URL parameter${urlErrors.length > 1 ? 's' : ''}: ${urlErrors.join('; ')}`, 'warn');
client.ready.then(() => showBackend(), (e) => showError((e as Error).message));
