'use strict';
// corepool/nats durable jobs against a model (fast-check commands), on a real nats-server with
// hosts in child processes: jobs submitted, submitted again, forged (the same job published by
// hand, as after JetStream's duplicate window), another job published under an id's message id
// (squatting it), JetStream's answers to an outsider's questions published on an id's results
// and dead-letter subjects (the outsider names the reply subject), hosts killed with SIGKILL and
// started, the server restarted. After each run, with a host up again:
// - every job id has exactly one outcome (its result; ServerGone once its hosts died on it
//   maxDeliver times; InvalidRequest naming the squatter, only for a squatted id), and its
//   results subject holds exactly one outcome; messages that are no outcome only where an
//   outsider had answers published; the squatters' ids have no outcome and never ran;
// - no job is run after its outcome was stored: each time a host decides to run a job (calls
//   its pool, just after it checked for an outcome), logged in a file, is before the outcome's
//   timestamp in the stream if that host stored it; on another host, its check that found no
//   outcome is. (Two deliveries of one id checked on two hosts before either stored its
//   outcome may both run: at-least-once; their outcome is still recorded once. On one host,
//   the second waits for the first, squatted or not: nats-jobs.test.js.)
// - every call settled: each submit as the model says (duplicate when its id was submitted
//   before), each waitFor started at submit time, across kills and restarts, with the outcome.
// A few runs by default; COREPOOL_MODEL_RUNS=n for more, COREPOOL_MODEL_SEED to replay a seed
// (the seed is logged; fast-check prints the seed and path of a failing run).

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const fc = require('fast-check');
const { connect, headers } = require('@nats-io/transport-node');
const { RpcError } = require('../index.js');
const { RemotePool } = require('../lib/nats.js');
const { startNats, natsServerPath } = require('./helpers/nats/server.js');
const { childHost, killChildHosts } = require('./helpers/nats/child-host.js');

const C = RpcError.codes;
const maybe = natsServerPath() === null ? describe.skip : describe;
const RUNS = Number(process.env.COREPOOL_MODEL_RUNS ?? 3);
const SEED = Number(process.env.COREPOOL_MODEL_SEED ?? (Date.now() ^ (Math.random() * 2 ** 31)) | 0);
const IDS = ['j0', 'j1', 'j2'];
/** Ids of the jobs a squatter publishes: never submitted, so any run or outcome of them is wrong. */
const SQUATTERS = ['x0', 'x1'];
const HOSTS = 2;
const ACK_WAIT = 1000;
const MAX_DELIVER = 5;

let server;
let run = 0;

/** The time (ms, with the fraction of ns) of a stream message's RFC 3339 timestamp. */
function streamMs(timestamp) {
  const m = /^(.+T\d\d:\d\d:\d\d)(?:\.(\d+))?Z$/.exec(timestamp);
  if (m === null) throw new Error(`unexpected timestamp ${timestamp}`);
  return Date.parse(`${m[1]}Z`) + Number(`0.${m[2] ?? '0'}`) * 1000;
}

/** Job id `id`'s message id and subject token (as submit() makes it). */
function key(id) {
  return Buffer.from(id, 'utf8').toString('base64url');
}

