//! JavaScript → [`Value`]: params of calls, results of JavaScript handlers.
//!
//! What crosses: JSON values; typed arrays over a SharedArrayBuffer as [`SharedView`]s (by
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
//! its own beyond a function's built-ins is refused: the renderer could not see them.
//!
//! Hostile values get the same treatment as any other: a getter or a Proxy trap that throws
//! ends the conversion with an error saying where and what was thrown (the exception is
//! cleared); a Proxy of an array is an array, as `Array.isArray` and JSON say; an array's
//! `length` is never trusted to size an allocation: every value converted counts against
//! [`MAX_VALUES`], an array longer than what is left is refused before a single element is
//! read, and memory grows with what was actually converted, fallibly.

use super::{napi_try, place, string, Converted};
use crate::rpc::bigint::BigInt;
use crate::rpc::{FunctionId, Map, RpcError, Value};
use crate::shm::{ElementKind, SharedView};
use napi::sys;
use std::ptr;

/// `napi_try!` for conversions: the message starts with the place in the value (`path`).
macro_rules! at_try {
    ($env:expr, $path:expr, $e:expr, $what:expr) => {
        // SAFETY: the caller of the enclosing unsafe fn guarantees a live env on its JS thread
        // and napi_values from that env; every out-pointer passed is a live local.
        let status = unsafe { $e };
        if status != sys::Status::napi_ok {
            // SAFETY: as above.
            let why = unsafe { super::failure($env, status, $what) };
            return Err(format!("{}: {why}", place($path)));
        }
    };
}

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
    // SAFETY: key is a string of this env (own_names leaves symbols out and turns numbers to strings).
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

/// The values a conversion looks things up with, by index into `FromJs::known`.
const OBJECT_PROTOTYPE: usize = 0;
const TO_JSON: usize = 1;
const IS_ARRAY: usize = 2;
const GET_PROTOTYPE_OF: usize = 3;
const LENGTH: usize = 4;
const STRING_VALUE_OF: usize = 5;
const KNOWN: usize = 6;

thread_local! {
    /// This thread's environment and references to what its conversions look things up with,
    /// made on first use: the `Object.prototype` met first (then recognised with one
    /// comparison), the keys `"toJSON"` and `"length"`, and `Array.isArray`,
    /// `Object.getPrototypeOf` and `String.prototype.valueOf` (taken from the global object
    /// then: a program that replaces them later changes nothing here).
    static CACHE: std::cell::Cell<(sys::napi_env, [sys::napi_ref; KNOWN])> =
        const { std::cell::Cell::new((ptr::null_mut(), [ptr::null_mut(); KNOWN])) };
}

/// What an object is for crossing: see [`FromJs::through_proxy`].
enum Shape {
    Plain,
    Array,
    Instance,
}

/// Where an array's elements come from: a real array, or a Proxy whose target is one.
#[derive(Clone, Copy)]
enum ArrayKind {
    Plain,
    Proxy,
}

