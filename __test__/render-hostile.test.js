'use strict';
// A hostile review of pool.render's newer features (functions and lambdas in views, config,
// data as JSON text, Buffer output, the view engines): each test pins a case that once broke,
// against mustache.js 4.2.0 where it has an answer.
const Mustache = require('mustache');
const { Pool, RpcError } = require('..');

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
