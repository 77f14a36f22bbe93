'use strict';
// OpenTelemetry's SDK set up in this thread (each thread has its own): a tracer provider whose
// spans go to the SDK's InMemorySpanExporter, and the async-hooks context manager. Task files
// and test files load it; `spanIds(name)` starts and ends a span, and says where it sits.

const api = require('@opentelemetry/api');
const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base');
const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks');

const exporter = new InMemorySpanExporter();
api.trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
const tracer = api.trace.getTracer('corepool-tests');

/** Where span `span` (the SDK's) sits: its name, kind, ids and its parent's. */
function place(span) {
  return { name: span.name, kind: span.kind, traceId: span.spanContext().traceId, spanId: span.spanContext().spanId, parentSpanId: span.parentSpanContext?.spanId ?? null };
}

/**
 * Starts and ends span `name` (a child of the active context): its ids, and its parent's; and
 * where the span active when it started (its parent, when it was made in this thread) sits.
 */
function spanIds(name) {
  const active = api.trace.getActiveSpan();
  const parent = active !== undefined && typeof active.name === 'string' ? place(active) : null;
  return tracer.startActiveSpan(name, (span) => {
    span.end();
    return { name, traceId: span.spanContext().traceId, spanId: span.spanContext().spanId, parentSpanId: span.parentSpanContext?.spanId ?? null, traceState: span.spanContext().traceState?.serialize() ?? null, parent };
  });
}

module.exports = { api, exporter, tracer, spanIds, place };