impl FromJs {
    pub fn new(env: sys::napi_env) -> Self {
        FromJs {
            env,
            known: [ptr::null_mut(); KNOWN],
            budget: MAX_VALUES,
            ancestors: Vec::new(),
            views: Vec::new(),
            collected: None,
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
        // The params array is the call's own container, not a value sent (index.js builds it
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
                "{} is a function: functions (such as Mustache lambdas) cannot be sent in a \
                 call, except in pool.render's view on a pool with native threads; compute the \
                 value first",
                place(path)
            )),
            sys::ValueType::napi_symbol => {
                Err(format!("{} is a symbol, which cannot be sent", place(path)))
            }
            sys::ValueType::napi_object => {
                if depth >= MAX_DEPTH {
                    return Err(format!(
                        "{} is nested more than {MAX_DEPTH} levels deep",
                        place(path)
                    ));
                }
                // Deep down, look for a cycle: a cyclic value comes back to an object it holds
                // within one turn of the cycle, so it is refused here and not after MAX_DEPTH
                // levels of converting the same values again (a big string in a cycle would be
                // copied hundreds of times).
                if depth >= CYCLE_WATCH_DEPTH {
                    for above in CYCLE_WATCH_DEPTH..self.ancestors.len() {
                        // SAFETY: v and the ancestors are values of this env.
                        if unsafe { self.same(v, self.ancestors[above].value, path) }? {
                            // SAFETY: as above.
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

    /// # Safety
    /// As for [`FromJs::value`], with `v` an object.
    unsafe fn object(
        &mut self,
        v: sys::napi_value,
        depth: usize,
        path: &mut String,
    ) -> Converted<Value> {
        let env = self.env;
        let mut flag = false;
        at_try!(
            env,
            path,
            sys::napi_is_array(env, v, &mut flag),
            "checking for an array"
        );
        if flag {
            // SAFETY: v is an array of this env.
            return unsafe { self.array(v, ArrayKind::Plain, depth, path, true) };
        }
        // Most objects sent are plain: their prototype is looked at first, and then only a typed
        // array (whose index keys must never be listed one by one) is told apart. An ArrayBuffer,
        // DataView or Date given Object.prototype crosses as its own enumerable keys (`{}`), as
        // JSON.stringify sends it.
        // SAFETY: caller contract; `v` is an object.
        let (proto, proto_type) = unsafe { prototype_of(env, v, path, "reading its prototype") }?;
        // SAFETY: proto is a value of this env.
        let plain = proto_type != sys::ValueType::napi_null
            && unsafe { self.is_object_prototype(proto, path) }?;
        at_try!(
            env,
            path,
            sys::napi_is_typedarray(env, v, &mut flag),
            "checking for a typed array"
        );
        if flag {
            // SAFETY: v is a typed array of this env.
            let value = unsafe { typed_array(env, v, path) }?;
            if let Value::View(_) = value {
                self.views.push(v);
            }
            return Ok(value);
        }
        let kind = if plain {
            Shape::Plain
        } else {
            // SAFETY: v is an object of this env.
            unsafe { self.unusual(v, proto_type, path) }?
        };
        match kind {
            Shape::Plain => {}
            // SAFETY: v is an object of this env whose target is an array.
            Shape::Array => return unsafe { self.array(v, ArrayKind::Proxy, depth, path, true) },
            Shape::Instance => {
                // SAFETY: v is an object of this env.
                let name =
                    unsafe { constructor_name(env, v) }.unwrap_or_else(|| "an object".into());
                return Err(format!(
                    "{} is an instance of {name}: only plain objects, arrays, numbers, strings, \
                     booleans, null, BigInts, Uint8Arrays and typed arrays over \
                     SharedArrayBuffers can be sent (copy the fields you need into a plain object)",
                    place(path)
                ));
            }
        }
        // SAFETY: v is an object of this env.
        unsafe { self.refuse_to_json(v, path) }?;
        if plain {
            // Not a Proxy (Node-API shows none a prototype), so no trap runs here.
            // SAFETY: v is an object of this env.
            unsafe { self.refuse_string_object(v, path) }?;
        }
        if let Some(collected) = &mut self.collected {
            collected.objects.push(v);
        }
        // SAFETY: v is an object of this env.
        let (keys, len) = unsafe { own_names(env, v, sys::KeyFilter::enumerable, path, "keys") }?;
        // Every entry is at least one value: an object with more keys than the budget has left
        // is refused before any is read.
        if len as usize > self.budget {
            return Err(format!(
                "{} has {len} keys: more than the {MAX_VALUES} values params may hold",
                place(path)
            ));
        }
        let mut map = Map::with_capacity((len as usize).min(FIRST_RESERVE));
        let mut lossy = false;
        for i in 0..len {
            // SAFETY: keys came from own_names, on this env.
            let (key, name) = unsafe { name_at(env, keys, i, path, "reading a key") }?;
            let mark = path.len();
            path.push('.');
            path.push_str(&name);
            let mut item = ptr::null_mut();
            at_try!(
                env,
                path,
                sys::napi_get_property(env, v, key, &mut item),
                "reading it"
            );
            // SAFETY: item is a value of this env.
            let value = unsafe { self.value(item, depth + 1, path) }?;
            path.truncate(mark);
            // Own enumerable keys are unique, and stay so as UTF-8, but for lone surrogates,
            // which become U+FFFD: `{"\ud800": 1, "\udc00": 2}` is one key here.
            lossy |= name.contains('\u{FFFD}');
            map.push_unique(name, value);
        }
        if lossy {
            // As in JavaScript, such a key keeps its first place and takes the last value.
            map = map.into_unique();
        }
        Ok(Value::Object(map))
    }

    /// What an object that is neither an array, a typed array nor a plain object with
    /// `Object.prototype` is: an error for an ArrayBuffer, a DataView or a Date (with the way
    /// to send it); else, for a null prototype (a plain object, or a Proxy: Node-API shows none
    /// for one, and its trap does not run), what JavaScript sees through it; else an instance.
    ///
    /// # Safety
    /// As for [`FromJs::value`], with `v` an object whose prototype has type `proto_type`.
    unsafe fn unusual(
        &mut self,
        v: sys::napi_value,
        proto_type: sys::napi_valuetype,
        path: &str,
    ) -> Converted<Shape> {
        let env = self.env;
        let mut flag = false;
        at_try!(
            env,
            path,
            sys::napi_is_arraybuffer(env, v, &mut flag),
            "checking for an ArrayBuffer"
        );
        if flag {
            return Err(format!(
                "{} is an ArrayBuffer: pass a typed-array view (e.g. a Uint8Array) instead",
                place(path)
            ));
        }
        at_try!(
            env,
            path,
            sys::napi_is_dataview(env, v, &mut flag),
            "checking for a DataView"
        );
        if flag {
            return Err(format!(
                "{} is a DataView: pass a typed array instead",
                place(path)
            ));
        }
        at_try!(
            env,
            path,
            sys::napi_is_date(env, v, &mut flag),
            "checking for a Date"
        );
        if flag {
            return Err(format!(
                "{} is a Date, which JSON would turn into a string: pass date.toISOString() \
                 (or render with mustache.js on the main thread)",
                place(path)
            ));
        }
        // Only plain objects: a class instance may compute fields in getters on its prototype,
        // which JSON.stringify would silently drop.
        if proto_type == sys::ValueType::napi_null {
            // A null-prototype object, or a Proxy: ask JavaScript, whose Array.isArray and
            // Object.getPrototypeOf see through proxies.
            // SAFETY: v is an object of this env.
            unsafe { self.through_proxy(v, path) }
        } else {
            Ok(Shape::Instance)
        }
    }

    /// The elements of `v` (an array, or a Proxy whose target is an array), holes as `null`.
    ///
    /// # Safety
    /// As for [`FromJs::value`], with `v` an object of the given kind.
    unsafe fn array(
        &mut self,
        v: sys::napi_value,
        kind: ArrayKind,
        depth: usize,
        path: &mut String,
        to_json_matters: bool,
    ) -> Converted<Value> {
        let env = self.env;
        if to_json_matters {
            // SAFETY: v is an object of this env.
            unsafe { self.refuse_to_json(v, path) }?;
            // (Not the params container: a value sent, not one of the call's own.)
            if let Some(collected) = &mut self.collected {
                collected.objects.push(v);
            }
        }
        let len: usize = match kind {
            ArrayKind::Plain => {
                let mut len = 0u32;
                at_try!(
                    env,
                    path,
                    sys::napi_get_array_length(env, v, &mut len),
                    "reading its length"
                );
                len as usize
            }
            ArrayKind::Proxy => {
                // JSON's LengthOfArrayLike, for a length that is a number.
                let mut length = ptr::null_mut();
                at_try!(
                    env,
                    path,
                    sys::napi_get_named_property(env, v, c"length".as_ptr(), &mut length),
                    "reading its length"
                );
                let mut n = f64::NAN;
                // SAFETY: live env on its JS thread (caller contract); `length` is a value of
                // it; a non-number answers napi_number_expected.
                let read = unsafe { sys::napi_get_value_double(env, length, &mut n) };
                if read != sys::Status::napi_ok {
                    return Err(format!(
                        "{} is a Proxy of an array whose length is not a number",
                        place(path)
                    ));
                }
                if n.is_nan() || n <= 0.0 {
                    0
                } else {
                    n.min(usize::MAX as f64) as usize
                }
            }
        };
        if len > self.budget {
            return Err(format!(
                "{} is an array of {len} elements: more than the {MAX_VALUES} values params may \
                 hold (pass bulk data in a SharedArrayBuffer: a typed array crosses by reference)",
                place(path)
            ));
        }
        let mut items: Vec<Value> = Vec::new();
        items
            .try_reserve_exact(len.min(FIRST_RESERVE))
            .map_err(|_| format!("{}: out of memory", place(path)))?;
        let mark = path.len();
        for i in 0..len {
            let mut item = ptr::null_mut();
            path.truncate(mark);
            path.push('[');
            path.push_str(itoa(i, &mut [0; 20]));
            path.push(']');
            // `len` fits in u32 for a real array; a Proxy's elements are read by name.
            at_try!(
                env,
                path,
                match kind {
                    ArrayKind::Plain => sys::napi_get_element(env, v, i as u32, &mut item),
                    ArrayKind::Proxy => {
                        let mut index = ptr::null_mut();
                        let status = sys::napi_create_double(env, i as f64, &mut index);
                        if status == sys::Status::napi_ok {
                            sys::napi_get_property(env, v, index, &mut item)
                        } else {
                            status
                        }
                    }
                },
                "reading it"
            );
            // SAFETY: item is a value of this env.
            let value = unsafe { self.value(item, depth + 1, path) }?;
            items
                .try_reserve(1)
                .map_err(|_| format!("{}: out of memory", place(path)))?;
            items.push(value);
        }
        path.truncate(mark);
        Ok(Value::Array(items))
    }

    /// `Err` when `v` has a `toJSON` method of its own: JSON.stringify would send what it
    /// returns, and a call must not mean one thing as JSON text and another value by value.
    /// The method is looked up as JSON.stringify looks it up (a getter or a Proxy's `get` trap
    /// runs, and may throw); an inherited one is left alone: a program that puts `toJSON` on
    /// `Object.prototype` or `Array.prototype` would otherwise have every call refused.
    /// (JavaScript sends a value with any `toJSON` value by value, never as JSON text, see
    /// lib/params.js, so both paths agree.)
    ///
    /// # Safety
    /// As for [`FromJs::value`], with `v` an object.
    unsafe fn refuse_to_json(&mut self, v: sys::napi_value, path: &str) -> Converted<()> {
        let env = self.env;
        // SAFETY: caller contract.
        let key = unsafe { self.known(TO_JSON, path) }?;
        let mut f = ptr::null_mut();
        at_try!(
            env,
            path,
            sys::napi_get_property(env, v, key, &mut f),
            "reading its toJSON"
        );
        // SAFETY: `f` is a value of this env.
        if unsafe { type_of(env, f, path, "reading its toJSON") }? != sys::ValueType::napi_function
        {
            return Ok(());
        }
        let mut own = false;
        at_try!(
            env,
            path,
            sys::napi_has_own_property(env, v, key, &mut own),
            "looking for its toJSON"
        );
        if own {
            return Err(format!(
                "{} has a toJSON method, which JSON would call: send the value it returns instead",
                place(path)
            ));
        }
        Ok(())
    }

    /// Refuses a String object that passes for a plain object (its prototype replaced by an
    /// `Object.prototype`, of this realm or another): it has an own key per
    /// character, which listing would make one by one before any budget could refuse them. It
    /// is told by its own `length` and then by `String.prototype.valueOf`, which only a String
    /// object does not make throw (a `Symbol.toStringTag` cannot fake it).
    ///
    /// # Safety
    /// As for [`FromJs::value`], with `v` an object.
    unsafe fn refuse_string_object(&mut self, v: sys::napi_value, path: &str) -> Converted<()> {
        let env = self.env;
        // SAFETY: caller contract.
        let key = unsafe { self.known(LENGTH, path) }?;
        let mut own = false;
        at_try!(
            env,
            path,
            sys::napi_has_own_property(env, v, key, &mut own),
            "looking for its length"
        );
        if !own {
            return Ok(());
        }
        // SAFETY: caller contract.
        let value_of = unsafe { self.known(STRING_VALUE_OF, path) }?;
        let mut text = ptr::null_mut();
        // SAFETY: live env on its JS thread; `v` and `value_of` are values of it, and no
        // argument is passed.
        let status =
            unsafe { sys::napi_call_function(env, v, value_of, 0, ptr::null(), &mut text) };
        if status != sys::Status::napi_ok {
            // SAFETY: caller contract. It threw: not a String object.
            unsafe { super::take_exception_quietly(env) };
            return Ok(());
        }
        Err(format!(
            "{} is a String object whose prototype was replaced, which would cross as a key per \
             character: pass its text (String(value)) instead",
            place(path)
        ))
    }

    /// What a null-prototype object is once proxies are seen through: a Proxy of an array, a
    /// plain object (null prototype or `Object.prototype`), or an instance of something else
    /// (a Proxy of a Map, a class instance…), as `Array.isArray` and `Object.getPrototypeOf`
    /// say (their traps run here, and may throw).
    ///
    /// # Safety
    /// As for [`FromJs::value`], with `v` an object.
    unsafe fn through_proxy(&mut self, v: sys::napi_value, path: &str) -> Converted<Shape> {
        let env = self.env;
        let mut undefined = ptr::null_mut();
        at_try!(
            env,
            path,
            sys::napi_get_undefined(env, &mut undefined),
            "checking its kind"
        );
        // SAFETY: caller contract.
        let is_array = unsafe { self.known(IS_ARRAY, path) }?;
        let mut answer = ptr::null_mut();
        at_try!(
            env,
            path,
            sys::napi_call_function(env, undefined, is_array, 1, &v, &mut answer),
            "checking for an array"
        );
        let mut yes = false;
        // SAFETY: `answer` is a value of this env; a non-boolean leaves `yes` false.
        unsafe { sys::napi_get_value_bool(env, answer, &mut yes) };
        if yes {
            return Ok(Shape::Array);
        }
        // SAFETY: caller contract.
        let get_prototype_of = unsafe { self.known(GET_PROTOTYPE_OF, path) }?;
        let mut proto = ptr::null_mut();
        at_try!(
            env,
            path,
            sys::napi_call_function(env, undefined, get_prototype_of, 1, &v, &mut proto),
            "reading its prototype"
        );
        // SAFETY: `proto` is a value of this env.
        let t = unsafe { type_of(env, proto, path, "reading its prototype") }?;
        // SAFETY: `proto` is a value of this env.
        Ok(
            if t == sys::ValueType::napi_null || unsafe { self.is_object_prototype(proto, path) }? {
                Shape::Plain
            } else {
                Shape::Instance
            },
        )
    }

    /// `known[which]`, from the environment's cache, made on first use.
    ///
    /// # Safety
    /// As for [`FromJs::value`].
    unsafe fn known(&mut self, which: usize, path: &str) -> Converted<sys::napi_value> {
        let env = self.env;
        if !self.known[which].is_null() {
            return Ok(self.known[which]);
        }
        let (cached_env, refs) = CACHE.with(|c| c.get());
        if cached_env == env && !refs[which].is_null() {
            // SAFETY: references made in this env (checked) on this thread (a thread-local),
            // alive as long as the env. On failure the value is looked up again below.
            unsafe { sys::napi_get_reference_value(env, refs[which], &mut self.known[which]) };
            if !self.known[which].is_null() {
                return Ok(self.known[which]);
            }
        }
        let mut value = ptr::null_mut();
        match which {
            TO_JSON | LENGTH => {
                let key = if which == TO_JSON {
                    c"toJSON"
                } else {
                    c"length"
                };
                at_try!(
                    env,
                    path,
                    sys::napi_create_string_utf8(
                        env,
                        key.as_ptr(),
                        key.count_bytes() as isize,
                        &mut value
                    ),
                    "making a key"
                );
            }
            IS_ARRAY | GET_PROTOTYPE_OF | STRING_VALUE_OF => {
                let names: &[&std::ffi::CStr] = match which {
                    IS_ARRAY => &[c"Array", c"isArray"],
                    GET_PROTOTYPE_OF => &[c"Object", c"getPrototypeOf"],
                    _ => &[c"String", c"prototype", c"valueOf"],
                };
                at_try!(
                    env,
                    path,
                    sys::napi_get_global(env, &mut value),
                    "finding a builtin"
                );
                for name in names {
                    let holder = value;
                    at_try!(
                        env,
                        path,
                        sys::napi_get_named_property(env, holder, name.as_ptr(), &mut value),
                        "finding a builtin"
                    );
                }
            }
            // Object.prototype is recognised by `is_object_prototype` and remembered there.
            _ => return Ok(ptr::null_mut()),
        }
        // SAFETY: as for this function; `value` is a value of this env.
        unsafe { self.remember(which, value) };
        Ok(value)
    }

    /// Keeps `value` as `known[which]` for this conversion and, by reference, for the
    /// environment's later ones.
    ///
    /// # Safety
    /// As for [`FromJs::value`], with `value` a value of this env.
    unsafe fn remember(&mut self, which: usize, value: sys::napi_value) {
        let env = self.env;
        self.known[which] = value;
        let (cached_env, mut refs) = CACHE.with(|c| c.get());
        if cached_env != env {
            // Another environment used this thread before (Node runs one at a time per thread):
            // its references died with it.
            refs = [ptr::null_mut(); KNOWN];
        }
        if !refs[which].is_null() {
            return;
        }
        let mut reference = ptr::null_mut();
        // SAFETY: live env on its JS thread (caller contract); `value` belongs to it. The
        // reference lives until the env is torn down (Node frees it then).
        if unsafe { sys::napi_create_reference(env, value, 1, &mut reference) }
            == sys::Status::napi_ok
        {
            refs[which] = reference;
            CACHE.with(|c| c.set((env, refs)));
        }
    }

    /// True when `proto` is an `Object.prototype`: of this realm or another one (a `vm`
    /// context, a test runner's sandbox), recognised by having no prototype itself and a
    /// `constructor` named "Object".
    ///
    /// # Safety
    /// As for [`FromJs::value`].
    unsafe fn is_object_prototype(
        &mut self,
        proto: sys::napi_value,
        path: &str,
    ) -> Converted<bool> {
        let env = self.env;
        if self.known[OBJECT_PROTOTYPE].is_null() {
            let (cached_env, refs) = CACHE.with(|c| c.get());
            if cached_env == env && !refs[OBJECT_PROTOTYPE].is_null() {
                // SAFETY: as in `known`. On failure the slow check below runs.
                unsafe {
                    sys::napi_get_reference_value(
                        env,
                        refs[OBJECT_PROTOTYPE],
                        &mut self.known[OBJECT_PROTOTYPE],
                    )
                };
            }
        }
        if !self.known[OBJECT_PROTOTYPE].is_null() {
            let mut same = false;
            at_try!(
                env,
                path,
                sys::napi_strict_equals(env, proto, self.known[OBJECT_PROTOTYPE], &mut same),
                "comparing prototypes"
            );
            if same {
                return Ok(true);
            }
        }
        // SAFETY: `proto` is an object of this env.
        let (_, t) = unsafe { prototype_of(env, proto, path, "reading a prototype") }?;
        if t != sys::ValueType::napi_null {
            return Ok(false);
        }
        // SAFETY: proto is an object of this env.
        let plain = unsafe { constructor_name(env, proto) }.is_some_and(|n| n == "Object");
        if plain && self.known[OBJECT_PROTOTYPE].is_null() {
            // SAFETY: as for this function; `proto` is a value of this env.
            unsafe { self.remember(OBJECT_PROTOTYPE, proto) };
        }
        Ok(plain)
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

/// The decimal digits of `n`, written into `buf` (for error paths, without an allocation).
fn itoa(mut n: usize, buf: &mut [u8; 20]) -> &str {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    std::str::from_utf8(&buf[at..]).unwrap_or("?")
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

/// A typed array as a call param: a [`SharedView`] over a SharedArrayBuffer, a copy of a
/// Uint8Array over ordinary memory, or an error naming `path`.
///
/// # Safety
/// `v` must be a typed array of the live `env`, on its JS thread.
pub(crate) unsafe fn typed_array(
    env: sys::napi_env,
    v: sys::napi_value,
    path: &str,
) -> Converted<Value> {
    let mut kind = 0;
    let mut length = 0usize;
    let mut data: *mut std::ffi::c_void = ptr::null_mut();
    let mut buffer = ptr::null_mut();
    let mut offset = 0usize;
    napi_try!(
        env,
        sys::napi_get_typedarray_info(
            env,
            v,
            &mut kind,
            &mut length,
            &mut data,
            &mut buffer,
            &mut offset
        ),
        "reading a typed array"
    );
    let kind = match kind {
        sys::TypedarrayType::int8_array => ElementKind::Int8,
        sys::TypedarrayType::uint8_array => ElementKind::Uint8,
        sys::TypedarrayType::uint8_clamped_array => ElementKind::Uint8Clamped,
        sys::TypedarrayType::int16_array => ElementKind::Int16,
        sys::TypedarrayType::uint16_array => ElementKind::Uint16,
        sys::TypedarrayType::int32_array => ElementKind::Int32,
        sys::TypedarrayType::uint32_array => ElementKind::Uint32,
        sys::TypedarrayType::float32_array => ElementKind::Float32,
        sys::TypedarrayType::float64_array => ElementKind::Float64,
        sys::TypedarrayType::bigint64_array => ElementKind::BigInt64,
        sys::TypedarrayType::biguint64_array => ElementKind::BigUint64,
        _ => {
            return Err(format!(
                "{} is a typed array of an unknown kind",
                place(path)
            ))
        }
    };
    // `napi_is_arraybuffer` is false for a SharedArrayBuffer (V8's IsArrayBuffer).
    let mut plain = false;
    napi_try!(
        env,
        sys::napi_is_arraybuffer(env, buffer, &mut plain),
        "checking the buffer kind"
    );
    if plain {
        if kind == ElementKind::Uint8 {
            let mut bytes = Vec::new();
            if length > 0 && !data.is_null() {
                bytes
                    .try_reserve_exact(length)
                    .map_err(|_| format!("{}: no memory to copy {length} bytes", place(path)))?;
                // SAFETY: Node-API reports `data` valid for `length` bytes of this Uint8Array;
                // we are on the JS thread, so nothing detaches or writes it while we copy.
                bytes.extend_from_slice(unsafe {
                    std::slice::from_raw_parts(data as *const u8, length)
                });
            }
            return Ok(Value::Bytes(bytes));
        }
        return Err(format!(
            "{} is a {} over an ordinary ArrayBuffer: pass it over a SharedArrayBuffer \
             (shared by reference) or as a plain array",
            place(path),
            kind.js_name()
        ));
    }
    let ptr = if length == 0 || data.is_null() {
        // An empty view is never dereferenced; any aligned non-null address will do.
        kind.size() as *mut u8
    } else {
        data as *mut u8
    };
    // SAFETY: `ptr` is the view's first element (Node-API adjusts it by byteOffset), valid for
    // `length` elements of the SharedArrayBuffer, whose memory never moves (a growable one only
    // grows). The call that carries the view keeps this very typed array referenced until it
    // settles (FromJs::views, index.js), and a departing environment waits for its running jobs
    // (pool::origin), so the memory outlives every use of the view.
    match unsafe { SharedView::new(ptr, length, kind) } {
        Some(view) => Ok(Value::View(view)),
        None => Err(format!(
            "{} is not aligned for its element type",
            place(path)
        )),
    }
}

/// The memory of typed array `v`, shared or not, as a view for use during the current
/// Node-API callback only, and whether it lies in a SharedArrayBuffer. For arguments that
/// native code reads or fills synchronously (a ring buffer's `write(data)`); memory that native
/// code keeps must come from [`typed_array`], which accepts only SharedArrayBuffers.
///
/// # Safety
/// `v` must be a value of the live `env`, on its JS thread, and the view must not be used after
/// the callback returns (an ordinary ArrayBuffer may then be detached or collected).
pub(crate) unsafe fn view_for_call(
    env: sys::napi_env,
    v: sys::napi_value,
    what: &str,
) -> Converted<(SharedView, bool)> {
    let mut kind = 0;
    let mut length = 0usize;
    let mut data: *mut std::ffi::c_void = ptr::null_mut();
    let mut buffer = ptr::null_mut();
    let mut offset = 0usize;
    // SAFETY: live env and value (caller contract); out-pointers are live locals. Node-API
    // answers napi_invalid_arg when `v` is not a typed array.
    let status = unsafe {
        sys::napi_get_typedarray_info(
            env,
            v,
            &mut kind,
            &mut length,
            &mut data,
            &mut buffer,
            &mut offset,
        )
    };
    if status != sys::Status::napi_ok || kind != sys::TypedarrayType::uint8_array {
        return Err(format!("{what} must be a Uint8Array"));
    }
    let mut plain = false;
    napi_try!(
        env,
        sys::napi_is_arraybuffer(env, buffer, &mut plain),
        "checking the buffer kind"
    );
    let ptr = if length == 0 || data.is_null() {
        // An empty view is never dereferenced; any non-null address will do.
        ptr::NonNull::<u8>::dangling().as_ptr()
    } else {
        data as *mut u8
    };
    // SAFETY: Node-API reports `ptr` valid for `length` bytes of the Uint8Array; the caller
    // uses the view only while this callback runs, when the array's buffer cannot be detached
    // or collected (the argument keeps it alive, and only this JS thread could detach it).
    match unsafe { SharedView::new(ptr, length, ElementKind::Uint8) } {
        Some(view) => Ok((view, !plain)),
        None => Err(format!("{what} could not be read")),
    }
}

/// The memory a typed array over a SharedArrayBuffer views, to match it with a
/// [`Value::View`] of the same memory; `None` for any other value.
///
/// # Safety
/// `v` must be a value of the live `env`, on its JS thread.
pub unsafe fn shared_view_of(env: sys::napi_env, v: sys::napi_value) -> Option<SharedView> {
    let mut is_typed = false;
    // SAFETY: live env and value (caller contract).
    unsafe { sys::napi_is_typedarray(env, v, &mut is_typed) };
    if !is_typed {
        return None;
    }
    // SAFETY: as above; v is a typed array. Only its address is used: the view is compared,
    // never dereferenced.
    match unsafe { typed_array(env, v, "") } {
        Ok(Value::View(view)) => Some(view),
        _ => None,
    }
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
