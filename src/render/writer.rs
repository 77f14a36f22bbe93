//! Rendering a parsed template with data, by mustache.js 4.2.0's `Writer` rules.
//!
//! - `{{name}}` writes `String(value)` HTML-escaped, `{{{name}}}` and `{{&name}}` unescaped;
//!   null and undefined write nothing.
//! - `{{#name}}` renders nothing for a falsy value (`false`, `0`, `NaN`, `""`, null,
//!   undefined); once per element for an array (each element pushed as the view); once with the
//!   value pushed for an object, string or number; once with no push for `true`.
//! - `{{^name}}` renders once, with no push, for a falsy value or an empty array.
//! - `{{>name}}` renders `partials[name]` (indented first if its tag asked for it, see
//!   `parse.rs`) in the current context; a missing partial renders nothing.
//!
//! Where a value or section needs JavaScript (a function, or an `escape` function), the
//! renderer hands it to its [`Functions`] (see `functions.rs`), which records it for later or
//! runs it now.
//!
//! The walk is iterative: an explicit stack of frames (one per section or partial being
//! rendered) instead of recursion, so deep nesting costs heap, not the worker's stack. Depth
//! is still capped (mustache.js itself overflows its stack at about 5,000 levels), which also
//! stops a partial that includes itself forever. Output goes to one `String`, no longer than
//! JavaScript's longest string.

use super::cache::TemplateCache;
use super::config::{Config, Escape};
use super::escape::escape_html;
use super::functions::{Functions, Scope, SectionCall, SectionValue, TagEscape};
use super::js::{object_builtin, Items, Js};
use super::lookup::{lookup, lookup_anywhere};
use super::parse::{Name, Node, Tags, Template};
use super::place;
use crate::rpc::number::format_number;
use crate::rpc::packed::tree::Item;
use crate::rpc::{Context, Map, RpcError, Value};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Deepest nesting of sections and partials rendered at once.
pub const MAX_DEPTH: usize = 10_000;

/// Nodes rendered between two cancellation checks.
const CHECK_EVERY: u32 = 1024;

/// JavaScript's longest string: mustache.js fails past it ("Invalid string length"); so does
/// this, which also keeps a runaway template from taking all memory.
pub(super) const MAX_STRING_LENGTH: usize = crate::rpc::text::MAX_JS_STRING;

/// The output's length in UTF-16 code units, counted only once it might be too long: a string
/// has no more code units than UTF-8 bytes, so below the limit in bytes it is below in units.
#[derive(Default)]
pub(super) struct OutputLength {
    counted_bytes: usize,
    units: usize,
}

impl OutputLength {
    #[inline]
    pub(super) fn check(&mut self, out: &str, limit: usize) -> Result<(), RpcError> {
        if out.len() <= limit {
            return Ok(());
        }
        self.count(out, limit)
    }

    #[cold]
    fn count(&mut self, out: &str, limit: usize) -> Result<(), RpcError> {
        self.units += out[self.counted_bytes..].encode_utf16().count();
        self.counted_bytes = out.len();
        if self.units > limit {
            return Err(RpcError::failed(format!(
                "render: the output would be longer than JavaScript's longest string \
                 ({limit} UTF-16 code units); mustache.js fails here too, with \
                 \"Invalid string length\""
            )));
        }
        Ok(())
    }
}

/// Part of a template being rendered.
struct Frame<'a> {
    /// Index into `Renderer::templates`.
    template: usize,
    /// The next node to render, and the node range.
    next: usize,
    start: usize,
    end: usize,
    /// Array elements still to render the range with (a section over an array).
    rest: Items<'a>,
    /// Whether the frame pushed a view, to pop when it is done.
    pushed: bool,
}

/// What a section or partial node asks the renderer to do next.
enum Step<'a> {
    Next,
    /// Render nodes `start..end` of the current template, pushing the view if one is given.
    Enter {
        start: usize,
        end: usize,
        view: Option<Js<'a>>,
        rest: Items<'a>,
    },
    /// Render the partial the node names, whose text is `text`.
    Partial {
        text: &'a str,
    },
}

pub(super) struct Renderer<'a, 'c> {
    pub(super) out: String,
    /// The views sections pushed, innermost last; never empty.
    views: Vec<Js<'a>>,
    frames: Vec<Frame<'a>>,
    /// The main template first, then the partials rendered so far.
    templates: Vec<Arc<Template>>,
    /// (template, partial node) → the template it renders, so a partial in a loop is indented
    /// and looked up once per render.
    partial_templates: HashMap<(usize, usize), usize>,
    partials: Option<&'a Map>,
    /// The tags every partial starts with.
    tags: Option<&'c Tags>,
    /// The main template's name (`config.name`), for a partial's parse error.
    name: Option<&'c str>,
    /// How `{{name}}` escapes.
    escape: Escape,
    /// Whether `{{name}}` escapes HTML natively (the fast path's question).
    html: bool,
    cache: &'c TemplateCache,
    length: OutputLength,
    /// Where functions go, when the render has any (or an `escape` function).
    functions: Option<&'c dyn Functions<'a>>,
}

