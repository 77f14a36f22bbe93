'use strict';
// bench/report.js turns results into charts, the README's summary and BENCHMARKS.md; these tests
// run it on a made-up results object so that a change to the results format or to the report
// cannot break it silently, and check that bench/catalogue.js describes every benchmark.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const {
  renderSvg,
  ratiosTable,
  resultsTable,
  section,
  summaryTable,
  runtimeDifferences,
  runtimeSection,
  runtimeLabel,
  goalsMet,
  anchor,
  machinesSection,
  replaceBetweenMarkers,
  loadResults,
  loadRuntimeResults,
  writeReports,
} = require('../bench/report');
const { catalogue, headlineRatio } = require('../bench/catalogue');
const { available, parseArgs } = require('../bench/run');
const { resultsFile, ratioFormula, runtime } = require('../bench/harness');
const { runtimes, nodeRuntime, pinnedAlias } = require('../scripts/runtimes');

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
    expect(rows[0]).toBe('| page: /corepool vs /main req/s | 1.68× | ≥ 1.5× | ✅ met | page /corepool ÷ page /main, req/s (page) (higher is better) |');
    expect(rows[1]).toContain('❌ not met');
    // A time: the other side's time over this one's, so above 1× still means the first is better.
    expect(rows[2]).toBe('| corepool vs js-main | 800× |  |  | js-main ÷ corepool, ms per 10M draws (lower is better) |');
    expect(rows[3]).toContain('≤ 30 µs');
    expect(rows[3]).toContain('median of corepool latency p50, µs (lower is better)');
  });

  test('the results table has a row per result', () => {
    const rows = resultsTable(result).split('\n').slice(2);
    expect(rows).toHaveLength(Object.keys(result.results).length);
    expect(rows[0]).toBe('| page /main | 17.9k | 17.0k – 18.5k | req/s (page) | 3 |');
  });

  test('the BENCHMARKS.md section links the chart, says where it ran and how to reproduce it', () => {
    const md = section(result, 'bench/results/made-up.svg');
    expect(md.startsWith('## made-up\n')).toBe(true);
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

  test('the summary has one line per benchmark, its headline from the catalogue and every goal missed', () => {
    const dispatch = {
      ...result,
      benchmark: 'dispatch',
      results: { corepool: { unit: 'ops/s' }, piscina: { unit: 'ops/s' } },
      ratios: [
        { name: 'corepool vs tinypool (closed loop)', value: 29, goal: null, met: null },
        { name: 'corepool vs piscina (closed loop)', a: 'corepool', b: 'piscina', value: 26.4, goal: 10, met: true },
        { name: 'corepool burst heap', value: 12.6, unit: '×', goal: 2, met: false, kind: 'max' },
      ],
    };
    const noHeadline = { ...result, benchmark: 'dispatch', ratios: [{ name: 'renamed ratio', value: 3, goal: 2, met: true }] };
    const rows = summaryTable([dispatch, result, noHeadline], 'BENCHMARKS.md').split('\n').slice(2);
    expect(rows).toHaveLength(3);
    // The headline is the catalogue's ratio, not the first one recorded, and says what it divides.
    expect(rows[0]).toBe(
      '| [dispatch](BENCHMARKS.md#dispatch) | per-call overhead of tiny tasks | corepool vs piscina (closed loop): corepool ÷ piscina, ops/s (higher is better) ' +
        '| 26.40× | ≥ 10× | ✅ | 1 of 2; not met: corepool burst heap (12.60 ×, goal ≤ 2 ×) |',
    );
    expect(rows[1]).toContain('[made-up](BENCHMARKS.md#made-up)');
    expect(rows[1]).toContain('(not in bench/catalogue.js)');
    expect(rows[1]).toContain('2 of 3; not met: page: /corepool vs /piscina req/s (1.90×, goal ≥ 2×)');
    expect(rows[2]).toContain('(its headline is not in these results)');
    expect(goalsMet({ ratios: [{ name: 'x', value: 1, goal: null }] })).toBe('no goals');
  });

  test('a benchmark without a peer quotes its own figure in the summary', () => {
    const soak = {
      ...result,
      benchmark: 'soak',
      ratios: [],
      results: { 'RSS slope, second half': { median: -0.344 }, 'RSS slope ±2 standard errors': { median: 1.8 } },
      tables: { account: [{ submitted: 8096385, neverSettled: 0, wrong: 0 }] },
    };
    expect(summaryTable([soak])).toContain('| 8.10M calls: 0 never settled, 0 wrong; RSS slope -0.34 ± 1.80 MB/min |');
  });

  test('anchors are GitHub heading anchors', () => {
    expect(anchor('template-render')).toBe('template-render');
    expect(anchor('File pool: a + b')).toBe('file-pool-a--b');
  });

  test('the machine section names each distinct machine once', () => {
    const other = { ...result, benchmark: 'other', machine: { ...result.machine, os: 'Linux other' } };
    const one = machinesSection([result, { ...result, benchmark: 'again' }]);
    expect(one).toContain('Every result ran on Test CPU, 2 cores, 4 GiB, Linux test, node v20.0.0, rustc 1.0.0.');
    expect(one).toContain('| made-up | `abc1234` | 2026-01-02 03:04 UTC | 0.50 → 0.70 |');
    const two = machinesSection([result, other]);
    expect(two).toContain('- A: Test CPU, 2 cores, 4 GiB, Linux test,');
    expect(two).toContain('- B: Test CPU, 2 cores, 4 GiB, Linux other,');
    expect(two).toContain('| other | B | `abc1234` |');
  });

  describe('writeReports', () => {
    let dir;
    const marked = (title) => `# ${title}\n\nhand-written\n\n<!-- bench:start -->old<!-- bench:end -->\n\nafter\n`;
    beforeEach(() => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'corepool-report-'));
      fs.mkdirSync(path.join(dir, 'results'));
      fs.writeFileSync(path.join(dir, 'results', 'made-up.json'), JSON.stringify(result));
      fs.writeFileSync(path.join(dir, 'results', 'made-up.quick.json'), JSON.stringify({ ...result, benchmark: 'quick-only' }));
    });
    afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));
    const paths = () => ({
      resultsDir: path.join(dir, 'results'),
      readme: path.join(dir, 'README.md'),
      benchmarks: path.join(dir, 'BENCHMARKS.md'),
    });

    test('writes the README summary and BENCHMARKS.md from the same results, keeping the text around the markers', () => {
      fs.writeFileSync(paths().readme, marked('readme'));
      fs.writeFileSync(paths().benchmarks, marked('benchmarks'));
      const { problem, written } = writeReports(paths());
      expect(problem).toBeNull();
      expect(written).toEqual([path.join(dir, 'results', 'made-up.svg'), paths().readme, paths().benchmarks]);
      const readme = fs.readFileSync(paths().readme, 'utf8');
      const benchmarks = fs.readFileSync(paths().benchmarks, 'utf8');
      for (const text of [readme, benchmarks]) {
        expect(text).toMatch(/^# \w+\n\nhand-written\n\n<!-- bench:start -->\n/);
        expect(text.endsWith('<!-- bench:end -->\n\nafter\n')).toBe(true);
        expect(text).not.toContain('old');
        expect(text).not.toContain('quick-only');
      }
      // The README: the summary, linked to BENCHMARKS.md; no charts (BENCHMARKS.md has them) and
      // no detailed tables, so that it stays a short read (issue #34).
      expect(readme).toContain('| [made-up](BENCHMARKS.md#made-up) |');
      expect(readme).not.toContain('.svg');
      expect(readme).not.toContain('| ratio | value | goal |');
      // BENCHMARKS.md: the same summary line (with links inside the file), the machine, the section.
      const summaryLine = (text) => text.split('\n').find((l) => l.startsWith('| [made-up]'));
      expect(summaryLine(benchmarks)).toBe(summaryLine(readme).replace('(BENCHMARKS.md#made-up)', '(#made-up)'));
      expect(benchmarks).toContain('## Machine');
      expect(benchmarks).toContain('## made-up');
      expect(benchmarks).toContain('![made-up: medians with min–max whiskers, and ratios against their goals](results/made-up.svg)');
      expect(benchmarks).toContain('| page: /corepool vs /main req/s | 1.68× | ≥ 1.5× | ✅ met |');
    });

    test('changes neither file when one lacks the markers', () => {
      fs.writeFileSync(paths().readme, '# readme without markers\n');
      fs.writeFileSync(paths().benchmarks, marked('benchmarks'));
      const { problem } = writeReports(paths());
      expect(problem).toContain('README.md lacks the <!-- bench:start --> … <!-- bench:end --> markers');
      expect(fs.readFileSync(paths().readme, 'utf8')).toBe('# readme without markers\n');
      expect(fs.readFileSync(paths().benchmarks, 'utf8')).toBe(marked('benchmarks'));
    });

    test('starts BENCHMARKS.md when there is none', () => {
      fs.writeFileSync(paths().readme, marked('readme'));
      expect(writeReports(paths()).problem).toBeNull();
      expect(fs.readFileSync(paths().benchmarks, 'utf8')).toMatch(/^# corepool: benchmarks\n\n<!-- bench:start -->\n[^]*## made-up[^]*<!-- bench:end -->\n$/);
    });

    test('says so when there are no results', () => {
      fs.rmSync(path.join(dir, 'results'), { recursive: true });
      expect(writeReports(paths()).problem).toMatch(/^no results in /);
    });
  });
});

