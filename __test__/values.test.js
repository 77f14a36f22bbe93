'use strict';
// Values crossing between JavaScript and the pool (lib/params.js, src/bindings/convert/, src/rpc/):
// what params may hold, how results come back, and what hostile values (getters, Proxies,
// polluted prototypes, untrusted lengths) can and cannot do.
const { Pool, RpcError } = require('..');
const Mustache = require('mustache');
const { child, clean } = require('./helpers/child.js');
const { rejection: rejectionOf, outcome } = require('./helpers/rejection.js');

const C = RpcError.codes;

/** Every call here that fails, fails with an RpcError: any other rejection fails the test. */
const rejection = (promise) => rejectionOf(promise, RpcError);

describe('values crossing: shapes, encodings, what is refused and where', () => {
  let pool;
  beforeAll(() => {
    pool = new Pool({ threads: 2 });
  });
  afterAll(() => pool.close());

  test('a served result goes as structured clone exactly when it must: met twice (itself included), or not plain data', () => {
    const { needsClone } = require('../lib/clone.js');
    const self = [];
    self.push(self);
    const loop = { a: {} };
    loop.a.back = loop;
    const shared = { x: 1 };
    const cases = [
      [[1, 'a', null, true, 2n], false],
      [[0.5, { a: [1] }], false],
      [{ a: [1], b: { c: 2 } }, false],
      [self, true],
      [loop, true],
      [[shared, shared], true],
      [[1, , 2], true], // eslint-disable-line no-sparse-arrays
      [[1, undefined], true],
      [[1, new Date(0)], true],
      [{ m: new Map() }, true],
    ];
    expect(cases.map(([value]) => needsClone(value))).toEqual(cases.map(([, expected]) => expected));
  });

  test('values keep their shape: key order, unicode, nesting, BigInt and bytes', async () => {
    const v = { z: 1, a: 'héllo 🌍', nested: [[[{ deep: [] }]]], big: 123456789012345678901234567890n, bytes: new Uint8Array([1, 2, 255]) };
    const back = await pool.exec('echo', v);
    expect(Object.keys(back)).toEqual(['z', 'a', 'nested', 'big', 'bytes']);
    expect(back).toEqual(v);
    expect(await pool.exec('echo', -5n)).toBe(-5n);
    // A key holding undefined stays (as null): Mustache treats a present key as found.
    const kept = await pool.exec('echo', { u: undefined, n: null });
    expect(Object.keys(kept)).toEqual(['u', 'n']);
    expect(kept.u).toBeNull();
    expect(await pool.exec('echo', [undefined, 1])).toEqual([null, 1]);
  });

  test('how params cross: small objects packed, a leading string apart, long strings beside them packed too', () => {
    const { wireParams, released } = require('../lib/params.js');
    const { contract } = require('../lib/native.js');
    const { packed, packedLatin1, packedAfterString } = contract.callFlags;
    const how = (params) => {
      const [sent, flags, tape, rest] = wireParams(params);
      if (!(flags & packed)) return 'value by value';
      const entries = Array.from(tape.subarray(0, tape[0]));
      released();
      const text = flags & packedAfterString ? `${JSON.stringify(sent)} apart, then ${JSON.stringify(rest)}` : JSON.stringify(sent);
      return `packed${flags & packedLatin1 ? ' (Latin-1)' : ''}: ${text} ${entries.join(',')}`;
    };
    const template = '<em>{{me}}</em> '.repeat(200);
    const T = contract.packedTags;
    // The tape: the entries used, the values held, then the params array. The strings in the
    // order the tape meets them, an object's keys after its values; the template apart.
    expect(how([template, { me: 'Zoë' }, undefined, { output: 'buffer' }])).toBe(
      `packed (Latin-1): ${JSON.stringify(template)} apart, then "Zoëmebufferoutput" 15,7,${T.array},3,${T.objectShape},1,${T.string},3,2,${T.null},${T.objectShape},1,${T.string},6,6`,
    );
    expect(how([{ a: 1 }, 'x'])).toBe(`packed (Latin-1): "ax" 11,4,${T.array},2,${T.objectShape},1,${T.number},1,1,${T.string},1`);
    // Rows with the same keys name the first row's shape.
    expect(how([[{ a: 1, b: '€' }, { a: 2, b: 'x' }]])).toBe(
      `packed: "€abx" 21,8,${T.array},1,${T.array},2,${T.objectShape},2,${T.number},1,${T.string},1,1,1,${T.shaped},2,${T.number},2,${T.string},1,0`,
    );
    expect(how([{ a: 1 }])).toMatch(/^packed/);
    // A leading string whose units all fit a byte is read natively as Latin-1.
    const firstLatin1 = (params) => {
      const [, flags] = wireParams(params);
      released();
      return (flags & contract.callFlags.firstLatin1) !== 0;
    };
    expect([firstLatin1(['Zoë {{x}}', { x: 1 }]), firstLatin1(['€ {{x}}', { x: 1 }]), firstLatin1(['\ud800 {{x}}', { x: 1 }])]).toEqual([true, false, false]);
    expect(how(['x', 1, true])).toBe('value by value');
    // Long strings in small params (render's JSON text, data: 'json'; a partial) go packed too,
    // as they are: copying them costs this thread less than Node-API's transcoding.
    const text = JSON.stringify({ rows: Array.from({ length: 100 }, (_, i) => ({ i, s: 'row "quoted"' })) });
    expect(how([template, text, undefined, { data: 'json' }])).toBe(
      `packed (Latin-1): ${JSON.stringify(template)} apart, then ${JSON.stringify(text + 'jsondata')} 12,6,${T.array},3,${T.string},${text.length},${T.null},${T.objectShape},1,${T.string},4,4`,
    );
    expect(how([template, { bio: 'b'.repeat(5000) }])).toMatch(/^packed \(Latin-1\): ".*" apart, then "b{5000}bio" /);
    // Big plain data goes packed whatever its strings.
    const rows = Array.from({ length: 40 }, (_, i) => ({ i, bio: 'b'.repeat(100) }));
    expect(how([template, { rows }])).toMatch(/^packed \(Latin-1\): ".*" apart, then "b{100}ibio(b{100}){39}rows" /);
  });

  test("a render's functions cross packed, as numbered slots, with the objects in the order the native conversion lists them", () => {
    const { wireParams, released } = require('../lib/params.js');
    const { contract } = require('../lib/native.js');
    const T = contract.packedTags;
    const f = () => 1;
    const g = function () {};
    const row = { n: 1, f };
    const items = [row, { n: 2, g }];
    const escape = (s) => s;
    const [, flags, tape, text, handles] = wireParams(['{{a}}', { items }, undefined, { escape }], true);
    const entries = Array.from(tape.subarray(0, tape[0]));
    released();
    expect(flags & contract.callFlags.packed).not.toBe(0);
    expect(text).toBe('nfngitemsescape');
    // Each function a slot: its tag and its number among the call's functions.
    expect(entries.slice(1).join(',')).toBe(
      [13, T.array, 3, T.objectShape, 1, T.array, 2, T.objectShape, 2, T.number, 1, T.function, 0, 1, 1, T.objectShape, 2, T.number, 2, T.function, 1, 1, 1, 5, T.null, T.objectShape, 1, T.function, 2, 6].join(','),
    );
    // Depth first, in order, the params array left out: the view, items, its two rows, the config.
    expect(handles[0]).toEqual([f, g, escape]);
    expect(handles[1].length).toBe(5);
    expect(handles[1][1]).toBe(items);
    expect(handles[1][2]).toBe(row);
    // Only for a call that may hold functions; a function with properties of its own crosses
    // value by value, where the conversion refuses it by name.
    expect(wireParams(['{{a}}', { f }])[1]).toBe(0);
    expect(wireParams(['{{a}}', { f: Object.assign(() => 1, { extra: 1 }) }], true)[1]).toBe(0);
    // A plain view gives no handles.
    const plain = wireParams(['{{a}}', { a: [1] }], true);
    released();
    expect(plain[4]).toBeUndefined();
  });

  test('small params holding objects (packed) arrive whole and in order, natively and to served methods', async () => {
    // A served method gets its params, then its call's context.
    const server = pool.serve({ argsOf: (...a) => a.slice(0, -1) });
    try {
      const cases = [
        [['tpl {{x}}', { x: 1, y: [1, 'ü', null] }], null],
        // Lone surrogates become U+FFFD, in the leading string and in the others alike.
        [['x\ud800y', { lone: 'a\udc00', nested: { deep: [[{ e: '€😀' }]] } }, ['{{', '}}']], ['x\ufffdy', { lone: 'a\ufffd', nested: { deep: [[{ e: '€😀' }]] } }, ['{{', '}}']]],
        // undefined in the params array reaches a JavaScript handler as undefined (issue 30 §2:
        // such params cross as structured clone; a native command gets null, as value by value).
        [['x', undefined, [undefined, 1]], null],
        [[{ first: 'an object' }, 'then a string'], null],
        [['', []], null],
        [['only a string'], null],
        [['a', 'b', 1, true, null], null],
      ];
      for (const [params, expected = null] of cases) {
        const want = expected ?? params;
        expect(await pool.exec('argsOf', ...params)).toEqual(want);
      }
      // A native command's params, the same way.
      expect(await pool.exec('render', 'x\ud800 {{x}}|{{y.1}}', { x: 1, y: [1, 'ü'] })).toBe('x\ufffd 1|ü');
      expect(await pool.exec('render', '<%x%> {{x}}', { x: '€' }, undefined, ['<%', '%>'])).toBe('€ {{x}}');
    } finally {
      await server.close();
    }
  });

  test('big plain data (sent as JSON text) round-trips exactly like small data', async () => {
    const rows = Array.from({ length: 200 }, (_, i) => ({ id: i, name: `row ${i} ✓`, admin: i % 3 === 0, score: i / 7, tags: ['a', 'b'], none: null }));
    const data = { title: 'Ünïcode "quotes" \\ slashes', rows, nested: { deep: [[[{ x: 1e21 }]]] }, 10: 'numeric key', b: 2, a: 1 };
    const back = await pool.exec('echo', data);
    expect(back).toEqual(data);
    expect(Object.keys(back)).toEqual(Object.keys(data));
    // Values JSON cannot carry force the value-by-value path, and still round-trip.
    const special = rows.map((r) => ({ ...r, nan: NaN, negZero: -0, lone: 'x\ud800y' }));
    const back2 = await pool.exec('echo', special);
    expect(back2[5].nan).toBeNaN();
    expect(Object.is(back2[5].negZero, -0)).toBe(true);
    expect(back2[5].lone).toBe('x\ufffdy'); // Node-API turns a lone surrogate into U+FFFD
    // An unsendable value deep in big data is still refused with its place.
    const bad = rows.map((r, i) => (i === 150 ? { ...r, when: new Date(0) } : r));
    const e = await rejection(pool.exec('echo', bad));
    expect(e.code).toBe(C.InvalidParams);
    expect(e.message).toMatch(/params\[0\]\[150\]\.when is a Date/);
  });

  test('objects cross by what they are, whatever the order of the checks: plain, typed array, Date, ArrayBuffer, DataView, instance', async () => {
    const u8 = new Uint8Array([1, 2]);
    expect(await pool.exec('echo', { a: u8, n: Object.create(null) })).toEqual({ a: new Uint8Array([1, 2]), n: {} });
    for (const [value, why] of [
      [new Date(0), /params\[0\] is a Date/],
      [new ArrayBuffer(4), /params\[0\] is an ArrayBuffer/],
      [new DataView(new ArrayBuffer(4)), /params\[0\] is a DataView/],
      [new Map(), /params\[0\] is an instance of Map/],
    ]) {
      const e = await rejection(pool.exec('echo', value));
      expect([e.code, e.message]).toEqual([C.InvalidParams, expect.stringMatching(why)]);
    }
    // Given Object.prototype, they cross as their own enumerable keys, as JSON sends them; a
    // typed array stays a typed array (its index keys are never listed one by one).
    const odd = [new Date(0), new ArrayBuffer(4), new DataView(new ArrayBuffer(4))].map((o) => Object.assign(Object.setPrototypeOf(o, Object.prototype), { k: 1 }));
    expect(await pool.exec('echo', odd)).toEqual(JSON.parse(JSON.stringify(odd)));
    const big = Object.setPrototypeOf(new Uint8Array(2 ** 24).fill(7), Object.prototype);
    const back = await pool.exec('echo', big);
    expect([back instanceof Uint8Array, back.length, back[2 ** 24 - 1]]).toEqual([true, 2 ** 24, 7]);
    // A String object given Object.prototype is refused at once (it would list a key per
    // character: 2^24 of them took 14 s and 1 GB before being refused); a `length` field is data.
    const text = Object.setPrototypeOf(new String('a'.repeat(2 ** 24)), Object.prototype);
    const e = await rejection(pool.exec('echo', { text }));
    expect([e.code, e.message]).toEqual([C.InvalidParams, expect.stringMatching(/String object whose prototype was replaced.*String\(value\)/)]);
    expect(await pool.exec('echo', { length: 3, s: new String('x').valueOf() })).toEqual({ length: 3, s: 'x' });
  });

  test('plain data that reaches one object many times is refused once it holds more values than a call may carry', async () => {
    // 2^40 values through arrays, 2^40 through object keys: refused after 2^24, not walked.
    let list = [1, 'x'];
    let tree = { a: 1, b: 'x' };
    for (let i = 0; i < 40; i++) {
      list = [list, list];
      tree = { l: tree, r: tree };
    }
    // (Each walk takes ~0.2 s in plain Node, 3-7 s under jest's module sandbox.)
    for (const value of [list, { t: tree }]) {
      const e = await rejection(pool.exec('echo', value));
      expect([e.code, e.message]).toEqual([C.InvalidParams, expect.stringMatching(/more than the 16777216 values a call may carry/)]);
    }
    // A shared tree within the limit crosses, as JSON sends it.
    let shared = [0];
    for (let i = 0; i < 16; i++) shared = [shared, shared];
    const back = await pool.exec('echo', shared);
    expect(JSON.stringify(back)).toBe(JSON.stringify(shared));
  });

  test('a String object given a plain prototype is refused wherever it is met as params (after a non-JSON value, from another realm), and crosses whole as a served result', async () => {
    const vm = require('node:vm');
    const big = (make) => make('a'.repeat(2 ** 22));
    const here = (text) => Object.setPrototypeOf(new String(text), Object.prototype);
    const why = /String object whose prototype was replaced.*String\(value\)/;
    // Refused before its keys are listed (2^22 of them took seconds and hundreds of MB): an own
    // enumerable key after the characters' says whether a conversion went through them.
    let listed = 0;
    const watched = (s) => Object.defineProperty(s, 'after', { enumerable: true, get: () => ++listed });
    for (const params of [
      [{ u: new Uint8Array(1), text: watched(big(here)) }],
      [NaN, watched(big(here))],
      [{ a: undefined, text: watched(big(here)) }],
      [{ text: watched(big((text) => vm.runInNewContext('Object.setPrototypeOf(new String(t), Object.prototype)', { t: text }))) }],
      [{ u: new Uint8Array(1), text: watched(here('abc')) }], // short: listed, it would cross as { 0, 1, 2, after }
    ]) {
      const e = await rejection(pool.call('echo', params));
      expect([e.code, e.message, listed]).toEqual([C.InvalidParams, expect.stringMatching(why), 0]);
    }
    // A served handler's result goes to a JavaScript caller as structured clone carries it
    // (issue 30 §2): a String object, its text as one string, no key listed.
    const server = pool.serve({ give: () => watched(big(here)) });
    try {
      const given = await pool.exec('give');
      // (Its String is the process's own: jest runs this file in a realm of its own.)
      expect([Object.prototype.toString.call(given), given.length, listed]).toEqual(['[object String]', 2 ** 22, 0]);
    } finally {
      await server.close();
    }
    // Only a String object is: a plain object may say it is one, and keep its length as data.
    const tagged = { length: 3, [Symbol.toStringTag]: 'String', a: 1 };
    expect(await pool.exec('echo', tagged)).toEqual({ length: 3, a: 1 });
    expect(await pool.exec('echo', [new Uint8Array(1), tagged])).toEqual([new Uint8Array(1), { length: 3, a: 1 }]);
  });

  test('big strings cross exactly in every encoding JavaScript keeps (ASCII, Latin-1, UTF-16, lone surrogates)', async () => {
    const kinds = {
      ascii: '<td>plain</td>',
      latin1: 'Zoë Müller ÿ\u0080 ',
      bmp: 'Ā € 中文 ',
      astral: '😀 𝄞 ',
      lone: 'x\ud800y',
      loneLow: '\udc00 tail',
    };
    for (const [kind, unit] of Object.entries(kinds)) {
      for (const size of [10, 255, 256, 257, 5000]) {
        const s = unit.repeat(Math.ceil(size / unit.length)).slice(0, size);
        // Lone surrogates become U+FFFD on the way in (Node-API reads strings as UTF-8).
        const wellFormed = s.isWellFormed() ? s : s.toWellFormed();
        expect([kind, size, await pool.exec('echo', s)]).toEqual([kind, size, wellFormed]);
        // As part of big plain data (JSON text both ways) when it is well formed.
        const data = Array.from({ length: 40 }, (_, i) => ({ i, s }));
        const back = await pool.exec('echo', data);
        expect([kind, size, back[39].s]).toEqual([kind, size, wellFormed]);
      }
    }
  });

  test('values that cannot cross are refused with their place and type', async () => {
    class Point {
      constructor() {
        this.x = 1;
      }
    }
    const cyclic = {};
    cyclic.self = cyclic;
    const cases = [
      [{ f: () => 1 }, /params\[0\]\.f is a function/],
      [new Date(0), /Date/],
      [new Point(), /instance of Point/],
      [new Map(), /instance of Map/],
      [Symbol('s'), /symbol/],
      [cyclic, /^params\[0\]\.self is cyclic: it is params\[0\] again$/],
      [{ deep: JSON.parse('['.repeat(600) + ']'.repeat(600)) }, /nested more than 512 levels/],
      [new Float64Array(2), /Float64Array over an ordinary ArrayBuffer/],
      [new ArrayBuffer(8), /ArrayBuffer: pass a typed-array view/],
      [new DataView(new ArrayBuffer(8)), /DataView/],
    ];
    for (const [value, message] of cases) {
      const e = await rejection(pool.exec('echo', value));
      expect(e.code).toBe(C.InvalidParams);
      expect(e.message).toMatch(message);
    }
  });

  test("a cyclic value's error names where the cycle first closes, in at most 130 characters a place", async () => {
    const message = async (value) => (await rejection(pool.exec('echo', value))).message;
    // Found 32 levels down at the earliest (shallower data pays no comparison), but named
    // where it first came back: not params[0].a.a.a… 32 times.
    const a = {};
    a.a = a;
    expect(await message(a)).toBe('params[0].a is cyclic: it is params[0] again');
    const b = { x: [1, { y: null }] };
    b.x[1].y = b;
    expect(await message([0, b])).toBe('params[0][1].x[1].y is cyclic: it is params[0][1] again');
    // Equal names are not the same object: the cycle starts at the third level here.
    const c = { a: { a: { a: {} } } };
    c.a.a.a.a = c.a.a.a;
    expect(await message(c)).toBe('params[0].a.a.a.a is cyclic: it is params[0].a.a.a again');
    // A cycle that starts 200 levels down: a place longer than 130 characters keeps its first
    // and last 60.
    const deep = {};
    let end = deep;
    for (let i = 0; i < 200; i++) end = end.next = {};
    end.self = end;
    const short = (place) => (place.length <= 130 ? place : `${place.slice(0, 60)}…${place.slice(-60)}`);
    const at = `params[0]${'.next'.repeat(200)}`;
    expect(await message(deep)).toBe(`${short(`${at}.self`)} is cyclic: it is ${short(at)} again`);
    expect(short(at)).toHaveLength(121);
    // A handler's result goes to its JavaScript caller as structured clone carries it (issue 30
    // §2): the cycle is kept.
    const server = pool.serve({ selfish: () => {
      const r = { list: [] };
      r.list.push(r);
      return r;
    } });
    try {
      const r = await pool.exec('selfish');
      expect(r.list[0]).toBe(r);
    } finally {
      await server.close();
    }
  });

  test('plain objects of any realm cross, class instances of any realm are refused', async () => {
    // The check remembers the first Object.prototype it meets on a thread; objects of other
    // realms (a vm context, a test sandbox) must still be told apart correctly afterwards.
    const vm = require('node:vm');
    const other = vm.runInNewContext('({ plain: { a: 1, b: [{ c: 2 }] }, make: () => new (class Q { constructor() { this.x = 1; } })() })');
    for (let i = 0; i < 3; i++) {
      expect(await pool.exec('echo', { a: 1, b: [{ c: 2 }] })).toEqual({ a: 1, b: [{ c: 2 }] });
      expect(await pool.exec('echo', other.plain)).toEqual({ a: 1, b: [{ c: 2 }] });
      expect(await pool.exec('echo', Object.create(null))).toEqual({});
      const e = await rejection(pool.exec('echo', other.make()));
      expect(e.code).toBe(C.InvalidParams);
      expect(e.message).toMatch(/instance of Q/);
      class R {}
      expect((await rejection(pool.exec('echo', { r: new R() }))).message).toMatch(/params\[0\]\.r is an instance of R/);
    }
  });
});

