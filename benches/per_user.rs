//! Per-user objectives of spec 004 (issue 8): one evaluation of the GP-lengthscale objective
//! (§4.2(c), d = 15, 1000 training rows, 1000 users: one 1000 × 1000 Cholesky shared by every
//! user), its exact per-user gradients, and a DP-GIBO batch of d + 1 points on the synthetic
//! RFF objective (§4.2(a), d = 15, M = 2048, n = 1000) plus drawing that objective.

use criterion::{criterion_group, criterion_main, Criterion};
use dptune::rng::stream;
use dptune::workloads::per_user::gp_lengthscales::{GpLengthscales, Inputs};
use dptune::workloads::per_user::rff::{PerUserRff, RffConfig};
use dptune::workloads::per_user::UserObjective;
use std::hint::black_box;

fn gp_lengthscales(c: &mut Criterion) {
    let mut group = c.benchmark_group("gp_lengthscales_d15_n1000");
    group.sample_size(10);
    group.bench_function("draw_data_2000", |b| {
        b.iter(|| {
            GpLengthscales::draw(15, 1000, 1000, (-2.0, 2.0), Inputs::Normal, black_box(1)).unwrap()
        })
    });
    let data = GpLengthscales::draw(15, 1000, 1000, (-2.0, 2.0), Inputs::Normal, 1).unwrap();
    let theta = vec![0.1; 15];
    group.bench_function("user_losses_one_point", |b| {
        b.iter(|| data.losses(black_box(&theta)).unwrap())
    });
    group.bench_function("user_gradients_one_point", |b| {
        b.iter(|| data.gradients(black_box(&theta)).unwrap())
    });
    group.finish();
}

fn rff(c: &mut Criterion) {
    let mut group = c.benchmark_group("per_user_rff_d15_m2048_n1000");
    group.sample_size(10);
    let config = RffConfig::default_for(15).unwrap();
    group.bench_function("draw", |b| {
        b.iter(|| PerUserRff::sample(&config, black_box(0), 0))
    });
    let f = PerUserRff::sample(&config, 0, 0);
    let mut rng = stream(2, &[]);
    let points: Vec<Vec<f64>> = (0..16)
        .map(|_| {
            (0..15)
                .map(|_| rand::Rng::random::<f64>(&mut rng))
                .collect()
        })
        .collect();
    group.bench_function("user_losses_16_points", |b| {
        b.iter(|| {
            points
                .iter()
                .map(|p| f.losses(black_box(p)).unwrap())
                .collect::<Vec<_>>()
        })
    });
    group.bench_function("user_gradients_one_point", |b| {
        b.iter(|| f.gradients(black_box(&points[0])).unwrap())
    });
    group.finish();
}

criterion_group!(benches, gp_lengthscales, rff);
criterion_main!(benches);
