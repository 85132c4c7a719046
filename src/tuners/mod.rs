//! The `Tuner` trait and the registry. A tuner reports its privacy guarantee from its parameters
//! and the workload's declared per-run privacy alone (before touching data), then tunes.
//!
//! Adding a tuner: one new file implementing [`Tuner`] (its guarantee and its session; `tune`
//! is provided) plus a `build` function, and one line in [`REGISTRY`].

pub mod dp_gd;
pub mod dp_gibo;
pub mod gp_ucb;
pub mod lipschitz_gain;
pub mod liu_talwar;
pub mod naive;
pub mod papernot_steinke;
pub mod propose_test;
pub mod session;

pub use crate::session::{Observer, Outcome, TraceRow, MU, NOISE_STD, PASSES};

use crate::accounting::pld::{accountant_name, composed_epsilon, DEFAULT_INTERVAL};
use crate::accounting::pld_events::Pld;
use crate::accounting::{rdp_events, Accountant, DpBound, RdpCurve};
use crate::error::Error;
use crate::error::Result;
use crate::selection::bounds::{bound_name, repeat_select, Base};
use crate::selection::{RunCount, Tnb};
use crate::workloads::{Declarations, TrainingDeclaration};
use crate::workloads::{Space, Workload};
use rand::RngCore;
use rand_distr::Distribution;

pub(crate) use crate::params::{given, Count};

/// Reads tuner `tuner`'s parameters into their typed form (unknown keys refused).
pub(crate) fn read<T: serde::de::DeserializeOwned>(tuner: &str, params: &toml::Table) -> Result<T> {
    crate::params::read(&format!("tuner `{tuner}`"), params)
}

/// A data-independent (ε, δ) guarantee and the result it rests on.
#[derive(Clone, Debug, PartialEq)]
pub struct Guarantee {
    pub epsilon: f64,
    pub delta: f64,
    pub theorem: String,
}

pub trait Tuner: Send + Sync {
    /// The registry name (used in experiment files and in the `tuner` column).
    fn name(&self) -> &'static str;
    /// Its parameters, for result tables.
    fn params(&self) -> String;
    /// The guarantee, from the tuner's parameters and the workload's declarations alone (its
    /// space, per-run privacy, priors and assumptions): the signature admits no data.
    fn guarantee(
        &self,
        declared: &Declarations,
        delta: f64,
        accountant: &Accountant,
    ) -> Result<Guarantee>;
    /// This tuner's run as an ask/tell session ([`session`]) over what `declared` says (its
    /// space; DP-GIBO's users and box), the draws it makes before its first run
    /// (repeat-and-select's count K, DP-GIBO's seed) taken from `rng`. Every way of tuning
    /// (the harness, `dptune tune`, Python) drives this session.
    fn session(&self, declared: &Declarations, rng: &mut dyn RngCore) -> Result<session::State>;
    /// What the session's evaluations need of `workload` beyond its declarations, checked
    /// before any draw (repeat-and-select refuses a workload without private training even
    /// where its K = 0 would never train). The default: nothing.
    fn check_workload(&self, workload: &dyn Workload) -> Result<()> {
        let _ = workload;
        Ok(())
    }
    /// One tuning run with its own random stream: the session driven over the workload's
    /// evaluations.
    fn tune(&self, workload: &dyn Workload, rng: &mut dyn RngCore) -> Result<Outcome> {
        self.tune_observed(workload, rng, &mut |_: &TraceRow| {})
    }
    /// [`Tuner::tune`], reporting what each tell did to `observer` (trace studies). Observing
    /// never changes the run: same draws, same outcome.
    fn tune_observed(
        &self,
        workload: &dyn Workload,
        rng: &mut dyn RngCore,
        observer: &mut dyn Observer,
    ) -> Result<Outcome> {
        self.check_workload(workload)?;
        let mut s = self.session(&Declarations::of(workload), rng)?;
        let runs = session::WorkloadRuns {
            tuner: self.name(),
            workload,
        };
        session::drive_observed(&mut s, &runs, rng, observer)
    }
    /// How this tuner meets an equal privacy budget of (ε, δ) in total (the harness's
    /// equal-budget mode). The default: its privacy is that of the workload's runs, whose noise
    /// the harness calibrates. An invalid target is an error, never a NaN parameter.
    fn budget_plan(&self, _epsilon: f64, _delta: f64) -> Result<BudgetPlan> {
        Ok(BudgetPlan::CalibrateRuns)
    }
}

