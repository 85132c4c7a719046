//! Privacy-loss distributions (PLD): a mechanism's privacy loss L = ln(P(x)/Q(x)), x ~ P, for
//! its dominating pair (P, Q), kept as masses on a grid of losses i·h plus the mass of an
//! infinite loss. Composition convolves the masses (by FFT); k runs of one mechanism take one
//! transform, its k-th power and one inverse on a window holding all but 10⁻¹⁵ of each tail
//! (O(N log N + N log k) for a window of N losses), and δ(ε) = E_P[(1 − e^{ε−L})₊] (the
//! hockey-stick divergence) is read off exactly.
//!
//! Discretisation by "connect the dots" (Doroshenko, Ghazi, Kamath, Kumar, Manurangsi, PETS
//! 2022): the grid PLD whose δ(ε) equals the mechanism's at every grid loss ε_i and is linear
//! in e^ε between them. δ is convex in e^ε, so that PLD's δ lies above the mechanism's
//! everywhere: it is pessimistic, and stays so under composition. Mass outside the losses
//! [ε_0, ε_n] that hold all but `tail` of P on each side is never dropped: below ε_0 it sits
//! at ε_0 (a larger loss), above ε_n it is part of the infinite loss δ(ε_n). Each composition
//! cuts the tails of mass below `TAIL` the same way, and a self-composition's window counts
//! a bound on the mass outside it the same way.

use super::{DpBound, DpSgd, LotSampling};
use crate::error::{Error, Range, Result};
use crate::numeric::fft::RealFft;
use crate::numeric::{log_ndtr, ndtr};
use num_complex::Complex;
use rayon::prelude::*;

/// The mass a composition may move into the infinite loss (its upper tail) or onto its
/// smallest kept loss (its lower tail), each side.
const TAIL: f64 = 1e-15;
/// The most losses a PLD may hold: 2²³, a self-composition's peak memory about 0.7 GB (its two
/// directions' transforms at once, some 80 bytes a loss), and its time a few seconds.
pub const MAX_POINTS: usize = 1 << 23;
/// Below this many multiply-adds a convolution is done directly.
const DIRECT_MAX: usize = 1 << 16;

/// A mechanism's dominating pair (P, Q), through what the discretisation needs of it.
pub trait DominatingPair: Send + Sync {
    /// δ(ε) = sup_S P(S) − e^ε Q(S).
    fn delta(&self, epsilon: f64) -> f64;
    /// Losses [lo, hi] such that P puts at most `tail` on each side beyond them.
    fn loss_range(&self, tail: f64) -> (f64, f64);
    /// Whether the losses are unbounded above (δ(ε) > 0 at every ε).
    fn unbounded(&self) -> bool {
        false
    }
}

/// The spacing that puts `width` of losses on [`MAX_POINTS`] grid points, for messages.
fn coarsest(width: f64) -> String {
    crate::numeric::fmt_up_sig(width / MAX_POINTS as f64, 2)
}

/// The z with Φ(−z) ≤ `tail` (to within a part in 10⁶ above the smallest).
fn tail_z(tail: f64) -> f64 {
    let target = libm::log(tail);
    let (mut lo, mut hi) = (0.0, 40.0);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if log_ndtr(-mid) <= target {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// The Gaussian mechanism of sensitivity Δ and noise σ as its pair: P = N(μ, 1), Q = N(0, 1)
/// with μ = Δ/σ (both directions are the same pair, mirrored). Under P, L ~ N(μ²/2, μ²).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GaussianPair {
    mu: f64,
}

impl GaussianPair {
    pub fn new(sensitivity: f64, sigma: f64) -> Result<Self> {
        let sensitivity = Range::Positive.check("sensitivity", sensitivity)?;
        let sigma = Range::Positive.check("sigma", sigma)?;
        Ok(GaussianPair {
            mu: sensitivity / sigma,
        })
    }
}

impl DominatingPair for GaussianPair {
    /// Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ) (Balle–Wang 2018, Thm. 8).
    fn delta(&self, epsilon: f64) -> f64 {
        let mu = self.mu;
        let a = ndtr(mu / 2.0 - epsilon / mu);
        let b = libm::exp(epsilon + log_ndtr(-mu / 2.0 - epsilon / mu));
        (a - b).max(0.0)
    }

    fn loss_range(&self, tail: f64) -> (f64, f64) {
        let (m, z) = (self.mu * self.mu / 2.0, tail_z(tail));
        (m - z * self.mu, m + z * self.mu)
    }

    fn unbounded(&self) -> bool {
        true
    }
}

/// DP-SGD's step: the Gaussian of noise multiplier σ on a lot drawn by Poisson sampling at rate
/// q, in one direction of add/remove. `Remove`: P = (1 − q)·N(0, σ²) + q·N(1, σ²) against
/// Q = N(0, σ²); `Add`: the two swapped.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PoissonGaussianPair {
    q: f64,
    sigma: f64,
    direction: Direction,
}

/// Which neighbour is P.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Remove,
    Add,
}

impl PoissonGaussianPair {
    pub fn new(q: f64, sigma: f64, direction: Direction) -> Result<Self> {
        let q = Range::UnitExcludingZero.check("sampling_rate", q)?;
        let sigma = Range::Positive.check("noise_multiplier", sigma)?;
        Ok(PoissonGaussianPair {
            q,
            sigma,
            direction,
        })
    }

    /// The mixture's loss against N(0, σ²) at x: ln(1 − q + q·e^{(2x − 1)/(2σ²)}).
    fn mixture_loss(&self, x: f64) -> f64 {
        let s2 = self.sigma * self.sigma;
        let t = (2.0 * x - 1.0) / (2.0 * s2);
        // ln(1 − q + q e^t), stable for large t.
        if t > 0.0 {
            t + libm::log(self.q + (1.0 - self.q) * libm::exp(-t))
        } else {
            libm::log(1.0 - self.q + self.q * libm::exp(t))
        }
    }
}

/// 1 − Φ(x).
fn upper(x: f64) -> f64 {
    ndtr(-x)
}

impl DominatingPair for PoissonGaussianPair {
    fn delta(&self, epsilon: f64) -> f64 {
        let (q, s) = (self.q, self.sigma);
        let s2 = s * s;
        let v = match self.direction {
            Direction::Remove => {
                // L(x) ≥ ln(1 − q) everywhere: below it every x has L > ε.
                let r = libm::exp(epsilon) - 1.0 + q;
                if r <= 0.0 {
                    return (-libm::expm1(epsilon)).max(0.0);
                }
                let x = s2 * libm::log(r / q) + 0.5;
                let above = upper(x / s);
                (1.0 - q) * above + q * upper((x - 1.0) / s) - libm::exp(epsilon) * above
            }
            Direction::Add => {
                // L(x) = −mixture loss ≤ −ln(1 − q): no x has a larger loss.
                let r = libm::exp(-epsilon) - 1.0 + q;
                if r <= 0.0 {
                    return 0.0;
                }
                let x = s2 * libm::log(r / q) + 0.5;
                ndtr(x / s)
                    - libm::exp(epsilon) * ((1.0 - q) * ndtr(x / s) + q * ndtr((x - 1.0) / s))
            }
        };
        v.max(0.0)
    }

    fn loss_range(&self, tail: f64) -> (f64, f64) {
        let z = tail_z(tail);
        let s = self.sigma;
        match self.direction {
            // P is the mixture: x in [−zσ, 1 + zσ] holds all but `tail` each side.
            Direction::Remove => (self.mixture_loss(-z * s), self.mixture_loss(1.0 + z * s)),
            // P = N(0, σ²); the loss decreases in x.
            Direction::Add => (-self.mixture_loss(z * s), -self.mixture_loss(-z * s)),
        }
    }

