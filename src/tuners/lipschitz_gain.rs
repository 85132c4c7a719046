//! Algorithm 3 of Kusner et al. 2015 (spec 002 §2.3): no GP assumption. The hyperparameter is
//! the L2 regularisation λ of a strongly convex model trained on public data; any BO may pick
//! the T evaluations (here GP-UCB over the grid, with a fixed public kernel on the position of
//! ln λ), and the best exact gain f_BO is released with Laplace noise of scale Δ_f/ε, where
//! Δ_f = min{g*/m, L/(m λ_min)} + L(λ_max − λ_min)/(λ_max λ_min) (Theorem 7). Pure ε-DP
//! (Corollary 4) for every pair of neighbouring validation sets. The paper releases no λ.

use crate::session::drive;
use super::runs::State;
use super::Tuner;
use super::{read, BudgetPlan, Count, Guarantee};
use crate::accounting::Accountant;
use crate::error::{fmt_num, Error, Range, Result};
use crate::gp_ucb::bounds::{laplace_scale, lipschitz_delta_f};
use crate::gp_ucb::session::{ExactGains, LipschitzBo, UcbSession};
use crate::workloads::{Declarations, LipschitzAssumption};
use crate::workloads::{Hyper, RegularisedGain, Space};
use rand::RngCore;

/// The Algorithm 3 tuner.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LipschitzGain {
    /// T, the number of exact evaluations the BO makes.
    pub evaluations: u64,
    pub epsilon: f64,
    /// Lengthscale of the BO's public RBF kernel on the ln λ position in [0, 1].
    pub lengthscale: f64,
    /// The BO's fixed UCB width β (any acquisition is allowed by Theorem 7).
    pub beta: f64,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    evaluations: Count,
    epsilon: f64,
    lengthscale: Option<f64>,
    beta: Option<f64>,
}

pub fn build(params: &toml::Table) -> Result<Box<dyn Tuner>> {
    let p: Params = read("lipschitz-gain", params)?;
    let mut tuner = LipschitzGain::new(p.evaluations.0, p.epsilon)?;
    if let Some(l) = p.lengthscale {
        tuner = tuner.with_lengthscale(l)?;
    }
    if let Some(b) = p.beta {
        tuner = tuner.with_beta(b)?;
    }
    Ok(Box::new(tuner))
}

impl LipschitzGain {
    /// Algorithm 3 with T = `evaluations` ≥ 1 exact evaluations and a pure ε-DP release
    /// (ε > 0); the BO's public kernel has lengthscale 0.2 and its UCB width is β = 4 until
    /// [`LipschitzGain::with_lengthscale`] / [`LipschitzGain::with_beta`] say otherwise.
    ///
    /// ```
    /// use dptune::tuners::{lipschitz_gain::LipschitzGain, Tuner};
    /// let t = LipschitzGain::new(10, 1.0)?.with_beta(2.0)?;
    /// assert_eq!(t.params(), "evaluations=10, epsilon=1, lengthscale=0.2, beta=2");
    /// assert!(LipschitzGain::new(0, 1.0).is_err());
    /// assert!(LipschitzGain::new(10, f64::NAN).is_err());
    /// # Ok::<(), dptune::Error>(())
    /// ```
    pub fn new(evaluations: u64, epsilon: f64) -> Result<Self> {
        if evaluations == 0 {
            return Err(Error::invalid("evaluations", 0, "an integer >= 1 (T)"));
        }
        Ok(LipschitzGain {
            evaluations,
            epsilon: Range::Positive.check("epsilon", epsilon)?,
            lengthscale: 0.2,
            beta: 4.0,
        })
    }

    /// The lengthscale > 0 of the BO's kernel on the ln λ position in [0, 1].
    pub fn with_lengthscale(self, lengthscale: f64) -> Result<Self> {
        Ok(LipschitzGain {
            lengthscale: Range::Positive.check("lengthscale", lengthscale)?,
            ..self
        })
    }

    /// The BO's UCB width β ≥ 0.
    pub fn with_beta(self, beta: f64) -> Result<Self> {
        Ok(LipschitzGain {
            beta: Range::NonNegative.check("beta", beta)?,
            ..self
        })
    }
}

