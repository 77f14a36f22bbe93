//! [`JsHost`]: the engine's [`Functions`] on the calling thread, inside `finishRender`'s
//! callback. Every crossing into JavaScript that a render with functions makes is a method
//! here: the helpers `write`, `section` and `writeRun` (lib/render.js), reading the view's
//! functions and their `this` out of `[functions, objects]`, and reading back what the
//! functions returned (kept, and counted against the budget of a call's values).

use super::live::Live;
use super::text::{internal, thrown, with_text, LONE_SURROGATE};
use crate::bindings::contract::{
    RENDER_SECTION_LAMBDA, RENDER_WRITE_ESCAPE, RENDER_WRITE_HTML, RENDER_WRITE_RAW,
    RENDER_WRITE_SECTION,
};
use crate::bindings::convert::from_js::MAX_VALUES;
use crate::bindings::convert::{self, define_index, to_js, FromJs};
use crate::render::functions::pending::Finishing;
use crate::render::functions::{
    run_miscounted, write_first, Functions, RunEnd, RunTag, SectionCall, SectionValue, TagEscape,
    Write,
};
use crate::render::js::Js;
use crate::render::{check_value, escape_html};
use crate::rpc::packed::tree::Item;
use crate::rpc::text::MAX_JS_STRING;
use crate::rpc::{FunctionId, RpcError, Value};
use napi::sys;
use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::ptr;

/// A section's raw text of at most this many bytes goes with the call of its function (making
/// it costs little next to the call); a longer one is made only when a lambda asks for it
/// (`renderSectionText`).
const RAW_TEXT_WITH_CALL: usize = 256;

/// [`Functions`] on the calling thread: calls the view's functions then and there.
pub(super) struct JsHost<'f, 'p> {
    env: sys::napi_env,
    finishing: &'f Finishing<'p>,
    functions: sys::napi_value,
    objects: sys::napi_value,
    helpers: sys::napi_value,
    write: sys::napi_value,
    section: sys::napi_value,
    write_run: sys::napi_value,
    /// The helpers' memory (`renderHelperMemory`): the `returned` word, `writeRun`'s args.
    returned: sys::napi_value,
    run_args: sys::napi_value,
    undefined: sys::napi_value,
    /// The elements of `functions` and `objects` read so far, by index (null: not yet read).
    /// Reading an array element through Node-API is a generic property lookup, and a view's
    /// function and its `this` are read once per tag in a loop: once each is enough, as
    /// entries are only ever appended to those arrays. Only values read in `finishRender`'s
    /// own callback are kept: one read while a lambda's `render` runs belongs to that
    /// callback's handle scope, gone once it returns.
    read_functions: RefCell<Vec<sys::napi_value>>,
    read_objects: RefCell<Vec<sys::napi_value>>,
    /// Lengths of `functions` and `objects` last read (0 until read).
    functions_known: Cell<u32>,
    objects_known: Cell<u32>,
    /// How many lambdas' `render` calls (callbacks of their own) are running.
    nested: Cell<u32>,
    /// Values the functions' results kept so far hold: every result is kept until the render
    /// ends (the views point into it), so their sum is bounded like a call's params.
    kept: Cell<usize>,
}

impl<'f, 'p> JsHost<'f, 'p> {
    /// A run's `entries` written into the helpers' memory, and the arguments every run's
    /// helper takes first: `functions, objects, runArgs, entries.len(), room`.
    fn run_call(
        &self,
        entries: &[[f64; 4]],
        room: usize,
    ) -> Result<[sys::napi_value; 5], RpcError> {
        let float64 = sys::TypedarrayType::float64_array;
        let (data, length) = self.helper_memory(self.run_args, float64)?;
        if length < 4 * entries.len() {
            return Err(internal("the render helpers' memory is too small"));
        }
        for (i, &number) in entries.iter().flatten().enumerate() {
            // SAFETY: `data` has `length` > i f64 elements (just checked, with no JavaScript
            // run since); written unaligned to assume nothing.
            unsafe { (data as *mut f64).add(i).write_unaligned(number) };
        }
        let number = |n: usize| {
            Value::Number(n as f64)
                .to_js(self.env)
                .map_err(|why| internal(&why))
        };
        Ok([
            self.functions,
            self.objects,
            self.run_args,
            number(entries.len())?,
            number(room)?,
        ])
    }