    /// Removing: the mixture's loss grows without bound; adding: it is at most −ln(1 − q).
    fn unbounded(&self) -> bool {
        self.direction == Direction::Remove
    }
}

/// DP-SGD's step on a lot of m of n examples drawn **without replacement** (q = m/n), under
/// replace-one neighbours, σ the noise multiplier relative to the replace-one sensitivity (the
/// convention of [`super::subsampled_wor`]). Its privacy curve is
///
/// δ(ε) = max(H_{e^ε}(P′‖Q), H_{e^ε}(Q‖P′)),  P′ = q·N(1, σ²) + (1 − q)·N(0, σ²),  Q = N(0, σ²),
///
/// the larger of [`PoissonGaussianPair`]'s two directions at the same q and σ. Derivation:
/// the step without subsampling is dominated under replace-one by (N(1, σ²), N(0, σ²)), i.e.
/// it is G_{1/σ}-DP in f-DP terms. Dong, Roth and Su (2022, Theorem 4.2; subsampling m of n
/// without replacement, replace-one neighbours) show that subsampling makes an f-DP
/// mechanism C_q(f)-DP with C_q(f) = min{f_q, f_q⁻¹}**, f_q = q·f + (1 − q)·Id. The privacy
/// curve of a trade-off function is its conjugate, δ(ε) = 1 + f*(−e^ε), and conjugation
/// turns the minimum into a maximum and ignores the convex hull (f** has the conjugate of f):
/// the curve of C_q(f) is the maximum of the curves of f_q and f_q⁻¹, which are those of the
/// pairs (P′, Q) and (Q, P′). (For ε ≥ 0 the first is q·δ_G(ln(1 + (e^ε − 1)/q)), Balle,
/// Barthe and Gaboardi 2018's bound by advanced joint convexity; Zhu, Dong and Wang 2022,
/// §5, give the same pair piecewise.) A maximum of curves is a curve, so the connect-the-dots
/// PLD of this one dominates every step in both orders of every neighbouring pair, and its
/// self-composition bounds the run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WorGaussianPair {
    remove: PoissonGaussianPair,
    add: PoissonGaussianPair,
}

impl WorGaussianPair {
    pub fn new(q: f64, sigma: f64) -> Result<Self> {
        Ok(WorGaussianPair {
            remove: PoissonGaussianPair::new(q, sigma, Direction::Remove)?,
            add: PoissonGaussianPair::new(q, sigma, Direction::Add)?,
        })
    }
}

impl DominatingPair for WorGaussianPair {
    fn delta(&self, epsilon: f64) -> f64 {
        self.remove.delta(epsilon).max(self.add.delta(epsilon))
    }

    fn loss_range(&self, tail: f64) -> (f64, f64) {
        let (a, b) = (self.remove.loss_range(tail), self.add.loss_range(tail));
        (a.0.min(b.0), a.1.max(b.1))
    }

    fn unbounded(&self) -> bool {
        true
    }
}

/// The Laplace mechanism of sensitivity Δ and scale b as its pair: P = Lap(0, b),
/// Q = Lap(Δ, b) (both directions are the same pair, mirrored). The loss lies in [−θ, θ],
/// θ = Δ/b, with atoms at both ends.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LaplacePair {
    theta: f64,
}

impl LaplacePair {
    pub fn new(sensitivity: f64, scale: f64) -> Result<Self> {
        let sensitivity = Range::Positive.check("sensitivity", sensitivity)?;
        let scale = Range::Positive.check("scale", scale)?;
        Ok(LaplacePair {
            theta: sensitivity / scale,
        })
    }
}

impl DominatingPair for LaplacePair {
    /// 1 − e^{(ε − θ)/2} on [−θ, θ], 1 − e^ε below it, 0 above (the loss is θ − 2x/b on
    /// 0 ≤ x ≤ Δ, θ left of it and −θ right of it).
    fn delta(&self, epsilon: f64) -> f64 {
        let theta = self.theta;
        if epsilon >= theta {
            0.0
        } else if epsilon >= -theta {
            -libm::expm1((epsilon - theta) / 2.0)
        } else {
            -libm::expm1(epsilon)
        }
    }

    fn loss_range(&self, _tail: f64) -> (f64, f64) {
        (-self.theta, self.theta)
    }
}

/// A pair on finitely many outcomes, each with its mass under P and under Q: randomized
/// response, and the pair that dominates every (ε, δ)-DP mechanism. An outcome Q cannot give
/// has an infinite loss.
#[derive(Clone, Debug, PartialEq)]
pub struct DiscretePair {
    /// (P(x), Q(x)) of each outcome.
    outcomes: Vec<(f64, f64)>,
}

impl DiscretePair {
    /// Randomized response on `buckets` answers: the true answer with probability 1 − p, else
    /// one drawn uniformly (p = `noise`). Under replace-one the pair is the answers' laws for
    /// two different true answers.
    pub fn randomized_response(noise: f64, buckets: u64) -> Result<Self> {
        let p = Range::UnitExcludingZero.check("noise", noise)?;
        if buckets < 2 {
            return Err(Error::invalid("buckets", buckets, "at least 2 answers"));
        }
        let k = buckets as f64;
        let (own, other) = (1.0 - p + p / k, p / k);
        let mut outcomes = vec![(own, other), (other, own)];
        if buckets > 2 {
            outcomes.push(((k - 2.0) * other, (k - 2.0) * other));
        }
        Ok(DiscretePair { outcomes })
    }

    /// The pair of (ε, δ)-DP (Kairouz–Oh–Viswanath): P = (δ, (1 − δ)e^ε/(1 + e^ε),
    /// (1 − δ)/(1 + e^ε), 0) and Q the same reversed. Every (ε, δ)-DP mechanism's privacy
    /// profile lies below this pair's.
    pub fn approximate_dp(epsilon: f64, delta: f64) -> Result<Self> {
        let epsilon = Range::NonNegative.check("epsilon", epsilon)?;
        if !(0.0..1.0).contains(&delta) {
            return Err(Error::invalid("delta", delta, "a number in [0, 1)"));
        }
        let (big, small) = (
            (1.0 - delta) / (1.0 + libm::exp(-epsilon)),
            (1.0 - delta) / (1.0 + libm::exp(epsilon)),
        );
        Ok(DiscretePair {
            outcomes: vec![(delta, 0.0), (big, small), (small, big), (0.0, delta)],
        })
    }
}

impl DominatingPair for DiscretePair {
    fn delta(&self, epsilon: f64) -> f64 {
        let e = libm::exp(epsilon);
        let d: f64 = self
            .outcomes
            .iter()
            .map(|&(p, q)| (p - e * q).max(0.0))
            .sum();
        d.min(1.0)
    }

    /// The finite losses' range (an infinite loss is δ at the top of the grid).
    fn loss_range(&self, _tail: f64) -> (f64, f64) {
        let losses = self
            .outcomes
            .iter()
            .filter(|&&(p, q)| p > 0.0 && q > 0.0)
            .map(|&(p, q)| libm::log(p / q));
        let (lo, hi) = losses.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), l| {
            (lo.min(l), hi.max(l))
        });
        if lo > hi {
            (0.0, 0.0)
        } else {
            (lo, hi)
        }
    }
}

