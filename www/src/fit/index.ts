// "Fit to image" (issue 20 §3): the crate's refinement (`api::fit`, in the simulation's worker:
// crate/src/wasm/fit.rs) of the crystal's orientation and cell (and, when chosen, distance and
// beam centre, scale) to a target image, shown while it runs: the form's fields move with each
// accepted step (the crate's fitted values of the flags, `api::fitted_values`), the simulated
// image follows, the cost per pixel drops on a small plot, Cancel stops it, and the fitted values
// stay in the form and the URL. The target is the measured image when one is open on the
// simulation's detector; otherwise a teacher makes the image shown the target and perturbs the
// crystal (by offsets the crate turns into flags), and the fit brings it back; the target's spots,
// as the fit finds them (the crate's `find_spots`, in the worker), are ringed on the image. A
// measured image's flagged pixels (gaps, bad pixels, overloads) are excluded from the fit and the
// spot search by the mask the crate made when it read the file (`MeasuredInfo.mask`).
import type { NanoBraggClient } from '../client';
import type { Store } from '../state';
import type { ImageView } from '../view';
import type { FitRequest, FitStepInfo, Geometry, Spot } from '../protocol';
import { escapeCloses, makeBar, openButton } from '../panelbar';
import { GROUPS, fmtField, paramsOf, perturbation, plotPoints, withFitted } from './logic';

export interface ShownImage {
  data: Float32Array;
  width: number;
  height: number;
  geometry: Geometry;
  /** The words of the model the fit moves (a realistic still's: the crystal's words with the
   * atomic model's name, whose cached structure factors the crate uses: `prepare_for_fit`). */
  args: string[];
  /** What the crate is told of the image as a target (its background model, units and the
   * centroid stage): the plain image's photons over nothing, or a realistic still's ADU over
   * its water and air. */
  units: TargetUnits;
  /** The crystal's cell comes from an atomic model (the realistic chain's): not fitted, the
   * form's cell field does not give it. */
  modelCell: boolean;
}

export interface TargetUnits {
  background: FitRequest['background'];
  gain: number;
  adc: number;
  centroids: boolean;
}

/** A fit's target and what the crate is told of it (`FitRequest`). */
export interface FitTarget {
  data: Float32Array;
  /** The pixels to use (1 = use, 0 = flagged: the crate's mask of a measured file), null: all. */
  mask: Uint8Array | null;
  /** What the target is (the measured image's info or the teacher's target): its spots are
   * looked for once. */
  source: object;
  width: number;
  height: number;
  label: string;
  background: FitRequest['background'];
  gain: number;
  adc: number;
  centroids: boolean;
}

export interface FitDeps {
  store: Store;
  client: NanoBraggClient;
  view: ImageView;
  /** The bar of the image's panels (the measured image's): the panel goes after it, its button
   * into it. The measured image itself is the store's (`store.measured`). */
  bar: HTMLElement;
  /** The full-resolution image shown (plain or the realistic chain's) and the words of its
   * model, when it is of the form's state (null: none, a preview, a stale image). */
  shown: () => ShownImage | null;
  /** The words of the model a fit starts from: the form's state (with the atomic model's cell
   * for a realistic still, as `ShownImage.args`). */
  words: () => string[];
  notice: (text: string, kind?: 'info' | 'warn') => void;
}


const STYLE = `
.fitbar { position: relative; display: flex; flex-wrap: wrap; align-items: center; gap: .3rem .7rem; padding: .3rem 2.4rem .3rem .5rem; font-size: .85rem; border-bottom: 1px solid var(--line, #ccc); }
.fitbar[hidden] { display: none; }
.fitbar .ftitle { font-weight: 600; }
.fitbar fieldset { border: 0; margin: 0; padding: 0; display: inline-flex; flex-wrap: wrap; gap: .3rem .5rem; align-items: center; min-width: 0; }
.fitbar fieldset .fgroup { white-space: nowrap; }
.fitbar fieldset legend { float: left; margin-right: .3rem; padding: 0; }
.fitbar input[type=number] { width: 4.2em; }
.fitbar .fgroup { display: inline-flex; gap: .35rem; align-items: center; }
.fitbar .frun { font-weight: 600; }
.fitbar .fplot { border: 1px solid var(--line, #bbb); background: var(--panel-bg, transparent); vertical-align: middle; }
.fitbar .fstatus { flex-basis: 100%; margin: 0; font-variant-numeric: tabular-nums; color: var(--muted, #555); }
.fitbar .fstatus[data-kind="error"] { color: #b00020; }
.fitbar .ftarget { color: var(--muted, #555); }
.fitbar .fclose { position: absolute; top: .3rem; right: .5rem; }
`;

