//! JavaScript → [`Value`]: params of calls, results of JavaScript handlers.
//!
//! What crosses: JSON values; typed arrays over a SharedArrayBuffer as [`SharedView`](crate::shm::SharedView)s (by
//! reference: the views met are collected in [`FromJs::views`], and the call keeps those very
//! objects referenced until it settles, which keeps the memory alive); Uint8Arrays/Buffers over
//! ordinary memory and BigInts by value. Everything else (functions, symbols, Dates, class
//! instances, Maps, objects with a `toJSON` method, non-shared typed arrays other than
//! Uint8Array, cycles) is refused with an InvalidParams error that names the value's place and
//! type, instead of being silently changed the way `JSON.stringify` would change it.
//!
//! A conversion may collect functions instead (`FromJs::collect_functions`, for `pool.render`'s
//! Mustache lambdas): each function becomes a [`Value::Function`] numbered by its place in
//! [`Collected::functions`], and every array and object converted is listed in
//! [`Collected::objects`], depth first and in order (`render` finds a function's `this` there
//! by that order, see `render/functions/pending.rs`). A function with properties of
//! its own beyond a function's built-ins is refused: the renderer could not see them. Such a
//! conversion (a render's) takes an object with a `toJSON` method as any other: no JSON is made
//! of a render's view, and mustache.js ignores the method.
//!
//! Hostile values get the same treatment as any other: a getter or a Proxy trap that throws
//! ends the conversion with an error saying where and what was thrown (the exception is
//! cleared); a Proxy of an array is an array, as `Array.isArray` and JSON say; an array's
//! `length` is never trusted to size an allocation: every value converted counts against
//! [`MAX_VALUES`], an array longer than what is left is refused before a single element is
//! read, and memory grows with what was actually converted, fallibly.
//!
//! - `mod.rs` (this file): the conversion's state, its budget, scalars, cycles and functions.
//! - `objects.rs`: objects: plain ones entry by entry, and what is refused (instances, Dates,
//!   `toJSON`, String objects), seeing through proxies.
//! - `arrays.rs`: arrays (and proxies of arrays) element by element, and typed arrays.
//! - `known.rs`: the built-ins a conversion looks things up with, cached per environment.

use super::{napi_try, place, string, Converted};
use crate::rpc::bigint::BigInt;
use crate::rpc::{FunctionId, RpcError, Value};
use napi::sys;
use std::ptr;

/// `napi_try!` for conversions: the message starts with the place in the value (`path`). The one
/// way every Node-API call of a conversion is checked, in this module and its children.
macro_rules! at_try {
    ($env:expr, $path:expr, $e:expr, $what:expr) => {
        // SAFETY: the caller of the enclosing unsafe fn guarantees a live env on its JS thread
        // and napi_values from that env; every out-pointer passed is a live local.
        let status = unsafe { $e };
        if status != napi::sys::Status::napi_ok {
            // SAFETY: a live env on its JS thread, as for the call just made.
            let why = unsafe { $crate::bindings::convert::failure($env, status, $what) };
            return Err(format!(
                "{}: {why}",
                $crate::bindings::convert::place($path)
            ));
        }
    };
}

mod arrays;
mod known;
mod objects;

pub use arrays::shared_view_of;

/// Why a function in params is refused, wherever it is found (value by value, or packed).
pub(crate) const FUNCTIONS_ONLY_RENDER: &str = "functions (such as Mustache lambdas) cannot be \
     sent in a call, except in pool.render's view on a pool with native threads; compute the \
     value first";
use arrays::ArrayKind;
pub(crate) use arrays::{typed_array, view_for_call};
use known::KNOWN;

/// The names of `v`'s own properties that `filter` selects, symbols left out, numbers as
/// strings: an array of strings, and its length. `noun` names them in a failure's message
/// ("listing its keys").
///
/// # Safety
/// A live `env` on its JS thread, and `v` an object of it.
unsafe fn own_names(
    env: sys::napi_env,
    v: sys::napi_value,
    filter: sys::napi_key_filter,
    path: &str,
    noun: &str,
) -> Converted<(sys::napi_value, u32)> {
    let mut keys = ptr::null_mut();
    at_try!(
        env,
        path,
        sys::napi_get_all_property_names(
            env,
            v,
            sys::KeyCollectionMode::own_only,
            filter | sys::KeyFilter::skip_symbols,
            sys::KeyConversion::numbers_to_strings,
            &mut keys,
        ),
        &format!("listing its {noun}")
    );
    let mut len = 0u32;
    at_try!(
        env,
        path,
        sys::napi_get_array_length(env, keys, &mut len),
        &format!("counting its {noun}")
    );
    Ok((keys, len))
}

