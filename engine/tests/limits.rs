//! Numbers a user can type never make the engine allocate without bound:
//! `check` and `run` answer quickly, in bounded memory, by running or by
//! refusing with the file, line and figure (docs/filebench-language.md#resource-limits).

mod common;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// Address space the engine gets in these tests: far below what the
/// unbounded allocations asked for (24 GB for one randtable weight).
const AS_LIMIT: u64 = 2 << 30;

/// Runs the engine with `args` under `AS_LIMIT`, killing it after `timeout`.
fn engine(args: &[&str], timeout: Duration) -> (Output, Duration) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_strata-wml"));
    c.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    // SAFETY: only setrlimit between fork and exec.
    unsafe {
        c.pre_exec(|| {
            let r = libc::rlimit { rlim_cur: AS_LIMIT, rlim_max: AS_LIMIT };
            if libc::setrlimit(libc::RLIMIT_AS, &r) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let start = Instant::now();
    let child = c.spawn().unwrap();
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output()));
    match rx.recv_timeout(timeout) {
        Ok(out) => (out.unwrap(), start.elapsed()),
        Err(_) => {
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("strata-wml {args:?} still running after {timeout:?}");
        }
    }
}

/// randomfileaccess.f with one substitution.
fn randomfileaccess_with(dir: &Path, from: &str, to: &str) -> PathBuf {
    let src = std::fs::read_to_string(data("personalities/randomfileaccess.f")).unwrap();
    assert!(src.contains(from), "{from}");
    let f = dir.join("randomfileaccess.f");
    std::fs::write(&f, src.replacen(from, to, 1)).unwrap();
    f
}

#[test]
fn check_of_a_huge_table_weight_answers_in_bounded_memory() {
    let tmp = tempdir();
    let f = randomfileaccess_with(tmp.path(), "{{85,   8k,  8k},", "{{2147483648,   8k,  8k},");
    let (out, took) = engine(&["check", &f.to_string_lossy()], Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Prob table only totals 2147483663%"));
    eprintln!("check took {took:?}");
}

#[test]
fn check_of_a_huge_fileset_is_refused_with_the_figure() {
    let tmp = tempdir();
    let f = randomfileaccess_with(tmp.path(), "set $nfiles=10000", "set $nfiles=2147483648");
    let (out, took) = engine(&["check", &f.to_string_lossy()], Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    let want = format!("{}:56:57: fileset bigfileset: entries=2147483648 (from $nfiles) needs about ", f.display());
    assert!(err.contains(&want) && err.contains(" GiB of memory for its tree; this machine has "), "{err}");
    eprintln!("check took {took:?}");
}

#[test]
fn run_of_a_huge_fileset_is_refused_before_anything_is_created() {
    let tmp = tempdir();
    let f = randomfileaccess_with(tmp.path(), "set $nfiles=10000", "set $nfiles=2147483648");
    let dir = format!("$dir={}", tmp.path().display());
    let (out, _) = engine(&["run", &f.to_string_lossy(), "--json", "--set", &dir], Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(2));
    let env = envelopes(&out.stdout);
    assert!(
        matches!(&env[..], [Envelope::Error(e)] if e.line == Some(56) && e.message.contains("GiB of memory for its tree")),
        "{env:?}"
    );
    assert!(!tmp.path().join("bigfileset").exists());
}

/// A workload file with `body` after a small fileset.
fn workload(dir: &Path, body: &str) -> PathBuf {
    let f = dir.join("w.f");
    std::fs::write(
        &f,
        format!("define fileset name=fs,path={},size=1k,entries=10,dirwidth=10,prealloc\n{body}\n", dir.display()),
    )
    .unwrap();
    f
}

#[test]
fn absurd_thread_and_memory_counts_are_refused_with_their_place() {
    let tmp = tempdir();
    let threads = workload(
        tmp.path(),
        "define process name=p,instances=2147483648 { thread name=t,instances=2 { flowop statfile name=s,filesetname=fs } }",
    );
    let (out, _) = engine(&["check", &threads.to_string_lossy()], Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            ":2:23: process p (instances=2147483648) x thread t (instances=2): the run needs 4294967296 threads"
        ),
        "{err}"
    );
    let memory = workload(
        tmp.path(),
        "define process name=p { thread name=t,memsize=1099511627776,instances=4 { flowop statfile name=s,filesetname=fs } }",
    );
    let (out, _) = engine(&["check", &memory.to_string_lossy()], Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(":2:39: the run needs about 4096 GiB of memory"), "{err}");
    assert!(err.contains("thread t x 4 instances, memsize=1099511627776"), "{err}");
}

/// What only shows at run time stops the run with a message, never an abort.
#[test]
fn run_time_figures_stop_the_run_with_a_message() {
    let tmp = tempdir();
    let f = workload(
        tmp.path(),
        "define process name=p { thread name=t { flowop read name=r,filesetname=fs,iosize=1099511627776 } }\nrun 5",
    );
    let (out, _) = engine(&["run", &f.to_string_lossy(), "--json"], Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(1));
    let env = envelopes(&out.stdout);
    let Some(Envelope::End(end)) = env.last() else { panic!("no end: {env:?}") };
    assert!(end.reason.as_deref().unwrap_or("").contains("iosize 1099511627776 is more than"), "{:?}", end.reason);
}

/// dirwidth=1 (mean depth +inf) used to recurse until the stack overflowed.
#[test]
fn a_width_of_one_populates_like_filebench() {
    let tmp = tempdir();
    let f = tmp.path().join("narrow.f");
    std::fs::write(
        &f,
        format!(
            "define fileset name=fs,path={},size=1k,entries=3000,dirwidth=1,prealloc\n\
             define process name=p {{ thread name=t {{ flowop statfile name=s,filesetname=fs }} }}\n",
            tmp.path().display()
        ),
    )
    .unwrap();
    let (out, _) = engine(&["create", &f.to_string_lossy()], Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let listing = String::from_utf8_lossy(&out.stdout);
    assert_eq!(listing.lines().count(), 3000);
    // every file directly in a directory of the root: <root>/fs/DDDDDDDD/FFFFFFFF
    let root = format!("{}/fs/", tmp.path().display());
    assert!(listing
        .lines()
        .all(|l| l.split('\t').nth(1).unwrap().strip_prefix(&root).unwrap().matches('/').count() == 1));
}
