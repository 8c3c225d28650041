// The page side of the worker bridge, over the one typed channel (channel.ts). One Worker, one
// render at a time, at most one render in flight per channel and at most one waiting: a newer
// request replaces the waiting one (latest wins; the replaced promise rejects with an
// AbortError). A running render is cancelled when a request supersedes it, through the shared
// cancel flag (threaded module) and a cancel message (GPU path), or by restarting the worker
// (plain module on the CPU, as squoosh does) — except that a live request (a frame of a drag)
// lets a running live render finish and show, so that a drag always shows frames however slow
// each one is (no starvation). Every method takes an `AbortSignal` (abort = cancel that request)
// and rejects with the channel's one error type (`WorkerError`: the crate's structured error;
// named 'AbortError' when cancelled or superseded).
import { asBackend, normaliseArgs } from './args';
import type { Backend, DetectorEffects, Fitted, FitInfo, FitStepInfo, ModuleInfo, PixelGeometry, Precision, RealisticLayers, RealisticPhase, Spot, TangentInfo } from './protocol';
import { Channel, WorkerError, abortError, isAbort, type FitRequest, type FromWorker, type RealisticCompose, type RealisticRequest, type RealisticResult, type RenderAnswer, type RenderRequest, type SpotsRequest } from './channel';
import type { ViewBox } from './blocks';
export { splitArgs, normaliseArgs, asBackend } from './args';
export { abortError } from './channel';

export interface SimulateOptions {
  /** 'auto' (default), 'webgpu' (alias 'gpu') or 'cpu'. */
  backend?: Backend | 'webgpu';
  /** Input files by name (the names the flags use, e.g. `-hkl input.hkl`). */
  files?: Record<string, Uint8Array | ArrayBuffer | string>;
  precision?: Precision;
  /** Requests on one channel supersede each other; other channels queue. Default 'main'. */
  channel?: string;
  /** A frame of a live interaction: does not cancel a running live render on its channel. */
  live?: boolean;
  /** Progress 0..1; NaN while a render's progress cannot be read (plain module on the CPU). */
  onProgress?: (p: number) => void;
  /** Called before a render the worker expects to take `ms` milliseconds (over 3 s). */
  onEstimate?: (ms: number, backend: 'gpu' | 'cpu') => void;
  /** Abort: this render stops (or leaves the queue) and its promise rejects with an AbortError. */
  signal?: AbortSignal;
}

/** The worker's answer (`RenderAnswer`, the channel's row) with the words it was rendered from. */
export interface SimulateResult extends RenderAnswer {
  args: string[];
}

interface Job {
  channel: string;
  msg: RenderRequest;
  resolve: (r: SimulateResult) => void;
  reject: (e: Error) => void;
  onProgress?: (p: number) => void;
  onEstimate?: (ms: number, backend: 'gpu' | 'cpu') => void;
  live: boolean;
  stale: boolean;
  start: number;
}

/** A long request that Cancel stops in the worker (the realistic chain, the fit). */
interface StoppableJob {
  ctrl: AbortController;
  /** The worker answered it (or went). */
  settled: boolean;
}

/** How long a cancelled render may take to stop before its worker is restarted (ms). */
const CANCEL_GRACE_MS = 50;
/** The same for a render superseded by a newer request (a restart costs a module load). */
const SUPERSEDE_GRACE_MS = 400;

/** How often the page reads a threaded render's progress from shared memory (ms), and the step
 * it reports (a fraction): a reading that has not moved by a step calls nothing. The bar is
 * 80 px wide; read every animation frame, each new value repainted the document (≈ 40 frames/s
 * of style, paint and compositing on the main thread, CPU the wasm threads need on two cores). */
const PROGRESS_MS = 200;
const PROGRESS_STEP = 1 / 100;

/** Read the shared progress counter (16.16 fixed point) every `PROGRESS_MS` while `live()`,
 * calling `cb` with its value rounded down to a step when that changed. `stop` ends the reads;
 * `reset` forgets the last value (the page set its bar itself: the next read is reported). */
