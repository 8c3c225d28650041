// A measured image beside and over the simulation (issue 18 §3). Open or drop an SMV, miniCBF or
// NeXus/HDF5 file (an EIGER master with its data files): the crate decodes it in the measured-
// image worker (worker.ts), its geometry goes into the form through the store (the simulation is
// then of the file's detector and beam), and the page shows the two side by side, blended,
// blinking or as their difference, with one zoom and pan (the two ImageViews' viewports are
// kept equal) and one colour map and scaling (the store's view settings; levels each its own,
// or the simulation's). The predicted spots (the crate's prediction of the current arguments)
// are drawn over the measured image, and the cursor readout gives both values. A DIALS `.expt`
// dropped with it becomes the simulation's `-expt` (detector, beam and the crystal's
// orientation as indexed).
import { effect } from '@preact/signals-core';
import type { NanoBraggClient } from '../client';
import type { Store } from '../state';
import { ImageView, type Readout } from '../view';
import { makeBar, viewTag } from '../panelbar';
import { fromPrediction, type CratePrediction } from '../recip/adapter';
import type { RecipData } from '../recip/types';
import { difference, hasCrystal, kindByName, masterOf, measuredKind, simScale, unrecognised, withFileGeometry } from './logic';
import { fmtField } from '../fit/logic';
import type { MeasuredApi, MeasuredInfo } from './protocol';
import { Channel, WorkerError, type FromWorker } from '../channel';

export type CompareMode = 'sim' | 'measured' | 'side' | 'blend' | 'blink' | 'diff';
const MODES: [CompareMode, string][] = [
  ['side', 'Side by side'], ['blend', 'Blend'], ['blink', 'Blink'], ['diff', 'Difference'],
  ['measured', 'Measured only'], ['sim', 'Simulated only'],
];

export interface MeasuredDeps {
  store: Store;
  client: NanoBraggClient;
  /** The simulation's view, its host and the stage that holds it. */
  view: ImageView;
  host: HTMLElement;
  stage: HTMLElement;
  notice: (text: string, kind?: 'info' | 'warn') => void;
}

function fmt(v: number) {
  if (!Number.isFinite(v)) return '∞';
  return Math.abs(v) >= 1e5 || (v !== 0 && Math.abs(v) < 1e-2) ? v.toExponential(2) : String(+v.toPrecision(5));
}

const STYLE = `
.mbar { display: flex; flex-wrap: wrap; align-items: center; gap: .35rem .6rem; padding: .25rem .5rem; font-size: .85rem; border-bottom: 1px solid var(--line, #ccc); }
.mbar .mname { font-weight: 600; max-width: 40ch; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.mbar .mnote, .mbar .mread { flex-basis: 100%; color: var(--muted, #555); margin: 0; font-size: .8rem; }
.mbar .mread { font-variant-numeric: tabular-nums; color: inherit; }
.mbar[data-open="false"] .mopen-only { display: none; }
.stage .mhost { flex: 1; position: relative; min-height: 0; min-width: 0; overflow: hidden; background: var(--canvas-bg); border-left: 2px solid var(--line, #999); }
.canvas-host > .mhost { position: absolute; inset: 0; border: 0; }
.mhost[hidden] { display: none; }
`;

export class MeasuredCompare {
  readonly bar: HTMLElement;
  readonly mview: ImageView;
  readonly mhost: HTMLElement;
  /** The image open (null: none), as the worker gave it; the store's `measured` (the other
   * panels read it there). */
  get info(): MeasuredInfo | null {
    return this.d.store.measured.peek();
  }
  private set info(v: MeasuredInfo | null) {
    this.d.store.measured.value = v;
  }
  mode: CompareMode = 'side';
  /** Timings of the last open (ms): read the files, worker (module load, decode), shown. */
  timings: { read: number; load: number; decode: number; show: number; total: number } | null = null;
  private worker: Worker | null = null;
  private channel: Channel<MeasuredApi> | null = null;
  /** The latest prediction request (older replies are dropped) and the arguments predicted. */
  private predictSeq = 0;
  private predictedKey = '';
  private prediction: RecipData | null = null;
  private blinkTimer = 0;
  private blinkShowsMeasured = true;
  private syncing = false;
  private sharedLevels = false;
  private spotsOn = true;
  private tags: { sim: HTMLElement; measured: HTMLElement };
  private q: <T extends HTMLElement>(sel: string) => T;

