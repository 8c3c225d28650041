// The app page: parameter form, presets, URL state, live updates, status, downloads.
// `window.nanobragg.simulate(args, {backend, files})` is the scripting / test API.
import { NanoBraggClient, type SimulateOptions, type SimulateResult } from './client';
import {
  GROUPS, PARAMS, PARAM_BY_KEY, PRESETS, DEFAULT_PRESET, argsFromState, fieldForError, previewArgs, stateFromUrl,
  stateToUrl, validate, type ParamDef, type State,
} from './params';
import { COLOUR_MAPS, ImageView, type ColourMap, type Scaling } from './view';
import type { Backend, Precision } from './protocol';

/** Upstream defaults, where a slider should rest when its field is empty. */
const SLIDER_REST: Record<string, number> = { lambda: 1, distance: 100, N: 1, mosaic_domains: 1, oversample: 1 };

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;
const url = new URL(location.href);
const embed = url.searchParams.get('embed') === '1';
if (embed) document.body.classList.add('embed');

const client = new NanoBraggClient();
const view = new ImageView($('canvas-host'));

let state: State = stateFromUrl(url.searchParams) ?? { ...DEFAULT_PRESET.state };
const files = new Map<string, Uint8Array>();
let last: SimulateResult | null = null;
let lastWasPreview = false;
let fieldErrors: Record<string, string> = {};

// ---- API for scripts and tests ----------------------------------------------------------
declare global {
  interface Window {
    nanobragg: {
      simulate: (args: string | string[], opts?: SimulateOptions) => Promise<SimulateResult>;
      ready: Promise<unknown>;
      client: NanoBraggClient;
      lastRender: () => { result: SimulateResult | null; preview: boolean; count: number };
      state: () => State;
    };
  }
}
let renderCount = 0;
window.nanobragg = {
  simulate: (args, opts = {}) => client.simulate(args, { channel: 'api', ...opts }),
  ready: client.ready,
  client,
  lastRender: () => ({ result: last, preview: lastWasPreview, count: renderCount }),
  state: () => ({ ...state }),
};

// ---- form -------------------------------------------------------------------------------
const form = $('params');
const inputs = new Map<string, HTMLInputElement | HTMLSelectElement>();

function fieldId(key: string) {
  return `f-${key}`;
}

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
  row.className = 'field';
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
    sel.addEventListener('change', () => setValue(p.key, sel.value, 'full'));
  } else if (p.kind === 'bool') {
    const cb = document.createElement('input');
    cb.type = 'checkbox';
    input = cb;
    cb.addEventListener('change', () => setValue(p.key, cb.checked ? '1' : '', 'full'));
  } else if (p.kind === 'file') {
    input = buildFileInput(p, row);
  } else {
    const t = document.createElement('input');
    t.type = 'text';
    t.inputMode = p.kind === 'vec' || p.kind === 'text' ? 'text' : 'decimal';
    t.spellcheck = false;
    if (p.placeholder) t.placeholder = p.placeholder;
    input = t;
    t.addEventListener('change', () => setValue(p.key, t.value, 'full'));
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
    r.addEventListener('input', () => {
      (input as HTMLInputElement).value = r.value;
      setValue(p.key, r.value, 'preview');
    });
    r.addEventListener('change', () => setValue(p.key, r.value, 'full'));
    row.appendChild(r);
  }
  if (p.help) {
    const h = document.createElement('div');
    h.className = 'help';
    h.textContent = p.help;
    row.appendChild(h);
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
  clear.addEventListener('click', () => setValue(p.key, '', 'full'));
  inp.addEventListener('change', async () => {
    const f = inp.files?.[0];
    if (f) await loadFile(p.key, f);
    inp.value = '';
  });
  // A hidden text input holds the file name (the URL value).
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
  files.set(f.name, new Uint8Array(await f.arrayBuffer()));
  setValue(key, f.name, 'full', true);
}

function buildCommandLine(): HTMLElement {
  const row = document.createElement('div');
  row.className = 'field';
  row.innerHTML = `<label for="cmdline">Command line (read-only)</label><div></div>`;
  const ta = document.createElement('textarea');
  ta.id = 'cmdline';
  ta.readOnly = true;
  ta.rows = 4;
  ta.style.gridColumn = '1 / -1';
  ta.style.width = '100%';
  ta.style.fontFamily = 'ui-monospace, monospace';
  ta.style.fontSize = '12px';
  row.appendChild(ta);
  return row;
}

