'use strict';
// Game of Life generations per second on a 1000×1000 grid: corepool (one `life` call per band
// of rows, all on the native pool) vs the book's Grid on one JS thread vs the book's
// worker_threads version (a band per worker, generations in lockstep with Atomics).
// Every contestant starts from the same grid; after the run their grids must be identical.
//
//   node bench/life.js [--quick]
const os = require('node:os');
const { Suite } = require('./harness');
const { Pool } = require('..');
const { Grid, startWorkers } = require('./peers/book-life.js');

const SIZE = 1000;
const THREADS = os.availableParallelism();

function seeded(cells) {
  let x = 88172645;
  for (let i = 0; i < cells.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    cells[i] = (x >>> 0) % 3 === 0 ? 1 : 0;
  }
}

/** A fresh grid buffer: cells then next cells, the layout both sides use. */
function buffer() {
  const sab = new SharedArrayBuffer(2 * SIZE * SIZE);
  seeded(new Uint8Array(sab, 0, SIZE * SIZE));
  return sab;
}

function rate(generations, ms) {
  return (generations / ms) * 1000;
}

async function main() {
  const suite = new Suite('life', { runs: 5 });
  suite.note(`${SIZE}×${SIZE} cells, ${THREADS} threads for the threaded contestants`);

  // corepool: 2 bands per thread, so a slow band does not hold a generation back.
  const pool = new Pool({ threads: THREADS });
  const bandCount = 2 * THREADS;
  const bands = Array.from({ length: bandCount }, (_, i) => [Math.floor((i * SIZE) / bandCount), Math.floor(((i + 1) * SIZE) / bandCount)]);
  const corepoolGenerations = suite.quick ? 50 : 200;
  let corepoolGrid;
  await suite.measure('corepool', 'generations/s', async () => {
    const sab = buffer();
    let cells = new Uint8Array(sab, 0, SIZE * SIZE);
    let next = new Uint8Array(sab, SIZE * SIZE, SIZE * SIZE);
    const t = performance.now();
    for (let g = 0; g < corepoolGenerations; g++) {
      await Promise.all(bands.map(([rowStart, rowEnd]) => pool.exec('life', { cells, next, size: SIZE, rowStart, rowEnd })));
      [cells, next] = [next, cells];
    }
    const r = rate(corepoolGenerations, performance.now() - t);
    corepoolGrid = cells;
    return r;
  });

  // The JS contestants are slow: fewer generations, and the check below compares like with like.
  const jsGenerations = suite.quick ? 4 : 10;
  let mainGrid;
  await suite.measure('js-main', 'generations/s', async () => {
    const grid = new Grid(SIZE, buffer());
    const t = performance.now();
    for (let g = 0; g < jsGenerations; g++) grid.iterate(0, 0, SIZE, SIZE);
    mainGrid = grid.cells;
    return rate(jsGenerations, performance.now() - t);
  });

  let workersGrid;
  await suite.measure('js-workers', 'generations/s', async () => {
    const sab = buffer();
    const workers = startWorkers(sab, SIZE, THREADS);
    workers.generation(); // the workers are up and warm
    const t = performance.now();
    for (let g = 1; g < jsGenerations; g++) workers.generation();
    const r = rate(jsGenerations - 1, performance.now() - t);
    await workers.close();
    workersGrid = new Uint8Array(sab, jsGenerations % 2 ? SIZE * SIZE : 0, SIZE * SIZE);
    return r;
  });

  // Same start, same rule: after jsGenerations steps every contestant holds the same grid.
  const check = buffer();
  let cells = new Uint8Array(check, 0, SIZE * SIZE);
  let next = new Uint8Array(check, SIZE * SIZE, SIZE * SIZE);
  for (let g = 0; g < jsGenerations; g++) {
    await Promise.all(bands.map(([rowStart, rowEnd]) => pool.exec('life', { cells, next, size: SIZE, rowStart, rowEnd })));
    [cells, next] = [next, cells];
  }
  const same = Buffer.compare(cells, mainGrid) === 0 && Buffer.compare(cells, workersGrid) === 0;
  if (!same) throw new Error('the contestants disagree on the grid: the comparison is void');
  suite.note(`after ${jsGenerations} generations all three grids are identical (${cells.reduce((s, c) => s + c, 0)} live cells)`);
  suite.note(`corepool ran ${corepoolGenerations} generations per run, the JS versions ${jsGenerations}; ${corepoolGrid.length} cells each`);

  suite.ratio('corepool vs js-workers', 'corepool', 'js-workers', 5);
  suite.ratio('corepool vs js-main', 'corepool', 'js-main');
  suite.ratio('js-workers vs js-main', 'js-workers', 'js-main');
  suite.save();
  await pool.close();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
