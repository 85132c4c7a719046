//! DPareto's acquisition in closed form for two objectives (spec 001 §2): the hypervolume-based
//! probability of improvement (HVPoI, Couckuyt–Deschrijver–Dhaene 2014, as GPflowOpt computes
//! it) and, as a second acquisition, the expected hypervolume improvement (EHVI). Both work in
//! the model space of [`super::transform`] and take the two independent GP predictions at a
//! candidate, N(μ₁, s₁²) and N(μ₂, s₂²).
//!
//! **Cells.** Take the distinct front corners strictly inside the reference box r, sorted so
//! that a₁ < … < a_N and b₁ > … > b_N, and set a₀ = −∞, a_{N+1} = r₁, b₀ = r₂. The part of the
//! box the front does not dominate is the disjoint union of the cells
//! C_i = [a_i, a_{i+1}) × (−∞, b_i), i = 0..N. With Φ the standard normal CDF, φ its density:
//!
//! * PoI(μ, s) = Σ_i [Φ((a_{i+1} − μ₁)/s₁) − Φ((a_i − μ₁)/s₁)] · Φ((b_i − μ₂)/s₂), the mass of
//!   the prediction in those cells (only inside the box, as in the library);
//! * Δ_PF(v) = HV(P ∪ {v}) − HV(P) = Σ_i max(0, a_{i+1} − max(a_i, v₁)) · max(0, b_i − v₂), the
//!   area of the part of [v, r] in the cells;
//! * HVPoI(μ, s) = Δ_PF(μ) · PoI(μ, s), spec §2's α(λ);
//! * EHVI(μ, s) = E[Δ_PF(Y)], Y ~ N(μ, diag s²). On cell i the improvement factorises as
//!   ((a_{i+1} − Y₁)₊ − (a_i − Y₁)₊) · (b_i − Y₂)₊ (check the three cases Y₁ ≤ a_i, a_i < Y₁ <
//!   a_{i+1}, Y₁ ≥ a_{i+1}), so with ψ_j(c) = E[(c − Y_j)₊] = s_j(zΦ(z) + φ(z)),
//!   z = (c − μ_j)/s_j, ψ(−∞) = 0, and independent coordinates:
//!   EHVI = Σ_i [ψ₁(a_{i+1}) − ψ₁(a_i)] · ψ₂(b_i).
//!
//! Each predictive variance is floored at [`VARIANCE_FLOOR`] (the library's jitter), so a
//! candidate at an observed input (s = 0) still has a defined PoI.

use super::front::{pareto_front, Objectives, StepFront};
use super::transform::to_model_space;
use crate::error::{fmt_num, Error, Result};
use crate::numeric::ndtr;
use std::f64::consts::PI;

/// The floor on each predictive variance s² (GPflow's default jitter, 1e-6, which GPflowOpt's
/// HVPoI applies; spec §2 "floor s² at a jitter").
pub const VARIANCE_FLOOR: f64 = 1e-6;

/// Which points the acquisition's front is built from (spec §2). The later tuner reads it; the
/// cells of [`ImprovementCells`] take whichever points it hands over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FrontSource {
    /// The paper's version and the default: the transformed observations.
    #[default]
    Observed,
    /// The library's (GPflowOpt) behaviour: the GPs' posterior means at the observed inputs,
    /// which smooths the utility's noise out of the front.
    PosteriorMean,
}

/// The acquisition's reference point, in model space (spec §2).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reference {
    /// A fixed point: the paper's v† transformed (see [`Reference::paper`]).
    Fixed(Objectives),
    /// The library's rule, re-estimated whenever the data change and overriding the user's
    /// setting in the release: per objective, `max(front) + 2·(max − min)/|front|`, over the
    /// Pareto front of the points the acquisition is built from (duplicates counted, as
    /// GPflowOpt's non-dominated sort keeps them).
    Auto,
}

impl Default for Reference {
    fn default() -> Self {
        Reference::paper()
    }
}

