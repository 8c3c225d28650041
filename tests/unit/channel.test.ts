// The one typed worker channel (www/src/channel.ts): a Channel and `serve` joined by a
// MessageChannel, as the page and the worker are. Answers, events, order, the one error type
// (the crate's structured error) and abort.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Channel, WorkerError, abortError, serve, type ApiTable, type FromWorker, type Handlers, type Method, type ToWorker } from '../../www/src/channel';
import { errorInfo } from '../../www/src/protocol';

type Api = {
  add: Method<{ a: number; b: number }, number>;
  count: Method<{ n: number }, string, { i: number }>;
  bytes: Method<{ n: number }, Float32Array>;
  fail: Method<{ crate: boolean }, never>;
  wait: Method<{ ms: number }, number>;
};

// A Channel and `serve` joined by a MessageChannel for the length of `body`: the ports are
// closed even when an assertion fails (an open port keeps node's event loop alive, so a failure
// would otherwise hang the run instead of being reported).
async function withPair(handlers: Handlers<Api>, o: Parameters<typeof serve<Api>>[2], body: (ch: Channel<Api>) => Promise<void>) {
  const mc = new MessageChannel();
  const handle = serve<Api>(mc.port2, handlers, o);
  mc.port2.onmessage = (ev) => handle(ev.data as ToWorker<Api>);
  const ch = new Channel<Api>(mc.port1);
  mc.port1.onmessage = (ev) => ch.receive(ev.data as FromWorker);
  try {
    await body(ch);
  } finally {
    mc.port1.close();
    mc.port2.close();
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
// waits until `cond` holds (order, not wall-clock time: a loaded machine delays timers), failing
// with `what` after 5 s
async function until(cond: () => boolean, what: string) {
  for (const t0 = Date.now(); !cond(); await sleep(2)) {
    if (Date.now() - t0 > 5000) assert.fail(`timed out waiting: ${what}`);
  }
}
let kept: Float32Array | null = null;
const order: string[] = [];
let cancels = 0;
const handlers: Handlers<Api> = {
  add: ({ a, b }) => a + b,
  count: ({ n }, ctx) => {
    for (let i = 0; i < n; i++) ctx.emit({ i });
    return `counted ${n}`;
  },
  bytes: ({ n }, ctx) => {
    kept = new Float32Array(n).fill(1.5);
    ctx.transfer(kept.buffer);
    return kept;
  },
  fail: ({ crate }) => {
    // what the wasm module throws: a JS Error with the crate's serde fields
    if (crate) throw Object.assign(new Error('-hkl in.hkl line 3: not a number'), { kind: 'input', flag: '-hkl', field: null, file: 'in.hkl', line: 3, key: null });
    throw new TypeError('not the crate');
  },
  wait: async ({ ms }) => {
    order.push(`start ${ms}`);
    await sleep(ms);
    order.push(`end ${ms}`);
    return ms;
  },
};

test('a call answers with its handler\'s value; events come before the answer; calls run one at a time in order', async () => {
  await withPair(handlers, {}, async (ch) => {
    assert.equal(await ch.call('add', { a: 2, b: 3 }), 5);
    const seen: number[] = [];
    assert.equal(await ch.call('count', { n: 4 }, { onEvent: (e) => seen.push(e.i) }), 'counted 4');
    assert.deepEqual(seen, [0, 1, 2, 3]);
    order.length = 0;
    const r = await Promise.all([ch.call('wait', { ms: 30 }), ch.call('wait', { ms: 1 })]);
    assert.deepEqual(r, [30, 1]);
    assert.deepEqual(order, ['start 30', 'end 30', 'start 1', 'end 1'], 'the second waits for the first');
    assert.equal(ch.size, 0);
  });
});

test('an answer\'s buffers named by ctx.transfer are moved, not copied', async () => {
  await withPair(handlers, {}, async (ch) => {
    const a = await ch.call('bytes', { n: 8 });
    assert.deepEqual(Array.from(a), new Array(8).fill(1.5));
    assert.equal(kept!.byteLength, 0, 'the worker\'s copy is detached');
  });
});

test('one error type: the crate\'s structured error arrives with its kind and place; others with a message only', async () => {
  await withPair(handlers, { errText: (e) => (e instanceof TypeError ? `internal: ${e.message}` : (e as Error).message) }, async (ch) => {
    const e = await ch.call('fail', { crate: true }).then(() => null, (x) => x);
    assert.ok(e instanceof WorkerError && e instanceof Error);
    assert.equal(e.name, 'WorkerError');
    assert.equal(e.message, '-hkl in.hkl line 3: not a number');
    assert.deepEqual({ kind: e.kind, flag: e.flag, file: e.file, line: e.line }, { kind: 'input', flag: '-hkl', file: 'in.hkl', line: 3 });
    // what the page reads to mark the field (args.ts fieldOfError)
    assert.deepEqual(errorInfo(e), { kind: 'input', flag: '-hkl', field: null, file: 'in.hkl', line: 3, key: null });
    const o = await ch.call('fail', { crate: false }).then(() => null, (x) => x);
    assert.ok(o instanceof WorkerError);
    assert.equal(o.message, 'internal: not the crate', 'errText gives the message');
    assert.equal(o.kind, undefined);
    assert.deepEqual(errorInfo(o), {});
    // a cancelled call (the crate's kind "cancelled") is an AbortError
    assert.equal(new WorkerError({ message: 'render cancelled', kind: 'cancelled' }).name, 'AbortError');
    assert.equal(abortError('x').kind, 'cancelled');
  });
});

test('abort: the call rejects at once with an AbortError, onAbort stops it, the late answer only settles it', async () => {
  await withPair(handlers, { onCancel: () => cancels++ }, async (ch) => {
    const ctl = new AbortController();
    let aborted = 0;
    let settled = 0;
    order.length = 0;
    const p = ch.call('wait', { ms: 300 }, { signal: ctl.signal, onAbort: () => { aborted++; ch.cancel(); }, onSettled: () => settled++ });
    await until(() => order.length > 0, 'the worker started the call');
    ctl.abort('cancelled');
    const e = await p.then(() => null, (x) => x);
    assert.deepEqual(order, ['start 300'], 'rejected before the worker answered');
    assert.equal(e.name, 'AbortError');
    assert.equal(e.message, 'cancelled');
    assert.equal(aborted, 1);
    await until(() => cancels === 1, 'the cancel message overtook the queue');
    assert.equal(settled, 0, 'not settled before the worker answers');
    await until(() => settled === 1, 'the worker\'s answer arrived and settled it');
    assert.deepEqual(order, ['start 300', 'end 300']);
    // a reason given as an error keeps its message; an aborted signal never sends the call
    const c2 = new AbortController();
    c2.abort(abortError('superseded by a newer render'));
    const e2 = await ch.call('add', { a: 1, b: 1 }, { signal: c2.signal }).then(() => null, (x) => x);
    assert.equal(e2.message, 'superseded by a newer render');
    assert.equal(ch.size, 0);
  });
});

test('failAll: a worker that went rejects every waiting call with the error given', async () => {
  await withPair(handlers, {}, async (ch) => {
    const p = ch.call('wait', { ms: 50 });
    ch.failAll(abortError('the worker was restarted'));
    const e = await p.then(() => null, (x) => x);
    assert.equal(e.name, 'AbortError');
    assert.equal(e.message, 'the worker was restarted');
    assert.equal(ch.size, 0);
  });
});

// the table's types: a handler table must have every method with its types (compile-time)
const _typed: ApiTable = {} as Api;
void _typed;

test('a trapped module: the call that trapped gets its error, then the page is told why (to replace the worker)', async () => {
  let trapped: string | null = null;
  const mc = new MessageChannel();
  const handle = serve<Api>(mc.port2, handlers, {
    after: () => { if (trapped) { mc.port2.postMessage({ kind: 'trapped', message: trapped } satisfies FromWorker); trapped = null; } },
  });
  mc.port2.onmessage = (ev) => {
    const m = ev.data as ToWorker<Api>;
    if (m.kind === 'call' && m.method === 'fail') trapped = 'out of memory';
    handle(m);
  };
  const ch = new Channel<Api>(mc.port1);
  mc.port1.onmessage = (ev) => ch.receive(ev.data as FromWorker);
  const why = new Promise<string | undefined>((r) => { ch.onTrapped = r; });
  try {
    const e = await ch.call('fail', { crate: false }).then(() => null, (x) => x);
    assert.equal(e.message, 'not the crate');
    assert.equal(await why, 'out of memory');
  } finally {
    mc.port1.close();
    mc.port2.close();
  }
});
