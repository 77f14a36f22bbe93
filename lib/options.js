'use strict';
// Pool options: validated here, in one place, with errors that name the option; the names and
// limits are the contract's (src/bindings/contract.rs). Also the book's sizing rule, poolSize().

const os = require('node:os');
const path = require('node:path');
const { fileURLToPath } = require('node:url');
const { contract, native } = require('./native.js');
const { describe } = require('./errors.js');

const DEFAULTS = Object.freeze({ threads: 0, strategy: 'leastbusy', maxQueue: Infinity, onFull: 'reject', timeout: 0, niceIncrement: 0 });
/** Options of a pool of JavaScript workers started from a task file (`filename`), as Piscina names them. */
const FILE_DEFAULTS = Object.freeze({
  minThreads: undefined,
  maxThreads: undefined,
  idleTimeout: 1000,
  concurrency: 1,
  nativeThreads: 0,
  resourceLimits: undefined,
  env: undefined,
  argv: undefined,
  execArgv: undefined,
  workerData: undefined,
});
const OPTION_NAMES = new Set([...Object.keys(DEFAULTS), 'filename', ...Object.keys(FILE_DEFAULTS)]);

function cores() {
  return typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
}

/** Resolves a thread count: 0 → cores, n < 0 → max(cores + n, 1), n > 0 → n. */
function resolveThreads(n, name = 'threads') {
  if (typeof n !== 'number' || !Number.isInteger(n)) {
    throw new TypeError(`corepool: options.${name} must be an integer, got ${describe(n)}`);
  }
  if (n > contract.maxThreads) throw new RangeError(`corepool: options.${name} must be at most ${contract.maxThreads}, got ${n}`);
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
  if (o.onFull !== 'reject' && o.onFull !== 'wait') {
    throw new TypeError(`corepool: options.onFull must be 'reject' or 'wait', got ${describe(o.onFull)}`);
  }
  // The one rule of every timeout, the calls' own (src/bindings/pool/arguments.rs); given as
  // undefined, the default.
  if (o.timeout === undefined) o.timeout = DEFAULTS.timeout;
  const timeoutProblem = native.timeoutProblem(o.timeout);
  if (timeoutProblem !== null) throw new RangeError(`corepool: options.timeout ${timeoutProblem}`);
  const nice = o.niceIncrement;
  if (!Number.isInteger(nice) || nice < 0 || nice > contract.maxNiceIncrement) {
    throw new RangeError(`corepool: options.niceIncrement must be an integer from 0 to ${contract.maxNiceIncrement}, got ${describe(nice)}`);
  }
  const common = { strategy: o.strategy, onFull: o.onFull, timeout: o.timeout, niceIncrement: nice };
  if (o.filename === undefined) {
    for (const key of Object.keys(FILE_DEFAULTS)) {
      if (options[key] !== undefined) throw new TypeError(`corepool: options.${key} is for a pool of JavaScript workers: give options.filename too`);
    }
    return Object.freeze({ threads, ...common, maxQueue: maxQueue(o.maxQueue, threads) });
  }
  return Object.freeze({ ...fileOptions(o, options), ...common });
}

function maxQueue(value, threads) {
  if (value === 'auto') return threads * threads;
  if (value !== Infinity && !(Number.isInteger(value) && value >= 0)) {
    throw new RangeError(`corepool: options.maxQueue must be a whole number ≥ 0, Infinity or 'auto', got ${describe(value)}`);
  }
  return value;
}

/** A pool of JavaScript workers: `threads` are its workers (or minThreads..maxThreads of them). */
function fileOptions(o, given) {
  let filename = o.filename;
  if (filename instanceof URL || (typeof filename === 'string' && filename.startsWith('file:'))) {
    try {
      filename = fileURLToPath(filename);
    } catch (e) {
      throw new TypeError(`corepool: options.filename is not a file URL: ${e.message}`, { cause: e });
    }
  }
  if (typeof filename !== 'string' || filename === '') {
    throw new TypeError(`corepool: options.filename must be the path or file: URL of a task file, got ${describe(o.filename)}`);
  }
  const f = { ...FILE_DEFAULTS, ...given };
  if (given.threads !== undefined && (given.minThreads !== undefined || given.maxThreads !== undefined)) {
    throw new TypeError('corepool: give options.threads, or options.minThreads and maxThreads, not both');
  }
  const threads = resolveThreads(o.threads);
  const minThreads = f.minThreads === undefined ? Math.min(threads, f.maxThreads === undefined ? threads : resolveThreads(f.maxThreads, 'maxThreads')) : resolveThreads(f.minThreads, 'minThreads');
  const maxThreads = f.maxThreads === undefined ? Math.max(threads, minThreads) : resolveThreads(f.maxThreads, 'maxThreads');
  if (minThreads > maxThreads) throw new RangeError(`corepool: options.minThreads (${minThreads}) is more than options.maxThreads (${maxThreads})`);
  if (typeof f.idleTimeout !== 'number' || !(f.idleTimeout >= 0)) {
    throw new RangeError(`corepool: options.idleTimeout must be a number of ms ≥ 0, got ${describe(f.idleTimeout)}`);
  }
  if (f.concurrency !== Infinity && !(Number.isInteger(f.concurrency) && f.concurrency >= 1)) {
    throw new RangeError(`corepool: options.concurrency must be a whole number ≥ 1 or Infinity, got ${describe(f.concurrency)}`);
  }
  if (!Number.isInteger(f.nativeThreads) || f.nativeThreads < 0 || f.nativeThreads > contract.maxThreads) {
    throw new RangeError(`corepool: options.nativeThreads must be an integer from 0 to ${contract.maxThreads}, got ${describe(f.nativeThreads)}`);
  }
  for (const key of ['resourceLimits', 'env']) {
    if (f[key] !== undefined && (f[key] === null || typeof f[key] !== 'object')) {
      throw new TypeError(`corepool: options.${key} must be an object, got ${describe(f[key])}`);
    }
  }
  for (const key of ['argv', 'execArgv']) {
    if (f[key] !== undefined && !Array.isArray(f[key])) throw new TypeError(`corepool: options.${key} must be an array, got ${describe(f[key])}`);
  }
  return {
    filename: path.resolve(filename),
    threads: minThreads,
    minThreads,
    maxThreads,
    idleTimeout: f.idleTimeout,
    concurrency: f.concurrency,
    nativeThreads: f.nativeThreads,
    maxQueue: maxQueue(o.maxQueue, maxThreads),
    resourceLimits: f.resourceLimits,
    env: f.env,
    argv: f.argv,
    execArgv: f.execArgv,
    workerData: f.workerData,
  };
}

/** Resolved options as the native pool takes them (src/bindings/pool/options.rs, PoolOptions). */
function nativeOptions(o) {
  return {
    threads: o.filename === undefined ? o.threads : o.nativeThreads,
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
