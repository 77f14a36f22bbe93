'use strict';
// corepool/nats durable jobs on JetStream, against a real nats-server: outcomes recorded once
// per job id, retries and dead letters, long jobs kept alive, a host killed mid-run.

const path = require('node:path');
const { spawn } = require('node:child_process');
const { connect } = require('@nats-io/transport-node');
const { Pool, RpcError } = require('../index.js');
const { serve, RemotePool } = require('../lib/nats.js');
const { startNats, natsServerPath } = require('./helpers/nats/server.js');
const { childHost, killChildHosts } = require('./helpers/nats/child-host.js');
const client = require('prom-client');
const { MeterProvider } = require('@opentelemetry/sdk-metrics');
const { CollectingReader } = require('./helpers/metric-reader.js');
const { prometheus, openTelemetry } = require('../lib/metrics.js');

const C = RpcError.codes;
const maybe = natsServerPath() === null ? describe.skip : describe;

let server;
let nc;
let pool;

/** The first `n` outcomes of `remote.results()` that `keep` accepts. */
/**
 * A host's job figures once it holds no job: it counts a job after its outcome is stored (when
 * waitFor settles), once it has also dead-lettered and acknowledged it.
 */
async function jobsOf(host) {
  while (host.stats().data.jobs.running > 0) await new Promise((r) => setTimeout(r, 10));
  return host.stats().data.jobs;
}

async function collect(remote, n, keep = () => true) {
  const out = [];
  if (n === 0) return out;
  for await (const r of remote.results()) {
    if (!keep(r)) continue;
    out.push(r);
    if (out.length === n) break;
  }
  return out;
}

