//! How much of this thread's native stack is left. A conversion recurses once per level of a
//! value's nesting, up to `MAX_NESTING` levels, and each level's frames (with the Node-API calls
//! they make) take about a kilobyte; a worker_thread's stack may be small
//! (`resourceLimits.stackSizeMb`), and a stack overflow kills the whole process. So a
//! conversion checks, at every level, that [`KEEP_FREE`] bytes are still left below it, and
//! refuses the value (an error naming the place) when they are not.
//!
//! The stack's end is asked of the thread library once per thread (`pthread_getattr_np`); where
//! it cannot say, nothing is refused on this account.

use std::cell::Cell;

/// What a conversion leaves free below the level it refuses at: room for that level's
/// Node-API calls (which may run a getter) and for making the refusal.
pub(crate) const KEEP_FREE: usize = 96 * 1024;

thread_local! {
    /// The lowest address of this thread's stack (stacks grow down); 0: not asked yet;
    /// `usize::MAX`: unknown.
    static LOW_END: Cell<usize> = const { Cell::new(0) };
}

/// True while more than [`KEEP_FREE`] bytes of this thread's stack are left below the caller's
/// frame (or the stack's end is unknown).
#[inline]
pub(crate) fn room_left() -> bool {
    let low = LOW_END.with(|l| {
        if l.get() == 0 {
            l.set(low_end().unwrap_or(usize::MAX));
        }
        l.get()
    });
    if low == usize::MAX {
        return true;
    }
    let marker = 0u8;
    let here = std::hint::black_box(&marker) as *const u8 as usize;
    here.saturating_sub(low) > KEEP_FREE
}

/// The refusal of a value at `place`, `depth` levels down (if known), for want of stack.
pub(crate) fn too_deep(place: &str, depth: Option<usize>) -> String {
    let nested = depth.map_or("nested".to_string(), |d| format!("nested {d} levels deep:"));
    format!(
        "{place} is {nested} more deeply than this thread's stack leaves room for (a \
         worker_thread's stack is set by resourceLimits.stackSizeMb)"
    )
}

#[cfg(target_os = "linux")]
fn low_end() -> Option<usize> {
    // SAFETY: `attr` is initialised by pthread_getattr_np before it is read, and destroyed once;
    // the out-pointers are live locals.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return None;
        }
        let mut addr: *mut libc::c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let got = libc::pthread_attr_getstack(&attr, &mut addr, &mut size) == 0;
        libc::pthread_attr_destroy(&mut attr);
        (got && !addr.is_null()).then_some(addr as usize)
    }
}

#[cfg(not(target_os = "linux"))]
fn low_end() -> Option<usize> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_thread_has_room_and_a_known_end() {
        let known = std::thread::spawn(|| (low_end().is_some(), room_left()))
            .join()
            .unwrap();
        assert_eq!(known, (cfg!(target_os = "linux"), true));
    }

    #[test]
    fn the_room_runs_out_before_the_stack_does() {
        // Recurse on a small thread until room_left says no; overflowing would abort the test.
        fn dive(level: usize) -> usize {
            let pad = std::hint::black_box([0u8; 512]);
            if !room_left() {
                return level + pad[0] as usize;
            }
            dive(level + 1) + pad[1] as usize
        }
        if cfg!(target_os = "linux") {
            let levels = std::thread::Builder::new()
                .stack_size(512 * 1024)
                .spawn(|| dive(0))
                .unwrap()
                .join()
                .unwrap();
            assert!(levels > 100, "{levels}");
        }
    }
}
