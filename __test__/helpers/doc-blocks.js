'use strict';
// The one place that reads the documentation's code blocks and runs them, for README.md
// (readme.test.js) and every guide under docs/ (docs.test.js).
//
// Every ```js / ```javascript block of a document runs, as a reader would run it: each block in
// a Node process of its own, from a directory where `corepool` is this package (and the
// package's own dependencies, such as mustache, resolve too). It must exit with status 0 on its
// own, in time: a throw, an unhandled rejection or a pool left open that keeps the process alive
// fails.
//
// A block runs as an ES module if it has an `import` or `export` statement, else as CommonJS,
// as Node runs a .mjs or a .cjs file: so a top-level `await` beside `require()` is the
// SyntaxError a reader would get. A document's blocks run in its order, in one directory of its
// own.
//
// By default a block runs as written. A block that is not a program by itself says so in an
// HTML comment on the line just above its fence (invisible on the rendered page; CONTRIBUTING.md
// lists them):
//   <!-- readme-test: file NAME -->   the block is the file NAME that later blocks of the same
//                                     document use (a task file): written there, not run.
//   <!-- readme-test: given CODE -->  the block is a fragment that needs CODE (for example
//                                     `const pool = new Pool()`); it runs with CODE before it.
//   <!-- readme-test: nats-server -->   the block needs a NATS server: a real one is started on a
//                                     free loopback port, its URL in the NATS_URL variable.
// Any other `readme-test:` comment fails the test, so that a misspelt one is not ignored.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFile } = require('node:child_process');
const { startNats } = require('./nats/server.js');

const ROOT = path.join(__dirname, '..', '..');
/** A block that takes longer than this fails: it hangs, or it is too slow for a document. */
const BLOCK_MS = 30_000;

/**
 * The js/javascript blocks of a Markdown text: `{ line, code, file, given, nats, errors }`,
 * `line` being the line of the opening fence (1-based), `code` without the fence's indent.
 */
function codeBlocks(text) {
  return fencedBlocks(text)
    .filter((b) => ['js', 'javascript'].includes(b.lang.toLowerCase()))
    .map(({ line, code, lines, index }) => ({ line, code, ...directives(lines, index) }));
}

/** Every fenced block of a Markdown text: `{ line, lang, code, lines, index }`. */
function fencedBlocks(text) {
  const lines = text.split('\n');
  const blocks = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*(\S*)/.exec(lines[i]);
    if (!open) continue;
    const [, indent, fence, lang] = open;
    let end = i + 1;
    while (end < lines.length && !(lines[end].trim().startsWith(fence) && lines[end].trim().replace(/[`~]/g, '') === '')) end++;
    const code = lines
      .slice(i + 1, end)
      .map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l.trimStart()))
      .join('\n');
    blocks.push({ line: i + 1, lang, code, lines, index: i });
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
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'corepool-doc-'));
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

/**
 * Registers, in the calling jest file, one test per js block of the Markdown file `doc` (a path
 * from the package's root), run in order in a directory of the document's own.
 */
function testBlocks(doc) {
  const blocks = codeBlocks(fs.readFileSync(path.join(ROOT, doc), 'utf8'));
  let home;
  if (blocks.length === 0) return blocks;
  describe(`${doc}'s code blocks`, () => {
    beforeAll(() => {
      home = makeHome();
    });
    afterAll(() => {
      if (home) fs.rmSync(home, { recursive: true, force: true });
    });
    for (const block of blocks) {
      const { line } = block;
      test(`${doc} block at line ${line} ${block.file === undefined ? 'runs and exits 0' : `is the file ${block.file}`}`, async () => {
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
          console.warn(`nats-server is not installed: ${doc} block at line ${line} is not run`);
          return;
        }
        try {
          await run(home, file, { NATS_URL: server.url });
        } finally {
          await server.stop();
        }
      });
    }
  });
  return blocks;
}

/** GitHub's anchors of a Markdown text's headings, with `-1`, `-2` … for repeated ones. */
function headingAnchors(text) {
  const seen = new Map();
  const anchors = new Set();
  const outsideFences = text.replace(/^(\s*)(`{3,}|~{3,})[^\n]*\n[\s\S]*?^\s*\2\s*$/gm, '');
  for (const [, heading] of outsideFences.matchAll(/^#{1,6}\s+(.*?)\s*#*\s*$/gm)) {
    const base = heading
      .replace(/<[^>]+>/g, '')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/**
 * The relative links of the Markdown file `doc` (outside code) that lead nowhere: a file that
 * does not exist, or an anchor that is no heading of the Markdown file it names. `text` is the
 * file's text unless given.
 */
function brokenLinks(doc, text = fs.readFileSync(path.join(ROOT, doc), 'utf8')) {
  const prose = text.replace(/^(\s*)(`{3,}|~{3,})[^\n]*\n[\s\S]*?^\s*\2\s*$/gm, '').replace(/`[^`\n]*`/g, '');
  const broken = [];
  for (const [, target] of prose.matchAll(/\]\(([^)\s]+)\)/g)) {
    if (/^[a-z]+:/i.test(target)) continue; // https:, mailto:
    const [file, hash] = target.split('#');
    if (file === '') {
      if (!headingAnchors(text).has(hash)) broken.push(`${target}: no heading #${hash} in ${doc}`);
      continue;
    }
    const resolved = path.join(ROOT, path.dirname(doc), file);
    if (!fs.existsSync(resolved)) {
      broken.push(`${target}: no such file`);
      continue;
    }
    if (hash !== undefined && resolved.endsWith('.md') && !headingAnchors(fs.readFileSync(resolved, 'utf8')).has(hash)) {
      broken.push(`${target}: no heading #${hash} in ${path.relative(ROOT, resolved)}`);
    }
  }
  return broken;
}

module.exports = { ROOT, BLOCK_MS, codeBlocks, fencedBlocks, isModule, testBlocks, headingAnchors, brokenLinks };
