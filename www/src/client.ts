// The page side of the worker bridge. One Worker, one render at a time; a new request
// supersedes the stale one on the same channel (latest wins): a queued one is dropped at once,
// a running one is cancelled through the shared cancel flag (threaded module) or a cancel
// message (GPU path), or its result is discarded (plain module on the CPU, which cannot be
// interrupted; `cancel()` then restarts the worker, as squoosh does).
import type { Backend, FromWorker, Geometry, ModuleInfo, Precision, Timings, ToWorker } from './protocol';

export interface SimulateOptions {
  /** 'auto' (default), 'webgpu' (alias 'gpu') or 'cpu'. */
  backend?: Backend | 'webgpu';
  /** Input files by name (the names the flags use, e.g. `-hkl input.hkl`). */
  files?: Record<string, Uint8Array | ArrayBuffer | string>;
  precision?: Precision;
  /** Requests on one channel supersede each other; other channels queue. Default 'main'. */
  channel?: string;
  onProgress?: (p: number) => void;
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
}

interface Job {
  id: number;
  channel: string;
  msg: Extract<ToWorker, { type: 'render' }>;
  resolve: (r: SimulateResult) => void;
  reject: (e: Error) => void;
  onProgress?: (p: number) => void;
  stale: boolean;
  start: number;
}

export function abortError(msg = 'superseded by a newer render'): Error {
  const e = new Error(msg);
  e.name = 'AbortError';
  return e;
}

/** Tokenise a command line like a shell (quotes group words); flags stay as typed. */
export function splitArgs(s: string): string[] {
  const out: string[] = [];
  const re = /"([^"]*)"|'([^']*)'|(\S+)/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(s))) out.push(m[1] ?? m[2] ?? m[3]);
  return out;
}

/** Upstream output flags that take a file name; they make no sense in the browser. */
const OUTPUT_FLAGS = new Set(['-floatfile', '-floatimage', '-intfile', '-intimage', '-noisefile', '-noiseimage',
  '-pgmfile', '-pgmimage', '-stolout']);

/** 'webgpu' (the name the API documents) and 'gpu' both select the GPU; anything else is auto. */
export function asBackend(v: string): Backend {
  return v === 'gpu' || v === 'webgpu' ? 'gpu' : v === 'cpu' ? 'cpu' : 'auto';
}

/** Split our own control flags (-backend, -precision, -threads) off the upstream ones. */
export function normaliseArgs(args: string | string[]): { args: string[]; backend?: Backend; precision?: Precision } {
  const words = typeof args === 'string' ? splitArgs(args) : [...args];
  const out: string[] = [];
  let backend: Backend | undefined;
  let precision: Precision | undefined;
  for (let i = 0; i < words.length; i++) {
    const w = words[i];
    if (w === '-backend' && i + 1 < words.length) {
      const v = words[++i];
      backend = asBackend(v);
    } else if (w === '-precision' && i + 1 < words.length) {
      precision = words[++i] === 'f64' ? 'f64' : 'f32';
    } else if (w === '-threads' && i + 1 < words.length) {
      i++; // the pool size is fixed when the worker starts
    } else if (OUTPUT_FLAGS.has(w) && i + 1 < words.length) {
      i++;
    } else {
      out.push(w);
    }
  }
  return { args: out, backend, precision };
}

const enc = new TextEncoder();

export class NanoBraggClient {
  private worker!: Worker;
  private nextId = 1;
  private running: Job | null = null;
  private queue: Job[] = [];
  private exports = new Map<number, { resolve: (b: Uint8Array) => void; reject: (e: Error) => void }>();
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
    let files: Record<string, Uint8Array> = {};
    for (const [k, v] of Object.entries(opts.files ?? {})) {
      files[k] = typeof v === 'string' ? enc.encode(v) : v instanceof Uint8Array ? v : new Uint8Array(v);
    }
    return new Promise<SimulateResult>((resolve, reject) => {
      const id = this.nextId++;
      const job: Job = {
        id, channel, resolve, reject, onProgress: opts.onProgress, stale: false, start: performance.now(),
        msg: { type: 'render', id, args: norm.args, files, backend, precision },
      };
      // Latest wins on this channel.
      this.queue = this.queue.filter((j) => {
        if (j.channel !== channel) return true;
        j.reject(abortError());
        return false;
      });
      if (this.running && this.running.channel === channel) this.stopRunning();
      this.queue.push(job);
      this.pump();
    });
  }

  /** Cancel the running render and drop the queued ones. */
  cancel() {
    for (const j of this.queue) j.reject(abortError('cancelled'));
    this.queue = [];
    if (!this.running) return;
    const interruptible = this.info?.kind === 'parallel' || this.running.msg.backend !== 'cpu';
    this.stopRunning();
    if (!interruptible) {
      // A single-threaded CPU render cannot be interrupted: restart the worker.
      const job = this.running;
      this.running = null;
      this.worker.terminate();
      job.reject(abortError('cancelled'));
      this.spawn();
    }
  }

  private stopRunning() {
    const job = this.running;
    if (!job || job.stale) return;
    job.stale = true;
    const info = this.info;
    if (info?.memory) Atomics.store(new Uint8Array(info.memory.buffer), info.cancelPtr, 1);
    this.worker.postMessage({ type: 'cancel' } satisfies ToWorker);
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
      const mem = this.info.memory;
      const ptr = this.info.progressPtr >> 2;
      const tick = () => {
        if (this.running !== job) return;
        job.onProgress?.(Atomics.load(new Uint32Array(mem.buffer), ptr) / 65536);
        this.progressTimer = requestAnimationFrame(tick);
      };
      this.progressTimer = requestAnimationFrame(tick);
    }
    this.worker.postMessage(job.msg);
  }

  private onMessage(m: FromWorker) {
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
    this.running = null;
    cancelAnimationFrame(this.progressTimer);
    if (m.type === 'result') {
      if (job.stale) job.reject(abortError());
      else {
        const { type: _t, id: _i, ...rest } = m;
        job.resolve({ ...rest, args: job.msg.args, timings: { ...m.timings, total: performance.now() - job.start } });
      }
    } else if (m.type === 'error') {
      if (m.cancelled || job.stale) job.reject(abortError(m.cancelled ? 'cancelled' : undefined));
      else job.reject(new Error(m.message));
    }
    this.pump();
  }

  /** Bytes of the last render: SMV noiseless ('int'), SMV with Poisson noise, or raw floats. */
  async exportImage(what: 'int' | 'noise' | 'float'): Promise<Uint8Array> {
    await this.ready;
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.exports.set(id, { resolve, reject });
      this.worker.postMessage({ type: 'export', id, what } satisfies ToWorker);
    });
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
