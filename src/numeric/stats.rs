//! Confidence intervals that hold at their n: Student's t for a mean (and for paired
//! differences, the mean of the differences), Welch's t for two independent samples,
//! Clopper–Pearson for a rate. Every interval is two-sided at 95% unless its name says
//! otherwise; none is the normal 1.96·sd/√n, which at n = 3 is 2.2 times too narrow.
//! Checked against scipy in `tests/suite/stats_fixture.rs` (fixture by `tools/make_stats_fixture.py`).

use super::bisect_bracket;
use super::student_t::{incomplete_beta, student_t_quantile, student_t_two_sided_p};
use crate::error::{Error, Range, Result};

/// What the tables' "±" means, for their captions.
pub const MEAN_INTERVAL: &str = "95% Student-t interval, n − 1 degrees of freedom";

/// The sample mean (None for no values).
pub fn mean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

/// The unbiased sample variance (None below two values).
pub fn variance(xs: &[f64]) -> Option<f64> {
    let m = mean(xs)?;
    (xs.len() > 1).then(|| xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() - 1) as f64)
}

/// The 0.975 quantile of t(df), cached for the small integer df that tables use.
fn t975(df: f64) -> f64 {
    // df ≥ 1 always here (n ≥ 2, or Welch's df ≥ min(n) − 1 ≥ 1); the quantile cannot fail.
    student_t_quantile(0.975, df).unwrap_or(f64::INFINITY)
}

/// The mean and the half-width of its two-sided 95% Student-t interval (df = n − 1); no
/// interval from fewer than two values (one repetition has no spread to show, and "± 0"
/// would claim one).
pub fn mean_interval(xs: &[f64]) -> (f64, Option<f64>) {
    let m = mean(xs).unwrap_or(f64::NAN);
    match variance(xs) {
        Some(v) => {
            let n = xs.len() as f64;
            (m, Some(t975(n - 1.0) * (v / n).sqrt()))
        }
        None => (m, None),
    }
}

/// A t-interval for a mean (or a difference of means) with the two-sided test of 0.
#[derive(Clone, Debug, PartialEq)]
pub struct TTest {
    pub estimate: f64,
    /// The 95% interval; None where the values have no spread (or too few values).
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    pub t: Option<f64>,
    pub df: f64,
    /// Two-sided p-value of "the mean is 0".
    pub p: Option<f64>,
}

fn t_test(estimate: f64, se2: f64, df: f64) -> Result<TTest> {
    if se2 > 0.0 && df >= 1.0 {
        let se = se2.sqrt();
        let q = student_t_quantile(0.975, df)?;
        let t = estimate / se;
        Ok(TTest {
            estimate,
            lo: Some(estimate - q * se),
            hi: Some(estimate + q * se),
            t: Some(t),
            df,
            p: Some(student_t_two_sided_p(t, df)?),
        })
    } else {
        Ok(TTest {
            estimate,
            lo: None,
            hi: None,
            t: None,
            df,
            p: None,
        })
    }
}

/// One-sample t: the mean of `d` with its 95% interval and the test of mean 0.
pub fn one_sample_t(d: &[f64]) -> Result<TTest> {
    let m = mean(d).ok_or_else(|| Error::invalid("values", 0, "at least one value"))?;
    let n = d.len() as f64;
    t_test(m, variance(d).map_or(0.0, |v| v / n), n - 1.0)
}

/// Paired t: the mean of a − b over pairs, with its 95% interval (the differences' own spread,
/// so what a and b share cancels).
pub fn paired_t(a: &[f64], b: &[f64]) -> Result<TTest> {
    if a.len() != b.len() {
        return Err(Error::invalid(
            "pairs",
            format!("{} and {} values", a.len(), b.len()),
            "as many values in each sample",
        ));
    }
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    one_sample_t(&d)
}

