//! The search file of `dptune tune` and the plan made from it before any run: the space, the
//! tuner, the privacy of one run (DP-SGD, an RDP curve, ρ-zCDP, pure ε-DP or (ε, δ)-DP, read
//! into one [`Event`] by `run_event`) and of its score, what a total budget calibrates, and the
//! guarantee (the tuner's own, from that event). Everything here is data-independent.

use super::space::SearchSpace;
use crate::accounting::{
    Accountant, Conversion, DpSgd, Event, Gaussian, LotSampling, Orders, RdpCurve,
};
use crate::error::{fmt_num, Error, Range, Result};
use crate::tuners::{self, Guarantee, Tuner};
use crate::workloads::TrainingDeclaration;
use crate::workloads::{Declarations, PartitionedDeclaration, PerUserDeclaration, Space};
use serde::{Deserialize, Deserializer};

/// A number, or `"calibrated"`: dptune picks it so that the guarantee meets the total budget.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Knob {
    Fixed(f64),
    Calibrated,
}

impl<'de> Deserialize<'de> for Knob {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(f64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Number(x) => Ok(Knob::Fixed(x)),
            Raw::Text(t) if t == "calibrated" => Ok(Knob::Calibrated),
            Raw::Text(t) => Err(serde::de::Error::custom(format!(
                "expected a number or \"calibrated\", found \"{t}\""
            ))),
        }
    }
}

/// The file as written (the `[space]` table is read by [`SearchSpace::parse`]).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Written {
    /// The seed of every draw: the tuner's, each run's seed, the score noise. Left out, a
    /// secret one is drawn from the operating system.
    seed: Option<u64>,
    tuner: toml::Table,
    privacy: Option<PrivacyWritten>,
    run: Option<RunWritten>,
    score: Option<ScoreWritten>,
    /// DP-GIBO's validation users.
    users: Option<UsersWritten>,
    /// Seconds one run may take before it is stopped (and counted as failed).
    timeout_s: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PrivacyWritten {
    delta: f64,
    /// The total ε of the whole tuning: one knob written "calibrated" meets it.
    epsilon: Option<f64>,
    /// `cks` (default) or `mironov`: the RDP → (ε, δ) conversion.
    conversion: Option<String>,
}

#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
enum RunWritten {
    /// DP-SGD with Poisson or without-replacement lots.
    DpSgd {
        #[serde(default)]
        sampling: Sampling,
        sampling_rate: Option<f64>,
        steps: Option<u64>,
        data_size: Option<u64>,
        lot_size: Option<u64>,
        epochs: Option<u64>,
        noise_multiplier: Knob,
    },
    /// An RDP curve at these orders.
    Rdp {
        orders: Vec<f64>,
        epsilons: Vec<f64>,
    },
    /// ρ-zCDP.
    Zcdp { rho: f64 },
    /// Pure ε-DP.
    PureDp { epsilon: f64 },
    /// Approximate (ε, δ)-DP.
    ApproxDp { epsilon: f64, delta: f64 },
}

#[derive(Deserialize, Default, Clone, Copy, Debug, PartialEq)]
#[serde(rename_all = "kebab-case")]
enum Sampling {
    #[default]
    Poisson,
    WithoutReplacement,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScoreWritten {
    /// [lo, hi]: scores are clipped to it; a failed run scores the worst end.
    range: [f64; 2],
    #[serde(default)]
    goal: Goal,
    /// The score is computed on data the user declares public: released as it is.
    #[serde(default)]
    public: bool,
    /// A private score: the mean over this many private records, each in `range`.
    records: Option<u64>,
    /// Its noise multiplier z: dptune adds N(0, (z·(hi − lo)/records)²).
    noise: Option<Knob>,
}

/// DP-GIBO's validation users, whose losses each run reports.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UsersWritten {
    /// n, the number of validation users (public).
    count: u64,
    /// Every user's loss when a run fails (told, never dropped).
    failed_loss: f64,
    /// The standard deviation of a loss's evaluation noise (DP-GIBO's model noise σ).
    #[serde(default)]
    evaluation_sd: f64,
    /// [lo, hi]: every reported loss is clamped into it before any gradient.
    loss_range: Option<[f64; 2]>,
}

/// The users' loss range unless `[users]` declares one: wide enough for any usual loss, small
/// enough that no gradient of the surrogate overflows.
pub const DEFAULT_LOSS_RANGE: [f64; 2] = [-1e6, 1e6];

/// What DP-GIBO's runs report: every validation user's loss at a point.
#[derive(Clone, Debug, PartialEq)]
pub struct UsersPlan {
    pub count: usize,
    pub failed_loss: f64,
}

/// Whether a larger score is better.
#[derive(Deserialize, Default, Clone, Copy, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Goal {
    #[default]
    Maximize,
    Minimize,
}

/// One run's DP-SGD, as handed to the command.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct DpSgdRun {
    pub sampling: &'static str,
    pub sampling_rate: f64,
    pub steps: u64,
    pub noise_multiplier: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lot_size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epochs: Option<u64>,
}

/// How the command's score becomes the released one.
#[derive(Clone, Debug, PartialEq)]
pub struct ScorePlan {
    pub lo: f64,
    pub hi: f64,
    pub goal: Goal,
    /// (records, noise multiplier z) of a private score; None for a public one.
    pub private: Option<(u64, f64)>,
}

impl ScorePlan {
    /// The worst score (what a failed run is told).
    pub fn worst(&self) -> f64 {
        match self.goal {
            Goal::Maximize => self.lo,
            Goal::Minimize => self.hi,
        }
    }
    /// The standard deviation of the noise added to a private score.
    pub fn noise_sd(&self) -> Option<f64> {
        self.private
            .map(|(m, z)| z * (self.hi - self.lo) / m as f64)
    }
}

/// What selects the release.
pub enum Selector {
    /// A private tuner of the registry, and its parameters as the file wrote them.
    Private(Box<dyn Tuner>, String),
    /// Non-private baselines: the best of `k` uniform draws, or of every point of a grid.
    RandomSearch {
        candidates: u64,
    },
    GridSearch {
        points: Vec<Vec<f64>>,
    },
}

impl Selector {
    pub fn label(&self) -> String {
        match self {
            Selector::Private(t, written) => format!("{} ({written})", t.name()),
            Selector::RandomSearch { candidates } => {
                format!("random-search ({candidates} candidates; non-private baseline)")
            }
            Selector::GridSearch { points } => {
                format!(
                    "grid-search ({} points; non-private baseline)",
                    points.len()
                )
            }
        }
    }
}

