// The worker's side of the realistic-image chain (crate/src/wasm/realistic.rs): model →
// structure factors (computed once per model and resolution, reused while only the geometry
// changes) → spots → amorphous background → detector effects; and a cheap re-compose when only
// the layer toggles or the detector effects change. worker.ts routes the two methods here.
import type { CallContext, Files, RealisticCompose, RealisticEvent, RealisticRequest, RealisticResult } from './channel';
import type { RealisticPhase } from './protocol';

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
  const t4 = performance.now();
  ctx.transfer(data.buffer);
  return {
    width: prep.info.geometry.width, height: prep.info.geometry.height, data,
    geometry: prep.info.geometry, model, sf, dMin: prep.dMin, estimateS, backend, warnings: prep.info.warnings,
    timings: { sf: t1 - t0, spots: t2 - t1, background: t3 - t2, detector: t4 - t3, total: t4 - t0 },
  };
}

export function realisticCompose(msg: RealisticCompose, d: RealisticDeps, ctx: CallContext<never>): RealisticResult {
  const w = d.wasm;
  const t0 = performance.now();
  w.set_cancel(false);
  const data = w.realistic_compose(msg.layers.spots, msg.layers.background, msg.layers.noise, msg.effects);
  const t = performance.now() - t0;
  ctx.transfer(data.buffer);
  return {
    width: 0, height: 0, data, geometry: null, model: null, sf: null, dMin: 0,
    estimateS: 0, backend: 'cpu', warnings: [], timings: { sf: 0, spots: 0, background: 0, detector: t, total: t },
  };
}
