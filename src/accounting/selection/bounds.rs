//! The privacy of repeat-and-select (spec 000 §4–5): from the base mechanism's RDP curve and the
//! law of K to the RDP curve of "run K times, keep the best".
//!
//! Two modes, chosen by the order policy (`Orders`):
//! * **grid** (dp-accounting mode, explicit lists, sampled bases): every quantity on the given
//!   orders, λ̂ included; bit-compatible with dp-accounting 0.6.0's RepeatAndSelect in
//!   dp-accounting mode;
//! * **continuous** (closed-form base, the default): λ and λ̂ range over all orders; the result is
//!   a closed-form curve that the accountant optimises continuously.

use crate::accounting::convert::{cks_epsilon, minimise_continuous};
use crate::accounting::selection::count::{CountLaw, RunCount, Tnb};
use crate::accounting::{
    Accountant, ClosedForm, Conversion, DpBound, Orders, RdpCurve, RdpFunction,
    DP_ACCOUNTING_ORDERS,
};
use crate::error::{Error, Range, Result};
use std::sync::Arc;

/// The base mechanism Q run in each round: its RDP curve in both directions.
/// `forward` bounds D_λ(Q(x)‖Q(x′)), `reverse` bounds D_λ(Q(x′)‖Q(x)) (the λ̂ term of Theorem 2).
#[derive(Clone, Debug, PartialEq)]
pub struct Base {
    pub forward: RdpCurve,
    pub reverse: RdpCurve,
}

impl Base {
    /// A base whose curve bounds both directions (every mechanism in `accounting` is symmetric).
    pub fn symmetric(curve: RdpCurve) -> Self {
        Base {
            forward: curve.clone(),
            reverse: curve,
        }
    }

    pub fn new(forward: RdpCurve, reverse: RdpCurve) -> Self {
        Base { forward, reverse }
    }

    fn closed_forms(&self) -> Option<(&ClosedForm, &ClosedForm)> {
        Some((self.forward.closed_form()?, self.reverse.closed_form()?))
    }

    /// ε when the base is pure ε-DP in both directions.
    fn pure_epsilon(&self) -> Option<f64> {
        match self.closed_forms()? {
            (ClosedForm::PureDp { epsilon: a }, ClosedForm::PureDp { epsilon: b }) => {
                Some(a.max(*b))
            }
            _ => None,
        }
    }
}

/// The RDP curve of repeat-and-select with K ~ `law` over `base`:
/// * TNB: Theorem 2 (plain form), ε′(λ) = ε(λ) + C + ln E[K]/(λ−1) with
///   C = (1+η)·min_{λ̂ ≥ 1}[(1 − 1/λ̂)ε̂(λ̂) + ln(1/γ)/λ̂] (λ̂ = 1 allowed outside dp-accounting mode;
///   for a ρ-zCDP base λ̂ = √(ln(1/γ)/ρ) in closed form, Corollary 4); for a pure ε-DP base also
///   Corollary 3, (2+η)ε-DP, whichever is smaller at each order;
/// * Poisson: Theorem 6, ε′(λ) = ε(λ) + μ·δ̂(λ) + ln μ/(λ−1), δ̂ the base's best δ at
///   ε̂ = ln(λ/(λ−1)) (both directions), corrected for K = 0 (below);
/// * fixed K = k: k-fold composition (Lemma 7 with f = x^k is slightly worse, spec 000 §2);
/// * truncated at m: the untruncated bound plus Lemma 22's ln(1/(1−P[K>m]))/(λ−1) +
///   ln(1 + T_m/(E[K] − T_m)).
///
/// On grids the monotone envelope is applied (it never changes the (ε, δ) conversion, but the
/// curve is then a valid monotone RDP curve for later composition).
///
/// **K = 0.** Lemma 7's proof assumes P[K = 0] = 0, and Theorem 6 (and dp-accounting 0.6.0)
/// apply it to Poisson K anyway. Writing A = p₀·δ_⊥ + (1 − p₀)·Ã, with Ã the best of K | K ≥ 1
/// (pgf′ = f′/(1 − p₀)), gives e^{(λ−1)D_λ(A‖A′)} ≤ p₀ + e^{(λ−1)B}, B the Lemma 7 bound. We use
/// ε′ = ln(p₀ + e^{(λ−1)B})/(λ−1). It matches the paper to many digits for large means but is
/// essential for small ones: at μ ≈ 0.3 the uncorrected bound is negative while the exact
/// divergence is positive (found by tests/suite/selection_audit.rs).
pub fn repeat_select(base: &Base, law: &RunCount, orders: &Orders) -> Result<RdpCurve> {
    let uncorrected = match (orders, base.closed_forms()) {
        (Orders::Continuous, Some((fwd, rev))) => continuous(fwd, rev, base, law)?,
        (Orders::Continuous, None) => {
            let grid = shared_grid(base)?;
            return grid_curve(base, law, &grid, false);
        }
        (Orders::DpAccounting, _) => return grid_curve(base, law, &DP_ACCOUNTING_ORDERS, true),
        (Orders::List(list), _) => return grid_curve(base, law, list, false),
    };
    let p0 = law.pmf(0);
    if p0 == 0.0 {
        return Ok(uncorrected);
    }
    Ok(RdpCurve::closed(ClosedForm::Custom(Arc::new(ZeroMass {
        inner: uncorrected
            .closed_form()
            .expect("continuous bounds are closed forms")
            .clone(),
        ln_p0: libm::log(p0),
    }))))
}

