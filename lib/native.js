'use strict';
// The addon, loaded the way napi-rs loaders do, and the contract it hands over at load: every
// name, code, flag and limit shared by this side and Rust is defined in Rust
// (src/bindings/contract.rs) and read from here.

const path = require('node:path');
const { platformTriple } = require('./platform.js');

function load() {
  const triple = platformTriple();
  const local = path.join(__dirname, '..', `corepool.${triple}.node`);
  const tried = [];
  for (const candidate of [local, `corepool-${triple}`]) {
    try {
      return require(candidate);
    } catch (e) {
      if (e.code !== 'MODULE_NOT_FOUND' && !/cannot open shared object|no such file/i.test(e.message)) throw e;
      tried.push(candidate === local ? path.basename(local) : candidate);
    }
  }
  throw new Error(
    `corepool: no native binary for ${triple} (looked for ${tried.join(' and ')}).\n` +
      'Build it from source (needs Rust, https://rustup.rs):\n' +
      '  npm install-scripts approve corepool && npm rebuild corepool\n' +
      '(with npm 11 or older: npm rebuild corepool)',
  );
}

const native = load();
const contract = Object.freeze(native.contract());

module.exports = { native, contract };
