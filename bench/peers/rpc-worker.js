'use strict';
// The worker side of rpc-worker-pool.js (the book's worker.js): a command table and a message
// handler that answers { id, method, params } with { id, result } or { id, error }.
const { parentPort, workerData } = require('node:worker_threads');
const Mustache = require('mustache');

const commands = {
  echo(value) {
    return value;
  },
  add(a, b) {
    return a + b;
  },
  // The book's square_sum also awaited a 100 ms timer to stand in for I/O; that is left out so
  // the command is the same work as corepool's square_sum.
  square_sum(max) {
    let sum = 0;
    for (let i = 0; i < max; i++) sum += Math.sqrt(i);
    return sum;
  },
  fibonacci(limit) {
    let prev = 1n;
    let next = 0n;
    let swap;
    while (limit) {
      swap = prev;
      prev = prev + next;
      next = swap;
      limit--;
    }
    return String(next);
  },
  render(template, data, partials) {
    return Mustache.render(template, data, partials);
  },
  sleep(ms) {
    return new Promise((resolve) => setTimeout(() => resolve(ms), ms));
  },
  /** Which worker of the pool this is (its index). */
  worker() {
    return workerData?.index ?? -1;
  },
};

function dispatch(method, args) {
  if (Object.hasOwn(commands, method)) return commands[method](...args);
  throw Object.assign(new TypeError(`command not found: ${method}`), { code: -32601 });
}

function asyncOnMessageWrap(fn) {
  return async function (msg) {
    parentPort.postMessage(await fn(msg));
  };
}

parentPort.on(
  'message',
  asyncOnMessageWrap(async ({ method, params, id }) => {
    try {
      return { result: await dispatch(method, params), id };
    } catch (err) {
      return { error: { code: err.code ?? -32000, message: err.message }, id };
    }
  }),
);
