'use strict';
// The book's RpcWorkerPool (Multithreaded JavaScript, chapter 6), written from its description:
// a fixed set of worker_threads, a getWorker() that picks one per call with the 'roundrobin',
// 'random' or 'leastbusy' strategy, and exec(method, ...args) → Promise over JSON-RPC-ish
// messages: { id, method, params } to the worker, { id, result } or { id, error } back.
//
// As in the book, leastbusy picks the first worker with the fewest in-flight commands, so ties
// always go to the lowest index (worker 0 when all are idle). Additions to the book's code, none
// of which changes its per-call behaviour: errors come back as { id, error } and reject the
// call; a worker that dies rejects its in-flight calls; close() terminates the workers; the
// "Selected Worker" console.log is left out (it would dominate every benchmark).
//
//   const RpcWorkerPool = require('./peers/rpc-worker-pool');
//   const pool = new RpcWorkerPool(RpcWorkerPool.COMMANDS, 2, 'leastbusy');
//   await pool.exec('render', template, data);
//   await pool.close();
const os = require('node:os');
const path = require('node:path');
const { Worker } = require('node:worker_threads');

const CORES = os.availableParallelism();
const STRATEGIES = new Set(['roundrobin', 'random', 'leastbusy']);

class RpcWorkerPool {
  /**
   * @param {string} file the worker script (RpcWorkerPool.COMMANDS: echo, add, square_sum,
   *   render, sleep, fibonacci)
   * @param {number} size 0 → cores, n < 0 → max(cores + n, 1), n > 0 → n (the book's rule)
   * @param {'roundrobin'|'random'|'leastbusy'} strategy
   */
  constructor(file = RpcWorkerPool.COMMANDS, size = 0, strategy = 'roundrobin') {
    if (size === 0) this.size = CORES;
    else if (size < 0) this.size = Math.max(CORES + size, 1);
    else this.size = size;
    if (!STRATEGIES.has(strategy)) throw new TypeError(`invalid strategy: ${strategy}`);
    this.strategy = strategy;
    this.rr_index = -1;
    this.next_command_id = 0;
    this.workers = [];
    for (let i = 0; i < this.size; i++) {
      const worker = new Worker(file, { workerData: { index: i } });
      const entry = { worker, in_flight_commands: new Map() };
      this.workers.push(entry);
      worker.on('message', (msg) => this.onMessageHandler(msg, i));
      worker.on('error', (err) => this.failAll(entry, err));
      worker.on('exit', (code) => this.failAll(entry, new Error(`worker ${i} exited with code ${code}`)));
    }
  }

  onMessageHandler(msg, worker_id) {
    const worker = this.workers[worker_id];
    const { result, error, id } = msg;
    const pending = worker.in_flight_commands.get(id);
    if (!pending) return;
    worker.in_flight_commands.delete(id);
    if (error) pending.reject(Object.assign(new Error(error.message), error));
    else pending.resolve(result);
  }

  exec(method, ...args) {
    const id = ++this.next_command_id;
    let resolve;
    let reject;
    const promise = new Promise((res, rej) => {
      resolve = res;
      reject = rej;
    });
    const worker = this.getWorker();
    worker.in_flight_commands.set(id, { resolve, reject });
    worker.worker.postMessage({ method, params: args, id });
    return promise;
  }

  getWorker() {
    let id;
    if (this.strategy === 'random') {
      id = Math.floor(Math.random() * this.size);
    } else if (this.strategy === 'roundrobin') {
      this.rr_index++;
      if (this.rr_index >= this.size) this.rr_index = 0;
      id = this.rr_index;
    } else {
      let min = Infinity;
      for (let i = 0; i < this.size; i++) {
        const size = this.workers[i].in_flight_commands.size;
        if (size < min) {
          min = size;
          id = i;
        }
      }
    }
    return this.workers[id];
  }

  failAll(entry, err) {
    for (const { reject } of entry.in_flight_commands.values()) reject(err);
    entry.in_flight_commands.clear();
  }

  /** Terminates every worker (in-flight calls are rejected). */
  async close() {
    await Promise.all(this.workers.map(({ worker }) => worker.terminate()));
  }
}

/** The worker script with the built-in command table. */
RpcWorkerPool.COMMANDS = path.join(__dirname, 'rpc-worker.js');

module.exports = RpcWorkerPool;
