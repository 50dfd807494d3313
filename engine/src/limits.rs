//! Bounds on what a run takes from the machine, checked from the
//! declarations before anything is allocated
//! (docs/filebench-language.md#resource-limits).
//!
//! Why: every number in a .f file is typed by a user; a tabular weight, an
//! `entries`, an `instances` or a `memsize` can ask for more memory, threads
//! or open files than the machine has (a randtable weight of 2^31 once
//! allocated 24 GB and got the host OOM-killed). Each need is estimated from
//! the declarations (`check` and `run` alike) and refused with the file, the
//! line and the figure, before the run allocates or creates anything.
//! Population also stops at its budget, for the trees whose size the
//! estimate cannot foresee (random directory widths and depths).

use std::sync::OnceLock;

use crate::error::{Pos, WmlError};
use crate::fileset::tree::entry_bytes;
use crate::kind::Kind;
use crate::model::{FlowopSpec, ProcSpec, RunModel};
use crate::stats::{new_histogram, ThreadStats};
use crate::vars::Avd;
use crate::worker::NSLOTS;

const GIB: f64 = (1u64 << 30) as f64;

/// What this machine lets one run use.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Machine {
    /// Memory a run may use: the available memory, or less if the cgroup's
    /// limit leaves less.
    pub memory_bytes: u64,
    /// Open files per process (RLIMIT_NOFILE, after raising it to the hard limit).
    pub nofile: u64,
    /// Threads and processes the run may still start (threads-max, pid_max,
    /// RLIMIT_NPROC, the cgroup's pids.max).
    pub tasks: u64,
    /// Open files the whole system can still hand out (fs.file-max).
    pub system_files: u64,
}

fn read_u64(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.split_whitespace().next()?.parse().ok()
}

fn meminfo_kib(key: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// This process's cgroup directories for `controller` (v1) and the unified
/// hierarchy (v2), most specific first, then the mount roots (in a
/// container the root is the container's own cgroup).
fn cgroup_dirs(controller: &str) -> Vec<String> {
    let mut dirs = Vec::new();
    let text = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    for line in text.lines() {
        let mut f = line.splitn(3, ':');
        let (_, ctrls, path) = (f.next(), f.next().unwrap_or(""), f.next().unwrap_or(""));
        if ctrls.split(',').any(|c| c == controller) {
            dirs.push(format!("/sys/fs/cgroup/{controller}{path}"));
        } else if ctrls.is_empty() {
            dirs.push(format!("/sys/fs/cgroup{path}"));
        }
    }
    dirs.push(format!("/sys/fs/cgroup/{controller}"));
    dirs.push("/sys/fs/cgroup".to_string());
    dirs
}

/// The smallest `limit - usage` over the cgroup files that exist.
fn cgroup_room(controller: &str, files: &[(&str, &str)]) -> Option<u64> {
    let mut room: Option<u64> = None;
    for dir in cgroup_dirs(controller) {
        for (limit, usage) in files {
            if let Some(l) = read_u64(&format!("{dir}/{limit}")) {
                let u = read_u64(&format!("{dir}/{usage}")).unwrap_or(0);
                let r = l.saturating_sub(u);
                room = Some(room.map_or(r, |x| x.min(r)));
            }
        }
    }
    room
}

fn rlimit(resource: libc::__rlimit_resource_t) -> (u64, u64) {
    let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: a valid out-pointer.
    unsafe { libc::getrlimit(resource, &mut r) };
    (r.rlim_cur, r.rlim_max)
}

/// Raises the soft open-file limit to the hard limit (once per process);
/// returns the soft limit now in force. Process instances inherit it.
pub fn raise_nofile() -> u64 {
    static DONE: OnceLock<u64> = OnceLock::new();
    *DONE.get_or_init(|| {
        let (soft, hard) = rlimit(libc::RLIMIT_NOFILE);
        if soft < hard {
            let r = libc::rlimit { rlim_cur: hard, rlim_max: hard };
            // SAFETY: a valid rlimit.
            if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &r) } == 0 {
                return hard;
            }
        }
        soft
    })
}

impl Machine {
    /// Reads the limits of this machine and process (raising RLIMIT_NOFILE).
    pub fn probe() -> Machine {
        let available = meminfo_kib("MemAvailable:").unwrap_or(u64::MAX / 1024).saturating_mul(1024);
        let cgroup = cgroup_room(
            "memory",
            &[("memory.limit_in_bytes", "memory.usage_in_bytes"), ("memory.max", "memory.current")],
        );
        let memory_bytes = cgroup.map_or(available, |c| c.min(available));
        let running = std::fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|l| l.split_whitespace().nth(3)?.split('/').nth(1)?.parse::<u64>().ok())
            .unwrap_or(0);
        let kernel = read_u64("/proc/sys/kernel/threads-max")
            .unwrap_or(u64::MAX)
            .min(read_u64("/proc/sys/kernel/pid_max").unwrap_or(u64::MAX))
            .saturating_sub(running);
        let nproc = rlimit(libc::RLIMIT_NPROC).0;
        let pids = cgroup_room("pids", &[("pids.max", "pids.current")]).unwrap_or(u64::MAX);
        let file_nr = std::fs::read_to_string("/proc/sys/fs/file-nr").unwrap_or_default();
        let nr: Vec<u64> = file_nr.split_whitespace().filter_map(|x| x.parse().ok()).collect();
        let system_files = match nr.as_slice() {
            [allocated, _, max] => max.saturating_sub(*allocated),
            _ => u64::MAX,
        };
        Machine { memory_bytes, nofile: raise_nofile(), tasks: kernel.min(nproc).min(pids), system_files }
    }
}

