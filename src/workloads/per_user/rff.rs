//! Synthetic per-user GP objectives by random Fourier features (spec 004 §4.2(a)), workload
//! kind `per-user-gp`.
//!
//! On the domain [0, 1]^d, with M features ω_m ~ N(0, diag(ℓ⁻²)), b_m ~ U[0, 2π), shared
//! weights c ~ N(0, I_M) and per-user weights ξ_i ~ N(0, I_M), user i's loss is
//!
//! ```text
//! L(θ, x_i) = s·√(2/M)·Σ_m w_{i,m} cos(ω_m·θ + b_m),   w_i = √ρ·c + √(1 − ρ)·ξ_i,
//! ```
//!
//! so each user is marginally an (RFF-approximate) GP(0, s²·k) draw with k the RBF kernel of
//! lengthscales ℓ (Assumption 3.9), two users have cross-covariance ρ·s²·k, and the mean loss
//! f_x has covariance (ρ + (1 − ρ)/n)·s²·k. Exact gradients:
//! ∇L(θ, x_i) = −s·√(2/M)·Σ_m w_{i,m} sin(ω_m·θ + b_m)·ω_m (and the same with w̄ for f_x).
//!
//! Lengthscales follow [GIBO]: ℓ_j ~ U(2ℓ̄·0.7, 2ℓ̄·1.3) with ℓ̄(d) = 0.1·δ(d)/δ(2),
//! δ(k) = √(k/6)·√((1 + 2√(1 − 3/(5k)))/3), unless a fixed `lengthscale` is given.
//!
//! Reproducibility: one ChaCha20 stream per objective, `stream(seed, [d, index, RFF_TAG])`,
//! drawn in this fixed order: the d lengthscale uniforms (drawn even when a fixed lengthscale
//! replaces them), ω (feature-major, coordinate within feature), b (M uniforms times 2π),
//! c (M normals), ξ (user-major); normals by [`crate::rng::normal`]. `tools/make_rff_golden.py`
//! re-implements the draws in Python and wrote `tests/fixtures/per_user_rff_golden.json`.

use super::{read_with_common, CommonParams, PerUserWorkload, Prepared, Source, UserObjective};
use crate::error::{Error, Range, Result};
use crate::params::{Count, OneOrMany};
use crate::rng::{normal, stream};
use crate::workloads::{Variant, Workload, WorkloadSpec};
use ndarray::{Array1, Array2, ArrayView2, Axis};
use rand::Rng;
use std::sync::Arc;

/// Stream tag of the objective's draws ("rff").
pub const RFF_TAG: u64 = 0x0072_6666;

/// The most weights n·M an objective may hold (400 MB).
pub const MAX_WEIGHTS: usize = 50_000_000;

/// δ(k) of [GIBO]'s lengthscale rule: the mean distance of two uniform points in [0, 1]^k
/// (a closed-form approximation).
fn gibo_delta(k: f64) -> f64 {
    (k / 6.0).sqrt() * ((1.0 + 2.0 * (1.0 - 3.0 / (5.0 * k)).sqrt()) / 3.0).sqrt()
}

/// [GIBO]'s mean lengthscale ℓ̄(d) = 0.1·δ(d)/δ(2) (0.1 in two dimensions).
pub fn gibo_lengthscale_mean(dim: usize) -> f64 {
    0.1 * gibo_delta(dim as f64) / gibo_delta(2.0)
}

/// What an objective is drawn from.
#[derive(Clone, Debug, PartialEq)]
pub struct RffConfig {
    dim: usize,
    features: usize,
    users: usize,
    rho: f64,
    signal_sd: f64,
    lengthscale: Option<f64>,
}

