'use strict';
// The native `render` command against mustache.js 4.2.0 itself: tricky cases, every spec case,
// and seeded random templates with data and partials. Any difference fails, and prints the
// smallest template (found by deleting pieces while it still differs).
const fs = require('node:fs');
const path = require('node:path');
const { Pool, RpcError } = require('..');
const { unlessHung } = require('./helpers/order.js');
const { expectAgreement, mulberry32, CaseGenerator, C } = require('./helpers/render-cases.js');

// ---- the tests ----

let pool;
beforeAll(() => {
  pool = new Pool();
});
afterAll(() => pool.close());

test('tricky cases render exactly as mustache.js renders them', async () => {
  const cases = [
    ['{{a}} {{{a}}} {{&a}}', { a: `<b class="x">'&'/\`=</b>` }],
    ['{{n}}|{{m}}|{{i}}|{{z}}|{{e}}|{{l}}', { n: NaN, m: -Infinity, i: 1e21, z: -0, e: 1e-7, l: [NaN, -0, null, [1, [2]], {}, true] }],
    ['{{#e}}E{{/e}}{{^e}}!E{{/e}}{{#o}}O{{/o}}{{#z}}Z{{/z}}{{^n}}N{{/n}}{{^nan}}NaN{{/nan}}', { e: [], o: {}, z: '0', n: 0, nan: NaN }],
    ['{{#s}}{{.}}{{length}}{{/s}}|{{#n}}{{.}}{{/n}}|{{s.length}}|{{s.1}}|{{l.length}}{{l.0}}', { s: 'héllo😀', n: 5, l: [7], length: 'L' }],
    ['{{#a}}{{b.c}}{{/a}}', { a: { b: {} }, b: { c: 'ERROR' } }],
    ['{{.a}}|{{a.}}|{{a..b}}|{{ a }}', { '.a': 1, a: { '': 2 } }],
    ['  {{#a}} {{/a}}  \r\n{{#b}}\r\nx\r\n{{/b}}\r\n', { a: true, b: [1, 2] }],
    ['ab{{>p}}\n  {{>p}}\n😀{{>p}} z\n\u00a0\t{{>p}}\n', {}, { p: 'x\ny\n' }],
    // A template of one byte per unit, not ASCII (read natively as Latin-1).
    ['Zoë & café {{a}} \u00ff\u0080{{#b}}ñ{{/b}}\u00a0', { a: 'ü€', b: [1, 2] }],
    ['{{=<% %>=}}<%a%> <%{a}%> <%={{ }}=%>{{a}}', { a: '<' }],
    ['{{=a b c=}}a x b', { x: 1 }],
    ['{{#list}}{{name}}{{/list}}', { list: [{ name: 1 }, null] }],
    ['{{o}}', { o: { toString: 'x' } }],
    ['{{{o}}}', { o: { valueOf: 'x' } }],
    ['{{<parent}}{{$block}}x{{/block}}{{/parent}}', { parent: 1 }],
    ['é😀{{a', {}],
    ['{{#a}}{{/b}}', {}],
    ['{{/a}}', {}],
    ['{{=<%=}}', {}],
    ['{{a}}', undefined],
    ['{{#o}}{{a}}{{/o}}|{{^o.a}}none{{/o.a}}', { a: 'outer', o: { a: undefined } }],
    ['{{>p}}', {}, { p: 'a{{>p}}' }],
    ['{{>tree}}', { name: 'root', kids: [{ name: 'a', kids: [{ name: 'b', kids: [] }] }] }, { tree: '<{{name}}{{#kids}}{{>tree}}{{/kids}}>' }],
  ].map(([template, data, partials]) => ({ template, data, partials }));
  await expectAgreement(pool, cases);
});

test('doubles of every magnitude print exactly as JavaScript prints them', async () => {
  // 2,000 finite doubles from random bit patterns: enough values that the params travel as
  // JSON text, whose parse must give back the very same doubles.
  const random = mulberry32(7);
  const bits = new Uint32Array(2);
  const double = new Float64Array(bits.buffer);
  const l = [];
  while (l.length < 2000) {
    bits[0] = random() * 2 ** 32;
    bits[1] = random() * 2 ** 32;
    if (Number.isFinite(double[0])) l.push(double[0]);
  }
  await expectAgreement(pool, [{ template: '{{#l}}{{.}},{{/l}}', data: { l } }]);
});