    /// # Safety
    /// Must run in a Node-API callback on `env`'s JS thread, with values of `env`, and the
    /// host must not outlive that callback (its values live in its handle scope).
    pub(super) unsafe fn new(
        env: sys::napi_env,
        finishing: &'f Finishing<'p>,
        handles: sys::napi_value,
        helpers: sys::napi_value,
    ) -> Result<Self, RpcError> {
        let mut undefined = ptr::null_mut();
        // SAFETY: caller contract; out-pointers are live locals.
        unsafe { sys::napi_get_undefined(env, &mut undefined) };
        let mut host = JsHost {
            env,
            finishing,
            functions: undefined,
            objects: undefined,
            helpers,
            write: undefined,
            section: undefined,
            write_run: undefined,
            returned: undefined,
            run_args: undefined,
            undefined,
            read_functions: RefCell::new(Vec::new()),
            read_objects: RefCell::new(Vec::new()),
            functions_known: Cell::new(0),
            objects_known: Cell::new(0),
            nested: Cell::new(0),
            kept: Cell::new(0),
        };
        host.functions = host.element(handles, 0)?;
        host.objects = host.element(handles, 1)?;
        host.write = host.property(helpers, c"write")?;
        host.section = host.property(helpers, c"section")?;
        host.write_run = host.property(helpers, c"writeRun")?;
        host.returned = host.property(helpers, c"returned")?;
        host.run_args = host.property(helpers, c"runArgs")?;
        Ok(host)
    }

    /// Where the elements of the helpers' typed array `array` are, and how many: looked up at
    /// each use, as the JavaScript run since the last may have done anything, so nothing about
    /// the array's memory is taken for granted from one call to the next. `kind` is the type
    /// it must be.
    fn helper_memory(
        &self,
        array: sys::napi_value,
        kind: sys::napi_typedarray_type,
    ) -> Result<(*mut c_void, usize), RpcError> {
        let mut got = sys::TypedarrayType::int8_array;
        let mut length = 0usize;
        let mut data: *mut c_void = ptr::null_mut();
        // SAFETY: as in `element`; out-pointers are live locals (a value that is not a typed
        // array fails, throwing nothing).
        let status = unsafe {
            sys::napi_get_typedarray_info(
                self.env,
                array,
                &mut got,
                &mut length,
                &mut data,
                ptr::null_mut(),
                ptr::null_mut(),
            )
        };
        if status != sys::Status::napi_ok || got != kind || length == 0 || data.is_null() {
            return Err(internal("the render helpers' memory is missing"));
        }
        Ok((data, length))
    }

    /// What `section` or `writeRun` says it returned last (`RENDER_SECTION_*`, or a count).
    fn returned(&self) -> Result<i32, RpcError> {
        let (data, _) = self.helper_memory(self.returned, sys::TypedarrayType::int32_array)?;
        // SAFETY: Node-API just said `data` is the first of ≥ 1 elements of an Int32Array, and
        // no JavaScript runs on this thread while this reads it. Read unaligned to assume
        // nothing.
        Ok(unsafe { (data as *const i32).read_unaligned() })
    }

    /// `writeRun`'s entry for `w`: the indices of its function and `this`, its write mode and
    /// its escape function's index (-1: none); `None` when JavaScript would need more than
    /// indices (a value that is not a function, a `this` that is not an object of the caller's).
    fn run_entry(&self, w: &Write<'p>) -> Option<[f64; 4]> {
        let Js::Function(function) = w.value else {
            return None;
        };
        // A number past the handles (a forged tape) is written alone, where reading it fails.
        if !self.among(&self.functions_known, self.functions, function.0) {
            return None;
        }
        if let TagEscape::Function(f) = w.escape {
            if !self.among(&self.functions_known, self.functions, f.0) {
                return None;
            }
        }
        let this = match w.this {
            Js::Undefined => -1.0,
            other => f64::from(self.finishing.original(other)?),
        };
        let (mode, escape) = match w.escape {
            TagEscape::Raw => (RENDER_WRITE_RAW, -1.0),
            TagEscape::Html => (RENDER_WRITE_HTML, -1.0),
            TagEscape::Function(f) => (RENDER_WRITE_ESCAPE, f64::from(f.0)),
        };
        Some([f64::from(function.0), this, f64::from(mode), escape])
    }

