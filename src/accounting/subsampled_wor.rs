//! The Gaussian mechanism run on a lot of fixed size m drawn uniformly **without replacement**
//! from n examples (sampling rate q = m/n), under replace-one neighbours (data sets of the same
//! size n that differ in one example): Wang–Balle–Kasiviswanathan 2019, Theorem 9, as spec 001
//! §6.1 states it. A leaf module (it imports nothing of `accounting`), so the curve type in
//! [`super::rdp`] and [`super::mechanisms::DpSgd`] both build on it without an import circle.
//!
//! The base mechanism is the Gaussian with ε(α) = α/(2σ²): σ is the noise standard deviation
//! divided by the replace-one ℓ2-sensitivity of the released sum (2C for per-example gradients
//! clipped to norm C; spec 001 §3.2 adds (2L/m)·N(0, σ²I) to the mean). For integer α ≥ 2,
//!
//! S = 1 + q²·C(α,2)·min(4(e^{ε(2)} − 1), 2e^{ε(2)}) + Σ_{j=3..α} 2·q^j·C(α,j)·e^{(j−1)ε(j)},
//! RDP(α) = min(ε(α), ln S/(α − 1)),
//!
//! with S summed in log space. The theorem holds at integer orders only. At a real order α > 1
//! that is not an integer we use bounds that hold for every pair of neighbouring inputs P, Q,
//! hence for the worst pair (van Erven–Harremoës 2014):
//! * D_α is non-decreasing in α (their Thm. 3), so RDP(⌈α⌉) bounds D_α;
//! * (α − 1)·D_α is convex in α (their Cor. 2), so with a = ⌊α⌋ ≥ 2 and t = α − a,
//!   (α − 1)·D_α ≤ (1 − t)(a − 1)·RDP(a) + t·a·RDP(a + 1) (the interpolation autodp uses);
//! * the unsubsampled Gaussian's α/(2σ²) holds at every order.
//!
//! The least of the three is returned (for α < 2 that is RDP(2) or the Gaussian). The theorem's
//! values are not always non-decreasing in α (e.g. q = 0.05, σ = 16 near α = 97 they dip by a
//! relative 3e-5), so the curve does not claim to be monotone.

use super::divergence::gaussian_rdp;
use crate::error::{Error, Range, Result};
use crate::numeric::LogSumExp;
use std::f64::consts::LN_2;

/// Orders above this use the unsubsampled Gaussian bound α/(2σ²), which is valid at every order
/// (subsampling never increases the divergence), so no series of more than this many terms is
/// summed.
pub const MAX_SERIES_ORDER: u64 = 65_536;

/// One step: the Gaussian mechanism (noise multiplier σ relative to the replace-one
/// sensitivity) on a lot drawn without replacement with sampling rate q = m/n.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WorSubsampledGaussian {
    sampling_rate: f64,
    noise_multiplier: f64,
}

impl WorSubsampledGaussian {
    /// q in (0, 1], σ > 0 (finite).
    pub fn new(sampling_rate: f64, noise_multiplier: f64) -> Result<Self> {
        Ok(WorSubsampledGaussian {
            sampling_rate: Range::UnitExcludingZero.check("sampling_rate", sampling_rate)?,
            noise_multiplier: Range::Positive.check("noise_multiplier", noise_multiplier)?,
        })
    }

    /// Lots of `lot_size` = m of `data_size` = n examples: q = m/n (1 ≤ m ≤ n).
    pub fn from_sizes(data_size: u64, lot_size: u64, noise_multiplier: f64) -> Result<Self> {
        check_sizes(data_size, lot_size)?;
        Self::new(lot_size as f64 / data_size as f64, noise_multiplier)
    }

    pub fn sampling_rate(&self) -> f64 {
        self.sampling_rate
    }
    pub fn noise_multiplier(&self) -> f64 {
        self.noise_multiplier
    }

    /// Theorem 9 at an integer order α ≥ 2 (given as a number, e.g. `8.0`): exactly the spec's
    /// RDP(α). A fractional order, or one below 2, is an error (use [`Self::rdp_bound`]).
    pub fn rdp(&self, order: f64) -> Result<f64> {
        if !(order >= 2.0 && order.fract() == 0.0 && order.is_finite()) {
            return Err(Error::invalid(
                "order",
                crate::error::fmt_num(order),
                "an integer >= 2 (Wang–Balle–Kasiviswanathan Thm. 9 holds at integer orders)",
            ));
        }
        Ok(wor_subsampled_gaussian_rdp(
            self.sampling_rate,
            self.noise_multiplier,
            order,
        ))
    }

