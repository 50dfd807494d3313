//! Entry state and picking (`fileset_pick`, `fileset_unbusy`; WML-SPEC §8.2).
//!
//! Why bitsets: Filebench keeps AVL trees of existing / non-existing entries
//! ordered by index and walks them from a rotor. "Next entry with index >= i
//! in the set, else wrap" is a word scan over a bitset, which keeps the pick
//! lock's critical section short (the pick lock is per fileset, as in
//! Filebench, because the shared rotors need strict ordering).

/// A fixed-size bitset with wrapping "find next" scans.
#[derive(Debug, Clone, Default)]
pub struct Bits {
    words: Vec<u64>,
    n: usize,
}

impl Bits {
    pub fn new(n: usize) -> Self {
        Bits { words: vec![0; n.div_ceil(64)], n }
    }

    pub fn get(&self, i: usize) -> bool {
        self.words[i / 64] >> (i % 64) & 1 == 1
    }

    pub fn set(&mut self, i: usize, v: bool) {
        if v {
            self.words[i / 64] |= 1 << (i % 64);
        } else {
            self.words[i / 64] &= !(1 << (i % 64));
        }
    }

    pub fn len(&self) -> usize {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
}

/// First index >= `from` (then wrapping to 0) where `f(word_index)` has a bit.
fn scan(n: usize, from: usize, word: impl Fn(usize) -> u64) -> Option<usize> {
    if n == 0 {
        return None;
    }
    let nw = n.div_ceil(64);
    let tail_mask = |w: usize| if w == nw - 1 && n % 64 != 0 { (1u64 << (n % 64)) - 1 } else { u64::MAX };
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    Exists,
    NotExists,
}

/// The per-kind state: existence, busy flags, open counts and rotors.
#[derive(Debug, Clone, Default)]
pub struct EntryState {
    pub exists: Bits,
    pub busy: Bits,
    pub open_cnt: Vec<u32>,
    /// Existing-entry rotors by tid (0 = shared; opennext threads own one).
    pub exrotor: Vec<usize>,
    pub nerotor: usize,
    pub nbusy: usize,
}

impl EntryState {
    pub fn new(n: usize) -> Self {
        EntryState {
            exists: Bits::new(n),
            busy: Bits::new(n),
            open_cnt: vec![0; n],
            exrotor: vec![0],
            nerotor: 0,
            nbusy: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.exists.len()
    }

    /// `fileset_find_entry`: index `i` if in the set, else next higher, else lowest.
    fn find(&self, want: Want, i: usize) -> Option<usize> {
        let inv = if want == Want::Exists { 0 } else { u64::MAX };
        scan(self.len(), i, |w| self.exists.words[w] ^ inv)
    }

    /// First non-busy entry of the set at or after `i` (wrapping).
    fn first_idle(&self, want: Want, i: usize) -> Option<usize> {
        let inv = if want == Want::Exists { 0 } else { u64::MAX };
        scan(self.len(), i, |w| (self.exists.words[w] ^ inv) & !self.busy.words[w])
    }

    /// Picks an entry (rotor, or `index` for `indexed`) and marks it busy.
    /// `tid` selects the existing-entry rotor. `None` = no entry (NORSC).
    pub fn pick(&mut self, want: Want, tid: usize, index: Option<usize>) -> Option<usize> {
        let start = match index {
            Some(i) => self.find(want, i)?,
            None => {
                let rotor = match want {
                    Want::NotExists => self.nerotor,
                    Want::Exists => self.rotor(tid),
                };
                let e = self.find(want, rotor)?;
                match want {
                    Want::NotExists => self.nerotor = e + 1,
                    Want::Exists => self.exrotor[tid] = e + 1,
                }
                e
            }
        };
        let e = self.first_idle(want, start)?;
        self.busy.set(e, true);
        self.nbusy += 1;
        Some(e)
    }

    fn rotor(&mut self, tid: usize) -> usize {
        if tid >= self.exrotor.len() {
            self.exrotor.resize(tid + 1, 0);
        }
        self.exrotor[tid]
    }

    /// Marks `e` busy (for close/delete of a known entry); false if it already is.
    pub fn try_busy(&mut self, e: usize) -> bool {
        if self.busy.get(e) {
            return false;
        }
        self.busy.set(e, true);
        self.nbusy += 1;
        true
    }

    /// `fileset_unbusy`: optionally set existence, adjust the open count, clear busy.
    pub fn unbusy(&mut self, e: usize, exists: Option<bool>, open_delta: i64) {
        if let Some(x) = exists {
            self.exists.set(e, x);
        }
        self.open_cnt[e] = (self.open_cnt[e] as i64 + open_delta).max(0) as u32;
        if self.busy.get(e) {
            self.busy.set(e, false);
            self.nbusy -= 1;
        }
    }

    /// True if every entry is busy (pickers wait, §8.2 step 1).
    pub fn all_busy(&self) -> bool {
        self.nbusy >= self.len() && !self.exists.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_wraps() {
        let mut s = EntryState::new(130);
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
        let mut s = EntryState::new(4);
        for i in 0..4 {
            s.exists.set(i, true);
        }
        assert_eq!(s.pick(Want::Exists, 0, None), Some(0));
        assert_eq!(s.pick(Want::Exists, 0, None), Some(1));
        s.unbusy(0, None, 1);
        s.exrotor[0] = 1;
        // entry 1 is busy: skip to 2, but the rotor moves past 1 only
        assert_eq!(s.pick(Want::Exists, 0, None), Some(2));
        assert_eq!(s.exrotor[0], 2);
    }
}
