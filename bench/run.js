#!/usr/bin/env node
'use strict';
// Runs the benchmarks, each in its own child process, then prints every ratio and goal from
// bench/results/*.json.
//
//   npm run bench                      every bench/*.js except the tools (harness, run, report, catalogue)
//   npm run bench -- happycoin memory  only those
//   npm run bench -- --quick           fewer and shorter runs (results in <name>.quick.json)
//   npm run bench -- soak --seconds=120  every --flag is passed on to the benchmarks
//   npm run bench -- --node 24         on Node 24, pinned in runtimes/package.json (22, 24, 26;
//                                      the machine's own major too): its results go to
//                                      bench/results/node24/, the machine's Node's to bench/results/
//   npm run bench -- --node 20,24      on each, alternating per benchmark (X on 20, X on 24, Y on
//                                      20, …) so that a spell of load from elsewhere hits both
//
// A benchmark that crashes, or outlives its time limit (BENCH_TIMEOUT_S, default 900 s; 240 s
// with --quick), is reported as failed and makes the exit code 1. Goals not met do not:
// benchmarks measure, they do not assert.
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { resultsFile: resultsPath, ratioFormula } = require('./harness');
const { ownNode, nodeRuntime, pinnedAlias } = require('../scripts/runtimes');

const DIR = __dirname;
const NOT_BENCHMARKS = new Set(['harness.js', 'run.js', 'report.js', 'catalogue.js']);

/** The command line: `--node N[,M…]` / `--node=N[,M…]` is run.js's own (`nodes`, null when
 *  absent: the machine's Node); other --flags go to every benchmark; the rest are benchmark names. */
function parseArgs(argv) {
  const out = { nodes: null, names: [], flags: [] };
  let list = null;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--node') {
      if (argv[i + 1] === undefined || argv[i + 1].startsWith('--')) throw new Error('--node needs a major version: --node 24 (or 20,24)');
      list = argv[++i];
    } else if (a.startsWith('--node=')) list = a.slice('--node='.length);
    else if (a.startsWith('--')) out.flags.push(a);
    else out.names.push(a);
  }
  if (list !== null) {
    out.nodes = [...new Set(list.split(','))];
    const bad = out.nodes.find((n) => !/^\d+$/.test(n));
    if (bad !== undefined) throw new Error(`--node takes major versions such as 24 or 20,24, not ${JSON.stringify(bad)}`);
  }
  return out;
}

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const timeoutS = Number(process.env.BENCH_TIMEOUT_S) || (quick ? 240 : 900);
const started = Date.now();

const clock = () => `${((Date.now() - started) / 1000).toFixed(0)}s`;
const say = (msg) => console.log(`[bench] ${msg} (${clock()})`);

function available() {
  return fs
    .readdirSync(DIR)
    .filter((f) => f.endsWith('.js') && !NOT_BENCHMARKS.has(f))
    .map((f) => f.slice(0, -3))
    .sort();
}

function select(wanted) {
  const all = available();
  if (wanted.length === 0) return all;
  const names = wanted.map((w) => path.basename(w).replace(/\.js$/, ''));
  const unknown = names.filter((n) => !all.includes(n));
  if (unknown.length) {
    console.error(`[bench] no benchmark named ${unknown.join(', ')}; there are: ${all.join(', ')}`);
    process.exit(2);
  }
  return names;
}

/** Runs bench/<name>.js on `runtime` (its binary; what it spawns uses process.execPath, so the
 *  same one). */
function runOne(name, runtime, flags) {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const child = spawn(runtime.bin, ['--expose-gc', path.join(DIR, `${name}.js`), ...flags], {
      stdio: 'inherit',
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutS * 1000);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      const seconds = (Date.now() - t0) / 1000;
      const error = timedOut ? `killed after ${timeoutS} s` : code !== 0 ? `exit ${code ?? signal}` : null;
      resolve({ name, seconds, error });
    });
  });
}

function pad(rows) {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => String(r[i]).length)));
  return rows.map((r) => r.map((c, i) => String(c).padEnd(widths[i])).join('  ').trimEnd()).join('\n');
}

function figure(entry) {
  if (entry.kind === 'max') return `${Number(entry.value.toPrecision(3))} ${entry.unit}`;
  return `${entry.value.toFixed(2)}×`;
}

