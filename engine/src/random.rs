//! Random variables: `randvar(...)` and `cvar(...)`
//! (docs/filebench-language.md#random-variables, #custom-variables).
//!
//! Why here and not in `rng`: these are the WML-level distributions, built on
//! the bit-exact generators of `rng`; `cvar-gamma` in particular shares the
//! workload's global drand48 stream with fileset population (docs/filebench-language.md#randomness).

use std::sync::{Arc, Mutex};

use crate::rng::{gamma_knuth, MtState, Rand48};

/// Distribution of a randvar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RandKind {
    Uniform,
    Gamma,
    Tabular,
}

/// Uniform source of a randvar.
#[derive(Debug)]
pub enum RandSrc {
    /// `randsrc=rand48`: `erand48` on the variable's own state.
    Rand48(Mutex<Rand48>),
    /// `randsrc=urandom`: the global Mersenne twister.
    Urandom(Arc<Mutex<MtState>>),
}

impl RandSrc {
    fn next(&self) -> f64 {
        match self {
            RandSrc::Rand48(s) => s.lock().unwrap().next_f64(),
            RandSrc::Urandom(m) => {
                let r = m.lock().unwrap().fb_random64(u64::MAX, 0);
                r as f64 / u64::MAX as f64
            }
        }
    }
}

/// A `randvar` after `randdist_init`.
#[derive(Debug)]
pub struct RandVar {
    pub kind: RandKind,
    pub src: RandSrc,
    pub mean: f64,
    pub gamma: f64,
    pub min: f64,
    pub round: f64,
    /// The table's rows as (cumulative percent at the row's end, base,
    /// range), base and range normalised to min 0 / mean 1.
    pub table: Vec<(u64, f64, f64)>,
    /// Base of the slots past the rows when the percents total under 100.
    pub table_pad: f64,
}

/// Parameters of a randvar as written (before normalisation).
#[derive(Debug, Clone, Default)]
pub struct RandSpec {
    pub kind: Option<RandKind>,
    pub urandom: bool,
    pub seed: u64,
    pub gamma_x1000: Option<u64>,
    pub mean: Option<f64>,
    pub min: u64,
    pub round: u64,
    /// Rows (percent, lo, hi).
    pub rows: Vec<(u64, u64, u64)>,
}

impl RandVar {
    /// `randdist_init`. Returns the variable and an optional warning
    /// (`Prob table only totals N%`).
    pub fn new(spec: &RandSpec, mt: Arc<Mutex<MtState>>) -> (RandVar, Option<String>) {
        let gamma = spec.gamma_x1000.unwrap_or(1500) as f64 / 1000.0;
        let kind = if spec.rows.is_empty() { spec.kind.unwrap_or(RandKind::Gamma) } else { RandKind::Tabular };
        let src =
            if spec.urandom { RandSrc::Urandom(mt) } else { RandSrc::Rand48(Mutex::new(Rand48::from_seed(spec.seed))) };
        let mut rv = RandVar {
            kind,
            src,
            mean: spec.mean.unwrap_or(if kind == RandKind::Gamma { gamma } else { 0.0 }),
            gamma,
            min: spec.min as f64,
            round: spec.round as f64,
            table: Vec::new(),
            table_pad: 0.0,
        };
        let warn = if kind == RandKind::Tabular { rv.init_table(&spec.rows) } else { None };
        (rv, warn)
    }

    /// Filebench expands the rows into a table of 100 slots (a row of
    /// `percent` p fills p slots; slots past 100 are dropped, missing ones
    /// are zero) and draws a slot uniformly. Cumulative percents and a
    /// binary search give the same draws without a table proportional to
    /// the percents, which a user can set to anything (2^31 allocated 24 GB).
    fn init_table(&mut self, rows: &[(u64, u64, u64)]) -> Option<String> {
        let mut tmin = f64::MAX;
        let mut tsum = 0.0;
        let mut cum = 0u64;
        let mut raw = Vec::with_capacity(rows.len());
        for &(pct, lo, hi) in rows {
            let (lo, hi) = (lo as f64, hi as f64);
            tmin = tmin.min(lo);
            tsum += (lo + hi) / 2.0 * pct as f64;
            cum = cum.saturating_add(pct);
            raw.push((cum, lo, hi - lo));
        }
        let warn = (cum != 100).then(|| format!("Prob table only totals {cum}%"));
        if self.mean == 0.0 {
            self.mean = tsum / 100.0;
        }
        let tmean = tsum / 100.0 - tmin;
        let norm = |x: f64| if tmean == 0.0 { 0.0 } else { x / tmean };
        self.table = raw.into_iter().map(|(c, b, r)| (c, norm(b - tmin), norm(r))).collect();
        self.table_pad = norm(0.0 - tmin);
        warn
    }

