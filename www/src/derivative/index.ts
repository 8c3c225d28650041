// The derivative view (issue 20: derivatives from the page, on the GPU in a browser): beside the
// simulated image, ∂I/∂p for one parameter p of the crate's (`tangent::Param`: crystal
// rotations, cell, N, mosaic spread, distance, beam centre, detector rotations, wavelength,
// fluence, scale, default F), computed by the crate's tangent kernel in the simulation's worker
// (crate/src/wasm/gradients.rs: the WGSL tangent kernel on WebGPU where the device opens, else
// the CPU's), for the arguments of the image shown and again after each new image. Red where
// the pixel brightens as p grows, blue where it dims, white where it does not move; one zoom
// and pan with the image; the readout gives both values; the derivative downloads as the float
// file the CLI's `-gradfile` writes. A teacher shows which pixels a parameter moves (turn the
// crystal: the spots' leading and trailing edges; change the distance: every spot moves
// outwards); a crystallographer sees what a refinement can see of a parameter.
import { effect } from '@preact/signals-core';
import type { NanoBraggClient } from '../client';
import type { Store } from '../state';
import { ImageView, type Readout } from '../view';
import { escapeCloses, makeBar, openButton, viewTag } from '../panelbar';
import type { GradientParam, TangentInfo } from '../protocol';
import { derivativeFileName, fmtValue, largestMagnitude, paramLabel, symmetricLimit } from './logic';

export interface DerivativeDeps {
  store: Store;
  client: NanoBraggClient;
  /** The simulation's view, its host and the stage that holds it. */
  view: ImageView;
  host: HTMLElement;
  stage: HTMLElement;
  /** The bar of the image's panels (the measured image's): the view's bar goes after it, its
   * button into it. The measured image itself is the store's (`store.measured`). */
  bar: HTMLElement;
  /** The words of the full-resolution plain image shown (null: none, a preview, a realistic
   * image: there is nothing to differentiate). */
  shownArgs: () => string[] | null;
  /** The URL's other keys (`deriv=NAME`: the view open on that parameter, so that a copied link
   * opens it); `urlChanged` rewrites the URL. */
  rest: Record<string, string>;
  urlChanged: () => void;
  notice: (text: string, kind?: 'info' | 'warn') => void;
}

const STYLE = `
.dbar { position: relative; display: flex; flex-wrap: wrap; align-items: center; gap: .3rem .7rem; padding: .3rem 2.4rem .3rem .5rem; font-size: .85rem; border-bottom: 1px solid var(--line, #ccc); }
.dbar[hidden] { display: none; }
.dbar .dtitle { font-weight: 600; }
.dbar select { max-width: 24rem; }
.dbar .dlim { width: 6em; }
.dbar .dkey { display: inline-flex; align-items: center; gap: .3rem; color: var(--muted, #555); }
.dbar .dkey i { display: inline-block; width: 60px; height: 10px; border: 1px solid var(--line, #bbb); background: linear-gradient(90deg, #053061, #4393c3, #f7f7f7, #f4a582, #67001f); }
.dbar .dstatus, .dbar .dread { flex-basis: 100%; margin: 0; font-variant-numeric: tabular-nums; color: var(--muted, #555); }
.dbar .dread { color: inherit; }
.dbar .dstatus[data-kind="error"] { color: #b00020; }
.dbar .dclose { position: absolute; top: .3rem; right: .5rem; }
.stage .dhost { flex: 1; position: relative; min-height: 0; min-width: 0; overflow: hidden; background: var(--canvas-bg); border-left: 2px solid var(--line, #999); }
.dhost[hidden] { display: none; }
`;

export class DerivativeView {
  readonly bar: HTMLElement;
  readonly dview: ImageView;
  readonly dhost: HTMLElement;
  /** The derivative shown (null: none yet) and the words it is of. */
  result: (TangentInfo & { adapter: string }) | null = null;
  resultArgs: string[] | null = null;
  /** A request is in the worker; `again`: the image changed meanwhile (ask once more after). */
  busy = false;
  private again = false;
  private seq = 0;
  private syncing = false;
  private tag: HTMLElement;
  private simTag: HTMLElement;
  private q: <T extends HTMLElement>(sel: string) => T;

