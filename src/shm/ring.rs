//! The book's SharedRingBuffer: a byte FIFO in shared memory behind a mutex.
//!
//! Layout (the book's, so JavaScript that follows the book can share the buffer):
//! ```text
//!   bytes  0..4   lock word    a `Mutex` (0 unlocked, 1 locked)
//!          4..8   head         where the next write goes        } unsigned 32-bit,
//!          8..12  tail         where the next read starts       } the book's
//!         12..16  length       bytes stored                     } Uint32Array(sab, 4, 3)
//!         16..    data         capacity = byteLength - 16
//! ```
//! Invariants whenever the lock is free: `length <= capacity`; `head` and `tail` lie in
//! `0..=capacity`, where `capacity` means the same as `0` (the book's code leaves a pointer at
//! the end of the data; corepool stores them reduced modulo the capacity); and
//! `head - tail ≡ length (mod capacity)`. A header that breaks them is reported as
//! [`RingError::Corrupt`] and left unchanged, never read past.
//!
//! Operations, each entirely under the lock:
//! - write: `n = min(src.len(), capacity - length)` bytes go in at `head`, wrapping to 0 at the
//!   end; `head += n`, `length += n`; returns `n` (a full ring takes 0 bytes).
//! - read: `n = min(wanted, length)` bytes come out from `tail`, wrapping likewise;
//!   `tail += n`, `length -= n`. The book reads the contiguous case with `slice(tail, bytes)`
//!   instead of `slice(tail, tail + bytes)`; here the range is always `tail .. tail + n`.
//!
//! Orderings: header and data are read and written with `Relaxed` atomics while the lock is
//! held; the lock's acquire and release order them between holders. The length word is
//! stored last with `Release`, so a thread that sees a new length without the lock (a waiter
//! deciding whether to sleep) sees a value at least that fresh; it re-checks under the lock.
//!
//! Waiting for room or data is the JavaScript wrapper's job, on the length word: a reader
//! sleeps only while the ring is empty (`Atomics.wait(int32, 3, 0)`), a writer only while it is
//! full (`Atomics.wait(int32, 3, capacity)`), and each drains or fills the ring before it
//! sleeps. So the only changes anyone can be asleep for are a write into an empty ring and a
//! read from a full one: operations report them ([`Moved::wakes`]) and the wrapper follows
//! exactly those with `Atomics.notify` on the length word. Every operation that took the lock
//! is followed by `Atomics.notify` on the lock word, as the mutex protocol requires.

use super::error::Error;
use super::mutex::{Mutex, NotLocked};
use super::view::{ElementKind, SharedView, SharedWord};
use std::fmt;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Bytes before the data: lock, head, tail, length.
pub const HEADER_BYTES: usize = 16;
/// Int32 index of each header word.
pub const LOCK: usize = 0;
pub const HEAD: usize = 1;
pub const TAIL: usize = 2;
pub const LENGTH: usize = 3;

/// What a write or read that got the lock did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Moved {
    /// Bytes written or read.
    pub bytes: usize,
    /// The ring was empty before this write put bytes in, or full before this read took bytes
    /// out: threads waiting on the length word must be woken (module doc).
    pub wakes: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RingError {
    /// The lock stayed taken through a short spin (`try_*` only).
    Busy,
    /// The lock stayed taken until the timeout.
    TimedOut,
    /// The header breaks the invariants (module doc); nothing was changed.
    Corrupt(String),
}

impl fmt::Display for RingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RingError::Busy => f.write_str("the ring buffer's lock is taken"),
            RingError::TimedOut => f.write_str("timed out waiting for the ring buffer's lock"),
            RingError::Corrupt(why) => write!(f, "the ring buffer's header is corrupt: {why}"),
        }
    }
}

impl std::error::Error for RingError {}

/// A ring buffer over shared memory. Cheap to clone: clones use the same memory.
#[derive(Clone, Debug)]
pub struct RingBuffer {
    lock: Mutex,
    meta: SharedView,
    data: SharedView,
}

impl RingBuffer {
    /// The ring buffer laid out over `region` (typically a view of a whole SharedArrayBuffer):
    /// it must start 4-aligned and hold the 16-byte header and at least one data byte.
    pub fn new(region: &SharedView) -> Result<RingBuffer, Error> {
        let bytes = region.byte_len();
        if bytes <= HEADER_BYTES {
            return Err(Error::new(format!(
                "RingBuffer: needs more than {HEADER_BYTES} bytes (header + data), got {bytes}"
            )));
        }
        let capacity = bytes - HEADER_BYTES;
        if capacity > u32::MAX as usize {
            return Err(Error::new(format!(
                "RingBuffer: capacity {capacity} does not fit the 32-bit header"
            )));
        }
        let meta = region
            .sub_view(0, 4, ElementKind::Int32)
            .ok_or_else(|| Error::new("RingBuffer: memory must start 4-aligned"))?;
        let data = region
            .sub_view(HEADER_BYTES, capacity, ElementKind::Uint8)
            .expect("the data region lies inside the view");
        let lock = Mutex::new(SharedWord::new("RingBuffer", meta.clone(), LOCK)?);
        Ok(RingBuffer { lock, meta, data })
    }

