//! Clipped-mean Gaussian releases: the mean of per-record (or per-user) values, each clipped to
//! a known range or ball, plus Gaussian noise scaled to the clipped mean's sensitivity.
//!
//! * [`ClippedMeanRelease`]: one score per validation record clipped to [lo, hi] (the real-data
//!   and per-user workloads' private training run).
//! * [`clipped_mean`], [`noise_std`], [`release_clipped_mean`]: per-user gradients clipped to an
//!   L2 ball and released with N(0, s²I) (DP-GIBO and DP-GD, spec 004).
//!
//! # Privacy model of the score release
//!
//! As in spec 002 §1.1 and §2.3, the training split is public and only the validation split is
//! protected. Neighbouring data sets have the same m validation records except one, whose value
//! is replaced (substitution; m is public). A training run at hyperparameter h trains on the
//! public split (deterministic, so it reveals nothing about the validation split), scores each
//! validation record, clips each score to a known range [lo, hi], and releases
//!
//! ```text
//! s̃(h) = (1/m)·Σ_i clip(score_i(h), lo, hi) + N(0, σ²),   σ = z·(hi − lo)/m.
//! ```
//!
//! Replacing one record moves the clipped mean by at most Δ = (hi − lo)/m, so one run is the
//! Gaussian mechanism with sensitivity Δ and noise σ = z·Δ: ρ-zCDP with ρ = Δ²/(2σ²) = 1/(2z²),
//! whatever h and the data. The noise multiplier z is the knob the tuning harness calibrates
//! (larger z, smaller ρ).

use crate::accounting::{Event, Gaussian, RdpCurve};
use crate::error::{Error, Range, Result};
use crate::rng::normal;
use ndarray::{Array1, ArrayView2};
use rand::RngCore;

/// The range [lo, hi] each per-record score is clipped to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScoreClip {
    lo: f64,
    hi: f64,
}

impl ScoreClip {
    /// The range [`lo`, `hi`]: finite, lo < hi. `name` is the parameter reported on error.
    pub fn new(name: &'static str, lo: f64, hi: f64) -> Result<Self> {
        if !(lo.is_finite() && hi.is_finite() && lo < hi) {
            return Err(Error::invalid(
                name,
                format!("[{lo}, {hi}]"),
                "a range [lo, hi] of finite numbers with lo < hi",
            ));
        }
        Ok(ScoreClip { lo, hi })
    }

    pub fn lo(&self) -> f64 {
        self.lo
    }

    pub fn hi(&self) -> f64 {
        self.hi
    }

    /// hi − lo.
    pub fn width(&self) -> f64 {
        self.hi - self.lo
    }

    /// The score clipped to [lo, hi]; NaN maps to lo, so every clipped score lies in the range
    /// and the sensitivity bound holds whatever a model predicts.
    pub fn apply(&self, score: f64) -> f64 {
        if score.is_nan() {
            self.lo
        } else {
            score.clamp(self.lo, self.hi)
        }
    }

    /// The mean of the clipped scores (0 for none), summed in order.
    pub fn mean(&self, scores: &[f64]) -> f64 {
        if scores.is_empty() {
            return 0.0;
        }
        scores.iter().map(|&s| self.apply(s)).sum::<f64>() / scores.len() as f64
    }
}

/// One run's release: the mean of m clipped scores plus N(0, σ²) with σ = z·(hi − lo)/m.
#[derive(Clone, Debug)]
pub struct ClippedMeanRelease {
    clip: ScoreClip,
    records: usize,
    noise_multiplier: f64,
    mechanism: Gaussian,
    curve: RdpCurve,
    event: Event,
}

impl ClippedMeanRelease {
    /// The release of a mean over `records` (m ≥ 1) validation records with noise multiplier
    /// z = `noise_multiplier` > 0.
    pub fn new(clip: ScoreClip, records: usize, noise_multiplier: f64) -> Result<Self> {
        if records == 0 {
            return Err(Error::invalid(
                "validation records",
                0,
                "at least 1 (a validation fraction that leaves records)",
            ));
        }
        let z = Range::Positive.check("noise", noise_multiplier)?;
        let sensitivity = clip.width() / records as f64;
        let mechanism = Gaussian::new(sensitivity, z * sensitivity)?;
        Ok(ClippedMeanRelease {
            clip,
            records,
            noise_multiplier: z,
            curve: mechanism.rdp(),
            event: Event::zcdp_of(&mechanism),
            mechanism,
        })
    }

