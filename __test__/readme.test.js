'use strict';
// Every ```js / ```javascript block of README.md runs, as a reader would run it: each block in a
// Node process of its own, from a directory where `corepool` is this package (and the package's
// own dependencies, such as mustache, resolve too). It must exit with status 0 on its own, in
// time: a throw, an unhandled rejection or a pool left open that keeps the process alive fails.
//
// A block runs as an ES module if it has an `import` or `export` statement, else as CommonJS,
// as Node runs a .mjs or a .cjs file: so a top-level `await` beside `require()` is the
// SyntaxError a reader would get. Blocks run in README order, in one directory.
//
// By default a block runs as written. A block that is not a program by itself says so in an
// HTML comment on the line just above its fence (invisible on the rendered page; CONTRIBUTING.md
// lists them):
//   <!-- readme-test: file NAME -->   the block is the file NAME that later blocks use
//                                     (a task file): written there, not run.
//   <!-- readme-test: given CODE -->  the block is a fragment that needs CODE (for example
//                                     `const pool = new Pool()`); it runs with CODE before it.
//   <!-- readme-test: nats-server -->   the block needs a NATS server: a real one is started on a
//                                     free loopback port, its URL in the NATS_URL variable.
// Any other `readme-test:` comment fails the test, so that a misspelt one is not ignored.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFile } = require('node:child_process');
const { startNats } = require('./helpers/nats/server.js');

const ROOT = path.join(__dirname, '..');
const README = path.join(ROOT, 'README.md');
/** A block that takes longer than this fails: it hangs, or it is too slow for a README. */
const BLOCK_MS = 30_000;

jest.setTimeout(BLOCK_MS + 10_000);

/**
 * The README's js/javascript blocks: `{ line, code, file, given, errors }`, `line` being the
 * line of the opening fence (1-based), `code` without the fence's indent.
 */
