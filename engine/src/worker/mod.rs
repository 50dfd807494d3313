//! A worker thread: the thread loop of `flowop_start` with its fd slots, I/O
//! memory and statistics (docs/filebench-language.md#thread-loop, #fd-slots, #io-buffers).
//!
//! Each process instance is a forked OS process (`crate::procs`) holding the
//! worker threads of its thread instances, so each instance has its own file
//! table, as in Filebench. What all instances share (`Control`, the
//! filesets' pick state, statistics counters, sync objects) lives in shared
//! memory (`crate::shm`), as atomics, never as pointers; what Filebench keeps
//! per process (the `controlstats` total) is kept per process instance, and
//! the Mersenne twister per thread.

mod file_ops;
mod io_ops;
mod other_ops;
pub mod sync;

use crate::clock::{self, Stamp};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::ast::QuitMode;
use crate::fileset::Fileset;
use crate::kind::Kind;
use crate::model::FlowopSpec;
use crate::output::Output;
use crate::rng::MtState;
use crate::shm::{futex_wait, notify, ShmBox, ShmSlice, Zeroable};
use crate::stats::{new_histogram, ThreadStats};
pub use sync::{EventQueue, SemPair, Signal, SyncObj};

/// Latencies buffered before they go into the histograms.
const PENDING: usize = 1024;

/// Slots per thread (Filebench: 129, indexes 0..128).
pub const NSLOTS: usize = 129;

/// Outcome of one flowop call (Filebench's OK / NORSC / ERROR / DONE).
#[derive(Debug, Clone, PartialEq)]
pub enum Ret {
    Ok,
    Norsc(String),
    Error(String),
    Done,
    /// finishoncount / finishonbytes reached: Filebench returns NORSC, which
    /// in `timeout` mode aborts the run as an error
    /// (docs/filebench-language.md#runs-that-stop-early); we end
    /// the thread (alldone) or the run (timeout, firstdone) cleanly.
    Finish(String),
}

/// Why a run stopped before its time.
#[derive(Debug, Clone, PartialEq)]
pub enum StopKind {
    /// A flowop could not obtain a resource (NORSC).
    Norsc,
    /// A flowop failed (ERROR).
    Error,
    /// Stopped on purpose (firstdone, finishon*, DONE).
    Done,
}

/// Longest stop reason kept (bytes).
const REASON_MAX: usize = 2048;

/// The first stop reason of a run, written once by whoever stops it.
#[repr(C)]
struct Reason {
    /// 0 empty, 1 being written, 2 set.
    state: AtomicU32,
    kind: AtomicU32,
    len: AtomicUsize,
    bytes: [AtomicU8; REASON_MAX],
}

/// Run control, in shared memory: every process instance sees it.
#[repr(C)]
pub struct Control {
    pub stop: AtomicBool,
    pub threads_done: AtomicUsize,
    /// Start gate (a futex word): workers wait until the runner sets it to 1.
    pub gate: AtomicU32,
    pub events: EventQueue,
    reason: Reason,
}

// SAFETY: atomics only.
unsafe impl Zeroable for Control {}

/// State shared by all workers of a run.
#[derive(Debug)]
pub struct Shared {
    pub filesets: Vec<Arc<Fileset>>,
    pub ctl: ShmBox<Control>,
    pub mode: QuitMode,
    /// Sync objects of the `block` / `semblock` flowop instances, by flowop
    /// name (indexes into `sync`): targets of `wakeup` / `sempost`.
    pub blocks: std::collections::HashMap<String, Vec<usize>>,
    pub sync: ShmSlice<SyncObj>,
    pub out: Arc<Output>,
    /// 1.4.9.1 `indexed` scaling (value x entries/2, docs/filebench-language.md#picking).
    pub indexed_v14: bool,
    /// `debug` >= 2: `print` flowops log their message.
    pub verbose: bool,
    /// `enable lathist`: keep the log2 latency buckets.
    pub lathist: bool,
    /// Largest I/O buffer a flowop may allocate (an `iosize` drawn from a
    /// random variable is only known at run time).
    pub max_io_bytes: u64,
}

