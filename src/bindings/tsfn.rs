//! The threadsafe function, the one way a pool thread reaches a JavaScript thread: created on a
//! JS thread with a callback and a context (an `Arc<T>` that the function owns, reclaimed when
//! Node finalizes it at the environment's teardown), called from any thread, and ref'd or
//! unref'd (whether it keeps the event loop alive) on its JS thread. The channel (settlements)
//! and every JS server (job batches) use it.

use napi::sys;
use std::ffi::{c_void, CStr};
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Arc;

/// The callback Node-API runs on the JS thread: `(env, js_function, context, data)`.
pub(crate) type CallJs =
    unsafe extern "C" fn(sys::napi_env, sys::napi_value, *mut c_void, *mut c_void);

/// A raw threadsafe-function handle, shareable across threads. Unset until [`Tsfn::create`].
pub(crate) struct Tsfn(AtomicPtr<sys::napi_threadsafe_function__>);

impl Tsfn {
    pub(crate) const fn unset() -> Tsfn {
        Tsfn(AtomicPtr::new(ptr::null_mut()))
    }

    /// Creates the threadsafe function that runs `call_js` with `func` and `context` on this
    /// environment's JS thread; it starts unref'd when `keep_alive` is false. `false` when
    /// Node-API refused (then `context` is dropped here).
    ///
    /// # Safety
    /// Must run on `env`'s JS thread with `func` a function of `env`; `call_js` must read its
    /// context as a `T` (see [`context`]).
    pub(crate) unsafe fn create<T: Send + Sync + 'static>(
        &self,
        env: sys::napi_env,
        func: sys::napi_value,
        name: &CStr,
        context: Arc<T>,
        call_js: CallJs,
        keep_alive: bool,
    ) -> bool {
        let mut js_name = ptr::null_mut();
        let mut tsfn = ptr::null_mut();
        let raw = Arc::into_raw(context) as *mut c_void;
        // SAFETY: on env's JS thread with `func` of env (caller contract); `raw` is a leaked
        // Arc<T> that `finalize::<T>` reclaims exactly once, when Node finalizes the function.
        let status = unsafe {
            sys::napi_create_string_utf8(
                env,
                name.as_ptr(),
                name.count_bytes() as isize,
                &mut js_name,
            );
            sys::napi_create_threadsafe_function(
                env,
                func,
                ptr::null_mut(),
                js_name,
                0,
                1,
                raw,
                Some(finalize::<T>),
                raw,
                Some(call_js),
                &mut tsfn,
            )
        };
        if status != sys::Status::napi_ok {
            // SAFETY: creation failed, so Node never finalizes: reclaim the Arc here.
            drop(unsafe { Arc::from_raw(raw as *const T) });
            return false;
        }
        if !keep_alive {
            // SAFETY: created just now on this env's JS thread.
            unsafe { sys::napi_unref_threadsafe_function(env, tsfn) };
        }
        self.0.store(tsfn, Ordering::Release);
        true
    }

    /// Queues one run of the callback; callable from any thread.
    ///
    /// # Safety
    /// The function must be live: created, and not yet finalized (its environment not yet torn
    /// down).
    pub(crate) unsafe fn call(&self) {
        let tsfn = self.0.load(Ordering::Acquire);
        // SAFETY: live by this function's contract; Node-API allows the call from any thread.
        unsafe {
            sys::napi_call_threadsafe_function(
                tsfn,
                ptr::null_mut(),
                sys::ThreadsafeFunctionCallMode::nonblocking,
            )
        };
    }

    /// Whether the function keeps its event loop alive.
    ///
    /// # Safety
    /// Must run on the JS thread of `env`, the environment that created the function.
    pub(crate) unsafe fn keep_alive(&self, env: sys::napi_env, on: bool) {
        let tsfn = self.0.load(Ordering::Acquire);
        // SAFETY: on the creating env's JS thread (caller contract); the function lives until
        // the env's teardown.
        unsafe {
            if on {
                sys::napi_ref_threadsafe_function(env, tsfn);
            } else {
                sys::napi_unref_threadsafe_function(env, tsfn);
            }
        }
    }

    /// Gives the function up before anything else could use it (a failed registration).
    ///
    /// # Safety
    /// Nothing may call it after this.
    pub(crate) unsafe fn release(&self) {
        let tsfn = self.0.swap(ptr::null_mut(), Ordering::AcqRel);
        // SAFETY: by this function's contract nobody uses it after; release is thread-safe.
        unsafe {
            sys::napi_release_threadsafe_function(tsfn, sys::ThreadsafeFunctionReleaseMode::release)
        };
    }
}

/// The context a threadsafe function was created with, inside its `call_js`.
///
/// # Safety
/// `context` must be the pointer `call_js` received from a function [`Tsfn::create`]d with an
/// `Arc<T>`; the reference is valid for the callback (the finalizer cannot run during it).
pub(crate) unsafe fn context<'a, T>(context: *mut c_void) -> &'a T {
    // SAFETY: the caller contract: a live Arc<T> owned by the function.
    unsafe { &*(context as *const T) }
}

unsafe extern "C" fn finalize<T>(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: `data` is the Arc<T> leaked in `Tsfn::create`; Node finalizes once.
    drop(unsafe { Arc::from_raw(data as *const T) });
}