  constructor(private d: MeasuredDeps) {
    const bar = (this.bar = makeBar('mbar', 'Measured image', STYLE,
      `<button type="button" class="mopen" title="Open a measured image: SMV, miniCBF, or an EIGER NeXus master with its data files (select them together); a DIALS .expt with it sets the crystal">Open measured image…</button>` +
      `<input type="file" class="mfile" multiple hidden accept=".img,.smv,.cbf,.h5,.hdf5,.nxs,.expt,.json,.geom">` +
      `<span class="mname mopen-only"></span>` +
      `<label class="mopen-only">Show <select class="mmode">${MODES.map(([v, l]) => `<option value="${v}">${l}</option>`).join('')}</select></label>` +
      `<label class="mopen-only mblend-l" title="Blend: all measured at the left, all simulated at the right">measured <input class="mblend" type="range" min="0" max="1" step="0.01" value="0.5" aria-label="Blend: measured to simulated"> simulated</label>` +
      `<label class="mopen-only" title="Levels of the measured image: its own automatic levels, or the simulation's (one colour scale)"><input class="mshared" type="checkbox"> same levels</label>` +
      `<label class="mopen-only" title="Predicted spots (in the diffraction condition) over the measured image"><input class="mspots" type="checkbox" checked> predicted spots</label>` +
      `<button type="button" class="mopen-only mapply" title="Put the file's detector and beam into the form again">Use the file's geometry</button>` +
      `<button type="button" class="mopen-only mclose" aria-label="Close the measured image">×</button>` +
      `<p class="mnote mopen-only" aria-live="polite"></p><p class="mread mopen-only" aria-live="off"></p>`, 'toolbar'));
    bar.dataset.open = 'false';
    d.stage.parentElement!.insertBefore(bar, d.stage);
    this.q = <T extends HTMLElement>(sel: string) => bar.querySelector(sel) as T;
    const file = this.q<HTMLInputElement>('.mfile');
    this.q('.mopen').addEventListener('click', () => file.click());
    file.addEventListener('change', async () => {
      const files = Array.from(file.files ?? []);
      file.value = '';
      if (!files.length) return;
      const { said } = await this.openFiles(files, true);
      if (said.length) this.d.notice(said.map((l) => l.text).join('; '), said.some((l) => l.warn) ? 'warn' : 'info');
    });
    this.q<HTMLSelectElement>('.mmode').addEventListener('change', (e) => this.setMode((e.target as HTMLSelectElement).value as CompareMode));
    this.q<HTMLInputElement>('.mblend').addEventListener('input', () => this.layout());
    this.q<HTMLInputElement>('.mshared').addEventListener('change', (e) => {
      this.sharedLevels = (e.target as HTMLInputElement).checked;
      this.recolour();
    });
    this.q<HTMLInputElement>('.mspots').addEventListener('change', (e) => {
      this.spotsOn = (e.target as HTMLInputElement).checked;
      void this.requestSpots();
      this.mview.draw();
    });
    this.q('.mapply').addEventListener('click', () => this.info && this.applyGeometry(this.info));
    this.q('.mclose').addEventListener('click', () => this.close());

    const mhost = (this.mhost = document.createElement('div'));
    mhost.className = 'mhost';
    mhost.hidden = true;
    d.stage.appendChild(mhost);
    this.mview = new ImageView(mhost);
    this.mview.backgroundBlack = true; // counts over water, air and an offset: levels as the realistic still's
    this.mview.canvas.setAttribute('aria-label', 'Measured detector image. Arrow keys pan, + and - zoom, 0 fits.');
    this.tags = { sim: viewTag(d.host, 'simulated'), measured: viewTag(mhost, 'measured') };

    // one zoom and pan: whichever view moves, the other follows
    const sync = (from: ImageView, to: ImageView) => () => {
      if (this.syncing || !this.info || !this.sameDetector()) return;
      this.syncing = true;
      to.setViewport(from.viewport);
      this.syncing = false;
    };
    d.view.onDraw = sync(d.view, this.mview);
    this.mview.onDraw = sync(this.mview, d.view);
    // a new simulated image: its geometry for the measured view, the difference again
    d.view.onImage = () => this.simChanged();
    // the readout gives both values wherever the pointer is
    const prev = d.view.onReadout;
    d.view.onReadout = (r) => {
      prev(r);
      this.readout(r, 'sim');
    };
    this.mview.onReadout = (r) => {
      prev(r && { ...r, value: this.simValueAt(r.f, r.s) ?? NaN });
      this.readout(r, 'measured');
    };
    this.mview.overlays.push((ctx) => this.drawSpots(ctx));
    // the simulation's hovered spot and hkl labels too (spots.ts draws with the simulation's
    // view, whose viewport is this one's)
    this.mview.overlays.push((ctx) => {
      if (this.mode === 'side') return;
      for (const o of d.view.overlays) o(ctx);
    });

    // colour map and scaling are the store's (one colour scale for both)
    effect(() => {
      void d.store.view.value;
      this.recolour();
    });
    // predicted spots follow the arguments
    effect(() => {
      void d.store.args.value;
      void d.store.files.value;
      void this.requestSpots();
    });
    this.layout();
  }

