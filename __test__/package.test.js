'use strict';
// The packed tarball must install and load with no build step: with this machine's npm, and
// with npm 12, which does not run dependencies' install scripts unless approved.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const root = path.join(__dirname, '..');
const NPM12 = 'npm@12.2.0';

function sh(cmd, args, cwd) {
  return execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 240000 });
}

let tarball;
let workdir;

beforeAll(() => {
  workdir = fs.mkdtempSync(path.join(os.tmpdir(), 'corepool-pack-'));
  const out = JSON.parse(sh('npm', ['pack', '--json', '--pack-destination', workdir], root));
  tarball = path.join(workdir, out[0].filename);
  const files = out[0].files.map((f) => f.path);
  expect(files).toContain('corepool.linux-x64-gnu.node');
  expect(files).toContain('index.js');
  expect(files).toContain('index.d.ts');
});

afterAll(() => {
  if (workdir) fs.rmSync(workdir, { recursive: true, force: true });
});

const cjs = "const { Pool } = require('corepool'); new Pool({ threads: 1 }).exec('fibonacci', 90).then((v) => console.log('cjs', v));";
const esm = "import { Pool, RpcError } from 'corepool'; const p = new Pool({ threads: 1 }); console.log('esm', await p.exec('echo', 7), typeof RpcError.codes.Timeout);";

test.each([
  ['npm', []],
  ['npx', ['-y', NPM12]],
])('the tarball installs with %s %s and loads with require and import', (cmd, prefix) => {
  const project = fs.mkdtempSync(path.join(workdir, 'app-'));
  fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true }));
  sh(cmd, [...prefix, 'install', '--no-audit', '--no-fund', tarball], project);
  expect(fs.existsSync(path.join(project, 'node_modules', 'corepool', 'corepool.linux-x64-gnu.node'))).toBe(true);
  expect(sh(process.execPath, ['-e', cjs], project).trim()).toBe('cjs 2880067194370816120');
  expect(sh(process.execPath, ['--input-type=module', '-e', esm], project).trim()).toBe('esm 7 number');
}, 300000);
