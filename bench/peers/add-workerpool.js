'use strict';
// The tiny task of the dispatch benchmark for workerpool: exec('add', [a, b]) → a + b.
const workerpool = require('workerpool');

workerpool.worker({
  add(a, b) {
    return a + b;
  },
});
