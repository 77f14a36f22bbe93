/// <reference types="node" />
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
  /** Also run durable jobs from the service's JetStream work queue (needs @nats-io/jetstream). */
  durable?: boolean | DurableOptions;
}

export interface DurableOptions {
  /** Most jobs in hand at once (default 64). */
  inFlight?: number;
  /** Ms JetStream waits for an acknowledgement before it delivers a job again (default 30000);
   *  a job running longer is kept alive with inProgress every ackWait / 3. */
  ackWait?: number;
  /** Deliveries of a job at most before its error is final and it is dead-lettered (default 5). */
  maxDeliver?: number;
  /** Ms before a job that failed with a retryable error is delivered again (default 1000). */
  retryDelay?: number;
}

/** A job's recorded outcome. */
export type JobOutcome = ({ id: string; result: unknown } | { id: string; error: { code: number; message: string; data?: unknown } }) & {
  /** null when the job's method was not a string of 1 to 256 characters (the error says so). */
  method: string | null;
  /** The id of the host that recorded it. */
  host: string;
  /** Its deliveries when it was recorded. */
  deliveries: number;
};

/** A job that failed for good, on its dead-letter subject. */
export interface DeadLetter {
  /** The job as it was sent; `params` null when they and the error would not fit in one
   *  message; the whole job null when the message held no valid job id (not JSON, not an
   *  object, an id that is not a string of 1 to 256 characters). */
  job: { id: string; method: string | null; params: Param[] | null } | null;
  error: { code: number; message: string; data?: unknown };
  deliveries: number;
  host: string;
  /** With `job` null: the message's first 256 characters. */
  excerpt?: string;
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
    /** Calls named by their callers' cancels while their message was in hand. */
    cancelled: number;
    /**
     * Cancels that cancelled nothing: late, repeated, naming no call in hand, not cancels of
     * this version, or without the secret whose proof the message carries (made up by anyone
     * but the message's sender).
     */
    cancelsIgnored: number;
    /**
     * Messages (calls, and services-protocol requests) whose reply subject was refused: the
     * service's own subject or under it, a system subject (`$…`), or not a valid subject. They
     * are neither run nor answered.
     */
    repliesRefused: number;
    concurrency: number | null;
    pool: PoolStats;
    /** With `durable`: the job worker's figures. */
    jobs: { running: number; peakRunning: number; done: number; failed: number; retried: number; dead: number; duplicates: number } | null;
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
  /** Default timeout of a call in ms, of any length (0 or Infinity: none). */
  timeout?: number;
  /** Ms without word of a call's host after which it settles with ServerGone (default 3000, at least 1000). */
  liveness?: number;
  /** Most calls in one message (default 32). */
  maxBatch?: number;
}

/**
 * A call given up on (its timeout or signal) settles at once, and its host is asked to stop it
 * (by a cancel that proves it comes from this client: nobody else can stop the call).
 */
export interface RemoteCallOptions {
  signal?: AbortSignal;
  /** Ms, of any length (0 or Infinity: none; default the RemotePool's). */
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
  /** A durable job on the JetStream work queue; resolves once stored. `id`: 1 to 256
   *  characters (default a random UUID); `method`: 1 to 256 characters. `duplicate`: this
   *  submission was dropped, since the id has a recorded outcome or was submitted within the
   *  last 2 minutes: an id runs once. Rejects with Unavailable (the job id in `data`) when
   *  JetStream does not answer: the job may be stored; submit it again with the same id. */
  submit(method: string, params?: Param[] | Param, options?: { id?: string }): Promise<{ id: string; duplicate: boolean }>;
  /** Job `id`'s result once recorded; rejects with its RpcError (Timeout/Aborted by the options;
   *  `timeout` in ms, of any length, 0 or Infinity: none; Unavailable when the connection
   *  closes or JetStream does not answer, as while the server restarts: wait again). */
  waitFor<T = unknown>(id: string, options?: { timeout?: number; signal?: AbortSignal }): Promise<T>;
  /** Job `id`'s recorded outcome, or null (Unavailable when JetStream does not answer). */
  outcome(id: string): Promise<JobOutcome | null>;
  /** Every recorded outcome, then each new one as it is recorded (break to stop). */
  results(): AsyncIterable<JobOutcome>;
  /** Every dead letter, then each new one (break to stop). */
  deadLetters(): AsyncIterable<DeadLetter>;
  drained(): Promise<void>;
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}
