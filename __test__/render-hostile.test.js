'use strict';
// A hostile review of pool.render's newer features (functions and lambdas in views, config,
// data as JSON text, Buffer output, the view engines): each test pins a case that once broke,
// against mustache.js 4.2.0 where it has an answer.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const fc = require('fast-check');
const Mustache = require('mustache');
const { Pool, RpcError } = require('..');
const { viaMustache, viaPool, agree, withoutPlace } = require('./helpers/render-cases.js');
const expressEngine = require('corepool/express');

let pool;
beforeAll(() => {
  pool = new Pool({ threads: 2 });
});
afterAll(() => pool.close());

test("data: 'json' with an escape function: escape gets the view's own values, not the call's config", async () => {
  const text = '{"a":{"x":1},"b":[1,{"c":2}],"s":"<s>"}';
  const escape = (v) => `(${JSON.stringify(v)})`;
  const template = '{{a}}|{{b}}|{{b.1}}|{{s}}|{{#b}}{{c}}{{/b}}';
  const want = Mustache.render(template, JSON.parse(text), {}, { escape });
  expect(await pool.render(template, text, {}, { data: 'json', escape })).toBe(want);
  // With partials the call holds one more object of its own before the config.
  expect(await pool.render('{{>p}}', text, { p: template }, { data: 'json', escape })).toBe(want);
  // Each read is a new object, as JSON.parse of the text would give.
  const seen = [];
  await pool.render('{{a}}{{a}}', text, {}, { data: 'json', escape: (v) => seen.push(v) && '' });
  expect(seen).toEqual([{ x: 1 }, { x: 1 }]);
});

test("data: 'json' with an escape function renders as mustache.js renders JSON.parse(text), for any JSON (property test)", async () => {
  const escape = (v) => `(${JSON.stringify(v) ?? typeof v})`;
  await fc.assert(
    fc.asyncProperty(fc.dictionary(fc.stringMatching(/^[a-z]{1,3}$/), fc.jsonValue({ maxDepth: 4 }), { maxKeys: 5 }), async (view) => {
      const text = JSON.stringify(view);
      const keys = Object.keys(view);
      const template = keys.map((k) => `{{${k}}}|{{{${k}}}}|{{#${k}}}[{{.}}]{{/${k}}}|{{^${k}}}no{{/${k}}}`).join(';');
      Mustache.clearCache();
      const theirs = viaMustache({ template, data: JSON.parse(text), config: { escape } });
      return agree(theirs, await viaPool(pool, { template, data: text, partials: { p: 'x' }, config: { data: 'json', escape } }));
    }),
    { numRuns: 1000 },
  );
});

test('tags made of whitespace close a tag as mustache.js does ([" ", " "], ["\\n", "\\n"])', async () => {
  const view = { a: 'A<', b: [1, 2] };
  for (const tags of [[' ', ' '], ['\n', '\n'], ['! ', ' '], ['<%', ' %>']]) {
    const [open, close] = tags;
    const template = `${open}a${close} ${open}#b${close}${open}.${close}${open}/b${close} x ${open}{a}${close}`;
    const c = { template, data: view, partials: {}, config: tags };
    Mustache.clearCache();
    const theirs = viaMustache(c);
    const ours = await viaPool(pool, c);
    if (ours.error !== undefined) ours.error = withoutPlace(ours.error); // mustache.js's words
    expect(ours).toEqual(theirs.ok === undefined ? { error: theirs.error, code: RpcError.codes.CommandFailed } : theirs);
  }
});

