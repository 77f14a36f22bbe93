'use strict';
// The JavaScript linter of `npm test`: ESLint's recommended rules and a few that catch what
// reviews here have caught by hand. Zero warnings: every finding is an error.
const js = require('@eslint/js');
const globals = require('globals');

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
  {
    // Node's timers fire at once for delays of 2^31 ms or more: lib/ makes every timer with
    // lib/timer.js, which takes any delay (Infinity: never).
    files: ['lib/**/*.js'],
    ignores: ['lib/timer.js'],
    rules: {
      'no-restricted-globals': ['error', ...['setTimeout', 'setInterval'].map((name) => ({ name, message: `use after()/every()/sleep() of lib/timer.js, not ${name}: Node's timers fire at once for delays of 2^31 ms or more` }))],
      'no-restricted-syntax': [
        'error',
        { selector: "MemberExpression[property.name=/^set(Timeout|Interval)$/]", message: "use lib/timer.js: Node's timers fire at once for delays of 2^31 ms or more" },
        { selector: "CallExpression[callee.name='require'][arguments.0.value=/^(node:)?timers/]", message: "use lib/timer.js: Node's timers fire at once for delays of 2^31 ms or more" },
      ],
    },
  },
  {
    files: ['**/*.mjs'],
    languageOptions: { sourceType: 'module', globals: { ...globals.node } },
  },
  {
    files: ['__test__/**/*.js'],
    languageOptions: { globals: { ...globals.jest } },
  },
];
