//! The `dp-gibo` tuner (spec 004): DP-GIBO on a workload's per-user validation losses, μ-GDP
//! for neighbouring validation sets that replace one user. It releases θ_T (the last iterate,
//! never a "best" one) as its chosen hyperparameter; the guarantee comes from its own noise,
//! so in equal-budget mode it takes the μ that meets the target (ε, δ) itself.
//! Privacy preconditions: see [`crate::gibo`].

use super::runs::State;
use super::Tuner;
use super::{account, guarantee_of, read, BudgetPlan, Count, Guarantee, SearchAccountant};
use crate::accounting::accountant::Registered;
use crate::accounting::pld_events::Pld;
use crate::accounting::{Accountant, Event};
use crate::error::{fmt_num, Error, Range, Result};
use crate::gibo::{
    check_mu, gdp_report, mu_for_budget, BatchMode, DpGiboConfig, GiboSession, History,
    PointOptimiser, StepRule, SurrogateKernel,
};
use crate::params::{numbers_of, OneOrMany};
use crate::workloads::Space;
use crate::workloads::{Declarations, PerUserDeclaration};
use rand::RngCore;

/// How the batch of each step is chosen, as written in the experiment file.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BatchParam {
    /// Greedy to a bias tolerance; `b_max` defaults to 4(d + 1).
    Adaptive { eps_bias: f64, b_max: Option<usize> },
    /// `b` points optimised jointly; defaults to d + 1.
    Fixed { b: Option<usize> },
}

/// The DP-GIBO tuner.
#[derive(Clone, Debug, PartialEq)]
pub struct DpGibo {
    /// μ of μ-GDP (f64::INFINITY: non-private GIBO).
    pub mu: f64,
    pub steps: usize,
    pub clip: f64,
    pub batch: BatchParam,
    pub step_rule: StepRule,
    /// `rbf` or `polynomial`.
    pub kernel: String,
    /// Native-unit lengthscales (one value: isotropic).
    pub lengthscales: Vec<f64>,
    pub signal_variance: f64,
    /// The model's evaluation-noise sd; `None`: the workload's declared one.
    pub noise_sd: Option<f64>,
    pub history: History,
    pub points: PointOptimiser,
    /// θ_0 in native units; `None`: uniform in the box.
    pub theta0: Option<Vec<f64>>,
    /// On a workload whose evaluations train on other private data: in equal-budget mode this
    /// share of each target ε sets μ, and the evaluations' noise is calibrated for the whole.
    pub evaluation_share: Option<f64>,
    /// [lo, hi]: every user's loss is clamped into it before any gradient; `None`: as told.
    pub loss_range: Option<(f64, f64)>,
}

/// DP-GIBO's parameters as written in an experiment file (the first six are DP-GD's too).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    mu: Mu,
    steps: Count,
    clip: f64,
    step_rule: Option<String>,
    eta: Option<f64>,
    theta0: Option<OneOrMany<f64>>,
    eps_bias: Option<f64>,
    b_max: Option<Count>,
    batch: Option<Count>,
    kernel: Option<String>,
    /// Numbers, or "workload" (the objective's declared prior lengthscales).
    lengthscale: Option<toml::Value>,
    signal_variance: Option<f64>,
    noise_sd: Option<f64>,
    /// "all", "none" or C ≥ 0.
    history: Option<toml::Value>,
    local_box: Option<f64>,
    select_steps: Option<Count>,
    select_lr: Option<f64>,
    evaluation_share: Option<f64>,
    loss_range: Option<[f64; 2]>,
}

/// μ: a number > 0, `inf` (TOML float) or "inf".
#[derive(serde::Deserialize)]
#[serde(untagged)]
pub(super) enum Mu {
    Number(f64),
    Word(String),
}

impl Mu {
    pub(super) fn value(&self) -> Result<f64> {
        match self {
            Mu::Number(mu) => check_mu(*mu),
            Mu::Word(w) if w == "inf" => Ok(f64::INFINITY),
            Mu::Word(w) => Err(Error::invalid("mu", w, "a number > 0 or \"inf\"")),
        }
    }
}