/** Waits until JetStream answers for stream `name` (after a server restart). */
async function jetstreamReady(nc, name) {
  const { jetstreamManager } = require('@nats-io/jetstream');
  // A short timeout per try: the first requests after a restart may go unanswered.
  for (;;) {
    try {
      const jsm = await jetstreamManager(nc, { timeout: 500 });
      await jsm.streams.info(name);
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

async function startHost(real, i) {
  real.hosts[i] = await childHost(server.url, { name: real.name, label: `h${i}`, threads: 1, runLog: real.log, durable: { ackWait: ACK_WAIT, maxDeliver: MAX_DELIVER, retryDelay: 10 } });
  real.pids.set(real.hosts[i].id, String(real.hosts[i].child.pid));
}

function killHost(real, i) {
  const { child } = real.hosts[i];
  real.hosts[i] = null;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  return exited;
}

class Submit {
  constructor(id, ms) {
    this.id = id;
    this.ms = ms;
  }
  check() {
    return true;
  }
  async run(model, real) {
    const { id, duplicate } = await real.remote.submit('ran', [this.id, this.ms], { id: this.id });
    expect(id).toBe(this.id);
    // Submitted before: dropped (an outcome, or JetStream's duplicate window). Only forged: the
    // outcome may or may not be stored yet. Neither: stored.
    // Squatted: JetStream drops the submit as a duplicate of the squatter's message, or the
    // id's outcome is stored already.
    if (model.submitted.has(this.id) || model.squatted.has(this.id)) expect(duplicate).toBe(true);
    else if (!model.forged.has(this.id)) expect(duplicate).toBe(false);
    model.submitted.add(this.id);
    real.wait(this.id);
  }
  toString() {
    return `submit(${this.id}, ${this.ms} ms)`;
  }
}

class Forge {
  constructor(id, ms) {
    this.id = id;
    this.ms = ms;
  }
  check() {
    return true;
  }
  async run(model, real) {
    // The job as submit() writes it, published without its message id.
    await real.js.publish(`${real.name}.jobs`, JSON.stringify({ id: this.id, method: 'ran', params: [this.id, this.ms] }));
    model.forged.add(this.id);
    real.wait(this.id);
  }
  toString() {
    return `forge(${this.id}, ${this.ms} ms)`;
  }
}

class Squat {
  constructor(id, other, ms) {
    this.id = id;
    this.other = other;
    this.ms = ms;
  }
  check() {
    return true;
  }
  async run(model, real) {
    // Job `other`, published with the message id submit() gives job `id`: JetStream then drops
    // id's own submit as a duplicate (or drops this, when id was submitted first).
    const h = headers();
    h.set('Nats-Msg-Id', key(this.id));
    await real.js.publish(`${real.name}.jobs`, JSON.stringify({ id: this.other, method: 'ran', params: [this.other, this.ms] }), { headers: h });
    model.squatted.add(this.id);
    real.wait(this.id);
  }
  toString() {
    return `squat(${this.id} by ${this.other}, ${this.ms} ms)`;
  }
}

class ForgeAnswer {
  constructor(id, ask) {
    this.id = id;
    this.ask = ask;
  }
  check() {
    return true;
  }
  async run(model, real) {
    // An outsider asks JetStream something and names id's results and dead-letter subjects as
    // the reply: the server's answers land there, in the results stream. 'get' asks for the
    // last message of another id's results subject (an outcome, when it has one).
    const [subject, body] = this.ask === 'info' ? ['$JS.API.INFO', ''] : [`$JS.API.STREAM.MSG.GET.${real.name}-results`, JSON.stringify({ last_by_subj: `${real.name}.results.${key(IDS[0])}` })];
    for (const place of ['results', 'dead']) real.nc.publish(subject, body, { reply: `${real.name}.${place}.${key(this.id)}` });
    await real.nc.flush();
    model.answered.add(this.id);
  }
  toString() {
    return `forgeAnswer(${this.id}, ${this.ask})`;
  }
}

class KillHost {
  constructor(i) {
    this.i = i;
  }
  check(model) {
    return model.up[this.i];
  }
  async run(model, real) {
    await killHost(real, this.i);
    model.up[this.i] = false;
  }
  toString() {
    return `kill(h${this.i})`;
  }
}

class StartHost {
  constructor(i) {
    this.i = i;
  }
  check(model) {
    return !model.up[this.i];
  }
  async run(model, real) {
    await startHost(real, this.i);
    model.up[this.i] = true;
  }
  toString() {
    return `start(h${this.i})`;
  }
}

class RestartServer {
  check() {
    return true;
  }
  async run(model, real) {
    real.restarts++;
    await server.restart();
    await jetstreamReady(real.nc, `${real.name}-jobs`);
  }
  toString() {
    return 'restartServer';
  }
}

const job = fc.tuple(fc.constantFrom(...IDS), fc.integer({ min: 0, max: 40 }));
// Jobs twice as often as the rest: ids come back while their jobs run, and after.
const commands = fc.commands(
  [
    job.map(([id, ms]) => new Submit(id, ms)),
    job.map(([id, ms]) => new Submit(id, ms)),
    job.map(([id, ms]) => new Forge(id, ms)),
    job.map(([id, ms]) => new Forge(id, ms)),
    fc.tuple(fc.constantFrom(...IDS), fc.constantFrom(...SQUATTERS), fc.integer({ min: 0, max: 40 })).map(([id, other, ms]) => new Squat(id, other, ms)),
    fc.tuple(fc.constantFrom(...IDS), fc.constantFrom('info', 'get')).map(([id, ask]) => new ForgeAnswer(id, ask)),
    fc.integer({ min: 0, max: HOSTS - 1 }).map((i) => new KillHost(i)),
    fc.integer({ min: 0, max: HOSTS - 1 }).map((i) => new StartHost(i)),
    fc.constant(new RestartServer()),
  ],
  { maxCommands: 10 },
);

/** One run: a fresh service, host 0 up, the commands, then the invariants. */
async function modelRun(cmds) {
  const name = `model${++run}`;
  const nc = await connect({ servers: server.url, reconnectTimeWait: 100, maxReconnectAttempts: -1 });
  const { jetstream, jetstreamManager } = require('@nats-io/jetstream');
  const real = {
    name,
    nc,
    js: jetstream(nc),
    jsm: await jetstreamManager(nc),
    remote: new RemotePool(nc, { name }),
    hosts: new Array(HOSTS).fill(null),
    pids: new Map(), // host id → its process id, as the run log names it
    log: path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'corepool-model-')), 'runs'),
    waits: new Map(),
    restarts: 0,
    /**
     * Starts waitFor(id) once per id, caught so that it settles however it ends. Unavailable
     * (JetStream did not answer) is allowed only when the server restarted while it waited:
     * then it waits again, as a caller would.
     */
    wait(id) {
      if (this.waits.has(id)) return;
      const again = () => {
        const restarts = this.restarts;
        return this.remote.waitFor(id).then(
          (result) => ({ result }),
          (error) => (error.code === C.Unavailable && this.restarts > restarts && !this.nc.isClosed() ? again() : { error }),
        );
      };
      this.waits.set(id, again());
    },
  };
  fs.writeFileSync(real.log, '');
  const model = { submitted: new Set(), forged: new Set(), squatted: new Set(), answered: new Set(), up: new Array(HOSTS).fill(false) };
  try {
    await startHost(real, 0);
    model.up[0] = true;
    await fc.asyncModelRun(() => ({ model, real }), cmds);
    if (!model.up.includes(true)) await startHost(real, 0);
    // Every call settles, with the job's one outcome.
    const expected = new Set([...model.submitted, ...model.forged, ...model.squatted]);
    expect([...real.waits.keys()].sort()).toEqual([...expected].sort());
    for (const [id, settled] of real.waits) {
      const s = await settled;
      const outcome = await real.remote.outcome(id);
      // Its result; ServerGone once its hosts died on it maxDeliver times; InvalidRequest when
      // a squatter's message came before any job of its own.
      const code = outcome?.error?.code;
      const wanted =
        code === undefined
          ? { id, result: id }
          : code === C.InvalidRequest && model.squatted.has(id)
            ? { id, code, message: expect.stringMatching(new RegExp(`^a message on the jobs subject was published with the message id of job "${id}" but holds job "x[01]": not run$`)), deliveries: expect.any(Number) }
            : { id, code: C.ServerGone, message: expect.any(String), deliveries: MAX_DELIVER + 1 };
      expect(s.error === undefined ? { id, result: s.result } : { id, code: s.error.code, message: s.error.message, deliveries: outcome?.deliveries }).toEqual(wanted);
      expect({ id, ...(outcome?.error === undefined ? { result: outcome?.result } : { code: outcome.error.code, message: outcome.error.message, deliveries: outcome.deliveries }) }).toEqual(wanted);
    }
    for (const id of [...SQUATTERS, ...[...model.answered].filter((i) => !expected.has(i))]) expect({ id, outcome: await real.remote.outcome(id) }).toEqual({ id, outcome: null });
    // Each id's results subject holds exactly one outcome, and no other subject holds any;
    // messages that are no outcome only on the subjects of ids an outsider had answers sent to.
    const info = await real.jsm.streams.info(`${name}-results`, { subjects_filter: `${name}.results.>` });
    const held = {};
    const stored = new Map(); // id → when its outcome was stored
    const storer = new Map(); // id → the pid of the host that stored it
    for (const subject of Object.keys(info.state.subjects ?? {})) {
      const id = Buffer.from(subject.slice(`${name}.results.`.length), 'base64url').toString('utf8');
      held[id] = { outcomes: 0, others: 0 };
      for (let seq = 1; ; ) {
        const m = await real.jsm.streams.getMessage(`${name}-results`, { seq, next_by_subj: subject });
        if (m === null) break;
        const o = JSON.parse(m.string());
        const isOutcome = o !== null && typeof o === 'object' && o.id === id && 'result' in o !== 'error' in o;
        held[id][isOutcome ? 'outcomes' : 'others']++;
        if (isOutcome) stored.set(id, streamMs(m.timestamp));
        if (isOutcome) storer.set(id, real.pids.get(o.host));
        seq = m.seq + 1;
      }
    }
    const heldWanted = {};
    for (const id of new Set([...expected, ...model.answered])) {
      heldWanted[id] = { outcomes: expected.has(id) ? 1 : 0, others: model.answered.has(id) ? expect.any(Number) : 0 };
      if (!(id in held)) held[id] = { outcomes: 0, others: 0 };
    }
    expect(held).toEqual(heldWanted);
    // No run started after its job's outcome was stored.
    const lines = fs
      .readFileSync(real.log, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => line.split(' '));
    // On the host that stored it, no call after the store (a host takes one delivery of an id
    // at a time, whether it runs the id's job or stores an outcome under the id). On another
    // host, the check that found no outcome before the call came before the store
    // (at-least-once: two hosts may both find none; the outcome is still stored once).
    const late = lines.filter(([what, id, , ms, pid], at) => {
      if (what !== 'call') return false;
      if (!stored.has(id)) return true;
      if (pid === storer.get(id)) return Number(ms) > stored.get(id);
      const check = lines.slice(0, at).findLast(([w, i, , , p]) => w === 'check' && i === id && p === pid);
      return check === undefined || Number(check[3]) > stored.get(id);
    });
    // On failure: every line and the outcome of the ids concerned.
    const seen = late.map(([, id]) => ({ id, stored: stored.get(id), lines: lines.filter(([, i]) => i === id).map((l) => l.join(' ')) }));
    expect(seen.length === 0 ? [] : { late, seen }).toEqual([]);
    // Every run was decided by a host's job worker, of an id the model knows.
    expect(lines.filter(([what]) => what === 'run').length).toBeLessThanOrEqual(lines.filter(([what]) => what === 'call').length);
    expect(lines.filter(([, id]) => !expected.has(id))).toEqual([]);
  } finally {
    for (let i = 0; i < HOSTS; i++) if (real.hosts[i] !== null) await killHost(real, i);
    await real.remote.close();
    await nc.close();
    fs.rmSync(path.dirname(real.log), { recursive: true, force: true });
  }
}

