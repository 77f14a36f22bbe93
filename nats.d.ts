// corepool/nats: corepool hosts behind NATS. Needs the optional peer dependency
// @nats-io/transport-node (and @nats-io/jetstream for durable jobs).
import type { Pool, Param, JsonRpcRequest, JsonRpcResponse, BuiltinMethods, MapOptions, MapOutcome, PoolStats } from './index';

/**
 * A connection from `connect()` of @nats-io/transport-node, declared by the members corepool
 * uses, so that these types compile whatever the project's moduleResolution.
 */
export interface NatsConnection {
  publish(subject: string, payload?: string | Uint8Array, options?: object): void;
  subscribe(subject: string, options?: object): unknown;
  request(subject: string, payload?: string | Uint8Array, options?: object): Promise<unknown>;
  flush(): Promise<void>;
  closed(): Promise<void | Error>;
}

export interface ServiceNames {
  /** The NATS service name (1–64 letters, digits, '-' or '_'); default 'corepool'. */
  name?: string;
  /** The subject of the calls; default the name. */
  subject?: string;
}

export interface HostOptions extends ServiceNames {
  /** The queue group the hosts share; default the name. */
  queue?: string;
  /** Most calls in hand at once (a batch counts each call); a busier host sends work back. Default 1024. */
  concurrency?: number;
  /** The services protocol's description of the host. */
  description?: string;
  /** The services protocol's metadata of the host. */
  metadata?: Record<string, string>;
}

export interface MethodFigures {
  calls: number;
  errors: number;
  averageMs: number;
  maxMs: number;
}

/** A host's figures, as the services protocol's endpoint stats. */
export interface HostStats {
  num_requests: number;
  num_errors: number;
  last_error: string;
  processing_time: number;
  average_processing_time: number;
  data: {
    methods: Record<string, MethodFigures>;
    messages: number;
    busy: number;
    inHand: number;
    peakInHand: number;
    concurrency: number | null;
    pool: PoolStats;
    jobs: unknown;
  };
}

export declare class Host {
  /** This host's id in the services protocol ($SRV.*.<name>.<id>). */
  readonly id: string;
  readonly name: string;
  readonly subject: string;
  stats(): HostStats;
  /** Stops taking calls, answers those in hand, leaves the services protocol. The pool stays open. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Answers JSON-RPC over NATS with `pool.handle()`; resolves once the server has its subscriptions. */
export declare function serve(pool: Pool, nc: NatsConnection, options?: HostOptions): Promise<Host>;

export interface RemotePoolOptions extends ServiceNames {
  /** Default timeout of a call in ms (0: none). */
  timeout?: number;
  /** Ms without word of a call's host after which it settles with ServerGone (default 3000, at least 1000). */
  liveness?: number;
  /** Most calls in one message (default 32). */
  maxBatch?: number;
}

export interface RemoteCallOptions {
  signal?: AbortSignal;
  timeout?: number;
}

/** As Pool#map's, `concurrency` defaulting to 1024. */
export type RemoteMapOptions<I, T> = MapOptions<I, T>;

/** Services protocol answers (ping or stats) of one host. */
export interface ServiceAnswer {
  type: string;
  name: string;
  id: string;
  version: string;
  metadata: Record<string, string>;
  [more: string]: unknown;
}

export declare class RemotePool {
  constructor(nc: NatsConnection, options?: RemotePoolOptions);
  readonly name: string;
  readonly subject: string;
  exec<M extends keyof BuiltinMethods>(method: M, ...params: Parameters<BuiltinMethods[M]>): Promise<ReturnType<BuiltinMethods[M]>>;
  exec<T = unknown>(method: string, ...params: Param[]): Promise<T>;
  call<T = unknown>(method: string, params?: Param[] | Param, options?: RemoteCallOptions): Promise<T>;
  request(request: JsonRpcRequest): Promise<JsonRpcResponse | null>;
  request(batch: JsonRpcRequest[]): Promise<JsonRpcResponse[] | null>;
  /** JSON-RPC text in, JSON-RPC text out ('' when nothing is to be answered). Never rejects. */
  handle(text: string): Promise<string>;
  map<I extends Param = Param, T = unknown>(method: string, inputs: readonly I[] | Iterable<I>, options: RemoteMapOptions<I, T> & { settle: 'all' }): Promise<MapOutcome<T>[]>;
  map<I extends Param = Param, T = unknown>(method: string, inputs: readonly I[] | Iterable<I>, options?: RemoteMapOptions<I, T>): Promise<T[]>;
  /** The hosts that answer $SRV.PING within `ms` (default 500). */
  hosts(ms?: number): Promise<ServiceAnswer[]>;
  /** $SRV.STATS of the hosts that answer within `ms` (default 500). */
  stats(ms?: number): Promise<ServiceAnswer[]>;
  drained(): Promise<void>;
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}
