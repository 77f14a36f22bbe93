'use strict';
// An error thrown by a task of a task-file pool, made again on the caller's thread from what its
// worker sent (lib/serve.js's errorParts, with causes): the same built-in class (TypeError…) or
// an Error with the user's class name, its message, its stack (with the task file's lines),
// its own plain-data fields (`code`…) and its causes. corepool's own errors stay RpcErrors.

const path = require('node:path');
const { CODES } = require('./errors.js');

/** corepool/piscina's task file: its tasks' errors are made again by lib/piscina.js, its own way. */
const PISCINA_WORKER = path.join(__dirname, 'piscina-worker.js');

const BUILT_IN = { Error, TypeError, RangeError, SyntaxError, ReferenceError, EvalError, URIError };

/** `error` (an RpcError of a task-file pool's call) → the task's error, if a task threw it. */
function taskError(error) {
  const d = error.data;
  if (error.code !== CODES.CommandFailed || !isThrown(d)) return error;
  return rebuild(error.message, d);
}

/** The data of an Error sent whole: its name and stack are strings. */
function isThrown(d) {
  return d !== null && typeof d === 'object' && typeof d.name === 'string' && typeof d.stack === 'string';
}

function rebuild(message, d) {
  const Class = Object.hasOwn(BUILT_IN, d.name) ? BUILT_IN[d.name] : Error;
  const e = new Class(message);
  if (e.name !== d.name) hidden(e, 'name', d.name);
  hidden(e, 'stack', d.stack);
  const cause = d.cause;
  if (cause !== null && typeof cause === 'object') {
    if (isThrown(cause.error)) hidden(e, 'cause', rebuild(typeof cause.error.message === 'string' ? cause.error.message : '', cause.error));
    else if (Object.hasOwn(cause, 'value')) hidden(e, 'cause', cause.value);
  }
  for (const key of Object.keys(d)) {
    if (key === 'name' || key === 'stack' || key === 'cause' || key === 'message') continue;
    Object.defineProperty(e, key, { value: d[key], enumerable: true, writable: true, configurable: true });
  }
  return e;
}

/** As Error's own name, stack and cause are: not enumerable. */
function hidden(e, key, value) {
  Object.defineProperty(e, key, { value, enumerable: false, writable: true, configurable: true });
}

module.exports = { taskError, PISCINA_WORKER };
