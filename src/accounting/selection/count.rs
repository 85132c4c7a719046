//! Distributions of the number of runs K (spec 000 §3): truncated negative binomial for every
//! η > −1 (η = 0 logarithmic, η = 1 geometric), Poisson, a fixed K, and any of them truncated at m
//! (Lemma 22). Each has a validating constructor, pmf, pgf, pgf′, mean and an exact sampler.
//!
//! The TNB is parametrised by u = ln(1/γ) > 0 internally, so that γ far below the smallest
//! double (η near −1 with a large mean) and γ near 1 (mean near 1) both stay accurate.

use crate::error::{Error, Range, Result};
use crate::rng::{gamma as gamma_variate, poisson, POISSON_EXACT_MAX};
use rand::Rng;
use rand_distr::Distribution;
use std::sync::{Arc, OnceLock};

/// What every law of K offers to the bounds and utilities.
pub trait CountLaw {
    /// P[K = k].
    fn pmf(&self, k: u64) -> f64;
    /// f(x) = E[x^K] for x ∈ [0, 1].
    fn pgf(&self, x: f64) -> f64;
    /// f′(x).
    fn pgf_deriv(&self, x: f64) -> f64;
    /// E[K].
    fn mean(&self) -> f64;
    /// 1 − f(x), without the cancellation of computing f(x) near 1.
    fn one_minus_pgf(&self, x: f64) -> f64;
    /// (P[K > m], E[K·1{K > m}]), summed upwards from m + 1 (never 1 − a head sum when the tail
    /// is small). Used by Lemma 22.
    fn tail(&self, m: u64) -> (f64, f64) {
        tail_by_summation(|k| self.pmf(k), m, self.mean())
    }
}

/// Sums the pmf upward from m + 1 until terms fall below 1e-18 of the running sum. If that would
/// take more than `MAX_TAIL_TERMS` terms (a heavy tail, so the tail is not small), uses
/// 1 − head sum instead, inflated by a rounding allowance so both values stay upper bounds.
fn tail_by_summation(pmf: impl Fn(u64) -> f64, m: u64, mean: f64) -> (f64, f64) {
    const MAX_TAIL_TERMS: u64 = 2_000_000;
    let (mut p, mut t) = (0.0, 0.0);
    let mut k = m + 1;
    loop {
        let pk = pmf(k);
        p += pk;
        t += k as f64 * pk;
        if (pk <= 1e-18 * p && k > m + 1) || pk == 0.0 && p > 0.0 {
            return (p, t);
        }
        if k - m > MAX_TAIL_TERMS {
            break;
        }
        k += 1;
    }
    let (mut head_p, mut head_t) = (0.0, 0.0);
    for k in 0..=m {
        let pk = pmf(k);
        head_p += pk;
        head_t += k as f64 * pk;
    }
    let slack = 1e-13 * (m as f64 + 1.0);
    (
        (1.0 - head_p + slack).clamp(0.0, 1.0),
        (mean - head_t + slack * mean).max(0.0),
    )
}

/// ln φ(a) with φ(a) = a/expm1(a), φ(0) = 1.
fn ln_phi(a: f64) -> f64 {
    if a.abs() < 1e-10 {
        -a / 2.0
    } else if a > 0.0 {
        libm::log(a) - a - libm::log1p(-libm::exp(-a))
    } else {
        libm::log(-a) - libm::log(-libm::expm1(a))
    }
}

/// ln E[K] of the TNB with parameters (η, u = ln 1/γ) (spec 000 §3.1).
fn tnb_ln_mean(eta: f64, u: f64) -> f64 {
    libm::log(-libm::expm1(-u)) + u + ln_phi(-eta * u) - libm::log(u)
}

/// Truncated negative binomial D_{η,γ} on {1, 2, …}: P[K = k] ∝ C(k+η−1, k)(1−γ)^k.
#[derive(Clone, Debug)]
pub struct Tnb {
    eta: f64,
    /// u = ln(1/γ) > 0.
    u: f64,
    ln_mean: f64,
    /// Cumulative probabilities P[K ≤ k], built on first use by the inverse-CDF sampler.
    cdf_table: OnceLock<Arc<Vec<f64>>>,
}

impl PartialEq for Tnb {
    fn eq(&self, other: &Self) -> bool {
        self.eta == other.eta && self.u == other.u
    }
}

