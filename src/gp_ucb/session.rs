//! GP-UCB over a finite grid as an ask/tell session (issue 39): private GP-UCB (Algorithms 1
//! and 2 of Kusner et al.) and Algorithm 3's BO ([`crate::tuners::lipschitz_gain`]). Each step
//! asks for the gain at the grid point of largest UCB; after T steps the release is drawn
//! (the exponential mechanism on μ_T, Laplace noise on a gain). The state is the grid, the
//! observations and the release: the posterior is a cache, rebuilt from the observations in
//! their order when a saved session resumes (the same additions, so the same numbers).

use super::GpUcb;
use super::{first_argmax, Run, Search, Step};
use crate::accounting::exponential::{exp_mech_log_weights, sample_log_weights};
use crate::accounting::Laplace;
use crate::error::{Error, Result};
use crate::gp::KernelFamily;
use crate::session::Outcome;
use crate::session::{unfinished, Evaluation, Evaluator, Next, Progress, Session, Told};
use crate::workloads::{GainPrior, Hyper, RegularisedGain, ValidationGain};
use rand::RngCore;
use serde::{Deserialize, Serialize};

/// Which algorithm a session runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Algorithm {
    /// Private GP-UCB under the workload's GP prior of the validation gain.
    GpUcb { tuner: GpUcb, prior: GainPrior },
    /// Algorithm 3: GP-UCB with a public kernel on the position of ln λ, exact gains, the best
    /// released with Laplace noise of `laplace_scale`.
    Lipschitz {
        tuner: LipschitzBo,
        laplace_scale: f64,
    },
}

/// What Algorithm 3's BO takes from its tuner's parameters
/// ([`crate::tuners::lipschitz_gain::LipschitzGain`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LipschitzBo {
    /// T, the number of exact evaluations.
    pub evaluations: u64,
    /// Lengthscale of the public RBF kernel on the ln λ position in [0, 1].
    pub lengthscale: f64,
    /// The fixed UCB width β.
    pub beta: f64,
}

/// What a finished run released, with what it rests on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct End {
    gamma: Option<f64>,
    final_mean: Vec<f64>,
    argmax_mean: usize,
    chosen: Option<usize>,
    gain: f64,
    released_gain: Option<f64>,
}

/// A GP-UCB run over a finite grid as a state machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UcbSession {
    algorithm: Algorithm,
    grid: Vec<Hyper>,
    /// Each step and the value it observed (gain units).
    steps: Vec<(Step, f64)>,
    /// The step asked for and not yet told.
    asked: Option<Step>,
    end: Option<End>,
    progress: Progress,
    /// The posterior after the observations (a cache: rebuilt from them on resuming).
    #[serde(skip)]
    search: Cache,
}

/// The posterior as a cache: a function of the state, so it neither compares nor prints.
#[derive(Clone, Default)]
struct Cache(Option<Search>);

impl PartialEq for Cache {
    fn eq(&self, _: &Cache) -> bool {
        true
    }
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "built"
        } else {
            "not built"
        })
    }
}

impl UcbSession {
    /// Private GP-UCB on `grid` under `prior` (checked: the release must be defined for it).
    pub fn gp_ucb(tuner: GpUcb, prior: GainPrior, grid: Vec<Hyper>) -> Result<Self> {
        let config = tuner.config(&prior, grid.len())?;
        tuner.check_gain_release(&config)?;
        Ok(Self::new(Algorithm::GpUcb { tuner, prior }, grid))
    }

    /// Algorithm 3's BO on the grid of λ, its release Laplace noise of `laplace_scale`.
    pub fn lipschitz(tuner: LipschitzBo, laplace_scale: f64, grid: Vec<Hyper>) -> Self {
        Self::new(
            Algorithm::Lipschitz {
                tuner,
                laplace_scale,
            },
            grid,
        )
    }

    fn new(algorithm: Algorithm, grid: Vec<Hyper>) -> Self {
        UcbSession {
            algorithm,
            grid,
            steps: Vec::new(),
            asked: None,
            end: None,
            progress: Progress::default(),
            search: Cache::default(),
        }
    }

    fn evaluations(&self) -> u64 {
        match &self.algorithm {
            Algorithm::GpUcb { tuner, .. } => tuner.evaluations,
            Algorithm::Lipschitz { tuner, .. } => tuner.evaluations,
        }
    }

    /// The observation as the GP sees it (standard units under a declared prior).
    fn standard(&self, value: f64) -> f64 {
        match &self.algorithm {
            Algorithm::GpUcb { prior, .. } => value / prior.scale,
            Algorithm::Lipschitz { .. } => value,
        }
    }