test('any tags from a hostile alphabet (whitespace, tag types, regex metacharacters) parse as mustache.js parses them', async () => {
  // mustache.js keys its cache by `template:open:close`, which two different pairs of tags can
  // share: each case starts with an empty cache.
  const piece = fc.constantFrom(' ', '\n', '\t', '\r\n', '\u00a0', '#', '^', '/', '>', '{', '}', '&', '=', '!', 'a', 'b', '.', '*', '(', '|', ':', 'x y');
  const tag = fc.array(piece, { minLength: 1, maxLength: 3 }).map((a) => a.join(''));
  const templateParts = fc.array(fc.oneof(piece, fc.constant(0), fc.constant(1)), { maxLength: 14 });
  await fc.assert(
    fc.asyncProperty(tag, tag, templateParts, async (open, close, parts) => {
      const template = parts.map((p) => (p === 0 ? open : p === 1 ? close : p)).join('');
      const c = { template, data: { a: 'A', b: [1, 2], 'x y': 'XY' }, partials: { a: 'PA', b: `${open}a${close}` }, config: [open, close] };
      Mustache.clearCache();
      return agree(viaMustache(c), await viaPool(pool, c));
    }),
    { numRuns: 3000 },
  );
});

test('functions returning hostile values, in any tag, with or without an escape function, render as with mustache.js or fail clearly', async () => {
  // Made afresh for each renderer: a function's result must not be shared between them.
  const results = {
    str: () => 'a<b', num: () => 1.5, negZero: () => -0, nan: () => NaN, inf: () => Infinity, yes: () => true, no: () => false, nil: () => null, undef: () => undefined,
    bigint: () => 12n, symbol: () => Symbol('s'), array: () => [1, 'x', { y: 2 }], empty: () => [], object: () => ({ y: 'Y', z: [1] }),
    proxyObject: () => new Proxy({ y: 'P' }, {}), proxyArray: () => new Proxy([1, 2], {}),
    revoked: () => {
      const r = Proxy.revocable({}, {});
      r.revoke();
      return r.proxy;
    },
    cycle: () => {
      const a = { y: 1 };
      a.a = a;
      return a;
    },
    fn: () => () => 'I', lambda: () => (t, render) => `${render(t)}|${t}`, lambdaThrows: () => () => { throw new Error('lambda threw'); }, throws: () => { throw new Error('thrown'); },
    ownToString: () => ({ toString: () => 'TS' }), throwingGetter: () => ({ get y() { throw new Error('getter'); } }), date: () => new Date(0), nested: () => [[1, [2]], { y: [{ y: 'deep' }] }], boxed: () => new String('so'),
  };
  const tags = ['{{f}}', '{{{f}}}', '{{#f}}[{{y}}{{.}}]{{/f}}', '{{^f}}no{{/f}}', '{{f.y}}', '{{#f}}{{#g}}<{{.}}>{{/g}}{{/f}}', 'x', '{{g}}', '{{#g}}{{f}}{{/g}}'];
  const names = Object.keys(results);
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...names), fc.constantFrom(...names), fc.array(fc.constantFrom(...tags), { minLength: 1, maxLength: 5 }), fc.boolean(), async (f, g, parts, escapes) => {
      const template = parts.join('');
      const data = () => ({ f: results[f], g: results[g], y: 'top' });
      const config = escapes ? { escape: (v) => `(${typeof v === 'symbol' ? 'symbol' : String(v)})` } : undefined;
      Mustache.clearCache();
      const theirs = viaMustache({ template, data: data(), config });
      const ours = await viaPool(pool, { template, data: data(), config });
      // corepool refuses, clearly, what a section's function returns that cannot cross.
      return agree(theirs, ours) || (ours.code === RpcError.codes.CommandFailed && /cannot take/.test(ours.error));
    }),
    { numRuns: 1500 },
  );
});

