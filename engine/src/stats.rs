//! Per-thread operation statistics (docs/filebench-language.md#statistics).
//!
//! Why per thread: Filebench keeps one shared counter block per runtime
//! flowop; with a hundred threads that is a contended cache line per op. Here
//! each worker owns its counters (atomics written only by their owner with
//! plain load+store, so no locked instructions on the hot path) and its HDR
//! histograms; the runner reads counters for interval reports and merges the
//! histograms when the workers have finished.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use hdrhistogram::Histogram;

use crate::shm::{ShmSlice, Zeroable};

/// Highest latency tracked exactly by the histograms (100 s); longer ones
/// are recorded as this value.
pub const HIST_MAX_NS: u64 = 100_000_000_000;

/// Counters of one runtime flowop in one thread. They live in shared memory
/// (`ThreadStats`), so the runner reads them while the workers of every
/// process instance write them.
#[derive(Debug)]
#[repr(C)]
pub struct Counters {
    pub count: AtomicU64,
    pub bytes: AtomicU64,
    pub rcount: AtomicU64,
    pub rbytes: AtomicU64,
    pub wcount: AtomicU64,
    pub wbytes: AtomicU64,
    pub lat_ns: AtomicU64,
    pub min_ns: AtomicU64,
    pub max_ns: AtomicU64,
    /// `enable lathist`: bucket i counts 2^(i-1) <= ns < 2^i.
    pub log2: [AtomicU64; 64],
}

// SAFETY: atomics only; `ThreadStats::new` sets `min_ns` after zeroing.
unsafe impl Zeroable for Counters {}

#[inline]
fn bump(a: &AtomicU64, by: u64) {
    // Only the owning thread writes: no read-modify-write needed.
    a.store(a.load(Relaxed).wrapping_add(by), Relaxed);
}

/// Read or write class of a flowop, for the rd/wr columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rw {
    None,
    Read,
    Write,
}

impl Counters {
    /// `flowop_endop`: one op of `lat_ns` moving `bytes`; `lathist` also
    /// counts the log2 bucket (only `enable lathist` prints them).
    #[inline]
    pub fn record(&self, lat_ns: u64, bytes: u64, rw: Rw, lathist: bool) {
        bump(&self.count, 1);
        bump(&self.bytes, bytes);
        match rw {
            Rw::Read => {
                bump(&self.rcount, 1);
                bump(&self.rbytes, bytes);
            }
            Rw::Write => {
                bump(&self.wcount, 1);
                bump(&self.wbytes, bytes);
            }
            Rw::None => {}
        }
        bump(&self.lat_ns, lat_ns);
        if lat_ns < self.min_ns.load(Relaxed) {
            self.min_ns.store(lat_ns, Relaxed);
        }
        if lat_ns > self.max_ns.load(Relaxed) {
            self.max_ns.store(lat_ns, Relaxed);
        }
        if lathist {
            let b = 64 - lat_ns.leading_zeros() as usize;
            bump(&self.log2[b.min(63)], 1);
        }
    }

    /// A consistent-enough copy for reporting.
    pub fn snapshot(&self) -> Totals {
        let mut log2 = [0u64; 64];
        for (d, s) in log2.iter_mut().zip(self.log2.iter()) {
            *d = s.load(Relaxed);
        }
        Totals {
            count: self.count.load(Relaxed),
            bytes: self.bytes.load(Relaxed),
            rcount: self.rcount.load(Relaxed),
            rbytes: self.rbytes.load(Relaxed),
            wcount: self.wcount.load(Relaxed),
            wbytes: self.wbytes.load(Relaxed),
            lat_ns: self.lat_ns.load(Relaxed),
            min_ns: self.min_ns.load(Relaxed),
            max_ns: self.max_ns.load(Relaxed),
            log2,
        }
    }

    /// Starts a new min/max interval (psrun with a negative period).
    pub fn reset_extremes(&self) {
        self.min_ns.store(u64::MAX, Relaxed);
        self.max_ns.store(0, Relaxed);
    }
}

