//! Liu–Talwar (2019): geometric K, best of K runs (3ε for a pure ε-DP run; Theorem 2 with η = 1
//! for RDP runs), or the threshold variant: each round halts with probability p (a data-
//! independent ⊥, so Q(S) ≥ p), otherwise runs once and stops at the first score ≥ threshold
//! (2ε for pure runs, Corollary 16(1); Corollary 16(2) for RDP runs).

use super::runs::{State, Threshold};
use super::{
    account, given, guarantee_of, read, repeat_select_guarantee, repeat_select_session, Guarantee,
    SearchAccountant, Tuner,
};
use crate::accounting::accountant::Registered;
use crate::accounting::approximate::{self, ApproxDp};
use crate::accounting::event::CountLaw;
use crate::accounting::{Accountant, Event};
use crate::error::{Error, Range, Result};
use crate::accounting::selection::{RunCount, Tnb};
use crate::workloads::require_private_training;
use crate::workloads::Declarations;
use crate::workloads::Workload;
use rand::RngCore;

#[derive(Clone, Debug, PartialEq)]
pub enum LiuTalwar {
    /// K ~ geometric with this mean (`count`: the law as the search's privacy event states it).
    BestOf { law: RunCount, count: CountLaw },
    /// Stop at the first score ≥ `threshold`; halt with probability `halt_probability` per round.
    Threshold {
        threshold: f64,
        halt_probability: f64,
    },
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    #[serde(default)]
    variant: Variant,
    mean: Option<f64>,
    threshold: Option<f64>,
    halt_probability: Option<f64>,
}

#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
enum Variant {
    #[default]
    BestOf,
    Threshold,
}

pub fn build(params: &toml::Table) -> Result<Box<dyn Tuner>> {
    let p: Params = read("liu-talwar", params)?;
    Ok(Box::new(match p.variant {
        Variant::BestOf => LiuTalwar::best_of(given("mean", p.mean, "a number")?)?,
        Variant::Threshold => LiuTalwar::threshold(
            given("threshold", p.threshold, "a number")?,
            given("halt_probability", p.halt_probability, "a number")?,
        )?,
    }))
}

impl LiuTalwar {
    /// Best of K runs, K ~ geometric with mean `mean` > 1.
    pub fn best_of(mean: f64) -> Result<Self> {
        Ok(LiuTalwar::BestOf {
            law: RunCount::Tnb(Tnb::geometric(mean)?).drawable(mean)?,
            count: CountLaw::TruncatedNegativeBinomial {
                eta: 1.0,
                mean,
                truncate: None,
            },
        })
    }

    /// Runs until a score reaches `threshold` (finite), halting with probability
    /// `halt_probability` ∈ (0, 1] before each run.
    pub fn threshold(threshold: f64, halt_probability: f64) -> Result<Self> {
        if !threshold.is_finite() {
            return Err(Error::invalid("threshold", threshold, "a finite number"));
        }
        Ok(LiuTalwar::Threshold {
            threshold,
            halt_probability: Range::UnitExcludingZero
                .check("halt_probability", halt_probability)?,
        })
    }
}

impl Tuner for LiuTalwar {
    fn name(&self) -> &'static str {
        "liu-talwar"
    }
    fn params(&self) -> String {
        match self {
            LiuTalwar::BestOf { law, .. } => {
                use crate::accounting::selection::CountLaw;
                format!("best-of, mean={}", law.mean())
            }
            LiuTalwar::Threshold {
                threshold,
                halt_probability,
            } => {
                format!("threshold={threshold}, halt_probability={halt_probability}")
            }
        }
    }
    fn guarantee(
        &self,
        declared: &Declarations,
        delta: f64,
        accountant: &Accountant,
    ) -> Result<Guarantee> {
        match self {
            LiuTalwar::BestOf { law, count } => {
                repeat_select_guarantee(declared, self.name(), law, count, delta, accountant)
            }
            LiuTalwar::Threshold {
                halt_probability, ..
            } => {
                let training = declared.require_training(self.name())?;
                let event = Event::run_until_threshold(*halt_probability, training.run.clone())?;
                let won = account(
                    &event,
                    delta,
                    accountant,
                    SearchAccountant::Rdp,
                    &declared.name,
                )?;
                Ok(guarantee_of(won, |key, name| match key {
                    ApproxDp::KEY => approximate::THRESHOLD_PURE.to_string(),
                    _ => format!("Papernot–Steinke Corollary 16(2); {name}"),
                }))
            }
        }
    }
    fn check_workload(&self, workload: &dyn Workload) -> Result<()> {
        require_private_training(self.name(), workload).map(|_| ())
    }
    fn session(&self, declared: &Declarations, rng: &mut dyn RngCore) -> Result<State> {
        let space = &declared.space;
        Ok(match self {
            LiuTalwar::BestOf { law, .. } => repeat_select_session(space, law, rng)?,
            LiuTalwar::Threshold {
                threshold,
                halt_probability,
            } => State::new(Threshold::new(space.clone(), *threshold, *halt_probability)),
        })
    }
}