/// The grid's λ values, checked against the declared range (Theorem 7 needs λ ∈ [λ_min, λ_max]).
fn lambdas(a: &LipschitzAssumption, space: &Space) -> Result<Vec<f64>> {
    let Space::Finite(grid) = space else {
        return Err(Error::missing_capability(
            "tuner `lipschitz-gain`",
            "a finite grid of λ values",
            "",
        ));
    };
    grid.iter()
        .map(|h| match h.first() {
            Some(&l) if l >= a.lambda_min && l <= a.lambda_max => Ok(l),
            other => Err(Error::invalid(
                "grid",
                format!("λ = {other:?}"),
                format!(
                    "λ in [lambda_min, lambda_max] = [{}, {}]",
                    fmt_num(a.lambda_min),
                    fmt_num(a.lambda_max)
                ),
            )),
        })
        .collect()
}

impl LipschitzGain {
    /// Δ_f of Theorem 7, plus 2× the workload's declared solver error: f_BO on V and on V′
    /// each lie within that error of their exact-training values (the max over evaluations is
    /// 1-Lipschitz in the sup norm).
    pub fn sensitivity(&self, a: &LipschitzAssumption) -> Result<f64> {
        let slack = Range::NonNegative.check("solver_error", a.solver_error)?;
        let exact = lipschitz_delta_f(
            a.g_star,
            a.lipschitz,
            a.validation_size,
            a.lambda_min,
            a.lambda_max,
        )?;
        Ok(exact + 2.0 * slack)
    }

    /// The BO's settings.
    fn bo(&self) -> LipschitzBo {
        LipschitzBo {
            evaluations: self.evaluations,
            lengthscale: self.lengthscale,
            beta: self.beta,
        }
    }

    /// (f_BO, the released f̃_L) on `gain` over `grid`: its session driven to the end.
    pub fn run(
        &self,
        gain: &dyn RegularisedGain,
        grid: &[Hyper],
        rng: &mut dyn RngCore,
    ) -> Result<(f64, f64)> {
        let scale = laplace_scale(self.sensitivity(gain.assumption())?, self.epsilon)?;
        let mut s = UcbSession::lipschitz(self.bo(), scale, grid.to_vec());
        let out = drive(&mut s, &ExactGains(gain), rng)?;
        match (s.best_observed(), out.released_score) {
            (Some(best), Some(released)) => Ok((best, released)),
            _ => Err(Error::Infeasible("Algorithm 3 released no gain".into())),
        }
    }
}

