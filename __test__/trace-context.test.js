'use strict';
// W3C trace context that crosses with a call: from a span active in the caller to the worker
// thread that serves it, and over NATS (calls and durable jobs) to a host and on to its
// threads. Spans are recorded by OpenTelemetry's own SDK (InMemorySpanExporter) in each thread;
// a span made where the call runs must be a child of the caller's span, in the same trace.
const path = require('node:path');
const fc = require('fast-check');
const { Worker } = require('node:worker_threads');
const { api, exporter, tracer, spanIds, place } = require('./helpers/otel.js');
const { Pool } = require('..');
const { withTraceContext, activeTraceContext } = require('../lib/trace-context.js');
const { child } = require('./helpers/child.js');
const { startNats, natsServerPath } = require('./helpers/nats/server.js');

const TASKS = path.join(__dirname, 'fixtures', 'tasks', 'traced.js');

/** Runs `fn(span)` inside a new active span `name`; resolves with fn's value and the span's ids. */
function inSpan(name, fn, options) {
  return tracer.startActiveSpan(name, options ?? {}, async (span) => {
    try {
      const value = await fn(span);
      return { value, caller: { traceId: span.spanContext().traceId, spanId: span.spanContext().spanId } };
    } finally {
      span.end();
    }
  });
}

const KINDS = { [api.SpanKind.INTERNAL]: 'INTERNAL', [api.SpanKind.SERVER]: 'SERVER', [api.SpanKind.CLIENT]: 'CLIENT' };

/**
 * The spans between `span` (spanIds', made where a call ran) and `caller`, nearest first, as
 * `KIND name`: found among the spans this thread ended (the SDK's exporter) and the span that
 * was active where `span` was made (spanIds' `parent`). Throws at a parent it cannot find.
 */
function between(span, caller) {
  const known = new Map(exporter.getFinishedSpans().map((s) => [s.spanContext().spanId, place(s)]));
  if (span.parent !== null && span.parent !== undefined) known.set(span.parent.spanId, span.parent);
  const path = [];
  for (let id = span.parentSpanId; id !== caller.spanId; ) {
    const s = known.get(id);
    if (s === undefined) throw new Error(`span ${id}, an ancestor of ${span.name}, is not known here (${path.join(' < ')})`);
    expect(s.traceId).toBe(caller.traceId);
    path.push(`${KINDS[s.kind]} ${s.name}`);
    id = s.parentSpanId;
  }
  return path;
}

/** `span` is in the caller's trace, a descendant of its span through `path` (between's). */
function expectUnder(span, caller, path) {
  expect(span.traceId).toBe(caller.traceId);
  expect(span.spanId).not.toBe(caller.spanId);
  expect(between(span, caller)).toEqual(path);
}

/** A call of `method` served on a thread: its CLIENT span here, its SERVER span there. */
const onThread = (method) => [`SERVER corepool ${method}`, `CLIENT corepool ${method}`];

