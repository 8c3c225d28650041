// The front end's state, in one place: the model parameters, the view settings, the one set of
// defaults, the presets, the URL codec and the <nanobragg-view> attribute codec; and what the
// page is about: the image shown (`shown`, with whether it is of the current settings) and the
// work Cancel stops (`tasks`, one cancellable task each). The app (main.ts and its panels) and
// the element (embed.ts) both hold a `Store`; everything else subscribes to its signals
// (@preact/signals-core) instead of being called by hand after each change.
import { batch, computed, signal, type ReadonlySignal, type Signal } from '@preact/signals-core';
import { PARAMS, PARAM_BY_KEY, type ModelState, type ParamDef } from './params';
import { asBackend, buildArgs, validate, type Backend, type Precision } from './args';
import { BUNDLED_MODEL } from './layers';
import type { Geometry, MeasuredInfo } from './protocol';

export type { ModelState } from './params';
/** 'diverging' (blue, white, red: signed images such as the derivative view's) is not offered
 * for the image itself (`COLOUR_MAPS`). */
export type ColourMap = 'inverted-grey' | 'grey' | 'viridis' | 'inferno' | 'diverging';
export type Scaling = 'linear' | 'sqrt' | 'log';
export type Theme = 'auto' | 'light' | 'dark';

/** How the image is shown and where it is rendered (everything that is not a model flag). */
export interface ViewSettings {
  backend: Backend;
  precision: Precision;
  cmap: ColourMap;
  scaling: Scaling;
  /** 0..100: white point = max / 10^(contrast/20) (when no explicit levels). */
  contrast: number;
  /** Explicit black and white levels in photons/pixel; null = automatic. */
  min: number | null;
  max: number | null;
  rings: boolean;
  beamc: boolean;
  /** hkl labels on the strongest predicted spots (spots.ts). */
  labels: boolean;
  theme: Theme;
}

export const COLOUR_MAPS: { value: ColourMap; label: string }[] = [
  { value: 'inverted-grey', label: 'Inverted grey' },
  { value: 'grey', label: 'Grey' },
  { value: 'viridis', label: 'Viridis (perceptual)' },
  { value: 'inferno', label: 'Inferno (perceptual)' },
];

// ---- the one set of defaults ------------------------------------------------------------------

export interface Preset {
  id: string;
  label: string;
  state: ModelState;
  /** One or two sentences shown on the page: what to look at (teaching presets). */
  note?: string;
  /** View settings the lesson needs (applied when the preset is chosen; the URL's win). */
  view?: Partial<ViewSettings>;
}

