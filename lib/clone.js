'use strict';
// Structured-clone values for calls from JavaScript to JavaScript (task-file pools,
// corepool/piscina, methods served with Pool#serve): what the fast paths refuse (a Date, Map,
// Set, RegExp, Error, ArrayBuffer, DataView, typed array, class instance, undefined, sparse
// array, cycle, an object reached twice…) crosses as V8's structured-clone bytes, the format
// postMessage uses (`v8.Serializer`), which the native side carries as they are
// (`Params::Cloned`, `Value::Cloned`) and the JavaScript thread at the other end reads back.
//
// When: lib/pool.js sends the params of a call this way only when lib/params.js refused them
// as plain data and the method is not a native command (or a transfer list was given); a
// serving thread (lib/serve.js) sends a result this way only when the native conversion
// refused it. Plain data keeps its paths (packed tape, value by value, JSON text): nothing
// changes for it, and native commands keep their plain-data contract.
//
// The message is sent as its parts, an array: V8's bytes of the value (header included), then
// the ArrayBuffers it moves, which V8 wrote as references by number. The native side keeps them
// as one frame (src/bindings/convert/cloned.rs, which checks its head against the bytes
// present) and hands the receiver a Buffer of V8's bytes, or `{ bytes, moved }` when buffers
// are moved.
//
// Copies of a moved buffer's bytes: at most one, into native memory on the sending thread,
// which then detaches the sender's ArrayBuffer (as postMessage does; a buffer that cannot be
// detached, a WebAssembly memory's, is copied and stays). None on the receiving thread: the
// buffer arrives as an external ArrayBuffer over that native memory, freed (or kept for a later
// message) once it is collected. None either when the buffer moved is such a received one: the
// native side recognises its memory, hands it to the new message as it is and detaches it here,
// so a buffer going back and forth is copied on its first move only. The one copy remains for a
// buffer JavaScript made because Node-API cannot take a JavaScript ArrayBuffer's memory from its
// owner. Node marks external ArrayBuffers untransferable: a received moved buffer can be moved
// again by another call (uncopied), but postMessage does not move it (Node 20 copies it, later
// versions throw). A buffer that is not moved is copied inside V8's bytes, as everything else:
// into the message, into native memory, into the receiver's Buffer of V8's bytes and out of it
// by V8. A runtime without the Serializer class (Bun) writes the value with `v8.serialize`,
// moved buffers copied inside it.

const v8 = require('node:v8');
const { types } = require('node:util');
const { RpcError, CODES } = require('./errors.js');
const { native, contract } = require('./native.js');
const { flatBytes, isFlat, readFlat } = require('./flat.js');

/** Whether this runtime has node:v8's Serializer class (Node, Deno), or only v8.serialize (Bun). */
const SERIALIZER = (() => {
  try {
    new v8.Serializer().writeHeader();
    return true;
  } catch {
    return false;
  }
})();

/**
 * A value structured clone cannot carry (a function, a symbol, a WeakMap, a Proxy, a
 * SharedArrayBuffer outside a plain call…): an RpcError InvalidParams named as postMessage's
 * DOMException is, `data.path` saying where it is in the user's terms (`params[0].handler`).
 */
class DataCloneError extends RpcError {
  constructor(message, path) {
    super(CODES.InvalidParams, message, path === undefined ? { name: 'DataCloneError' } : { name: 'DataCloneError', path });
    this.name = 'DataCloneError';
  }
}

/** What V8's serializer throws for a value it cannot clone (Serializer#_getDataCloneError). */
class Uncloneable extends Error {}
const uncloneable = (message) => new Uncloneable(message);

/** A handler's result with the ArrayBuffers it moves (`transfer(value, list)`; Piscina.move in results). */
class Transfer {
  constructor(value, list) {
    this.value = value;
    this.list = list;
  }
}

