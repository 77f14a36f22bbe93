'use strict';
// What each benchmark is for, as BENCHMARKS.md and the README's summary tell a reader: one entry
// per bench/<name>.js (a test checks that they match).
//
//   summary   a few words: what is compared
//   measures  what one run measures and how, for BENCHMARKS.md (the method in full is the
//             header comment of bench/<name>.js)
//   headline  the ratio the README's summary quotes, by name as the benchmark records it (a
//             RegExp where the name holds the machine's thread count); or, for a benchmark
//             with no peer to compare with, `figure(result)`: the text quoted instead
//
// The headline is the benchmark's main comparison against its named peer, goal or no goal;
// the summary also counts every other goal of the run and names the ones not met, so choosing
// a headline never hides one.

const catalogue = {
  dispatch: {
    summary: 'per-call overhead of tiny tasks',
    measures:
      'Settled calls per second from 64 concurrent closed-loop callers of a tiny task (corepool `exec(\'echo\', x)`, ' +
      'Piscina, Tinypool and workerpool adding two numbers, the book\'s RpcWorkerPool echoing), threads = cores; ' +
      'a burst of 200k calls under one `Promise.all` (time, and the heap it leaves); and sequential ' +
      'single-call latency next to a bare C round trip between two threads that sleep between turns (what two ' +
      'wake-ups cost here; not a floor: corepool\'s threads poll for 50 µs before they sleep).',
    headline: 'corepool vs piscina (closed loop)',
  },
  'express-engines': {
    summary: '`corepool/express` vs mustache-express, page route',
    measures:
      'Requests per second on an Express 5 server (a child process) rendering template-render.js\'s page ' +
      'template from a views folder, through `corepool/express` and through mustache-express 1.3.2, and the ' +
      'page pre-rendered through Express\'s own `res.send` (no engine: the reference), loaded ' +
      'by autocannon with 10 connections in interleaved rounds, with latency p99; both bodies are checked ' +
      'against mustache.js.',
    headline: 'corepool/express vs mustache-express, page',
  },
  'file-pool': {
    summary: 'a pool of JS workers from a task file vs Piscina, tiny task',
    measures:
      '`new Pool({ filename })` and Piscina load the same task file (`a + b`) into as many worker_threads as ' +
      'cores and are called the same way, `run({ a, b })`, from 64 concurrent closed-loop callers: settled ' +
      'calls per second, every result checked. The same pool on an HTTP route is `/file-pool` in template-render.',
    headline: 'file pool vs piscina, tiny task',
  },
  happycoin: {
    summary: 'CPU-bound work (the book\'s chapters 1 and 3)',
    measures:
      'Time to try 10M random 64-bit numbers for Happycoins (happy numbers divisible by 10,000), split over the ' +
      'cores: the book\'s single-threaded JS, its worker_threads and Piscina versions, corepool\'s native ' +
      '`happycoin` command, and the book\'s C program shape with pthreads as the reference. Every coin is ' +
      'checked; rows that try fewer numbers are scaled to 10M.',
    headline: /^corepool vs piscina \(\d+ threads?\)$/,
  },
  'heavy-js': {
    summary: 'moderately heavy JS tasks (BigInt 1000!) vs the compute floor and the pools users pick',
    measures:
      'Whole-process wall time of 100,000 tasks computing the BigInt factorial of 1000 (~190 µs each, returned as a ' +
      'BigInt) on 2 threads, each contestant a fresh process, alternating round by round: the compute floor (the same ' +
      'function in a plain loop on 2 worker_threads), corepool\'s task-file pool, `corepool/piscina`, Piscina, poolifier, ' +
      'Tinypool and workerpool, all loading the same function, all 100k tasks submitted in one loop and awaited with ' +
      'one `Promise.all`, every result checked. Then `corepool/piscina` against Piscina from 64 closed-loop callers: a ' +
      'tiny task, and values only structured clone carries (a 1 KB object with Dates and a Map, a 100 KB ' +
      '`Uint8Array` moved there and back, a `Map` of 1,000 entries; a value corepool refuses is recorded as not supported).',
    headline: 'corepool time / floor time',
  },
  life: {
    summary: 'Game of Life on shared memory',
    measures:
      'Generations per second on a 1000×1000 grid: corepool\'s `life` command (a band of rows per call) against ' +
      'the book\'s Grid on one JS thread and its worker_threads version (a band per worker, in lockstep with ' +
      'Atomics). All start from the same grid and must end identical.',
    headline: 'corepool vs js-workers',
  },
  locks: {
    summary: 'the shared-memory locks between worker_threads',
    measures:
      'Lock/unlock pairs per second at 1, 2 and 8 worker_threads: corepool\'s Mutex and Semaphore (spin, then ' +
      'wait) against the same classes before they spun and against the book\'s mutex; then 8 threads taking a ' +
      'lock again and again, FairMutex against Mutex: the longest wait, the spread of acquisitions per thread ' +
      'and the pairs per second; the owner-checked locks\' pairs per second for scale.',
    headline: "Mutex vs the book's, 2 threads",
  },
  map: {
    summary: '`pool.map` vs a loop of `exec()` calls, 100k inputs',
    measures:
      'Time for 100k inputs through one method, results in input order: `pool.map(method, inputs)` against ' +
      'submitting `pool.exec(method, input)` for each input and awaiting `Promise.all`. Once with the built-in ' +
      '`echo` on native threads (the work is nothing: the figure is what submitting costs), once with a task ' +
      'file\'s function on JavaScript workers. Every result is checked.',
    headline: 'map vs exec loop, 100k native echo',
  },
  nats: {
    summary: 'corepool/nats: JSON-RPC over a NATS server, and durable jobs on JetStream',
    measures:
      'Against a real nats-server on loopback: the p50 round trip of a remote `echo` against a raw NATS ' +
      'request with a fixed answer, one answered by `pool.handle` and a local `pool.exec`; calls per second from ' +
      '64 callers over 1 and 2 host processes against a raw request/reply loop and Moleculer with its NATS ' +
      'transporter (2 host processes each); Happycoin batches as durable jobs against request/reply.',
    headline: 'remote echo vs moleculer, 2 host processes each',
  },
  memory: {
    summary: 'memory and start-up of a pool (the book\'s Table 8-1)',
    measures:
      'RSS added and time to be ready for pools of 0, 1, 2, 4, 8 and 16 threads, each in a fresh process: ' +
      'corepool (ready when every thread has answered a call), plain worker_threads (the book\'s leader.js) and ' +
      'Piscina (ready when N tasks that wait for each other all return).',
    headline: 'corepool 16 threads: RSS added over 0 threads',
  },
  mutex: {
    summary: 'Mutex lock/unlock',
    measures:
      'Lock/unlock pairs per second: corepool\'s Mutex against the book\'s JS Mutex (and against the design ' +
      'corepool did not choose, a native call per operation), uncontended on one thread and contended by 4 ' +
      'worker_threads incrementing a shared counter, checked at the end.',
    headline: 'contended: corepool vs book',
  },
  'render-engines': {
    summary: 'Mustache renders per second driven by one thread: hogan.js, mustache.js, corepool',
    measures:
      'Renders per second of the table and page templates driven by one main thread: mustache.js and hogan.js ' +
      '3.0.2 (compiled once) on that thread, corepool through a 2-thread pool as a string and as a Buffer with ' +
      '64 calls in flight; the same data as JSON text, hogan.js + JSON.parse on that thread against corepool ' +
      'rendering from the text (data: \'json\', parsed on the pool thread); and a page with a function and a section lambda in each repeat, corepool against ' +
      'mustache.js, with the event-loop delay p99 of each run on the pool. Every output is checked against ' +
      'mustache.js\'s first.',
    headline: 'table: corepool string vs hogan.js',
  },
  ring: {
    summary: 'ring buffer throughput between worker_threads',
    measures:
      'MB/s through a ring buffer between worker_threads: corepool\'s RingBuffer against the book\'s ' +
      'SharedRingBuffer in JavaScript, with the same memory layout, producers, consumers and chunk sizes, for ' +
      'three shapes from one producer and a big ring to four of each and a 100-byte ring.',
    headline: 'corepool vs book, 1→1, 64 KiB ring, 16 KiB chunks',
  },
  serve: {
    summary: 'methods written in JavaScript (`serve`) vs Piscina',
    measures:
      'worker_threads serving methods through `Pool#serve` against Piscina, 2 threads each: a tiny task from 64 ' +
      'closed-loop callers (calls per second), and a Fastify route rendering the template-render page with ' +
      'mustache.js in the workers, loaded by autocannon from another process (requests per second).',
    headline: 'served vs piscina, tiny task',
  },
  soak: {
    summary: 'ten minutes of mixed load, every call accounted for',
    measures:
      'Ten minutes of mixed load in one process (closed-loop callers, bursts against a small queue, pools ' +
      'created and closed under load, serving worker_threads terminated with calls in flight), then an ' +
      'account of every call and the slope of RSS and heap over the second half. No peer: it checks that ' +
      'nothing is lost, doubled or leaked.',
    figure(result) {
      const account = result.tables?.account?.[0];
      const rss = result.results?.['RSS slope, second half'];
      const band = result.results?.['RSS slope ±2 standard errors'];
      if (!account) return null;
      const calls = `${(account.submitted / 1e6).toFixed(2)}M calls: ${account.neverSettled} never settled, ${account.wrong} wrong`;
      if (!rss || !band) return calls;
      return `${calls}; RSS slope ${rss.median.toFixed(2)} ± ${band.median.toFixed(2)} MB/min`;
    },
  },
  strategies: {
    summary: 'how roundrobin, random and leastbusy place work',
    measures:
      'The book\'s Table 6-1 (which worker serves requests R1…R9 under each strategy) from a real run on ' +
      'corepool and on the book\'s RpcWorkerPool, and a skewed load (every 6th task 20× longer): total time of ' +
      'a batch and latency of a stream, per strategy, with the tasks each worker got.',
    headline: 'leastbusy vs roundrobin (skewed batch total time)',
  },
  'template-render': {
    summary: 'an HTTP server rendering Mustache (the book\'s chapter 8)',
    measures:
      'Requests per second, latency, the server\'s event-loop delay and its CPU time per request (main thread, ' +
      'other threads) of a Fastify server whose routes return ' +
      'the same HTML rendered in different places: pre-rendered (`/static`), mustache.js on the main thread ' +
      '(`/main`), the book\'s RpcWorkerPool (`/offload`), Piscina (`/piscina`), corepool\'s native render ' +
      '(`/corepool`), mustache.js in worker_threads serving it (`/served`) and in a pool of JS workers from ' +
      'Piscina\'s task file (`/file-pool`), and on the page the pre-rendered page sent to the pool and back (`/echo`: ' +
      'one round trip, nothing rendered, the ceiling of any answer from a pool thread); autocannon loads them ' +
      'from another process. Two templates: the ' +
      'book\'s page (2,400 characters) and a 200-row table; and the page with a function and a section lambda in ' +
      'each repeat, on `/static`, `/main` and `/corepool` (`pool.render`). Then renders per second on one ' +
      'thread, native against mustache.js.',
    headline: 'page: /corepool vs /piscina req/s',
  },
};

/** The benchmark's headline ratio entry in `result`, or null. */
function headlineRatio(result) {
  const entry = catalogue[result.benchmark];
  const want = entry?.headline;
  if (want == null) return null;
  return (result.ratios ?? []).find((q) => (want instanceof RegExp ? want.test(q.name) : q.name === want)) ?? null;
}

module.exports = { catalogue, headlineRatio };
