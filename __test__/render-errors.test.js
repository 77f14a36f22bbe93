'use strict';
// Template errors with a place (issue #32): a parse error keeps mustache.js's message and adds
// the template's name, line, column and the offending line with a caret; `error.data` holds the
// same. Through pool.render, with and without config.name (the view engines:
// view-engine-errors.test.js).
const Mustache = require('mustache');
const { Pool, RpcError } = require('..');

const C = RpcError.codes;

/** mustache.js's message for `template` (with `partials`). */
function mustacheMessage(template, partials) {
  try {
    Mustache.render(template, {}, partials);
  } catch (e) {
    return e.message;
  }
  throw new Error(`mustache.js renders ${JSON.stringify(template)}`);
}

/** The error pool.render rejects with. */
async function failure(...params) {
  try {
    await pool.render(...params);
  } catch (e) {
    return e;
  }
  throw new Error('the render did not fail');
}

const LIST = '<h1>{{title}}</h1>\n<ul>\n    {{#items}}\n  <li>{{name}}</li>\n</ul>\n';

let pool;
beforeAll(() => {
  pool = new Pool({ threads: 2 });
});
afterAll(() => pool.close());

test('a parse error without a name: mustache.js message, then line, column and caret; data says the same', async () => {
  const e = await failure(LIST, {});
  expect(e).toBeInstanceOf(RpcError);
  expect(e.code).toBe(C.CommandFailed);
  // The section left open is shown where it opens (mustache.js's position is the text's end).
  expect(e.message).toBe(`${mustacheMessage(LIST)} (line 3, column 5)\n  3 |     {{#items}}\n    |     ^`);
  expect(e.data).toEqual({ template: null, partial: null, line: 3, column: 5, offset: 28 });
});

test('config.name names the template in the message and in data', async () => {
  const e = await failure(LIST, {}, null, { name: 'views/list.mustache' });
  expect(e.message).toBe(`${mustacheMessage(LIST)} (views/list.mustache, line 3, column 5)\n  3 |     {{#items}}\n    |     ^`);
  expect(e.data).toEqual({ template: 'views/list.mustache', partial: null, line: 3, column: 5, offset: 28 });
  // With other tags too, and whatever the error.
  const tagged = await failure('a\n<% /x %>', {}, null, { tags: ['<%', '%>'], name: 't' });
  expect(tagged.message).toBe('Unopened section "x" at 2 (t, line 2, column 1)\n  2 | <% /x %>\n    | ^');
  const unclosed = await failure('ok\n{{a', {}, null, { name: 't' });
  expect(unclosed.message).toBe(`${mustacheMessage('ok\n{{a')} (t, line 2, column 1)\n  2 | {{a\n    | ^`);
});

test('config.name must be a string', async () => {
  for (const name of [1, true, {}, ['a']]) {
    const e = await failure('{{a}}', {}, null, { name });
    expect([e.code, e.message]).toEqual([C.InvalidParams, expect.stringMatching(/^render: config\.name must be a string/)]);
  }
  // null and undefined are no name.
  await expect(pool.render('{{a}}', { a: 1 }, null, { name: null })).resolves.toBe('1');
  await expect(pool.render('{{a}}', { a: 1 }, null, { name: undefined })).resolves.toBe('1');
});

test('a parse error in a partial names the partial, and the template that renders it', async () => {
  const partials = { row: 'row\n  {{/row}}\n' };
  const template = '{{#items}}{{> row}}{{/items}}';
  const view = { items: [1] };
  const words = mustacheMessage('{{> row}}', partials);
  const bare = await failure(template, view, partials);
  expect(bare.message).toBe(`${words} (partial "row", line 2, column 3)\n  2 |   {{/row}}\n    |   ^`);
  expect(bare.data).toEqual({ template: null, partial: 'row', line: 2, column: 3, offset: 6 });
  const named = await failure(template, view, partials, { name: 'page.mustache' });
  expect(named.message.split('\n')[0]).toBe(`${words} (partial "row" in page.mustache, line 2, column 3)`);
  expect(named.data).toEqual({ template: 'page.mustache', partial: 'row', line: 2, column: 3, offset: 6 });
});

test('columns count characters (code points); offsets are UTF-16 units, as mustache.js counts', async () => {
  // é is one UTF-16 unit, 😀 two; each is one column.
  const template = 'x\né😀 {{#a}}';
  const e = await failure(template, {});
  expect(e.message).toBe(`${mustacheMessage(template)} (line 2, column 4)\n  2 | é😀 {{#a}}\n    |    ^`);
  expect(e.data).toMatchObject({ line: 2, column: 4, offset: 6 });
});

test('CRLF lines show without the CR; tabs stay under the caret', async () => {
  const template = 'a\r\n\t\t{{/b}}\r\nc';
  const e = await failure(template, {});
  expect(e.message).toBe(`${mustacheMessage(template)} (line 2, column 3)\n  2 | \t\t{{/b}}\n    | \t\t^`);
});

test('a parse error of a render whose view holds functions has its place too', async () => {
  const e = await failure(LIST, { title: () => 'T' }, null, { name: 'list' });
  expect(e.message.split('\n')[0]).toBe(`${mustacheMessage(LIST)} (list, line 3, column 5)`);
  expect(e.data).toEqual({ template: 'list', partial: null, line: 3, column: 5, offset: 28 });
});


test('a partial that does not parse, met while functions are called on this thread, has its place in data too', async () => {
  // The section's function runs on this thread, and its body (with the partial) renders then.
  const partials = { p: 'x\n{{#open}}' };
  const words = mustacheMessage('{{> p}}', partials);
  const e = await failure('{{#f}}{{> p}}{{/f}}', { f: () => [1] }, partials, { name: 'page' });
  expect(e).toBeInstanceOf(RpcError);
  expect(e.message).toBe(`${words} (partial "p" in page, line 2, column 1)\n  2 | {{#open}}\n    | ^`);
  expect(e.data).toEqual({ template: 'page', partial: 'p', line: 2, column: 1, offset: 2 });
});

test("an indented partial's place is in the partial's own text, as its file holds it", async () => {
  const partials = { row: 'a\n{{/x}}\n' };
  const template = '<ul>\n  {{> row}}\n</ul>';
  const e = await failure(template, {}, partials);
  expect(e.message).toBe(`${mustacheMessage(template, partials)} (partial "row", line 2, column 1)\n  2 | {{/x}}\n    | ^`);
  expect(e.data).toEqual({ template: null, partial: 'row', line: 2, column: 1, offset: 2 });
});