/** `value`, to be sent with the ArrayBuffers of `list` moved rather than copied (a handler's result). */
function transfer(value, list) {
  return new Transfer(value, list);
}

/** Thrown by `serialize` when the only obstacle is a SharedArrayBuffer: the call may go value by value. */
const SHARED = Symbol('shared memory');
/** Serializer#_getSharedArrayBufferId of `serialize(…, sharedFirst)`: no id, SHARED at once. */
const meetShared = () => {
  throw SHARED;
};

/**
 * The parts of the structured-clone message of `value` (V8's bytes, then the ArrayBuffers of
 * `list`, which it moves: the native side detaches them once copied). `where`
 * names the value in errors ('params', 'result'). Throws a DataCloneError naming what cannot be
 * carried, SHARED when that is only shared memory, or what a getter or Proxy trap threw. With
 * `sharedFirst`, SHARED as soon as shared memory is met, unwalked: the caller copies the value
 * another way (postedCopy), which names anything else that cannot be carried.
 */
function serialize(value, list, where, copied = false, shares = false, sharedFirst = false) {
  const moved = movedBuffers(list);
  if (moved.length === 0) {
    const flat = flatBytes(value);
    if (flat !== null) return [flat];
  }
  if (!SERIALIZER) return serializeWhole(value, moved, where, copied);
  const s = new v8.Serializer();
  s._getDataCloneError = uncloneable;
  if (sharedFirst) s._getSharedArrayBufferId = meetShared;
  s.writeHeader();
  // A resizable buffer is written inside V8's bytes, as structuredClone moves it (resizable,
  // its maximum kept, views over it whole): the receiver's external buffers are fixed-length,
  // and V8 refuses to read a view of a resizable buffer over one. It is still listed after the
  // numbered ones, unreferenced, so that the native side detaches it with them (at the cost of
  // a second copy of its bytes).
  const numbered = moved.filter((b) => !b.resizable);
  for (let i = 0; i < numbered.length; i++) s.transferArrayBuffer(i, numbered[i]);
  try {
    s.writeValue(value);
  } catch (e) {
    if (e === SHARED) throw e;
    return refused(e, value, list, where, copied, shares);
  }
  // The native side copies the moved buffers and detaches them once the message is whole.
  return numbered.length === moved.length ? [s.releaseBuffer(), ...moved] : [s.releaseBuffer(), ...numbered, ...moved.filter((b) => b.resizable)];
}

/**
 * `serialize` where the runtime has no `v8.Serializer` class but has `v8.serialize` (Bun):
 * the moved buffers are written inside the value's bytes, as copies, and still listed after
 * them so that the native side detaches them on the sender; the receiver reads them from the
 * bytes (deserialize). Such a runtime may not refuse shared memory, so the value is looked
 * through for it first (a getter is read twice there).
 */
function serializeWhole(value, moved, where, copied) {
  const culprit = firstUncloneable(value, where);
  if (culprit?.threw !== undefined) throw culprit.threw;
  if (culprit !== null && culprit.shared) throw SHARED;
  let bytes;
  try {
    bytes = v8.serialize(value);
  } catch (e) {
    return refused(e, value, moved, where, copied);
  }
  // Bun's bytes lie in a SharedArrayBuffer, which the native side refuses to read as a message.
  if (types.isSharedArrayBuffer(bytes.buffer)) bytes = new Uint8Array(bytes);
  return [bytes, ...moved];
}

