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
use crate::error::{fmt_num, Range, Result};
use crate::gp::{Kernel, KernelFamily};
use crate::gp_ucb::bounds::{
    greedy_gamma_bounds, lipschitz_delta_f, thm8_bound, GpUcbConfig, Profile,
};
use crate::gp_ucb::{GpUcb, NoiseFree, Release};
use crate::params::{Count, OneOrMany};
use crate::rng::stream;
use crate::sim::fields::{fnv1a, Fields};
use crate::sim::report::{quantile, select, Key};
use crate::sim::study::Study;
use crate::sim::table::{finite, Table};
use crate::workloads::grid_gain::{line_grid, neighbouring_pair, square_grid, GridGain};
use crate::workloads::{GainPrior, Hyper};
use rand::RngCore;
use rayon::prelude::*;

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
            p_argmax: libm::exp(log_w[run.argmax_mean]),
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
// Derived tables (the files declare their figures and tables over them).

/// The rows of configuration `c` at ε (every pair's).
fn config_rows(t: &Table, c: &SuiteConfig, eps: f64) -> Result<Vec<usize>> {
    select(
        t,
        &[
            ("grid", Key::Str(c.grid.name())),
            ("kernel", Key::Str(c.kernel.name().into())),
            ("lengthscale", Key::Num(c.lengthscale)),
            ("sigma", Key::Num(c.sigma)),
            ("delta", Key::Num(c.delta)),
            ("epsilon", Key::Num(eps)),
        ],
    )
}

/// One configuration (F3): the empirical sensitivities over its pairs against their bounds;
/// a violation is a ratio > 1 (its rate should be ≤ δ), with the exact one-sided 95%
/// Clopper–Pearson upper bound on the rate.
#[derive(serde::Serialize)]
struct SensitivityRow {
    configuration: String,
    grid: String,
    kernel: String,
    lengthscale: f64,
    sigma: f64,
    delta: f64,
    pairs: u64,
    /// max sup|μ_T − μ′_T| / Δ_λ.
    max_mu_ratio: f64,
    mu_violations: u64,
    mu_violation_rate: f64,
    mu_violation_upper: f64,
    /// max |gain − gain′| / its bound (Δ_v, or Ω2 + c2 where σ = 0).
    max_gain_ratio: f64,
    gain_violations: u64,
    gain_violation_rate: f64,
    gain_violation_upper: f64,
}

/// One bin of the F3 histogram: the share of a σ's pairs (over every configuration with it)
/// whose sup|μ_T − μ′_T| / Δ_λ falls in the bin (20 equal bins on [0, the largest ratio]).
#[derive(serde::Serialize)]
struct RatioBinRow {
    sigma: f64,
    bin: u64,
    ratio_low: f64,
    ratio_high: f64,
    ratio_mid: f64,
    pairs: u64,
    fraction: f64,
}

/// One (configuration, ε) (F2, F4): the releases over the pairs against the utility bounds.
#[derive(serde::Serialize)]
struct ReleaseRow {
    grid: String,
    n: u64,
    kernel: String,
    lengthscale: f64,
    sigma: f64,
    delta: f64,
    epsilon: f64,
    pairs: u64,
    /// 1/N: P[λ̃ = argmax μ_T] of a uniform choice.
    uniform: f64,
    p_argmax_mean: f64,
    regret_median: f64,
    mu_gap_median: f64,
    mu_gap_q95: f64,
    thm2_bound: Option<f64>,
    gain_error_median: f64,
    gain_error_q95: f64,
    gain_bound: Option<f64>,
    /// a of the utility bounds.
    tail: f64,
}

