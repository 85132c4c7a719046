//! `RdpCurve`: a Rényi-DP guarantee ε(λ), either sampled on an explicit grid of orders or known
//! in closed form at every order λ > 1, with the operations privacy proofs use on curves.
//!
//! Every built-in mechanism curve is a Rényi divergence of a fixed pair of distributions (or an
//! upper bound that is itself non-decreasing in λ), so it is monotone and its own envelope;
//! sums, positive multiples, maxima and minima keep that. The one exception is the
//! without-replacement subsampled Gaussian (Theorem 9's values can dip slightly as λ grows): it
//! says it is not monotone, so [`RdpCurve::envelope`] gives it a numerical envelope. Custom curves (e.g. repeat-and-select
//! bounds, which carry a ln E[K]/(λ−1) term) say whether they are monotone.

use super::divergence::{
    laplace_rdp, randomized_response_rdp, subsampled_gaussian_rdp, subsampled_gaussian_rdp_bounds,
    MAX_SERIES_ORDER,
};
use super::subsampled_wor::wor_subsampled_gaussian_rdp;
use crate::error::{Error, Range, Result};
use rayon::prelude::*;
use std::sync::Arc;

/// ε(λ) of a mechanism (or of a composition of mechanisms).
#[derive(Clone, Debug, PartialEq)]
pub struct RdpCurve {
    repr: Repr,
}

#[derive(Clone, Debug, PartialEq)]
enum Repr {
    /// ε at each order; orders strictly increasing, all > 1; ε ≥ 0 or +∞.
    Grid {
        orders: Vec<f64>,
        eps: Vec<f64>,
    },
    ClosedForm(ClosedForm),
}

/// A curve known at every order λ > 1, defined outside this module (a repeat-and-select bound,
/// the exact divergence of two given distributions, …).
pub trait RdpFunction: Send + Sync + std::fmt::Debug {
    /// ε(λ) for λ > 1: an upper bound on the Rényi divergence of order λ.
    fn eval(&self, order: f64) -> f64;
    /// Whether one evaluation costs nanoseconds (so a dense continuous search is affordable).
    fn is_cheap(&self) -> bool;
    /// Whether ε(λ) is non-decreasing in λ (so the curve is its own envelope).
    fn is_monotone(&self) -> bool;
}

/// A curve that can be evaluated at every order λ > 1.
#[derive(Clone, Debug)]
pub enum ClosedForm {
    /// ρ-zCDP: ε(λ) = ρλ.
    Zcdp { rho: f64 },
    /// Pure ε-DP: ε(λ) = min(ε, ε²λ/2) (Bun–Steinke Prop. 1.4 with the trivial bound ε).
    PureDp { epsilon: f64 },
    /// The exact curve of the Laplace mechanism with pure parameter ε = Δ/b (Mironov 2017, Prop. 6).
    Laplace { epsilon: f64 },
    /// The exact curve of binary randomized response with pure parameter ε.
    RandomizedResponse { epsilon: f64 },
    /// One step of the Poisson-subsampled Gaussian mechanism (Mironov–Talwar–Zhang 2019).
    SubsampledGaussian {
        sampling_rate: f64,
        noise_multiplier: f64,
    },
    /// One step of the Gaussian mechanism on a fixed-size lot drawn without replacement, under
    /// replace-one neighbours (Wang–Balle–Kasiviswanathan 2019, Thm. 9; see
    /// [`super::subsampled_wor`], which also says how fractional orders are bounded). Not
    /// monotone in λ in general.
    WorSubsampledGaussian {
        sampling_rate: f64,
        noise_multiplier: f64,
    },
    /// Σ wᵢ·εᵢ(λ): composition; a weight k is k-fold self-composition.
    Sum(Vec<(f64, ClosedForm)>),
    /// max εᵢ(λ): running one of several mechanisms chosen independently of the data
    /// (quasi-convexity of Rényi divergence).
    Max(Vec<ClosedForm>),
    /// min εᵢ(λ): several valid bounds on the same mechanism.
    Min(Vec<ClosedForm>),
    /// A curve defined elsewhere.
    Custom(Arc<dyn RdpFunction>),
}

