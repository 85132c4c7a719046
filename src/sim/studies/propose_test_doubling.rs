//! Spec 003 (propose-test with doubling): the synthetic walks of Figures 1 and 2
//! (`kind = "propose-test-walks"`) and Table 1 with numbers (`kind = "propose-test-budgets"`).
//!
//! Walks: per seed, n utilities u_j ~ U(0, 1) are drawn directly (no training, spec 003 §3.2)
//! and the doubling walk of Algorithm 1 runs on them; one row per pass. The certified ε_tune
//! uses the data-independent T_max; `eps_tune_expost_non_dp` applies the same composition to
//! the realised passes and is **not** a DP guarantee (§2.5): it is shown, never used to match
//! budgets.

use super::StudyKind;
use crate::accounting::composition::{advanced_epsilon, kov_epsilon};
use crate::accounting::selection::bounds::{repeat_select, Base};
use crate::accounting::selection::CountFamily;
use crate::accounting::{Accountant, RdpCurve};
use crate::error::{fmt_num, Error, Range, Result};
use crate::params::{Count, OneOrMany};
use crate::propose_test::{
    above_threshold, passes_cost, tuning_cost, walk, Composition, PassNoise, Stop, Ticks, Walk,
};
use crate::rng::stream;
use crate::sim::fields::Fields;
use crate::sim::report::quantile;
use crate::sim::study::Study;
use crate::sim::table::Table;
use rand::Rng;
use rayon::prelude::*;
use std::collections::BTreeMap;

pub const WALKS: StudyKind = StudyKind {
    source: file!(),
    name: "propose-test-walks",
    about: "spec 003 Figures 1 and 2: propose-test's doubling walks on synthetic utilities",
    parse: |f| Ok(Box::new(parse_walks(f)?)),
};

pub const BUDGETS: StudyKind = StudyKind {
    source: file!(),
    name: "propose-test-budgets",
    about: "spec 003 Table 1 with numbers: total budgets of naive, RandTune and propose-test",
    parse: |f| Ok(Box::new(parse_budgets(f)?)),
};

/// Stream tag of the walks' utilities and noise.
const WALK_STREAM: u64 = 0x7761_6c6b;

/// A `propose-test-walks` file.
#[derive(Clone, Debug, PartialEq)]
pub struct Walks {
    pub seed: u64,
    pub seeds: u64,
    pub candidates: usize,
    pub shards: usize,
    pub eps0: f64,
    pub u0: f64,
    /// The granularities g of Figure 2 (the x-axis is M = ⌈(1 − u0)/g⌉).
    pub granularities: Vec<f64>,
    /// The g whose walks Figure 1 draws.
    pub trace_granularity: f64,
    /// Scan in index order (the paper, literally) or a public shuffle per run.
    pub shuffle: bool,
    pub delta_prime: f64,
}

/// A `propose-test-walks` experiment file's parameters.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct WalksParams {
    seed: Option<u64>,
    seeds: Option<Count>,
    candidates: Option<Count>,
    shards: Option<Count>,
    eps0: Option<f64>,
    u0: Option<f64>,
    granularities: Option<OneOrMany<f64>>,
    trace_granularity: Option<f64>,
    scan: Option<String>,
    delta_prime: Option<f64>,
}

/// Parses a `propose-test-walks` file.
fn parse_walks(f: &Fields) -> Result<Walks> {
    let p: WalksParams = f.read("a `propose-test-walks` experiment", &[])?;
    let count = |key, given, default| f.count_or(key, given, 1, default).map(|v| v as usize);
    let w = Walks {
        seed: p.seed.unwrap_or(0),
        seeds: f.seeds(
            p.seeds
                .ok_or_else(|| f.missing("seeds", "the number of walks per granularity"))?,
        )?,
        candidates: count("candidates", p.candidates, 100)?,
        shards: count("shards", p.shards, 10)?,
        eps0: f.in_range("eps0", p.eps0.unwrap_or(0.1), Range::Positive)?,
        u0: f.in_range("u0", p.u0.unwrap_or(0.0), Range::NonNegative)?,
        granularities: f.numbers_in("granularities", p.granularities, Range::OpenUnit)?,
        trace_granularity: f.in_range(
            "trace_granularity",
            p.trace_granularity.unwrap_or(0.01),
            Range::OpenUnit,
        )?,
        shuffle: match p.scan.as_deref().unwrap_or("as-given") {
            "as-given" => false,
            "shuffle" => true,
            _ => return Err(f.bad("scan", "`as-given` (the paper) or `shuffle`")),
        },
        delta_prime: f.in_range(
            "delta_prime",
            p.delta_prime.unwrap_or(1e-5),
            Range::OpenUnit,
        )?,
    };
    for &g in w.granularities.iter().chain([&w.trace_granularity]) {
        Ticks::new(w.u0, g, 1.0).map_err(|e| f.wrap(e))?;
    }
    if !w.granularities.contains(&w.trace_granularity) {
        return Err(f.bad(
            "trace_granularity",
            "one of `granularities` (Figure 1 draws those walks)",
        ));
    }
    Ok(w)
}

