'use strict';
// The task file of template-render.js's /piscina and /file-pool routes: Piscina and corepool's
// pool of JavaScript workers load this same file and render with mustache.js 4.2.0 in their
// workers, the call the book's RpcWorkerPool makes in its workers.
//
//   run({ template, data }) → the rendered string
const Mustache = require('mustache');

module.exports = ({ template, data }) => Mustache.render(template, data);