  /** Files dropped on the page or chosen: measured images open here, a `.expt` or a CrystFEL
   * `.geom` become the simulation's `-expt` / `-geom`. Returns the files it did not take (an HKL
   * or a model dropped with them), for the simulation's own fields, and what it has to say (a
   * damaged image, one that did not decode), for the caller's one notice of the drop. */
  async openFiles(files: File[], chosen = false): Promise<{ rest: File[]; said: { text: string; warn: boolean }[] }> {
    const t0 = performance.now();
    const read = await Promise.all(files.map(async (f) => ({ name: f.name, bytes: new Uint8Array(await f.arrayBuffer()) })));
    const kinds = read.map((r) => measuredKind(r.bytes));
    // SMV dropped on the page stays the simulation's header (-img); chosen here, it is measured
    const images = read.filter((_, i) => kinds[i] === 'hdf5' || kinds[i] === 'cbf' || (chosen && kinds[i] === 'smv'));
    // by name where the content says nothing: a damaged .expt or .geom still goes to its field
    // (the crate's reader says what is wrong with it there); a damaged image is said so here
    const byName = (k: 'expt' | 'geom') => read.find((r, i) => kinds[i] === null && kindByName(r.name) === k);
    const expt = read.find((_, i) => kinds[i] === 'expt') ?? byName('expt');
    const geom = read.find((_, i) => kinds[i] === 'geom') ?? byName('geom');
    // a file named as a measured image that is none: said here (damaged)
    const why = read.map((r, i) => (kinds[i] === null ? unrecognised(r.name, chosen) : undefined));
    const refused = why.filter((m): m is string => !!m);
    const said = refused.length ? [{ text: refused.join('; '), warn: true }] : [];
    // nothing measured: files chosen here, or only damaged images dropped, are said here; other
    // files dropped with damaged ones go to the simulation's fields (the drop's routing says
    // them all, the damaged ones too)
    if (!images.length && !expt && !geom) return chosen || refused.length === read.length ? { rest: [], said } : { rest: files, said: [] };
    // the rest (not images, not the .expt/.geom, not refused here) is the simulation's
    const taken = new Set<{ name: string; bytes: Uint8Array }>([...images, ...(expt ? [expt] : []), ...(geom ? [geom] : [])]);
    const rest = files.filter((_, i) => !taken.has(read[i]) && !why[i]);
    if (geom) {
      this.d.store.addFile(geom.name, geom.bytes);
      this.d.store.setField('geom', geom.name);
      if (measuredKind(geom.bytes) === 'geom') this.note(`${geom.name}: the simulation uses its panels (-geom)`);
    }
    if (expt) {
      this.d.store.addFile(expt.name, expt.bytes);
      this.d.store.setField('expt', expt.name);
      const cell = hasCrystal(expt.bytes) ? await this.fileCell() : null;
      if (measuredKind(expt.bytes) === 'expt') this.note(`${expt.name}: the simulation uses its detector, beam and crystal` +
        (cell ? ` (cell ${cell} from the file; the misset and cell fields turn and resize it)` : '') + ' (-expt)');
    }
    if (!images.length) return { rest, said };
    this.predictedKey = ''; // a new image: predict again
    const h5 = images.filter((r) => measuredKind(r.bytes) === 'hdf5');
    const main = h5.length ? h5[masterOf(h5.map((r) => r.name))] : images[0];
    const others = images.filter((r) => r !== main);
    const tRead = performance.now();
    let reply: MeasuredApi['read']['res'];
    try {
      reply = await this.decode(main.name, main.bytes, others);
    } catch (e) {
      said.push({ text: (e as Error).message || 'the measured-image worker gave no image', warn: true });
      return { rest, said };
    }
    const tDecoded = performance.now();
    this.show(reply.info, !expt);
    const tShown = performance.now();
    this.timings = { read: tRead - t0, load: reply.ms.load, decode: reply.ms.decode, show: tShown - tDecoded, total: tShown - t0 };
    return { rest, said };
  }

