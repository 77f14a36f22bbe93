//! Structured-clone messages (`Params::Cloned`, `Value::Cloned`) as they cross Node-API.
//!
//! lib/clone.js hands a message over as an array of parts: V8's serialized bytes of the value
//! (a Uint8Array) and then the ArrayBuffers it moves, in the order V8 numbered them
//! (`frame_from_js`); the receiver gets it back as `frame_to_js` says. The native side keeps it
//! as one allocation, the frame:
//!
//! ```text
//! u64 LE  n                      how many ArrayBuffers are moved
//! u64 LE  length × n             each one's byte length
//! bytes   each moved buffer      each starting at a multiple of 8 (zero padding before it)
//! bytes   V8's bytes             from the next multiple of 8 to the end
//! ```
//!
//! Copies of a moved buffer's bytes: one, into the frame, on the sending thread, which then
//! detaches the sender's ArrayBuffer (`napi_detach_arraybuffer`, as postMessage detaches what it
//! moves). On the receiving thread each moved buffer becomes an external ArrayBuffer over its
//! place in the frame (`napi_create_external_arraybuffer`): no copy. The frame is freed once the
//! last of them is collected, or kept for a later message (a bounded bin of large frames: new
//! memory of that size costs more than the copy). V8's bytes are copied into a Buffer of their
//! own (they are read once, at once). Node-API cannot take the memory of the sender's
//! ArrayBuffer, hence the one copy.

use super::{napi_try, view_for_call, Converted};
use napi::sys;
use std::ffi::c_void;
use std::ops::Range;
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Bytes of one number of the head.
const WORD: usize = 8;

/// `n` rounded up to a multiple of [`WORD`] (None on overflow).
fn aligned(n: usize) -> Option<usize> {
    n.checked_add(WORD - 1).map(|n| n & !(WORD - 1))
}

/// Frames at least this large whose moved buffers were collected go to [`BIN`] for the next
/// message: a fresh allocation of that size costs more than its copy (new pages the kernel
/// zeroes, measured in bench/heavy-js.js's moved round trip).
const BIN_MIN: usize = 16 * 1024;
/// Frames larger than this are freed, not kept.
const BIN_MAX: usize = 4 * 1024 * 1024;
/// How many frames are kept at most (64 callers × a few frames each in flight, bounded).
const BIN_FRAMES: usize = 64;
/// Bytes of frames kept at most.
const BIN_BYTES: usize = 32 * 1024 * 1024;

/// Frames whose moved buffers were all collected, kept empty (length 0) for the next message.
/// Every byte of a frame taken from here is written again before it is read.
static BIN: Mutex<Bin> = Mutex::new(Bin {
    frames: Vec::new(),
    bytes: 0,
});

struct Bin {
    frames: Vec<Vec<u8>>,
    /// Sum of the kept frames' capacities.
    bytes: usize,
}

/// An empty Vec with room for `size` bytes: a kept frame no more than twice that, else a new
/// allocation (None when there is no memory for it).
fn room_for(size: usize) -> Option<Vec<u8>> {
    if size >= BIN_MIN {
        let mut bin = BIN.lock().unwrap_or_else(|e| e.into_inner());
        let fits = |f: &Vec<u8>| f.capacity() >= size && f.capacity() / 2 <= size;
        if let Some(i) = bin.frames.iter().position(fits) {
            let frame = bin.frames.swap_remove(i);
            bin.bytes -= frame.capacity();
            return Some(frame);
        }
    }
    let mut frame = Vec::new();
    frame.try_reserve_exact(size).ok()?;
    Some(frame)
}

/// Keeps `frame` for a later message when the bin has room for it, else frees it.
fn recycle(mut frame: Vec<u8>) {
    let capacity = frame.capacity();
    if !(BIN_MIN..=BIN_MAX).contains(&capacity) {
        return;
    }
    frame.clear();
    let mut bin = BIN.lock().unwrap_or_else(|e| e.into_inner());
    if bin.frames.len() < BIN_FRAMES && bin.bytes + capacity <= BIN_BYTES {
        bin.bytes += capacity;
        bin.frames.push(frame);
    }
}

