'use strict';
// The Game of Life as the book states it, one JS thread: the reference the native `life`
// command is checked against. A cell is alive when non-zero; the grid wraps like a torus.

function lifeStep(cells, next, n) {
  for (let y = 0; y < n; y++) {
    const up = ((y + n - 1) % n) * n;
    const mid = y * n;
    const down = ((y + 1) % n) * n;
    for (let x = 0; x < n; x++) {
      const l = (x + n - 1) % n;
      const r = (x + 1) % n;
      const count =
        (cells[up + l] !== 0) + (cells[up + x] !== 0) + (cells[up + r] !== 0) +
        (cells[mid + l] !== 0) + (cells[mid + r] !== 0) +
        (cells[down + l] !== 0) + (cells[down + x] !== 0) + (cells[down + r] !== 0);
      next[mid + x] = count === 3 || (count === 2 && cells[mid + x] !== 0) ? 1 : 0;
    }
  }
}

/** A reproducible random grid, about a third alive. */
function randomGrid(n, seed) {
  let x = seed | 0 || 1;
  const cells = new Uint8Array(n * n);
  for (let i = 0; i < cells.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    cells[i] = (x >>> 0) % 3 === 0 ? 1 : 0;
  }
  return cells;
}

/** `count` bands of rows covering 0..n, as even as possible. */
function bands(n, count) {
  return Array.from({ length: count }, (_, i) => [Math.floor((i * n) / count), Math.floor(((i + 1) * n) / count)]);
}

module.exports = { lifeStep, randomGrid, bands };