    pub fn capacity(&self) -> usize {
        self.data.len()
    }

    /// Bytes stored now (a snapshot; it may change as soon as it is read).
    pub fn len(&self) -> usize {
        (self.meta.load_i32(LENGTH, Ordering::Acquire) as u32 as usize).min(self.capacity())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Writes what fits of `src` (module doc); `Busy` if the lock stays taken through a short
    /// spin. Does not wake JavaScript waiters (module doc).
    pub fn try_write(&self, src: &[u8]) -> Result<Moved, RingError> {
        if !self.lock.lock_spinning() {
            return Err(RingError::Busy);
        }
        self.locked(|| self.write_locked(src))
    }

    /// Writes what fits of `src`, waiting at most `timeout` for the lock (`None`: no limit).
    pub fn write(&self, src: &[u8], timeout: Option<Duration>) -> Result<Moved, RingError> {
        if !self.lock.lock(timeout) {
            return Err(RingError::TimedOut);
        }
        self.locked(|| self.write_locked(src))
    }

    /// Reads up to `out.len()` bytes into `out`; `Busy` if the lock stays taken through a
    /// short spin.
    pub fn try_read_into(&self, out: &mut [u8]) -> Result<Moved, RingError> {
        if !self.lock.lock_spinning() {
            return Err(RingError::Busy);
        }
        self.locked(|| self.read_locked(out))
    }

    /// Reads up to `out.len()` bytes into `out`, waiting at most `timeout` for the lock.
    pub fn read_into(&self, out: &mut [u8], timeout: Option<Duration>) -> Result<Moved, RingError> {
        if !self.lock.lock(timeout) {
            return Err(RingError::TimedOut);
        }
        self.locked(|| self.read_locked(out))
    }

    /// Runs `f` (which holds the lock) and releases the lock.
    fn locked<T>(&self, f: impl FnOnce() -> Result<T, RingError>) -> Result<T, RingError> {
        let result = f();
        match self.lock.unlock() {
            Ok(()) => result,
            Err(NotLocked) => Err(RingError::Corrupt(
                "another thread cleared the lock word while this one held it".into(),
            )),
        }
    }

    /// `(head, tail, length)` with head and tail reduced modulo the capacity, or why not.
    fn header(&self) -> Result<(usize, usize, usize), RingError> {
        let cap = self.capacity();
        let word = |i| self.meta.load_i32(i, Ordering::Relaxed) as u32 as usize;
        let (head, tail, length) = (word(HEAD), word(TAIL), word(LENGTH));
        if head > cap || tail > cap || length > cap {
            return Err(RingError::Corrupt(format!(
                "head {head}, tail {tail}, length {length} with capacity {cap}"
            )));
        }
        let (head, tail) = (head % cap, tail % cap);
        if (head + cap - tail) % cap != length % cap {
            return Err(RingError::Corrupt(format!(
                "head {head} and tail {tail} do not span length {length} (capacity {cap})"
            )));
        }
        Ok((head, tail, length))
    }

    fn write_locked(&self, src: &[u8]) -> Result<Moved, RingError> {
        let cap = self.capacity();
        let (head, _, length) = self.header()?;
        let n = src.len().min(cap - length);
        let moved = Moved {
            bytes: n,
            wakes: n > 0 && length == 0,
        };
        if n == 0 {
            return Ok(moved);
        }
        let first = n.min(cap - head);
        self.data.store_bytes(head, &src[..first]);
        self.data.store_bytes(0, &src[first..n]);
        self.meta
            .store_i32(HEAD, ((head + n) % cap) as u32 as i32, Ordering::Relaxed);
        self.meta
            .store_i32(LENGTH, (length + n) as u32 as i32, Ordering::Release);
        Ok(moved)
    }

    fn read_locked(&self, out: &mut [u8]) -> Result<Moved, RingError> {
        let cap = self.capacity();
        let (_, tail, length) = self.header()?;
        let n = out.len().min(length);
        let moved = Moved {
            bytes: n,
            wakes: n > 0 && length == cap,
        };
        if n == 0 {
            return Ok(moved);
        }
        let first = n.min(cap - tail);
        let (to_end, from_start) = out[..n].split_at_mut(first);
        self.data.load_bytes(tail, to_end);
        self.data.load_bytes(0, from_start);
        self.meta
            .store_i32(TAIL, ((tail + n) % cap) as u32 as i32, Ordering::Relaxed);
        self.meta
            .store_i32(LENGTH, (length - n) as u32 as i32, Ordering::Release);
        Ok(moved)
    }
}

#[cfg(test)]
mod tests;
