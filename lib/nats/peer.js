'use strict';
// The NATS client packages are optional peer dependencies of corepool/nats: loaded here, on
// first use, so that `require('corepool')` never loads them and a missing one is named.

function load(name) {
  try {
    return require(name);
  } catch (e) {
    if (e?.code === 'MODULE_NOT_FOUND' && String(e.message).includes(name)) {
      throw new Error(`corepool/nats needs the package ${name} (an optional peer dependency): npm install ${name}`, { cause: e });
    }
    throw e;
  }
}

let core = null;
let jetstream = null;

/** @nats-io/transport-node: headers() for a host's answers. */
function natsClient() {
  core ??= load('@nats-io/transport-node');
  return core;
}

/** @nats-io/jetstream: durable jobs. */
function jetstreamClient() {
  jetstream ??= load('@nats-io/jetstream');
  return jetstream;
}

module.exports = { natsClient, jetstreamClient };
