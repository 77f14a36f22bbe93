'use strict';
// One worker_thread script for the lock tests (__test__/locks.test.js): `workerData.task` picks
// what it does; it reports with one message and exits.
//
// Locks are described as the native command `locked_add` takes them, `{ kind, array, index }`,
// and counted into the same counter layout: Int32 [total, inside, most] at `counterIndex`.
const { workerData, parentPort } = require('node:worker_threads');
const path = require('node:path');
const { Mutex, Semaphore, OwnedMutex, ReentrantMutex, FairMutex, lockAll } = require(path.join(__dirname, '..', '..'));

function makeLock({ kind, array, index = 0, options }) {
  if (kind === 'semaphore') return new Semaphore(array, index, undefined, options);
  const classes = { mutex: Mutex, owned: OwnedMutex, reentrant: ReentrantMutex, fair: FairMutex };
  return new classes[kind](array, index, options);
}

/** Takes the lock (`kind` decides how), or returns false when a timed wait gave up. */
function take(lock, kind, timeoutMs) {
  return kind === 'semaphore' ? lock.acquire(timeoutMs) : lock.lock(timeoutMs);
}

function give(lock, kind) {
  if (kind === 'semaphore') lock.release();
  else lock.unlock();
}

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

/** The critical section `locked_add` runs natively too: count holders, a plain read-then-write of the total. */
function count(counter, at, exclusive) {
  const inside = Atomics.add(counter, at + 1, 1) + 1;
  for (let most = Atomics.load(counter, at + 2); inside > most; most = Atomics.load(counter, at + 2)) {
    if (Atomics.compareExchange(counter, at + 2, most, inside) === most) break;
  }
  if (exclusive) {
    const total = counter[at];
    for (let spin = 0; spin < 20; spin++) Atomics.load(counter, at + 1);
    counter[at] = total + 1;
  } else {
    Atomics.add(counter, at, 1);
  }
  Atomics.sub(counter, at + 1, 1);
}

