'use strict';
// Issue #17's render comparisons, renders per second driven by this one thread:
//   - the table and page templates (template-render.js's): mustache.js and hogan.js 3.0.2
//     (compiled once) on this thread; corepool through a 2-thread pool, its result as a string
//     and as a Buffer (`output: 'buffer'`), 64 calls in flight;
//   - the same data as JSON text: hogan.js + JSON.parse on this thread against corepool
//     rendering from the text (`data: 'json'`, parsed on the pool thread);
//   - a lambda-heavy page (a function and a section lambda in each of 80 repeats): mustache.js
//     on this thread vs corepool (the functions run on this thread, the rest on the pool), with
//     this thread's event-loop delay p99 while each runs;
//   - a computed list (the table's 200 rows, each with a function of its own working out a
//     field): mustache.js on this thread vs corepool, likewise.
// Every output is checked against mustache.js's first. Contestants run in interleaved rounds
// (each once per round, 5 rounds of 1 s; --quick: 2 of 0.3 s); results in
// bench/results/render-engines.json.
//
//   node bench/render-engines.js [--quick]
const os = require('node:os');
const { monitorEventLoopDelay, performance } = require('node:perf_hooks');
const Mustache = require('mustache');
const Hogan = require('hogan.js');
const { Pool } = require('..');
const { TEMPLATES, lambdaPage, computedList } = require('./template-render.js');
const { Suite, quick } = require('./harness');

const suite = new Suite('render-engines', { runs: 5, warmup: 1, quickRuns: 2 });
const MS = quick ? 300 : 1000;
const IN_FLIGHT = 64;

function syncRate(render, ms) {
  let renders = 0;
  let bytes = 0;
  const t0 = performance.now();
  let t;
  do {
    for (let i = 0; i < 8; i++) bytes += render().length;
    renders += 8;
    t = performance.now();
  } while (t - t0 < ms);
  if (bytes === 0) throw new Error('rendered nothing');
  return (renders * 1000) / (t - t0);
}

async function asyncRate(render, ms) {
  let renders = 0;
  const t0 = performance.now();
  const deadline = t0 + ms;
  const caller = async () => {
    while (performance.now() < deadline) {
      await render();
      renders++;
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, caller));
  return (renders * 1000) / (performance.now() - t0);
}

/** Runs `fn` (→ renders per second) with this thread's event-loop delay watched. */
async function withDelay(fn) {
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  const rate = await fn();
  h.disable();
  return { rate, delayP99: h.percentile(99) / 1e6 };
}

