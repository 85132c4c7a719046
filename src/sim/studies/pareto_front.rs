//! Spec 001 (`kind = "pareto-front"`): privacy–utility Pareto fronts found by DPareto, random
//! sampling and grid search on the same oracle, with the common yardstick of spec 001 §5.
//!
//! Oracles: `svt` (the sparse vector technique, synthetic, spec §3.1 B) or `dpsgd-task` (the
//! five DP-SGD / DP-Adam tasks of spec §3.2 on Adult and Fashion-MNIST; ε by the accountant,
//! error = mean test error over `replicates` runs). Tuners (`[[tuners]]`, `method`):
//! `dpareto` (k₀ initial points, then HVPoI or EHVI proposals), `random` (uniform, or spec
//! Tables 3–4's distributions) and `grid` (linear spacing over Table 1's box or a table's
//! accept box, spec Fig. 6). A DPareto run and a random run of the same seed and design share
//! their first k₀ points (the same stream), as in spec Fig. 5.
//!
//! Units: one per (task, tuner, seed); grid search is deterministic in its points and runs
//! once (seed 0). Files: `points.parquet` (one row per evaluation: λ, ε, mean / min / max / sd
//! of the replicate errors, the acquisition and the GPs' prediction at proposals, oracle and
//! tuner wall times), and derived `hv_trace.parquet` (hv_lin, hv_log, hv_norm after each
//! evaluation), `front.parquet` (each run's mean, best- and worst-replicate fronts),
//! `mean_front.parquet` (those fronts' means over the seeds, what the text compares),
//! `summary.parquet` (per task and tuner: hypervolumes with 95% Student-t intervals over seeds,
//! best error at ε ≤ e, evaluations to reach 95% of the union front's hypervolume, wall-clock
//! seconds of tuner and oracle per seed), `hv_diff.parquet` (spec Table 2:
//! DPareto's hypervolume minus that of random-sampling chunks of the same size, t-intervals,
//! per DPareto seed and Welch's test over seeds) and `efficiency.parquet` (random-sampling
//! evaluations needed to match DPareto's final hypervolume). The kind draws nothing: the
//! experiment files declare their figures and tables over these.
//!
//! Honesty (spec §5): every tuner here is non-private: the front is what a data owner learns,
//! not a private release, and keeping the best of many noisy means biases it optimistically.
//! `reevaluate = N` measures that bias: each point of a run's front inside the reference box
//! is evaluated N more times on fresh streams (columns `reeval_error`, `reeval_n_rep`,
//! `reeval_wall_ms` of `points.parquet`; the `reevaluated` front variant; `hv_lin_reeval` and
//! `hv_log_reeval` in the summary and `reevaluated.md`), and a benchmark's `front = …` then
//! measures private tuners against the re-evaluated front.

use super::StudyKind;
use crate::data::TrainTest;
use crate::error::{Error, Result};
use crate::learn::Device;
use crate::numeric::stats::{mean, mean_interval, one_sample_t, welch_t, TTest};
use crate::params::{Count, OneOrMany};
use crate::pareto::designs::Design;
use crate::pareto::dpareto::{
    Acquisition, Dimension, DparetoOptions, Evaluation, FrontSearch, Observation, Oracle,
    PrivacyModel, Step,
};
use crate::pareto::oracles::SvtOracle;
use crate::pareto::{
    best_error_at, hv_lin, hv_log, Objectives, StepFront, BEST_ERROR_EPSILONS, HV_REFERENCE,
};
use crate::rng::{stream, word_position};
use crate::sim::fields::{fnv1a, Fields};
use crate::sim::store::Journal;
use crate::sim::study::Study;
use crate::sim::table::{finite, Table};
use crate::workloads::dpsgd_tasks::{Domain, Task, TaskData, TaskId, TaskOracle};
use rand::RngCore;
use rand_chacha::ChaCha20Rng;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Instant;

pub const KIND: StudyKind = StudyKind {
    source: file!(),
    name: "pareto-front",
    about: "spec 001: Pareto fronts by DPareto, random sampling and grid search (hypervolume traces, fronts, Table 2)",
    parse: |f| Ok(Box::new(parse(f)?)),
};

/// A point is "near the front" when its error is within this of the union front's best error
/// at its ε (spec §4.5's clustering check).
const NEAR_FRONT: f64 = 0.02;

/// The stream of a (task, seed) run ("fron"): shared by every tuner of that seed.
const RUN_STREAM: u64 = 0x6672_6f6e;

/// The streams of a front point's re-evaluations ("rfrs"), keyed by the task, λ and the
/// re-evaluation's index: never a search's stream, and the same λ gets the same fresh runs
/// whichever tuner or seed found it (common random numbers).
const REEVAL_STREAM: u64 = 0x7266_7273;

/// What the tuners evaluate.
#[derive(Clone, Debug, PartialEq)]
pub enum FrontOracle {
    Svt(SvtOracle),
    Tasks {
        tasks: Vec<TaskId>,
        /// Data files instead of the cache (`adult = [train, test]`, `fashion_mnist = [4 IDX
        /// files]`), relative to the working directory.
        adult: Option<Vec<String>>,
        fashion_mnist: Option<Vec<String>>,
        /// Only the first (training, test) rows of the data.
        rows: Option<[usize; 2]>,
        /// A cap on Table 1's epochs.
        max_epochs: Option<u64>,
        replicates: usize,
        device: Device,
    },
}

/// How a tuner searches.
#[derive(Clone, Debug, PartialEq)]
pub enum Method {
    Dpareto {
        options: DparetoOptions,
        /// The design of the k₀ initial points.
        initial: Design,
    },
    Random {
        count: usize,
        design: Design,
    },
    Grid {
        points: usize,
        /// `Uniform` = the oracle's box (Table 1); a table = its accept box (spec Fig. 6).
        within: Design,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct FrontTuner {
    pub label: String,
    pub method: Method,
}

impl FrontTuner {
    fn method_name(&self) -> &'static str {
        match self.method {
            Method::Dpareto { .. } => "dpareto",
            Method::Random { .. } => "random",
            Method::Grid { .. } => "grid",
        }
    }
}

/// A `pareto-front` file.
#[derive(Debug)]
pub struct ParetoFront {
    pub seed: u64,
    pub seeds: u64,
    pub oracle: FrontOracle,
    pub tuners: Vec<FrontTuner>,
    /// Fresh evaluations of each front point (0: none; spec §5's honesty flag).
    pub reevaluate: usize,
    /// Loaded data, shared by the units of a process (loaded on first use, so reading the
    /// file needs no data).
    data: Mutex<HashMap<TaskData, Arc<TrainTest>>>,
}

/// One unit: a (task, tuner, seed) run.
struct Unit {
    task: usize,
    tuner: usize,
    seed: u64,
}

/// One `[[tuners]]` entry of a `pareto-front` file: `method` and the fields of that method
/// (`dpareto`: initial … initial_design; `random`: count, design; `grid`: points, box).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TunerParams {
    method: Option<String>,
    label: Option<String>,
    initial: Option<Count>,
    iterations: Option<Count>,
    candidates: Option<Count>,
    fit_restarts: Option<Count>,
    privacy: Option<String>,
    acquisition: Option<String>,
    initial_design: Option<String>,
    count: Option<Count>,
    design: Option<String>,
    points: Option<Count>,
    #[serde(rename = "box")]
    within: Option<String>,
}

