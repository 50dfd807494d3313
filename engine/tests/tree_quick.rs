use std::sync::{Arc, Mutex};
use strata_wml::fileset::{populate, TreeParams};
use strata_wml::random::Cvar;
use strata_wml::rng::Rand48;
use strata_wml::vars::Avd;

#[test]
fn webserver_tree_quick() {
    let drand = Arc::new(Mutex::new(Rand48::default()));
    let cv = Arc::new(Cvar::new("cvar-gamma", "mean:16384;gamma:1.5", (None, None, 0.0), drand.clone()).unwrap());
    let mk = |entries| TreeParams { entries, leafdirs: 0, size: Avd::Cvar(cv.clone()), dirwidth: Avd::Int(20), dirgamma: 1.5, dirdepthrv: None, size_gamma_14: None };
    let lf = populate(&mk(1), &drand);
    let bf = populate(&mk(1000), &drand);
    let mut got: Vec<String> = lf.files.iter().map(|(p, s)| format!("logfiles{p}\t{s}")).collect();
    got.extend(bf.files.iter().map(|(p, s)| format!("bigfileset{p}\t{s}")));
    got.sort();
    let want = std::fs::read_to_string("/work/shared/filebench/conformance/tree_webserver.tsv").unwrap();
    let mut want: Vec<String> = want.lines().map(String::from).collect();
    want.sort();
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want.iter()) { assert_eq!(g, w); }
}
