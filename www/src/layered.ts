// Rendering a layered state (layers.ts: an atomic model, water or air, detector effects) through
// the crate's realistic chain in the worker: model → structure factors (cached) → spots →
// background → detector effects, with progress, honest stage names and Cancel; a change of the
// shown layers or the detector effects alone composes again from the kept layers. A slider or
// crystal drag renders when it ends. The render panel (panels/render.ts) shows the result
// (`show`). Its work is the store's task 'realistic': Cancel aborts it.
import type { NanoBraggClient } from './client';
import { BUNDLED_MODEL, COMPOSE_KEYS, effectsOf, layersOf, materialWords, spotsWords } from './layers';
import type { RealisticPhase, RealisticResult } from './protocol';
import type { ViewBox } from './blocks';
import type { initRealistic } from './realistic';
import type { ModelState, RenderMode, Store } from './state';
import { fieldOfError } from './args';
import { errorInfo } from './protocol';

function fmtMs(ms: number) {
  return ms < 1000 ? `${ms.toFixed(0)} ms` : `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 0)} s`;
}

export interface LayeredRender {
  render(mode: RenderMode): Promise<void>;
  /** A newer plain render replaces the image: the result in flight is no longer wanted. */
  supersede(): void;
  /** A realistic render is under way, including the steps before the worker has it (loading
   * the model file): its task stays through them. */
  readonly busy: boolean;
}