test('every spec case (core and optional modules) renders exactly as with mustache.js', async () => {
  const dir = path.join(__dirname, 'fixtures', 'mustache-spec');
  const cases = [];
  for (const file of fs.readdirSync(dir).filter((f) => f.endsWith('.json'))) {
    for (const t of JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')).tests) {
      cases.push({ name: `${file}: ${t.name}`, template: t.template, data: t.data, partials: t.partials });
    }
  }
  expect(cases).toHaveLength(136 + 21 + 27 + 10);
  await expectAgreement(pool, cases);
});

test('12,000 seeded random templates, data and partials render exactly as with mustache.js', async () => {
  const generator = new CaseGenerator(20240604);
  const cases = Array.from({ length: 12000 }, () => generator.case());
  await expectAgreement(pool, cases);
});

test('3,000 seeded random cases with other tags (config) render exactly as with mustache.js', async () => {
  const generator = new CaseGenerator(20261201);
  const cases = Array.from({ length: 3000 }, () => generator.caseWithConfig());
  await expectAgreement(pool, cases);
});

test('tags and escape in config, with partials and nested sections, as mustache.js', async () => {
  const cases = [
    ['<%a%>{{a}}<%#s%>[<%b%>|<%>p%>]<%/s%><%={{ }}=%>{{a}}', { a: '<&>', s: [{ b: 1 }, { b: 2 }] }, { p: '<%b%>{{b}}' }, ['<%', '%>']],
    ['[[#a]][[#b]]([[.]]/[[c]])[[/b]][[^b]]none[[/b]][[/a]]', { a: [{ b: [1, 2], c: '<' }, { b: [] }] }, {}, { tags: ['[[', ']]'] }],
    ['{{{x}}}{{x}}', { x: '<' }, {}, { tags: ['{{{', '}}}'] }],
    ['|>p| |#a| |>p| |/a|', { a: { v: '"' } }, { p: '  |v|\n|{v}|' }, ['|', '|']],
    ['{{a}}', { a: '<' }, {}, { tags: null }],
    ['<%a%>', { a: 1 }, {}, 'ignored'],
  ].map(([template, data, partials, config]) => ({ template, data, partials, config }));
  await expectAgreement(pool, cases);
  const identity = (v) => v;
  await expectAgreement(pool, [
    { template: '{{a}}|{{{a}}}|{{n}}|{{l}}|{{o}}', data: { a: `<"'&>`, n: 1e21, l: [1, '<'], o: {} }, config: { escape: false }, mustacheConfig: { escape: identity } },
    { template: '<%a%>', data: { a: '<' }, partials: {}, config: { tags: ['<%', '%>'], escape: 'none' }, mustacheConfig: { tags: ['<%', '%>'], escape: identity } },
    { template: '{{a}}', data: { a: '<' }, config: { escape: 'html' }, mustacheConfig: {} },
  ]);
});

test("exec('render') takes the same four params: tags, escape choices, JSON text, bytes as a Buffer", async () => {
  const data = { a: '<&>' };
  expect(await pool.exec('render', '<%a%>|{{a}}', data, null, ['<%', '%>'])).toBe('&lt;&amp;&gt;|{{a}}');
  expect(await pool.exec('render', '{{a}}', data, undefined, { escape: false })).toBe('<&>');
  expect(await pool.exec('render', '{{a}}', JSON.stringify(data), {}, { data: 'json', escape: 'none' })).toBe('<&>');
  const bytes = await pool.exec('render', '{{a}}é', data, {}, { output: 'buffer' });
  expect(Buffer.isBuffer(bytes)).toBe(true);
  expect(bytes.toString('utf8')).toBe('&lt;&amp;&gt;é');
  // JSON-RPC text carries the bytes as numbers; a Uint8Array param still comes back as one.
  const answer = await pool.handle(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'render', params: ['{{a}}é', data, {}, { output: 'buffer' }] }));
  expect(JSON.parse(answer).result).toEqual([...Buffer.from('&lt;&amp;&gt;é')]);
  const echoed = await pool.exec('echo', new Uint8Array([1, 2]));
  expect([Buffer.isBuffer(echoed), echoed instanceof Uint8Array, [...echoed]]).toEqual([false, true, [1, 2]]);
  const e = await pool.exec('render', '{{a}}', data, {}, { escape: (v) => v }).catch((err) => err);
  expect([e.code, e.message]).toEqual([C.InvalidParams, expect.stringMatching(/escape is a function.*except in pool\.render.s view/)]);
});

