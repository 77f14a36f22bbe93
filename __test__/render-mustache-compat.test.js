'use strict';
// pool.render against mustache.js 4.2.0, rendering views mustache.js takes as they are: one case
// per behaviour of mustache.js's own render fixtures (named after them; our own templates and
// views), then views that are not plain data (Dates, class instances, prototype getters, Maps,
// Sets, throwing getters, BigInts, symbols). Each case is rendered by both and compared
// (differential: mustache.js is the oracle, at test time). A case's view is made anew for each
// renderer, so neither sees what the other did to it.
const Mustache = require('mustache');
const { Pool, RpcError } = require('..');
const { viaMustache, viaPool, agree } = require('./helpers/render-cases.js');

let pool;
beforeAll(() => {
  pool = new Pool({ threads: 2 });
});
afterAll(() => pool.close());

/** A case whose view `make()` builds, anew at each read of `data`. */
const at = (name, template, make, partials) => ({
  name,
  template,
  partials,
  get data() {
    return make();
  },
});

/** Both renderers' outcomes of every case, and the names of those that differ. */
async function differences(cases) {
  const out = [];
  for (const c of cases) {
    const theirs = viaMustache(c);
    const ours = await viaPool(pool, c);
    if (process.env.SHOW_RENDERS) console.log(c.name, theirs, ours);
    if (!agree(theirs, ours)) out.push({ name: c.name, mustache: theirs, corepool: ours });
  }
  return out;
}

class Point {
  constructor(x, y) {
    this.x = x;
    this._y = y;
  }
  get y() {
    return this._y;
  }
  set y(v) {
    this._y = v;
  }
  sum() {
    return this.x + this._y;
  }
}

function Legacy(name) {
  this.name = name;
}
Legacy.prototype.greeting = function greeting() {
  return `hi ${this.name}`;
};
Legacy.prototype.kind = 'legacy';

