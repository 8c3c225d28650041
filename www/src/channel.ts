// The one typed channel between the page (client.ts) and the module Worker (worker.ts): a small
// RPC over postMessage whose every method is one row of `WorkerApi` (its request, its answer and
// the events it sends while it runs), with one error type (`WorkerError`: the crate's structured
// error, `crate::error::Error`'s serde form) and an `AbortSignal` per call. Both sides are typed
// from the table: the worker serves a handler per row (`serve`), the page calls them (`Channel`).
//
// Hand-written rather than Comlink: the client's cancellation is the crate's shared cancel flag
// (threaded module) plus a worker restart when a kernel does not stop in time, the worker runs
// calls one at a time in order while a cancel must overtake them, and progress and fit steps are
// events of a call; Comlink has no abort, proxies each callback through a MessagePort of its own
// and knows nothing of restarts, so it would wrap rather than replace this code.
import type { Backend, Precision } from './args';
import type { BlockMaxima, ViewBox } from './blocks';
import type {
  DetectorEffects, Fitted, FitInfo, FitStepInfo, Geometry, HklSummary, ModelInfo, ModuleInfo, PixelGeometry, RealisticLayers,
  RealisticPhase, SfInfo, Spot, TangentInfo, Timings,
} from './protocol';

/** One method: its request, what it answers and the events it sends while it runs. */
export interface Method<Req, Res, Ev = never> {
  req: Req;
  res: Res;
  event: Ev;
}

/** Input files by name; null = unchanged since the previous request (the worker keeps them). */
export type Files = Record<string, Uint8Array> | null;

export interface RenderRequest { args: string[]; files: Files; backend: Backend; precision: Precision }
export interface RenderAnswer {
  /** Structure-factor file summary when the input files changed (else undefined). */
  hkl?: HklSummary | null;
  warnings: string[];
  width: number;
  height: number;
  data: Float32Array;
  backend: 'gpu' | 'cpu';
  threads: number;
  adapter: string;
  notice: string;
  geometry: Geometry;
  timings: Timings;
}
export type RenderEvent =
  | { type: 'progress'; value: number }
  /** Sent before a render expected to take long (from the plan's work and measured speed). */
  | { type: 'estimate'; ms: number; backend: 'gpu' | 'cpu' };

export interface PredictRequest {
  args: string[];
  files: Files;
  maxExcitationError: number | null;
  /** Reflections as typed-array columns (`Prediction::columns`) instead of records. */
  columns?: boolean;
  /** Only what is on the image (the crate's `PredictOptions::on_image`). */
  onImage?: boolean;
}

/** The spots of `image` as the fit finds its target's (the crate's `find_spots`: the detector of
 * `args`, the `background` model and units of a `FitRequest`). */
export interface SpotsRequest {
  args: string[];
  files: Files;
  image: Float32Array;
  /** The pixels to use (1 = use, 0 = excluded: a measured image's flagged pixels, the crate's
   * `MeasuredInfo.mask`); null: all. */
  mask: Uint8Array | null;
  background: 'none' | 'local';
  gain: number;
  adc: number;
}

/** Fit `params` of the set-up of `args` to `target` (the detector's size, photons/pixel). */
export interface FitRequest {
  args: string[];
  files: Files;
  target: Float32Array;
  /** The target's pixels to use (as `SpotsRequest.mask`; the crate's `FitOptions::mask`). */
  mask: Uint8Array | null;
  /** Comma-separated parameter names (`rot_x,cell_a,…`). */
  params: string;
  /** Starting offsets, one per parameter (or empty). */
  start: number[];
  /** What lies under the spots in the target (`api::Background`): `none`, or `local` (the
   * crate's smooth map from the target: a measured image's water, air and offset). */
  background: 'none' | 'local';
  /** The target's units: ADU = gain·photons + adc (1 and 0: photons). */
  gain: number;
  adc: number;
  /** Start with the spot-centroid stage (`FitOptions::centroids`): orientation and cell from
   * the spots' positions, for sharp spots (the realistic still's). */
  centroids: boolean;
  maxIterations: number;
  /** Send the model image with each step (the live view). */
  images: boolean;
}