/// Name `i` of `keys` (from [`own_names`]): the key itself and its text. `what` says what a
/// failure was doing ("reading a key").
///
/// # Safety
/// A live `env` on its JS thread, `keys` an array [`own_names`] made on it, `i` below its length.
unsafe fn name_at(
    env: sys::napi_env,
    keys: sys::napi_value,
    i: u32,
    path: &str,
    what: &str,
) -> Converted<(sys::napi_value, String)> {
    let mut key = ptr::null_mut();
    at_try!(
        env,
        path,
        sys::napi_get_element(env, keys, i, &mut key),
        what
    );
    // SAFETY: key is a string of this env (own_names leaves symbols out and turns numbers to
    // strings).
    let name = unsafe { string(env, key) }?;
    Ok((key, name))
}

/// Values nest at most this deep (cycles are found sooner, see [`CYCLE_WATCH_DEPTH`]).
pub const MAX_DEPTH: usize = crate::rpc::value::MAX_NESTING;

/// The most values one conversion makes (every array element, object entry and scalar counts
/// one), and the most the params of one call may hold on the JSON-text path too (see
/// `contract::Contract::max_values`). Bulk data belongs in a SharedArrayBuffer.
pub const MAX_VALUES: usize = 1 << 22;

/// From this depth on, an object is compared with the ones it is inside to find cycles (data
/// nested less deeply pays no comparison for it).
const CYCLE_WATCH_DEPTH: usize = 32;

/// Room reserved up front for an array or object: more is reserved as its content arrives.
const FIRST_RESERVE: usize = 64;

/// An object being converted, and the length of its place's path (see `FromJs::ancestors`).
struct Ancestor {
    value: sys::napi_value,
    path_len: usize,
}

/// Converts JS → Value for one env.
pub struct FromJs {
    env: sys::napi_env,
    /// What the conversion looks things up with, taken from [`CACHE`] on first use.
    known: [sys::napi_value; KNOWN],
    /// Values this conversion may still make (see [`MAX_VALUES`]).
    budget: usize,
    /// The objects being converted, outermost first: `ancestors[d]` is the one at depth `d`,
    /// with the length its path had then (a cycle's error names where it first closed).
    ancestors: Vec<Ancestor>,
    /// Every typed array over a SharedArrayBuffer met, in conversion order: the call keeps these
    /// objects alive until it settles, and a call of a JavaScript-served method sends them to
    /// the serving thread.
    pub views: Vec<sys::napi_value>,
    /// Functions and objects met, when the conversion collects functions.
    pub collected: Option<Collected>,
    /// `undefined` inside the value (an item, a hole, a field) is refused instead of becoming
    /// null: a JavaScript handler's result for a JavaScript caller then crosses as structured
    /// clone, which keeps it (`NativeServer::complete`).
    pub refuse_undefined: bool,
}

/// The functions a conversion met (by their [`FunctionId`], from `first_function`) and the
/// arrays and objects it converted (depth first, in order, numbered from `first_object`).
pub struct Collected {
    pub functions: Vec<sys::napi_value>,
    pub objects: Vec<sys::napi_value>,
    pub first_function: u32,
    pub first_object: u32,
}

/// The own properties a function may have that no render can reach except by a built-in name
/// (`render/js.rs` refuses those names on functions).
const FUNCTION_OWN: &[&str] = &["length", "name", "prototype", "arguments", "caller"];

impl FromJs {
    pub fn new(env: sys::napi_env) -> Self {
        FromJs {
            env,
            known: [ptr::null_mut(); KNOWN],
            budget: MAX_VALUES,
            ancestors: Vec::new(),
            views: Vec::new(),
            collected: None,
            refuse_undefined: false,
        }
    }

