//! DP-SGD (Abadi et al. 2016): minibatch SGD where each example's gradient is clipped to norm
//! ≤ C and the batch sum gets Gaussian noise N(0, σ²C²) per coordinate. With Poisson sampling
//! the released sums are the subsampled Gaussian mechanism that [`DpSgd`] accounts for.
//!
//! Randomness comes from the run's rng in a fixed order: the initial parameters, then per step
//! the batch (Poisson: [`poisson_subsample`], one uniform per chosen row plus one; Shuffle: at the start of each
//! epoch the rows 0..n shuffled by [`crate::data::shuffle`], our own Fisher–Yates), then the noise (one
//! key word, from which [`DpSgd::add_noise`] draws blocks of coordinates in parallel; none
//! when σ = 0). Examples are summed in
//! fixed chunks whose sums are added in chunk order, so results do not depend on the number
//! of threads.

use super::batched::BatchWork;
use super::dense::{axpy, clip_factor};
use super::model::{check_data, Model};
use crate::accounting::{steps_for_epochs, DpSgd, LotSampling, RdpCurve};
use crate::data::{poisson_subsample, shuffle, uniform_below};
use crate::error::{Error, Range, Result};
use ndarray::ArrayView2;
use rand::RngCore;
use rayon::prelude::*;

/// How each step's batch is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sampling {
    /// Each example independently with probability q = batch_size/n: what DP-SGD accounting
    /// assumes. The batch size varies; the sum is divided by its expectation q·n.
    Poisson,
    /// Each step a fresh lot of exactly `batch_size` = m examples, uniformly without
    /// replacement (spec 001 Alg. 3): replace-one neighbours, so the noise is σ·2C and the sum
    /// is divided by m; accounted by Wang–Balle–Kasiviswanathan 2019 Thm. 9. An epoch is
    /// round(n/m) steps.
    WithoutReplacement,
    /// Epochs of shuffled batches of `batch_size` (the last one of an epoch may be smaller):
    /// ordinary minibatch SGD, without a privacy guarantee here.
    Shuffle,
}

/// The update rule applied to each step's noisy mean gradient g (spec 001 Alg. 3–4).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Optimizer {
    /// θ ← θ − η·g.
    Sgd,
    /// Adam: m ← β1·m + (1 − β1)·g, v ← β2·v + (1 − β2)·g², θ ← θ − η·m̂/(√v̂ + κ) with the
    /// bias corrections m̂ = m/(1 − β1ᵗ), v̂ = v/(1 − β2ᵗ). Post-processing of the noisy g.
    Adam { beta1: f64, beta2: f64, kappa: f64 },
}

impl Optimizer {
    /// Adam with spec 001's constants: β1 = 0.9, β2 = 0.999, κ = 1e-8.
    pub const ADAM: Optimizer = Optimizer::Adam {
        beta1: 0.9,
        beta2: 0.999,
        kappa: 1e-8,
    };
}

/// How each step's clipped gradient sum is computed (the same sum either way, up to rounding).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Engine {
    /// A few matrix products per layer ([`super::batched`]) for models that are dense
    /// layers; one example at a time for any other model.
    #[default]
    Batched,
    /// One example at a time through [`Model::backward`]: the reference the batched engine
    /// is tested and benchmarked against.
    PerExample,
}

/// What a run does when a step leaves non-finite parameters (too large a learning rate).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnDivergence {
    /// The run is an [`Error::Numerical`]: the default, and what every caller written before
    /// spec 001's tasks relies on.
    #[default]
    Fail,
    /// The run stops and returns the parameters from before the step that overflowed (the
    /// initial parameters when it is the first step) with [`Trained::diverged`] set, so the
    /// model can still be scored (spec 001 "Divergence"; the DPareto release scores such runs
    /// too).
    ///
    /// The stop is decided from the parameters alone, which are post-processing of the noisy
    /// sums, so it costs no privacy. A non-finite *loss* at finite parameters does not stop the
    /// run: the loss reads the lot without noise, so stopping on it would make the output
    /// depend on the data beyond what the accountant covers. Where a non-finite loss matters
    /// (a softmax or ReLU overflow gives NaN gradients) the same step's parameters turn
    /// non-finite and the run stops with the same parameters; where it does not (a sigmoid or
    /// hinge output beyond f64's range still has a bounded gradient) the run goes on.
    Stop,
}

/// How long to train.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Length {
    Steps(u64),
    /// ⌈n/batch_size⌉ steps per epoch, with either sampling.
    Epochs(u64),
}

/// The settings of one DP-SGD run. `clip: None` and σ = 0 give plain minibatch SGD.
#[derive(Clone, Debug, PartialEq)]
pub struct DpSgdConfig {
    learning_rate: f64,
    batch_size: usize,
    length: Length,
    clip: Option<f64>,
    noise_multiplier: f64,
    sampling: Sampling,
    optimizer: Optimizer,
    engine: Engine,
    on_divergence: OnDivergence,
}

/// What a run returns.
#[derive(Clone, Debug, PartialEq)]
pub struct Trained {
    pub params: Vec<f64>,
    /// Per step: the batch's summed loss over the divisor used for its gradient, plus R(θ),
    /// before the step: an estimate of the objective. It reads the data without noise, so it is
    /// a diagnostic, not a private release. With [`OnDivergence::Stop`] a diverged run's last
    /// entry is the step that overflowed (not applied to `params`).
    pub loss_trace: Vec<f64>,
    /// The run stopped early on non-finite parameters ([`OnDivergence::Stop`]; always false
    /// with [`OnDivergence::Fail`], which returns an error instead).
    pub diverged: bool,
}

/// Examples per parallel task. Fixed (not per thread), so the summation order is too.
const CHUNK: usize = 32;
/// Chunks whose sums are held at once, to bound memory on large batches.
const WAVE: usize = 64;
/// Coordinates per task when chunk sums are added.
const REDUCE_BLOCK: usize = 4096;

