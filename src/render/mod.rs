//! The Mustache engine: templates rendered on native threads, with output byte for byte what
//! mustache.js 4.2.0 gives for the same template and JSON data (issue #4). The command `render`
//! (`commands/render.rs`) hands its params to [`run`] or [`run_packed`]; a render whose view
//! holds JavaScript functions pauses and is finished on the calling thread, with the protocol
//! described in `README.md` beside this file.
//!
//! It is a re-implementation of mustache.js's behaviour, not of the Mustache spec: where the two
//! differ (the spec's "Dotted Names - Context Precedence", standalone lines with several tags,
//! partial indentation after text), mustache.js wins. The parts:
//!
//! - `parse.rs`: template text → a flat list of nodes, mustache.js's scanning, standalone-line
//!   and indentation rules, and its error messages (`Unclosed tag at 12`…).
//! - `place.rs`: where a parse error is (name, line, column, the line with a caret), added to
//!   mustache.js's message and given as the error's data (issue #32).
//! - `cache.rs`: parsed templates, process-wide and bounded, so a hot template is parsed once per
//!   process, whichever worker renders it.
//! - `lookup.rs`: mustache.js's name lookup through the stack of views.
//! - `js.rs`: what JavaScript does with a JSON value (`v[key]`, truthiness, `String(v)`).
//! - `escape.rs`: mustache.js's HTML escaping.
//! - `writer.rs`: the walk over the nodes that writes the output (mustache.js's `Writer`);
//!   iterative, depth-capped, cancellable.
//! - `config.rs`: the `config` param (tags, escape, output, data).
//! - `functions.rs`, `functions/pending.rs`: renders whose view holds functions (two passes;
//!   `README.md`).
//!
//! Params that crossed packed (plain data, `rpc::packed`) are read in place: the view is the
//! packed tree (`rpc::packed::tree`), its arrays and objects `Js::List` and `Js::Record`, and
//! no value is made of them ([`run_packed`]; on the 200-row table of the benchmarks,
//! reading the tree costs ~20 µs where making its values and freeing them cost ~48 µs). The
//! answer is the one the values would give (`packed_tests.rs`).
//!
//! Data as JSON text (`config.data: 'json'`): the data param is a string, parsed here, on the
//! pool thread, by the same parser as `pool.handle` (`rpc::json`: `JSON.parse`'s reading, so
//! `1e400` is Infinity, a repeated key keeps its first position and last value, a lone
//! surrogate escape is U+FFFD as a lone surrogate in a JavaScript string is once it crosses).
//! The parsed view replaces the text in the params before anything borrows them, so the render
//! that follows, pending slots included, is exactly the render of the parsed view. Text that is
//! not JSON, or nested past [`MAX_NESTING`](crate::rpc::value::MAX_NESTING), is InvalidParams
//! with the parser's line and column.
//!
//! What it keeps: only the template cache. A render holds its data and partials borrowed from
//! the call's params and allocates its output once it knows the template.
//!
//! Where mustache.js's answer depends on JavaScript itself rather than on the data, corepool
//! refuses instead of guessing: data holding BigInts, byte arrays or shared views (InvalidParams,
//! before anything renders; `pool.render` hands over BigInts, Dates and class instances
//! prepared as mustache.js sees them, see lib/render.js), names that reach built-ins such as `toString` or `constructor`,
//! and string indexes that split a surrogate pair (CommandFailed). Errors mustache.js throws
//! come back as CommandFailed with its message: parse errors, and the TypeErrors of a lookup on
//! a null view or of `String()` on an object with its own `toString` key.

mod cache;
pub mod config;
mod escape;
pub mod functions;
pub mod js;
mod lookup;
#[cfg(test)]
mod packed_tests;
mod parse;
mod place;
#[cfg(test)]
mod tests;
mod writer;

use crate::rpc::json::Unparsed;
use crate::rpc::packed::tree::{Item, Tree};
use crate::rpc::packed::Packed;
use crate::rpc::value::Pending;
use crate::rpc::{params, Context, ErrorCode, Map, RpcError, Value};
use cache::TemplateCache;
use config::{Config, Data};
use functions::pending::{PendingRender, Recorder};
use js::Js;
use parse::Template;
use std::sync::Arc;

/// A render of `params` (`template, data?, partials?, config?`): the output as the config asks
/// for it, or, when the view or config holds functions, a pending render the calling thread
/// finishes (`functions.rs`).
pub fn run(params: Vec<Value>, ctx: &Context) -> Result<Value, RpcError> {
    run_values(params, ctx, ctx.plain_params())
}

