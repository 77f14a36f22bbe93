'use strict';
// A worker_thread that serves bench/serve.js's methods through corepool: the tiny `add` task and
// mustache.js rendering.
const { parentPort } = require('node:worker_threads');
const Mustache = require('mustache');
const { Pool } = require('../..');

Pool.shared().serve({
  add({ a, b }) {
    return a + b;
  },
  mustache(template, data) {
    return Mustache.render(template, data);
  },
});
parentPort.postMessage('ready');