    /// The posterior after every observation so far (built on first use).
    fn search(&mut self) -> Result<&mut Search> {
        if self.search.0.is_none() {
            let mut search = match &self.algorithm {
                Algorithm::GpUcb { tuner, prior } => {
                    let sigma = tuner.config(prior, self.grid.len())?.sigma();
                    Search::new(prior.kernel, prior.lengthscale, &self.grid, sigma * sigma)?
                }
                Algorithm::Lipschitz { tuner, .. } => Search::new(
                    KernelFamily::Rbf,
                    tuner.lengthscale,
                    &log_positions(&self.grid),
                    0.0,
                )?,
            };
            for (step, v) in &self.steps {
                search.observe(step.index, self.standard(*v))?;
            }
            self.search.0 = Some(search);
        }
        Ok(self.search.0.as_mut().expect("just built"))
    }

    /// UCB's width at step t (1-based).
    fn beta(&self, t: u64) -> Result<f64> {
        match &self.algorithm {
            Algorithm::GpUcb { tuner, prior } => tuner.config(prior, self.grid.len())?.beta(t),
            Algorithm::Lipschitz { tuner, .. } => Ok(tuner.beta),
        }
    }

    /// Draws the release after the last observation.
    fn release(&mut self, rng: &mut dyn RngCore) -> Result<End> {
        let values: Vec<f64> = self.steps.iter().map(|s| s.1).collect();
        let best = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let algorithm = self.algorithm.clone();
        let (tuner, prior) = match algorithm {
            Algorithm::Lipschitz { laplace_scale, .. } => {
                // Δ_f > 0 always (its fixed term g*/m or L/(mλ_min) is positive), so the
                // scale is too.
                let released = best + Laplace::new(1.0, laplace_scale)?.noise(rng);
                return Ok(End {
                    gamma: None,
                    final_mean: Vec::new(),
                    argmax_mean: 0,
                    chosen: None,
                    gain: best,
                    released_gain: Some(released),
                });
            }
            Algorithm::GpUcb { tuner, prior } => (tuner, prior),
        };
        let config = tuner.config(&prior, self.grid.len())?;
        let sigma = config.sigma();
        let search = self.search()?;
        let (final_mean, _) = search.posterior_on_grid()?;
        let argmax_mean = first_argmax(&final_mean);
        let chosen = if tuner.release.hyperparameter() {
            let log_w = exp_mech_log_weights(&final_mean, config.epsilon(), config.delta_lambda())?;
            Some(sample_log_weights(&log_w, rng))
        } else {
            None
        };
        // The gain behind Algorithm 1 (b) is the best observation; Algorithm 2's is the last
        // (or, offered as `noise_free_gain = "best"`, the best: same sensitivity bound, §2.2).
        let last = *values
            .last()
            .ok_or_else(|| Error::invalid("evaluations", 0, "an integer >= 1"))?;
        let (gain, gamma, noise_scale) = match (tuner.release.gain(), tuner.noise_free) {
            (false, _) => (best, None, None),
            (true, None) => {
                let gamma = match tuner.gamma {
                    Some(g) => g,
                    None => search.greedy_gamma_bound(sigma * sigma, tuner.evaluations)?,
                };
                (best, Some(gamma), Some(config.laplace_scale_v(gamma)?))
            }
            (true, Some(nf)) => (
                if nf.best { best } else { last },
                None,
                Some(config.noise_free_scale(nf.a, nf.tau, search.dim())?),
            ),
        };
        // Noise in standard units, scaled back to gain units (P5): Lap(b) for a
        // unit-sensitivity query in standard units (the scale's ε is b⁻¹).
        let released_gain = match noise_scale {
            Some(b) => Some(gain + prior.scale * Laplace::new(1.0, b)?.noise(rng)),
            None => None,
        };
        Ok(End {
            gamma,
            final_mean,
            argmax_mean,
            chosen,
            gain,
            released_gain,
        })
    }

    /// Everything a finished private GP-UCB run did (for the spec 002 studies).
    pub fn run(&self) -> Result<Run> {
        let (Algorithm::GpUcb { tuner, prior }, Some(end)) = (&self.algorithm, &self.end) else {
            return Err(Error::Infeasible(
                "the GP-UCB run is not over: ask until it says it is done".into(),
            ));
        };
        Ok(Run {
            config: tuner.config(prior, self.grid.len())?,
            gamma: end.gamma,
            steps: self.steps.iter().map(|s| s.0.clone()).collect(),
            values: self.steps.iter().map(|s| s.1).collect(),
            final_mean: end.final_mean.clone(),
            argmax_mean: end.argmax_mean,
            chosen: end.chosen,
            gain: end.gain,
            released_gain: end.released_gain,
        })
    }

