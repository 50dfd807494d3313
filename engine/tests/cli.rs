//! The binary as a subprocess: the JSON Lines protocol (deserialized
//! strictly), the text format of psrun intervals, syntax errors, signals.

mod common;

use std::process::Command;

use common::*;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_strata-wml"))
}

#[test]
fn json_run_is_strict_json_lines() {
    let tmp = tempdir();
    let out = bin()
        .args(["run", &data("1.5-alpha3/psrun-misc.f").to_string_lossy(), "--json", "--runtime", "2.5"])
        .args(["--set", &format!("$dir={}", tmp.path().display())])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let env = envelopes(&out.stdout);
    assert!(matches!(&env[0], Envelope::Begin(b) if b.protocol == 1 && b.runtime_s == Some(2.5)));
    assert!(env.iter().any(|e| matches!(e, Envelope::Interval(i) if i.ops > 0 && i.t_s >= 2.0)));
    let Some(Envelope::End(end)) = env.last() else { panic!("no end envelope") };
    assert!(!end.stopped_early);
    assert!(end.summary.ops > 0);
    let names: Vec<&str> = end.flowops.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["cr", "wr", "fss", "cl", "mk", "rm", "ls", "rd", "hg", "trv", "pr", "del", "ol"]);
    let wr = &end.flowops[1];
    assert_eq!(wr.kind, "write");
    assert_eq!(wr.histogram.counts.iter().sum::<u64>(), wr.ops);
    assert!(wr.latency_us.p50 <= wr.latency_us.p99 && wr.latency_us.p99 <= wr.latency_us.max * 1.01 + 1.0);
}

#[test]
fn psrun_text_format_matches_filebench() {
    let tmp = tempdir();
    let out = bin()
        .args(["run", &data("1.5-alpha3/psrun-misc.f").to_string_lossy(), "--runtime", "3"])
        .args(["--set", &format!("$dir={}", tmp.path().display())])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let reference = std::fs::read_to_string(data("1.5-alpha3/psrun-misc.out")).unwrap();
    let shape = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| l.contains("Per-Operation Breakdown") || l.contains("IO Summary") || l.contains("Run took"))
            .map(|l| l.split(": ").nth(1).unwrap_or(l).split_whitespace().take(2).collect::<Vec<_>>().join(" "))
            .collect()
    };
    // One interval at 2 s, then "Run took", then the last interval.
    let ours = shape(&text);
    assert_eq!(ours, ["Per-Operation Breakdown", "IO Summary", "Run took", "Per-Operation Breakdown", "IO Summary"]);
    let theirs = shape(&reference);
    assert_eq!(&theirs[theirs.len() - 3..], &ours[2..]);
    let line_re = |l: &str| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.len() == 8
            && f[1].ends_with("ops")
            && f[2].ends_with("ops/s")
            && f[3].ends_with("mb/s")
            && f[4].ends_with("ms/op")
            && f[5].starts_with("[")
            && f[7].ends_with("ms]")
    };
    let names =
        |s: &str| -> Vec<String> { s.lines().filter(|l| line_re(l)).map(|l| l[..20].trim().to_string()).collect() };
    let ref_names = names(&reference);
    let our_names = names(&text);
    assert_eq!(our_names.len(), 26, "{text}");
    assert_eq!(&our_names[..13], &ref_names[..13]);
    for l in text.lines().filter(|l| line_re(l)) {
        assert_eq!(&l[20..21], " ", "name column is 20 wide: {l}");
    }
    let summary = text.lines().find(|l| l.contains("IO Summary:")).unwrap();
    let f: Vec<&str> = summary.split_whitespace().collect();
    assert_eq!((f[4], f[6], f[8]), ("ops", "ops/s", "rd/wr"));
}

