//! Student's t distribution: the CDF through the regularised incomplete beta function (its
//! continued fraction, evaluated by the modified Lentz method) and the quantile by bisection.
//! For the t-intervals and p-values of spec 001 Table 2.

use crate::error::{Error, Result};

/// I_x(a, b), the regularised incomplete beta function, for x in [0, 1] and a, b > 0.
pub(crate) fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = libm::lgamma(a + b) - libm::lgamma(a) - libm::lgamma(b)
        + a * libm::log(x)
        + b * libm::log(1.0 - x);
    // The continued fraction converges fast for x < (a + 1)/(a + b + 2); otherwise use the
    // symmetry I_x(a, b) = 1 − I_{1−x}(b, a).
    if x < (a + 1.0) / (a + b + 2.0) {
        libm::exp(ln_front) * beta_fraction(a, b, x) / a
    } else {
        1.0 - libm::exp(ln_front) * beta_fraction(b, a, 1.0 - x) / b
    }
}

/// The continued fraction of I_x(a, b) (modified Lentz).
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let mut c = 1.0;
    let mut d = 1.0 - (a + b) * x / (a + 1.0);
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..10_000 {
        let m = m as f64;
        for numerator in [
            m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0)),
        ] {
            d = 1.0 + numerator * d;
            if d.abs() < TINY {
                d = TINY;
            }
            c = 1.0 + numerator / c;
            if c.abs() < TINY {
                c = TINY;
            }
            d = 1.0 / d;
            h *= d * c;
        }
        if (d * c - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

fn check_df(df: f64) -> Result<()> {
    if df.is_finite() && df > 0.0 {
        Ok(())
    } else {
        Err(Error::invalid(
            "degrees of freedom",
            df,
            "a finite number > 0",
        ))
    }
}

/// P(T ≤ t) for T ~ t(df).
pub fn student_t_cdf(t: f64, df: f64) -> Result<f64> {
    check_df(df)?;
    if t.is_nan() {
        return Err(Error::invalid("t", t, "a number"));
    }
    if t.is_infinite() {
        return Ok(if t > 0.0 { 1.0 } else { 0.0 });
    }
    let tail = 0.5 * incomplete_beta(df / 2.0, 0.5, df / (df + t * t));
    Ok(if t > 0.0 { 1.0 - tail } else { tail })
}

/// P(|T| ≥ |t|) for T ~ t(df), computed as a tail (no cancellation: small p-values stay
/// accurate instead of rounding to 0).
pub fn student_t_two_sided_p(t: f64, df: f64) -> Result<f64> {
    check_df(df)?;
    if t.is_nan() {
        return Err(Error::invalid("t", t, "a number"));
    }
    if t.is_infinite() {
        return Ok(0.0);
    }
    Ok(incomplete_beta(df / 2.0, 0.5, df / (df + t * t)).min(1.0))
}

/// The p-quantile of t(df), p in (0, 1), to about 1e-12 (bisection on the CDF).
pub fn student_t_quantile(p: f64, df: f64) -> Result<f64> {
    check_df(df)?;
    if !(p > 0.0 && p < 1.0) {
        return Err(Error::invalid("p", p, "a probability in (0, 1)"));
    }
    let (mut lo, mut hi) = (-1.0, 1.0);
    while student_t_cdf(lo, df)? > p {
        lo *= 2.0;
    }
    while student_t_cdf(hi, df)? < p {
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if student_t_cdf(mid, df)? < p {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo <= 1e-13 * hi.abs().max(1.0) {
            break;
        }
    }
    Ok(0.5 * (lo + hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closed_forms_for_one_and_two_degrees_of_freedom() {
        for t in [-7.0, -1.5, -0.2, 0.0, 0.3, 1.0, 2.0, 25.0] {
            // Cauchy: 1/2 + atan(t)/π; t(2): 1/2 + t / (2 √(t² + 2)).
            let cauchy = 0.5 + libm::atan(t) / std::f64::consts::PI;
            let two = 0.5 + t / (2.0 * (t * t + 2.0).sqrt());
            assert!(
                (student_t_cdf(t, 1.0).unwrap() - cauchy).abs() < 1e-13,
                "{t}"
            );
            assert!((student_t_cdf(t, 2.0).unwrap() - two).abs() < 1e-13, "{t}");
        }
    }

    /// Quantiles printed in standard t tables (e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2).
    #[test]
    fn table_quantiles() {
        for (p, df, want) in [
            (0.975, 4.0, 2.776),
            (0.975, 18.0, 2.101),
            (0.95, 10.0, 1.812),
            (0.995, 30.0, 2.750),
            (0.975, 100.0, 1.984),
        ] {
            let q = student_t_quantile(p, df).unwrap();
            assert!((q - want).abs() < 6e-4, "t({df}) {p}: {q}");
            assert!((student_t_quantile(1.0 - p, df).unwrap() + q).abs() < 1e-9);
        }
        assert!(student_t_quantile(1.0, 3.0).is_err());
        // Two-sided tails: Cauchy's 2(1/2 − atan(t)/π), far beyond where 1 − CDF cancels.
        for t in [0.5, 3.0, 1e9] {
            let want = 1.0 - 2.0 * libm::atan(t) / std::f64::consts::PI;
            let got = student_t_two_sided_p(t, 1.0).unwrap();
            assert!(
                (got - want).abs() <= 1e-12 * want.max(1e-300) + 1e-15,
                "{t}: {got}"
            );
        }
        let tiny = student_t_two_sided_p(40.0, 30.0).unwrap();
        assert!(tiny > 0.0 && tiny < 1e-20, "{tiny}");
        assert!(student_t_cdf(1.0, 0.0).is_err());
        assert!(student_t_cdf(f64::NAN, 3.0).is_err());
    }
}
