//! Mechanisms described separately from how they are accounted: each struct validates its
//! parameters and hands out its RDP curve (the per-order formulas are in [`super::divergence`]).

use super::rdp::{ClosedForm, RdpCurve};
use super::subsampled_wor::{steps_for_epochs, WorSubsampledGaussian};
use crate::error::{Error, Range, Result};
use crate::numeric::{div_up, mul_down, mul_up};
use crate::rng::{bulk_stream, laplace, normal, ZIGGURAT};
use rand::RngCore;
use rayon::prelude::*;

/// Coordinates of DP-SGD noise per stream (and per parallel task): fixed, so the values never
/// depend on the thread count.
pub const NOISE_BLOCK: usize = 1024;

/// The Gaussian mechanism: N(g(x), σ²I) for a query g of ℓ2-sensitivity Δ.
/// It is (Δ²/2σ²)-zCDP and exactly (Δ/σ)-GDP.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gaussian {
    sensitivity: f64,
    sigma: f64,
}

impl Gaussian {
    pub fn new(sensitivity: f64, sigma: f64) -> Result<Self> {
        Ok(Gaussian {
            sensitivity: Range::Positive.check("sensitivity", sensitivity)?,
            sigma: Range::Positive.check("sigma", sigma)?,
        })
    }
    pub fn sensitivity(&self) -> f64 {
        self.sensitivity
    }
    pub fn sigma(&self) -> f64 {
        self.sigma
    }
    /// ρ = Δ²/(2σ²), rounded up (each operation towards +∞): never below the exact value, and
    /// never 0 (a ρ below every double is the smallest positive one, an upper bound).
    pub fn rho(&self) -> f64 {
        let z = self.mu();
        mul_up(0.5, mul_up(z, z))
    }
    /// μ = Δ/σ, rounded up.
    pub fn mu(&self) -> f64 {
        div_up(self.sensitivity, self.sigma)
    }
    pub fn rdp(&self) -> RdpCurve {
        RdpCurve::closed(ClosedForm::Zcdp { rho: self.rho() })
    }
    /// One draw of the mechanism's noise, N(0, σ²) (added to the query's value).
    pub fn noise<R: RngCore + ?Sized>(&self, rng: &mut R) -> f64 {
        self.sigma * normal(rng)
    }
}

/// The Laplace mechanism: g(x) + Lap(b) for a query of ℓ1-sensitivity Δ; pure (Δ/b)-DP.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Laplace {
    sensitivity: f64,
    scale: f64,
}

impl Laplace {
    pub fn new(sensitivity: f64, scale: f64) -> Result<Self> {
        Ok(Laplace {
            sensitivity: Range::Positive.check("sensitivity", sensitivity)?,
            scale: Range::Positive.check("scale", scale)?,
        })
    }
    /// The pure-DP parameter Δ/b, rounded up.
    pub fn epsilon(&self) -> f64 {
        div_up(self.sensitivity, self.scale)
    }
    /// The exact RDP curve (tighter than the generic pure-DP curve at every order).
    pub fn rdp(&self) -> RdpCurve {
        RdpCurve::closed(ClosedForm::Laplace {
            epsilon: self.epsilon(),
        })
    }
    pub fn scale(&self) -> f64 {
        self.scale
    }
    pub fn sensitivity(&self) -> f64 {
        self.sensitivity
    }
    /// One draw of the mechanism's noise, Lap(0, b) (added to the query's value).
    pub fn noise(&self, rng: &mut dyn RngCore) -> f64 {
        laplace(rng, self.scale)
    }
}

/// A score released with additive noise: the Gaussian or the Laplace mechanism.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AdditiveNoise {
    Gaussian(Gaussian),
    Laplace(Laplace),
}

impl AdditiveNoise {
    pub fn rdp(&self) -> RdpCurve {
        match self {
            AdditiveNoise::Gaussian(m) => m.rdp(),
            AdditiveNoise::Laplace(m) => m.rdp(),
        }
    }
    /// The pure-DP ε, for the Laplace mechanism.
    pub fn pure_epsilon(&self) -> Option<f64> {
        match self {
            AdditiveNoise::Gaussian(_) => None,
            AdditiveNoise::Laplace(m) => Some(m.epsilon()),
        }
    }
    pub fn noise(&self, rng: &mut dyn RngCore) -> f64 {
        match self {
            AdditiveNoise::Gaussian(m) => m.noise(rng),
            AdditiveNoise::Laplace(m) => m.noise(rng),
        }
    }
}