impl Tnb {
    /// D_{η,γ} with η ∈ (−1, ∞) and γ ∈ (0, 1).
    pub fn new(eta: f64, gamma: f64) -> Result<Self> {
        let gamma = Range::OpenUnit.check("gamma", gamma)?;
        Self::from_u(eta, -libm::log(gamma))
    }

    fn from_u(eta: f64, u: f64) -> Result<Self> {
        if !(eta > -1.0 && eta.is_finite()) {
            return Err(Error::invalid(
                "eta",
                crate::error::fmt_num(eta),
                "a finite number > -1",
            ));
        }
        if !(u > 0.0 && u.is_finite()) {
            return Err(Error::invalid("gamma", libm::exp(-u), "a number in (0, 1)"));
        }
        Ok(Tnb {
            eta,
            u,
            ln_mean: tnb_ln_mean(eta, u),
            cdf_table: OnceLock::new(),
        })
    }

    /// The TNB with shape η and mean E[K] = `mean` > 1, solving for γ (in u = ln 1/γ, where
    /// ln E[K] is increasing) by bisection to full precision.
    pub fn from_mean(eta: f64, mean: f64) -> Result<Self> {
        if !(mean > 1.0 && mean.is_finite()) {
            return Err(Error::invalid(
                "mean",
                crate::error::fmt_num(mean),
                "a finite number > 1",
            ));
        }
        Self::from_u(eta, 1.0)?; // validates η
        let target = libm::log(mean);
        let (mut lo, mut hi) = (libm::log(1e-15_f64), libm::log(1e5_f64)); // bisect in ln u
        if tnb_ln_mean(eta, libm::exp(lo)) >= target || tnb_ln_mean(eta, libm::exp(hi)) < target {
            return Err(Error::invalid(
                "mean",
                crate::error::fmt_num(mean),
                format!("a mean reachable by the TNB with eta = {eta} (γ would leave the range of doubles)"),
            ));
        }
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if mid <= lo || mid >= hi {
                break;
            }
            if tnb_ln_mean(eta, libm::exp(mid)) < target {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Self::from_u(eta, libm::exp(0.5 * (lo + hi)))
    }

    /// The logarithmic distribution (η = 0) with the given mean.
    pub fn logarithmic(mean: f64) -> Result<Self> {
        Self::from_mean(0.0, mean)
    }

    /// The geometric distribution on {1, 2, …} (η = 1) with the given mean (γ = 1/mean).
    pub fn geometric(mean: f64) -> Result<Self> {
        Self::from_mean(1.0, mean)
    }

    pub fn eta(&self) -> f64 {
        self.eta
    }
    /// γ (may underflow to 0 for extreme parameters; `ln_inv_gamma` stays exact).
    pub fn gamma(&self) -> f64 {
        libm::exp(-self.u)
    }
    /// u = ln(1/γ).
    pub fn ln_inv_gamma(&self) -> f64 {
        self.u
    }
    /// ln E[K], computed stably.
    pub fn ln_mean(&self) -> f64 {
        self.ln_mean
    }

    /// ln(1 − γ).
    fn ln_1m_gamma(&self) -> f64 {
        libm::log(-libm::expm1(-self.u))
    }

    /// ln |γ^{−η} − 1| (η ≠ 0), the normaliser.
    fn ln_norm(&self) -> f64 {
        libm::log(libm::expm1(self.eta * self.u).abs())
    }

    fn ln_pmf(&self, k: u64) -> f64 {
        if k == 0 {
            return f64::NEG_INFINITY;
        }
        let kf = k as f64;
        if self.eta == 0.0 {
            return kf * self.ln_1m_gamma() - libm::log(kf) - libm::log(self.u);
        }
        // ln |C(k+η−1, k)| = ln|Γ(k+η)| − ln|Γ(η)| − ln Γ(k+1); for η ∈ (−1, 0) Γ(η) < 0 and
        // γ^{−η} − 1 < 0, so the ratio is positive.
        let (lg_k_eta, _) = libm::lgamma_r(kf + self.eta);
        let (lg_eta, _) = libm::lgamma_r(self.eta);
        lg_k_eta - lg_eta - libm::lgamma(kf + 1.0) + kf * self.ln_1m_gamma() - self.ln_norm()
    }

    /// P[K ≤ k] for k = 1, 2, … until it reaches 1 − 1e-13 (or 2^22 entries).
    fn table(&self) -> &Arc<Vec<f64>> {
        self.cdf_table.get_or_init(|| {
            let mut cdf = Vec::new();
            let mut c = 0.0;
            let mut p = self.pmf(1);
            let ratio_base = libm::exp(self.ln_1m_gamma());
            let mut k = 1u64;
            while c < 1.0 - 1e-13 && cdf.len() < 1 << 22 {
                c += p;
                cdf.push(c);
                p *= ratio_base * (k as f64 + self.eta) / (k as f64 + 1.0);
                k += 1;
            }
            Arc::new(cdf)
        })
    }

    /// Inverse-CDF sampling (the reference sampler of spec 000 §5(b)), with a table for the
    /// head and the pmf recurrence beyond it.
    fn sample_inverse_cdf<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        let table = self.table();
        loop {
            let v: f64 = rng.random();
            let i = table.partition_point(|&c| c < v);
            if i < table.len() {
                return i as u64 + 1;
            }
            // Beyond the table: continue the recurrence from its end.
            let mut k = table.len() as u64;
            let mut c = *table.last().expect("table has one entry at least");
            let mut p = self.pmf(k);
            let ratio_base = libm::exp(self.ln_1m_gamma());
            while c < v {
                p *= ratio_base * (k as f64 + self.eta) / (k as f64 + 1.0);
                k += 1;
                c += p;
                if p == 0.0 {
                    break; // rounding left v unreachable (probability ~1e-16): redraw
                }
            }
            if c >= v {
                return k;
            }
        }
    }
}

