//! Tuning the learning rate η and the clipping norm L of spec 001's DP-SGD tasks
//! ([`super::dpsgd_tasks`]) with dptune's private tuners (`kind = "dpsgd-task"`).
//!
//! # Space
//!
//! The unit square: u = (u_η, u_L) ↦ η = η_lo·(η_hi/η_lo)^{u_η}, L = L_lo·(L_hi/L_lo)^{u_L},
//! log-scaled inside `learning_rate_range` and `clip_range` (by default the task's whole
//! Table-1 intervals: adult η ∈ [5e-4, 5e-2], L ∈ [0.1, 4]; mnist η ∈ [1e-3, 0.5], L ∈ [0.1,
//! 12]; a narrower range must lie inside them). The epochs T, the lot size m and the noise
//! multiplier σ are fixed by the experiment file (defaults: adult T = 4, m = 256, σ = 2;
//! Fashion-MNIST T = 1, m = 256, σ = 2, sized for two CPU cores), so every run has the same
//! privacy cost, as [`PrivateTraining`] requires.
//!
//! # Privacy of one run
//!
//! Neighbours replace one record of the training part or one record of the test part. A run
//! at u is the task's DP-SGD run at (T, m, η, L, σ) (lots without replacement: the
//! Wang–Balle–Kasiviswanathan curve of T·round(n/m) steps, q = m/n, n the training rows; see
//! [`super::dpsgd_tasks`]) followed by the release of its **test accuracy** plus N(0, (z/t)²),
//! t the test rows: the accuracy is a mean of 1{correct} ∈ [0, 1], so one replaced test
//! record moves it by at most 1/t, and the release is the Gaussian mechanism with sensitivity
//! 1/t, (1/(2z²))-zCDP. The run's RDP curve ([`PrivateTraining::run_event`]) is the sum of
//! the two curves, an upper bound for either kind of neighbour, fixed before any data is seen.
//! This is the pattern of [`super::dp_sgd`], which releases its validation accuracy the same
//! way; here the score is the test accuracy, because spec 001's utility oracle is the test
//! accuracy (the tasks have no validation part), so selection uses the test set and the test
//! set is accounted as private data. z is the `noise` knob that equal-budget mode calibrates
//! (a larger z never weakens the guarantee). A point outside the square trains nothing and
//! releases 0 plus the same noise (a data-independent value); a run that diverges is scored
//! with its last finite parameters ([`crate::learn::OnDivergence::Stop`], a function of the
//! private DP-SGD output alone).
//!
//! # Oracle (reporting only, not private)
//!
//! The utility at u is spec 001's utility oracle: the mean test accuracy of `oracle_runs`
//! runs (default 2), run r drawing from `rng::stream(seed, [0x6470_7374, 0, bits(u_η),
//! bits(u_L), r])` ("dpst"), so it is a deterministic function of (experiment seed, u). The
//! best utility is an *estimate*: the largest utility over `best_samples` points (default 8)
//! drawn uniformly from the square by `rng::stream(seed, [0x6470_7374, 1])`, computed once per
//! (task, seed); a tuner can beat it (negative regret).
//!
//! # Data
//!
//! By default the cached full data ([`TaskData::cached`]: Adult's a1a-sized split with n =
//! 30,956, Fashion-MNIST 60,000 / 10,000; `just data`). `adult = [train, test]` (two UCI-format
//! files) or `fashion_mnist = [train images, train labels, test images, test labels]` (IDX)
//! read other files instead, e.g. the CI subsets in `tests/fixtures/real_data/` (paths relative
//! to the working directory). Data are loaded when the experiment file is read.

use super::dpsgd_tasks::{Domain, Hyperparameters, Interval, Task, TaskData, TaskId, TASK_DELTA};
use super::validation_score::{names, PerKey};
use super::{
    Hyper, Oracle, PartitionedUtility, PerUserLosses, PrivateTraining, Space, Variant, Workload,
    WorkloadSpec,
};
use crate::accounting::{Event, Gaussian};
use crate::data::uniform_below;
use crate::error::{fmt_num, Error, Range, Result};
use crate::params::{Count, OneOrMany};
use crate::rng::stream;
use ndarray::Array2;
use rand::{Rng, RngCore};
use std::collections::hash_map::{Entry, HashMap};
use std::sync::{Arc, OnceLock};

/// Stream tag of the oracle's runs and the best-utility sample ("dpst").
const TAG: u64 = 0x6470_7374;