export const PRESETS: Preset[] = [
  {
    id: 'cubic', label: 'Simple cubic (teaching)',
    state: { cell: '100 100 100 90 90 90', lambda: '6.2', N: '10', default_F: '100', distance: '100', detpixels: '512', pixel: '0.2', shape: 'gauss', oversample: '1' },
    note: 'A still of a 100 Å cubic crystal: only the lattice points that touch the Ewald sphere give spots, so they lie on rings (Laue zones) around the beam. Shift+drag on the image turns the crystal: watch the rings move.',
  },
  {
    id: 'protein', label: 'Protein-sized cell with mosaicity',
    state: {
      cell: '79 79 38 90 90 90', lambda: '1.0', N: '12', default_F: '100', distance: '120', detpixels: '512', pixel: '0.3',
      misset: '10 25 5', mosaic: '0.3', mosaic_domains: '12', oversample: '1', shape: 'gauss',
    },
    note: 'A protein-sized cell (79 × 79 × 38 Å): its reciprocal lattice is dense, so hundreds of small spots crowd the detector, in bands where the lattice planes cut the Ewald sphere. Compare the small-molecule preset.',
  },
  {
    id: 'triclinic', label: 'Small-molecule triclinic',
    state: {
      cell: '5.8 7.1 9.3 81 77 68', lambda: '0.71', N: '25', default_F: '100', distance: '50', detpixels: '512', pixel: '0.3',
      misset: '12 -35 50', oversample: '2', shape: 'round',
    },
    // on a square-root scale the round crystal's faint outer fringes stay out of the way
    view: { scaling: 'sqrt' },
    note: 'A small-molecule cell (5.8 × 7.1 × 9.3 Å): its reciprocal lattice is sparse, so the spots lie far apart even with a 0.71 Å beam and the detector at 50 mm. Compare the protein preset, whose spots are ten times closer.',
  },
  {
    id: 'cell-size', label: 'Teach: cell size vs spot spacing',
    state: { cell: '200 200 200 90 90 90', lambda: '6.2', N: '10', default_F: '100', distance: '100', detpixels: '512', pixel: '0.2', shape: 'gauss', oversample: '1' },
    note: 'The simple-cubic crystal with a cell twice as large (200 Å): the spots are twice as close together, because their spacing on the detector is about λ·distance / a. Type 100 100 100 90 90 90 in the cell field to compare.',
  },
  {
    id: 'wavelength', label: 'Teach: wavelength vs Ewald sphere',
    state: { cell: '100 100 100 90 90 90', lambda: '2', N: '10', default_F: '100', distance: '300', detpixels: '512', pixel: '0.2', shape: 'gauss', oversample: '1' },
    note: 'At 2 Å the Ewald sphere (radius 1/λ) is three times larger than at 6.2 Å and flatter where it meets the lattice: a wide patch of the central lattice plane touches it (the square of spots) and the next layer\'s ring moves out to the corners. Open the 3D view (key 3) and drag the Wavelength slider (under Beam) up to 6 Å to watch the sphere shrink and curl away from the plane.',
  },
  {
    id: 'crystal-size', label: 'Teach: crystal size vs spot size',
    state: {
      cell: '100 100 100 90 90 90', lambda: '6.2', N: '6', default_F: '100', distance: '150', detpixels: '512', pixel: '0.1', shape: 'round', oversample: '1',
      misset: '5 3 0', phi: '0', osc: '30', phisteps: '60',
    },
    // a round crystal: its spot width is 1/N of the spot spacing (upstream's Gaussian shape
    // scales as 1/N³ and with the cell: no lesson); a square-root scale shows the spots' size
    view: { scaling: 'sqrt' },
    note: 'A tiny crystal, 6 cells across, turned 30° during the exposure so that the lattice points crossing the Ewald sphere record their spots. Each spot is broad: its width is about 1/N of the spacing between spots, and points near the sphere light up too. Drag the "Cells per axis N" slider up to 20: the spots shrink to a third of their size and only the points that cross the sphere remain.',
  },
  {
    id: 'mosaic', label: 'Teach: mosaicity',
    state: {
      cell: '100 100 100 90 90 90', lambda: '6.2', N: '10', default_F: '100', distance: '100', detpixels: '512', pixel: '0.2', shape: 'gauss', oversample: '1',
      misset: '5 3 0', mosaic: '2', mosaic_domains: '20',
    },
    note: 'A mosaic crystal: 20 blocks misaligned by up to about 2° each bring their own lattice points onto the sphere, so each spot splits and smears into a short arc around the beam. Slide "Mosaic spread" to 0 to see the perfect crystal.',
  },
  {
    id: 'rotation', label: 'Teach: rotation photograph',
    state: {
      cell: '100 100 100 90 90 90', lambda: '6.2', N: '10', default_F: '100', distance: '100', detpixels: '512', pixel: '0.2', shape: 'gauss', oversample: '1',
      misset: '5 3 0', phi: '0', osc: '4', phisteps: '10',
    },
    note: 'A rotation photograph: the crystal turns 4° about the spindle during the exposure, so every lattice point that crosses the sphere records a spot and the rings fill in. Press ▶ Play φ above the image to sweep on, or choose stills to compare.',
  },
  {
    id: 'protein-still', label: 'Protein still (realistic)',
    state: {
      pdb: BUNDLED_MODEL.name, detector: 'eiger2-4m', distance: '120', lambda: '1', xtal_size: '0.001', mosaic: '0.3', mosaic_domains: '12',
      misset_seed: '3', misset: 'random', flux: '1e12', exposure: '0.5', beamsize: '0.001', oversample: '1',
      water: '20', air: '10', detnoise: '1', gain: '1', seed: '1',
    },
    // sparse spots a few times above a noisy background: a square-root scale (a log scale turns
    // the noise grey) with the automatic levels of a background image (view.ts `levels`)
    view: { scaling: 'sqrt' },
    note: 'A real still: a 1 µm crystal of PDB 1PFE in a 1 µm beam on an EIGER2 X 4M, over the water and air scattering, with the photon-counting noise. Its structure factors are computed from the atoms once, then cached. Its spots are small (a micro-crystal in a parallel beam: one to three pixels each), dark over the light noise: zoom in (wheel or pinch on the image) to see their shape; the readout is in ADU.',
  },
];

