'use strict';
// corepool/nats: corepool hosts behind NATS (README "Past one machine"). The NATS client packages
// (@nats-io/transport-node, and @nats-io/jetstream for durable jobs) are optional peer
// dependencies: `require('corepool')` never loads them.

const { serve, Host } = require('./nats/host.js');
const { RemotePool } = require('./nats/client.js');

module.exports = { serve, Host, RemotePool };