fn design(f: &Fields, key: &'static str, given: Option<&str>) -> Result<Design> {
    Design::parse(given.unwrap_or("uniform")).map_err(|e| f.bad(key, &e.to_string()))
}

fn parse_tuner(t: &Fields) -> Result<FrontTuner> {
    let p: TunerParams = t.read("a `pareto-front` tuner", &[])?;
    let method = p
        .method
        .as_deref()
        .ok_or_else(|| t.missing("method", "`dpareto`, `random` or `grid`"))?;
    let count = |key: &'static str, given: Option<Count>, what: &str| -> Result<usize> {
        Ok(t.count(key, given.ok_or_else(|| t.missing(key, what))?, 1)? as usize)
    };
    let optional = |key, given, min, default: usize| {
        t.count_or(key, given, min, default as u64)
            .map(|v| v as usize)
    };
    let given = [
        ("initial", p.initial.is_some()),
        ("iterations", p.iterations.is_some()),
        ("candidates", p.candidates.is_some()),
        ("fit_restarts", p.fit_restarts.is_some()),
        ("privacy", p.privacy.is_some()),
        ("acquisition", p.acquisition.is_some()),
        ("initial_design", p.initial_design.is_some()),
        ("count", p.count.is_some()),
        ("design", p.design.is_some()),
        ("points", p.points.is_some()),
        ("box", p.within.is_some()),
    ];
    let (method, keys): (Method, &[&str]) = match method {
        "dpareto" => {
            let d = DparetoOptions::default();
            let options = DparetoOptions {
                initial: optional("initial", p.initial, 2, d.initial)?,
                iterations: count("iterations", p.iterations, "the number of proposals after k₀")?,
                candidates: optional("candidates", p.candidates, 1, d.candidates)?,
                fit_restarts: optional("fit_restarts", p.fit_restarts, 0, d.fit_restarts)?,
                privacy: match p.privacy.as_deref().unwrap_or("gp") {
                    "gp" => PrivacyModel::Gp,
                    "exact" => PrivacyModel::Exact,
                    _ => return Err(t.bad("privacy", "`gp` (the paper's) or `exact`")),
                },
                acquisition: match p.acquisition.as_deref().unwrap_or("hvpoi") {
                    "hvpoi" => Acquisition::HvPoi,
                    "ehvi" => Acquisition::Ehvi,
                    _ => return Err(t.bad("acquisition", "`hvpoi` (the paper's) or `ehvi`")),
                },
                ..d
            };
            (
                Method::Dpareto {
                    options,
                    initial: design(t, "initial_design", p.initial_design.as_deref())?,
                },
                &[
                    "initial",
                    "iterations",
                    "candidates",
                    "fit_restarts",
                    "privacy",
                    "acquisition",
                    "initial_design",
                ],
            )
        }
        "random" => (
            Method::Random {
                count: count("count", p.count, "the number of random points")?,
                design: design(t, "design", p.design.as_deref())?,
            },
            &["count", "design"],
        ),
        "grid" => (
            Method::Grid {
                points: count("points", p.points, "the number of values per dimension")?,
                within: match p.within.as_deref().unwrap_or("table1") {
                    "table1" => Design::Uniform,
                    other => match Design::parse(other) {
                        Ok(d) => d,
                        Err(_) => {
                            return Err(t.bad(
                                "box",
                                "`table1` (the oracle's box), `table4-adult` or `table3-mnist` (the accept ranges of spec Tables 3–4)",
                            ))
                        }
                    },
                },
            },
            &["points", "box"],
        ),
        _ => return Err(t.bad("method", "`dpareto`, `random` or `grid`")),
    };
    // Fields of another method are typos here, not silently ignored settings.
    if let Some((other, _)) = given.iter().find(|(k, g)| *g && !keys.contains(k)) {
        return Err(t.bad(
            other,
            &format!(
                "not a field of method `{}` (it takes: {})",
                p.method.unwrap_or_default(),
                keys.join(", ")
            ),
        ));
    }
    let label = p.label;
    let tuner = FrontTuner {
        label: String::new(),
        method,
    };
    Ok(FrontTuner {
        label: label.unwrap_or_else(|| tuner.method_name().to_string()),
        ..tuner
    })
}

/// A `pareto-front` experiment file's parameters (its `[[tuners]]` aside): `queries`,
/// `true_queries` and `orders` are the SVT oracle's, the rest from `tasks` on the DP-SGD tasks'.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    seed: Option<u64>,
    seeds: Option<Count>,
    oracle: Option<String>,
    reevaluate: Option<Count>,
    queries: Option<Count>,
    true_queries: Option<Count>,
    orders: Option<Count>,
    tasks: Option<OneOrMany<String>>,
    adult: Option<Vec<String>>,
    fashion_mnist: Option<Vec<String>>,
    /// [training rows, test rows]: the first rows of each part.
    rows: Option<[Count; 2]>,
    max_epochs: Option<Count>,
    replicates: Option<Count>,
    device: Option<String>,
}

fn parse(f: &Fields) -> Result<ParetoFront> {
    let p: Params = f.read("a `pareto-front` experiment", &["tuners"])?;
    let oracle = match p.oracle.as_deref() {
        Some("svt") => FrontOracle::Svt(SvtOracle {
            queries: f.count_or("queries", p.queries, 1, 100)? as usize,
            true_queries: f.count_or("true_queries", p.true_queries, 1, 10)? as usize,
            orders: f.count_or("orders", p.orders, 1, 50)? as usize,
        }),
        Some("dpsgd-task") => {
            let tasks = p
                .tasks
                .clone()
                .ok_or_else(|| f.missing("tasks", "a non-empty list of strings"))?
                .into_vec()
                .iter()
                .map(|t| TaskId::parse(t).map_err(|e| f.wrap(e)))
                .collect::<Result<Vec<_>>>()?;
            let rows = match p.rows {
                None => None,
                Some([a, b]) if a.0 >= 2 && b.0 >= 2 => Some([a.0 as usize, b.0 as usize]),
                Some(_) => {
                    return Err(f.bad(
                        "rows",
                        "[training rows, test rows]: the first rows of each part, integers ≥ 2",
                    ))
                }
            };
            FrontOracle::Tasks {
                tasks,
                adult: p.adult.clone(),
                fashion_mnist: p.fashion_mnist.clone(),
                rows,
                max_epochs: p
                    .max_epochs
                    .map(|m| f.count("max_epochs", m, 1))
                    .transpose()?,
                replicates: f.count_or("replicates", p.replicates, 1, 10)? as usize,
                device: Device::parse(p.device.as_deref().unwrap_or("cpu"))
                    .map_err(|e| f.wrap(e))?,
            }
        }
        _ => {
            return Err(f.bad(
                "oracle",
                "`svt` (spec 001 §3.1 B) or `dpsgd-task` (the DP-SGD tasks of §3.2)",
            ))
        }
    };
    // Fields of the other oracle are typos here, not silently ignored settings.
    let (svt, tasks) = (
        [
            ("queries", p.queries.is_some()),
            ("true_queries", p.true_queries.is_some()),
            ("orders", p.orders.is_some()),
        ],
        [
            ("tasks", p.tasks.is_some()),
            ("adult", p.adult.is_some()),
            ("fashion_mnist", p.fashion_mnist.is_some()),
            ("rows", p.rows.is_some()),
            ("max_epochs", p.max_epochs.is_some()),
            ("replicates", p.replicates.is_some()),
            ("device", p.device.is_some()),
        ],
    );
    let foreign = match oracle {
        FrontOracle::Svt(_) => tasks.as_slice(),
        FrontOracle::Tasks { .. } => svt.as_slice(),
    };
    if let Some((key, _)) = foreign.iter().find(|(_, given)| *given) {
        return Err(f.bad(
            key,
            &format!(
                "not a field of oracle `{}`",
                p.oracle.as_deref().unwrap_or_default()
            ),
        ));
    }
    let tuners = f
        .array("tuners", true)?
        .iter()
        .map(parse_tuner)
        .collect::<Result<Vec<_>>>()?;
    for (i, t) in tuners.iter().enumerate() {
        if tuners[..i].iter().any(|o| o.label == t.label) {
            return Err(f.bad("tuners", &format!("two tuners are labelled `{}`", t.label)));
        }
    }
    Ok(ParetoFront {
        seed: p.seed.unwrap_or(0),
        seeds: p.seeds.map_or(Ok(1), |s| f.seeds(s))?,
        oracle,
        tuners,
        reevaluate: p.reevaluate.map_or(0, |r| r.0 as usize),
        data: Mutex::new(HashMap::new()),
    })
}

