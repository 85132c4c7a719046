//! What tuners tune. A workload offers capabilities as traits (the way argmin lets a solver ask
//! for `CostFunction` or `Gradient`); each tuner asks for the ones it needs and reports a clear
//! error when a workload lacks one. The noise-free [`Oracle`] is for reporting (utility, regret)
//! only: tuners never receive it.

pub mod canary;
pub mod declarations;
pub mod dp_sgd;
pub mod dpsgd_tasks;
pub mod dpsgd_tuning;
pub mod gp_regression;
pub mod grid_gain;
pub mod per_user;
pub mod rbf_svm;
pub mod regularised_erm;
pub mod svr_ct_slices;
pub mod synthetic_gp;
pub mod validation_score;

use crate::accounting::Event;
use crate::error::{Error, Result};
use crate::gp::KernelFamily;
pub use declarations::{
    Declarations, PartitionedDeclaration, PerUserDeclaration, TrainingDeclaration,
};
use rand::{Rng, RngCore};

/// A hyperparameter: a point of the search space.
pub type Hyper = Vec<f64>;

/// Where candidates come from.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Space {
    /// A finite list of candidates (a grid).
    Finite(Vec<Hyper>),
    /// The unit box [0, 1]^dim.
    UnitBox { dim: usize },
}

impl Space {
    /// `m` points drawn uniformly from [0, 1]^dim (a random grid).
    pub fn random_grid(dim: usize, m: usize, rng: &mut dyn RngCore) -> Result<Self> {
        if dim == 0 || m == 0 {
            return Err(Error::invalid(
                "candidates",
                m,
                "at least one candidate in dimension >= 1",
            ));
        }
        Ok(Space::Finite(
            (0..m)
                .map(|_| (0..dim).map(|_| rng.random::<f64>()).collect())
                .collect(),
        ))
    }

    /// A candidate drawn uniformly at random, as the random-search theory requires.
    pub fn draw(&self, rng: &mut dyn RngCore) -> Hyper {
        match self {
            Space::Finite(c) => c[rng.random_range(0..c.len())].clone(),
            Space::UnitBox { dim } => (0..*dim).map(|_| rng.random::<f64>()).collect(),
        }
    }

