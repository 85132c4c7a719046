//! The `dp-gd` tuner (spec 004 E.4, DP-GIBO's baseline): noisy gradient descent on the exact
//! per-user gradients a workload offers, with DP-GIBO's clipping, noise s = 2B√T/(nμ) and
//! accounting (μ-GDP, replace-one user). It releases θ_T; `runs` counts gradient evaluations.
//! Privacy preconditions: see [`crate::gibo`].

use super::dp_gibo::{declared_losses, gdp_guarantee, Common, Mu};
use super::runs::State;
use super::Tuner;
use super::{read, BudgetPlan, Count, Guarantee};
use crate::accounting::Accountant;
use crate::error::{fmt_num, Result};
use crate::gibo::{mu_for_budget, DpGdConfig, GiboSession, StepRule};
use crate::workloads::Declarations;
use rand::RngCore;

/// The DP-GD tuner.
#[derive(Clone, Debug, PartialEq)]
pub struct DpGd {
    pub config: DpGdConfig,
}

/// DP-GD's parameters as written in an experiment file (DP-GIBO's first six).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    mu: Mu,
    steps: Count,
    clip: f64,
    step_rule: Option<String>,
    eta: Option<f64>,
    theta0: Option<crate::params::OneOrMany<f64>>,
}

/// Builds the tuner from experiment-file parameters.
pub fn build(params: &toml::Table) -> Result<Box<dyn Tuner>> {
    Ok(Box::new(DpGd::from_params(params)?))
}

impl DpGd {
    /// DP-GD with μ > 0 (μ-GDP; ∞: non-private), T ∈ [1, 10⁶] steps and clipping bound
    /// B > 0, AdaGrad with η = 0.3 from θ_0 uniform in the box until
    /// [`DpGd::with_step_rule`] / [`DpGd::with_theta0`] say otherwise.
    ///
    /// ```
    /// use dptune::gibo::StepRule;
    /// use dptune::tuners::{dp_gd::DpGd, Tuner};
    /// let gd = DpGd::new(0.5, 10, 1.0)?.with_step_rule(StepRule::Sgd { eta: 0.1 });
    /// assert_eq!(gd.params(), "mu=0.5, T=10, B=1, step=sgd(0.1)");
    /// assert!(DpGd::new(0.5, 0, 1.0).is_err());
    /// # Ok::<(), dptune::Error>(())
    /// ```
    pub fn new(mu: f64, steps: usize, clip: f64) -> Result<Self> {
        Ok(DpGd::from_common(Common::new(mu, steps, clip)?))
    }

    /// The update rule of each step.
    pub fn with_step_rule(mut self, step_rule: StepRule) -> Self {
        self.config.step_rule = step_rule;
        self
    }

    /// θ_0 in the native units of the workload's box (checked against it when run).
    pub fn with_theta0(mut self, theta0: Vec<f64>) -> Self {
        self.config.theta0 = Some(theta0);
        self
    }

    fn from_common(c: Common) -> Self {
        DpGd {
            config: DpGdConfig {
                mu: c.mu,
                steps: c.steps,
                clip: c.clip,
                step_rule: c.step_rule,
                theta0: c.theta0,
            },
        }
    }

    /// The tuner from experiment-file parameters (see `sims/README.md`).
    pub fn from_params(params: &toml::Table) -> Result<Self> {
        let p: Params = read("dp-gd", params)?;
        Ok(DpGd::from_common(Common::read(
            &p.mu,
            p.steps,
            p.clip,
            p.step_rule.as_deref(),
            p.eta,
            p.theta0,
        )?))
    }
}

impl Tuner for DpGd {
    fn name(&self) -> &'static str {
        "dp-gd"
    }

    fn params(&self) -> String {
        let c = &self.config;
        let mut out = format!(
            "mu={}, T={}, B={}, step={}",
            fmt_num(c.mu),
            c.steps,
            fmt_num(c.clip),
            c.step_rule.describe()
        );
        if let Some(t) = &c.theta0 {
            out += &format!(", theta0={t:?}");
        }
        out
    }

    fn guarantee(
        &self,
        declared: &Declarations,
        delta: f64,
        _accountant: &Accountant,
    ) -> Result<Guarantee> {
        declared_losses(self.name(), declared)?;
        gdp_guarantee(self.config.mu, delta, "DP-GD")
    }

    fn outside_evaluations(&self) -> std::result::Result<(), &'static str> {
        Err("it needs every validation user's exact loss gradient, which code outside the library cannot be trusted to give")
    }
    fn session(&self, declared: &Declarations, rng: &mut dyn RngCore) -> Result<State> {
        let losses = declared_losses(self.name(), declared)?;
        let s = GiboSession::gd(self.config.clone(), &losses.domain, losses.n_users, rng)?;
        Ok(State::new(s))
    }

    fn budget_plan(&self, epsilon: f64, delta: f64) -> Result<BudgetPlan> {
        let mut config = self.config.clone();
        config.mu = mu_for_budget(epsilon, delta)?;
        Ok(BudgetPlan::Own(Box::new(DpGd { config })))
    }
}

