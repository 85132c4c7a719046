//! The appendix objectives of spec 004 §3.4 with exact per-user gradients and a known
//! minimiser: the normal location model (E.3, workload kind `normal-location`) and robust
//! linear regression (E.4, `robust-regression`).
//!
//! * E.3: x_i ~ N(1_d, I_d), i = 1..n (d = 5, n = 50); user i's loss ½‖x_i − θ‖², so
//!   f_x(θ) = (1/2n)·Σ_i ‖x_i − θ‖², ∇L = θ − x_i, and the minimiser over the box is the
//!   sample mean (the MLE) clamped to the box. Default box [−2, 4]^d: the mean 1 ± 3.
//! * E.4: x_i ~ N(0, I_d), y_i = x_iᵀ1_d + N(0, 1), i = 1..n (d = 4, n = 100); user i's loss
//!   w_i·ρ_c(y_i − x_iᵀθ) with w_i = min(1, 2/‖x_i‖²) and Huber's ρ_c(r) = ½r² (|r| ≤ c),
//!   c|r| − ½c² (|r| > c), c = 1; ∇L = −w_i·ψ_c(r_i)·x_i with ψ_c(r) = clamp(r, −c, c). The
//!   minimiser is found by IRLS and Newton steps (exact once the set of |r_i| ≤ c is settled)
//!   to a gradient norm of 10⁻¹³; building the objective fails if it lies outside the box.
//!   Default box [−3, 3]^d: θ_true = 1_d ± 4.
//!
//! Data: one set per (experiment seed, d), shared by every repetition, from
//! `stream(seed, [d, tag])`, user by user (E.3: x_i; E.4: x_i then the noise of y_i).

use super::{read_with_common, CommonParams, PerUserWorkload, Prepared, Source, UserObjective};
use crate::error::{Error, Range, Result};
use crate::params::{Count, OneOrMany};
use crate::rng::{normal, stream};
use crate::workloads::validation_score::PerKey;
use crate::workloads::{Variant, Workload, WorkloadSpec};
use ndarray::{Array1, Array2, Axis};
use ndarray_linalg::Solve;
use std::sync::Arc;

/// Stream tag of the E.3 data ("loc").
pub const LOCATION_TAG: u64 = 0x006c_6f63;
/// Stream tag of the E.4 data ("huber").
pub const ROBUST_TAG: u64 = 0x0068_7562_6572;

fn check_theta(theta: &[f64], d: usize) -> Result<Array1<f64>> {
    if theta.len() != d || theta.iter().any(|t| !t.is_finite()) {
        return Err(Error::invalid(
            "theta",
            format!("{theta:?}"),
            format!("{d} finite coordinates"),
        ));
    }
    Ok(Array1::from(theta.to_vec()))
}

fn check_data(x: &Array2<f64>, name: &'static str) -> Result<()> {
    if x.nrows() == 0 || x.ncols() == 0 || x.iter().any(|v| !v.is_finite()) {
        return Err(Error::invalid(
            name,
            format!("{} × {}", x.nrows(), x.ncols()),
            "at least one user of finite values in dimension >= 1",
        ));
    }
    Ok(())
}

fn check_bounds((lo, hi): (f64, f64)) -> Result<()> {
    if lo.is_finite() && hi.is_finite() && lo < hi {
        Ok(())
    } else {
        Err(Error::invalid(
            "bounds",
            format!("[{lo}, {hi}]"),
            "a range [lo, hi] of finite numbers with lo < hi",
        ))
    }
}

/// E.3: per-user losses ½‖x_i − θ‖².
#[derive(Clone, Debug)]
pub struct NormalLocation {
    domain: Vec<(f64, f64)>,
    /// n × d.
    x: Array2<f64>,
}

