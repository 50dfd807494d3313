//! OTHER and SYNC flowops: think time, rate limits, finish conditions,
//! block/wakeup, semaphores, testrandvar and print (docs/filebench-language.md#flowops, #rate-limits).

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::Duration;

use crate::clock;

use super::{sync::sleep_unless, Ret, Worker};
use crate::kind::Kind;
use crate::model::FlowopSpec;

const MIB: u64 = 1 << 20;

/// Iterations of `hog` between two looks at the stop flag.
const HOG_CHUNK: u64 = 1 << 20;

/// What one `hog` iteration does to memory.
pub trait HogTarget {
    // On x86-64 the real loop is assembly (`strata_wml_hog_chunk`); the
    // tests' counting target still goes through `touch`.
    #[cfg_attr(target_arch = "x86_64", allow(dead_code))]
    fn touch(&self);
}

/// Filebench's hog loop is `for (i = 0; i < value; i++) *(threadflow->tf_mem) = 1;`.
/// A byte store may alias the `tf_mem` pointer (a `char` aliases everything),
/// so the compiled loop reloads the pointer every iteration: one load and one
/// store. `HogCell` keeps the pointer in memory and goes through it with a
/// volatile load and a volatile store, which the compiler may neither hoist,
/// merge nor drop, so an iteration costs what Filebench's does.
pub struct HogCell {
    ptr: std::cell::UnsafeCell<*mut u8>,
}

impl HogCell {
    /// `ptr` must stay valid for writes while the cell is used.
    pub fn new(ptr: *mut u8) -> Self {
        HogCell { ptr: std::cell::UnsafeCell::new(ptr) }
    }
}

impl HogTarget for HogCell {
    #[inline(always)]
    fn touch(&self) {
        // SAFETY: the cell holds a pointer valid for a one-byte write (`new`).
        unsafe {
            let p = std::ptr::read_volatile(self.ptr.get());
            std::ptr::write_volatile(p, 1);
        }
    }
}