/// The settings of one tuning problem: a task, its fixed (T, m, σ) and the searched ranges.
#[derive(Clone, Debug, PartialEq)]
pub struct TuningSettings {
    pub epochs: u64,
    pub lot_size: usize,
    pub noise_multiplier: f64,
    /// [η_lo, η_hi], inside the task's Table-1 interval.
    pub learning_rate: Interval,
    /// [L_lo, L_hi], inside the task's Table-1 interval.
    pub clip: Interval,
    /// R: runs averaged by the oracle's utility.
    pub oracle_runs: usize,
    /// Points of the best-utility estimate.
    pub best_samples: usize,
}

impl TuningSettings {
    /// The defaults for `data` (module documentation).
    pub fn defaults(data: TaskData) -> Self {
        let d = data.domain();
        let (epochs, lot_size, noise_multiplier) = match data {
            TaskData::Adult => (4, 256, 2.0),
            TaskData::FashionMnist => (1, 256, 2.0),
        };
        TuningSettings {
            epochs,
            lot_size,
            noise_multiplier,
            learning_rate: d.learning_rate,
            clip: d.clip,
            oracle_runs: 2,
            best_samples: 8,
        }
    }

    /// (η, L) at the unit-square point `u`, or None outside it.
    pub fn at(&self, u: &Hyper) -> Option<(f64, f64)> {
        let inside = |v: f64| (0.0..=1.0).contains(&v);
        match u.as_slice() {
            [a, b] if inside(*a) && inside(*b) => {
                Some((log_scale(self.learning_rate, *a), log_scale(self.clip, *b)))
            }
            _ => None,
        }
    }

    fn hyperparameters(&self, eta: f64, clip: f64) -> Hyperparameters {
        Hyperparameters {
            epochs: self.epochs,
            lot_size: self.lot_size,
            learning_rate: eta,
            noise_multiplier: self.noise_multiplier,
            clip,
        }
    }

    /// Checks the settings against `task`'s box and data (m ≤ n), with errors naming the
    /// parameter.
    pub fn validate(&self, task: &Task) -> Result<()> {
        let domain = task.domain();
        for (name, (lo, hi), (dlo, dhi)) in [
            (
                "learning_rate_range",
                self.learning_rate,
                domain.learning_rate,
            ),
            ("clip_range", self.clip, domain.clip),
        ] {
            if !(lo.is_finite() && hi.is_finite() && dlo <= lo && lo <= hi && hi <= dhi) {
                return Err(Error::invalid(
                    name,
                    format!("[{}, {}]", fmt_num(lo), fmt_num(hi)),
                    format!(
                        "[low, high] with {} <= low <= high <= {} (spec 001 Table 1, {}, {})",
                        fmt_num(dlo),
                        fmt_num(dhi),
                        domain.data,
                        task.id().name()
                    ),
                ));
            }
        }
        if self.oracle_runs == 0 {
            return Err(Error::invalid("oracle_runs", 0, "an integer >= 1"));
        }
        if self.best_samples == 0 {
            return Err(Error::invalid("best_samples", 0, "an integer >= 1"));
        }
        // Both ends of both ranges are valid points, so (T, m, σ) and m ≤ n are checked here.
        task.config(&self.hyperparameters(self.learning_rate.0, self.clip.0))?;
        task.config(&self.hyperparameters(self.learning_rate.1, self.clip.1))?;
        Ok(())
    }
}

/// lo·(hi/lo)^u, exactly lo at u = 0 and hi at u = 1.
fn log_scale((lo, hi): Interval, u: f64) -> f64 {
    if u == 0.0 || lo == hi {
        lo
    } else if u == 1.0 {
        hi
    } else {
        libm::exp(libm::log(lo) + u * (libm::log(hi) - libm::log(lo))).clamp(lo, hi)
    }
}

/// One instance: a task, its settings, the score release at noise multiplier z and the
/// oracle's shared best-utility cache.
pub struct DpsgdTuning {
    name: String,
    task: Arc<Task>,
    settings: TuningSettings,
    space: Space,
    release: Gaussian,
    /// One run: its DP-SGD steps, then the score's release.
    run: Event,
    /// One DP-SGD run alone (what a DP-GIBO evaluation costs: it releases no score).
    training: Event,
    /// The log box: u ↦ (ln η, ln L), the native units of DP-GIBO's lengthscales.
    log_domain: Vec<(f64, f64)>,
    seed: u64,
    best: Arc<PerKey<BestKey, f64>>,
}

/// The best-utility cache key: (task, experiment seed, bits of σ): with σ calibrated per
/// budget and tuner, every σ is its own problem.
pub type BestKey = (TaskId, u64, u64);

