//! The settle batch: how one environment's finished calls cross to its JavaScript in one call
//! `settle(...batch)`, four arguments per settlement (`call, code, value, data`; the codes are
//! the contract's: 0 a value, `RESULT_AS_JSON`, `RESULT_SLICE`, `RESULT_CLONED`,
//! `RESULT_POSTED`, `PROGRESS`, `RAN`, or an error code).
//! An outcome is made ready on the thread that produced it ([`Settlement::of`]: big strings
//! transcoded, big plain data written as JSON text), so the JS thread only copies; small
//! Buffer results share one Buffer per batch (`Slabs`).

use crate::bindings::contract::{
    JSON_MAX_DEPTH, JSON_MIN_VALUES, PROGRESS, RAN, RESULT_AS_JSON, RESULT_CLONED, RESULT_POSTED,
    RESULT_SLICE, SLAB_BYTES, SLICE_MAX, SLICE_SPAN,
};
use crate::bindings::convert::{self, napi_try, text_to_js, to_js, Converted};
use crate::pool::Ran;
use crate::rpc::text::too_long_for_js;
use crate::rpc::{ErrorCode, JsText, Outcome, RpcError, Value};
use napi::sys;
use std::ptr;

/// An outcome made ready for the JS thread: big strings transcoded to the encoding the JS
/// engine stores (`JsText::for_js`), big plain data written as JSON text, and the result's
/// `Value` dropped, all on the producing thread.
pub(super) enum Settlement {
    /// Settle code 0 with this value.
    Value(Value),
    /// Settle code 0 with this string.
    Text(JsText),
    /// Settle code 1 (`RESULT_AS_JSON`) with this JSON text.
    Json(JsText),
    Error(RpcError),
    /// Not a settlement: a progress report (code `PROGRESS`) of a call still running.
    Progress(Value),
    /// Settle code `RESULT_CLONED` with the parts of this structured-clone message (the frame
    /// of a `Value::Cloned`, handed over without copying its moved buffers: `convert::cloned`).
    Cloned(crate::rpc::value::Cloned),
    /// Settle code `RESULT_POSTED` with the id of the thread that posted the result on its
    /// port to the caller's thread (`Cloned::posted`).
    Posted(u32),
    /// Not a settlement: how an observed call ran (code `RAN`, value `[thread, waitMs,
    /// runMs]`), before its settlement.
    Ran(Ran),
}

impl Settlement {
    pub(super) fn of(outcome: Outcome) -> Settlement {
        match outcome {
            Ok(Value::String(s)) => Settlement::Text(JsText::for_js(s)),
            Ok(Value::Cloned(frame)) => match frame.posted_by() {
                Some(thread) => Settlement::Posted(thread),
                None => Settlement::Cloned(frame),
            },
            // A view is the caller's memory, lent for the call: a result cannot hand it back.
            Ok(v) if v.has_view() => Settlement::Error(RpcError::new(
                ErrorCode::InternalError,
                "the command's result holds a typed array over a SharedArrayBuffer, which a \
                 result cannot carry",
            )),
            // Big plain data: one JSON string and JSON.parse in JS beat building it value by
            // value through Node-API by an order of magnitude, unless the text is longer than
            // a JavaScript string can be (escapes make it longer than its strings).
            Ok(v) if json_size(&v, 0) >= JSON_MIN_VALUES => {
                let text = crate::rpc::json::to_string(&v);
                if too_long_for_js(&text) {
                    Settlement::Value(v)
                } else {
                    Settlement::Json(JsText::for_js(text))
                }
            }
            Ok(v) => Settlement::Value(v),
            Err(e) => Settlement::Error(e),
        }
    }
}

/// Most arguments of one `settle(...batch)` call (a batch's four entries per settlement): a
/// whole batch of [`MAX_BATCH`] would put 32k values on the stack.
const SETTLE_ARGS: usize = 4 * 1024;
const _: () = assert!(SETTLE_ARGS.is_multiple_of(4));

