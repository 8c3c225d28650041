// The app page's frame, which every panel gets in its context (panel.ts): the URL (decoded at
// the start, written as the state changes: at most a few times a second, as browsers throttle
// history updates), the chrome (theme, presentation, notices and the error line:
// pagechrome.ts), the status line, the crystal the image shows (its words, with an atomic
// model's cell once the realistic chain has read it) and the few services one panel offers the
// others (the bar of the image's panels, the image's levels, a full image in the worker, saving
// a file). `window.nanobragg` is the scripting / test API the panels fill in.
import { effect } from '@preact/signals-core';
import type { NanoBraggClient, Prediction, SimulateOptions, SimulateResult } from './client';
import { installPageChrome, type PageChrome } from './pagechrome';
import { encodeUrl, isCurrent, type Decoded, type ModelState, type Store } from './state';
import type { ImageView } from './view';
import { isLayered, predictWords } from './layers';
import type { Teach3D } from './panel3d';
import type { Teach } from './teach';
import type { MeasuredCompare } from './measured';
import type { FitPanel } from './fit';
import type { DerivativeView } from './derivative';
import type { PixelQuery } from './pixelquery';

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;

export interface Page extends PageChrome {
  /** The URL's other keys (embed=1, present=1, view3d=1, deriv=…), kept as they are. */
  rest: Record<string, string>;
  embed: boolean;
  /** URL values that could not be read. */
  urlErrors: string[];
  /** Write the URL now; returns it. */
  writeUrl(): string;
  /** The status line under the image. */
  progress: HTMLProgressElement;
  timing: HTMLElement;
  /** Cells of the atomic models the realistic chain has read, by model name. */
  modelCells: Map<string, number[]>;
  /** The words the 3D view, the labels and the readout predict from: the shown crystal's (with an
   * atomic model, its cell once the chain has read it). */
  words(): string[];
  /** The image shown is of the current settings (state.ts `isCurrent`). */
  showsCurrent(): boolean;
  /** The size of the last full-resolution image (previews are sized from it). */
  fullSize: { w: number; h: number; pixel: number };
  // ---- services one panel offers the others (set when that panel mounts) ----
  /** The bar under the toolbar where the image's panels put their buttons (the measured panel's). */
  bar: HTMLElement | null;
  /** Show the store's input errors, then the simulator's (by field key); else its warnings (form). */
  showFieldErrors(simErrors?: Record<string, string>, warnings?: Record<string, string>): void;
  /** The automatic levels as the level boxes' placeholders, after each new image (viewcontrols). */
  showLevels(): void;
  /** Make the worker hold the full image of the current settings (render panel). */
  ensureFull(): Promise<void>;
  /** Save bytes as a file (downloads). */
  save(bytes: BlobPart, name: string, type?: string): void;
  api: Window['nanobragg'];
}

declare global {
  interface Window {
    nanobragg: {
      simulate: (args: string | string[], opts?: SimulateOptions) => Promise<SimulateResult>;
      predict: (args: string | string[], opts?: { files?: SimulateOptions['files']; maxExcitationError?: number }) => Promise<Prediction>;
      ready: Promise<unknown>;
      client: NanoBraggClient;
      lastRender: () => { result: SimulateResult | null; preview: boolean; count: number };
      state: () => ModelState;
      view: ImageView;
      /** The 3D view and the predicted spots on the image (panel3d.ts). */
      teach3d: Teach3D;
      /** Teaching controls: the φ player, taking over a random misset (teach/index.ts). */
      teach?: Teach;
      /** The measured image beside and over the simulation (measured/index.ts). */
      measured?: MeasuredCompare;
      /** "Fit to image" (fit/index.ts). */
      fit?: FitPanel;
      /** The derivative image ∂I/∂p beside the image (derivative/index.ts). */
      derivative?: DerivativeView;
      /** The crate's geometry (d, 2θ, hkl, lab position) at continuous full-resolution pixel
       * coordinates of the image shown (pixel centres at i + 0.5): what the readout shows. */
      pixelGeometry?: PixelQuery;
    };
  }
}

export function createPage(store: Store, client: NanoBraggClient, view: ImageView, initial: Decoded): Page {
  const rest = initial.rest;
  const embed = rest.embed === '1';
  document.body.classList.toggle('embed', embed);

  let urlTimer = 0;
  function writeUrl() {
    clearTimeout(urlTimer);
    urlTimer = 0;
    const q = encodeUrl(store.model.peek(), store.view.peek(), rest);
    history.replaceState(null, '', `${location.pathname}?${q}`);
    ($('open-full') as HTMLAnchorElement).href = `${location.pathname}?${encodeUrl(store.model.peek(), store.view.peek(), {})}`;
    return location.href;
  }
  effect(() => {
    void store.model.value;
    void store.view.value;
    if (!urlTimer) urlTimer = window.setTimeout(writeUrl, 200);
  });
  writeUrl();

  const chrome = installPageChrome({ store, view, rest, embed, copyUrl: writeUrl });
  if (rest.present === '1') chrome.setPresent(true);

  const modelCells = new Map<string, number[]>();
  const page: Page = {
    ...chrome,
    rest, embed,
    urlErrors: Object.values(initial.errors),
    writeUrl,
    progress: $<HTMLProgressElement>('progress'),
    timing: $('timing'),
    modelCells,
    words() {
      const m = store.model.peek();
      const args = store.args.peek().args;
      if (!isLayered(m)) return args;
      return predictWords(args, modelCells.get((m.pdb ?? '').trim()) ?? null);
    },
    showsCurrent: () => isCurrent(store.shown.peek(), store.args.peek().args, store.model.peek()),
    fullSize: { w: 0, h: 0, pixel: 0 },
    bar: null,
    showFieldErrors: () => {},
    showLevels: () => {},
    ensureFull: async () => {},
    save: () => {},
    api: null as unknown as Window['nanobragg'],
  };
  page.api = window.nanobragg = {
    simulate: (args, opts = {}) => client.simulate(args, { channel: 'api', ...opts }),
    predict: (args, opts = {}) => client.predict(args, opts),
    ready: client.ready,
    client,
    lastRender: () => ({ result: null, preview: false, count: 0 }), // the render panel's
    state: () => ({ ...store.model.value }),
    view,
    teach3d: null as unknown as Teach3D, // the 3D panel's
  };
  return page;
}