impl DpSgdConfig {
    /// `learning_rate` > 0; `batch_size` ≥ 1 (the expected batch size under Poisson
    /// sampling); a length ≥ 1; `clip` > 0 or None; `noise_multiplier` σ ≥ 0, and σ > 0 only
    /// with a clipping norm (the noise has standard deviation σ·C).
    pub fn new(
        learning_rate: f64,
        batch_size: usize,
        length: Length,
        clip: Option<f64>,
        noise_multiplier: f64,
        sampling: Sampling,
    ) -> Result<Self> {
        let learning_rate = Range::Positive.check("learning_rate", learning_rate)?;
        if batch_size == 0 {
            return Err(Error::invalid("batch_size", 0, "an integer >= 1"));
        }
        match length {
            Length::Steps(0) => return Err(Error::invalid("steps", 0, "an integer >= 1")),
            Length::Epochs(0) => return Err(Error::invalid("epochs", 0, "an integer >= 1")),
            _ => {}
        }
        let clip = clip.map(|c| Range::Positive.check("clip", c)).transpose()?;
        let noise_multiplier = Range::NonNegative.check("noise_multiplier", noise_multiplier)?;
        if noise_multiplier > 0.0 && clip.is_none() {
            return Err(Error::invalid(
                "noise_multiplier",
                noise_multiplier,
                "0 when clip is None (the noise is σ·C for a clipping norm C)",
            ));
        }
        Ok(DpSgdConfig {
            learning_rate,
            batch_size,
            length,
            clip,
            noise_multiplier,
            sampling,
            optimizer: Optimizer::Sgd,
            engine: Engine::default(),
            on_divergence: OnDivergence::default(),
        })
    }

    /// The same settings with `optimizer`; Adam's β's must lie in [0, 1) and κ be > 0.
    pub fn with_optimizer(self, optimizer: Optimizer) -> Result<Self> {
        if let Optimizer::Adam {
            beta1,
            beta2,
            kappa,
        } = optimizer
        {
            for (name, b) in [("beta1", beta1), ("beta2", beta2)] {
                if !(0.0..1.0).contains(&b) {
                    return Err(Error::invalid(name, b, "a number in [0, 1)"));
                }
            }
            Range::Positive.check("kappa", kappa)?;
        }
        Ok(DpSgdConfig { optimizer, ..self })
    }

    /// The same settings computed by `engine`.
    pub fn with_engine(self, engine: Engine) -> Self {
        DpSgdConfig { engine, ..self }
    }

    /// The same settings with `on_divergence` (default [`OnDivergence::Fail`]).
    pub fn with_divergence(self, on_divergence: OnDivergence) -> Self {
        DpSgdConfig {
            on_divergence,
            ..self
        }
    }

    pub fn learning_rate(&self) -> f64 {
        self.learning_rate
    }
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }
    pub fn length(&self) -> Length {
        self.length
    }
    pub fn clip(&self) -> Option<f64> {
        self.clip
    }
    pub fn noise_multiplier(&self) -> f64 {
        self.noise_multiplier
    }
    pub fn sampling(&self) -> Sampling {
        self.sampling
    }
    pub fn optimizer(&self) -> Optimizer {
        self.optimizer
    }
    pub fn on_divergence(&self) -> OnDivergence {
        self.on_divergence
    }

    fn check_size(&self, n: usize) -> Result<()> {
        if n == 0 || self.batch_size > n {
            return Err(Error::invalid(
                "batch_size",
                self.batch_size,
                format!("an integer in [1, n] for n = {n} training examples"),
            ));
        }
        Ok(())
    }

    /// The number of steps on `n` training examples.
    pub fn steps(&self, n: usize) -> Result<u64> {
        self.check_size(n)?;
        Ok(match (self.length, self.sampling) {
            (Length::Steps(s), _) => s,
            // Spec 001's epoch of fixed-size lots: round(n/m) steps.
            (Length::Epochs(e), Sampling::WithoutReplacement) => {
                steps_for_epochs(n as u64, self.batch_size as u64, e)?
            }
            (Length::Epochs(e), _) => e.saturating_mul(n.div_ceil(self.batch_size) as u64),
        })
    }

    /// q = batch_size/n, the Poisson sampling rate.
    pub fn sampling_rate(&self, n: usize) -> Result<f64> {
        self.check_size(n)?;
        Ok(self.batch_size as f64 / n as f64)
    }

    /// The standard deviation of the noise added to each coordinate of a step's clipped sum: σ
    /// times the sum's sensitivity, C for add/remove-one neighbours (Poisson) and 2C for
    /// replace-one (fixed-size lots); 0 without clipping.
    pub fn noise_sd(&self) -> f64 {
        let sensitivity = match self.sampling {
            Sampling::WithoutReplacement => 2.0 * self.clip.unwrap_or(0.0),
            _ => self.clip.unwrap_or(0.0),
        };
        self.noise_multiplier * sensitivity
    }

    /// The mechanism of a whole run on `n` examples: `steps` subsampled Gaussian mechanisms
    /// with rate q and noise multiplier σ, under add/remove-one neighbours (Poisson) or
    /// replace-one neighbours (without replacement). The model's regulariser and
    /// initialisation are data-independent and cost nothing.
    pub fn mechanism(&self, n: usize) -> Result<DpSgd> {
        if self.clip.is_none() {
            return Err(Error::Infeasible(
                "DP-SGD without clipping (clip = None) has no privacy guarantee".into(),
            ));
        }
        if self.noise_multiplier == 0.0 {
            return Err(Error::Infeasible(
                "DP-SGD with noise_multiplier = 0 has no privacy guarantee".into(),
            ));
        }
        let lots = match self.sampling {
            Sampling::Poisson => LotSampling::Poisson,
            Sampling::WithoutReplacement => LotSampling::WithoutReplacement,
            Sampling::Shuffle => {
                return Err(Error::Infeasible(
                    "shuffled batches have no DP-SGD guarantee here: use Poisson or \
                     without-replacement sampling"
                        .into(),
                ))
            }
        };
        DpSgd::with_sampling(
            lots,
            self.sampling_rate(n)?,
            self.noise_multiplier,
            self.steps(n)?,
        )
    }

    /// The RDP curve of the run on n rows ([`Self::mechanism`]).
    pub fn privacy(&self, n: usize) -> Result<RdpCurve> {
        Ok(self.mechanism(n)?.rdp())
    }

    /// Trains `model` from `model.init(rng)` on the rows of `x` with class `labels`.
    pub fn train<M: Model + ?Sized>(
        &self,
        model: &M,
        x: ArrayView2<f64>,
        labels: &[usize],
        rng: &mut dyn RngCore,
    ) -> Result<Trained> {
        let init = model.init(rng);
        self.train_from(model, init, x, labels, rng)
    }

    /// Trains `model` from `params`. A run whose parameters overflow (too large a learning
    /// rate) is an error, never NaN parameters, or with [`OnDivergence::Stop`] a run that
    /// stops there and returns its last finite parameters.
    pub fn train_from<M: Model + ?Sized>(
        &self,
        model: &M,
        mut params: Vec<f64>,
        x: ArrayView2<f64>,
        labels: &[usize],
        rng: &mut dyn RngCore,
    ) -> Result<Trained> {
        let x = check_data(model, &params, x, labels)?;
        let x = x.as_slice().expect("standard layout");
        let stop = self.on_divergence == OnDivergence::Stop;
        if stop && params.iter().any(|v| !v.is_finite()) {
            return Err(Error::invalid(
                "params",
                "a non-finite initial value",
                "finite initial parameters",
            ));
        }
        // The parameters before the current step, kept only when a diverged run returns them.
        let mut before = if stop { params.clone() } else { Vec::new() };
        let mut diverged = false;
        let n = labels.len();
        let steps = self.steps(n)?;
        let noise_sd = self.noise_sd();
        let mut adam = AdamState::new(self.optimizer, params.len());
        let mut work = Workspace::new(model);
        // Dense-layer models take the batched engine; others go one example at a time.
        let network = match self.engine {
            Engine::Batched => model.network(),
            Engine::PerExample => None,
        };
        let mut batch_work = BatchWork::default();
        let mut grad = vec![0.0; model.n_params()];
        let mut lots = LotSampler::new(self, n)?;
        let mut loss_trace = Vec::with_capacity(steps.min(1 << 20) as usize);
        for step in 0..steps {
            let (batch, divisor) = lots.next(step, &mut *rng);
            let loss_sum = match &network {
                Some(net) => net.clipped_sum(
                    &params,
                    x,
                    labels,
                    batch,
                    self.clip,
                    &mut batch_work,
                    &mut grad,
                ),
                None => work.gradient_sum(model, &params, x, labels, batch, self.clip, &mut grad),
            };
            DpSgd::add_noise(&mut grad, noise_sd, rng);
            for g in grad.iter_mut() {
                *g /= divisor;
            }
            // R(θ) does not depend on the data: its exact gradient is added after the noise,
            // which is post-processing. Clipping it with the data term would bias it and spend
            // clipping norm on something that needs no privacy.
            model.add_regulariser_gradient(&params, &mut grad);
            loss_trace.push(loss_sum / divisor + model.regulariser(&params));
            if stop {
                before.copy_from_slice(&params);
            }
            match &mut adam {
                None => axpy(-self.learning_rate, &grad, &mut params),
                Some(state) => state.step(self.learning_rate, &grad, &mut params),
            }
            // Decided from the parameters alone, which are post-processing of the noisy sums,
            // so stopping reveals nothing more (the data losses are not private).
            if params.iter().any(|v| !v.is_finite()) {
                if stop {
                    std::mem::swap(&mut params, &mut before);
                    diverged = true;
                    break;
                }
                return Err(Error::Numerical(format!(
                    "DP-SGD diverged at step {step} (non-finite parameters): lower the \
                     learning_rate"
                )));
            }
        }
        Ok(Trained {
            params,
            loss_trace,
            diverged,
        })
    }
}