  /** With an `.expt` crystal the form's misset turns the file's crystal and its cell is the
   * crate's `-cell` with `-expt` (the file's orientation): both fields start from the file, the
   * misset empty and the cell the one the crate reads from the file's matrix (its fitted value
   * at no offset). Returns the cell put in the field (null: the crate refused, said). */
  private async fileCell(): Promise<string | null> {
    const { store, client } = this.d;
    const was = { misset: store.model.peek().misset ?? '', cell: store.model.peek().cell ?? '' };
    store.setField('misset', '');
    store.setField('cell', '');
    try {
      const f = await client.fittedValues(store.args.peek().args, Object.fromEntries(store.files.peek()),
        'cell_a,cell_b,cell_c,cell_alpha,cell_beta,cell_gamma', [0, 0, 0, 0, 0, 0]);
      if (!f.cell) throw new Error('the crate gave no cell');
      const cell = f.cell.map((v) => fmtField(v)).join(' ');
      store.setField('cell', cell);
      return cell;
    } catch (e) {
      // the file is refused (the render says why, naming it): the form keeps its crystal
      store.setField('misset', was.misset);
      store.setField('cell', was.cell);
      this.d.notice(`The crystal of the .expt was not read: ${(e as Error).message}`, 'warn');
      return null;
    }
  }

  private decode(name: string, bytes: Uint8Array, others: { name: string; bytes: Uint8Array }[]): Promise<MeasuredApi['read']['res']> {
    return this.worker_().call('read', { name, bytes, others }, { transfer: [bytes.buffer, ...others.map((o) => o.bytes.buffer)] });
  }

  /** The measured-image worker's channel (started on first use). */
  private worker_(): Channel<MeasuredApi> {
    if (!this.worker || !this.channel) {
      const worker = (this.worker = new Worker(new URL('./measured-worker.js', import.meta.url), { type: 'module', name: 'nanobragg-measured' }));
      const ch = (this.channel = new Channel<MeasuredApi>(worker));
      worker.onmessage = (ev: MessageEvent<FromWorker>) => ch.receive(ev.data);
      ch.onTrapped = (why) => this.replaceWorker(why ?? 'the measured-image reader stopped on an internal error');
    }
    return this.channel;
  }

  /** After a trap in the worker's module: end the worker (its memory goes with it) and answer
   * what else it held with the error; the next request starts a fresh one. */
  private replaceWorker(why: string) {
    this.worker?.terminate();
    this.worker = null;
    this.channel?.failAll(new WorkerError({ message: why }));
    this.channel = null;
    this.workersReplaced++;
  }

  /** Measured-image workers replaced after a trap (tests read it). */
  workersReplaced = 0;

