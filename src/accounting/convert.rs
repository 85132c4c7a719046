//! From RDP curves (and zCDP / GDP) to (ε, δ)-DP.
//!
//! Per order λ, an RDP bound ε(λ) gives (ε_DP, δ)-DP by
//! * Canonne–Kamath–Steinke 2020 (Prop. 12 / Lemma 14 of the seed), the default:
//!   ε_DP = ε(λ) + ln(1 − 1/λ) − ln(δλ)/(λ−1), equivalently
//!   ln δ = (λ−1)(ε(λ) − ε_DP + ln(1 − 1/λ)) − ln λ;
//! * Mironov 2017 (Prop. 3): ε_DP = ε(λ) + ln(1/δ)/(λ−1).
//!
//! With CKS we also use the KL route (valid at any order because D_λ ≥ D_1 = KL):
//! Bretagnolle–Huber gives TV ≤ √(1 − e^{−KL}), and TV ≤ δ means (0, δ)-DP.
//! The bound is then minimised over orders: continuously for closed-form curves, over the grid
//! for sampled ones. Any order gives a valid bound, so a search can only lose tightness, never
//! validity; each result reports the order that produced it.

use super::rdp::{format_orders, ClosedForm, RdpCurve};
use crate::error::{fmt_num, Error, Range, Result};
use crate::numeric::{exp_bound, golden_min, log_ndtr, ROUNDING};
use std::sync::LazyLock;

/// dp-accounting 0.6.0's `DEFAULT_RDP_ORDERS`: 1.1, 1.2, …, 10.9, 11, …, 63, 128, 256, 512, 1024.
pub static DP_ACCOUNTING_ORDERS: LazyLock<Vec<f64>> = LazyLock::new(|| {
    (1..100)
        .map(|x| 1.0 + f64::from(x) / 10.0)
        .chain((11..64).map(f64::from))
        .chain([128.0, 256.0, 512.0, 1024.0])
        .collect()
});

/// Which RDP → (ε, δ) rule to apply at each order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Conversion {
    /// Canonne–Kamath–Steinke (tighter), with the KL route.
    #[default]
    Cks,
    /// Mironov's original conversion.
    Mironov,
}

/// The largest order of an `A..B` range in [`Orders::parse`] (beyond it the subsampled
/// Gaussians are evaluated by the plain Gaussian bound anyway).
pub const MAX_RANGE_ORDER: u64 = 65_536;
/// The largest order a calibration may search over: it evaluates the curve some 60 times, and
/// a subsampled Gaussian's RDP at integer order λ sums about λ terms, so orders up to 65,536
/// would take tens of minutes (4,096 takes seconds).
pub const MAX_CALIBRATION_ORDER: f64 = 4096.0;

/// The most series terms a list of orders may cost a curve ([`ClosedForm::series_terms`]):
/// `2..8192` (3.4·10⁷) of a subsampled Gaussian take about 2 s on two cores.
pub const MAX_SERIES_TERMS: f64 = 3.5e7;

/// Refuses `orders` whose evaluation of `form` would sum more than [`MAX_SERIES_TERMS`]
/// terms: every order is bounded in time, not only in number.
pub fn check_series_terms(form: &ClosedForm, orders: &[f64]) -> Result<()> {
    let terms: f64 = orders.iter().map(|&o| form.series_terms(o)).sum();
    if terms > MAX_SERIES_TERMS {
        return Err(Error::invalid(
            "orders",
            format!(
                "{} orders up to {}",
                orders.len(),
                fmt_num(orders.iter().copied().fold(f64::NAN, f64::max))
            ),
            format!(
                "orders whose RDP series sum at most {MAX_SERIES_TERMS:e} terms for this \
                 mechanism (a subsampled Gaussian's at integer order λ sums λ terms; these \
                 would sum {terms:.2e}): fewer or smaller orders (2..8192 is 3.4e7), or \
                 continuous"
            ),
        ));
    }
    Ok(())
}

