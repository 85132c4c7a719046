//! Privacy audits by attack: run a whole tuner many times on each side of the canary pair
//! ([`crate::workloads::canary`]), try to tell the sides apart from what it released, and turn
//! the error rates of the best test into a lower bound on ε that holds with 95% confidence.
//!
//! If a tuner is (ε, δ)-DP, every event S of its output has P₁(S) ≤ e^ε·P₀(S) + δ and the same
//! with the sides swapped. For the test "say *with* when the statistic is above t" (or, for a
//! statistic the canary lowers, below t), with false-positive rate α = P₀(S) and false-negative
//! rate β = P₁(Sᶜ), this gives ε ≥ ln((1 − δ − β)/α) and ε ≥ ln((1 − δ − α)/β).
//! α and β are replaced by Clopper–Pearson upper bounds, each at level 1 − γ/2, so that the
//! lower bound is valid with probability ≥ 1 − γ (a union bound). The test (statistic and
//! threshold) is chosen on separate calibration runs, so the evaluation runs see one fixed test.
//!
//! The statistics are functions of the released output alone: the released score (−∞ when
//! none, e.g. K = 0) and the chosen point's first coordinate (−1 when none). The lower bound
//! must never exceed the tuner's guarantee; a tuner that does is misaccounted.

use crate::accounting::Accountant;
use crate::error::{Error, Range, Result};
pub use crate::numeric::stats::clopper_pearson_upper;
use crate::rng::stream;
use crate::tuners::{Guarantee, Outcome, Tuner};
use crate::workloads::canary::{Canary, Side};
use crate::workloads::Declarations;
use rayon::prelude::*;

/// Stream tag of audit runs ("adit").
const TAG: u64 = 0x6164_6974;

/// How many runs and how sure.
#[derive(Clone, Debug, PartialEq)]
pub struct AuditSettings {
    /// Runs per side whose error rates give the bound.
    pub trials: usize,
    /// Runs per side, before those, that choose the test.
    pub calibration: usize,
    /// 1 − γ: the probability that the bound holds.
    pub confidence: f64,
    /// The δ of the claimed guarantee and of the bound.
    pub delta: f64,
    pub seed: u64,
}

/// A function of the released output that a test thresholds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Statistic {
    /// The released score; −∞ when none was released.
    Score,
    /// The chosen point's first coordinate; −1 when none was chosen.
    ChosenCoordinate,
}

impl Statistic {
    pub const ALL: [Statistic; 2] = [Statistic::Score, Statistic::ChosenCoordinate];

    pub fn name(self) -> &'static str {
        match self {
            Statistic::Score => "released score",
            Statistic::ChosenCoordinate => "chosen θ₁",
        }
    }

    fn of(self, out: &Outcome) -> f64 {
        match self {
            Statistic::Score => out.released_score.unwrap_or(f64::NEG_INFINITY),
            Statistic::ChosenCoordinate => out.chosen.as_ref().map_or(-1.0, |c| c[0]),
        }
    }
}

/// The outcome of one audit.
#[derive(Clone, Debug, PartialEq)]
pub struct Audit {
    pub claimed: Guarantee,
    /// The empirical lower bound on ε at the claimed δ (0 when the test tells nothing).
    pub lower: f64,
    pub statistic: Statistic,
    /// Whether the test says "with the canary" when the statistic is above the threshold
    /// (`true`) or below it.
    pub high: bool,
    pub threshold: f64,
    /// Evaluation runs per side, and the test's errors among them.
    pub trials: usize,
    pub false_positives: usize,
    pub false_negatives: usize,
}

impl Audit {
    /// Whether the attack proves the claimed guarantee wrong.
    pub fn breached(&self) -> bool {
        self.lower > self.claimed.epsilon
    }
}