export class FitPanel {
  readonly bar: HTMLElement;
  /** The teacher's target: the image the perturbation started from, and its words. */
  target: ShownImage | null = null;
  /** Cost per selected pixel at each accepted step of the last fit (the plot's points). */
  costs: number[] = [];
  /** Cycle of each point (the weights change between cycles, so the cost may jump up). */
  cycles: number[] = [];
  /** The last step seen and the last result (for scripts and tests). */
  lastStep: FitStepInfo | null = null;
  result: { misset: number[] | null; cell: number[] | null; ms: number; iterations: number; converged: boolean; verdict: string; excluded: number } | null = null;
  running = false;
  private q: <T extends HTMLElement>(sel: string) => T;

  constructor(private d: FitDeps) {
    const bar = (this.bar = makeBar('fitbar', 'Fit to image', STYLE,
      `<span class="ftitle">Fit to image</span>` +
      `<fieldset class="fparams"><legend>Fit</legend>${GROUPS.map((g) => `<label class="fgroup" title="${g.title}"><input type="checkbox" data-group="${g.id}"${g.on ? ' checked' : ''}> ${g.label}</label>`).join('')}</fieldset>` +
      `<span class="fgroup fperturb" title="For teaching: the image shown becomes the target, then the crystal is turned by this angle about each lab axis and its cell edges changed by this share; Fit brings them back">` +
      `<button type="button" class="fmake">Target = this image; perturb</button> by <input class="fdeg" type="number" min="0" max="10" step="0.1" value="0.5" aria-label="Perturbation angle (degrees)">° and ` +
      `<input class="fpct" type="number" min="0" max="10" step="0.1" value="0.5" aria-label="Perturbation of the cell edges (%)">% of the cell</span>` +
      `<button type="button" class="frun" disabled title="Refine the chosen parameters against the target (the crate's least-squares fit)">Start fit</button><button type="button" class="fcancel" disabled>Cancel</button>` +
      `<label class="fgroup" title="Ring the target's spots on the simulated image (the teacher's target)"><input class="fmarks" type="checkbox" checked> target spots</label>` +
      `<canvas class="fplot" width="180" height="44" role="img" aria-label="Residual: cost per pixel against the fit's steps (log scale)" title="Cost per pixel at each accepted step (log scale); a dashed line starts a new cycle, which weighs the pixels anew"></canvas>` +
      `<span class="ftarget"></span>` +
      `<button type="button" class="fclose" aria-label="Close Fit to image" title="Close (a fit running goes on; Cancel stops it)">×</button>` +
      `<p class="fstatus" aria-live="polite"></p>`));
    bar.hidden = true;
    d.bar.insertAdjacentElement('afterend', bar);
    this.q = <T extends HTMLElement>(sel: string) => bar.querySelector(sel) as T;
    this.q('.fmake').addEventListener('click', () => void this.perturb());
    this.q('.frun').addEventListener('click', () => void this.run());
    this.q('.fcancel').addEventListener('click', () => this.cancel());
    this.q('.fmarks').addEventListener('change', () => d.view.draw());
    this.q('.fclose').addEventListener('click', () => this.toggle(false));
    d.view.overlays.push((ctx) => this.drawTargetSpots(ctx));
    // the button that opens it, in the measured image's bar
    const open = openButton('fitopen', 'Fit to image…', 'Refine the crystal orientation and cell (and optionally the detector and scale) against the measured image, or against a perturbed copy of this image (teaching)', () => this.toggle());
    d.bar.querySelector('.mopen')!.insertAdjacentElement('afterend', open);
    escapeCloses({ open: () => !this.bar.hidden, close: () => this.toggle(false), parts: () => [this.bar, open], button: () => open });
    this.refresh();
  }

  toggle(show = this.bar.hidden) {
    this.bar.hidden = !show;
    this.d.bar.querySelector('.fitopen')!.setAttribute('aria-expanded', String(show));
    this.refresh();
    window.dispatchEvent(new Event('resize')); // the stage's height changed
    this.d.view.draw();
  }