// Behaviours of mustache.js's 60 render fixtures (test/_files in its repository), one case each.
const FIXTURES = [
  at('ampersand_escape', '{{&text}} {{{text}}} {{text}}', () => ({ text: '<a href="x">&amp;</a>' })),
  at('apostrophe', "{{apos}}{{control}}", () => ({ apos: "'", control: 'X' })),
  at('array_of_strings', '{{#list}}[{{.}}]{{/list}}', () => ({ list: ['one', 'two', 'three'] })),
  at('avoids_obj_prototype_in_view_cache', '{{valueOf}} {{watch}}', () => ({ valueOf: 'own value', watch: 'own watch' })),
  at('backslashes', '{{value}}\n{{{value}}}\n<pre>\\n{{value}}</pre>', () => ({ value: '\\abc\\' })),
  at('bom_as_whitespace', '\ufeff{{#list}}{{x}}{{/list}}', () => ({ list: [{ x: 1 }, { x: 2 }] })),
  at('bug_11_eating_whitespace', '{{tag}} sits', () => ({ tag: 'it' })),
  at('bug_length_property', '{{#length}}The length is {{length}}{{/length}}', () => ({ length: 'long' })),
  at('changing_delimiters', '{{=<% %>=}}<% a %> {{b}} <%={{ }}=%>{{b}}', () => ({ a: 'A', b: 'B' })),
  at('check_falsy', '{{#list}}<{{#x}}t{{/x}}{{^x}}f{{/x}}>{{/list}}', () => ({ list: [{ x: 0 }, { x: '' }, { x: false }, { x: null }, { x: 1 }] })),
  at('comments', '<h1>{{title}}{{! this is ignored }}</h1>', () => ({ title: () => 'Heading' })),
  at('complex', '{{header}}\n{{#list}}{{#item}}<li>{{name}}{{#current}}*{{/current}}</li>{{/item}}{{/list}}{{^list}}empty{{/list}}', () => ({
    header: () => 'Colours',
    item: [
      { name: 'red', current: true },
      { name: 'green', current: false },
    ],
    list() {
      return this.item.length !== 0;
    },
  })),
  at('context_lookup', '{{#outer}}{{#inner}}{{id}}-{{outer.id}}{{/inner}}{{/outer}}', () => ({ outer: { id: 1, inner: { id: 2 } } })),
  at('current_context_last', '{{#people}}{{name}}{{^last}}, {{/last}}{{/people}}', () => ({
    people: [{ name: 'a' }, { name: 'b' }, { name: 'c', last: true }],
  })),
  at('current_context_oddeven', '{{#rows}}{{#odd}}odd{{/odd}}{{^odd}}even{{/odd}} {{/rows}}', () => ({ rows: [{ odd: true }, { odd: false }, { odd: true }] })),
  at('delimiters', '{{=<% %>=}}* <% first %>\n<%=| |=%>* | second |\n|={{ }}=|* {{ third }}', () => ({ first: 1, second: 2, third: 3 })),
  at('disappearing_whitespace', '{{#bed}}{{^sleep}}up{{/sleep}}{{/bed}} {{name}}', () => ({ bed: true, sleep: false, name: 'n' })),
  at('dot_notation', '{{a.b.c}} {{a.b.missing}} {{#a}}{{b.c}}{{/a}} {{list.length}} {{name.length}}', () => ({ a: { b: { c: 'deep' } }, list: [1, 2, 3], name: 'four' })),
  at('double_render', '{{#on}}{{text}}{{/on}}', () => ({ on: true, text: '{{other}}', other: 'WRONG' })),
  at('empty_list', '[{{#list}}x{{/list}}]', () => ({ list: [] })),
  at('empty_string', '{{#s}}no{{/s}}{{^s}}yes{{/s}}{{s}}', () => ({ s: '' })),
  at('error_not_found', '[{{missing}}][{{a.b}}][{{#none}}x{{/none}}]', () => ({ a: {} })),
  at('escaped', '{{title}} {{entities}}', () => ({ title: () => 'A & B "quoted"', entities: "&quot; \"'<>/`=" })),
  at('falsy', '{{#f}}x{{/f}}{{#z}}x{{/z}}{{#n}}x{{/n}}{{#u}}x{{/u}}{{#e}}x{{/e}}|{{f}}{{z}}{{n}}{{u}}{{e}}', () => ({ f: false, z: 0, n: null, u: undefined, e: '' })),
  at('falsy_array', '{{#list}}{{#.}}[{{.}}]{{/.}}{{^.}}<{{.}}>{{/.}}{{/list}}', () => ({ list: [[], [0], [''], [null], [false, 'x']] })),
  at('grandparent_context', '{{#a}}{{#b}}{{#c}}{{g}}{{p}}{{own}}{{/c}}{{/b}}{{/a}}', () => ({ g: 'G', a: { p: 'P', b: { c: { own: 'O' } } } })),
  at('higher_order_sections', '{{#wrap}}Hi {{name}}.{{/wrap}}', () => ({
    name: 'Tater',
    helper: 'to tinker',
    wrap() {
      return (text) => `<b>${text}</b> ${this.helper}`;
    },
  })),
  at('implicit_iterator', '{{#data}}{{#list}}({{.}}){{/list}}{{/data}}', () => ({ data: { list: ['a', 1, 0.5, true, null] } })),
  at('included_tag', 'You said "{{{html}}}" {{html}}', () => ({ html: 'I like {{mustache}}' })),
  // mustache.js 4.2.0 has no template inheritance: `{{<name}}` and `{{$name}}` are variables
  // whose names start with a sigil, and `{{/name}}` closes only a section.
  at('inheritance_empty_list_section', '{{<base}}[{{#list}}x{{/list}}]{{$b}}', () => ({ '<base': 'B', list: [], $b: 'b' })),
  at('inheritance_false_section', '{{<base}}{{#f}}x{{/f}}{{^f}}{{$b}}{{/f}}', () => ({ '<base': 'B', f: false, $b: 'b' })),
  at('inheritance_no_new_context', '{{#$b}}{{name}}{{/$b}}', () => ({ $b: { other: 1 }, name: 'outer' })),
  at('inheritance_only_once', '{{<base}}{{<base}}', () => ({ '<base': () => 'once' })),
  at('inheritance_partials_can_override_duplicated', '{{>base}}', () => ({ $b: 'v' }), { base: '{{$b}}{{$b}}' }),
  at('inheritance_partials_can_override_nested_section', '{{#s}}{{>base}}{{/s}}', () => ({ s: { $b: 'inner' }, $b: 'outer' }), { base: '{{$b}}' }),
  at('inheritance_partials_can_override_recursive', '{{>base}}', () => ({ $b: 'v' }), { base: '{{>inner}}', inner: '<{{$b}}>' }),
  at('inheritance_partials_cannot_overide', '{{>base}}{{$b}}', () => ({ $b: 'v' }), { base: '{{$b}}d' }),
  at('inverted_section', '{{^list}}none{{/list}}{{^full}}x{{/full}}{{^missing}}m{{/missing}}', () => ({ list: [], full: [1] })),
  at('issue_330', '{{#nums}}{{.}}{{^.}}zero{{/.}}{{/nums}}', () => ({ nums: [0, 1, 2] })),
  at('js_escape', '{{expr}} {{{expr}}}', () => ({ expr: "</script><script>alert('x')" })),
  at('keys_with_questionmarks', '{{#ok?}}{{ok?}}{{/ok?}}', () => ({ 'ok?': 'yes' })),
  at('list_example', '{{#items}}- {{name}}: {{price}}\n{{/items}}', () => ({ items: [{ name: 'a', price: 1 }, { name: 'b', price: 2.5 }] })),
  at('method_interpolation', '{{f.g}}|{{o.m}}|{{o.inner.m}}', () => ({
    f() {
      return { g: () => 'never' };
    },
    o: { _v: 'o', m() { return this._v; }, inner: { _v: 'inner', m() { return this._v; } } },
    _v: 'top',
  })),
  at('nested_dot', '{{#a}}{{a.b}}{{/a}}|{{a.b.c}}', () => ({ a: { b: 'x' } })),
  at('nested_iterating', '{{#outer}}{{#inner}}{{name}}{{/inner}};{{/outer}}', () => ({ outer: [{ inner: [{ name: 'a' }, { name: 'b' }] }, { inner: [] }] })),
  at('nesting', '{{#a}}{{#b}}{{#c}}{{d}}{{/c}}{{/b}}{{/a}}', () => ({ a: [{ b: [{ c: [{ d: 1 }, { d: 2 }] }] }] })),
  at('nesting_same_name', '{{#items}}{{#items}}{{.}}{{/items}}{{/items}}', () => ({ items: [{ items: [1, 2] }, { items: [3] }] })),
  at('null_lookup_array', '{{#list}}[{{name}}:{{missing}}]{{/list}}', () => ({ missing: 'outer', list: [{ name: 'a', missing: null }, { name: 'b', missing: undefined }] })),
  at('null_lookup_object', '{{#person}}{{name}}/{{pet.name}}/{{fav.color}}{{/person}}', () => ({
    fav: { color: 'blue' },
    pet: { name: 'outer pet' },
    person: { name: 'p', pet: null, fav: { color: undefined } },
  })),
  at('null_string', '{{n}}|{{u}}|{{#n}}x{{/n}}|{{s}}', () => ({ n: null, u: undefined, s: 'null' })),
  at('null_view', '[{{name}}]', () => null),
  at('partial_array', '{{>row}}', () => ({ list: [1, 2, 3] }), { row: '{{#list}}<{{.}}>{{/list}}' }),
  at('partial_array_of_partials', '{{#rows}}{{>row}}{{/rows}}', () => ({ rows: [{ v: 1 }, { v: 2 }] }), { row: '({{v}})' }),
  at('partial_array_of_partials_implicit', '{{#rows}}{{>row}}{{/rows}}', () => ({ rows: ['a', 'b'] }), { row: '({{.}})' }),
  at('partial_dynamic_collection', '{{#items}}{{>item}}{{/items}}', () => ({ items: [{ kind: 'x', v: 1 }, { kind: 'y', v: 2 }] }), { item: '{{kind}}={{v}};' }),
  at('partial_dynamic_collection_implicit', '{{#items}}{{>item}}{{/items}}', () => ({ items: ['x', 'y'] }), { item: '[{{.}}]' }),
  at('partial_empty', 'a{{>missing}}b', () => ({}), {}),
  at('partial_function', '{{>p}}', () => ({ id: 'main', v: 'val' }), { p: '{{id}}:{{v}}' }),
  at('partial_recursion', '{{>node}}', () => ({ name: 'root', kids: [{ name: 'a', kids: [{ name: 'b', kids: [] }] }] }), { node: '{{name}}({{#kids}}{{>node}}{{/kids}})' }),
  at('partial_template', '{{>p}}', () => ({ again: 'twice' }), { p: 'again: {{again}}' }),
  at('partial_whitespace', '  {{> p }}\n', () => ({ a: 1 }), { p: '<{{a}}>\n' }),
  at('piped_helpers_date', '{{#stamp}}{{iso}}{{/stamp}}', () => ({
    stamp: 0,
    iso() {
      return new Date(this).toISOString();
    },
  })),
  at('piped_helpers_sum', '{{#nums}}{{twice}} {{/nums}}', () => ({
    nums: [1, 2, 3],
    twice() {
      return this * 2;
    },
  })),
  at('pipeline', '{{ name | upper }}', () => ({ name: 'n', 'name | upper': 'piped' })),
  at('recursion_with_same_names', '{{name}}{{#terms}}[{{name}}{{index}}]{{/terms}}', () => ({ name: 'top', terms: [{ name: 't1', index: 0 }, { name: 't2', index: 1 }] })),
  at('reuse_of_enumerables', '{{#terms}}{{name}}{{/terms}}|{{#terms}}{{index}}{{/terms}}', () => ({ terms: [{ name: 'a', index: 0 }, { name: 'b', index: 1 }] })),
  at('section_as_context', '{{#obj}}{{title}}{{#list}}<{{item}}>{{/list}}{{/obj}}', () => ({ obj: { title: 'T', list: [{ item: 1 }, { item: 2 }] } })),
  at('section_functions_delimiters', '{{=[[ ]]=}}[[#lambda]]x[[/lambda]]', () => ({
    lambda: () => (text, render) => render(`<${text}>[[v]]`),
    v: 'V',
  })),
  at('section_functions_in_partials', '{{>p}} {{#bold}}top{{/bold}}', () => ({ bold: () => (text, render) => `<b>${render(text)}</b>` }), { p: '{{#bold}}in partial{{/bold}}' }),
  at('simple', 'Hello {{name}}, you have {{value}} ({{taxed}})', () => ({
    name: 'Chris',
    value: 10000,
    taxed() {
      return this.value - this.value * 0.4;
    },
  })),
  at('string_as_context', '{{#list}}{{.}}-{{length}};{{/list}}', () => ({ list: ['ab', 'cde'] })),
  at('tags_template', '{{=| |=}}|a| {{b}}', () => ({ a: 1, b: 2 })),
  at('two_in_a_row', '{{greeting}}, {{name}}!', () => ({ greeting: 'Welcome', name: 'Joe' })),
  at('unescaped', '{{{title}}} {{&title}}', () => ({ title: () => '<Bear> & <Man>' })),
  at('uses_props_from_view_prototype', '{{item.x}}{{item.y}}|{{#items}}{{a.x}}{{a.y}}{{#a}}{{x}}{{y}}{{/a}};{{/items}}', () => {
    function Root() {}
    const root = new Root();
    root.item = new Point('0', '00');
    root.items = [{ a: new Point('1', '2') }, { a: new Point('3', '4') }];
    return root;
  }),
  at('whitespace', '{{#s}}\n  {{a}}\n{{/s}}\n  {{b}}  \n', () => ({ s: true, a: 'A', b: 'B' })),
  at('zero_view', '{{#nums}}{{.}},{{/nums}}{{zero}}', () => ({ nums: [0, 1, 2], zero: 0 })),
];

