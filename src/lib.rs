//! corepool: a pool of native worker threads for Node.js, called JSON-RPC style.
//!
//! The core (`rpc`, `pool`, `render`, `commands`, `shm`) is plain Rust with no Node dependency;
//! `bindings` is the only module that speaks Node-API.

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod bindings;
pub mod commands;
pub mod pool;
pub mod render;
pub mod rpc;
pub mod shm;

/// mimalloc for everything the addon allocates (why: Cargo.toml). Memory never crosses between
/// allocators: what Node-API hands out it frees itself, and what the addon hands to Node-API
/// (externals, pending renders) comes back to a Rust finalizer.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