/** What `serialize` does when the serializer threw `e`: a retry with stand-ins, or the error to throw. */
function refused(e, value, list, where, copied, shares = false) {
  // V8's own refusal (shared memory is refused without asking _getDataCloneError), or else
  // what a getter or a Proxy trap threw, which the caller gets as it is.
  // (Tested by its kind, not instanceof: V8 makes its errors in the process's main realm.)
  // V8's serializer recurses: a value nested deeper than the stack allows overflows it.
  if (isStackOverflow(e)) throw tooDeep(where);
  if (!isWriteRefusal(e)) throw e;
  // (Where shared memory goes shared, what else is refused is named first.)
  const culprit = firstUncloneable(value, where, shares) ?? (shares ? firstUncloneable(value, where) : null);
  if (culprit?.threw !== undefined) throw culprit.threw;
  if (culprit === null) throw new DataCloneError(`${where} cannot be cloned: ${e.message}`);
  if (culprit.shared) throw SHARED;
  // A Proxy or an arguments object crosses as what it stands for (docs/values.md), as it did
  // value by value: the value is copied with those made plain, and the copy is written.
  if (culprit.standsFor && !copied) return serialize(standIns(value, where), list, where, true, shares);
  throw cannotCarry(culprit);
}

/**
 * The copy of `value` (params holding shared memory) that a JavaScript-served call posts to its
 * serving thread (contract CALL_POSTED): `structuredClone`'s, which shares the memory. A Proxy or
 * an arguments object in it crosses as what it stands for, as in `serialize`. Throws a
 * DataCloneError naming what cannot be carried (`where` names the value), or what a getter or a
 * trap threw. The value is walked only when `structuredClone` refuses it.
 */
function postedCopy(value, where, copied = false) {
  let e;
  try {
    return structuredClone(value);
  } catch (thrown) {
    e = thrown;
  }
  if (isStackOverflow(e)) throw tooDeep(where);
  // (By name too: the DOMException may come from another realm than this code's.)
  if (e?.name !== 'DataCloneError' && !isWriteRefusal(e)) throw e;
  const culprit = firstUncloneable(value, where, true);
  if (culprit?.threw !== undefined) throw culprit.threw;
  if (culprit !== null && culprit.standsFor && !copied) return postedCopy(standIns(value, where), where, true);
  if (culprit !== null && !culprit.shared) throw cannotCarry(culprit);
  throw new DataCloneError(`${where} cannot be cloned: ${e.message}`);
}

/** The refusal of a value nested deeper than structured clone can write (`where` names it). */
function tooDeep(where) {
  return new DataCloneError(`${where} is nested too deep for structured clone to write: send it flatter`);
}

/** The refusal of what `firstUncloneable` found. */
function cannotCarry(culprit) {
  return new DataCloneError(`${culprit.path} ${culprit.what}, which structured clone cannot carry`, culprit.path);
}

const CLONED = contract.callFlags.cloned;
const POSTED = contract.callFlags.posted;

/**
 * How params of a call to a method served in JavaScript cross when they are not plain data:
 * `[CLONED, parts]`, the structured-clone message of `params` (moving the ArrayBuffers of
 * `list`), or, as they hold shared memory, `[POSTED, copy]` (postedCopy; refused with a moved
 * ArrayBuffer); the contract's call flags. With `plainBeside`, params whose shared memory sits
 * beside plain data only give null: they go value by value, views by reference. `where` names
 * them in errors.
 */
function clonedParams(params, list, where, plainBeside) {
  try {
    return [CLONED, serialize(params, list, where, false, true, true)];
  } catch (e) {
    if (e !== SHARED) throw e;
  }
  if (list !== undefined) throw new DataCloneError(`${where} hold shared memory, which travels only in calls that move no ArrayBuffer`);
  if (plainBeside && !needsClone(params)) return null;
  return [POSTED, postedCopy(params, where)];
}

/**
 * Whether `e`, thrown while a value was written (`postMessage`, a serializer), is structured
 * clone's refusal of the value or of its depth, rather than what a getter or trap of it threw.
 */
function isWriteRefusal(e) {
  return e instanceof Uncloneable || isStackOverflow(e) || isDomCloneError(e) || (types.isNativeError(e) && / could not be cloned\.$/.test(e.message));
}

/** The DOMException a runtime's `v8.serialize` throws for what it cannot clone (Bun's). */
function isDomCloneError(e) {
  return e !== null && typeof e === 'object' && e.name === 'DataCloneError' && typeof DOMException === 'function' && e instanceof DOMException;
}