impl CountLaw for Tnb {
    fn pmf(&self, k: u64) -> f64 {
        libm::exp(self.ln_pmf(k))
    }

    fn pgf(&self, x: f64) -> f64 {
        let l = (-libm::expm1(-self.u) * x).ln_1p_neg();
        if self.eta == 0.0 {
            l / (-self.u)
        } else {
            libm::expm1(-self.eta * l) / libm::expm1(self.eta * self.u)
        }
    }

    /// f′(x) = (1 − (1−γ)x)^{−η−1} γ^{η+1} E[K].
    fn pgf_deriv(&self, x: f64) -> f64 {
        let l = (-libm::expm1(-self.u) * x).ln_1p_neg();
        libm::exp(-(self.eta + 1.0) * l - (self.eta + 1.0) * self.u + self.ln_mean)
    }

    fn mean(&self) -> f64 {
        libm::exp(self.ln_mean)
    }

    /// With L = ln(1 + (1−γ)(1−x)/γ) = ln((1 − (1−γ)x)/γ): 1 − f = L/u for η = 0, else
    /// −e^{ηu}·expm1(−ηL)/expm1(ηu).
    fn one_minus_pgf(&self, x: f64) -> f64 {
        let one_m_gamma = -libm::expm1(-self.u);
        let l = libm::log1p(one_m_gamma * (1.0 - x) * libm::exp(self.u));
        let v = if self.eta == 0.0 {
            l / self.u
        } else {
            -libm::exp(self.eta * self.u) * libm::expm1(-self.eta * l)
                / libm::expm1(self.eta * self.u)
        };
        v.clamp(0.0, 1.0)
    }
}

/// ln(1 − y) for y ∈ [0, 1], written as a method for readability.
trait Ln1pNeg {
    fn ln_1p_neg(self) -> f64;
}
impl Ln1pNeg for f64 {
    fn ln_1p_neg(self) -> f64 {
        libm::log1p(-self)
    }
}

/// The largest u = ln(1/γ) of a TNB a tuner draws K from: with γ ≥ 2^−53, a draw beyond
/// 2^64 runs (more than a u64 holds) has probability below e^−2000.
const MAX_DRAWN_U: f64 = 53.0 * std::f64::consts::LN_2;

/// Never 0 or beyond the support: a draw too large for a u64 saturates (the tuners refuse the
/// laws where that can happen, [`RunCount::drawable`]).
impl Distribution<u64> for Tnb {
    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        let gamma = self.gamma();
        if self.eta == 0.0 {
            // Kemp's mixture: q = 1 − γ^U, then K | q is geometric with P[K > k] = q^k.
            let uu: f64 = rng.random();
            let q = -libm::expm1(-uu * self.u);
            if q == 0.0 {
                return 1;
            }
            let v: f64 = 1.0 - rng.random::<f64>(); // (0, 1]
            return ((libm::log(v) / libm::log(q)).floor() as u64).saturating_add(1);
        }
        if self.eta == 1.0 && gamma > 0.0 {
            let v: f64 = 1.0 - rng.random::<f64>();
            return ((libm::log(v) / libm::log1p(-gamma)).floor() as u64).saturating_add(1);
        }
        // η > 0: Gamma–Poisson mixture, rejecting K = 0 (acceptance 1 − γ^η).
        let acceptance = -libm::expm1(-self.eta * self.u);
        let scale = libm::expm1(self.u); // (1−γ)/γ
        if self.eta > 0.0 && acceptance > 0.2 && scale.is_finite() && scale > 0.0 {
            loop {
                let lambda = scale * gamma_variate(rng, self.eta);
                let k = poisson(rng, lambda);
                if k > 0 {
                    return k;
                }
            }
        }
        self.sample_inverse_cdf(rng)
    }
}

