//! The `propose-test` tuner: the [`Tuner`] adapter of propose-test with doubling (its
//! experiment-file parameters, guarantee and the session it starts), whose walk, passes,
//! certified cost and session are in [`crate::propose_test`].

use super::runs::State;
use super::{account, guarantee_of, read, BudgetPlan, Guarantee, SearchAccountant, Tuner};
use crate::accounting::accountant::Registered;
use crate::accounting::approximate::ApproxDp;
use crate::accounting::Accountant;
use crate::error::{fmt_num, Error, Range, Result};
use crate::params::Count;
use crate::propose_test::session::ProposeTestSession;
use crate::propose_test::{
    Composition, Fallback, PassBudget, ProposeTestDoubling, ScanOrder, Ticks,
};
use crate::workloads::require_private_training;
use crate::workloads::{require_partitioned_utility, Declarations, Workload};
use rand::RngCore;

/// Builds the tuner from experiment-file parameters.
pub fn build(params: &toml::Table) -> Result<Box<dyn Tuner>> {
    Ok(Box::new(ProposeTestDoubling::from_params(params)?))
}

/// The tuner's parameters as written in an experiment file (see `sims/README.md`).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    grid: Option<Count>,
    shards: Option<Count>,
    eps0: Option<f64>,
    tune_epsilon: Option<f64>,
    tune_share: Option<f64>,
    granularity: Option<f64>,
    u0: Option<f64>,
    u_max: Option<f64>,
    delta_prime: Option<f64>,
    composition: Option<String>,
    #[serde(default)]
    scan: ScanOrder,
    /// "uniform" or a candidate index.
    fallback: Option<toml::Value>,
}

impl ProposeTestDoubling {
    /// The tuner from experiment-file parameters (see `sims/README.md`).
    pub fn from_params(params: &toml::Table) -> Result<Self> {
        let p: Params = read("propose-test", params)?;
        let budget = match (p.eps0, p.tune_epsilon, p.tune_share) {
            (Some(e), None, None) => PassBudget::PerPass(e),
            (None, Some(t), None) => PassBudget::Tuning(t),
            (None, None, Some(s)) => PassBudget::Share(s),
            _ => {
                return Err(Error::invalid(
                    "eps0",
                    "none or several of eps0, tune_epsilon, tune_share",
                    "exactly one of them (ε0 per pass, the tests' total ε, or their share of an equal budget)",
                ))
            }
        };
        let ticks = Ticks::new(
            p.u0.unwrap_or(0.0),
            p.granularity.unwrap_or(0.01),
            p.u_max.unwrap_or(1.0),
        )?;
        let tuner = ProposeTestDoubling::new(
            p.shards.map_or(10, |k| k.0 as usize),
            budget,
            ticks,
            Composition::parse(p.composition.as_deref().unwrap_or("smallest"))?,
            p.delta_prime,
        )?
        .with_scan(p.scan)
        .with_fallback(match p.fallback {
            None => Fallback::UniformRandom,
            Some(toml::Value::String(s)) if s == "uniform" => Fallback::UniformRandom,
            Some(toml::Value::Integer(i)) if i >= 0 => Fallback::Index(i as usize),
            Some(other) => {
                return Err(Error::invalid(
                    "fallback",
                    other,
                    "\"uniform\" or a candidate index >= 0",
                ))
            }
        });
        match p.grid {
            Some(n) => tuner.with_grid(n.0 as usize),
            None => Ok(tuner),
        }
    }
}

