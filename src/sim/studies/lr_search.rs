//! Spec 000 Figure 7, on CPU-sized data (`kind = "lr-search"`): a DP-SGD learning-rate search
//! by repeat-and-select. As in the released code (spec 000 §6 Fig. 7) this is a simulation
//! over a pool, not re-training: first a pool of private runs (`runs_per_rate` DP-SGD runs at
//! each of `rates` log-spaced learning rates, each releasing its noisy validation accuracy);
//! then, for each distribution of the number of runs K and each total budget ε, the largest
//! mean E[K] whose repeat-and-select guarantee over the run's RDP curve meets (ε, δ), and
//! `searches` searches that draw K, pick K pool runs at uniformly drawn learning rates, and keep
//! the one with the best released score. Reported: its test accuracy.
//!
//! Files: `pool.parquet` (one row per pool run), `searches.parquet` (one row per search) and
//! `summary.parquet` (one row per distribution and budget, over which the table is declared).

use super::StudyKind;
use crate::accounting::selection::bounds::{repeat_select, Base};
use crate::accounting::selection::calibrate::largest_mean;
use crate::accounting::selection::count::CountFamily;
use crate::accounting::{rdp_events, Accountant, Orders};
use crate::data;
use crate::error::{fmt_num, Error, Range, Result};
use crate::learn::Device;
use crate::numeric::stats::mean_interval;
use crate::params::{Count, OneOrMany};
use crate::rng::stream;
use crate::sim::fields::{fnv1a, Fields};
use crate::sim::report::{select, Key};
use crate::sim::study::Study;
use crate::sim::table::{finite, Table, Values};
use crate::workloads::dp_sgd::{Architecture, DpSgdSettings, DpSgdTask};
use crate::workloads::PrivateTraining;
use rand::Rng;
use rand_distr::Distribution;
use std::path::Path;

pub const KIND: StudyKind = StudyKind {
    source: file!(),
    name: "lr-search",
    about: "spec 000 Figure 7 style: DP-SGD learning-rate search by repeat-and-select over a pool",
    parse: |f| Ok(Box::new(parse(f)?)),
};

const POOL_STREAM: u64 = 0x706f_6f6c;
const SEARCH_STREAM: u64 = 0x7365_6172;
/// The stream of the untrained model a K = 0 search outputs ("untr").
const UNTRAINED_STREAM: u64 = 0x756e_7472;

/// A `lr-search` file.
#[derive(Clone, Debug, PartialEq)]
pub struct LrSearch {
    pub seed: u64,
    /// A built-in data set ([`data::BUILTIN`]) or `fashion-mnist`: the cached training part
    /// (60,000 images), or the two IDX files of `fashion_mnist = [images, labels]`.
    pub data: String,
    pub fashion_mnist: Option<[String; 2]>,
    pub model: Architecture,
    pub validation: f64,
    pub test: f64,
    pub settings: DpSgdSettings,
    /// [lowest, highest] learning rate and the number of log-spaced rates.
    pub rates: ([f64; 2], usize),
    pub runs_per_rate: u64,
    pub distributions: Vec<CountFamily>,
    pub epsilons: Vec<f64>,
    pub delta: f64,
    pub searches: u64,
    /// The Rényi orders of the repeat-and-select bound (default `dp-accounting`'s grid: the
    /// DP-SGD curve is costly to evaluate off a grid, and the grid bound is an upper bound).
    pub orders: Orders,
}

impl LrSearch {
    pub fn learning_rates(&self) -> Vec<f64> {
        let ([lo, hi], n) = self.rates;
        if n == 1 {
            return vec![lo];
        }
        (0..n)
            .map(|i| lo * libm::pow(hi / lo, i as f64 / (n - 1) as f64))
            .collect()
    }

    /// The task (split, model, DP-SGD) every pool run uses.
    /// Whether a learning rate's runs are one unit (trained together on a GPU): decided by
    /// the file's `device`, not by the machine, so a resumed run has the same units anywhere.
    fn batched(&self) -> bool {
        self.settings.device != Device::Cpu
    }