async function main() {
  suite.log(`${os.availableParallelism()} cores; corepool: a 2-thread pool, ${IN_FLIGHT} renders in flight`);
  const pool = new Pool({ threads: 2 });
  const contestants = [];
  for (const [name, { template, data }] of Object.entries(TEMPLATES)) {
    const hogan = Hogan.compile(template);
    const expected = Mustache.render(template, data);
    const text = JSON.stringify(data);
    if ((await pool.render(template, data)) !== expected) throw new Error(`${name}: corepool's output differs from mustache.js's`);
    if ((await pool.render(template, text, undefined, { data: 'json' })) !== expected) throw new Error(`${name}: corepool's output from JSON text differs from mustache.js's`);
    if (hogan.render(data) !== expected) suite.note(`${name}: hogan.js's output differs from mustache.js's (measured all the same)`);
    contestants.push(
      [`${name} mustache.js (main thread)`, () => syncRate(() => Mustache.render(template, data), MS)],
      [`${name} hogan.js (main thread)`, () => syncRate(() => hogan.render(data), MS)],
      [`${name} corepool string (2 threads)`, () => asyncRate(() => pool.render(template, data), MS)],
      [`${name} corepool Buffer (2 threads)`, () => asyncRate(() => pool.render(template, data, undefined, { output: 'buffer' }), MS)],
      [`${name} hogan.js + JSON.parse (main thread)`, () => syncRate(() => hogan.render(JSON.parse(text)), MS)],
      [`${name} corepool from JSON text, string (2 threads)`, () => asyncRate(() => pool.render(template, text, undefined, { data: 'json' }), MS)],
      [`${name} corepool from JSON text, Buffer (2 threads)`, () => asyncRate(() => pool.render(template, text, undefined, { data: 'json', output: 'buffer' }), MS)],
    );
  }
  const lambdas = lambdaPage();
  const lambdaExpected = Mustache.render(lambdas.template, lambdas.data);
  if ((await pool.render(lambdas.template, lambdas.data)) !== lambdaExpected) throw new Error("lambda page: corepool's output differs");
  contestants.push(
    ['lambda page mustache.js (main thread)', () => syncRate(() => Mustache.render(lambdas.template, lambdas.data), MS)],
    ['lambda page corepool (2 threads)', () => asyncRate(() => pool.render(lambdas.template, lambdas.data), MS)],
  );
  const computed = computedList();
  const computedExpected = Mustache.render(computed.template, computed.data);
  if ((await pool.render(computed.template, computed.data)) !== computedExpected) throw new Error("computed list: corepool's output differs");
  contestants.push(
    ['computed list mustache.js (main thread)', () => syncRate(() => Mustache.render(computed.template, computed.data), MS)],
    ['computed list corepool (2 threads)', () => asyncRate(() => pool.render(computed.template, computed.data), MS)],
  );
  // The event-loop delay p99 of each run on the pool, kept beside its rate. (A render on this
  // thread holds the loop for the whole run: no delay sample is taken, none is recorded.)
  const delays = new Map();
  await suite.interleave(
    contestants.map(([label, run]) => ({
      label,
      unit: 'renders/s',
      fn: async () => {
        const { rate, delayP99 } = await withDelay(run);
        if (!label.includes('main thread')) {
          if (!delays.has(label)) delays.set(label, []);
          delays.get(label).push(delayP99);
        }
        return rate;
      },
    })),
  );
  for (const [label, values] of delays) suite.record(`${label} loop delay p99`, 'ms event-loop delay p99', values.slice(-suite.runs));
  suite.ratio('table: corepool string vs hogan.js', 'table corepool string (2 threads)', 'table hogan.js (main thread)', 2);
  suite.ratio('table: corepool Buffer vs hogan.js', 'table corepool Buffer (2 threads)', 'table hogan.js (main thread)', 2);
  suite.ratio('page: corepool string vs hogan.js', 'page corepool string (2 threads)', 'page hogan.js (main thread)', 1.5);
  suite.ratio('page: corepool Buffer vs hogan.js', 'page corepool Buffer (2 threads)', 'page hogan.js (main thread)', 1.5);
  suite.ratio('table from JSON text: corepool string vs hogan.js + JSON.parse', 'table corepool from JSON text, string (2 threads)', 'table hogan.js + JSON.parse (main thread)', 3);
  suite.ratio('table from JSON text: corepool Buffer vs hogan.js + JSON.parse', 'table corepool from JSON text, Buffer (2 threads)', 'table hogan.js + JSON.parse (main thread)', 3);
  suite.ratio('page from JSON text: corepool string vs hogan.js + JSON.parse', 'page corepool from JSON text, string (2 threads)', 'page hogan.js + JSON.parse (main thread)');
  suite.ratio('page from JSON text: corepool Buffer vs hogan.js + JSON.parse', 'page corepool from JSON text, Buffer (2 threads)', 'page hogan.js + JSON.parse (main thread)');
  suite.ratio('table: corepool string vs mustache.js', 'table corepool string (2 threads)', 'table mustache.js (main thread)');
  suite.ratio('page: corepool string vs mustache.js', 'page corepool string (2 threads)', 'page mustache.js (main thread)');
  suite.ratio('lambda page: corepool vs mustache.js', 'lambda page corepool (2 threads)', 'lambda page mustache.js (main thread)', 1);
  suite.ratio('computed list: corepool vs mustache.js', 'computed list corepool (2 threads)', 'computed list mustache.js (main thread)', 1);
  suite.note(
    `renders per second in runs of ${MS} ms, contestants interleaved; main thread: one render after another; ` +
      `corepool: ${IN_FLIGHT} renders in flight on a 2-thread pool, driven by this thread. Every output checked against mustache.js's first.`,
  );
  await pool.close();
  suite.save();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
