'use strict';
// corepool/nats on a real nats-server over loopback:
//  1. latency: one caller, an `echo` round trip — RemotePool (host in this process) vs a raw
//     NATS request/reply of the same JSON-RPC text (a responder that sends a fixed answer), vs
//     the same raw request answered by pool.handle() (the transport plus the pool, no
//     corepool/nats), vs a local pool.exec: p50 per run;
//  2. throughput: tiny calls (`echo`) from 64 closed-loop callers, to 1 and 2 host processes,
//     vs a raw request/reply loop (one message per call) to a responder in this process, and
//     vs Moleculer 0.15 with its NATS transporter, 2 host processes (bench/peers/moleculer-host.js);
//     the three 2-host figures are measured in interleaved rounds;
//  3. durable: happycoin batches as JetStream jobs on the 2 hosts vs the same by request/reply.
//
//   node bench/nats.js [--quick]
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { connect } = require('@nats-io/transport-node');
const { ServiceBroker } = require('moleculer');
const { Pool } = require('..');
const { serve, RemotePool } = require('../lib/nats.js');
const { startNats } = require('../__test__/helpers/nats/server.js');
const { Suite, median } = require('./harness');

const CALLERS = 64;
const suite = new Suite('nats', { runs: 5, warmup: 1, quickRuns: 1 });
const LOOP_MS = suite.quick ? 1000 : 3000;
const ROUND_TRIPS = suite.quick ? 500 : 3000;
const JOBS = suite.quick ? 200 : 1000;
const JOB = { attempts: 20000 };
const PAYLOAD = { user: 'Katelyn', items: [1, 2, 3], note: 'x'.repeat(40) };

function childHost(url, options, script = path.join(__dirname, '..', '__test__', 'helpers', 'nats', 'host.js')) {
  // stdin a pipe: the test host exits when it ends, so a host never outlives this process.
  const child = spawn(process.execPath, [script, url, JSON.stringify(options)], { stdio: ['pipe', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.stdout.once('data', () => resolve(child));
    child.once('exit', (code) => reject(new Error(`host exited with ${code}`)));
  });
}

async function stopHost(child) {
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
}

/** p50 in µs of `n` sequential round trips of `call()`. */
async function p50(call, n) {
  const us = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await call();
    us.push((performance.now() - t0) * 1000);
  }
  return median(us);
}

/** Calls per second of `call()` from CALLERS concurrent closed loops for LOOP_MS. */
async function closedLoop(call) {
  let ops = 0;
  const end = performance.now() + LOOP_MS;
  const loop = async () => {
    while (performance.now() < end) {
      await call();
      ops++;
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: CALLERS }, loop));
  return (ops / (performance.now() - start)) * 1000;
}