function pollProgress(mem: WebAssembly.Memory, progressPtr: number, live: () => boolean, cb: (p: number) => void) {
  const ptr = progressPtr >> 2;
  let last = -1;
  let timer = 0;
  const tick = () => {
    if (!live()) return;
    const raw = Atomics.load(new Uint32Array(mem.buffer), ptr) / 65536;
    const p = Math.min(1, Math.floor(raw / PROGRESS_STEP) * PROGRESS_STEP);
    if (p !== last) {
      last = p;
      cb(p);
    }
    timer = setTimeout(tick, PROGRESS_MS) as unknown as number;
  };
  timer = setTimeout(tick, PROGRESS_MS) as unknown as number;
  return { stop: () => clearTimeout(timer), reset: () => { last = -1; } };
}

/** A cancelled request's error as the page has always seen it: an AbortError 'cancelled'. */
const asCancelled = (e: unknown): Error => (isAbort(e) ? abortError('cancelled') : (e as Error));

const enc = new TextEncoder();

function encodeFiles(files: SimulateOptions['files']): Record<string, Uint8Array> {
  const out: Record<string, Uint8Array> = {};
  for (const [k, v] of Object.entries(files ?? {})) out[k] = typeof v === 'string' ? enc.encode(v) : v instanceof Uint8Array ? v : new Uint8Array(v);
  return out;
}

/** One predicted reflection (crate/src/predict.rs `Reflection`; the fields the page uses). */
export interface PredictedReflection {
  h: number;
  k: number;
  l: number;
  /** Detector position in pixels (centre of pixel i at i + 0.5); null where the ray misses. */
  fast: number | null;
  slow: number | null;
  d: number;
  two_theta: number;
  excitation_error: number;
  in_condition: boolean;
  on_detector: boolean;
  f: number;
  intensity: number;
}

/** The crate's prediction (crate/src/predict.rs `Prediction`; more fields than listed here). */
export interface Prediction {
  wavelength: number;
  fpixels: number;
  spixels: number;
  reflections: PredictedReflection[];
  /** With `columns: true`: the reflections as little-endian typed-array bytes (`reflections` is
   * then empty; crate/src/wasm/mod.rs `Columns`). */
  columns?: { count: number } & Record<string, Uint8Array | number>;
}

export interface PredictOptions {
  files?: SimulateOptions['files'];
  /** Abort: the promise rejects with an AbortError. */
  signal?: AbortSignal;
  /** List only the points within this distance of the Ewald sphere (1/Å). */
  maxExcitationError?: number;
  /** Reflections as columns (10^5 points without 10^5 objects). */
  columns?: boolean;
  /** Only what is on the image: the spots of a still, the crossings of an oscillation (any cell). */
  onImage?: boolean;
}

/** Progress (0..1, read from shared memory), the chain's phases, and the estimate of a long
 * spots render (ms) for `realistic`. */
export interface RealisticCallbacks {
  onProgress?: (p: number) => void;
  onPhase?: (p: RealisticPhase, sfCached: boolean) => void;
  onEstimate?: (ms: number) => void;
  /** Abort = `cancelRealistic` for this request. */
  signal?: AbortSignal;
}

export class NanoBraggClient {
  private worker!: Worker;
  private channel!: Channel;
  private running: Job | null = null;
  private queue: Job[] = [];
  /** The words of the render whose plan and image the worker holds (exports use them); null
   * after a prediction replaced the plan. */
  lastRendered: string[] | null = null;
  private lastFilesKey = '';
  /** Stops the running render's progress reads (none: a no-op). */
  private stopProgress = () => {};
  info: ModuleInfo | null = null;
  ready!: Promise<ModuleInfo>;
  /** Workers restarted because a render did not stop in time (for tests and benchmarks). */
  restarts = 0;

  constructor(private opts: { workerUrl?: URL; preferParallel?: boolean; threads?: number } = {}) {
    this.spawn();
  }

