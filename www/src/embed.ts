// <nanobragg-view>: an embeddable live diffraction pattern.
//
//   <script type="module" src="/path/to/nanobragg-view.js"></script>
//   <nanobragg-view cell="100 100 100 90 90 90" lambda="6.2" n="5" default_f="100"
//                   distance="100" detpixels="256" cmap="viridis"></nanobragg-view>
//
// Attributes are the app's URL parameter names (case-insensitive) and apply on top of the same
// defaults as the app (state.ts), plus `args` (extra flags), `hkl-src` / `mat-src` /
// `sourcefile-src` / `mask-src` / `img-src` (input files, fetched relative to the page), and the
// view settings `backend`, `precision`, `cmap`, `scaling`, `contrast`, `min`, `max`, `rings`,
// `beamc`, `labels` (hkl of the strongest predicted spots), `theme` (auto | light | dark), and
// `view3d` (the reciprocal-space view beside the image, panel3d.ts; Shift+drag there turns the
// crystal and updates the `misset` attribute), and `derivative` (a parameter of the crate's —
// `rot_x`, `cell_a`, `distance`, `lambda`, … —: the element shows ∂I/∂parameter instead of the
// image, from the crate's tangent kernel, in a diverging map: red where a pixel brightens as the
// parameter grows, blue where it dims; `max` sets the ± range). A bad attribute is reported
// naming the attribute.
// Works without COOP/COEP (single-threaded CPU or WebGPU); uses threads when the page is
// isolated. One worker is shared by all elements on a page; each element supersedes only its
// own renders.
import { effect } from '@preact/signals-core';
import { NanoBraggClient, type SimulateResult } from './client';
import { buildArgs, splitArgs } from './args';
import { PARAMS, fieldFlags } from './params';
import { errorInfo, type TangentInfo } from './protocol';
import { symmetricLimit } from './derivative/logic';
import { ELEMENT_ATTRIBUTES, FILE_KEYS, attrName, createStore, decodeAttributes, type Store } from './state';
import { ImageView } from './view';
import { Teach3D } from './panel3d';
import { followReadout } from './readout';
import { pixelQuery } from './pixelquery';
import type { NanoBraggErrorDetail, NanoBraggRenderDetail, NanoBraggResult, NanoBraggTangent } from '../npm/nanobragg-view';

// The npm package's declarations (www/npm/nanobragg-view.d.ts) are checked against the element:
// its events' details are typed with them below, and what `result` and `tangent` hold must fit
// the published types.
type Fits<A extends B, B> = [A, B];
export type PublishedTypesFit = [Fits<SimulateResult, NanoBraggResult>, Fits<ShownTangent, NanoBraggTangent>];

/** The derivative shown: the crate's `TangentInfo` (its engine one of the two) and the adapter. */
type ShownTangent = TangentInfo & { adapter: string; engine: 'gpu' | 'cpu' };

let shared: NanoBraggClient | null = null;
const client = () => (shared ??= new NanoBraggClient({ workerUrl: new URL('./worker.js', import.meta.url) }));

let seq = 0;

const CSS = `
:host { display: flex; flex-direction: column; position: relative; width: min(100%, 420px); aspect-ratio: 1 / 1.06; min-height: 140px;
  --nb-bg: #d8d8d8; --nb-bar-bg: #f4f5f7; --nb-bar-ink: #222; --nb-err: #b3261e;
  --canvas-bg: var(--nb-bg);
  --panel: #fff; --ink: #1b1f24; --muted: #5b6570; --line: #d5dae0; --button: #eef1f5; --accent: #1f5fbf; --on-accent: #fff; --err: #b3261e;
  background: var(--nb-bg); font: 12px system-ui, sans-serif; color-scheme: light; }
:host([theme=dark]) { --nb-bg: #15181c; --nb-bar-bg: #1f2329; --nb-bar-ink: #e4e7eb; --nb-err: #ff8a80; color-scheme: dark;
  --panel: #1b1e23; --ink: #e4e7eb; --muted: #9aa4af; --line: #30363d; --button: #262b31; --accent: #6ea8ff; --on-accent: #0d1117; --err: #ff8a80; }
@media (prefers-color-scheme: dark) {
  :host(:not([theme=light])) { --nb-bg: #15181c; --nb-bar-bg: #1f2329; --nb-bar-ink: #e4e7eb; --nb-err: #ff8a80; color-scheme: dark;
    --panel: #1b1e23; --ink: #e4e7eb; --muted: #9aa4af; --line: #30363d; --button: #262b31; --accent: #6ea8ff; --on-accent: #0d1117; --err: #ff8a80; }
}
:host([view3d]) { aspect-ratio: 2 / 1.06; width: min(100%, 840px); }
.stage { flex: 1; min-height: 0; display: flex; }
.host { position: relative; flex: 1; min-height: 0; overflow: hidden; }
.nb-canvas { position: absolute; inset: 0; width: 100%; height: 100%; display: block; cursor: crosshair; touch-action: none; }
.bar { flex: none; padding: 3px 6px; background: var(--nb-bar-bg); color: var(--nb-bar-ink); white-space: nowrap; overflow: hidden;
  text-overflow: ellipsis; border-top: 1px solid rgba(128,128,128,.3); font-variant-numeric: tabular-nums; }
.bar.err { color: var(--nb-err); white-space: normal; }
`;