/** True for the RangeError of a stack that overflowed (made in whichever realm ran out). */
function isStackOverflow(e) {
  return types.isNativeError(e) && e.name === 'RangeError' && e.message === 'Maximum call stack size exceeded';
}

/** The ArrayBuffers of a transfer list, checked as postMessage checks them. */
function movedBuffers(list) {
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list)) throw new DataCloneError('a transfer list must be an array of ArrayBuffers');
  const moved = [];
  for (let i = 0; i < list.length; i++) {
    const item = list[i];
    if (!types.isArrayBuffer(item)) {
      const what = types.isSharedArrayBuffer(item) ? 'a SharedArrayBuffer (shared, never moved)' : describeKind(item);
      throw new DataCloneError(`transferList[${i}] is ${what}: only ArrayBuffers can be moved`, `transferList[${i}]`);
    }
    if (moved.includes(item)) throw new DataCloneError(`transferList[${i}] is listed twice`, `transferList[${i}]`);
    if (isDetached(item)) throw new DataCloneError(`transferList[${i}] is a detached ArrayBuffer`, `transferList[${i}]`);
    moved.push(item);
  }
  return moved;
}

function isDetached(buffer) {
  if (typeof buffer.detached === 'boolean') return buffer.detached;
  // Node 20 has no `detached`: a detached buffer has length 0 and cannot be sliced.
  if (buffer.byteLength !== 0) return false;
  try {
    buffer.slice(0);
    return false;
  } catch {
    return true;
  }
}

/**
 * Whether `root`, an object, must travel as structured clone to arrive as it is: it reaches an
 * object twice (JSON would send two copies), or holds something that is not plain data (a
 * Date, a class instance, undefined…; the native conversion would refuse or change it). Reads
 * own enumerable keys as the conversion does; what a getter or a Proxy trap throws is thrown.
 */
function needsClone(root) {
  // The objects met, made when a second one is: most results (a task's result with its
  // timing, an array of scalars) hold one.
  let seen = null;
  let first = true;
  const stack = [root];
  {
    while (stack.length > 0) {
      const v = stack.pop();
      if (first) first = false;
      else {
        seen ??= new Set([root]);
        if (seen.has(v)) return true;
        seen.add(v);
      }
      if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++) {
          if (!(i in v)) return true;
          if (pushed(v[i], stack)) return true;
        }
        continue;
      }
      // Bytes and shared views: the native conversion carries them as they are (a Uint8Array
      // copied, a view over a SharedArrayBuffer by reference), so they are plain here; other
      // views, and String objects, are not, whatever their prototype (never listed index by
      // index: 2^30 of them).
      if (ArrayBuffer.isView(v)) {
        if (types.isUint8Array(v) || types.isSharedArrayBuffer(v.buffer)) continue;
        return true;
      }
      if (types.isBoxedPrimitive(v) || types.isAnyArrayBuffer(v) || types.isProxy(v)) return true;
      const proto = Object.getPrototypeOf(v);
      if (proto !== Object.prototype && proto !== null) return true;
      for (const key of Object.keys(v)) if (pushed(v[key], stack)) return true;
    }
  }
  return false;
}

/** Pushes an object item on the walk's stack; true when the item is not plain data by itself. */
function pushed(item, stack) {
  if (item === undefined || typeof item === 'function' || typeof item === 'symbol') return true;
  if (item !== null && typeof item === 'object') stack.push(item);
  return false;
}

/** Why a result holding shared memory is refused (on either way it comes back). */
const SHARED_RESULT = 'result holds shared memory, which a result cannot carry';

/**
 * Whether `root`, a value received from a MessagePort, holds shared memory: a
 * SharedArrayBuffer, a view over one, a shared WebAssembly.Memory. A received value is plain
 * structured-clone output (no getters, no Proxies, no own properties on views), so this
 * reads exactly what arrived. Tags and util.types, not instanceof: the value may come from
 * another realm than this code's.
 */