impl DpsgdTuning {
    /// The instance for experiment seed `seed` with score noise multiplier `noise` (z > 0).
    pub fn new(
        task: Arc<Task>,
        settings: TuningSettings,
        seed: u64,
        noise: f64,
        best: Arc<PerKey<BestKey, f64>>,
    ) -> Result<Self> {
        settings.validate(&task)?;
        let z = Range::Positive.check("noise", noise)?;
        let t = task.test_size() as f64;
        let release = Gaussian::new(1.0 / t, z / t)?;
        let h = settings.hyperparameters(settings.learning_rate.0, settings.clip.0);
        let sgd = task.dpsgd(&h)?;
        let training = Event::dpsgd(&sgd)?;
        let run = Event::composed(vec![training.clone(), Event::of_gaussian(&release)])?;
        let log_domain = vec![
            (
                libm::log(settings.learning_rate.0),
                libm::log(settings.learning_rate.1),
            ),
            (libm::log(settings.clip.0), libm::log(settings.clip.1)),
        ];
        Ok(DpsgdTuning {
            name: format!("dpsgd-task({})", task.id().name()),
            task,
            settings,
            space: Space::UnitBox { dim: 2 },
            release,
            run,
            training,
            log_domain,
            seed,
            best,
        })
    }

    pub fn task(&self) -> &Task {
        &self.task
    }
    pub fn settings(&self) -> &TuningSettings {
        &self.settings
    }
    pub fn release(&self) -> &Gaussian {
        &self.release
    }

    /// The hyperparameters of the unit-square point `u` (None outside it).
    pub fn hyperparameters(&self, u: &Hyper) -> Option<Hyperparameters> {
        let (eta, clip) = self.settings.at(u)?;
        Some(self.settings.hyperparameters(eta, clip))
    }

    /// The test accuracy of one run at `u` (None outside the square); the privacy-relevant
    /// part of [`PrivateTraining::train`], before the release noise.
    pub fn test_accuracy(&self, u: &Hyper, rng: &mut dyn RngCore) -> Option<f64> {
        let h = self.hyperparameters(u)?;
        self.task.fit(&h, rng).ok().map(|f| f.test_accuracy)
    }
}

impl PrivateTraining for DpsgdTuning {
    fn run_event(&self) -> &Event {
        &self.run
    }
    /// The test accuracy of one run at `h` plus N(0, (z/t)²); 0 plus the same noise outside
    /// the square (every failure of a run depends on public sizes only, never on the data's
    /// values, so it too releases 0 plus noise).
    fn train(&self, h: &Hyper, rng: &mut dyn RngCore) -> f64 {
        let score = self.test_accuracy(h, rng).unwrap_or(0.0);
        score + self.release.noise(rng)
    }
}

/// Propose-test's shard utilities: each training row's shard drawn uniformly from the given
/// stream, a[j][i] the test accuracy of a non-private run ([`Task::fit_shard`]) at candidate j
/// on shard i. One replaced training record moves one shard's utilities (each in [0, 1]); one
/// replaced test record moves every a[j][i] by at most 1/t: the test set is declared private,
/// so the tuner requires t ≥ k and the shard mean has sensitivity 1/k either way.
impl PartitionedUtility for DpsgdTuning {
    fn shard_utilities(
        &self,
        candidates: &[Hyper],
        k: usize,
        rng: &mut dyn RngCore,
    ) -> Result<Vec<Vec<f64>>> {
        let mut shards = vec![Vec::new(); k];
        for r in 0..self.task.train_size() {
            shards[uniform_below(rng, k as u64) as usize].push(r);
        }
        candidates
            .iter()
            .map(|u| {
                let h = self.hyperparameters(u).ok_or_else(|| {
                    Error::invalid("candidate", format!("{u:?}"), "a point of the unit square")
                })?;
                shards
                    .iter()
                    .map(|rows| self.task.fit_shard(&h, rows, rng))
                    .collect()
            })
            .collect()
    }
    fn private_validation_records(&self) -> Option<usize> {
        Some(self.task.test_size())
    }
}

/// DP-GIBO's per-user losses: the users are the test records, and the losses at a point are
/// those of one DP-SGD run there (the run's training draws come from the given stream), so each
/// evaluation costs one run's DP-SGD curve for the training rows
/// ([`PerUserLosses::evaluation_event`]). Native units are (ln η, ln L).
impl PerUserLosses for DpsgdTuning {
    fn n_users(&self) -> usize {
        self.task.test_size()
    }
    fn domain(&self) -> &[(f64, f64)] {
        &self.log_domain
    }
    /// 0 declared: the spread of a run's losses is for the tuner's `noise_sd` to model.
    fn evaluation_sd(&self) -> f64 {
        0.0
    }
    fn user_losses(&self, points: &[Hyper], rng: &mut dyn RngCore) -> Result<Array2<f64>> {
        let n = self.task.test_size();
        let mut out = Array2::zeros((n, points.len()));
        for (j, u) in points.iter().enumerate() {
            let h = self.hyperparameters(u).ok_or_else(|| {
                Error::invalid("point", format!("{u:?}"), "a point of the unit square")
            })?;
            let fit = self.task.fit(&h, rng)?;
            for (i, l) in self.task.test_losses(&fit.params).into_iter().enumerate() {
                out[[i, j]] = l;
            }
        }
        Ok(out)
    }
    fn evaluation_event(&self) -> Option<&Event> {
        Some(&self.training)
    }
}