/// One run: its walk and the true utility of what it selected.
struct Run {
    g: f64,
    seed: u64,
    walk: Walk,
    selected_utility: Option<f64>,
}

/// Runs every seed's walk at granularity `gi` (every granularity when None); one row per pass.
pub fn run_walks(experiment: &str, w: &Walks, only: Option<usize>) -> Result<Table> {
    let noise = PassNoise::new(w.shards, w.eps0);
    let mut runs = Vec::new();
    for (gi, &g) in w.granularities.iter().enumerate() {
        if only.is_some_and(|o| o != gi) {
            continue;
        }
        let ticks = Ticks::new(w.u0, g, 1.0)?;
        let batch: Vec<Run> = (0..w.seeds)
            .into_par_iter()
            .map(|seed| {
                let mut rng = stream(w.seed, &[WALK_STREAM, gi as u64, seed]);
                let u: Vec<f64> = (0..w.candidates).map(|_| rng.random::<f64>()).collect();
                let mut order: Vec<usize> = (0..u.len()).collect();
                if w.shuffle {
                    crate::data::shuffle(&mut order, &mut rng);
                }
                let walk = walk(ticks.cap(), |t| {
                    above_threshold(&u, ticks.level(t), noise, &order, &mut rng)
                });
                Run {
                    g,
                    seed,
                    selected_utility: walk.selected.map(|j| u[j]),
                    walk,
                }
            })
            .collect();
        runs.extend(batch);
    }
    let mut rows = Vec::new();
    for r in &runs {
        let ticks = Ticks::new(w.u0, r.g, 1.0)?;
        let certified = tuning_cost(w.eps0, &ticks, w.delta_prime, Composition::Smallest)?.epsilon;
        let passes = r.walk.passes.len() as u64;
        let expost = passes_cost(w.eps0, passes, w.delta_prime, Composition::Smallest)?.epsilon;
        for (t, p) in r.walk.passes.iter().enumerate() {
            rows.push(PassRow {
                granularity: r.g,
                cap: ticks.cap(),
                max_passes: ticks.max_passes(),
                seed: r.seed,
                pass: t as u64 + 1,
                step_before: p.step_before,
                m_before: p.m_before,
                accepted: p.hit.is_some(),
                step_after: p.step_after,
                m_after: p.m_after,
                passes_data_dependent: passes,
                stop: r.walk.stop.name().to_string(),
                selected_true_utility: r.selected_utility,
                eps_tune_certified: certified,
                eps_tune_expost_non_dp: expost,
            });
        }
    }
    Table::from_experiment_rows(experiment, &rows)
}

/// One pass of one walk, with its run's outcome and costs.
#[derive(serde::Serialize)]
struct PassRow {
    granularity: f64,
    /// M, the walk's cap in ticks.
    #[serde(rename = "M")]
    cap: u64,
    #[serde(rename = "T_max")]
    max_passes: u64,
    seed: u64,
    pass: u64,
    step_before: u64,
    m_before: u64,
    accepted: bool,
    step_after: u64,
    m_after: u64,
    passes_data_dependent: u64,
    stop: String,
    selected_true_utility: Option<f64>,
    eps_tune_certified: f64,
    eps_tune_expost_non_dp: f64,
}

/// One (method, accountant, |S|, ε) total of Table 1.
#[derive(serde::Serialize)]
struct BudgetRow {
    method: String,
    accountant: String,
    candidates: u64,
    epsilon_run: f64,
    eps_total: f64,
    delta_total: f64,
}