    /// A JavaScript string of `text`.
    fn string(&self, text: &str) -> Result<sys::napi_value, RpcError> {
        let mut out = ptr::null_mut();
        // SAFETY: as in `element`; `text` is valid UTF-8 of that many bytes.
        let status = unsafe {
            sys::napi_create_string_utf8(
                self.env,
                text.as_ptr().cast(),
                text.len() as isize,
                &mut out,
            )
        };
        self.check(status, "making a string")?;
        Ok(out)
    }

    fn element(&self, array: sys::napi_value, index: u32) -> Result<sys::napi_value, RpcError> {
        let mut out = ptr::null_mut();
        // SAFETY: on the env's JS thread (`new`'s contract); `array` is a value of env.
        let status = unsafe { sys::napi_get_element(self.env, array, index, &mut out) };
        self.check(status, "reading the call's functions")?;
        Ok(out)
    }

    fn property(
        &self,
        object: sys::napi_value,
        name: &std::ffi::CStr,
    ) -> Result<sys::napi_value, RpcError> {
        let mut out = ptr::null_mut();
        // SAFETY: as in `element`.
        let status =
            unsafe { sys::napi_get_named_property(self.env, object, name.as_ptr(), &mut out) };
        self.check(status, "reading the render helpers")?;
        Ok(out)
    }

    fn length(&self, array: sys::napi_value) -> Result<u32, RpcError> {
        let mut n = 0;
        // SAFETY: as in `element`.
        let status = unsafe { sys::napi_get_array_length(self.env, array, &mut n) };
        self.check(status, "counting the call's functions")?;
        Ok(n)
    }

    /// `Err` for a failed Node-API call: [`thrown`] if JavaScript threw (the exception stays
    /// pending, for the caller to see), else an internal error.
    fn check(&self, status: sys::napi_status, what: &str) -> Result<(), RpcError> {
        if status == sys::Status::napi_ok {
            return Ok(());
        }
        let mut pending = false;
        // SAFETY: as in `element`.
        unsafe { sys::napi_is_exception_pending(self.env, &mut pending) };
        if pending {
            return Err(thrown());
        }
        Err(internal(&format!(
            "Node-API call failed ({status}) while {what}"
        )))
    }

    /// `f.call(this, ...args)`.
    fn call(
        &self,
        f: sys::napi_value,
        this: sys::napi_value,
        args: &[sys::napi_value],
    ) -> Result<sys::napi_value, RpcError> {
        let mut out = ptr::null_mut();
        // SAFETY: as in `element`; `args` are values of env.
        let status = unsafe {
            sys::napi_call_function(self.env, this, f, args.len(), args.as_ptr(), &mut out)
        };
        self.check(status, "calling a function")?;
        Ok(out)
    }

    fn function(&self, id: FunctionId) -> Result<sys::napi_value, RpcError> {
        self.element_once(
            &self.read_functions,
            &self.functions_known,
            self.functions,
            id.0,
        )
    }

    /// Whether `index` is within `array` (`functions` or `objects`), whose length was `known`
    /// when last read. The arrays only grow: the length is read again only past that one.
    fn among(&self, known: &Cell<u32>, array: sys::napi_value, index: u32) -> bool {
        if index < known.get() {
            return true;
        }
        match self.length(array) {
            Ok(n) => {
                known.set(n);
                index < n
            }
            Err(_) => false,
        }
    }

    /// Element `index` of `array` (`functions` or `objects`, with its cache `read`).
    fn element_once(
        &self,
        read: &RefCell<Vec<sys::napi_value>>,
        known: &Cell<u32>,
        array: sys::napi_value,
        index: u32,
    ) -> Result<sys::napi_value, RpcError> {
        let at = index as usize;
        if let Some(&v) = read.borrow().get(at) {
            if !v.is_null() {
                return Ok(v);
            }
        }
        // A function's number comes from the packed tape, which the calling thread wrote: one
        // past the handles is an error, before the cache below is sized by it.
        if !self.among(known, array, index) {
            return Err(internal(
                "a render's function or object is not among its handles",
            ));
        }
        let v = self.element(array, index)?;
        if self.nested.get() > 0 {
            return Ok(v);
        }
        let mut read = read.borrow_mut();
        if read.len() <= at {
            read.resize(at + 1, ptr::null_mut());
        }
        read[at] = v;
        Ok(v)
    }

