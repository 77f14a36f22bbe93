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
//! Copies of a moved buffer's bytes: at most one, into the frame, on the sending thread, which
//! then detaches the sender's ArrayBuffer (`napi_detach_arraybuffer`, as postMessage detaches
//! what it moves). On the receiving thread each moved buffer becomes an external ArrayBuffer over
//! its place in the frame (`napi_create_external_arraybuffer`): no copy. The frame is shared
//! (`Frame`, refcounted) and freed once the last holder goes, or kept for a later message (a
//! bounded bin of large frames: new memory of that size costs more than the copy). V8's bytes
//! are copied into a Buffer of their own (they are read once, at once). Node-API cannot take the
//! memory of an ArrayBuffer JavaScript made, hence the one copy.
//!
//! A received buffer moved on is not copied: `LIVE` knows every external ArrayBuffer made here
//! by its address and length, so the sender finds its region (frame, offset, length), detaches
//! the ArrayBuffer and puts the region in the message beside the frame (`Cloned::kept`, its
//! place in the frame left empty); the receiver takes the regions once and makes its external
//! ArrayBuffers over them. A frame lives while any live ArrayBuffer (its `LIVE` entry) or any
//! message holds a region of it.

use super::{napi_try, view_for_call, Converted};
use crate::rpc::value::{Cloned, Kept};
use napi::sys;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::ops::Range;
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};
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

/// A received frame's memory, shared by the external ArrayBuffers made over it and by the
/// messages that hand parts of it on; it goes back to the bin (or is freed) when the last of
/// them goes. Its bytes are only ever reached through `data`, never through a Rust reference:
/// JavaScript writes them through the ArrayBuffers.
struct Frame {
    data: *mut u8,
    len: usize,
    capacity: usize,
}

// SAFETY: a Frame owns its allocation (a Vec taken apart) and only hands out its address; who
// writes through that address is the one JavaScript thread whose ArrayBuffer holds the region,
// and a region changes threads only inside a message (channel hand-over, which orders memory).
unsafe impl Send for Frame {}
// SAFETY: as for Send: no method reads or writes the bytes.
unsafe impl Sync for Frame {}

impl Frame {
    fn new(frame: Vec<u8>) -> std::sync::Arc<Frame> {
        let mut frame = std::mem::ManuallyDrop::new(frame);
        std::sync::Arc::new(Frame {
            data: frame.as_mut_ptr(),
            len: frame.len(),
            capacity: frame.capacity(),
        })
    }
}

impl Drop for Frame {
    fn drop(&mut self) {
        // SAFETY: the parts of the Vec taken apart in Frame::new; the last reference is gone, so
        // no ArrayBuffer or message reaches the memory any more (a live ArrayBuffer's entry in
        // LIVE or a message's Region holds one each).
        let frame = unsafe { Vec::from_raw_parts(self.data, self.len, self.capacity) };
        recycle(frame);
    }
}

/// A moved buffer's memory: `len` (> 0) bytes at `start` of `frame`.
#[derive(Clone)]
struct Region {
    frame: std::sync::Arc<Frame>,
    start: usize,
    len: usize,
}

impl Region {
    fn address(&self) -> usize {
        self.frame.data as usize + self.start
    }
}

/// The moved buffers a message hands on uncopied, each with its index among the message's
/// moved buffers; taken once by the receiver (a region is never handed out twice).
struct KeptRegions(Mutex<Option<Vec<(usize, Region)>>>);