/// The lower bound on ε from upper bounds on a test's false-positive and false-negative rates
/// (0 when they prove nothing).
pub fn epsilon_lower_bound(fp_upper: f64, fn_upper: f64, delta: f64) -> f64 {
    let one_way = |miss: f64, false_alarm: f64| {
        let num = 1.0 - delta - miss;
        if num > 0.0 && false_alarm > 0.0 {
            libm::log(num / false_alarm)
        } else {
            0.0
        }
    };
    one_way(fn_upper, fp_upper)
        .max(one_way(fp_upper, fn_upper))
        .max(0.0)
}

/// The error counts of the test "value > t" on the two sides' values.
fn errors(without: &[f64], with: &[f64], t: f64) -> (usize, usize) {
    (
        without.iter().filter(|&&v| v > t).count(),
        with.iter().filter(|&&v| v <= t).count(),
    )
}

/// The bound a test's error counts give (each rate bounded at level 1 − γ/2).
fn bound_of(fp: usize, fneg: usize, n: usize, gamma: f64, delta: f64) -> Result<f64> {
    Ok(epsilon_lower_bound(
        clopper_pearson_upper(fp, n, gamma / 2.0)?,
        clopper_pearson_upper(fneg, n, gamma / 2.0)?,
        delta,
    ))
}

/// Thresholds to try: each side's values at ranks 1, 2, 3, 4, 5, 7, … (×1.25) from both ends,
/// so that the tails, where the best tests are, are tried finely.
fn candidate_thresholds(without: &[f64], with: &[f64]) -> Vec<f64> {
    let mut out = Vec::new();
    for side in [without, with] {
        let mut v: Vec<f64> = side.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let mut r = 1.0_f64;
        while (r as usize) < n {
            let i = r as usize;
            out.push(v[i - 1]);
            out.push(v[n - i]);
            r = (r * 1.25).max(r + 1.0);
        }
    }
    out.retain(|t| t.is_finite() || *t == f64::NEG_INFINITY);
    out.sort_by(f64::total_cmp);
    out.dedup();
    out
}

/// `tuner`'s output statistics on `side`, runs `first..first + n` (each its own stream).
fn outputs(
    tuner: &dyn Tuner,
    canary: &Canary,
    side: Side,
    first: usize,
    n: usize,
    seed: u64,
) -> Result<Vec<[f64; 2]>> {
    let side_key = match side {
        Side::Without => 0,
        Side::With => 1,
    };
    (first..first + n)
        .into_par_iter()
        .map(|t| {
            let out = tuner.tune(canary, &mut stream(seed, &[TAG, side_key, t as u64]))?;
            Ok(Statistic::ALL.map(|s| s.of(&out)))
        })
        .collect()
}

