//! Spec 001's five DP-SGD / DP-Adam tasks (§3.2, "Tasks"), on the batched engine: a data set,
//! a model, an optimiser, an initialisation and the Table-1 box Λ of the hyperparameters
//! λ = (epochs T, lot size m, learning rate η, noise multiplier σ, clip L).
//!
//! | id | data | model | loss | optimiser | init |
//! |---|---|---|---|---|---|
//! | `adult-lr-sgd` | Adult | logistic regression 123→1 ([`Logistic::binary`]) | sigmoid BCE | DP-SGD | zeros |
//! | `adult-lr-adam` | Adult | the same | sigmoid BCE | DP-Adam (β1 0.9, β2 0.999, κ 1e-8) | zeros |
//! | `adult-svm-sgd` | Adult | linear SVM, labels ±1 ([`LinearSvm`], α = 1, no penalty) | hinge | DP-SGD | zeros |
//! | `fmnist-mlp1-sgd` | Fashion-MNIST | 784-1000-10 ReLU | softmax CE | DP-SGD | Xavier-normal |
//! | `fmnist-mlp2-sgd` | Fashion-MNIST | 784-128-64-10 ReLU | softmax CE | DP-SGD | Xavier-normal |
//!
//! **Fashion-MNIST stands in for MNIST.** The spec's `mnist-*` rows train on MNIST, which has
//! no route through a package registry and stays data a user supplies
//! ([`crate::data::load_idx`]); the `fmnist-*` tasks are those rows' models, optimiser and
//! domain on Fashion-MNIST, a harder data set of the same shape (60,000 / 10,000 images of
//! 28 × 28, 10 classes), so accuracies are lower than the paper's. [`Task::new`] accepts any
//! data of that shape (MNIST included), pixels divided by 255 into [0, 1] as the spec says
//! (the Fashion-MNIST loader already divides; [`Task::new`] checks the range).
//!
//! **Data.** Adult is the a1a-sized split [`AdultSplit::A1a`] with [`ADULT_SPLIT_SEED`]: n =
//! 30,956 training rows (the size of the release's a1a.t, which the spec asks for so that ε
//! is faithful) and 1,605 test rows, 123 one-hot features as they come (no scaling).
//! Fashion-MNIST: 60,000 / 10,000. [`Task::new`] takes any split of the right shape (the CI
//! subsets under `tests/fixtures/real_data/`, say); ε always uses the n of the data given.
//!
//! **A run** (spec 001 Alg. 3 and 4) draws its initial parameters from the run's rng
//! ([`Init::XavierNormal`] for the MLPs: every weight and bias N(0, 6/(fan_in + fan_out)) per
//! tensor as the release does; [`Init::Zeros`] for the linear models, as the algorithms write
//! w ← 0), then takes T·round(n/m) steps, each on a fresh lot of exactly m examples drawn
//! without replacement, with g = (1/m)·Σ clip_L(∇ℓ) + (2L/m)·N(0, σ²I) ([`Sampling::
//! WithoutReplacement`]). A run whose parameters become non-finite stops, keeps the last finite
//! parameters (the initial ones when the first step overflows) and is scored with
//! `diverged = true` ([`OnDivergence::Stop`], which also says why a non-finite loss alone does
//! not stop a run). The utility is the accuracy on the test part.
//!
//! **Privacy** (replace-one neighbours of the training part, δ = [`TASK_DELTA`] = 1e-5): the
//! Wang–Balle–Kasiviswanathan accountant for T·round(n/m) subsampled Gaussian steps with q =
//! m/n and noise multiplier σ ([`DpSgd::without_replacement`]), converted by spec 001 §6.1's
//! plain conversion over the integer orders 2..4096 ([`integer_orders_epsilon`]); every order
//! gives a valid bound, so ε is an upper bound. It depends on (T, m, σ) and n only, never on η,
//! L or the data's values.
//!
//! **Hyperparameters.** [`Domain::point`] validates λ against the task's Table-1 box (each
//! coordinate finite and inside its interval, or an error naming it and the interval), then
//! rounds T and m to the nearest integer (spec 001: "treated as continuous and rounded to the
//! nearest integer before evaluation"; halves away from zero).

use crate::accounting::{integer_orders_epsilon, DpSgd, RdpCurve, SPEC_001_MAX_ORDER};
use crate::data::adult::{ADULT_FEATURES, ADULT_SPLIT_SEED};
use crate::data::fashion_mnist::FASHION_MNIST_PIXELS;
use crate::data::TrainTest;
use crate::data::{adult, fashion_mnist, load_adult, load_fashion_mnist, AdultSplit, Dataset};
use crate::error::{fmt_num, Error, Result};
use crate::learn::{
    accuracy, Activation, Device, DpSgdConfig, Init, Length, LinearSvm, Logistic, Mlp, Model,
    OnDivergence, Optimizer, Sampling, WeightPenalty,
};
use ndarray::Array2;
use rand::RngCore;
use std::path::Path;
use std::time::Instant;

/// δ of every task's (ε, δ) (spec 001 §3.2, from the release's code).
pub const TASK_DELTA: f64 = 1e-5;

/// The names of λ's coordinates, in the order of [`Domain::point`].
pub const HYPERPARAMETERS: [&str; 5] = [
    "epochs",
    "lot_size",
    "learning_rate",
    "noise_multiplier",
    "clip",
];