test("mustache.js's render fixtures' behaviours: one case each, rendered by both, the same", async () => {
  expect(FIXTURES.length).toBeGreaterThanOrEqual(60);
  expect(new Set(FIXTURES.map((c) => c.name)).size).toBe(FIXTURES.length);
  expect(await differences(FIXTURES)).toEqual([]);
  // Cases that render (a case both refuse alike would pass without showing much).
  const rendered = FIXTURES.filter((c) => 'ok' in viaMustache(c)).length;
  expect(rendered).toBe(FIXTURES.length - 1); // null_view throws in both, by design
});

// Views that are not plain data, as mustache.js renders them.
const DATE = new Date(Date.UTC(2024, 1, 29, 12, 30));

class Shape {
  constructor(name) {
    this.name = name;
  }
  get label() {
    return `shape ${this.name}`;
  }
  describe() {
    return `${this.label} (${this.name})`;
  }
  toString() {
    return `Shape<${this.name}>`;
  }
}
class Circle extends Shape {
  constructor(r) {
    super('circle');
    this.r = r;
  }
  get area() {
    return Math.round(Math.PI * this.r * this.r);
  }
}
class Secret {
  #hidden = 'private';
  reveal() {
    return this.#hidden;
  }
}
class Money {
  constructor(cents) {
    this.cents = cents;
  }
  valueOf() {
    return this.cents / 100;
  }
}

