'use strict';
// corepool/nats request/reply against a real nats-server (started on a free loopback port):
// hosts in this process and in child processes, killed and restarted.

const { connect } = require('@nats-io/transport-node');
const { Pool, RpcError } = require('../index.js');
const { serve, RemotePool } = require('../lib/nats.js');
const { startNats, natsServerPath } = require('./helpers/nats/server.js');
const { childHost, killChildHosts } = require('./helpers/nats/child-host.js');

const C = RpcError.codes;
const maybe = natsServerPath() === null ? describe.skip : describe;
if (natsServerPath() === null) console.warn('nats-server is not installed: the corepool/nats tests are skipped');

let server;
let nc;
let pool;
let host;
let remote;

const codeOf = (p) =>
  p.then(
    (v) => `resolved ${JSON.stringify(v)}`,
    (e) => e.code,
  );

async function connectTo(url, more) {
  return connect({ servers: url, reconnectTimeWait: 50, maxReconnectAttempts: -1, ...more });
}

maybe('corepool/nats request/reply', () => {
  beforeAll(async () => {
    server = await startNats();
    nc = await connectTo(server.url);
    pool = new Pool({ threads: 2 });
    host = await serve(pool, nc, { name: 'rr' });
    remote = new RemotePool(nc, { name: 'rr', liveness: 1500 });
  });

  afterAll(async () => {
    killChildHosts();
    await host?.close();
    await remote?.close();
    await nc?.close();
    await pool?.close();
    await server?.stop();
  });

  test('exec, call and request answer as the local pool does', async () => {
    expect(await remote.exec('echo', { a: [1, 'x', null] })).toEqual({ a: [1, 'x', null] });
    expect(await remote.call('fibonacci', 90)).toBe(await pool.exec('fibonacci', 90));
    expect(await remote.request({ jsonrpc: '2.0', method: 'echo', params: [5], id: 'k' })).toEqual({ jsonrpc: '2.0', result: 5, id: 'k' });
    const e = await remote.exec('fibonacci', -1).catch((x) => x);
    expect(e).toBeInstanceOf(RpcError);
    const local = await pool.exec('fibonacci', -1).catch((x) => x);
    expect([e.code, e.message]).toEqual([local.code, local.message]);
  });

  test('bad input over the wire gets the answers of pool.handle()', async () => {
    const texts = [
      '{x',
      'not json at all',
      '[]',
      '[1,2]',
      '42',
      '{"jsonrpc":"2.0","method":"nope","id":1}',
      '{"jsonrpc":"2.0","method":"fibonacci","params":["ten"],"id":2}',
      '{"jsonrpc":"1.0","method":"echo","params":[1],"id":3}',
      '{"jsonrpc":"2.0","method":5,"id":4}',
      '[{"jsonrpc":"2.0","method":"echo","params":[1],"id":1},{"jsonrpc":"2.0","method":"nope","id":2},{"bad":true},{"jsonrpc":"2.0","method":"echo","params":[3]}]',
      '{"jsonrpc":"2.0","method":"echo","params":[1]}',
      '[{"jsonrpc":"2.0","method":"echo","params":[1]}]',
    ];
    for (const text of texts) expect([text, await remote.handle(text)]).toEqual([text, await pool.handle(text)]);
    expect(await remote.handle(12)).toBe(await pool.handle(12));
    // A notification is answered by nothing, remotely too.
    expect(await remote.request({ jsonrpc: '2.0', method: 'echo', params: [1] })).toBeNull();
  });

  test('hostile arguments are refused with named errors, never sent', async () => {
    expect(await codeOf(remote.exec('echo', NaN))).toBe(C.InvalidParams);
    expect(await codeOf(remote.exec('echo', 10n))).toBe(C.InvalidParams);
    expect(await codeOf(remote.exec('echo', new Map()))).toBe(C.InvalidParams);
    const cyclic = {};
    cyclic.self = cyclic;
    expect(await codeOf(remote.exec('echo', cyclic))).toBe(C.InvalidParams);
    const getter = { get x() { throw new Error('boom'); } };
    expect((await remote.exec('echo', getter).catch((e) => e)).message).toMatch(/boom/);
    const trap = new Proxy({}, { ownKeys() { throw new Error('trap'); } });
    expect(await codeOf(remote.exec('echo', trap))).toBe(C.InvalidParams);
    expect(await codeOf(remote.call('echo', [1], { timeout: -1 }))).toBe(C.InvalidRequest);
    expect(await codeOf(remote.call('echo', [1], { timeout: NaN }))).toBe(C.InvalidRequest);
    expect(await codeOf(remote.call('echo', [1], { signal: {} }))).toBe(C.InvalidRequest);
    expect(await codeOf(remote.call('echo', [1], { nope: 1 }))).toBe(C.InvalidRequest);
    expect(await codeOf(remote.call('echo', [1], { get timeout() { throw new Error('x'); } }))).toBe(C.InvalidRequest);
    expect(await codeOf(remote.exec(42))).toBe(C.InvalidRequest);
    expect(() => new RemotePool(nc, { name: 'a b' })).toThrow(/options\.name/);
    expect(() => new RemotePool(nc, { liveness: 1 })).toThrow(RangeError);
    expect(() => new RemotePool({}, {})).toThrow(/NATS connection/);
    await expect(serve(pool, nc, { concurrency: 0 })).rejects.toThrow(/options\.concurrency/);
    await expect(serve(pool, nc, { queue: 'a.b' })).rejects.toThrow(/options\.queue/);
    await expect(serve({}, nc)).rejects.toThrow(TypeError);
  });

  test('calls started in one tick travel as batches; each settles with its own outcome', async () => {
    const before = host.stats().data.messages;
    const calls = Array.from({ length: 100 }, (_, i) => (i % 10 === 9 ? remote.exec('fibonacci', 'x') : remote.exec('echo', i)));
    const outcomes = await Promise.allSettled(calls);
    outcomes.forEach((o, i) => {
      if (i % 10 === 9) expect(o.reason.code).toBe(C.InvalidParams);
      else expect(o.value).toBe(i);
    });
    // 100 calls of at most 32 per message: 4 messages.
    expect(host.stats().data.messages - before).toBe(4);
  });

  test('answers find their calls in any order; a missing, repeated or stray answer and a whole-batch error settle as documented', async () => {
    // A responder that answers each batch with the text `answer(requests)` makes.
    let answer;
    const sub = nc.subscribe('odd', { callback: (err, m) => m.respond(answer(JSON.parse(m.string()))) });
    const client = new RemotePool(nc, { name: 'odd' });
    const four = () => Promise.allSettled([1, 2, 3, 4].map((v) => client.exec('echo', v)));
    const outcomes = (settled) => settled.map((o) => (o.status === 'fulfilled' ? o.value : o.reason.code));
    const ok = (r) => ({ jsonrpc: '2.0', result: r.params[0], id: r.id });

    answer = (rs) => JSON.stringify([...rs.map(ok).reverse(), ok(rs[0]), { jsonrpc: '2.0', result: 9, id: 999 }, 1, null, { ...ok(rs[1]), result: 'again' }]);
    expect(outcomes(await four())).toEqual([1, 2, 3, 4]);
    answer = (rs) => JSON.stringify([ok(rs[0]), ok(rs[1]), ok(rs[3])]);
    const missing = await four();
    expect(outcomes(missing)).toEqual([1, 2, C.InternalError, 4]);
    expect(missing[2].reason.message).toMatch(/without an answer for this call/);
    answer = (rs) => JSON.stringify([{ ...ok(rs[2]), result: undefined, error: { code: C.InvalidParams, message: 'no' } }, ok(rs[1]), ok(rs[0]), ok(rs[3])]);
    expect(outcomes(await four())).toEqual([1, 2, C.InvalidParams, 4]);
    answer = () => JSON.stringify({ jsonrpc: '2.0', error: { code: C.InvalidRequest, message: 'whole' }, id: null });
    expect(outcomes(await four())).toEqual(Array(4).fill(C.InvalidRequest));
    answer = () => 'not json';
    expect(outcomes(await four())).toEqual(Array(4).fill(C.InternalError));
    answer = (rs) => JSON.stringify(ok(rs));
    expect(await client.exec('echo', 'lone')).toBe('lone');
    await client.close();
    sub.unsubscribe();
  });

  test('a lone call travels as a lone request', async () => {
    const before = host.stats().data.messages;
    expect(await remote.exec('echo', 'one')).toBe('one');
    expect(host.stats().data.messages - before).toBe(1);
  });

  test('a tick\'s calls are split into as many messages as there are hosts', async () => {
    const nc2 = await connectTo(server.url);
    const [a, b] = [await serve(pool, nc, { name: 'spread' }), await serve(pool, nc2, { name: 'spread' })];
    const client = new RemotePool(nc, { name: 'spread' });
    expect((await client.hosts()).map((h) => h.id).sort()).toEqual([a.id, b.id].sort());
    expect(await Promise.all(Array.from({ length: 10 }, (_, i) => client.exec('echo', i)))).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(a.stats().data.messages + b.stats().data.messages).toBe(2);
    expect(a.stats().num_requests + b.stats().num_requests).toBe(10);
    await Promise.all([a.close(), b.close(), client.close()]);
    await nc2.close();
  });

  test('messages go to the hosts in turn, least busy first, each to its own subject', async () => {
    const nc2 = await connectTo(server.url);
    const [a, b] = [await serve(pool, nc, { name: 'turns' }), await serve(pool, nc2, { name: 'turns' })];
    const client = new RemotePool(nc, { name: 'turns' });
    const evenly = new RemotePool(nc, { name: 'turns', maxBatch: 1 });
    try {
      expect((await client.hosts()).length).toBe(2);
      // One message at a time: each goes to the host whose turn it is (a queue group picks at
      // random, and 20 in strict turns by chance would be 1 in 2^19).
      const order = [];
      for (let i = 0; i < 20; i++) {
        const before = a.stats().data.messages;
        expect(await client.exec('echo', i)).toBe(i);
        order.push(a.stats().data.messages > before ? 'a' : 'b');
      }
      expect(['ab'.repeat(10), 'ba'.repeat(10)]).toContain(order.join(''));
      // Many at once: spread evenly (maxBatch 1: a message per call).
      await evenly.hosts();
      const [ma, mb] = [a.stats().data.messages, b.stats().data.messages];
      await Promise.all(Array.from({ length: 40 }, (_, i) => evenly.call('sleep', [5]).then(() => i)));
      expect([a.stats().data.messages - ma, b.stats().data.messages - mb]).toEqual([20, 20]);
    } finally {
      await Promise.all([a.close(), b.close(), client.close(), evenly.close()]);
      await nc2.close();
    }
  });

  test('a host gone since the last survey: its messages go to the others, and none fails; with none left, Unavailable', async () => {
    const nc2 = await connectTo(server.url);
    const nc3 = await connectTo(server.url);
    const [a, b, c] = [await serve(pool, nc, { name: 'gone' }), await serve(pool, nc2, { name: 'gone' }), await serve(pool, nc3, { name: 'gone' })];
    const client = new RemotePool(nc, { name: 'gone' });
    try {
      expect((await client.hosts()).length).toBe(3);
      await b.close();
      await c.close();
      const before = a.stats().data.messages;
      // Messages sent straight to b or c hear "no responders" and go to another host.
      for (let i = 0; i < 6; i++) expect(await client.exec('echo', i)).toBe(i);
      expect(a.stats().data.messages - before).toBe(6);
      await a.close();
      expect(await codeOf(client.exec('echo', 1))).toBe(C.Unavailable);
    } finally {
      await Promise.all([a.close(), b.close(), c.close(), client.close()]);
      await Promise.all([nc2.close(), nc3.close()]);
    }
  });

  test('params beyond the max payload are refused clearly; results beyond it are InternalError', async () => {
    const max = nc.info.max_payload;
    const e = await remote.exec('echo', 'x'.repeat(max)).catch((x) => x);
    expect(e.code).toBe(C.InvalidParams);
    expect(e.message).toMatch(/max payload of \d+ bytes/);
    // Params within it travel whole.
    const big = 'é'.repeat(Math.floor(max / 5));
    expect(await remote.exec('echo', big)).toBe(big);
    // A result bigger than the max payload: the call ran, its answer says why it cannot travel.
    const part = 'y'.repeat(Math.ceil(max / 2) + 10);
    const r = await remote.exec('render', '{{>p}}{{>p}}', {}, { p: part }).catch((x) => x);
    expect(r.code).toBe(C.InternalError);
    expect(r.message).toMatch(/exceeds the NATS server's max payload/);
    // In a batch, only the oversized answer is replaced.
    const [a, b] = await Promise.allSettled([remote.exec('render', '{{>p}}{{>p}}', {}, { p: part }), remote.exec('echo', 2)]);
    expect([a.reason.code, b.value]).toEqual([C.InternalError, 2]);
  });

  test('timeout and signal settle the caller; the host still answers the others', async () => {
    expect(await codeOf(remote.call('sleep', [2000], { timeout: 50 }))).toBe(C.Timeout);
    const ac = new AbortController();
    const p = remote.call('sleep', [2000], { signal: ac.signal });
    setTimeout(() => ac.abort(), 30);
    expect(await codeOf(p)).toBe(C.Aborted);
    ac.abort();
    expect(await codeOf(remote.call('echo', [1], { signal: ac.signal }))).toBe(C.Aborted);
    expect(await remote.exec('echo', 'after')).toBe('after');
  });

  test('a call held longer than the liveness window is kept alive by the host\'s "working" beats', async () => {
    expect(await remote.call('sleep', [2500])).toBe(2500);
  });

  test('map over the remote pool: results in order, settle all, onProgress', async () => {
    expect(await remote.map('fibonacci', [1, 2, 3, 4, 5])).toEqual(['1', '1', '2', '3', '5']);
    const seen = [];
    const all = await remote.map('fibonacci', [10, 'x'], { settle: 'all', onProgress: (done, total) => seen.push([done, total]) });
    expect(all[0]).toEqual({ status: 'fulfilled', value: '55' });
    expect(all[1].reason.code).toBe(C.InvalidParams);
    expect(seen.map(([, t]) => t)).toEqual([2, 2]);
    expect(await codeOf(remote.map('fibonacci', [1, 'x']))).toBe(C.InvalidParams);
    expect(await codeOf(remote.map('echo', 5))).toBe(C.InvalidRequest);
  });

  test('no host on the subject: Unavailable at once, not after a timeout', async () => {
    const nobody = new RemotePool(nc, { name: 'nobody' });
    // Had it waited for its timeout, it would have settled with Timeout: Unavailable came first.
    const e = await nobody.call('echo', [1], { timeout: 10000 }).catch((x) => x);
    expect(e.code).toBe(C.Unavailable);
    expect(JSON.parse(await nobody.handle('{"jsonrpc":"2.0","method":"echo","params":[1],"id":1}')).error.code).toBe(C.Unavailable);
    await nobody.close();
  });

  test('the services protocol lists the host and its per-method figures', async () => {
    await remote.exec('echo', 1);
    const [ping] = await remote.hosts();
    expect(ping).toMatchObject({ type: 'io.nats.micro.v1.ping_response', name: 'rr', id: host.id });
    const info = JSON.parse((await nc.request(`$SRV.INFO.rr.${host.id}`, '')).string());
    expect(info.endpoints).toEqual([expect.objectContaining({ subject: 'rr', queue_group: 'rr' })]);
    const [stats] = await remote.stats();
    expect(stats.type).toBe('io.nats.micro.v1.stats_response');
    expect(stats.endpoints[0].data.methods.echo.calls).toBeGreaterThan(0);
    expect(stats.endpoints[0].num_requests).toBeGreaterThan(0);
    // The generic subjects answer too, as standard tooling asks them.
    const all = await nc.request('$SRV.PING', '');
    expect(JSON.parse(all.string()).name).toBe('rr');
  });

  test("calls to methods nobody serves count under one entry: a caller cannot grow a host's figures, nor its STATS answer past the server's max payload", async () => {
    // (Each distinct name was an entry: 200 names of 400 kB grew the host by ~80 MB and made
    // its STATS answer too big to send, so remote.stats() found no host.)
    const before = (await remote.stats())[0].endpoints[0].data.methods;
    const names = Array.from({ length: 40 }, (_, i) => `${'x'.repeat(20_000)}${i}`);
    for (const name of names) expect((await remote.call(name, []).catch((e) => e)).code).toBe(C.MethodNotFound);
    for (let i = 0; i < 300; i++) expect((await remote.call(`missing${i}`, []).catch((e) => e)).code).toBe(C.MethodNotFound);
    const [stats] = await remote.stats();
    const methods = stats.endpoints[0].data.methods;
    const added = Object.keys(methods).filter((k) => !(k in before));
    // (Counted, not listed: a failure would print the 20 kB names.)
    expect(added.filter((k) => k !== '(method not found)').length).toBe(0);
    expect(methods['(method not found)'].calls - (before['(method not found)']?.calls ?? 0)).toBe(340);
    expect(methods['(method not found)'].errors).toBe(methods['(method not found)'].calls);
  });

  test("notifications and invalid requests cannot grow a host's figures either; a name gets an entry once an answer shows it is served", async () => {
    // (Only a MethodNotFound answer sent a call to the shared entry: a notification of a made-up
    // name gets no answer, and a call whose params are not an array gets InvalidRequest before
    // any method is looked up, so each such name was kept, 200 kB of it, and six were enough to
    // make the STATS answer too big to send. A '__proto__' entry replaced the prototype of
    // the figures instead of showing.)
    const served = new Pool({ threads: 1 });
    const longServed = `served${'y'.repeat(300)}`;
    served.serve({ [longServed]: () => 'long' });
    const h = await serve(served, nc, { name: 'figures' });
    const long = (i) => `nobody-${i}-${'x'.repeat(200_000)}`;
    const request = (o) => nc.request('figures', JSON.stringify({ jsonrpc: '2.0', ...o }), { timeout: 10_000 }).then((m) => JSON.parse(m.string()));
    expect((await request({ method: long(0), params: 5, id: 1 })).error.code).toBe(C.InvalidRequest);
    for (let i = 1; i < 7; i++) nc.publish('figures', JSON.stringify({ jsonrpc: '2.0', method: long(i), params: [] }));
    nc.publish('figures', JSON.stringify({ jsonrpc: '2.0', method: '__proto__', params: [] }));
    // A notification of a method nobody has answered yet, then one after.
    nc.publish('figures', JSON.stringify({ jsonrpc: '2.0', method: 'echo', params: [1] }));
    await nc.flush();
    while (h.stats().data.messages < 9) await new Promise((r) => setTimeout(r, 10));
    expect((await request({ method: 'echo', params: [2], id: 2 })).result).toBe(2);
    nc.publish('figures', JSON.stringify({ jsonrpc: '2.0', method: 'echo', params: [3] }));
    await nc.flush();
    while (h.stats().data.messages < 11) await new Promise((r) => setTimeout(r, 10));
    // A served name past 256 characters counts under '(more methods)'; an error naming a long
    // method is cut in last_error.
    expect((await request({ method: longServed, params: [], id: 3 })).result).toBe('long');
    expect((await request({ method: long(7), params: [], id: 4 })).error.code).toBe(C.MethodNotFound);
    const methods = h.stats().data.methods;
    expect(Object.keys(methods).sort()).toEqual(['(invalid request)', '(method not found)', '(more methods)', '(notifications)', 'echo']);
    expect(Object.getPrototypeOf(methods)).toBe(Object.prototype);
    expect([methods['(invalid request)'].calls, methods['(notifications)'].calls, methods.echo.calls, methods['(more methods)'].calls, methods['(method not found)'].calls]).toEqual([1, 8, 2, 1, 1]);
    expect(h.stats().last_error.length).toBeLessThanOrEqual(1025);
    // And STATS answers.
    const client = new RemotePool(nc, { name: 'figures' });
    const [stats] = await client.stats();
    expect(stats.endpoints[0].data.methods).toEqual(JSON.parse(JSON.stringify(methods)));
    await client.close();
    await h.close();
    await served.close();
  });

  test('concurrency bounds the calls a host holds; a busy host sends work to another', async () => {
    const nc2 = await connectTo(server.url);
    const pool2 = new Pool({ threads: 2 });
    const a = await serve(pool, nc, { name: 'bounded', concurrency: 1 });
    const b = await serve(pool2, nc2, { name: 'bounded', concurrency: 1 });
    const client = new RemotePool(nc, { name: 'bounded', maxBatch: 1 });
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => client.call('sleep', [60]).then(() => i)));
    expect(results).toEqual([0, 1, 2, 3, 4, 5]);
    for (const h of [a, b]) expect(h.stats().data.peakInHand).toBe(1);
    expect(a.stats().data.messages + b.stats().data.messages).toBe(6);
    expect(a.stats().data.messages).toBeGreaterThan(0);
    expect(b.stats().data.messages).toBeGreaterThan(0);
    await Promise.all([a.close(), b.close(), client.close()]);
    await nc2.close();
    await pool2.close();
  });

  test('close() answers the calls in hand, then takes no more', async () => {
    const nc2 = await connectTo(server.url);
    const closing = await serve(pool, nc2, { name: 'closing' });
    const client = new RemotePool(nc, { name: 'closing' });
    const held = client.call('sleep', [300]).then(() => 'answered');
    await new Promise((r) => setTimeout(r, 100));
    await closing.close();
    expect(await held).toBe('answered');
    expect(await codeOf(client.exec('echo', 1))).toBe(C.Unavailable);
    await client.close();
    await nc2.close();
  });

  test('a host killed with SIGKILL mid-traffic: every call settles, with a result or ServerGone', async () => {
    const hosts = await Promise.all([childHost(server.url, { name: 'kill', label: 'a' }), childHost(server.url, { name: 'kill', label: 'b' })]);
    const client = new RemotePool(nc, { name: 'kill', liveness: 1000, maxBatch: 4 });
    const outcomes = [];
    let stop = false;
    const callers = Array.from({ length: 16 }, async () => {
      while (!stop) {
        // A timeout far past the liveness window: a call whose host's silence went unnoticed
        // settles with Timeout, not ServerGone.
        const o = await client.call('sleep', [300], { timeout: 10000 }).then(
          () => 'ok',
          (e) => e.code,
        );
        outcomes.push(o);
      }
    });
    // Kill host a while it holds calls: a host killed with none in hand would leave nothing to
    // test. Its own stats answer says so, and the kill follows that answer at once; each call
    // sleeps 300 ms, far longer than the answer takes to arrive, so the calls are still in hand.
    // (Asking every host and waiting 100 ms for all answers, with 20 ms calls, once let the
    // calls finish in between under CI's load, and the test found no ServerGone.)
    const deadline = Date.now() + 10000;
    for (;;) {
      const reply = await nc.request(`$SRV.STATS.kill.${hosts[0].id}`, '', { timeout: 1000 });
      const inHand = JSON.parse(reply.string()).endpoints[0].data.inHand;
      if (inHand > 0) break;
      if (Date.now() > deadline) throw new Error(`host a never held a call: ${inHand}`);
      await new Promise((r) => setTimeout(r, 10));
    }
    hosts[0].child.kill('SIGKILL');
    await new Promise((r) => setTimeout(r, 1800));
    stop = true;
    await Promise.all(callers);
    const codes = new Set(outcomes);
    // Every call settled, and none waited for its timeout: the silence was noticed first.
    for (const c of codes) expect(['ok', C.ServerGone]).toContain(c);
    expect(outcomes.filter((o) => o === C.ServerGone).length).toBeGreaterThan(0);
    // The survivor serves everything now.
    const who = await Promise.all(Array.from({ length: 8 }, () => client.exec('whoami')));
    expect(new Set(who.map((w) => w.label))).toEqual(new Set(['b']));
    hosts[1].child.kill('SIGTERM');
    await new Promise((r) => hosts[1].child.once('exit', r));
    await client.close();
  }, 20000);

  test('the NATS server restarts mid-traffic: calls settle, then clients and hosts reconnect', async () => {
    const { child } = await childHost(server.url, { name: 'restart', label: 'r' });
    const nc2 = await connectTo(server.url);
    const client = new RemotePool(nc2, { name: 'restart', liveness: 1000 });
    let stop = false;
    const outcomes = [];
    const callers = Array.from({ length: 8 }, async () => {
      while (!stop) {
        outcomes.push(await client.call('echo', [1]).then(() => 'ok', (e) => e.code));
        if (outcomes.length % 50 === 0) await new Promise((r) => setTimeout(r, 5));
      }
    });
    await new Promise((r) => setTimeout(r, 200));
    await server.restart();
    // Served again once both ends are back.
    const t0 = performance.now();
    let served = false;
    while (!served && performance.now() - t0 < 10000) {
      served = (await client.exec('whoami').catch(() => null))?.label === 'r';
      if (!served) await new Promise((r) => setTimeout(r, 100));
    }
    stop = true;
    await Promise.all(callers);
    expect(served).toBe(true);
    for (const c of new Set(outcomes)) expect(['ok', C.ServerGone, C.Unavailable]).toContain(c);
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    await client.close();
    await nc2.close();
  }, 20000);
});