/// Summed counters (of one flowop, over threads).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Totals {
    pub count: u64,
    pub bytes: u64,
    pub rcount: u64,
    pub rbytes: u64,
    pub wcount: u64,
    pub wbytes: u64,
    pub lat_ns: u64,
    /// u64::MAX when no op was recorded.
    pub min_ns: u64,
    pub max_ns: u64,
    pub log2: [u64; 64],
}

impl Default for Totals {
    fn default() -> Self {
        Totals {
            count: 0,
            bytes: 0,
            rcount: 0,
            rbytes: 0,
            wcount: 0,
            wbytes: 0,
            lat_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            log2: [0; 64],
        }
    }
}

impl Totals {
    /// Adds another instance's totals.
    pub fn add(&mut self, o: &Totals) {
        self.count += o.count;
        self.bytes += o.bytes;
        self.rcount += o.rcount;
        self.rbytes += o.rbytes;
        self.wcount += o.wcount;
        self.wbytes += o.wbytes;
        self.lat_ns += o.lat_ns;
        self.min_ns = self.min_ns.min(o.min_ns);
        self.max_ns = self.max_ns.max(o.max_ns);
        for (a, b) in self.log2.iter_mut().zip(o.log2.iter()) {
            *a += b;
        }
    }

    /// Counts since `base` (min/max are kept from `self`).
    pub fn since(&self, base: &Totals) -> Totals {
        let mut t = *self;
        t.count -= base.count.min(t.count);
        t.bytes -= base.bytes.min(t.bytes);
        t.rcount -= base.rcount.min(t.rcount);
        t.rbytes -= base.rbytes.min(t.rbytes);
        t.wcount -= base.wcount.min(t.wcount);
        t.wbytes -= base.wbytes.min(t.wbytes);
        t.lat_ns -= base.lat_ns.min(t.lat_ns);
        for (a, b) in t.log2.iter_mut().zip(base.log2.iter()) {
            *a -= (*b).min(*a);
        }
        t
    }
}

/// One worker thread's statistics, indexed by stat id, in shared memory.
#[derive(Debug)]
pub struct ThreadStats {
    pub flowops: ShmSlice<Counters>,
}

impl ThreadStats {
    pub fn new(n: usize) -> Self {
        let flowops: ShmSlice<Counters> = ShmSlice::new(n);
        for c in flowops.iter() {
            c.min_ns.store(u64::MAX, Relaxed);
        }
        ThreadStats { flowops }
    }

    /// Shared memory a thread's statistics take for `n` stat ids.
    pub fn bytes_for(n: usize) -> u64 {
        (n * std::mem::size_of::<Counters>()) as u64
    }
}

/// A latency histogram in nanoseconds (HDR, 2 significant digits).
pub fn new_histogram() -> Histogram<u32> {
    Histogram::new_with_bounds(1, HIST_MAX_NS, 2).expect("valid histogram bounds")
}

/// Merges thread histograms into one with 64-bit counts.
pub fn merge_histograms<'a>(hs: impl Iterator<Item = &'a Histogram<u32>>) -> Histogram<u64> {
    let mut out: Histogram<u64> = Histogram::new_with_bounds(1, HIST_MAX_NS, 2).expect("valid bounds");
    for h in hs {
        for v in h.iter_recorded() {
            let _ = out.record_n(v.value_iterated_to(), v.count_at_value() as u64);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_and_since() {
        let s = ThreadStats::new(1);
        let c = &s.flowops[0];
        c.record(1500, 4096, Rw::Read, true);
        c.record(500, 0, Rw::None, true);
        let t = c.snapshot();
        assert_eq!((t.count, t.rcount, t.bytes, t.min_ns, t.max_ns), (2, 1, 4096, 500, 1500));
        c.record(100, 10, Rw::Write, true);
        let d = c.snapshot().since(&t);
        assert_eq!((d.count, d.wcount, d.bytes), (1, 1, 10));
    }

    #[test]
    fn histogram_merge_keeps_counts() {
        let mut a = new_histogram();
        a.record(1000).unwrap();
        a.record(2_000_000).unwrap();
        let m = merge_histograms([&a, &a].into_iter());
        assert_eq!(m.len(), 4);
    }
}