/// Writes `{{name}}` (escaped) or `{{{name}}}`. Inlined for the common case, a string or
/// number that the innermost object has: straight from the data to the output.
#[inline(always)]
fn write_value(views: &[Js], name: &Name, escape: bool, out: &mut String) -> Result<(), RpcError> {
    match (name, views.last()) {
        (Name::Key(key), Some(Js::Object(map))) => {
            if let Some(value) = key.get(map) {
                match value {
                    Value::String(s) if escape => escape_html(s, out),
                    Value::String(s) => out.push_str(s),
                    Value::Number(n) => format_number(*n, out),
                    other => return Js::of(other).write(escape, out),
                }
                return Ok(());
            }
        }
        (Name::Key(key), Some(Js::Record(record))) => {
            if let Some(item) = key.get_in(*record) {
                match item {
                    Item::String(s) if escape => escape_html(s, out),
                    Item::String(s) => out.push_str(s),
                    Item::Number(n) => format_number(n, out),
                    other => return Js::of_item(other).write(escape, out),
                }
                return Ok(());
            }
        }
        _ => {}
    }
    lookup_anywhere(views, name)
        .map_err(|e| *e)?
        .write(escape, out)
}

/// `{{name}}` when the render has functions: values that need JavaScript go to them.
fn write_with_functions<'a>(
    functions: &dyn Functions<'a>,
    views: &[Js<'a>],
    name: &Name,
    escape: TagEscape,
    out: &mut String,
) -> Result<(), RpcError> {
    let value = lookup(views, name).map_err(|e| *e)?;
    if value.is_nullish() {
        return Ok(());
    }
    if matches!(escape, TagEscape::Function(_)) || value.needs_javascript() {
        let this = views.last().copied().unwrap_or(Js::Undefined);
        return functions.write(value, this, escape, out);
    }
    value.write(escape == TagEscape::Html, out)
}

/// Renders `template` with the view `data` (`Js::Undefined` for none), `partials` and
/// `config`; `functions` takes whatever needs JavaScript. The output so far comes back with an
/// error too (the slots recorded before it still have to be filled).
pub fn render<'a>(
    template: Arc<Template>,
    data: Js<'a>,
    partials: Option<&'a Map>,
    config: &Config,
    cache: &TemplateCache,
    functions: Option<&dyn Functions<'a>>,
    ctx: &Context,
) -> (String, Result<(), RpcError>) {
    // The last output's length, plus a little for this one's differences, saves regrowing
    // (and copying) the buffer as it fills; the first render guesses from the source.
    let capacity = match template.last_output.load(Ordering::Relaxed) {
        0 => template.source.len() + template.source.len() / 2,
        last => last + last / 16,
    };
    let scope = Scope {
        views: &[],
        partials,
        tags: config.tags.as_ref(),
        name: config.name.as_deref(),
        escape: config.escape,
        cache,
    };
    let mut r = Renderer::new(scope, vec![data], functions);
    r.out.reserve(capacity);
    let nodes = template.nodes.len();
    r.templates.push(template);
    let done = r
        .enter(0, 0, nodes, None, Items::NONE)
        .and_then(|()| r.run(ctx));
    let main = &r.templates[0];
    if done.is_ok() && main.last_output.load(Ordering::Relaxed) != r.out.len() {
        main.last_output.store(r.out.len(), Ordering::Relaxed);
    }
    (r.out, done)
}

impl<'a, 'c> Renderer<'a, 'c> {
    /// A renderer with `views` in effect and no template yet (`scope.views` is not used).
    pub(super) fn new(
        scope: Scope<'a, 'c>,
        views: Vec<Js<'a>>,
        functions: Option<&'c dyn Functions<'a>>,
    ) -> Self {
        Renderer {
            out: String::new(),
            views,
            frames: Vec::new(),
            templates: Vec::new(),
            partial_templates: HashMap::new(),
            partials: scope.partials,
            tags: scope.tags,
            name: scope.name,
            escape: scope.escape,
            html: scope.escape == Escape::Html,
            cache: scope.cache,
            length: OutputLength::default(),
            functions,
        }
    }