/// The frame of V8's bytes `v8` and the moved buffers `moved`, or None when its size overflows
/// or there is no memory for it.
pub fn write_frame(v8: &[u8], moved: &[&[u8]]) -> Option<Vec<u8>> {
    let mut size = moved.len().checked_add(1)?.checked_mul(WORD)?;
    for m in moved {
        size = aligned(size)?.checked_add(m.len())?;
    }
    size = aligned(size)?.checked_add(v8.len())?;
    let mut frame = room_for(size)?;
    frame.extend_from_slice(&(moved.len() as u64).to_le_bytes());
    for m in moved {
        frame.extend_from_slice(&(m.len() as u64).to_le_bytes());
    }
    for m in moved {
        frame.resize(aligned(frame.len())?, 0);
        frame.extend_from_slice(m);
    }
    frame.resize(aligned(frame.len())?, 0);
    frame.extend_from_slice(v8);
    Some(frame)
}

/// Where the moved buffers and V8's bytes are in `frame`, every number of the head checked
/// against the bytes present (a head that claims more than there is is refused before anything
/// is sized by it).
pub fn read_frame(frame: &[u8]) -> Result<(Vec<Range<usize>>, Range<usize>), &'static str> {
    let word = |at: usize| -> Option<u64> {
        let bytes = frame.get(at..at.checked_add(WORD)?)?;
        Some(u64::from_le_bytes(bytes.try_into().ok()?))
    };
    const BAD: &str = "the cloned bytes have a bad head";
    let n = word(0).ok_or("the cloned bytes are cut short")?;
    // Each moved buffer takes a word of the head: `n` is bounded by the bytes present.
    let n = usize::try_from(n).map_err(|_| BAD)?;
    if n > frame.len() / WORD - 1 {
        return Err(BAD);
    }
    let mut at = (n + 1) * WORD;
    let mut moved = Vec::with_capacity(n);
    for i in 0..n {
        let length = word((i + 1) * WORD).ok_or(BAD)?;
        let length = usize::try_from(length).map_err(|_| BAD)?;
        let start = aligned(at).ok_or(BAD)?;
        let end = start.checked_add(length).ok_or(BAD)?;
        if end > frame.len() {
            return Err(BAD);
        }
        moved.push(start..end);
        at = end;
    }
    let start = aligned(at).ok_or(BAD)?;
    if start > frame.len() {
        return Err(BAD);
    }
    Ok((moved, start..frame.len()))
}

