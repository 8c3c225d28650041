// The module Worker that owns the wasm module, the rayon thread pool and the WebGPU device.
// The page talks to it only through client.ts, over the one typed channel (channel.ts): this
// file is the table's handlers, one per method, each answering or throwing the crate's error.
//
// Two builds of the same crate sit beside this file (squoosh pattern): pkg-parallel/ (threads
// over shared memory, needs crossOriginIsolated) and pkg/ (single-threaded CPU + WebGPU).
import type { HklSummary, ModuleInfo, PrepareInfo } from './protocol';
import { abortError, serve, type CallContext, type Files, type FromWorker, type Handlers, type RenderAnswer, type RenderEvent, type RenderRequest, type ToWorker, type WorkerApi } from './channel';
import { realisticCompose, realisticRun, type RealisticDeps } from './realistic-worker';

// The wasm-bindgen output (no-bundler), loaded at run time from beside this bundle; its types
// are the generated declarations. The threaded module adds `initThreadPool`.
type Wasm = typeof import('../dist/pkg/nanobragg') & { initThreadPool?: (n: number) => Promise<void> };

const port = self as unknown as Worker;

let wasm: Wasm | null = null;
let info: ModuleInfo | null = null;
/** WebGPU state: untried, ready (adapter name), or failed (reason). */
let gpu: { state: 'untried' | 'ready' | 'failed'; adapter: string; error: string } = { state: 'untried', adapter: '', error: '' };
let gpuInit: Promise<void> | null = null;

async function load(preferParallel: boolean, threads: number): Promise<ModuleInfo> {
  const t0 = performance.now();
  let parallelNote = '';
  const canThreads = preferParallel && (self as unknown as { crossOriginIsolated?: boolean }).crossOriginIsolated === true &&
    typeof SharedArrayBuffer !== 'undefined';
  if (preferParallel && !canThreads) parallelNote = 'page is not cross-origin isolated (no COOP/COEP): single-threaded CPU';
  if (canThreads) {
    try {
      const m = (await import(new URL('./pkg-parallel/nanobragg.js', import.meta.url).href)) as Wasm;
      await m.default({ module_or_path: new URL('./pkg-parallel/nanobragg_bg.wasm', import.meta.url) });
      await m.initThreadPool!(Math.max(1, threads));
      wasm = m;
    } catch (e) {
      parallelNote = `threaded module failed (${(e as Error).message}): single-threaded CPU`;
      wasm = null;
    }
  }
  if (!wasm) {
    const m = (await import(new URL('./pkg/nanobragg.js', import.meta.url).href)) as Wasm;
    await m.default({ module_or_path: new URL('./pkg/nanobragg_bg.wasm', import.meta.url) });
    wasm = m;
  }
  const parallel = wasm.build_info().startsWith('parallel');
  return {
    kind: parallel ? 'parallel' : 'plain',
    threads: wasm.threads(),
    buildInfo: wasm.build_info(),
    memory: parallel ? wasm.wasm_memory() : null,
    cancelPtr: wasm.cancel_flag_ptr(),
    progressPtr: wasm.progress_ptr(),
    parallelNote,
    initMs: performance.now() - t0,
    detectors: wasm.detector_presets(),
    gradientParams: wasm.gradient_params(),
  };
}

function ensureGpu(): Promise<void> {
  if (!gpuInit) {
    gpuInit = (async () => {
      if (!('gpu' in navigator) || !(navigator as unknown as { gpu?: unknown }).gpu) {
        gpu = { state: 'failed', adapter: '', error: 'no-webgpu' };
        return;
      }
      try {
        let adapter = await wasm!.gpu_init();
        // wgpu's browser backend reports no adapter name: ask WebGPU itself.
        try {
          const a = await (navigator as unknown as { gpu: { requestAdapter(): Promise<{ info?: Record<string, string> } | null> } }).gpu.requestAdapter();
          const i = a?.info;
          const name = i ? [i.vendor, i.architecture, i.description].filter(Boolean).join(' ') : '';
          if (name) adapter = name;
        } catch { /* keep wgpu's */ }
        gpu = { state: 'ready', adapter, error: '' };
      } catch (e) {
        gpu = { state: 'failed', adapter: '', error: (e as Error).message ?? String(e) };
      }
    })();
  }
  return gpuInit;
}

let filesLoaded = false;
/** Measured speed per backend (kernel terms per ms, last render), for the cost estimate. */
const speed: Record<'gpu' | 'cpu', number> = { gpu: 0, cpu: 0 };

