//! Every shipped personality (both dialects and the alternates) parses and
//! runs briefly on a small fileset, and every flowop in it does work.

mod common;

use common::*;

fn run_personality(rel: &str, extra: &[(&str, &str)]) -> std::collections::HashMap<String, u64> {
    let tmp = tempdir();
    let dir = tmp.path().to_string_lossy().to_string();
    let mut s = vec![("$dir", dir.as_str()), ("$nthreads", "2")];
    s.extend_from_slice(extra);
    let o = run(&data(&format!("personalities/{rel}")), sets(&s), 1.5);
    let r = o.result.as_ref().unwrap();
    assert_eq!(o.exit_code, 0, "{rel}: {:?}", r.reason);
    for (name, ops) in o.ops_by_name() {
        assert!(ops > 0, "{rel}: flowop {name} did nothing: {:?}", o.ops_by_name());
    }
    o.ops_by_name()
}

/// One pass runs every flowop once: counts differ by at most what threads
/// stopped mid-pass (and implicit opens) add.
fn assert_even_mix(rel: &str, ops: &std::collections::HashMap<String, u64>) {
    let (min, max) = (ops.values().min().unwrap(), ops.values().max().unwrap());
    assert!(max - min <= 6, "{rel}: uneven mix {ops:?}");
}

#[test]
fn webserver() {
    run_personality("webserver.f", &[("$nfiles", "200")]);
}

#[test]
fn varmail() {
    run_personality("varmail.f", &[("$nfiles", "1000")]);
}

#[test]
fn fileserver() {
    run_personality("fileserver.f", &[("$nfiles", "1000"), ("$filesize", "8192")]);
}

#[test]
fn randomfileaccess_14_dialect_without_run() {
    let ops = run_personality("randomfileaccess.f", &[("$nfiles", "200")]);
    assert_even_mix("randomfileaccess.f", &ops);
}

#[test]
fn v14_webserver() {
    let ops = run_personality("v1.4.9.1/webserver.f", &[("$nfiles", "200")]);
    assert_even_mix("v1.4.9.1/webserver.f", &ops);
}

#[test]
fn v14_varmail() {
    let ops = run_personality("v1.4.9.1/varmail.f", &[("$nfiles", "1000")]);
    // deletefile skips files open elsewhere (not counted), the rest is even
    let rest: std::collections::HashMap<_, _> = ops.into_iter().filter(|(k, _)| k != "deletefile1").collect();
    assert_even_mix("v1.4.9.1/varmail.f", &rest);
}

#[test]
fn v14_fileserver() {
    let ops = run_personality("v1.4.9.1/fileserver.f", &[("$nfiles", "1000"), ("$meanfilesize", "8192")]);
    let rest: std::collections::HashMap<_, _> = ops.into_iter().filter(|(k, _)| k != "deletefile1").collect();
    assert_even_mix("v1.4.9.1/fileserver.f", &rest);
}

#[test]
fn v14_randomfileaccess() {
    let ops = run_personality("v1.4.9.1/randomfileaccess.f", &[("$nfiles", "200")]);
    assert_even_mix("v1.4.9.1/randomfileaccess.f", &ops);
}

#[test]
fn alternates_randomread() {
    run_personality("alternates/randomread.f", &[("$filesize", "8388608")]);
}

#[test]
fn alternates_randomwrite() {
    run_personality("alternates/randomwrite.f", &[("$filesize", "8388608")]);
}

#[test]
fn alternates_randomrw() {
    run_personality("alternates/randomrw.f", &[("$filesize", "8388608")]);
}

/// 1.4.9.1 sizes are gamma-distributed around `size` (the mean).
#[test]
fn v14_sizes_are_gamma_around_the_mean() {
    let i = populate_only(&data("personalities/v1.4.9.1/varmail.f"), sets(&[("$dir", "/nonexistent")]));
    let fs = &i.filesets.as_ref().unwrap()[0];
    let sizes: Vec<u64> = fs.tree.files.iter().map(|f| f.1).collect();
    let mean = sizes.iter().sum::<u64>() as f64 / sizes.len() as f64;
    assert!((mean - 16384.0).abs() < 2000.0, "mean {mean}");
    assert!(sizes.iter().any(|&s| s != sizes[0]));
}

/// Regression (varmail stopped after 0.6 s on tmpfs): Filebench's deletefile
/// picks files that others hold open and then skips them, while createfile
/// always creates, so the fileset filled until createfile found no
/// non-existing file. On tmpfs, 16 threads and 10 s, varmail runs to its
/// end, and the deletes keep pace with the creates.
#[test]
fn varmail_runs_to_its_end_on_tmpfs() {
    let shm = std::path::Path::new("/dev/shm");
    assert!(shm.is_dir(), "/dev/shm (a tmpfs) is missing on this machine");
    let tmp = tempfile::Builder::new().prefix("strata-wml-varmail").tempdir_in(shm).unwrap();
    let dir = tmp.path().to_string_lossy().to_string();
    let o = run(&data("personalities/varmail.f"), sets(&[("$dir", dir.as_str())]), 10.0);
    let r = o.result.as_ref().unwrap();
    assert_eq!(o.exit_code, 0, "stopped early: {:?}", r.reason);
    let ops = o.ops_by_name();
    let (created, deleted) = (ops["createfile2"], ops["deletefile1"]);
    assert!(created > 10_000, "too few ops to have tested anything: {ops:?}");
    // 200 of 1000 files do not exist at the start: a drift of 200 ends the run
    assert!(created.abs_diff(deleted) < 50, "deletes fell behind the creates: {ops:?}");
}
