//! Process instances run as OS processes, each with its own file table, as
//! in Filebench; the open-file limit is raised to the hard limit and a need
//! beyond it is refused before the run (docs/filebench-language.md#processes-and-threads).

mod common;

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use common::*;

/// `instances` shadow processes, each thread keeping 128 files open
/// (`opennext` over a 200-file fileset, never closed), as oltp.f's shadows do.
fn shadow_workload(dir: &std::path::Path, instances: u32) -> std::path::PathBuf {
    let f = dir.join("shadows.f");
    std::fs::write(
        &f,
        format!(
            "define fileset name=datafiles,path={},size=16k,entries=200,dirwidth=1000,prealloc\n\
             define process name=shadow,instances={instances}\n{{\n  thread name=shadowthread\n  {{\n\
             flowop read name=shadowread,filesetname=datafiles,iosize=4k,random,opennext\n  }}\n}}\nrun 2\n",
            dir.display()
        ),
    )
    .unwrap();
    f
}

/// The binary with RLIMIT_NOFILE set to (`soft`, `hard`) before it starts.
fn engine_with_nofile(soft: u64, hard: u64) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_strata-wml"));
    // SAFETY: only setrlimit between fork and exec.
    unsafe {
        c.pre_exec(move || {
            let r = libc::rlimit { rlim_cur: soft, rlim_max: hard };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &r) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    c
}

/// 4 instances x 128 open files = 512 descriptors, under a hard limit of
/// 200: it runs only with a file table per process instance (and with the
/// soft limit of 64 raised).
#[test]
fn each_process_instance_has_its_own_file_table() {
    let tmp = tempdir();
    let f = shadow_workload(tmp.path(), 4);
    let out =
        engine_with_nofile(64, 200).args(["run", &f.to_string_lossy(), "--json", "--runtime", "1.5"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let env = envelopes(&out.stdout);
    let Some(Envelope::End(end)) = env.last() else { panic!("no end envelope") };
    assert!(!end.stopped_early, "{:?}", end.reason);
    let read = &end.flowops[0];
    assert!(read.ops > 4 * 128, "every instance opened its 128 files: {} ops", read.ops);
    // histograms of the four processes merged: one count per op
    assert_eq!(read.histogram.counts.iter().sum::<u64>(), read.ops);
}

/// A need beyond the hard limit is refused by `check` and before `run`
/// starts, naming the limit and the need.
#[test]
fn an_open_file_need_beyond_the_limit_is_refused_before_the_run() {
    let tmp = tempdir();
    let f = shadow_workload(tmp.path(), 2);
    let out = engine_with_nofile(50, 100).args(["check", &f.to_string_lossy()]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{}:2:1: process shadow: each instance may hold up to 136 open files (1 thread instances x up to 128 fd slots", f.display()))
            && err.contains("RLIMIT_NOFILE) of this machine is 100"),
        "{err}"
    );
    let out = engine_with_nofile(50, 100).args(["run", &f.to_string_lossy(), "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let env = envelopes(&out.stdout);
    assert!(matches!(&env[..], [Envelope::Error(e)] if e.message.contains("RLIMIT_NOFILE")), "{env:?}");
    assert!(!tmp.path().join("datafiles").exists(), "nothing was created");
}

fn children_of(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Three instances are three child processes; one killed stops the run with
/// an error naming it, and the statistics gathered so far are still printed.
#[test]
fn instances_are_processes_and_a_dead_one_stops_the_run() {
    let tmp = tempdir();
    let f = shadow_workload(tmp.path(), 3);
    let child = Command::new(env!("CARGO_BIN_EXE_strata-wml"))
        .args(["run", &f.to_string_lossy(), "--json", "--runtime", "30"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut kids = Vec::new();
    for _ in 0..100 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        kids = children_of(child.id());
        if kids.len() == 3 {
            break;
        }
    }
    assert_eq!(kids.len(), 3, "one process per instance: {kids:?}");
    std::thread::sleep(std::time::Duration::from_millis(500));
    unsafe { libc::kill(kids[1] as i32, libc::SIGKILL) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let env = envelopes(&out.stdout);
    let Some(Envelope::End(end)) = env.last() else { panic!("no end envelope") };
    assert!(end.stopped_early && end.runtime_s < 20.0, "{end:?}");
    let reason = end.reason.as_deref().unwrap_or("");
    assert!(reason.contains("process instance shadow-1 was killed by signal 9"), "{reason}");
    for k in kids {
        assert!(!std::path::Path::new(&format!("/proc/{k}")).exists(), "instance {k} was reaped");
    }
}
