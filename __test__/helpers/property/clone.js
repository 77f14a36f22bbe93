'use strict';
// The oracle for methods served in JavaScript (docs/values.md): params the plain fast path
// takes cross as before (oracle.js's JSON image); params it refuses (or that hold undefined or
// holes) cross as structured clone does, and the handler's result goes back the same way when
// it is not plain data. So the answer is the structured-clone image of the value, computed here
// with the test process's own structuredClone() of a fresh build, compared object by object
// with the identities it keeps (cycles, an object reached twice). What structured clone refuses
// is refused with an RpcError InvalidParams named 'DataCloneError'; a getter that throws while
// the params are read rejects the call with the getter's own error; a value holding shared
// memory keeps the value-by-value rules.
const { types } = require('node:util');
const { MAX_NESTING } = require('./run.js');
const { contract } = require('../../../lib/native.js');
const { show } = require('./settle.js');
const { sparseIndex, hugeLength, build } = require('./values.js');
const { objectSpec, arraySpec, valueSpec, bytesSpec, anyOf, jsonImage } = require('./oracle.js');

/** Whether the description holds `undefined` or a hole (the fast path refuses both for JS). */
function holdsUndefinedOrHole(d) {
  if (d === null || typeof d !== 'object') return false;
  if (d.t === 'v') return d.v === undefined;
  if (d.t === 'sparse') {
    if (hugeLength(d)) return true;
    const filled = new Set(d.at.map(([i]) => sparseIndex(d, i)));
    if (filled.size < d.length) return true;
    return live(d).at.some(([, item]) => holdsUndefinedOrHole(item));
  }
  return Object.values(d).some(holdsUndefinedOrHole);
}

/** A sparse array's description with only what it holds: a later value at an index replaces an earlier one. */
function live(d) {
  if (d === null || typeof d !== 'object' || d.t !== 'sparse') return d;
  const at = new Map(d.at.map(([i, item]) => [sparseIndex(d, i), [i, item]]));
  return { ...d, at: [...at.values()] };
}

/** Whether the description holds shared memory (then the old value-by-value rules apply). */
function holdsShared(d) {
  if (d === null || typeof d !== 'object') return false;
  if (d.t === 'sparse' && live(d) !== d && live(d).at.length !== d.at.length) return holdsShared(live(d));
  // (A 'toJSON' entry of the object is replaced by the toJSON method: what it held is not sent.)
  if (d.t === 'toJSON') return holdsShared({ ...d.of, entries: d.of.entries.filter(([k]) => k !== 'toJSON') });
  if (d.t === 'refused' && d.kind === 'SharedArrayBuffer') return true;
  if (d.t === 'typed' && d.buffer.includes('SharedArrayBuffer')) return true;
  return Object.values(d).some(holdsShared);
}

/** Flaky getters replaced by getters of a marker string; `marks` collects each one's values. */
function markFlaky(d, marks) {
  if (d === null || typeof d !== 'object') return d;
  if (Array.isArray(d)) return d.map((x) => markFlaky(x, marks));
  if (d.t === 'getter' && d.mode === 'flaky') {
    const mark = `\u0000flaky ${marks.size}\u0000`;
    marks.set(mark, d.values);
    return { t: 'getter', mode: 'value', of: { t: 'v', v: mark } };
  }
  return Object.fromEntries(Object.entries(d).map(([k, v]) => [k, markFlaky(v, marks)]));
}

const tag = (x) => Object.prototype.toString.call(x);
const protoName = (x) => {
  const p = Object.getPrototypeOf(x);
  return p === null ? null : Object.hasOwn(p, 'constructor') ? p.constructor?.name : '?';
};
const bytesOf = (x) => Buffer.from(x.buffer ?? x, x.byteOffset ?? 0, x.byteLength);

/**
 * Compares `actual` with the structured-clone image `expected` (realm-independent: by tags,
 * prototypes' names and contents), keeping identities: an object of `expected` reached twice
 * must be one object in `actual`, and two of them two. Iterative (images nest 20,000 deep).
 * `marks`: marker strings that stand for any of a flaky getter's values.
 */