    /// The number of candidates of a finite space.
    pub fn len(&self) -> Option<usize> {
        match self {
            Space::Finite(c) => Some(c.len()),
            Space::UnitBox { .. } => None,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == Some(0)
    }

    /// The data-independent output when a tuner releases nothing (K = 0, a halt): the first
    /// candidate of a finite space, the centre of a box.
    pub fn default_point(&self) -> Hyper {
        match self {
            Space::Finite(c) => c.first().cloned().unwrap_or_default(),
            Space::UnitBox { dim } => vec![0.5; *dim],
        }
    }

    pub fn dim(&self) -> usize {
        match self {
            Space::Finite(c) => c.first().map_or(0, Vec::len),
            Space::UnitBox { dim } => *dim,
        }
    }
}

/// Capability: one private training run at a hyperparameter releases a score (higher is
/// better). Its privacy is known in advance and is the same for every hyperparameter.
pub trait PrivateTraining: Send + Sync {
    /// What one run releases, as a privacy event (independent of the data and of the
    /// hyperparameter): every accountant that supports it may bound a composition of runs.
    fn run_event(&self) -> &Event;
    /// One private run: the released score.
    fn train(&self, h: &Hyper, rng: &mut dyn RngCore) -> f64;
}

/// One run's Rényi curve (tests: the default orders).
#[cfg(test)]
pub(crate) fn run_curve(t: &dyn PrivateTraining) -> crate::accounting::RdpCurve {
    crate::accounting::rdp_events::curve(t.run_event(), &Default::default()).unwrap()
}

/// The GP prior a workload declares for its validation gain (spec 002 Assumption 1), fixed and
/// public before any data is seen: f_V ~ GP(0, s²·k2) with k2 of unit variance, observations
/// v = f_V(λ) + α with α ~ N(0, σ²), and ρ = k1(V, V′) for neighbouring validation sets, so
/// that Var[f_V(λ) − f_V′(λ)] = 2(1 − ρ)s².
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GainPrior {
    /// The family of k2.
    pub kernel: KernelFamily,
    /// The lengthscale ℓ of k2 (isotropic).
    pub lengthscale: f64,
    /// The prior standard deviation s of f_V (in gain units).
    pub scale: f64,
    /// The observation noise σ (in gain units; 0 for exact evaluations).
    pub noise_sd: f64,
    /// The correlation ρ ∈ [0, 1] of neighbouring datasets' gains.
    pub rho: f64,
}

/// Capability: noisy evaluations of the validation gain f_V at a grid point (private GP-UCB).
/// The evaluations are not private by themselves: the tuner privatises what it releases.
pub trait ValidationGain: Send + Sync {
    fn prior(&self) -> &GainPrior;
    /// One evaluation v = f_V(h) + α, α ~ N(0, σ²).
    fn observe(&self, h: &Hyper, rng: &mut dyn RngCore) -> f64;
}

/// Assumption 2 of spec 002 (Algorithm 3), declared by the workload: the hyperparameter (the
/// first coordinate of a grid point) is the L2 regularisation λ ∈ [λ_min, λ_max] of a
/// λ-strongly convex ERM with a convex 1-Lipschitz loss on *public* training data, solved
/// exactly; the gain is −(1/m)·Σ g over the m private validation records, g ∈ [0, g*] and
/// L-Lipschitz in the weights.
#[derive(Clone, Debug, PartialEq)]
pub struct LipschitzAssumption {
    pub g_star: f64,
    pub lipschitz: f64,
    pub validation_size: usize,
    pub lambda_min: f64,
    pub lambda_max: f64,
    /// A bound on |f_V(ŵ_λ) − f_V(w_λ)| for every λ and V, where ŵ_λ is what the workload's
    /// solver returns and w_λ the exact minimiser (0 for exact training). Theorem 7 assumes
    /// exact training; the tuner adds twice this to Δ_f.
    pub solver_error: f64,
}

/// Capability: exact evaluations of the validation gain f_V(w_λ) under Assumption 2
/// (Algorithm 3 of spec 002; no GP assumption).
pub trait RegularisedGain: Send + Sync {
    fn assumption(&self) -> &LipschitzAssumption;
    /// f_V(w_λ) at the grid point `h` (λ = h[0]).
    fn gain(&self, h: &Hyper) -> f64;
}

/// Capability: the proxy utilities of propose-test tuning (spec 003 §1.2). For candidate j of
/// `candidates` (the finite space's list, or a public grid the tuner laid over a box) and shard
/// i of k disjoint shards of the training data (shard labels drawn i.i.d. uniform from the
/// given data-independent stream), a[j][i] ∈ [0, 1] is the validation utility of the model
/// trained on shard i alone. The workload guarantees that a neighbouring
/// dataset (its own adjacency) moves every a[j][i] of one shard by at most 1 and no other, or,
/// for a private validation set of at least k records, every a[j][i] by at most 1/k: either way
/// the shard mean of each candidate has sensitivity 1/k.
pub trait PartitionedUtility: Send + Sync {
    /// a[j][i] for every candidate j (in the order of the finite space) and shard i < `k`.
    fn shard_utilities(
        &self,
        candidates: &[Hyper],
        k: usize,
        rng: &mut dyn RngCore,
    ) -> Result<Vec<Vec<f64>>>;
    /// The number of private validation records, when the validation set is private (the
    /// tuner then requires it to be at least k); `None` when only the training data is private.
    fn private_validation_records(&self) -> Option<usize>;
}

/// Capability: per-user validation losses (lower is better) for tuners that privatise a
/// gradient built from them (DP-GIBO, spec 004). Points are given in the unit box of the
/// workload's space; [`PerUserLosses::domain`] says which native box it maps to, so that a
/// tuner's kernel lengthscales can be stated in native units. Neighbouring datasets replace one
/// user (n is public).
pub trait PerUserLosses: Send + Sync {
    /// The number of users n (public).
    fn n_users(&self) -> usize;
    /// The native box, per coordinate (lo, hi): the unit-box point u is θ = lo + u·(hi − lo).
    fn domain(&self) -> &[(f64, f64)];
    /// The declared standard deviation of the evaluation noise added to each loss (0 when
    /// evaluations are exact).
    fn evaluation_sd(&self) -> f64;
    /// The per-user losses at each point, with evaluation noise: an n_users × points.len()
    /// matrix.
    fn user_losses(&self, points: &[Hyper], rng: &mut dyn RngCore) -> Result<ndarray::Array2<f64>>;
    /// Each user's exact loss gradient with respect to the native coordinates at a point
    /// (d × n_users), when the workload has them (DP gradient descent, diagnostics).
    fn user_gradients(&self, _point: &Hyper) -> Option<ndarray::Array2<f64>> {
        None
    }
    /// The privacy event, with respect to private data other than the users (the training
    /// rows a model is fitted on), of evaluating the losses at ONE point; `None` (the default)
    /// when evaluations touch no other private data. A tuner composes it over a
    /// data-independent maximum of the points it evaluates, plus one run for the model its
    /// chosen point releases.
    fn evaluation_event(&self) -> Option<&Event> {
        None
    }
    /// The lengthscales (native units) of the GP prior the objective was drawn from, when it
    /// declares one before any data is seen; a surrogate may use them (`lengthscale =
    /// "workload"` in `dp-gibo`).
    fn prior_lengthscales(&self) -> Option<Vec<f64>> {
        None
    }
}

/// Noise-free quantities for reporting. Never passed to a tuner.
pub trait Oracle: Send + Sync {
    /// The true utility at `h`.
    fn utility(&self, h: &Hyper) -> f64;
    /// The best true utility over the space (exact for finite spaces, estimated for boxes).
    fn best_utility(&self) -> f64;
}

/// A workload: a name, its oracle, and the capabilities it offers.
pub trait Workload: Send + Sync {
    fn name(&self) -> String;
    /// Where the hyperparameters live.
    fn space(&self) -> &Space;
    fn oracle(&self) -> &dyn Oracle;
    fn private_training(&self) -> Option<&dyn PrivateTraining> {
        None
    }
    fn validation_gain(&self) -> Option<&dyn ValidationGain> {
        None
    }
    fn regularised_gain(&self) -> Option<&dyn RegularisedGain> {
        None
    }
    fn partitioned_utility(&self) -> Option<&dyn PartitionedUtility> {
        None
    }
    fn per_user_losses(&self) -> Option<&dyn PerUserLosses> {
        None
    }
    /// The utility of the tuner's output when it releases nothing learned from the data (K = 0,
    /// a halt: ⊥). By default that of the data-independent [`Space::default_point`], for
    /// workloads whose output is a hyperparameter; a workload whose output is a trained model
    /// overrides it with a model that never saw the private data. Reporting only.
    fn utility_of_nothing(&self) -> f64 {
        self.oracle().utility(&self.space().default_point())
    }
    /// A point of the space as named coordinates in the workload's own units, for result
    /// tables (default: `x1`, `x2`, … as they are).
    fn coordinates(&self, h: &Hyper) -> Vec<(String, f64)> {
        h.iter()
            .enumerate()
            .map(|(i, v)| (format!("x{}", i + 1), *v))
            .collect()
    }
}

/// The capability or a clear error naming the tuner, the workload and what is missing.
pub fn require_private_training<'a>(
    tuner: &str,
    w: &'a dyn Workload,
) -> Result<&'a dyn PrivateTraining> {
    w.private_training()
        .ok_or_else(|| missing(tuner, w, declarations::TRAINING))
}

