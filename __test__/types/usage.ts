// Compiled by __test__/types.test.js with tsc --strict: the declarations must accept what the
// README shows and refuse what the code refuses (each @ts-expect-error must be an error).
import {
  Pool,
  RpcError,
  type MapOutcome,
  type HappycoinProgress,
  type ServeContext,
  Mutex,
  Semaphore,
  OwnedMutex,
  ReentrantMutex,
  FairMutex,
  lockAll,
  lockAllAsync,
  type LockErrorCode,
} from '../..';
import { serve, RemotePool, type NatsConnection } from '../../nats';
import { mustacheEngine as expressEngine } from '../../express';
import { mustacheEngine as fastifyEngine } from '../../fastify';
import { prometheus, openTelemetry, type OpenTelemetryMeter, type PromRegistry } from '../../metrics';

async function main(): Promise<void> {
  const pool = new Pool({ threads: 2, strategy: 'roundrobin', maxQueue: 'auto', timeout: 1000 });
  const fib: string = await pool.exec('fibonacci', 30);
  const echoed: unknown = await pool.exec('echo', { a: 1 });
  const mine = await pool.exec('myMethod', 1, 'two', [3]);
  const typed = await pool.exec<{ total: number }>('sum', [1, 2]);
  const total: number = typed.total;
  const html: string = await pool.render('{{a}}', { a: 1 });
  const lambdas: string = await pool.render('{{#b}}{{a}}{{/b}}', {
    a: 1,
    b() {
      return (text: string, render: (t: string) => string) => `<b>${render(text)}</b>`;
    },
  });
  const tagged: string = await pool.render('<%a%>', { a: 1 }, {}, ['<%', '%>']);
  // Views mustache.js takes: Dates, class instances, Maps.
  const dated: string = await pool.render('{{d}} {{m.size}} {{u.name}}', { d: new Date(0), m: new Map(), u: new URL('https://example.com') });
  const bytes: Buffer = await pool.render('{{a}}', { a: 1 }, null, { tags: ['<%', '%>'], escape: (v) => String(v), output: 'buffer' });
  // @ts-expect-error output is 'string' or 'buffer'
  await pool.render('{{a}}', {}, {}, { output: 'stream' });
  const fromJson: string = await pool.render('{{a}}', '{"a":1}', null, { data: 'json' });
  const fromJsonBytes: Buffer = await pool.render('{{a}}', '{"a":1}', undefined, { tags: ['<%', '%>'], data: 'json', output: 'buffer' });
  // @ts-expect-error with data: 'json', data is the JSON text
  await pool.render('{{a}}', { a: 1 }, null, { data: 'json' });
  // @ts-expect-error data is 'view' or 'json'
  await pool.render('{{a}}', '{}', null, { data: 'text' });
  const viaExec: string = await pool.exec('render', '<%a%>', { a: 1 }, null, ['<%', '%>']);
  const viaExecBytes: Uint8Array = await pool.exec('render', '{{a}}', '{"a":1}', undefined, { data: 'json', output: 'buffer', escape: false });
  // @ts-expect-error through exec, escape cannot be a function (only pool.render runs functions)
  await pool.exec('render', '{{a}}', { a: 1 }, null, { escape: (v: unknown) => String(v) });
  const engine = expressEngine({ pool, partials: '/views', extension: 'mustache', output: 'buffer', cache: false });
  engine('/views/page.mustache', { a: 1 }, (err, rendered) => console.log(err, rendered));
  engine.close();
  const viewEngine = fastifyEngine({ output: 'string' });
  const page: string | Buffer = await viewEngine.render('{{a}}', { a: 1 }, { p: 'x' });
  // @ts-expect-error the Express engine's output is 'string' or 'buffer'
  expressEngine({ output: 'html' });
  const called = await pool.call<string>('echo', ['x'], { timeout: 10, signal: AbortSignal.timeout(100) });
  const squares: number[] = await pool.map<number, number>('fibonacci', [1, 2, 3], {
    concurrency: 2,
    onProgress: (done, all, item) => console.log(done, all, item.index, item.input + 1, item.value, item.error?.code),
  });
  const settled: MapOutcome<number>[] = await pool.map<number, number>('fibonacci', [1, 2], { settle: 'all' });
  for (const s of settled) if (s.status === 'rejected') console.log(s.reason instanceof RpcError, s.reason.code);

  const files = new Pool({ filename: new URL('file:///tasks.js'), minThreads: 1, maxThreads: 4, idleTimeout: 500, concurrency: 2 });
  await files.ready();
  const ran = await files.run<number>({ a: 1 }, { name: 'add', timeout: 100 });
  const byDefault: unknown = await files.run({ a: 1 });
  await using disposable = new Pool({ filename: '/tasks.mjs', nativeThreads: 1, workerData: { x: 1 }, env: { A: 'b' } });

  // @ts-expect-error settle is 'reject' or 'all'
  await pool.map('fibonacci', [1], { settle: 'some' });
  // @ts-expect-error run options name the export, as a string
  await files.run(1, { name: 3 });
  // Structured-clone values and moved buffers for JavaScript methods (docs/values.md).
  const moved = new ArrayBuffer(8);
  await files.call('plan', [{ from: new Date(0), tags: new Set(['a']) }, undefined], { transfer: [moved] });
  // @ts-expect-error transfer lists ArrayBuffers
  await files.call('plan', [], { transfer: 'all' });
  // @ts-expect-error strategies are the contract's names
  new Pool({ strategy: 'fastest' });
  // @ts-expect-error a built-in command's params are typed
  await pool.exec('fibonacci', 'thirty');
  console.log(echoed, mine, fib, total, html, page, lambdas, tagged, dated, bytes.length, fromJson, fromJsonBytes.length, viaExec, viaExecBytes.length, called, squares, ran, byDefault, disposable.threads);

  const words = new Int32Array(new SharedArrayBuffer(4 * (8 + FairMutex.WORDS)));
  const mutex = new Mutex(words, 0, { spin: 0 });
  const permits = new Semaphore(words, 1, 2, { spin: 10 });
  const owned = new OwnedMutex(words, 2);
  const reentrant = new ReentrantMutex(words, 3);
  const fair = new FairMutex(words, 8);
  const sum: number = lockAll([mutex, permits, owned, reentrant, fair], () => 1 + 1, 100);
  const later: string = await lockAllAsync([fair, owned], async () => 'done');
  const holder: number | null = owned.owner;
  const depth: number = reentrant.count;
  const queued: number = fair.waiting;
  const mine2: boolean = fair.heldByMe && (await reentrant.withLockAsync(() => reentrant.heldByMe));
  const added: number = await pool.exec('locked_add', { locks: [{ kind: 'fair', array: words, index: 8 }], counter: words, times: 10 });
  try {
    owned.unlock();
  } catch (e) {
    const code = (e as { code: LockErrorCode }).code;
    console.log(code === 'ERR_LOCK_NOT_OWNER');
  }
  console.log(sum, later, holder, depth, queued, mine2, added);
  // @ts-expect-error spin is a number
  new Mutex(words, 0, { spin: 'fast' });
  // @ts-expect-error lockAll takes corepool's locks
  lockAll([{ lock() {} }], () => 1);
  const counted: number = mutex.withLock(() => 41 + 1);
  console.log(counted);
  // @ts-expect-error an fn that returns a promise would run unlocked: withLockAsync
  mutex.withLock(async () => 1);
  // @ts-expect-error the same for lockAll: lockAllAsync
  lockAll([fair], () => Promise.resolve(1));
  // @ts-expect-error locked_add kinds are the lock names
  await pool.exec('locked_add', { locks: [{ kind: 'spin', array: words }], counter: words, times: 1 });
}
void main;