/// One chunk of the real loop, not inlined, under a fixed symbol name so that
/// a test can read its machine code (tests/cli.rs). On x86-64 it is the
/// instruction sequence gcc -O2 makes of Filebench's loop (load the
/// pointer, count, store the byte, compare, branch: five instructions per
/// iteration, not unrolled), so an iteration costs the same; a compiler
/// left to itself unrolls the volatile loop eight times and spends about
/// 20 % less per iteration (bench/wml/hog.c compares them).
#[no_mangle]
#[inline(never)]
pub fn strata_wml_hog_chunk(cell: &HogCell, n: u64) {
    #[cfg(target_arch = "x86_64")]
    if n > 0 {
        // SAFETY: reads the pointer held by `cell` and writes one byte
        // through it, which `HogCell::new` requires to be valid.
        unsafe {
            std::arch::asm!(
                "2:",
                "mov {p}, qword ptr [{cell}]",
                "add {i}, 1",
                "mov byte ptr [{p}], 1",
                "cmp {i}, {n}",
                "jb 2b",
                cell = in(reg) cell.ptr.get(),
                n = in(reg) n,
                i = inout(reg) 0u64 => _,
                p = out(reg) _,
                options(nostack),
            );
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    for _ in 0..n {
        cell.touch();
    }
}

/// Runs `n` iterations on `target`, looking at `stop` between chunks;
/// returns the iterations done (`n` unless stopped).
pub fn hog_iterations<T: HogTarget>(target: &T, n: u64, stop: &AtomicBool, chunk: &dyn Fn(&T, u64)) -> u64 {
    let mut done = 0;
    while done < n {
        let k = (n - done).min(HOG_CHUNK);
        chunk(target, k);
        done += k;
        if stop.load(Relaxed) {
            break;
        }
    }
    done
}

/// The real hog loop.
fn hog_loop(cell: &HogCell, n: u64, stop: &AtomicBool) -> u64 {
    hog_iterations(cell, n, stop, &|c, k| strata_wml_hog_chunk(c, k))
}

/// What a limiter or finish condition measures.
#[derive(Clone, Copy)]
enum Measure {
    Ops,
    Iops,
    Bytes,
}

fn find_stat(fs: &[FlowopSpec], name: &str) -> Option<usize> {
    fs.iter().find_map(|f| if f.name == name { Some(f.stat_id) } else { find_stat(&f.inner, name) })
}

impl Worker {
    /// Dispatches the non-I/O flowops.
    pub fn other(&mut self, fo: &FlowopSpec) -> Ret {
        match fo.kind {
            Kind::Hog => self.hog(fo),
            Kind::Delay => {
                let t0 = clock::now();
                if sleep_unless(Duration::from_secs(fo.value.get_int()), self.shared.stop_flag()) {
                    self.endop(fo, t0, 0);
                }
                Ret::Ok
            }
            Kind::EventLimit => self.eventlimit(fo),
            Kind::OpsLimit => self.limit(fo, Measure::Ops),
            Kind::IopsLimit => self.limit(fo, Measure::Iops),
            Kind::BwLimit => self.limit(fo, Measure::Bytes),
            Kind::FinishOnCount => self.finish_on(fo, Measure::Ops),
            Kind::FinishOnBytes => self.finish_on(fo, Measure::Bytes),
            Kind::Block => self.block(fo),
            Kind::Wakeup => self.wakeup(fo),
            Kind::SemBlock => self.semblock(fo),
            Kind::SemPost => self.sempost(fo),
            Kind::TestRandVar => {
                let v = fo.value.get_dbl();
                let t = &mut self.aux[fo.stat_id].trv;
                *t = (t.0 + v, t.1 + v * v, t.2 + 1);
                Ret::Ok
            }
            Kind::Print => {
                if !self.shared.verbose {
                    return Ret::Ok;
                }
                self.shared.out.warn(&format!(
                    "Message from process ({},{}), thread ({},{}): {}",
                    self.id.proc_name,
                    self.id.proc_instance,
                    self.id.thread_name,
                    self.id.thread_instance,
                    fo.value.get_str()
                ));
                Ret::Ok
            }
            _ => Ret::Error(format!("flowop {}: not runnable", fo.name)),
        }
    }

    /// `hog`: `value` iterations of Filebench's loop over the thread memory
    /// (a scratch byte when the thread has no `memsize`: Filebench's
    /// `malloc(0)` still gives it one), counted when it ran to the end.
    fn hog(&mut self, fo: &FlowopSpec) -> Ret {
        let n = fo.value.get_int();
        let mut scratch = 0u8;
        let ptr = self.mem.first_mut().map_or(&mut scratch as *mut u8, |b| b as *mut u8);
        let cell = HogCell::new(ptr);
        let t0 = clock::now();
        if hog_loop(&cell, n, self.shared.stop_flag()) == n {
            self.endop(fo, t0, 0);
        }
        Ret::Ok
    }

    fn eventlimit(&mut self, fo: &FlowopSpec) -> Ret {
        if !self.shared.events().enabled.load(Relaxed) {
            return Ret::Ok;
        }
        let t0 = clock::now();
        self.shared.events().take(1, self.shared.stop_flag());
        self.endop(fo, t0, 0);
        Ret::Ok
    }

    /// The measured quantity: the target flowop in this thread, or the
    /// process total (`controlstats`, which counts every flowop class).
    fn measure(&mut self, fo: &FlowopSpec, m: Measure) -> Result<u64, Ret> {
        if !self.aux[fo.stat_id].initted {
            self.aux[fo.stat_id].initted = true;
            if !fo.target.is_empty() {
                let Some(t) = find_stat(&self.flowops, &fo.target) else {
                    return Err(Ret::Error(format!("limit target: could not find flowop {}", fo.target)));
                };
                self.aux[fo.stat_id].target = Some(t);
            }
        }
        let pick = |c: &crate::stats::Counters| match m {
            Measure::Ops => c.count.load(Relaxed),
            Measure::Iops => c.rcount.load(Relaxed) + c.wcount.load(Relaxed),
            Measure::Bytes => c.bytes.load(Relaxed),
        };
        Ok(match self.aux[fo.stat_id].target {
            Some(t) => pick(&self.stats.flowops[t]),
            None => {
                let all = self.proc_stats.lock().unwrap();
                all.iter().flat_map(|s| s.flowops.iter()).map(pick).sum()
            }
        })
    }

    /// `opslimit` / `iopslimit` / `bwlimit`: token bucket fed by events.
    fn limit(&mut self, fo: &FlowopSpec, m: Measure) -> Ret {
        if !self.shared.events().enabled.load(Relaxed) {
            return Ret::Ok;
        }
        let now = match self.measure(fo, m) {
            Ok(v) => v,
            Err(r) => return r,
        };
        let a = &mut self.aux[fo.stat_id];
        if a.tputlast == 0 {
            a.tputlast = now;
            return Ret::Ok;
        }
        a.bucket -= now.saturating_sub(a.tputlast) as i64;
        a.tputlast = now;
        let t0 = clock::now();
        if a.bucket >= 0 {
            self.endop(fo, t0, 0);
            return Ret::Ok;
        }
        let deficit = (-a.bucket) as u64;
        let (events, credit) = match m {
            Measure::Bytes => (deficit / MIB + 1, (deficit / MIB + 1) * MIB),
            _ => (deficit, deficit),
        };
        if self.shared.events().take(events, self.shared.stop_flag()) {
            self.aux[fo.stat_id].bucket += credit as i64;
        }
        self.endop(fo, t0, 0);
        Ret::Ok
    }

    /// `finishoncount` / `finishonbytes`: NORSC once the value is reached.
    fn finish_on(&mut self, fo: &FlowopSpec, m: Measure) -> Ret {
        let now = match self.measure(fo, m) {
            Ok(v) => v,
            Err(r) => return r,
        };
        let done = match m {
            Measure::Bytes => now > fo.const_value,
            _ => now >= fo.const_value,
        };
        if done {
            return Ret::Finish(format!("{} reached {}", fo.kind.name(), fo.const_value));
        }
        let t0 = clock::now();
        self.endop(fo, t0, 0);
        Ret::Ok
    }

    fn block(&mut self, fo: &FlowopSpec) -> Ret {
        let Some(i) = self.aux[fo.stat_id].sync else {
            return Ret::Error(format!("flowop {}: no block signal", fo.name));
        };
        let t0 = clock::now();
        if self.shared.sync[i].signal.block(self.shared.stop_flag()) {
            self.endop(fo, t0, 0);
        }
        Ret::Ok
    }

    fn wakeup(&mut self, fo: &FlowopSpec) -> Ret {
        let Some(targets) = self.shared.blocks.get(&fo.target) else {
            return Ret::Error(format!("wakeup: could not find op {} for thread {}", fo.target, self.id.thread_name));
        };
        for &t in targets {
            let t0 = clock::now();
            self.shared.sync[t].signal.wake();
            self.endop(fo, t0, 0);
        }
        Ret::Ok
    }

    fn semblock(&mut self, fo: &FlowopSpec) -> Ret {
        let Some(i) = self.aux[fo.stat_id].sync else {
            return Ret::Error(format!("flowop {}: no semaphore", fo.name));
        };
        let t0 = clock::now();
        self.shared.sync[i].sem.block(fo.value.get_int().min(i64::MAX as u64) as i64, self.shared.stop_flag());
        self.endop(fo, t0, 0);
        Ret::Ok
    }

    fn sempost(&mut self, fo: &FlowopSpec) -> Ret {
        let Some(targets) = self.shared.blocks.get(&fo.target) else {
            return Ret::Error(format!("sempost: could not find op {}", fo.target));
        };
        let v = fo.value.get_int().min(i64::MAX as u64) as i64;
        let blocking = fo.blocking.get_bool();
        let t0 = clock::now();
        for &t in targets {
            if !self.shared.sync[t].sem.post(v, blocking, self.shared.stop_flag()) {
                break;
            }
        }
        self.endop(fo, t0, 0);
        Ret::Ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    struct Counting {
        touches: Cell<u64>,
    }

    impl HogTarget for Counting {
        fn touch(&self) {
            self.touches.set(self.touches.get() + 1);
        }
    }

    fn chunk(t: &Counting, k: u64) {
        for _ in 0..k {
            t.touch();
        }
    }

    #[test]
    fn hog_runs_exactly_value_iterations_in_chunks() {
        let stop = AtomicBool::new(false);
        for n in [0, 1, 1000, HOG_CHUNK, 2 * HOG_CHUNK + 7] {
            let c = Counting { touches: Cell::new(0) };
            assert_eq!(hog_iterations(&c, n, &stop, &chunk), n);
            assert_eq!(c.touches.get(), n);
        }
    }

    #[test]
    fn hog_stops_between_chunks() {
        let stop = AtomicBool::new(true);
        let c = Counting { touches: Cell::new(0) };
        assert_eq!(hog_iterations(&c, 10 * HOG_CHUNK, &stop, &chunk), HOG_CHUNK);
        assert_eq!(c.touches.get(), HOG_CHUNK);
    }

    #[test]
    fn hog_cell_writes_through_the_pointer_it_holds() {
        let mut mem = [0u8; 4];
        let cell = HogCell::new(&mut mem[2]);
        hog_loop(&cell, 3, &AtomicBool::new(false));
        assert_eq!(mem, [0, 0, 1, 0]);
    }
}