  /** The target of a fit now: the measured image on the simulation's detector, else the
   * teacher's target when the detector is still its size. With the target, what the crate is
   * told of it: its background model and units (`FitOptions`). */
  currentTarget(): FitTarget | null {
    const shown = this.d.shown();
    const m = this.d.store.measured.peek();
    if (m && shown && m.width === shown.width && m.height === shown.height) {
      // a measured image: its water, air and detector offset are the crate's local background
      // (a smooth map from the image, spots clipped); neither the file nor the page knows the
      // detector's gain or ADC offset, so counts are taken as photons (the offset goes into the
      // background, the gain into the fitted scale). Flagged pixels (gaps, bad pixels, shown as
      // −1) are left out by the crate's mask of the file.
      const flagged = m.mask ? m.untrusted : 0;
      return {
        data: m.pixels, mask: m.mask, source: m, width: m.width, height: m.height,
        background: 'local', gain: 1, adc: 0, centroids: false,
        label: `measured image ${m.name}` + (flagged ? `, ${flagged.toLocaleString('en')} flagged pixel${flagged === 1 ? '' : 's'} excluded` : '') +
          ` (gain 1, offset 0 assumed: the file says neither, the fitted scale takes the gain; background: the crate's local map)`,
      };
    }
    const t = this.target;
    if (t && shown && t.width === shown.width && t.height === shown.height) {
      const u = t.units;
      const label = u.background === 'local'
        ? `the realistic still before the perturbation (ADU, gain ${u.gain}; under its spots the crate's local map of the water and air${shown.modelCell ? '; the cell is the atomic model\'s, not fitted' : ''})`
        : 'the image before the perturbation';
      return { data: t.data, mask: null, ...u, source: t, width: t.width, height: t.height, label };
    }
    return null;
  }

  private chosen(): string[] {
    return Array.from(this.bar.querySelectorAll<HTMLInputElement>('.fparams input:checked')).map((i) => i.dataset.group!);
  }

  /** The target's spots as the fit finds them (the crate's `find_spots` on the target with its
   * mask, their centroids), ringed on the simulated image. */
  targetSpots: Spot[] = [];
  /** The target (`FitTarget.source`) `targetSpots` are of, or are being looked for. */
  private spotsOf: object | null = null;
  /** The rings drawn at the last draw (for tests). */
  drawnSpots = 0;

  private drawTargetSpots(ctx: CanvasRenderingContext2D) {
    this.drawnSpots = 0;
    const shown = this.d.view.image;
    const t = this.currentTarget();
    if (this.bar.hidden || !t || t.source !== this.spotsOf || !this.targetSpots.length || !this.q<HTMLInputElement>('.fmarks').checked) return;
    if (!shown || shown.w * shown.scale !== t.width || shown.h * shown.scale !== t.height) return;
    const [x0, y0] = this.d.view.fromDetector(0, 0);
    const [x1] = this.d.view.fromDetector(1, 0);
    const r = Math.max(4, Math.min(12, 2.5 * Math.abs(x1 - x0)));
    ctx.save();
    ctx.lineWidth = 1.5;
    ctx.strokeStyle = '#f08c00'; // not the measured overlay's green
    ctx.beginPath();
    for (const { fast, slow } of this.targetSpots) {
      const [x, y] = this.d.view.fromDetector(fast, slow);
      ctx.moveTo(x + r, y);
      ctx.arc(x, y, r, 0, 2 * Math.PI);
    }
    ctx.stroke();
    this.drawnSpots = this.targetSpots.length;
    void y0;
    ctx.restore();
  }

  /** Look for the target's spots once per target (the teacher's are looked for when it is made;
   * again when it is the target anew, after a measured image). */
  private findTargetSpots(t: FitTarget | null) {
    const shown = this.d.shown();
    if (this.bar.hidden || !t || !shown || t.source === this.spotsOf) return;
    const source = (this.spotsOf = t.source);
    this.targetSpots = [];
    this.d.client
      .findSpots({ args: shown.args, files: Object.fromEntries(this.d.store.files.peek()), image: t.data, mask: t.mask, background: t.background, gain: t.gain, adc: t.adc })
      .then((spots) => {
        if (this.spotsOf !== source) return;
        this.targetSpots = spots;
        this.d.view.draw();
      })
      .catch((e: Error) => {
        if (this.spotsOf === source) this.status(`The target's spots were not found: ${e.message}`, 'error');
      });
  }

