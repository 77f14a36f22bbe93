'use strict';
// pool.render's JavaScript side: Mustache views and configs that hold functions (lambdas, an
// `escape` function). A pool thread renders everything it can and hands back a pending render;
// this thread then calls the functions in mustache.js 4.2.0's order while the addon fills in the
// rest (src/render/README.md states the protocol, src/bindings/render/ is the addon's side of
// this thread). The helpers below do the few things mustache.js itself does in JavaScript with a
// function's result, so they behave exactly as there. Before the call, a view that is not plain
// data (Dates, class instances, Maps…) is prepared as mustache.js sees it (prepareRenderParams,
// below, and docs/rendering.md), and pool.render's errors name its params as the caller wrote
// them (inUserTerms).

const { native, contract } = require('./native.js');
const { RpcError, CODES } = require('./errors.js');
const { isArgumentsObject } = require('node:util').types;

const WRITE = contract.renderWrite;

/**
 * The text a `{{name}}` tag writes of `target` (a function's result once called with `self`
 * as `this`, when `call`): `'' + value` unescaped; `String(value)` for the addon to escape as
 * HTML; `'' + escape(value)` with the call's escape function. null and undefined write
 * nothing, and so does an escape function that returns undefined.
 */
function write(target, self, call, mode, escape) {
  // A mirror (prepareRenderParams, below) prints, and is `this`, as the object it stands for.
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
    const result = sectionData(value);
    returned[0] = VALUE;
    return result;
  }
  const output = lambdaOutput(value, self, raw, token);
  returned[0] = LAMBDA;
  return output;
}

/** A section function's result that is not a lambda: data the body renders over, as mustache.js would see it (an instance's getters…). */
function sectionData(value) {
  return typeof value === 'bigint' || typeof value === 'symbol' ? Boolean(value) : prepareValue(value);
}

/**
 * The output of the lambda a section's function returned, called as mustache.js calls it:
 * `this` again, the section's raw text (`raw`, or asked for through `token` when it is long),
 * and a `render` of text in the section's context, which works while the lambda runs (and
 * while its output is made a string), not after.
 */
function lambdaOutput(lambda, self, raw, token, rendered) {
  const text = raw ?? outcome(native.renderSectionText(token));
  let live = token;
  // What `text` renders to, when the addon rendered it ahead (`rendered`): no call for it.
  const render = (template) => (live !== 0 && rendered !== undefined && template === text ? rendered : outcome(native.renderInScope(live, template)));
  try {
    // (Token 0 is never a lambda's: a `render` kept for later finds nothing, as the addon says.)
    const out = lambda.call(self, text, render);
    return out == null ? '' : '' + out;
  } finally {
    live = 0;
  }
}

/** String.prototype.isWellFormed as this module found it (user code may replace it later). */
const isWellFormed = Function.prototype.call.bind(String.prototype.isWellFormed);

/**
 * `count` function tags in a row, each written as write() writes it: `runArgs` holds 4 numbers
 * per tag (the function's index in `functions`, its `this`'s in `objects` or -1 for undefined,
 * the write mode, the escape function's index in `functions` or -1), and each tag's text
 * length is written over its first. A tag of mode `section` is a section's function, called as
 * section() calls it (its 4th number is the index of its raw text in `raws`, or -1 when that is
 * long; the sections' lambdas have tokens `token`, `token + 1`… in order; `rendered[i]`, when
 * there, is what its raw text renders to, which its lambda's `render(text)` then gives):
 * a lambda's output is its text; data it returns ends the run, handed back as `[joined, data]`
 * with a negative count in `returned`. Returns the texts joined, or `[joined, text]` when the
 * last, longer than RUN_TEXT_MAX, comes apart; says in `returned` how many it wrote. It stops
 * once the texts could take more than `room` units of the output (escaping as HTML makes a
 * text at most 6 times longer) or pass RUN_TEXT_MAX, and after a text holding a lone surrogate
 * (which the addon refuses before any later function is called).
 */