function syncForm() {
  for (const p of PARAMS) {
    const el = inputs.get(p.key)!;
    const v = state[p.key] ?? '';
    if (p.kind === 'bool') (el as HTMLInputElement).checked = v !== '' && v !== '0';
    else el.value = v;
    if (p.kind === 'file') $(`${fieldId(p.key)}-name`).textContent = v ? v + (files.has(v) ? '' : ' (missing)') : 'none';
    const slider = document.getElementById(`${fieldId(p.key)}-slider`) as HTMLInputElement | null;
    if (slider) {
      const lo = +slider.min, hi = +slider.max;
      slider.value = v && !isNaN(+v) ? v : String(SLIDER_REST[p.key] ?? (lo < 0 && hi > 0 ? 0 : lo));
    }
  }
  const cmd = document.getElementById('cmdline') as HTMLTextAreaElement | null;
  if (cmd) cmd.value = 'nanoBragg ' + argsFromState(state).join(' ');
  const match = PRESETS.find((pr) => sameState(pr.state, state));
  ($('preset') as HTMLSelectElement).value = match?.id ?? '';
}

function sameState(a: State, b: State) {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const k of keys) if ((a[k] ?? '').trim() !== (b[k] ?? '').trim()) return false;
  return true;
}

function showFieldErrors(errs: Record<string, string>) {
  fieldErrors = errs;
  for (const p of PARAMS) {
    const row = form.querySelector<HTMLElement>(`.field[data-key="${p.key}"]`)!;
    const msg = errs[p.key] ?? '';
    row.classList.toggle('bad', !!msg);
    $(`${fieldId(p.key)}-msg`).textContent = msg;
    inputs.get(p.key)!.setAttribute('aria-invalid', msg ? 'true' : 'false');
  }
}

function setValue(key: string, value: string, mode: 'preview' | 'full', sync = false) {
  state[key] = value.trim();
  if (sync || mode === 'preview' || PARAM_BY_KEY.get(key)?.kind === 'file') syncForm();
  else {
    const cmd = document.getElementById('cmdline') as HTMLTextAreaElement | null;
    if (cmd) cmd.value = 'nanoBragg ' + argsFromState(state).join(' ');
    const match = PRESETS.find((pr) => sameState(pr.state, state));
    ($('preset') as HTMLSelectElement).value = match?.id ?? '';
  }
  writeUrl();
  schedule(mode);
}

// ---- view settings ------------------------------------------------------------------------
const cmap = $<HTMLSelectElement>('cmap');
for (const c of COLOUR_MAPS) cmap.add(new Option(c.label, c.value));
const viewControls = {
  backend: $<HTMLSelectElement>('backend'),
  precision: $<HTMLSelectElement>('precision'),
  cmap,
  scaling: $<HTMLSelectElement>('scaling'),
  contrast: $<HTMLInputElement>('contrast'),
  rings: $<HTMLInputElement>('rings'),
  beamc: $<HTMLInputElement>('beamc'),
};

function readViewFromUrl() {
  const q = url.searchParams;
  for (const [k, el] of Object.entries(viewControls)) {
    const v = q.get(k);
    if (v === null) continue;
    if (el instanceof HTMLInputElement && el.type === 'checkbox') el.checked = v !== '0';
    else el.value = v;
  }
  applyView();
}

function viewState(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, el] of Object.entries(viewControls)) {
    out[k] = el instanceof HTMLInputElement && el.type === 'checkbox' ? (el.checked ? '1' : '0') : el.value;
  }
  // keep the URL short: drop defaults
  const defaults: Record<string, string> = { backend: 'auto', precision: 'f32', cmap: 'inverted-grey', scaling: 'log', contrast: '30', rings: '1', beamc: '1' };
  for (const k of Object.keys(out)) if (out[k] === defaults[k]) delete out[k];
  return out;
}

function applyView() {
  view.update({
    colourMap: cmap.value as ColourMap,
    scaling: viewControls.scaling.value as Scaling,
    contrast: +viewControls.contrast.value,
    rings: viewControls.rings.checked,
    beam: viewControls.beamc.checked,
  });
}

