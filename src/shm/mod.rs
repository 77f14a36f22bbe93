//! Shared memory: views over SharedArrayBuffers and the primitives threads use around them.
//!
//! - [`view`]: the one place raw pointers into shared memory are made; everything else goes
//!   through its bounds-checked atomic accessors.
//! - [`mutex`], [`semaphore`], [`ring`]: the protocols on shared words that JavaScript threads
//!   and native code both follow (the book's Mutex and SharedRingBuffer layouts).
//! - [`backoff`]: how native code waits on a word that JavaScript may release.
//! - [`error`]: what they refuse (memory that cannot hold them), in a type of shm's own, so that
//!   this module depends on nothing above it.

pub mod backoff;
pub mod error;
pub mod mutex;
pub mod ring;
pub mod semaphore;
pub mod view;

pub use error::Error;
pub use mutex::{Mutex, NotLocked};
pub use ring::{Moved, RingBuffer, RingError};
pub use semaphore::Semaphore;
pub use view::{ElementKind, SharedView, SharedWord};
