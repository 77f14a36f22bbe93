'use strict';
// Turns bench/results/<name>.json (the full runs; *.quick.json are ignored) into
// bench/results/<name>.svg charts and two Markdown parts, each between the markers
// <!-- bench:start --> and <!-- bench:end --> of its file:
//   README.md      a summary table (one line per benchmark: its headline ratio against its
//                  named peer, the goal, whether it was met, how many of the run's goals were
//                  met), no charts;
//   BENCHMARKS.md  the same summary, the machine, and a section per benchmark: what it
//                  measures, how to reproduce it, its chart, ratios and every table.
// Both come from the same results in one run of this script, so they cannot disagree; what each
// benchmark measures and which ratio is its headline come from bench/catalogue.js.
//
// Results of the machine's own Node are bench/results/<name>.json; those of a Node pinned in
// runtimes/package.json are in bench/results/<alias>/ (`npm run bench -- --node 24` writes
// node24/). When there are such, the summary shows each one's headline beside the machine
// Node's, and BENCHMARKS.md lists the ratios that differ by more than 10% between the two. The
// charts and sections are the machine Node's.
//
//   npm run bench:report [-- --results <dir>] [--readme <file>] [--benchmarks <file>]
//
// Chart: one panel per unit, a horizontal bar per result (its median) with a min–max whisker,
// then the ratios on a log scale, each against its goal. Absolute bounds (ratios of kind
// 'max') are listed in the table only: they have no common scale.
const fs = require('node:fs');
const path = require('node:path');
const { fmt, ratioFormula } = require('./harness');
const { catalogue, headlineRatio } = require('./catalogue');

const START = '<!-- bench:start -->';
const END = '<!-- bench:end -->';

// --- SVG -------------------------------------------------------------------------------------

const WIDTH = 880;
const FONT = 'Arial, Helvetica, sans-serif';
const MARGIN = 16;
const ROW = 22; // pitch of one bar
const BAR = 14; // height of one bar
const VALUE_ROOM = 180; // right of the plot, for the value text
const COLOURS = { bar: '#4a78a8', corepool: '#d9822b', met: '#2e7d32', missed: '#c62828', plain: '#78909c', ink: '#222', faint: '#888' };