/// A unit's search driven to its end through its journal. Each tell is journaled with the
/// search's step (the evaluation and the GP fits that chose it), where the evaluation left the
/// unit's stream and the times it took: the evaluation's, and the search's before asking for
/// it (GP fits and the acquisition's optimisation). A resumed unit restores the steps on record
/// (nothing is refitted, retrained or redrawn), sets its stream where the last one left it
/// and goes on exactly as if it had never stopped.
struct Explored {
    run: Vec<Evaluation>,
    oracle_ms: Vec<f64>,
    tuner_ms: Vec<f64>,
}

fn explore(
    mut search: FrontSearch,
    oracle: &mut dyn Oracle,
    rng: &mut ChaCha20Rng,
    journal: &mut Journal,
) -> Result<Explored> {
    let (mut oracle_ms, mut tuner_ms) = (Vec::new(), Vec::new());
    let mut restored = 0;
    for r in journal.records() {
        let Some((step, position, o_ms, t_ms)) = step_of(r) else {
            break;
        };
        if search.restore(step).is_err() {
            break;
        }
        rng.set_word_pos(u128::from(position));
        oracle_ms.push(o_ms);
        tuner_ms.push(t_ms);
        restored += 1;
    }
    let mut last = Instant::now();
    while let Some(lambda) = search.ask(&*oracle, rng)? {
        if restored < journal.records().len() {
            // Records past a finished search are its re-evaluations; past an unfinished one,
            // another dptune's: recomputed from here.
            journal.truncate(restored)?;
        }
        let start = Instant::now();
        let observed = oracle.evaluate(&lambda, rng)?;
        let end = Instant::now();
        search.tell(observed)?;
        let (o_ms, t_ms) = (
            (end - start).as_secs_f64() * 1e3,
            (start - last).as_secs_f64() * 1e3,
        );
        last = end;
        let step = search.last_step().expect("a step was told");
        journal.append(step_record(&step, word_position(rng)?, o_ms, t_ms))?;
        restored += 1;
        oracle_ms.push(o_ms);
        tuner_ms.push(t_ms);
    }
    Ok(Explored {
        run: search.evaluations().to_vec(),
        oracle_ms,
        tuner_ms,
    })
}

/// Floats as their bits: a journal keeps them exactly, NaN (a failed run's error) included.
fn bits(x: &[f64]) -> Vec<u64> {
    x.iter().map(|v| v.to_bits()).collect()
}

fn floats(v: &serde_json::Value) -> Option<Vec<f64>> {
    v.as_array()?
        .iter()
        .map(|b| b.as_u64().map(f64::from_bits))
        .collect()
}

/// A search's step as the journal keeps it, with the stream's position after it and its
/// times.
fn step_record(step: &Step, position: u64, oracle_ms: f64, tuner_ms: f64) -> serde_json::Value {
    let e = &step.evaluation;
    let proposal = e
        .acquisition
        .zip(e.prediction)
        .map(|(a, (m, s))| bits(&[a, m[0], m[1], s[0], s[1]]));
    serde_json::json!({
        "lambda": bits(&e.lambda),
        "objectives": bits(&e.objectives),
        "errors": bits(&e.errors),
        "proposal": proposal,
        "warm": step.warm,
        "position": position,
        "oracle_ms": finite(oracle_ms).unwrap_or(0.0),
        "tuner_ms": finite(tuner_ms).unwrap_or(0.0),
    })
}

/// A journal record's (step, stream position, oracle ms, tuner ms), if it is a search's step.
fn step_of(r: &serde_json::Value) -> Option<(Step, u64, f64, f64)> {
    let proposal = match &r["proposal"] {
        serde_json::Value::Null => None,
        p => match floats(p)?.as_slice() {
            &[a, m0, m1, s0, s1] => Some((a, ([m0, m1], [s0, s1]))),
            _ => return None,
        },
    };
    let objectives = floats(&r["objectives"])?;
    let evaluation = Evaluation {
        lambda: floats(&r["lambda"])?,
        objectives: [*objectives.first()?, *objectives.get(1)?],
        errors: floats(&r["errors"])?,
        random: proposal.is_none(),
        acquisition: proposal.map(|p| p.0),
        prediction: proposal.map(|p| p.1),
    };
    let warm = serde_json::from_value(r.get("warm")?.clone()).ok()?;
    Some((
        Step { evaluation, warm },
        r["position"].as_u64()?,
        r["oracle_ms"].as_f64()?,
        r["tuner_ms"].as_f64()?,
    ))
}

/// A fresh evaluation (`reevaluate`) as the journal keeps it.
fn fresh_record(lambda: &[f64], v: &Observation, oracle_ms: f64) -> serde_json::Value {
    serde_json::json!({
        "fresh": bits(lambda),
        "epsilon": v.epsilon.to_bits(),
        "errors": bits(&v.errors),
        "oracle_ms": finite(oracle_ms).unwrap_or(0.0),
    })
}

/// A journal record's (observation, oracle ms) when it is a fresh evaluation of `lambda`.
fn fresh_answer(r: &serde_json::Value, lambda: &[f64]) -> Option<(Observation, f64)> {
    if floats(&r["fresh"])?
        .iter()
        .map(|v| v.to_bits())
        .ne(lambda.iter().map(|v| v.to_bits()))
    {
        return None;
    }
    Some((
        Observation {
            epsilon: f64::from_bits(r["epsilon"].as_u64()?),
            errors: floats(&r["errors"])?,
        },
        r["oracle_ms"].as_f64()?,
    ))
}