async function progress(pool: Pool): Promise<void> {
  const r = await pool.call<{ count: number }, HappycoinProgress>('happycoin', [{ attempts: 1e6 }], {
    onProgress: (p) => console.log(p.done / p.attempts, p.coins),
  });
  console.log(r.count);
  pool.serve({
    steps: async (n: number, ctx: ServeContext) => {
      ctx.progress({ step: 1, of: n });
      return n;
    },
  });
  // @ts-expect-error onProgress is a function
  await pool.call('echo', [1], { onProgress: 3 });
}
void progress;

async function overNats(pool: Pool, nc: NatsConnection): Promise<void> {
  const host = await serve(pool, nc, { name: 'render', concurrency: 64 });
  const remote = new RemotePool(nc, { name: 'render', timeout: 5000 });
  const fib: string = await remote.exec('fibonacci', 30);
  const r = await remote.call<number>('sleep', [10], { signal: AbortSignal.timeout(100) });
  const all: MapOutcome<string>[] = await remote.map<number, string>('fibonacci', [1, 2], { settle: 'all' });
  const text: string = await remote.handle('{"jsonrpc":"2.0","method":"echo","params":[1],"id":1}');
  const hosts = await remote.hosts();
  console.log(fib, r, all, text, hosts[0]?.id, host.stats().data.methods, RpcError.codes.Unavailable);
  // @ts-expect-error the options of a host are named
  await serve(pool, nc, { threads: 2 });
  await host.close();
  await remote.close();
  const durable = await serve(pool, nc, { name: 'jobs', durable: { inFlight: 8, ackWait: 10000 } });
  const { id } = await remote.submit('fibonacci', [30], { id: 'fib-30' });
  const f: string = await remote.waitFor<string>(id, { timeout: 5000 });
  for await (const o of remote.results()) if ('error' in o) console.log(o.id, o.error.code, f);
  await durable.close();
  // @ts-expect-error a connection, not a url
  new RemotePool('nats://127.0.0.1:4222');
}
void overNats;

async function observed(pool: Pool, nc: NatsConnection, registry: PromRegistry, meter: OpenTelemetryMeter) {
  const host = await serve(pool, nc, { name: 'observed' });
  const metrics = prometheus({ registry, prefix: 'app_', maxMethods: 50, buckets: [0.001, 0.01] }).watch(pool, 'main').watch(host, 'nats');
  const text: string = await registry.metrics();
  metrics.close();
  openTelemetry(meter, { maxMethods: 10 }).watch(pool).close();
  // @ts-expect-error options are named
  prometheus({ registry, max: 5 });
  // @ts-expect-error a Meter, not options
  openTelemetry({ maxMethods: 1 });
  console.log(text);
}
void observed;
