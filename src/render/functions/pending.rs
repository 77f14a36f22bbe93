//! The first pass's record of what needs JavaScript ([`Recorder`]), and the render that waits
//! for it on the calling thread ([`PendingRender`]). See `functions.rs` for the two passes.
//!
//! A `PendingRender` owns the call's params, and its slots hold views that point into them
//! (`Js<'static>` standing for "as long as the params"): the params' values live in heap
//! buffers that nothing changes or frees before the `PendingRender` is dropped, so moving the
//! `PendingRender` (or the `Vec` holding them) moves no value they point to. Every borrow
//! handed out is tied to `&self`. Values that functions return while the render is finished
//! are kept in an [`Arena`] of the same lifetime.

use super::{
    run_miscounted, Functions, RunEnd, RunTag, Scope, SectionCall, SectionValue, TagEscape, Write,
    WRITE_RUN_MAX,
};
use crate::render::cache::TemplateCache;
use crate::render::config::{Config, Data, Output};
use crate::render::js::Js;
use crate::render::parse::{Node, Template};
use crate::render::writer::{OutputLength, Renderer, MAX_STRING_LENGTH};
use crate::rpc::{Context, FunctionId, RpcError, StopFlags, Value};
use rustc_hash::FxHashMap as HashMap;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicU8};
use std::sync::{Arc, Mutex};

/// Something the first pass could not write.
enum Slot<'a> {
    /// `{{name}}`: see [`Functions::write`].
    Write(Write<'a>),
    /// `{{#name}}`/`{{^name}}` whose name found `function`, with the views in effect (the
    /// node of the innermost in [`ViewTree`]).
    Section {
        function: FunctionId,
        views: u32,
        template: Arc<Template>,
        node: usize,
        /// What its raw text renders to in its views, when that needs no JavaScript (see
        /// [`prerender`]): a lambda's `render` of that very text gets it without a call.
        rendered: Option<Box<str>>,
    },
}

/// The [`Functions`] of the first pass: records each slot with its place in the output.
#[derive(Default)]
pub struct Recorder<'a> {
    slots: RefCell<Vec<(usize, Slot<'a>)>>,
    tree: RefCell<ViewTree<'a>>,
}

/// The views in effect at the section slots, as a tree: a slot holds the node of its innermost
/// view, and a node its view and the node of the view around it. A slot shares with the slot
/// before it the views the two have in common, so it costs the views it adds, not its whole
/// stack: copying every stack whole, a function at each level of a deep section in each row of
/// a list took gigabytes for a few kilobytes of data (mustache.js runs it in constant memory).
#[derive(Default)]
struct ViewTree<'a> {
    /// `(view, parent)`; the outermost view's parent is [`NO_VIEW`].
    nodes: Vec<(Js<'a>, u32)>,
    /// The last stack added, and its nodes.
    last: Vec<Js<'a>>,
    last_nodes: Vec<u32>,
}

/// The node of no view: the parent of the outermost, the innermost of an empty stack.
const NO_VIEW: u32 = u32::MAX;

impl<'a> ViewTree<'a> {
    /// The node of the innermost of `views` (outermost first), added with what the last stack
    /// added does not share with it.
    fn add(&mut self, views: &[Js<'a>]) -> Result<u32, RpcError> {
        let shared = views
            .iter()
            .zip(&self.last)
            .take_while(|(a, b)| a.same(b))
            .count();
        self.last.truncate(shared);
        self.last_nodes.truncate(shared);
        for view in &views[shared..] {
            let parent = self.last_nodes.last().copied().unwrap_or(NO_VIEW);
            let node = u32::try_from(self.nodes.len())
                .ok()
                .filter(|&n| n != NO_VIEW)
                .ok_or_else(|| RpcError::failed("render: too many sections call functions"))?;
            self.nodes.push((*view, parent));
            self.last.push(*view);
            self.last_nodes.push(node);
        }
        Ok(self.last_nodes.last().copied().unwrap_or(NO_VIEW))
    }

    /// The innermost view of `node`'s stack (undefined for an empty stack).
    fn innermost(&self, node: u32) -> Js<'a> {
        self.nodes
            .get(node as usize)
            .map_or(Js::Undefined, |&(view, _)| view)
    }

