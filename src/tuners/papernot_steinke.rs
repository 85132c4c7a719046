//! Papernot–Steinke repeat-and-select: K ~ a truncated negative binomial (any η > −1), Poisson, or
//! either truncated; best of K runs at uniform random candidates (Theorems 2 and 6, Lemma 22).

use super::{
    check_keys, number, repeat_select_guarantee, tune_repeat_select, Guarantee, Outcome, Tuner,
};
use crate::accounting::Accountant;
use crate::error::{Error, Result};
use crate::selection::{CountFamily, RunCount};
use crate::workloads::Declarations;
use crate::workloads::{require_private_training, Workload};
use rand::RngCore;

#[derive(Clone, Debug, PartialEq)]
pub struct PapernotSteinke {
    pub law: RunCount,
}

pub fn build(params: &toml::Table) -> Result<Box<dyn Tuner>> {
    check_keys("papernot-steinke", params, &["dist", "mean", "truncate"])?;
    let family = match params.get("dist") {
        Some(toml::Value::String(s)) => CountFamily::parse(s)?,
        Some(other) => {
            return Err(Error::invalid(
                "dist",
                other,
                "a string such as \"logarithmic\"",
            ))
        }
        None => {
            return Err(Error::invalid(
                "dist",
                "missing",
                "logarithmic, geometric, tnb:ETA or poisson",
            ))
        }
    };
    let mean = number(params, "mean")?
        .ok_or_else(|| Error::invalid("mean", "missing", "a number (required)"))?;
    let truncate = match number(params, "truncate")? {
        Some(m) if m >= 1.0 && m.fract() == 0.0 => Some(m as u64),
        Some(m) => return Err(Error::invalid("truncate", m, "an integer >= 1")),
        None => None,
    };
    Ok(Box::new(PapernotSteinke {
        law: family.with_mean(mean, truncate)?,
    }))
}

impl Tuner for PapernotSteinke {
    fn name(&self) -> &'static str {
        "papernot-steinke"
    }
    fn params(&self) -> String {
        use crate::selection::CountLaw;
        format!("{}, mean={}", self.law.family(), self.law.mean())
    }
    fn guarantee(
        &self,
        declared: &Declarations,
        delta: f64,
        accountant: &Accountant,
    ) -> Result<Guarantee> {
        let training = declared.require_training(self.name())?;
        repeat_select_guarantee(training, &self.law, delta, accountant)
    }
    fn tune(&self, workload: &dyn Workload, rng: &mut dyn RngCore) -> Result<Outcome> {
        let training = require_private_training(self.name(), workload)?;
        Ok(tune_repeat_select(workload, training, &self.law, rng))
    }
}
