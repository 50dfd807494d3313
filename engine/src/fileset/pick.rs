//! Entry state and picking (`fileset_pick`, `fileset_unbusy`; docs/filebench-language.md#picking).
//!
//! Why lock-free: Filebench serialises every pick, unbusy and close of a
//! fileset on one `fs_pick_lock`; with a hundred threads on two cores a
//! preempted lock holder stalls everyone. Here existence is an atomic bitset,
//! each entry has one atomic word holding its BUSY flag and open count, and
//! the rotors are atomics: a pick scans the bitset for the next entry of the
//! wanted set at or after the rotor (wrapping), exactly Filebench's "index if
//! present, else the next higher, else the lowest" walk over its AVL trees,
//! skips busy entries, and claims one by setting its BUSY flag. Only the
//! thread holding an entry's BUSY flag changes its existence, so a claimed
//! entry is re-checked once and kept. An unbusy (flag off, open count +-n)
//! is a single atomic add. Single-threaded, the order is Filebench's; with
//! many threads it differs only where Filebench's own order depends on lock
//! acquisition.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::*};
use std::sync::OnceLock;

use crate::shm::{ShmBox, ShmSlice, Zeroable};

/// A fixed-size atomic bitset (in shared memory: `crate::shm`).
#[derive(Debug, Default)]
pub struct Bits {
    words: ShmSlice<AtomicU64>,
    n: usize,
}

impl Bits {
    pub fn new(n: usize) -> Self {
        Bits { words: ShmSlice::new(n.div_ceil(64)), n }
    }

    pub fn get(&self, i: usize) -> bool {
        self.words[i / 64].load(Acquire) >> (i % 64) & 1 == 1
    }

    /// Sets bit `i` to `v`; returns the previous value.
    pub fn set(&self, i: usize, v: bool) -> bool {
        let m = 1u64 << (i % 64);
        let old = if v { self.words[i / 64].fetch_or(m, AcqRel) } else { self.words[i / 64].fetch_and(!m, AcqRel) };
        old & m != 0
    }

    pub fn len(&self) -> usize {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    fn word(&self, w: usize) -> u64 {
        self.words[w].load(Acquire)
    }
}

/// First index >= `from` (then wrapping to 0) where `word(w)` has a bit.
fn scan(n: usize, from: usize, word: impl Fn(usize) -> u64) -> Option<usize> {
    if n == 0 {
        return None;
    }
    let nw = n.div_ceil(64);
    let tail_mask = |w: usize| if w == nw - 1 && !n.is_multiple_of(64) { (1u64 << (n % 64)) - 1 } else { u64::MAX };
    let from = if from >= n { 0 } else { from };
    let (w0, b0) = (from / 64, from % 64);
    for k in 0..=nw {
        let w = (w0 + k) % nw;
        let mut bits = word(w) & tail_mask(w);
        if k == 0 {
            bits &= u64::MAX << b0;
        }
        if k == nw {
            bits &= if b0 == 0 { 0 } else { (1u64 << b0) - 1 };
        }
        if bits != 0 {
            return Some(w * 64 + bits.trailing_zeros() as usize);
        }
    }
    None
}

/// Which set of entries a pick draws from.
const BUSY: u64 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    Exists,
    NotExists,
}

/// The shared rotors of one kind of entry.
#[derive(Debug, Default)]
#[repr(C)]
pub struct Rotors {
    /// The shared existing-entry rotor (tid 0).
    exrotor: AtomicUsize,
    nerotor: AtomicUsize,
}

// SAFETY: atomics only.
unsafe impl Zeroable for Rotors {}

/// The per-kind state: existence, busy flags, open counts and rotors, all
/// in shared memory so that every process instance picks from the same state.
#[derive(Debug, Default)]
pub struct EntryState {
    pub exists: Bits,
    /// Per entry: bit 0 = BUSY, high 32 bits = open count as an `i32`
    /// (like Filebench's `int` it can go below zero after a delete of an open
    /// file; only `> 0` / `> 1` are ever tested).
    state: ShmSlice<AtomicU64>,
    rotors: ShmBox<Rotors>,
    /// Private rotors of `opennext` threads, by unique thread id (sized by
    /// `private_rotors` before the workers start).
    private: OnceLock<ShmSlice<AtomicUsize>>,
}

