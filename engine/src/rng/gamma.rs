//! Knuth's gamma algorithms as in Filebench's `gamma_dist.c` and `cvar-gamma.c`
//! (docs/filebench-language.md#randomness): algorithm A for shape > 1, algorithm G for shape <= 1, fed by
//! a uniform source (drand48 or erand48 in practice).

use std::f64::consts::{E, PI};

/// Gamma(shape `a`) sample times `b` (the scale, usually mean / a).
pub fn gamma_knuth(a: f64, b: f64, src: &mut dyn FnMut() -> f64) -> f64 {
    if a <= 1.0 {
        b * alg_g(a, src)
    } else {
        b * alg_a(a, src)
    }
}

fn alg_g(a: f64, src: &mut dyn FnMut() -> f64) -> f64 {
    let p = E / (a + E);
    loop {
        let u = src();
        let mut v = src();
        while v == 0.0 {
            v = src();
        }
        let (x, q) = if u < p {
            let x = v.powf(1.0 / a);
            (x, (-x).exp())
        } else {
            let x = 1.0 - v.ln();
            (x, x.powf(a - 1.0))
        };
        let u = src();
        if u < q {
            return x;
        }
    }
}

fn alg_a(a: f64, src: &mut dyn FnMut() -> f64) -> f64 {
    let s = (2.0 * a - 1.0).sqrt();
    loop {
        let u = src();
        let y = (PI * u).tan();
        let x = s * y + a - 1.0;
        if x <= 0.0 {
            continue;
        }
        let v = src();
        if v > (1.0 + y * y) * ((a - 1.0) * (x / (a - 1.0)).ln() - s * y).exp() {
            continue;
        }
        return x;
    }
}
