'use strict';
// W3C trace context (https://www.w3.org/TR/trace-context/) that crosses with a call: the caller's
// active OpenTelemetry span, as `traceparent` and `tracestate`, restored as the remote parent
// where the call runs (a NATS host, a durable job's host).
//
// @opentelemetry/api is an optional peer, and it is not even loaded unless the application set
// OpenTelemetry up: the API keeps what is registered (a tracer provider, a context manager, a
// propagator) under one global symbol, and while that is absent no context can be active, so
// there is nothing to carry. The header values are made and read here, by the W3C format,
// whatever propagator the application registered.

const API_GLOBAL = Symbol.for('opentelemetry.js.api.1');
/** A traceparent of version 00: version, trace id, parent span id, flags. */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const INVALID_TRACE = '0'.repeat(32);
const INVALID_SPAN = '0'.repeat(16);
/** Longest tracestate carried or read (the W3C text's 32 members of at most 256 characters, with commas). */
const MAX_TRACESTATE = 8223;

let api = null;

/** The OpenTelemetry API, once the application registered something with it; else null. */
function otel() {
  if (api !== null) return api;
  if (globalThis[API_GLOBAL] === undefined) return null;
  try {
    api = require('@opentelemetry/api');
  } catch {
    return null; // registered by a copy this module cannot resolve: nothing is carried
  }
  return api;
}

/**
 * The active span's context as `{ traceparent, tracestate? }`, or null when none is active.
 * Total: a context manager or propagated state that throws carries nothing (a call is never
 * refused for its trace context).
 */
function activeTraceContext() {
  try {
    return readActive();
  } catch {
    return null;
  }
}

function readActive() {
  const a = otel();
  if (a === null) return null;
  const span = a.trace.getSpanContext(a.context.active());
  return span === undefined ? null : carriedOf(a, span);
}

/**
 * Runs `fn()` with the span context `traceparent` names as its remote parent (and `tracestate`
 * as its state), or just runs it: without OpenTelemetry, or when `traceparent` is not a valid
 * header value (anything a message carries is read as untrusted).
 */
function withTraceContext(traceparent, tracestate, fn) {
  const a = otel();
  if (a === null || typeof traceparent !== 'string' || traceparent.length > 512) return fn();
  const m = TRACEPARENT.exec(traceparent);
  if (m === null || m[1] === 'ff' || (m[1] === '00' && m[5] !== undefined) || m[2] === INVALID_TRACE || m[3] === INVALID_SPAN) return fn();
  const span = { traceId: m[2], spanId: m[3], traceFlags: parseInt(m[4], 16) & 0x01, isRemote: true };
  if (typeof tracestate === 'string' && tracestate.length > 0 && tracestate.length <= MAX_TRACESTATE) {
    try {
      span.traceState = a.createTraceState(tracestate);
    } catch {
      // A tracestate the API refuses is dropped, as the W3C text says.
    }
  }
  let context;
  try {
    context = a.trace.setSpanContext(a.context.active(), span);
  } catch {
    return fn(); // a context manager that throws: the function runs without the context
  }
  return a.context.with(context, fn);
}

/** `fn()` inside the trace context `text` (startCallSpan's, from the calling thread) names. */
function withTraceText(text, fn) {
  if (otel() === null || typeof text !== 'string') return fn();
  const cut = text.indexOf('\n');
  return cut < 0 ? withTraceContext(text, undefined, fn) : withTraceContext(text.slice(0, cut), text.slice(cut + 1), fn);
}

/** The NATS headers that carry a trace context. */
const TRACEPARENT_HEADER = 'traceparent';
const TRACESTATE_HEADER = 'tracestate';

/** Sets `carried` (activeTraceContext's) on nats.js `headers`. */
function setTraceHeaders(headers, carried) {
  headers.set(TRACEPARENT_HEADER, carried.traceparent);
  if (carried.tracestate !== undefined) headers.set(TRACESTATE_HEADER, carried.tracestate);
}

/** `fn()` inside the trace context that the headers of nats.js message `msg` carry, if any. */
function withTraceHeaders(msg, fn) {
  if (otel() === null) return fn();
  const headers = msg.headers;
  if (headers === undefined || headers === null) return fn();
  const traceparent = headers.get(TRACEPARENT_HEADER);
  if (!traceparent) return fn();
  return withTraceContext(traceparent, headers.get(TRACESTATE_HEADER), fn);
}

// ---- corepool's own spans ----
//
// A call made while a span is active gets a CLIENT span on the calling thread (a child of the
// active one), whose context is what crosses; where it is served (a JavaScript thread, a NATS
// host) a SERVER span, a child of it, runs around the handler. Their names and attributes follow
// OpenTelemetry's conventions for RPC: `corepool <method>`, rpc.system and rpc.method. With no
// active span, nothing is started and nothing crosses.

/** rpc.system of corepool's spans. */
const RPC_SYSTEM = 'corepool';
/** Longest method name a span is named by (longer ones and non-strings are `(other)`). */
const MAX_SPAN_METHOD = 100;

let tracer = null;

function corepoolTracer(a) {
  return (tracer ??= a.trace.getTracer('corepool'));
}

function spanMethod(method) {
  return typeof method === 'string' && method.length <= MAX_SPAN_METHOD ? method : '(other)';
}

function spanOptions(a, kind, method) {
  const name = spanMethod(method);
  return [`corepool ${name}`, { kind, attributes: { 'rpc.system': RPC_SYSTEM, 'rpc.method': name } }];
}

