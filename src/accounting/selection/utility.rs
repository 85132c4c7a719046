//! What repeat-and-select buys (spec 000 §5(c); the paper's §3.6): the chance of trying the one good
//! setting, the expected quantile of the best score, the expected best score, and tails of K.

use crate::accounting::selection::count::{CountLaw, RunCount};
use crate::error::{Error, Result};
use crate::numeric::golden_min;

/// P[the best of K runs tries the one good setting among m] = 1 − f(1 − 1/m).
pub fn success_probability(law: &RunCount, m: u64) -> Result<f64> {
    if m == 0 {
        return Err(Error::invalid("m", 0, "an integer >= 1"));
    }
    Ok(law.one_minus_pgf(1.0 - 1.0 / m as f64))
}

/// 1 − E[1/(K+1)]: the expected quantile of the best of K continuous scores (spec 000 §5(c)
/// closed forms; truncated laws sum their finite pmf).
pub fn expected_quantile(law: &RunCount) -> f64 {
    1.0 - expected_inverse_k_plus_1(law)
}

fn expected_inverse_k_plus_1(law: &RunCount) -> f64 {
    match law {
        RunCount::Tnb(t) => {
            let (eta, u) = (t.eta(), t.ln_inv_gamma());
            let gamma = t.gamma();
            let one_m_gamma = -libm::expm1(-u);
            if eta == 0.0 {
                1.0 / u - gamma / one_m_gamma
            } else if eta == 1.0 {
                gamma * (u - 1.0 + gamma) / (one_m_gamma * one_m_gamma)
            } else {
                // [(1 − γ^{1−η})/((1−γ)(1−η)) − 1]/(γ^{−η} − 1), with γ^a = e^{−au}.
                let a = -libm::expm1(-(1.0 - eta) * u) / (one_m_gamma * (1.0 - eta));
                (a - 1.0) / libm::expm1(eta * u)
            }
        }
        RunCount::Poisson(p) => -libm::expm1(-p.mu()) / p.mu(),
        RunCount::Fixed(k) => 1.0 / (k.k() as f64 + 1.0),
        RunCount::Truncated(t) => (0..=t.m()).map(|k| law.pmf(k) / (k as f64 + 1.0)).sum(),
    }
}

/// E[best of K scores] when one run's score is drawn from the empirical distribution of
/// `scores` (higher is better): P[Y ≤ y] = f(F(y)); K = 0 (Poisson) yields `default`.
pub fn expected_best(law: &RunCount, scores: &[f64], default: f64) -> Result<f64> {
    if scores.is_empty() {
        return Err(Error::invalid(
            "scores",
            "[]",
            "a non-empty list of finite scores",
        ));
    }
    if let Some(bad) = scores.iter().find(|s| !s.is_finite()) {
        return Err(Error::invalid("scores", bad, "finite numbers"));
    }
    let mut sorted = scores.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len() as f64;
    let mut previous = law.pgf(0.0);
    let mut total = previous * default;
    for (i, &x) in sorted.iter().enumerate() {
        let f = law.pgf((i as f64 + 1.0) / n);
        total += x * (f - previous);
        previous = f;
    }
    Ok(total)
}

/// The Chernoff bound P[K ≥ k] ≤ inf_{t>0} f(e^t)·e^{−tk} (≤ 1), minimised numerically in t
/// over the range where the pgf converges.
pub fn tail_bound(law: &RunCount, k: u64) -> Result<f64> {
    if k == 0 {
        return Err(Error::invalid("k", 0, "an integer >= 1"));
    }
    let t_max = match law {
        RunCount::Tnb(t) => -libm::log(-libm::expm1(-t.ln_inv_gamma())) * (1.0 - 1e-9),
        RunCount::Truncated(t) if matches!(t.inner(), RunCount::Tnb(_)) => 50.0,
        _ => 50.0,
    };
    let kf = k as f64;
    let objective = |t: f64| libm::log(law.pgf(libm::exp(t))) - t * kf;
    let (_, log_bound) = golden_min(objective, 0.0, t_max, 1e-12);
    Ok(libm::exp(log_bound).min(1.0))
}
