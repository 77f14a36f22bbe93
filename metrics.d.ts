/// <reference types="node" />
// Types for corepool/metrics: Prometheus collectors (the optional peer dependency prom-client)
// or OpenTelemetry instruments (on a Meter of @opentelemetry/api) for pools and NATS hosts.

import type { Pool } from './index';
import type { RemotePool, Host } from './nats';

/** A prom-client Registry, declared by the members corepool uses. */
export interface PromRegistry {
  metrics(): Promise<string>;
  removeSingleMetric(name: string): void;
}

/** An OpenTelemetry Meter (`metrics.getMeter(…)` of @opentelemetry/api), declared by the members corepool uses. */
export interface OpenTelemetryMeter {
  createCounter(name: string, options?: object): { add(value: number, attributes?: Record<string, string>): void };
  createHistogram(name: string, options?: object): { record(value: number, attributes?: Record<string, string>): void };
  createObservableGauge(name: string, options?: object): ObservableInstrument;
  createObservableCounter(name: string, options?: object): ObservableInstrument;
}

export interface ObservableInstrument {
  addCallback(callback: (result: { observe(value: number, attributes?: Record<string, string>): void }) => void): void;
  removeCallback(callback: (result: { observe(value: number, attributes?: Record<string, string>): void }) => void): void;
}

/**
 * What `watch()` takes: a Pool (its calls and stats()), a corepool/nats RemotePool (its calls)
 * or Host (what `serve()` resolves with: its stats()).
 */
export type Watchable = Pool | RemotePool | Host;

export interface Metrics {
  /** Reports `target`'s stats() under the label `name` (default 'unnamed'; 1–100 characters). */
  watch(target: Watchable, name?: string): this;
  /** Stops counting and removes every collector or callback this made. */
  close(): void;
}

export interface MetricsOptions {
  /**
   * How many distinct method names get a label value of their own (default 100); later names,
   * names longer than 100 characters and methods that are not strings count as '__other__'.
   */
  maxMethods?: number;
}

export interface PrometheusOptions extends MetricsOptions {
  /** Where the collectors register (default prom-client's default registry). */
  registry?: PromRegistry;
  /** Before every metric name (default 'corepool_'). */
  prefix?: string;
  /** Buckets of `<prefix>call_duration_seconds`, in seconds. */
  buckets?: number[];
}

/** prom-client collectors of the calls and of the watched pools and hosts. */
export declare function prometheus(options?: PrometheusOptions): Metrics;
/** OpenTelemetry instruments on `meter`, of the calls and of the watched pools and hosts. */
export declare function openTelemetry(meter: OpenTelemetryMeter, options?: MetricsOptions): Metrics;
/** The label value of methods past the cap. */
export declare const OTHER_METHOD: '__other__';
/** The method label value of request() and handle() calls. */
export declare const JSONRPC_METHOD: '__jsonrpc__';
/** The label value of pools and hosts watched without a name, and of pools not watched. */
export declare const UNNAMED: 'unnamed';
/** Longest method name (and watch() name) that is a label value of its own. */
export declare const MAX_METHOD_LENGTH: number;
