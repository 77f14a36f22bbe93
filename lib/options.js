'use strict';
// Pool options: validated here, in one place, with errors that name the option; the names and
// limits are the contract's (src/bindings/contract.rs). Also the book's sizing rule, poolSize().

const os = require('node:os');
const { contract } = require('./native.js');
const { describe } = require('./errors.js');

const DEFAULTS = Object.freeze({ threads: 0, strategy: 'leastbusy', maxQueue: Infinity, onFull: 'reject', timeout: 0, niceIncrement: 0 });
const OPTION_NAMES = new Set(Object.keys(DEFAULTS));

function cores() {
  return typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
}

/** Resolves the `threads` option: 0 → cores, n < 0 → max(cores + n, 1), n > 0 → n. */
function resolveThreads(n) {
  if (typeof n !== 'number' || !Number.isInteger(n)) {
    throw new TypeError(`corepool: options.threads must be an integer, got ${describe(n)}`);
  }
  if (n > contract.maxThreads) throw new RangeError(`corepool: options.threads must be at most ${contract.maxThreads}, got ${n}`);
  if (n === 0) return cores();
  if (n < 0) return Math.max(cores() + n, 1);
  return n;
}

/** The options resolved and frozen (what `pool.options` shows); throws a TypeError or RangeError naming a bad one. */
function validateOptions(options) {
  if (options === undefined) options = {};
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`corepool: options must be an object, got ${describe(options)}`);
  }
  for (const key of Object.keys(options)) {
    if (!OPTION_NAMES.has(key)) {
      throw new TypeError(`corepool: unknown option '${key}' (expected ${[...OPTION_NAMES].join(', ')})`);
    }
  }
  const o = { ...DEFAULTS, ...options };
  const threads = resolveThreads(o.threads);
  if (!contract.strategies.includes(o.strategy)) {
    const names = contract.strategies.map((s) => `'${s}'`).join(', ');
    throw new TypeError(`corepool: options.strategy must be one of ${names}, got ${describe(o.strategy)}`);
  }
  let maxQueue = o.maxQueue;
  if (maxQueue === 'auto') maxQueue = threads * threads;
  else if (maxQueue !== Infinity && !(Number.isInteger(maxQueue) && maxQueue >= 0)) {
    throw new RangeError(`corepool: options.maxQueue must be a whole number ≥ 0, Infinity or 'auto', got ${describe(o.maxQueue)}`);
  }
  if (o.onFull !== 'reject' && o.onFull !== 'wait') {
    throw new TypeError(`corepool: options.onFull must be 'reject' or 'wait', got ${describe(o.onFull)}`);
  }
  if (typeof o.timeout !== 'number' || !(o.timeout >= 0)) {
    throw new RangeError(`corepool: options.timeout must be a number of ms ≥ 0 (0 or Infinity: none), got ${describe(o.timeout)}`);
  }
  const nice = o.niceIncrement;
  if (!Number.isInteger(nice) || nice < 0 || nice > contract.maxNiceIncrement) {
    throw new RangeError(`corepool: options.niceIncrement must be an integer from 0 to ${contract.maxNiceIncrement}, got ${describe(nice)}`);
  }
  return Object.freeze({ threads, strategy: o.strategy, maxQueue, onFull: o.onFull, timeout: o.timeout, niceIncrement: nice });
}

/** Resolved options as the native pool takes them (src/bindings/pool.rs, PoolOptions). */
function nativeOptions(o) {
  return {
    threads: o.threads,
    strategy: o.strategy,
    maxQueue: o.maxQueue,
    wait: o.onFull === 'wait',
    timeoutMs: o.timeout,
    niceIncrement: o.niceIncrement,
  };
}

/** Threads for a pool whose tasks wait `waitMs` for every `computeMs` of work: cores·(1 + wait/compute). */
function poolSize({ cores: c = cores(), waitMs = 0, computeMs = 1 } = {}) {
  for (const [name, v] of [
    ['cores', c],
    ['waitMs', waitMs],
    ['computeMs', computeMs],
  ]) {
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
      throw new RangeError(`poolSize: ${name} must be a finite number ≥ 0, got ${describe(v)}`);
    }
  }
  if (computeMs === 0) throw new RangeError('poolSize: computeMs must be > 0');
  return Math.max(1, Math.round(c * (1 + waitMs / computeMs)));
}

module.exports = { validateOptions, nativeOptions, poolSize };
