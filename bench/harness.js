'use strict';
// The shared benchmark harness: warm-up, repeated runs, median and min–max, progress lines,
// machine info (with the runtime), and JSON results in bench/results/<name>.json, or
// bench/results/<alias>/<name>.json when the process runs on one of the Nodes pinned in
// runtimes/package.json (`node24`: `npm run bench -- --node 24`), so the runs of different Nodes
// never overwrite each other.
//
//   const { Suite } = require('./harness');
//   const suite = new Suite('dispatch', { runs: 5 });          // --quick → fewer runs
//   const r = await suite.measure('corepool', 'ops/s', async () => opsPerSecond());
//   suite.ratio('corepool vs piscina', 'corepool', 'piscina');  // median a / median b
//   suite.save();
//
// `measure` calls fn `warmup` times (discarded), then `runs` times, and keeps fn's returned
// figure. Higher-is-better or lower-is-better is given by the unit (`/s` → higher); a ratio is
// always turned so that above 1× means its first contestant is better (`ratioFormula` says
// which figure was divided by which).
// `interleave` measures several contestants in alternating rounds (A B C, A B C, …), so a burst
// of load from elsewhere on the machine spreads over all of them instead of hitting one.
// `limit` checks a median against an absolute bound (e.g. p50 ≤ 30 µs) and is listed with the
// ratios (entry.kind === 'max'). `closedLoop` is the tiny-task load several benchmarks share:
// concurrent callers, each awaiting one call after another.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execSync } = require('node:child_process');
const { pinnedAlias } = require('../scripts/runtimes');

const quick = process.argv.includes('--quick') || process.env.BENCH_QUICK === '1';
const started = Date.now();
// Other work on the machine skews every figure: the results record the load around the run.
const loadAtStart = os.loadavg()[0];

function sh(cmd) {
  try {
    return execSync(cmd, { stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim();
  } catch {
    return null;
  }
}

/** The runtime running this process: { name: 'Node', version: '24.22.3' }. */
function runtime() {
  if (process.versions.bun) return { name: 'Bun', version: process.versions.bun };
  if (globalThis.Deno?.version?.deno) return { name: 'Deno', version: globalThis.Deno.version.deno };
  return { name: 'Node', version: process.versions.node };
}

/** Where a benchmark's results go: bench/results/[<alias>/]<name>[.quick].json, `alias` being
 *  the pinned runtime's (`node24`) or null for any other, such as this machine's own Node. */
function resultsFile(name, { quick: q = quick, alias = pinnedAlias(process.execPath) } = {}) {
  return path.join(__dirname, 'results', ...(alias ? [alias] : []), `${name}${q ? '.quick' : ''}.json`);
}

function machine() {
  const cpus = os.cpus();
  return {
    cpu: cpus[0]?.model?.trim() ?? 'unknown',
    cores: os.availableParallelism(),
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    runtime: runtime(),
    rustc: sh('rustc --version'),
    commit: sh('git rev-parse --short HEAD'),
    loadAverage: { atStart: loadAtStart, atEnd: os.loadavg()[0] },
    date: new Date().toISOString(),
  };
}

/** Whether more of `unit` is better: rates (`/s`, `per s`, ops, requests); anything else (times,
 *  sizes, spreads) is better lower. */
function higherIsBetter(unit) {
  return /\/s$|per s|ops|req/.test(unit ?? '');
}

/**
 * What a ratio entry divided by what, in words a reader can check against the results table:
 * "corepool ÷ piscina, ops/s (higher is better)" or, for a time, "c-pthreads ÷ corepool, ms per
 * 10M draws (lower is better)": either way, above 1× the first contestant (`a`) is better. An
 * absolute bound (kind 'max') is its result's median. Null if the results lack a side.
 */
function ratioFormula(entry, results) {
  const unit = results?.[entry.a]?.unit;
  if (unit == null) return null;
  if (entry.kind === 'max') return `median of ${entry.a}, ${unit} (lower is better)`;
  if (results?.[entry.b] == null) return null;
  return higherIsBetter(unit)
    ? `${entry.a} ÷ ${entry.b}, ${unit} (higher is better)`
    : `${entry.b} ÷ ${entry.a}, ${unit} (lower is better)`;
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function elapsed() {
  return `${((Date.now() - started) / 1000).toFixed(1)}s`;
}

function fmt(x) {
  if (!Number.isFinite(x)) return String(x);
  const a = Math.abs(x);
  if (a >= 1e6) return `${(x / 1e6).toFixed(2)}M`;
  if (a >= 1e4) return `${(x / 1e3).toFixed(1)}k`;
  if (a >= 100) return x.toFixed(0);
  if (a >= 1) return x.toFixed(2);
  return x.toPrecision(3);
}

/** Figures for a table: every number (in arrays and objects too) to 3 significant digits
 *  (223.71 → 224, 1.3158 → 1.32); integers of more digits are kept as they are. */
function round(x) {
  if (typeof x === 'number') return Number.isFinite(x) && !Number.isInteger(x) ? Number(x.toPrecision(3)) : x;
  if (Array.isArray(x)) return x.map(round);
  if (x !== null && typeof x === 'object') return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, round(v)]));
  return x;
}

