// Teaching controls of the app page (issue 8 §3): the crystal orientation as misset x/y/z
// sliders at the top of the panel, rotation by dragging on the image (drag.ts) with a visible
// Pan/Tilt/Spin mode for touch screens and a hint line, the φ player (player.ts) and the
// teaching preset's note. Everything goes through the store: the URL carries the orientation.
import { effect } from '@preact/signals-core';
import type { NanoBraggClient } from '../client';
import { PRESETS, presetOf, type Store } from '../state';
import { PARAM_BY_KEY, type ModelState } from '../params';
import type { ImageView } from '../view';
import type { Geometry } from '../protocol';
import { attachRotateDrag, type DragMode } from './drag';
import { formatMisset, imageFrame, parseMisset, type V3 } from './orientation';
import { createPlayer, type Player } from './player';

export interface TeachOptions {
  store: Store;
  view: ImageView;
  client: NanoBraggClient;
  /** Geometry of the image shown (null before the first). */
  geometry: () => Geometry | null;
  /** Geometry of the image shown when it was rendered from the current settings, else null. */
  shownGeometry: () => Geometry | null;
  save: (blob: Blob, name: string) => void;
  png: () => void;
  name: (ext: 'webm', phi?: string) => string;
  notice: (text: string, kind?: 'info' | 'warn') => void;
}

export interface Teach {
  player: Player;
  /** Resolve a random misset into angles (the field then holds them). */
  takeOverRandom(): Promise<V3 | null>;
}

const AXES = ['x', 'y', 'z'] as const;

/** The labels of the fields where `now` differs from a preset's state (at most three named). */
export function changedFields(preset: ModelState, now: ModelState): string[] {
  const keys = [...new Set([...Object.keys(preset), ...Object.keys(now)])].filter((k) => (preset[k] ?? '').trim() !== (now[k] ?? '').trim());
  const label = (k: string) => (k === 'misset' ? 'orientation' : (PARAM_BY_KEY.get(k)?.label ?? k));
  const names = keys.map((k) => label(k).charAt(0).toLowerCase() + label(k).slice(1));
  return names.length > 3 ? [...names.slice(0, 3), `${names.length - 3} more`] : names;
}

