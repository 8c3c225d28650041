// The measured-image worker: decodes a dropped SMV, miniCBF or NeXus/HDF5 file with the crate's
// reader (wasm `measured_read`, crate/src/io/measured.rs) off the page's thread, apart from the
// simulation's worker so that opening a large image and rendering do not wait on each other.
// It loads the plain wasm module that sits beside the bundle (www/dist/pkg/).
import type { MeasuredReply, MeasuredRequest, PredictRequest } from './protocol';

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

const post = (msg: MeasuredReply, transfer: Transferable[] = []) => (self as unknown as Worker).postMessage(msg, transfer);

self.onmessage = async (ev: MessageEvent<MeasuredRequest | PredictRequest>) => {
  if (ev.data.type === 'predict') {
    const { id, args, files } = ev.data;
    try {
      const w = await load();
      w.clear_files();
      for (const [n, b] of Object.entries(files)) w.set_file(n, b);
      w.prepare(args);
      post({ id, prediction: w.predict(undefined, true, true) });
    } catch (e) {
      post({ id, error: { message: (e as Error)?.message ?? String(e), file: null } });
    }
    return;
  }
  const { id, name, bytes, others } = ev.data;
  const t0 = performance.now();
  try {
    const w = await load();
    const t1 = performance.now();
    const info = w.measured_read(name, bytes, others.map((o) => o.name), others.map((o) => o.bytes));
    const ms = { load: t1 - t0, decode: performance.now() - t1 };
    post({ id, info, ms }, info.mask ? [info.pixels.buffer, info.mask.buffer] : [info.pixels.buffer]);
  } catch (e) {
    const err = e as Error & { file?: string | null };
    if (!(e instanceof WebAssembly.RuntimeError)) {
      post({ id, error: { message: err?.message ?? String(e), file: err?.file ?? null } });
      return;
    }
    // a trap: a panic (its message kept by the crate's hook) or an allocation the module could
    // not make. The module is spent (half-updated state, memory it never returns): the page
    // replaces this worker.
    let why = '';
    try { why = (await load()).take_panic().replace(/^nanobragg panicked: /, ''); } catch { /* spent */ }
    const message = `could not read ${name}: ${why || `the reader ran out of memory (${err.message}): the file declares more than this page can hold`}`;
    post({ id, error: { message, file: name }, fatal: true });
  }
};
