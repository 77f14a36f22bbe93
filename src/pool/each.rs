//! A map's chunk: one native job that runs a command once per item (`Pool::call_each`), so
//! that `map` over thousands of small inputs costs a job, a settlement and a crossing per
//! chunk instead of per input.
//!
//! Each item runs as its own call would: with its own time limit (counted from its start),
//! under `catch_unwind` (a panic is that item's InternalError), and stopping for the chunk's
//! reasons (abort, `destroy()`, a departing caller): once the chunk must stop, the items not
//! yet run get that reason as their error. The outcome is one value:
//! `{ results: [value | null, …], errors: [[index, code, message, data?], …] }`, results in
//! item order (null where the item failed).

use super::timeout;
use crate::rpc::command::panicked;
use crate::rpc::{Command, Context, Map, RpcError, Value};
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) struct Each {
    pub(crate) command: Arc<dyn Command>,
    /// Each item's limit (`None`: the pool's default was resolved by the caller; zero: none).
    pub(crate) item_timeout: Option<Duration>,
}

impl Command for Each {
    fn name(&self) -> &'static str {
        self.command.name()
    }

    fn params(&self) -> &'static str {
        "items: the params of one call each"
    }

    fn summary(&self) -> &'static str {
        "runs a command once per item (a map's chunk)"
    }

    fn run(&self, items: Vec<Value>, ctx: &Context) -> Result<Value, RpcError> {
        let mut results = Vec::with_capacity(items.len());
        let mut errors = Vec::new();
        for (index, item) in items.into_iter().enumerate() {
            let outcome = match ctx.stop_reason() {
                Some(reason) => Err(ctx.stop_error(reason)),
                None => self.run_one(item, ctx),
            };
            match outcome {
                Ok(value) => results.push(value),
                Err(e) => {
                    results.push(Value::Null);
                    let mut entry = vec![
                        Value::Number(index as f64),
                        Value::Number(f64::from(e.code.code())),
                        Value::String(e.message),
                    ];
                    if let Some(data) = e.data {
                        entry.push(data);
                    }
                    errors.push(Value::Array(entry));
                }
            }
        }
        let mut out = Map::with_capacity(2);
        out.push_unique("results".into(), Value::Array(results));
        out.push_unique("errors".into(), Value::Array(errors));
        Ok(Value::Object(out))
    }
}

impl Each {
    /// One item, as a call of its own with the one param `item`.
    fn run_one(&self, item: Value, ctx: &Context) -> Result<Value, RpcError> {
        let start = Instant::now();
        let limit = self.item_timeout.filter(|t| !t.is_zero());
        let item_ctx = ctx.with_deadline(timeout::running_limit(self.command.name(), start, limit));
        let ran = panic::catch_unwind(AssertUnwindSafe(|| {
            let value = self.command.run(vec![item], &item_ctx)?;
            match item_ctx.stop_reason() {
                Some(reason) => Err(item_ctx.stop_error(reason)),
                None => Ok(value),
            }
        }));
        ran.unwrap_or_else(|payload| Err(panicked(self.command.name(), &*payload)))
    }
}
