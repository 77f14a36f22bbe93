'use strict';
// A real nats-server for the corepool/nats tests: on a free loopback port, with JetStream in a
// temporary store dir, stopped (and its dir removed) by stop(). Under CI (env CI set) a missing
// nats-server is an error; elsewhere the tests that need one are skipped with a note.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const net = require('node:net');
const { spawn } = require('node:child_process');
const { findExecutable, freePort } = require('../executables.js');

/** The nats-server executable: on PATH, or where Debian's package puts it; null if none. */
function natsServerPath() {
  return findExecutable('nats-server', ['/usr/sbin', '/usr/local/sbin'], 'the corepool/nats tests need it');
}

function canConnect(port) {
  return new Promise((resolve) => {
    const c = net.connect(port, '127.0.0.1');
    c.once('connect', () => {
      c.destroy();
      resolve(true);
    });
    c.once('error', () => resolve(false));
  });
}

class NatsServer {
  constructor(exe, port, dir, extra) {
    this.exe = exe;
    this.port = port;
    this.dir = dir;
    this.extra = extra;
    this.url = `nats://127.0.0.1:${port}`;
    this.child = null;
  }

  async start() {
    this.child = spawn(this.exe, ['-a', '127.0.0.1', '-p', String(this.port), '-js', '-sd', this.dir, ...this.extra], { stdio: 'ignore' });
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    const deadline = Date.now() + 10000;
    while (!(await canConnect(this.port))) {
      if (this.child.exitCode !== null || Date.now() > deadline) throw new Error(`nats-server did not start on port ${this.port}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    this.exited = exited;
    return this;
  }

  /** Stops the server (SIGTERM; it flushes JetStream), and waits for it to exit. */
  async halt() {
    if (this.child === null || this.child.exitCode !== null) return;
    this.child.kill('SIGTERM');
    await this.exited;
    this.child = null;
  }

  async restart() {
    await this.halt();
    await this.start();
  }

  async stop() {
    await this.halt();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Starts a nats-server; resolves with it, or null when none is installed (outside CI). */
async function startNats(extra = []) {
  const exe = natsServerPath();
  if (exe === null) return null;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'corepool-nats-'));
  return new NatsServer(exe, await freePort(), dir, extra).start();
}

module.exports = { startNats, natsServerPath, freePort };