/// One run read back from the table: (granularity, seed) → its passes' rows.
type RunRows = BTreeMap<(u64, u64), Vec<usize>>;

fn runs_of(t: &Table) -> Result<RunRows> {
    let (g, seed) = (t.f64("granularity")?, t.u64("seed")?);
    let mut runs: RunRows = BTreeMap::new();
    for i in 0..t.height() {
        let g = g[i].ok_or_else(|| Error::Infeasible("a walk row without granularity".into()))?;
        runs.entry((g.to_bits(), seed[i])).or_default().push(i);
    }
    Ok(runs)
}

/// Per-granularity statistics of the realised passes (`passes.parquet`, which Figure 2 and
/// the table draw).
#[derive(serde::Serialize)]
struct PassStats {
    granularity: f64,
    #[serde(rename = "M")]
    cap: u64,
    #[serde(rename = "T_max")]
    max_passes: u64,
    mean_passes: f64,
    median_passes: f64,
    q99_passes: f64,
    max_passes_seen: f64,
    /// ⌈log2(M + 1)⌉, the passes of a walk that only succeeds.
    log2_bound: f64,
    share_at_cap: f64,
    mean_selected_utility: f64,
    share_fallback: f64,
    eps_tune_certified: f64,
    eps_tune_expost_non_dp: f64,
}

fn pass_stats(w: &Walks, t: &Table) -> Result<Vec<PassStats>> {
    let runs = runs_of(t)?;
    let (cap, tmax, passes) = (
        t.u64("M")?,
        t.u64("T_max")?,
        t.u64("passes_data_dependent")?,
    );
    let (stop, selected) = (t.str("stop")?, t.f64("selected_true_utility")?);
    let (certified, expost) = (
        t.f64("eps_tune_certified")?,
        t.f64("eps_tune_expost_non_dp")?,
    );
    w.granularities
        .iter()
        .map(|&g| {
            let firsts: Vec<usize> = runs
                .iter()
                .filter(|((gb, _), _)| *gb == g.to_bits())
                .map(|(_, rows)| rows[0])
                .collect();
            if firsts.is_empty() {
                return Err(Error::Infeasible(format!("no walks for g = {g}")));
            }
            let n = firsts.len() as f64;
            let mut ts: Vec<f64> = firsts.iter().map(|&i| passes[i] as f64).collect();
            let share =
                |p: &dyn Fn(usize) -> bool| firsts.iter().filter(|&&i| p(i)).count() as f64 / n;
            let mean_of = |c: &[Option<f64>]| firsts.iter().filter_map(|&i| c[i]).sum::<f64>() / n;
            let chosen: Vec<f64> = firsts.iter().filter_map(|&i| selected[i]).collect();
            Ok(PassStats {
                granularity: g,
                cap: cap[firsts[0]],
                max_passes: tmax[firsts[0]],
                mean_passes: ts.iter().sum::<f64>() / n,
                median_passes: quantile(&mut ts, 0.5),
                q99_passes: quantile(&mut ts, 0.99),
                max_passes_seen: quantile(&mut ts, 1.0),
                log2_bound: libm::log2((cap[firsts[0]] + 1) as f64).ceil(),
                share_at_cap: share(&|i| stop[i] == Stop::Cap.name()),
                mean_selected_utility: chosen.iter().sum::<f64>() / chosen.len().max(1) as f64,
                share_fallback: share(&|i| selected[i].is_none()),
                eps_tune_certified: certified[firsts[0]].unwrap_or(f64::NAN),
                eps_tune_expost_non_dp: mean_of(expost),
            })
        })
        .collect()
}

/// The legend entry (and `walk` value) of the alternating worst case in `traced-walks.parquet`.
pub const WORST_CASE: &str = "worst case: alternating S, F, over the most frequent walk's passes";

/// One point of a distinct walk at the trace granularity (`traced-walks.parquet`, which
/// Figure 1 draws): the walks grouped by path, most frequent first, then the alternating
/// worst case over as many passes as the most frequent walk.
#[derive(serde::Serialize)]
struct TracedPoint {
    /// "992 of 1000 seeds: SSSSSSS" (the share of seeds and the success/failure pattern), or
    /// [`WORST_CASE`].
    walk: String,
    /// 1 for the most frequent path, 2 for the next, …; 0 for the worst case.
    rank: u64,
    /// The seeds that walked it (0: the worst case).
    seeds: u64,
    /// 0 for the start (step 1, u = u0), then one per pass.
    point: u64,
    step: f64,
    u: f64,
    /// The distinct paths of the seeds' walks.
    distinct_paths: u64,
}

