//! The DPareto loop (spec 001 §2) and its random-sampling baseline: λ ↦ (ε, error) evaluated
//! at k₀ random points, then k points each chosen by maximising the hypervolume probability of
//! improvement (or EHVI) under two independent GPs (Matérn 5/2, ARD) on log ε and
//! logit(error).
//!
//! Choices where the spec leaves room, each marked in the code:
//! * inputs are divided by their largest magnitude over the initial points (the release's
//!   scaling), after taking the logarithm of those searched on a log scale
//!   ([`Dimension::log`]); integer hyperparameters are rounded before evaluation;
//! * each GP models its objective minus the mean over the data (spec §2 allows standardising;
//!   a zero-mean GP on log ε around 2 would otherwise pull predictions towards ε = 1);
//! * the privacy GP has its noise fixed near 0 (ε is exact), the utility GP learns its noise
//!   from an initial 0.01; hyperparameters are refitted every iteration, warm-started from the
//!   last fit;
//! * the acquisition is maximised over `candidates` uniform points in the scaled box, then by
//!   bounded L-BFGS from the best with central finite differences; a proposal that rounds to an
//!   evaluated λ is replaced by the best candidate that does not;
//! * `PrivacyModel::Exact` (beyond the paper): ε is a known function of λ (the accountant's),
//!   so the acquisition uses it directly instead of a GP.

use super::acquisition::{FrontSource, ImprovementCells, Reference};
use super::designs::Design;
use super::front::Objectives;
pub use super::space::Dimension;
use super::transform::{log_epsilon, to_model_space};
use crate::error::{Error, Result};
use crate::gp::{
    fit_hyperparameters, FitOptions, HyperparameterBounds, Hyperparameters, KernelFamily, Posterior,
};
use crate::numeric::lbfgs::{minimize_bounded, LbfgsOptions};
use ndarray::{Array1, Array2};
use rand::{Rng, RngCore};
use serde::{Deserialize, Serialize};

/// What one evaluation measured: ε (the same for every replicate: it depends on λ alone) and
/// the error of each replicate run. Its objective is the mean error (spec 001 §2).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    pub epsilon: f64,
    pub errors: Vec<f64>,
}

impl Observation {
    /// One error (an oracle that averages internally, or a single run).
    pub fn single(epsilon: f64, error: f64) -> Self {
        Observation {
            epsilon,
            errors: vec![error],
        }
    }

    /// (ε, mean error); an observation without errors is an error.
    pub fn objectives(&self) -> Result<Objectives> {
        if self.errors.is_empty() {
            return Err(Error::invalid("errors", "[]", "at least 1 replicate"));
        }
        let mean = self.errors.iter().sum::<f64>() / self.errors.len() as f64;
        Ok([self.epsilon, mean])
    }
}

/// What DPareto evaluates.
pub trait Oracle {
    /// ε and the replicates' errors at `lambda` (already rounded; one value per
    /// [`Dimension`]).
    fn evaluate(&mut self, lambda: &[f64], rng: &mut dyn RngCore) -> Result<Observation>;
    /// ε at `lambda` without training, where it is known in closed form (needed by
    /// [`PrivacyModel::Exact`]).
    fn epsilon(&self, _lambda: &[f64]) -> Option<Result<f64>> {
        None
    }
}

/// How the acquisition sees the privacy objective.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PrivacyModel {
    /// A GP on log ε, as the paper does.
    #[default]
    Gp,
    /// The oracle's exact ε ([`Oracle::epsilon`]) with no uncertainty.
    Exact,
}

/// The acquisition function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Acquisition {
    /// Hypervolume-based probability of improvement (the paper's).
    #[default]
    HvPoi,
    /// Expected hypervolume improvement.
    Ehvi,
}

/// DPareto's settings; [`Default`] is spec 001 §4's budget (16 + 256, 5000 candidates).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DparetoOptions {
    pub initial: usize,
    pub iterations: usize,
    pub candidates: usize,
    pub reference: Reference,
    pub front: FrontSource,
    pub acquisition: Acquisition,
    pub privacy: PrivacyModel,
    /// Random restarts of each hyperparameter fit besides the warm start.
    pub fit_restarts: usize,
}