  private spawn() {
    const url = this.opts.workerUrl ?? new URL('./worker.js', import.meta.url);
    let worker: Worker;
    try {
      worker = new Worker(url, { type: 'module', name: 'nanobragg' });
    } catch {
      // Loaded from another origin (a CDN): wrap in a same-origin blob module.
      const blob = new Blob([`import ${JSON.stringify(url.href)};`], { type: 'text/javascript' });
      worker = new Worker(URL.createObjectURL(blob), { type: 'module', name: 'nanobragg' });
    }
    this.worker = worker;
    const channel = (this.channel = new Channel(worker));
    this.lastFilesKey = '';
    worker.onmessage = (ev: MessageEvent<FromWorker>) => channel.receive(ev.data);
    // the request that trapped has its error; the spent worker goes (its memory with it) and
    // the waiting requests run on a fresh one
    channel.onTrapped = () => this.replaceWorker(abortError('the worker was restarted'), 'requeue');
    worker.onerror = (ev) => this.failAll(new Error(`worker error: ${ev.message ?? 'failed to load'}`));
    const threads = this.opts.threads ?? Math.min(navigator.hardwareConcurrency || 1, 16);
    const preferParallel = this.opts.preferParallel ?? true;
    this.ready = channel.call('init', { preferParallel, threads }).then(
      (info) => {
        this.info = info;
        this.pump();
        return info;
      },
      (e: Error) => {
        throw e instanceof WorkerError ? new Error(`cannot start the simulator: ${e.message}`) : e;
      },
    );
    this.ready.catch(() => {});
  }

  /** End the worker and start a fresh one: the calls it had reject with `err`; the running
   * render is rejected too (`'running'`), or with the waiting ones (`'all'`), or goes back to the
   * front of the queue (`'requeue'`: it was sent to a worker that had trapped); the queue runs
   * on the new worker. */
  private replaceWorker(err: Error, renders: 'requeue' | 'running' | 'all') {
    const old = this.channel;
    this.worker.terminate();
    this.restarts++;
    this.info = null;
    const job = this.running;
    this.running = null;
    this.stopProgress();
    if (job && renders === 'requeue' && !job.stale) this.queue.unshift(job);
    else job?.reject(err);
    if (renders === 'all') {
      for (const j of this.queue) j.reject(err);
      this.queue = [];
    }
    this.spawn();
    old.failAll(err);
  }

  private failAll(err: Error) {
    this.channel.failAll(err);
    if (this.running) this.running.reject(err);
    this.running = null;
    for (const j of this.queue) j.reject(err);
    this.queue = [];
  }

  /** Render; resolves with the float image. Rejects with the simulator's message on bad input,
   * or with an AbortError when a newer request on the same channel superseded this one, or
   * `opts.signal` aborted it. */
  simulate(args: string | string[], opts: SimulateOptions = {}): Promise<SimulateResult> {
    const norm = normaliseArgs(args);
    const backend = asBackend(opts.backend ?? norm.backend ?? 'auto');
    const precision = opts.precision ?? norm.precision ?? 'f32';
    const channel = opts.channel ?? 'main';
    const files = encodeFiles(opts.files);
    return new Promise<SimulateResult>((resolve, reject) => {
      if (opts.signal?.aborted) return reject(abortError('cancelled'));
      const live = opts.live === true;
      const job: Job = {
        channel, resolve, reject, onProgress: opts.onProgress, onEstimate: opts.onEstimate, live, stale: false,
        start: performance.now(), msg: { args: norm.args, files, backend, precision },
      };
      opts.signal?.addEventListener('abort', () => this.cancelJob(job), { once: true });
      // Latest wins on this channel: the waiting request is replaced ...
      this.queue = this.queue.filter((j) => {
        if (j.channel !== channel) return true;
        j.reject(abortError());
        return false;
      });
      // ... and the running one stops, unless both are frames of a live interaction.
      if (this.running && this.running.channel === channel && !(live && this.running.live)) this.stopRunning();
      this.queue.push(job);
      this.pump();
    });
  }

  /** Cancel the running render and drop the waiting ones (of one channel, or all). */
  cancel(channel?: string) {
    for (const j of [...this.queue]) if (channel === undefined || j.channel === channel) this.cancelJob(j);
    if (this.running && (channel === undefined || this.running.channel === channel)) this.cancelJob(this.running);
  }

  /** Cancel one render: out of the queue, or stopped in the worker (the caller sees the cancel at
   * once; the worker acknowledges within the grace period or is restarted). */
  private cancelJob(job: Job) {
    const i = this.queue.indexOf(job);
    if (i >= 0) {
      this.queue.splice(i, 1);
      job.reject(abortError('cancelled'));
      return;
    }
    if (this.running !== job) return;
    const interruptible = this.info?.kind === 'parallel' || job.msg.backend !== 'cpu';
    if (!interruptible) return this.restart(job, 'cancelled');
    this.stopRunning(CANCEL_GRACE_MS);
    job.reject(abortError('cancelled'));
  }

