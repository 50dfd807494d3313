//! Seeded fuzzing of the parser and the checker: mutated copies of the
//! shipped personalities and of our own .f files never panic, never abort,
//! answer within a bounded time and allocate boundedly
//! (docs/filebench-language.md#resource-limits).
//!
//! `cargo test` runs `fuzz_quick` (3,000 cases, a few seconds). The larger
//! run is `fuzz_large`, ignored by default:
//! `FUZZ_CASES=200000 FUZZ_SEED=7 cargo test --release --test fuzz -- --ignored --nocapture`.
//! A failure prints the seed, the case number and the mutated file.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use strata_wml::interp::{Interp, Options};
use strata_wml::output::Output;
use strata_wml::parser;

/// Counts live heap bytes and their peak, so each case can be held to a
/// memory bound (the test binary holds only these tests).
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = System.alloc(l);
        if !p.is_null() {
            let now = LIVE.fetch_add(l.size(), Relaxed) + l.size();
            PEAK.fetch_max(now, Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l);
        LIVE.fetch_sub(l.size(), Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = System.realloc(p, l, new);
        if !q.is_null() {
            LIVE.fetch_sub(l.size(), Relaxed);
            let now = LIVE.fetch_add(new, Relaxed) + new;
            PEAK.fetch_max(now, Relaxed);
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Memory a case may take above what was live before it.
const CASE_BYTES: usize = 256 << 20;
/// Time a case may take: a hang detector, far above the milliseconds a case takes.
const CASE_TIME: Duration = Duration::from_secs(10);
/// Memory the fuzzed runs may use for fileset trees, to keep population quick.
const BUDGET: u64 = 8 << 20;

/// splitmix64: small, seeded, reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e3779b97f4a7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
}

const NUMBERS: &[&str] = &[
    "0",
    "1",
    "2",
    "7",
    "100",
    "1000",
    "64k",
    "1m",
    "1g",
    "2147483647",
    "2147483648",
    "4294967296",
    "9223372036854775807",
    "18446744073709551615",
    "99999999999999999999999",
    "0k",
    "4095g",
];
const WORDS: &[&str] = &[
    "define",
    "fileset",
    "file",
    "process",
    "thread",
    "flowop",
    "set",
    "run",
    "psrun",
    "create",
    "files",
    "echo",
    "eventgen",
    "rate",
    "entries",
    "instances",
    "nthreads",
    "memsize",
    "iosize",
    "iters",
    "dirwidth",
    "dirgamma",
    "leafdirs",
    "size",
    "prealloc",
    "opennext",
    "fd",
    "srcfd",
    "indexed",
    "value",
    "target",
    "randvar",
    "cvar",
    "randtable",
    "type",
    "tabular",
    "gamma",
    "uniform",
    "mean",
    "min",
    "round",
    "seed",
    "parameters",
    "{",
    "}",
    "(",
    ")",
    "=",
    ",",
    "$nfiles",
    "$dir",
    "$x1",
    "\"text $dir\"",
    "read",
    "write",
    "hog",
    "block",
    "wakeup",
    "semblock",
    "sempost",
    "composite",
    "-5",
    "$",
    "~",
    "\"",
    "#",
    "\n",
];
/// Attribute assignments that ask for a lot, by the kind of line they fit.
const BIG: &[(&str, &[&str])] = &[
    (
        "define fileset",
        &[
            "entries=2147483648",
            "leafdirs=4294967296",
            "dirwidth=1",
            "dirwidth=0",
            "dirwidth=2147483648",
            "dirgamma=1",
            "dirgamma=0",
            "size=18446744073709551615",
            "entries=300000",
            "dirwidth=3",
        ],
    ),
    ("define file", &["size=18446744073709551615", "prealloc=4294967296"]),
    ("define process", &["instances=2147483648", "instances=1000", "nice=4294967296"]),
    ("thread", &["instances=2147483648", "memsize=1099511627776", "instances=100000", "ioprio=4294967296"]),
    (
        "flowop",
        &[
            "iosize=1099511627776",
            "iters=18446744073709551615",
            "value=18446744073709551615",
            "fd=128",
            "srcfd=128",
            "highwater=9223372036854775807",
            "opennext",
            "indexed=$nfiles",
            "workingset=1",
        ],
    ),
];

/// A big figure for a line, if the line is a definition it fits.
fn big_for(line: &str, rng: &mut Rng) -> Option<&'static str> {
    let t = line.trim_start();
    let (_, attrs) = BIG.iter().find(|(k, _)| t.starts_with(k) && !t.starts_with("define flowop"))?;
    Some(rng.pick(attrs))
}

fn seeds() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    let dirs = [
        root.join("../src/strata/workloads/personalities"),
        root.join("../src/strata/workloads/personalities/v1.4.9.1"),
        root.join("../src/strata/workloads/personalities/alternates"),
        root.join("tests/wml"),
        root.join("tests/data/filebench/1.5-alpha3"),
    ];
    for d in dirs {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "f") {
                files.push((p.display().to_string(), std::fs::read_to_string(&p).unwrap()));
            }
        }
    }
    files.sort();
    assert!(files.len() >= 20, "seed files: {}", files.len());
    files
}