/// Everything decided before the first run.
pub struct Plan {
    pub space: SearchSpace,
    pub selector: Selector,
    /// The seed the file sets (None: a secret one is drawn when the search starts).
    pub seed: Option<u64>,
    pub timeout_s: Option<f64>,
    /// One run's privacy as [run] declares it (its score's release apart), a calibrated noise
    /// at its value.
    pub run: Option<Event>,
    /// A DP-SGD run's parameters, handed to the command.
    pub dp_sgd: Option<DpSgdRun>,
    /// How a run's score is released (None for DP-GIBO, whose runs report losses).
    pub score: Option<ScorePlan>,
    /// DP-GIBO's validation users (None for the tuners that read a score).
    pub users: Option<UsersPlan>,
    /// What the tuner's session is built from (its space; DP-GIBO's users and box).
    pub declared: Option<Declarations>,
    /// The guarantee of the whole tuning (None for a baseline).
    pub guarantee: Option<Guarantee>,
    /// What neighbouring data sets differ in.
    pub relation: String,
    /// The knob a total budget calibrated, and its value.
    pub calibrated: Option<(&'static str, f64)>,
}

impl Plan {
    /// What the statement says of a seed the file sets: for a private search, that it lets
    /// one recompute every draw, the noise included; a baseline has no noise to recompute.
    pub fn seed_words(&self) -> Option<String> {
        let s = self.seed?;
        Some(match self.selector {
            Selector::Private(..) => format!(
                "seed {s}, set in the search file: whoever knows it can recompute the noise, so \
                 leave it out for a release you share"
            ),
            Selector::RandomSearch { .. } | Selector::GridSearch { .. } => {
                format!("seed {s}, set in the search file")
            }
        })
    }

    /// How a run's score is released: every tuner's but DP-GIBO's, whose runs report losses.
    pub fn score(&self) -> Result<&ScorePlan> {
        self.score.as_ref().ok_or_else(|| {
            Error::Infeasible("this search's runs report users' losses, not a score".into())
        })
    }
}

/// The largest mean number of runs a calibration picks unless `max_mean` says otherwise.
pub const DEFAULT_MAX_MEAN: f64 = 100.0;

/// Tuners that have no ask/tell session a command can drive yet, and why.
const NOT_YET: &[(&str, &str)] = &[
    (
        "dp-gd",
        "it needs every validation user's exact loss gradient, which a command cannot be \
         trusted to give",
    ),
    (
        "gp-ucb",
        "its guarantee holds only under a declared GP prior of the validation gain, which \
         nothing can check for your model",
    ),
    (
        "lipschitz-gain",
        "it needs exact validation gains of a strongly convex model (Assumption 2)",
    ),
];

fn at(file: &str, field: &str, reason: impl Into<String>) -> Error {
    Error::Experiment {
        file: file.into(),
        at: String::new(),
        field: field.into(),
        reason: reason.into(),
    }
}

/// An error of reading `section` of `file`, as a file error naming the key.
fn in_section(file: &str, section: &str, e: Error) -> Error {
    let join = |key: &str| {
        if section.is_empty() {
            key.to_string()
        } else if key.is_empty() {
            section.to_string()
        } else {
            format!("{section}.{key}")
        }
    };
    match e {
        Error::UnknownKey { key, allowed, .. } => {
            // The root's `space` is read apart, so serde does not list it.
            let allowed = if section.is_empty() {
                format!("space, {allowed}")
            } else {
                allowed
            };
            at(
                file,
                &join(&key),
                format!("unknown key (allowed: {allowed})"),
            )
        }
        Error::Parameter { field, reason, .. } => at(file, &join(&field), reason),
        Error::InvalidParameter {
            name,
            value,
            allowed,
        } => at(
            file,
            &join(name),
            format!("{value} is not allowed: expected {allowed}"),
        ),
        Error::Infeasible(m) => at(file, section, m),
        other => other,
    }
}

/// Reads `text` (the contents of `file`) into a plan: errors name the file, line and key.
pub fn plan(file: &str, text: &str) -> Result<Plan> {
    let located = |e: Error| crate::sim::experiment::locate_in_text(e, text);
    plan_unlocated(file, text).map_err(located)
}

fn plan_unlocated(file: &str, text: &str) -> Result<Plan> {
    let mut root: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let at = e
            .span()
            .map(|s| crate::sim::experiment::line_column(text, s.start))
            .map_or(String::new(), |(l, c)| format!(":{l}:{c}"));
        Error::Experiment {
            file: file.into(),
            at,
            field: "(syntax)".into(),
            reason: e.message().trim().to_string(),
        }
    })?;
    let space = match root.remove("space") {
        Some(toml::Value::Table(t)) => SearchSpace::parse(file, &t)?,
        Some(_) => return Err(at(file, "space", "a table of hyperparameters")),
        None => {
            return Err(at(
                file,
                "space",
                "missing: declare the hyperparameters searched",
            ))
        }
    };
    let w: Written =
        crate::params::read("search file", &root).map_err(|e| in_section(file, "", e))?;
    if w.run.is_some() {
        keeps_the_run_private(file, &space)?;
    }
    let mut tuner_table = w.tuner.clone();
    let name = match tuner_table.remove("name") {
        Some(toml::Value::String(s)) => s,
        _ => return Err(at(file, "tuner.name", "missing: the tuner's name (naive, liu-talwar, papernot-steinke, propose-test, dp-gibo, random-search, grid-search)")),
    };
    if let Some(t) = w.timeout_s {
        if !(t.is_finite() && t > 0.0) {
            return Err(at(
                file,
                "timeout_s",
                format!("{t}: expected a number of seconds > 0"),
            ));
        }
    }
    if name == "dp-gibo" {
        return gibo(file, space, tuner_table, &w);
    }
    if w.users.is_some() {
        return Err(at(
            file,
            "users",
            format!("only DP-GIBO reads users' losses; `{name}` reads a score ([score])"),
        ));
    }
    let score = match &w.score {
        Some(s) => score_plan(file, s)?,
        None => {
            return Err(at(
                file,
                "score",
                "missing: what a run's score is ([score] with `range`, and `public = true` or \
                 `records`)",
            ))
        }
    };
    let base = Plan {
        space,
        selector: Selector::RandomSearch { candidates: 0 },
        seed: w.seed,
        timeout_s: w.timeout_s,
        run: None,
        dp_sgd: None,
        score: Some(score),
        users: None,
        declared: None,
        guarantee: None,
        relation: String::new(),
        calibrated: None,
    };
    match name.as_str() {
        "random-search" | "grid-search" => baseline(file, base, &name, &tuner_table, &w),
        _ => private(file, base, &name, tuner_table, &w),
    }
}