  /** The target (`FitTarget.source`) the status line speaks of, if it speaks of one. */
  private statusOf: object | null = null;

  /** The measured image the scale was last switched on for. */
  private scaledFor: unknown = null;

  refresh() {
    // counts of a measured image are on their own scale: fit the scale with it (once per image)
    const m = this.d.store.measured.peek();
    if (m && m !== this.scaledFor) {
      this.scaledFor = m;
      const box = this.bar.querySelector<HTMLInputElement>('input[data-group="scale"]');
      if (box) box.checked = true;
    }
    const t = this.currentTarget();
    const shown = this.d.shown();
    // a status about one target (the teacher's perturbation) goes when the target changes
    // (a measured image opened on the detector)
    if (this.statusOf && t?.source !== this.statusOf && !this.running) {
      this.statusOf = null;
      this.status('');
    }
    this.findTargetSpots(t);
    this.q('.ftarget').textContent = t
      ? `Target: ${t.label}.`
      : this.d.store.measured.peek()
        ? 'Target: the measured image, once the simulation is of its detector.'
        : 'No target yet: open a measured image, or make this image the target and perturb.';
    this.q<HTMLButtonElement>('.frun').disabled = this.running || !t || !shown;
    this.q<HTMLButtonElement>('.fmake').disabled = this.running || !shown;
    this.q<HTMLButtonElement>('.fcancel').disabled = !this.running;
  }

  private status(text: string, kind: 'info' | 'error' = 'info') {
    const s = this.q('.fstatus');
    s.textContent = text;
    s.dataset.kind = kind;
  }

  /** Teaching: the image shown becomes the target; the crystal is turned by ±deg about each lab
   * axis and its edges changed by ±pct % (offsets the crate turns into -misset and -cell). */
  async perturb(deg = Number(this.q<HTMLInputElement>('.fdeg').value), pct = Number(this.q<HTMLInputElement>('.fpct').value)) {
    const shown = this.d.shown();
    if (!shown || this.running) return;
    const { store, client } = this.d;
    const files = Object.fromEntries(store.files.peek());
    const groups = this.chosen().filter((g) => g === 'orientation' || (g === 'cell' && !shown.modelCell));
    const params = paramsOf(groups.length ? groups : ['orientation']);
    try {
      let cell: number[] | null = null;
      if (params.includes('cell_a')) cell = (await client.fittedValues(shown.args, files, 'cell_a,cell_b,cell_c', [0, 0, 0])).cell;
      const f = await client.fittedValues(shown.args, files, params.join(','), perturbation(params, deg, pct, cell));
      const target = { ...shown, data: shown.data.slice() };
      this.target = target;
      this.targetSpots = [];
      this.spotsOf = target;
      const { background, gain, adc } = shown.units;
      const spots = await client.findSpots({ args: shown.args, files, image: target.data, background, gain, adc, mask: null });
      if (this.spotsOf === target) this.targetSpots = spots;
      this.costs = [];
      this.cycles = [];
      this.plot();
      const was = store.model.peek().misset || '0 0 0';
      store.setModel(withFitted(store.model.peek(), f));
      this.statusOf = target;
      this.status(`Perturbed: the crystal is turned ${deg}° about each lab axis${cell ? ` and its cell edges changed by ${pct} %` : ''} from the target's misset ${was}${cell ? ` and cell ${cell.slice(0, 3).map((v) => fmtField(v)).join(' ')}` : ''}. Press Start fit to bring it back.`);
    } catch (e) {
      this.status((e as Error).message, 'error');
    }
    this.refresh();
  }

