'use strict';
// lib/nats/wire.js: what a RemotePool sends. Its quick path (JSON.stringify after a walk) must
// give what its careful path gives, for any value. A failure prints fast-check's seed and path;
// replay it with COREPOOL_PROPERTY_SEED=<seed> COREPOOL_PROPERTY_PATH=<path>.
const fc = require('fast-check');
const { RpcError } = require('..');
const { toJson, carefulJson } = require('../lib/nats/wire.js');

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