/// Live external ArrayBuffers made by [`frame_to_js`], by the address of their memory: each
/// holds its region (so its frame) until its finalizer runs, or until a message moves the
/// region on (`frame_from_js`). No two live ArrayBuffers have the same address: a region is
/// handed to one ArrayBuffer at a time, and its memory is not freed while an entry holds it.
static LIVE: Mutex<BTreeMap<usize, Live>> = Mutex::new(BTreeMap::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

struct Live {
    /// Which ArrayBuffer holds it: an entry is only ever removed by its own finalizer or taken
    /// by a message, never an entry of a later ArrayBuffer at the same address.
    id: u64,
    region: Region,
}

/// The finalizer's hint of an external ArrayBuffer over a region.
struct Handed {
    address: usize,
    id: u64,
}

fn live() -> std::sync::MutexGuard<'static, BTreeMap<usize, Live>> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Records that an ArrayBuffer now holds `region`; the id its finalizer hint names.
fn register(region: Region) -> u64 {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let old = live().insert(region.address(), Live { id, region });
    drop(old);
    id
}

/// The live region of corepool's own ArrayBuffer of `length` bytes at `address`, if that is
/// one (with its id); it stays registered.
fn lookup(address: usize, length: usize) -> Option<(u64, Region)> {
    let live = live();
    let found = live.get(&address)?;
    (found.region.len == length).then(|| (found.id, found.region.clone()))
}

/// Drops the entry `id` at `address` (its ArrayBuffer was finalized, or detached and its
/// region moved on); an entry of a later ArrayBuffer there is left alone.
fn forget(address: usize, id: u64) {
    let mut live = live();
    let gone = match live.get(&address) {
        Some(found) if found.id == id => live.remove(&address),
        _ => None,
    };
    drop(live);
    // The frame may be recycled here, outside the lock.
    drop(gone);
}

/// The message lib/clone.js made (`[bytes, ...moved]`): V8's bytes and each moved ArrayBuffer
/// copied once into the frame, except an ArrayBuffer corepool itself handed over (an external
/// one over an earlier frame, see [`frame_to_js`]), whose region the message takes as it is;
/// then, and only once all is copied, each moved ArrayBuffer is detached. `what` names the
/// message in errors.
///
/// # Safety
/// On `env`'s JS thread, with `parts` a value of env.
pub unsafe fn frame_from_js(
    env: sys::napi_env,
    parts: sys::napi_value,
    what: &str,
) -> Converted<Cloned> {
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
    // Corepool's own buffers among them: index, entry id, region.
    let mut own: Vec<(usize, u64, Region)> = Vec::new();
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
        let mut detached = false;
        napi_try!(
            env,
            sys::napi_is_detached_arraybuffer(env, item, &mut detached),
            "checking a moved buffer"
        );
        if detached {
            return Err(format!("{what}: moved item {i} is a detached ArrayBuffer"));
        }
        let mut data: *mut c_void = ptr::null_mut();
        let mut length = 0usize;
        napi_try!(
            env,
            sys::napi_get_arraybuffer_info(env, item, &mut data, &mut length),
            "reading a moved buffer"
        );
        if data.is_null() || length == 0 {
            moved.push(&[]);
            continue;
        }
        if let Some((id, region)) = lookup(data as usize, length) {
            // The same memory listed twice would be handed out twice.
            if own.iter().any(|(_, other, _)| *other == id) {
                return Err(format!("{what}: moved item {i} is listed twice"));
            }
            own.push((i, id, region));
            moved.push(&[]);
            continue;
        }
        // SAFETY: an ArrayBuffer's `length` bytes at `data`, valid until it is detached or
        // collected: `item` is on this callback's handle scope, and no JavaScript runs and
        // nothing detaches it before the frame is written below.
        moved.push(unsafe { std::slice::from_raw_parts(data.cast::<u8>(), length) });
    }
    let frame = write_frame(v8, &moved).ok_or_else(|| format!("no memory to copy {what}"))?;
    drop(moved);
    let mut kept = Vec::with_capacity(own.len());
    let mut own = own.into_iter().peekable();
    for (i, &item) in buffers.iter().enumerate() {
        // Copied or kept: the sender loses it, as postMessage's sender does. A buffer that
        // cannot be detached (a WebAssembly memory's) was copied all the same and stays as it is.
        // SAFETY: live env and a value of it; no slice of it is alive any more.
        unsafe { sys::napi_detach_arraybuffer(env, item) };
        // A failure leaves an exception pending only for a non-ArrayBuffer, excluded above.
        let Some((_, id, region)) = own.next_if(|(at, _, _)| *at == i) else {
            continue;
        };
        let mut detached = false;
        // SAFETY: live env and a value of it.
        unsafe { sys::napi_is_detached_arraybuffer(env, item, &mut detached) };
        if detached {
            // The ArrayBuffer no longer reaches the region: the message holds it instead (its
            // finalizer, later, finds no entry of its own).
            forget(region.address(), id);
            kept.push((i, region));
        } else {
            // Still reachable here (not expected of corepool's own buffers): a copy of its own.
            // SAFETY: the region's bytes, alive (`region` holds its frame), read on the one
            // thread whose ArrayBuffer reaches them while no JavaScript runs.
            let bytes = unsafe {
                std::slice::from_raw_parts(region.frame.data.add(region.start), region.len)
            };
            let mut copy = Vec::new();
            copy.try_reserve_exact(bytes.len())
                .map_err(|_| format!("no memory to copy {what}"))?;
            copy.extend_from_slice(bytes);
            let len = copy.len();
            kept.push((
                i,
                Region {
                    frame: Frame::new(copy),
                    start: 0,
                    len,
                },
            ));
        }
    }
    let kept = (!kept.is_empty()).then(|| {
        Kept(std::sync::Arc::new(Box::new(KeptRegions(Mutex::new(
            Some(kept),
        )))))
    });
    Ok(Cloned { frame, kept })
}

