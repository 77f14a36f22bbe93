'use strict';
// Settlements never hold the event loop: however fast results come back, timers and I/O get
// their turn. Node hands a threadsafe function's queued calls to the addon up to 1,000 at a
// time in one event-loop turn; a caller whose continuation makes the next call, which the pool
// answers at once, kept that going for the whole turn (a 5 ms interval fired twice in 2 s of
// rendering). src/bindings/channel/mod.rs bounds the time settlements may take in one turn.
const path = require('node:path');
const { Worker } = require('node:worker_threads');
const { Pool } = require('..');

let pool;
beforeAll(() => {
  pool = new Pool({ threads: 2 });
});
afterAll(() => pool.close());

/** Keeps this thread busy for `ms`, as a continuation that does real work would. */
function spin(ms) {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

/** Runs `callers` closed loops of `call` then `work` for `ms`; how often a 5 ms interval fired. */
async function ticksDuring(callers, ms, call, work) {
  let ticks = 0;
  const interval = setInterval(() => ticks++, 5);
  const deadline = performance.now() + ms;
  let calls = 0;
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (performance.now() < deadline) {
        await call();
        work();
        calls++;
      }
    }),
  );
  clearInterval(interval);
  return { ticks, calls };
}

test('a closed loop of calls with busy continuations leaves timers their turn', async () => {
  // 16 callers whose continuations take 1 ms each: a turn that holds one batch of them takes
  // ~16 ms, so the interval fires ~60 times in 1 s; held in one turn, it fired once.
  const { ticks, calls } = await ticksDuring(16, 1000, () => pool.exec('echo', 1), () => spin(1));
  expect(calls).toBeGreaterThan(100);
  expect(ticks).toBeGreaterThan(10);
});

test('renders of plain data in a closed loop leave timers their turn', async () => {
  const rows = Array.from({ length: 200 }, (_, i) => ({ id: i, name: `user ${i}`, tags: ['a', 'b'] }));
  const template = '{{#rows}}<tr><td>{{id}}</td><td>{{name}}</td><td>{{#tags}}{{.}}{{/tags}}</td></tr>{{/rows}}';
  const { ticks, calls } = await ticksDuring(64, 1000, () => pool.render(template, { rows }), () => {});
  expect(calls).toBeGreaterThan(100);
  expect(ticks).toBeGreaterThan(10); // held in one turn: once
});

test('I/O gets its turn too: a socket round trip completes while calls keep coming back', async () => {
  const net = require('node:net');
  const server = net.createServer((socket) => socket.pipe(socket));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  // Counted in calls, not ms: each call's continuation spins 1 ms, so a turn's settlements
  // take about one batch of the 16 callers' (src/bindings/channel.rs), and the round trip
  // takes a few turns. Held in one turn, it waited as long as the calls kept coming (17 s once,
  // when the test stopped them only after it): the load stops at LIMIT calls, so such a hold
  // fails here rather than hangs.
  const LIMIT = 100 * 16;
  let calls = 0;
  let stop = false;
  const load = Promise.all(
    Array.from({ length: 16 }, async () => {
      while (!stop) {
        await pool.exec('echo', 1);
        spin(1);
        if (++calls >= LIMIT) stop = true;
      }
    }),
  );
  const echoed = await new Promise((resolve, reject) => {
    const socket = net.connect(server.address().port, '127.0.0.1', () => socket.write('ping'));
    socket.once('data', (d) => {
      socket.destroy();
      resolve(d.toString());
    });
    socket.once('error', reject);
  });
  const callsDuring = calls;
  stop = true;
  await load;
  server.close();
  expect(echoed).toBe('ping');
  expect(callsDuring).toBeLessThan(LIMIT);
});

test('worker_threads terminated while their settlements wait for the next turn: the pool serves on', async () => {
  const shared = Pool.shared();
  for (let i = 0; i < 20; i++) {
    const worker = new Worker(path.join(__dirname, 'fixtures', 'busy-continuations-worker.js'));
    await new Promise((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    await new Promise((resolve) => setTimeout(resolve, i % 5));
    expect(await worker.terminate()).toBe(1);
  }
  expect(await shared.exec('echo', 'still here')).toBe('still here');
  expect(await pool.exec('echo', 'and here')).toBe('and here');
}, 60000);
