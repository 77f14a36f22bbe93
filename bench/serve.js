'use strict';
// JS-served methods (Pool#serve) against Piscina, both with 2 worker_threads:
//  1. a tiny task, add({ a, b }), from 64 closed-loop callers: calls per second;
//  2. HTTP: a Fastify route that renders the template-render benchmark's page with mustache.js
//     in the worker_threads, loaded by autocannon (10 connections) from a separate process.
//
//   node bench/serve.js [--quick]
const path = require('node:path');
const { spawn } = require('node:child_process');
const { Worker } = require('node:worker_threads');
const Fastify = require('fastify');
const { Piscina } = require('piscina');
const { Pool } = require('..');
const { Suite, closedLoop } = require('./harness');

const THREADS = 2;
const CALLERS = 64;
const TEMPLATE = '<em>{{me}} loves {{you}}</em> '.repeat(80);
const DATA = { me: 'Thomas', you: 'Katelyn' };

const suite = new Suite('serve', { runs: 5, warmup: 1, quickRuns: 1 });
const LOOP_MS = suite.quick ? 1000 : 3000;
const HTTP_S = suite.quick ? 3 : 10;

/** Requests per second that autocannon (another process) gets from `url` in `seconds`. */
function autocannon(url, seconds) {
  const bin = require.resolve('autocannon/autocannon.js');
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, '-c', '10', '-d', String(seconds), '-j', url], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`autocannon exited with ${code}`));
      const r = JSON.parse(out);
      if (r.non2xx > 0 || r.errors > 0) return reject(new Error(`${url}: ${r.non2xx} non-2xx, ${r.errors} errors`));
      resolve({ rps: r.requests.average, p99: r.latency.p99 });
    });
  });
}

async function main() {
  suite.log(`${THREADS} worker_threads each; tiny task: ${CALLERS} callers × ${LOOP_MS} ms; HTTP: 10 connections × ${HTTP_S} s`);
  const pool = Pool.shared();
  const workers = Array.from({ length: THREADS }, () => new Worker(path.join(__dirname, 'peers', 'serve-worker.js')));
  await Promise.all(workers.map((w) => new Promise((resolve) => w.once('message', resolve))));
  const piscina = new Piscina({
    filename: path.join(__dirname, 'peers', 'piscina-tasks.js'),
    minThreads: THREADS,
    maxThreads: THREADS,
  });
  const expected = await piscina.run({ template: TEMPLATE, data: DATA }, { name: 'mustache' });
  if ((await pool.exec('mustache', TEMPLATE, DATA)) !== expected) throw new Error('corepool and Piscina render differently');
  if ((await pool.exec('add', { a: 2, b: 3 })) !== 5 || (await piscina.run({ a: 2, b: 3 })) !== 5) throw new Error('add is wrong');

  // 1. Tiny task.
  const loop = { callers: CALLERS, ms: LOOP_MS };
  // Both parts alternate the contestants run by run, so a burst of load from elsewhere on the
  // machine does not land on one side only.
  await suite.interleave([
    { label: 'served add', unit: 'ops/s', fn: () => closedLoop(() => pool.exec('add', { a: 1, b: 2 }), loop) },
    { label: 'piscina add', unit: 'ops/s', fn: () => closedLoop(() => piscina.run({ a: 1, b: 2 }), loop) },
  ]);
  suite.ratio('served vs piscina, tiny task', 'served add', 'piscina add', 3);

  // 2. HTTP routes rendering with mustache.js in the worker_threads.
  const app = Fastify();
  app.get('/served', async (req, reply) => {
    reply.type('text/html');
    return pool.exec('mustache', TEMPLATE, DATA);
  });
  app.get('/piscina', async (req, reply) => {
    reply.type('text/html');
    return piscina.run({ template: TEMPLATE, data: DATA }, { name: 'mustache' });
  });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  const p99 = { served: [], piscina: [] };
  await suite.interleave(
    ['served', 'piscina'].map((route) => ({
      label: `/${route}`,
      unit: 'req/s',
      fn: async () => {
        const r = await autocannon(`${address}/${route}`, HTTP_S);
        p99[route].push(r.p99);
        return r.rps;
      },
    })),
  );
  // The first `warmup` readings of each route were warm-ups.
  suite.record('/served latency p99', 'ms', p99.served.slice(suite.warmup));
  suite.record('/piscina latency p99', 'ms', p99.piscina.slice(suite.warmup));
  suite.ratio('served vs piscina, /served vs /piscina req/s', '/served', '/piscina', 1.5);
  suite.note('the template-render page: "<em>{{me}} loves {{you}}</em> " × 80 with mustache.js 4.2.0');

  await app.close();
  await piscina.destroy();
  await Promise.all(workers.map((w) => w.terminate()));
  suite.save();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