  constructor(private d: DerivativeDeps) {
    const bar = (this.bar = makeBar('dbar', 'Derivative image', STYLE,
      `<span class="dtitle">Derivative ∂I/∂</span>` +
      `<label><span class="sr-only">Parameter</span><select class="dparam" aria-label="Parameter of the derivative"></select></label>` +
      `<span class="dkey" title="Blue: the pixel dims as the parameter grows; white: unchanged; red: it brightens">dims <i></i> brightens</span>` +
      `<label title="The colour range ±this value (photons per pixel per the parameter's unit); empty: automatic (the 99th percentile of the pixels that move)">± <input class="dlim" type="text" inputmode="decimal" placeholder="auto" aria-label="Colour range of the derivative"></label>` +
      `<button type="button" class="dsave" disabled title="The derivative as raw little-endian float32, fast-major: the file the CLI's -gradfile writes">Download .bin</button>` +
      `<button type="button" class="dclose" aria-label="Close the derivative view">×</button>` +
      `<p class="dstatus" aria-live="polite"></p><p class="dread" aria-live="off"></p>`));
    bar.hidden = true;
    d.bar.insertAdjacentElement('afterend', bar);
    this.q = <T extends HTMLElement>(sel: string) => bar.querySelector(sel) as T;
    this.q('.dparam').addEventListener('change', () => {
      this.writeUrl();
      void this.request();
    });
    this.q('.dlim').addEventListener('change', () => this.recolour());
    this.q('.dsave').addEventListener('click', () => this.download());
    this.q('.dclose').addEventListener('click', () => this.toggle(false));

    const dhost = (this.dhost = document.createElement('div'));
    dhost.className = 'dhost';
    dhost.hidden = true;
    d.stage.appendChild(dhost);
    this.dview = new ImageView(dhost);
    this.dview.signed = true;
    this.dview.canvas.setAttribute('aria-label', 'Derivative of the detector image. Arrow keys pan, + and - zoom, 0 fits.');
    this.tag = viewTag(dhost, '∂I/∂');
    this.simTag = viewTag(d.host, 'image I');

    // one zoom and pan with the image (chained after the measured view's, which shares it too)
    const prevDraw = d.view.onDraw;
    d.view.onDraw = () => {
      prevDraw?.();
      // presentation mode's large labels, as the image's
      if (this.dview.large !== d.view.large) {
        this.dview.large = d.view.large;
        this.dview.draw();
      }
      this.sync(d.view, this.dview);
    };
    this.dview.onDraw = () => this.sync(this.dview, d.view);
    const prevReadout = d.view.onReadout;
    d.view.onReadout = (r) => {
      prevReadout(r);
      this.readout(r);
    };
    this.dview.onReadout = (r) => {
      prevReadout(r && { ...r, value: this.imageValueAt(r.f, r.s) ?? NaN });
      this.readout(r);
    };
    // a signed image: the diverging map, linear, symmetric about 0 (the range: `recolour`); the
    // rings and the beam centre as the toolbar says for the image
    this.dview.update({ cmap: 'diverging', scaling: 'linear', contrast: 0, min: -1, max: 1 });
    effect(() => {
      const v = d.store.view.value;
      this.dview.update({ rings: v.rings, beamc: v.beamc });
    });

    // the button that opens it, in the measured image's bar (after "Fit to image…")
    const open = openButton('dopen', 'Derivative…', 'Beside the image, its derivative ∂I/∂p with respect to a parameter (crystal rotation, cell, distance, wavelength, …), from the crate\'s tangent kernel (WebGPU where it opens)', () => this.toggle());
    const after = d.bar.querySelector('.fitopen') ?? d.bar.querySelector('.mopen')!;
    after.insertAdjacentElement('afterend', open);
    escapeCloses({ open: () => this.open, close: () => this.toggle(false), parts: () => [this.bar, open], button: () => open });
    window.addEventListener('nanobragg-frame', (e) => {
      const preview = (e as CustomEvent<{ preview?: boolean }>).detail?.preview;
      if (!this.open) return;
      if (preview) this.tag.textContent = `${this.tagText()} · of the image before: updating after the drag`;
      else void this.request();
    });
    void d.client.ready.then((info) => this.setParams(info.gradientParams));
  }