/** The image of `args` and its derivative with respect to `param` (the crate's
 * `render_tangent`), where `backend` and `precision` put it (the one backend policy). */
export interface TangentRequest { args: string[]; files: Files; param: string; backend: Backend; precision: Precision }

/** Model → structure factors (cached per model and resolution) → spots → background → detector. */
export interface RealisticRequest {
  /** The atomic model (its cell and structure factors), or null: the words' own (-default_F, -hkl). */
  model: { name: string; bytes: Uint8Array } | null;
  /** Input files the words name (HKL, matrix, …), as for a render. */
  files: Files;
  /** nanoBragg words of the spots (detector, beam, crystal; the cell comes from the model). */
  args: string[];
  /** nonBragg words per material, separated by '--'. */
  materials: string[];
  backend: Backend;
  precision: Precision;
  layers: RealisticLayers;
  effects: DetectorEffects;
  /** The image view's box: the image's block maxima for the view fitted to it come with it. */
  view?: ViewBox;
}
/** Only the layers or the detector effects changed: compose again from the kept layers. */
export interface RealisticCompose { layers: RealisticLayers; effects: DetectorEffects; view?: ViewBox }

export interface RealisticResult {
  width: number;
  height: number;
  /** Detector counts (ADU) of the chosen layers. */
  data: Float32Array;
  /** Their block maxima for the request's view box (the crate's; null: none asked for, or
   * the fitted image is drawn without them). */
  maxima?: BlockMaxima | null;
  geometry: Geometry | null;
  model: ModelInfo | null;
  sf: SfInfo | null;
  /** Resolution the detector reaches (Å) and the seconds the spots' render was estimated at. */
  dMin: number;
  estimateS: number;
  backend: 'gpu' | 'cpu';
  warnings: string[];
  /** Milliseconds per stage. */
  timings: { sf: number; spots: number; background: number; detector: number; total: number };
}
export type RealisticEvent =
  | { type: 'progress'; value: number }
  | { type: 'estimate'; ms: number; backend: 'gpu' | 'cpu' }
  | { type: 'phase'; phase: RealisticPhase; sfCached: boolean };

/** Every request the worker answers: the one table both sides are typed from. */
export type WorkerApi = {
  init: Method<{ preferParallel: boolean; threads: number }, ModuleInfo>;
  render: Method<RenderRequest, RenderAnswer, RenderEvent>;
  predict: Method<PredictRequest, unknown>;
  /** The detector's geometry at points (`pixel_geometry`): the crystal and detector of `args`
   * with the files the worker holds; `points` = [f0, s0, f1, s1, …] (pixel centres at i + 0.5). */
  pixelGeometry: Method<{ args: string[]; points: number[] }, PixelGeometry[]>;
  /** `realistic`: the realistic chain's image shown (`realistic_export`), else the last render's. */
  export: Method<{ what: 'int' | 'noise' | 'float' | 'cbf'; realistic: boolean }, Uint8Array>;
  realistic: Method<RealisticRequest, RealisticResult, RealisticEvent>;
  realisticCompose: Method<RealisticCompose, RealisticResult>;
  fit: Method<FitRequest, FitInfo, FitStepInfo>;
  fittedValues: Method<{ args: string[]; files: Files; params: string; values: number[] }, Fitted>;
  findSpots: Method<SpotsRequest, Spot[]>;
  tangent: Method<TangentRequest, TangentInfo & { adapter: string }>;
};
export type MethodName = keyof WorkerApi;

/** Any table of methods (the simulation worker's `WorkerApi`; the measured-image worker has its own). */
export type ApiTable = { [name: string]: Method<unknown, unknown, unknown> };

// ---- the one error type ----------------------------------------------------------------------

/** The crate's structured error (`crate::error::Error` serialized: `{kind, message, flag, field,
 * file, line, key}`, `kind` the crate's `ErrorKind` in snake case: "usage", "input",
 * "cancelled", …). Errors that are not the crate's (a trapped module, a worker that failed to
 * load) have no kind and no place. */