function holdsShared(root) {
  const seen = new Set();
  const stack = [root];
  while (stack.length > 0) {
    const v = stack.pop();
    if (v === null || typeof v !== 'object' || seen.has(v)) continue;
    seen.add(v);
    if (types.isSharedArrayBuffer(v)) return true;
    if (ArrayBuffer.isView(v)) {
      if (types.isSharedArrayBuffer(v.buffer)) return true;
      continue;
    }
    if (types.isDate(v) || types.isRegExp(v) || types.isBoxedPrimitive(v) || types.isArrayBuffer(v)) continue;
    if (types.isMap(v)) Map.prototype.forEach.call(v, pushEntry, stack);
    else if (types.isSet(v)) Set.prototype.forEach.call(v, pushItem, stack);
    else if (Object.prototype.toString.call(v) === '[object WebAssembly.Memory]') {
      if (types.isSharedArrayBuffer(v.buffer)) return true;
    } else if (types.isNativeError(v)) {
      if (Object.hasOwn(v, 'cause')) stack.push(v.cause);
    } else {
      for (const key of Object.keys(v)) {
        const item = v[key];
        if (item !== null && typeof item === 'object') stack.push(item);
      }
    }
  }
  return false;
}

/** A Map entry's objects, on `this` (holdsShared's stack). */
function pushEntry(item, key) {
  if (key !== null && typeof key === 'object') this.push(key);
  if (item !== null && typeof item === 'object') this.push(item);
}

/** A Set item, if an object, on `this` (holdsShared's stack). */
function pushItem(item) {
  if (item !== null && typeof item === 'object') this.push(item);
}

/**
 * The value of a message as the native side hands it over: a Buffer of V8's bytes when nothing
 * is moved, else `{ bytes, moved }` with the moved ArrayBuffers in V8's numbering. Throws when
 * it does not read back.
 */
function deserialize(message) {
  if (isFlat(message)) return readFlat(message);
  if (!SERIALIZER) return v8.deserialize(Buffer.isBuffer(message) ? message : message.bytes);
  if (Buffer.isBuffer(message)) {
    const d = new v8.Deserializer(message);
    d.readHeader();
    return d.readValue();
  }
  const { bytes, moved } = message;
  const d = new v8.Deserializer(bytes);
  d.readHeader();
  for (let i = 0; i < moved.length; i++) d.transferArrayBuffer(i, moved[i]);
  return d.readValue();
}

/**
 * The place of the first value inside `root` that structured clone refuses, depth first in
 * the serializer's order, and what it is; null when none is found. Reads what the serializer
 * read (own enumerable string keys, Map and Set entries). A getter or Proxy trap that throws
 * on the way ends the search: `{ path, threw }`, the place whose reading threw and what it
 * threw (the serializer's own read threw first, mostly the same). `shares`: shared memory
 * is no culprit (the value goes where it is shared).
 */
