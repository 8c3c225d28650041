// The store's `shown` / `current` (the image shown and whether it is of the current settings)
// and `tasks` (the work Cancel aborts: one task per name).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { effect } from '@preact/signals-core';
import { PRESETS, createStore, isCurrent, type Shown } from '../../www/src/state';

const geometry = {} as Shown['geometry'];
function shownOf(store: ReturnType<typeof createStore>, kind: Shown['kind']): Shown {
  return {
    kind, data: new Float32Array(4), width: 2, height: 2, geometry, args: [...store.args.peek().args],
    words: [...store.args.peek().args], model: { ...store.model.peek() }, scale: kind === 'preview' ? 2 : 1, unit: kind === 'realistic' ? 'ADU' : 'photons',
  };
}

test('current: the image shown while its words are the store\'s; a change of settings makes it stale', () => {
  const store = createStore();
  assert.equal(store.current.value, null);
  const s = shownOf(store, 'full');
  store.shown.value = s;
  assert.equal(store.current.value, s);
  store.setField('N', '12');
  assert.equal(store.current.value, null, 'stale after a change');
  assert.equal(store.shown.value, s, 'still shown');
  store.setField('N', PRESETS[0].state.N);
  assert.equal(store.current.value, s, 'current again when the settings come back');
  // a preview is current too (its kind says it is one)
  const p = shownOf(store, 'preview');
  store.shown.value = p;
  assert.equal(store.current.value?.kind, 'preview');
});

test('current: a realistic still also needs its whole state (layers and detector effects are not all words)', () => {
  const still = PRESETS.find((p) => p.id === 'protein-still')!;
  const store = createStore(still.state);
  const s = shownOf(store, 'realistic');
  store.shown.value = s;
  assert.equal(store.current.value, s);
  const m = { ...store.model.peek(), gain: '2' };
  assert.equal(isCurrent(s, s.words, m), false, 'same words, other state: not current');
  assert.equal(isCurrent({ ...s, kind: 'full' }, s.words, m), true, 'a plain image: its words decide');
  assert.equal(isCurrent(null, s.words, m), false);
});

test('tasks: one per name while under way; busy; endTask only ends its own; cancel runs the hooks and aborts', () => {
  const store = createStore();
  const busy: boolean[] = [];
  const stop = effect(() => { busy.push(store.busy.value); });
  const a = store.task('render');
  assert.equal(store.task('render'), a, 'the task under way is reused');
  assert.equal(store.busy.value, true);
  const hooks: string[] = [];
  const f = store.task('fit', () => hooks.push(`fit hook (aborted: ${f.aborted})`));
  assert.notEqual(f, a);
  assert.deepEqual([...store.tasks.value.keys()], ['render', 'fit']);
  store.endTask('fit', new AbortController().signal);
  assert.ok(store.tasks.value.has('fit'), 'another signal does not end it');
  const reasons: unknown[] = [];
  a.addEventListener('abort', () => reasons.push(a.reason));
  store.cancelTasks();
  assert.deepEqual(hooks, ['fit hook (aborted: false)'], 'the hook runs before the signal aborts');
  assert.ok(a.aborted && f.aborted);
  assert.deepEqual(reasons, ['cancelled']);
  assert.equal(store.busy.value, false);
  const b = store.task('render');
  assert.notEqual(b, a, 'after a cancel a new task starts');
  assert.equal(b.aborted, false);
  store.endTask('render', b);
  assert.equal(store.busy.value, false);
  assert.deepEqual(busy, [false, true, false, true, false]);
  stop();
});
