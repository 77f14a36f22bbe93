'use strict';
// Errors that point at the user's code: a task file that cannot be loaded names the place
// (file, line, column, code frame); MethodNotFound lists the file's exports and suggests the
// closest name; an error thrown by a task keeps its identity.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Pool, RpcError } = require('..');

const C = RpcError.codes;
const task = (name) => path.join(__dirname, 'fixtures', 'tasks', name);

// Files that do not parse are written here (the linter would refuse them as fixtures).
let dir;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'corepool-task-errors-'));
  fs.writeFileSync(path.join(dir, 'syntax-error.js'), "'use strict';\n// Does not parse: line 4, column 16.\nexports.ok = () => 1;\nconst broken = ;\n");
  fs.writeFileSync(path.join(dir, 'requires-broken.js'), "'use strict';\nexports.ok = () => 1;\nrequire('./syntax-error.js');\n");
  fs.writeFileSync(path.join(dir, 'syntax-error.mjs'), '// Does not parse: line 3, column 16.\nexport const ok = () => 1;\nconst broken = ;\n');
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** The load error, as the calls, ready() and the 'error' event see it (all three must agree). */
async function loadError(file) {
  const pool = new Pool({ filename: file, threads: 1 });
  const heard = new Promise((resolve) => pool.once('error', resolve));
  const [call, ready] = await Promise.allSettled([pool.exec('ok'), pool.ready()]);
  const event = await heard;
  await pool.close();
  for (const e of [call.reason, ready.reason]) {
    expect(e).toBeInstanceOf(RpcError);
    expect([e.code, e.message, e.data]).toEqual([event.code, event.message, event.data]);
  }
  expect(event.code).toBe(C.InternalError);
  return event;
}

describe('a task file that cannot be loaded', () => {
  test('a CommonJS syntax error names the file, line and column, with the code frame', async () => {
    const file = path.join(dir, 'syntax-error.js');
    const e = await loadError(file);
    expect(e.message).toBe(
      `corepool: the task file ${file} could not be loaded: SyntaxError: Unexpected token ';' (line 4, column 16)\n\n` +
        `${file}:4\nconst broken = ;\n               ^\n`,
    );
    expect(e.data).toEqual({ file, line: 4, column: 16 });
  });

  test('a syntax error in a module the task file requires names that module', async () => {
    const file = path.join(dir, 'requires-broken.js');
    const broken = path.join(dir, 'syntax-error.js');
    const e = await loadError(file);
    expect(e.message).toBe(
      `corepool: the task file ${file} could not be loaded: SyntaxError: Unexpected token ';' (${broken}, line 4, column 16)\n\n` +
        `${broken}:4\nconst broken = ;\n               ^\n`,
    );
    expect(e.data).toEqual({ file: broken, line: 4, column: 16 });
  });

  test('an ES module syntax error names the file, line and column, with the code frame', async () => {
    const file = path.join(dir, 'syntax-error.mjs');
    const e = await loadError(file);
    expect(e.message).toBe(
      `corepool: the task file ${file} could not be loaded: SyntaxError: Unexpected token ';' (line 3, column 16)\n\n` +
        `${file}:3\nconst broken = ;\n               ^\n`,
    );
    expect(e.data).toEqual({ file, line: 3, column: 16 });
  });

  test('a throw while loading (CommonJS and ES module) names where it was thrown, with the code frame', async () => {
    const cjs = task('broken.js');
    const e = await loadError(cjs);
    expect(e.message).toBe(
      `corepool: the task file ${cjs} could not be loaded: this task file is broken (line 3, column 7)\n\n` +
        `${cjs}:3\nthrow new Error('this task file is broken');\n      ^\n`,
    );
    expect(e.data).toEqual({ file: cjs, line: 3, column: 7 });
    const esm = task('throws-at-load.mjs');
    const m = await loadError(esm);
    expect(m.message).toBe(
      `corepool: the task file ${esm} could not be loaded: RangeError: no configuration found (line 3, column 7)\n\n` +
        `${esm}:3\nthrow new RangeError('no configuration found');\n      ^\n`,
    );
    expect(m.data).toEqual({ file: esm, line: 3, column: 7 });
  });

  test('a missing file and a file exporting no function say so, and that there is no position to give', async () => {
    const missing = task('does-not-exist.js');
    const e = await loadError(missing);
    expect(e.message).toBe(`corepool: the task file ${missing} could not be loaded: there is no such file (no line or column to show)`);
    expect(e.data).toEqual({ file: missing });
    const values = task('no-function.js');
    const v = await loadError(values);
    expect(v.message).toBe(
      `corepool: the task file ${values} could not be loaded: it exports no function (its exports: limit, name) (no line or column to show)`,
    );
    expect(v.data).toEqual({ file: values });
  });
});