test.each(['close', 'destroy'])('%s() with renders holding functions in flight: each settles with its own output or PoolClosed', async (how) => {
  const own = new Pool({ threads: 2 });
  const calls = [];
  for (let i = 0; i < 400; i++) {
    const view = { x: i, f() { return `f${this.x}`; }, l: () => (t, render) => render(t), items: [{ x: -i }] };
    const kind = i % 4;
    const template = kind === 0 ? '{{x}}' : '{{#l}}{{x}}{{/l}}{{f}}{{#items}}{{x}}{{/items}}';
    const config = kind === 2 ? { output: 'buffer' } : kind === 3 ? { escape: (v) => `<${v}>` } : undefined;
    calls.push(own.render(template, view, {}, config));
    // One render has settled before anything closes the pool: on a loaded machine the threads
    // may otherwise not finish any before destroy() at i = 300 (it failed so once).
    if (i === 100) await calls[0];
    // From inside a lambda too: the render it runs in goes on.
    if (i === 200) calls.push(own.render('{{#l}}{{x}}{{/l}}', { x: 'in', l: () => (t, render) => (own[how](), render(t)) }));
    if (i === 300) own[how]();
  }
  const outcomes = await Promise.allSettled(calls);
  const done = outcomes.filter((o) => o.status === 'fulfilled').length;
  expect(done).toBeGreaterThan(0);
  outcomes.forEach((o, at) => {
    if (o.status === 'rejected') return expect(o.reason.code).toBe(RpcError.codes.PoolClosed);
    const i = at > 200 ? at - 1 : at;
    if (at === 201) return expect(o.value).toBe('in');
    const kind = i % 4;
    const want = kind === 0 ? `${i}` : kind === 3 ? `<${i}><f${i}><${-i}>` : `${i}f${i}${-i}`;
    expect(String(o.value)).toBe(want);
    if (kind === 2) expect(Buffer.isBuffer(o.value)).toBe(true);
  });
});

test("functions that return huge strings stop the render where mustache.js stops, not after all of them (the output's memory is bounded)", async () => {
  // Each result is 2^26 units: the 8th passes JavaScript's longest string. Before, every
  // function was called and its result appended first (a long list ran out of memory).
  const big = 'x'.repeat(2 ** 26);
  const items = Array.from({ length: 12 }, () => 1);
  for (const template of ['{{#items}}{{{f}}}{{/items}}', '{{#items}}{{#l}}{{/l}}{{/items}}']) {
    const calls = { mustache: 0, corepool: 0 };
    const view = (who) => ({ items, f: () => (calls[who]++, big), l: () => () => (calls[who]++, big) });
    expect(() => Mustache.render(template, view('mustache'))).toThrow('Invalid string length');
    const e = await pool.render(template, view('corepool')).catch((x) => x);
    expect([e.code, e.message]).toEqual([RpcError.codes.CommandFailed, expect.stringContaining("longer than JavaScript's longest string")]);
    expect(calls.corepool).toBe(calls.mustache);
  }
});

test('a function at every level of a deep section, in every row of a list, renders in memory that grows with the rows, not rows × depth²', async () => {
  // 400 nested views, a section function at each level, 300 rows: the first pass once copied
  // every level's whole stack of views (~2 MB a row here; thousands of rows ended the process).
  let chain = { o: false };
  for (let i = 0; i < 400; i++) chain = { o: chain };
  const rows = Array.from({ length: 300 }, () => 1);
  const before = process.memoryUsage().rss;
  let peak = before;
  let calls = 0;
  const f = () => {
    if (++calls % 1000 === 0) peak = Math.max(peak, process.memoryUsage().rss);
    return false;
  };
  const out = await pool.render('{{#rows}}{{#chain}}{{>p}}{{/chain}}{{/rows}}', { rows, chain, f }, { p: '{{#f}}{{/f}}{{#o}}{{>p}}{{/o}}' });
  expect(out).toBe('');
  expect(calls).toBe(300 * 401);
  expect((peak - before) / 2 ** 20).toBeLessThan(100);
});

test('an array item whose read throws (a Proxy trap) fails the render with that error, as mustache.js throws, never prints corepool code', async () => {
  const trap = new Error('trap!');
  const view = () => ({ a: [1, new Proxy([], { get() { throw trap; } })] });
  for (const template of ['{{a}}', '{{{a}}}', '[{{#a}}<{{.}}>{{/a}}]']) {
    expect(() => Mustache.render(template, view())).toThrow('trap!');
    await expect(pool.render(template, view())).rejects.toBe(trap);
  }
});