/// The capability or a clear error naming the tuner, the workload and what is missing.
pub fn require_validation_gain<'a>(
    tuner: &str,
    w: &'a dyn Workload,
) -> Result<&'a dyn ValidationGain> {
    w.validation_gain()
        .ok_or_else(|| missing(tuner, w, declarations::GAIN_PRIOR))
}

/// The capability or a clear error naming the tuner, the workload and what is missing.
pub fn require_regularised_gain<'a>(
    tuner: &str,
    w: &'a dyn Workload,
) -> Result<&'a dyn RegularisedGain> {
    w.regularised_gain()
        .ok_or_else(|| missing(tuner, w, declarations::LIPSCHITZ))
}

/// The capability or a clear error naming the tuner, the workload and what is missing.
pub fn require_partitioned_utility<'a>(
    tuner: &str,
    w: &'a dyn Workload,
) -> Result<&'a dyn PartitionedUtility> {
    w.partitioned_utility()
        .ok_or_else(|| missing(tuner, w, declarations::PARTITIONED))
}

/// The capability or a clear error naming the tuner, the workload and what is missing.
pub fn require_per_user_losses<'a>(
    tuner: &str,
    w: &'a dyn Workload,
) -> Result<&'a dyn PerUserLosses> {
    w.per_user_losses()
        .ok_or_else(|| missing(tuner, w, declarations::PER_USER))
}