impl Default for DparetoOptions {
    fn default() -> Self {
        DparetoOptions {
            initial: 16,
            iterations: 256,
            candidates: 5000,
            reference: Reference::paper(),
            front: FrontSource::Observed,
            acquisition: Acquisition::HvPoi,
            privacy: PrivacyModel::Gp,
            fit_restarts: 2,
        }
    }
}

/// One evaluated point, in evaluation order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Evaluation {
    pub lambda: Vec<f64>,
    /// (ε, mean error over the replicates).
    pub objectives: Objectives,
    /// Each replicate's error (for the best / worst replicate fronts, spec 001 Fig. 7).
    pub errors: Vec<f64>,
    /// Drawn at random (the initial design, or random sampling), not proposed.
    pub random: bool,
    /// The acquisition's value at the proposal (None for random points).
    pub acquisition: Option<f64>,
    /// The GPs' prediction at the proposal in model space, ([log ε, logit error] means,
    /// their standard deviations); None for random points. With `privacy = exact` the log ε
    /// mean is the exact value and its deviation 0.
    pub prediction: Option<(Objectives, Objectives)>,
}

fn check_dims(dims: &[Dimension]) -> Result<()> {
    if dims.is_empty() {
        return Err(Error::invalid(
            "dimensions",
            "[]",
            "at least one hyperparameter",
        ));
    }
    Ok(())
}

/// The baseline: `count` uniform points of the box.
pub fn random_sampling(
    oracle: &mut dyn Oracle,
    dims: &[Dimension],
    count: usize,
    rng: &mut dyn RngCore,
) -> Result<Vec<Evaluation>> {
    sample(oracle, dims, Design::Uniform, count, rng)
}

/// Random sampling from `design`: `count` points, each drawn then evaluated from the one
/// stream (so the first k points of a longer run are those of a run of k).
pub fn sample(
    oracle: &mut dyn Oracle,
    dims: &[Dimension],
    design: Design,
    count: usize,
    rng: &mut dyn RngCore,
) -> Result<Vec<Evaluation>> {
    FrontSearch::sample(dims, design, count)?.run(oracle, rng)
}

/// The grid baseline (spec 001 Fig. 6): `points` values per dimension, linearly spaced from
/// low to high (one value: the midpoint), integers rounded, every combination once in
/// lexicographic order (the last dimension fastest). Combinations that rounding makes equal are
/// evaluated once.
pub fn grid_search(
    oracle: &mut dyn Oracle,
    dims: &[Dimension],
    points: usize,
    rng: &mut dyn RngCore,
) -> Result<Vec<Evaluation>> {
    FrontSearch::grid(dims, points)?.run(oracle, rng)
}

/// The DPareto loop: `options.initial` random points, then `options.iterations` proposals.
/// Returns every evaluation in order (the front is [`super::pareto_front`] of their
/// objectives).
pub fn dpareto(
    oracle: &mut dyn Oracle,
    dims: &[Dimension],
    options: &DparetoOptions,
    rng: &mut dyn RngCore,
) -> Result<Vec<Evaluation>> {
    FrontSearch::dpareto(dims, options, Design::Uniform)?.run(oracle, rng)
}

fn check_options(options: &DparetoOptions) -> Result<()> {
    if options.initial < 2 {
        return Err(Error::invalid(
            "initial",
            options.initial,
            "at least 2 random points before the GPs are fitted",
        ));
    }
    if options.candidates == 0 {
        return Err(Error::invalid("candidates", 0, "at least 1"));
    }
    Ok(())
}

/// How a [`FrontSearch`] chooses its points.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Plan {
    /// `count` points drawn from `design`.
    Sample { design: Design, count: usize },
    /// These points, in order (a grid, its duplicates after rounding removed).
    Grid { points: Vec<Vec<f64>> },
    /// DPareto: `options.initial` points drawn from `design`, then `options.iterations`
    /// proposals.
    Dpareto {
        options: DparetoOptions,
        design: Design,
    },
}

/// A point a [`FrontSearch`] asks to be evaluated, with, for a proposal, the acquisition's
/// value there and the GPs' model-space prediction (means, standard deviations).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Asked {
    pub lambda: Vec<f64>,
    pub proposal: Option<(f64, (Objectives, Objectives))>,
}

/// What one tell added to a search's state: the evaluation and the GP fits that chose it
/// (the warm starts of the next fits). A journal keeps these, and [`FrontSearch::restore`]
/// rebuilds the state from them without fitting or drawing anything.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub evaluation: Evaluation,
    pub warm: [Option<Hyperparameters>; 2],
}

