//! DP-SGD throughput (issue 6), in examples per second: Poisson sampling with expected batch
//! 256, clipping norm 1, noise multiplier 1, on 1 and 2 rayon threads. Targets on 2 threads:
//! logistic regression ≥ 1 000 000 examples/s, the MLP 64-128-10 ≥ 100 000 examples/s.
//!
//! The data has the shape of scikit-learn's digits (1797 × 64, integer values 0..=16
//! standardised per column, 10 classes) but is drawn from a seeded rng, because the loader for
//! data/digits.csv is being written alongside; switch to the real set once it lands. The speed
//! depends on the shape, not the values (up to which ReLUs are active).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use dptune::learn::{Activation, DpSgdConfig, Length, Logistic, Mlp, Model, Sampling};
use dptune::rng::{normal, stream};
use ndarray::{Array2, Axis};
use rand::Rng;
use std::hint::black_box;

const STEPS: u64 = 20;
const BATCH: usize = 256;

/// Digits-shaped data: a template of pixel means per class, noisy, rounded to 0..=16, then
/// standardised per column.
fn digits_like() -> (Array2<f64>, Vec<usize>) {
    let (n, d, k) = (1797, 64, 10);
    let mut rng = stream(6, &[1797, 64]);
    let templates: Vec<f64> = (0..k * d).map(|_| 16.0 * rng.random::<f64>()).collect();
    let labels: Vec<usize> = (0..n).map(|i| i % k).collect();
    let mut x = Array2::from_shape_fn((n, d), |(i, j)| {
        (templates[labels[i] * d + j] + 3.0 * normal(&mut rng))
            .round()
            .clamp(0.0, 16.0)
    });
    for mut col in x.axis_iter_mut(Axis(1)) {
        let mean = col.mean().unwrap_or(0.0);
        let sd = col.std(0.0);
        col.mapv_inplace(|v| if sd > 0.0 { (v - mean) / sd } else { 0.0 });
    }
    (x, labels)
}

fn throughput(c: &mut Criterion) {
    let (x, labels) = digits_like();
    let config = DpSgdConfig::new(
        0.1,
        BATCH,
        Length::Steps(STEPS),
        Some(1.0),
        1.0,
        Sampling::Poisson,
    )
    .unwrap();
    let models: [(&str, Box<dyn Model>); 2] = [
        ("logistic", Box::new(Logistic::new(64, 10).unwrap())),
        (
            "mlp_64_128_10",
            Box::new(Mlp::new(&[64, 128, 10], Activation::Relu).unwrap()),
        ),
    ];
    let mut group = c.benchmark_group("dpsgd_examples");
    group.sample_size(10);
    // Expected examples per run (Poisson batches vary around BATCH).
    group.throughput(Throughput::Elements(STEPS * BATCH as u64));
    for (name, model) in &models {
        let init = model.init(&mut stream(7, &[]));
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            group.bench_with_input(BenchmarkId::new(*name, threads), &threads, |b, _| {
                b.iter(|| {
                    pool.install(|| {
                        config
                            .train_from(
                                model.as_ref(),
                                init.clone(),
                                black_box(x.view()),
                                &labels,
                                &mut stream(8, &[]),
                            )
                            .unwrap()
                    })
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, throughput);
criterion_main!(benches);