/// One of spec 001's five tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TaskId {
    AdultLrSgd,
    AdultLrAdam,
    AdultSvmSgd,
    FmnistMlp1Sgd,
    FmnistMlp2Sgd,
}

/// The data set a task trains on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TaskData {
    /// UCI Adult, a1a-encoded: 123 features, 2 classes.
    Adult,
    /// Fashion-MNIST (standing in for MNIST): 784 pixels in [0, 1], 10 classes.
    FashionMnist,
}

impl TaskData {
    pub fn name(self) -> &'static str {
        match self {
            TaskData::Adult => "adult",
            TaskData::FashionMnist => "fashion-mnist",
        }
    }
    pub fn features(self) -> usize {
        match self {
            TaskData::Adult => ADULT_FEATURES,
            TaskData::FashionMnist => FASHION_MNIST_PIXELS,
        }
    }
    pub fn classes(self) -> usize {
        match self {
            TaskData::Adult => 2,
            TaskData::FashionMnist => 10,
        }
    }
    /// The Table-1 box of the tasks on this data.
    pub fn domain(self) -> &'static Domain {
        match self {
            TaskData::Adult => &ADULT_DOMAIN,
            TaskData::FashionMnist => &FMNIST_DOMAIN,
        }
    }

    /// The cached full data (`just data`): Adult's a1a-sized split (30,956 / 1,605 rows, seed
    /// [`ADULT_SPLIT_SEED`]) or Fashion-MNIST (60,000 / 10,000). A missing cache is an error
    /// that says to run `just data`.
    pub fn cached(self) -> Result<TrainTest> {
        match self {
            TaskData::Adult => adult(AdultSplit::A1a {
                seed: ADULT_SPLIT_SEED,
            }),
            TaskData::FashionMnist => fashion_mnist(),
        }
    }

    /// The data from files: for Adult two UCI-format files `[train, test]` (`adult.data`
    /// layout, e.g. the CI subsets `adult-sample.data` and `adult-sample.test`); for
    /// Fashion-MNIST four uncompressed IDX files `[train images, train labels, test images,
    /// test labels]`.
    pub fn from_files<P: AsRef<Path>>(self, files: &[P]) -> Result<TrainTest> {
        let want = match self {
            TaskData::Adult => "2 files [train, test] in the UCI adult.data format",
            TaskData::FashionMnist => {
                "4 IDX files [train images, train labels, test images, test labels]"
            }
        };
        match (self, files) {
            (TaskData::Adult, [train, test]) => Ok(TrainTest {
                train: load_adult(train.as_ref())?,
                test: load_adult(test.as_ref())?,
            }),
            (TaskData::FashionMnist, [train_x, train_y, test_x, test_y]) => Ok(TrainTest {
                train: load_fashion_mnist(train_x.as_ref(), train_y.as_ref())?,
                test: load_fashion_mnist(test_x.as_ref(), test_y.as_ref())?,
            }),
            _ => Err(Error::invalid(
                "files",
                format!("{} files", files.len()),
                format!("{want} for {}", self.name()),
            )),
        }
    }
}

impl TaskId {
    pub const ALL: [TaskId; 5] = [
        TaskId::AdultLrSgd,
        TaskId::AdultLrAdam,
        TaskId::AdultSvmSgd,
        TaskId::FmnistMlp1Sgd,
        TaskId::FmnistMlp2Sgd,
    ];

    pub fn name(self) -> &'static str {
        match self {
            TaskId::AdultLrSgd => "adult-lr-sgd",
            TaskId::AdultLrAdam => "adult-lr-adam",
            TaskId::AdultSvmSgd => "adult-svm-sgd",
            TaskId::FmnistMlp1Sgd => "fmnist-mlp1-sgd",
            TaskId::FmnistMlp2Sgd => "fmnist-mlp2-sgd",
        }
    }

    /// The task called `name` (one of [`TaskId::ALL`]'s names).
    pub fn parse(name: &str) -> Result<Self> {
        TaskId::ALL
            .into_iter()
            .find(|t| t.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = TaskId::ALL.iter().map(|t| t.name()).collect();
                Error::invalid("task", name, format!("one of {}", names.join(", ")))
            })
    }

    pub fn data(self) -> TaskData {
        match self {
            TaskId::AdultLrSgd | TaskId::AdultLrAdam | TaskId::AdultSvmSgd => TaskData::Adult,
            TaskId::FmnistMlp1Sgd | TaskId::FmnistMlp2Sgd => TaskData::FashionMnist,
        }
    }

    /// The Table-1 box Λ.
    pub fn domain(self) -> &'static Domain {
        self.data().domain()
    }

    pub fn optimizer(self) -> Optimizer {
        match self {
            TaskId::AdultLrAdam => Optimizer::ADAM,
            _ => Optimizer::Sgd,
        }
    }

    /// Zeros for the linear models, Xavier-normal for the MLPs (spec 001 "Initialisation").
    pub fn init(self) -> Init {
        match self.data() {
            TaskData::Adult => Init::Zeros,
            TaskData::FashionMnist => Init::XavierNormal,
        }
    }

    /// The model, on the batched engine (each is a stack of dense layers).
    pub fn model(self) -> Result<Box<dyn Model>> {
        let d = self.data().features();
        Ok(match self {
            TaskId::AdultLrSgd | TaskId::AdultLrAdam => Box::new(Logistic::binary(d)?),
            // α = 1 and no penalty: the release's plain hinge max(0, 1 − y·(w·x + b)).
            TaskId::AdultSvmSgd => Box::new(LinearSvm::new(d, 1.0, WeightPenalty::None)?),
            TaskId::FmnistMlp1Sgd => Box::new(Mlp::new(&[d, 1000, 10], Activation::Relu)?),
            TaskId::FmnistMlp2Sgd => Box::new(Mlp::new(&[d, 128, 64, 10], Activation::Relu)?),
        })
    }
}

