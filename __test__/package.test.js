'use strict';
// What a consumer gets: the packed tarball carries the license, docs, types and the prebuilt
// binary and nothing of the tests; installing it from a registry runs no script, prints no
// install-script warning (npm 11 warns, npm 12 blocks) and needs no build step; and where no
// binary fits, the error names the build command, which builds one from the packed sources.
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { execFile, execFileSync } = require('node:child_process');
const { loadAddon } = require('../lib/native.js');
const { platformTriple, GLIBC_BASELINE } = require('../lib/platform.js');

const root = path.join(__dirname, '..');
const NPM12 = 'npm@12.2.0';
const binary = `corepool.${platformTriple()}.node`;
// The consumer-side build shares the clone's cargo target, so only corepool itself compiles.
const cargoTarget = process.env.CARGO_TARGET_DIR || path.join(root, 'target');

/** Runs a command without blocking the event loop (the registry below answers from it). */
function run(cmd, args, cwd, env = {}) {
  return new Promise((resolve, reject) => {
    const options = { cwd, encoding: 'utf8', timeout: 240_000, env: { ...process.env, ...env } };
    execFile(cmd, args, options, (error, stdout, stderr) => {
      if (error) reject(new Error(`${cmd} ${args.join(' ')} failed (${error.code ?? error.signal}):\n${stdout}${stderr}`));
      else resolve({ stdout, stderr });
    });
  });
}

/**
 * A registry that serves one package, as the public registry serves a published one: a
 * consumer's `npm install corepool` takes the registry path through npm, where a `prepare`
 * script is a step of the author's, never run for the consumer (npm lists it as an unapproved
 * script only for tarball files and git, whose packages npm may have to prepare itself).
 */
function serveRegistry(manifest, tarballBytes) {
  const integrity = `sha512-${crypto.createHash('sha512').update(tarballBytes).digest('base64')}`;
  const shasum = crypto.createHash('sha1').update(tarballBytes).digest('hex');
  const server = http.createServer((req, res) => {
    const base = `http://127.0.0.1:${server.address().port}`;
    if (req.url === `/${manifest.name}`) {
      const version = { ...manifest, dist: { tarball: `${base}/package.tgz`, integrity, shasum } };
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ name: manifest.name, 'dist-tags': { latest: manifest.version }, versions: { [manifest.version]: version } }));
    } else if (req.url === '/package.tgz') {
      res.end(tarballBytes);
    } else {
      res.statusCode = 404;
      res.end('{}');
    }
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => resolve({ url: `http://127.0.0.1:${server.address().port}/`, close: () => server.close() }));
  });
}

let workdir;
let packed; // npm pack --json's entry: { filename, files: [{ path }] }
let manifest; // the package.json inside the tarball
let registry;

beforeAll(async () => {
  workdir = fs.mkdtempSync(path.join(os.tmpdir(), 'corepool-pack-'));
  // --ignore-scripts: pack the binary this test run built; `prepare` would rebuild it first.
  const { stdout } = await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', workdir], root);
  [packed] = JSON.parse(stdout);
  const tarball = path.join(workdir, packed.filename);
  execFileSync('tar', ['-xzf', tarball, '-C', workdir]);
  manifest = JSON.parse(fs.readFileSync(path.join(workdir, 'package', 'package.json'), 'utf8'));
  registry = await serveRegistry(manifest, fs.readFileSync(tarball));
}, 120_000);

afterAll(() => {
  registry?.close();
  if (workdir) fs.rmSync(workdir, { recursive: true, force: true });
});

/** A new project with corepool installed from the registry; returns its directory and npm's output. */
async function consumer(npm = []) {
  const project = fs.mkdtempSync(path.join(workdir, 'app-'));
  fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true }));
  const cmd = npm.length ? 'npx' : 'npm';
  const cache = path.join(project, '.npm-cache');
  const { stdout, stderr } = await run(cmd, [...npm, 'install', '--no-audit', '--no-fund', '--cache', cache, '--registry', registry.url, 'corepool'], project);
  return { project, output: stdout + stderr };
}

