//! Packed params read into a tree that commands can read in place: one array of nodes, one
//! text, one list of keys, instead of a [`Value`] per value.
//!
//! Why: unpacking a 200-row table into values costs more than rendering it (an allocation per
//! string and per object, and as many frees after the call); a command that only reads its
//! params, such as `render`, can read them here instead. The tree is built in one walk of the
//! tape with the same checks as [`Packed::into_unpacked`], so a tape that does not fit the
//! rules is the same error either way, and what a reader finds is what the values hold:
//! the same strings (a lone surrogate is U+FFFD), the same keys in the same order.
//!
//! Layout: a container's children are consecutive nodes (an array's items, an object's
//! values), and an object's keys are consecutive spans of `keys`; the walk keeps each
//! container's children on a scratch stack until the container ends, then moves them to the
//! end of `nodes`. Strings and keys are spans of `text`, the UTF-8 of every string and key in
//! tape order. Every index is a `u32`: a tape has at most 2^24 values (lib/params.js) and the
//! text at most 2^30 UTF-16 units (one JS string), so each fits, and is checked to.

use super::OBJECT_SHAPE;
use super::{repeats, used_tape, wrong, Cursor, Packed, ARRAY, FALSE, NULL, NUMBER, OBJECT};
use super::{FUNCTION, SHAPED, STRING, TRUE};
use crate::rpc::text::{latin1_to_utf8, JsText};
use crate::rpc::value::{FunctionId, Map, Value};
use std::collections::HashMap;

/// Packed params, read in place. See the module doc.
#[derive(Debug)]
pub struct Tree {
    /// A first param that travelled apart (a template).
    first: Option<String>,
    /// The params array (the others, when `first` travelled apart).
    root: Node,
    nodes: Vec<Node>,
    keys: Vec<Span>,
    text: String,
    /// Whether any node is a function (only `pool.render`'s params hold them).
    functions: bool,
}

/// A run of `Tree::text`.
#[derive(Clone, Copy, Debug)]
struct Span {
    start: u32,
    len: u32,
}

/// One value: its kind and where its parts are.
#[derive(Clone, Copy, Debug)]
enum Node {
    Null,
    Bool(bool),
    Number(f64),
    String(Span),
    Function(FunctionId),
    /// `len` items at `nodes[start..]`.
    Array {
        start: u32,
        len: u32,
    },
    /// `len` values at `nodes[start..]`, keyed by `keys[keys..]`.
    Object {
        start: u32,
        keys: u32,
        len: u32,
    },
}

/// What a reader finds in a tree: a value, with its strings borrowed from the tree.
#[derive(Clone, Copy, Debug)]
pub enum Item<'t> {
    Null,
    Bool(bool),
    Number(f64),
    String(&'t str),
    Function(FunctionId),
    Array(List<'t>),
    Object(Record<'t>),
}

/// An array of a tree.
#[derive(Clone, Copy, Debug)]
pub struct List<'t> {
    tree: &'t Tree,
    start: u32,
    len: u32,
}

/// An object of a tree: its node. (Two words, like the other things a renderer's value holds.)
#[derive(Clone, Copy, Debug)]
pub struct Record<'t> {
    tree: &'t Tree,
    node: u32,
}

impl Tree {
    /// Reads packed params (the same checks, and errors, as [`Packed::into_unpacked`]).
    pub fn read(packed: Packed) -> Result<Tree, String> {
        let Packed { first, tape, text } = packed;
        let tape = used_tape(&tape)?;
        let mut walk = Walk {
            nodes: Vec::with_capacity(tape.len() / 2),
            keys: Vec::new(),
            shapes: Vec::new(),
            plans: Vec::new(),
            text: String::new(),
            taken: 0,
            functions: false,
        };
        let root = match &text {
            JsText::Latin1(bytes) => walk.read(Cursor::new(tape, bytes))?,
            JsText::Utf16(units) => walk.read(Cursor::new(tape, units))?,
            JsText::Utf8(s) => {
                // Not made by the binding (it reads Latin-1 or UTF-16), but whole: as UTF-16.
                let units: Vec<u16> = s.encode_utf16().collect();
                walk.read(Cursor::new(tape, &units))?
            }
        };
        Ok(Tree {
            first,
            root,
            nodes: walk.nodes,
            keys: walk.keys,
            text: walk.text,
            functions: walk.functions,
        })
    }

