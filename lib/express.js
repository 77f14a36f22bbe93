'use strict';
// corepool/express: an Express `app.engine()` callback that renders Mustache files on the pool,
// as mustache-express does on the main thread. Templates and partials are read from disk once
// and kept; a watcher on each folder drops what it holds when anything in it changes.
//
// Partials are every file with the engine's extension under the partials folder (the app's
// views folder unless told), named by their path from it without the extension: `{{> header}}`,
// `{{> layouts/nav}}`.

const fs = require('node:fs');
const path = require('node:path');
const { Pool } = require('./pool.js');
const { describe } = require('./errors.js');
const { viewError } = require('./view-errors.js');

/**
 * A folder the engine reads: the partials it holds (`.ext` files), read once and kept while a
 * watcher on it hears nothing. A watcher may go deaf without a word (its folder removed and made
 * again, moved away): so every change it reports ends it, and the next read starts a new one
 * before reading. A folder that cannot be watched (gone, or no recursive watch) is never kept.
 */
class Folder {
  /** `deep`: watch the folders inside it too (the partials folder; a view's folder is not). */
  constructor(dir, ext, onChange, deep) {
    this.dir = dir;
    this.ext = ext;
    this.onChange = onChange;
    this.deep = deep;
    this.watcher = null;
    this.partials = null; // Promise<{ [name]: string }>, until something changes
  }

  /** Whether what is read from the folder now may be kept: it is watched (from now if need be). */
  watch() {
    if (this.watcher !== null) return true;
    let watcher;
    const changed = () => {
      watcher.close();
      if (this.watcher === watcher) this.watcher = null;
      this.onChange();
    };
    try {
      watcher = fs.watch(this.dir, { recursive: this.deep, persistent: false }, changed);
    } catch {
      return false;
    }
    watcher.on('error', changed);
    this.watcher = watcher;
    return true;
  }

  load() {
    if (this.partials !== null && this.watcher !== null) return this.partials;
    const kept = this.watch();
    const partials = readPartials(this.dir, this.ext);
    this.partials = kept ? partials : null;
    return partials;
  }

  close() {
    this.watcher?.close();
    this.watcher = null;
    this.partials = null;
  }
}

async function readPartials(dir, ext) {
  const partials = {};
  let entries;
  try {
    entries = await fs.promises.readdir(dir, { recursive: true, withFileTypes: true });
  } catch (e) {
    if (e.code === 'ENOENT') return partials;
    throw e;
  }
  await Promise.all(
    entries
      // A link to a file is read as the file, as mustache-express reads a partial by its path.
      .filter((entry) => (entry.isFile() || entry.isSymbolicLink()) && entry.name.endsWith(ext))
      .map(async (entry) => {
        const file = path.join(entry.parentPath ?? entry.path, entry.name);
        const name = path.relative(dir, file).slice(0, -ext.length).split(path.sep).join('/');
        try {
          partials[name] = await fs.promises.readFile(file, 'utf8');
        } catch (e) {
          // Gone since the folder was listed (an editor saving by rename; the watcher will
          // have the folder read again), a dangling link, or a link to a folder: no partial.
          if (e.code === 'ENOENT' || (e.code === 'EISDIR' && entry.isSymbolicLink())) return;
          throw e;
        }
      }),
  );
  return partials;
}

/**
 * `mustacheEngine({ pool?, partials?, extension?, output?, cache? })`: the engine function for
 * `app.engine('mustache', …)`.
 * - `pool`: the Pool to render on (default `Pool.shared()`).
 * - `partials`: the folder partials come from (default: the app's `views` setting, its first
 *   folder if it is a list).
 * - `extension`: of partial files (default: the rendered file's).
 * - `output`: `'string'` (default) or `'buffer'` (then set the Content-Type first, e.g.
 *   `res.type('html')`: Express sends a Buffer as application/octet-stream otherwise).
 * - `cache`: `false` reads every file at every render.
 * `engine.close()` stops its folder watchers (they never keep the process alive); renders after
 * it read every file at every render.
 */