/// Welch's t for mean(a) − mean(b) from two independent samples (unequal variances;
/// Welch–Satterthwaite df). None below two values in either sample.
pub fn welch_t(a: &[f64], b: &[f64]) -> Result<Option<TTest>> {
    let (Some(va), Some(vb)) = (variance(a), variance(b)) else {
        return Ok(None);
    };
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (sa, sb) = (va / na, vb / nb);
    let estimate = mean(a).unwrap_or(0.0) - mean(b).unwrap_or(0.0);
    let df = if sa + sb > 0.0 {
        (sa + sb).powi(2) / (sa * sa / (na - 1.0) + sb * sb / (nb - 1.0))
    } else {
        na + nb - 2.0
    };
    t_test(estimate, sa + sb, df).map(Some)
}

/// The mean of values grouped in blocks that share a random effect, with a 95% interval for
/// the quantity the blocks estimate, not just for their average: the tabular benchmark's
/// searches, each replayed on one of B bootstrap tables (`block`), so that the interval holds
/// the table's own randomness (which no number of searches averages away) as well as the
/// searches'. With block means m_b (each of R values), the table's variance σ²_T and the
/// searches' s²_w, the estimate's error has variance σ²_T (one table's) + (σ²_T + s²_w/R)/B
/// (averaging B of them), at most (1 + 1/B)·E[V] for V the variance of the block means
/// (E[V] = σ²_T + s²_w/R). So
///
///   SE² = (1 + 1/B) · V  on B − 1 degrees of freedom,
///
/// a t interval that never covers less than its level (at most s²_w/R too wide) and is
/// continuous in the data. Subtracting the searches' part out (σ²_T = V − s²_w/R) would be
/// narrower, but where σ²_T is near 0 its Satterthwaite df collapses to 1 on one side of
/// V = s²_w/R and the interval jumps tenfold between neighbouring cells. Values are
/// `(block, value)`; at least two blocks.
pub fn blocked_t(values: &[(u64, f64)]) -> Result<TTest> {
    let mut blocks: std::collections::BTreeMap<u64, Vec<f64>> = Default::default();
    for &(b, v) in values {
        blocks.entry(b).or_default().push(v);
    }
    let nb = blocks.len();
    if nb < 2 {
        return Err(Error::invalid(
            "blocks",
            nb,
            "at least two blocks (bootstrap tables): their spread is the table's randomness",
        ));
    }
    let estimate = values.iter().map(|v| v.1).sum::<f64>() / values.len() as f64;
    let means: Vec<f64> = blocks.values().map(|v| mean(v).unwrap_or(0.0)).collect();
    let between = variance(&means).unwrap_or(0.0);
    let b = nb as f64;
    t_test(estimate, between * (1.0 + 1.0 / b), b - 1.0)
}

/// What [`blocked_t`]'s interval covers, for captions.
pub const BLOCKED_INTERVAL: &str = "95% interval over the bootstrap tables and the searches \
    (SE² = (1 + 1/B)·V, V the variance of the tables' means, on B − 1 df: it holds the \
    table's own randomness)";

/// The Clopper–Pearson upper bound on a rate from `k` events in `n` trials at level 1 − γ
/// (one-sided): the p with P(Bin(n, p) ≤ k) = γ, the (1 − γ) quantile of Beta(k + 1, n − k);
/// 1 when k = n. Found by bisection on I_p and returned from above (never below the quantile
/// of the computed I_p, which is accurate to about 1e-13).
pub fn clopper_pearson_upper(k: usize, n: usize, gamma: f64) -> Result<f64> {
    check_counts(k, n)?;
    let gamma = Range::OpenUnit.check("gamma", gamma)?;
    if k == n {
        return Ok(1.0);
    }
    let (a, b) = ((k + 1) as f64, (n - k) as f64);
    // I_p(a, b) = P(Bin(n, p) ≥ k + 1) rises with p; find where it reaches 1 − γ, down to
    // adjacent doubles (tolerance 0), and keep the end where it holds.
    Ok(bisect_bracket(|p| incomplete_beta(a, b, p) >= 1.0 - gamma, 0.0, 1.0, 0.0).1)
}

