'use strict';
// The napi-rs name of a platform (linux-x64-gnu, linux-arm64-musl, darwin-arm64,
// win32-x64-msvc…): the suffix of the addon's file name and of its per-platform package.

const fs = require('node:fs');

/**
 * Which C library `ldd`'s text (`/usr/bin/ldd`, a script on both) belongs to: true for glibc,
 * false for musl, null when it says neither.
 */
function lddLibc(text) {
  if (text.includes('musl')) return false;
  if (text.includes('GNU C Library') || text.includes('glibc')) return true;
  return null;
}

/**
 * Whether this process runs on glibc. `ldd` names the system's C library at the cost of one
 * small file read, and where it names glibc that is the answer. Elsewhere Node's report (some
 * milliseconds, in every thread that loads the addon) says what this process runs on: a musl
 * system can run a glibc-built Node beside a compatibility layer, and a system without `ldd`
 * (a distroless image) says nothing.
 */
function linuxGlibc() {
  let text = null;
  try {
    text = fs.readFileSync('/usr/bin/ldd', 'latin1');
  } catch {
    // no ldd: ask the report
  }
  if (text !== null && lddLibc(text) === true) return true;
  return Boolean(process.report?.getReport?.().header?.glibcVersionRuntime);
}

/** The facts about this process's platform that its triple is made of. */
function hostPlatform() {
  const { platform, arch } = process;
  // Only Linux has two C libraries to tell apart.
  const glibc = platform === 'linux' && linuxGlibc();
  return { platform, arch, glibc };
}

/** The triple of `host` (this process's platform by default). */
function platformTriple({ platform, arch, glibc } = hostPlatform()) {
  if (platform === 'linux') return `linux-${arch}-${glibc ? 'gnu' : 'musl'}`;
  if (platform === 'win32') return `win32-${arch}-msvc`;
  return `${platform}-${arch}`;
}

/**
 * Each Rust target a binary can be built for, with its napi-rs triple and the os, cpu and libc
 * npm matches a platform package against (package.json's `napi.targets` names which are built).
 */
const RUST_TARGETS = {
  'x86_64-unknown-linux-gnu': { triple: 'linux-x64-gnu', os: 'linux', cpu: 'x64', libc: 'glibc' },
  'aarch64-unknown-linux-gnu': { triple: 'linux-arm64-gnu', os: 'linux', cpu: 'arm64', libc: 'glibc' },
  'x86_64-apple-darwin': { triple: 'darwin-x64', os: 'darwin', cpu: 'x64' },
  'aarch64-apple-darwin': { triple: 'darwin-arm64', os: 'darwin', cpu: 'arm64' },
  'x86_64-pc-windows-msvc': { triple: 'win32-x64-msvc', os: 'win32', cpu: 'x64' },
};

/**
 * The oldest glibc the published linux-*-gnu binaries load on: 2.17, the oldest Rust's standard
 * library supports (RHEL/CentOS 7, Amazon Linux 2, Debian 8, Ubuntu 14.04 and everything
 * since). A build with cargo-zigbuild links against it (scripts/build.js).
 */
const GLIBC_BASELINE = '2.17';

module.exports = { platformTriple, hostPlatform, lddLibc, RUST_TARGETS, GLIBC_BASELINE };
