'use strict';
// pool.render's JavaScript side: Mustache views and configs that hold functions (lambdas, an
// `escape` function). A pool thread renders everything it can and hands back a pending render;
// this thread then calls the functions in mustache.js 4.2.0's order while the addon fills in the
// rest (src/commands/render/functions.rs states the two passes, src/bindings/render.rs this
// side). The helpers below do the few things mustache.js itself does in JavaScript with a
// function's result, so they behave exactly as there.

const { native, contract } = require('./native.js');
const { RpcError } = require('./errors.js');

const WRITE = contract.renderWrite;

/**
 * The text a `{{name}}` tag writes of `target` (a function's result once called with `self`
 * as `this`, when `call`): `'' + value` unescaped; `String(value)` for the addon to escape as
 * HTML; `'' + escape(value)` with the call's escape function. null and undefined write
 * nothing, and so does an escape function that returns undefined.
 */
function write(target, self, call, mode, escape) {
  const value = call ? target.call(self) : target;
  if (value == null) return '';
  if (mode === WRITE.raw) return '' + value;
  if (mode === WRITE.html) return String(value);
  const escaped = escape(value);
  return escaped === undefined ? '' : '' + escaped;
}

/** Whether `{{^name}}` renders its body when the name's function returned `value`. */
function inverted(value) {
  return !value || (Array.isArray(value) && value.length === 0);
}

/** A section lambda: `lambda.call(self, raw, render)`; its result is written as it is. */
function lambda(fn, self, raw, token) {
  const value = fn.call(self, raw, (text) => outcome(native.renderInScope(token, text)));
  return value == null ? '' : '' + value;
}

const helpers = Object.freeze({ write, inverted, lambda });

/** The addon's answer: the output, or `[code, message]` for an error of the render's. */
function outcome(answer) {
  if (Array.isArray(answer)) throw new RpcError(answer[0], answer[1]);
  return answer;
}

/** Finishes a render whose call held functions (`handles`, kept by the call function). */
function finishRender(result, handles) {
  if (typeof result === 'string' || ArrayBuffer.isView(result)) return result;
  return outcome(native.finishRender(result, handles, helpers));
}

module.exports = { finishRender };