/// The most orders a Poisson K's bound accepts on a grid: it costs the square of their
/// number (1024 orders take a few seconds, dp-accounting's default grid has 156).
pub const MAX_POISSON_ORDERS: usize = 1024;

/// The grid bound with the K = 0 correction, clamped at 0 (a divergence) and enveloped.
fn grid_curve(
    base: &Base,
    law: &RunCount,
    orders: &[f64],
    dp_accounting: bool,
) -> Result<RdpCurve> {
    let (orders, raw) = on_grid(base, law, orders, dp_accounting)?;
    let p0 = law.pmf(0);
    let eps = orders
        .iter()
        .zip(raw)
        .map(|(&l, e)| {
            if p0 > 0.0 {
                with_zero_mass(libm::log(p0), e, l)
            } else {
                e
            }
            .max(0.0)
        })
        .collect();
    Ok(RdpCurve::on_grid(orders, eps)?.envelope())
}

/// ln(p₀ + e^{(λ−1)ε})/(λ−1).
fn with_zero_mass(ln_p0: f64, eps: f64, order: f64) -> f64 {
    crate::numeric::log_add(ln_p0, (order - 1.0) * eps) / (order - 1.0)
}

#[derive(Debug)]
struct ZeroMass {
    inner: ClosedForm,
    ln_p0: f64,
}

impl RdpFunction for ZeroMass {
    fn eval(&self, order: f64) -> f64 {
        with_zero_mass(self.ln_p0, self.inner.eval(order), order)
    }
    fn is_cheap(&self) -> bool {
        self.inner.is_cheap()
    }
    fn is_monotone(&self) -> bool {
        false
    }
}

/// The orders at which both directions of a sampled base are known.
fn shared_grid(base: &Base) -> Result<Vec<f64>> {
    let fwd = base.forward.grid().map(|(o, _)| o.to_vec());
    let orders = fwd.or_else(|| base.reverse.grid().map(|(o, _)| o.to_vec()));
    let orders = orders.expect("called for a sampled base");
    let shared: Vec<f64> = orders
        .into_iter()
        .filter(|&o| base.forward.eval(o).is_ok() && base.reverse.eval(o).is_ok())
        .collect();
    if shared.is_empty() {
        return Err(Error::Infeasible(
            "the forward and reverse base curves share no order".into(),
        ));
    }
    Ok(shared)
}

