// The "Realistic image" section: an atomic model (bundled or dropped PDB/mmCIF) → structure
// factors (computed once per model and resolution, reused while only the geometry changes) →
// spots on a real detector → water and air background (upstream's .stol tables) → detector
// effects (noisify), with the layers (spots, background, noise) as toggles and a one-click
// preset. The chain runs in the worker (realistic-worker.ts, crate/src/wasm/realistic.rs).
import type { NanoBraggClient } from './client';
import type { ImageView } from './view';
import type { DetectorEffects, Geometry, ModelInfo, RealisticLayers, RealisticPhase, RealisticResult, SfInfo } from './protocol';

/** The bundled model: PDB entry 1PFE (public domain / CC0, wwPDB), served from samples/. */
export const BUNDLED_MODEL = { name: '1pfe.cif', url: 'samples/1pfe.cif', label: '1PFE echinomycin–DNA (bundled, PDB, CC0)' };

export interface RealisticSettings {
  detector: string;
  /** mm, Å */
  distance: number;
  lambda: number;
  /** crystal edge (µm), mosaic spread (°), mosaic domains, orientation seed */
  crystal: number;
  mosaic: number;
  domains: number;
  orientation: number;
  /** photons/s, s, µm */
  flux: number;
  exposure: number;
  beam: number;
  /** water thickness (µm), air path (mm) */
  water: number;
  air: number;
  /** read-out noise (ADU rms), PSF FWHM (µm), gain (ADU/photon), noise seed */
  readout: number;
  psf: number;
  gain: number;
  seed: number;
}

/** "Protein still on a pixel-array detector": a 1 µm crystal in a 1 µm microfocus beam (well
 * sampled spots at one sample per pixel), a thin water layer and the air path, an EIGER2 4M
 * (photon counting: no read-out noise, gain 1, no PSF). */
export const PROTEIN_STILL: RealisticSettings = {
  detector: 'eiger2-4m', distance: 120, lambda: 1,
  crystal: 1, mosaic: 0.3, domains: 12, orientation: 3,
  flux: 1e12, exposure: 0.5, beam: 1,
  water: 20, air: 10,
  readout: 0, psf: 0, gain: 1, seed: 1,
};

export const DETECTORS: { value: string; label: string }[] = [
  { value: 'eiger2-4m', label: 'EIGER2 X 4M (2068×2162, 75 µm)' },
  { value: 'pilatus6m', label: 'PILATUS 6M (2463×2527, 172 µm)' },
  { value: 'eiger2-16m', label: 'EIGER2 X 16M (4148×4362, 75 µm)' },
  { value: 'mx300', label: 'Rayonix MX300 (CCD, 3840×3840)' },
];

interface FieldDef { key: keyof RealisticSettings; label: string; unit: string; group: string; min: number; max: number }
const FIELDS: FieldDef[] = [
  { key: 'distance', label: 'Distance', unit: 'mm', group: 'Detector', min: 10, max: 2000 },
  { key: 'lambda', label: 'Wavelength', unit: 'Å', group: 'Detector', min: 0.3, max: 5 },
  { key: 'crystal', label: 'Crystal size', unit: 'µm', group: 'Crystal', min: 0.1, max: 1000 },
  { key: 'mosaic', label: 'Mosaicity', unit: '°', group: 'Crystal', min: 0, max: 10 },
  { key: 'domains', label: 'Mosaic domains', unit: '', group: 'Crystal', min: 1, max: 500 },
  { key: 'orientation', label: 'Orientation seed', unit: '', group: 'Crystal', min: 1, max: 1e6 },
  { key: 'flux', label: 'Flux', unit: 'photons/s', group: 'Beam', min: 1, max: 1e20 },
  { key: 'exposure', label: 'Exposure', unit: 's', group: 'Beam', min: 1e-6, max: 1e4 },
  { key: 'beam', label: 'Beam size', unit: 'µm', group: 'Beam', min: 0.1, max: 1e4 },
  { key: 'water', label: 'Water', unit: 'µm', group: 'Background', min: 0, max: 1e4 },
  { key: 'air', label: 'Air path', unit: 'mm', group: 'Background', min: 0, max: 1e4 },
  { key: 'readout', label: 'Read-out noise', unit: 'ADU', group: 'Detector effects', min: 0, max: 1e4 },
  { key: 'psf', label: 'PSF FWHM', unit: 'µm', group: 'Detector effects', min: 0, max: 1e4 },
  { key: 'gain', label: 'Gain', unit: 'ADU/photon', group: 'Detector effects', min: 0.01, max: 1e4 },
  { key: 'seed', label: 'Noise seed', unit: '', group: 'Detector effects', min: 1, max: 1e9 },
];

