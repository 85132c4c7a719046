//! The `propose-test` tuner: the [`Tuner`] adapter of propose-test with doubling, whose walk,
//! passes and certified cost are in [`crate::propose_test`] (re-exported here).

pub use crate::propose_test::*;

use super::{tighter_of, BudgetPlan, Guarantee, Outcome, Tuner, PASSES};
use crate::accounting::Accountant;
use crate::data::uniform_below;
use crate::error::{Error, Range, Result};
use crate::numeric::fmt_num;
use crate::rng::stream;
use crate::workloads::{
    require_partitioned_utility, require_private_training, Declarations, Workload,
};
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
        let run = accountant.epsilon(&training.run_privacy, final_delta)?;
        let run = tighter_of(
            run,
            training.run_pure_epsilon,
            "final run".into(),
            accountant,
            "final run (pure DP)",
        );
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
    fn tune(&self, workload: &dyn Workload, rng: &mut dyn RngCore) -> Result<Outcome> {
        let candidates = self.candidates(workload.space(), workload.name())?;
        let pu = require_partitioned_utility(self.name(), workload)?;
        self.check_shards(pu.private_validation_records(), &workload.name())?;
        let training = require_private_training(self.name(), workload)?;
        // δ′ is set whenever ε0 must be solved (`build` and `own_share_at_budget` see to it).
        let eps0 = self.eps0(self.delta_prime.unwrap_or(0.0))?;
        let base = rng.next_u64();
        let a = pu.shard_utilities(&candidates, self.shards, &mut stream(base, &[SHARD_STREAM]))?;
        let u = proxy_utilities(&a, candidates.len(), self.shards)?;
        let walk = self.walk_on(&u, eps0, &mut stream(base, &[TEST_STREAM]));
        let chosen = match (walk.selected, self.fallback) {
            (Some(j), _) => j,
            (None, Fallback::Index(i)) => i,
            (None, Fallback::UniformRandom) => uniform_below(
                &mut stream(base, &[FALLBACK_STREAM]),
                candidates.len() as u64,
            ) as usize,
        };
        let h = candidates[chosen].clone();
        let score = training.train(&h, &mut stream(base, &[TRAIN_STREAM]));
        Ok(Outcome {
            chosen: Some(h),
            released_score: Some(score),
            runs: (self.shards * candidates.len()) as u64 + 1,
            diagnostics: vec![(PASSES, walk.passes.len() as f64)],
            fallback: walk.selected.is_none(),
        })
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
