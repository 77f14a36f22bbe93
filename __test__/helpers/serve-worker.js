'use strict';
// A worker_thread that serves methods for __test__/serve.test.js.
const { parentPort, threadId } = require('node:worker_threads');
const { Pool } = require('../../index.js');

// This thread's own event loop at work: timer ticks, and microtasks queued by `same`.
let ticks = 0;
let microtasks = 0;
setInterval(() => ticks++, 1).unref();

Pool.shared().serve({
  whoami() {
    return threadId;
  },
  same(x) {
    queueMicrotask(() => microtasks++);
    return x;
  },
  counts() {
    return { ticks, microtasks };
  },
  // Keeps this thread busy for `ms` (a CPU-bound handler), sync or async.
  busy(ms) {
    const until = performance.now() + ms;
    while (performance.now() < until);
    return ms;
  },
  async busyAsync(ms) {
    const until = performance.now() + ms;
    while (performance.now() < until);
    return ms;
  },
  // Blocks this thread until the caller sets view[0] (view[1] = 1 says it has started): a
  // synchronous handler that holds its thread's event loop.
  block(view) {
    Atomics.store(view, 1, 1);
    Atomics.wait(view, 0, 0);
    return 'returned';
  },
  // What the handler got, as a string (big strings come back in whatever encoding they need).
  describe(value) {
    return JSON.stringify(value).repeat(3);
  },
  async double(x) {
    await new Promise((resolve) => setImmediate(resolve));
    return { x: 2 * x, thread: threadId };
  },
  async slowDouble(x) {
    await new Promise((resolve) => setTimeout(resolve, 1));
    return { x: 2 * x, thread: threadId };
  },
  // Adds `delta` to every element of the caller's Int32Array; returns the sum it saw before.
  bump(view, delta) {
    let before = 0;
    for (let i = 0; i < view.length; i++) before += Atomics.add(view, i, delta);
    return before;
  },
  // As bump, for params holding a Date beside the view (they are posted whole): returns the
  // sum it saw before and the Date's time.
  bumpDated({ view, when }, delta) {
    let before = 0;
    for (let i = 0; i < view.length; i++) before += Atomics.add(view, i, delta);
    return [before, when.getTime()];
  },
  // Sets flags[0] = 1 when started; waits until the call's signal aborts, then records the
  // reason's name code in flags[1] (1 AbortError, 2 TimeoutError) and wakes the caller.
  // A result whose conversion takes a while (`keys` properties); flags[0] = 1 just before it
  // is returned, so the caller can terminate this thread while the result is being read.
  bigResult(flags, keys) {
    const result = {};
    for (let i = 0; i < keys; i++) result[`k${i}`] = i;
    Atomics.store(flags, 0, 1);
    Atomics.notify(flags, 0);
    return result;
  },
  async hold(flags, { signal }) {
    Atomics.store(flags, 0, 1);
    Atomics.notify(flags, 0);
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
    Atomics.store(flags, 1, signal.reason.name === 'TimeoutError' ? 2 : 1);
    Atomics.notify(flags, 1);
    return 'stopped';
  },
});
parentPort.postMessage('ready');