impl NormalLocation {
    /// n = `users` draws of N(1_d, I_d) for seed `seed`, on the box [lo, hi]^d.
    pub fn draw(dim: usize, users: usize, bounds: (f64, f64), seed: u64) -> Result<Self> {
        let mut rng = stream(seed, &[dim as u64, LOCATION_TAG]);
        let x = Array2::from_shape_simple_fn((users, dim), || 1.0 + normal(&mut rng));
        NormalLocation::from_data(x, bounds)
    }

    /// The objective of given users (rows of `x`) on [lo, hi]^d.
    pub fn from_data(x: Array2<f64>, bounds: (f64, f64)) -> Result<Self> {
        check_data(&x, "users")?;
        check_bounds(bounds)?;
        Ok(NormalLocation {
            domain: vec![bounds; x.ncols()],
            x,
        })
    }

    /// The users' data x_i (rows).
    pub fn data(&self) -> &Array2<f64> {
        &self.x
    }

    /// The sample mean x̄ (the MLE).
    pub fn sample_mean(&self) -> Array1<f64> {
        self.x.mean_axis(Axis(0)).expect("at least one user")
    }
}

impl UserObjective for NormalLocation {
    fn domain(&self) -> &[(f64, f64)] {
        &self.domain
    }
    fn n_users(&self) -> usize {
        self.x.nrows()
    }
    fn losses(&self, theta: &[f64]) -> Result<Array1<f64>> {
        let t = check_theta(theta, self.x.ncols())?;
        Ok(self
            .x
            .rows()
            .into_iter()
            .map(|xi| 0.5 * (&xi - &t).mapv(|v| v * v).sum())
            .collect())
    }
    /// Column i is θ − x_i.
    fn gradients(&self, theta: &[f64]) -> Option<Array2<f64>> {
        let t = check_theta(theta, self.x.ncols()).ok()?;
        Some((&t.insert_axis(Axis(0)) - &self.x).reversed_axes())
    }
    /// The objective is separable and quadratic: the minimiser over the box is x̄ clamped.
    fn minimum(&self) -> Option<(Vec<f64>, f64)> {
        let theta: Vec<f64> = self
            .sample_mean()
            .iter()
            .zip(&self.domain)
            .map(|(m, &(lo, hi))| m.clamp(lo, hi))
            .collect();
        let value = self.mean_loss(&theta).ok()?;
        Some((theta, value))
    }
}

/// E.4: per-user losses w_i·ρ_c(y_i − x_iᵀθ).
#[derive(Clone, Debug)]
pub struct RobustRegression {
    domain: Vec<(f64, f64)>,
    /// n × d.
    x: Array2<f64>,
    y: Array1<f64>,
    /// w_i = min(1, 2/‖x_i‖²).
    weights: Array1<f64>,
    huber: f64,
    minimiser: Vec<f64>,
    minimum: f64,
}

/// Huber's ρ_c.
fn huber_rho(r: f64, c: f64) -> f64 {
    if r.abs() <= c {
        0.5 * r * r
    } else {
        c * r.abs() - 0.5 * c * c
    }
}

impl RobustRegression {
    /// n = `users` draws (x_i ~ N(0, I_d), y_i = x_iᵀ1_d + N(0, 1)) for seed `seed`, on the box
    /// [lo, hi]^d, with Huber constant `huber`.
    pub fn draw(
        dim: usize,
        users: usize,
        bounds: (f64, f64),
        huber: f64,
        seed: u64,
    ) -> Result<Self> {
        let mut rng = stream(seed, &[dim as u64, ROBUST_TAG]);
        let mut x = Array2::zeros((users, dim));
        let mut y = Array1::zeros(users);
        for (mut row, yi) in x.rows_mut().into_iter().zip(y.iter_mut()) {
            row.mapv_inplace(|_| normal(&mut rng));
            *yi = row.sum() + normal(&mut rng);
        }
        RobustRegression::from_data(x, y, bounds, huber)
    }

