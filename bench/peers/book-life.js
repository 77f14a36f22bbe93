'use strict';
// The book's Game of Life in JavaScript, written from its description: a `Grid` over one
// SharedArrayBuffer (this generation's cells, then the next one's), `getCell(x, y)` wrapping
// at the edges, and `iterate(minX, minY, maxX, maxY)` applying the rule cell by cell (alive
// next iff 3 live neighbours, or alive and 2) and swapping the two halves.
// The threaded version gives each worker_thread a band of x and runs generations in lockstep
// with Atomics: the coordinator sets each worker's flag to 1 and notifies it; the worker
// iterates its band, sets its flag back to 0 and notifies. The book paints every cell into a
// canvas; there is no canvas here, so painting is left out of both versions.
const { Worker, isMainThread, workerData } = require('node:worker_threads');

const NEIGHBORS = [
  [-1, -1], [-1, 0], [-1, 1],
  [0, -1], [0, 1],
  [1, -1], [1, 0], [1, 1],
];

class Grid {
  constructor(size, buffer) {
    const sizeSquared = size * size;
    this.size = size;
    this.cells = new Uint8Array(buffer, 0, sizeSquared);
    this.nextCells = new Uint8Array(buffer, sizeSquared, sizeSquared);
  }

  getCell(x, y) {
    const size = this.size;
    const sizeM1 = size - 1;
    x = x < 0 ? sizeM1 : x > sizeM1 ? 0 : x;
    y = y < 0 ? sizeM1 : y > sizeM1 ? 0 : y;
    return this.cells[size * x + y];
  }

  iterate(minX, minY, maxX, maxY) {
    const size = this.size;
    for (let x = minX; x < maxX; x++) {
      for (let y = minY; y < maxY; y++) {
        const cell = this.cells[size * x + y];
        let alive = 0;
        for (const [i, j] of NEIGHBORS) alive += this.getCell(x + i, y + j);
        this.nextCells[size * x + y] = alive === 3 || (cell && alive === 2) ? 1 : 0;
      }
    }
    const cells = this.nextCells;
    this.nextCells = this.cells;
    this.cells = cells;
  }
}

/**
 * Starts `threads` workers on `buffer` (2·size² cell bytes). `generation()` runs one generation
 * on all of them and returns when every band is done.
 */
function startWorkers(buffer, size, threads) {
  const sync = new Int32Array(new SharedArrayBuffer(4 * threads));
  const workers = [];
  for (let i = 0; i < threads; i++) {
    const minX = Math.floor((i * size) / threads);
    const maxX = Math.floor(((i + 1) * size) / threads);
    workers.push(new Worker(__filename, { workerData: { buffer, size, sync, index: i, minX, maxX } }));
  }
  return {
    generation() {
      for (let i = 0; i < threads; i++) {
        Atomics.store(sync, i, 1);
        Atomics.notify(sync, i);
      }
      for (let i = 0; i < threads; i++) {
        while (Atomics.load(sync, i) !== 0) Atomics.wait(sync, i, 1);
      }
    },
    close() {
      return Promise.all(workers.map((w) => w.terminate()));
    },
  };
}

if (!isMainThread && workerData?.sync) {
  const { buffer, size, sync, index, minX, maxX } = workerData;
  const grid = new Grid(size, buffer);
  for (;;) {
    Atomics.wait(sync, index, 0);
    grid.iterate(minX, 0, maxX, size);
    Atomics.store(sync, index, 0);
    Atomics.notify(sync, index);
  }
}

module.exports = { Grid, startWorkers };
