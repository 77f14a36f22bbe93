'use strict';
// corepool: a pool of native Rust worker threads for Node.js, called JSON-RPC style. The
// JavaScript side lives in lib/, one concept per file; scheduling, the JSON-RPC protocol and the
// shared-memory protocols live in Rust (src/).

const { Pool } = require('./lib/pool.js');
const { RpcError } = require('./lib/errors.js');
const { poolSize } = require('./lib/options.js');
const { Mutex } = require('./lib/shm/mutex.js');
const { OwnedMutex } = require('./lib/shm/owned-mutex.js');
const { ReentrantMutex } = require('./lib/shm/reentrant-mutex.js');
const { FairMutex } = require('./lib/shm/fair-mutex.js');
const { lockAll, lockAllAsync } = require('./lib/shm/lock-all.js');
const { Semaphore } = require('./lib/shm/semaphore.js');
const { RingBuffer } = require('./lib/shm/ring-buffer.js');
const { AsyncLock } = require('./lib/async-lock.js');

module.exports = {
  Pool,
  RpcError,
  poolSize,
  Mutex,
  OwnedMutex,
  ReentrantMutex,
  FairMutex,
  lockAll,
  lockAllAsync,
  Semaphore,
  RingBuffer,
  AsyncLock,
};