/// The uncorrected bound B(λ) at each order (it may be negative before the K = 0 correction).
fn on_grid(
    base: &Base,
    law: &RunCount,
    orders: &[f64],
    dp_accounting: bool,
) -> Result<(Vec<f64>, Vec<f64>)> {
    let fwd = base.forward.on_orders(orders)?;
    let orders: Vec<f64> = fwd.grid().expect("sampled").0.to_vec();
    let eps: Vec<f64> = fwd.grid().expect("sampled").1.to_vec();
    let rev: Vec<f64> = if base.reverse == base.forward {
        eps.clone()
    } else {
        let rev = base.reverse.on_orders(&orders)?;
        let (rev_orders, rev_eps) = rev.grid().expect("sampled");
        if rev_orders != orders.as_slice() {
            return Err(Error::Infeasible(
                "the reverse base curve is not known at every order of the forward one".into(),
            ));
        }
        rev_eps.to_vec()
    };
    let repeated: Vec<f64> = match law {
        RunCount::Tnb(t) => {
            let lam_hat = orders
                .iter()
                .zip(&rev)
                .map(|(&l, &e)| (1.0 - 1.0 / l) * e + t.ln_inv_gamma() / l);
            let mut inner = lam_hat.fold(f64::INFINITY, f64::min);
            if !dp_accounting {
                inner = inner.min(t.ln_inv_gamma()); // λ̂ = 1
            }
            let c = (1.0 + t.eta()) * inner;
            let mut out: Vec<f64> = orders
                .iter()
                .zip(&eps)
                .map(|(&l, &e)| e + c + t.ln_mean() / (l - 1.0))
                .collect();
            if let Some(pure) = base.pure_epsilon() {
                let cor3 = RdpCurve::pure_dp((2.0 + t.eta()) * pure)?;
                for (o, &l) in out.iter_mut().zip(&orders) {
                    *o = o.min(cor3.eval(l)?);
                }
            }
            out
        }
        RunCount::Poisson(p) => {
            if orders.len() > MAX_POISSON_ORDERS {
                return Err(Error::invalid(
                    "orders",
                    format!("{} orders", orders.len()),
                    format!(
                        "at most {MAX_POISSON_ORDERS} orders for a Poisson K on a grid (--orders, \
                         or the rows of the base's curve file): its bound converts every order's \
                         curve at every other order, a cost of the square of their number"
                    ),
                ));
            }
            let policy = if dp_accounting {
                Orders::DpAccounting
            } else {
                Orders::List(orders.clone())
            };
            let acc = Accountant::new(policy, Conversion::Cks);
            let fwd_grid = RdpCurve::on_grid(orders.clone(), eps.clone())?;
            let rev_grid = RdpCurve::on_grid(orders.clone(), rev.clone())?;
            let mu = p.mu();
            orders
                .iter()
                .zip(&eps)
                .map(|(&l, &e)| {
                    let eps_hat = libm::log1p(1.0 / (l - 1.0));
                    let d = acc
                        .delta(&fwd_grid, eps_hat)?
                        .delta
                        .max(acc.delta(&rev_grid, eps_hat)?.delta);
                    Ok(e + mu * d.min(1.0) + libm::log(mu) / (l - 1.0))
                })
                .collect::<Result<_>>()?
        }
        RunCount::Fixed(k) => eps.iter().map(|&e| k.k() as f64 * e).collect(),
        RunCount::Truncated(t) => {
            let (_, inner_eps) = on_grid(base, t.inner(), &orders, dp_accounting)?;
            let (constant, per_order) = lemma_22_terms(t.inner(), t.p_tail(), t.t_tail());
            orders
                .iter()
                .zip(inner_eps)
                .map(|(&l, e)| e + constant + per_order / (l - 1.0))
                .collect()
        }
    };
    Ok((orders, repeated))
}

/// Lemma 22's extra terms as (constant, coefficient of 1/(λ−1)).
fn lemma_22_terms(untruncated: &RunCount, p_tail: f64, t_tail: f64) -> (f64, f64) {
    let mean = untruncated.mean();
    (libm::log1p(t_tail / (mean - t_tail)), -libm::log1p(-p_tail))
}

