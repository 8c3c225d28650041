// The app page: parameter form, presets, live rendering with frame pacing, status, downloads,
// presentation mode and themes. State lives in a Store (state.ts); the page's parts subscribe to
// its signals. `window.nanobragg.simulate(args, {backend, files})` is the scripting / test API.
import { computed, effect } from '@preact/signals-core';
import { NanoBraggClient, type Prediction, type SimulateOptions, type SimulateResult } from './client';
import { GROUPS, PARAMS, PARAM_BY_KEY, type ParamDef } from './params';
import { blameField, previewArgs, previewFactor } from './args';
import {
  COLOUR_MAPS, PRESETS, SLIDER_REST, createStore, decodeUrl, encodeUrl, localFiles, parseViewValue, presetOf,
  type ModelState, type RenderMode, type Theme, type ViewSettings,
} from './state';
import { ImageView } from './view';
import { downloadName, routeFile } from './files';
import type { HklSummary } from './protocol';
import { Teach3D } from './panel3d';
import { installTeaching, type Teach } from './teach';
import { initRealistic } from './realistic';

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;
const initial = decodeUrl(new URL(location.href).searchParams);
const rest = initial.rest;
const embed = rest.embed === '1';
document.body.classList.toggle('embed', embed);

const store = createStore(initial.model, initial.view);
const client = new NanoBraggClient();
const view = new ImageView($('canvas-host'));

/** Frames shown so far, the last one and whether it was a preview. */
let last: SimulateResult | null = null;
let lastWasPreview = false;
let renderCount = 0;
/** Field errors from the simulator (input errors come from the store). */
let simErrors: Record<string, string> = {};

// ---- API for scripts and tests ----------------------------------------------------------
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
    };
  }
}
window.nanobragg = {
  simulate: (args, opts = {}) => client.simulate(args, { channel: 'api', ...opts }),
  predict: (args, opts = {}) => client.predict(args, opts),
  ready: client.ready,
  client,
  lastRender: () => ({ result: last, preview: lastWasPreview, count: renderCount }),
  state: () => ({ ...store.model.value }),
  view,
  teach3d: null as unknown as Teach3D, // set below
};

// ---- form -------------------------------------------------------------------------------
const form = $('params');
const inputs = new Map<string, HTMLInputElement | HTMLSelectElement>();
const fieldId = (key: string) => `f-${key}`;

function buildForm() {
  for (const g of GROUPS) {
    const det = document.createElement('details');
    det.className = 'group';
    det.open = g.id !== 'noise' && g.id !== 'advanced';
    det.innerHTML = `<summary>${g.label}</summary>`;
    for (const p of PARAMS.filter((p) => p.group === g.id)) det.appendChild(buildField(p));
    if (g.id === 'advanced') det.appendChild(buildCommandLine());
    form.appendChild(det);
  }
}