impl Reference {
    /// The paper's reference, (ε, error) = (10, 0.999) in model space: (ln 10, logit 0.999).
    /// The error is capped at 0.999 because logit(1) is infinite (spec §2).
    pub fn paper() -> Reference {
        Reference::Fixed([libm::log(10f64), libm::log(999f64)])
    }

    /// A fixed reference given in (ε, error) units, transformed to model space.
    pub fn fixed_from_objectives(epsilon: f64, error: f64) -> Result<Reference> {
        Ok(Reference::Fixed(to_model_space([epsilon, error])?))
    }

    /// The reference point for the model-space `points` the acquisition's front is built
    /// from. `Auto` needs at least one point; with a single front point the reference is that
    /// point, and the box holds no front corner.
    pub fn resolve(&self, points: &[Objectives]) -> Result<Objectives> {
        let r = match self {
            Reference::Fixed(r) => *r,
            Reference::Auto => {
                let front = pareto_front(points)?;
                if front.is_empty() {
                    return Err(Error::Infeasible(
                        "the automatic reference point needs at least one observed point".into(),
                    ));
                }
                let mut r = [0.0; 2];
                for (j, rj) in r.iter_mut().enumerate() {
                    let (lo, hi) = front
                        .iter()
                        .fold((f64::INFINITY, f64::NEG_INFINITY), |m, &i| {
                            (m.0.min(points[i][j]), m.1.max(points[i][j]))
                        });
                    *rj = hi + 2.0 * (hi - lo) / front.len() as f64;
                }
                r
            }
        };
        if r.iter().all(|v| v.is_finite()) {
            Ok(r)
        } else {
            Err(Error::invalid(
                "reference",
                format!("({}, {})", r[0], r[1]),
                "a pair of finite numbers in model space",
            ))
        }
    }
}

/// The non-dominated part of the reference box as the cells C_i of the module docs, built once
/// per change of the data and evaluated at many candidates (spec §2 evaluates 5000).
#[derive(Clone, Debug, PartialEq)]
pub struct ImprovementCells {
    /// a₀ = −∞, a₁ … a_N, a_{N+1} = r₁: cell i spans [edges[i], edges[i+1]).
    edges: Vec<f64>,
    /// b₀ = r₂, b₁ … b_N: cell i lies below heights[i].
    heights: Vec<f64>,
    reference: Objectives,
}

impl ImprovementCells {
    /// The cells of the front of `points` (any model-space points: dominated ones, duplicates
    /// and points outside the box are allowed and change nothing) below a finite `reference`.
    pub fn new(points: &[Objectives], reference: Objectives) -> Result<Self> {
        if !reference.iter().all(|v| v.is_finite()) {
            return Err(Error::invalid(
                "reference",
                format!("({}, {})", reference[0], reference[1]),
                "a pair of finite numbers",
            ));
        }
        let corners = StepFront::new(points)?.corners_inside(reference);
        if let Some(p) = corners
            .iter()
            .find(|p| !p[0].is_finite() || !p[1].is_finite())
        {
            return Err(Error::invalid(
                "points",
                format!("({}, {})", p[0], p[1]),
                "finite model-space points below the reference",
            ));
        }
        let mut edges = Vec::with_capacity(corners.len() + 2);
        edges.push(f64::NEG_INFINITY);
        edges.extend(corners.iter().map(|p| p[0]));
        edges.push(reference[0]);
        let mut heights = Vec::with_capacity(corners.len() + 1);
        heights.push(reference[1]);
        heights.extend(corners.iter().map(|p| p[1]));
        Ok(ImprovementCells {
            edges,
            heights,
            reference,
        })
    }

    /// The cells of `points` below the point `reference` resolves for them (the library's
    /// automatic rule, or a fixed point).
    pub fn with_reference(points: &[Objectives], reference: &Reference) -> Result<Self> {
        ImprovementCells::new(points, reference.resolve(points)?)
    }

    /// The reference point the cells are bounded by.
    pub fn reference(&self) -> Objectives {
        self.reference
    }

