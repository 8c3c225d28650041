// The Download menu: SMV, SMV with noise, float and PNG of the image shown. A realistic still
// (layers.ts) is saved as the worker holds it (`realistic_export`: its detector's header and
// size, its ADU, the noise the screen shows) and stays on screen; a plain render is first made
// full-size when a preview or another request replaced it in the worker.
import type { NanoBraggClient } from './client';
import { downloadName } from './files';
import type { ModelState } from './params';
import type { ImageView } from './view';

export interface DownloadDeps {
  client: NanoBraggClient;
  view: ImageView;
  /** The image shown: whether it is the realistic chain's, the state it shows, its size. */
  shown: () => { realistic: boolean; model: ModelState; width: number; height: number };
  /** Make the worker hold the full image of a plain render. */
  ensureFull: () => Promise<void>;
  error: (message: string) => void;
}

/** Wires the menu; returns `save(bytes, name, type)` for the other exports (φ video, frames). */
export function installDownloads(d: DownloadDeps) {
  const $ = (id: string) => document.getElementById(id)!;
  function save(bytes: BlobPart, name: string, type = 'application/octet-stream') {
    (document.querySelector('.downloads') as HTMLDetailsElement).open = false;
    const a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob([bytes], { type }));
    a.download = name;
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
  }
  for (const [id, what] of [['dl-int', 'int'], ['dl-noise', 'noise'], ['dl-float', 'float']] as const) {
    $(id).addEventListener('click', async () => {
      if (!d.shown().realistic) await d.ensureFull();
      const s = d.shown();
      try {
        save((await d.client.exportImage(what, s.realistic)) as BlobPart, downloadName(s.model, s, what));
      } catch (e) {
        d.error(`download failed: ${(e as Error).message}`);
      }
    });
  }
  $('dl-png').addEventListener('click', async () => {
    if (!d.shown().realistic) await d.ensureFull();
    const s = d.shown();
    save(await d.view.toPng(), downloadName(s.model, s, 'png'), 'image/png');
  });
  return save;
}