    /// The JavaScript value for `value`: a primitive made anew, the caller's own object or
    /// function for the others.
    fn js_of(&self, value: Js<'p>) -> Result<sys::napi_value, RpcError> {
        let made = match value {
            Js::Undefined => Ok(self.undefined),
            Js::Null => Value::Null.to_js(self.env),
            Js::Bool(b) => Value::Bool(b).to_js(self.env),
            Js::Number(n) => Value::Number(n).to_js(self.env),
            Js::String(s) => Value::from(s).to_js(self.env),
            Js::Function(id) => return self.function(id),
            Js::Array(items) => return self.object(value, || Value::Array(items.clone())),
            Js::Object(map) => return self.object(value, || Value::Object(map.clone())),
            // Params that hold functions never cross packed: a render with functions has
            // none of these. Should one come, it is made anew, like data given as JSON text.
            Js::List(list) => return self.object(value, || Item::Array(list).to_value()),
            Js::Record(record) => return self.object(value, || Item::Object(record).to_value()),
            Js::LoneSurrogate => return Err(RpcError::failed(LONE_SURROGATE)),
        };
        made.map_err(|why| internal(&why))
    }

    /// The caller's own array or object for `value`, or, for a value of data given as JSON
    /// text, one made anew from `copy()` (as `JSON.parse` of that text would have made it).
    fn object(
        &self,
        value: Js<'p>,
        copy: impl FnOnce() -> Value,
    ) -> Result<sys::napi_value, RpcError> {
        match self.finishing.original(value) {
            Some(index) => {
                self.element_once(&self.read_objects, &self.objects_known, self.objects, index)
            }
            None if self.finishing.data_is_json() => {
                copy().to_js(self.env).map_err(|why| internal(&why))
            }
            None => Err(internal("a view that the call did not hold")),
        }
    }

    /// Appends the string `v` (a helper's result) to `out`, escaped as HTML when `html`.
    fn push_text(&self, v: sys::napi_value, out: &mut String, html: bool) -> Result<(), RpcError> {
        // SAFETY: as in `element`; the helpers return strings.
        unsafe {
            with_text(self.env, v, |text| {
                if html {
                    escape_html(text, out);
                } else {
                    out.push_str(text);
                }
            })
        }
    }

    fn number(&self, n: u32) -> sys::napi_value {
        let mut out = ptr::null_mut();
        // SAFETY: as in `element`.
        unsafe { sys::napi_create_uint32(self.env, n, &mut out) };
        out
    }

    fn boolean(&self, b: bool) -> sys::napi_value {
        let mut out = ptr::null_mut();
        // SAFETY: as in `element`.
        unsafe { sys::napi_get_boolean(self.env, b, &mut out) };
        out
    }

    /// `value` (a function's result) as a value of the render, kept for the rest of it; its
    /// functions and objects join the call's.
    fn read(&self, value: sys::napi_value) -> Result<&'p Value, RpcError> {
        let (first_function, first_object) =
            (self.length(self.functions)?, self.length(self.objects)?);
        let mut from = FromJs::new(self.env);
        from.collect_functions(first_function, first_object);
        let mut path = String::from("the function's result");
        // SAFETY: as in `element`; `value` is a value of env.
        let converted = unsafe { from.value(value, 0, &mut path) }.map_err(|why| {
            RpcError::failed(format!(
                "render: a section's function returned a value the native renderer cannot \
                 take: {why}"
            ))
        })?;
        // A value a function returned is not the caller's params: CommandFailed, as for a
        // value that cannot cross at all.
        check_value(&converted, "the function's result")
            .map_err(|e| RpcError::failed(e.message))?;
        let kept = self.kept.get() + from.spent();
        if kept > MAX_VALUES {
            return Err(RpcError::failed(format!(
                "render: the values this render's section functions returned hold more than \
                 {MAX_VALUES} values in all (each is kept until the render ends, like the \
                 call's own data): return less, or pass the data in the view"
            )));
        }
        self.kept.set(kept);
        if let Some(collected) = from.collected {
            for (list, first, values) in [
                (self.functions, first_function, collected.functions),
                (self.objects, first_object, collected.objects),
            ] {
                for (i, v) in values.into_iter().enumerate() {
                    // SAFETY: as in `element`.
                    let status = unsafe { define_index(self.env, list, first + i as u32, v) };
                    self.check(status, "keeping a function's result")?;
                }
            }
        }
        Ok(self.finishing.keep(converted, first_object))
    }
}