    /// The views of `node`'s stack, outermost first.
    fn stack(&self, mut node: u32) -> Vec<Js<'a>> {
        let mut views = Vec::new();
        while let Some(&(view, parent)) = self.nodes.get(node as usize) {
            views.push(view);
            node = parent;
        }
        views.reverse();
        views
    }
}

/// The most slots one render may record. Each costs ~100 bytes until the render is finished,
/// and nothing else bounds their number: `{{#a}}{{#a}}{{#a}}{{f}}{{/a}}{{/a}}{{/a}}` over 1,000
/// elements is 10^9 calls of `f`, whose empty results leave the output empty (mustache.js makes
/// them one by one; recording them took ~100 GB first). The bound is that of a call's values.
pub const MAX_SLOTS: usize = 1 << 22;

impl<'a> Recorder<'a> {
    pub fn is_empty(&self) -> bool {
        self.slots.borrow().is_empty()
    }

    /// Whether the render recorded all the slots it may: it fails, at once.
    pub fn is_full(&self) -> bool {
        self.slots.borrow().len() >= MAX_SLOTS
    }

    fn push(&self, at: usize, slot: Slot<'a>) -> Result<(), RpcError> {
        let mut slots = self.slots.borrow_mut();
        if slots.len() >= MAX_SLOTS {
            return Err(RpcError::failed(format!(
                "render: more than {MAX_SLOTS} places of this render need JavaScript (function \
                 values, lambdas, escape calls): compute such values into the view, or render \
                 the data in parts"
            )));
        }
        slots.push((at, slot));
        Ok(())
    }
}

impl<'a> Functions<'a> for Recorder<'a> {
    fn write(
        &self,
        value: Js<'a>,
        this: Js<'a>,
        escape: TagEscape,
        out: &mut String,
    ) -> Result<(), RpcError> {
        let slot = Slot::Write(Write {
            value,
            this,
            escape,
        });
        self.push(out.len(), slot)
    }

    fn section(
        &self,
        call: SectionCall<'a, '_>,
        out: &mut String,
    ) -> Result<SectionValue<'a>, RpcError> {
        let slot = Slot::Section {
            function: call.function,
            views: self.tree.borrow_mut().add(call.scope.views)?,
            template: call.template.clone(),
            node: call.node,
            rendered: prerender(&call),
        };
        self.push(out.len(), slot)?;
        Ok(SectionValue::Done)
    }
}

/// A section's raw text that is short enough is rendered ahead by the first pass ([`prerender`]).
const PRERENDER_MAX: usize = 256;

/// What a lambda's `render(text)` of its section's own raw text gives (mustache.js's most common
/// lambda wraps that), rendered by the first pass in the section's views: only for a short raw
/// text of text and `{{name}}` tags (so at a cost bounded by its length), and only when it needs
/// no JavaScript (no function or value printed by one met). The data is read once, when the
/// call is made, so the calling thread's render of that text would give the same; `None` when
/// any of this does not hold (or it fails): that render is then made when asked.
fn prerender<'a>(call: &SectionCall<'a, '_>) -> Option<Box<str>> {
    if call.inverted {
        return None;
    }
    let raw = Finishing::raw_text(call.template, call.node);
    if raw.len() > PRERENDER_MAX {
        return None;
    }
    let template = call.scope.cache.get_or_parse(raw, call.scope.tags).ok()?;
    let flat = template
        .nodes
        .iter()
        .all(|node| matches!(node, Node::Text(_) | Node::Value { .. }));
    if !flat {
        return None;
    }
    let none = Recorder::default();
    let mut r = Renderer::new(call.scope, call.scope.views.to_vec(), Some(&none));
    r.render_template(template, &uncancellable()).ok()?;
    none.is_empty().then(|| r.out.into_boxed_str())
}

/// Values made while a render is finished (what functions returned), kept until it is done.
#[derive(Default)]
pub struct Arena {
    /// Boxed so that each value keeps its address while the `Vec` grows: views point into them.
    #[allow(clippy::vec_box)]
    values: RefCell<Vec<Box<Value>>>,
}

impl Arena {
    /// Keeps `value`; the reference lives as long as the arena.
    pub fn keep(&self, value: Value) -> &Value {
        let boxed = Box::new(value);
        let at: *const Value = &*boxed;
        self.values.borrow_mut().push(boxed);
        // SAFETY: the value lives in its own heap allocation, which moves when the Box does
        // not, and which the arena frees only when it is dropped (boxes are only ever pushed):
        // valid for as long as `&self`.
        unsafe { &*at }
    }
}