impl Tuner for ProposeTestDoubling {
    fn name(&self) -> &'static str {
        "propose-test"
    }
    fn params(&self) -> String {
        let budget = match self.budget {
            PassBudget::PerPass(e) => format!("eps0={}", fmt_num(e)),
            PassBudget::Tuning(t) => format!("tune_epsilon={}", fmt_num(t)),
            PassBudget::Share(s) => format!("tune_share={}", fmt_num(s)),
        };
        // `grid` is named only when set, so earlier results keep their text.
        let grid = self
            .box_grid
            .map_or(String::new(), |n| format!(", grid={n} per axis"));
        format!(
            "k={}, {budget}, g={}, u0={}, u_max={}, M={}, T_max={}, delta_prime={}, composition={}, scan={:?}, fallback={:?}{grid}",
            self.shards,
            fmt_num(self.ticks.g),
            fmt_num(self.ticks.u0),
            fmt_num(self.ticks.u_max),
            self.ticks.cap(),
            self.ticks.max_passes(),
            self.delta_prime.map_or("delta/2".into(), fmt_num),
            self.composition.name(),
            self.scan,
            self.fallback,
        )
    }
    fn guarantee(
        &self,
        declared: &Declarations,
        delta: f64,
        accountant: &Accountant,
    ) -> Result<Guarantee> {
        self.candidates(&declared.space, declared.name.clone())?;
        let partitioned = declared.require_partitioned(self.name())?;
        self.check_shards(partitioned.private_validation_records, &declared.name)?;
        let training = declared.require_training(self.name())?;
        let delta = Range::OpenUnit.check("delta", delta)?;
        let delta_prime = self.delta_prime(delta);
        if delta_prime >= delta {
            return Err(Error::invalid(
                "delta_prime",
                fmt_num(delta_prime),
                format!(
                    "below the experiment's δ = {} (the final run needs the rest)",
                    fmt_num(delta)
                ),
            ));
        }
        let (eps0, tests) = self.certified_cost(delta_prime)?;
        let final_delta = delta - delta_prime;
        // The tests' cost is the walk's own (certified over T_max passes); the final run's is
        // its event's, at the δ left.
        let won = account(
            &training.run,
            final_delta,
            accountant,
            SearchAccountant::Best,
            &declared.name,
        )?;
        let run = guarantee_of(won, |key, name| match key {
            ApproxDp::KEY if training.run.pure_epsilon().is_some() => "final run (pure DP)".into(),
            ApproxDp::KEY => "final run ((ε, δ)-DP as declared)".into(),
            _ => format!("final run; {name}"),
        });
        Ok(Guarantee {
            epsilon: run.epsilon + tests.epsilon,
            delta: run.delta + tests.delta,
            theorem: format!(
                "propose-test (spec 003): {} composition of T_max = {} passes at ε0 = {} + {}",
                tests.composition.name(),
                self.ticks.max_passes(),
                fmt_num(eps0),
                run.theorem
            ),
        })
    }
    fn check_workload(&self, workload: &dyn Workload) -> Result<()> {
        self.candidates(workload.space(), workload.name())?;
        let pu = require_partitioned_utility(self.name(), workload)?;
        self.check_shards(pu.private_validation_records(), &workload.name())?;
        require_private_training(self.name(), workload).map(|_| ())
    }
    /// One word from `rng` keys the run's own streams (shard utilities, tests, fallback, final
    /// run), as the loop this replaces drew it.
    fn session(&self, declared: &Declarations, rng: &mut dyn RngCore) -> Result<State> {
        let space = &declared.space;
        let candidates = self
            .candidates(space, "the search space".into())?
            .into_owned();
        // δ′ is set whenever ε0 must be solved (`build` and `own_share_at_budget` see to it).
        let eps0 = self.eps0(self.delta_prime.unwrap_or(0.0))?;
        Ok(State::new(ProposeTestSession::new(
            self.clone(),
            candidates,
            eps0,
            rng.next_u64(),
        )))
    }
    fn budget_plan(&self, epsilon: f64, delta: f64) -> Result<BudgetPlan> {
        match self.budget {
            PassBudget::Share(s) => {
                let epsilon = Range::Positive.check("epsilon", epsilon)?;
                Range::OpenUnit.check("delta", delta)?;
                Ok(BudgetPlan::OwnShareThenRuns(Box::new(
                    ProposeTestDoubling {
                        budget: PassBudget::Tuning(s * epsilon),
                        delta_prime: Some(self.delta_prime(delta)),
                        ..self.clone()
                    },
                )))
            }
            _ => Ok(BudgetPlan::CalibrateRuns),
        }
    }
}
