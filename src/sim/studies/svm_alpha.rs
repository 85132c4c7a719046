//! Spec 000 Figure 1 (`kind = "svm-alpha-sweep"`, non-private): why the choice of a
//! hyperparameter leaks. A linear soft-margin SVM, trained by SGD on ‖w‖² + α·hinge, is swept
//! over α on two data sets that differ in 8 identical outliers; the best α on one is not the
//! best on the other, so releasing argmax α reveals whether the outliers are present.
//!
//! Data (spec 000 §6, read literally, §8.2): D has `per_class` points per class from isotropic
//! Gaussians (sd `sd`) centred at (7.86, 3.36) (class −1) and (6.42, 9.17) (class +1); D′ adds
//! `outliers` copies of (7.9, 8.0) labelled −1. Each seed draws its own D; D and D′ share it.
//! The seed leaves the learning rate, epochs and initialisation unstated: they are fields.
//! Its figure and tables are declared in its experiment file (`[[plots]]`, `[[tables]]`).

use super::StudyKind;
use crate::error::{Range, Result};
use crate::learn::{accuracy, DpSgdConfig, Length, LinearSvm, Sampling, WeightPenalty};
use crate::numeric::stats::mean_interval;
use crate::params::{Count, OneOrMany};
use crate::rng::{normal, stream};
use crate::sim::fields::Fields;

use crate::sim::report::{select, Key};
use crate::sim::study::Study;
use crate::sim::table::Table;
use ndarray::Array2;
use rayon::prelude::*;

pub const KIND: StudyKind = StudyKind {
    source: file!(),
    name: "svm-alpha-sweep",
    about: "spec 000 Figure 1: the linear SVM's best α with and without outliers (non-private)",
    parse: |f| Ok(Box::new(parse(f)?)),
};

/// Stream tags: the data of a seed, and the SGD run of (seed, α, data set).
const DATA_STREAM: u64 = 0x5356_4d44;
const SGD_STREAM: u64 = 0x5356_4d53;

/// A `svm-alpha-sweep` file.
#[derive(Clone, Debug, PartialEq)]
pub struct AlphaSweep {
    pub seed: u64,
    pub seeds: u64,
    pub alphas: Vec<f64>,
    pub per_class: usize,
    pub sd: f64,
    /// Centres of class −1 and class +1.
    pub centres: [[f64; 2]; 2],
    pub outlier: [f64; 2],
    pub outliers: usize,
    pub learning_rate: f64,
    pub epochs: u64,
    pub batch_size: usize,
    pub penalty: WeightPenalty,
}

/// A `svm-alpha-sweep` experiment file's parameters.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    seed: Option<u64>,
    seeds: Option<Count>,
    alphas: Option<OneOrMany<f64>>,
    per_class: Option<Count>,
    sd: Option<f64>,
    centre_negative: Option<[f64; 2]>,
    centre_positive: Option<[f64; 2]>,
    outlier: Option<[f64; 2]>,
    outliers: Option<Count>,
    learning_rate: Option<f64>,
    epochs: Option<Count>,
    batch_size: Option<Count>,
    penalty: Option<String>,
}

/// Parses a `svm-alpha-sweep` file.
fn parse(f: &Fields) -> Result<AlphaSweep> {
    let p: Params = f.read("a `svm-alpha-sweep` experiment", &[])?;
    let penalty = match p.penalty.as_deref().unwrap_or("squared") {
        "squared" => WeightPenalty::SquaredNorm,
        "half-squared" => WeightPenalty::HalfSquaredNorm,
        _ => return Err(f.bad("penalty", "`squared` (‖w‖², the seed) or `half-squared`")),
    };
    let point = |key: &'static str, given: Option<[f64; 2]>, default: [f64; 2]| match given {
        Some(v) if v.iter().all(|x| x.is_finite()) => Ok(v),
        Some(_) => Err(f.bad(key, "a point [x, y] of finite numbers")),
        None => Ok(default),
    };
    let count = |key, given, default| f.count_or(key, given, 1, default);
    Ok(AlphaSweep {
        seed: p.seed.unwrap_or(0),
        seeds: f.seeds(
            p.seeds
                .ok_or_else(|| f.missing("seeds", "the number of data draws"))?,
        )?,
        alphas: f.numbers_in("alphas", p.alphas, Range::Positive)?,
        per_class: count("per_class", p.per_class, 20)? as usize,
        sd: f.in_range("sd", p.sd.unwrap_or(1.0), Range::Positive)?,
        centres: [
            point("centre_negative", p.centre_negative, [7.86, 3.36])?,
            point("centre_positive", p.centre_positive, [6.42, 9.17])?,
        ],
        outlier: point("outlier", p.outlier, [7.9, 8.0])?,
        outliers: count("outliers", p.outliers, 8)? as usize,
        learning_rate: f.in_range(
            "learning_rate",
            p.learning_rate.ok_or_else(|| {
                f.missing("learning_rate", "the SGD step size (unstated in the seed)")
            })?,
            Range::Positive,
        )?,
        epochs: f.count(
            "epochs",
            p.epochs.ok_or_else(|| {
                f.missing("epochs", "the number of SGD epochs (unstated in the seed)")
            })?,
            1,
        )?,
        batch_size: count("batch_size", p.batch_size, 1)? as usize,
        penalty,
    })
}