function buildField(p: ParamDef): HTMLElement {
  const row = document.createElement('div');
  row.className = p.kind === 'vec' ? 'field vec' : 'field';
  row.dataset.key = p.key;
  const label = document.createElement('label');
  label.htmlFor = fieldId(p.key);
  label.innerHTML = `${p.label}${p.unit ? ` <span class="unit">(${p.unit})</span>` : ''}`;
  row.appendChild(label);
  let input: HTMLInputElement | HTMLSelectElement;
  if (p.kind === 'choice') {
    const sel = document.createElement('select');
    for (const c of p.choices!) sel.add(new Option(c.label, c.value));
    input = sel;
    sel.addEventListener('change', () => store.setField(p.key, sel.value));
  } else if (p.kind === 'bool') {
    const cb = document.createElement('input');
    cb.type = 'checkbox';
    input = cb;
    cb.addEventListener('change', () => store.setField(p.key, cb.checked ? '1' : ''));
  } else if (p.kind === 'file') {
    input = buildFileInput(p, row);
  } else {
    const t = document.createElement('input');
    t.type = 'text';
    t.inputMode = p.kind === 'vec' || p.kind === 'text' ? 'text' : 'decimal';
    t.spellcheck = false;
    if (p.placeholder) t.placeholder = p.placeholder;
    input = t;
    t.addEventListener('change', () => store.setField(p.key, t.value));
  }
  input.id = fieldId(p.key);
  input.name = p.key;
  if (p.kind !== 'file') row.appendChild(input);
  inputs.set(p.key, input);
  if (p.slider) {
    const [min, max, step] = p.slider;
    const r = document.createElement('input');
    r.type = 'range';
    r.min = String(min); r.max = String(max); r.step = String(step);
    r.id = `${fieldId(p.key)}-slider`;
    r.setAttribute('aria-label', `${p.label} slider`);
    r.addEventListener('input', () => store.setField(p.key, r.value, 'preview'));
    r.addEventListener('change', () => store.setField(p.key, r.value, 'full'));
    row.appendChild(r);
  }
  if (p.help) {
    const h = document.createElement('div');
    h.className = 'help';
    h.textContent = p.help;
    row.appendChild(h);
  }
  if (p.key === 'hkl') {
    const s = document.createElement('div');
    s.className = 'help';
    s.id = 'hkl-summary';
    row.appendChild(s);
  }
  const msg = document.createElement('div');
  msg.className = 'msg';
  msg.id = `${fieldId(p.key)}-msg`;
  msg.setAttribute('role', 'alert');
  row.appendChild(msg);
  input.setAttribute('aria-describedby', msg.id);
  return row;
}

function buildFileInput(p: ParamDef, row: HTMLElement): HTMLInputElement {
  const box = document.createElement('div');
  box.className = 'file';
  const inp = document.createElement('input');
  inp.type = 'file';
  inp.id = `${fieldId(p.key)}-file`;
  inp.hidden = true;
  const pick = document.createElement('button');
  pick.type = 'button';
  pick.textContent = 'Choose…';
  pick.addEventListener('click', () => inp.click());
  const name = document.createElement('span');
  name.className = 'file-name';
  name.id = `${fieldId(p.key)}-name`;
  const clear = document.createElement('button');
  clear.type = 'button';
  clear.textContent = '×';
  clear.title = 'Remove';
  clear.setAttribute('aria-label', `Remove ${p.label}`);
  clear.addEventListener('click', () => store.setField(p.key, ''));
  inp.addEventListener('change', async () => {
    const f = inp.files?.[0];
    if (f) await loadFile(p.key, f);
    inp.value = '';
  });
  // A hidden input holds the file name (the URL value).
  const holder = document.createElement('input');
  holder.type = 'hidden';
  box.append(pick, name, clear, inp, holder);
  row.appendChild(box);
  pick.id = fieldId(p.key);
  row.addEventListener('dragover', (e) => { e.preventDefault(); e.stopPropagation(); row.classList.add('drop'); });
  row.addEventListener('dragleave', () => row.classList.remove('drop'));
  row.addEventListener('drop', async (e) => {
    e.preventDefault(); e.stopPropagation();
    row.classList.remove('drop');
    const f = e.dataTransfer?.files[0];
    if (f) await loadFile(p.key, f);
  });
  return holder;
}

async function loadFile(key: string, f: File) {
  store.addFile(f.name, new Uint8Array(await f.arrayBuffer()));
  store.setField(key, f.name);
}

function buildCommandLine(): HTMLElement {
  const row = document.createElement('div');
  row.className = 'field';
  row.innerHTML = `<label for="cmdline">Command line (read-only)</label><div></div>`;
  const ta = document.createElement('textarea');
  ta.id = 'cmdline';
  ta.readOnly = true;
  ta.rows = 4;
  row.appendChild(ta);
  return row;
}

const presetSel = $<HTMLSelectElement>('preset');
for (const p of PRESETS) presetSel.add(new Option(p.label, p.id));
buildForm();