test('the tarball carries the license, readme, changelog, types and binary, and no tests or benchmarks', () => {
  const files = packed.files.map((f) => f.path);
  for (const wanted of ['LICENSE', 'README.md', 'CHANGELOG.md', 'index.d.ts', 'index.js', binary, 'scripts/build.js', 'Cargo.lock']) {
    expect([wanted, files.includes(wanted)]).toEqual([wanted, true]);
  }
  const testsOrBench = files.filter((f) => /^(__test__|bench|examples|\.ci)\/|(^|\/|_)tests\.rs$|-regressions\//.test(f));
  expect(testsOrBench).toEqual([]);
  expect(fs.readFileSync(path.join(workdir, 'package', 'LICENSE'), 'utf8')).toMatch(/^MIT License\n\nCopyright \(c\) \d{4} the corepool contributors\n/);
});

test('the packed package.json runs nothing at install and names the repository, keywords and build command', () => {
  for (const script of ['preinstall', 'install', 'postinstall']) expect([script, manifest.scripts?.[script]]).toEqual([script, undefined]);
  expect(manifest.license).toBe('MIT');
  expect(manifest.repository.url).toMatch(/^git\+https:\/\//);
  expect(manifest.keywords.length).toBeGreaterThan(0);
  expect(manifest.exports['./package.json']).toBe('./package.json');
  expect(manifest.bin['corepool-build']).toBe('scripts/build.js');
});

const cjs = "const { Pool } = require('corepool'); const p = new Pool({ threads: 1 }); p.exec('echo', 1).then((v) => console.log('cjs', v, require('corepool/package.json').name));";
const esm = "import { Pool, RpcError } from 'corepool'; const p = new Pool({ threads: 1 }); console.log('esm', await p.exec('fibonacci', 90), typeof RpcError.codes.Timeout);";

test.each([
  ['npm', []],
  [NPM12, ['-y', NPM12]],
])('installed from a registry with %s, corepool prints no install-script warning and loads with require and import', async (_name, npm) => {
  const { project, output } = await consumer(npm);
  expect(output).not.toMatch(/install[- ]scripts?/i);
  expect(fs.existsSync(path.join(project, 'node_modules', 'corepool', binary))).toBe(true);
  // No build ran: cargo's output directory would be there.
  expect(fs.existsSync(path.join(project, 'node_modules', 'corepool', 'target'))).toBe(false);
  expect((await run(process.execPath, ['-e', cjs], project)).stdout.trim()).toBe('cjs 1 corepool');
  expect((await run(process.execPath, ['--input-type=module', '-e', esm], project)).stdout.trim()).toBe('esm 2880067194370816120 number');
}, 300_000);

test('with no binary for its platform, corepool names the build command, and that command builds one from the packed sources', async () => {
  const { project } = await consumer();
  fs.rmSync(path.join(project, 'node_modules', 'corepool', binary));
  const failed = await run(process.execPath, ['-e', "require('corepool')"], project).then(
    () => 'loaded',
    (e) => e.message,
  );
  expect(failed).toMatch(`no native binary for ${platformTriple()}`);
  expect(failed).toMatch('npx --no corepool-build');
  await run('npx', ['--no', 'corepool-build'], project, { CARGO_TARGET_DIR: cargoTarget });
  expect((await run(process.execPath, ['-e', cjs], project)).stdout.trim()).toBe('cjs 1 corepool');
}, 600_000);

// What a TypeScript user writes; each consumer project below compiles it with tsc --strict.
const TYPED_APP = `import { Pool, RpcError, Mutex, type PoolStats } from 'corepool';
import { serve, RemotePool } from 'corepool/nats';
import { mustacheEngine } from 'corepool/express';
import { mustacheEngine as fastifyEngine } from 'corepool/fastify';

const pool = new Pool({ threads: 1 });
const echoed: Promise<unknown> = pool.exec('echo', 1);
const stats: PoolStats = pool.stats();
const closing: PromiseLike<void> = pool[Symbol.asyncDispose]();
const lock = new Mutex(new Int32Array(new SharedArrayBuffer(4)), 0);
const page: Promise<string | Buffer> = pool.render('{{a}}', { a: 1 });
export { echoed, stats, closing, lock, page, RpcError, serve, RemotePool, mustacheEngine, fastifyEngine };
`;

/** A project of `type` ('commonjs' | 'module') with the packed corepool and @types/node, as npm lays them out. */
function typedProject(type) {
  const project = path.join(workdir, `typed-${type}`);
  if (!fs.existsSync(project)) {
    fs.mkdirSync(path.join(project, 'node_modules', '@types'), { recursive: true });
    fs.symlinkSync(path.join(workdir, 'package'), path.join(project, 'node_modules', 'corepool'));
    fs.symlinkSync(path.dirname(require.resolve('@types/node/package.json')), path.join(project, 'node_modules', '@types', 'node'));
    fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'app', private: true, type }));
    fs.writeFileSync(path.join(project, 'app.ts'), TYPED_APP);
  }
  return project;
}

const TSC = { 'TypeScript 5': 'typescript', 'TypeScript 7': 'typescript7' };
const RESOLUTIONS = { 'no flags': [], node16: ['--module', 'node16'], nodenext: ['--module', 'nodenext'], bundler: ['--module', 'preserve', '--moduleResolution', 'bundler'] };
const typeCases = Object.keys(TSC).flatMap((ts) => ['commonjs', 'module'].flatMap((type) => Object.keys(RESOLUTIONS).map((r) => [ts, type, r])));