const OBJECTS = [
  at('a Date printed, escaped and raw', '{{d}}|{{{d}}}|{{&d}}', () => ({ d: DATE })),
  at('a Date as a section and its methods', '{{#d}}{{getUTCFullYear}}-{{toISOString}}|{{.}}{{/d}}{{^d}}never{{/d}}', () => ({ d: DATE })),
  at('a Date method by dotted name (called on the view: a TypeError in both)', '{{d.getTime}}', () => ({ d: DATE })),
  at('an invalid Date', '{{d}}', () => ({ d: new Date(NaN) })),
  at('Dates in rows', '{{#rows}}{{n}} {{when}};{{/rows}}', () => ({ rows: [1, 2, 3].map((n) => ({ n, when: new Date(Date.UTC(2020, n, n)) })) })),
  at('a class instance: fields, prototype getters, methods, toString', '{{s.name}}|{{s.label}}|{{s}}|{{#s}}{{describe}}{{/s}}', () => ({ s: new Shape('sq') })),
  at('a subclass: getters of both prototypes', '{{#c}}{{name}} {{r}} {{area}} {{label}} {{describe}}{{/c}}|{{c.area}}|{{c}}', () => ({ c: new Circle(2) })),
  at('a method reading a private field', '{{#s}}{{reveal}}{{/s}}', () => ({ s: new Secret() })),
  at('a function-style class and its prototype data', '{{#l}}{{greeting}} {{kind}}{{/l}}|{{l.kind}}', () => ({ l: new Legacy('ann') })),
  at('valueOf against toString: {{{x}}} is "" + x, {{x}} is String(x)', '{{m}}|{{{m}}}', () => ({ m: new Money(1250) })),
  at('an instance as the root view', '{{name}}:{{label}}', () => new Shape('root')),
  at('an instance in an array', '{{#list}}{{label}},{{/list}}', () => ({ list: [new Shape('a'), new Shape('b')] })),
  at('a view function sees the instance as `this`', '{{#s}}{{isShape}}{{/s}}', () => ({
    s: new Shape('t'),
    isShape() {
      return this instanceof Shape;
    },
  })),
  at('a lambda on an instance context', '{{#s}}{{#bold}}{{name}}{{/bold}}{{/s}}', () => ({
    s: new Shape('x'),
    bold() {
      return (text, render) => `<b>${render(text)}</b>${this instanceof Shape}`;
    },
  })),
  at('a Map: printed, size, keys not properties', '{{m}}|{{m.size}}|{{m.a}}|{{#m}}{{size}}{{/m}}', () => ({ m: new Map([['a', 1]]) })),
  at('a Map method by name in its section (this is the Map)', '{{#m}}{{keys}}{{/m}}', () => ({ m: new Map([['a', 1]]) })),
  at('a Set', '{{s}}|{{s.size}}|{{#s}}{{size}}{{/s}}{{^s}}none{{/s}}', () => ({ s: new Set([1, 2]) })),
  at('an empty Map is truthy', '{{#m}}yes{{/m}}{{^m}}no{{/m}}', () => ({ m: new Map() })),
  at('an Error: message, name, printing', '{{e.message}}|{{e.name}}|{{e}}', () => ({ e: new TypeError('bad thing') })),
  at('a RegExp', '{{r}}|{{r.source}}|{{r.flags}}', () => ({ r: /a+b/gi })),
  at('a boxed number and boolean', '{{n}}|{{#b}}b{{/b}}', () => ({ n: Object(5), b: Object(false) })),
  at('an object with its own toString', '{{o}}|{{#o}}{{v}}{{/o}}', () => ({ o: { v: 1, toString: () => 'custom' } })),
  at('an object with a toJSON method (mustache.js ignores it)', '{{#o}}{{a}}{{/o}}|{{o.a}}', () => ({ o: { a: 'real', toJSON: () => ({ a: 'json' }) } })),
  at('a null-prototype object', '{{o.a}}|{{#o}}{{a}}{{/o}}', () => {
    const o = Object.create(null);
    o.a = 'x';
    return { o };
  }),
  at('an object made from a prototype object', '{{o.a}}|{{o.inherited}}', () => ({ o: Object.create({ inherited: 'from proto' }, { a: { value: 'own', enumerable: true } }) })),
  at('BigInts: printed, raw, in sections', '{{n}}|{{{n}}}|{{#n}}t{{/n}}{{^z}}zero is falsy{{/z}}', () => ({ n: 12345678901234567890n, z: 0n })),
  at('a symbol escaped (String) and raw ("" + symbol throws)', '{{s}}', () => ({ s: Symbol('sym') })),
  at('a symbol raw throws a TypeError', '{{{s}}}', () => ({ s: Symbol('sym') })),
  at('a getter that throws, looked up: the getter\'s error', '{{#s}}{{bad}}{{/s}}', () => ({ s: new (class { get bad() { throw new Error('getter failed'); } })() })),
  at('a getter that throws, not looked up: no error', '{{ok}}', () => ({ ok: 'fine', s: new (class { get bad() { throw new Error('getter failed'); } })() })),
  at('a plain object\'s own getter that throws, looked up', '{{o.bad}}', () => ({ o: { get bad() { throw new RangeError('own getter'); } } })),
  at('a section function returning an instance and a Date', '{{#f}}{{label}}{{/f}}|{{#g}}{{getUTCDate}}{{/g}}', () => ({ f: () => new Shape('ret'), g: () => DATE })),
  at('the same instance twice', '{{a.label}}{{b.label}}', () => {
    const s = new Shape('same');
    return { a: s, b: s };
  }),
];