/// The Clopper–Pearson lower bound at level 1 − γ (one-sided): the γ quantile of
/// Beta(k, n − k + 1); 0 when k = 0. Returned from below (as the upper bound from above).
pub fn clopper_pearson_lower(k: usize, n: usize, gamma: f64) -> Result<f64> {
    check_counts(k, n)?;
    let gamma = Range::OpenUnit.check("gamma", gamma)?;
    if k == 0 {
        return Ok(0.0);
    }
    let (a, b) = (k as f64, (n - k + 1) as f64);
    // Where I_p(k, n − k + 1) reaches γ, down to adjacent doubles; the end where it does
    // not yet hold is below the quantile.
    Ok(bisect_bracket(|p| incomplete_beta(a, b, p) >= gamma, 0.0, 1.0, 0.0).0)
}

/// The two-sided 95% Clopper–Pearson interval on a rate (2.5% in each tail).
pub fn clopper_pearson(k: usize, n: usize) -> Result<(f64, f64)> {
    Ok((
        clopper_pearson_lower(k, n, 0.025)?,
        clopper_pearson_upper(k, n, 0.025)?,
    ))
}

fn check_counts(k: usize, n: usize) -> Result<()> {
    if n == 0 || k > n {
        return Err(Error::invalid(
            "k, n",
            format!("{k}, {n}"),
            "0 <= k <= n and n >= 1",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_tests_match_hand_computations() {
        // d = (1, 2, 3): mean 2, sd 1, se 1/√3, t = 2√3, df 2; t(2) CDF in closed form.
        let r = one_sample_t(&[1.0, 2.0, 3.0]).unwrap();
        let t_want = 2.0 * 3f64.sqrt();
        assert_eq!((r.estimate, r.df), (2.0, 2.0));
        assert!((r.t.unwrap() - t_want).abs() < 1e-12);
        let cdf = 0.5 + t_want / (2.0 * (t_want * t_want + 2.0).sqrt());
        assert!((r.p.unwrap() - 2.0 * (1.0 - cdf)).abs() < 1e-12);
        // t(2) 0.975 quantile = 4.302653 (tables).
        assert!((r.hi.unwrap() - (2.0 + 4.302653 / 3f64.sqrt())).abs() < 1e-5);
        assert!((r.lo.unwrap() - (2.0 - 4.302653 / 3f64.sqrt())).abs() < 1e-5);
        // No spread: no interval, never NaN.
        assert_eq!(one_sample_t(&[1.0, 1.0]).unwrap().t, None);
        // Welch with equal variances and sizes: df = 2(n − 1).
        let w = welch_t(&[1.0, 2.0, 3.0], &[2.0, 3.0, 4.0])
            .unwrap()
            .unwrap();
        assert!((w.estimate + 1.0).abs() < 1e-12 && (w.df - 4.0).abs() < 1e-12);
        // Paired: the shared shift cancels.
        let p = paired_t(&[1.0, 5.0, 9.0], &[0.0, 4.1, 7.9]).unwrap();
        // Differences 1, 0.9, 1.1: mean 1, sd 0.1.
        assert!((p.estimate - 1.0).abs() < 1e-12);
        assert!((p.hi.unwrap() - p.estimate - 4.302653 * 0.1 / 3f64.sqrt()).abs() < 1e-6);
        assert!(paired_t(&[1.0], &[1.0, 2.0]).is_err());
    }

    /// The blocked interval by hand, and its coverage where blocks share a random effect
    /// (the table's): at least 95% whether that effect is large or next to nothing, where the
    /// plain t interval over every value, which treats the searches as independent, covers
    /// far less.
    #[test]
    fn the_blocked_interval_holds_the_blocks_effect() {
        // Blocks {1, 3} and {5, 7}: means 2 and 6, V = 8, SE² = 8 · 1.5 = 12 on 1 df
        // (t 12.706205); the spread within blocks does not enter.
        let r = blocked_t(&[(0, 1.0), (0, 3.0), (1, 5.0), (1, 7.0)]).unwrap();
        assert_eq!((r.estimate, r.df), (4.0, 1.0));
        assert!((r.hi.unwrap() - (4.0 + 12.706_204_736 * 12f64.sqrt())).abs() < 1e-6);
        let one = blocked_t(&[(0, 2.0), (1, 6.0)]).unwrap();
        assert_eq!((one.lo, one.hi), (r.lo, r.hi));
        // Three blocks of means 1, 2, 6 (V = 7): SE² = 7 · 4/3 on 2 df (t 4.302653).
        let r = blocked_t(&[(0, 0.0), (0, 2.0), (1, 2.0), (2, 5.0), (2, 7.0)]).unwrap();
        assert_eq!(r.df, 2.0);
        assert!((r.hi.unwrap() - r.estimate - 4.302_652_730 * (28f64 / 3.0).sqrt()).abs() < 1e-6);
        assert!(blocked_t(&[(3, 1.0), (3, 2.0)]).is_err());
        // y = τ + δ_b + ε: the real table's effect τ ~ N(0, s²), each bootstrap table's δ_b ~
        // N(0, s²), each search's ε ~ N(0, 2²); B = 10 tables of R = 5 searches; truth 0. At
        // s = 1 the tables dominate; at s = 0.1 their effect is next to nothing (V close to
        // s²_w/R, where subtracting the searches' part out made the interval jump).
        let mut rng = crate::rng::stream(64, &[]);
        for s in [1.0, 0.1] {
            let (mut blocked, mut plain) = (0, 0);
            let reps = 2000;
            for _ in 0..reps {
                let tau = s * crate::rng::normal(&mut rng);
                let mut values = Vec::new();
                for b in 0..10u64 {
                    let delta = s * crate::rng::normal(&mut rng);
                    for _ in 0..5 {
                        values.push((b, tau + delta + 2.0 * crate::rng::normal(&mut rng)));
                    }
                }
                let r = blocked_t(&values).unwrap();
                blocked += usize::from(r.lo.unwrap() <= 0.0 && 0.0 <= r.hi.unwrap());
                let all: Vec<f64> = values.iter().map(|v| v.1).collect();
                let t = one_sample_t(&all).unwrap();
                plain += usize::from(t.lo.unwrap() <= 0.0 && 0.0 <= t.hi.unwrap());
            }
            let (blocked, plain) = (blocked as f64 / reps as f64, plain as f64 / reps as f64);
            assert!(blocked >= 0.94, "s = {s}: blocked coverage {blocked}");
            if s == 1.0 {
                assert!(plain < 0.7, "plain coverage {plain}");
            }
        }
    }

    #[test]
    fn the_mean_interval_is_t_not_normal() {
        // n = 2: t(1) 0.975 quantile 12.706205, sd √2, half-width 12.706205 · 1.
        let (m, h) = mean_interval(&[1.0, 3.0]);
        assert_eq!(m, 2.0);
        assert!((h.unwrap() - 12.706_204_736).abs() < 1e-6, "{h:?}");
        assert_eq!(mean_interval(&[4.0]), (4.0, None));
    }

    #[test]
    fn clopper_pearson_inverts_the_binomial_tail() {
        // k = 0: upper = 1 − γ^{1/n}; k = n: lower = γ^{1/n}.
        let u = clopper_pearson_upper(0, 10, 0.025).unwrap();
        assert!((u - (1.0 - libm::pow(0.025f64, 0.1))).abs() < 1e-12, "{u}");
        let l = clopper_pearson_lower(10, 10, 0.025).unwrap();
        assert!((l - libm::pow(0.025f64, 0.1)).abs() < 1e-12, "{l}");
        assert_eq!(clopper_pearson(0, 5).unwrap().0, 0.0);
        assert_eq!(clopper_pearson(5, 5).unwrap().1, 1.0);
        assert!(clopper_pearson(3, 2).is_err() && clopper_pearson(0, 0).is_err());
    }
}
