//! Privacy-loss distributions (PLD): a mechanism's privacy loss L = ln(P(x)/Q(x)), x ~ P, for
//! its dominating pair (P, Q), kept as masses on a grid of losses i·h plus the mass of an
//! infinite loss. Composition convolves the masses (by FFT), so k runs cost O(n log n · log k),
//! and δ(ε) = E_P[(1 − e^{ε−L})₊] (the hockey-stick divergence) is read off exactly.
//!
//! Discretisation by "connect the dots" (Doroshenko, Ghazi, Kamath, Kumar, Manurangsi, PETS
//! 2022): the grid PLD whose δ(ε) equals the mechanism's at every grid loss ε_i and is linear
//! in e^ε between them. δ is convex in e^ε, so that PLD's δ lies above the mechanism's
//! everywhere: it is pessimistic, and stays so under composition. Mass outside the losses
//! [ε_0, ε_n] that hold all but `tail` of P on each side is never dropped: below ε_0 it sits
//! at ε_0 (a larger loss), above ε_n it is part of the infinite loss δ(ε_n). Each composition
//! cuts the tails of mass below `TAIL` the same way.

use crate::error::{Error, Range, Result};
use crate::numeric::{log_ndtr, ndtr};
use realfft::RealFftPlanner;

/// The mass a composition may move into the infinite loss (its upper tail) or onto its
/// smallest kept loss (its lower tail), each side.
const TAIL: f64 = 1e-15;
/// The most grid points a PLD may hold (8 × 10⁷ doubles: 640 MB).
const MAX_POINTS: usize = 80_000_000;
/// Below this many multiply-adds a convolution is done directly.
const DIRECT_MAX: usize = 1 << 16;

/// A mechanism's dominating pair (P, Q), through what the discretisation needs of it.
pub trait DominatingPair {
    /// δ(ε) = sup_S P(S) − e^ε Q(S).
    fn delta(&self, epsilon: f64) -> f64;
    /// Losses [lo, hi] such that P puts at most `tail` on each side beyond them.
    fn loss_range(&self, tail: f64) -> (f64, f64);
}

/// The z with Φ(−z) ≤ `tail` (to within a part in 10⁶ above the smallest).
fn tail_z(tail: f64) -> f64 {
    let target = tail.ln();
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
        let b = (epsilon + log_ndtr(-mu / 2.0 - epsilon / mu)).exp();
        (a - b).max(0.0)
    }

    fn loss_range(&self, tail: f64) -> (f64, f64) {
        let (m, z) = (self.mu * self.mu / 2.0, tail_z(tail));
        (m - z * self.mu, m + z * self.mu)
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
            t + (self.q + (1.0 - self.q) * (-t).exp()).ln()
        } else {
            (1.0 - self.q + self.q * t.exp()).ln()
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
                let r = epsilon.exp() - 1.0 + q;
                if r <= 0.0 {
                    return (-epsilon.exp_m1()).max(0.0);
                }
                let x = s2 * (r / q).ln() + 0.5;
                (1.0 - q) * upper(x / s) + q * upper((x - 1.0) / s) - epsilon.exp() * upper(x / s)
            }
            Direction::Add => {
                // L(x) = −mixture loss ≤ −ln(1 − q): no x has a larger loss.
                let r = (-epsilon).exp() - 1.0 + q;
                if r <= 0.0 {
                    return 0.0;
                }
                let x = s2 * (r / q).ln() + 0.5;
                ndtr(x / s) - epsilon.exp() * ((1.0 - q) * ndtr(x / s) + q * ndtr((x - 1.0) / s))
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
}