/// The oracle's utility at `u`: the mean test accuracy of `runs` seeded runs (NaN outside the
/// square or on a failed run).
fn oracle_utility(task: &Task, settings: &TuningSettings, seed: u64, u: &Hyper) -> f64 {
    let Some((eta, clip)) = settings.at(u) else {
        return f64::NAN;
    };
    let h = settings.hyperparameters(eta, clip);
    let mut total = 0.0;
    for r in 0..settings.oracle_runs {
        let mut rng = stream(seed, &[TAG, 0, u[0].to_bits(), u[1].to_bits(), r as u64]);
        match task.fit(&h, &mut rng) {
            Ok(f) => total += f.test_accuracy,
            Err(_) => return f64::NAN,
        }
    }
    total / settings.oracle_runs as f64
}

impl Oracle for DpsgdTuning {
    /// Spec 001's utility oracle: the mean test accuracy of `oracle_runs` seeded runs.
    fn utility(&self, h: &Hyper) -> f64 {
        oracle_utility(&self.task, &self.settings, self.seed, h)
    }
    /// An estimate: the best utility over the seeded sample of `best_samples` points, computed
    /// once per (task, seed) (NaN if it cannot be computed).
    fn best_utility(&self) -> f64 {
        let (task, settings, seed) = (Arc::clone(&self.task), &self.settings, self.seed);
        let key = (task.id(), seed, settings.noise_multiplier.to_bits());
        self.best
            .get_or_build(key, || {
                let mut rng = stream(seed, &[TAG, 1]);
                let points: Vec<Hyper> = (0..settings.best_samples)
                    .map(|_| vec![rng.random::<f64>(), rng.random::<f64>()])
                    .collect();
                Ok(points
                    .iter()
                    .map(|u| oracle_utility(&task, settings, seed, u))
                    .fold(f64::NEG_INFINITY, f64::max))
            })
            .map_or(f64::NAN, |b| *b)
    }
}

impl Workload for DpsgdTuning {
    fn name(&self) -> String {
        self.name.clone()
    }
    fn space(&self) -> &Space {
        &self.space
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
    fn per_user_losses(&self) -> Option<&dyn PerUserLosses> {
        Some(self)
    }
    /// ⊥ is the model at its initial parameters, never trained (drawn from the public stream
    /// `[TAG, 2]` of the experiment seed): its test accuracy, whatever the private data hold.
    fn utility_of_nothing(&self) -> f64 {
        self.task
            .untrained_accuracy(&mut stream(self.seed, &[TAG, 2]))
            .unwrap_or(f64::NAN)
    }
    /// (η, L); the unit-square point itself outside the square (never chosen by a tuner).
    fn coordinates(&self, h: &Hyper) -> Vec<(String, f64)> {
        match self.settings.at(h) {
            Some((eta, clip)) => vec![("eta".into(), eta), ("L".into(), clip)],
            None => h
                .iter()
                .enumerate()
                .map(|(i, v)| (format!("u{}", i + 1), *v))
                .collect(),
        }
    }
}

/// The `dpsgd-task` experiment-file workload: one variant per task.
pub struct DpsgdTuningSpec {
    ids: Vec<TaskId>,
    /// The `[workload]` table, kept to load the tasks when first needed.
    params: Params,
    /// The tasks with their data and settings: loaded when the spec is built if every data set
    /// comes from files, else at first use, so a file that reads the cache can be checked
    /// where the cache is absent (CI); a missing cache then fails the first unit, saying to run
    /// `just data`.
    loaded: OnceLock<Result<Loaded>>,
    noise: Option<f64>,
    best: Arc<PerKey<BestKey, f64>>,
    /// `noise_multiplier = "calibrated"`: the knob equal-budget mode calibrates is DP-SGD's σ,
    /// and the score is released at z = σ (one noise multiplier for every release of a run).
    calibrate_sigma: bool,
}

/// The tasks of a spec with their settings, and where each data set came from.
struct Loaded {
    tasks: Vec<(Arc<Task>, TuningSettings)>,
    sources: Vec<(TaskData, String)>,
}

/// The σ interval of a calibrated run: σ is not searched, so Table 1's box (DPareto's search
/// space) does not bound it; a calibrated σ outside this range is an error.
pub const CALIBRATED_SIGMA: Interval = (1e-3, 1e4);

/// Builds the spec from a `[workload]` table (kind = "dpsgd-task").
pub fn spec(params: &toml::Table) -> Result<Box<dyn WorkloadSpec>> {
    Ok(Box::new(DpsgdTuningSpec::from_params(params)?))
}

/// A `[workload]` table of kind `dpsgd-task`.
#[derive(Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    task: Option<OneOrMany<String>>,
    epochs: Option<f64>,
    lot_size: Option<f64>,
    /// σ, or "calibrated" (set by the experiment's budget).
    noise_multiplier: Option<toml::Value>,
    learning_rate_range: Option<[f64; 2]>,
    clip_range: Option<[f64; 2]>,
    oracle_runs: Option<Count>,
    best_samples: Option<Count>,
    adult: Option<Vec<String>>,
    fashion_mnist: Option<Vec<String>>,
    noise: Option<f64>,
    device: Option<String>,
}

