// The "3D view" beside the detector image, for the app (main.ts) and the element (embed.ts):
// the reciprocal-space view (recip/, three.js loaded lazily on first open) fed by the crate's
// prediction for the current arguments (predictfeed.ts), linked both ways with the image
// (spots.ts): hovering a spot lights its lattice point, hovering a lattice point rings its
// spot; Shift+drag / Alt+drag in 3D turns the crystal (recip/rotate.ts `applyRotation`) and the
// host stores the new misset (the app: the URL; the element: its `misset` attribute).
// The same prediction gives the image its hkl labels (the view setting `labels`).
import type { NanoBraggClient } from './client';
import type { ImageView } from './view';
import { PredictionFeed, type Predicted } from './predictfeed';
import { SpotOverlay, describeSpot, spotInfo, type SpotInfo } from './spots';
import { parseMisset } from './teach/orientation';
import { applyRotation, openReciprocalView } from './recip/index';
import type { PointInfo, ReciprocalView, Theme, V3 } from './recip/types';

export interface Teach3DHost {
  client: NanoBraggClient;
  image: ImageView;
  /** The element that holds the image's host; the panel is added after it, and the stage is
   * laid out side by side, or stacked when it is narrow. */
  stage: HTMLElement;
  /** Where the panel's style goes (document.head, or the element's shadow root). */
  styleRoot: Node;
  /** The current misset text ('' = none) and φ start (degrees). */
  misset(): string;
  phi(): number;
  /** Store a new misset; `final` when the drag ended (the host renders the full image). */
  setMisset(value: string, final: boolean): void;
  /** Opened or closed by the user (the host keeps it: URL or attribute). */
  onOpenChange?(open: boolean): void;
}

const CSS = `
.nb-stage { display: flex; flex-direction: row; min-height: 0; min-width: 0; }
.nb-stage.stacked { flex-direction: column; }
.nb-stage > .nb-image { flex: 1 1 0; min-width: 0; min-height: 0; }
.p3d { flex: 1 1 0; display: flex; flex-direction: column; min-width: 0; min-height: 0;
  border-left: 1px solid var(--line, rgba(128,128,128,.35)); background: var(--panel, #fff); color: var(--ink, #1b1f24); }
.nb-stage.stacked > .p3d { border-left: none; border-top: 1px solid var(--line, rgba(128,128,128,.35)); }
.p3d-bar { display: flex; flex-wrap: wrap; align-items: center; gap: 4px 8px; padding: 3px 8px; font-size: 12px;
  border-bottom: 1px solid var(--line, rgba(128,128,128,.35)); }
.p3d-bar b { font-size: 13px; }
.p3d-bar .p3d-hint { color: var(--muted, #5b6570); flex: 1; min-width: 0; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.p3d-bar button { font: inherit; padding: 1px 7px; border: 1px solid var(--line, rgba(128,128,128,.4)); border-radius: 4px;
  background: var(--button, #eef1f5); color: inherit; cursor: pointer; }
.p3d-bar button[aria-pressed=true] { background: var(--accent, #1f5fbf); color: var(--on-accent, #fff); border-color: var(--accent, #1f5fbf); }
.p3d-bar .p3d-close { font-size: 15px; line-height: 1; padding: 0 6px; }
.p3d-view { flex: 1; min-height: 0; position: relative; }
.p3d-view > canvas { position: absolute; inset: 0; }
.p3d-info { padding: 3px 8px; font: 12px/1.35 ui-monospace, monospace; height: calc(2.7em + 6px); overflow: hidden;
  border-top: 1px solid var(--line, rgba(128,128,128,.35)); font-variant-numeric: tabular-nums; flex: none; }
.p3d-info.idle { color: var(--muted, #5b6570); font-family: system-ui, sans-serif; }
.p3d-info.err { color: var(--err, #b3261e); }
/* the info line below the view gives the hints: a smaller legend hides less of the scene */
.p3d .nbr-recip .nbr-legend { font-size: 11px; line-height: 1.35; padding: 4px 6px; }
.p3d .nbr-recip .nbr-legend .hint { display: none; }
.present .p3d-bar { font-size: 16px; flex-wrap: nowrap; }
.present .p3d-bar button { font-size: 14px; white-space: nowrap; }
.present .p3d-bar b { font-size: 18px; }
/* three lines in presentation mode, so that the hint and a spot's numbers are not cut off */
.present .p3d-info { font-size: 17px; height: calc(4.05em + 6px); }
.present .p3d .nbr-recip .nbr-label { font-size: 18px; }
.present .p3d .nbr-recip .nbr-label.info { font-size: 18px; }
.present .p3d .nbr-recip .nbr-legend { font-size: 16px; }
`;

