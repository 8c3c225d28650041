// A panel's mount/dispose (www/src/panel.ts): what mount registers in its scope (effects,
// listeners, anything else) is undone by dispose, in reverse order; mountPanels mounts in order.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createStore } from '../../www/src/state';
import { mountPanels, panel, type PanelContext } from '../../www/src/panel';

test('dispose undoes the effects, listeners and the rest that mount registered, in reverse order', () => {
  const store = createStore();
  const ctx = { store } as unknown as PanelContext;
  const log: string[] = [];
  const target = new EventTarget();
  const a = panel('a', ({ store }, scope) => {
    scope.effect(() => { log.push(`a sees N=${store.model.value.N}`); });
    scope.on(target, 'ping', () => log.push('a pinged'));
    scope.add(() => log.push('a undo 1'));
    return () => log.push('a undo 2');
  });
  const b = panel('b', (_ctx, scope) => { scope.add(() => log.push('b undo')); });
  const dispose = mountPanels(ctx, [a, b]);
  store.setField('N', '7');
  target.dispatchEvent(new Event('ping'));
  assert.deepEqual(log, ['a sees N=10', 'a sees N=7', 'a pinged']);
  log.length = 0;
  dispose();
  assert.deepEqual(log, ['b undo', 'a undo 2', 'a undo 1'], 'panels in reverse order, each scope in reverse');
  log.length = 0;
  store.setField('N', '8');
  target.dispatchEvent(new Event('ping'));
  assert.deepEqual(log, [], 'no effect or listener left');
  // mounted again, it works again
  a.mount(ctx);
  assert.deepEqual(log, ['a sees N=8']);
  a.dispose();
});

// The view controls (viewcontrols.ts, an older installer) register in the panel's scope: on a
// minimal document of their elements, dispose removes their listeners, effect and options.
test('the view controls\' listeners, effect and colour-map options go with their panel', async () => {
  class El extends EventTarget {
    value = ''; checked = false; disabled = false; placeholder = ''; textContent = ''; title = '';
    options: Opt[] = [];
    classList = { toggle() {} };
    setCustomValidity() {}
    add(o: Opt) { this.options.push(o); o.parent = this; }
  }
  class Opt {
    parent: El | null = null;
    constructor(readonly label: string, readonly value: string) {}
    remove() { this.parent?.options.splice(this.parent.options.indexOf(this), 1); }
  }
  const els = new Map<string, El>();
  const g = globalThis as Record<string, unknown>;
  const saved = { document: g.document, Option: g.Option };
  g.document = { getElementById: (id: string) => els.get(id) ?? els.set(id, new El()).get(id), activeElement: null };
  g.Option = Opt;
  try {
    const { installViewControls } = await import('../../www/src/viewcontrols');
    const { COLOUR_MAPS } = await import('../../www/src/state');
    const store = createStore();
    const view = { update() {}, hasImage: false };
    const p = panel('view settings', (_ctx, scope) => { installViewControls(store, view as never, () => {}, scope); });
    p.mount({ store } as unknown as PanelContext);
    const backend = els.get('backend')!;
    assert.equal(els.get('cmap')!.options.length, COLOUR_MAPS.length);
    backend.value = 'cpu';
    backend.dispatchEvent(new Event('change'));
    assert.equal(store.view.value.backend, 'cpu', 'the select sets the store');
    store.setView({ backend: 'gpu' });
    assert.equal(backend.value, 'gpu', 'the store sets the select');
    p.dispose();
    assert.equal(els.get('cmap')!.options.length, 0, 'its options removed');
    backend.value = 'cpu';
    backend.dispatchEvent(new Event('change'));
    assert.equal(store.view.value.backend, 'gpu', 'no listener left');
    store.setView({ backend: 'auto' });
    assert.equal(backend.value, 'cpu', 'no effect left');
  } finally {
    Object.assign(g, saved);
  }
});
