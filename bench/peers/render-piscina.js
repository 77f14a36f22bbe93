'use strict';
// The Piscina task for template-render.js: renders with mustache.js 4.2.0 in a Piscina worker,
// the same call the book's RpcWorkerPool makes in its workers.
//
//   piscina.run({ template, data }) → the rendered string
const Mustache = require('mustache');

module.exports = ({ template, data }) => Mustache.render(template, data);
