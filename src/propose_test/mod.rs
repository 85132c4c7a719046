//! Propose-test tuning with a doubling step (Ding & Wu 2022; spec 003, Algorithm 1): the walk,
//! its certified cost and the parameters (the tuner adapter, which reads them from an
//! experiment file, is `tuners/propose_test_doubling.rs`).
//!
//! Every candidate is scored once by a proxy of sensitivity 1/k: the mean of its k shard
//! utilities (trained on k disjoint shards, each utility in [0, 1]). Passes of AboveThreshold
//! then test whether some candidate clears the level u0 + (m + step)·g; a success adds `step`
//! ticks to m and doubles `step`, a failure halves it (integer floor). The loop stops when
//! step = 0 or m ≥ M = ⌈(u_max − u0)/g⌉. The winner (or a data-independent fallback) is trained
//! once by the workload's private run.
//!
//! **Guarantee (from parameters alone, spec 003 §2.2–2.4).** One pass is ε0-DP (threshold
//! noise Lap(2/(kε0)), query noise Lap(4/(kε0)): the queries are not monotone, so the smaller
//! query scale would not do). However the data fall, there are at most T_max = 2M − 1 passes
//! (a failure needs an earlier success to halve, and each success adds a tick), so the tests
//! cost ε_tune = the smallest of basic composition T_max·ε0, advanced composition (with its
//! δ′) and the optimal composition of Kairouz–Oh–Viswanath over T_max passes (the loop can be
//! padded with no-op passes up to T_max). The paper's bound uses the data-dependent u*; we use
//! the public cap u_max instead. The final run adds its own (ε, δ) by basic composition. The
//! realised number of passes depends on the data: it is reported (`passes`) but never enters
//! a guarantee.

pub mod session;

pub use crate::accounting::above_threshold::{above_threshold, PassNoise};
use crate::accounting::composition::{advanced_epsilon, kov_epsilon};
use crate::data::shuffle;
use crate::error::{fmt_num, Error, Range, Result};
use crate::numeric::bisect_boundary;
use crate::workloads::{Hyper, Space};
use rand::RngCore;

/// The most utility ticks M allowed (T_max = 2M − 1 passes enter every accountant).
pub const MAX_TICKS: u64 = 1_000_000;

/// ⌈r⌉, except that r within 1e-9·max(1, |r|) of an integer counts as that integer, so that
/// (1 − 0)/0.01 gives M = 100, not 101 (spec 003 §1.5).
pub fn ceil_robust(r: f64) -> f64 {
    let nearest = r.round();
    if (r - nearest).abs() <= 1e-9 * r.abs().max(1.0) {
        nearest
    } else {
        r.ceil()
    }
}

/// The public utility scale of the walk: levels are u0 + ticks·g, and the walk stops at
/// M ticks (u ≥ u_max).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Ticks {
    pub u0: f64,
    pub g: f64,
    pub u_max: f64,
}

impl Ticks {
    /// Validates 0 < g < 1 and 0 ≤ u0 < u_max ≤ 1.
    pub fn new(u0: f64, g: f64, u_max: f64) -> Result<Self> {
        let g = Range::OpenUnit.check("granularity", g)?;
        if !(0.0..1.0).contains(&u0) {
            return Err(Error::invalid("u0", fmt_num(u0), "a number in [0, 1)"));
        }
        if !(u_max > u0 && u_max <= 1.0) {
            return Err(Error::invalid(
                "u_max",
                fmt_num(u_max),
                format!("a number in ({}, 1]", fmt_num(u0)),
            ));
        }
        let t = Ticks { u0, g, u_max };
        let m = ceil_robust((u_max - u0) / g);
        if m > MAX_TICKS as f64 {
            return Err(Error::invalid(
                "granularity",
                fmt_num(g),
                format!(
                    "at least (u_max − u0)/{MAX_TICKS} = {} (M = ⌈(u_max − u0)/g⌉ ticks bound the passes)",
                    fmt_num((u_max - u0) / MAX_TICKS as f64)
                ),
            ));
        }
        Ok(t)
    }

