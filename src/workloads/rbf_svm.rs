//! Tuning an RBF-kernel SVM's (C, γ) on a binary classification data set (breast-cancer).
//!
//! Privacy model (see [`super::validation_score`]): the training split is public, the
//! validation split (m records) is private, and neighbours replace one validation record. A
//! run at h = (ln C, ln γ) trains the C-SVM with kernel exp(−γ‖x − x′‖²) on the public split by
//! SMO (deterministic) and releases its validation accuracy, the mean of the per-record scores
//! 1{correct} ∈ [0, 1], plus N(0, (z/m)²): ρ-zCDP with ρ = 1/(2z²), z the noise multiplier.
//!
//! Data: experiment seed s gives the split `Dataset::split(validation, test, s)` (stratified);
//! features are standardised with the training part's mean and sd. The split is the same for
//! every repetition: repetitions differ in the tuner's draws and the release noise. The oracle's
//! utility is the test accuracy at h (noise-free), and the best utility the largest test
//! accuracy over the grid.
//!
//! The grid is C × γ, each equally spaced in ln between the ends given, C-major (point
//! i·|γ| + j is (C_i, γ_j)). Every grid point is fitted once per (data set, seed) and cached in
//! the spec, so the harness's many `instance` calls cost no training.

use super::validation_score::{log_grid, names, ClippedMeanRelease, PerKey, ScoreClip};
use super::{
    Hyper, Oracle, PartitionedUtility, PrivateTraining, Space, Variant, Workload, WorkloadSpec,
};
use crate::accounting::Event;
use crate::data::uniform_below;
use crate::data::{builtin, Dataset, Standardiser};
use crate::error::{Error, Range, Result};
use crate::learn::smo::{fit, SvmKernel, SvmParams};
use crate::params::{Count, OneOrMany};
use ndarray::{Array2, Axis};
use rand::RngCore;
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::Arc;

/// The per-record score range: 1{correct} ∈ [0, 1].
const ACCURACY: (f64, f64) = (0.0, 1.0);

/// Every grid point's fit on one split: validation and test accuracy.
#[derive(Debug)]
pub struct SvmGrid {
    space: Space,
    /// (C, γ) of each grid point, in space order.
    points: Vec<(f64, f64)>,
    index: HashMap<Vec<u64>, usize>,
    /// 1{correct} per validation record, per grid point.
    correct: Vec<Vec<f64>>,
    validation: Vec<f64>,
    test: Vec<f64>,
    best: f64,
    records: usize,
    /// The standardised training and validation parts, for shard fits (propose-test).
    train: (Array2<f64>, Vec<usize>),
    valid: (Array2<f64>, Vec<usize>),
}

impl SvmGrid {
    /// Fits every (C, γ) of `c_grid` × `gamma_grid` on the split of `data` under `seed`.
    pub fn fit(
        data: &Dataset,
        (validation, test): (f64, f64),
        seed: u64,
        c_grid: &[f64],
        gamma_grid: &[f64],
    ) -> Result<Self> {
        binary(data)?;
        let split = data.split(validation, test, seed)?;
        if split.validation.is_empty() || split.test.is_empty() {
            return Err(Error::invalid(
                "validation, test",
                format!("{validation}, {test}"),
                format!(
                    "fractions that leave validation and test examples (of {})",
                    data.len()
                ),
            ));
        }
        let s = Standardiser::fit(&split.train.x);
        let (train_x, val_x, test_x) = (
            s.apply(&split.train.x),
            s.apply(&split.validation.x),
            s.apply(&split.test.x),
        );
        let labels = |d: &Dataset| d.labels().expect("checked binary").to_vec();
        let (train_y, val_y, test_y) = (
            labels(&split.train),
            labels(&split.validation),
            labels(&split.test),
        );
        let points: Vec<(f64, f64)> = c_grid
            .iter()
            .flat_map(|&c| gamma_grid.iter().map(move |&g| (c, g)))
            .collect();
        let fits = points
            .par_iter()
            .map(|&(c, gamma)| -> Result<(Vec<f64>, f64)> {
                let params = SvmParams::new(c, SvmKernel::Rbf { gamma })?;
                let svm = fit(train_x.view(), &train_y, &params).map_err(|e| {
                    Error::Numerical(format!("the SVM fit at C = {c}, gamma = {gamma}: {e}"))
                })?;
                let correct = svm
                    .predict(val_x.view())?
                    .iter()
                    .zip(&val_y)
                    .map(|(p, y)| if p == y { 1.0 } else { 0.0 })
                    .collect();
                Ok((correct, svm.accuracy(test_x.view(), &test_y)?))
            })
            .collect::<Result<Vec<_>>>()?;
        let clip = ScoreClip::new("score range", ACCURACY.0, ACCURACY.1)?;
        let (correct, test): (Vec<Vec<f64>>, Vec<f64>) = fits.into_iter().unzip();
        let validation = correct.iter().map(|c| clip.mean(c)).collect();
        let hypers: Vec<Hyper> = points
            .iter()
            .map(|&(c, g)| vec![libm::log(c), libm::log(g)])
            .collect();
        Ok(SvmGrid {
            index: hypers
                .iter()
                .enumerate()
                .map(|(i, h)| (key(h), i))
                .collect(),
            space: Space::Finite(hypers),
            points,
            correct,
            validation,
            best: test.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            test,
            records: val_y.len(),
            train: (train_x, train_y),
            valid: (val_x, val_y),
        })
    }