function readmeBlocks(text) {
  const lines = text.split('\n');
  const blocks = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*(\S*)/.exec(lines[i]);
    if (!open) continue;
    const [, indent, fence, lang] = open;
    let end = i + 1;
    while (end < lines.length && !(lines[end].trim().startsWith(fence) && lines[end].trim().replace(/[`~]/g, '') === '')) end++;
    if (['js', 'javascript'].includes(lang.toLowerCase())) {
      const code = lines
        .slice(i + 1, end)
        .map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l.trimStart()))
        .join('\n');
      blocks.push({ line: i + 1, code, ...directives(lines, i) });
    }
    i = end;
  }
  return blocks;
}

/** The `readme-test:` comments on the lines just above the fence at line index `i`. */
function directives(lines, i) {
  const found = { file: undefined, given: [], nats: false, errors: [] };
  for (let j = i - 1; j >= 0; j--) {
    const comment = /^\s*<!--\s*readme-test:\s*(\S+)\s*([\s\S]*?)\s*-->\s*$/.exec(lines[j]);
    if (!comment) break;
    const [, name, argument] = comment;
    if (name === 'file' && /^[\w.-]+$/.test(argument)) found.file = argument;
    else if (name === 'given' && argument !== '') found.given.unshift(argument);
    else if (name === 'nats-server' && argument === '') found.nats = true;
    else found.errors.push(`line ${j + 1}: unknown readme-test comment '${lines[j].trim()}' (expected 'file NAME', 'given CODE' or 'nats-server')`);
  }
  return found;
}

/** Whether `code` is an ES module: an import or export statement at the start of a line. */
function isModule(code) {
  return /^\s*(import\s*[\w{*'"]|export\s)/m.test(code);
}

/** A directory whose node_modules holds this package as `corepool` and its dependencies. */
function makeHome() {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'corepool-readme-'));
  const modules = path.join(home, 'node_modules');
  fs.mkdirSync(modules);
  fs.symlinkSync(ROOT, path.join(modules, 'corepool'), 'dir');
  for (const name of fs.readdirSync(path.join(ROOT, 'node_modules'))) {
    if (name === 'corepool' || name.startsWith('.')) continue;
    fs.symlinkSync(path.join(ROOT, 'node_modules', name), path.join(modules, name), 'dir');
  }
  return home;
}

/** Runs `file` in `home`: resolves with its output, rejects with it if it fails or hangs. */
function run(home, file, env = {}) {
  return new Promise((resolve, reject) => {
    const options = { cwd: home, timeout: BLOCK_MS, killSignal: 'SIGKILL', env: { ...process.env, ...env } };
    execFile(process.execPath, [file], options, (error, stdout, stderr) => {
      if (error) {
        const why = error.killed ? `still running after ${BLOCK_MS} ms` : `exit ${error.code ?? error.signal}`;
        reject(new Error(`${file}: ${why}\n--- stdout\n${stdout}\n--- stderr\n${stderr}`));
      } else resolve({ stdout, stderr });
    });
  });
}

const blocks = readmeBlocks(fs.readFileSync(README, 'utf8'));
let home;

beforeAll(() => {
  home = makeHome();
});

afterAll(() => {
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

test("the README's nats-server config is examples/nats-permissions.conf, the file the permissions tests run", () => {
  const text = fs.readFileSync(README, 'utf8');
  const configs = [...text.matchAll(/^```conf\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
  expect(configs).toEqual([fs.readFileSync(path.join(ROOT, 'examples', 'nats-permissions.conf'), 'utf8')]);
});

test('the README\'s map of the code ("How it works") names every file of lib/ and every part of src/', () => {
  // Checked against the tree, so that the map cannot drift from it (issue #29).
  const text = fs.readFileSync(README, 'utf8');
  const map = text.split('\n## How it works\n')[1].split('```')[1];
  const named = (name) => map.includes(name);
  const missing = [];
  const walk = (dir, rel = '') => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const r = rel + e.name;
      if (e.isDirectory()) {
        if (!named(`${r}/`)) missing.push(`lib/${r}/`);
      } else if (e.name.endsWith('.js') && !rel && !named(e.name) && !named(`${e.name.replace(/-[a-z]+\.js$/, '-*.js')}`)) missing.push(`lib/${r}`);
    }
  };
  walk(path.join(ROOT, 'lib'));
  const src = path.join(ROOT, 'src');
  for (const e of fs.readdirSync(src, { withFileTypes: true })) if (e.isDirectory() && !named(`${e.name}/`)) missing.push(`src/${e.name}/`);
  for (const e of fs.readdirSync(path.join(src, 'bindings'), { withFileTypes: true })) {
    const name = e.isDirectory() ? `${e.name}/` : e.name;
    if (!named(name)) missing.push(`src/bindings/${name}`);
  }
  expect(missing).toEqual([]);
});

test('the README has code blocks to run', () => {
  expect(blocks.length).toBeGreaterThan(0);
});

describe.each(blocks.map((b) => [b.line, b]))('README.md block at line %i', (line, block) => {
  test(block.file === undefined ? 'runs and exits 0' : `is the file ${block.file}`, async () => {
    expect(block.errors).toEqual([]);
    const code = [...block.given, block.code].join('\n');
    if (block.file !== undefined) {
      fs.writeFileSync(path.join(home, block.file), code);
      return;
    }
    const file = `block-${line}.${isModule(code) ? 'mjs' : 'cjs'}`;
    fs.writeFileSync(path.join(home, file), code);
    if (!block.nats) {
      await run(home, file);
      return;
    }
    const server = await startNats(); // under CI, a missing nats-server throws: a failure
    if (server === null) {
      console.warn(`nats-server is not installed: README block at line ${line} is not run`);
      return;
    }
    try {
      await run(home, file, { NATS_URL: server.url });
    } finally {
      await server.stop();
    }
  });
});

// The test's own reading of the README, on a README made up for it.
describe('reading the blocks', () => {
  const sample = [
    'text',
    '```js',
    "const a = require('corepool');",
    '```',
    '- item',
    '  <!-- readme-test: given const x = 1; -->',
    '  ```javascript',
    '  x + 1;',
    '  ```',
    '<!-- readme-test: file task.js -->',
    '```js',
    'exports.f = () => 1;',
    '```',
    '```ts',
    'const t: number = 1;',
    '```',
    '<!-- readme-test: skip -->',
    '````js',
    '```',
    '````',
  ].join('\n');
  const found = readmeBlocks(sample);

  test('finds js and javascript blocks, indented ones too, and no others', () => {
    expect(found.map((b) => [b.line, b.code])).toEqual([
      [2, "const a = require('corepool');"],
      [7, 'x + 1;'],
      [11, 'exports.f = () => 1;'],
      [18, '```'],
    ]);
  });

  test('reads the comments above a block, and refuses one it does not know', () => {
    expect(found[1].given).toEqual(['const x = 1;']);
    expect(found[2].file).toBe('task.js');
    expect(found[0]).toMatchObject({ file: undefined, given: [], errors: [] });
    expect(found[3].errors).toEqual([expect.stringContaining("unknown readme-test comment '<!-- readme-test: skip -->'")]);
    const [nats, natsWithArgument] = readmeBlocks('<!-- readme-test: nats-server -->\n```js\n1;\n```\n<!-- readme-test: nats-server 4222 -->\n```js\n2;\n```');
    expect(nats).toMatchObject({ nats: true, errors: [] });
    expect(natsWithArgument.errors).toEqual([expect.stringContaining('unknown readme-test comment')]);
    expect(found[0].nats).toBe(false);
  });

  test('runs a block with an import as a module, anything else as CommonJS', () => {
    expect(isModule("import { Pool } from 'corepool';")).toBe(true);
    expect(isModule("// text\nexport const a = 1;")).toBe(true);
    expect(isModule("const { Pool } = require('corepool');\n// import later")).toBe(false);
    expect(isModule("const m = await import('corepool');")).toBe(false);
  });
});
