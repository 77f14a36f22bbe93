//! The contract between the JavaScript side (`lib/`) and this addon: every name, code, flag,
//! limit and shared-memory layout both sides use is defined once, in Rust, and handed to
//! JavaScript at load ([`contract`]; `lib/native.js` exposes it). `lib/` repeats none of them;
//! the numbers it does hold (spin counts, wait slices, staging sizes, `lockAll`'s bound) are
//! JavaScript's own tuning, which no Rust code reads.
//!
//! The flat arrays that cross the boundary are documented where they are built: the settle
//! batch in `channel/settle.rs` (and `Channel::new`), the serving thread's job batch in
//! `serve.rs` (`batch_to_js`).

use super::convert::from_js::MAX_VALUES;
use super::convert::List;
use super::shm::MAX_RING_CAPACITY;
use crate::pool::{Strategy, MAX_NICE_INCREMENT, MAX_THREADS};
use crate::rpc::{packed, ErrorCode};
use crate::shm::{agent, fair_mutex, mutex, owned_mutex, reentrant_mutex, ring};
use napi_derive::napi;

/// `flags` bit of the hot call function: the call carries an AbortSignal (keep its control).
pub(crate) const CALL_CANCELLABLE: u32 = 1;
/// `flags` bit of the hot call function: the params array is packed (`rpc::packed`): `params`
/// is the text, the 6th argument the tape.
pub(crate) const CALL_PACKED: u32 = 2;
/// `flags` bit of the hot call function: the caller listens to the call's progress.
pub(crate) const CALL_PROGRESS: u32 = 4;
/// `flags` bit of the hot call function: the call (`pool.render`, of the native command
/// `render`) may hold functions; the call function then returns `[functions, objects]`, what
/// `finishRender` needs (see `bindings/render/`), or undefined when it held none.
pub(crate) const CALL_FUNCTIONS: u32 = 8;
/// `flags` bit of the hot call function, with `CALL_PACKED`: every UTF-16 unit of the text is
/// ≤ 0xFF, so it is read as Latin-1 (a copy of V8's one-byte string, half the bytes of UTF-16).
pub(crate) const CALL_PACKED_LATIN1: u32 = 16;
/// `flags` bit of the hot call function, with `CALL_PACKED`: `params` is the first param, a
/// string read as it is, and the 7th argument the text of the others (see `rpc::packed`).
pub(crate) const CALL_PACKED_AFTER_STRING: u32 = 32;
/// `flags` bit of the hot call function, with `CALL_PACKED_AFTER_STRING`: every UTF-16 unit of
/// the first param is ≤ 0xFF, so it is read as Latin-1 (a copy, where reading it as UTF-8 makes
/// V8 transcode it).
pub(crate) const CALL_FIRST_LATIN1: u32 = 64;
/// `flags` bit of the hot call function: the 8th argument is the caller's trace context, a
/// string (W3C `traceparent`, then a line feed and `tracestate` when there is one), which a
/// JavaScript-served method gets with its job (`serve.rs`, `batch_to_js`); native commands
/// ignore it.
pub(crate) const CALL_TRACED: u32 = 128;
/// `flags` bit of the hot call function: `params` is the parts of a structured-clone message
/// (lib/clone.js: V8's bytes of the whole params array, then the ArrayBuffers it moves), for a
/// method served by JavaScript; they cross opaquely as one frame and the regions of earlier
/// frames moved on uncopied (`Params::Cloned`, `convert::cloned`).
pub(crate) const CALL_CLONED: u32 = 256;
/// `flags` bit of the hot call function: the call is observed (a `diagnostics_channel`
/// subscriber has its context, lib/channels.js): when a thread runs it, a [`RAN`] entry with
/// that thread and the job's queue wait and run time comes before its settlement.
pub(crate) const CALL_TIMED: u32 = 512;
/// `flags` bit of the hot call function: `params` is the whole params array, for a method served
/// by JavaScript, to be posted to the serving thread as `postMessage` clones it (shared memory
/// shared): it holds shared memory beside values only structured clone carries, which neither
/// V8's bytes (no shared memory) nor the native conversion (no Date, Map…) can carry. It
/// travels as a job's views do (`Params::Posted`): kept by the caller until the call settles,
/// published to the serving thread the job is placed on (lib/views.js).
pub(crate) const CALL_POSTED: u32 = 1024;
/// `flags` bit of the hot call function: a method served by JavaScript runs alone on its serving
/// thread: it starts only once no other handler runs there, and none starts beside it until it
/// is done (`pool::server`, a server with `concurrency` above 1). corepool/piscina's tasks
/// with a `signal`, as Piscina runs them: aborting one ends its worker, and nothing else is lost.
pub(crate) const CALL_ALONE: u32 = 2048;
/// How the render helper `write` (lib/render.js) makes a tag's text of a value: `'' + value`;
/// `String(value)`, which the addon then escapes as HTML; `'' + escape(value)`.
pub(crate) const RENDER_WRITE_RAW: u32 = 0;
pub(crate) const RENDER_WRITE_HTML: u32 = 1;
pub(crate) const RENDER_WRITE_ESCAPE: u32 = 2;
/// A `writeRun` entry that is a section's function, its lambda called at once (its 4th number
/// the index of its raw text among the run's `raws`, or -1).
pub(crate) const RENDER_WRITE_SECTION: u32 = 3;
/// What the render helper `section` (lib/render.js) returned, as it says in its `returned`
/// word: the section function's result, or (the function returned a lambda) the lambda's
/// output.
pub(crate) const RENDER_SECTION_VALUE: i32 = 1;
pub(crate) const RENDER_SECTION_LAMBDA: i32 = 2;
/// The render helper `writeRun` (lib/render.js) stops once its texts are longer together
/// than this many UTF-16 units: what functions return is checked against JavaScript's longest
/// string every so much, not only once all of a run's functions were called.
pub(crate) const RENDER_RUN_TEXT_MAX: u32 = 1 << 20;
/// Settle code of a result handed over as JSON text (code 0: the value itself).
pub(crate) const RESULT_AS_JSON: i32 = 1;
/// Code of a settle-batch entry that reports a call's progress (the call does not settle).
pub(crate) const PROGRESS: i32 = 2;
/// Settle code of a small Buffer result (render's `output: 'buffer'`) handed over as a slice of
/// a Buffer that other small results of the same batch share: the value is that Buffer, the
/// data `start * SLICE_SPAN + length`. One allocation for many results is what makes small
/// Buffers cheap, as Node's own pool does for `Buffer.from` under 4 KiB. (A small result that
/// would have a shared Buffer to itself is handed over as that Buffer, with code 0.)
pub(crate) const RESULT_SLICE: i32 = 3;
/// Settle code of a result a JavaScript handler sent as structured clone (`Value::Cloned`):
/// the value is the message's parts (`convert::cloned`), which lib/clone.js turns back into
/// values.
pub(crate) const RESULT_CLONED: i32 = 4;
/// Code of a settle-batch entry that tells how an observed call (`CALL_TIMED`) ran; the call
/// does not settle: its settlement follows. The value is `[thread, waitMs, runMs]`: the id of
/// the thread that ran it (a native worker's `id` in `stats().workers`, a serving thread's
/// `threadId`), its queue wait and its run time in milliseconds.
pub(crate) const RAN: i32 = 5;
/// Settle code of a result a JavaScript handler posted on its caller's message port, under the
/// call's id (`NativeServer::complete_posted`); the value is the posting thread's id, whose
/// port lib/posted.js reads.
pub(crate) const RESULT_POSTED: i32 = 6;
/// Buffer results shorter than this are sliced (Node pools Buffers under half its 8 KiB pool).
pub(crate) const SLICE_MAX: usize = 4096;
/// The most bytes one shared Buffer holds, so that a slice kept alive keeps at most this much.
pub(crate) const SLAB_BYTES: usize = 32 * 1024;
/// `data` of a [`RESULT_SLICE`] entry packs the start and length in one number: both are below
/// this.
pub(crate) const SLICE_SPAN: u32 = 1 << 16;
const _: () = assert!(SLICE_MAX <= SLAB_BYTES);
const _: () = assert!(SLAB_BYTES <= SLICE_SPAN as usize);
/// Params of at least this many plain values travel packed (`rpc::packed`), and results as JSON
/// text, which costs far less than building them value by value through Node-API (params
/// holding an object or array travel packed too, however few: see lib/params.js). The rule
/// that counts them is `json_size` (`channel/settle.rs`) here and `pack` (`lib/params.js`) in
/// JavaScript: values
/// JSON text carries unchanged (finite numbers but -0, strings, booleans, null, plain arrays and
/// objects, nesting under JSON_MAX_DEPTH levels); anything else counts as "not plain".
pub(crate) const JSON_MIN_VALUES: usize = 32;
/// Values nested this deep or deeper are not "plain" for that rule (the JSON text path is
/// for ordinary data; deep values take the value path, which reports cycles precisely).
pub(crate) const JSON_MAX_DEPTH: usize = 64;
/// `NativeServer#rest()` answers: the thread may sleep (wake-ups are on again).
pub(crate) const REST_IDLE: u32 = 0;
/// `NativeServer#rest()` answers: come back after the event loop has had a turn.
pub(crate) const REST_LATER: u32 = 2;

