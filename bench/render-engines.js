'use strict';
// Issue #17's render comparisons, renders per second driven by this one thread:
//   - the table and page templates (template-render.js's): mustache.js and hogan.js 3.0.2
//     (compiled once) on this thread; corepool through a 2-thread pool, its result as a string
//     and as a Buffer (`output: 'buffer'`), 64 calls in flight;
//   - a lambda-heavy page (a function and a section lambda in each of 80 repeats): mustache.js
//     on this thread vs corepool (the functions run on this thread, the rest on the pool), with
//     this thread's event-loop delay p99 while each runs.
// Contestants run in interleaved rounds (each once per round, 5 rounds of 1 s; --quick: 3 of
// 0.3 s); medians are printed with min–max. Nothing is saved.
//
//   node bench/render-engines.js [--quick]
const os = require('node:os');
const { monitorEventLoopDelay, performance } = require('node:perf_hooks');
const Mustache = require('mustache');
const Hogan = require('hogan.js');
const { Pool } = require('..');
const { TEMPLATES } = require('./template-render.js');

const quick = process.argv.includes('--quick');
const ROUNDS = quick ? 3 : 5;
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

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const fmt = (n) => (n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(2));

function lambdaPage() {
  const template = '<em>{{#bold}}{{me}}{{/bold}} loves {{you}}: {{price}}</em> '.repeat(80);
  const data = {
    me: 'Thomas',
    you: 'Katelyn',
    cents: 1999,
    price() {
      return `$${(this.cents / 100).toFixed(2)}`;
    },
    bold() {
      return (text, render) => `<b>${render(text)}</b>`;
    },
  };
  return { template, data };
}

async function main() {
  console.log(`render-engines: load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}, ${os.availableParallelism()} cores`);
  const pool = new Pool({ threads: 2 });
  const results = new Map();
  const contestants = [];
  for (const [name, { template, data }] of Object.entries(TEMPLATES)) {
    const hogan = Hogan.compile(template);
    const expected = Mustache.render(template, data);
    const text = JSON.stringify(data);
    if ((await pool.render(template, data)) !== expected) throw new Error(`${name}: corepool's output differs from mustache.js's`);
    if ((await pool.render(template, text, undefined, { data: 'json' })) !== expected) throw new Error(`${name}: corepool's output from JSON text differs from mustache.js's`);
    if (hogan.render(data) !== expected) console.log(`${name}: hogan.js's output differs from mustache.js's (measured all the same)`);
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
  for (const [, run] of contestants) await run(); // warm-up
  for (let round = 0; round < ROUNDS; round++) {
    for (const [label, run] of contestants) {
      const r = await withDelay(run);
      if (!results.has(label)) results.set(label, []);
      results.get(label).push(r);
    }
  }
  const med = (label, key = 'rate') => median(results.get(label).map((r) => r[key]));
  for (const [label, rs] of results) {
    const rates = rs.map((r) => r.rate);
    // A render on this thread holds the loop for the whole run: no delay sample is taken.
    const delay = label.includes('main thread') ? 'the loop is blocked throughout' : `loop delay p99 ${fmt(med(label, 'delayP99'))} ms`;
    console.log(`${label}: ${fmt(median(rates))} renders/s (${fmt(Math.min(...rates))}–${fmt(Math.max(...rates))}), ${delay}`);
  }
  const ratio = (a, b, goal) => console.log(`${a} / ${b}: ${(med(a) / med(b)).toFixed(2)}×${goal ? ` (goal ≥ ${goal}×)` : ''}`);
  ratio('table corepool string (2 threads)', 'table hogan.js (main thread)', 2);
  ratio('table corepool Buffer (2 threads)', 'table hogan.js (main thread)', 2);
  ratio('page corepool string (2 threads)', 'page hogan.js (main thread)', 1.5);
  ratio('page corepool Buffer (2 threads)', 'page hogan.js (main thread)', 1.5);
  ratio('table corepool from JSON text, string (2 threads)', 'table hogan.js + JSON.parse (main thread)', 3);
  ratio('table corepool from JSON text, Buffer (2 threads)', 'table hogan.js + JSON.parse (main thread)', 3);
  ratio('page corepool from JSON text, string (2 threads)', 'page hogan.js + JSON.parse (main thread)');
  ratio('page corepool from JSON text, Buffer (2 threads)', 'page hogan.js + JSON.parse (main thread)');
  ratio('lambda page corepool (2 threads)', 'lambda page mustache.js (main thread)');
  console.log(`load average after: ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  await pool.close();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