/// Fresh evaluation `k` of the unit's journal (the k-th record): taken from the record where
/// it is that of `lambda`, else evaluated from `rng` and journaled.
fn fresh_evaluation(
    oracle: &mut dyn Oracle,
    journal: &mut Journal,
    k: usize,
    lambda: &[f64],
    rng: &mut dyn RngCore,
) -> Result<(Observation, f64)> {
    if let Some(r) = journal.records().get(k) {
        if let Some(answer) = fresh_answer(r, lambda) {
            return Ok(answer);
        }
        journal.truncate(k)?;
    }
    let start = Instant::now();
    let v = oracle.evaluate(lambda, rng)?;
    let ms = start.elapsed().as_secs_f64() * 1e3;
    journal.append(fresh_record(lambda, &v, ms))?;
    Ok((v, ms))
}

/// `a` widened to hold `b`.
fn hull(a: (f64, f64), b: (f64, f64)) -> (f64, f64) {
    (a.0.min(b.0), a.1.max(b.1))
}

/// The dimensions of a table's accept box (the epochs and the lot size at most those of
/// `dims`, the searched box).
fn accept_dims(design: Design, dims: &[Dimension]) -> Result<Vec<Dimension>> {
    let b = design
        .accept_box(dims[0].high, dims[1].high)
        .expect("a table design");
    crate::workloads::dpsgd_tasks::HYPERPARAMETERS
        .iter()
        .zip(b)
        .enumerate()
        .map(|(j, (name, (lo, hi)))| Dimension::new(name, lo, hi, j < 2))
        .collect()
}

impl ParetoFront {
    fn task_names(&self) -> Vec<&'static str> {
        match &self.oracle {
            FrontOracle::Svt(_) => vec!["svt"],
            FrontOracle::Tasks { tasks, .. } => tasks.iter().map(|t| t.name()).collect(),
        }
    }

    /// The hyperparameters' column names.
    pub fn dimension_names(&self) -> Vec<&'static str> {
        match self.oracle {
            FrontOracle::Svt(_) => vec!["cutoff", "b"],
            FrontOracle::Tasks { .. } => crate::workloads::dpsgd_tasks::HYPERPARAMETERS.to_vec(),
        }
    }

    fn unit_list(&self) -> Vec<Unit> {
        let mut out = Vec::new();
        for task in 0..self.task_names().len() {
            for (tuner, t) in self.tuners.iter().enumerate() {
                let seeds = match t.method {
                    Method::Grid { .. } => 1,
                    _ => self.seeds,
                };
                for seed in 0..seeds {
                    out.push(Unit { task, tuner, seed });
                }
            }
        }
        out
    }

    fn data(&self, kind: TaskData) -> Result<Arc<TrainTest>> {
        let mut cache = self.data.lock().expect("data cache");
        if let Some(d) = cache.get(&kind) {
            return Ok(d.clone());
        }
        let FrontOracle::Tasks {
            adult,
            fashion_mnist,
            rows,
            ..
        } = &self.oracle
        else {
            unreachable!("data of a task oracle")
        };
        let files = match kind {
            TaskData::Adult => adult,
            TaskData::FashionMnist => fashion_mnist,
        };
        let mut loaded = match files {
            Some(f) => kind.from_files(f)?,
            None => kind.cached()?,
        };
        if let Some([train, test]) = rows {
            let first = |d: &crate::data::Dataset, n: usize, part: &str| {
                if n > d.len() {
                    return Err(Error::invalid(
                        "rows",
                        n,
                        format!("at most the {} {part} rows of {}", d.len(), kind.name()),
                    ));
                }
                Ok(d.select(&(0..n).collect::<Vec<_>>()))
            };
            loaded = TrainTest {
                train: first(&loaded.train, *train, "training")?,
                test: first(&loaded.test, *test, "test")?,
            };
        }
        let loaded = Arc::new(loaded);
        cache.insert(kind, loaded.clone());
        Ok(loaded)
    }

    /// One tuner's search over `dims` (its box).
    fn search(&self, tuner: &FrontTuner, dims: &[Dimension]) -> Result<FrontSearch> {
        match &tuner.method {
            Method::Dpareto { options, initial } => FrontSearch::dpareto(dims, options, *initial),
            Method::Random { count, design } => FrontSearch::sample(dims, *design, *count),
            Method::Grid { points, within } => {
                let grid_dims = match within {
                    Design::Uniform => dims.to_vec(),
                    table => accept_dims(*table, dims)?,
                };
                FrontSearch::grid(&grid_dims, *points)
            }
        }
    }

    /// The evaluations of unit `u`, with their oracle and tuner times and re-evaluations.
    fn run(&self, u: &Unit, journal: &mut Journal) -> Result<UnitRun> {
        let tuner = &self.tuners[u.tuner];
        let task_name = self.task_names()[u.task];
        let mut rng = stream(
            self.seed,
            &[RUN_STREAM, fnv1a(task_name.as_bytes()), u.seed],
        );

        match &self.oracle {
            FrontOracle::Svt(o) => {
                let dims = SvtOracle::dimensions()?;
                let mut svt = *o;
                let explored = explore(self.search(tuner, &dims)?, &mut svt, &mut rng, journal)?;
                self.reevaluated(task_name, explored, &mut svt, journal)
            }
            FrontOracle::Tasks {
                tasks,
                replicates,
                device,
                max_epochs,
                ..
            } => {
                let id = tasks[u.task];
                let data = self.data(id.data())?;
                let task = Task::new(id, &data)?.with_device(*device);
                let rows = task.train_size() as f64;
                // A cap on the epochs (a CPU-sized departure from Table 1, named in the file).
                let task = match max_epochs {
                    Some(cap) => {
                        let d = *task.domain();
                        let epochs = (d.epochs.0, d.epochs.1.min(*cap as f64));
                        task.with_domain(Domain { epochs, ..d })
                    }
                    None => task,
                };
                let dims = TaskOracle {
                    task: &task,
                    replicates: *replicates,
                }
                .dimensions()?;
                // Tables 3–4's points (and grids over their accept boxes) may leave Table 1's
                // box (adult's learning rate up to 0.1): the task accepts the hull of both.
                let d = *task.domain();
                let widen = |b: [(f64, f64); 5]| Domain {
                    epochs: hull(d.epochs, b[0]),
                    lot_size: hull(d.lot_size, b[1]),
                    learning_rate: hull(d.learning_rate, b[2]),
                    noise_multiplier: hull(d.noise_multiplier, b[3]),
                    clip: hull(d.clip, b[4]),
                    ..d
                };
                let table = match &tuner.method {
                    Method::Dpareto { initial, .. } => *initial,
                    Method::Random { design, .. } => *design,
                    Method::Grid { within, .. } => *within,
                };
                let task = match table.accept_box(dims[0].high, rows) {
                    Some(b) => task.with_domain(widen(b)),
                    None => task,
                };
                let mut oracle = TaskOracle {
                    task: &task,
                    replicates: *replicates,
                };
                let explored = explore(self.search(tuner, &dims)?, &mut oracle, &mut rng, journal)?;
                self.reevaluated(task_name, explored, &mut oracle, journal)
            }
        }
    }
}

/// A unit's evaluations and what was measured of them.
struct UnitRun {
    run: Vec<Evaluation>,
    oracle_ms: Vec<f64>,
    tuner_ms: Vec<f64>,
    /// Per evaluation: its re-evaluation, where it was one of the front's points.
    fresh: Vec<Option<Fresh>>,
}