#[cfg(test)]
mod tests {
    use super::super::dp_gibo::tests::{parse as parse_gibo, Bowl};
    use super::*;
    use crate::rng::stream;
    use crate::tuners::{MU, NOISE_STD};
    use crate::workloads::Oracle;

    fn parse(text: &str) -> Result<Box<dyn Tuner>> {
        build(&toml::from_str::<toml::Table>(text).unwrap())
    }

    #[test]
    fn same_guarantee_as_dp_gibo_and_clear_errors() {
        let w = Bowl::new(100, 2, true);
        let acc = Accountant::default();
        let gd = parse("mu = 0.5\nsteps = 10\nclip = 1").unwrap();
        let gibo = parse_gibo("mu = 0.5\nsteps = 10\nclip = 1").unwrap();
        let (a, b) = (
            gd.guarantee(&Declarations::of(&w), 1e-5, &acc).unwrap(),
            gibo.guarantee(&Declarations::of(&w), 1e-5, &acc).unwrap(),
        );
        assert_eq!(a.epsilon, b.epsilon);
        assert!((a.epsilon - 1.9931).abs() < 1e-4 && a.theorem.contains("DP-GD"));
        let own = gd.budget_plan(2.0, 1e-5).unwrap();
        let own = own.tuner().unwrap();
        assert!(
            own.guarantee(&Declarations::of(&w), 1e-5, &acc)
                .unwrap()
                .epsilon
                <= 2.0
        );
        let no_grad = Bowl::new(100, 2, false);
        let e = gd
            .tune(&no_grad, &mut stream(1, &[]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("dp-gd") && e.contains("bowl") && e.contains("gradients"),
            "{e}"
        );
        for (text, field) in [
            ("mu = 1\nsteps = 10\nclip = 1\nbatch = 2", "batch"),
            ("mu = -1\nsteps = 10\nclip = 1", "mu"),
        ] {
            let e = parse(text).map(|_| ()).unwrap_err().to_string();
            assert!(e.contains(field), "{text}: {e}");
        }
    }

    #[test]
    fn observing_reports_each_step_and_changes_nothing() {
        let w = Bowl::new(200, 2, true);
        let t = parse("mu = 1\nsteps = 7\nclip = 3").unwrap();
        let plain = t.tune(&w, &mut stream(5, &[])).unwrap();
        let mut rows = Vec::new();
        let observed = t
            .tune_observed(
                &w,
                &mut stream(5, &[]),
                &mut |r: &crate::tuners::TraceRow| {
                    rows.push((r.value("t"), r.value("g_norm"), r.point.to_vec()))
                },
            )
            .unwrap();
        assert_eq!(plain, observed);
        assert_eq!(rows.len(), 7);
        for (i, (step, g_norm, point)) in rows.iter().enumerate() {
            assert_eq!(*step, Some(i as f64));
            assert!(g_norm.is_some_and(|g| g >= 0.0));
            assert_eq!(point.len(), 2);
        }
        assert_eq!(plain.diagnostic(MU), Some(1.0));
        assert!(plain.diagnostic(NOISE_STD).is_some_and(|s| s > 0.0));
    }

    #[test]
    fn tunes_towards_the_optimum() {
        let w = Bowl::new(500, 3, true);
        let t = parse("mu = 1\nsteps = 30\nclip = 3\nstep_rule = \"sgd\"\neta = 0.5").unwrap();
        let out = t.tune(&w, &mut stream(2, &[])).unwrap();
        assert_eq!(out.runs, 30);
        let regret = w.best_utility() - w.utility(&out.chosen.unwrap());
        assert!(regret < 0.01, "regret {regret}");
    }
}
