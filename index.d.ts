/// <reference types="node" />
// Types for corepool. Kept in step with index.js by __test__/types.test.js.

import { EventEmitter } from 'node:events';

/**
 * A JSON value, plus what corepool carries beside JSON. Calls to methods served by JavaScript
 * (task files, `serve()`) also carry what structured clone carries (`ClonedParam`).
 */
export type Param =
  | null
  | boolean
  | number
  | string
  | bigint
  | Uint8Array
  | Int8Array
  | Uint16Array
  | Int16Array
  | Uint32Array
  | Int32Array
  | Float32Array
  | Float64Array
  | BigInt64Array
  | BigUint64Array
  | Param[]
  | { [key: string]: Param | undefined }
  | ClonedParam;

/** What only calls to methods served by JavaScript carry (docs/values.md); native commands refuse it. */
export type ClonedParam = undefined | Date | RegExp | Error | ArrayBuffer | DataView | Map<Param, Param> | Set<Param>;

export type Strategy = 'roundrobin' | 'random' | 'leastbusy';

export interface PoolOptions {
  /** 0 (default) → os.availableParallelism(); n < 0 → max(cores + n, 1); n > 0 → n. */
  threads?: number;
  /** How a call picks its thread. Default 'leastbusy'. */
  strategy?: Strategy;
  /**
   * Calls that may wait for a thread, not counting the running ones; the same rule for built-in
   * commands and served methods: a call is accepted if a thread of its kind is free (a native
   * thread for a command; a server below its concurrency, or a task-file worker still starting,
   * for a served method), else only while fewer than maxQueue calls wait. 'auto' = threads².
   * Default Infinity.
   */
  maxQueue?: number | 'auto';
  /** When maxQueue is reached: 'reject' (RpcError QueueFull, default) or 'wait'. */
  onFull?: 'reject' | 'wait';
  /** Default limit on a call's running time in ms, counted from when it starts; 0 = none. */
  timeout?: number;
  /**
   * Nice levels (0–19) by which the pool's threads run below the process, so the event loop
   * comes first when cores are short. Linux only (elsewhere ignored). Default 0.
   */
  niceIncrement?: number;
  /**
   * A task file (CommonJS or ES module, path or file: URL): the pool runs JavaScript workers
   * that serve its exported functions, as Piscina does. `run(task, { name })` and
   * `call(name, ...)` reach them. Without it, the options below are refused.
   */
  filename?: string | URL;
  /** Workers kept running (default: `threads`, or maxThreads when only that is given). */
  minThreads?: number;
  /** Workers at most; more start while calls wait (default: `threads`). */
  maxThreads?: number;
  /** Ms a worker above minThreads stays idle before it is retired. Default 1000. */
  idleTimeout?: number;
  /** Calls one worker runs at once (async functions overlap). Default 1. */
  concurrency?: number;
  /** Native threads beside the workers, for the built-in commands. Default 0. */
  nativeThreads?: number;
  resourceLimits?: import('node:worker_threads').ResourceLimits;
  env?: Record<string, string> | typeof import('node:worker_threads').SHARE_ENV;
  argv?: unknown[];
  execArgv?: string[];
  /** Given to the workers as `require('node:worker_threads').workerData`. */
  workerData?: unknown;
}

export interface ResolvedPoolOptions {
  readonly threads: number;
  readonly strategy: Strategy;
  readonly maxQueue: number;
  readonly onFull: 'reject' | 'wait';
  readonly timeout: number;
  readonly niceIncrement: number;
}

export interface CallOptions<P = any> {
  /** Aborting removes a queued call, or asks a running one to stop (RpcError Aborted). */
  signal?: AbortSignal;
  /**
   * Limit on this call's running time in ms (0 = none); overrides the pool's. A served method's
   * timer runs on its serving thread: a synchronous handler that blocks that thread past the
   * limit rejects with Timeout only when it returns (an abort rejects at once).
   */
  timeout?: number;
  /**
   * Hears how far the call has come: reports of a native command's Context (happycoin:
   * `HappycoinProgress`) or of a handler's `ctx.progress(value)`; in order, merged when they
   * come faster than the listener runs, never after the call settled.
   */
  onProgress?: (value: P) => void;
  /**
   * ArrayBuffers to move to a method served by JavaScript (a task file's function, a served
   * method): detached here, they arrive whole, as with `postMessage`'s transfer list; the
   * params then cross as structured clone (docs/values.md). Ignored by native commands.
   */
  transfer?: ArrayBuffer[];
}