/// A privacy-loss distribution on the grid of losses `(offset + i)·interval`.
#[derive(Clone, Debug, PartialEq)]
pub struct Pld {
    interval: f64,
    offset: i64,
    masses: Vec<f64>,
    /// The mass of an infinite loss (with every upper tail cut): a floor on δ.
    infinity: f64,
    /// The part of it that is the mechanisms' own (an outcome one neighbour cannot give, none
    /// cut): where it reaches δ, no ε is finite, by any accountant.
    atoms: f64,
    /// A bound on the l1 distance between `masses` and what exact arithmetic would have
    /// computed (the FFTs' rounding), added to every δ read off.
    rounding: f64,
}

/// The losses a self-composition keeps: grid indices first..first + width, with bounds on
/// the composition's mass below and above them.
#[derive(Clone, Copy, Debug)]
struct Window {
    first: i64,
    width: usize,
    below: f64,
    above: f64,
}

impl Pld {
    /// The connect-the-dots PLD of `pair` on the grid of spacing `interval`, over the losses
    /// that hold all but `tail` of P on each side.
    pub fn connect_dots(pair: &dyn DominatingPair, interval: f64, tail: f64) -> Result<Pld> {
        let h = Range::Positive.check("value_discretization_interval", interval)?;
        let tail = Range::OpenUnit.check("tail", tail)?;
        let (lo, hi) = pair.loss_range(tail);
        let (i_lo, i_hi) = ((lo / h).floor(), (hi / h).ceil());
        let points = i_hi - i_lo + 1.0;
        if !(points.is_finite() && points <= MAX_POINTS as f64) {
            return Err(Error::invalid(
                "value_discretization_interval",
                h,
                format!(
                    "a grid of at most {MAX_POINTS} losses (the PLD's memory bound) over \
                     [{lo:.4}, {hi:.4}]: a coarser interval, of at least {}",
                    coarsest(hi - lo)
                ),
            ));
        }
        let n = points as usize;
        let offset = i_lo as i64;
        let eps = |i: usize| (offset + i as i64) as f64 * h;
        let mut masses: Vec<f64> = (0..n).map(|i| pair.delta(eps(i))).collect();
        if masses.iter().any(|d| !d.is_finite()) {
            return Err(Error::Numerical(
                "a hockey-stick divergence is not finite".into(),
            ));
        }
        // Where the pair's losses are unbounded, δ at the top dot is positive: one that
        // underflows to 0 is the smallest positive double (an upper bound), never 0.
        let tiny = if pair.unbounded() {
            f64::from_bits(1)
        } else {
            0.0
        };
        let infinity = masses[n - 1].max(tiny);
        // δ is linear in e^ε between the dots, of slope s_i on [ε_i, ε_{i+1}] (0 past the
        // last, where δ is the infinite mass), so m_i = e^{ε_i}(s_i − s_{i−1}), taken as
        // (δ_{i+1} − δ_i)/(e^h − 1) − (δ_i − δ_{i−1})/(1 − e^{−h}): no e^{ε_i}, which
        // overflows (to ∞·0 = NaN, a lost mass) where a loss passes 709. The masses overwrite
        // the deltas in place (m_i once δ_i is no longer needed).
        let (up, down) = (libm::expm1(h), -libm::expm1(-h));
        let mut before = masses[0];
        for i in 0..n {
            let here = masses[i];
            let rise = if i + 1 < n {
                (masses[i + 1] - here) / up
            } else {
                0.0
            };
            // δ is convex in e^ε, so the slopes rise; a negative difference is rounding, and
            // zero mass there only raises δ.
            masses[i] = if i == 0 {
                0.0
            } else {
                (rise - (here - before) / down).max(0.0)
            };
            before = here;
        }
        let rest: f64 = masses[1..].iter().sum();
        masses[0] = (1.0 - infinity - rest).max(0.0);
        Ok(Pld {
            interval: h,
            offset,
            masses,
            infinity,
            // Bounded losses all lie on the grid: what is above its top is the atom.
            atoms: if pair.unbounded() { 0.0 } else { infinity },
            rounding: 0.0,
        })
    }

    /// The PLD of running `self` and then `other` (both on the same grid).
    pub fn compose(&self, other: &Pld) -> Result<Pld> {
        if self.interval != other.interval {
            return Err(Error::invalid(
                "value_discretization_interval",
                other.interval,
                format!(
                    "the same interval as the PLD it composes with ({})",
                    self.interval
                ),
            ));
        }
        let (masses, rounding) = convolve(&self.masses, &other.masses);
        // Errors carried in propagate through the convolution without growth (Young's
        // inequality, ‖e ∗ y‖₁ ≤ ‖e‖₁‖y‖₁, with the exact y summing to at most 1 and the
        // computed x to `total`); cutting tails never increases an l1 error.
        let total: f64 = self.masses.iter().sum();
        let rounding = rounding + self.rounding + total.max(1.0) * other.rounding;
        let union = |a: f64, b: f64| (a + b - a * b).min(1.0);
        let (infinity, atoms) = (
            union(self.infinity, other.infinity),
            union(self.atoms, other.atoms),
        );
        let mut out = Pld {
            interval: self.interval,
            offset: self.offset + other.offset,
            masses,
            infinity,
            atoms,
            rounding,
        };
        out.cut_tails();
        Ok(out)
    }

    /// `self` composed with itself `count` times, by one forward transform, the pointwise
    /// `count`-th power of its spectrum and one inverse transform (Koskela, Jälkö, Honkela,
    /// AISTATS 2020 compose the same way), where repeated squaring would take 2·log₂(count).
    ///
    /// The transform is circular: it computes the composition on a window of losses [a, b]
    /// with the mass outside folded onto it. The window is chosen by Chernoff bounds on the
    /// composed loss S: P(S > b) ≤ M(λ)^k e^{−λb} and P(S < a) ≤ M(−λ)^k e^{λa}, M the step's
    /// moment generating function, each at most TAIL. Nothing is dropped: folded mass only
    /// adds to losses in the window (exact masses are non-negative), the upper tail's bound
    /// joins the infinite loss and the lower tail's bound sits on the smallest loss (a larger
    /// loss), so δ(ε) read off is never below the exact composition's.
    pub fn self_compose(&self, count: u64) -> Result<Pld> {
        let mut one = Pld::self_compose_each(&[self], count)?;
        Ok(one.remove(0))
    }

    /// Each of `plds` composed with itself `count` times ([`Pld::self_compose`]), on
    /// transforms of one size, so that a thread doing both shares their plans (the
    /// directions of add and remove of one mechanism: planning costs about as much as
    /// transforming).
    pub fn self_compose_each(plds: &[&Pld], count: u64) -> Result<Vec<Pld>> {
        if count == 0 {
            return Err(Error::invalid("count", 0, "at least 1 composition"));
        }
        if count == 1 {
            return Ok(plds.iter().map(|&p| p.clone()).collect());
        }
        // The step's tails of mass ≤ TAIL/k each (k of them cost at most TAIL) leave the
        // window: its upper one could otherwise stretch it far beyond where the mass is.
        // Each PLD on a thread of its own where rayon has them (the same numbers on one).
        let steps: Vec<Pld> = plds
            .par_iter()
            .map(|&p| {
                let mut step = p.clone();
                step.cut_tails_of(TAIL / count as f64);
                step
            })
            .collect();
        let windows = steps
            .par_iter()
            .map(|s| s.window(count))
            .collect::<Result<Vec<_>>>()?;
        // Transforms of a power of two ≥ the widest window (numeric::fft's sizes).
        let size = windows
            .iter()
            .flatten()
            .map(|w| w.width)
            .max()
            .unwrap_or(1)
            .max(2)
            .next_power_of_two();
        Ok(steps
            .par_iter()
            .zip(windows)
            .map(|(s, w)| s.power(count, w, size))
            .collect())
    }