#[napi(object)]
pub struct ErrorCodeInfo {
    pub name: String,
    pub code: i32,
}

#[napi(object)]
pub struct CallFlags {
    pub cancellable: u32,
    pub packed: u32,
    pub packed_latin1: u32,
    pub packed_after_string: u32,
    pub first_latin1: u32,
    pub progress: u32,
    pub functions: u32,
    pub traced: u32,
    pub cloned: u32,
    pub timed: u32,
    pub posted: u32,
    pub alone: u32,
}

/// The tags of a packed-params tape (`rpc::packed`).
#[napi(object)]
pub struct PackedTags {
    pub null: u32,
    pub r#false: u32,
    pub r#true: u32,
    pub number: u32,
    pub string: u32,
    pub array: u32,
    pub object: u32,
    pub object_shape: u32,
    pub shaped: u32,
    pub function: u32,
}

#[napi(object)]
pub struct RenderWriteModes {
    pub raw: u32,
    pub html: u32,
    pub escape: u32,
    pub section: u32,
}

#[napi(object)]
pub struct RenderSectionResults {
    pub value: i32,
    pub lambda: i32,
    /// `writeRun`'s limit (`RENDER_RUN_TEXT_MAX`).
    pub run_text_max: u32,
}

#[napi(object)]
pub struct RestCodes {
    pub idle: u32,
    pub later: u32,
}

