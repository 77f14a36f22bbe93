'use strict';

const { types } = require('node:util'); // realm-proof type checks, unlike instanceof
const { native, contract } = require('../native.js');
const { RpcError, CODES, invalidParams, fromNative, describe } = require('../errors.js');
const { checkTimeout, deadline, waitSlice, waitSliceAsync } = require('./wait.js');

// The book's layout and lock word, as src/shm/ring.rs and src/shm/mutex.rs define them.
const { headerBytes: RING_HEADER, lock: RING_LOCK, length: RING_LENGTH, maxCapacity: RING_MAX_CAPACITY } = contract.ring;
const { locked: LOCKED } = contract.mutex;

/** Arrays up to this size are copied through one long-lived array per RingBuffer, so the native
 *  side always sees the same off-heap memory (a fresh small typed array lives on the V8 heap and
 *  would have to be moved off it at every native call). */
const RING_STAGING = 16384;
/** Atomics.load polls of the length word before sleeping on it: the other side is often
 *  running on another core and about to move bytes. */
const RING_SPIN = 1000;

function checkBytes(what, data) {
  if (!types.isUint8Array(data)) {
    throw invalidParams(`${what} must be a Uint8Array, got ${ArrayBuffer.isView(data) ? data.constructor.name : describe(data)}`);
  }
}

function lockTimeout(what, timeoutMs) {
  return new RpcError(CODES.Timeout, `${what}: the ring buffer's lock stayed taken for ${timeoutMs} ms: raise timeoutMs or hold the lock for less time`);
}

function checkCount(what, n) {
  if (!(Number.isSafeInteger(n) && n >= 0)) throw invalidParams(`${what} must be a whole number ≥ 0, got ${describe(n)}`);
}

/**
 * The book's SharedRingBuffer (src/shm/ring.rs): a byte FIFO in a SharedArrayBuffer laid out
 * as lock word, head, tail, length, then data from byte 16. Bytes move natively under the
 * lock; a reader that finds it empty or a writer that finds it full sleeps on the length word,
 * and the operation that takes the ring out of that state wakes it.
 */
class RingBuffer {
  #buffer;
  #meta;
  #capacity;
  #write;
  #readInto;
  #staging;

