// Messages between the page (client.ts) and the module Worker (worker.ts) that owns the wasm,
// the rayon pool and the WebGPU device. Keep both sides in sync with this file.

export type V3 = [number, number, number];
export type Backend = 'auto' | 'gpu' | 'cpu';
export type Precision = 'f32' | 'f64';

/** Detector and crystal geometry of a prepared plan (SI units: metres), from `wasm.rs`. */
export interface Geometry {
  width: number;
  height: number;
  /** Pixel pitch (m). */
  pixel: number;
  /** Crystal to the outer corner of pixel (0,0) (m). */
  pix0: V3;
  fdet: V3;
  sdet: V3;
  odet: V3;
  /** Beam propagation direction (unit). */
  beam: V3;
  /** Wavelength of the first source (m). */
  lambda: number;
  /** Real-space cell vectors of the first orientation (m). */
  a: V3;
  b: V3;
  c: V3;
  curved: boolean;
  /** Sample to beam spot along the beam (m). */
  distance: number;
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
  | { type: 'cancel' }
  | { type: 'export'; id: number; what: 'int' | 'noise' | 'float' };

export type FromWorker =
  | { type: 'ready'; info: ModuleInfo }
  | { type: 'init-error'; message: string }
  | { type: 'progress'; id: number; value: number }
  | {
      type: 'result';
      id: number;
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
  | { type: 'error'; id: number; message: string; cancelled: boolean }
  | { type: 'exported'; id: number; bytes: Uint8Array | null; message: string };