/// Audits `tuner` on the canary pair: its claimed guarantee (from the declarations alone) and
/// the lower bound the best calibrated test proves.
pub fn audit(
    tuner: &dyn Tuner,
    pair: [&Canary; 2],
    settings: &AuditSettings,
    accountant: &Accountant,
) -> Result<Audit> {
    let [without, with] = pair;
    let confidence = Range::OpenUnit.check("confidence", settings.confidence)?;
    let gamma = 1.0 - confidence;
    if settings.trials == 0 || settings.calibration == 0 {
        return Err(Error::invalid(
            "trials, calibration",
            format!("{}, {}", settings.trials, settings.calibration),
            "integers >= 1",
        ));
    }
    let claimed = tuner.guarantee(&Declarations::of(without), settings.delta, accountant)?;
    let (cal, n, seed) = (settings.calibration, settings.trials, settings.seed);
    // Choose the test on the calibration runs.
    let (c0, c1) = (
        outputs(tuner, without, Side::Without, 0, cal, seed)?,
        outputs(tuner, with, Side::With, 0, cal, seed)?,
    );
    // A statistic the canary lowers is tested as its negation ("−v > −t" is "v < t").
    let column = |rows: &[[f64; 2]], s: usize, high: bool| -> Vec<f64> {
        rows.iter()
            .map(|r| if high { r[s] } else { -r[s] })
            .collect()
    };
    let mut best: Option<(f64, usize, bool, f64)> = None;
    for s in 0..Statistic::ALL.len() {
        for high in [true, false] {
            let (a, b) = (column(&c0, s, high), column(&c1, s, high));
            for t in candidate_thresholds(&a, &b) {
                let (fp, fneg) = errors(&a, &b, t);
                let bound = bound_of(fp, fneg, cal, gamma, settings.delta)?;
                if best.is_none_or(|(x, ..)| bound > x) {
                    best = Some((bound, s, high, t));
                }
            }
        }
    }
    let (_, s, high, t) = best.unwrap_or((0.0, 0, true, f64::NEG_INFINITY));
    // Evaluate it on fresh runs.
    let (e0, e1) = (
        outputs(tuner, without, Side::Without, cal, n, seed)?,
        outputs(tuner, with, Side::With, cal, n, seed)?,
    );
    let (fp, fneg) = errors(&column(&e0, s, high), &column(&e1, s, high), t);
    Ok(Audit {
        lower: bound_of(fp, fneg, n, gamma, settings.delta)?,
        claimed,
        statistic: Statistic::ALL[s],
        high,
        threshold: if high { t } else { -t },
        trials: n,
        false_positives: fp,
        false_negatives: fneg,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// P(Bin(n, p) ≤ k) by direct summation (small n).
    fn binomial_cdf(k: usize, n: usize, p: f64) -> f64 {
        let mut total = 0.0;
        let mut coeff = 1.0_f64; // C(n, i)
        for i in 0..=k {
            if i > 0 {
                coeff *= (n - i + 1) as f64 / i as f64;
            }
            total += coeff * p.powi(i as i32) * (1.0 - p).powi((n - i) as i32);
        }
        total
    }

    #[test]
    fn clopper_pearson_matches_the_binomial_tail_it_inverts() {
        for (k, n, gamma) in [
            (0, 10, 0.025),
            (3, 20, 0.025),
            (7, 30, 0.05),
            (29, 30, 0.01),
        ] {
            let p = clopper_pearson_upper(k, n, gamma).unwrap();
            let tail = binomial_cdf(k, n, p);
            assert!((tail - gamma).abs() < 1e-9, "k={k} n={n}: {tail}");
            // Upper side: at p the tail is at most γ (the bound is not too small).
            assert!(tail <= gamma + 1e-12);
        }
        // k = 0 has the closed form 1 − γ^(1/n).
        let p = clopper_pearson_upper(0, 1000, 0.025).unwrap();
        assert!(
            (p - (1.0 - libm::pow(0.025_f64, 1e-3))).abs() < 1e-12,
            "{p}"
        );
        assert_eq!(clopper_pearson_upper(5, 5, 0.05).unwrap(), 1.0);
        for bad in [
            clopper_pearson_upper(3, 2, 0.05),
            clopper_pearson_upper(0, 0, 0.05),
            clopper_pearson_upper(1, 2, 1.0),
        ] {
            assert!(bad.is_err());
        }
    }

    #[test]
    fn the_bound_is_the_hypothesis_testing_inequality() {
        // A perfect test with exact rates would prove ε ≥ ln((1 − δ − β)/α).
        let b = epsilon_lower_bound(0.01, 0.5, 1e-5);
        assert!((b - libm::log((0.5 - 1e-5) / 0.01_f64)).abs() < 1e-12);
        // Symmetric in which error is which; nothing proved by a coin flip.
        assert_eq!(b, epsilon_lower_bound(0.5, 0.01, 1e-5));
        assert_eq!(epsilon_lower_bound(0.5, 0.5, 1e-5), 0.0);
        assert_eq!(epsilon_lower_bound(1.0, 1.0, 1e-5), 0.0);
    }

    #[test]
    fn thresholds_cover_both_tails_of_both_sides() {
        let a: Vec<f64> = (0..100).map(f64::from).collect();
        let b: Vec<f64> = (50..150).map(f64::from).collect();
        let t = candidate_thresholds(&a, &b);
        for want in [0.0, 99.0, 50.0, 149.0, 98.0, 51.0] {
            assert!(t.contains(&want), "{want} missing from {t:?}");
        }
        assert!(t.windows(2).all(|w| w[0] < w[1]));
    }
}