function esc(text) {
  return String(text).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** Short numbers as they are (2, 1.5, 3000), others the harness's way (1.68, 42.9k). */
function num(v) {
  return Math.abs(v) < 1e4 && v === Number(v.toPrecision(3)) ? String(v) : fmt(v);
}

function text(x, y, content, attrs = '') {
  return `<text x="${x.toFixed(1)}" y="${y.toFixed(1)}"${attrs ? ` ${attrs}` : ''}>${esc(content)}</text>`;
}

function line(x1, y1, x2, y2, colour, width = 1) {
  return `<line x1="${x1.toFixed(1)}" y1="${y1.toFixed(1)}" x2="${x2.toFixed(1)}" y2="${y2.toFixed(1)}" stroke="${colour}" stroke-width="${width}"/>`;
}

/** The results grouped by unit for charting: [{ title, bars: [{ label, median, min, max }] }]. */
function panels(result) {
  const byUnit = new Map();
  for (const [label, r] of Object.entries(result.results ?? {})) {
    if (!Number.isFinite(r.median)) continue;
    if (!byUnit.has(r.unit)) byUnit.set(r.unit, { title: r.unit, bars: [] });
    const finite = (v) => (Number.isFinite(v) ? v : r.median);
    byUnit.get(r.unit).bars.push({ label, median: r.median, min: finite(r.min), max: finite(r.max) });
  }
  return [...byUnit.values()];
}

/** The ratios that go on the chart (not absolute bounds; finite and positive). */
function chartedRatios(result) {
  return (result.ratios ?? []).filter((q) => q.kind !== 'max' && Number.isFinite(q.value) && q.value > 0);
}

function labelWidth(labels) {
  const longest = Math.max(0, ...labels.map((l) => String(l).length));
  return Math.min(320, Math.max(90, Math.ceil(longest * 6.4) + 12));
}

/** x of a value in a panel: linear from 0, or logarithmic when every value is positive and
 *  they span more than 100× (a bar then starts at the power of ten below the smallest). */
function scale(values, left, plot) {
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  if (lo > 0 && hi / lo > 100) {
    const floor = Math.floor(Math.log10(lo));
    const span = Math.log10(hi) - floor;
    return { log: true, x: (v) => left + ((Math.log10(v) - floor) / span) * plot };
  }
  const top = hi > 0 ? hi : 1;
  return { log: false, x: (v) => left + (Math.max(0, v) / top) * plot };
}

function ratioText(q) {
  const goal = q.goal == null ? '' : ` (goal ≥ ${num(q.goal)}×${q.met ? '' : ', not met'})`;
  return `${fmt(q.value)}×${goal}`;
}

/** The benchmark's chart as an SVG 1.1 document. */
function renderSvg(result) {
  const groups = panels(result);
  const ratios = chartedRatios(result);
  const left = MARGIN + labelWidth([...groups.flatMap((g) => g.bars.map((b) => b.label)), ...ratios.map((q) => q.name)]);
  const plot = WIDTH - left - VALUE_ROOM;
  const out = [];
  let y = MARGIN + 14;
  out.push(text(MARGIN, y, result.benchmark, `font-size="16" font-weight="bold" fill="${COLOURS.ink}"`));
  y += 18;
  out.push(text(MARGIN, y, `${machineSummary(result.machine)}; bars: median, whiskers: min–max`, `font-size="11" fill="${COLOURS.faint}"`));
  y += 10;

  for (const g of groups) {
    const { log, x } = scale(g.bars.flatMap((b) => [b.min, b.median, b.max]), left, plot);
    y += 22;
    out.push(text(MARGIN, y, log ? `${g.title} (log scale)` : g.title, `font-size="12" font-weight="bold" fill="${COLOURS.ink}"`));
    y += 8;
    out.push(line(left, y, left, y + g.bars.length * ROW, COLOURS.faint));
    for (const b of g.bars) {
      const mid = y + ROW / 2;
      const colour = /corepool/i.test(b.label) ? COLOURS.corepool : COLOURS.bar;
      out.push(text(left - 6, mid + 4, b.label, `font-size="12" text-anchor="end" fill="${COLOURS.ink}"`));
      out.push(
        `<rect class="bar" x="${left.toFixed(1)}" y="${(mid - BAR / 2).toFixed(1)}" width="${(x(b.median) - left).toFixed(1)}" height="${BAR}" fill="${colour}"/>`,
      );
      if (b.max > b.min) {
        out.push(line(x(b.min), mid, x(b.max), mid, COLOURS.ink));
        out.push(line(x(b.min), mid - 4, x(b.min), mid + 4, COLOURS.ink));
        out.push(line(x(b.max), mid - 4, x(b.max), mid + 4, COLOURS.ink));
      }
      const range = b.max > b.min ? ` (${num(b.min)}–${num(b.max)})` : '';
      out.push(text(Math.max(x(b.median), x(b.max)) + 6, mid + 4, `${num(b.median)}${range}`, `font-size="11" fill="${COLOURS.ink}"`));
      y += ROW;
    }
  }

  if (ratios.length) {
    y += 22;
    out.push(text(MARGIN, y, 'ratios, log scale (above 1×: the first contestant is better; tick: the goal)', `font-size="12" font-weight="bold" fill="${COLOURS.ink}"`));
    y += 8;
    const values = ratios.flatMap((q) => (q.goal == null ? [q.value] : [q.value, q.goal]));
    const lo = Math.log(Math.min(1, ...values) / 1.25);
    const hi = Math.log(Math.max(1, ...values) * 1.25);
    const x = (v) => left + ((Math.log(v) - lo) / (hi - lo)) * plot;
    const one = x(1);
    for (const q of ratios) {
      const mid = y + ROW / 2;
      const colour = q.goal == null ? COLOURS.plain : q.met ? COLOURS.met : COLOURS.missed;
      const from = Math.min(one, x(q.value));
      out.push(text(left - 6, mid + 4, q.name, `font-size="12" text-anchor="end" fill="${COLOURS.ink}"`));
      out.push(
        `<rect class="ratio" x="${from.toFixed(1)}" y="${(mid - BAR / 2).toFixed(1)}" width="${Math.max(1, Math.abs(x(q.value) - one)).toFixed(1)}" height="${BAR}" fill="${colour}"/>`,
      );
      if (q.goal != null) out.push(line(x(q.goal), mid - BAR / 2 - 3, x(q.goal), mid + BAR / 2 + 3, COLOURS.ink, 2));
      const after = Math.max(one, x(q.value), q.goal == null ? 0 : x(q.goal));
      out.push(text(after + 6, mid + 4, ratioText(q), `font-size="11" fill="${COLOURS.ink}"`));
      y += ROW;
    }
    out.push(line(one, y - ratios.length * ROW, one, y, COLOURS.faint));
    out.push(text(one, y + 12, '1×', `font-size="10" text-anchor="middle" fill="${COLOURS.faint}"`));
    y += 12;
  }

  if (!groups.length && !ratios.length) {
    y += 22;
    out.push(text(MARGIN, y, 'no results', `font-size="12" fill="${COLOURS.faint}"`));
  }
  const height = Math.ceil(y + MARGIN);
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="${FONT}">`,
    `<rect x="0" y="0" width="${WIDTH}" height="${height}" fill="#ffffff"/>`,
    ...out,
    '</svg>',
    '',
  ].join('\n');
}

// --- Markdown --------------------------------------------------------------------------------

function cell(v) {
  if (typeof v === 'number') return num(v);
  if (v == null) return '';
  return String(v).replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

/** A Markdown table; `right` lists the columns to right-align. */
function markdownTable(header, rows, right = []) {
  const align = header.map((h, i) => (right.includes(i) ? '---:' : '---'));
  return [header, align, ...rows].map((r) => `| ${r.map(cell).join(' | ')} |`).join('\n');
}

function resultsTable(result) {
  const rows = Object.entries(result.results ?? {}).map(([name, r]) => [
    name,
    Number.isFinite(r.median) ? r.median : 'n/a',
    Number.isFinite(r.min) && Number.isFinite(r.max) ? `${num(r.min)} – ${num(r.max)}` : '',
    r.unit,
    r.runs?.length ?? '',
  ]);
  return markdownTable(['result', 'median', 'min – max', 'unit', 'runs'], rows, [1, 2, 4]);
}

function ratiosTable(result) {
  const rows = (result.ratios ?? []).map((q) => {
    const max = q.kind === 'max';
    const value = !Number.isFinite(q.value) ? 'n/a' : max ? `${fmt(q.value)} ${q.unit}` : `${fmt(q.value)}×`;
    const goal = q.goal == null ? '' : max ? `≤ ${num(q.goal)} ${q.unit}` : `≥ ${num(q.goal)}×`;
    const met = q.met == null ? '' : q.met ? '✅ met' : '❌ not met';
    return [q.name, value, goal, met, ratioFormula(q, result.results) ?? ''];
  });
  return markdownTable(['ratio', 'value', 'goal', '', 'computed as'], rows, [1, 2]);
}

/** One of the benchmark's own tables (an array of row objects). */
function ownTable(rows) {
  if (!Array.isArray(rows) || rows.length === 0) return '';
  const header = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const numeric = header.map((h, i) => (rows.every((r) => r[h] == null || typeof r[h] === 'number') ? i : -1)).filter((i) => i >= 0);
  return markdownTable(header, rows.map((r) => header.map((h) => r[h])), numeric);
}

function machineSummary(m = {}) {
  const date = m.date ? `${m.date.slice(0, 10)} ${m.date.slice(11, 16)} UTC` : 'unknown date';
  return [m.cpu, m.cores && `${m.cores} cores`, m.node && `node ${m.node}`, m.commit && `commit ${m.commit}`, date].filter(Boolean).join(' · ');
}

function machineLine(m = {}) {
  const parts = [
    m.cpu,
    m.cores && `${m.cores} cores`,
    m.memoryGiB && `${m.memoryGiB} GiB`,
    m.os,
    m.node && `node ${m.node}`,
    m.rustc,
    m.commit && `commit \`${m.commit}\``,
    m.date && `${m.date.slice(0, 10)} ${m.date.slice(11, 16)} UTC`,
  ].filter(Boolean);
  const load = m.loadAverage;
  if (load && Number.isFinite(load.atStart) && Number.isFinite(load.atEnd)) {
    parts.push(`load average ${load.atStart.toFixed(2)} → ${load.atEnd.toFixed(2)}`);
  }
  return parts.join(', ');
}

