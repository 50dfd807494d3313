//! Synchronisation objects shared between workers: the event queue of the
//! rate limiters (WML-SPEC §11), block/wakeup signals and the semaphores of
//! semblock/sempost (§9.3).
//!
//! Why polling waits: every wait must end promptly when the run stops, so
//! each one waits on its condition variable with a short timeout and checks
//! the stop flag.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

const TICK: Duration = Duration::from_millis(20);

/// The event generator's queue.
#[derive(Debug, Default)]
pub struct EventQueue {
    pub enabled: AtomicBool,
    q: Mutex<u64>,
    cv: Condvar,
}

impl EventQueue {
    /// Posts events, keeping the queue under `cap` (5 x rate).
    pub fn post(&self, n: u64, cap: u64) {
        let mut q = self.q.lock().unwrap();
        if *q < cap {
            *q = (*q + n).min(cap.max(n));
        }
        drop(q);
        self.cv.notify_all();
    }

    /// Takes `n` events, waiting for them; false if stopped first.
    pub fn take(&self, n: u64, stop: &AtomicBool) -> bool {
        let mut q = self.q.lock().unwrap();
        loop {
            if *q >= n {
                *q -= n;
                return true;
            }
            if stop.load(Ordering::Relaxed) || !self.enabled.load(Ordering::Relaxed) {
                return false;
            }
            q = self.cv.wait_timeout(q, TICK).unwrap().0;
        }
    }

    /// Empties the queue (start of a run).
    pub fn clear(&self) {
        *self.q.lock().unwrap() = 0;
    }
}

/// A block/wakeup rendezvous without memory: a wakeup only releases threads
/// already blocked (the generation they saw changes).
#[derive(Debug, Default)]
pub struct Signal {
    gen: Mutex<u64>,
    cv: Condvar,
}

impl Signal {
    /// Blocks until the next `wake`; false if stopped first.
    pub fn block(&self, stop: &AtomicBool) -> bool {
        let mut g = self.gen.lock().unwrap();
        let seen = *g;
        while *g == seen {
            if stop.load(Ordering::Relaxed) {
                return false;
            }
            g = self.cv.wait_timeout(g, TICK).unwrap().0;
        }
        true
    }

    /// Releases every blocked thread.
    pub fn wake(&self) {
        *self.gen.lock().unwrap() += 1;
        self.cv.notify_all();
    }
}

/// The high-water / low-water semaphore pair of one semblock instance.
#[derive(Debug)]
pub struct SemPair {
    /// (high-water, low-water) counts.
    counts: Mutex<(i64, i64)>,
    cv: Condvar,
}

/// Filebench's semop timeout.
const SEM_TIMEOUT: Duration = Duration::from_secs(600);

impl SemPair {
    pub fn new(highwater: u64) -> Self {
        SemPair { counts: Mutex::new((highwater as i64, 0)), cv: Condvar::new() }
    }

    /// semblock: +v on high-water, then wait for v on low-water.
    pub fn block(&self, v: i64, stop: &AtomicBool) -> bool {
        let mut c = self.counts.lock().unwrap();
        c.0 += v;
        self.cv.notify_all();
        let start = Instant::now();
        while c.1 < v {
            if stop.load(Ordering::Relaxed) || start.elapsed() > SEM_TIMEOUT {
                return false;
            }
            c = self.cv.wait_timeout(c, TICK).unwrap().0;
        }
        c.1 -= v;
        true
    }

    /// sempost: +v on low-water; with `blocking`, also take v of high-water.
    pub fn post(&self, v: i64, blocking: bool, stop: &AtomicBool) -> bool {
        let mut c = self.counts.lock().unwrap();
        if blocking {
            let start = Instant::now();
            while c.0 < v {
                if stop.load(Ordering::Relaxed) || start.elapsed() > SEM_TIMEOUT {
                    return false;
                }
                c = self.cv.wait_timeout(c, TICK).unwrap().0;
            }
            c.0 -= v;
        }
        c.1 += v;
        drop(c);
        self.cv.notify_all();
        true
    }
}

/// Sleeps `d`, returning early (false) if `stop` is set.
pub fn sleep_unless(d: Duration, stop: &AtomicBool) -> bool {
    let end = Instant::now() + d;
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = Instant::now();
        if now >= end {
            return true;
        }
        std::thread::sleep((end - now).min(TICK));
    }
}
