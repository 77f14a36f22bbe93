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
//!
//! Bulk copies ([`SharedView::load_bytes`], [`SharedView::store_bytes`]) use `Relaxed` 8-byte
//! atomics on the 8-aligned middle of a range and 1-byte atomics on its ends. JavaScript code may
//! touch the same bytes with accesses of another size; the JS memory model defines such
//! mixed-size races (a racing reader may see a torn value, nothing worse) and V8's own copies
//! into SharedArrayBuffers work the same way. Ordering between threads comes from a lock word or
//! from the pool's job hand-off (submit and settle are release/acquire), not from these copies.

use super::error::Error;
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

    /// Size of the view in bytes.
    pub fn byte_len(&self) -> usize {
        self.len * self.kind.size()
    }

    /// A view of `len` elements of `kind` starting `byte_offset` bytes into this view's memory,
    /// or `None` when that range leaves this view or is misaligned for `kind`. The sub-view is
    /// bound by the lifetime promise of the view it came from.
    pub fn sub_view(
        &self,
        byte_offset: usize,
        len: usize,
        kind: ElementKind,
    ) -> Option<SharedView> {
        let end = len.checked_mul(kind.size())?.checked_add(byte_offset)?;
        if end > self.byte_len() {
            return None;
        }
        // SAFETY: [byte_offset, end) lies inside this view's memory, which is valid for reads and
        // writes for as long as this view (and so anything derived from it) is used; `new`
        // checks the alignment.
        unsafe { SharedView::new(self.ptr.as_ptr().add(byte_offset), len, kind) }
    }

    /// The view's memory as an ordinary byte slice, for memory that only the calling thread
    /// can reach: an ordinary (not shared) ArrayBuffer during a Node-API callback on its JS
    /// thread. Shared memory must never be seen through a slice: use the atomic accessors.
    ///
    /// # Safety
    /// While the slice lives, no other thread may read or write the memory, and the memory
    /// must stay valid (no detach, no free).
    pub unsafe fn unshared_bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: the constructor contract makes [ptr, ptr + byte_len) valid for reads and
        // writes; the caller promises exclusive access for the slice's lifetime.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.byte_len()) }
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

    #[inline]
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

    #[inline]
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

    #[inline]
    fn atomic_i32(&self, index: usize) -> &AtomicI32 {
        self.check(index, &[ElementKind::Int32, ElementKind::Uint32]);
        // SAFETY: index < len, the element lies inside the view's memory, valid by the
        // constructor contract; ptr is 4-aligned (checked in new) so ptr + 4·index is too.
        unsafe { &*(self.ptr.as_ptr().add(index * 4) as *const AtomicI32) }
    }

    #[inline]
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
    #[inline]
    pub fn load_u8(&self, index: usize, order: Ordering) -> u8 {
        self.atomic_u8(index).load(order)
    }

    #[inline]
    pub fn store_u8(&self, index: usize, value: u8, order: Ordering) {
        self.atomic_u8(index).store(value, order)
    }

    #[inline]
    pub fn load_i32(&self, index: usize, order: Ordering) -> i32 {
        self.atomic_i32(index).load(order)
    }

    #[inline]
    pub fn store_i32(&self, index: usize, value: i32, order: Ordering) {
        self.atomic_i32(index).store(value, order)
    }

    #[inline]
    pub fn compare_exchange_i32(&self, index: usize, current: i32, new: i32) -> Result<i32, i32> {
        self.atomic_i32(index)
            .compare_exchange(current, new, Ordering::AcqRel, Ordering::Acquire)
    }

    #[inline]
    pub fn fetch_add_i32(&self, index: usize, delta: i32) -> i32 {
        self.atomic_i32(index).fetch_add(delta, Ordering::AcqRel)
    }

    #[inline]
    pub fn load_u64(&self, index: usize, order: Ordering) -> u64 {
        self.atomic_u64(index).load(order)
    }

    #[inline]
    pub fn store_u64(&self, index: usize, value: u64, order: Ordering) {
        self.atomic_u64(index).store(value, order)
    }

    /// Panics unless bytes `[offset, offset + n)` lie inside the view.
    #[inline]
    fn check_bytes(&self, offset: usize, n: usize) {
        let fits = offset
            .checked_add(n)
            .is_some_and(|end| end <= self.byte_len());
        assert!(
            fits,
            "bytes {offset}..{offset}+{n} out of bounds for a view of {} bytes",
            self.byte_len()
        );
    }

    /// Copies `out.len()` bytes starting at byte `offset` of the view into `out` (relaxed
    /// atomics, whatever the element type). Panics when the range leaves the view.
    pub fn load_bytes(&self, offset: usize, out: &mut [u8]) {
        self.check_bytes(offset, out.len());
        // SAFETY: the range was checked to lie inside the view's valid memory.
        let (head, words, tail) = unsafe { self.split_aligned(offset, out.len()) };
        let (out_head, rest) = out.split_at_mut(head.len());
        let (out_words, out_tail) = rest.split_at_mut(words.len() * 8);
        for (o, b) in out_head.iter_mut().zip(head) {
            *o = b.load(Ordering::Relaxed);
        }
        for (o, w) in out_words.chunks_exact_mut(8).zip(words) {
            o.copy_from_slice(&w.load(Ordering::Relaxed).to_ne_bytes());
        }
        for (o, b) in out_tail.iter_mut().zip(tail) {
            *o = b.load(Ordering::Relaxed);
        }
    }

    /// Copies `src` into the view starting at byte `offset` (relaxed atomics, whatever the
    /// element type). Panics when the range leaves the view.
    pub fn store_bytes(&self, offset: usize, src: &[u8]) {
        self.check_bytes(offset, src.len());
        // SAFETY: the range was checked to lie inside the view's valid memory.
        let (head, words, tail) = unsafe { self.split_aligned(offset, src.len()) };
        let (src_head, rest) = src.split_at(head.len());
        let (src_words, src_tail) = rest.split_at(words.len() * 8);
        for (s, b) in src_head.iter().zip(head) {
            b.store(*s, Ordering::Relaxed);
        }
        for (s, w) in src_words.chunks_exact(8).zip(words) {
            let word = u64::from_ne_bytes(s.try_into().expect("chunks of 8"));
            w.store(word, Ordering::Relaxed);
        }
        for (s, b) in src_tail.iter().zip(tail) {
            b.store(*s, Ordering::Relaxed);
        }
    }

    /// Splits bytes `[offset, offset + n)` into unaligned leading bytes, 8-aligned words and
    /// trailing bytes, as atomics.
    ///
    /// # Safety
    /// The range must lie inside the view (see [`SharedView::check_bytes`]).
    unsafe fn split_aligned(
        &self,
        offset: usize,
        n: usize,
    ) -> (&[AtomicU8], &[AtomicU64], &[AtomicU8]) {
        // SAFETY: the caller promises offset + n <= byte_len, so `start` stays inside the view.
        let start = unsafe { self.ptr.as_ptr().add(offset) };
        let head_len = start.align_offset(8).min(n);
        let word_count = (n - head_len) / 8;
        let tail_len = n - head_len - word_count * 8;
        // SAFETY: the three ranges tile [start, start + n), which is valid shared memory for the
        // view's lifetime (constructor contract). Atomic types have the size of the integers
        // they wrap; a non-empty `words` starts 8-aligned (align_offset), as AtomicU64 requires.
        // Only shared references to atomics are formed, so concurrent access by other threads
        // is not a data race.
        unsafe {
            let head = std::slice::from_raw_parts(start as *const AtomicU8, head_len);
            let words_at = start.add(head_len);
            // An empty slice still needs an aligned pointer, and `words_at` is only aligned
            // when the range reaches an 8-byte boundary.
            let words: &[AtomicU64] = if word_count == 0 {
                &[]
            } else {
                std::slice::from_raw_parts(words_at as *const AtomicU64, word_count)
            };
            let tail_at = words_at.add(word_count * 8);
            let tail = std::slice::from_raw_parts(tail_at as *const AtomicU8, tail_len);
            (head, words, tail)
        }
    }
}

