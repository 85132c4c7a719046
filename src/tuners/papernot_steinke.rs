//! Papernot–Steinke repeat-and-select: K ~ a truncated negative binomial (any η > −1), Poisson, or
//! either truncated; best of K runs at uniform random candidates (Theorems 2 and 6, Lemma 22).

use super::runs::State;
use super::{read, repeat_select_guarantee, repeat_select_session, Count, Guarantee, Tuner};
use crate::accounting::event::CountLaw;
use crate::accounting::Accountant;
use crate::error::{Error, Result};
use crate::accounting::selection::{CountFamily, RunCount};
use crate::workloads::require_private_training;
use crate::workloads::Declarations;
use crate::workloads::Workload;
use rand::RngCore;

#[derive(Clone, Debug, PartialEq)]
pub struct PapernotSteinke {
    pub law: RunCount,
    /// The law as the search's privacy event states it.
    pub count: CountLaw,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    /// logarithmic, geometric, tnb:ETA or poisson.
    dist: String,
    mean: f64,
    truncate: Option<Count>,
}

pub fn build(params: &toml::Table) -> Result<Box<dyn Tuner>> {
    let p: Params = read("papernot-steinke", params)?;
    let family = CountFamily::parse(&p.dist)?;
    Ok(Box::new(PapernotSteinke::new(
        family,
        p.mean,
        p.truncate.map(|t| t.0),
    )?))
}

impl PapernotSteinke {
    /// K from `family` with mean `mean`, truncated at `truncate` runs when given (Lemma 22).
    pub fn new(family: CountFamily, mean: f64, truncate: Option<u64>) -> Result<Self> {
        if truncate == Some(0) {
            return Err(Error::invalid("truncate", 0, "an integer >= 1"));
        }
        let count = CountLaw::of(family, mean, truncate)?;
        Ok(PapernotSteinke {
            law: family.with_mean(mean, truncate)?.drawable(mean)?,
            count,
        })
    }

    /// K ~ the logarithmic law (TNB with η = 0) with mean `mean` > 1.
    pub fn logarithmic(mean: f64) -> Result<Self> {
        Self::new(CountFamily::Tnb { eta: 0.0 }, mean, None)
    }

    /// K ~ the truncated negative binomial with parameter `eta` > −1 and mean `mean`.
    pub fn tnb(eta: f64, mean: f64) -> Result<Self> {
        Self::new(CountFamily::Tnb { eta }, mean, None)
    }

    /// K ~ Poisson with mean `mean` > 0 (K = 0 releases nothing; Theorem 6).
    pub fn poisson(mean: f64) -> Result<Self> {
        Self::new(CountFamily::Poisson, mean, None)
    }
}

impl Tuner for PapernotSteinke {
    fn name(&self) -> &'static str {
        "papernot-steinke"
    }
    fn params(&self) -> String {
        use crate::accounting::selection::CountLaw;
        format!("{}, mean={}", self.law.family(), self.law.mean())
    }
    fn guarantee(
        &self,
        declared: &Declarations,
        delta: f64,
        accountant: &Accountant,
    ) -> Result<Guarantee> {
        repeat_select_guarantee(
            declared,
            self.name(),
            &self.law,
            &self.count,
            delta,
            accountant,
        )
    }
    fn check_workload(&self, workload: &dyn Workload) -> Result<()> {
        require_private_training(self.name(), workload).map(|_| ())
    }
    fn session(&self, declared: &Declarations, rng: &mut dyn RngCore) -> Result<State> {
        let space = &declared.space;
        repeat_select_session(space, &self.law, rng)
    }
}