/// The parameters DP-GIBO and DP-GD share: μ, T, B, the step rule and θ_0.
pub(super) struct Common {
    pub mu: f64,
    pub steps: usize,
    pub clip: f64,
    pub step_rule: StepRule,
    pub theta0: Option<Vec<f64>>,
}

impl Common {
    /// μ > 0 (or ∞: non-private), T ∈ [1, 10⁶] steps, clipping bound B > 0; AdaGrad with
    /// η = 0.3 and θ_0 uniform in the box until the caller says otherwise.
    pub(super) fn new(mu: f64, steps: usize, clip: f64) -> Result<Self> {
        if !(1..=1_000_000).contains(&steps) {
            return Err(Error::invalid(
                "steps",
                steps,
                "an integer from 1 to 1000000 (T, steps run one after another)",
            ));
        }
        Ok(Common {
            mu: check_mu(mu)?,
            steps,
            clip: Range::Positive.check("clip", clip)?,
            step_rule: StepRule::AdaGrad { eta: 0.3 },
            theta0: None,
        })
    }
}

impl Common {
    /// From the parameters as written: the step rule by name with its η (default AdaGrad,
    /// η = 0.3).
    pub(super) fn read(
        mu: &Mu,
        steps: Count,
        clip: f64,
        step_rule: Option<&str>,
        eta: Option<f64>,
        theta0: Option<OneOrMany<f64>>,
    ) -> Result<Self> {
        Ok(Common {
            step_rule: StepRule::parse(step_rule.unwrap_or("adagrad"), eta.unwrap_or(0.3))?,
            theta0: theta0.map(OneOrMany::into_vec),
            ..Common::new(mu.value()?, steps.0 as usize, clip)?
        })
    }
}

fn parse_history(history: Option<&toml::Value>) -> Result<History> {
    match history {
        None => Ok(History::All),
        Some(toml::Value::String(s)) if s == "all" => Ok(History::All),
        Some(toml::Value::String(s)) if s == "none" => Ok(History::None),
        Some(toml::Value::Integer(c)) if *c >= 0 => Ok(History::Closest(*c as usize)),
        Some(other) => Err(Error::invalid(
            "history",
            other,
            "\"all\", \"none\" or an integer C >= 0 (the C past points closest to θ)",
        )),
    }
}

/// The largest fixed batch or adaptive cap an experiment file may ask for.
pub const MAX_BATCH: u64 = 2000;

/// Builds the tuner from experiment-file parameters.
pub fn build(params: &toml::Table) -> Result<Box<dyn Tuner>> {
    Ok(Box::new(DpGibo::from_params(params)?))
}

impl DpGibo {
    /// DP-GIBO with μ > 0 (μ-GDP; ∞: non-private GIBO), T ∈ [1, 10⁶] steps and clipping
    /// bound B > 0; until the `with_*` methods say otherwise: fixed batches of d + 1 points,
    /// AdaGrad with η = 0.3, an RBF surrogate of lengthscale 1 and signal variance 1, the
    /// workload's evaluation noise, every past point, the default point optimiser and θ_0
    /// uniform in the box.
    ///
    /// ```
    /// use dptune::tuners::{dp_gibo::DpGibo, Tuner};
    /// let gibo = DpGibo::new(1.0, 25, 3.0)?
    ///     .with_adaptive_batch(0.5, Some(12))?
    ///     .with_rbf(vec![0.3], 1.0)?;
    /// assert!(gibo.params().starts_with("mu=1, T=25, B=3"));
    /// assert!(DpGibo::new(-1.0, 25, 3.0).is_err());
    /// assert!(DpGibo::new(1.0, 25, 3.0)?.with_fixed_batch(0).is_err());
    /// # Ok::<(), dptune::Error>(())
    /// ```
    pub fn new(mu: f64, steps: usize, clip: f64) -> Result<Self> {
        Ok(DpGibo::from_common(Common::new(mu, steps, clip)?))
    }

    fn from_common(c: Common) -> Self {
        DpGibo {
            mu: c.mu,
            steps: c.steps,
            clip: c.clip,
            batch: BatchParam::Fixed { b: None },
            step_rule: c.step_rule,
            kernel: "rbf".into(),
            lengthscales: vec![1.0],
            signal_variance: 1.0,
            noise_sd: None,
            history: History::All,
            points: PointOptimiser::default(),
            theta0: c.theta0,
            evaluation_share: None,
            loss_range: None,
        }
    }

