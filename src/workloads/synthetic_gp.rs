//! Synthetic objectives: Gaussian-process sample paths over [0, 1]^d drawn with random Fourier
//! features (spec 004 §4.2(a)): f(θ) = s·√(2/M)·Σ_m w_m cos(ω_m·θ + b_m) with ω_m from the
//! kernel's spectral density, b_m ~ U[0, 2π), w ~ N(0, I), so E[f(x)f(y)] = s²·k(x − y).
//! A "training run" releases f(h) plus calibrated noise with a known privacy curve.

use super::{
    GainPrior, Hyper, Oracle, PartitionedUtility, PrivateTraining, Space, ValidationGain, Variant,
    Workload, WorkloadSpec,
};
use crate::accounting::{AdditiveNoise, Event, Gaussian, Laplace};
use crate::error::{Error, Range, Result};
use crate::gp::KernelFamily;
use crate::params::{Count, OneOrMany};
use crate::rng::{normal, stream};
use rand::{Rng, RngCore};

/// A reproducible GP sample path on [0, 1]^d.
#[derive(Clone, Debug)]
pub struct GpObjective {
    dim: usize,
    omega: Vec<f64>, // features × dim, feature-major
    phase: Vec<f64>,
    weight: Vec<f64>,
    amplitude: f64, // s·√(2/M)
}

impl GpObjective {
    /// Draws the path for (`seed`, `index`) in a fixed order: ω (feature-major), b, w.
    pub fn sample(
        dim: usize,
        kernel: KernelFamily,
        lengthscale: f64,
        signal_sd: f64,
        features: usize,
        seed: u64,
        index: u64,
    ) -> Result<Self> {
        if !(1..=100).contains(&dim) {
            return Err(Error::invalid("dim", dim, "an integer in [1, 100]"));
        }
        if features == 0 {
            return Err(Error::invalid("features", 0, "an integer >= 1"));
        }
        let lengthscale = Range::Positive.check("lengthscale", lengthscale)?;
        let signal_sd = Range::Positive.check("signal_sd", signal_sd)?;
        let mut rng = stream(seed, &[0x6770, dim as u64, index]);
        let omega = (0..features)
            .flat_map(|_| kernel.frequency(dim, lengthscale, &mut rng))
            .collect();
        let phase = (0..features)
            .map(|_| std::f64::consts::TAU * rng.random::<f64>())
            .collect();
        let weight = (0..features).map(|_| normal(&mut rng)).collect();
        Ok(GpObjective {
            dim,
            omega,
            phase,
            weight,
            amplitude: signal_sd * (2.0 / features as f64).sqrt(),
        })
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    /// f(θ).
    pub fn eval(&self, theta: &[f64]) -> f64 {
        assert_eq!(theta.len(), self.dim, "point of the wrong dimension");
        let mut s = 0.0;
        for (m, (&b, &w)) in self.phase.iter().zip(&self.weight).enumerate() {
            let row = &self.omega[m * self.dim..(m + 1) * self.dim];
            let dot: f64 = row.iter().zip(theta).map(|(o, t)| o * t).sum();
            s += w * libm::cos(dot + b);
        }
        self.amplitude * s
    }
}

/// How a run's score is privatised.
#[derive(Clone, Debug, PartialEq)]
pub enum ScoreRelease {
    /// Gaussian noise σ on a score of sensitivity Δ: (Δ²/2σ²)-zCDP.
    Gaussian { sensitivity: f64, sigma: f64 },
    /// Laplace noise of scale b on a score of sensitivity Δ: pure (Δ/b)-DP.
    Laplace { sensitivity: f64, scale: f64 },
}

/// The synthetic tuning problem: a GP objective, a search space, and private training runs.
#[derive(Clone, Debug)]
pub struct SyntheticGp {
    objective: GpObjective,
    space: Space,
    mechanism: AdditiveNoise,
    run: Event,
    best: f64,
    gain: Option<GainPrior>,
    /// σ1 of the shard utilities (spec 003 §4.1 (i)); `None`: not offered.
    shard_sd: Option<f64>,
}

impl SyntheticGp {
    pub fn new(objective: GpObjective, space: Space, release: ScoreRelease) -> Result<Self> {
        if space.dim() != objective.dim() {
            return Err(Error::invalid(
                "space",
                space.dim(),
                format!("dimension {}", objective.dim()),
            ));
        }
        let mechanism = match release {
            ScoreRelease::Gaussian { sensitivity, sigma } => {
                AdditiveNoise::Gaussian(Gaussian::new(sensitivity, sigma)?)
            }
            ScoreRelease::Laplace { sensitivity, scale } => {
                AdditiveNoise::Laplace(Laplace::new(sensitivity, scale)?)
            }
        };
        let run = Event::of_noise(&mechanism);
        let best = match &space {
            Space::Finite(c) => c
                .iter()
                .map(|h| objective.eval(h))
                .fold(f64::NEG_INFINITY, f64::max),
            // Estimated by 4096 seeded uniform points (documented as approximate).
            Space::UnitBox { dim } => {
                let mut rng = stream(0x6265_7374, &[*dim as u64]);
                (0..4096)
                    .map(|_| {
                        objective.eval(&(0..*dim).map(|_| rng.random::<f64>()).collect::<Vec<_>>())
                    })
                    .fold(f64::NEG_INFINITY, f64::max)
            }
        };
        Ok(SyntheticGp {
            objective,
            space,
            run,
            mechanism,
            best,
            gain: None,
            shard_sd: None,
        })
    }