/// [`run`], told whether the params are plain data (packed params without functions: nothing
/// to look for in them).
fn run_values(mut params: Vec<Value>, ctx: &Context, plain: bool) -> Result<Value, RpcError> {
    params::expect_count("render", &params, 1..=4)?;
    let config = Config::parse(params.get(3))?;
    if config.data == Data::Json {
        let view = parse_json_data(params.get(1))?;
        match params.get_mut(1) {
            Some(slot) => *slot = view,
            None => params.push(view),
        }
    }
    let template = params::string("render: template", &params[0])?;
    let data = params.get(1);
    let mut functions = match data {
        // Parsed JSON and packed params hold nothing but plain data: no functions, nothing
        // to refuse. (The walk that checks, over a big view, cost 2% of a render.)
        Some(_) if config.data == Data::Json || plain => false,
        Some(data) => check_data(data)?,
        None => false,
    };
    let partials = partials_of(params.get(2))?;
    functions |= matches!(config.escape, config::Escape::Function(_));
    let cache = TemplateCache::global();
    let template = cache
        .get_or_parse(template, config.tags.as_ref())
        .map_err(|e| place::parse_failed(&e, template, config.name.as_deref(), None))?;
    let data = data.map_or(Js::Undefined, Js::of);
    if !functions {
        return render_plain(template, data, partials, &config, ctx);
    }
    let recorder = Recorder::default();
    let (out, done) = writer::render(
        template,
        data,
        partials,
        &config,
        cache,
        Some(&recorder),
        ctx,
    );
    let error = match done {
        Ok(()) if recorder.is_empty() => return Ok(config.output.value(out)),
        Ok(()) => None,
        // Too many slots: no function is called for a render that cannot finish.
        Err(e) if recorder.is_empty() || stopped(&e) || recorder.is_full() => return Err(e),
        Err(e) => Some(e),
    };
    // SAFETY: the recorder's views point into `params` (data, partials, config) and into
    // templates its slots hold; `PendingRender` keeps both, unchanged, for as long as it
    // keeps the slots (see `pending.rs`). Taking it out of this borrow lets `params` move
    // into it.
    let recorder: Recorder<'static> = unsafe { std::mem::transmute(recorder) };
    // SAFETY: `recorder`'s views point into `params` and into templates its slots hold, as
    // `PendingRender::new` requires (see the transmute above).
    let pending = unsafe { PendingRender::new(recorder, out, error, config, params) };
    Ok(Value::Pending(Pending(Arc::new(pending))))
}

/// Packed params are plain data, read in place: the view a render walks is the tree, with
/// no value made for it. The same checks in the same order as `run`, whose answer it gives:
/// where a param is not what a render takes, `run` answers from the values.
pub fn run_packed(packed: Packed, ctx: &Context) -> Result<Value, RpcError> {
    let tree = Tree::read(packed).map_err(RpcError::invalid_params)?;
    // Params holding functions (`pool.render`'s lambdas, an `escape` function) render from
    // values: a render that calls functions is paused and finished on the calling thread, and
    // the pending render owns its params (`functions/pending.rs`). Made from the tree here,
    // on the pool thread, they cost a fraction of what converting the view value by value on
    // the calling thread did.
    if tree.has_functions() {
        return run_values(tree.into_values(), ctx, false);
    }
    if !(1..=4).contains(&tree.len()) {
        return run(tree.into_values(), ctx);
    }
    let config = Config::parse(tree.param_value(3).as_ref())?;
    // Data as JSON text is parsed from where it lies; the view is then the parsed values.
    let parsed = match (config.data, tree.param(1)) {
        (Data::View, _) => None,
        (Data::Json, Some(Item::String(text))) => Some(parse_json_text(text)?),
        // Not a string: `run` says what it is.
        (Data::Json, _) => return run(tree.into_values(), ctx),
    };
    let Some(Item::String(template)) = tree.param(0) else {
        return run(tree.into_values(), ctx);
    };
    let partials = tree.param_value(2);
    let partials = partials_of(partials.as_ref())?;
    let template = TemplateCache::global()
        .get_or_parse(template, config.tags.as_ref())
        .map_err(|e| place::parse_failed(&e, template, config.name.as_deref(), None))?;
    let data = match &parsed {
        Some(view) => Js::of(view),
        None => tree.param(1).map_or(Js::Undefined, Js::of_item),
    };
    render_plain(template, data, partials, &config, ctx)
}

/// The partials param: none, or an object of template strings (or nulls).
fn partials_of(partials: Option<&Value>) -> Result<Option<&Map>, RpcError> {
    match partials {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(partials)) => Ok(Some(check_partials(partials)?)),
        Some(other) => Err(RpcError::invalid_params(format!(
            "render: partials must be an object of name → template string, got {}",
            other.kind()
        ))),
    }
}

/// A render with no function to call: the output, as the config asks for it.
fn render_plain(
    template: Arc<Template>,
    data: Js<'_>,
    partials: Option<&Map>,
    config: &Config,
    ctx: &Context,
) -> Result<Value, RpcError> {
    let cache = TemplateCache::global();
    let (out, done) = writer::render(template, data, partials, config, cache, None, ctx);
    done?;
    Ok(config.output.value(out))
}

