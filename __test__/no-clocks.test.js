'use strict';
// Tests never assert wall-clock upper bounds (issue #28): on a busy 2-core machine "it took
// under N ms" fails however generous N is ("waited 298 ms", limit 2 ms + 250 ms). A test asserts
// an ordering or a count instead (__test__/helpers/order.js); timings belong in bench/. This scans the
// tests' source for an expectation that bounds an elapsed time from above, and names each one.
//
// What it looks for, in each expect(...) of __test__/**/*.js (comments left out):
// - its argument reads a clock (Date.now, performance.now, process.hrtime, process.cpuUsage) or
//   names a duration (ms, elapsed, took, waited, or a name ending in Ms, _ms, Elapsed, Waited,
//   Took, Duration), and the matcher is toBeLessThan / toBeLessThanOrEqual;
// - its argument compares such a read or name with `<` / `<=` (expect([x, ms < LIMIT])...);
// - an `if` on a clock read that decides whether an expectation runs at all;
// - anywhere, a ternary whose condition compares such a read or name (slowest < LIMIT ? 'on
//   time' : ...): a bound turned into a value that an expectation then compares.
// Lower bounds ("gave up no earlier than its timeout") are logically guaranteed and allowed, as
// are hang guards, which throw rather than expect. There is no allow-list: none is needed. It
// is a scan of text, not a proof: a duration under another name (an array `times` of ms) or
// inside a template string's ${} escapes it.
const fs = require('node:fs');
const path = require('node:path');

const CLOCK = /\b(?:Date\.now|performance\.now|hrtime|cpuUsage)\b/;
const DURATION_NAME = /^(?:ms|elapsed|took|waited|duration)$|(?:Ms|_ms|MS|Elapsed|Waited|Took|Duration)$/;
const UPPER = /^\s*\.\s*(?:not\s*\.\s*)?toBeLessThan(?:OrEqual)?\s*\(/;

/** Source without comments and without the text of strings and regular expressions (each
 *  replaced by blanks, so offsets and line numbers hold): only code is scanned. */
function withoutComments(text) {
  let out = '';
  let quote = null;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote !== null) {
      if (c === '\\') {
        out += '  ';
        i++;
      } else if (c === quote) {
        out += c;
        quote = null;
      } else out += c === '\n' ? c : ' ';
      continue;
    }
    if (c === '/' && text[i + 1] === '/') {
      while (i < text.length && text[i] !== '\n') {
        out += ' ';
        i++;
      }
      out += text[i] ?? '';
      continue;
    }
    if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      const stop = end === -1 ? text.length : end + 2;
      out += text.slice(i, stop).replace(/[^\n]/g, ' ');
      i = stop - 1;
      continue;
    }
    // A regular expression literal may hold a quote or "//": skip it whole (a `/` after an
    // operator or an opening bracket starts one; after a value it divides).
    if (c === '/' && /[=(,:;!&|?{}[\]\n]\s*$|return\s*$|^\s*$/.test(out.slice(-40))) {
      let j = i + 1;
      let inClass = false;
      while (j < text.length && text[j] !== '\n' && (inClass || text[j] !== '/')) {
        if (text[j] === '\\') j++;
        else if (text[j] === '[') inClass = true;
        else if (text[j] === ']') inClass = false;
        j++;
      }
      out += text.slice(i, j + 1).replace(/[^\n]/g, ' ');
      i = j;
      continue;
    }
    if (c === "'" || c === '"' || c === '`') quote = c;
    out += c;
  }
  return out;
}

/** The text from `open` (an opening parenthesis) to its match, and the index after it. */
function balanced(text, open) {
  let depth = 0;
  let quote = null;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (quote !== null) {
      if (c === '\\') i++;
      else if (c === quote) quote = null;
    } else if (c === "'" || c === '"' || c === '`') quote = c;
    else if (c === '(') depth++;
    else if (c === ')' && --depth === 0) return [text.slice(open + 1, i), i + 1];
  }
  return [text.slice(open + 1), text.length];
}

