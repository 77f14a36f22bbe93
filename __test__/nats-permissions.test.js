'use strict';
// corepool/nats in a deployment with permissions: nats-server runs with
// examples/nats-permissions.conf, the file the docs show, and its users `host` and `caller`.
// Everything a caller is documented to do works with the caller's permissions, and what it must
// not do fails: subscribe to requests, publish on the jobs' and results' internals, forge a
// job's outcome (also through a host, which may publish there, or through JetStream's answers,
// which are no outcome) or cancel another caller's call.
// __test__/nats-trust.test.js shows the host's own defences on a server without permissions.

const path = require('node:path');
const { connect } = require('@nats-io/transport-node');
const { Pool, RpcError } = require('../index.js');
const { serve, RemotePool } = require('../lib/nats.js');
const { startNats, natsServerPath } = require('./helpers/nats/server.js');
const { eventually } = require('./helpers/order.js');

const C = RpcError.codes;
const maybe = natsServerPath() === null ? describe.skip : describe;
const CONFIG = path.join(__dirname, '..', 'examples', 'nats-permissions.conf');

let server;
let pool;
let host;
let hostNc;
let callerNc;
let attackerNc;
/** Permission violations the server reported, by connection. */
const violations = new Map();

/** A connection as `user` of the config (password `<user>-password`, inbox prefix `_INBOX.<user>`). */
async function as(user) {
  const nc = await connect({ servers: server.url, user, pass: `${user}-password`, inboxPrefix: `_INBOX.${user}` });
  const seen = [];
  violations.set(nc, seen);
  (async () => {
    for await (const s of nc.status()) {
      if (s.type === 'error' && s.error?.name === 'PermissionViolationError') seen.push(`${s.error.operation} ${s.error.subject}`);
    }
  })();
  return nc;
}

const key = (id) => Buffer.from(id, 'utf8').toString('base64url');
const request = (method, params, id = 1) => JSON.stringify({ jsonrpc: '2.0', method, params, id });