/// The three ways a tuner meets an equal budget (ε, δ).
pub enum BudgetPlan {
    /// Its privacy is that of the workload's runs: the harness calibrates their noise so that
    /// the tuner's guarantee meets (ε, δ).
    CalibrateRuns,
    /// Its privacy comes from its own releases (GP-UCB, DP-GIBO, …): this copy spends at most
    /// (ε, δ) in total, and the runs' noise plays no part.
    Own(Box<dyn Tuner>),
    /// It spends a share itself (propose-test's tests) and the rest through the runs: this
    /// copy has its share set, and the harness calibrates the runs' noise for the whole.
    OwnShareThenRuns(Box<dyn Tuner>),
}

impl BudgetPlan {
    /// The configured copy, if the plan has one.
    pub fn tuner(&self) -> Option<&dyn Tuner> {
        match self {
            BudgetPlan::CalibrateRuns => None,
            BudgetPlan::Own(t) | BudgetPlan::OwnShareThenRuns(t) => Some(t.as_ref()),
        }
    }
}

type Builder = crate::params::Builder<Box<dyn Tuner>>;

/// Registry names → constructors from experiment-file parameters.
pub const REGISTRY: &[(&str, Builder)] = &[
    ("naive", naive::build),
    ("liu-talwar", liu_talwar::build),
    ("papernot-steinke", papernot_steinke::build),
    ("gp-ucb", gp_ucb::build),
    ("lipschitz-gain", lipschitz_gain::build),
    ("propose-test", propose_test::build),
    ("dp-gibo", dp_gibo::build),
    ("dp-gd", dp_gd::build),
];

/// The tuner named `name`, configured by `params`.
pub fn build(name: &str, params: &toml::Table) -> Result<Box<dyn Tuner>> {
    crate::params::from_registry(REGISTRY, "tuner", name, params)
}

/// Repeat-and-select: K ~ `law`, then the best of K candidates drawn uniformly.
fn repeat_select_session(
    space: &Space,
    law: &RunCount,
    rng: &mut dyn RngCore,
) -> Result<session::State> {
    let k = law.sample(rng);
    let s = session::BestOf::new(k, session::Candidates::Drawn(space.clone()))?;
    Ok(session::State::BestOf(s))
}

/// One run's Rényi curve, from the event the workload declares.
fn run_curve(training: &TrainingDeclaration, accountant: &Accountant) -> Result<RdpCurve> {
    rdp_events::curve(&training.run, accountant)
}

/// One run as the PLD accountant composes it, where it supports the run's event.
fn run_pld(training: &TrainingDeclaration) -> Result<Option<crate::accounting::pld::PldRun>> {
    Pld::run_of(&training.run)
}

/// The repeat-and-select guarantee; with a pure-DP run and a TNB law, Corollary 3's
/// (2+η)ε is used when smaller. It stays in Rényi DP even where the workload declares its run
/// for the PLD accountant: Papernot–Steinke's theorems bound the RDP of the selection from the
/// RDP of one run (at orders λ and λ̂ together), and no PLD analogue of them is known; a PLD
/// of the K runs would bound their composition, not the release of the best.
fn repeat_select_guarantee(
    training: &TrainingDeclaration,
    law: &RunCount,
    delta: f64,
    accountant: &Accountant,
) -> Result<Guarantee> {
    let base = Base::symmetric(run_curve(training, accountant)?);
    let curve = repeat_select(&base, law, &accountant.orders)?;
    let rdp = accountant.epsilon(&curve, delta)?;
    let pure = match (training.run.pure_epsilon(), law) {
        (Some(eps), RunCount::Tnb(t)) => Some(pure_tnb(eps, t)),
        _ => None,
    };
    Ok(tighter_of(
        rdp,
        pure,
        bound_name(law),
        &accountant.name(),
        "Papernot–Steinke Corollary 3 (pure DP)",
    ))
}