    /// The losses a `count`-fold composition of this PLD keeps ([`Window`]); `None` where it
    /// holds no finite mass.
    fn window(&self, count: u64) -> Result<Option<Window>> {
        let k = count as f64;
        let u = f64::EPSILON / 2.0;
        let (h, n) = (self.interval, self.masses.len());
        if self.masses.iter().sum::<f64>() <= 0.0 {
            return Ok(None);
        }
        // Grid indices of the composition: k·offset + the sum of k step indices in [0, n).
        let (lowest, highest) = (
            k * self.offset as f64,
            k * (self.offset as f64 + (n - 1) as f64),
        );
        // The window's edges: the b minimising (k·ln M(λ) − ln TAIL)/λ over λ > 0 bounds
        // P(S > b) by TAIL, and the a maximising (ln TAIL − k·ln M(−λ))/λ bounds P(S < a).
        // ln M errs by at most 4(n + 2)·u relative in M (Horner's rule) and by the rounding
        // of λ·l; k of them.
        let largest_loss = h
            * (self.offset.unsigned_abs() as f64)
                .max((self.offset + n as i64 - 1).unsigned_abs() as f64);
        let edge = |sign: f64| {
            let bound = |lambda: f64| {
                let slack = 4.0 * k * u * (n as f64 + 2.0 + lambda * largest_loss);
                (k * self.log_mgf(sign * lambda) + slack - libm::log(TAIL)) / lambda
            };
            // λ·h·n ≤ 700: no power of e^{−λh} in Horner's rule underflows.
            let hi = 700.0 / (h * n as f64);
            let best = golden_section_min(bound, hi * 1e-9, hi, 1e-3);
            bound(best)
        };
        let b = (edge(1.0) / h).ceil();
        let a = (-edge(-1.0) / h).floor();
        let (a, b) = (a.max(lowest), b.min(highest).max(a));
        let points = b - a + 1.0;
        if !(points.is_finite() && points <= MAX_POINTS as f64) {
            return Err(Error::invalid(
                "value_discretization_interval",
                h,
                format!(
                    "a grid of at most {MAX_POINTS} losses (the PLD's memory bound) for {count} \
                     compositions over [{:.4}, {:.4}]: a coarser interval, of at least {} (or \
                     Rényi DP)",
                    a * h,
                    b * h,
                    coarsest((b - a) * h)
                ),
            ));
        }
        // The Chernoff bounds, each at most TAIL (and nothing where the window reaches the
        // support's end).
        Ok(Some(Window {
            first: a as i64,
            width: points as usize,
            below: if a > lowest { TAIL } else { 0.0 },
            above: if b < highest { TAIL } else { 0.0 },
        }))
    }

    /// The `count`-fold composition (≥ 2) of this PLD on `window`, by transforms of `size` ≥
    /// its width.
    fn power(&self, count: u64, window: Option<Window>, size: usize) -> Pld {
        let k = count as f64;
        let u = f64::EPSILON / 2.0;
        let h = self.interval;
        let total: f64 = self.masses.iter().sum();
        // Folding more losses than the transform has points sums up to ⌈n/N⌉ masses a point:
        // an l1 error of at most (⌈n/N⌉ − 1)·u·total (generously).
        let per_point = self.masses.len().div_ceil(size) as f64;
        let folding = (per_point - 1.0) * 1.01 * u * total;
        // An error carried in (or made by folding) grows at most k·(total + r)^{k−1}-fold
        // (a telescoping sum).
        let input_error = self.rounding + folding;
        let carried = if input_error > 0.0 {
            k * input_error * libm::exp((k - 1.0) * libm::log(total.max(1.0) + input_error))
        } else {
            0.0
        };
        // 1 − (1 − m_∞)^k, rounded up.
        let power = |m: f64| (-libm::expm1(k * libm::log1p(-m))) * (1.0 + 4.0 * u);
        let (infinity, atoms) = (power(self.infinity), power(self.atoms).min(1.0));
        let Some(Window {
            first,
            width,
            below,
            above,
        }) = window
        else {
            return Pld {
                interval: h,
                offset: self.offset.saturating_mul(count as i64),
                masses: vec![0.0],
                infinity: infinity.min(1.0),
                atoms,
                rounding: carried,
            };
        };
        let fft = RealFft::cached(size);
        let mut folded = vec![0.0; size];
        for (i, &m) in self.masses.iter().enumerate() {
            folded[i % size] += m;
        }
        let mut spectrum = vec![Complex::new(0.0, 0.0); size / 2 + 1];
        // One scratch for both transforms.
        let mut scratch = Vec::with_capacity(size / 2);
        fft.forward(&folded, &mut spectrum, &mut scratch);
        // Each bin of a transform errs by at most τ·‖x‖₁ (RealFft::error, componentwise);
        // the k-th power of a bin z known to within e errs by at most
        // k·(|z| + e)^{k−1}·e, and binary powering itself by (1 + √5·u)^{2k} − 1 relative
        // (complex products err by √5·u each; a squaring doubles the relative error).
        let tau = fft.error();
        let bin_error = tau * total;
        let powering = libm::expm1(2.0 * k * 5f64.sqrt() * u * 1.01);
        let bin_bound =
            |reach: f64| k * libm::pow(reach, k - 1.0) * bin_error + powering * libm::pow(reach, k);
        // Bins whose k-th power is below 10⁻⁴⁰ for sure (all but those near 0 when k is
        // large) are set to 0, that error counted too: powers cost more than transforms.
        let negligible = libm::pow(1e-40f64, 1.0 / k);
        // (negligible^k is 10⁻⁴⁰ up to rounding: 2·10⁻⁴⁰ bounds it.)
        let negligible_error = bin_bound(negligible) + 2e-40;
        let mut error_sq = 0.0;
        let last = spectrum.len() - 1;
        for (j, z) in spectrum.iter_mut().enumerate() {
            let reach = z.norm_sqr().sqrt() + bin_error;
            let e = if reach <= negligible {
                *z = Complex::new(0.0, 0.0);
                negligible_error
            } else {
                *z = complex_power(*z, count);
                bin_bound(reach)
            };
            // Bins other than 0 and N/2 stand for a conjugate pair of the full spectrum.
            error_sq += if j == 0 || j == last {
                e * e
            } else {
                2.0 * e * e
            };
        }
        let spectrum_error = error_sq.sqrt();
        // The forward transform's input takes the inverse's output.
        let mut masses = folded;
        fft.inverse(&spectrum, &mut masses, &mut scratch);
        drop((spectrum, scratch));
        // Bin j holds the losses k·offset + j (mod size): rotated so that bin 0 holds the
        // window's first loss, then cut to the window.
        let base = first - count as i64 * self.offset;
        masses.rotate_left(base.rem_euclid(size as i64) as usize);
        masses.truncate(width);
        let scale = 1.0 / size as f64;
        for m in &mut masses {
            *m = (*m * scale).max(0.0);
        }
        masses[0] += below;
        // The l1 error of the window: the spectrum's error through the scaled inverse
        // transform (at most its 2-norm, by Parseval and √N·‖·‖₂ ≥ ‖·‖₁), the inverse
        // transform's own rounding (τ relative in the 2-norm, on masses of 2-norm ≤ 1) and
        // the scaling's, each at most √N times its 2-norm in l1.
        let rounding_here = spectrum_error * (1.0 + tau)
            + (tau + u) * (size as f64).sqrt() * (1.0 + spectrum_error);
        let infinity = infinity + above;
        let mut out = Pld {
            interval: h,
            offset: first,
            masses,
            infinity: infinity.min(1.0),
            atoms,
            rounding: rounding_here + carried,
        };
        out.cut_tails();
        out
    }