function cloneCheck(expected, marks) {
  return (actual, at) => {
    const pairs = new Map();
    const back = new Map();
    const stack = [[expected, actual, at || 'value']];
    while (stack.length > 0) {
      const [e, a, where] = stack.pop();
      if (typeof e === 'string' && marks.has(e)) {
        if (!marks.get(e).some((m) => Object.is(m.v, a))) return `${where}: ${show(a)} is none of the values the getter returned`;
        continue;
      }
      if (e === null || (typeof e !== 'object' && typeof e !== 'function')) {
        if (!Object.is(e, a)) return `${where}: expected ${show(e)}, got ${show(a)}`;
        continue;
      }
      if (a === null || typeof a !== 'object') return `${where}: expected ${show(e)}, got ${show(a)}`;
      if (pairs.has(e) || back.has(a)) {
        if (pairs.get(e) !== a || back.get(a) !== e) return `${where}: the identities differ from the clone's (an object reached twice, or a cycle)`;
        continue;
      }
      pairs.set(e, a);
      back.set(a, e);
      if (tag(e) !== tag(a) || protoName(e) !== protoName(a) || Array.isArray(e) !== Array.isArray(a)) return `${where}: expected ${show(e)}, got ${show(a)}`;
      if (types.isDate(e)) {
        if (!Object.is(e.getTime(), a.getTime())) return `${where}: expected ${show(e)}, got ${show(a)}`;
      } else if (types.isRegExp(e)) {
        if (e.source !== a.source || e.flags !== a.flags || e.lastIndex !== a.lastIndex) return `${where}: expected ${show(e)}, got ${show(a)}`;
      } else if (types.isNativeError(e)) {
        // (Its stack is where this process built its own copy: only its kind is compared.)
        for (const k of ['name', 'message']) if (e[k] !== a[k]) return `${where}.${k}: expected ${show(e[k])}, got ${show(a[k])}`;
        if (typeof a.stack !== typeof e.stack) return `${where}.stack: expected a ${typeof e.stack}, got ${show(a.stack)}`;
      } else if (types.isBoxedPrimitive(e)) {
        if (!Object.is(e.valueOf(), a.valueOf())) return `${where}: expected ${show(e)}, got ${show(a)}`;
      } else if (types.isAnyArrayBuffer(e) || ArrayBuffer.isView(e)) {
        // (A Buffer's place in Node's shared pool is no part of its value: offsets are not compared.)
        const eb = e.buffer ?? e;
        const ab = a.buffer ?? a;
        if (e.byteLength !== a.byteLength || eb.resizable !== ab.resizable || (e === eb && e.maxByteLength !== a.maxByteLength)) {
          return `${where}: expected ${show(e)} (${eb.resizable ? 'resizable' : 'fixed'}), got ${show(a)}`;
        }
        if (!bytesOf(e).equals(bytesOf(a))) return `${where}: expected bytes ${show(e)}, got ${show(a)}`;
      } else if (types.isMap(e)) {
        if (e.size !== a.size) return `${where}: expected ${show(e)}, got ${show(a)}`;
        const ae = [...a];
        [...e].forEach(([k, v], i) => stack.push([k, ae[i][0], `${where}.keys()[${i}]`], [v, ae[i][1], `${where}.values()[${i}]`]));
      } else if (types.isSet(e)) {
        if (e.size !== a.size) return `${where}: expected ${show(e)}, got ${show(a)}`;
        const av = [...a];
        [...e].forEach((v, i) => stack.push([v, av[i], `${where}.values()[${i}]`]));
      }
      if (Array.isArray(e) && e.length !== a.length) return `${where}: expected length ${e.length}, got ${a.length}`;
      if (ArrayBuffer.isView(e)) continue; // its elements are its bytes
      const ek = Object.keys(e);
      const ak = Object.keys(a);
      if (ek.length !== ak.length || ek.some((k, i) => k !== ak[i])) return `${where}: expected keys ${show(ek)}, got ${show(ak)}`;
      for (const k of ek) {
        const desc = Object.getOwnPropertyDescriptor(a, k);
        if (!('value' in desc)) return `${where}.${k}: not a data property`;
        stack.push([e[k], desc.value, `${where}.${k}`]);
      }
    }
    return null;
  };
}

/**
 * Whether a result is plain data (lib/serve.js sends it as before): no undefined, no hole, no
 * object reached twice, only arrays, objects on Object.prototype or none, Uint8Arrays and
 * primitives (docs/values.md: "holds nothing JSON would change"; BigInts and NaN have their
 * own value-by-value paths).
 */
