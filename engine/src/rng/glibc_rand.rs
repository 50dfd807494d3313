//! glibc `rand()` with its default seed 1 (TYPE_3 additive feedback generator).
//! Filebench never seeds it and uses it for the prealloc keep/skip decision
//! (docs/filebench-language.md#fileset-creation, #randomness).

/// The additive feedback generator behind glibc `random()`/`rand()`.
#[derive(Debug, Clone)]
pub struct GlibcRand {
    r: [u32; 34],
    i: usize,
}

impl Default for GlibcRand {
    fn default() -> Self {
        Self::new(1)
    }
}

impl GlibcRand {
    /// Seeds exactly like `srand(seed)`, including the 310 discarded outputs.
    pub fn new(seed: u32) -> Self {
        let mut r = [0u32; 34];
        let seed = if seed == 0 { 1 } else { seed };
        r[0] = seed;
        for i in 1..31 {
            let prev = r[i - 1] as i32 as i64;
            let hi = prev / 127_773;
            let lo = prev % 127_773;
            let mut word = 16_807 * lo - 2_836 * hi;
            if word < 0 {
                word += 2_147_483_647;
            }
            r[i] = word as u32;
        }
        for i in 31..34 {
            r[i] = r[i - 31];
        }
        let mut g = GlibcRand { r, i: 0 };
        for _ in 0..310 {
            g.step();
        }
        g
    }

    fn step(&mut self) -> u32 {
        // r[k] = r[k-31] + r[k-3], kept in a 34-slot ring.
        let k = self.i;
        let v = self.r[(k + 3) % 34].wrapping_add(self.r[(k + 31) % 34]);
        self.r[k] = v;
        self.i = (k + 1) % 34;
        v
    }

    /// Next `rand()` value in [0, RAND_MAX].
    pub fn next_rand(&mut self) -> i32 {
        (self.step() >> 1) as i32
    }
}

/// glibc's RAND_MAX.
pub const RAND_MAX: i64 = 2_147_483_647;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_sequence_matches_glibc() {
        let mut g = GlibcRand::default();
        let got: Vec<i32> = (0..3).map(|_| g.next_rand()).collect();
        assert_eq!(got, vec![1_804_289_383, 846_930_886, 1_681_692_777]);
    }
}
