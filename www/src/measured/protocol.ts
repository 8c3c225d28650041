// Messages between the page and the measured-image worker (worker.ts).
import type { MeasuredInfo } from '../../dist/pkg/nanobragg';

export type { MeasuredInfo } from '../../dist/pkg/nanobragg';

export interface MeasuredRequest {
  type: 'read';
  id: number;
  name: string;
  bytes: Uint8Array;
  /** Files given with it (an EIGER master's data files). */
  others: { name: string; bytes: Uint8Array }[];
}

/** The crate's prediction of what is on the image for `args` (columns), in this worker: it does
 * not wait behind a long render in the simulation's worker. */
export interface PredictRequest {
  type: 'predict';
  id: number;
  args: string[];
  files: Record<string, Uint8Array>;
}

export type MeasuredReply =
  | { id: number; info: MeasuredInfo; ms: { load: number; decode: number }; error?: undefined; prediction?: undefined }
  | { id: number; prediction: unknown; error?: undefined; info?: undefined; ms?: undefined }
  /** `fatal`: the worker's module trapped (a panic or a failed allocation): it is replaced. */
  | { id: number; error: { message: string; file: string | null }; fatal?: boolean; info?: undefined; prediction?: undefined; ms?: undefined };