    /// M = ⌈(u_max − u0)/g⌉: u ≥ u_max exactly when m ≥ M.
    pub fn cap(&self) -> u64 {
        ceil_robust((self.u_max - self.u0) / self.g) as u64
    }

    /// The data-independent pass cap T_max = 2M − 1.
    pub fn max_passes(&self) -> u64 {
        2 * self.cap() - 1
    }

    /// The utility level of `ticks`.
    pub fn level(&self, ticks: u64) -> f64 {
        self.u0 + ticks as f64 * self.g
    }
}

/// The doubling state of spec 003 §1.4: no data and no randomness, only the outcomes of the
/// tests it is told.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Doubling {
    /// Accumulated utility, in ticks.
    pub m: u64,
    /// The step, a power of two (0 ends the walk).
    pub step: u64,
    /// M: the walk ends once m ≥ M.
    pub cap: u64,
}

impl Doubling {
    pub fn new(cap: u64) -> Self {
        Doubling { m: 0, step: 1, cap }
    }

    /// Whether another pass runs.
    pub fn running(&self) -> bool {
        self.step != 0 && self.m < self.cap
    }

    /// The level the next pass proposes, in ticks.
    pub fn proposed(&self) -> u64 {
        self.m + self.step
    }

    pub fn on_success(&mut self) {
        self.m += self.step;
        self.step = self.step.saturating_mul(2);
    }

    pub fn on_failure(&mut self) {
        self.step /= 2;
    }
}

/// One pass of the public transcript (safe to log: it is a function of the test outcomes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pass {
    pub step_before: u64,
    pub m_before: u64,
    /// The candidate that passed, if any.
    pub hit: Option<usize>,
    pub step_after: u64,
    pub m_after: u64,
}

/// Why the walk ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    StepZero,
    Cap,
}

impl Stop {
    pub fn name(self) -> &'static str {
        match self {
            Stop::StepZero => "step_zero",
            Stop::Cap => "cap",
        }
    }
}

/// A finished walk: its transcript, the last candidate that passed, and why it stopped.
#[derive(Clone, Debug, PartialEq)]
pub struct Walk {
    pub passes: Vec<Pass>,
    pub selected: Option<usize>,
    pub stop: Stop,
}

impl Walk {
    pub fn successes(&self) -> usize {
        self.passes.iter().filter(|p| p.hit.is_some()).count()
    }
    pub fn final_ticks(&self) -> u64 {
        self.passes.last().map_or(0, |p| p.m_after)
    }
}

/// Runs the doubling walk to its end: `test(level in ticks)` is one pass (AboveThreshold in
/// the tuner, a scripted or noise-free outcome in tests). At most 2·cap − 1 passes.
pub fn walk(cap: u64, mut test: impl FnMut(u64) -> Option<usize>) -> Walk {
    let mut state = Doubling::new(cap);
    let mut passes = Vec::new();
    let mut selected = None;
    while state.running() {
        let before = state;
        let hit = test(state.proposed());
        match hit {
            Some(j) => {
                selected = Some(j);
                state.on_success();
            }
            None => state.on_failure(),
        }
        passes.push(Pass {
            step_before: before.step,
            m_before: before.m,
            hit,
            step_after: state.step,
            m_after: state.m,
        });
    }
    let stop = if state.m >= cap {
        Stop::Cap
    } else {
        Stop::StepZero
    };
    Walk {
        passes,
        selected,
        stop,
    }
}

/// How the passes' cost is composed (spec 003 §2.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Composition {
    /// T_max·ε0, pure DP.
    Basic,
    /// Dwork–Rothblum–Vadhan with δ′ (never above basic).
    Advanced,
    /// The optimal composition of T_max ε0-DP mechanisms (Kairouz–Oh–Viswanath).
    KovOptimal,
    /// The smallest of the three above (default).
    Smallest,
    /// Extension (spec 003 §2.4, ours): in pure DP a pass without a hit costs only ε0/2, so
    /// the walk costs at most (3M − 1)·ε0/2.
    PureRefined,
}