    pub fn clip(&self) -> ScoreClip {
        self.clip
    }

    /// m.
    pub fn records(&self) -> usize {
        self.records
    }

    /// z.
    pub fn noise_multiplier(&self) -> f64 {
        self.noise_multiplier
    }

    /// Δ = (hi − lo)/m.
    pub fn sensitivity(&self) -> f64 {
        self.mechanism.sensitivity()
    }

    /// σ = z·Δ.
    pub fn sigma(&self) -> f64 {
        self.mechanism.sigma()
    }

    /// The RDP curve of one run: that of the Gaussian mechanism (Δ, σ), i.e. ρ = 1/(2z²).
    pub fn curve(&self) -> &RdpCurve {
        &self.curve
    }

    /// One release as a privacy event: its zCDP guarantee ρ = 1/(2z²) ([`Event::zcdp_of`]).
    pub fn event(&self) -> &Event {
        &self.event
    }

    /// The mean of `scores` (one per validation record) after clipping, without noise.
    pub fn clipped_mean(&self, scores: &[f64]) -> f64 {
        debug_assert_eq!(
            scores.len(),
            self.records,
            "one score per validation record"
        );
        self.clip.mean(scores)
    }

    /// `clipped_mean` (the noise-free clipped mean) plus one N(0, σ²) draw.
    pub fn release(&self, clipped_mean: f64, rng: &mut dyn RngCore) -> f64 {
        clipped_mean + self.sigma() * normal(rng)
    }
}

/// The Gaussian noise per coordinate, s = 2B√T/(nμ): each of T steps is then (μ/√T)-GDP for a
/// clipped mean of sensitivity 2B/n (replace-one neighbours). μ = ∞ gives 0.
pub fn noise_std(clip: f64, steps: usize, n_users: usize, mu: f64) -> f64 {
    if mu == f64::INFINITY {
        0.0
    } else {
        2.0 * clip * (steps as f64).sqrt() / (n_users as f64 * mu)
    }
}

/// The mean of the per-user gradients (rows of `gradients`, n × d) each projected on the L2
/// ball of radius `clip` (a zero gradient is left as is), and the fraction of users clipped.
/// Replacing one row moves the result by at most 2·clip/n.
pub fn clipped_mean(gradients: ArrayView2<f64>, clip: f64) -> (Array1<f64>, f64) {
    let n = gradients.nrows();
    let mut sum = Array1::zeros(gradients.ncols());
    let mut clipped = 0usize;
    for g in gradients.rows() {
        let norm = g.dot(&g).sqrt();
        let factor = if norm > clip {
            clipped += 1;
            clip / norm
        } else {
            1.0
        };
        sum.scaled_add(factor, &g);
    }
    let n = n.max(1) as f64;
    (sum / n, clipped as f64 / n)
}

/// One noisy release of a clipped-mean gradient, with what diagnostics need.
#[derive(Clone, Debug)]
pub struct GradientRelease {
    /// The clipped mean ḡ before noise (never released; diagnostics only).
    pub clipped_mean: Array1<f64>,
    /// The standard normal draws w (the noise is s·w).
    pub standard_noise: Array1<f64>,
    /// ḡ + s·w: what is released.
    pub released: Array1<f64>,
    /// The fraction of users whose gradient was clipped.
    pub frac_clipped: f64,
}

/// The clipped mean of the rows of `user_gradients` (clip radius `clip`) plus N(0, s² I) with
/// s = `noise_std`. The noise is drawn whatever s is (0 included), so runs at different μ share
/// their random numbers.
pub fn release_clipped_mean(
    user_gradients: ArrayView2<f64>,
    clip: f64,
    noise_std: f64,
    rng: &mut dyn RngCore,
) -> GradientRelease {
    let (g, frac_clipped) = clipped_mean(user_gradients, clip);
    let w: Array1<f64> = (0..g.len()).map(|_| normal(rng)).collect();
    GradientRelease {
        released: &g + &(&w * noise_std),
        clipped_mean: g,
        standard_noise: w,
        frac_clipped,
    }
}
