// The 3D view beside the image and the predicted spots on it (panel3d.ts): it predicts the shown
// crystal as the settings change (one prediction in flight, the latest wins: predictfeed.ts), and
// again when a realistic still shows an atomic model's crystal; open and closed by its button,
// the key 3 and the URL's `view3d=1`.
import { isLayered } from '../layers';
import { Teach3D } from '../panel3d';
import { panel } from '../panel';

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;

export const threeDPanel = panel('3D view', ({ store, client, view, page }, scope) => {
  const teach = new Teach3D({
    client, image: view, stage: $('stage'), styleRoot: document,
    misset: () => store.model.peek().misset ?? '',
    phi: () => Number(store.model.peek().phi) || 0,
    setMisset: (v, final) => store.setField('misset', v, final ? 'full' : 'preview'),
    onOpenChange: (open) => set3d(open),
  });
  page.api.teach3d = teach;
  const dark = matchMedia('(prefers-color-scheme: dark)');
  const theme3d = () => {
    const t = store.view.value.theme;
    teach.setTheme(t === 'auto' ? (dark.matches ? 'dark' : 'light') : t);
  };
  scope.on(dark, 'change', theme3d);
  scope.effect(theme3d);
  scope.effect(() => teach.setLabels(store.view.value.labels));

  const fileIds = new WeakMap<object, number>();
  let fileSeq = 0;
  const fileId = (files: object) => {
    if (!fileIds.has(files)) fileIds.set(files, ++fileSeq);
    return String(fileIds.get(files));
  };
  // the prediction follows the model
  scope.effect(() => {
    void store.args.value;
    const files = store.files.value;
    if (Object.keys(store.inputErrors.value).length) return;
    const id = fileId(files);
    // the shown crystal: with an atomic model, its cell once the chain has read it
    const m = store.model.peek();
    if (isLayered(m) && (m.pdb ?? '').trim() && !page.modelCells.has(m.pdb.trim())) return;
    teach.update(page.words(), Object.fromEntries(files), id, store.changed.peek().mode === 'preview');
  });
  // a realistic still: its crystal (an atomic model's cell, known now)
  scope.effect(() => {
    if (store.shown.value?.kind !== 'realistic') return;
    const files = store.files.peek();
    teach.update(page.words(), Object.fromEntries(files), fileId(files), false);
  });

  function set3d(open: boolean) {
    $('view3d').setAttribute('aria-pressed', String(open));
    if (open) page.rest.view3d = '1';
    else delete page.rest.view3d;
    store.setView({}); // rewrite the URL
    if (open && !teach.isOpen) {
      teach.open().catch((e) => page.showNotice((e as Error).message, 'warn'));
    } else if (!open && teach.isOpen) teach.close();
  }
  scope.on($('view3d'), 'click', () => set3d(!teach.isOpen));
  scope.on(window, 'keydown', (e) => {
    const t = e.target as HTMLElement;
    if (t.closest('input, select, textarea') || e.ctrlKey || e.metaKey || e.altKey || e.key !== '3') return;
    set3d(!teach.isOpen);
  });
  if (page.rest.view3d === '1') set3d(true);
  return () => { if (teach.isOpen) teach.close(); };
});
