// The measured-image worker: decodes a dropped SMV, miniCBF or NeXus/HDF5 file with the crate's
// reader (wasm `measured_read`, crate/src/io/measured.rs) off the page's thread, apart from the
// simulation's worker so that opening a large image and rendering do not wait on each other.
// It loads the plain wasm module that sits beside the bundle (www/dist/pkg/).
import { serve, type FromWorker, type Handlers, type ToWorker } from '../channel';
import type { MeasuredApi } from './protocol';

type Wasm = typeof import('../../dist/pkg/nanobragg');

let wasm: Promise<Wasm> | null = null;

function load(): Promise<Wasm> {
  if (!wasm) {
    wasm = (async () => {
      const m = (await import(new URL('./pkg/nanobragg.js', import.meta.url).href)) as Wasm;
      await m.default({ module_or_path: new URL('./pkg/nanobragg_bg.wasm', import.meta.url) });
      return m;
    })();
  }
  return wasm;
}

const port = self as unknown as Worker;
/** Why the module trapped (the page replaces this worker), null: it did not. */
let trapped: string | null = null;

const handlers: Handlers<MeasuredApi> = {
  predict: async ({ args, files }) => {
    const w = await load();
    w.clear_files();
    for (const [n, b] of Object.entries(files)) w.set_file(n, b);
    w.prepare(args);
    return w.predict(undefined, true, true);
  },
  read: async ({ name, bytes, others }, ctx) => {
    const t0 = performance.now();
    const w = await load();
    const t1 = performance.now();
    try {
      const info = w.measured_read(name, bytes, others.map((o) => o.name), others.map((o) => o.bytes));
      const ms = { load: t1 - t0, decode: performance.now() - t1 };
      ctx.transfer(...(info.mask ? [info.pixels.buffer, info.mask.buffer] : [info.pixels.buffer]));
      return { info, ms };
    } catch (e) {
      if (!(e instanceof WebAssembly.RuntimeError)) throw e;
      // a trap: a panic (its message kept by the crate's hook) or an allocation the module could
      // not make. The module is spent (half-updated state, memory it never returns): the page
      // replaces this worker.
      let why = '';
      try { why = w.take_panic().replace(/^nanobragg panicked: /, ''); } catch { /* spent */ }
      trapped = `could not read ${name}: ${why || `the reader ran out of memory (${e.message}): the file declares more than this page can hold`}`;
      throw new Error(trapped);
    }
  },
};

const handle = serve<MeasuredApi>(port, handlers, {
  after: () => {
    if (trapped === null) return;
    port.postMessage({ kind: 'trapped', message: trapped } satisfies FromWorker);
    trapped = null;
  },
});
self.onmessage = (ev: MessageEvent<ToWorker<MeasuredApi>>) => handle(ev.data);