/** What `happycoin` reports to an `onProgress` listener. */
export interface HappycoinProgress {
  /** Numbers tried so far. */
  done: number;
  /** Numbers it will try in all. */
  attempts: number;
  /** Happycoins found so far. */
  coins: number;
}

export interface RunOptions extends CallOptions {
  /** The task file's export to call; 'default' (the default) is its default export. */
  name?: string;
}

export type MapOutcome<T> = { status: 'fulfilled'; value: T } | { status: 'rejected'; reason: RpcError };

export interface MapProgressItem<I, T> {
  index: number;
  input: I;
  value?: T;
  error?: RpcError;
}

export interface MapOptions<I = unknown, T = unknown> {
  /** 'reject' (default): the first error rejects the map and stops the rest; 'all': every
   *  input settles and the result is one `{ status, value | reason }` per input. */
  settle?: 'reject' | 'all';
  /** After each input settles, from a microtask. If it throws, the map stops and rejects
   *  with what it threw. */
  onProgress?: (done: number, total: number, item: MapProgressItem<I, T>) => void;
  /** Aborting stops the inputs not yet run and rejects the map with Aborted. */
  signal?: AbortSignal;
  /** Limit in ms on each input's running time (0 = none); overrides the pool's. */
  timeout?: number;
  /** Inputs in flight at most (default 8192). */
  concurrency?: number;
}

export interface Latency {
  /** Milliseconds. */
  p50: number;
  p99: number;
  max: number;
}

export interface WorkerStats {
  id: number;
  queued: number;
  running: number;
  completed: number;
  busyMs: number;
}

/** A JavaScript thread serving methods (see `Pool#serve`). */
export interface ServerStats {
  id: number;
  /** The serving thread's `threadId` (0: the main thread). */
  thread: number;
  methods: string[];
  /** False once `close()`d: it finishes what it has but gets no new calls. */
  open: boolean;
  queued: number;
  /** Of `queued`, the calls that wait for a free handler slot (the rest its thread is about to take). */
  waiting: number;
  running: number;
  completed: number;
  busyMs: number;
}

export interface PoolStats {
  threads: number;
  strategy: Strategy;
  /** Calls waiting in thread queues. */
  queued: number;
  /** Calls held back by maxQueue with onFull: 'wait'. */
  waiting: number;
  running: number;
  completed: number;
  failed: number;
  workers: WorkerStats[];
  /** JavaScript threads serving methods, beside the native workers. */
  servers: ServerStats[];
  /** How long calls ran. */
  runTime: Latency;
  /** How long calls waited before they ran. */
  waitTime: Latency;
}

/**
 * The context object of the diagnostics_channel TracingChannels `corepool:call`,
 * `corepool:render` and `corepool:job` (start, end, asyncStart, asyncEnd, error; see
 * docs/observability.md). `code`, `ms` (and `thread`, `waitMs`, `runMs`) are set before
 * asyncStart; `result` or `error` as
 * TracingChannel#tracePromise sets them.
 */