fn gib(bytes: u64) -> String {
    let g = bytes as f64 / GIB;
    if g >= 10.0 {
        format!("{g:.0} GiB")
    } else if g >= 0.1 {
        format!("{g:.1} GiB")
    } else {
        format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
    }
}

/// Memory a fileset's tree will take, from its declaration: every file,
/// leaf directory and directory is an entry of `entry_bytes`; directories
/// number about (files + leaf dirs) / (width - 1), all of them when the
/// width is below 2 (one entry per directory).
pub fn fileset_bytes(entries: u64, leafdirs: u64, meanwidth: i64, root_len: usize) -> u64 {
    let n = entries.saturating_add(leafdirs);
    let width = meanwidth as f64;
    let depth = if width >= 2.0 { ((n.max(2) as f64).ln() / width.ln()).clamp(1.0, 64.0) } else { 1.0 };
    let dirs = if width >= 2.0 { (n as f64 / (width - 1.0)) as u64 + 1 } else { n.saturating_add(1) };
    let per_entry = entry_bytes(9 * (depth.ceil() as usize + 1), root_len);
    n.saturating_add(dirs).saturating_mul(per_entry)
}

/// The refusal of a fileset that does not fit.
pub fn fileset_error(file: &str, pos: Option<Pos>, name: &str, figure: &str, bytes: u64, m: &Machine) -> WmlError {
    WmlError::semantic(
        file,
        pos,
        format!(
            "fileset {name}: {figure} needs about {} of memory for its tree; this machine has {} available",
            gib(bytes),
            gib(m.memory_bytes)
        ),
    )
}

/// Bytes of one thread's latency histogram.
fn histogram_bytes() -> u64 {
    static B: OnceLock<u64> = OnceLock::new();
    *B.get_or_init(|| (new_histogram().distinct_values() * std::mem::size_of::<u32>()) as u64)
}

/// Resident stack, buffers and bookkeeping of a worker thread besides its
/// `memsize`, histograms and counters.
const THREAD_FIXED_BYTES: u64 = 96 << 10;
/// A process instance: its own page tables and copied pages.
const PROCESS_BYTES: u64 = 4 << 20;
/// Descriptors of a process instance besides the workers' (stdio, pipe, spare).
const PROCESS_FDS: u64 = 8;

fn count_flowops(fs: &[FlowopSpec]) -> u64 {
    fs.iter().map(|f| 1 + count_flowops(&f.inner)).sum()
}

/// fd slots a thread can fill, plus one while it lists a directory.
fn fd_slots(fs: &[FlowopSpec]) -> u64 {
    fn walk(fs: &[FlowopSpec], slots: &mut [bool; NSLOTS], listdir: &mut bool) {
        for f in fs {
            if matches!(f.kind, Kind::OpenFile | Kind::CreateFile) || f.kind.does_io() {
                if f.fd > 0 {
                    slots[f.fd.min(NSLOTS - 1)] = true;
                } else if !matches!(f.opennext, Avd::Bool(false)) {
                    // opennext rotates through slots 127 .. 0
                    slots[..NSLOTS - 1].iter_mut().for_each(|s| *s = true);
                } else {
                    slots[0] = true;
                }
            }
            *listdir |= f.kind == Kind::ListDir;
            walk(&f.inner, slots, listdir);
        }
    }
    let mut slots = [false; NSLOTS];
    let mut listdir = false;
    walk(fs, &mut slots, &mut listdir);
    slots.iter().filter(|s| **s).count() as u64 + listdir as u64
}

/// What a run will take, from its model.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Need {
    pub processes: u64,
    pub threads: u64,
    pub memory_bytes: u64,
    pub files: u64,
}

/// Threads and memory of one thread definition (all its instances, in one
/// process instance).
fn thread_need(t: &crate::model::ThreadSpec, nstats: usize) -> (u64, u64) {
    let per = THREAD_FIXED_BYTES
        .saturating_add(t.memsize)
        .saturating_add(count_flowops(&t.flowops).saturating_mul(histogram_bytes()))
        .saturating_add(ThreadStats::bytes_for(nstats))
        .saturating_add((nstats * 128) as u64);
    (t.instances, t.instances.saturating_mul(per))
}