/// Binary randomized response: report the true bit with probability e^ε/(1+e^ε).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RandomizedResponse {
    epsilon: f64,
}

impl RandomizedResponse {
    pub fn new(epsilon: f64) -> Result<Self> {
        Ok(RandomizedResponse {
            epsilon: Range::NonNegative.check("epsilon", epsilon)?,
        })
    }
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }
    /// Probability of reporting the true bit.
    pub fn truth_probability(&self) -> f64 {
        1.0 / (1.0 + libm::exp(-self.epsilon))
    }
    pub fn rdp(&self) -> RdpCurve {
        RdpCurve::closed(ClosedForm::RandomizedResponse {
            epsilon: self.epsilon,
        })
    }
}

/// How DP-SGD draws each step's lot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum LotSampling {
    /// Each example independently with probability q; add/remove-one neighbours, noise
    /// multiplier relative to the clipping norm C (Mironov–Talwar–Zhang 2019).
    #[default]
    Poisson,
    /// A lot of exactly m = q·n examples drawn uniformly without replacement; replace-one
    /// neighbours, noise multiplier relative to the replace-one sensitivity 2C
    /// (Wang–Balle–Kasiviswanathan 2019, Thm. 9; [`super::subsampled_wor`]).
    WithoutReplacement,
}

impl LotSampling {
    /// `poisson` or `without-replacement`.
    pub fn name(self) -> &'static str {
        match self {
            LotSampling::Poisson => "poisson",
            LotSampling::WithoutReplacement => "without-replacement",
        }
    }
    /// The neighbouring relation the guarantee protects.
    pub fn protects(self) -> &'static str {
        match self {
            LotSampling::Poisson => "adding or removing one training example",
            LotSampling::WithoutReplacement => {
                "replacing one training example (data sets of the same size)"
            }
        }
    }
}

/// DP-SGD: `steps` steps of the subsampled Gaussian mechanism with sampling rate q and noise
/// multiplier σ, lots drawn by Poisson sampling (add/remove-one neighbours, noise std σ·C on the
/// sum of gradients clipped to norm C) or without replacement (replace-one neighbours, noise std
/// σ·2C, the replace-one sensitivity of that sum; spec 001 §3.2).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DpSgd {
    sampling: LotSampling,
    sampling_rate: f64,
    noise_multiplier: f64,
    steps: u64,
}

impl DpSgd {
    /// One step's noise: adds N(0, (z·C)²) to each coordinate of the clipped gradient sum,
    /// `noise_sd` = z·C (noise multiplier times clipping norm). Nothing is drawn for 0 (the
    /// non-private reference run).
    ///
    /// One word from `rng` keys the step; each fixed block of [`NOISE_BLOCK`] coordinates then
    /// draws from its own stream ([`bulk_stream`]: that key, the block's index) by the ziggurat
    /// ([`crate::rng::Ziggurat`]). So the blocks run in parallel and the values depend on
    /// neither the thread count nor the machine.
    pub fn add_noise<R: RngCore + ?Sized>(gradient_sum: &mut [f64], noise_sd: f64, rng: &mut R) {
        if noise_sd > 0.0 {
            let key = rng.next_u64();
            let ziggurat = &*ZIGGURAT;
            gradient_sum
                .par_chunks_mut(NOISE_BLOCK)
                .enumerate()
                .for_each(|(block, g)| {
                    let mut rng = bulk_stream(key, &[block as u64]);
                    let mut z = [0.0; 64];
                    for g in g.chunks_mut(64) {
                        // Drawn apart from the adds, so the sampler's loop stays in registers.
                        z.iter_mut()
                            .take(g.len())
                            .for_each(|z| *z = ziggurat.sample(&mut rng));
                        g.iter_mut().zip(&z).for_each(|(g, z)| *g += noise_sd * z);
                    }
                });
        }
    }