/// The frame of a message lib/clone.js made (`[bytes, ...moved]`): V8's bytes and each moved
/// ArrayBuffer copied once; then, and only once all is copied, each moved ArrayBuffer is
/// detached. `what` names the message in errors.
///
/// # Safety
/// On `env`'s JS thread, with `parts` a value of env.
pub unsafe fn frame_from_js(
    env: sys::napi_env,
    parts: sys::napi_value,
    what: &str,
) -> Converted<Vec<u8>> {
    let mut is_array = false;
    napi_try!(
        env,
        sys::napi_is_array(env, parts, &mut is_array),
        "checking the cloned parts"
    );
    let mut count = 0u32;
    if is_array {
        napi_try!(
            env,
            sys::napi_get_array_length(env, parts, &mut count),
            "reading the cloned parts"
        );
    }
    if count == 0 {
        return Err(format!(
            "{what} must be an array of the bytes and the moved buffers"
        ));
    }
    // Every element first: reading one may run JavaScript (a getter), which must not run once
    // slices of the buffers are held. `count` is the length of a real array of this env.
    let mut items = Vec::new();
    for i in 0..count {
        let mut item = ptr::null_mut();
        napi_try!(
            env,
            sys::napi_get_element(env, parts, i, &mut item),
            "reading the cloned parts"
        );
        items.push(item);
    }
    // From here on no JavaScript runs until the frame is written.
    // SAFETY: caller contract; the view is read only within this call.
    let (mut view, shared) = unsafe { view_for_call(env, items[0], what) }?;
    if shared {
        return Err(format!("{what} must not be in a SharedArrayBuffer"));
    }
    // Only read, here and below (made shared at once: a moved buffer could be the same memory).
    // SAFETY: ordinary memory only this JS thread reaches, valid during this call (view_for_call).
    let v8: &[u8] = unsafe { view.unshared_bytes_mut() };
    let buffers = &items[1..];
    let mut moved: Vec<&[u8]> = Vec::with_capacity(buffers.len());
    for (i, &item) in buffers.iter().enumerate() {
        let mut plain = false;
        napi_try!(
            env,
            sys::napi_is_arraybuffer(env, item, &mut plain),
            "checking a moved buffer"
        );
        if !plain {
            return Err(format!("{what}: moved item {i} is not an ArrayBuffer"));
        }
        let mut data: *mut c_void = ptr::null_mut();
        let mut length = 0usize;
        napi_try!(
            env,
            sys::napi_get_arraybuffer_info(env, item, &mut data, &mut length),
            "reading a moved buffer"
        );
        moved.push(if data.is_null() || length == 0 {
            &[]
        } else {
            // SAFETY: an ArrayBuffer's `length` bytes at `data`, valid until it is detached or
            // collected: `item` is on this callback's handle scope, and no JavaScript runs and
            // nothing detaches it before the frame is written below.
            unsafe { std::slice::from_raw_parts(data.cast::<u8>(), length) }
        });
    }
    let frame = write_frame(v8, &moved).ok_or_else(|| format!("no memory to copy {what}"))?;
    drop(moved);
    for &item in buffers {
        // Copied: the sender loses it, as postMessage's sender does. A buffer that cannot be
        // detached (a WebAssembly memory's) was copied all the same and stays as it is.
        // SAFETY: live env and a value of it; no slice of it is alive any more.
        unsafe { sys::napi_detach_arraybuffer(env, item) };
        // A failure leaves an exception pending only for a non-ArrayBuffer, excluded above.
    }
    Ok(frame)
}

/// A frame shared by the external ArrayBuffers made over it: freed when the last one goes.
struct Shared {
    data: *mut u8,
    len: usize,
    capacity: usize,
    /// External ArrayBuffers over this frame not finalized yet.
    refs: AtomicUsize,
}

impl Shared {
    /// Drops one reference; the last one frees the frame.
    ///
    /// # Safety
    /// `this` came from `Box::into_raw` in [`frame_to_js`] and this reference was counted.
    unsafe fn release(this: *mut Shared) {
        // SAFETY: caller contract: the box is alive while a reference is counted.
        let last = unsafe { (*this).refs.fetch_sub(1, Ordering::AcqRel) } == 1;
        if last {
            // SAFETY: the last reference: no ArrayBuffer reaches the frame any more (Node
            // calls the finalizer once the buffer's memory is released, and marks such buffers
            // untransferable, so no other thread holds it). `data`, `len` and `capacity` are
            // the parts of the Vec taken apart in frame_to_js.
            let frame = unsafe {
                let shared = Box::from_raw(this);
                Vec::from_raw_parts(shared.data, shared.len, shared.capacity)
            };
            recycle(frame);
        }
    }
}

/// Finalizer of an external ArrayBuffer over a frame.
unsafe extern "C" fn release_moved(_env: sys::napi_env, _data: *mut c_void, hint: *mut c_void) {
    // SAFETY: `hint` is the frame's Shared, counted for this ArrayBuffer (frame_to_js); Node
    // calls a finalizer once.
    unsafe { Shared::release(hint.cast()) };
}

