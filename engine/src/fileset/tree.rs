//! Building the in-memory fileset tree (`fileset_populate`, docs/filebench-language.md#fileset-trees).
//!
//! Why this exact walk: directory depths and widths are gamma samples from
//! the workload's drand48 stream, interleaved with per-file size samples, in
//! depth-first creation order. Only the same walk gives the same tree as
//! `conformance/tree_*.tsv`.

use std::sync::Mutex;

use crate::rng::{gamma_knuth, Rand48};
use crate::vars::Avd;

/// Inputs of population, read from the fileset's attributes at population time.
#[derive(Debug, Clone)]
pub struct TreeParams {
    pub entries: u64,
    pub leafdirs: u64,
    pub size: Avd,
    pub dirwidth: Avd,
    /// `dirgamma` / 1000.
    pub dirgamma: f64,
    pub dirdepthrv: Option<Avd>,
    /// 1.4.9.1 semantics: `size` is a gamma mean with this shape (docs/filebench-language.md#dialects).
    pub size_gamma_14: Option<f64>,
}

/// A populated tree: entries in index order, paths relative to the root.
#[derive(Debug, Default, Clone)]
pub struct Tree {
    pub files: Vec<(String, u64)>,
    pub dirs: Vec<String>,
    pub leafdirs: Vec<String>,
    pub total_bytes: u64,
    pub meandepth: f64,
    pub meanwidth: i64,
    /// Memory the tree takes (`entry_bytes` summed over its entries).
    pub mem_bytes: u64,
}

/// Memory an entry of a fileset costs, by the length of its relative path:
/// the path in the tree, its absolute C string (`root_len` more), the
/// vector slots and the pick state. Used to bound population and to estimate
/// it from the declarations (`crate::limits`).
pub fn entry_bytes(rel_len: usize, root_len: usize) -> u64 {
    (2 * rel_len + root_len + 96) as u64
}

/// Population would need more memory than `budget_bytes`.
#[derive(Debug, Clone, PartialEq)]
pub struct TooBig {
    /// Entries made (files, directories, leaf directories) when it stopped.
    pub entries: u64,
    pub bytes: u64,
}

/// `(int)x` as x86-64 compiles it (`cvttsd2si`): truncation, and INT_MIN for
/// NaN and values out of range. Filebench stores such conversions in its
/// `double` depths, so a width of 1 (mean depth +inf) makes every directory
/// a leaf there; a saturating conversion would make none a leaf.
pub fn c_int(x: f64) -> f64 {
    if x.is_nan() || x >= 2147483648.0 || x <= -2147483649.0 {
        -2147483648.0
    } else {
        x.trunc()
    }
}

/// `(int)` of a 64-bit unsigned value: its low 32 bits, signed.
pub fn c_int_of_u64(v: u64) -> i64 {
    v as u32 as i32 as i64
}

/// One directory being filled (a frame of Filebench's recursion).
struct Frame {
    rel: String,
    depth: f64,
    isleaf: bool,
    is_root: bool,
    ranwidth: f64,
    /// 0: files loop, 1: leaf directories loop.
    phase: u8,
    i: u64,
}

struct Walk<'a> {
    p: &'a TreeParams,
    drand: &'a Mutex<Rand48>,
    meanwidth: f64,
    random_width: bool,
    meandepth: f64,
    tree: Tree,
    root_len: usize,
    budget_bytes: u64,
    bytes: u64,
}

/// Populates a tree the way `fileset_populate` does, using at most about
/// `budget_bytes` of memory (`entry_bytes` per entry, `root_len` being the
/// length of the fileset's absolute root path).
pub fn populate(
    p: &TreeParams,
    drand: &Mutex<Rand48>,
    root_len: usize,
    budget_bytes: u64,
) -> std::result::Result<Tree, TooBig> {
    let random_width = matches!(p.dirwidth, Avd::Rand(_));
    let meanwidth_int: i64 = match &p.dirwidth {
        Avd::Rand(r) => c_int(r.mean) as i64,
        other => c_int_of_u64(other.get_int()),
    };
    let meandepth = ((p.entries as f64) + (p.leafdirs as f64)).ln() / (meanwidth_int as f64).ln();
    let mut w = Walk {
        p,
        drand,
        meanwidth: meanwidth_int as f64,
        random_width,
        meandepth,
        tree: Tree { meandepth, meanwidth: meanwidth_int, ..Default::default() },
        root_len,
        budget_bytes,
        bytes: 0,
    };
    w.walk()?;
    w.tree.mem_bytes = w.bytes;
    Ok(w.tree)
}

impl<'a> Walk<'a> {
    fn gamma(&self, shape: f64, scale: f64) -> f64 {
        let mut g = self.drand.lock().unwrap();
        gamma_knuth(shape, scale, &mut || g.next_f64())
    }

    fn depth_and_width(&self) -> (f64, f64) {
        let g = self.p.dirgamma;
        let randepth = match &self.p.dirdepthrv {
            Some(Avd::Rand(r)) => c_int_of_u64(dbl_to_u64(r.sample_with_mean(self.meandepth))) as f64,
            Some(other) => c_int_of_u64(other.get_int()) as f64,
            None if g > 0.0 => c_int(self.gamma(g, self.meandepth / g)),
            None => c_int(self.meandepth),
        };
        let ranwidth = if self.random_width {
            self.p.dirwidth.get_dbl()
        } else if g > 0.0 {
            self.gamma(g, self.meanwidth / g)
        } else {
            self.meanwidth
        };
        (if randepth == 0.0 { 1.0 } else { randepth }, if ranwidth == 0.0 { 1.0 } else { ranwidth })
    }

