// The image: the render loop with frame pacing for a plain state and the realistic chain for a
// layered one (layered.ts), the status line (size, time, backend) and the realistic section
// (realistic.ts). It publishes what it shows as the store's `shown` and its work as the tasks
// 'render' and 'realistic' (Cancel aborts them through the store).
import { computed } from '@preact/signals-core';
import type { SimulateResult } from '../client';
import { fieldOfError, placeWarnings, previewArgs, previewFactor, type PlacedWarning } from '../args';
import { errorInfo, type HklSummary, type RealisticResult } from '../protocol';
import { inputErrorLine, type ModelState, type RenderMode } from '../state';
import { initRealistic } from '../realistic';
import { createLayeredRender } from '../layered';
import { isLayered, layersOf } from '../layers';
import { panel } from '../panel';

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;

/** Frame time target while dragging: a preview's round trip (prepare, render, transfer) should
 * take at most this long, so that with the page's drawing in parallel a drag shows 30+ frames/s. */
const PREVIEW_MS = 16;

export function fmtMs(ms: number) {
  return ms < 1000 ? `${ms.toFixed(0)} ms` : `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 0)} s`;
}
function fmtNum(v: number) {
  if (!Number.isFinite(v)) return '∞';
  return Math.abs(v) >= 1e4 || (v !== 0 && Math.abs(v) < 1e-2) ? v.toExponential(2) : +v.toPrecision(4);
}