impl RffConfig {
    /// Dimension d ∈ [1, 100], M ≥ 1 features, n ≥ 1 users, ρ ∈ [0, 1], s > 0, and a fixed
    /// lengthscale (> 0) or `None` for [GIBO]'s random rule.
    pub fn new(
        dim: usize,
        features: usize,
        users: usize,
        rho: f64,
        signal_sd: f64,
        lengthscale: Option<f64>,
    ) -> Result<Self> {
        if !(1..=100).contains(&dim) {
            return Err(Error::invalid("dims", dim, "integers in [1, 100]"));
        }
        if features == 0 {
            return Err(Error::invalid("features", 0, "an integer >= 1"));
        }
        if users == 0 {
            return Err(Error::invalid("users", 0, "an integer >= 1"));
        }
        if users.saturating_mul(features) > MAX_WEIGHTS {
            return Err(Error::invalid(
                "users",
                users,
                format!("at most {MAX_WEIGHTS} weights users × features ({features} features)"),
            ));
        }
        if !(0.0..=1.0).contains(&rho) {
            return Err(Error::invalid("rho", rho, "a number in [0, 1]"));
        }
        Range::Positive.check("signal_sd", signal_sd)?;
        if let Some(l) = lengthscale {
            Range::Positive.check("lengthscale", l)?;
        }
        Ok(RffConfig {
            dim,
            features,
            users,
            rho,
            signal_sd,
            lengthscale,
        })
    }

    /// The defaults of §4.2(a): M = 2048, n = 1000, ρ = 0.9, s = 1, [GIBO] lengthscales.
    pub fn default_for(dim: usize) -> Result<Self> {
        RffConfig::new(dim, 2048, 1000, 0.9, 1.0, None)
    }

    pub fn dim(&self) -> usize {
        self.dim
    }
}

/// One drawn objective: the features and every user's weights.
#[derive(Clone, Debug)]
pub struct PerUserRff {
    domain: Vec<(f64, f64)>,
    lengthscales: Vec<f64>,
    /// M × d.
    omega: Array2<f64>,
    phase: Array1<f64>,
    /// n × M: row i is w_i.
    weights: Array2<f64>,
    /// w̄, the users' mean, summed in user order.
    mean_weights: Array1<f64>,
    /// s·√(2/M).
    amplitude: f64,
}

impl PerUserRff {
    /// The objective with index `index` (e.g. the repetition) under seed `seed`.
    pub fn sample(config: &RffConfig, seed: u64, index: u64) -> Self {
        let RffConfig {
            dim: d,
            features: m,
            users: n,
            ..
        } = *config;
        let mut rng = stream(seed, &[d as u64, index, RFF_TAG]);
        let mean = gibo_lengthscale_mean(d);
        let (lo, hi) = (2.0 * mean * 0.7, 2.0 * mean * 1.3);
        let lengthscales: Vec<f64> = (0..d)
            .map(|_| {
                let u: f64 = rng.random();
                config.lengthscale.unwrap_or(lo + (hi - lo) * u)
            })
            .collect();
        let mut omega = Array2::zeros((m, d));
        for mut row in omega.rows_mut() {
            for (w, l) in row.iter_mut().zip(&lengthscales) {
                *w = normal(&mut rng) / l;
            }
        }
        let phase = Array1::from_shape_simple_fn(m, || std::f64::consts::TAU * rng.random::<f64>());
        let shared = Array1::from_shape_simple_fn(m, || normal(&mut rng));
        let (a, b) = (config.rho.sqrt(), (1.0 - config.rho).sqrt());
        let mut weights = Array2::zeros((n, m));
        for mut row in weights.rows_mut() {
            for (w, c) in row.iter_mut().zip(&shared) {
                *w = a * c + b * normal(&mut rng);
            }
        }
        let mut mean_weights = Array1::zeros(m);
        for row in weights.rows() {
            mean_weights += &row;
        }
        mean_weights /= n as f64;
        PerUserRff {
            domain: vec![(0.0, 1.0); d],
            lengthscales,
            omega,
            phase,
            weights,
            mean_weights,
            amplitude: config.signal_sd * (2.0 / m as f64).sqrt(),
        }
    }