describe('results of several runtimes (npm run bench -- --node 24)', () => {
  /** `base` as if run on another runtime, its ratios' values multiplied by `factors[name]`. */
  const on = (base, version, factors = {}, machine = {}) => ({
    ...base,
    machine: { ...base.machine, ...machine, node: `v${version}`, runtime: { name: 'Node', version } },
    ratios: base.ratios.map((q) => ({ ...q, value: q.value * (factors[q.name] ?? 1) })),
  });
  const dispatch = {
    ...result,
    benchmark: 'dispatch',
    results: { corepool: { unit: 'ops/s' }, piscina: { unit: 'ops/s' }, 'corepool latency p50': { unit: 'µs' }, 'C p50': { unit: 'µs' } },
    ratios: [
      { name: 'corepool vs piscina (closed loop)', a: 'corepool', b: 'piscina', value: 20, goal: 10, met: true },
      { name: 'corepool vs C (sequential p50)', a: 'corepool latency p50', b: 'C p50', value: 2, goal: null, met: null },
      { name: 'corepool sequential latency p50', a: 'corepool latency p50', value: 5, unit: 'µs', goal: 30, met: true, kind: 'max' },
      { name: 'only on the old one', a: 'corepool', b: 'piscina', value: 3, goal: null, met: null },
      { name: 'not measured', a: 'corepool', b: 'piscina', value: NaN, goal: null, met: null },
    ],
  };
  const node24 = [
    {
      ...on(dispatch, '24.22.3', { 'corepool vs piscina (closed loop)': 1.25, 'corepool vs C (sequential p50)': 0.9, 'corepool sequential latency p50': 1.1005 }),
      ratios: on(dispatch, '24.22.3', {
        'corepool vs piscina (closed loop)': 1.25,
        'corepool vs C (sequential p50)': 0.9,
        'corepool sequential latency p50': 1.1005,
      }).ratios.filter((q) => q.name !== 'only on the old one'),
    },
  ];

  test('ratios measured on both are compared, and those more than 10% apart are listed', () => {
    const { compared, differing } = runtimeDifferences([dispatch, result], node24);
    // 'only on the old one' has no twin and 'not measured' no value; made-up ran on one runtime.
    expect(compared).toBe(3);
    // Exactly 10% apart (0.9×) is not more than 10%; 10.05% is.
    expect(differing.map((d) => [d.name, Number(d.change.toFixed(4))])).toEqual([
      ['corepool vs piscina (closed loop)', 0.25],
      ['corepool sequential latency p50', 0.1005],
    ]);
    expect(differing[0].formula).toBe('corepool ÷ piscina, ops/s (higher is better)');
    expect(runtimeDifferences([dispatch], []).compared).toBe(0);
  });

  test("the summary puts each runtime's headline beside the machine Node's", () => {
    const others = [{ alias: 'node24', results: node24 }];
    const [header, , ...rows] = summaryTable([dispatch, result], '', others).split('\n');
    expect(header).toBe('| benchmark | compares | headline | Node 20.0.0 | Node 24.22.3 | goal | met | goals met in the run |');
    expect(rows[0]).toContain('| 20.00× | 25.00× ✅ | ≥ 10× | ✅ |');
    // A benchmark the other runtime did not run has an empty cell there.
    expect(rows[1]).toMatch(/\| \(not in bench\/catalogue\.js\) \| {2}\| {2}\| {2}\| {2}\| 2 of 3;/);
    // A benchmark with no peer quotes its own figure on each runtime.
    const soak = (calls) => ({ ...result, benchmark: 'soak', ratios: [], results: {}, tables: { account: [{ submitted: calls, neverSettled: 0, wrong: 0 }] } });
    const soakRow = summaryTable([soak(1e6)], '', [{ alias: 'node24', results: [soak(2e6)] }]).split('\n')[2];
    expect(soakRow).toContain('| 1.00M calls: 0 never settled, 0 wrong |  | 2.00M calls: 0 never settled, 0 wrong |');
    // With one runtime's results the table is as it was: one value column.
    expect(summaryTable([dispatch]).split('\n')[0]).toBe('| benchmark | compares | headline | value | goal | met | goals met in the run |');
  });

  test('a runtime is named by what its results recorded, or by the Node version alone in older results', () => {
    const old = { ...result, machine: { ...result.machine, runtime: undefined, node: 'v20.20.2' } };
    expect(runtimeLabel([old])).toBe('Node 20.20.2');
    expect(runtimeLabel(node24)).toBe('Node 24.22.3');
    // Several versions of one line are named by the line; of several lines, by the fallback.
    expect(runtimeLabel([old, on(old, '20.19.0')])).toBe('Node 20');
    expect(runtimeLabel([old, node24[0]], 'mixed')).toBe('mixed');
  });

  test("BENCHMARKS.md's section lists the differing ratios, the runs, and warns when the machines differ", () => {
    const text = runtimeSection([dispatch], { alias: 'node24', results: node24 });
    expect(text.startsWith('## Node 24.22.3 against Node 20.0.0\n')).toBe(true);
    expect(text).toContain('`npm run bench -- --node 24` wrote bench/results/node24/');
    expect(text).toContain('2 of the 3 measured on both');
    expect(text).toContain('| dispatch | corepool vs piscina (closed loop) | 20.00× | 25.00× | +25% | corepool ÷ piscina, ops/s (higher is better) |');
    expect(text).toContain('| dispatch | corepool sequential latency p50 | 5.00 µs | 5.50 µs | +10% |');
    expect(text).not.toContain('| corepool vs C (sequential p50) |');
    expect(text).toContain('| dispatch | Node 24.22.3 | `abc1234` |');
    expect(text).not.toContain('Not the same machine');
    const elsewhere = [on(dispatch, '24.22.3', {}, { cpu: 'Other CPU' })];
    expect(runtimeSection([dispatch], { alias: 'node24', results: elsewhere })).toContain('**Not the same machine:**');
  });

  test('writeReports reads each runtime from its folder, and renders as before when there is none', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'corepool-report-runtimes-'));
    try {
      const results = path.join(dir, 'results');
      fs.mkdirSync(path.join(results, 'node24'), { recursive: true });
      fs.mkdirSync(path.join(results, 'node22'));
      fs.writeFileSync(path.join(results, 'dispatch.json'), JSON.stringify(dispatch));
      const marked = '<!-- bench:start --><!-- bench:end -->\n';
      const files = { resultsDir: results, readme: path.join(dir, 'README.md'), benchmarks: path.join(dir, 'BENCHMARKS.md') };
      const write = () => {
        fs.writeFileSync(files.readme, marked);
        fs.writeFileSync(files.benchmarks, marked);
        expect(writeReports(files).problem).toBeNull();
        return [fs.readFileSync(files.readme, 'utf8'), fs.readFileSync(files.benchmarks, 'utf8')];
      };
      const [readmeAlone, benchmarksAlone] = write();
      expect(benchmarksAlone).not.toContain('## Node');
      expect(readmeAlone).toContain('| headline | value | goal |');

      fs.writeFileSync(path.join(results, 'node24', 'dispatch.json'), JSON.stringify(node24[0]));
      fs.writeFileSync(path.join(results, 'node24', 'dispatch.quick.json'), JSON.stringify({ ...node24[0], benchmark: 'quick-only' }));
      // node22/ is empty: no column for it.
      expect(loadRuntimeResults(results).map((o) => [o.alias, o.results.map((r) => r.benchmark)])).toEqual([['node24', ['dispatch']]]);
      const [readme, benchmarks] = write();
      expect(readme).toContain('| headline | Node 20.0.0 | Node 24.22.3 | goal |');
      expect(readme).toContain('Node 24.22.3 against Node 20.0.0: 2 of 3 ratios differ by more than 10%, listed in [BENCHMARKS.md](BENCHMARKS.md#node-24223-against-node-2000).');
      expect(benchmarks).toContain('## Node 24.22.3 against Node 20.0.0');
      expect(benchmarks).not.toContain('quick-only');
      // The charts are the machine Node's only.
      expect(fs.existsSync(path.join(results, 'node24', 'dispatch.svg'))).toBe(false);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('bench/harness.js and bench/run.js on several runtimes', () => {
  test('a ratio says what it divided by what, the better side on top', () => {
    const results = { a: { unit: 'req/s (page)' }, b: { unit: 'req/s (page)' }, t: { unit: 'ms' }, u: { unit: 'ms' } };
    expect(ratioFormula({ a: 'a', b: 'b' }, results)).toBe('a ÷ b, req/s (page) (higher is better)');
    expect(ratioFormula({ a: 't', b: 'u' }, results)).toBe('u ÷ t, ms (lower is better)');
    expect(ratioFormula({ a: 't', kind: 'max' }, results)).toBe('median of t, ms (lower is better)');
    expect(ratioFormula({ a: 'a', b: 'gone' }, results)).toBeNull();
    expect(ratioFormula({ a: 'a', b: 'b' }, undefined)).toBeNull();
  });

  test("results of a pinned Node go to its own folder, the machine Node's where they always went", () => {
    const dir = path.join(__dirname, '..', 'bench', 'results');
    expect(resultsFile('dispatch', { quick: false, alias: null })).toBe(path.join(dir, 'dispatch.json'));
    expect(resultsFile('dispatch', { quick: true, alias: 'node24' })).toBe(path.join(dir, 'node24', 'dispatch.quick.json'));
    // By default, the folder of the Node running this: none for the machine's, node24/ when npm
    // test runs the suite on the pinned Node 24.
    const real = (f) => (fs.existsSync(f) ? fs.realpathSync(f) : null);
    const pinned = runtimes().find((r) => real(r.bin) === real(process.execPath));
    expect(pinnedAlias(process.execPath)).toBe(pinned?.alias ?? null);
    expect(resultsFile('dispatch', { quick: false })).toBe(path.join(dir, ...(pinned ? [pinned.alias] : []), 'dispatch.json'));
    expect(runtime()).toEqual({ name: 'Node', version: process.versions.node });
  });

  test('--node N (or N,M) picks Nodes and is not taken for a benchmark name or passed on', () => {
    expect(parseArgs(['--quick', '--node', '24', 'dispatch'])).toEqual({ nodes: ['24'], names: ['dispatch'], flags: ['--quick'] });
    expect(parseArgs(['--node=22', 'soak', '--seconds=120'])).toEqual({ nodes: ['22'], names: ['soak'], flags: ['--seconds=120'] });
    expect(parseArgs(['--node', '20,24,20', 'map'])).toEqual({ nodes: ['20', '24'], names: ['map'], flags: [] });
    expect(parseArgs(['map'])).toEqual({ nodes: null, names: ['map'], flags: [] });
    expect(() => parseArgs(['--node'])).toThrow('--node needs a major version');
    expect(() => parseArgs(['--node', '--quick'])).toThrow('--node needs a major version');
    expect(() => parseArgs(['--node', 'latest'])).toThrow('--node takes major versions such as 24 or 20,24, not "latest"');
    expect(() => parseArgs(['--node=20,'])).toThrow('not ""');
  });

  test("--node finds the pinned Nodes, and this machine's own by its major", () => {
    const own = process.versions.node.split('.')[0];
    if (!runtimes().some((r) => r.alias === `node${own}`)) {
      expect(nodeRuntime(own)).toMatchObject({ alias: null, bin: process.execPath, name: `Node ${process.versions.node}` });
    }
    expect(() => nodeRuntime('7')).toThrow(/^no Node 7 here; there are Node \d+ \(this machine's\), /);
    expect(pinnedAlias(__filename)).toBeNull();
    expect(pinnedAlias(path.join(os.tmpdir(), 'no-such-node'))).toBeNull();
    for (const r of runtimes().filter((x) => x.kind === 'node')) {
      const installed = fs.existsSync(r.bin);
      expect([r.alias, pinnedAlias(r.bin)]).toEqual([r.alias, installed ? r.alias : null]);
      if (installed) expect(nodeRuntime(r.alias.slice('node'.length)).bin).toBe(r.bin);
      else expect(() => nodeRuntime(r.alias.slice('node'.length))).toThrow('npm ci --prefix runtimes');
    }
  });

  test('no benchmark starts a hard-coded `node`: what they spawn runs on the Node running them', () => {
    const dir = path.join(__dirname, '..', 'bench');
    const files = [...fs.readdirSync(dir).map((f) => path.join(dir, f)), ...fs.readdirSync(path.join(dir, 'peers')).map((f) => path.join(dir, 'peers', f))];
    const sources = files.filter((f) => f.endsWith('.js'));
    expect(sources.length).toBeGreaterThan(20);
    const hardCoded = /\b(?:spawn|spawnSync|execFile|execFileSync|fork)\(\s*['"`]node['"`]|\bexec(?:Sync)?\(\s*['"`]node\s/;
    expect(sources.filter((f) => hardCoded.test(fs.readFileSync(f, 'utf8'))).map((f) => path.relative(dir, f))).toEqual([]);
    // The pattern catches what it is for.
    expect(hardCoded.test("spawn('node', [script])")).toBe(true);
    expect(hardCoded.test('execSync(`node x.js`)')).toBe(true);
    expect(hardCoded.test('spawn(process.execPath, [script])')).toBe(false);
  });
});

describe('bench/catalogue.js', () => {
  test('describes every benchmark bench/run.js runs, and nothing else', () => {
    expect(Object.keys(catalogue).sort()).toEqual(available());
    for (const [name, entry] of Object.entries(catalogue)) {
      expect([name, typeof entry.summary, typeof entry.measures]).toEqual([name, 'string', 'string']);
      expect([name, entry.headline != null || typeof entry.figure === 'function']).toEqual([name, true]);
    }
  });

  test("every recorded result has its catalogue headline (a renamed ratio must be renamed there too)", () => {
    const results = loadResults(path.join(__dirname, '..', 'bench', 'results'));
    expect(results.length).toBeGreaterThan(0);
    for (const r of results) {
      const entry = catalogue[r.benchmark];
      const found = entry.headline != null ? headlineRatio(r)?.name ?? null : entry.figure(r);
      expect([r.benchmark, typeof found]).toEqual([r.benchmark, 'string']);
    }
  });
});
