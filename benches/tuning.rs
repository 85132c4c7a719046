//! Tuning speed (issue 4): one synthetic-GP evaluation in d = 10 (256 random features), and one
//! whole repeat-and-select tuning run with E[K] = 100 (logarithmic K, best of K noisy runs on a
//! d = 10 objective over 1000 candidates), including drawing K and the candidates; and one
//! private GP-UCB step (issue 5) after n = 200 observations on a 20 × 20 grid: the posterior on
//! the grid, the UCB argmax, and the one-point update.

use criterion::{criterion_group, criterion_main, Criterion};
use dptune::gp::KernelFamily;
use dptune::gp_ucb::Search;
use dptune::rng::stream;
use dptune::tuners::{self, Tuner};
use dptune::workloads::grid_gain::square_grid;
use dptune::workloads::synthetic_gp::{GpObjective, ScoreRelease, SyntheticGp};
use dptune::workloads::{GainPrior, Space};
use rand::Rng;
use std::hint::black_box;

fn gp_eval(c: &mut Criterion) {
    let f = GpObjective::sample(10, KernelFamily::Rbf, 0.3, 1.0, 256, 1, 0).unwrap();
    let x = vec![0.37; 10];
    c.bench_function("synthetic_gp_eval_d10_256_features", |b| {
        b.iter(|| f.eval(black_box(&x)))
    });
}

fn tuning_run(c: &mut Criterion) {
    let f = GpObjective::sample(10, KernelFamily::Rbf, 0.3, 1.0, 256, 1, 0).unwrap();
    let space = Space::random_grid(10, 1000, &mut stream(2, &[])).unwrap();
    let release = ScoreRelease::Gaussian {
        sensitivity: 0.01,
        sigma: 0.05,
    };
    let w = SyntheticGp::new(f, space, release).unwrap();
    let params: toml::Table = toml::from_str("dist = \"logarithmic\"\nmean = 100").unwrap();
    let tuner: Box<dyn Tuner> = tuners::build("papernot-steinke", &params).unwrap();
    let mut rng = stream(3, &[]);
    c.bench_function("repeat_select_tuning_run_mean_100_d10", |b| {
        b.iter(|| tuner.tune(black_box(&w), &mut rng).unwrap())
    });
}

fn gp_ucb_step(c: &mut Criterion) {
    let prior = GainPrior {
        kernel: KernelFamily::Matern52,
        lengthscale: 0.2,
        scale: 1.0,
        noise_sd: 0.1,
        rho: 0.99,
    };
    let grid = square_grid(20);
    let mut search = Search::new(prior.kernel, prior.lengthscale, &grid, 0.01).unwrap();
    let mut rng = stream(4, &[]);
    for _ in 0..200 {
        let i = rng.random_range(0..grid.len());
        search.observe(i, libm::sin(3.0 * grid[i][0])).unwrap();
    }
    c.bench_function("gp_ucb_step_n200_grid400", |b| {
        b.iter_batched(
            || search.clone(),
            |mut s| {
                let step = s.next(black_box(30.0)).unwrap();
                s.observe(step.index, 0.5).unwrap();
            },
            criterion::BatchSize::LargeInput,
        )
    });
}

criterion_group!(benches, gp_eval, tuning_run, gp_ucb_step);
criterion_main!(benches);