/// A closed interval [lo, hi] of one hyperparameter.
pub type Interval = (f64, f64);

/// Spec 001 Table 1: the box Λ every tuner searches. σ is the noise multiplier (the table's
/// "noise variance σ²" label notwithstanding: the release's accountant uses σ).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Domain {
    /// The data it is for (named in errors).
    pub data: &'static str,
    /// T, an integer after rounding.
    pub epochs: Interval,
    /// m, an integer after rounding.
    pub lot_size: Interval,
    pub learning_rate: Interval,
    pub noise_multiplier: Interval,
    pub clip: Interval,
}

/// Table 1, adult (all three tasks).
pub const ADULT_DOMAIN: Domain = Domain {
    data: "adult",
    epochs: (1.0, 64.0),
    lot_size: (8.0, 512.0),
    learning_rate: (5e-4, 5e-2),
    noise_multiplier: (0.1, 16.0),
    clip: (0.1, 4.0),
};

/// Table 1, mnist (both MLPs; used for Fashion-MNIST).
pub const FMNIST_DOMAIN: Domain = Domain {
    data: "mnist",
    epochs: (1.0, 400.0),
    lot_size: (16.0, 4000.0),
    learning_rate: (1e-3, 5e-1),
    noise_multiplier: (0.1, 16.0),
    clip: (0.1, 12.0),
};

/// λ after validation and rounding.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hyperparameters {
    pub epochs: u64,
    pub lot_size: usize,
    pub learning_rate: f64,
    pub noise_multiplier: f64,
    pub clip: f64,
}

impl Hyperparameters {
    /// (T, m, η, σ, L) as numbers, in the order of [`HYPERPARAMETERS`].
    pub fn as_point(&self) -> [f64; 5] {
        [
            self.epochs as f64,
            self.lot_size as f64,
            self.learning_rate,
            self.noise_multiplier,
            self.clip,
        ]
    }
}

impl Domain {
    /// (name, interval) per coordinate, in the order of [`HYPERPARAMETERS`].
    pub fn intervals(&self) -> [(&'static str, Interval); 5] {
        [
            (HYPERPARAMETERS[0], self.epochs),
            (HYPERPARAMETERS[1], self.lot_size),
            (HYPERPARAMETERS[2], self.learning_rate),
            (HYPERPARAMETERS[3], self.noise_multiplier),
            (HYPERPARAMETERS[4], self.clip),
        ]
    }

    /// `value` when it is finite and inside the interval of `name` (one of
    /// [`HYPERPARAMETERS`]), else an error naming the parameter and its interval.
    pub fn check(&self, name: &'static str, value: f64) -> Result<f64> {
        let (_, (lo, hi)) = self
            .intervals()
            .into_iter()
            .find(|(n, _)| *n == name)
            .ok_or_else(|| {
                Error::invalid(
                    "hyperparameter",
                    name,
                    format!("one of {}", HYPERPARAMETERS.join(", ")),
                )
            })?;
        if value.is_finite() && lo <= value && value <= hi {
            Ok(value)
        } else {
            Err(Error::invalid(
                name,
                fmt_num(value),
                format!(
                    "a number in [{}, {}] (spec 001 Table 1, {})",
                    fmt_num(lo),
                    fmt_num(hi),
                    self.data
                ),
            ))
        }
    }

    /// λ = (T, m, η, σ, L) validated against the box, T and m rounded to the nearest integer.
    pub fn point(&self, lambda: [f64; 5]) -> Result<Hyperparameters> {
        let [t, m, eta, sigma, clip] = lambda;
        Ok(Hyperparameters {
            epochs: self.check("epochs", t)?.round() as u64,
            lot_size: self.check("lot_size", m)?.round() as usize,
            learning_rate: self.check("learning_rate", eta)?,
            noise_multiplier: self.check("noise_multiplier", sigma)?,
            clip: self.check("clip", clip)?,
        })
    }
}

/// What one run of a task gives.
#[derive(Clone, Debug, PartialEq)]
pub struct Fit {
    /// The trained parameters (the last finite ones when the run diverged).
    pub params: Vec<f64>,
    /// Accuracy on the test part, in [0, 1].
    pub test_accuracy: f64,
    /// The run stopped on non-finite parameters.
    pub diverged: bool,
    /// The steps taken (T·round(n/m), or fewer when it diverged, counting the one that
    /// overflowed).
    pub steps: u64,
    /// Wall-clock seconds of initialisation, training and scoring.
    pub wall_secs: f64,
}

/// A run with its privacy: one row of spec 001's `trials` table.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskRun {
    pub hyperparameters: Hyperparameters,
    pub test_accuracy: f64,
    /// ε at δ = [`TASK_DELTA`] for (T, m, σ) and n ([`Task::epsilon`]).
    pub epsilon: f64,
    pub delta: f64,
    pub diverged: bool,
    pub wall_secs: f64,
}

