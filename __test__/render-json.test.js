'use strict';
// pool.render with `config.data: 'json'`: the view arrives as JSON text and is parsed on the
// pool thread. Its output must be byte for byte the render of `JSON.parse(text)`, which the
// render tests hold to mustache.js's.
const Mustache = require('mustache');
const { Pool, RpcError } = require('..');
const { viaMustache, viaPool, agree, CaseGenerator, C } = require('./helpers/render-cases.js');

let pool;
beforeAll(() => {
  pool = new Pool({ threads: 2 });
});
afterAll(() => pool.close());

/** The case's config with `data: 'json'` added (an array config is mustache.js's tags). */
function withJson(config) {
  if (Array.isArray(config)) return { tags: config, data: 'json' };
  if (config !== null && typeof config === 'object') return { ...config, data: 'json' };
  return { data: 'json' };
}

/** `c` with its data as JSON text, and the view that text stands for (`JSON.parse(text)`). */
function asJson(c) {
  const text = JSON.stringify(c.data) ?? 'null';
  const parsed = JSON.parse(text);
  return {
    fromText: { ...c, data: text, partials: c.partials ?? null, config: withJson(c.config) },
    fromView: { ...c, data: parsed, partials: c.partials ?? null, config: c.config ?? {} },
    // mustache.js's `escape: false` is unset; the generator gives it the identity instead.
    viaMustache: { ...c, data: parsed },
  };
}

async function expectSameAsParsed(cases) {
  const BATCH = 256;
  for (let i = 0; i < cases.length; i += BATCH) {
    const batch = cases.slice(i, i + BATCH).map(asJson);
    const fromText = await Promise.all(batch.map((c) => viaPool(pool, c.fromText)));
    const fromView = await Promise.all(batch.map((c) => viaPool(pool, c.fromView)));
    for (let j = 0; j < batch.length; j++) {
      const where = `case ${i + j}: template ${JSON.stringify(batch[j].fromText.template)}, data ${batch[j].fromText.data}`;
      expect([where, fromText[j]]).toEqual([where, fromView[j]]);
      if (!agree(viaMustache(batch[j].viaMustache), fromText[j])) {
        throw new Error(`${where}: mustache.js ${JSON.stringify(viaMustache(batch[j].viaMustache))}, corepool ${JSON.stringify(fromText[j])}`);
      }
    }
  }
}

test('12,000 seeded random cases: JSON text renders exactly as its JSON.parse does, and as mustache.js', async () => {
  const generator = new CaseGenerator(20261130);
  await expectSameAsParsed(Array.from({ length: 12000 }, () => generator.case()));
});

test('3,000 seeded random cases with tags and escape in config: the same from JSON text', async () => {
  const generator = new CaseGenerator(20261131);
  await expectSameAsParsed(Array.from({ length: 3000 }, () => generator.caseWithConfig()));
});

test('JSON text with functions elsewhere in the call: an escape function, Buffer output, exec and handle', async () => {
  const text = '{"a":"<b>","list":[{"n":1},{"n":2}]}';
  const template = '{{a}}{{#list}}[{{n}}]{{/list}}';
  const escape = (v) => `(${v})`;
  expect(await pool.render(template, text, null, { data: 'json', escape })).toBe(Mustache.render(template, JSON.parse(text), null, { escape }));
  const bytes = await pool.render(template, text, null, { data: 'json', output: 'buffer' });
  expect(Buffer.isBuffer(bytes)).toBe(true);
  expect(bytes.toString('utf8')).toBe(Mustache.render(template, JSON.parse(text)));
  expect(await pool.exec('render', template, text, null, { data: 'json' })).toBe('&lt;b&gt;[1][2]');
  const answer = JSON.parse(await pool.handle(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'render', params: [template, text, null, { data: 'json' }] })));
  expect(answer).toEqual({ jsonrpc: '2.0', id: 1, result: '&lt;b&gt;[1][2]' });
  // data: 'view' (the default) takes a string as the view itself.
  expect(await pool.render('{{.}}', '{"a":1}', null, { data: 'view' })).toBe(Mustache.render('{{.}}', '{"a":1}'));
});

