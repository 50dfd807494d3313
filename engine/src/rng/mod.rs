//! Random number generators that reproduce Filebench's sequences bit for bit.
//!
//! Why: the fileset tree, the file sizes and the preallocated subset are fixed by
//! the generators Filebench happens to use (docs/filebench-language.md#randomness): glibc `drand48()`
//! (never seeded) feeding Knuth's gamma algorithms, glibc `rand()` (never seeded)
//! for the prealloc keep/skip decision, and the `mtwist` Mersenne twister
//! (default seed 4357) for the prealloc visiting order, random offsets and
//! `appendfilerand` sizes. Reproducing them is what makes
//! `conformance/tree_*.tsv` and `pick-order.strace.txt` match.

pub mod drand48;
pub mod gamma;
pub mod glibc_rand;
pub mod mtwist;

pub use drand48::Rand48;
pub use gamma::gamma_knuth;
pub use glibc_rand::GlibcRand;
pub use mtwist::MtState;