fn sensitivity_tables(s: &Suite, t: &Table) -> Result<(Vec<SensitivityRow>, Vec<RatioBinRow>)> {
    let col = |name: &str| t.f64(name);
    let (sens_mu, dl) = (col("sens_mu")?, col("delta_lambda")?);
    let (sens_gain, dg) = (col("sens_gain")?, col("delta_gain")?);
    let mut rows = Vec::new();
    let mut ratios: Vec<(f64, Vec<f64>)> = Vec::new();
    for c in configs(s) {
        let r = config_rows(t, &c, s.epsilons[0])?;
        let ratio = |sens: &[Option<f64>], bound: &[Option<f64>]| -> Vec<f64> {
            r.iter()
                .filter_map(|&i| Some(sens[i]? / bound[i]?))
                .collect()
        };
        let (rm, rg) = (ratio(sens_mu, dl), ratio(sens_gain, dg));
        let viol = |xs: &[f64]| xs.iter().filter(|x| **x > 1.0).count();
        let max = |xs: &[f64]| xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let n = r.len();
        let upper = |v: usize| crate::audit::clopper_pearson_upper(v, n, 0.05);
        let (vm, vg) = (viol(&rm), viol(&rg));
        rows.push(SensitivityRow {
            configuration: c.key(),
            grid: c.grid.name(),
            kernel: c.kernel.name().into(),
            lengthscale: c.lengthscale,
            sigma: c.sigma,
            delta: c.delta,
            pairs: n as u64,
            max_mu_ratio: max(&rm),
            mu_violations: vm as u64,
            mu_violation_rate: vm as f64 / n as f64,
            mu_violation_upper: upper(vm)?,
            max_gain_ratio: max(&rg),
            gain_violations: vg as u64,
            gain_violation_rate: vg as f64 / n as f64,
            gain_violation_upper: upper(vg)?,
        });
        match ratios.iter_mut().find(|(sigma, _)| *sigma == c.sigma) {
            Some((_, v)) => v.extend(rm),
            None => ratios.push((c.sigma, rm)),
        }
    }
    let top = ratios
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .fold(0.0, f64::max)
        .max(1e-12);
    let bins = 20;
    let mut hist = Vec::new();
    for (sigma, v) in &ratios {
        let mut counts = vec![0usize; bins];
        for x in v {
            counts[((x / top * bins as f64) as usize).min(bins - 1)] += 1;
        }
        for (k, &count) in counts.iter().enumerate() {
            let at = |k: f64| k * top / bins as f64;
            hist.push(RatioBinRow {
                sigma: *sigma,
                bin: k as u64,
                ratio_low: at(k as f64),
                ratio_high: at(k as f64 + 1.0),
                ratio_mid: at(k as f64 + 0.5),
                pairs: count as u64,
                fraction: count as f64 / v.len().max(1) as f64,
            });
        }
    }
    Ok((rows, hist))
}

fn release_table(s: &Suite, t: &Table) -> Result<Vec<ReleaseRow>> {
    let col = |name: &str| t.f64(name);
    let (p_arg, regret, mu_gap) = (col("p_argmax")?, col("regret")?, col("mu_gap")?);
    let (thm2, gerr, gbound) = (col("thm2_bound")?, col("gain_error")?, col("gain_bound")?);
    let n_points = t.u64("n")?;
    let mut out = Vec::new();
    for c in configs(s) {
        for &e in &s.epsilons {
            let r = config_rows(t, &c, e)?;
            let Some(&first) = r.first() else {
                continue;
            };
            let vals = |c: &[Option<f64>]| -> Vec<f64> { r.iter().filter_map(|&i| c[i]).collect() };
            out.push(ReleaseRow {
                grid: c.grid.name(),
                n: n_points[first],
                kernel: c.kernel.name().into(),
                lengthscale: c.lengthscale,
                sigma: c.sigma,
                delta: c.delta,
                epsilon: e,
                pairs: r.len() as u64,
                uniform: 1.0 / n_points[first] as f64,
                p_argmax_mean: vals(p_arg).iter().sum::<f64>() / r.len() as f64,
                regret_median: quantile(&mut vals(regret), 0.5),
                mu_gap_median: quantile(&mut vals(mu_gap), 0.5),
                mu_gap_q95: quantile(&mut vals(mu_gap), 0.95),
                thm2_bound: vals(thm2).first().copied(),
                gain_error_median: quantile(&mut vals(gerr), 0.5),
                gain_error_q95: quantile(&mut vals(gerr), 0.95),
                gain_bound: vals(gbound).first().copied(),
                tail: s.tail,
            });
        }
    }
    Ok(out)
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

    fn derive(&self, experiment: &str, merged: &Table) -> Result<Vec<(&'static str, Table)>> {
        let (sensitivity, histogram) = sensitivity_tables(self, merged)?;
        Ok(vec![
            (
                "sensitivity.parquet",
                Table::from_experiment_rows(experiment, &sensitivity)?,
            ),
            (
                "sensitivity-histogram.parquet",
                Table::from_experiment_rows(experiment, &histogram)?,
            ),
            (
                "releases.parquet",
                Table::from_experiment_rows(experiment, &release_table(self, merged)?)?,
            ),
        ])
    }

    fn derived(&self) -> Vec<&'static str> {
        vec![
            "sensitivity.parquet",
            "sensitivity-histogram.parquet",
            "releases.parquet",
        ]
    }
}
