'use strict';
// Progress from inside a long call: native commands report through their Context (happycoin
// reports attempts done), JavaScript handlers through ctx.progress(value); the caller listens
// with call(…, { onProgress }).
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { Pool, RpcError } = require('..');

const C = RpcError.codes;

async function outcome(promise) {
  try {
    return { value: await promise };
  } catch (e) {
    return { code: e.code, message: e.message };
  }
}

describe('progress of a native command', () => {
  const pool = new Pool({ threads: 2 });
  afterAll(() => pool.close());

  test('happycoin reports attempts done, rising, before its result; the result is the same as without a listener', async () => {
    const attempts = 3_000_000;
    const reports = [];
    let settled = false;
    const result = await pool.call('happycoin', [{ attempts, seed: 7 }], {
      onProgress: (p) => reports.push({ ...p, settled }),
    });
    settled = true;
    expect(reports.length).toBeGreaterThan(0);
    expect(reports.every((r) => r.attempts === attempts && !r.settled)).toBe(true);
    for (let i = 1; i < reports.length; i++) {
      expect(reports[i].done).toBeGreaterThan(reports[i - 1].done);
      expect(reports[i].coins).toBeGreaterThanOrEqual(reports[i - 1].coins);
    }
    expect(reports.at(-1).done).toBeLessThanOrEqual(attempts);
    expect(reports.at(-1).coins).toBeLessThanOrEqual(result.count);
    expect(await pool.call('happycoin', [{ attempts, seed: 7 }])).toEqual(result);
  });

  test('commands that do not report simply settle; bad listeners are refused', async () => {
    let heard = 0;
    expect(await pool.call('echo', ['x'], { onProgress: () => heard++ })).toBe('x');
    expect(heard).toBe(0);
    for (const onProgress of [42, 'f', null, {}]) {
      const r = await outcome(pool.call('echo', [1], { onProgress }));
      expect(r).toEqual({ code: C.InvalidRequest, message: expect.stringMatching(/options\.onProgress must be a function/) });
    }
  });

  test('many calls at once: each hears only its own progress', async () => {
    const seeds = Array.from({ length: 24 }, (_, i) => i);
    const heard = seeds.map(() => []);
    const results = await Promise.all(
      seeds.map((seed) => pool.call('happycoin', [{ attempts: 400_000 + seed * 1000, seed }], { onProgress: (p) => heard[seed].push(p.attempts) })),
    );
    for (const seed of seeds) {
      expect(heard[seed].length).toBeGreaterThan(0);
      expect(new Set(heard[seed])).toEqual(new Set([400_000 + seed * 1000]));
      expect(results[seed].count).toBeGreaterThanOrEqual(0);
    }
  });

  test('a listener that throws does not change the outcome: its error is reported as uncaught', () => {
    const code = `const { Pool } = require(${JSON.stringify(path.join(__dirname, '..'))});
      process.on('uncaughtException', (e) => console.log('uncaught:', e.message));
      const pool = new Pool({ threads: 1 });
      pool.call('happycoin', [{ attempts: 500000, seed: 1 }], { onProgress: () => { throw new Error('listener broke'); } })
        .then((r) => console.log('resolved:', typeof r.count), (e) => console.log('rejected:', e.message))
        .finally(() => pool.close());`;
    const r = spawnSync(process.execPath, ['-e', code], { encoding: 'utf8', timeout: 30_000 });
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/uncaught: listener broke/);
    expect(r.stdout).toMatch(/resolved: number/);
  });
});

describe('progress of a JavaScript handler', () => {
  test('ctx.progress reaches a listening caller in order, before the result; nothing when nobody listens', async () => {
    const pool = new Pool({ threads: 1 });
    let reportsWithoutListener = 0;
    pool.serve({
      count: async (n, ctx) => {
        for (let i = 1; i <= n; i++) {
          await new Promise((resolve) => setImmediate(resolve));
          ctx.progress(i);
        }
        return n;
      },
      quiet: (ctx) => {
        ctx.progress('nobody hears this');
        reportsWithoutListener++;
        return 'done';
      },
    });
    const heard = [];
    expect(await pool.call('count', [20], { onProgress: (v) => heard.push(v) })).toBe(20);
    // Reports faster than the listener's microtasks may merge, but order is kept and the last
    // report made before the handler returned is always heard.
    expect(heard.at(-1)).toBe(20);
    expect([...heard].sort((a, b) => a - b)).toEqual(heard);
    expect(await pool.call('quiet')).toBe('done');
    expect(reportsWithoutListener).toBe(1);
    await pool.close();
  });

  test('a report after the call settled is dropped; a report that cannot be sent is a TypeError in the handler', async () => {
    const pool = new Pool({ threads: 1 });
    let late;
    pool.serve({
      leaves: (ctx) => {
        late = ctx;
        return 'left';
      },
      sendsMemory: (ctx) => ctx.progress(new Int32Array(new SharedArrayBuffer(8))),
      sendsFunction: (ctx) => ctx.progress({ f() {} }),
    });
    const heard = [];
    expect(await pool.call('leaves', [], { onProgress: (v) => heard.push(v) })).toBe('left');
    late.progress('too late');
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(heard).toEqual([]);
    const memory = await outcome(pool.call('sendsMemory', [], { onProgress: () => {} }));
    expect(memory).toEqual({ code: C.CommandFailed, message: expect.stringMatching(/progress value cannot hold a typed array over a SharedArrayBuffer/) });
    const fn = await outcome(pool.call('sendsFunction', [], { onProgress: () => {} }));
    expect(fn).toEqual({ code: C.CommandFailed, message: expect.stringMatching(/progress.*function/) });
    await pool.close();
  });

  test('a task file’s function reports through the context, with run(task, { name, onProgress })', async () => {
    const pool = new Pool({ filename: path.join(__dirname, 'fixtures', 'tasks', 'basic.js'), threads: 2 });
    const heard = [];
    expect(await pool.run(5, { name: 'steps', onProgress: (p) => heard.push(p) })).toBe(5);
    expect(heard.at(-1)).toEqual({ step: 5, of: 5 });
    expect(heard.every((p, i) => i === 0 || p.step > heard[i - 1].step)).toBe(true);
    await pool.close();
  });
});