  /** Fit the chosen parameters to the target; resolves when it ends (fitted, cancelled or failed). */
  async run(maxIterations = 60) {
    const t = this.currentTarget();
    const shown = this.d.shown();
    if (!t || !shown || this.running) return;
    const { store, client, view } = this.d;
    const base = { ...store.model.peek() };
    let groups = this.chosen();
    if (groups.includes('scale') && (base.flux ?? '').trim()) {
      groups = groups.filter((g) => g !== 'scale');
      this.d.notice('The scale is not fitted while the fluence comes from the flux (-flux): clear the Flux field to fit it.', 'warn');
    }
    // a realistic still's cell is its atomic model's (the form's cell field does not give it)
    if (shown.modelCell && groups.some((g) => g === 'cell' || g === 'angles')) {
      groups = groups.filter((g) => g !== 'cell' && g !== 'angles');
      this.d.notice('The cell is not fitted on a realistic still with an atomic model: the model gives it.', 'info');
    }
    const params = paramsOf(groups);
    if (!params.length) {
      this.status('Choose what to fit.', 'error');
      return;
    }
    this.running = true;
    this.costs = [];
    this.cycles = [];
    this.lastStep = null;
    this.result = null;
    this.plot();
    this.refresh();
    // the store's task 'fit': while it runs the page renders nothing itself (the fit sends its
    // images), and Cancel aborts it
    const signal = store.task('fit', () => this.cancel());
    this.status(`Fitting ${params.join(', ')} to ${t.label}…`);
    const t0 = performance.now();
    const geometry = shown.geometry;
    const realistic = shown.units.background === 'local'; // a realistic still shown
    try {
      const r = await client.fit(
        // a realistic still's steps are plain images (photons): the chain renders the result
        { args: this.d.words(), files: Object.fromEntries(store.files.peek()), target: t.data, mask: t.mask, background: t.background, gain: t.gain, adc: t.adc, centroids: t.centroids, params: params.join(','), start: [], maxIterations, images: !realistic },
        (step) => {
          this.lastStep = step;
          if (Number.isFinite(step.cost)) {
            this.costs.push(step.cost);
            this.cycles.push(step.cycle);
            this.plot();
          }
          store.setModel(withFitted(base, step.fitted));
          if (step.image) view.setImage(step.image, shown.width, shown.height, geometry, 1);
          this.status(`Step ${step.step}${step.cycle ? ` (cycle ${step.cycle})` : ''}: ${this.describe(step.fitted)}` +
            (Number.isFinite(step.cost) ? ` · cost/pixel ${step.cost.toPrecision(3)}` : '') + ` · ${((performance.now() - t0) / 1000).toFixed(1)} s`);
          window.dispatchEvent(new CustomEvent('nanobragg-fit-step', { detail: { step: step.step, cost: step.cost } }));
        },
        signal,
      );
      this.running = false;
      store.endTask('fit', signal);
      store.setModel(withFitted(base, r.fitted));
      this.result = { misset: r.fitted.misset, cell: r.fitted.cell, ms: r.ms, iterations: r.iterations, converged: r.converged, verdict: r.verdict, excluded: r.excluded };
      // the crate's verdict (api::Fit::converged): a minimum near the target, not only a stop
      const excluded = r.excluded ? ` (${r.excluded.toLocaleString('en')} flagged pixel${r.excluded === 1 ? '' : 's'} of the target excluded)` : '';
      const spots = `${r.spotsFound} of the target's ${r.spotsChecked} strongest spots matched`;
      if (r.converged) {
        this.status(`Fitted in ${r.iterations} evaluations, ${(r.ms / 1000).toFixed(1)} s on ${r.pixels.toLocaleString('en')} pixels near the spots` +
          `${excluded}: ${this.describe(r.fitted)}${this.costDrop()} · ${spots}.`);
      } else {
        // the evaluation limit: going on from here may reach the minimum
        const more = /evaluation limit/.test(r.verdict) ? ' Press Start fit again to go on from there.' : '';
        this.status(`Did not converge (${r.iterations} evaluations, ${(r.ms / 1000).toFixed(1)} s): ${r.verdict}. ` +
          `The form holds the lowest point reached: ${this.describe(r.fitted)}${this.costDrop()} · ${spots}.${more}`, 'error');
      }
      window.dispatchEvent(new CustomEvent('nanobragg-fit-done', { detail: { ...this.result } }));
    } catch (e) {
      const err = e as Error;
      this.running = false;
      store.endTask('fit', signal);
      // the form keeps the values of the image shown (the last accepted step), rendered again
      const ls = this.lastStep as FitStepInfo | null; // set by the callback
      store.setModel(ls ? withFitted(base, ls.fitted) : base);
      if (err.name === 'AbortError') this.status(`Cancelled at step ${ls?.step ?? 0}: the form holds the values of the image shown.`);
      else this.status(`The fit failed: ${err.message}`, 'error');
      window.dispatchEvent(new CustomEvent('nanobragg-fit-done', { detail: { error: err.message, cancelled: err.name === 'AbortError' } }));
    }
    this.refresh();
  }

