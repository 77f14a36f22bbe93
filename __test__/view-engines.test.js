'use strict';
// corepool/express and corepool/fastify against real Express 5 and Fastify 5 servers, over
// HTTP: pages with partials render as mustache.js renders them, files are cached, and a change
// on disk is seen.
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

const PAGE = '<h1>{{title}}</h1>\n{{> header}}\n<ul>\n{{#items}}\n  {{> parts/item}}\n{{/items}}\n</ul>\n{{#bold}}{{title}}{{/bold}}';
const HEADER = '<header>{{title}} & {{{title}}}</header>';
const ITEM = '<li>{{name}}: {{price}}</li>\n';
const view = () => ({
  title: 'Tom & <Jerry>',
  items: [
    { name: 'a', cents: 150, price() { return (this.cents / 100).toFixed(2); } },
    { name: 'b<', cents: 5, price() { return (this.cents / 100).toFixed(2); } },
  ],
  bold: () => (text, render) => `<b>${render(text)}</b>`,
});
const expected = () => Mustache.render(PAGE, view(), { header: HEADER, 'parts/item': ITEM });

let pool;
let dir;
beforeAll(() => {
  pool = new Pool({ threads: 2 });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'corepool-views-'));
  fs.mkdirSync(path.join(dir, 'parts'));
  fs.writeFileSync(path.join(dir, 'page.mustache'), PAGE);
  fs.writeFileSync(path.join(dir, 'header.mustache'), HEADER);
  fs.writeFileSync(path.join(dir, 'parts', 'item.mustache'), ITEM);
});
afterAll(async () => {
  await pool.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Polls `url` until `test(body)` holds (a watcher's event arrives a little after the write), or 20 s pass (a hang guard). */
async function eventually(url, test) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const body = await (await fetch(url)).text();
    if (test(body) || Date.now() > deadline) return body;
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('corepool/express renders views with partials and lambdas over HTTP, as mustache.js does', async () => {
  const engine = expressEngine.mustacheEngine({ pool });
  const app = express();
  app.engine('mustache', engine);
  app.set('views', dir);
  app.set('view engine', 'mustache');
  app.get('/', (req, res) => res.render('page', view()));
  app.get('/buffer', (req, res) => res.type('html').render('page', view()));
  app.get('/missing', (req, res) => res.render('nope', view()));
  const server = await listen(app);
  try {
    const res = await fetch(`${server.url}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(await res.text()).toBe(expected());
    expect((await fetch(`${server.url}/missing`)).status).toBe(500);
  } finally {
    await server.close();
    engine.close();
  }

  const bufferEngine = expressEngine.mustacheEngine({ pool, output: 'buffer' });
  app.engine('mustache', bufferEngine);
  const again = await listen(app);
  try {
    const res = await fetch(`${again.url}/buffer`);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(await res.text()).toBe(expected());
  } finally {
    await again.close();
    bufferEngine.close();
  }
});

test('corepool/express reads each file once, and again after it changes on disk', async () => {
  const engine = expressEngine.mustacheEngine({ pool });
  const app = express();
  app.engine('mustache', engine);
  app.set('views', dir);
  app.set('view engine', 'mustache');
  app.get('/', (req, res) => res.render('page', view()));
  const server = await listen(app);
  const readFile = fs.promises.readFile;
  let reads = 0;
  fs.promises.readFile = (...args) => {
    reads++;
    return readFile(...args);
  };
  try {
    await fetch(`${server.url}/`);
    const first = reads;
    expect(first).toBe(3); // the page and two partials
    for (let i = 0; i < 5; i++) expect(await (await fetch(`${server.url}/`)).text()).toBe(expected());
    expect(reads).toBe(first);
    fs.writeFileSync(path.join(dir, 'parts', 'item.mustache'), '<li class="new">{{name}}</li>\n');
    const body = await eventually(`${server.url}/`, (b) => b.includes('class="new"'));
    expect(body).toBe(Mustache.render(PAGE, view(), { header: HEADER, 'parts/item': '<li class="new">{{name}}</li>\n' }));
    expect(reads).toBeGreaterThan(first);
  } finally {
    fs.promises.readFile = readFile;
    fs.writeFileSync(path.join(dir, 'parts', 'item.mustache'), ITEM);
    await server.close();
    engine.close();
  }
});

test('corepool/express follows a change of the views setting, and keeps Express keys out of the view', async () => {
  // The page stays the same file, but its partials come from the first views folder.
  const other = fs.mkdtempSync(path.join(os.tmpdir(), 'corepool-views-'));
  const header = '<header>other</header>{{#settings}}settings{{/settings}}{{#cache}}cache{{/cache}}{{#_locals}}locals{{/_locals}}';
  fs.writeFileSync(path.join(other, 'header.mustache'), header);
  const engine = expressEngine.mustacheEngine({ pool });
  const app = express();
  app.engine('mustache', engine);
  app.set('views', dir);
  app.set('view engine', 'mustache');
  app.set('view cache', false); // Express looks the file up again under the new setting
  app.get('/', (req, res) => res.render('page', view()));
  const server = await listen(app);
  try {
    expect(await (await fetch(`${server.url}/`)).text()).toBe(expected());
    app.set('views', [other, dir]);
    expect(await (await fetch(`${server.url}/`)).text()).toBe(Mustache.render(PAGE, view(), { header: '<header>other</header>' }));
    app.set('views', dir);
    expect(await (await fetch(`${server.url}/`)).text()).toBe(expected());
  } finally {
    await server.close();
    engine.close();
    fs.rmSync(other, { recursive: true, force: true });
  }
});

test('corepool/express does not keep what it read while the file changed', async () => {
  const own = fs.mkdtempSync(path.join(os.tmpdir(), 'corepool-views-'));
  const file = path.join(own, 'page.mustache');
  fs.writeFileSync(file, 'one');
  const engine = expressEngine.mustacheEngine({ pool });
  const render = (locals = {}) => new Promise((resolve, reject) => engine(file, { settings: { views: own }, ...locals }, (e, out) => (e ? reject(e) : resolve(out))));
  const readFile = fs.promises.readFile;
  try {
    // The file changes just after a render read it, and another render reads it again (and
    // watches the folder again) before the first is done: the first shows the old text, but
    // what it read must not be kept over what the second read.
    let wrote = false;
    let second;
    fs.promises.readFile = async (...args) => {
      const text = await readFile(...args);
      if (!wrote) {
        wrote = true;
        fs.writeFileSync(file, 'two');
        await new Promise((r) => setTimeout(r, 200)); // the watcher's event arrives
        second = await render();
      }
      return text;
    };
    expect(await render()).toBe('one');
    expect(second).toBe('two');
    expect(await render()).toBe('two');
    // A getter on the locals that throws fails that render alone.
    await expect(render({ get boom() { throw new Error('boom'); } })).rejects.toThrow('boom');
    expect(await render()).toBe('two');
  } finally {
    fs.promises.readFile = readFile;
    engine.close();
    fs.rmSync(own, { recursive: true, force: true });
  }
});

test('corepool/express refuses bad options with a TypeError naming the option', () => {
  expect(() => expressEngine.mustacheEngine({ pool: {} })).toThrow(/options\.pool must be a corepool Pool/);
  expect(() => expressEngine.mustacheEngine({ pool, output: 'html' })).toThrow(/options\.output must be 'string' or 'buffer'/);
  expect(() => expressEngine.mustacheEngine({ pool, partials: 1 })).toThrow(/options\.partials must be a folder path/);
  expect(() => expressEngine.mustacheEngine(null)).toThrow(TypeError);
});

test('corepool/fastify renders through @fastify/view with partials over HTTP, as mustache.js does', async () => {
  for (const output of ['buffer', 'string']) {
    const app = Fastify();
    await app.register(fastifyView, {
      engine: { mustache: fastifyEngine.mustacheEngine({ pool, output }) },
      root: dir,
      options: { partials: { header: 'header.mustache', 'parts/item': 'parts/item.mustache' } },
    });
    app.get('/', (req, reply) => reply.view('page.mustache', view()));
    await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const res = await fetch(`http://127.0.0.1:${app.server.address().port}/`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(await res.text()).toBe(expected());
    } finally {
      await app.close();
    }
  }
  expect(() => fastifyEngine.mustacheEngine({ output: 1 })).toThrow(/options\.output must be 'string' or 'buffer'/);
});

// What Express's app.locals / res.locals and Fastify's reply.locals routinely hold: Dates,
// class instances with getters, helper functions. Rendered as mustache.js renders them.
const LOCALS_PAGE = '{{title}} at {{now}}|{{#user}}{{name}} ({{initials}}) {{greet}}{{/user}}|{{#shout}}{{user.name}}{{/shout}}|{{now.getTime}}';
class User {
  constructor(name) {
    this.name = name;
  }
  get initials() {
    return this.name
      .split(' ')
      .map((w) => w[0])
      .join('');
  }
  greet() {
    return `hello ${this.name}`;
  }
}
const NOW = new Date(Date.UTC(2026, 11, 2, 9, 30));
const locals = () => ({ title: 'Report <1>', now: NOW, user: new User('Ada Lovelace'), shout: () => (text, render) => render(text).toUpperCase() });

test('corepool/express renders app.locals and res.locals holding a Date, a class instance and a helper as mustache.js does', async () => {
  const own = fs.mkdtempSync(path.join(os.tmpdir(), 'corepool-views-'));
  fs.writeFileSync(path.join(own, 'locals.mustache'), LOCALS_PAGE.replace('|{{now.getTime}}', ''));
  fs.writeFileSync(path.join(own, 'dotted.mustache'), '{{now.getTime}}');
  fs.writeFileSync(path.join(own, 'bytes.mustache'), '{{#items}}{{when}}{{/items}}');
  const engine = expressEngine.mustacheEngine({ pool });
  const app = express();
  app.engine('mustache', engine);
  app.set('views', own);
  app.set('view engine', 'mustache');
  const { title, now, user, shout } = locals();
  Object.assign(app.locals, { now, shout });
  app.use((req, res, next) => {
    res.locals.user = user;
    next();
  });
  app.get('/', (req, res) => res.render('locals', { title }));
  app.get('/dotted', (req, res) => res.render('dotted'));
  app.get('/bytes', (req, res) => res.render('bytes', { items: [{ when: 1 }, { when: new Uint8Array(1) }] }));
  // eslint-disable-next-line no-unused-vars
  app.use((err, req, res, next) => res.status(err.status ?? 500).type('text').send(`${err.constructor.name}: ${err.message}`));
  const server = await listen(app);
  try {
    const res = await fetch(`${server.url}/`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(Mustache.render(LOCALS_PAGE.replace('|{{now.getTime}}', ''), locals()));
    // mustache.js calls Date's getTime with the view as `this`: a TypeError, a 500, as there.
    expect(() => Mustache.render('{{now.getTime}}', locals())).toThrow(TypeError);
    const dotted = await fetch(`${server.url}/dotted`);
    expect([dotted.status, await dotted.text()]).toEqual([500, 'TypeError: this is not a Date object.']);
    // What the renderer still refuses names the locals, not params[1].
    const bytes = await fetch(`${server.url}/bytes`);
    expect(bytes.status).toBe(500);
    expect(await bytes.text()).toMatch(/^RpcError: render: locals\.items\[1\]\.when is a Uint8Array/);
  } finally {
    await server.close();
    engine.close();
    fs.rmSync(own, { recursive: true, force: true });
  }
});

test('corepool/fastify renders reply.locals and the view holding a Date, a class instance and a helper as mustache.js does', async () => {
  const own = fs.mkdtempSync(path.join(os.tmpdir(), 'corepool-views-'));
  const page = LOCALS_PAGE.replace('|{{now.getTime}}', '');
  fs.writeFileSync(path.join(own, 'locals.mustache'), page);
  fs.writeFileSync(path.join(own, 'bytes.mustache'), '{{#items}}{{when}}{{/items}}');
  const app = Fastify();
  await app.register(fastifyView, { engine: { mustache: fastifyEngine.mustacheEngine({ pool }) }, root: own });
  const { title, now, user, shout } = locals();
  app.addHook('preHandler', async (req, reply) => {
    reply.locals = { now, user };
  });
  app.get('/', (req, reply) => reply.view('locals.mustache', { title, shout }));
  app.get('/bytes', (req, reply) => reply.view('bytes.mustache', { items: [{ when: 1 }, { when: new Uint8Array(1) }] }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    const base = `http://127.0.0.1:${app.server.address().port}`;
    const res = await fetch(`${base}/`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(Mustache.render(page, locals()));
    const bytes = await fetch(`${base}/bytes`);
    expect(bytes.status).toBe(500);
    expect((await bytes.json()).message).toMatch(/^render: locals\.items\[1\]\.when is a Uint8Array/);
  } finally {
    await app.close();
    fs.rmSync(own, { recursive: true, force: true });
  }
});
