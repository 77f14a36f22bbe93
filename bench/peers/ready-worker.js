'use strict';
// The worker of the book's leader.js memory experiment: says 'ready' once it runs, then stays
// alive (idle) until terminated.
const { parentPort } = require('node:worker_threads');

parentPort.on('message', () => {});
parentPort.postMessage('ready');