export class NanoBraggView extends HTMLElement {
  static get observedAttributes() {
    return ELEMENT_ATTRIBUTES;
  }
  private view!: ImageView;
  private bar!: HTMLElement;
  private channel = `view-${++seq}`;
  private pending = 0;
  private store: Store = createStore();
  private extraArgs = '';
  private attrErrors: Record<string, string> = {};
  result: SimulateResult | null = null;
  /** With the `derivative` attribute: the derivative shown (the crate's `render_tangent`). */
  tangent: ShownTangent | null = null;
  /** The words of what is shown (the image or its derivative), for the readout's geometry. */
  private shownArgs: string[] | null = null;
  /** The 3D view and the predicted spots (created when `view3d` or `labels` asks for them). */
  teach3d: Teach3D | null = null;

  connectedCallback() {
    if (this.view) return;
    const root = this.attachShadow({ mode: 'open' });
    root.innerHTML = `<style>${CSS}</style><div class="stage"><div class="host" part="canvas"></div></div><div class="bar" part="status" role="status">loading…</div>`;
    this.view = new ImageView(root.querySelector('.host') as HTMLElement);
    this.syncZoom();
    this.bar = root.querySelector('.bar') as HTMLElement;
    // the crate's d, 2θ and hkl at the pixel, for the words of the image shown
    followReadout(this.view, pixelQuery(() => client(), () => this.shownArgs), (r, i) => {
      if (!r) return this.status();
      this.bar.classList.remove('err');
      // d, 2θ and hkl first: a narrow element cuts the line at its end
      const t = this.tangent;
      const px = t ? `∂I/∂${t.param}=${r.value.toPrecision(4)} (${r.f}, ${r.s})` : `I=${r.value.toPrecision(4)} (${r.f}, ${r.s})`;
      const d = i && Number.isFinite(i.d) ? i.d.toFixed(2) : '∞';
      this.bar.textContent = i ? `d=${d} Å 2θ=${i.two_theta.toFixed(2)}° hkl≈(${i.nearest.join(' ')}) ${px}` : px;
    });
    effect(() => {
      void this.store.view.value;
      this.colours();
      this.sync3d();
    });
    this.readAttributes();
    this.schedule();
  }

  attributeChangedCallback(name: string) {
    if (!this.view) return;
    if (name === 'view3d') return this.sync3d();
    if (name === 'zoom') return this.syncZoom();
    this.readAttributes();
    this.schedule();
  }

  /** The view settings: the store's for the image; for a derivative the diverging map, linear,
   * ±(`max`, else the 99th percentile of the moving pixels' |∂I|). */
  private colours() {
    const v = this.store.view.peek();
    const t = this.tangent;
    this.view.signed = t !== null;
    if (!t) {
      this.view.update({ cmap: v.cmap, scaling: v.scaling, contrast: v.contrast, min: v.min, max: v.max, rings: v.rings, beamc: v.beamc });
      return;
    }
    const lim = v.max !== null && v.max > 0 ? v.max : symmetricLimit(t.tangent);
    this.view.update({ cmap: 'diverging', scaling: 'linear', contrast: 0, min: -lim, max: lim, rings: v.rings, beamc: v.beamc });
  }

  /** The wheel scrolls the page unless the image has the focus (a click) or Ctrl/⌘ is held;
   * `zoom="off"` leaves the wheel to the page always (drag and keys still pan and zoom). */
  private syncZoom() {
    this.view.wheel = /^(off|false|0|no)$/i.test(this.getAttribute('zoom') ?? '') ? 'off' : 'focus';
  }