/** The model a page starts from; URL parameters and element attributes apply on top of it. */
export const DEFAULT_MODEL: Readonly<ModelState> = PRESETS[0].state;

export const VIEW_DEFAULTS: Readonly<ViewSettings> = {
  backend: 'auto', precision: 'f32', cmap: 'inverted-grey', scaling: 'log', contrast: 30, min: null, max: null,
  rings: true, beamc: true, labels: false, theme: 'auto',
};

export const VIEW_KEYS = Object.keys(VIEW_DEFAULTS) as (keyof ViewSettings)[];

/** Where a slider rests when its field is empty (upstream's defaults). */
export const SLIDER_REST: Record<string, number> = { lambda: 1, distance: 100, N: 1, mosaic_domains: 1, oversample: 1 };

export function presetOf(state: ModelState): Preset | undefined {
  return PRESETS.find((p) => sameModel(p.state, state));
}

export function sameModel(a: ModelState, b: ModelState): boolean {
  for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) if ((a[k] ?? '').trim() !== (b[k] ?? '').trim()) return false;
  return true;
}

// ---- view settings from strings -------------------------------------------------------------

const CMAPS = COLOUR_MAPS.map((c) => c.value) as string[];

/** One view setting from its string form (URL or attribute); an error names `name`. */
export function parseViewValue(key: keyof ViewSettings, v: string, name: string = key): { value?: unknown; error?: string } {
  const t = v.trim();
  const bad = (what: string) => ({ error: `${name}: "${v}" is not ${what}` });
  switch (key) {
    case 'backend':
      return ['auto', 'gpu', 'webgpu', 'cpu'].includes(t) ? { value: asBackend(t) } : bad('auto, webgpu or cpu');
    case 'precision':
      return t === 'f32' || t === 'f64' ? { value: t } : bad('f32 or f64');
    case 'cmap':
      return CMAPS.includes(t) ? { value: t } : bad(`one of ${CMAPS.join(', ')}`);
    case 'scaling':
      return ['log', 'sqrt', 'linear'].includes(t) ? { value: t } : bad('log, sqrt or linear');
    case 'theme':
      return ['auto', 'light', 'dark'].includes(t) ? { value: t } : bad('auto, light or dark');
    case 'contrast': {
      const x = Number(t);
      return t !== '' && Number.isFinite(x) && x >= 0 && x <= 100 ? { value: x } : bad('a number from 0 to 100');
    }
    case 'min':
    case 'max': {
      if (t === '' || t === 'auto') return { value: null };
      const x = Number(t);
      return Number.isFinite(x) ? { value: x } : bad('a number (photons/pixel) or auto');
    }
    case 'rings':
    case 'beamc':
    case 'labels':
      return /^(1|0|true|false|on|off|)$/i.test(t) ? { value: !/^(0|false|off)$/i.test(t) } : bad('1 or 0');
  }
}

function viewToString(key: keyof ViewSettings, v: unknown): string {
  if (typeof v === 'boolean') return v ? '1' : '0';
  if (v === null) return '';
  return String(v);
}

// ---- URL codec -----------------------------------------------------------------------------

