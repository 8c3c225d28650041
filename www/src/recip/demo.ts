// The standalone demo of the reciprocal-space view (www/recip-demo.html, built by
// scripts/build-recip.mjs): a synthetic lattice (lattice.ts), the 3D view loaded lazily, and a
// small detector panel of the predicted spots linked both ways (hover a spot -> its lattice point
// lights up; hover a point -> its spot is ringed) with Shift+drag / Alt+drag rotation (rotate.ts).
// Test hooks: window.recipDemo.
import { applyRotation, openReciprocalView, rotateMisset } from './index';
import { syntheticLattice, type SyntheticLattice, type SyntheticOptions } from './lattice';
import type { ImageFrame } from './rotate';
import type { PointInfo, ReciprocalView, Theme, V3 } from './types';

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const q = new URLSearchParams(location.search);
const num = (k: string, d: number) => (q.has(k) ? Number(q.get(k)) : d);

const state = {
  cell: num('cell', 100), lambda: num('lambda', 1), dmin: num('dmin', 3.5), ncells: num('N', 20),
  mosaic: num('mosaic', 0), dispersion: num('dispersion', 0), divergence: num('divergence', 0),
  misset: (q.get('misset') ?? '0,0,0').split(/[ ,]+/).map(Number).slice(0, 3) as V3,
  theme: (q.get('theme') === 'dark' ? 'dark' : 'light') as Theme,
  near: q.get('show') === 'near',
};

let view: ReciprocalView | null = null;
let lattice: SyntheticLattice | null = null;
let hoverSpot: number = -1; // index hovered on the detector panel
let viewHover: PointInfo | null = null;
let spots: number[] = []; // indices of the in-condition reflections on the detector
const timings = { generate: 0, update: 0, updates: 0 };

function options(): SyntheticOptions {
  const a = state.cell;
  return {
    cell: [a, a, a, 90, 90, 90], lambda: state.lambda, dmin: state.dmin, ncells: state.ncells, misset: state.misset,
    mosaic: state.mosaic, dispersion: state.dispersion, divergence: state.divergence,
  };
}

function regenerate() {
  const t0 = performance.now();
  lattice = syntheticLattice(options());
  const t1 = performance.now();
  view?.update(lattice.data);
  const t2 = performance.now();
  timings.generate = t1 - t0;
  timings.update = t2 - t1;
  timings.updates++;
  const t = lattice.data.reflections;
  spots = [];
  for (let i = 0; i < t.count; i++) if (t.inCondition![i] && Number.isFinite(t.fast![i])) spots.push(i);
  spots.sort((x, y) => t.intensity[x] - t.intensity[y]);
  drawDetector();
  $('status').textContent = `${t.count.toLocaleString('en')} lattice points, ${spots.length} spots on the detector\n` +
    `lattice ${timings.generate.toFixed(1)} ms (demo only) · view.update ${timings.update.toFixed(1)} ms`;
  syncControls();
}