/// Hyperparameters that change one run's privacy (DP-SGD's lots, steps and noise, a run's own
/// ε or δ): [run] declares that privacy once, for every candidate.
const PRIVACY_KNOBS: &[&str] = &[
    "epochs",
    "steps",
    "noise_multiplier",
    "sigma",
    "lot_size",
    "batch_size",
    "sampling_rate",
    "data_size",
    "epsilon",
    "delta",
];

/// Refuses a searched hyperparameter that changes one run's privacy: the guarantee counts
/// every run at the privacy [run] declares, which such a candidate would not have.
fn keeps_the_run_private(file: &str, space: &SearchSpace) -> Result<()> {
    match space
        .0
        .iter()
        .find(|(name, _)| PRIVACY_KNOBS.contains(&name.to_ascii_lowercase().as_str()))
    {
        Some((name, _)) => Err(at(
            file,
            &format!("space.{name}"),
            format!(
                "`{name}` changes one run's privacy, which [run] declares once for every run: a \
                 candidate with another {name} would not have the privacy the guarantee counts. \
                 Fix it in [run] (or in your command) and search only what leaves a run's \
                 privacy as declared (the learning rate, the clipping norm, …)"
            ),
        )),
        None => Ok(()),
    }
}

fn score_plan(file: &str, s: &ScoreWritten) -> Result<ScorePlan> {
    let [lo, hi] = s.range;
    if !(lo.is_finite() && hi.is_finite() && lo < hi) {
        return Err(at(
            file,
            "score.range",
            "[lo, hi]: two finite numbers with lo < hi",
        ));
    }
    let private =
        match (s.public, s.records, s.noise) {
            (true, None, None) => None,
            (true, _, _) => {
                return Err(at(
                    file,
                    "score.public",
                    "a public score has no `records` or `noise` (nothing is added to it)",
                ))
            }
            (false, Some(0), _) => return Err(at(file, "score.records", "0: expected at least 1")),
            (false, Some(m), Some(z)) => Some((m, z)),
            (false, _, _) => return Err(at(
                file,
                "score",
                "say what the score is: `public = true` (computed on data you declare public), \
                 or `records = N` and `noise = z | \"calibrated\"` (a mean over N private \
                 records, each in `range`, to which dptune adds N(0, (z·(hi − lo)/N)²))",
            )),
        };
    let z = match private {
        Some((_, Knob::Fixed(z))) if !(z.is_finite() && z > 0.0) => {
            return Err(at(
                file,
                "score.noise",
                format!("{z}: expected a number > 0"),
            ))
        }
        Some((m, Knob::Fixed(z))) => Some((m, z)),
        Some((m, Knob::Calibrated)) => Some((m, f64::NAN)), // set by calibration
        None => None,
    };
    Ok(ScorePlan {
        lo,
        hi,
        goal: s.goal,
        private: z,
    })
}

fn baseline(
    file: &str,
    mut plan: Plan,
    name: &str,
    params: &toml::Table,
    w: &Written,
) -> Result<Plan> {
    if w.privacy.is_some() || w.run.is_some() {
        return Err(at(
            file,
            if w.privacy.is_some() { "privacy" } else { "run" },
            format!("`{name}` is a non-private baseline: it has no guarantee to state, so the file declares no [privacy] or [run] (use naive, liu-talwar or papernot-steinke for a private search)"),
        ));
    }
    if plan.score()?.private.is_some() {
        return Err(at(file, "score", format!("`{name}` is a non-private baseline: its score is released as it is (`public = true`)")));
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Random {
        candidates: crate::params::Count,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Grid {
        points: crate::params::Count,
    }
    plan.selector = if name == "random-search" {
        let r: Random =
            crate::params::read("tuner", params).map_err(|e| in_section(file, "tuner", e))?;
        if r.candidates.0 == 0 {
            return Err(at(file, "tuner.candidates", "0: expected at least 1"));
        }
        Selector::RandomSearch {
            candidates: r.candidates.0,
        }
    } else {
        let g: Grid =
            crate::params::read("tuner", params).map_err(|e| in_section(file, "tuner", e))?;
        Selector::GridSearch {
            points: grid(file, "tuner.points", &plan.space, g.points.0)?,
        }
    };
    plan.relation = "none claimed (a non-private baseline)".into();
    Ok(plan)
}

/// Every point of the grid with `points` values per continuous coordinate (ends included),
/// every value of an integer range with at most that many, and every choice.
fn grid(file: &str, key: &str, space: &SearchSpace, points: u64) -> Result<Vec<Vec<f64>>> {
    use super::space::Range as R;
    if points == 0 {
        return Err(at(file, key, "0: expected at least 1"));
    }
    let axes: Vec<Vec<f64>> = space
        .0
        .iter()
        .map(|(_, r)| {
            let discrete = |n: u64| (0..n).map(|i| (i as f64 + 0.5) / n as f64).collect();
            match r {
                R::Choice(l) => discrete(l.len() as u64),
                R::Integer(lo, hi) if ((hi - lo + 1) as u64) <= points => {
                    discrete((hi - lo + 1) as u64)
                }
                _ if points == 1 => vec![0.5],
                _ => (0..points)
                    .map(|i| i as f64 / (points - 1) as f64)
                    .collect(),
            }
        })
        .collect();
    let total = axes.iter().map(|a| a.len() as f64).product::<f64>();
    if total > 1e5 {
        return Err(at(
            file,
            key,
            format!("the grid would have {total} points: at most 100000"),
        ));
    }
    let mut out = vec![Vec::new()];
    for axis in &axes {
        out = out
            .into_iter()
            .flat_map(|p| {
                axis.iter().map(move |&x| {
                    let mut q = p.clone();
                    q.push(x);
                    q
                })
            })
            .collect();
    }
    Ok(out)
}

/// The knobs a total budget may calibrate.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Calibrate {
    RunNoise,
    ScoreNoise,
    Mean,
}

impl Calibrate {
    fn field(self) -> &'static str {
        match self {
            Calibrate::RunNoise => "run.noise_multiplier",
            Calibrate::ScoreNoise => "score.noise",
            Calibrate::Mean => "tuner.mean",
        }
    }
}

