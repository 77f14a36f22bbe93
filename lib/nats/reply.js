'use strict';
// The one way a host publishes to a subject taken from a message: its reply subject. Anyone who
// can publish a request names the reply subject, so a host that answered wherever it was told
// would publish with a host's rights into its own service's namespace (a job's outcome, a job,
// a cancel, another host's calls) or onto system subjects ($JS, $SRV, $KV, $SYS, …). It answers
// only reply subjects outside them; eslint.config.js keeps `respond(` out of the rest of lib/.
// (The job worker's acknowledgements go to the `$JS.ACK.…` subjects that JetStream itself sets
// on the jobs it delivers, never to one a publisher chose: nats-server drops a published message
// whose reply subject is one of those.)

const { SUBJECT } = require('./names.js');

/**
 * True if a host of service `n` may publish to `subject` because a message asked it to: a
 * subject of tokens without wildcards or spaces, not a system subject (one starting with `$`),
 * and neither the service's subject nor under it.
 */
function replyAllowed(n, subject) {
  return typeof subject === 'string' && SUBJECT.test(subject) && subject[0] !== '$' && subject !== n.subject && !subject.startsWith(`${n.subject}.`);
}

/**
 * Publishes `data` (with `options`, e.g. headers) to `msg`'s reply subject if replyAllowed;
 * false if it was refused (nothing is sent). A closed connection is not an error: the caller
 * hears of it from its own connection, or its own liveness check.
 */
function respond(n, msg, data, options) {
  if (!replyAllowed(n, msg.reply)) return false;
  try {
    msg.respond(data, options);
  } catch {
    // The connection closed.
  }
  return true;
}

module.exports = { replyAllowed, respond };