/// A render that met JavaScript on a pool thread, to be finished on the calling thread.
pub struct PendingRender {
    state: Mutex<Option<Parts>>,
}

/// What a [`PendingRender`] holds. Field order is drop order: the slots and their views (which
/// point into the params) go before the params.
struct Parts {
    slots: Vec<(usize, Slot<'static>)>,
    tree: ViewTree<'static>,
    out: String,
    /// The error that stopped the first pass, reported once the slots before it are filled.
    error: Option<RpcError>,
    config: Config,
    params: Vec<Value>,
}

/// The views of a pending render, tied to a borrow of it.
pub struct Finishing<'p> {
    parts: &'p Parts,
    arena: &'p Arena,
    /// Address of each array and object value → its index among the call's objects (the
    /// order the params were read in, see `bindings/render/mod.rs`). Made on first use.
    originals: RefCell<Option<HashMap<usize, u32>>>,
}

impl PendingRender {
    /// Wraps up a first pass that recorded slots.
    ///
    /// # Safety
    /// Every view in `recorder` must point into `params` (the data, partials and config the
    /// first pass rendered with) or into templates the slots hold: the slots outlive the
    /// borrow they were made under, see the module doc.
    pub unsafe fn new(
        recorder: Recorder<'_>,
        out: String,
        error: Option<RpcError>,
        config: Config,
        params: Vec<Value>,
    ) -> PendingRender {
        let slots = recorder.slots.into_inner();
        let mut tree = recorder.tree.into_inner();
        tree.last = Vec::new();
        tree.last_nodes = Vec::new();
        // SAFETY: the caller contract: the views point into `params`' heap buffers, which
        // `Parts` keeps unchanged for as long as it holds the slots (dropped first).
        let slots: Vec<(usize, Slot<'static>)> = unsafe { std::mem::transmute(slots) };
        // SAFETY: the caller contract, for the views the tree's nodes hold: they point into
        // `params` too, and `Parts` drops the tree before the params.
        let tree: ViewTree<'static> = unsafe { std::mem::transmute(tree) };
        PendingRender {
            state: Mutex::new(Some(Parts {
                slots,
                tree,
                out,
                error,
                config,
                params,
            })),
        }
    }

    /// Takes the render to finish it (once: `None` the second time).
    pub fn take(&self) -> Option<Unfinished> {
        let parts = self
            .state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()?;
        Some(Unfinished(parts, Arena::default()))
    }
}

/// A pending render, taken to be finished on the calling thread, with the values functions
/// return while it is finished (they live as long as the views pointing into the params).
pub struct Unfinished(Parts, Arena);

impl Unfinished {
    /// Starts finishing: fill the slots with [`Finishing::fill`].
    pub fn finishing(&self) -> Finishing<'_> {
        Finishing {
            parts: &self.0,
            arena: &self.1,
            originals: RefCell::new(None),
        }
    }

    /// The form the output is wanted in.
    pub fn output(&self) -> Output {
        self.0.config.output
    }
}

/// A render on the calling thread is not cancellable: it runs to the end, in one go.
fn uncancellable() -> Context<'static> {
    static NOT_CANCELLED: AtomicU8 = AtomicU8::new(0);
    static NO: AtomicBool = AtomicBool::new(false);
    let flags = StopFlags {
        cancel: &NOT_CANCELLED,
        env_gone: &NO,
        destroyed: &NO,
    };
    Context::new(flags, None, 0)
}