/// A search of the box for the (ε, error) front as an ask/tell state machine: random
/// sampling, a grid, or DPareto (random points, then proposals of the GPs' acquisition).
/// [`FrontSearch::ask`] draws what the search draws before an evaluation (a design point; a
/// proposal's fit seed and candidates) from the stream it is given, and the evaluation then
/// draws from the same stream, the order the loops always drew in. The state is plain data
/// (serde): the evaluations, the last fits' hyperparameters and the point asked for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FrontSearch {
    dims: Vec<Dimension>,
    plan: Plan,
    done: Vec<Evaluation>,
    /// The privacy and error GPs' last fitted hyperparameters (warm starts).
    warm: [Option<Hyperparameters>; 2],
    asked: Option<Asked>,
}

impl FrontSearch {
    fn new(dims: &[Dimension], plan: Plan) -> Result<Self> {
        check_dims(dims)?;
        Ok(FrontSearch {
            dims: dims.to_vec(),
            plan,
            done: Vec::new(),
            warm: [None, None],
            asked: None,
        })
    }

    /// Random sampling: `count` points from `design`.
    pub fn sample(dims: &[Dimension], design: Design, count: usize) -> Result<Self> {
        Self::new(dims, Plan::Sample { design, count })
    }

    /// The grid of [`grid_search`].
    pub fn grid(dims: &[Dimension], points: usize) -> Result<Self> {
        check_dims(dims)?;
        if points == 0 {
            return Err(Error::invalid(
                "points",
                0,
                "at least 1 value per dimension",
            ));
        }
        let count = (points as f64).powi(dims.len() as i32);
        if count > 1e7 {
            return Err(Error::invalid(
                "points",
                points,
                format!("a grid of at most 10^7 points ({} dimensions)", dims.len()),
            ));
        }
        let values: Vec<Vec<f64>> = dims.iter().map(|d| d.grid(points)).collect();
        let mut seen = std::collections::HashSet::new();
        let mut list = Vec::new();
        for flat in 0..count as usize {
            let mut rest = flat;
            let mut lambda = vec![0.0; dims.len()];
            for j in (0..dims.len()).rev() {
                lambda[j] = values[j][rest % points];
                rest /= points;
            }
            if seen.insert(lambda.iter().map(|v| v.to_bits()).collect::<Vec<_>>()) {
                list.push(lambda);
            }
        }
        Self::new(dims, Plan::Grid { points: list })
    }

    /// DPareto, its `options.initial` random points drawn from `design`.
    pub fn dpareto(dims: &[Dimension], options: &DparetoOptions, design: Design) -> Result<Self> {
        check_options(options)?;
        Self::new(
            dims,
            Plan::Dpareto {
                options: options.clone(),
                design,
            },
        )
    }

    /// Every evaluation so far, in order.
    pub fn evaluations(&self) -> &[Evaluation] {
        &self.done
    }

    /// The point asked for and not yet told.
    pub fn pending(&self) -> Option<&Asked> {
        self.asked.as_ref()
    }

    /// What the last tell added (None before the first).
    pub fn last_step(&self) -> Option<Step> {
        Some(Step {
            evaluation: self.done.last()?.clone(),
            warm: self.warm.clone(),
        })
    }

    /// The state after `step` is told, rebuilt from its record (no fit, no draw): a resumed
    /// search restores its journal's steps in order, then sets its stream where the last
    /// evaluation left it.
    pub fn restore(&mut self, step: Step) -> Result<()> {
        if self.asked.is_some() || self.done.len() >= self.planned() {
            return Err(Error::Infeasible(
                "a step restored into a search that is not between tells".into(),
            ));
        }
        if step.evaluation.lambda.len() != self.dims.len() {
            return Err(Error::Infeasible(format!(
                "a restored point has {} values; the box has {} dimensions",
                step.evaluation.lambda.len(),
                self.dims.len()
            )));
        }
        self.done.push(step.evaluation);
        self.warm = step.warm;
        Ok(())
    }

    /// The number of evaluations the search makes.
    fn planned(&self) -> usize {
        match &self.plan {
            Plan::Sample { count, .. } => *count,
            Plan::Grid { points } => points.len(),
            Plan::Dpareto { options, .. } => options.initial + options.iterations,
        }
    }