export interface CallEventContext {
  /** exec, call, run, map, broadcast, request, handle; render; submit or run (a durable job). */
  kind: string;
  /** The method as the caller gave it (null for request and handle). */
  method: unknown;
  /** The Pool (or corepool/nats RemotePool) of the call; null for a job submitted. */
  pool: object | null;
  /** performance.now() when the call was made. */
  startTime: number;
  /** Milliseconds from the call to its settlement on the calling thread; null until then. */
  ms: number | null;
  /** 0 for a result, else the RpcError's code; null until the call settles. */
  code: number | null;
  /**
   * The thread that ran the call (a native worker's `id` in `pool.stats().workers`, a serving
   * JavaScript thread's `threadId`); set before asyncStart for a Pool's exec, call, run and
   * render that a thread ran to its end, else null (docs/observability.md says when).
   */
  thread?: number | null;
  /** Milliseconds the call waited in the pool's queue, as `thread`. */
  waitMs?: number | null;
  /** Milliseconds the call ran on its thread, as `thread`. */
  runMs?: number | null;
  /** A durable job's id (corepool:job). */
  id?: string | null;
  result?: unknown;
  error?: unknown;
}

export interface MethodInfo {
  name: string;
  params: string;
  summary: string;
}

export interface JsonRpcRequest {
  jsonrpc: '2.0';
  method: string;
  params?: Param[] | { [key: string]: Param };
  /** Absent: a notification, which gets no response. */
  id?: string | number | null;
}

export type JsonRpcResponse =
  | { jsonrpc: '2.0'; result: unknown; id: string | number | null }
  | { jsonrpc: '2.0'; error: { code: number; message: string; data?: unknown }; id: string | number | null };

export interface HappycoinOptions {
  attempts: number;
  seed?: number;
  into?: BigUint64Array;
}

export interface LifeParams {
  /** This generation: size² cells, non-zero = alive, in a Uint8Array over a SharedArrayBuffer. */
  cells: Uint8Array;
  /** Receives rows rowStart..rowEnd of the next generation (0 or 1); must not overlap `cells`. */
  next: Uint8Array;
  size: number;
  rowStart: number;
  rowEnd: number;
}

export interface HappycoinResult {
  count: number;
  /** Absent when `into` received the coins. */
  coins?: string[];
}

/** A shared-memory lock as the `locked_add` command takes it: the words of the lock of that kind at `index`. */
export interface LockedAddLock {
  kind: 'mutex' | 'semaphore' | 'owned' | 'reentrant' | 'fair';
  array: Int32Array;
  index?: number;
}

export interface LockedAddParams {
  /** 1 to 16 locks, taken as lockAll takes them. */
  locks: LockedAddLock[];
  /** Three Int32s from `counterIndex`: total, inside now, most inside at once. */
  counter: Int32Array;
  counterIndex?: number;
  times: number;
  /** Holds of each reentrant mutex per entry (1 to 64). */
  depth?: number;
}

/** Partial templates by name, for `render` (null renders nothing, like a missing name). */
export type MustachePartials = { [name: string]: string | null };

/** A function in a Mustache view: called with the innermost view as `this`; one that returns a
 *  function in a section makes a lambda, called with the section's raw text and `render`. */
export type MustacheFunction = (this: any, ...args: any[]) => unknown;

/** A view for `pool.render`: what `Mustache.render` takes. JSON-like data that may hold
 *  functions, and objects read as mustache.js reads them (Dates, class instances with their
 *  prototype getters and methods, Maps, symbols; see docs/rendering.md). */
export type MustacheView = Param | MustacheFunction | symbol | MustacheView[] | { [key: string]: MustacheView | undefined } | object;

/** mustache.js's 4th argument, plus `output`. */
export interface MustacheConfig {
  /** The delimiters the template and partials start with, e.g. `['<%', '%>']`. */
  tags?: [string, string] | null;
  /** 'html' (default); false or 'none': no escaping; a function: `escape(value)`, as mustache.js calls it. */
  escape?: 'html' | 'none' | false | null | ((value: any) => unknown);
  /** 'string' (default) or 'buffer': the UTF-8 bytes, as a Buffer. */
  output?: 'string' | 'buffer' | null;
  /** 'view' (default): `data` is the view; 'json': `data` is the view's JSON text, parsed on the pool thread. */
  data?: 'view' | 'json' | null;
  /** The template's name (a file path, say): a parse error names it with the line and column. */
  name?: string | null;
}