// ---- rendering: frame pacing ------------------------------------------------------------------------
// Each change schedules one render per animation frame. While a slider is dragged, renders are
// reduced-resolution previews sized from the measured speed, sent as live requests: the client
// keeps one in flight and coalesces the rest to the latest, so every finished frame is shown.
// The full image follows when the drag ends.
export const renderPanel = panel('render', ({ store, client, view, page }, scope) => {
  const { progress, timing } = page;
  const form = $('params');
  /** The last render's answer (a realistic still: as a render's), frames shown so far. */
  let last: SimulateResult | null = null;
  let renderCount = 0;
  /** The realistic chain's image when it is the one shown, with the state it was rendered from. */
  let realistic: { model: ModelState; result: RealisticResult } | null = null;
  /** Field errors from the simulator (input errors come from the store). */
  let simErrors: Record<string, string> = {};
  /** Per backend: the kernel's time at full resolution (ms; from the last full render, kept
   * current by the previews' times × their reduction²) and a round trip's fixed cost (prepare,
   * transfer: not scaled), to size previews (`previewFactor`). */
  const speed: Record<string, { renderMs: number; fixedMs: number }> = {};
  const fullSize = page.fullSize;
  let scheduled: RenderMode | null = null;
  let rafHandle = 0;
  page.api.lastRender = () => ({ result: last, preview: store.shown.peek()?.kind === 'preview', count: renderCount });
  /** The crate's warnings on the settings of the image shown, and the settings they came from
   * (a preview's are not taken: its words are the page's own, e.g. one sub-pixel). */
  let warned: { model: ModelState; args: string[]; list: PlacedWarning[] } = { model: {}, args: [], list: [] };
  /** The last render's own note (a CPU fallback), said with the warnings. */
  let renderNote = '';
  const fieldWarnings = () => {
    const out: Record<string, string> = {};
    for (const w of warned.list) if (w.key) out[w.key] = out[w.key] ? `${out[w.key]}; ${w.text}` : w.text;
    return out;
  };
  const showFieldErrors = () => page.showFieldErrors(simErrors, fieldWarnings());
  const showWarnings = () => {
    showFieldErrors();
    page.showRenderNotice(warned.list.filter((w) => w.notice).map((w) => w.text), renderNote);
  };
  /** A full render's warnings replace those shown. */
  function takeWarnings(warnings: readonly string[], model: ModelState, built: { args: string[]; origin: string[] }, note: string) {
    warned = { model, args: built.args, list: placeWarnings(warnings, model, built) };
    renderNote = note;
    showWarnings();
  }
  /** As the settings change, the warnings on values no longer given go at once (a field's, when
   * its value changed; one that names no field, when any word changed), before a render (or an
   * input error) says more. */
  function dropStaleWarnings() {
    const model = store.model.peek();
    const args = store.args.peek().args.join('\u0000');
    const keep = warned.list.filter((w) => (w.key ? (model[w.key] ?? '') === (warned.model[w.key] ?? '') : args === warned.args.join('\u0000')));
    if (keep.length === warned.list.length) return;
    warned = { ...warned, list: keep };
    showWarnings();
  }

  const rsec = initRealistic(document.querySelector('.teach-panel')!, store);
  scope.add(() => document.getElementById('realistic')?.remove());

  function schedule(mode: RenderMode) {
    scheduled = mode;
    if (!rafHandle) rafHandle = requestAnimationFrame(() => {
      rafHandle = 0;
      const m = scheduled!;
      scheduled = null;
      void render(m);
    });
  }
  scope.add(() => cancelAnimationFrame(rafHandle));

  // Anything the image depends on schedules a render (mode from the change that caused it); the
  // view settings only through backend and precision (a colour change does not re-render).
  const engine = computed(() => `${store.view.value.backend}|${store.view.value.precision}`);
  let firstRun = true;
  scope.effect(() => {
    void store.model.value;
    void store.files.value;
    void engine.value;
    const mode = store.changed.peek().mode;
    if (!firstRun) view.clearReadout();
    firstRun = false;
    schedule(mode);
  });

  async function render(mode: RenderMode) {
    // a fit sends the images shown: the page renders nothing itself
    if (store.tasks.peek().has('fit')) return;
    simErrors = {};
    dropStaleWarnings();
    const inputErrs = store.inputErrors.value;
    showFieldErrors();
    if (Object.keys(inputErrs).length) {
      const line = inputErrorLine(inputErrs, store.model.peek(), store.files.peek())!;
      page.showError(`${line.text}${view.hasImage ? '; the image shows the last good settings' : ''}.`, line.key);
      return;
    }
    if (isLayered(store.model.peek())) return layered.render(mode);
    if (client.realisticBusy) {
      layered.supersede(); // its result is no longer wanted
      client.cancelRealistic('superseded by a newer render');
    }
    const built = store.args.value;
    const model = store.model.peek();
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
    // the renders of the page are one task: Cancel aborts them all
    const signal = store.task('render');
    const t0 = performance.now();
    let shownProgress = false;
    let estimated = false;
    const announce = (ms: number, b: 'gpu' | 'cpu') =>
      page.showNotice(`This render will take about ${fmtMs(ms)} on the ${b === 'gpu' ? 'GPU' : 'CPU'}: Cancel stops it.`, 'warn');
    const progressTimer = setTimeout(() => { shownProgress = true; progress.classList.add('busy'); }, 150);
    try {
      const r = await client.simulate(args, {
        backend, precision, files: Object.fromEntries(store.files.value), channel: 'ui', live: mode === 'preview', signal,
        onProgress: (p) => {
          if (Number.isNaN(p)) progress.removeAttribute('value');
          else progress.value = p;
          // the worker estimates from the speed of an earlier render; the first render (a link
          // that opens a heavy state) is estimated from its own progress after a second
          const ran = performance.now() - t0;
          if (!estimated && p > 0 && p < 1 && ran > 1000) {
            estimated = true;
            const total = ran / p;
            if (total > 3000) announce(total, last?.backend === 'gpu' && backend !== 'cpu' ? 'gpu' : 'cpu');
          }
        },
        onEstimate: (ms, b) => {
          estimated = true;
          announce(ms, b);
        },
      });
      last = r;
      const preview = scale > 1;
      // the kernel's time scales with the pixels (a preview is 1/scale² of the work), the rest
      // of the round trip does not
      const now = { renderMs: r.timings.render * scale * scale, fixedMs: Math.max(0, r.timings.total - r.timings.render) };
      const was = speed[backend];
      if (!preview) Object.assign(fullSize, { w: r.width, h: r.height, pixel: r.geometry.pixel });
      speed[backend] = speed.any = !preview || !was ? now
        : { renderMs: 0.5 * was.renderMs + 0.5 * now.renderMs, fixedMs: 0.5 * was.fixedMs + 0.5 * now.fixedMs };
      renderCount++;
      realistic = null;
      store.shown.value = {
        kind: preview ? 'preview' : 'full', data: r.data, width: r.width, height: r.height, geometry: r.geometry,
        args: r.args, words: built.args, model, scale, unit: 'photons',
      };
      view.backgroundBlack = false;
      view.setImage(r.data, r.width, r.height, r.geometry, scale);
      page.showLevels();
      window.dispatchEvent(new CustomEvent('nanobragg-frame', {
        detail: { width: r.width, height: r.height, backend: r.backend, notice: r.notice, preview, renderMs: r.timings.render },
      }));
      if (renderCount === 1) performance.mark('nb-first-image');
      page.showError('');
      progress.value = 1;
      timing.textContent = `${r.width}×${r.height}${preview ? ' preview' : ''} · ${fmtMs(r.timings.render)}`;
      timing.title = `total ${fmtMs(performance.now() - t0)} (prepare ${fmtMs(r.timings.prepare)})`;
      showBackend(r);
      if (r.hkl !== undefined) showHklSummary(r.hkl);
      // the crate's warnings on these settings, at their fields and in the notice (with the
      // render's own note); a preview keeps those of the full image (its words are the page's)
      if (!preview) takeWarnings(r.warnings, model, built, r.notice);
      else {
        renderNote = r.notice;
        showWarnings();
      }
      document.body.dataset.rendered = String(renderCount);
    } catch (e) {
      const err = e as Error;
      if (err.name === 'AbortError') {
        page.clearEstimateNotice(); // cancelled or superseded: its announcement goes with it
        return;
      }
      page.clearEstimateNotice(); // the render it announced did not come
      const key = fieldOfError(errorInfo(err), store.model.peek(), built, changed);
      if (key) {
        simErrors = { [key]: err.message };
        showFieldErrors();
        const row = form.querySelector<HTMLElement>(`.field[data-key="${key}"]`);
        const group = row?.closest('details');
        if (group) group.open = true;
        row?.scrollIntoView({ block: 'nearest' });
      }
      page.showError(`${err.message}${view.hasImage ? ' (the image shows the last good settings)' : ''}`, key ?? undefined);
      // the status line and the realistic section say no new image came (not a stage of a
      // realistic render that this one replaced)
      timing.textContent = 'not rendered: see the message above';
      progress.value = 0;
      rsec.stage('');
      document.body.dataset.error = String(Date.now());
    } finally {
      clearTimeout(progressTimer);
      if (shownProgress) progress.classList.remove('busy');
      if (!client.busy) store.endTask('render', signal);
    }
  }

  // ---- the realistic chain: the same state with its layers (layered.ts) ------------------------
  const layered = createLayeredRender({
    store, client, ui: { progress, timing }, rsec, showNotice: page.showNotice, clearEstimateNotice: page.clearEstimateNotice, showError: page.showError,
    fieldError: (key, msg) => {
      simErrors = key ? { [key]: msg } : {};
      showFieldErrors();
    },
    hasImage: () => view.hasImage,
    shownRealistic: () => realistic,
    onModelCell: (name, cell) => page.modelCells.set(name, cell),
    viewBox: () => view.box,
    show: (r, m, ms) => {
      realistic = { model: m, result: r };
      showRealistic(r, m, ms);
    },
  });

  function showRealistic(r: RealisticResult, m: ModelState, ms: number) {
    const g = r.geometry!;
    renderCount++;
    const built = store.args.peek();
    last = {
      width: g.width, height: g.height, data: r.data, backend: r.backend, threads: client.info?.threads ?? 1, adapter: '', notice: '',
      geometry: g, timings: { prepare: 0, render: r.timings.total, total: ms }, args: built.args, warnings: r.warnings,
    };
    store.shown.value = { kind: 'realistic', data: r.data, width: g.width, height: g.height, geometry: g, args: built.args, words: built.args, model: m, scale: 1, unit: 'ADU' };
    Object.assign(fullSize, { w: g.width, h: g.height, pixel: g.pixel });
    view.backgroundBlack = true; // counts over water, air and noise: black at the background
    view.setImage(r.data, g.width, g.height, g, 1, r.maxima ?? null);
    page.showLevels();
    const t = r.timings;
    timing.textContent = `${g.width}×${g.height} realistic · ${fmtMs(t.total)}`;
    timing.title = `structure factors ${fmtMs(t.sf)}, spots ${fmtMs(t.spots)}, background ${fmtMs(t.background)}, detector ${fmtMs(t.detector)}`;
    rsec.report(r.sf, r.model);
    if (r.sf === null && !r.model) rsec.stage(`${g.width}×${g.height} on the ${r.backend.toUpperCase()}: spots ${fmtMs(t.spots)}, background ${fmtMs(t.background)}, detector ${fmtMs(t.detector)}`);
    showBackend({ ...last, backend: r.backend });
    // for scripts and tests: the image shown (ADU), its layers and the structure-factor count
    (window as unknown as { nanobraggRealistic: unknown }).nanobraggRealistic = {
      data: r.data, maxima: r.maxima ?? null, width: g.width, height: g.height, layers: layersOf(m), sf: r.sf, timings: r.timings, model: { ...m },
    };
    document.body.dataset.realistic = String(Number(document.body.dataset.realistic ?? 0) + 1);
    window.dispatchEvent(new CustomEvent('nanobragg-realistic', { detail: { layers: layersOf(m), timings: r.timings } }));
    window.dispatchEvent(new CustomEvent('nanobragg-frame', {
      detail: { width: g.width, height: g.height, backend: r.backend, preview: false, renderMs: r.timings.total, realistic: true, unit: 'ADU' },
    }));
    takeWarnings(r.warnings, m, built, '');
    progress.value = 1;
    document.body.dataset.rendered = String(renderCount);
  }

  function showHklSummary(s: HklSummary | null) {
    const el = document.getElementById('hkl-summary');
    if (!el) return;
    el.textContent = s
      ? `${s.file}: ${s.reflections.toLocaleString('en')} reflections, h ${s.h[0]}…${s.h[1]}, k ${s.k[0]}…${s.k[1]}, l ${s.l[0]}…${s.l[1]}, ` +
        `resolution ${fmtNum(s.dMax)}–${fmtNum(s.dMin)} Å`
      : '';
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

  // the worker must hold the full image of the current settings (an API render or prediction
  // may have replaced it)
  page.ensureFull = async () => {
    const s = store.shown.peek();
    const held = client.lastRendered;
    if (!s || s.kind === 'preview' || !held || held.join('\u0000') !== s.args.join('\u0000')) await render('full');
  };
  client.ready.then(() => showBackend(), (e) => page.showError((e as Error).message));
});

// ---- Cancel: the tasks under way, through the store --------------------------------------------
export const cancelPanel = panel('cancel', ({ store, page }, scope) => {
  const cancelBtn = $<HTMLButtonElement>('cancel');
  const { progress, timing } = page;
  scope.effect(() => { cancelBtn.disabled = !store.busy.value; });
  scope.on(cancelBtn, 'click', () => {
    store.cancelTasks();
    timing.textContent = 'cancelled';
    progress.value = 0;
  });
  // a fit's progress: under way, no fraction (it shows its steps in its own panel)
  let fitting = false;
  scope.effect(() => {
    const on = store.tasks.value.has('fit');
    if (on === fitting) return;
    fitting = on;
    progress.classList.toggle('busy', on);
    if (on) progress.removeAttribute('value');
    else progress.value = 1;
  });
});