fn stop_kind_code(k: &StopKind) -> u32 {
    match k {
        StopKind::Norsc => 1,
        StopKind::Error => 2,
        StopKind::Done => 3,
    }
}

impl Shared {
    /// Records the first stop reason and stops everyone (all processes).
    pub fn abort(&self, kind: StopKind, msg: String) {
        let r = &self.ctl.reason;
        if r.state.compare_exchange(0, 1, std::sync::atomic::Ordering::AcqRel, Relaxed).is_ok() {
            let mut end = msg.len().min(REASON_MAX);
            while !msg.is_char_boundary(end) {
                end -= 1;
            }
            for (d, b) in r.bytes.iter().zip(msg.as_bytes()[..end].iter()) {
                d.store(*b, Relaxed);
            }
            r.len.store(end, Relaxed);
            r.kind.store(stop_kind_code(&kind), Relaxed);
            r.state.store(2, std::sync::atomic::Ordering::Release);
        }
        self.ctl.stop.store(true, Relaxed);
    }

    /// The first stop reason, if any.
    pub fn reason(&self) -> Option<(StopKind, String)> {
        let r = &self.ctl.reason;
        if r.state.load(std::sync::atomic::Ordering::Acquire) != 2 {
            return None;
        }
        let len = r.len.load(Relaxed).min(REASON_MAX);
        let bytes: Vec<u8> = r.bytes[..len].iter().map(|b| b.load(Relaxed)).collect();
        let kind = match r.kind.load(Relaxed) {
            1 => StopKind::Norsc,
            3 => StopKind::Done,
            _ => StopKind::Error,
        };
        Some((kind, String::from_utf8_lossy(&bytes).into_owned()))
    }

    pub fn stopping(&self) -> bool {
        self.ctl.stop.load(Relaxed)
    }

    /// The stop flag, for waits.
    pub fn stop_flag(&self) -> &AtomicBool {
        &self.ctl.stop
    }

    /// The event queue of the rate limiters.
    pub fn events(&self) -> &EventQueue {
        &self.ctl.events
    }

    /// Opens the start gate.
    pub fn open_gate(&self) {
        self.ctl.gate.store(1, std::sync::atomic::Ordering::Release);
        notify(&self.ctl.gate);
    }
}

/// One fd slot: descriptor (-1 = closed) and the last file used on it.
#[derive(Debug, Clone, Copy)]
pub struct Slot {
    pub fd: i32,
    pub fse: Option<(usize, usize)>,
}

/// Per-flowop run-time state that Filebench keeps in the runtime flowop.
#[derive(Debug, Default)]
pub struct Aux {
    pub tputlast: u64,
    pub bucket: i64,
    pub target: Option<usize>,
    pub initted: bool,
    /// Index of this block/semblock instance's object in `Shared::sync`.
    pub sync: Option<usize>,
    pub buf: Vec<u8>,
    pub trv: (f64, f64, u64),
}

/// Identity of a worker for messages.
#[derive(Debug, Clone)]
pub struct Ident {
    pub proc_name: String,
    pub proc_instance: u64,
    pub thread_name: String,
    pub thread_instance: u64,
    /// Unique thread id (1..), the private rotor index for `opennext`.
    pub utid: usize,
}

/// One worker thread's context.
pub struct Worker {
    pub shared: Arc<Shared>,
    pub flowops: Arc<Vec<FlowopSpec>>,
    pub stats: Arc<ThreadStats>,
    /// All threads of this process instance (for `controlstats`).
    pub proc_stats: Arc<Mutex<Vec<Arc<ThreadStats>>>>,
    /// Per-thread histograms (a `RefCell` so that `endop` takes `&self`
    /// and flowops can hold references into the shared state meanwhile).
    pub hist: std::cell::RefCell<Vec<Option<Histogram<u32>>>>,
    /// Latencies not yet in `hist`: recording each one directly costs a cache
    /// miss per op (a hundred threads' histograms do not stay cached), so
    /// they are buffered and added in batches (the statistics of
    /// docs/filebench-language.md#statistics are unchanged).
    pending: std::cell::RefCell<Vec<(usize, u64)>>,
    pub aux: Vec<Aux>,
    pub slots: Vec<Slot>,
    pub fd_rotor: usize,
    pub mem: Vec<u8>,
    pub mt: MtState,
    pub id: Ident,
    /// Process `nice` and thread `ioprio` (8 = leave alone), applied at start.
    pub nice: u64,
    pub ioprio: u64,
}

