//! What a workload declares before any data is seen, as plain values: the search space, the
//! privacy of one run, priors and assumptions, sizes. [`crate::tuners::Tuner::guarantee`] takes
//! these and never the workload, so the type itself says that a guarantee cannot depend on the
//! data (there is nothing here to read it through).

use super::{GainPrior, LipschitzAssumption, PerUserLosses, Space, Workload};
use crate::accounting::Event;
use crate::error::{Error, Result};

/// The declarations of one workload instance.
#[derive(Clone, Debug)]
pub struct Declarations {
    /// The workload's name (for messages).
    pub name: String,
    /// The search space (public: a grid drawn from the seed, or the unit box).
    pub space: Space,
    /// Declared with the private-training capability.
    pub training: Option<TrainingDeclaration>,
    /// The GP prior of the validation gain (private GP-UCB).
    pub gain_prior: Option<GainPrior>,
    /// Assumption 2 of spec 002 (the Lipschitz-gain tuner).
    pub lipschitz: Option<LipschitzAssumption>,
    /// Declared with per-shard utilities (propose-test).
    pub partitioned: Option<PartitionedDeclaration>,
    /// Declared with per-user losses (DP-GIBO, DP-GD).
    pub per_user: Option<PerUserDeclaration>,
}

/// The privacy of one private training run, the same for every hyperparameter.
#[derive(Clone, Debug)]
pub struct TrainingDeclaration {
    /// What one run releases ([`super::PrivateTraining::run_event`]).
    pub run: Event,
}

/// What subsample-and-aggregate needs to know in advance.
#[derive(Clone, Debug, PartialEq)]
pub struct PartitionedDeclaration {
    /// The number of private validation records (None: only training data is private).
    pub private_validation_records: Option<usize>,
}

/// The public facts about per-user losses.
#[derive(Clone, Debug, PartialEq)]
pub struct PerUserDeclaration {
    pub n_users: usize,
    /// The native box the unit box maps to.
    pub domain: Vec<(f64, f64)>,
    /// The standard deviation of the evaluation noise of each loss.
    pub evaluation_sd: f64,
    /// The prior lengthscales the objective was drawn from, when declared.
    pub prior_lengthscales: Option<Vec<f64>>,
    /// The privacy event of one evaluation for data other than the users
    /// ([`PerUserLosses::evaluation_event`]).
    pub evaluation: Option<Event>,
}

impl PerUserDeclaration {
    /// The declared parts of per-user losses.
    pub fn of(l: &dyn PerUserLosses) -> Self {
        PerUserDeclaration {
            n_users: l.n_users(),
            domain: l.domain().to_vec(),
            evaluation_sd: l.evaluation_sd(),
            prior_lengthscales: l.prior_lengthscales(),
            evaluation: l.evaluation_event().cloned(),
        }
    }
}

/// What each capability is called in messages (one home for these words).
pub(crate) const TRAINING: &str = "private training runs";
pub(crate) const GAIN_PRIOR: &str = "validation-gain evaluations with a declared GP prior";
pub(crate) const LIPSCHITZ: &str =
    "exact validation gains of an L2-regularised, strongly convex model (Assumption 2)";
pub(crate) const PARTITIONED: &str =
    "per-shard validation utilities in [0, 1] (subsample-and-aggregate)";
pub(crate) const PER_USER: &str = "per-user validation losses";

impl Declarations {
    /// The declarations of `w` (its capabilities' declared parts only).
    pub fn of(w: &dyn Workload) -> Self {
        Declarations {
            name: w.name(),
            space: w.space().clone(),
            training: w.private_training().map(|t| TrainingDeclaration {
                run: t.run_event().clone(),
            }),
            gain_prior: w.validation_gain().map(|g| g.prior().clone()),
            lipschitz: w.regularised_gain().map(|g| g.assumption().clone()),
            partitioned: w.partitioned_utility().map(|p| PartitionedDeclaration {
                private_validation_records: p.private_validation_records(),
            }),
            per_user: w.per_user_losses().map(PerUserDeclaration::of),
        }
    }

    /// A workload `name` that declares only its space.
    pub fn of_space(name: impl Into<String>, space: Space) -> Self {
        Declarations {
            name: name.into(),
            space,
            training: None,
            gain_prior: None,
            lipschitz: None,
            partitioned: None,
            per_user: None,
        }
    }

    fn missing(&self, tuner: &str, what: &str) -> Error {
        Error::missing_capability(format!("tuner `{tuner}`"), what, self.name.clone())
    }

    pub fn require_training(&self, tuner: &str) -> Result<&TrainingDeclaration> {
        self.training
            .as_ref()
            .ok_or_else(|| self.missing(tuner, TRAINING))
    }

    pub fn require_gain_prior(&self, tuner: &str) -> Result<&GainPrior> {
        self.gain_prior
            .as_ref()
            .ok_or_else(|| self.missing(tuner, GAIN_PRIOR))
    }

    pub fn require_lipschitz(&self, tuner: &str) -> Result<&LipschitzAssumption> {
        self.lipschitz
            .as_ref()
            .ok_or_else(|| self.missing(tuner, LIPSCHITZ))
    }

    pub fn require_partitioned(&self, tuner: &str) -> Result<&PartitionedDeclaration> {
        self.partitioned
            .as_ref()
            .ok_or_else(|| self.missing(tuner, PARTITIONED))
    }

    pub fn require_per_user(&self, tuner: &str) -> Result<&PerUserDeclaration> {
        self.per_user
            .as_ref()
            .ok_or_else(|| self.missing(tuner, PER_USER))
    }
}
