'use strict';
// One thread for bench/locks.js. Contending: waits for the start flag, then either does `pairs`
// lock/unlock pairs (throughput) or takes the lock again and again for `durationMs`, timing
// each wait (fairness). Alone (`alternate`): times several kinds of lock in turn, uncontended. Inside the lock it adds one to a shared Float64 with a plain read and
// write, which loses counts unless the lock excludes; bench/locks.js checks the total.
const { workerData: w, parentPort } = require('node:worker_threads');
const path = require('node:path');
const { Mutex, Semaphore, OwnedMutex, ReentrantMutex, FairMutex } = require(path.join(__dirname, '..', '..'));
const { BookMutex } = require('./book-mutex.js');
const { MutexBefore, SemaphoreBefore } = require('./locks-before.js');

const LOCK_WORDS = 64; // room for any lock; then [ready, start], then the Float64 counter
const words = w.sab && new Int32Array(w.sab, 0, LOCK_WORDS + 2);
const counter = w.sab && new Float64Array(w.sab, (LOCK_WORDS + 2) * 4, 1);
/** Warm-up passes before the start: every run measures optimized code, not the JIT warming up. */
const WARM_UP_PAIRS = 50_000;
const now = () => performance.timeOrigin + performance.now();

/** `{ lock(), unlock() }` of the named kind on `words` ('mutex spin N': a Mutex with `{ spin: N }`). */
function makeLock(kind, words) {
  const as = (lock, unlock) => ({ lock, unlock });
  switch (kind) {
    case 'book': {
      const m = new BookMutex(words, 0);
      return as(() => m.acquire(), () => m.release());
    }
    case 'mutex before':
      return new MutexBefore(words, 0);
    case 'semaphore before': {
      const s = new SemaphoreBefore(words, 0);
      return as(() => s.acquire(), () => s.release());
    }
    case 'semaphore': {
      const s = new Semaphore(words, 0);
      return as(() => s.acquire(), () => s.release());
    }
    case 'mutex':
      return new Mutex(words, 0);
    case 'owned':
      return new OwnedMutex(words, 0);
    case 'reentrant':
      return new ReentrantMutex(words, 0);
    case 'fair':
      return new FairMutex(words, 0);
    default: {
      const spin = /^mutex spin (\d+)$/.exec(kind);
      if (spin !== null) return new Mutex(words, 0, { spin: Number(spin[1]) });
      throw new Error(`no lock kind ${kind}`);
    }
  }
}

/** `n` lock/unlock pairs, each adding one to `total[0]` inside. */
function pairs(lock, total, n) {
  for (let i = 0; i < n; i++) {
    lock.lock();
    total[0] += 1;
    lock.unlock();
  }
}

/** Takes `lock` again and again until `end`, timing each wait: `{ count, maxWait }` (ms). */
function hammer(lock, total, end) {
  let count = 0;
  let maxWait = 0;
  let t = now();
  while (t < end) {
    lock.lock();
    const got = now();
    total[0] += 1;
    lock.unlock();
    maxWait = Math.max(maxWait, got - t);
    count++;
    t = now();
  }
  return { count, maxWait };
}

/**
 * Uncontended, in one thread: each kind in turn for `batchPairs` pairs (in a rotating order),
 * `batches` times over, so that the machine's load drifts alike for every kind. Each kind runs
 * its own copy of the loop (compiled apart), so no call site sees more than one kind of lock.
 * Reports `{ kind: [pairs/s per batch] }`.
 */
function alternate({ kinds, batches, batchPairs }) {
  const runs = kinds.map((kind) => {
    const own = new SharedArrayBuffer(LOCK_WORDS * 4 + 8);
    const lock = makeLock(kind, new Int32Array(own, 0, LOCK_WORDS));
    if (kind.startsWith('semaphore')) Atomics.store(new Int32Array(own), 0, 1);
    const total = new Float64Array(own, LOCK_WORDS * 4, 1);
    const loop = new Function('lock', 'total', 'n', `// ${kind}\nfor (let i = 0; i < n; i++) { lock.lock(); total[0] += 1; lock.unlock(); }`);
    loop(lock, total, WARM_UP_PAIRS);
    return { kind, lock, total, loop, rates: [] };
  });
  for (let b = 0; b < batches; b++) {
    for (let k = 0; k < runs.length; k++) {
      const r = runs[(b + k) % runs.length];
      const t = performance.now();
      r.loop(r.lock, r.total, batchPairs);
      r.rates.push(batchPairs / ((performance.now() - t) / 1000));
    }
  }
  for (const r of runs) {
    if (r.total[0] !== WARM_UP_PAIRS + batches * batchPairs) throw new Error(`${r.kind}: the count came out as ${r.total[0]}`);
  }
  parentPort.postMessage(Object.fromEntries(runs.map((r) => [r.kind, r.rates])));
}

/** Several threads on the one lock in `w.sab`, started together. */
function contend() {
  const lock = makeLock(w.kind, words);
  {
    // The same functions on a private lock of the same kind, so V8 has optimized them.
    const own = new SharedArrayBuffer(LOCK_WORDS * 4 + 8);
    const ownLock = makeLock(w.kind, new Int32Array(own, 0, LOCK_WORDS));
    if (w.kind.startsWith('semaphore')) Atomics.store(new Int32Array(own), 0, 1);
    const ownTotal = new Float64Array(own, LOCK_WORDS * 4, 1);
    for (let pass = 0; pass < 4; pass++) pairs(ownLock, ownTotal, WARM_UP_PAIRS / 4);
    hammer(ownLock, ownTotal, now() + 20);
  }
  Atomics.add(words, LOCK_WORDS, 1);
  Atomics.wait(words, LOCK_WORDS + 1, 0);
  const started = now();
  if (w.pairs !== undefined) {
    pairs(lock, counter, w.pairs);
    parentPort.postMessage({ started, finished: now() });
  } else {
    const { count, maxWait } = hammer(lock, counter, started + w.durationMs);
    parentPort.postMessage({ started, finished: now(), count, maxWait });
  }
}

if (w.alternate !== undefined) alternate(w.alternate);
else contend();
