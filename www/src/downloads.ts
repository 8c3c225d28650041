// The Download menu: SMV, SMV with noise, float and PNG of the image shown. A realistic still
// (layers.ts) is saved as the worker holds it (`realistic_export`: its detector's header and
// size, its ADU, the noise the screen shows) and stays on screen; a plain render is first made
// full-size when a preview or another request replaced it in the worker.
//
// For a realistic still the menu says what each file holds (issue 31): with the noise layer on,
// the image already has the detector's noise, so one SMV entry says so (a second "with noise"
// entry saved the same bytes); the SMV is 16-bit, so the entry counts the pixels above 65,535
// it clips; and the detector's own format, a miniCBF of 32-bit counts with the module gaps −1
// (`realistic_export('cbf')`), keeps both the counts and the gaps.
import type { NanoBraggClient } from './client';
import { downloadName } from './files';
import { layersOf } from './layers';
import type { ModelState } from './params';
import type { ImageView } from './view';
import type { Scope } from './panel';
import { escapeCloses } from './panelbar';

export interface DownloadDeps {
  client: NanoBraggClient;
  view: ImageView;
  /** The image shown: whether it is the realistic chain's, the state it shows, its size. */
  shown: () => { realistic: boolean; model: ModelState; width: number; height: number };
  /** Make the worker hold the full image of a plain render. */
  ensureFull: () => Promise<void>;
  error: (message: string) => void;
}

/** The largest value a 16-bit SMV pixel holds. */
const SMV_MAX = 65535;

type Entry = { text: string; detail?: string; hidden?: boolean };

/** What the menu's file entries say for the image shown (`clipped`: its pixels above 65,535). */
export function menuEntries(realistic: boolean, noise: boolean, clipped: number): Record<'int' | 'noise' | 'cbf', Entry> {
  if (!realistic) {
    return { int: { text: 'SMV image' }, noise: { text: 'SMV + Poisson noise' }, cbf: { text: '', hidden: true } };
  }
  const clip = clipped > 0 ? `16-bit: ${clipped.toLocaleString('en-US')} pixel${clipped === 1 ? '' : 's'} above 65,535 clipped` : '16-bit (up to 65,535)';
  return {
    int: { text: noise ? 'SMV image, noise included' : 'SMV image, no noise', detail: clip },
    noise: { text: "SMV + the detector's noise", detail: clip, hidden: noise },
    cbf: { text: 'miniCBF (the detector’s format)', detail: '32-bit counts, module gaps −1' },
  };
}

/** Wires the menu (its listeners registered in `scope`, removed with the panel); returns
 * `save(bytes, name, type)` for the other exports (φ video, frames). */
export function installDownloads(d: DownloadDeps, scope: Scope) {
  const $ = (id: string) => document.getElementById(id)!;
  const details = document.querySelector('.downloads') as HTMLDetailsElement;
  function save(bytes: BlobPart, name: string, type = 'application/octet-stream') {
    details.open = false;
    const a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob([bytes], { type }));
    a.download = name;
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
  }
  /** The entries say what the image shown would be saved as (as the menu opens). */
  function label() {
    const s = d.shown();
    let clipped = 0;
    const img = s.realistic ? d.view.image : null;
    if (img) for (let i = 0; i < img.data.length; i++) if (img.data[i] > SMV_MAX + 0.5) clipped++;
    const entries = menuEntries(s.realistic, s.realistic && layersOf(s.model).noise, clipped);
    for (const [what, e] of Object.entries(entries)) {
      const b = $(`dl-${what}`);
      b.hidden = !!e.hidden;
      b.textContent = e.text;
      if (e.detail) {
        const small = document.createElement('small');
        small.textContent = e.detail;
        b.append(small);
      }
    }
  }
  // labelled on the summary's click, before the menu opens: the `toggle` event comes in a task
  // of its own, after the open menu may have been painted (and read) with the last labels
  scope.add(escapeCloses({ open: () => details.open, close: () => { details.open = false; }, parts: () => [details], button: () => details.querySelector('summary') }));
  scope.on(details.querySelector('summary')!, 'click', () => {
    if (!details.open) label();
  });
  for (const [id, what] of [['dl-int', 'int'], ['dl-noise', 'noise'], ['dl-float', 'float'], ['dl-cbf', 'cbf']] as const) {
    scope.on($(id), 'click', async () => {
      if (!d.shown().realistic) await d.ensureFull();
      const s = d.shown();
      try {
        if (what === 'cbf' && !s.realistic) throw new Error('a miniCBF is saved for a realistic still only');
        save((await d.client.exportImage(what, s.realistic)) as BlobPart, downloadName(s.model, s, what));
      } catch (e) {
        d.error(`download failed: ${(e as Error).message}`);
      }
    });
  }
  scope.on($('dl-png'), 'click', async () => {
    if (!d.shown().realistic) await d.ensureFull();
    const s = d.shown();
    save(await d.view.toPng(), downloadName(s.model, s, 'png'), 'image/png');
  });
  return save;
}