impl Composition {
    pub fn parse(s: &str) -> Result<Self> {
        Ok(match s {
            "basic" => Composition::Basic,
            "advanced" => Composition::Advanced,
            "kov" => Composition::KovOptimal,
            "smallest" => Composition::Smallest,
            "pure-refined" => Composition::PureRefined,
            other => {
                return Err(Error::invalid(
                    "composition",
                    other,
                    "\"smallest\", \"basic\", \"advanced\", \"kov\" or \"pure-refined\"",
                ))
            }
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            Composition::Basic => "basic",
            Composition::Advanced => "advanced",
            Composition::KovOptimal => "kov",
            Composition::Smallest => "smallest",
            Composition::PureRefined => "pure-refined",
        }
    }
}

/// The certified cost of the tests: (ε, δ) and the composition that gave it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TuningCost {
    pub epsilon: f64,
    pub delta: f64,
    pub composition: Composition,
}

/// The certified cost of the walk over `ticks`: its T_max = 2M − 1 passes of ε0-DP, with δ′ =
/// `delta_prime` for the approximate-DP compositions (or the pure-DP extension's (3M − 1)·ε0/2).
pub fn tuning_cost(
    eps0: f64,
    ticks: &Ticks,
    delta_prime: f64,
    composition: Composition,
) -> Result<TuningCost> {
    if composition == Composition::PureRefined {
        let eps0 = Range::Positive.check("eps0", eps0)?;
        return Ok(TuningCost {
            epsilon: (3 * ticks.cap() - 1) as f64 * eps0 / 2.0,
            delta: 0.0,
            composition,
        });
    }
    passes_cost(eps0, ticks.max_passes(), delta_prime, composition)
}

/// The cost of `passes` adaptively composed ε0-DP passes. With the data-independent T_max it is
/// a guarantee; with a realised count it is only the ex-post value of spec 003 §2.5 (not DP).
pub fn passes_cost(
    eps0: f64,
    passes: u64,
    delta_prime: f64,
    composition: Composition,
) -> Result<TuningCost> {
    let eps0 = Range::Positive.check("eps0", eps0)?;
    if passes == 0 {
        return Err(Error::invalid("passes", 0, "an integer >= 1"));
    }
    let cost = |epsilon, delta, composition| TuningCost {
        epsilon,
        delta,
        composition,
    };
    let basic = cost(passes as f64 * eps0, 0.0, Composition::Basic);
    let advanced = || -> Result<TuningCost> {
        let b = advanced_epsilon(eps0, passes, delta_prime)?;
        // advanced_epsilon falls back to basic composition (δ = 0) when that is smaller.
        Ok(if b.delta == 0.0 {
            basic
        } else {
            cost(b.epsilon, b.delta, Composition::Advanced)
        })
    };
    let kov = || -> Result<TuningCost> {
        if delta_prime == 0.0 {
            return Ok(basic);
        }
        let b = kov_epsilon(eps0, passes, delta_prime)?;
        Ok(if b.epsilon < basic.epsilon {
            cost(b.epsilon, b.delta, Composition::KovOptimal)
        } else {
            basic
        })
    };
    match composition {
        Composition::Basic => Ok(basic),
        Composition::Advanced => advanced(),
        Composition::KovOptimal => kov(),
        Composition::Smallest => Ok([advanced()?, kov()?].into_iter().fold(basic, |a, b| {
            if b.epsilon < a.epsilon {
                b
            } else {
                a
            }
        })),
        Composition::PureRefined => Err(Error::invalid(
            "composition",
            "pure-refined",
            "a composition of whole passes (the extension needs the walk's M: use tuning_cost)",
        )),
    }
}