    /// Moves a lower tail of mass ≤ TAIL onto the smallest loss kept (a larger loss) and an
    /// upper tail of mass ≤ TAIL into the infinite loss: nothing is dropped.
    fn cut_tails(&mut self) {
        self.cut_tails_of(TAIL)
    }

    /// [`Pld::cut_tails`] with tails of mass ≤ `tail`.
    fn cut_tails_of(&mut self, tail: f64) {
        let (mut low, mut first) = (0.0, 0);
        while first + 1 < self.masses.len() && low + self.masses[first] <= tail {
            low += self.masses[first];
            first += 1;
        }
        let (mut high, mut last) = (0.0, self.masses.len());
        while last > first + 1 && high + self.masses[last - 1] <= tail {
            high += self.masses[last - 1];
            last -= 1;
        }
        self.masses.truncate(last);
        self.masses.drain(..first);
        self.masses[0] += low;
        self.offset += first as i64;
        self.infinity = (self.infinity + high).min(1.0);
    }

    /// The loss of grid point i.
    fn loss(&self, i: usize) -> f64 {
        (self.offset + i as i64) as f64 * self.interval
    }

    /// ln Σ_i m_i e^{λ·l_i} (the finite losses' moment generating function), by Horner's rule
    /// in e^{−|λ|·h} < 1 (no overflow, one multiply-add a loss; positive terms, so it errs by
    /// at most 4(n + 2)·u relative, and never below for terms lost to underflow).
    fn log_mgf(&self, lambda: f64) -> f64 {
        let rho = libm::exp(-lambda.abs() * self.interval);
        let n = self.masses.len();
        // λ ≥ 0: Σ m_i ρ^{n−1−i} times e^{λ·l_{n−1}}; λ < 0: Σ m_i ρ^i times e^{λ·l_0}.
        let (sum, top) = if lambda >= 0.0 {
            (horner(&self.masses, rho, false), self.loss(n - 1))
        } else {
            (horner(&self.masses, rho, true), self.loss(0))
        };
        // Terms below 10⁻³⁰⁰ may round to 0: counted back in, generously.
        libm::log(sum + n as f64 * 1e-300) + lambda * top
    }

    /// δ(ε) = m_∞ + Σ_{ε_j > ε} m_j·(1 − e^{ε − ε_j}), plus the rounding allowance.
    pub fn delta(&self, epsilon: f64) -> f64 {
        let mut d = self.infinity + self.rounding;
        for (i, &m) in self.masses.iter().enumerate().rev() {
            let l = self.loss(i);
            if l <= epsilon {
                break;
            }
            d += m * -libm::expm1(epsilon - l);
        }
        d.min(1.0)
    }

    /// The smallest ε ≥ 0 with δ(ε) ≤ `delta` (the rounding allowance included): +∞ where the
    /// mechanisms' own infinite loss has mass ≥ δ (no ε is finite); where the tails cut and
    /// the rounding allowance reach δ, an error that says so (another accountant may bound it).
    pub fn epsilon(&self, delta: f64) -> Result<f64> {
        let target = Range::OpenUnit.check("delta", delta)?;
        if self.atoms >= target {
            return Ok(f64::INFINITY);
        }
        let delta = target - self.rounding;
        if self.infinity >= delta {
            return Err(Error::Infeasible(format!(
                "the PLD accountant cannot resolve δ = {}: its infinite loss (the mechanisms' \
                 own, and tails of up to {TAIL:e} cut from each composition) has mass {} and \
                 its rounding allowance is {}, together not below δ; it bounds ε only at δ \
                 above {} (Rényi DP may still bound this one)",
                crate::error::fmt_num(target),
                crate::numeric::fmt_up_sig(self.infinity, 3),
                crate::numeric::fmt_up_sig(self.rounding, 3),
                crate::numeric::fmt_up_sig(self.infinity + self.rounding, 3),
            )));
        }
        // On [ε_{i−1}, ε_i): δ(ε) = A_i − e^{ε − ε_i}·B_i with A_i = m_∞ + Σ_{j≥i} m_j and
        // B_i = Σ_{j≥i} m_j e^{ε_i − ε_j} = m_i + e^{−h}·B_{i+1} ≤ A_i (no e^{±ε_j}, which
        // overflows or underflows where losses pass ±709). From the top down, the first i whose
        // left end has δ > the target holds the answer, at most ε_i (where the step before
        // found δ ≤ the target).
        let rho = libm::exp(-self.interval);
        let u = f64::EPSILON / 2.0;
        let (mut a, mut b) = (self.infinity, 0.0);
        for i in (0..self.masses.len()).rev() {
            a += self.masses[i];
            b = self.masses[i] + rho * b;
            let at_left = if i == 0 { a } else { a - rho * b };
            if at_left > delta {
                // A and B err by at most 2u per term summed (B's powers of ρ included): A
                // rounded up and B down, so that ε is never below the grid's.
                let terms = (self.masses.len() - i + 1) as f64;
                let (a, b) = (a * (1.0 + 2.0 * terms * u), b * (1.0 - 2.0 * terms * u));
                let eps = self.loss(i) + libm::log((a - delta) / b).min(0.0);
                return Ok(eps.max(0.0));
            }
        }
        Ok(0.0)
    }

    /// The bound on the floating-point error every δ read off includes (dp-accounting makes
    /// none: `epsilon(δ + allowance)` is what exact arithmetic on this grid would give).
    pub fn rounding_allowance(&self) -> f64 {
        self.rounding
    }

    /// The grid's number of losses.
    pub fn len(&self) -> usize {
        self.masses.len()
    }

    pub fn is_empty(&self) -> bool {
        self.masses.is_empty()
    }
}

/// dp-accounting's default: P's mass beyond a mechanism's discretised losses is at most
/// e^{−50} on each side (moved to a larger loss, never dropped).
pub const MECHANISM_TAIL: f64 = 1.928_749_847_963_917_8e-22;
/// The default spacing of the loss grid: ε to about 10⁻⁴ above the exact composition's.
pub const DEFAULT_INTERVAL: f64 = 1e-4;

/// A mechanism the PLD accountant composes, under the neighbouring relation its parameters
/// are stated for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PldMechanism {
    /// N(f(x), σ²) for a query of ℓ2-sensitivity Δ.
    Gaussian { sensitivity: f64, sigma: f64 },
    /// f(x) + Lap(b) for a query of ℓ1-sensitivity Δ.
    Laplace { sensitivity: f64, scale: f64 },
    /// The true answer of `buckets` with probability 1 − noise, else a uniform one
    /// (replace-one).
    RandomizedResponse { noise: f64, buckets: u64 },
    /// Any (ε, δ)-DP mechanism.
    ApproximateDp { epsilon: f64, delta: f64 },
    /// A DP-SGD step on a Poisson lot (add/remove-one neighbours).
    PoissonGaussian {
        sampling_rate: f64,
        noise_multiplier: f64,
    },
    /// A DP-SGD step on a lot drawn without replacement (replace-one neighbours).
    WorGaussian {
        sampling_rate: f64,
        noise_multiplier: f64,
    },
}

/// A mechanism's pair (the remove direction), and the add direction's where it differs.
type Pairs = (Box<dyn DominatingPair>, Option<Box<dyn DominatingPair>>);