impl Tuner for LipschitzGain {
    fn name(&self) -> &'static str {
        "lipschitz-gain"
    }
    fn params(&self) -> String {
        format!(
            "evaluations={}, epsilon={}, lengthscale={}, beta={}",
            self.evaluations,
            fmt_num(self.epsilon),
            fmt_num(self.lengthscale),
            fmt_num(self.beta)
        )
    }
    fn guarantee(&self, declared: &Declarations, _: f64, _: &Accountant) -> Result<Guarantee> {
        let a = declared.require_lipschitz(self.name())?;
        lambdas(a, &declared.space).map_err(|e| e.in_workload(declared.name.clone()))?;
        self.sensitivity(a)?;
        Ok(Guarantee {
            epsilon: self.epsilon,
            delta: 0.0,
            theorem: "Kusner et al. 2015 Corollary 4 (Algorithm 3, gain only; no GP assumption, \
                      needs public training data and exact strongly convex training)"
                .into(),
        })
    }
    fn outside_evaluations(&self) -> std::result::Result<(), &'static str> {
        Err("it needs exact validation gains of a strongly convex model (Assumption 2), which nothing outside the library can check")
    }
    fn session(&self, declared: &Declarations, _rng: &mut dyn RngCore) -> Result<State> {
        let a = declared.require_lipschitz(self.name())?;
        lambdas(a, &declared.space).map_err(|e| e.in_workload(declared.name.clone()))?;
        let Space::Finite(grid) = &declared.space else {
            return Err(Error::Infeasible("Algorithm 3 needs a grid of λ".into()));
        };
        let scale = laplace_scale(self.sensitivity(a)?, self.epsilon)?;
        let s = UcbSession::lipschitz(self.bo(), scale, grid.clone());
        Ok(State::new(s))
    }
    fn budget_plan(&self, epsilon: f64, _delta: f64) -> Result<BudgetPlan> {
        let epsilon = Range::Positive.check("epsilon", epsilon)?;
        Ok(BudgetPlan::Own(Box::new(LipschitzGain {
            epsilon,
            ..self.clone()
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;
    use crate::workloads::{LipschitzAssumption, Oracle, Workload};

    /// A stand-in gain on a log grid of λ (the tuner never checks how the gain was made).
    struct Toy {
        space: Space,
        assumption: LipschitzAssumption,
    }

    impl Toy {
        fn new(lambda_min: f64) -> Self {
            let grid = (0..20)
                .map(|i| vec![0.1 * libm::pow(10f64, i as f64 / 19.0)])
                .collect();
            Toy {
                space: Space::Finite(grid),
                assumption: LipschitzAssumption {
                    g_star: 1.0,
                    lipschitz: 1.0,
                    validation_size: 1000,
                    lambda_min,
                    lambda_max: 1.0,
                    solver_error: 0.0,
                },
            }
        }
    }

    impl RegularisedGain for Toy {
        fn assumption(&self) -> &LipschitzAssumption {
            &self.assumption
        }
        fn gain(&self, h: &Hyper) -> f64 {
            -(libm::log(h[0]) - libm::log(0.3f64)).powi(2)
        }
    }

    impl Oracle for Toy {
        fn utility(&self, h: &Hyper) -> f64 {
            self.gain(h)
        }
        fn best_utility(&self) -> f64 {
            0.0
        }
    }

    impl Workload for Toy {
        fn name(&self) -> String {
            "toy".into()
        }
        fn space(&self) -> &Space {
            &self.space
        }
        fn oracle(&self) -> &dyn Oracle {
            self
        }
        fn regularised_gain(&self) -> Option<&dyn RegularisedGain> {
            Some(self)
        }
    }

    fn tuner(evaluations: u64) -> LipschitzGain {
        LipschitzGain {
            evaluations,
            epsilon: 1.0,
            lengthscale: 0.2,
            beta: 4.0,
        }
    }

    /// Spec 002 §4.4: (g* = 1, L = 1, m = 1000, λ ∈ [0.1, 1], ε = 1) → scale 9.001; the
    /// released gain's mean absolute deviation from f_BO is that scale (4 standard errors).
    #[test]
    fn laplace_scale_is_delta_f_over_epsilon() {
        let w = Toy::new(0.1);
        let Space::Finite(grid) = w.space() else {
            unreachable!()
        };
        let t = tuner(20);
        let mut rng = stream(1, &[]);
        let n = 5_000;
        let mut dev = 0.0;
        for _ in 0..n {
            let (best, released) = t.run(&w, grid, &mut rng).unwrap();
            let truth = grid
                .iter()
                .map(|h| w.gain(h))
                .fold(f64::NEG_INFINITY, f64::max);
            assert_eq!(best, truth, "T = N evaluates every λ");
            dev += (released - best).abs();
        }
        let mad = dev / n as f64;
        assert!(
            (mad - 9.001).abs() < 4.0 * 9.001 / (n as f64).sqrt(),
            "{mad}"
        );
    }

    #[test]
    fn guarantee_is_pure_and_checks_the_grid() {
        let acc = Accountant::default();
        let g = tuner(5)
            .guarantee(&Declarations::of(&Toy::new(0.1)), 1e-6, &acc)
            .unwrap();
        assert_eq!((g.epsilon, g.delta), (1.0, 0.0));
        assert!(g.theorem.contains("no GP assumption"));
        let BudgetPlan::Own(own) = tuner(5).budget_plan(3.0, 1e-6).unwrap() else {
            panic!("its own budget")
        };
        assert_eq!(
            own.guarantee(&Declarations::of(&Toy::new(0.1)), 1e-6, &acc)
                .unwrap()
                .epsilon,
            3.0
        );
        // A grid point below the declared λ_min breaks Theorem 7: refused.
        let e = tuner(5)
            .guarantee(&Declarations::of(&Toy::new(0.2)), 1e-6, &acc)
            .unwrap_err()
            .to_string();
        assert!(e.contains("lambda_min"), "{e}");
        let out = tuner(8).tune(&Toy::new(0.1), &mut stream(2, &[])).unwrap();
        assert!(out.chosen.is_none() && out.released_score.unwrap().is_finite());
        for (text, field) in [
            ("epsilon = 1", "evaluations"),
            ("evaluations = 3", "epsilon"),
            ("evaluations = 3\nepsilon = 1\nbeta = -1", "beta"),
            ("evaluations = 3\nepsilon = 1\nlambda = 2", "lambda"),
        ] {
            let e = build(&toml::from_str::<toml::Table>(text).unwrap())
                .err()
                .unwrap()
                .to_string();
            assert!(e.contains(field), "{text}: {e}");
        }
    }
}
