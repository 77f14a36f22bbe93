'use strict';
// What the view engines (corepool/express, corepool/fastify) hand their framework when a render
// fails: corepool's own errors get `status` and `statusCode` 500 (the properties Express's and
// Fastify's error handlers read), and a template's parse error gets a first stack frame at the
// file and line that did not parse, where the stack otherwise starts in corepool's call table.
// An exception a view's function threw is left as it was thrown.

const { RpcError } = require('./errors.js');
const { inUserTerms } = require('./render.js');

/**
 * `e` made ready for the framework. `fileOf(data)`: the absolute path of the file that did not
 * parse, given the error's data (`{ template, partial, line, column }`), or null if unknown.
 */
function viewError(e, fileOf) {
  if (!(e instanceof RpcError)) return e;
  inUserTerms(e, 'locals'); // the view is the framework's locals

  if (e.status === undefined && e.statusCode === undefined) {
    e.status = 500;
    e.statusCode = 500;
  }
  const data = e.data;
  if (data === null || typeof data !== 'object' || typeof data.line !== 'number') return e;
  const file = fileOf(data);
  const stack = e.stack;
  const header = `${e.name}: ${e.message}\n`;
  if (file === null || typeof stack !== 'string' || !stack.startsWith(header)) return e;
  const name = data.partial ?? data.template ?? file;
  e.stack = `${header}    at ${name} (${file}:${data.line}:${data.column})\n${stack.slice(header.length)}`;
  return e;
}

module.exports = { viewError };