    /// (base, range) of slot `idx` (0..100) of Filebench's table.
    fn table_slot(&self, idx: u64) -> (f64, f64) {
        let k = self.table.partition_point(|&(cum, _, _)| cum <= idx);
        match self.table.get(k) {
            Some(&(_, b, r)) => (b, r),
            None => (self.table_pad, 0.0),
        }
    }

    /// Draws one value (docs/filebench-language.md#random-variables).
    pub fn sample(&self) -> f64 {
        self.sample_with_mean(self.mean)
    }

    /// Draws with another mean: `dirdepthrv` gets the fileset's mean depth (docs/filebench-language.md#fileset-trees).
    pub fn sample_with_mean(&self, mean: f64) -> f64 {
        let v = match self.kind {
            RandKind::Uniform => self.src.next() * (2.0 * (mean - self.min)) + self.min,
            RandKind::Gamma => {
                let b = (mean - self.min) / self.gamma;
                gamma_knuth(self.gamma, b, &mut || self.src.next()) + self.min
            }
            RandKind::Tabular => {
                let p = self.src.next() * 100.0;
                let idx = (p as usize).min(99);
                let (base, range) = self.table_slot(idx as u64);
                let x = base + range * (p - idx as f64);
                x * (mean - self.min) + self.min
            }
        };
        round_to(v, self.round)
    }

    /// `uniform` / `gamma` / `tabular`, for interpolation.
    pub fn type_name(&self) -> &'static str {
        match self.kind {
            RandKind::Uniform => "uniform",
            RandKind::Gamma => "gamma",
            RandKind::Tabular => "tabular",
        }
    }
}

fn round_to(v: f64, r: f64) -> f64 {
    if r == 0.0 {
        v
    } else {
        (v / r).round() * r
    }
}

/// The distributions shipped as `cvars/*.c`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CvarDist {
    Gamma { mean: f64, gamma: f64 },
    Uniform { lower: f64, upper: f64 },
    Normal { mean: f64, sigma: f64 },
    Exponential { mean: f64 },
    Lognormal { shape: f64, scale: f64 },
    Weibull { shape: f64, scale: f64 },
    Erlang { shape: u32, rate: f64 },
    Triangular { lower: f64, upper: f64, mode: f64 },
}

/// Where a cvar's uniforms come from.
#[derive(Debug)]
enum CvarSrc {
    /// cvar-gamma: the workload's global, unseeded drand48.
    Drand48(Arc<Mutex<Rand48>>),
    /// the others: their own randomly seeded Mersenne twister.
    Mt(Mutex<MtState>),
}

/// A `cvar(...)` variable.
#[derive(Debug)]
pub struct Cvar {
    pub dist: CvarDist,
    src: CvarSrc,
    pub min: f64,
    pub max: f64,
    pub round: f64,
}

impl Cvar {
    /// Builds a cvar of `type` from `parameters` (`key:value;...`).
    pub fn new(
        ty: &str,
        params: &str,
        bounds: (Option<f64>, Option<f64>, f64),
        drand: Arc<Mutex<Rand48>>,
    ) -> Result<Cvar, String> {
        let dist = parse_dist(ty, params)?;
        let src = match dist {
            CvarDist::Gamma { .. } => CvarSrc::Drand48(drand),
            _ => CvarSrc::Mt(Mutex::new(MtState::seed32(time_seed()))),
        };
        let (min, max, round) = bounds;
        Ok(Cvar { dist, src, min: min.unwrap_or(f64::MIN_POSITIVE), max: max.unwrap_or(f64::MAX), round })
    }

