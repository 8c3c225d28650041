// Messages between the page (client.ts) and the module Worker (worker.ts) that owns the wasm,
// the rayon pool and the WebGPU device. Keep both sides in sync with this file.

// The structured values the crate returns are typed by wasm-bindgen's generated declarations
// (crate/src/wasm/mod.rs declares them; the build writes them to dist/pkg/nanobragg.d.ts).
export type { Geometry, HklSummary, PixelGeometry, PrepareInfo, V3 } from '../dist/pkg/nanobragg';
import type { Geometry, HklSummary, PixelGeometry } from '../dist/pkg/nanobragg';
import type { Backend, Precision } from './args';
export type { Backend, Precision } from './args';

/** The crate's structured error (`crate::error::Error`'s serde form, thrown by the wasm module
 * as a JS Error with these properties; crate/src/wasm/mod.rs `IntoJsErr`): `kind` is the crate's
 * `ErrorKind` ("usage", "input", "cancelled", …), the rest where it points (null when it points
 * nowhere). All absent for errors that are not the crate's. */
export interface CrateErrorInfo {
  kind?: string;
  flag?: string | null;
  file?: string | null;
  line?: number | null;
  key?: string | null;
}

/** The structure of an error thrown by the wasm module (or carried by a page-side Error). */
export function errorInfo(e: unknown): CrateErrorInfo {
  const o = (e ?? {}) as Record<string, unknown>;
  const str = (v: unknown) => (typeof v === 'string' ? v : null);
  if (typeof o.kind !== 'string') return {};
  return { kind: o.kind, flag: str(o.flag), file: str(o.file), line: typeof o.line === 'number' ? o.line : null, key: str(o.key) };
}

/** A page-side Error with the crate's structure (what the client rejects with). */
export function crateError(message: string, info: CrateErrorInfo | undefined): Error {
  return Object.assign(new Error(message), info ?? {});
}

export interface Timings {
  /** Parse + resolve (ms). */
  prepare: number;
  /** Kernel (ms). */
  render: number;
  /** Whole round trip seen by the page (ms), filled in by the client. */
  total: number;
}

export interface ModuleInfo {
  kind: 'parallel' | 'plain';
  threads: number;
  buildInfo: string;
  /** Shared linear memory (threaded build only): the page polls progress and raises cancel. */
  memory: WebAssembly.Memory | null;
  cancelPtr: number;
  progressPtr: number;
  /** Why the threaded module was not used (empty when it was). */
  parallelNote: string;
  /** Module load + thread pool start (ms). */
  initMs: number;
  /** The crate's detector presets with the effects of their kind (`detector_presets`). */
  detectors: DetectorChoice[];
  /** The parameters derivative images can be taken by, with their units (`gradient_params`). */
  gradientParams: GradientParam[];
}

export type ToWorker =
  | { type: 'init'; preferParallel: boolean; threads: number }
  | {
      type: 'render';
      id: number;
      args: string[];
      /** Input files by name; null = unchanged since the previous request. */
      files: Record<string, Uint8Array> | null;
      backend: Backend;
      precision: Precision;
    }
  | {
      type: 'predict';
      id: number;
      args: string[];
      files: Record<string, Uint8Array> | null;
      maxExcitationError: number | null;
      /** Reflections as typed-array columns (`Prediction::columns`) instead of records. */
      columns?: boolean;
      /** Only what is on the image (the crate's `PredictOptions::on_image`). */
      onImage?: boolean;
    }
  /** The detector's geometry at points (`pixel_geometry`): the crystal and detector of `args`
   * with the files the worker holds; `points` = [f0, s0, f1, s1, …] (pixel centres at i + 0.5). */
  | { type: 'pixel-geometry'; id: number; args: string[]; points: number[] }
  | { type: 'cancel' }
  /** `realistic`: the realistic chain's image shown (`realistic_export`), else the last render's. */
  | { type: 'export'; id: number; what: 'int' | 'noise' | 'float' | 'cbf'; realistic?: boolean }
  | RealisticRequest
  | RealisticCompose
  | FitRequest
  | { type: 'fitted-values'; id: number; args: string[]; files: Record<string, Uint8Array> | null; params: string; values: number[] }
  | SpotsRequest
  | TangentRequest;