// Regressions from issue 13's hostile review, each under the defect it pins (§ numbers are the
// review's). Inputs that could take the process down run in a child process (helpers/child.js).

describe('issue 13 §2: untrusted lengths size no allocation', () => {
  test('a sparse array of length 2^32−1 is refused with InvalidParams on every entry point', async () => {
    const r = await child(`
      const pool = new Pool({ threads: 1 });
      const s = []; s.length = 2 ** 32 - 1;
      const code = async (p) => { try { await p; return 'resolved'; } catch (e) { return e.code; } };
      const exec = await code(pool.exec('echo', [NaN, s]));
      const call = await code(pool.call('echo', [s]));
      const broadcast = await code(pool.broadcast('echo', s));
      const request = (await pool.request({ jsonrpc: '2.0', method: 'echo', params: s, id: 1 })).error.code;
      const nested = await code(pool.exec('echo', { a: [1, { b: s }] }));
      const after = await pool.exec('echo', [1, 2]);
      await pool.close();
      out({ exec, call, broadcast, request, nested, after });
    `);
    const p = C.InvalidParams;
    expect(clean(r)).toEqual({ exec: p, call: p, broadcast: p, request: C.InvalidRequest, nested: p, after: [1, 2] });
  });

  test('an object claiming 2^32−1 keys through a Proxy is refused, not allocated for', async () => {
    const r = await child(`
      const pool = new Pool({ threads: 1 });
      const keys = { length: 2 ** 32 - 1 };
      const huge = new Proxy({}, { ownKeys: () => { const k = []; k.length = 2 ** 25; return k.fill('x'); } });
      const code = async (p) => { try { await p; return 'resolved'; } catch (e) { return e.code; } };
      out({ proxy: await code(pool.exec('echo', huge)), after: await pool.exec('echo', 5) });
      await pool.close();
    `);
    const res = clean(r);
    expect(res.after).toBe(5);
    expect([C.InvalidParams, 'resolved']).toContain(res.proxy);
  });
});

