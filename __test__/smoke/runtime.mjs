// The public API on a runtime other than the Node the suite runs on (Bun, Deno): pool calls,
// JSON-RPC, render, a shared-memory command, locks across worker threads, a task-file pool,
// structured-clone values with a moved buffer, map and progress. Plain ESM with node:assert, so every runtime runs it as it is:
//   bun __test__/smoke/runtime.mjs
//   deno run --allow-all __test__/smoke/runtime.mjs
// Prints "ok - name" or "not ok - name: why" per check, then "N passed, N failed"; exits 1 on
// any failure.
import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';
import corepool from '../../index.js';

const { Pool, RpcError, Mutex } = corepool;
const fixture = (name) => new URL(`./${name}`, import.meta.url);
const checks = [];
const check = (name, fn) => checks.push({ name, fn });

check('exec, call and JSON-RPC on native threads', async () => {
  const pool = new Pool({ threads: 2 });
  try {
    assert.deepEqual(await pool.exec('echo', { a: [1, 'two', null] }), { a: [1, 'two', null] });
    assert.equal(await pool.exec('fibonacci', 90), '2880067194370816120');
    assert.deepEqual(await pool.request({ jsonrpc: '2.0', method: 'echo', params: [7], id: 1 }), { jsonrpc: '2.0', result: 7, id: 1 });
    assert.equal(await pool.handle('{"jsonrpc":"2.0","method":"nope","id":2}'), '{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found: \\"nope\\": check the name against pool.methods()"},"id":2}');
    const refused = await pool.call('sleep', [60_000], { timeout: 1 }).catch((e) => e);
    assert.ok(refused instanceof RpcError, String(refused));
    assert.equal(refused.code, RpcError.codes.Timeout);
  } finally {
    await pool.close();
  }
});

check('render to a string and to a Buffer', async () => {
  const pool = new Pool({ threads: 1 });
  try {
    const view = { me: 'Thomas', you: '<Katelyn>', items: [{ n: 1 }, { n: 2 }] };
    const template = '<em>{{me}} loves {{you}}</em>{{#items}}[{{n}}]{{/items}}';
    assert.equal(await pool.render(template, view), '<em>Thomas loves &lt;Katelyn&gt;</em>[1][2]');
    const buf = await pool.render(template, view, undefined, { output: 'buffer' });
    assert.equal(buf.toString(), '<em>Thomas loves &lt;Katelyn&gt;</em>[1][2]');
  } finally {
    await pool.close();
  }
});

check('a shared-memory command writes in place (life)', async () => {
  const pool = new Pool({ threads: 2 });
  try {
    // A blinker in a 5×5 grid turns from a row into a column.
    const size = 5;
    const sab = new SharedArrayBuffer(2 * size * size);
    const cells = new Uint8Array(sab, 0, size * size);
    const next = new Uint8Array(sab, size * size, size * size);
    for (const x of [1, 2, 3]) cells[2 * size + x] = 1;
    const bands = [
      [0, 3],
      [3, 5],
    ];
    const rows = await Promise.all(bands.map(([rowStart, rowEnd]) => pool.exec('life', { cells, next, size, rowStart, rowEnd })));
    assert.deepEqual(rows, [3, 2]);
    const live = [...next.keys()].filter((i) => next[i] === 1);
    assert.deepEqual(live, [1 * size + 2, 2 * size + 2, 3 * size + 2]);
  } finally {
    await pool.close();
  }
});

check('a Mutex excludes across worker threads', async () => {
  const sab = new SharedArrayBuffer(8);
  const words = new Int32Array(sab);
  const rounds = 2_000;
  const workers = [0, 1].map(() => new Worker(fixture('mutex-worker.mjs'), { workerData: { sab, rounds } }));
  await Promise.all(workers.map((w) => new Promise((resolve, reject) => w.once('message', resolve).once('error', reject))));
  assert.equal(Atomics.load(words, 1), 2 * rounds);
  const lock = new Mutex(words, 0);
  assert.equal(lock.tryLock(), true);
  lock.unlock();
});

check('a task-file pool runs the file’s functions, map, and progress', async () => {
  const pool = new Pool({ filename: fixture('tasks.mjs'), threads: 2 });
  try {
    await pool.ready();
    assert.equal(await pool.exec('double', 21), 42);
    assert.deepEqual(await pool.run({ x: 1 }), { task: { x: 1 }, kind: 'default' });
    const progress = [];
    assert.deepEqual(await pool.map('double', [1, 2, 3, 4], { onProgress: (done, total) => progress.push(`${done}/${total}`) }), [2, 4, 6, 8]);
    assert.deepEqual(progress, ['1/4', '2/4', '3/4', '4/4']);
    const steps = [];
    assert.equal(await pool.call('steps', [3], { onProgress: (v) => steps.push(v.step) }), 3);
    // Reports come in order; ones that come faster than the caller takes them may merge.
    assert.ok(steps.length > 0 && steps.every((s, i) => i === 0 || s > steps[i - 1]), String(steps));
    assert.equal(steps.at(-1), 3);
    const missing = await pool.exec('nope').catch((e) => e);
    assert.equal(missing.code, RpcError.codes.MethodNotFound);
  } finally {
    await pool.close();
  }
});

check('a task-file pool carries structured-clone values and moves a buffer', async () => {
  const pool = new Pool({ filename: fixture('tasks.mjs'), threads: 1 });
  try {
    for (let round = 0; round < 3; round++) {
      const bytes = new Uint8Array(64 * 1024).fill(round + 1);
      const sent = { when: new Date(round), tags: new Map([['a', new Set([1n])]]), big: 2n ** 70n, bytes };
      const back = await pool.call('values', [sent], { transfer: [bytes.buffer] });
      assert.equal(bytes.buffer.byteLength, 0, 'the moved buffer is detached on the sender');
      assert.ok(back.when instanceof Date && back.when.getTime() === round);
      assert.ok(back.tags instanceof Map && back.tags.get('a') instanceof Set && back.tags.get('a').has(1n));
      assert.equal(back.big, 2n ** 71n);
      assert.ok(back.bytes instanceof Uint8Array && back.bytes.length === 64 * 1024 && back.bytes.every((b) => b === round + 1));
      assert.equal(back.sum, 64 * 1024 * (round + 1));
    }
    const refused = await pool.call('values', [{ when: new Date(0), handler() {} }]).catch((e) => e);
    assert.ok(refused instanceof RpcError, String(refused));
    assert.equal(refused.name, 'DataCloneError');
    assert.equal(refused.data.path, 'params[0].handler');
  } finally {
    await pool.close();
  }
});

check('map over native commands', async () => {
  const pool = new Pool({ threads: 2 });
  try {
    const inputs = Array.from({ length: 1000 }, (_, i) => i);
    assert.deepEqual(await pool.map('echo', inputs), inputs);
  } finally {
    await pool.close();
  }
});

let passed = 0;
let failed = 0;
for (const { name, fn } of checks) {
  try {
    await fn();
    passed += 1;
    console.log(`ok - ${name}`);
  } catch (e) {
    failed += 1;
    console.log(`not ok - ${name}: ${e?.stack ?? e}`);
  }
}
console.log(`${passed} passed, ${failed} failed`);
process.exitCode = failed === 0 ? 0 : 1;
