// The page side of the worker bridge. One Worker, one render at a time, at most one render in
// flight per channel and at most one waiting: a newer request replaces the waiting one (latest
// wins; the replaced promise rejects with an AbortError). A running render is cancelled when a
// request supersedes it, through the shared cancel flag (threaded module) and a cancel message
// (GPU path), or by restarting the worker (plain module on the CPU, as squoosh does) — except
// that a live request (a frame of a drag) lets a running live render finish and show, so that
// a drag always shows frames however slow each one is (no starvation).
import { asBackend, normaliseArgs } from './args';
import type { Backend, FromWorker, Geometry, HklSummary, ModuleInfo, PixelGeometry, Precision, Timings, ToWorker } from './protocol';
import type { DetectorEffects, RealisticLayers, RealisticPhase, RealisticRequest, RealisticResult } from './protocol';
import type { Fitted, FitInfo, FitRequest, FitStepInfo, Spot, SpotsRequest } from './protocol';
import type { TangentInfo } from './protocol';
import { crateError } from './protocol';
export { splitArgs, normaliseArgs, asBackend } from './args';

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
}

export interface SimulateResult {
  width: number;
  height: number;
  data: Float32Array;
  backend: 'gpu' | 'cpu';
  threads: number;
  adapter: string;
  notice: string;
  geometry: Geometry;
  timings: Timings;
  args: string[];
  /** Structure-factor file summary, when this request sent new input files. */
  hkl?: HklSummary | null;
  warnings: string[];
}

interface Job {
  id: number;
  channel: string;
  msg: Extract<ToWorker, { type: 'render' }>;
  resolve: (r: SimulateResult) => void;
  reject: (e: Error) => void;
  onProgress?: (p: number) => void;
  onEstimate?: (ms: number, backend: 'gpu' | 'cpu') => void;
  live: boolean;
  stale: boolean;
  start: number;
}

/** How long a cancelled render may take to stop before its worker is restarted (ms). */
const CANCEL_GRACE_MS = 50;
/** The same for a render superseded by a newer request (a restart costs a module load). */
const SUPERSEDE_GRACE_MS = 400;

export function abortError(msg = 'superseded by a newer render'): Error {
  const e = new Error(msg);
  e.name = 'AbortError';
  return e;
}

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
}

