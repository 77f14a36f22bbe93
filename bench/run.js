#!/usr/bin/env node
'use strict';
// Runs the benchmarks, each in its own child process, then prints every ratio and goal from
// bench/results/*.json.
//
//   npm run bench                      every bench/*.js except the tools (harness, run, report, catalogue)
//   npm run bench -- happycoin memory  only those
//   npm run bench -- --quick           fewer and shorter runs (results in <name>.quick.json)
//   npm run bench -- soak --seconds=120  every --flag is passed on to the benchmarks
//
// A benchmark that crashes, or outlives its time limit (BENCH_TIMEOUT_S, default 900 s; 240 s
// with --quick), is reported as failed and makes the exit code 1. Goals not met do not:
// benchmarks measure, they do not assert.
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');

const DIR = __dirname;
const NOT_BENCHMARKS = new Set(['harness.js', 'run.js', 'report.js', 'catalogue.js']);
const args = process.argv.slice(2);
const quick = args.includes('--quick');
const wanted = args.filter((a) => !a.startsWith('--'));
const flags = args.filter((a) => a.startsWith('--'));
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

function select() {
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

function runOne(name) {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const child = spawn(process.execPath, ['--expose-gc', path.join(DIR, `${name}.js`), ...flags], {
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

function resultsFile(name) {
  return path.join(DIR, 'results', `${name}${quick ? '.quick' : ''}.json`);
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

function summary(ran) {
  const thisRun = new Map(ran.map((r) => [r.name, r]));
  const dir = path.join(DIR, 'results');
  const files = fs.existsSync(dir) ? fs.readdirSync(dir) : [];
  const names = files
    .filter((f) => f.endsWith('.json') && f.endsWith('.quick.json') === quick)
    .map((f) => f.slice(0, quick ? -'.quick.json'.length : -'.json'.length))
    .sort();
  const rows = [['benchmark', 'ratio or figure', 'value', 'goal', 'met']];
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
      rows.push([label, entry.name, figure(entry), goal(entry), entry.goal == null ? '' : entry.met ? 'met' : 'NOT met']);
    }
  }
  console.log(`\n[bench] summary (${quick ? 'quick' : 'full'} results in bench/results/)\n`);
  console.log(rows.length > 1 ? pad(rows) : 'no results');
  const failed = ran.filter((r) => r.error);
  console.log(
    `\n[bench] ${ran.length - failed.length}/${ran.length} benchmarks ran in ${clock()}; goals this run: ${met} met, ${missed} not met` +
      (failed.length ? `; FAILED: ${failed.map((r) => `${r.name} (${r.error})`).join(', ')}` : ''),
  );
  return failed.length;
}

async function main() {
  const names = select();
  say(`${names.length} benchmark${names.length === 1 ? '' : 's'}${quick ? ' (quick)' : ''}: ${names.join(', ')}`);
  const ran = [];
  for (const [i, name] of names.entries()) {
    say(`${i + 1}/${names.length} ${name}: start`);
    const r = await runOne(name);
    ran.push(r);
    say(`${i + 1}/${names.length} ${name}: ${r.error ? `FAILED (${r.error})` : 'done'} in ${r.seconds.toFixed(0)} s`);
  }
  process.exitCode = summary(ran) ? 1 : 0;
}

if (require.main === module) main();

module.exports = { available };
