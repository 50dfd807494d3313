//! Filesets: definition, population, picking and on-disk creation
//! (docs/filebench-language.md#filesets, #fileset-trees, #picking).
//!
//! Why no pick lock: the shared rotors and BUSY flags are atomics (see
//! `pick`), so picks, unbusies and closes of different threads do not
//! serialise. A thread that must wait for a busy entry (docs/filebench-language.md#picking) polls
//! with a short back-off instead of sleeping on a condition variable: waits
//! are rare and short (the holder is inside one open/close), and the unbusy
//! path then stays free of locks and wake-up system calls. The pick order of
//! `conformance/pick-order.strace.txt` is unchanged.

pub mod create;
pub mod pick;
pub mod tree;

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::time::Duration;

pub use pick::{EntryState, Want};

use crate::shm::ShmBox;
pub use tree::{populate, Tree, TreeParams};

/// Creation options of a fileset (read at population time).
#[derive(Debug, Clone, Default)]
pub struct CreateOpts {
    pub prealloc_pct: u64,
    pub paralloc: bool,
    pub reuse: bool,
    pub trusttree: bool,
}

/// Pick state: atomics in shared memory (see `pick`).
#[derive(Debug, Default)]
pub struct PickState {
    pub files: EntryState,
    pub leafdirs: EntryState,
    pub dir_rotor: ShmBox<AtomicUsize>,
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
    /// The fileset's `size` read once more, the wss fallback (docs/filebench-language.md#random-offsets).
    pub default_size: u64,
    pub tree: Tree,
    pub file_paths: Vec<CString>,
    pub dir_paths: Vec<CString>,
    pub leaf_paths: Vec<CString>,
    state: PickState,
    /// Keep per-entry open counts. Only `deletefile` reads them (docs/filebench-language.md#flowops: it
    /// skips open files), so a run without one turns them off (`runner`)
    /// and spares an atomic read-modify-write of a shared line per close.
    track_opens: AtomicBool,
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
            dir_rotor: ShmBox::new(),
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
            state,
            track_opens: AtomicBool::new(true),
        }
    }

    /// The pick state (atomics).
    pub fn state(&self) -> &PickState {
        &self.state
    }

    /// Retries `attempt` until it gives a value or `stop()`: a few yields,
    /// then sleeps growing from 20 us to 2 ms.
    fn retry<T>(&self, attempt: &dyn Fn() -> Option<T>, stop: &dyn Fn() -> bool) -> Option<T> {
        let mut nap = Duration::from_micros(20);
        for round in 0u32.. {
            if let Some(v) = attempt() {
                return Some(v);
            }
            if stop() {
                return None;
            }
            if round < 16 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(nap);
                nap = (nap * 2).min(Duration::from_millis(2));
            }
        }
        None
    }

    /// Size of file entry `i` at population (`fse_size`).
    pub fn file_size(&self, i: usize) -> u64 {
        self.tree.files[i].1
    }

    /// Picks a file (rotor or `indexed`); `None` only when no file of the
    /// wanted kind exists (NORSC). While every candidate is BUSY the picker
    /// waits for an unbusy and tries again: Filebench waits only while the
    /// whole fileset is busy and otherwise returns NORSC, which makes
    /// concurrent opens of a one-file fileset fail (issue #125).
    pub fn pick_file(&self, want: Want, tid: usize, index: Option<f64>, stop: &dyn Fn() -> bool) -> Option<usize> {
        let files = &self.state.files;
        let n = files.len();
        if n == 0 {
            return None;
        }
        let idx = index.map(|v| (v as u64 % n as u64) as usize);
        if let Some(e) = files.pick(want, tid, idx) {
            return Some(e);
        }
        // Every candidate is busy (or there is none): wait while candidates exist.
        self.retry(&|| files.pick(want, tid, idx).map(Some).or_else(|| (!files.has(want)).then_some(None)), stop)
            .flatten()
    }

    /// `deletefile`'s pick: an existing file that nobody holds open, else
    /// `None` (never waits). Filebench picks any existing file and then skips
    /// the delete when it is open, while the createfile beside it always
    /// creates: varmail's fileset fills until createfile finds no
    /// non-existing file and the run stops (docs/filebench-language.md#known-bugs).
    /// Needs the open counts (`tracks_opens`), which a run with a deletefile keeps.
    pub fn pick_unopened_file(&self, index: Option<f64>) -> Option<usize> {
        let files = &self.state.files;
        let n = files.len();
        if n == 0 || !self.tracks_opens() {
            return None;
        }
        files.pick_unopened(0, index.map(|v| (v as u64 % n as u64) as usize))
    }

    /// Unbusies file `i`, optionally setting existence and changing the open count.
    pub fn unbusy_file(&self, i: usize, exists: Option<bool>, open_delta: i64) {
        if self.tracks_opens() {
            self.state.files.unbusy(i, exists, open_delta);
        } else if exists.is_none() {
            self.state.files.release(i);
        } else {
            self.state.files.unbusy(i, exists, 0);
        }
    }

    /// Whether open counts are kept (see `track_opens`).
    #[inline]
    pub fn tracks_opens(&self) -> bool {
        self.track_opens.load(Relaxed)
    }

    /// Makes room for the private `opennext` rotors of thread ids `1..=nthreads`.
    pub fn private_rotors(&self, nthreads: usize) {
        self.state.files.private_rotors(nthreads);
    }

    /// Turns open counting on or off for the next run (off only when no
    /// flowop of the run can read the counts, i.e. there is no `deletefile`).
    pub fn set_track_opens(&self, on: bool) {
        self.track_opens.store(on, Relaxed);
    }

    /// Waits until file `i` is not busy and marks it busy (close, delete by fd).
    pub fn busy_wait_file(&self, i: usize, stop: &dyn Fn() -> bool) -> bool {
        let files = &self.state.files;
        files.try_busy(i) || self.retry(&|| files.try_busy(i).then_some(()), stop).is_some()
    }

    /// Waits until file `i` is not busy (closefile, docs/filebench-language.md#flowops); false if stopped.
    pub fn wait_idle(&self, i: usize, stop: &dyn Fn() -> bool) -> bool {
        let files = &self.state.files;
        !files.is_busy(i) || self.retry(&|| (!files.is_busy(i)).then_some(()), stop).is_some()
    }

    /// A close of file `i` finished: one opener less. Filebench also marks
    /// the entry BUSY around the close(2); nothing observable depends on it
    /// but the pick order under contention, so we spare the two atomics.
    pub fn closed(&self, i: usize) {
        if self.tracks_opens() {
            self.state.files.add_open(i, -1);
        }
    }

    /// Open count of file `i`.
    pub fn open_count(&self, i: usize) -> u32 {
        self.state.files.open_count(i)
    }

    /// Picks a leaf directory (makedir: non-existing, removedir: existing).
    pub fn pick_leafdir(&self, want: Want, index: Option<f64>) -> Option<usize> {
        let n = self.state.leafdirs.len();
        if n == 0 {
            return None;
        }
        let idx = index.map(|v| ((v * (n as f64 / 2.0)) as u64 % n as u64) as usize);
        self.state.leafdirs.pick(want, 0, idx)
    }

    /// Unbusies leaf directory `i`.
    pub fn unbusy_leafdir(&self, i: usize, exists: Option<bool>) {
        self.state.leafdirs.unbusy(i, exists, 0);
    }

    /// Picks a (non-leaf) directory by the dir rotor; the root is index 0.
    pub fn pick_dir(&self) -> Option<usize> {
        let n = self.dir_paths.len();
        if n == 0 {
            return None;
        }
        Some(self.state.dir_rotor.fetch_add(1, Relaxed) % n)
    }

    /// Marks an entry existing or not without a pick (used by creation).
    pub fn set_exists(&self, leaf: bool, i: usize, v: bool) {
        let es = if leaf { &self.state.leafdirs } else { &self.state.files };
        es.exists.set(i, v);
    }
}