fn continuous(fwd: &ClosedForm, rev: &ClosedForm, base: &Base, law: &RunCount) -> Result<RdpCurve> {
    let curve = match law {
        RunCount::Tnb(t) => {
            let c = (1.0 + t.eta()) * lambda_hat_term(rev, t);
            let thm2 = ClosedForm::Custom(Arc::new(Shifted {
                base: fwd.clone(),
                constant: c,
                per_order: t.ln_mean(),
            }));
            match base.pure_epsilon() {
                Some(pure) => {
                    let cor3 = ClosedForm::PureDp {
                        epsilon: (2.0 + t.eta()) * pure,
                    };
                    ClosedForm::Min(vec![thm2, cor3])
                }
                None => thm2,
            }
        }
        RunCount::Poisson(p) => ClosedForm::Custom(Arc::new(PoissonRepeated {
            forward: fwd.clone(),
            reverse: rev.clone(),
            mu: p.mu(),
        })),
        RunCount::Fixed(k) => return Ok(base.forward.self_compose(k.k())),
        RunCount::Truncated(t) => {
            let inner = continuous(fwd, rev, base, t.inner())?;
            let (constant, per_order) = lemma_22_terms(t.inner(), t.p_tail(), t.t_tail());
            ClosedForm::Custom(Arc::new(Shifted {
                base: inner.closed_form().expect("continuous").clone(),
                constant,
                per_order,
            }))
        }
    };
    Ok(RdpCurve::closed(curve))
}

/// min_{λ̂ ≥ 1}[(1 − 1/λ̂)ε̂(λ̂) + ln(1/γ)/λ̂]: Corollary 4's closed form for a zCDP reverse
/// curve (λ̂ = √(u/ρ) when ρ ≤ u, else λ̂ = 1), a continuous search otherwise.
fn lambda_hat_term(reverse: &ClosedForm, t: &Tnb) -> f64 {
    let u = t.ln_inv_gamma();
    if let Some(rho) = reverse.as_zcdp() {
        return if rho <= u {
            2.0 * (rho * u).sqrt() - rho
        } else {
            u
        };
    }
    let (best, _) = minimise_continuous(reverse, |e, l| (1.0 - 1.0 / l) * e + u / l);
    best.min(u)
}

/// ε(λ) + constant + per_order/(λ − 1).
#[derive(Debug)]
struct Shifted {
    base: ClosedForm,
    constant: f64,
    per_order: f64,
}

impl RdpFunction for Shifted {
    fn eval(&self, order: f64) -> f64 {
        self.base.eval(order) + self.constant + self.per_order / (order - 1.0)
    }
    fn is_cheap(&self) -> bool {
        self.base.is_cheap()
    }
    fn is_monotone(&self) -> bool {
        self.per_order <= 0.0 && self.base.is_monotone()
    }
}

/// Theorem 6: ε(λ) + μ·δ̂(λ) + ln μ/(λ−1), δ̂(λ) the base's best (CKS, KL) δ at ε̂ = ln(λ/(λ−1)).
#[derive(Debug)]
struct PoissonRepeated {
    forward: ClosedForm,
    reverse: ClosedForm,
    mu: f64,
}

impl RdpFunction for PoissonRepeated {
    fn eval(&self, order: f64) -> f64 {
        let eps_hat = libm::log1p(1.0 / (order - 1.0));
        let acc = Accountant::default();
        let delta_of = |c: &ClosedForm| {
            acc.delta(&RdpCurve::closed(c.clone()), eps_hat)
                .map(|b| b.delta)
                .unwrap_or(1.0)
        };
        let d = delta_of(&self.forward)
            .max(delta_of(&self.reverse))
            .min(1.0);
        self.forward.eval(order) + self.mu * d + libm::log(self.mu) / (order - 1.0)
    }
    fn is_cheap(&self) -> bool {
        false
    }
    fn is_monotone(&self) -> bool {
        false
    }
}

/// Corollary 3: a pure ε-DP base repeated with K ~ TNB(η) is (2+η)ε-DP.
pub fn pure_repeat_epsilon(epsilon: f64, eta: f64) -> Result<f64> {
    let epsilon = Range::NonNegative.check("epsilon", epsilon)?;
    if !(eta > -1.0 && eta.is_finite()) {
        return Err(Error::invalid("eta", eta, "a finite number > -1"));
    }
    Ok((2.0 + eta) * epsilon)
}

/// Liu–Talwar 2019: geometric K over a pure ε-DP base is 3ε-DP (Corollary 3 with η = 1).
pub fn liu_talwar_epsilon(epsilon: f64) -> Result<f64> {
    pure_repeat_epsilon(epsilon, 1.0)
}

/// Liu–Talwar's threshold variant (stop at the first output above a public threshold):
/// 2ε-DP for a pure ε-DP base (Corollary 16(1): D∞(Q‖Q′) + D∞(Q′‖Q)).
pub fn liu_talwar_threshold_epsilon(epsilon: f64) -> Result<f64> {
    Ok(2.0 * Range::NonNegative.check("epsilon", epsilon)?)
}