    /// A valid RDP bound at any real order α > 1 (see the module documentation): Theorem 9 at
    /// integer orders, the interpolated / next-integer / Gaussian bound between them.
    pub fn rdp_bound(&self, order: f64) -> Result<f64> {
        let order = Range::Order.check("order", order)?;
        Ok(wor_subsampled_gaussian_rdp(
            self.sampling_rate,
            self.noise_multiplier,
            order,
        ))
    }
}

/// The RDP bound at order α > 1 of one step (q in (0, 1], σ > 0): Theorem 9 at integer orders
/// up to [`MAX_SERIES_ORDER`], the bounds of the module documentation elsewhere. Never above the
/// unsubsampled Gaussian α/(2σ²); exactly it at q = 1.
pub fn wor_subsampled_gaussian_rdp(q: f64, sigma: f64, order: f64) -> f64 {
    let gaussian = gaussian_rdp(sigma, order);
    if q >= 1.0 || order > MAX_SERIES_ORDER as f64 {
        return gaussian;
    }
    if order < 2.0 {
        return theorem9(q, sigma, 2).min(gaussian);
    }
    if order.fract() == 0.0 {
        return theorem9(q, sigma, order as u64);
    }
    let a = order.floor();
    let t = order - a;
    let at_floor = theorem9(q, sigma, a as u64);
    let at_ceil = theorem9(q, sigma, a as u64 + 1);
    let interpolated = ((1.0 - t) * (a - 1.0) * at_floor + t * a * at_ceil) / (order - 1.0);
    interpolated.min(at_ceil).min(gaussian)
}

/// min(ε(α), ln S/(α − 1)) for integer α ≥ 2, 0 < q < 1: S summed in log space (every term is
/// a logarithm; the leading 1 is kept apart, so ln S = ln(1 + tiny) keeps full precision).
fn theorem9(q: f64, sigma: f64, alpha: u64) -> f64 {
    let inv_two_var = 0.5 / (sigma * sigma);
    let a = alpha as f64;
    let gaussian = gaussian_rdp(sigma, a);
    let ln_q = libm::log(q);
    // j = 2: q²·C(α,2)·min(4(e^{ε(2)} − 1), 2e^{ε(2)}), ε(2) = 1/σ².
    let eps2 = 2.0 * inv_two_var;
    let ln_min = (2.0 * LN_2 + ln_expm1(eps2)).min(LN_2 + eps2);
    let mut sum = LogSumExp::default();
    sum.add(0.0);
    let mut ln_binom = libm::log(a * (a - 1.0) / 2.0); // ln C(α, 2)
    sum.add(2.0 * ln_q + ln_binom + ln_min);
    // j ≥ 3: 2·q^j·C(α,j)·e^{(j−1)·j/(2σ²)}.
    for j in 3..=alpha {
        let fj = j as f64;
        ln_binom += libm::log(a - fj + 1.0) - libm::log(fj);
        sum.add(LN_2 + fj * ln_q + ln_binom + (fj - 1.0) * fj * inv_two_var);
    }
    // S ≥ 1, so ln S ≥ 0; a finite sum for every α ≤ MAX_SERIES_ORDER and σ > 0 (each term's
    // log is at most ~α²/(2σ²), and nothing is exponentiated above the largest term).
    (sum.value() / (a - 1.0)).max(0.0).min(gaussian)
}

/// α/(2σ²), rounded as [`super::mechanisms::Gaussian`] with sensitivity 1 computes it
/// (ρ·α with ρ = (1/σ)²/2), so q = 1 gives exactly its curve.
/// ln(e^x − 1) for x > 0, without overflow for large x.
fn ln_expm1(x: f64) -> f64 {
    if x > 1.0 {
        x + libm::log1p(-libm::exp(-x))
    } else {
        libm::log(libm::expm1(x))
    }
}

/// 1 ≤ m ≤ n.
fn check_sizes(data_size: u64, lot_size: u64) -> Result<()> {
    if data_size == 0 {
        return Err(Error::invalid("data_size", 0, "an integer >= 1"));
    }
    if lot_size == 0 || lot_size > data_size {
        return Err(Error::invalid(
            "lot_size",
            lot_size,
            format!("an integer in [1, data_size = {data_size}]"),
        ));
    }
    Ok(())
}