    /// The data set the task splits.
    fn dataset(&self) -> Result<data::Dataset> {
        match (self.data.as_str(), &self.fashion_mnist) {
            ("fashion-mnist", Some([images, labels])) => {
                data::load_fashion_mnist(Path::new(images), Path::new(labels))
            }
            ("fashion-mnist", None) => Ok(data::fashion_mnist()?.train),
            (_, Some(_)) => Err(Error::invalid(
                "fashion_mnist",
                "given",
                "only with data = \"fashion-mnist\"",
            )),
            (name, None) => data::builtin(name),
        }
    }

    pub fn task(&self) -> Result<DpSgdTask> {
        DpSgdTask::new(
            &self.dataset()?,
            (self.validation, self.test),
            self.seed,
            &self.model,
            self.settings.clone(),
        )
    }
}

/// A `lr-search` experiment file's parameters.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    seed: Option<u64>,
    data: Option<String>,
    /// Two IDX files [train images, train labels] instead of the cache.
    fashion_mnist: Option<[String; 2]>,
    model: Option<String>,
    validation: Option<f64>,
    test: Option<f64>,
    batch_size: Option<Count>,
    epochs: Option<Count>,
    clip: Option<f64>,
    noise_multiplier: Option<f64>,
    score_noise: Option<f64>,
    learning_rates: Option<[f64; 2]>,
    rates: Option<Count>,
    runs_per_rate: Option<Count>,
    distributions: Option<OneOrMany<String>>,
    epsilons: Option<OneOrMany<f64>>,
    delta: Option<f64>,
    searches: Option<Count>,
    orders: Option<String>,
    device: Option<String>,
}

/// Parses a `lr-search` file.
fn parse(f: &Fields) -> Result<LrSearch> {
    let p: Params = f.read("a `lr-search` experiment", &[])?;
    let integer = |key: &'static str, given: Option<Count>, what: &str| -> Result<u64> {
        f.count(key, given.ok_or_else(|| f.missing(key, what))?, 1)
    };
    let number = |key: &'static str, given: Option<f64>, range: Range, what: &str| {
        f.in_range(key, given.ok_or_else(|| f.missing(key, what))?, range)
    };
    let rates = f.interval(
        "learning_rates",
        p.learning_rates
            .ok_or_else(|| f.missing("learning_rates", "[lowest, highest]"))?,
    )?;
    if rates[0] <= 0.0 {
        return Err(f.bad("learning_rates", "positive learning rates"));
    }
    let s = LrSearch {
        seed: p.seed.unwrap_or(0),
        data: p.data.unwrap_or_else(|| "digits".to_string()),
        fashion_mnist: p.fashion_mnist,
        model: Architecture::parse(p.model.as_deref().unwrap_or("logistic"))
            .map_err(|e| f.wrap(e))?,
        validation: f.in_range("validation", p.validation.unwrap_or(0.2), Range::OpenUnit)?,
        test: f.in_range("test", p.test.unwrap_or(0.2), Range::OpenUnit)?,
        settings: DpSgdSettings {
            batch_size: integer("batch_size", p.batch_size, "the expected batch size")? as usize,
            epochs: integer("epochs", p.epochs, "the number of epochs")?,
            clip: number("clip", p.clip, Range::Positive, "the clipping norm C")?,
            noise_multiplier: number(
                "noise_multiplier",
                p.noise_multiplier,
                Range::Positive,
                "DP-SGD's σ",
            )?,
            score_noise: number(
                "score_noise",
                p.score_noise,
                Range::Positive,
                "z: the validation accuracy is released with noise sd z/m",
            )?,
            device: Device::parse(p.device.as_deref().unwrap_or("cpu")).map_err(|e| f.wrap(e))?,
        },
        rates: (
            rates,
            integer("rates", p.rates, "the number of learning rates")? as usize,
        ),
        runs_per_rate: integer(
            "runs_per_rate",
            p.runs_per_rate,
            "pool runs per learning rate",
        )?,
        distributions: p
            .distributions
            .ok_or_else(|| f.missing("distributions", "a non-empty list of strings"))?
            .into_vec()
            .iter()
            .map(|d| CountFamily::parse(d).map_err(|e| f.wrap(e)))
            .collect::<Result<Vec<_>>>()?,
        epsilons: f.numbers_in("epsilons", p.epsilons, Range::Positive)?,
        delta: number(
            "delta",
            p.delta,
            Range::OpenUnit,
            "δ of the total guarantee",
        )?,
        searches: integer(
            "searches",
            p.searches,
            "resampled searches per (distribution, ε)",
        )?,
        orders: Orders::parse(p.orders.as_deref().unwrap_or("dp-accounting"))
            .map_err(|e| f.wrap(e))?,
    };
    // The data set and the split are checked now, not when the first unit runs, except the
    // cached Fashion-MNIST (a file that reads it can be checked where the cache is absent).
    if !(s.data == "fashion-mnist" && s.fashion_mnist.is_none()) {
        s.task().map_err(|e| f.wrap(e))?;
    }
    Ok(s)
}