    /// The next point to evaluate (None: the search is over). `oracle` is read only for ε in
    /// closed form ([`PrivacyModel::Exact`]); nothing is evaluated.
    pub fn ask(&mut self, oracle: &dyn Oracle, rng: &mut dyn RngCore) -> Result<Option<Vec<f64>>> {
        if self.asked.is_some() {
            return Err(Error::Infeasible(
                "the search asked again before the last point was told".into(),
            ));
        }
        let n = self.done.len();
        let asked = match &self.plan {
            Plan::Sample { count, .. } if n >= *count => return Ok(None),
            Plan::Sample { design, .. } => Asked {
                lambda: design.draw(&self.dims, rng)?,
                proposal: None,
            },
            Plan::Grid { points } => match points.get(n) {
                Some(lambda) => Asked {
                    lambda: lambda.clone(),
                    proposal: None,
                },
                None => return Ok(None),
            },
            Plan::Dpareto { options, .. } if n >= options.initial + options.iterations => {
                return Ok(None)
            }
            Plan::Dpareto { design, options } if n < options.initial => Asked {
                lambda: design.draw(&self.dims, rng)?,
                proposal: None,
            },
            Plan::Dpareto { options, .. } => {
                let options = options.clone();
                self.propose(&options, oracle, rng)?
            }
        };
        let lambda = asked.lambda.clone();
        self.asked = Some(asked);
        Ok(Some(lambda))
    }

    /// What the evaluation of the point asked for measured.
    pub fn tell(&mut self, observed: Observation) -> Result<()> {
        if self.asked.is_none() {
            return Err(Error::Infeasible(
                "told an evaluation the search did not ask for".into(),
            ));
        }
        let objectives = observed.objectives()?;
        let asked = self.asked.take().expect("checked above");
        self.done.push(Evaluation {
            lambda: asked.lambda,
            objectives,
            errors: observed.errors,
            random: asked.proposal.is_none(),
            acquisition: asked.proposal.map(|p| p.0),
            prediction: asked.proposal.map(|p| p.1),
        });
        Ok(())
    }

    /// The search driven to its end, each point evaluated by `oracle` from `rng` right after
    /// it is asked for.
    pub fn run(
        mut self,
        oracle: &mut dyn Oracle,
        rng: &mut dyn RngCore,
    ) -> Result<Vec<Evaluation>> {
        while let Some(lambda) = self.ask(&*oracle, rng)? {
            let observed = oracle.evaluate(&lambda, rng)?;
            self.tell(observed)?;
        }
        Ok(self.done)
    }

