//! OTHER and SYNC flowops: think time, rate limits, finish conditions,
//! block/wakeup, semaphores, testrandvar and print (WML-SPEC §9.3, §11).

use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use crate::clock;

use super::{sync::sleep_unless, Ret, Worker};
use crate::kind::Kind;
use crate::model::FlowopSpec;

const MIB: u64 = 1 << 20;

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
                if sleep_unless(Duration::from_secs(fo.value.get_int()), &self.shared.stop) {
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

    fn hog(&mut self, fo: &FlowopSpec) -> Ret {
        let n = fo.value.get_int();
        let t0 = clock::now();
        if let Some(b) = self.mem.first_mut() {
            let p: *mut u8 = b;
            for _ in 0..n {
                unsafe { std::ptr::write_volatile(p, 1) };
            }
        }
        self.endop(fo, t0, 0);
        Ret::Ok
    }

    fn eventlimit(&mut self, fo: &FlowopSpec) -> Ret {
        if !self.shared.events.enabled.load(Relaxed) {
            return Ret::Ok;
        }
        let t0 = clock::now();
        self.shared.events.take(1, &self.shared.stop);
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
        if !self.shared.events.enabled.load(Relaxed) {
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
        if self.shared.events.take(events, &self.shared.stop) {
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
        let Some(sig) = self.aux[fo.stat_id].signal.clone() else {
            return Ret::Error(format!("flowop {}: no block signal", fo.name));
        };
        let t0 = clock::now();
        if sig.block(&self.shared.stop) {
            self.endop(fo, t0, 0);
        }
        Ret::Ok
    }

    fn wakeup(&mut self, fo: &FlowopSpec) -> Ret {
        let Some(targets) = self.shared.blocks.get(&fo.target).cloned() else {
            return Ret::Error(format!("wakeup: could not find op {} for thread {}", fo.target, self.id.thread_name));
        };
        for t in targets {
            let t0 = clock::now();
            t.wake();
            self.endop(fo, t0, 0);
        }
        Ret::Ok
    }

    fn semblock(&mut self, fo: &FlowopSpec) -> Ret {
        let Some(sem) = self.aux[fo.stat_id].sem.clone() else {
            return Ret::Error(format!("flowop {}: no semaphore", fo.name));
        };
        let t0 = clock::now();
        sem.block(fo.value.get_int() as i64, &self.shared.stop);
        self.endop(fo, t0, 0);
        Ret::Ok
    }

    fn sempost(&mut self, fo: &FlowopSpec) -> Ret {
        let Some(targets) = self.shared.sems.get(&fo.target).cloned() else {
            return Ret::Error(format!("sempost: could not find op {}", fo.target));
        };
        let v = fo.value.get_int() as i64;
        let blocking = fo.blocking.get_bool();
        let t0 = clock::now();
        for t in targets {
            if !t.post(v, blocking, &self.shared.stop) {
                break;
            }
        }
        self.endop(fo, t0, 0);
        Ret::Ok
    }
}