    fn file_size(&self) -> u64 {
        match self.p.size_gamma_14 {
            Some(g) if !self.p.size.is_random() => {
                let mean = self.p.size.get_int() as f64;
                if g > 0.0 {
                    dbl_to_u64(self.gamma(g, mean / g))
                } else {
                    mean as u64
                }
            }
            _ => self.p.size.get_int(),
        }
    }

    /// Counts an entry with relative path length `len` against the budget.
    fn charge(&mut self, len: usize) -> std::result::Result<(), TooBig> {
        self.bytes += entry_bytes(len, self.root_len);
        if self.bytes > self.budget_bytes {
            let t = &self.tree;
            return Err(TooBig {
                entries: (t.files.len() + t.dirs.len() + t.leafdirs.len()) as u64,
                bytes: self.bytes,
            });
        }
        Ok(())
    }

    /// Enters directory `serial` under `parent` (`fileset_populate_subdir` up
    /// to its loops): names it, samples its depth and width.
    fn enter(&mut self, parent: Option<&Frame>, serial: u64) -> std::result::Result<Frame, TooBig> {
        let depth = parent.map_or(0.0, |f| f.depth) + 1.0;
        let rel = match parent {
            None => String::new(),
            Some(p) => format!("{}/{serial:08}", p.rel),
        };
        self.charge(rel.len())?;
        self.tree.dirs.push(rel.clone());
        let (randepth, ranwidth) = self.depth_and_width();
        Ok(Frame { rel, depth, isleaf: depth >= randepth, is_root: parent.is_none(), ranwidth, phase: 0, i: 1 })
    }

    /// Filebench's recursive walk with an explicit stack: files first, then
    /// leaf directories, in each directory; a directory that is not a leaf
    /// gets subdirectories instead. The order of entries and of random draws
    /// is the recursion's, so the trees are the same.
    fn walk(&mut self) -> std::result::Result<(), TooBig> {
        let root = self.enter(None, 1)?;
        let mut stack = vec![root];
        while let Some(top) = stack.last_mut() {
            let (made, wanted) = if top.phase == 0 {
                (self.tree.files.len() as u64, self.p.entries)
            } else {
                (self.tree.leafdirs.len() as u64, self.p.leafdirs)
            };
            if !((top.is_root || (top.i as f64) < top.ranwidth + 1.0) && made < wanted) {
                if top.phase == 0 {
                    top.phase = 1;
                    top.i = 1;
                } else {
                    stack.pop();
                }
                continue;
            }
            let i = top.i;
            top.i += 1;
            if !top.is_root && top.isleaf {
                let rel = format!("{}/{i:08}", top.rel);
                let is_file = top.phase == 0;
                self.charge(rel.len())?;
                if is_file {
                    let size = self.file_size();
                    self.tree.total_bytes = self.tree.total_bytes.saturating_add(size);
                    self.tree.files.push((rel, size));
                } else {
                    self.tree.leafdirs.push(rel);
                }
            } else {
                let parent = stack.last().expect("a frame");
                let child = self.enter(Some(parent), i)?;
                stack.push(child);
            }
        }
        Ok(())
    }
}

fn dbl_to_u64(d: f64) -> u64 {
    if d <= 0.0 || d.is_nan() {
        0
    } else {
        d as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(entries: u64, width: u64, gamma: f64) -> TreeParams {
        TreeParams {
            entries,
            leafdirs: 0,
            size: Avd::Int(1),
            dirwidth: Avd::Int(width),
            dirgamma: gamma,
            dirdepthrv: None,
            size_gamma_14: None,
        }
    }

    #[test]
    fn width_one_makes_every_directory_a_leaf_as_filebench_does() {
        // mean depth = ln(n)/ln(1) = +inf; (int)inf is INT_MIN on x86-64, so
        // each directory below the root is a leaf: no deep chain (it used to
        // recurse until the stack overflowed).
        let t = populate(&params(1000, 1, 1.5), &Mutex::new(Rand48::default()), 10, u64::MAX).unwrap();
        assert_eq!(t.files.len(), 1000);
        assert!(t.files.iter().all(|(p, _)| p.matches('/').count() == 2), "{:?}", &t.files[..3]);
    }

    #[test]
    fn population_stops_at_its_memory_budget() {
        let e = populate(&params(1 << 40, 20, 1.5), &Mutex::new(Rand48::default()), 10, 1 << 20).unwrap_err();
        assert!(e.bytes > 1 << 20 && e.entries < 1 << 20, "{e:?}");
    }

    #[test]
    fn a_width_that_makes_no_room_is_bounded_too() {
        // dirwidth 2^31 is a negative int in Filebench: no directory below the
        // root ever holds anything, and the root adds directories forever.
        let e = populate(&params(10, 1 << 31, 0.0), &Mutex::new(Rand48::default()), 10, 1 << 20).unwrap_err();
        assert!(e.bytes > 1 << 20, "{e:?}");
    }
}