/// Draws each step's lot exactly as DP-SGD does, so every engine (the CPU's and the GPU's)
/// trains on the same lots from the same stream.
pub(crate) struct LotSampler {
    sampling: Sampling,
    n: usize,
    batch_size: usize,
    rate: f64,
    steps_per_epoch: u64,
    poisson_batch: Vec<usize>,
    order: Vec<usize>,
}

impl LotSampler {
    pub(crate) fn new(config: &DpSgdConfig, n: usize) -> Result<Self> {
        Ok(LotSampler {
            sampling: config.sampling,
            n,
            batch_size: config.batch_size,
            rate: config.sampling_rate(n)?,
            steps_per_epoch: n.div_ceil(config.batch_size) as u64,
            poisson_batch: Vec::with_capacity(n),
            order: Vec::with_capacity(n),
        })
    }

    /// Whether every lot is all n rows, drawn with nothing from the stream (Poisson at rate 1).
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn takes_every_row(&self) -> bool {
        self.sampling == Sampling::Poisson && self.rate >= 1.0
    }

    /// Step `step`'s lot (row indices) and the divisor of its gradient sum.
    pub(crate) fn next(&mut self, step: u64, rng: &mut dyn RngCore) -> (&[usize], f64) {
        let (n, b) = (self.n, self.batch_size);
        match self.sampling {
            Sampling::Poisson => {
                self.poisson_batch.clear();
                poisson_subsample(n, self.rate, &mut *rng, &mut self.poisson_batch);
                // The expected size, not the realised one: the realised size depends on
                // whether an example is present, the divisor must not.
                (&self.poisson_batch, b as f64)
            }
            Sampling::WithoutReplacement => {
                if self.order.len() != n {
                    self.order.clear();
                    self.order.extend(0..n);
                }
                // A partial Fisher–Yates: the first b places become a uniform b-subset
                // whatever order the array was left in.
                for j in 0..b {
                    let r = j + uniform_below(&mut *rng, (n - j) as u64) as usize;
                    self.order.swap(j, r);
                }
                (&self.order[..b], b as f64)
            }
            Sampling::Shuffle => {
                let k = (step % self.steps_per_epoch) as usize;
                if k == 0 {
                    self.order.clear();
                    self.order.extend(0..n);
                    shuffle(&mut self.order, &mut *rng);
                }
                let batch = &self.order[k * b..((k + 1) * b).min(n)];
                (batch, batch.len() as f64)
            }
        }
    }
}

/// Adam's moments and step count.
struct AdamState {
    beta1: f64,
    beta2: f64,
    kappa: f64,
    m: Vec<f64>,
    v: Vec<f64>,
    t: i32,
}

impl AdamState {
    fn new(optimizer: Optimizer, p: usize) -> Option<Self> {
        match optimizer {
            Optimizer::Sgd => None,
            Optimizer::Adam {
                beta1,
                beta2,
                kappa,
            } => Some(AdamState {
                beta1,
                beta2,
                kappa,
                m: vec![0.0; p],
                v: vec![0.0; p],
                t: 0,
            }),
        }
    }