// --- the summary (README and BENCHMARKS.md) --------------------------------------------------

/** "1.42× < 1.5×"-style text of a ratio or bound against its goal. */
function againstGoal(q) {
  const max = q.kind === 'max';
  const value = !Number.isFinite(q.value) ? 'n/a' : max ? `${fmt(q.value)} ${q.unit}` : `${fmt(q.value)}×`;
  return `${value}, goal ${max ? `≤ ${num(q.goal)} ${q.unit}` : `≥ ${num(q.goal)}×`}`;
}

/** How many of the run's goals were met, naming the ones that were not. */
function goalsMet(result) {
  const goals = (result.ratios ?? []).filter((q) => q.goal != null);
  if (goals.length === 0) return 'no goals';
  const missed = goals.filter((q) => !q.met);
  const count = `${goals.length - missed.length} of ${goals.length}`;
  return missed.length ? `${count}; not met: ${missed.map((q) => `${q.name} (${againstGoal(q)})`).join('; ')}` : count;
}

/** A ratio's or bound's value as the tables quote it: "26.40×" or "5.63 µs". */
function valueText(q) {
  if (!Number.isFinite(q.value)) return 'n/a';
  return q.kind === 'max' ? `${fmt(q.value)} ${q.unit}` : `${fmt(q.value)}×`;
}