/// K ~ Poisson(μ) on {0, 1, …} (K = 0 returns a data-independent default).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PoissonK {
    mu: f64,
}

impl PoissonK {
    pub fn new(mu: f64) -> Result<Self> {
        let mu = Range::Positive.check("mean", mu)?;
        if mu > POISSON_EXACT_MAX {
            return Err(Error::invalid(
                "mean",
                crate::error::fmt_num(mu),
                "at most 1e12 (the largest Poisson mean sampled exactly)",
            ));
        }
        Ok(PoissonK { mu })
    }
    pub fn mu(&self) -> f64 {
        self.mu
    }
}

impl CountLaw for PoissonK {
    fn pmf(&self, k: u64) -> f64 {
        let kf = k as f64;
        libm::exp(-self.mu + kf * libm::log(self.mu) - libm::lgamma(kf + 1.0))
    }
    fn pgf(&self, x: f64) -> f64 {
        libm::exp(self.mu * (x - 1.0))
    }
    fn pgf_deriv(&self, x: f64) -> f64 {
        self.mu * libm::exp(self.mu * (x - 1.0))
    }
    fn mean(&self) -> f64 {
        self.mu
    }
    fn one_minus_pgf(&self, x: f64) -> f64 {
        -libm::expm1(self.mu * (x - 1.0))
    }
}

impl Distribution<u64> for PoissonK {
    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        poisson(rng, self.mu)
    }
}

/// K = k always: naive repetition.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FixedK {
    k: u64,
}

impl FixedK {
    pub fn new(k: u64) -> Result<Self> {
        if k == 0 {
            return Err(Error::invalid("k", 0, "an integer >= 1"));
        }
        Ok(FixedK { k })
    }
    pub fn k(&self) -> u64 {
        self.k
    }
}

impl CountLaw for FixedK {
    fn pmf(&self, k: u64) -> f64 {
        if k == self.k {
            1.0
        } else {
            0.0
        }
    }
    fn pgf(&self, x: f64) -> f64 {
        libm::pow(x, self.k as f64)
    }
    fn pgf_deriv(&self, x: f64) -> f64 {
        self.k as f64 * libm::pow(x, self.k as f64 - 1.0)
    }
    fn mean(&self) -> f64 {
        self.k as f64
    }
    fn one_minus_pgf(&self, x: f64) -> f64 {
        -libm::expm1(self.k as f64 * libm::log(x))
    }
    fn tail(&self, m: u64) -> (f64, f64) {
        if self.k > m {
            (1.0, self.k as f64)
        } else {
            (0.0, 0.0)
        }
    }
}

impl Distribution<u64> for FixedK {
    fn sample<R: Rng + ?Sized>(&self, _rng: &mut R) -> u64 {
        self.k
    }
}

/// K conditioned on K ≤ m (Lemma 22): no run count above m is ever drawn.
#[derive(Clone, Debug, PartialEq)]
pub struct TruncatedK {
    inner: Box<RunCount>,
    m: u64,
    /// P[K > m] and T_m = E[K·1{K > m}] of the untruncated K.
    p_tail: f64,
    t_tail: f64,
}

/// Largest truncation point for which the head is tabulated (pmf, pgf, sampling).
const MAX_TRUNCATION: u64 = 10_000_000;

