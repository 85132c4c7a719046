//! The fixed output transforms of spec 001 §2: DPareto's GPs model log ε and logit(error), not
//! ε and error. Both maps increase, so dominance, fronts and minimisation are unchanged; they
//! make ε's many decades and the error's bounded range look Gaussian enough for a GP.
//!
//! The release also divides log ε by its maximum over the initial points; spec §2 rejects that
//! (it flips the order when every initial ε < 1), so it is not offered here.

use super::front::Objectives;
use crate::error::{fmt_num, Error, Result};

/// The error is clamped to [1e-6, 1 − 1e-6] before the logit (spec §2), since logit(0) and
/// logit(1) are infinite: logit stays within ±13.82.
pub const ERROR_CLAMP: f64 = 1e-6;

/// ε is floored here before the log, so an oracle's exact ε = 0 (an analytic Gaussian with a
/// tiny sensitivity, say) gives a finite target. It is the lower end of the release's ε
/// root-finding range (spec §3.1, [1e-6, 500]); below it every plotted scale reads 0. The
/// floor shapes the model only; reported ε are never floored.
pub const EPSILON_FLOOR: f64 = 1e-6;

/// ln max(ε, [`EPSILON_FLOOR`]) for an ε in [0, ∞). An infinite ε (a non-private run) has no
/// finite transform and is rejected, as are negative ε and NaN.
pub fn log_epsilon(epsilon: f64) -> Result<f64> {
    if epsilon >= 0.0 && epsilon.is_finite() {
        Ok(libm::log(epsilon.max(EPSILON_FLOOR)))
    } else {
        Err(Error::invalid(
            "epsilon",
            fmt_num(epsilon),
            "a finite number >= 0 (the GP models ln epsilon)",
        ))
    }
}

/// logit(x) = ln x − ln(1 − x) of the error clamped to [[`ERROR_CLAMP`], 1 − [`ERROR_CLAMP`]]
/// (spec §2: logit of the error 1 − accuracy, so the map increases). The error must lie in
/// [0, 1].
pub fn logit_error(error: f64) -> Result<f64> {
    if (0.0..=1.0).contains(&error) {
        let x = error.clamp(ERROR_CLAMP, 1.0 - ERROR_CLAMP);
        Ok(libm::log(x) - libm::log1p(-x))
    } else {
        Err(Error::invalid(
            "error",
            fmt_num(error),
            "a number in [0, 1] (a classification error)",
        ))
    }
}

/// (ε, error) → (log ε, logit error), the space the GPs and the acquisition work in.
pub fn to_model_space(point: Objectives) -> Result<Objectives> {
    Ok([log_epsilon(point[0])?, logit_error(point[1])?])
}

/// (log ε, logit error) → (ε, error), for reporting a prediction in the units of the front.
/// Exact inverse of [`to_model_space`] away from the floor and the clamp; a finite input never
/// gives NaN (ε may overflow to +∞ for log ε > 709, the error saturates at 0 or 1).
pub fn from_model_space(t: Objectives) -> Result<Objectives> {
    if let Some(v) = t.iter().find(|v| v.is_nan()) {
        return Err(Error::invalid("model-space point", v, "a pair of numbers"));
    }
    Ok([libm::exp(t[0]), 1.0 / (1.0 + libm::exp(-t[1]))])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logit_by_hand_and_symmetric_at_the_clamps() {
        assert_eq!(logit_error(0.5).unwrap(), 0.0);
        // ln(0.999/0.001) = ln 999 = 6.906754778648554
        assert!((logit_error(0.999).unwrap() - libm::log(999f64)).abs() < 1e-12);
        // logit(1e-6) = ln(1e-6) − ln(1 − 1e-6) = −13.815509557963773 (ln 1e-6 + 1e-6 + 5e-13)
        let lo = logit_error(0.0).unwrap();
        assert!(
            (lo - (-13.815_510_557_964_274 + 1e-6 + 5e-13)).abs() < 1e-12,
            "{lo}"
        );
        assert!((logit_error(1.0).unwrap() + lo).abs() < 1e-9);
        assert_eq!(logit_error(1e-9).unwrap(), lo);
    }

    #[test]
    fn transforms_increase_and_invert() {
        let mut prev = [f64::NEG_INFINITY; 2];
        for k in 1..200 {
            let x = k as f64 / 200.0;
            let t = to_model_space([x * 50.0, x]).unwrap();
            assert!(t[0] > prev[0] && t[1] > prev[1]);
            prev = t;
            let back = from_model_space(t).unwrap();
            assert!((back[0] / (x * 50.0) - 1.0).abs() < 1e-14 && (back[1] - x).abs() < 1e-14);
        }
        assert_eq!(log_epsilon(0.0).unwrap(), libm::log(EPSILON_FLOOR));
        assert_eq!(from_model_space([1e4, -1e4]).unwrap(), [f64::INFINITY, 0.0]);
    }

    #[test]
    fn invalid_inputs_are_named() {
        for e in [-1e-9, f64::NAN, f64::INFINITY] {
            assert!(log_epsilon(e).unwrap_err().to_string().contains("epsilon"));
        }
        for e in [-0.1, 1.0 + 1e-12, f64::NAN] {
            assert!(logit_error(e).unwrap_err().to_string().contains("error"));
        }
        assert!(from_model_space([f64::NAN, 0.0]).is_err());
    }
}