  private show(info: MeasuredInfo, applyGeometry: boolean) {
    this.info = info;
    this.bar.dataset.open = 'true';
    this.q('.mname').textContent = `${info.name}: ${info.format}, ${info.width}×${info.height} ${info.dtype}` + (info.frames > 1 ? `, frame 1 of ${info.frames}` : '');
    this.q('.mname').title = this.q('.mname').textContent!;
    this.mview.setImage(info.pixels, info.width, info.height, this.matchingGeometry());
    if (applyGeometry) this.applyGeometry(info);
    else this.describe(info, []);
    this.setMode(this.mode);
    void this.requestSpots();
  }

  /** The file's geometry into the form (through the store: the simulation follows). */
  applyGeometry(info: MeasuredInfo) {
    const { model, set } = withFileGeometry(this.d.store.model.peek(), info.words);
    this.d.store.setModel(model);
    this.describe(info, set);
  }

  private describe(info: MeasuredInfo, set: string[]) {
    const w = new Map(info.words);
    const num = (f: string) => (w.has(f) ? Number(w.get(f)) : null);
    const said: string[] = [`${info.width} × ${info.height} pixels`];
    const px = num('-pixel');
    if (px !== null) said[0] += ` of ${+(px * 1000).toPrecision(6)} µm`;
    const dist = num('-distance');
    if (dist !== null) said.push(`distance ${+dist.toPrecision(6)} mm`);
    const lam = num('-lambda');
    if (lam !== null) said.push(`λ ${+lam.toPrecision(6)} Å`);
    const xb = num('-Xbeam'), yb = num('-Ybeam');
    if (xb !== null && yb !== null && px) said.push(`beam centre at pixel (${+(yb / px + 0.5).toFixed(2)}, ${+(xb / px + 0.5).toFixed(2)}) from the first pixel's corner (-Xbeam ${+xb.toPrecision(6)} -Ybeam ${+yb.toPrecision(6)} mm, MOSFLM)`);
    const phi = num('-phi'), osc = num('-osc');
    if (phi !== null) said.push(`φ ${+phi.toPrecision(6)}°${osc !== null ? ` + ${+osc.toPrecision(6)}°` : ''}`);
    const parts = [`${set.length ? 'Put into the form' : 'The file says'}: ${said.join(', ')}.`];
    if (info.missing.length) parts.push(`The file does not say the ${info.missing.join(', ')}: the form's values are kept.`);
    if (info.untrusted) parts.push(`${info.untrusted} flagged pixels (module gaps, bad pixels) show as −1 and are left out of the difference.`);
    for (const n of info.notes) parts.push(`${n[0].toUpperCase()}${n.slice(1)}.`);
    this.note(parts.join(' '));
  }

  private note(text: string) {
    this.q('.mnote').textContent = text;
  }

  close() {
    this.info = null;
    this.bar.dataset.open = 'false';
    this.setMode(this.mode);
  }

  setMode(mode: CompareMode) {
    this.mode = mode;
    (this.q('.mmode') as HTMLSelectElement).value = mode;
    this.layout();
    this.recolour();
  }

  /** Where the measured view sits for the mode: beside the simulation, over it, or hidden. */
  private layout() {
    const { host, stage } = this.d;
    const m = this.mhost;
    clearInterval(this.blinkTimer);
    this.blinkTimer = 0;
    const open = this.info !== null;
    const mode = open ? this.mode : 'sim';
    m.hidden = mode === 'sim';
    const over = mode === 'blend' || mode === 'blink' || mode === 'diff' || mode === 'measured';
    const parent = over ? host : stage;
    if (m.parentElement !== parent) {
      if (over) host.appendChild(m);
      else host.after(m);
    }
    m.style.opacity = mode === 'blend' ? String(1 - +(this.q('.mblend') as HTMLInputElement).value) : '';
    this.q('.mblend-l').hidden = mode !== 'blend';
    this.tags.sim.hidden = !(open && (mode === 'side' || mode === 'blink'));
    this.tags.measured.hidden = !(open && mode !== 'sim' && mode !== 'blend');
    this.tags.measured.textContent = mode === 'diff' ? 'measured − k·simulated' : 'measured';
    this.tags.sim.textContent = !open || this.sameDetector() ? 'simulated' : 'simulated: not yet the file\'s detector (rendering)';
    if (mode === 'blink') {
      this.blinkShowsMeasured = true;
      this.blinkTimer = window.setInterval(() => {
        this.blinkShowsMeasured = !this.blinkShowsMeasured;
        m.style.visibility = this.blinkShowsMeasured ? '' : 'hidden';
      }, 700);
    }
    m.style.visibility = '';
    if (open && this.sameDetector()) this.mview.setViewport(this.d.view.viewport);
  }