/** `carried` (as activeTraceContext gives it) of span context `span`, or null when it is invalid. */
function carriedOf(a, span) {
  if (!a.isSpanContextValid(span)) return null;
  const flags = (span.traceFlags & 0xff).toString(16).padStart(2, '0');
  const carried = { traceparent: `00-${span.traceId}-${span.spanId}-${flags}` };
  const state = span.traceState?.serialize();
  if (typeof state === 'string' && state.length > 0 && state.length <= MAX_TRACESTATE) carried.tracestate = state;
  return carried;
}

/**
 * A CLIENT span for a call of `method` about to be made, a child of the active span; null when
 * no span is active (or OpenTelemetry is not set up). Total: a tracer or context manager that
 * throws starts nothing.
 */
function startCallSpan(method) {
  if (globalThis[API_GLOBAL] === undefined) return null; // the common case, kept cheapest
  try {
    const a = otel();
    if (a === null) return null;
    const active = a.context.active();
    const parent = a.trace.getSpanContext(active);
    if (parent === undefined || !a.isSpanContextValid(parent)) return null;
    const [name, options] = spanOptions(a, a.SpanKind.CLIENT, method);
    const span = corepoolTracer(a).startSpan(name, options, active);
    const carried = carriedOf(a, span.spanContext()) ?? carriedOf(a, parent);
    if (carried === null) return null;
    return { span, carried, text: carried.tracestate === undefined ? carried.traceparent : `${carried.traceparent}\n${carried.tracestate}` };
  } catch {
    return null;
  }
}

/** Marks `span` failed with `error` (its RpcError code, when it has one). Never throws. */
function spanFailed(span, error) {
  try {
    const code = error?.code;
    if (typeof code === 'number') span.setAttribute('rpc.jsonrpc.error_code', code);
    const message = error?.message;
    span.setStatus({ code: api.SpanStatusCode.ERROR, message: typeof message === 'string' ? message : undefined });
  } catch {
    // a hostile error: the span ends without its details
  }
}

function endSpan(span) {
  try {
    span.end();
  } catch {
    // a span processor that throws: the call is not changed by it
  }
}

/** `promise` (a call's), ending `call`'s span (startCallSpan's) when it settles. */
function endCallSpan(call, promise) {
  if (call === null) return promise;
  return promise.then(
    (value) => {
      endSpan(call.span);
      return value;
    },
    (error) => {
      spanFailed(call.span, error);
      endSpan(call.span);
      throw error;
    },
  );
}

/**
 * Runs `fn()` in a SERVER span for `method`, a child of the active context; the span ends when
 * the value fn returns settles (`settledOf(value)`: the promise to wait for; by default the value
 * itself: a thenable is adopted by a promise that is returned instead, anything else is returned
 * as it is, its `then` read once more than the caller reads it).
 */
function inServerSpan(a, method, fn, settledOf) {
  let span;
  let context;
  try {
    const active = a.context.active();
    const [name, options] = spanOptions(a, a.SpanKind.SERVER, method);
    span = corepoolTracer(a).startSpan(name, options, active);
    context = a.trace.setSpan(active, span);
  } catch {
    return fn();
  }
  let value;
  try {
    value = a.context.with(context, fn);
  } catch (e) {
    spanFailed(span, e);
    endSpan(span);
    throw e;
  }
  const ended = (v) => {
    endSpan(span);
    return v;
  };
  const failed = (e) => {
    spanFailed(span, e);
    endSpan(span);
    throw e;
  };
  if (settledOf !== undefined) {
    settledOf(value).then(ended, failed).catch(() => {}); // the caller handles the rejection
    return value;
  }
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return ended(value);
  // Whether to wait: `then` read once here (a getter or a Proxy trap whose reading throws fails
  // the span, and reaches the caller as the handler's throw would).
  let then;
  try {
    then = value.then;
  } catch (e) {
    return failed(e);
  }
  if (typeof then !== 'function') return ended(value);
  // A thenable, adopted as a promise adopts one (its `then` called once, with value as `this`).
  return new Promise((resolve, reject) => then.call(value, resolve, reject)).then(ended, failed);
}

/**
 * `fn()` in a SERVER span for `method` under the trace context `text` (startCallSpan's, from the
 * calling thread) names: a JavaScript thread serving a call. A thenable fn returns comes back
 * adopted by a promise (see inServerSpan).
 */
function withServerSpan(text, method, fn) {
  const a = otel();
  if (a === null || typeof text !== 'string') return fn();
  return withTraceText(text, () => inServerSpan(a, method, fn));
}

/**
 * `fn()` in a SERVER span for `method` under the trace context the headers of nats.js message
 * `msg` carry (a NATS host); without one, just `fn()`. The span ends when `settledOf(value)`
 * settles.
 */
function withServerHeaders(msg, method, fn, settledOf) {
  const a = otel();
  if (a === null) return fn();
  const headers = msg.headers;
  if (headers === undefined || headers === null) return fn();
  const traceparent = headers.get(TRACEPARENT_HEADER);
  if (!traceparent) return fn();
  return withTraceContext(traceparent, headers.get(TRACESTATE_HEADER), () => {
    // A traceparent that was refused leaves no span active: then no span either.
    const parent = a.trace.getSpanContext(a.context.active());
    return parent === undefined ? fn() : inServerSpan(a, method, fn, settledOf);
  });
}

module.exports = {
  activeTraceContext,
  withTraceContext,
  withTraceText,
  setTraceHeaders,
  withTraceHeaders,
  startCallSpan,
  endCallSpan,
  withServerSpan,
  withServerHeaders,
};