/// A task with its data: ready to run at any λ.
pub struct Task {
    id: TaskId,
    domain: Domain,
    model: Box<dyn Model>,
    train: (Array2<f64>, Vec<usize>),
    test: (Array2<f64>, Vec<usize>),
    device: Device,
}

impl std::fmt::Debug for Task {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Task")
            .field("id", &self.id)
            .field("train", &self.train.1.len())
            .field("test", &self.test.1.len())
            .finish()
    }
}

/// The rows and class labels of `part` (`which` names it in errors), checked against `data`.
fn part(d: &Dataset, which: &'static str, data: TaskData) -> Result<(Array2<f64>, Vec<usize>)> {
    let shape = format!(
        "a classification data set of {} features and {} classes ({})",
        data.features(),
        data.classes(),
        data.name()
    );
    let labels = d
        .labels()
        .filter(|_| d.n_features() == data.features() && d.n_classes() == data.classes())
        .ok_or_else(|| {
            Error::invalid(
                which,
                format!(
                    "`{}` with {} features and {} classes",
                    d.name,
                    d.n_features(),
                    d.n_classes()
                ),
                shape.clone(),
            )
        })?;
    if d.is_empty() {
        return Err(Error::invalid(which, "no rows", "at least one row"));
    }
    if let Some(v) = d.x.iter().find(|v| !(0.0..=1.0).contains(*v)) {
        // Adult is 0/1 one-hot and images are pixels/255, so every value lies in [0, 1].
        return Err(Error::invalid(
            which,
            format!("a feature value {}", fmt_num(*v)),
            format!(
                "values in [0, 1] ({})",
                match data {
                    TaskData::Adult => "one-hot features",
                    TaskData::FashionMnist => "pixels divided by 255",
                }
            ),
        ));
    }
    Ok((d.x.as_standard_layout().into_owned(), labels.to_vec()))
}

impl Task {
    /// The task `id` on `data` (train and test parts of its data set's shape, values in
    /// [0, 1]).
    pub fn new(id: TaskId, data: &TrainTest) -> Result<Self> {
        let kind = id.data();
        Ok(Task {
            id,
            domain: *id.domain(),
            model: id.model()?,
            train: part(&data.train, "train", kind)?,
            test: part(&data.test, "test", kind)?,
            device: Device::Cpu,
        })
    }

    /// The task training on `device` (the CPU by default).
    pub fn with_device(self, device: Device) -> Self {
        Task { device, ..self }
    }

    /// The task on the cached full data ([`TaskData::cached`]).
    pub fn load(id: TaskId) -> Result<Self> {
        Task::new(id, &id.data().cached()?)
    }

    pub fn id(&self) -> TaskId {
        self.id
    }

    /// The same task searching another box than Table 1's (a study beyond the spec, or a
    /// stress test with a learning rate large enough to diverge). Nothing else changes: ε
    /// depends on (T, m, σ) and n alone.
    pub fn with_domain(self, domain: Domain) -> Self {
        Task { domain, ..self }
    }

    /// The box λ is checked against: Table 1's for the task unless [`Task::with_domain`]
    /// replaced it.
    pub fn domain(&self) -> &Domain {
        &self.domain
    }
    pub fn model(&self) -> &dyn Model {
        self.model.as_ref()
    }
    /// n, the training rows: the size the accountant uses.
    pub fn train_size(&self) -> usize {
        self.train.1.len()
    }
    pub fn test_size(&self) -> usize {
        self.test.1.len()
    }
    /// The labels of the test part.
    pub fn test_labels(&self) -> &[usize] {
        &self.test.1
    }

    /// λ from numbers, validated against the task's box ([`Domain::point`]).
    pub fn hyperparameters(&self, lambda: [f64; 5]) -> Result<Hyperparameters> {
        self.domain.point(lambda)
    }

    /// `h` checked against the box and the data: m ≤ n.
    fn check(&self, h: &Hyperparameters) -> Result<()> {
        let domain = &self.domain;
        domain.point(h.as_point())?;
        let n = self.train_size();
        if h.lot_size > n {
            return Err(Error::invalid(
                "lot_size",
                h.lot_size,
                format!(
                    "an integer in [{}, {}] and at most n = {n}, the training rows",
                    fmt_num(domain.lot_size.0),
                    fmt_num(domain.lot_size.1)
                ),
            ));
        }
        Ok(())
    }

    /// DP-SGD's settings for `h`: lots without replacement, T epochs of round(n/m) steps, the
    /// task's optimiser, stopping on divergence.
    pub fn config(&self, h: &Hyperparameters) -> Result<DpSgdConfig> {
        self.check(h)?;
        self.config_with(h, h.lot_size, h.noise_multiplier)
    }

    /// The task's DP-SGD at `h` with lots of `lot_size` and noise multiplier `noise` (unchecked
    /// against the box: [`Task::config`] checks; a shard fit uses σ = 0 and smaller lots).
    fn config_with(&self, h: &Hyperparameters, lot_size: usize, noise: f64) -> Result<DpSgdConfig> {
        Ok(DpSgdConfig::new(
            h.learning_rate,
            lot_size,
            Length::Epochs(h.epochs),
            Some(h.clip),
            noise,
            Sampling::WithoutReplacement,
        )?
        .with_optimizer(self.id.optimizer())?
        .with_divergence(OnDivergence::Stop))
    }