impl<'p> Finishing<'p> {
    /// The scope the render's slots and lambdas render in, with `views`.
    pub fn scope<'r>(&'r self, views: &'r [Js<'p>]) -> Scope<'p, 'r> {
        let partials = match self.parts.params.get(2) {
            Some(Value::Object(map)) => Some(map),
            _ => None,
        };
        Scope {
            views,
            partials,
            tags: self.parts.config.tags.as_ref(),
            name: self.parts.config.name.as_deref(),
            escape: self.parts.config.escape,
            cache: TemplateCache::global(),
        }
    }

    /// Fills the slots in order, calling `host`'s functions, and returns the whole output
    /// (or the first error: a function's, or the first pass's once the slots before it are
    /// filled).
    pub fn fill(&self, host: &dyn Functions<'p>) -> Result<String, RpcError> {
        let parts = self.parts;
        let mut out = String::with_capacity(parts.out.len() + parts.out.len() / 4);
        // Checked before and after every slot, as a function may return JavaScript's longest
        // string each time: mustache.js fails at the concatenation that passes the limit, and so
        // does this, instead of growing the output by every function's result first.
        let mut length = OutputLength::default();
        let mut copied = 0;
        // A run of writes goes to the host at once (it may call their functions in one go).
        let (mut run, mut texts, mut ends) = (Vec::new(), String::new(), Vec::new());
        let mut next = 0;
        while let Some((at, slot)) = parts.slots.get(next) {
            // The text before the slot first: mustache.js fails on it before it calls the
            // slot's function.
            out.push_str(&parts.out[copied..*at]);
            copied = *at;
            length.check(&out, MAX_STRING_LENGTH)?;
            if let Some(done) = self.tag_run(next, &mut out, &mut copied, &mut length, host)? {
                next += done;
                continue;
            }
            match slot {
                Slot::Write(_) => {
                    run.clear();
                    run.extend(
                        parts.slots[next..]
                            .iter()
                            .map_while(|(_, slot)| match slot {
                                Slot::Write(w) => Some(*w),
                                Slot::Section { .. } => None,
                            })
                            .take(WRITE_RUN_MAX),
                    );
                    texts.clear();
                    ends.clear();
                    // Bytes count for at least as many UTF-16 units, so this is at most the room
                    // left: the output so far, and the text between the run's writes.
                    let between = parts.slots[next..next + run.len()]
                        .last()
                        .map_or(0, |&(last, _)| last - copied);
                    let room = MAX_STRING_LENGTH.saturating_sub(out.len() + between);
                    if room == 0 {
                        // The text between the writes may pass the limit by itself, which must
                        // fail before the next write's function is called: one write at a time.
                        run.truncate(1);
                    }
                    let done = host.write_run(&run, room, &mut texts, &mut ends)?;
                    if done == 0 || done > run.len() || ends.len() != done {
                        return Err(run_miscounted());
                    }
                    let mut start = 0;
                    for (&(at, _), &end) in parts.slots[next..next + done].iter().zip(&ends) {
                        out.push_str(&parts.out[copied..at]);
                        copied = at;
                        out.push_str(texts.get(start..end).ok_or_else(run_miscounted)?);
                        start = end;
                        length.check(&out, MAX_STRING_LENGTH)?;
                    }
                    next += done;
                    continue;
                }
                Slot::Section {
                    function,
                    views,
                    template,
                    node,
                    ..
                } => {
                    let views = parts.tree.stack(*views);
                    let scope = self.scope(&views);
                    let mut r = Renderer::new(scope, views.clone(), Some(host));
                    r.out = out;
                    let done = r.render_section(
                        template.clone(),
                        *node,
                        Js::Function(*function),
                        &uncancellable(),
                    );
                    out = r.out;
                    done?;
                    length.check(&out, MAX_STRING_LENGTH)?;
                    next += 1;
                }
            }
        }
        out.push_str(&parts.out[copied..]);
        if let Some(e) = &parts.error {
            return Err(e.clone());
        }
        length.check(&out, MAX_STRING_LENGTH)?;
        Ok(out)
    }

    /// Fills the slots from `next` on as one run of writes and sections ([`Functions::tag_run`])
    /// when they hold a section and the host takes them: how many it filled, or `None` (then
    /// nothing was called). The output is checked after each tag, as one by one.
    fn tag_run(
        &self,
        next: usize,
        out: &mut String,
        copied: &mut usize,
        length: &mut OutputLength,
        host: &dyn Functions<'p>,
    ) -> Result<Option<usize>, RpcError> {
        let parts = self.parts;
        let slots = &parts.slots[next..];
        // The tags the host would take, found without making their views' stacks: a run
        // tried at every slot, and declined, costs one look at each of its tags.
        let count = slots
            .iter()
            .take(WRITE_RUN_MAX)
            .take_while(|(_, slot)| match slot {
                Slot::Write(w) => host.run_takes(w),
                Slot::Section {
                    function,
                    views,
                    template,
                    node,
                    ..
                } => {
                    !is_inverted(template, *node)
                        && host.run_takes(&Write {
                            value: Js::Function(*function),
                            this: parts.tree.innermost(*views),
                            escape: TagEscape::Raw,
                        })
                }
            })
            .count();
        let sections = slots[..count]
            .iter()
            .filter(|(_, slot)| matches!(slot, Slot::Section { .. }))
            .count();
        if count < 2 || sections == 0 {
            return Ok(None);
        }
        let slots = &slots[..count];
        // The views of each section, alive while the run is (its lambdas render in them).
        let stacks: Vec<Vec<Js<'p>>> = slots
            .iter()
            .filter_map(|(_, slot)| match slot {
                Slot::Section { views, .. } => Some(parts.tree.stack(*views)),
                Slot::Write(_) => None,
            })
            .collect();
        let mut stack = stacks.iter();
        let tags: Vec<RunTag<'p, '_>> = slots
            .iter()
            .map(|(_, slot)| match slot {
                Slot::Write(w) => RunTag::Write(*w),
                Slot::Section {
                    function,
                    template,
                    node,
                    rendered,
                    ..
                } => {
                    let views = stack.next().map_or(&[][..], |v| &v[..]);
                    let call = SectionCall {
                        function: *function,
                        this: views.last().copied().unwrap_or(Js::Undefined),
                        inverted: false,
                        template,
                        node: *node,
                        scope: self.scope(views),
                    };
                    RunTag::Section(call, rendered.as_deref())
                }
            })
            .collect();
        // As for a run of writes (see `fill`): the room left, text between the tags counted.
        let between = slots.last().map_or(0, |&(last, _)| last - *copied);
        let room = MAX_STRING_LENGTH.saturating_sub(out.len() + between);
        if room == 0 {
            return Ok(None);
        }
        let (mut texts, mut ends) = (String::new(), Vec::new());
        let Some(RunEnd { done, data }) = host.tag_run(&tags, room, &mut texts, &mut ends)? else {
            return Ok(None);
        };
        let with_text = done.checked_sub(usize::from(data.is_some()));
        if done == 0 || done > count || Some(ends.len()) != with_text {
            return Err(run_miscounted());
        }
        let mut start = 0;
        for (&(at, _), &end) in slots.iter().zip(&ends) {
            out.push_str(&parts.out[*copied..at]);
            *copied = at;
            out.push_str(texts.get(start..end).ok_or_else(run_miscounted)?);
            start = end;
            length.check(out, MAX_STRING_LENGTH)?;
        }
        if let Some(value) = data {
            // The last section's function returned data: its body renders over it, here.
            let (
                at,
                Slot::Section {
                    template,
                    node,
                    function,
                    views,
                    ..
                },
            ) = &slots[done - 1]
            else {
                return Err(run_miscounted());
            };
            out.push_str(&parts.out[*copied..*at]);
            *copied = *at;
            length.check(out, MAX_STRING_LENGTH)?;
            let views = parts.tree.stack(*views);
            let replay = Replay {
                host,
                value: Cell::new(Some(value)),
            };
            let mut r = Renderer::new(self.scope(&views), views.clone(), Some(&replay));
            r.out = std::mem::take(out);
            let rendered = r.render_section(
                template.clone(),
                *node,
                Js::Function(*function),
                &uncancellable(),
            );
            *out = r.out;
            rendered?;
            length.check(out, MAX_STRING_LENGTH)?;
        }
        Ok(Some(done))
    }

    /// Renders `text` (a lambda's `render(text)`) in `scope`, with `host` for its functions.
    pub fn render_text(
        &self,
        text: &str,
        scope: Scope<'p, '_>,
        host: &dyn Functions<'p>,
    ) -> Result<String, RpcError> {
        let template = scope
            .cache
            .get_or_parse(text, scope.tags)
            // Text a lambda made is neither the template nor a partial: its place has no name.
            .map_err(|e| super::super::place::parse_failed(&e, text, None, None))?;
        let mut r = Renderer::new(scope, scope.views.to_vec(), Some(host));
        r.render_template(template, &uncancellable())?;
        Ok(r.out)
    }

    /// The raw text of section node `node` of `template`: what a lambda gets.
    pub fn raw_text(template: &Template, node: usize) -> &str {
        match &template.nodes[node] {
            Node::Section { raw, .. } => raw.of(&template.source),
            _ => "",
        }
    }

    /// The index among the call's objects of the array or object `value` (which the calling
    /// thread holds in that order), or `None` for any other value, and for the arrays and
    /// objects of data given as JSON text, which no JavaScript object stands for.
    pub fn original(&self, value: Js<'p>) -> Option<u32> {
        let address = match value {
            Js::Object(map) => map as *const _ as usize,
            Js::Array(items) => items as *const _ as usize,
            _ => return None,
        };
        let mut originals = self.originals.borrow_mut();
        let table = originals.get_or_insert_with(|| {
            let mut table = HashMap::default();
            number_params(self.parts, &mut table);
            table
        });
        table.get(&address).copied()
    }

    /// Whether the data param was JSON text (its values are then made anew for JavaScript).
    pub fn data_is_json(&self) -> bool {
        self.parts.config.data == Data::Json
    }

    /// Keeps `value` (a function's result, read with its objects numbered from `first`) for
    /// the rest of the render.
    pub fn keep(&self, value: Value, first: u32) -> &'p Value {
        let value = self.arena.keep(value);
        let mut originals = self.originals.borrow_mut();
        if let Some(table) = originals.as_mut() {
            number_objects(std::slice::from_ref(value), first, table);
        } else {
            // Numbered with the params when the table is first made… which happens now, so
            // that the params come first.
            let mut table = HashMap::default();
            number_params(self.parts, &mut table);
            number_objects(std::slice::from_ref(value), first, &mut table);
            *originals = Some(table);
        }
        value
    }
}