describe('issue 13 §5: results whose JSON text is too long for a JavaScript string', () => {
  // 10^8 control characters are a short enough string, but 6·10^8 characters of JSON text
  // ("\u0001" each): too long for one JavaScript string (2^29 − 24 units).
  test('exec: the result still arrives (value by value), and the calls settled beside it too', async () => {
    const r = await child(
      `
      const pool = new Pool({ threads: 2 });
      const s = '\x01'.repeat(1e8);
      const big = { s, u: undefined, ...Object.fromEntries(Array.from({ length: 40 }, (_, i) => ['k' + i, i])) };
      const calls = [pool.exec('echo', big), ...Array.from({ length: 50 }, (_, i) => pool.exec('echo', i))];
      const [got, ...small] = await Promise.all(calls);
      await pool.close();
      out({ same: got.s === s && got.u === null && got.k39 === 39, small: small.length, sum: small.reduce((a, b) => a + b) });
      `,
      { timeoutMs: 120_000 },
    );
    expect(clean(r)).toEqual({ same: true, small: 50, sum: 1225 });
  }, 130_000);

  test('handle(): an answer too long for a string is an InternalError answer with the id, never a rejection', async () => {
    const r = await child(
      `
      const pool = new Pool({ threads: 1 });
      const template = '{{#a}}' + '\x01'.repeat(1 << 20) + '{{/a}}';
      const text = JSON.stringify({ jsonrpc: '2.0', method: 'render', params: [template, { a: Array(100).fill(1) }], id: 'big' });
      const answer = JSON.parse(await pool.handle(text));
      const after = await pool.exec('echo', 'after');
      await pool.close();
      out({ id: answer.id, code: answer.error.code, tooLong: /too long/.test(answer.error.message), after });
      `,
      { timeoutMs: 120_000 },
    );
    expect(clean(r)).toEqual({ id: 'big', code: C.InternalError, tooLong: true, after: 'after' });
  }, 130_000);
});

