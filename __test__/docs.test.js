'use strict';
// The guides under docs/: every js block of every guide runs as a reader would run it (the
// rules and the `<!-- readme-test: … -->` comments: helpers/doc-blocks.js, the same reading as
// the README's); their links lead somewhere; what the guides copy from a file of the repository
// is that file; every error code has its entry.
const fs = require('node:fs');
const path = require('node:path');
const { ROOT, BLOCK_MS, codeBlocks, fencedBlocks, isModule, testBlocks, headingAnchors, brokenLinks } = require('./helpers/doc-blocks.js');
const { RpcError } = require('..');

jest.setTimeout(BLOCK_MS + 10_000);

const DOCS = fs
  .readdirSync(path.join(ROOT, 'docs'))
  .filter((f) => f.endsWith('.md'))
  .sort()
  .map((f) => `docs/${f}`);
const read = (file) => fs.readFileSync(path.join(ROOT, file), 'utf8');

for (const doc of DOCS) testBlocks(doc);

test.each(DOCS.concat(['CONTRIBUTING.md']))("%s's links lead to files and headings that exist", (doc) => {
  expect(brokenLinks(doc)).toEqual([]);
});

test("docs/nats.md's nats-server config is examples/nats-permissions.conf, the file the permissions tests run", () => {
  const configs = fencedBlocks(read('docs/nats.md'))
    .filter((b) => b.lang === 'conf')
    .map((b) => `${b.code}\n`);
  expect(configs).toEqual([read('examples/nats-permissions.conf')]);
});

test('the map of the code (CONTRIBUTING.md, "How it works") names every file of lib/ and every part of src/', () => {
  // Checked against the tree, so that the map cannot drift from it (issue #29).
  const map = read('CONTRIBUTING.md').split('\n## How it works\n')[1].split('```')[1];
  const named = (name) => map.includes(name);
  const missing = [];
  for (const e of fs.readdirSync(path.join(ROOT, 'lib'), { withFileTypes: true })) {
    if (e.isDirectory()) {
      if (!named(`${e.name}/`)) missing.push(`lib/${e.name}/`);
    } else if (e.name.endsWith('.js') && !named(e.name) && !named(`${e.name.replace(/-[a-z]+\.js$/, '-*.js')}`)) missing.push(`lib/${e.name}`);
  }
  const src = path.join(ROOT, 'src');
  for (const e of fs.readdirSync(src, { withFileTypes: true })) if (e.isDirectory() && !named(`${e.name}/`)) missing.push(`src/${e.name}/`);
  for (const e of fs.readdirSync(path.join(src, 'bindings'), { withFileTypes: true })) {
    const name = e.isDirectory() ? `${e.name}/` : e.name;
    if (!named(name)) missing.push(`src/bindings/${name}`);
  }
  expect(missing).toEqual([]);
});

test("docs/nats.md's example shows the number fibonacci(90) returns (issue #34: it said 2880067194370816000)", async () => {
  const shown = read('docs/nats.md').match(/remote\.exec\('fibonacci', 90\)\); \/\/ → (\S+)/)[1];
  const { Pool } = require('..');
  const pool = new Pool({ threads: 1 });
  try {
    expect(shown).toBe(await pool.exec('fibonacci', 90));
  } finally {
    await pool.close();
  }
});

describe('docs/errors.md (issue #34 §4)', () => {
  const text = read('docs/errors.md');
  /** The `## Name (code)` sections: name → { code, body }. */
  const sections = new Map(
    [...text.matchAll(/^## (\w+) \((-?\d+)\)\n([\s\S]*?)(?=^## |(?![\s\S]))/gm)].map(([, name, code, body]) => [name, { code: Number(code), body }]),
  );

  test.each(Object.entries(RpcError.codes))('%s (%i) has an entry: what causes it, and what to do', (name, code) => {
    expect(sections.get(name)?.code).toBe(code);
    const { body } = sections.get(name);
    expect(body).toMatch(/^\*\*Cause\.\*\* \S/m);
    expect(body).toMatch(/^\*\*What to do\.\*\* \S/m);
  });

  test('documents no code that RpcError.codes lacks', () => {
    expect([...sections.keys()].filter((name) => !Object.hasOwn(RpcError.codes, name))).toEqual([]);
  });

  test('the lock misuse codes have their entries too', () => {
    for (const code of ['ERR_LOCK_NOT_LOCKED', 'ERR_LOCK_NOT_OWNER', 'ERR_LOCK_ALREADY_HELD', 'ERR_LOCK_COUNT_OVERFLOW']) {
      expect([code, headingAnchors(text).has(code.toLowerCase())]).toEqual([code, true]);
    }
  });
});

// The reading of the blocks, on a document made up for it.
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
  const found = codeBlocks(sample);

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
    const [nats, natsWithArgument] = codeBlocks('<!-- readme-test: nats-server -->\n```js\n1;\n```\n<!-- readme-test: nats-server 4222 -->\n```js\n2;\n```');
    expect(nats).toMatchObject({ nats: true, errors: [] });
    expect(natsWithArgument.errors).toEqual([expect.stringContaining('unknown readme-test comment')]);
    expect(found[0].nats).toBe(false);
  });

  test('runs a block with an import as a module, anything else as CommonJS', () => {
    expect(isModule("import { Pool } from 'corepool';")).toBe(true);
    expect(isModule('// text\nexport const a = 1;')).toBe(true);
    expect(isModule("const { Pool } = require('corepool');\n// import later")).toBe(false);
    expect(isModule("const m = await import('corepool');")).toBe(false);
  });

  test('finds the links that lead to no file or no heading, and only those', () => {
    const text = [
      'See [Install](../README.md#install), [the guide](calls.md#values), [above](#a-heading) and [the site](https://nats.io).',
      '## A heading',
      'Broken: [gone](nowhere.md), [no such heading](../README.md#no-such-heading), [here](#nope).',
      'Code is not a link: `[x](missing.md)`.',
      '```md',
      '[y](missing-too.md)',
      '```',
    ].join('\n');
    expect(brokenLinks('docs/made-up.md', text)).toEqual([
      'nowhere.md: no such file',
      '../README.md#no-such-heading: no heading #no-such-heading in README.md',
      '#nope: no heading #nope in docs/made-up.md',
    ]);
  });

  test("finds GitHub's heading anchors, repeated ones numbered, none inside code", () => {
    const anchors = headingAnchors('# A `b` (c)\n## Past one machine: `corepool/nats`\n## x\n## x\n```sh\n# not a heading\n```\n');
    expect([...anchors]).toEqual(['a-b-c', 'past-one-machine-corepoolnats', 'x', 'x-1']);
  });
});