fn missing(tuner: &str, w: &dyn Workload, what: &str) -> Error {
    Error::missing_capability(format!("tuner `{tuner}`"), what, w.name())
}

/// One variant of a workload family (e.g. one dimension) as an experiment file lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct Variant {
    /// Short label, e.g. `d=5`.
    pub label: String,
    pub dim: u64,
}

/// A workload family configured by an experiment file's `[workload]` table. The harness asks
/// it for instances: one per (variant, repetition), built from the experiment seed alone, with
/// the noise of each private run as the knob that equal-budget mode calibrates (a larger noise
/// must never give a weaker guarantee).
pub trait WorkloadSpec: Send + Sync {
    /// The registry name (the `kind` of the `[workload]` table).
    fn kind(&self) -> &'static str;
    /// Its parameters, for the `workload_params` column.
    fn params(&self) -> String;
    fn variants(&self) -> Vec<Variant>;
    /// The noise of each private run when the experiment does not calibrate it.
    fn default_noise(&self) -> Option<f64>;
    /// Why a regret would not be measured against one reference common to every tuner at a
    /// budget (the best utility moving with each tuner's calibrated noise), if so: reports
    /// then give the utility only, and say why.
    fn regret_unavailable(&self) -> Option<String> {
        None
    }
    /// The instance of `variant` for repetition `rep` under experiment seed `seed`.
    fn instance(
        &self,
        variant: usize,
        seed: u64,
        rep: u64,
        noise: f64,
    ) -> Result<Box<dyn Workload>>;
}

/// One variant per dimension, labelled `d=<dim>` (the families swept over `dims`).
pub fn dim_variants(dims: impl IntoIterator<Item = usize>) -> Vec<Variant> {
    dims.into_iter()
        .map(|d| Variant {
            label: format!("d={d}"),
            dim: d as u64,
        })
        .collect()
}

/// The dimension of variant `variant` of a family swept over `dims`, or a clear error.
pub fn variant_dim(dims: &[usize], variant: usize) -> Result<usize> {
    dims.get(variant)
        .copied()
        .ok_or_else(|| Error::invalid("variant", variant, format!("below {}", dims.len())))
}

type SpecBuilder = crate::params::Builder<Box<dyn WorkloadSpec>>;

/// Workload kinds → constructors from experiment-file parameters. Adding a workload: one file
/// implementing [`Workload`] and [`WorkloadSpec`], and one line here.
pub const REGISTRY: &[(&str, SpecBuilder)] = &[
    ("synthetic-gp", synthetic_gp::spec),
    ("rbf-svm", rbf_svm::spec),
    ("gp-regression", gp_regression::spec),
    ("per-user-gp", per_user::rff::spec),
    ("gp-lengthscales", per_user::gp_lengthscales::spec),
    ("normal-location", per_user::location::normal_location_spec),
    (
        "robust-regression",
        per_user::location::robust_regression_spec,
    ),
    ("svr-ct-slices", svr_ct_slices::spec),
    ("dpsgd-task", dpsgd_tuning::spec),
];

/// Reads the `[workload]` table of kind `kind` (its `kind` key aside) into the typed
/// parameters `T` (unknown keys refused).
pub(crate) fn read<T: serde::de::DeserializeOwned>(kind: &str, params: &toml::Table) -> Result<T> {
    crate::params::read_except(&format!("workload `{kind}`"), params, &["kind"])
}

/// The `dims` parameter: integers in [1, 100], or `default` when absent (required when
/// `default` is empty).
pub(crate) fn dims(
    given: Option<crate::params::OneOrMany<crate::params::Count>>,
    default: &[usize],
) -> Result<Vec<usize>> {
    let Some(given) = given else {
        if default.is_empty() {
            return Err(crate::error::Error::invalid(
                "dims",
                "missing",
                "a list of dimensions in [1, 100]",
            ));
        }
        return Ok(default.to_vec());
    };
    given
        .into_vec()
        .into_iter()
        .map(|d| Ok(d.within("dims", 1, 100, "a dimension of the search box")? as usize))
        .collect()
}

/// The workload family `kind`, configured by `params`.
pub fn build(kind: &str, params: &toml::Table) -> Result<Box<dyn WorkloadSpec>> {
    crate::params::from_registry(REGISTRY, "kind", kind, params)
}