test('an array of values that are not plain data prints as mustache.js joins them (Dates, boxed values, Maps, BigInts, symbols)', async () => {
  const boxed = Object(1n);
  const views = [{ a: [new Date(0)] }, { a: [boxed, boxed] }, { a: [/x/g, new Map()] }, { a: [0n, [1n]] }, { a: [{ toString: () => 'T' }, 2] }, { a: [Symbol('s')] }];
  for (const view of views) {
    for (const template of ['{{a}}', '{{{a}}}']) {
      let want;
      try {
        want = { value: Mustache.render(template, view) };
      } catch (e) {
        want = { message: e.message };
      }
      if ('value' in want) expect(await pool.render(template, view)).toBe(want.value);
      else await expect(pool.render(template, view)).rejects.toThrow(want.message);
    }
  }
});

test('a toJSON getter that throws fails the render only where the template reads it, as mustache.js', async () => {
  const error = new Error('toJSON getter');
  const view = () => ({ a: Object.defineProperty({ x: 1 }, 'toJSON', { get: () => { throw error; }, enumerable: true }) });
  for (const template of ['{{a}}', '{{a.x}}', '{{#a}}{{x}}{{/a}}']) expect(await pool.render(template, view())).toBe(Mustache.render(template, view()));
  expect(() => Mustache.render('{{a.toJSON}}', view())).toThrow(error);
  await expect(pool.render('{{a.toJSON}}', view())).rejects.toBe(error);
});

describe('corepool/express while its folders change', () => {
  let root;
  let views;
  let parts;
  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'corepool-hostile-'));
    views = path.join(root, 'views');
    parts = path.join(root, 'partials');
    fs.mkdirSync(views);
    fs.mkdirSync(parts);
    fs.writeFileSync(path.join(views, 'page.mustache'), 'v1 {{> p}}');
    fs.writeFileSync(path.join(parts, 'p.mustache'), 'p1');
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  /** The engine's answer for `file`, as Express's callback gets it. */
  const renderWith = (engine, file, locals = {}) => {
    const all = Object.defineProperties({ settings: { views } }, Object.getOwnPropertyDescriptors(locals));
    return new Promise((resolve) => engine(path.join(views, file), all, (e, out) => resolve(e ? `error: ${e.message}` : out)));
  };
  /** Renders until `want` comes back (a watcher hears a change a little after it), or 20 s pass (a hang guard). */
  async function eventually(engine, file, want) {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const out = await renderWith(engine, file);
      if (out === want || Date.now() > deadline) return out;
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  test('a view outside the partials folder is read again after it changes', async () => {
    const engine = expressEngine.mustacheEngine({ pool, partials: parts });
    try {
      expect(await renderWith(engine, 'page.mustache')).toBe('v1 p1');
      fs.writeFileSync(path.join(views, 'page.mustache'), 'v2 {{> p}}');
      expect(await eventually(engine, 'page.mustache', 'v2 p1')).toBe('v2 p1');
    } finally {
      engine.close();
    }
  });

  test('a partials folder removed and made again is read again, and watched again', async () => {
    const engine = expressEngine.mustacheEngine({ pool, partials: parts });
    try {
      expect(await renderWith(engine, 'page.mustache')).toBe('v1 p1');
      fs.rmSync(parts, { recursive: true });
      expect(await eventually(engine, 'page.mustache', 'v1 ')).toBe('v1 ');
      fs.mkdirSync(parts);
      fs.writeFileSync(path.join(parts, 'p.mustache'), 'p2');
      expect(await eventually(engine, 'page.mustache', 'v1 p2')).toBe('v1 p2');
      fs.writeFileSync(path.join(parts, 'p.mustache'), 'p3');
      expect(await eventually(engine, 'page.mustache', 'v1 p3')).toBe('v1 p3');
    } finally {
      engine.close();
    }
  });

  test('a partial that is a link to a file renders, as mustache-express reads it; a dangling link is no partial', async () => {
    const shared = path.join(root, 'shared.mustache');
    fs.writeFileSync(shared, 'linked');
    fs.rmSync(path.join(parts, 'p.mustache'));
    fs.symlinkSync(shared, path.join(parts, 'p.mustache'));
    fs.symlinkSync(path.join(root, 'nowhere.mustache'), path.join(parts, 'dangling.mustache'));
    const engine = expressEngine.mustacheEngine({ pool, partials: parts });
    try {
      expect(await renderWith(engine, 'page.mustache')).toBe('v1 linked');
    } finally {
      engine.close();
    }
  });

  test('a partial removed between listing the folder and reading it is no partial, not a failed page', async () => {
    fs.writeFileSync(path.join(parts, 'old.mustache'), 'old');
    const engine = expressEngine.mustacheEngine({ pool, partials: parts });
    // An editor saving by rename removes the file at this point: the folder listed it, it is gone.
    const gone = path.join(parts, 'old.mustache');
    const readFile = fs.promises.readFile;
    const spy = jest.spyOn(fs.promises, 'readFile').mockImplementation((file, ...rest) => {
      if (file === gone) return Promise.reject(Object.assign(new Error(`ENOENT: no such file or directory, open '${file}'`), { code: 'ENOENT' }));
      return readFile.call(fs.promises, file, ...rest);
    });
    try {
      expect(await renderWith(engine, 'page.mustache')).toBe('v1 p1');
    } finally {
      spy.mockRestore();
      engine.close();
    }
  });

  test('renders in flight when engine.close() runs finish, and later ones read the files afresh', async () => {
    const engine = expressEngine.mustacheEngine({ pool, partials: parts });
    const inFlight = Array.from({ length: 20 }, () => renderWith(engine, 'page.mustache', { f: () => 'F' }));
    engine.close();
    expect(await Promise.all(inFlight)).toEqual(Array(20).fill('v1 p1'));
    fs.writeFileSync(path.join(parts, 'p.mustache'), 'p2');
    expect(await renderWith(engine, 'page.mustache')).toBe('v1 p2');
    expect(await renderWith(engine, 'nope.mustache')).toMatch(/^error: ENOENT/);
    expect(await renderWith(engine, 'page.mustache', { get boom() { throw new Error('getter'); } })).toBe('error: getter');
  });
});