impl TruncatedK {
    pub fn new(inner: RunCount, m: u64) -> Result<Self> {
        if m == 0 || m > MAX_TRUNCATION {
            return Err(Error::invalid(
                "truncate",
                m,
                format!("an integer in [1, {MAX_TRUNCATION}]"),
            ));
        }
        if let RunCount::Truncated(_) = inner {
            return Err(Error::invalid(
                "truncate",
                m,
                "applied once (the distribution is already truncated)",
            ));
        }
        let (p_tail, t_tail) = inner.tail(m);
        if p_tail.is_nan() || p_tail >= 1.0 || inner.pmf(0) >= 1.0 - p_tail {
            return Err(Error::invalid(
                "truncate",
                m,
                "a point below which K has positive probability of at least one run",
            ));
        }
        Ok(TruncatedK {
            inner: Box::new(inner),
            m,
            p_tail,
            t_tail,
        })
    }
    pub fn inner(&self) -> &RunCount {
        &self.inner
    }
    pub fn m(&self) -> u64 {
        self.m
    }
    /// P[K > m] of the untruncated K.
    pub fn p_tail(&self) -> f64 {
        self.p_tail
    }
    /// T_m = E[K·1{K > m}] of the untruncated K.
    pub fn t_tail(&self) -> f64 {
        self.t_tail
    }
    fn head_sum(&self, term: impl Fn(u64, f64) -> f64) -> f64 {
        (0..=self.m)
            .map(|k| term(k, self.inner.pmf(k)))
            .sum::<f64>()
            / (1.0 - self.p_tail)
    }
}

impl CountLaw for TruncatedK {
    fn pmf(&self, k: u64) -> f64 {
        if k > self.m {
            0.0
        } else {
            self.inner.pmf(k) / (1.0 - self.p_tail)
        }
    }
    fn pgf(&self, x: f64) -> f64 {
        self.head_sum(|k, p| p * libm::pow(x, k as f64))
    }
    fn pgf_deriv(&self, x: f64) -> f64 {
        self.head_sum(|k, p| {
            if k == 0 {
                0.0
            } else {
                p * k as f64 * libm::pow(x, k as f64 - 1.0)
            }
        })
    }
    fn mean(&self) -> f64 {
        (self.inner.mean() - self.t_tail) / (1.0 - self.p_tail)
    }
    fn one_minus_pgf(&self, x: f64) -> f64 {
        self.head_sum(|k, p| {
            if k == 0 {
                0.0
            } else {
                -p * libm::expm1(k as f64 * libm::log(x))
            }
        })
    }
    fn tail(&self, m: u64) -> (f64, f64) {
        if m >= self.m {
            (0.0, 0.0)
        } else {
            let p = (m + 1..=self.m).map(|k| self.pmf(k)).sum();
            let t = (m + 1..=self.m).map(|k| k as f64 * self.pmf(k)).sum();
            (p, t)
        }
    }
}

impl Distribution<u64> for TruncatedK {
    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        if self.p_tail < 0.5 {
            loop {
                let k = self.inner.sample(rng);
                if k <= self.m {
                    return k;
                }
            }
        }
        // Mostly above m: inverse CDF over 0..=m.
        let v: f64 = rng.random::<f64>() * (1.0 - self.p_tail);
        let mut c = 0.0;
        for k in 0..=self.m {
            c += self.inner.pmf(k);
            if c >= v {
                return k;
            }
        }
        self.m
    }
}

/// Any law of K, for code that chooses the family at run time (the CLI, experiment files).
#[derive(Clone, Debug, PartialEq)]
pub enum RunCount {
    Tnb(Tnb),
    Poisson(PoissonK),
    Fixed(FixedK),
    Truncated(TruncatedK),
}

impl RunCount {
    /// This law, if every K it draws is a number of runs a u64 holds; otherwise an error naming
    /// `mean` (as the user wrote it) and the largest mean accepted for this family.
    pub fn drawable(self, mean: f64) -> Result<Self> {
        // Poisson and fixed K are bounded by their constructors; truncation keeps K ≤ m.
        let RunCount::Tnb(tnb) = &self else {
            return Ok(self);
        };
        if tnb.u <= MAX_DRAWN_U {
            return Ok(self);
        }
        let largest = libm::exp(tnb_ln_mean(tnb.eta, MAX_DRAWN_U));
        // Rounded down, so the mean named is accepted.
        let largest = crate::numeric::fmt_up_sig(-largest, 4);
        Err(Error::invalid(
            "mean",
            crate::error::fmt_num(mean),
            format!(
                "at most {} for the {} law (a larger mean draws numbers of runs too large to \
                 count)",
                largest.trim_start_matches('-'),
                self.family()
            ),
        ))
    }

