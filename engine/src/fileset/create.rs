//! Creating a fileset on disk (`fileset_create`, docs/filebench-language.md#fileset-creation).
//!
//! Why the generators matter here: which files are preallocated is decided by
//! visiting entries in a Mersenne-twister order and keeping each unless glibc
//! `rand()` falls under the skip threshold. Reproducing both gives the same
//! existing/non-existing split, and so the same pick order, as Filebench.

use std::fs;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Mutex;

use super::pick::Bits;
use super::{CreateOpts, Fileset};
use crate::error::{Result, WmlError};
use crate::rng::glibc_rand::RAND_MAX;
use crate::rng::{GlibcRand, MtState};

const ALLOC_BLOCK: usize = 1 << 20;

/// The decisions of prealloc, computed before any I/O: which files and leaf
/// dirs exist after creation.
pub fn prealloc_plan(fs: &Fileset, pct: u64, mt: &mut MtState, rnd: &mut GlibcRand) -> (Vec<usize>, Vec<usize>) {
    let randno = (RAND_MAX as u64 * 100u64.saturating_sub(pct) / 100) as i64;
    let files = visit(fs.tree.files.len(), randno, mt, rnd);
    let leafs = visit(fs.tree.leafdirs.len(), randno, mt, rnd);
    (files, leafs)
}

/// Visits `n` entries in "pick unique" order; returns the kept ones.
fn visit(n: usize, randno: i64, mt: &mut MtState, rnd: &mut GlibcRand) -> Vec<usize> {
    let free = Bits::new(n);
    for i in 0..n {
        free.set(i, true);
    }
    let mut kept = Vec::new();
    for _ in 0..n {
        let start = mt.fb_random64(n as u64, 0) as usize;
        let e = (start..n).chain(0..start).find(|&i| free.get(i)).expect("free entry");
        free.set(e, false);
        if (rnd.next_rand() as i64) < randno {
            continue;
        }
        kept.push(e);
    }
    kept
}

/// Creates the fileset's tree on disk; logs through `log`.
pub fn create(
    fs: &Fileset,
    opts: &CreateOpts,
    mt: &mut MtState,
    rnd: &mut GlibcRand,
    log: &dyn Fn(&str),
) -> Result<()> {
    let root_exists = fs.root.exists();
    let reusing = opts.trusttree || (opts.reuse && root_exists);
    if !reusing {
        log(&format!("Removing {} tree (if exists)", fs.name));
        if root_exists {
            fs::remove_dir_all(&fs.root).map_err(|e| WmlError::io(format!("removing {}", fs.root.display()), e))?;
        }
        log(&format!("Pre-allocating directories in {} tree", fs.name));
    } else {
        log(&format!("Reusing existing {} tree", fs.name));
    }
    fs::create_dir_all(&fs.root).map_err(|e| WmlError::io(format!("creating {}", fs.root.display()), e))?;
    for d in &fs.dir_paths {
        let p = Path::new(std::ffi::OsStr::from_bytes(d.as_bytes()));
        fs::create_dir_all(p).map_err(|e| WmlError::io(format!("creating {}", p.display()), e))?;
    }
    log(&format!("Pre-allocating files in {} tree", fs.name));
    let (files, leafs) = prealloc_plan(fs, opts.prealloc_pct, mt, rnd);
    write_files(fs, &files, opts, reusing)?;
    for &i in &files {
        fs.set_exists(false, i, true);
    }
    for &i in &leafs {
        let p = Path::new(std::ffi::OsStr::from_bytes(fs.leaf_paths[i].as_bytes()));
        if !(reusing && p.exists()) {
            fs::create_dir(p)
                .map_err(|e| WmlError::io(format!("Failed to pre-allocate leaf directory {}", p.display()), e))?;
        }
        fs.set_exists(true, i, true);
    }
    Ok(())
}

fn write_files(fs: &Fileset, files: &[usize], opts: &CreateOpts, reusing: bool) -> Result<()> {
    if !opts.paralloc || files.len() < 2 {
        let mut buf = Vec::new();
        return files.iter().try_for_each(|&i| alloc_file(fs, i, reusing, opts.trusttree, &mut buf));
    }
    let next = Mutex::new(0usize);
    let nthreads = 32.min(files.len());
    let errors: Mutex<Option<WmlError>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..nthreads {
            s.spawn(|| {
                let mut buf = Vec::new();
                loop {
                    let k = {
                        let mut n = next.lock().unwrap();
                        let k = *n;
                        *n += 1;
                        k
                    };
                    if k >= files.len() || errors.lock().unwrap().is_some() {
                        return;
                    }
                    if let Err(e) = alloc_file(fs, files[k], reusing, opts.trusttree, &mut buf) {
                        *errors.lock().unwrap() = Some(e);
                    }
                }
            });
        }
    });
    match errors.into_inner().unwrap() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// `fileset_alloc_file`: create (or reuse) one file of `fse_size` zero bytes.
fn alloc_file(fs: &Fileset, i: usize, reusing: bool, trust: bool, buf: &mut Vec<u8>) -> Result<()> {
    let path = Path::new(std::ffi::OsStr::from_bytes(fs.file_paths[i].as_bytes()));
    let size = fs.file_size(i);
    let ctx = || format!("Failed to pre-allocate file {}", path.display());
    if reusing {
        if trust {
            return Ok(());
        }
        if let Ok(md) = fs::metadata(path) {
            if md.len() == size {
                return Ok(());
            }
            if md.len() > size {
                let f = fs::OpenOptions::new().write(true).open(path).map_err(|e| WmlError::io(ctx(), e))?;
                return f.set_len(size).map_err(|e| WmlError::io(ctx(), e));
            }
        }
    }
    if let Some(parent) = path.parent() {
        if !parent.exists() {
            fs::create_dir_all(parent).map_err(|e| WmlError::io(ctx(), e))?;
        }
    }
    let mut f = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| WmlError::io(ctx(), e))?;
    if buf.len() < ALLOC_BLOCK.min(size as usize) {
        buf.resize(ALLOC_BLOCK.min(size as usize), 0);
    }
    let mut left = size as usize;
    while left > 0 {
        let n = left.min(ALLOC_BLOCK);
        f.write_all(&buf[..n]).map_err(|e| WmlError::io(ctx(), e))?;
        left -= n;
    }
    Ok(())
}
