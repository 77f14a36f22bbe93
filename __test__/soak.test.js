'use strict';
// The soak benchmark's own bookkeeping (bench/soak.js), at the moment it is easiest to get
// wrong: a caller worker_thread replaced just as the load stops. Its replacement becomes ready
// during the teardown, and must still be told to stop and have every call accounted for (it
// was once left running, its calls counted as never settled, which failed a CI run).
const path = require('node:path');
const fs = require('node:fs');
const { spawnSync } = require('node:child_process');

const SOAK = path.join(__dirname, '..', 'bench', 'soak.js');
const RESULTS = path.join(__dirname, '..', 'bench', 'results');

test('a caller replaced as the soak stops is stopped too, and every call is accounted for', () => {
  const before = fs.readdirSync(RESULTS).map((f) => [f, fs.statSync(path.join(RESULTS, f)).mtimeMs]);
  // 2 s of load, then a server and a caller replaced as it stops: the new ones are ready
  // only during the teardown.
  const r = spawnSync(process.execPath, [SOAK, '--seconds=2', '--replace-at-end', '--seed=1'], { encoding: 'utf8', timeout: 120_000 });
  const out = `${r.stdout}\n${r.stderr}`;
  expect(out).toMatch(/\[soak\] every call accounted for/);
  // The two first of each, and the late replacements, stopped like the others.
  expect(out).toMatch(/start caller +3 +3 /);
  expect(out).toMatch(/stop caller +2 +2 /);
  expect(out).toMatch(/start server +3 +3 /);
  expect(out).toMatch(/server exits +2 +2 /);
  expect(out).not.toMatch(/FAILURE/);
  expect(r.status).toBe(0);
  // A run aimed at one moment leaves the recorded results alone.
  const after = fs.readdirSync(RESULTS).map((f) => [f, fs.statSync(path.join(RESULTS, f)).mtimeMs]);
  expect(after).toEqual(before);
});
