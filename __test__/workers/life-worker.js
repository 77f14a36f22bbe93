'use strict';
// A worker_thread that runs generations of its own grid on the pool, 50 band jobs in flight
// per generation, each generation in a fresh SharedArrayBuffer (so memory freed by terminated
// workers gets reused), and checks every generation against the JS reference. It reports
// `{ generation, mismatches }` after each one, until it is terminated.
const { workerData, parentPort } = require('node:worker_threads');
const path = require('node:path');
const { Pool } = require(path.join(__dirname, '..', '..'));
const { lifeStep, randomGrid, bands } = require('./life-grid.js');

const { n, seed, privatePool } = workerData;
const pool = privatePool ? new Pool({ threads: 1 }) : Pool.shared();
const JOBS = 50;

(async () => {
  let grid = randomGrid(n, seed);
  const expected = new Uint8Array(n * n);
  for (let generation = 1; ; generation++) {
    const sab = new SharedArrayBuffer(2 * n * n);
    const cells = new Uint8Array(sab, 0, n * n);
    const next = new Uint8Array(sab, n * n, n * n);
    cells.set(grid);
    next.fill(0xee);
    await Promise.all(bands(n, JOBS).map(([rowStart, rowEnd]) => pool.exec('life', { cells, next, size: n, rowStart, rowEnd })));
    lifeStep(grid, expected, n);
    let mismatches = 0;
    for (let i = 0; i < expected.length; i++) if (next[i] !== expected[i]) mismatches++;
    parentPort.postMessage({ generation, mismatches });
    grid = Uint8Array.from(expected);
  }
})();
