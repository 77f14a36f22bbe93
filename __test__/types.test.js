'use strict';
// index.d.ts must match what index.js exports, and the API reference (docs/api.md) must document
// every export.
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const dts = fs.readFileSync(path.join(root, 'index.d.ts'), 'utf8');
const exported = Object.keys(require('..')).sort();
const declared = [...dts.matchAll(/^export declare (?:class|function|const) (\w+)/gm)].map((m) => m[1]).sort();

test('index.d.ts declares exactly the runtime exports', () => {
  expect(declared).toEqual(exported);
});

test('every Pool method in index.js has a declaration', () => {
  const { Pool } = require('..');
  const methods = Object.getOwnPropertyNames(Pool.prototype).filter((m) => m !== 'constructor');
  const poolDecl = dts.slice(dts.indexOf('export declare class Pool'));
  const body = poolDecl.slice(0, poolDecl.indexOf('\n}\n'));
  const declares = (m) => new RegExp(`^  (?:get |readonly )?${m}\\b`, 'm').test(body);
  for (const m of methods) expect([m, declares(m)]).toEqual([m, true]);
});

test('index.d.ts compiles under tsc --strict, accepts the documented uses and refuses the wrong ones', () => {
  // __test__/types/usage.ts: each @ts-expect-error there must be an error, or tsc fails.
  const { spawnSync } = require('node:child_process');
  const tscPkg = require.resolve('typescript/package.json');
  const tsc = path.join(path.dirname(tscPkg), require(tscPkg).bin.tsc);
  const args = ['--noEmit', '--strict', '--target', 'es2022', '--lib', 'es2022,esnext.disposable', '--module', 'commonjs', '--types', 'node'];
  const r = spawnSync(process.execPath, [tsc, ...args, path.join(__dirname, 'types', 'usage.ts')], { encoding: 'utf8' });
  expect(r.stdout + r.stderr).toBe('');
  expect(r.status).toBe(0);
}, 60_000);

test('the API reference (docs/api.md) documents every export and every Pool method', () => {
  const api = fs.readFileSync(path.join(root, 'docs', 'api.md'), 'utf8');
  for (const name of declared) expect([name, api.includes(`\`${name}`)]).toEqual([name, true]);
  const { Pool } = require('..');
  const methods = Object.getOwnPropertyNames(Pool.prototype).filter((m) => m !== 'constructor');
  for (const m of [...methods, 'shared']) expect([m, new RegExp(`\\bpool\\.${m}\\b|\\bPool\\.${m}\\b`).test(api)]).toEqual([m, true]);
});

test("index.d.ts's Strategy names are the native contract's", () => {
  const { contract } = require('../lib/native.js');
  const union = dts.match(/^export type Strategy = (.*);$/m)[1];
  const names = [...union.matchAll(/'(\w+)'/g)].map((m) => m[1]);
  expect(names).toEqual(contract.strategies);
});

test('nats.d.ts declares exactly the runtime exports of corepool/nats', () => {
  const natsDts = fs.readFileSync(path.join(root, 'nats.d.ts'), 'utf8');
  const natsDeclared = [...natsDts.matchAll(/^export declare (?:class|function|const) (\w+)/gm)].map((m) => m[1]).sort();
  expect(natsDeclared).toEqual(Object.keys(require('../lib/nats.js')).sort());
});

test('metrics.d.ts declares exactly the runtime exports of corepool/metrics', () => {
  const metricsDts = fs.readFileSync(path.join(root, 'metrics.d.ts'), 'utf8');
  const metricsDeclared = [...metricsDts.matchAll(/^export declare (?:class|function|const) (\w+)/gm)].map((m) => m[1]).sort();
  expect(metricsDeclared).toEqual(Object.keys(require('../lib/metrics.js')).sort());
});

test('every integration entry point is a file in lib/, its types the .d.ts of its name at the root', () => {
  const { exports } = require('../package.json');
  const integrations = Object.keys(exports).filter((key) => !['.', './package.json'].includes(key));
  expect(integrations).toEqual(expect.arrayContaining(['./express', './fastify', './nats', './metrics']));
  for (const key of integrations) {
    const name = key.slice(2);
    expect([key, exports[key]]).toEqual([key, { types: `./${name}.d.ts`, default: `./lib/${name}.js` }]);
    expect([key, fs.existsSync(path.join(root, 'lib', `${name}.js`)), fs.existsSync(path.join(root, `${name}.d.ts`))]).toEqual([key, true, true]);
  }
});