function firstUncloneable(root, where, shares = false) {
  const seen = new Set();
  const stack = [[root, where]];
  while (stack.length > 0) {
    const [v, path] = stack.pop();
    if (typeof v === 'function') return { path, what: 'is a function' };
    if (typeof v === 'symbol') return { path, what: 'is a symbol' };
    if (v === null || typeof v !== 'object' || seen.has(v)) continue;
    seen.add(v);
    if (types.isProxy(v)) return { path, what: 'is a Proxy', standsFor: true };
    if (types.isArgumentsObject(v)) return { path, what: 'is an arguments object', standsFor: true };
    if (types.isSharedArrayBuffer(v)) {
      if (shares) continue;
      return { path, what: 'is a SharedArrayBuffer', shared: true };
    }
    if (ArrayBuffer.isView(v)) {
      if (types.isSharedArrayBuffer(v.buffer) && !shares) return { path, what: 'is a view over a SharedArrayBuffer', shared: true };
      continue;
    }
    if (types.isWeakMap(v) || types.isWeakSet(v) || types.isPromise(v) || v instanceof WeakRef) {
      return { path, what: `is ${describeKind(v)}` };
    }
    // (What the serializer writes of these is their value alone, never their own properties.)
    if (types.isDate(v) || types.isRegExp(v) || types.isBoxedPrimitive(v) || types.isAnyArrayBuffer(v)) continue;
    const children = [];
    let at = path; // where a read that throws is
    try {
      if (types.isMap(v)) {
        let i = 0;
        for (const [key, item] of v) {
          children.push([key, `${path}.keys()[${i}]`], [item, `${path}.get(${keyText(key, i)})`]);
          i++;
        }
      } else if (types.isSet(v)) {
        let i = 0;
        for (const item of v) children.push([item, `${path}.values()[${i++}]`]);
      } else if (types.isNativeError(v)) {
        // (Of an Error, the serializer writes its name, message, stack and cause.)
        at = `${path}.cause`;
        if (Object.hasOwn(v, 'cause')) children.push([v.cause, at]);
      } else {
        for (const key of Object.keys(v)) {
          at = `${path}${property(key)}`;
          children.push([v[key], at]);
          at = path;
        }
      }
    } catch (e) {
      return { path: at, threw: e };
    }
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]);
  }
  return null;
}

/**
 * Why `value` (named `where`) could not be written when writing it threw `e`, a getter's or a
 * Proxy trap's exception: `<place>: reading it threw <e>`, the words of the native conversion
 * for the same. The place is looked for again (its getter read once more).
 */
function unreadable(value, where, e) {
  let place = where;
  try {
    const culprit = firstUncloneable(value, where);
    if (culprit?.threw !== undefined) place = culprit.path;
  } catch {
    // (Cannot be looked through: the value's own name stands for the place.)
  }
  return `${place}: reading it threw ${native.describeThrown(e)}`;
}

/**
 * A copy of `root` in which each Proxy and arguments object is the plain data it stands for,
 * read once through its traps: an array's items (a Proxy of an array: its `length`, then each
 * index; a hole reads undefined), or else its own enumerable string keys (an arguments
 * object's items; a Proxy of a Map or a Date has none). So that a Proxy can be anywhere, every
 * container structured clone writes the insides of is copied too, as structured clone would
 * make it (arrays with their holes and other keys, objects and class instances as their own
 * enumerable keys, Maps, Sets, an Error's `cause`); leaves (a Date, bytes, a function…) stay
 * themselves, so the serializer still names what it refuses, at the same place. Identities are
 * kept (a cycle through a Proxy stays a cycle). What a trap or getter throws is thrown as it
 * is. Bounded by the contract's maxValues (a huge `length` is refused before an item is read)
 * and by the stack, as structured clone is (a Proxy making a new Proxy at every read nests
 * without end).
 */
