//! Name lookup through the context stack, by mustache.js 4.2.0's `Context.lookup` rules.
//!
//! The stack holds the views sections pushed, innermost last. For each view, innermost first:
//!
//! - `.` is the innermost view, always.
//! - A plain key hits only when the view is an object or array that has it (`key in view`), so
//!   a key on a string or number view falls through to the outer views. A null or undefined
//!   view makes JavaScript throw (`view[key]` is evaluated first), and so does this.
//! - A dotted name walks its whole path from each view in turn (which is why mustache.js fails
//!   the spec's "Dotted Names - Context Precedence"). The walk stops at null or undefined; it
//!   hits when the last step is a property of an object or array, or an own property of a
//!   primitive (a string's `length` or index). A hit may be null; a miss moves outwards.
//!
//! Where mustache.js would reach a built-in inherited from a prototype (see `js.rs`), the
//! lookup fails with a message instead.
//!
//! A lookup that finds a function returns it as it is: calling it (with the innermost view as
//! `this`, as mustache.js does) is the renderer's business, see `functions.rs`.

use super::js::{Js, Key, Property};
use super::parse::Name;
use crate::rpc::RpcError;

/// The value of `name`, or `Js::Undefined` when no view has it. The error is boxed: a lookup
/// runs for every tag, and a small result comes back in registers instead of through memory.
///
/// Inlined for its common case, a plain key that the innermost view, an object, has (a field
/// of the current element of a list): the rest is out of line.
#[inline(always)]
pub fn lookup<'a>(views: &[Js<'a>], name: &Name) -> Result<Js<'a>, Box<RpcError>> {
    match (name, views.last()) {
        (Name::Key(key), Some(Js::Object(map))) => {
            if let Some(value) = key.get(map) {
                return Ok(Js::of(value));
            }
        }
        (Name::Key(key), Some(Js::Record(record))) => {
            if let Some(item) = key.get_in(*record) {
                return Ok(Js::of_item(item));
            }
        }
        _ => {}
    }
    lookup_anywhere(views, name)
}

/// [`lookup`] without its inlined case, for callers that have tried that case already.
pub fn lookup_anywhere<'a>(views: &[Js<'a>], name: &Name) -> Result<Js<'a>, Box<RpcError>> {
    match name {
        Name::Dot => Ok(views.last().copied().unwrap_or(Js::Undefined)),
        Name::Key(key) => {
            for &view in views.iter().rev() {
                match view {
                    Js::Undefined | Js::Null => return Err(null_view(view, key).into()),
                    Js::Array(_) | Js::Object(_) | Js::List(_) | Js::Record(_) => {
                        match view.property(key) {
                            Property::Own(value) => return Ok(value),
                            Property::Absent => {}
                            Property::Inherited => return Err(inherited(name, key).into()),
                        }
                    }
                    // mustache.js's `hasProperty` wants an object: a function view (an element
                    // of a list of functions) never has the key either.
                    Js::Bool(_)
                    | Js::Number(_)
                    | Js::String(_)
                    | Js::LoneSurrogate
                    | Js::Function(_) => {}
                }
            }
            Ok(Js::Undefined)
        }
        Name::Path(keys) => {
            let last = keys.len() - 1;
            for &view in views.iter().rev() {
                let mut value = view;
                let mut hit = false;
                for (i, key) in keys.iter().enumerate() {
                    if value.is_nullish() {
                        break;
                    }
                    let parent = value;
                    value = match parent.property(key) {
                        Property::Own(v) => {
                            hit = i == last;
                            v
                        }
                        Property::Absent => Js::Undefined,
                        // A primitive's inherited last step is no hit (only own properties
                        // count there), so its value is never used. A function's built-ins
                        // are partly its own (`name`, `length`): refused like the others.
                        Property::Inherited
                            if i == last
                                && !parent.is_object()
                                && !matches!(parent, Js::Function(_)) =>
                        {
                            Js::Undefined
                        }
                        Property::Inherited => return Err(inherited(name, key).into()),
                    };
                }
                if hit {
                    return Ok(value);
                }
            }
            Ok(Js::Undefined)
        }
    }
}

/// The TypeError JavaScript throws for `view[key]` on null or undefined (V8's wording).
fn null_view(view: Js, key: &Key) -> RpcError {
    let what = if matches!(view, Js::Null) {
        "null"
    } else {
        "undefined"
    };
    RpcError::failed(format!(
        "Cannot read properties of {what} (reading '{}')",
        key.text
    ))
}

fn inherited(name: &Name, key: &Key) -> RpcError {
    let key = &key.text;
    RpcError::failed(format!(
        "render: the name \"{}\" reaches \"{key}\", a built-in that JavaScript values inherit; \
         mustache.js would use that built-in, which corepool does not imitate (give the data its \
         own \"{key}\" key, or render this template with mustache.js on the main thread)",
        name.text()
    ))
}