impl Params {
    fn device(&self) -> Result<crate::learn::Device> {
        crate::learn::Device::parse(self.device.as_deref().unwrap_or("cpu"))
    }

    /// The data files of `data`, or None for the cache.
    fn files(&self, data: TaskData) -> Option<&Vec<String>> {
        match data {
            TaskData::Adult => self.adult.as_ref(),
            TaskData::FashionMnist => self.fashion_mnist.as_ref(),
        }
    }
}

/// The fixed σ of `noise_multiplier`: None when absent or "calibrated".
fn fixed_sigma(given: Option<&toml::Value>) -> Result<Option<f64>> {
    match given {
        None => Ok(None),
        Some(toml::Value::String(s)) if s == "calibrated" => Ok(None),
        Some(toml::Value::Float(x)) => Ok(Some(*x)),
        Some(toml::Value::Integer(i)) => Ok(Some(*i as f64)),
        Some(other) => Err(Error::invalid(
            "noise_multiplier",
            other,
            "a number (σ, fixed) or \"calibrated\" (σ set by the [budget])",
        )),
    }
}

/// Loads the data of `ids` (files or the cache) and resolves each task's settings.
fn load(params: &Params, ids: &[TaskId], calibrate_sigma: bool) -> Result<Loaded> {
    let device = params.device()?;
    let mut data: HashMap<TaskData, crate::data::TrainTest> = HashMap::new();
    let mut sources = Vec::new();
    let mut tasks = Vec::new();
    for &id in ids {
        let kind = id.data();
        let loaded = match data.entry(kind) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => {
                let (loaded, source) = match params.files(kind) {
                    Some(files) => (kind.from_files(files)?, files.join(", ")),
                    None => (kind.cached()?, "cache".to_string()),
                };
                sources.push((kind, source));
                e.insert(loaded)
            }
        };
        let mut task = Task::new(id, loaded)?.with_device(device);
        if calibrate_sigma {
            let domain = Domain {
                noise_multiplier: CALIBRATED_SIGMA,
                ..*task.domain()
            };
            task = task.with_domain(domain);
        }
        let domain = task.domain();
        let defaults = TuningSettings::defaults(kind);
        let settings = TuningSettings {
            epochs: match params.epochs {
                Some(t) => domain.check("epochs", t)?.round() as u64,
                None => defaults.epochs,
            },
            lot_size: match params.lot_size {
                Some(m) => domain.check("lot_size", m)?.round() as usize,
                None => defaults.lot_size.min(task.train_size()),
            },
            noise_multiplier: match fixed_sigma(params.noise_multiplier.as_ref())? {
                Some(s) => domain.check("noise_multiplier", s)?,
                None => defaults.noise_multiplier,
            },
            learning_rate: params
                .learning_rate_range
                .map_or(defaults.learning_rate, |[a, b]| (a, b)),
            clip: params.clip_range.map_or(defaults.clip, |[a, b]| (a, b)),
            oracle_runs: match params.oracle_runs {
                Some(r) => r.within("oracle_runs", 1, 1000, "runs per utility")? as usize,
                None => defaults.oracle_runs,
            },
            best_samples: match params.best_samples {
                Some(r) => r.within("best_samples", 1, 100_000, "oracle points")? as usize,
                None => defaults.best_samples,
            },
        };
        settings.validate(&task)?;
        tasks.push((Arc::new(task), settings));
    }
    Ok(Loaded { tasks, sources })
}

