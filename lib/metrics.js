'use strict';
// corepool/metrics: what a pool does, as Prometheus collectors (prom-client, an optional peer)
// or OpenTelemetry instruments (an optional peer too: the caller hands in its own Meter).
//
// Two sources feed them:
// - the diagnostics channels (lib/channels.js): every call's method, outcome and time to settle,
//   counted as it settles, whichever Pool or remote pool made it;
// - the `stats()` of what is watched (`watch(pool)`, `watch(host)`), read when the metrics are
//   collected (a Prometheus scrape, an OpenTelemetry export): queue depth, running, threads,
//   completed and failed, the native wait and run time percentiles, worker exits, a NATS host's
//   figures and its durable jobs' counts.
//
// Bounded cardinality: a label takes the first `maxMethods` method names seen (100 unless
// told); later names, names longer than MAX_METHOD_LENGTH and methods that are not strings
// count under OTHER_METHOD; request() and handle() calls under JSONRPC_METHOD. Outcomes are the error table's names (or 'ok', or 'error' for a code
// outside it); pools and hosts are labelled with the name given to watch() (UNNAMED otherwise).

const { callChannel, renderChannel, jobChannel } = require('./channels.js');
const { contract } = require('./native.js');
const { describe } = require('./errors.js');
const { Pool, kWorkerExits } = require('./pool.js');

const OTHER_METHOD = '__other__';
/** The method label of request() and handle() calls, whose methods are inside the JSON-RPC. */
const JSONRPC_METHOD = '__jsonrpc__';
const UNNAMED = 'unnamed';
const MAX_METHOD_LENGTH = 100;
const DEFAULT_MAX_METHODS = 100;
/** Seconds: calls of a native pool settle in microseconds, a NATS hop in milliseconds. */
const DEFAULT_BUCKETS = [0.00001, 0.00005, 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10];
const OUTCOMES = new Map(contract.errorCodes.map((c) => [c.code, c.name]));

/** Method names as label values, at most `max` distinct ones. */
class MethodNames {
  #seen = new Set();
  #max;
  constructor(max) {
    this.#max = max;
  }
  label(method) {
    if (method === null) return JSONRPC_METHOD;
    if (typeof method !== 'string' || method.length > MAX_METHOD_LENGTH) return OTHER_METHOD;
    if (this.#seen.has(method)) return method;
    if (this.#seen.size >= this.#max) return OTHER_METHOD;
    this.#seen.add(method);
    return method;
  }
}

function outcomeOf(code) {
  return code === 0 ? 'ok' : (OUTCOMES.get(code) ?? 'error');
}

function readOptions(options, known) {
  if (options === undefined) return {};
  if (options === null || typeof options !== 'object') throw new TypeError(`corepool/metrics: options must be an object, got ${describe(options)}`);
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) throw new TypeError(`corepool/metrics: unknown option '${key}' (expected ${known.join(', ')})`);
  }
  const max = options.maxMethods ?? DEFAULT_MAX_METHODS;
  if (!Number.isInteger(max) || max < 0) throw new RangeError(`corepool/metrics: maxMethods must be a whole number ≥ 0, got ${describe(max)}`);
  return options;
}

/** What watch() keeps: pools and hosts by the name they are labelled with. */
class Watched {
  pools = new Map(); // name → Pool
  hosts = new Map(); // name → NATS host (lib/nats/host.js)
  names = new WeakMap(); // Pool → name, for the channels' events

  add(target, name) {
    if (name === undefined) name = UNNAMED;
    if (typeof name !== 'string' || name.length === 0 || name.length > MAX_METHOD_LENGTH) {
      throw new TypeError(`corepool/metrics: watch() name must be a string of 1 to ${MAX_METHOD_LENGTH} characters, got ${describe(name)}`);
    }
    // corepool/nats is loaded only to tell its objects (it loads no NATS package by itself).
    const { Host, RemotePool } = require('./nats.js');
    if (target instanceof Pool) this.pools.set(name, target);
    else if (target instanceof Host) this.hosts.set(name, target);
    else if (!(target instanceof RemotePool)) {
      throw new TypeError(`corepool/metrics: watch() takes a Pool, a RemotePool or a NATS host, got ${describe(target)}`);
    }
    // A Pool's and a RemotePool's calls are labelled with the name.
    if (!(target instanceof Host)) this.names.set(target, name);
  }

  poolName(pool) {
    return this.names.get(pool) ?? UNNAMED;
  }

  /** `[name, stats]` of each watched pool whose stats() answers. */
  *poolStats() {
    for (const [name, pool] of this.pools) {
      let stats;
      try {
        stats = pool.stats();
      } catch {
        continue; // closed, or a handle whose native pool is gone
      }
      yield [name, stats, pool];
    }
  }

  *hostStats() {
    for (const [name, host] of this.hosts) {
      let stats;
      try {
        stats = host.stats().data;
      } catch {
        continue;
      }
      if (stats !== null && typeof stats === 'object') yield [name, stats];
    }
  }
}

