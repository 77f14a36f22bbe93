// A multi-threaded Game of Life (the book's rules, on a torus): every generation is split into
// bands of rows, one `life` call per band on the native pool, all reading one SharedArrayBuffer
// grid and writing the next. Prints the live cells of each generation.
//
//   node examples/life.js [size=400] [generations=20]
'use strict';
const { Pool } = require('..');

async function main() {
  const size = Number(process.argv[2] ?? 400);
  const generations = Number(process.argv[3] ?? 20);
  const pool = new Pool();
  const sab = new SharedArrayBuffer(2 * size * size);
  let cells = new Uint8Array(sab, 0, size * size);
  let next = new Uint8Array(sab, size * size, size * size);
  let x = 2463534242;
  for (let i = 0; i < cells.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    cells[i] = (x >>> 0) % 4 === 0 ? 1 : 0;
  }
  const bands = Array.from({ length: pool.threads * 2 }, (_, i) => [
    Math.floor((i * size) / (pool.threads * 2)),
    Math.floor(((i + 1) * size) / (pool.threads * 2)),
  ]);
  const alive = (grid) => grid.reduce((n, c) => n + c, 0);
  console.log(`${size}×${size} grid, ${bands.length} bands on ${pool.threads} native threads`);
  console.log(`generation 0: ${alive(cells)} alive`);
  const started = performance.now();
  for (let g = 1; g <= generations; g++) {
    await Promise.all(bands.map(([rowStart, rowEnd]) => pool.exec('life', { cells, next, size, rowStart, rowEnd })));
    [cells, next] = [next, cells];
    console.log(`generation ${g}: ${alive(cells)} alive`);
  }
  const ms = performance.now() - started;
  console.log(`${generations} generations in ${ms.toFixed(1)} ms`);
  await pool.close();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
