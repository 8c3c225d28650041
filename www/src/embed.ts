// <nanobragg-view>: an embeddable live diffraction pattern.
//
//   <script type="module" src="/path/to/nanobragg-view.js"></script>
//   <nanobragg-view cell="100 100 100 90 90 90" lambda="6.2" n="5" default_f="100"
//                   distance="100" detpixels="256" cmap="viridis"></nanobragg-view>
//
// Attributes are the app's URL parameter names (case-insensitive), plus `args` (extra flags),
// `hkl-src` / `mat-src` / `sourcefile-src` / `mask-src` / `img-src` (input files, fetched relative to the page),
// `backend`, `precision`, `cmap`, `scaling`, `contrast`, `rings`, `beamc`. Works without
// COOP/COEP (single-threaded CPU or WebGPU); uses threads when the page is isolated.
// One worker is shared by all elements on a page; each element supersedes only its own renders.
import { NanoBraggClient, splitArgs, type SimulateResult } from './client';
import { PARAMS, argsFromState, type State } from './params';
import { ImageView, type ColourMap, type Scaling } from './view';
import type { Backend, Precision } from './protocol';

let shared: NanoBraggClient | null = null;
const client = () => (shared ??= new NanoBraggClient({ workerUrl: new URL('./worker.js', import.meta.url) }));

const FILE_KEYS = ['hkl', 'mat', 'sourcefile', 'mask', 'img'];
let seq = 0;

const CSS = `
:host { display: block; position: relative; width: 100%; aspect-ratio: 1; min-height: 120px; background: #d8d8d8; font: 12px system-ui, sans-serif; }
.host { position: absolute; inset: 0; }
.nb-canvas { position: absolute; inset: 0; width: 100%; height: 100%; display: block; cursor: crosshair; touch-action: none; }
.bar { position: absolute; left: 0; right: 0; bottom: 0; padding: 2px 6px; background: rgba(255,255,255,.8); color: #222; pointer-events: none; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.bar.err { color: #b3261e; }
`;

export class NanoBraggView extends HTMLElement {
  static get observedAttributes() {
    return [...PARAMS.map((p) => p.key.toLowerCase()), 'args', 'backend', 'precision', 'cmap', 'scaling', 'contrast', 'rings', 'beamc',
      ...FILE_KEYS.map((k) => `${k}-src`)];
  }
  private view!: ImageView;
  private bar!: HTMLElement;
  private channel = `view-${++seq}`;
  private pending = 0;
  result: SimulateResult | null = null;

  connectedCallback() {
    if (this.view) return;
    const root = this.attachShadow({ mode: 'open' });
    root.innerHTML = `<style>${CSS}</style><div class="host" part="canvas"></div><div class="bar" part="status" role="status">loading…</div>`;
    this.view = new ImageView(root.querySelector('.host') as HTMLElement);
    this.bar = root.querySelector('.bar') as HTMLElement;
    this.view.onReadout = (r) => {
      if (!r) return this.status();
      const i = r.info;
      this.bar.textContent = `(${r.f}, ${r.s}) I=${r.value.toPrecision(4)}` + (i ? ` d=${i.d.toFixed(2)} Å 2θ=${i.twoTheta.toFixed(2)}° hkl≈(${i.nearest.join(' ')})` : '');
    };
    this.schedule();
  }

  attributeChangedCallback() {
    if (this.view) this.schedule();
  }

  private schedule() {
    cancelAnimationFrame(this.pending);
    this.pending = requestAnimationFrame(() => void this.render());
  }

  /** The element's parameters as a state (attribute names are case-insensitive). */
  private state(): State {
    const s: State = {};
    for (const p of PARAMS) {
      const v = this.getAttribute(p.key.toLowerCase());
      if (v !== null) s[p.key] = p.kind === 'bool' && v === '' ? '1' : v;
    }
    return s;
  }

  private async render() {
    const s = this.state();
    const files: Record<string, Uint8Array> = {};
    try {
      for (const k of FILE_KEYS) {
        const src = this.getAttribute(`${k}-src`);
        if (!src) continue;
        const name = s[k] || src.split('/').pop()!;
        s[k] = name;
        const res = await fetch(new URL(src, document.baseURI));
        if (!res.ok) throw new Error(`${k}-src ${src}: HTTP ${res.status}`);
        files[name] = new Uint8Array(await res.arrayBuffer());
      }
      const args = [...argsFromState(s), ...splitArgs(this.getAttribute('args') ?? '')];
      this.bar.textContent = 'rendering…';
      const r = await client().simulate(args, {
        backend: (this.getAttribute('backend') ?? 'auto') as Backend,
        precision: (this.getAttribute('precision') ?? 'f32') as Precision,
        files, channel: this.channel,
      });
      this.result = r;
      this.view.update({
        colourMap: (this.getAttribute('cmap') ?? 'inverted-grey') as ColourMap,
        scaling: (this.getAttribute('scaling') ?? 'log') as Scaling,
        contrast: +(this.getAttribute('contrast') ?? 30),
        rings: this.getAttribute('rings') !== '0',
        beam: this.getAttribute('beamc') !== '0',
      });
      this.view.setImage(r.data, r.width, r.height, r.geometry);
      this.status();
      this.dispatchEvent(new CustomEvent('render', { detail: { backend: r.backend, width: r.width, height: r.height, timings: r.timings } }));
    } catch (e) {
      const err = e as Error;
      if (err.name === 'AbortError') return;
      this.bar.textContent = err.message;
      this.bar.classList.add('err');
      this.dispatchEvent(new CustomEvent('error', { detail: { message: err.message } }));
    }
  }

  private status() {
    const r = this.result;
    if (!r) return;
    const info = client().info;
    this.bar.classList.remove('err');
    this.bar.textContent = `${r.width}×${r.height} · ${r.backend === 'gpu' ? `WebGPU` : `CPU ${info?.threads ?? 1} thread${info?.threads === 1 ? '' : 's'}`} · ${r.timings.render.toFixed(0)} ms`;
  }
}

if (!customElements.get('nanobragg-view')) customElements.define('nanobragg-view', NanoBraggView);