    /// From now on, functions become [`Value::Function`]s numbered from `first_function`, and
    /// the arrays and objects converted are listed, numbered from `first_object`.
    pub fn collect_functions(&mut self, first_function: u32, first_object: u32) {
        self.collected = Some(Collected {
            functions: Vec::new(),
            objects: Vec::new(),
            first_function,
            first_object,
        });
    }

    /// How many values this conversion has made so far.
    pub fn spent(&self) -> usize {
        MAX_VALUES - self.budget
    }

    pub fn env(&self) -> sys::napi_env {
        self.env
    }

    /// Converts every element of a JS array (the params of a call); any other value is the
    /// one param.
    ///
    /// # Safety
    /// Must run on the env's JS thread, with `array` a value of that env.
    pub unsafe fn params(&mut self, array: sys::napi_value) -> Result<Vec<Value>, RpcError> {
        let mut path = String::from("params");
        let mut is_array = false;
        // SAFETY: caller contract; a failure leaves `is_array` false (converted as one value).
        unsafe { sys::napi_is_array(self.env, array, &mut is_array) };
        // The params array is the call's own container, not a value sent (lib/pool.js builds it
        // for exec()): it is not asked for a toJSON.
        let value = if is_array {
            // SAFETY: caller contract; `array` is an array.
            unsafe { self.array(array, ArrayKind::Plain, 0, &mut path, false) }
        } else {
            // SAFETY: caller contract.
            unsafe { self.value(array, 0, &mut path) }
        }
        .map_err(RpcError::invalid_params)?;
        Ok(match value {
            Value::Array(items) => items,
            one => vec![one],
        })
    }

    /// The params of a call that has the one param `value` (an item of `map`).
    ///
    /// # Safety
    /// Must run on the env's JS thread, with `value` a value of that env.
    pub unsafe fn params_of_one(&mut self, value: sys::napi_value) -> Result<Vec<Value>, RpcError> {
        let mut path = String::from("item");
        // SAFETY: caller contract.
        let value = unsafe { self.value(value, 0, &mut path) }.map_err(RpcError::invalid_params)?;
        Ok(vec![value])
    }

    /// Converts one JS value. `path` names its place for error messages.
    ///
    /// # Safety
    /// Must run on the env's JS thread, with `v` a value of that env.
    pub unsafe fn value(
        &mut self,
        v: sys::napi_value,
        depth: usize,
        path: &mut String,
    ) -> Converted<Value> {
        let env = self.env;
        self.spend(1, path)?;
        // SAFETY: caller contract.
        match unsafe { type_of(env, v, path, "reading a type") }? {
            sys::ValueType::napi_undefined if self.refuse_undefined && depth > 0 => Err(format!(
                "{} is undefined, which JSON cannot carry",
                place(path)
            )),
            sys::ValueType::napi_undefined | sys::ValueType::napi_null => Ok(Value::Null),
            sys::ValueType::napi_boolean => {
                let mut b = false;
                at_try!(
                    env,
                    path,
                    sys::napi_get_value_bool(env, v, &mut b),
                    "reading a boolean"
                );
                Ok(Value::Bool(b))
            }
            sys::ValueType::napi_number => {
                let mut n = 0.0;
                at_try!(
                    env,
                    path,
                    sys::napi_get_value_double(env, v, &mut n),
                    "reading a number"
                );
                Ok(Value::Number(n))
            }
            // SAFETY: v is a string of this env.
            sys::ValueType::napi_string => unsafe { string(env, v) }.map(Value::String),
            // SAFETY: v is a bigint of this env.
            sys::ValueType::napi_bigint => unsafe { bigint(env, v) }.map(Value::BigInt),
            // SAFETY: v is a function of this env.
            sys::ValueType::napi_function if self.collected.is_some() => unsafe {
                self.function(v, path)
            },
            sys::ValueType::napi_function => Err(format!(
                "{} is a function: {FUNCTIONS_ONLY_RENDER}",
                place(path)
            )),
            sys::ValueType::napi_symbol => Err(format!(
                "{} is a symbol, which cannot be sent: send a string instead",
                place(path)
            )),
            sys::ValueType::napi_object => {
                if depth >= MAX_DEPTH {
                    return Err(format!(
                        "{} is nested more than {MAX_DEPTH} levels deep",
                        place(path)
                    ));
                }
                if !super::stack::room_left() {
                    return Err(super::stack::too_deep(&place(path), Some(depth)));
                }
                // Deep down, look for a cycle: a cyclic value comes back to an object it holds
                // within one turn of the cycle, so it is refused here and not after MAX_DEPTH
                // levels of converting the same values again (a big string in a cycle would be
                // copied hundreds of times).
                if depth >= CYCLE_WATCH_DEPTH {
                    for above in CYCLE_WATCH_DEPTH..self.ancestors.len() {
                        // SAFETY: v and the ancestors are values of this env.
                        if unsafe { self.same(v, self.ancestors[above].value, path) }? {
                            // SAFETY: v and the ancestors are values of this env (caller contract).
                            return Err(unsafe { self.cycle_error(v, above, path) });
                        }
                    }
                }
                self.ancestors.push(Ancestor {
                    value: v,
                    path_len: path.len(),
                });
                // SAFETY: v is an object of this env.
                let converted = unsafe { self.object(v, depth, path) };
                self.ancestors.pop();
                converted
            }
            _ => Err(format!("{} has a type that cannot be sent", place(path))),
        }
    }

