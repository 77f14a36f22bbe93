'use strict';
// A corepool host in a child process, for the corepool/nats tests: argv[2] is the NATS url,
// argv[3] a JSON object of serve() options plus `label`. It serves `whoami` (its label and pid)
// beside the native commands, prints "ready" once subscribed, and stops on SIGTERM. It also
// exits when its stdin ends, that is when the test process that started it is gone: a host
// that outlived its test (whose connection retries forever) would keep jest from exiting.

const { connect } = require('@nats-io/transport-node');
const { Pool } = require('../../index.js');
const { serve } = require('../../nats.js');

async function main() {
  const { label = 'host', threads = 2, ...options } = JSON.parse(process.argv[3] ?? '{}');
  const nc = await connect({ servers: process.argv[2], reconnectTimeWait: 100, maxReconnectAttempts: -1 });
  const pool = new Pool({ threads });
  pool.serve({ whoami: () => ({ label, pid: process.pid }) }, { concurrency: Infinity });
  const host = await serve(pool, nc, options);
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