function standIns(root, where) {
  const copies = new Map();
  const keys = [];
  let left = contract.maxValues;
  const here = () => where + keys.map((k) => (typeof k === 'string' ? property(k) : k.text)).join('');
  const spend = (n, what) => {
    if (!(n <= left)) throw new DataCloneError(`${here()} ${what}: more than the ${contract.maxValues} values params may hold`, here());
    left -= n;
  };
  const into = (key, v) => {
    keys.push(key);
    const c = copy(v);
    keys.pop();
    return c;
  };
  const fields = (v, c) => {
    const own = Object.keys(v);
    spend(own.length, `has ${own.length} keys`);
    for (const k of own) {
      const item = into(k, v[k]);
      if (k === '__proto__') Object.defineProperty(c, k, { value: item, writable: true, enumerable: true, configurable: true });
      else c[k] = item;
    }
    return c;
  };
  const copy = (v) => {
    if (v === null || typeof v !== 'object') return v;
    const known = copies.get(v);
    if (known !== undefined) return known;
    const proxy = types.isProxy(v);
    if (Array.isArray(v)) {
      // (Array.isArray throws a revoked Proxy's TypeError.)
      let length = v.length;
      if (proxy) {
        // (An array's own length is a valid one; a Proxy's `get` trap may answer anything.)
        if (typeof length !== 'number') throw new DataCloneError(`${here()} is a Proxy of an array whose length is not a number`, here());
        length = length > 0 ? Math.floor(length) : 0;
        spend(length, `is an array of ${length} elements`);
      }
      const c = new Array(length);
      copies.set(v, c);
      if (proxy) {
        for (let i = 0; i < length; i++) c[i] = into(`${i}`, v[i]);
        return c;
      }
      return fields(v, c);
    }
    if (proxy || types.isArgumentsObject(v)) {
      const c = {};
      copies.set(v, c);
      return fields(v, c);
    }
    if (types.isMap(v)) {
      const c = new Map();
      copies.set(v, c);
      let i = 0;
      for (const [key, item] of v) {
        spend(2, 'holds more entries');
        const k = into({ text: `.keys()[${i}]` }, key);
        c.set(k, into({ text: `.get(${keyText(key, i)})` }, item));
        i++;
      }
      return c;
    }
    if (types.isSet(v)) {
      const c = new Set();
      copies.set(v, c);
      let i = 0;
      for (const item of v) {
        spend(1, 'holds more items');
        c.add(into({ text: `.values()[${i++}]` }, item));
      }
      return c;
    }
    if (types.isNativeError(v)) {
      if (!Object.hasOwn(v, 'cause')) return v;
      // A native error still (structured clone writes its name, message, stack and cause).
      const c = Object.setPrototypeOf(new Error(), Object.getPrototypeOf(v));
      copies.set(v, c);
      for (const k of ['name', 'message', 'stack']) {
        const d = Object.getOwnPropertyDescriptor(v, k);
        if (d === undefined) delete c[k];
        else Object.defineProperty(c, k, { value: 'value' in d ? d.value : v[k], writable: true, enumerable: false, configurable: true });
      }
      Object.defineProperty(c, 'cause', { value: into('cause', v.cause), writable: true, enumerable: false, configurable: true });
      return c;
    }
    // Leaves: what structured clone writes without reading properties (or refuses).
    if (ArrayBuffer.isView(v) || types.isAnyArrayBuffer(v) || types.isDate(v) || types.isRegExp(v) || types.isBoxedPrimitive(v)) return v;
    if (types.isWeakMap(v) || types.isWeakSet(v) || types.isPromise(v) || v instanceof WeakRef) return v;
    // An object, or a class instance: its own enumerable keys, on Object.prototype.
    const c = {};
    copies.set(v, c);
    return fields(v, c);
  };
  try {
    return copy(root);
  } catch (e) {
    if (isStackOverflow(e)) throw tooDeep(where);
    throw e;
  }
}

/** A Map key as a path shows it: a string or number as such, anything else by its place. */
function keyText(key, i) {
  if (typeof key === 'string') return JSON.stringify(key);
  if (typeof key === 'number') return String(key);
  return `<key ${i}>`;
}

/** `.name`, `[0]` or `["odd key"]`. */
function property(key) {
  if (/^(?:0|[1-9]\d*)$/.test(key)) return `[${key}]`;
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}

function describeKind(v) {
  if (v === null) return 'null';
  if (typeof v !== 'object') return `a ${typeof v}`;
  const name = v.constructor?.name;
  return typeof name === 'string' && name !== '' ? `a ${name}` : 'an object';
}

module.exports = { serialize, deserialize, clonedParams, needsClone, holdsShared, unreadable, isWriteRefusal, DataCloneError, Transfer, transfer, SHARED, SHARED_RESULT, SERIALIZER };