    /// Whether the params hold a function.
    pub fn has_functions(&self) -> bool {
        self.functions
    }

    /// How many params there are (a first one apart included).
    pub fn len(&self) -> usize {
        usize::from(self.first.is_some()) + self.root_list().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Param `i`.
    pub fn param(&self, i: usize) -> Option<Item<'_>> {
        match (&self.first, i) {
            (Some(first), 0) => Some(Item::String(first)),
            (Some(_), i) => self.root_list().get(i - 1),
            (None, i) => self.root_list().get(i),
        }
    }

    /// Param `i` as a value of its own (for params that are small, or read as values anyway).
    pub fn param_value(&self, i: usize) -> Option<Value> {
        self.param(i).map(Item::to_value)
    }

    /// Every param as values: what [`Packed::into_unpacked`] gives.
    pub fn into_values(mut self) -> Vec<Value> {
        let rest = self.root_list();
        let mut values = Vec::with_capacity(self.len());
        values.extend(rest.iter().map(Item::to_value));
        if let Some(first) = self.first.take() {
            values.insert(0, Value::String(first));
        }
        values
    }

    fn root_list(&self) -> List<'_> {
        match self.root {
            Node::Array { start, len } => List {
                tree: self,
                start,
                len,
            },
            // The walk makes the root an array (`used_tape` checks its tag).
            _ => List {
                tree: self,
                start: 0,
                len: 0,
            },
        }
    }

    #[inline]
    fn span(&self, span: Span) -> &str {
        let range = span.start as usize..span.start as usize + span.len as usize;
        debug_assert!(self.text.get(range.clone()).is_some());
        // SAFETY: every span is one the walk made for a run of the text's units, and the runs
        // are read in order, each once. For a UTF-16 text the walk added the run's characters
        // to the text and took their bytes; for a Latin-1 text, converted whole, it counted
        // the run's bytes (two for a unit above 0x7F, one for the others), which are whole
        // characters too. So a span starts where the previous one ended, and holds whole
        // characters: it lies on character boundaries, within the text. (The checked slice's
        // two boundary tests were a tenth of a render's lookups.)
        unsafe { self.text.get_unchecked(range) }
    }

    /// Node `at` (an index the walk made).
    #[inline]
    fn item(&self, at: usize) -> Item<'_> {
        match self.nodes[at] {
            Node::Null => Item::Null,
            Node::Bool(b) => Item::Bool(b),
            Node::Number(n) => Item::Number(n),
            Node::String(span) => Item::String(self.span(span)),
            Node::Function(id) => Item::Function(id),
            Node::Array { start, len } => Item::Array(List {
                tree: self,
                start,
                len,
            }),
            Node::Object { .. } => Item::Object(Record {
                tree: self,
                node: at as u32,
            }),
        }
    }
}

impl<'t> Item<'t> {
    /// The value this item stands for.
    pub fn to_value(self) -> Value {
        match self {
            Item::Null => Value::Null,
            Item::Bool(b) => Value::Bool(b),
            Item::Number(n) => Value::Number(n),
            Item::String(s) => Value::String(s.to_string()),
            Item::Function(id) => Value::Function(id),
            Item::Array(list) => Value::Array(list.iter().map(Item::to_value).collect()),
            Item::Object(record) => {
                let entries = record
                    .iter()
                    .map(|(k, v)| (crate::rpc::value::Key::new(k), v.to_value()))
                    .collect();
                Value::Object(Map::from_unique(entries))
            }
        }
    }
}

impl<'t> List<'t> {
    #[inline]
    pub fn len(self) -> usize {
        self.len as usize
    }

    #[inline]
    pub fn is_empty(self) -> bool {
        self.len == 0
    }

