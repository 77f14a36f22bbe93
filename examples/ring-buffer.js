// Producers and consumers over corepool's RingBuffer (the book's SharedRingBuffer layout): two
// worker_threads write 1 MiB each through a 64-byte ring, two others read it, and the bytes
// and checksums that arrive are compared with what was sent.
//
//   node examples/ring-buffer.js
'use strict';
const { Worker, isMainThread, workerData, parentPort } = require('node:worker_threads');
const { RingBuffer } = require('..');

const BYTES_PER_PRODUCER = 1 << 20;

/** The bytes producer `id` sends: a simple pattern, so the checksum is predictable. */
function payload(id) {
  const data = new Uint8Array(BYTES_PER_PRODUCER);
  for (let i = 0; i < data.length; i++) data[i] = (i * 31 + id * 17) & 0xff;
  return data;
}

const sum = (bytes) => bytes.reduce((s, b) => s + b, 0);

if (isMainThread) {
  const ring = new RingBuffer(64);
  const received = new Int32Array(new SharedArrayBuffer(4));
  const producers = [0, 1];
  const total = producers.length * BYTES_PER_PRODUCER;
  const start = (role, extra) =>
    new Promise((resolve, reject) => {
      const w = new Worker(__filename, { workerData: { role, buffer: ring.buffer, received: received.buffer, total, ...extra } });
      w.once('message', resolve);
      w.once('error', reject);
    });
  const started = performance.now();
  Promise.all([...producers.map((id) => start('producer', { id })), start('consumer', {}), start('consumer', {})]).then((results) => {
    const ms = performance.now() - started;
    const consumers = results.slice(producers.length);
    const bytes = consumers.reduce((s, c) => s + c.bytes, 0);
    const checksum = consumers.reduce((s, c) => s + c.checksum, 0);
    const expected = producers.reduce((s, id) => s + sum(payload(id)), 0);
    console.log(`${producers.length} producers → ring of ${ring.capacity} bytes → ${consumers.length} consumers`);
    consumers.forEach((c, i) => console.log(`consumer ${i}: ${c.bytes} bytes`));
    console.log(`moved ${bytes} of ${total} bytes in ${ms.toFixed(0)} ms; checksum ${checksum} (expected ${expected})`);
    const ok = bytes === total && checksum === expected;
    console.log(ok ? 'every byte arrived once' : 'BYTES WERE LOST OR DUPLICATED');
    process.exitCode = ok ? 0 : 1;
  });
} else {
  const { role, buffer, total, id } = workerData;
  const ring = new RingBuffer(buffer);
  const received = new Int32Array(workerData.received);
  if (role === 'producer') {
    const data = payload(id);
    for (let at = 0; at < data.length; at += 1000) ring.writeAll(data.subarray(at, at + 1000));
    parentPort.postMessage({});
  } else {
    let bytes = 0;
    let checksum = 0;
    while (Atomics.load(received, 0) < total) {
      // Wait at most 10 ms so the loop notices when the others took the last bytes.
      const chunk = ring.readExactly(48, 10);
      bytes += chunk.length;
      checksum += sum(chunk);
      Atomics.add(received, 0, chunk.length);
    }
    parentPort.postMessage({ bytes, checksum });
  }
}
