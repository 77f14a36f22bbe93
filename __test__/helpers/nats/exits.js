'use strict';
// A durable host whose NATS connection closes without host.close(): the process must still
// exit by itself (nothing keeps retrying on a closed connection). argv[2]: the NATS url.
const { connect } = require('@nats-io/transport-node');
const { Pool } = require('../../../index.js');
const { serve } = require('../../../lib/nats.js');

(async () => {
  const nc = await connect({ servers: process.argv[2] });
  const pool = new Pool({ threads: 1 });
  await serve(pool, nc, { name: 'exits', durable: true });
  await nc.close();
  await pool.close();
  process.stdout.write('closed\n');
})();