/// `Value::to_js` for the few values made here.
trait ToJs {
    fn to_js(&self, env: sys::napi_env) -> convert::Converted<sys::napi_value>;
}

impl ToJs for Value {
    fn to_js(&self, env: sys::napi_env) -> convert::Converted<sys::napi_value> {
        // SAFETY: only called from `JsHost`, on its env's JS thread.
        unsafe { to_js(env, self) }
    }
}

impl<'f, 'p> Functions<'p> for JsHost<'f, 'p> {
    fn write(
        &self,
        value: Js<'p>,
        this: Js<'p>,
        escape: TagEscape,
        out: &mut String,
    ) -> Result<(), RpcError> {
        let (target, call, this) = match value {
            Js::Function(id) => (self.function(id)?, true, self.js_of(this)?),
            other => (self.js_of(other)?, false, self.undefined),
        };
        let (mode, escape_fn) = match escape {
            TagEscape::Raw => (RENDER_WRITE_RAW, self.undefined),
            TagEscape::Html => (RENDER_WRITE_HTML, self.undefined),
            TagEscape::Function(id) => (RENDER_WRITE_ESCAPE, self.function(id)?),
        };
        let args = [
            target,
            this,
            self.boolean(call),
            self.number(mode),
            escape_fn,
        ];
        let text = self.call(self.write, self.helpers, &args)?;
        self.push_text(text, out, escape == TagEscape::Html)
    }

    fn section(
        &self,
        call: SectionCall<'p, '_>,
        out: &mut String,
    ) -> Result<SectionValue<'p>, RpcError> {
        let this = self.js_of(call.this)?;
        let function = self.function(call.function)?;
        if call.inverted {
            let args = [function, this, self.boolean(true)];
            let renders = self.call(self.section, self.helpers, &args)?;
            let mut yes = false;
            // SAFETY: as in `element`; for an inverted section the helper returns a boolean.
            unsafe { sys::napi_get_value_bool(self.env, renders, &mut yes) };
            return Ok(SectionValue::Value(Js::Bool(!yes)));
        }
        // One call: the function, and at once, should it return a lambda, the lambda, which
        // gets the raw text and can render in this section's context while it runs.
        let raw = Finishing::raw_text(call.template, call.node);
        let scope = call.scope;
        // It runs in `renderInScope`'s callback, whose handles go when it returns.
        let render = |text: &str| {
            self.nested.set(self.nested.get() + 1);
            let out = self.finishing.render_text(text, scope, self);
            self.nested.set(self.nested.get() - 1);
            out
        };
        let live = Live::register(&render, raw);
        // A short text comes with the call; a longer one only if a lambda asks for it, as most
        // sections' functions return data, for which it would be made for nothing.
        let raw = match raw.len() <= RAW_TEXT_WITH_CALL {
            true => self.string(raw)?,
            false => self.undefined,
        };
        let args = [
            function,
            this,
            self.boolean(false),
            raw,
            Value::Number(live.token)
                .to_js(self.env)
                .map_err(|why| internal(&why))?,
        ];
        let result = self.call(self.section, self.helpers, &args);
        drop(live);
        let result = result?;
        if self.returned()? == RENDER_SECTION_LAMBDA {
            self.push_text(result, out, false)?;
            return Ok(SectionValue::Done);
        }
        // (A symbol or BigInt comes back as its truthiness, which is all a section makes of
        // it: mustache.js renders the body once, unpushed, when it is truthy.)
        Ok(SectionValue::Value(Js::of(self.read(result)?)))
    }

    /// A run of function tags whose `this` JavaScript holds goes in one call (`writeRun`),
    /// which calls them in order and gives back their texts joined, each one's length in
    /// `runArgs` (a text longer than `RENDER_RUN_TEXT_MAX` that is not the first comes apart,
    /// and ends the run). It stops once the texts could make the output longer than `room`
    /// allows (escaping counted at its worst) or pass `RENDER_RUN_TEXT_MAX` units, so no
    /// function is called after the one whose text makes the output too long, and right after
    /// a text that holds a lone surrogate, which is refused here before any later function is
    /// called: as one by one. Writes it cannot take go one by one.
    fn write_run(
        &self,
        writes: &[Write<'p>],
        room: usize,
        texts: &mut String,
        ends: &mut Vec<usize>,
    ) -> Result<usize, RpcError> {
        let entries: Vec<[f64; 4]> = writes.iter().map_while(|w| self.run_entry(w)).collect();
        if entries.len() < 2 {
            return write_first(self, writes, texts, ends);
        }
        let args = self.run_call(&entries, room)?;
        let float64 = sys::TypedarrayType::float64_array;
        let result = self.call(self.write_run, self.helpers, &args)?;
        let done = usize::try_from(self.returned()?).unwrap_or(0);
        if done == 0 || done > entries.len() {
            return Err(run_miscounted());
        }
        let (data, length) = self.helper_memory(self.run_args, float64)?;
        if length < 4 * done {
            return Err(run_miscounted());
        }
        let lengths = (0..done)
            .map(|k| {
                // SAFETY: `4 * k` < 4 × `done` ≤ `length` elements (just checked, with no
                // JavaScript run since); read unaligned to assume nothing.
                let len = unsafe { (data as *const f64).add(4 * k).read_unaligned() };
                crate::rpc::packed::whole(len, MAX_JS_STRING).ok_or_else(run_miscounted)
            })
            .collect::<Result<Vec<usize>, RpcError>>()?;
        // A string, or `[joined, apart]`: the last text came apart.
        let mut is_array = false;
        // SAFETY: as in `element`.
        unsafe { sys::napi_is_array(self.env, result, &mut is_array) };
        let (joined, apart) = match is_array {
            true => (self.element(result, 0)?, Some(self.element(result, 1)?)),
            false => (result, None),
        };
        let in_joined = done - usize::from(apart.is_some());
        let html: Vec<bool> = writes[..in_joined]
            .iter()
            .map(|w| w.escape == TagEscape::Html)
            .collect();
        self.split(joined, &html, &lengths[..in_joined], texts, ends)?;
        if let Some(apart) = apart {
            self.push_text(apart, texts, writes[in_joined].escape == TagEscape::Html)?;
            ends.push(texts.len());
        }
        Ok(done)
    }

    fn run_takes(&self, w: &Write<'p>) -> bool {
        self.run_entry(w).is_some()
    }

    /// A run of writes and sections in one call (`writeRun`, which calls a section's function
    /// and, should it return a lambda, the lambda, as `section` does): as a run of writes, a
    /// section's text being its lambda's output, and ending after a section whose function
    /// returned data (`writeRun` says so with a negative count, and hands the data back
    /// after the texts: `[joined, data]`). Each section's lambda can render in its context
    /// while the run runs (`Live`); `writeRun` hands a lambda a `render` that works only while
    /// that lambda runs, as `section` does.
    fn tag_run(
        &self,
        tags: &[RunTag<'p, '_>],
        room: usize,
        texts: &mut String,
        ends: &mut Vec<usize>,
    ) -> Result<Option<RunEnd<'p>>, RpcError> {
        let mut entries: Vec<[f64; 4]> = Vec::with_capacity(tags.len());
        for tag in tags {
            let entry = match tag {
                RunTag::Write(w) => self.run_entry(w),
                RunTag::Section(call, _) => self
                    .run_entry(&Write {
                        value: Js::Function(call.function),
                        this: call.this,
                        escape: TagEscape::Raw,
                    })
                    .map(|[f, this, _, _]| [f, this, f64::from(RENDER_WRITE_SECTION), 0.0]),
            };
            match entry {
                Some(entry) => entries.push(entry),
                None => break,
            }
        }
        if entries.len() < 2 {
            return Ok(None);
        }
        let tags = &tags[..entries.len()];
        // Each section's `render` (as in `section`), registered while the run runs.
        let renders: Vec<_> = tags
            .iter()
            .map(|tag| {
                let scope = match tag {
                    RunTag::Section(call, _) => Some(call.scope),
                    RunTag::Write(_) => None,
                };
                move |text: &str| {
                    let scope = scope.ok_or_else(|| internal("a write has no render"))?;
                    self.nested.set(self.nested.get() + 1);
                    let out = self.finishing.render_text(text, scope, self);
                    self.nested.set(self.nested.get() - 1);
                    out
                }
            })
            .collect();
        // The sections' raw texts, each distinct one once (a section repeated in a template
        // has the same), a short one only: a longer one only if a lambda asks for it.
        let mut raws = ptr::null_mut();
        // SAFETY: as in `element`; `raws` is a live local.
        let status = unsafe { sys::napi_create_array(self.env, &mut raws) };
        self.check(status, "making a run's texts")?;
        let mut distinct: Vec<&str> = Vec::new();
        let mut lives: Vec<Live> = Vec::new();
        let mut first_token = 0.0;
        // What the sections' raw texts render to, where the first pass rendered them ahead.
        let mut rendered = self.undefined;
        for (i, (tag, render)) in tags.iter().zip(&renders).enumerate() {
            let RunTag::Section(call, ahead) = tag else {
                continue;
            };
            if let Some(ahead) = ahead {
                if rendered == self.undefined {
                    // SAFETY: as in `element`; `rendered` is a live local.
                    let status = unsafe { sys::napi_create_array(self.env, &mut rendered) };
                    self.check(status, "making a run's texts")?;
                }
                let text = self.string(ahead)?;
                // SAFETY: as in `element`.
                let status = unsafe { define_index(self.env, rendered, i as u32, text) };
                self.check(status, "making a run's texts")?;
            }
            let raw = Finishing::raw_text(call.template, call.node);
            let live = Live::register(render, raw);
            if lives.is_empty() {
                first_token = live.token;
            } else if live.token != first_token + lives.len() as f64 {
                return Err(internal("a run's lambdas were registered out of turn"));
            }
            lives.push(live);
            entries[i][3] = match raw.len() <= RAW_TEXT_WITH_CALL {
                false => -1.0,
                true => match distinct.iter().position(|&d| d == raw) {
                    Some(at) => at as f64,
                    None => {
                        let text = self.string(raw)?;
                        let at = distinct.len() as u32;
                        // SAFETY: as in `element`.
                        let status = unsafe { define_index(self.env, raws, at, text) };
                        self.check(status, "making a run's texts")?;
                        distinct.push(raw);
                        f64::from(at)
                    }
                },
            };
        }
        let [functions, objects, run_args, count, room] = self.run_call(&entries, room)?;
        let float64 = sys::TypedarrayType::float64_array;
        let args = [
            functions,
            objects,
            run_args,
            count,
            room,
            raws,
            Value::Number(first_token)
                .to_js(self.env)
                .map_err(|why| internal(&why))?,
            rendered,
        ];
        let result = self.call(self.write_run, self.helpers, &args);
        // (The last registered first: each is then found at the end.)
        while let Some(live) = lives.pop() {
            drop(live);
        }
        let result = result?;
        let said = self.returned()?;
        // A negative count: the last tag was a section whose function returned data.
        let with_data = said < 0;
        let done = usize::try_from(said.unsigned_abs()).unwrap_or(0);
        if done == 0 || done > entries.len() {
            return Err(run_miscounted());
        }
        if with_data && !matches!(tags[done - 1], RunTag::Section(..)) {
            return Err(run_miscounted());
        }
        let with_text = done - usize::from(with_data);
        let (data, length) = self.helper_memory(self.run_args, float64)?;
        if length < 4 * with_text {
            return Err(run_miscounted());
        }
        let lengths = (0..with_text)
            .map(|k| {
                // SAFETY: as in `write_run`.
                let len = unsafe { (data as *const f64).add(4 * k).read_unaligned() };
                crate::rpc::packed::whole(len, MAX_JS_STRING).ok_or_else(run_miscounted)
            })
            .collect::<Result<Vec<usize>, RpcError>>()?;
        // A string; `[joined, apart]` (the last text came apart); `[joined, data]`.
        let mut is_array = false;
        // SAFETY: as in `element`.
        unsafe { sys::napi_is_array(self.env, result, &mut is_array) };
        if with_data && !is_array {
            return Err(run_miscounted());
        }
        let (joined, second) = match is_array {
            true => (self.element(result, 0)?, Some(self.element(result, 1)?)),
            false => (result, None),
        };
        let apart = second.filter(|_| !with_data);
        let in_joined = with_text - usize::from(apart.is_some());
        let html: Vec<bool> = tags[..in_joined]
            .iter()
            .map(|tag| matches!(tag, RunTag::Write(w) if w.escape == TagEscape::Html))
            .collect();
        self.split(joined, &html, &lengths[..in_joined], texts, ends)?;
        if let Some(apart) = apart {
            let html = matches!(&tags[in_joined], RunTag::Write(w) if w.escape == TagEscape::Html);
            self.push_text(apart, texts, html)?;
            ends.push(texts.len());
        }
        let data = match second.filter(|_| with_data) {
            // (A symbol or BigInt comes back as its truthiness, as from `section`.)
            Some(value) => Some(Js::of(self.read(value)?)),
            None => None,
        };
        Ok(Some(RunEnd { done, data }))
    }
}

