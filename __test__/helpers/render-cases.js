'use strict';
// Shared by the render tests: both renderers' outcomes, the rule for agreeing, a shrinker that
// finds the smallest differing template, and seeded random cases (templates, data, partials).
const Mustache = require('mustache');
const { RpcError } = require('../..');

const C = RpcError.codes;

/**
 * What a renderer did: `{ ok: output }` or `{ error: message, code? }`. A case's `config` goes
 * to both renderers, unless it has a `mustacheConfig` for mustache.js (corepool's `escape:
 * false` is mustache.js's identity function).
 */
function viaMustache({ template, data, partials, config, mustacheConfig = config }) {
  try {
    return { ok: Mustache.render(template, data, partials, mustacheConfig) };
  } catch (e) {
    return { error: e.message };
  }
}

async function viaPool(pool, { template, data, partials, config }) {
  const params = [template];
  if (data !== undefined || partials !== undefined || config !== undefined) params.push(data);
  if (partials !== undefined || config !== undefined) params.push(partials);
  if (config !== undefined) params.push(config);
  try {
    return { ok: await pool.render(...params) };
  } catch (e) {
    // A view's function may throw: its exception reaches the caller as it is.
    if (!(e instanceof RpcError)) return { error: e.message, thrown: true };
    return { error: e.message, code: e.code };
  }
}

/**
 * Whether the two outcomes agree: same output, or the same error (as CommandFailed). Two
 * refusals are counted as agreement, each where mustache.js's own answer cannot cross to Rust:
 * its stack overflow (infinite partial recursion) meets corepool's depth cap, and an output
 * holding a lone surrogate meets corepool's refusal to print one.
 */
function agree(m, r) {
  if ('ok' in m) {
    if ('ok' in r) return m.ok === r.ok;
    return !m.ok.isWellFormed() && r.code === C.CommandFailed && /surrogate/.test(r.error);
  }
  if (r.thrown) return m.error === r.error;
  if (r.code !== C.CommandFailed) return false;
  if (/Maximum call stack size exceeded/.test(m.error)) return /nest more than/.test(r.error);
  return m.error === withoutPlace(r.error);
}

/** A parse error's message without the place corepool adds after mustache.js's words. */
function withoutPlace(message) {
  return message.replace(/ \((?:[^\n]*, )?line \d+, column \d+\)\n[^]*$/, '');
}

/**
 * Pieces a shrinker may delete, as lists of [start, end) spans (UTF-16, from mustache.js's own
 * parse): each tag or text, each section whole, and each section's two tags (keeping its body).
 * A malformed template has none.
 */
function pieces(template) {
  let tokens;
  try {
    tokens = Mustache.parse(template);
  } catch {
    return [];
  }
  const out = [];
  const walk = (list, end) => {
    list.forEach((t, i) => {
      const next = i + 1 < list.length ? list[i + 1][2] : end;
      if (t[0] === '#' || t[0] === '^') {
        out.push([[t[2], next]], [[t[2], t[3]], [t[5], next]]);
        walk(t[4], t[5]);
      } else out.push([[t[2], t[3]]]);
    });
  };
  walk(tokens, template.length);
  return out;
}

function cut(template, spans) {
  let out = template;
  for (const [start, end] of [...spans].sort((a, b) => b[0] - a[0])) out = out.slice(0, start) + out.slice(end);
  return out;
}

/** Deletes pieces, then code-point runs, of the template while the renderers still disagree. */
async function shrink(pool, c) {
  const differs = async (template) => {
    const candidate = { ...c, template };
    return !agree(viaMustache(candidate), await viaPool(pool, candidate));
  };
  let template = c.template;
  for (let progress = true; progress; ) {
    progress = false;
    const smaller = pieces(template)
      .map((spans) => cut(template, spans))
      .filter((t) => t.length < template.length)
      .sort((a, b) => a.length - b.length);
    for (const t of smaller) {
      if (await differs(t)) {
        template = t;
        progress = true;
        break;
      }
    }
    if (progress) continue;
    let cps = Array.from(template);
    for (let size = Math.max(1, cps.length >> 1); size >= 1; size = size === 1 ? 0 : size >> 1) {
      for (let at = 0; at + size <= cps.length; ) {
        const candidate = [...cps.slice(0, at), ...cps.slice(at + size)];
        if (await differs(candidate.join(''))) {
          cps = candidate;
          progress = true;
        } else at += size;
      }
    }
    template = cps.join('');
  }
  return { ...c, template };
}

