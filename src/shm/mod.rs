//! Shared memory: views over SharedArrayBuffers and the primitives threads use around them.

pub mod view;

pub use view::{ElementKind, SharedView};