/// One Int32 element of shared memory: the word a mutex or a semaphore lives on.
#[derive(Clone, Debug)]
pub struct SharedWord {
    view: SharedView,
    index: usize,
}

impl SharedWord {
    /// Element `index` of `view`, which must be an Int32Array. `what` names the caller in the
    /// error message (e.g. `"Mutex"`).
    pub fn new(what: &str, view: SharedView, index: usize) -> Result<SharedWord, Error> {
        if view.kind() != ElementKind::Int32 {
            return Err(Error::new(format!(
                "{what}: expected an Int32Array over a SharedArrayBuffer, got {}",
                view.kind().js_name()
            )));
        }
        if index >= view.len() {
            return Err(Error::new(format!(
                "{what}: index {index} is out of range for an Int32Array of length {}",
                view.len()
            )));
        }
        Ok(SharedWord { view, index })
    }

    #[inline]
    pub fn load(&self, order: Ordering) -> i32 {
        self.view.load_i32(self.index, order)
    }

    #[inline]
    pub fn store(&self, value: i32, order: Ordering) {
        self.view.store_i32(self.index, value, order)
    }

    /// Compare-and-swap: `AcqRel` on success, `Acquire` on failure.
    #[inline]
    pub fn compare_exchange(&self, current: i32, new: i32) -> Result<i32, i32> {
        self.view.compare_exchange_i32(self.index, current, new)
    }