/// The lock words' layouts and flags (`src/shm/agent.rs` and the lock modules state them);
/// `lib/shm/` reads every index and bit from here.
#[napi(object)]
pub struct LockLayout {
    /// Set in native agents' ids (they cannot `Atomics.notify`).
    pub native_agent: i32,
    /// Ids are below this; `word & (idLimit - 1)` is a lock word's id part.
    pub id_limit: i32,
    /// OwnedMutex (and a ReentrantMutex's owner word): the "a JS thread may sleep here" flag.
    pub waiters: i32,
    pub owned_words: u32,
    pub reentrant_words: u32,
    /// ReentrantMutex: the word after the owner word holds the count.
    pub reentrant_count: u32,
    pub fair_words: u32,
    pub fair_next: u32,
    pub fair_serving: u32,
    pub fair_owner: u32,
    /// FairMutex: set once a native agent has queued (JavaScript waiters then poll sooner).
    pub fair_native: u32,
    pub fair_slots: u32,
    /// FairMutex: tickets out at most when a waiter that may give up draws one.
    pub fair_span: u32,
    pub fair_marks: u32,
    pub fair_turns: u32,
    /// The largest count an Int32 word holds: a ReentrantMutex's holds, a Semaphore's permits.
    pub max_count: i32,
}

/// The book's mutex word (`src/shm/mutex.rs`): `Mutex`, and a ring buffer's lock word.
#[napi(object)]
pub struct MutexLayout {
    pub unlocked: i32,
    pub locked: i32,
}

/// The book's SharedRingBuffer layout (`src/shm/ring.rs`): `lib/shm/ring-buffer.js` reads
/// every offset from here.
#[napi(object)]
pub struct RingLayout {
    /// Bytes before the data: the header words, Int32 each.
    pub header_bytes: u32,
    /// Int32 index of each header word.
    pub lock: u32,
    pub head: u32,
    pub tail: u32,
    pub length: u32,
    /// The largest capacity in bytes (`shmRing` answers twice the bytes moved in an int32).
    pub max_capacity: u32,
}

/// (Made here, never read back from JavaScript.)
#[napi(object, object_from_js = false)]
pub struct Contract {
    /// The error table (`src/rpc/error.rs`), for `RpcError.codes`.
    pub error_codes: List<ErrorCodeInfo>,
    /// The `strategy` option's names.
    pub strategies: List<String>,
    /// Most threads a pool may have.
    pub max_threads: u32,
    /// Largest `niceIncrement`.
    pub max_nice_increment: u32,
    pub call_flags: CallFlags,
    pub packed_tags: PackedTags,
    pub result_as_json: i32,
    pub progress: i32,
    pub result_slice: i32,
    pub result_cloned: i32,
    pub result_posted: i32,
    pub ran: i32,
    pub slice_span: u32,
    pub json_min_values: u32,
    pub json_max_depth: u32,
    /// Most values the params of one call may hold, on either path.
    pub max_values: u32,
    /// A call this long or longer (ms) is a long one (`pool::origin::LONG_CALL`).
    pub long_call_ms: f64,
    pub rest: RestCodes,
    pub locks: LockLayout,
    pub mutex: MutexLayout,
    pub ring: RingLayout,
    pub render_write: RenderWriteModes,
    pub render_section: RenderSectionResults,
}