/// One pool run: a row of `pool.parquet`.
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
struct PoolRun {
    #[serde(rename = "rate_index")]
    rate: usize,
    run: u64,
    learning_rate: f64,
    #[serde(rename = "validation_accuracy")]
    validation: f64,
    #[serde(rename = "released_score")]
    released: f64,
    #[serde(rename = "test_accuracy")]
    test: f64,
}

/// The pool's jobs in canonical order: (rate index, run).
fn pool_jobs(s: &LrSearch) -> Vec<(usize, u64)> {
    (0..s.learning_rates().len())
        .flat_map(|r| (0..s.runs_per_rate).map(move |k| (r, k)))
        .collect()
}

/// One pool run (one unit of the runner).
fn pool_run(s: &LrSearch, task: &DpSgdTask, rate: usize, run: u64) -> Result<PoolRun> {
    let rates = s.learning_rates();
    let mut rng = stream(s.seed, &[POOL_STREAM, rate as u64, run]);
    let r = task.run(rates[rate], &mut rng)?;
    Ok(PoolRun {
        rate,
        run,
        learning_rate: rates[rate],
        validation: r.validation_accuracy,
        released: r.released,
        test: r.test_accuracy,
    })
}

/// The pool read back from its merged table.
fn pool_of(t: &Table) -> Result<Vec<PoolRun>> {
    t.rows().map_err(|e| {
        Error::Infeasible(format!(
            "a pool run has a missing value: it cannot be searched ({e})"
        ))
    })
}

/// The searches over the pool: every (distribution, ε) × `searches` trials.
fn searches(experiment: &str, s: &LrSearch, task: &DpSgdTask, runs: &[PoolRun]) -> Result<Table> {
    let accountant = Accountant::new(s.orders.clone(), Default::default());
    let base = Base::symmetric(rdp_events::curve(task.run_event(), &accountant)?);
    // Pool runs by released score, best first: the best of K uniform draws (with replacement)
    // is the draw of smallest rank, sampled exactly by inversion, so a search costs O(pool)
    // whatever K is (heavy-tailed K reaches millions).
    let mut ranked: Vec<&PoolRun> = runs.iter().collect();
    ranked.sort_by(|a, b| b.released.total_cmp(&a.released));
    // K = 0 tries nothing, so it outputs nothing learned from the data (⊥): the model at its
    // initial parameters, never trained, drawn once from a public stream.
    let untrained_test = task.untrained_test_accuracy(&mut stream(s.seed, &[UNTRAINED_STREAM]))?;
    let mut rows = Vec::new();
    for &family in &s.distributions {
        for &eps in &s.epsilons {
            let calibrated = largest_mean(&base, family, None, eps, s.delta, &s.orders);
            let Ok(c) = calibrated else {
                // Even one run costs more than ε: no search is possible at this budget.
                rows.push(SearchRow::infeasible(family, eps));
                continue;
            };
            let law = family.with_mean(c.value, None)?;
            // spec 000 §6's second axis: Theorem 2's RDP bound at its best order, unconverted
            // (the released code's "privacy budget").
            let accountant = Accountant::new(s.orders.clone(), Default::default());
            let min_rdp = accountant
                .min_rdp(&repeat_select(&base, &law, &s.orders)?)?
                .0;
            let key = fnv1a(format!("{} {eps}", family.name()).as_bytes());
            for trial in 0..s.searches {
                let mut rng = stream(s.seed, &[SEARCH_STREAM, key, trial]);
                let k = law.sample(&mut rng);
                // The chosen learning rate (none for K = 0) and the output's test accuracy.
                let (learning_rate, test) = match k {
                    0 => (None, untrained_test),
                    k => {
                        let run = ranked[best_rank(ranked.len(), k, rng.random())];
                        (Some(run.learning_rate), run.test)
                    }
                };
                rows.push(SearchRow {
                    distribution: family.name(),
                    target_epsilon: finite(eps),
                    mean_k: finite(c.value),
                    epsilon: finite(c.bound.epsilon),
                    min_rdp_epsilon: finite(min_rdp),
                    trial,
                    k,
                    learning_rate: learning_rate.and_then(finite),
                    test_accuracy: finite(test),
                    fallback: k == 0,
                });
            }
        }
    }
    Table::from_experiment_rows(experiment, &rows)
}