    /// Batches chosen greedily until the bias bound is at most `eps_bias` ≥ 0, at most
    /// `b_max` ∈ [1, 2000] points (default 4(d + 1)).
    pub fn with_adaptive_batch(self, eps_bias: f64, b_max: Option<usize>) -> Result<Self> {
        Ok(DpGibo {
            batch: BatchParam::Adaptive {
                eps_bias: Range::NonNegative.check("eps_bias", eps_bias)?,
                b_max: b_max.map(|b| batch_size("b_max", b)).transpose()?,
            },
            ..self
        })
    }

    /// Batches of `b` ∈ [1, 2000] points optimised jointly.
    pub fn with_fixed_batch(self, b: usize) -> Result<Self> {
        Ok(DpGibo {
            batch: BatchParam::Fixed {
                b: Some(batch_size("batch", b)?),
            },
            ..self
        })
    }

    /// The update rule of each step.
    pub fn with_step_rule(self, step_rule: StepRule) -> Self {
        DpGibo { step_rule, ..self }
    }

    /// An RBF surrogate with these native-unit lengthscales (one: isotropic; none: the
    /// workload's declared prior lengthscales) and signal variance, all > 0.
    pub fn with_rbf(self, lengthscales: Vec<f64>, signal_variance: f64) -> Result<Self> {
        for &l in &lengthscales {
            Range::Positive.check("lengthscale", l)?;
        }
        Ok(DpGibo {
            kernel: "rbf".into(),
            lengthscales,
            signal_variance: Range::Positive.check("signal_variance", signal_variance)?,
            ..self
        })
    }

    /// The polynomial surrogate (uᵀv + 1)², which has no hyperparameters.
    pub fn with_polynomial_kernel(self) -> Self {
        DpGibo {
            kernel: "polynomial".into(),
            ..self
        }
    }

    /// The surrogate's evaluation-noise sd ≥ 0, instead of the workload's declared one.
    pub fn with_noise_sd(self, noise_sd: f64) -> Result<Self> {
        Ok(DpGibo {
            noise_sd: Some(Range::NonNegative.check("noise_sd", noise_sd)?),
            ..self
        })
    }

    /// Which past points the surrogate keeps.
    pub fn with_history(self, history: History) -> Self {
        DpGibo { history, ..self }
    }

    /// The optimiser of each batch's points (Adam steps > 0, learning rate > 0, local box > 0).
    pub fn with_points(self, points: PointOptimiser) -> Result<Self> {
        if points.steps == 0 {
            return Err(Error::invalid("select_steps", 0, "an integer >= 1"));
        }
        Range::Positive.check("select_lr", points.lr)?;
        if let Some(r) = points.local_box {
            Range::Positive.check("local_box", r)?;
        }
        Ok(DpGibo { points, ..self })
    }

    /// θ_0 in the native units of the workload's box (checked against it when run).
    pub fn with_theta0(self, theta0: Vec<f64>) -> Self {
        DpGibo {
            theta0: Some(theta0),
            ..self
        }
    }

    /// On a workload whose evaluations train on other private data, in equal-budget mode:
    /// the share ∈ (0, 1) of each target ε that sets μ.
    pub fn with_evaluation_share(self, share: f64) -> Result<Self> {
        Ok(DpGibo {
            evaluation_share: Some(Range::OpenUnit.check("evaluation_share", share)?),
            ..self
        })
    }

    /// Every user's loss clamped into [lo, hi] (finite, lo < hi) before any gradient: a bound
    /// declared before the data is seen, so a loss however large moves no step more than this.
    pub fn with_loss_range(self, lo: f64, hi: f64) -> Result<Self> {
        if !(lo.is_finite() && hi.is_finite() && lo < hi) {
            return Err(Error::invalid(
                "loss_range",
                format!("[{}, {}]", fmt_num(lo), fmt_num(hi)),
                "[lo, hi]: two finite numbers with lo < hi",
            ));
        }
        Ok(DpGibo {
            loss_range: Some((lo, hi)),
            ..self
        })
    }