test('Dates, class instances, prototype getters, Maps, Sets, throwing getters, BigInts and symbols render as in mustache.js', async () => {
  expect(await differences(OBJECTS)).toEqual([]);
});

// Objects mustache.js prints otherwise than a plain object: one without a prototype (String()
// throws: mustache.js throws that TypeError), an arguments object ('[object Arguments]', and
// its `length` is a property `in` finds). Each alone in a view that is otherwise plain data
// (which crosses packed), inside a view that is not (a Date beside it), and behind a Proxy.
const bare = (fields) => Object.assign(Object.create(null), fields);
const args = (...items) =>
  (function () {
    return arguments;
  })(...items);
const ODD_OBJECTS = [
  at('an object without a prototype, printed', '{{o}}', () => ({ o: bare({ a: 'x' }) })),
  at('an object without a prototype, printed raw', '{{{o}}}', () => ({ o: bare({ a: 'x' }) })),
  at('an object without a prototype, printed beside a Date', '{{d}}{{o}}', () => ({ d: DATE, o: bare({ a: 'x' }) })),
  at('an object without a prototype, printed in an array', '{{list}}', () => ({ list: [1, bare({})] })),
  at('an object without a prototype as a section item', '{{#list}}{{.}}{{/list}}', () => ({ list: [bare({ a: 1 })] })),
  at('an object without a prototype as the view', '{{.}}', () => bare({ a: 'x' })),
  at('an object without a prototype, behind a Proxy', '{{p}}', () => ({ p: new Proxy(bare({ a: 1 }), {}) })),
  at('an object without a prototype, not printed: its fields, non-enumerable too', '{{o.a}}|{{#o}}{{a}}{{hidden}}{{/o}}', () => ({
    o: Object.defineProperty(bare({ a: 'x' }), 'hidden', { value: 'h', enumerable: false }),
  })),
  at('an arguments object, printed', '{{a}}|{{{a}}}', () => ({ a: args(1, 'b') })),
  at('an arguments object: items and length', '{{a.0}}|{{a.1}}|{{a.length}}', () => ({ a: args(1, 'b') })),
  at('an arguments object as a section', '{{#a}}[{{.}}:{{length}}]{{/a}}', () => ({ a: args(1, 'b') })),
  at('an arguments object beside a Date', '{{d}}|{{a}}|{{a.length}}', () => ({ d: DATE, a: args(3) })),
  at('an arguments object in an array', '{{list}}', () => ({ list: [args(), 2] })),
  at('an arguments object as the view', '{{0}}{{length}}|{{.}}', () => args('z')),
  // (Node 26, property seed -230841716: a BigInt as `toString` is no method: String() throws.)
  at('an own toString that is a BigInt, printed', '{{a}}', () => ({ a: { toString: 0n } })),
  at('an own toString that is a BigInt, in an array', '{{list}}', () => ({ list: [{ toString: 1n }] })),
  at('an own toString that is a BigInt, read by name', '{{#a}}{{toString}}{{/a}}', () => ({ a: { toString: 2n } })),
  at('an own toString that is a symbol, valueOf a method', '{{a}}', () => ({ a: { toString: Symbol('s'), valueOf: () => 7 } })),
  at('an own valueOf that is a BigInt, printed raw', '{{{a}}}|{{a}}', () => ({ a: { valueOf: 3n } })),
];