const tasks = {
  /**
   * `runs` entries under one lock (`depth` times for a reentrant one). With `giveUpEvery`,
   * every so many waits have a tiny timeout (0 to `timeoutMs`), and those that give up are
   * retried: `gaveUp`, and `lateMs`, the most any overran its timeout. With `holdEvery`, every
   * so many entries hold the lock `holdMs` asleep, and then look how many tickets of a fair
   * mutex are out (`queue`: its NEXT and SERVING indices): `mostOut`.
   */
  hammer({ lock: spec, counter, counterIndex = 0, runs, depth = 1, giveUpEvery = 0, timeoutMs = 0, holdEvery = 0, holdMs = 0, queue, seed = 1, gate }) {
    const lock = makeLock(spec);
    const random = rng(seed);
    const nap = new Int32Array(new SharedArrayBuffer(4));
    if (gate !== undefined) {
      Atomics.add(gate, 0, 1);
      Atomics.wait(gate, 1, 0);
    }
    let gaveUp = 0;
    let lateMs = 0;
    let mostOut = 0;
    for (let r = 0; r < runs; ) {
      const timeout = giveUpEvery > 0 && random() * giveUpEvery < 1 ? random() * timeoutMs : undefined;
      const t = performance.now();
      if (!take(lock, spec.kind, timeout)) {
        lateMs = Math.max(lateMs, performance.now() - t - timeout);
        gaveUp++;
        continue;
      }
      for (let d = 1; d < depth; d++) take(lock, spec.kind);
      count(counter, counterIndex, spec.kind !== 'semaphore');
      if (holdEvery > 0 && random() * holdEvery < 1) {
        Atomics.wait(nap, 0, 0, holdMs);
        if (queue !== undefined) mostOut = Math.max(mostOut, (Atomics.load(spec.array, queue.next) - Atomics.load(spec.array, queue.serving)) >>> 0);
      }
      for (let d = 1; d < depth; d++) give(lock, spec.kind);
      give(lock, spec.kind);
      r++;
    }
    return { gaveUp, lateMs, mostOut };
  },

  /** `runs` entries under every lock of `locks` at once, through lockAll (so in its order, whatever this array's). */
  lockAll({ locks: specs, counter, runs }) {
    const locks = specs.map(makeLock);
    for (let r = 0; r < runs; r++) lockAll(locks, () => count(counter, 0, true), 30_000);
    return {};
  },

  /**
   * Nested locking in the array's order, the naive way: take the first, meet the other thread
   * at a barrier (so each holds one), then try the second for `timeoutMs`; meet again before
   * letting go of the first, so neither gets in because the other gave up.
   */
  nested({ locks: specs, barrier, timeoutMs }) {
    const [first, second] = specs.map(makeLock);
    const meet = (n) => {
      Atomics.add(barrier, 0, 1);
      while (Atomics.load(barrier, 0) < n) Atomics.wait(barrier, 0, Atomics.load(barrier, 0), 1);
    };
    first.lock();
    meet(2);
    const tookSecond = second.lock(timeoutMs);
    if (tookSecond) second.unlock();
    meet(4);
    first.unlock();
    return { tookSecond };
  },

  /** `runs` entries under a fair mutex, each appending the ticket it was served (SERVING, read inside) to `log` = [count, tickets…]. */
  tickets({ lock: spec, log, servingIndex, runs }) {
    const lock = makeLock(spec);
    for (let r = 0; r < runs; r++) {
      lock.lock();
      log[1 + log[0]] = Atomics.load(spec.array, servingIndex);
      log[0]++;
      lock.unlock();
    }
    return {};
  },

  /**
   * `runs` entries, each first drawing an arrival number (log[0]), then appending it to the log
   * once inside: log = [arrivals, served, arrival numbers in the order served…]. Starts when
   * `gate[1]` opens (having counted itself in `gate[0]`); holds the lock `holdMs` asleep, so
   * that the others run, arrive and queue meanwhile, however few cores are free. Reports the
   * longest lock(), in ms.
   */
  arrivals({ lock: spec, log, runs, gate, holdMs }) {
    const lock = makeLock(spec);
    const nap = new Int32Array(new SharedArrayBuffer(4));
    Atomics.add(gate, 0, 1);
    Atomics.wait(gate, 1, 0);
    let maxWaitMs = 0;
    for (let r = 0; r < runs; r++) {
      const t = performance.now();
      const arrival = Atomics.add(log, 0, 1);
      take(lock, spec.kind);
      maxWaitMs = Math.max(maxWaitMs, performance.now() - t);
      log[2 + log[1]] = arrival;
      log[1]++;
      Atomics.wait(nap, 0, 0, holdMs);
      give(lock, spec.kind);
    }
    return { maxWaitMs };
  },

  /** Queues on a fair mutex (for at most `timeoutMs`) and writes `id` into the log when served: log = [count, ids…]. */
  arrive({ lock: spec, log, id, timeoutMs }) {
    const lock = makeLock(spec);
    lock.withLock(() => {
      log[1 + log[0]] = id;
      log[0]++;
    }, timeoutMs);
    return {};
  },

  /** Takes the lock, says so in `flag[0]`, holds it until `flag[1]` is set, then gives it back. */
  hold({ lock: spec, flag }) {
    const lock = makeLock(spec);
    take(lock, spec.kind);
    Atomics.store(flag, 0, 1);
    Atomics.notify(flag, 0);
    while (Atomics.load(flag, 1) === 0) Atomics.wait(flag, 1, 0, 50);
    give(lock, spec.kind);
    return {};
  },

  /** Tries to unlock a lock held elsewhere; reports the refusal. */
  unlock({ lock: spec }) {
    const lock = makeLock(spec);
    try {
      give(lock, spec.kind);
      return { refused: null };
    } catch (e) {
      return { refused: { code: e.code, message: e.message } };
    }
  },

  /** `times` timed waits in a row, each taking the lock for at most `timeoutMs`: whether each took it, and how long it waited. */
  timeouts({ lock: spec, times, timeoutMs }) {
    const lock = makeLock(spec);
    const waits = [];
    for (let i = 0; i < times; i++) {
      const t = performance.now();
      const took = take(lock, spec.kind, timeoutMs);
      waits.push({ took, waitedMs: performance.now() - t });
      if (took) give(lock, spec.kind);
    }
    return { waits };
  },

  /** Times lock() against a holder that does not notify: `waitedMs`. */
  waitFor({ lock: spec, timeoutMs }) {
    const lock = makeLock(spec);
    const t = performance.now();
    const took = take(lock, spec.kind, timeoutMs);
    const waitedMs = performance.now() - t;
    if (took) give(lock, spec.kind);
    return { took, waitedMs };
  },
};

parentPort.postMessage(tasks[workerData.task](workerData));