function goal(entry) {
  if (entry.goal == null) return '';
  return entry.kind === 'max' ? `≤ ${entry.goal} ${entry.unit}` : `≥ ${entry.goal}×`;
}

/** The ratios and goals of every results file of this kind (quick or full) of `runtime`. */
function summary(ran, runtime) {
  const thisRun = new Map(ran.map((r) => [r.name, r]));
  const alias = pinnedAlias(runtime.bin);
  const resultsFile = (name) => resultsPath(name, { quick, alias });
  const dir = path.dirname(resultsFile('any'));
  const files = fs.existsSync(dir) ? fs.readdirSync(dir) : [];
  const names = files
    .filter((f) => f.endsWith('.json') && f.endsWith('.quick.json') === quick)
    .map((f) => f.slice(0, quick ? -'.quick.json'.length : -'.json'.length))
    .sort();
  const rows = [['benchmark', 'ratio or figure', 'value', 'goal', 'met', 'computed as']];
  let met = 0;
  let missed = 0;
  for (const name of names) {
    const file = resultsFile(name);
    const fresh = thisRun.has(name) && !thisRun.get(name).error && fs.statSync(file).mtimeMs >= started;
    let data;
    try {
      data = JSON.parse(fs.readFileSync(file, 'utf8'));
    } catch (e) {
      rows.push([name, `unreadable results: ${e.message}`, '', '', '']);
      continue;
    }
    const label = fresh ? name : `${name} (earlier: ${data.machine?.date?.slice(0, 16) ?? '?'})`;
    for (const entry of data.ratios ?? []) {
      if (entry.goal != null && fresh) entry.met ? met++ : missed++;
      const status = entry.goal == null ? '' : entry.met ? 'met' : 'NOT met';
      rows.push([label, entry.name, figure(entry), goal(entry), status, ratioFormula(entry, data.results) ?? '']);
    }
  }
  const where = path.relative(path.join(DIR, '..'), dir);
  console.log(`\n[bench] summary: ${quick ? 'quick' : 'full'} results of ${runtime.name} in ${where}/`);
  console.log(
    '[bench] a ratio above 1× means the first contestant named is better; "computed as" says which median was divided by which' +
      (quick ? '\n[bench] quick figures come from one or two short runs each: on a busy machine one of them can be off by a lot' : '') +
      '\n',
  );
  console.log(rows.length > 1 ? pad(rows) : 'no results');
  const failed = ran.filter((r) => r.error);
  console.log(
    `\n[bench] ${ran.length - failed.length}/${ran.length} benchmarks ran in ${clock()}; goals this run: ${met} met, ${missed} not met` +
      (failed.length ? `; FAILED: ${failed.map((r) => `${r.name} (${r.error})`).join(', ')}` : ''),
  );
  return failed.length;
}

async function main() {
  let parsed;
  let chosen;
  try {
    parsed = parseArgs(args);
    // Every runtime is found before anything runs: a missing one fails now, not an hour in.
    chosen = parsed.nodes === null ? [ownNode()] : parsed.nodes.map(nodeRuntime);
  } catch (e) {
    console.error(`[bench] ${e.message}`);
    process.exit(2);
  }
  const names = select(parsed.names);
  const on = chosen.map((r) => r.name).join(' and ');
  say(`${names.length} benchmark${names.length === 1 ? '' : 's'}${quick ? ' (quick)' : ''} on ${on}: ${names.join(', ')}`);
  const ran = new Map(chosen.map((r) => [r, []]));
  const steps = names.flatMap((name) => chosen.map((runtime) => ({ name, runtime })));
  for (const [i, { name, runtime }] of steps.entries()) {
    const what = `${i + 1}/${steps.length} ${name}${chosen.length > 1 ? ` on ${runtime.name}` : ''}`;
    say(`${what}: start`);
    const r = await runOne(name, runtime, parsed.flags);
    ran.get(runtime).push(r);
    say(`${what}: ${r.error ? `FAILED (${r.error})` : 'done'} in ${r.seconds.toFixed(0)} s`);
  }
  let failed = 0;
  for (const [runtime, runs] of ran) failed += summary(runs, runtime);
  process.exitCode = failed ? 1 : 0;
}

if (require.main === module) main();

module.exports = { available, parseArgs };