    /// The word's address: the same in every thread of the process.
    pub fn address(&self) -> usize {
        self.view.ptr.as_ptr() as usize + self.index * 4
    }
}

/// A run of consecutive Int32 elements of shared memory: the words of a lock that needs more
/// than one (a reentrant mutex's owner and count, a fair mutex's tickets and slots).
///
/// Every operation is sequentially consistent. The lock protocols built on these words share
/// them with JavaScript, whose `Atomics` are all sequentially consistent, and some of them rely
/// on it: a store followed by a load of another word must not be reordered (the fair mutex's
/// hand-over races a waiter's withdrawal that way, see `fair_mutex`).
#[derive(Clone, Debug)]
pub struct SharedWords {
    view: SharedView,
}

impl SharedWords {
    /// Elements `index .. index + count` of `view`, which must be an Int32Array holding them all.
    /// `what` names the caller in the error message (e.g. `"FairMutex"`).
    pub fn new(
        what: &str,
        view: &SharedView,
        index: usize,
        count: usize,
    ) -> Result<SharedWords, Error> {
        let first = SharedWord::new(what, view.clone(), index)?;
        let fits = index
            .checked_add(count)
            .is_some_and(|end| end <= first.view.len());
        if !fits {
            return Err(Error::new(format!(
                "{what}: index {index} leaves room for {} of the {count} Int32 elements it needs (the array has {})",
                first.view.len() - index,
                first.view.len()
            )));
        }
        let words = view
            .sub_view(index * 4, count, ElementKind::Int32)
            .expect("checked: the words lie inside the view");
        Ok(SharedWords { view: words })
    }

    /// How many words.
    pub fn len(&self) -> usize {
        self.view.len()
    }

    pub fn is_empty(&self) -> bool {
        self.view.is_empty()
    }

    /// The address of the first word: the same in every thread of the process, so it orders
    /// locks the same way everywhere (`lock_all`).
    pub fn address(&self) -> usize {
        self.view.ptr.as_ptr() as usize
    }

    #[inline]
    pub fn load(&self, i: usize) -> i32 {
        self.view.load_i32(i, Ordering::SeqCst)
    }

    #[inline]
    pub fn store(&self, i: usize, value: i32) {
        self.view.store_i32(i, value, Ordering::SeqCst)
    }

    #[inline]
    pub fn swap(&self, i: usize, value: i32) -> i32 {
        self.view.atomic_i32(i).swap(value, Ordering::SeqCst)
    }

    /// Wrapping add, as `Atomics.add` does on an Int32Array; returns the value before.
    #[inline]
    pub fn fetch_add(&self, i: usize, delta: i32) -> i32 {
        self.view.atomic_i32(i).fetch_add(delta, Ordering::SeqCst)
    }

    /// Sets the bits of `bits`, as `Atomics.or` does; returns the value before.
    #[inline]
    pub fn fetch_or(&self, i: usize, bits: i32) -> i32 {
        self.view.atomic_i32(i).fetch_or(bits, Ordering::SeqCst)
    }

    /// Keeps only the bits of `bits`, as `Atomics.and` does; returns the value before.
    #[inline]
    pub fn fetch_and(&self, i: usize, bits: i32) -> i32 {
        self.view.atomic_i32(i).fetch_and(bits, Ordering::SeqCst)
    }