impl<'f, 'p> JsHost<'f, 'p> {
    /// Appends the texts `joined` holds, `lengths` UTF-16 units each, as [`JsHost::push_text`]
    /// would append each (escaped as HTML where `html` says so), ending each at its entry of
    /// `ends`.
    fn split(
        &self,
        joined: sys::napi_value,
        html: &[bool],
        lengths: &[usize],
        texts: &mut String,
        ends: &mut Vec<usize>,
    ) -> Result<(), RpcError> {
        let mut push = |text: &str, &html: &bool| {
            if html {
                escape_html(text, texts);
            } else {
                texts.push_str(text);
            }
            ends.push(texts.len());
        };
        // As UTF-8 (see `with_text`), finding where each text ends by its UTF-16 length: in
        // bytes at once when all of it is ASCII, else char by char; then appending them.
        // SAFETY: as in `element`; the helper returns a string.
        let split = unsafe {
            convert::with_str(self.env, joined, |all| {
                if all.contains('\u{FFFD}') {
                    return None;
                }
                let ascii = all.is_ascii();
                let mut cuts = Vec::with_capacity(lengths.len());
                let mut at = 0;
                for &len in lengths {
                    let rest = all.get(at..)?;
                    let bytes = if ascii {
                        len
                    } else {
                        let mut units = 0;
                        let mut chars = rest.char_indices();
                        loop {
                            if units == len {
                                break chars.next().map_or(rest.len(), |(i, _)| i);
                            }
                            let (_, c) = chars.next()?;
                            units += c.len_utf16();
                        }
                    };
                    at = at.checked_add(bytes).filter(|&end| end <= all.len())?;
                    cuts.push(at);
                }
                if at != all.len() || !all.is_char_boundary(at) {
                    return None;
                }
                let mut start = 0;
                for (w, &end) in html.iter().zip(&cuts) {
                    push(all.get(start..end)?, w);
                    start = end;
                }
                Some(())
            })
        }
        .map_err(|why| internal(&why))?;
        if split.is_some() {
            return Ok(());
        }
        // U+FFFD somewhere (a lone surrogate, or one of the texts' own), or lengths that do
        // not fall on chars: read as UTF-16, which tells.
        // SAFETY: `joined` is a string the helper returned in this callback, of this env, on its JS
        // thread.
        let units =
            unsafe { convert::string_utf16(self.env, joined) }.map_err(|why| internal(&why))?;
        let mut start = 0usize;
        let mut text = String::new();
        for (w, &len) in html.iter().zip(lengths) {
            let end = start
                .checked_add(len)
                .filter(|&end| end <= units.len())
                .ok_or_else(run_miscounted)?;
            text.clear();
            for c in char::decode_utf16(units[start..end].iter().copied()) {
                text.push(c.map_err(|_| RpcError::failed(LONE_SURROGATE))?);
            }
            push(&text, w);
            start = end;
        }
        (start == units.len())
            .then_some(())
            .ok_or_else(run_miscounted)
    }
}