/// Proposition 17's lower bound for the fixed-K strawman on randomized response:
/// D_λ ≥ kε − k·ln(1 + e^{−ε})/(λ−1) (λ = ∞ gives kε).
pub fn fixed_k_lower_bound(epsilon: f64, k: u64, order: f64) -> f64 {
    let k = k as f64;
    if order.is_infinite() {
        return k * epsilon;
    }
    k * epsilon - k * libm::log1p(libm::exp(-epsilon)) / (order - 1.0)
}

/// Appendix C, Corollary 16(2): run Q until its output lands in a fixed set S with Q(S) ≥ p on
/// every dataset (a data-independent lower bound, e.g. a halting symbol output with
/// probability p), and release that output:
/// D_λ ≤ ε(λ) + (λ−2)/(λ−1)·ε_rev(λ−1) + 2·ln(1/p)/(λ−1), the middle term dropped for λ < 2.
/// On a grid, ε_rev(λ−1) is read at the smallest grid order ≥ λ − 1 (valid by monotonicity).
pub fn conditional_sampling(base: &Base, p: f64, orders: &Orders) -> Result<RdpCurve> {
    let p = Range::UnitExcludingZero.check("p", p)?;
    let ln_inv_p = -libm::log(p);
    if let (Orders::Continuous, Some((fwd, rev))) = (orders, base.closed_forms()) {
        return Ok(RdpCurve::closed(ClosedForm::Custom(Arc::new(Threshold {
            forward: fwd.clone(),
            reverse: rev.clone(),
            ln_inv_p,
        }))));
    }
    let grid: Vec<f64> = match orders {
        Orders::DpAccounting => DP_ACCOUNTING_ORDERS.clone(),
        Orders::List(l) => l.clone(),
        Orders::Continuous => shared_grid(base)?,
    };
    let fwd = base.forward.on_orders(&grid)?;
    let (orders, eps) = fwd.grid().expect("sampled");
    let rev = base.reverse.on_orders(&grid)?;
    let (rev_orders, rev_eps) = rev.grid().expect("sampled");
    let values = orders
        .iter()
        .zip(eps)
        .map(|(&l, &e)| {
            let middle = if l > 2.0 {
                let i = rev_orders.partition_point(|&o| o < l - 1.0);
                let r = rev_eps.get(i).copied().unwrap_or(f64::INFINITY);
                (l - 2.0) / (l - 1.0) * r
            } else {
                0.0
            };
            e + middle + 2.0 * ln_inv_p / (l - 1.0)
        })
        .collect();
    Ok(RdpCurve::on_grid(orders.to_vec(), values)?.envelope())
}

#[derive(Debug)]
struct Threshold {
    forward: ClosedForm,
    reverse: ClosedForm,
    ln_inv_p: f64,
}

impl RdpFunction for Threshold {
    fn eval(&self, order: f64) -> f64 {
        let middle = if order > 2.0 {
            (order - 2.0) / (order - 1.0) * self.reverse.eval(order - 1.0)
        } else {
            0.0
        };
        self.forward.eval(order) + middle + 2.0 * self.ln_inv_p / (order - 1.0)
    }
    fn is_cheap(&self) -> bool {
        self.forward.is_cheap() && self.reverse.is_cheap()
    }
    fn is_monotone(&self) -> bool {
        false
    }
}

/// δ-approximate RDP: (λ, ε)-RDP after removing δ of probability mass, at every λ ≤ `max_order`.
#[derive(Clone, Debug, PartialEq)]
pub struct ApproxRdp {
    pub max_order: f64,
    pub epsilon: f64,
    pub delta: f64,
}

impl ApproxRdp {
    /// (ε, δ_total)-DP by CKS at the largest allowed order (the δ's add, spec 000 §1).
    pub fn to_dp(&self, total_delta: f64) -> Result<DpBound> {
        let total = Range::OpenUnit.check("delta", total_delta)?;
        if total <= self.delta {
            return Err(Error::invalid(
                "delta",
                total,
                format!("larger than the approximate-RDP δ = {:e}", self.delta),
            ));
        }
        let epsilon = cks_epsilon(self.epsilon, self.max_order, total - self.delta).max(0.0);
        Ok(DpBound {
            epsilon,
            delta: total,
            order: Some(self.max_order),
        })
    }
}