/// Checks the run's threads, memory and open files against the machine;
/// `fileset_bytes` is what the filesets' trees take. Returns every refusal.
pub fn check_run(file: &str, model: &RunModel, fileset_bytes: u64, m: &Machine) -> (Need, Vec<WmlError>) {
    let nstats = model.stats.len();
    let mut need = Need::default();
    let mut errors = Vec::new();
    let mut biggest: Option<(u64, &ProcSpec, usize)> = None;
    for p in &model.procs {
        let (mut threads, mut bytes, mut fds, mut slots) = (0u64, PROCESS_BYTES, PROCESS_FDS, 0u64);
        for (ti, t) in p.threads.iter().enumerate() {
            let (n, b) = thread_need(t, nstats);
            threads = threads.saturating_add(n);
            bytes = bytes.saturating_add(b);
            let s = fd_slots(&t.flowops);
            slots = slots.max(s);
            fds = fds.saturating_add(t.instances.saturating_mul(s));
            let all = n.saturating_mul(p.instances);
            if biggest.is_none_or(|(x, _, _)| all > x) {
                biggest = Some((all, p, ti));
            }
        }
        need.processes = need.processes.saturating_add(p.instances);
        need.threads = need.threads.saturating_add(threads.saturating_mul(p.instances));
        need.memory_bytes = need.memory_bytes.saturating_add(bytes.saturating_mul(p.instances));
        need.files = need.files.saturating_add(fds.saturating_mul(p.instances));
        if fds > m.nofile {
            errors.push(WmlError::semantic(
                file,
                Some(p.pos),
                format!(
                    "process {}: each instance may hold up to {fds} open files ({threads} thread instances x up to \
                     {slots} fd slots, and {PROCESS_FDS} of the process); the open-file limit (RLIMIT_NOFILE) of this \
                     machine is {}",
                    p.name, m.nofile
                ),
            ));
        }
    }
    let tasks = need.threads.saturating_add(need.processes);
    if tasks > m.tasks {
        let (pos, what) = match biggest {
            Some((_, p, ti)) => {
                let t = &p.threads[ti];
                let at = if p.instances > t.instances { p.instances_pos } else { t.instances_pos };
                (
                    at.or(Some(t.pos)),
                    format!(
                        "process {} (instances={}) x thread {} (instances={}): ",
                        p.name, p.instances, t.name, t.instances
                    ),
                )
            }
            None => (None, String::new()),
        };
        errors.push(WmlError::semantic(
            file,
            pos,
            format!(
                "{what}the run needs {} threads in {} processes; this machine allows {} more",
                need.threads, need.processes, m.tasks
            ),
        ));
    }
    if need.files > m.system_files && errors.is_empty() {
        errors.push(WmlError::semantic(
            file,
            model.procs.first().map(|p| p.pos),
            format!(
                "the run may hold up to {} open files in all; the system-wide limit (fs.file-max) leaves {}",
                need.files, m.system_files
            ),
        ));
    }
    let total = need.memory_bytes.saturating_add(fileset_bytes);
    if total > m.memory_bytes && tasks <= m.tasks {
        let pos = biggest.map(|(_, p, ti)| p.threads[ti].memsize_pos.or(Some(p.threads[ti].pos))).unwrap_or(None);
        let detail = biggest
            .map(|(_, p, ti)| {
                let t = &p.threads[ti];
                format!(
                    " (largest: process {} x {} instances, thread {} x {} instances, memsize={})",
                    p.name, p.instances, t.name, t.instances, t.memsize
                )
            })
            .unwrap_or_default();
        errors.push(WmlError::semantic(
            file,
            pos,
            format!(
                "the run needs about {} of memory ({} for {} threads in {} processes{detail}, {} for fileset trees); \
                 this machine has {} available",
                gib(total),
                gib(need.memory_bytes),
                need.threads,
                need.processes,
                gib(fileset_bytes),
                gib(m.memory_bytes)
            ),
        ));
    }
    (need, errors)
}

/// The largest I/O buffer a flowop may allocate at run time (an `iosize`
/// drawn from a random variable cannot be checked before).
pub fn max_io_bytes(m: &Machine) -> u64 {
    (m.memory_bytes / 4).max(1 << 20)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_reads_this_machine() {
        let m = Machine::probe();
        assert!(m.memory_bytes > 1 << 20, "{m:?}");
        assert!(m.nofile >= 64 && m.tasks > 10 && m.system_files > 100, "{m:?}");
        assert_eq!(m.nofile, rlimit(libc::RLIMIT_NOFILE).1, "soft raised to hard");
    }

    #[test]
    fn fileset_estimate_grows_with_entries_and_narrow_widths() {
        let a = fileset_bytes(1000, 0, 20, 20);
        let b = fileset_bytes(1_000_000, 0, 20, 20);
        assert!(b > 1000 * a && b < 1400 * a, "{a} {b}"); // deeper paths per entry
        assert!(fileset_bytes(1000, 0, 1, 20) > a, "width 1: a directory per file");
        assert_eq!(fileset_bytes(u64::MAX, u64::MAX, 20, 20), u64::MAX);
    }
}
