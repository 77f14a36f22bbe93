//! The one place where raw pointers into shared memory are made and used.
//!
//! A [`SharedView`] is a typed-array view over a SharedArrayBuffer that JavaScript handed to a
//! call. Its invariants, established by [`SharedView::new`]'s caller and kept by the pool:
//! - `ptr` points at `len * kind.size()` bytes of memory that stay allocated while any job that
//!   holds the view is unsettled (the JS side keeps the buffer referenced until the call settles,
//!   and a departing worker_thread waits for its running jobs in its cleanup hook);
//! - `ptr` is aligned for the element type (JavaScript guarantees typed-array alignment);
//! - the memory may be read and written concurrently by other threads (JS and native), so every
//!   access here is an atomic operation, bounds-checked against `len`; no `&`/`&mut` slice of the
//!   memory is ever formed.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicI32, AtomicU64, AtomicU8, Ordering};

/// The element type of a typed array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElementKind {
    Int8,
    Uint8,
    Uint8Clamped,
    Int16,
    Uint16,
    Int32,
    Uint32,
    Float32,
    Float64,
    BigInt64,
    BigUint64,
}

impl ElementKind {
    pub fn size(self) -> usize {
        match self {
            ElementKind::Int8 | ElementKind::Uint8 | ElementKind::Uint8Clamped => 1,
            ElementKind::Int16 | ElementKind::Uint16 => 2,
            ElementKind::Int32 | ElementKind::Uint32 | ElementKind::Float32 => 4,
            ElementKind::Float64 | ElementKind::BigInt64 | ElementKind::BigUint64 => 8,
        }
    }

    pub fn js_name(self) -> &'static str {
        match self {
            ElementKind::Int8 => "Int8Array",
            ElementKind::Uint8 => "Uint8Array",
            ElementKind::Uint8Clamped => "Uint8ClampedArray",
            ElementKind::Int16 => "Int16Array",
            ElementKind::Uint16 => "Uint16Array",
            ElementKind::Int32 => "Int32Array",
            ElementKind::Uint32 => "Uint32Array",
            ElementKind::Float32 => "Float32Array",
            ElementKind::Float64 => "Float64Array",
            ElementKind::BigInt64 => "BigInt64Array",
            ElementKind::BigUint64 => "BigUint64Array",
        }
    }
}

/// A view over shared memory; cheap to clone (clones view the same memory).
#[derive(Clone, Debug)]
pub struct SharedView {
    ptr: NonNull<u8>,
    len: usize,
    kind: ElementKind,
}

// SAFETY: the memory is shared memory meant for concurrent use, and it is only ever touched
// through atomic operations (see the module doc), so moving or sharing the view across threads
// cannot cause a data race.
unsafe impl Send for SharedView {}
// SAFETY: as for Send: `&SharedView` only gives atomic access to the memory.
unsafe impl Sync for SharedView {}