for (const [k, el] of Object.entries(viewControls)) {
  el.addEventListener(el instanceof HTMLInputElement && el.type === 'range' ? 'input' : 'change', () => {
    if (k === 'backend' || k === 'precision') schedule('full');
    else applyView();
    writeUrl();
  });
}
$('fit').addEventListener('click', () => view.fit());

function writeUrl() {
  const q = stateToUrl(state, viewState(), new URL(location.href).searchParams);
  history.replaceState(null, '', `${location.pathname}?${q.toString().replace(/%2C/g, ',').replace(/%20|\+/g, '+')}`);
}

// ---- presets --------------------------------------------------------------------------------
const presetSel = $<HTMLSelectElement>('preset');
for (const p of PRESETS) presetSel.add(new Option(p.label, p.id));
presetSel.addEventListener('change', () => {
  const p = PRESETS.find((p) => p.id === presetSel.value);
  if (!p) return;
  state = { ...p.state };
  syncForm();
  writeUrl();
  schedule('full');
});

// ---- rendering ------------------------------------------------------------------------------
let scheduled: 'preview' | 'full' | null = null;
let rafHandle = 0;

function schedule(mode: 'preview' | 'full') {
  if (scheduled !== 'full') scheduled = mode;
  if (!rafHandle) rafHandle = requestAnimationFrame(() => {
    rafHandle = 0;
    const m = scheduled!;
    scheduled = null;
    void render(m);
  });
}

const errorBox = $('error');
const noticeBox = $('notice');
const progress = $<HTMLProgressElement>('progress');
const cancelBtn = $<HTMLButtonElement>('cancel');
const timing = $('timing');

function showError(msg: string) {
  errorBox.hidden = !msg;
  errorBox.textContent = msg;
}

async function render(mode: 'preview' | 'full') {
  const errs = validate(state);
  // Files named by the flags must have been provided.
  for (const p of PARAMS) {
    const v = state[p.key];
    if (p.kind === 'file' && v && !files.has(v)) errs[p.key] = `${p.flag} ${v}: please choose or drop this file`;
  }
  showFieldErrors(errs);
  if (Object.keys(errs).length) {
    showError('Fix the highlighted input; the image shows the last good settings.');
    return;
  }
  let args = argsFromState(state);
  let scale = 1;
  if (mode === 'preview' && fullSize.w) {
    // Reduced-resolution preview of the same detector (about 256² pixels) while dragging.
    const factor = Math.max(1, Math.round(Math.sqrt((fullSize.w * fullSize.h) / (256 * 256))));
    const pa = previewArgs(args, fullSize.w, fullSize.h, fullSize.pixel * 1000, factor);
    if (pa) { args = pa; scale = factor; }
  }
  cancelBtn.disabled = false;
  progress.value = 0;
  const t0 = performance.now();
  try {
    const r = await client.simulate(args, {
      backend: viewControls.backend.value as Backend,
      precision: viewControls.precision.value as Precision,
      files: Object.fromEntries(files),
      channel: 'ui',
      onProgress: (p) => (progress.value = p),
    });
    last = r;
    lastWasPreview = scale > 1;
    if (!lastWasPreview) fullSize = { w: r.width, h: r.height, pixel: r.geometry.pixel };
    renderCount++;
    view.setImage(r.data, r.width, r.height, r.geometry, scale);
    if (renderCount === 1) performance.mark('nb-first-image');
    showError('');
    progress.value = 1;
    timing.textContent = `${r.width}×${r.height}${lastWasPreview ? ' preview' : ''} in ${fmtMs(r.timings.render)} (total ${fmtMs(performance.now() - t0)})`;
    showBackend(r);
    noticeBox.hidden = !r.notice;
    // The reason can be long (wgpu lists every backend): keep one line, full text on hover.
    noticeBox.textContent = r.notice.length > 140 ? `${r.notice.slice(0, 137)}…` : r.notice;
    noticeBox.title = r.notice;
    document.body.dataset.rendered = String(renderCount);
  } catch (e) {
    const err = e as Error;
    if (err.name === 'AbortError') return;
    const key = errorField(err.message);
    if (key) {
      showFieldErrors({ ...fieldErrors, [key]: err.message });
      const row = form.querySelector<HTMLElement>(`.field[data-key="${key}"]`);
      const group = row?.closest('details');
      if (group) group.open = true;
      row?.scrollIntoView({ block: 'nearest' });
    }
    showError(`${err.message}${view.hasImage ? ' (showing the previous image)' : ''}`);
    document.body.dataset.error = String(Date.now());
  } finally {
    if (!client.busy) cancelBtn.disabled = true;
  }
}
let fullSize = { w: 0, h: 0, pixel: 0 };

