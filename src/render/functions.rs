//! JavaScript functions in a render's view and config (Mustache lambdas, an `escape`
//! function), with mustache.js 4.2.0's semantics, and where they run.
//!
//! mustache.js calls a function it finds by a name with the innermost view as `this`, and uses
//! what it returns in its place; in a section, a result that is itself a function is a lambda,
//! called (same `this`) with the section's raw text and a `render` function that renders text
//! in the current context. Its `escape` function gets every `{{name}}` value.
//!
//! Functions run only on the JavaScript thread that made the call, and a native thread never
//! waits for one. A render runs in two passes:
//!
//! 1. On a pool thread, the renderer writes everything it can and, where it needs JavaScript
//!    (a function's result, a value whose printing calls a function, the `escape` function),
//!    records a *slot* ([`pending::Recorder`]): the place in the output, what to call, and for
//!    a section the views in effect, whose body it skips. A render that records nothing
//!    finishes there. One that does ends as a [`pending::PendingRender`], which owns the
//!    call's params (the views point into them) and goes back to the calling thread.
//! 2. On the calling thread, the slots are filled in order ([`pending::PendingRender::finish`]),
//!    each function called when mustache.js would call it, through a host that implements
//!    [`Functions`] with Node-API (`bindings/render/host.rs`). The body of a section whose function
//!    returns data, and any text a lambda renders, render natively there and then, with the
//!    same renderer calling functions directly.
//!
//! So functions run in mustache.js's order (slots are filled in output order, and the first
//! pass calls none), the native part of the render stays native, and the calling thread spends
//! time only on what needs it. What differs from mustache.js: data is read once, when the call
//! is made, so a function that changes its view changes what later functions see (they get
//! the original objects) but not what the native renderer reads (a snapshot).

use super::cache::TemplateCache;
use super::config::Escape;
use super::js::Js;
use super::parse::{Tags, Template};
use crate::rpc::{FunctionId, Map, RpcError};
use std::sync::Arc;

pub mod pending;

/// How a `{{name}}` tag writes a value that needs JavaScript.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TagEscape {
    /// `{{{name}}}`, `{{&name}}`, or `escape: false`: `'' + value`.
    Raw,
    /// `{{name}}` with mustache.js's HTML escaping: `String(value)`, escaped (natively).
    Html,
    /// `{{name}}` with the call's `escape` function: `'' + escape(value)`, unless that is
    /// undefined (nothing is written then, as in mustache.js).
    Function(FunctionId),
}

impl TagEscape {
    /// The escaping of a tag that escapes (`{{name}}`) or not, under the render's `escape`.
    pub fn of(tag_escapes: bool, escape: Escape) -> TagEscape {
        match (tag_escapes, escape) {
            (false, _) | (true, Escape::None) => TagEscape::Raw,
            (true, Escape::Html) => TagEscape::Html,
            (true, Escape::Function(f)) => TagEscape::Function(f),
        }
    }
}

/// What the renderer needs besides the template to render more text where it is: a lambda's
/// `render`, and a section body filled in later.
#[derive(Clone, Copy)]
pub struct Scope<'a, 'r> {
    /// The views in effect, innermost last.
    pub views: &'r [Js<'a>],
    pub partials: Option<&'a Map>,
    pub tags: Option<&'r Tags>,
    /// The main template's name (`config.name`), for parse errors.
    pub name: Option<&'r str>,
    pub escape: Escape,
    pub cache: &'r TemplateCache,
}

/// `{{#name}}` or `{{^name}}` whose name found a function.
pub struct SectionCall<'a, 'r> {
    pub function: FunctionId,
    /// The innermost view, which mustache.js calls the function with.
    pub this: Js<'a>,
    pub inverted: bool,
    /// The template and the index of the section's node in it.
    pub template: &'r Arc<Template>,
    pub node: usize,
    pub scope: Scope<'a, 'r>,
}

/// What became of a section whose name found a function.
pub enum SectionValue<'a> {
    /// The function's result, as a value of the render (the renderer goes on as for data:
    /// an array renders the body per element, and so on). For an inverted section, only its
    /// truthiness counts.
    Value(Js<'a>),
    /// Nothing more for the renderer to do: the slot was recorded, or the lambda's output
    /// written. The body is skipped.
    Done,
}

