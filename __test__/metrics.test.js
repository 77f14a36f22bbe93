'use strict';
// corepool/metrics: prom-client collectors and OpenTelemetry instruments, fed by the calls as
// they settle and by the stats() of what is watched, with bounded method labels.
const path = require('node:path');
const client = require('prom-client');
const { MeterProvider } = require('@opentelemetry/sdk-metrics');
const { CollectingReader } = require('./helpers/metric-reader.js');
const { Pool } = require('..');
const { eventually } = require('./helpers/order.js');
const { prometheus, openTelemetry, OTHER_METHOD, UNNAMED, MAX_METHOD_LENGTH } = require('../lib/metrics.js');

/** The samples of metric `name` in `registry`, as [labels, value]. */
async function samples(registry, name) {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
  return metric === undefined ? undefined : metric.values.map((v) => [v.labels, v.value]);
}

describe('prometheus()', () => {
  let pool;
  let registry;
  let metrics;
  beforeEach(() => {
    pool = new Pool({ threads: 2 });
    registry = new client.Registry();
    metrics = prometheus({ registry }).watch(pool, 'main');
  });
  afterEach(async () => {
    metrics.close();
    await pool.close();
  });

  test('counts calls by kind, method and outcome, and observes their time to settle', async () => {
    await Promise.all([1, 2, 3].map((i) => pool.exec('echo', i)));
    await pool.call('echo', [4]);
    await pool.exec('nope').catch(() => {});
    await pool.call('sleep', [60_000], { timeout: 1 }).catch(() => {});
    expect(await samples(registry, 'corepool_calls_total')).toEqual(
      expect.arrayContaining([
        [{ pool: 'main', kind: 'exec', method: 'echo', outcome: 'ok' }, 3],
        [{ pool: 'main', kind: 'call', method: 'echo', outcome: 'ok' }, 1],
        [{ pool: 'main', kind: 'exec', method: 'nope', outcome: 'MethodNotFound' }, 1],
        [{ pool: 'main', kind: 'call', method: 'sleep', outcome: 'Timeout' }, 1],
      ]),
    );
    expect((await samples(registry, 'corepool_calls_total')).length).toBe(4);
    const counts = (await samples(registry, 'corepool_call_duration_seconds')).filter(([l]) => l.le === '+Inf');
    expect(counts).toEqual(
      expect.arrayContaining([
        [{ le: '+Inf', pool: 'main', kind: 'exec', method: 'echo' }, 3],
        [{ le: '+Inf', pool: 'main', kind: 'call', method: 'sleep' }, 1],
      ]),
    );
  });

  test("reads the watched pool's stats() when collected", async () => {
    await Promise.all(Array.from({ length: 10 }, (_, i) => pool.exec('echo', i)));
    await pool.exec('nope').catch(() => {});
    const s = pool.stats();
    expect(await samples(registry, 'corepool_threads')).toEqual([[{ pool: 'main' }, 2]]);
    expect(await samples(registry, 'corepool_completed_total')).toEqual([[{ pool: 'main' }, s.completed]]);
    expect(await samples(registry, 'corepool_failed_total')).toEqual([[{ pool: 'main' }, s.failed]]);
    expect(await samples(registry, 'corepool_queued')).toEqual([[{ pool: 'main' }, 0]]);
    const wait = await samples(registry, 'corepool_wait_seconds');
    expect(wait.map(([l]) => l.quantile)).toEqual(['0.5', '0.99', '1']);
    expect(wait.find(([l]) => l.quantile === '1')[1]).toBe(s.waitTime.max / 1000);
  });

  test('queue depth and running calls while the pool is busy', async () => {
    // Calls that run until aborted: the figures are read while they hold both threads.
    const stop = new AbortController();
    const busy = Array.from({ length: 5 }, () => pool.call('sleep', [3_600_000], { signal: stop.signal }).catch((e) => e.code));
    await eventually(() => pool.stats().running === 2, 'both threads never ran');
    const during = [await samples(registry, 'corepool_running'), await samples(registry, 'corepool_queued')];
    stop.abort();
    expect(await Promise.all(busy)).toEqual([-32003, -32003, -32003, -32003, -32003]);
    expect(during).toEqual([[[{ pool: 'main' }, 2]], [[{ pool: 'main' }, 3]]]);
  });

  test('method labels are capped: later names, long names and non-strings count as one', async () => {
    metrics.close();
    metrics = prometheus({ registry, maxMethods: 2 }).watch(pool, 'main');
    for (const m of ['a', 'b', 'c', 'd', 'a', 'x'.repeat(MAX_METHOD_LENGTH + 1), 42, { toString: () => 'evil' }, '__proto__']) await pool.exec(m).catch(() => {});
    const byMethod = new Map();
    for (const [l, v] of await samples(registry, 'corepool_calls_total')) byMethod.set(l.method, (byMethod.get(l.method) ?? 0) + v);
    expect([...byMethod].sort()).toEqual([
      [OTHER_METHOD, 6],
      ['a', 2],
      ['b', 1],
    ]);
  });

  test('an unwatched pool is labelled as unnamed; several pools are told apart', async () => {
    const other = new Pool({ threads: 1 });
    try {
      await other.exec('echo', 1);
      await pool.exec('echo', 1);
    } finally {
      await other.close();
    }
    const pools = (await samples(registry, 'corepool_calls_total')).map(([l]) => l.pool).sort();
    expect(pools).toEqual(['main', UNNAMED]);
  });

  test('renders count under kind render; a task-file pool reports its workers and their unexpected exits', async () => {
    const tasks = new Pool({ filename: path.join(__dirname, 'fixtures', 'tasks', 'basic.js'), minThreads: 1, maxThreads: 1 });
    metrics.watch(tasks, 'tasks');
    try {
      await pool.render('{{x}}', { x: 1 });
      await tasks.ready();
      await expect(tasks.exec('crash')).rejects.toMatchObject({ code: -32005 });
      await expect(tasks.run({ a: 1, b: 2 }, { name: 'add' })).resolves.toBe(3);
      expect(await samples(registry, 'corepool_worker_exits_total')).toEqual(
        expect.arrayContaining([
          [{ pool: 'main' }, 0],
          [{ pool: 'tasks' }, 1],
        ]),
      );
      expect(await samples(registry, 'corepool_threads')).toEqual(expect.arrayContaining([[{ pool: 'tasks' }, 1]]));
    } finally {
      await tasks.close();
    }
    expect(await samples(registry, 'corepool_calls_total')).toEqual(
      expect.arrayContaining([
        [{ pool: 'main', kind: 'render', method: 'render', outcome: 'ok' }, 1],
        [{ pool: 'tasks', kind: 'exec', method: 'crash', outcome: 'ServerGone' }, 1],
        [{ pool: 'tasks', kind: 'run', method: 'add', outcome: 'ok' }, 1],
      ]),
    );
  });

  test('a closed pool is left out of the stats figures, not an error of the scrape', async () => {
    const gone = new Pool({ threads: 1 });
    metrics.watch(gone, 'gone');
    await gone.close();
    const text = await registry.metrics();
    expect(text).toMatch(/corepool_threads\{pool="main"\} 2/);
  });

  test('close() unregisters every collector and stops counting', async () => {
    metrics.close();
    expect(await registry.getMetricsAsJSON()).toEqual([]);
    await pool.exec('echo', 1);
    metrics = prometheus({ registry }).watch(pool, 'main');
    expect(await samples(registry, 'corepool_calls_total')).toEqual([]);
  });

  test('options are checked', () => {
    expect(() => prometheus({ registry, nope: 1 })).toThrow(/unknown option 'nope'/);
    expect(() => prometheus({ registry, maxMethods: -1 })).toThrow(RangeError);
    expect(() => prometheus({ registry, maxMethods: 1.5 })).toThrow(RangeError);
    expect(() => prometheus(null)).toThrow(TypeError);
    expect(() => metrics.watch({}, 'x')).toThrow(/takes a Pool, a RemotePool or a NATS host/);
    expect(() => metrics.watch(pool, '')).toThrow(TypeError);
    expect(() => metrics.watch(pool, 'y'.repeat(MAX_METHOD_LENGTH + 1))).toThrow(TypeError);
  });

  test('a prefix names every metric', async () => {
    const own = new client.Registry();
    const m = prometheus({ registry: own, prefix: 'app_pool_' }).watch(pool, 'main');
    try {
      const names = (await own.getMetricsAsJSON()).map((x) => x.name);
      expect(names.length).toBeGreaterThan(5);
      for (const n of names) expect(n.startsWith('app_pool_')).toBe(true);
    } finally {
      m.close();
    }
  });
});