export interface WorkerErrorData {
  message: string;
  kind?: string;
  flag?: string | null;
  field?: string | null;
  file?: string | null;
  line?: number | null;
  key?: string | null;
}

/** What every call rejects with: the crate's structure on an Error. A cancelled or superseded
 * call is named 'AbortError' (as `AbortSignal`'s reason and fetch's are). */
export class WorkerError extends Error implements WorkerErrorData {
  kind?: string;
  flag?: string | null;
  field?: string | null;
  file?: string | null;
  line?: number | null;
  key?: string | null;
  constructor(d: WorkerErrorData) {
    super(d.message);
    this.name = d.kind === 'cancelled' ? 'AbortError' : 'WorkerError';
    if (d.kind !== undefined) this.kind = d.kind;
    for (const k of ['flag', 'field', 'file', 'line', 'key'] as const) if (d[k] !== undefined && d[k] !== null) (this as Record<string, unknown>)[k] = d[k];
  }
}

/** A cancelled or superseded call (`kind: 'cancelled'`, name 'AbortError'). */
export function abortError(msg = 'superseded by a newer render'): WorkerError {
  return new WorkerError({ message: msg, kind: 'cancelled' });
}

export const isAbort = (e: unknown): boolean => (e as Error | null)?.name === 'AbortError';

/** The error data of anything thrown (the crate's error as the wasm module throws it: a JS Error
 * with the serde fields; `text` overrides the message). */
export function errorData(e: unknown, text?: string): WorkerErrorData {
  const o = (e ?? {}) as Record<string, unknown>;
  const message = text ?? (e instanceof Error ? e.message : typeof o.message === 'string' ? o.message : String(e));
  if (typeof o.kind !== 'string') return { message };
  const str = (v: unknown) => (typeof v === 'string' ? v : null);
  return { message, kind: o.kind, flag: str(o.flag), field: str(o.field), file: str(o.file), line: typeof o.line === 'number' ? o.line : null, key: str(o.key) };
}

// ---- the wire ----------------------------------------------------------------------------------

export type CallMessage<A extends ApiTable = WorkerApi> = { [M in keyof A & string]: { kind: 'call'; id: number; method: M; req: A[M]['req'] } }[keyof A & string];
export type ToWorker<A extends ApiTable = WorkerApi> =
  | CallMessage<A>
  /** Stop what runs (read by the crate's loops and the GPU path); bypasses the queue. */
  | { kind: 'cancel' };
export type FromWorker =
  | { kind: 'ok'; id: number; value: unknown }
  | { kind: 'error'; id: number; error: WorkerErrorData }
  | { kind: 'event'; id: number; event: unknown }
  /** The module trapped (a panic or a failed allocation) answering the request before (`message`
   * says why): it is spent, and the page starts a fresh worker. */
  | { kind: 'trapped'; message?: string };

/** What a handler can do besides answering: send events, name buffers to transfer. */
export interface CallContext<Ev> {
  emit(event: Ev, transfer?: Transferable[]): void;
  /** Buffers of the answer to transfer rather than copy. */
  transfer(...t: Transferable[]): void;
}
export type Handlers<A extends ApiTable = WorkerApi> = {
  [M in keyof A]: (req: A[M]['req'], ctx: CallContext<A[M]['event']>) => A[M]['res'] | Promise<A[M]['res']>;
};

interface Port {
  postMessage(msg: unknown, transfer?: Transferable[]): void;
}

/** The worker's side: each call runs after the ones before it (one at a time, in order); a
 * cancel message runs `onCancel` at once. `onReceive` sees each call as it arrives (before the
 * queue); `errText` turns a thrown value into its message; `after` runs after each call. */