describe('issue 13 §6: __proto__ keys are own data properties, as JSON.parse makes them', () => {
  const pool = new Pool({ threads: 1 });
  afterAll(() => pool.close());

  const hostile = () => JSON.parse('{"__proto__":{"isAdmin":true},"x":1}');
  const check = (v) => {
    // Object.prototype of whichever realm made it (the test runner has a realm of its own).
    expect(Object.getPrototypeOf(Object.getPrototypeOf(v))).toBe(null);
    expect(Object.hasOwn(v, '__proto__')).toBe(true);
    expect(v.isAdmin).toBeUndefined();
    expect(Object.getOwnPropertyDescriptor(v, '__proto__').value).toEqual({ isAdmin: true });
  };

  test('small results (built value by value)', async () => {
    check(await pool.exec('echo', hostile()));
    check((await pool.exec('echo', [hostile()]))[0]);
  });

  test('big results (JSON text) and JSON-RPC answers', async () => {
    const big = await pool.exec('echo', { ...hostile(), rows: Array.from({ length: 40 }, (_, i) => i) });
    check(big);
    check((await pool.request({ jsonrpc: '2.0', method: 'echo', params: [hostile()], id: 1 })).result);
    check(JSON.parse(await pool.handle('{"jsonrpc":"2.0","method":"echo","params":[{"__proto__":{"isAdmin":true}}],"id":1}')).result);
  });
});

