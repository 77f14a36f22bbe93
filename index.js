'use strict';
// corepool: a pool of native Rust worker threads for Node.js, called JSON-RPC style. The
// JavaScript side lives in lib/, one concept per file; scheduling, the JSON-RPC protocol and the
// shared-memory protocols live in Rust (src/).

const { Pool } = require('./lib/pool.js');
const { RpcError } = require('./lib/errors.js');
const { poolSize } = require('./lib/options.js');
const { Mutex } = require('./lib/shm/mutex.js');
const { Semaphore } = require('./lib/shm/semaphore.js');
const { RingBuffer } = require('./lib/shm/ring-buffer.js');
const { AsyncLock } = require('./lib/async-lock.js');

module.exports = { Pool, RpcError, poolSize, Mutex, Semaphore, RingBuffer, AsyncLock };