export interface Decoded {
  model: ModelState;
  view: ViewSettings;
  /** Other parameters (embed=1, present=1, …), kept as they are. */
  rest: Record<string, string>;
  /** Values that could not be read, by key. */
  errors: Record<string, string>;
}

/**
 * URL parameters -> state. Model parameters apply on top of the default model (`?detpixels=1024`
 * is the default crystal on a 1024² detector); an empty value (`N=`) removes a default; a
 * `preset=` parameter starts from that preset instead.
 */
export function decodeUrl(q: URLSearchParams): Decoded {
  const preset = PRESETS.find((p) => p.id === q.get('preset'));
  const model: ModelState = { ...(preset?.state ?? DEFAULT_MODEL) };
  const view: ViewSettings = { ...VIEW_DEFAULTS, ...preset?.view };
  const rest: Record<string, string> = {};
  const errors: Record<string, string> = {};
  for (const [k, v] of q) {
    if (PARAM_BY_KEY.has(k)) {
      if (v.trim()) model[k] = v;
      else delete model[k];
    } else if ((VIEW_KEYS as string[]).includes(k)) {
      const r = parseViewValue(k as keyof ViewSettings, v);
      if (r.error) errors[k] = r.error;
      else (view as unknown as Record<string, unknown>)[k] = r.value;
    } else if (k !== 'preset') rest[k] = v;
  }
  return { model, view, rest, errors };
}

/** State -> URL parameters: every model value (a link reproduces the pattern even if the
 * defaults change), an empty value for a removed default, the view settings that differ from
 * their defaults, and `rest`. */
export function encodeUrl(model: ModelState, view: ViewSettings, rest: Record<string, string> = {}): string {
  const out = new URLSearchParams();
  for (const [k, v] of Object.entries(rest)) out.set(k, v);
  for (const p of PARAMS) {
    const v = (model[p.key] ?? '').trim();
    const d = (DEFAULT_MODEL[p.key] ?? '').trim();
    if (v || d) out.set(p.key, v);
  }
  for (const k of VIEW_KEYS) {
    const s = viewToString(k, view[k]);
    if (s !== viewToString(k, VIEW_DEFAULTS[k])) out.set(k, s);
  }
  // readable: spaces as '+', commas as they are
  return out.toString().replace(/%2C/g, ',');
}

/** Input files a URL's model names: a link that names them does not carry them. */
export function localFiles(model: ModelState): string[] {
  return PARAMS.filter((p) => p.kind === 'file' && (model[p.key] ?? '').trim() && !(p.key === 'pdb' && model[p.key].trim() === BUNDLED_MODEL.name)).map((p) => model[p.key].trim());
}

/** The error line for the form's input errors, and the field it is about (a click on the line
 * goes there): files the state names that the page lacks (a shared link names the sender's
 * files) by name and field; else the first erring field's own message. */
export function inputErrorLine(errs: Record<string, string>, model: ModelState, files: ReadonlyMap<string, unknown>): { text: string; key: string } | null {
  const keys = PARAMS.map((p) => p.key).filter((k) => errs[k]);
  if (!keys.length) return null;
  const missing = PARAMS.filter((p) => p.kind === 'file' && errs[p.key] && (model[p.key] ?? '').trim() && !files.has(model[p.key].trim()));
  if (missing.length) {
    // "mine.hkl as its HKL file (h k l F)": the field's label in running text (no brackets
    // inside brackets; a capital kept where the first word is an acronym or a name: CrystFEL)
    const inText = (label: string) => /^[A-Z][a-z]*\b/.test(label) ? label[0].toLowerCase() + label.slice(1) : label;
    const names = missing.map((p) => `${model[p.key].trim()} as its ${inText(p.label)}`);
    const list = names.length > 1 ? `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}` : names[0];
    return { text: `This link uses ${list}: choose or drop ${names.length > 1 ? 'them' : 'it'} in the form`, key: missing[0].key };
  }
  const p = PARAM_BY_KEY.get(keys[0])!;
  return { text: `Fix the highlighted input: ${p.label}: ${errs[keys[0]]}`, key: keys[0] };
}

