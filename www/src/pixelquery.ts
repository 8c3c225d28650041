// The cursor readout's question to the crate: d, 2θ and hkl at a pixel of the image shown
// (`NanoBraggClient.pixelGeometry` → wasm `pixel_geometry` → `predict::pixel_geometry`). One
// query in flight; while it runs only the newest waits (an older waiting one resolves null), so
// a moving pointer never queues up work in the worker.
import type { NanoBraggClient } from './client';
import type { PixelGeometry } from './protocol';

export type PixelQuery = (f: number, s: number) => Promise<PixelGeometry | null>;

/** `words()`: the crystal and detector of the image shown at full resolution (null: none yet). */
export function pixelQuery(client: () => NanoBraggClient | null, words: () => string[] | null): PixelQuery {
  let running = false;
  let waiting: { f: number; s: number; resolve: (g: PixelGeometry | null) => void } | null = null;
  const run = async (f: number, s: number): Promise<PixelGeometry | null> => {
    const c = client(), w = words();
    if (!c || !w) return null;
    try {
      return (await c.pixelGeometry(w, [[f, s]]))[0] ?? null;
    } catch {
      return null; // settings the crate refuses: the readout shows the value only
    }
  };
  const next = () => {
    const job = waiting;
    waiting = null;
    if (!job) return;
    running = true;
    void run(job.f, job.s).then((g) => {
      running = false;
      job.resolve(g);
      next();
    });
  };
  return (f, s) => new Promise((resolve) => {
    waiting?.resolve(null);
    waiting = { f, s, resolve };
    if (!running) next();
  });
}
