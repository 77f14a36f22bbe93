'use strict';
// corepool/fastify: the engine object @fastify/view takes as `engine: { mustache }`. Its
// Mustache path reads the template and the partials it is given (the `partials` option: names
// to files), then returns `engine.render(template, data, partials)` from an async function, so
// a Promise is awaited like a string. The render runs on the pool; @fastify/view sets the
// Content-Type (text/html) itself, so the output goes out as a Buffer by default: the main
// thread never builds a string of it.

const { Pool } = require('./pool.js');
const { describe } = require('./errors.js');

/**
 * `mustacheEngine({ pool?, output? })`: `{ render(template, data, partials) }`.
 * - `pool`: the Pool to render on (default `Pool.shared()`).
 * - `output`: `'buffer'` (default) or `'string'`.
 */
function mustacheEngine(options = {}) {
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`corepool/fastify: mustacheEngine() takes an options object, got ${describe(options)}`);
  }
  const { pool = Pool.shared(), output = 'buffer' } = options;
  if (!(pool instanceof Pool)) throw new TypeError(`corepool/fastify: options.pool must be a corepool Pool, got ${describe(pool)}`);
  if (output !== 'string' && output !== 'buffer') throw new TypeError(`corepool/fastify: options.output must be 'string' or 'buffer', got ${describe(output)}`);
  const config = output === 'buffer' ? { output } : undefined;
  return {
    render(template, data, partials) {
      return pool.render(template, data, partials ?? {}, config);
    },
  };
}

module.exports = { mustacheEngine };
