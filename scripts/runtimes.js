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

/** [{ name, kind, alias, bin, args }] for every runtime runtimes/package.json lists; `alias` is
 *  its key there (`node24`, `bun`). */
function runtimes() {
  const { devDependencies } = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
  return Object.entries(devDependencies).map(([alias, spec]) => {
    const version = spec.slice(spec.lastIndexOf('@') + 1);
    const root = path.join(dir, 'node_modules', alias);
    if (/^node\d+$/.test(alias)) return { name: `Node ${version}`, kind: 'node', alias, bin: path.join(root, 'bin', 'node'), args: [] };
    const kind = KINDS[alias];
    if (!kind) throw new Error(`runtimes/package.json: no way to run "${alias}" is known (scripts/runtimes.js)`);
    return { name: `${kind.label} ${version}`, kind: alias, alias, bin: path.join(root, kind.bin), args: kind.args };
  });
}

/** This machine's own Node, the one running this process, as a runtime (`alias` null). */
function ownNode() {
  return { name: `Node ${process.versions.node}`, kind: 'node', alias: null, bin: process.execPath, args: [] };
}

/**
 * The Node of major version `major` to run on: the pinned one in runtimes/ if there is one
 * (`alias` set), else this machine's own Node if its major is `major` (`alias` null). Throws,
 * naming the Nodes there are, if neither exists or the pinned one is not installed.
 */
function nodeRuntime(major) {
  const own = Number(process.versions.node.split('.')[0]);
  const pinned = runtimes().filter((r) => r.kind === 'node');
  const found = pinned.find((r) => r.alias === `node${major}`);
  if (found) {
    if (!fs.existsSync(found.bin)) throw new Error(`${found.name} is not installed: run \`npm ci --prefix runtimes\``);
    return found;
  }
  if (String(major) === String(own)) return ownNode();
  const majors = [`${own} (this machine's)`, ...pinned.map((r) => r.alias.slice('node'.length))];
  throw new Error(`no Node ${major} here; there are Node ${majors.join(', ')} (runtimes/package.json pins the others)`);
}

/** The alias of the pinned runtime whose binary is `bin` (`node24`), or null for any other
 *  binary, such as this machine's own Node. */
function pinnedAlias(bin) {
  const real = (file) => {
    try {
      return fs.realpathSync(file);
    } catch {
      return null;
    }
  };
  const target = real(bin);
  if (target === null) return null;
  return runtimes().find((r) => real(r.bin) === target)?.alias ?? null;
}

module.exports = { runtimes, ownNode, nodeRuntime, pinnedAlias };
