//! DP-GIBO speed (issue 8). One DP-GIBO step (T = 1: b = d + 1 points chosen jointly by 1000
//! Adam steps on the trace, n = 1000 users evaluated there, per-user surrogate gradients,
//! clipping, noise) at d = 15 and d = 103 (the SVR example's dimension). Target: d = 15 step
//! ≤ 50 ms.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use dptune::gibo::{run, BatchMode, DpGiboConfig, SurrogateKernel};
use dptune::rng::{normal, stream};
use dptune::workloads::{Hyper, PerUserLosses};
use ndarray::Array2;
use rand::RngCore;
use std::hint::black_box;

/// n users with losses Σ_j sin(θ_j + c_ij) on [−2, 2]^d, plus N(0, 0.05²) noise.
struct Synthetic {
    shifts: Array2<f64>,
    domain: Vec<(f64, f64)>,
}

impl Synthetic {
    fn new(n: usize, d: usize) -> Self {
        let mut rng = stream(1, &[n as u64, d as u64]);
        Synthetic {
            shifts: Array2::from_shape_fn((n, d), |_| normal(&mut rng)),
            domain: vec![(-2.0, 2.0); d],
        }
    }
}

impl PerUserLosses for Synthetic {
    fn n_users(&self) -> usize {
        self.shifts.nrows()
    }
    fn domain(&self) -> &[(f64, f64)] {
        &self.domain
    }
    fn evaluation_sd(&self) -> f64 {
        0.05
    }
    fn user_losses(&self, points: &[Hyper], rng: &mut dyn RngCore) -> dptune::Result<Array2<f64>> {
        Ok(Array2::from_shape_fn(
            (self.n_users(), points.len()),
            |(i, m)| {
                let l: f64 = points[m]
                    .iter()
                    .zip(self.shifts.row(i))
                    .map(|(u, c)| libm::sin(-2.0 + 4.0 * u + c))
                    .sum();
                l + 0.05 * normal(rng)
            },
        ))
    }
}

fn one_step(c: &mut Criterion) {
    let mut group = c.benchmark_group("dp_gibo_step_n1000");
    group.sample_size(10);
    for d in [15, 103] {
        let losses = Synthetic::new(1000, d);
        let kernel = SurrogateKernel::rbf(vec![1.0; d], 1.0).unwrap();
        let mut cfg = DpGiboConfig::new(1.0, 1, 1.0, kernel, 0.05);
        cfg.batch = BatchMode::Fixed { b: d + 1 };
        let mut seed = 0;
        group.bench_with_input(BenchmarkId::new("d", d), &d, |b, _| {
            b.iter(|| {
                seed += 1;
                run(
                    black_box(&losses),
                    &cfg,
                    &mut stream(seed, &[]),
                    &mut |_| {},
                )
                .unwrap()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, one_step);
criterion_main!(benches);
