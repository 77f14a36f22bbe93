'use strict';
// A hostile review of pool.render's newer features (functions and lambdas in views, config,
// data as JSON text, Buffer output, the view engines): each test pins a case that once broke,
// against mustache.js 4.2.0 where it has an answer.
const fc = require('fast-check');
const Mustache = require('mustache');
const { Pool, RpcError } = require('..');
const { viaMustache, viaPool, agree } = require('./render-cases.js');

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

test('tags made of whitespace close a tag as mustache.js does ([" ", " "], ["\\n", "\\n"])', async () => {
  const view = { a: 'A<', b: [1, 2] };
  for (const tags of [[' ', ' '], ['\n', '\n'], ['! ', ' '], ['<%', ' %>']]) {
    const [open, close] = tags;
    const template = `${open}a${close} ${open}#b${close}${open}.${close}${open}/b${close} x ${open}{a}${close}`;
    const c = { template, data: view, partials: {}, config: tags };
    Mustache.clearCache();
    const theirs = viaMustache(c);
    expect(await viaPool(pool, c)).toEqual(theirs.ok === undefined ? { error: theirs.error, code: RpcError.codes.CommandFailed } : theirs);
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