impl Orders {
    /// Refuses orders a calibration cannot search in reasonable time ([`MAX_CALIBRATION_ORDER`]).
    pub fn check_for_calibration(&self) -> Result<()> {
        if let Orders::List(list) = self {
            if let Some(&big) = list.iter().find(|&&o| o > MAX_CALIBRATION_ORDER) {
                return Err(Error::invalid(
                    "orders",
                    big,
                    format!(
                        "orders up to {MAX_CALIBRATION_ORDER} when calibrating (each order's \
                         curve is evaluated some 60 times): list smaller orders, or use \
                         continuous"
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Which orders the bound is minimised over.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum Orders {
    /// Every λ > 1 for closed-form curves (a dense search plus refinement); a sampled curve's
    /// own grid otherwise.
    #[default]
    Continuous,
    /// dp-accounting 0.6.0's default grid and its guards (CKS only for λ > 1.01), so results
    /// can be compared with that library.
    DpAccounting,
    /// An explicit list of orders.
    List(Vec<f64>),
}

impl Orders {
    /// Parses `continuous`, `dp-accounting`, a comma-separated list of orders > 1, or an integer
    /// range `A..B` (A through B inclusive, 2 ≤ A ≤ B ≤ [`MAX_RANGE_ORDER`]).
    pub fn parse(s: &str) -> Result<Self> {
        match s.trim() {
            "continuous" => Ok(Orders::Continuous),
            "dp-accounting" => Ok(Orders::DpAccounting),
            list => {
                let allowed = "continuous, dp-accounting, a comma-separated list of orders > 1, \
                               or an integer range A..B (2 <= A <= B <= 65536)";
                if let Some((a, b)) = list.split_once("..") {
                    return match (a.trim().parse::<u64>(), b.trim().parse::<u64>()) {
                        (Ok(a), Ok(b)) if 2 <= a && a <= b && b <= MAX_RANGE_ORDER => {
                            Ok(Orders::List((a..=b).map(|o| o as f64).collect()))
                        }
                        _ => Err(Error::invalid("orders", list, allowed)),
                    };
                }
                let orders = list
                    .split(',')
                    .map(|t| {
                        t.trim()
                            .parse::<f64>()
                            .ok()
                            .filter(|&o| Range::Order.contains(o))
                    })
                    .collect::<Option<Vec<f64>>>()
                    .ok_or_else(|| Error::invalid("orders", list, allowed))?;
                Ok(Orders::List(orders))
            }
        }
    }
}

/// An (ε, δ)-DP guarantee and how it was obtained.
#[derive(Clone, Debug, PartialEq)]
pub struct DpBound {
    pub epsilon: f64,
    pub delta: f64,
    /// The Rényi order that gave the bound (None for conversions that use no order, e.g. GDP).
    pub order: Option<f64>,
}

/// Converts RDP curves to (ε, δ): an order policy and a per-order conversion rule.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Accountant {
    pub orders: Orders,
    pub conversion: Conversion,
}

impl Accountant {
    pub fn new(orders: Orders, conversion: Conversion) -> Self {
        Accountant { orders, conversion }
    }

    /// A short machine-readable name, e.g. `rdp/cks/continuous`.
    pub fn name(&self) -> String {
        let conv = match self.conversion {
            Conversion::Cks => "cks",
            Conversion::Mironov => "mironov",
        };
        let orders = match &self.orders {
            Orders::Continuous => "continuous".to_string(),
            Orders::DpAccounting => "dp-accounting-0.6.0-orders".to_string(),
            Orders::List(l) => format!("orders{}", format_orders(l)),
        };
        format!("rdp/{conv}/{orders}")
    }

    /// The smallest ε such that the curve gives (ε, δ)-DP.
    pub fn epsilon(&self, curve: &RdpCurve, delta: f64) -> Result<DpBound> {
        let delta = Range::OpenUnit.check("delta", delta)?;
        let rule = self.rule();
        let (epsilon, order) = self.minimise(curve, |r, l| rule.epsilon(r, l, delta))?;
        Ok(DpBound {
            epsilon,
            delta,
            order: Some(order),
        })
    }

    /// The smallest RDP bound over the policy's orders, min_λ ε(λ), with its order: no
    /// conversion to (ε, δ) (the x-axis of Papernot–Steinke's released Fig. 7 code; not a DP
    /// guarantee on its own).
    pub fn min_rdp(&self, curve: &RdpCurve) -> Result<(f64, f64)> {
        self.minimise(curve, |r, _| r)
    }

    /// The smallest δ such that the curve gives (ε, δ)-DP.
    pub fn delta(&self, curve: &RdpCurve, epsilon: f64) -> Result<DpBound> {
        let epsilon = Range::NonNegative.check("epsilon", epsilon)?;
        let rule = self.rule();
        let (log_delta, order) = self.minimise(curve, |r, l| rule.log_delta(r, l, epsilon))?;
        Ok(DpBound {
            epsilon,
            delta: exp_bound(log_delta).min(1.0),
            order: Some(order),
        })
    }

    fn rule(&self) -> Rule {
        Rule {
            conversion: self.conversion,
            dp_accounting_guards: self.orders == Orders::DpAccounting,
        }
    }

    /// min over the policy's orders of `objective(ε(λ), λ)`, with the order that attains it.
    fn minimise(
        &self,
        curve: &RdpCurve,
        objective: impl Fn(f64, f64) -> f64,
    ) -> Result<(f64, f64)> {
        let best = match (&self.orders, curve.closed_form()) {
            (Orders::Continuous, Some(form)) => minimise_over_orders(form, &objective, true),
            (Orders::DpAccounting, Some(form)) => minimise_grid(
                &DP_ACCOUNTING_ORDERS,
                &form.objective_at(&DP_ACCOUNTING_ORDERS, &objective),
            ),
            (Orders::List(list), Some(form)) => {
                check_series_terms(form, list)?;
                // The orders checked and sorted as a sampled curve's are.
                let sorted = RdpCurve::on_grid(list.clone(), vec![0.0; list.len()])?;
                let (orders, _) = sorted.grid().expect("sampled");
                minimise_grid(orders, &form.objective_at(orders, &objective))
            }
            (policy, None) => {
                // A sampled curve, read at the policy's orders (its own, for `Continuous`).
                let read;
                let sampled = match policy {
                    Orders::Continuous => curve,
                    Orders::DpAccounting => {
                        read = curve.on_orders(&DP_ACCOUNTING_ORDERS)?;
                        &read
                    }
                    Orders::List(list) => {
                        read = curve.on_orders(list)?;
                        &read
                    }
                };
                let (orders, eps) = sampled.grid().expect("a curve is a grid or a closed form");
                let values: Vec<f64> = orders
                    .iter()
                    .zip(eps)
                    .map(|(&l, &e)| objective(e, l))
                    .collect();
                minimise_grid(orders, &values)
            }
        };
        if best.0.is_nan() {
            return Err(Error::Numerical(
                "the privacy bound evaluated to NaN at every order (please report this)".into(),
            ));
        }
        Ok(best)
    }
}

/// The per-order conversion rule.
#[derive(Clone, Copy, Debug)]
struct Rule {
    conversion: Conversion,
    dp_accounting_guards: bool,
}

/// The terms' sum and the sum of their magnitudes (what the rounding allowance scales).
fn sum_and_size(terms: &[f64]) -> (f64, f64) {
    terms
        .iter()
        .fold((0.0, 0.0), |(s, m): (f64, f64), t| (s + t, m + t.abs()))
}

/// `terms` summed, plus the rounding allowance: an upper bound of their exact sum.
fn sum_up(terms: &[f64]) -> f64 {
    let (sum, size) = sum_and_size(terms);
    sum + ROUNDING * size
}

/// ln(1 − 1/λ) for λ > 1 as two accurate terms: ln(λ−1) − ln λ near 1 (λ − 1 is exact there,
/// where 1 − 1/λ would lose digits to cancellation), ln(1 − 1/λ) and 0 from 2 on.
fn ln_one_minus_inv(order: f64) -> [f64; 2] {
    if order < 2.0 {
        [libm::log(order - 1.0), -libm::log(order)]
    } else {
        [libm::log1p(-1.0 / order), 0.0]
    }
}

impl Rule {
    fn epsilon(self, rdp: f64, order: f64, delta: f64) -> f64 {
        if rdp.is_nan() || rdp == f64::INFINITY {
            return f64::INFINITY;
        }
        let rdp = rdp.max(0.0);
        let eps = match self.conversion {
            Conversion::Mironov => mironov_epsilon(rdp, order, delta),
            Conversion::Cks => {
                // KL route: TV ≤ √(1 − e^{−ε(λ)}) ≤ δ gives (0, δ); granted with a margin, so
                // rounding never grants it where the exact comparison does not.
                if delta * delta > -libm::expm1(-rdp) * (1.0 + ROUNDING) {
                    0.0
                } else if self.dp_accounting_guards && order <= 1.01 {
                    f64::INFINITY
                } else {
                    cks_epsilon(rdp, order, delta)
                }
            }
        };
        eps.max(0.0)
    }

    fn log_delta(self, rdp: f64, order: f64, epsilon: f64) -> f64 {
        if rdp.is_nan() || rdp == f64::INFINITY {
            return 0.0;
        }
        let rdp = rdp.max(0.0);
        let m = order - 1.0;
        // A −∞ from these formulas is overflow of a huge finite ln δ, not an exact zero: keep it
        // finite so δ is reported as the smallest positive double, never 0 (only a zero RDP,
        // through the KL route, gives an exact δ = 0). Each ln δ carries its rounding
        // allowance, and ROUNDING more for the exp that turns it into δ.
        let log_delta = match self.conversion {
            Conversion::Mironov => log_delta_up(m, &[rdp, -epsilon], 0.0).max(f64::MIN),
            Conversion::Cks => {
                // ½ ln(1 − e^{−ε(λ)}): accurate for tiny ε(λ) too, where e^{−ε(λ)} rounds to 1.
                let kl = if rdp == 0.0 {
                    f64::NEG_INFINITY
                } else {
                    let half = 0.5 * crate::numeric::ln_one_minus_exp_neg(rdp);
                    half + ROUNDING * (1.0 + half.abs())
                };
                if self.dp_accounting_guards && order <= 1.01 {
                    kl
                } else {
                    kl.min(cks_log_delta(rdp, order, epsilon).max(f64::MIN))
                }
            }
        };
        log_delta.min(0.0)
    }
}

/// CKS: ε_DP = ε(λ) + ln(1 − 1/λ) − ln(δλ)/(λ−1) (not clamped), rounded up: an upper bound
/// of the formula's exact value at these doubles.
pub fn cks_epsilon(rdp: f64, order: f64, delta: f64) -> f64 {
    let m = order - 1.0;
    let [a, b] = ln_one_minus_inv(order);
    sum_up(&[rdp, a, b, -libm::log(delta) / m, -libm::log(order) / m])
}

/// CKS: ln δ = (λ−1)(ε(λ) − ε_DP + ln(1 − 1/λ)) − ln λ (not clamped), rounded up (with room
/// for the exp that makes it δ).
pub fn cks_log_delta(rdp: f64, order: f64, epsilon: f64) -> f64 {
    let [a, b] = ln_one_minus_inv(order);
    log_delta_up(order - 1.0, &[rdp, -epsilon, a, b], -libm::log(order))
}

/// m·(Σ `inner`) + `tail` rounded up, with ROUNDING more for the exp that turns it into δ.
/// Where the huge magnitudes overflow, the sign of Σ `inner` decides: a ln δ below every
/// double (f64::MIN, so δ prints as the smallest positive double) or 0 (δ = 1).
fn log_delta_up(m: f64, inner: &[f64], tail: f64) -> f64 {
    let (sum, size) = sum_and_size(inner);
    let up = m * sum + tail + ROUNDING * (m * size + tail.abs() + 1.0);
    if up.is_nan() {
        if sum < 0.0 {
            f64::MIN
        } else {
            0.0
        }
    } else {
        up
    }
}

/// Mironov: ε_DP = ε(λ) + ln(1/δ)/(λ−1) (not clamped), rounded up.
pub fn mironov_epsilon(rdp: f64, order: f64, delta: f64) -> f64 {
    sum_up(&[rdp, -libm::log(delta) / (order - 1.0)])
}

/// The largest order of spec 001 §6.1's conversion.
pub const SPEC_001_MAX_ORDER: u64 = 4096;

/// Spec 001 §6.1's plain conversion: ε = min_α [ε(α) + ln(1/δ)/(α − 1)] (Mironov) over the
/// integer orders α = 2..α_max, α_max starting at 32 (or `max_order` if smaller) and doubling,
/// up to `max_order` (the spec: [`SPEC_001_MAX_ORDER`]), while the minimiser sits at the top
/// edge. Every order gives a valid bound, so stopping early can only lose tightness. A sampled
/// curve is read at those of the orders it has (an error if it has none of 2..=`max_order`).
/// The default [`Accountant`] (Canonne–Kamath–Steinke at every real order) is never looser.
pub fn integer_orders_epsilon(curve: &RdpCurve, delta: f64, max_order: u64) -> Result<DpBound> {
    let delta = Range::OpenUnit.check("delta", delta)?;
    if !(2..=MAX_RANGE_ORDER).contains(&max_order) {
        return Err(Error::invalid(
            "max_order",
            max_order,
            format!("an integer in [2, {MAX_RANGE_ORDER}]"),
        ));
    }
    let rule = Rule {
        conversion: Conversion::Mironov,
        dp_accounting_guards: false,
    };
    let (mut best, mut best_order) = (f64::INFINITY, f64::NAN);
    // A sampled curve costs nothing to read: all of its orders at once.
    let start = if curve.closed_form().is_some() {
        32
    } else {
        max_order
    };
    let (mut done, mut top) = (1u64, start.min(max_order));
    loop {
        let orders: Vec<f64> = (done + 1..=top).map(|o| o as f64).collect();
        let values: Vec<(f64, f64)> = match curve.closed_form() {
            Some(form) => orders
                .iter()
                .copied()
                .zip(form.eval_many(&orders))
                .collect(),
            None => orders
                .iter()
                .filter_map(|&o| curve.eval(o).ok().map(|e| (o, e)))
                .collect(),
        };
        for (o, e) in values {
            let v = rule.epsilon(e, o, delta);
            if v < best {
                (best, best_order) = (v, o);
            }
        }
        if best_order != top as f64 || top == max_order {
            break;
        }
        (done, top) = (top, (2 * top).min(max_order));
    }
    if best_order.is_nan() {
        return Err(Error::invalid(
            "orders",
            format!("2..{max_order}"),
            "orders at which the sampled curve is known",
        ));
    }
    Ok(DpBound {
        epsilon: best,
        delta,
        order: Some(best_order),
    })
}

/// min over a grid of the objective's values there; ties go to the first (lowest) order, as
/// dp-accounting's argmin does.
fn minimise_grid(orders: &[f64], values: &[f64]) -> (f64, f64) {
    let mut best = (f64::INFINITY, orders[0]);
    for (&o, &v) in orders.iter().zip(values) {
        if v < best.0 {
            best = (v, o);
        }
    }
    best
}

/// min over λ > 1 of `f(λ)`. Candidates: dp-accounting's grid (so the result is never worse
/// than it) and, for cheap curves, 561 points of t = ln(λ−1) in [−12, 16]; for expensive ones
/// the grid is extended by doubling past 1024 while that improves. Then golden-section search in
/// t between the neighbours of the best candidate. Returns the smallest value evaluated.
pub(crate) fn minimise_continuous(
    form: &ClosedForm,
    objective: impl Fn(f64, f64) -> f64,
) -> (f64, f64) {
    minimise_over_orders(form, objective, false)
}

/// [`minimise_continuous`], with `wide`: cheap curves are also searched out to λ − 1 = e^{−36}
/// and λ ≈ 1e304 (for the (ε, δ) conversions, whose objectives hold at every order).
fn minimise_over_orders(
    form: &ClosedForm,
    objective: impl Fn(f64, f64) -> f64,
    wide: bool,
) -> (f64, f64) {
    let cheap = form.is_cheap();
    let f = |l: f64| objective(form.eval(l), l);
    let mut candidates: Vec<f64> = DP_ACCOUNTING_ORDERS.clone();
    if cheap {
        // t = ln(λ−1) ∈ [−12, 16] in steps of 0.05: fine enough to bracket the minimum of
        // these convex-in-practice objectives before golden-section refinement; wide, also in
        // steps of 0.5 out to where λ−1 is the smallest double step above 1 (t = −36) and to
        // λ ≈ 1e304 (t = 700): the optimal order of a tiny ρ is beyond e^16 (about 1/√(2ρ)
        // for the CKS δ), of a huge one just above 1.
        candidates.extend((0..=560).map(|i| 1.0 + libm::exp(-12.0 + 0.05 * f64::from(i))));
        if wide && form.holds_at_every_order() {
            candidates.extend((0..48).map(|i| 1.0 + libm::exp(-36.0 + 0.5 * f64::from(i))));
            candidates.extend((1..=1368).map(|i| 1.0 + libm::exp(16.0 + 0.5 * f64::from(i))));
        }
        candidates.sort_by(f64::total_cmp);
        candidates.dedup();
    }
    // Orders that provably cannot attain the minimum are skipped (+∞): the same minimum at
    // the same candidate as evaluating them all.
    let mut values = form.objective_at(&candidates, &objective);
    let mut best = argmin(&values);
    if !cheap {
        while best == candidates.len() - 1 && candidates[best] < 1.0e9 {
            let next = 2.0 * candidates[best];
            candidates.push(next);
            values.push(f(next));
            best = argmin(&values);
        }
    }
    let mut result = (values[best], candidates[best]);
    if !values[best].is_finite() {
        return result;
    }
    let t_of = |l: f64| libm::log(l - 1.0);
    let lo = t_of(candidates[best.saturating_sub(1)]);
    let hi = t_of(candidates[(best + 1).min(candidates.len() - 1)]);
    let tol = if cheap { 1e-12 } else { 1e-6 };
    let (t, v) = golden_min(|t| f(1.0 + libm::exp(t)), lo, hi, tol);
    if v < result.0 {
        result = (v, 1.0 + libm::exp(t));
    }
    result
}

fn argmin(values: &[f64]) -> usize {
    let mut best = 0;
    for (i, v) in values.iter().enumerate() {
        if *v < values[best] || values[best].is_nan() {
            best = i;
        }
    }
    best
}

/// (ε, δ) of ρ-zCDP, by the RDP curve ρλ and the accountant's rule.
pub fn zcdp_epsilon(rho: f64, delta: f64, accountant: &Accountant) -> Result<DpBound> {
    accountant.epsilon(&RdpCurve::zcdp(rho)?, delta)
}

/// Pure ε-DP implies (ε²/2)-zCDP (Bun–Steinke 2016, Prop. 1.4).
pub fn pure_to_zcdp(epsilon: f64) -> Result<f64> {
    let e = Range::NonNegative.check("epsilon", epsilon)?;
    Ok(0.5 * e * e)
}

/// μ-GDP implies (μ²/2)-zCDP (its Rényi curve is exactly μ²λ/2).
pub fn gdp_to_zcdp(mu: f64) -> Result<f64> {
    let mu = Range::NonNegative.check("mu", mu)?;
    Ok(0.5 * mu * mu)
}

/// The exact δ(ε) of μ-GDP (Dong–Roth–Su 2019, Cor. 2.13), rounded up:
/// δ = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2). The closed form is computed in log space, with a
/// bound on its rounding error; where the two terms cancel (tiny μ, or ε near the mean privacy
/// loss) beyond 1e-10 relative, δ is integrated instead ([`gdp_delta_integral`]). The value
/// returned is never below the exact δ, and never 0: a δ below every double is the smallest
/// positive one.
pub fn gdp_delta(mu: f64, epsilon: f64) -> Result<f64> {
    let mu = Range::Positive.check("mu", mu)?;
    let epsilon = Range::NonNegative.check("epsilon", epsilon)?;
    Ok(exp_bound(gdp_log_delta(mu, epsilon)).min(1.0))
}

/// ln of [`gdp_delta`]'s upper bound, unfloored (it may lie below the doubles' range).
fn gdp_log_delta(mu: f64, epsilon: f64) -> f64 {
    let (a, b) = (-epsilon / mu + mu / 2.0, -epsilon / mu - mu / 2.0);
    let (log_a, log_b) = (log_ndtr(a), log_ndtr(b));
    // The error of ln Φ(x): erfc's few ulps and the ln's, 1e-13 more where the tail series
    // takes over (x < −25√2; its first omitted term), plus the rounding of x times ln Φ's
    // slope (about |x| in the left tail).
    let err = |x: f64, log: f64| {
        let series = if x < -35.0 { 1e-13 } else { 0.0 };
        series + ROUNDING * (1.0 + log.abs() + x * x)
    };
    let (err_a, err_b) = (err(a, log_a), err(b, log_b));
    // x = ln(e^ε Φ(b) / Φ(a)) ≤ 0, and δ = Φ(a) (1 − e^x).
    let x = epsilon + log_b - log_a;
    let err_x = err_a + err_b + ROUNDING * (epsilon + log_a.abs() + log_b.abs());
    let (upper, lower) = (-libm::expm1(x - err_x), -libm::expm1(x + err_x));
    let log_delta = if lower > 0.0 && upper <= lower * (1.0 + 1e-10) {
        log_a + err_a + libm::log(upper) + ROUNDING
    } else {
        // Φ(a) itself bounds δ where the integral is out of reach.
        gdp_delta_integral(mu, epsilon).map_or(log_a + err_a, |l| l + 1e-12)
    };
    log_delta.max(f64::MIN)
}

/// 20-point Gauss–Legendre nodes and weights on [−1, 1].
static GAUSS_LEGENDRE_20: LazyLock<Vec<(f64, f64)>> =
    LazyLock::new(|| crate::numeric::gauss_legendre(20));

/// ln δ(ε) of μ-GDP as the integral of a positive function, without cancellation: with the
/// privacy loss L ~ N(μ²/2, μ²), δ = E[(1 − e^{ε−L})₊] = ∫₀^∞ (1 − e^{−μt}) φ(z₀ + t) dt,
/// z₀ = ε/μ − μ/2, by composite 20-point Gauss–Legendre on panels narrower than every scale
/// of the integrand (1, 1/|z₀|, 1/μ), out to where it is below e^{−200} of its peak
/// (accurate to about 1e-14 relative). None where that needs more than 10⁵ panels.
fn gdp_delta_integral(mu: f64, epsilon: f64) -> Option<f64> {
    let z0 = epsilon / mu - mu / 2.0;
    let h = 0.5 * 1f64.min(1.0 / z0.abs()).min(1.0 / mu);
    // For z₀ > 0, φ(z₀ + t) = φ(z₀) e^{−z₀t − t²/2}, which falls below e^{−200} of φ(z₀) at
    // t = 400/(z₀ + √(z₀² + 400)); for z₀ ≤ 0 the peak is at t = −z₀, of width 1.
    let end = if z0 > 0.0 {
        400.0 / (z0 + libm::hypot(z0, 20.0))
    } else {
        -z0 + 21.0
    };
    let panels = (end / h).ceil();
    // NaN panels (a NaN scale) fail too.
    if panels.is_nan() || panels > 1e5 {
        return None;
    }
    let f = |t: f64| {
        let log_phi = if z0 > 0.0 {
            -z0 * t - 0.5 * t * t
        } else {
            -0.5 * (z0 + t) * (z0 + t)
        };
        -libm::expm1(-mu * t) * libm::exp(log_phi)
    };
    let mut sum = 0.0;
    for k in 0..panels as usize {
        let lo = k as f64 * h;
        for (x, w) in GAUSS_LEGENDRE_20.iter() {
            sum += 0.5 * h * w * f(lo + 0.5 * h * (x + 1.0));
        }
    }
    let log_scale = if z0 > 0.0 { -0.5 * z0 * z0 } else { 0.0 };
    Some(log_scale - 0.5 * libm::log(2.0 * std::f64::consts::PI) + libm::log(sum))
}

/// The exact smallest ε with δ(ε) ≤ δ for μ-GDP, by bisection on the decreasing δ(ε); the
/// returned ε is one whose δ(ε) was computed and checked (an upper bound within 1e-12).
pub fn gdp_epsilon(mu: f64, delta: f64) -> Result<DpBound> {
    let mu = Range::Positive.check("mu", mu)?;
    let delta = Range::OpenUnit.check("delta", delta)?;
    // Compared in log space (a subnormal δ has no relative precision left), against a lower
    // bound of ln δ.
    let ln_delta = libm::log(delta) - ROUNDING * (1.0 + libm::log(delta).abs());
    let meets = |e: f64| gdp_log_delta(mu, e) <= ln_delta;
    let epsilon = if meets(0.0) {
        0.0
    } else {
        let mut hi = 1.0_f64;
        while !meets(hi) {
            hi *= 2.0;
            if hi > 1e6 {
                return Err(Error::Infeasible(format!(
                    "no epsilon below 1e6 meets delta = {} for mu = {}",
                    fmt_num(delta),
                    fmt_num(mu)
                )));
            }
        }
        crate::numeric::bisect_boundary(meets, 0.0, hi, 1e-13)
    };
    Ok(DpBound {
        epsilon,
        delta,
        order: None,
    })
}

/// The μ of GDP: a finite number > 0 or +∞ (non-private).
pub fn check_mu(mu: f64) -> Result<f64> {
    if mu == f64::INFINITY || Range::Positive.contains(mu) {
        Ok(mu)
    } else {
        Err(Error::invalid(
            "mu",
            fmt_num(mu),
            "a finite number > 0, or inf (non-private)",
        ))
    }
}

/// The privacy of a μ-GDP release at δ (spec 004 §1.6).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GdpReport {
    pub mu: f64,
    /// The exact ε of the GDP curve at δ.
    pub epsilon: f64,
    pub delta: f64,
    /// ρ = μ²/2 of the implied zCDP.
    pub rho: f64,
    /// The looser ε = ρ + 2√(ρ ln(1/δ)) of the zCDP route (≥ `epsilon`).
    pub zcdp_epsilon: f64,
}

/// (ε, δ) and ρ of μ-GDP (μ finite).
pub fn gdp_report(mu: f64, delta: f64) -> Result<GdpReport> {
    let bound = gdp_epsilon(mu, delta)?;
    let rho = gdp_to_zcdp(mu)?;
    Ok(GdpReport {
        mu,
        epsilon: bound.epsilon,
        delta: bound.delta,
        rho,
        zcdp_epsilon: rho + 2.0 * (rho * libm::log(1.0 / delta)).sqrt(),
    })
}

/// The largest μ (to 1e-12 relative) whose reported ε at δ is at most `epsilon`: the μ of a
/// run planned for (ε, δ). The returned μ's guarantee is checked, never above the target.
pub fn mu_for_budget(epsilon: f64, delta: f64) -> Result<f64> {
    Range::Positive.check("epsilon", epsilon)?;
    Range::OpenUnit.check("delta", delta)?;
    let meets = |mu: f64| gdp_epsilon(mu, delta).is_ok_and(|b| b.epsilon <= epsilon);
    // ε(δ) grows with μ: a bracket [lo (meets), hi (does not)], then bisection.
    let mut lo = 1.0;
    while !meets(lo) {
        lo *= 0.5;
        if lo < 1e-12 {
            return Err(Error::Infeasible(format!(
                "no mu >= 1e-12 meets (epsilon, delta) = ({}, {})",
                fmt_num(epsilon),
                fmt_num(delta)
            )));
        }
    }
    let mut hi = 2.0 * lo;
    while meets(hi) {
        lo = hi;
        hi *= 2.0;
        if hi > 1e9 {
            return Ok(lo);
        }
    }
    // The largest μ that meets the target, within a relative 1e-12: the bracket's lower end.
    Ok(crate::numeric::bisect_bracket(|mu| !meets(mu), lo, hi, 1e-12).0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--orders 2..65536` on a series-based curve (a subsampled Gaussian: without replacement,
    /// Poisson, a composition of them) sums 2·10⁹ terms: refused by name before any, while a
    /// closed form takes them all and 2..8192 stays allowed.
    #[test]
    fn order_lists_beyond_the_series_budget_are_refused() {
        let all = Orders::parse("2..65536").unwrap();
        let acc = Accountant {
            orders: all,
            ..Accountant::default()
        };
        let wor = crate::accounting::DpSgd::with_sampling(
            crate::accounting::LotSampling::WithoutReplacement,
            0.01,
            1.0,
            100,
        )
        .unwrap()
        .rdp();
        let poisson = crate::accounting::DpSgd::new(0.01, 300.0, 100)
            .unwrap()
            .rdp();
        for curve in [&wor, &poisson, &wor.compose(&poisson).unwrap()] {
            let e = acc.epsilon(curve, 1e-5).unwrap_err().to_string();
            assert!(e.contains("orders") && e.contains("at most 3.5e7"), "{e}");
            assert!(acc.delta(curve, 1.0).is_err());
        }
        assert!(acc.epsilon(&RdpCurve::zcdp(0.1).unwrap(), 1e-5).is_ok());
        let form = wor.closed_form().unwrap();
        let allowed = Orders::parse("2..8192").unwrap();
        let Orders::List(list) = allowed else {
            unreachable!()
        };
        assert!(check_series_terms(form, &list).is_ok());
    }

    /// The accountant skips orders of DP-SGD curves that cannot attain the minimum; the same
    /// curves sampled on a grid are searched at every order. Both must give the same (ε, order)
    /// and (δ, order), to the bit, on dp-accounting's orders and on a dense list (fractional
    /// orders between every integer, integers out to 4096), with and without a Gaussian term
    /// composed in, with and without dp-accounting's guards.
    #[test]
    fn skipping_orders_changes_no_bound() {
        use crate::accounting::{DpSgd, LotSampling};
        let dense: Vec<f64> = (1..400)
            .map(|i| 1.0 + f64::from(i) * 0.05)
            .chain((21..=64).map(f64::from))
            .chain([100.0, 128.0, 1000.0, 4096.0, 70_000.0])
            .collect();
        // Fractional orders below the first integer one (as dp-accelerator's): the search
        // bounds them from integers it evaluates only for that.
        let sparse: Vec<f64> = (0..50)
            .map(|i| 1.01 + f64::from(i) * 0.14265)
            .chain((9..=63).map(f64::from))
            .chain([114.0, 512.0])
            .collect();
        let mut cases = 0;
        for &q in &[1e-6, 1e-3, 256.0 / 60000.0, 0.02, 0.1, 0.5, 0.95] {
            for &sigma in &[0.4, 0.8, 1.1, 2.0, 6.0] {
                for &steps in &[1, 30, 14063, 1_000_000] {
                    let run = DpSgd::with_sampling(LotSampling::Poisson, q, sigma, steps).unwrap();
                    for gaussian in [None, Some(0.05)] {
                        let mut curve = run.rdp();
                        if let Some(rho) = gaussian {
                            curve = curve.compose(&RdpCurve::zcdp(rho).unwrap()).unwrap();
                        }
                        for (orders, list) in [
                            (Orders::DpAccounting, &DP_ACCOUNTING_ORDERS[..]),
                            (Orders::List(dense.clone()), &dense[..]),
                            (Orders::List(sparse.clone()), &sparse[..]),
                        ] {
                            let grid = curve.on_orders(list).unwrap();
                            for conversion in [Conversion::Cks, Conversion::Mironov] {
                                let acc = Accountant::new(orders.clone(), conversion);
                                for delta in [1e-5, 1e-10] {
                                    let (a, b) = (
                                        acc.epsilon(&curve, delta).unwrap(),
                                        acc.epsilon(&grid, delta).unwrap(),
                                    );
                                    let what = format!("q={q} σ={sigma} T={steps} ρ={gaussian:?} {conversion:?} δ={delta}");
                                    assert_eq!(
                                        a.epsilon.to_bits(),
                                        b.epsilon.to_bits(),
                                        "{what}: {a:?} vs {b:?}"
                                    );
                                    assert_eq!(a.order, b.order, "{what}");
                                }
                                for epsilon in [0.5, 4.0] {
                                    let (a, b) = (
                                        acc.delta(&curve, epsilon).unwrap(),
                                        acc.delta(&grid, epsilon).unwrap(),
                                    );
                                    assert_eq!(
                                        a.delta.to_bits(),
                                        b.delta.to_bits(),
                                        "ε={epsilon}: {a:?} vs {b:?}"
                                    );
                                    assert_eq!(a.order, b.order);
                                }
                                cases += 1;
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(cases, 7 * 5 * 4 * 2 * 3 * 2);
    }

    /// Skipping needs the objective non-decreasing in ε(λ) at each order: the conversions are.
    #[test]
    fn conversions_are_non_decreasing_in_the_rdp() {
        for conversion in [Conversion::Cks, Conversion::Mironov] {
            for guards in [false, true] {
                let rule = Rule {
                    conversion,
                    dp_accounting_guards: guards,
                };
                for &order in &[1.005, 1.1, 1.5, 2.0, 7.3, 64.0, 1e4] {
                    let mut last = (f64::NEG_INFINITY, f64::NEG_INFINITY);
                    for i in 0..4000 {
                        let rdp = 1e-12 * 1.02f64.powi(i);
                        let now = (
                            rule.epsilon(rdp, order, 1e-6),
                            rule.log_delta(rdp, order, 1.0),
                        );
                        assert!(
                            now.0 >= last.0 && now.1 >= last.1,
                            "{conversion:?} λ={order} ε(λ)={rdp}"
                        );
                        last = now;
                    }
                }
            }
        }
    }

    #[test]
    fn dp_accounting_grid_has_156_orders() {
        assert_eq!(DP_ACCOUNTING_ORDERS.len(), 156);
        assert_eq!(DP_ACCOUNTING_ORDERS[0], 1.1);
        assert_eq!(DP_ACCOUNTING_ORDERS[98], 10.9);
        assert_eq!(*DP_ACCOUNTING_ORDERS.last().unwrap(), 1024.0);
    }

    #[test]
    fn orders_parse() {
        assert_eq!(Orders::parse("continuous").unwrap(), Orders::Continuous);
        assert_eq!(
            Orders::parse("dp-accounting").unwrap(),
            Orders::DpAccounting
        );
        assert_eq!(
            Orders::parse("2, 4.5,8").unwrap(),
            Orders::List(vec![2.0, 4.5, 8.0])
        );
        assert_eq!(
            Orders::parse("2..5").unwrap(),
            Orders::List(vec![2.0, 3.0, 4.0, 5.0])
        );
        for bad in [
            "", "1", "2,x", "0.5", "nan", "inf", "2,,3", "1..5", "5..2", "2..", "..4", "2..70000",
            "2.5..4",
        ] {
            assert!(Orders::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn zcdp_goldens_from_spec_000() {
        // Table B (single run): 0.1-zCDP at δ = 1e-6 gives ε = 2.141939 (CKS, continuous λ).
        let acc = Accountant::default();
        let b = zcdp_epsilon(0.1, 1e-6, &acc).unwrap();
        assert!((b.epsilon - 2.141939).abs() < 2e-6, "{}", b.epsilon);
        // Table D: δ(ε=1) = 8.93324577e-3 and δ(ε=2) = 4.32521087e-6 at ρ = 0.1.
        let c = RdpCurve::zcdp(0.1).unwrap();
        let d1 = acc.delta(&c, 1.0).unwrap().delta;
        let d2 = acc.delta(&c, 2.0).unwrap().delta;
        assert!((d1 / 8.93324577e-3 - 1.0).abs() < 1e-7, "{d1}");
        assert!((d2 / 4.32521087e-6 - 1.0).abs() < 1e-7, "{d2}");
    }

    #[test]
    fn mironov_closed_form_for_zcdp() {
        // min_λ ρλ + ln(1/δ)/(λ−1) = ρ + 2√(ρ ln(1/δ)).
        let acc = Accountant::new(Orders::Continuous, Conversion::Mironov);
        for &(rho, delta) in &[(0.1, 1e-6), (2.0, 1e-5), (0.001, 1e-9)] {
            let got = zcdp_epsilon(rho, delta, &acc).unwrap().epsilon;
            let exact = rho + 2.0 * (rho * libm::log(1.0f64 / delta)).sqrt();
            assert!(
                got >= exact - 1e-12 && got - exact < 1e-9,
                "{got} vs {exact}"
            );
        }
    }

    #[test]
    fn gdp_round_trip_and_zero() {
        for &(mu, delta) in &[(0.5, 1e-5), (1.0, 1e-6), (3.0, 1e-3)] {
            let b = gdp_epsilon(mu, delta).unwrap();
            let d = gdp_delta(mu, b.epsilon).unwrap();
            assert!(d <= delta && d > delta * (1.0 - 1e-9), "μ={mu}: δ(ε)={d}");
        }
        // δ(0) = 2Φ(μ/2) − 1: with a δ above that, ε = 0.
        // (Rounded up: above it by at most its rounding allowance; tests/suite/precision.rs checks
        // against exact values.)
        let d0 = gdp_delta(0.1, 0.0).unwrap();
        let exact = 2.0 * crate::numeric::ndtr(0.05) - 1.0;
        assert!((d0 - exact).abs() < 1e-12 * exact, "{d0} vs {exact}");
        assert_eq!(gdp_epsilon(0.1, 0.5).unwrap().epsilon, 0.0);
    }

    #[test]
    fn conversions_reject_bad_targets() {
        let acc = Accountant::default();
        let c = RdpCurve::zcdp(0.1).unwrap();
        for d in [0.0, 1.0, -0.1, f64::NAN] {
            assert!(acc.epsilon(&c, d).is_err());
        }
        assert!(acc.delta(&c, -1.0).is_err() && acc.delta(&c, f64::NAN).is_err());
        assert!(gdp_epsilon(0.0, 1e-5).is_err() && gdp_delta(1.0, f64::NAN).is_err());
    }
}