  /** @param sharedOrCapacity a SharedArrayBuffer (laid out as above) or a capacity in bytes. */
  constructor(sharedOrCapacity) {
    let sab = sharedOrCapacity;
    if (typeof sab === 'number') {
      if (!(Number.isInteger(sab) && sab >= 1 && sab <= RING_MAX_CAPACITY)) {
        throw invalidParams(`RingBuffer: capacity must be a whole number from 1 to ${RING_MAX_CAPACITY}, got ${describe(sab)}`);
      }
      sab = new SharedArrayBuffer(RING_HEADER + sab);
    } else if (!types.isSharedArrayBuffer(sab)) {
      throw invalidParams(`RingBuffer: expected a SharedArrayBuffer or a capacity in bytes, got ${describe(sab)}`);
    } else if (sab.growable) {
      // The layout keeps no capacity: it is the buffer's size, which must not change under it.
      throw invalidParams('RingBuffer: a growable SharedArrayBuffer cannot hold a ring buffer (its capacity would change); pass a fixed-length one');
    }
    try {
      [this.#write, this.#readInto] = native.shmRing(new Uint8Array(sab));
    } catch (e) {
      throw fromNative(e);
    }
    this.#buffer = sab;
    this.#meta = new Int32Array(sab, 0, RING_HEADER / Int32Array.BYTES_PER_ELEMENT);
    this.#capacity = sab.byteLength - RING_HEADER;
    // Over 64 bytes, so V8 allocates it off-heap from the start.
    this.#staging = new Uint8Array(Math.max(128, Math.min(this.#capacity, RING_STAGING)));
  }

  /** The SharedArrayBuffer: post it to a worker and wrap it there with `new RingBuffer(buffer)`. */
  get buffer() {
    return this.#buffer;
  }

  get capacity() {
    return this.#capacity;
  }

  /** Bytes stored now (a snapshot). */
  get length() {
    return Atomics.load(this.#meta, RING_LENGTH) >>> 0;
  }

  /** One native attempt on the first `limit` bytes of `array`: bytes moved, or -1 when the lock stayed taken. */
  #call(isWrite, array, limit) {
    let r;
    try {
      r = isWrite ? this.#write(array, limit) : this.#readInto(array, limit);
    } catch (e) {
      throw fromNative(e);
    }
    if (r < 0) return -1;
    // The lock was taken and released natively: wake a lock waiter, as the mutex protocol says;
    // wake the length word's sleepers only when the ring left the state they sleep in.
    Atomics.notify(this.#meta, RING_LOCK, 1);
    if (r & 1) Atomics.notify(this.#meta, RING_LENGTH);
    return r >>> 1;
  }

  /** One attempt to move `bytes` (source or target): bytes moved (0: full / empty), or -1 when the lock stayed taken. */
  #move(isWrite, bytes) {
    const n = bytes.length;
    const length = Atomics.load(this.#meta, RING_LENGTH) >>> 0;
    if (n === 0 || (isWrite ? length >= this.#capacity : length === 0)) return 0;
    const staging = this.#staging;
    if (n > staging.length) return this.#call(isWrite, bytes, n);
    if (isWrite) {
      staging.set(bytes);
      return this.#call(true, staging, n);
    }
    const got = this.#call(false, staging, n);
    if (got > 0) bytes.set(staging.subarray(0, got));
    return got;
  }

  /** The value the length word holds while the other side must act (full for writes, empty for reads). */
  #stuckAt(isWrite) {
    return isWrite ? this.#capacity | 0 : 0;
  }

  /** Polls the length word briefly; true as soon as it leaves `stuck`. */
  #spinWhile(stuck) {
    for (let i = 0; i < RING_SPIN; i++) {
      if (Atomics.load(this.#meta, RING_LENGTH) !== stuck) return true;
    }
    return false;
  }

  /** Moves all of `bytes`, or as much as fits before `until`; returns the count. Blocks. */
  #moveAll(isWrite, bytes, until) {
    let done = 0;
    while (done < bytes.length) {
      const n = this.#move(isWrite, done === 0 ? bytes : bytes.subarray(done));
      if (n > 0) {
        done += n;
      } else if (n < 0) {
        if (!waitSlice(this.#meta, RING_LOCK, LOCKED, until)) break;
      } else if (!this.#spinWhile(this.#stuckAt(isWrite)) && !waitSlice(this.#meta, RING_LENGTH, this.#stuckAt(isWrite), until)) {
        break;
      }
    }
    return done;
  }

  async #moveAllAsync(isWrite, bytes, until) {
    let done = 0;
    while (done < bytes.length) {
      const n = this.#move(isWrite, done === 0 ? bytes : bytes.subarray(done));
      if (n > 0) {
        done += n;
      } else if (n < 0) {
        if (!(await waitSliceAsync(this.#meta, RING_LOCK, LOCKED, until))) break;
      } else if (!(await waitSliceAsync(this.#meta, RING_LENGTH, this.#stuckAt(isWrite), until))) {
        break;
      }
    }
    return done;
  }

  /** Runs `attempt` until it got the lock (n ≥ 0), sleeping on the lock word meanwhile;
   *  RpcError Timeout when the lock stays taken for `timeoutMs`. Blocks. */
  #retry(what, timeoutMs, attempt) {
    let until;
    for (;;) {
      const n = attempt();
      if (n >= 0) return n;
      until ??= deadline(timeoutMs);
      if (!waitSlice(this.#meta, RING_LOCK, LOCKED, until)) throw lockTimeout(what, timeoutMs);
    }
  }

  async #retryAsync(what, timeoutMs, attempt) {
    let until;
    for (;;) {
      const n = attempt();
      if (n >= 0) return n;
      until ??= deadline(timeoutMs);
      if (!(await waitSliceAsync(this.#meta, RING_LOCK, LOCKED, until))) throw lockTimeout(what, timeoutMs);
    }
  }

  /** `read(n)`'s one attempt: into the staging array when it fits, then copied out exactly. */
  #readAttempt(want, out) {
    if (out !== null) return () => this.#move(false, out);
    return () => this.#call(false, this.#staging, want);
  }

  #readResult(want, out, got) {
    if (out === null) return this.#staging.slice(0, got);
    return got === want ? out : out.slice(0, got);
  }

  /** Writes what fits of `data` (the book's write): returns the bytes written, 0 when full.
   *  Waits only for the lock: RpcError Timeout if it stays taken for `timeoutMs`. */
  write(data, timeoutMs) {
    checkBytes('RingBuffer.write: data', data);
    checkTimeout('RingBuffer.write', timeoutMs);
    return this.#retry('RingBuffer.write', timeoutMs, () => this.#move(true, data));
  }

  /** Reads up to `n` bytes (the book's read): a new Uint8Array of what was there, empty when
   *  empty. Waits only for the lock, as `write` does. */
  read(n, timeoutMs) {
    checkCount('RingBuffer.read: n', n);
    checkTimeout('RingBuffer.read', timeoutMs);
    const want = Math.min(n, this.length);
    if (want === 0) return new Uint8Array(0);
    const out = want > this.#staging.length ? new Uint8Array(want) : null;
    return this.#readResult(want, out, this.#retry('RingBuffer.read', timeoutMs, this.#readAttempt(want, out)));
  }

  /** Reads up to `target.length` bytes into `target`; returns the count (0 when empty). */
  readInto(target, timeoutMs) {
    checkBytes('RingBuffer.readInto: target', target);
    checkTimeout('RingBuffer.readInto', timeoutMs);
    return this.#retry('RingBuffer.readInto', timeoutMs, () => this.#move(false, target));
  }

  /** `write` without blocking the event loop. */
  async writeAsync(data, timeoutMs) {
    checkBytes('RingBuffer.writeAsync: data', data);
    checkTimeout('RingBuffer.writeAsync', timeoutMs);
    return this.#retryAsync('RingBuffer.writeAsync', timeoutMs, () => this.#move(true, data));
  }

  /** `read` without blocking the event loop. */
  async readAsync(n, timeoutMs) {
    checkCount('RingBuffer.readAsync: n', n);
    checkTimeout('RingBuffer.readAsync', timeoutMs);
    const want = Math.min(n, this.length);
    if (want === 0) return new Uint8Array(0);
    const out = want > this.#staging.length ? new Uint8Array(want) : null;
    return this.#readResult(want, out, await this.#retryAsync('RingBuffer.readAsync', timeoutMs, this.#readAttempt(want, out)));
  }

  /** `readInto` without blocking the event loop. */
  async readIntoAsync(target, timeoutMs) {
    checkBytes('RingBuffer.readIntoAsync: target', target);
    checkTimeout('RingBuffer.readIntoAsync', timeoutMs);
    return this.#retryAsync('RingBuffer.readIntoAsync', timeoutMs, () => this.#move(false, target));
  }

  /** Writes all of `data`, waiting for room at most `timeoutMs`; returns the bytes written (fewer only on timeout). Blocks. */
  writeAll(data, timeoutMs) {
    checkBytes('RingBuffer.writeAll: data', data);
    checkTimeout('RingBuffer.writeAll', timeoutMs);
    return this.#moveAll(true, data, deadline(timeoutMs));
  }

  /** Reads exactly `n` bytes, waiting for data at most `timeoutMs`; fewer only on timeout. Blocks. */
  readExactly(n, timeoutMs) {
    checkCount('RingBuffer.readExactly: n', n);
    checkTimeout('RingBuffer.readExactly', timeoutMs);
    const out = new Uint8Array(n);
    const got = this.#moveAll(false, out, deadline(timeoutMs));
    return got === n ? out : out.slice(0, got);
  }

  /** `writeAll` without blocking the event loop. */
  async writeAllAsync(data, timeoutMs) {
    checkBytes('RingBuffer.writeAllAsync: data', data);
    checkTimeout('RingBuffer.writeAllAsync', timeoutMs);
    return this.#moveAllAsync(true, data, deadline(timeoutMs));
  }

  /** `readExactly` without blocking the event loop. */
  async readExactlyAsync(n, timeoutMs) {
    checkCount('RingBuffer.readExactlyAsync: n', n);
    checkTimeout('RingBuffer.readExactlyAsync', timeoutMs);
    const out = new Uint8Array(n);
    const got = await this.#moveAllAsync(false, out, deadline(timeoutMs));
    return got === n ? out : out.slice(0, got);
  }
}

module.exports = { RingBuffer };