    /// Draws one value: sample, round, clamp (docs/filebench-language.md#custom-variables).
    pub fn sample(&self) -> f64 {
        let v = match &self.src {
            CvarSrc::Drand48(d) => {
                let mut g = d.lock().unwrap();
                self.draw(&mut || g.next_f64())
            }
            CvarSrc::Mt(m) => {
                let mut g = m.lock().unwrap();
                self.draw(&mut || g.next_u32() as f64 / 4294967296.0)
            }
        };
        round_to(v, self.round).clamp(self.min, self.max)
    }

    fn draw(&self, u: &mut dyn FnMut() -> f64) -> f64 {
        let mut nz = || loop {
            let x = u();
            if x > 0.0 {
                return x;
            }
        };
        match self.dist {
            CvarDist::Gamma { mean, gamma } => gamma_knuth(gamma, mean / gamma, u),
            CvarDist::Uniform { lower, upper } => lower + (upper - lower) * u(),
            CvarDist::Normal { mean, sigma } => mean + sigma * std_normal(&mut nz),
            CvarDist::Exponential { mean } => -mean * nz().ln(),
            CvarDist::Lognormal { shape, scale } => (scale + shape * std_normal(&mut nz)).exp(),
            CvarDist::Weibull { shape, scale } => scale * (-nz().ln()).powf(1.0 / shape),
            CvarDist::Erlang { shape, rate } => (0..shape.max(1)).map(|_| -nz().ln()).sum::<f64>() / rate,
            CvarDist::Triangular { lower, upper, mode } => {
                let x = u();
                let f = (mode - lower) / (upper - lower);
                if x < f {
                    lower + (x * (upper - lower) * (mode - lower)).sqrt()
                } else {
                    upper - ((1.0 - x) * (upper - lower) * (upper - mode)).sqrt()
                }
            }
        }
    }
}

fn std_normal(nz: &mut dyn FnMut() -> f64) -> f64 {
    let (a, b) = (nz(), nz());
    (-2.0 * a.ln()).sqrt() * (2.0 * std::f64::consts::PI * b).cos()
}

fn time_seed() -> u32 {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    (t.as_secs() as u32).wrapping_mul(1_000_000).wrapping_add(t.subsec_micros())
}

/// `key:value;key:value`, values parsed like `atof`.
fn parse_params(params: &str) -> Vec<(String, f64)> {
    params
        .split(';')
        .filter(|s| !s.trim().is_empty())
        .map(|kv| {
            let mut it = kv.splitn(2, ':');
            let k = it.next().unwrap_or("").trim().to_string();
            let v = it.next().unwrap_or("").trim();
            (k, atof(v))
        })
        .collect()
}

fn atof(s: &str) -> f64 {
    let end = s
        .char_indices()
        .take_while(|&(i, c)| {
            c.is_ascii_digit()
                || c == '.'
                || c == 'e'
                || c == 'E'
                || ((c == '-' || c == '+') && (i == 0 || s[..i].ends_with(['e', 'E'])))
        })
        .map(|(i, c)| i + c.len_utf8())
        .last()
        .unwrap_or(0);
    s[..end].parse().unwrap_or(0.0)
}