    /// Also offers shard utilities for propose-test tuning (a finite space only):
    /// a_ij = clip(f̃(x_j) + σ1·√k·ξ_ij, 0, 1) with f̃ = f rescaled to [0, 1] by its range over
    /// the candidates (the public grid is the reference) and ξ_ij ~ N(0, 1), so a shard's
    /// noise grows with k as a shard's data shrinks (spec 003 §4.1 (i)).
    pub fn with_shard_utilities(mut self, shard_sd: f64) -> Result<Self> {
        self.shard_sd = Some(Range::NonNegative.check("shard_sd", shard_sd)?);
        Ok(self)
    }

    /// Also offers noisy evaluations of the objective under the declared GP prior.
    pub fn with_gain_prior(mut self, prior: GainPrior) -> Result<Self> {
        Range::Positive.check("lengthscale", prior.lengthscale)?;
        Range::Positive.check("scale", prior.scale)?;
        Range::NonNegative.check("observation_sd", prior.noise_sd)?;
        if !(0.0..=1.0).contains(&prior.rho) {
            return Err(Error::invalid("rho", prior.rho, "a number in [0, 1]"));
        }
        self.gain = Some(prior);
        Ok(self)
    }

    pub fn objective(&self) -> &GpObjective {
        &self.objective
    }
}

impl PrivateTraining for SyntheticGp {
    fn run_event(&self) -> &Event {
        &self.run
    }
    fn train(&self, h: &Hyper, rng: &mut dyn RngCore) -> f64 {
        self.objective.eval(h) + self.mechanism.noise(rng)
    }
}

impl ValidationGain for SyntheticGp {
    fn prior(&self) -> &GainPrior {
        self.gain.as_ref().expect("offered only with a prior")
    }
    fn observe(&self, h: &Hyper, rng: &mut dyn RngCore) -> f64 {
        self.objective.eval(h) + self.prior().noise_sd * normal(rng)
    }
}

impl PartitionedUtility for SyntheticGp {
    /// On its own finite space (the list the tuner passes).
    fn shard_utilities(
        &self,
        _candidates: &[Hyper],
        k: usize,
        rng: &mut dyn RngCore,
    ) -> Result<Vec<Vec<f64>>> {
        let (Space::Finite(c), Some(sd)) = (&self.space, self.shard_sd) else {
            return Err(Error::missing_capability(
                "shard utilities",
                "a finite candidate grid (`candidates`)",
                self.name(),
            ));
        };
        let f: Vec<f64> = c.iter().map(|h| self.objective.eval(h)).collect();
        let lo = f.iter().copied().fold(f64::INFINITY, f64::min);
        let width = self.best - lo;
        let noise = sd * (k as f64).sqrt();
        Ok(f.iter()
            .map(|&v| {
                let scaled = if width > 0.0 { (v - lo) / width } else { 0.5 };
                (0..k)
                    .map(|_| (scaled + noise * normal(rng)).clamp(0.0, 1.0))
                    .collect()
            })
            .collect())
    }
    fn private_validation_records(&self) -> Option<usize> {
        None
    }
}

impl Oracle for SyntheticGp {
    fn utility(&self, h: &Hyper) -> f64 {
        self.objective.eval(h)
    }
    fn best_utility(&self) -> f64 {
        self.best
    }
}

impl Workload for SyntheticGp {
    fn name(&self) -> String {
        format!("synthetic-gp(d={})", self.objective.dim())
    }
    fn space(&self) -> &Space {
        &self.space
    }
    fn oracle(&self) -> &dyn Oracle {
        self
    }
    fn private_training(&self) -> Option<&dyn PrivateTraining> {
        Some(self)
    }
    fn validation_gain(&self) -> Option<&dyn ValidationGain> {
        self.gain.is_some().then_some(self as &dyn ValidationGain)
    }
    fn partitioned_utility(&self) -> Option<&dyn PartitionedUtility> {
        let finite = matches!(self.space, Space::Finite(_));
        (finite && self.shard_sd.is_some()).then_some(self as &dyn PartitionedUtility)
    }
}

/// The `synthetic-gp` experiment-file workload: one GP path per (dimension, repetition) and,
/// when `candidates` is given, a random grid of that many points (else the continuous box).
#[derive(Clone, Debug, PartialEq)]
pub struct SyntheticGpSpec {
    pub dims: Vec<usize>,
    pub kernel: KernelFamily,
    pub lengthscale: f64,
    pub signal_sd: f64,
    pub features: usize,
    pub candidates: Option<usize>,
    /// The release with its default noise (σ or the Laplace scale).
    pub release: ScoreRelease,
    pub noise_given: bool,
    /// The observation noise σ of validation-gain evaluations (private GP-UCB).
    pub observation_sd: f64,
    /// ρ = k1(V, V′) declared for GP-UCB; by default 1 − Δ²/(2s²), so that a neighbour's gain
    /// differs by a N(0, Δ²) draw at each point (Δ = `sensitivity`, s = `signal_sd`).
    pub rho: f64,
    /// σ1 of propose-test's shard utilities (spec 003 §4.1 (i)).
    pub shard_sd: f64,
}

/// A `[workload]` table of kind `synthetic-gp`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    dims: OneOrMany<Count>,
    kernel: Option<String>,
    lengthscale: Option<f64>,
    signal_sd: Option<f64>,
    features: Option<Count>,
    candidates: Option<Count>,
    release: Option<String>,
    sensitivity: Option<f64>,
    noise: Option<f64>,
    observation_sd: Option<f64>,
    rho: Option<f64>,
    shard_sd: Option<f64>,
}