impl PldMechanism {
    /// The pair P dominates Q by, in each direction (remove, add) where they differ.
    fn pairs(&self) -> Result<Pairs> {
        Ok(match *self {
            PldMechanism::Gaussian { sensitivity, sigma } => {
                (Box::new(GaussianPair::new(sensitivity, sigma)?), None)
            }
            PldMechanism::Laplace { sensitivity, scale } => {
                (Box::new(LaplacePair::new(sensitivity, scale)?), None)
            }
            PldMechanism::RandomizedResponse { noise, buckets } => (
                Box::new(DiscretePair::randomized_response(noise, buckets)?),
                None,
            ),
            PldMechanism::ApproximateDp { epsilon, delta } => (
                Box::new(DiscretePair::approximate_dp(epsilon, delta)?),
                None,
            ),
            PldMechanism::PoissonGaussian {
                sampling_rate,
                noise_multiplier,
            } => {
                let pair = |d| PoissonGaussianPair::new(sampling_rate, noise_multiplier, d);
                (
                    Box::new(pair(Direction::Remove)?),
                    Some(Box::new(pair(Direction::Add)?)),
                )
            }
            PldMechanism::WorGaussian {
                sampling_rate,
                noise_multiplier,
            } => (
                Box::new(WorGaussianPair::new(sampling_rate, noise_multiplier)?),
                None,
            ),
        })
    }

    /// The Gaussian mechanism `g`.
    pub fn gaussian(g: &super::Gaussian) -> PldMechanism {
        PldMechanism::Gaussian {
            sensitivity: g.sensitivity(),
            sigma: g.sigma(),
        }
    }

    /// Every step of a DP-SGD run, as (its step, the number of steps).
    pub fn dpsgd(run: &DpSgd) -> (PldMechanism, u64) {
        let (sampling_rate, noise_multiplier) = (run.sampling_rate(), run.noise_multiplier());
        let step = match run.sampling() {
            LotSampling::Poisson => PldMechanism::PoissonGaussian {
                sampling_rate,
                noise_multiplier,
            },
            LotSampling::WithoutReplacement => PldMechanism::WorGaussian {
                sampling_rate,
                noise_multiplier,
            },
        };
        (step, run.steps())
    }

    /// Poisson lots protect add/remove-one neighbours, lots drawn without replacement
    /// replace-one: the two cannot be composed into one guarantee.
    fn relation(&self) -> Option<LotSampling> {
        match self {
            PldMechanism::PoissonGaussian { .. } => Some(LotSampling::Poisson),
            PldMechanism::WorGaussian { .. } => Some(LotSampling::WithoutReplacement),
            _ => None,
        }
    }
}

/// The PLD accountant: mechanisms composed (each any number of times), then ε(δ) or δ(ε) of
/// the whole. Poisson-subsampled steps are accounted in both directions of add/remove (each
/// composed on its own; the larger ε is the guarantee), every other mechanism by one pair.
#[derive(Clone, Debug, PartialEq)]
pub struct PldAccountant {
    interval: f64,
    remove: Option<Pld>,
    add: Option<Pld>,
    relation: Option<LotSampling>,
}

impl PldAccountant {
    /// An accountant on the loss grid of spacing `interval` ([`DEFAULT_INTERVAL`]: ε within
    /// about 10⁻⁴ of the exact composition's, always above it).
    pub fn new(interval: f64) -> Result<Self> {
        Ok(PldAccountant {
            interval: Range::Positive.check("value_discretization_interval", interval)?,
            remove: None,
            add: None,
            relation: None,
        })
    }

    /// Composes `count` ≥ 1 runs of `mechanism` with what is accounted so far.
    pub fn compose(&mut self, mechanism: PldMechanism, count: u64) -> Result<&mut Self> {
        if count == 0 {
            return Err(Error::invalid("count", 0, "at least 1 run"));
        }
        if let Some(r) = mechanism.relation() {
            match self.relation {
                Some(had) if had != r => {
                    return Err(Error::Infeasible(format!(
                        "a DP-SGD run with {} lots cannot be composed with one with {} lots: \
                         they protect different neighbouring relations ({}; {})",
                        r.name(),
                        had.name(),
                        r.protects(),
                        had.protects()
                    )))
                }
                _ => self.relation = Some(r),
            }
        }
        let (remove, add) = mechanism.pairs()?;
        let dots =
            |pair: &dyn DominatingPair| Pld::connect_dots(pair, self.interval, MECHANISM_TAIL);
        let (remove_pld, add_pld) = match add {
            Some(pair) => {
                // The two directions are independent: discretised on two threads where
                // rayon has them (the same numbers on one).
                let (one, other) = rayon::join(|| dots(remove.as_ref()), || dots(pair.as_ref()));
                let mut both = Pld::self_compose_each(&[&one?, &other?], count)?;
                let add_pld = both.pop().expect("two PLDs");
                (both.pop().expect("two PLDs"), add_pld)
            }
            None => {
                let p = dots(remove.as_ref())?.self_compose(count)?;
                (p.clone(), p)
            }
        };
        let join = |so_far: &Option<Pld>, new: Pld| match so_far {
            Some(p) => p.compose(&new),
            None => Ok(new),
        };
        self.remove = Some(join(&self.remove, remove_pld)?);
        self.add = Some(join(&self.add, add_pld)?);
        Ok(self)
    }

    fn plds(&self) -> Result<[&Pld; 2]> {
        match (&self.remove, &self.add) {
            (Some(r), Some(a)) => Ok([r, a]),
            _ => Err(Error::Infeasible(
                "nothing is composed yet: an empty composition has no privacy loss to account"
                    .into(),
            )),
        }
    }

    /// The smallest ε with δ(ε) ≤ `delta` in both directions.
    pub fn epsilon(&self, delta: f64) -> Result<DpBound> {
        let [r, a] = self.plds()?;
        let epsilon = r.epsilon(delta)?.max(a.epsilon(delta)?);
        Ok(DpBound {
            epsilon,
            delta,
            order: None,
        })
    }

    /// δ(ε), the larger of both directions.
    pub fn delta(&self, epsilon: f64) -> Result<DpBound> {
        let epsilon = Range::NonNegative.check("epsilon", epsilon)?;
        let [r, a] = self.plds()?;
        Ok(DpBound {
            epsilon,
            delta: r.delta(epsilon).max(a.delta(epsilon)),
            order: None,
        })
    }

    /// The grid's spacing.
    pub fn interval(&self) -> f64 {
        self.interval
    }
}

/// One run as the PLD accountant composes it: its mechanisms, each with how many times it
/// runs (a DP-SGD run's steps, then the release of its score).
pub type PldRun = Vec<(PldMechanism, u64)>;

/// The parts of `runs` runs of `run`, each count multiplied (an error where it overflows).
pub fn repeated(run: &[(PldMechanism, u64)], runs: u64) -> Result<PldRun> {
    run.iter()
        .map(|&(m, count)| {
            count
                .checked_mul(runs)
                .map(|c| (m, c))
                .ok_or_else(|| Error::invalid("runs", runs, "fewer runs: the count overflows"))
        })
        .collect()
}

/// ε at `delta` of the composition of `parts` on the loss grid of spacing `interval`. Where the
/// PLD cannot bound it (a window beyond [`MAX_POINTS`] losses, or a δ below what its cut tails
/// and rounding allowance resolve), an error that says why: never a smaller ε, and +∞ only
/// where the mechanisms' own infinite loss reaches δ (no ε is finite).
pub fn composed_epsilon(
    parts: &[(PldMechanism, u64)],
    delta: f64,
    interval: f64,
) -> Result<DpBound> {
    let mut pld = PldAccountant::new(interval)?;
    for &(m, count) in parts {
        pld.compose(m, count)?;
    }
    pld.epsilon(delta)
}

