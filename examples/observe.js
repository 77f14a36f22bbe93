'use strict';
// Watching a pool in production: an HTTP server whose requests run work on a worker thread of
// this machine and, over NATS, on a host's worker thread; Prometheus metrics at /metrics
// (corepool/metrics), and OpenTelemetry traces that follow each request across both hops.
//
// By default it answers one request to itself, prints that request's trace tree and a few of its
// metrics, and stops. With --serve it keeps serving (GET /quote?n=…, GET /metrics) until it is
// stopped, and prints "listening on <url>" first.
//
//   node examples/observe.js [--serve [port]]
//
// Uses the NATS server at NATS_URL (default nats://127.0.0.1:4222) if one answers there;
// otherwise starts nats-server (it must be installed) on a free port, and stops it at the end.
// Needs the optional peer dependencies: npm install prom-client @opentelemetry/api
// @opentelemetry/sdk-trace-base @opentelemetry/context-async-hooks @nats-io/transport-node

const { isMainThread, threadId, BroadcastChannel } = require('node:worker_threads');
const api = require('@opentelemetry/api');
const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base');
const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks');

// Every thread sets OpenTelemetry up for itself. The worker threads (this file is also the pools'
// task file) send the spans they finish to the main thread, which prints the tree; in production
// each would export to a collector instead.
const SPANS = 'corepool-observe-spans';
const exporter = isMainThread ? new InMemorySpanExporter() : threadExporter();
api.trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
const tracer = api.trace.getTracer('observe-example');

/** An exporter that posts each span's ids, name and thread to the main thread. */
function threadExporter() {
  const channel = new BroadcastChannel(SPANS);
  channel.unref();
  return {
    export(spans, done) {
      for (const s of spans) channel.postMessage(describe(s, threadId));
      done({ code: 0 });
    },
    shutdown: () => Promise.resolve(),
  };
}

function describe(span, thread) {
  const ms = span.duration[0] * 1e3 + span.duration[1] / 1e6;
  return { name: span.name, kind: span.kind, traceId: span.spanContext().traceId, spanId: span.spanContext().spanId, parent: span.parentSpanContext?.spanId ?? null, thread, ms };
}

if (!isMainThread) {
  // The task file: a quote is computed in a span of its own, a child of the SERVER span corepool
  // makes around the call on this thread (itself a child of the call's CLIENT span in the caller).
  module.exports = {
    quote: (n) =>
      tracer.startActiveSpan(`quote on thread ${threadId}`, (span) => {
        let sum = 0;
        for (let i = 1; i <= n; i++) sum += Math.sqrt(i);
        span.setAttribute('n', n);
        span.end();
        return Math.round(sum * 100) / 100;
      }),
  };
} else {
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
}