    /// The DP-SGD mechanism of a run at `h`: T·round(n/m) WOR subsampled Gaussian steps,
    /// q = m/n.
    pub fn dpsgd(&self, h: &Hyperparameters) -> Result<DpSgd> {
        self.check(h)?;
        DpSgd::without_replacement(
            self.train_size() as u64,
            h.lot_size as u64,
            h.noise_multiplier,
            h.epochs,
        )
    }

    /// The RDP curve of a run at `h` ([`Self::dpsgd`]).
    pub fn privacy(&self, h: &Hyperparameters) -> Result<RdpCurve> {
        Ok(self.dpsgd(h)?.rdp())
    }

    /// ε at δ = [`TASK_DELTA`] of a run at `h` (spec 001 §6.1's conversion, an upper bound).
    pub fn epsilon(&self, h: &Hyperparameters) -> Result<f64> {
        Ok(integer_orders_epsilon(&self.privacy(h)?, TASK_DELTA, SPEC_001_MAX_ORDER)?.epsilon)
    }

    /// One run at `h`: initial parameters, then DP-SGD, all drawn from `rng`, then the test
    /// accuracy. A diverged run is scored with its last finite parameters.
    pub fn fit(&self, h: &Hyperparameters, rng: &mut dyn RngCore) -> Result<Fit> {
        let config = self.config(h)?;
        let start = Instant::now();
        let model = self.model.as_ref();
        let init = self.id.init().params(model, rng)?;
        let trained = self.device.train_from(
            &config,
            model,
            init,
            self.train.0.view(),
            &self.train.1,
            rng,
        )?;
        let test_accuracy = accuracy(model, &trained.params, self.test.0.view(), &self.test.1)?;
        Ok(Fit {
            steps: trained.loss_trace.len() as u64,
            diverged: trained.diverged,
            params: trained.params,
            test_accuracy,
            wall_secs: start.elapsed().as_secs_f64(),
        })
    }

    /// Runs at `h`, one per stream, trained together on the task's device (one GPU call for
    /// all of them): each as [`Task::fit`] trains it from that stream. `wall_secs` of each is
    /// the whole call's.
    pub fn fit_many(&self, h: &Hyperparameters, rngs: Vec<&mut dyn RngCore>) -> Result<Vec<Fit>> {
        let config = self.config(h)?;
        let start = Instant::now();
        let model = self.model.as_ref();
        let mut runs = Vec::with_capacity(rngs.len());
        for rng in rngs {
            let init = self.id.init().params(model, rng)?;
            runs.push((config.clone(), init, rng));
        }
        let trained = self
            .device
            .train_many(model, self.train.0.view(), &self.train.1, runs)?;
        let wall_secs = start.elapsed().as_secs_f64();
        trained
            .into_iter()
            .map(|t| {
                let t = t?;
                Ok(Fit {
                    steps: t.loss_trace.len() as u64,
                    diverged: t.diverged,
                    test_accuracy: accuracy(model, &t.params, self.test.0.view(), &self.test.1)?,
                    params: t.params,
                    wall_secs,
                })
            })
            .collect()
    }

    /// The test accuracy of a NON-private run at `h` on the training rows `rows` alone: the
    /// same model, optimiser, epochs, lots (at most the shard's size) and clipping norm, no
    /// noise (σ = 0). A shard model of propose-test, whose tests privatise its accuracy.
    pub fn fit_shard(
        &self,
        h: &Hyperparameters,
        rows: &[usize],
        rng: &mut dyn RngCore,
    ) -> Result<f64> {
        if rows.is_empty() {
            return Err(Error::invalid(
                "shard",
                "no rows",
                "at least one training row",
            ));
        }
        let config = self.config_with(h, h.lot_size.min(rows.len()), 0.0)?;
        let model = self.model.as_ref();
        let init = self.id.init().params(model, rng)?;
        let x = self.train.0.select(ndarray::Axis(0), rows);
        let labels: Vec<usize> = rows.iter().map(|&r| self.train.1[r]).collect();
        let trained = self
            .device
            .train_from(&config, model, init, x.view(), &labels, rng)?;
        accuracy(model, &trained.params, self.test.0.view(), &self.test.1)
    }

    /// ℓ(θ; x, y) of every test row at parameters `params` (the per-user losses of DP-GIBO,
    /// whose users are the test records).
    pub fn test_losses(&self, params: &[f64]) -> Vec<f64> {
        let model = self.model.as_ref();
        let mut grad = vec![0.0; model.n_params()];
        let mut scratch = vec![0.0; model.scratch_len()];
        self.test
            .0
            .rows()
            .into_iter()
            .zip(&self.test.1)
            .map(|(x, &y)| {
                let x = x.to_vec();
                model.loss_grad(params, &x, y, &mut grad, &mut scratch)
            })
            .collect()
    }

    /// The test accuracy of the model at its initial parameters (drawn from `rng` as a run
    /// draws them), never trained: what a search that releases nothing can output.
    pub fn untrained_accuracy(&self, rng: &mut dyn RngCore) -> Result<f64> {
        let model = self.model.as_ref();
        let init = self.id.init().params(model, rng)?;
        accuracy(model, &init, self.test.0.view(), &self.test.1)
    }