impl PartialEq for ClosedForm {
    fn eq(&self, other: &Self) -> bool {
        use ClosedForm::*;
        match (self, other) {
            (Zcdp { rho: a }, Zcdp { rho: b }) => a == b,
            (PureDp { epsilon: a }, PureDp { epsilon: b })
            | (Laplace { epsilon: a }, Laplace { epsilon: b })
            | (RandomizedResponse { epsilon: a }, RandomizedResponse { epsilon: b }) => a == b,
            (
                SubsampledGaussian {
                    sampling_rate: q1,
                    noise_multiplier: s1,
                },
                SubsampledGaussian {
                    sampling_rate: q2,
                    noise_multiplier: s2,
                },
            ) => q1 == q2 && s1 == s2,
            (
                WorSubsampledGaussian {
                    sampling_rate: q1,
                    noise_multiplier: s1,
                },
                WorSubsampledGaussian {
                    sampling_rate: q2,
                    noise_multiplier: s2,
                },
            ) => q1 == q2 && s1 == s2,
            (Sum(a), Sum(b)) => a == b,
            (Max(a), Max(b)) | (Min(a), Min(b)) => a == b,
            (Custom(a), Custom(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

/// The monotone envelope of a closed form that may not be monotone: ε(λ) ← min over orders
/// λ′ ≥ λ from a fixed log-spaced set (valid because D_λ ≤ D_λ′).
#[derive(Debug)]
struct Envelope(ClosedForm);

impl RdpFunction for Envelope {
    fn eval(&self, order: f64) -> f64 {
        // Coarse log grid of orders ≥ λ, then golden-section refinement around the best; every
        // value considered is the curve at some order ≥ λ, so the result is a valid bound.
        let t0 = libm::log(order - 1.0);
        let f = |t: f64| self.0.eval(1.0 + libm::exp(t));
        let (mut best_i, mut best) = (0, f64::INFINITY);
        for i in 0..=400 {
            let v = f(t0 + f64::from(i) * 0.05);
            if v < best {
                (best_i, best) = (i, v);
            }
        }
        let lo = t0 + f64::from(best_i.max(1) - 1) * 0.05;
        let hi = t0 + f64::from(best_i + 1) * 0.05;
        best.min(crate::numeric::golden_min(f, lo.max(t0), hi, 1e-10).1)
    }
    fn is_cheap(&self) -> bool {
        false
    }
    fn is_monotone(&self) -> bool {
        true
    }
}

/// A lower bound on ε(λ) at every order λ from lower bounds on D(k) at integer orders k, for a
/// curve of [`ClosedForm::integer_orders_are_divergences`]. A Rényi divergence D_λ is
/// non-decreasing in λ (van Erven and Harremoës 2014, Thm. 3) and (λ−1)·D_λ(P‖Q) =
/// ln E_Q[(dP/dQ)^λ], a log-moment-generating function, is convex in λ (Hölder); so are D and
/// (λ−1)·D, their sums with weights ≥ 0. So,
/// for the two largest orders k′ < k ≤ λ known, ε(λ) ≥ D(λ) ≥ max(D(k), [(k−1)D(k) + (λ−k)s]/(λ−1)),
/// s being the slope of (λ−1)·D's chord from k′ to k, taken from D(k)'s lower bound and
/// D(k′)'s upper bound (ε(k′)), so that it is never too steep.
#[derive(Debug, Default)]
struct IntegerOrderBound {
    /// (k, lower bound on D(k), ε(k) ≥ D(k)), in ascending order of k.
    known: Vec<(f64, f64, f64)>,
}

impl IntegerOrderBound {
    fn last_order(&self) -> Option<f64> {
        self.known.last().map(|k| k.0)
    }

    /// Records an order above every order recorded so far.
    fn push(&mut self, order: f64, lower: f64, upper: f64) {
        debug_assert!(self.last_order().is_none_or(|k| k < order));
        self.known.push((order, lower, upper));
    }

    /// A lower bound on ε(λ) (0 where no order ≤ λ is known).
    fn at(&self, order: f64) -> f64 {
        let n = self.known.partition_point(|k| k.0 <= order);
        if n == 0 {
            return 0.0;
        }
        let (k, d_k, _) = self.known[n - 1];
        if !d_k.is_finite() {
            return 0.0;
        }
        let mut bound = d_k;
        if n >= 2 && order > k {
            let (k0, _, e0) = self.known[n - 2];
            let slope = ((k - 1.0) * d_k - (k0 - 1.0) * e0) / (k - k0);
            if slope > 0.0 && slope.is_finite() {
                bound = bound.max(((k - 1.0) * d_k + (order - k) * slope) / (order - 1.0));
            }
        }
        // The few roundings above are each within an ulp of terms no larger than (λ−1)·D(λ)
        // times (λ−k)/(k−k′) ≤ 2^16: far inside this step.
        bound * (1.0 - 1e-9)
    }
}

impl ClosedForm {
    /// ε(λ) for λ > 1.
    pub fn eval(&self, order: f64) -> f64 {
        match self {
            // Rounded up: a table of ε(λ) prints ρλ of the given doubles rounded up (ρ = 0.1
            // is the double 0.1000000000000000055…, so 5ρ prints as 0.500001).
            ClosedForm::Zcdp { rho } => crate::numeric::mul_up(*rho, order),
            ClosedForm::PureDp { epsilon } => epsilon.min(0.5 * epsilon * epsilon * order),
            ClosedForm::Laplace { epsilon } => laplace_rdp(*epsilon, order),
            ClosedForm::RandomizedResponse { epsilon } => randomized_response_rdp(*epsilon, order),
            ClosedForm::SubsampledGaussian {
                sampling_rate,
                noise_multiplier,
            } => subsampled_gaussian_rdp(*sampling_rate, *noise_multiplier, order),
            ClosedForm::WorSubsampledGaussian {
                sampling_rate,
                noise_multiplier,
            } => wor_subsampled_gaussian_rdp(*sampling_rate, *noise_multiplier, order),
            ClosedForm::Sum(terms) => terms.iter().map(|(w, c)| weighted(*w, c.eval(order))).sum(),
            ClosedForm::Max(parts) => parts.iter().map(|c| c.eval(order)).fold(0.0, f64::max),
            ClosedForm::Min(parts) => parts
                .iter()
                .map(|c| c.eval(order))
                .fold(f64::INFINITY, f64::min),
            ClosedForm::Custom(f) => f.eval(order),
        }
    }

    /// Whether ε(λ) is non-decreasing (true for every built-in mechanism curve but the
    /// without-replacement bound, whose Theorem 9 values can dip slightly).
    pub fn is_monotone(&self) -> bool {
        match self {
            ClosedForm::WorSubsampledGaussian { .. } => false,
            ClosedForm::Sum(terms) => terms.iter().all(|(_, c)| c.is_monotone()),
            ClosedForm::Max(parts) | ClosedForm::Min(parts) => {
                parts.iter().all(ClosedForm::is_monotone)
            }
            ClosedForm::Custom(f) => f.is_monotone(),
            _ => true,
        }
    }

    /// ε at each of `orders`; series-based curves are evaluated in parallel (each order is
    /// computed independently, so the result does not depend on the thread count).
    pub fn eval_many(&self, orders: &[f64]) -> Vec<f64> {
        if self.is_cheap() {
            orders.iter().map(|&o| self.eval(o)).collect()
        } else {
            orders.par_iter().map(|&o| self.eval(o)).collect()
        }
    }

    /// `objective(ε(λ), λ)` at each of `orders`, for an `objective` non-decreasing in ε (every
    /// (ε, δ) conversion is), except at orders where it provably exceeds the smallest value
    /// found: +∞ there, so the minimum and the first order attaining it are exactly those of
    /// evaluating every order. Only a series-based curve whose values at integer orders are
    /// divergences ([`Self::integer_orders_are_divergences`]) skips orders: it is evaluated at
    /// its integer orders first, in ascending order, each skipped when the lower bound of
    /// [`IntegerOrderBound`] already loses, then at the other orders that bound leaves. Every other curve is evaluated everywhere. On Abadi et al.'s DP-SGD, a search
    /// on dp-accounting's 156 orders skips over 100 of them and takes a fifth of the time.
    pub fn objective_at(&self, orders: &[f64], objective: impl Fn(f64, f64) -> f64) -> Vec<f64> {
        if self.is_cheap() || !self.integer_orders_are_divergences() {
            let eps = self.eval_many(orders);
            return orders
                .iter()
                .zip(eps)
                .map(|(&l, e)| objective(e, l))
                .collect();
        }
        let is_divergence_order = |l: f64| l >= 2.0 && l.fract() == 0.0 && l <= MAX_SERIES_ORDER;
        // The list's integer orders and, below its largest fractional one (up to 64), the
        // integers it lacks: those are evaluated only to bound the fractional orders between
        // them (a few terms each), never to set the minimum (their values are not the list's).
        let top_fractional = orders
            .iter()
            .copied()
            .filter(|&l| !is_divergence_order(l) && l.is_finite())
            .fold(1.0, f64::max)
            .min(64.0);
        let mut steps: Vec<(f64, Option<usize>)> = (0..orders.len())
            .filter(|&i| is_divergence_order(orders[i]))
            .map(|i| (orders[i], Some(i)))
            .chain(
                (2..=top_fractional.floor() as u32)
                    .map(f64::from)
                    .filter(|k| !orders.contains(k))
                    .map(|k| (k, None)),
            )
            .collect();
        steps.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut values = vec![f64::INFINITY; orders.len()];
        let mut bound = IntegerOrderBound::default();
        let mut best = f64::INFINITY;
        for (l, slot) in steps {
            // A repeated order is evaluated once (later copies read +∞: no minimum changes).
            if bound.last_order() == Some(l) {
                continue;
            }
            if let Some(i) = slot {
                if objective(bound.at(l), l) > best {
                    continue;
                }
                let (lower, eps) = self.eval_with_lower_bound(l);
                let v = objective(eps, l);
                values[i] = v;
                best = best.min(v);
                bound.push(l, lower, eps);
            } else {
                let (lower, eps) = self.eval_with_lower_bound(l);
                bound.push(l, lower, eps);
            }
        }
        let rest: Vec<usize> = (0..orders.len())
            .filter(|&i| {
                let l = orders[i];
                let floor = objective(bound.at(l), l);
                !is_divergence_order(l) && (floor <= best || floor.is_nan())
            })
            .collect();
        let rest_orders: Vec<f64> = rest.iter().map(|&i| orders[i]).collect();
        // Waking a thread pool costs more than a few dozen series (about a microsecond each).
        let eps = if rest_orders.len() <= 64 {
            rest_orders.iter().map(|&l| self.eval(l)).collect()
        } else {
            self.eval_many(&rest_orders)
        };
        for (&i, eps) in rest.iter().zip(eps) {
            values[i] = objective(eps, orders[i]);
        }
        values
    }

    /// Whether ε(λ) ≥ D(λ) := Σ wᵢ·D_λ(Pᵢ‖Qᵢ) at every order, for fixed pairs of distributions
    /// (Pᵢ, Qᵢ) and weights wᵢ ≥ 0, with [`Self::eval_with_lower_bound`] bounding D(k) from below
    /// at integer orders 2 ≤ k ≤ [`MAX_SERIES_ORDER`]: then [`IntegerOrderBound`] bounds ε from
    /// below everywhere. True of ρλ (the Gaussian mechanism), of Mironov–Talwar–Zhang's
    /// subsampled Gaussian (exact sums at integer orders, upper bounds between) and of their
    /// compositions.
    pub fn integer_orders_are_divergences(&self) -> bool {
        match self {
            ClosedForm::Zcdp { .. } | ClosedForm::SubsampledGaussian { .. } => true,
            ClosedForm::Sum(terms) => terms
                .iter()
                .all(|(w, c)| w.is_finite() && *w >= 0.0 && c.integer_orders_are_divergences()),
            _ => false,
        }
    }

    /// (a lower bound on D(λ), ε(λ)) for a curve of [`Self::integer_orders_are_divergences`]:
    /// ε(λ) is exactly [`Self::eval`]'s value; the lower bound is 0 where the curve has none.
    fn eval_with_lower_bound(&self, order: f64) -> (f64, f64) {
        match self {
            ClosedForm::Zcdp { rho } => (
                crate::numeric::mul_down(*rho, order),
                crate::numeric::mul_up(*rho, order),
            ),
            ClosedForm::SubsampledGaussian {
                sampling_rate,
                noise_multiplier,
            } => subsampled_gaussian_rdp_bounds(*sampling_rate, *noise_multiplier, order),
            ClosedForm::Sum(terms) => {
                let parts: Vec<(f64, f64)> = terms
                    .iter()
                    .map(|(w, c)| {
                        let (lo, hi) = c.eval_with_lower_bound(order);
                        (weighted(*w, lo), weighted(*w, hi))
                    })
                    .collect();
                // The upper sum as `eval` adds it; the lower one shrunk by an ulp per operation.
                let lower: f64 = parts.iter().map(|p| p.0).sum();
                let slack = 1.0 - 2.0 * (parts.len() as f64 + 1.0) * f64::EPSILON;
                ((lower * slack).max(0.0), parts.iter().map(|p| p.1).sum())
            }
            other => (0.0, other.eval(order)),
        }
    }

    /// About how many series terms one evaluation at `order` sums (0 for a closed form): a
    /// subsampled Gaussian's RDP at integer order λ ≤ [`MAX_SERIES_ORDER`] is a sum of λ terms,
    /// at a fractional one about 2λ + 1000 (Poisson) or two integer orders' (without
    /// replacement); the time a list of orders takes is their total.
    pub fn series_terms(&self, order: f64) -> f64 {
        let series = |q: f64, fractional: f64| {
            if q <= 0.0 || q >= 1.0 || order > MAX_SERIES_ORDER {
                0.0
            } else if order.fract() == 0.0 {
                order
            } else {
                fractional
            }
        };
        match self {
            ClosedForm::SubsampledGaussian { sampling_rate, .. } => {
                series(*sampling_rate, 2.0 * order + 1000.0)
            }
            ClosedForm::WorSubsampledGaussian { sampling_rate, .. } => {
                series(*sampling_rate, 2.0 * order.max(2.0) + 1.0)
            }
            ClosedForm::Sum(terms) => terms.iter().map(|(_, c)| c.series_terms(order)).sum(),
            ClosedForm::Max(parts) | ClosedForm::Min(parts) => {
                parts.iter().map(|c| c.series_terms(order)).sum()
            }
            _ => 0.0,
        }
    }

    /// Whether one evaluation costs nanoseconds (a dense continuous search is affordable) rather
    /// than a series (the subsampled Gaussian).
    pub fn is_cheap(&self) -> bool {
        match self {
            ClosedForm::SubsampledGaussian { .. } | ClosedForm::WorSubsampledGaussian { .. } => {
                false
            }
            ClosedForm::Sum(terms) => terms.iter().all(|(_, c)| c.is_cheap()),
            ClosedForm::Max(parts) | ClosedForm::Min(parts) => {
                parts.iter().all(ClosedForm::is_cheap)
            }
            ClosedForm::Custom(f) => f.is_cheap(),
            _ => true,
        }
    }

    /// Whether the curve is a mechanism's formula at every order λ > 1 (no user-supplied or
    /// derived function, which may hold only over the orders it was built for): the (ε, δ)
    /// conversions then search orders out to λ ≈ 1e304.
    pub fn holds_at_every_order(&self) -> bool {
        match self {
            ClosedForm::Sum(terms) => terms.iter().all(|(_, c)| c.holds_at_every_order()),
            ClosedForm::Max(parts) | ClosedForm::Min(parts) => {
                parts.iter().all(ClosedForm::holds_at_every_order)
            }
            ClosedForm::Custom(_) => false,
            _ => true,
        }
    }

    /// ρ when the curve is exactly ρλ (a sum of zCDP terms), so callers can use closed forms.
    pub fn as_zcdp(&self) -> Option<f64> {
        match self {
            ClosedForm::Zcdp { rho } => Some(*rho),
            ClosedForm::Sum(terms) => terms
                .iter()
                .map(|(w, c)| c.as_zcdp().map(|rho| w * rho))
                .sum(),
            _ => None,
        }
    }

    fn scaled(self, k: f64) -> ClosedForm {
        match self {
            ClosedForm::Zcdp { rho } => ClosedForm::Zcdp { rho: k * rho },
            ClosedForm::Sum(terms) => {
                ClosedForm::Sum(terms.into_iter().map(|(w, c)| (k * w, c)).collect())
            }
            other => ClosedForm::Sum(vec![(k, other)]),
        }
    }

    /// Composition, flattening nested sums and merging zCDP terms so curves stay small.
    fn plus(self, other: ClosedForm) -> ClosedForm {
        let mut rho = 0.0;
        let mut terms = Vec::new();
        for (w, c) in self.into_terms().into_iter().chain(other.into_terms()) {
            match c {
                ClosedForm::Zcdp { rho: r } => rho += w * r,
                c => terms.push((w, c)),
            }
        }
        if terms.is_empty() {
            return ClosedForm::Zcdp { rho };
        }
        if rho > 0.0 {
            terms.insert(0, (1.0, ClosedForm::Zcdp { rho }));
        }
        if terms.len() == 1 && terms[0].0 == 1.0 {
            return terms.pop().expect("one term").1;
        }
        ClosedForm::Sum(terms)
    }

    fn into_terms(self) -> Vec<(f64, ClosedForm)> {
        match self {
            ClosedForm::Sum(terms) => terms,
            other => vec![(1.0, other)],
        }
    }
}

/// w·ε with 0·∞ = 0 (a mechanism run zero times costs nothing).
fn weighted(w: f64, eps: f64) -> f64 {
    if w == 0.0 {
        0.0
    } else {
        w * eps
    }
}

/// The largest RDP curve file read (1 MiB: tens of thousands of orders).
pub const MAX_CSV_BYTES: u64 = 1 << 20;

impl RdpCurve {
    /// ρ-zCDP, ε(λ) = ρλ.
    pub fn zcdp(rho: f64) -> Result<Self> {
        let rho = Range::NonNegative.check("rho", rho)?;
        Ok(Self::closed(ClosedForm::Zcdp { rho }))
    }

    /// Pure ε-DP as a curve: min(ε, ε²λ/2).
    pub fn pure_dp(epsilon: f64) -> Result<Self> {
        let epsilon = Range::NonNegative.check("epsilon", epsilon)?;
        Ok(Self::closed(ClosedForm::PureDp { epsilon }))
    }

    /// A curve sampled at explicit orders (e.g. read from a file or from another library).
    /// Orders must be finite, > 1 and distinct (they are sorted); ε must be ≥ 0 (+∞ allowed).
    pub fn on_grid(orders: Vec<f64>, eps: Vec<f64>) -> Result<Self> {
        if orders.is_empty() {
            return Err(Error::invalid("orders", "[]", "a non-empty list of orders"));
        }
        if orders.len() != eps.len() {
            return Err(Error::invalid(
                "epsilons",
                format!("{} values", eps.len()),
                format!("one value per order ({} orders)", orders.len()),
            ));
        }
        for &o in &orders {
            Range::Order.check("order", o)?;
        }
        for &e in &eps {
            if e.is_nan() || e < 0.0 {
                return Err(Error::invalid("epsilon", e, "a number >= 0 (or inf)"));
            }
        }
        let mut pairs: Vec<(f64, f64)> = orders.into_iter().zip(eps).collect();
        pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
        if let Some(w) = pairs.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(Error::invalid(
                "order",
                w[0].0,
                "distinct orders (this one is repeated)",
            ));
        }
        let (orders, eps) = pairs.into_iter().unzip();
        Ok(RdpCurve {
            repr: Repr::Grid { orders, eps },
        })
    }

    /// Reads a sampled curve from a CSV file with the header `order,epsilon`.
    /// An RDP curve file is a few orders: one larger than [`MAX_CSV_BYTES`] (or an endless
    /// device such as `/dev/urandom`) is refused after reading that much, never read whole.
    pub fn from_csv_file(path: &std::path::Path) -> Result<Self> {
        use std::io::Read;
        let file = path.display().to_string();
        let fail = |reason: String| Error::Data {
            file: file.clone(),
            line: 0,
            reason,
        };
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_CSV_BYTES + 1).read_to_end(&mut bytes))
            .map_err(|e| fail(format!("cannot read: {e}")))?;
        if bytes.len() as u64 > MAX_CSV_BYTES {
            return Err(fail(format!(
                "larger than {MAX_CSV_BYTES} bytes: not an `order,epsilon` curve"
            )));
        }
        let text = String::from_utf8(bytes)
            .map_err(|_| fail("not UTF-8 text: expected `order,epsilon` CSV".into()))?;
        Self::from_csv(&text, &file)
    }

    /// Parses `order,epsilon` CSV text (`source` names it in errors). Blank lines are skipped.
    pub fn from_csv(text: &str, source: &str) -> Result<Self> {
        let err = |line: usize, reason: String| Error::Data {
            file: source.to_string(),
            line,
            reason,
        };
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        match lines.next() {
            Some((_, h)) if h.split(',').map(str::trim).eq(["order", "epsilon"]) => {}
            Some((i, h)) => {
                return Err(err(
                    i + 1,
                    format!("header must be `order,epsilon`, found `{}`", h.trim()),
                ))
            }
            None => {
                return Err(err(
                    0,
                    "empty file: expected a header `order,epsilon` and rows".into(),
                ))
            }
        }
        let (mut orders, mut eps) = (Vec::new(), Vec::new());
        for (i, line) in lines {
            let cells: Vec<&str> = line.split(',').map(str::trim).collect();
            if cells.len() != 2 {
                return Err(err(
                    i + 1,
                    format!("expected 2 cells (order,epsilon), found {}", cells.len()),
                ));
            }
            let order: f64 = cells[0]
                .parse()
                .map_err(|_| err(i + 1, format!("order `{}` is not a number", cells[0])))?;
            let e: f64 = cells[1]
                .parse()
                .map_err(|_| err(i + 1, format!("epsilon `{}` is not a number", cells[1])))?;
            if !Range::Order.contains(order) {
                return Err(err(
                    i + 1,
                    format!("order {order} must be a finite number > 1"),
                ));
            }
            if e.is_nan() || e < 0.0 {
                return Err(err(i + 1, format!("epsilon {e} must be >= 0 (or inf)")));
            }
            orders.push(order);
            eps.push(e);
        }
        if orders.is_empty() {
            return Err(err(1, "no rows after the header".into()));
        }
        Self::on_grid(orders, eps).map_err(|e| err(0, e.to_string()))
    }

    pub fn closed(form: ClosedForm) -> Self {
        RdpCurve {
            repr: Repr::ClosedForm(form),
        }
    }

    /// The closed form, when the curve has one.
    pub fn closed_form(&self) -> Option<&ClosedForm> {
        match &self.repr {
            Repr::ClosedForm(c) => Some(c),
            Repr::Grid { .. } => None,
        }
    }

    /// The grid (orders, ε), when the curve is sampled.
    pub fn grid(&self) -> Option<(&[f64], &[f64])> {
        match &self.repr {
            Repr::Grid { orders, eps } => Some((orders, eps)),
            Repr::ClosedForm(_) => None,
        }
    }

    /// ε(λ). A sampled curve answers only at its own orders.
    pub fn eval(&self, order: f64) -> Result<f64> {
        Range::Order.check("order", order)?;
        match &self.repr {
            Repr::ClosedForm(c) => Ok(c.eval(order)),
            Repr::Grid { orders, eps } => orders
                .iter()
                .position(|&o| o == order)
                .map(|i| eps[i])
                .ok_or_else(|| {
                    Error::invalid("order", order, "one of the orders the curve is sampled at")
                }),
        }
    }

    /// The curve sampled at `orders`: a closed form is evaluated there; a grid keeps those of
    /// `orders` it has (an error if it has none).
    pub fn on_orders(&self, orders: &[f64]) -> Result<Self> {
        match &self.repr {
            Repr::ClosedForm(c) => Self::on_grid(orders.to_vec(), c.eval_many(orders)),
            Repr::Grid { .. } => {
                let kept: Vec<f64> = orders
                    .iter()
                    .copied()
                    .filter(|&o| self.eval(o).is_ok())
                    .collect();
                if kept.is_empty() {
                    return Err(Error::invalid(
                        "orders",
                        format_orders(orders),
                        "orders at which the sampled curve is known",
                    ));
                }
                let eps = kept.iter().map(|&o| self.eval(o)).collect::<Result<_>>()?;
                Self::on_grid(kept, eps)
            }
        }
    }

    /// Composition: ε(λ) adds up. Two grids compose on the orders they share.
    pub fn compose(&self, other: &RdpCurve) -> Result<Self> {
        self.combine(other, |a, b| a.plus(b), |a, b| a + b)
    }

    /// Pointwise maximum: the curve of running one of the two, chosen without looking at data.
    pub fn max(&self, other: &RdpCurve) -> Result<Self> {
        self.combine(
            other,
            |a, b| {
                let mut parts = Vec::new();
                for c in [a, b] {
                    match c {
                        ClosedForm::Max(ps) => parts.extend(ps),
                        c => parts.push(c),
                    }
                }
                ClosedForm::Max(parts)
            },
            f64::max,
        )
    }

    /// k-fold self-composition (k = 0 is the curve of doing nothing).
    pub fn self_compose(&self, k: u64) -> Self {
        let k = k as f64;
        match &self.repr {
            Repr::ClosedForm(c) => Self::closed(c.clone().scaled(k)),
            Repr::Grid { orders, eps } => RdpCurve {
                repr: Repr::Grid {
                    orders: orders.clone(),
                    eps: eps.iter().map(|&e| weighted(k, e)).collect(),
                },
            },
        }
    }

    /// The monotone envelope: D_λ is non-decreasing in λ, so a bound at a higher order also
    /// holds at every lower one: ε(λᵢ) ← min_{λⱼ ≥ λᵢ} ε(λⱼ). Mechanism curves are already
    /// monotone; other closed forms get a numerical envelope.
    pub fn envelope(&self) -> Self {
        match &self.repr {
            Repr::ClosedForm(c) if c.is_monotone() => self.clone(),
            Repr::ClosedForm(c) => Self::closed(ClosedForm::Custom(Arc::new(Envelope(c.clone())))),
            Repr::Grid { orders, eps } => {
                let mut env = eps.clone();
                for i in (0..env.len().saturating_sub(1)).rev() {
                    env[i] = env[i].min(env[i + 1]);
                }
                RdpCurve {
                    repr: Repr::Grid {
                        orders: orders.clone(),
                        eps: env,
                    },
                }
            }
        }
    }

    fn combine(
        &self,
        other: &RdpCurve,
        closed: impl Fn(ClosedForm, ClosedForm) -> ClosedForm,
        pointwise: impl Fn(f64, f64) -> f64,
    ) -> Result<Self> {
        if let (Repr::ClosedForm(a), Repr::ClosedForm(b)) = (&self.repr, &other.repr) {
            return Ok(Self::closed(closed(a.clone(), b.clone())));
        }
        let orders: Vec<f64> = match (&self.repr, &other.repr) {
            (Repr::Grid { orders, .. }, Repr::ClosedForm(_)) => orders.clone(),
            (Repr::ClosedForm(_), Repr::Grid { orders, .. }) => orders.clone(),
            (Repr::Grid { orders: a, .. }, Repr::Grid { orders: b, .. }) => {
                a.iter().copied().filter(|o| b.contains(o)).collect()
            }
            _ => unreachable!("both closed forms handled above"),
        };
        if orders.is_empty() {
            return Err(Error::Infeasible(
                "the two sampled RDP curves share no order, so they cannot be combined".into(),
            ));
        }
        let eps = orders
            .iter()
            .map(|&o| Ok(pointwise(self.eval(o)?, other.eval(o)?)))
            .collect::<Result<Vec<f64>>>()?;
        Self::on_grid(orders, eps)
    }
}

pub(crate) fn format_orders(orders: &[f64]) -> String {
    let shown: Vec<String> = orders.iter().take(6).map(|o| o.to_string()).collect();
    let more = if orders.len() > 6 { ", …" } else { "" };
    format!("[{}{}]", shown.join(", "), more)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(orders: &[f64], eps: &[f64]) -> RdpCurve {
        RdpCurve::on_grid(orders.to_vec(), eps.to_vec()).unwrap()
    }

    /// The lower bound from integer orders never exceeds the curve, at integer and fractional
    /// orders, near and far from the orders it was built from.
    #[test]
    fn integer_order_bound_is_below_the_curve() {
        let orders: Vec<f64> = (1..2000)
            .map(|i| 1.0 + f64::from(i) * 0.01)
            .chain((21..300).map(f64::from))
            .collect();
        for &q in &[1e-7, 1e-3, 0.01, 0.2, 0.7, 0.999] {
            for &sigma in &[0.3, 0.7, 1.0, 3.0, 50.0] {
                let steps = ClosedForm::SubsampledGaussian {
                    sampling_rate: q,
                    noise_multiplier: sigma,
                }
                .scaled(1000.0);
                for form in [steps.clone(), steps.plus(ClosedForm::Zcdp { rho: 0.3 })] {
                    let mut bound = IntegerOrderBound::default();
                    for k in 2..=12 {
                        let (lower, upper) = form.eval_with_lower_bound(f64::from(k));
                        assert!(
                            lower <= upper && lower >= upper * (1.0 - 1e-9),
                            "q={q} σ={sigma} k={k}: {lower} {upper}"
                        );
                        assert_eq!(upper.to_bits(), form.eval(f64::from(k)).to_bits());
                        bound.push(f64::from(k), lower, upper);
                        for &l in &orders {
                            assert!(
                                bound.at(l) <= form.eval(l),
                                "q={q} σ={sigma} known to {k}, λ={l}: {} > {}",
                                bound.at(l),
                                form.eval(l)
                            );
                        }
                    }
                }
            }
        }
    }

    /// On Abadi et al.'s DP-SGD (the Python speed table's call), the search on dp-accounting's
    /// orders skips most of them (what makes it fast), and what it keeps matches every order's value.
    #[test]
    fn objective_at_skips_most_orders_of_dp_sgd() {
        use super::super::convert::{cks_epsilon, DP_ACCOUNTING_ORDERS};
        let form = ClosedForm::SubsampledGaussian {
            sampling_rate: 256.0 / 60000.0,
            noise_multiplier: 1.1,
        }
        .scaled(14063.0);
        let objective = |e: f64, l: f64| cks_epsilon(e, l, 1e-5);
        let some = form.objective_at(&DP_ACCOUNTING_ORDERS, objective);
        let skipped = some.iter().filter(|v| **v == f64::INFINITY).count();
        assert!(skipped >= 100, "{skipped} of 156 orders skipped");
        for (&l, &v) in DP_ACCOUNTING_ORDERS.iter().zip(&some) {
            if v != f64::INFINITY {
                assert_eq!(v.to_bits(), objective(form.eval(l), l).to_bits());
            }
        }
        // Orders fractional up to 8, then integers (dp-accelerator's): the integers 2..=8 the
        // list lacks bound its fractional orders, and most of those are skipped too.
        let theirs: Vec<f64> = (0..50)
            .map(|i| 1.01 + f64::from(i) * 0.14265)
            .chain((9..=63).map(f64::from))
            .collect();
        let some = form.objective_at(&theirs, objective);
        let skipped = some[..50].iter().filter(|v| **v == f64::INFINITY).count();
        assert!(skipped >= 35, "{skipped} of 50 fractional orders skipped");
        // A curve whose integer values are not divergences is evaluated everywhere.
        let wor = ClosedForm::WorSubsampledGaussian {
            sampling_rate: 0.01,
            noise_multiplier: 1.1,
        }
        .scaled(100.0);
        assert!(wor
            .objective_at(&DP_ACCOUNTING_ORDERS, objective)
            .iter()
            .all(|v| v.is_finite()));
    }

    #[test]
    fn closed_forms_evaluate_as_defined() {
        let z = RdpCurve::zcdp(0.1).unwrap();
        assert!((z.eval(7.0).unwrap() - 0.7).abs() < 1e-15);
        let p = RdpCurve::pure_dp(1.0).unwrap();
        assert_eq!(p.eval(1.5).unwrap(), 0.75);
        assert_eq!(p.eval(3.0).unwrap(), 1.0);
    }

    #[test]
    fn composition_adds_and_merges_zcdp() {
        let a = RdpCurve::zcdp(0.1).unwrap();
        let b = RdpCurve::zcdp(0.25).unwrap();
        let c = a.compose(&b).unwrap();
        assert_eq!(c.closed_form().unwrap().as_zcdp(), Some(0.35));
        let k = a.self_compose(10);
        assert!((k.eval(2.0).unwrap() - 2.0).abs() < 1e-15);
        let mixed = a.compose(&RdpCurve::pure_dp(1.0).unwrap()).unwrap();
        assert!((mixed.eval(4.0).unwrap() - (0.4 + 1.0)).abs() < 1e-15);
        assert_eq!(mixed.closed_form().unwrap().as_zcdp(), None);
    }

    #[test]
    fn grids_compose_on_shared_orders() {
        let a = grid(&[2.0, 3.0, 4.0], &[0.1, 0.2, 0.3]);
        let b = grid(&[3.0, 4.0, 5.0], &[1.0, 1.0, 1.0]);
        let c = a.compose(&b).unwrap();
        assert_eq!(c.grid().unwrap(), (&[3.0, 4.0][..], &[1.2, 1.3][..]));
        let d = a.compose(&RdpCurve::zcdp(1.0).unwrap()).unwrap();
        assert_eq!(d.grid().unwrap().1, &[2.1, 3.2, 4.3][..]);
        let e = grid(&[7.0], &[0.0]);
        assert!(a.compose(&e).is_err());
    }

    #[test]
    fn max_and_envelope() {
        let a = grid(&[2.0, 3.0, 4.0], &[0.5, 0.2, 0.3]);
        let b = grid(&[2.0, 3.0, 4.0], &[0.1, 0.4, 0.1]);
        assert_eq!(a.max(&b).unwrap().grid().unwrap().1, &[0.5, 0.4, 0.3][..]);
        assert_eq!(a.envelope().grid().unwrap().1, &[0.2, 0.2, 0.3][..]);
        let m = RdpCurve::zcdp(0.1)
            .unwrap()
            .max(&RdpCurve::pure_dp(0.5).unwrap())
            .unwrap();
        assert!((m.eval(2.0).unwrap() - 0.25).abs() < 1e-15);
        assert!((m.eval(10.0).unwrap() - 1.0).abs() < 1e-15);
    }

    #[test]
    fn grid_validation() {
        assert!(RdpCurve::on_grid(vec![], vec![]).is_err());
        assert!(RdpCurve::on_grid(vec![1.0], vec![0.1]).is_err());
        assert!(RdpCurve::on_grid(vec![2.0, 2.0], vec![0.1, 0.2]).is_err());
        assert!(RdpCurve::on_grid(vec![2.0], vec![f64::NAN]).is_err());
        assert!(RdpCurve::on_grid(vec![2.0], vec![-0.1]).is_err());
        assert!(RdpCurve::on_grid(vec![2.0], vec![f64::INFINITY]).is_ok());
        let sorted = grid(&[3.0, 2.0], &[0.3, 0.2]);
        assert_eq!(sorted.grid().unwrap().0, &[2.0, 3.0][..]);
        assert!(sorted.eval(2.5).is_err());
        assert!(RdpCurve::zcdp(-1.0).is_err() && RdpCurve::zcdp(f64::NAN).is_err());
    }

    #[test]
    fn csv_curves_parse_and_bad_files_say_where() {
        let c = RdpCurve::from_csv("order,epsilon\n2,0.1\n\n4, 0.3\n", "f.csv").unwrap();
        assert_eq!(c.grid().unwrap(), (&[2.0, 4.0][..], &[0.1, 0.3][..]));
        for (text, needle) in [
            ("", "f.csv:0: empty file"),
            ("lambda,eps\n2,1", "f.csv:1: header"),
            ("order,epsilon\n2,0.1\n3", "f.csv:3: expected 2 cells"),
            ("order,epsilon\n2,abc", "f.csv:2: epsilon `abc`"),
            ("order,epsilon\n0.5,1", "f.csv:2: order 0.5"),
            ("order,epsilon\n2,-1", "f.csv:2: epsilon -1"),
            ("order,epsilon\n", "f.csv:1: no rows"),
        ] {
            let e = RdpCurve::from_csv(text, "f.csv").unwrap_err().to_string();
            assert!(e.starts_with(needle), "{text:?}: {e}");
        }
    }

    #[test]
    fn zero_fold_composition_costs_nothing() {
        let inf = grid(&[2.0], &[f64::INFINITY]);
        assert_eq!(inf.self_compose(0).eval(2.0).unwrap(), 0.0);
    }
}
