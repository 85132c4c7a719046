//! Tuning speed (issue 4): one synthetic-GP evaluation in d = 10 (256 random features), and one
//! whole repeat-and-select tuning run with E[K] = 100 (logarithmic K, best of K noisy runs on a
//! d = 10 objective over 1000 candidates), including drawing K and the candidates.

use criterion::{criterion_group, criterion_main, Criterion};
use dptune::gp::KernelFamily;
use dptune::rng::stream;
use dptune::tuners::{self, Tuner};
use dptune::workloads::synthetic_gp::{GpObjective, ScoreRelease, SyntheticGp};
use dptune::workloads::Space;
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

criterion_group!(benches, gp_eval, tuning_run);
criterion_main!(benches);