  /** Stop the running render: raise the cancel flag (shared memory and message), and restart the
   * worker if it has not stopped within `graceMs` (a kernel can be between two checks of the
   * flag for longer than that). */
  private stopRunning(graceMs = SUPERSEDE_GRACE_MS) {
    const job = this.running;
    if (!job || job.stale) return;
    job.stale = true;
    this.raiseCancel();
    setTimeout(() => {
      if (this.running === job) this.restart(job, 'cancelled');
    }, graceMs);
  }

  /** The module's cancel flag: in shared memory (read inside the crate's loops) and by message. */
  private raiseCancel() {
    const info = this.info;
    if (info?.memory) Atomics.store(new Uint8Array(info.memory.buffer), info.cancelPtr, 1);
    this.channel.cancel();
  }

  /** Terminate the worker (stopping whatever it runs at once) and start a fresh one; the
   * waiting requests run on the new worker. */
  private restart(job: Job, why: string) {
    job.reject(abortError(why));
    this.replaceWorker(abortError('the worker was restarted'), 'running');
  }

  private pump() {
    if (this.running || !this.info) return;
    const job = this.queue.shift();
    if (!job) return;
    // Send file contents only when they changed.
    const key = Object.entries(job.msg.files ?? {}).map(([k, v]) => `${k}:${v.byteLength}:${hash(v)}`).join('|');
    if (key === this.lastFilesKey) job.msg.files = null;
    else this.lastFilesKey = key;
    this.running = job;
    job.start = performance.now();
    if (this.info.memory && job.onProgress) {
      // Threaded module: read the progress counter straight from shared memory.
      this.stopProgress = pollProgress(this.info.memory, this.info.progressPtr, () => this.running === job, (p) => job.onProgress?.(p)).stop;
    } else if (job.onProgress && job.msg.backend === 'cpu') {
      // Plain module on the CPU: the worker is busy in the kernel and cannot report.
      job.onProgress(NaN);
    }
    const done = (ok: boolean, v: unknown) => {
      if (this.running !== job) return; // the worker was restarted meanwhile
      this.running = null;
      this.stopProgress();
      if (ok) {
        if (job.stale) job.reject(abortError());
        else {
          const r = v as SimulateResult;
          this.lastRendered = job.msg.args;
          job.resolve({ ...r, args: job.msg.args, timings: { ...r.timings, total: performance.now() - job.start } });
        }
      } else {
        const cancelled = isAbort(v);
        job.reject(cancelled || job.stale ? abortError(cancelled ? 'cancelled' : undefined) : (v as Error));
      }
      this.pump();
    };
    this.channel.call('render', job.msg, {
      transfer: [],
      onEvent: (ev) => {
        if (this.running !== job) return;
        if (ev.type === 'progress') job.onProgress?.(ev.value);
        else job.onEstimate?.(ev.ms, ev.backend);
      },
    }).then((r) => done(true, r), (e) => done(false, e));
  }

  /** Reflection prediction for a command line (the crate's `predict`: every lattice point within
   * the detector's reach, or those within `maxExcitationError` (1/Å) of the Ewald sphere). Runs
   * between renders; it prepares its own plan, so the next render prepares again. */
  async predict(args: string | string[], opts: PredictOptions = {}): Promise<Prediction> {
    await this.ready;
    const files = encodeFiles(opts.files);
    this.lastFilesKey = '';
    this.lastRendered = null;
    return this.channel.call('predict', {
      args: normaliseArgs(args).args, files, maxExcitationError: opts.maxExcitationError ?? null,
      columns: opts.columns === true, onImage: opts.onImage === true,
    }, { signal: opts.signal }) as Promise<Prediction>;
  }

  /** The crate's detector geometry at points (`predict::pixel_geometry`: lab position, d, 2θ,
   * hkl) for the crystal and detector of `args`, with the input files the worker holds (those of
   * the last render). `points` are continuous pixel coordinates, pixel centres at i + 0.5. The
   * worker keeps the resolved words, so repeated queries cost the arithmetic only; the plan
   * it renders and exports is left alone. */
  async pixelGeometry(args: string | string[], points: [number, number][], signal?: AbortSignal): Promise<PixelGeometry[]> {
    await this.ready;
    return this.channel.call('pixelGeometry', { args: normaliseArgs(args).args, points: points.flat() }, { signal });
  }