    /// The validation accuracy of the SVM at grid point `point` fitted on the training rows
    /// `rows` alone. A shard with one class predicts it; an empty shard scores 0 (a constant).
    fn shard_accuracy(&self, point: usize, rows: &[usize]) -> Result<f64> {
        let (vx, vy) = &self.valid;
        let labels: Vec<usize> = rows.iter().map(|&r| self.train.1[r]).collect();
        let Some(&first) = labels.first() else {
            return Ok(0.0);
        };
        if labels.iter().all(|&l| l == first) {
            return Ok(vy.iter().filter(|&&y| y == first).count() as f64 / vy.len() as f64);
        }
        let (c, gamma) = self.points[point];
        let x = self.train.0.select(Axis(0), rows);
        let svm = fit(
            x.view(),
            &labels,
            &SvmParams::new(c, SvmKernel::Rbf { gamma })?,
        )?;
        svm.accuracy(vx.view(), vy)
    }
}

fn key(h: &Hyper) -> Vec<u64> {
    h.iter().map(|v| v.to_bits()).collect()
}

fn binary(data: &Dataset) -> Result<()> {
    if data.n_classes() != 2 {
        return Err(Error::invalid(
            "data",
            &data.name,
            "a binary classification data set (built in: breast-cancer)",
        ));
    }
    Ok(())
}

/// One instance: the cached grid of one split and the release at noise multiplier z.
#[derive(Clone, Debug)]
pub struct RbfSvm {
    name: String,
    grid: Arc<SvmGrid>,
    release: ClippedMeanRelease,
}

impl RbfSvm {
    pub fn new(name: &str, grid: Arc<SvmGrid>, noise_multiplier: f64) -> Result<Self> {
        let clip = ScoreClip::new("score range", ACCURACY.0, ACCURACY.1)?;
        Ok(RbfSvm {
            name: name.to_string(),
            release: ClippedMeanRelease::new(clip, grid.records, noise_multiplier)?,
            grid,
        })
    }

    /// The index of grid point `h`; None when `h` is not a point of [`Workload::space`]
    /// (tuners draw only from it).
    fn at(&self, h: &Hyper) -> Option<usize> {
        self.grid.index.get(&key(h)).copied()
    }

    /// (C, γ) of each grid point, in the order of the space (whose points are (ln C, ln γ)).
    pub fn points(&self) -> &[(f64, f64)] {
        &self.grid.points
    }

    pub fn release(&self) -> &ClippedMeanRelease {
        &self.release
    }

    /// 1{correct} for each validation record at grid point `h` (None off the grid).
    pub fn validation_scores(&self, h: &Hyper) -> Option<&[f64]> {
        self.at(h).map(|i| self.grid.correct[i].as_slice())
    }

    /// The noise-free validation accuracy at grid point `h`: the mean a run releases.
    pub fn validation_accuracy(&self, h: &Hyper) -> Option<f64> {
        self.at(h).map(|i| self.grid.validation[i])
    }
}

impl PrivateTraining for RbfSvm {
    fn run_event(&self) -> &Event {
        self.release.event()
    }
    /// Off the grid nothing was trained: the run releases the lowest score plus the same
    /// noise, a data-independent value.
    fn train(&self, h: &Hyper, rng: &mut dyn RngCore) -> f64 {
        let mean = self
            .validation_accuracy(h)
            .unwrap_or(self.release.clip().lo());
        self.release.release(mean, rng)
    }
}

/// Shards of the (public) training split, each training row's shard drawn uniformly; the
/// accuracy on the private validation split moves by at most 1/m when one validation record is
/// replaced, so the shard mean has sensitivity 1/m ≤ 1/k (spec 003 §5.10).
impl PartitionedUtility for RbfSvm {
    /// On its own finite space (the list the tuner passes).
    fn shard_utilities(
        &self,
        _candidates: &[Hyper],
        k: usize,
        rng: &mut dyn RngCore,
    ) -> Result<Vec<Vec<f64>>> {
        let g = &self.grid;
        let mut shards = vec![Vec::new(); k];
        for r in 0..g.train.1.len() {
            shards[uniform_below(rng, k as u64) as usize].push(r);
        }
        (0..g.points.len())
            .into_par_iter()
            .map(|j| {
                shards
                    .iter()
                    .map(|rows| g.shard_accuracy(j, rows))
                    .collect()
            })
            .collect()
    }
    fn private_validation_records(&self) -> Option<usize> {
        Some(self.grid.records)
    }
}

impl Oracle for RbfSvm {
    /// The test accuracy at grid point `h` (NaN off the grid: no model, stored as missing).
    fn utility(&self, h: &Hyper) -> f64 {
        self.at(h).map_or(f64::NAN, |i| self.grid.test[i])
    }
    fn best_utility(&self) -> f64 {
        self.grid.best
    }
}