/// Each moved buffer's kept region (None: in the frame itself), taken out of `kept` (a
/// message's kept regions are handed over once), each at an empty place of the head `moved`.
fn take_kept(kept: Option<Kept>, moved: &[Range<usize>]) -> Result<Vec<Option<Region>>, String> {
    let mut regions: Vec<Option<Region>> = vec![None; moved.len()];
    let Some(Kept(kept)) = kept else {
        return Ok(regions);
    };
    let any: &(dyn std::any::Any + Send + Sync) = &**kept;
    let kept = any
        .downcast_ref::<KeptRegions>()
        .ok_or("the cloned message holds foreign parts")?;
    let kept = kept
        .0
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .ok_or("the moved buffers of this message were handed over already")?;
    for (i, region) in kept {
        match (moved.get(i), regions.get_mut(i)) {
            (Some(range), Some(place)) if range.is_empty() && place.is_none() => {
                *place = Some(region)
            }
            _ => return Err("the cloned message's kept buffers do not fit its head".into()),
        }
    }
    Ok(regions)
}

/// Finalizer of an external ArrayBuffer over a region.
unsafe extern "C" fn release_moved(_env: sys::napi_env, _data: *mut c_void, hint: *mut c_void) {
    // SAFETY: `hint` is the Box made for this ArrayBuffer in frame_to_js; Node calls a
    // finalizer once.
    let handed = unsafe { Box::from_raw(hint.cast::<Handed>()) };
    forget(handed.address, handed.id);
}

