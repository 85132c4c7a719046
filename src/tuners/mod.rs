//! The `Tuner` trait and the registry. A tuner reports its privacy guarantee from its parameters
//! and the workload's declared per-run privacy alone (before touching data), then tunes.
//!
//! Adding a tuner: one new file implementing [`Tuner`] (its guarantee and its session; `tune`
//! is provided), its session type ([`crate::session::SessionKind`]) and a `build` function, and one
//! line in `tuners!` (below), which declares the module and registers the tuner with its
//! session kinds. The harness, `dptune tune` and Python then drive it (`one_shot.rs` is the
//! smallest example).

pub mod runs;

pub use crate::session::{Observer, Outcome, TraceRow, MU, NOISE_STD, PASSES};

use crate::gibo::GiboSession;
use crate::gp_ucb::session::UcbSession;
use crate::session::{restorer, Restorer};
use runs::{BestOf, Threshold};

use crate::accounting::accountant::{self, Registered as _, Settings, Won};
use crate::accounting::event::CountLaw;
use crate::accounting::selection::bounds::bound_name;
use crate::accounting::selection::RunCount;
use crate::accounting::{approximate, Accountant, Event, PrivacyAccountant, Tightest};
use crate::error::Error;
use crate::error::Result;
use crate::workloads::Declarations;
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

impl Guarantee {
    /// Its (ε, δ), as a calibration compares it with a target.
    pub fn bound(&self) -> crate::accounting::DpBound {
        crate::accounting::DpBound {
            epsilon: self.epsilon,
            delta: self.delta,
            order: None,
        }
    }
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
    fn session(&self, declared: &Declarations, rng: &mut dyn RngCore) -> Result<runs::State>;
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
        let runs = runs::WorkloadRuns {
            tuner: self.name(),
            workload,
        };
        crate::session::drive_observed(&mut s, &runs, rng, observer)
    }
    /// Why its guarantee would not hold over evaluations made outside the library (a user's
    /// command under `dptune tune`, Python's ask/tell), if it would not: the evaluations must
    /// be exact in a way nothing here can check. The default: they may come from outside.
    fn outside_evaluations(&self) -> std::result::Result<(), &'static str> {
        Ok(())
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

/// A registered tuner: its name, its constructor from experiment-file parameters, and the
/// kinds of session it makes (how their saved states are read back).
pub struct RegisteredTuner {
    pub name: &'static str,
    pub build: Builder,
    pub sessions: &'static [Restorer],
}

/// One registry line.
const fn tuner(
    name: &'static str,
    build: Builder,
    sessions: &'static [Restorer],
) -> RegisteredTuner {
    RegisteredTuner {
        name,
        build,
        sessions,
    }
}

/// Declares each tuner's module and registers it in [`REGISTRY`] with the kinds of session it
/// makes: one line per tuner, `"name" => module::build, [SessionType, …]`.
macro_rules! tuners {
    ($($name:literal => $module:ident::build, [$($session:ty),* $(,)?]),* $(,)?) => {
        $(pub mod $module;)*
        /// The tuners, each with its session kinds: the one list a tuner is added to.
        pub const REGISTRY: &[RegisteredTuner] =
            &[$(tuner($name, $module::build, &[$(restorer::<$session>()),*])),*];
    };
}

// Each line names its module's path (`naive::build`): the code fingerprints follow it.
tuners! {
    "naive" => naive::build, [BestOf],
    "liu-talwar" => liu_talwar::build, [BestOf, Threshold],
    "papernot-steinke" => papernot_steinke::build, [BestOf],
    "gp-ucb" => gp_ucb::build, [UcbSession],
    "lipschitz-gain" => lipschitz_gain::build, [UcbSession],
    "propose-test" => propose_test_doubling::build, [crate::propose_test::session::ProposeTestSession],
    "dp-gibo" => dp_gibo::build, [GiboSession],
    "dp-gd" => dp_gd::build, [GiboSession],
    "one-shot" => one_shot::build, [one_shot::OneShotSession],
}

/// The tuner named `name`, configured by `params`.
pub fn build(name: &str, params: &toml::Table) -> Result<Box<dyn Tuner>> {
    match REGISTRY.iter().find(|t| t.name == name) {
        Some(t) => (t.build)(params),
        None => Err(Error::invalid(
            "tuner",
            name,
            format!("one of {}", names().join(", ")),
        )),
    }
}

/// The registered tuners' names.
pub fn names() -> Vec<&'static str> {
    REGISTRY.iter().map(|t| t.name).collect()
}

/// Every registered session kind (a kind several tuners make is listed by each).
pub(crate) fn session_kinds() -> impl Iterator<Item = &'static Restorer> {
    REGISTRY.iter().flat_map(|t| t.sessions.iter())
}

