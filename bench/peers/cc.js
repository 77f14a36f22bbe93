'use strict';
// Builds a C peer (bench/peers/<name>.c) with `cc -O2 -pthread` into bench/peers/build/ (ignored
// by git). Returns { exe, version } or { error } when there is no C compiler or the build fails;
// benchmarks then skip that row with a note.
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const BUILD = path.join(__dirname, 'build');

function buildC(name) {
  const probe = spawnSync('cc', ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) return { error: 'no C compiler (cc) found' };
  fs.mkdirSync(BUILD, { recursive: true });
  const exe = path.join(BUILD, name);
  const r = spawnSync('cc', ['-O2', '-pthread', '-o', exe, path.join(__dirname, `${name}.c`)], { encoding: 'utf8' });
  if (r.status !== 0) return { error: `cc failed: ${r.stderr.trim()}` };
  return { exe, version: probe.stdout.split('\n')[0] };
}

module.exports = { buildC };