describe('issue 13 §9: nothing thrown between tracking and submission leaks a call', () => {
  test('throwing getters, Proxy traps: RpcError InvalidParams; a getter is read once; text too long goes value by value; close() resolves', async () => {
    const r = await child(
      `
      const pool = new Pool({ threads: 1 });
      const results = {};
      const code = async (p) => { try { await p; return 'resolved'; } catch (e) { return e instanceof RpcError ? e.code : 'plain ' + e.constructor.name; } };
      const getter = { get x() { throw new Error('boom'); } };
      const trap = new Proxy({}, { ownKeys() { throw new Error('trap'); } });
      let reads = 0;
      const second = Array.from({ length: 40 }, (_, i) => i);
      const flaky = { rows: second, get v() { return ++reads > 1 ? 1n : 1; } };
      results.getter = await code(pool.exec('echo', getter));
      results.trap = await code(pool.exec('echo', trap));
      // Plain data is read once, by the walk that packs it: what a getter gave it is what is
      // sent (a second read would give a BigInt).
      results.flaky = await pool.exec('echo', flaky).then((v) => ({ v: v.v, rows: v.rows.length, reads }));
      // Strings longer together than one string can be: packing gives up on them, and they
      // cross value by value, each its own string.
      const long = 'a'.repeat(2 ** 28);
      results.tooLong = await pool.exec('echo', [long, long, long, ...second]).then((v) => v.length === 43 && v[2] === long);
      results.bigGetter = await code(pool.exec('echo', { rows: second, get x() { throw new Error('late'); } }));
      // A params array whose first item throws on its second read: read once.
      const firstAgain = ['', { a: 1 }];
      let firstReads = 0;
      Object.defineProperty(firstAgain, 0, { enumerable: true, get() { if (++firstReads > 1) throw new Error('again'); return '{{a}}'; } });
      results.firstAgain = await pool.call('render', firstAgain).then((v) => ({ v, firstReads }));
      results.requestGetter = (await pool.request({ jsonrpc: '2.0', method: 'echo', get id() { throw new Error('id'); } })).error.code;
      results.broadcastTrap = await code(pool.broadcast('echo', trap));
      const drained = await Promise.race([pool.drained().then(() => 'drained'), new Promise((r) => setTimeout(r, 3000, 'leaked').unref())]);
      const closed = await Promise.race([pool.close().then(() => 'closed'), new Promise((r) => setTimeout(r, 3000, 'leaked').unref())]);
      out({ ...results, drained, closed });
      `,
      { timeoutMs: 60_000 },
    );
    const p = C.InvalidParams;
    expect(clean(r)).toEqual({
      getter: p,
      trap: p,
      flaky: { v: 1, rows: 40, reads: 1 },
      tooLong: true,
      bigGetter: p,
      firstAgain: { v: '1', firstReads: 1 },
      requestGetter: C.InvalidRequest,
      broadcastTrap: p,
      drained: 'drained',
      closed: 'closed',
    });
  });

  test('request() and handle() never reject, even on a closed pool with a hostile request', async () => {
    const pool = new Pool({ threads: 1 });
    await pool.close();
    const hostile = new Proxy({}, { has() { throw new Error('has'); }, get() { throw new Error('get'); } });
    // A request that cannot even be read is invalid, closed pool or not.
    const answer = await pool.request(hostile);
    expect(answer.error.code).toBe(C.InvalidRequest);
    const echoed = await pool.request({ jsonrpc: '2.0', method: 'echo', params: [1], id: 42 });
    expect(echoed).toEqual({ jsonrpc: '2.0', error: { code: C.PoolClosed, message: expect.any(String) }, id: 42 });
    const text = JSON.parse(await pool.handle('{"jsonrpc":"2.0","method":"echo","params":[1],"id":"seven"}'));
    expect(text.id).toBe('seven');
    expect(text.error.code).toBe(C.PoolClosed);
  });
});

