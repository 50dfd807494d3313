//! Conformance with Filebench 1.5-alpha3's observed behaviour
//! (tests/data/filebench/1.5-alpha3: outputs of Filebench 1.5-alpha3 itself,
//! described in docs/filebench-language.md).

mod common;

use std::collections::{BTreeMap, HashMap};

use common::*;
use strata_wml::fileset::{create::prealloc_plan, Want};
use strata_wml::rng::{GlibcRand, MtState};

fn tree_of(personality: &str, dir: &str) -> Vec<String> {
    let i = populate_only(&data(&format!("personalities/{personality}.f")), sets(&[("$dir", dir)]));
    let mut lines = Vec::new();
    for fs in i.filesets.as_ref().unwrap() {
        for (rel, size) in &fs.tree.files {
            lines.push(format!("{}{rel}\t{size}", fs.name));
        }
    }
    lines.sort();
    lines
}

fn reference_tree(name: &str) -> Vec<String> {
    let s = std::fs::read_to_string(data(&format!("1.5-alpha3/tree_{name}.tsv"))).unwrap();
    let mut v: Vec<String> = s.lines().map(String::from).collect();
    v.sort();
    v
}

#[test]
fn webserver_tree_matches_reference() {
    assert_eq!(tree_of("webserver", "/nonexistent"), reference_tree("webserver"));
}

#[test]
fn varmail_tree_matches_reference() {
    assert_eq!(tree_of("varmail", "/nonexistent"), reference_tree("varmail"));
}

#[test]
fn fileserver_tree_matches_reference() {
    let got = tree_of("fileserver", "/nonexistent");
    let total: u64 = got.iter().map(|l| l.rsplit('\t').next().unwrap().parse::<u64>().unwrap()).sum();
    assert_eq!(format!("{:.3}", total as f64 / 1048576.0), "1240.757");
    assert_eq!(got, reference_tree("fileserver"));
}

/// Creates webserver's filesets (100% preallocated) on disk and compares
/// the files found with the reference tree.
#[test]
fn webserver_tree_on_disk() {
    let tmp = tempdir();
    let dir = tmp.path().to_string_lossy().to_string();
    let src = std::fs::read_to_string(data("personalities/webserver.f")).unwrap();
    let script = strata_wml::parser::parse("webserver.f", &src).unwrap();
    let opts = strata_wml::interp::Options {
        sets: sets(&[("$dir", &dir)]),
        runtime_s: None,
        check_only: false,
        ..Default::default()
    };
    let mut i =
        strata_wml::interp::Interp::new(&script, opts, std::sync::Arc::new(strata_wml::output::Output::quiet()));
    for s in script.stmts.iter().take_while(|s| !matches!(s.stmt, strata_wml::ast::Stmt::Run(_))) {
        i.statement(&s.stmt, s.pos).unwrap();
    }
    i.create_filesets().unwrap();
    let mut found = Vec::new();
    walk(tmp.path(), tmp.path(), &mut found);
    found.sort();
    assert_eq!(found, reference_tree("webserver"));
}

fn walk(root: &std::path::Path, d: &std::path::Path, out: &mut Vec<String>) {
    for e in std::fs::read_dir(d).unwrap() {
        let e = e.unwrap();
        let md = e.metadata().unwrap();
        if md.is_dir() {
            walk(root, &e.path(), out);
        } else {
            let rel = e.path().strip_prefix(root).unwrap().to_string_lossy().to_string();
            out.push(format!("{rel}\t{}", md.len()));
        }
    }
}

