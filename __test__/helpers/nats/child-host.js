'use strict';
// Hosts in child processes for the corepool/nats tests (host.js serves in each). Every host
// started is remembered until it exits, so that a test file's afterAll can kill whatever a
// failed test left running.

const path = require('node:path');
const { spawn } = require('node:child_process');

/** Host processes still running. */
const children = new Set();

/**
 * Starts host.js serving on the NATS server at `url` with `options`; resolves `{ child, id }`
 * once it prints "ready <id>" (its host id). Its stdin is a pipe, which host.js watches: the
 * host exits when the test process does, even killed.
 */
function childHost(url, options) {
  const child = spawn(process.execPath, [path.join(__dirname, 'host.js'), url, JSON.stringify(options)], { stdio: ['pipe', 'pipe', 'inherit'] });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const ready = /ready (\S+)\n/.exec(out);
      if (ready) resolve({ child, id: ready[1] });
    });
    child.once('exit', (code) => reject(new Error(`host exited with ${code} before it was ready`)));
  });
}

/** Kills every host still running (for afterAll, whatever became of the tests). */
function killChildHosts() {
  for (const child of children) child.kill('SIGKILL');
}

module.exports = { childHost, killChildHosts };
