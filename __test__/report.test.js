'use strict';
// bench/report.js turns results into charts and README tables; these tests run it on a made-up
// results object so that a change to the results format or to the report cannot break it
// silently.
const { renderSvg, ratiosTable, resultsTable, section, replaceBetweenMarkers } = require('../bench/report');

const result = {
  benchmark: 'made-up',
  quick: false,
  machine: {
    cpu: 'Test CPU',
    cores: 2,
    memoryGiB: 4,
    os: 'Linux test',
    node: 'v20.0.0',
    rustc: 'rustc 1.0.0',
    commit: 'abc1234',
    loadAverage: { atStart: 0.5, atEnd: 0.7 },
    date: '2026-01-02T03:04:05.000Z',
  },
  results: {
    'page /main': { unit: 'req/s (page)', median: 17900, min: 17000, max: 18500, runs: [17000, 17900, 18500] },
    'page /corepool': { unit: 'req/s (page)', median: 30000, min: 29000, max: 31000, runs: [29000, 30000, 31000] },
    'page /piscina <&>': { unit: 'req/s (page)', median: 12300, min: 12300, max: 12300, runs: [12300] },
    'corepool latency p50': { unit: 'µs', median: 25, min: 20, max: 40, runs: [20, 25, 40] },
    'js-main': { unit: 'ms per 10M draws', median: 80000, min: 79000, max: 81000, runs: [79000, 81000] },
    'corepool': { unit: 'ms per 10M draws', median: 100, min: 90, max: 110, runs: [90, 110] },
  },
  ratios: [
    { name: 'page: /corepool vs /main req/s', a: 'page /corepool', b: 'page /main', value: 1.68, goal: 1.5, met: true },
    { name: 'page: /corepool vs /piscina req/s', a: 'page /corepool', b: 'page /piscina <&>', value: 1.9, goal: 2, met: false },
    { name: 'corepool vs js-main', a: 'corepool', b: 'js-main', value: 800, goal: null, met: null },
    { name: 'corepool latency p50', a: 'corepool latency p50', value: 25, unit: 'µs', goal: 30, met: true, kind: 'max' },
  ],
  tables: { routes: [{ route: '/main', 'req/s': 17900, threads: 2 }] },
  notes: ['a note | with a pipe'],
};

/** The tags of an XML document, checked for balance; throws on the first mismatch. */
function checkBalanced(xml) {
  const body = xml.replace(/^<\?xml[^>]*\?>\s*/, '');
  if (/&(?!(amp|lt|gt|quot|apos|#\d+);)/.test(body)) throw new Error('an unescaped &');
  const stack = [];
  let elements = 0;
  for (const [, closing, name, selfClosing] of body.matchAll(/<(\/?)([A-Za-z][\w:-]*)[^<>]*?(\/?)>/g)) {
    if (closing) {
      const open = stack.pop();
      if (open !== name) throw new Error(`</${name}> closes <${open}>`);
    } else if (!selfClosing) {
      stack.push(name);
      elements++;
    } else {
      elements++;
    }
  }
  if (stack.length) throw new Error(`unclosed <${stack.join('>, <')}>`);
  return elements;
}

describe('bench/report.js', () => {
  const svg = renderSvg(result);

  test('the chart is a balanced SVG 1.1 document with an explicit size', () => {
    expect(svg.startsWith('<?xml version="1.0" encoding="UTF-8"?>')).toBe(true);
    expect(checkBalanced(svg)).toBeGreaterThan(10);
    const root = svg.match(/<svg [^>]*>/)[0];
    expect(root).toContain('xmlns="http://www.w3.org/2000/svg"');
    expect(root).toContain('version="1.1"');
    expect(Number(root.match(/ width="(\d+)"/)[1])).toBeGreaterThan(0);
    expect(Number(root.match(/ height="(\d+)"/)[1])).toBeGreaterThan(0);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
  });

  test('text in the chart is escaped', () => {
    expect(svg).toContain('page /piscina &lt;&amp;&gt;');
    expect(svg).not.toContain('<&>');
  });

  test('the chart has one bar per result and one per charted ratio', () => {
    expect(svg.match(/<rect class="bar"/g)).toHaveLength(Object.keys(result.results).length);
    // Absolute bounds (kind 'max') are in the table, not on the ratio scale.
    expect(svg.match(/<rect class="ratio"/g)).toHaveLength(result.ratios.length - 1);
    for (const label of ['page /main', 'page /corepool', 'js-main']) expect(svg).toContain(`>${label}</text>`);
  });

  test('every bar lies inside the chart', () => {
    const width = Number(svg.match(/<svg [^>]* width="(\d+)"/)[1]);
    for (const [, x, w] of svg.matchAll(/<rect class="(?:bar|ratio)" x="([\d.]+)" y="[\d.]+" width="([\d.]+)"/g)) {
      expect(Number(w)).toBeGreaterThanOrEqual(0);
      expect(Number(x) + Number(w)).toBeLessThanOrEqual(width);
    }
  });

  test('a panel whose values span more than 100× is drawn on a log scale', () => {
    expect(svg).toContain('ms per 10M draws (log scale)');
    expect(svg).not.toContain('req/s (page) (log scale)');
  });

  test('the ratio table has a row per ratio, with its goal and whether it was met', () => {
    const rows = ratiosTable(result).split('\n').slice(2);
    expect(rows).toHaveLength(result.ratios.length);
    expect(rows[0]).toMatch(/^\| page: \/corepool vs \/main req\/s \| 1\.68× \| ≥ 1\.5× \| ✅ met \|$/);
    expect(rows[1]).toContain('❌ not met');
    expect(rows[2]).toMatch(/\| 800× \| {2}\| {2}\|$/);
    expect(rows[3]).toContain('≤ 30 µs');
  });

  test('the results table has a row per result', () => {
    const rows = resultsTable(result).split('\n').slice(2);
    expect(rows).toHaveLength(Object.keys(result.results).length);
    expect(rows[0]).toBe('| page /main | 17.9k | 17.0k – 18.5k | req/s (page) | 3 |');
  });

  test('the README section links the chart, says where it ran and how to reproduce it', () => {
    const md = section(result, 'bench/results/made-up.svg');
    expect(md).toContain('![made-up');
    expect(md).toContain('(bench/results/made-up.svg)');
    expect(md).toContain('Test CPU, 2 cores');
    expect(md).toContain('node v20.0.0');
    expect(md).toContain('rustc 1.0.0');
    expect(md).toContain('commit `abc1234`');
    expect(md).toContain('2026-01-02 03:04 UTC');
    expect(md).toContain('`npm run bench -- made-up`');
    expect(md).toContain('- a note | with a pipe');
  });

  test('the README is replaced between the markers only, and left alone without them', () => {
    const readme = 'intro\n<!-- bench:start -->\nold\n<!-- bench:end -->\noutro\n';
    expect(replaceBetweenMarkers(readme, '\nnew\n')).toBe('intro\n<!-- bench:start -->\nnew\n<!-- bench:end -->\noutro\n');
    expect(replaceBetweenMarkers('intro\n', '\nnew\n')).toBeNull();
    expect(replaceBetweenMarkers('<!-- bench:end --> <!-- bench:start -->', 'x')).toBeNull();
  });
});
