// The measured-image worker's table (worker.ts), on the one typed channel (../channel.ts):
// reading a measured file and predicting what is on it; errors are the channel's `WorkerError`.
import type { MeasuredInfo } from '../../dist/pkg/nanobragg';
import type { Method } from '../channel';

export type { MeasuredInfo } from '../../dist/pkg/nanobragg';

export type MeasuredApi = {
  /** Decode a measured image (`others`: files given with it, an EIGER master's data files). */
  read: Method<{ name: string; bytes: Uint8Array; others: { name: string; bytes: Uint8Array }[] }, { info: MeasuredInfo; ms: { load: number; decode: number } }>;
  /** The crate's prediction of what is on the image for `args` (columns), in this worker: it does
   * not wait behind a long render in the simulation's worker. */
  predict: Method<{ args: string[]; files: Record<string, Uint8Array> }, unknown>;
};