/** Renders every case both ways (the pool's calls concurrently); fails on the first difference. */
async function expectAgreement(pool, cases) {
  const BATCH = 256;
  for (let i = 0; i < cases.length; i += BATCH) {
    const batch = cases.slice(i, i + BATCH);
    const ours = await Promise.all(batch.map((c) => viaPool(pool, c)));
    for (let j = 0; j < batch.length; j++) {
      const theirs = viaMustache(batch[j]);
      if (!agree(theirs, ours[j])) {
        const small = await shrink(pool, batch[j]);
        throw new Error(
          `render differs from mustache.js (case ${i + j}${batch[j].name ? `, ${batch[j].name}` : ''})\n` +
            `smallest template: ${JSON.stringify(small.template)}\n` +
            `data: ${JSON.stringify(small.data)}\npartials: ${JSON.stringify(small.partials)}\n` +
            `mustache.js: ${JSON.stringify(viaMustache(small))}\n` +
            `corepool:    ${JSON.stringify(await viaPool(pool, small))}`,
        );
      }
    }
  }
}

// ---- seeded random cases ----

function mulberry32(seed) {
  return function next() {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const KEYS = ['a', 'b', 'c', 'list', 'obj', 's', 'n', 'z', 'e', 't', 'f', 'nil', 'x y', '', 'é', 'length', '0', '1', 'kids'];
const TEXTS = ['a', 'b', ' ', '  ', '\t', '\n', '\n', '\r\n', '\r', 'é', '😀', '<&>', `"'/\`=`, '{', '}', 'x y', '\u00a0', '\u2028', '.', '#', '!', '>', '=', '%'];
const NUMBERS = [0, -0, 1, 2, 1.5, -2, 1e21, 1e-7, 123456789, 0.1, NaN, Infinity, -Infinity];
const DELIMITERS = [['{{', '}}'], ['<%', '%>'], ['|', '|'], ['[[', ']]'], ['{', '}'], ['<', '>'], ['(', ')'], ['{{{', '}}}']];
const SPACE = ['', '', '', ' ', '  ', '\t', '\n', '\u00a0'];

class CaseGenerator {
  constructor(seed) {
    this.random = mulberry32(seed);
  }
  int(n) {
    return Math.floor(this.random() * n);
  }
  pick(list) {
    return list[this.int(list.length)];
  }
  chance(p) {
    return this.random() < p;
  }

  text() {
    let s = '';
    for (let i = this.int(4); i > 0; i--) s += this.pick(TEXTS);
    return s;
  }

  value(depth) {
    switch (this.int(depth > 2 ? 6 : 10)) {
      case 0:
      case 1:
        return this.text();
      case 2:
        return this.pick(NUMBERS);
      case 3:
        return this.chance(0.5);
      case 4:
        return this.chance(0.5) ? null : this.pick(['', '0']);
      case 5:
        return this.pick(['', '0', 'x', 'é😀', '<b>']);
      case 6:
      case 7: {
        const list = [];
        for (let i = this.int(4); i > 0; i--) list.push(this.value(depth + 1));
        return list;
      }
      default: {
        const object = {};
        for (let i = this.int(5); i > 0; i--) object[this.pick(KEYS)] = this.value(depth + 1);
        return object;
      }
    }
  }

  data() {
    if (this.chance(0.03)) return undefined;
    if (this.chance(0.05)) return this.value(2);
    const object = {};
    for (let i = 2 + this.int(7); i > 0; i--) object[this.pick(KEYS)] = this.value(0);
    return object;
  }

  name() {
    switch (this.int(8)) {
      case 0:
        return '.';
      case 1:
        return `${this.pick(KEYS)}.${this.pick(KEYS)}`;
      case 2:
        return `${this.pick(KEYS)}.${this.pick(KEYS)}.${this.pick(KEYS)}`;
      case 3:
        return this.pick(['list.length', 's.length', 'list.0', 'obj.a', 'a.', '.a', 'missing']);
      default:
        return this.pick(KEYS.filter((k) => k !== '' && k !== 'x y'));
    }
  }

  /** A run of template pieces; `state.delimiters` changes as set-delimiter tags are written. */
  fragment(state, depth, size) {
    let out = '';
    const tag = (body) => state.delimiters[0] + this.pick(SPACE) + body + this.pick(SPACE) + state.delimiters[1];
    for (let n = this.int(size); n > 0; n--) {
      const r = this.int(100);
      if (r < 35) out += this.text();
      else if (r < 52) out += tag(this.name());
      else if (r < 56) out += `${state.delimiters[0]}{${this.name()}}${state.delimiters[1]}`;
      else if (r < 59) out += tag(`&${this.name()}`);
      else if (r < 72 && depth < 4) {
        const name = this.name();
        const kind = this.chance(0.7) ? '#' : '^';
        out += (this.chance(0.3) ? `\n${this.pick(SPACE)}` : '') + tag(kind + name) + (this.chance(0.3) ? `${this.pick(SPACE)}\n` : '');
        out += this.fragment(state, depth + 1, size);
        out += (this.chance(0.3) ? `\n${this.pick(SPACE)}` : '') + tag(`/${name}`) + (this.chance(0.3) ? '\n' : '');
      } else if (r < 76) out += tag(`!${this.pick(['', 'c', 'a b', '\n', '{'])}`);
      else if (r < 83) {
        const lead = this.chance(0.5) ? `\n${this.pick(['', ' ', '  ', '\t', 'x ', '\r\n  '])}` : '';
        out += lead + tag(`>${this.pick(state.partials)}`) + (this.chance(0.5) ? `${this.pick(SPACE)}\n` : '');
      } else if (r < 86) {
        const next = this.pick(DELIMITERS);
        out += tag(`=${next[0]}${this.pick([' ', '  ', '\t'])}${next[1]}${this.pick(['', ' '])}=`);
        state.delimiters = next;
      } else if (r < 88) {
        const value = this.pick(['', '<%', 'a b c', '<% %> x']);
        out += tag(`=${value}=`);
        if (value.includes(' ')) state.delimiters = value.split(' ');
      } else out += this.pick(TEXTS) + this.pick(['\n', '\r\n', '']);
    }
    return out;
  }

  template(partials, size, delimiters = DELIMITERS[0]) {
    const template = this.fragment({ delimiters, partials }, 0, size);
    return this.chance(0.06) ? this.breakTemplate(template) : template;
  }

  /** Deletes, inserts or cuts at a random code point: malformed templates on purpose. */
  breakTemplate(template) {
    const cps = Array.from(template);
    const at = this.int(cps.length + 1);
    switch (this.int(3)) {
      case 0:
        cps.splice(at, 1);
        break;
      case 1:
        cps.splice(at, 0, this.pick(['{{', '}}', '{{#a}}', '{{/a}}', '{{=', '{{{']));
        break;
      default:
        cps.length = at;
    }
    return cps.join('');
  }

  case() {
    const partials = {
      p1: this.template(['p2', 'p3', 'nope'], 5),
      p2: this.template(['p3'], 4),
      p3: this.template(['nope'], 3),
    };
    const names = ['p1', 'p2', 'p3', 'nope'];
    if (this.chance(0.1)) {
      partials.tree = '<{{.}}{{#kids}}{{>tree}}{{/kids}}>';
      names.push('tree');
    }
    const withPartials = this.chance(0.8);
    const data = this.data();
    return {
      template: this.template(withPartials ? names : ['p1', 'nope'], 10),
      data: data === undefined && withPartials ? null : data,
      partials: withPartials ? partials : undefined,
    };
  }

  /**
   * A case rendered with other tags from the start (config `tags`, as an array or in an
   * object), the partials too, and sometimes without escaping (corepool's `escape: false`).
   */
  caseWithConfig() {
    const tags = this.pick(DELIMITERS.slice(1));
    const partials = {
      p1: this.template(['p2', 'nope'], 5, tags),
      p2: this.template(['nope'], 4, tags),
    };
    const template = this.template(['p1', 'p2', 'nope'], 10, tags);
    const escape = this.chance(0.25);
    const config = escape ? { tags, escape: false } : this.chance(0.5) ? tags : { tags };
    const mustacheConfig = escape ? { tags, escape: (v) => v } : config;
    return { template, data: this.data() ?? null, partials, config, mustacheConfig };
  }
}

module.exports = { viaMustache, viaPool, agree, withoutPlace, expectAgreement, mulberry32, CaseGenerator, C };
