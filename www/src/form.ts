// The parameter form (the flag schema of params.ts as fields): building it, keeping it equal to
// the store's model, the read-only command line, and the field errors. The form panel
// (panels/controls.ts) builds it; its groups and effects go with the panel.
import { GROUPS, PARAMS, type ParamDef } from './params';
import { SLIDER_REST, presetOf, type ModelState, type Store } from './state';
import { isLayered } from './layers';
import type { Scope } from './panel';

export interface FormOptions {
  store: Store;
  /** The form element and the preset menu. */
  form: HTMLElement;
  presetSel: HTMLSelectElement;
  /** The detector model's own handler (its kind's detector effects come with it). */
  setDetector?: (name: string) => void;
}

export interface Form {
  inputs: Map<string, HTMLInputElement | HTMLSelectElement>;
  /** Show the store's input errors, then the simulator's (by field key); where a field has
   * none, the simulator's warning on it (`warnings`). */
  showFieldErrors(simErrors?: Record<string, string>, warnings?: Record<string, string>): void;
}

export const fieldId = (key: string) => `f-${key}`;
const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;

/** Builds the form into `o.form`; its groups (and their fields' listeners) and its effects are
 * registered in `scope`, removed with the panel. */
export function createForm(o: FormOptions, scope: Scope): Form {
  const { store, form, presetSel } = o;
  const inputs = new Map<string, HTMLInputElement | HTMLSelectElement>();
  const fieldId = (key: string) => `f-${key}`;

  function buildForm() {
    for (const g of GROUPS) {
      const det = document.createElement('details');
      det.className = 'group';
      det.open = g.id !== 'noise' && g.id !== 'advanced' && g.id !== 'layers';
      det.dataset.group = g.id;
      det.innerHTML = `<summary>${g.label}</summary>`;
      for (const p of PARAMS.filter((p) => p.group === g.id)) det.appendChild(buildField(p));
      if (g.id === 'advanced') det.appendChild(buildCommandLine());
      form.appendChild(det);
      scope.add(() => det.remove());
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
      sel.addEventListener('change', () => {
        if (p.key === 'detector' && o.setDetector) return o.setDetector(sel.value);
        store.setField(p.key, sel.value);
      });
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

  buildForm();

  // The form follows the model (only the fields whose value changed are touched).
  let shownModel: ModelState | null = null;
  let shownFiles: ReadonlyMap<string, Uint8Array> | null = null;
  scope.effect(() => {
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
    presetSel.value = presetOf(model)?.id ?? '';
  });
  scope.effect(() => {
    const cmd = document.getElementById('cmdline') as HTMLTextAreaElement | null;
    if (cmd) cmd.value = 'nanoBragg ' + store.args.value.args.map((w) => (/[\s"']/.test(w) || !w ? `"${w}"` : w)).join(' ');
  });

  // Field errors: the store's input errors, then the simulator's; else its warnings.
  function showFieldErrors(simErrors: Record<string, string> = {}, warnings: Record<string, string> = {}) {
    const errs = { ...simErrors, ...store.inputErrors.value };
    for (const p of PARAMS) {
      const row = form.querySelector<HTMLElement>(`.field[data-key="${p.key}"]`)!;
      const msg = errs[p.key] ?? '';
      const warn = msg ? '' : warnings[p.key] ?? '';
      row.classList.toggle('bad', !!msg);
      row.classList.toggle('warned', !!warn);
      const el = $(`${fieldId(p.key)}-msg`);
      if (el.textContent !== (msg || warn)) el.textContent = msg || warn;
      inputs.get(p.key)!.setAttribute('aria-invalid', msg ? 'true' : 'false');
    }
  }


  // the layers' group opens when the state has layers (the protein still, a link to one)
  scope.effect(() => {
    const g = form.querySelector<HTMLDetailsElement>('details[data-group="layers"]');
    if (g && isLayered(store.model.value)) g.open = true;
  });
  return { inputs, showFieldErrors };
}
