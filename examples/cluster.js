'use strict';
// Mining Happycoins over a cluster: two host processes serve a corepool behind NATS, and this
// process sends them the work, by request/reply and as durable jobs, printing which host served
// what. Uses the NATS server at NATS_URL (default nats://127.0.0.1:4222) if one answers there;
// otherwise starts nats-server (it must be installed) on a free port, and stops it at the end.
//
//   node examples/cluster.js [batches]
//
// Needs the optional peer dependencies: npm install @nats-io/transport-node @nats-io/jetstream

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const net = require('node:net');
const { spawn } = require('node:child_process');
const { connect } = require('@nats-io/transport-node');
const { Pool } = require('..');
const { serve, RemotePool } = require('../lib/nats.js'); // corepool/nats

const NAME = 'happycoins';
const ATTEMPTS = 1_000_000;

/** A host: serves `mine`, which runs a happycoin batch on this host's native threads. */
async function host(url, label) {
  const nc = await connect({ servers: url });
  const pool = new Pool({ threads: 2 });
  pool.serve(
    {
      mine: async (attempts, seed) => {
        const { count } = await pool.exec('happycoin', { attempts, seed });
        return { host: label, count };
      },
    },
    { concurrency: Infinity },
  );
  const h = await serve(pool, nc, { name: NAME, concurrency: 4, durable: { inFlight: 4 } });
  process.on('SIGTERM', async () => {
    await h.close();
    await nc.drain().catch(() => {}); // the server may be gone first
    await pool.close();
    process.exit(0);
  });
  process.stdout.write('ready\n');
}

function reachable(port, hostname) {
  return new Promise((resolve) => {
    const c = net.connect(port, hostname);
    c.once('connect', () => {
      c.destroy();
      resolve(true);
    });
    c.once('error', () => resolve(false));
  });
}

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** The url of a running NATS server, and how to stop it if this example started it. */
async function natsServer() {
  const url = new URL(process.env.NATS_URL ?? 'nats://127.0.0.1:4222');
  if (await reachable(Number(url.port || 4222), url.hostname)) return { url: url.href, stop: async () => {} };
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cluster-nats-'));
  const server = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', dir], { stdio: 'ignore' });
  server.once('error', (e) => {
    console.error(`no NATS server at ${url.href}, and nats-server could not be started (${e.code}): install it, or set NATS_URL`);
    process.exit(1);
  });
  while (!(await reachable(port, '127.0.0.1'))) await new Promise((r) => setTimeout(r, 20));
  console.log(`started nats-server on port ${port}`);
  const stop = async () => {
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
    fs.rmSync(dir, { recursive: true, force: true });
  };
  return { url: `nats://127.0.0.1:${port}`, stop };
}

function startHost(url, label) {
  const child = spawn(process.execPath, [__filename, 'host', url, label], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve) => child.stdout.once('data', () => resolve(child)));
}

async function main() {
  const batches = Number(process.argv[2] ?? 12);
  const server = await natsServer();
  const hosts = await Promise.all(['host-a', 'host-b'].map((label) => startHost(server.url, label)));
  const nc = await connect({ servers: server.url });
  const remote = new RemotePool(nc, { name: NAME });

  console.log(`hosts: ${(await remote.hosts()).map((h) => h.id).join(', ')}`);
  console.log(`request/reply: ${batches} batches of ${ATTEMPTS.toLocaleString('en')} attempts`);
  const served = new Map();
  let coins = 0;
  await Promise.all(
    Array.from({ length: batches }, async (_, seed) => {
      const r = await remote.exec('mine', ATTEMPTS, seed);
      console.log(`  batch ${String(seed).padStart(2)}: ${String(r.count).padStart(3)} coins, mined on ${r.host}`);
      served.set(r.host, (served.get(r.host) ?? 0) + 1);
      coins += r.count;
    }),
  );
  console.log(`  ${coins} coins; batches per host: ${[...served].map(([h, n]) => `${h} ${n}`).join(', ')}`);

  console.log('durable jobs: the same batches through JetStream, outcomes recorded once per id');
  const run = Date.now().toString(36);
  const ids = [];
  for (let seed = 0; seed < batches; seed++) ids.push((await remote.submit('mine', [ATTEMPTS, seed], { id: `${run}-${seed}` })).id);
  const results = await Promise.all(ids.map((id) => remote.waitFor(id)));
  const again = results.reduce((n, r) => n + r.count, 0);
  console.log(`  ${again} coins (${again === coins ? 'the same' : 'DIFFERENT'}); jobs per host: ${count(results.map((r) => r.host))}`);

  await remote.close();
  await nc.drain();
  for (const h of hosts) h.kill('SIGTERM');
  await Promise.all(hosts.map((h) => new Promise((r) => h.once('exit', r))));
  await server.stop();
}

function count(labels) {
  const m = new Map();
  for (const l of labels) m.set(l, (m.get(l) ?? 0) + 1);
  return [...m].map(([h, n]) => `${h} ${n}`).join(', ');
}

if (process.argv[2] === 'host') host(process.argv[3], process.argv[4]);
else main();