    #[inline]
    pub fn get(self, i: usize) -> Option<Item<'t>> {
        if i >= self.len() {
            return None;
        }
        Some(self.tree.item(self.start as usize + i))
    }

    /// The first item and the others.
    #[inline]
    pub fn split_first(self) -> Option<(Item<'t>, List<'t>)> {
        let first = self.get(0)?;
        Some((first, self.skip(1)))
    }

    /// The items from `i` on.
    #[inline]
    pub fn skip(self, i: usize) -> List<'t> {
        let i = i.min(self.len()) as u32;
        List {
            start: self.start + i,
            len: self.len - i,
            ..self
        }
    }

    pub fn iter(self) -> impl Iterator<Item = Item<'t>> {
        let tree = self.tree;
        (self.start as usize..self.start as usize + self.len as usize).map(move |at| tree.item(at))
    }

    /// Whether `self` and `other` are the same array (not an equal one). Empty arrays have no
    /// nodes to tell them apart by: two are never the same, an empty one not even itself.
    pub fn same(self, other: List<'_>) -> bool {
        std::ptr::eq(self.tree, other.tree)
            && self.start == other.start
            && self.len == other.len
            && self.len > 0
    }
}

impl<'t> Record<'t> {
    /// Where the entries are: `(values, keys, len)`.
    #[inline]
    fn parts(self) -> (usize, usize, usize) {
        match self.tree.nodes[self.node as usize] {
            Node::Object { start, keys, len } => (start as usize, keys as usize, len as usize),
            // Records are made of object nodes only (`Tree::item`).
            _ => (0, 0, 0),
        }
    }

    pub fn len(self) -> usize {
        self.parts().2
    }

    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// Entry `i`'s value.
    #[inline]
    pub fn value(self, i: usize) -> Option<Item<'t>> {
        let (start, _, len) = self.parts();
        (i < len).then(|| self.tree.item(start + i))
    }

    /// Entry `i`: its key and its value.
    #[inline]
    pub fn entry(self, i: usize) -> Option<(&'t str, Item<'t>)> {
        let (start, keys, len) = self.parts();
        (i < len).then(|| {
            (
                self.tree.span(self.tree.keys[keys + i]),
                self.tree.item(start + i),
            )
        })
    }

    /// The keys, in order.
    pub fn keys(self) -> impl Iterator<Item = &'t str> {
        let (_, keys, len) = self.parts();
        let tree = self.tree;
        tree.keys[keys..keys + len]
            .iter()
            .map(move |&s| tree.span(s))
    }

    /// The position and value of the entry whose key is `key`.
    pub fn find(self, key: &str) -> Option<(usize, Item<'t>)> {
        let i = self.keys().position(|k| k == key)?;
        Some((i, self.value(i)?))
    }

    /// The value of the entry whose key is `key`.
    pub fn get(self, key: &str) -> Option<Item<'t>> {
        self.find(key).map(|(_, v)| v)
    }

    pub fn iter(self) -> impl Iterator<Item = (&'t str, Item<'t>)> {
        let (start, _, len) = self.parts();
        let tree = self.tree;
        self.keys()
            .zip((start..start + len).map(move |at| tree.item(at)))
    }

    /// Whether `self` and `other` are the same object (not an equal one).
    pub fn same(self, other: Record<'_>) -> bool {
        std::ptr::eq(self.tree, other.tree) && self.node == other.node
    }
}

/// A tree being built (see the module doc).
struct Walk {
    nodes: Vec<Node>,
    keys: Vec<Span>,
    /// The call's shapes: runs of `keys`, as `(start, len)`, and the plan that writes their
    /// objects when a key of the run repeats.
    shapes: Vec<(u32, u32, Option<usize>)>,
    plans: Vec<Plan>,
    text: String,
    /// Bytes of `text` that the runs read so far take (Latin-1 texts, converted whole).
    taken: usize,
    functions: bool,
}

/// How the objects of a run of keys that repeat are written (see [`Walk::dedupe`]): entry `i`
/// goes to place `targets[i]`; the places are keyed by the `len` keys at `keys[keys..]`.
struct Plan {
    keys: u32,
    len: u32,
    targets: Vec<u32>,
}

