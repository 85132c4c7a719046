//! Calibration: from a target (ε, δ) to the parameter that meets it. Searches are not trusted:
//! the returned parameter is one whose guarantee was computed and checked against the target.

use super::convert::{Accountant, DpBound};
use super::mechanisms::{DpSgd, LotSampling};
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
            // Say where the bound stands at the end of the search: a bound that levels off
            // above the target (as DP-SGD's without-replacement bound does) needs another
            // target or another mechanism, not more of this parameter.
            let at_max = epsilon_of(hi_max)?.epsilon;
            let at_half = epsilon_of(hi_max / 2.0)?.epsilon;
            return Err(Error::Infeasible(format!(
                "no {name} up to {hi_max:e} meets epsilon <= {}: at {hi_max:e} the bound is \
                 still {}{}",
                crate::error::fmt_num(target_epsilon),
                if at_max.is_finite() {
                    format!("epsilon = {}", crate::error::fmt_num(at_max))
                } else {
                    "unbounded".to_string()
                },
                if at_half - at_max <= 0.01 * at_max {
                    " and has levelled off (doubling it gains under 1%): no value meets the \
                     target"
                } else {
                    ""
                }
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
/// rate q, lots drawn by `sampling`, are (ε, δ)-DP under `accountant`. Without replacement the
/// bound (Wang–Balle–Kasiviswanathan Thm. 9, valid for any mechanism) does not fall to 0 as σ
/// grows: a target below its floor is an error that says so.
pub fn calibrate_dpsgd_noise(
    sampling: LotSampling,
    sampling_rate: f64,
    steps: u64,
    target_epsilon: f64,
    delta: f64,
    accountant: &Accountant,
) -> Result<Calibrated> {
    DpSgd::with_sampling(sampling, sampling_rate, 1.0, steps)?;
    accountant.orders.check_for_calibration()?;
    let target_epsilon = Range::Positive.check("epsilon", target_epsilon)?;
    let delta = Range::OpenUnit.check("delta", delta)?;
    let epsilon_of = |sigma: f64| {
        let m = DpSgd::with_sampling(sampling, sampling_rate, sigma, steps)?;
        accountant.epsilon(&m.rdp(), delta)
    };
    smallest_noise_multiplier(epsilon_of, target_epsilon)
}

/// The largest noise multiplier a calibration searches.
pub const MAX_NOISE_MULTIPLIER: f64 = 1e6;

/// The smallest noise multiplier in (0, [`MAX_NOISE_MULTIPLIER`]] (to 1e-6 relative) whose ε is
/// within the target: the one search every noise calibration uses.
pub fn smallest_noise_multiplier(
    epsilon_of: impl Fn(f64) -> Result<DpBound>,
    target_epsilon: f64,
) -> Result<Calibrated> {
    smallest_meeting(
        "noise_multiplier",
        epsilon_of,
        target_epsilon,
        1.0,
        MAX_NOISE_MULTIPLIER,
        1e-6,
    )
}

/// The largest noise an equal-budget calibration of a tuner's runs searches.
pub const MAX_RUN_NOISE: f64 = 1e12;

/// Equal-budget calibration: the smallest noise of each run (in (0, [`MAX_RUN_NOISE`]], to 1e-6
/// relative) at which the bound of a whole search, given by `bound_at` (a tuner's guarantee,
/// which must fall as the noise grows), meets `target_epsilon`; `what` names the noise in
/// messages. The one search the experiment harness's equal-budget cells and `dptune tune`'s
/// calibrated noise both use: the harness's committed results depend on it to the bit, so its
/// bracket (doubling from 1, at most [`MAX_RUN_NOISE`]) and tolerance are fixed here.
pub fn smallest_run_noise(
    what: &'static str,
    target_epsilon: f64,
    bound_at: impl Fn(f64) -> Result<DpBound>,
) -> Result<Calibrated> {
    smallest_meeting(what, bound_at, target_epsilon, 1.0, MAX_RUN_NOISE, 1e-6)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A target below where the bound levels off is an error that gives the bound at the end
    /// of the search and says more of the parameter will not help.
    #[test]
    fn a_target_below_a_levelled_bound_says_so() {
        let epsilon_of = |v: f64| {
            Ok(DpBound {
                epsilon: 0.5 + 1.0 / v,
                delta: 1e-5,
                order: None,
            })
        };
        let e = smallest_meeting("noise", epsilon_of, 0.4, 1.0, 1e6, 1e-6)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("still epsilon = 0.5") && e.contains("levelled off"),
            "{e}"
        );
        // One still falling says where it stands, and nothing about levelling off.
        let falling = |v: f64| {
            Ok(DpBound {
                epsilon: 1e7 / v,
                delta: 1e-5,
                order: None,
            })
        };
        let e = smallest_meeting("noise", falling, 1.0, 1.0, 1e6, 1e-6)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("still epsilon = 10") && !e.contains("levelled"),
            "{e}"
        );
        // An unbounded one is said in words, never as "inf".
        let unbounded = |_: f64| {
            Ok(DpBound {
                epsilon: f64::INFINITY,
                delta: 1e-5,
                order: None,
            })
        };
        let e = smallest_meeting("noise", unbounded, 1.0, 1.0, 1e6, 1e-6)
            .unwrap_err()
            .to_string();
        assert!(e.contains("still unbounded") && !e.contains("inf"), "{e}");
        let c = smallest_meeting("noise", falling, 20.0, 1.0, 1e6, 1e-6).unwrap();
        assert!(c.bound.epsilon <= 20.0 && (c.value / 5e5 - 1.0).abs() < 1e-5);
    }
}