const IDLE = 'Hover a spot on the image or a lattice point here · Shift+drag turns the crystal, Alt+drag spins it';

/** Above this many lattice points the view starts with only the points near the sphere. */
const NEAR_ONLY_ABOVE = 150_000;

const fmtAngle = (x: number) => String(+x.toFixed(3)).replace(/^-0$/, '0');

export class Teach3D {
  readonly feed: PredictionFeed;
  readonly spots: SpotOverlay;
  view: ReciprocalView | null = null;
  panel: HTMLElement | null = null;
  private info: HTMLElement | null = null;
  private opening: Promise<void> | null = null;
  private theme: Theme = 'light';
  private labels = false;
  private last: { args: string[]; files: Record<string, Uint8Array>; filesKey: string; live: boolean } | null = null;
  /** The last full prediction's size and largest tolerance (1/Å). */
  private full: { count: number; maxTolerance: number } | null = null;
  private nearShown = false;
  /** The misset while a Shift/Alt+drag in 3D runs (unrounded, so that steps do not drift). */
  private turning: V3 | null = null;
  private highlightedHkl: V3 | null = null;
  /** The user chose all points or only those near the sphere (else: by the lattice's size). */
  private nearChosen = false;
  /** The lattice point under the cursor in 3D. */
  private hover3d: V3 | null = null;
  private resize: ResizeObserver;
  /** Updates of the 3D view and their cost (for tests and measurements). */
  stats = { updates: 0, updateMs: 0, points: 0, predictMs: 0 };

  constructor(private host: Teach3DHost) {
    const root = host.styleRoot;
    if (!(root instanceof Document ? root.getElementById('nb-p3d-style') : (root as ParentNode).querySelector?.('#nb-p3d-style'))) {
      const s = document.createElement('style');
      s.id = 'nb-p3d-style';
      s.textContent = CSS;
      (root instanceof Document ? root.head : root).appendChild(s);
    }
    host.stage.classList.add('nb-stage');
    host.image.canvas.parentElement?.classList.add('nb-image');
    this.feed = new PredictionFeed(host.client, (f, s) => host.image.positionAt(f, s) ?? [NaN, NaN, NaN]);
    this.spots = new SpotOverlay(host.image);
    this.feed.onChange((p, err) => this.show(p, err));
    this.spots.onHover = (s) => this.imageHover(s);
    this.resize = new ResizeObserver(() => this.layout());
    this.resize.observe(host.stage);
  }

  get isOpen() {
    return this.panel !== null;
  }

  /** The model changed: ask for a prediction when the 3D view or the labels need one. `live`:
   * a frame of a drag (a slider, or turning the crystal), when a large lattice is predicted near
   * the Ewald sphere only (tens of ms instead of about a second for 4·10⁵ points); the full
   * lattice follows when the drag ends. */
  update(args: string[], files: Record<string, Uint8Array>, filesKey: string, live = false) {
    this.last = { args, files, filesKey, live };
    // a slider held: the camera stays put (the sphere visibly shrinks as λ grows); it frames
    // the scene again when the drag ends
    this.view?.holdFrame(live);
    this.request();
  }

  private request() {
    const l = this.last;
    if (!l || !(this.isOpen || this.labels)) return;
    const big = this.full && this.full.count > NEAR_ONLY_ABOVE;
    const nearOnly = l.live && big && (!this.isOpen || this.nearShown);
    // every point that the view calls near (|ε| ≤ 3 tolerances) is within 3 × the largest tolerance
    this.feed.request(l.args, l.files, l.filesKey, nearOnly ? 3 * this.full!.maxTolerance : undefined);
  }