test.each(typeCases)("the packed types pass %s's tsc --strict in a %s project with %s", async (ts, type, resolution) => {
  // @types/node is the consumer's, as the .d.ts files reference it (TypeScript 7 no longer
  // includes every @types package unasked: it reported 'Cannot find name node:events' before).
  const tscPkg = require.resolve(`${TSC[ts]}/package.json`);
  const tsc = path.join(path.dirname(tscPkg), require(tscPkg).bin.tsc);
  const out = await run(process.execPath, [tsc, '--strict', '--noEmit', ...RESOLUTIONS[resolution], 'app.ts'], typedProject(type)).then(
    (r) => r.stdout + r.stderr,
    (e) => e.message,
  );
  expect(out).toBe('');
}, 120_000);

test('the package passes publint (strict) and Are the Types Wrong', async () => {
  // Their exports maps hide package.json: each is read where npm installed it.
  const bin = (pkg, name) => {
    const dir = path.join(root, 'node_modules', pkg);
    const { bin: b } = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
    return path.join(dir, typeof b === 'string' ? b : b[name]);
  };
  const lint = await run(process.execPath, [bin('publint', 'publint'), 'run', path.join(workdir, 'package'), '--pack', 'false', '--strict'], workdir);
  expect(lint.stdout).toMatch(/All good!/);
  // attw exits non-zero on any problem of any entry point, under every module resolution.
  const attw = await run(process.execPath, [bin('@arethetypeswrong/cli', 'attw'), path.join(workdir, packed.filename), '--format', 'json'], workdir);
  const report = JSON.parse(attw.stdout);
  expect(report.analysis.problems).toEqual([]);
  expect(Object.keys(report.analysis.entrypoints).sort()).toEqual(['.', './express', './fastify', './nats', './package.json']);
}, 120_000);

test('the packed linux-x64-gnu binary needs no glibc newer than the baseline', () => {
  // Built with cargo-zigbuild (scripts/release-tools.txt, installed by .ci/run); a plain cargo
  // build here needs this machine's glibc (2.34 before), and would not load on RHEL 8 or Debian 11.
  const versions = [...execFileSync('objdump', ['-T', path.join(workdir, 'package', 'corepool.linux-x64-gnu.node')], { encoding: 'utf8' }).matchAll(/\bGLIBC_(\d+)\.(\d+)/g)];
  expect(versions.length).toBeGreaterThan(0);
  const newest = versions.map((m) => [Number(m[1]), Number(m[2])]).reduce((a, b) => (b[0] > a[0] || (b[0] === a[0] && b[1] > a[1]) ? b : a));
  expect(newest.join('.')).toBe(GLIBC_BASELINE);
});

test('the loader says how to build from source on a platform with no binary', () => {
  const triple = platformTriple({ platform: 'linux', arch: 'riscv64', glibc: false });
  expect(triple).toBe('linux-riscv64-musl');
  expect(() => loadAddon(triple)).toThrow('corepool: no native binary for linux-riscv64-musl (looked for corepool.linux-riscv64-musl.node and the package corepool-linux-riscv64-musl)');
  let message;
  try {
    loadAddon(triple);
  } catch (e) {
    message = e.message;
  }
  expect(message).toMatch('\n  npx --no corepool-build\n');
  const script = message.match(/which runs: node (.+)$/)[1];
  expect(script).toBe(path.join(root, 'scripts', 'build.js'));
  expect(fs.existsSync(script)).toBe(true);
});

test('a binary that is there but does not load on this system is reported with the build command', () => {
  const dir = fs.mkdtempSync(path.join(workdir, 'broken-'));
  fs.writeFileSync(path.join(dir, 'corepool.linux-x64-gnu.node'), 'not a shared library');
  let error;
  try {
    loadAddon('linux-x64-gnu', dir);
  } catch (e) {
    error = e;
  }
  expect(error.message).toMatch(/^corepool: corepool\.linux-x64-gnu\.node does not load on this system: /);
  expect(error.message).toMatch('npx --no corepool-build');
  expect(error.cause.code).toBe('ERR_DLOPEN_FAILED');
});

test('platform triples follow the napi-rs names', () => {
  expect(platformTriple({ platform: 'linux', arch: 'x64', glibc: true })).toBe('linux-x64-gnu');
  expect(platformTriple({ platform: 'linux', arch: 'arm64', glibc: false })).toBe('linux-arm64-musl');
  expect(platformTriple({ platform: 'darwin', arch: 'arm64' })).toBe('darwin-arm64');
  expect(platformTriple({ platform: 'win32', arch: 'x64' })).toBe('win32-x64-msvc');
});

test("the README's Rust version for building from source is Cargo.toml's rust-version", () => {
  const rustVersion = fs.readFileSync(path.join(root, 'Cargo.toml'), 'utf8').match(/^rust-version = "([\d.]+)"$/m)[1];
  const install = fs.readFileSync(path.join(root, 'README.md'), 'utf8').split('\n## Install\n')[1].split('\n## ')[0];
  expect(install).toMatch(`Rust ${rustVersion} or newer`);
});
