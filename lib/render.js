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

/**
 * What section() returned, for the addon to read without a call: LAMBDA when it was a lambda's
 * output, VALUE when it was the function's result. Written last, once nothing else will run
 * before section() returns (the calls it makes, and turning a lambda's output into a string,
 * may run other sections' functions, which write it too). Made by the addon: no constructor of
 * the caller's ever holds it.
 */
const returned = native.renderReturnedWord();
const { value: VALUE, lambda: LAMBDA } = contract.renderSection;

/**
 * `{{#name}}` or `{{^name}}` whose name found the function `fn`, called with `self` as `this`:
 * for an inverted section, whether its body renders; else the result (a BigInt or a symbol as
 * its truthiness, all a section makes of one), unless that is a function: then it is a lambda,
 * called at once as mustache.js calls it (`this` again, the section's raw text, and a render
 * of text in the section's context, through the addon's `token`), and its output comes back.
 * `raw` is the raw text, or undefined when it is long: then it is asked for only if needed.
 */
function section(fn, self, isInverted, raw, token) {
  const value = fn.call(self);
  if (isInverted) return inverted(value);
  if (typeof value !== 'function') {
    const result = typeof value === 'bigint' || typeof value === 'symbol' ? Boolean(value) : value;
    returned[0] = VALUE;
    return result;
  }
  const text = raw ?? outcome(native.renderSectionText(token));
  const out = value.call(self, text, (template) => outcome(native.renderInScope(token, template)));
  const output = out == null ? '' : '' + out;
  returned[0] = LAMBDA;
  return output;
}

const helpers = Object.freeze({ write, section, returned });

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