fn parse_dist(ty: &str, params: &str) -> Result<CvarDist, String> {
    let kv = parse_params(params);
    let known: &[&str] = match ty {
        "cvar-gamma" => &["mean", "gamma"],
        "cvar-uniform" | "cvar-triangular" => &["lower", "upper", "mode"],
        "cvar-normal" => &["mean", "sigma"],
        "cvar-exponential" => &["mean"],
        "cvar-lognormal" | "cvar-weibull" => &["shape", "scale"],
        "cvar-erlang" => &["shape", "rate"],
        _ => return Err(format!("unknown cvar type `{ty}` (known: cvar-gamma, cvar-uniform, cvar-normal, cvar-exponential, cvar-lognormal, cvar-weibull, cvar-erlang, cvar-triangular)")),
    };
    if let Some((k, _)) = kv.iter().find(|(k, _)| !known.contains(&k.as_str())) {
        return Err(format!("Unsupported parameter {k} for {ty}"));
    }
    let get = |k: &str, d: f64| kv.iter().rev().find(|(key, _)| key == k).map(|p| p.1).unwrap_or(d);
    Ok(match ty {
        "cvar-gamma" => {
            let gamma = get("gamma", 1.5);
            if gamma == 0.0 {
                return Err("cvar-gamma: gamma must be greater than 0".into());
            }
            CvarDist::Gamma { mean: get("mean", 4096.0), gamma }
        }
        "cvar-uniform" => CvarDist::Uniform { lower: get("lower", 0.0), upper: get("upper", 1.0) },
        "cvar-normal" => CvarDist::Normal { mean: get("mean", 0.0), sigma: get("sigma", 1.0) },
        "cvar-exponential" => CvarDist::Exponential { mean: get("mean", 1.0) },
        "cvar-lognormal" => CvarDist::Lognormal { shape: get("shape", 1.0), scale: get("scale", 1.0) },
        "cvar-weibull" => CvarDist::Weibull { shape: get("shape", 1.0), scale: get("scale", 1.0) },
        "cvar-erlang" => CvarDist::Erlang { shape: get("shape", 1.0) as u32, rate: get("rate", 1.0) },
        _ => CvarDist::Triangular { lower: get("lower", 0.0), upper: get("upper", 1.0), mode: get("mode", 0.5) },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tabular_returns_table_values_when_min_is_table_min() {
        let spec = RandSpec { min: 8192, rows: vec![(100, 8192, 8192)], ..Default::default() };
        let (rv, warn) = RandVar::new(&spec, Arc::new(Mutex::new(MtState::default())));
        assert!(warn.is_none());
        assert_eq!(rv.sample(), 8192.0);
    }

    /// Filebench's 100-slot expansion, as the engine used to build it.
    fn slots_of(rows: &[(u64, u64, u64)]) -> Vec<(f64, f64)> {
        let mut slots = Vec::new();
        for &(pct, lo, hi) in rows {
            for _ in 0..pct.min(1000) {
                slots.push((lo as f64, (hi - lo) as f64));
            }
        }
        slots.resize(100, (0.0, 0.0));
        slots
    }

    #[test]
    fn cumulative_table_draws_the_slots_of_filebench_table() {
        let tables: [&[(u64, u64, u64)]; 4] = [
            &[(85, 8192, 8192), (15, 8192, 65536)],
            &[(33, 1024, 1024), (21, 1024, 3072), (13, 3072, 5120), (10, 5120, 11264), (8, 11264, 21504)],
            &[(60, 10, 20), (70, 30, 40)],
            &[(2147483648, 8192, 8192), (15, 8192, 65536)],
        ];
        for rows in tables {
            let spec = RandSpec { rows: rows.to_vec(), ..Default::default() };
            let (rv, _) = RandVar::new(&spec, Arc::new(Mutex::new(MtState::default())));
            let tmean = rv.mean - rows.iter().map(|r| r.1).min().unwrap() as f64;
            let tmin = rows.iter().map(|r| r.1).min().unwrap() as f64;
            for (idx, (base, range)) in slots_of(rows).into_iter().enumerate() {
                let (b, r) = rv.table_slot(idx as u64);
                assert!(
                    (b - (base - tmin) / tmean).abs() < 1e-12 && (r - range / tmean).abs() < 1e-12,
                    "{rows:?} slot {idx}"
                );
            }
        }
    }

    #[test]
    fn huge_table_weights_allocate_nothing_proportional() {
        let spec = RandSpec { rows: vec![(u64::MAX, 1, 2), (u64::MAX, 3, 4)], ..Default::default() };
        let (rv, warn) = RandVar::new(&spec, Arc::new(Mutex::new(MtState::default())));
        assert_eq!(rv.table.len(), 2);
        assert!(warn.unwrap().contains("totals 18446744073709551615%"));
        assert!(rv.sample().is_finite());
    }

    #[test]
    fn gamma_default_mean_is_shape() {
        let spec = RandSpec { gamma_x1000: Some(100), ..Default::default() };
        let (rv, _) = RandVar::new(&spec, Arc::new(Mutex::new(MtState::default())));
        assert!((rv.mean - 0.1).abs() < 1e-12);
    }

    #[test]
    fn cvar_params() {
        let d = Arc::new(Mutex::new(Rand48::default()));
        let c = Cvar::new("cvar-gamma", "mean:16384;gamma:1.5", (None, None, 0.0), d).unwrap();
        assert_eq!(c.dist, CvarDist::Gamma { mean: 16384.0, gamma: 1.5 });
        assert!(c.sample() > 0.0);
    }
}