/** The nanoBragg words of the spots (the cell comes from the model, added by the worker). */
export function spotsArgs(s: RealisticSettings): string[] {
  return [
    '-detector', s.detector, '-distance', String(s.distance), '-lambda', String(s.lambda),
    '-xtalsize', String(s.crystal / 1000), '-mosaic', String(s.mosaic), '-mosaic_dom', String(Math.round(s.domains)),
    '-misset', 'random', '-misset_seed', String(Math.round(s.orientation)),
    '-flux', String(s.flux), '-exposure', String(s.exposure), '-beamsize', String(s.beam / 1000),
    '-oversample', '1', '-seed', String(Math.round(s.seed)),
  ];
}

/** nonBragg words per material (water, air), separated by '--'. */
export function materialArgs(s: RealisticSettings): string[] {
  const beam = ['-flux', String(s.flux), '-exposure', String(s.exposure), '-beamsize', String(s.beam / 1000)];
  const out: string[] = [];
  if (s.water > 0) out.push('-stol', 'water.stol', '-thickness', String(s.water / 1000), ...beam);
  if (s.air > 0) out.push('--', '-stol', 'air.stol', '-thickness', String(s.air), '-MW', '29', '-density', '0.0012', ...beam);
  return out;
}

export function detectorEffects(s: RealisticSettings): DetectorEffects {
  return { readout: s.readout, psfUm: s.psf, gain: s.gain, adc: 0, calibration: 0.03, flicker: 0, seed: Math.round(s.seed) };
}

/** What a field holds, or the error that names it. */
export function checkSettings(s: RealisticSettings): Record<string, string> {
  const errs: Record<string, string> = {};
  for (const f of FIELDS) {
    const v = s[f.key] as number;
    if (!Number.isFinite(v)) errs[f.key] = `${f.label}: not a number`;
    else if (v < f.min || v > f.max) errs[f.key] = `${f.label}: must be between ${f.min} and ${f.max}${f.unit ? ' ' + f.unit : ''}`;
  }
  return errs;
}

interface Deps {
  client: NanoBraggClient;
  view: ImageView;
  /** The page's backend and precision choice. */
  engine: () => { backend: 'auto' | 'gpu' | 'cpu'; precision: 'f32' | 'f64' };
  notice: (text: string, kind?: 'info' | 'warn') => void;
}

const fmt = (v: number, d = 3) => (Number.isFinite(v) ? +v.toPrecision(d) : '∞');
const fmtMs = (ms: number) => (ms < 1000 ? `${ms.toFixed(0)} ms` : `${(ms / 1000).toFixed(1)} s`);