function isPlainImage(root) {
  const seen = new Set();
  const stack = [root];
  while (stack.length > 0) {
    const v = stack.pop();
    if (v === undefined || typeof v === 'function' || typeof v === 'symbol') return false;
    if (v === null || typeof v !== 'object') continue;
    if (seen.has(v)) return false;
    seen.add(v);
    if (types.isUint8Array(v)) continue;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        if (!(i in v)) return false;
        stack.push(v[i]);
      }
      continue;
    }
    if (ArrayBuffer.isView(v) || types.isAnyArrayBuffer(v) || types.isBoxedPrimitive(v)) return false;
    const p = Object.getPrototypeOf(v);
    if (p !== null && p !== Object.prototype && protoName(v) !== 'Object') return false;
    for (const k of Object.keys(v)) stack.push(v[k]);
  }
  return true;
}

/** The plain-data spec (oracle.js) of a plain image: strings and keys made well-formed. */
function plainSpec(v, marks) {
  if (typeof v === 'string' && marks.has(v)) return anyOf(marks.get(v).flatMap((m) => [valueSpec(m.v), jsonImage(m)]));
  if (types.isUint8Array(v)) return bytesSpec([...v]);
  if (Array.isArray(v)) return arraySpec(v.map((x) => plainSpec(x, marks)));
  if (v !== null && typeof v === 'object') return objectSpec(Object.keys(v).map((k) => [k, plainSpec(v[k], marks)]));
  return valueSpec(v);
}

/** Levels of objects in `v` (an object met again, as in a cycle, is not walked again). */
function nesting(v) {
  let deepest = 0;
  const seen = new Set();
  const stack = [[v, 0]];
  while (stack.length > 0) {
    const [x, n] = stack.pop();
    if (x !== null && typeof x === 'object' && !seen.has(x)) {
      seen.add(x);
      deepest = Math.max(deepest, n + 1);
      for (const k of Object.keys(x)) stack.push([x[k], n + 1]);
    }
  }
  return deepest;
}

// V8's serializer recurses: past some 1,000 levels (how many depends on the stack left where it
// runs) serializing or reading a value overflows the stack. Reported, not documented: see the
// report on issue 13; until it is settled, these outcomes are allowed past this depth only.
const STACK_DEEP = 1000;
const STACK_OVERFLOW = 'Maximum call stack size exceeded';

/**
 * What a served echo may answer when its params travel as structured clone: { check, codes,
 * messages } (messages: of a non-RpcError rejection allowed, a getter's own error), or null
 * when structured clone of the value takes no one shape here (a stack overflow in this process).
 */
function clonedExpectation(d) {
  const marks = new Map();
  const marked = markFlaky(d, marks);
  const exotic = holdsExotic(d);
  let image;
  try {
    // A Proxy or an arguments object crosses as what it stands for (docs/values.md).
    const built = build(marked);
    image = structuredClone(exotic ? standingFor(built) : built);
  } catch (e) {
    if (e?.name === 'DataCloneError' || e instanceof TooMany) {
      // A getter after the refused value may throw first when lib/clone.js looks for its place,
      // and so may a trap of a Proxy before it, read as the Proxy is copied.
      return { check: null, codes: new Set(['DataCloneError']), messages: new Set([...getterErrors(d), ...trapErrors(d)]) };
    }
    if (e?.message === STACK_OVERFLOW) return null;
    // A getter or a trap threw: that error, or one read before it (the getters are all read as
    // lib/clone.js looks for what it refuses), or the DataCloneError of a refused value met
    // first, or of a value nested too deep for the serializer, met before the Proxy.
    const codes = new Set(exotic && (holdsRefused(d) || nestsPastStack(d)) ? ['DataCloneError'] : []);
    return { check: null, codes, messages: new Set([e.message, ...(exotic ? [...getterErrors(d), ...trapErrors(d)] : [])]) };
  }
  // A handler that returns nothing (undefined) answers null (docs/values.md, Limits).
  if (image === undefined) return { check: valueSpec(null).check, codes: new Set(), messages: new Set() };
  const depth = nesting(image) + 1;
  const exact = cloneCheck(image, marks);
  const messages = new Set(depth > STACK_DEEP ? [STACK_OVERFLOW] : []);
  const codes = new Set(depth > STACK_DEEP ? ['InvalidParams', 'InternalError', 'CommandFailed'] : []);
  if (!isPlainImage(image) || depth > MAX_NESTING + 8) return { check: exact, codes, messages };
  // A plain result crosses as plain data (strings made well-formed), or as structured clone when
  // the native conversion refuses it: which one is not said for every value (NaN, −0, BigInts).
  const plain = plainSpec(image, marks).check;
  return { check: (a, at) => (exact(a, at) === null ? null : plain(a, at)), codes, messages };
}

