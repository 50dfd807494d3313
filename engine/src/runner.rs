//! Running a workload: start workers, time the run, report intervals, stop
//! (WML-SPEC §7.1-§7.2, §11).
//!
//! Why the runner owns no counters: workers count into their own
//! `ThreadStats`; the runner only reads them (psrun intervals, the final
//! snapshot) and merges histograms after joining the workers.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::ast::QuitMode;
use crate::fileset::Fileset;
use crate::kind::Kind;
use crate::model::{FlowopSpec, RunModel};
use crate::output::Output;
use crate::report;
use crate::stats::{merge_histograms, ThreadStats, Totals};
use crate::vars::Avd;
use crate::worker::{EventQueue, Ident, SemPair, Shared, Signal, StopKind, Worker, WorkerResult};

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
    workers: Vec<Worker>,
    all_stats: Vec<Arc<ThreadStats>>,
}

fn sync_objects(fs: &[FlowopSpec], out: &mut Vec<(String, Kind, u64)>) {
    for f in fs {
        if matches!(f.kind, Kind::Block | Kind::SemBlock) {
            out.push((f.name.clone(), f.kind, f.highwater));
        }
        sync_objects(&f.inner, out);
    }
}

fn attach_sync(w: &mut Worker, fs: &[FlowopSpec], objs: &mut std::vec::IntoIter<(Arc<Signal>, Arc<SemPair>)>) {
    for f in fs {
        if matches!(f.kind, Kind::Block | Kind::SemBlock) {
            let (sig, sem) = objs.next().expect("one object per sync flowop");
            w.aux[f.stat_id].signal = Some(sig);
            w.aux[f.stat_id].sem = Some(sem);
        }
        attach_sync(w, &f.inner, objs);
    }
}

/// Builds the shared state and every worker (not started yet).
fn plan(model: &RunModel, filesets: Vec<Arc<Fileset>>, p: &RunParams, out: Arc<Output>) -> (Arc<Shared>, Plan) {
    let mut blocks: HashMap<String, Vec<Arc<Signal>>> = HashMap::new();
    let mut sems: HashMap<String, Vec<Arc<SemPair>>> = HashMap::new();
    let mut per_thread_objs = Vec::new();
    for pr in &model.procs {
        for _ in 0..pr.instances {
            for t in &pr.threads {
                for _ in 0..t.instances {
                    let mut specs = Vec::new();
                    sync_objects(&t.flowops, &mut specs);
                    let objs: Vec<_> = specs
                        .into_iter()
                        .map(|(name, _, hw)| {
                            let s = Arc::new(Signal::default());
                            let m = Arc::new(SemPair::new(hw));
                            blocks.entry(name.clone()).or_default().push(s.clone());
                            sems.entry(name).or_default().push(m.clone());
                            (s, m)
                        })
                        .collect();
                    per_thread_objs.push(objs);
                }
            }
        }
    }
    // Open counts are read only by deletefile: without one, do not keep them.
    let deletes = model.stats.iter().any(|(_, k)| *k == Kind::DeleteFile);
    for fs in &filesets {
        fs.set_track_opens(deletes);
    }
    let shared = Arc::new(Shared {
        filesets,
        stop: AtomicBool::new(false),
        reason: Mutex::new(None),
        mode: p.mode,
        events: EventQueue::default(),
        blocks,
        sems,
        out,
        indexed_v14: p.indexed_v14,
        threads_done: AtomicUsize::new(0),
        verbose: p.verbose,
        lathist: p.lathist,
        gate: (Mutex::new(false), Condvar::new()),
    });
    let mut objs_iter = per_thread_objs.into_iter();
    let mut workers = Vec::new();
    let mut all_stats = Vec::new();
    let mut utid = 0;
    for pr in &model.procs {
        for pi in 0..pr.instances {
            let group = Arc::new(Mutex::new(Vec::new()));
            for t in &pr.threads {
                let fos = Arc::new(t.flowops.clone());
                for ti in 0..t.instances {
                    utid += 1;
                    let id = Ident {
                        proc_name: pr.name.clone(),
                        proc_instance: pi,
                        thread_name: t.name.clone(),
                        thread_instance: ti,
                        utid,
                    };
                    let mut w = Worker::new(shared.clone(), fos.clone(), model.stats.len(), id, t.memsize);
                    w.proc_stats = group.clone();
                    w.nice = pr.nice;
                    w.ioprio = t.ioprio;
                    group.lock().unwrap().push(w.stats.clone());
                    all_stats.push(w.stats.clone());
                    let mut it = objs_iter.next().unwrap_or_default().into_iter();
                    attach_sync(&mut w, &fos, &mut it);
                    workers.push(w);
                }
            }
        }
    }
    (shared, Plan { workers, all_stats })
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

/// Runs the model against populated filesets.
pub fn run(model: &RunModel, filesets: Vec<Arc<Fileset>>, p: &RunParams, out: Arc<Output>) -> RunResult {
    crate::clock::init();
    let (shared, plan) = plan(model, filesets, p, out.clone());
    let Plan { workers, all_stats } = plan;
    for pr in model.procs.iter().rev() {
        out.log(&format!("Starting {} {} instances", pr.instances, pr.name));
    }
    let nworkers = workers.len();
    let handles: Vec<_> = workers
        .into_iter()
        .map(|w| std::thread::Builder::new().stack_size(256 << 10).spawn(move || w.run()).expect("spawn worker"))
        .collect();
    let egen = p.eventgen_rate.clone().filter(|r| r.get_int() > 0 || r.is_random()).map(|rate| {
        shared.events.enabled.store(true, Relaxed);
        shared.events.clear();
        let sh = shared.clone();
        std::thread::spawn(move || sh.events.generate(&rate, &sh.stop))
    });
    out.log("Running...");
    let t0 = Instant::now();
    {
        let (m, cv) = &shared.gate;
        *m.lock().unwrap() = true;
        cv.notify_all();
    }
    let (signal, base, last_t) = wait_run(&shared, p, t0, nworkers, &all_stats, model, &out);
    let measured_s = t0.elapsed().as_secs_f64();
    shared.stop.store(true, Relaxed);
    let results: Vec<WorkerResult> = handles.into_iter().filter_map(|h| h.join().ok()).collect();
    if let Some(e) = egen {
        let _ = e.join();
    }
    let totals = snapshot(&all_stats, model.stats.len());
    let hists =
        (0..model.stats.len()).map(|i| merge_histograms(results.iter().filter_map(|r| r.hist[i].as_ref()))).collect();
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
    let reason = shared.reason.lock().unwrap().clone();
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
    out: &Output,
) -> (i32, Vec<Totals>, f64) {
    let period = p.psrun_period.map(|x| x.unsigned_abs().max(1) as f64);
    let mut next_print = period.unwrap_or(f64::INFINITY);
    let mut base = snapshot(all, model.stats.len());
    let mut last_t = 0.0;
    loop {
        std::thread::sleep(Duration::from_millis(10));
        let t = t0.elapsed().as_secs_f64();
        let sig = SIGNALED.load(Relaxed);
        if sig != 0 {
            return (sig, base, last_t);
        }
        let all_done = nworkers > 0 && shared.threads_done.load(Relaxed) >= nworkers;
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
}