fn check_approx_base(eps0: f64, delta0: f64) -> Result<(f64, f64)> {
    Ok((
        Range::Positive.check("epsilon0", eps0)?,
        Range::OpenUnit.check("delta0", delta0)?,
    ))
}

/// Corollary 21: a (ε₀, δ₀)-DP base with K ~ Poisson(μ) is δ′-approximately
/// (λ, ε₀ + (e^{ε₀} − 1)·ln μ)-RDP for all λ ≤ 1 + 1/(e^{ε₀} − 1), δ′ = 1 − e^{−μδ₀}.
pub fn poisson_approximate_dp_base(eps0: f64, delta0: f64, mu: f64) -> Result<ApproxRdp> {
    let (eps0, delta0) = check_approx_base(eps0, delta0)?;
    let mu = Range::Positive.check("mean", mu)?;
    let em1 = libm::expm1(eps0);
    Ok(ApproxRdp {
        max_order: 1.0 + 1.0 / em1,
        epsilon: eps0 + em1 * libm::log(mu).max(0.0),
        delta: -libm::expm1(-mu * delta0),
    })
}

/// TNB analogue of Lemma 20 (derived in spec 000 §4, not stated in the paper): thinning K by
/// (1−δ₀) keeps it TNB with the same η, so a (ε₀, δ₀)-DP base gives ((2+η)ε₀, 1 − f(1−δ₀))-DP.
pub fn tnb_approximate_dp_base(eps0: f64, delta0: f64, tnb: &Tnb) -> Result<DpBound> {
    let (eps0, delta0) = check_approx_base(eps0, delta0)?;
    Ok(DpBound {
        epsilon: (2.0 + tnb.eta()) * eps0,
        // Rounded up by 1e-12 relative: it is a δ.
        delta: (tnb.one_minus_pgf(1.0 - delta0) * (1.0 + 1e-12)).min(1.0),
        order: None,
    })
}

/// The result that bounds repeat-and-select with this law (for statements and result tables).
pub fn bound_name(law: &RunCount) -> String {
    match law {
        RunCount::Tnb(_) => {
            "Papernot–Steinke Theorem 2 (Corollary 3 too for a pure-DP base)".into()
        }
        RunCount::Poisson(_) => "Papernot–Steinke Theorem 6".into(),
        RunCount::Fixed(_) => "composition (fixed K)".into(),
        RunCount::Truncated(t) => format!("{} plus Lemma 22 (truncation)", bound_name(t.inner())),
    }
}

/// Lemma 7 evaluated numerically, for any law of K with P[K = 1] > 0:
/// D_λ(A‖A′) ≤ ε(λ) + sup_{(q,q′)} [λ·ln f′(q) + (1−λ)·ln f′(q′)]/(λ−1), then the K = 0
/// correction of [`repeat_select`]. The supremum runs over the pairs (q, q′) = (E_Q g, E_Q′ g)
/// reachable by one post-processing g: Y → [0, 1]; by data processing each such pair satisfies
/// d_α(q‖q′) ≤ ε(α) and d_α(q′‖q) ≤ ε_rev(α) for Bernoulli divergences d_α, at every order α.
/// We impose those constraints at a fixed set of orders (fewer constraints, a larger region: the
/// bound stays valid), compute q_max(q′) by bisection (keeping the upper end), and bound the
/// supremum over each interval [a, b] of q′ by λ·ln f′(q_max(b)) + (1−λ)·ln f′(a), valid because
/// f′ increases and q_max does not decrease. The region depends only on the base, so it is built
/// once (`Lemma7::new`) and reused for every law.
#[derive(Clone, Debug)]
pub struct Lemma7 {
    forward: RdpCurve,
    /// Breakpoints of q′ in [0, 1] and q_max at each.
    q_prime: Vec<f64>,
    q_max: Vec<f64>,
}

/// Orders at which the privacy region is constrained (a closed-form base is evaluated there; a
/// sampled one uses its own orders).
const REGION_ORDERS: [f64; 12] = [
    1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0, 64.0,
];

