'use strict';
// A fresh Node process for inputs that could take the process down (a crash, a hang, memory
// held): it must exit cleanly and print its outcome as JSON on its last line.
const path = require('node:path');
const { spawn } = require('node:child_process');

const root = path.join(__dirname, '..', '..');

/**
 * Runs `body` (an async function body, with `corepool`, `Pool`, `RpcError`, `C`, `out(value)` in
 * scope) in a fresh Node process; resolves with its exit status, signal, stderr and what it
 * passed to `out` (the last line of stdout, as JSON). A child still running after `timeoutMs`
 * (a hang guard) is killed.
 */
function child(body, { timeoutMs = 60_000, args = [] } = {}) {
  const code = `
    'use strict';
    const corepool = require(${JSON.stringify(root)});
    const { Pool, RpcError } = corepool;
    const C = RpcError.codes;
    const out = (v) => console.log(JSON.stringify(v));
    (async () => { ${body} })().catch((e) => { console.error('child failed:', e); process.exitCode = 99; });
  `;
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [...args, '-e', code], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.on('close', (status, signal) => {
      clearTimeout(timer);
      const last = stdout.trim().split('\n').pop();
      let result;
      try {
        result = JSON.parse(last);
      } catch {
        result = undefined;
      }
      resolve({ status, signal, stderr, stdout, result });
    });
  });
}

/** Expects a clean exit with a result, showing what the child said otherwise. */
function clean(r) {
  if (r.status !== 0 || r.result === undefined) {
    throw new Error(`child exited with ${r.status ?? r.signal}\nstdout: ${r.stdout.slice(-2000)}\nstderr: ${r.stderr.slice(-4000)}`);
  }
  return r.result;
}

module.exports = { child, clean };
