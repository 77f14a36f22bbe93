//! The engine against the Mustache spec and against mustache.js 4.2.0's behaviour (expected
//! outputs in these files were produced by mustache.js 4.2.0 on Node 20). This file holds the
//! helpers; the tests are grouped by what they check in the files beside it.

mod caching;
mod json_text;
mod limits;
mod params;
mod semantics;
mod spec;
mod throughput;

use super::cache::TemplateCache;
use super::config::Config;
use super::render_with;
use crate::rpc::{json, Context, ErrorCode, RpcError, StopFlags, Value};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU8};
use std::sync::Arc;

static NOT_CANCELLED: AtomicU8 = AtomicU8::new(0);
static ABORTED: AtomicU8 = AtomicU8::new(1);
static NO: AtomicBool = AtomicBool::new(false);

fn context(cancel: &'static AtomicU8) -> Context<'static> {
    let flags = StopFlags {
        cancel,
        env_gone: &NO,
        destroyed: &NO,
    };
    Context::new(flags, None, 0)
}

/// Runs the command as the pool would: `render(template, data?, partials?)`.
fn run(params: Vec<Value>) -> Result<String, RpcError> {
    match super::run(params, &context(&NOT_CANCELLED))? {
        Value::String(s) => Ok(s),
        other => panic!("render returned a {}", other.kind()),
    }
}

fn render(template: &str, data: &str) -> Result<String, RpcError> {
    run(vec![template.into(), json::parse(data).unwrap()])
}

fn render_partials(template: &str, data: &str, partials: &str) -> Result<String, RpcError> {
    run(vec![
        template.into(),
        json::parse(data).unwrap(),
        json::parse(partials).unwrap(),
    ])
}

fn ok(template: &str, data: &str) -> String {
    render(template, data).unwrap_or_else(|e| panic!("{template:?}: {e}"))
}

fn failure(template: &str, data: &str) -> RpcError {
    match render(template, data) {
        Ok(out) => panic!("{template:?} rendered {out:?}, expected an error"),
        Err(e) => e,
    }
}

// ---- the official spec ----

/// `render(template, data, partials, config)` with all four as JSON text.
fn render_config(
    template: &str,
    data: &str,
    partials: &str,
    config: &str,
) -> Result<Value, RpcError> {
    render_four(template, json::parse(data).unwrap(), partials, config)
}

/// `render(template, data, partials, config)` with partials and config as JSON text.
fn render_four(
    template: &str,
    data: Value,
    partials: &str,
    config: &str,
) -> Result<Value, RpcError> {
    crate::render::run(
        vec![
            template.into(),
            data,
            json::parse(partials).unwrap(),
            json::parse(config).unwrap(),
        ],
        &context(&NOT_CANCELLED),
    )
}