/// How much the tests may spend.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum PassBudget {
    /// ε0 of each pass, as the paper states it.
    PerPass(f64),
    /// The whole tuning cost ε_tune; ε0 is the largest that meets it.
    Tuning(f64),
    /// In equal-budget experiments: this share of the target ε goes to the tests, the rest to
    /// the final run (whose noise the harness calibrates).
    Share(f64),
}

/// Where the scan starts (spec 003 §5.6): any public order is faithful.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ScanOrder {
    /// One public random permutation per run (default; `scan = "shuffle"`).
    #[default]
    #[serde(rename = "shuffle")]
    PublicShuffle,
    /// The order of the candidate list (the paper, literally; `scan = "as-given"`).
    #[serde(rename = "as-given")]
    AsGiven,
}

/// The candidate trained when no pass succeeded (spec 003 §5.4): data-independent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Fallback {
    UniformRandom,
    Index(usize),
}

/// The propose-test tuner (registry name `propose-test`).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ProposeTestDoubling {
    /// k, the number of disjoint shards.
    pub shards: usize,
    pub budget: PassBudget,
    pub ticks: Ticks,
    /// δ′ of the advanced and optimal compositions; `None`: half the experiment's δ (the
    /// final run gets the rest).
    pub delta_prime: Option<f64>,
    pub composition: Composition,
    pub scan: ScanOrder,
    pub fallback: Fallback,
    /// `grid = N`: on a workload whose space is the unit box, the candidates are the public
    /// grid of N points per axis ({0, 1/(N−1), …, 1}^d, in lexicographic order).
    pub box_grid: Option<usize>,
}

/// The grid of `n` points per axis over [0, 1]^dim, in lexicographic order (last axis fastest).
fn box_grid(dim: usize, n: usize) -> Vec<Hyper> {
    let axis: Vec<f64> = (0..n).map(|i| i as f64 / (n - 1) as f64).collect();
    let mut points: Vec<Hyper> = vec![Vec::new()];
    for _ in 0..dim {
        points = points
            .into_iter()
            .flat_map(|p| {
                axis.iter().map(move |&v| {
                    let mut q = p.clone();
                    q.push(v);
                    q
                })
            })
            .collect();
    }
    points
}

impl ProposeTestDoubling {
    /// Propose-test with doubling over `shards` = k ≥ 1 disjoint shards, its tests paid by
    /// `budget` (ε0 > 0 per pass, the tests' total ε > 0, or their share ∈ (0, 1) of an equal
    /// budget), on the utility scale `ticks`, their cost composed by `composition` with δ′ ∈
    /// (0, 1) (`None`: half the experiment's δ; needed up front with a `Tuning` budget unless
    /// the composition is pure). A public shuffle of the candidates, a uniformly random
    /// fallback and the workload's own candidates until the `with_*` methods say otherwise.
    ///
    /// ```
    /// use dptune::propose_test::{Composition, PassBudget, ProposeTestDoubling, Ticks};
    /// let t = ProposeTestDoubling::new(
    ///     10,
    ///     PassBudget::PerPass(0.1),
    ///     Ticks::new(0.0, 0.01, 1.0)?,
    ///     Composition::Smallest,
    ///     None,
    /// )?;
    /// assert_eq!(t.ticks.max_passes(), 199);
    /// // A total tuning ε with an approximate-DP composition needs δ′ before the run.
    /// let tuning = PassBudget::Tuning(1.0);
    /// let ticks = Ticks::new(0.0, 0.01, 1.0)?;
    /// assert!(ProposeTestDoubling::new(10, tuning, ticks, Composition::Smallest, None).is_err());
    /// assert!(ProposeTestDoubling::new(10, tuning, ticks, Composition::Basic, None).is_ok());
    /// # Ok::<(), dptune::Error>(())
    /// ```
    pub fn new(
        shards: usize,
        budget: PassBudget,
        ticks: Ticks,
        composition: Composition,
        delta_prime: Option<f64>,
    ) -> Result<Self> {
        if shards == 0 {
            return Err(Error::invalid("shards", 0, "an integer >= 1 (k)"));
        }
        let budget = match budget {
            PassBudget::PerPass(e) => PassBudget::PerPass(Range::Positive.check("eps0", e)?),
            PassBudget::Tuning(t) => PassBudget::Tuning(Range::Positive.check("tune_epsilon", t)?),
            PassBudget::Share(s) => PassBudget::Share(Range::OpenUnit.check("tune_share", s)?),
        };
        let delta_prime = delta_prime
            .map(|d| Range::OpenUnit.check("delta_prime", d))
            .transpose()?;
        let needs_delta = !matches!(composition, Composition::Basic | Composition::PureRefined);
        if matches!(budget, PassBudget::Tuning(_)) && needs_delta && delta_prime.is_none() {
            return Err(Error::invalid(
                "delta_prime",
                "missing",
                "a number in (0, 1): with `tune_epsilon`, ε0 is solved before the experiment's \
                 δ is known, so the advanced and optimal compositions need δ′ here",
            ));
        }
        Ok(ProposeTestDoubling {
            shards,
            budget,
            ticks,
            delta_prime,
            composition,
            scan: ScanOrder::PublicShuffle,
            fallback: Fallback::UniformRandom,
            box_grid: None,
        })
    }

