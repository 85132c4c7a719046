//! Spec 002's experiments for private GP-UCB (all **[framework]** designs: the paper has none).
//!
//! * `kind = "gp-ucb-bounds"`: the closed-form sweep `bounds.parquet` (§4.2 item 1), one row
//!   per (configuration, quantity); plots F1 (noise scales against T) and the Theorem 2 and 4
//!   bounds of F2.
//! * `kind = "gp-ucb-suite"`: the synthetic GP suite (§4.3). Each repetition draws an exact
//!   neighbouring pair f_V = h1, f_V′ = ρh1 + sqrt(1 − ρ²)h2 on a grid, runs GP-UCB on both with
//!   independent noise, and records the empirical sensitivities against Δ_λ and Δ_v (F3), the
//!   probability that λ̃ = argmax μ_T (exact, from the mechanism's weights) and the release
//!   errors against Theorems 2, 4 and 6 at every ε (F2, F4).

use super::StudyKind;
use crate::accounting::exponential::exp_mech_log_weights;
use crate::accounting::Laplace;
use crate::error::{Range, Result};
use crate::gp::{Kernel, KernelFamily};
use crate::gp_ucb::bounds::{
    greedy_gamma_bounds, lipschitz_delta_f, thm8_bound, GpUcbConfig, Profile,
};
use crate::gp_ucb::{GpUcb, NoiseFree, Release};
use crate::numeric::fmt_num;
use crate::params::{Count, OneOrMany};
use crate::rng::stream;
use crate::sim::fields::{fnv1a, Fields};
use crate::sim::plot::{self, Scale, Series};
use crate::sim::report::{figure, quantile, select, up, write_grid, Key};
use crate::sim::study::{Header, Study};
use crate::sim::table::{finite, Grid, Table};
use crate::workloads::grid_gain::{line_grid, neighbouring_pair, square_grid, GridGain};
use crate::workloads::{GainPrior, Hyper};
use rand::RngCore;
use rayon::prelude::*;
use std::path::{Path, PathBuf};

pub const BOUNDS: StudyKind = StudyKind {
    source: file!(),
    name: "gp-ucb-bounds",
    about: "spec 002's closed-form noise scales and utility bounds of private GP-UCB (F1, F2)",
    parse: |f| Ok(Box::new(parse_bounds(f)?)),
};

pub const SUITE: StudyKind = StudyKind {
    source: file!(),
    name: "gp-ucb-suite",
    about: "spec 002's synthetic GP suite: neighbouring pairs, sensitivities and release errors (F2–F4)",
    parse: |f| Ok(Box::new(parse_suite(f)?)),
};

/// The utility-bound tail a = ln 20 (a 5% Laplace or exponential-mechanism tail; §4.2).
const DEFAULT_TAIL: f64 = 2.995_732_273_553_991;

/// Algorithm 3's public constants (Assumption 2).
#[derive(Clone, Debug, PartialEq)]
pub struct Lipschitz {
    pub g_star: f64,
    pub l: f64,
    pub m: usize,
    pub lambda_min: f64,
    pub lambda_max: f64,
}

/// The closed-form sweep: the Cartesian product of the lists.
#[derive(Clone, Debug, PartialEq)]
pub struct Bounds {
    pub t: Vec<u64>,
    pub n: Vec<usize>,
    pub epsilon: Vec<f64>,
    pub delta: Vec<f64>,
    pub rho: Vec<f64>,
    pub sigma: Vec<f64>,
    pub kernels: Vec<KernelFamily>,
    /// ℓ of k2 on the 1-D grid of N points used for the greedy γ_T bound.
    pub lengthscale: f64,
    pub profiles: Vec<Profile>,
    /// The given γ_T (gamma_source = given).
    pub gamma: f64,
    /// de Freitas et al.'s (A, τ) for Algorithm 2 (unknowable in practice; P9).
    pub noise_free: (f64, f64),
    pub lipschitz: Lipschitz,
    pub tail: f64,
}

/// A grid of the suite.
#[derive(Clone, Debug, PartialEq)]
pub enum GridSpec {
    /// `line:N`: N equally spaced points on [0, 1].
    Line(usize),
    /// `square:N`: the N × N grid on [0, 1]².
    Square(usize),
}

impl GridSpec {
    fn parse(s: &str) -> Option<Self> {
        let (kind, n) = s.split_once(':')?;
        let n: usize = n.parse().ok().filter(|n| (2..=1000).contains(n))?;
        match kind {
            "line" => Some(GridSpec::Line(n)),
            "square" if n <= 40 => Some(GridSpec::Square(n)),
            _ => None,
        }
    }
    fn name(&self) -> String {
        match self {
            GridSpec::Line(n) => format!("line:{n}"),
            GridSpec::Square(n) => format!("square:{n}"),
        }
    }
    fn points(&self) -> Vec<Hyper> {
        match self {
            GridSpec::Line(n) => line_grid(*n),
            GridSpec::Square(n) => square_grid(*n),
        }
    }
}