maybe('corepool/nats durable jobs against a model', () => {
  beforeAll(async () => {
    server = await startNats();
  });

  afterAll(async () => {
    killChildHosts();
    await server?.stop();
  });

  test('as the server restarts, submit, outcome and waitFor settle with their answer or Unavailable, and work again after', async () => {
    const nc = await connect({ servers: server.url, reconnectTimeWait: 100, maxReconnectAttempts: -1 });
    const remote = new RemotePool(nc, { name: 'restarting' });
    expect(await remote.outcome('r0')).toBeNull(); // its streams exist
    await server.restart();
    // The first JetStream requests after a restart may go unanswered; a client made now asks
    // for its streams first.
    const late = new RemotePool(nc, { name: 'restarting' });
    const calls = [remote.submit('echo', [1], { id: 'r1' }), remote.outcome('r1'), remote.waitFor('r1', { timeout: 1000 }), late.submit('echo', [2], { id: 'r2' })];
    const settled = await Promise.all(calls.map((p) => p.then((value) => ({ value }), (error) => ({ error }))));
    for (const s of settled) {
      if ('value' in s) continue;
      expect(s.error).toBeInstanceOf(RpcError);
      expect([C.Unavailable, C.Timeout]).toContain(s.error.code);
      if (s.error.code === C.Unavailable) expect(s.error.message).toMatch(/NATS JetStream did not answer/);
    }
    if ('error' in settled[0]) expect(settled[0].error.data).toEqual({ id: 'r1' });
    // Once JetStream answers again, both clients work (a failed first call is not kept).
    await jetstreamReady(nc, 'restarting-jobs');
    expect((await remote.submit('echo', [3], { id: 'r3' })).id).toBe('r3');
    expect((await late.submit('echo', [4], { id: 'r4' })).id).toBe('r4');
    await remote.close();
    await late.close();
    await nc.close();
  }, 30000);

  test(`submit, resubmit, forge, squat, forged answers, host kill and start, server restart: one outcome per id, no run after it, every call settles (${RUNS} runs)`, async () => {
    console.log(`nats-jobs model: seed ${SEED}, ${RUNS} runs (COREPOOL_MODEL_SEED=${SEED} COREPOOL_MODEL_RUNS=${RUNS} to replay)`);
    await fc.assert(fc.asyncProperty(commands, modelRun), { numRuns: RUNS, seed: SEED, endOnFailure: true });
  }, 60000 + RUNS * 30000);
});