    /// The tuner from experiment-file parameters (see `sims/README.md`).
    pub fn from_params(params: &toml::Table) -> Result<Self> {
        let p: Params = read("dp-gibo", params)?;
        let common = Common::read(
            &p.mu,
            p.steps,
            p.clip,
            p.step_rule.as_deref(),
            p.eta,
            p.theta0,
        )?;
        let mut gibo = DpGibo::from_common(common);
        let b_max = p.b_max.map(|b| b.0 as usize);
        gibo = match (p.eps_bias, b_max, p.batch) {
            (Some(e), _, None) => gibo.with_adaptive_batch(e, b_max)?,
            (None, None, Some(b)) => gibo.with_fixed_batch(b.0 as usize)?,
            (None, None, None) => gibo,
            (None, Some(_), _) => {
                return Err(Error::invalid(
                    "b_max",
                    "given without eps_bias",
                    "used only with eps_bias (adaptive batches)",
                ))
            }
            (Some(_), _, Some(_)) => {
                return Err(Error::invalid(
                    "batch",
                    "given with eps_bias",
                    "either eps_bias (adaptive) or batch (fixed), not both",
                ))
            }
        };
        gibo = match p.kernel.as_deref().unwrap_or("rbf") {
            "rbf" => {
                let lengthscales = match &p.lengthscale {
                    Some(toml::Value::String(s)) if s == "workload" => Vec::new(),
                    Some(v) => numbers_of("lengthscale", v)?,
                    None => vec![1.0],
                };
                gibo.with_rbf(lengthscales, p.signal_variance.unwrap_or(1.0))?
            }
            "polynomial" if p.lengthscale.is_some() || p.signal_variance.is_some() => {
                return Err(Error::invalid(
                    "kernel",
                    "polynomial with a lengthscale or signal_variance",
                    "an rbf kernel (the polynomial kernel (uᵀv + 1)² has no hyperparameters)",
                ))
            }
            "polynomial" => gibo.with_polynomial_kernel(),
            other => return Err(Error::invalid("kernel", other, "\"rbf\" or \"polynomial\"")),
        };
        if let Some(sd) = p.noise_sd {
            gibo = gibo.with_noise_sd(sd)?;
        }
        let mut points = PointOptimiser::default();
        if let Some(s) = p.select_steps {
            points.steps = s.0 as usize;
        }
        if let Some(lr) = p.select_lr {
            points.lr = lr;
        }
        points.local_box = p.local_box;
        gibo = gibo
            .with_points(points)?
            .with_history(parse_history(p.history.as_ref())?);
        if let Some(share) = p.evaluation_share {
            gibo = gibo.with_evaluation_share(share)?;
        }
        if let Some([lo, hi]) = p.loss_range {
            gibo = gibo.with_loss_range(lo, hi)?;
        }
        Ok(gibo)
    }
}

/// A batch size or cap in [1, [`MAX_BATCH`]]: a step's GP solve is cubic in the batch.
fn batch_size(name: &'static str, b: usize) -> Result<usize> {
    if (1..=MAX_BATCH as usize).contains(&b) {
        Ok(b)
    } else {
        Err(Error::invalid(
            name,
            b,
            format!("an integer from 1 to {MAX_BATCH} (a step's GP solve is cubic in the batch)"),
        ))
    }
}

/// The declared per-user losses, on a unit box of the dimension of their native box.
pub(super) fn declared_losses<'a>(
    tuner: &str,
    declared: &'a Declarations,
) -> Result<&'a PerUserDeclaration> {
    let losses = declared.require_per_user(tuner)?;
    check_unit_box(
        tuner,
        &declared.space,
        losses.domain.len(),
        declared.name.clone(),
    )?;
    Ok(losses)
}

/// DP-GIBO and DP-GD search the unit box mapped onto the losses' native box of dimension `d`.
fn check_unit_box(tuner: &str, space: &Space, d: usize, workload: String) -> Result<()> {
    match space {
        Space::UnitBox { dim } if *dim == d => Ok(()),
        _ => Err(Error::missing_capability(
            format!("tuner `{tuner}`"),
            format!(
                "a continuous search space (the unit box) of the dimension of the per-user \
                 losses' domain ({d}), not {}",
                space
                    .len()
                    .map_or("a box of another dimension".into(), |n| format!(
                        "a grid of {n} candidates"
                    ))
            ),
            workload,
        )),
    }
}

