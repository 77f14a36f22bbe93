'use strict';
// Issue #17: corepool/express against mustache-express 1.3.2 on the page route: an Express 5
// server (a child process) renders template-render.js's page template from a views folder
// through each engine, and a third app sends the page pre-rendered (`res.send`, no engine, no
// render): the reference, what Express itself does here. It is not a strict ceiling:
// corepool/express, which answers after an await, measured 1.09× of it over 5 interleaved rounds
// (results of commit 9a68479). This process loads them with autocannon (10 connections), the
// routes in interleaved rounds (5 rounds of 5 s, as the ratio moved ±0.1 between runs of 3
// rounds on 2 cores; --quick: 1 of 2 s), after checking that both bodies are mustache.js's
// output. Results in bench/results/express-engines.json.
//
//   node bench/express-engines.js [--quick]
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { fork } = require('node:child_process');
const { Suite, quick } = require('./harness');

const SECONDS = quick ? 2 : 5;

async function serve(dir) {
  const express = require('express');
  const mustacheExpress = require('mustache-express');
  const { Pool } = require('..');
  const { mustacheEngine } = require('corepool/express');
  const data = { me: 'Thomas', you: 'Katelyn' };
  const pool = new Pool({ threads: os.availableParallelism() });
  const apps = {};
  for (const [name, engine] of [
    ['mustache-express', mustacheExpress()],
    ['corepool', mustacheEngine({ pool })],
  ]) {
    const app = express();
    app.engine('mustache', engine);
    app.set('views', dir);
    app.set('view engine', 'mustache');
    app.set('view cache', true);
    app.get('/', (req, res) => res.render('page', data));
    apps[name] = app;
  }
  // The reference: the same page, rendered once, through Express's own send.
  const rendered = require('mustache').render(fs.readFileSync(path.join(dir, 'page.mustache'), 'utf8'), data);
  const bare = express();
  bare.get('/', (req, res) => res.send(rendered));
  apps['pre-rendered'] = bare;
  const ports = {};
  for (const [name, app] of Object.entries(apps)) {
    await new Promise((resolve) => {
      const server = app.listen(0, '127.0.0.1', () => {
        ports[name] = server.address().port;
        resolve();
      });
    });
  }
  process.on('disconnect', () => process.exit(0));
  process.send(ports);
}

async function main() {
  const autocannon = require('autocannon');
  const Mustache = require('mustache');
  const { TEMPLATES } = require('./template-render.js');
  const { template, data } = TEMPLATES.page;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'corepool-bench-views-'));
  fs.writeFileSync(path.join(dir, 'page.mustache'), template);
  const suite = new Suite('express-engines', { runs: 5, warmup: 1, quickRuns: 1 });
  suite.log(`${os.availableParallelism()} cores; autocannon, 10 connections, ${SECONDS} s per run`);
  const child = fork(__filename, ['--serve', dir]);
  const ports = await new Promise((resolve) => child.once('message', resolve));
  try {
    const expected = Mustache.render(template, data);
    for (const [name, port] of Object.entries(ports)) {
      const body = await (await fetch(`http://127.0.0.1:${port}/`)).text();
      if (body !== expected) throw new Error(`${name}: body differs from mustache.js's output`);
    }
    const run = (port, duration) => autocannon({ url: `http://127.0.0.1:${port}/`, connections: 10, duration });
    const p99 = new Map(Object.keys(ports).map((name) => [name, []]));
    await suite.interleave(
      Object.entries(ports).map(([name, port]) => ({
        label: name,
        unit: 'req/s',
        fn: async () => {
          const r = await run(port, SECONDS);
          if (r.errors || r.non2xx) throw new Error(`${name}: ${r.errors} errors, ${r.non2xx} non-2xx responses`);
          p99.get(name).push(r.latency.p99);
          return r.requests.average;
        },
      })),
    );
    for (const [name, values] of p99) suite.record(`${name} latency p99`, 'ms latency p99', values.slice(-suite.runs));
    suite.ratio('corepool/express vs mustache-express, page', 'corepool', 'mustache-express', 1.5);
    suite.ratio('pre-rendered page (no engine) vs mustache-express', 'pre-rendered', 'mustache-express');
    suite.ratio('corepool/express vs the pre-rendered page (no engine)', 'corepool', 'pre-rendered');
    suite.note('Express 5 in a child process, the page template from a views folder, view cache on; both bodies checked against mustache.js first.');
    suite.note(
      'pre-rendered: Express sending the page rendered once (res.send, no engine): what Express itself does here, the reference ' +
        'for both engines; not a strict ceiling (corepool/express, which answers after an await, has measured above it).',
    );
    suite.save();
  } finally {
    child.kill();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--serve') {
  serve(process.argv[3]).catch((e) => {
    console.error(e);
    process.exit(1);
  });
} else {
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
}
