//! The `propose-test` tuner: the [`Tuner`] adapter of propose-test with doubling, whose walk,
//! passes and certified cost are in [`crate::propose_test`] (re-exported here).

pub use crate::propose_test::*;

use super::session::{unfinished, Evaluation, Next, Progress, Session, State, Told};
use super::{
    account, guarantee_of, BudgetPlan, Guarantee, Outcome, SearchAccountant, Tuner, PASSES,
};
use crate::accounting::accountant::Registered;
use crate::accounting::approx_dp::ApproxDp;
use crate::accounting::Accountant;
use crate::data::uniform_below;
use crate::error::{Error, Range, Result};
use crate::numeric::fmt_num;
use crate::rng::stream;
use crate::workloads::require_private_training;
use crate::workloads::{require_partitioned_utility, Declarations, Hyper, Workload};
use rand::RngCore;

/// Stream tags of one run's independent sub-streams.
const SHARD_STREAM: u64 = 0x7368_6172;
const TEST_STREAM: u64 = 0x7465_7374;
const FALLBACK_STREAM: u64 = 0x6661_6c6c;
const TRAIN_STREAM: u64 = 0x7472_6169;

/// Builds the tuner from experiment-file parameters.
pub fn build(params: &toml::Table) -> Result<Box<dyn Tuner>> {
    Ok(Box::new(ProposeTestDoubling::from_params(params)?))
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
        Ok(State::ProposeTest(Box::new(ProposeTestSession {
            tuner: self.clone(),
            candidates,
            eps0,
            base: rng.next_u64(),
            progress: Progress::default(),
            stage: Stage::Utilities,
        })))
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

/// Propose-test as a session: the shard utilities of every candidate (one evaluation), the
/// walk on their means (drawing from the run's own streams), then the final private run at
/// the candidate it selected (or the fallback).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ProposeTestSession {
    tuner: ProposeTestDoubling,
    candidates: Vec<Hyper>,
    eps0: f64,
    /// The key of the run's streams.
    base: u64,
    pub(crate) progress: Progress,
    stage: Stage,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
enum Stage {
    Utilities,
    /// The walk is over: train `chosen`.
    Final {
        chosen: usize,
        passes: usize,
        fallback: bool,
    },
    Released {
        chosen: usize,
        passes: usize,
        fallback: bool,
        score: f64,
    },
}

impl ProposeTestSession {
    /// k runs per candidate, then the final one.
    pub fn planned_runs(&self) -> u64 {
        (self.tuner.shards * self.candidates.len()) as u64 + 1
    }
}

impl Session for ProposeTestSession {
    fn ask(&mut self, _rng: &mut dyn RngCore) -> Result<Next> {
        if !self.progress.pending.is_empty() {
            return Ok(Next::Wait);
        }
        Ok(match &self.stage {
            Stage::Utilities => self.progress.start_with(
                Vec::new(),
                Evaluation::ShardUtilities {
                    candidates: self.candidates.clone(),
                    shards: self.tuner.shards,
                },
                Some((self.base, SHARD_STREAM)),
            ),
            Stage::Final { chosen, .. } => self.progress.start_with(
                self.candidates[*chosen].clone(),
                Evaluation::Train,
                Some((self.base, TRAIN_STREAM)),
            ),
            Stage::Released { .. } => Next::Done,
        })
    }

    fn tell(&mut self, index: u64, told: Told) -> Result<()> {
        // The utilities are checked before the trial counts as answered: a table out of [0, 1]
        // is refused and leaves the session as it was (the trial still pending).
        let n = self.candidates.len();
        let utilities = match (&self.stage, &told) {
            (Stage::Utilities, Told::Utilities(a)) => {
                Some(proxy_utilities(a, n, self.tuner.shards)?)
            }
            _ => None,
        };
        let (_, told) = self.progress.told(index, told)?;
        self.stage = match (&self.stage, told, utilities) {
            (Stage::Utilities, Told::Utilities(_), Some(u)) => {
                let walk =
                    self.tuner
                        .walk_on(&u, self.eps0, &mut stream(self.base, &[TEST_STREAM]));
                let chosen = match (walk.selected, self.tuner.fallback) {
                    (Some(j), _) => j,
                    (None, Fallback::Index(i)) => i,
                    (None, Fallback::UniformRandom) => {
                        uniform_below(&mut stream(self.base, &[FALLBACK_STREAM]), n as u64) as usize
                    }
                };
                Stage::Final {
                    chosen,
                    passes: walk.passes.len(),
                    fallback: walk.selected.is_none(),
                }
            }
            (
                &Stage::Final {
                    chosen,
                    passes,
                    fallback,
                },
                Told::Score(score),
                _,
            ) => Stage::Released {
                chosen,
                passes,
                fallback,
                score,
            },
            _ => {
                return Err(Error::Infeasible(
                    "propose-test was told something it did not ask for".into(),
                ))
            }
        };
        Ok(())
    }

    fn finish(&self) -> Result<Outcome> {
        let Stage::Released {
            chosen,
            passes,
            fallback,
            score,
        } = self.stage
        else {
            return unfinished(&self.progress, true).map(|()| Outcome::default());
        };
        Ok(Outcome {
            chosen: Some(self.candidates[chosen].clone()),
            released_score: Some(score),
            runs: self.planned_runs(),
            diagnostics: vec![(PASSES, passes as f64)],
            fallback,
        })
    }
}
