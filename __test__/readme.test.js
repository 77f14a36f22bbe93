'use strict';
// README.md: every ```js / ```javascript block runs as a reader would run it (the rules, and the
// `<!-- readme-test: … -->` comments a block may carry, are in helpers/doc-blocks.js, which runs
// the guides' blocks under docs/ the same way: docs.test.js). The README stays a five-minute
// read: what corepool is, Install, an example, a tour linking the guides, results, limits.
const fs = require('node:fs');
const path = require('node:path');
const { ROOT, BLOCK_MS, testBlocks, brokenLinks } = require('./helpers/doc-blocks.js');

jest.setTimeout(BLOCK_MS + 10_000);

const README = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
const blocks = testBlocks('README.md');

test('the README has code blocks to run', () => {
  expect(blocks.length).toBeGreaterThan(0);
});

test('the README is at most 500 lines (issue #34): the rest is in docs/', () => {
  expect(README.split('\n').length).toBeLessThanOrEqual(500);
});

test("the README's links lead to files and headings that exist", () => {
  expect(brokenLinks('README.md')).toEqual([]);
});

test('the README comes in library order: what it is, Install, an example, the tour, results, limits, contributing', () => {
  const headings = [...README.matchAll(/^## (.*)$/gm)].map((m) => m[1]);
  const order = ['What corepool is for', 'Install', 'Ten lines', 'A tour', 'Results', 'Limits', 'Contributing'];
  expect(headings.filter((h) => order.includes(h))).toEqual(order);
});