test('a bad config is refused with InvalidParams naming the option', async () => {
  for (const [config, message] of [
    [['<%'], /config must be two non-empty delimiter strings/],
    [{ tags: ['', '%>'] }, /config\.tags must be two non-empty delimiter strings/],
    [{ tags: '<% %>' }, /config\.tags must be/],
    [{ escape: 1 }, /config\.escape must be a function, 'html', 'none' or false/],
    [{ output: 'stream' }, /config\.output must be 'string' or 'buffer'/],
  ]) {
    const e = await pool.render('{{a}}', {}, {}, config).catch((err) => err);
    expect(e).toBeInstanceOf(RpcError);
    expect([e.code, e.message]).toEqual([C.InvalidParams, expect.stringMatching(message)]);
  }
  const e = await pool.render('{{a}}', {}, {}, {}, 'fifth').catch((err) => err);
  expect(e.code).toBe(C.InvalidParams);
});

test('data the native renderer cannot take is refused with InvalidParams, naming the place in the view', async () => {
  for (const [data, kind] of [
    [{ bytes: new Uint8Array([1]) }, /^render: view\.bytes is a Uint8Array/],
    [{ a: { b: [new Int32Array(new SharedArrayBuffer(8))] } }, /^render: view\.a\.b\[0\] is a Int32Array/],
  ]) {
    const e = await pool.render('{{a}}', data).catch((err) => err);
    expect(e).toBeInstanceOf(RpcError);
    expect(e.code).toBe(C.InvalidParams);
    expect(e.message).toMatch(kind);
    expect(e.message).toMatch(/mustache\.js/);
  }
  const e = await pool.render('{{>p}}', {}, { p: 5 }).catch((err) => err);
  expect([e.code, e.message]).toEqual([C.InvalidParams, 'render: partials.p must be a template string, got number']);
});

test('a render that runs too long stops at its timeout, and the worker goes on serving', async () => {
  const a = Array.from({ length: 1000 }, (_, i) => i);
  // 10^9 values: minutes of work. A call's timeout stops it where it next looks at its deadline
  // and only then answers Timeout; one that never looks would render them all first.
  const call = pool.call('render', ['{{#a}}{{#a}}{{#a}}{{.}}{{/a}}{{/a}}{{/a}}', { a }], { timeout: 50 });
  const e = await unlessHung(call, 'the render did not stop at its timeout').catch((err) => err);
  expect(e).toBeInstanceOf(RpcError);
  expect(e.code).toBe(C.Timeout);
  expect(await pool.render('{{a}}', { a: 'still here' })).toBe('still here');
});

test("output: 'buffer': small results of one batch share a bounded Buffer, each its own bytes; larger ones have their own", async () => {
  // Outputs around the size at which results stop being slices of a shared Buffer (4 KiB), and
  // many at once so that they settle in batches; each must hold exactly its own text.
  const sizes = [1, 2, 100, 2400, 4094, 4095, 4096, 4097, 9000, 40000];
  const outputs = [];
  const pending = [];
  for (let i = 0; i < 600; i++) {
    const size = sizes[i % sizes.length];
    const text = `${i}:`.padEnd(size, String.fromCharCode(97 + (i % 26)));
    outputs.push(text);
    pending.push(pool.render('{{{t}}}', { t: text }, undefined, { output: 'buffer' }));
  }
  const got = await Promise.all(pending);
  const shared = new Map();
  got.forEach((buf, i) => {
    expect(Buffer.isBuffer(buf)).toBe(true);
    expect(buf.byteLength).toBe(outputs[i].length);
    expect(buf.toString('latin1')).toBe(outputs[i]);
    if (buf.byteLength < 4096) {
      // A slice keeps at most 32 KiB alive.
      expect(buf.buffer.byteLength).toBeLessThanOrEqual(32 * 1024);
      shared.set(buf.buffer, (shared.get(buf.buffer) ?? 0) + 1);
    } else expect([buf.byteOffset, buf.buffer.byteLength]).toEqual([0, buf.byteLength]);
  });
  // Writing into one result changes no other.
  got[0].fill(0x2a);
  got.slice(1).forEach((buf, i) => expect(buf.toString('latin1')).toBe(outputs[i + 1]));
  expect(Math.max(...shared.values())).toBeGreaterThan(1);
  // An empty output is an empty Buffer.
  const empty = await pool.render('{{t}}', {}, undefined, { output: 'buffer' });
  expect([Buffer.isBuffer(empty), empty.byteLength]).toEqual([true, 0]);
});

