//! Per-order Rényi divergences of the mechanisms, as plain functions of (parameters, order): a
//! leaf module (it imports nothing of `accounting`), so the curve type in [`super::rdp`] and the
//! mechanism structs in [`super::mechanisms`] both build on it without an import circle.

use crate::numeric::{
    div_up, ln_one_minus_exp_neg, log_add, log_erfc, mul_down, LogSumExp, ROUNDING,
};
use std::f64::consts::{LN_2, SQRT_2};
use std::sync::LazyLock;

/// Orders above this use the unsubsampled Gaussian bound λ/(2σ²), which is valid (subsampling
/// never increases Rényi divergence, by joint quasi-convexity) and avoids O(λ) series.
pub(crate) const MAX_SERIES_ORDER: f64 = 65_536.0;

/// λ/(2σ²), the Gaussian mechanism's RDP at sensitivity 1, rounded up (each operation
/// towards +∞: exact where it is exact).
pub fn gaussian_rdp(sigma: f64, order: f64) -> f64 {
    div_up(order, mul_down(2.0 * sigma, sigma))
}

/// RDP at order λ of one step of the Poisson-subsampled Gaussian mechanism (sensitivity 1,
/// noise multiplier σ), as Mironov–Talwar–Zhang (2019) compute it: a finite binomial sum at
/// integer λ (their Sec. 3.2), the two-sided erfc series at fractional λ (Sec. 3.3), both in log
/// space, each raised by a bound on its rounding error. At integer λ the sum is taken as
/// A_λ − 1 = Σ_{i≥2} C(λ,i) q^i (1−q)^{λ−i} (e^{(i²−i)/(2σ²)} − 1), whose terms are all
/// positive, so a divergence far below 1 (tiny q, large σ) keeps its digits instead of
/// vanishing in 1 + tiny; the fractional series follows dp-accounting 0.6.0's terms and
/// stopping rule.
pub fn subsampled_gaussian_rdp(q: f64, sigma: f64, order: f64) -> f64 {
    subsampled_gaussian_rdp_bounds(q, sigma, order).1
}

/// A lower and an upper bound on the Rényi divergence D_λ(μ‖μ₀) of Mironov–Talwar–Zhang
/// (μ₀ = N(0, σ²), μ = (1−q)μ₀ + qN(1, σ²)), which is the subsampled Gaussian's RDP: the upper
/// one is [`subsampled_gaussian_rdp`]; the lower one is the same exact sum less its rounding
/// allowance at integer orders up to [`MAX_SERIES_ORDER`] (and for q ∈ {0, 1}), 0 elsewhere
/// (the fractional series is an upper bound only). The accountant's search over orders bounds
/// the divergence between integer orders from below with it (`rdp::IntegerOrderBound`).
pub fn subsampled_gaussian_rdp_bounds(q: f64, sigma: f64, order: f64) -> (f64, f64) {
    if q == 0.0 {
        return (0.0, 0.0);
    }
    let gaussian = gaussian_rdp(sigma, order);
    if q == 1.0 {
        return (gaussian * (1.0 - 4.0 * f64::EPSILON), gaussian);
    }
    if order > MAX_SERIES_ORDER {
        return (0.0, gaussian);
    }
    let (lower, log_a) = if order.fract() == 0.0 {
        let (lo, hi) = log_a_integer(q, sigma, order as u64);
        // One division, rounded to nearest: a relative step of 2 ulps covers it.
        (
            (lo / (order - 1.0) * (1.0 - 2.0 * f64::EPSILON)).max(0.0),
            hi,
        )
    } else {
        (0.0, log_a_fractional(q, sigma, order))
    };
    // A divergence is ≥ 0; never above the full Gaussian (subsampling never adds privacy loss).
    let upper = (div_up(log_a, order - 1.0)).clamp(0.0, gaussian);
    (lower.min(upper), upper)
}

/// ln x for x ≥ 1 given ln(x − 1): ln(1 + e^y), within a few ulps (callers widen it by ROUNDING).
fn ln_one_plus_exp(y: f64) -> f64 {
    if y > 0.0 {
        y + libm::log1p(libm::exp(-y))
    } else {
        libm::log1p(libm::exp(y))
    }
}

/// ln k for k = 0..=MAX_SERIES_ORDER + 1, shared by the binomial recurrences of both series.
static LN_INT: LazyLock<Vec<f64>> = LazyLock::new(|| {
    (0..=MAX_SERIES_ORDER as usize + 1)
        .map(|k| libm::log(k as f64))
        .collect()
});