  /** Whether the simulation's detector has the measured image's size (else each view keeps
   * its own zoom: the simulation of the file's detector is not rendered yet). */
  private sameDetector() {
    const img = this.d.view.image;
    return !!img && !!this.info && img.w * img.scale === this.info.width && img.h * img.scale === this.info.height;
  }

  /** The simulation's geometry when its detector is the measured image's (full resolution). */
  private matchingGeometry() {
    const img = this.d.view.image;
    const g = this.d.view.geometry;
    if (!this.info || !img || !g || img.scale !== 1) return null;
    return img.w === this.info.width && img.h === this.info.height ? g : null;
  }

  private simChanged() {
    if (!this.info) return;
    const g = this.matchingGeometry();
    if (g && this.mview.geometry !== g) this.mview.setImage(this.info.pixels, this.info.width, this.info.height, g);
    if (this.mode === 'diff') this.recolour();
    if (this.sameDetector()) this.mview.setViewport(this.d.view.viewport);
    this.tags.sim.textContent = this.sameDetector() ? 'simulated' : 'simulated: not yet the file\'s detector (rendering)';
  }

  /** The simulated value at detector pixel (f, s), when the two detectors have one size. */
  private simValueAt(f: number, s: number): number | null {
    const img = this.d.view.image;
    if (!img || !this.info || img.w * img.scale !== this.info.width || img.h * img.scale !== this.info.height) return null;
    return img.data[Math.floor(s / img.scale) * img.w + Math.floor(f / img.scale)];
  }

  private measuredValueAt(f: number, s: number): number | null {
    const i = this.info;
    if (!i || f < 0 || s < 0 || f >= i.width || s >= i.height) return null;
    return i.pixels[s * i.width + f];
  }

  /** Colours of the measured view: the store's map and scaling; levels its own or the
   * simulation's; the difference on a linear scale symmetric about 0. */
  private recolour() {
    if (!this.info) return;
    const v = this.d.store.view.peek();
    const base = { cmap: v.cmap, scaling: v.scaling, contrast: v.contrast, min: v.min, max: v.max, rings: v.rings, beamc: v.beamc };
    if (this.mode === 'diff') {
      const img = this.d.view.image;
      const i = this.info;
      if (!img || img.w * img.scale !== i.width || img.h * img.scale !== i.height) {
        this.note(`The difference needs one detector: the simulation is ${img ? `${img.w * img.scale}×${img.h * img.scale}` : 'not rendered yet'}, the file ${i.width}×${i.height} (Use the file's geometry).`);
        return;
      }
      const k = simScale(i.pixels, i.width, i.height, img.data, img.w, img.scale);
      const diff = difference(i.pixels, i.width, i.height, img.data, img.w, img.scale, k);
      let lim = 0;
      const step = Math.max(1, Math.floor(diff.length / 200000));
      const sample: number[] = [];
      for (let j = 0; j < diff.length; j += step) sample.push(Math.abs(diff[j]));
      sample.sort((a, b) => a - b);
      lim = sample[Math.floor(sample.length * 0.995)] || 1;
      this.mview.setImage(diff, i.width, i.height, this.mview.geometry);
      this.mview.update({ ...base, cmap: 'grey', scaling: 'linear', min: -lim, max: lim });
      this.q('.mnote').dataset.k = String(k);
      return;
    }
    if (this.mview.image?.data !== this.info.pixels) this.mview.setImage(this.info.pixels, this.info.width, this.info.height, this.mview.geometry);
    if (this.sharedLevels) {
      const [lo, hi] = this.d.view.imageSize.levels;
      this.mview.update({ ...base, min: lo, max: hi });
    } else this.mview.update(base);
  }