/// How the text's units become the tree's text. Runs are read in order, each once, with none
/// left out (the cursor reads them so), which lets a Latin-1 text be converted in one go.
trait Units: Copy {
    /// Before the walk: the whole text, where it can be converted at once.
    fn prepare(all: &[Self], text: &mut String);
    /// The next run: where it is in `text` (added to it if `prepare` did not).
    fn run(run: &[Self], text: &mut String, taken: &mut usize) -> (usize, usize);
}

impl Units for u8 {
    fn prepare(all: &[u8], text: &mut String) {
        *text = latin1_to_utf8(all);
    }
    /// A unit below 0x80 is one byte of UTF-8, any other two.
    fn run(run: &[u8], _: &mut String, taken: &mut usize) -> (usize, usize) {
        let start = *taken;
        let len = run.len() + high_units(run);
        *taken += len;
        (start, len)
    }
}

/// How many of `run`'s units are above 0x7F: their high bits counted a word at a time (a
/// JSON text of 35 kB is one run).
fn high_units(run: &[u8]) -> usize {
    let words = run.chunks_exact(8);
    let rest = words.remainder().iter().filter(|&&b| b >= 0x80).count();
    let high = |w: &[u8]| {
        let w = u64::from_ne_bytes(w.try_into().unwrap_or([0; 8]));
        (w & 0x8080_8080_8080_8080).count_ones() as usize
    };
    words.map(high).sum::<usize>() + rest
}

impl Units for u16 {
    fn prepare(all: &[u16], text: &mut String) {
        text.reserve(all.len());
    }
    /// Each run is decoded apart (a lone surrogate becomes U+FFFD): decoded with the next, a
    /// high half ending one string and a low half starting another would make a pair.
    fn run(run: &[u16], text: &mut String, _: &mut usize) -> (usize, usize) {
        let start = text.len();
        text.extend(char::decode_utf16(run.iter().copied()).map(|c| c.unwrap_or('\u{FFFD}')));
        (start, text.len() - start)
    }
}

/// `n` as an index of a tree (see the module doc for why it fits).
fn index(n: usize) -> Result<u32, String> {
    u32::try_from(n).map_err(|_| wrong("more than a tree can index"))
}

impl Walk {
    fn read<U: Units>(&mut self, mut cursor: Cursor<'_, U>) -> Result<Node, String> {
        U::prepare(cursor.text, &mut self.text);
        let root = self.value(&mut cursor, 0)?;
        cursor.finish()?;
        Ok(root)
    }

    /// The next value. Leaves are read here, inlined into the loop that stores them.
    #[inline(always)]
    fn value<U: Units>(
        &mut self,
        cursor: &mut Cursor<'_, U>,
        depth: usize,
    ) -> Result<Node, String> {
        Ok(match cursor.tag()? {
            NULL => Node::Null,
            FALSE => Node::Bool(false),
            TRUE => Node::Bool(true),
            NUMBER => Node::Number(cursor.next()?),
            STRING => Node::String(self.span(cursor)?),
            FUNCTION => {
                self.functions = true;
                Node::Function(FunctionId(cursor.function_id()?))
            }
            tag => self.container(cursor, tag, depth)?,
        })
    }

    /// The next run of text, added to the tree's text.
    fn span<U: Units>(&mut self, cursor: &mut Cursor<'_, U>) -> Result<Span, String> {
        let units = cursor.units()?;
        let (start, len) = U::run(units, &mut self.text, &mut self.taken);
        // Its end fits too, so `start + len` never wraps where a span is read.
        index(start + len)?;
        Ok(Span {
            start: start as u32,
            len: len as u32,
        })
    }

    /// `count` values, in a run of nodes made for them at the end of `nodes` (the children of
    /// nested containers go after it): where it starts. (`count` was checked by
    /// `Cursor::child_count`, so the run is never longer than the tape.)
    fn children<U: Units>(
        &mut self,
        cursor: &mut Cursor<'_, U>,
        count: usize,
        depth: usize,
    ) -> Result<u32, String> {
        let start = self.nodes.len();
        self.nodes.resize(start + count, Node::Null);
        for i in start..start + count {
            let node = self.value(cursor, depth + 1)?;
            self.nodes[i] = node;
        }
        index(start)
    }

