'use strict';
// Property test of moved ArrayBuffers (issue 30 §2): random sequences of moves across two
// task-file pools — a buffer fetched from a task, ping-ponged to one pool or the other, moved
// with a view over it, moved to a call that is then aborted, moved to two pools at once, moved
// after ArrayBuffer.prototype.transfer() (where the runtime has it), a pool closed (or force
// closed) with moves in flight and made again, collections in between — run in a child process
// (a crash is a failure, not a lost jest worker) and checked against a model of every held
// buffer's bytes: each move detaches the sender's buffer, each buffer received is whole and
// holds what the model says, and the process exits cleanly.
//
// COREPOOL_MODEL_RUNS=<n> sets the number of runs (default 6), COREPOOL_MODEL_SEED=<seed>
// replays one; a failure prints the seed.
const path = require('node:path');
const { child } = require('./helpers/child.js');

const RUNS = Number(process.env.COREPOOL_MODEL_RUNS ?? 6);
if (!(Number.isInteger(RUNS) && RUNS > 0)) throw new RangeError(`COREPOOL_MODEL_RUNS must be a whole number > 0, got ${process.env.COREPOOL_MODEL_RUNS}`);
const SEED = process.env.COREPOOL_MODEL_SEED === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(process.env.COREPOOL_MODEL_SEED);
const VALUES = path.join(__dirname, 'fixtures', 'tasks', 'values.js');

const body = `
  const fc = require('fast-check');
  const util = require('node:util');
  const VALUES = ${JSON.stringify(VALUES)};
  const pools = [new Pool({ filename: VALUES, threads: 1 }), new Pool({ filename: VALUES, threads: 2 })];
  const op = fc.oneof(
    fc.record({ kind: fc.constant('fetch'), n: fc.integer({ min: 0, max: 70_000 }) }),
    fc.record({ kind: fc.constantFrom('bump', 'view', 'abort', 'both', 'transfer'), i: fc.nat(), to: fc.nat(1) }),
    fc.record({ kind: fc.constant('close'), to: fc.nat(1), force: fc.boolean() }),
    fc.record({ kind: fc.constant('gc') }),
  );
  const fail = (why) => { throw new Error(why); };
  const detached = (u8) => u8.buffer.byteLength === 0 || fail('the sender kept a moved buffer');
  const whole = (u8, n, byte) => (u8.byteLength === n && u8.every((b) => b === byte)) || fail(\`a buffer of \${n} bytes of \${byte} arrived as \${u8.byteLength} bytes, first \${u8[0]}\`);
  const run = async (ops) => {
    // The model: every buffer held here, with its length and the byte it is filled with.
    const held = [];
    const pick = (i) => (held.length === 0 ? undefined : held.splice(i % held.length, 1)[0]);
    for (const o of ops) {
      const pool = pools[o.to ?? 0];
      if (o.kind === 'fetch') {
        const u8 = await pool.exec('moveBack', o.n);
        whole(u8, o.n, 9);
        held.push({ u8, n: o.n, byte: 9 });
      } else if (o.kind === 'gc') {
        globalThis.gc();
        await new Promise((resolve) => setImmediate(resolve));
      } else if (o.kind === 'close') {
        // Moves in flight while the pool closes: each settles, with its buffer or an error.
        const moving = held.splice(0, 2).map((h) => pool.call('bump', [h.u8], { transfer: [h.u8.buffer] }).then((u8) => ({ u8, n: h.n, byte: (h.byte + 1) & 255 }), () => null));
        const closing = o.force ? pool.close({ force: true }) : pool.close();
        for (const got of await Promise.all(moving)) {
          // close() lets the calls accepted before it finish; close({ force }) may fail them.
          if (got === null) { if (!o.force) fail('a call accepted before close() failed'); continue; }
          whole(got.u8, got.n, got.byte);
          held.push(got);
        }
        await closing.catch(() => {});
        pools[o.to] = new Pool({ filename: VALUES, threads: o.to + 1 });
      } else {
        const h = pick(o.i);
        if (h === undefined) continue;
        let { u8 } = h;
        if (o.kind === 'transfer' && typeof u8.buffer.transfer === 'function') {
          u8 = new Uint8Array(u8.buffer.transfer());
          detached(h.u8);
        }
        if (o.kind === 'bump' || o.kind === 'transfer') {
          const back = await pool.call('bump', [u8], { transfer: [u8.buffer] });
          detached(u8);
          whole(back, h.n, (h.byte + 1) & 255);
          held.push({ u8: back, n: h.n, byte: (h.byte + 1) & 255 });
        } else if (o.kind === 'view') {
          const view = new Uint8Array(u8.buffer, Math.min(3, h.n));
          const seen = await pool.call('overOne', [view, u8], { transfer: [u8.buffer] });
          detached(u8);
          (view.byteLength === 0) || fail('a view stayed attached');
          (seen.same && seen.length === h.n && seen.sum === h.n * h.byte) || fail(\`a buffer and a view moved arrived as \${JSON.stringify(seen)}\`);
        } else if (o.kind === 'abort') {
          const ac = new AbortController();
          const call = pool.call('sumLater', [5, u8], { transfer: [u8.buffer], signal: ac.signal });
          detached(u8);
          ac.abort();
          const r = await call.then((sum) => sum, (e) => e.code);
          (r === C.Aborted || r === h.n * h.byte) || fail(\`an aborted call settled with \${r}\`);
        } else if (o.kind === 'both') {
          const other = pools[1 - o.to];
          const first = pool.call('sumLater', [1, u8], { transfer: [u8.buffer] });
          const second = other.call('sumLater', [1, u8], { transfer: [u8.buffer] }).then(() => 'moved twice', (e) => e.name);
          const [sum, name] = await Promise.all([first, second]);
          (sum === h.n * h.byte && name === 'DataCloneError') || fail(\`moved to two pools: \${sum}, \${name}\`);
        }
      }
      for (const k of held) whole(k.u8, k.n, k.byte);
    }
  };
  try {
    await fc.assert(fc.asyncProperty(fc.array(op, { maxLength: 30 }), run), { numRuns: ${RUNS}, seed: ${SEED} });
    out('held');
  } catch (e) {
    out(String(e.message).slice(0, 3000));
  } finally {
    await Promise.all(pools.map((p) => p.close()));
  }
`;

test(`random moves, ping-pongs, aborts and closes across two pools keep every buffer whole (seed ${SEED})`, async () => {
  const r = await child(body, { args: ['--expose-gc'], timeoutMs: 240_000 });
  if (r.result !== 'held') console.error(`moved-buffers model, seed ${SEED}:`, r.result ?? r.stderr.slice(-3000), r.status ?? r.signal);
  expect([r.status, r.signal, r.result]).toEqual([0, null, 'held']);
}, 250_000);