test('text that is not JSON is InvalidParams with the parser position; data that is not a string too', async () => {
  for (const [text, message] of [
    ['{"a":1,', /^render: data is not JSON text \(config\.data is 'json'\): EOF while parsing a value at line 1 column 7$/],
    ['{"a":\n  tru}', /: expected ident at line 2 column 6$/],
    ["{'a':1}", /: key must be a string at line 1 column 2$/],
    ['[NaN]', /: expected value at line 1 column 2$/],
    ['{} {}', /: trailing characters at line 1 column 4$/],
    ['', /: EOF while parsing a value at line 1 column 0$/],
  ]) {
    const e = await pool.render('{{a}}', text, null, { data: 'json' }).catch((err) => err);
    expect(e).toBeInstanceOf(RpcError);
    expect([text, e.code, e.message]).toEqual([text, C.InvalidParams, expect.stringMatching(message)]);
  }
  for (const [data, kind] of [
    [{ a: 1 }, 'object'],
    [null, 'null'],
    [7, 'number'],
    [Buffer.from('{}'), 'Uint8Array'],
  ]) {
    const e = await pool.render('{{a}}', data, null, { data: 'json' }).catch((err) => err);
    expect([e.code, e.message]).toEqual([C.InvalidParams, `render: config.data is 'json', so data must be a string of JSON text, got ${kind}`]);
  }
  for (const data of ['JSON', true, 1, {}]) {
    const e = await pool.render('{{a}}', '{}', null, { data }).catch((err) => err);
    expect([e.code, e.message]).toEqual([C.InvalidParams, expect.stringMatching(/^render: config\.data must be 'view' \(data is the view\) or 'json'/)]);
  }
});

test('hostile JSON text: nesting, __proto__, lone surrogates, out-of-range numbers, repeated keys, size', async () => {
  const J = { data: 'json' };
  // Nested past 512 levels: a clear InvalidParams, never a stack overflow. JSON says it is too
  // deep; text left open is not JSON, however deep (issue #28: it was called too deep), and
  // says where it ends.
  const tooDeep = '['.repeat(513) + ']'.repeat(513);
  const e = await pool.render('{{a}}', tooDeep, null, J).catch((err) => err);
  expect([e.code, e.message]).toEqual([C.InvalidParams, "render: data, JSON text (config.data is 'json'): it is nested more than 512 levels deep"]);
  for (const [text, where] of [
    ['{"a":'.repeat(200000), 'line 1 column 1000000'],
    ['['.repeat(1e6), 'line 1 column 1000000'],
  ]) {
    expect(() => JSON.parse(text)).toThrow(SyntaxError);
    const err = await pool.render('{{a}}', text, null, J).catch((x) => x);
    expect([err.code, err.message]).toEqual([C.InvalidParams, `render: data is not JSON text (config.data is 'json'): EOF while parsing a value at ${where}`]);
  }
  const deepest = '['.repeat(512) + ']'.repeat(512);
  expect(await pool.render('{{#.}}x{{/.}}', deepest, null, J)).toBe(Mustache.render('{{#.}}x{{/.}}', JSON.parse(deepest)));
  // What JSON.parse makes of them, rendered as mustache.js renders that.
  for (const [template, text] of [
    ['{{__proto__.a}}|{{a}}|{{#__proto__}}{{a}}{{/__proto__}}', '{"__proto__":{"a":1}}'],
    ['[{{__proto__}}]', '{"__proto__":null}'],
    ['{{n}}|{{m}}|{{z}}|{{t}}', '{"n":1e400,"m":-1e400,"z":-0,"t":1e-400}'],
    ['{{d}}|{{#o}}{{d}}{{/o}}', '{"d":1,"o":{"d":2,"d":3},"d":4}'],
    ['{{s}}', '{"s":"\\ud83d\\ude00 \\u00e9 \\u2028 \\"<&>\\""}'],
  ]) {
    expect([text, await pool.render(template, text, null, J)]).toEqual([text, Mustache.render(template, JSON.parse(text))]);
  }
  // A lone surrogate, escaped or not, becomes U+FFFD as any string does on its way into native
  // code: the same as rendering JSON.parse(text) with corepool.
  for (const text of ['{"s":"\\ud800x"}', '{"s":"\ud800x"}']) {
    expect(await pool.render('{{s}}', text, null, J)).toBe('\ufffdx');
    expect(await pool.render('{{s}}', JSON.parse(text))).toBe('\ufffdx');
  }
  // Big text crosses as one string; the count is what JSON.parse sees.
  const big = `[${'"x",'.repeat(2e6)}1]`;
  expect(await pool.render('{{length}}', big, null, J)).toBe(String(JSON.parse(big).length));
  // Text that looks like code is only text.
  expect(await pool.render('{{f}}', '{"f":"function () { return 1 }"}', null, J)).toBe('function () { return 1 }');
});