/// Calls `settle(...batch)` with the flat batch as its arguments, in calls of at most
/// [`SETTLE_ARGS`] (whole settlements each). Each call settles in isolation: a
/// result that cannot be made into a JavaScript value (a string longer than the engine allows)
/// settles its own call with InternalError, and the others go on as usual.
///
/// # Safety
/// Must run on `env`'s JS thread with `settle` a function of that env.
pub(super) unsafe fn hand_to_js(
    env: sys::napi_env,
    settle: sys::napi_value,
    mut settled: Vec<(u64, Settlement)>,
) {
    let mut args = Vec::with_capacity(settled.len() * 4);
    let mut undefined = ptr::null_mut();
    // SAFETY: live env on its JS thread (caller contract) for every call below.
    unsafe {
        sys::napi_get_undefined(env, &mut undefined);
        let mut slabs = Slabs {
            current: None,
            left: settled
                .iter()
                .map(|(_, o)| sliced(o).map_or(0, <[u8]>::len))
                .sum(),
        };
        for (call, outcome) in settled.iter_mut() {
            let made = match sliced(outcome) {
                Some(bytes) => slabs.slice(env, bytes),
                None => entry(env, undefined, outcome),
            };
            let entry = match made {
                Ok(entry) => entry,
                // A report that cannot be made into a value is skipped: it is advisory, and the
                // call has not settled.
                Err(_) if matches!(outcome, Settlement::Progress(_) | Settlement::Ran(_)) => {
                    continue
                }
                Err(why) => {
                    let e = RpcError::new(
                        ErrorCode::InternalError,
                        format!("the call's result could not be handed to JavaScript: {why}"),
                    );
                    match entry(env, undefined, &mut Settlement::Error(e)) {
                        Ok(entry) => entry,
                        // Nothing can be made any more (the environment is going away).
                        Err(_) => continue,
                    }
                }
            };
            let mut id = ptr::null_mut();
            sys::napi_create_double(env, *call as f64, &mut id);
            let (code, value, data) = entry;
            let mut c = ptr::null_mut();
            sys::napi_create_int32(env, code, &mut c);
            args.extend([id, c, value, data]);
        }
        slabs.seal();
        for chunk in args.chunks(SETTLE_ARGS) {
            let mut result = ptr::null_mut();
            sys::napi_call_function(
                env,
                undefined,
                settle,
                chunk.len(),
                chunk.as_ptr(),
                &mut result,
            );
        }
    }
}

/// The bytes of a result handed over as a slice of a shared Buffer, if it is one.
fn sliced(outcome: &Settlement) -> Option<&[u8]> {
    match outcome {
        Settlement::Value(Value::Buffer(b)) if !b.is_empty() && b.len() < SLICE_MAX => Some(b),
        _ => None,
    }
}

/// The shared Buffers that one batch's small Buffer results are cut from.
struct Slabs {
    /// The Buffer being filled: its value, its memory, its size and the bytes used.
    current: Option<(sys::napi_value, *mut u8, usize, usize)>,
    /// Bytes of the batch's small results not placed yet (a new slab is no bigger).
    left: usize,
}

