'use strict';
// The JavaScript linter of `npm test`: ESLint's recommended rules and a few that catch what
// reviews here have caught by hand. Zero warnings: every finding is an error.
const js = require('@eslint/js');
const globals = require('globals');

const TIMERS = "use lib/timer.js: Node's timers fire at once for delays of 2^31 ms or more";
const TIMER_GLOBALS = ['setTimeout', 'setInterval'].map((name) => ({ name, message: `${TIMERS} (${name})` }));
const TIMER_SYNTAX = [
  { selector: 'MemberExpression[property.name=/^set(Timeout|Interval)$/]', message: TIMERS },
  { selector: "CallExpression[callee.name='require'][arguments.0.value=/^(node:)?timers/]", message: TIMERS },
  { selector: "MemberExpression[object.name='AbortSignal'][property.name='timeout']", message: TIMERS },
];
const RESPOND_SYNTAX = [
  {
    selector: "CallExpression[callee.property.type='Identifier'][callee.property.name='respond']",
    message: "use respond() of lib/nats/reply.js: a message's reply subject may point into the service's namespace or at system subjects",
  },
];

/**
 * Config objects for lib/: each guard's restrictions apply to every file of lib/ but its own
 * module, which alone may do what the others may not.
 */
function guarded(guards) {
  const rules = (list) => ({
    'no-restricted-globals': ['error', ...list.flatMap((g) => g.globals)],
    'no-restricted-syntax': ['error', ...list.flatMap((g) => g.syntax)],
  });
  return [
    { files: ['lib/**/*.js'], ignores: guards.map((g) => g.file), rules: rules(guards) },
    ...guards.map((g) => ({ files: [g.file], rules: rules(guards.filter((other) => other !== g)) })),
  ];
}

module.exports = [
  { ignores: ['node_modules/', 'target/', 'bench/results/', 'bench/peers/build/'] },
  js.configs.recommended,
  {
    files: ['**/*.js'],
    languageOptions: {
      ecmaVersion: 2024,
      sourceType: 'commonjs',
      globals: { ...globals.node },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      'no-unused-vars': ['error', { args: 'after-used', argsIgnorePattern: '^_', caughtErrors: 'none' }],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      'no-var': 'error',
      'prefer-const': 'error',
      'no-throw-literal': 'error',
      'no-return-await': 'error',
      'object-shorthand': 'error',
    },
  },
  // lib/ makes every timer with lib/timer.js and publishes to a message's reply subject only
  // through lib/nats/reply.js: each module is the one place allowed to do what it guards.
  ...guarded([
    { file: 'lib/timer.js', globals: TIMER_GLOBALS, syntax: TIMER_SYNTAX },
    { file: 'lib/nats/reply.js', globals: [], syntax: RESPOND_SYNTAX },
  ]),
  {
    files: ['**/*.mjs'],
    languageOptions: { sourceType: 'module', globals: { ...globals.node } },
  },
  {
    files: ['__test__/**/*.js'],
    languageOptions: { globals: { ...globals.jest } },
  },
];
