//! Shared memory: views over SharedArrayBuffers and the primitives threads use around them.
//!
//! - [`view`]: the one place raw pointers into shared memory are made; everything else goes
//!   through its bounds-checked atomic accessors.
//! - [`mutex`], [`semaphore`], [`ring`]: the protocols on shared words that JavaScript threads
//!   and native code both follow (the book's Mutex and SharedRingBuffer layouts).
//! - [`agent`]: who holds a lock (ids for JavaScript and native agents) and what locks refuse.
//! - [`owned_mutex`], [`reentrant_mutex`], [`fair_mutex`]: owner-checked locks (the holder's id
//!   is in the word), reentrant by count, and first-come first-served by ticket.
//! - [`lock_all`]: several locks at once, in the one order every thread agrees on.
//! - [`backoff`]: how native code waits on a word that JavaScript may release.
//! - [`error`]: what they refuse (memory that cannot hold them), in a type of shm's own, so that
//!   this module depends on nothing above it.
//!
//! Each lock module states its words, their states and transitions, and why they are correct.
//! Their layouts reach JavaScript through the contract (`src/bindings/contract.rs`), so
//! `lib/shm/` never writes a word index or a flag of its own.

pub mod agent;
pub mod backoff;
pub mod error;
pub mod fair_mutex;
pub mod lock_all;
pub mod mutex;
pub mod owned_mutex;
pub mod reentrant_mutex;
pub mod ring;
pub mod semaphore;
pub mod view;

pub use agent::{Agent, LockError};
pub use error::Error;
pub use fair_mutex::FairMutex;
pub use lock_all::{lock_all, AllHeld, Lock};
pub use mutex::{Mutex, NotLocked};
pub use owned_mutex::OwnedMutex;
pub use reentrant_mutex::ReentrantMutex;
pub use ring::{Moved, RingBuffer, RingError};
pub use semaphore::Semaphore;
pub use view::{ElementKind, SharedView, SharedWord, SharedWords};
