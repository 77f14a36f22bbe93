'use strict';
// Every timer of lib/ is made here (eslint.config.js forbids setTimeout, setInterval, the timers
// module and AbortSignal.timeout elsewhere in lib/). Node's timers hold at most 2^31 − 1 ms and
// fire after 1 ms for anything longer, Infinity and fractions past the limit included: a delay
// taken from a user (a call's timeout, a waitFor's) would then fire at once. These timers take
// any delay: a longer one is re-armed until its time has passed, and Infinity means never.

const { performance } = require('node:perf_hooks'); // the global is a getter on every use

/** The longest delay a Node timer holds. */
const LONGEST_TIMER = 2 ** 31 - 1;

/** A timer of after() or every(): `clear()` stops it, `unref()` lets the process exit meanwhile. */
class Timer {
  #fn;
  #until;
  #period;
  #handle = null;
  #unref = false;

  constructor(fn, ms, period) {
    if (typeof ms !== 'number' || Number.isNaN(ms)) throw new TypeError(`corepool: a timer's delay must be a number of ms, got ${String(ms)}`);
    this.#fn = fn;
    this.#period = period;
    this.#until = performance.now() + Math.max(ms, 0);
    this.#arm();
  }

  #arm() {
    if (this.#until === Infinity) return;
    const left = this.#until - performance.now();
    this.#handle = setTimeout(left > LONGEST_TIMER ? () => this.#arm() : this.#fire, Math.min(Math.max(left, 0), LONGEST_TIMER));
    if (this.#unref) this.#handle.unref();
  }

  #fire = () => {
    if (this.#period !== null) {
      this.#until = performance.now() + this.#period;
      this.#arm();
    } else this.#handle = null;
    this.#fn();
  };

  clear() {
    clearTimeout(this.#handle);
    this.#handle = null;
    this.#until = Infinity;
  }

  /** The timer no longer keeps the process alive; returns it. */
  unref() {
    this.#unref = true;
    this.#handle?.unref();
    return this;
  }
}

/** Calls `fn` once after `ms` (any length; Infinity: never). */
function after(ms, fn) {
  return new Timer(fn, ms, null);
}

/** Calls `fn` every `ms` (counted from each call's start, like setInterval) until cleared. */
function every(ms, fn) {
  return new Timer(fn, ms, ms);
}

/** Resolves after `ms`. */
function sleep(ms) {
  return new Promise((resolve) => after(ms, resolve));
}

/** A timer that does nothing but keep the process alive until it is cleared. */
function keepAlive() {
  return every(LONGEST_TIMER, () => {});
}

module.exports = { after, every, sleep, keepAlive };