/// The view that `data`, JSON text, stands for; InvalidParams for anything else.
fn parse_json_data(data: Option<&Value>) -> Result<Value, RpcError> {
    match data {
        Some(Value::String(text)) => parse_json_text(text),
        other => Err(RpcError::invalid_params(format!(
            "render: config.data is 'json', so data must be a string of JSON text, got {}",
            other.map_or("nothing", Value::kind)
        ))),
    }
}

/// The view that the JSON text `text` stands for; InvalidParams for text that is not JSON.
fn parse_json_text(text: &str) -> Result<Value, RpcError> {
    crate::rpc::json::parse(text).map_err(|why| {
        RpcError::invalid_params(match why {
            Unparsed::NotJson(why) => {
                format!("render: data is not JSON text (config.data is 'json'): {why}")
            }
            Unparsed::TooDeep => format!("render: data, JSON text (config.data is 'json'): {why}"),
        })
    })
}

/// Whether `e` says the call was stopped (abort, timeout, destroy): that ends it at once, even
/// with slots left to fill.
fn stopped(e: &RpcError) -> bool {
    matches!(
        e.code,
        ErrorCode::Aborted | ErrorCode::Timeout | ErrorCode::PoolClosed
    )
}

/// Renders with a given cache and no functions (the command uses the process-wide cache).
#[cfg(test)]
fn render_with(
    cache: &TemplateCache,
    template: &str,
    data: Option<&Value>,
    partials: Option<&Map>,
    config: &Config,
    ctx: &Context,
) -> Result<String, RpcError> {
    let template = cache
        .get_or_parse(template, config.tags.as_ref())
        .map_err(|e| place::parse_failed(&e, template, config.name.as_deref(), None))?;
    let data = data.map_or(Js::Undefined, Js::of);
    let (out, done) = writer::render(template, data, partials, config, cache, None, ctx);
    done.map(|()| out)
}

pub use escape::escape_html;

/// Refuses data that JSON cannot carry (functions aside); says whether it holds functions. A
/// quick walk first; the path of the culprit is only worked out when there is one.
fn check_data(data: &Value) -> Result<bool, RpcError> {
    check_value(data, "data")
}

/// [`check_data`] for any value a render takes, named `name` in the error.
pub fn check_value(data: &Value, name: &str) -> Result<bool, RpcError> {
    let mut stack = vec![data];
    let mut functions = false;
    while let Some(value) = stack.pop() {
        match value {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.iter().map(|(_, v)| v)),
            Value::Function(_) => functions = true,
            Value::View(_)
            | Value::Bytes(_)
            | Value::Buffer(_)
            | Value::BigInt(_)
            | Value::Pending(_)
            | Value::Cloned(_) => {
                let (path, culprit) = first_non_json(data, String::from(name))
                    .unwrap_or_else(|| (String::from(name), value));
                return Err(RpcError::invalid_params(format!(
                    "render: {path} is a {}, which JSON cannot carry and the native renderer \
                     does not take; convert it first (e.g. to a string or an array of numbers), \
                     or render this template with mustache.js on the main thread",
                    culprit.kind()
                )));
            }
            Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
        }
    }
    Ok(functions)
}

/// The path and value of the first non-JSON value inside `value`, depth first.
fn first_non_json(value: &Value, path: String) -> Option<(String, &Value)> {
    let mut stack = vec![(value, path)];
    while let Some((value, path)) = stack.pop() {
        match value {
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate().rev() {
                    stack.push((item, format!("{path}[{i}]")));
                }
            }
            Value::Object(map) => {
                let entries: Vec<_> = map.iter().collect();
                for (key, item) in entries.into_iter().rev() {
                    stack.push((item, format!("{path}{}", property_path(key))));
                }
            }
            Value::View(_)
            | Value::Bytes(_)
            | Value::Buffer(_)
            | Value::BigInt(_)
            | Value::Pending(_)
            | Value::Cloned(_) => return Some((path, value)),
            Value::Null
            | Value::Bool(_)
            | Value::Number(_)
            | Value::String(_)
            | Value::Function(_) => {}
        }
    }
    None
}

/// `.key` for an identifier, `["key"]` for anything else.
fn property_path(key: &str) -> String {
    let identifier = key.chars().next().is_some_and(|c| !c.is_ascii_digit())
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if identifier {
        format!(".{key}")
    } else {
        format!("[{}]", crate::rpc::json::to_string(&Value::from(key)))
    }
}

/// Partials must map names to template strings (null, like a missing name, renders nothing);
/// mustache.js renders a partial that is a function's source text, which corepool does not.
fn check_partials(partials: &Map) -> Result<&Map, RpcError> {
    for (name, value) in partials.iter() {
        if !matches!(value, Value::String(_) | Value::Null) {
            return Err(RpcError::invalid_params(format!(
                "render: partials{} must be a template string, got {}",
                property_path(name),
                value.kind()
            )));
        }
    }
    Ok(partials)
}