  setLabels(on: boolean) {
    this.labels = on;
    this.spots.setLabels(on);
    if (on) this.request();
  }

  setTheme(t: Theme) {
    this.theme = t;
    this.view?.setTheme(t);
  }

  toggle() {
    return this.isOpen ? this.close() : this.open();
  }

  /** Open the panel (loads three.js the first time). Rejects with a clear message without WebGL2. */
  open(): Promise<void> {
    if (this.opening) return this.opening;
    if (this.isOpen) return Promise.resolve();
    const panel = document.createElement('section');
    panel.className = 'p3d';
    panel.setAttribute('aria-label', 'Reciprocal space (3D view)');
    panel.innerHTML =
      `<div class="p3d-bar"><b>Reciprocal space</b>` +
      `<span class="p3d-hint"></span>` +
      `<button type="button" class="p3d-near" aria-pressed="false" title="Show only the lattice points near the Ewald sphere">Near sphere</button>` +
      `<button type="button" class="p3d-overview" title="Camera: the whole construction">Overview</button>` +
      `<button type="button" class="p3d-lattice" title="Camera: the lattice around the origin">Lattice</button>` +
      `<button type="button" class="p3d-close" title="Close the 3D view (key 3)" aria-label="Close the 3D view">×</button></div>` +
      `<div class="p3d-view"></div>` +
      `<div class="p3d-info idle" aria-live="polite">${IDLE}</div>`;
    this.host.stage.appendChild(panel);
    this.panel = panel;
    this.info = panel.querySelector('.p3d-info');
    const q = <T extends HTMLElement>(sel: string) => panel.querySelector(sel) as T;
    q('.p3d-close').addEventListener('click', () => {
      this.close();
      this.host.onOpenChange?.(false);
    });
    const near = q<HTMLButtonElement>('.p3d-near');
    near.addEventListener('click', () => {
      this.nearChosen = true;
      this.setNear(near.getAttribute('aria-pressed') !== 'true');
      if (this.last) this.last.live = false;
      this.request();
    });
    q('.p3d-overview').addEventListener('click', () => this.view?.resetCamera('overview'));
    q('.p3d-lattice').addEventListener('click', () => this.view?.resetCamera('lattice'));
    this.layout();
    // the prediction and the three.js chunk load in parallel
    this.request();
    const container = q('.p3d-view');
    this.opening = openReciprocalView(container, { theme: this.theme })
      .then((view) => {
        if (this.panel !== panel) {
          view.dispose();
          return;
        }
        this.view = view;
        // the theme may have changed while three.js loaded (an element reads its `theme`
        // attribute after it first opened the view: a dark element's panel came up light)
        view.setTheme(this.theme);
        // the view's label style lives in document.head: a shadow root needs its own copy
        if (!(this.host.styleRoot instanceof Document)) {
          const s = document.getElementById('nbr-recip-style');
          if (s && !(this.host.styleRoot as ParentNode).querySelector('#nbr-recip-style')) this.host.styleRoot.appendChild(s.cloneNode(true));
        }
        view.onHover((p) => this.viewHover(p));
        view.onRotate((rot) => this.rotate(rot));
        view.debug.canvas.addEventListener('pointerup', () => this.endTurn());
        view.debug.canvas.addEventListener('pointercancel', () => this.endTurn());
        panel.dataset.ready = '1';
        if (this.feed.current) this.show(this.feed.current, this.feed.error);
      })
      .catch((e: Error) => {
        this.setInfo(e.message, 'err');
        panel.dataset.error = e.message;
        throw e;
      })
      .finally(() => {
        this.opening = null;
      });
    return this.opening;
  }

  close() {
    this.view?.dispose();
    this.view = null;
    this.panel?.remove();
    this.panel = this.info = null;
    this.highlightedHkl = this.hover3d = null;
    this.spots.mark(null);
    this.layout();
    this.host.image.draw();
  }

  /** The hkl lit in the 3D view from the image (null: none). */
  get highlighted(): V3 | null {
    return this.highlightedHkl;
  }

  private layout() {
    const st = this.host.stage;
    const r = st.getBoundingClientRect();
    // side by side while each half stays at least as wide as it is tall (about), else stacked
    st.classList.toggle('stacked', this.isOpen && r.width < 1.15 * r.height);
  }