/// The smallest rank among `k` ≥ 1 uniform draws from `n` ranks, by inversion of
/// P(min ≤ j) = 1 − (1 − (j + 1)/n)^k at `u` ∈ [0, 1).
fn best_rank(n: usize, k: u64, u: f64) -> usize {
    let k = k as f64;
    (0..n)
        .find(|&j| 1.0 - libm::pow(1.0 - (j + 1) as f64 / n as f64, k) > u)
        .unwrap_or(n - 1)
}

/// One search's row of `searches.parquet`.
#[derive(serde::Serialize)]
struct SearchRow {
    distribution: String,
    target_epsilon: Option<f64>,
    mean_k: Option<f64>,
    epsilon: Option<f64>,
    /// min over orders λ > 1 of the search's RDP bound ε(λ) (no δ: spec 000 §6's second axis).
    min_rdp_epsilon: Option<f64>,
    trial: u64,
    k: u64,
    learning_rate: Option<f64>,
    test_accuracy: Option<f64>,
    fallback: bool,
}

impl SearchRow {
    /// A budget below one run's cost: one row with no mean and no accuracy.
    fn infeasible(family: CountFamily, target: f64) -> SearchRow {
        SearchRow {
            distribution: family.name(),
            target_epsilon: finite(target),
            mean_k: None,
            epsilon: None,
            min_rdp_epsilon: None,
            trial: 0,
            k: 0,
            learning_rate: None,
            test_accuracy: None,
            fallback: true,
        }
    }
}

/// `summary.parquet`, derived from the searches: one row per (distribution, target ε), what
/// the declared table shows: E[K] and its ε (none where one run costs more than the budget),
/// the chosen run's mean test accuracy with the half-width of its 95% Student-t interval over
/// the searches, the share of searches with K = 0, and the sizes of the task's split.
fn summary(s: &LrSearch, searches: &Table, (n, m, t): (usize, usize, usize)) -> Result<Table> {
    let (acc, mean_k, eps, fallback) = (
        searches.f64("test_accuracy")?,
        searches.f64("mean_k")?,
        searches.f64("epsilon")?,
        searches.bool("fallback")?,
    );
    let (mut dist, mut target, mut k, mut e) = (vec![], vec![], vec![], vec![]);
    let (mut accuracy, mut ci, mut rate) = (vec![], vec![], vec![]);
    for family in &s.distributions {
        for &budget in &s.epsilons {
            let r = select(
                searches,
                &[
                    ("distribution", Key::Str(family.name())),
                    ("target_epsilon", Key::Num(budget)),
                ],
            )?;
            let a: Vec<f64> = r.iter().filter_map(|&i| acc[i]).collect();
            let Some(&first) = r.first() else { continue };
            dist.push(family.name());
            target.push(Some(budget));
            let (mean, half) = match a.is_empty() {
                true => (None, None),
                false => {
                    let (mean, half) = mean_interval(&a);
                    (Some(mean), half)
                }
            };
            let feasible = mean.is_some();
            k.push(mean_k[first].filter(|_| feasible));
            e.push(eps[first].filter(|_| feasible));
            accuracy.push(mean);
            ci.push(half);
            let fb = r.iter().filter(|&&i| fallback[i]).count() as f64 / r.len() as f64;
            rate.push(Some(fb).filter(|_| feasible));
        }
    }
    let rows = dist.len();
    let size = |x: usize| Values::U64(vec![x as u64; rows]);
    Ok(Table::default()
        .with("distribution", Values::Str(dist))
        .with("target_epsilon", Values::F64(target))
        .with("mean_k", Values::F64(k))
        .with("epsilon", Values::F64(e))
        .with("test_accuracy", Values::F64(accuracy))
        .with("test_accuracy_ci", Values::F64(ci))
        .with("fallback_rate", Values::F64(rate))
        .with("train", size(n))
        .with("validation", size(m))
        .with("test", size(t)))
}