/** The headline's value on another runtime: "26.40×", with ✅/❌ if it has a goal; '' when that
 *  runtime has no results of this benchmark or not this ratio. */
function otherHeadline(result, other) {
  const twin = other.find((r) => r.benchmark === result.benchmark);
  if (!twin) return '';
  const q = headlineRatio(result);
  if (!q) return catalogue[result.benchmark]?.figure?.(twin) ?? '';
  const t = (twin.ratios ?? []).find((x) => x.name === q.name);
  if (!t) return '';
  return `${valueText(t)}${t.met == null ? '' : t.met ? ' ✅' : ' ❌'}`;
}

/** One summary row: the benchmark (linked to its section), its headline (and what it divides),
 *  its value on each runtime, goals met. */
function summaryRow(result, anchorBase, others) {
  const about = catalogue[result.benchmark];
  const name = `[${result.benchmark}](${anchorBase}#${anchor(result.benchmark)})`;
  const what = about?.summary ?? '';
  const beside = others.map((o) => otherHeadline(result, o.results));
  const q = headlineRatio(result);
  if (q) {
    const max = q.kind === 'max';
    const goal = q.goal == null ? '' : max ? `≤ ${num(q.goal)} ${q.unit}` : `≥ ${num(q.goal)}×`;
    const met = q.met == null ? '' : q.met ? '✅' : '❌';
    const formula = ratioFormula(q, result.results);
    return [name, what, formula ? `${q.name}: ${formula}` : q.name, valueText(q), ...beside, goal, met, goalsMet(result)];
  }
  const figure = about?.figure?.(result);
  if (figure) return [name, what, figure, '', ...beside, '', '', goalsMet(result)];
  const missing = about ? 'its headline is not in these results' : 'not in bench/catalogue.js';
  return [name, what, `(${missing})`, '', ...beside, '', '', goalsMet(result)];
}