    /// One DPareto iteration: both GPs fitted to every evaluation so far (warm-started from
    /// the last fits), the acquisition maximised over uniform candidates and then by L-BFGS
    /// from the best of them.
    fn propose(
        &mut self,
        options: &DparetoOptions,
        oracle: &dyn Oracle,
        rng: &mut dyn RngCore,
    ) -> Result<Asked> {
        let dims = &self.dims;
        let done = &self.done;
        // Checked on a known point, drawing nothing: the stream stays that of random sampling.
        if options.privacy == PrivacyModel::Exact && oracle.epsilon(&done[0].lambda).is_none() {
            return Err(Error::Infeasible(
                "privacy = exact needs an oracle that knows ε in closed form".into(),
            ));
        }
        let scale = input_scale(dims, &done[..options.initial]);
        let bounds: Vec<(f64, f64)> = dims
            .iter()
            .zip(&scale)
            .map(|(d, s)| {
                let (lo, hi) = d.internal_bounds();
                (lo / s, hi / s)
            })
            .collect();
        let unscale = |z: &[f64]| -> Vec<f64> {
            dims.iter()
                .zip(z.iter().zip(&scale))
                .map(|(d, (z, s))| d.value_at(z * s))
                .collect()
        };
        let n = done.len();
        let x = Array2::from_shape_fn((n, dims.len()), |(i, j)| {
            dims[j].internal(done[i].lambda[j]) / scale[j]
        });
        let model: Vec<Objectives> = done
            .iter()
            .map(|e| to_model_space(e.objectives))
            .collect::<Result<_>>()?;
        let seed = rng.next_u64();
        let [warm_privacy, warm_error] = &self.warm;
        let privacy = match options.privacy {
            PrivacyModel::Gp => {
                let y: Vec<f64> = model.iter().map(|v| v[0]).collect();
                Some(Surrogate::fit(
                    &x,
                    &y,
                    true,
                    warm_privacy.as_ref(),
                    options.fit_restarts,
                    seed,
                )?)
            }
            PrivacyModel::Exact => None,
        };
        let y: Vec<f64> = model.iter().map(|v| v[1]).collect();
        let error = Surrogate::fit(
            &x,
            &y,
            false,
            warm_error.as_ref(),
            options.fit_restarts,
            seed ^ 1,
        )?;
        // The model-space prediction at the rows of `z` (scaled inputs).
        let predict = |z: &Array2<f64>| -> Result<Vec<(Objectives, Objectives)>> {
            let (me, se) = error.predict(z)?;
            let (mp, sp) = match &privacy {
                Some(p) => p.predict(z)?,
                None => {
                    let mut m = Vec::with_capacity(z.nrows());
                    for row in z.rows() {
                        let lambda = unscale(row.as_slice().expect("contiguous row"));
                        let eps = oracle.epsilon(&lambda).expect("checked above")?;
                        m.push(log_epsilon(eps)?);
                    }
                    (m, vec![0.0; z.nrows()])
                }
            };
            Ok((0..z.nrows())
                .map(|i| ([mp[i], me[i]], [sp[i], se[i]]))
                .collect())
        };
        let front_points = match options.front {
            FrontSource::Observed => model.clone(),
            FrontSource::PosteriorMean => predict(&x)?.into_iter().map(|(m, _)| m).collect(),
        };
        let reference = options.reference.resolve(&front_points)?;
        let cells = ImprovementCells::new(&front_points, reference)?;
        let alpha = |(m, s): (Objectives, Objectives)| -> Result<f64> {
            match options.acquisition {
                Acquisition::HvPoi => cells.hvpoi(m, s),
                Acquisition::Ehvi => cells.expected_improvement(m, s),
            }
        };
        // Stage 1: uniform candidates in the scaled box.
        let cand = Array2::from_shape_fn((options.candidates, dims.len()), |(_, j)| {
            bounds[j].0 + (bounds[j].1 - bounds[j].0) * rng.random::<f64>()
        });
        let values: Vec<f64> = predict(&cand)?
            .into_iter()
            .map(alpha)
            .collect::<Result<_>>()?;
        let mut order: Vec<usize> = (0..values.len()).collect();
        order.sort_by(|&a, &b| values[b].total_cmp(&values[a]).then(a.cmp(&b)));
        // Stage 2: bounded L-BFGS on −α from the best candidate (central differences).
        let value_at = |z: &[f64]| -> f64 {
            let row = Array2::from_shape_vec((1, z.len()), z.to_vec()).expect("one row");
            predict(&row)
                .ok()
                .and_then(|p| alpha(p[0]).ok())
                .unwrap_or(f64::NEG_INFINITY)
        };
        let start: Vec<f64> = cand.row(order[0]).to_vec();
        let local = minimize_bounded(
            |z: &[f64]| {
                let f = -value_at(z);
                let grad = (0..z.len())
                    .map(|j| {
                        let h = 1e-4 * (bounds[j].1 - bounds[j].0);
                        let (mut up, mut down) = (z.to_vec(), z.to_vec());
                        up[j] = (z[j] + h).min(bounds[j].1);
                        down[j] = (z[j] - h).max(bounds[j].0);
                        (value_at(&down) - value_at(&up)) / (up[j] - down[j])
                    })
                    .collect();
                (f, grad)
            },
            &start,
            &bounds,
            &LbfgsOptions {
                max_iterations: 30,
                ..LbfgsOptions::default()
            },
        )?;
        let seen = |lambda: &[f64]| done.iter().any(|e| e.lambda == lambda);
        let refined = unscale(&local.x);
        let (lambda, value, z) = if !seen(&refined) && -local.value >= values[order[0]] {
            (refined, -local.value, local.x.clone())
        } else {
            // A duplicate after rounding (or no gain from the local search): the best
            // candidate that is new (spec §2 leaves this open).
            match order
                .iter()
                .map(|&i| {
                    let z = cand.row(i).to_vec();
                    (unscale(&z), values[i], z)
                })
                .find(|(l, _, _)| !seen(l))
            {
                Some(found) => found,
                None => (refined, -local.value, local.x.clone()),
            }
        };
        let row = Array2::from_shape_vec((1, z.len()), z).expect("one row");
        let prediction = predict(&row)?[0];
        let warm = [privacy.map(|p| p.fitted), Some(error.fitted.clone())];
        self.warm = warm;
        Ok(Asked {
            lambda,
            proposal: Some((value, prediction)),
        })
    }
}

