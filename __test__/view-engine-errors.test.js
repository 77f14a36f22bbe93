'use strict';
// Template errors with a place (issue #32) through corepool/express and corepool/fastify, on
// real Express 5 and Fastify 5 servers: a broken view reaches the framework's error handler as
// an Error with status 500 whose message (mustache.js's, then the file, line, column and the
// line with a caret) the default handlers show.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const express = require('express');
const Fastify = require('fastify');
const fastifyView = require('@fastify/view');
const Mustache = require('mustache');
const { Pool } = require('..');
const expressEngine = require('corepool/express');
const fastifyEngine = require('corepool/fastify');
const { listen } = require('./helpers/http.js');

/** mustache.js's message for `template` (with `partials`). */
function mustacheMessage(template, partials) {
  try {
    Mustache.render(template, {}, partials);
  } catch (e) {
    return e.message;
  }
  throw new Error(`mustache.js renders ${JSON.stringify(template)}`);
}

const LIST = '<h1>{{title}}</h1>\n<ul>\n    {{#items}}\n  <li>{{name}}</li>\n</ul>\n';

let pool;
let dir;
beforeAll(() => {
  pool = new Pool({ threads: 2 });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'corepool-errors-'));
  fs.mkdirSync(path.join(dir, 'parts'));
  fs.writeFileSync(path.join(dir, 'list.mustache'), LIST);
  fs.writeFileSync(path.join(dir, 'page.mustache'), '<h1>{{title}}</h1>\n{{> parts/row}}\n');
  fs.writeFileSync(path.join(dir, 'parts', 'row.mustache'), 'row\n{{/row}}\n');
  fs.writeFileSync(path.join(dir, 'ok.mustache'), '<p>{{title}}</p>');
});
afterAll(async () => {
  await pool.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

test('corepool/express: a broken view gives Express a 500 error naming the file and the line', async () => {
  const engine = expressEngine.mustacheEngine({ pool });
  const app = express();
  app.engine('mustache', engine);
  app.set('views', dir);
  app.set('view engine', 'mustache');
  app.get('/list', (req, res) => res.render('list', { title: 'T' }));
  app.get('/page', (req, res) => res.render('page', { title: 'T' }));
  app.get('/ok', (req, res) => res.render('ok', { title: 'T' }));
  const seen = [];
  app.use((err, req, res, next) => {
    seen.push(err);
    next(err); // Express's own handler answers
  });
  const server = await listen(app);
  try {
    const res = await fetch(`${server.url}/list`);
    expect(res.status).toBe(500);
    // Express's default handler shows the stack (outside production), whose first line is the message.
    expect(await res.text()).toContain('(list.mustache, line 3, column 5)');
    const [err] = seen;
    expect(err).toBeInstanceOf(Error);
    expect(err.message).toBe(`${mustacheMessage(LIST)} (list.mustache, line 3, column 5)\n  3 |     {{#items}}\n    |     ^`);
    expect([err.status, err.statusCode]).toEqual([500, 500]);
    expect(err.data).toEqual({ template: 'list.mustache', partial: null, line: 3, column: 5, offset: 28 });
    // The stack's first frame is the view's file at the line and column (not lib/calls.js).
    const header = `${err.name}: ${err.message}\n`;
    expect(err.stack.startsWith(header)).toBe(true);
    expect(err.stack.slice(header.length).split('\n')[0]).toBe(`    at list.mustache (${path.join(dir, 'list.mustache')}:3:5)`);

    // A broken partial: named by its name, in the view's file.
    expect((await fetch(`${server.url}/page`)).status).toBe(500);
    expect(seen[1].message.split('\n')[0]).toBe(`${mustacheMessage('{{> p}}', { p: 'row\n{{/row}}\n' })} (partial "parts/row" in page.mustache, line 2, column 1)`);
    expect(seen[1].data).toEqual({ template: 'page.mustache', partial: 'parts/row', line: 2, column: 1, offset: 4 });
    expect(seen[1].stack).toContain(`\n    at parts/row (${path.join(dir, 'parts', 'row.mustache')}:2:1)\n`);

    // The name does not get in the way of a view that renders.
    expect(await (await fetch(`${server.url}/ok`)).text()).toBe('<p>T</p>');
  } finally {
    await server.close();
    engine.close();
  }
});

test('corepool/fastify: a broken view gives Fastify a 500 error naming the file and the line', async () => {
  const app = Fastify();
  await app.register(fastifyView, {
    engine: { mustache: fastifyEngine.mustacheEngine({ pool, root: dir }) },
    root: dir,
    options: { partials: { 'parts/row': 'parts/row.mustache' } },
  });
  const logged = [];
  app.setErrorHandler((err, req, reply) => {
    logged.push(err);
    reply.send(err); // Fastify's default reply for an error
  });
  app.get('/list', (req, reply) => reply.view('list.mustache', { title: 'T' }));
  app.get('/page', (req, reply) => reply.view('page.mustache', { title: 'T' }));
  app.get('/ok', (req, reply) => reply.view('ok.mustache', { title: 'T' }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  const url = `http://127.0.0.1:${app.server.address().port}`;
  try {
    const res = await fetch(`${url}/list`);
    expect(res.status).toBe(500);
    const body = await res.json();
    const message = `${mustacheMessage(LIST)} (list.mustache, line 3, column 5)\n  3 |     {{#items}}\n    |     ^`;
    expect(body).toMatchObject({ statusCode: 500, message });
    expect(logged[0]).toBeInstanceOf(Error);
    expect(logged[0].statusCode).toBe(500);
    expect(logged[0].data).toEqual({ template: 'list.mustache', partial: null, line: 3, column: 5, offset: 28 });
    expect(logged[0].stack).toContain(`\n    at list.mustache (${path.join(dir, 'list.mustache')}:3:5)\n`);

    const page = await fetch(`${url}/page`);
    expect(page.status).toBe(500);
    expect((await page.json()).message.split('\n')[0]).toBe(`${mustacheMessage('{{> p}}', { p: 'row\n{{/row}}\n' })} (partial "parts/row" in page.mustache, line 2, column 1)`);

    expect(await (await fetch(`${url}/ok`)).text()).toBe('<p>T</p>');
  } finally {
    await app.close();
  }
});

test('corepool/fastify without root: the error has the line and column, and no file', async () => {
  const app = Fastify();
  await app.register(fastifyView, { engine: { mustache: fastifyEngine.mustacheEngine({ pool }) }, root: dir });
  app.get('/list', (req, reply) => reply.view('list.mustache', {}));
  await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    const res = await fetch(`http://127.0.0.1:${app.server.address().port}/list`);
    expect(res.status).toBe(500);
    expect((await res.json()).message).toBe(`${mustacheMessage(LIST)} (line 3, column 5)\n  3 |     {{#items}}\n    |     ^`);
  } finally {
    await app.close();
  }
  expect(() => fastifyEngine.mustacheEngine({ root: 1 })).toThrow(/options\.root must be a folder path/);
});
