//! Shared memory: views over SharedArrayBuffers and the primitives threads use around them.
//!
//! - [`view`]: the one place raw pointers into shared memory are made; everything else goes
//!   through its bounds-checked atomic accessors.
//! - [`mutex`], [`semaphore`], [`ring`]: the protocols on shared words that JavaScript threads
//!   and native code both follow (the book's Mutex and SharedRingBuffer layouts).
//! - [`backoff`]: how native code waits on a word that JavaScript may release.

pub mod backoff;
pub mod mutex;
pub mod ring;
pub mod semaphore;
pub mod view;

pub use mutex::{Mutex, NotLocked};
pub use ring::{Moved, RingBuffer, RingError};
pub use semaphore::Semaphore;
pub use view::{ElementKind, SharedView, SharedWord};
