//! DP-SGD throughput (issue 6), in examples per second: Poisson sampling with expected batch
//! 256, clipping norm 1, noise multiplier 1, on 1 and 2 rayon threads. Targets on 2 threads:
//! logistic regression ≥ 1 000 000 examples/s, the MLP 64-128-10 ≥ 100 000 examples/s.
//!
//! The data is the built-in digits set (1797 × 64), standardised per column.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use dptune::data::{builtin, Standardiser};
use dptune::learn::{Activation, DpSgdConfig, Length, Logistic, Mlp, Model, Sampling};
use dptune::rng::stream;
use ndarray::Array2;
use std::hint::black_box;

const STEPS: u64 = 20;
const BATCH: usize = 256;

/// The built-in digits, standardised per column.
fn digits() -> (Array2<f64>, Vec<usize>) {
    let d = builtin("digits").expect("built-in digits");
    let x = Standardiser::fit(&d.x).apply(&d.x);
    (x, d.labels().expect("classes").to_vec())
}

fn throughput(c: &mut Criterion) {
    let (x, labels) = digits();
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
