'use strict';
// Piscina's task file for bench/serve.js: the same two tasks as peers/serve-worker.js.
const Mustache = require('mustache');

function add({ a, b }) {
  return a + b;
}

function mustache({ template, data }) {
  return Mustache.render(template, data);
}

module.exports = add;
module.exports.add = add;
module.exports.mustache = mustache;