fn pure_tnb(eps: f64, t: &Tnb) -> f64 {
    (2.0 + t.eta()) * eps
}

/// The smaller of an RDP-route bound and a pure-DP bound (δ = 0 ≤ δ).
fn tighter_of(
    rdp: DpBound,
    pure: Option<f64>,
    rdp_name: String,
    accountant_name: &str,
    pure_name: &str,
) -> Guarantee {
    match pure {
        Some(p) if p <= rdp.epsilon => Guarantee {
            epsilon: p,
            delta: rdp.delta,
            theorem: pure_name.to_string(),
        },
        _ => Guarantee {
            epsilon: rdp.epsilon,
            delta: rdp.delta,
            theorem: format!("{rdp_name}; {accountant_name}"),
        },
    }
}

/// Which accountant bounds a composition of private runs (a tuner's `accountant` parameter):
/// Rényi DP, the privacy-loss distribution (where the workload declares its run as the PLD
/// accountant composes it), or the smaller of the two valid upper bounds (the default).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunsAccountant {
    Rdp,
    Pld,
    #[default]
    Best,
}

impl RunsAccountant {
    pub fn name(self) -> &'static str {
        match self {
            RunsAccountant::Rdp => "rdp",
            RunsAccountant::Pld => "pld",
            RunsAccountant::Best => "best",
        }
    }
}

/// A composition's bound and the accountant that gave it.
pub(crate) struct RunsBound {
    pub bound: DpBound,
    /// Whether the PLD bound was the one taken.
    pub by_pld: bool,
    /// The accountant's name as results record it.
    pub accountant: String,
}

/// The bound `choice` picks for a composition of runs: `rdp` (its RDP bound at `delta`) or
/// the PLD bound of `pld` (the same composition's mechanisms, when the workload declares them).
pub(crate) fn runs_bound(
    choice: RunsAccountant,
    rdp: DpBound,
    pld: Option<&[(crate::accounting::pld::PldMechanism, u64)]>,
    delta: f64,
    accountant: &Accountant,
    workload: &str,
) -> Result<RunsBound> {
    let by_rdp = |bound| RunsBound {
        bound,
        by_pld: false,
        accountant: accountant.name(),
    };
    let parts = match (choice, pld) {
        (RunsAccountant::Rdp, _) | (RunsAccountant::Best, None) => return Ok(by_rdp(rdp)),
        (RunsAccountant::Pld, None) => {
            return Err(Error::invalid(
                "accountant",
                "\"pld\"",
                format!(
                    "\"rdp\" or \"best\": `{workload}` does not declare its runs for the PLD \
                     accountant"
                ),
            ))
        }
        (_, Some(parts)) => parts,
    };
    let pld_bound = |bound| RunsBound {
        bound,
        by_pld: true,
        accountant: accountant_name(DEFAULT_INTERVAL),
    };
    let by_pld = composed_epsilon(parts, delta, DEFAULT_INTERVAL);
    match choice {
        // Named as the choice it is: the grid's parameters are not the user's to set here.
        RunsAccountant::Pld => by_pld.map(pld_bound).map_err(|e| {
            Error::invalid(
                "accountant",
                "\"pld\"",
                format!(
                    "\"rdp\" or \"best\" here: the PLD accountant gives no bound for these runs \
                     ({e})"
                ),
            )
        }),
        // The smaller of two valid bounds; where the PLD gives none (its grid's memory bound,
        // a δ below its resolution), RDP's stands.
        _ => Ok(match by_pld {
            Ok(p) if p.epsilon < rdp.epsilon => pld_bound(p),
            _ => by_rdp(rdp),
        }),
    }
}