    #[inline]
    pub fn compare_exchange(&self, i: usize, current: i32, new: i32) -> Result<i32, i32> {
        self.view
            .atomic_i32(i)
            .compare_exchange(current, new, Ordering::SeqCst, Ordering::SeqCst)
    }
}

/// Test memory that lives for the rest of the process, so views of it can go to any thread.
#[cfg(test)]
pub(crate) fn leaked_view(bytes: usize, kind: ElementKind) -> SharedView {
    let words: &'static mut [u64] = Box::leak(vec![0u64; bytes.div_ceil(8)].into_boxed_slice());
    // SAFETY: leaked memory is valid forever, 8-aligned, and at least `bytes` long.
    unsafe { SharedView::new(words.as_mut_ptr().cast(), bytes / kind.size(), kind) }
        .expect("leaked memory is aligned")
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

    fn byte_view(bytes: &mut [u64]) -> SharedView {
        let n = bytes.len() * 8;
        // SAFETY: the test's buffer outlives the view.
        unsafe { SharedView::new(bytes.as_mut_ptr().cast(), n, ElementKind::Uint8) }.unwrap()
    }

    #[test]
    fn bulk_copies_round_trip_at_every_offset_and_length() {
        let mut backing = vec![0u64; 8];
        let v = byte_view(&mut backing);
        for offset in 0..20 {
            for n in 0..40 {
                let src: Vec<u8> = (0..n).map(|i| (i * 7 + offset + 1) as u8).collect();
                let before: Vec<u8> = {
                    let mut b = vec![0; 64];
                    v.load_bytes(0, &mut b);
                    b
                };
                v.store_bytes(offset, &src);
                let mut back = vec![0; n];
                v.load_bytes(offset, &mut back);
                assert_eq!(back, src, "offset {offset}, length {n}");
                let mut after = vec![0; 64];
                v.load_bytes(0, &mut after);
                for i in (0..64).filter(|i| !(offset..offset + n).contains(i)) {
                    assert_eq!(after[i], before[i], "byte {i} outside the copy changed");
                }
            }
        }
    }

    #[test]
    fn bulk_copies_refuse_ranges_past_the_end() {
        let mut backing = vec![0u64; 2];
        let v = byte_view(&mut backing);
        let r = std::panic::catch_unwind(|| v.store_bytes(10, &[0; 7]));
        assert!(r.is_err(), "bytes 10..17 of 16 must be refused");
        let r = std::panic::catch_unwind(|| v.load_bytes(usize::MAX, &mut [0; 2]));
        assert!(r.is_err(), "an overflowing range must be refused");
    }

    #[test]
    fn sub_views_stay_inside_and_aligned() {
        let mut backing = vec![0u64; 4];
        let v = byte_view(&mut backing);
        let ints = v.sub_view(4, 3, ElementKind::Int32).unwrap();
        ints.store_i32(2, -5, Ordering::Relaxed);
        let mut b = [0u8; 4];
        v.load_bytes(12, &mut b);
        assert_eq!(i32::from_ne_bytes(b), -5);
        assert!(v.sub_view(2, 1, ElementKind::Int32).is_none(), "misaligned");
        assert!(
            v.sub_view(28, 2, ElementKind::Int32).is_none(),
            "past the end"
        );
        assert!(
            v.sub_view(32, 0, ElementKind::Uint8).is_some(),
            "empty at the end"
        );
    }

    #[test]
    fn a_word_needs_an_int32_view_and_an_index_inside_it() {
        let mut backing = vec![0u64; 2];
        let bytes = byte_view(&mut backing);
        let ints = bytes.sub_view(0, 4, ElementKind::Int32).unwrap();
        let e = SharedWord::new("Mutex", bytes, 0).unwrap_err();
        assert!(e.message.contains("got Uint8Array"), "{}", e.message);
        let e = SharedWord::new("Mutex", ints.clone(), 4).unwrap_err();
        assert!(
            e.message.contains("index 4 is out of range"),
            "{}",
            e.message
        );
        let w = SharedWord::new("Mutex", ints, 3).unwrap();
        assert_eq!(w.compare_exchange(0, 9), Ok(0));
        assert_eq!(w.load(Ordering::Relaxed), 9);
        assert_eq!(
            backing[1].to_ne_bytes()[4..],
            9i32.to_ne_bytes(),
            "element 3: bytes 12..16"
        );
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
