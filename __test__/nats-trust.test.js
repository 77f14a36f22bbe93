'use strict';
// corepool/nats on a server without permissions: nothing a message says makes a host act
// outside its caller's own call. A reply subject in the service's own namespace or a system
// subject is refused (issue #28, item 2); a cancel must prove it comes from the caller (item 3).
// __test__/nats-permissions.test.js shows the same on a server with the documented permissions.

const path = require('node:path');
const { Linter } = require('eslint');
const { connect } = require('@nats-io/transport-node');
const { Pool, RpcError } = require('../index.js');
const { serve, RemotePool } = require('../lib/nats.js');
const { startNats, natsServerPath } = require('./helpers/nats/server.js');

const maybe = natsServerPath() === null ? describe.skip : describe;

let server;
let nc;
let pool;

const key = (id) => Buffer.from(id, 'utf8').toString('base64url');
const request = (method, params, id = 1) => JSON.stringify({ jsonrpc: '2.0', method, params, id });

/** Counts the messages published on each of `subjects` until stop(). */
function watch(subjects) {
  const seen = Object.fromEntries(subjects.map((s) => [s, 0]));
  const subs = subjects.map((s) => nc.subscribe(s, { callback: () => seen[s]++ }));
  return {
    seen,
    stop: () => subs.forEach((s) => s.unsubscribe()),
  };
}

maybe('corepool/nats trust on an open server', () => {
  beforeAll(async () => {
    server = await startNats();
    nc = await connect({ servers: server.url });
    pool = new Pool({ threads: 4 });
  });

  afterAll(async () => {
    await nc?.close();
    await pool?.close();
    await server?.stop();
  });

  test('a call whose reply subject is a job\'s results subject cannot forge that job\'s outcome', async () => {
    const host = await serve(pool, nc, { name: 'forge', durable: true });
    const remote = new RemotePool(nc, { name: 'forge' });
    await remote.submit('sleep', [300], { id: 'victim' });
    nc.publish('forge', request('echo', ['FORGED']), { reply: `forge.results.${key('victim')}` });
    await nc.flush();
    expect(await remote.waitFor('victim')).toBe(300);
    expect(await remote.outcome('victim')).toMatchObject({ id: 'victim', result: 300, host: host.id });
    expect(host.stats().data.repliesRefused).toBe(1);
    await host.close();
    await remote.close();
  });

  test('replies into the service\'s namespace, system subjects or wildcards are refused, counted and never sent; the call is not run', async () => {
    const host = await serve(pool, nc, { name: 'own', concurrency: 1 });
    const targets = ['own', 'own.jobs', 'own.cancel', `own.host.${host.id}`, 'own.results.eA', 'own.dead.eA', 'own.x.y.z', '$JS.API.STREAM.DELETE.own-jobs', '$SRV.PING', '$KV.bucket.key', '$SYS.REQ.SERVER.PING'];
    // ($JS.ACK.… is left out: nats-server itself drops a message with such a reply subject.)
    const watched = watch(targets);
    const refused = [...targets, 'own.*', 'a.>', 'a..b', '.a', 'a.'];
    await nc.flush();
    const calls = host.stats().num_requests;
    for (const reply of refused) nc.publish('own', request('echo', [reply]), { reply });
    // Status messages too: a $SRV request with a reply subject in the namespace gets no answer.
    nc.publish('$SRV.PING.own', '', { reply: 'own.results.eA' });
    await nc.flush();
    // A real call after them, answered: the refused ones were taken (and dropped) before it.
    const remote = new RemotePool(nc, { name: 'own' });
    expect(await remote.exec('echo', 'after')).toBe('after');
    await nc.flush();
    watched.stop();
    const data = host.stats();
    expect(watched.seen).toEqual(Object.fromEntries(targets.map((t) => [t, t === 'own' ? refused.length + 1 : 0])));
    expect(data.data.repliesRefused).toBe(refused.length + 1);
    expect(data.num_requests - calls).toBe(1);
    await remote.close();
    await host.close();
  });

  test('a third party that sees a request cannot cancel it: cancels without the caller\'s secret are ignored and counted', async () => {
    const host = await serve(pool, nc, { name: 'spy' });
    const remote = new RemotePool(nc, { name: 'spy' });
    // The spy subscribes to the calls outside the queue group: it sees each request whole.
    const spied = new Promise((resolve) => {
      const sub = nc.subscribe('spy', { callback: (err, m) => (sub.unsubscribe(), resolve(m)) });
    });
    await nc.flush();
    const call = remote.call('sleep', [300]);
    const seen = await spied;
    const { id } = JSON.parse(seen.string());
    const proof = seen.headers?.get('Corepool-Cancel') ?? '';
    const made = 'A'.repeat(43);
    const forged = [
      { reply: seen.reply, ids: [id] }, // no proof at all
      { v: 1, reply: seen.reply, secret: proof, next: made, ids: [id] }, // the commitment it saw, as the secret
      { v: 1, reply: seen.reply, secret: made, next: made, ids: [id] }, // a guess
      { v: 2, reply: seen.reply, secret: made, next: made, ids: [id] },
    ];
    for (const cancel of forged) nc.publish('spy.cancel', JSON.stringify(cancel));
    await nc.flush();
    expect(await call).toBe(300);
    expect(host.stats().data).toMatchObject({ cancelled: 0, cancelsIgnored: forged.length });
    await remote.close();
    await host.close();
  });

  test('a secret revealed by the caller\'s cancel cancels nothing more of its message', async () => {
    const host = await serve(pool, nc, { name: 'replay' });
    const remote = new RemotePool(nc, { name: 'replay' });
    const replayed = new Promise((resolve) => {
      const sub = nc.subscribe('replay.cancel', {
        callback: (err, m) => {
          sub.unsubscribe();
          // The spy hears the caller's cancel of the first call, and names the second with it.
          const cancel = JSON.parse(m.string());
          nc.publish('replay.cancel', JSON.stringify({ ...cancel, ids: [cancel.ids[0] + 1] }));
          resolve(cancel);
        },
      });
    });
    await nc.flush();
    // One tick, one message: the first call gives up, the second runs on.
    const first = remote.call('sleep', [5000], { timeout: 50 }).catch((e) => e.code);
    const second = remote.call('sleep', [300]);
    expect(await first).toBe(RpcError.codes.Timeout);
    await replayed;
    await nc.flush(); // the host (on this connection) has heard the replayed cancel
    expect(await second).toBe(300);
    expect(host.stats().data).toMatchObject({ cancelled: 1, cancelsIgnored: 1 });
    await remote.close();
    await host.close();
  });
});