    /// The objective of given users (rows of `x`, targets `y`) on [lo, hi]^d; solves for the
    /// minimiser, which must lie in the box.
    pub fn from_data(
        x: Array2<f64>,
        y: Array1<f64>,
        bounds: (f64, f64),
        huber: f64,
    ) -> Result<Self> {
        check_data(&x, "users")?;
        check_bounds(bounds)?;
        Range::Positive.check("huber", huber)?;
        if y.len() != x.nrows() || y.iter().any(|v| !v.is_finite()) {
            return Err(Error::invalid(
                "y",
                format!("{} values", y.len()),
                format!("{} finite targets, one per user", x.nrows()),
            ));
        }
        let weights = x
            .rows()
            .into_iter()
            .map(|r| {
                let n2 = r.dot(&r);
                if n2 > 0.0 {
                    (2.0 / n2).min(1.0)
                } else {
                    1.0
                }
            })
            .collect();
        let mut out = RobustRegression {
            domain: vec![bounds; x.ncols()],
            x,
            y,
            weights,
            huber,
            minimiser: vec![],
            minimum: f64::NAN,
        };
        out.minimiser = out.solve()?;
        out.minimum = out.mean_loss(&out.minimiser)?;
        let (lo, hi) = bounds;
        if out.minimiser.iter().any(|t| !(lo..=hi).contains(t)) {
            return Err(Error::invalid(
                "bounds",
                format!("[{lo}, {hi}]"),
                format!(
                    "a box containing the minimiser θ* = {:?} of the data",
                    out.minimiser
                ),
            ));
        }
        Ok(out)
    }

    /// The users' inputs x_i (rows) and targets y_i.
    pub fn data(&self) -> (&Array2<f64>, &Array1<f64>) {
        (&self.x, &self.y)
    }

    /// The weights w_i = min(1, 2/‖x_i‖²).
    pub fn weights(&self) -> &Array1<f64> {
        &self.weights
    }

    /// The exact minimiser θ* of f_x (over R^d; it lies in the box).
    pub fn minimiser(&self) -> &[f64] {
        &self.minimiser
    }

    fn residuals(&self, t: &Array1<f64>) -> Array1<f64> {
        &self.y - &self.x.dot(t)
    }

    fn objective_at(&self, t: &Array1<f64>) -> f64 {
        let r = self.residuals(t);
        r.iter()
            .zip(&self.weights)
            .map(|(r, w)| w * huber_rho(*r, self.huber))
            .sum::<f64>()
            / self.y.len() as f64
    }

    /// ∇f_x = −(1/n)·Σ_i w_i ψ_c(r_i) x_i.
    fn mean_gradient_at(&self, t: &Array1<f64>) -> Array1<f64> {
        let c = self.huber;
        let psi = self.residuals(t).mapv(|r| r.clamp(-c, c)) * &self.weights;
        self.x.t().dot(&psi) * (-1.0 / self.y.len() as f64)
    }

    /// Σ_i ω_i x_i x_iᵀ and Σ_i ω_i x_i y_i.
    fn weighted_normal_equations(&self, omega: &Array1<f64>) -> (Array2<f64>, Array1<f64>) {
        let xw = &self.x * &omega.view().insert_axis(Axis(1));
        (xw.t().dot(&self.x), xw.t().dot(&self.y))
    }