function writeRun(functions, objects, args, count, room, raws, token, rendered) {
  const limit = room < RUN_TEXT_MAX ? room : RUN_TEXT_MAX; // (Math.min may be replaced)
  let joined = '';
  let taken = 0;
  let i = 0;
  while (i < count) {
    const at = 4 * i;
    const self = args[at + 1] < 0 ? undefined : original(objects[args[at + 1]]);
    const mode = args[at + 2];
    let text;
    if (mode === WRITE.section) {
      const value = functions[args[at]].call(self);
      if (typeof value !== 'function') {
        // Data: the run ends here, and the addon renders the section's body over it.
        const data = sectionData(value);
        returned[0] = -(i + 1);
        return [joined, data];
      }
      text = lambdaOutput(value, self, args[at + 3] < 0 ? undefined : raws[args[at + 3]], token, rendered === undefined ? undefined : rendered[i]);
      token++;
    } else {
      const escape = args[at + 3] < 0 ? undefined : functions[args[at + 3]];
      text = write(functions[args[at]], self, true, mode, escape);
    }
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

// --- Views as mustache.js 4.2.0 sees them -----------------------------------------------------
//
// pool.render's views as mustache.js 4.2.0 sees them. mustache.js renders whatever object it is
// given: it looks a name up with `name in view` and reads `view[name]`, so a class instance
// shows its prototype getters and methods, a Date prints as String(date), a Map is an object
// whose `size` it can read. The native renderer takes plain data (and functions); this module
// turns a view into plain data that renders the same, on the calling thread, before the call:
//
// - an object that is not plain (a class instance, a Date, a Map, a Set, an Error…, and one
//   without a prototype or an arguments object, which print otherwise) becomes a *mirror*: a
//   plain object with every string-keyed property `in` would find on it below the root
//   prototype: own properties (non-enumerable too), then each prototype's (a getter is
//   read once, with the instance as receiver; a method is the method itself, which the
//   renderer calls as mustache.js does, with the context as `this`). A mirror always has a
//   `toString` function, so the renderer prints it through JavaScript, and the helpers above
//   print the original object instead (`original()`): `String(date)`, or
//   `'' + date` for `{{{date}}}`, exactly as mustache.js. Functions called with a mirror as
//   `this` get the original.
// - a getter that throws (a plain object's or an instance's) becomes a function that throws
//   that very error: the render rejects with it if, and only if, the template looks the name
//   up, as mustache.js throws only then.
// - a BigInt or a symbol becomes a function returning it: the helpers print it and test its
//   truth as mustache.js does (`String(1n)`, and `'' + symbol` throws for `{{{s}}}`).
//
// Plain data is left as it is (no copy): a container is copied only when something in it
// changed. Every object is prepared once per render (a second reference gets the same mirror).
// What stays refused is what the native renderer refuses in any view: typed arrays and
// ArrayBuffers, functions with properties of their own, cyclic views, views nested too deep.

/** Mirror → the object it stands for (lib/render.js passes these back to JavaScript). */
const originals = new WeakMap();

/** The object a mirror stands for, or `v` itself. */
function original(v) {
  if (v === null || (typeof v !== 'object' && typeof v !== 'function')) return v;
  const o = originals.get(v);
  return o === undefined ? v : o;
}

const getPrototypeOf = Object.getPrototypeOf;
const getOwnPropertyNames = Object.getOwnPropertyNames;
const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
const hasOwn = Object.prototype.hasOwnProperty;
const objectToString = Object.prototype.toString;
const isView = ArrayBuffer.isView;
const arrayBufferByteLength = getOwnPropertyDescriptor(ArrayBuffer.prototype, 'byteLength').get;
const sharedByteLength = typeof SharedArrayBuffer === 'function' ? getOwnPropertyDescriptor(SharedArrayBuffer.prototype, 'byteLength').get : undefined;

/** True for an ArrayBuffer or a SharedArrayBuffer (their brand, not their prototype). */
function isBuffer(v) {
  for (const get of [arrayBufferByteLength, sharedByteLength]) {
    if (get === undefined) continue;
    try {
      get.call(v);
      return true;
    } catch {
      // not this kind
    }
  }
  return false;
}

/** The errors of thrower()'s functions, thrown again when one of them is printed. */
const thrown = new WeakMap();
const THROWER = Object.create(Function.prototype, {
  toString: {
    value() {
      throw thrown.get(this);
    },
  },
});

/**
 * A function that throws `error` when the renderer calls it (a getter threw it), or prints it
 * (an array holding it is printed: mustache.js would have thrown reading the item). No
 * property of its own: the renderer refuses functions that have some.
 */
function thrower(error) {
  const throwing = function throwing() {
    throw error;
  };
  thrown.set(throwing, error);
  return Object.setPrototypeOf(throwing, THROWER);
}

/** The values of returning()'s functions, printed in their place when an array holding one is printed. */
const returnedValues = new WeakMap();
const RETURNING = Object.create(Function.prototype, {
  toString: {
    value() {
      return `${returnedValues.get(this)}`; // a symbol throws, as joining an array holding it throws
    },
  },
});

/**
 * A function returning `value` (a BigInt or a symbol, which only the helpers can print). An
 * array holding it prints it as mustache.js prints the value there (joined: String of a BigInt,
 * a TypeError for a symbol). No property of its own: the renderer refuses functions that have some.
 */
function returning(value) {
  const value_ = function value_() {
    return value;
  };
  returnedValues.set(value_, value);
  return Object.setPrototypeOf(value_, RETURNING);
}

/**
 * The params of `pool.render(template, view, partials, config)` with the view prepared: the
 * same array when the view needs nothing.
 */
function prepareRenderParams(params) {
  if (params.length < 2) return params;
  const view = params[1];
  let prepared;
  const outer = left; // (a getter may render while an outer view is prepared)
  try {
    left = contract.maxValues;
    prepared = prepare(view, new Map());
  } catch (e) {
    if (e === TOO_BIG) throw new RpcError(CODES.InvalidParams, `render: view holds more than the ${contract.maxValues} values a render's view may hold`);
    // A Proxy's trap threw: the native conversion reads the view as it is, and says where.
    return params;
  } finally {
    left = outer;
  }
  if (prepared === view) return params;
  const copy = params.slice();
  copy[1] = prepared;
  return copy;
}

/**
 * Values the preparation may still visit: a view holds at most the contract's maxValues (what
 * a call converted value by value may carry), and one that reaches an object many times, or an
 * array with a huge length, is refused before it is walked (TOO_BIG), not walked for minutes.
 */
let left = 0;
const TOO_BIG = Symbol('too big');

function spend(n) {
  if (!(n <= left)) throw TOO_BIG;
  left -= n;
}

/** `v` as plain data that renders as `v` does in mustache.js (see the module doc). */
function prepare(v, seen) {
  switch (typeof v) {
    case 'bigint':
    case 'symbol':
      return returning(v);
    case 'object':
      break;
    default:
      return v;
  }
  if (v === null) return v;
  const known = seen.get(v);
  if (known !== undefined) return known;
  let isArray;
  try {
    isArray = Array.isArray(v); // throws for a revoked Proxy: the conversion then says so
  } catch {
    return v;
  }
  if (isArray) return prepareArray(v, seen);
  if (isView(v) || isBuffer(v)) return v; // refused natively, with its own message
  let proto;
  try {
    proto = getPrototypeOf(v);
  } catch {
    return v; // a Proxy whose trap throws: the conversion names it
  }
  // (An object without a prototype, which mustache.js cannot print, and an arguments object,
  // which it prints as '[object Arguments]' and whose `length` it finds, are mirrored.)
  if (proto !== null && getPrototypeOf(proto) === null && !isArgumentsObject(v)) {
    let plain = false;
    try {
      plain = typeof v.toJSON !== 'function';
    } catch {
      // a toJSON getter that throws: the mirror makes it throw only where the template reads it
    }
    if (plain) return preparePlain(v, seen);
  }
  return mirror(v, seen);
}

/**
 * An array (or a Proxy of one), each element read once, as mustache.js reads it (`length`, then
 * `v[i]`): a copy, when one is needed, is made of the elements this walk read, never with the
 * array's own methods (slice() would ask a Proxy's has trap, which mustache.js never runs).
 */
function prepareArray(v, seen) {
  seen.set(v, v);
  let copy = null;
  const length = v.length;
  spend(length);
  const base = readItems.length;
  try {
    for (let i = 0; i < length; i++) {
      let item;
      let p;
      try {
        item = v[i];
        p = item !== null && typeof item === 'object' ? prepare(item, seen) : prepareScalar(item);
      } catch (e) {
        if (e === TOO_BIG) throw e;
        p = thrower(e);
      }
      if (copy === null && !Object.is(p, item)) {
        copy = readItems.slice(base);
        seen.set(v, copy);
      }
      if (copy !== null) copy.push(p);
      else readItems.push(item);
    }
  } finally {
    readItems.length = base;
  }
  return copy ?? v;
}

/** Elements read by prepareArray, innermost array last (a copy is made from them). */
const readItems = [];

/** prepare for a value that is not an object. */
function prepareScalar(v) {
  return typeof v === 'bigint' || typeof v === 'symbol' ? returning(v) : v;
}

/** Keys and values read by preparePlain, innermost object last (a copy is made from them). */
const readKeys = [];
const readValues = [];

/** `o[k] = v`, for a key `__proto__` too (an own key, as JSON.parse makes it). */
function put(o, k, v) {
  if (k === '__proto__') Object.defineProperty(o, k, { value: v, writable: true, enumerable: true, configurable: true });
  else o[k] = v;
}

/**
 * A plain object: its own enumerable keys, as the native conversion reads them, each read once
 * (a copy, when one is needed, is made of the values this walk read).
 */
function preparePlain(v, seen) {
  seen.set(v, v);
  let copy = null;
  const base = readKeys.length;
  try {
    for (const k in v) {
      if (!hasOwn.call(v, k)) continue;
      spend(1);
      let item;
      let p;
      try {
        item = v[k];
        p = item !== null && typeof item === 'object' ? prepare(item, seen) : prepareScalar(item);
      } catch (e) {
        if (e === TOO_BIG) throw e;
        p = thrower(e); // (item stays undefined: never equal to a function)
      }
      if (copy === null && !Object.is(p, item)) {
        copy = {};
        for (let j = base; j < readKeys.length; j++) put(copy, readKeys[j], readValues[j]);
        seen.set(v, copy);
      }
      if (copy !== null) put(copy, k, p);
      else {
        readKeys.push(k);
        readValues.push(item);
      }
    }
  } finally {
    readKeys.length = base;
    readValues.length = base;
  }
  // A copy whose `toString` or `valueOf` was prepared (a BigInt, a symbol, a throwing getter made
  // a function) prints as the original does, as a mirror (mustache.js: String(v) may throw).
  if (copy !== null && (hasOwn.call(copy, 'toString') || hasOwn.call(copy, 'valueOf'))) {
    originals.set(copy, v);
    Object.defineProperty(copy, Symbol.toPrimitive, { value: printedAs, enumerable: false });
  }
  return copy ?? v;
}

/** Key lists per prototype: its own string keys but `constructor`, with their descriptors. */
const protoKeys = new WeakMap();

function keysOf(proto) {
  let keys = protoKeys.get(proto);
  if (keys === undefined) {
    keys = [];
    for (const k of getOwnPropertyNames(proto)) {
      if (k !== 'constructor') keys.push(k);
    }
    protoKeys.set(proto, keys);
  }
  return keys;
}

/**
 * What `k in v` finds on `v` (an object that is not plain) below the root prototype, each
 * read once (see the module doc): `[m, keys, values]`, `m` the mirror's object (it stands
 * for `v`: `original(m)` is `v`), the values as read, not prepared. The walk of a render's
 * params (lib/params.js) packs them as they are; mirror() makes `m` of them.
 */
function readMirror(v) {
  const m = {};
  originals.set(m, v);
  const keys = [];
  const values = [];
  // (A Proxy whose ownKeys trap throws ends the walk: the caller then sends the view unprepared.)
  for (const k of getOwnPropertyNames(v)) {
    // An own `constructor` is as any other key (only prototypes' are left out).
    let item;
    try {
      item = v[k];
    } catch (e) {
      item = thrower(e);
    }
    keys.push(k);
    values.push(item);
  }
  let proto = getPrototypeOf(v);
  const bare = proto === null;
  let names = null;
  while (proto !== null && getPrototypeOf(proto) !== null) {
    for (const k of keysOf(proto)) {
      names ??= new Set(keys);
      if (names.has(k)) continue; // shadowed by a nearer one
      const d = getOwnPropertyDescriptor(proto, k);
      let item;
      if (d === undefined) continue;
      if ('value' in d) {
        item = d.value;
      } else if (d.get === undefined) {
        item = undefined; // a setter alone: reads undefined
      } else {
        try {
          item = d.get.call(v);
        } catch (e) {
          item = thrower(e);
        }
      }
      names.add(k);
      keys.push(k);
      values.push(item);
    }
    proto = getPrototypeOf(proto);
  }
  // Printed through JavaScript, as the original (the helpers above print `original(m)`).
  if (!(names ?? new Set(keys)).has('toString')) {
    keys.push('toString');
    values.push(bare ? unprintable : objectToString);
  }
  return [m, keys, values];
}

/**
 * The mirror of `v`, an object that is not plain: a plain object with what `k in v` finds
 * below the root prototype, read once (see the module doc).
 */
function mirror(v, seen) {
  const [m, keys, values] = readMirror(v);
  seen.set(v, m);
  spend(keys.length);
  for (let i = 0; i < keys.length; i++) put(m, keys[i], prepare(values[i], seen));
  // So is a mirror inside an array that is printed (joined in JavaScript): String(original), as
  // mustache.js joins the original items (a symbol key: no field of the view).
  Object.defineProperty(m, Symbol.toPrimitive, { value: printedAs, enumerable: false });
  return m;
}

/**
 * The printing of a mirror of an object without a prototype: String() of it throws its
 * TypeError ("Cannot convert object to primitive value"), as in mustache.js.
 */
function unprintable() {
  return String(this);
}

/** A mirror's Symbol.toPrimitive: its original, converted as JavaScript converts it. */
function printedAs(hint) {
  const v = originals.get(this);
  return hint === 'number' ? Number(v) : String(v);
}

/** A section function's data result, prepared as a view is. */
function prepareValue(v) {
  if (v === null || typeof v !== 'object') return v;
  const outer = left;
  try {
    left = contract.maxValues;
    return prepare(v, new Map());
  } catch {
    return v; // a Proxy's trap threw, or too many values: reading the result natively says so
  } finally {
    left = outer;
  }
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

module.exports = { finishRender, inUserTerms, renderFailed, prepareRenderParams, readMirror, thrower, returning, isBuffer };