maybe('corepool/nats durable jobs', () => {
  beforeAll(async () => {
    server = await startNats();
    nc = await connect({ servers: server.url });
    pool = new Pool({ threads: 2 });
  });

  afterAll(async () => {
    killChildHosts();
    await nc?.close();
    await pool?.close();
    await server?.stop();
  });

  test('a job submitted before any host waits; waitFor, outcome and results collect it once', async () => {
    const remote = new RemotePool(nc, { name: 'early' });
    expect(await remote.submit('fibonacci', [20], { id: 'f20' })).toEqual({ id: 'f20', duplicate: false });
    expect(await remote.submit('fibonacci', [20], { id: 'f20' })).toEqual({ id: 'f20', duplicate: true });
    expect(await remote.outcome('f20')).toBeNull();
    const host = await serve(pool, nc, { name: 'early', durable: true });
    expect(await remote.waitFor('f20', { timeout: 5000 })).toBe('6765');
    expect(await remote.outcome('f20')).toMatchObject({ id: 'f20', result: '6765', method: 'fibonacci', host: host.id, deliveries: 1 });
    const { id } = await remote.submit('echo', ['any id']);
    expect(typeof id).toBe('string');
    expect(await remote.waitFor(id)).toBe('any id');
    const all = await collect(remote, 2);
    expect(all.map((r) => r.id).sort()).toEqual([id, 'f20'].sort());
    expect(await jobsOf(host)).toMatchObject({ done: 2, duplicates: 0 });
    await host.close();
    await remote.close();
  });

  test("corepool/metrics reports a durable host's job counts: Prometheus gauges and OpenTelemetry observations", async () => {
    const remote = new RemotePool(nc, { name: 'metered' });
    const host = await serve(pool, nc, { name: 'metered', durable: true });
    const registry = new client.Registry();
    const prom = prometheus({ registry }).watch(host, 'metered');
    const reader = new CollectingReader();
    const provider = new MeterProvider({ readers: [reader] });
    const otel = openTelemetry(provider.getMeter('corepool-test')).watch(host, 'metered');
    try {
      const ok = await Promise.all([5, 6, 7].map((n) => remote.submit('fibonacci', [n])));
      const bad = await remote.submit('nope', []);
      await Promise.all(ok.map(({ id }) => remote.waitFor(id)));
      await expect(remote.waitFor(bad.id)).rejects.toMatchObject({ code: C.MethodNotFound });
      expect((await remote.submit('fibonacci', [5], { id: ok[0].id })).duplicate).toBe(true);
      const jobs = await jobsOf(host);
      expect(jobs).toMatchObject({ done: 3, failed: 1 });

      const gauge = (await registry.getMetricsAsJSON()).find((m) => m.name === 'corepool_nats_jobs');
      const byFigure = Object.fromEntries(gauge.values.map((v) => [v.labels.figure, [v.labels.host, v.value]]));
      expect(byFigure.done).toEqual(['metered', 3]);
      expect(byFigure.failed).toEqual(['metered', 1]);
      expect(byFigure.running).toEqual(['metered', 0]);
      expect(Object.keys(byFigure).sort()).toEqual(Object.keys(jobs).filter((k) => typeof jobs[k] === 'number').sort());
      // The host's own figures: every number of its stats().data but its concurrency setting.
      const data = host.stats().data;
      const hostGauge = (await registry.getMetricsAsJSON()).find((m) => m.name === 'corepool_nats_host');
      const hostFigures = Object.fromEntries(hostGauge.values.map((v) => [v.labels.figure, v.value]));
      const numbers = Object.keys(data).filter((k) => typeof data[k] === 'number' && k !== 'concurrency');
      expect(Object.keys(hostFigures).sort()).toEqual(numbers.sort());
      expect(hostFigures.peakInHand).toBe(data.peakInHand);

      const { resourceMetrics, errors } = await reader.collect();
      expect(errors).toEqual([]);
      const points = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === 'corepool.nats.jobs').dataPoints;
      expect(points.find((p) => p.attributes.figure === 'done')).toMatchObject({ attributes: { host: 'metered' }, value: 3 });
      expect(points.find((p) => p.attributes.figure === 'failed').value).toBe(1);
    } finally {
      prom.close();
      otel.close();
      await provider.shutdown();
      await host.close();
      await remote.close();
    }
  });

  test('bad submissions are refused before they are stored; waitFor times out and aborts', async () => {
    const remote = new RemotePool(nc, { name: 'refuse' });
    await expect(remote.submit('echo', [NaN])).rejects.toMatchObject({ code: C.InvalidParams });
    await expect(remote.submit(5, [])).rejects.toMatchObject({ code: C.InvalidRequest });
    await expect(remote.submit('echo', [], { id: '' })).rejects.toMatchObject({ code: C.InvalidRequest });
    await expect(remote.submit('echo', [], { nope: 1 })).rejects.toThrow(/unknown submit\(\) option/);
    await expect(remote.waitFor('never', { timeout: 100 })).rejects.toMatchObject({ code: C.Timeout });
    await expect(remote.waitFor('never', { signal: AbortSignal.timeout(50) })).rejects.toMatchObject({ code: C.Aborted });
    await expect(serve(pool, nc, { name: 'refuse', durable: { inFlight: 0 } })).rejects.toThrow(/inFlight/);
    await remote.close();
  });

  test('waitFor with a timeout of 2^31 ms or more, or Infinity, waits until its signal aborts it', async () => {
    const remote = new RemotePool(nc, { name: 'long-wait' });
    const outcomes = [];
    const ac = new AbortController();
    const waits = [2147483647.5, 2 ** 31, Infinity].map((timeout) =>
      remote.waitFor(`never-${timeout}`, { timeout, signal: ac.signal }).then(
        () => outcomes.push('resolved'),
        (e) => outcomes.push(e.code),
      ),
    );
    // A sibling with a short timeout gives up, then a job runs to its outcome: the long ones wait on.
    await expect(remote.waitFor('never', { timeout: 20 })).rejects.toMatchObject({ code: C.Timeout });
    const host = await serve(pool, nc, { name: 'long-wait', durable: true });
    const { id } = await remote.submit('echo', ['round trip']);
    expect(await remote.waitFor(id)).toBe('round trip');
    expect(outcomes).toEqual([]);
    ac.abort();
    await Promise.all(waits);
    expect(outcomes).toEqual(Array(3).fill(C.Aborted));
    await host.close();
    await remote.close();
  });

  test('when the connection closes, waitFor and results() reject with Unavailable, never hang', async () => {
    const own = await connect({ servers: server.url });
    const remote = new RemotePool(own, { name: 'closing' });
    await remote.submit('echo', [1], { id: 'kept' });
    const waiting = remote.waitFor('never').catch((e) => e.code);
    const reading = (async () => {
      const seen = [];
      try {
        for await (const r of remote.results()) seen.push(r.id);
      } catch (e) {
        return [seen, e.code];
      }
      return [seen, 'ended'];
    })();
    await new Promise((r) => setTimeout(r, 200));
    await own.close();
    expect(await waiting).toBe(C.Unavailable);
    expect(await reading).toEqual([[], C.Unavailable]);
  });

  test('a durable host whose connection closes lets its process exit', async () => {
    const child = spawn(process.execPath, [path.join(__dirname, 'helpers', 'nats', 'exits.js'), server.url], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    const exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    const code = await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve('still running after 5 s'), 5000))]);
    child.kill('SIGKILL');
    expect([out, code]).toEqual(['closed\n', 0]);
  });

  test('errors: final ones are recorded at once, others retried up to maxDeliver; both dead-lettered', async () => {
    const remote = new RemotePool(nc, { name: 'fail' });
    const host = await serve(pool, nc, { name: 'fail', durable: { maxDeliver: 3, retryDelay: 10 } });
    await remote.submit('fibonacci', ['x'], { id: 'final' });
    await remote.submit('panic', ['again'], { id: 'retried' });
    await remote.submit('nope', [], { id: 'missing' });
    await expect(remote.waitFor('final')).rejects.toMatchObject({ code: C.InvalidParams });
    await expect(remote.waitFor('retried')).rejects.toMatchObject({ code: C.InternalError });
    await expect(remote.waitFor('missing')).rejects.toMatchObject({ code: C.MethodNotFound });
    expect((await remote.outcome('final')).deliveries).toBe(1);
    expect((await remote.outcome('retried')).deliveries).toBe(3);
    const dead = [];
    for await (const d of remote.deadLetters()) {
      dead.push(d);
      if (dead.length === 3) break;
    }
    expect(dead.map((d) => [d.job.id, d.error.code]).sort()).toEqual([
      ['final', C.InvalidParams],
      ['missing', C.MethodNotFound],
      ['retried', C.InternalError],
    ]);
    expect(await jobsOf(host)).toMatchObject({ retried: 2, dead: 3, failed: 3 });
    await host.close();
    await remote.close();
  });

  test('a job longer than ackWait is kept alive (inProgress) and runs once; in-flight jobs stay bounded', async () => {
    const remote = new RemotePool(nc, { name: 'long' });
    const host = await serve(pool, nc, { name: 'long', durable: { ackWait: 400, inFlight: 2 } });
    await remote.submit('sleep', [1200], { id: 'long' });
    for (let i = 0; i < 6; i++) await remote.submit('sleep', [50], { id: `short${i}` });
    expect(await remote.waitFor('long')).toBe(1200);
    expect((await remote.outcome('long')).deliveries).toBe(1);
    await collect(remote, 7);
    expect(await jobsOf(host)).toMatchObject({ done: 7, retried: 0, duplicates: 0, peakRunning: 2 });
    await host.close();
    await remote.close();
  }, 15000);

  test('forged jobs a host cannot run are dead-lettered and acknowledged at once; the host stays connected (issue #28, 1)', async () => {
    const { jetstream, jetstreamManager } = require('@nats-io/jetstream');
    const own = await connect({ servers: server.url });
    const events = [];
    (async () => {
      for await (const s of own.status()) events.push(s.type);
    })();
    const remote = new RemotePool(nc, { name: 'poison' });
    const host = await serve(pool, own, { name: 'poison', durable: { ackWait: 500 } });
    const long = 'x'.repeat(3200);
    const forged = [
      JSON.stringify({ id: long, method: 'echo', params: [1] }), // its results subject would pass the 4,096-byte control line
      JSON.stringify({ id: 5, method: 'echo', params: [] }),
      JSON.stringify({ id: '', method: 'echo', params: [] }),
      '{"id":"\\ud800","method":"echo","params":[]}', // a lone surrogate: not one key per id
      JSON.stringify({ id: 'no-method', params: [] }),
      JSON.stringify({ id: 'long-method', method: 'm'.repeat(3200), params: [] }),
      JSON.stringify({ id: 'bad-params', method: 'echo', params: { a: 1 } }),
      'not json {',
      'null',
      '[1,2]',
    ];
    const js = jetstream(nc);
    for (const text of forged) await js.publish('poison.jobs', text);
    const dead = [];
    for await (const d of remote.deadLetters()) {
      dead.push(d);
      if (dead.length === forged.length) break;
    }
    for (const d of dead) {
      expect([C.ParseError, C.InvalidRequest]).toContain(d.error.code);
      expect(d.host).toBe(host.id);
      expect(d.deliveries).toBe(1);
    }
    const messages = dead.map((d) => d.error.message).join('\n');
    expect(messages).toMatch(/id must be a string of 1 to 256 characters.*got a string of 3200 characters/);
    expect(messages).toMatch(/not JSON/);
    expect(messages).toMatch(/params must be an array/);
    expect(messages).toMatch(/method must be a string of 1 to 256 characters/);
    // A job whose own id is fine has that error as its outcome too; the others have no id to
    // record it under, and their dead letters hold no job.
    await expect(remote.waitFor('bad-params')).rejects.toMatchObject({ code: C.InvalidRequest });
    await expect(remote.waitFor('no-method')).rejects.toMatchObject({ code: C.InvalidRequest });
    expect(dead.filter((d) => d.job === null)).toHaveLength(7);
    // Every one was acknowledged: the work queue is empty, nothing comes again.
    const jsm = await jetstreamManager(nc);
    for (;;) {
      const info = await jsm.consumers.info('poison-jobs', 'poison-hosts');
      if (info.num_ack_pending === 0 && info.num_pending === 0) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect((await jsm.streams.info('poison-jobs')).state.messages).toBe(0);
    // Still connected, never dropped, and still serving.
    expect(await remote.call('echo', ['still here'])).toBe('still here');
    expect(events.filter((t) => t === 'disconnect' || t === 'error')).toEqual([]);
    expect(await jobsOf(host)).toMatchObject({ dead: forged.length, done: 0 });
    await host.close();
    await remote.close();
    await own.close();
  });

  test('one job id rule for submit, waitFor and outcome; no service subject can make a job subject too long', async () => {
    const remote = new RemotePool(nc, { name: 'ids' });
    const long = 'x'.repeat(3200);
    for (const bad of [long, '\ud800', '', 7]) {
      await expect(remote.submit('echo', [], { id: bad })).rejects.toMatchObject({ code: C.InvalidRequest });
      await expect(remote.waitFor(bad, { timeout: 100 })).rejects.toMatchObject({ code: C.InvalidRequest });
      await expect(remote.outcome(bad)).rejects.toMatchObject({ code: C.InvalidRequest });
    }
    await expect(remote.submit('m'.repeat(257), [])).rejects.toMatchObject({ code: C.InvalidRequest, message: expect.stringMatching(/method must be a string of 1 to 256/) });
    // The longest id is fine everywhere, in characters that take 3 bytes each in UTF-8.
    const longest = '€'.repeat(256);
    expect(await remote.submit('echo', [], { id: longest })).toEqual({ id: longest, duplicate: false });
    expect(await remote.outcome(longest)).toBeNull();
    expect(nc.isClosed()).toBe(false);
    expect(() => new RemotePool(nc, { name: 'ids', subject: `a.${'b'.repeat(1100)}` })).toThrow(/subject must be .* at most 1024 bytes/);
    await expect(serve(pool, nc, { name: 'ids', subject: 'b'.repeat(1100) })).rejects.toThrow(/subject must be .* at most 1024 bytes/);
    await remote.close();
  });

  test('a job whose outcome is too big for the server is recorded at once with one error naming the limit, never run again (issue #28, 6)', async () => {
    const served = new Pool({ threads: 1 });
    let runs = 0;
    served.serve({ big: (n) => (runs++, 'x'.repeat(n)) }, { concurrency: Infinity });
    const remote = new RemotePool(nc, { name: 'toobig' });
    const host = await serve(served, nc, { name: 'toobig', durable: { ackWait: 300, maxDeliver: 3 } });
    const max = nc.info.max_payload;
    await remote.submit('big', [max + 10], { id: 'big' });
    await expect(remote.waitFor('big')).rejects.toMatchObject({ code: C.InternalError, message: expect.stringMatching(new RegExp(`max payload of ${max} bytes`)) });
    const outcome = await remote.outcome('big');
    expect(outcome).toMatchObject({ deliveries: 1, method: 'big', host: host.id });
    expect(outcome.error.message).toMatch(/the job ran/);
    // Its dead letter too; and a job whose params alone nearly fill a message, failing, is
    // dead-lettered without them rather than not at all.
    const params = ['p'.repeat(max - 200)];
    await remote.submit('nope', params, { id: 'fat' });
    await expect(remote.waitFor('fat')).rejects.toMatchObject({ code: C.MethodNotFound });
    const dead = new Map();
    for await (const d of remote.deadLetters()) {
      dead.set(d.job.id, d);
      if (dead.size === 2) break;
    }
    expect(dead.get('big')).toMatchObject({ job: { id: 'big', method: 'big', params: [max + 10] }, error: { code: C.InternalError }, deliveries: 1 });
    expect(dead.get('fat')).toMatchObject({ job: { id: 'fat', method: 'nope', params: null }, error: { code: C.MethodNotFound }, deliveries: 1 });
    expect(runs).toBe(1);
    expect(await jobsOf(host)).toMatchObject({ failed: 2, dead: 2, retried: 0 });
    await host.close();
    await remote.close();
    // The same when the results stream's own max_msg_size is what refuses it.
    const { jetstreamManager } = require('@nats-io/jetstream');
    const jsm = await jetstreamManager(nc);
    // (A results stream made by hand allows rollup headers, which hosts store outcomes with.)
    await jsm.streams.add({ name: 'small-results', subjects: ['small.results.*', 'small.dead.*'], storage: 'file', max_msg_size: 2000, allow_rollup_hdrs: true });
    const small = new RemotePool(nc, { name: 'small' });
    const smallHost = await serve(served, nc, { name: 'small', durable: { ackWait: 300, maxDeliver: 3 } });
    await small.submit('big', [5000], { id: 'five' });
    await expect(small.waitFor('five')).rejects.toMatchObject({ code: C.InternalError, message: expect.stringMatching(/max message size/) });
    expect(runs).toBe(2);
    expect(await small.outcome('five')).toMatchObject({ deliveries: 1 });
    await smallHost.close();
    await small.close();
    await served.close();
  });

  test('on a server whose max payload not even an error outcome fits, the job is counted failed and acknowledged at once', async () => {
    const fs = require('node:fs');
    const os = require('node:os');
    const conf = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'corepool-nats-conf-')), 'small.conf');
    fs.writeFileSync(conf, 'max_payload: 1700\n');
    const small = await startNats(['-c', conf]);
    const own = await connect({ servers: small.url });
    const served = new Pool({ threads: 1 });
    try {
      const host = await serve(served, own, { name: 'tiny', durable: { ackWait: 300 } });
      // The longest id and method, 3 UTF-8 bytes a character: the job fits, no outcome does.
      const { jetstream, jetstreamManager } = require('@nats-io/jetstream');
      await jetstream(own).publish('tiny.jobs', JSON.stringify({ id: '€'.repeat(256), method: '€'.repeat(256), params: [] }));
      while (host.stats().data.jobs.failed === 0) await new Promise((r) => setTimeout(r, 20));
      expect(await jobsOf(host)).toMatchObject({ failed: 1, duplicates: 0, done: 0 });
      const jsm = await jetstreamManager(own);
      for (;;) {
        const info = await jsm.consumers.info('tiny-jobs', 'tiny-hosts');
        if (info.num_ack_pending === 0 && info.num_pending === 0) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(own.isClosed()).toBe(false);
      await host.close();
    } finally {
      await own.close();
      await served.close();
      await small.stop();
      fs.rmSync(path.dirname(conf), { recursive: true, force: true });
    }
  });

  test('a job id with an outcome never runs again: submit says it is a duplicate, a forged copy is acknowledged unrun (issue #28, 7)', async () => {
    const { jetstream, jetstreamManager } = require('@nats-io/jetstream');
    // A duplicate window of 100 ms, which this test outlives: JetStream no longer drops the copies.
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: 'once-jobs', subjects: ['once.jobs'], retention: 'workqueue', storage: 'file', duplicate_window: 100 * 1e6 });
    const served = new Pool({ threads: 1 });
    let runs = 0;
    served.serve({ tally: () => ++runs }, { concurrency: Infinity });
    const remote = new RemotePool(nc, { name: 'once' });
    const host = await serve(served, nc, { name: 'once', durable: true });
    expect(await remote.submit('tally', [], { id: 'once' })).toEqual({ id: 'once', duplicate: false });
    expect(await remote.waitFor('once')).toBe(1);
    await new Promise((r) => setTimeout(r, 300)); // past the duplicate window
    expect(await remote.submit('tally', [], { id: 'once' })).toEqual({ id: 'once', duplicate: true });
    // The same job published by hand, as a submit racing the outcome would: delivered once,
    // found recorded, acknowledged without running.
    await jetstream(nc).publish('once.jobs', JSON.stringify({ id: 'once', method: 'tally', params: [] }));
    while (host.stats().data.jobs.duplicates === 0) await new Promise((r) => setTimeout(r, 20));
    expect(runs).toBe(1);
    expect(await remote.outcome('once')).toMatchObject({ result: 1, deliveries: 1 });
    expect(await jobsOf(host)).toMatchObject({ done: 1, duplicates: 1 });
    expect((await jsm.streams.info('once-jobs')).state.messages).toBe(0);
    await host.close();
    await remote.close();
    await served.close();
  });

  test("a server's answer someone has published on a job's results subject is no outcome: the job runs and its outcome is read", async () => {
    // Anyone who may ask JetStream anything names the reply subject: the server publishes its
    // answer there, into the results stream. (Such answers were taken for the job's outcome: the
    // job never ran, waitFor resolved with undefined, and a running job's outcome was refused.)
    const { jetstreamManager } = require('@nats-io/jetstream');
    const key = (id) => Buffer.from(id, 'utf8').toString('base64url');
    const attacker = await connect({ servers: server.url });
    const jsm = await jetstreamManager(nc);
    const remote = new RemotePool(nc, { name: 'forge' });
    const host = await serve(pool, nc, { name: 'forge', durable: true });
    const stored = async (subject) => {
      while ((await jsm.streams.getMessage('forge-results', { last_by_subj: subject })) === null) await new Promise((r) => setTimeout(r, 10));
    };
    const forge = async (id, ask = '$JS.API.INFO', body = '') => {
      for (const place of ['results', 'dead']) attacker.publish(ask, body, { reply: `forge.${place}.${key(id)}` });
      await attacker.flush();
      await stored(`forge.results.${key(id)}`);
    };
    // Before the job is submitted.
    await forge('before');
    expect(await remote.outcome('before')).toBeNull();
    expect(await remote.submit('echo', ['real'], { id: 'before' })).toEqual({ id: 'before', duplicate: false });
    expect(await remote.waitFor('before', { timeout: 10_000 })).toBe('real');
    // While it runs.
    expect(await remote.submit('sleep', [300], { id: 'during' })).toEqual({ id: 'during', duplicate: false });
    await forge('during', '$JS.API.STREAM.MSG.GET.forge-results', JSON.stringify({ seq: 1 }));
    const during = await remote.waitFor('during', { timeout: 10_000 });
    expect(await remote.outcome('during')).toMatchObject({ id: 'during', result: during, method: 'sleep' });
    // After it ran: the outcome stays the one recorded, and the id does not run again.
    await forge('before');
    expect(await remote.outcome('before')).toMatchObject({ id: 'before', result: 'real', method: 'echo' });
    expect(await remote.waitFor('before')).toBe('real');
    expect(await remote.submit('echo', ['again'], { id: 'before' })).toEqual({ id: 'before', duplicate: true });
    // results() and deadLetters() yield outcomes and dead letters only.
    const seen = await collect(remote, 2);
    expect(seen.map((o) => [o.id, 'result' in o])).toEqual([['before', true], ['during', true]]);
    await forge('dead');
    expect(await remote.submit('nope', [], { id: 'dead' })).toEqual({ id: 'dead', duplicate: false });
    await expect(remote.waitFor('dead', { timeout: 10_000 })).rejects.toMatchObject({ code: C.MethodNotFound });
    for await (const letter of remote.deadLetters()) {
      expect(letter).toMatchObject({ job: { id: 'dead', method: 'nope' }, error: { code: C.MethodNotFound } });
      break;
    }
    expect(await jobsOf(host)).toMatchObject({ done: 2, duplicates: 0 });
    await host.close();
    await remote.close();
    await attacker.close();
  });

  test("any number of JetStream's answers on a job's results subject, before it is submitted or while it runs, never cost it its outcome", async () => {
    // Past 64 such messages the outcome could not be looked for: a job that had run could not
    // store its outcome, stayed unacknowledged and was delivered again for ever (never
    // dead-lettered), and waitFor and outcome() failed or waited.
    const key = (id) => Buffer.from(id, 'utf8').toString('base64url');
    const attacker = await connect({ servers: server.url });
    const served = new Pool({ threads: 1 });
    let runs = 0;
    let release;
    const gate = new Promise((r) => (release = r));
    served.serve({ held: async (x) => (++runs, await gate, x) }, { concurrency: Infinity });
    const remote = new RemotePool(nc, { name: 'flood' });
    const host = await serve(served, nc, { name: 'flood', durable: true });
    await remote.outcome('x'); // makes the streams
    const { jetstreamManager } = require('@nats-io/jetstream');
    const jsm = await jetstreamManager(nc);
    const flood = async (id, count) => {
      for (let i = 0; i < count; i++) attacker.publish('$JS.API.INFO', '', { reply: `flood.results.${key(id)}` });
      await attacker.flush();
      const subject = `flood.results.${key(id)}`;
      while (((await jsm.streams.info('flood-results', { subjects_filter: subject })).state.subjects?.[subject] ?? 0) < count) await new Promise((r) => setTimeout(r, 10));
    };
    await flood('early', 100);
    expect(await remote.outcome('early')).toBeNull();
    expect(await remote.submit('held', ['e'], { id: 'early' })).toEqual({ id: 'early', duplicate: false });
    expect(await remote.submit('held', ['l'], { id: 'late' })).toEqual({ id: 'late', duplicate: false });
    while (runs < 2) await new Promise((r) => setTimeout(r, 10));
    const waiting = remote.waitFor('late', { timeout: 20_000 });
    await flood('late', 100);
    release();
    expect(await remote.waitFor('early', { timeout: 20_000 })).toBe('e');
    expect(await waiting).toBe('l');
    for (const [id, result] of [['early', 'e'], ['late', 'l']]) expect(await remote.outcome(id)).toMatchObject({ id, result, method: 'held' });
    while (host.stats().data.jobs.running > 0) await new Promise((r) => setTimeout(r, 10));
    expect(runs).toBe(2);
    expect(await jobsOf(host)).toMatchObject({ done: 2, failed: 0, duplicates: 0 });
    // Again after: the outcome stays, the id is a duplicate, and more answers change nothing.
    await flood('late', 200);
    expect(await remote.submit('held', ['again'], { id: 'late' })).toEqual({ id: 'late', duplicate: true });
    expect(await remote.outcome('late')).toMatchObject({ id: 'late', result: 'l' });
    await host.close();
    await remote.close();
    await attacker.close();
    await served.close();
  });

  test('a host refuses to serve on a results stream that does not allow rollup headers, saying so', async () => {
    const { jetstreamManager } = require('@nats-io/jetstream');
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: 'old-results', subjects: ['old.results.*', 'old.dead.*'], storage: 'file' });
    await expect(serve(pool, nc, { name: 'old', durable: true })).rejects.toMatchObject({ code: C.InternalError, message: expect.stringMatching(/stream old-results does not allow rollup headers.*--allow-rollup/) });
    // A client reads it all the same.
    const remote = new RemotePool(nc, { name: 'old' });
    expect(await remote.outcome('x')).toBeNull();
    await remote.close();
  });

  test("a job published under another id's message id is not run; that id gets an outcome saying so, never a silent drop", async () => {
    // JetStream drops a message whose Nats-Msg-Id it saw within its duplicate window: a job of
    // one id carrying another id's key made that id's own submit a duplicate of a job that was
    // never its own (it never ran, and nothing was recorded under it: waitFor waited forever).
    const { jetstream } = require('@nats-io/jetstream');
    const { headers } = require('@nats-io/transport-node');
    const key = (id) => Buffer.from(id, 'utf8').toString('base64url');
    const remote = new RemotePool(nc, { name: 'squat' });
    const host = await serve(pool, nc, { name: 'squat', durable: true });
    await remote.outcome('x'); // makes the streams
    const h = headers();
    h.set('Nats-Msg-Id', key('payroll'));
    await jetstream(nc).publish('squat.jobs', JSON.stringify({ id: 'other', method: 'echo', params: ['other'] }), { headers: h });
    expect(await remote.submit('echo', ['pay'], { id: 'payroll' })).toEqual({ id: 'payroll', duplicate: true });
    const e = await remote.waitFor('payroll', { timeout: 10_000 }).catch((x) => x);
    expect([e.code, e.message]).toEqual([C.InvalidRequest, expect.stringMatching(/published with the message id of job "payroll" but holds job "other"/)]);
    expect(await remote.outcome('other')).toBeNull();
    expect(await jobsOf(host)).toMatchObject({ done: 0, dead: 1 });
    await host.close();
    await remote.close();
  });

  test("a job squatting an id's message id, taken while that id's job runs on the same host, waits for it and leaves its outcome alone", async () => {
    // The squatter's delivery stored its InvalidRequest outcome ("not run") under the id while
    // the id's own job was running; that job's outcome was then refused: it ran, and its caller
    // was told it had not.
    const { jetstream } = require('@nats-io/jetstream');
    const { headers } = require('@nats-io/transport-node');
    const served = new Pool({ threads: 1 });
    let runs = 0;
    let release;
    const gate = new Promise((r) => (release = r));
    served.serve({ held: async () => (++runs, await gate, 'done') }, { concurrency: Infinity });
    const remote = new RemotePool(nc, { name: 'squatrun' });
    const host = await serve(served, nc, { name: 'squatrun', durable: true });
    await remote.outcome('x'); // makes the streams
    // The id's job published by hand, without a message id (as after the duplicate window).
    await jetstream(nc).publish('squatrun.jobs', JSON.stringify({ id: 'paid', method: 'held', params: [] }));
    while (runs === 0) await new Promise((r) => setTimeout(r, 10));
    const h = headers();
    h.set('Nats-Msg-Id', Buffer.from('paid', 'utf8').toString('base64url'));
    await jetstream(nc).publish('squatrun.jobs', JSON.stringify({ id: 'intruder', method: 'held', params: [] }), { headers: h });
    while (host.stats().data.jobs.running < 2) await new Promise((r) => setTimeout(r, 10));
    release();
    expect(await remote.waitFor('paid', { timeout: 10_000 })).toBe('done');
    while (host.stats().data.jobs.running > 0) await new Promise((r) => setTimeout(r, 10));
    expect(await remote.outcome('paid')).toMatchObject({ id: 'paid', result: 'done' });
    expect(await remote.outcome('intruder')).toBeNull();
    expect(runs).toBe(1);
    expect(await jobsOf(host)).toMatchObject({ done: 1, dead: 1, duplicates: 0 });
    await host.close();
    await remote.close();
    await served.close();
  });

  test('a copy of a job taken while the job runs on the same host waits for it, then is acknowledged unrun', async () => {
    const { jetstream } = require('@nats-io/jetstream');
    const served = new Pool({ threads: 1 });
    let runs = 0;
    let release;
    const gate = new Promise((r) => (release = r));
    served.serve({ held: async () => (++runs, await gate, runs) }, { concurrency: Infinity });
    const remote = new RemotePool(nc, { name: 'copy' });
    const host = await serve(served, nc, { name: 'copy', durable: true });
    await remote.submit('held', [], { id: 'copied' });
    while (runs === 0) await new Promise((r) => setTimeout(r, 10));
    // The same job again, as a forged copy or a submit after the duplicate window would be.
    await jetstream(nc).publish('copy.jobs', JSON.stringify({ id: 'copied', method: 'held', params: [] }));
    while (host.stats().data.jobs.running < 2) await new Promise((r) => setTimeout(r, 10));
    release();
    expect(await remote.waitFor('copied')).toBe(1);
    while (host.stats().data.jobs.running > 0) await new Promise((r) => setTimeout(r, 10));
    expect(runs).toBe(1);
    expect(await jobsOf(host)).toMatchObject({ done: 1, duplicates: 1 });
    await host.close();
    await remote.close();
    await served.close();
  });

  test('a host killed with SIGKILL mid 10,000 jobs: every outcome recorded exactly once, none lost', async () => {
    const N = 10000;
    // Every 4th job sleeps 4 ms, so that the 64 jobs a host holds are tens of ms of work: a host
    // of tiny jobs alone could finish and acknowledge all it held between its stats answer and
    // the kill (seen under load: the killed host left nothing to come again).
    const job = (j) => (j % 4 === 3 ? ['sleep', [4]] : ['square_sum', [j % 100]]);
    const opts = { name: 'bulk', threads: 1, durable: { ackWait: 1500, inFlight: 64 } };
    const remote = new RemotePool(nc, { name: 'bulk' });
    const submitted = [];
    for (let i = 0; i < N; i += 500) {
      const chunk = [];
      for (let j = i; j < i + 500; j++) chunk.push(remote.submit(...job(j), { id: `job-${j}` }));
      submitted.push(...(await Promise.all(chunk)));
    }
    expect(submitted.filter((s) => s.duplicate)).toEqual([]);
    const [a, b] = await Promise.all([childHost(server.url, { ...opts, label: 'a' }), childHost(server.url, { ...opts, label: 'b' })]);
    // Kill host a once it has recorded some outcomes, while it holds jobs in hand. Its live
    // figures say so (its own $SRV.STATS answer; the kill follows the answer at once): replaying
    // the results stream to see them could lag behind the hosts on a loaded machine until every
    // job was done and a held none, and so could a survey of all hosts that waits 100 ms for
    // their answers.
    const deadline = Date.now() + 30000;
    let killedAt;
    for (;;) {
      const reply = await nc.request(`$SRV.STATS.bulk.${a.id}`, '', { timeout: 1000 });
      const jobs = JSON.parse(reply.string()).endpoints[0].data.jobs;
      if (jobs !== undefined && jobs.done >= 500 && jobs.running > 0) {
        killedAt = jobs;
        break;
      }
      if (Date.now() > deadline) throw new Error(`host a never held jobs after 500 done: ${JSON.stringify(jobs)}`);
      await new Promise((r) => setTimeout(r, 5));
    }
    a.child.kill('SIGKILL');
    const outcomes = await collect(remote, N);
    const ids = new Set(outcomes.map((o) => o.id));
    expect(ids.size).toBe(N);
    for (let j = 0; j < N; j++) expect(ids.has(`job-${j}`)).toBe(true);
    const expected = await Promise.all(Array.from({ length: 100 }, (_, k) => pool.exec('square_sum', k)));
    const wrong = outcomes.filter((o) => {
      const j = Number(o.id.slice(4));
      return o.result !== (job(j)[0] === 'sleep' ? 4 : expected[j % 100]);
    });
    expect(wrong).toEqual([]);
    // The killed host's jobs in hand came again, to the survivor: it ran them (deliveries > 1),
    // or found their outcomes stored already and only acknowledged them (duplicates).
    const [survivor] = await remote.stats();
    const redelivered = outcomes.filter((o) => o.deliveries > 1);
    if (process.env.NATS_JOBS_DEBUG) console.log(`redelivered runs ${redelivered.length}, duplicates ${survivor.endpoints[0].data.jobs.duplicates}`);
    expect(redelivered.every((o) => o.host === b.id)).toBe(true);
    if (redelivered.length + survivor.endpoints[0].data.jobs.duplicates === 0) {
      // Seen once in a full run under heavy load, not reproduced alone: say what was seen.
      throw new Error(`no job of the killed host came again; its figures before the kill ${JSON.stringify(killedAt)}, the survivor's ${JSON.stringify(survivor.endpoints[0].data.jobs)}`);
    }
    // Exactly once: the results stream holds N outcomes, nothing more.
    const { jetstreamManager } = require('@nats-io/jetstream');
    const info = await (await jetstreamManager(nc)).streams.info('bulk-results');
    expect(info.state.messages).toBe(N);
    b.child.kill('SIGTERM');
    await new Promise((r) => b.child.once('exit', r));
    await remote.close();
  }, 60000);
});