/// δ, checked here so that a bad one is named as the file wrote it (and not by the tuner that
/// refuses it later).
fn privacy_delta(file: &str, privacy: &PrivacyWritten) -> Result<f64> {
    let d = privacy.delta;
    if d > 0.0 && d < 1.0 {
        Ok(d)
    } else {
        Err(at(
            file,
            "privacy.delta",
            format!(
                "{}: expected 0 < δ < 1 (the probability the ε bound may fail)",
                fmt_num(d)
            ),
        ))
    }
}

/// The parts of a search's guarantee a budget's message may take as free: one run's training
/// (a DP-SGD run at σ = [`FREE_NOISE`]) and its score's release (as if public).
#[derive(Clone, Copy, Default)]
struct Free {
    training: bool,
    score: bool,
}

/// A noise multiplier at which a run's training costs next to nothing.
const FREE_NOISE: f64 = 1e6;

/// Why no value of `k` meets `target`, where that is so: with the knob's own part at its
/// cheapest, the part of the guarantee (the score's release, one run's training, the tuner's
/// count) that still exceeds the budget, and the knob that changes it. `eps` is the search's
/// ε with the knob at a value and some parts free.
fn over_budget(
    k: Calibrate,
    target: f64,
    eps: &dyn Fn(f64, Free) -> Option<f64>,
    score: &ScorePlan,
    dpsgd: bool,
) -> Option<String> {
    let over = |v: f64, free: Free| eps(v, free).is_some_and(|e| e > target);
    let training = "one run's training (as [run] declares, once per run)";
    let fix_training = "more training noise (run.noise_multiplier) or fewer steps or epochs";
    let released = match score.private {
        Some((m, z)) if !z.is_nan() => format!(
            "the score's release (noise multiplier {} over {m} records, once per run)",
            fmt_num(z)
        ),
        _ => "the score's release (once per run)".into(),
    };
    let fix_score = "more score noise (score.noise) or more score.records";
    let tuner = "the tuner's own part (its number of runs, or propose-test's tests)";
    let fix_tuner = "a smaller tuner.mean, fewer candidates or cheaper tests";
    // The knob's part at its cheapest, and the parts that may be blamed, in turn.
    let (v, free, cheapest, suspects) = match k {
        Calibrate::RunNoise => (
            FREE_NOISE,
            Free {
                training: true,
                score: false,
            },
            "with the training free (run.noise_multiplier = 1e6)".to_string(),
            vec![(
                released.as_str(),
                fix_score,
                Free {
                    training: true,
                    score: true,
                },
            )],
        ),
        Calibrate::ScoreNoise => (
            FREE_NOISE,
            Free {
                training: false,
                score: true,
            },
            "with the score's release free".to_string(),
            if dpsgd {
                vec![(
                    training,
                    fix_training,
                    Free {
                        training: true,
                        score: true,
                    },
                )]
            } else {
                vec![] // a declared curve cannot be made free: the training is all there is
            },
        ),
        Calibrate::Mean => {
            let lo = [1e-6, 1.0 + 1e-6]
                .into_iter()
                .find(|&m| eps(m, Free::default()).is_some())?;
            (
                lo,
                Free::default(),
                format!("at the smallest mean ({})", fmt_num(lo)),
                vec![
                    (
                        released.as_str(),
                        fix_score,
                        Free {
                            training: false,
                            score: true,
                        },
                    ),
                    (
                        training,
                        fix_training,
                        Free {
                            training: dpsgd,
                            score: false,
                        },
                    ),
                ],
            )
        }
    };
    if !over(v, free) {
        return None;
    }
    let cost = eps(v, free)?;
    let cost = fmt_num(crate::numeric::fmt_up_sig(cost, 4).parse().unwrap_or(cost));
    let blamed = suspects.iter().find(|(_, _, f)| !over(v, *f));
    let (part, fix) = match (blamed, k) {
        (Some((part, fix, _)), _) => (*part, *fix),
        (None, Calibrate::Mean) => (
            "one run (its training and its score's release)",
            "more noise (run.noise_multiplier or score.noise)",
        ),
        (None, Calibrate::ScoreNoise) if !dpsgd => (training, "a cheaper run in [run]"),
        (None, _) => (tuner, fix_tuner),
    };
    Some(format!(
        "{cheapest}, {part} still costs ε = {cost}: {fix}, or a larger privacy.epsilon"
    ))
}

/// The RDP accountant the file asks for (`conversion`).
fn accountant_of(file: &str, privacy: &PrivacyWritten) -> Result<Accountant> {
    let conversion = match privacy.conversion.as_deref() {
        None | Some("cks") => Conversion::Cks,
        Some("mironov") => Conversion::Mironov,
        Some(c) => {
            return Err(at(
                file,
                "privacy.conversion",
                format!("`{c}`: expected `cks` or `mironov`"),
            ))
        }
    };
    Ok(Accountant::new(Orders::Continuous, conversion))
}