/// Whether node `node` of `template` is an inverted section.
fn is_inverted(template: &Template, node: usize) -> bool {
    matches!(
        template.nodes.get(node),
        Some(Node::Section { inverted: true, .. })
    )
}

/// A host whose first section call answers `value` (what that section's function returned in
/// a run, already called), and which does all else as `host` does.
struct Replay<'h, 'p> {
    host: &'h dyn Functions<'p>,
    value: Cell<Option<Js<'p>>>,
}

impl<'p> Functions<'p> for Replay<'_, 'p> {
    fn write(
        &self,
        value: Js<'p>,
        this: Js<'p>,
        escape: TagEscape,
        out: &mut String,
    ) -> Result<(), RpcError> {
        self.host.write(value, this, escape, out)
    }

    fn section(
        &self,
        call: SectionCall<'p, '_>,
        out: &mut String,
    ) -> Result<SectionValue<'p>, RpcError> {
        match self.value.take() {
            Some(value) => Ok(SectionValue::Value(value)),
            None => self.host.section(call, out),
        }
    }

    fn write_run(
        &self,
        writes: &[Write<'p>],
        room: usize,
        texts: &mut String,
        ends: &mut Vec<usize>,
    ) -> Result<usize, RpcError> {
        self.host.write_run(writes, room, texts, ends)
    }
}