  /** The cost from the first accepted step to the last (each cycle weighs the pixels anew, so
   * the costs of two cycles are not strictly comparable: said when there were several). */
  private costDrop(): string {
    const n = this.costs.length;
    if (n < 2) return '';
    const cyc = new Set(this.cycles).size;
    return ` · cost/pixel ${this.costs[0].toPrecision(3)} → ${this.costs[n - 1].toPrecision(3)}${cyc > 1 ? ` over ${cyc} cycles (each weighs the pixels anew)` : ''}`;
  }

  cancel() {
    if (this.running) this.d.client.cancelFit();
  }

  private describe(f: FitStepInfo['fitted']): string {
    const parts: string[] = [];
    if (f.misset) parts.push(`misset ${f.misset.map((v) => v.toFixed(3)).join(' ')}°`);
    if (f.cell) parts.push(`cell ${f.cell.map((v) => fmtField(v, 3)).join(' ')}`);
    if (f.distance) parts.push(`distance ${f.distance[1].toFixed(3)} mm`);
    if (f.xbeam !== null && f.ybeam !== null) parts.push(`beam ${f.xbeam.toFixed(3)}, ${f.ybeam.toFixed(3)} mm`);
    if (f.fluence !== null) parts.push(`fluence ${f.fluence.toPrecision(4)}`);
    return parts.join(' · ');
  }

  /** The residual plot: cost per selected pixel against the step, log scale; a new cycle
   * (weights from the model) starts a new line. */
  plot() {
    const c = this.q<HTMLCanvasElement>('.fplot');
    const ctx = c.getContext('2d');
    c.dataset.points = JSON.stringify(this.costs);
    if (!ctx) return;
    ctx.clearRect(0, 0, c.width, c.height);
    const pts = plotPoints(this.costs, c.width, c.height);
    const dark = matchMedia('(prefers-color-scheme: dark)').matches && document.documentElement.dataset.theme !== 'light';
    ctx.strokeStyle = dark ? '#7fb7ff' : '#1f5fbf';
    ctx.fillStyle = ctx.strokeStyle;
    ctx.lineWidth = 1.5;
    // a new cycle weighs the pixels anew (the model's variance), so its cost may start higher
    ctx.save();
    ctx.setLineDash([3, 3]);
    ctx.strokeStyle = dark ? '#777' : '#aaa';
    ctx.lineWidth = 1;
    pts.forEach((p, i) => {
      if (i > 0 && this.cycles[i] !== this.cycles[i - 1]) {
        const x = (p.x + pts[i - 1].x) / 2;
        ctx.beginPath();
        ctx.moveTo(x, 0);
        ctx.lineTo(x, c.height);
        ctx.stroke();
      }
    });
    ctx.restore();
    ctx.beginPath();
    pts.forEach((p, i) => {
      if (i === 0 || this.cycles[i] !== this.cycles[i - 1]) ctx.moveTo(p.x, p.y);
      else ctx.lineTo(p.x, p.y);
    });
    ctx.stroke();
    for (const p of pts) ctx.fillRect(p.x - 1.5, p.y - 1.5, 3, 3);
    if (pts.length) {
      // the first and the lowest cost, at the plot's top and bottom
      const fin = this.costs.filter((v) => Number.isFinite(v) && v > 0);
      ctx.fillStyle = dark ? '#bbb' : '#555';
      ctx.font = '10px system-ui, sans-serif';
      // the line falls from the top left to the bottom right: the labels go in the other corners
      ctx.textAlign = 'right';
      ctx.fillText(Math.max(...fin).toPrecision(2), c.width - 3, 11);
      ctx.textAlign = 'left';
      if (fin.length > 1) ctx.fillText(Math.min(...fin).toPrecision(2), 3, c.height - 4);
    } else {
      ctx.fillStyle = dark ? '#999' : '#777';
      ctx.font = '11px system-ui, sans-serif';
      ctx.fillText('cost per pixel (log)', 6, c.height / 2 + 4);
    }
  }
}

export function installFit(d: FitDeps): FitPanel {
  return new FitPanel(d);
}