/** The name of the runtime a result ran on: "Node 24.22.3" (results from before the runtime was
 *  recorded name Node's version only). */
function runtimeName(result) {
  const m = result.machine ?? {};
  if (m.runtime?.name && m.runtime?.version) return `${m.runtime.name} ${m.runtime.version}`;
  return m.node ? `Node ${String(m.node).replace(/^v/, '')}` : 'unknown runtime';
}

/** A column's name for a set of results: their runtime ("Node 20.20.2"), or its major line
 *  ("Node 20") if their versions differ, or `fallback` if even those differ. */
function runtimeLabel(results, fallback = 'value') {
  const names = [...new Set(results.map(runtimeName))];
  if (names.length === 1) return names[0];
  const majors = [...new Set(names.map((n) => n.replace(/^(\S+ \d+)\..*$/, '$1')))];
  return majors.length === 1 ? majors[0] : fallback;
}

/**
 * The table of one line per benchmark; links go to `anchorBase#<benchmark>`. `others`
 * ([{ alias, results }], the pinned runtimes' results) each add a column with the headline's
 * value on that runtime, after the machine Node's; with none the table is as it always was.
 */
function summaryTable(results, anchorBase = '', others = []) {
  const values = others.length ? [runtimeLabel(results), ...others.map((o) => runtimeLabel(o.results, o.alias))] : ['value'];
  return markdownTable(
    ['benchmark', 'compares', 'headline', ...values, 'goal', 'met', 'goals met in the run'],
    results.map((r) => summaryRow(r, anchorBase, others)),
    values.map((_, i) => 3 + i).concat(3 + values.length),
  );
}

// --- runtimes side by side -------------------------------------------------------------------

/** How far apart two runs of a ratio may be before the report lists them: 10%. */
const RUNTIME_DIFFERENCE = 0.1;

/**
 * Every ratio (and bound) measured in both `base` and `other` (results of the same benchmarks on
 * two runtimes, matched by benchmark and ratio name), and those whose value on `other` differs
 * from `base`'s by more than 10% of `base`'s: { compared, differing: [{ benchmark, name, base,
 * other, change, unit }] }, change being other ÷ base − 1.
 */
function runtimeDifferences(base, other, threshold = RUNTIME_DIFFERENCE) {
  let compared = 0;
  const differing = [];
  for (const b of base) {
    const o = other.find((r) => r.benchmark === b.benchmark);
    if (!o) continue;
    for (const q of b.ratios ?? []) {
      const t = (o.ratios ?? []).find((x) => x.name === q.name);
      if (!t || !(q.value > 0) || !(t.value > 0) || !Number.isFinite(q.value) || !Number.isFinite(t.value)) continue;
      compared++;
      const change = t.value / q.value - 1;
      if (Math.abs(change) > threshold) {
        differing.push({ benchmark: b.benchmark, name: q.name, base: q, other: t, change, formula: ratioFormula(q, b.results) });
      }
    }
  }
  return { compared, differing };
}

/** The machine a result ran on, without what changes from boot to boot (the kernel's build). */
function hardware(m = {}) {
  return [m.cpu, m.cores && `${m.cores} cores`, m.memoryGiB && `${m.memoryGiB} GiB`].filter(Boolean).join(', ');
}