/// DP-GIBO over the command: each run reports every validation user's loss at one point, and
/// the guarantee is DP-GIBO's μ-GDP for validation sets that replace one user (composed with
/// the runs' declared cost when [run] says the training data is private too). A total budget
/// calibrates μ (without [run]).
fn gibo(file: &str, space: SearchSpace, mut params: toml::Table, w: &Written) -> Result<Plan> {
    if w.score.is_some() {
        return Err(at(file, "score", "DP-GIBO reads every validation user's loss from a run (a last line like {\"losses\": [0.31, 0.12, …]}), not a score: declare [users] instead"));
    }
    let users = w.users.as_ref().ok_or_else(|| {
        at(file, "users", "missing: DP-GIBO needs [users] with `count` (the number of validation users, public) and `failed_loss` (every user's loss when a run fails)")
    })?;
    if users.count == 0 {
        return Err(at(
            file,
            "users.count",
            "0: expected at least 1 validation user",
        ));
    }
    let [lo, hi] = users.loss_range.unwrap_or(DEFAULT_LOSS_RANGE);
    if !(lo.is_finite() && hi.is_finite() && lo < hi) {
        return Err(at(
            file,
            "users.loss_range",
            "[lo, hi]: two finite numbers with lo < hi (every reported loss is clamped into it)",
        ));
    }
    if !(lo..=hi).contains(&users.failed_loss) {
        return Err(at(
            file,
            "users.failed_loss",
            format!(
                "{}: expected a number in users.loss_range [{}, {}] (a loss a run could report)",
                fmt_num(users.failed_loss),
                fmt_num(lo),
                fmt_num(hi)
            ),
        ));
    }
    if params.contains_key("loss_range") {
        return Err(at(
            file,
            "tuner.loss_range",
            "the users' loss range is declared in [users] (loss_range = [lo, hi])",
        ));
    }
    if !(users.evaluation_sd.is_finite() && users.evaluation_sd >= 0.0) {
        return Err(at(file, "users.evaluation_sd", "expected a number >= 0"));
    }
    if let Some((name, _)) = space.0.iter().find(|(_, r)| {
        !matches!(
            r,
            super::space::Range::Uniform(..) | super::space::Range::LogUniform(..)
        )
    }) {
        return Err(at(file, &format!("space.{name}"), "DP-GIBO follows a gradient: every hyperparameter must be continuous (uniform or log-uniform)"));
    }
    let privacy = w.privacy.as_ref().ok_or_else(|| {
        at(
            file,
            "privacy",
            "missing: DP-GIBO needs [privacy] with `delta` (and `epsilon` for a total budget)",
        )
    })?;
    let delta = privacy_delta(file, privacy)?;
    let accountant = accountant_of(file, privacy)?;
    let run = match &w.run {
        None => None,
        Some(RunWritten::ApproxDp { .. }) => {
            return Err(at(file, "run", "DP-GIBO composes the runs' cost in RDP: declare their RDP curve (kind = \"rdp\"), zCDP or DP-SGD instead"))
        }
        Some(r) => Some(run_event(file, r, None)?),
    };
    let dp_sgd = match &w.run {
        Some(r) => dpsgd_run(file, r, None)?,
        None => None,
    };
    let calibrate = params.get("mu").and_then(|v| v.as_str()) == Some("calibrated");
    let target = match (privacy.epsilon, calibrate, &run) {
        (Some(e), true, None) => Some(
            Range::Positive
                .check("epsilon", e)
                .map_err(|e| in_section(file, "privacy", e))?,
        ),
        (None, true, _) => return Err(at(file, "tuner.mu", "\"calibrated\" needs a total budget: set privacy.epsilon")),
        (Some(_), false, _) => return Err(at(file, "privacy.epsilon", "a total budget calibrates μ: write mu = \"calibrated\"")),
        (Some(_), true, Some(_)) => return Err(at(file, "tuner.mu", "with [run], the runs' cost adds to μ's: write μ and dptune states the total (no calibration)")),
        (None, false, _) => None,
    };
    let dim = space.dim();
    let declared = Declarations {
        per_user: Some(PerUserDeclaration {
            n_users: users.count as usize,
            domain: vec![(0.0, 1.0); dim],
            evaluation_sd: users.evaluation_sd,
            prior_lengthscales: None,
            evaluation: run.clone(),
        }),
        ..Declarations::of_space("your command", Space::UnitBox { dim })
    };
    if calibrate {
        params.insert("mu".into(), toml::Value::Float(1.0));
    }
    // The tuner clamps every loss into the users' range (declared in [users], not [tuner]).
    let build = |params: &toml::Table| {
        let mut params = params.clone();
        let range = [lo, hi].map(toml::Value::Float);
        params.insert("loss_range".into(), toml::Value::Array(range.into()));
        tuners::build("dp-gibo", &params).map_err(|e| in_section(file, "tuner", e))
    };
    let mut tuner = build(&params)?;
    let mut calibrated = None;
    if let Some(target) = target {
        // DP-GIBO's own budget: μ-GDP meets (ε, δ) exactly at this μ (its `budget_plan`),
        // shortened to four significant digits downwards (a smaller μ spends less).
        let exact = crate::gibo::mu_for_budget(target, delta)
            .map_err(|e| in_section(file, "privacy", e))?;
        let mu = crate::numeric::fmt_up_sig(-exact, 4)
            .parse::<f64>()
            .map(|x| -x)
            .ok()
            .filter(|&m| m > 0.0 && m <= exact)
            .unwrap_or(exact);
        params.insert("mu".into(), toml::Value::Float(mu));
        tuner = build(&params)?;
        calibrated = Some(("tuner.mu", mu));
    }
    let guarantee = tuner
        .guarantee(&declared, delta, &accountant)
        .map_err(|e| in_section(file, "tuner", e))?;
    if !guarantee.epsilon.is_finite() {
        return Err(at(file, "tuner.mu", "\"inf\" runs DP-GIBO without noise, which protects nothing: give a μ > 0 (or use random-search as a non-private baseline)"));
    }
    if let Some(target) = target {
        if guarantee.epsilon > target || guarantee.delta > delta {
            return Err(Error::PrivacyBreach(format!(
                "the calibrated guarantee ({}, {}) exceeds the budget ({target}, {delta})",
                guarantee.epsilon, guarantee.delta
            )));
        }
    }
    let n = users.count;
    let training = match &run {
        None => "the training data is public (declare [run] when it is not)".to_string(),
        Some(_) => "or data sets that differ in one training record as [run] declares, each \
                    run counted"
            .to_string(),
    };
    Ok(Plan {
        space,
        selector: Selector::Private(tuner, written(&params, calibrated.map(|(_, m)| ("mu", m)))),
        seed: w.seed,
        timeout_s: w.timeout_s,
        run,
        dp_sgd,
        score: None,
        users: Some(UsersPlan {
            count: users.count as usize,
            failed_loss: users.failed_loss,
        }),
        declared: Some(declared),
        guarantee: Some(guarantee),
        relation: format!(
            "validation sets that differ by replacing one of the {n} validation users (each \
             user's surrogate gradient is clipped to norm B); {training}"
        ),
        calibrated,
    })
}

