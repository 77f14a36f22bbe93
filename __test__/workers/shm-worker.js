'use strict';
// One worker_thread script for the shared-memory tests: `workerData.task` picks what it does;
// it reports with one message and exits.
const { workerData, parentPort } = require('node:worker_threads');
const path = require('node:path');
const root = path.join(__dirname, '..', '..');
const { Mutex, Semaphore, RingBuffer } = require(root);
const { mutex } = require(path.join(root, 'bench', 'peers', 'mutex-variants.js'));
const { SharedRingBuffer } = require(path.join(root, 'bench', 'peers', 'book-ring.js'));

/** Deterministic pseudo-random numbers (xorshift32), so failures reproduce. */
function rng(seed) {
  let x = seed | 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 4294967296;
  };
}

const tasks = {
  /**
   * The thread-product check: inside the critical section, read the shared product, multiply
   * by this thread's factor modulo a prime, write it back (a plain, non-atomic read-modify-
   * write that loses updates unless the lock excludes). `inside` counts threads in the section.
   * `kind`: 'book', 'corepool' or 'native-op' (bench/peers/mutex-variants.js).
   */
  product({ sab, kind, runs, factor, modulus }) {
    const word = new Int32Array(sab, 0, 1);
    const inside = new Int32Array(sab, 4, 1);
    const product = new Float64Array(sab, 8, 1);
    const lock = mutex(kind, word, 0);
    let overlaps = 0;
    for (let r = 0; r < runs; r++) {
      lock.lock();
      if (Atomics.add(inside, 0, 1) !== 0) overlaps++;
      const v = product[0];
      for (let spin = 0; spin < 50; spin++) Atomics.load(inside, 0);
      product[0] = (v * factor) % modulus;
      Atomics.sub(inside, 0, 1);
      lock.unlock();
    }
    return { overlaps };
  },

  /** Counts itself in `started`, then holds the mutex `holds` times for about `holdMs` each. */
  hold({ sab, holds, holdMs }) {
    const word = new Int32Array(sab, 0, 1);
    const inside = new Int32Array(sab, 4, 1);
    const started = new Int32Array(sab, 8, 1);
    const sleeper = new Int32Array(new SharedArrayBuffer(4));
    const m = new Mutex(word, 0);
    Atomics.add(started, 0, 1);
    let overlaps = 0;
    for (let i = 0; i < holds; i++) {
      if (!m.lock(10_000)) throw new Error('could not take the lock in 10 s');
      if (Atomics.add(inside, 0, 1) !== 0) overlaps++;
      Atomics.wait(sleeper, 0, 0, holdMs);
      Atomics.sub(inside, 0, 1);
      m.unlock();
    }
    return { overlaps };
  },

  /** Takes and gives back a permit `runs` times, tracking the most holders seen at once. */
  semaphore({ sab, runs }) {
    const s = new Semaphore(new Int32Array(sab, 0, 1), 0);
    const holders = new Int32Array(sab, 4, 1);
    const most = new Int32Array(sab, 8, 1);
    for (let r = 0; r < runs; r++) {
      if (!s.acquire(10_000)) throw new Error('no permit in 10 s');
      const now = Atomics.add(holders, 0, 1) + 1;
      for (let seen = Atomics.load(most, 0); now > seen; seen = Atomics.load(most, 0)) {
        if (Atomics.compareExchange(most, 0, seen, now) === seen) break;
      }
      for (let spin = 0; spin < 20; spin++) Atomics.load(holders, 0);
      Atomics.sub(holders, 0, 1);
      s.release();
    }
    return {};
  },

  /**
   * Writes `units` 4-byte units (producer id << 24 | sequence number) in chunks of 4..256
   * bytes. `book: true` writes through the book's SharedRingBuffer (polling when full).
   */
  produce({ ring, id, units, seed, book }) {
    const r = book ? new SharedRingBuffer(ring) : new RingBuffer(ring);
    const data = new Uint8Array(units * 4);
    const view = new DataView(data.buffer);
    for (let seq = 0; seq < units; seq++) view.setUint32(seq * 4, ((id << 24) | seq) >>> 0, true);
    const random = rng(seed);
    let at = 0;
    while (at < data.length) {
      const end = Math.min(data.length, at + 4 * (1 + Math.floor(random() * 64)));
      const chunk = data.subarray(at, end);
      if (book) at += r.write(chunk);
      else if (random() < 0.5) at += r.writeAll(chunk, 30_000);
      else at += r.write(chunk) || (r.writeAll(chunk.subarray(0, 4), 30_000));
    }
    return {};
  },

  /**
   * Reads units in chunks of 4..256 bytes until `received` reaches `total`, marking each unit
   * in `seen` (one byte per unit) and checking each producer's sequence numbers rise.
   */
  consume({ ring, seen, received, total, producers, unitsPerProducer, seed }) {
    const r = new RingBuffer(ring);
    const marks = new Uint8Array(seen);
    const count = new Int32Array(received);
    const random = rng(seed);
    const last = new Map();
    let outOfOrder = 0;
    let garbage = 0;
    const sums = {};
    while (Atomics.load(count, 0) < total) {
      const want = 4 * (1 + Math.floor(random() * 64));
      const bytes = random() < 0.5 ? r.readExactly(want, 5) : r.read(want);
      if (bytes.length % 4 !== 0) throw new Error(`read ${bytes.length} bytes: a unit was split`);
      const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
      for (let i = 0; i < bytes.length; i += 4) {
        const u = view.getUint32(i, true);
        const producer = u >>> 24;
        const seq = u & 0xffffff;
        if (producer >= producers || seq >= unitsPerProducer) {
          garbage++;
          continue;
        }
        if (last.has(producer) && last.get(producer) >= seq) outOfOrder++;
        last.set(producer, seq);
        sums[producer] = (sums[producer] ?? 0) + seq;
        Atomics.add(marks, producer * unitsPerProducer + seq, 1);
      }
      Atomics.add(count, 0, bytes.length / 4);
    }
    return { outOfOrder, garbage, sums };
  },
};

const result = tasks[workerData.task](workerData);
parentPort.postMessage(result);