/** BENCHMARKS.md's section comparing the machine Node's results with another runtime's. */
function runtimeSection(results, other) {
  const baseName = runtimeLabel(results);
  const otherName = runtimeLabel(other.results, other.alias);
  const { compared, differing } = runtimeDifferences(results, other.results);
  const out = [`## ${otherName} against ${baseName}`, ''];
  const both = results.filter((r) => other.results.some((o) => o.benchmark === r.benchmark)).map((r) => r.benchmark);
  const command = /^node\d+$/.test(other.alias) ? `\`npm run bench -- --node ${other.alias.slice('node'.length)}\` wrote ` : '';
  out.push(
    `${both.length} benchmark${both.length === 1 ? '' : 's'} ran on both (${command}bench/results/${other.alias}/). Each ratio is measured side by side within one runtime's run; below, the ratios ` +
      `whose value on ${otherName} differs from ${baseName}'s by more than ${RUNTIME_DIFFERENCE * 100}% ` +
      `(change = ${otherName} ÷ ${baseName} − 1): ${differing.length} of the ${compared} measured on both.`,
    '',
  );
  const machines = [...new Set([...results, ...other.results].filter((r) => both.includes(r.benchmark)).map((r) => hardware(r.machine)))];
  if (machines.length > 1) {
    out.push(`**Not the same machine:** these runs were on ${machines.join('; ')}. A difference below may be the machine's, not the runtime's.`, '');
  }
  if (differing.length) {
    const rows = differing.map((d) => [
      d.benchmark,
      d.name,
      valueText(d.base),
      valueText(d.other),
      `${d.change > 0 ? '+' : '−'}${Math.abs(d.change * 100).toFixed(0)}%`,
      d.formula ?? '',
    ]);
    out.push(markdownTable(['benchmark', 'ratio', baseName, otherName, 'change', 'computed as'], rows, [2, 3, 4]), '');
  }
  const load = (m) => {
    const l = m?.loadAverage;
    return l && Number.isFinite(l.atStart) && Number.isFinite(l.atEnd) ? `${l.atStart.toFixed(2)} → ${l.atEnd.toFixed(2)}` : '';
  };
  const when = (m) => (m?.date ? `${m.date.slice(0, 10)} ${m.date.slice(11, 16)} UTC` : '');
  const runs = other.results.map((r) => [r.benchmark, runtimeName(r), r.machine?.commit ? `\`${r.machine.commit}\`` : '', when(r.machine), load(r.machine)]);
  out.push(
    `<details><summary>the ${otherName} runs</summary>`,
    '',
    markdownTable(['benchmark', 'runtime', 'commit', 'finished', 'load average (1 min), start → end'], runs),
    '',
    '</details>',
    '',
  );
  return out.join('\n');
}

/** GitHub's anchor of a heading: lower case, spaces to hyphens, other punctuation dropped. */
function anchor(heading) {
  return String(heading).toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
}

// --- BENCHMARKS.md ---------------------------------------------------------------------------

/** The machine a result ran on, without what changes from run to run (date, commit, load). */
function machineIdentity(m = {}) {
  return [m.cpu, m.cores && `${m.cores} cores`, m.memoryGiB && `${m.memoryGiB} GiB`, m.os, m.node && `node ${m.node}`, m.rustc]
    .filter(Boolean)
    .join(', ');
}

/** Which machines the results ran on (named A, B, … when there are several), and each
 *  result's commit, date and load. */
function machinesSection(results) {
  const identities = [...new Set(results.map((r) => machineIdentity(r.machine)))];
  const several = identities.length > 1;
  const letter = (r) => String.fromCharCode(65 + identities.indexOf(machineIdentity(r.machine)));
  const out = ['## Machine', ''];
  if (several) out.push('The results ran on these machines:', '', ...identities.map((m, i) => `- ${String.fromCharCode(65 + i)}: ${m}`), '');
  else out.push(`Every result ran on ${identities[0]}.`, '');
  const load = (m) => {
    const l = m?.loadAverage;
    return l && Number.isFinite(l.atStart) && Number.isFinite(l.atEnd) ? `${l.atStart.toFixed(2)} → ${l.atEnd.toFixed(2)}` : '';
  };
  const rows = results.map((r) => [
    r.benchmark,
    ...(several ? [letter(r)] : []),
    r.machine?.commit ? `\`${r.machine.commit}\`` : '',
    r.machine?.date ? `${r.machine.date.slice(0, 10)} ${r.machine.date.slice(11, 16)} UTC` : '',
    load(r.machine),
  ]);
  const header = ['benchmark', ...(several ? ['machine'] : []), 'commit', 'finished', 'load average (1 min), start → end'];
  out.push(markdownTable(header, rows), '');
  return out.join('\n');
}