    /// The front corners inside the box, (a_i, b_i) for i = 1..N.
    pub fn corners(&self) -> Vec<Objectives> {
        (1..self.heights.len())
            .map(|i| [self.edges[i], self.heights[i]])
            .collect()
    }

    /// Δ_PF(v): the hypervolume a point at `v` would add to the front (0 when the front
    /// already dominates v or v lies outside the box).
    pub fn improvement(&self, v: Objectives) -> Result<f64> {
        check_finite("point", v)?;
        let gain: f64 = self
            .cells()
            .map(|(lo, hi, b)| (hi - lo.max(v[0])).max(0.0) * (b - v[1]).max(0.0))
            .sum();
        finite_or_overflow("hypervolume improvement", gain, v)
    }

    /// PoI(μ, s): the probability that a draw from the prediction N(μ, diag s²) lands in the
    /// part of the box the front does not dominate. In [0, 1].
    pub fn probability_of_improvement(&self, mean: Objectives, sd: Objectives) -> Result<f64> {
        let s = check_prediction(mean, sd)?;
        let p: f64 = self
            .cells()
            .map(|(lo, hi, b)| {
                let mass_x = normal_mass((lo - mean[0]) / s[0], (hi - mean[0]) / s[0]);
                mass_x * ndtr((b - mean[1]) / s[1])
            })
            .sum();
        Ok(p.clamp(0.0, 1.0))
    }

    /// HVPoI(μ, s) = Δ_PF(μ) · PoI(μ, s), DPareto's acquisition (spec §2).
    pub fn hvpoi(&self, mean: Objectives, sd: Objectives) -> Result<f64> {
        let poi = self.probability_of_improvement(mean, sd)?;
        Ok(self.improvement(mean)? * poi)
    }

    /// EHVI(μ, s) = E[Δ_PF(Y)] for Y ~ N(μ, diag s²), in closed form (module docs).
    pub fn expected_improvement(&self, mean: Objectives, sd: Objectives) -> Result<f64> {
        let s = check_prediction(mean, sd)?;
        let psi = |c: f64, j: usize| shortfall(c, mean[j], s[j]);
        let e: f64 = self
            .cells()
            .map(|(lo, hi, b)| {
                // ψ increases, so the difference is ≥ 0 up to rounding; a NaN (∞ − ∞ at
                // absurd scales) is kept so the check below reports it.
                let d = psi(hi, 0) - psi(lo, 0);
                let d = if d < 0.0 { 0.0 } else { d };
                d * psi(b, 1)
            })
            .sum();
        finite_or_overflow("expected hypervolume improvement", e, mean)
    }

    /// (a_i, a_{i+1}, b_i) for each cell i = 0..N.
    fn cells(&self) -> impl Iterator<Item = (f64, f64, f64)> + '_ {
        self.heights
            .iter()
            .enumerate()
            .map(|(i, &b)| (self.edges[i], self.edges[i + 1], b))
    }
}

/// P(lo < Z < hi) for a standard normal Z, from the upper tails when both ends are positive so
/// a cell far right of the mean keeps its small mass (not 1 − 1).
fn normal_mass(lo: f64, hi: f64) -> f64 {
    let m = if lo > 0.0 {
        ndtr(-lo) - ndtr(-hi)
    } else {
        ndtr(hi) - ndtr(lo)
    };
    m.max(0.0)
}

/// ψ(c) = E[(c − Y)₊] for Y ~ N(μ, s²): s·(zΦ(z) + φ(z)) with z = (c − μ)/s; 0 at c = −∞.
fn shortfall(c: f64, mean: f64, s: f64) -> f64 {
    if c == f64::NEG_INFINITY {
        return 0.0;
    }
    let z = (c - mean) / s;
    let pdf = libm::exp(-0.5 * z * z) / (2.0 * PI).sqrt();
    (s * (z * ndtr(z) + pdf)).max(0.0)
}

fn finite_or_overflow(what: &str, value: f64, at: Objectives) -> Result<f64> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(Error::Numerical(format!(
            "the {what} at ({}, {}) overflows a double (model-space values too far apart)",
            fmt_num(at[0]),
            fmt_num(at[1])
        )))
    }
}