export function createLayeredRender(o: {
  store: Store;
  client: NanoBraggClient;
  ui: { progress: HTMLProgressElement; timing: HTMLElement };
  rsec: ReturnType<typeof initRealistic>;
  showNotice: (text: string, kind?: 'info' | 'warn') => void;
  /** Hide the notice if it is still the announcement of a render (not what came since). */
  clearEstimateNotice: () => void;
  showError: (msg: string, key?: string) => void;
  /** A render's error at the form's field it is about (null: none). */
  fieldError: (key: string | null, msg: string) => void;
  hasImage: () => boolean;
  /** The realistic image shown and the state it came from (null: a plain render is shown). */
  shownRealistic: () => { model: ModelState; result: RealisticResult } | null;
  /** The cell (a b c α β γ) of a model the chain read. */
  onModelCell: (name: string, cell: number[]) => void;
  show: (r: RealisticResult, m: ModelState, ms: number) => void;
  /** The image view's box: the worker sends the block maxima of the image fitted to it. */
  viewBox: () => ViewBox;
}): LayeredRender {
  /** The realistic render whose result is wanted. */
  let running = 0;
  let pending = 0; // the id of the render under way (0: none)
  const STAGES: Record<RealisticPhase, string> = {
    model: 'reading the model', 'structure factors': 'structure factors', spots: 'spots', background: 'background (water, air)', detector: 'detector effects',
  };
  const bundledBytes = new Map<string, Promise<Uint8Array>>();
  function modelFile(name: string): Promise<Uint8Array> {
    const have = o.store.files.peek().get(name);
    if (have) return Promise.resolve(have);
    if (name !== BUNDLED_MODEL.name) return Promise.reject(new Error(`-pdb ${name}: please choose or drop this file`));
    if (!bundledBytes.has(name)) {
      bundledBytes.set(name, fetch(new URL(BUNDLED_MODEL.url, location.href)).then(async (r) => {
        if (!r.ok) throw new Error(`${BUNDLED_MODEL.url}: ${r.status} ${r.statusText}`);
        return new Uint8Array(await r.arrayBuffer());
      }));
    }
    return bundledBytes.get(name)!;
  }

  /** Only the layers shown or the detector effects differ from the image shown. */
  function composeOnly(m: ModelState): boolean {
    const shown = o.shownRealistic();
    if (!shown) return false;
    const a = shown.model;
    for (const k of new Set([...Object.keys(a), ...Object.keys(m)])) if (!COMPOSE_KEYS.has(k) && (a[k] ?? '') !== (m[k] ?? '')) return false;
    // the noise switch alone does not change the chain's kept layers
    return true;
  }

  async function renderLayered(mode: RenderMode) {
    // a realistic render takes seconds: a slider drag, a crystal drag or φ play renders when it
    // ends (the 3D view and the labels follow at once)
    if (mode === 'preview') {
      o.ui.timing.textContent = 'realistic image: renders when the change ends';
      return;
    }
    const m = { ...o.store.model.peek() };
    const built = o.store.args.peek();
    const { backend, precision } = o.store.view.peek();
    const id = ++running;
    pending = id;
    // one task while realistic renders are under way: Cancel aborts it (a render the worker
    // has not been sent yet, while its model file loads, stops here)
    const signal = o.store.task('realistic', cancelUnsent);
    o.ui.progress.value = 0;
    o.ui.progress.classList.add('busy');
    const t0 = performance.now();
    let announced = false;
    let failed = false;
    let stage = 0;
    try {
      let r: RealisticResult;
      if (composeOnly(m)) {
        o.ui.timing.textContent = 'detector effects…';
        r = await o.client.realisticCompose(layersOf(m), effectsOf(m), signal, o.viewBox());
        r = { ...o.shownRealistic()!.result, data: r.data, maxima: r.maxima, timings: r.timings };
      } else {
        const pdb = (m.pdb ?? '').trim();
        const model = pdb ? { name: pdb, bytes: await modelFile(pdb) } : null;
        // cancelled or superseded while the model file loaded: nothing was sent
        if (id !== running) return;
        const stages = (pdb ? 5 : 3);
        r = await o.client.realistic(
          {
            model, files: Object.fromEntries(o.store.files.peek()), args: spotsWords(built.args), materials: materialWords(m),
            backend, precision, layers: layersOf(m), effects: effectsOf(m), view: o.viewBox(),
          },
          {
            signal,
            onProgress: (p) => { o.ui.progress.value = p; },
            onPhase: (p, cached) => {
              stage++;
              // the threaded module reports progress inside a stage; the plain one cannot
              if (o.client.info?.memory) o.ui.progress.value = 0;
              else o.ui.progress.removeAttribute('value');
              const what = p === 'structure factors' ? (cached ? 'structure factors (cached)' : 'computing structure factors') : STAGES[p];
              o.ui.timing.textContent = `${what}… (step ${stage} of ${stages})`;
              o.rsec.stage(`${what}…`, p === 'structure factors' ? (cached ? 'cached' : 'computing') : undefined);
            },
            onEstimate: (ms) => {
              announced = true;
              o.showNotice(`This realistic image will take about ${fmtMs(ms)} on the CPU: Cancel stops it.`, 'warn');
            },
          },
        );
      }
      if (id !== running) return;
      if (r.model) o.onModelCell(r.model.name, [...r.model.cell]);
      o.show(r, m, performance.now() - t0);
      o.showError('');
    } catch (e) {
      const err = e as Error;
      if (err.name === 'AbortError') {
        if (err.message === 'cancelled') {
          o.ui.timing.textContent = 'cancelled';
          o.rsec.stage('cancelled');
          document.body.dataset.cancelled = String(Date.now());
        }
        return;
      }
      if (id !== running) return;
      o.rsec.stage('');
      o.ui.timing.textContent = 'not rendered: see the message above';
      failed = true;
      // the model's error at the section and the model's field, another at its own field
      const pdb = (m.pdb ?? '').trim();
      const key = pdb && err.message.startsWith(`${pdb}:`) ? 'pdb' : fieldOfError(errorInfo(err), m, built, o.store.changed.peek().key);
      o.fieldError(key, err.message);
      if (key === 'pdb') o.rsec.refused(pdb, err.message);
      o.showError(`${err.message}${o.hasImage() ? ' (the image shows the last good settings)' : ''}`, key ?? undefined);
      document.body.dataset.error = String(Date.now());
    } finally {
      if (announced) o.clearEstimateNotice();
      if (pending === id) pending = 0;
      if (pending === 0) o.store.endTask('realistic', signal);
      if (id === running) {
        o.ui.progress.classList.remove('busy');
        o.ui.progress.value = failed ? 0 : 1;
      }
    }
  }

  /** Cancel a render the worker has not been sent yet (the task's signal stops one it has). */
  function cancelUnsent() {
    if (pending !== 0 && !o.client.realisticBusy) {
      running++;
      pending = 0;
      o.ui.timing.textContent = 'cancelled';
      document.body.dataset.cancelled = String(Date.now());
    }
  }

  return {
    render: renderLayered,
    supersede: () => {
      running++;
      pending = 0;
      o.store.endTask('realistic');
    },
    get busy() { return pending !== 0; },
  };
}
