// Types for corepool. Kept in step with index.js by __test__/types.test.js.

import { EventEmitter } from 'node:events';

/** A JSON value, plus what corepool carries beside JSON. */
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
  | { [key: string]: Param | undefined };

export type Strategy = 'roundrobin' | 'random' | 'leastbusy';

export interface PoolOptions {
  /** 0 (default) → os.availableParallelism(); n < 0 → max(cores + n, 1); n > 0 → n. */
  threads?: number;
  /** How a call picks its thread. Default 'leastbusy'. */
  strategy?: Strategy;
  /** Calls that may wait for a thread; 'auto' = threads². Default Infinity. */
  maxQueue?: number | 'auto';
  /** When maxQueue is reached: 'reject' (RpcError QueueFull, default) or 'wait'. */
  onFull?: 'reject' | 'wait';
  /** Default limit on a call's running time in ms, counted from when it starts; 0 = none. */
  timeout?: number;
}

export interface ResolvedPoolOptions {
  readonly threads: number;
  readonly strategy: Strategy;
  readonly maxQueue: number;
  readonly onFull: 'reject' | 'wait';
  readonly timeout: number;
}

export interface CallOptions {
  /** Aborting removes a queued call, or asks a running one to stop (RpcError Aborted). */
  signal?: AbortSignal;
  /** Limit on this call's running time in ms (0 = none); overrides the pool's. */
  timeout?: number;
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
  /** How long calls ran. */
  runTime: Latency;
  /** How long calls waited before they ran. */
  waitTime: Latency;
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

export interface HappycoinResult {
  count: number;
  /** Absent when `into` received the coins. */
  coins?: string[];
}

/** The built-in commands and their results. */
export interface BuiltinMethods {
  echo<T>(value: T): T;
  sleep(ms: number): number;
  square_sum(max: number): number;
  fibonacci(n: number): string;
  happycoin(options: HappycoinOptions): HappycoinResult;
  panic(message?: string): never;
}

export declare class Pool extends EventEmitter {
  constructor(options?: PoolOptions);
  /** The process-wide pool: every worker_thread that calls it shares the same native threads.
   *  Options apply to the first call in the process; later calls may omit them. */
  static shared(options?: PoolOptions): Pool;
  readonly options: ResolvedPoolOptions;
  readonly threads: number;
  exec<M extends keyof BuiltinMethods>(method: M, ...params: Parameters<BuiltinMethods[M]>): Promise<ReturnType<BuiltinMethods[M]>>;
  exec(method: string, ...params: Param[]): Promise<unknown>;
  call(method: string, params?: Param[] | Param, options?: CallOptions): Promise<unknown>;
  request(request: JsonRpcRequest): Promise<JsonRpcResponse | undefined>;
  request(batch: JsonRpcRequest[]): Promise<JsonRpcResponse[] | undefined>;
  /** JSON-RPC text in, JSON-RPC text out ('' when nothing is to be answered). Never rejects. */
  handle(text: string): Promise<string>;
  /** Runs the method once on every thread; results in thread order. */
  broadcast(method: string, ...params: Param[]): Promise<unknown[]>;
  methods(): MethodInfo[];
  stats(): PoolStats;
  /** Resolves when no call made through this handle is queued or running. */
  drained(): Promise<void>;
  /** Finishes every accepted call; later calls reject with PoolClosed. */
  close(): Promise<void>;
  /** Rejects queued calls with PoolClosed and stops running ones cooperatively. */
  destroy(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
  on(event: 'drain', listener: () => void): this;
  once(event: 'drain', listener: () => void): this;
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
