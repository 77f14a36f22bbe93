/// <reference types="node" />
// Types for corepool/piscina: Piscina 5's API on corepool's scheduler (docs/piscina.md lists
// what differs). Mirrors piscina/dist/index.d.ts where corepool supports the same thing.

import { EventEmitter } from 'node:events';
import type { ResourceLimits, Worker } from 'node:worker_threads';

declare const kTransferable: unique symbol;
declare const kValue: unique symbol;
declare const kQueueOptions: unique symbol;

type PiscinaInstance<T, R> = Piscina<T, R>;

declare namespace Piscina {
  /** `import { Piscina } from 'corepool/piscina'` names the class's instances too. */
  type Piscina<T = any, R = any> = PiscinaInstance<T, R>;

  /** Piscina's TaskQueue interface (only its empty FIFO queues are accepted: see docs/piscina.md). */
  interface TaskQueue {
    readonly size: number;
    shift(): unknown;
    remove(task: unknown): void;
    push(task: unknown): void;
  }

  interface Options {
    filename?: string | null;
    name?: string;
    minThreads?: number;
    maxThreads?: number;
    idleTimeout?: number;
    maxQueue?: number | 'auto';
    concurrentTasksPerWorker?: number;
    /** Accepted; corepool's workers never wait on Atomics between tasks. */
    atomics?: 'sync' | 'async' | 'disabled';
    /** Piscina 3/4's name, accepted and without effect (as `atomics`). */
    useAtomics?: boolean;
    resourceLimits?: ResourceLimits;
    argv?: unknown[];
    execArgv?: string[];
    /** An object (Node's SHARE_ENV is refused). */
    env?: Record<string, string | undefined>;
    workerData?: unknown;
    /** An empty FixedQueue or ArrayTaskQueue only (corepool's queue is FIFO). */
    taskQueue?: TaskQueue;
    niceIncrement?: number;
    /** Accepted; corepool's Workers use Node's default (true). */
    trackUnmanagedFds?: boolean;
    closeTimeout?: number;
    recordTiming?: boolean;
    /** Accepted; corepool's queue is strictly first-in-first-out already. */
    stricterFIFO?: boolean;
    /** Accepted; no per-worker histograms. */
    workerHistogram?: boolean;
  }

  interface FilledOptions extends Options {
    filename: string | null;
    name: string;
    minThreads: number;
    maxThreads: number;
    idleTimeout: number;
    maxQueue: number;
    concurrentTasksPerWorker: number;
    atomics: Options['atomics'];
    taskQueue: TaskQueue;
    niceIncrement: number;
    closeTimeout: number;
    recordTiming: boolean;
    stricterFIFO: boolean;
    workerHistogram: boolean;
  }

  /** An AbortSignal, or any EventTarget / EventEmitter that emits 'abort'. */
  type AbortSignalAny = AbortSignal | { addEventListener(type: 'abort', listener: () => void, options?: object): void; removeEventListener(type: 'abort', listener: () => void): void; aborted?: boolean; reason?: unknown } | { once(event: 'abort', listener: () => void): unknown; removeListener(event: 'abort', listener: () => void): unknown };

  interface RunOptions {
    /** ArrayBuffers (or `Piscina.move()` wrappers) to move: detached here, whole in the worker (docs/values.md). */
    transferList?: unknown[];
    filename?: string | null;
    signal?: AbortSignalAny | null;
    name?: string | null;
  }

  interface CloseOptions {
    force?: boolean;
  }

  interface HistogramSummary {
    average: number;
    mean: number;
    stddev: number;
    min: number;
    max: number;
    p0_001: number;
    p0_01: number;
    p0_1: number;
    p1: number;
    p2_5: number;
    p10: number;
    p25: number;
    p50: number;
    p75: number;
    p90: number;
    p97_5: number;
    p99: number;
    p99_9: number;
    p99_99: number;
    p99_999: number;
  }

  interface PiscinaHistogram {
    readonly runTime: HistogramSummary | undefined;
    readonly waitTime: HistogramSummary | undefined;
    resetRunTime(): void;
    resetWaitTime(): void;
  }

  interface Transferable {
    readonly [kTransferable]: object;
    readonly [kValue]: object;
  }
}

declare class Piscina<T = any, R = any> extends EventEmitter {
  constructor(options?: Piscina.Options);
  run(task: T, options?: Piscina.RunOptions): Promise<R>;
  close(options?: Piscina.CloseOptions): Promise<void>;
  destroy(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
  readonly maxThreads: number;
  readonly minThreads: number;
  readonly options: Piscina.FilledOptions;
  /** The pool's live `Worker` objects. */
  readonly threads: Worker[];
  readonly idleThreads: number;
  readonly queueSize: number;
  readonly completed: number;
  readonly histogram: Piscina.PiscinaHistogram;
  readonly runTime: Piscina.HistogramSummary | undefined;
  readonly waitTime: Piscina.HistogramSummary | undefined;
  readonly utilization: number;
  readonly duration: number;
  readonly needsDrain: boolean;

  static readonly isWorkerThread: boolean;
  static readonly workerData: any;
  static readonly version: string;
  static readonly Piscina: typeof Piscina;
  static readonly default: typeof Piscina;
  static readonly FixedQueue: new () => Piscina.TaskQueue;
  static readonly ArrayTaskQueue: new () => Piscina.TaskQueue;
  static move<V>(val: V): V extends object ? Piscina.Transferable : V;
  static readonly transferableSymbol: typeof kTransferable;
  static readonly valueSymbol: typeof kValue;
  static readonly queueOptionsSymbol: typeof kQueueOptions;
}

export = Piscina;
