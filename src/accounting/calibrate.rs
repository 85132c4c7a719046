//! Calibration: from a target (ε, δ) to the parameter that meets it. Searches are not trusted:
//! the returned parameter is one whose guarantee was computed and checked against the target.

use super::convert::{Accountant, DpBound};
use super::mechanisms::DpSgd;
use crate::error::{Error, Range, Result};
use crate::numeric::bisect_boundary;

/// A calibrated parameter and the guarantee it was verified to give.
#[derive(Clone, Debug, PartialEq)]
pub struct Calibrated {
    pub value: f64,
    pub bound: DpBound,
}

/// The smallest value of a parameter in [`lo`, `hi_max`] whose ε (given by `epsilon_of`, which
/// must decrease as the parameter grows) is at most `target_epsilon`, to relative precision
/// `rel_tol`. The search brackets by doubling from `start`, then bisects; the value returned has
/// been checked to meet the target.
pub fn smallest_meeting(
    name: &'static str,
    epsilon_of: impl Fn(f64) -> Result<DpBound>,
    target_epsilon: f64,
    start: f64,
    hi_max: f64,
    rel_tol: f64,
) -> Result<Calibrated> {
    let meets = |v: f64| -> Result<bool> { Ok(epsilon_of(v)?.epsilon <= target_epsilon) };
    let mut hi = start;
    while !meets(hi)? {
        hi *= 2.0;
        if hi > hi_max {
            return Err(Error::Infeasible(format!(
                "no {name} up to {hi_max:e} meets epsilon <= {}",
                crate::numeric::fmt_num(target_epsilon)
            )));
        }
    }
    let mut lo = hi / 2.0;
    while meets(lo)? {
        hi = lo;
        lo /= 2.0;
        if lo < 1e-12 {
            break;
        }
    }
    let value = bisect_boundary(|v| meets(v).unwrap_or(false), lo, hi, rel_tol);
    let bound = epsilon_of(value)?;
    if bound.epsilon > target_epsilon {
        return Err(Error::Numerical(format!(
            "calibration of {name} failed its own check (epsilon {} > {target_epsilon})",
            bound.epsilon
        )));
    }
    Ok(Calibrated { value, bound })
}

/// The smallest DP-SGD noise multiplier σ (to 1e-6 relative) such that `steps` steps at sampling
/// rate q are (ε, δ)-DP under `accountant`.
pub fn calibrate_dpsgd_noise(
    sampling_rate: f64,
    steps: u64,
    target_epsilon: f64,
    delta: f64,
    accountant: &Accountant,
) -> Result<Calibrated> {
    DpSgd::new(sampling_rate, 1.0, steps)?;
    let target_epsilon = Range::Positive.check("epsilon", target_epsilon)?;
    let delta = Range::OpenUnit.check("delta", delta)?;
    let epsilon_of =
        |sigma: f64| accountant.epsilon(&DpSgd::new(sampling_rate, sigma, steps)?.rdp(), delta);
    smallest_noise_multiplier(epsilon_of, target_epsilon)
}

/// The smallest noise multiplier in (0, 1e6] (to 1e-6 relative) whose ε is within the target:
/// the one search every noise calibration uses.
pub fn smallest_noise_multiplier(
    epsilon_of: impl Fn(f64) -> Result<DpBound>,
    target_epsilon: f64,
) -> Result<Calibrated> {
    smallest_meeting(
        "noise_multiplier",
        epsilon_of,
        target_epsilon,
        1.0,
        1e6,
        1e-6,
    )
}