  get open() {
    return !this.bar.hidden;
  }

  /** The parameter chosen (a name of the crate's). */
  get param(): string {
    return this.q<HTMLSelectElement>('.dparam').value;
  }

  set param(name: string) {
    this.q<HTMLSelectElement>('.dparam').value = name;
    this.writeUrl();
    if (this.open) void this.request();
  }

  private writeUrl() {
    if (this.open && this.param) this.d.rest.deriv = this.param;
    else delete this.d.rest.deriv;
    this.d.urlChanged();
  }

  toggle(show = this.bar.hidden) {
    this.bar.hidden = !show;
    this.writeUrl();
    this.dhost.hidden = !show;
    this.tag.hidden = !show;
    this.simTag.hidden = !show || this.d.store.measured.peek() !== null;
    this.d.bar.querySelector('.dopen')?.setAttribute('aria-expanded', String(show));
    window.dispatchEvent(new Event('resize')); // the stage's layout changed
    if (show) {
      if (this.result) this.dview.setViewport(this.d.view.viewport);
      void this.request();
    }
  }

  private setParams(params: GradientParam[]) {
    const sel = this.q<HTMLSelectElement>('.dparam');
    for (const p of params) sel.add(new Option(paramLabel(p.name, p.unit), p.name));
    sel.value = params.some((p) => p.name === 'rot_x') ? 'rot_x' : params[0]?.name ?? '';
    // a link with deriv=NAME opens the view on that parameter (an unknown name: said in the bar)
    const asked = this.d.rest.deriv;
    if (asked === undefined) return;
    const known = params.find((p) => p.name.toLowerCase() === asked.trim().toLowerCase());
    if (known) sel.value = known.name;
    this.toggle(true);
    if (!known) this.d.notice(`Ignored URL parameter: deriv=${asked} is not a parameter of the derivative view (${params.map((p) => p.name).join(', ')}); showing ${sel.value}`, 'warn');
  }

  private sync(from: ImageView, to: ImageView) {
    if (this.syncing || !this.open || !this.result || !this.sameDetector()) return;
    this.syncing = true;
    to.setViewport(from.viewport);
    this.syncing = false;
  }

  private sameDetector(): boolean {
    const img = this.d.view.image;
    const r = this.result;
    return !!img && !!r && img.w * img.scale === r.width && img.h * img.scale === r.height;
  }

  private status(text: string, kind: 'info' | 'error' = 'info') {
    const el = this.q('.dstatus');
    el.textContent = text;
    el.dataset.kind = kind;
  }

  /** Ask the worker for the derivative of the image shown (one request at a time; an image that
   * lands meanwhile is asked for after it). */
  async request() {
    if (!this.open || !this.param) return;
    if (this.busy) {
      this.again = true;
      return;
    }
    const args = this.d.shownArgs();
    if (!args) {
      this.status('The derivative is of the plain simulation\'s full image: waiting for one (a preview, a fit\'s steps and the realistic image have none).');
      return;
    }
    const param = this.param;
    const v = this.d.store.view.peek();
    this.busy = true;
    this.again = false;
    const seq = ++this.seq;
    this.status(`Computing ∂I/∂${param}…`);
    try {
      const r = await this.d.client.renderTangent(args, Object.fromEntries(this.d.store.files.peek()), param, v.backend, v.precision);
      if (seq !== this.seq) return;
      this.result = r;
      this.resultArgs = args;
      this.show(r);
    } catch (e) {
      if (seq !== this.seq) return;
      if ((e as { kind?: string }).kind === 'cancelled' || (e as Error).name === 'AbortError') {
        // a newer image came first (or the worker restarted): asked again after the next full image
        this.status(`∂I/∂${param}: waiting for the image to settle…`);
        this.tag.textContent = `${this.tagText()} · of the image before: updating`;
        return;
      }
      // the last derivative stays, faded, under a tag that says there is none for this one
      this.result = null;
      this.dview.canvas.style.opacity = '0.25';
      this.tag.textContent = `∂I/∂${param}: not available (see above)`;
      this.q<HTMLButtonElement>('.dsave').disabled = true;
      this.status(`∂I/∂${param}: ${(e as Error).message}`, 'error');
    } finally {
      this.busy = false;
      if (this.again || (this.result && this.param !== this.result.param)) void this.request();
    }
  }

