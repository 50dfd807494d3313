//! The `mtwist` Mersenne twister (MT19937) as Filebench links it: default seed
//! 4357 with the old Knuth (69069) seeding, and `mt_llrand()` = two 32-bit
//! outputs, first in the high half (docs/filebench-language.md#randomness). Used for the prealloc
//! visiting order, random offsets and `appendfilerand` sizes.

const N: usize = 624;
const M: usize = 397;
const MATRIX_A: u32 = 0x9908_b0df;
const UPPER: u32 = 0x8000_0000;
const LOWER: u32 = 0x7fff_ffff;

/// One generator state.
#[derive(Clone)]
pub struct MtState {
    mt: Box<[u32; N]>,
    idx: usize,
}

impl std::fmt::Debug for MtState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MtState(idx={})", self.idx)
    }
}

impl Default for MtState {
    /// The never-seeded `mt_default_state`, which seeds itself with 4357.
    fn default() -> Self {
        Self::seed32(4357)
    }
}

impl MtState {
    /// `mts_seed32`: old Knuth seeding (mtwist keeps the vector reversed; this
    /// is the same generator in forward order).
    pub fn seed32(seed: u32) -> Self {
        let seed = if seed == 0 { 4357 } else { seed };
        let mut mt = Box::new([0u32; N]);
        mt[0] = seed;
        for i in 1..N {
            mt[i] = 69069u32.wrapping_mul(mt[i - 1]);
        }
        MtState { mt, idx: N }
    }

    fn refresh(&mut self) {
        let mag = |y: u32| if y & 1 == 0 { 0 } else { MATRIX_A };
        for k in 0..N {
            let y = (self.mt[k] & UPPER) | (self.mt[(k + 1) % N] & LOWER);
            self.mt[k] = self.mt[(k + M) % N] ^ (y >> 1) ^ mag(y);
        }
        self.idx = 0;
    }

    /// `mts_lrand`: one tempered 32-bit output.
    pub fn next_u32(&mut self) -> u32 {
        if self.idx >= N {
            self.refresh();
        }
        let mut y = self.mt[self.idx];
        self.idx += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `mts_llrand`: first output in the high 32 bits.
    pub fn next_u64(&mut self) -> u64 {
        let hi = self.next_u32() as u64;
        let lo = self.next_u32() as u64;
        (hi << 32) | lo
    }

    /// `fb_random64(&r, max, round, NULL)`: uniform over [0, max - round],
    /// rounded down to a multiple of `round` (docs/filebench-language.md#random-offsets).
    pub fn fb_random64(&mut self, max: u64, round: u64) -> u64 {
        let span = max.wrapping_sub(round);
        let norm = self.next_u64() as f64 / u64::MAX as f64;
        let mut r = (norm * span as f64) as u64;
        if let Some(q) = r.checked_div(round) {
            r = q * round;
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fb_random64_stays_in_range() {
        // The exact sequence is checked end to end by the pick-order test.
        let mut m = MtState::default();
        for _ in 0..1000 {
            let r = m.fb_random64(1 << 20, 4096);
            assert!(r <= (1 << 20) - 4096 && r % 4096 == 0);
        }
    }
}
