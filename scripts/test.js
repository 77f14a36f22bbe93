#!/usr/bin/env node
// `npm test`: formatting and lints (Rust and JavaScript), the Rust core's tests, a fresh build
// of the addon, and the jest suite. Ends with one line "N passed, N failed" (tests plus the
// pass/fail checks).
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { runtimes } = require('./runtimes.js');

const root = path.join(__dirname, '..');
const jestArgs = process.argv.slice(2);
let passed = 0;
let failed = 0;
const summary = [];
/** Each failed jest test, with the start of its message. */
const failures = [];

/** The start of `text` (its first non-empty lines, up to the stack), without terminal colours. */
function messageStart(text) {
  // eslint-disable-next-line no-control-regex
  const lines = String(text ?? '').replace(/\x1b\[[0-9;]*m/g, '').split('\n').map((l) => l.trim());
  const head = [];
  for (const line of lines) {
    if (line.startsWith('at ') || head.length === 8) break;
    if (line) head.push(line);
  }
  const joined = head.join(' | ');
  return joined.length > 500 ? `${joined.slice(0, 500)}…` : joined;
}

function step(name, cmd, args, count) {
  console.log(`\n=== ${name}: ${cmd} ${args.join(' ')}`);
  const started = Date.now();
  const r = spawnSync(cmd, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8', maxBuffer: 1 << 28 });
  process.stdout.write(r.stdout ?? '');
  process.stderr.write(r.stderr ?? '');
  const ok = r.status === 0;
  const counted = count ? count(r) : null;
  if (counted) {
    passed += counted.passed;
    failed += counted.failed;
  } else if (ok) passed += 1;
  else failed += 1;
  const what = counted ? `${counted.passed} passed, ${counted.failed} failed` : ok ? 'ok' : 'FAILED';
  summary.push(`${name}: ${what}${ok ? '' : ` (exit ${r.status ?? r.signal ?? r.error?.message})`} in ${((Date.now() - started) / 1000).toFixed(1)}s`);
  return ok;
}

function cargoCounts(r) {
  let p = 0;
  let f = 0;
  for (const m of (r.stdout + r.stderr).matchAll(/test result: \w+\. (\d+) passed; (\d+) failed/g)) {
    p += Number(m[1]);
    f += Number(m[2]);
  }
  if (r.status !== 0 && f === 0) f = 1; // failed to build or crashed: count it
  return { passed: p, failed: f };
}

/** The closing "N passed, N failed" line of a run that prints one. */
function plainCounts(r) {
  const m = [...(r.stdout + r.stderr).matchAll(/^(\d+) passed, (\d+) failed$/gm)].at(-1);
  if (!m) return { passed: 0, failed: 1 };
  // A run that exits non-zero with no failure counted (it crashed after its line) is one.
  return { passed: Number(m[1]), failed: Number(m[2]) || (r.status === 0 ? 0 : 1) };
}

/** The jest suite on the Node at `node`, counted by its JSON report. */
function jest(name, node) {
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'corepool-jest-')), 'results.json');
  step(name, node, [require.resolve('jest/bin/jest'), '--json', `--outputFile=${out}`, ...jestArgs], () => {
    try {
      const j = JSON.parse(fs.readFileSync(out, 'utf8'));
      // A suite that fails to run has no test results: count it as a failure.
      const broken = j.testResults.filter((s) => s.status === 'failed' && s.assertionResults.length === 0);
      // Named again in the summary, so that the end of a long log says what failed.
      for (const suite of j.testResults) {
        const file = path.relative(root, suite.name);
        if (broken.includes(suite)) failures.push(`${name}: ${file}: ${messageStart(suite.message)}`);
        for (const t of suite.assertionResults) {
          if (t.status === 'failed') failures.push(`${name}: ${file} › ${t.fullName}: ${messageStart(t.failureMessages?.[0])}`);
        }
      }
      return { passed: j.numPassedTests, failed: j.numFailedTests + broken.length };
    } catch {
      return { passed: 0, failed: 1 };
    }
  });
}

step('cargo fmt', 'cargo', ['fmt', '--check']);
// eslint's exports map hides bin/; its package.json names the entry point.
const eslintPkg = require.resolve('eslint/package.json');
const eslintBin = path.join(path.dirname(eslintPkg), require(eslintPkg).bin.eslint);
step('eslint', process.execPath, [eslintBin, '--max-warnings=0', '.']);
step('cargo clippy', 'cargo', ['clippy', '--all-targets', '--', '-D', 'warnings']);
step('cargo test', 'cargo', ['test'], cargoCounts);
const built = step('build addon', process.execPath, [path.join('scripts', 'build.js')]);
if (built) {
  jest(`jest (Node ${process.versions.node})`, process.execPath);
  // The other runtimes, pinned in runtimes/package.json and installed by `npm ci --prefix
  // runtimes` into the checkout: the whole suite on each Node, a smoke run of the public API on
  // Bun and Deno. Under CI a runtime that is not installed fails; elsewhere it is named.
  for (const runtime of runtimes()) {
    if (!fs.existsSync(runtime.bin)) {
      const why = `${runtime.name} is not installed (npm ci --prefix runtimes)`;
      if (process.env.CI) {
        failed += 1;
        summary.push(`${runtime.name}: FAILED (${why})`);
      } else summary.push(`${runtime.name}: not run (${why})`);
      continue;
    }
    if (runtime.kind === 'node') jest(`jest (${runtime.name})`, runtime.bin);
    else step(`smoke (${runtime.name})`, runtime.bin, [...runtime.args, path.join('__test__', 'smoke', 'runtime.mjs')], plainCounts);
  }
}

console.log('\n=== summary');
for (const line of summary) console.log(line);
if (failures.length > 0) {
  console.log('failed:');
  for (const line of failures) console.log(`  ${line}`);
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