async function main() {
  const fs = require('node:fs');
  const os = require('node:os');
  const path = require('node:path');
  const net = require('node:net');
  const http = require('node:http');
  const { spawn } = require('node:child_process');
  const client = require('prom-client');
  const { connect } = require('@nats-io/transport-node');
  const { Pool } = require('..');
  const { serve, RemotePool } = require('../lib/nats.js'); // corepool/nats
  const { prometheus } = require('../lib/metrics.js'); // corepool/metrics

  const serveArg = process.argv.indexOf('--serve');
  const serving = serveArg >= 0;
  const port = serving && process.argv[serveArg + 1] !== undefined ? Number(process.argv[serveArg + 1]) : 0;

  const reachable = (p, hostname) =>
    new Promise((resolve) => {
      const c = net.connect(p, hostname);
      c.once('connect', () => {
        c.destroy();
        resolve(true);
      });
      c.once('error', () => resolve(false));
    });
  const freePort = () =>
    new Promise((resolve) => {
      const s = net.createServer().listen(0, '127.0.0.1', () => {
        const { port: p } = s.address();
        s.close(() => resolve(p));
      });
    });

  /** The url of a running NATS server, and how to stop it if this example started it. */
  async function natsServer() {
    const url = new URL(process.env.NATS_URL ?? 'nats://127.0.0.1:4222');
    if (await reachable(Number(url.port || 4222), url.hostname)) return { url: url.href, stop: async () => {} };
    const p = await freePort();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'observe-nats-'));
    const server = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(p), '-sd', dir], { stdio: 'ignore' });
    server.once('error', (e) => {
      console.error(`no NATS server at ${url.href}, and nats-server could not be started (${e.code}): install it, or set NATS_URL`);
      process.exit(1);
    });
    while (!(await reachable(p, '127.0.0.1'))) await new Promise((r) => setTimeout(r, 20));
    return {
      url: `nats://127.0.0.1:${p}`,
      stop: async () => {
        const exited = new Promise((r) => server.once('exit', r));
        server.kill('SIGTERM');
        await exited;
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  }

  // The spans the worker threads finished, as they come.
  const fromThreads = [];
  let spanArrived = () => {};
  const spans = new BroadcastChannel(SPANS);
  spans.onmessage = ({ data }) => {
    fromThreads.push(data);
    spanArrived();
  };

  const nats = await natsServer();
  const nc = await connect({ servers: nats.url });
  // This machine's pool, and the "other machine": a host serving its own pool over NATS (in this
  // process here; `serve` runs the same way in any process that reaches the NATS server).
  const local = new Pool({ filename: __filename, minThreads: 1, maxThreads: 1 });
  const hostPool = new Pool({ filename: __filename, minThreads: 1, maxThreads: 1 });
  const host = await serve(hostPool, nc, { name: 'quotes' });
  const remote = new RemotePool(nc, { name: 'quotes', timeout: 10_000 });

  const registry = new client.Registry();
  const metrics = prometheus({ registry }).watch(local, 'local').watch(hostPool, 'host').watch(host, 'quotes').watch(remote, 'remote');

  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://localhost');
    if (url.pathname === '/metrics') {
      registry.metrics().then((text) => {
        res.setHeader('content-type', registry.contentType);
        res.end(text);
      });
      return;
    }
    if (url.pathname !== '/quote') {
      res.statusCode = 404;
      res.end();
      return;
    }
    const n = Math.min(Math.max(Number(url.searchParams.get('n')) || 1000, 1), 1e7);
    tracer.startActiveSpan('GET /quote', { kind: api.SpanKind.SERVER }, async (span) => {
      try {
        const here = await local.exec('quote', n);
        const there = await remote.exec('quote', n);
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ n, here, there, trace: span.spanContext().traceId }));
      } catch (e) {
        res.statusCode = 500;
        res.end(String(e.message));
      } finally {
        span.end();
      }
    });
  });
  await new Promise((resolve) => server.listen(port, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${server.address().port}`;

  const stop = async () => {
    server.close();
    metrics.close();
    await remote.close();
    await host.close();
    await nc.drain().catch(() => {});
    await Promise.all([local.close(), hostPool.close()]);
    spans.close();
    await nats.stop();
  };

  if (serving) {
    console.log(`listening on ${base}`);
    const quit = () => stop().then(() => process.exit(0));
    process.once('SIGTERM', quit);
    process.once('SIGINT', quit);
    return;
  }

  const answer = await (await fetch(`${base}/quote?n=200000`)).json();
  console.log(`GET /quote?n=200000 → ${JSON.stringify({ here: answer.here, there: answer.there })}`);
  // The worker threads' spans (on each, corepool's SERVER span and the quote's) come from their
  // exporters, as messages.
  while (fromThreads.filter((s) => s.traceId === answer.trace).length < 4) await new Promise((r) => (spanArrived = r));
  const all = [...exporter.getFinishedSpans().map((s) => describe(s, threadId)), ...fromThreads].filter((s) => s.traceId === answer.trace);
  console.log(`trace ${answer.trace}:`);
  printTree(all);
  const text = await (await fetch(`${base}/metrics`)).text();
  console.log('metrics:');
  for (const line of text.split('\n')) if (/^corepool_calls_total\{|^corepool_threads\{/.test(line)) console.log(`  ${line}`);
  await stop();
}

const KINDS = ['', ' (SERVER)', ' (CLIENT)', ' (PRODUCER)', ' (CONSUMER)'];

/** Prints spans as a tree, each under its parent, with its kind (but INTERNAL), thread and duration. */
function printTree(spans) {
  const ids = new Set(spans.map((s) => s.spanId));
  const children = (parent) => spans.filter((s) => (parent === null ? s.parent === null || !ids.has(s.parent) : s.parent === parent));
  const print = (span, indent) => {
    console.log(`${indent}${span.name}${KINDS[span.kind] ?? ''} [thread ${span.thread}, ${span.ms.toFixed(2)} ms] span ${span.spanId}${span.parent ? ` parent ${span.parent}` : ''}`);
    for (const c of children(span.spanId)) print(c, `${indent}  `);
  };
  for (const root of children(null)) print(root, '  ');
}