export class NanoBraggClient {
  private worker!: Worker;
  private nextId = 1;
  private running: Job | null = null;
  private queue: Job[] = [];
  private exports = new Map<number, { resolve: (b: Uint8Array) => void; reject: (e: Error) => void }>();
  /** The words of the render whose plan and image the worker holds (exports use them); null
   * after a prediction replaced the plan. */
  lastRendered: string[] | null = null;
  private predictions = new Map<number, { resolve: (p: Prediction) => void; reject: (e: Error) => void }>();
  private pixelQueries = new Map<number, { resolve: (p: PixelGeometry[]) => void; reject: (e: Error) => void }>();
  private lastFilesKey = '';
  private progressTimer = 0;
  info: ModuleInfo | null = null;
  ready!: Promise<ModuleInfo>;

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
    this.lastFilesKey = '';
    this.ready = new Promise<ModuleInfo>((resolve, reject) => {
      worker.onmessage = (ev: MessageEvent<FromWorker>) => {
        const m = ev.data;
        if (m.type === 'ready') {
          this.info = m.info;
          resolve(m.info);
          this.pump();
        } else if (m.type === 'init-error') {
          reject(new Error(`cannot start the simulator: ${m.message}`));
        } else this.onMessage(m);
      };
      worker.onerror = (ev) => {
        const err = new Error(`worker error: ${ev.message ?? 'failed to load'}`);
        reject(err);
        this.failAll(err);
      };
    });
    this.ready.catch(() => {});
    const threads = this.opts.threads ?? Math.min(navigator.hardwareConcurrency || 1, 16);
    const preferParallel = this.opts.preferParallel ?? true;
    worker.postMessage({ type: 'init', preferParallel, threads } satisfies ToWorker);
  }

  private failAll(err: Error) {
    this.rejectPredictions(err);
    if (this.running) this.running.reject(err);
    this.running = null;
    for (const j of this.queue) j.reject(err);
    this.queue = [];
  }

  /** Render; resolves with the float image. Rejects with the simulator's message on bad input,
   * or with an AbortError when a newer request on the same channel superseded this one. */
  simulate(args: string | string[], opts: SimulateOptions = {}): Promise<SimulateResult> {
    const norm = normaliseArgs(args);
    const backend = asBackend(opts.backend ?? norm.backend ?? 'auto');
    const precision = opts.precision ?? norm.precision ?? 'f32';
    const channel = opts.channel ?? 'main';
    const files = encodeFiles(opts.files);
    return new Promise<SimulateResult>((resolve, reject) => {
      const id = this.nextId++;
      const live = opts.live === true;
      const job: Job = {
        id, channel, resolve, reject, onProgress: opts.onProgress, onEstimate: opts.onEstimate, live, stale: false,
        start: performance.now(), msg: { type: 'render', id, args: norm.args, files, backend, precision },
      };
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
    this.queue = this.queue.filter((j) => {
      if (channel !== undefined && j.channel !== channel) return true;
      j.reject(abortError('cancelled'));
      return false;
    });
    if (!this.running || (channel !== undefined && this.running.channel !== channel)) return;
    const job = this.running;
    const interruptible = this.info?.kind === 'parallel' || job.msg.backend !== 'cpu';
    if (!interruptible) return this.restart(job, 'cancelled');
    this.stopRunning(CANCEL_GRACE_MS);
    // the caller sees the cancel at once; the worker acknowledges within the grace period or
    // is restarted
    job.reject(abortError('cancelled'));
  }

  /** Stop the running render: raise the cancel flag (shared memory and message), and restart the
   * worker if it has not stopped within `graceMs` (a kernel can be between two checks of the
   * flag for longer than that). */
  private stopRunning(graceMs = SUPERSEDE_GRACE_MS) {
    const job = this.running;
    if (!job || job.stale) return;
    job.stale = true;
    const info = this.info;
    if (info?.memory) Atomics.store(new Uint8Array(info.memory.buffer), info.cancelPtr, 1);
    this.worker.postMessage({ type: 'cancel' } satisfies ToWorker);
    setTimeout(() => {
      if (this.running === job) this.restart(job, 'cancelled');
    }, graceMs);
  }

  /** Terminate the worker (stopping whatever it runs at once) and start a fresh one; the
   * waiting requests run on the new worker. */
  private restart(job: Job, why: string) {
    this.running = null;
    cancelAnimationFrame(this.progressTimer);
    this.worker.terminate();
    this.rejectPredictions(abortError('the worker was restarted'));
    this.restarts++;
    this.info = null;
    job.reject(abortError(why));
    this.spawn();
  }

  /** A restarted worker never answers the predictions it was sent. */
  private rejectPredictions(err: Error) {
    for (const p of this.predictions.values()) p.reject(err);
    this.predictions.clear();
    for (const p of this.pixelQueries.values()) p.reject(err);
    this.pixelQueries.clear();
    for (const p of this.fittedQueries.values()) p.reject(err);
    this.fittedQueries.clear();
    for (const p of this.spotQueries.values()) p.reject(err);
    this.spotQueries.clear();
    for (const p of this.tangentQueries.values()) p.reject(err);
    this.tangentQueries.clear();
    if (this.fitJob) {
      this.fitJob.reject(err);
      this.fitJob = null;
    }
  }

  /** Workers restarted because a render did not stop in time (for tests and benchmarks). */
  restarts = 0;

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
      const mem = this.info.memory;
      const ptr = this.info.progressPtr >> 2;
      const tick = () => {
        if (this.running !== job) return;
        job.onProgress?.(Atomics.load(new Uint32Array(mem.buffer), ptr) / 65536);
        this.progressTimer = requestAnimationFrame(tick);
      };
      this.progressTimer = requestAnimationFrame(tick);
    } else if (job.onProgress && job.msg.backend === 'cpu') {
      // Plain module on the CPU: the worker is busy in the kernel and cannot report.
      job.onProgress(NaN);
    }
    this.worker.postMessage(job.msg);
  }

  private onMessage(m: FromWorker) {
    if (m.type === 'trapped') {
      // the request that trapped has its error; the spent worker goes (its memory with it) and
      // the waiting requests run on a fresh one
      this.worker.terminate();
      this.restarts++;
      this.info = null;
      this.rejectPredictions(abortError('the worker was restarted'));
      this.spawn();
      return;
    }
    if (this.onRealisticMessage(m)) return;
    if (this.onFitMessage(m)) return;
    if (this.onTangentMessage(m)) return;
    if (m.type === 'pixel-geometry') {
      const p = this.pixelQueries.get(m.id);
      this.pixelQueries.delete(m.id);
      if (p) (m.message ? p.reject(crateError(m.message, m.error)) : p.resolve(m.points!));
      return;
    }
    if (m.type === 'predicted') {
      const p = this.predictions.get(m.id);
      this.predictions.delete(m.id);
      if (p) (m.message ? p.reject(crateError(m.message, m.error)) : p.resolve(m.prediction as Prediction));
      return;
    }
    if (m.type === 'exported') {
      const e = this.exports.get(m.id);
      this.exports.delete(m.id);
      if (!e) return;
      if (m.bytes) e.resolve(m.bytes);
      else e.reject(new Error(m.message));
      return;
    }
    const job = this.running;
    if (!job || !('id' in m) || m.id !== job.id) return;
    if (m.type === 'progress') {
      job.onProgress?.(m.value);
      return;
    }
    if (m.type === 'estimate') {
      job.onEstimate?.(m.ms, m.backend);
      return;
    }
    this.running = null;
    cancelAnimationFrame(this.progressTimer);
    if (m.type === 'result') {
      if (job.stale) job.reject(abortError());
      else {
        const { type: _t, id: _i, ...rest } = m;
        this.lastRendered = job.msg.args;
        job.resolve({ ...rest, args: job.msg.args, timings: { ...m.timings, total: performance.now() - job.start } } as SimulateResult);
      }
    } else if (m.type === 'error') {
      if (m.cancelled || job.stale) job.reject(abortError(m.cancelled ? 'cancelled' : undefined));
      else job.reject(crateError(m.message, m.error));
    }
    this.pump();
  }

  /** Reflection prediction for a command line (the crate's `predict`: every lattice point within
   * the detector's reach, or those within `maxExcitationError` (1/Å) of the Ewald sphere). Runs
   * between renders; it prepares its own plan, so the next render prepares again. */
  async predict(args: string | string[], opts: PredictOptions = {}): Promise<Prediction> {
    await this.ready;
    const id = this.nextId++;
    const files = encodeFiles(opts.files);
    return new Promise((resolve, reject) => {
      this.predictions.set(id, { resolve, reject });
      this.lastFilesKey = '';
      this.lastRendered = null;
      this.worker.postMessage({
        type: 'predict', id, args: normaliseArgs(args).args, files, maxExcitationError: opts.maxExcitationError ?? null,
        columns: opts.columns === true, onImage: opts.onImage === true,
      } satisfies ToWorker);
    });
  }

  /** The crate's detector geometry at points (`predict::pixel_geometry`: lab position, d, 2θ,
   * hkl) for the crystal and detector of `args`, with the input files the worker holds (those of
   * the last render). `points` are continuous pixel coordinates, pixel centres at i + 0.5. The
   * worker keeps the resolved words, so repeated queries cost the arithmetic only; the plan
   * it renders and exports is left alone. */
  async pixelGeometry(args: string | string[], points: [number, number][]): Promise<PixelGeometry[]> {
    await this.ready;
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pixelQueries.set(id, { resolve, reject });
      this.worker.postMessage({ type: 'pixel-geometry', id, args: normaliseArgs(args).args, points: points.flat() } satisfies ToWorker);
    });
  }

  /** Bytes of the last render: SMV noiseless ('int'), SMV with Poisson noise, or raw floats; of
   * a realistic still also a miniCBF ('cbf'). */
  async exportImage(what: 'int' | 'noise' | 'float' | 'cbf', realistic = false): Promise<Uint8Array> {
    await this.ready;
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.exports.set(id, { resolve, reject });
      this.worker.postMessage({ type: 'export', id, what, realistic } satisfies ToWorker);
    });
  }

  // ---- the realistic-image chain (realistic.ts): one request at a time, the newest wins ----
  private realJob: {
    id: number; resolve: (r: RealisticResult) => void; reject: (e: Error) => void;
    onProgress?: (p: number) => void; onPhase?: (p: RealisticPhase, sfCached: boolean) => void;
    onEstimate?: (ms: number) => void;
  } | null = null;

  /** Model → structure factors → spots → background → detector (see protocol.ts). Rejects with
   * the simulator's message (naming file and line for a bad model), or an AbortError when
   * cancelled or superseded. */
  async realistic(
    req: Omit<RealisticRequest, 'type' | 'id'>,
    cb: RealisticCallbacks = {},
  ): Promise<RealisticResult> {
    return this.realisticSend({ type: 'realistic', ...req } as RealisticRequest, cb);
  }

  /** Compose the kept layers again (layer toggles, detector effects): no new render. */
  async realisticCompose(layers: RealisticLayers, effects: DetectorEffects): Promise<RealisticResult> {
    return this.realisticSend({ type: 'realistic-compose', layers, effects }, {});
  }

  private async realisticSend(
    msg: Omit<Extract<ToWorker, { type: 'realistic' | 'realistic-compose' }>, 'id'>,
    cb: RealisticCallbacks,
  ): Promise<RealisticResult> {
    if (this.realJob) this.cancelRealistic('superseded by a newer render');
    await this.ready;
    const id = this.nextId++;
    this.lastRendered = null; // the worker's plan is the realistic one now
    this.lastFilesKey = '\u0001'; // the chain installs its own files: the next render sends them again
    return new Promise<RealisticResult>((resolve, reject) => {
      const job = { id, resolve, reject, ...cb };
      this.realJob = job;
      const info = this.info;
      if (info?.memory && cb.onProgress) {
        const mem = info.memory;
        const ptr = info.progressPtr >> 2;
        const tick = () => {
          if (this.realJob !== job) return;
          job.onProgress?.(Atomics.load(new Uint32Array(mem.buffer), ptr) / 65536);
          requestAnimationFrame(tick);
        };
        requestAnimationFrame(tick);
      }
      this.worker.postMessage({ ...msg, id });
    });
  }

  /** Stop the realistic chain: the shared cancel flag (read inside the structure factors and
   * the kernels), or a worker restart where the module has no shared memory. */
  cancelRealistic(why = 'cancelled') {
    const job = this.realJob;
    if (!job) return;
    this.realJob = null;
    job.reject(abortError(why));
    // a stage that reads the flag stops within milliseconds; one that does not (or a GPU
    // submission) is stopped by a restart after the grace period
    this.stopInWorker('realStopping', job.id, why, CANCEL_GRACE_MS);
  }

  /** Stop job `id` in the worker: the shared cancel flag (read inside the crate's loops) and a
   * restart if the worker has not answered within `grace` ms (`slot` holds the id until it
   * answers); at once a restart where the module has no shared memory (its only thread is in
   * the computation). */
  private stopInWorker(slot: 'realStopping' | 'fitStopping', id: number, why: string, grace: number) {
    const hard = () => {
      this[slot] = 0;
      this.failAll(abortError(why));
      this.worker.terminate();
      this.restarts++;
      this.info = null;
      this.spawn();
    };
    const info = this.info;
    if (info?.memory) {
      Atomics.store(new Uint8Array(info.memory.buffer), info.cancelPtr, 1);
      this.worker.postMessage({ type: 'cancel' } satisfies ToWorker);
      this[slot] = id;
      setTimeout(() => { if (this[slot] === id) hard(); }, grace);
    } else hard();
  }

  /** The id of a cancelled realistic job whose worker has not answered yet (0: none). */
  private realStopping = 0;

  private onRealisticMessage(m: FromWorker): boolean {
    if (!m.type.startsWith('realistic') && m.type !== 'progress' && m.type !== 'estimate') return false;
    if ('id' in m && m.id === this.realStopping && (m.type === 'realistic-error' || m.type === 'realistic-result')) this.realStopping = 0;
    const job = this.realJob;
    if (!('id' in m) || !job || m.id !== job.id) return m.type.startsWith('realistic');
    if (m.type === 'progress') job.onProgress?.(m.value);
    else if (m.type === 'estimate') job.onEstimate?.(m.ms);
    else if (m.type === 'realistic-phase') job.onPhase?.(m.phase, m.sfCached);
    else if (m.type === 'realistic-result') {
      this.realJob = null;
      job.resolve(m);
    } else if (m.type === 'realistic-error') {
      this.realJob = null;
      job.reject(m.cancelled ? abortError('cancelled') : crateError(m.message, m.error));
    }
    return true;
  }

  // ---- the fit to an image (fit/): one at a time ----------------------------------------------
  private fitJob: { id: number; resolve: (r: FitInfo) => void; reject: (e: Error) => void; onStep: (s: FitStepInfo) => void } | null = null;
  private fitStopping = 0;
  private fittedQueries = new Map<number, { resolve: (f: Fitted) => void; reject: (e: Error) => void }>();
  private spotQueries = new Map<number, { resolve: (s: Spot[]) => void; reject: (e: Error) => void }>();

  /** Fit parameters of the set-up of `req.args` to `req.target` (`api::fit` in the worker);
   * `onStep` sees the start and every accepted step. Rejects with the crate's error, or an
   * AbortError when cancelled (`cancelFit`). Renders wait behind it in the worker. */
  async fit(req: Omit<FitRequest, 'type' | 'id' | 'files'> & { files?: SimulateOptions['files'] }, onStep: (s: FitStepInfo) => void): Promise<FitInfo> {
    if (this.fitJob) this.cancelFit('superseded by a newer fit');
    await this.ready;
    const id = this.nextId++;
    this.lastFilesKey = '\u0001'; // the fit installs the files: the next render sends them again
    return new Promise<FitInfo>((resolve, reject) => {
      this.fitJob = { id, resolve, reject, onStep };
      const target = req.target.slice();
      const mask = req.mask ? req.mask.slice() : null;
      this.worker.postMessage({ ...req, type: 'fit', id, files: encodeFiles(req.files), target, mask } satisfies FitRequest, mask ? [target.buffer, mask.buffer] : [target.buffer]);
    });
  }

  /** Stop the fit: the shared cancel flag (read between and inside the model's evaluations),
   * else (plain module, or no answer within the grace period) a worker restart. */
  cancelFit(why = 'cancelled') {
    const job = this.fitJob;
    if (!job) return;
    this.fitJob = null;
    job.reject(abortError(why));
    this.stopInWorker('fitStopping', job.id, why, 1000);
  }

  get fitBusy() {
    return this.fitJob !== null;
  }

  /** The set-up of `args` moved by offsets (`values`, one per parameter of `params`) as the
   * values of its flags (the crate's `fitted_values`). */
  async fittedValues(args: string[], files: SimulateOptions['files'], params: string, values: number[]): Promise<Fitted> {
    await this.ready;
    const id = this.nextId++;
    this.lastFilesKey = '\u0001';
    return new Promise((resolve, reject) => {
      this.fittedQueries.set(id, { resolve, reject });
      this.worker.postMessage({ type: 'fitted-values', id, args, files: encodeFiles(files), params, values } satisfies ToWorker);
    });
  }

  /** The spots of `req.image` as a fit finds its target's (the crate's `find_spots` in the
   * worker: the detector of `req.args`, the background model and units of a fit's target). */
  async findSpots(req: Omit<SpotsRequest, 'type' | 'id' | 'files'> & { files?: SimulateOptions['files'] }): Promise<Spot[]> {
    await this.ready;
    const id = this.nextId++;
    this.lastFilesKey = '\u0001';
    return new Promise((resolve, reject) => {
      this.spotQueries.set(id, { resolve, reject });
      const image = req.image.slice();
      const mask = req.mask ? req.mask.slice() : null;
      this.worker.postMessage({ ...req, type: 'find-spots', id, files: encodeFiles(req.files), image, mask } satisfies SpotsRequest, mask ? [image.buffer, mask.buffer] : [image.buffer]);
    });
  }

  private onFitMessage(m: FromWorker): boolean {
    if (m.type === 'spots') {
      const q = this.spotQueries.get(m.id);
      this.spotQueries.delete(m.id);
      if (q) (m.spots ? q.resolve(m.spots) : q.reject(crateError(m.message, m.error)));
      return true;
    }
    if (m.type === 'fitted-values') {
      const q = this.fittedQueries.get(m.id);
      this.fittedQueries.delete(m.id);
      if (q) (m.fitted ? q.resolve(m.fitted) : q.reject(crateError(m.message, m.error)));
      return true;
    }
    if (m.type !== 'fit-step' && m.type !== 'fit-result' && m.type !== 'fit-error') return false;
    if (m.id === this.fitStopping && m.type !== 'fit-step') this.fitStopping = 0;
    const job = this.fitJob;
    if (!job || job.id !== m.id) return true;
    if (m.type === 'fit-step') job.onStep(m.step);
    else if (m.type === 'fit-result') {
      this.fitJob = null;
      job.resolve(m.result);
    } else {
      this.fitJob = null;
      job.reject(m.cancelled ? abortError('cancelled') : crateError(m.message, m.error));
    }
    return true;
  }

  // ---- derivative images (derivative/) --------------------------------------------------------
  private tangentQueries = new Map<number, { resolve: (r: TangentInfo & { adapter: string }) => void; reject: (e: Error) => void }>();

  /** The image of `args` and its derivative by `param` (the crate's `render_tangent` in the
   * worker, on the backend the one policy picks for `backend` and `precision`). Queued in the
   * worker with the renders. */
  async renderTangent(args: string[], files: SimulateOptions['files'], param: string, backend: Backend, precision: Precision): Promise<TangentInfo & { adapter: string }> {
    await this.ready;
    const id = this.nextId++;
    this.lastFilesKey = '\u0001'; // the request installs the files: the next render sends them again
    return new Promise((resolve, reject) => {
      this.tangentQueries.set(id, { resolve, reject });
      this.worker.postMessage({ type: 'tangent', id, args, files: encodeFiles(files), param, backend, precision } satisfies ToWorker);
    });
  }

  private onTangentMessage(m: FromWorker): boolean {
    if (m.type !== 'tangent') return false;
    const q = this.tangentQueries.get(m.id);
    this.tangentQueries.delete(m.id);
    if (q) (m.result ? q.resolve({ ...m.result, adapter: m.adapter }) : q.reject(crateError(m.message, m.error)));
    return true;
  }

  /** A realistic chain is running. */
  get realisticBusy() {
    return this.realJob !== null;
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