    /// ℓ (the DP-GIBO surrogate's lengthscales in §4.2(a)).
    pub fn lengthscales(&self) -> &[f64] {
        &self.lengthscales
    }

    /// ω, M × d.
    pub fn frequencies(&self) -> ArrayView2<'_, f64> {
        self.omega.view()
    }

    /// b.
    pub fn phases(&self) -> &Array1<f64> {
        &self.phase
    }

    /// w_i as rows, n × M.
    pub fn weights(&self) -> ArrayView2<'_, f64> {
        self.weights.view()
    }

    /// The arguments ω_m·θ + b_m.
    fn arguments(&self, theta: &[f64]) -> Result<Array1<f64>> {
        if theta.len() != self.lengthscales.len() {
            return Err(Error::invalid(
                "theta",
                format!("{theta:?}"),
                format!("{} coordinates", self.lengthscales.len()),
            ));
        }
        let t = Array1::from(theta.to_vec());
        Ok(self.omega.dot(&t) + &self.phase)
    }

    /// ∇f_x(θ) = −s·√(2/M)·Σ_m w̄_m sin(ω_m·θ + b_m)·ω_m.
    pub fn mean_gradient(&self, theta: &[f64]) -> Result<Array1<f64>> {
        let s = self.arguments(theta)?.mapv(libm::sin) * &self.mean_weights;
        Ok(self.omega.t().dot(&s) * -self.amplitude)
    }
}

impl UserObjective for PerUserRff {
    /// ℓ_obj is drawn from the seed alone (never from data): a public prior.
    fn prior_lengthscales(&self) -> Option<Vec<f64>> {
        Some(self.lengthscales.clone())
    }
    fn domain(&self) -> &[(f64, f64)] {
        &self.domain
    }
    fn n_users(&self) -> usize {
        self.weights.nrows()
    }
    fn losses(&self, theta: &[f64]) -> Result<Array1<f64>> {
        let c = self.arguments(theta)?.mapv(libm::cos);
        Ok(self.weights.dot(&c) * self.amplitude)
    }
    /// s·√(2/M)·Σ_m w̄_m cos(ω_m·θ + b_m) (O(M·d), not O(n·M)).
    fn mean_loss(&self, theta: &[f64]) -> Result<f64> {
        let c = self.arguments(theta)?.mapv(libm::cos);
        Ok(self.amplitude * self.mean_weights.dot(&c))
    }
    fn gradients(&self, theta: &[f64]) -> Option<Array2<f64>> {
        let s = self.arguments(theta).ok()?.mapv(libm::sin);
        // Row m of ω scaled by sin(·)_m, then (W·that)ᵀ: column i is Σ_m w_im s_m ω_m.
        let scaled = &self.omega * &s.insert_axis(Axis(1));
        Some(self.weights.dot(&scaled).reversed_axes() * -self.amplitude)
    }
}

/// The `per-user-gp` experiment-file workload: one objective per (dimension, repetition).
#[derive(Clone, Debug, PartialEq)]
pub struct PerUserGpSpec {
    configs: Vec<RffConfig>,
    common: CommonParams,
}

/// Builds the spec from a `[workload]` table (kind = "per-user-gp"). Parameters: `dims`
/// (required), `features` M (2048), `users` n (1000), `rho` (0.9), `signal_sd` s (1),
/// `lengthscale` (fixed; default [GIBO]'s random rule), and the common ones: `clip` R (3;
/// losses clipped to [−R, R]), `evaluation_sd` (0), `candidates`, `oracle_points` (4096),
/// `noise`.
pub fn spec(params: &toml::Table) -> Result<Box<dyn WorkloadSpec>> {
    let (p, common): (Params, _) = read_with_common("per-user-gp", params, &super::COMMON_KEYS)?;
    let features = p.features.map_or(Ok(2048), |f| f.at_least("features", 1))? as usize;
    let users = p.users.map_or(Ok(1000), |u| u.at_least("users", 1))? as usize;
    let signal_sd = p.signal_sd.unwrap_or(1.0);
    let configs = crate::workloads::dims(p.dims, &[])?
        .into_iter()
        .map(|d| {
            RffConfig::new(
                d,
                features,
                users,
                p.rho.unwrap_or(0.9),
                signal_sd,
                p.lengthscale,
            )
        })
        .collect::<Result<Vec<_>>>()?;
    let common = CommonParams::read(&common, true, 3.0 * signal_sd, 4096)?;
    Ok(Box::new(PerUserGpSpec { configs, common }))
}