impl EntryState {
    pub fn new(n: usize) -> Self {
        EntryState { exists: Bits::new(n), state: ShmSlice::new(n), ..Default::default() }
    }

    /// Makes room for the private rotors of thread ids `1..=nthreads`.
    pub fn private_rotors(&self, nthreads: usize) {
        let _ = self.private.set(ShmSlice::new(nthreads + 1));
    }

    pub fn len(&self) -> usize {
        self.exists.len()
    }

    pub fn is_empty(&self) -> bool {
        self.exists.is_empty()
    }

    fn inv(want: Want) -> u64 {
        if want == Want::Exists {
            0
        } else {
            u64::MAX
        }
    }

    /// `fileset_find_entry`: index `i` if in the set, else next higher, else lowest.
    fn find(&self, want: Want, i: usize) -> Option<usize> {
        let inv = Self::inv(want);
        scan(self.len(), i, |w| self.exists.word(w) ^ inv)
    }

    /// True if the set has any entry (busy or not).
    pub fn has(&self, want: Want) -> bool {
        self.find(want, 0).is_some()
    }

    /// True while entry `e` is BUSY.
    pub fn is_busy(&self, e: usize) -> bool {
        self.state[e].load(Acquire) & BUSY != 0
    }

    /// True if entry `e` can be claimed: not BUSY, and unopened when asked.
    fn usable(&self, e: usize, unopened: bool) -> bool {
        let s = self.state[e].load(Acquire);
        s & BUSY == 0 && (!unopened || (s >> 32) as u32 as i32 <= 0)
    }

    /// First usable entry of the set at or after `start` (itself in the
    /// set), wrapping; `None` if none is.
    fn first_idle(&self, want: Want, start: usize, unopened: bool) -> Option<usize> {
        let mut i = start;
        loop {
            if self.usable(i, unopened) {
                return Some(i);
            }
            i = self.find(want, i + 1)?;
            if i == start {
                return None;
            }
        }
    }

    fn rotor(&self, want: Want, tid: usize) -> usize {
        match (want, tid) {
            (Want::NotExists, _) => self.rotors.nerotor.load(Relaxed),
            (Want::Exists, 0) => self.rotors.exrotor.load(Relaxed),
            (Want::Exists, t) => self.private.get().and_then(|p| p.get(t)).map_or(0, |r| r.load(Relaxed)),
        }
    }

    fn set_rotor(&self, want: Want, tid: usize, v: usize) {
        match (want, tid) {
            (Want::NotExists, _) => self.rotors.nerotor.store(v, Relaxed),
            (Want::Exists, 0) => self.rotors.exrotor.store(v, Relaxed),
            (Want::Exists, t) => {
                if let Some(r) = self.private.get().and_then(|p| p.get(t)) {
                    r.store(v, Relaxed);
                }
            }
        }
    }

    /// Picks an entry (rotor, or `index` for `indexed`) and marks it busy.
    /// `tid` selects the existing-entry rotor. `None` = no entry (NORSC).
    pub fn pick(&self, want: Want, tid: usize, index: Option<usize>) -> Option<usize> {
        self.pick_where(want, tid, index, false)
    }

    /// Like `pick`, but skips entries someone holds open as it skips BUSY
    /// ones (`deletefile`'s pick: see `Fileset::pick_unopened_file`).
    pub fn pick_unopened(&self, tid: usize, index: Option<usize>) -> Option<usize> {
        self.pick_where(Want::Exists, tid, index, true)
    }

    fn pick_where(&self, want: Want, tid: usize, index: Option<usize>, unopened: bool) -> Option<usize> {
        loop {
            let start = match index {
                Some(i) => self.find(want, i)?,
                None => {
                    let e = self.find(want, self.rotor(want, tid))?;
                    self.set_rotor(want, tid, e + 1);
                    e
                }
            };
            let e = self.first_idle(want, start, unopened)?;
            if !self.try_busy(e) {
                continue; // claimed by another thread in between
            }
            // Opened in between (an opener holds BUSY until its count is up,
            // so once we hold BUSY the count is final).
            if self.exists.get(e) != (want == Want::Exists) || (unopened && self.open_count(e) > 0) {
                self.state[e].fetch_and(!BUSY, AcqRel);
                continue;
            }
            return Some(e);
        }
    }

