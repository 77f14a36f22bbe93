'use strict';
// The addon, loaded the way napi-rs loaders do, and the contract it hands over at load: every
// name, code, flag and limit shared by this side and Rust is defined in Rust
// (src/bindings/contract.rs) and read from here.
//
// Where the binary comes from: a build in this package's folder (a clone builds it in npm's
// `prepare` step; `corepool-build` builds it from the packed sources), else the corepool-<triple>
// package, which npm installs from corepool's optionalDependencies on the platform it fits
// (scripts/packages.js). Installing never runs a build, so when no binary fits this system the
// error says how to build one from source: the package's own `corepool-build` command
// (scripts/build.js), which writes the file this loader looks for first.

const path = require('node:path');
const { platformTriple } = require('./platform.js');

const packageRoot = path.join(__dirname, '..');

function buildFromSource() {
  return (
    'Build it from source (needs Rust, https://rustup.rs) from your project directory:\n' +
    '  npx --no corepool-build\n' +
    `which runs: node ${path.join(packageRoot, 'scripts', 'build.js')}`
  );
}

/** The addon for `triple`, from `dir`'s corepool.<triple>.node or the corepool-<triple> package. */
function loadAddon(triple = platformTriple(), dir = packageRoot) {
  const local = path.join(dir, `corepool.${triple}.node`);
  for (const candidate of [local, `corepool-${triple}`]) {
    try {
      return require(candidate);
    } catch (e) {
      // A binary that is there but does not load (linked against a newer glibc than this
      // system's, say) is replaced by a build from source just as well as a missing one.
      if (e.code === 'ERR_DLOPEN_FAILED') {
        throw new Error(`corepool: ${path.basename(candidate)} does not load on this system: ${e.message}\n${buildFromSource()}`, {
          cause: e,
        });
      }
      if (e.code !== 'MODULE_NOT_FOUND') throw e;
    }
  }
  throw new Error(
    `corepool: no native binary for ${triple} (looked for ${path.basename(local)} and the package corepool-${triple}).\n` +
      buildFromSource(),
  );
}

const native = loadAddon();
const contract = Object.freeze(native.contract());

module.exports = { native, contract, loadAddon };