    /// The best observed gain f_BO (Algorithm 3's, before noise), once the run is over.
    pub fn best_observed(&self) -> Option<f64> {
        self.end.as_ref().map(|e| e.gain)
    }
}

/// Algorithm 3's public inputs: the position of ln λ in [0, 1].
pub(crate) fn log_positions(grid: &[Hyper]) -> Vec<Hyper> {
    let logs: Vec<f64> = grid.iter().map(|h| libm::log(h[0])).collect();
    let (lo, hi) = logs
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
            (a.min(x), b.max(x))
        });
    let width = if hi > lo { hi - lo } else { 1.0 };
    logs.iter().map(|l| vec![(l - lo) / width]).collect()
}

impl crate::session::SessionKind for UcbSession {
    /// Private GP-UCB or Algorithm 3's BO over a grid.
    const KIND: &'static str = "ucb";
    /// T, the number of evaluations.
    fn planned_runs(&self) -> Option<u64> {
        Some(self.evaluations())
    }
    fn pending(&self) -> &[crate::session::Trial] {
        &self.progress.pending
    }
}

impl Session for UcbSession {
    /// Draws only the release, after the last observation.
    fn ask(&mut self, rng: &mut dyn RngCore) -> Result<Next> {
        if !self.progress.pending.is_empty() {
            return Ok(Next::Wait);
        }
        if self.end.is_some() {
            return Ok(Next::Done);
        }
        let t = self.steps.len() as u64 + 1;
        if t > self.evaluations() {
            self.end = Some(self.release(rng)?);
            return Ok(Next::Done);
        }
        let beta = self.beta(t)?;
        let step = self.search()?.next(beta)?;
        let evaluation = match self.algorithm {
            Algorithm::GpUcb { .. } => Evaluation::ValidationGain,
            Algorithm::Lipschitz { .. } => Evaluation::RegularisedGain,
        };
        let hyper = self.grid[step.index].clone();
        self.asked = Some(step);
        Ok(self.progress.start_with(hyper, evaluation, None))
    }

    fn tell(&mut self, index: u64, told: Told) -> Result<()> {
        let trial = self.progress.pending_trial(index)?;
        if let Told::Score(v) = told {
            if !v.is_finite() {
                return Err(Error::Numerical(format!(
                    "the workload's gain at grid point {:?} is {v}",
                    trial.hyper
                )));
            }
        }
        let (_, told) = self.progress.told(index, told)?;
        let Told::Score(v) = told else {
            return Err(Error::Infeasible("told something else than a gain".into()));
        };
        let step = self
            .asked
            .take()
            .ok_or_else(|| Error::Infeasible("told a gain never asked for".into()))?;
        let standard = self.standard(v);
        self.search()?.observe(step.index, standard)?;
        self.steps.push((step, v));
        Ok(())
    }

    fn finish(&self) -> Result<Outcome> {
        unfinished(&self.progress, self.end.is_none())?;
        let Some(end) = &self.end else {
            return Err(Error::Infeasible(
                "the GP-UCB run released nothing yet".into(),
            ));
        };
        Ok(Outcome {
            chosen: end.chosen.map(|i| self.grid[i].clone()),
            released_score: end.released_gain,
            runs: self.evaluations(),
            ..Outcome::default()
        })
    }
}

/// A workload's validation gain (noisy, under its prior) as an evaluator.
pub(crate) struct Gains<'a>(pub &'a dyn ValidationGain);

impl Evaluator for Gains<'_> {
    fn evaluate(&self, trial: &crate::session::Trial, rng: &mut dyn RngCore) -> Result<Told> {
        match trial.evaluation {
            Evaluation::ValidationGain => Ok(Told::Score(self.0.observe(&trial.hyper, rng))),
            ref other => Err(Error::Infeasible(format!(
                "a validation gain cannot give {}",
                other.what()
            ))),
        }
    }
}

/// A regularised model's exact validation gain as an evaluator.
pub(crate) struct ExactGains<'a>(pub &'a dyn RegularisedGain);

impl Evaluator for ExactGains<'_> {
    fn evaluate(&self, trial: &crate::session::Trial, _rng: &mut dyn RngCore) -> Result<Told> {
        match trial.evaluation {
            Evaluation::RegularisedGain => Ok(Told::Score(self.0.gain(&trial.hyper))),
            ref other => Err(Error::Infeasible(format!(
                "an exact gain cannot give {}",
                other.what()
            ))),
        }
    }
}