export function serve<A extends ApiTable = WorkerApi>(port: Port, handlers: Handlers<A>, o: {
  onCancel?: () => void;
  onReceive?: (msg: CallMessage<A>) => void;
  errText?: (e: unknown) => string;
  after?: () => void;
} = {}): (msg: ToWorker<A>) => void {
  let chain: Promise<void> = Promise.resolve();
  return (msg) => {
    if (msg.kind === 'cancel') {
      o.onCancel?.();
      return;
    }
    o.onReceive?.(msg);
    const { id } = msg;
    chain = chain.then(async () => {
      const transfer: Transferable[] = [];
      const ctx: CallContext<unknown> = {
        emit: (event, t = []) => port.postMessage({ kind: 'event', id, event } satisfies FromWorker, t),
        transfer: (...t) => transfer.push(...t),
      };
      try {
        const h = handlers[msg.method] as (req: unknown, ctx: CallContext<unknown>) => unknown;
        const value = await h(msg.req, ctx);
        port.postMessage({ kind: 'ok', id, value } satisfies FromWorker, transfer);
      } catch (e) {
        port.postMessage({ kind: 'error', id, error: errorData(e, o.errText?.(e)) } satisfies FromWorker);
      }
      o.after?.();
    });
  };
}

export interface CallOptions<Ev> {
  /** Abort: the call rejects at once with an AbortError and `onAbort` stops it in the worker. */
  signal?: AbortSignal;
  onAbort?: () => void;
  onEvent?: (event: Ev) => void;
  /** The worker answered (also after an abort: a stop that landed). */
  onSettled?: () => void;
  transfer?: Transferable[];
}

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  onEvent?: (e: unknown) => void;
  onSettled?: () => void;
  /** Rejected already (aborted): the answer only settles it. */
  done: boolean;
}

/** The page's side of one worker: typed calls, one answer each. */
export class Channel<A extends ApiTable = WorkerApi> {
  private next = 1;
  private pending = new Map<number, Pending>();
  /** The worker trapped (the client replaces it); `message` says why. */
  onTrapped: (message?: string) => void = () => {};

  constructor(private port: Port) {}

  /** Route one message from the worker. */
  receive(m: FromWorker) {
    if (m.kind === 'trapped') {
      this.onTrapped(m.message);
      return;
    }
    const p = this.pending.get(m.id);
    if (!p) return;
    if (m.kind === 'event') {
      if (!p.done) p.onEvent?.(m.event);
      return;
    }
    this.pending.delete(m.id);
    p.onSettled?.();
    if (p.done) return;
    p.done = true;
    if (m.kind === 'ok') p.resolve(m.value);
    else p.reject(new WorkerError(m.error));
  }

  call<M extends keyof A & string>(method: M, req: A[M]['req'], o: CallOptions<A[M]['event']> = {}): Promise<A[M]['res']> {
    return new Promise((resolve, reject) => {
      if (o.signal?.aborted) {
        reject(reasonError(o.signal));
        return;
      }
      const id = this.next++;
      const p: Pending = { resolve: resolve as (v: unknown) => void, reject, onEvent: o.onEvent as (e: unknown) => void, onSettled: o.onSettled, done: false };
      this.pending.set(id, p);
      o.signal?.addEventListener('abort', () => {
        if (p.done) return;
        p.done = true;
        reject(reasonError(o.signal!));
        o.onAbort?.();
      }, { once: true });
      this.port.postMessage({ kind: 'call', id, method, req } as ToWorker<A>, o.transfer ?? []);
    });
  }

  /** Send the cancel message (the worker raises the module's flag at once). */
  cancel() {
    this.port.postMessage({ kind: 'cancel' } satisfies ToWorker<A>);
  }

  /** The worker went (restarted, terminated): every call still waiting rejects with `err`. */
  failAll(err: Error) {
    const all = [...this.pending.values()];
    this.pending.clear();
    for (const p of all) {
      p.onSettled?.();
      if (p.done) continue;
      p.done = true;
      p.reject(err);
    }
  }

  /** Calls sent and not answered yet. */
  get size() {
    return this.pending.size;
  }
}

/** An aborted signal's reason as the channel's error (an AbortError; a string reason is its message). */
function reasonError(s: AbortSignal): WorkerError {
  const r = s.reason as unknown;
  if (r instanceof WorkerError) return r;
  return abortError(typeof r === 'string' ? r : r instanceof Error && r.name !== 'AbortError' ? r.message : 'cancelled');
}