/**
 * Calls per second from `callers` concurrent closed loops, each awaiting `call(i)` after
 * `call(i)` for `ms`. `check(i, result)`, if given, must return true for every result: a wrong
 * answer throws, so no figure is ever reported for a contestant that computes the wrong thing.
 */
async function closedLoop(call, { callers = 64, ms, check }) {
  let ops = 0;
  const end = performance.now() + ms;
  const loop = async (_, k) => {
    for (let i = k * 1e6; performance.now() < end; i++) {
      const result = await call(i);
      if (check && !check(i, result)) throw new Error(`closed loop: call(${i}) returned ${JSON.stringify(result)}`);
      ops++;
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: callers }, loop));
  return (ops / (performance.now() - start)) * 1000;
}

class Suite {
  constructor(name, { runs = 5, warmup = 1, quickRuns = 2 } = {}) {
    this.name = name;
    this.runs = quick ? quickRuns : runs;
    this.warmup = quick ? Math.min(warmup, 1) : warmup;
    this.quick = quick;
    this.results = {};
    this.ratios = [];
    this.notes = [];
    this.tables = {};
  }

  log(msg) {
    console.log(`[${this.name}] ${msg} (${elapsed()})`);
  }

  /** Runs fn warm-up + runs times; fn returns the figure (in `unit`) for one run. */
  async measure(label, unit, fn, { runs = this.runs, warmup = this.warmup } = {}) {
    for (let i = 0; i < warmup; i++) {
      this.log(`${label}: warm-up ${i + 1}/${warmup}`);
      await fn();
    }
    const values = [];
    for (let i = 0; i < runs; i++) {
      const v = await fn();
      values.push(v);
      this.log(`${label}: run ${i + 1}/${runs} → ${fmt(v)} ${unit}`);
    }
    const r = { unit, median: median(values), min: Math.min(...values), max: Math.max(...values), runs: values };
    this.results[label] = r;
    return r;
  }

  /** entries: [{ label, unit, fn }]. Warms each up, then runs `runs` rounds of all of them. */
  async interleave(entries, { runs = this.runs, warmup = this.warmup } = {}) {
    for (const { label, fn } of entries) {
      for (let i = 0; i < warmup; i++) {
        this.log(`${label}: warm-up ${i + 1}/${warmup}`);
        await fn();
      }
    }
    const values = new Map(entries.map((e) => [e.label, []]));
    for (let i = 0; i < runs; i++) {
      for (const { label, unit, fn } of entries) {
        const v = await fn();
        values.get(label).push(v);
        this.log(`${label}: run ${i + 1}/${runs} → ${fmt(v)} ${unit}`);
      }
    }
    return Object.fromEntries(entries.map(({ label, unit }) => [label, this.record(label, unit, values.get(label))]));
  }

  /** Records a figure measured elsewhere (e.g. a single-shot reading). */
  record(label, unit, values) {
    values = [].concat(values);
    const r = { unit, median: median(values), min: Math.min(...values), max: Math.max(...values), runs: values };
    this.results[label] = r;
    return r;
  }

  /** ratio = median(a) / median(b) for higher-is-better units, median(b) / median(a) otherwise,
   *  so a ratio above 1 always means `a` is better. `goal` is the ratio the benchmark aims for. */
  ratio(name, a, b, goal) {
    const ra = this.results[a];
    const rb = this.results[b];
    if (!ra || !rb) return null;
    const value = higherIsBetter(ra.unit) ? ra.median / rb.median : rb.median / ra.median;
    const entry = { name, a, b, value, goal: goal ?? null, met: goal == null ? null : value >= goal };
    this.ratios.push(entry);
    const goalText = goal != null ? `, goal ≥ ${goal}×: ${entry.met ? 'met' : 'NOT met'}` : '';
    this.log(`${name}: ${value.toFixed(2)}× (${ratioFormula(entry, this.results)}${goalText})`);
    return entry;
  }

  /** Checks median(label) ≤ max, for goals stated as an absolute bound rather than a ratio. */
  limit(name, label, max) {
    const r = this.results[label];
    if (!r) return null;
    const entry = { name, a: label, value: r.median, unit: r.unit, goal: max, met: r.median <= max, kind: 'max' };
    this.ratios.push(entry);
    this.log(`${name}: ${fmt(r.median)} ${r.unit} (goal ≤ ${max} ${r.unit}: ${entry.met ? 'met' : 'NOT met'})`);
    return entry;
  }

  note(text) {
    this.notes.push(text);
    this.log(`note: ${text}`);
  }

  table(name, rows) {
    this.tables[name] = rows;
  }

  save() {
    const file = resultsFile(this.name);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const out = {
      benchmark: this.name,
      quick,
      machine: machine(),
      results: this.results,
      ratios: this.ratios,
      tables: this.tables,
      notes: this.notes,
    };
    fs.writeFileSync(file, JSON.stringify(out, null, 2) + '\n');
    this.log(`wrote ${path.relative(process.cwd(), file)}`);
    return out;
  }
}

module.exports = { Suite, machine, runtime, resultsFile, higherIsBetter, ratioFormula, median, quick, fmt, round, closedLoop };
