// Messages between the page and the measured-image worker (worker.ts).
import type { MeasuredInfo } from '../../dist/pkg/nanobragg';

export type { MeasuredInfo } from '../../dist/pkg/nanobragg';

export interface MeasuredRequest {
  id: number;
  name: string;
  bytes: Uint8Array;
  /** Files given with it (an EIGER master's data files). */
  others: { name: string; bytes: Uint8Array }[];
}

export type MeasuredReply =
  | { id: number; info: MeasuredInfo; ms: { load: number; decode: number }; error?: undefined }
  | { id: number; error: { message: string; file: string | null }; info?: undefined };