impl Slabs {
    /// The `code, value, data` of `bytes` placed in a slab, or handed over as a Buffer of its own
    /// when the slab would hold it alone.
    ///
    /// # Safety
    /// Must run on `env`'s JS thread, within one handle scope for the whole batch.
    unsafe fn slice(
        &mut self,
        env: sys::napi_env,
        bytes: &[u8],
    ) -> Converted<(i32, sys::napi_value, sys::napi_value)> {
        let fits = matches!(self.current, Some((_, _, size, used)) if size - used >= bytes.len());
        if !fits {
            self.seal();
            // SLICE_MAX <= SLAB_BYTES (contract.rs), so the bounds are in order.
            let size = self.left.clamp(bytes.len(), SLAB_BYTES);
            let mut data = ptr::null_mut();
            let mut buffer = ptr::null_mut();
            // `data` receives `size` writable bytes.
            napi_try!(
                env,
                sys::napi_create_buffer(env, size, &mut data, &mut buffer),
                "creating a Buffer"
            );
            self.current = Some((buffer, data.cast(), size, 0));
        }
        let Some((buffer, data, size, used)) = self.current.as_mut() else {
            unreachable!("a slab was made above")
        };
        // SAFETY: the slab's memory holds `size` bytes, `used + bytes.len() <= size` (checked
        // or made so above), and nothing else writes it: the Buffer is not handed to JS yet.
        unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), data.add(*used), bytes.len()) };
        let start = *used;
        *used += bytes.len();
        self.left -= bytes.len();
        if start == 0 && *used == *size {
            // The slab holds this result alone (the batch's only small one, or its last): it
            // is handed over as the result itself, with no slice to cut and nothing shared.
            let whole = *buffer;
            self.current = None;
            let mut undefined = ptr::null_mut();
            napi_try!(
                env,
                sys::napi_get_undefined(env, &mut undefined),
                "getting undefined"
            );
            return Ok((0, whole, undefined));
        }
        let mut place = ptr::null_mut();
        let packed = start as f64 * f64::from(SLICE_SPAN) + bytes.len() as f64;
        napi_try!(
            env,
            sys::napi_create_double(env, packed, &mut place),
            "creating a number"
        );
        Ok((RESULT_SLICE, *buffer, place))
    }

    /// Zeroes the unused end of the slab being filled: `napi_create_buffer` does not clear its
    /// memory, and every slice's `.buffer` shows the whole slab.
    fn seal(&mut self) {
        if let Some((_, data, size, used)) = self.current {
            // SAFETY: the slab's memory holds `size` bytes and `used <= size`; nothing else
            // writes it (the Buffer is not handed to JS yet).
            unsafe { ptr::write_bytes(data.add(used), 0, size - used) };
        }
    }
}

/// One settlement's `code, value, data`.
///
/// # Safety
/// Must run on `env`'s JS thread.
unsafe fn entry(
    env: sys::napi_env,
    undefined: sys::napi_value,
    outcome: &mut Settlement,
) -> Converted<(i32, sys::napi_value, sys::napi_value)> {
    // SAFETY: caller contract.
    unsafe {
        Ok(match outcome {
            Settlement::Value(v) => (0, to_js(env, v)?, undefined),
            Settlement::Text(text) => (0, text_to_js(env, text)?, undefined),
            Settlement::Json(text) => (RESULT_AS_JSON, text_to_js(env, text)?, undefined),
            Settlement::Progress(v) => (PROGRESS, to_js(env, v)?, undefined),
            Settlement::Cloned(frame) => (
                RESULT_CLONED,
                convert::cloned::frame_to_js(env, std::mem::take(frame))?,
                undefined,
            ),
            Settlement::Posted(thread) => (
                RESULT_POSTED,
                to_js(env, &Value::Number(f64::from(*thread)))?,
                undefined,
            ),
            Settlement::Ran(r) => {
                let ms = |d: std::time::Duration| Value::Number(d.as_secs_f64() * 1e3);
                let times =
                    Value::Array(vec![Value::Number(r.thread as f64), ms(r.wait), ms(r.run)]);
                (RAN, to_js(env, &times)?, undefined)
            }
            Settlement::Error(e) => {
                let message = to_js(env, &Value::String(e.message.clone()))?;
                let data = match &e.data {
                    Some(d) => to_js(env, d)?,
                    None => undefined,
                };
                (e.code.code(), message, data)
            }
        })
    }
}

/// Counts the values in `v` when JSON text carries it unchanged (finite numbers other than -0,
/// no views, bytes or BigInts, nesting under JSON_MAX_DEPTH levels); `0` when JSON cannot
/// carry it. JavaScript counts params by the same rule (see `contract::JSON_MIN_VALUES`).
fn json_size(v: &Value, depth: usize) -> usize {
    match v {
        Value::Null | Value::Bool(_) | Value::String(_) => 1,
        Value::Number(n) => usize::from(n.is_finite() && (*n != 0.0 || n.is_sign_positive())),
        Value::Array(items) if depth < JSON_MAX_DEPTH => {
            let mut n = 1;
            for item in items {
                match json_size(item, depth + 1) {
                    0 => return 0,
                    c => n += c,
                }
            }
            n
        }
        Value::Object(map) if depth < JSON_MAX_DEPTH => {
            let mut n = 1;
            for (_, item) in map.iter() {
                match json_size(item, depth + 1) {
                    0 => return 0,
                    c => n += c,
                }
            }
            n
        }
        _ => 0,
    }
}
