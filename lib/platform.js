'use strict';
// The napi-rs name of a platform (linux-x64-gnu, linux-arm64-musl, darwin-arm64,
// win32-x64-msvc…): the suffix of the addon's file name and of its per-platform package.

/** The facts about this process's platform that its triple is made of. */
function hostPlatform() {
  const { platform, arch } = process;
  // Only Linux has two C libraries to tell apart; a report is costly, so ask nowhere else.
  const glibc = platform === 'linux' && Boolean(process.report?.getReport?.().header?.glibcVersionRuntime);
  return { platform, arch, glibc };
}

/** The triple of `host` (this process's platform by default). */
function platformTriple({ platform, arch, glibc } = hostPlatform()) {
  if (platform === 'linux') return `linux-${arch}-${glibc ? 'gnu' : 'musl'}`;
  if (platform === 'win32') return `win32-${arch}-msvc`;
  return `${platform}-${arch}`;
}

/**
 * The oldest glibc the published linux-*-gnu binaries load on: 2.17, the oldest Rust's standard
 * library supports (RHEL/CentOS 7, Amazon Linux 2, Debian 8, Ubuntu 14.04 and everything
 * since). A build with cargo-zigbuild links against it (scripts/build.js).
 */
const GLIBC_BASELINE = '2.17';

module.exports = { platformTriple, GLIBC_BASELINE };