/// Replays pick-order.f's loop on the in-memory fileset: the same shared
/// rotors and the same preallocated subset give the strace order.
#[test]
fn pick_order_matches_strace() {
    let i = populate_only(&data("1.5-alpha3/pick-order.f"), vec![]);
    let fs = i.filesets.as_ref().unwrap()[0].clone();
    let (kept, _) = prealloc_plan(&fs, 50, &mut MtState::default(), &mut GlibcRand::default());
    for k in kept {
        fs.set_exists(false, k, true);
    }
    let path = |e: usize| format!("/tmp/fbrun/data/pk{}", fs.tree.files[e].0);
    let never = || false;
    let mut got = Vec::new();
    for _ in 0..4 {
        let o = fs.pick_file(Want::Exists, 0, None, &never).unwrap();
        fs.unbusy_file(o, None, 1);
        got.push(format!("open {}", path(o)));
        fs.unbusy_file(o, None, -1);
        let c = fs.pick_file(Want::NotExists, 0, None, &never).unwrap();
        fs.unbusy_file(c, Some(true), 1);
        got.push(format!("create {}", path(c)));
        fs.unbusy_file(c, None, -1);
        let d = fs.pick_file(Want::Exists, 0, None, &never).unwrap();
        fs.unbusy_file(d, Some(false), 0);
        got.push(format!("unlink {}", path(d)));
    }
    let reference = std::fs::read_to_string(data("1.5-alpha3/pick-order.strace.txt")).unwrap();
    let want: Vec<String> = reference
        .lines()
        .filter_map(|l| {
            let p = l.split('"').nth(1)?;
            Some(if l.contains("unlink") {
                format!("unlink {p}")
            } else if l.contains("O_CREAT") {
                format!("create {p}")
            } else {
                format!("open {p}")
            })
        })
        .collect();
    assert_eq!(got, want);
}

/// The real engine on pick-order.f: one op of each kind per second.
#[test]
fn pick_order_workload_runs() {
    let tmp = tempdir();
    let o = run(&data("1.5-alpha3/pick-order.f"), sets(&[("$dir", &tmp.path().to_string_lossy())]), 2.5);
    assert_eq!(o.exit_code, 0);
    let ops = o.ops_by_name();
    assert!((2..=4).contains(&ops["op"]), "{ops:?}");
    assert_eq!(ops["op"], ops["dl"]);
}

fn check_mix(personality: &str, reference: &str, extra: &[(&str, &str)]) {
    let tmp = tempdir();
    let dir = tmp.path().to_string_lossy().to_string();
    let mut s = vec![("$dir", dir.as_str())];
    s.extend_from_slice(extra);
    let o = run(&data(&format!("personalities/{personality}.f")), sets(&s), 2.0);
    assert_eq!(o.exit_code, 0, "{personality} stopped: {:?}", o.result.as_ref().unwrap().reason);
    let ours: HashMap<String, u64> = o.ops_by_name();
    let theirs: BTreeMap<String, u64> =
        reference_ops(&std::fs::read_to_string(data(reference)).unwrap()).into_iter().collect();
    let tot_o: u64 = theirs.keys().map(|k| ours[k]).sum();
    let tot_t: u64 = theirs.values().sum();
    assert!(tot_o > 100, "{personality}: too few ops {ours:?}");
    for (name, n) in &theirs {
        let a = ours[name] as f64 / tot_o as f64;
        let b = *n as f64 / tot_t as f64;
        assert!((a - b).abs() / b < 0.05, "{personality} {name}: ours {a:.4} reference {b:.4}");
    }
}

#[test]
fn webserver_op_mix_matches_reference() {
    check_mix("webserver", "1.5-alpha3/webserver-scaled.out", &[("$nthreads", "4"), ("$nfiles", "300")]);
}

#[test]
fn varmail_op_mix_matches_reference() {
    check_mix("varmail", "1.5-alpha3/varmail-scaled.out", &[("$nthreads", "4"), ("$nfiles", "2000")]);
}

#[test]
fn fileserver_op_mix_matches_reference() {
    check_mix(
        "fileserver",
        "1.5-alpha3/fileserver-scaled.out",
        &[("$nthreads", "4"), ("$nfiles", "2000"), ("$filesize", "8192")],
    );
}