fn check_finite(name: &'static str, v: Objectives) -> Result<()> {
    if v.iter().all(|x| x.is_finite()) {
        Ok(())
    } else {
        Err(Error::invalid(
            name,
            format!("({}, {})", v[0], v[1]),
            "a pair of finite numbers",
        ))
    }
}

/// Validates a prediction and returns its standard deviations with the variance floor applied.
fn check_prediction(mean: Objectives, sd: Objectives) -> Result<Objectives> {
    check_finite("mean", mean)?;
    if !sd.iter().all(|s| *s >= 0.0 && s.is_finite()) {
        return Err(Error::invalid(
            "sd",
            format!("({}, {})", sd[0], sd[1]),
            "a pair of finite standard deviations >= 0",
        ));
    }
    Ok(sd.map(|s| (s * s).max(VARIANCE_FLOOR).sqrt()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pareto::front::hypervolume;
    use crate::rng::{normal, stream};
    use rand::Rng;

    const SPEC_FRONT: [Objectives; 3] = [[0.0, 2.0], [1.0, 1.0], [2.0, 0.5]];

    #[test]
    fn spec_6_3_test_vector() {
        let cells = ImprovementCells::new(&SPEC_FRONT, [3.0, 3.0]).unwrap();
        let (mu, s) = ([0.5, 0.8], [0.7, 0.4]);
        let poi = cells.probability_of_improvement(mu, s).unwrap();
        let delta = cells.improvement(mu).unwrap();
        // Spec: PoI = 0.9185, Δ_PF = 0.8000 (4 printed digits).
        assert!((poi - 0.9185).abs() < 5e-5, "PoI = {poi}");
        assert!((delta - 0.8).abs() < 5e-5, "Δ_PF = {delta}");
        // Δ_PF by hand: cells [0, 1) × (−∞, 2) and [1, 2) × (−∞, 1) from μ: 0.5·1.2 + 1·0.2.
        assert!((delta - 0.8).abs() < 1e-15);
        assert!((cells.hvpoi(mu, s).unwrap() - poi * delta).abs() < 1e-15);
    }

    /// Monte Carlo with a fixed seed; the tolerance is 4.5 standard errors of the estimate.
    fn mc_check(name: &str, exact: f64, draws: &[f64]) {
        let n = draws.len() as f64;
        let mean = draws.iter().sum::<f64>() / n;
        let var = draws.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (n - 1.0);
        let se = (var / n).sqrt();
        assert!(
            (exact - mean).abs() <= 4.5 * se + 1e-12,
            "{name}: closed form {exact} vs Monte Carlo {mean} ± {se}"
        );
    }

    /// Fronts (with dominated and out-of-box points), references and predictions to check.
    fn cases() -> Vec<(Vec<Objectives>, Objectives, Objectives, Objectives)> {
        vec![
            (SPEC_FRONT.to_vec(), [3.0, 3.0], [0.5, 0.8], [0.7, 0.4]),
            (SPEC_FRONT.to_vec(), [3.0, 3.0], [1.5, 1.5], [1.0, 2.0]),
            (
                vec![
                    [0.2, 1.5],
                    [0.5, 0.4],
                    [0.6, 0.9],
                    [1.7, 0.1],
                    [4.0, -1.0],
                    [1.0, 5.0],
                ],
                [2.5, 2.0],
                [1.0, 0.3],
                [0.3, 0.5],
            ),
            (vec![], [1.0, 1.0], [0.0, 0.0], [1.0, 1.0]),
            (
                vec![[-2.0, 3.0], [-1.0, 1.0], [0.5, -0.5]],
                [2.0, 4.0],
                [2.5, -1.0],
                [0.8, 0.6],
            ),
        ]
    }

    #[test]
    fn poi_matches_monte_carlo() {
        for (k, (pts, r, mu, s)) in cases().into_iter().enumerate() {
            let cells = ImprovementCells::new(&pts, r).unwrap();
            let exact = cells.probability_of_improvement(mu, s).unwrap();
            let mut rng = stream(19, &[10, k as u64]);
            // Indicator of the definition: inside the box, weakly dominated by no point.
            let draws: Vec<f64> = (0..200_000)
                .map(|_| {
                    let y = [
                        mu[0] + s[0] * normal(&mut rng),
                        mu[1] + s[1] * normal(&mut rng),
                    ];
                    let inside = y[0] < r[0] && y[1] < r[1];
                    let dominated = pts.iter().any(|u| u[0] <= y[0] && u[1] <= y[1]);
                    f64::from(u8::from(inside && !dominated))
                })
                .collect();
            mc_check(&format!("PoI case {k}"), exact, &draws);
        }
    }

    #[test]
    fn ehvi_matches_monte_carlo() {
        for (k, (pts, r, mu, s)) in cases().into_iter().enumerate() {
            let cells = ImprovementCells::new(&pts, r).unwrap();
            let exact = cells.expected_improvement(mu, s).unwrap();
            let base = hypervolume(&pts, r).unwrap();
            let mut rng = stream(19, &[11, k as u64]);
            let mut with = pts.clone();
            with.push([0.0; 2]);
            let draws: Vec<f64> = (0..60_000)
                .map(|_| {
                    let y = [
                        mu[0] + s[0] * normal(&mut rng),
                        mu[1] + s[1] * normal(&mut rng),
                    ];
                    *with.last_mut().unwrap() = y;
                    hypervolume(&with, r).unwrap() - base
                })
                .collect();
            mc_check(&format!("EHVI case {k}"), exact, &draws);
        }
        // The spec's inputs, high-precision value of the closed form (mpmath, 40 digits):
        // 1.1200873210976399.
        let cells = ImprovementCells::new(&SPEC_FRONT, [3.0, 3.0]).unwrap();
        let e = cells.expected_improvement([0.5, 0.8], [0.7, 0.4]).unwrap();
        assert!((e - 1.120_087_321_097_64).abs() < 1e-12, "{e}");
    }

    /// Δ_PF against the hypervolume difference computed by the sweep of `front`.
    #[test]
    fn improvement_is_the_hypervolume_gain() {
        let mut rng = stream(19, &[12]);
        for _ in 0..300 {
            let pts: Vec<Objectives> = (0..rng.random_range(0..12))
                .map(|_| [rng.random_range(-1.0..3.0), rng.random_range(-1.0..3.0)])
                .collect();
            let r = [rng.random_range(0.0..3.0), rng.random_range(0.0..3.0)];
            let cells = ImprovementCells::new(&pts, r).unwrap();
            let v = [rng.random_range(-1.5..3.5), rng.random_range(-1.5..3.5)];
            let mut with = pts.clone();
            with.push(v);
            let gain = hypervolume(&with, r).unwrap() - hypervolume(&pts, r).unwrap();
            assert!((cells.improvement(v).unwrap() - gain).abs() < 1e-12);
        }
    }

    #[test]
    fn vanishing_uncertainty_gives_the_indicator_and_the_gain() {
        let cells = ImprovementCells::new(&SPEC_FRONT, [3.0, 3.0]).unwrap();
        let tiny = [0.0, 0.0]; // floored at VARIANCE_FLOOR: s = 1e-3
        let inside = [0.5, 0.8];
        let dominated = [1.5, 1.5];
        let outside = [3.5, 0.0];
        assert!(cells.probability_of_improvement(inside, tiny).unwrap() > 1.0 - 1e-12);
        assert!(cells.probability_of_improvement(dominated, tiny).unwrap() < 1e-12);
        assert!(cells.probability_of_improvement(outside, tiny).unwrap() < 1e-12);
        let e = cells.expected_improvement(inside, tiny).unwrap();
        assert!((e - 0.8).abs() < 1e-3, "{e}");
        assert_eq!(cells.hvpoi(dominated, [0.5, 0.5]).unwrap(), 0.0);
        // A cell far right of the mean keeps its small mass, not 1 − 1 = 0:
        // P(30 < Z < 31) = Φ(−30) − Φ(−31) ≈ 4.9e-198, and Φ(−31) < 1e-13 · Φ(−30).
        let far = normal_mass(30.0, 31.0);
        assert_eq!(ndtr(31.0) - ndtr(30.0), 0.0);
        assert!(
            far > 0.0 && (far / ndtr(-30.0) - 1.0).abs() < 1e-12,
            "{far}"
        );
        assert!((normal_mass(-1.0, 1.0) - (2.0 * ndtr(1.0) - 1.0)).abs() < 1e-15);
    }

    #[test]
    fn automatic_reference_follows_the_library_rule() {
        // Front max (2, 2), min (0, 0.5), three points: (2 + 2·2/3, 2 + 2·1.5/3).
        let mut pts = SPEC_FRONT.to_vec();
        pts.push([5.0, 5.0]); // dominated: not part of the rule
        let r = Reference::Auto.resolve(&pts).unwrap();
        assert!((r[0] - (2.0 + 4.0 / 3.0)).abs() < 1e-15 && (r[1] - 3.0).abs() < 1e-15);
        // A duplicate counts in |front|: (2 + 4/4, 2 + 3/4).
        pts.push([1.0, 1.0]);
        let r = Reference::Auto.resolve(&pts).unwrap();
        assert!((r[0] - 3.0).abs() < 1e-15 && (r[1] - 2.75).abs() < 1e-15);
        assert_eq!(Reference::Auto.resolve(&[[1.0, 2.0]]).unwrap(), [1.0, 2.0]);
        let cells = ImprovementCells::with_reference(&SPEC_FRONT, &Reference::Auto).unwrap();
        assert_eq!(cells.reference(), [2.0 + 4.0 / 3.0, 3.0]);
        assert!(Reference::Auto.resolve(&[]).is_err());
        // The paper's: (10, 0.999) in model space.
        let Reference::Fixed(p) = Reference::paper() else {
            panic!("paper reference is fixed")
        };
        // ln 10 and logit 0.999 = ln 999, by hand.
        let Reference::Fixed(q) = Reference::fixed_from_objectives(10.0, 0.999).unwrap() else {
            panic!("a fixed reference")
        };
        for r in [p, q] {
            assert!((r[0] - std::f64::consts::LN_10).abs() < 1e-15, "{r:?}");
            assert!((r[1] - 6.906_754_778_648_554).abs() < 1e-12, "{r:?}");
        }
        assert_eq!(FrontSource::default(), FrontSource::Observed);
    }

    #[test]
    fn invalid_inputs_are_named() {
        let cells = ImprovementCells::new(&SPEC_FRONT, [3.0, 3.0]).unwrap();
        let msg = cells
            .probability_of_improvement([f64::NAN, 0.0], [1.0, 1.0])
            .unwrap_err()
            .to_string();
        assert!(msg.contains("mean"), "{msg}");
        let msg = cells
            .expected_improvement([0.0, 0.0], [-1.0, 1.0])
            .unwrap_err()
            .to_string();
        assert!(msg.contains("sd"), "{msg}");
        assert!(cells.hvpoi([0.0, 0.0], [f64::INFINITY, 1.0]).is_err());
        assert!(cells.improvement([0.0, f64::INFINITY]).is_err());
        // Finite but absurdly far apart: an error, never inf or NaN.
        let huge = ImprovementCells::new(&[], [1e308, 1e308]).unwrap();
        assert!(huge.improvement([-1e308, -1e308]).is_err());
        assert!(huge
            .expected_improvement([-1e308, -1e308], [1.0, 1.0])
            .is_err());
        assert!(ImprovementCells::new(&SPEC_FRONT, [f64::NAN, 3.0]).is_err());
        assert!(ImprovementCells::new(&[[f64::NEG_INFINITY, 0.0]], [3.0, 3.0]).is_err());
        assert!(Reference::Fixed([1.0, f64::INFINITY])
            .resolve(&SPEC_FRONT)
            .is_err());
        assert_eq!(cells.corners(), SPEC_FRONT.to_vec());
    }
}
