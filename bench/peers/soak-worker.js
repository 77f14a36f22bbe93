'use strict';
// bench/soak.js's worker_threads, and the calls they and its main thread make.
//
// As a worker_thread (workerData.role):
//   'server'  serves soak_sum, soak_fill and soak_wait through Pool.shared().serve() (4 calls at
//             a time), posts { ready, serverId }; on 'stop' closes its server, after which
//             nothing keeps the thread alive and it exits.
//   'caller'  runs one closed loop per entry of CALLER_MIX on Pool.shared() until it gets 'stop'
//             (then awaits its calls, posts { done } and exits) or is terminated; posts
//             { report, text } about a wrong result or an unexpected rejection. Every call is counted
//             in a Tally over a SharedArrayBuffer, which the main thread reads even after the
//             thread is gone: what was submitted and never settled there went with the thread.
// Required by bench/soak.js: MAKERS (one entry per kind of call), Tally, rng, fixtures().
const { isMainThread, parentPort, workerData } = require('node:worker_threads');
const { setTimeout: delay } = require('node:timers/promises');
const { Pool, RpcError } = require('../..');

const CODE_NAMES = Object.keys(RpcError.codes);
/** Per kind of call: submitted, resolved, wrong (resolved with a result that fails its check),
 *  unexpected (rejected with a type that call had no reason to meet), then rejections by RpcError
 *  type, and `other` for a rejection that is not an RpcError. */
const FIELDS = ['submitted', 'resolved', 'wrong', 'unexpected', ...CODE_NAMES, 'other'];

/** Counts by kind of call in an Int32Array (over a SharedArrayBuffer when passed one). */
class Tally {
  constructor(kinds, buffer) {
    this.kinds = kinds;
    this.buffer = buffer ?? new SharedArrayBuffer(kinds.length * FIELDS.length * 4);
    this.counts = new Int32Array(this.buffer);
  }

