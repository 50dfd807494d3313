//! Running a workload: start workers, time the run, report intervals, stop
//! (docs/filebench-language.md#run-and-psrun, #rate-limits).
//!
//! Why the runner owns no counters: workers count into their own
//! `ThreadStats`; the runner only reads them (psrun intervals, the final
//! snapshot) and merges histograms after joining the workers.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI32, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::ast::QuitMode;
use crate::fileset::Fileset;
use crate::kind::Kind;
use crate::model::{FlowopSpec, ProcSpec, RunModel, ThreadSpec};
use crate::output::Output;
use crate::procs::{self, Child, Group};
use crate::report;
use crate::shm::{ShmBox, ShmSlice};
use crate::stats::{ThreadStats, Totals};
use crate::vars::Avd;
use crate::worker::{Ident, Shared, StopKind, SyncObj, Worker};

/// Set by SIGINT/SIGTERM (the signal number).
pub static SIGNALED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    SIGNALED.store(sig, Relaxed);
}

/// Installs the SIGINT/SIGTERM handlers that stop a run cleanly.
pub fn install_signal_handlers() {
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
}

/// How to run.
#[derive(Debug, Clone)]
pub struct RunParams {
    /// None = until stopped by the workload or a signal.
    pub runtime_s: Option<f64>,
    /// psrun period in seconds (negative: clear after each print).
    pub psrun_period: Option<i64>,
    pub mode: QuitMode,
    pub eventgen_rate: Option<Avd>,
    pub lathist: bool,
    pub indexed_v14: bool,
    pub verbose: bool,
    /// Largest I/O buffer a flowop may allocate (`limits::max_io_bytes`).
    pub max_io_bytes: u64,
}

/// What a run measured.
#[derive(Debug)]
pub struct RunResult {
    pub measured_s: f64,
    pub stopped_early: bool,
    pub stop_kind: Option<StopKind>,
    pub reason: Option<String>,
    /// Per stat id, over the whole run.
    pub totals: Vec<Totals>,
    pub hists: Vec<Histogram<u64>>,
    /// psrun with a negative period: the counters since the last interval
    /// print and that interval's length (what Filebench prints last).
    pub tail: Option<(Vec<Totals>, f64)>,
}

struct Plan {
    groups: Vec<Group>,
    all_stats: Vec<Arc<ThreadStats>>,
    nworkers: usize,
}

/// Calls `f` for every block/semblock flowop, inner ones included, in order.
fn each_sync(fs: &[FlowopSpec], f: &mut dyn FnMut(&FlowopSpec)) {
    for fo in fs {
        if matches!(fo.kind, Kind::Block | Kind::SemBlock) {
            f(fo);
        }
        each_sync(&fo.inner, f);
    }
}

/// Every thread instance of the run, in order: (process, instance, thread, instance).
fn thread_instances(model: &RunModel) -> impl Iterator<Item = (&ProcSpec, u64, &ThreadSpec, u64)> {
    model.procs.iter().flat_map(|pr| {
        (0..pr.instances)
            .flat_map(move |pi| pr.threads.iter().flat_map(move |t| (0..t.instances).map(move |ti| (pr, pi, t, ti))))
    })
}

/// The sync objects of the run: one per block/semblock flowop of each thread
/// instance; by flowop name (for wakeup/sempost), with their `highwater`.
fn sync_layout(model: &RunModel) -> (HashMap<String, Vec<usize>>, Vec<u64>) {
    let mut blocks: HashMap<String, Vec<usize>> = HashMap::new();
    let mut highwater = Vec::new();
    for (_, _, t, _) in thread_instances(model) {
        each_sync(&t.flowops, &mut |f| {
            blocks.entry(f.name.clone()).or_default().push(highwater.len());
            highwater.push(f.highwater);
        });
    }
    (blocks, highwater)
}

/// Builds the shared state and every worker (not started yet), grouped by
/// process instance.
fn plan(model: &RunModel, filesets: Vec<Arc<Fileset>>, p: &RunParams, out: Arc<Output>) -> (Arc<Shared>, Plan) {
    // Open counts are read only by deletefile: without one, do not keep them.
    let deletes = model.stats.iter().any(|(_, k)| *k == Kind::DeleteFile);
    let nthreads = thread_instances(model).count();
    for fs in &filesets {
        fs.set_track_opens(deletes);
        fs.private_rotors(nthreads);
    }
    let (blocks, highwater) = sync_layout(model);
    let sync: ShmSlice<SyncObj> = ShmSlice::new(highwater.len());
    for (obj, hw) in sync.iter().zip(highwater) {
        obj.sem.init(hw);
    }
    let shared = Arc::new(Shared {
        filesets,
        ctl: ShmBox::new(),
        mode: p.mode,
        blocks,
        sync,
        out,
        indexed_v14: p.indexed_v14,
        verbose: p.verbose,
        lathist: p.lathist,
        max_io_bytes: p.max_io_bytes,
    });
    let mut groups: Vec<Group> = Vec::new();
    let mut all_stats = Vec::new();
    let mut proc_stats = Arc::new(Mutex::new(Vec::new()));
    let mut next_sync = 0;
    for (utid, (pr, pi, t, ti)) in thread_instances(model).enumerate() {
        if groups.last().is_none_or(|g| g.name != pr.name || g.instance != pi) {
            groups.push(Group { name: pr.name.clone(), instance: pi, workers: Vec::new() });
            proc_stats = Arc::new(Mutex::new(Vec::new()));
        }
        let id = Ident {
            proc_name: pr.name.clone(),
            proc_instance: pi,
            thread_name: t.name.clone(),
            thread_instance: ti,
            utid: utid + 1,
        };
        let fos = Arc::new(t.flowops.clone());
        let mut w = Worker::new(shared.clone(), fos, model.stats.len(), id, t.memsize);
        w.proc_stats = proc_stats.clone();
        w.nice = pr.nice;
        w.ioprio = t.ioprio;
        proc_stats.lock().unwrap().push(w.stats.clone());
        all_stats.push(w.stats.clone());
        let flowops = w.flowops.clone();
        each_sync(&flowops, &mut |f| {
            w.aux[f.stat_id].sync = Some(next_sync);
            next_sync += 1;
        });
        groups.last_mut().expect("a group").workers.push(w);
    }
    (shared, Plan { groups, all_stats, nworkers: nthreads })
}

