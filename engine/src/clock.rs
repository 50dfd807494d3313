//! Cheap per-operation timestamps.
//!
//! Why not `Instant` everywhere: every flowop takes two timestamps
//! (`flowop_beginop`/`flowop_endop`, docs/filebench-language.md#statistics), and on the hot path the
//! vDSO `clock_gettime` was the largest user-space cost after the histograms.
//! Where the CPU has an invariant TSC (`constant_tsc` and `nonstop_tsc`), we
//! read it directly and convert with a factor calibrated against the
//! monotonic clock; elsewhere we fall back to `Instant`.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Nanoseconds per TSC tick in 32.32 fixed point; 0 = use `Instant`.
static NS_PER_TICK: AtomicU64 = AtomicU64::new(0);
static EPOCH: OnceLock<Instant> = OnceLock::new();

/// A point in time (TSC ticks, or ns since the epoch without a usable TSC).
#[derive(Debug, Clone, Copy)]
pub struct Stamp(u64);

#[cfg(target_arch = "x86_64")]
fn rdtsc() -> u64 {
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
fn rdtsc() -> u64 {
    0
}

fn calibrate() -> u64 {
    if !cfg!(target_arch = "x86_64") {
        return 0;
    }
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    if !(info.contains("constant_tsc") && info.contains("nonstop_tsc")) {
        return 0;
    }
    let (t0, c0) = (Instant::now(), rdtsc());
    std::thread::sleep(Duration::from_millis(20));
    let (ns, ticks) = (t0.elapsed().as_nanos(), rdtsc().wrapping_sub(c0));
    if ticks == 0 {
        return 0;
    }
    ((ns << 32) / ticks as u128) as u64
}

/// Calibrates once (about 20 ms); call before workers start.
pub fn init() {
    EPOCH.get_or_init(Instant::now);
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| NS_PER_TICK.store(calibrate(), Relaxed));
}

/// Now.
#[inline]
pub fn now() -> Stamp {
    if NS_PER_TICK.load(Relaxed) != 0 {
        Stamp(rdtsc())
    } else {
        Stamp(EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64)
    }
}

/// Nanoseconds since `t0` (0 if the clock seems to go backwards).
#[inline]
pub fn since(t0: Stamp) -> u64 {
    let k = NS_PER_TICK.load(Relaxed);
    let t1 = now().0;
    if k != 0 {
        ((t1.saturating_sub(t0.0) as u128 * k as u128) >> 32) as u64
    } else {
        t1.saturating_sub(t0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_a_sleep() {
        init();
        let t0 = now();
        std::thread::sleep(Duration::from_millis(30));
        let ns = since(t0);
        assert!((29_000_000..200_000_000).contains(&ns), "{ns}");
    }
}
