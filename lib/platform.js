'use strict';
// The napi-rs name of this platform (linux-x64-gnu, linux-arm64-musl, darwin-arm64,
// win32-x64-msvc…): the suffix of the addon's file name and of its per-platform package.

function platformTriple() {
  const { platform, arch } = process;
  if (platform === 'linux') {
    const glibc = process.report?.getReport?.().header?.glibcVersionRuntime;
    return `linux-${arch}-${glibc ? 'gnu' : 'musl'}`;
  }
  if (platform === 'win32') return `win32-${arch}-msvc`;
  return `${platform}-${arch}`;
}

module.exports = { platformTriple };