describe('issue 13 §16: packed params (plain data walked once, src/rpc/packed.rs)', () => {
  test('a call started from inside another call’s start (an abort listener) does not overwrite its params', async () => {
    // The packing tape is reused between calls: the outer call's is lent until its native call
    // has copied it, so the inner call, packed in between, must get a tape of its own.
    const pool = new Pool({ threads: 2 });
    try {
      const outer = Array.from({ length: 40 }, (_, i) => ({ i, s: `outer ${i}` }));
      const inner = Array.from({ length: 60 }, (_, i) => ({ j: -i, t: [i, 'inner'] }));
      let innerCall;
      const signal = new AbortController().signal;
      const add = signal.addEventListener;
      signal.addEventListener = function (...args) {
        innerCall = pool.exec('echo', inner);
        return add.apply(this, args);
      };
      const outerCall = pool.call('echo', [outer], { signal });
      expect(await outerCall).toEqual(outer);
      expect(await innerCall).toEqual(inner);
    } finally {
      await pool.close();
    }
  });

  test('a getter among the params that calls the pool while they are walked: both calls get their own params', async () => {
    // The walk's state is module state: a call made from inside the walk goes value by value.
    const pool = new Pool({ threads: 2 });
    try {
      const inner = Array.from({ length: 50 }, (_, i) => ({ k: i, v: `inner ${i}` }));
      let innerCall;
      const rows = Array.from({ length: 50 }, (_, i) => ({ i, s: `outer ${i}` }));
      const outer = {
        head: rows.slice(0, 25),
        get middle() {
          innerCall = pool.exec('echo', inner);
          return 'middle';
        },
        tail: rows.slice(25),
      };
      const back = await pool.exec('echo', outer);
      expect(back).toEqual({ head: rows.slice(0, 25), middle: 'middle', tail: rows.slice(25) });
      expect(await innerCall).toEqual(inner);
    } finally {
      await pool.close();
    }
  });

  test('polluted prototypes: an enumerable Object.prototype key is not sent, index accessors on Array.prototype change nothing', async () => {
    const r = await child(`
      const pool = new Pool({ threads: 1 });
      // Rows of three shapes, and an object of 300 keys (past the walk's first 256 key slots).
      const wide = Object.fromEntries(Array.from({ length: 300 }, (_, i) => ['k' + i, i]));
      const rows = Array.from({ length: 40 }, (_, i) => (i % 3 === 0 ? { i, name: 'n' + i, tags: ['a', 'b'] } : i % 3 === 1 ? { i, other: true } : { j: i }));
      rows.push(wide);
      const want = JSON.stringify(rows);
      Object.prototype.polluted = 'yes';
      const withKey = JSON.stringify(await pool.exec('echo', rows));
      delete Object.prototype.polluted;
      // Accessors that drop writes past an array's end and answer junk, at indexes the walk's
      // own arrays reach (its key slots, its shapes). (Indexes 0-3 break Node's own timers, and
      // corepool's settling: see the stop notes.)
      const at = ['5', '17', '256', '300', '511'];
      for (const i of at) {
        Object.defineProperty(Array.prototype, i, { configurable: true, get() { return 'junk'; }, set() {} });
      }
      const withAccessors = JSON.stringify(await pool.exec('echo', rows));
      for (const i of at) delete Array.prototype[i];
      out({ withKey: withKey === want, withAccessors: withAccessors === want });
      await pool.close();
    `);
    expect(clean(r)).toEqual({ withKey: true, withAccessors: true });
  });
});

