'use strict';
// SharedArrayBuffer views for JS-served calls (src/bindings/serve.rs). A serving thread needs
// typed arrays of its own over the caller's memory; the caller's typed arrays are posted to it
// on one process-wide BroadcastChannel (posting shares the memory, it copies nothing), addressed
// by the serving thread's threadId and the job's token. Only environments that serve or send
// views open the channel. This module owns the channel and both tables of views in transit.

const { threadId, BroadcastChannel, receiveMessageOnPort } = require('node:worker_threads');
const { native } = require('./native.js');
const { every } = require('./timer.js');

const CHANNEL_NAME = 'corepool:views';
/** How often jobs waiting for resent views look whether their caller is gone. */
const ORPHAN_CHECK_MS = 100;

let channel = null;
const received = new Map(); // token → typed arrays, sent before the job arrived
const awaiting = new Map(); // token → { server, resume(views), drop() }: jobs that asked for a resend
let orphanTimer = null;

/** Opens this environment's end of the channel (a server must, before it registers). */
function open() {
  if (channel === null) {
    channel = new BroadcastChannel(CHANNEL_NAME);
    channel.onmessage = (event) => onMessage(event.data);
    channel.unref();
  }
  return channel;
}

function onMessage(message) {
  if (message === null || typeof message !== 'object' || message.to !== threadId) return;
  arrived(message.token, message.views, message.resent === true);
}

function arrived(token, views, resent) {
  const waiting = awaiting.get(token);
  if (waiting !== undefined) {
    awaiting.delete(token);
    waiting.resume(views);
  } else if (!resent) {
    // Sent just before the job was queued: the job follows (or a `forgotten` notice does).
    received.set(token, views);
  }
}

/** Pulls the messages already posted to this environment (they may not have been dispatched). */
function drain() {
  if (channel === null) return;
  let m;
  while ((m = receiveMessageOnPort(channel)) !== undefined) onMessage(m.message);
}

/**
 * Called by the native side just before it queues a job with views on serving thread `to`, and
 * again when that thread asks for them (`resent`).
 */
function publish(to, token, views, resent) {
  try {
    if (to === threadId) arrived(token, views, resent);
    else open().postMessage({ to, token, views, resent });
  } catch {
    // The serving thread asks again (resend) when it finds no views.
  }
}
native.setPublisher(publish);

/** The views sent for job `token` before it arrived, if any (taken out). */
function takeReceived(token) {
  let views = received.get(token);
  if (views === undefined) {
    drain();
    views = received.get(token);
  }
  if (views !== undefined) received.delete(token);
  return views;
}

/**
 * Views announced for job `token` will never be used (the job went elsewhere or stopped). They
 * were posted before the notice was given, but may not have been dispatched yet: the messages
 * already posted are pulled first, or they would be stored after this and kept for good.
 */
function forget(token) {
  drain();
  received.delete(token);
}

/**
 * Job `token` of `server` waits for its views to be resent: `resume(views)` runs when they come,
 * `drop()` once `server.orphans(tokens)` says its caller is gone (it never sends them then).
 */
function awaitResend(token, server, resume, drop) {
  awaiting.set(token, { server, resume, drop });
  if (orphanTimer === null) {
    orphanTimer = every(ORPHAN_CHECK_MS, checkOrphans).unref();
  }
}

/** Job `token` stops waiting for views (it was stopped); true if it was waiting. */
function stopAwaiting(token) {
  return awaiting.delete(token);
}

function checkOrphans() {
  const byServer = new Map();
  for (const [token, w] of awaiting) {
    if (!byServer.has(w.server)) byServer.set(w.server, []);
    byServer.get(w.server).push(token);
  }
  for (const [server, tokens] of byServer) {
    for (const token of server.orphans(tokens)) {
      const waiting = awaiting.get(token);
      if (waiting === undefined) continue;
      awaiting.delete(token);
      waiting.drop();
    }
  }
  if (awaiting.size === 0) {
    orphanTimer.clear();
    orphanTimer = null;
  }
}

module.exports = { CHANNEL_NAME, open, takeReceived, forget, awaitResend, stopAwaiting };