/** The `data` of a template's parse error (CommandFailed): where it is. */
export interface TemplateErrorData {
  /** config.name, or null. */
  template: string | null;
  /** The partial whose text did not parse, or null for the template itself. */
  partial: string | null;
  /** 1-based. */
  line: number;
  /** 1-based, in characters (code points). */
  column: number;
  /** From the start of the text, in UTF-16 code units (mustache.js's positions). */
  offset: number;
}

/** render's config where no function can go (exec, call, map, JSON-RPC): escape is a choice, not a function. */
export type NativeMustacheConfig = Omit<MustacheConfig, 'escape'> & { escape?: 'html' | 'none' | false | null };

/** The built-in commands and their results. */
export interface BuiltinMethods {
  echo<T>(value: T): T;
  sleep(ms: number): number;
  square_sum(max: number): number;
  fibonacci(n: number): string;
  happycoin(options: HappycoinOptions): HappycoinResult;
  /** Through exec/call the view holds no functions and `escape` is not a function;
   *  pool.render lifts both. `output: 'buffer'` gives a Buffer. */
  render(template: string, data?: Param, partials?: MustachePartials | null, config?: NativeMustacheConfig | [string, string]): string | Buffer;
  /** One Game of Life step for rows rowStart..rowEnd; resolves with the number of rows done. */
  life(params: LifeParams): number;
  /** Adds 1 to a shared counter `times` times under shared-memory locks, from a native thread; resolves with `times`. */
  locked_add(params: LockedAddParams): number;
  panic(message?: string): never;
}

