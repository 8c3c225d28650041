// The "Realistic image" section: the one-click "protein still" preset and the choice of atomic
// model (bundled 1PFE, a dropped PDB/mmCIF file, or none). It holds no settings of its own: the
// model is the state's `pdb` field, the detector, beam and crystal are the form's fields and
// the background and detector effects are the form's "Background and detector effects" group
// (layers.ts). The page renders the state through the realistic chain when a layer is on
// (main.ts); this section shows what the chain reports (structure factors computed or cached).
import { BUNDLED_MODEL } from './layers';
import { PRESETS, type Store } from './state';
import type { ModelInfo, SfInfo } from './protocol';

const fmt = (v: number, d = 3) => (Number.isFinite(v) ? +v.toPrecision(d) : '∞');
const fmtMs = (ms: number) => (ms < 1000 ? `${ms.toFixed(0)} ms` : `${(ms / 1000).toFixed(1)} s`);
/** A whole number with commas between its thousands, as `toLocaleString('en')` writes it, but
 * without Intl: its first use loads the locale's number data, ≈ 0.1 s of the main thread just
 * as the first still is shown (this section reports it in the same task). */
export const fmtCount = (n: number) => Math.round(n).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');

export interface RealisticSection {
  /** The chain reported its structure factors and model (null: no model). */
  report(sf: SfInfo | null, model: ModelInfo | null): void;
  /** A stage started: 'structure factors' says computing or cached. */
  stage(text: string, sf?: 'computing' | 'cached'): void;
  /** The chain refused the model `name` (its error): said on the status line; a file opened
   * here is not kept as the model (the one before it is again). */
  refused(name: string, message: string): void;
}

/** Builds the section into `host` (after the teaching panel). */
export function initRealistic(host: HTMLElement, store: Store): RealisticSection {
  const sec = document.createElement('section');
  sec.className = 'realistic';
  sec.id = 'realistic';
  sec.setAttribute('aria-label', 'Realistic image');
  sec.innerHTML = `
    <button type="button" id="rl-preset" class="rl-preset" title="A protein crystal's still on an EIGER2 X 4M: atomic model, water and air, detector noise">Protein still on a pixel-array detector</button>
    <div class="field"><label for="rl-model">Structure factors from</label>
      <select id="rl-model"><option value="" title="The Structure factors group's default F or HKL file">the form's F or HKL</option><option value="${BUNDLED_MODEL.name}" title="${BUNDLED_MODEL.title}">${BUNDLED_MODEL.label}</option></select>
      <button type="button" id="rl-open" title="Open a PDB or mmCIF file (or drop it here)">Open…</button><input type="file" id="rl-file" hidden accept=".pdb,.cif,.ent,.mmcif,.txt"></div>
    <div id="rl-model-info" class="help"></div>
    <div id="rl-status" class="help" role="status" aria-live="polite"></div>`;
  host.after(sec);
  const q = <T extends HTMLElement>(id: string) => sec.querySelector<T>(`#${id}`)!;
  const modelSel = q<HTMLSelectElement>('rl-model');
  const status = q('rl-status');

  const still = PRESETS.find((p) => p.id === 'protein-still')!;
  q('rl-preset').addEventListener('click', () => {
    store.setModel(still.state);
    if (still.view) store.setView(still.view); // its scale, as the Preset menu gives it
  });
  /** A model file opened here and the model before it, until the chain has read it. */
  let trying: { name: string; before: string } | null = null;
  /** Why the last model opened was refused: the status line keeps it until another is chosen
   * (here, in the form's field, by a drop or a preset), and the model used instead. */
  let refusal = '';
  let refusedFor = '';
  const say = (text: string, error = false) => {
    status.textContent = refusal || text;
    status.classList.toggle('err', !!refusal || error);
  };
  modelSel.addEventListener('change', () => {
    trying = null;
    refusal = '';
    say('');
    store.setField('pdb', modelSel.value);
  });
  store.model.subscribe((m) => {
    const v = (m.pdb ?? '').trim();
    if (refusal && v !== refusedFor) {
      refusal = '';
      say('');
    }
    if (v && ![...modelSel.options].some((o) => o.value === v)) modelSel.add(new Option(`${v} (your file)`, v));
    modelSel.value = v;
    if (!v) {
      q('rl-model-info').textContent = '';
      say('');
      delete sec.dataset.sf;
    }
  });

  async function addModel(f: File) {
    const bytes = new Uint8Array(await f.arrayBuffer());
    trying = { name: f.name, before: (store.model.peek().pdb ?? '').trim() };
    refusal = '';
    say(`reading ${f.name}…`);
    store.addFile(f.name, bytes);
    store.setField('pdb', f.name);
  }
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

  return {
    report(sf, model) {
      if (model) {
        const c = model.cell;
        if (trying?.name === model.name) trying = null;
        q('rl-model-info').textContent = `${model.name}: ${model.format}, ${model.atoms} atoms, ${model.spaceGroup} ` +
          `(${model.symops} operations), cell ${c.slice(0, 3).map((v) => fmt(v, 4)).join(' × ')} Å, ${c.slice(3).map((v) => fmt(v, 4)).join('/')}°`;
      }
      if (sf) {
        const what = `${fmtCount(sf.reflections)} reflections to ${fmt(sf.dMin)} Å from ${fmtCount(sf.cellAtoms)} atoms in the cell`;
        say(sf.computed ? `structure factors computed in ${fmtMs(sf.ms)}: ${what}` : `structure factors cached: ${what} (reused: only the geometry changed)`);
        sec.dataset.sf = sf.computed ? 'computed' : 'cached';
        sec.dataset.sfComputations = String(sf.computations);
      }
    },
    stage(text, sf) {
      say(text);
      if (sf) sec.dataset.sf = sf;
    },
    refused(name, message) {
      if (trying?.name !== name) {
        refusal = '';
        say(message, true); // a model from the form's field or a link: it stays there, with its error
        return;
      }
      // opened here: not the model; the one before it renders again
      const before = trying.before;
      trying = null;
      refusal = `${name} was not used: ${message.startsWith(`${name}: `) ? message.slice(name.length + 2) : message}`;
      refusedFor = before;
      for (const o of [...modelSel.options]) if (o.value === name) o.remove();
      say('');
      store.setField('pdb', before);
    },
  };
}
