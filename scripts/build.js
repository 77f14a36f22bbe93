#!/usr/bin/env node
// Builds the release addon with cargo and puts it where index.js looks for it:
// ./corepool.<platform-triple>.node (the napi-rs naming, e.g. corepool.linux-x64-gnu.node).
// It runs as `npm run build`, as npm's `prepare` step in a clone (`npm install`/`npm ci`, and
// before `npm pack`/`npm publish`), and as the installed package's `corepool-build` command:
// the build from source on a platform the package has no binary for. `--native` links
// against this machine's glibc even where cargo-zigbuild could link against the baseline.
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { platformTriple, RUST_TARGETS, GLIBC_BASELINE } = require('../lib/platform.js');

const root = path.join(__dirname, '..');
const profile = process.argv.includes('--debug') ? 'debug' : 'release';
// `--target T` builds for the Rust target T (a cross build, as the release workflow makes);
// otherwise for this machine.
const asked = process.argv.includes('--target') ? process.argv[process.argv.indexOf('--target') + 1] : undefined;
if (asked !== undefined && !RUST_TARGETS[asked]) {
  console.error(`corepool: --target ${asked}: not one of ${Object.keys(RUST_TARGETS).join(', ')}`);
  process.exit(2);
}
const hostTarget = Object.keys(RUST_TARGETS).find((t) => RUST_TARGETS[t].triple === platformTriple());
const target = asked ?? hostTarget;
const triple = asked ? RUST_TARGETS[asked].triple : platformTriple();
// A glibc target is linked against the oldest glibc it may need (GLIBC_BASELINE) whenever
// cargo-zigbuild is there (as under CI, which packs it): a plain cargo build links against this
// machine's glibc, and the binary would not load on older ones.
const zig = RUST_TARGETS[target]?.libc === 'glibc' && !process.argv.includes('--native') && spawnSync('cargo-zigbuild', ['--version']).status === 0;
const args = zig ? ['zigbuild', '--lib', '--target', `${target}.${GLIBC_BASELINE}`] : ['build', '--lib', ...(asked ? ['--target', asked] : [])];
if (profile === 'release') args.push('--release');
const r = spawnSync('cargo', args, { cwd: root, stdio: 'inherit' });
if (r.error) {
  console.error(`corepool: could not run cargo (${r.error.message}). Install Rust from https://rustup.rs and try again.`);
  process.exit(1);
}
if (r.status !== 0) process.exit(r.status ?? 1);

const targetDir = process.env.CARGO_TARGET_DIR || path.join(root, 'target');
const os = asked ? RUST_TARGETS[asked].os : process.platform;
const lib = { linux: 'libcorepool.so', darwin: 'libcorepool.dylib', win32: 'corepool.dll' }[os] || 'libcorepool.so';
const from = zig || asked ? path.join(targetDir, target, profile, lib) : path.join(targetDir, profile, lib);
const to = path.join(root, `corepool.${triple}.node`);
// Copy to a temporary name and rename: a running process that has the old file mapped keeps it.
fs.copyFileSync(from, `${to}.tmp`);
fs.renameSync(`${to}.tmp`, to);
console.log(`corepool: built ${path.basename(to)} (${profile}${zig ? `, glibc ${GLIBC_BASELINE}` : ''})`);
