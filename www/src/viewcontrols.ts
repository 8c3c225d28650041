// The view settings in the toolbar and panel (colour map, scaling, contrast, black and white
// levels, rings, beam centre, hkl labels, backend, precision) bound both ways to the store's view
// settings; the image view follows them (a colour change does not re-render).
import { COLOUR_MAPS, parseViewValue, type Store, type Theme, type ViewSettings } from './state';
import type { ImageView } from './view';
import type { Scope } from './panel';

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;

function fmtNum(v: number) {
  if (!Number.isFinite(v)) return '∞';
  return Math.abs(v) >= 1e4 || (v !== 0 && Math.abs(v) < 1e-2) ? v.toExponential(2) : +v.toPrecision(4);
}

/** Binds the controls (its listeners, effect and colour-map options registered in `scope`, undone
 * with the panel); returns `showLevels` (the automatic levels as the level boxes' placeholders,
 * after each new image). `applyTheme` follows the theme setting. */
export function installViewControls(store: Store, view: ImageView, applyTheme: (t: Theme) => void, scope: Scope): () => void {
  const cmapSel = $<HTMLSelectElement>('cmap');
  const options = COLOUR_MAPS.map((c) => new Option(c.label, c.value));
  for (const o of options) cmapSel.add(o);
  scope.add(() => { for (const o of options) o.remove(); });
  const backendSel = $<HTMLSelectElement>('backend');
  const precisionSel = $<HTMLSelectElement>('precision');
  const scalingSel = $<HTMLSelectElement>('scaling');
  const contrast = $<HTMLInputElement>('contrast');
  const levelMin = $<HTMLInputElement>('level-min');
  const levelMax = $<HTMLInputElement>('level-max');
  const ringsCb = $<HTMLInputElement>('rings');
  const beamCb = $<HTMLInputElement>('beamc');
  const labelsCb = $<HTMLInputElement>('labels');

  scope.on(backendSel, 'change', () => store.setView({ backend: backendSel.value as ViewSettings['backend'] }));
  scope.on(precisionSel, 'change', () => store.setView({ precision: precisionSel.value as ViewSettings['precision'] }));
  scope.on(cmapSel, 'change', () => store.setView({ cmap: cmapSel.value as ViewSettings['cmap'] }));
  scope.on(scalingSel, 'change', () => store.setView({ scaling: scalingSel.value as ViewSettings['scaling'] }));
  scope.on(contrast, 'input', () => store.setView({ contrast: +contrast.value }));
  scope.on(ringsCb, 'change', () => store.setView({ rings: ringsCb.checked }));
  scope.on(beamCb, 'change', () => store.setView({ beamc: beamCb.checked }));
  scope.on(labelsCb, 'change', () => store.setView({ labels: labelsCb.checked }));
  for (const [el, key] of [[levelMin, 'min'], [levelMax, 'max']] as const) {
    scope.on(el, 'change', () => {
      const r = parseViewValue(key, el.value, key === 'min' ? 'black level' : 'white level');
      el.setCustomValidity(r.error ?? '');
      el.title = r.error ?? '';
      el.classList.toggle('bad', !!r.error);
      if (!r.error) store.setView({ [key]: r.value as number | null });
    });
  }

  scope.effect(() => {
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

  return showLevels;
}