/// The name of the PLD accountant on the grid of spacing `interval`, as results record it.
pub fn accountant_name(interval: f64) -> String {
    format!("pld/connect-dots/{interval:e}")
}

/// The smallest DP-SGD noise multiplier (to 10⁻⁶ relative) whose PLD ε at `delta` is within
/// `target_epsilon`, on the loss grid of spacing `interval` (the search of
/// [`super::calibrate_dpsgd_noise`], another accountant).
pub fn calibrate_dpsgd_noise_pld(
    sampling: LotSampling,
    sampling_rate: f64,
    steps: u64,
    target_epsilon: f64,
    delta: f64,
    interval: f64,
) -> Result<super::Calibrated> {
    DpSgd::with_sampling(sampling, sampling_rate, 1.0, steps)?;
    PldAccountant::new(interval)?;
    let target_epsilon = Range::Positive.check("epsilon", target_epsilon)?;
    let delta = Range::OpenUnit.check("delta", delta)?;
    // A δ the PLD cannot resolve even at the most noise searched is said so, not searched.
    let most = DpSgd::with_sampling(
        sampling,
        sampling_rate,
        super::calibrate::MAX_NOISE_MULTIPLIER,
        steps,
    )?;
    composed_epsilon(&[PldMechanism::dpsgd(&most)], delta, interval)?;
    let epsilon_of = |sigma: f64| {
        let run = DpSgd::with_sampling(sampling, sampling_rate, sigma, steps)?;
        // The parameters are checked above: a σ the PLD cannot bound (too little noise for
        // its grid or its resolution) is one that does not meet the target.
        Ok(
            composed_epsilon(&[PldMechanism::dpsgd(&run)], delta, interval).unwrap_or(DpBound {
                epsilon: f64::INFINITY,
                delta,
                order: None,
            }),
        )
    };
    super::calibrate::smallest_noise_multiplier(epsilon_of, target_epsilon)
}

/// The minimiser of a unimodal `f` on [lo, hi] > 0, by golden-section search in ln λ, to
/// `tolerance` relative (any λ gives a valid bound; the search only makes it tight).
fn golden_section_min(f: impl Fn(f64) -> f64, lo: f64, hi: f64, tolerance: f64) -> f64 {
    let ratio = (5f64.sqrt() - 1.0) / 2.0;
    let (mut a, mut b) = (libm::log(lo), libm::log(hi));
    let mut c = b - ratio * (b - a);
    let mut d = a + ratio * (b - a);
    let (mut fc, mut fd) = (f(libm::exp(c)), f(libm::exp(d)));
    while b - a > tolerance {
        // NaN (an empty tail) compares false: the bracket moves towards larger λ.
        if fc < fd {
            b = d;
            (d, fd) = (c, fc);
            c = b - ratio * (b - a);
            fc = f(libm::exp(c));
        } else {
            a = c;
            (c, fc) = (d, fd);
            d = a + ratio * (b - a);
            fd = f(libm::exp(d));
        }
    }
    libm::exp(0.5 * (a + b))
}

/// Σ_i c_i·ρ^{n−1−i} over the n coefficients `c` (with `reversed`: Σ_i c_i·ρ^i), by Horner's
/// rule four terms a step: four independent products, where one chain of multiply-adds would
/// wait on each. A term c·ρ^j meets ρ⁴'s error (7 roundings: ρ's, ρ²'s and ρ⁴'s) and a product
/// and a sum per step of four, plus a few in its step: fewer than 2.25·n + 10 roundings of
/// relative u in all, within the 4(n + 2) that [`Pld::log_mgf`]'s callers allow.
fn horner(c: &[f64], rho: f64, reversed: bool) -> f64 {
    let (r2, r3) = (rho * rho, rho * rho * rho);
    let r4 = r2 * r2;
    let lead = c.len() % 4;
    if reversed {
        let (body, head) = c.split_at(c.len() - lead);
        let mut acc = head.iter().rev().fold(0.0, |acc, &m| acc * rho + m);
        for q in body.rchunks_exact(4) {
            acc = acc * r4 + (q[3] * r3 + q[2] * r2 + q[1] * rho + q[0]);
        }
        acc
    } else {
        let (head, body) = c.split_at(lead);
        let mut acc = head.iter().fold(0.0, |acc, &m| acc * rho + m);
        for q in body.chunks_exact(4) {
            acc = acc * r4 + (q[0] * r3 + q[1] * r2 + q[2] * rho + q[3]);
        }
        acc
    }
}

/// z^k by binary powering.
fn complex_power(z: Complex<f64>, mut k: u64) -> Complex<f64> {
    let (mut result, mut base) = (Complex::new(1.0, 0.0), z);
    while k > 0 {
        if k & 1 == 1 {
            result *= base;
        }
        k >>= 1;
        if k > 0 {
            base = base * base;
        }
    }
    result
}