/// What a worker hands back when it ends.
pub struct WorkerResult {
    pub hist: Vec<Option<Histogram<u32>>>,
}

impl Worker {
    /// Builds a worker; `nstats` is the number of stat ids of the run.
    pub fn new(shared: Arc<Shared>, flowops: Arc<Vec<FlowopSpec>>, nstats: usize, id: Ident, memsize: u64) -> Self {
        let mut hist: Vec<Option<Histogram<u32>>> = (0..nstats).map(|_| None).collect();
        fn mark(fs: &[FlowopSpec], h: &mut Vec<Option<Histogram<u32>>>) {
            for f in fs {
                h[f.stat_id].get_or_insert_with(new_histogram);
                mark(&f.inner, h);
            }
        }
        mark(&flowops, &mut hist);
        let seed = 4357u32.wrapping_add(id.utid as u32 - 1);
        Worker {
            shared,
            flowops,
            stats: Arc::new(ThreadStats::new(nstats)),
            proc_stats: Arc::new(Mutex::new(Vec::new())),
            hist: std::cell::RefCell::new(hist),
            pending: std::cell::RefCell::new(Vec::with_capacity(PENDING)),
            aux: (0..nstats).map(|_| Aux::default()).collect(),
            slots: vec![Slot { fd: -1, fse: None }; NSLOTS],
            fd_rotor: NSLOTS - 2,
            mem: vec![0u8; memsize as usize],
            mt: MtState::seed32(seed),
            id,
            nice: 0,
            ioprio: 8,
        }
    }

    /// `flowop_endop`: records one op that began at `t0`.
    #[inline]
    pub fn endop(&self, fo: &FlowopSpec, t0: Stamp, bytes: u64) {
        let ns = clock::since(t0);
        self.stats.flowops[fo.stat_id].record(ns, bytes, fo.kind.rw(), self.shared.lathist);
        let mut p = self.pending.borrow_mut();
        p.push((fo.stat_id, ns.max(1)));
        if p.len() == PENDING {
            self.flush_hist(&mut p);
        }
    }

    fn flush_hist(&self, pending: &mut Vec<(usize, u64)>) {
        let mut hist = self.hist.borrow_mut();
        for &(id, ns) in pending.iter() {
            if let Some(h) = hist[id].as_mut() {
                h.saturating_record(ns);
            }
        }
        pending.clear();
    }