    fn step(&mut self, learning_rate: f64, g: &[f64], params: &mut [f64]) {
        self.t = self.t.saturating_add(1);
        let c1 = 1.0 - self.beta1.powi(self.t);
        let c2 = 1.0 - self.beta2.powi(self.t);
        for (((w, &g), m), v) in params.iter_mut().zip(g).zip(&mut self.m).zip(&mut self.v) {
            *m = self.beta1 * *m + (1.0 - self.beta1) * g;
            *v = self.beta2 * *v + (1.0 - self.beta2) * g * g;
            *w -= learning_rate * (*m / c1) / ((*v / c2).sqrt() + self.kappa);
        }
    }
}

/// Adds the example's gradient, clipped to norm ≤ C when `clip` is Some(C), to `acc`; returns
/// its loss. This is what DP-SGD sums.
pub fn add_clipped_gradient<M: Model + ?Sized>(
    model: &M,
    params: &[f64],
    x: &[f64],
    label: usize,
    clip: Option<f64>,
    scratch: &mut [f64],
    acc: &mut [f64],
) -> f64 {
    let g = model.backward(params, x, label, scratch);
    let scale = clip.map_or(1.0, |c| clip_factor(g.norm_sq, c));
    model.add_gradient(x, scale, scratch, acc);
    g.loss
}

/// Buffers reused across steps: a gradient sum and a scratch per chunk, so no step allocates
/// once the largest batch has been seen.
struct Workspace {
    n_params: usize,
    scratch_len: usize,
    sums: Vec<f64>,
    scratch: Vec<f64>,
    losses: Vec<f64>,
}

impl Workspace {
    fn new<M: Model + ?Sized>(model: &M) -> Self {
        Workspace {
            n_params: model.n_params(),
            scratch_len: model.scratch_len().max(1),
            sums: Vec::new(),
            scratch: Vec::new(),
            losses: Vec::new(),
        }
    }