  /** What is on the image for the current arguments, predicted in the measured-image worker
   * (the crate's `PredictOptions::on_image`: any cell size). The latest request wins. */
  private async requestSpots() {
    if (!this.info || !this.spotsOn) return;
    const args = this.d.store.args.peek().args;
    const files: Record<string, Uint8Array> = {};
    for (const [n, b] of this.d.store.files.peek()) files[n] = b;
    const key = `${args.join('\u0000')}\u0001${[...this.d.store.files.peek().keys()].join(',')}`;
    if (key === this.predictedKey) return;
    this.predictedKey = key;
    const seq = ++this.predictSeq;
    const t0 = performance.now();
    const r = await this.worker_().call('predict', { args, files }).then((prediction) => ({ prediction, error: null }), (error: Error) => ({ prediction: null, error }));
    if (seq !== this.predictSeq) return;
    if (r.error) {
      this.prediction = null;
      this.predictMs = null;
      this.q('.mnote').dataset.predict = r.error.message;
    } else {
      this.prediction = fromPrediction(r.prediction as CratePrediction);
      this.predictMs = performance.now() - t0;
      delete this.q('.mnote').dataset.predict;
    }
    this.mview.draw();
  }

  /** Round trip of the last prediction of the spots (ms), and how many are in condition. */
  predictMs: number | null = null;
  get spotCount(): number {
    const t = this.prediction?.reflections;
    if (!t) return 0;
    let n = 0;
    for (let i = 0; i < t.count; i++) if (t.inCondition?.[i] && Number.isFinite(t.fast?.[i] ?? NaN)) n++;
    return n;
  }

  /** Predicted spots in the diffraction condition, as small rings on the measured image. */
  private drawSpots(ctx: CanvasRenderingContext2D) {
    const t = this.prediction?.reflections;
    if (!t || !this.spotsOn || !t.fast || !t.slow || this.mode === 'diff') return;
    const light = this.mview.settings.cmap === 'inverted-grey';
    ctx.strokeStyle = light ? 'rgba(0,120,60,.9)' : 'rgba(80,255,140,.9)';
    ctx.lineWidth = 1.2;
    const W = this.mview.canvas.clientWidth, H = this.mview.canvas.clientHeight;
    const r = Math.max(3, Math.min(8, 4 * this.mview.viewport.zoom));
    ctx.beginPath();
    let n = 0;
    for (let i = 0; i < t.count && n < 20000; i++) {
      if (!t.inCondition?.[i]) continue;
      const [x, y] = this.mview.fromDetector(t.fast[i], t.slow[i]);
      if (!(x > -r && y > -r && x < W + r && y < H + r)) continue;
      ctx.moveTo(x + r, y);
      ctx.arc(x, y, r, 0, 2 * Math.PI);
      n++;
    }
    ctx.stroke();
  }

  /** Both values at the pointer, on whichever view it is. */
  private readout(r: Readout | null, on: 'sim' | 'measured') {
    const el = this.q('.mread');
    if (!this.info) return;
    if (!r) {
      el.textContent = '';
      return;
    }
    const m = this.measuredValueAt(r.f, r.s);
    const s = this.simValueAt(r.f, r.s);
    // d, 2θ and hkl: the status bar's readout (the crate's geometry at this pixel)
    const mm = m === null ? 'outside' : m < 0 ? 'flagged (−1)' : fmt(m);
    el.textContent = `pixel (${r.f}, ${r.s})  measured ${mm}  ·  simulated ${s === null ? '—' : fmt(s)}  (pointer on the ${on === 'measured' ? 'measured' : 'simulated'} image)`;
  }
}

export function installMeasured(d: MeasuredDeps): MeasuredCompare {
  return new MeasuredCompare(d);
}
