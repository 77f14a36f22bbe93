//! corepool: a pool of native worker threads for Node.js, called JSON-RPC style.
//!
//! The core (`rpc`, `pool`, `commands`, `shm`) is plain Rust with no Node dependency;
//! `bindings` is the only module that speaks Node-API.

#![deny(unsafe_op_in_unsafe_fn)]

pub mod bindings;
pub mod commands;
pub mod pool;
pub mod rpc;
pub mod shm;

/// mimalloc instead of the system allocator, for this library's Rust allocations only (Node's
/// own heap is untouched). A call allocates and frees many small blocks on a worker thread
/// (params parsed from JSON, a rendered string); mimalloc's thread-local free lists make those
/// about twice as cheap as glibc's malloc.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
