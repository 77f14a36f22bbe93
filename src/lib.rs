//! corepool: a pool of native worker threads for Node.js, called JSON-RPC style.
//!
//! The core (`rpc`, `pool`, `commands`, `shm`) is plain Rust with no Node dependency;
//! `bindings` is the only module that speaks Node-API.

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod bindings;
pub mod commands;
pub mod pool;
pub mod rpc;
pub mod shm;