/// Builds the spec from a `[workload]` table (kind = "synthetic-gp").
pub fn spec(params: &toml::Table) -> Result<Box<dyn WorkloadSpec>> {
    let p: Params = super::read("synthetic-gp", params)?;
    let dims = super::dims(Some(p.dims), &[])?;
    let kernel = KernelFamily::parse(p.kernel.as_deref().unwrap_or("rbf"))?;
    let lengthscale = Range::Positive.check("lengthscale", p.lengthscale.unwrap_or(0.2))?;
    let signal_sd = Range::Positive.check("signal_sd", p.signal_sd.unwrap_or(1.0))?;
    let features = match p.features {
        Some(Count(0)) => return Err(Error::invalid("features", 0, "an integer >= 1")),
        f => f.map_or(256, |f| f.0 as usize),
    };
    let candidates = match p.candidates {
        Some(Count(0)) => return Err(Error::invalid("candidates", 0, "an integer >= 1")),
        c => c.map(|c| c.0 as usize),
    };
    // The objective is evaluated at every candidate through every random feature.
    if let Some(c) =
        candidates.filter(|&c| (c as u64).saturating_mul(features as u64) > 100_000_000)
    {
        return Err(Error::invalid(
            "candidates",
            c,
            format!("at most 1e8 / features = {} with features = {features} (every candidate is evaluated through every feature)", 100_000_000 / features),
        ));
    }
    let sensitivity = Range::Positive.check("sensitivity", p.sensitivity.unwrap_or(1.0))?;
    let noise = p.noise;
    let n = Range::Positive.check("noise", noise.unwrap_or(1.0))?;
    let release = match p.release.as_deref().unwrap_or("gaussian") {
        "gaussian" => ScoreRelease::Gaussian {
            sensitivity,
            sigma: n,
        },
        "laplace" => ScoreRelease::Laplace {
            sensitivity,
            scale: n,
        },
        other => {
            return Err(Error::invalid(
                "release",
                other,
                "\"gaussian\" or \"laplace\"",
            ))
        }
    };
    let observation_sd =
        Range::NonNegative.check("observation_sd", p.observation_sd.unwrap_or(0.1))?;
    let rho = p
        .rho
        .unwrap_or(1.0 - sensitivity.powi(2) / (2.0 * signal_sd.powi(2)));
    if !(0.0..=1.0).contains(&rho) {
        return Err(Error::invalid(
            "rho",
            rho,
            "a number in [0, 1] (from rho, or from sensitivity <= signal_sd·√2)",
        ));
    }
    let shard_sd = Range::NonNegative.check("shard_sd", p.shard_sd.unwrap_or(0.02))?;
    Ok(Box::new(SyntheticGpSpec {
        dims,
        kernel,
        lengthscale,
        signal_sd,
        features,
        candidates,
        release,
        noise_given: noise.is_some(),
        observation_sd,
        rho,
        shard_sd,
    }))
}