/** Whether the description nests past STACK_DEEP levels somewhere (then a stack overflow may end the call). */
function nestsPastStack(d) {
  if (d === null || typeof d !== 'object') return false;
  return (d.t === 'deep' && d.depth > STACK_DEEP - 8) || Object.values(d).some(nestsPastStack);
}

/** Thrown by standingFor for an array longer than the values a call may carry. */
class TooMany extends Error {}

/**
 * What a Proxy or an arguments object stands for when it is sent to JavaScript (docs/values.md):
 * an array's `length` and items (a Proxy of one), else its own enumerable string keys, each read
 * once through its traps; what holds one is copied around it (arrays with their holes, objects on
 * Object.prototype); anything else is itself. Identities kept. An array (a Proxy of one) longer
 * than contract.maxValues is refused before its items are read.
 */
function standingFor(root) {
  const copies = new Map();
  const copy = (v) => {
    if (v === null || typeof v !== 'object') return v;
    if (copies.has(v)) return copies.get(v);
    const proxied = types.isProxy(v);
    const isArray = Array.isArray(v);
    if (!proxied && !types.isArgumentsObject(v) && !isArray && !isPlainObject(v)) return v;
    const c = isArray ? [] : {};
    copies.set(v, c);
    if (isArray) {
      const length = v.length;
      if (proxied && length > contract.maxValues) throw new TooMany(`an array of ${length} elements`);
      c.length = length;
      const keys = proxied ? Array.from({ length }, (_, i) => String(i)) : Object.keys(v);
      for (const k of keys) c[k] = copy(v[k]);
      return c;
    }
    for (const k of Object.keys(v)) Object.defineProperty(c, k, { value: copy(v[k]), writable: true, enumerable: true, configurable: true });
    return c;
  };
  return copy(root);
}

const isPlainObject = (v) => {
  const p = Object.getPrototypeOf(v);
  return p === null || p === Object.prototype;
};

/** The errors the traps of the description's Proxies throw. */
function trapErrors(d) {
  if (d === null || typeof d !== 'object') return [];
  const own = d.t === 'proxy' && d.trap !== 'none' && d.trap !== 'revoked' ? [`the ${d.trap} trap throws`] : [];
  const revoked = d.t === 'proxy' && d.trap === 'revoked' ? [REVOKED] : [];
  return [...own, ...revoked, ...Object.values(d).flatMap(trapErrors)];
}

/** The message of the TypeError a revoked Proxy throws when it is read (this process's words). */
const REVOKED = (() => {
  const r = Proxy.revocable([], {});
  r.revoke();
  try {
    Array.isArray(r.proxy);
  } catch (e) {
    return e.message;
  }
  return null;
})();

/** Whether the description holds a value structured clone refuses (but shared memory). */
function holdsRefused(d) {
  if (d === null || typeof d !== 'object') return false;
  if (d.t === 'refused' && ['function', 'arrow', 'async function', 'class', 'symbol', 'Promise', 'WeakMap'].includes(d.kind)) return true;
  if (d.t === 'v' && typeof d.v === 'symbol') return true;
  if (d.t === 'toJSON' && d.enumerable) return true;
  return Object.values(d).some(holdsRefused);
}

/** Whether the description holds an object structured clone refuses that plain params may hold. */
function holdsExotic(d) {
  if (d === null || typeof d !== 'object') return false;
  return d.t === 'proxy' || d.t === 'arguments' || Object.values(d).some(holdsExotic);
}

function getterErrors(d) {
  if (d === null || typeof d !== 'object') return [];
  if (d.t === 'object') {
    const own = d.entries.filter(([, e]) => e.t === 'getter' && e.mode === 'throws').map(([k]) => `the getter of ${show(k)} throws`);
    return [...own, ...d.entries.flatMap(([, e]) => getterErrors(e))];
  }
  if (d.t === 'many') return getterErrors({ t: 'object', entries: d.items.map((item, i) => [d.as === 'array' ? 'g' : `k${i}`, item]) });
  return Object.values(d).flatMap(getterErrors);
}

module.exports = { live, STACK_OVERFLOW, nestsPastStack, nesting, getterErrors, holdsUndefinedOrHole, holdsShared, holdsExotic, trapErrors, clonedExpectation };
