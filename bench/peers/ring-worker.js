'use strict';
// A producer or consumer for bench/ring.js, on corepool's RingBuffer or the book's
// SharedRingBuffer. Waits for the start flag, moves its bytes, and reports when it started and
// finished (absolute ms), so the benchmark times the transfer and not thread start-up.
const { workerData: w, parentPort } = require('node:worker_threads');
const path = require('node:path');
const { RingBuffer } = require(path.join(__dirname, '..', '..'));
const { SharedRingBuffer } = require('./book-ring.js');

const ring = w.kind === 'book' ? new SharedRingBuffer(w.ring) : new RingBuffer(w.ring);
const control = new Int32Array(w.control); // [start flag, bytes received by all consumers]
const now = () => performance.timeOrigin + performance.now();

/** Chunk sizes cycle through `w.chunks`. */
let next = 0;
const chunk = () => w.chunks[next++ % w.chunks.length];

Atomics.wait(control, 0, 0);
const started = now();
let moved = 0;
if (w.role === 'producer') {
  const data = new Uint8Array(Math.max(...w.chunks)).fill(w.id);
  while (moved < w.bytes) {
    const part = data.subarray(0, Math.min(chunk(), w.bytes - moved));
    if (w.kind === 'book') {
      // The book's write takes what fits and returns at once: poll until it is all in.
      for (let at = 0; at < part.length; ) at += ring.write(part.subarray(at));
    } else {
      ring.writeAll(part);
    }
    moved += part.length;
  }
} else {
  while (Atomics.load(control, 1) < w.total) {
    const want = chunk();
    // The book's read returns what is there, possibly nothing: poll. corepool's readExactly
    // waits (up to 5 ms here, so the loop notices when the other consumers took the last bytes).
    const got = w.kind === 'book' ? ring.read(want).length : ring.readExactly(want, 5).length;
    moved += got;
    if (got > 0) Atomics.add(control, 1, got);
  }
}
parentPort.postMessage({ started, finished: now(), moved });
