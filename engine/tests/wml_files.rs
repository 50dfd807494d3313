//! Our own WML files (tests/wml/), covering every flowop and attribute of
//! docs/filebench-language.md#flowop-attributes and #flowops; each is parsed and run with checks on what it did.

mod common;

use std::collections::HashMap;

use common::*;
use strata_wml::interp::Outcome;

fn run_wml(name: &str, secs: f64) -> (Outcome, HashMap<String, u64>, tempfile::TempDir) {
    let tmp = tempdir();
    let o = run(&wml(name), sets(&[("$dir", &tmp.path().to_string_lossy())]), secs);
    let ops = o.ops_by_name();
    (o, ops, tmp)
}

fn bytes(o: &Outcome, name: &str) -> u64 {
    let m = o.model.as_ref().unwrap();
    let i = m.stats.iter().position(|(n, _)| n == name).unwrap();
    o.result.as_ref().unwrap().totals[i].bytes
}

#[test]
fn io_flowops() {
    let (o, ops, _t) = run_wml("io.f", 1.5);
    assert_eq!(o.exit_code, 0, "{:?}", o.result.unwrap().reason);
    for (name, n) in &ops {
        assert!(*n > 0, "{name} did nothing: {ops:?}");
    }
    // writewholefile writes the new file's population size (64k) per op.
    assert_eq!(bytes(&o, "wwf") / ops["wwf"], 65536);
    // appendfilerand appends U[0, iosize-1]
    assert!(bytes(&o, "apprand") / ops["apprand"] < 2048);
    // the implicit open on fd 3 is one extra op of seqread
    assert!(ops["seqread"] >= ops["randread"]);
}

#[test]
fn directio_works_or_fails_loudly() {
    let tmp = tempdir();
    let probe = tmp.path().join("probe");
    std::fs::write(&probe, vec![0u8; 4096]).unwrap();
    let supported = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(&probe).is_ok();
    let o = run(&wml("directio.f"), sets(&[("$dir", &tmp.path().to_string_lossy())]), 1.0);
    if supported {
        assert_eq!(o.exit_code, 0);
        assert!(o.ops_by_name()["dread"] > 0 && o.ops_by_name()["dwrite"] > 0);
    } else {
        assert_eq!(o.exit_code, 1, "O_DIRECT is unsupported here: the run must report the failure");
    }
}
use std::os::unix::fs::OpenOptionsExt;

#[test]
fn leaf_directories() {
    let (o, ops, _t) = run_wml("dirs.f", 1.0);
    assert_eq!(o.exit_code, 0, "{:?}", o.result.unwrap().reason);
    assert!(ops["mk"] > 10 && ops["ls"] > 10 && ops["rm"] > 10, "{ops:?}");
    assert!(bytes(&o, "ls") > 0);
}

#[test]
fn other_flowops_and_rate_limits() {
    let (o, ops, _t) = run_wml("other.f", 2.0);
    assert_eq!(o.exit_code, 0, "{:?}", o.result.as_ref().unwrap().reason);
    // one event per loop at 200 events/s, shared with the other limiters
    assert!(ops["el"] > 20 && ops["el"] < 600, "{ops:?}");
    assert!(ops["hg"] > 0 && ops["r1"] > 0);
    assert!((1..=2).contains(&ops["dly"]), "{ops:?}");
    assert_eq!(ops["trv"], 0, "testrandvar is not counted");
    assert_eq!(ops["pr"], 0, "print is not counted");
}

#[test]
fn finishoncount_in_firstdone_mode() {
    let (o, ops, _t) = run_wml("finish.f", 20.0);
    let r = o.result.as_ref().unwrap();
    assert_eq!(o.exit_code, 0);
    assert!(r.measured_s < 10.0);
    assert_eq!(ops["app"], 500);
    assert!(r.reason.as_deref().unwrap().contains("finishoncount reached 500"));
}

#[test]
fn finishonbytes_in_alldone_mode() {
    let (o, ops, _t) = run_wml("finishbytes.f", 20.0);
    assert_eq!(o.exit_code, 0);
    assert!(o.result.as_ref().unwrap().measured_s < 10.0);
    // 101 appends + the implicit open, counted as an op of `app` (docs/filebench-language.md#fd-slots)
    assert_eq!(ops["app"], 2 * 102);
}

#[test]
fn block_wakeup_and_semaphores() {
    let (o, ops, _t) = run_wml("sync.f", 1.0);
    assert_eq!(o.exit_code, 0, "{:?}", o.result.unwrap().reason);
    assert!(ops["blk"] > 0 && ops["wk"] > 0, "{ops:?}");
    assert!(ops["sb"] > 0 && ops["sp"] > 0, "{ops:?}");
    // the producer can run at most highwater posts ahead of the consumer
    assert!(ops["sp"] <= ops["sb"] + 5, "{ops:?}");
}