test("what section functions return is bounded in all, like a call's data: a clear error, not memory without end", async () => {
  // Every result is kept until the render ends: 9 × 500,000 values pass the 2^22 a call may
  // hold (each call of f used ~19 MB; a few hundred of them ended the process).
  const big = Array.from({ length: 500000 }, (_, i) => i);
  const items = Array.from({ length: 9 }, (_, i) => i);
  const e = await pool.render('{{#items}}{{#f}}{{/f}}{{/items}}', { items, f: () => big }).catch((x) => x);
  expect(e).toBeInstanceOf(RpcError);
  expect(e.code).toBe(RpcError.codes.CommandFailed);
  expect(e.message).toMatch(/section functions returned hold more than 4194304 values in all/);
  // Small results, many times over, are fine.
  const rows = Array.from({ length: 20000 }, (_, i) => ({ i }));
  const out = await pool.render('{{#rows}}{{#f}}{{.}}{{/f}}{{/rows}}', { rows, f() { return [this.i % 10, 0]; } });
  expect(out).toBe(rows.map(({ i }) => `${i % 10}0`).join(''));
});

test("a section function's result that cannot cross is CommandFailed, whatever it holds (it is not the caller's params)", async () => {
  // (A BigInt, a Date or a Map in it renders as in mustache.js: render-mustache-compat.test.js.)
  const results = [new Uint8Array([1]), new Int32Array(new SharedArrayBuffer(8)), [new Uint8Array(2)], { a: new ArrayBuffer(8) }];
  for (const result of results) {
    const e = await pool.render('{{#f}}x{{/f}}', { f: () => result }).catch((x) => x);
    expect(e).toBeInstanceOf(RpcError);
    expect([e.code, e.message]).toEqual([RpcError.codes.CommandFailed, expect.stringMatching(/the function's result/)]);
  }
});

test('a render that needs JavaScript in more places than it may record fails at once, calling no function', async () => {
  // 2,050² = 4,202,500 calls of f, past the 2^22 slots a render may record (each cost ~100
  // bytes first; three such loops over 1,000 elements took ~100 GB before any function ran).
  const a = Array.from({ length: 2050 }, () => 1);
  let calls = 0;
  const e = await pool.render('{{#a}}{{#a}}{{f}}{{/a}}{{/a}}', { a, f: () => (calls++, '') }).catch((x) => x);
  expect([e.code, e.message]).toEqual([RpcError.codes.CommandFailed, expect.stringContaining('more than 4194304 places of this render need JavaScript')]);
  expect(calls).toBe(0);
  // Just below the bound, every call is made.
  const b = Array.from({ length: 2048 }, () => 1);
  expect(await pool.render('{{#b}}{{#b}}{{f}}{{/b}}{{/b}}', { b, f: () => (calls++, '') })).toBe('');
  expect(calls).toBe(2048 * 2048);
});

test('keys that differ only in lone surrogates are one key once they cross (U+FFFD): its last value, however the params cross', async () => {
  // Two keys in JavaScript, one key natively: a lone surrogate becomes U+FFFD on the way.
  const data = { '\ud800': 1, '\udc00': 2 };
  // Plain data crosses packed; a function in the view makes it cross value by value.
  expect(await pool.render('{{\ufffd}}', data)).toBe('2');
  expect(await pool.render('{{\ufffd}}', { ...data, f: () => 'x' })).toBe('2');
  // A table of such rows: every row has the first row's keys (one shape).
  const rows = [data, { '\ud800': 3, '\udc00': 4 }];
  expect(await pool.render('{{#rows}}{{\ufffd}},{{/rows}}', { rows })).toBe('2,4,');
  expect(await pool.exec('echo', rows)).toEqual([{ '\ufffd': 2 }, { '\ufffd': 4 }]);
});

test('a view whose keys repeat once decoded is read in time linear in its keys: 120,000 keys end well within a 10 s limit', async () => {
  // Two lone halves make one key natively. Removing the repeat used to compare each key with
  // every earlier one (7·10^9 comparisons here, ~16 s on a pool thread, past any limit).
  const view = {};
  for (let i = 0; i < 120_000; i++) view[`k${i}`] = i;
  view['\ud800'] = 'first';
  view['\udc00'] = 'last';
  const rows = [view, { ...view, k1: 'row 2' }];
  await expect(pool.call('render', ['{{k1}} {{\ufffd}}', view], { timeout: 10_000 })).resolves.toBe('1 last');
  await expect(pool.call('render', ['{{#rows}}{{k1}},{{/rows}}', { rows }], { timeout: 10_000 })).resolves.toBe('1,row 2,');
});

test("a packed function's number past the call's functions is an error of the render, never a read past them", async () => {
  // The tape is written by lib/params.js; one whose function slot is forged (past the call's
  // functions, up to 2^32 - 1) must end the render with an error before anything is sized by it.
  for (const forged of [2, 2 ** 20, 2 ** 32 - 1]) {
    let outcome;
    jest.isolateModules(() => {
      const real = jest.requireActual('../lib/params.js');
      jest.doMock('../lib/params.js', () => ({
        ...real,
        wireParams(params, functions) {
          const wired = real.wireParams(params, functions);
          const tape = wired[2];
          const { function: FUNCTION } = require('../lib/native.js').contract.packedTags;
          if (tape !== undefined) {
            for (let i = 2; i < tape[0] - 1; i++) if (tape[i] === FUNCTION && tape[i + 1] === 0) tape[i + 1] = forged;
          }
          return wired;
        },
      }));
      const { Pool: IsolatedPool } = require('..');
      const own = new IsolatedPool({ threads: 1 });
      outcome = own
        .render('{{#rows}}{{f}}{{/rows}}', { rows: [{ f: () => 'x' }, { f: () => 'y' }] })
        .then(
          (v) => ({ ok: v }),
          (e) => ({ code: e.code, message: e.message }),
        )
        .finally(() => own.close());
    });
    expect(await outcome).toEqual({ code: RpcError.codes.InternalError, message: expect.stringMatching(/not among its handles/) });
  }
  // And the pool goes on rendering.
  expect(await pool.render('{{#rows}}{{f}}{{/rows}}', { rows: [{ f: () => 'x' }] })).toBe('x');
});
