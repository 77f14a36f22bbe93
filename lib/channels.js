'use strict';
// The diagnostics_channel TracingChannels corepool publishes on, Node's convention for
// libraries (as undici and Fastify publish theirs): `corepool:call` (every call of a Pool:
// exec, call, run, map, broadcast, request, handle; and exec and call of a corepool/nats
// RemotePool), `corepool:render` (pool.render) and `corepool:job` (durable jobs of
// corepool/nats, submitted and run). Each call publishes start and end around its synchronous part, then asyncStart and
// asyncEnd when its promise settles, after error when it rejects (TracingChannel#tracePromise).
//
// With no subscriber, a call pays one `hasSubscribers` read and nothing else: no context object,
// no clock, no extra promise.

const diagnostics = require('node:diagnostics_channel');
const { performance } = require('node:perf_hooks'); // the global is a getter on every use
const { CODES } = require('./errors.js');

const callChannel = diagnostics.tracingChannel('corepool:call');
const renderChannel = diagnostics.tracingChannel('corepool:render');
const jobChannel = diagnostics.tracingChannel('corepool:job');

/**
 * What subscribers get: the call as made, then as it ended. `code` is 0 for a result, else the
 * RpcError's code (InternalError for an error without a numeric code); `ms` is the time from
 * the call to its settlement on the calling thread (queue wait and run included). A call that
 * one thread of the pool ran (exec, call, run, render) also tells, before asyncStart, `thread`
 * (a native worker's `id` in `pool.stats().workers`, a serving thread's `threadId`), `waitMs`
 * (its time in the queue) and `runMs` (its run), measured by the pool (lib/calls.js, `ran`);
 * they stay null for a call no thread ran to its end, and for the others.
 */
class CallContext {
  constructor(kind, method, pool) {
    this.kind = kind;
    this.method = method;
    this.pool = pool;
    this.startTime = performance.now();
    this.ms = null;
    this.code = null;
    this.thread = null;
    this.waitMs = null;
    this.runMs = null;
  }
}

function settled(context, code) {
  context.ms = performance.now() - context.startTime;
  context.code = code;
}

/** The code a rejection carries for subscribers. */
function codeOf(error) {
  try {
    const code = error?.code;
    return typeof code === 'number' ? code : CODES.InternalError;
  } catch {
    return CODES.InternalError;
  }
}

/**
 * `run()` (a promise) under `channel` with `context`, which learns the outcome before asyncStart
 * is published. Call only when `channel.hasSubscribers` (the caller checks it once).
 */
function traced(channel, context, run) {
  return channel.tracePromise(() =>
    run().then(
      (value) => {
        settled(context, 0);
        return value;
      },
      (error) => {
        settled(context, codeOf(error));
        throw error;
      },
    ),
  context);
}

module.exports = { callChannel, renderChannel, jobChannel, CallContext, traced };