fn private(
    file: &str,
    mut plan: Plan,
    name: &str,
    params: toml::Table,
    w: &Written,
) -> Result<Plan> {
    if let Some((_, why)) = NOT_YET.iter().find(|(n, _)| *n == name) {
        // Every other registered tuner can (a new one with no edit here).
        let others: Vec<&str> = tuners::names()
            .into_iter()
            .filter(|n| NOT_YET.iter().all(|(x, _)| x != n))
            .chain(["random-search", "grid-search"])
            .collect();
        return Err(at(
            file,
            "tuner.name",
            format!(
                "`{name}` cannot drive a command: {why}. Use {}",
                others.join(", ")
            ),
        ));
    }
    let privacy = w.privacy.as_ref().ok_or_else(|| {
        at(file, "privacy", format!("missing: a private tuner (`{name}`) needs [privacy] with `delta` (and `epsilon` for a total budget)"))
    })?;
    let run = w.run.as_ref().ok_or_else(|| {
        at(
            file,
            "run",
            "missing: what one run costs (kind = \"dp-sgd\", \"rdp\", \"zcdp\", \"pure-dp\" or \"approx-dp\")",
        )
    })?;
    let delta = privacy_delta(file, privacy)?;
    let accountant = accountant_of(file, privacy)?;
    // A run declared (ε0, δ0)-DP: its score's release is counted in that (ε0, δ0) (no RDP
    // curve to compose dptune's score noise with), and nothing is calibrated.
    let approx = match run {
        RunWritten::ApproxDp { epsilon, delta } => Some((*epsilon, *delta)),
        _ => None,
    };
    if approx.is_some() {
        if plan.score()?.private.is_some() {
            return Err(at(file, "score", "with a run declared (ε, δ)-DP, count its score's release in that (ε, δ) and declare `public = true` (dptune composes its own score noise only with an RDP curve)"));
        }
        if privacy.epsilon.is_some() {
            return Err(at(file, "privacy.epsilon", "a run declared (ε, δ)-DP has nothing dptune can calibrate: leave out the total budget (the guarantee is printed) or declare the run's RDP curve"));
        }
    }
    // Which knob, if any, is written "calibrated". A calibrated mean is the largest that meets
    // the budget up to `max_mean`: ε grows only like ln E[K], so without a cap a cheap run
    // would be repeated millions of times.
    let mut params = params;
    let max_mean = match params.remove("max_mean") {
        None => DEFAULT_MAX_MEAN,
        Some(v) => match v.as_float().or_else(|| v.as_integer().map(|i| i as f64)) {
            Some(m) if m.is_finite() && m > 0.0 => m,
            _ => {
                return Err(at(
                    file,
                    "tuner.max_mean",
                    format!("{v}: expected a number > 0"),
                ))
            }
        },
    };
    let mean_calibrated = params.get("mean").and_then(|v| v.as_str()) == Some("calibrated");
    if !mean_calibrated && max_mean != DEFAULT_MAX_MEAN {
        return Err(at(
            file,
            "tuner.max_mean",
            "caps a calibrated mean: write mean = \"calibrated\"",
        ));
    }
    let mut knobs = Vec::new();
    if matches!(
        run,
        RunWritten::DpSgd {
            noise_multiplier: Knob::Calibrated,
            ..
        }
    ) {
        knobs.push(Calibrate::RunNoise);
    }
    if plan.score()?.private.is_some_and(|(_, z)| z.is_nan()) {
        knobs.push(Calibrate::ScoreNoise);
    }
    if mean_calibrated {
        knobs.push(Calibrate::Mean);
    }
    let knob = match (privacy.epsilon, knobs.as_slice()) {
        (None, []) => None,
        (None, [k, ..]) => {
            return Err(at(file, k.field(), "\"calibrated\" needs a total budget: set privacy.epsilon"))
        }
        (Some(_), []) => {
            return Err(at(file, "privacy.epsilon", "a total budget calibrates one knob: write \"calibrated\" for run.noise_multiplier, score.noise or tuner.mean"))
        }
        (Some(e), [k]) => {
            Range::Positive.check("epsilon", e).map_err(|e| in_section(file, "privacy", e))?;
            Some(*k)
        }
        (Some(_), [_, k2, ..]) => {
            return Err(at(file, k2.field(), "only one knob may be \"calibrated\" (dptune meets the budget by one number)"))
        }
    };
    // Propose-test's candidates are the public grid of the space, each distinct (a choice
    // axis has exactly its choices, an integer axis at most its integers): the library's grid
    // over the box would repeat them.
    let shown = params.clone();
    let space = match (name, params.remove("grid")) {
        ("propose-test", Some(g)) => {
            let n = g.as_integer().filter(|&n| n >= 2).ok_or_else(|| {
                at(
                    file,
                    "tuner.grid",
                    format!("{g}: expected an integer >= 2 (points per continuous axis)"),
                )
            })?;
            Space::Finite(grid(file, "tuner.grid", &plan.space, n as u64)?)
        }
        (_, g) => {
            if let Some(g) = g {
                params.insert("grid".into(), g); // the tuner says what it makes of it
            }
            Space::UnitBox {
                dim: plan.space.dim(),
            }
        }
    };
    // The guarantee with the knob at `v` (the written values otherwise).
    let score = plan.score()?.clone();
    // `free` parts cost (almost) nothing, to say which part alone exceeds a budget.
    let setup = |v: f64, free: Free| -> Result<(Box<dyn Tuner>, Event, ScorePlan)> {
        let mut params = params.clone();
        if knob == Some(Calibrate::Mean) {
            params.insert("mean".into(), toml::Value::Float(v));
        }
        let tuner = tuners::build(name, &params).map_err(|e| in_section(file, "tuner", e))?;
        let sigma = match free.training {
            true => Some(FREE_NOISE),
            false => (knob == Some(Calibrate::RunNoise)).then_some(v),
        };
        let run = run_event(file, run, sigma)?;
        let mut score = score.clone();
        if free.score {
            score.private = None;
        } else if knob == Some(Calibrate::ScoreNoise) {
            score.private = score.private.map(|(m, _)| (m, v));
        }
        Ok((tuner, run, score))
    };
    let guarantee_with = |v: f64, free: Free| -> Result<Guarantee> {
        let (tuner, run, score) = setup(v, free)?;
        let declared = declarations(&space, &run, &score)?;
        tuner
            .guarantee(&declared, delta, &accountant)
            .map_err(|e| match (approx, e) {
                (Some(run), e @ Error::Infeasible(_)) => {
                    // Spending more δ than asked, a bound exists at a larger δ; else none does.
                    let more = tuner.guarantee(&declared, 0.5, &accountant).is_ok();
                    no_approx_bound(file, tuner.as_ref(), run, delta, more, e)
                }
                (_, e) => in_section(file, "tuner", e),
            })
    };
    let guarantee_at = |v: f64| guarantee_with(v, Free::default());
    let value = match (knob, privacy.epsilon) {
        (Some(k), Some(target)) => {
            let eps = |v: f64, free: Free| guarantee_with(v, free).ok().map(|g| g.epsilon);
            let dpsgd = matches!(run, RunWritten::DpSgd { .. });
            if let Some(why) = over_budget(k, target, &eps, &score, dpsgd) {
                return Err(at(
                    file,
                    k.field(),
                    format!(
                        "cannot meet the budget ε = {} at δ = {}: {why}",
                        fmt_num(target),
                        fmt_num(delta)
                    ),
                ));
            }
            let v = calibrate(k, target, max_mean, &guarantee_at).map_err(|e| {
                at(
                    file,
                    k.field(),
                    format!(
                        "cannot meet the budget ε = {} at δ = {}: {}",
                        fmt_num(target),
                        fmt_num(delta),
                        e
                    ),
                )
            })?;
            // Four significant digits, towards the side that spends less (more noise, a
            // smaller mean), where the guarantee still meets the budget.
            let up = |x: f64| crate::numeric::fmt_up_sig(x, 4).parse::<f64>().ok();
            let short = match k {
                Calibrate::Mean => up(-v).map(|x| -x),
                Calibrate::RunNoise | Calibrate::ScoreNoise => up(v),
            };
            let meets = |x: f64| guarantee_at(x).is_ok_and(|g| g.epsilon <= target);
            let v = short.filter(|&x| meets(x)).unwrap_or(v);
            plan.calibrated = Some((k.field(), v));
            v
        }
        _ => f64::NAN,
    };
    let guarantee = guarantee_at(value)?;
    if !guarantee.epsilon.is_finite() {
        // The PLD accountant's bound where the losses outgrow its grid (noise this small).
        let pld = params.get("accountant").and_then(|a| a.as_str()) == Some("pld");
        return Err(at(
            file,
            if pld { "tuner.accountant" } else { "tuner" },
            format!(
                "no finite ε at δ = {}: {}",
                fmt_num(delta),
                if pld {
                    "the privacy-loss distribution of these runs outgrows its grid (noise this \
                     small); use accountant = \"best\" (the default) or \"rdp\", or more noise"
                } else {
                    "more noise, or fewer runs"
                }
            ),
        ));
    }
    if let Some(target) = privacy.epsilon {
        // The calibration checked this; a guarantee above the budget would be a privacy bug.
        if guarantee.epsilon > target || guarantee.delta > delta {
            return Err(Error::PrivacyBreach(format!(
                "the calibrated guarantee ({}, {}) exceeds the budget ({target}, {delta})",
                guarantee.epsilon, guarantee.delta
            )));
        }
    }
    let sigma = (knob == Some(Calibrate::RunNoise)).then_some(value);
    plan.dp_sgd = dpsgd_run(file, run, sigma)?;
    let (tuner, run, score) = setup(value, Free::default())?;
    plan.relation = relation(&run, &score);
    plan.declared = Some(declarations(&space, &run, &score)?);
    let mean = (knob == Some(Calibrate::Mean)).then_some(("mean", value));
    plan.selector = Selector::Private(tuner, written(&shown, mean));
    plan.run = Some(run);
    plan.score = Some(score);
    plan.guarantee = Some(guarantee);
    Ok(plan)
}