/// ln A_λ = ln Σ_{i=0}^{λ} C(λ,i) q^i (1−q)^{λ−i} e^{(i²−i)/(2σ²)} for integer λ ≥ 2, rounded
/// down and up (a lower bound, an upper bound), through ln(A_λ − 1) (positive terms only, see
/// [`subsampled_gaussian_rdp`]).
fn log_a_integer(q: f64, sigma: f64, alpha: u64) -> (f64, f64) {
    let (ln_q, ln_1mq) = (libm::log(q), libm::log1p(-q));
    let inv_two_var = 0.5 / (sigma * sigma);
    let ln_int = &LN_INT;
    let mut sum = LogSumExp::default();
    // The largest magnitude any term's exponent is summed from, for the rounding allowance.
    let mut size: f64 = 0.0;
    let mut log_binom = 0.0;
    for i in 1..=alpha {
        log_binom += ln_int[(alpha - i + 1) as usize] - ln_int[i as usize];
        if i < 2 {
            continue;
        }
        let fi = i as f64;
        let c = (fi * fi - fi) * inv_two_var;
        // ln(e^c − 1) = c + ln(1 − e^{−c}).
        let ln_expm1 = c + ln_one_minus_exp_neg(c);
        let parts = [
            log_binom,
            fi * ln_q,
            (alpha - i) as f64 * ln_1mq,
            c,
            ln_expm1 - c,
        ];
        size = size.max(parts.iter().map(|p| p.abs()).sum());
        sum.add(parts.iter().sum());
    }
    // Each exponent is off by a few ulps of its parts, the binomial's running sum by one ulp
    // of its size per step, and the log-sum-exp by about one ulp per term.
    let slack = ROUNDING * (1.0 + size) + (alpha as f64 + 2.0) * f64::EPSILON * (1.0 + size);
    let ln_a_minus_1 = sum.value();
    (
        ln_one_plus_exp(ln_a_minus_1 - slack) * (1.0 - ROUNDING),
        ln_one_plus_exp(ln_a_minus_1 + slack) * (1.0 + ROUNDING),
    )
}

/// ln A_λ for fractional λ: the integrals over (−∞, z₀] and [z₀, ∞) as series in i, adding
/// |terms|: where binomial coefficients turn negative this over-counts, so the result is an
/// upper bound (up to ~30% above the divergence at λ < 2), exactly as dp-accounting 0.6.0.
/// Returns +∞ (the order is then useless, never optimistic) if the series does not settle.
fn log_a_fractional(q: f64, sigma: f64, alpha: f64) -> f64 {
    let (ln_q, ln_1mq) = (libm::log(q), libm::log1p(-q));
    let inv_two_var = 0.5 / (sigma * sigma);
    let z0 = sigma * sigma * libm::log(1.0 / q - 1.0) + 0.5;
    let erfc_scale = 1.0 / (SQRT_2 * sigma);
    let ln_int = &LN_INT;
    let (mut a0, mut a1) = (LogSumExp::default(), LogSumExp::default());
    let (mut last0, mut last1) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    // Every term's ln with the magnitude its parts sum from, for the final compensated sum and
    // its rounding allowance.
    let mut terms: Vec<(f64, f64)> = Vec::new();
    // dp-accounting stops at 1000 terms; large fractional orders need about λ terms first.
    let max_steps = (1000 + 2 * alpha.ceil() as usize).min(ln_int.len());
    let mut log_abs_binom = 0.0; // ln |C(α, i)|
    for i in 0..max_steps {
        let fi = i as f64;
        if i > 0 {
            log_abs_binom += libm::log((alpha - fi + 1.0).abs()) - ln_int[i];
        }
        let j = alpha - fi;
        let log_t0 = log_abs_binom + fi * ln_q + j * ln_1mq;
        let log_t1 = log_abs_binom + j * ln_q + fi * ln_1mq;
        let log_e0 = -LN_2 + log_erfc((fi - z0) * erfc_scale);
        let log_e1 = -LN_2 + log_erfc((z0 - j) * erfc_scale);
        let s0 = log_t0 + (fi * fi - fi) * inv_two_var + log_e0;
        let s1 = log_t1 + (j * j - j) * inv_two_var + log_e1;
        a0.add(s0);
        a1.add(s1);
        let b = log_abs_binom.abs();
        let size0 = b + (fi * ln_q).abs() + (j * ln_1mq).abs() + (fi * fi - fi).abs() * inv_two_var;
        let size1 = b + (j * ln_q).abs() + (fi * ln_1mq).abs() + (j * j - j).abs() * inv_two_var;
        terms.push((s0, size0 + log_e0.abs()));
        terms.push((s1, size1 + log_e1.abs()));
        // dp-accounting's rule (both terms falling and 30 nats below the total), and past
        // λ + 1, where the coefficients alternate in sign: the omitted signed tail is then at
        // most the next term, which the negative terms already counted at full size outweigh,
        // so the truncated sum stays above the true A_λ.
        if fi > alpha + 1.0 && s0 < last0 && s1 < last1 {
            let total = log_add(a0.value(), a1.value());
            if s0.max(s1) < total - 30.0 {
                return compensated_log_sum(&terms);
            }
        }
        last0 = s0;
        last1 = s1;
    }
    f64::INFINITY
}