describe('MethodNotFound on a task-file pool', () => {
  test("lists the file's exports and suggests the closest name, also for calls made before it loaded", async () => {
    const file = task('primes.js');
    const pool = new Pool({ filename: file, threads: 1 });
    const early = await pool.exec('prime', 10).catch((e) => e);
    const hint = `Method not found: "prime" (the task file ${file} exports: primes, isPrime; did you mean "primes"?)`;
    expect(early).toBeInstanceOf(RpcError);
    expect([early.code, early.message]).toEqual([C.MethodNotFound, hint]);
    expect((await pool.exec('prime', 10).catch((e) => e)).message).toBe(hint);
    expect((await pool.exec('isprime', 7).catch((e) => e)).message).toMatch(/did you mean "isPrime"\?\)$/);
    // Nothing close: the exports, and no guess.
    const far = await pool.exec('factorial', 10).catch((e) => e);
    expect([far.code, far.message]).toEqual([C.MethodNotFound, `Method not found: "factorial" (the task file ${file} exports: primes, isPrime)`]);
    expect(await pool.exec('primes', 4)).toEqual([2, 3, 5, 7]);
    await pool.close();
  });

  test('lists at most 20 exports', async () => {
    const file = task('many-exports.js');
    const pool = new Pool({ filename: file, threads: 1 });
    const e = await pool.exec('nothing-like-these').catch((x) => x);
    const first20 = Array.from({ length: 20 }, (_, i) => `task${i}`).join(', ');
    expect([e.code, e.message]).toEqual([C.MethodNotFound, `Method not found: "nothing-like-these" (the task file ${file} exports: ${first20}, … (5 more))`]);
    await pool.close();
  });
});

describe('an error thrown by a task keeps its identity', () => {
  const file = task('throws.js');
  let pool;
  beforeAll(() => {
    pool = new Pool({ filename: file, threads: 1 });
  });
  afterAll(() => pool.close());

  test('a built-in error class: instanceof, name, message, stack in the task file, code, own data fields, cause', async () => {
    const e = await pool.exec('typeError').catch((x) => x);
    expect(e).toBeInstanceOf(TypeError);
    expect(e).not.toBeInstanceOf(RpcError);
    expect([e.name, e.message, e.code]).toEqual(['TypeError', 'expected a number', 'ERR_NOT_A_NUMBER']);
    expect(e.details).toEqual({ got: 'string', path: ['a', 0] });
    expect('callback' in e).toBe(false);
    expect(e.stack).toMatch(/^TypeError: expected a number\n/);
    expect(e.stack).toContain(`${file}:12:13`);
    // corepool's own frames (the worker's serving loop) are cut: the stack ends in the user's code.
    expect(e.stack).not.toContain(path.join('lib', 'serve.js'));
    expect(e.stack.split('\n').at(-1)).toContain(file);
    expect(e.cause).toBeInstanceOf(RangeError);
    expect([e.cause.name, e.cause.message]).toEqual(['RangeError', 'too big']);
    expect(e.cause.stack).toContain(`${file}:12:57`);
    expect(e.cause.cause).toEqual({ limit: 10 });
  });

  test("a class of the user's: its name, message, stack and fields (an async rejection too)", async () => {
    const e = await pool.exec('custom').catch((x) => x);
    expect(e).toBeInstanceOf(Error);
    expect(e).not.toBeInstanceOf(RpcError);
    expect([e.name, e.message, e.field]).toEqual(['ValidationError', 'name is required', 'name']);
    expect(e.stack).toMatch(/^ValidationError: name is required\n/);
    expect(e.stack).toContain(`${file}:21:9`);
  });

  test('a chain of causes is kept to a bounded depth, outermost first', async () => {
    const e = await pool.exec('deep').catch((x) => x);
    const messages = [];
    for (let c = e; c instanceof Error; c = c.cause) messages.push(c.message);
    expect(messages.length).toBeGreaterThan(5);
    expect(messages.length).toBeLessThan(31);
    expect(messages).toEqual(Array.from({ length: messages.length }, (_, i) => `level ${30 - i}`));
  });

  test('a cause that cannot be sent is left out; the error still arrives', async () => {
    const e = await pool.exec('unsendableCause').catch((x) => x);
    expect([e.constructor, e.message, 'cause' in e]).toEqual([Error, 'with a Map as cause', false]);
  });

  test("a thrown non-Error, and corepool's own errors, stay RpcErrors with their codes", async () => {
    const p = await pool.exec('plain').catch((x) => x);
    expect(p).toBeInstanceOf(RpcError);
    expect([p.code, p.message, p.data]).toEqual([C.CommandFailed, 'plain', { value: 'plain' }]);
    const m = await pool.exec('nope').catch((x) => x);
    expect([m.constructor, m.code]).toEqual([RpcError, C.MethodNotFound]);
  });
});