export function installTeaching(o: TeachOptions): Teach {
  const { store, view } = o;

  // ---- the preset's note -------------------------------------------------------------------
  const note = document.getElementById('preset-note')!;
  // a link with preset=ID keeps that preset's note even when other parameters change it (the
  // page rewrites its URL at once: the navigation entry still has the one loaded)
  const loaded = (performance.getEntriesByType?.('navigation')[0] as PerformanceNavigationTiming | undefined)?.name ?? location.href;
  let noteId = new URL(loaded, location.href).searchParams.get('preset') ?? '';
  effect(() => {
    const p = presetOf(store.model.value);
    if (p) noteId = p.id;
    const shown = PRESETS.find((q) => q.id === noteId);
    note.hidden = !shown?.note;
    if (shown?.note) {
      note.innerHTML = '';
      const b = document.createElement('strong');
      // the lesson stays after a slider or a drag changed its state; its title says so (it
      // read as the preset's own title while the Preset menu no longer named it)
      const changed = p ? [] : changedFields(shown.state, store.model.value);
      b.textContent = changed.length ? `${shown.label}, changed: ${changed.join(', ')}. ` : `${shown.label}. `;
      note.append(b, shown.note);
      note.dataset.preset = shown.id;
      note.dataset.changed = changed.join(',');
    }
  });

  // ---- misset: angles, random ---------------------------------------------------------------
  let resolving: Promise<V3 | null> | null = null;
  const angles = (): V3 | null => {
    const a = parseMisset(store.model.peek().misset);
    return Array.isArray(a) ? a : null;
  };
  function setAngles(a: V3, live: boolean) {
    store.setField('misset', formatMisset(a), live ? 'preview' : 'full');
  }
  /** The misset angles the crate drew for `-misset random`: the resolved orientation of the
   * image shown (`Geometry.randomMisset` of its prepared plan; without `-misset_seed` upstream
   * seeds it from the clock, so only the shown image's plan knows the angles on screen). Before
   * the image of the current settings arrives, its frame is awaited. */
  async function takeOverRandom(): Promise<V3 | null> {
    if (parseMisset(store.model.peek().misset) !== 'random') return angles();
    resolving ??= (async () => {
      const model = store.model.peek();
      try {
        let g = o.shownGeometry();
        while (!g) {
          await new Promise((ok) => window.addEventListener('nanobragg-frame', ok, { once: true }));
          if (parseMisset(store.model.peek().misset) !== 'random') return angles();
          g = o.shownGeometry();
        }
        const drawn = g.randomMisset;
        if (!drawn) throw new Error('the crate drew no random orientation');
        const a = [...drawn] as V3;
        if (store.model.peek().misset?.trim() === 'random') {
          setAngles(a, false);
          o.notice(`The random orientation (seed ${model.misset_seed || 'default'}) is misset ${formatMisset(a)}: the sliders and drags now start from it.`);
        }
        return a;
      } catch (e) {
        o.notice(`misset random: could not resolve the orientation (${(e as Error).message})`, 'warn');
        return null;
      } finally {
        resolving = null;
      }
    })();
    return resolving;
  }

  // ---- sliders ------------------------------------------------------------------------------
  const box = document.getElementById('orientation')!;
  box.innerHTML = `<div class="orient-head"><span>Crystal orientation <span class="unit">(misset, °)</span></span>
    <button type="button" id="misset-reset" title="Misset 0 0 0">Reset</button></div>`;
  const sliders: HTMLInputElement[] = [];
  const numbers: HTMLInputElement[] = [];
  AXES.forEach((ax, i) => {
    const row = document.createElement('div');
    row.className = 'orient-row';
    row.innerHTML = `<label for="misset-${ax}">${ax}</label>
      <input type="range" id="misset-${ax}" min="-180" max="180" step="0.5" value="0" aria-label="Misset about ${ax} (degrees)">
      <input type="number" id="misset-${ax}-value" min="-180" max="180" step="0.5" value="0" aria-label="Misset about ${ax} (degrees), value">`;
    const r = row.querySelector<HTMLInputElement>('input[type=range]')!;
    const n = row.querySelector<HTMLInputElement>('input[type=number]')!;
    sliders.push(r);
    numbers.push(n);
    const apply = async (v: number, live: boolean) => {
      let a = angles();
      if (!a) a = await takeOverRandom();
      if (!a || !Number.isFinite(v)) return;
      a = [...a] as V3;
      a[i] = v;
      setAngles(a, live);
    };
    r.addEventListener('input', () => void apply(+r.value, true));
    r.addEventListener('change', () => void apply(+r.value, false));
    n.addEventListener('change', () => {
      const v = Number(n.value);
      const ok = n.value.trim() !== '' && Number.isFinite(v);
      n.setCustomValidity(ok ? '' : `misset ${ax}: "${n.value}" is not a number (degrees)`);
      if (ok) void apply(v, false);
    });
    box.appendChild(row);
  });
  const randomNote = document.createElement('div');
  randomNote.className = 'hint';
  randomNote.id = 'misset-random-note';
  box.appendChild(randomNote);
  document.getElementById('misset-reset')!.addEventListener('click', () => setAngles([0, 0, 0], false));
  effect(() => {
    const m = parseMisset(store.model.value.misset);
    const random = m === 'random';
    randomNote.textContent = random
      ? 'Random orientation (from the misset seed): move a slider or drag the image to take it over.'
      : m === null ? 'The misset field does not hold three angles: fix it in Crystal below.' : '';
    box.classList.toggle('random', random);
    if (!Array.isArray(m)) return;
    m.forEach((v, i) => {
      const w = ((v + 180) % 360 + 360) % 360 - 180; // slider range
      if (document.activeElement !== sliders[i]) sliders[i].value = String(w);
      if (document.activeElement !== numbers[i]) numbers[i].value = String(+v.toFixed(2));
    });
  });

  // ---- drag on the image ----------------------------------------------------------------------
  const modeBox = document.getElementById('drag-mode')!;
  let dragMode: DragMode = 'pan';
  modeBox.innerHTML = `<span class="drag-label">Drag:</span>` + (['pan', 'tilt', 'spin'] as DragMode[]).map((m) =>
    `<button type="button" data-mode="${m}" aria-pressed="${m === 'pan'}" title="${
      m === 'pan' ? 'Dragging the image pans it' : m === 'tilt' ? 'Dragging the image tilts the crystal (as Shift+drag)' : 'Dragging the image spins the crystal about the beam (as Alt+drag)'
    }">${m[0].toUpperCase() + m.slice(1)}</button>`).join('');
  modeBox.addEventListener('click', (e) => {
    const b = (e.target as HTMLElement).closest<HTMLButtonElement>('button[data-mode]');
    if (!b) return;
    dragMode = b.dataset.mode as DragMode;
    for (const x of modeBox.querySelectorAll('button')) x.setAttribute('aria-pressed', String(x === b));
    view.canvas.classList.toggle('rotate-mode', dragMode !== 'pan');
  });
  attachRotateDrag(view, {
    mode: () => dragMode,
    angles,
    needAngles: () => void takeOverRandom(),
    frame: () => {
      const g = o.geometry();
      return g ? imageFrame(g, store.model.peek()) : null;
    },
    set: setAngles,
  });

  // ---- the φ player ---------------------------------------------------------------------------
  const player = createPlayer(document.getElementById('player')!, {
    store, view: o.view, save: o.save, png: o.png, name: o.name, notice: o.notice,
  }, document.getElementById('player-export') ?? undefined);
  return { player, takeOverRandom };
}