maybe('corepool/nats with the documented permissions (examples/nats-permissions.conf)', () => {
  beforeAll(async () => {
    server = await startNats(['-c', CONFIG]);
    hostNc = await as('host');
    callerNc = await as('caller');
    attackerNc = await as('caller');
    pool = new Pool({ threads: 4 });
    host = await serve(pool, hostNc, { durable: { maxDeliver: 1 } });
  });

  afterAll(async () => {
    await host?.close();
    for (const nc of [hostNc, callerNc, attackerNc]) await nc?.close();
    await pool?.close();
    await server?.stop();
  });

  test('a user without the config\'s password cannot connect', async () => {
    await expect(connect({ servers: server.url, user: 'caller', pass: 'guess', reconnect: false })).rejects.toThrow(/Authorization/i);
  });

  test('everything a caller is documented to do works: calls, batches, map, cancels, hosts, stats, durable jobs', async () => {
    const remote = new RemotePool(callerNc);
    expect(await remote.exec('echo', 'hi')).toBe('hi');
    expect(await Promise.all([remote.call('fibonacci', [10]), remote.exec('echo', 2), remote.call('nope')]).catch((e) => e.code)).toBe(C.MethodNotFound);
    expect(await Promise.all([remote.call('fibonacci', [10]), remote.exec('echo', 2)])).toEqual(['55', 2]);
    expect(await remote.request({ jsonrpc: '2.0', method: 'echo', params: [3], id: 7 })).toEqual({ jsonrpc: '2.0', result: 3, id: 7 });
    expect(await remote.handle(request('echo', [4]))).toBe('{"jsonrpc":"2.0","result":4,"id":1}');
    expect(await remote.map('echo', [1, 2, 3])).toEqual([1, 2, 3]);
    // A cancel: the call times out, and its host stops it. The cancel goes on a subject of its
    // own, so a later call may reach the host first: wait for the host to count it.
    const cancelled = host.stats().data.cancelled;
    await expect(remote.call('sleep', [10000], { timeout: 50 })).rejects.toMatchObject({ code: C.Timeout });
    expect(await remote.exec('echo', 'after')).toBe('after');
    await eventually(() => host.stats().data.cancelled > cancelled, 'the host counts the proven cancel');
    expect(host.stats().data.cancelled - cancelled).toBe(1);
    expect(host.stats().data.cancelsIgnored).toBe(0);
    expect((await remote.hosts()).map((h) => h.id)).toEqual([host.id]);
    expect((await remote.stats()).map((s) => s.id)).toEqual([host.id]);
    // With two hosts known, messages go to each host's own subject (<subject>.host.<id>).
    const secondNc = await as('host');
    const second = await serve(pool, secondNc);
    expect((await remote.hosts()).map((h) => h.id).sort()).toEqual([host.id, second.id].sort());
    const before = [host, second].map((h) => h.stats().data.messages);
    for (let i = 0; i < 4; i++) expect(await remote.exec('echo', i)).toBe(i);
    expect([host, second].map((h, i) => h.stats().data.messages - before[i])).toEqual([2, 2]);
    await second.close();
    expect(violations.get(secondNc)).toEqual([]);
    await secondNc.close();
    // Durable jobs: submit, waitFor (before and after the outcome), outcome, results, dead letters.
    const waiting = remote.waitFor('perm-job');
    expect(await remote.submit('echo', ['job'], { id: 'perm-job' })).toEqual({ id: 'perm-job', duplicate: false });
    expect(await waiting).toBe('job');
    expect(await remote.waitFor('perm-job')).toBe('job');
    expect(await remote.outcome('perm-job')).toMatchObject({ id: 'perm-job', result: 'job', host: host.id });
    for await (const r of remote.results()) {
      expect(r.id).toBe('perm-job');
      break;
    }
    await remote.submit('nope', [], { id: 'perm-dead' });
    await expect(remote.waitFor('perm-dead')).rejects.toMatchObject({ code: C.MethodNotFound });
    for await (const d of remote.deadLetters()) {
      expect([d.job.id, d.error.code]).toEqual(['perm-dead', C.MethodNotFound]);
      break;
    }
    await remote.close();
    expect([violations.get(callerNc), violations.get(hostNc)]).toEqual([[], []]);
  });

  test('a caller cannot subscribe to the requests, the cancels, a host\'s subject or another user\'s inbox', async () => {
    const subjects = ['corepool', 'corepool.cancel', `corepool.host.${host.id}`, 'corepool.>', '_INBOX.host.>', '_INBOX.>', '>', '$SRV.PING'];
    const refused = await Promise.all(
      subjects.map(
        (subject) =>
          new Promise((resolve) => {
            attackerNc.subscribe(subject, { callback: (err) => resolve(err?.name ?? 'a message') });
          }),
      ),
    );
    expect(refused).toEqual(subjects.map(() => 'PermissionViolationError'));
    // A queue subscription among the hosts, to take their calls, is refused too.
    const queued = await new Promise((resolve) => attackerNc.subscribe('corepool', { queue: 'corepool', callback: (err) => resolve(err?.name) }));
    expect(queued).toBe('PermissionViolationError');
  });

  test('a caller cannot publish on the jobs\' and results\' internals nor forge an outcome, also through a host', async () => {
    const remote = new RemotePool(callerNc);
    await remote.submit('sleep', [300], { id: 'perm-victim' });
    const forged = JSON.stringify({ id: 'perm-victim', result: 'FORGED', method: 'sleep', host: host.id, deliveries: 1 });
    const internals = [
      `corepool.results.${key('perm-victim')}`,
      `corepool.dead.${key('perm-victim')}`,
      '$JS.API.STREAM.DELETE.corepool-jobs',
      '$JS.API.STREAM.PURGE.corepool-results',
      '$JS.API.STREAM.MSG.DELETE.corepool-results',
      '$JS.API.STREAM.UPDATE.corepool-results',
      '$JS.API.STREAM.CREATE.corepool-other',
      '$JS.API.CONSUMER.MSG.NEXT.corepool-jobs.corepool-hosts',
      '$JS.API.CONSUMER.DELETE.corepool-jobs.corepool-hosts',
      '$JS.API.CONSUMER.CREATE.corepool-jobs.thief',
      '_INBOX.host.x',
    ];
    const seen = violations.get(attackerNc);
    seen.length = 0;
    for (const subject of internals) attackerNc.publish(subject, forged);
    // Through a host, which may publish on the results: it refuses the reply subject.
    const refused = host.stats().data.repliesRefused;
    attackerNc.publish('corepool', request('echo', ['FORGED']), { reply: `corepool.results.${key('perm-victim')}` });
    // Through JetStream: a consumer of the results that would deliver into the results is refused.
    const consumer = { stream_name: 'corepool-results', config: { name: 'forger', deliver_subject: `corepool.results.${key('perm-victim')}`, filter_subject: 'corepool.results.>', ack_policy: 'none' } };
    const created = JSON.parse((await attackerNc.request('$JS.API.CONSUMER.CREATE.corepool-results.forger.corepool.results.>', JSON.stringify(consumer))).string());
    expect(created.error?.description).toMatch(/cycle/);
    // Through JetStream's answers: a question a caller may ask, with the victim's results as
    // its reply subject, has the server store its answer there; that answer is no outcome.
    attackerNc.publish('$JS.API.INFO', '', { reply: `corepool.results.${key('perm-victim')}` });
    attackerNc.publish('$JS.API.STREAM.MSG.GET.corepool-results', JSON.stringify({ seq: 1 }), { reply: `corepool.results.${key('perm-victim')}` });
    attackerNc.publish('$JS.API.INFO', '', { reply: `corepool.dead.${key('perm-victim')}` });
    await attackerNc.flush();
    await hostNc.flush(); // the host has heard what the attacker sent
    expect(seen).toEqual(internals.map((subject) => `publish ${subject}`));
    expect(await remote.waitFor('perm-victim')).toBe(300);
    expect(await remote.outcome('perm-victim')).toMatchObject({ result: 300, host: host.id });
    expect(host.stats().data.repliesRefused - refused).toBe(1);
    await remote.close();
  });

  test('a caller cannot cancel another caller\'s call, even knowing its reply subject', async () => {
    const remote = new RemotePool(callerNc);
    // The test, not the attacker, watches the requests (a caller cannot: see above), and tells
    // the attacker the victim's reply subject and the proof its request carries.
    const spied = new Promise((resolve) => {
      const sub = hostNc.subscribe('corepool', { callback: (err, m) => (sub.unsubscribe(), resolve(m)) });
    });
    await hostNc.flush();
    const ignored = host.stats().data.cancelsIgnored;
    const call = remote.call('sleep', [300]);
    const seen = await spied;
    const { id } = JSON.parse(seen.string());
    const proof = seen.headers?.get('Corepool-Cancel');
    const made = 'A'.repeat(43);
    const forged = [
      { reply: seen.reply, ids: [id] },
      { v: 1, reply: seen.reply, secret: proof, next: made, ids: [id] },
      { v: 1, reply: seen.reply, secret: made, next: made, ids: [id] },
    ];
    for (const cancel of forged) attackerNc.publish('corepool.cancel', JSON.stringify(cancel));
    await attackerNc.flush();
    await hostNc.flush(); // the host has heard the forged cancels
    expect(await call).toBe(300);
    expect(host.stats().data.cancelsIgnored - ignored).toBe(forged.length);
    await remote.close();
  });
});