/// D for `seed` (class 0 = −1 first, then class 1 = +1) and D′ = D plus the outliers.
pub fn datasets(s: &AlphaSweep, seed: u64) -> [(Array2<f64>, Vec<usize>); 2] {
    let mut rng = stream(s.seed, &[DATA_STREAM, seed]);
    let n = 2 * s.per_class;
    let mut x = Array2::zeros((n, 2));
    let mut labels = Vec::with_capacity(n);
    for (class, centre) in s.centres.iter().enumerate() {
        for _ in 0..s.per_class {
            let i = labels.len();
            x[[i, 0]] = centre[0] + s.sd * normal(&mut rng);
            x[[i, 1]] = centre[1] + s.sd * normal(&mut rng);
            labels.push(class);
        }
    }
    let mut with = Array2::zeros((n + s.outliers, 2));
    with.slice_mut(ndarray::s![..n, ..]).assign(&x);
    for i in n..n + s.outliers {
        with[[i, 0]] = s.outlier[0];
        with[[i, 1]] = s.outlier[1];
    }
    let mut with_labels = labels.clone();
    with_labels.extend(std::iter::repeat_n(0, s.outliers));
    [(x, labels), (with, with_labels)]
}

/// The mean training accuracy at one α, its 95% half-width and the sd over seeds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AlphaPoint {
    pub alpha: f64,
    pub mean: f64,
    /// None from one seed (no interval).
    pub half_width: Option<f64>,
    pub sd: f64,
}

/// One data set's curve and its argmax α (the smallest α among ties).
#[derive(Clone, Debug, PartialEq)]
pub struct Curve {
    pub points: Vec<AlphaPoint>,
    pub best_alpha: f64,
}

/// The data sets' names in the table.
pub const DATASETS: [&str; 2] = ["D", "D′ (with outliers)"];

/// One SVM trained at one α on one data set of one seed.
#[derive(serde::Serialize)]
struct Row {
    seed: u64,
    dataset: String,
    alpha: f64,
    /// None for a diverged run.
    train_accuracy: Option<f64>,
}

/// The rows of one seed: one per (α, data set), the training accuracy on the set trained on.
pub fn run(experiment: &str, s: &AlphaSweep, seed: u64) -> Result<Table> {
    let config = DpSgdConfig::new(
        s.learning_rate,
        s.batch_size,
        Length::Epochs(s.epochs),
        None,
        0.0,
        Sampling::Shuffle,
    )?;
    let rows = (0..s.alphas.len())
        .into_par_iter()
        .map(|a| -> Result<Vec<Row>> {
            let alpha = s.alphas[a];
            let model = LinearSvm::new(2, alpha, s.penalty)?;
            datasets(s, seed)
                .iter()
                .enumerate()
                .map(|(d, (x, labels))| {
                    let mut rng = stream(s.seed, &[SGD_STREAM, seed, alpha.to_bits(), d as u64]);
                    // A diverged run (step too large for this α) scores nothing: recorded as
                    // missing, never as NaN.
                    let acc = config
                        .train(&model, x.view(), labels, &mut rng)
                        .and_then(|t| accuracy(&model, &t.params, x.view(), labels))
                        .ok();
                    Ok(Row {
                        seed,
                        dataset: DATASETS[d].to_string(),
                        alpha,
                        train_accuracy: acc,
                    })
                })
                .collect()
        })
        .collect::<Result<Vec<_>>>()?;
    let rows: Vec<Row> = rows.into_iter().flatten().collect();
    Table::from_experiment_rows(experiment, &rows)
}

/// The curve of each data set, in [`DATASETS`] order.
pub fn summary(s: &AlphaSweep, t: &Table) -> Result<Vec<Curve>> {
    let acc = t.f64("train_accuracy")?;
    DATASETS
        .iter()
        .map(|name| {
            let mut per_alpha = Vec::new();
            for &alpha in &s.alphas {
                let r = select(
                    t,
                    &[
                        ("dataset", Key::Str(name.to_string())),
                        ("alpha", Key::Num(alpha)),
                    ],
                )?;
                let v: Vec<f64> = r.iter().filter_map(|&i| acc[i]).collect();
                let (mean, half) = mean_interval(&v);
                let sd = if v.len() > 1 {
                    (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (v.len() - 1) as f64)
                        .sqrt()
                } else {
                    0.0
                };
                per_alpha.push(AlphaPoint {
                    alpha,
                    mean,
                    half_width: half,
                    sd,
                });
            }
            // The first strict maximum: the smallest α among ties.
            let best = per_alpha
                .iter()
                .fold(per_alpha[0], |b, p| if p.mean > b.mean { *p } else { b });
            Ok(Curve {
                best_alpha: best.alpha,
                points: per_alpha,
            })
        })
        .collect()
}

impl Study for AlphaSweep {
    fn units(&self) -> Vec<String> {
        (0..self.seeds).map(|seed| format!("seed {seed}")).collect()
    }

    fn run_unit(&self, experiment: &str, i: usize) -> Result<Table> {
        run(experiment, self, i as u64)
    }

    fn output(&self) -> &'static str {
        "sweep.parquet"
    }
}