// ---- <nanobragg-view> attributes -----------------------------------------------------------

/** Attribute name of a model field (HTML attributes are case-insensitive). */
export const attrName = (p: ParamDef) => p.key.toLowerCase();

export const FILE_KEYS = PARAMS.filter((p) => p.kind === 'file').map((p) => p.key);

/** Every attribute <nanobragg-view> reads (its `observedAttributes`; the npm package's
 * `NanoBraggViewAttribute`): the state's, and the element's own 3D view, zoom and derivative. */
export const ELEMENT_ATTRIBUTES = [
  ...new Set([
    ...PARAMS.map(attrName), 'args', ...VIEW_KEYS, ...FILE_KEYS.map((k) => `${k}-src`),
    'view3d', 'zoom', 'derivative',
  ]),
];

/** Element attributes -> state, on top of the defaults, with errors that name the attribute. */
export function decodeAttributes(get: (name: string) => string | null): Decoded & { extraArgs: string } {
  const model: ModelState = { ...DEFAULT_MODEL };
  const view: ViewSettings = { ...VIEW_DEFAULTS };
  const errors: Record<string, string> = {};
  for (const p of PARAMS) {
    const v = get(attrName(p));
    if (v === null) continue;
    if (v.trim() === '' && p.kind === 'bool') model[p.key] = '1';
    else if (v.trim()) model[p.key] = v;
    else delete model[p.key];
  }
  for (const k of VIEW_KEYS) {
    const v = get(k);
    if (v === null) continue;
    const r = parseViewValue(k, v, `attribute ${k}`);
    if (r.error) errors[k] = r.error;
    else (view as unknown as Record<string, unknown>)[k] = r.value;
  }
  const bad = validate(model, (p) => `attribute ${attrName(p)}`);
  return { model, view, rest: {}, errors: { ...bad, ...errors }, extraArgs: get('args') ?? '' };
}

// ---- the store --------------------------------------------------------------------------------

export type RenderMode = 'preview' | 'full';

/** What the image shown is: a full plain render, a reduced preview of one (a drag's frame), or
 * the realistic chain's still (ADU over water, air and noise). A measured image is not a kind of
 * it: it is shown beside the simulation (`Store.measured`), which a fit needs at the same time. */
export type ShownKind = 'full' | 'preview' | 'realistic';

/** The image shown and what it was rendered from. */
export interface Shown {
  kind: ShownKind;
  data: Float32Array;
  width: number;
  height: number;
  geometry: Geometry;
  /** The words rendered (the worker's, normalised: what an export of it holds). */
  args: string[];
  /** The store's words when it was asked for (`args` of `Store.args`): whether it is current. */
  words: string[];
  /** The state it shows. */
  model: ModelState;
  /** Reduction of a preview (1: full resolution). */
  scale: number;
  unit: 'photons' | 'ADU';
}

/** The image shown when it is of the current settings: its words are the store's (and, for the
 * realistic still, its whole state: the layers and detector effects are not all words). */
export function isCurrent(s: Shown | null, words: readonly string[], model: ModelState): boolean {
  if (!s || s.words.join('\n') !== words.join('\n')) return false;
  return s.kind !== 'realistic' || sameModel(s.model, model);
}

/** A cancellable piece of work the page runs (a render, the realistic chain, a fit). */
export interface Task {
  name: string;
  controller: AbortController;
}

