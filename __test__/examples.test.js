'use strict';
// Every shared-memory example runs as `node examples/<name>.js` and says what it should.
const path = require('node:path');
const { execFile } = require('node:child_process');

jest.setTimeout(60_000);

function example(name, args = []) {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [path.join(__dirname, '..', 'examples', `${name}.js`), ...args], { timeout: 50_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${name} failed (${error.code ?? error.signal}):\n${stdout}${stderr}`));
      else resolve(stdout);
    });
  });
}

test('thread-product: four threads multiply under the Mutex and lose no update', async () => {
  const out = await example('thread-product');
  const product = out.match(/product mod \d+: (\d+)/)[1];
  const expected = out.match(/expected: +(\d+)/)[1];
  expect(product).toBe(expected);
  expect(out).toMatch('no update was lost');
});

test('ring-buffer: producers and consumers move every byte once', async () => {
  const out = await example('ring-buffer');
  const [, moved, total, checksum, expected] = out.match(/moved (\d+) of (\d+) bytes .* checksum (\d+) \(expected (\d+)\)/);
  expect(moved).toBe(total);
  expect(checksum).toBe(expected);
  expect(out).toMatch('every byte arrived once');
});

test('life: prints the live cells of every generation', async () => {
  const out = await example('life', ['120', '12']);
  const counts = [...out.matchAll(/^generation (\d+): (\d+) alive$/gm)].map((m) => [Number(m[1]), Number(m[2])]);
  expect(counts.map(([g]) => g)).toEqual(Array.from({ length: 13 }, (_, g) => g));
  for (const [, alive] of counts) expect(alive).toBeGreaterThan(0);
  expect(new Set(counts.map(([, alive]) => alive)).size).toBeGreaterThan(1);
});

test('guessing-game: the worker finds the secret by bisection, taking turns with the main thread', async () => {
  const out = await example('guessing-game', ['777']);
  const guesses = [...out.matchAll(/^guess (\d+): (\d+) → (higher|lower|right!)$/gm)];
  expect(guesses.length).toBeGreaterThan(0);
  expect(guesses.length).toBeLessThanOrEqual(10);
  expect(guesses.at(-1)[2]).toBe('777');
  expect(guesses.at(-1)[3]).toBe('right!');
  expect(out).toMatch(`guessed 777 in ${guesses.length} tries`);
  for (const g of guesses.slice(0, -1)) expect(g[3]).toBe(Number(g[2]) < 777 ? 'higher' : 'lower');
});

test('invoices: eight orders on four workers, in order, the bad one failed, progress after each', async () => {
  const out = await example('invoices');
  expect(out.match(/^\d+ of 8 done$/gm)).toEqual(Array.from({ length: 8 }, (_, i) => `${i + 1} of 8 done`));
  const lines = out.match(/^order \d+: .*$/gm);
  expect(lines).toEqual([
    'order 1001: 60.00 €',
    'order 1002: 150.00 €',
    'order 1003: 96.00 €',
    'order 1004: failed: invalid amount',
    'order 1005: 288.00 €',
    'order 1006: 42.00 €',
    'order 1007: 108.00 €',
    'order 1008: 18.00 €',
  ]);
  expect(out).toMatch(/^total 762\.00 €, 1 failed$/m);
});

test('invoices: an invoice over 1 s fails on its own; the others are invoiced', async () => {
  const out = await example('invoices', ['--slow', '1006']);
  expect(out).toMatch(/^order 1006: failed: .*(timeout|timed out)/m);
  expect(out).toMatch(/^order 1007: 108\.00 €$/m);
  expect(out).toMatch(/^total 720\.00 €, 2 failed$/m);
  expect(out.match(/^\d+ of 8 done$/gm)).toHaveLength(8);
});

test('npm start (demo): the same task file on corepool and Piscina, a command against JS, renders, serves, says where next', async () => {
  const out = await example('demo', ['--draws', '4000000']);
  // Every ratio names both sides (issue #34): the task file's on both pools, for each task …
  for (const task of ['tiny task', 'moderate task']) {
    const [, ratio] = out.match(new RegExp(`^ {3}${task} .*corepool \\S+/s, Piscina \\S+/s: corepool/Piscina (\\d+\\.\\d+)×$`, 'm'));
    expect(Number(ratio)).toBeGreaterThan(0);
  }
  // … and the Rust command against the JavaScript miner, said to be that and not pool against pool.
  const [, tried, coins] = out.match(/^ {3}100% {2}(\S+) tried {2}(\d+) coins/m);
  expect(tried).toBe('4.00M');
  expect(Number(coins)).toBeGreaterThan(0);
  expect(out).toMatch(/^ {3}Rust command\/JavaScript miner \d+×: native code against JavaScript, not one pool against another$/m);
  expect(out).not.toMatch(/corepool is \d+× faster/);
  expect(out).toMatch(/<h1>Happycoins &amp; friends<\/h1><ul><li>\d+<\/li>/);
  expect(out).toMatch(new RegExp(`Hello, Katelyn: ${coins} coins mined today\\.`));
  expect(out).toMatch(/^Next: README\.md/m);
  expect(out.split('\n').length).toBeLessThan(25); // one screenful
});

const { natsServerPath } = require('./helpers/nats/server.js');
const withNats = natsServerPath() === null ? test.skip : test;

withNats('cluster: two host processes mine Happycoins over NATS, by request/reply and as durable jobs', async () => {
  const out = await new Promise((resolve, reject) => {
    const env = { ...process.env, PATH: `${path.dirname(natsServerPath())}${path.delimiter}${process.env.PATH}`, NATS_URL: 'nats://127.0.0.1:1' };
    execFile(process.execPath, [path.join(__dirname, '..', 'examples', 'cluster.js'), '6'], { timeout: 50_000, env }, (error, stdout, stderr) => {
      if (error) reject(new Error(`cluster failed (${error.code ?? error.signal}):\n${stdout}${stderr}`));
      else resolve(stdout);
    });
  });
  expect(out).toMatch(/^started nats-server on port \d+$/m);
  expect(out.match(/^hosts: (.*)$/m)[1].split(', ')).toHaveLength(2);
  const batches = [...out.matchAll(/^ {2}batch +(\d+): +(\d+) coins, mined on (host-a|host-b)$/gm)];
  expect(batches.map((b) => Number(b[1])).sort((x, y) => x - y)).toEqual([0, 1, 2, 3, 4, 5]);
  const total = batches.reduce((n, b) => n + Number(b[2]), 0);
  expect(out).toMatch(new RegExp(`^ {2}${total} coins; batches per host: `, 'm'));
  expect(out).toMatch(new RegExp(`^ {2}${total} coins \\(the same\\); jobs per host: host-`, 'm'));
});

withNats('observe: one request crosses a worker thread and a NATS host, and its trace tree shows both hops', async () => {
  const out = await new Promise((resolve, reject) => {
    const env = { ...process.env, PATH: `${path.dirname(natsServerPath())}${path.delimiter}${process.env.PATH}`, NATS_URL: 'nats://127.0.0.1:1' };
    execFile(process.execPath, [path.join(__dirname, '..', 'examples', 'observe.js')], { timeout: 50_000, env }, (error, stdout, stderr) => {
      if (error) reject(new Error(`observe failed (${error.code ?? error.signal}):\n${stdout}${stderr}`));
      else resolve(stdout);
    });
  });
  const [, here, there] = out.match(/^GET \/quote\?n=200000 → \{"here":([\d.]+),"there":([\d.]+)\}$/m);
  expect(here).toBe(there);
  // The tree: the request's span; under it, the CLIENT span of each call (local, and over NATS);
  // each quote under corepool's SERVER span on its worker thread; the NATS call through the
  // host's SERVER span and its pool's CLIENT call. Each line is a child of its parent by id.
  const lines = out.slice(out.indexOf('\ntrace ')).split('\n').filter((l) => / span [0-9a-f]{16}/.test(l));
  const spans = lines.map((l) => {
    const m = l.match(/^( +)(.+?) \[thread (\d+), [\d.]+ ms\] span ([0-9a-f]{16})(?: parent ([0-9a-f]{16}))?$/);
    return { depth: m[1].length / 2, name: m[2], thread: Number(m[3]), id: m[4], parent: m[5] ?? null };
  });
  const byId = new Map(spans.map((s) => [s.id, s]));
  /** The names from span `s` up to the root, each its parent's child, one level apart. */
  const up = (s) => {
    const names = [];
    for (let at = s; at !== undefined; at = byId.get(at.parent)) {
      names.push(`${at.name}${at.thread === 0 ? '' : ' @worker'}`);
      if (at.parent !== null) expect(byId.get(at.parent).depth).toBe(at.depth - 1);
    }
    return names;
  };
  const root = spans.find((s) => s.name === 'GET /quote (SERVER)');
  const quotes = spans.filter((s) => s.name.startsWith('quote on thread '));
  expect(spans).toHaveLength(9);
  expect(root).toMatchObject({ depth: 1, parent: null, thread: 0 });
  expect(quotes.map((q) => up(q).map((n) => n.replace(/^quote on thread \d+/, 'quote'))).sort()).toEqual(
    [
      ['quote @worker', 'corepool quote (SERVER) @worker', 'corepool quote (CLIENT)', 'GET /quote (SERVER)'],
      ['quote @worker', 'corepool quote (SERVER) @worker', 'corepool handle (CLIENT)', 'corepool handle (SERVER)', 'corepool quote (CLIENT)', 'GET /quote (SERVER)'],
    ].sort(),
  );
  for (const q of quotes) expect(q.thread).not.toBe(0);
  expect(out).toMatch(/^ {2}corepool_calls_total\{pool="local",kind="exec",method="quote",outcome="ok"\} 1$/m);
  expect(out).toMatch(/^ {2}corepool_calls_total\{pool="remote",kind="exec",method="quote",outcome="ok"\} 1$/m);
});