// The form follows the model (only the fields whose value changed are touched).
let shownModel: ModelState | null = null;
let shownFiles: ReadonlyMap<string, Uint8Array> | null = null;
effect(() => {
  const model = store.model.value;
  const files = store.files.value;
  for (const p of PARAMS) {
    const v = model[p.key] ?? '';
    if (shownModel && shownFiles === files && (shownModel[p.key] ?? '') === v) continue;
    const el = inputs.get(p.key)!;
    if (p.kind === 'bool') (el as HTMLInputElement).checked = v !== '' && v !== '0';
    else if (el.value !== v) el.value = v;
    if (p.kind === 'file') $(`${fieldId(p.key)}-name`).textContent = v ? v + (files.has(v) ? '' : ' (missing)') : 'none';
    const slider = document.getElementById(`${fieldId(p.key)}-slider`) as HTMLInputElement | null;
    if (slider && document.activeElement !== slider) {
      const lo = +slider.min, hi = +slider.max;
      slider.value = v && !isNaN(+v) ? v : String(SLIDER_REST[p.key] ?? (lo < 0 && hi > 0 ? 0 : lo));
    }
  }
  shownModel = model;
  shownFiles = files;
  ($('preset') as HTMLSelectElement).value = presetOf(model)?.id ?? '';
});
effect(() => {
  const cmd = document.getElementById('cmdline') as HTMLTextAreaElement | null;
  if (cmd) cmd.value = 'nanoBragg ' + store.args.value.args.map((w) => (/[\s"']/.test(w) || !w ? `"${w}"` : w)).join(' ');
});

// Field errors: the store's input errors, then the simulator's.
function showFieldErrors() {
  const errs = { ...simErrors, ...store.inputErrors.value };
  for (const p of PARAMS) {
    const row = form.querySelector<HTMLElement>(`.field[data-key="${p.key}"]`)!;
    const msg = errs[p.key] ?? '';
    row.classList.toggle('bad', !!msg);
    $(`${fieldId(p.key)}-msg`).textContent = msg;
    inputs.get(p.key)!.setAttribute('aria-invalid', msg ? 'true' : 'false');
  }
}

// ---- view settings ------------------------------------------------------------------------
const cmapSel = $<HTMLSelectElement>('cmap');
for (const c of COLOUR_MAPS) cmapSel.add(new Option(c.label, c.value));
const backendSel = $<HTMLSelectElement>('backend');
const precisionSel = $<HTMLSelectElement>('precision');
const scalingSel = $<HTMLSelectElement>('scaling');
const contrast = $<HTMLInputElement>('contrast');
const levelMin = $<HTMLInputElement>('level-min');
const levelMax = $<HTMLInputElement>('level-max');
const ringsCb = $<HTMLInputElement>('rings');
const beamCb = $<HTMLInputElement>('beamc');
const labelsCb = $<HTMLInputElement>('labels');

backendSel.addEventListener('change', () => store.setView({ backend: backendSel.value as ViewSettings['backend'] }));
precisionSel.addEventListener('change', () => store.setView({ precision: precisionSel.value as ViewSettings['precision'] }));
cmapSel.addEventListener('change', () => store.setView({ cmap: cmapSel.value as ViewSettings['cmap'] }));
scalingSel.addEventListener('change', () => store.setView({ scaling: scalingSel.value as ViewSettings['scaling'] }));
contrast.addEventListener('input', () => store.setView({ contrast: +contrast.value }));
ringsCb.addEventListener('change', () => store.setView({ rings: ringsCb.checked }));
beamCb.addEventListener('change', () => store.setView({ beamc: beamCb.checked }));
labelsCb.addEventListener('change', () => store.setView({ labels: labelsCb.checked }));
for (const [el, key] of [[levelMin, 'min'], [levelMax, 'max']] as const) {
  el.addEventListener('change', () => {
    const r = parseViewValue(key, el.value, key === 'min' ? 'black level' : 'white level');
    el.setCustomValidity(r.error ?? '');
    el.title = r.error ?? '';
    el.classList.toggle('bad', !!r.error);
    if (!r.error) store.setView({ [key]: r.value as number | null });
  });
}

effect(() => {
  const v = store.view.value;
  backendSel.value = v.backend;
  precisionSel.value = v.precision;
  cmapSel.value = v.cmap;
  scalingSel.value = v.scaling;
  contrast.value = String(v.contrast);
  $('contrast-value').textContent = String(v.contrast);
  contrast.disabled = v.max !== null;
  if (document.activeElement !== levelMin) levelMin.value = v.min === null ? '' : String(v.min);
  if (document.activeElement !== levelMax) levelMax.value = v.max === null ? '' : String(v.max);
  ringsCb.checked = v.rings;
  beamCb.checked = v.beamc;
  labelsCb.checked = v.labels;
  view.update({ cmap: v.cmap, scaling: v.scaling, contrast: v.contrast, min: v.min, max: v.max, rings: v.rings, beamc: v.beamc });
  showLevels();
  applyTheme(v.theme);
});

function showLevels() {
  if (!view.hasImage) return;
  const [lo, hi] = view.imageSize.levels;
  // greyed, the automatic levels; the 7-character box showed "auto (10" of "auto (1000)"
  levelMax.placeholder = String(fmtNum(hi));
  levelMin.placeholder = String(fmtNum(lo));
}

$('fit').addEventListener('click', () => view.fit());

// The URL follows the state (at most a few times a second: browsers throttle history updates).
let urlTimer = 0;
function writeUrl() {
  urlTimer = 0;
  const q = encodeUrl(store.model.peek(), store.view.peek(), rest);
  history.replaceState(null, '', `${location.pathname}?${q}`);
  ($('open-full') as HTMLAnchorElement).href = `${location.pathname}?${encodeUrl(store.model.peek(), store.view.peek(), {})}`;
}
effect(() => {
  void store.model.value;
  void store.view.value;
  if (!urlTimer) urlTimer = window.setTimeout(writeUrl, 200);
});
writeUrl();

// ---- theme, presentation, full screen, copy link -------------------------------------------------
const THEMES: Theme[] = ['auto', 'dark', 'light'];
function applyTheme(t: Theme) {
  const was = document.documentElement.dataset.theme ?? 'auto';
  if (t === 'auto') delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = t;
  const label = `Colour theme: ${t}${t === 'auto' ? ' (follows the system)' : ''}`;
  $('theme').title = label;
  $('theme').setAttribute('aria-label', label);
  $('theme').dataset.theme = t;
  if (was !== t) view.draw(); // the image's surround follows the theme
}
matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => view.draw());
$('theme').addEventListener('click', () => {
  const t = THEMES[(THEMES.indexOf(store.view.value.theme) + 1) % THEMES.length];
  store.setView({ theme: t });
});

function setPresent(on: boolean) {
  document.body.classList.toggle('present', on);
  $('present').setAttribute('aria-pressed', String(on));
  view.large = on;
  if (on) rest.present = '1';
  else delete rest.present;
  store.setView({}); // rewrite the URL
  view.draw();
}
$('present').addEventListener('click', () => setPresent(!document.body.classList.contains('present')));
$('present-exit').addEventListener('click', () => setPresent(false));
function toggleFullscreen() {
  if (document.fullscreenElement) void document.exitFullscreen();
  else void document.documentElement.requestFullscreen?.().catch(() => {});
}
$('fullscreen').addEventListener('click', toggleFullscreen);
window.addEventListener('keydown', (e) => {
  const t = e.target as HTMLElement;
  if (t.closest('input, select, textarea') || e.ctrlKey || e.metaKey || e.altKey) return;
  if (e.key === 'p' || e.key === 'P') setPresent(!document.body.classList.contains('present'));
  else if (e.key === 'f' || e.key === 'F') toggleFullscreen();
  else if (e.key === 'Escape' && document.body.classList.contains('present') && !document.fullscreenElement) setPresent(false);
});
if (rest.present === '1') setPresent(true);

$('copylink').addEventListener('click', async () => {
  clearTimeout(urlTimer);
  writeUrl();
  const url = location.href;
  const named = localFiles(store.model.value);
  let copied = true;
  try {
    await navigator.clipboard.writeText(url);
  } catch {
    copied = false;
  }
  const warn = named.length
    ? ` — note: it names local file${named.length > 1 ? 's' : ''} (${named.join(', ')}) that the link does not carry; whoever opens it must drop ${named.length > 1 ? 'them' : 'it'} in.`
    : '';
  showNotice(copied ? `Link copied${warn}` : `Copy this link: ${url}${warn}`, named.length ? 'warn' : 'info');
});

// ---- notices and errors ------------------------------------------------------------------------------
const errorBox = $('error');
const noticeBox = $('notice');
const noticeText = $('notice-text');
const closedNotices = new Set<string>();
function showNotice(text: string, kind: 'info' | 'warn' = 'info') {
  const show = !!text && !closedNotices.has(text) && !embed;
  noticeBox.hidden = !show;
  noticeBox.dataset.kind = kind;
  noticeText.textContent = text;
}
$('notice-close').addEventListener('click', () => {
  closedNotices.add(noticeText.textContent ?? '');
  noticeBox.hidden = true;
});
function showError(msg: string) {
  errorBox.hidden = !msg;
  errorBox.textContent = msg;
}

// ---- 3D view and predicted spots (panel3d.ts) ------------------------------------------------
const teach = new Teach3D({
  client, image: view, stage: $('stage'), styleRoot: document,
  misset: () => store.model.peek().misset ?? '',
  phi: () => Number(store.model.peek().phi) || 0,
  setMisset: (v, final) => store.setField('misset', v, final ? 'full' : 'preview'),
  onOpenChange: (open) => set3d(open),
});
window.nanobragg.teach3d = teach;
const dark = matchMedia('(prefers-color-scheme: dark)');
const theme3d = () => {
  const t = store.view.value.theme;
  teach.setTheme(t === 'auto' ? (dark.matches ? 'dark' : 'light') : t);
};
dark.addEventListener('change', theme3d);
effect(theme3d);
effect(() => teach.setLabels(store.view.value.labels));
// the prediction follows the model (one in flight, the latest wins: predictfeed.ts)
const fileIds = new WeakMap<object, number>();
let fileSeq = 0;
effect(() => {
  const built = store.args.value;
  const files = store.files.value;
  if (Object.keys(store.inputErrors.value).length) return;
  if (!fileIds.has(files)) fileIds.set(files, ++fileSeq);
  teach.update(built.args, Object.fromEntries(files), String(fileIds.get(files)), store.changed.peek().mode === 'preview');
});
function set3d(open: boolean) {
  $('view3d').setAttribute('aria-pressed', String(open));
  if (open) rest.view3d = '1';
  else delete rest.view3d;
  store.setView({}); // rewrite the URL
  if (open && !teach.isOpen) {
    teach.open().catch((e) => showNotice((e as Error).message, 'warn'));
  } else if (!open && teach.isOpen) teach.close();
}
$('view3d').addEventListener('click', () => set3d(!teach.isOpen));
window.addEventListener('keydown', (e) => {
  const t = e.target as HTMLElement;
  if (t.closest('input, select, textarea') || e.ctrlKey || e.metaKey || e.altKey || e.key !== '3') return;
  set3d(!teach.isOpen);
});
if (rest.view3d === '1') set3d(true);

// ---- presets --------------------------------------------------------------------------------
presetSel.addEventListener('change', () => {
  const p = PRESETS.find((p) => p.id === presetSel.value);
  if (p) store.setModel(p.state);
});

// ---- rendering: frame pacing ------------------------------------------------------------------------
// Each change schedules one render per animation frame. While a slider is dragged, renders are
// reduced-resolution previews sized from the measured speed, sent as live requests: the client
// keeps one in flight and coalesces the rest to the latest, so every finished frame is shown.
// The full image follows when the drag ends.
const progress = $<HTMLProgressElement>('progress');
const cancelBtn = $<HTMLButtonElement>('cancel');
const timing = $('timing');
/** Milliseconds of the last full-resolution render per backend (to size previews). */
const fullMs: Record<string, number> = {};
let fullSize = { w: 0, h: 0, pixel: 0 };
let scheduled: RenderMode | null = null;
let rafHandle = 0;
/** Frame time target while dragging: a preview's round trip (prepare, render, transfer) should
 * take at most this long, so that with the page's drawing in parallel a drag shows 30+ frames/s. */
const PREVIEW_MS = 16;

function schedule(mode: RenderMode) {
  scheduled = mode;
  if (!rafHandle) rafHandle = requestAnimationFrame(() => {
    rafHandle = 0;
    const m = scheduled!;
    scheduled = null;
    void render(m);
  });
}

// Anything the image depends on schedules a render (mode from the change that caused it); the
// view settings only through backend and precision (a colour change does not re-render).
const engine = computed(() => `${store.view.value.backend}|${store.view.value.precision}`);
let firstRun = true;
effect(() => {
  void store.model.value;
  void store.files.value;
  void engine.value;
  const mode = store.changed.peek().mode;
  if (!firstRun) view.clearReadout();
  firstRun = false;
  schedule(mode);
});

async function render(mode: RenderMode) {
  simErrors = {};
  const inputErrs = store.inputErrors.value;
  showFieldErrors();
  if (Object.keys(inputErrs).length) {
    showError(`Fix the highlighted input${view.hasImage ? '; the image shows the last good settings' : ''}.`);
    return;
  }
  const built = store.args.value;
  const changed = store.changed.peek().key;
  let args = built.args;
  let scale = 1;
  const { backend, precision } = store.view.peek();
  if (mode === 'preview' && fullSize.w) {
    const ms = fullMs[backend] ?? fullMs.any ?? 100;
    // at least 128 pixels across: smaller previews say too little
    const factor = previewFactor(ms, PREVIEW_MS, Math.max(1, Math.floor(Math.min(fullSize.w, fullSize.h) / 128)));
    const pa = previewArgs(args, fullSize.w, fullSize.h, fullSize.pixel * 1000, factor);
    if (pa) { args = pa; scale = factor; }
  }
  cancelBtn.disabled = false;
  const t0 = performance.now();
  let shownProgress = false;
  const progressTimer = setTimeout(() => { shownProgress = true; progress.classList.add('busy'); }, 150);
  try {
    const r = await client.simulate(args, {
      backend, precision, files: Object.fromEntries(store.files.value), channel: 'ui', live: mode === 'preview',
      onProgress: (p) => {
        if (Number.isNaN(p)) progress.removeAttribute('value');
        else progress.value = p;
      },
      onEstimate: (ms, b) => showNotice(`This render will take about ${fmtMs(ms)} on the ${b === 'gpu' ? 'GPU' : 'CPU'}: Cancel stops it.`, 'warn'),
    });
    last = r;
    lastWasPreview = scale > 1;
    if (!lastWasPreview) {
      fullSize = { w: r.width, h: r.height, pixel: r.geometry.pixel };
      fullMs[backend] = fullMs.any = r.timings.total;
    } else {
      // keep the estimate current while dragging: a preview is about 1/scale² of the work
      fullMs[backend] = fullMs.any = 0.5 * (fullMs[backend] ?? r.timings.total * scale * scale) + 0.5 * r.timings.total * scale * scale;
    }
    renderCount++;
    view.setImage(r.data, r.width, r.height, r.geometry, scale);
    showLevels();
    window.dispatchEvent(new CustomEvent('nanobragg-frame', {
      detail: { width: r.width, height: r.height, backend: r.backend, preview: lastWasPreview, renderMs: r.timings.render },
    }));
    if (renderCount === 1) performance.mark('nb-first-image');
    showError('');
    progress.value = 1;
    timing.textContent = `${r.width}×${r.height}${lastWasPreview ? ' preview' : ''} · ${fmtMs(r.timings.render)}`;
    timing.title = `total ${fmtMs(performance.now() - t0)} (prepare ${fmtMs(r.timings.prepare)})`;
    showBackend(r);
    if (r.hkl !== undefined) showHklSummary(r.hkl);
    if (r.notice) showNotice(r.notice, 'info');
    else if (noticeBox.dataset.kind === 'warn' && /will take/.test(noticeText.textContent ?? '')) showNotice('');
    document.body.dataset.rendered = String(renderCount);
  } catch (e) {
    const err = e as Error;
    if (err.name === 'AbortError') return;
    const key = blameField(err.message, store.model.peek(), built, changed);
    if (key) {
      simErrors = { [key]: err.message };
      showFieldErrors();
      const row = form.querySelector<HTMLElement>(`.field[data-key="${key}"]`);
      const group = row?.closest('details');
      if (group) group.open = true;
      row?.scrollIntoView({ block: 'nearest' });
    }
    showError(`${err.message}${view.hasImage ? ' (the image shows the last good settings)' : ''}`);
    document.body.dataset.error = String(Date.now());
  } finally {
    clearTimeout(progressTimer);
    if (shownProgress) progress.classList.remove('busy');
    if (!client.busy) cancelBtn.disabled = true;
  }
}

function showHklSummary(s: HklSummary | null) {
  const el = document.getElementById('hkl-summary');
  if (!el) return;
  el.textContent = s
    ? `${s.file}: ${s.reflections.toLocaleString('en')} reflections, h ${s.h[0]}…${s.h[1]}, k ${s.k[0]}…${s.k[1]}, l ${s.l[0]}…${s.l[1]}, ` +
      `resolution ${fmtNum(s.dMax)}–${fmtNum(s.dMin)} Å`
    : '';
}

function fmtMs(ms: number) {
  return ms < 1000 ? `${ms.toFixed(0)} ms` : `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 0)} s`;
}
function fmtNum(v: number) {
  if (!Number.isFinite(v)) return '∞';
  return Math.abs(v) >= 1e4 || (v !== 0 && Math.abs(v) < 1e-2) ? v.toExponential(2) : +v.toPrecision(4);
}

function showBackend(r?: SimulateResult) {
  const info = client.info;
  const label = $('backend-label');
  if (!info) return;
  const cpu = `CPU · ${info.threads} thread${info.threads === 1 ? '' : 's'}`;
  if (r?.backend === 'gpu') label.textContent = `WebGPU · ${r.adapter}`;
  else label.textContent = cpu + (info.kind === 'plain' ? ' (single-threaded module)' : '');
  label.title = `wasm ${info.buildInfo}; module ${info.kind}${info.parallelNote ? ` — ${info.parallelNote}` : ''}`;
  label.dataset.backend = r?.backend ?? '';
  label.dataset.threads = String(info.threads);
}

cancelBtn.addEventListener('click', () => {
  client.cancel('ui');
  cancelBtn.disabled = true;
  timing.textContent = 'cancelled';
  progress.value = 0;
});

// ---- readout ---------------------------------------------------------------------------------
const readout = $('readout');
const READOUT_HINT = readout.textContent ?? '';
view.onReadout = (r) => {
  if (!r) {
    readout.textContent = READOUT_HINT;
    readout.classList.add('idle');
    return;
  }
  readout.classList.remove('idle');
  const i = r.info;
  if (document.body.classList.contains('present')) {
    // on a projector: what the class asks about, large
    readout.textContent = i
      ? `d = ${isFinite(i.d) ? i.d.toFixed(2) : '∞'} Å  ·  2θ = ${i.twoTheta.toFixed(2)}°  ·  hkl (${i.nearest.join(' ')})`
      : `I = ${fmtNum(r.value)}`;
    return;
  }
  // d, 2θ and hkl first: at 1280 px the line is cut at its end (it hid the hkl)
  const px = `I = ${fmtNum(r.value)} photons  pixel (${r.f}, ${r.s})`;
  readout.textContent = i
    ? `d = ${isFinite(i.d) ? i.d.toFixed(3) : '∞'} Å  2θ = ${i.twoTheta.toFixed(3)}°  hkl ≈ (${i.nearest.join(' ')})  [${i.hkl.map((x) => x.toFixed(2)).join(', ')}]  ${px}`
    : px;
};
readout.classList.add('idle');

// ---- downloads --------------------------------------------------------------------------------
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

async function ensureFull() {
  // the worker must hold the full image of the current settings (an API render or prediction
  // may have replaced it)
  const held = client.lastRendered;
  if (lastWasPreview || !last || !held || held.join('\u0000') !== last.args.join('\u0000')) await render('full');
}

for (const [id, what] of [['dl-int', 'int'], ['dl-noise', 'noise'], ['dl-float', 'float']] as const) {
  $(id).addEventListener('click', async () => {
    await ensureFull();
    try {
      const name = downloadName(store.model.peek(), { width: last?.width ?? 0, height: last?.height ?? 0 }, what);
      save((await client.exportImage(what)) as BlobPart, name);
    } catch (e) {
      showError(`download failed: ${(e as Error).message}`);
    }
  });
}
$('dl-png').addEventListener('click', async () => {
  await ensureFull();
  save(await view.toPng(), downloadName(store.model.peek(), { width: last?.width ?? 0, height: last?.height ?? 0 }, 'png'), 'image/png');
});

// ---- teaching: orientation sliders, rotation by drag, φ player, preset notes -------------------
window.nanobragg.teach = installTeaching({
  store, view, client,
  geometry: () => last?.geometry ?? null,
  save: (blob, name) => save(blob, name, blob.type),
  png: () => $('dl-png').click(),
  name: (ext) => downloadName(store.model.peek(), { width: fullSize.w || (last?.width ?? 0), height: fullSize.h || (last?.height ?? 0) }, 'png').replace(/\.png$/, `.${ext}`),
  notice: showNotice,
});

// ---- drag and drop anywhere: routed by content ---------------------------------------------------
window.addEventListener('dragover', (e) => e.preventDefault());
window.addEventListener('drop', async (e) => {
  e.preventDefault();
  const notes: string[] = [];
  for (const f of Array.from(e.dataTransfer?.files ?? [])) {
    const bytes = new Uint8Array(await f.arrayBuffer());
    const r = routeFile(bytes);
    if (!r.key) {
      notes.push(`${f.name}: ${r.reason}; choose its field by hand`);
      continue;
    }
    store.addFile(f.name, bytes);
    store.setField(r.key, f.name);
    notes.push(`${f.name} → ${PARAM_BY_KEY.get(r.key)!.label} (${r.reason})`);
  }
  if (notes.length) showNotice(notes.join('; '), notes.some((n) => n.includes('by hand')) ? 'warn' : 'info');
});

// ---- start --------------------------------------------------------------------------------------
const urlErrors = Object.values(initial.errors);
if (urlErrors.length) showNotice(`Ignored URL parameter${urlErrors.length > 1 ? 's' : ''}: ${urlErrors.join('; ')}`, 'warn');
client.ready.then(() => showBackend(), (e) => showError((e as Error).message));
initRealistic($('controls'), { client, view, engine: () => store.view.peek(), notice: showNotice });