impl SharedView {
    /// Makes a view of `len` elements of `kind` at `ptr`.
    ///
    /// # Safety
    /// `ptr` must be non-null, aligned for `kind`, and valid for reads and writes of
    /// `len * kind.size()` bytes for as long as this view or any clone of it is used.
    pub unsafe fn new(ptr: *mut u8, len: usize, kind: ElementKind) -> Option<SharedView> {
        let ptr = NonNull::new(ptr)?;
        if !(ptr.as_ptr() as usize).is_multiple_of(kind.size()) {
            return None;
        }
        Some(SharedView { ptr, len, kind })
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn kind(&self) -> ElementKind {
        self.kind
    }

    /// True when both views start at the same address with the same length and type.
    pub fn same_memory(&self, other: &SharedView) -> bool {
        self.ptr == other.ptr && self.len == other.len && self.kind == other.kind
    }

    /// True when the two views share at least one byte.
    pub fn overlaps(&self, other: &SharedView) -> bool {
        let a = self.ptr.as_ptr() as usize;
        let b = other.ptr.as_ptr() as usize;
        let a_end = a + self.len * self.kind.size();
        let b_end = b + other.len * other.kind.size();
        a < b_end && b < a_end
    }

    fn check(&self, index: usize, kinds: &[ElementKind]) {
        assert!(
            kinds.contains(&self.kind),
            "{} accessed as {:?}",
            self.kind.js_name(),
            kinds
        );
        assert!(
            index < self.len,
            "index {index} out of bounds for a view of {}",
            self.len
        );
    }

    fn atomic_u8(&self, index: usize) -> &AtomicU8 {
        self.check(
            index,
            &[
                ElementKind::Uint8,
                ElementKind::Int8,
                ElementKind::Uint8Clamped,
            ],
        );
        // SAFETY: index < len, so the byte lies inside the view's memory, which is valid
        // (constructor contract); AtomicU8 has alignment 1; all access to it is atomic.
        unsafe { &*(self.ptr.as_ptr().add(index) as *const AtomicU8) }
    }

    fn atomic_i32(&self, index: usize) -> &AtomicI32 {
        self.check(index, &[ElementKind::Int32, ElementKind::Uint32]);
        // SAFETY: index < len, the element lies inside the view's memory, valid by the
        // constructor contract; ptr is 4-aligned (checked in new) so ptr + 4·index is too.
        unsafe { &*(self.ptr.as_ptr().add(index * 4) as *const AtomicI32) }
    }

    fn atomic_u64(&self, index: usize) -> &AtomicU64 {
        self.check(
            index,
            &[
                ElementKind::BigUint64,
                ElementKind::BigInt64,
                ElementKind::Float64,
            ],
        );
        // SAFETY: index < len, the element lies inside the view's memory, valid by the
        // constructor contract; ptr is 8-aligned (checked in new) so ptr + 8·index is too.
        unsafe { &*(self.ptr.as_ptr().add(index * 8) as *const AtomicU64) }
    }

    /// Reads byte `index` of a 1-byte view. Panics when out of bounds or of another type.
    pub fn load_u8(&self, index: usize, order: Ordering) -> u8 {
        self.atomic_u8(index).load(order)
    }

    pub fn store_u8(&self, index: usize, value: u8, order: Ordering) {
        self.atomic_u8(index).store(value, order)
    }

    pub fn load_i32(&self, index: usize, order: Ordering) -> i32 {
        self.atomic_i32(index).load(order)
    }

    pub fn store_i32(&self, index: usize, value: i32, order: Ordering) {
        self.atomic_i32(index).store(value, order)
    }

    pub fn compare_exchange_i32(&self, index: usize, current: i32, new: i32) -> Result<i32, i32> {
        self.atomic_i32(index)
            .compare_exchange(current, new, Ordering::AcqRel, Ordering::Acquire)
    }

    pub fn fetch_add_i32(&self, index: usize, delta: i32) -> i32 {
        self.atomic_i32(index).fetch_add(delta, Ordering::AcqRel)
    }

    pub fn load_u64(&self, index: usize, order: Ordering) -> u64 {
        self.atomic_u64(index).load(order)
    }

    pub fn store_u64(&self, index: usize, value: u64, order: Ordering) {
        self.atomic_u64(index).store(value, order)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_writes_through_atomics_within_bounds() {
        let mut words = vec![0u64; 4];
        // SAFETY: `words` outlives the view and is 8-aligned.
        let v = unsafe { SharedView::new(words.as_mut_ptr().cast(), 4, ElementKind::BigUint64) }
            .unwrap();
        v.store_u64(3, 7, Ordering::Relaxed);
        assert_eq!(v.load_u64(3, Ordering::Relaxed), 7);
        let r = std::panic::catch_unwind(|| v.load_u64(4, Ordering::Relaxed));
        assert!(r.is_err(), "index 4 of 4 must be refused");
        assert_eq!(words[3], 7);
    }

    #[test]
    fn misaligned_pointer_is_refused() {
        let mut words = vec![0u32; 4];
        let p = words.as_mut_ptr().cast::<u8>();
        // SAFETY: the pointer is never used: construction fails on alignment.
        let v = unsafe { SharedView::new(p.add(1), 2, ElementKind::Int32) };
        assert!(v.is_none());
    }
}
