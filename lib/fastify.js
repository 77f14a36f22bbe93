'use strict';
// corepool/fastify: the engine object @fastify/view takes as `engine: { mustache }`. Its
// Mustache path reads the template and the partials it is given (the `partials` option: names
// to files), then returns `engine.render(template, data, partials)` from an async function, so
// a Promise is awaited like a string. The render runs on the pool; @fastify/view sets the
// Content-Type (text/html) itself, so the output goes out as a Buffer by default: the main
// thread never builds a string of it.
//
// @fastify/view hands over the template's text, not its file: a parse error names a partial by
// its name, but the view's file only when the engine is told @fastify/view's `root`. Then, on
// such an error (and only then), the engine looks in that folder for the file that holds the
// view's text and renders again with its name, so that the error says which file it is (or,
// for a partial's error, which view rendered it).

const fs = require('node:fs');
const path = require('node:path');
const { Pool } = require('./pool.js');
const { RpcError, describe } = require('./errors.js');
const { viewError } = require('./view-errors.js');

/** Whether `e` is a parse error (of the view or of a partial) that does not name the view. */
function unnamedParseError(e) {
  return e instanceof RpcError && e.data !== null && typeof e.data === 'object' && e.data.template === null && typeof e.data.line === 'number';
}

/** The path from `root` (with `/`) of the first file under it, in name order, whose text is `template`; or null. */
async function fileHolding(root, template) {
  let entries;
  try {
    entries = await fs.promises.readdir(root, { recursive: true, withFileTypes: true });
  } catch {
    return null;
  }
  const length = Buffer.byteLength(template);
  const files = entries
    .filter((entry) => entry.isFile() || entry.isSymbolicLink())
    .map((entry) => path.join(entry.parentPath ?? entry.path, entry.name))
    .sort();
  for (const file of files) {
    try {
      if ((await fs.promises.stat(file)).size !== length) continue;
      if ((await fs.promises.readFile(file, 'utf8')) === template) return path.relative(root, file).split(path.sep).join('/');
    } catch {
      // Gone or unreadable since the folder was listed: not this one.
    }
  }
  return null;
}


/**
 * `mustacheEngine({ pool?, output?, root? })`: `{ render(template, data, partials) }`.
 * - `pool`: the Pool to render on (default `Pool.shared()`).
 * - `output`: `'buffer'` (default) or `'string'`.
 * - `root`: the folder @fastify/view reads views from (its `root` option): a parse error of a
 *   view then names its file, by its path from there.
 */
function mustacheEngine(options = {}) {
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`corepool/fastify: mustacheEngine() takes an options object, got ${describe(options)}`);
  }
  const { pool = Pool.shared(), output = 'buffer', root } = options;
  if (!(pool instanceof Pool)) throw new TypeError(`corepool/fastify: options.pool must be a corepool Pool, got ${describe(pool)}`);
  if (output !== 'string' && output !== 'buffer') throw new TypeError(`corepool/fastify: options.output must be 'string' or 'buffer', got ${describe(output)}`);
  if (root !== undefined && typeof root !== 'string') throw new TypeError(`corepool/fastify: options.root must be a folder path, got ${describe(root)}`);
  const config = output === 'buffer' ? { output } : undefined;

  /** A failed render's error, naming the view's file when `root` holds it. */
  async function explained(e, template, data, partials) {
    const unknown = () => null;
    if (root === undefined || !unnamedParseError(e) || typeof template !== 'string') return viewError(e, unknown);
    const name = await fileHolding(root, template);
    if (name === null) return viewError(e, unknown);
    // The view's file (a partial's is @fastify/view's to know).
    const fileOf = (place) => (place.partial === null ? path.resolve(root, ...name.split('/')) : null);
    try {
      await pool.render(template, data, partials, { ...config, name });
    } catch (named) {
      return viewError(named, fileOf);
    }
    return viewError(e, unknown);
  }

  return {
    render(template, data, partials) {
      return pool.render(template, data, partials ?? {}, config).catch(async (e) => {
        throw await explained(e, template, data, partials ?? {});
      });
    },
  };
}

module.exports = { mustacheEngine };