/// A `{{name}}` whose value needs JavaScript, as [`Functions::write`] takes it.
#[derive(Clone, Copy)]
pub struct Write<'a> {
    pub value: Js<'a>,
    pub this: Js<'a>,
    pub escape: TagEscape,
}

/// The most writes one [`Functions::write_run`] call is given.
pub const WRITE_RUN_MAX: usize = 256;

/// A tag of a run that holds sections ([`Functions::tag_run`]).
pub enum RunTag<'a, 'r> {
    Write(Write<'a>),
    /// A section (never an inverted one) whose function is called: a lambda it returns is
    /// called at once, and its output is the tag's text; data it returns ends the run. With
    /// what its raw text renders to, when the first pass could render it ahead.
    Section(SectionCall<'a, 'r>, Option<&'r str>),
}

/// How a [`Functions::tag_run`] ended: how many tags it did, the last one's data when that
/// was a section whose function returned data (its body is the caller's to render).
pub struct RunEnd<'a> {
    pub done: usize,
    pub data: Option<Js<'a>>,
}

/// Where the JavaScript of a render runs: [`pending::Recorder`] on a pool thread (records
/// slots), the Node-API host on the calling thread (calls functions then and there).
pub trait Functions<'a> {
    /// `{{name}}` whose value needs JavaScript: a function (write what mustache.js writes for
    /// its result, called with `this`), a value whose printing calls one, or any value under
    /// an `escape` function. Never called for null or undefined (nothing is written).
    fn write(
        &self,
        value: Js<'a>,
        this: Js<'a>,
        escape: TagEscape,
        out: &mut String,
    ) -> Result<(), RpcError>;

    /// `{{#name}}` or `{{^name}}` whose value is a function.
    fn section(
        &self,
        call: SectionCall<'a, '_>,
        out: &mut String,
    ) -> Result<SectionValue<'a>, RpcError>;

    /// Writes (at most [`WRITE_RUN_MAX`]) that follow one another in the output with nothing
    /// rendered between them, done in order as [`Functions::write`] does each: their texts
    /// appended to `texts`, each ended at its entry of `ends`. A host may do fewer (at least
    /// one; the caller checks what the output has grown to before it asks for the rest) and
    /// says how many; it must do no write after one whose text takes the output past `room`
    /// more UTF-16 units (the caller's bound: JavaScript's longest string, less what the
    /// output and the text between the writes may already take). By default, the first only.
    fn write_run(
        &self,
        writes: &[Write<'a>],
        _room: usize,
        texts: &mut String,
        ends: &mut Vec<usize>,
    ) -> Result<usize, RpcError> {
        write_first(self, writes, texts, ends)
    }

    /// Whether [`Functions::tag_run`] would take the write `w` (for a section: its function,
    /// its `this`, raw), without calling anything. By default, no.
    fn run_takes(&self, _w: &Write<'a>) -> bool {
        false
    }

    /// Tags (at most [`WRITE_RUN_MAX`], writes and sections) that follow one another in the
    /// output with nothing rendered between them, done in order, as [`Functions::write_run`]
    /// does writes: each text appended to `texts` and ended at its entry of `ends`, a section's
    /// text being its lambda's output. It stops after a section whose function returned data
    /// (which has no text: the caller renders its body over the data), and may stop sooner, as
    /// `write_run` does. `None`: the host does not take this run (nothing was called), and the
    /// caller goes tag by tag. By default, `None`.
    fn tag_run(
        &self,
        _tags: &[RunTag<'a, '_>],
        _room: usize,
        _texts: &mut String,
        _ends: &mut Vec<usize>,
    ) -> Result<Option<RunEnd<'a>>, RpcError> {
        Ok(None)
    }
}

/// [`Functions::write_run`] that does the first write only (none of none).
pub fn write_first<'a, F: Functions<'a> + ?Sized>(
    host: &F,
    writes: &[Write<'a>],
    texts: &mut String,
    ends: &mut Vec<usize>,
) -> Result<usize, RpcError> {
    let Some(w) = writes.first() else {
        return Ok(0);
    };
    host.write(w.value, w.this, w.escape, texts)?;
    ends.push(texts.len());
    Ok(1)
}

/// The error of a run of writes whose texts came back not as the run was asked for (a host's
/// bug, never the caller's).
pub fn run_miscounted() -> RpcError {
    RpcError::new(
        crate::rpc::ErrorCode::InternalError,
        "corepool: a run of writes came back miscounted",
    )
}