  private show(r: TangentInfo & { adapter: string }) {
    const img = this.d.view.image;
    this.dview.canvas.style.opacity = '';
    this.dview.setImage(r.tangent, r.width, r.height, this.d.view.geometry);
    this.recolour();
    if (img && this.sameDetector()) this.dview.setViewport(this.d.view.viewport);
    this.tag.textContent = this.tagText();
    this.q<HTMLButtonElement>('.dsave').disabled = false;
    const where = r.engine === 'gpu' ? `WebGPU${r.adapter ? ` (${r.adapter})` : ''}` : 'the CPU';
    // the worker's few words on a fallback ("No WebGPU in this browser")
    const fell = r.notice ? ` (${r.notice.charAt(0).toLowerCase()}${r.notice.slice(1)})` : '';
    this.status(`Red: the pixel brightens as ${r.param} grows; blue: it dims. Largest |∂I/∂${r.param}| ${fmtValue(largestMagnitude(r.tangent))} photons per ${r.unit}. ` +
      `The crate's tangent kernel on ${where}${fell}, ${Math.round(r.ms)} ms with the image.`);
  }

  private tagText() {
    const r = this.result;
    return r ? `∂I/∂${r.param} (photons per ${r.unit})` : '∂I/∂';
  }

  /** The colour range: the box's ±value, else the automatic one. */
  private recolour() {
    const r = this.result;
    if (!r) return;
    const box = this.q<HTMLInputElement>('.dlim');
    const typed = box.value.trim();
    const n = Number(typed);
    const bad = typed !== '' && !(Number.isFinite(n) && n > 0);
    box.setCustomValidity(bad ? 'a positive number, or empty for automatic' : '');
    box.classList.toggle('bad', bad);
    const lim = typed !== '' && !bad ? n : symmetricLimit(r.tangent);
    box.placeholder = fmtValue(symmetricLimit(r.tangent));
    this.dview.update({ cmap: 'diverging', scaling: 'linear', min: -lim, max: lim });
  }

  private imageValueAt(f: number, s: number): number | null {
    const img = this.d.view.image;
    if (!img) return null;
    const x = Math.floor(f / img.scale), y = Math.floor(s / img.scale);
    if (x < 0 || y < 0 || x >= img.w || y >= img.h) return null;
    return img.data[y * img.w + x];
  }

  /** The derivative at the pointer (either view), with the image's value. */
  private readout(r: Readout | null) {
    const el = this.q('.dread');
    const t = this.result;
    if (!this.open || !t || !r || !this.sameDetector() || r.f < 0 || r.s < 0 || r.f >= t.width || r.s >= t.height) {
      el.textContent = '';
      return;
    }
    const dv = t.tangent[r.s * t.width + r.f];
    const iv = this.imageValueAt(r.f, r.s);
    el.textContent = `pixel (${r.f}, ${r.s})  I ${iv === null ? '—' : fmtValue(iv)} photons  ·  ∂I/∂${t.param} ${fmtValue(dv)} photons per ${t.unit}`;
  }

  private download() {
    const r = this.result;
    if (!r) return;
    const a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob([new Uint8Array(r.tangent.buffer as ArrayBuffer, r.tangent.byteOffset, r.tangent.byteLength)], { type: 'application/octet-stream' }));
    a.download = derivativeFileName('nanobragg_d', r.param);
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
  }
}

export function installDerivative(d: DerivativeDeps): DerivativeView {
  return new DerivativeView(d);
}