/// A privacy-loss distribution on the grid of losses `(offset + i)·interval`.
#[derive(Clone, Debug, PartialEq)]
pub struct Pld {
    interval: f64,
    offset: i64,
    masses: Vec<f64>,
    /// The mass of an infinite loss (with every upper tail cut): a floor on δ.
    infinity: f64,
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
                    "a grid of at most {MAX_POINTS} losses over [{lo:.4}, {hi:.4}] (a coarser interval)"
                ),
            ));
        }
        let n = points as usize;
        let offset = i_lo as i64;
        let eps: Vec<f64> = (0..n).map(|i| (offset + i as i64) as f64 * h).collect();
        let deltas: Vec<f64> = eps.iter().map(|&e| pair.delta(e)).collect();
        if deltas.iter().any(|d| !d.is_finite()) {
            return Err(Error::Numerical(
                "a hockey-stick divergence is not finite".into(),
            ));
        }
        // δ is linear in e^ε between the dots: slope_i on [ε_i, ε_{i+1}], 0 past the last
        // (δ is the infinite mass there), and m_i = e^{ε_i}·(slope_i − slope_{i−1}).
        let mut slopes: Vec<f64> = (0..n - 1)
            .map(|i| (deltas[i + 1] - deltas[i]) / (eps[i + 1].exp() - eps[i].exp()))
            .collect();
        slopes.push(0.0);
        let mut masses = vec![0.0; n];
        for i in 1..n {
            // δ is convex in e^ε, so the slopes rise; a negative difference is rounding, and
            // zero mass there only raises δ.
            masses[i] = (eps[i].exp() * (slopes[i] - slopes[i - 1])).max(0.0);
        }
        let infinity = deltas[n - 1];
        let rest: f64 = masses[1..].iter().sum();
        masses[0] = (1.0 - infinity - rest).max(0.0);
        Ok(Pld {
            interval: h,
            offset,
            masses,
            infinity,
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
        let masses = convolve(&self.masses, &other.masses);
        let infinity = self.infinity + other.infinity - self.infinity * other.infinity;
        let mut out = Pld {
            interval: self.interval,
            offset: self.offset + other.offset,
            masses,
            infinity: infinity.min(1.0),
        };
        out.cut_tails();
        Ok(out)
    }

    /// `self` composed with itself `count` times (repeated squaring).
    pub fn self_compose(&self, count: u64) -> Result<Pld> {
        if count == 0 {
            return Err(Error::invalid("count", 0, "at least 1 composition"));
        }
        let (mut result, mut power, mut k) = (None::<Pld>, self.clone(), count);
        loop {
            if k & 1 == 1 {
                result = Some(match result {
                    Some(r) => r.compose(&power)?,
                    None => power.clone(),
                });
            }
            k >>= 1;
            if k == 0 {
                return Ok(result.expect("count ≥ 1"));
            }
            power = power.compose(&power)?;
        }
    }

    /// Moves a lower tail of mass ≤ TAIL onto the smallest loss kept (a larger loss) and an
    /// upper tail of mass ≤ TAIL into the infinite loss: nothing is dropped.
    fn cut_tails(&mut self) {
        let (mut low, mut first) = (0.0, 0);
        while first + 1 < self.masses.len() && low + self.masses[first] <= TAIL {
            low += self.masses[first];
            first += 1;
        }
        let (mut high, mut last) = (0.0, self.masses.len());
        while last > first + 1 && high + self.masses[last - 1] <= TAIL {
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

    /// δ(ε) = m_∞ + Σ_{ε_j > ε} m_j·(1 − e^{ε − ε_j}).
    pub fn delta(&self, epsilon: f64) -> f64 {
        let mut d = self.infinity;
        for (i, &m) in self.masses.iter().enumerate().rev() {
            let l = self.loss(i);
            if l <= epsilon {
                break;
            }
            d += m * -(epsilon - l).exp_m1();
        }
        d.min(1.0)
    }

    /// The smallest ε ≥ 0 with δ(ε) ≤ `delta`; an error where no finite ε has it (the
    /// infinite loss alone exceeds δ).
    pub fn epsilon(&self, delta: f64) -> Result<f64> {
        let delta = Range::OpenUnit.check("delta", delta)?;
        if self.infinity > delta {
            return Err(Error::Infeasible(format!(
                "no finite ε at δ = {delta}: the mass of an infinite loss is {:.3e}",
                self.infinity
            )));
        }
        // On [ε_{i−1}, ε_i): δ(ε) = A_i − e^ε·B_i with A_i = m_∞ + Σ_{j≥i} m_j and
        // B_i = Σ_{j≥i} m_j e^{−ε_j}. From the top down, the first i whose left end has
        // δ > the target holds the answer.
        let (mut a, mut b) = (self.infinity, 0.0);
        for i in (0..self.masses.len()).rev() {
            a += self.masses[i];
            b += self.masses[i] * (-self.loss(i)).exp();
            let left = if i == 0 {
                f64::NEG_INFINITY
            } else {
                self.loss(i - 1)
            };
            let at_left = if left == f64::NEG_INFINITY {
                a
            } else {
                a - left.exp() * b
            };
            if at_left > delta {
                let eps = ((a - delta) / b).ln();
                return Ok(eps.max(0.0));
            }
        }
        Ok(0.0)
    }

    /// The grid's number of losses.
    pub fn len(&self) -> usize {
        self.masses.len()
    }

    pub fn is_empty(&self) -> bool {
        self.masses.is_empty()
    }
}

/// The convolution of two mass vectors (by FFT where it is large), negatives of rounding set
/// to 0.
fn convolve(a: &[f64], b: &[f64]) -> Vec<f64> {
    let n = a.len() + b.len() - 1;
    if a.len().saturating_mul(b.len()) <= DIRECT_MAX {
        let mut out = vec![0.0; n];
        for (i, &x) in a.iter().enumerate() {
            for (j, &y) in b.iter().enumerate() {
                out[i + j] += x * y;
            }
        }
        return out;
    }
    let size = n.next_power_of_two();
    let mut planner = RealFftPlanner::<f64>::new();
    let forward = planner.plan_fft_forward(size);
    let inverse = planner.plan_fft_inverse(size);
    let spectrum = |v: &[f64]| {
        let mut input = vec![0.0; size];
        input[..v.len()].copy_from_slice(v);
        let mut out = forward.make_output_vec();
        forward
            .process(&mut input, &mut out)
            .expect("buffers of the planned size");
        out
    };
    let (fa, fb) = (spectrum(a), spectrum(b));
    let mut product: Vec<_> = fa.iter().zip(&fb).map(|(x, y)| x * y).collect();
    let mut out = inverse.make_output_vec();
    inverse
        .process(&mut product, &mut out)
        .expect("buffers of the planned size");
    let scale = 1.0 / size as f64;
    out.truncate(n);
    for v in &mut out {
        *v = (*v * scale).max(0.0);
    }
    out
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
