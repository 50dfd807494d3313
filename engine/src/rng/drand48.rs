//! glibc `drand48`/`erand48`: a 48-bit linear congruential generator
//! (docs/filebench-language.md#randomness). An unseeded `drand48()` starts from X = 0; `erand48(xi)`
//! uses the caller's state, built from a randvar `seed` (docs/filebench-language.md#random-variables).

const A: u64 = 0x5_DEEC_E66D;
const C: u64 = 0xB;
const MASK: u64 = (1 << 48) - 1;

/// One 48-bit LCG state, as glibc keeps it in `unsigned short xi[3]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rand48 {
    x: u64,
}

impl Default for Rand48 {
    /// The never-seeded global `drand48()` state.
    fn default() -> Self {
        Rand48 { x: 0 }
    }
}

impl Rand48 {
    /// State built from a randvar seed the way `rand_seed_set()` does: the three
    /// low 16-bit words of the 64-bit seed.
    pub fn from_seed(seed: u64) -> Self {
        Rand48 { x: seed & MASK }
    }

    /// Next value in [0, 1): iterate, then return X / 2^48 (exact in a double).
    pub fn next_f64(&mut self) -> f64 {
        self.x = (A.wrapping_mul(self.x).wrapping_add(C)) & MASK;
        self.x as f64 / (1u64 << 48) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unseeded_first_value_is_glibc_s() {
        let mut r = Rand48::default();
        // glibc's first unseeded drand48() is 11 / 2^48.
        assert_eq!(r.next_f64(), 11.0 / 281474976710656.0);
        let x2 = (0x5_DEEC_E66Du64 * 11 + 11) & ((1 << 48) - 1);
        assert_eq!(r.next_f64(), x2 as f64 / 281474976710656.0);
    }
}