describe('to the thread that serves a call', () => {
  let tasks;
  beforeAll(() => {
    tasks = new Pool({ filename: TASKS, minThreads: 2, maxThreads: 2 });
  });
  afterAll(() => tasks.close());

  test("a task-file worker's span is under the caller's span, through the call's CLIENT and SERVER spans (exec, call, run)", async () => {
    for (const [method, make] of [
      ['traced', (p) => p.exec('traced', 'exec')],
      ['tracedLater', (p) => p.call('tracedLater', ['call'])],
      ['traced', (p) => p.run('run', { name: 'traced' })],
    ]) {
      const { value, caller } = await inSpan('caller', () => make(tasks));
      expectUnder(value, caller, onThread(method));
      expect(value.threadId).not.toBe(0);
    }
  });

  test('JSON-RPC calls carry it too: request() and handle(), each request of a batch', async () => {
    const { value, caller } = await inSpan('caller', async () => {
      const one = await tasks.request({ jsonrpc: '2.0', method: 'traced', params: ['request'], id: 1 });
      const batch = JSON.parse(
        await tasks.handle(
          JSON.stringify([
            { jsonrpc: '2.0', method: 'traced', params: ['a'], id: 'a' },
            { jsonrpc: '2.0', method: 'tracedLater', params: ['b'], id: 'b' },
          ]),
        ),
      );
      return [one.result, ...batch.map((r) => r.result)];
    });
    expect(value).toHaveLength(3);
    // One CLIENT span per request() or handle() (a batch is one call); a SERVER span per request.
    expect(value.map((span) => between(span, caller))).toEqual([
      ['SERVER corepool traced', 'CLIENT corepool request'],
      ['SERVER corepool traced', 'CLIENT corepool handle'],
      ['SERVER corepool tracedLater', 'CLIENT corepool handle'],
    ]);
    expect(value[1].parent.parentSpanId).toBe(value[2].parent.parentSpanId);
  });

  test("a call's CLIENT span: RPC attributes, a failed call's status and code; none without an active span", async () => {
    exporter.reset();
    await tasks.exec('traced', 'outside');
    await tasks.exec('nope').catch(() => {});
    expect(exporter.getFinishedSpans().filter((s) => s.name.startsWith('corepool'))).toEqual([]);
    const { caller } = await inSpan('caller', async () => {
      await tasks.exec('nope').catch(() => {});
      await tasks.exec('traced', 'ok');
    });
    const mine = exporter.getFinishedSpans().filter((s) => s.parentSpanContext?.spanId === caller.spanId);
    expect(mine.map((s) => [s.name, s.kind, s.attributes, s.status.code])).toEqual([
      ['corepool nope', api.SpanKind.CLIENT, { 'rpc.system': 'corepool', 'rpc.method': 'nope', 'rpc.jsonrpc.error_code': -32601 }, api.SpanStatusCode.ERROR],
      ['corepool traced', api.SpanKind.CLIENT, { 'rpc.system': 'corepool', 'rpc.method': 'traced' }, api.SpanStatusCode.UNSET],
    ]);
  });

  test("pool.map of a served method: every item's call carries the map's one CLIENT span", async () => {
    const { value, caller } = await inSpan('caller', () => tasks.map('tracedLater', ['a', 'b', 'c']));
    expect(value).toHaveLength(3);
    for (const span of value) expectUnder(span, caller, onThread('tracedLater'));
    expect(new Set(value.map((span) => span.parent.parentSpanId)).size).toBe(1);
    expect(new Set(value.map((span) => span.parent.spanId)).size).toBe(3);
  });

  test('without an active span the task starts a trace of its own', async () => {
    const a = await tasks.exec('traced', 'alone');
    expect(a.parentSpanId).toBeNull();
    const { caller } = await inSpan('other', async () => {});
    expect(a.traceId).not.toBe(caller.traceId);
  });

  test('concurrent calls in different spans each reach their own parent', async () => {
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => inSpan(`caller ${i}`, () => tasks.exec(i % 2 ? 'tracedLater' : 'traced', i))));
    results.forEach(({ value, caller }, i) => expectUnder(value, caller, onThread(i % 2 ? 'tracedLater' : 'traced')));
  });

  test('tracestate crosses with traceparent', async () => {
    const state = api.createTraceState('vendor=abc,other=x-1');
    const parent = api.trace.setSpanContext(api.context.active(), { traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), traceFlags: 1, isRemote: true, traceState: state });
    const value = await api.context.with(parent, () => tasks.exec('traced', 'state'));
    expect(value).toMatchObject({ traceId: 'a'.repeat(32), traceState: 'vendor=abc,other=x-1' });
    expectUnder(value, { traceId: 'a'.repeat(32), spanId: 'b'.repeat(16) }, onThread('traced'));
  });

  test('a method served by another worker_thread of Pool.shared() runs inside the caller context', async () => {
    const shared = Pool.shared();
    const worker = new Worker(
      `
      const { parentPort } = require('node:worker_threads');
      const { Pool } = require(${JSON.stringify(path.join(__dirname, '..'))});
      const { spanIds } = require(${JSON.stringify(path.join(__dirname, 'helpers', 'otel.js'))});
      const server = Pool.shared().serve({ tracedShared: (label) => spanIds('served ' + label) });
      parentPort.once('message', () => server.close().then(() => parentPort.postMessage('closed')));
      parentPort.postMessage('serving');
      `,
      { eval: true },
    );
    await new Promise((resolve) => worker.once('message', resolve));
    try {
      const { value, caller } = await inSpan('caller', () => shared.exec('tracedShared', 'x'));
      expectUnder(value, caller, onThread('tracedShared'));
    } finally {
      worker.postMessage('close');
      await new Promise((resolve) => worker.once('message', resolve));
      await worker.terminate();
    }
  });
});

