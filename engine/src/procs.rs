//! Process instances as OS processes (docs/filebench-language.md#processes-and-threads).
//!
//! Why: Filebench runs every instance of every `define process` as its own
//! OS process, so each has its own file table; a workload whose instances
//! each keep many files open (hundreds of `opennext` shadow processes) fits
//! the per-process open-file limit there, and must fit here too. The runner
//! forks one child per instance (no exec: every address stays valid, and
//! everything the instances share is atomics in shared memory, see
//! `crate::shm`). A child runs its instance's worker threads, then sends the
//! threads' latency histograms back through a pipe and exits; counters need
//! no sending, they are in shared memory. A child dies with its parent
//! (`PR_SET_PDEATHSIG`) and ignores SIGINT/SIGTERM: the parent stops it
//! through the shared stop flag, so a signal still ends the run cleanly.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd};

use hdrhistogram::Histogram;

use crate::stats::{merge_histograms, HIST_MAX_NS};
use crate::worker::{Shared, StopKind, Worker, WorkerResult};

/// The worker threads of one process instance.
pub struct Group {
    pub name: String,
    pub instance: u64,
    pub workers: Vec<Worker>,
}

/// A running process instance, seen from the parent.
pub struct Child {
    pid: libc::pid_t,
    results: File,
    label: String,
    /// `waitpid` status once reaped.
    status: Option<i32>,
}

/// Stack of a worker thread.
const WORKER_STACK: usize = 256 << 10;
/// End of a child's histogram stream.
const END: u32 = u32::MAX;

/// Forks one child per group. The children wait at the start gate. On a
/// failure the children already started are returned with the message.
pub fn start(groups: Vec<Group>, nstats: usize) -> (Vec<Child>, Option<String>) {
    let mut children = Vec::new();
    // Buffered output would be written again by every child.
    let _ = std::io::stdout().flush();
    let parent = unsafe { libc::getpid() };
    for g in groups {
        let label = format!("{}-{}", g.name, g.instance);
        let mut fds = [0; 2];
        // SAFETY: plain system calls; the child only runs `child_main`.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            let e = std::io::Error::last_os_error();
            return (children, Some(format!("cannot start process instance {label}: pipe: {e}")));
        }
        match unsafe { libc::fork() } {
            -1 => {
                let e = std::io::Error::last_os_error();
                unsafe {
                    libc::close(fds[0]);
                    libc::close(fds[1]);
                }
                return (children, Some(format!("cannot start process instance {label}: fork: {e}")));
            }
            0 => {
                // The read ends of this and the earlier children's pipes are
                // the parent's: keep the file table to our own descriptors.
                unsafe { libc::close(fds[0]) };
                for c in &children {
                    unsafe { libc::close(c.results.as_raw_fd()) };
                }
                child_main(g, fds[1], parent, nstats);
            }
            pid => {
                unsafe { libc::close(fds[1]) };
                drop(g);
                // SAFETY: the read end is ours alone.
                let results = unsafe { File::from_raw_fd(fds[0]) };
                children.push(Child { pid, results, label, status: None });
            }
        }
    }
    (children, None)
}

/// The child: run the workers, send their histograms, exit without running
/// any destructor of the parent's state (`_exit`).
fn child_main(g: Group, fd: i32, parent: libc::pid_t, nstats: usize) -> ! {
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if libc::getppid() != parent {
            libc::_exit(1);
        }
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGTERM, libc::SIG_IGN);
    }
    let shared = g.workers.first().map(|w| w.shared.clone());
    let mut handles = Vec::new();
    for w in g.workers {
        match std::thread::Builder::new().stack_size(WORKER_STACK).spawn(move || w.run()) {
            Ok(h) => handles.push(h),
            Err(e) => {
                if let Some(s) = &shared {
                    s.abort(
                        StopKind::Error,
                        format!("process instance {}-{}: cannot start a thread: {e}", g.name, g.instance),
                    );
                }
                break;
            }
        }
    }
    let results: Vec<WorkerResult> = handles.into_iter().filter_map(|h| h.join().ok()).collect();
    // SAFETY: the write end of our pipe.
    let mut pipe = unsafe { File::from_raw_fd(fd) };
    let code = match pipe.write_all(&encode(&results, nstats)) {
        Ok(()) => 0,
        Err(_) => 3,
    };
    unsafe { libc::_exit(code) }
}