test('objects without a prototype, arguments objects and objects whose toString is no function print, and read, as in mustache.js', async () => {
  expect(await differences(ODD_OBJECTS)).toEqual([]);
  // (Printing one without a prototype throws in mustache.js: the render rejects with that error.)
  expect(ODD_OBJECTS.filter((c) => 'error' in viaMustache(c)).length).toBe(9);
});

test("a throwing getter rejects the render with the getter's own error, as mustache.js throws it", async () => {
  const boom = new Error('from the getter');
  const view = { s: new (class { get bad() { throw boom; } })() };
  await expect(pool.render('{{s.bad}}', view)).rejects.toBe(boom);
  expect(() => Mustache.render('{{s.bad}}', view)).toThrow(boom);
  // Only when the template looks it up: the other names still render.
  expect(await pool.render('{{#s}}x{{/s}}', view)).toBe(Mustache.render('{{#s}}x{{/s}}', view));
});

test('prototype getters are read on the calling thread, at most once per property per render', async () => {
  const reads = new Map();
  class Counted {
    get a() {
      reads.set('a', (reads.get('a') ?? 0) + 1);
      return 'A';
    }
    get b() {
      reads.set('b', (reads.get('b') ?? 0) + 1);
      return 'B';
    }
  }
  const template = '{{c.a}}{{#c}}{{a}}{{a}}{{b}}{{/c}}{{#list}}{{c.a}}{{/list}}';
  const theirs = Mustache.render(template, { c: new Counted(), list: [1, 2, 3] });
  expect(reads.get('a')).toBeGreaterThan(1); // mustache.js reads it at each lookup
  reads.clear();
  const out = await pool.render(template, { c: new Counted(), list: [1, 2, 3] });
  expect(out).toBe(theirs);
  expect(out).toBe('AAABAAA');
  expect([...reads.entries()].sort()).toEqual([
    ['a', 1],
    ['b', 1],
  ]);
});