    /// Runs the thread loop until the run stops or this thread is done.
    pub fn run(mut self) -> WorkerResult {
        self.apply_priorities();
        self.wait_gate();
        let flowops = self.flowops.clone();
        'outer: while !self.shared.stopping() {
            for fo in flowops.iter() {
                let r = self.exec_iters(fo);
                if r != Ret::Ok {
                    self.handle(fo, r);
                    break 'outer;
                }
                if self.shared.stopping() {
                    break 'outer;
                }
            }
        }
        self.close_all();
        self.shared.ctl.threads_done.fetch_add(1, Relaxed);
        self.flush_hist(&mut self.pending.borrow_mut());
        WorkerResult { hist: self.hist.into_inner() }
    }

    /// `nice(value)` and `ioprio_set(IOPRIO_CLASS_BE, n)` for this thread
    /// (Linux applies both per thread); failures are ignored like Filebench.
    fn apply_priorities(&self) {
        unsafe {
            if self.nice != 0 {
                let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
                libc::setpriority(libc::PRIO_PROCESS, tid, self.nice as i32);
            }
            if self.ioprio < 8 {
                const IOPRIO_CLASS_BE: i64 = 2;
                libc::syscall(libc::SYS_ioprio_set, 1, 0, (IOPRIO_CLASS_BE << 13) | self.ioprio as i64);
            }
        }
    }

    fn wait_gate(&self) {
        let gate = &self.shared.ctl.gate;
        while gate.load(std::sync::atomic::Ordering::Acquire) == 0 && !self.shared.stopping() {
            futex_wait(gate, 0, Duration::from_millis(50));
        }
    }

    fn handle(&self, fo: &FlowopSpec, r: Ret) {
        let who = format!("{}-{}", self.id.thread_name, self.id.thread_instance);
        match r {
            Ret::Error(msg) => self.shared.abort(StopKind::Error, format!("{who}: flowop {}-1 failed: {msg}", fo.name)),
            Ret::Done => self.shared.abort(StopKind::Done, format!("{who}: flowop {} finished the run", fo.name)),
            Ret::Finish(msg) => match self.shared.mode {
                QuitMode::AllDone => {}
                _ => self.shared.abort(StopKind::Done, format!("{who}: flowop {}: {msg}", fo.name)),
            },
            Ret::Norsc(msg) => match self.shared.mode {
                QuitMode::Timeout => self.shared.abort(
                    StopKind::Norsc,
                    format!("flowop {}-1 could not obtain a file ({msg}). Please reduce runtime, increase fileset entries ($nfiles), or switch modes.", fo.name),
                ),
                QuitMode::FirstDone => self.shared.abort(StopKind::Done, format!("firstdone: {who}: flowop {} done ({msg})", fo.name)),
                QuitMode::AllDone => {}
            },
            Ret::Ok => {}
        }
    }

    /// Runs a flowop `iters` times in a row.
    pub fn exec_iters(&mut self, fo: &FlowopSpec) -> Ret {
        let iters = match &fo.iters {
            crate::vars::Avd::Int(1) => 1,
            a => a.get_int(),
        };
        for i in 0..iters {
            let r = self.exec(fo);
            if r != Ret::Ok {
                return r;
            }
            // `iters` can be any number: look at the stop flag on the way.
            if i & 1023 == 1023 && self.shared.stopping() {
                break;
            }
        }
        Ret::Ok
    }

    fn exec(&mut self, fo: &FlowopSpec) -> Ret {
        use Kind::*;
        match fo.kind {
            Read => self.read(fo),
            Write => self.write(fo),
            ReadWholeFile => self.readwholefile(fo),
            WriteWholeFile => self.writewholefile(fo),
            AppendFile => self.appendfile(fo),
            AppendFileRand => self.appendfilerand(fo),
            AioWrite => self.aiowrite(fo),
            AioWait => self.aiowait(fo),
            OpenFile => {
                let slot = self.fdnum(fo);
                self.openfile_common(fo, slot)
            }
            CreateFile => self.createfile(fo),
            CloseFile => self.closefile(fo),
            DeleteFile => self.deletefile(fo),
            StatFile => self.statfile(fo),
            Fsync => self.fsync(fo),
            FsyncSet => self.fsyncset(fo),
            MakeDir | RemoveDir => self.leafdir(fo),
            ListDir => self.listdir(fo),
            Composite => self.composite(fo),
            _ => self.other(fo),
        }
    }

    fn composite(&mut self, fo: &FlowopSpec) -> Ret {
        for inner in &fo.inner {
            let r = self.exec_iters(inner);
            if r != Ret::Ok {
                return r;
            }
        }
        Ret::Ok
    }

    fn close_all(&mut self) {
        for s in self.slots.iter_mut() {
            if s.fd >= 0 {
                unsafe { libc::close(s.fd) };
                if let Some((f, e)) = s.fse {
                    self.shared.filesets[f].closed(e);
                }
                s.fd = -1;
            }
        }
    }

    /// `flowoplib_fdnum`: the flowop's slot (fd attr, opennext rotor, or 0).
    pub fn fdnum(&mut self, fo: &FlowopSpec) -> usize {
        if fo.fd > 0 {
            return fo.fd;
        }
        if fo.opennext.get_bool() {
            let r = self.fd_rotor;
            self.fd_rotor = if r == 0 { NSLOTS - 2 } else { r - 1 };
            return r;
        }
        0
    }

    /// The stop flag, as a closure for waits.
    pub fn stop_fn(&self) -> impl Fn() -> bool + '_ {
        move || self.shared.stopping()
    }
}