#[test]
fn composite_flowops() {
    let (o, ops, _t) = run_wml("composite.f", 1.0);
    assert_eq!(o.exit_code, 0, "{:?}", o.result.as_ref().unwrap().reason);
    assert_eq!(ops["rmw1"], 0, "the composite itself shows 0 ops");
    let (a, b) = (ops["rmw1.open1"] as f64, ops["st"] as f64);
    assert!((a / b - 1.5).abs() < 0.05, "3 composite passes per 2 stats: {ops:?}");
    // the invocation's $io=2k overrides the definition's 4k
    assert_eq!(bytes(&o, "rmw1.rd") / ops["rmw1.rd"], 2048);
    let names: Vec<&str> = o.model.as_ref().unwrap().rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["rmw1", "rmw1.open1", "rmw1.rd", "rmw1.wr", "rmw1.close1", "st"]);
}

#[test]
fn random_variables_and_commands() {
    let (o, ops, _t) = run_wml("vars.f", 1.5);
    assert_eq!(o.exit_code, 0, "{:?}", o.result.as_ref().unwrap().reason);
    for w in ["wu", "wg", "wt", "w1", "w2", "w3", "w4", "w5", "w6", "w7", "w8"] {
        assert!(ops[w] > 0, "{w}: {ops:?}");
    }
    let avg = |n: &str| bytes(&o, n) as f64 / ops[n] as f64;
    assert!((avg("wu") - 2048.0).abs() < 400.0, "uniform mean {}", avg("wu"));
    assert!((avg("wg") - 4096.0).abs() < 800.0, "gamma mean {}", avg("wg"));
    assert!(avg("wt") > 1024.0 && avg("wt") < 8192.0);
    assert!((avg("w2") - 4352.0).abs() < 800.0, "cvar-uniform mean {}", avg("w2"));
    assert!(o.result.as_ref().unwrap().tail.is_some(), "psrun -1 keeps the last interval");
}

#[test]
fn entity_attributes() {
    let tmp = tempdir();
    let trusted = tmp.path().join("trusted/00000001");
    std::fs::create_dir_all(&trusted).unwrap();
    std::fs::write(trusted.join("00000001"), vec![0u8; 131072]).unwrap();
    let o = run(&wml("entities.f"), sets(&[("$dir", &tmp.path().to_string_lossy())]), 1.0);
    assert_eq!(o.exit_code, 0, "{:?}", o.result.as_ref().unwrap().reason);
    for (n, v) in o.ops_by_name() {
        assert!(v > 0, "{n}");
    }
    // 2 process instances x 2 reader threads + 2 writers
    let m = o.model.as_ref().unwrap();
    assert_eq!(m.procs[0].instances, 2);
    assert_eq!(m.procs[0].threads[0].instances, 2);
    // readonly opens O_RDONLY: writing through it would fail, reading works
    assert!(bytes(&o, "ro_read") > 0);
}

#[test]
fn indexed_picks() {
    let (o, ops, _t) = run_wml("indexed.f", 1.0);
    assert_eq!(o.exit_code, 0, "{:?}", o.result.as_ref().unwrap().reason);
    assert!(ops["op"] > 0 && ops["st"] > 0);
}

#[test]
fn finishoncount_in_timeout_mode_ends_cleanly() {
    let (o, ops, _t) = run_wml("finish_timeout.f", 20.0);
    let r = o.result.as_ref().unwrap();
    assert_eq!(o.exit_code, 0, "{:?}", r.reason);
    assert!(r.measured_s < 10.0);
    assert_eq!((ops["open1"], ops["app"], ops["close1"]), (1, 100, 1));
}

#[test]
fn quit_ends_the_script_before_run() {
    let (o, _ops, t) = run_wml("misc.f", 5.0);
    assert_eq!(o.exit_code, 0);
    assert!(o.result.is_none(), "nothing after quit runs");
    assert!(!t.path().join("f").exists(), "no fileset was created");
}

/// eventlimit runs at the generator's rate: the long-run op count over the
/// measured time is the rate for rates that are not multiples of the tick
/// (the fraction of each tick used to be dropped: 30/s gave 20/s).
#[test]
fn eventgen_paces_eventlimit_at_its_rate() {
    let runs: Vec<_> = [30u64, 96, 1000]
        .into_iter()
        .map(|rate| {
            std::thread::spawn(move || {
                let o = run(&wml("eventgen.f"), sets(&[("$rate", &rate.to_string())]), 2.5);
                let r = o.result.as_ref().unwrap();
                (rate, o.ops_by_name()["el"], r.measured_s)
            })
        })
        .collect();
    for h in runs {
        let (rate, ops, secs) = h.join().unwrap();
        let low = rate as f64 * (secs - 0.15) * 0.95 - 2.0;
        let high = rate as f64 * (secs + 0.2) * 1.3 + 5.0;
        assert!(ops as f64 >= low, "rate {rate}/s: {ops} ops in {secs:.2} s (want >= {low:.0})");
        assert!(ops as f64 <= high, "rate {rate}/s: {ops} ops in {secs:.2} s (want <= {high:.0})");
    }
}