    /// A short name for tables: `tnb(eta=0.5)`, `poisson`, `fixed`, `… truncated at m`.
    pub fn family(&self) -> String {
        match self {
            RunCount::Tnb(t) => CountFamily::Tnb { eta: t.eta }.name(),
            RunCount::Poisson(_) => CountFamily::Poisson.name(),
            RunCount::Fixed(_) => CountFamily::Fixed.name(),
            RunCount::Truncated(t) => format!("{} truncated at {}", t.inner.family(), t.m),
        }
    }
}

macro_rules! delegate {
    ($self:ident, $d:ident => $e:expr) => {
        match $self {
            RunCount::Tnb($d) => $e,
            RunCount::Poisson($d) => $e,
            RunCount::Fixed($d) => $e,
            RunCount::Truncated($d) => $e,
        }
    };
}

impl CountLaw for RunCount {
    fn pmf(&self, k: u64) -> f64 {
        delegate!(self, d => d.pmf(k))
    }
    fn pgf(&self, x: f64) -> f64 {
        delegate!(self, d => d.pgf(x))
    }
    fn pgf_deriv(&self, x: f64) -> f64 {
        delegate!(self, d => d.pgf_deriv(x))
    }
    fn mean(&self) -> f64 {
        delegate!(self, d => d.mean())
    }
    fn one_minus_pgf(&self, x: f64) -> f64 {
        delegate!(self, d => d.one_minus_pgf(x))
    }
    fn tail(&self, m: u64) -> (f64, f64) {
        delegate!(self, d => d.tail(m))
    }
}

impl Distribution<u64> for RunCount {
    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        delegate!(self, d => d.sample(rng))
    }
}

/// A family of laws of K, before its mean is chosen (what a user names on the command line or
/// in an experiment file).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CountFamily {
    Tnb { eta: f64 },
    Poisson,
    Fixed,
}

impl CountFamily {
    /// `logarithmic`, `geometric`, `tnb:ETA`, `poisson` or `fixed`.
    pub fn parse(s: &str) -> Result<Self> {
        let allowed = "logarithmic, geometric, tnb:ETA (ETA > -1), poisson or fixed";
        match s.trim() {
            "logarithmic" => Ok(CountFamily::Tnb { eta: 0.0 }),
            "geometric" => Ok(CountFamily::Tnb { eta: 1.0 }),
            "poisson" => Ok(CountFamily::Poisson),
            "fixed" => Ok(CountFamily::Fixed),
            other => match other.strip_prefix("tnb:").map(|e| e.trim().parse::<f64>()) {
                Some(Ok(eta)) if eta > -1.0 && eta.is_finite() => Ok(CountFamily::Tnb { eta }),
                _ => Err(Error::invalid("dist", other, allowed)),
            },
        }
    }

    /// The law with mean E[K] = `mean` (an integer for `fixed`), truncated at `truncate` if given.
    pub fn with_mean(self, mean: f64, truncate: Option<u64>) -> Result<RunCount> {
        let law = match self {
            CountFamily::Tnb { eta } => RunCount::Tnb(Tnb::from_mean(eta, mean)?),
            CountFamily::Poisson => RunCount::Poisson(PoissonK::new(mean)?),
            CountFamily::Fixed => {
                if !(mean >= 1.0 && mean.fract() == 0.0 && mean < 1e15) {
                    return Err(Error::invalid(
                        "mean",
                        mean,
                        "an integer >= 1 for a fixed K",
                    ));
                }
                RunCount::Fixed(FixedK::new(mean as u64)?)
            }
        };
        match truncate {
            Some(m) => Ok(RunCount::Truncated(TruncatedK::new(law, m)?)),
            None => Ok(law),
        }
    }

    /// `logarithmic`, `geometric`, `tnb(eta=…)`, `poisson` or `fixed`.
    pub fn name(self) -> String {
        match self {
            CountFamily::Tnb { eta: 0.0 } => "logarithmic".into(),
            CountFamily::Tnb { eta: 1.0 } => "geometric".into(),
            CountFamily::Tnb { eta } => format!("tnb(eta={eta})"),
            CountFamily::Poisson => "poisson".into(),
            CountFamily::Fixed => "fixed".into(),
        }
    }

    /// The name for a reader (legends): `logarithmic`, `geometric`, `TNB η = 0.5`, `Poisson`,
    /// `fixed K (naive)`.
    pub fn label(self) -> String {
        match self {
            CountFamily::Tnb { eta } if eta != 0.0 && eta != 1.0 => format!("TNB η = {eta}"),
            CountFamily::Poisson => "Poisson".into(),
            CountFamily::Fixed => "fixed K (naive)".into(),
            other => other.name(),
        }
    }
}
