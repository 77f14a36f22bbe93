'use strict';
// `npm start`: what corepool is for, in one screenful and a few seconds. Every ratio names both
// sides and is measured here, now:
//   1. your JavaScript: the same task file (examples/demo-task.js) on Piscina and on corepool,
//      a tiny task and a moderately heavy one;
//   2. a built-in command against the same algorithm in JavaScript: Happycoins (the book's
//      chapter 3) mined by the Rust command, with a live progress line, then by the book's
//      BigInt miner on worker_threads (this compares Rust with JavaScript, not the pools);
//   3. renders a Mustache template on the pool;
//   4. serves a method written in JavaScript and calls it through the pool.
//
//   node examples/demo.js [--draws N]   (numbers tried on the native threads; default 30M)
const path = require('node:path');
const { Worker } = require('node:worker_threads');
const Piscina = require('piscina');
const { Pool } = require('..');

const arg = process.argv.indexOf('--draws');
const DRAWS = arg > 0 ? Number(process.argv[arg + 1]) : 30_000_000;
const JS_MS = 500; // how long the JavaScript workers mine for the comparison
const TASK_FILE = path.join(__dirname, 'demo-task.js');
const live = process.stdout.isTTY === true;

// The book's miner in JavaScript (BigInt, one random u64 per draw), run in each worker for
// JS_MS; it posts back how many numbers it tried.
const JS_MINER = `
const { parentPort, workerData } = require('node:worker_threads');
const crypto = require('node:crypto');
const word = new BigUint64Array(1);
function isHappy(n) {
  while (n !== 1n && n !== 4n && n !== 0n) {
    let sum = 0n;
    for (; n > 0n; n /= 10n) sum += (n % 10n) ** 2n;
    n = sum;
  }
  return n === 1n;
}
let draws = 0;
let coins = 0;
const until = Date.now() + workerData;
while (Date.now() < until) {
  for (let i = 0; i < 1000; i++, draws++) {
    crypto.randomFillSync(word);
    if (isHappy(word[0]) && word[0] % 10000n === 0n) coins++;
  }
}
parentPort.postMessage({ draws, coins });
`;

/** Numbers tried per second by `threads` workers, each timing itself (start-up excluded). */
async function jsWorkersRate(threads) {
  const results = await Promise.all(
    Array.from(
      { length: threads },
      () =>
        new Promise((resolve, reject) => {
          const w = new Worker(JS_MINER, { eval: true, workerData: JS_MS });
          w.once('message', resolve);
          w.once('error', reject);
        }),
    ),
  );
  return results.reduce((sum, r) => sum + r.draws, 0) / (JS_MS / 1000);
}

const millions = (n) => `${(n / 1e6).toFixed(n < 1e7 ? 2 : 0)}M`;
const thousands = (n) => (n >= 1e4 ? `${(n / 1e3).toFixed(0)}k` : n.toFixed(0));

/** Calls per second of `call`, by `inflight` callers in a closed loop for `ms`. */
async function rate(call, ms, inflight) {
  let calls = 0;
  const t0 = performance.now();
  const until = t0 + ms;
  await Promise.all(
    Array.from({ length: inflight }, async () => {
      while (performance.now() < until) {
        await call(calls);
        calls++;
      }
    }),
  );
  return calls / ((performance.now() - t0) / 1000);
}

