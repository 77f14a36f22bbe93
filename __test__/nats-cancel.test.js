'use strict';
// corepool/nats: a remote call's timeout or abort cancels it on its host (the cancel of
// lib/nats/wire.js), against a real nats-server, with hosts in this process and in a child.

const { connect, createInbox, headers } = require('@nats-io/transport-node');
const { Pool, RpcError } = require('../index.js');
const { serve, RemotePool } = require('../lib/nats.js');
const { startNats, natsServerPath } = require('./helpers/nats/server.js');
const { childHost, killChildHosts } = require('./helpers/nats/child-host.js');
const { sleepEnd, first } = require('./helpers/order.js');
const { cancelSecret, proofOf, cancelText } = require('../lib/nats/wire.js');

const C = RpcError.codes;
const maybe = natsServerPath() === null ? describe.skip : describe;

/** A call that sleeps far longer than any test waits: only a cancel ends it in time. What
 *  waited for it cannot come before sleepEnd(LONG) (./helpers/order.js), made before the call. */
const LONG = 10000;

let server;
let nc;

const codeOf = (p) =>
  p.then(
    (v) => `resolved ${JSON.stringify(v)}`,
    (e) => e.code,
  );

/** Resolves once `cond()` holds; rejects after `ms` (a hang guard, not a bound on speed). */
async function until(cond, what, ms = 20000) {
  const deadline = performance.now() + ms;
  while (!(await cond())) {
    if (performance.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A host of `threads` native threads in this process, and a client of it. */
async function localHost(name, threads, options = {}) {
  const pool = new Pool({ threads });
  const host = await serve(pool, nc, { name, ...options });
  const remote = new RemotePool(nc, { name });
  return {
    pool,
    host,
    remote,
    async close() {
      await remote.close();
      await host.close();
      await pool.close();
    },
  };
}

/**
 * Publishes JSON-RPC `text` to `subject` with a reply subject of its own and the proof of a
 * cancel secret; resolves with that reply subject, a promise of the (first non-status) answer's
 * text, and `cancel(ids, spends = true)`: the text of a cancel of those ids, which reveals the
 * message's current secret and commits to the next, as a RemotePool's cancels do (with `spends`
 * false, the next cancel reveals the same secret: for cancels the host cannot read).
 */
async function sendRaw(subject, text) {
  const reply = createInbox();
  let secret = cancelSecret();
  const h = headers();
  h.set('Corepool-Cancel', proofOf(secret));
  const cancel = (ids, spends = true) => {
    const revealed = secret;
    if (spends) secret = cancelSecret();
    return cancelText(reply, revealed, proofOf(secret), ids);
  };
  const answer = new Promise((resolve) => {
    const sub = nc.subscribe(reply, {
      callback: (err, m) => {
        if (err || m.headers !== undefined) return; // a "working" beat
        sub.unsubscribe();
        resolve(m.string());
      },
    });
  });
  await nc.flush();
  nc.publish(subject, text, { reply, headers: h });
  await nc.flush();
  return { reply, answer, cancel };
}

maybe('corepool/nats: a call given up on is cancelled on its host', () => {
  beforeAll(async () => {
    server = await startNats();
    nc = await connect({ servers: server.url });
  });

  afterAll(async () => {
    killChildHosts();
    await nc?.close();
    await server?.stop();
  });

  test('a timeout frees the host\'s one thread: inHand returns to 0, the next call is served at once', async () => {
    const h = await localHost('cancel-timeout', 1);
    const sleepEnds = sleepEnd(LONG);
    expect(await codeOf(h.remote.call('sleep', [LONG], { timeout: 100 }))).toBe(C.Timeout);
    // Served before the sleep could have ended: the cancel stopped it on the host.
    expect(await first(h.remote.exec('echo', 'next'), sleepEnds)).toBe('next');
    const { data } = h.host.stats();
    expect([data.inHand, data.cancelled, data.pool.running, data.pool.queued]).toEqual([0, 1, 0, 0]);
    expect(data.methods.sleep).toMatchObject({ calls: 1, errors: 1 });
    await h.close();
  });

  test('an abort by signal frees a host process\'s one thread', async () => {
    const { child, id } = await childHost(server.url, { name: 'cancel-abort', label: 'c', threads: 1 });
    const remote = new RemotePool(nc, { name: 'cancel-abort' });
    const ac = new AbortController();
    const sleepEnds = sleepEnd(LONG);
    const call = remote.call('sleep', [LONG], { signal: ac.signal });
    // Abort once the host holds the call (its own figures say so).
    const stats = async () => JSON.parse((await nc.request(`$SRV.STATS.cancel-abort.${id}`, '', { timeout: 2000 })).string()).endpoints[0].data;
    while ((await stats()).inHand === 0) await new Promise((r) => setTimeout(r, 10));
    ac.abort();
    expect(await codeOf(call)).toBe(C.Aborted);
    expect(await first(remote.exec('whoami').then((who) => who.label), sleepEnds)).toBe('c');
    // whoami is JavaScript-served, so it does not show the native thread free: a native call does.
    expect(await first(remote.exec('echo', 1), sleepEnds)).toBe(1);
    const data = await stats();
    expect([data.inHand, data.cancelled, data.pool.running]).toEqual([0, 1, 0]);
    await remote.close();
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }, 20000);

  test('in a batch only the calls given up on are cancelled, running or queued; the others answer', async () => {
    const h = await localHost('cancel-batch', 1);
    const messages = h.host.stats().data.messages;
    const ac = new AbortController();
    const sleepsEnd = sleepEnd(LONG);
    // One tick, one message; one thread: the first sleep runs, the rest wait behind it.
    const calls = [
      h.remote.call('sleep', [LONG], { signal: ac.signal }), // running when aborted
      h.remote.call('sleep', [200]),
      h.remote.call('sleep', [LONG], { timeout: 150 }), // queued when it times out
      h.remote.exec('echo', 'd'),
    ];
    setTimeout(() => ac.abort(), 50);
    // All answered before the long sleeps could have ended: neither ran its course.
    expect(await first(Promise.all(calls.map(codeOf)), sleepsEnd)).toEqual([C.Aborted, 'resolved 200', C.Timeout, 'resolved "d"']);
    const { data } = h.host.stats();
    expect(data.messages - messages).toBe(1);
    expect([data.cancelled, data.inHand]).toEqual([2, 0]);
    // The calls that ran are counted as answered, the cancelled ones as errors.
    expect(data.methods.sleep).toMatchObject({ calls: 3, errors: 2 });
    await h.close();
  });

  test('calls of one batch that time out together share one cancel', async () => {
    const h = await localHost('cancel-together', 2);
    const cancels = [];
    nc.subscribe('cancel-together.cancel', { callback: (err, m) => cancels.push(JSON.parse(m.string())) });
    await nc.flush();
    // Five timers of 2 s made one after the other can straddle a millisecond and, on a loaded
    // machine, fire in two turns of the loop. So once the host holds the message, the loop is
    // held until all five are due: they then fire in one turn, as timers set together do.
    const TIMEOUT = 2000;
    const sleepsEnd = sleepEnd(LONG);
    const t0 = performance.now();
    const calls = Array.from({ length: 5 }, () => h.remote.call('sleep', [LONG], { timeout: TIMEOUT }));
    let timedOut = 0;
    const outcomes = Promise.all(calls.map((call) => codeOf(call).finally(() => timedOut++)));
    await until(() => h.host.stats().data.inHand === 5 || timedOut > 0, 'the host holds the five calls');
    expect(timedOut).toBe(0); // the host held all five before any timer fired
    while (performance.now() - t0 < TIMEOUT + 5);
    expect(await outcomes).toEqual(Array(5).fill(C.Timeout));
    expect(await first(h.remote.exec('echo', 1), sleepsEnd)).toBe(1);
    // The two running sleeps stop when they next look at their cancel flag, long before their end.
    const left = until(() => h.host.stats().data.inHand === 0, 'the cancelled calls leave the host').then(() => 'left');
    expect(await first(left, sleepsEnd)).toBe('left');
    const { data } = h.host.stats();
    expect([data.cancelled, data.cancelsIgnored, data.pool.running]).toEqual([5, 0, 0]);
    expect(cancels.map((c) => c.ids.length)).toEqual([5]);
    await h.close();
  });

  test('a call given up on while its message waits to be sent again (busy) is left out of it', async () => {
    const h = await localHost('cancel-busy', 2, { concurrency: 1 });
    const holding = h.remote.call('sleep', [500]); // the host's one call: the next message is refused as busy
    await new Promise((r) => setTimeout(r, 50));
    const ac = new AbortController();
    const sleepEnds = sleepEnd(LONG);
    const calls = [h.remote.call('sleep', [LONG], { signal: ac.signal }), h.remote.exec('echo', 'e')];
    setTimeout(() => ac.abort(), 100);
    expect(await first(Promise.all(calls.map(codeOf)), sleepEnds)).toEqual([C.Aborted, 'resolved "e"']);
    expect(await holding).toBe(500);
    const { data } = h.host.stats();
    expect(data.busy).toBeGreaterThan(0);
    // The aborted sleep never reached the host: only the holding one ran.
    expect(data.methods.sleep.calls).toBe(1);
    await h.close();
  });

  test('a timeout of 2^31 ms or more, or Infinity, never fires early: the call waits until its caller aborts it', async () => {
    const h = await localHost('cancel-long-timeout', 6); // a thread for each sleep, and one for the echo
    const outcomes = [];
    const ac = new AbortController();
    const calls = [2147483647.5, 2 ** 31, 2 ** 40, Infinity].map((timeout) =>
      codeOf(h.remote.call('sleep', [LONG], { timeout, signal: ac.signal })).then((outcome) => outcomes.push([timeout, outcome])),
    );
    // A sibling with a short timeout settles, then a round trip completes: the long ones wait on.
    expect(await codeOf(h.remote.call('sleep', [LONG], { timeout: 20 }))).toBe(C.Timeout);
    expect(await h.remote.exec('echo', 'round trip')).toBe('round trip');
    expect(outcomes).toEqual([]);
    ac.abort();
    await Promise.all(calls);
    expect(outcomes.map(([, outcome]) => outcome)).toEqual(Array(4).fill(C.Aborted));
    await h.close();
  });

  test('a cancel for a call already finished, or for a message no longer held, changes nothing', async () => {
    const h = await localHost('cancel-late', 2);
    // A message answered already: the cancel finds nothing held.
    const done = await sendRaw('cancel-late', '{"jsonrpc":"2.0","method":"echo","params":[1],"id":1}');
    expect(JSON.parse(await done.answer).result).toBe(1);
    nc.publish('cancel-late.cancel', done.cancel([1]));
    await nc.flush();
    // A batch in hand whose first call has finished: that call keeps its result.
    const batch = await sendRaw(
      'cancel-late',
      '[{"jsonrpc":"2.0","method":"echo","params":["a"],"id":1},{"jsonrpc":"2.0","method":"sleep","params":[300],"id":2}]',
    );
    await new Promise((r) => setTimeout(r, 100));
    nc.publish('cancel-late.cancel', batch.cancel([1, 1, 1]));
    await nc.flush();
    expect(JSON.parse(await batch.answer)).toEqual([
      { jsonrpc: '2.0', result: 'a', id: 1 },
      { jsonrpc: '2.0', result: 300, id: 2 },
    ]);
    const { data } = h.host.stats();
    expect([data.cancelsIgnored, data.cancelled, data.inHand]).toEqual([1, 1, 0]);
    expect(await h.remote.exec('echo', 'still')).toBe('still');
    await h.close();
  });

  test('hostile cancels are ignored: the host neither crashes nor cancels what they do not name', async () => {
    const h = await localHost('cancel-hostile', 2);
    const held = await sendRaw(
      'cancel-hostile',
      '[{"jsonrpc":"2.0","method":"sleep","params":[300],"id":1},{"jsonrpc":"2.0","method":"sleep","params":[300],"id":"x"},{"jsonrpc":"2.0","method":"echo","params":[3]}]',
    );
    const R = JSON.stringify(held.reply);
    const edited = (text, change) => JSON.stringify({ ...JSON.parse(text), ...change });
    const spent = held.cancel(['none of its ids']);
    const hostile = [
      'garbage',
      '',
      'null',
      '[1,2]',
      '"text"',
      '{"reply":5,"ids":[1]}',
      // Cancels of the version before proofs, and of a version to come.
      `{"reply":${R},"ids":[1]}`,
      edited(held.cancel([1], false), { v: 2 }),
      edited(held.cancel([1], false), { v: '1' }),
      // Without the message's secret: none, a malformed one, the proof itself, a spent one.
      edited(held.cancel([1], false), { secret: undefined }),
      edited(held.cancel([1], false), { secret: 'short' }),
      edited(held.cancel([1], false), { next: 'short' }),
      edited(held.cancel([1], false), { secret: JSON.parse(spent).next }),
      spent,
      // The message's secret, with ids that are not a list, or for another reply subject.
      held.cancel('1', false),
      held.cancel({ 0: 1 }, false),
      edited(held.cancel([1, 'x'], false), { reply: '_INBOX.nobody' }),
      // The message's secret, with ids it does not hold, or not as these types: "1" is not 1, 1 is not "x".
      held.cancel(['1', 2, 'y', null, { id: 1 }, [1], true, 'x ', -0.5]),
      '['.repeat(200000),
      held.cancel(Array(100001).fill(9)),
      held.cancel([]).replace('"ids":[]', `"ids":${'['.repeat(5000)}${']'.repeat(5000)}`),
    ];
    nc.publish('cancel-hostile.cancel', spent);
    for (const text of hostile) nc.publish('cancel-hostile.cancel', text);
    await nc.flush();
    expect(JSON.parse(await held.answer)).toEqual([
      { jsonrpc: '2.0', result: 300, id: 1 },
      { jsonrpc: '2.0', result: 300, id: 'x' },
    ]);
    const { data } = h.host.stats();
    expect([data.cancelsIgnored, data.cancelled, data.inHand]).toEqual([hostile.length + 1, 0, 0]);
    expect(await h.remote.exec('echo', 'alive')).toBe('alive');
    await h.close();
  });
});
