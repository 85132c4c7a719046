//! Data sets: the small real data shipped under `data/`, loaders for user files (CSV, IDX),
//! the real benchmark data fetched by `just data` into a cache (Fashion-MNIST, UCI Adult; see
//! [`cache`]), and seeded splits. Rows are examples.

pub mod adult;
pub mod cache;
pub mod csv;
pub mod ct_slices;
pub mod fashion_mnist;
pub mod idx;
mod preprocess;
mod split;

pub use adult::{adult, load_adult, parse_adult, AdultSplit};
pub use cache::{cached_file, data_dir, DATA_ENV};
pub use csv::{load_csv, parse_csv, TargetKind};
pub use ct_slices::{load_ct_slices, parse_ct_slices, synthetic_ct_slices};
pub use fashion_mnist::{fashion_mnist, load_fashion_mnist};
pub use idx::load_idx;
pub use preprocess::{clip_rows, Standardiser};
pub use split::{poisson_subsample, shuffle, shuffled_indices, uniform_below, Split};

use crate::error::{Error, Result};
use ndarray::{Array2, Axis};

/// The data sets shipped in `data/` and compiled into the binary (see `data/README.md`).
pub const BUILTIN: &[&str] = &["breast-cancer", "digits", "diabetes"];

/// A shipped data set by name (one of [`BUILTIN`]); the file is embedded, so no path is needed.
pub fn builtin(name: &str) -> Result<Dataset> {
    let classes =
        |names: &[&str]| TargetKind::Classes(names.iter().map(|s| s.to_string()).collect());
    let (text, target) = match name {
        "breast-cancer" => (
            include_str!("../../data/breast-cancer.csv"),
            classes(&["malignant", "benign"]),
        ),
        "digits" => (
            include_str!("../../data/digits.csv"),
            classes(&["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"]),
        ),
        "diabetes" => (include_str!("../../data/diabetes.csv"), TargetKind::Values),
        _ => {
            return Err(Error::invalid(
                "data set",
                name,
                format!("one of {}", BUILTIN.join(", ")),
            ))
        }
    };
    parse_csv(text, &format!("data/{name}.csv (built in)"), name, &target)
}

/// What is predicted.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    /// Class indices in `0..names.len()`.
    Classes {
        labels: Vec<usize>,
        names: Vec<String>,
    },
    /// Real-valued responses (regression).
    Values(Vec<f64>),
}

/// A training part and a test part.
#[derive(Clone, Debug, PartialEq)]
pub struct TrainTest {
    pub train: Dataset,
    pub test: Dataset,
}

/// A data set: features (one row per example) and targets.
#[derive(Clone, Debug, PartialEq)]
pub struct Dataset {
    pub name: String,
    pub x: Array2<f64>,
    pub target: Target,
}

impl Dataset {
    /// The number of examples.
    pub fn len(&self) -> usize {
        self.x.nrows()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn n_features(&self) -> usize {
        self.x.ncols()
    }

    /// Class labels, for a classification set.
    pub fn labels(&self) -> Option<&[usize]> {
        match &self.target {
            Target::Classes { labels, .. } => Some(labels),
            Target::Values(_) => None,
        }
    }

    /// The number of classes (0 for regression).
    pub fn n_classes(&self) -> usize {
        match &self.target {
            Target::Classes { names, .. } => names.len(),
            Target::Values(_) => 0,
        }
    }

    /// Responses, for a regression set.
    pub fn values(&self) -> Option<&[f64]> {
        match &self.target {
            Target::Values(v) => Some(v),
            Target::Classes { .. } => None,
        }
    }

    /// The number of examples in each class, for a classification set.
    pub fn class_counts(&self) -> Option<Vec<usize>> {
        let Target::Classes { labels, names } = &self.target else {
            return None;
        };
        let mut counts = vec![0; names.len()];
        for &c in labels {
            counts[c] += 1;
        }
        Some(counts)
    }

    /// The examples at `rows`, in that order.
    pub fn select(&self, rows: &[usize]) -> Dataset {
        let target = match &self.target {
            Target::Classes { labels, names } => Target::Classes {
                labels: rows.iter().map(|&i| labels[i]).collect(),
                names: names.clone(),
            },
            Target::Values(v) => Target::Values(rows.iter().map(|&i| v[i]).collect()),
        };
        Dataset {
            name: self.name.clone(),
            x: self.x.select(Axis(0), rows),
            target,
        }
    }
}
