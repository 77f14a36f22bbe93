//! The lambdas running on this thread, by token: while a section's function or lambda runs,
//! its `render` (a closure on this thread's stack) and its section's raw text are registered
//! here, so that `renderInScope(token, text)` and `renderSectionText(token)`, called back from
//! that very JavaScript, find them. A [`Live`] guard unregisters them when the call returns;
//! a token asked for after that is an error, never a dangling pointer.

use crate::rpc::RpcError;
use std::cell::{Cell, RefCell};

thread_local! {
    /// Each lambda running on this thread, by token: its `render`, a closure on this thread's
    /// stack, and its section's raw text, registered for exactly as long as it runs (`Live`).
    static LIVE: RefCell<Vec<(f64, *const RenderFn, *const str)>> =
        const { RefCell::new(Vec::new()) };
    static NEXT_TOKEN: Cell<f64> = const { Cell::new(1.0) };
}

pub(super) type RenderFn = dyn Fn(&str) -> Result<String, RpcError>;

/// A lambda's `render` and raw text, registered while it (or the section function that may
/// return it) runs.
pub(super) struct Live {
    /// What `renderInScope` and `renderSectionText` are called with.
    pub(super) token: f64,
}

impl Live {
    /// Registers `render` and `raw` until the returned guard drops.
    pub(super) fn register<'r>(
        render: &'r (dyn Fn(&str) -> Result<String, RpcError> + 'r),
        raw: &'r str,
    ) -> Live {
        let token = NEXT_TOKEN.with(|next| {
            let token = next.get();
            next.set(token + 1.0);
            token
        });
        // SAFETY: only the lifetime is erased; the guard unregisters the pointer before
        // `render` (which outlives the guard, both being locals of the caller) goes.
        let render: *const RenderFn = unsafe { std::mem::transmute(render) };
        LIVE.with(|live| live.borrow_mut().push((token, render, raw as *const str)));
        Live { token }
    }

    /// What is registered under `token`, if it still is.
    pub(super) fn find(token: f64) -> Option<(*const RenderFn, *const str)> {
        LIVE.with(|live| {
            let live = live.borrow();
            // Tokens are registered in increasing order, and stay so: a search in halves (a
            // run registers a lambda per section at once).
            live.binary_search_by(|(t, _, _)| t.total_cmp(&token))
                .ok()
                .map(|i| (live[i].1, live[i].2))
        })
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        LIVE.with(|live| {
            let mut live = live.borrow_mut();
            // Most often the last one (guards drop in the reverse of their registration).
            if let Some(i) = live.iter().rposition(|(t, _, _)| *t == self.token) {
                live.remove(i);
            }
        });
    }
}

/// The error of a lambda's `render` (or raw text) asked for once the lambda has returned.
pub(super) fn not_live() -> RpcError {
    RpcError::failed("render: a lambda's render() can only be called while the lambda runs")
}