    /// Writes Σ_{i ∈ batch} clip(∇ℓᵢ) into `total` and returns Σ ℓᵢ.
    #[allow(clippy::too_many_arguments)]
    fn gradient_sum<M: Model + ?Sized>(
        &mut self,
        model: &M,
        params: &[f64],
        x: &[f64],
        labels: &[usize],
        batch: &[usize],
        clip: Option<f64>,
        total: &mut [f64],
    ) -> f64 {
        let (p, s, d) = (self.n_params, self.scratch_len, model.n_features());
        let chunks = batch.len().div_ceil(CHUNK).clamp(1, WAVE);
        if self.losses.len() < chunks {
            self.sums.resize(chunks * p, 0.0);
            self.scratch.resize(chunks * s, 0.0);
            self.losses.resize(chunks, 0.0);
        }
        total.fill(0.0);
        let mut loss = 0.0;
        for wave in batch.chunks(CHUNK * WAVE) {
            let chunks = wave.len().div_ceil(CHUNK);
            let sums = &mut self.sums[..chunks * p];
            sums.par_chunks_mut(p)
                .zip(self.scratch.par_chunks_mut(s))
                .zip(self.losses.par_iter_mut())
                .zip(wave.par_chunks(CHUNK))
                .for_each(|(((sum, scratch), loss), rows)| {
                    sum.fill(0.0);
                    *loss = rows
                        .iter()
                        .map(|&i| {
                            let row = &x[i * d..(i + 1) * d];
                            add_clipped_gradient(model, params, row, labels[i], clip, scratch, sum)
                        })
                        .sum();
                });
            let sums = &self.sums[..chunks * p];
            total
                .par_chunks_mut(REDUCE_BLOCK)
                .enumerate()
                .for_each(|(k, t)| {
                    let start = k * REDUCE_BLOCK;
                    for sum in sums.chunks_exact(p) {
                        axpy(1.0, &sum[start..start + t.len()], t);
                    }
                });
            loss += self.losses[..chunks].iter().sum::<f64>();
        }
        loss
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learn::model::{accuracy, ExampleGradient};
    use crate::learn::{Activation, LinearSvm, Logistic, Mlp, WeightPenalty};
    use crate::rng::{normal, stream};
    use ndarray::Array2;

    /// `n` points in `k` Gaussian blobs (sd 0.5) centred at 3·e_c in `d` ≥ k dimensions.
    fn blobs(n: usize, d: usize, k: usize, seed: u64) -> (Array2<f64>, Vec<usize>) {
        let mut rng = stream(seed, &[]);
        let labels: Vec<usize> = (0..n).map(|i| i % k).collect();
        let x = Array2::from_shape_fn((n, d), |(i, j)| {
            3.0 * f64::from(u8::from(j == labels[i])) + 0.5 * normal(&mut rng)
        });
        (x, labels)
    }

    fn norm(v: &[f64]) -> f64 {
        v.iter().map(|g| g * g).sum::<f64>().sqrt()
    }

    #[test]
    fn clipping_bounds_norms_and_keeps_small_gradients() {
        let model = Mlp::new(&[4, 6, 3], Activation::Tanh).unwrap();
        let mut rng = stream(4, &[]);
        let params: Vec<f64> = (0..model.n_params())
            .map(|_| 2.0 * normal(&mut rng))
            .collect();
        let (x, labels) = blobs(20, 4, 3, 5);
        let mut scratch = vec![0.0; model.scratch_len()];
        let (mut full, mut clipped) = (vec![0.0; params.len()], vec![0.0; params.len()]);
        let mut n_clipped = 0;
        for (row, &label) in x.rows().into_iter().zip(&labels) {
            let row = row.as_slice().unwrap();
            model.loss_grad(&params, row, label, &mut full, &mut scratch);
            let g = norm(&full);
            for c in [0.05 * g, 0.5 * g, 2.0 * g] {
                clipped.fill(0.0);
                add_clipped_gradient(
                    &model,
                    &params,
                    row,
                    label,
                    Some(c),
                    &mut scratch,
                    &mut clipped,
                );
                let scale = norm(&clipped) / g;
                assert!(norm(&clipped) <= c, "{} > {c}", norm(&clipped));
                if c > g {
                    assert_eq!(clipped, full, "a gradient shorter than C changed");
                } else {
                    n_clipped += 1;
                    assert!((scale - c / g).abs() < 1e-8, "scaled by {scale}, not C/‖g‖");
                    for (a, b) in clipped.iter().zip(&full) {
                        assert!((a - scale * b).abs() <= 1e-12 * g, "direction changed");
                    }
                }
            }
        }
        assert_eq!(n_clipped, 40);
    }

    /// A model whose gradients are all zero: a step moves the parameters by the noise alone.
    struct Flat(usize);

    impl Model for Flat {
        fn n_features(&self) -> usize {
            1
        }
        fn n_classes(&self) -> usize {
            2
        }
        fn n_params(&self) -> usize {
            self.0
        }
        fn scratch_len(&self) -> usize {
            0
        }
        fn init(&self, _rng: &mut dyn RngCore) -> Vec<f64> {
            vec![0.0; self.0]
        }
        fn backward(&self, _: &[f64], _: &[f64], _: usize, _: &mut [f64]) -> ExampleGradient {
            ExampleGradient {
                loss: 0.0,
                norm_sq: 0.0,
            }
        }
        fn add_gradient(&self, _: &[f64], _: f64, _: &[f64], _: &mut [f64]) {}
        fn predict(&self, _: &[f64], _: &[f64], _: &mut [f64]) -> usize {
            0
        }
    }

    #[test]
    fn noise_has_standard_deviation_sigma_times_clip() {
        let (p, n, b, lr, sigma, clip) = (40_000, 50, 10, 0.3, 0.7, 3.0);
        let x = Array2::zeros((n, 1));
        let labels = vec![0; n];
        let config = DpSgdConfig::new(
            lr,
            b,
            Length::Steps(1),
            Some(clip),
            sigma,
            Sampling::Poisson,
        )
        .unwrap();
        let out = config
            .train(&Flat(p), x.view(), &labels, &mut stream(6, &[]))
            .unwrap();
        // θ₁ = −lr·(noise)/b with noise ~ N(0, σ²C²) per coordinate.
        let noise: Vec<f64> = out.params.iter().map(|t| -t * b as f64 / lr).collect();
        let mean = noise.iter().sum::<f64>() / p as f64;
        let sd = (noise.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (p - 1) as f64).sqrt();
        // Standard errors: σC/√p ≈ 0.0105 for the mean, σC/√(2p) ≈ 0.0074 for the sd.
        assert!(mean.abs() < 0.042, "mean {mean}");
        assert!(
            (sd - sigma * clip).abs() < 0.03,
            "sd {sd}, want {}",
            sigma * clip
        );
        // Every coordinate got its own draw.
        let mut sorted = noise.clone();
        sorted.sort_by(f64::total_cmp);
        sorted.dedup();
        assert_eq!(sorted.len(), p);
    }

    /// Minibatch SGD written out directly, with `config`'s settings and the rng order the
    /// module documents: the reference for σ = 0 and no clipping.
    fn plain_sgd(
        model: &dyn Model,
        x: &Array2<f64>,
        labels: &[usize],
        config: &DpSgdConfig,
        seed: u64,
    ) -> Vec<f64> {
        let rng = &mut stream(seed, &[]);
        let (n, b, lr) = (labels.len(), config.batch_size(), config.learning_rate());
        let mut params = model.init(rng);
        let mut scratch = vec![0.0; model.scratch_len()];
        let mut g = vec![0.0; params.len()];
        let mut order: Vec<usize> = Vec::new();
        for step in 0..config.steps(n).unwrap() as usize {
            let batch: Vec<usize> = match config.sampling() {
                Sampling::Poisson => {
                    let mut batch = Vec::new();
                    poisson_subsample(n, b as f64 / n as f64, rng, &mut batch);
                    batch
                }
                Sampling::WithoutReplacement => {
                    if order.len() != n {
                        order = (0..n).collect();
                    }
                    for j in 0..b {
                        order.swap(j, j + uniform_below(rng, (n - j) as u64) as usize);
                    }
                    order[..b].to_vec()
                }
                Sampling::Shuffle => {
                    let k = step % n.div_ceil(b);
                    if k == 0 {
                        order = (0..n).collect();
                        shuffle(&mut order, rng);
                    }
                    order[k * b..((k + 1) * b).min(n)].to_vec()
                }
            };
            let divisor = match config.sampling() {
                Sampling::Poisson | Sampling::WithoutReplacement => b as f64,
                Sampling::Shuffle => batch.len() as f64,
            };
            let mut sum = vec![0.0; params.len()];
            for &i in &batch {
                let row = x.row(i).to_vec();
                model.loss_grad(&params, &row, labels[i], &mut g, &mut scratch);
                for (s, gi) in sum.iter_mut().zip(&g) {
                    *s += gi;
                }
            }
            let mut reg = vec![0.0; params.len()];
            model.add_regulariser_gradient(&params, &mut reg);
            for j in 0..params.len() {
                params[j] -= lr * (sum[j] / divisor + reg[j]);
            }
        }
        params
    }

    fn assert_close(a: &[f64], b: &[f64], tol: f64) {
        assert_eq!(a.len(), b.len());
        for (j, (x, y)) in a.iter().zip(b).enumerate() {
            assert!(
                (x - y).abs() <= tol * y.abs().max(1.0),
                "coordinate {j}: {x} vs {y}"
            );
        }
    }

    #[test]
    fn without_noise_or_clipping_it_is_plain_sgd() {
        let (x, labels) = blobs(150, 4, 3, 7);
        let binary: Vec<usize> = labels.iter().map(|&l| usize::from(l == 1)).collect();
        let mlp = Mlp::new(&[4, 8, 3], Activation::Relu).unwrap();
        let logistic = Logistic::new(4, 3).unwrap();
        let svm = LinearSvm::new(4, 3.0, WeightPenalty::SquaredNorm).unwrap();
        for sampling in [
            Sampling::Poisson,
            Sampling::WithoutReplacement,
            Sampling::Shuffle,
        ] {
            // 70 rows per batch: chunks of 32 and a short last batch per epoch (150 = 2·70 + 10).
            let config = DpSgdConfig::new(0.1, 70, Length::Steps(7), None, 0.0, sampling).unwrap();
            for (model, labels) in [
                (&mlp as &dyn Model, &labels),
                (&logistic, &labels),
                (&svm, &binary),
            ] {
                let ours = config
                    .train(model, x.view(), labels, &mut stream(8, &[]))
                    .unwrap();
                assert_eq!(ours.loss_trace.len(), 7);
                let want = plain_sgd(model, &x, labels, &config, 8);
                assert_close(&ours.params, &want, 1e-12);
            }
        }
    }

    #[test]
    fn results_do_not_depend_on_the_thread_count() {
        // 400 rows at q = 0.5 give batches of ~200: several chunks of 32 per step.
        let (x, labels) = blobs(400, 6, 3, 9);
        let model = Mlp::new(&[6, 16, 8, 3], Activation::Relu).unwrap();
        let config = DpSgdConfig::new(
            0.05,
            200,
            Length::Steps(5),
            Some(0.5),
            1.1,
            Sampling::Poisson,
        )
        .unwrap();
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| {
                config
                    .train(&model, x.view(), &labels, &mut stream(10, &[]))
                    .unwrap()
            })
        };
        let (one, four) = (run(1), run(4));
        let differing = |a: &[f64], b: &[f64]| {
            assert_eq!(a.len(), b.len());
            a.iter()
                .zip(b)
                .filter(|(x, y)| x.to_bits() != y.to_bits())
                .count()
        };
        assert_eq!(differing(&one.params, &four.params), 0, "parameters differ");
        assert_eq!(
            differing(&one.loss_trace, &four.loss_trace),
            0,
            "losses differ"
        );
        assert_ne!(
            one.params,
            model.init(&mut stream(10, &[])),
            "no step was taken"
        );
    }

    #[test]
    fn privacy_is_the_subsampled_gaussian_of_the_run() {
        let config = DpSgdConfig::new(
            0.1,
            64,
            Length::Epochs(3),
            Some(1.0),
            1.3,
            Sampling::Poisson,
        )
        .unwrap();
        let n = 1000;
        // ⌈1000/64⌉ = 16 steps per epoch.
        assert_eq!(config.steps(n).unwrap(), 48);
        let want = DpSgd::new(0.064, 1.3, 48).unwrap().rdp();
        let got = config.privacy(n).unwrap();
        assert_eq!(got, want);
        for order in [1.5, 2.0, 8.0, 32.0] {
            assert_eq!(got.eval(order), want.eval(order));
        }
        let fixed = DpSgdConfig::new(
            0.1,
            64,
            Length::Steps(100),
            Some(1.0),
            1.3,
            Sampling::Poisson,
        )
        .unwrap();
        assert_eq!(
            fixed.privacy(n).unwrap(),
            DpSgd::new(0.064, 1.3, 100).unwrap().rdp()
        );
    }

    #[test]
    fn lots_without_replacement_are_accounted_and_noised_for_replace_one() {
        // Epochs of round(n/m) steps (1000/64 = 15.6 → 16), the WBK accountant.
        let config =
            |sampling, length| DpSgdConfig::new(1.0, 64, length, Some(0.5), 1.3, sampling).unwrap();
        let wor = config(Sampling::WithoutReplacement, Length::Epochs(3));
        assert_eq!(wor.steps(1000).unwrap(), 48);
        assert_eq!(
            wor.privacy(1000).unwrap(),
            DpSgd::without_replacement(1000, 64, 1.3, 3).unwrap().rdp()
        );
        // Zero inputs: the data moves only the bias, so one step from θ = 0 leaves every
        // weight at −η·noise/m. Its sd is σ·2C without replacement and σ·C with Poisson.
        let d = 4000;
        let x = Array2::zeros((200, d));
        let labels: Vec<usize> = (0..200).map(|i| i % 2).collect();
        let svm = LinearSvm::new(d, 1.0, WeightPenalty::SquaredNorm).unwrap();
        let noise_sd = |sampling| {
            let t = config(sampling, Length::Steps(1))
                .train(&svm, x.view(), &labels, &mut stream(4, &[]))
                .unwrap();
            let w = &t.params[..d];
            (w.iter().map(|v| (v * 64.0).powi(2)).sum::<f64>() / d as f64).sqrt()
        };
        let (replace_one, add_remove) = (
            noise_sd(Sampling::WithoutReplacement),
            noise_sd(Sampling::Poisson),
        );
        assert!(
            (replace_one / (1.3 * 2.0 * 0.5) - 1.0).abs() < 0.05,
            "{replace_one}"
        );
        assert!(
            (add_remove / (1.3 * 0.5) - 1.0).abs() < 0.05,
            "{add_remove}"
        );
    }

    #[test]
    fn a_lot_of_every_example_is_full_batch_gradient_descent() {
        let (x, labels) = blobs(60, 3, 3, 2);
        let model = Logistic::new(3, 3).unwrap();
        let wor = DpSgdConfig::new(
            0.3,
            60,
            Length::Steps(4),
            None,
            0.0,
            Sampling::WithoutReplacement,
        )
        .unwrap()
        .train(&model, x.view(), &labels, &mut stream(1, &[]))
        .unwrap();
        // Gradient descent on the mean loss, written out.
        let mut params = vec![0.0; model.n_params()];
        let (mut g, mut scratch) = (vec![0.0; params.len()], vec![0.0; model.scratch_len()]);
        for _ in 0..4 {
            let mut mean = vec![0.0; params.len()];
            for (row, &y) in x.rows().into_iter().zip(&labels) {
                model.loss_grad(&params, row.as_slice().unwrap(), y, &mut g, &mut scratch);
                mean.iter_mut().zip(&g).for_each(|(m, v)| *m += v / 60.0);
            }
            params
                .iter_mut()
                .zip(&mean)
                .for_each(|(p, m)| *p -= 0.3 * m);
        }
        assert_close(&wor.params, &params, 1e-12);
    }

    #[test]
    fn dp_adam_takes_the_hand_computed_steps() {
        let (x, labels) = blobs(40, 3, 3, 6);
        let model = Logistic::new(3, 3).unwrap();
        let (lr, steps) = (0.05, 3);
        let trained = DpSgdConfig::new(
            lr,
            40,
            Length::Steps(steps),
            None,
            0.0,
            Sampling::WithoutReplacement,
        )
        .unwrap()
        .with_optimizer(Optimizer::ADAM)
        .unwrap()
        .train(&model, x.view(), &labels, &mut stream(1, &[]))
        .unwrap();
        // Adam (spec 001 Alg. 4) on the full-batch mean gradient, from θ = 0.
        let p = model.n_params();
        let (mut w, mut m, mut v) = (vec![0.0; p], vec![0.0; p], vec![0.0; p]);
        let (mut g, mut scratch) = (vec![0.0; p], vec![0.0; model.scratch_len()]);
        for t in 1..=steps as i32 {
            let mut mean = vec![0.0; p];
            for (row, &y) in x.rows().into_iter().zip(&labels) {
                model.loss_grad(&w, row.as_slice().unwrap(), y, &mut g, &mut scratch);
                mean.iter_mut().zip(&g).for_each(|(a, b)| *a += b / 40.0);
            }
            for j in 0..p {
                m[j] = 0.9 * m[j] + 0.1 * mean[j];
                v[j] = 0.999 * v[j] + 0.001 * mean[j] * mean[j];
                let (mh, vh) = (
                    m[j] / (1.0 - 0.9f64.powi(t)),
                    v[j] / (1.0 - 0.999f64.powi(t)),
                );
                w[j] -= lr * mh / (vh.sqrt() + 1e-8);
            }
            if t == 1 {
                // The first step is η·sign(g) wherever g is not tiny.
                for j in 0..p {
                    if mean[j].abs() > 1e-6 {
                        assert!((w[j] + lr * mean[j].signum()).abs() < 1e-6);
                    }
                }
            }
        }
        assert_close(&trained.params, &w, 1e-12);
        let bad = DpSgdConfig::new(0.1, 4, Length::Steps(1), None, 0.0, Sampling::Shuffle)
            .unwrap()
            .with_optimizer(Optimizer::Adam {
                beta1: 1.0,
                beta2: 0.9,
                kappa: 1e-8,
            });
        assert!(bad.unwrap_err().to_string().contains("beta1"));
    }

    #[test]
    fn runs_without_a_guarantee_say_so() {
        let no_clip = DpSgdConfig::new(0.1, 10, Length::Steps(5), None, 0.0, Sampling::Poisson);
        let no_noise =
            DpSgdConfig::new(0.1, 10, Length::Steps(5), Some(1.0), 0.0, Sampling::Poisson);
        let shuffled =
            DpSgdConfig::new(0.1, 10, Length::Steps(5), Some(1.0), 1.0, Sampling::Shuffle);
        for (config, words) in [
            (no_clip, "clip"),
            (no_noise, "noise_multiplier"),
            (shuffled, "Poisson"),
        ] {
            let msg = config.unwrap().privacy(100).unwrap_err().to_string();
            assert!(msg.contains(words), "{msg}");
        }
    }

    #[test]
    fn invalid_configs_name_the_parameter() {
        let cases = [
            (
                DpSgdConfig::new(0.0, 10, Length::Steps(5), None, 0.0, Sampling::Poisson),
                "learning_rate",
            ),
            (
                DpSgdConfig::new(f64::NAN, 10, Length::Steps(5), None, 0.0, Sampling::Poisson),
                "learning_rate",
            ),
            (
                DpSgdConfig::new(0.1, 0, Length::Steps(5), None, 0.0, Sampling::Poisson),
                "batch_size",
            ),
            (
                DpSgdConfig::new(0.1, 10, Length::Steps(0), None, 0.0, Sampling::Poisson),
                "steps",
            ),
            (
                DpSgdConfig::new(0.1, 10, Length::Epochs(0), None, 0.0, Sampling::Poisson),
                "epochs",
            ),
            (
                DpSgdConfig::new(0.1, 10, Length::Steps(5), Some(0.0), 0.0, Sampling::Poisson),
                "clip",
            ),
            (
                DpSgdConfig::new(
                    0.1,
                    10,
                    Length::Steps(5),
                    Some(1.0),
                    -1.0,
                    Sampling::Poisson,
                ),
                "noise_multiplier",
            ),
            (
                DpSgdConfig::new(0.1, 10, Length::Steps(5), None, 1.0, Sampling::Poisson),
                "noise_multiplier",
            ),
        ];
        for (result, name) in cases {
            let msg = result.unwrap_err().to_string();
            assert!(msg.starts_with(&format!("invalid {name} =")), "{msg}");
        }
        // Data-dependent checks happen when training.
        let config =
            DpSgdConfig::new(0.1, 10, Length::Steps(5), None, 0.0, Sampling::Poisson).unwrap();
        let model = Logistic::new(4, 3).unwrap();
        let (x, labels) = blobs(8, 4, 3, 1);
        let err = |x: ArrayView2<f64>, labels: &[usize]| {
            config
                .train(&model, x, labels, &mut stream(0, &[]))
                .unwrap_err()
                .to_string()
        };
        assert!(err(x.view(), &labels).starts_with("invalid batch_size"));
        let (x, mut labels) = blobs(20, 4, 3, 1);
        assert!(err(x.slice(ndarray::s![.., ..3]), &labels).starts_with("invalid x"));
        assert!(err(x.view(), &labels[1..]).starts_with("invalid labels"));
        labels[3] = 3;
        assert!(err(x.view(), &labels).contains("3 at row 3"));
    }

    #[test]
    fn overflow_is_an_error_not_nan() {
        let (x, labels) = blobs(40, 4, 3, 11);
        let model = Mlp::new(&[4, 8, 3], Activation::Relu).unwrap();
        let config =
            DpSgdConfig::new(1e300, 10, Length::Steps(20), None, 0.0, Sampling::Shuffle).unwrap();
        let msg = config
            .train(&model, x.view(), &labels, &mut stream(12, &[]))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("diverged"), "{msg}");
    }

    /// With `OnDivergence::Stop` the same overflowing run returns the parameters from before
    /// the step that overflowed: exactly those of the longest run that did not overflow.
    #[test]
    fn a_stopped_run_keeps_its_last_finite_parameters() {
        let (x, labels) = blobs(40, 4, 3, 11);
        let model = Mlp::new(&[4, 8, 3], Activation::Relu).unwrap();
        let config = |lr: f64, steps: u64| {
            DpSgdConfig::new(
                lr,
                10,
                Length::Steps(steps),
                Some(1.0),
                0.5,
                Sampling::WithoutReplacement,
            )
            .unwrap()
        };
        let run = |c: DpSgdConfig| c.train(&model, x.view(), &labels, &mut stream(12, &[]));
        let lr = 1e300;
        let stopped = run(config(lr, 20).with_divergence(OnDivergence::Stop)).unwrap();
        assert!(stopped.diverged);
        assert!(stopped.params.iter().all(|v| v.is_finite()));
        let taken = stopped.loss_trace.len() as u64;
        assert!((1..20).contains(&taken), "{taken} steps");
        // Identical to the default run cut one step short (the same draws up to there).
        let before = if taken == 1 {
            model.init(&mut stream(12, &[]))
        } else {
            let t = run(config(lr, taken - 1)).unwrap();
            assert!(!t.diverged);
            t.params
        };
        assert_eq!(stopped.params, before);
        assert!(run(config(lr, taken)).is_err());

        // A first step that overflows returns the initial parameters.
        let svm = LinearSvm::new(4, 1.0, WeightPenalty::None).unwrap();
        let first = DpSgdConfig::new(
            1e308,
            40,
            Length::Steps(5),
            Some(1.0),
            1e10,
            Sampling::Poisson,
        )
        .unwrap()
        .with_divergence(OnDivergence::Stop)
        .train(
            &svm,
            x.view(),
            &labels.iter().map(|&l| l % 2).collect::<Vec<_>>(),
            &mut stream(1, &[]),
        )
        .unwrap();
        assert!(first.diverged);
        assert_eq!(first.loss_trace.len(), 1);
        assert_eq!(first.params, vec![0.0; svm.n_params()]);

        // A run that never overflows is the same either way, bit for bit.
        let calm = run(config(0.1, 20)).unwrap();
        let calm_stop = run(config(0.1, 20).with_divergence(OnDivergence::Stop)).unwrap();
        assert!(!calm.diverged);
        assert_eq!(calm, calm_stop);
        // Non-finite initial parameters are refused rather than returned as "last finite".
        let mut bad = model.init(&mut stream(12, &[]));
        bad[0] = f64::NAN;
        let msg = config(0.1, 2)
            .with_divergence(OnDivergence::Stop)
            .train_from(&model, bad, x.view(), &labels, &mut stream(1, &[]))
            .unwrap_err()
            .to_string();
        assert!(msg.starts_with("invalid params"), "{msg}");
    }

    #[test]
    fn models_learn_separable_data() {
        let (x, labels) = blobs(300, 5, 3, 13);
        let (test_x, test_labels) = blobs(300, 5, 3, 14);
        let logistic = Logistic::new(5, 3).unwrap();
        let mlp = Mlp::new(&[5, 16, 3], Activation::Relu).unwrap();
        let sgd =
            DpSgdConfig::new(0.2, 30, Length::Epochs(10), None, 0.0, Sampling::Shuffle).unwrap();
        let private = DpSgdConfig::new(
            0.5,
            60,
            Length::Epochs(10),
            Some(1.0),
            1.0,
            Sampling::Poisson,
        )
        .unwrap();
        let score = |model: &dyn Model, config: &DpSgdConfig, seed| {
            let run = config
                .train(model, x.view(), &labels, &mut stream(seed, &[]))
                .unwrap();
            let first = run.loss_trace[0];
            let last = run.loss_trace[run.loss_trace.len() - 1];
            assert!(last < 0.5 * first, "objective {first} → {last}");
            accuracy(model, &run.params, test_x.view(), &test_labels).unwrap()
        };
        let at_start = accuracy(
            &mlp,
            &mlp.init(&mut stream(15, &[])),
            test_x.view(),
            &test_labels,
        )
        .unwrap();
        assert!(at_start < 0.8, "untrained accuracy {at_start}");
        for (name, acc) in [
            ("logistic SGD", score(&logistic, &sgd, 15)),
            ("logistic DP-SGD", score(&logistic, &private, 15)),
            ("MLP SGD", score(&mlp, &sgd, 15)),
            ("MLP DP-SGD", score(&mlp, &private, 15)),
        ] {
            assert!(acc >= 0.97, "{name}: accuracy {acc}");
        }
    }

    #[test]
    fn the_mlp_learns_xor_where_a_linear_model_cannot() {
        // Four blobs at (±2, ±2), labelled by whether the signs agree.
        let mut rng = stream(16, &[]);
        let n = 400;
        let mut x = Array2::zeros((n, 2));
        let mut labels = vec![0; n];
        for i in 0..n {
            let (a, b) = (i % 2, (i / 2) % 2);
            x[[i, 0]] = 4.0 * a as f64 - 2.0 + 0.4 * normal(&mut rng);
            x[[i, 1]] = 4.0 * b as f64 - 2.0 + 0.4 * normal(&mut rng);
            labels[i] = a ^ b;
        }
        let config =
            DpSgdConfig::new(0.1, 20, Length::Epochs(30), None, 0.0, Sampling::Shuffle).unwrap();
        let linear = Logistic::new(2, 2).unwrap();
        let mlp = Mlp::new(&[2, 16, 2], Activation::Tanh).unwrap();
        let acc = |model: &dyn Model| {
            let run = config
                .train(model, x.view(), &labels, &mut stream(17, &[]))
                .unwrap();
            accuracy(model, &run.params, x.view(), &labels).unwrap()
        };
        let (linear_acc, mlp_acc) = (acc(&linear), acc(&mlp));
        assert!(linear_acc < 0.8, "logistic regression on XOR: {linear_acc}");
        assert!(mlp_acc > 0.97, "MLP on XOR: {mlp_acc}");
    }

    #[test]
    fn the_svm_separates_the_fig1_clusters() {
        // Spec 000 Fig. 1 data D: 20 points per class around (7.86, 3.36) (class 0, y = −1) and
        // (6.42, 9.17) (class 1, y = +1), sd 1; the clusters are ~6 sd apart.
        let mut rng = stream(18, &[]);
        let centres = [[7.86, 3.36], [6.42, 9.17]];
        let labels: Vec<usize> = (0..40).map(|i| i % 2).collect();
        let x = Array2::from_shape_fn((40, 2), |(i, j)| centres[labels[i]][j] + normal(&mut rng));
        let svm = LinearSvm::new(2, 8.0, WeightPenalty::SquaredNorm).unwrap();
        let config =
            DpSgdConfig::new(0.01, 1, Length::Epochs(1000), None, 0.0, Sampling::Shuffle).unwrap();
        let run = config
            .train(&svm, x.view(), &labels, &mut stream(19, &[]))
            .unwrap();
        let acc = accuracy(&svm, &run.params, x.view(), &labels).unwrap();
        assert!(
            acc >= 0.95,
            "accuracy {acc}, params {:?}, trace end {:?}",
            run.params,
            &run.loss_trace[run.loss_trace.len() - 5..]
        );
    }
}
