//! Naive composition: train every candidate of a finite space once, or `candidates` uniform
//! draws (any space), and keep the best. Privacy: k-fold RDP composition, or for pure-DP runs the optimal
//! composition of Kairouz–Oh–Viswanath when that is smaller; where the workload declares its
//! run for the PLD accountant, the privacy-loss distribution of the k runs when that is
//! smaller (`accountant = "rdp" | "pld" | "best"`, default best).

use super::session::{BestOf, Candidates, State};
use super::{
    read, run_curve, run_pld, runs_bound, tighter_of, Count, Guarantee, RunsAccountant, Tuner,
};
use crate::accounting::composition::kov_epsilon;
use crate::accounting::pld::repeated;
use crate::accounting::Accountant;
use crate::error::{Error, Result};
use crate::workloads::require_private_training;
use crate::workloads::Declarations;
use crate::workloads::{Space, Workload};
use rand::RngCore;

#[derive(Clone, Debug, PartialEq)]
pub struct Naive {
    /// Number of runs for a box search space (a finite space runs every candidate once).
    pub candidates: Option<u64>,
    /// Which accountant bounds the composition of the runs.
    pub accountant: RunsAccountant,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    candidates: Option<Count>,
    accountant: Option<RunsAccountant>,
}

pub fn build(params: &toml::Table) -> Result<Box<dyn Tuner>> {
    let p: Params = read("naive", params)?;
    let naive = match p.candidates {
        Some(Count(k)) => Naive::random(k)?,
        None => Naive::every_candidate(),
    };
    Ok(Box::new(Naive {
        accountant: p.accountant.unwrap_or_default(),
        ..naive
    }))
}

impl Naive {
    /// Every candidate of a finite search space, once.
    pub fn every_candidate() -> Self {
        Naive {
            candidates: None,
            accountant: RunsAccountant::Best,
        }
    }

    /// `candidates` uniform draws from the search space (any space), each trained once.
    pub fn random(candidates: u64) -> Result<Self> {
        if candidates == 0 {
            return Err(Error::invalid("candidates", 0, "an integer >= 1"));
        }
        Ok(Naive {
            candidates: Some(candidates),
            accountant: RunsAccountant::Best,
        })
    }

    fn runs(&self, space: &Space) -> Result<u64> {
        match (space, self.candidates) {
            (_, Some(k)) => Ok(k),
            (Space::Finite(c), None) => Ok(c.len() as u64),
            (Space::UnitBox { .. }, None) => Err(Error::invalid(
                "candidates",
                "missing",
                "an integer >= 1 (needed for a continuous search space)",
            )),
        }
    }
}

impl Tuner for Naive {
    fn name(&self) -> &'static str {
        "naive"
    }
    fn params(&self) -> String {
        let runs = self
            .candidates
            .map_or("every candidate".into(), |k| format!("candidates={k}"));
        match self.accountant {
            RunsAccountant::Best => runs,
            a => format!("{runs}, accountant={}", a.name()),
        }
    }
    fn guarantee(
        &self,
        declared: &Declarations,
        delta: f64,
        accountant: &Accountant,
    ) -> Result<Guarantee> {
        let training = declared.require_training(self.name())?;
        let k = self.runs(&declared.space)?;
        let rdp = accountant.epsilon(&run_curve(training, accountant)?.self_compose(k), delta)?;
        let pld = match run_pld(training)? {
            Some(run) => Some(repeated(&run, k)?),
            None => None,
        };
        let runs = runs_bound(
            self.accountant,
            rdp,
            pld.as_deref(),
            delta,
            accountant,
            &declared.name,
        )?;
        let pure = match training.run.pure_epsilon() {
            Some(eps) => Some(kov_epsilon(eps, k, delta)?.epsilon),
            None => None,
        };
        Ok(tighter_of(
            runs.bound,
            pure,
            format!(
                "{} composition of {k} runs",
                if runs.by_pld { "PLD" } else { "RDP" }
            ),
            &runs.accountant,
            "Kairouz–Oh–Viswanath optimal composition",
        ))
    }
    fn check_workload(&self, workload: &dyn Workload) -> Result<()> {
        require_private_training(self.name(), workload).map(|_| ())
    }
    /// Every listed candidate once, in order, or k drawn ones.
    fn session(&self, declared: &Declarations, _rng: &mut dyn RngCore) -> Result<State> {
        let space = &declared.space;
        let k = self.runs(space)?;
        let candidates = match (space, self.candidates) {
            (Space::Finite(list), None) => {
                Candidates::Listed(list.iter().take(k as usize).cloned().collect())
            }
            _ => Candidates::Drawn(space.clone()),
        };
        Ok(State::BestOf(BestOf::new(k, candidates)?))
    }
}