    /// The order in which each pass scans the candidates.
    pub fn with_scan(self, scan: ScanOrder) -> Self {
        ProposeTestDoubling { scan, ..self }
    }

    /// The candidate trained when no pass succeeded (an index is checked against the
    /// candidates when run).
    pub fn with_fallback(self, fallback: Fallback) -> Self {
        ProposeTestDoubling { fallback, ..self }
    }

    /// On a workload whose space is the unit box: the public grid of `n` ≥ 2 points per axis.
    pub fn with_grid(self, n: usize) -> Result<Self> {
        if n < 2 {
            return Err(Error::invalid(
                "grid",
                n,
                "an integer >= 2 (points per axis)",
            ));
        }
        Ok(ProposeTestDoubling {
            box_grid: Some(n),
            ..self
        })
    }

    /// ε0 of each pass: as given, or the largest whose certified cost meets the tests' ε.
    pub fn eps0(&self, delta_prime: f64) -> Result<f64> {
        let target = match self.budget {
            PassBudget::PerPass(e) => return Ok(e),
            PassBudget::Tuning(t) => t,
            PassBudget::Share(_) => {
                return Err(Error::Infeasible(
                    "tuner `propose-test` with `tune_share` needs an equal-budget experiment \
                     (a `budgets` list); give `eps0` or `tune_epsilon` otherwise"
                        .into(),
                ))
            }
        };
        let cost = |eps0: f64| {
            tuning_cost(eps0, &self.ticks, delta_prime, self.composition).map(|c| c.epsilon)
        };
        // Bisect on x = 1/ε0: meeting the target is monotone in x, and the returned x was
        // checked, so ε0 = 1/x certainly meets it.
        let meets = |x: f64| cost(1.0 / x).is_ok_and(|e| e <= target);
        let (lo, hi) = (
            1.0 / (2.0 * target + 1.0),
            self.ticks.max_passes() as f64 / target,
        );
        if meets(lo) || !meets(hi) {
            return Err(Error::Infeasible(format!(
                "propose-test: no ε0 meets tune_epsilon = {}",
                fmt_num(target)
            )));
        }
        Ok(1.0 / bisect_boundary(meets, lo, hi, 1e-12))
    }

    /// δ′ for an experiment's δ.
    pub fn delta_prime(&self, delta: f64) -> f64 {
        self.delta_prime.unwrap_or(delta / 2.0)
    }