describe('issue 13 §15: smaller inconsistencies', () => {
  const pool = new Pool({ threads: 1 });
  afterAll(() => pool.close());

  test('toJSON is treated the same on the small and the big path', async () => {
    const withToJson = (extra) => {
      const o = { a: 1, ...extra };
      Object.defineProperty(o, 'toJSON', { value: () => 'replaced', enumerable: false });
      return o;
    };
    const small = await outcome(pool.exec('echo', withToJson()));
    const big = await outcome(pool.exec('echo', withToJson({ rows: Array.from({ length: 40 }, (_, i) => i) })));
    expect(small.code).toBe(C.InvalidParams);
    expect(big.code).toBe(C.InvalidParams);
    expect(small.message).toMatch(/toJSON/);
  });

  test('a Proxy whose get trap answers a toJSON method is refused as an object with one is (JSON would call it)', async () => {
    // (Asked whether the method was its own, the Proxy answered through getOwnPropertyDescriptor:
    // no; the object crossed with the fields its toJSON leaves out.)
    const user = { name: 'ada', password: 'hunter2' };
    const redacting = (target) => new Proxy(target, { get: (t, k, r) => (k === 'toJSON' ? () => ({ name: t.name }) : Reflect.get(t, k, r)) });
    for (const params of [[redacting(user)], [{ who: redacting(user) }], [redacting(['a', 'b'])], [{ list: redacting([user]) }]]) {
      const got = await outcome(pool.exec('echo', ...params));
      expect(got.code).toBe(C.InvalidParams);
      expect(got.message).toMatch(/has a toJSON method, which JSON would call/);
    }
    // Nor does a view for pool.render make JSON: there the Proxy is a view like any other.
    expect(await pool.render('{{name}}', redacting(user))).toBe('ada');
  });

  test('a getter named length is read once, as JSON.stringify and mustache.js read it', async () => {
    // (The packed walk asked every object for its length, to tell String objects, then read it
    // again as a field: a getter that hands out tickets lost one.)
    const counting = () => {
      const o = { reads: 0, name: 'x' };
      Object.defineProperty(o, 'length', { enumerable: true, get: () => ++o.reads });
      return o;
    };
    const sent = counting();
    expect(await pool.exec('echo', sent)).toEqual({ reads: 0, name: 'x', length: 1 });
    expect(sent.reads).toBe(1);
    const view = counting();
    expect(await pool.render('{{name}} {{length}}', view)).toBe('x 1');
    expect(view.reads).toBe(1);
    const nested = { list: counting() };
    expect(await pool.render('{{list.name}} {{list.length}}', nested)).toBe(Mustache.render('{{list.name}} {{list.length}}', { list: counting() }));
    expect(nested.list.reads).toBe(1);
  });

  test('a Proxy of an array crosses as an array', async () => {
    expect(await pool.exec('echo', new Proxy([1, 2, 3], {}))).toEqual([1, 2, 3]);
    expect(await pool.exec('echo', { list: new Proxy(['a'], {}) })).toEqual({ list: ['a'] });
  });

  test('echo of a shared view is refused clearly instead of answering null', async () => {
    const view = new Int32Array(new SharedArrayBuffer(8));
    const got = await outcome(pool.exec('echo', view));
    expect(got.code).toBe(C.InvalidParams);
    expect(got.message).toMatch(/SharedArrayBuffer/);
  });
});

