// Reflection prediction for the page's current arguments, asked of the worker (the crate's
// `predict`, as typed-array columns): at most one request in flight, and of the requests made
// meanwhile only the latest is sent when it returns (latest wins). Listeners receive the
// reciprocal-space view's input (recip/adapter.ts `fromPrediction`). Used by the 3D panel
// (panel3d.ts) and the hkl labels on the image (spots.ts).
import type { NanoBraggClient } from './client';
import { fromPrediction, type CratePrediction } from './recip/adapter';
import type { RecipData, V3 } from './recip/types';

export interface Predicted {
  data: RecipData;
  /** The arguments it was predicted for. */
  args: string[];
  /** Round trip (ms): worker, crate and the columns' transfer. */
  ms: number;
  /** Only the points near the sphere were asked for (a live frame of a large lattice). */
  nearOnly: boolean;
}

interface Request {
  args: string[];
  maxExcitationError?: number;
  files: Record<string, Uint8Array>;
  key: string;
}

export class PredictionFeed {
  current: Predicted | null = null;
  /** The message of the last failed prediction ('' after a success). */
  error = '';
  /** Requests sent to the worker, and requests made (for tests: coalescing). */
  sent = 0;
  requested = 0;
  private inFlight: Request | null = null;
  private waiting: Request | null = null;
  private doneKey = '';
  private listeners = new Set<(p: Predicted | null, error: string) => void>();

  /** `position`: the page's pixel -> lab mapping, so that the 3D view draws a spot exactly where
   * the image shows it. */
  constructor(private client: NanoBraggClient, private position?: (f: number, s: number) => V3, private onImage = false) {}

  onChange(cb: (p: Predicted | null, error: string) => void): () => void {
    this.listeners.add(cb);
    return () => this.listeners.delete(cb);
  }

  get busy() {
    return this.inFlight !== null;
  }

  /** Ask for the prediction of `args`; `filesKey` changes when the input files change;
   * `maxExcitationError` (1/Å) lists only the points that near the Ewald sphere (fast). */
  request(args: string[], files: Record<string, Uint8Array>, filesKey = '', maxExcitationError?: number) {
    const key = `${args.join('\u0000')}\u0001${filesKey}\u0001${maxExcitationError ?? ''}`;
    this.requested++;
    if (key === (this.waiting ?? this.inFlight)?.key || (!this.waiting && !this.inFlight && key === this.doneKey)) return;
    this.waiting = { args: [...args], files, key, maxExcitationError };
    void this.pump();
  }

  /** Forget the result (the next request is sent even for the same arguments). */
  reset() {
    this.doneKey = '';
    this.current = null;
  }

  private async pump() {
    if (this.inFlight || !this.waiting) return;
    const req = (this.inFlight = this.waiting);
    this.waiting = null;
    this.sent++;
    const t0 = performance.now();
    let result: Predicted | null = null;
    let error = '';
    try {
      const p = (await this.client.predict(req.args, { files: req.files, columns: true, maxExcitationError: req.maxExcitationError, onImage: this.onImage })) as unknown as CratePrediction;
      result = { data: fromPrediction(p, this.position), args: req.args, ms: performance.now() - t0, nearOnly: req.maxExcitationError !== undefined };
    } catch (e) {
      const err = e as Error;
      error = err.name === 'AbortError' ? '' : err.message;
      if (err.name === 'AbortError' && !this.waiting) this.waiting = req; // the worker restarted: ask again
    }
    this.inFlight = null;
    if (result || error) {
      this.doneKey = req.key;
      if (result) this.current = result; // after an error the last good prediction stays
      this.error = error;
      // a newer request is waiting: show this one anyway (a drag shows intermediate frames)
      for (const cb of this.listeners) cb(result, error);
    }
    void this.pump();
  }
}