impl ScoreRelease {
    /// The same release with noise σ (Gaussian) or scale b (Laplace) set to `noise`.
    pub fn with_noise(&self, noise: f64) -> Self {
        match *self {
            ScoreRelease::Gaussian { sensitivity, .. } => ScoreRelease::Gaussian {
                sensitivity,
                sigma: noise,
            },
            ScoreRelease::Laplace { sensitivity, .. } => ScoreRelease::Laplace {
                sensitivity,
                scale: noise,
            },
        }
    }

    pub fn noise(&self) -> f64 {
        match *self {
            ScoreRelease::Gaussian { sigma, .. } => sigma,
            ScoreRelease::Laplace { scale, .. } => scale,
        }
    }
}

impl WorkloadSpec for SyntheticGpSpec {
    fn kind(&self) -> &'static str {
        "synthetic-gp"
    }
    fn params(&self) -> String {
        let (release, sens) = match self.release {
            ScoreRelease::Gaussian { sensitivity, .. } => ("gaussian", sensitivity),
            ScoreRelease::Laplace { sensitivity, .. } => ("laplace", sensitivity),
        };
        format!(
            "kernel={:?}, lengthscale={}, signal_sd={}, features={}, candidates={}, release={release}, sensitivity={sens}, observation_sd={}, rho={}, shard_sd={}",
            self.kernel,
            self.lengthscale,
            self.signal_sd,
            self.features,
            self.candidates.map_or("box".to_string(), |c| c.to_string()),
            self.observation_sd,
            self.rho,
            self.shard_sd,
        )
    }
    fn variants(&self) -> Vec<Variant> {
        super::dim_variants(self.dims.iter().copied())
    }
    fn default_noise(&self) -> Option<f64> {
        self.noise_given.then(|| self.release.noise())
    }
    fn instance(
        &self,
        variant: usize,
        seed: u64,
        rep: u64,
        noise: f64,
    ) -> Result<Box<dyn Workload>> {
        let dim = super::variant_dim(&self.dims, variant)?;
        let objective = GpObjective::sample(
            dim,
            self.kernel,
            self.lengthscale,
            self.signal_sd,
            self.features,
            seed,
            rep,
        )?;
        let space = match self.candidates {
            Some(m) => {
                Space::random_grid(dim, m, &mut stream(seed, &[0x6772_6964, dim as u64, rep]))?
            }
            None => Space::UnitBox { dim },
        };
        let prior = GainPrior {
            kernel: self.kernel,
            lengthscale: self.lengthscale,
            scale: self.signal_sd,
            noise_sd: self.observation_sd,
            rho: self.rho,
        };
        Ok(Box::new(
            SyntheticGp::new(objective, space, self.release.with_noise(noise))?
                .with_gain_prior(prior)?
                .with_shard_utilities(self.shard_sd)?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFF is unbiased for the kernel: averaging f(x)f(y) over independent paths recovers
    /// s²·k(‖x − y‖/ℓ) (a check against the kernel formula itself).
    #[test]
    fn paths_have_the_kernel_covariance() {
        let (x, y) = ([0.2, 0.7], [0.5, 0.4]);
        let r = ((0.3f64).powi(2) * 2.0).sqrt() / 0.4;
        for kernel in [
            KernelFamily::Rbf,
            KernelFamily::Matern32,
            KernelFamily::Matern52,
        ] {
            let n = 4000;
            let (mut sxy, mut sxx) = (0.0, 0.0);
            let mut prods = Vec::with_capacity(n);
            for i in 0..n {
                let f = GpObjective::sample(2, kernel, 0.4, 1.5, 64, 11, i as u64).unwrap();
                let (a, b) = (f.eval(&x), f.eval(&y));
                sxy += a * b;
                sxx += a * a;
                prods.push(a * b);
            }
            let mean = sxy / n as f64;
            let sd = (prods.iter().map(|p| (p - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
            let want = 2.25 * kernel.value(r);
            assert!(
                (mean - want).abs() < 4.0 * sd / (n as f64).sqrt(),
                "{kernel:?}: {mean} vs {want}"
            );
            assert!(
                (sxx / n as f64 - 2.25).abs() < 0.15,
                "{kernel:?}: variance {}",
                sxx / n as f64
            );
        }
    }

    #[test]
    fn paths_are_reproducible_and_validated() {
        let a = GpObjective::sample(10, KernelFamily::Rbf, 0.3, 1.0, 256, 5, 0).unwrap();
        let b = GpObjective::sample(10, KernelFamily::Rbf, 0.3, 1.0, 256, 5, 0).unwrap();
        let c = GpObjective::sample(10, KernelFamily::Rbf, 0.3, 1.0, 256, 5, 1).unwrap();
        let p = vec![0.5; 10];
        assert_eq!(a.eval(&p), b.eval(&p));
        assert_ne!(a.eval(&p), c.eval(&p));
        assert!(GpObjective::sample(0, KernelFamily::Rbf, 0.3, 1.0, 8, 0, 0).is_err());
        assert!(GpObjective::sample(101, KernelFamily::Rbf, 0.3, 1.0, 8, 0, 0).is_err());
        assert!(GpObjective::sample(2, KernelFamily::Rbf, 0.0, 1.0, 8, 0, 0).is_err());
        assert!(KernelFamily::parse("cosine").is_err());
    }

    #[test]
    fn released_scores_carry_the_declared_noise() {
        let f = GpObjective::sample(1, KernelFamily::Rbf, 0.2, 1.0, 32, 3, 0).unwrap();
        let space = Space::Finite(vec![vec![0.5]]);
        let w = SyntheticGp::new(
            f.clone(),
            space.clone(),
            ScoreRelease::Gaussian {
                sensitivity: 1.0,
                sigma: 2.0,
            },
        )
        .unwrap();
        let mut rng = stream(1, &[]);
        let n = 100_000;
        let xs: Vec<f64> = (0..n)
            .map(|_| w.train(&vec![0.5], &mut rng) - f.eval(&[0.5]))
            .collect();
        let var = xs.iter().map(|x| x * x).sum::<f64>() / n as f64;
        assert!((var - 4.0).abs() < 0.1, "{var}");
        assert!((crate::workloads::run_curve(&w).eval(2.0).unwrap() - 2.0 * 0.125).abs() < 1e-15);
        let l = SyntheticGp::new(
            f,
            space,
            ScoreRelease::Laplace {
                sensitivity: 1.0,
                scale: 0.5,
            },
        )
        .unwrap();
        assert_eq!(l.run_event().pure_epsilon(), Some(2.0));
        let ys: Vec<f64> = (0..n)
            .map(|_| l.train(&vec![0.5], &mut rng) - l.objective().eval(&[0.5]))
            .collect();
        let var = ys.iter().map(|x| x * x).sum::<f64>() / n as f64;
        assert!(
            (var - 0.5).abs() < 0.02,
            "Laplace variance 2b² = 0.5, got {var}"
        );
    }
}
