'use strict';
// A corepool host in a child process, for the corepool/nats tests: argv[2] is the NATS url,
// argv[3] a JSON object of serve() options plus `label`, `threads` and `runLog`. It serves
// `whoami` (its label and pid) beside the native commands and, with `runLog` (a file path),
// `ran(key, ms)`, which waits ms and returns key. Then it appends lines "<what> <key> <label>
// <Date.now()> <pid>" to that file (synchronously, so a line survives a SIGKILL right after):
// `check` when it asks JetStream for the last message of a job's results subject (as its job
// worker does before it runs a job, to find an outcome; <key> is then the job id), `call` when
// its job worker decides to run a job of `ran` (it calls the pool), `run` when the call starts.
// It prints "ready" once
// subscribed, and stops on SIGTERM. It also exits when its stdin ends, that is when the test
// process that started it is gone: a host that outlived its test (whose connection retries
// forever) would keep jest from exiting.

const fs = require('node:fs');
const { connect } = require('@nats-io/transport-node');
const { Pool } = require('../../../index.js');
const { serve } = require('../../../lib/nats.js');

async function main() {
  const { label = 'host', threads = 2, runLog, ...options } = JSON.parse(process.argv[3] ?? '{}');
  const nc = await connect({ servers: process.argv[2], reconnectTimeWait: 100, maxReconnectAttempts: -1 });
  const pool = new Pool({ threads });
  const handlers = { whoami: () => ({ label, pid: process.pid }) };
  let served = pool;
  if (runLog !== undefined) {
    const log = (what, key) => fs.appendFileSync(runLog, `${what} ${key} ${label} ${Date.now()} ${process.pid}\n`);
    const request = nc.request.bind(nc);
    nc.request = (subject, data, opts) => {
      if (subject.includes('.STREAM.MSG.GET.')) {
        const asked = JSON.parse(Buffer.from(data).toString() || '{}').last_by_subj;
        const key = /^[^.]+\.results\.([^.]+)$/.exec(asked ?? '')?.[1];
        if (key !== undefined) log('check', Buffer.from(key, 'base64url').toString('utf8'));
      }
      return request(subject, data, opts);
    };
    handlers.ran = async (key, ms) => {
      log('run', key);
      await new Promise((r) => setTimeout(r, ms));
      return key;
    };
    served = {
      handle: (text) => pool.handle(text),
      stats: () => pool.stats(),
      call: (method, params, o) => {
        if (method === 'ran') log('call', params?.[0]);
        return pool.call(method, params, o);
      },
    };
  }
  pool.serve(handlers, { concurrency: Infinity });
  const host = await serve(served, nc, options);
  process.on('SIGTERM', async () => {
    await host.close();
    await nc.drain().catch(() => {}); // the server may be gone first
    await pool.close();
    process.exit(0);
  });
  process.stdin.on('end', () => process.exit(0)).resume();
  process.stdout.write(`ready ${host.id}\n`);
}

main().catch((e) => {
  process.stderr.write(`${e.stack}\n`);
  process.exit(1);
});