/// Why a search over runs declared `run` = (ε0, δ0)-DP has no guarantee at `delta`, from the
/// accountants' `error`: it spends `more` δ than privacy.delta (a bound exists at a larger δ),
/// or no theorem here bounds it (a truncated count, Liu–Talwar's threshold variant).
fn no_approx_bound(
    file: &str,
    tuner: &dyn Tuner,
    (eps0, delta0): (f64, f64),
    delta: f64,
    more: bool,
    error: Error,
) -> Error {
    let runs = format!("runs declared ({}, {})-DP", fmt_num(eps0), fmt_num(delta0));
    if more {
        at(
            file,
            "privacy.delta",
            format!(
                "`{}` over {runs} spends more δ than privacy.delta = {}: a larger privacy.delta, \
                 fewer runs or a smaller δ in [run] ({error})",
                tuner.name(),
                fmt_num(delta)
            ),
        )
    } else {
        at(
            file,
            "run",
            format!(
                "`{}` ({}) has no bound here over {runs}: declare the run's RDP curve (kind = \
                 \"rdp\") instead ({error})",
                tuner.name(),
                tuner.params()
            ),
        )
    }
}

/// A tuner's parameters as the file wrote them (`dist = "tnb:1", mean = 10`), a calibrated
/// mean with its value.
fn written(params: &toml::Table, calibrated: Option<(&str, f64)>) -> String {
    let text: Vec<String> = params
        .iter()
        .map(|(k, v)| match calibrated {
            Some((key, m)) if key == k => format!("{k} = {} (calibrated)", fmt_num(m)),
            _ => format!("{k} = {v}"),
        })
        .collect();
    if text.is_empty() {
        "as written".into()
    } else {
        text.join(", ")
    }
}

/// The knob's value that meets `target`: the smallest noise (the equal-budget calibration the
/// experiment harness uses, [`crate::accounting::smallest_run_noise`]), or the largest mean.
fn calibrate(
    k: Calibrate,
    target: f64,
    max_mean: f64,
    guarantee_at: &dyn Fn(f64) -> Result<Guarantee>,
) -> Result<f64> {
    let eps = |v: f64| guarantee_at(v).map(|g| g.epsilon);
    let meets = |v: f64| eps(v).map(|e| e <= target).unwrap_or(false);
    match k {
        Calibrate::RunNoise | Calibrate::ScoreNoise => {
            let bound = |v: f64| guarantee_at(v).map(|g| g.bound());
            crate::accounting::smallest_run_noise("noise multiplier", target, bound)
                .map(|c| c.value)
        }
        Calibrate::Mean => {
            // The smallest mean the tuner accepts (a TNB law's exceeds 1).
            let lo = [1e-6, 1.0 + 1e-6]
                .into_iter()
                .find(|&m| guarantee_at(m).is_ok())
                .ok_or_else(|| Error::Infeasible("no mean is valid for this tuner".into()))?;
            if !meets(lo) {
                return Err(Error::Infeasible(format!(
                    "even the smallest mean ({}) costs ε = {}: one run already costs too much",
                    fmt_num(lo),
                    crate::numeric::fmt_up_sig(eps(lo)?, 4)
                )));
            }
            let cap = max_mean;
            if cap < lo {
                return Err(Error::Infeasible(format!(
                    "max_mean = {} is below the smallest mean this tuner takes ({})",
                    fmt_num(cap),
                    fmt_num(lo)
                )));
            }
            if meets(cap) {
                return Ok(cap);
            }
            let (mut a, mut b) = (libm::log(lo), libm::log(cap));
            while b - a > 1e-9 {
                let mid = 0.5 * (a + b);
                if meets(libm::exp(mid)) {
                    a = mid;
                } else {
                    b = mid;
                }
            }
            Ok(libm::exp(a))
        }
    }
}