/// Sums all threads' counters per stat id.
pub fn snapshot(all: &[Arc<ThreadStats>], nstats: usize) -> Vec<Totals> {
    let mut t = vec![Totals::default(); nstats];
    for s in all {
        for (i, c) in s.flowops.iter().enumerate() {
            t[i].add(&c.snapshot());
        }
    }
    t
}

/// Runs the model against populated filesets: one OS process per process
/// instance (`crate::procs`), the event generator and the clock here.
pub fn run(model: &RunModel, filesets: Vec<Arc<Fileset>>, p: &RunParams, out: Arc<Output>) -> RunResult {
    crate::clock::init();
    let (shared, plan) = plan(model, filesets, p, out.clone());
    let Plan { groups, all_stats, nworkers } = plan;
    for pr in model.procs.iter().rev() {
        out.log(&format!("Starting {} {} instances", pr.instances, pr.name));
    }
    let nstats = model.stats.len();
    let (mut children, failed) = procs::start(groups, nstats);
    if let Some(msg) = failed {
        shared.abort(StopKind::Error, msg);
    }
    let egen = p.eventgen_rate.clone().filter(|r| r.get_int() > 0 || r.is_random()).map(|rate| {
        shared.events().enabled.store(true, Relaxed);
        shared.events().clear();
        let sh = shared.clone();
        std::thread::spawn(move || sh.events().generate(&rate, sh.stop_flag()))
    });
    out.log("Running...");
    let t0 = Instant::now();
    shared.open_gate();
    let (signal, base, last_t) = wait_run(&shared, p, t0, nworkers, &all_stats, model, &mut children);
    let measured_s = t0.elapsed().as_secs_f64();
    shared.ctl.stop.store(true, Relaxed);
    let hists = procs::collect(children, nstats, &shared);
    if let Some(e) = egen {
        let _ = e.join();
    }
    let totals = snapshot(&all_stats, nstats);
    let tail = p
        .psrun_period
        .filter(|x| *x < 0)
        .map(|_| (totals.iter().zip(base.iter()).map(|(a, b)| a.since(b)).collect(), measured_s - last_t));
    let mut r = finish(shared, measured_s, totals, hists, signal, p);
    r.tail = tail;
    r
}

fn finish(
    shared: Arc<Shared>,
    measured_s: f64,
    totals: Vec<Totals>,
    hists: Vec<Histogram<u64>>,
    signal: i32,
    p: &RunParams,
) -> RunResult {
    let reason = shared.reason();
    let (stop_kind, reason) = match (signal, reason) {
        (s, _) if s != 0 => (Some(StopKind::Error), Some(format!("interrupted by signal {s}"))),
        (_, Some((k, m))) => (Some(k), Some(m)),
        (_, None) => (None, None),
    };
    let short = p.runtime_s.is_some_and(|r| measured_s + 0.05 < r);
    let stopped_early = stop_kind.is_some() && (short || p.runtime_s.is_none() || stop_kind != Some(StopKind::Done));
    RunResult { measured_s, stopped_early: stopped_early || signal != 0, stop_kind, reason, totals, hists, tail: None }
}

/// Sleeps through the run, printing psrun intervals; returns the signal
/// number if one arrived, and the counters and time of the last interval print.
fn wait_run(
    shared: &Shared,
    p: &RunParams,
    t0: Instant,
    nworkers: usize,
    all: &[Arc<ThreadStats>],
    model: &RunModel,
    children: &mut [Child],
) -> (i32, Vec<Totals>, f64) {
    let out = &shared.out;
    let period = p.psrun_period.map(|x| x.unsigned_abs().max(1) as f64);
    let mut next_print = period.unwrap_or(f64::INFINITY);
    let mut base = snapshot(all, model.stats.len());
    let mut last_t = 0.0;
    for tick in 0u64.. {
        std::thread::sleep(Duration::from_millis(10));
        if tick % 10 == 0 {
            procs::poll(children, shared);
        }
        let t = t0.elapsed().as_secs_f64();
        let sig = SIGNALED.load(Relaxed);
        if sig != 0 {
            return (sig, base, last_t);
        }
        let all_done = nworkers > 0 && shared.ctl.threads_done.load(Relaxed) >= nworkers;
        if shared.stopping() || all_done || p.runtime_s.is_some_and(|r| t >= r) {
            return (0, base, last_t);
        }
        if t >= next_print {
            let now = snapshot(all, model.stats.len());
            let interval: Vec<Totals> = now.iter().zip(base.iter()).map(|(a, b)| a.since(b)).collect();
            let clear = p.psrun_period.is_some_and(|x| x < 0);
            let shown = if clear { &interval } else { &now };
            let secs = if clear { t - last_t } else { t };
            report::text_block(out, model, shown, secs, p.lathist);
            report::emit_interval(out, t, &interval, t - last_t, model);
            if clear {
                for s in all {
                    s.flowops.iter().for_each(|c| c.reset_extremes());
                }
            }
            base = now;
            last_t = t;
            next_print += period.unwrap_or(f64::INFINITY);
        }
    }
    unreachable!("the tick counter does not run out")
}