export declare class Pool extends EventEmitter {
  constructor(options?: PoolOptions);
  /** The process-wide pool: every worker_thread that calls it shares the same native threads.
   *  Options apply to the first call in the process; later calls may omit them. */
  static shared(options?: PoolOptions): Pool;
  readonly options: ResolvedPoolOptions;
  readonly threads: number;
  /** The render command as it is (see BuiltinMethods.render); pool.render is the full one. */
  exec(method: 'render', template: string, data: Param | undefined, partials: MustachePartials | null | undefined, config: NativeMustacheConfig & { output: 'buffer' }): Promise<Buffer>;
  exec(method: 'render', template: string, data?: Param, partials?: MustachePartials | null, config?: (NativeMustacheConfig & { output?: 'string' | null }) | [string, string]): Promise<string>;
  exec<M extends Exclude<keyof BuiltinMethods, 'render'>>(method: M, ...params: Parameters<BuiltinMethods[M]>): Promise<ReturnType<BuiltinMethods[M]>>;
  /** Any other method (served or a task file's); a built-in's name takes the typed form above. */
  exec<T = unknown, M extends string = string>(method: M & (string extends M ? unknown : M extends keyof BuiltinMethods ? never : unknown), ...params: Param[]): Promise<T>;
  call<T = unknown, P = any>(method: string, params?: Param[] | Param, options?: CallOptions<P>): Promise<T>;
  /** Piscina's run: the task file's function `name` (default 'default') with `task`. */
  run<T = unknown>(task: Param, options?: RunOptions): Promise<T>;
  /** `method` once per input, results in input order; native commands run in chunks. */
  map<I extends Param = Param, T = unknown>(method: string, inputs: readonly I[] | Iterable<I>, options: MapOptions<I, T> & { settle: 'all' }): Promise<MapOutcome<T>[]>;
  map<I extends Param = Param, T = unknown>(method: string, inputs: readonly I[] | Iterable<I>, options?: MapOptions<I, T>): Promise<T[]>;
  /** Resolves when a task-file pool's first workers have loaded it (rejects if it fails to load,
   *  or with PoolClosed if the pool stops first); keeps the process alive while pending. */
  ready(): Promise<void>;
  /** Mustache on a native thread, output identical to mustache.js 4.2.0; functions in the view
   *  (and an escape function) run on this thread. `output: 'buffer'` resolves with a Buffer. */
  render(template: string, json: string, partials: MustachePartials | null | undefined, config: MustacheConfig & { data: 'json'; output: 'buffer' }): Promise<Buffer>;
  /** With `data: 'json'`, the view's JSON text, parsed on the pool thread (InvalidParams if it is not JSON). */
  render(template: string, json: string, partials: MustachePartials | null | undefined, config: MustacheConfig & { data: 'json' }): Promise<string>;
  render(template: string, data: MustacheView | undefined, partials: MustachePartials | null | undefined, config: MustacheConfig & { output: 'buffer'; data?: 'view' | null }): Promise<Buffer>;
  render(template: string, data?: MustacheView, partials?: MustachePartials | null, config?: (MustacheConfig & { data?: 'view' | null }) | [string, string]): Promise<string>;
  request(request: JsonRpcRequest): Promise<JsonRpcResponse | undefined>;
  request(batch: JsonRpcRequest[]): Promise<JsonRpcResponse[] | undefined>;
  /** JSON-RPC text in, JSON-RPC text out ('' when nothing is to be answered). Never rejects. */
  handle(text: string): Promise<string>;
  /** Runs the method once on every thread; results in thread order. */
  broadcast(method: string, ...params: Param[]): Promise<unknown[]>;
  methods(): MethodInfo[];
  stats(): PoolStats;
  /**
   * Serves the methods of `handlers` from this thread (main or worker_thread): calls to them from
   * any thread are scheduled among the threads serving them by the pool's strategy. Each handler
   * gets the call's params, then a `ServeContext`. Throws a TypeError for a native command's name,
   * a non-function or no handlers. Use `Pool.shared()` to serve across worker_threads.
   */
  serve(handlers: Record<string, ServeHandler>, options?: ServeOptions): Server;
  /** Resolves when no call made through this handle is queued or running. */
  drained(): Promise<void>;
  /** Finishes every accepted call; later calls reject with PoolClosed. */
  close(): Promise<void>;
  /** Rejects queued calls with PoolClosed and stops running ones cooperatively. */
  destroy(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
  on(event: 'drain', listener: () => void): this;
  once(event: 'drain', listener: () => void): this;
  /** A task-file pool gave up loading its file (a load failed while no worker served): the
   *  InternalError its waiting calls and ready() got; its `data` is `{ file, line, column }`
   *  (the place in the user's code), or `{ file }` when there is none to tell.
   *  Emitted only while listened to. */
  on(event: 'error', listener: (error: RpcError) => void): this;
  once(event: 'error', listener: (error: RpcError) => void): this;
}

/** The last argument of every handler call. */
export interface ServeContext {
  /**
   * Aborts when the caller's AbortSignal fires, the call's timeout passes or the pool is
   * destroyed. Nothing stops a handler: it runs to its end, and a synchronous one that blocks
   * its thread also holds back that thread's timeout timer (the call times out when it returns).
   */
  readonly signal: AbortSignal;
  /** Sends plain data to a caller listening with `onProgress`; nothing when nobody listens or
   *  after the call settled. A function or a SharedArrayBuffer view in it is a TypeError. */
  progress(value: Param): void;
}

/** A handler: the call's params, then a `ServeContext`; returns (or resolves to) the result. */
export type ServeHandler = (...args: any[]) => unknown;

export interface ServeOptions {
  /** Most calls running at once on this server; the others wait in its queue (default 1). */
  concurrency?: number;
}

/** What `Pool#serve` returns. */
export interface Server {
  readonly id: number;
  readonly methods: readonly string[];
  readonly concurrency: number;
  /** Stops taking new calls; resolves once the calls it already has are finished. */
  close(): Promise<void>;
  /** Keeps this thread alive while it serves (the default). */
  ref(): this;
  /** Lets this thread exit while it serves when nothing else keeps it alive. */
  unref(): this;
  [Symbol.asyncDispose](): Promise<void>;
}

export interface RpcErrorCodes {
  readonly ParseError: -32700;
  readonly InvalidRequest: -32600;
  readonly MethodNotFound: -32601;
  readonly InvalidParams: -32602;
  readonly InternalError: -32603;
  readonly CommandFailed: -32000;
  readonly QueueFull: -32001;
  readonly PoolClosed: -32002;
  readonly Aborted: -32003;
  readonly Timeout: -32004;
  /** The JavaScript thread serving the call exited while it ran. */
  readonly ServerGone: -32005;
  /** No host takes the call (`corepool/nats`: nobody serves the subject, or NATS is unreachable). */
  readonly Unavailable: -32006;
}

export declare class RpcError extends Error {
  constructor(code: number, message: string, data?: unknown);
  static readonly codes: RpcErrorCodes;
  readonly name: 'RpcError';
  /** The JSON-RPC error code. */
  readonly code: number;
  /** The code's name, e.g. 'MethodNotFound'. */
  readonly type: keyof RpcErrorCodes | 'Unknown';
  readonly data?: unknown;
  toJSON(): { code: number; message: string; data?: unknown };
}

/** cores · (1 + waitMs / computeMs), rounded, at least 1. */
export declare function poolSize(options?: { cores?: number; waitMs?: number; computeMs?: number }): number;

/** Options of the blocking locks. */
export interface SpinOptions {
  /** Polls of a taken lock before a blocking lock()/acquire() sleeps (0 to 1,000,000; default 64). */
  spin?: number;
}

/** What every mutex has: blocking methods use Atomics.wait (for worker_threads); the *Async ones
 *  never block the event loop. */
export interface BasicLock {
  tryLock(): boolean;
  /** false when the lock stayed taken for `timeoutMs` (default: wait as long as it takes). */
  lock(timeoutMs?: number): boolean;
  lockAsync(timeoutMs?: number): Promise<boolean>;
  /** Throws an Error (code ERR_LOCK_NOT_LOCKED) if it is not locked. */
  unlock(): void;
  /** Runs synchronous `fn` under the lock; RpcError Timeout if the lock stayed taken. */
  withLock<T>(fn: () => NotAPromise<T>, timeoutMs?: number): T;
  withLockAsync<T>(fn: () => T | Promise<T>, timeoutMs?: number): Promise<T>;
  readonly locked: boolean;
}

/** What a synchronous `fn` under a lock may return: not a promise. An `fn` that returns one would
 *  run its rest unlocked, so withLock and lockAll refuse it (InvalidParams, after giving the locks
 *  back): use withLockAsync / lockAllAsync. */
export type NotAPromise<T> = T extends PromiseLike<unknown> ? never : T;

/** The book's mutex on one Int32 word of a SharedArrayBuffer: 0 unlocked, 1 locked. */
export interface Mutex extends BasicLock {}
export declare class Mutex {
  /** Throws RpcError InvalidParams unless `int32Array` is over a SharedArrayBuffer and `index` in range. */
  constructor(int32Array: Int32Array, index?: number, options?: SpinOptions);
}

/** A counting semaphore on one Int32 word holding the free permits. */
export declare class Semaphore {
  /** `permits` sets the count: pass it once, where the semaphore is set up. */
  constructor(int32Array: Int32Array, index?: number, permits?: number, options?: SpinOptions);
  tryAcquire(): boolean;
  acquire(timeoutMs?: number): boolean;
  acquireAsync(timeoutMs?: number): Promise<boolean>;
  /** Throws an Error (code ERR_LOCK_COUNT_OVERFLOW) past 2^31 − 1 permits. */
  release(): void;
  readonly available: number;
}

/** The `code` of an Error that a lock throws when it is misused. */
export type LockErrorCode = 'ERR_LOCK_NOT_LOCKED' | 'ERR_LOCK_NOT_OWNER' | 'ERR_LOCK_ALREADY_HELD' | 'ERR_LOCK_COUNT_OVERFLOW';

/** What the owner-checked locks have in common: the holder's agent id is in shared memory.
 *  unlock() throws (code ERR_LOCK_NOT_OWNER or ERR_LOCK_NOT_LOCKED) unless the calling agent
 *  holds it; withLockAsync runs `fn` as an agent of its own (unless inside one already). */
export interface OwnerCheckedLock extends BasicLock {
  /** The holder's agent id, or null. */
  readonly owner: number | null;
  /** The calling agent holds it. */
  readonly heldByMe: boolean;
}

/** A mutex that records its holder; not the book's 0/1 protocol. The holder asking again gets ERR_LOCK_ALREADY_HELD. */
export interface OwnedMutex extends OwnerCheckedLock {}
export declare class OwnedMutex {
  constructor(int32Array: Int32Array, index?: number, options?: SpinOptions);
}

/** Owner and hold count on two Int32 words: the holder may lock again; free when the count is back to 0. */
export interface ReentrantMutex extends OwnerCheckedLock {}
export declare class ReentrantMutex {
  constructor(int32Array: Int32Array, index?: number, options?: SpinOptions);
  /** Holds of the holder (0 when free). */
  readonly count: number;
}

/** A ticket lock on FairMutex.WORDS Int32 words: waiters are served in the order they arrived.
 *  tryLock() succeeds only when nobody holds or waits; lock() returns false if it gave its ticket
 *  up at `timeoutMs`, however many gave up before it. A waiter with a timeout draws a ticket only
 *  while fewer than 512 are out, and waits for room (in no set order) past that. */
export interface FairMutex extends OwnerCheckedLock {}
export declare class FairMutex {
  /** Int32 elements a FairMutex needs from its index. */
  static readonly WORDS: number;
  constructor(int32Array: Int32Array, index?: number, options?: SpinOptions);
  /** Agents holding a ticket in the queue (a snapshot). */
  readonly waiting: number;
}

/** Anything lockAll takes (a Semaphore gives one permit). */
export type Lockable = Mutex | Semaphore | OwnedMutex | ReentrantMutex | FairMutex;

/** Takes every lock in one process-wide order (their memory addresses), runs synchronous `fn`,
 *  gives them back in reverse order however it ends. RpcError Timeout after `timeoutMs`. */
export declare function lockAll<T>(locks: Lockable[], fn: () => NotAPromise<T>, timeoutMs?: number): T;
/** lockAll without blocking: awaits `fn`, run as an agent of its own. */
export declare function lockAllAsync<T>(locks: Lockable[], fn: () => T | Promise<T>, timeoutMs?: number): Promise<T>;

/** The book's SharedRingBuffer layout (lock, head, tail, length, data at byte 16). */
export declare class RingBuffer {
  constructor(sharedOrCapacity: SharedArrayBuffer | number);
  /** Post it to another thread and wrap it there with `new RingBuffer(buffer)`. */
  readonly buffer: SharedArrayBuffer;
  readonly capacity: number;
  readonly length: number;
  /** Writes what fits; 0 when full. Waits only for the lock (RpcError Timeout after `timeoutMs`). */
  write(data: Uint8Array, timeoutMs?: number): number;
  /** Up to `n` bytes; empty when empty. Waits only for the lock, as `write`. */
  read(n: number, timeoutMs?: number): Uint8Array;
  readInto(target: Uint8Array, timeoutMs?: number): number;
  writeAsync(data: Uint8Array, timeoutMs?: number): Promise<number>;
  readAsync(n: number, timeoutMs?: number): Promise<Uint8Array>;
  readIntoAsync(target: Uint8Array, timeoutMs?: number): Promise<number>;
  /** Waits for room; returns the bytes written (fewer only on timeout). */
  writeAll(data: Uint8Array, timeoutMs?: number): number;
  /** Waits for data; returns n bytes (fewer only on timeout). */
  readExactly(n: number, timeoutMs?: number): Uint8Array;
  writeAllAsync(data: Uint8Array, timeoutMs?: number): Promise<number>;
  readExactlyAsync(n: number, timeoutMs?: number): Promise<Uint8Array>;
}

/** A FIFO lock for async code within one JavaScript thread. */
export declare class AsyncLock {
  /** Resolves in call order with a release function (call it once). */
  acquire(): Promise<() => void>;
  runExclusive<T>(fn: () => T | Promise<T>): Promise<T>;
  readonly locked: boolean;
}