/// Histograms of one instance, merged per stat id, as
/// `(stat id u32, pairs u32, (value u64, count u64)...)...` then `END`.
fn encode(results: &[WorkerResult], nstats: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..nstats {
        let hs: Vec<_> = results.iter().filter_map(|r| r.hist[i].as_ref()).collect();
        if hs.is_empty() {
            continue;
        }
        let h = merge_histograms(hs.into_iter());
        let pairs: Vec<(u64, u64)> = h.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())).collect();
        out.extend_from_slice(&(i as u32).to_le_bytes());
        out.extend_from_slice(&(pairs.len() as u32).to_le_bytes());
        for (v, c) in pairs {
            out.extend_from_slice(&v.to_le_bytes());
            out.extend_from_slice(&c.to_le_bytes());
        }
    }
    out.extend_from_slice(&END.to_le_bytes());
    out
}

/// Adds a child's stream to `hists`; false if it is cut short.
fn decode(buf: &[u8], hists: &mut [Histogram<u64>]) -> bool {
    let mut at = 0;
    let u32_at = |at: &mut usize| -> Option<u32> {
        let v = u32::from_le_bytes(buf.get(*at..*at + 4)?.try_into().ok()?);
        *at += 4;
        Some(v)
    };
    loop {
        let Some(id) = u32_at(&mut at) else { return false };
        if id == END {
            return at == buf.len();
        }
        let Some(n) = u32_at(&mut at) else { return false };
        for _ in 0..n {
            let Some(pair) = buf.get(at..at + 16) else { return false };
            at += 16;
            let v = u64::from_le_bytes(pair[..8].try_into().unwrap_or_default());
            let c = u64::from_le_bytes(pair[8..].try_into().unwrap_or_default());
            if let Some(h) = hists.get_mut(id as usize) {
                let _ = h.record_n(v.min(HIST_MAX_NS), c);
            }
        }
    }
}

fn describe(status: i32) -> String {
    if libc::WIFSIGNALED(status) {
        format!("was killed by signal {}", libc::WTERMSIG(status))
    } else {
        format!("exited with status {}", libc::WEXITSTATUS(status))
    }
}

/// Reaps children that have ended; an instance that died (a signal, or an
/// exit other than after its workers finished) stops the run with an error,
/// as Filebench's "Unexpected Process termination" does.
pub fn poll(children: &mut [Child], shared: &Shared) {
    for c in children.iter_mut().filter(|c| c.status.is_none()) {
        let mut status = 0;
        // SAFETY: our own child's pid.
        if unsafe { libc::waitpid(c.pid, &mut status, libc::WNOHANG) } == c.pid {
            c.status = Some(status);
            if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
                shared.abort(StopKind::Error, format!("process instance {} {}", c.label, describe(status)));
            }
        }
    }
}

/// After the stop: reads every child's histograms and reaps it. Returns the
/// merged histograms per stat id.
pub fn collect(children: Vec<Child>, nstats: usize, shared: &Shared) -> Vec<Histogram<u64>> {
    let mut hists: Vec<Histogram<u64>> = (0..nstats).map(|_| merge_histograms(std::iter::empty())).collect();
    for mut c in children {
        let mut buf = Vec::new();
        let complete = c.results.read_to_end(&mut buf).is_ok() && decode(&buf, &mut hists);
        let status = c.status.unwrap_or_else(|| {
            let mut status = 0;
            // SAFETY: our own child's pid.
            unsafe { libc::waitpid(c.pid, &mut status, 0) };
            status
        });
        if !(complete && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
            shared.abort(StopKind::Error, format!("process instance {} {}", c.label, describe(status)));
        }
    }
    hists
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::new_histogram;

    #[test]
    fn histograms_survive_the_pipe_encoding() {
        let mut h = new_histogram();
        for v in [1u64, 999, 1_000_000, 50_000_000_000] {
            h.record(v).unwrap();
        }
        let r = WorkerResult { hist: vec![None, Some(h.clone())] };
        let bytes = encode(&[r], 2);
        let mut out: Vec<Histogram<u64>> = (0..2).map(|_| merge_histograms(std::iter::empty())).collect();
        assert!(decode(&bytes, &mut out));
        assert_eq!(out[1].len(), 4);
        assert_eq!(out[1].max(), merge_histograms([&h].into_iter()).max());
        assert!(out[0].is_empty());
        assert!(!decode(&bytes[..bytes.len() - 1], &mut out), "a cut stream is detected");
    }
}