/// A front point's fresh evaluations (`reevaluate`).
#[derive(Clone, Debug)]
struct Fresh {
    /// The mean of every fresh replicate's error.
    error: f64,
    replicates: usize,
    ms: f64,
}

impl ParetoFront {
    /// Spec §5's honesty flag: the points of `run`'s front inside the reference box (the only
    /// ones any yardstick reads) each evaluated `reevaluate` more times on fresh streams
    /// ([`REEVAL_STREAM`]), journaled after the search's steps, so a resumed unit takes them
    /// from its journal too.
    fn reevaluated(
        &self,
        task: &str,
        explored: Explored,
        oracle: &mut dyn Oracle,
        journal: &mut Journal,
    ) -> Result<UnitRun> {
        let Explored {
            run,
            oracle_ms,
            tuner_ms,
        } = explored;
        let n = run.len();
        let mut fresh = vec![None; n];
        if self.reevaluate > 0 {
            // A missing error (a failed run) counts as 1, as the derived tables read it.
            let points: Vec<Objectives> = run
                .iter()
                .map(|e| [e.objectives[0], finite(e.objectives[1]).unwrap_or(1.0)])
                .collect();
            let mut record = n;
            for i in crate::pareto::pareto_front(&points)? {
                if !(points[i][0] < HV_REFERENCE[0] && points[i][1] < HV_REFERENCE[1]) {
                    continue;
                }
                let lambda = &run[i].lambda;
                let bytes: Vec<u8> = lambda
                    .iter()
                    .flat_map(|v| v.to_bits().to_le_bytes())
                    .collect();
                let mut errors = Vec::new();
                let mut ms = 0.0;
                for k in 0..self.reevaluate as u64 {
                    let path = [REEVAL_STREAM, fnv1a(task.as_bytes()), fnv1a(&bytes), k];
                    let (v, took) = fresh_evaluation(
                        oracle,
                        journal,
                        record,
                        lambda,
                        &mut stream(self.seed, &path),
                    )?;
                    record += 1;
                    ms += took;
                    // A failed fresh run counts as the worst error: the yardstick stays honest.
                    errors.extend(v.errors.iter().map(|&e| finite(e).unwrap_or(1.0)));
                }
                fresh[i] = Some(Fresh {
                    error: mean(&errors).ok_or_else(|| {
                        Error::invalid("reevaluate", self.reevaluate, "an oracle with replicates")
                    })?,
                    replicates: errors.len(),
                    ms,
                });
            }
        }
        Ok(UnitRun {
            run,
            oracle_ms,
            tuner_ms,
            fresh,
        })
    }
}

/// The rows of unit `u`: one per evaluation.
fn rows(s: &ParetoFront, experiment: &str, u: &Unit, journal: &mut Journal) -> Result<Table> {
    let UnitRun {
        run,
        oracle_ms,
        tuner_ms,
        fresh,
    } = s.run(u, journal)?;
    let tuner = &s.tuners[u.tuner];
    let phase = |e: &Evaluation| match tuner.method {
        Method::Dpareto { .. } if e.random => "init",
        Method::Dpareto { .. } => "acq",
        Method::Random { .. } => "rs",
        Method::Grid { .. } => "grid",
    };
    let sd = |e: &Evaluation| {
        let k = e.errors.len();
        (k > 1).then(|| {
            let m = e.objectives[1];
            (e.errors.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (k - 1) as f64).sqrt()
        })
    };
    let fold = |e: &Evaluation, f: fn(f64, f64) -> f64| e.errors.iter().copied().reduce(f);
    let (task, dimensions) = (s.task_names()[u.task], s.dimension_names());
    let rows: Vec<PointRow> = run
        .iter()
        .zip(oracle_ms)
        .zip(tuner_ms)
        .zip(fresh)
        .enumerate()
        .map(|(trial, (((e, wall_ms), tuner_wall_ms), fresh))| PointRow {
            task,
            tuner: &tuner.label,
            method: tuner.method_name(),
            seed: u.seed,
            trial: trial as u64,
            phase: phase(e),
            lambda: Named(&dimensions, &e.lambda),
            epsilon: e.objectives[0],
            error: e.objectives[1],
            err_min: fold(e, f64::min),
            err_max: fold(e, f64::max),
            err_std: sd(e),
            n_rep: e.errors.len() as u64,
            acquisition: e.acquisition,
            pred_log_eps: e.prediction.map(|p| p.0[0]),
            pred_sd_log_eps: e.prediction.map(|p| p.1[0]),
            pred_logit_err: e.prediction.map(|p| p.0[1]),
            pred_sd_logit_err: e.prediction.map(|p| p.1[1]),
            wall_ms,
            tuner_wall_ms,
            // Files without re-evaluations keep their schema (committed results unchanged).
            reevaluated: (s.reevaluate > 0).then(|| PointReevaluated {
                reeval_error: fresh.as_ref().map(|x| x.error),
                reeval_n_rep: fresh.as_ref().map_or(0, |x| x.replicates as u64),
                reeval_wall_ms: fresh.as_ref().map(|x| x.ms),
            }),
        })
        .collect();
    Table::from_experiment_rows(experiment, &rows)
}

/// A row of `points.parquet`: one evaluation.
#[derive(serde::Serialize)]
struct PointRow<'a> {
    task: &'a str,
    tuner: &'a str,
    method: &'a str,
    seed: u64,
    trial: u64,
    phase: &'a str,
    /// λ, one column per dimension of the search space.
    #[serde(flatten)]
    lambda: Named<'a>,
    epsilon: f64,
    error: f64,
    err_min: Option<f64>,
    err_max: Option<f64>,
    err_std: Option<f64>,
    n_rep: u64,
    acquisition: Option<f64>,
    pred_log_eps: Option<f64>,
    pred_sd_log_eps: Option<f64>,
    pred_logit_err: Option<f64>,
    pred_sd_logit_err: Option<f64>,
    wall_ms: f64,
    tuner_wall_ms: f64,
    #[serde(flatten)]
    reevaluated: Option<PointReevaluated>,
}

/// A front point's fresh evaluations (`reevaluate`); other points have none.
#[derive(serde::Serialize)]
struct PointReevaluated {
    reeval_error: Option<f64>,
    reeval_n_rep: u64,
    reeval_wall_ms: Option<f64>,
}

/// Values serialised as fields of the given names (the search space's dimensions).
struct Named<'a>(&'a [&'a str], &'a [f64]);