/// The synthetic suite: the Cartesian product of grids, kernels, lengthscales, σ and δ, each
/// run on `seeds` neighbouring pairs; releases at every ε. The first entry of each list is
/// the focus configuration of the F2 and F4 plots.
#[derive(Clone, Debug, PartialEq)]
pub struct Suite {
    pub seed: u64,
    pub seeds: u64,
    pub grids: Vec<GridSpec>,
    pub kernels: Vec<KernelFamily>,
    pub lengthscales: Vec<f64>,
    pub sigmas: Vec<f64>,
    pub deltas: Vec<f64>,
    pub rho: f64,
    pub evaluations: u64,
    pub epsilons: Vec<f64>,
    pub profile: Profile,
    pub noise_free: (f64, f64),
    pub tail: f64,
}

/// A `gp-ucb-bounds` experiment file's parameters.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct BoundsParams {
    t: Option<OneOrMany<Count>>,
    n: Option<OneOrMany<Count>>,
    epsilon: Option<OneOrMany<f64>>,
    delta: Option<OneOrMany<f64>>,
    rho: Option<OneOrMany<f64>>,
    sigma: Option<OneOrMany<f64>>,
    kernels: Option<OneOrMany<String>>,
    lengthscale: Option<f64>,
    profiles: Option<OneOrMany<String>>,
    gamma: Option<f64>,
    noise_free: Option<NoiseFreeParams>,
    lipschitz: Option<LipschitzParams>,
    tail: Option<f64>,
}

/// A `gp-ucb-suite` experiment file's parameters.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SuiteParams {
    seed: Option<u64>,
    seeds: Option<Count>,
    grids: Option<OneOrMany<String>>,
    kernels: Option<OneOrMany<String>>,
    lengthscales: Option<OneOrMany<f64>>,
    sigmas: Option<OneOrMany<f64>>,
    deltas: Option<OneOrMany<f64>>,
    rho: Option<OneOrMany<f64>>,
    evaluations: Option<Count>,
    epsilons: Option<OneOrMany<f64>>,
    constants: Option<String>,
    noise_free: Option<NoiseFreeParams>,
    tail: Option<f64>,
}

/// de Freitas et al.'s constants of the noise-free gain bound.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct NoiseFreeParams {
    a: f64,
    tau: f64,
}

/// Algorithm 3's constants.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct LipschitzParams {
    g_star: f64,
    l: f64,
    m: Count,
    lambda_min: f64,
    lambda_max: f64,
}

/// A required list of integers ≥ `min`.
fn counts(
    f: &Fields,
    key: &'static str,
    given: Option<OneOrMany<Count>>,
    min: u64,
) -> Result<Vec<u64>> {
    given
        .ok_or_else(|| f.missing(key, &format!("a non-empty list of integers >= {min}")))?
        .into_vec()
        .into_iter()
        .map(|c| f.count(key, c, min))
        .collect()
}

fn kernels(f: &Fields, given: Option<OneOrMany<String>>) -> Result<Vec<KernelFamily>> {
    given
        .ok_or_else(|| f.missing("kernels", "a non-empty list of strings"))?
        .into_vec()
        .iter()
        .map(|k| KernelFamily::parse(k).map_err(|e| f.wrap(e)))
        .collect()
}

fn rhos(f: &Fields, given: Option<OneOrMany<f64>>) -> Result<Vec<f64>> {
    let v = f.numbers_in("rho", given, Range::NonNegative)?;
    match v.iter().find(|r| **r > 1.0) {
        Some(_) => Err(f.bad("rho", "numbers in [0, 1]")),
        None => Ok(v),
    }
}

fn noise_free(f: &Fields, given: Option<NoiseFreeParams>) -> Result<(f64, f64)> {
    let t =
        given.ok_or_else(|| f.missing("noise_free", "{ a = A, tau = τ } (de Freitas et al.)"))?;
    Ok((
        f.in_range("noise_free.a", t.a, Range::Positive)?,
        f.in_range("noise_free.tau", t.tau, Range::Positive)?,
    ))
}

/// Parses a `gp-ucb-bounds` file.
fn parse_bounds(f: &Fields) -> Result<Bounds> {
    let p: BoundsParams = f.read("a `gp-ucb-bounds` experiment", &[])?;
    let l = p.lipschitz.ok_or_else(|| {
        f.missing(
            "lipschitz",
            "Algorithm 3's { g_star, l, m, lambda_min, lambda_max }",
        )
    })?;
    let num = |key: &str, v: f64| f.in_range(&format!("lipschitz.{key}"), v, Range::Positive);
    let lipschitz = Lipschitz {
        g_star: num("g_star", l.g_star)?,
        l: num("l", l.l)?,
        m: f.count("lipschitz.m", l.m, 1)? as usize,
        lambda_min: num("lambda_min", l.lambda_min)?,
        lambda_max: num("lambda_max", l.lambda_max)?,
    };
    lipschitz_delta_f(
        lipschitz.g_star,
        lipschitz.l,
        lipschitz.m,
        lipschitz.lambda_min,
        lipschitz.lambda_max,
    )
    .map_err(|e| match f.table("lipschitz") {
        Ok(Some(l)) => l.wrap(e),
        _ => f.wrap(e),
    })?;
    let profiles = p
        .profiles
        .ok_or_else(|| f.missing("profiles", "a non-empty list of strings"))?
        .into_vec()
        .iter()
        .map(|p| Profile::parse(p).map_err(|e| f.wrap(e)))
        .collect::<Result<Vec<_>>>()?;
    Ok(Bounds {
        t: counts(f, "t", p.t, 2)?,
        n: counts(f, "n", p.n, 1)?
            .into_iter()
            .map(|n| n as usize)
            .collect(),
        epsilon: f.numbers_in("epsilon", p.epsilon, Range::Positive)?,
        delta: f.numbers_in("delta", p.delta, Range::OpenUnit)?,
        rho: rhos(f, p.rho)?,
        sigma: f.numbers_in("sigma", p.sigma, Range::Positive)?,
        kernels: kernels(f, p.kernels)?,
        lengthscale: f.in_range(
            "lengthscale",
            p.lengthscale
                .ok_or_else(|| f.missing("lengthscale", "ℓ of k2"))?,
            Range::Positive,
        )?,
        profiles,
        gamma: f.in_range(
            "gamma",
            p.gamma.ok_or_else(|| f.missing("gamma", "a given γ_T"))?,
            Range::NonNegative,
        )?,
        noise_free: noise_free(f, p.noise_free)?,
        lipschitz,
        tail: f.in_range("tail", p.tail.unwrap_or(DEFAULT_TAIL), Range::Positive)?,
    })
}