  /** Bytes of the last render: SMV noiseless ('int'), SMV with Poisson noise, or raw floats; of
   * a realistic still also a miniCBF ('cbf'). */
  async exportImage(what: 'int' | 'noise' | 'float' | 'cbf', realistic = false, signal?: AbortSignal): Promise<Uint8Array> {
    await this.ready;
    return this.channel.call('export', { what, realistic }, { signal });
  }

  /** Stop a long job in the worker: the shared cancel flag (read inside the crate's loops) and a
   * restart if the worker has not answered within `grace` ms; at once a restart where the
   * module has no shared memory (its only thread is in the computation). */
  private stopInWorker(job: StoppableJob, why: string, grace: number) {
    const hard = () => this.replaceWorker(abortError(why), 'all');
    if (this.info?.memory) {
      this.raiseCancel();
      setTimeout(() => { if (!job.settled) hard(); }, grace);
    } else hard();
  }

  /** Run `call` as a stoppable job: aborting its controller (or `signal`) rejects it at once with
   * an AbortError and stops it in the worker. */
  private stoppable<T>(slot: 'realJob' | 'fitJob', grace: number, signal: AbortSignal | undefined,
    call: (job: StoppableJob, ctl: { signal: AbortSignal; onAbort: () => void; onSettled: () => void }) => Promise<T>): Promise<T> {
    const job: StoppableJob = { ctrl: new AbortController(), settled: false };
    this[slot] = job; // current from now (a cancel while the module loads stops it)
    signal?.addEventListener('abort', () => job.ctrl.abort(abortError('cancelled')), { once: true });
    if (signal?.aborted) job.ctrl.abort(abortError('cancelled'));
    return call(job, {
      signal: job.ctrl.signal,
      onAbort: () => this.stopInWorker(job, (job.ctrl.signal.reason as Error)?.message ?? 'cancelled', grace),
      onSettled: () => { job.settled = true; },
    }).finally(() => {
      if (this[slot] === job) this[slot] = null;
    }).catch((e) => {
      // aborted here: the reason as given ('superseded …'); stopped in the worker: 'cancelled'
      throw job.ctrl.signal.aborted ? e : asCancelled(e);
    });
  }

  // ---- the realistic-image chain (realistic.ts): one request at a time, the newest wins ----
  private realJob: StoppableJob | null = null;

  /** Model → structure factors → spots → background → detector (see channel.ts). Rejects with
   * the simulator's message (naming file and line for a bad model), or an AbortError when
   * cancelled or superseded. */
  async realistic(req: RealisticRequest, cb: RealisticCallbacks = {}): Promise<RealisticResult> {
    return this.realisticSend('realistic', req, cb);
  }

  /** Compose the kept layers again (layer toggles, detector effects): no new render. `view`:
   * the image view's box, for the block maxima of the image fitted to it (see `realistic`). */
  async realisticCompose(layers: RealisticLayers, effects: DetectorEffects, signal?: AbortSignal, view?: ViewBox): Promise<RealisticResult> {
    return this.realisticSend('realisticCompose', { layers, effects, view }, { signal });
  }

  private async realisticSend<M extends 'realistic' | 'realisticCompose'>(method: M, req: M extends 'realistic' ? RealisticRequest : RealisticCompose, cb: RealisticCallbacks): Promise<RealisticResult> {
    if (this.realJob) this.cancelRealistic('superseded by a newer render');
    const ready = this.ready;
    return this.stoppable('realJob', CANCEL_GRACE_MS, cb.signal, async (job, ctl) => {
      await ready;
      if (job.ctrl.signal.aborted) throw job.ctrl.signal.reason;
      this.lastRendered = null; // the worker's plan is the realistic one now
      this.lastFilesKey = '\u0001'; // the chain installs its own files: the next render sends them again
      const info = this.info;
      const onProgress = cb.onProgress;
      const poll = info?.memory && onProgress ? pollProgress(info.memory, info.progressPtr, () => this.realJob === job, onProgress) : null;
      return this.channel.call(method as 'realistic', req as RealisticRequest, {
        ...ctl,
        onEvent: (ev) => {
          if (this.realJob !== job) return;
          if (ev.type === 'progress') cb.onProgress?.(ev.value);
          else if (ev.type === 'estimate') cb.onEstimate?.(ev.ms);
          else {
            poll?.reset(); // a new stage: the page sets its bar to 0
            cb.onPhase?.(ev.phase, ev.sfCached);
          }
        },
      }).finally(() => poll?.stop());
    });
  }

