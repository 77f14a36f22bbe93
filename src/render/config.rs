//! The render's 4th param, mustache.js's `config`: an array of two delimiters (`tags`), or an
//! object `{ tags, escape }`, to which corepool adds `output` and `data`.
//!
//! - `tags`: `["<%", "%>"]`, the delimiters the template and every partial start with. Both
//!   must be non-empty strings (mustache.js fails on other types, and with an empty tag renders
//!   nothing or ignores tags; corepool refuses both).
//! - `escape`: how `{{name}}` escapes. Unset (`undefined`, `null`) or `'html'`: mustache.js's
//!   HTML escaping; `false` or `'none'`: none (for text that is not HTML; mustache.js itself
//!   takes `false` as unset); a function: called as mustache.js calls it (see `functions.rs`).
//! - `output`: `'string'` (the default) or `'buffer'`: the result as UTF-8 bytes.
//! - `data`: `'view'` (the default): the data param is the view itself; `'json'`: it is JSON
//!   text, parsed on the pool thread as `JSON.parse` parses it (see `mod.rs`), so the calling
//!   thread hands over one string and never builds or walks the view.
//!
//! - `name`: the template's name (a file path, say), for error messages: a parse error names
//!   it with the line and column (`place.rs`). A string; unset (`undefined`, `null`): none.
//!
//! Like mustache.js, a config that is neither an array nor an object (a string, a number) is
//! ignored, and so are keys it does not know.

use super::parse::Tags;
use crate::rpc::FunctionId;
use crate::rpc::{RpcError, Value};

/// How `{{name}}` escapes its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Escape {
    Html,
    None,
    /// A JavaScript function of the call's.
    Function(FunctionId),
}

/// What the render returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    String,
    Buffer,
}

impl Output {
    /// The render's result `out` in this form.
    pub fn value(self, out: String) -> Value {
        match self {
            Output::String => Value::String(out),
            Output::Buffer => Value::Buffer(out.into_bytes()),
        }
    }
}

/// What the data param is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Data {
    /// The view itself.
    View,
    /// The view's JSON text.
    Json,
}

#[derive(Debug)]
pub struct Config {
    pub tags: Option<Tags>,
    pub escape: Escape,
    pub output: Output,
    pub data: Data,
    /// The template's name, for error messages.
    pub name: Option<Box<str>>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            tags: None,
            escape: Escape::Html,
            output: Output::String,
            data: Data::View,
            name: None,
        }
    }
}

impl Config {
    pub fn parse(config: Option<&Value>) -> Result<Config, RpcError> {
        let mut out = Config::default();
        match config {
            Some(Value::Array(tags)) => out.tags = Some(self::tags(tags, "config")?),
            Some(Value::Object(map)) => {
                match map.get("tags") {
                    None | Some(Value::Null) => {}
                    Some(Value::Array(tags)) => out.tags = Some(self::tags(tags, "config.tags")?),
                    Some(other) => return Err(bad_tags("config.tags", other)),
                }
                out.escape = match map.get("escape") {
                    None | Some(Value::Null) => Escape::Html,
                    Some(Value::Bool(false)) => Escape::None,
                    Some(Value::String(s)) if s == "html" => Escape::Html,
                    Some(Value::String(s)) if s == "none" => Escape::None,
                    Some(Value::Function(f)) => Escape::Function(*f),
                    Some(other) => {
                        return Err(RpcError::invalid_params(format!(
                            "render: config.escape must be a function, 'html', 'none' or false \
                             (no escaping), got {}",
                            describe(other)
                        )))
                    }
                };
                out.output = match map.get("output") {
                    None | Some(Value::Null) => Output::String,
                    Some(Value::String(s)) if s == "string" => Output::String,
                    Some(Value::String(s)) if s == "buffer" => Output::Buffer,
                    Some(other) => {
                        return Err(RpcError::invalid_params(format!(
                            "render: config.output must be 'string' or 'buffer', got {}",
                            describe(other)
                        )))
                    }
                };
                out.data = match map.get("data") {
                    None | Some(Value::Null) => Data::View,
                    Some(Value::String(s)) if s == "view" => Data::View,
                    Some(Value::String(s)) if s == "json" => Data::Json,
                    Some(other) => {
                        return Err(RpcError::invalid_params(format!(
                            "render: config.data must be 'view' (data is the view) or 'json' \
                             (data is the view's JSON text), got {}",
                            describe(other)
                        )))
                    }
                };
                out.name = match map.get("name") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(s)) => Some(s.as_str().into()),
                    Some(other) => {
                        return Err(RpcError::invalid_params(format!(
                            "render: config.name must be a string (the template's name, for \
                             error messages), got {}",
                            describe(other)
                        )))
                    }
                };
            }
            _ => {}
        }
        Ok(out)
    }
}

fn tags(tags: &[Value], place: &str) -> Result<Tags, RpcError> {
    match tags {
        [Value::String(open), Value::String(close)] if !open.is_empty() && !close.is_empty() => {
            Ok(Tags {
                open: open.as_str().into(),
                close: close.as_str().into(),
            })
        }
        _ => Err(bad_tags(place, &Value::Array(tags.to_vec()))),
    }
}

fn bad_tags(place: &str, got: &Value) -> RpcError {
    RpcError::invalid_params(format!(
        "render: {place} must be two non-empty delimiter strings, such as [\"<%\", \"%>\"], got {}",
        describe(got)
    ))
}

/// A short description of a value for error messages: short strings and numbers as they are.
fn describe(value: &Value) -> String {
    match value {
        Value::String(s) if s.chars().count() <= 20 => crate::rpc::json::to_string(value),
        Value::Number(_) | Value::Bool(_) | Value::Null => crate::rpc::json::to_string(value),
        Value::Array(items) if items.len() <= 4 && items.iter().all(is_short) => {
            crate::rpc::json::to_string(value)
        }
        other => other.kind().to_string(),
    }
}

fn is_short(value: &Value) -> bool {
    match value {
        Value::String(s) => s.chars().count() <= 20,
        Value::Number(_) | Value::Bool(_) | Value::Null => true,
        _ => false,
    }
}