/// The convolution of two mass vectors (by FFT where it is large), negatives of rounding set
/// to 0, and a bound on its l1 error from rounding.
///
/// Direct sums of non-negative terms err by at most (len + 1)·u relative each, u = 2⁻⁵³. For
/// the FFT, [`RealFft::error`] bounds a transform's error in the 2-norm (of the
/// Hermitian-extended spectrum, and of the inverse's output) by τ·‖X‖₂. The
/// transforms A, B of masses a, b have ‖A‖₂ = √N‖a‖₂ and |B_k| ≤ ‖b‖₁ ≤ 1, so the computed
/// product differs from A⊙B by at most τ√N(2‖a‖₂ + ‖b‖₂) + 2u√N‖a‖₂ in the 2-norm, and the
/// scaled inverse transform turns that into at most 3τ(‖a‖₂ + ‖b‖₂) (plus higher orders,
/// covered by rounding τ up) on the result; its l1 error is at most √n times that.
fn convolve(a: &[f64], b: &[f64]) -> (Vec<f64>, f64) {
    let n = a.len() + b.len() - 1;
    let u = f64::EPSILON / 2.0;
    if a.len().saturating_mul(b.len()) <= DIRECT_MAX {
        let mut out = vec![0.0; n];
        for (i, &x) in a.iter().enumerate() {
            for (j, &y) in b.iter().enumerate() {
                out[i + j] += x * y;
            }
        }
        let terms = a.len().min(b.len()) as f64;
        let total: f64 = out.iter().sum();
        return (out, (terms + 1.0) * u * total);
    }
    let size = n.next_power_of_two();
    let fft = RealFft::cached(size);
    let mut scratch = Vec::with_capacity(size / 2);
    let mut spectrum = |v: &[f64]| {
        let mut input = vec![0.0; size];
        input[..v.len()].copy_from_slice(v);
        let mut out = vec![Complex::new(0.0, 0.0); size / 2 + 1];
        fft.forward(&input, &mut out, &mut scratch);
        out
    };
    let fa = spectrum(a);
    // A squaring transforms its operand once.
    let product: Vec<_> = if std::ptr::eq(a, b) {
        fa.iter().map(|x| x * x).collect()
    } else {
        fa.iter().zip(&spectrum(b)).map(|(x, y)| x * y).collect()
    };
    let mut out = vec![0.0; size];
    fft.inverse(&product, &mut out, &mut scratch);
    let scale = 1.0 / size as f64;
    out.truncate(n);
    for v in &mut out {
        *v = (*v * scale).max(0.0);
    }
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    let tau = fft.error();
    let bound = 3.0 * tau * (norm(a) + norm(b)) * (n as f64).sqrt();
    (out, bound)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// k Gaussians of μ each are (√k·μ)-GDP exactly: the PLD's ε(δ) is at least the closed
    /// form's (pessimistic) and within the discretisation's error of it.
    #[test]
    fn composed_gaussians_match_the_closed_form() {
        for &(sigma, k) in &[(1.0, 1u64), (5.0, 10), (20.0, 100), (30.0, 1000)] {
            let one =
                Pld::connect_dots(&GaussianPair::new(1.0, sigma).unwrap(), 1e-4, 1e-22).unwrap();
            let many = one.self_compose(k).unwrap();
            let exact = GaussianPair::new((k as f64).sqrt(), sigma).unwrap();
            for &delta in &[1e-3, 1e-5, 1e-8] {
                let eps = many.epsilon(delta).unwrap();
                // The exact ε: bisect δ(ε) = delta on the closed form.
                let (mut lo, mut hi) = (0.0, 100.0);
                for _ in 0..200 {
                    let mid = 0.5 * (lo + hi);
                    if exact.delta(mid) > delta {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                assert!(
                    eps >= lo * (1.0 - 1e-9),
                    "σ={sigma} k={k} δ={delta}: {eps} < exact {lo}"
                );
                assert!(
                    eps <= hi * 1.002 + 1e-3,
                    "σ={sigma} k={k} δ={delta}: {eps} ≫ exact {hi}"
                );
            }
        }
    }

    /// Self-composition by repeated squaring and products (`compose`, which convolves two
    /// PLDs): the independent route the transform's power is checked against.
    fn by_squaring(p: &Pld, mut k: u64) -> Pld {
        let (mut result, mut power) = (None::<Pld>, p.clone());
        loop {
            if k & 1 == 1 {
                result = Some(match result {
                    Some(r) => r.compose(&power).unwrap(),
                    None => power.clone(),
                });
            }
            k >>= 1;
            if k == 0 {
                return result.unwrap();
            }
            power = power.compose(&power).unwrap();
        }
    }

    /// The pointwise power of one transform gives the δ(ε) and ε(δ) of repeated squaring
    /// (direct sums where the PLDs are small) as exact arithmetic would (each route's
    /// rounding allowance taken off; their tails' allowances differ by far less than the
    /// tolerance), keeps every bit of mass, and has a rounding allowance below 10⁻⁸.
    #[test]
    fn one_transform_power_matches_repeated_squaring() {
        let pairs: Vec<(&str, Box<dyn DominatingPair>, f64)> = vec![
            (
                "gaussian σ=2",
                Box::new(GaussianPair::new(1.0, 2.0).unwrap()),
                1e-3,
            ),
            (
                "poisson q=0.01 σ=1.1",
                Box::new(PoissonGaussianPair::new(0.01, 1.1, Direction::Remove).unwrap()),
                1e-4,
            ),
            (
                "poisson add q=0.05 σ=0.8",
                Box::new(PoissonGaussianPair::new(0.05, 0.8, Direction::Add).unwrap()),
                1e-3,
            ),
            (
                "laplace b=10",
                Box::new(LaplacePair::new(1.0, 10.0).unwrap()),
                1e-3,
            ),
            (
                "randomized response",
                Box::new(DiscretePair::randomized_response(0.3, 4).unwrap()),
                1e-3,
            ),
            (
                "(1, 1e-6)-DP",
                Box::new(DiscretePair::approximate_dp(1.0, 1e-6).unwrap()),
                1e-3,
            ),
        ];
        for (name, pair, h) in &pairs {
            let one = Pld::connect_dots(pair.as_ref(), *h, MECHANISM_TAIL).unwrap();
            for &k in &[2u64, 3, 10, 257, 1000] {
                let fast = one.self_compose(k).unwrap();
                let slow = by_squaring(&one, k);
                let kept: f64 = fast.masses.iter().sum::<f64>() + fast.infinity;
                assert!(
                    kept >= 1.0 - 1e-12,
                    "{name} k={k}: mass {kept} (infinity {})",
                    fast.infinity
                );
                for &e in &[0.0, 0.1, 0.5, 1.0, 2.0, 5.0] {
                    let (a, b) = (fast.delta(e) - fast.rounding, slow.delta(e) - slow.rounding);
                    assert!(
                        (a - b).abs() <= 1e-12 + 1e-7 * b,
                        "{name} k={k} ε={e}: {a} vs {b}"
                    );
                }
                // ε as exact arithmetic would give it (each route's rounding allowance is
                // added to δ).
                assert!(fast.rounding < 1e-8, "{name} k={k}: {}", fast.rounding);
                for &d in &[1e-3, 1e-6] {
                    match (
                        fast.epsilon(d + fast.rounding),
                        slow.epsilon(d + slow.rounding),
                    ) {
                        (Ok(a), Ok(b)) => assert!(
                            a == b || (a - b).abs() <= 1e-7 * b.max(1e-3),
                            "{name} k={k} δ={d}: {a} vs {b}"
                        ),
                        // No finite ε on either route: an infinite loss of mass ≥ δ.
                        (Err(_), Err(_)) => assert!(fast.infinity >= d, "{name} k={k}"),
                        (a, b) => panic!("{name} k={k} δ={d}: {a:?} vs {b:?}"),
                    }
                }
            }
        }
    }

    /// A run too long for the grid is refused by naming the interval, never by a panic.
    #[test]
    fn a_composition_outgrowing_the_grid_asks_for_a_coarser_interval() {
        let pair = PoissonGaussianPair::new(0.5, 0.3, Direction::Remove).unwrap();
        let one = Pld::connect_dots(&pair, 1e-4, MECHANISM_TAIL).unwrap();
        let e = one.self_compose(1 << 40).unwrap_err().to_string();
        assert!(
            e.contains("value_discretization_interval") && e.contains("coarser"),
            "{e}"
        );
    }

    /// One Gaussian's PLD gives back the δ(ε) it was built from at its grid points.
    #[test]
    fn the_dots_are_the_mechanisms_deltas() {
        let pair = GaussianPair::new(1.0, 2.0).unwrap();
        let pld = Pld::connect_dots(&pair, 1e-3, 1e-20).unwrap();
        for &e in &[0.0, 0.1, 0.5, 1.0, 2.0] {
            let (ours, theirs) = (pld.delta(e), pair.delta(e));
            assert!(
                (ours - theirs).abs() <= 1e-12 + 1e-9 * theirs,
                "ε={e}: {ours} vs {theirs}"
            );
        }
    }

    #[test]
    fn invalid_parameters_are_named() {
        let pair = GaussianPair::new(1.0, 1.0).unwrap();
        let e = Pld::connect_dots(&pair, 0.0, 1e-20)
            .unwrap_err()
            .to_string();
        assert!(e.contains("value_discretization_interval"), "{e}");
        let e = Pld::connect_dots(&pair, 1e-12, 1e-20)
            .unwrap_err()
            .to_string();
        assert!(e.contains("coarser"), "{e}");
        let pld = Pld::connect_dots(&pair, 1e-3, 1e-20).unwrap();
        assert!(pld.self_compose(0).is_err());
        assert!(pld.epsilon(0.0).is_err());
        assert!(GaussianPair::new(1.0, -1.0).is_err());
        assert!(PoissonGaussianPair::new(1.5, 1.0, Direction::Add).is_err());
    }
}