    /// One run at `h` with its (ε, δ).
    pub fn run(&self, h: &Hyperparameters, rng: &mut dyn RngCore) -> Result<TaskRun> {
        let epsilon = self.epsilon(h)?;
        let fit = self.fit(h, rng)?;
        Ok(TaskRun {
            hyperparameters: *h,
            test_accuracy: fit.test_accuracy,
            epsilon,
            delta: TASK_DELTA,
            diverged: fit.diverged,
            wall_secs: fit.wall_secs,
        })
    }
}

/// A task as DPareto's oracle (spec 001 §2): λ = (T, m, η, σ, L) in [`HYPERPARAMETERS`]
/// order ↦ (ε at δ = [`TASK_DELTA`], mean test error over `replicates` runs). ε is the
/// accountant's, computed once per λ (it is the same for every run); each run draws from its own
/// stream, keyed by a word of the caller's, and the replicates train together
/// ([`Task::fit_many`]: one GPU call on a GPU device).
pub struct TaskOracle<'a> {
    pub task: &'a Task,
    pub replicates: usize,
}

impl TaskOracle<'_> {
    fn point(&self, lambda: &[f64]) -> Result<Hyperparameters> {
        let l: [f64; 5] = lambda.try_into().map_err(|_| {
            Error::invalid(
                "lambda",
                format!("{} values", lambda.len()),
                "5 values (epochs, lot_size, learning_rate, noise_multiplier, clip)",
            )
        })?;
        self.task.domain().point(l)
    }

    /// The searched box: Table 1's intervals (the lot size at most the training rows), epochs
    /// and lot size integers.
    pub fn dimensions(&self) -> Result<Vec<crate::pareto::dpareto::Dimension>> {
        let rows = self.task.train_size() as f64;
        let smallest_lot = self.task.domain().lot_size.0;
        if rows < smallest_lot {
            return Err(Error::invalid(
                "training rows",
                format!("{rows} (task {})", self.task.id().name()),
                format!(
                    "at least {} (the smallest lot size searched): give a larger data set",
                    fmt_num(smallest_lot)
                ),
            ));
        }
        self.task
            .domain()
            .intervals()
            .iter()
            .enumerate()
            .map(|(j, (name, (lo, hi)))| {
                let hi = if j == 1 { hi.min(rows) } else { *hi };
                crate::pareto::dpareto::Dimension::new(name, *lo, hi, j < 2)
            })
            .collect()
    }
}