impl serde::Serialize for Named<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (name, value) in self.0.iter().zip(self.1) {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

/// One run read back from `points.parquet`: (ε, mean error) per evaluation, the best and
/// worst replicate errors, and the times.
#[derive(Clone, Debug, Default)]
struct Run {
    points: Vec<Objectives>,
    best: Vec<Objectives>,
    worst: Vec<Objectives>,
    /// The replicates' standard deviation per point (None from one replicate).
    spread: Vec<Option<f64>>,
    /// (ε, mean error of the fresh runs) of the re-evaluated front points (`reevaluate`).
    reevaluated: Vec<Objectives>,
    oracle_ms: f64,
    tuner_ms: f64,
}

/// (task, tuner label, method) → seed → run, in file order.
type Runs = BTreeMap<(usize, usize), (String, String, String, BTreeMap<u64, Run>)>;

/// Groups the merged table by (task, tuner) in order of first appearance.
fn runs(t: &Table) -> Result<Runs> {
    let (task, tuner, method) = (t.str("task")?, t.str("tuner")?, t.str("method")?);
    let seed = t.u64("seed")?;
    let (eps, err) = (t.f64("epsilon")?, t.f64("error")?);
    let (lo, hi, sd) = (t.f64("err_min")?, t.f64("err_max")?, t.f64("err_std")?);
    let (om, tm) = (t.f64("wall_ms")?, t.f64("tuner_wall_ms")?);
    // Only files with `reevaluate` have the column.
    let fresh = t.f64_if_any("reeval_error")?;
    let mut tasks: Vec<&str> = Vec::new();
    let mut tuners: Vec<&str> = Vec::new();
    let mut out = Runs::new();
    for i in 0..t.height() {
        let ti = tasks.iter().position(|x| *x == task[i]).unwrap_or_else(|| {
            tasks.push(&task[i]);
            tasks.len() - 1
        });
        let ui = tuners
            .iter()
            .position(|x| *x == tuner[i])
            .unwrap_or_else(|| {
                tuners.push(&tuner[i]);
                tuners.len() - 1
            });
        let entry = out.entry((ti, ui)).or_insert_with(|| {
            (
                task[i].clone(),
                tuner[i].clone(),
                method[i].clone(),
                BTreeMap::new(),
            )
        });
        let run = entry.3.entry(seed[i]).or_default();
        // A non-finite ε (stored as missing) is a run without privacy: +∞, off every box.
        let e = eps[i].unwrap_or(f64::INFINITY);
        let m = err[i].unwrap_or(1.0);
        run.points.push([e, m]);
        run.best.push([e, lo[i].unwrap_or(m)]);
        run.worst.push([e, hi[i].unwrap_or(m)]);
        run.spread.push(sd[i]);
        if let Some(f) = fresh.and_then(|f| f[i]) {
            run.reevaluated.push([e, f]);
        }
        run.oracle_ms += om[i].unwrap_or(0.0);
        run.tuner_ms += tm[i].unwrap_or(0.0);
    }
    Ok(out)
}

/// (hv_lin, hv_log) after each evaluation.
type Trace = Vec<(f64, f64)>;

/// hv_lin and hv_log after each of the first 1..=n evaluations.
fn trace(points: &[Objectives]) -> Result<Trace> {
    (1..=points.len())
        .map(|k| {
            Ok((
                hv_lin(&points[..k], HV_REFERENCE)?,
                hv_log(&points[..k], HV_REFERENCE)?,
            ))
        })
        .collect()
}

/// A row of `hv_trace.parquet`: a run's hypervolumes after its first `n_evals` evaluations.
#[derive(serde::Serialize)]
struct TraceRow<'a> {
    task: &'a str,
    tuner: &'a str,
    method: &'a str,
    seed: u64,
    n_evals: u64,
    hv_lin: f64,
    hv_log: f64,
    hv_norm: f64,
}

/// A row of `front.parquet`: a corner of one run's front (a `variant` of its points).
#[derive(serde::Serialize)]
struct FrontRow<'a> {
    task: &'a str,
    tuner: &'a str,
    method: &'a str,
    seed: u64,
    variant: &'a str,
    epsilon: f64,
    error: f64,
}

/// A row of `mean_front.parquet`: a corner of a (task, tuner)'s mean front over its seeds.
#[derive(serde::Serialize)]
struct MeanFrontRow<'a> {
    task: &'a str,
    tuner: &'a str,
    method: &'a str,
    seeds: u64,
    variant: &'a str,
    epsilon: f64,
    error: f64,
}

/// A row of `summary.parquet`: one (task, tuner) over its seeds.
#[derive(serde::Serialize)]
struct SummaryRow<'a> {
    task: &'a str,
    tuner: &'a str,
    method: &'a str,
    seeds: u64,
    evals: u64,
    hv_lin: f64,
    hv_lin_ci: Option<f64>,
    hv_log: f64,
    hv_log_ci: Option<f64>,
    hv_union_95: f64,
    evals_to_95: Option<f64>,
    seeds_reaching_95: u64,
    near_front_share: Option<f64>,
    err_sd_eps_below_1: Option<f64>,
    err_sd_eps_from_1: Option<f64>,
    /// Wall-clock seconds per seed of the tuner (its GP fits and acquisition) and the oracle,
    /// and the tuner's share of their sum.
    tuner_wall_s: f64,
    oracle_wall_s: f64,
    tuner_wall_share: f64,
    /// The mean best error within each of [`BEST_ERROR_EPSILONS`].
    #[serde(rename = "best_err_eps_0.1")]
    best_err_eps_0_1: Option<f64>,
    #[serde(rename = "best_err_eps_0.5")]
    best_err_eps_0_5: Option<f64>,
    best_err_eps_1: Option<f64>,
    best_err_eps_2: Option<f64>,
    best_err_eps_4: Option<f64>,
    best_err_eps_8: Option<f64>,
    /// Only files with `reevaluate`.
    #[serde(flatten)]
    reevaluated: Option<SummaryReevaluated>,
}

#[derive(serde::Serialize)]
struct SummaryReevaluated {
    reeval_points: Option<f64>,
    hv_lin_reeval: f64,
    hv_lin_reeval_ci: Option<f64>,
    hv_log_reeval: f64,
    hv_log_reeval_ci: Option<f64>,
    best_err_eps_1_reeval: Option<f64>,
}

/// A row of `hv_diff.parquet` (Table 2): DPareto's hypervolume against random sampling's.
#[derive(serde::Serialize)]
struct DiffRow<'a> {
    task: &'a str,
    dpareto: &'a str,
    random: &'a str,
    comparison: String,
    n_chunks: u64,
    chunk_size: u64,
    mean_diff: f64,
    ci_lo: Option<f64>,
    ci_hi: Option<f64>,
    t: Option<f64>,
    df: f64,
    p: Option<f64>,
}

/// A row of `efficiency.parquet`: how many random evaluations match DPareto's.
#[derive(serde::Serialize)]
struct EfficiencyRow<'a> {
    task: &'a str,
    dpareto: &'a str,
    random: &'a str,
    dpareto_evals: u64,
    dpareto_hv_lin: f64,
    random_hv_lin_same_evals: Option<f64>,
    random_evals_run: u64,
    random_evals_to_match: Option<f64>,
    dpareto_ahead_share: Option<f64>,
}