/// Repeat-and-select: K ~ `law`, then the best of K candidates drawn uniformly.
fn repeat_select_session(
    space: &Space,
    law: &RunCount,
    rng: &mut dyn RngCore,
) -> Result<runs::State> {
    let k = law.sample(rng);
    let s = BestOf::new(k, runs::Candidates::Drawn(space.clone()))?;
    Ok(runs::State::new(s))
}

/// Which accountants bound a tuner's search (naive's `accountant` parameter), each a
/// registered one: the smallest valid bound of them all (`best`, the default), or Rényi DP or
/// the privacy-loss distribution alone, with the (ε, δ)-DP theorems of pure and approximate DP
/// runs beside it (those hold whatever the accountant).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchAccountant {
    Rdp,
    Pld,
    #[default]
    Best,
}

impl SearchAccountant {
    pub fn name(self) -> &'static str {
        match self {
            SearchAccountant::Rdp => "rdp",
            SearchAccountant::Pld => "pld",
            SearchAccountant::Best => "best",
        }
    }

    /// The registered accountants it takes, in the order ties go in (a pure-DP theorem
    /// before Rényi DP before the PLD: results computed before the PLD existed keep their
    /// theorem where it ties).
    fn keys(self) -> &'static [&'static str] {
        match self {
            SearchAccountant::Rdp => &["approx-dp", "rdp"],
            SearchAccountant::Pld => &["approx-dp", "pld"],
            SearchAccountant::Best => &["approx-dp", "rdp", "pld"],
        }
    }
}

/// The bound at `delta` of a tuner's whole search, described by `event`, from the accountants
/// `choice` takes (Rényi DP with the caller's `settings`): the smallest any of them proves,
/// and which one. `workload` names the workload in messages.
pub(crate) fn account(
    event: &Event,
    delta: f64,
    settings: &Accountant,
    choice: SearchAccountant,
    workload: &str,
) -> Result<Won> {
    let settings = Settings {
        rdp: settings.clone(),
        ..Settings::default()
    };
    let members = choice
        .keys()
        .iter()
        .map(|key| accountant::build(key, &settings))
        .collect::<Result<Vec<_>>>()?;
    if choice == SearchAccountant::Pld {
        if let Err(why) = members[1].supports(event) {
            return Err(Error::invalid(
                "accountant",
                "\"pld\"",
                format!(
                    "\"rdp\" or \"best\": `{workload}` does not declare its runs for the PLD \
                     accountant ({why})"
                ),
            ));
        }
    }
    let mut all = Tightest::new(members)?;
    if choice != SearchAccountant::Pld {
        all.compose(event)?;
        return all.epsilon_won(delta);
    }
    // Named as the choice it is: the grid's parameters are not the user's to set here.
    let by_pld = all
        .compose(event)
        .and_then(|()| all.epsilon_won_requiring(delta, "pld"));
    by_pld.map_err(|e| match e {
        e @ Error::InvalidParameter { .. } => e,
        e => Error::invalid(
            "accountant",
            "\"pld\"",
            format!(
                "\"rdp\" or \"best\" here: the PLD accountant gives no bound for these runs ({e})"
            ),
        ),
    })
}

/// The guarantee of a bound `won`, its theorem in the words `theorem` gives for the winner's
/// key and name.
fn guarantee_of(won: Won, theorem: impl FnOnce(&str, &str) -> String) -> Guarantee {
    Guarantee {
        epsilon: won.bound.epsilon,
        delta: won.bound.delta,
        theorem: theorem(won.key, &won.accountant),
    }
}

/// The repeat-and-select guarantee: K ~ `count` runs of the workload's run, the best
/// released. Rényi DP by Papernot–Steinke's theorems, or, with a pure-DP run and a TNB law,
/// Corollary 3's (2+η)ε where smaller. The PLD takes no part: Papernot–Steinke's theorems
/// bound the RDP of the selection from the RDP of one run (at orders λ and λ̂ together), and no
/// PLD analogue of them is known; a PLD of the K runs would bound their composition, not the
/// release of the best.
fn repeat_select_guarantee(
    declared: &Declarations,
    tuner: &str,
    law: &RunCount,
    count: &CountLaw,
    delta: f64,
    accountant: &Accountant,
) -> Result<Guarantee> {
    let training = declared.require_training(tuner)?;
    let event = Event::repeat_and_select(count.clone(), training.run.clone())?;
    let won = account(
        &event,
        delta,
        accountant,
        SearchAccountant::Rdp,
        &declared.name,
    )?;
    Ok(guarantee_of(won, |key, name| match key {
        // Corollary 3 over a pure-DP run, or an approximate-DP base (TNB or Poisson).
        approximate::ApproxDp::KEY => approximate::ApproxDp::rule(&event, Some(delta))
            .map_or(approximate::TNB_PURE, |r| r.theorem)
            .to_string(),
        _ => format!("{}; {name}", bound_name(law)),
    }))
}