/** The console's warnings said already: each once (the worker serves every render of the page,
 * and every <nanobragg-view> of it, whose renders would repeat the same fallback). */
const warned = new Set<string>();
function warnOnce(text: string) {
  if (warned.has(text)) return;
  warned.add(text);
  console.warn(text);
}

/** Why a render fell back to the CPU, in a few words (the details go to the console). */
function fallbackReason(error: string): string {
  // auto passes a software adapter (SwiftShader: isFallbackAdapter) over for the CPU kernel
  if (/software renderer/.test(error)) return 'WebGPU here is a software renderer';
  if (error === 'no-webgpu' || /adapter|not available|not supported/i.test(error)) return 'No WebGPU in this browser';
  return 'WebGPU failed';
}

/** The notice for a CPU fallback: one plain line. */
function fallbackNotice(error: string, threads: number): string {
  return `${fallbackReason(error)}: running on the CPU, ${threads} thread${threads === 1 ? '' : 's'}`;
}

/** Install the request's input files (null: unchanged since the previous request). */
function useFiles(files: Files) {
  const w = wasm!;
  if (files) {
    w.clear_files();
    for (const [name, bytes] of Object.entries(files)) w.set_file(name, bytes);
    filesLoaded = true;
  } else if (!filesLoaded) {
    w.clear_files();
  }
}

/** Reflection prediction (crate::predict) for a command line; the records as the crate gives them. */
function predict(msg: WorkerApi['predict']['req']): unknown {
  useFiles(msg.files);
  // an atomic model: the realistic chain's (its cell and cached structure factors)
  if (msg.args.includes('-pdb')) wasm!.prepare_with_model(msg.args);
  else wasm!.prepare(msg.args);
  return wasm!.predict(msg.maxExcitationError ?? undefined, msg.columns === true, msg.onImage === true);
}

async function render(msg: RenderRequest, ctx: CallContext<RenderEvent>): Promise<RenderAnswer> {
  const w = wasm!;
  const t0 = performance.now();
  useFiles(msg.files);
  const prep: PrepareInfo = w.prepare(msg.args);
  let hkl: HklSummary | null | undefined;
  if (msg.files) hkl = w.hkl_summary();
  const geometry = prep.geometry;
  const t1 = performance.now();
  let notice = '';
  let data: Float32Array;
  // Where to render is the crate's one backend policy (api::choose_backend, through `render`):
  // auto = f64 on the CPU, f32 on the GPU when it opens and is not a software renderer, else
  // the CPU with a notice.
  const f64 = msg.precision === 'f64';
  if (msg.backend !== 'cpu') await ensureGpu(); // opens the device once, and names the adapter
  const likely = w.likely_engine(msg.backend, f64, gpu.state === 'ready') as 'gpu' | 'cpu';
  if (speed[likely] > 0) {
    const ms = prep.work / speed[likely];
    if (ms > 3000) ctx.emit({ type: 'estimate', ms, backend: likely });
  }
  // progress while the GPU is awaited (a CPU render blocks this thread; the page then reads
  // the shared counter itself)
  const timer = setInterval(() => ctx.emit({ type: 'progress', value: w.progress() }), 100);
  try {
    data = await w.render(msg.backend, f64);
  } finally {
    clearInterval(timer);
  }
  const backend: 'gpu' | 'cpu' = w.last_engine() === 'gpu' ? 'gpu' : 'cpu';
  const why = w.last_notice();
  if (why) {
    // the details go to the console, the page gets one plain line
    if (gpu.error !== 'no-webgpu') warnOnce(`nanobragg: ${why}`);
    notice = fallbackNotice(gpu.error === 'no-webgpu' ? 'no-webgpu' : why, info!.threads);
  }
  const t2 = performance.now();
  if (t2 - t1 > 5) speed[backend] = prep.work / (t2 - t1);
  ctx.transfer(data.buffer);
  return {
    width: geometry.width, height: geometry.height, data, backend,
    threads: backend === 'cpu' ? info!.threads : 0, adapter: gpu.adapter, notice, geometry,
    timings: { prepare: t1 - t0, render: t2 - t1, total: 0 }, hkl, warnings: prep.warnings,
  };
}

/** The fit (crate/src/wasm/fit.rs): each accepted step posted as it comes (the page shows it
 * while this thread is still in the fit); Cancel raises the module's flag. */
