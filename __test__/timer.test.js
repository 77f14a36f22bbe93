'use strict';
// lib/timer.js: the one maker of lib/'s timers. Node's own fire after 1 ms for any delay of
// 2^31 ms or more; these wait as long as they are told, Infinity meaning never. The lint rule
// of eslint.config.js keeps raw setTimeout/setInterval out of the rest of lib/.

const path = require('node:path');
const { Linter } = require('eslint');
const lintConfig = require('../eslint.config.js');
const { after, every, sleep } = require('../lib/timer.js');

test('delays of 2^31 ms or more, fractions past the limit and Infinity do not fire before a short one', async () => {
  const fired = [];
  const long = [2147483647.5, 2 ** 31, 2 ** 53, Infinity].map((ms) => after(ms, () => fired.push(ms)));
  await new Promise((resolve) => after(20, resolve));
  await sleep(5);
  expect(fired).toEqual([]);
  for (const timer of long) timer.clear();
});

test('short timers fire in order of their delays; clear() stops one; every() repeats until cleared', async () => {
  const fired = [];
  after(30, () => fired.push(30));
  after(1, () => fired.push(1));
  after(10, () => fired.push('cleared')).clear();
  await sleep(60);
  expect(fired).toEqual([1, 30]);
  let ticks = 0;
  let timer;
  await new Promise((resolve) => {
    timer = every(1, () => {
      if (++ticks === 3) resolve();
    });
  });
  timer.clear();
  await sleep(20);
  expect(ticks).toBe(3);
});

test('a delay that is not a number is a TypeError, not a timer that fires at once', () => {
  expect(() => after(NaN, () => {})).toThrow(TypeError);
  expect(() => after('5', () => {})).toThrow(TypeError);
});

test('the lint rule refuses raw timers anywhere in lib/ but lib/timer.js', () => {
  const root = path.join(__dirname, '..');
  const linter = new Linter({ cwd: root });
  const lint = (code, file) => linter.verify(`'use strict';\n${code}\n`, lintConfig, { filename: path.join(root, file) });
  const raw = [
    'setTimeout(() => {}, 5);',
    'setInterval(() => {}, 5);',
    'globalThis.setTimeout(() => {}, 5);',
    "require('node:timers').setTimeout(() => {}, 5);",
    "require('timers/promises');",
    'AbortSignal.timeout(5);',
  ];
  for (const code of raw) {
    const rules = lint(code, 'lib/nats/probe.js').map((m) => m.ruleId);
    expect([code, rules.length > 0 && rules.every((rule) => /^no-restricted-(globals|syntax)$/.test(rule))]).toEqual([code, true]);
    expect([code, lint(code, 'lib/timer.js')]).toEqual([code, []]);
  }
});