/** Builds the section into `host` (before the parameter form) and wires it to the worker. */
export function initRealistic(host: HTMLElement, deps: Deps) {
  const sec = document.createElement('details');
  sec.className = 'group realistic';
  sec.id = 'realistic';
  sec.open = true;
  const groups = [...new Set(FIELDS.map((f) => f.group))];
  sec.innerHTML = `
    <summary>Realistic image</summary>
    <p class="help">Spots from an atomic model, water and air scattering, and the detector's noise, as a real still would look.</p>
    <button type="button" id="rl-preset" class="rl-preset">Protein still on a pixel-array detector</button>
    <div class="field"><label for="rl-model">Model</label>
      <select id="rl-model"><option value="bundled">${BUNDLED_MODEL.label}</option></select></div>
    <div class="field rl-file"><span class="help">or drop a PDB / mmCIF file here</span>
      <button type="button" id="rl-open">Open…</button><input type="file" id="rl-file" hidden accept=".pdb,.cif,.ent,.mmcif,.txt"></div>
    <div id="rl-model-info" class="help"></div>
    <div id="rl-error" class="rl-error" role="alert" hidden></div>
    <div class="field"><label for="rl-detector">Detector</label><select id="rl-detector">${DETECTORS.map((d) => `<option value="${d.value}">${d.label}</option>`).join('')}</select></div>
    ${groups.map((g) => `<fieldset class="rl-group"><legend>${g}</legend>${FIELDS.filter((f) => f.group === g).map((f) => `
      <div class="field" data-rl="${f.key}"><label for="rl-${f.key}">${f.label}${f.unit ? ` <span class="unit">(${f.unit})</span>` : ''}</label>
        <input type="text" inputmode="decimal" id="rl-${f.key}" spellcheck="false"><div class="msg" id="rl-${f.key}-msg" role="alert"></div></div>`).join('')}</fieldset>`).join('')}
    <fieldset class="rl-group rl-layers"><legend>Layers shown</legend>
      <label class="inline"><input type="checkbox" id="rl-spots" checked> spots</label>
      <label class="inline"><input type="checkbox" id="rl-bg" checked> background</label>
      <label class="inline"><input type="checkbox" id="rl-noise" checked> noise</label></fieldset>
    <div class="rl-run"><button type="button" id="rl-render">Render</button><button type="button" id="rl-cancel" disabled>Cancel</button>
      <progress id="rl-progress" max="1" value="0" aria-label="Realistic image progress"></progress></div>
    <div id="rl-status" class="help" role="status" aria-live="polite"></div>`;
  host.prepend(sec);
  const q = <T extends HTMLElement>(id: string) => sec.querySelector<T>(`#${id}`)!;
  const status = q('rl-status');
  const errBox = q('rl-error');
  const progress = q<HTMLProgressElement>('rl-progress');
  const cancelBtn = q<HTMLButtonElement>('rl-cancel');
  const modelSel = q<HTMLSelectElement>('rl-model');
  const detSel = q<HTMLSelectElement>('rl-detector');

  let settings: RealisticSettings = { ...PROTEIN_STILL };
  const models = new Map<string, Uint8Array>();
  let modelInfo: ModelInfo | null = null;
  let sf: SfInfo | null = null;
  let geometry: Geometry | null = null;
  let shown = false;
  let sfPhase = '';
  const layers = (): RealisticLayers => ({
    spots: q<HTMLInputElement>('rl-spots').checked, background: q<HTMLInputElement>('rl-bg').checked, noise: q<HTMLInputElement>('rl-noise').checked,
  });

  function showSettings() {
    detSel.value = settings.detector;
    for (const f of FIELDS) q<HTMLInputElement>(`rl-${f.key}`).value = String(settings[f.key]);
  }
  function readSettings(): Record<string, string> {
    const s = { ...settings, detector: detSel.value };
    for (const f of FIELDS) (s as Record<string, unknown>)[f.key] = Number(q<HTMLInputElement>(`rl-${f.key}`).value.trim() || NaN);
    const errs = checkSettings(s);
    for (const f of FIELDS) {
      q(`rl-${f.key}-msg`).textContent = errs[f.key] ?? '';
      sec.querySelector(`[data-rl="${f.key}"]`)!.classList.toggle('bad', !!errs[f.key]);
    }
    if (!Object.keys(errs).length) settings = s;
    return errs;
  }
  function showError(msg: string) {
    errBox.hidden = !msg;
    errBox.textContent = msg;
    if (msg) errBox.scrollIntoView({ block: 'nearest' });
  }

  async function modelBytes(): Promise<{ name: string; bytes: Uint8Array }> {
    const v = modelSel.value;
    if (v === 'bundled') {
      if (!models.has(BUNDLED_MODEL.name)) {
        const r = await fetch(new URL(BUNDLED_MODEL.url, location.href));
        if (!r.ok) throw new Error(`${BUNDLED_MODEL.url}: ${r.status} ${r.statusText}`);
        models.set(BUNDLED_MODEL.name, new Uint8Array(await r.arrayBuffer()));
      }
      return { name: BUNDLED_MODEL.name, bytes: models.get(BUNDLED_MODEL.name)! };
    }
    return { name: v, bytes: models.get(v)! };
  }

  function describeSf(s: SfInfo, computedNow: boolean) {
    const what = `${s.reflections.toLocaleString('en')} reflections to ${fmt(s.dMin)} Å from ${s.cellAtoms.toLocaleString('en')} atoms in the cell`;
    return computedNow ? `structure factors computed in ${fmtMs(s.ms)}: ${what}` : `structure factors cached: ${what} (reused: only the geometry changed)`;
  }

  let running = false;
  async function run() {
    if (Object.keys(readSettings()).length) {
      showError('Fix the highlighted realistic-image inputs.');
      return;
    }
    showError('');
    running = true;
    cancelBtn.disabled = false;
    progress.value = 0;
    sec.dataset.state = 'running';
    const { backend, precision } = deps.engine();
    let announced = false;
    try {
      const model = await modelBytes();
      const r = await deps.client.realistic(
        { model, args: spotsArgs(settings), materials: materialArgs(settings), backend, precision, layers: layers(), effects: detectorEffects(settings) },
        {
          onProgress: (p) => (progress.value = p),
          onPhase: (p: RealisticPhase, cached) => {
            progress.value = 0;
            if (p === 'structure factors') {
              sfPhase = cached ? 'structure factors cached' : 'computing structure factors…';
              sec.dataset.sf = cached ? 'cached' : 'computing';
            }
            status.textContent = p === 'structure factors' ? sfPhase : `${sfPhase ? sfPhase + ' · ' : ''}${p}…`;
          },
          onEstimate: (ms) => {
            announced = true;
            deps.notice(`This realistic image will take about ${fmtMs(ms)} on the CPU: Cancel stops it.`, 'warn');
          },
        },
      );
      shown = true;
      modelInfo = r.model;
      sf = r.sf;
      geometry = r.geometry;
      show(r);
      const t = r.timings;
      const computedNow = !!sf?.computed;
      status.textContent = `${sf ? describeSf(sf, computedNow) : ''} · ${r.width}×${r.height} on the ${r.backend.toUpperCase()}: ` +
        `spots ${fmtMs(t.spots)}, background ${fmtMs(t.background)}, detector ${fmtMs(t.detector)}`;
      sec.dataset.sf = computedNow ? 'computed' : 'cached';
      // the status bar speaks of the image shown
      const timing = document.getElementById('timing');
      if (timing) {
        timing.textContent = `${r.width}×${r.height} realistic · ${fmtMs(t.total)}`;
        timing.title = `structure factors ${fmtMs(t.sf)}, spots ${fmtMs(t.spots)}, background ${fmtMs(t.background)}, detector ${fmtMs(t.detector)}`;
      }
      sec.dataset.sfComputations = String(sf?.computations ?? 0);
      if (modelInfo) {
        const c = modelInfo.cell;
        q('rl-model-info').textContent = `${modelInfo.name}: ${modelInfo.format}, ${modelInfo.atoms} atoms, ${modelInfo.spaceGroup} ` +
          `(${modelInfo.symops} operations), cell ${c.slice(0, 3).map((v) => fmt(v, 4)).join(' × ')} Å, ${c.slice(3).map((v) => fmt(v, 4)).join('/')}°`;
      }
      if (r.warnings.length) console.info('realistic image:', r.warnings.join('; '));
      sec.dataset.state = 'done';
    } catch (e) {
      const err = e as Error;
      if (err.name === 'AbortError') {
        if (err.message === 'cancelled') {
          status.textContent = sec.dataset.sf === 'computing' ? 'structure factors cancelled' : 'cancelled';
          sec.dataset.state = 'cancelled';
        }
        return;
      }
      showError(err.message);
      status.textContent = '';
      sec.dataset.state = 'error';
    } finally {
      if (announced) deps.notice('');
      running = false;
      cancelBtn.disabled = true;
    }
  }

  function show(r: RealisticResult) {
    if (!geometry) return;
    deps.view.setImage(r.data, geometry.width, geometry.height, geometry, 1);
    // for scripts and tests: the image shown (ADU), its layers and the structure-factor count
    (window as unknown as { nanobraggRealistic: unknown }).nanobraggRealistic = {
      data: r.data, width: geometry.width, height: geometry.height, layers: layers(), sf, timings: r.timings, settings: { ...settings },
    };
    document.body.dataset.realistic = String(Number(document.body.dataset.realistic ?? 0) + 1);
    window.dispatchEvent(new CustomEvent('nanobragg-realistic', { detail: { layers: layers(), timings: r.timings } }));
  }

  async function recompose() {
    if (!shown || running) return;
    try {
      const r = await deps.client.realisticCompose(layers(), detectorEffects(settings));
      show(r);
    } catch (e) {
      const err = e as Error;
      if (err.name !== 'AbortError') showError(err.message);
    }
  }

  async function addModel(f: File) {
    const bytes = new Uint8Array(await f.arrayBuffer());
    models.set(f.name, bytes);
    if (![...modelSel.options].some((o) => o.value === f.name)) modelSel.add(new Option(`${f.name} (your file)`, f.name));
    modelSel.value = f.name;
    await run();
  }

  // ---- wiring
  showSettings();
  q('rl-preset').addEventListener('click', () => {
    settings = { ...PROTEIN_STILL };
    modelSel.value = 'bundled';
    for (const id of ['rl-spots', 'rl-bg', 'rl-noise']) q<HTMLInputElement>(id).checked = true;
    showSettings();
    void run();
  });
  q('rl-render').addEventListener('click', () => void run());
  cancelBtn.addEventListener('click', () => {
    deps.client.cancelRealistic();
    cancelBtn.disabled = true;
  });
  for (const id of ['rl-spots', 'rl-bg', 'rl-noise']) q(id).addEventListener('change', () => void recompose());
  const rerun = () => { if (shown) void run(); };
  for (const f of FIELDS) {
    const el = q<HTMLInputElement>(`rl-${f.key}`);
    el.addEventListener('change', () => {
      // detector effects only: compose again; anything else renders again
      if (['readout', 'psf', 'gain', 'seed'].includes(f.key)) {
        if (!Object.keys(readSettings()).length) void recompose();
      } else rerun();
    });
  }
  detSel.addEventListener('change', rerun);
  modelSel.addEventListener('change', () => void run()); // choosing a model asks for its image
  const fileInp = q<HTMLInputElement>('rl-file');
  q('rl-open').addEventListener('click', () => fileInp.click());
  fileInp.addEventListener('change', async () => {
    const f = fileInp.files?.[0];
    if (f) await addModel(f);
    fileInp.value = '';
  });
  sec.addEventListener('dragover', (e) => { e.preventDefault(); e.stopPropagation(); sec.classList.add('drop'); });
  sec.addEventListener('dragleave', () => sec.classList.remove('drop'));
  sec.addEventListener('drop', async (e) => {
    e.preventDefault();
    e.stopPropagation();
    sec.classList.remove('drop');
    const f = e.dataTransfer?.files[0];
    if (f) await addModel(f);
  });
  return { run, settings: () => ({ ...settings }) };
}
