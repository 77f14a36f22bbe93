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
  // 3 s of load; the first replacement starts 50 ms before the end, so the new caller is ready
  // only after the load has stopped.
  const r = spawnSync(process.execPath, [SOAK, '--seconds=3', '--replace-after=2950', '--seed=1'], { encoding: 'utf8', timeout: 120_000 });
  const out = `${r.stdout}\n${r.stderr}`;
  expect(out).toMatch(/\[soak\] every call accounted for/);
  expect(out).toMatch(/start caller +3 +3 /); // the two first and the late replacement
  expect(out).not.toMatch(/FAILURE/);
  expect(r.status).toBe(0);
  // A run aimed at one moment leaves the recorded results alone.
  const after = fs.readdirSync(RESULTS).map((f) => [f, fs.statSync(path.join(RESULTS, f)).mtimeMs]);
  expect(after).toEqual(before);
});