fn traced_walks(w: &Walks, t: &Table) -> Result<Vec<TracedPoint>> {
    let g = w.trace_granularity;
    let runs = runs_of(t)?;
    let (step_after, m_after, accepted) =
        (t.u64("step_after")?, t.u64("m_after")?, t.bool("accepted")?);
    let mut paths: BTreeMap<Vec<(u64, u64)>, (usize, String)> = BTreeMap::new();
    for ((gb, _), rows) in &runs {
        if *gb != g.to_bits() {
            continue;
        }
        let path: Vec<(u64, u64)> = rows.iter().map(|&i| (step_after[i], m_after[i])).collect();
        let pattern: String = (rows.iter())
            .map(|&i| if accepted[i] { 'S' } else { 'F' })
            .collect();
        paths.entry(path).or_insert((0, pattern)).0 += 1;
    }
    let total: usize = paths.values().map(|v| v.0).sum();
    let mut ranked: Vec<_> = paths.into_iter().collect();
    ranked.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(&b.0)));
    let passes = ranked.first().map_or(1, |r| r.0.len());
    // Alternation over a cap of `passes` ticks lasts 2·passes − 1 passes: enough to cut.
    let alternating = walk(passes as u64, {
        let mut n = 0;
        move |_| {
            n += 1;
            (n % 2 == 1).then_some(0)
        }
    });
    let worst: Vec<(u64, u64)> = (alternating.passes.iter().take(passes))
        .map(|p| (p.step_after, p.m_after))
        .collect();
    let distinct = ranked.len() as u64;
    let walks = (ranked.iter().enumerate())
        .map(|(k, (path, (count, pattern)))| {
            let label = format!("{count} of {total} seeds: {pattern}");
            (label, k as u64 + 1, *count as u64, path)
        })
        .chain([(WORST_CASE.to_string(), 0, 0, &worst)]);
    let mut out = Vec::new();
    for (label, rank, seeds, path) in walks {
        let points = std::iter::once((1, 0)).chain(path.iter().copied());
        for (k, (step, m)) in points.enumerate() {
            out.push(TracedPoint {
                walk: label.clone(),
                rank,
                seeds,
                point: k as u64,
                step: step as f64,
                u: w.u0 + m as f64 * g,
                distinct_paths: distinct,
            });
        }
    }
    Ok(out)
}

/// A `propose-test-budgets` file (Table 1 with numbers).
#[derive(Clone, Debug, PartialEq)]
pub struct Budgets {
    /// |S|, the candidate counts.
    pub sizes: Vec<u64>,
    /// ε of each private training run.
    pub epsilons: Vec<f64>,
    pub delta_prime: f64,
    pub eps0: f64,
    pub granularity: f64,
    pub u0: f64,
}

/// A `propose-test-budgets` experiment file's parameters.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct BudgetsParams {
    sizes: Option<OneOrMany<Count>>,
    epsilons: Option<OneOrMany<f64>>,
    delta_prime: Option<f64>,
    eps0: Option<f64>,
    granularity: Option<f64>,
    u0: Option<f64>,
}

/// Parses a `propose-test-budgets` file.
fn parse_budgets(f: &Fields) -> Result<Budgets> {
    let p: BudgetsParams = f.read("a `propose-test-budgets` experiment", &[])?;
    let b = Budgets {
        sizes: p
            .sizes
            .ok_or_else(|| f.missing("sizes", "a non-empty list of integers >= 1"))?
            .into_vec()
            .into_iter()
            .map(|c| f.count("sizes", c, 1))
            .collect::<Result<_>>()?,
        epsilons: f.numbers_in("epsilons", p.epsilons, Range::Positive)?,
        delta_prime: f.in_range(
            "delta_prime",
            p.delta_prime.unwrap_or(1e-5),
            Range::OpenUnit,
        )?,
        eps0: f.in_range("eps0", p.eps0.unwrap_or(0.1), Range::Positive)?,
        granularity: f.in_range(
            "granularity",
            p.granularity.unwrap_or(0.01),
            Range::OpenUnit,
        )?,
        u0: f.in_range("u0", p.u0.unwrap_or(0.0), Range::NonNegative)?,
    };
    Ticks::new(b.u0, b.granularity, 1.0).map_err(|e| f.wrap(e))?;
    Ok(b)
}