    /// The minimiser of the convex f_x: an IRLS start (a monotone majorise-minimise step:
    /// weights w_i·min(1, c/|r_i|)), then Newton steps with the Hessian of the users with
    /// |r_i| ≤ c, halved until f_x decreases; an IRLS step whenever Newton makes no progress.
    fn solve(&self) -> Result<Vec<f64>> {
        let c = self.huber;
        let irls = |t: &Array1<f64>| -> Result<Array1<f64>> {
            let r = self.residuals(t);
            let omega = Array1::from_shape_fn(r.len(), |i| {
                self.weights[i] * if r[i].abs() > c { c / r[i].abs() } else { 1.0 }
            });
            let (h, b) = self.weighted_normal_equations(&omega);
            h.solve(&b).map_err(|e| {
                Error::Numerical(format!(
                    "robust regression: the users' inputs do not span R^d ({e})"
                ))
            })
        };
        let scale = 1.0 + self.y.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let mut t = irls(&Array1::zeros(self.x.ncols()))?;
        for _ in 0..500 {
            let g = self.mean_gradient_at(&t);
            if g.dot(&g).sqrt() <= 1e-13 * scale {
                return Ok(t.to_vec());
            }
            let f = self.objective_at(&t);
            let r = self.residuals(&t);
            let inlier = Array1::from_shape_fn(r.len(), |i| {
                if r[i].abs() <= c {
                    self.weights[i] / r.len() as f64
                } else {
                    0.0
                }
            });
            let (h, _) = self.weighted_normal_equations(&inlier);
            let mut next = None;
            if let Ok(step) = h.solve(&g) {
                let mut s = 1.0;
                for _ in 0..60 {
                    let cand = &t - &(&step * s);
                    if self.objective_at(&cand) < f {
                        next = Some(cand);
                        break;
                    }
                    s *= 0.5;
                }
            }
            t = match next {
                Some(n) => n,
                None => {
                    let n = irls(&t)?;
                    if self.objective_at(&n) >= f {
                        // Neither step decreases f: t is the minimiser to rounding.
                        return Ok(t.to_vec());
                    }
                    n
                }
            };
        }
        Ok(t.to_vec())
    }
}

impl UserObjective for RobustRegression {
    fn domain(&self) -> &[(f64, f64)] {
        &self.domain
    }
    fn n_users(&self) -> usize {
        self.y.len()
    }
    fn losses(&self, theta: &[f64]) -> Result<Array1<f64>> {
        let t = check_theta(theta, self.x.ncols())?;
        let r = self.residuals(&t);
        Ok(Array1::from_shape_fn(r.len(), |i| {
            self.weights[i] * huber_rho(r[i], self.huber)
        }))
    }
    /// Column i is −w_i·ψ_c(r_i)·x_i.
    fn gradients(&self, theta: &[f64]) -> Option<Array2<f64>> {
        let t = check_theta(theta, self.x.ncols()).ok()?;
        let c = self.huber;
        let psi = self.residuals(&t).mapv(|r| r.clamp(-c, c)) * &self.weights;
        Some((&self.x * &psi.insert_axis(Axis(1)) * -1.0).reversed_axes())
    }
    fn minimum(&self) -> Option<(Vec<f64>, f64)> {
        Some((self.minimiser.clone(), self.minimum))
    }
}

/// Which appendix model a spec builds.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Model {
    NormalLocation,
    RobustRegression { huber: f64 },
}

/// The `normal-location` and `robust-regression` experiment-file workloads: one data set per
/// (dimension, seed).
pub struct LocationSpec {
    model: Model,
    dims: Vec<usize>,
    users: usize,
    bounds: (f64, f64),
    common: CommonParams,
    prepared: PerKey<(usize, u64), Prepared>,
}

/// Builds the spec from a `[workload]` table (kind = "normal-location"). Parameters: `dims`
/// ([5]), `users` n (50), `bounds` ([−2, 4]), and the common ones: `clip` R (10; losses
/// clipped to [0, R]), `evaluation_sd` (0), `candidates`, `noise`.
pub fn normal_location_spec(params: &toml::Table) -> Result<Box<dyn WorkloadSpec>> {
    LocationSpec::from_params(params, "normal-location")
}

/// Builds the spec from a `[workload]` table (kind = "robust-regression"). Parameters: `dims`
/// ([4]), `users` n (100), `bounds` ([−3, 3]), `huber` c (1), and the common ones: `clip` R (5;
/// losses clipped to [0, R]), `evaluation_sd` (0), `candidates`, `noise`.
pub fn robust_regression_spec(params: &toml::Table) -> Result<Box<dyn WorkloadSpec>> {
    LocationSpec::from_params(params, "robust-regression")
}

