'use strict';
// The book's SharedRingBuffer, written from its description: a RingBuffer over
// `Uint32Array(sab, 4, 3)` (head, tail, length) and `Uint8Array(sab, 16)` (data), every
// write and read run under the book's Mutex on `Int32Array(sab, 0, 1)`. write() stores what
// fits and returns the count; read(n) returns up to n bytes in a new Uint8Array; neither waits
// for room or data (callers poll).
//
// One change from the book: its contiguous read slices `tail, bytes` where it means
// `tail, tail + bytes`, which returns short or empty arrays once tail > 0. Measuring a peer that
// loses data would be meaningless, so this one slices `tail, tail + bytes`.

const { BookMutex } = require('./book-mutex.js');

class RingBuffer {
  constructor(meta, buffer) {
    this.meta = meta;
    this.buffer = buffer;
  }

  get head() {
    return this.meta[0];
  }
  set head(n) {
    this.meta[0] = n;
  }
  get tail() {
    return this.meta[1];
  }
  set tail(n) {
    this.meta[1] = n;
  }
  get length() {
    return this.meta[2];
  }
  set length(n) {
    this.meta[2] = n;
  }

  write(data) {
    let bytesWritten = data.length;
    if (bytesWritten > this.buffer.length - this.length) {
      bytesWritten = this.buffer.length - this.length;
      data = data.subarray(0, bytesWritten);
    }
    if (bytesWritten === 0) return bytesWritten;
    if (
      (this.head >= this.tail && this.buffer.length - this.head >= bytesWritten) ||
      (this.head < this.tail && bytesWritten <= this.tail - this.head)
    ) {
      // Room after the head.
      this.buffer.set(data, this.head);
      this.head += bytesWritten;
    } else {
      // Split: the end of the buffer, then its start.
      const endSpaceAvailable = this.buffer.length - this.head;
      const endChunk = data.subarray(0, endSpaceAvailable);
      const beginChunk = data.subarray(endSpaceAvailable);
      this.buffer.set(endChunk, this.head);
      this.buffer.set(beginChunk, 0);
      this.head = beginChunk.length;
    }
    this.length += bytesWritten;
    return bytesWritten;
  }

  read(bytes) {
    if (bytes > this.length) bytes = this.length;
    if (bytes === 0) return new Uint8Array(0);
    let readData;
    if (this.head > this.tail || this.buffer.length - this.tail >= bytes) {
      // One contiguous chunk (the book: slice(this.tail, bytes)).
      readData = this.buffer.slice(this.tail, this.tail + bytes);
      this.tail += bytes;
    } else {
      // From the end, then from the start.
      readData = new Uint8Array(bytes);
      const endBytesToRead = this.buffer.length - this.tail;
      readData.set(this.buffer.subarray(this.tail, this.buffer.length));
      readData.set(this.buffer.subarray(0, bytes - endBytesToRead), endBytesToRead);
      this.tail = bytes - endBytesToRead;
    }
    this.length -= bytes;
    return readData;
  }
}

class SharedRingBuffer {
  constructor(shared) {
    this.shared = typeof shared === 'number' ? new SharedArrayBuffer(shared + 16) : shared;
    this.ringBuffer = new RingBuffer(new Uint32Array(this.shared, 4, 3), new Uint8Array(this.shared, 16));
    this.lock = new BookMutex(new Int32Array(this.shared, 0, 1));
  }

  write(data) {
    return this.lock.exec(() => this.ringBuffer.write(data));
  }

  read(bytes) {
    return this.lock.exec(() => this.ringBuffer.read(bytes));
  }
}

module.exports = { SharedRingBuffer };
