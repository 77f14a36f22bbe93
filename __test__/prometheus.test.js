'use strict';
// corepool/metrics scraped by a real Prometheus: examples/observe.js serves HTTP with its pools
// and /metrics; after a burst of requests, Prometheus's HTTP API has the pools' series.
const path = require('node:path');
const { spawn } = require('node:child_process');
const { startPrometheus, prometheusPath } = require('./helpers/prometheus.js');
const { natsServerPath } = require('./helpers/nats/server.js');
const { unlessHung } = require('./helpers/order.js');

const missing = [prometheusPath() === null && 'prometheus', natsServerPath() === null && 'nats-server'].filter(Boolean);
const maybe = missing.length > 0 ? describe.skip : describe;
if (missing.length > 0) console.warn(`${missing.join(' and ')} not installed: the Prometheus tests are skipped`);

jest.setTimeout(120_000);

maybe('Prometheus scraping corepool/metrics', () => {
  let example;
  let base;
  let prometheus;

  beforeAll(async () => {
    // The example starts its own nats-server (NATS_URL points where none answers).
    const env = { ...process.env, PATH: `${path.dirname(natsServerPath())}${path.delimiter}${process.env.PATH}`, NATS_URL: 'nats://127.0.0.1:1' };
    example = spawn(process.execPath, [path.join(__dirname, '..', 'examples', 'observe.js'), '--serve'], { env, stdio: ['pipe', 'pipe', 'inherit'] });
    base = await unlessHung(
      new Promise((resolve, reject) => {
        let out = '';
        example.stdout.on('data', (d) => {
          out += d;
          const m = out.match(/^listening on (http:\/\/127\.0\.0\.1:\d+)$/m);
          if (m) resolve(m[1]);
        });
        example.once('exit', (code) => reject(new Error(`examples/observe.js exited with ${code} before listening:\n${out}`)));
      }),
      'examples/observe.js --serve never listened',
    );
    prometheus = await startPrometheus([new URL(base).host]);
  });

  afterAll(async () => {
    if (example && example.exitCode === null) {
      const exited = new Promise((resolve) => example.once('exit', resolve));
      example.kill('SIGTERM');
      await exited;
    }
    await prometheus?.stop();
  });

  test("after a burst of requests, Prometheus has the pools' calls, threads and NATS host figures", async () => {
    const BURST = 40;
    const answers = await Promise.all(Array.from({ length: BURST }, (_, i) => fetch(`${base}/quote?n=${1000 + i}`).then((r) => r.json())));
    expect(answers.every((a) => a.here === a.there)).toBe(true);

    // Each request made one call on the local pool, one over NATS (RemotePool), served by the host's pool.
    const byPool = (result) => Object.fromEntries(result.map((r) => [r.metric.pool, Number(r.value[1])]));
    const calls = await prometheus.until('sum by (pool) (corepool_calls_total{method="quote",outcome="ok"})', (r) => (byPool(r).local ?? 0) >= BURST && (byPool(r).remote ?? 0) >= BURST);
    expect(byPool(calls)).toEqual({ local: BURST, remote: BURST });
    const handled = await prometheus.until('corepool_calls_total{pool="host",kind="handle"}', (r) => r.length > 0 && Number(r[0].value[1]) >= 1);
    expect(handled[0].metric).toMatchObject({ job: 'corepool', method: '__jsonrpc__', outcome: 'ok' });

    const threads = await prometheus.query('corepool_threads');
    expect(byPool(threads)).toEqual({ local: 1, host: 1 });
    const completed = await prometheus.until('corepool_completed_total{pool="host"}', (r) => r.length > 0 && Number(r[0].value[1]) >= BURST);
    expect(Number(completed[0].value[1])).toBe(BURST);
    const durations = await prometheus.query('corepool_call_duration_seconds_count{pool="local",method="quote"}');
    expect(Number(durations[0].value[1])).toBe(BURST);

    const inHand = await prometheus.until('corepool_nats_host{host="quotes",figure="inHand"}', (r) => r.length > 0);
    expect(Number(inHand[0].value[1])).toBe(0);
  });
});