/// A GP on one transformed objective, centred on its data mean.
pub(crate) struct Surrogate {
    posterior: Posterior,
    mean: f64,
    fitted: Hyperparameters,
}

impl Surrogate {
    pub(crate) fn fit(
        x: &Array2<f64>,
        y: &[f64],
        exact: bool,
        warm: Option<&Hyperparameters>,
        restarts: usize,
        seed: u64,
    ) -> Result<Self> {
        let mean = y.iter().sum::<f64>() / y.len() as f64;
        let centred = Array1::from_iter(y.iter().map(|v| v - mean));
        // ε is exact: the privacy GP's noise is pinned near 0 (the Cholesky adds jitter as
        // needed); the utility's is learned from 0.01 (spec §2).
        let noise = if exact { (1e-8, 1e-8) } else { (1e-6, 10.0) };
        let initial = warm.cloned().unwrap_or_else(|| Hyperparameters {
            lengthscales: vec![1.0; x.ncols()],
            signal_variance: centred.iter().map(|v| v * v).sum::<f64>().max(1e-4) / y.len() as f64,
            noise_variance: if exact { 1e-8 } else { 0.01 },
        });
        let options = FitOptions {
            bounds: HyperparameterBounds {
                lengthscale: (1e-3, 1e3),
                signal_variance: (1e-6, 1e4),
                noise_variance: noise,
            },
            initial: Some(initial),
            restarts,
            seed,
            ..FitOptions::default()
        };
        let fit = fit_hyperparameters(x.view(), centred.view(), KernelFamily::Matern52, &options)?;
        let fitted = fit.hyperparameters();
        let posterior = Posterior::fit(fit.kernel, fit.noise_variance, x.clone(), centred)?;
        Ok(Surrogate {
            posterior,
            mean,
            fitted,
        })
    }

    /// Means and standard deviations at the rows of `xs`.
    pub(crate) fn predict(&self, xs: &Array2<f64>) -> Result<(Vec<f64>, Vec<f64>)> {
        let (m, v) = self.posterior.predict(xs.view())?;
        Ok((
            m.iter().map(|m| m + self.mean).collect(),
            v.iter().map(|v| v.max(0.0).sqrt()).collect(),
        ))
    }
}

