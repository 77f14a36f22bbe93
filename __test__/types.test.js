'use strict';
// index.d.ts must match what index.js exports, and the README must document every export.
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
  for (const m of methods) expect([m, body.includes(`${m}(`) || body.includes(`get ${m}`) || body.includes(`readonly ${m}`)]).toEqual([m, true]);
});

test('the README documents every export', () => {
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
  for (const name of declared) expect([name, readme.includes(`\`${name}`)]).toEqual([name, true]);
});

test("index.d.ts's Strategy names are the native contract's", () => {
  const { contract } = require('../lib/native.js');
  const union = dts.match(/^export type Strategy = (.*);$/m)[1];
  const names = [...union.matchAll(/'(\w+)'/g)].map((m) => m[1]);
  expect(names).toEqual(contract.strategies);
});