test("a SERVER span ends with its handler's outcome, whatever the handler returns; the caller gets what it got before", async () => {
  // Served from this thread, so that both spans are in this thread's exporter.
  const pool = new Pool();
  const thenGetterThrows = {
    get then() {
      throw new Error('then getter');
    },
  };
  let thenReads = 0;
  const counted = {
    get then() {
      thenReads++;
      return undefined;
    },
    value: 1,
  };
  const long = 'm'.repeat(101);
  const server = pool.serve({
    ok: () => 'fine',
    object: () => counted,
    throws: () => {
      throw new Error('thrown');
    },
    rejects: async () => {
      throw new Error('rejected');
    },
    badThen: () => thenGetterThrows,
    [long]: () => 'long',
  });
  const outcome = (p) =>
    p.then(
      (v) => ['ok', v],
      (e) => ['error', e.message],
    );
  try {
    const methods = ['ok', 'object', 'throws', 'rejects', 'badThen', long];
    const untraced = [];
    for (const m of methods) untraced.push(await outcome(pool.exec(m)));
    const readsUntraced = thenReads;
    exporter.reset();
    const { value: traced, caller } = await inSpan('caller', async () => {
      const got = [];
      for (const m of methods) got.push(await outcome(pool.exec(m)));
      return got;
    });
    expect(traced).toEqual(untraced);
    // The SERVER span reads a result's `then` once to know whether to wait for it.
    expect(thenReads - readsUntraced).toBe(readsUntraced + 1);
    const spans = exporter.getFinishedSpans();
    const clients = spans.filter((s) => s.parentSpanContext?.spanId === caller.spanId);
    const servers = clients.map((c) => spans.find((s) => s.parentSpanContext?.spanId === c.spanContext().spanId));
    expect(servers.map((s) => [s.name, s.kind, s.status.code])).toEqual([
      ['corepool ok', api.SpanKind.SERVER, api.SpanStatusCode.UNSET],
      ['corepool object', api.SpanKind.SERVER, api.SpanStatusCode.UNSET],
      ['corepool throws', api.SpanKind.SERVER, api.SpanStatusCode.ERROR],
      ['corepool rejects', api.SpanKind.SERVER, api.SpanStatusCode.ERROR],
      ['corepool badThen', api.SpanKind.SERVER, api.SpanStatusCode.ERROR],
      ['corepool (other)', api.SpanKind.SERVER, api.SpanStatusCode.UNSET],
    ]);
    expect(clients.map((c) => c.attributes['rpc.method'])).toEqual(['ok', 'object', 'throws', 'rejects', 'badThen', '(other)']);
    for (const s of servers) expect(s.attributes).toEqual({ 'rpc.system': 'corepool', 'rpc.method': s.name.slice('corepool '.length) });
  } finally {
    await server.close();
    await pool.close();
  }
});