/// The message lib/clone.js reads, of `frame`: V8's bytes copied into a Buffer, which is the
/// message when nothing is moved; else an object `{ bytes, moved }` (never an array: a serving
/// thread tells params arrays from messages that way), `moved` an array of external
/// ArrayBuffers over the frame (no copy).
///
/// # Safety
/// On `env`'s JS thread.
pub unsafe fn frame_to_js(env: sys::napi_env, frame: Vec<u8>) -> Converted<sys::napi_value> {
    let (moved, v8) = read_frame(&frame).map_err(str::to_string)?;
    let mut bytes = ptr::null_mut();
    let mut data = ptr::null_mut();
    napi_try!(
        env,
        sys::napi_create_buffer_copy(
            env,
            v8.len(),
            frame[v8].as_ptr().cast(),
            &mut data,
            &mut bytes
        ),
        "creating a Buffer"
    );
    if moved.is_empty() {
        return Ok(bytes);
    }
    let mut message = ptr::null_mut();
    napi_try!(
        env,
        sys::napi_create_object(env, &mut message),
        "creating the cloned message"
    );
    napi_try!(
        env,
        sys::napi_set_named_property(env, message, c"bytes".as_ptr(), bytes),
        "filling the cloned message"
    );
    let mut parts = ptr::null_mut();
    // `moved.len()` is bounded by the frame's length (read_frame).
    napi_try!(
        env,
        sys::napi_create_array_with_length(env, moved.len(), &mut parts),
        "creating the moved buffers"
    );
    napi_try!(
        env,
        sys::napi_set_named_property(env, message, c"moved".as_ptr(), parts),
        "filling the cloned message"
    );
    let mut frame = std::mem::ManuallyDrop::new(frame);
    let shared = Box::into_raw(Box::new(Shared {
        data: frame.as_mut_ptr(),
        len: frame.len(),
        capacity: frame.capacity(),
        // One for this function, released at its end: the frame outlives every failure below.
        refs: AtomicUsize::new(1),
    }));
    let made = (|| {
        for (i, range) in moved.iter().enumerate() {
            let mut buffer = ptr::null_mut();
            if range.is_empty() {
                // An empty buffer of its own: no memory to share, and no finalizer to wait for
                // (V8 may never release an empty external buffer's memory).
                let mut data = ptr::null_mut();
                napi_try!(
                    env,
                    sys::napi_create_arraybuffer(env, 0, &mut data, &mut buffer),
                    "creating a moved ArrayBuffer"
                );
                napi_try!(
                    env,
                    sys::napi_set_element(env, parts, i as u32, buffer),
                    "filling the cloned parts"
                );
                continue;
            }
            // SAFETY: the frame is alive while `refs` > 0 and this function holds one.
            unsafe { (*shared).refs.fetch_add(1, Ordering::AcqRel) };
            // SAFETY: `range` lies within the frame (read_frame), which no one else writes:
            // each external ArrayBuffer gets its own range, and they do not overlap.
            let at = unsafe { (*shared).data.add(range.start) };
            // SAFETY: live env; Node calls `release_moved` once the ArrayBuffer is collected,
            // and not at all when the call fails (the reference is taken back below).
            let status = unsafe {
                sys::napi_create_external_arraybuffer(
                    env,
                    at.cast(),
                    range.len(),
                    Some(release_moved),
                    shared.cast(),
                    &mut buffer,
                )
            };
            if status != sys::Status::napi_ok {
                // SAFETY: the reference counted above, never handed to Node.
                unsafe { Shared::release(shared) };
                // SAFETY: live env on its JS thread.
                return Err(unsafe { super::failure(env, status, "creating a moved ArrayBuffer") });
            }
            napi_try!(
                env,
                sys::napi_set_element(env, parts, i as u32, buffer),
                "filling the cloned parts"
            );
        }
        Ok(message)
    })();
    // SAFETY: this function's own reference, counted at creation.
    unsafe { Shared::release(shared) };
    made
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_with_aligned_buffers() {
        let a = [1u8, 2, 3];
        let b = [9u8; 17];
        let frame = write_frame(b"v8 bytes", &[&a, &[], &b]).unwrap();
        let (moved, v8) = read_frame(&frame).unwrap();
        assert_eq!(moved.len(), 3);
        assert_eq!(&frame[moved[0].clone()], &a);
        assert!(moved[1].is_empty());
        assert_eq!(&frame[moved[2].clone()], &b);
        assert_eq!(&frame[v8.clone()], b"v8 bytes");
        for r in moved.iter().chain([&v8]) {
            assert_eq!(r.start % WORD, 0);
        }
        let plain = write_frame(b"xyz", &[]).unwrap();
        assert_eq!(read_frame(&plain).unwrap(), (vec![], 8..11));
    }

    #[test]
    fn kept_frames_are_reused_whole_and_bounded() {
        let big = vec![5u8; 100_000];
        let first = write_frame(b"a", &[&big]).unwrap();
        recycle(first);
        // A smaller message that still fits in half of it reuses it; what is read is rewritten.
        let small = vec![6u8; 60_000];
        let second = write_frame(b"bc", &[&small]).unwrap();
        let (moved, v8) = read_frame(&second).unwrap();
        assert!(frame_bytes_are(&second, &moved[0], 6));
        assert_eq!(&second[v8], b"bc");
        // Never more than the bound is kept.
        for _ in 0..BIN_FRAMES * 2 {
            recycle(Vec::with_capacity(BIN_MIN));
        }
        let bin = BIN.lock().unwrap();
        assert!(bin.frames.len() <= BIN_FRAMES && bin.bytes <= BIN_BYTES);
        assert!(bin.frames.iter().all(|f| f.is_empty()));
    }

    fn frame_bytes_are(frame: &[u8], range: &Range<usize>, byte: u8) -> bool {
        frame[range.clone()].iter().all(|&b| b == byte)
    }

    #[test]
    fn hostile_heads_are_refused() {
        // Too short for a head.
        assert!(read_frame(&[]).is_err());
        assert!(read_frame(&[1, 0, 0]).is_err());
        // A count of buffers larger than the bytes could hold (never sizes anything).
        let mut huge = u64::MAX.to_le_bytes().to_vec();
        huge.extend_from_slice(&[0; 64]);
        assert!(read_frame(&huge).is_err());
        let mut many = (1u64 << 40).to_le_bytes().to_vec();
        many.extend_from_slice(&[0; 64]);
        assert!(read_frame(&many).is_err());
        // One buffer claiming more bytes than there are, or a length that overflows.
        for length in [9u64, u64::MAX, u64::MAX - 7, 1 << 62] {
            let mut frame = 1u64.to_le_bytes().to_vec();
            frame.extend_from_slice(&length.to_le_bytes());
            frame.extend_from_slice(&[0; 8]);
            assert!(read_frame(&frame).is_err(), "length {length}");
        }
        // The exact fit is accepted (the V8 bytes are then empty).
        let mut fit = 1u64.to_le_bytes().to_vec();
        fit.extend_from_slice(&8u64.to_le_bytes());
        fit.extend_from_slice(&[7; 8]);
        let (moved, v8) = read_frame(&fit).unwrap();
        assert_eq!((moved.len(), moved[0].clone(), v8), (1, 16..24, 24..24));
    }

    #[test]
    fn random_heads_never_panic() {
        // A small deterministic generator: every frame of a few words, some of them valid.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let len = (state % 48) as usize;
            let bytes: Vec<u8> = (0..len)
                .map(|i| (state >> (i % 8 * 8)) as u8 % 24)
                .collect();
            if let Ok((moved, v8)) = read_frame(&bytes) {
                for r in moved.iter().chain([&v8]) {
                    assert!(r.start <= r.end && r.end <= bytes.len());
                }
            }
        }
    }
}
