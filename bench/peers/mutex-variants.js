'use strict';
// The three mutexes bench/mutex.js compares, all on the same protocol (one Int32 word, 0/1):
// - book:      the book's Mutex (./book-mutex.js);
// - corepool:  corepool's Mutex, whose compare-exchanges run inline in JavaScript;
// - native-op: the same protocol with every compare-exchange made by a native call into
//              src/shm/mutex.rs (the addon's shmMutex functions), waits and wakes in JS as
//              they must be. This is the design corepool's Mutex did not choose; it is here
//              so the choice stays measured.
const path = require('node:path');
const root = path.join(__dirname, '..', '..');
const { Mutex } = require(root);
const { platformTriple } = require(path.join(root, 'lib', 'platform.js'));
const { BookMutex } = require('./book-mutex.js');

const native = require(path.join(root, `corepool.${platformTriple()}.node`));

class NativeOpMutex {
  constructor(array, index) {
    this.array = array;
    this.index = index;
    [this.tryLock, this.release] = native.shmMutex(array, index);
  }

  lock() {
    while (!this.tryLock()) Atomics.wait(this.array, this.index, 1, 10);
  }

  unlock() {
    this.release();
    Atomics.notify(this.array, this.index, 1);
  }
}

/** The book's Mutex under the lock()/unlock() names the benchmark calls. */
class BookAsLockUnlock extends BookMutex {
  lock() {
    this.acquire();
  }

  unlock() {
    this.release();
  }
}

/** `{ lock(), unlock() }` of the named kind on `array[index]`. */
function mutex(kind, array, index) {
  if (kind === 'book') return new BookAsLockUnlock(array, index);
  if (kind === 'native-op') return new NativeOpMutex(array, index);
  return new Mutex(array, index);
}

module.exports = { mutex, KINDS: ['book', 'corepool', 'native-op'] };