    /// The certified cost of the tests for δ′ (with ε0), before any data is touched.
    pub fn certified_cost(&self, delta_prime: f64) -> Result<(f64, TuningCost)> {
        let eps0 = self.eps0(delta_prime)?;
        Ok((
            eps0,
            tuning_cost(eps0, &self.ticks, delta_prime, self.composition)?,
        ))
    }

    /// The finite candidate list of `space` (of workload `name`), or the `grid` over a unit
    /// box, checked against `fallback`.
    pub(crate) fn candidates<'a>(
        &self,
        space: &'a Space,
        name: String,
    ) -> Result<std::borrow::Cow<'a, [Hyper]>> {
        let grid;
        let c: std::borrow::Cow<'a, [Hyper]> =
            match (space, self.box_grid) {
                (Space::Finite(c), None) if !c.is_empty() => c.as_slice().into(),
                (&Space::UnitBox { dim }, Some(n))
                    if dim >= 1 && (n as f64).powi(dim as i32) <= 1e6 =>
                {
                    grid = box_grid(dim, n);
                    grid.into()
                }
                (Space::Finite(_), Some(_)) => {
                    return Err(Error::invalid(
                        "grid",
                        "given",
                        format!("only for a unit-box space; `{name}` has a finite candidate list"),
                    ))
                }
                (Space::UnitBox { .. }, Some(n)) => {
                    return Err(Error::invalid(
                        "grid",
                        n,
                        "a grid of at most 1e6 points over the box",
                    ))
                }
                _ => return Err(Error::missing_capability(
                    "tuner `propose-test`",
                    "a finite, public candidate list (a `candidates` count, or `grid` over a box)",
                    name,
                )),
            };
        if let Fallback::Index(i) = self.fallback {
            if i >= c.len() {
                return Err(Error::invalid(
                    "fallback",
                    i,
                    format!("a candidate index below {}", c.len()),
                ));
            }
        }
        Ok(c)
    }

    /// k ≤ m when the m validation records of workload `name` are private.
    pub(crate) fn check_shards(
        &self,
        private_validation_records: Option<usize>,
        name: &str,
    ) -> Result<()> {
        match private_validation_records {
            Some(m) if m < self.shards => Err(Error::invalid(
                "shards",
                self.shards,
                format!(
                    "at most the {m} private validation records of workload `{}` (spec 003 §5.10: \
                     the shard mean has sensitivity 1/k only when k <= m)",
                    name
                ),
            )),
            _ => Ok(()),
        }
    }

    /// Runs the walk on proxy utilities `u` (spec 003 §1.5 after the proxy loop): the scan
    /// order, then per pass the threshold and query draws, all from `rng`.
    pub fn walk_on(&self, u: &[f64], eps0: f64, rng: &mut dyn RngCore) -> Walk {
        let mut order: Vec<usize> = (0..u.len()).collect();
        if self.scan == ScanOrder::PublicShuffle {
            shuffle(&mut order, rng);
        }
        let noise = PassNoise::new(self.shards, eps0);
        walk(self.ticks.cap(), |ticks| {
            above_threshold(u, self.ticks.level(ticks), noise, &order, rng)
        })
    }
}

/// The shard means u_j, after checking that every shard utility lies in [0, 1].
pub fn proxy_utilities(a: &[Vec<f64>], candidates: usize, shards: usize) -> Result<Vec<f64>> {
    if a.len() != candidates || a.iter().any(|row| row.len() != shards) {
        return Err(Error::Numerical(format!(
            "the workload returned shard utilities of the wrong shape (want {candidates} × {shards})"
        )));
    }
    a.iter()
        .enumerate()
        .map(|(j, row)| {
            if let Some(x) = row.iter().find(|x| !(0.0..=1.0).contains(*x)) {
                return Err(Error::Infeasible(format!(
                    "shard utility {x} of candidate {j} is outside [0, 1]: the 1/k sensitivity \
                     needs utilities in [0, 1]"
                )));
            }
            Ok(row.iter().sum::<f64>() / shards as f64)
        })
        .collect()
}