test('every getter of a view is read once per render, wherever it is and whatever else the view holds', async () => {
  // Values plain data cannot hold (NaN, undefined, a BigInt, a Date, an instance) once sent a
  // view the long way, read again there: a plain object's own getter twice or three times, and
  // a getter of an object an instance's getter returned twice.
  const reads = new Map();
  const count = (name, value) => {
    reads.set(name, (reads.get(name) ?? 0) + 1);
    return value;
  };
  class Box {
    get inner() {
      return count('Box.inner', { get deep() { return count('inner.deep', 'D'); } });
    }
    get label() {
      return count('Box.label', 'L');
    }
  }
  const template = '{{own}}|{{box.label}}|{{box.inner.deep}}|{{#list}}{{item}}{{/list}}|{{n}}|{{u}}|{{b}}';
  const view = () => ({
    get own() {
      return count('own', 'O');
    },
    box: new Box(),
    list: [{ get item() { return count('item', 'I'); } }],
    n: NaN,
    u: undefined,
    b: 10n,
    d: new Date(0),
  });
  const theirs = Mustache.render(template, view());
  for (const make of [view, () => ({ ...view(), f: () => 'fn' })]) {
    reads.clear();
    expect(await pool.render(template, make())).toBe(theirs);
    expect(Object.fromEntries(reads)).toEqual({ own: 1, 'Box.label': 1, 'Box.inner': 1, 'inner.deep': 1, item: 1 });
  }
});

test('a view prepared the long way is not copied for a NaN: a Proxy array whose has trap throws still renders as in mustache.js', async () => {
  // (Nested deeper than the packed walk goes, the view is prepared first; NaN !== NaN made a
  // copy of the array, whose slice() ran the trap, and the render rejected with its error.)
  let deep = [''];
  for (let i = 0; i < 70; i++) deep = [deep];
  const view = () => ({ a: new Proxy([deep, NaN], { has() { throw new Error('the has trap throws'); } }) });
  expect(await pool.render('{{a}}', view())).toBe(Mustache.render('{{a}}', view()));
});

test('a Proxy array the view needs copied (a BigInt in it) is copied from the values read: its has trap never runs', async () => {
  // (The copy was made with slice(), which asks the has trap: a trap mustache.js never runs
  // replaced the array with its error, and a view nested too deep behind it went unchecked.)
  let deep = [''];
  for (let i = 0; i < 70; i++) deep = [deep];
  let asked = 0;
  const view = (inner = deep) => ({
    a: new Proxy([inner, 0n, 'x'], {
      has() {
        asked++;
        throw new Error('the has trap throws');
      },
    }),
  });
  // (mustache.js asks the has trap itself for a dotted name, '{{a.2}}': not templates here.)
  for (const template of ['{{#a}}[{{.}}]{{/a}}', '{{^a}}none{{/a}}{{#a}}{{#.}}<{{.}}>{{/.}}{{/a}}', 'no tags']) {
    const theirs = Mustache.render(template, view());
    expect(asked).toBe(0);
    expect(await pool.render(template, view())).toBe(theirs);
  }
  expect(asked).toBe(0);
  // Behind such a Proxy, a view nested more than the limit is refused as anywhere else.
  let tooDeep = 1;
  for (let i = 0; i < 600; i++) tooDeep = [tooDeep];
  const e = await pool.render('no tags', view(tooDeep)).catch((x) => x);
  expect([e.code, e.message]).toEqual([RpcError.codes.InvalidParams, expect.stringMatching(/^(render: )?view\.a\[0\](\[0\])+.* is nested more than 512 levels deep$/)]);
  expect(asked).toBe(0);
});

test('exec("render") keeps its plain-data contract: a Date or an instance is refused there', async () => {
  for (const data of [{ d: new Date(0) }, { s: new Shape('x') }]) {
    const e = await pool.exec('render', '{{d}}', data).catch((x) => x);
    expect(e).toBeInstanceOf(RpcError);
    expect(e.code).toBe(RpcError.codes.InvalidParams);
    expect(e.message).toMatch(/^params\[1\]\.[ds] /);
  }
});