/// The contract, once per environment at load.
#[napi]
pub fn contract() -> Contract {
    Contract {
        error_codes: ErrorCode::ALL
            .iter()
            .map(|c| ErrorCodeInfo {
                name: c.name().to_string(),
                code: c.code(),
            })
            .collect(),
        strategies: Strategy::ALL.iter().map(|s| s.name().to_string()).collect(),
        max_threads: MAX_THREADS as u32,
        max_nice_increment: MAX_NICE_INCREMENT,
        call_flags: CallFlags {
            cancellable: CALL_CANCELLABLE,
            packed: CALL_PACKED,
            packed_latin1: CALL_PACKED_LATIN1,
            packed_after_string: CALL_PACKED_AFTER_STRING,
            first_latin1: CALL_FIRST_LATIN1,
            progress: CALL_PROGRESS,
            functions: CALL_FUNCTIONS,
            traced: CALL_TRACED,
            cloned: CALL_CLONED,
            timed: CALL_TIMED,
            posted: CALL_POSTED,
            alone: CALL_ALONE,
        },
        packed_tags: PackedTags {
            null: packed::NULL.into(),
            r#false: packed::FALSE.into(),
            r#true: packed::TRUE.into(),
            number: packed::NUMBER.into(),
            string: packed::STRING.into(),
            array: packed::ARRAY.into(),
            object: packed::OBJECT.into(),
            object_shape: packed::OBJECT_SHAPE.into(),
            shaped: packed::SHAPED.into(),
            function: packed::FUNCTION.into(),
        },
        result_as_json: RESULT_AS_JSON,
        progress: PROGRESS,
        result_slice: RESULT_SLICE,
        result_cloned: RESULT_CLONED,
        result_posted: RESULT_POSTED,
        ran: RAN,
        slice_span: SLICE_SPAN,
        json_min_values: JSON_MIN_VALUES as u32,
        json_max_depth: JSON_MAX_DEPTH as u32,
        max_values: MAX_VALUES as u32,
        long_call_ms: crate::pool::origin::LONG_CALL.as_secs_f64() * 1000.0,
        rest: RestCodes {
            idle: REST_IDLE,
            later: REST_LATER,
        },
        locks: LockLayout {
            native_agent: agent::NATIVE,
            id_limit: agent::ID_LIMIT,
            waiters: owned_mutex::WAITERS,
            owned_words: owned_mutex::WORDS as u32,
            reentrant_words: reentrant_mutex::WORDS as u32,
            reentrant_count: reentrant_mutex::COUNT as u32,
            fair_words: fair_mutex::WORDS as u32,
            fair_next: fair_mutex::NEXT as u32,
            fair_serving: fair_mutex::SERVING as u32,
            fair_owner: fair_mutex::OWNER as u32,
            fair_native: fair_mutex::NATIVE as u32,
            fair_slots: fair_mutex::SLOTS as u32,
            fair_span: fair_mutex::SPAN as u32,
            fair_marks: fair_mutex::MARKS as u32,
            fair_turns: fair_mutex::TURNS as u32,
            max_count: i32::MAX,
        },
        mutex: MutexLayout {
            unlocked: mutex::UNLOCKED,
            locked: mutex::LOCKED,
        },
        ring: RingLayout {
            header_bytes: ring::HEADER_BYTES as u32,
            lock: ring::LOCK as u32,
            head: ring::HEAD as u32,
            tail: ring::TAIL as u32,
            length: ring::LENGTH as u32,
            max_capacity: MAX_RING_CAPACITY as u32,
        },
        render_write: RenderWriteModes {
            raw: RENDER_WRITE_RAW,
            html: RENDER_WRITE_HTML,
            escape: RENDER_WRITE_ESCAPE,
            section: RENDER_WRITE_SECTION,
        },
        render_section: RenderSectionResults {
            value: RENDER_SECTION_VALUE,
            lambda: RENDER_SECTION_LAMBDA,
            run_text_max: RENDER_RUN_TEXT_MAX,
        },
    }
}