describe('restoring a trace context that came from elsewhere', () => {
  const valid = `00-${'1'.repeat(32)}-${'2'.repeat(16)}-01`;

  test('a valid traceparent becomes the remote parent, with its flags and state', () => {
    const seen = withTraceContext(valid, 'k=v', () => api.trace.getSpanContext(api.context.active()));
    expect(seen).toMatchObject({ traceId: '1'.repeat(32), spanId: '2'.repeat(16), traceFlags: 1, isRemote: true });
    expect(seen.traceState.get('k')).toBe('v');
  });

  test.each([
    ['all-zero trace id', `00-${'0'.repeat(32)}-${'2'.repeat(16)}-01`],
    ['all-zero span id', `00-${'1'.repeat(32)}-${'0'.repeat(16)}-01`],
    ['version ff', `ff-${'1'.repeat(32)}-${'2'.repeat(16)}-01`],
    ['version 00 with more fields', `${valid}-extra`],
    ['upper-case hex', `00-${'A'.repeat(32)}-${'2'.repeat(16)}-01`],
    ['short trace id', `00-${'1'.repeat(31)}-${'2'.repeat(16)}-01`],
    ['too long', `${valid}${' '.repeat(600)}`],
    ['not a string', 42],
    ['empty', ''],
  ])('%s is ignored: the function runs in the context it had', (why, value) => {
    const before = api.trace.getSpanContext(api.context.active());
    const seen = withTraceContext(value, undefined, () => api.trace.getSpanContext(api.context.active()));
    expect(seen).toEqual(before);
  });

  test('a later version may add fields (W3C: read the first four)', () => {
    const seen = withTraceContext(`01-${'1'.repeat(32)}-${'2'.repeat(16)}-01-more`, undefined, () => api.trace.getSpanContext(api.context.active()));
    expect(seen).toMatchObject({ traceId: '1'.repeat(32), spanId: '2'.repeat(16) });
  });

  test('any header values: the function runs once, and the context is the parsed one or unchanged', () => {
    const seed = Number(process.env.COREPOOL_PROPERTY_SEED ?? Date.now() % 2 ** 31);
    console.log(`trace-context property seed: ${seed}`);
    const hex = (n) => fc.stringMatching(new RegExp(`^[0-9a-f]{${n}}$`));
    const header = fc.oneof(fc.string({ maxLength: 80 }), fc.tuple(fc.constantFrom('00', '01', 'ff', 'zz'), hex(32), hex(16), hex(2), fc.string({ maxLength: 5 })).map(([v, t, s, f, rest]) => `${v}-${t}-${s}-${f}${rest}`));
    fc.assert(
      fc.property(header, fc.oneof(fc.constant(undefined), fc.string({ maxLength: 300 })), (traceparent, tracestate) => {
        let runs = 0;
        const seen = withTraceContext(traceparent, tracestate, () => {
          runs++;
          return api.trace.getSpanContext(api.context.active());
        });
        expect(runs).toBe(1);
        if (seen !== undefined) {
          expect(api.isSpanContextValid(seen)).toBe(true);
          expect(traceparent.slice(3, 35)).toBe(seen.traceId);
          expect(traceparent.slice(36, 52)).toBe(seen.spanId);
        }
      }),
      { seed, numRuns: Number(process.env.COREPOOL_PROPERTY_RUNS ?? 300) },
    );
  });

  test('activeTraceContext gives back what withTraceContext restored', () => {
    const carried = withTraceContext(valid, 'a=1', () => activeTraceContext());
    expect(carried).toEqual({ traceparent: valid, tracestate: 'a=1' });
    expect(activeTraceContext()).toBeNull();
  });
});

test('without OpenTelemetry set up, @opentelemetry/api is never loaded and calls carry nothing', async () => {
  const { status, result, stderr } = await child(`
    const path = require('node:path');
    const tasks = new Pool({ filename: ${JSON.stringify(path.join(__dirname, 'fixtures', 'tasks', 'basic.js'))}, minThreads: 1, maxThreads: 1 });
    const value = await tasks.run({ a: 1, b: 2 }, { name: 'add' });
    const native = await new Pool({ threads: 1 }).exec('echo', 'x');
    require('./lib/metrics.js');
    require('./lib/nats.js');
    await tasks.close();
    const loaded = Object.keys(require.cache).filter((f) => f.includes('@opentelemetry') || f.includes('prom-client'));
    out({ value, native, loaded });
  `);
  expect(stderr).toBe('');
  expect(status).toBe(0);
  expect(result).toEqual({ value: 3, native: 'x', loaded: [] });
});

test('a context manager that throws costs no call: nothing is carried, and nothing is thrown', async () => {
  const { status, result, stderr } = await child(`
    const api = require('@opentelemetry/api');
    const broken = { active() { throw new Error('active'); }, with(c, fn, self, ...args) { return fn.apply(self, args); }, bind(c, t) { return t; }, enable() { return this; }, disable() { return this; } };
    api.context.setGlobalContextManager(broken);
    const pool = new Pool({ threads: 1 });
    const echoed = await pool.exec('echo', 1);
    const answered = JSON.parse(await pool.handle('{"jsonrpc":"2.0","method":"echo","params":[2],"id":1}')).result;
    await pool.close();
    out({ echoed, answered });
  `);
  expect(stderr).toBe('');
  expect(status).toBe(0);
  expect(result).toEqual({ echoed: 1, answered: 2 });
});

