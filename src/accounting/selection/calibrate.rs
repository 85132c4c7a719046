//! Calibration for tuning: from a target total (ε, δ) to the largest mean number of runs, or to
//! the smallest DP-SGD noise multiplier for a given mean. Every answer is re-checked.

use crate::accounting::calibrate::{smallest_noise_multiplier, Calibrated};
use crate::accounting::selection::bounds::{repeat_select, Base};
use crate::accounting::selection::count::CountFamily;
use crate::accounting::{Accountant, DpBound, DpSgd, Orders};
use crate::error::{fmt_num, Error, Range, Result};

/// ε of repeat-and-select with the family at `mean` over `base`.
pub fn repeat_select_epsilon(
    base: &Base,
    family: CountFamily,
    mean: f64,
    truncate: Option<u64>,
    delta: f64,
    orders: &Orders,
) -> Result<DpBound> {
    let law = family.with_mean(mean, truncate)?;
    let curve = repeat_select(base, &law, orders)?;
    Accountant::new(orders.clone(), Default::default()).epsilon(&curve, delta)
}

/// The cap of [`largest_mean`]'s search: a result equal to it means "every mean up to here meets
/// the target", not an optimum.
pub const MAX_MEAN: f64 = 1e7;

/// The largest mean E[K] (≤ [`MAX_MEAN`]; an integer for `fixed`) whose repeat-and-select guarantee is
/// at most `target_epsilon` at δ. ε grows with the mean, so this bisects in ln(mean).
pub fn largest_mean(
    base: &Base,
    family: CountFamily,
    truncate: Option<u64>,
    target_epsilon: f64,
    delta: f64,
    orders: &Orders,
) -> Result<Calibrated> {
    let target_epsilon = Range::Positive.check("target_epsilon", target_epsilon)?;
    orders.check_for_calibration()?;
    let eps_at = |mean: f64| repeat_select_epsilon(base, family, mean, truncate, delta, orders);
    let meets = |mean: f64| {
        eps_at(mean)
            .map(|b| b.epsilon <= target_epsilon)
            .unwrap_or(false)
    };
    let smallest = match family {
        CountFamily::Fixed => 1.0,
        CountFamily::Tnb { .. } => 1.0 + 1e-9,
        CountFamily::Poisson => 1e-9,
    };
    // An error of the request itself (too many orders, say) is reported as it is, not as a
    // target no mean meets.
    eps_at(smallest)?;
    if !meets(smallest) {
        return Err(Error::Infeasible(format!(
            "even the smallest mean ({smallest}) exceeds epsilon = {} at delta = {}: \
             one run of the base already costs too much",
            fmt_num(target_epsilon),
            fmt_num(delta)
        )));
    }
    let value = if meets(MAX_MEAN) {
        MAX_MEAN
    } else if family == CountFamily::Fixed {
        // Integers: the last k that meets the target.
        let (mut lo, mut hi) = (1u64, MAX_MEAN as u64);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if meets(mid as f64) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo as f64
    } else {
        // Invariant: exp(lo) meets the target, exp(hi) does not; return the side that meets.
        let (mut lo, mut hi) = (libm::log(smallest), libm::log(MAX_MEAN));
        while hi - lo > 1e-10 {
            let mid = 0.5 * (lo + hi);
            if meets(libm::exp(mid)) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        libm::exp(lo)
    };
    let bound = eps_at(value)?;
    if bound.epsilon > target_epsilon {
        return Err(Error::Numerical(
            "mean calibration failed its own check".into(),
        ));
    }
    Ok(Calibrated { value, bound })
}

/// The smallest DP-SGD noise multiplier such that repeat-and-select (K from `family` with
/// `mean`) over DP-SGD training runs (sampling rate q, `steps` steps) meets (ε, δ) in total.
#[allow(clippy::too_many_arguments)]
pub fn tuning_noise_multiplier(
    sampling_rate: f64,
    steps: u64,
    family: CountFamily,
    mean: f64,
    truncate: Option<u64>,
    target_epsilon: f64,
    delta: f64,
    orders: &Orders,
) -> Result<Calibrated> {
    DpSgd::new(sampling_rate, 1.0, steps)?;
    family.with_mean(mean, truncate)?;
    let target_epsilon = Range::Positive.check("target_epsilon", target_epsilon)?;
    let epsilon_of = |sigma: f64| {
        let base = Base::symmetric(DpSgd::new(sampling_rate, sigma, steps)?.rdp());
        repeat_select_epsilon(&base, family, mean, truncate, delta, orders)
    };
    smallest_noise_multiplier(epsilon_of, target_epsilon)
}
