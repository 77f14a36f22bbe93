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

/** Starts and ends span `name` (a child of the active context): its ids, and its parent's. */
function spanIds(name) {
  return tracer.startActiveSpan(name, (span) => {
    span.end();
    return { name, traceId: span.spanContext().traceId, spanId: span.spanContext().spanId, parentSpanId: span.parentSpanContext?.spanId ?? null, traceState: span.spanContext().traceState?.serialize() ?? null };
  });
}

module.exports = { api, exporter, tracer, spanIds };