const maybe = natsServerPath() === null ? describe.skip : describe;
if (natsServerPath() === null) console.warn('nats-server is not installed: the trace context over NATS tests are skipped');

maybe('over NATS', () => {
  const { connect } = require('@nats-io/transport-node');
  const { serve, RemotePool } = require('../lib/nats.js');
  let server;
  let nc;
  let tasks;
  let host;
  let remote;

  beforeAll(async () => {
    server = await startNats();
    nc = await connect({ servers: server.url });
    tasks = new Pool({ filename: TASKS, minThreads: 1, maxThreads: 1 });
    host = await serve(tasks, nc, { name: 'traced', durable: true });
    remote = new RemotePool(nc, { name: 'traced' });
  });

  afterAll(async () => {
    await remote?.close();
    await host?.close();
    await nc?.close();
    await tasks?.close();
    await server?.stop();
  });

  /** A call of `method` served over NATS: the caller's CLIENT span, the host's SERVER span around
   *  the message, its pool's CLIENT span for the handle() that serves it, and the thread's SERVER span. */
  const overNats = (method) => [`SERVER corepool ${method}`, 'CLIENT corepool handle', 'SERVER corepool handle', `CLIENT corepool ${method}`];

  /** The headers of the next message on the service's subject (a plain subscriber beside the host). */
  async function nextHeaders(send) {
    const sub = nc.subscribe('traced', { max: 1 });
    await nc.flush();
    const got = (async () => {
      for await (const m of sub) return m.headers;
    })();
    await send();
    return got;
  }

  test("a remote call's task span is under the caller's span, and the message carries the call's CLIENT span", async () => {
    let headers;
    const { value, caller } = await inSpan('caller', async () => {
      let value;
      headers = await nextHeaders(async () => {
        value = await remote.exec('traced', 'remote');
      });
      return value;
    });
    expectUnder(value, caller, overNats('traced'));
    // The message carries the context of the call's CLIENT span, the caller's child.
    const client = exporter.getFinishedSpans().find((s) => s.parentSpanContext?.spanId === caller.spanId);
    expect(client).toMatchObject({ name: 'corepool traced', kind: api.SpanKind.CLIENT, attributes: { 'rpc.system': 'corepool', 'rpc.method': 'traced' } });
    expect(headers.get('traceparent')).toBe(`00-${caller.traceId}-${client.spanContext().spanId}-01`);
  });

  test("a host's SERVER span: under a message's valid traceparent; none under one that is not valid, and the call runs all the same", async () => {
    const { headers } = require('@nats-io/transport-node');
    const ask = async (traceparent) => {
      const h = headers();
      h.set('traceparent', traceparent);
      exporter.reset();
      const reply = await nc.request('traced', JSON.stringify({ jsonrpc: '2.0', method: 'traced', params: ['raw'], id: 1 }), { headers: h, timeout: 10_000 });
      const hostSpans = exporter.getFinishedSpans().map((s) => [s.name, KINDS[s.kind], s.parentSpanContext?.spanId ?? null]);
      return { result: JSON.parse(reply.string()).result, hostSpans };
    };
    const valid = await ask(`00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`);
    expect(valid.hostSpans[valid.hostSpans.length - 1]).toEqual(['corepool handle', 'SERVER', 'b'.repeat(16)]);
    expectUnder(valid.result, { traceId: 'a'.repeat(32), spanId: 'b'.repeat(16) }, overNats('traced').slice(0, 3));
    const invalid = await ask(`00-${'0'.repeat(32)}-${'b'.repeat(16)}-01`);
    expect(invalid.hostSpans).toEqual([]);
    expect(invalid.result).toMatchObject({ name: 'task raw', parentSpanId: null });
  });

  test('a remote call made outside any span sends no traceparent', async () => {
    const headers = await nextHeaders(() => remote.exec('traced', 'alone'));
    expect(headers?.get('traceparent') ?? '').toBe('');
  });

  test('calls of one tick in different spans go apart, each under its own parent', async () => {
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => inSpan(`caller ${i}`, () => remote.exec('traced', i))));
    for (const { value, caller } of results) expectUnder(value, caller, overNats('traced'));
  });

  test("a durable job's task span is a child of the span it was submitted in", async () => {
    const { value, caller } = await inSpan('submitter', () => remote.submit('traced', ['job']));
    const result = await remote.waitFor(value.id, { timeout: 20_000 });
    // Submitted without a span of corepool's own (the job's message carries the caller's context);
    // the host's pool makes the call that runs it.
    expectUnder(result, caller, onThread('traced'));
  });

  test('remote calls publish on corepool:call, durable jobs on corepool:job (submitted and run)', async () => {
    const diagnostics = require('node:diagnostics_channel');
    const events = [];
    const subscriptions = ['corepool:call', 'corepool:job'].map((name) => {
      const handlers = { asyncEnd: (c) => events.push([name, c.kind, c.method, c.code, c.pool === remote ? 'remote' : c.pool === tasks ? 'tasks' : c.pool, c.id ?? null]) };
      diagnostics.tracingChannel(name).subscribe(handlers);
      return () => diagnostics.tracingChannel(name).unsubscribe(handlers);
    });
    try {
      await remote.exec('traced', 'seen');
      await remote.call('nope', []).catch(() => {});
      await remote.request({ jsonrpc: '2.0', method: 'traced', params: ['request seen'], id: 1 });
      await remote.handle(JSON.stringify({ jsonrpc: '2.0', method: 'nope', id: 2 }));
      await remote.submit('traced', ['job seen'], { id: 'seen-job' });
      await remote.waitFor('seen-job', { timeout: 20_000 });
    } finally {
      for (const unsubscribe of subscriptions) unsubscribe();
    }
    const mine = events.filter(([, kind, , , pool]) => pool !== 'tasks' || kind === 'run');
    expect(mine).toEqual(
      expect.arrayContaining([
        ['corepool:call', 'exec', 'traced', 0, 'remote', null],
        ['corepool:call', 'call', 'nope', -32601, 'remote', null],
        // JSON-RPC calls never reject: their code is 0, their method inside the request.
        ['corepool:call', 'request', null, 0, 'remote', null],
        ['corepool:call', 'handle', null, 0, 'remote', null],
        ['corepool:job', 'submit', 'traced', 0, null, 'seen-job'],
        ['corepool:job', 'run', 'traced', 0, 'tasks', 'seen-job'],
      ]),
    );
    // request() is published once, as a request (not also as the handle() it sends).
    expect(mine.filter(([, kind, , , pool]) => pool === 'remote' && (kind === 'request' || kind === 'handle')).map(([, kind]) => kind)).toEqual(['request', 'handle']);
  });

  test('a job submitted with options whose reading throws rejects the same with a corepool:job subscriber', async () => {
    const hostile = new Proxy(
      {},
      {
        get() {
          throw new Error('getter');
        },
        ownKeys() {
          throw new Error('ownKeys');
        },
      },
    );
    const without = await remote.submit('traced', [], hostile).then(
      () => 'resolved',
      (e) => e.message,
    );
    const channel = require('node:diagnostics_channel').tracingChannel('corepool:job');
    const seen = [];
    const handlers = { error: (c) => seen.push(c.error.message) };
    channel.subscribe(handlers);
    let withSubscriber;
    try {
      withSubscriber = await remote.submit('traced', [], hostile).then(
        () => 'resolved',
        (e) => e.message,
      );
    } finally {
      channel.unsubscribe(handlers);
    }
    expect(without).not.toBe('resolved');
    expect(withSubscriber).toBe(without);
    expect(seen).toEqual([without]);
  });

  test('the host restores the context around the call: a span made there is a child too', async () => {
    const seen = [];
    const onJobs = require('node:diagnostics_channel').tracingChannel('corepool:call');
    const handlers = { start: (c) => c.kind === 'handle' && seen.push(spanIds('host side')) };
    onJobs.subscribe(handlers);
    try {
      const { caller } = await inSpan('caller', () => remote.exec('traced', 'host'));
      expect(seen).toHaveLength(1);
      expectUnder(seen[0], caller, ['SERVER corepool handle', 'CLIENT corepool traced']);
    } finally {
      onJobs.unsubscribe(handlers);
    }
  });
});