impl DpsgdTuningSpec {
    /// Parameters: `task` (a task name or a list of them; default `adult-lr-sgd`), `epochs`,
    /// `lot_size`, `noise_multiplier` (the fixed T, m, σ; per-data defaults), and the searched
    /// `learning_rate_range`, `clip_range` (default the Table-1 intervals), `oracle_runs` (2),
    /// `best_samples` (8), `adult` / `fashion_mnist` (data files instead of the cache) and
    /// `noise` (the score noise multiplier z when no budget calibrates it) and `device` (`cpu`,
    /// `cuda` or `auto`: where the runs train; [`crate::learn::Device`]).
    pub fn from_params(params: &toml::Table) -> Result<Self> {
        let p: Params = super::read("dpsgd-task", params)?;
        // Checked now; used when the tasks load.
        p.device()?;
        let ids = names("task", p.task.clone(), &["adult-lr-sgd"])?
            .iter()
            .map(|name| TaskId::parse(name))
            .collect::<Result<Vec<_>>>()?;
        let noise = p
            .noise
            .map(|z| Range::Positive.check("noise", z))
            .transpose()?;
        // `noise_multiplier = "calibrated"` hands σ to equal-budget mode; a number fixes it.
        let calibrate_sigma =
            fixed_sigma(p.noise_multiplier.as_ref())?.is_none() && p.noise_multiplier.is_some();
        if calibrate_sigma && noise.is_some() {
            return Err(Error::invalid(
                "noise",
                "given with noise_multiplier = \"calibrated\"",
                "no `noise`: the score is released at z = the calibrated σ",
            ));
        }
        let spec = DpsgdTuningSpec {
            ids,
            params: p,
            loaded: OnceLock::new(),
            noise,
            best: Arc::new(PerKey::default()),
            calibrate_sigma,
        };
        if spec
            .ids
            .iter()
            .all(|id| spec.params.files(id.data()).is_some())
        {
            spec.loaded()?;
        }
        Ok(spec)
    }

