// The values the page and the module Worker (worker.ts: the wasm, the rayon pool and the WebGPU
// device) exchange: the crate's structured values, the module's info, and (from channel.ts, the
// one table of requests and answers) the request types the panels build.

// The structured values the crate returns are typed by wasm-bindgen's generated declarations
// (crate/src/wasm/mod.rs declares them; the build writes them to dist/pkg/nanobragg.d.ts).
export type { Geometry, HklSummary, PixelGeometry, PrepareInfo, V3 } from '../dist/pkg/nanobragg';
import { errorData, type WorkerErrorData } from './channel';
export type { Backend, Precision } from './args';

// The requests, answers and the one error type are the channel's table (channel.ts): the types
// the panels use are re-exported here.
export type {
  FitRequest, RealisticCompose, RealisticRequest, RealisticResult, RenderAnswer, SpotsRequest, TangentRequest, WorkerErrorData,
} from './channel';

/** The place of a crate error (`WorkerError`'s fields; all absent for errors that are not the crate's). */
export type CrateErrorInfo = Omit<WorkerErrorData, 'message'>;

/** The structure of an error thrown by the wasm module or rejected by the client. */
export function errorInfo(e: unknown): CrateErrorInfo {
  const { message: _m, ...info } = errorData(e);
  return info;
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

// ---- derivative images (www/src/derivative/, crate/src/wasm/gradients.rs) ----------------------
export type { GradientParam, MeasuredInfo, TangentInfo } from '../dist/pkg/nanobragg';
import type { GradientParam } from '../dist/pkg/nanobragg';

// ---- the fit to an image (www/src/fit/, crate/src/wasm/fit.rs) --------------------------------
export type { Fitted, FitInfo, FitStepInfo, Spot } from '../dist/pkg/nanobragg';
// ---- the realistic-image chain (www/src/realistic.ts, www/src/realistic-worker.ts) ----------
export type { DetectorChoice, DetectorEffects, ModelInfo, SfInfo } from '../dist/pkg/nanobragg';
import type { DetectorChoice } from '../dist/pkg/nanobragg';

export type RealisticPhase = 'model' | 'structure factors' | 'spots' | 'background' | 'detector';
export interface RealisticLayers { spots: boolean; background: boolean; noise: boolean }