function mustacheEngine(options = {}) {
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`corepool/express: mustacheEngine() takes an options object, got ${describe(options)}`);
  }
  const { pool = Pool.shared(), partials: partialsDir, extension, output = 'string', cache = true } = options;
  if (!(pool instanceof Pool)) throw new TypeError(`corepool/express: options.pool must be a corepool Pool, got ${describe(pool)}`);
  if (output !== 'string' && output !== 'buffer') throw new TypeError(`corepool/express: options.output must be 'string' or 'buffer', got ${describe(output)}`);
  if (partialsDir !== undefined && typeof partialsDir !== 'string') throw new TypeError(`corepool/express: options.partials must be a folder path, got ${describe(partialsDir)}`);
  if (extension !== undefined && (typeof extension !== 'string' || extension === '')) throw new TypeError(`corepool/express: options.extension must be a non-empty string, got ${describe(extension)}`);
  const folders = new Map(); // `${dir}\0${ext}\0${deep}` → Folder
  const templates = new Map(); // file → Promise<string>
  // file → { views, template, partials, config, fileOf }: what rendering the file takes, found
  // once and kept while nothing it came from has changed (`views`: the setting it was found
  // under; `config`: pool.render's, naming the file for parse errors; `fileOf`: the file a
  // parse error is in).
  const plans = new Map();
  let generation = 0; // bumped by every change: a plan found across one is not kept
  let closed = false; // after close(): every render reads the files, and nothing is watched
  const forget = () => {
    generation++;
    templates.clear();
    plans.clear();
    for (const folder of folders.values()) folder.partials = null;
  };

  const folderOf = (dir, ext, deep) => {
    const key = `${dir}\0${ext}\0${deep}`;
    let folder = folders.get(key);
    if (folder === undefined) {
      folder = new Folder(dir, ext, forget, deep);
      folders.set(key, folder);
    }
    return folder;
  };

  /** The view file's text, kept while `folder` (which holds the file) is watched. */
  const templateOf = (file, folder) => {
    if (!cache || closed || !folder.watch()) return fs.promises.readFile(file, 'utf8');
    let text = templates.get(file);
    if (text === undefined) {
      text = fs.promises.readFile(file, 'utf8');
      text.catch(() => templates.delete(file));
      templates.set(file, text);
    }
    return text;
  };

  /** The folder partials come from, as set: the option, else Express's `views` (its first folder). */
  const viewsSetting = (settings) => {
    const views = partialsDir !== undefined ? partialsDir : settings?.views;
    return Array.isArray(views) ? views[0] : views;
  };

  /** Reads what rendering `file` takes, and keeps it as the file's plan when it may. */
  async function plan(file, settings) {
    const since = generation;
    const setting = viewsSetting(settings);
    const views = setting ?? path.dirname(file);
    const ext = extension === undefined ? path.extname(file) : extension.startsWith('.') ? extension : `.${extension}`;
    const folder = folderOf(path.resolve(views), ext, true);
    const keep = cache && !closed;
    const named = await (keep ? folder.load() : readPartials(folder.dir, ext));
    // A view inside the partials folder is one of the partials already read; one outside it is
    // watched where it is (a change there must be seen too).
    const relative = path.relative(folder.dir, file);
    const inside = !relative.startsWith('..') && !path.isAbsolute(relative);
    const name = inside && relative.endsWith(ext) ? relative.slice(0, -ext.length).split(path.sep).join('/') : null;
    const own = name !== null && Object.hasOwn(named, name);
    const template = own ? named[name] : await templateOf(file, inside ? folder : folderOf(path.dirname(path.resolve(file)), ext, false));
    // Errors name the view by its path from the partials folder (the views folder unless
    // `partials` says), or by its absolute path when it lies outside it.
    const shown = inside ? relative.split(path.sep).join('/') : path.resolve(file);
    const config = output === 'buffer' ? { output, name: shown } : { name: shown };
    const fileOf = (data) => (data.partial === null ? path.resolve(file) : path.join(folder.dir, ...data.partial.split('/')) + ext);
    const found = { views: setting, template, partials: named, config, fileOf };
    // Kept only if every folder it came from is still watched and nothing changed meanwhile.
    if (keep && !closed && generation === since && folder.watcher !== null && (own || templates.has(file))) plans.set(file, found);
    return found;
  }

  /**
   * Express's locals without the keys Express adds (`settings`, `_locals`, `cache`): a copy of
   * the others, as `{ ...locals }` makes it. (Deleting them from such a copy instead turned it
   * into a dictionary-mode object, which took ~2 µs more of this thread to send per render.)
   */
  function viewOf(locals) {
    // eslint-disable-next-line no-unused-vars
    const { settings, _locals, cache, ...view } = locals;
    return view;
  }

  function engine(file, locals, callback) {
    let rendered;
    let found;
    try {
      const settings = locals.settings;
      found = plans.get(file);
      if (found !== undefined && found.views === viewsSetting(settings)) {
        rendered = pool.render(found.template, viewOf(locals), found.partials, found.config);
      } else {
        rendered = plan(file, settings).then((p) => {
          found = p;
          return pool.render(p.template, viewOf(locals), p.partials, p.config);
        });
      }
    } catch (e) {
      rendered = Promise.reject(e);
    }
    rendered.then(
      (out) => callback(null, out),
      (e) => callback(viewError(e, (data) => found?.fileOf(data) ?? null)),
    );
  }
  engine.close = () => {
    closed = true;
    for (const folder of folders.values()) folder.close();
    folders.clear();
    templates.clear();
    plans.clear();
  };
  return engine;
}

module.exports = { mustacheEngine };