/** The BENCHMARKS.md section of one benchmark; `chart` is the SVG's path relative to the file. */
function section(result, chart) {
  const about = catalogue[result.benchmark];
  const out = [`## ${result.benchmark}`, ''];
  if (about?.measures) out.push(`**What it measures.** ${about.measures}`, '');
  const reproduce = [`\`npm run bench -- ${result.benchmark}\``];
  if (about?.reproduce) reproduce.push(about.reproduce);
  out.push(`**Reproduce:** ${reproduce.join('; ')}. The method in full: the header of \`bench/${result.benchmark}.js\`.`, '');
  if (chart) out.push(`![${result.benchmark}: medians with min–max whiskers, and ratios against their goals](${chart})`, '');
  if ((result.ratios ?? []).length) out.push(ratiosTable(result), '');
  // The figures behind the chart and the benchmark's own tables fold away: the chart and the
  // ratios are what a reader comes for.
  const details = (summary, table) => out.push(`<details><summary>${summary}</summary>`, '', table, '', '</details>', '');
  details('all results (median, min – max)', resultsTable(result));
  for (const [name, rows] of Object.entries(result.tables ?? {})) {
    const table = ownTable(rows);
    if (table) details(cell(name), table);
  }
  if ((result.notes ?? []).length) out.push(...result.notes.map((n) => `- ${n.replace(/\n/g, ' ')}`), '');
  out.push(`Ran on ${machineLine(result.machine)}.`, '');
  return out.join('\n');
}

const GENERATED = '<!-- Generated by `npm run bench:report` from bench/results/*.json: edits here are overwritten. -->';

/** BENCHMARKS.md's generated part: the summary, each other runtime against the machine's Node,
 *  the machine, a section per benchmark. */
function benchmarksBlock(results, charts = {}, others = []) {
  return [
    '',
    GENERATED,
    '',
    '## Summary',
    '',
    summaryTable(results, '', others),
    '',
    ...others.map((o) => runtimeSection(results, o)),
    machinesSection(results),
    ...results.map((r) => section(r, charts[r.benchmark])),
  ].join('\n');
}

// --- the README ------------------------------------------------------------------------------

/** The README's generated part: the summary table, each line linked to its section. The charts
 *  are BENCHMARKS.md's only: the README stays a short read (issue #34).
 *  `benchmarksLink` is BENCHMARKS.md's path relative to the README. */
function readmeBlock(results, benchmarksLink = 'BENCHMARKS.md', others = []) {
  const out = ['', GENERATED, '', summaryTable(results, benchmarksLink, others), ''];
  for (const o of others) {
    const heading = `${runtimeLabel(o.results, o.alias)} against ${runtimeLabel(results)}`;
    const { compared, differing } = runtimeDifferences(results, o.results);
    out.push(`${heading}: ${differing.length} of ${compared} ratios differ by more than ${RUNTIME_DIFFERENCE * 100}%, listed in [${benchmarksLink}](${benchmarksLink}#${anchor(heading)}).`, '');
  }
  out.push(`Every table and chart, the machine, what each benchmark measures and how to reproduce it: [${benchmarksLink}](${benchmarksLink}).`, '');
  return out.join('\n');
}

/** text with the part between the markers replaced by block, or null if a marker is missing. */
function replaceBetweenMarkers(text, block) {
  const start = text.indexOf(START);
  const end = text.indexOf(END, start + START.length);
  if (start < 0 || end < 0) return null;
  return text.slice(0, start + START.length) + block + text.slice(end);
}

// --- the command -----------------------------------------------------------------------------