/// ln Σ e^{s} over `terms` (s, the magnitude s was summed from), rounded up: the exponentials
/// summed with Neumaier's compensation (error ≤ 2 ulps of the sum, whatever the number of
/// terms), plus each term's own rounding (ROUNDING × its magnitude, weighted by its share).
fn compensated_log_sum(terms: &[(f64, f64)]) -> f64 {
    let top = terms.iter().map(|t| t.0).fold(f64::NEG_INFINITY, f64::max);
    if !top.is_finite() {
        return top;
    }
    let (mut sum, mut carry, mut weighted) = (0.0f64, 0.0f64, 0.0f64);
    for &(s, size) in terms {
        let x = libm::exp(s - top);
        let t = sum + x;
        carry += if sum.abs() >= x {
            (sum - t) + x
        } else {
            (x - t) + sum
        };
        sum = t;
        weighted += x * size;
    }
    // The compensated sum is within 2 ulps, its ln within one more: 4 ulps of 1 absolute.
    let sum = sum + carry;
    top + libm::log(sum) + 4.0 * f64::EPSILON + ROUNDING * (weighted / sum + top.abs())
}

/// Exact RDP of the Laplace mechanism with pure parameter ε (Mironov 2017, Prop. 6), rounded
/// up: (1/(λ−1)) ln(λ/(2λ−1) e^{(λ−1)ε} + (λ−1)/(2λ−1) e^{−λε}). The two exponentials are
/// 1 + O(λε) and their weighted sum 1 + O(λ²ε²): for λε ≤ 1 the logarithm's argument minus 1
/// is summed as its Taylor series, Σ_{n≥2} εⁿ/n! · (λ(λ−1)ⁿ + (λ−1)(−λ)ⁿ)/(2λ−1) (without
/// the cancellation that lost every digit for a large Laplace scale); otherwise in log space.
pub fn laplace_rdp(epsilon: f64, order: f64) -> f64 {
    let a = order;
    let m = a - 1.0;
    let value = if a * epsilon <= 1.0 {
        // With x = (λ−1)ε and y = −λε (|x|, |y| ≤ 1, so no power overflows), the n-th term is
        // (λxⁿ + (λ−1)yⁿ)/((2λ−1) n!): the even ones positive and dominant, the odd ones
        // smaller by about n/λ, so the sum keeps its digits; stop when a term is below 1e-20
        // of it.
        let (x, y) = (m * epsilon, -a * epsilon);
        let (mut px, mut py, mut fact, mut sum) = (x, y, 1.0, 0.0);
        for n in 2..100 {
            px *= x;
            py *= y;
            fact *= n as f64;
            let term = (a * px + m * py) / ((2.0 * a - 1.0) * fact);
            sum += term;
            if term.abs() <= 1e-20 * sum {
                break;
            }
        }
        libm::log1p(sum) / m * (1.0 + 4.0 * ROUNDING)
    } else {
        let lo = libm::log(m / (2.0 * a - 1.0)) - a * epsilon;
        let hi = libm::log(a / (2.0 * a - 1.0)) + m * epsilon;
        let size = lo.abs() + hi.abs() + 1.0;
        (log_add(hi, lo) + ROUNDING * size) / m * (1.0 + ROUNDING)
    };
    value.clamp(0.0, epsilon)
}

