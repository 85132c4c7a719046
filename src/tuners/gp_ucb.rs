//! The `gp-ucb` tuner: parameters from an experiment file and the [`Tuner`] adapter of private
//! GP-UCB, whose algorithm and bounds are in [`crate::gp_ucb`].

use super::runs::State;
use super::Tuner;
use super::{read, BudgetPlan, Count, Guarantee};
use crate::accounting::Accountant;
use crate::error::{fmt_num, Error, Range, Result};
use crate::gp_ucb::bounds::Profile;
use crate::gp_ucb::session::UcbSession;
use crate::gp_ucb::{grid, GpUcb, Release};
use crate::workloads::Declarations;
use rand::RngCore;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    evaluations: Count,
    epsilon: f64,
    delta: f64,
    release: Option<String>,
    gamma: Option<f64>,
    profile: Option<String>,
    noise_free_a: Option<f64>,
    noise_free_tau: Option<f64>,
    #[serde(default)]
    noise_free_gain: NoiseFreeGain,
}

/// Which gain Corollary 3 releases: the last evaluation's or the best.
#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "lowercase")]
enum NoiseFreeGain {
    #[default]
    Last,
    Best,
}

/// Builds the tuner from experiment-file parameters.
pub fn build(params: &toml::Table) -> Result<Box<dyn Tuner>> {
    let p: Params = read("gp-ucb", params)?;
    let release = Release::parse(p.release.as_deref().unwrap_or("hyperparameter"))?;
    let mut tuner = GpUcb::new(p.evaluations.0, p.epsilon, p.delta, release)?
        .with_profile(Profile::parse(p.profile.as_deref().unwrap_or("paper"))?);
    if let Some(g) = p.gamma {
        tuner = tuner.with_gamma(g)?;
    }
    match (p.noise_free_a, p.noise_free_tau) {
        (Some(a), Some(tau)) => {
            let best = matches!(p.noise_free_gain, NoiseFreeGain::Best);
            tuner = tuner.with_noise_free(a, tau, best)?;
        }
        (None, None) => {}
        _ => {
            return Err(Error::invalid(
                "noise_free_a",
                "one of noise_free_a, noise_free_tau",
                "both or neither",
            ))
        }
    }
    Ok(Box::new(tuner))
}

impl Tuner for GpUcb {
    fn name(&self) -> &'static str {
        "gp-ucb"
    }
    fn params(&self) -> String {
        let mut p = format!(
            "evaluations={}, epsilon={}, delta={}, release={}, profile={}",
            self.evaluations,
            fmt_num(self.epsilon),
            fmt_num(self.delta),
            self.release.name(),
            self.profile.name()
        );
        if let Some(g) = self.gamma {
            p += &format!(", gamma={}", fmt_num(g));
        }
        if let Some(nf) = self.noise_free {
            p += &format!(
                ", noise_free_a={}, noise_free_tau={}, noise_free_gain={}",
                fmt_num(nf.a),
                fmt_num(nf.tau),
                if nf.best { "best" } else { "last" }
            );
        }
        p
    }

    /// (kε, kδ) for k releases, by basic composition, from the parameters alone; the
    /// declarations are consulted only to check that the releases are defined for the prior
    /// and grid.
    fn guarantee(
        &self,
        declared: &Declarations,
        _delta: f64,
        _accountant: &Accountant,
    ) -> Result<Guarantee> {
        let prior = declared.require_gain_prior(self.name())?;
        let config = self.config(
            prior,
            grid(&declared.space)
                .map_err(|e| e.in_workload(declared.name.clone()))?
                .len(),
        )?;
        self.check_gain_release(&config)?;
        let k = self.release.count();
        Ok(Guarantee {
            epsilon: k * self.epsilon,
            delta: k * self.delta,
            theorem: format!(
                "Kusner et al. 2015 {}{}; holds only under the GP assumption (Assumption 1)",
                self.releases(),
                if k > 1.0 { ", basic composition" } else { "" }
            ),
        })
    }

    fn session(&self, declared: &Declarations, _rng: &mut dyn RngCore) -> Result<State> {
        let prior = declared.require_gain_prior(self.name())?;
        let grid = grid(&declared.space).map_err(|e| e.in_workload(declared.name.clone()))?;
        let s = UcbSession::gp_ucb(self.clone(), prior.clone(), grid.to_vec())?;
        Ok(State::new(s))
    }

    fn budget_plan(&self, epsilon: f64, delta: f64) -> Result<BudgetPlan> {
        let epsilon = Range::Positive.check("epsilon", epsilon)?;
        let delta = Range::OpenUnit.check("delta", delta)?;
        let k = self.release.count();
        Ok(BudgetPlan::Own(Box::new(GpUcb {
            epsilon: epsilon / k,
            delta: delta / k,
            ..self.clone()
        })))
    }
}