/// The μ-GDP guarantee at δ (exact conversion), or "non-private" for μ = ∞.
pub(super) fn gdp_guarantee(mu: f64, delta: f64, what: &str) -> Result<Guarantee> {
    let mu = check_mu(mu)?;
    Range::OpenUnit.check("delta", delta)?;
    if mu == f64::INFINITY {
        return Ok(Guarantee {
            epsilon: f64::INFINITY,
            delta,
            theorem: format!("non-private {what} (mu = inf: no noise, clipping kept)"),
        });
    }
    let r = gdp_report(mu, delta)?;
    Ok(Guarantee {
        epsilon: r.epsilon,
        delta: r.delta,
        theorem: format!(
            "{what}: {}-GDP (spec 004 Theorem 3.1; ρ = μ²/2 = {}-zCDP), exact GDP conversion; \
             replace-one validation user",
            fmt_num(mu),
            fmt_num(r.rho)
        ),
    })
}

/// The guarantee when every evaluation is a private training run on data other than the users
/// (neighbours replace one user or one such record): the search's event is the evaluation run
/// T·b_max + 1 times (T·b_max evaluations, a data-independent maximum, and the run that trains
/// the model of the released θ_T) composed with the μ-GDP of the steps, accounted in RDP
/// (μ-GDP as ρ = μ²/2 zCDP) or by the PLD (as the Gaussian of sensitivity μ), the smaller.
/// The sum bounds either kind of neighbour.
fn evaluations_guarantee(
    mu: f64,
    cfg: &DpGiboConfig,
    evaluation: &Event,
    delta: f64,
    accountant: &Accountant,
    workload: &str,
) -> Result<Guarantee> {
    let mu = check_mu(mu)?;
    let per_step = match cfg.batch {
        BatchMode::Adaptive { b_max, .. } => b_max,
        BatchMode::Fixed { b } => b,
    };
    let runs = (cfg.steps * per_step) as u64 + 1;
    if mu == f64::INFINITY {
        return Ok(Guarantee {
            epsilon: f64::INFINITY,
            delta,
            theorem: "non-private DP-GIBO (mu = inf)".into(),
        });
    }
    let event = Event::composed(vec![
        Event::self_composed(runs, evaluation.clone())?,
        Event::gaussian_dp(mu)?,
    ])?;
    let won = account(&event, delta, accountant, SearchAccountant::Best, workload)?;
    Ok(guarantee_of(won, |key, name| {
        let how = match key {
            Pld::KEY => format!("composed by the privacy-loss distribution ({name})"),
            _ => "(as ρ = μ²/2 zCDP) composed in RDP".to_string(),
        };
        format!(
            "DP-GIBO: {}-GDP {how} with {runs} private training runs (T·b_max = {} \
             evaluations and the released model's run)",
            fmt_num(mu),
            runs - 1
        )
    }))
}

impl DpGibo {
    /// The run's configuration for a workload's losses.
    pub fn config(&self, losses: &PerUserDeclaration) -> Result<DpGiboConfig> {
        let d = losses.domain.len();
        let kernel = match self.kernel.as_str() {
            "polynomial" => SurrogateKernel::polynomial(d)?,
            _ => {
                let ls = match self.lengthscales.len() {
                    0 => losses.prior_lengthscales.clone().ok_or_else(|| {
                        Error::invalid(
                            "lengthscale",
                            "\"workload\"",
                            "numbers: this workload declares no prior lengthscales",
                        )
                    })?,
                    1 => vec![self.lengthscales[0]; d],
                    n if n == d => self.lengthscales.clone(),
                    n => {
                        return Err(Error::invalid(
                            "lengthscale",
                            format!("{n} values"),
                            format!("one value or one per dimension ({d})"),
                        ))
                    }
                };
                SurrogateKernel::rbf(ls, self.signal_variance)?
            }
        };
        let batch = match self.batch {
            BatchParam::Adaptive { eps_bias, b_max } => BatchMode::Adaptive {
                eps_bias,
                b_max: b_max.unwrap_or(4 * (d + 1)),
            },
            BatchParam::Fixed { b } => BatchMode::Fixed {
                b: b.unwrap_or(d + 1),
            },
        };
        let cfg = DpGiboConfig {
            mu: self.mu,
            steps: self.steps,
            clip: self.clip,
            batch,
            step_rule: self.step_rule,
            kernel,
            noise_sd: self.noise_sd.unwrap_or(losses.evaluation_sd),
            history: self.history,
            points: self.points,
            mean_jitter: 1e-9,
            theta0: self.theta0.clone(),
            loss_range: self.loss_range,
        };
        cfg.validate(&losses.domain)?;
        Ok(cfg)
    }
}