  private show(p: Predicted | null, err: string) {
    if (p) {
      this.stats.predictMs = p.ms;
      if (!p.nearOnly) {
        const tol = p.data.reflections.tolerance;
        let maxTolerance = 0;
        if (tol) for (let i = 0; i < tol.length; i++) if (tol[i] > maxTolerance) maxTolerance = tol[i];
        this.full = { count: p.data.reflections.count, maxTolerance };
      }
      this.spots.setTable(p.data.reflections);
      if (this.hover3d) this.spots.mark(this.hover3d); // the ring stays on the hovered point's spot
      if (this.view) {
        // a large lattice (a protein cell) is a grey ball that hides the sphere: show the points
        // near the sphere only, unless the user chose
        if (!this.nearChosen && !p.nearOnly) this.setNear(p.data.reflections.count > NEAR_ONLY_ABOVE);
        const t0 = performance.now();
        this.view.update(p.data);
        this.stats.updates++;
        this.stats.updateMs = performance.now() - t0;
        this.stats.points = p.data.reflections.count;
        if (this.highlightedHkl) this.view.highlight(this.highlightedHkl);
        // the hovered reflection's numbers change as the crystal turns: say the current ones
        const hkl = this.hover3d ?? this.highlightedHkl;
        const i = hkl ? this.spots.indexOf(hkl) : -1;
        if (i >= 0) this.setInfo(`${this.hover3d ? '3D' : 'image'}: ${describeSpot(spotInfo(p.data.reflections, i))}`);
        this.panel?.setAttribute('data-points', String(p.data.reflections.count));
      }
    }
    if (err) this.setInfo(`prediction: ${err}`, 'err');
    else if (this.info?.classList.contains('err')) this.setInfo('', 'idle');
  }

  /** Only the points near the Ewald sphere (the rest of the lattice hidden), or all. */
  setNear(on: boolean) {
    this.nearShown = on;
    this.panel?.querySelector('.p3d-near')?.setAttribute('aria-pressed', String(on));
    this.view?.setOptions({ show: on ? 'near' : 'all' });
  }

  private setInfo(text: string, kind: 'idle' | 'err' | '' = '') {
    if (!this.info) return;
    this.info.textContent = text || IDLE;
    this.info.className = `p3d-info ${text ? kind : 'idle'}`;
  }

  /** The cursor is over a spot of the image (or left it): light its lattice point. */
  private imageHover(s: SpotInfo | null) {
    this.highlightedHkl = s ? s.hkl : null;
    if (this.panel) this.panel.dataset.highlight = s ? s.hkl.join(' ') : '';
    this.view?.highlight(this.highlightedHkl);
    if (this.isOpen) this.setInfo(s ? `image: ${describeSpot(s)}` : '');
  }

  /** A lattice point is hovered in 3D: ring its spot on the image. */
  private viewHover(p: PointInfo | null) {
    this.hover3d = p ? p.hkl : null;
    this.spots.mark(p ? p.hkl : null);
    if (this.panel) this.panel.dataset.hover = p ? p.hkl.join(' ') : '';
    if (p) this.setInfo(`3D: ${describeSpot(p)}${p.fast === null ? '  (its ray misses the detector)' : ''}`);
    else this.setInfo('');
  }

  private rotate(rot: [V3, V3, V3]) {
    const m = parseMisset(this.host.misset());
    const cur = this.turning ?? (Array.isArray(m) ? m : null);
    if (!cur) {
      this.setInfo('The misset is "random": give it three angles to turn the crystal by dragging.', 'err');
      return;
    }
    const spindle = this.feed.current?.data.spindle;
    const next = applyRotation(cur, rot, spindle ? { spindle, phi: this.host.phi() } : undefined);
    this.turning = next;
    this.host.setMisset(next.map(fmtAngle).join(' '), false);
  }

  private endTurn() {
    if (!this.turning) return;
    const m = this.turning;
    this.turning = null;
    this.host.setMisset(m.map(fmtAngle).join(' '), true);
  }

  dispose() {
    this.close();
    this.resize.disconnect();
  }
}