impl Lemma7 {
    pub fn new(base: &Base) -> Result<Self> {
        let constraints: Vec<(f64, f64, f64)> = match base.closed_forms() {
            Some((f, r)) => REGION_ORDERS
                .iter()
                .map(|&a| (a, f.eval(a), r.eval(a)))
                .collect(),
            None => {
                let orders = shared_grid(base)?;
                orders
                    .iter()
                    .map(|&a| Ok((a, base.forward.eval(a)?, base.reverse.eval(a)?)))
                    .collect::<Result<_>>()?
            }
        };
        let feasible = |q: f64, qp: f64| {
            constraints.iter().all(|&(a, fwd, rev)| {
                bernoulli_renyi(q, qp, a) <= fwd && bernoulli_renyi(qp, q, a) <= rev
            })
        };
        let mut q_prime: Vec<f64> = (0..=48)
            .map(|i| libm::pow(10f64, -12.0 + 0.25 * f64::from(i)))
            .collect();
        q_prime.extend((1..400).map(|i| f64::from(i) / 400.0));
        q_prime.push(0.0);
        q_prime.push(1.0);
        q_prime.sort_by(f64::total_cmp);
        q_prime.dedup();
        let q_max = q_prime
            .iter()
            .map(|&qp| {
                let (mut lo, mut hi) = (qp, 1.0);
                if feasible(hi, qp) {
                    return 1.0;
                }
                for _ in 0..45 {
                    let mid = 0.5 * (lo + hi);
                    if feasible(mid, qp) {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                hi // an infeasible point: never below the true q_max
            })
            .collect();
        Ok(Lemma7 {
            forward: base.forward.clone(),
            q_prime,
            q_max,
        })
    }

    /// For each interval [a, b] of q′: (ln f′(q_max(b)), ln f′(a)), independent of λ.
    fn interval_logs(&self, law: &RunCount) -> Vec<(f64, f64)> {
        let ln_fd = |x: f64| libm::log(law.pgf_deriv(x));
        self.q_prime
            .windows(2)
            .zip(self.q_max.windows(2))
            .map(|(qp, qm)| (ln_fd(qm[1]), ln_fd(qp[0])))
            .collect()
    }

    /// The bound as an RDP curve, on the base's grid (sampled base) or on dp-accounting's
    /// orders (closed-form base). Errors if P[K = 1] = 0 (f′(0) = 0 makes the bound infinite).
    pub fn curve(&self, law: &RunCount) -> Result<RdpCurve> {
        if law.pgf_deriv(0.0) <= 0.0 {
            return Err(Error::invalid(
                "dist",
                law.family(),
                "a law with P[K = 1] > 0 for Lemma 7",
            ));
        }
        let orders: Vec<f64> = match self.forward.grid() {
            Some((o, _)) => o.to_vec(),
            None => DP_ACCOUNTING_ORDERS.clone(),
        };
        let p0 = law.pmf(0);
        let logs = self.interval_logs(law);
        // sup over the region of λ·ln f′(q) + (1−λ)·ln f′(q′), bounded interval by interval.
        let sup_term = |l: f64| {
            logs.iter()
                .map(|&(at_q, at_qp)| l * at_q + (1.0 - l) * at_qp)
                .fold(f64::NEG_INFINITY, f64::max)
        };
        let eps = orders
            .iter()
            .map(|&l| {
                let b = self.forward.eval(l)? + sup_term(l) / (l - 1.0);
                Ok(if p0 > 0.0 {
                    with_zero_mass(libm::log(p0), b, l)
                } else {
                    b
                }
                .max(0.0))
            })
            .collect::<Result<_>>()?;
        Ok(RdpCurve::on_grid(orders, eps)?.envelope())
    }
}

/// D_α(Bern(a)‖Bern(b)), +∞ where b puts no mass where a does.
fn bernoulli_renyi(a: f64, b: f64, alpha: f64) -> f64 {
    let term = |x: f64, y: f64| {
        if x == 0.0 {
            f64::NEG_INFINITY
        } else if y == 0.0 {
            f64::INFINITY
        } else {
            alpha * libm::log(x) + (1.0 - alpha) * libm::log(y)
        }
    };
    let s = crate::numeric::log_add(term(a, b), term(1.0 - a, 1.0 - b));
    (s / (alpha - 1.0)).max(0.0)
}