/// Inputs are scaled by their largest magnitude (internal coordinate) over the initial points,
/// the release's rule; 1 where that is 0.
pub(crate) fn input_scale(dims: &[Dimension], initial: &[Evaluation]) -> Vec<f64> {
    (0..dims.len())
        .map(|j| {
            let m = initial
                .iter()
                .map(|e| dims[j].internal(e.lambda[j]).abs())
                .fold(0.0, f64::max);
            if m > 0.0 {
                m
            } else {
                1.0
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pareto::{hv_lin, HV_REFERENCE};
    use crate::rng::stream;

    /// A DP-SGD-like trade-off: more noise σ lowers ε and raises the error, more steps T the
    /// reverse. ε is known in closed form.
    struct TradeOff;

    impl Oracle for TradeOff {
        fn evaluate(&mut self, l: &[f64], _rng: &mut dyn RngCore) -> Result<Observation> {
            let eps = self.epsilon(l).expect("closed form")?;
            let error = 0.05 + 0.9 / (1.0 + l[1] / (l[0] * l[0]));
            Ok(Observation::single(eps, error))
        }
        fn epsilon(&self, l: &[f64]) -> Option<Result<f64>> {
            Some(Ok(l[1].sqrt() / l[0]))
        }
    }

    fn dims() -> Vec<Dimension> {
        vec![
            Dimension::new("sigma", 0.5, 8.0, false).unwrap(),
            Dimension::new("steps", 1.0, 50.0, true).unwrap(),
        ]
    }

    fn small(privacy: PrivacyModel) -> DparetoOptions {
        DparetoOptions {
            initial: 6,
            iterations: 10,
            candidates: 400,
            privacy,
            fit_restarts: 1,
            ..DparetoOptions::default()
        }
    }

    #[test]
    fn proposals_are_new_rounded_points_of_the_box() {
        for privacy in [PrivacyModel::Gp, PrivacyModel::Exact] {
            let run =
                dpareto(&mut TradeOff, &dims(), &small(privacy), &mut stream(1, &[])).unwrap();
            assert_eq!(run.len(), 16);
            assert_eq!(run.iter().filter(|e| e.random).count(), 6);
            for (i, e) in run.iter().enumerate() {
                assert!((0.5..=8.0).contains(&e.lambda[0]), "{:?}", e.lambda);
                assert!(e.lambda[1].fract() == 0.0 && (1.0..=50.0).contains(&e.lambda[1]));
                assert!(
                    run[..i].iter().all(|o| o.lambda != e.lambda),
                    "duplicate {:?}",
                    e.lambda
                );
                assert_eq!(e.acquisition.is_some(), i >= 6);
            }
        }
    }

    /// On the same budget, DPareto's front dominates more than random sampling's (mean over
    /// seeds), and knowing ε exactly does not hurt.
    #[test]
    fn dpareto_beats_random_sampling_on_the_same_budget() {
        let hv = |run: &[Evaluation]| {
            let points: Vec<Objectives> = run.iter().map(|e| e.objectives).collect();
            hv_lin(&points, HV_REFERENCE).unwrap()
        };
        let (mut bo, mut exact, mut rs) = (0.0, 0.0, 0.0);
        for seed in 0..3 {
            bo += hv(&dpareto(
                &mut TradeOff,
                &dims(),
                &small(PrivacyModel::Gp),
                &mut stream(seed, &[1]),
            )
            .unwrap());
            exact += hv(&dpareto(
                &mut TradeOff,
                &dims(),
                &small(PrivacyModel::Exact),
                &mut stream(seed, &[1]),
            )
            .unwrap());
            rs +=
                hv(&random_sampling(&mut TradeOff, &dims(), 16, &mut stream(seed, &[1])).unwrap());
        }
        assert!(bo > rs, "DPareto {bo} vs random {rs}");
        assert!(exact > rs, "exact-ε DPareto {exact} vs random {rs}");
    }

    #[test]
    fn the_grid_covers_the_box_once() {
        let grid = grid_search(&mut TradeOff, &dims(), 4, &mut stream(0, &[])).unwrap();
        assert_eq!(grid.len(), 16);
        let sigmas: Vec<f64> = grid.iter().step_by(4).map(|e| e.lambda[0]).collect();
        assert_eq!(sigmas, vec![0.5, 3.0, 5.5, 8.0]);
        let steps: Vec<f64> = grid[..4].iter().map(|e| e.lambda[1]).collect();
        assert_eq!(steps, vec![1.0, 17.0, 34.0, 50.0]);
        assert!(grid.iter().all(|e| e.random && e.acquisition.is_none()));
        // An integer dimension narrower than the grid: rounding merges values, each point once.
        let narrow = [Dimension::new("t", 1.0, 2.0, true).unwrap()];
        let g = grid_search(&mut TradeOff1, &narrow, 5, &mut stream(0, &[])).unwrap();
        assert_eq!(
            g.iter().map(|e| e.lambda[0]).collect::<Vec<_>>(),
            vec![1.0, 2.0]
        );
        assert!(grid_search(&mut TradeOff, &dims(), 0, &mut stream(0, &[])).is_err());
    }

    /// A one-dimensional oracle for the grid test.
    struct TradeOff1;

    impl Oracle for TradeOff1 {
        fn evaluate(&mut self, l: &[f64], _rng: &mut dyn RngCore) -> Result<Observation> {
            Ok(Observation::single(l[0], 1.0 / (1.0 + l[0])))
        }
    }

    #[test]
    fn bad_settings_are_named() {
        let e = dpareto(
            &mut TradeOff,
            &[],
            &DparetoOptions::default(),
            &mut stream(0, &[]),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("dimensions"), "{e}");
        let e = Dimension::new("lr", 1.0, 1.0, false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("low < high"), "{e}");
        let opts = DparetoOptions {
            initial: 1,
            ..DparetoOptions::default()
        };
        let e = dpareto(&mut TradeOff, &dims(), &opts, &mut stream(0, &[]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("initial"), "{e}");
    }

    /// TradeOff with noise drawn from the stream the search is driven with.
    struct Noisy;

    impl Oracle for Noisy {
        fn evaluate(&mut self, l: &[f64], rng: &mut dyn RngCore) -> Result<Observation> {
            let clean = TradeOff.evaluate(l, rng)?;
            let noise = 0.02 * crate::rng::normal(rng);
            Ok(Observation::single(clean.epsilon, clean.errors[0] + noise))
        }
        fn epsilon(&self, l: &[f64]) -> Option<Result<f64>> {
            TradeOff.epsilon(l)
        }
    }

    fn searches() -> Vec<FrontSearch> {
        vec![
            FrontSearch::dpareto(&dims(), &small(PrivacyModel::Gp), Design::Uniform).unwrap(),
            FrontSearch::dpareto(&dims(), &small(PrivacyModel::Exact), Design::Uniform).unwrap(),
            FrontSearch::sample(&dims(), Design::Uniform, 7).unwrap(),
            FrontSearch::grid(&dims(), 3).unwrap(),
        ]
    }

    /// A search saved as JSON after every tell, with its stream's position, and resumed from
    /// the text alone evaluates the points the uninterrupted search evaluates.
    #[test]
    fn a_search_resumed_from_json_after_every_tell_evaluates_the_same_points() {
        for search in searches() {
            let whole = search.clone().run(&mut Noisy, &mut stream(3, &[])).unwrap();
            let mut text = serde_json::to_string(&search).unwrap();
            let mut position = 0;
            loop {
                let mut s: FrontSearch = serde_json::from_str(&text).unwrap();
                let mut rng = stream(3, &[]);
                rng.set_word_pos(position);
                let Some(lambda) = s.ask(&Noisy, &mut rng).unwrap() else {
                    assert_eq!(s.evaluations(), whole.as_slice());
                    break;
                };
                let v = Noisy.evaluate(&lambda, &mut rng).unwrap();
                s.tell(v).unwrap();
                text = serde_json::to_string(&s).unwrap();
                position = rng.get_word_pos();
            }
        }
    }

    /// The steps of a search restored in order rebuild its state (no fit, no draw): the
    /// restored search equals the original and goes on as it does.
    #[test]
    fn restored_steps_rebuild_the_state() {
        for search in searches() {
            let mut a = search.clone();
            let mut rng = stream(4, &[]);
            let mut steps = Vec::new();
            for _ in 0..9 {
                let Some(lambda) = a.ask(&Noisy, &mut rng).unwrap() else {
                    break;
                };
                let v = Noisy.evaluate(&lambda, &mut rng).unwrap();
                a.tell(v).unwrap();
                steps.push((a.last_step().unwrap(), rng.get_word_pos()));
            }
            let mut b = search.clone();
            let mut resumed = stream(4, &[]);
            for (step, position) in steps {
                b.restore(step).unwrap();
                resumed.set_word_pos(position);
            }
            assert_eq!(a, b);
            assert_eq!(
                a.run(&mut Noisy, &mut rng).unwrap(),
                b.run(&mut Noisy, &mut resumed).unwrap()
            );
        }
    }

    /// Out of turn is an error that leaves the state as it was.
    #[test]
    fn out_of_turn_is_an_error() {
        let mut s = FrontSearch::sample(&dims(), Design::Uniform, 3).unwrap();
        let before = s.clone();
        assert!(s.tell(Observation::single(1.0, 0.5)).is_err());
        assert_eq!(s, before);
        let mut rng = stream(5, &[]);
        s.ask(&Noisy, &mut rng).unwrap().unwrap();
        let asked = s.clone();
        assert!(s.ask(&Noisy, &mut rng).is_err());
        let step = s.last_step();
        assert!(step.is_none());
        assert!(s
            .tell(Observation {
                epsilon: 1.0,
                errors: vec![]
            })
            .is_err());
        assert_eq!(s, asked);
        s.tell(Observation::single(1.0, 0.5)).unwrap();
        let step = s.last_step().unwrap();
        let mut other = FrontSearch::sample(&dims(), Design::Uniform, 3).unwrap();
        other.ask(&Noisy, &mut stream(5, &[])).unwrap();
        assert!(
            other.restore(step).is_err(),
            "restored while a point is pending"
        );
    }
}
