'use strict';
// The runtimes the suite runs on besides the machine's Node. Which ones, and their versions,
// are runtimes/package.json's (one place; its lock file pins them); `npm ci --prefix runtimes`
// installs them into runtimes/node_modules, never globally. This file only says where each
// one's binary lies once installed and how it is started.
const fs = require('node:fs');
const path = require('node:path');

const dir = path.join(__dirname, '..', 'runtimes');

/** How each package's binary is found and run: `node*` are Node, `bun` and `deno` are named. */
const KINDS = {
  bun: { label: 'Bun', bin: 'bin/bun', args: [] },
  deno: { label: 'Deno', bin: 'deno', args: ['run', '--allow-all'] },
};

/** [{ name, kind, bin, args }] for every runtime runtimes/package.json lists. */
function runtimes() {
  const { devDependencies } = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
  return Object.entries(devDependencies).map(([alias, spec]) => {
    const version = spec.slice(spec.lastIndexOf('@') + 1);
    const root = path.join(dir, 'node_modules', alias);
    if (/^node\d+$/.test(alias)) return { name: `Node ${version}`, kind: 'node', bin: path.join(root, 'bin', 'node'), args: [] };
    const kind = KINDS[alias];
    if (!kind) throw new Error(`runtimes/package.json: no way to run "${alias}" is known (scripts/runtimes.js)`);
    return { name: `${kind.label} ${version}`, kind: alias, bin: path.join(root, kind.bin), args: kind.args };
  });
}

module.exports = { runtimes };