// ---- detector panel ----
const det = $<HTMLCanvasElement>('det');
const dctx = det.getContext('2d')!;
function toCanvas(f: number, s: number): [number, number] {
  const d = lattice!.detector;
  return [(f / d.width) * det.width, (s / d.height) * det.height];
}
function drawDetector() {
  if (!lattice) return;
  const dark = state.theme === 'dark';
  dctx.fillStyle = dark ? '#000' : '#fff';
  dctx.fillRect(0, 0, det.width, det.height);
  const t = lattice.data.reflections;
  let imax = 0;
  for (const i of spots) imax = Math.max(imax, t.intensity[i]);
  for (const i of spots) {
    const [x, y] = toCanvas(t.fast![i], t.slow![i]);
    const v = Math.sqrt(t.intensity[i] / (imax || 1));
    const g = Math.round(255 * (dark ? v : 1 - v));
    dctx.fillStyle = `rgb(${g},${g},${g})`;
    dctx.beginPath();
    dctx.arc(x, y, 1 + 2.2 * v, 0, 2 * Math.PI);
    dctx.fill();
  }
  // beam centre
  const [cx, cy] = toCanvas(lattice.detector.width / 2, lattice.detector.height / 2);
  dctx.strokeStyle = dark ? '#ff6b6b' : '#e03131';
  dctx.beginPath();
  dctx.moveTo(cx - 6, cy); dctx.lineTo(cx + 6, cy); dctx.moveTo(cx, cy - 6); dctx.lineTo(cx, cy + 6);
  dctx.stroke();
  const ring = (i: number, colour: string) => {
    if (i < 0 || !Number.isFinite(t.fast![i])) return;
    const [x, y] = toCanvas(t.fast![i], t.slow![i]);
    dctx.strokeStyle = colour;
    dctx.lineWidth = 2;
    dctx.beginPath();
    dctx.arc(x, y, 8, 0, 2 * Math.PI);
    dctx.stroke();
    dctx.lineWidth = 1;
  };
  ring(hoverSpot, dark ? '#ffd43b' : '#f08c00');
  if (viewHover) ring(viewHover.index, dark ? '#ffd43b' : '#f08c00');
}

function spotAt(x: number, y: number): number {
  if (!lattice) return -1;
  const t = lattice.data.reflections;
  let best = -1, bd = 64;
  for (const i of spots) {
    const [sx, sy] = toCanvas(t.fast![i], t.slow![i]);
    const d = (sx - x) ** 2 + (sy - y) ** 2;
    if (d < bd) { bd = d; best = i; }
  }
  return best;
}

function describe(p: PointInfo) {
  return `(${p.hkl.join(' ')})  d = ${p.d.toFixed(2)} Å  2θ = ${p.twoTheta.toFixed(2)}°\nε = ${p.excitation.toExponential(2)} Å⁻¹` +
    (p.fast !== null ? `  spot (${p.fast.toFixed(1)}, ${p.slow!.toFixed(1)})` : '');
}

let drag: { x: number; y: number; mode: 'tilt' | 'spin' } | null = null;
det.addEventListener('pointerdown', (e) => {
  if (!e.shiftKey && !e.altKey) return;
  e.preventDefault();
  det.setPointerCapture(e.pointerId);
  drag = { x: e.offsetX, y: e.offsetY, mode: e.altKey ? 'spin' : 'tilt' };
});
det.addEventListener('pointermove', (e) => {
  if (drag && lattice) {
    const dx = e.offsetX - drag.x, dy = e.offsetY - drag.y;
    const d = lattice.detector;
    const [cx, cy] = toCanvas(d.width / 2, d.height / 2);
    const frame: ImageFrame = { beam: lattice.data.beam, fast: d.fast, slow: d.slow };
    state.misset = rotateMisset(state.misset, { mode: drag.mode, dx, dy, sensitivity: 0.1, around: [drag.x - cx, drag.y - cy] }, frame);
    drag.x = e.offsetX;
    drag.y = e.offsetY;
    scheduleRegenerate();
    return;
  }
  const i = spotAt(e.offsetX, e.offsetY);
  if (i !== hoverSpot) {
    hoverSpot = i;
    const t = lattice!.data.reflections;
    view?.highlight(i >= 0 ? [t.hkl[3 * i], t.hkl[3 * i + 1], t.hkl[3 * i + 2]] : null);
    drawDetector();
  }
});
const endDrag = () => { drag = null; };
det.addEventListener('pointerup', endDrag);
det.addEventListener('pointercancel', endDrag);
det.addEventListener('pointerleave', () => {
  if (hoverSpot >= 0) { hoverSpot = -1; view?.highlight(null); drawDetector(); }
});

let pending = 0;
function scheduleRegenerate() {
  if (!pending) pending = requestAnimationFrame(() => { pending = 0; regenerate(); });
}