test('the lint rule refuses msg.respond() anywhere in lib/ but lib/nats/reply.js', () => {
  const root = path.join(__dirname, '..');
  const linter = new Linter({ cwd: root });
  const rules = (file) => linter.verify("'use strict';\nmodule.exports = (msg) => msg.respond('x');\n", require('../eslint.config.js'), { filename: path.join(root, file) }).map((m) => m.ruleId);
  expect(rules('lib/nats/host.js')).toEqual(['no-restricted-syntax']);
  expect(rules('lib/serve.js')).toEqual(['no-restricted-syntax']);
  expect(rules('lib/nats/reply.js')).toEqual([]);
});

maybe('corepool/nats: what a host tells a remote caller of its own files', () => {
  let filePool;
  beforeAll(async () => {
    server = await startNats();
    nc = await connect({ servers: server.url });
    filePool = new Pool({ filename: path.join(__dirname, 'fixtures', 'tasks', 'throws.js'), threads: 1 });
  });

  afterAll(async () => {
    await nc?.close();
    await filePool?.close();
    await server?.stop();
  });

  test("an error thrown by a task reaches a remote caller without its stack (the host's file paths), with its name, message and fields", async () => {
    // Locally, the error keeps its stack, which names the task file.
    const local = await filePool.exec('typeError').catch((e) => e);
    expect(local.stack).toContain('throws.js');
    const host = await serve(filePool, nc, { name: 'stacks' });
    const remote = new RemotePool(nc, { name: 'stacks' });
    const remoteError = await remote.exec('typeError').catch((e) => e);
    expect(remoteError).toBeInstanceOf(RpcError);
    expect(remoteError.code).toBe(RpcError.codes.CommandFailed);
    expect(remoteError.message).toBe(local.message);
    expect(JSON.stringify(remoteError.data)).not.toContain('throws.js');
    expect(JSON.stringify(remoteError.data)).not.toContain('"stack"');
    expect([remoteError.data.name, remoteError.data.code, remoteError.data.details]).toEqual([local.name, local.code, local.details]);
    // Through request() and handle() too, batches included.
    const text = await remote.handle(`[${request('typeError', [])},${request('typeError', [], 2)}]`);
    expect(text).not.toContain('throws.js');
    expect(JSON.parse(text).map((r) => r.error.data.name)).toEqual([local.name, local.name]);
    await host.close();
    await remote.close();
  });
});
