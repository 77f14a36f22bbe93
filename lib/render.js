'use strict';
// pool.render's JavaScript side: Mustache views and configs that hold functions (lambdas, an
// `escape` function). A pool thread renders everything it can and hands back a pending render;
// this thread then calls the functions in mustache.js 4.2.0's order while the addon fills in the
// rest (src/render/README.md states the protocol, src/bindings/render/ is the addon's side of
// this thread). The helpers below do the few things mustache.js itself does in JavaScript with a
// function's result, so they behave exactly as there.

const { native, contract } = require('./native.js');
const { RpcError, CODES } = require('./errors.js');
const { original, prepareValue } = require('./render-view.js');

const WRITE = contract.renderWrite;

/**
 * The text a `{{name}}` tag writes of `target` (a function's result once called with `self`
 * as `this`, when `call`): `'' + value` unescaped; `String(value)` for the addon to escape as
 * HTML; `'' + escape(value)` with the call's escape function. null and undefined write
 * nothing, and so does an escape function that returns undefined.
 */
function write(target, self, call, mode, escape) {
  // A mirror (lib/render-view.js) prints, and is `this`, as the object it stands for.
  const value = call ? target.call(original(self)) : original(target);
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
 * The memory the addon and these helpers share, made by the addon (no constructor of the
 * caller's ever holds it). `returned`: what section() or writeRun() returned, for the addon to
 * read without a call; written last, once nothing else will run before they return (the calls
 * they make, and turning a lambda's output into a string, may run other sections' functions,
 * which write it too). `runArgs`: writeRun()'s arguments, and the lengths of its texts.
 */
const [returned, runArgs] = native.renderHelperMemory();
const { value: VALUE, lambda: LAMBDA, runTextMax: RUN_TEXT_MAX } = contract.renderSection;

/**
 * `{{#name}}` or `{{^name}}` whose name found the function `fn`, called with `self` as `this`:
 * for an inverted section, whether its body renders; else the result (a BigInt or a symbol as
 * its truthiness, all a section makes of one), unless that is a function: then it is a lambda,
 * called at once as mustache.js calls it (`this` again, the section's raw text, and a render
 * of text in the section's context, through the addon's `token`), and its output comes back.
 * `raw` is the raw text, or undefined when it is long: then it is asked for only if needed.
 */
function section(fn, self, isInverted, raw, token) {
  self = original(self);
  const value = fn.call(self);
  if (isInverted) return inverted(value);
  if (typeof value !== 'function') {
    // Data the body renders over, as mustache.js would see it (an instance's getters…).
    const result = typeof value === 'bigint' || typeof value === 'symbol' ? Boolean(value) : prepareValue(value);
    returned[0] = VALUE;
    return result;
  }
  const text = raw ?? outcome(native.renderSectionText(token));
  const out = value.call(self, text, (template) => outcome(native.renderInScope(token, template)));
  const output = out == null ? '' : '' + out;
  returned[0] = LAMBDA;
  return output;
}

/** String.prototype.isWellFormed as this module found it (user code may replace it later). */
const isWellFormed = Function.prototype.call.bind(String.prototype.isWellFormed);

/**
 * `count` function tags in a row, each written as write() writes it: `runArgs` holds 4 numbers
 * per tag (the function's index in `functions`, its `this`'s in `objects` or -1 for undefined,
 * the write mode, the escape function's index in `functions` or -1), and each tag's text
 * length is written over its first. Returns the texts joined, or `[joined, text]` when the
 * last, longer than RUN_TEXT_MAX, comes apart; says in `returned` how many it wrote. It stops
 * once the texts could take more than `room` units of the output (escaping as HTML makes a
 * text at most 6 times longer) or pass RUN_TEXT_MAX, and after a text holding a lone surrogate
 * (which the addon refuses before any later function is called).
 */
function writeRun(functions, objects, args, count, room) {
  const limit = room < RUN_TEXT_MAX ? room : RUN_TEXT_MAX; // (Math.min may be replaced)
  let joined = '';
  let taken = 0;
  let i = 0;
  while (i < count) {
    const at = 4 * i;
    const self = args[at + 1] < 0 ? undefined : original(objects[args[at + 1]]);
    const escape = args[at + 3] < 0 ? undefined : functions[args[at + 3]];
    const mode = args[at + 2];
    const text = write(functions[args[at]], self, true, mode, escape);
    args[at] = text.length;
    i++;
    if (i > 1 && text.length > RUN_TEXT_MAX) {
      returned[0] = i;
      return [joined, text];
    }
    joined += text;
    taken += mode === WRITE.html ? 6 * text.length : text.length;
    if (taken > limit || !isWellFormed(text)) break;
  }
  returned[0] = i;
  return joined;
}

const helpers = Object.freeze({ write, section, writeRun, returned, runArgs });

/** The addon's answer: the output, or `[code, message, data?]` for an error of the render's. */
function outcome(answer) {
  if (Array.isArray(answer)) throw new RpcError(answer[0], answer[1], answer[2]);
  return answer;
}

/** Finishes a render whose call held functions (`handles`, kept by the call function). */
function finishRender(result, handles) {
  if (typeof result === 'string' || ArrayBuffer.isView(result)) return result;
  return outcome(native.finishRender(result, handles, helpers));
}

/**
 * The names the native side gives pool.render's params (`params[1]`, `data`), as the caller
 * wrote them: `view`, `partials`, `config`. `view` is renamed `name` (the view engines say
 * `locals`). The error is changed in place (message and stack) and returned.
 */
function inUserTerms(e, name = 'view') {
  if (!(e instanceof RpcError) || e.code !== CODES.InvalidParams || typeof e.message !== 'string') return e;
  const message = e.message
    .replace(/^render: (?:data|view)(?=[.[]| is an? )/, `render: ${name}`)
    .replace(/\bparams\[1\](?=[.[ :]|$)/g, name)
    .replace(/\bview(?=[.[])/g, name)
    .replace(/\bparams\[2\](?=[.[ :]|$)/g, 'partials')
    .replace(/\bparams\[3\](?=[.[ :]|$)/g, 'config');
  if (message === e.message) return e;
  if (typeof e.stack === 'string' && e.stack.includes(e.message)) e.stack = e.stack.replace(e.message, message);
  e.message = message;
  return e;
}

/** pool.render's rejection, its params named as the caller wrote them. */
function renderFailed(e) {
  throw inUserTerms(e);
}

module.exports = { finishRender, inUserTerms, renderFailed };