/** 1. The same task file on corepool and on Piscina, each with one worker per core. */
async function yourJavaScript(threads) {
  console.log(`1. Your JavaScript: the same task file on ${threads} workers of corepool and of Piscina`);
  const pool = new Pool({ filename: TASK_FILE, threads });
  const piscina = new Piscina({ filename: TASK_FILE, minThreads: threads, maxThreads: threads });
  await Promise.all([pool.ready(), ...Array.from({ length: threads }, () => piscina.run(0, { name: 'tiny' }))]);
  for (const [name, what, ms, inflight] of [
    ['tiny', 'tiny task (n + 1)', 300, 64],
    ['moderate', 'moderate task (1M steps of arithmetic)', 400, 2 * threads],
  ]) {
    // Two rounds each, taking turns, so that a change in the machine's load meanwhile falls on both.
    let corepool = 0;
    let other = 0;
    for (let round = 0; round < 2; round++) {
      corepool += (await rate((n) => pool.exec(name, n), ms / 2, inflight)) / 2;
      other += (await rate((n) => piscina.run(n, { name }), ms / 2, inflight)) / 2;
    }
    console.log(`   ${what.padEnd(38)} corepool ${thousands(corepool)}/s, Piscina ${thousands(other)}/s: corepool/Piscina ${(corepool / other).toFixed(2)}×`);
  }
  console.log('   (the JavaScript runs no faster: what corepool saves is the cost of each call)');
  await Promise.all([pool.close(), piscina.destroy()]);
}

async function main() {
  const pool = new Pool(); // one native thread per core
  console.log(`corepool: a pool of ${pool.threads} native threads for Node.js\n`);
  await yourJavaScript(pool.threads);

  // 2. Mining, one call per thread, each reporting its progress.
  console.log(`\n2. A built-in command: the Rust happycoin miner, ${millions(DRAWS)} random numbers on ${pool.threads} native threads`);
  const done = new Array(pool.threads).fill(0);
  const coinsSoFar = new Array(pool.threads).fill(0);
  const t0 = process.hrtime.bigint();
  const line = () => {
    const tried = done.reduce((a, b) => a + b, 0);
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    const coins = coinsSoFar.reduce((a, b) => a + b, 0);
    return `   ${String(Math.round((100 * tried) / DRAWS)).padStart(3)}%  ${millions(tried)} tried  ${coins} coins  ${millions(tried / s)}/s`;
  };
  const share = Math.ceil(DRAWS / pool.threads);
  const parts = await Promise.all(
    done.map((_, i) =>
      pool.call('happycoin', [{ attempts: Math.max(0, Math.min(share, DRAWS - i * share)) }], {
        onProgress: (p) => {
          done[i] = p.done;
          coinsSoFar[i] = p.coins;
          if (live) process.stdout.write(`\r${line()}`);
        },
      }),
    ),
  );
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const nativeRate = DRAWS / seconds;
  const coins = parts.flatMap((p) => p.coins);
  console.log(`${live ? '\r' : ''}   100%  ${millions(DRAWS)} tried  ${coins.length} coins  ${millions(nativeRate)}/s   (in ${seconds.toFixed(2)} s)`);
  const jsRate = await jsWorkersRate(pool.threads);
  console.log(`   the book's JavaScript miner (BigInt) on ${pool.threads} worker_threads: ${millions(jsRate)}/s`);
  console.log(`   Rust command/JavaScript miner ${Math.round(nativeRate / jsRate)}×: native code against JavaScript, not one pool against another`);

  // 3. Mustache on the pool: the main thread only sends the data and gets the text.
  const template = '<h1>{{title}}</h1><ul>{{#coins}}<li>{{.}}</li>{{/coins}}{{^coins}}<li>none this time</li>{{/coins}}</ul>';
  const html = await pool.render(template, { title: 'Happycoins & friends', coins: coins.slice(0, 2) });
  console.log(`\n3. A Mustache template rendered on a native thread:\n   ${html}`);

  // 4. A method written in JavaScript, served by this thread, called like a built-in one
  //    (from any thread; new Pool({ filename }) runs a file's functions on worker_threads).
  const server = pool.serve({ greet: (name) => `Hello, ${name}: ${coins.length} coins mined today.` });
  console.log(`\n4. A JavaScript method served through the pool:\n   ${await pool.exec('greet', 'Katelyn')}`);
  await server.close();
  await pool.close();

  console.log(`
Next: README.md (a five-minute tour), docs/getting-started.md and the guides in docs/,
      examples/ (invoices.js, life.js, ring-buffer.js, …), npm run bench (docs/benchmarks.md).`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
