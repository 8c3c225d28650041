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