    /// Poisson sampling at rate q.
    pub fn new(sampling_rate: f64, noise_multiplier: f64, steps: u64) -> Result<Self> {
        Self::with_sampling(LotSampling::Poisson, sampling_rate, noise_multiplier, steps)
    }

    /// Either sampling: q in (0, 1], σ > 0, steps ≥ 1.
    pub fn with_sampling(
        sampling: LotSampling,
        sampling_rate: f64,
        noise_multiplier: f64,
        steps: u64,
    ) -> Result<Self> {
        if steps == 0 {
            return Err(Error::invalid("steps", 0, "an integer >= 1"));
        }
        Ok(DpSgd {
            sampling,
            sampling_rate: Range::UnitExcludingZero.check("sampling_rate", sampling_rate)?,
            noise_multiplier: Range::Positive.check("noise_multiplier", noise_multiplier)?,
            steps,
        })
    }

    /// Lots of m = `lot_size` drawn without replacement from n = `data_size` examples for
    /// `epochs` epochs: q = m/n and T·round(n/m) steps ([`steps_for_epochs`], spec 001 §3.2).
    pub fn without_replacement(
        data_size: u64,
        lot_size: u64,
        noise_multiplier: f64,
        epochs: u64,
    ) -> Result<Self> {
        let steps = steps_for_epochs(data_size, lot_size, epochs)?;
        let step = WorSubsampledGaussian::from_sizes(data_size, lot_size, noise_multiplier)?;
        Self::with_sampling(
            LotSampling::WithoutReplacement,
            step.sampling_rate(),
            noise_multiplier,
            steps,
        )
    }

    pub fn sampling(&self) -> LotSampling {
        self.sampling
    }
    pub fn sampling_rate(&self) -> f64 {
        self.sampling_rate
    }
    pub fn noise_multiplier(&self) -> f64 {
        self.noise_multiplier
    }
    pub fn steps(&self) -> u64 {
        self.steps
    }
    /// The RDP curve of all steps, evaluable at every order λ > 1 (without replacement:
    /// Theorem 9 at integer orders, the bounds of [`super::subsampled_wor`] between them).
    pub fn rdp(&self) -> RdpCurve {
        let one_step = if self.sampling_rate == 1.0 {
            // Full batch: the plain Gaussian mechanism with sensitivity 1 (ρ rounded up).
            ClosedForm::Zcdp {
                rho: mul_up(
                    0.5,
                    div_up(1.0, mul_down(self.noise_multiplier, self.noise_multiplier)),
                ),
            }
        } else {
            match self.sampling {
                LotSampling::Poisson => ClosedForm::SubsampledGaussian {
                    sampling_rate: self.sampling_rate,
                    noise_multiplier: self.noise_multiplier,
                },
                LotSampling::WithoutReplacement => ClosedForm::WorSubsampledGaussian {
                    sampling_rate: self.sampling_rate,
                    noise_multiplier: self.noise_multiplier,
                },
            }
        };
        RdpCurve::closed(one_step).self_compose(self.steps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constructors_reject_bad_parameters() {
        assert!(DpSgd::new(0.0, 1.0, 10).is_err());
        assert!(DpSgd::new(1.5, 1.0, 10).is_err());
        assert!(DpSgd::new(0.1, 0.0, 10).is_err());
        assert!(DpSgd::new(0.1, 1.0, 0).is_err());
        assert!(DpSgd::new(f64::NAN, 1.0, 1).is_err());
        let wor = LotSampling::WithoutReplacement;
        assert!(DpSgd::with_sampling(wor, 0.0, 1.0, 10).is_err());
        assert!(DpSgd::with_sampling(wor, 0.1, -1.0, 10).is_err());
        assert!(DpSgd::without_replacement(100, 101, 1.0, 1).is_err());
        assert!(DpSgd::without_replacement(100, 0, 1.0, 1).is_err());
        assert!(DpSgd::without_replacement(100, 10, 1.0, 0).is_err());
        assert!(DpSgd::without_replacement(100, 10, f64::INFINITY, 1).is_err());
        assert!(Gaussian::new(1.0, -1.0).is_err());
        assert!(Laplace::new(0.0, 1.0).is_err());
        assert!(RandomizedResponse::new(f64::INFINITY).is_err());
    }
}