    /// The tasks, loaded on first call ([`DpsgdTuningSpec::loaded`] field).
    fn loaded(&self) -> Result<&Loaded> {
        self.loaded
            .get_or_init(|| load(&self.params, &self.ids, self.calibrate_sigma))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The instance of `variant` (a task) for experiment seed `seed` at score noise `noise`.
    pub fn workload(&self, variant: usize, seed: u64, noise: f64) -> Result<DpsgdTuning> {
        let tasks = &self.loaded()?.tasks;
        let (task, settings) = tasks
            .get(variant)
            .ok_or_else(|| Error::invalid("variant", variant, format!("below {}", tasks.len())))?;
        let mut settings = settings.clone();
        if self.calibrate_sigma {
            settings.noise_multiplier = task.domain().check("noise_multiplier", noise)?;
        }
        DpsgdTuning::new(
            Arc::clone(task),
            settings,
            seed,
            noise,
            Arc::clone(&self.best),
        )
    }
}

impl WorkloadSpec for DpsgdTuningSpec {
    fn kind(&self) -> &'static str {
        "dpsgd-task"
    }
    fn regret_unavailable(&self) -> Option<String> {
        self.calibrate_sigma.then(|| {
            "the best utility depends on DP-SGD's noise multiplier σ, which equal budgets \
             calibrate per tuner, so no one reference is common to the tuners at a budget"
                .to_string()
        })
    }
    fn params(&self) -> String {
        let loaded = match self.loaded() {
            Ok(l) => l,
            Err(e) => {
                let names: Vec<&str> = self.ids.iter().map(|id| id.name()).collect();
                return format!("{}; data not loaded: {e}", names.join(", "));
            }
        };
        let tasks: Vec<String> = loaded
            .tasks
            .iter()
            .map(|(t, s)| {
                format!(
                    "{} (n={}, test={}, T={}, m={}, sigma={}, eta in [{}, {}], L in [{}, {}] log-scaled)",
                    t.id().name(),
                    t.train_size(),
                    t.test_size(),
                    s.epochs,
                    s.lot_size,
                    if self.calibrate_sigma {
                        "calibrated".to_string()
                    } else {
                        fmt_num(s.noise_multiplier)
                    },
                    fmt_num(s.learning_rate.0),
                    fmt_num(s.learning_rate.1),
                    fmt_num(s.clip.0),
                    fmt_num(s.clip.1),
                )
            })
            .collect();
        let sources: Vec<String> = loaded
            .sources
            .iter()
            .map(|(d, s)| format!("{}: {s}", d.name()))
            .collect();
        let (runs, samples) = loaded
            .tasks
            .first()
            .map_or((0, 0), |(_, s)| (s.oracle_runs, s.best_samples));
        format!(
            "{}; data {}; delta={TASK_DELTA} (DP-SGD, without replacement); score=test \
             accuracy + N(0, (z/test)^2){}; oracle_runs={runs}, best_samples={samples}",
            tasks.join("; "),
            sources.join("; "),
            if self.calibrate_sigma {
                " with z = sigma"
            } else {
                ""
            },
        )
    }
    fn variants(&self) -> Vec<Variant> {
        self.ids
            .iter()
            .map(|id| Variant {
                label: id.name().to_string(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounting::DpSgd;
    use crate::data::{Dataset, Target, TrainTest};
    use ndarray::Array2;

    /// An Adult-shaped task on `n` / `t` synthetic rows: about 14 ones a row, labels from the
    /// first feature (learnable).
    fn task(n: usize, t: usize) -> Arc<Task> {
        let mut rng = stream(9, &[]);
        let mut part = |rows: usize| {
            let x = Array2::from_shape_fn((rows, 123), |_| {
                f64::from(u8::from(rng.random::<f64>() < 14.0 / 123.0))
            });
            Dataset {
                name: "adult-like".into(),
                target: Target::Classes {
                    labels: (0..rows).map(|i| usize::from(x[[i, 0]] > 0.5)).collect(),
                    names: vec!["0".into(), "1".into()],
                },
                x,
            }
        };
        let data = TrainTest {
            train: part(n),
            test: part(t),
        };
        Arc::new(Task::new(TaskId::AdultLrSgd, &data).unwrap())
    }

    fn settings() -> TuningSettings {
        TuningSettings {
            epochs: 2,
            lot_size: 50,
            noise_multiplier: 1.5,
            oracle_runs: 2,
            best_samples: 3,
            ..TuningSettings::defaults(TaskData::Adult)
        }
    }

    fn workload(noise: f64) -> DpsgdTuning {
        DpsgdTuning::new(task(400, 80), settings(), 7, noise, Arc::default()).unwrap()
    }

    /// One run's curve is the WOR DP-SGD curve of (T, m, σ) at n plus the score release's
    /// Gaussian, ρ = 1/(2z²), at every order.
    #[test]
    fn run_event_is_dp_sgd_without_replacement_plus_the_score_release() {
        let w = workload(3.0);
        let sgd = DpSgd::without_replacement(400, 50, 1.5, 2).unwrap().rdp();
        for order in [1.5, 2.0, 3.0, 8.0, 64.0] {
            let want = sgd.eval(order).unwrap() + order / (2.0 * 3.0 * 3.0);
            let got = crate::workloads::run_curve(&w).eval(order).unwrap();
            assert!(
                (got - want).abs() <= 1e-12 * want,
                "order {order}: {got} vs {want}"
            );
        }
        // A larger z never weakens it.
        let quieter = workload(6.0);
        for order in [2.0, 16.0] {
            assert!(
                crate::workloads::run_curve(&quieter).eval(order).unwrap()
                    < crate::workloads::run_curve(&w).eval(order).unwrap()
            );
        }
        assert_eq!(w.release().sensitivity(), 1.0 / 80.0);
        assert_eq!(w.release().sigma(), 3.0 / 80.0);
    }

    #[test]
    fn the_square_maps_log_scaled_onto_the_ranges() {
        let w = workload(1.0);
        let (lr, clip) = (w.settings().learning_rate, w.settings().clip);
        assert_eq!((lr, clip), ((5e-4, 5e-2), (0.1, 4.0)));
        let h = w.hyperparameters(&vec![0.0, 1.0]).unwrap();
        assert_eq!((h.learning_rate, h.clip), (5e-4, 4.0));
        assert_eq!((h.epochs, h.lot_size, h.noise_multiplier), (2, 50, 1.5));
        let mid = w.hyperparameters(&vec![0.5, 0.5]).unwrap();
        assert!((mid.learning_rate - (5e-4f64 * 5e-2).sqrt()).abs() < 1e-15);
        assert!((mid.clip - 0.4f64.sqrt()).abs() < 1e-15);
        for off in [
            vec![-0.1, 0.5],
            vec![0.5, 1.1],
            vec![0.5],
            vec![0.5, f64::NAN],
        ] {
            assert!(w.hyperparameters(&off).is_none(), "{off:?}");
            assert!(w.oracle().utility(&off).is_nan());
        }
    }

    /// The release is the run's test accuracy plus noise drawn after the run from the same
    /// stream; outside the square, 0 plus the same noise.
    #[test]
    fn the_released_score_is_the_test_accuracy_plus_gaussian_noise() {
        let w = workload(2.0);
        let u = vec![0.9, 0.6];
        let mut a = stream(3, &[]);
        let accuracy = w.test_accuracy(&u, &mut a).unwrap();
        let noise = w.release().noise(&mut a);
        assert_eq!(w.train(&u, &mut stream(3, &[])), accuracy + noise);
        assert!(accuracy > 0.6, "{accuracy}");
        let mut b = stream(3, &[]);
        let off = w.train(&vec![2.0, 0.5], &mut b);
        assert_eq!(off, w.release().noise(&mut stream(3, &[])));
        // Spread of the noise alone: sd z/t.
        let mut rng = stream(4, &[]);
        let xs: Vec<f64> = (0..4000)
            .map(|_| w.train(&vec![-1.0, 0.0], &mut rng))
            .collect();
        let mean = xs.iter().sum::<f64>() / 4000.0;
        let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 3999.0).sqrt();
        assert!(mean.abs() < 5.0 * (2.0 / 80.0) / 4000f64.sqrt(), "{mean}");
        assert!((sd / (2.0 / 80.0) - 1.0).abs() < 0.06, "{sd}");
    }

    /// The oracle is deterministic per (seed, point); its best utility is the largest over its
    /// seeded points, computed once and shared by every instance.
    #[test]
    fn the_oracle_is_seeded_and_its_best_is_the_sample_maximum() {
        let best = Arc::new(PerKey::default());
        let t = task(400, 80);
        let w = DpsgdTuning::new(Arc::clone(&t), settings(), 7, 1.0, Arc::clone(&best)).unwrap();
        let u = vec![0.8, 0.3];
        let a = w.oracle().utility(&u);
        assert_eq!(a, w.oracle().utility(&u));
        assert!((0.0..=1.0).contains(&a));
        let mut rng = stream(7, &[TAG, 1]);
        let points: Vec<Hyper> = (0..3)
            .map(|_| vec![rng.random::<f64>(), rng.random::<f64>()])
            .collect();
        let max = points
            .iter()
            .map(|p| w.oracle().utility(p))
            .fold(f64::NEG_INFINITY, f64::max);
        assert_eq!(w.oracle().best_utility(), max);
        // The mean of R = 2 runs, each from its own stream.
        let h = w.hyperparameters(&u).unwrap();
        let run = |r: u64| {
            t.fit(
                &h,
                &mut stream(7, &[TAG, 0, u[0].to_bits(), u[1].to_bits(), r]),
            )
            .unwrap()
            .test_accuracy
        };
        assert_eq!(a, (run(0) + run(1)) / 2.0);
    }

    #[test]
    fn settings_outside_the_domain_or_the_data_are_named() {
        let t = task(100, 20);
        let bad = |s: TuningSettings| {
            DpsgdTuning::new(Arc::clone(&t), s, 1, 1.0, Arc::default())
                .err()
                .unwrap()
                .to_string()
        };
        let msg = bad(TuningSettings {
            learning_rate: (1e-4, 1e-2),
            ..settings()
        });
        assert!(
            msg.starts_with("invalid learning_rate_range = [0.0001, 0.01]"),
            "{msg}"
        );
        assert!(
            msg.contains("0.0005 <= low <= high <= 0.05 (spec 001 Table 1, adult"),
            "{msg}"
        );
        let msg = bad(TuningSettings {
            clip: (2.0, 1.0),
            ..settings()
        });
        assert!(msg.starts_with("invalid clip_range"), "{msg}");
        let msg = bad(TuningSettings {
            lot_size: 200,
            ..settings()
        });
        assert!(
            msg.starts_with("invalid lot_size = 200") && msg.contains("n = 100"),
            "{msg}"
        );
        let msg = bad(TuningSettings {
            noise_multiplier: 20.0,
            ..settings()
        });
        assert!(msg.starts_with("invalid noise_multiplier = 20"), "{msg}");
        let msg = bad(TuningSettings {
            oracle_runs: 0,
            ..settings()
        });
        assert!(msg.starts_with("invalid oracle_runs = 0"), "{msg}");
        let msg = DpsgdTuning::new(Arc::clone(&t), settings(), 1, 0.0, Arc::default())
            .err()
            .unwrap()
            .to_string();
        assert!(msg.starts_with("invalid noise = 0"), "{msg}");
    }

    /// With σ calibrated per tuner the best utility is per tuner, so reports give no regret;
    /// with σ fixed it is one reference for every tuner.
    #[test]
    fn regret_has_a_common_reference_only_with_a_fixed_sigma() {
        let spec_with = |sigma: &str| {
            let text = format!(
                "task = \"adult-lr-sgd\"\nnoise_multiplier = {sigma}\nadult = \
                 [\"tests/fixtures/real_data/adult-sample.data\", \
                 \"tests/fixtures/real_data/adult-sample.test\"]"
            );
            spec(&toml::from_str::<toml::Table>(&text).unwrap()).unwrap()
        };
        let why = spec_with("\"calibrated\"").regret_unavailable().unwrap();
        assert!(why.contains("calibrate per tuner"), "{why}");
        assert_eq!(spec_with("2").regret_unavailable(), None);
    }
}