/// The derived tables (module docs).
fn derive(experiment: &str, merged: &Table) -> Result<Vec<(&'static str, Table)>> {
    let runs = runs(merged)?;
    let reevaluated = merged.names().contains(&"reeval_error");
    let (mut trace_t, mut front_t, mut summary_t, mut diff_t, mut eff_t) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut mean_t = Vec::new();
    // The union front's hypervolume per task: the reference of evals_to_95.
    let mut union: HashMap<usize, Vec<Objectives>> = HashMap::new();
    for ((task, _), (_, _, _, seeds)) in &runs {
        for r in seeds.values() {
            union.entry(*task).or_default().extend(&r.points);
        }
    }
    let union_fronts: HashMap<usize, StepFront> = union
        .iter()
        .map(|(&task, points)| Ok((task, StepFront::new(points)?)))
        .collect::<Result<_>>()?;
    let mut traces: HashMap<(usize, usize), BTreeMap<u64, Trace>> = HashMap::new();
    for (&(task, tuner), (task_name, label, method, seeds)) in &runs {
        let target = 0.95 * hv_lin(&union[&task], HV_REFERENCE)?;
        // Spec §4.5: BO's points cluster near the front, RS's do not; the replicates' spread
        // grows as ε falls.
        let (mut near, mut counted) = (0usize, 0usize);
        let (mut sd_low, mut sd_high) = (Vec::new(), Vec::new());
        for r in seeds.values() {
            for (p, sd) in r.points.iter().zip(&r.spread) {
                if let Some(best) = union_fronts[&task].best_at(p[0]) {
                    counted += 1;
                    near += usize::from(p[1] - best <= NEAR_FRONT);
                }
                if let Some(sd) = sd {
                    if p[0] < 1.0 {
                        sd_low.push(*sd);
                    } else {
                        sd_high.push(*sd);
                    }
                }
            }
        }
        let (mut lin, mut log, mut to95) = (Vec::new(), Vec::new(), Vec::new());
        let (mut fresh_lin, mut fresh_log, mut fresh_best, mut fresh_points) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut best_at: Vec<Vec<f64>> = vec![Vec::new(); BEST_ERROR_EPSILONS.len()];
        let mut evals = 0;
        for (&seed, r) in seeds {
            let tr = trace(&r.points)?;
            trace_t.extend(tr.iter().enumerate().map(|(k, &(l, g))| TraceRow {
                task: task_name,
                tuner: label,
                method,
                seed,
                n_evals: k as u64 + 1,
                hv_lin: l,
                hv_log: g,
                hv_norm: l / HV_REFERENCE[0],
            }));
            let &(l, g) = tr.last().expect("a run has evaluations");
            lin.push(l);
            log.push(g);
            if let Some(k) = tr.iter().position(|p| p.0 >= target) {
                to95.push(k as f64 + 1.0);
            }
            for (j, &e) in BEST_ERROR_EPSILONS.iter().enumerate() {
                if let Some(b) = best_error_at(&r.points, e)? {
                    best_at[j].push(b);
                }
            }
            evals = evals.max(r.points.len());
            if reevaluated {
                fresh_lin.push(hv_lin(&r.reevaluated, HV_REFERENCE)?);
                fresh_log.push(hv_log(&r.reevaluated, HV_REFERENCE)?);
                fresh_best.extend(best_error_at(&r.reevaluated, 1.0)?);
                fresh_points.push(r.reevaluated.len() as f64);
            }
            for (variant, pts) in [
                ("mean", &r.points),
                ("best", &r.best),
                ("worst", &r.worst),
                ("reevaluated", &r.reevaluated),
            ] {
                front_t.extend(StepFront::new(pts)?.corners().iter().map(|c| FrontRow {
                    task: task_name,
                    tuner: label,
                    method,
                    seed,
                    variant,
                    epsilon: c[0],
                    error: c[1],
                }));
            }
            traces.entry((task, tuner)).or_default().insert(seed, tr);
        }
        let per_seed =
            |f: fn(&Run) -> f64| seeds.values().map(f).sum::<f64>() / seeds.len() as f64 / 1e3;
        let (tuner_s, oracle_s) = (per_seed(|r| r.tuner_ms), per_seed(|r| r.oracle_ms));
        type Pick = fn(&Run) -> &[Objectives];
        let variants: [(&str, Pick); 4] = [
            ("mean", |r| &r.points),
            ("best", |r| &r.best),
            ("worst", |r| &r.worst),
            ("reevaluated", |r| &r.reevaluated),
        ];
        for (variant, pick) in variants {
            mean_t.extend(mean_front(seeds, pick)?.iter().map(|c| MeanFrontRow {
                task: task_name,
                tuner: label,
                method,
                seeds: seeds.len() as u64,
                variant,
                epsilon: c[0],
                error: c[1],
            }));
        }
        let (lm, lh) = mean_interval(&lin);
        let (gm, gh) = mean_interval(&log);
        let best = |j: usize| mean(&best_at[j]);
        let reevaluated = reevaluated.then(|| {
            let (fm, fh) = mean_interval(&fresh_lin);
            let (gm, gh) = mean_interval(&fresh_log);
            SummaryReevaluated {
                reeval_points: mean(&fresh_points),
                hv_lin_reeval: fm,
                hv_lin_reeval_ci: fh,
                hv_log_reeval: gm,
                hv_log_reeval_ci: gh,
                best_err_eps_1_reeval: mean(&fresh_best),
            }
        });
        summary_t.push(SummaryRow {
            task: task_name,
            tuner: label,
            method,
            seeds: seeds.len() as u64,
            evals: evals as u64,
            hv_lin: lm,
            hv_lin_ci: lh,
            hv_log: gm,
            hv_log_ci: gh,
            hv_union_95: target,
            evals_to_95: mean(&to95),
            seeds_reaching_95: to95.len() as u64,
            near_front_share: (counted > 0).then(|| near as f64 / counted as f64),
            err_sd_eps_below_1: mean(&sd_low),
            err_sd_eps_from_1: mean(&sd_high),
            tuner_wall_s: tuner_s,
            oracle_wall_s: oracle_s,
            tuner_wall_share: tuner_s / (tuner_s + oracle_s).max(1e-9),
            best_err_eps_0_1: best(0),
            best_err_eps_0_5: best(1),
            best_err_eps_1: best(2),
            best_err_eps_2: best(3),
            best_err_eps_4: best(4),
            best_err_eps_8: best(5),
            reevaluated,
        });
    }
    // Table 2 and sample efficiency: every (DPareto, random) pair of a task.
    for (&(task, bo), (task_name, bo_label, bo_method, bo_seeds)) in &runs {
        if bo_method != "dpareto" {
            continue;
        }
        for (&(task2, rs), (_, rs_label, rs_method, rs_seeds)) in &runs {
            if task2 != task || rs_method != "random" {
                continue;
            }
            let size = bo_seeds.values().map(|r| r.points.len()).max().unwrap_or(0);
            let bo_final: Vec<f64> = bo_seeds
                .values()
                .map(|r| hv_lin(&r.points, HV_REFERENCE))
                .collect::<Result<_>>()?;
            // Chunks of DPareto's size from the random runs, seed after seed.
            let pool: Vec<Objectives> = rs_seeds.values().flat_map(|r| r.points.clone()).collect();
            let chunks: Vec<f64> = pool
                .chunks_exact(size.max(1))
                .map(|c| hv_lin(c, HV_REFERENCE))
                .collect::<Result<_>>()?;
            let mut tests: Vec<(String, TTest)> = Vec::new();
            if chunks.len() >= 2 {
                for (&seed, &hv) in bo_seeds.keys().zip(&bo_final) {
                    let d: Vec<f64> = chunks.iter().map(|c| hv - c).collect();
                    tests.push((format!("seed {seed}"), one_sample_t(&d)?));
                }
                if let Some(w) = welch_t(&bo_final, &chunks)? {
                    tests.push(("all seeds (Welch)".to_string(), w));
                }
            }
            for (
                comparison,
                TTest {
                    estimate: m,
                    lo,
                    hi,
                    t,
                    df,
                    p,
                },
            ) in tests
            {
                diff_t.push(DiffRow {
                    task: task_name,
                    dpareto: bo_label,
                    random: rs_label,
                    comparison,
                    n_chunks: chunks.len() as u64,
                    chunk_size: size as u64,
                    mean_diff: m,
                    ci_lo: lo,
                    ci_hi: hi,
                    t,
                    df,
                    p,
                });
            }
            // The random runs' mean trace (over seeds that reached n) against DPareto's mean
            // final hypervolume.
            let bo_mean = mean(&bo_final).unwrap_or(0.0);
            let rs_tr = &traces[&(task, rs)];
            let longest = rs_tr.values().map(Vec::len).max().unwrap_or(0);
            let rs_mean_at = |n: usize| {
                mean(
                    &rs_tr
                        .values()
                        .filter(|t| t.len() >= n)
                        .map(|t| t[n - 1].0)
                        .collect::<Vec<_>>(),
                )
            };
            let to_match = (1..=longest).find(|&n| rs_mean_at(n).is_some_and(|h| h >= bo_mean));
            // Spec §4.5: hv_trace(DPareto) ≥ hv_trace(RS) for most n (means over seeds).
            let bo_tr = &traces[&(task, bo)];
            let bo_mean_at = |n: usize| {
                mean(
                    &bo_tr
                        .values()
                        .filter(|t| t.len() >= n)
                        .map(|t| t[n - 1].0)
                        .collect::<Vec<_>>(),
                )
            };
            let compared: Vec<bool> = (1..=size.min(longest))
                .filter_map(|n| Some(bo_mean_at(n)? >= rs_mean_at(n)?))
                .collect();
            let ahead = mean(
                &compared
                    .iter()
                    .map(|&a| f64::from(u8::from(a)))
                    .collect::<Vec<_>>(),
            );
            eff_t.push(EfficiencyRow {
                task: task_name,
                dpareto: bo_label,
                random: rs_label,
                dpareto_evals: size as u64,
                dpareto_hv_lin: bo_mean,
                random_hv_lin_same_evals: (size <= longest).then(|| rs_mean_at(size)).flatten(),
                random_evals_run: longest as u64,
                random_evals_to_match: to_match.map(|n| n as f64),
                dpareto_ahead_share: ahead,
            });
        }
    }
    Ok(vec![
        (
            "hv_trace.parquet",
            Table::from_experiment_rows(experiment, &trace_t)?,
        ),
        (
            "front.parquet",
            Table::from_experiment_rows(experiment, &front_t)?,
        ),
        (
            "summary.parquet",
            Table::from_experiment_rows(experiment, &summary_t)?,
        ),
        (
            "hv_diff.parquet",
            Table::from_experiment_rows(experiment, &diff_t)?,
        ),
        (
            "efficiency.parquet",
            Table::from_experiment_rows(experiment, &eff_t)?,
        ),
        (
            "mean_front.parquet",
            Table::from_experiment_rows(experiment, &mean_t)?,
        ),
    ])
}