describe('openTelemetry()', () => {
  test('records calls and observes the watched pool, through the SDK', async () => {
    const reader = new CollectingReader();
    const provider = new MeterProvider({ readers: [reader] });
    const pool = new Pool({ threads: 2 });
    const metrics = openTelemetry(provider.getMeter('corepool-test')).watch(pool, 'main');
    try {
      await Promise.all([1, 2].map((i) => pool.exec('echo', i)));
      await pool.exec('nope').catch(() => {});
      const { resourceMetrics, errors } = await reader.collect();
      expect(errors).toEqual([]);
      const byName = new Map(resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).map((m) => [m.descriptor.name, m.dataPoints]));
      const calls = byName.get('corepool.calls').map((p) => [p.attributes, p.value]);
      expect(calls).toEqual(
        expect.arrayContaining([
          [{ pool: 'main', kind: 'exec', method: 'echo', outcome: 'ok' }, 2],
          [{ pool: 'main', kind: 'exec', method: 'nope', outcome: 'MethodNotFound' }, 1],
        ]),
      );
      expect(byName.get('corepool.call.duration').find((p) => p.attributes.method === 'echo').value.count).toBe(2);
      expect(byName.get('corepool.threads').map((p) => [p.attributes, p.value])).toEqual([[{ pool: 'main' }, 2]]);
      expect(byName.get('corepool.completed').map((p) => p.value)).toEqual([pool.stats().completed]);
      expect(byName.get('corepool.run').map((p) => p.attributes.quantile)).toEqual(['0.5', '0.99', '1']);
    } finally {
      metrics.close();
      await pool.close();
      await provider.shutdown();
    }
  });

  test('takes a Meter', () => {
    expect(() => openTelemetry({})).toThrow(/takes an OpenTelemetry Meter/);
    expect(() => openTelemetry(null)).toThrow(TypeError);
  });
});