export interface Store {
  model: Signal<ModelState>;
  view: Signal<ViewSettings>;
  /** Input files by name (the names the file fields hold). */
  files: Signal<ReadonlyMap<string, Uint8Array>>;
  /** The field the user changed last (errors attach to it), and whether the change is live
   * (a slider being dragged: previews) or final. */
  changed: Signal<{ key: string | null; mode: RenderMode }>;
  args: ReadonlySignal<{ args: string[]; origin: string[] }>;
  /** Input errors found without running the simulator. */
  inputErrors: ReadonlySignal<Record<string, string>>;
  /** The image shown (null: none yet). */
  shown: Signal<Shown | null>;
  /** `shown` when it is of the current settings (`isCurrent`), else null. */
  current: ReadonlySignal<Shown | null>;
  /** The measured image open beside the simulation (measured/), null: none. */
  measured: Signal<MeasuredInfo | null>;
  /** The work under way that Cancel stops, one task per name. */
  tasks: ReadonlySignal<ReadonlyMap<string, Task>>;
  /** Some task is under way. */
  busy: ReadonlySignal<boolean>;
  setField(key: string, value: string, mode?: RenderMode): void;
  setView(patch: Partial<ViewSettings>): void;
  setModel(model: ModelState): void;
  addFile(name: string, bytes: Uint8Array): void;
  /** The signal of task `name`: the one under way, or a new one (`onCancel` runs when it is
   * cancelled, before its signal aborts). Pass it to the client's calls: Cancel aborts them. */
  task(name: string, onCancel?: () => void): AbortSignal;
  /** Task `name` ended (only the one of `signal` when given: a later task of the name stays). */
  endTask(name: string, signal?: AbortSignal): void;
  /** Cancel every task (the Cancel button): each one's `onCancel`, then its signal aborts. */
  cancelTasks(reason?: string): void;
}

export function createStore(model: ModelState = { ...DEFAULT_MODEL }, view: ViewSettings = { ...VIEW_DEFAULTS }): Store {
  const tasks = signal<ReadonlyMap<string, Task>>(new Map());
  const cancelHooks = new WeakMap<Task, () => void>();
  const s: Store = {
    model: signal({ ...model }),
    view: signal({ ...view }),
    files: signal(new Map()),
    changed: signal({ key: null, mode: 'full' }),
    args: computed(() => buildArgs(s.model.value)),
    inputErrors: computed(() => {
      const errs = validate(s.model.value);
      for (const p of PARAMS) {
        const v = s.model.value[p.key];
        if (p.kind === 'file' && v && !s.files.value.has(v) && !(p.key === 'pdb' && v === BUNDLED_MODEL.name)) errs[p.key] = `${p.flag} ${v}: please choose or drop this file`;
      }
      return errs;
    }),
    shown: signal(null),
    current: computed(() => (isCurrent(s.shown.value, s.args.value.args, s.model.value) ? s.shown.value : null)),
    measured: signal(null),
    tasks,
    busy: computed(() => tasks.value.size > 0),
    task(name, onCancel) {
      const have = tasks.peek().get(name);
      if (have && !have.controller.signal.aborted) {
        if (onCancel) cancelHooks.set(have, onCancel);
        return have.controller.signal;
      }
      const t: Task = { name, controller: new AbortController() };
      if (onCancel) cancelHooks.set(t, onCancel);
      tasks.value = new Map(tasks.peek()).set(name, t);
      return t.controller.signal;
    },
    endTask(name, signal) {
      const have = tasks.peek().get(name);
      if (!have || (signal && have.controller.signal !== signal)) return;
      const next = new Map(tasks.peek());
      next.delete(name);
      tasks.value = next;
    },
    cancelTasks(reason = 'cancelled') {
      const all = [...tasks.peek().values()];
      tasks.value = new Map();
      for (const t of all) {
        cancelHooks.get(t)?.();
        t.controller.abort(reason);
      }
    },
    setField(key, value, mode = 'full') {
      batch(() => {
        s.changed.value = { key, mode };
        const next = { ...s.model.value };
        if (value.trim()) next[key] = value.trim();
        else delete next[key];
        s.model.value = next;
      });
    },
    setView(patch) {
      s.view.value = { ...s.view.value, ...patch };
    },
    setModel(m) {
      batch(() => {
        s.changed.value = { key: null, mode: 'full' };
        s.model.value = { ...m };
      });
    },
    addFile(name, bytes) {
      const next = new Map(s.files.value);
      next.set(name, bytes);
      s.files.value = next;
    },
  };
  return s;
}
