'use strict';
// A Moleculer node with the NATS transporter serving `bench.echo`, for bench/nats.js: argv[2] is
// the NATS url. Prints "ready" once its service is started; stops on SIGTERM.
const { ServiceBroker } = require('moleculer');

async function main() {
  const broker = new ServiceBroker({ nodeID: `host-${process.pid}`, transporter: process.argv[2], logger: false });
  broker.createService({ name: 'bench', actions: { echo: (ctx) => ctx.params.v } });
  await broker.start();
  process.on('SIGTERM', async () => {
    await broker.stop();
    process.exit(0);
  });
  process.stdout.write('ready\n');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