/// A `[workload]` table of kind `per-user-gp` (besides the common per-user keys).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    dims: Option<OneOrMany<Count>>,
    features: Option<Count>,
    users: Option<Count>,
    rho: Option<f64>,
    signal_sd: Option<f64>,
    lengthscale: Option<f64>,
}

impl WorkloadSpec for PerUserGpSpec {
    fn kind(&self) -> &'static str {
        "per-user-gp"
    }
    fn params(&self) -> String {
        let c = &self.configs[0];
        format!(
            "features={}, users={}, rho={}, signal_sd={}, lengthscale={}, {}",
            c.features,
            c.users,
            c.rho,
            c.signal_sd,
            c.lengthscale.map_or("gibo".to_string(), |l| l.to_string()),
            self.common.describe()
        )
    }
    fn variants(&self) -> Vec<Variant> {
        crate::workloads::dim_variants(self.configs.iter().map(|c| c.dim))
    }
    fn default_noise(&self) -> Option<f64> {
        self.common.noise
    }
    /// The objective of repetition `rep` is drawn on first use (an instance asked only for
    /// its privacy costs nothing).
    fn instance(
        &self,
        variant: usize,
        seed: u64,
        rep: u64,
        noise: f64,
    ) -> Result<Box<dyn Workload>> {
        let config = self.configs.get(variant).ok_or_else(|| {
            Error::invalid("variant", variant, format!("below {}", self.configs.len()))
        })?;
        let d = config.dim;
        let space = self.common.space(d, seed, &[d as u64, rep])?;
        let (cfg, grid, points) = (config.clone(), space.clone(), self.common.oracle_points);
        let build = Box::new(move || {
            let objective = Arc::new(PerUserRff::sample(&cfg, seed, rep));
            Prepared::new(objective, &grid, points)
        });
        let source = Source::Deferred {
            domain: vec![(0.0, 1.0); d],
            n_users: config.users,
            build,
        };
        Ok(Box::new(PerUserWorkload::new(
            format!("per-user-gp(d={d})"),
            space,
            source,
            &self.common,
            noise,
        )?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::per_user::finite_difference_gradients;
    use crate::workloads::Space;

    #[test]
    fn gibo_lengthscales_match_the_spec() {
        for (d, want) in [
            (2, 0.10000),
            (5, 0.16400),
            (10, 0.23446),
            (15, 0.28815),
            (20, 0.33330),
        ] {
            let got = gibo_lengthscale_mean(d);
            assert!((got - want).abs() < 5e-6, "d = {d}: {got}");
        }
        assert!((gibo_delta(2.0) - 0.54501).abs() < 5e-6);
        // Drawn lengthscales lie in [1.4ℓ̄, 2.6ℓ̄].
        let f = PerUserRff::sample(&RffConfig::new(20, 4, 2, 0.9, 1.0, None).unwrap(), 1, 0);
        let l = gibo_lengthscale_mean(20);
        assert!(f
            .lengthscales()
            .iter()
            .all(|&v| (1.4 * l..=2.6 * l).contains(&v)));
    }

    #[test]
    fn shapes_and_reproducibility() {
        let cfg = RffConfig::new(3, 64, 7, 0.9, 1.0, None).unwrap();
        let a = PerUserRff::sample(&cfg, 5, 0);
        let b = PerUserRff::sample(&cfg, 5, 0);
        let c = PerUserRff::sample(&cfg, 5, 1);
        let p = [0.2, 0.5, 0.9];
        assert_eq!(a.losses(&p).unwrap(), b.losses(&p).unwrap());
        assert_ne!(a.losses(&p).unwrap(), c.losses(&p).unwrap());
        assert_eq!(a.losses(&p).unwrap().len(), 7);
        assert_eq!(a.gradients(&p).unwrap().dim(), (3, 7));
        assert_eq!(a.frequencies().dim(), (64, 3));
        let mean = a.losses(&p).unwrap().mean().unwrap();
        assert!((a.mean_loss(&p).unwrap() - mean).abs() < 1e-13);
        assert!(a.losses(&[0.1]).is_err());
        // A fixed lengthscale replaces the drawn ones but keeps the draw order.
        let fixed = RffConfig::new(3, 64, 7, 0.9, 1.0, Some(0.3)).unwrap();
        let f = PerUserRff::sample(&fixed, 5, 0);
        assert_eq!(f.lengthscales(), &[0.3; 3]);
        let z = a.frequencies()[[0, 0]] * a.lengthscales()[0];
        assert!((f.frequencies()[[0, 0]] * 0.3 - z).abs() < 1e-12);
        assert_eq!(f.weights(), a.weights());
    }

    /// The draws and values of seed 0 against an independent Python re-implementation of the
    /// stream and the draw order (tools/make_rff_golden.py): draws bit for bit, sums of 2048
    /// terms to 1e-12.
    #[test]
    fn seed_zero_matches_the_golden_file() {
        let text = std::fs::read_to_string("tests/fixtures/per_user_rff_golden.json").unwrap();
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        let exact = |v: &serde_json::Value| -> Vec<f64> {
            v.as_array()
                .unwrap()
                .iter()
                .map(|b| f64::from_bits(u64::from_str_radix(b.as_str().unwrap(), 16).unwrap()))
                .collect()
        };
        let floats =
            |v: &serde_json::Value| -> Vec<f64> { serde_json::from_value(v.clone()).unwrap() };
        let c = &doc["config"];
        let config = RffConfig::new(
            c["dim"].as_u64().unwrap() as usize,
            c["features"].as_u64().unwrap() as usize,
            c["users"].as_u64().unwrap() as usize,
            c["rho"].as_f64().unwrap(),
            c["signal_sd"].as_f64().unwrap(),
            None,
        )
        .unwrap();
        assert_eq!(config, RffConfig::default_for(5).unwrap());
        let f = PerUserRff::sample(
            &config,
            c["seed"].as_u64().unwrap(),
            c["index"].as_u64().unwrap(),
        );
        assert_eq!(f.lengthscales(), exact(&doc["lengthscales_bits"]));
        for (m, row) in doc["omega_first_rows_bits"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
        {
            assert_eq!(f.frequencies().row(m).to_vec(), exact(row), "omega row {m}");
        }
        let phases = exact(&doc["phase_first_bits"]);
        assert_eq!(f.phases().as_slice().unwrap()[..phases.len()], phases[..]);
        let w = f.weights();
        let first = exact(&doc["weights_user0_first_bits"]);
        assert_eq!(w.row(0).to_vec()[..first.len()], first[..]);
        let last = exact(&doc["weights_last_user_last_bits"]);
        let row = w.row(w.nrows() - 1).to_vec();
        assert_eq!(row[row.len() - last.len()..], last[..]);
        let close = |a: f64, b: f64| assert!((a - b).abs() < 1e-12, "{a} vs {b}");
        for v in doc["values"].as_array().unwrap() {
            let t = floats(&v["point"]);
            let losses = f.losses(&t).unwrap();
            let users: Vec<usize> = serde_json::from_value(v["users"].clone()).unwrap();
            for (&i, want) in users.iter().zip(floats(&v["losses"])) {
                close(losses[i], want);
            }
            close(f.mean_loss(&t).unwrap(), v["mean_loss"].as_f64().unwrap());
            let g = f.gradients(&t).unwrap();
            for (a, b) in g.column(0).iter().zip(floats(&v["gradient_user0"])) {
                close(*a, b);
            }
            for (a, b) in f
                .mean_gradient(&t)
                .unwrap()
                .iter()
                .zip(floats(&v["mean_gradient"]))
            {
                close(*a, b);
            }
        }
    }

    #[test]
    fn gradients_match_finite_differences() {
        let cfg = RffConfig::new(4, 128, 5, 0.6, 1.3, None).unwrap();
        let f = PerUserRff::sample(&cfg, 2, 3);
        let theta = [0.3, 0.1, 0.8, 0.55];
        let g = f.gradients(&theta).unwrap();
        let fd = finite_difference_gradients(&f, &theta, 1e-6);
        let scale = g.iter().fold(1.0f64, |m, v| m.max(v.abs()));
        for (a, b) in g.iter().zip(fd.iter()) {
            assert!((a - b).abs() < 1e-6 * scale, "{a} vs {b}");
        }
        let mean = f.mean_gradient(&theta).unwrap();
        let avg = g.mean_axis(Axis(1)).unwrap();
        for (a, b) in mean.iter().zip(avg.iter()) {
            assert!((a - b).abs() < 1e-12 * scale, "{a} vs {b}");
        }
    }

    /// Over independent objectives, E[L_i(x)L_i(y)] = s²k(x − y), E[L_i(x)L_j(y)] = ρs²k and
    /// E[f(x)f(y)] = (ρ + (1 − ρ)/n)s²k, with k the RBF kernel of the fixed lengthscale: each
    /// checked against 4 standard errors of its sample mean.
    #[test]
    fn users_and_their_mean_have_the_kernel_covariance() {
        let (rho, s, l, n) = (0.7, 1.5, 0.4, 4);
        // The RFF covariance is unbiased for any M; few features make many draws cheap.
        let cfg = RffConfig::new(2, 16, n, rho, s, Some(l)).unwrap();
        let (x, y) = ([0.2, 0.7], [0.5, 0.4]);
        let k = libm::exp(-0.5 * (0.09 + 0.09) / (l * l));
        let reps = 40_000;
        let mut prods = [vec![], vec![], vec![]];
        for i in 0..reps {
            let f = PerUserRff::sample(&cfg, 11, i);
            let (lx, ly) = (f.losses(&x).unwrap(), f.losses(&y).unwrap());
            prods[0].push(lx[0] * ly[0]);
            prods[1].push(lx[0] * ly[1]);
            prods[2].push(f.mean_loss(&x).unwrap() * f.mean_loss(&y).unwrap());
        }
        let wants = [
            s * s * k,
            rho * s * s * k,
            (rho + (1.0 - rho) / n as f64) * s * s * k,
        ];
        for (p, want) in prods.iter().zip(wants) {
            let m = p.iter().sum::<f64>() / reps as f64;
            let sd = (p.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (reps - 1) as f64).sqrt();
            assert!(
                (m - want).abs() < 4.0 * sd / (reps as f64).sqrt(),
                "{m} vs {want} (sd {sd})"
            );
        }
    }

    /// The objective is drawn once, on first use, even when that use comes from many rayon
    /// tasks at once (the build itself runs parallel work).
    #[test]
    fn concurrent_first_use_builds_one_objective() {
        use rayon::prelude::*;
        let t: toml::Table = toml::from_str("dims = [3]\nfeatures = 64\nusers = 30").unwrap();
        let w = spec(&t).unwrap().instance(0, 4, 2, 1.0).unwrap();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(4)
            .build()
            .unwrap();
        let h = vec![0.2, 0.4, 0.6];
        let got: Vec<f64> = pool.install(|| {
            (0..32)
                .into_par_iter()
                .map(|i| match i % 3 {
                    0 => w.oracle().best_utility(),
                    1 => w.oracle().utility(&h),
                    _ => -w
                        .per_user_losses()
                        .unwrap()
                        .user_losses(std::slice::from_ref(&h), &mut stream(0, &[]))
                        .unwrap()
                        .mean()
                        .unwrap(),
                })
                .collect()
        });
        let f = PerUserRff::sample(&RffConfig::new(3, 64, 30, 0.9, 1.0, None).unwrap(), 4, 2);
        let want = -f.mean_loss(&h).unwrap();
        for (i, g) in got.iter().enumerate() {
            match i % 3 {
                0 => assert_eq!(*g, got[0]),
                _ => assert!((g - want).abs() < 1e-12, "{g} vs {want}"),
            }
        }
    }

    #[test]
    fn bad_parameters_are_named() {
        for (args, name) in [
            ((0, 8, 2, 0.5, 1.0, None), "dims"),
            ((101, 8, 2, 0.5, 1.0, None), "dims"),
            ((2, 0, 2, 0.5, 1.0, None), "features"),
            ((2, 8, 0, 0.5, 1.0, None), "users"),
            ((2, 2048, 100_000, 0.5, 1.0, None), "users"),
            ((2, 8, 2, 1.5, 1.0, None), "rho"),
            ((2, 8, 2, 0.5, 0.0, None), "signal_sd"),
            ((2, 8, 2, 0.5, 1.0, Some(-1.0)), "lengthscale"),
        ] {
            let (d, m, n, r, s, l) = args;
            let e = RffConfig::new(d, m, n, r, s, l).unwrap_err().to_string();
            assert!(e.contains(name), "{e}");
        }
        let t: toml::Table = toml::from_str("kind = \"per-user-gp\"").unwrap();
        assert!(spec(&t).err().unwrap().to_string().contains("dims"));
        let t: toml::Table = toml::from_str("dims = [2]\nrh = 0.5").unwrap();
        assert!(spec(&t).err().unwrap().to_string().contains("rh"));
    }

    #[test]
    fn the_workload_offers_losses_runs_and_an_oracle() {
        let t: toml::Table =
            toml::from_str("dims = [2, 3]\nfeatures = 32\nusers = 6\ncandidates = 50\nnoise = 2")
                .unwrap();
        let s = spec(&t).unwrap();
        assert_eq!(s.variants().len(), 2);
        assert_eq!(s.default_noise(), Some(2.0));
        let w = s.instance(1, 9, 0, 2.0).unwrap();
        assert_eq!(w.space().len(), Some(50));
        let users = w.per_user_losses().unwrap();
        assert_eq!(users.n_users(), 6);
        assert_eq!(users.domain(), &[(0.0, 1.0); 3]);
        let pts = vec![vec![0.1, 0.2, 0.3], vec![0.4, 0.5, 0.6]];
        let mut rng = stream(1, &[]);
        let l = users.user_losses(&pts, &mut rng).unwrap();
        assert_eq!(l.dim(), (6, 2));
        let f = PerUserRff::sample(&RffConfig::new(3, 32, 6, 0.9, 1.0, None).unwrap(), 9, 0);
        assert_eq!(l.column(1), f.losses(&pts[1]).unwrap());
        assert_eq!(w.oracle().utility(&pts[0]), -f.mean_loss(&pts[0]).unwrap());
        let Space::Finite(grid) = w.space() else {
            panic!("a grid")
        };
        let best = grid
            .iter()
            .map(|h| -f.mean_loss(h).unwrap())
            .fold(f64::NEG_INFINITY, f64::max);
        assert_eq!(w.oracle().best_utility(), best);
        assert!(users.user_gradients(&pts[0]).is_some());
        let ps = w.private_training().unwrap();
        assert!((crate::workloads::run_curve(ps).eval(2.0).unwrap() - 2.0 / 8.0).abs() < 1e-12);
    }
}