    /// Renders all of `template` in the views given to [`Renderer::new`] (a lambda's `render`).
    pub(super) fn render_template(
        &mut self,
        template: Arc<Template>,
        ctx: &Context,
    ) -> Result<(), RpcError> {
        let nodes = template.nodes.len();
        self.templates.push(template);
        let at = self.templates.len() - 1;
        self.enter(at, 0, nodes, None, Items::NONE)?;
        self.run(ctx)
    }

    /// Renders section node `node` of `template` as if its name had found `value` (a section
    /// whose function was called later, see `functions.rs`).
    pub(super) fn render_section(
        &mut self,
        template: Arc<Template>,
        node: usize,
        value: Js<'a>,
        ctx: &Context,
    ) -> Result<(), RpcError> {
        self.templates.push(template);
        let at = self.templates.len() - 1;
        match self.section_step(at, node, value)? {
            Step::Enter {
                start,
                end,
                view,
                rest,
            } => self.enter(at, start, end, view, rest)?,
            Step::Next | Step::Partial { .. } => {}
        }
        self.run(ctx)
    }

    /// What this renderer would hand a lambda: the views and the render's settings.
    fn scope(&self) -> Scope<'a, '_> {
        Scope {
            views: &self.views,
            partials: self.partials,
            tags: self.tags,
            name: self.name,
            escape: self.escape,
            cache: self.cache,
        }
    }

    fn run(&mut self, ctx: &Context) -> Result<(), RpcError> {
        let mut budget = CHECK_EVERY;
        while let Some(frame) = self.frames.last_mut() {
            // Text and values, the bulk of most templates, render in this inner loop.
            let template = &*self.templates[frame.template];
            let mut at = frame.next;
            for node in &template.nodes[at..frame.end] {
                budget -= 1;
                if budget == 0 {
                    budget = CHECK_EVERY;
                    ctx.check()?;
                }
                match node {
                    Node::Text(text) => self.out.push_str(text),
                    Node::Value { name, escape } => match self.functions {
                        None => {
                            write_value(&self.views, name, *escape && self.html, &mut self.out)?
                        }
                        Some(functions) => write_with_functions(
                            functions,
                            &self.views,
                            name,
                            TagEscape::of(*escape, self.escape),
                            &mut self.out,
                        )?,
                    },
                    Node::Section { .. } | Node::Partial { .. } => break,
                }
                self.length.check(&self.out, MAX_STRING_LENGTH)?;
                at += 1;
            }
            frame.next = at;
            if at == frame.end {
                if let Some((first, rest)) = frame.rest.split_first() {
                    frame.rest = rest;
                    frame.next = frame.start;
                    if let Some(view) = self.views.last_mut() {
                        *view = first;
                    }
                } else {
                    if frame.pushed {
                        self.views.pop();
                    }
                    self.frames.pop();
                }
                continue;
            }
            let template = frame.template;
            let current = self.frames.len() - 1;
            let step = self.open(template, at)?;
            // A section whose function wrote its output (a lambda's) may have grown it too.
            self.length.check(&self.out, MAX_STRING_LENGTH)?;
            match step {
                Step::Next => self.frames[current].next = at + 1,
                Step::Enter {
                    start,
                    end,
                    view,
                    rest,
                } => {
                    self.frames[current].next = end;
                    self.enter(template, start, end, view, rest)?;
                }
                Step::Partial { text } => {
                    self.frames[current].next = at + 1;
                    let partial = self.partial(template, at, text)?;
                    let end = self.templates[partial].nodes.len();
                    self.enter(partial, 0, end, None, Items::NONE)?;
                }
            }
        }
        Ok(())
    }