// ---- controls ----
function syncControls() {
  const ids = ['rx', 'ry', 'rz'];
  ids.forEach((id, k) => {
    $<HTMLInputElement>(id).value = String(state.misset[k]);
    $(`${id}-o`).textContent = state.misset[k].toFixed(1);
  });
  const u = new URL(location.href);
  u.searchParams.set('misset', state.misset.map((x) => x.toFixed(3)).join(','));
  history.replaceState(null, '', u);
}
function bindNumber(id: string, keyName: keyof typeof state, fmt?: (v: number) => string) {
  const el = $<HTMLInputElement>(id);
  el.value = String(state[keyName]);
  const out = document.getElementById(`${id}-o`);
  const set = () => {
    const v = Number(el.value);
    if (!Number.isFinite(v) || v <= 0 && id !== 'mosaic' && id !== 'dispersion' && id !== 'divergence') return;
    (state as Record<string, unknown>)[keyName] = v;
    if (out && fmt) out.textContent = fmt(v);
    scheduleRegenerate();
  };
  if (out && fmt) out.textContent = fmt(Number(el.value));
  el.addEventListener('input', set);
}
bindNumber('cell', 'cell');
bindNumber('lambda', 'lambda');
bindNumber('dmin', 'dmin');
bindNumber('ncells', 'ncells');
bindNumber('mosaic', 'mosaic', (v) => `${v}°`);
bindNumber('dispersion', 'dispersion', (v) => `${v}`);
bindNumber('divergence', 'divergence', (v) => `${v}°`);
['rx', 'ry', 'rz'].forEach((id, k) => {
  $<HTMLInputElement>(id).addEventListener('input', (e) => {
    state.misset = [...state.misset] as V3;
    state.misset[k] = Number((e.target as HTMLInputElement).value);
    scheduleRegenerate();
  });
});
$('near').setAttribute('aria-pressed', String(state.near));
function applyTheme() {
  document.body.classList.toggle('dark', state.theme === 'dark');
  $('theme').textContent = state.theme === 'dark' ? 'Light theme' : 'Dark theme';
  view?.setTheme(state.theme);
  drawDetector();
}
$('theme').addEventListener('click', () => {
  state.theme = state.theme === 'dark' ? 'light' : 'dark';
  applyTheme();
});
$('near').addEventListener('click', () => {
  state.near = !state.near;
  $('near').setAttribute('aria-pressed', String(state.near));
  view?.setOptions({ show: state.near ? 'near' : 'all' });
});
$('overview').addEventListener('click', () => view?.resetCamera('overview'));
$('lattice').addEventListener('click', () => view?.resetCamera('lattice'));

// ---- start ----
(async () => {
  const t0 = performance.now();
  try {
    view = await openReciprocalView($('view'), { theme: state.theme, show: state.near ? 'near' : 'all' });
  } catch (e) {
    $('status').textContent = (e as Error).message;
    document.body.dataset.error = (e as Error).message;
    return;
  }
  const loadMs = performance.now() - t0;
  view.onHover((p) => {
    viewHover = p;
    $('readout').textContent = p ? describe(p) : '';
    drawDetector();
  });
  // Shift/Alt+drag in the 3D view turns the crystal too (the lattice moves through the sphere)
  view.onRotate((rot) => {
    state.misset = applyRotation(state.misset, rot);
    scheduleRegenerate();
  });
  view.onPick((p) => {
    $('readout').textContent = `picked ${describe(p)}`;
    document.body.dataset.picked = p.hkl.join(' ');
  });
  applyTheme();
  regenerate();
  (window as unknown as { recipDemo: unknown }).recipDemo = {
    view, state, timings, loadMs,
    lattice: () => lattice,
    regenerate: (o: Partial<typeof state>) => { Object.assign(state, o); regenerate(); return lattice!.data.reflections.count; },
    spots: () => spots.slice(),
    detectorCanvasPosition: (i: number) => toCanvas(lattice!.data.reflections.fast![i], lattice!.data.reflections.slow![i]),
  };
  document.body.dataset.ready = '1';
})();