function loadResults(dir) {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.json') && !f.endsWith('.quick.json') && fs.statSync(path.join(dir, f)).isFile())
    .sort()
    .map((f) => {
      const result = JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'));
      result.benchmark ??= f.slice(0, -'.json'.length);
      return result;
    });
}

/** The full results of each pinned runtime, from `dir`'s sub-folders named after it (node24/),
 *  in version order: [{ alias, results }], only those with results. */
function loadRuntimeResults(dir) {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort((a, b) => a.localeCompare(b, 'en', { numeric: true }))
    .map((alias) => ({ alias, results: loadResults(path.join(dir, alias)) }))
    .filter((o) => o.results.length > 0);
}

function option(args, name, fallback) {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] ? path.resolve(args[i + 1]) : fallback;
}

/** A new BENCHMARKS.md, for a checkout that has none: a title and the markers. */
const NEW_BENCHMARKS_FILE = `# corepool: benchmarks\n\n${START}${END}\n`;

/**
 * Writes the charts, then the generated parts of the README and of BENCHMARKS.md. Both files
 * are written or neither: if either lacks its markers, nothing but the charts is written and
 * the problem is returned, so the README's summary never disagrees with BENCHMARKS.md.
 * Returns { written: [paths], problem: null | string }.
 */
function writeReports({ resultsDir, readme, benchmarks, log = () => {} }) {
  const results = loadResults(resultsDir);
  if (results.length === 0) return { written: [], problem: `no results in ${resultsDir}: run \`npm run bench\` first` };
  const others = loadRuntimeResults(resultsDir);
  const written = [];
  const relative = (from, file) => path.relative(path.dirname(from), file).split(path.sep).join('/');
  const svgs = {};
  for (const r of results) {
    const svg = path.join(resultsDir, `${r.benchmark}.svg`);
    fs.writeFileSync(svg, renderSvg(r));
    svgs[r.benchmark] = svg;
    written.push(svg);
    log(`wrote ${path.relative(process.cwd(), svg)}`);
  }
  const chartsFrom = (file) => Object.fromEntries(Object.entries(svgs).map(([name, svg]) => [name, relative(file, svg)]));
  const read = (file, fallback) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : fallback);
  const updates = [
    [readme, replaceBetweenMarkers(read(readme, ''), readmeBlock(results, relative(readme, benchmarks), others))],
    [benchmarks, replaceBetweenMarkers(read(benchmarks, NEW_BENCHMARKS_FILE), benchmarksBlock(results, chartsFrom(benchmarks), others))],
  ];
  const unmarked = updates.filter(([, text]) => text === null).map(([file]) => path.basename(file));
  if (unmarked.length) {
    return { written, problem: `${unmarked.join(' and ')} lack${unmarked.length === 1 ? 's' : ''} the ${START} … ${END} markers: neither file was changed` };
  }
  for (const [file, text] of updates) {
    fs.writeFileSync(file, text);
    written.push(file);
    log(`updated ${path.relative(process.cwd(), file)}`);
  }
  return { written, problem: null };
}

function main(args) {
  const { problem } = writeReports({
    resultsDir: option(args, '--results', path.join(__dirname, 'results')),
    readme: option(args, '--readme', path.join(__dirname, '..', 'README.md')),
    benchmarks: option(args, '--benchmarks', path.join(__dirname, '..', 'BENCHMARKS.md')),
    log: (msg) => console.log(`[report] ${msg}`),
  });
  if (problem) {
    console.error(`[report] ${problem}`);
    process.exitCode = 1;
  }
}

if (require.main === module) main(process.argv.slice(2));

module.exports = {
  renderSvg,
  panels,
  resultsTable,
  ratiosTable,
  ownTable,
  section,
  summaryTable,
  runtimeDifferences,
  runtimeSection,
  runtimeLabel,
  goalsMet,
  anchor,
  machinesSection,
  readmeBlock,
  benchmarksBlock,
  replaceBetweenMarkers,
  loadResults,
  loadRuntimeResults,
  writeReports,
};
