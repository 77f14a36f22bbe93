'use strict';
// Where the real servers the tests start (nats-server, prometheus) are, and free loopback ports
// for them. Under CI (env CI set) a missing server is an error; elsewhere the tests that need
// one are skipped with a note.

const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');

/**
 * The executable `name`: on PATH, or in `dirs` (where Debian's package puts it); null if none.
 * `why`: which tests need it, for the error under CI.
 */
function findExecutable(name, dirs, why) {
  for (const dir of [...(process.env.PATH ?? '').split(path.delimiter), ...dirs]) {
    const file = path.join(dir, name);
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return file;
    } catch {
      // not here
    }
  }
  if (process.env.CI) throw new Error(`${name} is not installed (apt-get install ${name}): ${why}`);
  return null;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

module.exports = { findExecutable, freePort };