/// A `[workload]` table of kind `normal-location` or `robust-regression` (besides the common
/// per-user keys; `huber` is robust regression's).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    dims: Option<OneOrMany<Count>>,
    users: Option<Count>,
    bounds: Option<[f64; 2]>,
    huber: Option<f64>,
}

impl LocationSpec {
    fn from_params(params: &toml::Table, kind: &'static str) -> Result<Box<dyn WorkloadSpec>> {
        let robust = kind == "robust-regression";
        // No oracle: the exact best is known.
        let common_keys = ["candidates", "evaluation_sd", "clip", "noise"];
        let (p, common): (Params, _) = read_with_common(kind, params, &common_keys)?;
        let (dims, users, bounds, clip) = if robust {
            ([4], 100, [-3.0, 3.0], 5.0)
        } else {
            ([5], 50, [-2.0, 4.0], 10.0)
        };
        let [lo, hi] = p.bounds.unwrap_or(bounds);
        check_bounds((lo, hi))?;
        let model = match (robust, p.huber) {
            (true, huber) => Model::RobustRegression {
                huber: Range::Positive.check("huber", huber.unwrap_or(1.0))?,
            },
            (false, None) => Model::NormalLocation,
            (false, Some(_)) => {
                return Err(Error::UnknownKey {
                    owner: format!("workload `{kind}`"),
                    key: "huber".into(),
                    allowed: "dims, users, bounds, candidates, evaluation_sd, clip, noise".into(),
                })
            }
        };
        Ok(Box::new(LocationSpec {
            model,
            dims: crate::workloads::dims(p.dims, &dims)?,
            users: p.users.map_or(Ok(users), |u| u.at_least("users", 1))? as usize,
            bounds: (lo, hi),
            common: CommonParams::read(&common, false, clip, 0)?,
            prepared: PerKey::default(),
        }))
    }

    fn draw(&self, dim: usize, seed: u64) -> Result<Arc<dyn UserObjective>> {
        Ok(match self.model {
            Model::NormalLocation => {
                Arc::new(NormalLocation::draw(dim, self.users, self.bounds, seed)?)
            }
            Model::RobustRegression { huber } => Arc::new(RobustRegression::draw(
                dim,
                self.users,
                self.bounds,
                huber,
                seed,
            )?),
        })
    }
}