/// Steps of `epochs` epochs of lots of m = `lot_size` from n = `data_size` examples, spec 001
/// §3.2's convention: T·round(n/m), n/m rounded half up (30956/8 = 3869.5 → 3870). Rejects
/// m = 0, m > n, n = 0, T = 0 and a count beyond u64.
pub fn steps_for_epochs(data_size: u64, lot_size: u64, epochs: u64) -> Result<u64> {
    check_sizes(data_size, lot_size)?;
    if epochs == 0 {
        return Err(Error::invalid("epochs", 0, "an integer >= 1"));
    }
    let (n, m) = (u128::from(data_size), u128::from(lot_size));
    let per_epoch = (2 * n + m) / (2 * m); // ⌊n/m + 1/2⌋, exact
    u64::try_from(per_epoch * u128::from(epochs)).map_err(|_| {
        Error::invalid(
            "epochs",
            epochs,
            format!(
                "at most {} for these sizes (the step count must fit in 64 bits)",
                u64::MAX / per_epoch as u64
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spec's formula term by term with plain f64 arithmetic (no logs): an independent
    /// evaluation for small orders.
    fn direct(q: f64, sigma: f64, alpha: u64) -> f64 {
        let eps = |j: f64| j / (2.0 * sigma * sigma);
        let binom = |n: u64, k: u64| (0..k).fold(1.0, |c, i| c * (n - i) as f64 / (i + 1) as f64);
        let e2 = libm::exp(eps(2.0));
        let mut s = 1.0 + q * q * binom(alpha, 2) * (4.0 * (e2 - 1.0)).min(2.0 * e2);
        for j in 3..=alpha {
            let fj = j as f64;
            s += 2.0 * q.powi(j as i32) * binom(alpha, j) * libm::exp((fj - 1.0) * eps(fj));
        }
        eps(alpha as f64).min(libm::log(s) / (alpha as f64 - 1.0))
    }

    #[test]
    fn matches_a_direct_evaluation_at_small_orders() {
        for &(q, sigma) in &[(0.01, 1.0), (256.0 / 30956.0, 1.1), (0.2, 4.0), (0.5, 0.7)] {
            for alpha in 2..=4u64 {
                let ours = wor_subsampled_gaussian_rdp(q, sigma, alpha as f64);
                let theirs = direct(q, sigma, alpha);
                assert!(
                    (ours - theirs).abs() <= 1e-12 * theirs,
                    "q={q} σ={sigma} α={alpha}: {ours} vs {theirs}"
                );
            }
        }
    }

    #[test]
    fn steps_round_half_up() {
        assert_eq!(steps_for_epochs(30956, 256, 10).unwrap(), 1210);
        assert_eq!(steps_for_epochs(30956, 8, 1).unwrap(), 3870);
        assert_eq!(steps_for_epochs(60000, 600, 100).unwrap(), 10000);
        assert_eq!(steps_for_epochs(10, 4, 1).unwrap(), 3); // 2.5 → 3
        assert_eq!(steps_for_epochs(10, 10, 7).unwrap(), 7);
        assert_eq!(steps_for_epochs(u64::MAX, 1, 1).unwrap(), u64::MAX);
        assert!(steps_for_epochs(u64::MAX, 1, 2).is_err());
        for (n, m, t, name) in [
            (10, 0, 1, "lot_size"),
            (10, 11, 1, "lot_size"),
            (0, 0, 1, "data_size"),
            (10, 5, 0, "epochs"),
        ] {
            match steps_for_epochs(n, m, t) {
                Err(Error::InvalidParameter { name: got, .. }) => assert_eq!(got, name),
                other => panic!("({n}, {m}, {t}): {other:?}"),
            }
        }
    }

    #[test]
    fn fractional_orders_are_bounded_by_their_neighbours() {
        let (q, s) = (0.02, 1.3);
        for &order in &[1.5, 2.5, 7.25, 31.9] {
            let v = wor_subsampled_gaussian_rdp(q, s, order);
            let ceil = wor_subsampled_gaussian_rdp(q, s, order.ceil().max(2.0));
            assert!(
                v <= ceil && v <= order / (2.0 * s * s) && v >= 0.0,
                "{order}"
            );
            if order > 2.0 {
                let floor = wor_subsampled_gaussian_rdp(q, s, order.floor());
                assert!(v >= floor, "{order}: {v} < {floor}");
            }
        }
    }
}