/// Parses a `gp-ucb-suite` file.
fn parse_suite(f: &Fields) -> Result<Suite> {
    let p: SuiteParams = f.read("a `gp-ucb-suite` experiment", &[])?;
    let grids = p
        .grids
        .ok_or_else(|| f.missing("grids", "a non-empty list of strings"))?
        .into_vec()
        .iter()
        .map(|g| {
            GridSpec::parse(g).ok_or_else(|| {
                f.bad(
                    "grids",
                    &format!("`{g}` is not `line:N` (2 ≤ N ≤ 1000) or `square:N` (N ≤ 40)"),
                )
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let rho = rhos(f, p.rho)?;
    if rho.len() != 1 {
        return Err(f.bad("rho", "one number in [0, 1]"));
    }
    Ok(Suite {
        seed: p.seed.unwrap_or(0),
        seeds: f.seeds(
            p.seeds
                .ok_or_else(|| f.missing("seeds", "the number of neighbouring pairs"))?,
        )?,
        grids,
        kernels: kernels(f, p.kernels)?,
        lengthscales: f.numbers_in("lengthscales", p.lengthscales, Range::Positive)?,
        sigmas: f.numbers_in("sigmas", p.sigmas, Range::NonNegative)?,
        deltas: f.numbers_in("deltas", p.deltas, Range::OpenUnit)?,
        rho: rho[0],
        evaluations: f.count(
            "evaluations",
            p.evaluations
                .ok_or_else(|| f.missing("evaluations", "T >= 2"))?,
            2,
        )?,
        epsilons: f.numbers_in("epsilons", p.epsilons, Range::Positive)?,
        profile: Profile::parse(p.constants.as_deref().unwrap_or("paper"))
            .map_err(|e| f.wrap(e))?,
        noise_free: noise_free(f, p.noise_free)?,
        tail: f.in_range("tail", p.tail.unwrap_or(DEFAULT_TAIL), Range::Positive)?,
    })
}

/// The kernel matrix function of a unit-variance kernel on a grid.
fn grid_kernel(
    family: KernelFamily,
    lengthscale: f64,
    grid: &[Hyper],
) -> Result<impl Fn(usize, usize) -> f64 + '_> {
    let k = Kernel::isotropic(family, grid[0].len(), lengthscale, 1.0)?;
    Ok(move |i: usize, j: usize| {
        k.eval(
            ndarray::ArrayView1::from(&grid[i][..]),
            ndarray::ArrayView1::from(&grid[j][..]),
        )
    })
}

const BOUND_QUANTITIES: [&str; 16] = [
    "beta_T",
    "beta_T1",
    "c",
    "c2",
    "q",
    "C1",
    "omega_over_T",
    "delta_lambda",
    "delta_v",
    "lap_scale_v",
    "lap_scale_nf",
    "delta_f_alg3",
    "thm2_bound",
    "thm4_bound",
    "thm6_bound",
    "thm8_bound",
];

/// Every quantity of one configuration (None where undefined).
fn bound_values(b: &Bounds, c: &GpUcbConfig, gamma: f64) -> Result<[Option<f64>; 16]> {
    let (a_const, tau) = b.noise_free;
    let l = &b.lipschitz;
    let delta_f = lipschitz_delta_f(l.g_star, l.l, l.m, l.lambda_min, l.lambda_max)?;
    let ok = |r: Result<f64>| r.ok().and_then(finite);
    Ok([
        Some(c.beta_budget()),
        Some(c.beta_after_budget()),
        Some(c.c()),
        Some(c.c2()),
        Some(c.q()),
        ok(c.c1()),
        ok(c.omega_over_t(gamma)),
        Some(c.delta_lambda()),
        ok(c.delta_v(gamma)),
        ok(c.laplace_scale_v(gamma)),
        ok(c.noise_free_scale(a_const, tau, 1)),
        Some(delta_f),
        ok(c.thm2_bound(b.tail)),
        ok(c.thm4_bound(gamma, b.tail)),
        ok(c.thm6_bound(a_const, tau, 1, b.tail)),
        ok(thm8_bound(delta_f, c.epsilon(), b.tail)),
    ])
}

/// The tidy bounds table (no randomness).
pub fn run_bounds(experiment: &str, b: &Bounds) -> Result<Table> {
    let t_max = *b.t.iter().max().expect("validated non-empty");
    // Greedy γ_T bounds on the 1-D grid of N points, once per (kernel, N, σ), for every T.
    let keys: Vec<(KernelFamily, usize, f64)> = b
        .kernels
        .iter()
        .flat_map(|&k| {
            b.n.iter()
                .flat_map(move |&n| b.sigma.iter().map(move |&s| (k, n, s)))
        })
        .collect();
    let greedy: Vec<Vec<f64>> = keys
        .par_iter()
        .map(|&(k, n, s)| {
            let grid = if n == 1 {
                vec![vec![0.0]]
            } else {
                line_grid(n)
            };
            let bounds =
                greedy_gamma_bounds(n, grid_kernel(k, b.lengthscale, &grid)?, s * s, t_max);
            bounds
        })
        .collect::<Result<_>>()?;
    let mut rows = Vec::new();
    for profile in &b.profiles {
        for (key, gammas) in keys.iter().zip(&greedy) {
            let (kernel, n, sigma) = *key;
            for &t in &b.t {
                for &eps in &b.epsilon {
                    for &delta in &b.delta {
                        for &rho in &b.rho {
                            let c = GpUcbConfig::new(n, t, eps, delta, rho, sigma, *profile)?;
                            for (source, gamma) in
                                [("given", b.gamma), ("greedy_ub", gammas[t as usize - 1])]
                            {
                                let values = bound_values(b, &c, gamma)?;
                                for (q, v) in BOUND_QUANTITIES.iter().zip(values) {
                                    rows.push(BoundRow {
                                        profile: profile.name(),
                                        kernel: kernel.name(),
                                        lengthscale: b.lengthscale,
                                        d: 1,
                                        n: n as u64,
                                        t,
                                        epsilon: eps,
                                        delta,
                                        rho,
                                        sigma,
                                        gamma_t: gamma,
                                        gamma_source: source,
                                        quantity: q,
                                        value: v,
                                    });
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    Table::from_experiment_rows(experiment, &rows)
}

/// One row of the bounds table: one quantity of one configuration.
#[derive(serde::Serialize)]
struct BoundRow<'a> {
    profile: &'a str,
    kernel: &'a str,
    lengthscale: f64,
    d: u64,
    n: u64,
    t: u64,
    epsilon: f64,
    delta: f64,
    rho: f64,
    sigma: f64,
    gamma_t: f64,
    gamma_source: &'a str,
    quantity: &'a str,
    value: Option<f64>,
}

/// One configuration of the suite.
#[derive(Clone, Debug)]
struct SuiteConfig {
    grid: GridSpec,
    kernel: KernelFamily,
    lengthscale: f64,
    sigma: f64,
    delta: f64,
}

impl SuiteConfig {
    fn key(&self) -> String {
        format!(
            "{} {} l={} sigma={} delta={}",
            self.grid.name(),
            self.kernel.name(),
            fmt_num(self.lengthscale),
            fmt_num(self.sigma),
            fmt_num(self.delta)
        )
    }
}

fn configs(s: &Suite) -> Vec<SuiteConfig> {
    let mut out = Vec::new();
    for grid in &s.grids {
        for &kernel in &s.kernels {
            for &lengthscale in &s.lengthscales {
                for &sigma in &s.sigmas {
                    for &delta in &s.deltas {
                        out.push(SuiteConfig {
                            grid: grid.clone(),
                            kernel,
                            lengthscale,
                            sigma,
                            delta,
                        });
                    }
                }
            }
        }
    }
    out
}

/// Stream tag of the suite's draws.
const SUITE_STREAM: u64 = 0x6b75_736e;

/// The rows of one (configuration, repetition): one per ε.
fn suite_rows(
    s: &Suite,
    c: &SuiteConfig,
    grid: &[Hyper],
    gamma: Option<f64>,
    rep: u64,
) -> Result<Vec<SuiteRow>> {
    let id = fnv1a(c.key().as_bytes());
    let prior = GainPrior {
        kernel: c.kernel,
        lengthscale: c.lengthscale,
        scale: 1.0,
        noise_sd: c.sigma,
        rho: s.rho,
    };
    let (f, f_n) = neighbouring_pair(
        &prior,
        grid,
        &mut stream(s.seed, &[SUITE_STREAM, id, rep, 0]),
    )?;
    let (a_const, tau) = s.noise_free;
    let tuner = GpUcb {
        evaluations: s.evaluations,
        epsilon: 1.0,
        delta: c.delta,
        release: Release::Hyperparameter,
        gamma,
        profile: s.profile,
        noise_free: (c.sigma == 0.0).then_some(NoiseFree {
            a: a_const,
            tau,
            best: false,
        }),
    };
    let run_on = |values: Vec<f64>, path: u64| {
        let w = GridGain::new(grid.to_vec(), values, prior.clone())?;
        tuner.run(
            &w,
            grid,
            &mut stream(s.seed, &[SUITE_STREAM, id, rep, path]),
        )
    };
    let run = run_on(f.clone(), 1)?;
    let run_n = run_on(f_n.clone(), 2)?;
    let config = run.config;
    let sens_mu = run
        .final_mean
        .iter()
        .zip(&run_n.final_mean)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    // The gain behind the release: max v (noisy, Theorem 3) or f(λ_T) (exact, Theorem 5).
    let last = |r: &crate::gp_ucb::Run, f: &[f64]| f[r.steps.last().expect("T >= 1").index];
    let (gain, gain_n) = if c.sigma > 0.0 {
        (run.gain, run_n.gain)
    } else {
        (last(&run, &f), last(&run_n, &f_n))
    };
    let best = f.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let max_mu = run.final_mean[run.argmax_mean];
    let mut release_rng = stream(s.seed, &[SUITE_STREAM, id, rep, 3]);
    let head = SuiteHead {
        grid: c.grid.name(),
        n: grid.len() as u64,
        kernel: c.kernel.name().into(),
        lengthscale: c.lengthscale,
        sigma: c.sigma,
        delta: c.delta,
        rho: s.rho,
        evaluations: s.evaluations,
        seed: rep,
    };
    let mut rows = Vec::new();
    for &eps in &s.epsilons {
        let c_eps = GpUcbConfig::new(
            config.n(),
            config.t(),
            eps,
            config.delta(),
            config.rho(),
            config.sigma(),
            config.profile(),
        )?;
        let log_w = exp_mech_log_weights(&run.final_mean, eps, c_eps.delta_lambda())?;
        let chosen = sample(&log_w, &mut release_rng);
        let (sensitivity, scale, bound) = match gamma {
            Some(g) => (
                c_eps.delta_v(g)?,
                c_eps.laplace_scale_v(g)?,
                c_eps.thm4_bound(g, s.tail)?,
            ),
            None => (
                c_eps.omega2(a_const, tau, grid[0].len())? + c_eps.c2(),
                c_eps.noise_free_scale(a_const, tau, grid[0].len())?,
                c_eps.thm6_bound(a_const, tau, grid[0].len(), s.tail)?,
            ),
        };
        let released = gain + Laplace::new(1.0, scale)?.noise(&mut release_rng);
        rows.push(SuiteRow {
            head: head.clone(),
            epsilon: eps,
            sens_mu,
            delta_lambda: c_eps.delta_lambda(),
            sens_gain: (gain - gain_n).abs(),
            delta_gain: sensitivity,
            p_argmax: log_w[run.argmax_mean].exp(),
            chose_argmax: chosen == run.argmax_mean,
            mu_gap: max_mu - run.final_mean[chosen],
            thm2_bound: c_eps.thm2_bound(s.tail)?,
            regret: best - f[chosen],
            gain_error: (released - best).abs(),
            gain_bound: bound,
        });
    }
    Ok(rows)
}

/// An index drawn from normalised log-weights (the tuner's sampler, re-used per ε).
fn sample(log_w: &[f64], rng: &mut dyn RngCore) -> usize {
    crate::accounting::exponential::sample_log_weights(log_w, rng)
}

/// A suite configuration and repetition: the first columns of its rows.
#[derive(Clone, serde::Serialize)]
struct SuiteHead {
    grid: String,
    n: u64,
    kernel: String,
    lengthscale: f64,
    sigma: f64,
    delta: f64,
    rho: f64,
    evaluations: u64,
    seed: u64,
}

/// One row of the suite's table: one repetition at one ε.
#[derive(serde::Serialize)]
struct SuiteRow {
    #[serde(flatten)]
    head: SuiteHead,
    epsilon: f64,
    sens_mu: f64,
    delta_lambda: f64,
    sens_gain: f64,
    delta_gain: f64,
    p_argmax: f64,
    chose_argmax: bool,
    mu_gap: f64,
    thm2_bound: f64,
    regret: f64,
    gain_error: f64,
    gain_bound: f64,
}

/// Runs the suite: configurations × repetitions in parallel, rows in canonical order.
/// The rows of configuration `ci`: every repetition (neighbouring pair), in order.
fn run_suite_config(experiment: &str, s: &Suite, ci: usize) -> Result<Table> {
    let configs = configs(s);
    let grids: Vec<Vec<Hyper>> = s.grids.iter().map(GridSpec::points).collect();
    let grid_of =
        |c: &SuiteConfig| &grids[s.grids.iter().position(|g| *g == c.grid).expect("listed")];
    let c = &configs[ci];
    let gamma = if c.sigma == 0.0 {
        None
    } else {
        let g = grid_of(c);
        let bounds = greedy_gamma_bounds(
            g.len(),
            grid_kernel(c.kernel, c.lengthscale, g)?,
            c.sigma * c.sigma,
            s.evaluations,
        )?;
        bounds.last().copied()
    };
    let rows: Vec<Vec<SuiteRow>> = (0..s.seeds)
        .into_par_iter()
        .map(|rep| suite_rows(s, c, grid_of(c), gamma, rep))
        .collect::<Result<_>>()?;
    let rows: Vec<SuiteRow> = rows.into_iter().flatten().collect();
    Table::from_experiment_rows(experiment, &rows)
}

// ---------------------------------------------------------------------------------------------
// Reports.

fn report_bounds(exp: &Header, b: &Bounds, t: &Table, dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let q = t.str("quantity")?;
    let tcol = t.u64("t")?;
    let value = t.f64("value")?;
    // The focus: the first entry of each list.
    let focus = |eps: f64, source: &str| -> Vec<(&str, Key)> {
        vec![
            ("profile", Key::Str(b.profiles[0].name().into())),
            ("kernel", Key::Str(b.kernels[0].name().into())),
            ("n", Key::Int(b.n[0] as u64)),
            ("epsilon", Key::Num(eps)),
            ("delta", Key::Num(b.delta[0])),
            ("rho", Key::Num(b.rho[0])),
            ("sigma", Key::Num(b.sigma[0])),
            ("gamma_source", Key::Str(source.into())),
        ]
    };
    let curve = |rows: &[usize], quantity: &str| -> Vec<(f64, f64)> {
        let mut pts: Vec<(f64, f64)> = rows
            .iter()
            .filter(|&&i| q[i] == quantity)
            .filter_map(|&i| value[i].map(|v| (tcol[i] as f64, v)))
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        pts
    };
    let eps0 = b.epsilon[0];
    let greedy = select(t, &focus(eps0, "greedy_ub"))?;
    let given = select(t, &focus(eps0, "given"))?;
    let setting = format!(
        "N={} ε={} δ={} ρ={} σ={} {} ℓ={} {}",
        b.n[0],
        fmt_num(eps0),
        fmt_num(b.delta[0]),
        fmt_num(b.rho[0]),
        fmt_num(b.sigma[0]),
        b.kernels[0].name(),
        fmt_num(b.lengthscale),
        b.profiles[0].name()
    );
    let series = vec![
        Series::line(
            "Δ_λ (exp. mech. sensitivity)",
            curve(&greedy, "delta_lambda"),
        ),
        Series::line(
            "Laplace scale of ṽ (greedy γ_T bound)",
            curve(&greedy, "lap_scale_v"),
        ),
        Series::line(
            format!("Laplace scale of ṽ (γ_T = {})", fmt_num(b.gamma)),
            curve(&given, "lap_scale_v"),
        ),
        Series::line(
            format!(
                "noise-free scale (A = {}, τ = {})",
                fmt_num(b.noise_free.0),
                fmt_num(b.noise_free.1)
            ),
            curve(&greedy, "lap_scale_nf"),
        ),
        Series::line("Δ_f of Algorithm 3", curve(&greedy, "delta_f_alg3")),
    ];
    let fig = figure(
        format!("F1: noise scales vs T ({setting})"),
        "budget T (GP-UCB evaluations)",
        "value (standard units)",
        series,
        None,
        true,
    );
    files.extend(plot::draw(&fig, &dir.join("f1-noise-vs-t"))?);
    for (quantity, name, stem) in [
        (
            "thm2_bound",
            "Theorem 2 bound on max μ_T − μ_T(λ̃), 5% tail",
            "f2-thm2-vs-t",
        ),
        (
            "thm4_bound",
            "Theorem 4 bound on |ṽ − f(λ*)|, greedy γ_T, 5% tail",
            "f2-thm4-vs-t",
        ),
    ] {
        let series = b
            .epsilon
            .iter()
            .map(|&e| -> Result<Series> {
                Ok(Series::line(
                    format!("ε = {}", fmt_num(e)),
                    curve(&select(t, &focus(e, "greedy_ub"))?, quantity),
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        let fig = figure(
            format!("F2: {name}"),
            "budget T (GP-UCB evaluations)",
            "bound",
            series,
            None,
            true,
        );
        files.extend(plot::draw(&fig, &dir.join(stem))?);
    }
    // The focus table: every quantity against T.
    let mut header = vec!["quantity".to_string()];
    header.extend(b.t.iter().map(|t| format!("T={t}")));
    let rows = BOUND_QUANTITIES
        .iter()
        .map(|quantity| {
            std::iter::once(quantity.to_string())
                .chain(b.t.iter().map(|&tt| {
                    let v = greedy
                        .iter()
                        .find(|&&i| q[i] == *quantity && tcol[i] == tt)
                        .and_then(|&i| value[i]);
                    up(v, 4)
                }))
                .collect()
        })
        .collect();
    let grid = Grid {
        caption: format!(
            "{}: every quantity at {setting}, greedy γ_T bound (rounded up)",
            exp.title
        ),
        header,
        rows,
    };
    write_grid(&grid, &dir.join("bounds-focus"), &mut files)?;
    Ok(files)
}

fn report_suite(exp: &Header, s: &Suite, t: &Table, dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let eps0 = s.epsilons[0];
    let col = |name: &str| t.f64(name);
    let (sens_mu, dl, sens_gain, dg) = (
        col("sens_mu")?,
        col("delta_lambda")?,
        col("sens_gain")?,
        col("delta_gain")?,
    );
    let at = |c: &SuiteConfig, eps: Option<f64>| -> Result<Vec<usize>> {
        let mut keys = vec![
            ("grid", Key::Str(c.grid.name())),
            ("kernel", Key::Str(c.kernel.name().into())),
            ("lengthscale", Key::Num(c.lengthscale)),
            ("sigma", Key::Num(c.sigma)),
            ("delta", Key::Num(c.delta)),
        ];
        keys.push(("epsilon", Key::Num(eps.unwrap_or(eps0))));
        select(t, &keys)
    };
    // F3: empirical sensitivity against its bound, per configuration (one row per pair).
    let mut rows = Vec::new();
    let mut ratios: Vec<(String, Vec<f64>)> = Vec::new();
    for c in configs(s) {
        let r = at(&c, None)?;
        let ratio = |sens: &[Option<f64>], bound: &[Option<f64>]| -> Vec<f64> {
            r.iter()
                .filter_map(|&i| Some(sens[i]? / bound[i]?))
                .collect()
        };
        let (rm, rg) = (ratio(sens_mu, dl), ratio(sens_gain, dg));
        let viol = |xs: &[f64]| xs.iter().filter(|x| **x > 1.0).count();
        let max = |xs: &[f64]| xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let n = r.len();
        // One-sided 95% upper bound on the violation rate: the exact Clopper–Pearson bound.
        let upper = |v: usize| crate::audit::clopper_pearson_upper(v, n, 0.05);
        rows.push(vec![
            c.key(),
            n.to_string(),
            format!("{:.4}", max(&rm)),
            format!(
                "{} ({:.4}; ≤ {:.4})",
                viol(&rm),
                viol(&rm) as f64 / n as f64,
                upper(viol(&rm))?
            ),
            format!("{:.4}", max(&rg)),
            format!(
                "{} ({:.4}; ≤ {:.4})",
                viol(&rg),
                viol(&rg) as f64 / n as f64,
                upper(viol(&rg))?
            ),
            fmt_num(c.delta),
        ]);
        let label = format!("σ = {}", fmt_num(c.sigma));
        match ratios.iter_mut().find(|(l, _)| *l == label) {
            Some((_, v)) => v.extend(rm),
            None => ratios.push((label, rm)),
        }
    }
    let grid = Grid {
        caption: format!(
            "{}: empirical sensitivity / bound over {} neighbouring pairs (ρ = {}, T = {}); a violation is a ratio > 1 and should occur at rate ≤ δ",
            exp.title, s.seeds, fmt_num(s.rho), s.evaluations
        ),
        header: ["configuration", "pairs", "max sup|μ_T − μ′_T| / Δ_λ", "violations of Δ_λ (rate; 95% upper)", "max gain diff / bound", "violations of the gain bound (rate; 95% upper)", "δ"].map(String::from).to_vec(),
        rows,
    };
    write_grid(&grid, &dir.join("f3-sensitivity"), &mut files)?;
    // F3 histogram: the distribution of sup|μ_T − μ′_T| / Δ_λ per σ (20 bins on [0, max]).
    let top = ratios
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .fold(0.0, f64::max)
        .max(1e-12);
    let bins = 20;
    let series = ratios
        .iter()
        .map(|(label, v)| {
            let mut counts = vec![0usize; bins];
            for x in v {
                counts[((x / top * bins as f64) as usize).min(bins - 1)] += 1;
            }
            Series::line(
                label,
                counts
                    .iter()
                    .enumerate()
                    .map(|(k, &c)| {
                        (
                            (k as f64 + 0.5) * top / bins as f64,
                            c as f64 / v.len().max(1) as f64,
                        )
                    })
                    .collect(),
            )
        })
        .collect();
    let mut fig = figure(
        "F3: sup|μ_T − μ′_T| / Δ_λ over neighbouring pairs (violation: > 1)".to_string(),
        "empirical sensitivity / Δ_λ",
        "fraction of pairs",
        series,
        None,
        false,
    );
    fig.x_scale = Scale::Linear;
    files.extend(plot::draw(&fig, &dir.join("f3-sensitivity-histogram"))?);
    // F4 and F2 at the focus configuration per grid.
    let p_arg = col("p_argmax")?;
    let (mu_gap, thm2, regret, gerr, gbound) = (
        col("mu_gap")?,
        col("thm2_bound")?,
        col("regret")?,
        col("gain_error")?,
        col("gain_bound")?,
    );
    let focus = |grid: &GridSpec| SuiteConfig {
        grid: grid.clone(),
        kernel: s.kernels[0],
        lengthscale: s.lengthscales[0],
        sigma: s.sigmas[0],
        delta: s.deltas[0],
    };
    let mut f4 = Vec::new();
    for g in &s.grids {
        let c = focus(g);
        let mut pts = Vec::new();
        for &e in &s.epsilons {
            let r = at(&c, Some(e))?;
            let v: Vec<f64> = r.iter().filter_map(|&i| p_arg[i]).collect();
            pts.push((e, v.iter().sum::<f64>() / v.len().max(1) as f64));
        }
        let n = g.points().len() as f64;
        f4.push(Series::line(format!("{} (N = {})", g.name(), n), pts));
        f4.push(Series::line(
            format!("1/N = {:.4}", 1.0 / n),
            s.epsilons.iter().map(|&e| (e, 1.0 / n)).collect(),
        ));
    }
    let c0 = focus(&s.grids[0]);
    let fig = figure(
        format!(
            "F4: P[λ̃ = argmax μ_T] vs ε ({} ℓ={} σ={} δ={} T={})",
            c0.kernel.name(),
            fmt_num(c0.lengthscale),
            fmt_num(c0.sigma),
            fmt_num(c0.delta),
            s.evaluations
        ),
        "ε of the exponential mechanism",
        "mean probability over pairs",
        f4,
        None,
        true,
    );
    files.extend(plot::draw(&fig, &dir.join("f4-argmax-probability"))?);
    // F2: empirical errors (median, 95%) against the theorem bounds, first grid.
    let mut header = vec!["ε".to_string()];
    header.extend(
        [
            "P[λ̃ = argmax μ_T]",
            "median regret f(λ*) − f(λ̃)",
            "95% of max μ_T − μ_T(λ̃)",
            "Theorem 2 bound",
            "95% of |ṽ − f(λ*)|",
            "gain bound (Thm 4, or Thm 6 if σ = 0)",
        ]
        .map(String::from),
    );
    let mut rows = Vec::new();
    let mut lines: [Vec<(f64, f64)>; 6] = Default::default();
    for &e in &s.epsilons {
        let r = at(&c0, Some(e))?;
        let vals = |c: &[Option<f64>]| -> Vec<f64> { r.iter().filter_map(|&i| c[i]).collect() };
        let p = vals(p_arg).iter().sum::<f64>() / r.len().max(1) as f64;
        let med = quantile(&mut vals(regret), 0.5);
        let (g95, b2) = (
            quantile(&mut vals(mu_gap), 0.95),
            vals(thm2).first().copied(),
        );
        let (e50, e95, b4) = (
            quantile(&mut vals(gerr), 0.5),
            quantile(&mut vals(gerr), 0.95),
            vals(gbound).first().copied(),
        );
        rows.push(vec![
            fmt_num(e),
            format!("{p:.4}"),
            format!("{med:.4}"),
            format!("{g95:.4}"),
            up(b2, 3),
            format!("{e95:.4}"),
            up(b4, 3),
        ]);
        lines[0].push((e, quantile(&mut vals(mu_gap), 0.5)));
        lines[1].push((e, g95));
        lines[2].push((e, b2.unwrap_or(f64::NAN)));
        lines[3].push((e, e50));
        lines[4].push((e, e95));
        lines[5].push((e, b4.unwrap_or(f64::NAN)));
    }
    let setting = format!(
        "{} {} ℓ={} σ={} δ={} T={}",
        c0.grid.name(),
        c0.kernel.name(),
        fmt_num(c0.lengthscale),
        fmt_num(c0.sigma),
        fmt_num(c0.delta),
        s.evaluations
    );
    write_grid(
        &Grid { caption: format!("{}: releases against their utility bounds ({setting}; a = {:.3}, bounds rounded up)", exp.title, s.tail), header, rows },
        &dir.join("f2-f4-releases"),
        &mut files,
    )?;
    let [l0, l1, l2, l3, l4, l5] = lines;
    let mk = |label: &str, points| Series::line(label, points);
    let fig = figure(
        format!("F2: max μ_T − μ_T(λ̃) vs ε ({setting})"),
        "ε",
        "standard units",
        vec![
            mk("median", l0),
            mk("95th percentile", l1),
            mk("Theorem 2 bound", l2),
        ],
        None,
        true,
    );
    files.extend(plot::draw(&fig, &dir.join("f2-hyperparameter-error"))?);
    let fig = figure(
        format!("F2: |ṽ − f(λ*)| vs ε ({setting})"),
        "ε",
        "standard units",
        vec![
            mk("median", l3),
            mk("95th percentile", l4),
            mk("utility bound", l5),
        ],
        None,
        true,
    );
    files.extend(plot::draw(&fig, &dir.join("f2-gain-error"))?);
    Ok(files)
}

/// One unit: the sweep is closed-form and takes seconds.
impl Study for Bounds {
    fn units(&self) -> Vec<String> {
        vec!["closed-form bounds".into()]
    }

    fn run_unit(&self, experiment: &str, _i: usize) -> Result<Table> {
        run_bounds(experiment, self)
    }

    fn output(&self) -> &'static str {
        "bounds.parquet"
    }

    fn report(&self, header: &Header, dir: &Path) -> Result<Vec<PathBuf>> {
        let t = Table::read_parquet(&dir.join(self.output()))?;
        report_bounds(header, self, &t, dir)
    }
}

/// One unit per configuration (its γ_T bound once, its neighbouring pairs in parallel).
impl Study for Suite {
    fn unit_count(&self) -> u64 {
        [
            self.grids.len(),
            self.kernels.len(),
            self.lengthscales.len(),
            self.sigmas.len(),
            self.deltas.len(),
        ]
        .iter()
        .fold(1u64, |n, &k| n.saturating_mul(k as u64))
    }
    fn units(&self) -> Vec<String> {
        configs(self).iter().map(SuiteConfig::key).collect()
    }

    fn run_unit(&self, experiment: &str, i: usize) -> Result<Table> {
        run_suite_config(experiment, self, i)
    }

    fn output(&self) -> &'static str {
        "suite.parquet"
    }

    fn report(&self, header: &Header, dir: &Path) -> Result<Vec<PathBuf>> {
        let t = Table::read_parquet(&dir.join(self.output()))?;
        report_suite(header, self, &t, dir)
    }
}