/** Subscribes `onCall(context, channelName)` to every channel's asyncEnd; returns the unsubscriber. */
function listen(onCall) {
  const subscriptions = [
    [callChannel, 'call'],
    [renderChannel, 'render'],
    [jobChannel, 'job'],
  ].map(([channel, name]) => {
    const handlers = { asyncEnd: (context) => onCall(context, name) };
    channel.subscribe(handlers);
    return () => channel.unsubscribe(handlers);
  });
  return () => subscriptions.forEach((unsubscribe) => unsubscribe());
}

/** Per-pool figures read at collection: [metric name, help, (stats) → number]. */
const POOL_GAUGES = [
  ['queued', 'Calls waiting in the pool queues', (s) => s.queued + s.waiting],
  ['running', 'Calls running now', (s) => s.running],
  ['threads', 'Threads (native, or the JavaScript workers of a task-file pool)', (s, pool) => pool.threads],
  ['servers', 'JavaScript threads serving methods', (s) => s.servers.length],
];
const POOL_COUNTERS = [
  ['completed_total', 'Calls completed by the pool threads', (s) => s.completed],
  ['failed_total', 'Calls the pool threads failed', (s) => s.failed],
  ['worker_exits_total', 'Task-file workers that exited unexpectedly and were replaced', (s, pool) => pool[kWorkerExits] ?? 0],
];
/** stats() percentiles and the quantile each is (a Prometheus summary's label). */
const PERCENTILES = ['p50', 'p99', 'max'];
const QUANTILES = { p50: '0.5', p99: '0.99', max: '1' };
// Every number of a host's stats().data and of its jobs' (nats.d.ts), each a figure label.
const HOST_FIGURES = ['messages', 'inHand', 'peakInHand', 'busy', 'cancelled', 'cancelsIgnored', 'repliesRefused'];
const JOB_FIGURES = ['running', 'peakRunning', 'done', 'failed', 'retried', 'dead', 'duplicates'];

/**
 * Prometheus collectors on `registry` (prom-client's Registry; its default registry when not
 * given). Options: `prefix` ('corepool_'), `maxMethods`, `buckets` (seconds, for
 * `<prefix>call_duration_seconds`). Returns `{ watch(target, name?), close() }`.
 */
function prometheus(options) {
  const o = readOptions(options, ['registry', 'prefix', 'maxMethods', 'buckets']);
  const client = require('prom-client');
  const registry = o.registry ?? client.register;
  const prefix = o.prefix ?? 'corepool_';
  const methods = new MethodNames(o.maxMethods ?? DEFAULT_MAX_METHODS);
  const watched = new Watched();
  const registers = [registry];
  const names = [];
  const metric = (Type, config) => {
    names.push(config.name);
    return new Type({ ...config, registers });
  };

  const calls = metric(client.Counter, { name: `${prefix}calls_total`, help: 'Calls settled, by kind, method and outcome', labelNames: ['pool', 'kind', 'method', 'outcome'] });
  const duration = metric(client.Histogram, {
    name: `${prefix}call_duration_seconds`,
    help: 'Time from a call to its settlement on the calling thread (queue wait and run)',
    labelNames: ['pool', 'kind', 'method'],
    buckets: o.buckets ?? DEFAULT_BUCKETS,
  });
  const stop = listen((c, channel) => {
    const pool = watched.poolName(c.pool);
    const method = methods.label(c.method);
    const kind = channel === 'call' ? c.kind : channel;
    calls.inc({ pool, kind, method, outcome: outcomeOf(c.code) });
    if (typeof c.ms === 'number') duration.observe({ pool, kind, method }, c.ms / 1000);
  });

  // Gauges are set, and counters the pool keeps itself reported as read, at each collection.
  for (const [Metric, list, report] of [
    [client.Gauge, POOL_GAUGES, 'set'],
    [client.Counter, POOL_COUNTERS, 'inc'],
  ]) {
    for (const [name, help, read] of list) {
      metric(Metric, {
        name: `${prefix}${name}`,
        help,
        labelNames: ['pool'],
        collect() {
          this.reset();
          for (const [pool, stats, handle] of watched.poolStats()) this[report]({ pool }, read(stats, handle));
        },
      });
    }
  }
  for (const [figure, help] of [
    ['waitTime', 'Queue wait of the pool threads calls, seconds (native percentiles)'],
    ['runTime', 'Run time of the pool threads calls, seconds (native percentiles)'],
  ]) {
    metric(client.Gauge, {
      name: `${prefix}${figure === 'waitTime' ? 'wait' : 'run'}_seconds`,
      help,
      labelNames: ['pool', 'quantile'],
      collect() {
        this.reset();
        for (const [pool, stats] of watched.poolStats()) {
          for (const q of PERCENTILES) this.set({ pool, quantile: QUANTILES[q] }, stats[figure][q] / 1000);
        }
      },
    });
  }
  // A host's own figures, and its durable jobs' (null when it runs none), each figure a label.
  for (const [name, help, figures, read] of [
    ['nats_host', 'A corepool/nats host: messages, calls in hand now and at most, and counts of messages refused busy, calls cancelled, cancels ignored, replies refused', HOST_FIGURES, (stats) => stats],
    ['nats_jobs', 'A corepool/nats host durable jobs: running now and at most, and counts done, failed, retried, dead-lettered, duplicates', JOB_FIGURES, (stats) => stats.jobs],
  ]) {
    metric(client.Gauge, {
      name: `${prefix}${name}`,
      help,
      labelNames: ['host', 'figure'],
      collect() {
        this.reset();
        for (const [host, stats] of watched.hostStats()) {
          const figuresOf = read(stats);
          if (figuresOf === null || typeof figuresOf !== 'object') continue;
          for (const figure of figures) if (typeof figuresOf[figure] === 'number') this.set({ host, figure }, figuresOf[figure]);
        }
      },
    });
  }

  return {
    watch(target, name) {
      watched.add(target, name);
      return this;
    },
    close() {
      stop();
      for (const name of names) registry.removeSingleMetric(name);
    },
  };
}