/// The message lib/clone.js reads, of `message`: V8's bytes copied into a Buffer, which is the
/// message when nothing is moved; else an object `{ bytes, moved }` (never an array: a serving
/// thread tells params arrays from messages that way), `moved` an array of external
/// ArrayBuffers over the frame or over the regions the message kept (no copy).
///
/// # Safety
/// On `env`'s JS thread.
pub unsafe fn frame_to_js(env: sys::napi_env, message: Cloned) -> Converted<sys::napi_value> {
    let Cloned { frame, kept } = message;
    let (moved, v8) = read_frame(&frame).map_err(str::to_string)?;
    let mut regions = take_kept(kept, &moved)?;
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
    let mut parts = ptr::null_mut();
    // `moved.len()` is bounded by the frame's length (read_frame).
    napi_try!(
        env,
        sys::napi_create_array_with_length(env, moved.len(), &mut parts),
        "creating the moved buffers"
    );
    // Defined, not assigned: a setter on Object.prototype does not run (`convert::arrays`).
    let fields = [
        super::data_property(c"bytes".as_ptr(), ptr::null_mut(), bytes),
        super::data_property(c"moved".as_ptr(), ptr::null_mut(), parts),
    ];
    napi_try!(
        env,
        sys::napi_define_properties(env, message, fields.len(), fields.as_ptr()),
        "filling the cloned message"
    );
    // The frame's own buffers share it (it goes when the last of them and of this call's
    // references goes).
    let inline = moved
        .iter()
        .any(|r| !r.is_empty())
        .then(|| Frame::new(frame));
    for (i, range) in moved.iter().enumerate() {
        let region = match (regions[i].take(), &inline) {
            (Some(region), _) => region,
            (None, Some(frame)) if !range.is_empty() => Region {
                frame: frame.clone(),
                start: range.start,
                len: range.len(),
            },
            _ => {
                // An empty buffer of its own: no memory to share, and no finalizer to wait for
                // (V8 may never release an empty external buffer's memory).
                let mut buffer = ptr::null_mut();
                let mut data = ptr::null_mut();
                napi_try!(
                    env,
                    sys::napi_create_arraybuffer(env, 0, &mut data, &mut buffer),
                    "creating a moved ArrayBuffer"
                );
                // SAFETY: live env on its JS thread (caller contract); `parts` and `buffer`
                // are values of it.
                unsafe { super::define_element(env, parts, i as u32, buffer) }?;
                continue;
            }
        };
        let address = region.address();
        let len = region.len;
        // Registered first: the region (so its frame) is held before any ArrayBuffer reaches it.
        let id = register(region);
        let hint = Box::into_raw(Box::new(Handed { address, id }));
        let mut buffer = ptr::null_mut();
        // SAFETY: live env; `len` bytes at `address` lie within the region's frame (read_frame
        // for the frame's own, frame_from_js for kept ones), alive while LIVE holds the region,
        // and no other ArrayBuffer reaches them (a region is handed to one at a time). Node
        // calls `release_moved` once the ArrayBuffer's memory is released, and not at all when
        // the call fails.
        let status = unsafe {
            sys::napi_create_external_arraybuffer(
                env,
                address as *mut c_void,
                len,
                Some(release_moved),
                hint.cast(),
                &mut buffer,
            )
        };
        if status != sys::Status::napi_ok {
            // SAFETY: the Box made above, never handed to Node.
            drop(unsafe { Box::from_raw(hint) });
            forget(address, id);
            // SAFETY: live env on its JS thread.
            return Err(unsafe { super::failure(env, status, "creating a moved ArrayBuffer") });
        }
        // SAFETY: as above.
        unsafe { super::define_element(env, parts, i as u32, buffer) }?;
    }
    Ok(message)
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

    /// The bin is shared by the tests that look into it.
    static BIN_TESTS: Mutex<()> = Mutex::new(());

    #[test]
    fn kept_frames_are_reused_whole_and_bounded() {
        let _bin = BIN_TESTS.lock().unwrap_or_else(|e| e.into_inner());
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
    fn a_posted_result_names_its_thread_and_no_written_message_looks_like_one() {
        assert_eq!(Cloned::posted(7).posted_by(), Some(7));
        assert_eq!(Cloned::posted(u32::MAX).posted_by(), Some(u32::MAX));
        for (v8, moved) in [
            (&[][..], vec![]),
            (&[0xff, 0x0f][..], vec![]),
            (&[1][..], vec![&[2u8][..]]),
        ] {
            let frame = write_frame(v8, &moved).unwrap();
            assert!(frame.len() >= WORD);
            assert_eq!(Cloned::from(frame).posted_by(), None);
        }
        // What a written message's head says is read, never taken for a thread.
        assert!(read_frame(&Cloned::posted(7).frame).is_err());
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

    const EMPTY: Range<usize> = 0..0;

    fn in_bin(capacity: usize) -> bool {
        let bin = BIN.lock().unwrap();
        bin.frames.iter().any(|f| f.capacity() == capacity)
    }

    #[test]
    fn a_frame_lives_while_any_buffer_or_message_holds_a_region_of_it() {
        let _bin = BIN_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        {
            // Room in the bin (another test fills it).
            let mut bin = BIN.lock().unwrap();
            bin.frames.clear();
            bin.bytes = 0;
        }
        // A capacity no other frame has, to find it in the bin.
        let capacity = BIN_MIN + 4321;
        let mut bytes = Vec::with_capacity(capacity);
        bytes.resize(64, 7u8);
        let frame = Frame::new(bytes);
        let region = |start, len| Region {
            frame: frame.clone(),
            start,
            len,
        };
        // Two live ArrayBuffers over it, then one of them moved on into a message.
        let (a, b) = (region(0, 16), region(16, 16));
        let (a_at, b_at) = (a.address(), b.address());
        let a_id = register(a);
        let b_id = register(b);
        drop(frame);
        assert!(
            lookup(a_at, 8).is_none(),
            "another length is not the same buffer"
        );
        let (found, moved_on) = lookup(a_at, 16).unwrap();
        assert_eq!(found, a_id);
        forget(a_at, a_id);
        assert!(lookup(a_at, 16).is_none());
        let message = Kept(std::sync::Arc::new(Box::new(KeptRegions(Mutex::new(
            Some(vec![(0, moved_on)]),
        )))));
        // The other ArrayBuffer is collected: the message still holds the frame.
        forget(b_at, b_id);
        assert!(!in_bin(capacity));
        // The message is received: a new ArrayBuffer at the same address; the old one's late
        // finalizer (its id) leaves the new entry alone.
        let mut regions = take_kept(Some(message.clone()), std::slice::from_ref(&EMPTY)).unwrap();
        let again = regions[0].take().unwrap();
        assert_eq!(again.address(), a_at);
        let again_id = register(again);
        forget(a_at, a_id);
        assert_eq!(lookup(a_at, 16).map(|(id, _)| id), Some(again_id));
        assert!(!in_bin(capacity));
        // A message's regions are handed over once.
        assert!(take_kept(Some(message), std::slice::from_ref(&EMPTY)).is_err());
        // The last holder goes: the frame goes back to the bin.
        forget(a_at, again_id);
        assert!(in_bin(capacity));
    }

    #[test]
    fn kept_regions_must_fit_empty_places_of_the_head() {
        let frame = Frame::new(vec![1u8; 32]);
        let kept = |i: usize| {
            let region = Region {
                frame: frame.clone(),
                start: 0,
                len: 8,
            };
            Some(Kept(std::sync::Arc::new(Box::new(KeptRegions(
                Mutex::new(Some(vec![(i, region)])),
            )))))
        };
        assert!(
            take_kept(kept(1), std::slice::from_ref(&EMPTY)).is_err(),
            "beyond the head"
        );
        assert!(
            take_kept(kept(0), std::slice::from_ref(&(8..16))).is_err(),
            "a place the frame fills"
        );
        let foreign = Some(Kept(std::sync::Arc::new(Box::new(5u8))));
        assert!(take_kept(foreign, std::slice::from_ref(&EMPTY)).is_err());
        let fits = take_kept(kept(1), &[8..16, 16..16]).unwrap();
        assert!(fits[0].is_none() && fits[1].as_ref().map(|r| r.len) == Some(8));
        drop(fits);
        assert_eq!(std::sync::Arc::strong_count(&frame), 1);
    }
}