    /// The texts of `len` keys from `keys[at]`.
    fn run(&self, at: u32, len: u32) -> impl Iterator<Item = &str> {
        let text = &self.text;
        self.keys[at as usize..at as usize + len as usize]
            .iter()
            .map(move |s| &text[s.start as usize..s.start as usize + s.len as usize])
    }

    /// How the objects keyed by the run of `len` keys at `keys[at]`, some of which repeat,
    /// are written: each key keeps its first place and takes its last value (JavaScript's
    /// rule, and the values'). Worked out once per run, in time linear in it: a shape's objects
    /// share it.
    fn dedupe(&mut self, at: u32, len: u32) -> usize {
        let mut first: HashMap<&str, u32> = HashMap::with_capacity(len as usize);
        let mut unique = Vec::new();
        let mut targets = Vec::with_capacity(len as usize);
        for (i, key) in self.run(at, len).enumerate() {
            let slot = *first.entry(key).or_insert_with(|| {
                unique.push(self.keys[at as usize + i]);
                unique.len() as u32 - 1
            });
            targets.push(slot);
        }
        let keys = self.keys.len() as u32;
        let kept = unique.len() as u32;
        self.keys.extend(unique);
        self.plans.push(Plan {
            keys,
            len: kept,
            targets,
        });
        self.plans.len() - 1
    }

    /// The object of `len` values at `nodes[start..]` keyed by `keys[keys..]`, written by
    /// `plan` when some of its keys repeat (see [`Walk::dedupe`]): its values over the first of
    /// its nodes, each in its key's place, a later one over an earlier.
    fn object(&mut self, start: u32, keys: u32, len: u32, plan: Option<usize>) -> Node {
        let Some(plan) = plan else {
            return Node::Object { start, keys, len };
        };
        let plan = &self.plans[plan];
        let values = start as usize..start as usize + len as usize;
        let mut written = vec![Node::Null; plan.len as usize];
        for (&target, node) in plan.targets.iter().zip(&self.nodes[values]) {
            written[target as usize] = *node;
        }
        let at = start as usize;
        self.nodes[at..at + written.len()].copy_from_slice(&written);
        Node::Object {
            start,
            keys: plan.keys,
            len: plan.len,
        }
    }

    #[inline(never)]
    fn container<U: Units>(
        &mut self,
        cursor: &mut Cursor<'_, U>,
        tag: u8,
        depth: usize,
    ) -> Result<Node, String> {
        Cursor::<U>::check_depth(depth)?;
        Ok(match tag {
            ARRAY => {
                let count = cursor.child_count(1)?;
                let start = self.children(cursor, count, depth)?;
                Node::Array {
                    start,
                    len: index(count)?,
                }
            }
            OBJECT | OBJECT_SHAPE => {
                // Each value and each key length takes at least one entry.
                let count = cursor.child_count(2)?;
                let start = self.children(cursor, count, depth)?;
                let keys = index(self.keys.len())?;
                for _ in 0..count {
                    let span = self.span(cursor)?;
                    self.keys.push(span);
                }
                let len = index(count)?;
                let plan = repeats(self.run(keys, len)).then(|| self.dedupe(keys, len));
                if tag == OBJECT_SHAPE {
                    self.shapes.push((keys, len, plan));
                }
                self.object(start, keys, len, plan)
            }
            SHAPED => {
                let count = cursor.child_count(1)?;
                let start = self.children(cursor, count, depth)?;
                let shape = cursor.count(self.shapes.len().saturating_sub(1))?;
                match self.shapes.get(shape) {
                    Some(&(keys, len, plan)) if len as usize == count => {
                        self.object(start, keys, len, plan)
                    }
                    _ => return Err(wrong("a shape")),
                }
            }
            _ => return Err(wrong("a tag")),
        })
    }
}

#[cfg(test)]
pub(crate) mod tests;