    /// Marks `e` busy (close, delete of a known entry); false if it already is.
    pub fn try_busy(&self, e: usize) -> bool {
        self.state[e].fetch_or(BUSY, AcqRel) & BUSY == 0
    }

    /// `fileset_unbusy`: optionally set existence, adjust the open count, clear busy.
    pub fn unbusy(&self, e: usize, exists: Option<bool>, open_delta: i64) {
        if let Some(x) = exists {
            self.exists.set(e, x);
        }
        // One add: the open count in the high half, minus the BUSY bit.
        let busy = self.state[e].load(Relaxed) & BUSY;
        self.state[e].fetch_add(((open_delta as i32 as u32 as u64) << 32).wrapping_sub(busy), AcqRel);
    }

    /// Clears BUSY of `e`, held by the caller, leaving the open count alone.
    /// A plain store is enough: while BUSY is held nobody else changes the
    /// word (a competing `try_busy` ORs in a bit that is already set), and
    /// open counts are not being kept (`Fileset::unbusy_file`).
    #[inline]
    pub fn release(&self, e: usize) {
        let s = &self.state[e];
        s.store(s.load(Relaxed) & !BUSY, Release);
    }

    /// Adds `delta` to the open count without touching BUSY (closefile).
    pub fn add_open(&self, e: usize, delta: i32) {
        self.state[e].fetch_add((delta as u32 as u64) << 32, AcqRel);
    }

    /// Open count of entry `e` (negative counts read as 0).
    pub fn open_count(&self, e: usize) -> u32 {
        ((self.state[e].load(Acquire) >> 32) as u32 as i32).max(0) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_wraps() {
        let s = EntryState::new(130);
        for i in [3usize, 70, 129] {
            s.exists.set(i, true);
        }
        assert_eq!(s.find(Want::Exists, 4), Some(70));
        assert_eq!(s.find(Want::Exists, 71), Some(129));
        assert_eq!(s.find(Want::Exists, 130), Some(3));
        assert_eq!(s.find(Want::NotExists, 3), Some(4));
    }

    #[test]
    fn rotor_and_busy() {
        let s = EntryState::new(4);
        for i in 0..4 {
            s.exists.set(i, true);
        }
        assert_eq!(s.pick(Want::Exists, 0, None), Some(0));
        assert_eq!(s.pick(Want::Exists, 0, None), Some(1));
        s.unbusy(0, None, 1);
        s.set_rotor(Want::Exists, 0, 1);
        // entry 1 is busy: skip to 2, but the rotor moves past 1 only
        assert_eq!(s.pick(Want::Exists, 0, None), Some(2));
        assert_eq!(s.rotor(Want::Exists, 0), 2);
        assert_eq!(s.open_count(0), 1);
    }

    #[test]
    fn unopened_pick_skips_open_entries() {
        let s = EntryState::new(4);
        for i in 0..4 {
            s.exists.set(i, true);
        }
        // entries 0 and 1 are open (picked, opened, unbusied with +1)
        for _ in 0..2 {
            let e = s.pick(Want::Exists, 0, None).unwrap();
            s.unbusy(e, None, 1);
        }
        s.set_rotor(Want::Exists, 0, 0);
        assert_eq!(s.pick_unopened(0, None), Some(2));
        assert_eq!(s.rotor(Want::Exists, 0), 1, "the rotor moves as a plain pick moves it");
        s.unbusy(2, Some(false), 0);
        assert_eq!(s.pick_unopened(0, Some(0)), Some(3));
        s.unbusy(3, Some(false), 0);
        assert_eq!(s.pick_unopened(0, None), None, "every existing entry is open");
        assert_eq!(s.pick(Want::Exists, 0, None), Some(0), "a plain pick still finds them");
    }

    #[test]
    fn private_rotors_are_independent() {
        let s = EntryState::new(3);
        s.private_rotors(5);
        for i in 0..3 {
            s.exists.set(i, true);
        }
        let a = s.pick(Want::Exists, 5, None).unwrap();
        s.unbusy(a, None, 0);
        let b = s.pick(Want::Exists, 0, None).unwrap();
        assert_eq!((a, b), (0, 0));
    }
}
