'use strict';
// Why a task file could not be loaded, said the way Node says it: the error, then the place in
// the user's code (file, line, column) and the code frame (the line, a caret under the column).
// Runs in the task file's worker_thread (lib/task-worker.js), which is failing anyway: it may
// read files and, for an ES module that does not parse, ask `node --check` where (Node 20 gives
// such a SyntaxError no position at all).

const fs = require('node:fs');
const path = require('node:path');
const { pathToFileURL, fileURLToPath } = require('node:url');
const { errorText } = require('./errors.js');

/** Exports a message lists at most. */
const MAX_LISTED = 20;

/**
 * `error` (what loading `filename` threw) → `{ why, data }`: `why` the text after "could not be
 * loaded: ", `data` `{ file, line, column }` (the place: the task file or a module it loads),
 * or `{ file }` when no place can be told (the text says so).
 */
function loadFailure(error, filename) {
  if (isMissing(error, filename)) return unplaced('there is no such file', filename);
  const label = labelOf(error);
  const place = arrowPlace(error) ?? stackPlace(error) ?? (isSyntaxError(error) ? checkedPlace(filename) : null);
  if (place === null) return unplaced(label, filename);
  const where = place.file === filename ? '' : `${place.file}, `;
  const frame = place.frame ?? codeFrame(place);
  return {
    why: `${label} (${where}line ${place.line}, column ${place.column})${frame === null ? '' : `\n\n${frame}`}`,
    data: { file: place.file, line: place.line, column: place.column },
  };
}

/** A file that exports no function (`namespace`: what it exports). */
function noFunction(namespace, filename) {
  // A CommonJS file's namespace has its module.exports as `default` too: list its names once.
  const names = new Set(Object.keys(namespace).filter((n) => n !== 'module.exports' && n !== 'default'));
  const main = namespace.default;
  if (main !== null && typeof main === 'object') for (const n of Object.keys(main)) names.add(n);
  else if (main !== undefined) names.add('default');
  const listed = names.size === 0 ? 'it exports nothing' : `its exports: ${list([...names])}`;
  return unplaced(`it exports no function (${listed})`, filename);
}

/** Names, at most MAX_LISTED of them, comma-separated. */
function list(names) {
  const shown = names.slice(0, MAX_LISTED).join(', ');
  return names.length > MAX_LISTED ? `${shown}, … (${names.length - MAX_LISTED} more)` : shown;
}

function unplaced(text, filename) {
  return { why: `${text} (no line or column to show)`, data: { file: filename } };
}

function isMissing(error, filename) {
  try {
    return error?.code === 'ERR_MODULE_NOT_FOUND' && error.url === pathToFileURL(filename).href;
  } catch {
    return false;
  }
}

function isSyntaxError(error) {
  try {
    return error instanceof SyntaxError || error?.name === 'SyntaxError';
  } catch {
    return false;
  }
}

/** "SyntaxError: message", or just the message for a plain Error. */
function labelOf(error) {
  const text = errorText(error);
  try {
    const name = error?.name;
    return typeof name === 'string' && name !== 'Error' && name !== '' ? `${name}: ${text}` : text;
  } catch {
    return text;
  }
}

function stackOf(error) {
  try {
    const stack = error?.stack;
    return typeof stack === 'string' ? stack : '';
  } catch {
    return '';
  }
}

/**
 * The place and frame Node prints above a SyntaxError's stack when CommonJS code does not parse
 * (and `node --check` prints): "file:line", the source line, then a caret line.
 */
const ARROW = /^(.+):(\d+)\r?\n(.*)\r?\n([ \t]*)(\^+)[ \t]*\r?\n/;

function arrowPlace(text) {
  const m = ARROW.exec(typeof text === 'string' ? text : stackOf(text));
  const file = m === null ? null : pathOf(m[1]);
  if (file === null) return null;
  return { file, line: Number(m[2]), column: m[4].length + 1, frame: `${file}:${m[2]}\n${m[3]}\n${m[4]}${m[5]}\n` };
}

/** An absolute path, from a path or a file: URL (as an ES module's place is given), or null. */
function pathOf(place) {
  let file = place;
  if (file.startsWith('file://')) {
    try {
      file = fileURLToPath(file);
    } catch {
      return null;
    }
  }
  return path.isAbsolute(file) ? file : null;
}

/** The first frame of the stack in a file of the user's (not Node's, nor corepool's own). */
function stackPlace(error) {
  for (const line of stackOf(error).split('\n')) {
    const m = /^\s+at (?:.*? \()?(.+?):(\d+):(\d+)\)?$/.exec(line);
    if (m === null) continue;
    const file = pathOf(m[1]);
    if (file === null || path.dirname(file) === __dirname) continue;
    return { file, line: Number(m[2]), column: Number(m[3]) };
  }
  return null;
}

/** Where `node --check` finds a syntax error in `filename`, or null (none there: it is in a module it imports). */
function checkedPlace(filename) {
  try {
    // Required here: only a file that fails to load needs it, and every worker loads this module.
    const { spawnSync } = require('node:child_process');
    const r = spawnSync(process.execPath, ['--check', filename], { encoding: 'utf8', timeout: 10_000, env: process.env });
    return r.status === 0 ? null : arrowPlace(r.stderr ?? '');
  } catch {
    return null;
  }
}

/** Node's code frame for a place: "file:line", the source line, a caret under the column. */
function codeFrame({ file, line, column }) {
  let source;
  try {
    source = fs.readFileSync(file, 'utf8').split(/\r?\n/)[line - 1];
  } catch {
    return null;
  }
  if (source === undefined || column < 1) return null;
  const pad = source.slice(0, column - 1).replace(/[^\t]/g, ' ');
  return `${file}:${line}\n${source}\n${pad}^\n`;
}

module.exports = { loadFailure, noFunction, list, MAX_LISTED };