impl Workload for RbfSvm {
    fn name(&self) -> String {
        self.name.clone()
    }
    fn space(&self) -> &Space {
        &self.grid.space
    }
    fn oracle(&self) -> &dyn Oracle {
        self
    }
    fn private_training(&self) -> Option<&dyn PrivateTraining> {
        Some(self)
    }
    fn partitioned_utility(&self) -> Option<&dyn PartitionedUtility> {
        Some(self)
    }
}

/// The `rbf-svm` experiment-file workload: one variant per data set.
pub struct RbfSvmSpec {
    data: Vec<Dataset>,
    validation: f64,
    test: f64,
    c_range: [f64; 2],
    gamma_range: [f64; 2],
    c_grid: Vec<f64>,
    gamma_grid: Vec<f64>,
    noise: Option<f64>,
    grids: PerKey<(usize, u64), SvmGrid>,
}

/// A `[workload]` table of kind `rbf-svm`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    data: Option<OneOrMany<String>>,
    validation: Option<f64>,
    test: Option<f64>,
    c_range: Option<[f64; 2]>,
    c_points: Option<Count>,
    gamma_range: Option<[f64; 2]>,
    gamma_points: Option<Count>,
    noise: Option<f64>,
}

/// Builds the spec from a `[workload]` table (kind = "rbf-svm").
pub fn spec(params: &toml::Table) -> Result<Box<dyn WorkloadSpec>> {
    Ok(Box::new(RbfSvmSpec::from_params(params)?))
}

impl RbfSvmSpec {
    /// Parameters: `data` (a binary built-in set or a list of them; breast-cancer),
    /// `validation` and `test` fractions (0.25 each), `c_range` ([1e-2, 1e3]), `c_points` (8),
    /// `gamma_range` ([1e-4, 1]), `gamma_points` (8), and `noise` (the noise multiplier z
    /// when no budget calibrates it).
    pub fn from_params(params: &toml::Table) -> Result<Self> {
        let p: Params = super::read("rbf-svm", params)?;
        let data = names("data", p.data, &["breast-cancer"])?
            .iter()
            .map(|name| {
                let d = builtin(name)?;
                binary(&d)?;
                Ok(d)
            })
            .collect::<Result<Vec<_>>>()?;
        let validation = Range::OpenUnit.check("validation", p.validation.unwrap_or(0.25))?;
        let test = Range::OpenUnit.check("test", p.test.unwrap_or(0.25))?;
        let c_range = p.c_range.unwrap_or([1e-2, 1e3]);
        let gamma_range = p.gamma_range.unwrap_or([1e-4, 1.0]);
        let c_points = p.c_points.map_or(8, |c| c.0 as usize);
        let gamma_points = p.gamma_points.map_or(8, |c| c.0 as usize);
        let c_grid = log_grid("c_range", c_range, "c_points", c_points)?;
        let gamma_grid = log_grid("gamma_range", gamma_range, "gamma_points", gamma_points)?;
        let noise = p
            .noise
            .map(|z| Range::Positive.check("noise", z))
            .transpose()?;
        Ok(RbfSvmSpec {
            data,
            validation,
            test,
            c_range,
            gamma_range,
            c_grid,
            gamma_grid,
            noise,
            grids: PerKey::default(),
        })
    }

    /// The instance of `variant` (a data set) for experiment seed `seed` at noise multiplier
    /// `noise`; the grid is fitted on the first call for (variant, seed) and then shared.
    pub fn workload(&self, variant: usize, seed: u64, noise: f64) -> Result<RbfSvm> {
        let data = self.data.get(variant).ok_or_else(|| {
            Error::invalid("variant", variant, format!("below {}", self.data.len()))
        })?;
        let grid = self.grids.get_or_build((variant, seed), || {
            SvmGrid::fit(
                data,
                (self.validation, self.test),
                seed,
                &self.c_grid,
                &self.gamma_grid,
            )
        })?;
        RbfSvm::new(&format!("rbf-svm({})", data.name), grid, noise)
    }
}

impl WorkloadSpec for RbfSvmSpec {
    fn kind(&self) -> &'static str {
        "rbf-svm"
    }
    fn params(&self) -> String {
        format!(
            "validation={}, test={}, C in [{}, {}] x {}, gamma in [{}, {}] x {}, score=accuracy in [0, 1]",
            self.validation,
            self.test,
            self.c_range[0],
            self.c_range[1],
            self.c_grid.len(),
            self.gamma_range[0],
            self.gamma_range[1],
            self.gamma_grid.len(),
        )
    }
    fn variants(&self) -> Vec<Variant> {
        self.data
            .iter()
            .map(|d| Variant {
                label: d.name.clone(),
                dim: 2,
            })
            .collect()
    }
    fn default_noise(&self) -> Option<f64> {
        self.noise
    }
    fn instance(
        &self,
        variant: usize,
        seed: u64,
        _rep: u64,
        noise: f64,
    ) -> Result<Box<dyn Workload>> {
        Ok(Box::new(self.workload(variant, seed, noise)?))
    }
}