function errorField(message: string): string | null {
  for (const p of PARAMS) {
    const v = state[p.key];
    if (p.kind === 'file' && v && message.includes(v)) return p.key;
  }
  return fieldForError(message);
}

function fmtMs(ms: number) {
  return ms < 1000 ? `${ms.toFixed(0)} ms` : `${(ms / 1000).toFixed(2)} s`;
}

function showBackend(r?: SimulateResult) {
  const info = client.info;
  const label = $('backend-label');
  if (!info) return;
  const cpu = `CPU · wasm ${info.buildInfo.includes('simd') ? 'SIMD ' : ''}· ${info.threads} thread${info.threads === 1 ? '' : 's'}`;
  if (r?.backend === 'gpu') label.textContent = `WebGPU · ${r.adapter}`;
  else label.textContent = cpu + (info.kind === 'plain' ? ' (single-threaded module)' : '');
  label.title = `${info.buildInfo}; module ${info.kind}${info.parallelNote ? ` — ${info.parallelNote}` : ''}`;
  label.dataset.backend = r?.backend ?? '';
  label.dataset.threads = String(info.threads);
}

cancelBtn.addEventListener('click', () => {
  client.cancel();
  cancelBtn.disabled = true;
  timing.textContent = 'cancelled';
});

// ---- readout ---------------------------------------------------------------------------------
const readout = $('readout');
view.onReadout = (r) => {
  if (!r) return;
  const i = r.info;
  const v = r.value;
  const vs = Math.abs(v) >= 1e4 || (v !== 0 && Math.abs(v) < 1e-2) ? v.toExponential(3) : v.toFixed(3);
  readout.textContent = `pixel (${r.f}, ${r.s})  I = ${vs} photons` + (i
    ? `  d = ${isFinite(i.d) ? i.d.toFixed(3) : '∞'} Å  2θ = ${i.twoTheta.toFixed(3)}°  hkl ≈ (${i.nearest.join(' ')})  [${i.hkl.map((x) => x.toFixed(2)).join(', ')}]`
    : '');
};

// ---- downloads --------------------------------------------------------------------------------
function save(bytes: BlobPart, name: string, type = 'application/octet-stream') {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(new Blob([bytes], { type }));
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
}

async function ensureFull() {
  if (lastWasPreview || !last) await render('full');
}

for (const [id, what, name] of [['dl-int', 'int', 'intimage.img'], ['dl-noise', 'noise', 'noiseimage.img'], ['dl-float', 'float', 'floatimage.bin']] as const) {
  $(id).addEventListener('click', async () => {
    await ensureFull();
    try {
      save((await client.exportImage(what)) as BlobPart, name);
    } catch (e) {
      showError(`download failed: ${(e as Error).message}`);
    }
  });
}
$('dl-png').addEventListener('click', async () => {
  await ensureFull();
  save(await view.toPng(), 'nanobragg.png', 'image/png');
});

// ---- drag and drop anywhere ---------------------------------------------------------------------
window.addEventListener('dragover', (e) => e.preventDefault());
window.addEventListener('drop', async (e) => {
  e.preventDefault();
  for (const f of Array.from(e.dataTransfer?.files ?? [])) {
    const n = f.name.toLowerCase();
    const key = /\.(mat|amat|a)$/.test(n) ? 'mat' : /source/.test(n) ? 'sourcefile' : 'hkl';
    await loadFile(key, f);
  }
});

// ---- start --------------------------------------------------------------------------------------
buildForm();
syncForm();
readViewFromUrl();
writeUrl();
client.ready.then(() => showBackend(), (e) => showError((e as Error).message));
schedule('full');
