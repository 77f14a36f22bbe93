'use strict';
// A real Prometheus (Debian's package) for the corepool/metrics tests: on a free loopback port,
// scraping the targets it is given every second, its storage in a temporary dir, stopped (and
// the dir removed) by stop(). Under CI (env CI set) a missing prometheus is an error; elsewhere
// the tests that need one are skipped with a note.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { findExecutable, freePort } = require('./executables.js');

/** The prometheus executable: on PATH, or where Debian's package puts it; null if none. */
function prometheusPath() {
  return findExecutable('prometheus', ['/usr/bin', '/usr/local/bin'], 'the corepool/metrics tests need it');
}

class Prometheus {
  constructor(exe, port, dir) {
    this.exe = exe;
    this.port = port;
    this.dir = dir;
    this.url = `http://127.0.0.1:${port}`;
    this.child = null;
    this.log = '';
  }

  /** Starts it scraping `targets` ('host:port' of /metrics endpoints); resolves once it is ready. */
  async start(targets) {
    const config = path.join(this.dir, 'prometheus.yml');
    fs.writeFileSync(config, `global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: corepool\n    static_configs:\n      - targets: ${JSON.stringify(targets)}\n`);
    const args = [`--config.file=${config}`, `--storage.tsdb.path=${path.join(this.dir, 'data')}`, `--web.listen-address=127.0.0.1:${this.port}`];
    this.child = spawn(this.exe, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    this.child.stderr.on('data', (d) => {
      this.log = (this.log + d).slice(-20_000);
    });
    this.exited = new Promise((resolve) => this.child.once('exit', resolve));
    for (;;) {
      if (this.child.exitCode !== null) throw new Error(`prometheus exited with ${this.child.exitCode}:\n${this.log}`);
      const ready = await fetch(`${this.url}/-/ready`).then(
        (r) => r.ok,
        () => false,
      );
      if (ready) return this;
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** The result of an instant query (`/api/v1/query`): [{ metric, value: [time, text] }]. */
  async query(promql) {
    const r = await fetch(`${this.url}/api/v1/query?query=${encodeURIComponent(promql)}`);
    const body = await r.json();
    if (body.status !== 'success') throw new Error(`query ${promql} failed: ${JSON.stringify(body)}`);
    return body.data.result;
  }

  /** The query's result once `accept(result)` holds, polling (each scrape may bring it). */
  async until(promql, accept) {
    for (;;) {
      const result = await this.query(promql);
      if (accept(result)) return result;
      if (this.child.exitCode !== null) throw new Error(`prometheus exited with ${this.child.exitCode}:\n${this.log}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  async stop() {
    if (this.child !== null && this.child.exitCode === null) {
      this.child.kill('SIGTERM');
      await this.exited;
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Starts a Prometheus scraping `targets`; resolves with it, or null when none is installed (outside CI). */
async function startPrometheus(targets) {
  const exe = prometheusPath();
  if (exe === null) return null;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'corepool-prometheus-'));
  return new Prometheus(exe, await freePort(), dir).start(targets);
}

module.exports = { startPrometheus, prometheusPath };
