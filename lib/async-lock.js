'use strict';

const { invalidParams, describe } = require('./errors.js');

/**
 * A FIFO lock for async code within one JavaScript thread: holders run one at a time, in the
 * order they asked. No shared memory; use Mutex across threads.
 */
class AsyncLock {
  #tail = Promise.resolve();
  #waiting = 0;

  /** Resolves, in call order, with a `release()` function; call it exactly once. */
  acquire() {
    let open;
    const released = new Promise((resolve) => {
      open = resolve;
    });
    const previous = this.#tail;
    this.#tail = released;
    this.#waiting++;
    let done = false;
    const release = () => {
      if (done) throw new Error('AsyncLock: release() called twice');
      done = true;
      this.#waiting--;
      open();
    };
    return previous.then(() => release);
  }

  /** Runs `fn()` under the lock and releases it however `fn` ends; resolves or rejects as `fn` does. */
  async runExclusive(fn) {
    if (typeof fn !== 'function') throw invalidParams(`AsyncLock.runExclusive: fn must be a function, got ${describe(fn)}`);
    const release = await this.acquire();
    try {
      return await fn();
    } finally {
      release();
    }
  }

  /** True while someone holds the lock or waits for it. */
  get locked() {
    return this.#waiting > 0;
  }
}

module.exports = { AsyncLock };