    /// Whether `a` and `b` are the same value (`===`).
    ///
    /// # Safety
    /// As for [`FromJs::value`], with `a` and `b` values of this env.
    unsafe fn same(&self, a: sys::napi_value, b: sys::napi_value, path: &str) -> Converted<bool> {
        let env = self.env;
        let mut same = false;
        at_try!(
            env,
            path,
            sys::napi_strict_equals(env, a, b, &mut same),
            "comparing it"
        );
        Ok(same)
    }

    /// The error for `v`, at `path`, being the ancestor at depth `above`: it names the place
    /// where the cycle first closed, a turn earlier than where it was found if the turns before
    /// repeat the same objects (`params[0].a is cyclic: it is params[0] again`, not the 32 or
    /// more turns it took to find it). Each place is at most [`place`]'s length.
    ///
    /// # Safety
    /// As for [`FromJs::value`], with `v` an object of this env.
    unsafe fn cycle_error(&self, v: sys::napi_value, above: usize, path: &str) -> String {
        let depth = self.ancestors.len();
        let turn = depth - above;
        let at = |d: usize| {
            if d == depth {
                (v, path.len())
            } else {
                (self.ancestors[d].value, self.ancestors[d].path_len)
            }
        };
        // The object at depth `d + turn` is the one at `d` for every d from `first` to `above`:
        // walk back while the turn before repeats too.
        let mut first = above;
        while first > 0 {
            // SAFETY: caller contract; the ancestors are values of this env. A comparison that
            // fails ends the walk (the error names a later turn, still a true one).
            let repeats = unsafe { self.same(at(first - 1).0, at(first - 1 + turn).0, path) };
            if repeats != Ok(true) {
                break;
            }
            first -= 1;
        }
        let again = &path[..at(first + turn).1];
        let first_place = &path[..at(first).1];
        format!(
            "{} is cyclic: it is {} again",
            place(again),
            place(first_place)
        )
    }

    /// A function met while collecting them: kept by the caller, numbered here.
    ///
    /// # Safety
    /// As for [`FromJs::value`], with `v` a function.
    unsafe fn function(&mut self, v: sys::napi_value, path: &str) -> Converted<Value> {
        let env = self.env;
        // SAFETY: v is a function of this env.
        let (keys, len) =
            unsafe { own_names(env, v, sys::KeyFilter::all_properties, path, "properties") }?;
        for i in 0..len {
            // SAFETY: keys came from own_names, on this env.
            let (_, name) = unsafe { name_at(env, keys, i, path, "reading a property name") }?;
            if !FUNCTION_OWN.contains(&name.as_str()) {
                return Err(format!(
                    "{} is a function with a property of its own, {name:?}: a render cannot \
                     see a function's properties (put the value beside the function instead)",
                    place(path)
                ));
            }
        }
        let Some(collected) = &mut self.collected else {
            return Err(format!("{} is a function", place(path)));
        };
        let id = collected.first_function as usize + collected.functions.len();
        let id = u32::try_from(id).map_err(|_| format!("{}: too many functions", place(path)))?;
        collected.functions.push(v);
        Ok(Value::Function(FunctionId(id)))
    }

