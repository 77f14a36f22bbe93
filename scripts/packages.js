#!/usr/bin/env node
// The packages a release publishes, the napi-rs way: one `corepool-<triple>` package per
// target of package.json's `napi.targets`, carrying that platform's binary and nothing else,
// and `corepool` itself, carrying no binary, naming each platform package it was staged with
// in `optionalDependencies` at its own version. npm installs only the one whose os, cpu and
// libc fit the machine, and runs no script; lib/native.js loads it.
//
//   node scripts/packages.js stage OUT_DIR [BINARIES_DIR]
//       writes OUT_DIR/corepool and OUT_DIR/corepool-<triple> for each corepool.<triple>.node
//       found in BINARIES_DIR (default: the package root, where scripts/build.js puts it)
//   node scripts/packages.js publish OUT_DIR [npm publish flags…]
//       publishes the staged platform packages, then corepool
'use strict';
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const { RUST_TARGETS } = require('../lib/platform.js');

const root = path.join(__dirname, '..');

/** The platforms of package.json's `napi.targets`, each with its package's name and binary. */
function platforms(manifest = readJson(path.join(root, 'package.json'))) {
  return manifest.napi.targets.map((target) => {
    const p = RUST_TARGETS[target];
    if (!p) throw new Error(`package.json napi.targets: no npm platform is known for ${target} (scripts/packages.js)`);
    return { target, ...p, name: `${manifest.napi.packageName}-${p.triple}`, binary: `${manifest.napi.binaryName}.${p.triple}.node` };
  });
}

function readJson(file) {
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

function writeJson(file, value) {
  fs.writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

/**
 * Stages the packages into `out`: the platform packages whose binary is in `binaries`, and
 * corepool (npm pack of this checkout, scripts not run) naming them. Returns the directories.
 */
function stage(out, binaries = root) {
  const manifest = readJson(path.join(root, 'package.json'));
  fs.mkdirSync(out, { recursive: true });
  const staged = [];
  for (const p of platforms(manifest)) {
    const from = path.join(binaries, p.binary);
    if (!fs.existsSync(from)) continue;
    const dir = path.join(out, p.name);
    fs.rmSync(dir, { recursive: true, force: true });
    fs.mkdirSync(dir);
    fs.copyFileSync(from, path.join(dir, p.binary));
    fs.copyFileSync(path.join(root, 'LICENSE'), path.join(dir, 'LICENSE'));
    fs.writeFileSync(path.join(dir, 'README.md'), `# ${p.name}\n\nThe ${p.target} binary of [${manifest.name}](https://www.npmjs.com/package/${manifest.name}); install ${manifest.name}, which depends on it.\n`);
    writeJson(path.join(dir, 'package.json'), {
      name: p.name,
      version: manifest.version,
      description: `The ${p.target} binary of ${manifest.name}`,
      main: p.binary,
      files: [p.binary],
      os: [p.os],
      cpu: [p.cpu],
      ...(p.libc ? { libc: [p.libc] } : {}),
      license: manifest.license,
      repository: manifest.repository,
      engines: manifest.engines,
    });
    staged.push({ ...p, dir });
  }
  const tarball = JSON.parse(execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', out], { cwd: root, encoding: 'utf8' }))[0].filename;
  const main = path.join(out, manifest.name);
  fs.rmSync(main, { recursive: true, force: true });
  fs.mkdirSync(main);
  execFileSync('tar', ['-xzf', path.join(out, tarball), '-C', main, '--strip-components=1']);
  fs.rmSync(path.join(out, tarball));
  const packed = readJson(path.join(main, 'package.json'));
  packed.optionalDependencies = Object.fromEntries(staged.map((p) => [p.name, manifest.version]));
  writeJson(path.join(main, 'package.json'), packed);
  return { main, platforms: staged };
}

/** Publishes what `stage` wrote to `out`: the platform packages first, so corepool's resolve. */
function publish(out, flags = []) {
  const main = readJson(path.join(root, 'package.json')).name;
  const dirs = fs.readdirSync(out).filter((d) => d.startsWith(`${main}-`));
  for (const dir of [...dirs, main]) execFileSync('npm', ['publish', '--ignore-scripts', ...flags], { cwd: path.join(out, dir), stdio: 'inherit' });
}

if (require.main === module) {
  const [command, out, ...rest] = process.argv.slice(2);
  if (command === 'stage' && out) {
    const { main, platforms: staged } = stage(path.resolve(out), rest[0] ? path.resolve(rest[0]) : root);
    console.log(`staged ${path.basename(main)} with ${staged.map((p) => p.name).join(', ') || 'no platform package'}`);
  } else if (command === 'publish' && out) publish(path.resolve(out), rest);
  else {
    console.error('usage: node scripts/packages.js stage OUT_DIR [BINARIES_DIR] | publish OUT_DIR [npm publish flags…]');
    process.exit(2);
  }
}

module.exports = { platforms, stage, publish };