/**
 * OpenTelemetry instruments on `meter` (a Meter of @opentelemetry/api: `metrics.getMeter(…)`).
 * Options: `maxMethods`. Returns `{ watch(target, name?), close() }`. Instruments:
 * `corepool.calls` (counter), `corepool.call.duration` (histogram, s); observable counters
 * `corepool.completed`, `corepool.failed`, `corepool.worker.exits`; observable gauges
 * `corepool.queued`, `corepool.running`, `corepool.threads`, `corepool.servers`, `corepool.wait`
 * and `corepool.run` (s, by `quantile`), `corepool.nats.host` and `corepool.nats.jobs` (by
 * `figure`).
 */
function openTelemetry(meter, options) {
  if (meter === null || typeof meter !== 'object' || typeof meter.createCounter !== 'function') {
    throw new TypeError(`corepool/metrics: openTelemetry() takes an OpenTelemetry Meter, got ${describe(meter)}`);
  }
  const o = readOptions(options, ['maxMethods']);
  const methods = new MethodNames(o.maxMethods ?? DEFAULT_MAX_METHODS);
  const watched = new Watched();
  const calls = meter.createCounter('corepool.calls', { description: 'Calls settled, by kind, method and outcome' });
  const duration = meter.createHistogram('corepool.call.duration', { description: 'Time from a call to its settlement on the calling thread', unit: 's' });
  const stop = listen((c, channel) => {
    const attributes = { pool: watched.poolName(c.pool), kind: channel === 'call' ? c.kind : channel, method: methods.label(c.method) };
    calls.add(1, { ...attributes, outcome: outcomeOf(c.code) });
    if (typeof c.ms === 'number') duration.record(c.ms / 1000, attributes);
  });
  const observe = (name, description, unit, callback, counter = false) => {
    const instrument = counter ? meter.createObservableCounter(name, { description, unit }) : meter.createObservableGauge(name, { description, unit });
    instrument.addCallback(callback);
    return () => instrument.removeCallback(callback);
  };
  const unobserve = [
    ...POOL_GAUGES.map(([name, help, read]) =>
      observe(`corepool.${name}`, help, '1', (result) => {
        for (const [pool, stats, handle] of watched.poolStats()) result.observe(read(stats, handle), { pool });
      }),
    ),
    ...POOL_COUNTERS.map(([name, help, read]) =>
      observe(
        `corepool.${name.replace(/_total$/, '').replaceAll('_', '.')}`,
        help,
        '1',
        (result) => {
          for (const [pool, stats, handle] of watched.poolStats()) result.observe(read(stats, handle), { pool });
        },
        true,
      ),
    ),
    ...[
      ['wait', 'waitTime'],
      ['run', 'runTime'],
    ].map(([name, figure]) =>
      observe(`corepool.${name}`, `Native ${figure} percentiles of the pool threads calls`, 's', (result) => {
        for (const [pool, stats] of watched.poolStats()) for (const q of PERCENTILES) result.observe(stats[figure][q] / 1000, { pool, quantile: QUANTILES[q] });
      }),
    ),
    observe('corepool.nats.host', 'A corepool/nats host figures', '1', (result) => {
      for (const [host, stats] of watched.hostStats()) for (const figure of HOST_FIGURES) if (typeof stats[figure] === 'number') result.observe(stats[figure], { host, figure });
    }),
    observe('corepool.nats.jobs', 'A corepool/nats host durable jobs figures', '1', (result) => {
      for (const [host, stats] of watched.hostStats()) {
        if (stats.jobs === null || typeof stats.jobs !== 'object') continue;
        for (const figure of JOB_FIGURES) if (typeof stats.jobs[figure] === 'number') result.observe(stats.jobs[figure], { host, figure });
      }
    }),
  ];
  return {
    watch(target, name) {
      watched.add(target, name);
      return this;
    },
    close() {
      stop();
      for (const u of unobserve) u();
    },
  };
}

module.exports = { prometheus, openTelemetry, OTHER_METHOD, JSONRPC_METHOD, UNNAMED, MAX_METHOD_LENGTH };
