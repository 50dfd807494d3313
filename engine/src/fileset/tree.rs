//! Building the in-memory fileset tree (`fileset_populate`, WML-SPEC §6.1).
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
    /// 1.4.9.1 semantics: `size` is a gamma mean with this shape (§15).
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
}

struct Walk<'a> {
    p: &'a TreeParams,
    drand: &'a Mutex<Rand48>,
    meanwidth: f64,
    random_width: bool,
    meandepth: f64,
    tree: Tree,
}

/// Populates a tree the way `fileset_populate` does.
pub fn populate(p: &TreeParams, drand: &Mutex<Rand48>) -> Tree {
    let random_width = matches!(p.dirwidth, Avd::Rand(_));
    let meanwidth_int: i64 = match &p.dirwidth {
        Avd::Rand(r) => r.mean as i64,
        other => other.get_int() as i64,
    };
    let meandepth = ((p.entries + p.leafdirs) as f64).ln() / (meanwidth_int as f64).ln();
    let mut w = Walk {
        p,
        drand,
        meanwidth: meanwidth_int as f64,
        random_width,
        meandepth,
        tree: Tree { meandepth, meanwidth: meanwidth_int, ..Default::default() },
    };
    w.subdir(None, 1, 0.0);
    w.tree
}

impl<'a> Walk<'a> {
    fn gamma(&self, shape: f64, scale: f64) -> f64 {
        let mut g = self.drand.lock().unwrap();
        gamma_knuth(shape, scale, &mut || g.next_f64())
    }

    fn depth_and_width(&self) -> (f64, f64) {
        let g = self.p.dirgamma;
        let randepth = match &self.p.dirdepthrv {
            Some(Avd::Rand(r)) => r.sample_with_mean(self.meandepth) as i64 as f64,
            Some(other) => other.get_int() as i64 as f64,
            None if g > 0.0 => self.gamma(g, self.meandepth / g) as i64 as f64,
            None => self.meandepth as i64 as f64,
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
                    self.gamma(g, mean / g) as u64
                } else {
                    mean as u64
                }
            }
            _ => self.p.size.get_int(),
        }
    }

    /// `fileset_populate_subdir`; `rel` is the parent's relative path.
    fn subdir(&mut self, parent: Option<&str>, serial: u64, depth: f64) {
        let depth = depth + 1.0;
        let rel = match parent {
            None => String::new(),
            Some(p) => format!("{p}/{serial:08}"),
        };
        self.tree.dirs.push(rel.clone());
        let (randepth, ranwidth) = self.depth_and_width();
        let isleaf = depth >= randepth;
        let is_root = parent.is_none();
        let mut i = 1u64;
        while (is_root || (i as f64) < ranwidth + 1.0) && (self.tree.files.len() as u64) < self.p.entries {
            if !is_root && isleaf {
                let size = self.file_size();
                self.tree.total_bytes += size;
                self.tree.files.push((format!("{rel}/{i:08}"), size));
            } else {
                self.subdir(Some(&rel), i, depth);
            }
            i += 1;
        }
        let mut i = 1u64;
        while (is_root || (i as f64) < ranwidth + 1.0) && (self.tree.leafdirs.len() as u64) < self.p.leafdirs {
            if !is_root && isleaf {
                self.tree.leafdirs.push(format!("{rel}/{i:08}"));
            } else {
                self.subdir(Some(&rel), i, depth);
            }
            i += 1;
        }
    }
}
