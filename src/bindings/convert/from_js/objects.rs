//! Objects crossing into [`Value`]: a plain object entry by entry (own enumerable string
//! keys, in order), and the refusals that keep a call meaning what JSON would send: class
//! instances, ArrayBuffers, DataViews, Dates, objects with their own `toJSON`, and String
//! objects passing for plain ones. A Proxy is seen through as `Array.isArray` and
//! `Object.getPrototypeOf` see it.

use super::arrays::{typed_array, ArrayKind};
use super::known::{builtin, GET_PROTOTYPE_OF, IS_ARRAY, LENGTH, STRING_VALUE_OF, TO_JSON};
use super::{
    constructor_name, name_at, own_names, prototype_of, type_of, FromJs, FIRST_RESERVE, MAX_VALUES,
};
use crate::bindings::convert::{place, take_exception_quietly, Converted};
use crate::rpc::{Map, Value};
use napi::sys;
use std::ptr;

/// What an object is for crossing: see [`FromJs::through_proxy`].
pub(super) enum Shape {
    Plain,
    Array,
    Instance,
}

impl FromJs {
    /// # Safety
    /// As for [`FromJs::value`], with `v` an object.
    pub(super) unsafe fn object(
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
        // A render that takes functions (`pool.render`) never makes JSON of its view: there a
        // `toJSON` is a function like any other (mustache.js can call it by name).
        if self.collected.is_none() {
            // SAFETY: v is an object of this env.
            unsafe { self.refuse_to_json(v, path, !plain) }?;
        }
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
    pub(super) unsafe fn unusual(
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

    /// `Err` when `v` has a `toJSON` method of its own: JSON.stringify would send what it
    /// returns, and a call must not mean one thing as JSON text and another value by value.
    /// The method is looked up as JSON.stringify looks it up (a getter or a Proxy's `get` trap
    /// runs, and may throw); an inherited one is left alone: a program that puts `toJSON` on
    /// `Object.prototype` or `Array.prototype` would otherwise have every call refused.
    /// (JavaScript sends a value with any `toJSON` value by value, never as JSON text, see
    /// lib/params.js, so both paths agree.) A Proxy (`maybe_proxy`: Node-API shows it no
    /// prototype) answers "own?" through another trap than the `get` that gave the method, so
    /// there the method is left alone only if it is the one those prototypes hold.
    ///
    /// # Safety
    /// As for [`FromJs::value`], with `v` an object.
    pub(super) unsafe fn refuse_to_json(
        &mut self,
        v: sys::napi_value,
        path: &str,
        maybe_proxy: bool,
    ) -> Converted<()> {
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
        // SAFETY: caller contract; `f` and `key` are values of this env.
        if own || (maybe_proxy && !unsafe { self.inherited_to_json(f, key, path) }?) {
            return Err(format!(
                "{} has a toJSON method, which JSON would call: send the value it returns instead",
                place(path)
            ));
        }
        Ok(())
    }

    /// Whether `f` is the `toJSON` that `Object.prototype` or `Array.prototype` holds (`key`:
    /// the key "toJSON").
    ///
    /// # Safety
    /// As for [`FromJs::value`], with `f` and `key` values of this env.
    unsafe fn inherited_to_json(
        &mut self,
        f: sys::napi_value,
        key: sys::napi_value,
        path: &str,
    ) -> Converted<bool> {
        let env = self.env;
        for holder in [c"Object", c"Array"] {
            // SAFETY: caller contract.
            let prototype = unsafe { builtin(env, &[holder, c"prototype"], path) }?;
            let mut held = ptr::null_mut();
            let mut same = false;
            at_try!(
                env,
                path,
                sys::napi_get_property(env, prototype, key, &mut held),
                "reading an inherited toJSON"
            );
            at_try!(
                env,
                path,
                sys::napi_strict_equals(env, f, held, &mut same),
                "comparing toJSON methods"
            );
            if same {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Refuses a String object that passes for a plain object (its prototype replaced by an
    /// `Object.prototype`, of this realm or another): it has an own key per
    /// character, which listing would make one by one before any budget could refuse them. It
    /// is told by its own `length` and then by `String.prototype.valueOf`, which only a String
    /// object does not make throw (a `Symbol.toStringTag` cannot fake it).
    ///
    /// # Safety
    /// As for [`FromJs::value`], with `v` an object.
    pub(super) unsafe fn refuse_string_object(
        &mut self,
        v: sys::napi_value,
        path: &str,
    ) -> Converted<()> {
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
            unsafe { take_exception_quietly(env) };
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
    pub(super) unsafe fn through_proxy(
        &mut self,
        v: sys::napi_value,
        path: &str,
    ) -> Converted<Shape> {
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
}
