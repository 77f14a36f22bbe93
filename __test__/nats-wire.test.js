'use strict';
// lib/nats/wire.js: what a RemotePool sends. Its quick path (JSON.stringify after a walk) must
// give what its careful path gives, for any value. A failure prints fast-check's seed and path;
// replay it with COREPOOL_PROPERTY_SEED=<seed> COREPOOL_PROPERTY_PATH=<path>.
const fc = require('fast-check');
const { RpcError } = require('..');
const { toJson, carefulJson, cancelSecret, proofOf, cancelText, parseCancel, withoutStacks } = require('../lib/nats/wire.js');
const { names } = require('../lib/nats/names.js');
const { replyAllowed } = require('../lib/nats/reply.js');

const settings = { numRuns: 2000 };
if (process.env.COREPOOL_PROPERTY_SEED !== undefined) settings.seed = Number(process.env.COREPOOL_PROPERTY_SEED);
if (process.env.COREPOOL_PROPERTY_PATH !== undefined) settings.path = process.env.COREPOOL_PROPERTY_PATH;

const outcome = (f) => {
  try {
    return { text: f() };
  } catch (e) {
    return { code: e instanceof RpcError ? e.code : `not an RpcError: ${e}`, message: e.message };
  }
};

test('toJson gives what the careful path gives, for any value', () => {
  const values = fc.oneof(
    fc.anything({ withBigInt: true, withBoxedValues: true, withDate: true, withMap: true, withSet: true, withNullPrototype: true, withObjectString: true, withSparseArray: true, withTypedArray: true, maxDepth: 5 }),
    fc.jsonValue(),
  );
  fc.assert(
    fc.property(values, (v) => {
      expect(outcome(() => toJson(v, 'params'))).toEqual(outcome(() => carefulJson(v, 'params')));
    }),
    settings,
  );
});

test('deep, cyclic and hostile values take the careful path and are refused by name', () => {
  let deep = 1;
  for (let i = 0; i < 40; i++) deep = [deep];
  expect(toJson(deep, 'params')).toBe(JSON.stringify(deep));
  const cyclic = { a: [] };
  cyclic.a.push(cyclic);
  expect(() => toJson(cyclic, 'params')).toThrow(RpcError);
  expect(() => toJson({ get x() { throw new Error('getter'); } }, 'params')).toThrow(/getter/);
  expect(() => toJson([1, { n: NaN }], 'params')).toThrow(/params\[1\]\.n is NaN/);
  expect(toJson({ a: undefined, b: [undefined] }, 'params')).toBe('{"a":null,"b":[null]}');
  // A key '' is not the value itself (the careful path once took it for the root: a cycle).
  expect(carefulJson({ '': false, x: { '': undefined } }, 'params')).toBe('{"":false,"x":{"":null}}');
});

test('a host may answer a reply subject only outside its service\'s namespace and the system subjects', () => {
  const n = names('svc', 'app.svc');
  for (const ok of ['_INBOX.abc.1', '_INBOX.caller.x.7', 'app', 'app.other', 'app.svcx', 'other.app.svc']) expect([ok, replyAllowed(n, ok)]).toEqual([ok, true]);
  const refused = ['app.svc', 'app.svc.results.eA', 'app.svc.jobs', 'app.svc.cancel', 'app.svc.host.x', '$JS.API.STREAM.DELETE.svc-jobs', '$SRV.PING', '$KV.b.k', '$SYS.REQ.SERVER.PING', '$O.x', 'a.*', 'a.>', '>', 'a..b', '.a', 'a.', 'a b', '', 5, null, undefined];
  for (const bad of refused) expect([bad, replyAllowed(n, bad)]).toEqual([bad, false]);
});

test('a cancel reveals a secret whose proof its message carried, and commits to the next; other shapes are not cancels', () => {
  const secret = cancelSecret();
  const next = proofOf(cancelSecret());
  expect(proofOf(secret)).toMatch(/^[A-Za-z0-9_-]{43}$/);
  expect(proofOf(secret)).not.toBe(proofOf(cancelSecret()));
  // Secrets are drawn 256 at a time: none repeats across draws.
  const secrets = Array.from({ length: 600 }, cancelSecret);
  expect(new Set(secrets).size).toBe(600);
  expect(secrets.every((s) => /^[A-Za-z0-9_-]{43}$/.test(s))).toBe(true);
  const text = cancelText('_INBOX.x.1', secret, next, [1, 'a']);
  expect(parseCancel(text)).toEqual({ reply: '_INBOX.x.1', secret, next, ids: [1, 'a'] });
  const edited = (change) => JSON.stringify({ ...JSON.parse(text), ...change });
  for (const bad of [edited({ v: 2 }), edited({ v: undefined }), edited({ secret: 'short' }), edited({ next: `${next}=` }), edited({ ids: 1 }), edited({ reply: 5 }), '{"reply":"_INBOX.x.1","ids":[1]}', 'null', '']) {
    expect([bad, parseCancel(bad)]).toEqual([bad, null]);
  }
});

test("withoutStacks takes the stacks out of answers' errors and their causes, and nothing else", () => {
  const error = { code: -32000, message: 'bad', data: { name: 'TypeError', stack: 'TypeError: bad\n    at /srv/tasks.js:1:1', code: 'E', cause: { error: { name: 'RangeError', stack: 'at /srv/x.js', cause: { value: { stack: 'a value, kept' } } } } } };
  const stripped = JSON.parse(withoutStacks(JSON.stringify({ jsonrpc: '2.0', error, id: 1 })));
  expect(stripped.error.data).toEqual({ name: 'TypeError', code: 'E', cause: { error: { name: 'RangeError', cause: { value: { stack: 'a value, kept' } } } } });
  // Batches; a result that holds a "stack" key is the caller's own data, kept as sent.
  const batch = [{ jsonrpc: '2.0', result: { stack: [1, 2] }, id: 1 }, { jsonrpc: '2.0', error, id: 2 }];
  const both = JSON.parse(withoutStacks(JSON.stringify(batch)));
  expect(both[0]).toEqual(batch[0]);
  expect(JSON.stringify(both[1])).not.toContain('/srv/');
  // Text with no stack, or that is not JSON, is returned as it is (the same string).
  for (const text of ['{"jsonrpc":"2.0","result":1,"id":1}', '{"stack": ', '']) expect(withoutStacks(text)).toBe(text);
});