#[test]
fn syntax_error_exits_2_with_position() {
    let out = bin().args(["run", &data("1.5-alpha3/missing.f").to_string_lossy()]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let tmp = tempdir();
    let f = tmp.path().join("bad.f");
    std::fs::write(&f, "set $dir=/tmp\ndefine fileset name=x,path=$dir,\n  entries=10 size=1k\nrun 1\n").unwrap();
    let out = bin().args(["run", &f.to_string_lossy()]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("{}:3:14: expected", f.display())), "{err}");
    let out = bin().args(["run", &f.to_string_lossy(), "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let env = envelopes(&out.stdout);
    assert!(matches!(&env[..], [Envelope::Error(e)] if e.kind == "syntax" && e.line == Some(3) && e.col == Some(14)));
}

#[test]
fn check_accepts_every_personality_and_rejects_unknown_flowop() {
    for f in [
        "webserver.f",
        "varmail.f",
        "fileserver.f",
        "randomfileaccess.f",
        "v1.4.9.1/webserver.f",
        "alternates/randomrw.f",
    ] {
        let out = bin().args(["check", &data(&format!("personalities/{f}")).to_string_lossy()]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{f}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let tmp = tempdir();
    let f = tmp.path().join("bad.f");
    std::fs::write(&f, "define process name=p { thread name=t { flowop frobnicate name=x } }\n").unwrap();
    let out = bin().args(["check", &f.to_string_lossy()]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown flowop type `frobnicate`"));
}

#[test]
fn stopped_early_still_reports_statistics() {
    let tmp = tempdir();
    let f = tmp.path().join("norsc.f");
    std::fs::write(
        &f,
        format!(
            "define fileset name=fs,path={},size=1k,entries=5,dirwidth=5,prealloc=0\n\
             define process name=p {{ thread name=t {{ flowop createfile name=cr,filesetname=fs,fd=1\n\
             flowop closefile name=cl,fd=1 }} }}\nrun 10\n",
            tmp.path().display()
        ),
    )
    .unwrap();
    let out = bin().args(["run", &f.to_string_lossy(), "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let env = envelopes(&out.stdout);
    let Some(Envelope::End(end)) = env.last() else { panic!("no end") };
    assert!(end.stopped_early);
    assert!(end.reason.as_deref().unwrap().contains("could not obtain a file"));
    assert_eq!(end.flowops[0].ops, 5);
}

#[test]
fn sigint_stops_cleanly_with_statistics() {
    let tmp = tempdir();
    let child = bin()
        .args(["run", &data("personalities/varmail.f").to_string_lossy(), "--json"])
        .args(["--set", &format!("$dir={}", tmp.path().display()), "--set", "$nthreads=2", "--set", "$nfiles=1000"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let env = envelopes(&out.stdout);
    let Some(Envelope::End(end)) = env.last() else { panic!("no end") };
    assert!(end.stopped_early);
    assert!(end.reason.as_deref().unwrap_or("").contains("signal"), "{:?}", end.reason);
    assert!(end.runtime_s < 30.0);
    assert!(end.summary.ops > 0);
}

#[test]
fn lathist_adds_64_buckets_to_each_line() {
    let tmp = tempdir();
    let out = bin()
        .args(["run", &wml("vars.f").to_string_lossy(), "--runtime", "1.2"])
        .args(["--set", &format!("$dir={}", tmp.path().display())])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.starts_with("wu ")).expect("a wu line");
    let buckets = line.split('\t').nth(1).expect("lathist column");
    let n: Vec<u64> =
        buckets.trim_matches(|c| c == '[' || c == ']' || c == ' ').split(' ').map(|x| x.parse().unwrap()).collect();
    assert_eq!(n.len(), 64);
    let ops: u64 = line.split_whitespace().nth(1).unwrap().trim_end_matches("ops").parse().unwrap();
    assert_eq!(n.iter().sum::<u64>(), ops);
}

/// `hog` costs what Filebench's loop costs: every iteration reloads the
/// pointer to the thread memory and stores a byte through the pointer just
/// loaded (`*(threadflow->tf_mem) = 1`, compiled by gcc -O2). Read from the
/// machine code of the binary, so an optimizer that hoisted the load or
/// merged the stores would fail this test (it used to store only).
#[cfg(target_arch = "x86_64")]
#[test]
fn hog_loop_loads_and_stores_every_iteration() {
    let out = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn", "--disassemble=strata_wml_hog_chunk", env!("CARGO_BIN_EXE_strata-wml")])
        .output()
        .expect("objdump (binutils) reads the binary's machine code");
    let text = String::from_utf8_lossy(&out.stdout);
    // (mnemonic, source, destination) of each instruction of the function
    let insns: Vec<(String, String, String)> = text
        .lines()
        .filter_map(|l| l.split_once(":\t"))
        .map(|(_, ins)| {
            let mut it = ins.split_whitespace();
            let m = it.next().unwrap_or("").to_string();
            let ops = it.next().unwrap_or("");
            let (src, dst) = ops.split_once(',').unwrap_or((ops, ""));
            (m, src.to_string(), dst.to_string())
        })
        .collect();
    assert!(!insns.is_empty(), "no strata_wml_hog_chunk in the binary:\n{text}");
    let mut stores = 0;
    let mut since_store = 0;
    for (i, (m, src, dst)) in insns.iter().enumerate() {
        if m == "movb" && src == "$0x1" {
            stores += 1;
            // the pointer stored through was loaded from memory since the previous store
            let loaded = insns[i - since_store..i]
                .iter()
                .any(|(lm, lsrc, ldst)| lm == "mov" && lsrc.starts_with("(%") && dst == &format!("({ldst})"));
            assert!(loaded, "store {i} is not through a pointer loaded for it:\n{text}");
            since_store = 0;
        } else {
            since_store += 1;
        }
    }
    assert_eq!(stores, 1, "one store per iteration, not unrolled (as gcc compiles Filebench's loop):\n{text}");
    assert!(insns.iter().any(|(m, _, _)| m.starts_with('j')), "no loop in the hog chunk:\n{text}");
}

/// `check` reports every error it finds, each with file:line:column, and
/// exits 2; `--json` gives one object per error for strata's `validate`.
#[test]
fn check_reports_every_error_with_its_place() {
    let tmp = tempdir();
    let f = tmp.path().join("user.f");
    let syntax = "set $dir=/tmp\ndefine fileset name=x,path=$dir,\n  entries=10 size=1k\nset $ok=1\n\
                  define process name=p { thread name=t { flowop read name=r, ~ } }\nset $x = 1\nrun 5\n";
    std::fs::write(&f, syntax).unwrap();
    let out = bin().args(["check", &f.to_string_lossy()]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    let places: Vec<&str> = err.lines().filter_map(|l| l.strip_prefix(&format!("{}:", f.display()))).collect();
    assert_eq!(places.len(), 3, "{err}");
    assert!(places[0].starts_with("3:14: expected a command") && places[1].starts_with("5:61: illegal character"));
    assert!(places[2].starts_with("6:5: illegal variable name"), "{err}");

    let semantic = "set $dir=/tmp\ndefine fileset name=x,path=$dir,entries=10,dirwidth=5\n\
                    define process name=p\n{\n  thread name=t\n  {\n    flowop frobnicate name=a\n\
                    flowop read name=b,filesetname=nope,iosize=4k\n    flowop read name=c,filesetname=x,iosize=$undefined\n  }\n}\n";
    std::fs::write(&f, semantic).unwrap();
    let out = bin().args(["check", &f.to_string_lossy(), "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let errors: Vec<strata_wml::report::CheckError> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    let got: Vec<(Option<u32>, Option<u32>, &str)> =
        errors.iter().map(|e| (e.line, e.column, e.message.as_str())).collect();
    assert_eq!(
        got,
        [
            (Some(7), Some(5), "unknown flowop type `frobnicate`"),
            (Some(8), Some(20), "flowop b: file nope not found"),
            (Some(9), Some(38), "Noninitialized variable $undefined"),
        ]
    );
    assert!(errors.iter().all(|e| e.file == f.to_string_lossy() && e.kind == "semantic"));

    // a clean file: exit 0, and with --json nothing on stdout
    let out = bin().args(["check", &data("personalities/webserver.f").to_string_lossy(), "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    // --set is applied before checking
    let out = bin().args(["check", &f.to_string_lossy(), "--json", "--set", "$undefined=4k"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 2);
}

#[test]
fn the_run_waits_at_the_start_barrier_after_its_filesets() {
    // --ready-file once the filesets exist, then nothing runs until --go-file appears; the end record
    // says when the measured run started, so instances' windows compare on the wall clock.
    let tmp = tempdir();
    let ready = tmp.path().join("ready");
    let go = tmp.path().join("go");
    let dir = tmp.path().join("data");
    std::fs::create_dir(&dir).unwrap();
    let mut child = bin()
        .args(["run", &data("1.5-alpha3/psrun-misc.f").to_string_lossy(), "--json", "--runtime", "1"])
        .args(["--set", &format!("$dir={}", dir.display())])
        .args(["--ready-file", &ready.to_string_lossy(), "--go-file", &go.to_string_lossy()])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !ready.exists() {
        assert!(std::time::Instant::now() < deadline, "the engine never said it was ready");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(700));
    assert!(child.try_wait().unwrap().is_none(), "the run did not wait for the go file");
    let released = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    std::fs::write(&go, "").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let Some(Envelope::End(end)) = envelopes(&out.stdout).pop() else { panic!("no end envelope") };
    let started = end.started_unix_s.expect("the end record carries the start");
    assert!(started >= released - 0.01 && started < released + 5.0, "started {started}, released {released}");
}