test("output: 'buffer': transferring one small output's memory to another thread leaves the other outputs intact", async () => {
  const { MessageChannel } = require('node:worker_threads');
  const texts = Array.from({ length: 64 }, (_, i) => `out ${i}`);
  const got = await Promise.all(texts.map((t) => pool.render('{{t}}', { t }, undefined, { output: 'buffer' })));
  // Transferring the memory of a Buffer shared with other results must not empty them (Node's
  // own Buffer pool is untransferable for the same reason: postMessage copies it instead). One
  // that shares it: a result settled alone has a Buffer of its own, which transferring moves.
  const i = got.findIndex((b) => got.some((other) => other !== b && other.buffer === b.buffer));
  expect(i).toBeGreaterThanOrEqual(0);
  // What the runtime does with its own pool's memory in a transfer list is what it must do
  // with ours: Node 20 copies it, Node 21 and later throw a DataCloneError.
  const transfer = (buf) => {
    const { port1, port2 } = new MessageChannel();
    try {
      port1.postMessage(buf, [buf.buffer]);
      return 'sent';
    } catch (e) {
      return e.name;
    } finally {
      port1.close();
      port2.close();
    }
  };
  const nodesOwn = Buffer.from('from the pool of Node itself');
  expect(nodesOwn.buffer.byteLength).toBeGreaterThan(nodesOwn.byteLength);
  expect(transfer(got[i])).toBe(transfer(nodesOwn));
  expect(got.map((b) => b.toString())).toEqual(texts);
});

test("output: 'buffer': a small output that comes back alone is a Buffer of its own, transferable without a copy", async () => {
  const { MessageChannel } = require('node:worker_threads');
  const out = await pool.render('<p>{{t}}</p>', { t: 'alone' }, undefined, { output: 'buffer' });
  expect([out.toString(), out.byteOffset, out.buffer.byteLength]).toEqual(['<p>alone</p>', 0, 12]);
  const { port1, port2 } = new MessageChannel();
  port1.postMessage(out, [out.buffer]);
  port1.close();
  port2.close();
  expect(out.byteLength).toBe(0); // moved, not copied: nothing else shared its memory
});

test("output: 'buffer': the shared memory behind small outputs holds nothing but their bytes (no stale memory)", async () => {
  // Outputs of 3000–3900 bytes do not fill a 32 KiB shared Buffer exactly: the room left at
  // its end must not show whatever the allocator's memory held before.
  let seen = 0;
  for (let round = 0; round < 20; round++) {
    const got = await Promise.all(Array.from({ length: 40 }, (_, i) => pool.render('{{{t}}}', { t: 'x'.repeat(3000 + (i % 7) * 150) }, undefined, { output: 'buffer' })));
    const owned = new Map();
    for (const b of got) {
      if (!owned.has(b.buffer)) owned.set(b.buffer, new Uint8Array(b.buffer.byteLength));
      owned.get(b.buffer).fill(1, b.byteOffset, b.byteOffset + b.byteLength);
    }
    for (const [memory, mine] of owned) {
      const all = new Uint8Array(memory);
      for (let k = 0; k < all.length; k++) {
        if (mine[k] === 0) {
          seen++;
          if (all[k] !== 0) throw new Error(`byte ${k} of a shared Buffer (${all.length} bytes) belongs to no output but holds ${all[k]}`);
        }
      }
    }
  }
  expect(seen).toBeGreaterThan(0);
});