const fit: Handlers['fit'] = (msg, ctx) => {
  const w = wasm!;
  useFiles(msg.files);
  const result = w.fit(msg.args, msg.target, msg.mask ?? undefined, msg.params, new Float64Array(msg.start), msg.background, msg.gain, msg.adc, msg.centroids, msg.maxIterations, msg.images, (step) => {
    ctx.emit(step, step.image ? [step.image.buffer] : []);
  });
  ctx.transfer(result.image.buffer);
  return result;
};

/** A derivative image (crate/src/wasm/gradients.rs) on the engine the backend policy picks:
 * the WGSL tangent kernel on WebGPU where the device opens, else the CPU tangent kernel. */
const tangent: Handlers['tangent'] = async (msg, ctx) => {
  const w = wasm!;
  // a render asked for after this request goes first: the derivative is of an image no longer
  // shown, and would hold up a drag's frames (the page asks again after the next full image)
  if (rendersAsked !== tangentAsked.get(msg)) throw abortError('superseded by a newer image');
  useFiles(msg.files);
  if (msg.backend !== 'cpu') await ensureGpu();
  const result = await w.render_tangent(msg.args, msg.param, msg.backend, msg.precision === 'f64');
  if (result.notice) {
    if (gpu.error !== 'no-webgpu') warnOnce(`nanobragg: ${result.notice}`);
    result.notice = fallbackReason(gpu.error === 'no-webgpu' ? 'no-webgpu' : result.notice);
  }
  ctx.transfer(result.tangent.buffer, result.image.buffer);
  return Object.assign(result, { adapter: gpu.adapter });
};

/** The module trapped (a panic, or an allocation it could not make): it is spent (half-updated
 * state, memory it never returns). The error says why, and the page is asked for a fresh worker
 * once the request is answered. */
let trapped = false;

function errText(e: unknown): string {
  if (e instanceof WebAssembly.RuntimeError) {
    trapped = true;
    let why = '';
    try { why = wasm?.take_panic().replace(/^nanobragg panicked: /, '') ?? ''; } catch { /* spent */ }
    return `the simulator stopped on an internal error (${why || `${e.message}: out of memory?`}); a fresh one was started`;
  }
  if (e instanceof Error) return e.message;
  return String(e);
}

/** Render requests received so far (a derivative asked for before one is skipped), and the
 * count when each derivative was asked for. */
let rendersAsked = 0;
const tangentAsked = new WeakMap<object, number>();

const handlers: Handlers = {
  init: async (msg) => (info = await load(msg.preferParallel, msg.threads)),
  render,
  predict,
  pixelGeometry: (msg) => wasm!.pixel_geometry(msg.args, new Float64Array(msg.points)),
  export: (msg, ctx) => {
    const w = wasm!;
    const bytes = msg.realistic ? w.realistic_export(msg.what)
      : msg.what === 'int' ? w.export_int_smv() : msg.what === 'noise' ? w.export_noise_smv() : w.export_float();
    ctx.transfer(bytes.buffer);
    return bytes;
  },
  realistic: (msg, ctx) => realisticRun(msg, realisticDeps(), ctx),
  realisticCompose: (msg, ctx) => realisticCompose(msg, realisticDeps(), ctx),
  fit,
  fittedValues: (msg) => {
    useFiles(msg.files);
    return wasm!.fitted_values(msg.args, msg.params, new Float64Array(msg.values));
  },
  findSpots: (msg) => {
    useFiles(msg.files);
    return wasm!.find_spots(msg.args, msg.image, msg.mask ?? undefined, msg.background, msg.gain, msg.adc);
  },
  tangent,
};

const realisticDeps = (): RealisticDeps => ({
  wasm: wasm!, threads: info?.threads ?? 1, useFiles,
  ensureGpu: () => ensureGpu().then(() => gpu.state === 'ready'),
});

// Calls are answered one at a time, in order; only a cancel bypasses the queue, so that it
// reaches a GPU render that is awaiting the device.
const handle = serve(port, handlers, {
  onCancel: () => wasm?.set_cancel(true),
  onReceive: (msg) => {
    if (msg.method === 'render') rendersAsked++;
    if (msg.method === 'tangent') tangentAsked.set(msg.req, rendersAsked);
  },
  errText,
  after: () => {
    if (!trapped) return;
    trapped = false;
    port.postMessage({ kind: 'trapped' } satisfies FromWorker);
  },
});
self.onmessage = (ev: MessageEvent<ToWorker>) => handle(ev.data);