/// A DP-SGD run's parameters as [run] declares them, its noise `calibrated` where a budget
/// set it (None for the other kinds of run).
fn dpsgd_run(file: &str, run: &RunWritten, calibrated: Option<f64>) -> Result<Option<DpSgdRun>> {
    let section = |e| in_section(file, "run", e);
    let RunWritten::DpSgd {
        sampling,
        sampling_rate,
        steps,
        data_size,
        lot_size,
        epochs,
        noise_multiplier,
    } = run
    else {
        return Ok(None);
    };
    let sigma = match (noise_multiplier, calibrated) {
        (_, Some(v)) => v,
        (Knob::Fixed(s), None) => *s,
        (Knob::Calibrated, None) => {
            return Err(at(
                file,
                "run.noise_multiplier",
                "\"calibrated\" needs a total budget: set privacy.epsilon",
            ))
        }
    };
    let lots = match sampling {
        Sampling::Poisson => LotSampling::Poisson,
        Sampling::WithoutReplacement => LotSampling::WithoutReplacement,
    };
    let d = match (sampling_rate, steps, data_size, lot_size, epochs) {
        (Some(q), Some(t), None, None, None) => {
            DpSgd::with_sampling(lots, *q, sigma, *t).map_err(section)?
        }
        (None, None, Some(n), Some(m), Some(e)) => {
            let w = DpSgd::without_replacement(*n, *m, sigma, *e).map_err(section)?;
            DpSgd::with_sampling(lots, w.sampling_rate(), sigma, w.steps()).map_err(section)?
        }
        _ => {
            return Err(at(file, "run", "DP-SGD's lots: either `sampling_rate` and `steps`, or `data_size`, `lot_size` and `epochs` (q = lot_size/data_size, epochs·round(data_size/lot_size) steps)"))
        }
    };
    Ok(Some(DpSgdRun {
        sampling: match sampling {
            Sampling::Poisson => "poisson",
            Sampling::WithoutReplacement => "without-replacement",
        },
        sampling_rate: d.sampling_rate(),
        steps: d.steps(),
        noise_multiplier: sigma,
        data_size: *data_size,
        lot_size: *lot_size,
        epochs: *epochs,
    }))
}

/// One run's privacy event as [run] declares it (its score's release apart), a DP-SGD run's
/// noise `calibrated` where a budget set it: the one translation of [run].
fn run_event(file: &str, run: &RunWritten, calibrated: Option<f64>) -> Result<Event> {
    let section = |e| in_section(file, "run", e);
    match run {
        RunWritten::DpSgd { .. } => {
            let d = dpsgd_run(file, run, calibrated)?.expect("a DP-SGD run");
            Event::dpsgd(&d.mechanism()?)
        }
        RunWritten::Rdp { orders, epsilons } => {
            RdpCurve::on_grid(orders.clone(), epsilons.clone()).map_err(section)?;
            Event::renyi_curve(orders.clone(), epsilons.clone()).map_err(section)
        }
        RunWritten::Zcdp { rho } => {
            Range::Positive.check("rho", *rho).map_err(section)?;
            Event::zcdp(*rho).map_err(section)
        }
        RunWritten::PureDp { epsilon } => {
            Range::Positive
                .check("epsilon", *epsilon)
                .map_err(section)?;
            Event::pure_dp(*epsilon).map_err(section)
        }
        RunWritten::ApproxDp { epsilon, delta } => {
            Range::Positive
                .check("epsilon", *epsilon)
                .map_err(section)?;
            Range::OpenUnit.check("delta", *delta).map_err(section)?;
            Event::approximate_dp(*epsilon, *delta).map_err(section)
        }
    }
}

impl DpSgdRun {
    fn mechanism(&self) -> Result<DpSgd> {
        let lots = if self.sampling == "poisson" {
            LotSampling::Poisson
        } else {
            LotSampling::WithoutReplacement
        };
        DpSgd::with_sampling(lots, self.sampling_rate, self.noise_multiplier, self.steps)
    }
}

/// What the tuner's guarantee rests on: one run, its score's release composed in.
fn declarations(space: &Space, run: &Event, score: &ScorePlan) -> Result<Declarations> {
    let mut event = run.clone();
    if let (Some((m, _)), Some(sd)) = (score.private, score.noise_sd()) {
        let release = Gaussian::new((score.hi - score.lo) / m as f64, sd)?;
        event = Event::composed(vec![event, Event::of_gaussian(&release)])?;
    }
    Ok(Declarations {
        name: "your command".into(),
        space: space.clone(),
        training: Some(TrainingDeclaration { run: event }),
        gain_prior: None,
        lipschitz: None,
        // Propose-test's shard utilities: each a mean over the score's records (private ones
        // when the score is private), mapped to [0, 1].
        partitioned: Some(PartitionedDeclaration {
            private_validation_records: score.private.map(|(m, _)| m as usize),
        }),
        per_user: None,
    })
}

/// The neighbouring relation the guarantee holds under, in words: the one a DP-SGD run's lots
/// fix (the only kind of [run] that fixes one), or the one [run] was declared under.
fn relation(run: &Event, score: &ScorePlan) -> String {
    use crate::accounting::event::Neighbours;
    let training = match run.neighbours() {
        Some(Neighbours::AddOrRemoveOne) => {
            "data sets that differ by adding or removing one training record (Poisson lots)"
                .to_string()
        }
        Some(Neighbours::ReplaceOne) => {
            "data sets that differ by replacing one training record (lots without replacement)"
                .to_string()
        }
        None => "the neighbouring relation under which one run has the privacy declared in [run]"
            .to_string(),
    };
    match score.private {
        Some((m, _)) => format!(
            "{training}, or by replacing one of the {m} private score records (each record moves the score by at most (hi − lo)/{m})"
        ),
        None => format!("{training}; the score is computed on data declared public"),
    }
}
