// The worker's side of the realistic-image chain (crate/src/wasm/realistic.rs): model →
// structure factors (computed once per model and resolution, reused while only the geometry
// changes) → spots → amorphous background → detector effects; and a cheap re-compose when only
// the layer toggles or the detector effects change. worker.ts routes the two methods here.
import type { CallContext, Files, RealisticCompose, RealisticEvent, RealisticRequest, RealisticResult } from './channel';
import type { RealisticPhase } from './protocol';
import { fittedBlock, type BlockMaxima, type ViewBox } from './blocks';

/** The wasm functions this chain uses (the generated module has them all). */
type Wasm = typeof import('../dist/pkg/nanobragg');

export interface RealisticDeps {
  wasm: Wasm;
  /** Opens the WebGPU device once (worker.ts); resolves whether it opened. */
  ensureGpu: () => Promise<boolean>;
  threads: number;
  /** Install the request's input files (worker.ts). */
  useFiles: (files: Files) => void;
}

/** Measured speed of the last CPU spots render (kernel terms per ms); before the first, the
 * crate's estimate (native speed) times WASM_SLOWDOWN. */
let cpuTermsPerMs = 0;
const WASM_SLOWDOWN = 6; // measured: 6–9× the native constants in the threaded module on a 2-core VM

/** The block maxima of the image just composed for the view's box fitted to it (the crate's
 * `realistic_block_maxima`, in parallel), transferred with the image: the page's main thread
 * then draws the reduced image instead of reducing 4.5 M pixels itself. A detector image's
 * view draws them from just below 1:1 (`backgroundBlack`). */
function maximaFor(w: Wasm, view: ViewBox | undefined, width: number, height: number, ctx: Pick<CallContext<never>, 'transfer'>): BlockMaxima | null {
  const block = view ? fittedBlock(view, width, height, 1, true) : 1;
  if (block < 2) return null;
  const data = w.realistic_block_maxima(block);
  ctx.transfer(data.buffer);
  return { block, data };
}

export async function realisticRun(msg: RealisticRequest, d: RealisticDeps, ctx: CallContext<RealisticEvent>): Promise<RealisticResult> {
  const w = d.wasm;
  const t0 = performance.now();
  // The page raises the shared cancel flag directly (threaded module); each wasm stage resets it
  // when it starts, so a cancel that lands between two stages is read here before the next one.
  const memory = w.build_info().startsWith('parallel') ? w.wasm_memory() : null;
  const flag = w.cancel_flag_ptr();
  const phase = (p: RealisticPhase, sfCached = false) => {
    if (memory && new Uint8Array(memory.buffer)[flag] !== 0) throw Object.assign(new Error('cancelled'), { kind: 'cancelled' });
    ctx.emit({ type: 'phase', phase: p, sfCached });
  };
  w.set_cancel(false);
  d.useFiles(msg.files);
  let model = null;
  if (msg.model) {
    phase('model');
    model = w.realistic_set_model(msg.model.name, msg.model.bytes);
  }
  const prep = w.realistic_prepare(msg.args, !!msg.model);
  if (msg.model) phase('structure factors', prep.sfCached);
  const sf = w.realistic_structure_factors();
  const t1 = performance.now();
  phase('spots');
  const f64 = msg.precision === 'f64';
  const gpuOk = msg.backend !== 'cpu' ? await d.ensureGpu() : false;
  const cost = w.estimate_cost(d.threads);
  const onGpu = w.likely_engine(msg.backend, f64, gpuOk) === 'gpu';
  const terms = cost.terms;
  const estimateS = onGpu ? 0 : cpuTermsPerMs > 0 && !f64 ? terms / cpuTermsPerMs / 1000 : (f64 ? cost.seconds_f64 : cost.seconds_f32) * WASM_SLOWDOWN;
  cost.free();
  if (estimateS > 3) ctx.emit({ type: 'estimate', ms: estimateS * 1000, backend: 'cpu' });
  await w.realistic_render_spots(msg.backend, f64);
  const backend: 'gpu' | 'cpu' = w.last_engine() === 'gpu' ? 'gpu' : 'cpu';
  const t2 = performance.now();
  if (backend === 'cpu' && !f64 && t2 - t1 > 50) cpuTermsPerMs = terms / (t2 - t1);
  phase('background');
  w.realistic_background(msg.materials);
  const t3 = performance.now();
  phase('detector');
  const data = w.realistic_compose(msg.layers.spots, msg.layers.background, msg.layers.noise, msg.effects);
  const { width, height } = prep.info.geometry;
  const maxima = maximaFor(w, msg.view, width, height, ctx);
  const t4 = performance.now(); // the detector stage with the block maxima
  ctx.transfer(data.buffer);
  return {
    width, height, data, maxima,
    geometry: prep.info.geometry, model, sf, dMin: prep.dMin, estimateS, backend, warnings: prep.info.warnings,
    timings: { sf: t1 - t0, spots: t2 - t1, background: t3 - t2, detector: t4 - t3, total: t4 - t0 },
  };
}

export function realisticCompose(msg: RealisticCompose, d: RealisticDeps, ctx: CallContext<never>): RealisticResult {
  const w = d.wasm;
  const t0 = performance.now();
  w.set_cancel(false);
  const data = w.realistic_compose(msg.layers.spots, msg.layers.background, msg.layers.noise, msg.effects);
  const size = w.realistic_size();
  const maxima = size ? maximaFor(w, msg.view, size[0], size[1], ctx) : null;
  const t = performance.now() - t0;
  ctx.transfer(data.buffer);
  return {
    width: 0, height: 0, data, maxima, geometry: null, model: null, sf: null, dMin: 0,
    estimateS: 0, backend: 'cpu', warnings: [], timings: { sf: 0, spots: 0, background: 0, detector: t, total: t },
  };
}