impl WorkloadSpec for LocationSpec {
    fn kind(&self) -> &'static str {
        match self.model {
            Model::NormalLocation => "normal-location",
            Model::RobustRegression { .. } => "robust-regression",
        }
    }
    fn params(&self) -> String {
        let huber = match self.model {
            Model::NormalLocation => String::new(),
            Model::RobustRegression { huber } => format!("huber={huber}, "),
        };
        format!(
            "users={}, bounds=[{}, {}], {huber}{}",
            self.users,
            self.bounds.0,
            self.bounds.1,
            self.common.describe()
        )
    }
    fn variants(&self) -> Vec<Variant> {
        crate::workloads::dim_variants(self.dims.iter().copied())
    }
    fn default_noise(&self) -> Option<f64> {
        self.common.noise
    }
    fn instance(
        &self,
        variant: usize,
        seed: u64,
        _rep: u64,
        noise: f64,
    ) -> Result<Box<dyn Workload>> {
        let d = crate::workloads::variant_dim(&self.dims, variant)?;
        let space = self.common.space(d, seed, &[d as u64])?;
        let prepared = self.prepared.get_or_build((variant, seed), || {
            Ok(Prepared::new(self.draw(d, seed)?, &space, 0))
        })?;
        Ok(Box::new(PerUserWorkload::new(
            format!("{}(d={d})", self.kind()),
            space,
            Source::Ready(prepared),
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

    fn assert_gradients_match(o: &dyn UserObjective, theta: &[f64]) {
        let g = o.gradients(theta).unwrap();
        assert_eq!(g.dim(), (theta.len(), o.n_users()));
        let fd = finite_difference_gradients(o, theta, 1e-6);
        for (a, b) in g.iter().zip(fd.iter()) {
            assert!((a - b).abs() < 1e-6 * a.abs().max(1.0), "{a} vs {b}");
        }
    }

    #[test]
    fn draws_are_reproducible() {
        let a = NormalLocation::draw(5, 50, (-2.0, 4.0), 1).unwrap();
        assert_eq!(
            a.data(),
            NormalLocation::draw(5, 50, (-2.0, 4.0), 1).unwrap().data()
        );
        assert_ne!(
            a.data(),
            NormalLocation::draw(5, 50, (-2.0, 4.0), 2).unwrap().data()
        );
        let b = RobustRegression::draw(4, 100, (-3.0, 3.0), 1.0, 1).unwrap();
        let c = RobustRegression::draw(4, 100, (-3.0, 3.0), 1.0, 1).unwrap();
        assert_eq!(b.data(), c.data());
        assert_eq!(b.minimiser(), c.minimiser());
        assert_eq!(b.losses(&[1.0; 4]).unwrap().len(), 100);
        assert!(b.losses(&[1.0; 3]).is_err());
        assert!(a.gradients(&[f64::NAN; 5]).is_none());
    }

    #[test]
    fn normal_location_gradients_and_optimum() {
        let o = NormalLocation::draw(5, 50, (-2.0, 4.0), 1).unwrap();
        assert_eq!(o.data().dim(), (50, 5));
        assert_gradients_match(&o, &[0.0, 0.5, 1.0, 1.5, -1.0]);
        let mean = o.sample_mean();
        let (theta, value) = o.minimum().unwrap();
        assert_eq!(theta, mean.to_vec());
        // The sample mean has zero mean gradient, and moving away increases f by ½‖δ‖².
        let g = o.gradients(&theta).unwrap().mean_axis(Axis(1)).unwrap();
        assert!(g.iter().all(|v| v.abs() < 1e-14), "{g}");
        let mut moved = theta.clone();
        moved[2] += 0.1;
        assert!((o.mean_loss(&moved).unwrap() - value - 0.005).abs() < 1e-12);
        // f at θ = x̄ is half the mean squared deviation.
        let dev = o.data() - &mean.view().insert_axis(Axis(0));
        let want = 0.5 * dev.mapv(|v| v * v).sum() / 50.0;
        assert!((value - want).abs() < 1e-12);
        assert!((mean.iter().sum::<f64>() / 5.0 - 1.0).abs() < 0.3, "{mean}");
        // A box that excludes the mean: the minimiser is the clamp.
        let c = NormalLocation::from_data(o.data().clone(), (1.5, 3.0)).unwrap();
        assert!(c.minimum().unwrap().0.iter().all(|&v| v == 1.5));
    }

    #[test]
    fn robust_regression_gradients_and_optimum() {
        let o = RobustRegression::draw(4, 100, (-3.0, 3.0), 1.0, 1).unwrap();
        assert_gradients_match(&o, &[0.0, 0.5, 1.0, 2.0]);
        assert_gradients_match(&o, &[1.1, 0.9, 1.2, 0.8]);
        let w = o.weights();
        let (x, _) = o.data();
        for (wi, xi) in w.iter().zip(x.rows()) {
            assert!((wi - (2.0 / xi.dot(&xi)).min(1.0)).abs() < 1e-15);
        }
        let (theta, value) = o.minimum().unwrap();
        let g = o.gradients(&theta).unwrap().mean_axis(Axis(1)).unwrap();
        assert!(g.dot(&g).sqrt() < 1e-12, "{g}");
        // A minimum: every nearby point is worse; and θ* is near θ_true = 1.
        for j in 0..4 {
            for h in [-1e-3, 1e-3] {
                let mut t = theta.clone();
                t[j] += h;
                assert!(o.mean_loss(&t).unwrap() > value);
            }
        }
        assert!(theta.iter().all(|t| (t - 1.0).abs() < 0.6), "{theta:?}");
    }

    /// A hand-checkable case: d = 1, x = (1, 1, 1), y = (0, 0, 10), c = 1 (weights 1). The
    /// gradient −(1/3)Σψ(y_i − θ) vanishes where 2·ψ(−θ) + ψ(10 − θ) = 0: θ* = 0.5 (two
    /// inliers with residual −0.5 and one outlier at +1).
    #[test]
    fn robust_regression_solves_a_small_case_exactly() {
        let x = Array2::from_shape_vec((3, 1), vec![1.0; 3]).unwrap();
        let y = Array1::from(vec![0.0, 0.0, 10.0]);
        let o = RobustRegression::from_data(x.clone(), y.clone(), (-3.0, 3.0), 1.0).unwrap();
        assert!(
            (o.minimiser()[0] - 0.5).abs() < 1e-13,
            "{:?}",
            o.minimiser()
        );
        let want = (2.0 * 0.125 + (9.5 - 0.5)) / 3.0;
        assert!((o.minimum().unwrap().1 - want).abs() < 1e-13);
        let e = RobustRegression::from_data(x, y, (1.0, 3.0), 1.0).unwrap_err();
        assert!(e.to_string().contains("bounds"), "{e}");
    }

    #[test]
    fn specs_build_workloads_with_exact_optima() {
        let t: toml::Table = toml::from_str("noise = 2").unwrap();
        let s = normal_location_spec(&t).unwrap();
        assert_eq!(s.variants()[0].dim, 5);
        let w = s.instance(0, 3, 0, 2.0).unwrap();
        let o = NormalLocation::draw(5, 50, (-2.0, 4.0), 3).unwrap();
        let (theta, value) = o.minimum().unwrap();
        assert_eq!(w.oracle().best_utility(), -value);
        let u = super::super::to_unit(&[(-2.0, 4.0); 5], &theta);
        assert!((w.oracle().utility(&u) + value).abs() < 1e-12);
        assert_eq!(w.per_user_losses().unwrap().n_users(), 50);
        // Privacy of one run: Δ = R/n = 10/50, σ = zΔ, ρ = 1/(2z²).
        let run = w.private_training().unwrap();
        assert!((crate::workloads::run_curve(run).eval(3.0).unwrap() - 3.0 / 8.0).abs() < 1e-12);

        let t: toml::Table = toml::from_str("candidates = 30\nhuber = 0.5\nusers = 80").unwrap();
        let s = robust_regression_spec(&t).unwrap();
        let w = s.instance(0, 3, 1, 1.0).unwrap();
        let Space::Finite(grid) = w.space() else {
            panic!("a grid")
        };
        let best = grid
            .iter()
            .map(|h| w.oracle().utility(h))
            .fold(f64::NEG_INFINITY, f64::max);
        assert_eq!(w.oracle().best_utility(), best);
        assert_eq!(w.per_user_losses().unwrap().n_users(), 80);

        for (bad, name) in [
            ("huber = 0", "huber"),
            ("bounds = [3, -3]", "bounds"),
            ("users = 0", "users"),
            ("bounds = [5, 6]", "bounds"),
            ("oracle_points = 4", "oracle_points"),
        ] {
            let t: toml::Table = toml::from_str(bad).unwrap();
            let e = match robust_regression_spec(&t) {
                Err(e) => e,
                Ok(s) => s.instance(0, 3, 0, 1.0).err().unwrap(),
            };
            assert!(e.to_string().contains(name), "{bad}: {e}");
        }
        let t: toml::Table = toml::from_str("huber = 1").unwrap();
        assert!(normal_location_spec(&t).is_err());
    }
}