/// Every (method, accountant, |S|, ε) total, each run being pure ε-DP.
pub fn run_budgets(experiment: &str, b: &Budgets) -> Result<Table> {
    let acc = Accountant::default();
    let ticks = Ticks::new(b.u0, b.granularity, 1.0)?;
    let mut rows: Vec<BudgetRow> = Vec::new();
    for &s in &b.sizes {
        for &eps in &b.epsilons {
            let mut push = |method: &str, accountant: &str, total: f64, delta: f64| {
                rows.push(BudgetRow {
                    method: method.into(),
                    accountant: accountant.into(),
                    candidates: s,
                    epsilon_run: eps,
                    eps_total: total,
                    delta_total: delta,
                });
            };
            let adv = advanced_epsilon(eps, s, b.delta_prime)?;
            push(
                "naive (all |S|)",
                "advanced composition",
                adv.epsilon,
                adv.delta,
            );
            let kov = kov_epsilon(eps, s, b.delta_prime)?;
            push(
                "naive (all |S|)",
                "optimal composition (KOV)",
                kov.epsilon,
                kov.delta,
            );
            push(
                "RandTune: TNB η = 0 (logarithmic K)",
                "pure DP, 2ε",
                2.0 * eps,
                0.0,
            );
            push(
                "RandTune: geometric K (Liu–Talwar)",
                "pure DP, 3ε",
                3.0 * eps,
                0.0,
            );
            let base = Base::symmetric(RdpCurve::pure_dp(eps)?);
            for (family, label) in [
                ("logarithmic", "RandTune: TNB η = 0, E[K] = |S|"),
                ("poisson", "RandTune: Poisson, E[K] = |S|"),
            ] {
                let law = CountFamily::parse(family)?.with_mean(s as f64, None)?;
                let curve = repeat_select(&base, &law, &acc.orders)?;
                let d = acc.epsilon(&curve, b.delta_prime)?;
                push(label, "RDP → (ε, δ′)", d.epsilon, d.delta);
            }
            for c in [
                Composition::Basic,
                Composition::Advanced,
                Composition::KovOptimal,
                Composition::PureRefined,
            ] {
                let cost = tuning_cost(b.eps0, &ticks, b.delta_prime, c)?;
                let label = match c {
                    Composition::PureRefined => "pure-refined (extension)".to_string(),
                    c => format!("{} over T_max", c.name()),
                };
                push(
                    "propose-test: ε + ε_tune",
                    &label,
                    eps + cost.epsilon,
                    cost.delta,
                );
            }
        }
    }
    Table::from_experiment_rows(experiment, &rows)
}

/// One unit per granularity (its seeds' walks in parallel).
impl Study for Walks {
    fn units(&self) -> Vec<String> {
        self.granularities
            .iter()
            .map(|g| format!("g={}", fmt_num(*g)))
            .collect()
    }

    fn run_unit(&self, experiment: &str, i: usize) -> Result<Table> {
        run_walks(experiment, self, Some(i))
    }

    fn output(&self) -> &'static str {
        "walks.parquet"
    }

    /// The per-g statistics and the distinct walks at the trace granularity; Figures 1 and 2
    /// and the table are declared in the experiment file.
    fn derive(&self, experiment: &str, merged: &Table) -> Result<Vec<(&'static str, Table)>> {
        let stats = Table::from_experiment_rows(experiment, &pass_stats(self, merged)?)?;
        let traced = Table::from_experiment_rows(experiment, &traced_walks(self, merged)?)?;
        Ok(vec![
            ("passes.parquet", stats),
            ("traced-walks.parquet", traced),
        ])
    }

    fn derived(&self) -> Vec<&'static str> {
        vec!["passes.parquet", "traced-walks.parquet"]
    }
}

/// One unit: closed-form totals.
impl Study for Budgets {
    fn units(&self) -> Vec<String> {
        vec!["closed-form totals".into()]
    }

    fn run_unit(&self, experiment: &str, _i: usize) -> Result<Table> {
        run_budgets(experiment, self)
    }

    /// Table 1 is declared in the experiment file.
    fn output(&self) -> &'static str {
        "budgets.parquet"
    }
}
