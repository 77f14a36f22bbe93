'use strict';
// What lib/piscina.js (the pool's thread) and lib/piscina-worker.js (its workers) share: the
// key of the workers' settings, the mark of a Piscina worker thread, the mark of a task that
// threw, and Piscina's symbols.

/** The key, in the workers' workerData envelope, of corepool/piscina's own settings. */
const KEY = '__corepoolPiscina';
/** Set on globalThis by lib/piscina-worker.js before any task file loads. */
const WORKER_MARK = Symbol.for('corepool.piscina.worker');
/** Piscina's own public symbols (Symbol.for, so they are the same as real Piscina's). */
const kTransferable = Symbol.for('Piscina.transferable');
const kValue = Symbol.for('Piscina.valueOf');
const kQueueOptions = Symbol.for('Piscina.queueOptions');
/** The third item of a task's outcome (`[ms, thrown, THROWN]`) when the task threw. */
const THROWN = 1;
/** lib/piscina-worker.js's export of a Promise settled once the pool's own task file has
 *  loaded (or failed to): the worker says it is ready then, as Piscina's worker does. */
const kLoaded = Symbol('loaded');
/** Marks what Piscina.move() returned. */
const kMovable = Symbol.for('corepool.piscina.movable');

/** Piscina's `isTransferable`: an object with both symbols. */
function isTransferable(value) {
  return value !== null && typeof value === 'object' && kTransferable in value && kValue in value;
}

/**
 * What Piscina.move() returned (Piscina's `isMovable`): corepool/piscina's, or Piscina's own
 * (a task file that still calls `require('piscina').move()`), which marks it with a symbol of
 * its own, not registered, known here by its description.
 */
function isMoved(value) {
  if (!isTransferable(value)) return false;
  if (value[kMovable] === true) return true;
  return Object.getOwnPropertySymbols(value).some((s) => s.description === 'Piscina.kMovable' && value[s] === true);
}

module.exports = { KEY, THROWN, WORKER_MARK, kTransferable, kValue, kQueueOptions, kMovable, kLoaded, isTransferable, isMoved };