  #at(kind, field) {
    const k = this.kinds.indexOf(kind);
    const f = FIELDS.indexOf(field);
    if (k < 0 || f < 0) throw new Error(`soak: no tally slot for ${kind}/${field}`);
    return k * FIELDS.length + f;
  }

  add(kind, field) {
    Atomics.add(this.counts, this.#at(kind, field), 1);
  }

  get(kind, field) {
    return Atomics.load(this.counts, this.#at(kind, field));
  }

  /** { kind: { submitted, resolved, wrong, unexpected, rejected: { type: n }, open } } */
  snapshot() {
    const out = {};
    for (const kind of this.kinds) {
      const rejected = {};
      let rejections = 0;
      for (const f of [...CODE_NAMES, 'other']) {
        const n = this.get(kind, f);
        if (n > 0) rejected[f] = n;
        rejections += n;
      }
      const submitted = this.get(kind, 'submitted');
      const resolved = this.get(kind, 'resolved');
      out[kind] = {
        submitted,
        resolved,
        wrong: this.get(kind, 'wrong'),
        unexpected: this.get(kind, 'unexpected'),
        rejected,
        open: submitted - resolved - rejections,
      };
    }
    return out;
  }
}

/** A seeded generator (mulberry32): uniform in [0, 1). */
function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const int = (r, lo, hi) => lo + Math.floor(r() * (hi - lo + 1));
const pick = (r, xs) => xs[Math.floor(r() * xs.length)];

const STRINGS = ['', 'a', 'soak', 'é漢🚀', 'quote " and \\ backslash', 'line\nbreak\ttab', '<b>&amp;</b>'];

/** Plain data of fewer than 32 values: converted value by value. */
function smallValue(r) {
  switch (int(r, 0, 4)) {
    case 0:
      return int(r, -1e9, 1e9);
    case 1:
      return pick(r, STRINGS);
    case 2:
      return { i: int(r, 0, 1e6), s: pick(r, STRINGS), ok: r() < 0.5, none: null, f: r() * 1e3 };
    case 3:
      return Array.from({ length: int(r, 0, 20) }, () => int(r, -1000, 1000));
    default:
      return [pick(r, STRINGS), { n: r(), list: [1, 2, 3] }, true];
  }
}

/** Plain data of at least 32 values: it travels as JSON text. */
function bigValue(r) {
  return Array.from({ length: int(r, 32, 300) }, (_, i) => {
    switch (i % 4) {
      case 0:
        return int(r, -1e12, 1e12);
      case 1:
        return r() * 10 ** int(r, -8, 8);
      case 2:
        return pick(r, STRINGS);
      default:
        return { k: i, v: pick(r, STRINGS), b: r() < 0.5 };
    }
  });
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
const brief = (v) => {
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
};
const mismatch = (got, want) => (same(got, want) ? null : `got ${brief(got)}, want ${brief(want)}`);

// Timeouts far beyond any call: a day in ms past 2^31, past 2^32, 1e12, 2^53 − 1, and 1e300
// (README: any finite number of ms ≥ 0).
const HUGE_TIMEOUTS = [2 ** 31, 2 ** 32 + 1, 1e12, Number.MAX_SAFE_INTEGER, 1e300];

/**
 * Options for a cancellable call of `ms`: 45% run out (timeout none or ms + 5 s), 20% aborted
 * after a random delay (maybe after they finished), 10% aborted at once after submission, 10%
 * time out (timeout ms/3), 8% get a huge timeout, 7% are aborted before submission.
 * Returns { options, after(promise), what, expect: the rejection this choice leads to }.
 */
function cancellable(r, ms) {
  const x = r();
  const none = () => {};
  if (x < 0.45) {
    const timeout = r() < 0.5 ? 0 : ms + 5000;
    return { options: { timeout }, after: none, what: `runs out (timeout ${timeout})`, expect: [] };
  }
  const ac = new AbortController();
  if (x < 0.65) {
    const at = int(r, 0, Math.ceil(ms * 1.5));
    return {
      options: { signal: ac.signal },
      after: (p) => {
        const t = setTimeout(() => ac.abort(), at);
        p.then(
          () => clearTimeout(t),
          () => clearTimeout(t),
        );
      },
      what: `aborted after ${at} ms`,
      expect: ['Aborted'],
    };
  }
  if (x < 0.75) return { options: { signal: ac.signal }, after: () => ac.abort(), what: 'aborted at once', expect: ['Aborted'] };
  if (x < 0.85) {
    const timeout = Math.max(1, Math.floor(ms / 3));
    return { options: { timeout, signal: ac.signal }, after: none, what: `times out (timeout ${timeout})`, expect: ['Timeout'] };
  }
  if (x < 0.93) {
    const timeout = pick(r, HUGE_TIMEOUTS);
    return { options: { timeout }, after: none, what: `huge timeout ${timeout}`, expect: [] };
  }
  ac.abort();
  return { options: { signal: ac.signal }, after: none, what: 'aborted before submission', expect: ['Aborted'] };
}

/** A cancellable call: `pool.call(method, params, options)` with `cancellable`'s options. */
function cancellableCall(pool, r, method, params, ms, check) {
  const c = cancellable(r, ms);
  const promise = pool.call(method, params, c.options);
  c.after(promise);
  return { promise, check, what: `${method}(${ms}) ${c.what}`, expect: c.expect };
}

// Happycoin: seeds 1…16, 25k–100k attempts (a fraction of a ms to a few ms on one thread).
const COIN_SEEDS = Array.from({ length: 16 }, (_, i) => i + 1);
const coinAttempts = (seed) => 25_000 * (1 + (seed % 4));
const INTO_SLOTS = 64;

const TEMPLATE =
  '<h1>{{title}}</h1><p>{{me}} loves {{you}} &amp; {{{raw}}}</p>' +
  '<ul>{{#items}}<li class="{{kind}}">{{name}}: {{n}}</li>{{/items}}</ul>{{^items}}<p>none</p>{{/items}}';

/** What the checks compare against: mustache.js's renderings, and happycoin's coins for each
 *  seed computed once on `pool` before the load starts. */
async function fixtures(pool) {
  const Mustache = require('mustache');
  const r = rng(0x7e4d);
  const renders = Array.from({ length: 8 }, (_, v) => {
    const data = {
      title: `Soak <${v}>`,
      me: pick(r, STRINGS),
      you: pick(r, STRINGS),
      raw: '<i>raw & "as is"</i>',
      items: Array.from({ length: v }, (_, i) => ({ kind: i % 2 ? 'odd' : 'even', name: pick(r, STRINGS), n: int(r, 0, 1e6) })),
    };
    return { data, html: Mustache.render(TEMPLATE, data) };
  });
  const coins = {};
  for (const seed of COIN_SEEDS) coins[seed] = await pool.exec('happycoin', { attempts: coinAttempts(seed), seed });
  return { renders, coins };
}

/**
 * Each kind of call: `expect` lists the rejections it may meet in this mix (others are counted
 * as unexpected, and reported, not failed); `make(pool, r, fx)` submits one call (or a burst: an
 * array) and returns { promise, check(result) → null | what is wrong, what, expect? } (`expect`:
 * rejections this one call may meet besides its kind's).
 */
const MAKERS = {
  'echo small': {
    expect: [],
    make(pool, r) {
      const v = smallValue(r);
      return { promise: pool.exec('echo', v), check: (got) => mismatch(got, v), what: `echo ${brief(v)}` };
    },
  },
  'echo big': {
    expect: [],
    make(pool, r) {
      const v = bigValue(r);
      return { promise: pool.exec('echo', v), check: (got) => mismatch(got, v), what: `echo [${v.length} values]` };
    },
  },
  render: {
    expect: [],
    make(pool, r, fx) {
      const k = int(r, 0, fx.renders.length - 1);
      const { data, html } = fx.renders[k];
      return { promise: pool.render(TEMPLATE, data), check: (got) => (got === html ? null : mismatch(got, html)), what: `render variant ${k}` };
    },
  },
  happycoin: {
    expect: [],
    make(pool, r, fx) {
      const seed = pick(r, COIN_SEEDS);
      return {
        promise: pool.exec('happycoin', { attempts: coinAttempts(seed), seed }),
        check: (got) => mismatch(got, fx.coins[seed]),
        what: `happycoin seed ${seed}`,
      };
    },
  },
  // A fresh SharedArrayBuffer per call. Half the calls keep the view and check the coins written
  // into it; the other half take it out of the params object right after submitting, as code
  // that reuses its params object does (README: views are kept alive until the call settles).
  'happycoin into': {
    expect: [],
    make(pool, r, fx) {
      const seed = pick(r, COIN_SEEDS);
      const want = fx.coins[seed];
      const params = { attempts: coinAttempts(seed), seed, into: new BigUint64Array(new SharedArrayBuffer(8 * INTO_SLOTS)) };
      if (r() < 0.5) {
        const view = params.into;
        return {
          promise: pool.exec('happycoin', params),
          check: (got) => {
            if (got?.count !== want.count) return `count ${brief(got)}, want ${want.count}`;
            for (let i = 0; i < INTO_SLOTS; i++) {
              const expected = i < want.count ? want.coins[i] : '0';
              if (String(view[i]) !== expected) return `into[${i}] = ${view[i]}, want ${expected}`;
            }
            return null;
          },
          what: `happycoin into seed ${seed}, view kept`,
        };
      }
      const promise = pool.exec('happycoin', params);
      params.into = null;
      return {
        promise,
        check: (got) => (got?.count === want.count ? null : `count ${brief(got)}, want ${want.count}`),
        what: `happycoin into seed ${seed}, params.into = null after the call`,
      };
    },
  },
  sleep: {
    expect: [],
    make(pool, r) {
      const ms = int(r, 1, 30);
      return cancellableCall(pool, r, 'sleep', [ms], ms, (got) => mismatch(got, ms));
    },
  },
  // Six calls at once on a pool of 2 threads with maxQueue 2 and onFull 'reject'.
  'queue-full burst': {
    expect: ['QueueFull'],
    make(pool, r) {
      return Array.from({ length: 6 }, (_, i) => {
        const ms = int(r, 0, 3);
        return i % 2
          ? { promise: pool.exec('sleep', ms), check: (got) => mismatch(got, ms), what: `sleep(${ms}) in a burst` }
          : { promise: pool.exec('echo', i), check: (got) => mismatch(got, i), what: `echo ${i} in a burst` };
      });
    },
  },
  'request batch': {
    expect: [],
    make(pool, r, fx) {
      const x = r();
      if (x < 0.1) {
        const note = { jsonrpc: '2.0', method: 'echo', params: [1] };
        return { promise: pool.request(x < 0.05 ? note : [note]), check: (got) => mismatch(got, null), what: 'request: notifications only' };
      }
      if (x < 0.15) {
        return {
          promise: pool.request([]),
          check: (got) => (got?.error?.code === -32600 && got.id === null ? null : `empty batch → ${brief(got)}`),
          what: 'request: empty batch',
        };
      }
      const entries = [];
      for (let i = int(r, 1, 4); i > 0; i--) {
        const v = r() < 0.3 ? bigValue(r) : smallValue(r);
        entries.push({ req: { jsonrpc: '2.0', id: `e${i}`, method: 'echo', params: [v] }, result: v });
      }
      if (r() < 0.5) entries.push({ req: { jsonrpc: '2.0', method: 'echo', params: ['notification'] } });
      if (r() < 0.5) entries.push({ req: { jsonrpc: '2.0', id: 'bad', method: 5 }, code: -32600 });
      if (r() < 0.5) entries.push({ req: { jsonrpc: '2.0', id: 'nf', method: 'soak_no_such_method' }, code: -32601 });
      if (r() < 0.3) {
        const seed = pick(r, COIN_SEEDS);
        entries.push({ req: { jsonrpc: '2.0', id: 7, method: 'happycoin', params: { attempts: coinAttempts(seed), seed } }, result: fx.coins[seed] });
      }
      for (let i = entries.length - 1; i > 0; i--) {
        const j = int(r, 0, i);
        [entries[i], entries[j]] = [entries[j], entries[i]];
      }
      const answered = entries.filter((e) => 'id' in e.req);
      return {
        promise: pool.request(entries.map((e) => e.req)),
        check: (got) => {
          if (!Array.isArray(got) || got.length !== answered.length) return `${brief(got)} for ${answered.length} answers`;
          for (const [i, e] of answered.entries()) {
            const a = got[i];
            if (a.id !== e.req.id) return `answer ${i} has id ${brief(a.id)}, want ${brief(e.req.id)}`;
            const bad = e.code !== undefined ? (a.error?.code === e.code ? null : `error ${brief(a)}, want ${e.code}`) : mismatch(a.result, e.result);
            if (bad) return `answer ${i}: ${bad}`;
          }
          return null;
        },
        what: `request batch of ${entries.length}`,
      };
    },
  },
  'handle text': {
    expect: [],
    make(pool, r) {
      const x = r();
      const v = smallValue(r);
      const text = (o) => JSON.stringify(o);
      const call = { jsonrpc: '2.0', id: int(r, 0, 1e6), method: 'echo', params: [v] };
      let input;
      let check;
      if (x < 0.4) {
        input = text(call);
        check = (got) => mismatch(JSON.parse(got), { jsonrpc: '2.0', result: v, id: call.id });
      } else if (x < 0.55) {
        input = text(call).slice(0, -3);
        check = (got) => (JSON.parse(got).error?.code === -32700 ? null : `truncated JSON → ${brief(got)}`);
      } else if (x < 0.7) {
        input = `[${text(call)}, 7]`;
        check = (got) => {
          const a = JSON.parse(got);
          return same(a[0], { jsonrpc: '2.0', result: v, id: call.id }) && a[1]?.error?.code === -32600 && a.length === 2 ? null : `batch with 7 → ${brief(got)}`;
        };
      } else if (x < 0.8) {
        input = text({ jsonrpc: '2.0', method: 'echo', params: [v] });
        check = (got) => mismatch(got, '');
      } else if (x < 0.9) {
        input = '[]';
        check = (got) => (JSON.parse(got).error?.code === -32600 ? null : `[] → ${brief(got)}`);
      } else {
        input = text({ ...call, method: 'soak_no_such_method' });
        check = (got) => (JSON.parse(got).error?.code === -32601 ? null : `unknown method → ${brief(got)}`);
      }
      return {
        promise: pool.handle(input),
        check: (got) => {
          try {
            return check(got);
          } catch (e) {
            return `unparsable answer ${brief(got)}: ${e.message}`;
          }
        },
        what: `handle ${brief(input)}`,
      };
    },
  },
  // The methods served by worker_threads (role 'server'). While a server is being replaced a
  // call may meet ServerGone (it was running there) or, with no server left, MethodNotFound.
  'served sum': {
    expect: ['ServerGone', 'MethodNotFound'],
    make(pool, r) {
      const values = Array.from({ length: r() < 0.5 ? int(r, 1, 20) : int(r, 32, 200) }, () => int(r, -1e6, 1e6));
      const sum = values.reduce((a, b) => a + b, 0);
      return { promise: pool.exec('soak_sum', values), check: (got) => mismatch(got, sum), what: `soak_sum of ${values.length}` };
    },
  },
  'served fill': {
    expect: ['ServerGone', 'MethodNotFound'],
    make(pool, r) {
      const view = new Int32Array(new SharedArrayBuffer(4 * int(r, 1, 256)));
      const value = int(r, 1, 2 ** 31 - 1);
      return {
        promise: pool.exec('soak_fill', view, value),
        check: (got) => {
          if (got !== view.length) return `returned ${brief(got)}, want ${view.length}`;
          const i = view.findIndex((x) => x !== value);
          return i < 0 ? null : `view[${i}] = ${view[i]}, want ${value}`;
        },
        what: `soak_fill Int32Array(${view.length})`,
      };
    },
  },
  'served wait': {
    expect: ['ServerGone', 'MethodNotFound'],
    make(pool, r) {
      const ms = int(r, 1, 30);
      const tag = `t${int(r, 0, 1e9)}`;
      return cancellableCall(pool, r, 'soak_wait', [ms, tag], ms, (got) => mismatch(got, tag));
    },
  },
};

/** The loops of a 'caller' worker_thread, one each, all on Pool.shared(). */
const CALLER_MIX = ['echo small', 'echo big', 'served sum', 'served fill', 'served wait', 'sleep', 'happycoin into'];

/**
 * Counts `call` (submitted) in `tally`, then how it settles; resolves once it has, never
 * rejects. `expect`: the rejections its kind may meet. `report(what, text)` hears of a wrong
 * result ('wrong'), a rejection nobody expected ('unexpected') and one that is not an RpcError
 * ('other').
 */
function counted(tally, kind, call, expect, report) {
  tally.add(kind, 'submitted');
  return call.promise.then(
    (got) => {
      tally.add(kind, 'resolved');
      const bad = call.check(got);
      if (bad) {
        tally.add(kind, 'wrong');
        report('wrong', `${kind}: ${call.what}: ${bad}`);
      }
    },
    (e) => {
      if (!(e instanceof RpcError)) {
        tally.add(kind, 'other');
        report('other', `${kind}: ${call.what}: rejected with a non-RpcError: ${e?.name}: ${e?.message}`);
        return;
      }
      tally.add(kind, e.type);
      if (!expect.includes(e.type) && !call.expect?.includes(e.type)) {
        tally.add(kind, 'unexpected');
        report('unexpected', `${kind}: ${call.what}: ${e.type}: ${e.message}`);
      }
    },
  );
}

function serve() {
  const server = Pool.shared().serve(
    {
      soak_sum(values) {
        let s = 0;
        for (const v of values) s += v;
        return s;
      },
      soak_fill(view, value) {
        view.fill(value);
        return view.length;
      },
      async soak_wait(ms, tag, ctx) {
        await delay(ms, undefined, { signal: ctx.signal });
        return tag;
      },
    },
    { concurrency: 4 },
  );
  // After close() nothing should keep this thread alive: it exits by itself.
  const onMessage = async (m) => {
    if (m !== 'stop') return;
    parentPort.off('message', onMessage);
    await server.close();
  };
  parentPort.on('message', onMessage);
  parentPort.postMessage({ ready: true, serverId: server.id });
}

async function call({ id, seed, tallyBuffer, fx }) {
  const pool = Pool.shared();
  const tally = new Tally(CALLER_MIX, tallyBuffer);
  let stopping = false;
  const reported = { wrong: 0, unexpected: 0, other: 0 };
  const report = (what, text) => {
    if (reported[what]++ < 5) parentPort.postMessage({ report: what, text: `caller #${id}: ${text}` });
  };
  const onMessage = (m) => {
    if (m !== 'stop') return;
    stopping = true;
    parentPort.off('message', onMessage);
  };
  parentPort.on('message', onMessage);
  parentPort.postMessage({ ready: true });
  await Promise.all(
    CALLER_MIX.map(async (kind, i) => {
      const r = rng(seed + i);
      while (!stopping) {
        const calls = [].concat(MAKERS[kind].make(pool, r, fx));
        await Promise.all(calls.map((c) => counted(tally, kind, c, MAKERS[kind].expect, report)));
      }
    }),
  );
  // With its calls settled, an idle shared pool does not keep this thread alive: it exits.
  parentPort.postMessage({ done: true });
}

if (!isMainThread && workerData?.role === 'server') serve();
else if (!isMainThread && workerData?.role === 'caller') call(workerData);

module.exports = { MAKERS, CALLER_MIX, FIELDS, CODE_NAMES, Tally, rng, counted, fixtures };