export type FromWorker =
  | { type: 'ready'; info: ModuleInfo }
  | { type: 'init-error'; message: string }
  /** The module trapped (a panic or a failed allocation) answering the request before: it is
   * spent, and the page starts a fresh worker. */
  | { type: 'trapped' }
  | { type: 'progress'; id: number; value: number }
  /** Sent before a render expected to take long (from the plan's work and measured speed). */
  | { type: 'estimate'; id: number; ms: number; backend: 'gpu' | 'cpu' }
  | {
      type: 'result';
      id: number;
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
  | { type: 'error'; id: number; message: string; cancelled: boolean; error?: CrateErrorInfo }
  | { type: 'exported'; id: number; bytes: Uint8Array | null; message: string }
  | { type: 'predicted'; id: number; prediction: unknown; message: string; error?: CrateErrorInfo }
  | { type: 'pixel-geometry'; id: number; points: PixelGeometry[] | null; message: string; error?: CrateErrorInfo }
  | { type: 'realistic-phase'; id: number; phase: RealisticPhase; sfCached: boolean }
  | RealisticResult
  | { type: 'realistic-error'; id: number; message: string; cancelled: boolean; error?: CrateErrorInfo }
  | { type: 'fit-step'; id: number; step: FitStepInfo }
  | { type: 'fit-result'; id: number; result: FitInfo }
  | { type: 'fit-error'; id: number; message: string; cancelled: boolean; error?: CrateErrorInfo }
  | { type: 'fitted-values'; id: number; fitted: Fitted | null; message: string; error?: CrateErrorInfo }
  | { type: 'spots'; id: number; spots: Spot[] | null; message: string; error?: CrateErrorInfo }
  | { type: 'tangent'; id: number; result: TangentInfo | null; adapter: string; message: string; error?: CrateErrorInfo };

// ---- derivative images (www/src/derivative/, crate/src/wasm/gradients.rs) ----------------------
export type { GradientParam, TangentInfo } from '../dist/pkg/nanobragg';
import type { GradientParam, TangentInfo } from '../dist/pkg/nanobragg';

/** The image of `args` and its derivative with respect to `param` (the crate's
 * `render_tangent`), where `backend` and `precision` put it (the one backend policy). */
export interface TangentRequest {
  type: 'tangent';
  id: number;
  args: string[];
  files: Record<string, Uint8Array> | null;
  param: string;
  backend: Backend;
  precision: Precision;
}

// ---- the fit to an image (www/src/fit/, crate/src/wasm/fit.rs) --------------------------------
export type { Fitted, FitInfo, FitStepInfo, Spot } from '../dist/pkg/nanobragg';
import type { Fitted, FitInfo, FitStepInfo, Spot } from '../dist/pkg/nanobragg';

/** The spots of `image` as the fit finds its target's (the crate's `find_spots`: the detector of
 * `args`, the `background` model and units of a `FitRequest`). */
export interface SpotsRequest {
  type: 'find-spots';
  id: number;
  args: string[];
  files: Record<string, Uint8Array> | null;
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
  type: 'fit';
  id: number;
  args: string[];
  files: Record<string, Uint8Array> | null;
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

// ---- the realistic-image chain (www/src/realistic.ts, www/src/realistic-worker.ts) ----------
export type { DetectorChoice, DetectorEffects, ModelInfo, SfInfo } from '../dist/pkg/nanobragg';
import type { DetectorChoice, DetectorEffects, ModelInfo, SfInfo } from '../dist/pkg/nanobragg';

export type RealisticPhase = 'model' | 'structure factors' | 'spots' | 'background' | 'detector';
export interface RealisticLayers { spots: boolean; background: boolean; noise: boolean }

/** Model → structure factors (cached per model and resolution) → spots → background → detector. */
export interface RealisticRequest {
  type: 'realistic';
  id: number;
  /** The atomic model (its cell and structure factors), or null: the words' own (-default_F, -hkl). */
  model: { name: string; bytes: Uint8Array } | null;
  /** Input files the words name (HKL, matrix, …), as for a render. */
  files: Record<string, Uint8Array> | null;
  /** nanoBragg words of the spots (detector, beam, crystal; the cell comes from the model). */
  args: string[];
  /** nonBragg words per material, separated by '--'. */
  materials: string[];
  backend: Backend;
  precision: Precision;
  layers: RealisticLayers;
  effects: DetectorEffects;
}
/** Only the layers or the detector effects changed: compose again from the kept layers. */
export interface RealisticCompose { type: 'realistic-compose'; id: number; layers: RealisticLayers; effects: DetectorEffects }

export interface RealisticResult {
  type: 'realistic-result';
  id: number;
  width: number;
  height: number;
  /** Detector counts (ADU) of the chosen layers. */
  data: Float32Array;
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