    /// What section or partial node `at` of `template` asks for.
    fn open(&mut self, template: usize, at: usize) -> Result<Step<'a>, RpcError> {
        let node = &self.templates[template].nodes[at];
        if let Node::Section { name, .. } = node {
            let value = lookup(&self.views, name).map_err(|e| *e)?;
            return self.section_step(template, at, value);
        }
        let template = &*self.templates[template];
        let source = &*template.source;
        Ok(match node {
            // `run` renders these itself.
            Node::Text(_) | Node::Value { .. } => Step::Next,
            Node::Section { .. } => unreachable!("sections are opened above"),
            Node::Partial { name, .. } => {
                let Some(partials) = self.partials else {
                    return Ok(Step::Next);
                };
                let name = name.of(source);
                match partials.get(name) {
                    Some(Value::String(text)) => Step::Partial { text },
                    // The command accepts only strings and null as partials.
                    Some(_) => Step::Next,
                    None if object_builtin(name) => {
                        return Err(RpcError::failed(format!(
                            "render: the partial \"{name}\" is not in partials, and mustache.js \
                             would take the built-in \"{name}\" that every JavaScript object \
                             inherits; corepool does not imitate built-ins"
                        )))
                    }
                    None => Step::Next,
                }
            }
        })
    }

    /// What section node `at` of `template` asks for when its name found `value`.
    fn section_step(
        &mut self,
        template: usize,
        at: usize,
        value: Js<'a>,
    ) -> Result<Step<'a>, RpcError> {
        let Node::Section { inverted, end, .. } = self.templates[template].nodes[at] else {
            return Ok(Step::Next);
        };
        let (start, end) = (at + 1, end);
        let value = match (value, self.functions) {
            (Js::Function(function), Some(functions)) => {
                // The output moves out while the call borrows the views and templates.
                let mut out = std::mem::take(&mut self.out);
                let call = SectionCall {
                    function,
                    this: self.views.last().copied().unwrap_or(Js::Undefined),
                    inverted,
                    template: &self.templates[template],
                    node: at,
                    scope: self.scope(),
                };
                let outcome = functions.section(call, &mut out);
                self.out = out;
                match outcome? {
                    SectionValue::Value(value) => value,
                    // The body is the function's business (recorded, or a lambda's text).
                    SectionValue::Done => {
                        return Ok(Step::Enter {
                            start: end,
                            end,
                            view: None,
                            rest: Items::NONE,
                        })
                    }
                }
            }
            (value, _) => value,
        };
        let skip = Step::Enter {
            start: end,
            end,
            view: None,
            rest: Items::NONE,
        };
        let once = |view| Step::Enter {
            start,
            end,
            view,
            rest: Items::NONE,
        };
        Ok(match value {
            _ if inverted => match Items::of(value) {
                Some(items) if items.is_empty() => once(None),
                _ if !value.truthy() => once(None),
                _ => skip,
            },
            Js::Array(_) | Js::List(_) => match Items::of(value).and_then(Items::split_first) {
                None => skip,
                Some((first, rest)) => Step::Enter {
                    start,
                    end,
                    view: Some(first),
                    rest,
                },
            },
            _ if !value.truthy() => skip,
            Js::Bool(_) => once(None),
            _ => once(Some(value)),
        })
    }

    /// Starts rendering nodes `start..end` of `template`, pushing `view` if given.
    fn enter(
        &mut self,
        template: usize,
        start: usize,
        end: usize,
        view: Option<Js<'a>>,
        rest: Items<'a>,
    ) -> Result<(), RpcError> {
        if start == end {
            return Ok(());
        }
        if self.frames.len() >= MAX_DEPTH {
            return Err(RpcError::failed(format!(
                "render: sections and partials nest more than {MAX_DEPTH} levels deep (does a \
                 partial include itself without end?); mustache.js fails here too, with \
                 \"Maximum call stack size exceeded\""
            )));
        }
        if let Some(view) = view {
            self.views.push(view);
        }
        self.frames.push(Frame {
            template,
            next: start,
            start,
            end,
            rest,
            pushed: view.is_some(),
        });
        Ok(())
    }

    /// The template that partial node `node` of `template` renders: `text`, indented as its
    /// tag asks, parsed (or taken from the cache).
    fn partial(&mut self, template: usize, node: usize, text: &str) -> Result<usize, RpcError> {
        if let Some(&known) = self.partial_templates.get(&(template, node)) {
            return Ok(known);
        }
        let including = &self.templates[template];
        let Node::Partial { name, indent } = &including.nodes[node] else {
            unreachable!("partial() is called for partial nodes");
        };
        let original = text;
        let indented = indent.as_ref().map(|indent| indent.apply(text));
        let parsed = match &indented {
            Some(with_indent) => self.cache.get_or_parse(with_indent, self.tags),
            None => self.cache.get_or_parse(original, self.tags),
        }
        .map_err(|mut e| {
            // The place is shown in the partial's own text, as its file holds it.
            if let (Some(with_indent), Some(indent)) = (&indented, indent) {
                e.at = place::unindent(e.at, with_indent, original, indent);
            }
            place::parse_failed(&e, original, self.name, Some(name.of(&including.source)))
        })?;
        self.templates.push(parsed);
        let index = self.templates.len() - 1;
        self.partial_templates.insert((template, node), index);
        Ok(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_length_counts_utf16_units_only_past_the_limit_in_bytes() {
        let mut length = OutputLength::default();
        let mut out = String::from("ééé");
        // 6 bytes but 3 units: within a limit of 4.
        assert!(length.check(&out, 4).is_ok());
        out.push('😀');
        // 10 bytes, 5 units.
        let e = length.check(&out, 4).unwrap_err();
        assert!(e.message.contains("Invalid string length"), "{}", e.message);
        assert_eq!((length.counted_bytes, length.units), (10, 5));
    }
}
