//! Memory shared by the process instances of a run, and futex waits on it.
//!
//! Why: each `define process` instance runs as its own OS process (forked,
//! not exec'd, so every address stays the same), with its own file table, as
//! in Filebench. What the instances share (fileset pick state, statistics
//! counters, the stop flag, the event queue, block/wakeup and semaphore
//! state) lives in anonymous `MAP_SHARED` mappings made before the fork.
//! Only atomics live there, never pointers, so nothing depends on where a
//! process maps anything (Filebench's shared memory holds raw pointers,
//! which is why it needs ASLR off: docs/filebench-language.md#known-bugs).
//! Waits use futexes without the private flag, which work across processes.

use std::marker::PhantomData;
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::time::Duration;

/// Types that are valid when all their bytes are zero and hold no pointers,
/// so they can live in memory shared by forked processes.
///
/// # Safety
/// The all-zero bit pattern must be a valid value, and the type must not
/// contain pointers or anything else that is private to a process.
pub unsafe trait Zeroable: Sync {}

unsafe impl Zeroable for AtomicBool {}
unsafe impl Zeroable for AtomicU8 {}
unsafe impl Zeroable for AtomicU32 {}
unsafe impl Zeroable for AtomicU64 {}
unsafe impl Zeroable for AtomicI64 {}
unsafe impl Zeroable for AtomicUsize {}
unsafe impl<T: Zeroable, const N: usize> Zeroable for [T; N] {}

/// A zero-initialised slice in an anonymous shared mapping: after a fork,
/// parent and children see the same elements.
pub struct ShmSlice<T: Zeroable> {
    ptr: *mut T,
    len: usize,
    bytes: usize,
    _owns: PhantomData<T>,
}

// SAFETY: the elements are `Sync` (Zeroable: Sync) and the mapping is only
// unmapped on drop, by the owner.
unsafe impl<T: Zeroable> Send for ShmSlice<T> {}
unsafe impl<T: Zeroable> Sync for ShmSlice<T> {}

impl<T: Zeroable> ShmSlice<T> {
    /// `len` zeroed elements; an error if the mapping cannot be made.
    pub fn zeroed(len: usize) -> std::io::Result<Self> {
        let bytes = len.checked_mul(std::mem::size_of::<T>()).ok_or(std::io::ErrorKind::OutOfMemory)?;
        if bytes == 0 {
            return Ok(ShmSlice { ptr: std::ptr::NonNull::dangling().as_ptr(), len, bytes: 0, _owns: PhantomData });
        }
        // SAFETY: a fresh anonymous mapping; zero bytes are a valid T (Zeroable).
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(ShmSlice { ptr: p.cast(), len, bytes, _owns: PhantomData })
    }

    /// Like `zeroed`, but a failure is fatal: for the small fixed objects of
    /// a run, whose size was accounted for before (`limits`).
    pub fn new(len: usize) -> Self {
        Self::zeroed(len).unwrap_or_else(|e| panic!("shared memory of {len} elements: {e}"))
    }
}

impl<T: Zeroable> Deref for ShmSlice<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` is valid for `len` initialised elements until drop.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl<T: Zeroable> Drop for ShmSlice<T> {
    fn drop(&mut self) {
        if self.bytes > 0 {
            // SAFETY: the mapping made in `zeroed`, unmapped once.
            unsafe { libc::munmap(self.ptr.cast(), self.bytes) };
        }
    }
}

impl<T: Zeroable> std::fmt::Debug for ShmSlice<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ShmSlice[{}]", self.len)
    }
}

impl<T: Zeroable> Default for ShmSlice<T> {
    fn default() -> Self {
        Self::new(0)
    }
}

/// One value in shared memory.
pub struct ShmBox<T: Zeroable>(ShmSlice<T>);

impl<T: Zeroable> ShmBox<T> {
    pub fn new() -> Self {
        ShmBox(ShmSlice::new(1))
    }
}

impl<T: Zeroable> Default for ShmBox<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Zeroable> Deref for ShmBox<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0[0]
    }
}

impl<T: Zeroable> std::fmt::Debug for ShmBox<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ShmBox")
    }
}

/// Sleeps while `word` still holds `expected`, at most `timeout` (a futex
/// wait that also works between processes). Spurious returns are allowed:
/// callers re-check their condition.
pub fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `word` is a valid, aligned u32 for the duration of the call.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAIT, expected, &ts as *const libc::timespec);
    }
}

/// Wakes every waiter of `word` (after the caller changed it).
pub fn futex_wake_all(word: &AtomicU32) {
    // SAFETY: `word` is a valid, aligned u32.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, i32::MAX);
    }
}

/// Bumps a wake-up sequence word and wakes its waiters.
pub fn notify(seq: &AtomicU32) {
    seq.fetch_add(1, Ordering::Release);
    futex_wake_all(seq);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_slice_is_shared_with_a_forked_child() {
        let s: ShmSlice<AtomicU64> = ShmSlice::new(1000);
        assert!(s.iter().all(|x| x.load(Ordering::Relaxed) == 0));
        // SAFETY: the child only touches atomics and exits with _exit.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            s[999].store(42, Ordering::Relaxed);
            unsafe { libc::_exit(0) };
        }
        let mut status = 0;
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert_eq!(s[999].load(Ordering::Relaxed), 42);
    }

    #[test]
    fn empty_slice_maps_nothing() {
        let s: ShmSlice<AtomicU64> = ShmSlice::new(0);
        assert!(s.is_empty());
    }

    #[test]
    fn absurd_sizes_are_errors_not_aborts() {
        assert!(ShmSlice::<AtomicU64>::zeroed(usize::MAX / 4).is_err());
    }
}
