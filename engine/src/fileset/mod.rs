//! Filesets: definition, population, picking and on-disk creation (WML-SPEC §5.1, §6, §8.2).
//!
//! Why one lock per fileset: Filebench's `fs_pick_lock` orders the shared
//! rotors, which is part of the observable behaviour (the pick order of
//! `conformance/pick-order.strace.txt`). The lock only covers the bit
//! operations; system calls run outside it.

pub mod create;
pub mod pick;
pub mod tree;

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

pub use pick::{EntryState, Want};
pub use tree::{populate, Tree, TreeParams};

/// Creation options of a fileset (read at population time).
#[derive(Debug, Clone, Default)]
pub struct CreateOpts {
    pub prealloc_pct: u64,
    pub paralloc: bool,
    pub reuse: bool,
    pub trusttree: bool,
}

/// Mutable pick state, under the fileset's lock.
#[derive(Debug, Default)]
pub struct PickState {
    pub files: EntryState,
    pub leafdirs: EntryState,
    pub dir_rotor: usize,
}

/// A populated fileset shared by all worker threads.
#[derive(Debug)]
pub struct Fileset {
    pub name: String,
    /// `<path>/<name>`.
    pub root: PathBuf,
    pub is_file: bool,
    pub readonly: bool,
    pub writeonly: bool,
    /// The fileset's `size` read once more, the wss fallback (§9.2).
    pub default_size: u64,
    pub tree: Tree,
    pub file_paths: Vec<CString>,
    pub dir_paths: Vec<CString>,
    pub leaf_paths: Vec<CString>,
    state: Mutex<PickState>,
    idle_cv: Condvar,
}

fn cpath(root: &Path, rel: &str) -> CString {
    let mut s = root.as_os_str().to_string_lossy().into_owned();
    s.push_str(rel);
    CString::new(s).unwrap_or_default()
}

impl Fileset {
    /// Wraps a populated tree; no entry exists until `create` runs.
    pub fn new(name: &str, path: &str, is_file: bool, flags: (bool, bool), default_size: u64, tree: Tree) -> Self {
        let root = Path::new(path).join(name);
        let file_paths = tree.files.iter().map(|(r, _)| cpath(&root, r)).collect();
        let dir_paths = tree.dirs.iter().map(|r| cpath(&root, r)).collect();
        let leaf_paths = tree.leafdirs.iter().map(|r| cpath(&root, r)).collect();
        let state = PickState {
            files: EntryState::new(tree.files.len()),
            leafdirs: EntryState::new(tree.leafdirs.len()),
            dir_rotor: 0,
        };
        Fileset {
            name: name.to_string(),
            root,
            is_file,
            readonly: flags.0,
            writeonly: flags.1,
            default_size,
            tree,
            file_paths,
            dir_paths,
            leaf_paths,
            state: Mutex::new(state),
            idle_cv: Condvar::new(),
        }
    }

    /// Locks the pick state.
    pub fn lock(&self) -> MutexGuard<'_, PickState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Size of file entry `i` at population (`fse_size`).
    pub fn file_size(&self, i: usize) -> u64 {
        self.tree.files[i].1
    }

    /// Picks a file: waits while every file is busy (§8.2 step 1), then
    /// rotor/indexed pick. `stop` ends the wait.
    pub fn pick_file(&self, want: Want, tid: usize, index: Option<f64>, stop: &dyn Fn() -> bool) -> Option<usize> {
        let mut st = self.lock();
        if st.files.len() == 0 {
            return None;
        }
        while st.files.all_busy() {
            if stop() {
                return None;
            }
            st = self.idle_cv.wait_timeout(st, Duration::from_millis(50)).unwrap().0;
        }
        let n = st.files.len();
        let idx = index.map(|v| (v as u64 % n as u64) as usize);
        st.files.pick(want, tid, idx)
    }

    /// Unbusies file `i`, optionally setting existence and changing the open count.
    pub fn unbusy_file(&self, i: usize, exists: Option<bool>, open_delta: i64) {
        let mut st = self.lock();
        let was_all_busy = st.files.all_busy();
        st.files.unbusy(i, exists, open_delta);
        drop(st);
        if was_all_busy {
            self.idle_cv.notify_all();
        }
    }

    /// Waits until file `i` is not busy and marks it busy (close, delete by fd).
    pub fn busy_wait_file(&self, i: usize, stop: &dyn Fn() -> bool) -> bool {
        let mut st = self.lock();
        while !st.files.try_busy(i) {
            if stop() {
                return false;
            }
            st = self.idle_cv.wait_timeout(st, Duration::from_millis(10)).unwrap().0;
        }
        true
    }

    /// Open count of file `i`.
    pub fn open_count(&self, i: usize) -> u32 {
        self.lock().files.open_cnt[i]
    }

    /// Picks a leaf directory (makedir: non-existing, removedir: existing).
    pub fn pick_leafdir(&self, want: Want, index: Option<f64>) -> Option<usize> {
        let mut st = self.lock();
        let n = st.leafdirs.len();
        if n == 0 {
            return None;
        }
        let idx = index.map(|v| ((v * (n as f64 / 2.0)) as u64 % n as u64) as usize);
        st.leafdirs.pick(want, 0, idx)
    }

    /// Unbusies leaf directory `i`.
    pub fn unbusy_leafdir(&self, i: usize, exists: Option<bool>) {
        self.lock().leafdirs.unbusy(i, exists, 0);
    }

    /// Picks a (non-leaf) directory by the dir rotor; the root is index 0.
    pub fn pick_dir(&self) -> Option<usize> {
        let mut st = self.lock();
        let n = self.dir_paths.len();
        if n == 0 {
            return None;
        }
        let d = st.dir_rotor % n;
        st.dir_rotor = d + 1;
        Some(d)
    }

    /// Number of existing files (for tests and logs).
    pub fn existing_files(&self) -> usize {
        let st = self.lock();
        (0..st.files.len()).filter(|&i| st.files.exists.get(i)).count()
    }

    /// Marks an entry existing or not without a pick (used by creation).
    pub fn set_exists(&self, leaf: bool, i: usize, v: bool) {
        let mut st = self.lock();
        let es = if leaf { &mut st.leafdirs } else { &mut st.files };
        es.exists.set(i, v);
    }
}