/// Exact RDP of binary randomized response with pure parameter ε:
/// (1/(λ−1))·ln(p^λ(1−p)^{1−λ} + (1−p)^λ p^{1−λ}) with p = e^ε/(1+e^ε).
pub fn randomized_response_rdp(epsilon: f64, order: f64) -> f64 {
    let a = order;
    let ln_p = -libm::log1p(libm::exp(-epsilon));
    let ln_1mp = ln_p - epsilon;
    let log_sum = log_add(a * ln_p + (1.0 - a) * ln_1mp, a * ln_1mp + (1.0 - a) * ln_p);
    (log_sum / (a - 1.0)).clamp(0.0, epsilon)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Direct numerical integration of A_λ = E_{z~N(0,σ²)}[((1−q) + q·e^{(2z−1)/(2σ²)})^λ]
    /// by the trapezoid rule on a wide grid: an independent check at fractional orders.
    fn a_by_quadrature(q: f64, sigma: f64, alpha: f64) -> f64 {
        let (lo, hi, n) = (-40.0 * sigma, 40.0 * sigma + 40.0, 400_000);
        let h = (hi - lo) / n as f64;
        let mut s = 0.0;
        for k in 0..=n {
            let z: f64 = lo + k as f64 * h;
            let log_density = -z * z / (2.0 * sigma * sigma)
                - libm::log(sigma * (2.0 * std::f64::consts::PI).sqrt());
            let log_ratio = log_add(
                libm::log1p(-q),
                libm::log(q) + (2.0 * z - 1.0) / (2.0 * sigma * sigma),
            );
            let w = if k == 0 || k == n { 0.5 } else { 1.0 };
            s += w * libm::exp(log_density + alpha * log_ratio);
        }
        s * h
    }

    #[test]
    fn series_are_exact_at_integer_orders_and_upper_bounds_at_fractional_ones() {
        for &(q, sigma) in &[(0.01, 1.1), (0.1, 2.0), (0.3, 0.8)] {
            for &alpha in &[1.5, 2.0, 3.7, 6.0, 8.25] {
                let series = subsampled_gaussian_rdp(q, sigma, alpha);
                let exact = libm::log(a_by_quadrature(q, sigma, alpha)) / (alpha - 1.0);
                if alpha.fract() == 0.0 {
                    assert!(
                        (series - exact).abs() <= 1e-9 * exact,
                        "q={q} σ={sigma} λ={alpha}: series {series} vs quadrature {exact}"
                    );
                } else {
                    // Negative-coefficient terms are added in absolute value (as dp-accounting
                    // 0.6.0 does; its values are matched in tests/suite/accounting_fixture.rs): never
                    // below the true divergence, never above the unsubsampled Gaussian.
                    let full = gaussian_rdp(sigma, alpha);
                    assert!(
                        series >= exact * (1.0 - 1e-9) && series <= full,
                        "q={q} σ={sigma} λ={alpha}: series {series} vs quadrature {exact}"
                    );
                }
            }
        }
    }

    #[test]
    fn series_is_continuous_at_integer_orders() {
        // The fractional series just off an integer order agrees with the integer sum.
        for &alpha in &[2.0, 7.0, 32.0] {
            let at = subsampled_gaussian_rdp(0.02, 1.3, alpha);
            let near = subsampled_gaussian_rdp(0.02, 1.3, alpha + 1e-9);
            assert!((at - near).abs() < 1e-7 * at, "λ={alpha}: {at} vs {near}");
        }
    }

    #[test]
    fn subsampling_never_exceeds_the_full_gaussian() {
        for &order in &[1.5, 4.0, 100.0, 1e5] {
            let full = gaussian_rdp(1.1, order);
            assert!(full >= order / (2.0 * 1.1 * 1.1));
            assert!(subsampled_gaussian_rdp(0.5, 1.1, order) <= full);
        }
        assert_eq!(subsampled_gaussian_rdp(1.0, 2.0, 3.0), 3.0 / 8.0);
    }

    #[test]
    fn laplace_and_rr_tend_to_their_pure_epsilon() {
        assert!((laplace_rdp(1.0, 1e6) - 1.0).abs() < 1e-5);
        assert!(laplace_rdp(1.0, 2.0) < 0.5 * 2.0);
        assert!((randomized_response_rdp(1.0, 1e6) - 1.0).abs() < 1e-5);
        // Exact value at order 2: ln(p²/(1−p) + (1−p)²/p) with p = e/(1+e).
        let p = libm::exp(1f64) / (1.0 + libm::exp(1f64));
        let exact = libm::log(p * p / (1.0 - p) + (1.0 - p) * (1.0 - p) / p);
        assert!((randomized_response_rdp(1.0, 2.0) - exact).abs() < 1e-14);
    }
}