  /** Open or close the 3D view as the `view3d` attribute says; labels and theme. */
  private sync3d() {
    const want3d = this.hasAttribute('view3d') && this.getAttribute('view3d') !== 'false' && this.getAttribute('view3d') !== '0';
    const v = this.store.view.peek();
    if (!this.teach3d && !want3d && !v.labels) return;
    const t = (this.teach3d ??= new Teach3D({
      client: client(), image: this.view, stage: this.shadowRoot!.querySelector('.stage') as HTMLElement, styleRoot: this.shadowRoot!,
      misset: () => this.store.model.peek().misset ?? '',
      phi: () => Number(this.store.model.peek().phi) || 0,
      setMisset: (m, final) => {
        this.turning = !final;
        this.setAttribute('misset', m);
      },
      onOpenChange: (open) => (open ? this.setAttribute('view3d', '') : this.removeAttribute('view3d')),
    }));
    t.setLabels(v.labels);
    t.setTheme(v.theme === 'auto' ? (matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light') : v.theme);
    if (want3d && !t.isOpen) t.open().catch((e) => this.fail(`<nanobragg-view> view3d: ${(e as Error).message}`));
    else if (!want3d && t.isOpen) t.close();
    if (this.lastArgs) t.update(this.lastArgs.args, this.lastArgs.files, this.lastArgs.key);
  }
  private lastArgs: { args: string[]; files: Record<string, Uint8Array>; key: string } | null = null;
  /** A Shift/Alt+drag in the 3D view is turning the crystal (its predictions are live frames). */
  private turning = false;

  private readAttributes() {
    const d = decodeAttributes((n) => this.getAttribute(n));
    this.attrErrors = d.errors;
    this.extraArgs = d.extraArgs;
    this.store.setModel(d.model);
    this.store.view.value = d.view;
  }

  private schedule() {
    cancelAnimationFrame(this.pending);
    this.pending = requestAnimationFrame(() => void this.render());
  }

  private fail(message: string) {
    this.bar.textContent = message;
    this.bar.classList.add('err');
    this.dispatchEvent(new CustomEvent<NanoBraggErrorDetail>('error', { detail: { message } }));
  }

  private async render() {
    const errs = Object.values(this.attrErrors);
    if (errs.length) return this.fail(`<nanobragg-view> ${errs.join('; ')}`);
    const model = { ...this.store.model.value };
    const files: Record<string, Uint8Array> = {};
    try {
      for (const k of FILE_KEYS) {
        const src = this.getAttribute(`${k}-src`);
        if (!src) continue;
        const name = model[k] || src.split('/').pop()!;
        model[k] = name;
        const res = await fetch(new URL(src, document.baseURI));
        if (!res.ok) throw new Error(`attribute ${k}-src="${src}": HTTP ${res.status}`);
        files[name] = new Uint8Array(await res.arrayBuffer());
      }
      const args = [...buildArgs(model).args, ...splitArgs(this.extraArgs)];
      this.lastArgs = { args, files, key: FILE_KEYS.map((k) => this.getAttribute(`${k}-src`) ?? '').join('|') };
      this.teach3d?.update(args, files, this.lastArgs.key, this.turning);
      if (!this.result && !this.tangent) this.bar.textContent = 'rendering…';
      const v = this.store.view.value;
      const param = (this.getAttribute('derivative') ?? '').trim();
      if (param) {
        const render = ++this.tangentSeq;
        const t = (await client().renderTangent(args, files, param, v.backend, v.precision)) as ShownTangent;
        if (render !== this.tangentSeq) return;
        this.tangent = t;
        this.result = null;
        this.shownArgs = args;
        this.view.signed = true;
        this.view.setImage(t.tangent, t.width, t.height, t.geometry);
        this.colours();
        this.status();
        const detail: NanoBraggRenderDetail = { width: t.width, height: t.height, backend: t.engine, notice: t.notice ?? '', preview: false, renderMs: t.ms, derivative: t.param };
        window.dispatchEvent(new CustomEvent('nanobragg-frame', { detail: { ...detail, element: this } }));
        this.dispatchEvent(new CustomEvent<NanoBraggRenderDetail>('render', { detail }));
        return;
      }
      const r = await client().simulate(args, { backend: v.backend, precision: v.precision, files, channel: this.channel });
      this.tangentSeq++;
      this.result = r;
      this.tangent = null;
      this.shownArgs = r.args;
      this.view.signed = false;
      this.view.setImage(r.data, r.width, r.height, r.geometry);
      this.colours();
      this.status();
      const detail: NanoBraggRenderDetail = { width: r.width, height: r.height, backend: r.backend, notice: r.notice, preview: false, renderMs: r.timings.render };
      window.dispatchEvent(new CustomEvent('nanobragg-frame', { detail: { ...detail, element: this } }));
      this.dispatchEvent(new CustomEvent<NanoBraggRenderDetail>('render', { detail: { ...detail, timings: r.timings } }));
    } catch (e) {
      const err = e as Error;
      if (err.name === 'AbortError') return;
      // the crate's error names its flag: say which attribute that is when one set it
      const flag = errorInfo(err).flag;
      const p = flag ? PARAMS.find((q) => fieldFlags(q).includes(flag)) : undefined;
      const attr = p ? attrName(p) : null;
      const m = err.message;
      this.fail(attr && flag && this.hasAttribute(attr) ? `attribute ${attr} (${flag})${m.startsWith(flag) ? m.slice(flag.length) : `: ${m}`}` : m);
    }
  }

  /** Derivative requests made (a newer one, or an image, supersedes an older reply). */
  private tangentSeq = 0;

  private status() {
    const info = client().info;
    const t = this.tangent;
    if (t) {
      this.bar.classList.remove('err');
      this.bar.textContent = `∂I/∂${t.param} (photons per ${t.unit}) · ${t.width}×${t.height} · ${t.engine === 'gpu' ? 'WebGPU' : 'CPU'} · ${t.ms.toFixed(0)} ms`;
      return;
    }
    const r = this.result;
    if (!r) return;
    this.bar.classList.remove('err');
    this.bar.textContent = `${r.width}×${r.height} · ${r.backend === 'gpu' ? `WebGPU` : `CPU ${info?.threads ?? 1} thread${info?.threads === 1 ? '' : 's'}`} · ${r.timings.render.toFixed(0)} ms`;
  }
}

if (!customElements.get('nanobragg-view')) customElements.define('nanobragg-view', NanoBraggView);
