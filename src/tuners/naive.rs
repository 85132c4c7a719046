//! Naive composition: train every candidate of a finite space once, or `candidates` uniform
//! draws (any space), and keep the best. Privacy: k-fold RDP composition, or for pure-DP runs the optimal
//! composition of Kairouz–Oh–Viswanath when that is smaller (basic composition for (ε, δ)
//! runs); where the PLD accountant supports the workload's run, the privacy-loss distribution
//! of the k runs when that is smaller (`accountant = "rdp" | "pld" | "best"`, default best).
//! The search's event is the run self-composed k times, accounted by [`super::account`].

use super::runs::{BestOf, Candidates, State};
use super::{account, guarantee_of, read, Count, Guarantee, SearchAccountant, Tuner};
use crate::accounting::accountant::Registered;
use crate::accounting::approximate::{self, ApproxDp};
use crate::accounting::pld_events::Pld;
use crate::accounting::{Accountant, Event};
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
    pub accountant: SearchAccountant,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    candidates: Option<Count>,
    accountant: Option<SearchAccountant>,
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
            accountant: SearchAccountant::Best,
        }
    }

    /// `candidates` uniform draws from the search space (any space), each trained once.
    pub fn random(candidates: u64) -> Result<Self> {
        if candidates == 0 {
            return Err(Error::invalid("candidates", 0, "an integer >= 1"));
        }
        Ok(Naive {
            candidates: Some(candidates),
            accountant: SearchAccountant::Best,
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
            SearchAccountant::Best => runs,
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
        let event = Event::self_composed(k, training.run.clone())?;
        let won = account(&event, delta, accountant, self.accountant, &declared.name)?;
        Ok(guarantee_of(won, |key, name| match key {
            // Optimal composition of pure-DP runs, or (ε, δ) runs' basic composition.
            ApproxDp::KEY => match ApproxDp::rule(&event, Some(delta)).map(|r| r.theorem) {
                Ok(approximate::BASIC) => format!("basic composition of {k} runs"),
                _ => approximate::KOV.to_string(),
            },
            Pld::KEY => format!("PLD composition of {k} runs; {name}"),
            _ => format!("RDP composition of {k} runs; {name}"),
        }))
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
        Ok(State::new(BestOf::new(k, candidates)?))
    }
}
