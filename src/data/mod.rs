//! Data sets: the small real data shipped under `data/`, loaders for user files (CSV, IDX),
//! and seeded splits. Rows are examples.

use ndarray::{Array2, Axis};

/// What is predicted.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    /// Class indices in `0..names.len()`.
    Classes { labels: Vec<usize>, names: Vec<String> },
    /// Real-valued responses (regression).
    Values(Vec<f64>),
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