const identifiers = (text) => text.match(/[A-Za-z_$][\w$]*/g) ?? [];
const timeLike = (text) => CLOCK.test(text) || identifiers(text).some((name) => DURATION_NAME.test(name));

/** `{ line, text }` of each wall-clock upper bound that `source` asserts. */
function clockBounds(source) {
  const text = withoutComments(source);
  const found = [];
  const lineOf = (at) => text.slice(0, at).split('\n').length;
  for (const m of text.matchAll(/\bexpect\s*\(/g)) {
    const [arg, after] = balanced(text, m.index + m[0].length - 1);
    if (!timeLike(arg)) continue;
    const bounded = UPPER.test(text.slice(after, after + 80));
    // A comparison inside the argument, with a clock read or a duration on one side of it.
    const compared = arg.split(/<=?(?!=)/).length > 1 && arg.split(/<=?(?!=)/).some((side, i, sides) => i < sides.length - 1 && timeLike(side.split(/[,[{(]/).pop()));
    if (bounded || compared) found.push({ line: lineOf(m.index), text: source.split('\n')[lineOf(m.index) - 1].trim() });
  }
  for (const m of text.matchAll(/\?(?![.?])/g)) {
    // The condition before `?`: back to what starts an expression.
    const before = text.slice(Math.max(0, m.index - 200), m.index);
    const condition = before.slice(Math.max(...['(', ',', '=', ':', '{', ';', '?', '\n'].map((c) => before.lastIndexOf(c))) + 1);
    if (/[<>]/.test(condition.replace(/=>/g, '')) && timeLike(condition)) found.push({ line: lineOf(m.index), text: source.split('\n')[lineOf(m.index) - 1].trim() });
  }
  for (const m of text.matchAll(/\bif\s*\(/g)) {
    const [cond, after] = balanced(text, m.index + m[0].length - 1);
    if (CLOCK.test(cond) && /^\s*\{?\s*expect\s*\(/.test(text.slice(after, after + 80))) {
      found.push({ line: lineOf(m.index), text: source.split('\n')[lineOf(m.index) - 1].trim() });
    }
  }
  return found;
}

/** Every .js file under `dir`. */
function jsFiles(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return jsFiles(p);
    return e.name.endsWith('.js') ? [p] : [];
  });
}

test('the scan finds the shapes of wall-clock upper bounds, and leaves orderings, lower bounds and hang guards alone', () => {
  const bad = [
    'expect(Date.now() - started).toBeLessThan(500);',
    'expect(performance.now() - t0)\n  .toBeLessThanOrEqual(1000);',
    'expect(ms).toBeLessThan(SOON);',
    'expect(Math.max(worker.waitedMs, asyncMs)).toBeLessThan(timeoutMs + slackMs);',
    'expect(r.elapsed).not.toBeLessThan(5);',
    'expect([echo, echoMs < SOON]).toEqual([1, true]);',
    'expect(process.cpuUsage(before).user / 1000).toBeLessThan(60);',
    'if (Date.now() - started > 20) expect(ticks).toBeGreaterThan(0);',
    "outcomes.push({ side, slowest: slowest < timeoutMs + slackMs ? 'on time' : `${slowest} ms` });",
  ];
  for (const source of bad) expect([source, clockBounds(source).length]).toEqual([source, 1]);
  const fine = [
    'expect(performance.now() - t).toBeGreaterThanOrEqual(29); // a lower bound',
    'expect(items.length).toBeLessThan(3);',
    'expect(await first(call, sleepEnd(LONG))).toBe(1);',
    "if (Date.now() > deadline) throw new Error('never happened');",
    'while (performance.now() < until);',
    '// expect(Date.now() - started).toBeLessThan(500);',
    "expect('expect(ms).toBeLessThan(1)').toMatch(/ms < 2/);",
    'expect(counter[0]).toBeLessThan(1e9);',
    'const n = a?.b ?? (x < 3 ? 1 : 2);',
    'const x = y => (y.ms ? 1 : 2);',
  ];
  for (const source of fine) expect([source, clockBounds(source)]).toEqual([source, []]);
});

test('no test asserts a wall-clock upper bound (issue #28)', () => {
  const self = path.join(__dirname, 'no-clocks.test.js'); // its examples above are such bounds, in strings
  const scanned = jsFiles(__dirname).filter((file) => file !== self);
  // Helpers and fixtures too, wherever they sit under __test__/.
  for (const dir of ['helpers', 'fixtures']) expect([dir, scanned.some((file) => file.startsWith(path.join(__dirname, dir, path.sep)))]).toEqual([dir, true]);
  const found = scanned
    .flatMap((file) => clockBounds(fs.readFileSync(file, 'utf8')).map(({ line, text }) => `${path.relative(path.dirname(__dirname), file)}:${line}: ${text}`));
  expect(found).toEqual([]);
});

// The Rust tests, the same rule: an assert! that bounds an elapsed time from above
// (`t.elapsed() < timeout + SLACK`). Counts, orderings and hang guards (a recv_timeout that
// panics when nothing comes) are what they assert instead (src/shm/fair_mutex.rs, pool/tests.rs).
function rustClockBounds(source) {
  const text = source.replace(/\/\/[^\n]*/g, (c) => ' '.repeat(c.length));
  const found = [];
  for (const m of text.matchAll(/\bassert!\s*\(/g)) {
    let depth = 0;
    let end = m.index + m[0].length - 1;
    for (let inString = false; end < text.length; end++) {
      const c = text[end];
      if (inString) {
        if (c === '\\') end++;
        else if (c === '"') inString = false;
      } else if (c === '"') inString = true;
      else if (c === '(') depth++;
      else if (c === ')' && --depth === 0) break;
    }
    const arg = text.slice(m.index + m[0].length, end).replace(/"(?:[^"\\]|\\.)*"/g, '""');
    // elapsed() or a clock read on the smaller side of a `<` / `<=` (each side of && and ||
    // apart; the assert's message, after its first top-level comma, is not looked at).
    const condition = arg.split(/,(?![^(]*\))/)[0];
    const clock = /elapsed\(\)|Instant::now\(\)/;
    const upper = condition.split(/&&|\|\|/).some((part) => {
      const lt = part.split(/<=?/);
      const gt = part.split(/>=?/);
      return (lt.length === 2 && clock.test(lt[0])) || (gt.length === 2 && clock.test(gt[1]));
    });
    if (upper) {
      found.push({ line: text.slice(0, m.index).split('\n').length, text: source.split('\n')[text.slice(0, m.index).split('\n').length - 1].trim() });
    }
  }
  return found;
}

function rsFiles(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return rsFiles(p);
    return e.name.endsWith('.rs') ? [p] : [];
  });
}

test('the Rust scan finds elapsed-time upper bounds and leaves lower bounds and counts alone', () => {
  const bad = [
    'assert!(t.elapsed() < timeout + SLACK, "waited {:?}", t.elapsed());',
    'assert!(\n    started.elapsed() < Duration::from_millis(2000),\n    "timeout did not stop the sleep"\n);',
    'assert!(MAX_SLEEP * 50 > t.elapsed());',
  ];
  for (const source of bad) expect([source, rustClockBounds(source).length]).toEqual([source, 1]);
  const fine = [
    'assert!(t.elapsed() >= Duration::from_millis(30));',
    'assert_eq!(waits, k + 1, "k = {k}");',
    'assert!(deadline > taken && deadline <= Instant::now() + Duration::from_millis(20));',
    '// assert!(t.elapsed() < limit);',
    'assert!(nap <= left, "a nap of {nap:?} with {left:?} left (elapsed() < x)");',
  ];
  for (const source of fine) expect([source, rustClockBounds(source)]).toEqual([source, []]);
});

test('no Rust test asserts a wall-clock upper bound (issue #28)', () => {
  const src = path.join(__dirname, '..', 'src');
  const found = rsFiles(src).flatMap((file) => rustClockBounds(fs.readFileSync(file, 'utf8')).map(({ line, text }) => `${path.relative(path.dirname(__dirname), file)}:${line}: ${text}`));
  expect(found).toEqual([]);
});