  /** Stop the realistic chain: the shared cancel flag (read inside the structure factors and
   * the kernels), or a worker restart where the module has no shared memory. */
  cancelRealistic(why = 'cancelled') {
    const job = this.realJob;
    if (!job) return;
    this.realJob = null;
    job.ctrl.abort(abortError(why));
  }

  /** A realistic chain is running. */
  get realisticBusy() {
    return this.realJob !== null;
  }

  // ---- the fit to an image (fit/): one at a time ----------------------------------------------
  private fitJob: StoppableJob | null = null;

  /** Fit parameters of the set-up of `req.args` to `req.target` (`api::fit` in the worker);
   * `onStep` sees the start and every accepted step. Rejects with the crate's error, or an
   * AbortError when cancelled (`cancelFit`, `signal`). Renders wait behind it in the worker. */
  async fit(req: Omit<FitRequest, 'files'> & { files?: SimulateOptions['files'] }, onStep: (s: FitStepInfo) => void, signal?: AbortSignal): Promise<FitInfo> {
    if (this.fitJob) this.cancelFit('superseded by a newer fit');
    const ready = this.ready;
    return this.stoppable('fitJob', 1000, signal, async (job, ctl) => {
      await ready;
      if (job.ctrl.signal.aborted) throw job.ctrl.signal.reason;
      this.lastFilesKey = '\u0001'; // the fit installs the files: the next render sends them again
      const target = req.target.slice();
      const mask = req.mask ? req.mask.slice() : null;
      return this.channel.call('fit', { ...req, files: encodeFiles(req.files), target, mask }, {
        ...ctl, transfer: mask ? [target.buffer, mask.buffer] : [target.buffer],
        onEvent: (step) => { if (this.fitJob === job) onStep(step); },
      });
    });
  }

  /** Stop the fit: the shared cancel flag (read between and inside the model's evaluations),
   * else (plain module, or no answer within the grace period) a worker restart. */
  cancelFit(why = 'cancelled') {
    const job = this.fitJob;
    if (!job) return;
    this.fitJob = null;
    job.ctrl.abort(abortError(why));
  }

  get fitBusy() {
    return this.fitJob !== null;
  }

  /** The set-up of `args` moved by offsets (`values`, one per parameter of `params`) as the
   * values of its flags (the crate's `fitted_values`). */
  async fittedValues(args: string[], files: SimulateOptions['files'], params: string, values: number[], signal?: AbortSignal): Promise<Fitted> {
    await this.ready;
    this.lastFilesKey = '\u0001';
    return this.channel.call('fittedValues', { args, files: encodeFiles(files), params, values }, { signal });
  }

  /** The spots of `req.image` as a fit finds its target's (the crate's `find_spots` in the
   * worker: the detector of `req.args`, the background model and units of a fit's target). */
  async findSpots(req: Omit<SpotsRequest, 'files'> & { files?: SimulateOptions['files'] }, signal?: AbortSignal): Promise<Spot[]> {
    await this.ready;
    this.lastFilesKey = '\u0001';
    const image = req.image.slice();
    const mask = req.mask ? req.mask.slice() : null;
    return this.channel.call('findSpots', { ...req, files: encodeFiles(req.files), image, mask }, { signal, transfer: mask ? [image.buffer, mask.buffer] : [image.buffer] });
  }

  // ---- derivative images (derivative/) --------------------------------------------------------

  /** The image of `args` and its derivative by `param` (the crate's `render_tangent` in the
   * worker, on the backend the one policy picks for `backend` and `precision`). Queued in the
   * worker with the renders. */
  async renderTangent(args: string[], files: SimulateOptions['files'], param: string, backend: Backend, precision: Precision, signal?: AbortSignal): Promise<TangentInfo & { adapter: string }> {
    await this.ready;
    this.lastFilesKey = '\u0001'; // the request installs the files: the next render sends them again
    return this.channel.call('tangent', { args, files: encodeFiles(files), param, backend, precision }, { signal });
  }

  get busy() {
    return this.running !== null || this.queue.length > 0;
  }

  terminate() {
    this.failAll(abortError('terminated'));
    this.worker.terminate();
  }
}

function hash(b: Uint8Array): number {
  let h = 2166136261;
  for (let i = 0; i < b.length; i++) h = Math.imul(h ^ b[i], 16777619);
  return h >>> 0;
}