/// One unit per pool run (a DP-SGD training) on the CPU; with `device = "cuda"` or `"auto"`
/// one unit per learning rate, whose runs train together (one GPU call). Either way a run
/// draws from its own stream, so the pool is the same runs in the same order. The searches are
/// derived from the merged pool.
impl Study for LrSearch {
    fn units(&self) -> Vec<String> {
        let rates = self.learning_rates();
        if self.batched() {
            return (0..rates.len())
                .map(|r| {
                    format!(
                        "rate {r} ({}) runs 0-{}",
                        fmt_num(rates[r]),
                        self.runs_per_rate.saturating_sub(1)
                    )
                })
                .collect();
        }
        pool_jobs(self)
            .into_iter()
            .map(|(r, k)| format!("rate {r} ({}) run {k}", fmt_num(rates[r])))
            .collect()
    }

    fn run_unit(&self, experiment: &str, i: usize) -> Result<Table> {
        let task = self.task()?;
        if self.batched() {
            let rates = self.learning_rates();
            let mut streams: Vec<_> = (0..self.runs_per_rate)
                .map(|k| stream(self.seed, &[POOL_STREAM, i as u64, k]))
                .collect();
            let results = task.run_many(rates[i], &mut streams)?;
            let runs: Vec<PoolRun> = results
                .into_iter()
                .enumerate()
                .map(|(k, r)| PoolRun {
                    rate: i,
                    run: k as u64,
                    learning_rate: rates[i],
                    validation: r.validation_accuracy,
                    released: r.released,
                    test: r.test_accuracy,
                })
                .collect();
            return Table::from_experiment_rows(experiment, &runs);
        }
        let (rate, run) = pool_jobs(self)[i];
        let r = pool_run(self, &task, rate, run)?;
        Table::from_experiment_rows(experiment, &[r])
    }

    fn output(&self) -> &'static str {
        "pool.parquet"
    }

    fn derive(&self, experiment: &str, merged: &Table) -> Result<Vec<(&'static str, Table)>> {
        let task = self.task()?;
        let searched = searches(experiment, self, &task, &pool_of(merged)?)?;
        let summary = summary(self, &searched, task.sizes())?;
        Ok(vec![
            ("searches.parquet", searched),
            ("summary.parquet", summary),
        ])
    }

    fn derived(&self) -> Vec<&'static str> {
        vec!["searches.parquet", "summary.parquet"]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The inversion sampler against direct simulation of the best of K draws.
    #[test]
    fn best_rank_matches_direct_draws() {
        let (n, k, trials) = (7usize, 3u64, 200_000);
        let mut rng = stream(5, &[]);
        let (mut direct, mut inverted) = (vec![0f64; n], vec![0f64; n]);
        for _ in 0..trials {
            let m = (0..k).map(|_| rng.random_range(0..n)).min().unwrap();
            direct[m] += 1.0 / trials as f64;
            inverted[best_rank(n, k, rng.random())] += 1.0 / trials as f64;
        }
        for j in 0..n {
            let exact =
                (1.0 - j as f64 / n as f64).powi(3) - (1.0 - (j + 1) as f64 / n as f64).powi(3);
            assert!(
                (direct[j] - exact).abs() < 0.005,
                "{j}: {} vs {exact}",
                direct[j]
            );
            assert!(
                (inverted[j] - exact).abs() < 0.005,
                "{j}: {} vs {exact}",
                inverted[j]
            );
        }
        assert_eq!(best_rank(5, 1_000_000, 0.999_999), 0);
        assert_eq!(best_rank(1, 3, 0.5), 0);
    }
}