    /// Takes `n` values from the budget, or says why the value at `path` is too big.
    fn spend(&mut self, n: usize, path: &str) -> Converted<()> {
        match self.budget.checked_sub(n) {
            Some(left) => {
                self.budget = left;
                Ok(())
            }
            None => Err(format!(
                "{} makes the params hold more than {MAX_VALUES} values: pass bulk data in a \
                 SharedArrayBuffer (a typed array crosses by reference)",
                place(path)
            )),
        }
    }
}

/// `typeof v`, as Node-API names it; `what` says what was being done, for the error.
///
/// # Safety
/// On `env`'s JS thread, with `v` a value of `env`.
unsafe fn type_of(
    env: sys::napi_env,
    v: sys::napi_value,
    path: &str,
    what: &str,
) -> Converted<sys::napi_valuetype> {
    let mut t = 0;
    at_try!(env, path, sys::napi_typeof(env, v, &mut t), what);
    Ok(t)
}

/// The prototype of object `v` and its type (`napi_null` at the end of a chain, and for a
/// Proxy, whose trap Node-API does not run).
///
/// # Safety
/// On `env`'s JS thread, with `v` an object of `env`.
unsafe fn prototype_of(
    env: sys::napi_env,
    v: sys::napi_value,
    path: &str,
    what: &str,
) -> Converted<(sys::napi_value, sys::napi_valuetype)> {
    let mut proto = ptr::null_mut();
    at_try!(env, path, sys::napi_get_prototype(env, v, &mut proto), what);
    // SAFETY: `proto` is a value of this env.
    Ok((proto, unsafe { type_of(env, proto, path, what) }?))
}

/// # Safety
/// `v` must be a bigint of the live `env`, on its JS thread.
unsafe fn bigint(env: sys::napi_env, v: sys::napi_value) -> Converted<BigInt> {
    let mut sign = 0i32;
    let mut count = 0usize;
    napi_try!(
        env,
        sys::napi_get_value_bigint_words(env, v, ptr::null_mut(), &mut count, ptr::null_mut()),
        "measuring a BigInt"
    );
    // A BigInt's words are its content (V8 caps a BigInt at 2^30 bits).
    let mut words: Vec<u64> = Vec::new();
    words
        .try_reserve_exact(count)
        .map_err(|_| "no memory to read a BigInt".to_string())?;
    words.resize(count, 0);
    napi_try!(
        env,
        sys::napi_get_value_bigint_words(env, v, &mut sign, &mut count, words.as_mut_ptr()),
        "reading a BigInt"
    );
    words.truncate(count);
    Ok(BigInt {
        negative: sign != 0,
        words,
    })
}

/// The name of `v`'s constructor, when reading it runs no getter that throws (a thrown
/// exception is cleared).
///
/// # Safety
/// `v` must be an object of the live `env`, on its JS thread.
unsafe fn constructor_name(env: sys::napi_env, v: sys::napi_value) -> Option<String> {
    let mut ctor = ptr::null_mut();
    let mut name = ptr::null_mut();
    // SAFETY: live env, v an object (caller contract).
    unsafe {
        if sys::napi_get_named_property(env, v, c"constructor".as_ptr(), &mut ctor)
            != sys::Status::napi_ok
        {
            super::take_exception_quietly(env);
            return None;
        }
        let mut t = 0;
        sys::napi_typeof(env, ctor, &mut t);
        if t != sys::ValueType::napi_function && t != sys::ValueType::napi_object {
            return None;
        }
        if sys::napi_get_named_property(env, ctor, c"name".as_ptr(), &mut name)
            != sys::Status::napi_ok
        {
            super::take_exception_quietly(env);
            return None;
        }
        sys::napi_typeof(env, name, &mut t);
        if t != sys::ValueType::napi_string {
            return None;
        }
        string(env, name).ok().filter(|s| !s.is_empty())
    }
}