impl Tuner for DpGibo {
    fn name(&self) -> &'static str {
        "dp-gibo"
    }

    fn params(&self) -> String {
        let batch = match self.batch {
            BatchParam::Adaptive { eps_bias, b_max } => format!(
                "adaptive(eps_bias={}, b_max={})",
                fmt_num(eps_bias),
                b_max.map_or("4(d+1)".into(), |b| b.to_string())
            ),
            BatchParam::Fixed { b } => {
                format!("fixed(b={})", b.map_or("d+1".into(), |b| b.to_string()))
            }
        };
        let kernel = if self.kernel == "polynomial" {
            "polynomial".to_string()
        } else {
            let ls: Vec<String> = self.lengthscales.iter().map(|l| fmt_num(*l)).collect();
            format!(
                "rbf(l={}, s2={})",
                ls.join("/"),
                fmt_num(self.signal_variance)
            )
        };
        let mut out = format!(
            "mu={}, T={}, B={}, batch={batch}, step={}, kernel={kernel}, noise_sd={}, history={}",
            fmt_num(self.mu),
            self.steps,
            fmt_num(self.clip),
            self.step_rule.describe(),
            self.noise_sd.map_or("workload".into(), fmt_num),
            self.history.describe()
        );
        if let Some(r) = self.points.local_box {
            out += &format!(", local_box={}", fmt_num(r));
        }
        if self.points != PointOptimiser::default() {
            out += &format!(
                ", select_steps={}, select_lr={}",
                self.points.steps,
                fmt_num(self.points.lr)
            );
        }
        if let Some(t) = &self.theta0 {
            out += &format!(", theta0={t:?}");
        }
        if let Some(x) = self.evaluation_share {
            out += &format!(", evaluation_share={}", fmt_num(x));
        }
        if let Some((lo, hi)) = self.loss_range {
            out += &format!(", loss_range=[{}, {}]", fmt_num(lo), fmt_num(hi));
        }
        out
    }

    fn guarantee(
        &self,
        declared: &Declarations,
        delta: f64,
        accountant: &Accountant,
    ) -> Result<Guarantee> {
        let losses = declared_losses(self.name(), declared)?;
        let cfg = self.config(losses)?;
        match (&losses.evaluation, self.evaluation_share) {
            (None, None) => gdp_guarantee(self.mu, delta, "DP-GIBO"),
            (None, Some(_)) => Err(Error::invalid(
                "evaluation_share",
                "given",
                format!(
                    "only for a workload whose evaluations train on private data; `{}` \
                     declares none",
                    declared.name
                ),
            )),
            (Some(evaluation), _) => {
                evaluations_guarantee(self.mu, &cfg, evaluation, delta, accountant, &declared.name)
            }
        }
    }

    fn session(&self, declared: &Declarations, rng: &mut dyn RngCore) -> Result<State> {
        let losses = declared_losses(self.name(), declared)?;
        let cfg = self.config(losses)?;
        let s = GiboSession::gibo(cfg, &losses.domain, losses.n_users, rng)?;
        Ok(State::new(s))
    }

    fn budget_plan(&self, epsilon: f64, delta: f64) -> Result<BudgetPlan> {
        match self.evaluation_share {
            None => Ok(BudgetPlan::Own(Box::new(DpGibo {
                mu: mu_for_budget(epsilon, delta)?,
                ..self.clone()
            }))),
            // μ from its share alone; the harness then calibrates the evaluations' noise so
            // that the composed guarantee meets the whole budget.
            Some(share) => Ok(BudgetPlan::OwnShareThenRuns(Box::new(DpGibo {
                mu: mu_for_budget(share * Range::Positive.check("epsilon", epsilon)?, delta)?,
                ..self.clone()
            }))),
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::rng::{normal, stream};
    use crate::workloads::{Hyper, Oracle, PerUserLosses, Workload};
    use ndarray::Array2;

    /// A test workload: n users with losses ½‖θ − c_i‖² on the native box [−2, 2]^d.
    pub struct Bowl {
        centres: Array2<f64>,
        domain: Vec<(f64, f64)>,
        space: Space,
        gradients: bool,
    }

    impl Bowl {
        pub fn new(n: usize, d: usize, gradients: bool) -> Self {
            let mut rng = stream(9, &[]);
            Bowl {
                centres: Array2::from_shape_fn((n, d), |_| 0.5 + 0.2 * normal(&mut rng)),
                domain: vec![(-2.0, 2.0); d],
                space: Space::UnitBox { dim: d },
                gradients,
            }
        }
        fn native(&self, u: &[f64]) -> Vec<f64> {
            u.iter().map(|u| -2.0 + 4.0 * u).collect()
        }
        fn mean_loss(&self, u: &[f64]) -> f64 {
            let t = self.native(u);
            let n = self.centres.nrows() as f64;
            self.centres
                .rows()
                .into_iter()
                .map(|c| 0.5 * t.iter().zip(c).map(|(a, b)| (a - b) * (a - b)).sum::<f64>())
                .sum::<f64>()
                / n
        }
    }

    impl PerUserLosses for Bowl {
        fn n_users(&self) -> usize {
            self.centres.nrows()
        }
        fn domain(&self) -> &[(f64, f64)] {
            &self.domain
        }
        fn evaluation_sd(&self) -> f64 {
            0.0
        }
        fn user_losses(&self, points: &[Hyper], _rng: &mut dyn RngCore) -> Result<Array2<f64>> {
            Ok(Array2::from_shape_fn(
                (self.n_users(), points.len()),
                |(i, m)| {
                    let t = self.native(&points[m]);
                    0.5 * t
                        .iter()
                        .zip(self.centres.row(i))
                        .map(|(a, b)| (a - b) * (a - b))
                        .sum::<f64>()
                },
            ))
        }
        fn user_gradients(&self, point: &Hyper) -> Option<Array2<f64>> {
            let t = self.native(point);
            let (n, d) = self.centres.dim();
            self.gradients
                .then(|| Array2::from_shape_fn((d, n), |(j, i)| t[j] - self.centres[[i, j]]))
        }
    }

    impl Oracle for Bowl {
        fn utility(&self, h: &Hyper) -> f64 {
            -self.mean_loss(h)
        }
        fn best_utility(&self) -> f64 {
            let c = self.centres.mean_axis(ndarray::Axis(0)).unwrap();
            let u: Vec<f64> = c.iter().map(|c| (c + 2.0) / 4.0).collect();
            self.utility(&u)
        }
    }

    impl Workload for Bowl {
        fn name(&self) -> String {
            "bowl".into()
        }
        fn space(&self) -> &Space {
            &self.space
        }
        fn oracle(&self) -> &dyn Oracle {
            self
        }
        fn per_user_losses(&self) -> Option<&dyn PerUserLosses> {
            Some(self)
        }
    }

    pub fn parse(text: &str) -> Result<Box<dyn Tuner>> {
        build(&toml::from_str::<toml::Table>(text).unwrap())
    }

    #[test]
    fn guarantee_is_exact_gdp_and_inf_is_non_private() {
        let w = Bowl::new(100, 2, false);
        let acc = Accountant::default();
        let t = parse("mu = 1\nsteps = 5\nclip = 1").unwrap();
        let g = t.guarantee(&Declarations::of(&w), 1e-5, &acc).unwrap();
        assert!((g.epsilon - 4.3772).abs() < 1e-4 && g.delta == 1e-5);
        assert!(
            g.theorem.contains("1-GDP") && g.theorem.contains("0.5-zCDP"),
            "{}",
            g.theorem
        );
        for text in [
            "mu = \"inf\"\nsteps = 5\nclip = 1",
            "mu = inf\nsteps = 5\nclip = 1",
        ] {
            let g = parse(text)
                .unwrap()
                .guarantee(&Declarations::of(&w), 1e-5, &acc)
                .unwrap();
            assert_eq!(g.epsilon, f64::INFINITY);
            assert!(g.theorem.contains("non-private"));
        }
        // Equal-budget: the planned μ never exceeds the target.
        for eps in [0.3, 1.0, 4.0] {
            let plan = t.budget_plan(eps, 1e-6).unwrap();
            let own = plan.tuner().unwrap();
            let g = own.guarantee(&Declarations::of(&w), 1e-6, &acc).unwrap();
            assert!(
                g.epsilon <= eps && g.epsilon > eps * (1.0 - 1e-9),
                "{eps}: {}",
                g.epsilon
            );
        }
    }

    #[test]
    fn tunes_towards_the_optimum() {
        let w = Bowl::new(200, 2, false);
        let t = parse(
            "mu = 2\nsteps = 20\nclip = 3\nstep_rule = \"sgd\"\neta = 0.5\nselect_steps = 200",
        )
        .unwrap();
        let out = t.tune(&w, &mut stream(1, &[])).unwrap();
        assert_eq!(out.runs, 20 * 3);
        assert!(out.released_score.is_none());
        let regret = w.best_utility() - w.utility(&out.chosen.unwrap());
        assert!(regret < 0.01, "regret {regret}");
        let again = t.tune(&w, &mut stream(1, &[])).unwrap();
        assert_eq!(again.runs, out.runs);
        assert!(t.params().contains("fixed(b=d+1)"), "{}", t.params());
    }

    #[test]
    fn parameter_errors_name_the_field() {
        for (text, field) in [
            ("steps = 5\nclip = 1", "mu"),
            ("mu = 0\nsteps = 5\nclip = 1", "mu"),
            ("mu = \"infinite\"\nsteps = 5\nclip = 1", "mu"),
            ("mu = 1\nclip = 1", "steps"),
            ("mu = 1\nsteps = 5", "clip"),
            (
                "mu = 1\nsteps = 5\nclip = 1\neps_bias = 1\nbatch = 3",
                "batch",
            ),
            ("mu = 1\nsteps = 5\nclip = 1\nb_max = 3", "b_max"),
            ("mu = 1\nsteps = 5\nclip = 1\neps_bias = -1", "eps_bias"),
            (
                "mu = 1\nsteps = 5\nclip = 1\nstep_rule = \"adam\"",
                "step_rule",
            ),
            ("mu = 1\nsteps = 5\nclip = 1\neta = 0", "eta"),
            ("mu = 1\nsteps = 5\nclip = 1\nkernel = \"matern\"", "kernel"),
            (
                "mu = 1\nsteps = 5\nclip = 1\nlengthscale = [1, 0]",
                "lengthscale",
            ),
            ("mu = 1\nsteps = 5\nclip = 1\nhistory = \"some\"", "history"),
            ("mu = 1\nsteps = 5\nclip = 1\nlocal_box = 0", "local_box"),
            ("mu = 1\nsteps = 5\nclip = 1\nepsilon = 1", "epsilon"),
            (
                "mu = 1\nsteps = 5\nclip = 1\nkernel = \"polynomial\"\nlengthscale = 2",
                "kernel",
            ),
        ] {
            let e = parse(text).map(|_| ()).unwrap_err().to_string();
            assert!(e.contains(field), "{text}: {e}");
        }
        // Errors that need the workload: the lengthscale count and θ_0's box.
        let w = Bowl::new(10, 2, false);
        let acc = Accountant::default();
        for (text, field) in [
            (
                "mu = 1\nsteps = 5\nclip = 1\nlengthscale = [1, 2, 3]",
                "lengthscale",
            ),
            ("mu = 1\nsteps = 5\nclip = 1\ntheta0 = [0, 3]", "theta0"),
        ] {
            let e = parse(text)
                .unwrap()
                .guarantee(&Declarations::of(&w), 1e-6, &acc)
                .unwrap_err()
                .to_string();
            assert!(e.contains(field), "{text}: {e}");
        }
    }
}