impl crate::pareto::dpareto::Oracle for TaskOracle<'_> {
    fn evaluate(
        &mut self,
        lambda: &[f64],
        rng: &mut dyn RngCore,
    ) -> Result<crate::pareto::dpareto::Observation> {
        if self.replicates == 0 {
            return Err(Error::invalid("replicates", 0, "at least 1 run per point"));
        }
        let h = self.point(lambda)?;
        let epsilon = self.task.epsilon(&h)?;
        // The replicates train together (one GPU call on a GPU device).
        let mut streams: Vec<_> = (0..self.replicates)
            .map(|_| crate::rng::stream(rng.next_u64(), &[]))
            .collect();
        let fits = self.task.fit_many(
            &h,
            streams.iter_mut().map(|r| r as &mut dyn RngCore).collect(),
        )?;
        Ok(crate::pareto::dpareto::Observation {
            epsilon,
            errors: fits.iter().map(|f| 1.0 - f.test_accuracy).collect(),
        })
    }

    fn epsilon(&self, lambda: &[f64]) -> Option<Result<f64>> {
        Some(self.point(lambda).and_then(|h| self.task.epsilon(&h)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Target;
    use crate::rng::stream;
    use rand::Rng;

    /// `n` training and `t` test rows of `data`'s shape: Adult-like 0/1 features (about 14
    /// ones a row) or pixels in [0, 1], labels from the first features.
    fn synthetic(data: TaskData, n: usize, t: usize, seed: u64) -> TrainTest {
        let mut rng = stream(seed, &[]);
        let (d, k) = (data.features(), data.classes());
        let mut part = |rows: usize| {
            let x = Array2::from_shape_fn((rows, d), |_| match data {
                TaskData::Adult => f64::from(u8::from(rng.random::<f64>() < 14.0 / 123.0)),
                TaskData::FashionMnist => rng.random::<f64>(),
            });
            let labels = (0..rows)
                .map(|i| (0..k).find(|&c| x[[i, c]] > 0.5).unwrap_or(0))
                .collect();
            Dataset {
                name: data.name().into(),
                x,
                target: Target::Classes {
                    labels,
                    names: (0..k).map(|c| c.to_string()).collect(),
                },
            }
        };
        TrainTest {
            train: part(n),
            test: part(t),
        }
    }

    #[test]
    fn names_models_optimisers_and_inits_are_the_spec_table() {
        for id in TaskId::ALL {
            assert_eq!(TaskId::parse(id.name()).unwrap(), id);
            let model = id.model().unwrap();
            assert_eq!(model.n_features(), id.data().features());
            assert_eq!(model.n_classes(), id.data().classes());
            assert!(model.network().is_some(), "{}: not batched", id.name());
        }
        let p = |id: TaskId| id.model().unwrap().n_params();
        assert_eq!(p(TaskId::AdultLrSgd), 124);
        assert_eq!(p(TaskId::AdultSvmSgd), 124);
        assert_eq!(p(TaskId::FmnistMlp1Sgd), 785 * 1000 + 1001 * 10);
        assert_eq!(p(TaskId::FmnistMlp2Sgd), 785 * 128 + 129 * 64 + 65 * 10);
        assert_eq!(TaskId::AdultLrAdam.optimizer(), Optimizer::ADAM);
        assert_eq!(TaskId::AdultSvmSgd.optimizer(), Optimizer::Sgd);
        assert_eq!(TaskId::AdultLrSgd.init(), Init::Zeros);
        assert_eq!(TaskId::FmnistMlp1Sgd.init(), Init::XavierNormal);
        let msg = TaskId::parse("mnist-mlp1-sgd").unwrap_err().to_string();
        assert!(
            msg.starts_with("invalid task = mnist-mlp1-sgd") && msg.contains("fmnist-mlp1-sgd"),
            "{msg}"
        );
    }

    #[test]
    fn domains_are_table_1_and_name_what_is_out_of_range() {
        let a = TaskId::AdultLrSgd.domain();
        assert_eq!(a.intervals()[0], ("epochs", (1.0, 64.0)));
        assert_eq!(a.lot_size, (8.0, 512.0));
        assert_eq!(a.learning_rate, (5e-4, 5e-2));
        assert_eq!((a.noise_multiplier, a.clip), ((0.1, 16.0), (0.1, 4.0)));
        let m = TaskId::FmnistMlp2Sgd.domain();
        assert_eq!((m.epochs, m.lot_size), ((1.0, 400.0), (16.0, 4000.0)));
        assert_eq!((m.learning_rate, m.clip), ((1e-3, 0.5), (0.1, 12.0)));
        let ok = [4.0, 256.0, 0.05, 2.0, 1.0];
        assert!(a.point(ok).is_ok());
        for (i, bad) in [
            (0, 0.4),
            (0, 65.0),
            (1, 7.0),
            (1, 600.0),
            (2, 0.06),
            (2, 1e-4),
            (3, 0.05),
            (3, 17.0),
            (4, 4.5),
            (4, f64::NAN),
            (2, f64::INFINITY),
        ] {
            let mut lambda = ok;
            lambda[i] = bad;
            let msg = a.point(lambda).unwrap_err().to_string();
            let name = HYPERPARAMETERS[i];
            assert!(msg.starts_with(&format!("invalid {name} = ")), "{msg}");
            let (lo, hi) = a.intervals()[i].1;
            assert!(
                msg.contains(&format!("[{}, {}]", fmt_num(lo), fmt_num(hi))),
                "{msg}"
            );
        }
        // The mnist box allows what adult's does not.
        assert!(m.point([200.0, 2000.0, 0.3, 2.0, 10.0]).is_ok());
        assert!(a
            .check("momentum", 0.9)
            .unwrap_err()
            .to_string()
            .contains("epochs"));
    }

    #[test]
    fn integer_hyperparameters_are_rounded_to_the_nearest() {
        let a = TaskId::AdultLrSgd.domain();
        let h = a.point([3.5, 255.4, 0.01, 2.0, 1.0]).unwrap();
        assert_eq!((h.epochs, h.lot_size), (4, 255));
        let h = a.point([1.0, 8.49, 0.01, 2.0, 1.0]).unwrap();
        assert_eq!((h.epochs, h.lot_size), (1, 8));
        // The ends are inside: rounding never leaves the box.
        let h = a.point([63.6, 511.5, 5e-2, 16.0, 4.0]).unwrap();
        assert_eq!((h.epochs, h.lot_size), (64, 512));
        assert_eq!(a.point(h.as_point()).unwrap(), h);
    }

    /// ε is the without-replacement accountant's at the data's n, by the spec's conversion:
    /// computed directly here, and spec 001 §6.1's first vector at the faithful n = 30,956.
    #[test]
    fn epsilon_is_the_wor_accountant_at_the_training_size() {
        let direct = |n: usize, h: &Hyperparameters| {
            let sgd = DpSgd::without_replacement(
                n as u64,
                h.lot_size as u64,
                h.noise_multiplier,
                h.epochs,
            )
            .unwrap();
            integer_orders_epsilon(&sgd.rdp(), 1e-5, 4096)
                .unwrap()
                .epsilon
        };
        for id in TaskId::ALL {
            let data = synthetic(id.data(), 900, 50, 1);
            let task = Task::new(id, &data).unwrap();
            assert_eq!(task.train_size(), 900);
            for lambda in [[1.0, 16.0, 0.01, 1.0, 1.0], [10.0, 300.0, 0.01, 0.7, 0.5]] {
                let h = task.hyperparameters(lambda).unwrap();
                let eps = task.epsilon(&h).unwrap();
                assert_eq!(eps, direct(900, &h), "{}", id.name());
                // η and L do not enter ε.
                let other = Hyperparameters {
                    learning_rate: 0.002,
                    clip: 0.3,
                    ..h
                };
                assert_eq!(task.epsilon(&other).unwrap(), eps);
            }
        }
        // A run reports the same ε (one cheap task: the MLPs are slow at the test profile).
        let task = Task::new(TaskId::AdultLrAdam, &synthetic(TaskData::Adult, 900, 50, 1)).unwrap();
        let h = task.hyperparameters([2.0, 64.0, 0.01, 1.5, 1.0]).unwrap();
        let run = task.run(&h, &mut stream(2, &[])).unwrap();
        assert_eq!((run.epsilon, run.delta), (direct(900, &h), TASK_DELTA));
        assert_eq!(run.hyperparameters, h);
        let task = Task::new(
            TaskId::AdultLrSgd,
            &synthetic(TaskData::Adult, 30_956, 10, 2),
        )
        .unwrap();
        let h = task.hyperparameters([10.0, 256.0, 0.01, 1.0, 1.0]).unwrap();
        assert_eq!(format!("{:.3}", task.epsilon(&h).unwrap()), "3.684");
        assert_eq!(task.config(&h).unwrap().steps(30_956).unwrap(), 1210);
    }

    /// Past Table 1's box (a widened domain), a huge learning rate overflows: the run stops,
    /// keeps its last finite parameters and is still scored. (That a later overflow keeps the
    /// parameters of the step before is `learn::dpsgd`'s test.)
    #[test]
    fn a_huge_learning_rate_diverges_and_the_model_is_still_scored() {
        let lr = 1e308;
        for id in [
            TaskId::AdultLrSgd,
            TaskId::AdultSvmSgd,
            TaskId::FmnistMlp2Sgd,
        ] {
            let data = synthetic(id.data(), 300, 100, 3);
            let wide = Domain {
                learning_rate: (1e-4, 1e308),
                ..*id.domain()
            };
            let task = Task::new(id, &data).unwrap();
            // Table 1's box refuses the rate by name.
            let msg = task
                .hyperparameters([2.0, 32.0, lr, 4.0, 4.0])
                .unwrap_err()
                .to_string();
            assert!(msg.starts_with("invalid learning_rate"), "{msg}");
            let task = task.with_domain(wide);
            let h = task.hyperparameters([2.0, 32.0, lr, 4.0, 4.0]).unwrap();
            let fit = task.fit(&h, &mut stream(4, &[])).unwrap();
            assert!(fit.diverged, "{}", id.name());
            // The first step overflows (|η·g| > f64::MAX), so the initial parameters are
            // kept: zeros, or the Xavier draw that starts the run's stream.
            assert_eq!(fit.steps, 1);
            let init = id.init().params(task.model(), &mut stream(4, &[])).unwrap();
            assert_eq!(fit.params, init);
            assert!(
                (0.0..=1.0).contains(&fit.test_accuracy),
                "{}",
                fit.test_accuracy
            );
            let run = task.run(&h, &mut stream(4, &[])).unwrap();
            assert!(run.diverged && run.test_accuracy == fit.test_accuracy);
            // A sane rate on the same data does not diverge.
            let calm = task.hyperparameters([2.0, 32.0, 0.01, 4.0, 4.0]).unwrap();
            assert!(!task.fit(&calm, &mut stream(4, &[])).unwrap().diverged);
        }
    }

    #[test]
    fn data_of_another_shape_or_range_and_lots_above_n_are_refused() {
        let adult_like = synthetic(TaskData::Adult, 50, 10, 5);
        let msg = Task::new(TaskId::FmnistMlp2Sgd, &adult_like)
            .unwrap_err()
            .to_string();
        assert!(
            msg.starts_with("invalid train") && msg.contains("784 features"),
            "{msg}"
        );
        let mut raw = synthetic(TaskData::FashionMnist, 20, 10, 6);
        raw.test.x[[3, 5]] = 255.0;
        let msg = Task::new(TaskId::FmnistMlp1Sgd, &raw)
            .unwrap_err()
            .to_string();
        assert!(
            msg.starts_with("invalid test") && msg.contains("255"),
            "{msg}"
        );
        let task = Task::new(TaskId::AdultLrAdam, &adult_like).unwrap();
        let h = task.hyperparameters([1.0, 64.0, 0.01, 1.0, 1.0]).unwrap();
        for msg in [
            task.epsilon(&h).unwrap_err().to_string(),
            task.fit(&h, &mut stream(1, &[])).unwrap_err().to_string(),
        ] {
            assert!(
                msg.starts_with("invalid lot_size = 64") && msg.contains("n = 50"),
                "{msg}"
            );
        }
        // Hand-built hyperparameters are checked too.
        let bad = Hyperparameters {
            epochs: 0,
            ..task.hyperparameters([1.0, 8.0, 0.01, 1.0, 1.0]).unwrap()
        };
        let msg = task.epsilon(&bad).unwrap_err().to_string();
        assert!(msg.starts_with("invalid epochs = 0"), "{msg}");
        // Fewer training rows than the smallest lot size searched: DPareto's box is empty,
        // and the message names the data size and the task.
        let task = Task::new(TaskId::AdultLrSgd, &synthetic(TaskData::Adult, 5, 10, 7)).unwrap();
        let oracle = TaskOracle {
            task: &task,
            replicates: 1,
        };
        let msg = oracle.dimensions().unwrap_err().to_string();
        assert!(
            msg.starts_with("invalid training rows = 5 (task adult-lr-sgd)")
                && msg.contains("at least 8"),
            "{msg}"
        );
        let msg = TaskData::Adult
            .from_files(&["only-one"])
            .unwrap_err()
            .to_string();
        assert!(msg.starts_with("invalid files = 1 files"), "{msg}");
    }
}