/// Numbers the params' arrays and objects in the order the calling thread listed them. Data
/// given as JSON text is left out: that thread held a string there, and the objects parsed from
/// it follow none of its own (numbering them shifted the partials' and the config's, so an
/// `escape` function was handed the config object in place of a value of the view).
fn number_params(parts: &Parts, table: &mut HashMap<usize, u32>) {
    let mut next = 0;
    for (i, value) in parts.params.iter().enumerate() {
        if i == 1 && parts.config.data == Data::Json {
            continue;
        }
        next = number_objects(std::slice::from_ref(value), next, table);
    }
}

/// Numbers the arrays and objects of `values`, depth first and in order (the order the
/// calling thread read them in), from `first`; returns the next number. Iterative.
fn number_objects(values: &[Value], first: u32, table: &mut HashMap<usize, u32>) -> u32 {
    let mut next = first;
    let mut stack: Vec<&Value> = values.iter().rev().collect();
    while let Some(value) = stack.pop() {
        match value {
            Value::Array(items) => {
                table.insert(items as *const _ as usize, next);
                next += 1;
                stack.extend(items.iter().rev());
            }
            Value::Object(map) => {
                table.insert(map as *const _ as usize, next);
                next += 1;
                let entries: Vec<&Value> = map.iter().map(|(_, v)| v).collect();
                stack.extend(entries.into_iter().rev());
            }
            _ => {}
        }
    }
    next
}