/// The mean front of a tuner's seeds (each seed's points as `variant` picks them): at each ε
/// where a seed's front steps (and every seed has a point at or below it), the mean over the
/// seeds of each front's best error at that ε. Its hypervolume is the seeds' mean hypervolume
/// (the area is linear in the step function), the number the text compares.
fn mean_front(
    seeds: &BTreeMap<u64, Run>,
    variant: fn(&Run) -> &[Objectives],
) -> Result<Vec<Objectives>> {
    let fronts = (seeds.values())
        .map(|r| StepFront::new(variant(r)))
        .collect::<Result<Vec<_>>>()?;
    let start = (fronts.iter())
        .filter_map(|f| f.corners().first().map(|c| c[0]))
        .fold(f64::NEG_INFINITY, f64::max);
    let mut grid: Vec<f64> = (fronts.iter().flat_map(|f| f.corners().iter().map(|c| c[0])))
        .filter(|&e| e >= start)
        .collect();
    grid.sort_by(f64::total_cmp);
    grid.dedup();
    Ok(grid
        .into_iter()
        .filter_map(|e| {
            let at: Vec<f64> = fronts.iter().filter_map(|f| f.best_at(e)).collect();
            (at.len() == fronts.len()).then(|| [e, at.iter().sum::<f64>() / at.len() as f64])
        })
        .collect())
}

impl Study for ParetoFront {
    fn unit_count(&self) -> u64 {
        let per_task = self.tuners.iter().fold(0u64, |n, t| {
            n.saturating_add(match t.method {
                Method::Grid { .. } => 1,
                _ => self.seeds,
            })
        });
        per_task.saturating_mul(self.task_names().len() as u64)
    }
    fn units(&self) -> Vec<String> {
        let tasks = self.task_names();
        self.unit_list()
            .iter()
            .map(|u| {
                format!(
                    "{} · {} · seed {}",
                    tasks[u.task], self.tuners[u.tuner].label, u.seed
                )
            })
            .collect()
    }

    fn run_unit(&self, experiment: &str, i: usize) -> Result<Table> {
        self.run_unit_journaled(experiment, i, &mut Journal::none())
    }

    /// A DPareto unit is up to hundreds of sequential trainings (minutes each on the
    /// Fashion-MNIST MLPs): it journals every evaluation and resumes from them.
    fn run_unit_journaled(
        &self,
        experiment: &str,
        i: usize,
        journal: &mut Journal,
    ) -> Result<Table> {
        let units = self.unit_list();
        let u = units
            .get(i)
            .ok_or_else(|| Error::invalid("unit", i, format!("below {}", units.len())))?;
        rows(self, experiment, u, journal)
    }

    fn output(&self) -> &'static str {
        "points.parquet"
    }

    fn derive(&self, experiment: &str, merged: &Table) -> Result<Vec<(&'static str, Table)>> {
        derive(experiment, merged)
    }

    fn derived(&self) -> Vec<&'static str> {
        vec![
            "hv_trace.parquet",
            "front.parquet",
            "summary.parquet",
            "hv_diff.parquet",
            "efficiency.parquet",
            "mean_front.parquet",
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_front_averages_each_seeds_best_error_where_all_have_one() {
        let run = |points: Vec<Objectives>| Run {
            points,
            ..Run::default()
        };
        let seeds: BTreeMap<u64, Run> = [
            (0, run(vec![[0.1, 0.5], [1.0, 0.3]])),
            (1, run(vec![[0.5, 0.4], [2.0, 0.1]])),
        ]
        .into_iter()
        .collect();
        // From ε = 0.5 (where both seeds have a point): (0.5 + 0.4) / 2, then (0.3 + 0.4) / 2
        // at 1, then (0.3 + 0.1) / 2 at 2.
        let got = mean_front(&seeds, |r| &r.points).unwrap();
        let want = [[0.5, 0.45], [1.0, 0.35], [2.0, 0.2]];
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            assert!(
                (g[0] - w[0]).abs() < 1e-12 && (g[1] - w[1]).abs() < 1e-12,
                "{got:?}"
            );
        }
    }
}