/// Byte offsets of the integer literals in `s`.
fn numbers(s: &str) -> Vec<(usize, usize)> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() && (i == 0 || !b[i - 1].is_ascii_alphanumeric() && b[i - 1] != b'$') {
            let start = i;
            while i < b.len() && (b[i].is_ascii_digit() || matches!(b[i], b'k' | b'm' | b'g')) {
                i += 1;
            }
            out.push((start, i));
        } else {
            i += 1;
        }
    }
    out
}

fn boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// One to four random edits of `src`.
fn mutate(src: &str, rng: &mut Rng) -> String {
    let mut s = src.to_string();
    for _ in 0..1 + rng.below(3) {
        // syntax-keeping edits (figures) most of the time, so that the
        // checker and the population see most cases
        match rng.below(12) {
            0..=3 => {
                let nums = numbers(&s);
                if !nums.is_empty() {
                    let (a, b) = nums[rng.below(nums.len())];
                    s.replace_range(a..b, rng.pick(NUMBERS));
                }
            }
            8 if !s.is_empty() => {
                let a = boundary(&s, rng.below(s.len()));
                let b = boundary(&s, a + 1 + rng.below(40));
                s.replace_range(a..b, "");
            }
            4..=6 => {
                // a big figure on a definition line
                let mut l: Vec<String> = s.lines().map(str::to_string).collect();
                let targets: Vec<usize> = (0..l.len()).filter(|&i| big_for(&l[i], &mut Rng(0)).is_some()).collect();
                if !targets.is_empty() {
                    let t = targets[rng.below(targets.len())];
                    let fig = big_for(&l[t], rng).unwrap_or("");
                    let at = l[t].find('{').unwrap_or(l[t].trim_end().len());
                    let at = if l[t][..at].trim_end().ends_with(',') { l[t][..at].trim_end().len() - 1 } else { at };
                    l[t].insert_str(at, &format!(",{fig}"));
                    s = l.join("\n");
                }
            }
            7 if !s.is_empty() => {
                let lines: Vec<&str> = s.lines().collect();
                let (i, j) = (rng.below(lines.len()), rng.below(lines.len()));
                let mut l: Vec<String> = lines.iter().map(|x| x.to_string()).collect();
                if rng.below(2) == 0 {
                    l.swap(i, j);
                } else {
                    l.insert(j, lines[i].to_string());
                }
                s = l.join("\n");
            }
            9 => {
                let a = boundary(&s, rng.below(s.len()));
                s.insert_str(a, &format!(" {} ", rng.pick(WORDS)));
            }
            10 => {
                let a = boundary(&s, rng.below(s.len() + 1));
                s.truncate(a);
            }
            _ => {}
        }
    }
    s
}

/// How far a case got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Reached {
    SyntaxError,
    CheckError,
    Populated,
    PopulationRefused,
}

/// Parses and checks one file; populates its filesets in memory (no I/O)
/// when it checks clean, to exercise the tree walk with odd figures.
fn check_case(name: &str, text: &str) -> Reached {
    let (script, errors) = parser::parse_all(name, text);
    for e in &errors {
        assert!(e.pos().is_some(), "a syntax error without a place: {e}");
    }
    if !errors.is_empty() {
        return Reached::SyntaxError;
    }
    let opts = Options { check_only: true, memory_bytes: Some(BUDGET), ..Default::default() };
    let mut interp = Interp::new(&script, opts, Arc::new(Output::quiet()));
    if !interp.check(&script).is_empty() {
        return Reached::CheckError;
    }
    match interp.create_filesets() {
        Ok(()) => Reached::Populated,
        Err(_) => Reached::PopulationRefused,
    }
}

/// Runs `cases` mutated files from `seed`; panics with a reproducible report.
fn fuzz(seed: u64, cases: usize) {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let files = seeds();
    let mut rng = Rng(seed);
    let mut slowest = Duration::ZERO;
    let mut reached = std::collections::HashMap::new();
    for case in 0..cases {
        let (name, src) = &files[rng.below(files.len())];
        let text = mutate(src, &mut rng);
        let before = LIVE.load(Relaxed);
        PEAK.store(before, Relaxed);
        let start = Instant::now();
        let r = std::panic::catch_unwind(|| check_case(name, &text));
        let took = start.elapsed();
        let grew = PEAK.load(Relaxed).saturating_sub(before);
        let report = || format!("seed {seed} case {case} ({name}), file:\n{text}\n");
        let Ok(how) = r else { panic!("panic: {}", report()) };
        *reached.entry(how).or_insert(0usize) += 1;
        assert!(took < CASE_TIME, "took {took:?}: {}", report());
        assert!(grew < CASE_BYTES, "allocated {grew} bytes: {}", report());
        slowest = slowest.max(took);
    }
    eprintln!("fuzz: {cases} cases from seed {seed}, slowest {slowest:?}, reached {reached:?}");
    // the mutations must leave most files readable, so that the checker and
    // the population are what is fuzzed
    assert!(reached.get(&Reached::Populated).copied().unwrap_or(0) > cases / 5, "{reached:?}");
}

#[test]
fn fuzz_quick() {
    fuzz(20240601, 3000);
}

#[test]
#[ignore = "long: run with --ignored (FUZZ_CASES, FUZZ_SEED)"]
fn fuzz_large() {
    let env = |k: &str, d: u64| std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d);
    fuzz(env("FUZZ_SEED", 1), env("FUZZ_CASES", 200_000) as usize);
}