test("what stays refused names the place in the caller's terms: view, partials, config", async () => {
  const e1 = await pool.render('{{a}}', { items: [{}, {}, {}, { when: new Uint8Array(1) }] }).catch((x) => x);
  expect([e1.code, e1.message]).toEqual([RpcError.codes.InvalidParams, expect.stringMatching(/^render: view\.items\[3\]\.when is a Uint8Array/)]);
  const fn = Object.assign(() => 1, { own: 1 });
  const e2 = await pool.render('{{a}}', { a: { b: fn } }).catch((x) => x);
  expect(e2.message).toMatch(/^view\.a\.b is a function with a property of its own/);
  expect(e2.stack).toMatch(/view\.a\.b is a function/);
  expect(e2.message).not.toMatch(/params\[/);
  const e3 = await pool.render('{{>p}}', {}, { p: new Date(0) }).catch((x) => x);
  expect(e3.message).toMatch(/^partials\.p /);
});

describe('hostile and random views that are not plain data', () => {
  const fc = require('fast-check');
  const { check, LIMIT_MS } = require('./helpers/property/run.js');

  test('cycles stay refused, naming the place; Proxies, own __proto__ keys and re-entrant getters render as in mustache.js', async () => {
    class Node {
      constructor(n) {
        this.n = n;
      }
      get self() {
        return this;
      }
    }
    const cyclic = await pool.render('{{#node}}{{n}}{{/node}}', { node: new Node(1) }).catch((e) => e);
    expect([cyclic.code, cyclic.message]).toEqual([RpcError.codes.InvalidParams, 'view.node.self is cyclic: it is view.node again']);
    const trapped = await pool.render('{{p.a}}', { p: new Proxy(new Node(1), { getPrototypeOf() { throw new Error('trap'); } }) }).catch((e) => e);
    expect([trapped.code, trapped.message]).toEqual([RpcError.codes.InvalidParams, expect.stringMatching(/^view\.p: .*trap/)]);
    const cases = [
      at('a Proxy of an instance', '{{p.n}}|{{#p}}{{n}}{{/p}}', () => ({ p: new Proxy(new Shape('proxied'), {}) })),
      at('an own __proto__ key on an instance', '{{o.__proto__}}|{{o.x}}', () => {
        const o = new Shape('o');
        Object.defineProperty(o, '__proto__', { value: 'own', enumerable: true });
        o.x = 1;
        return { o };
      }),
      at('a getter that renders on the pool while the view is prepared', '{{#s}}{{nested}}{{/s}}', () => ({
        s: new (class {
          get nested() {
            void pool.render('{{d}}', { d: new Date(0) });
            return 'nested';
          }
        })(),
      })),
      at('a symbol-keyed property is not a name', '{{o}}', () => ({ o: { [Symbol('k')]: 1, toString: () => 'plain' } })),
    ];
    expect(await differences(cases)).toEqual([]);
  });

  test(
    'random class instances (fields, getters, methods, subclasses, Dates inside) render as in mustache.js',
    async () => {
      const name = fc.constantFrom('a', 'b', 'c', 'd');
      const scalar = fc.oneof(fc.constantFrom('<x>', 'y & z', '', 0, 1, 2.5, true, false, null), fc.constant(new Date(Date.UTC(2001, 2, 3))));
      const member = fc.record({ name, kind: fc.constantFrom('field', 'getter', 'method', 'inherited getter', 'inherited method'), value: scalar });
      const tag = fc.oneof(
        name.map((n) => `{{${n}}}`),
        name.map((n) => `{{{${n}}}}`),
        name.map((n) => `{{o.${n}}}`),
        fc.tuple(name, name).map(([n, m]) => `{{#o}}{{${n}}}{{/o}}{{#${m}}}[{{.}}]{{/${m}}}`),
        name.map((n) => `{{^${n}}}none{{/${n}}}`),
      );
      await check(
        fc.asyncProperty(fc.array(member, { maxLength: 6 }), fc.array(tag, { minLength: 1, maxLength: 8 }), async (members, tags) => {
          const make = () => {
            class Base {}
            class Derived extends Base {}
            const o = new Derived();
            for (const { name: n, kind, value } of members) {
              const proto = kind.startsWith('inherited') ? Base.prototype : Derived.prototype;
              if (kind === 'field') Object.defineProperty(o, n, { value, enumerable: true, configurable: true, writable: true });
              else if (kind.endsWith('getter')) Object.defineProperty(proto, n, { get: () => value, configurable: true });
              else Object.defineProperty(proto, n, { value: () => value, configurable: true, writable: true });
            }
            return { o, a: 'top' };
          };
          const c = at('random', tags.join('|'), make);
          expect(await differences([c])).toEqual([]);
        }),
        200,
      );
    },
    LIMIT_MS,
  );
});

test('a view to prepare that holds too many values, or an array of a huge length, is refused before it is walked', async () => {
  const huge = [];
  huge.length = 2 ** 31;
  const e = await pool.render('{{d}}', { d: new Date(0), huge }).catch((x) => x);
  expect([e.code, e.message]).toEqual([RpcError.codes.InvalidParams, expect.stringMatching(/^render: view holds more than the \d+ values/)]);
  // An object reached many times is prepared once (and then sent as the walk counts it).
  const row = Array.from({ length: 100 }, (_, i) => i);
  const many = Array.from({ length: 1000 }, () => row);
  expect(await pool.render('{{d}}{{many.999.99}}', { d: new Date(0), many })).toBe(Mustache.render('{{d}}{{many.999.99}}', { d: new Date(0), many }));
  expect(await pool.render('{{d}}', { d: new Date(0) })).toBe(Mustache.render('{{d}}', { d: new Date(0) }));
});
