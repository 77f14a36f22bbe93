'use strict';
// `npm start`: what corepool does, in one screenful.
//   1. mines Happycoins (the book's chapter 3) on native threads, with a live progress line;
//   2. measures the same work on JavaScript worker_threads, here and now, for the speed-up;
//   3. renders a Mustache template on the pool;
//   4. serves a method written in JavaScript and calls it like a built-in one.
//
//   node examples/demo.js [--draws N]   (numbers tried on the native threads; default 100M)
const { Worker } = require('node:worker_threads');
const { Pool } = require('..');

const arg = process.argv.indexOf('--draws');
const DRAWS = arg > 0 ? Number(process.argv[arg + 1]) : 100_000_000;
const JS_MS = 1000; // how long the JavaScript workers mine for the comparison
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

async function main() {
  const pool = new Pool(); // one native thread per core
  console.log(`corepool: a pool of ${pool.threads} native threads for Node.js\n`);

  // 1. Mining, one call per thread, each reporting its progress.
  console.log(`1. Mining Happycoins: ${millions(DRAWS)} random numbers on ${pool.threads} native threads`);
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
  console.log(`   e.g. ${coins.slice(0, 2).join(', ') || 'none this time'}`);

  // 2. The same work in JavaScript, on as many worker_threads, for one second.
  console.log(`\n2. The same on ${pool.threads} JavaScript worker_threads (the book's BigInt miner), for ${JS_MS / 1000} s…`);
  const jsRate = await jsWorkersRate(pool.threads);
  console.log(`   ${millions(jsRate)}/s: corepool is ${Math.round(nativeRate / jsRate)}× faster, measured just now`);

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
Next: README.md (the API, your own functions with new Pool({ filename }), shared memory),
      examples/ (invoices.js, life.js, ring-buffer.js, …), npm run bench (against Piscina).`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