describe('issue 13, review of the fixes: what a polluted prototype, a Proxy or a getter can still do', () => {
  test('an Array.prototype index setter that drops values cannot free a call’s shared memory', async () => {
    const r = await child(
      `
      const pool = new Pool({ threads: 2 });
      const reference = await pool.exec('happycoin', { attempts: 200000, seed: 7 });
      // Keeps whatever corepool puts in arrays of one element to itself (the views it keeps).
      Object.defineProperty(Array.prototype, '0', { configurable: true, get() { return undefined; },
        set(v) { if (this.length === 1) return; Object.defineProperty(this, '0', { value: v, writable: true, enumerable: true, configurable: true }); } });
      const opts = { attempts: 200000, seed: 7 };
      const calls = [];
      let junk = [];
      let dirty = 0;
      const inspect = () => { dirty += junk.filter((a) => a.some((x) => x !== 0n)).length; junk = []; };
      for (let i = 0; i < 100; i++) {
        opts.into = new BigUint64Array(new SharedArrayBuffer(4096));
        calls.push(pool.exec('happycoin', opts).then((res) => res.count, (e) => 'rejected'));
        opts.into = null;
        for (let j = 0; j < 100; j++) junk.push(new BigUint64Array(new SharedArrayBuffer(4096)));
        if (i % 20 === 0) { global.gc(); await new Promise((r) => setTimeout(r, 1)); inspect(); }
      }
      const counts = await Promise.race([Promise.all(calls), new Promise((r) => setTimeout(r, 30000, null))]);
      inspect();
      delete Array.prototype[0];
      out({ settled: counts !== null, dirty });
      process.exit(0);
      `,
      { args: ['--expose-gc'] },
    );
    // Memory safety holds (no crash, no write into freed memory); that calls settle under such a
    // prototype is not promised (README, Limits).
    expect(clean(r).dirty).toBe(0);
  });

  test('a toJSON on Array.prototype or Object.prototype (inherited) refuses nothing', async () => {
    const r = await child(`
      const pool = new Pool({ threads: 1 });
      const o = (p) => p.then((v) => v, (e) => 'rejected ' + e.code);
      Object.defineProperty(Array.prototype, 'toJSON', { value() { return Array.from(this); }, configurable: true, writable: true });
      const arrays = [await o(pool.exec('echo', 1)), await o(pool.exec('echo', { a: [1] })), (await pool.request({ jsonrpc: '2.0', method: 'echo', params: [1], id: 1 })).result, await o(pool.broadcast('echo', 1))];
      delete Array.prototype.toJSON;
      Object.defineProperty(Object.prototype, 'toJSON', { value() { return this; }, configurable: true, writable: true });
      const objects = [await o(pool.exec('echo', { a: 1 })), await o(pool.exec('square_sum', 4)), await o(pool.exec('echo', new Proxy({ a: 1 }, {})))];
      delete Object.prototype.toJSON;
      await pool.close();
      out({ arrays, objects });
    `);
    const got = clean(r);
    expect(got.arrays).toEqual([1, { a: [1] }, 1, [1]]);
    expect(got.objects[0]).toEqual({ a: 1 });
    expect(typeof got.objects[1]).toBe('number');
    expect(got.objects[2]).toEqual({ a: 1 });
  });

  test('a Proxy of a Map, a Set, a class instance or a Promise is refused like what it stands for', async () => {
    const pool = new Pool({ threads: 1 });
    class Point {
      x = 3;
    }
    for (const v of [new Proxy(new Map([['k', 1]]), {}), new Proxy(new Set([1]), {}), new Proxy(new Point(), {}), new Proxy(Promise.resolve(1), {})]) {
      const got = await outcome(pool.exec('echo', v));
      expect(got.code).toBe(C.InvalidParams);
      expect(got.message).toMatch(/instance of/);
    }
    // A Proxy of a plain object still crosses, through its traps.
    expect(await pool.exec('echo', new Proxy({ a: 1 }, {}))).toEqual({ a: 1 });
    await pool.close();
  });

  test('a signal that fires while the call is being sent (a getter in its params) aborts it', async () => {
    const pool = new Pool({ threads: 1 });
    const ac = new AbortController();
    const params = [300];
    Object.defineProperty(params, 0, { get: () => (ac.abort(), 300), enumerable: true });
    expect(await outcome(pool.call('sleep', params, { signal: ac.signal }))).toMatchObject({ code: C.Aborted });
    await pool.close();
  });

  test('a value that reaches one object 2^30 times is refused without walking it', async () => {
    const r = await child(`
      const pool = new Pool({ threads: 1 });
      let o = { leaf: 1 };
      for (let i = 0; i < 30; i++) o = { a: o, b: o };
      const got = await Promise.race([pool.exec('echo', o).then(() => 'resolved', (e) => e.code), new Promise((r) => setTimeout(r, 50000, 'hung').unref())]);
      await pool.close();
      out(got);
    `);
    expect(clean(r)).toBe(C.InvalidParams);
  });
});