async function main() {
  const server = await startNats();
  if (server === null) throw new Error('nats-server is not installed (apt-get install nats-server)');
  suite.log(`nats-server on loopback; latency: ${ROUND_TRIPS} round trips per run; throughput: ${CALLERS} callers × ${LOOP_MS} ms`);
  const nc = await connect({ servers: server.url });
  const pool = new Pool({ threads: 2 });

  // 1. Latency, host in this process.
  const host = await serve(pool, nc, { name: 'lat' });
  const remote = new RemotePool(nc, { name: 'lat' });
  const text = `{"jsonrpc":"2.0","method":"echo","params":[${JSON.stringify(PAYLOAD)}],"id":1}`;
  const answer = `{"jsonrpc":"2.0","result":${JSON.stringify(PAYLOAD)},"id":1}`;
  nc.subscribe('raw', { callback: (err, m) => m.respond(answer) });
  nc.subscribe('raw-pool', { callback: (err, m) => pool.handle(m.string()).then((a) => m.respond(a)) });
  await nc.flush();
  await suite.interleave([
    { label: 'remote echo p50', unit: 'µs', fn: () => p50(() => remote.exec('echo', PAYLOAD), ROUND_TRIPS) },
    { label: 'raw NATS request p50', unit: 'µs', fn: () => p50(() => nc.request('raw', text, { timeout: 5000 }), ROUND_TRIPS) },
    { label: 'raw NATS request to pool.handle p50', unit: 'µs', fn: () => p50(() => nc.request('raw-pool', text, { timeout: 5000 }), ROUND_TRIPS) },
    { label: 'local pool.exec echo p50', unit: 'µs', fn: () => p50(() => pool.exec('echo', PAYLOAD), ROUND_TRIPS) },
  ]);
  // Goal: corepool adds at most 1.3× to a raw round trip, i.e. raw / remote ≥ 1 / 1.3 ≈ 0.77.
  suite.ratio('remote echo vs raw NATS request/reply, p50 (raw/remote)', 'remote echo p50', 'raw NATS request p50', 0.77);
  suite.ratio('remote echo vs raw request to pool.handle, p50', 'remote echo p50', 'raw NATS request to pool.handle p50');
  suite.ratio('remote echo vs local pool.exec, p50 (local/remote)', 'remote echo p50', 'local pool.exec echo p50');
  await host.close();
  await remote.close();

  // 2. Throughput over host processes, each host's pool sized to its share of the machine:
  // one host, a thread per core; two hosts, half as many each (on 2 cores, 1 thread each: with
  // 2 each, 4 pool threads and 2 host threads contend for 2 cores, about 5% fewer calls/s).
  const threads = Math.max(1, Math.floor(os.availableParallelism() / 2));
  const one = await childHost(server.url, { name: 'tp1', label: 'a', threads: os.availableParallelism() });
  const tp1 = new RemotePool(nc, { name: 'tp1' });
  await tp1.hosts();
  await suite.measure('remote echo, 1 host process', 'calls/s', () => closedLoop(() => tp1.exec('echo', 1)));
  await stopHost(one);
  await tp1.close();
  const hosts = await Promise.all(['a', 'b'].map((label) => childHost(server.url, { name: 'tp', label, threads })));
  const tp = new RemotePool(nc, { name: 'tp' });
  if ((await tp.hosts()).length !== 2) throw new Error('the two hosts did not both answer a ping');
  // The 2-host figures side by side: corepool, the raw loop and Moleculer run in turn, round
  // by round, so that a slower spell of the machine falls on all three alike. (Idle hosts of
  // the others stay up meanwhile; they only answer heartbeats.)
  const molHosts = await Promise.all([0, 1].map(() => childHost(server.url, {}, path.join(__dirname, 'peers', 'moleculer-host.js'))));
  const broker = new ServiceBroker({ nodeID: `caller-${process.pid}`, transporter: server.url, logger: false });
  await broker.start();
  await broker.waitForServices(['bench']);
  if ((await broker.call('bench.echo', { v: 7 })) !== 7) throw new Error('moleculer echo is wrong');
  const tiny = '{"jsonrpc":"2.0","method":"echo","params":[1],"id":1}';
  await suite.interleave([
    { label: 'remote echo, 2 host processes', unit: 'calls/s', fn: () => closedLoop(() => tp.exec('echo', 1)) },
    { label: 'raw NATS request/reply loop', unit: 'req/s', fn: () => closedLoop(() => nc.request('raw', tiny, { timeout: 5000 })) },
    { label: 'moleculer echo, 2 host processes', unit: 'calls/s', fn: () => closedLoop(() => broker.call('bench.echo', { v: 1 })) },
  ]);
  await broker.stop();
  for (const h of molHosts) await stopHost(h);
  for (const h of hosts) await stopHost(h);
  await tp.close();
  suite.ratio('remote echo 2 hosts vs 1 host', 'remote echo, 2 host processes', 'remote echo, 1 host process');
  suite.ratio('remote echo 2 hosts vs raw request/reply loop', 'remote echo, 2 host processes', 'raw NATS request/reply loop');
  suite.ratio('remote echo vs moleculer, 2 host processes each', 'remote echo, 2 host processes', 'moleculer echo, 2 host processes', 2);

  // 3. Durable jobs vs request/reply, happycoin batches on 2 host processes.
  const jobHosts = await Promise.all(['a', 'b'].map((label) => childHost(server.url, { name: 'jobs', label, durable: { inFlight: 8 } })));
  const jobs = new RemotePool(nc, { name: 'jobs' });
  await jobs.hosts();
  let round = 0;
  await suite.measure('happycoin batches by request/reply', 'jobs/s', async () => {
    const t0 = performance.now();
    await jobs.map('happycoin', Array.from({ length: JOBS }, (_, i) => ({ ...JOB, seed: i })), { concurrency: 64 });
    return (JOBS / (performance.now() - t0)) * 1000;
  });
  await suite.measure('happycoin batches as durable jobs', 'jobs/s', async () => {
    const r = round++;
    const t0 = performance.now();
    await Promise.all(Array.from({ length: JOBS }, (_, i) => jobs.submit('happycoin', [{ ...JOB, seed: i }], { id: `${r}-${i}` })));
    let done = 0;
    for await (const o of jobs.results()) if (o.id.startsWith(`${r}-`) && ++done === JOBS) break;
    return (JOBS / (performance.now() - t0)) * 1000;
  });
  suite.ratio('durable jobs vs request/reply, jobs/s', 'happycoin batches as durable jobs', 'happycoin batches by request/reply');
  suite.note(`happycoin batches of ${JOB.attempts} attempts; ${JOBS} per run; hosts with 2 native threads each, durable inFlight 8`);
  for (const h of jobHosts) await stopHost(h);
  await jobs.close();

  await nc.close();
  await pool.close();
  await server.stop();
  suite.save();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
