// The panel's controls: the parameter form with the preset menu (form.ts) and the view settings
// (viewcontrols.ts), bound to the store.
import { PRESETS, VIEW_DEFAULTS } from '../state';
import { isLayered } from '../layers';
import { createForm } from '../form';
import { installViewControls } from '../viewcontrols';
import type { DetectorChoice } from '../protocol';
import { panel } from '../panel';

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;

export const formPanel = panel('form', ({ store, client, page }, scope) => {
  const form = $('params');
  const presetSel = $<HTMLSelectElement>('preset');
  const presetOptions = PRESETS.map((p) => new Option(p.label, p.id));
  for (const o of presetOptions) presetSel.add(o);
  scope.add(() => { for (const o of presetOptions) o.remove(); });
  const { showFieldErrors } = createForm({ store, form, presetSel, setDetector: (v) => setDetector(v) }, scope);
  page.showFieldErrors = showFieldErrors;

  /** The crate's detector presets, kept from the first module that started (a cancelled render
   * restarts the worker; its list does not change). */
  let detectorList: DetectorChoice[] = [];
  const detectors = (): DetectorChoice[] => (detectorList = client.info?.detectors ?? detectorList);
  /** The detector model: its pixels come from the crate's preset; with the layers on, its kind's
   * detector effects come too (a CCD's read-out noise and PSF, a photon counter's none). */
  function setDetector(name: string) {
    const m = { ...store.model.peek() };
    if (name) m.detector = name;
    else delete m.detector;
    const d = detectors().find((x) => x.name === name);
    if (d && isLayered(m)) {
      m.readout = String(d.effects.readout);
      m.psf = String(d.effects.psfUm);
      m.gain = String(d.effects.gain);
    }
    store.setModel(m);
  }

  // ---- presets --------------------------------------------------------------------------------
  scope.on(presetSel, 'change', () => {
    const p = PRESETS.find((p) => p.id === presetSel.value);
    if (p) {
      store.setModel(p.state);
      // the lesson's view (the crystal-size preset's linear-ish scale), or back to the defaults'
      const v = store.view.peek();
      if (p.view) store.setView(p.view);
      else if (v.scaling !== VIEW_DEFAULTS.scaling && PRESETS.some((q) => q.view?.scaling === v.scaling)) store.setView({ scaling: VIEW_DEFAULTS.scaling });
    }
  });
});

export const viewPanel = panel('view settings', ({ store, view, page }, scope) => {
  page.showLevels = installViewControls(store, view, (t) => page.applyTheme(t), scope);
  scope.on($('fit'), 'click', () => view.fit());
});
