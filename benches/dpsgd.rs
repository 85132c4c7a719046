//! DP-SGD throughput in examples per second, side by side in one run (issues 6 and 17):
//! the batched engine (dense-layer identity, `Engine::Batched`) against the per-example engine
//! it replaced (`Engine::PerExample`) and against non-private training by the same batched
//! engine (no clipping, no noise, shuffled batches). DP-SGD: Poisson sampling with expected
//! batch 256, clipping norm 1, noise multiplier 1.
//!
//! Data: the built-in digits (1797 × 64, standardised) for the 64-input models, 30 956
//! synthetic Adult-shaped rows (123 binary features, one set in each of 14 groups, as the a1a
//! one-hot encoding) for binary logistic regression, and 4096 synthetic 784-pixel rows in
//! [0, 1] (Fashion-MNIST's shape) for the 784-input ones.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use dptune::data::{builtin, Standardiser};
use dptune::learn::{Activation, DpSgdConfig, Engine, Length, Logistic, Mlp, Model, Sampling};
use dptune::rng::stream;
use ndarray::Array2;
use rand::Rng;
use std::hint::black_box;

const BATCH: usize = 256;

/// The built-in digits, standardised per column.
fn digits() -> (Array2<f64>, Vec<usize>) {
    let d = builtin("digits").expect("built-in digits");
    let x = Standardiser::fit(&d.x).apply(&d.x);
    (x, d.labels().expect("classes").to_vec())
}

/// 4096 rows of 784 uniform pixels with 10 classes.
fn pixels() -> (Array2<f64>, Vec<usize>) {
    let mut rng = stream(3, &[]);
    let x = Array2::from_shape_fn((4096, 784), |_| rng.random::<f64>());
    (x, (0..4096).map(|i| i % 10).collect())
}

/// 30 956 rows shaped like Adult's a1a encoding: 14 groups of one-hot features (123 in all).
fn adult_shaped() -> (Array2<f64>, Vec<usize>) {
    const GROUPS: [usize; 14] = [5, 8, 16, 7, 14, 6, 5, 2, 3, 3, 3, 5, 41, 5];
    let mut rng = stream(4, &[]);
    let n = 30_956;
    let mut x = Array2::zeros((n, 123));
    for mut row in x.rows_mut() {
        let mut start = 0;
        for g in GROUPS {
            row[start + rng.random_range(0..g)] = 1.0;
            start += g;
        }
    }
    (
        x,
        (0..n)
            .map(|_| usize::from(rng.random::<f64>() < 0.24))
            .collect(),
    )
}

fn config(steps: u64, private: bool, engine: Engine) -> DpSgdConfig {
    let (clip, sigma, sampling) = if private {
        (Some(1.0), 1.0, Sampling::Poisson)
    } else {
        (None, 0.0, Sampling::Shuffle)
    };
    DpSgdConfig::new(0.05, BATCH, Length::Steps(steps), clip, sigma, sampling)
        .unwrap()
        .with_engine(engine)
}

fn throughput(c: &mut Criterion) {
    let digits = digits();
    let pixels = pixels();
    let adult = adult_shaped();
    type Case<'a> = (&'a str, Box<dyn Model>, &'a (Array2<f64>, Vec<usize>), u64);
    let cases: Vec<Case> = vec![
        (
            "logistic_64_10",
            Box::new(Logistic::new(64, 10).unwrap()),
            &digits,
            40,
        ),
        (
            "mlp_64_128_10",
            Box::new(Mlp::new(&[64, 128, 10], Activation::Relu).unwrap()),
            &digits,
            40,
        ),
        (
            "logistic_adult_123_1",
            Box::new(Logistic::binary(123).unwrap()),
            &adult,
            400,
        ),
        (
            "logistic_784_10",
            Box::new(Logistic::new(784, 10).unwrap()),
            &pixels,
            20,
        ),
        (
            "mlp_784_128_64_10",
            Box::new(Mlp::new(&[784, 128, 64, 10], Activation::Relu).unwrap()),
            &pixels,
            10,
        ),
        (
            "mlp_784_1000_10",
            Box::new(Mlp::new(&[784, 1000, 10], Activation::Relu).unwrap()),
            &pixels,
            3,
        ),
    ];
    let engines = [
        ("dpsgd_batched", true, Engine::Batched),
        ("dpsgd_per_example", true, Engine::PerExample),
        ("nonprivate_batched", false, Engine::Batched),
    ];
    let mut group = c.benchmark_group("dpsgd_examples");
    group.sample_size(10);
    for (name, model, (x, labels), steps) in &cases {
        // Expected examples per run (Poisson batches vary around BATCH).
        group.throughput(Throughput::Elements(steps * BATCH as u64));
        let init = model.init(&mut stream(7, &[]));
        for (engine_name, private, engine) in engines {
            let config = config(*steps, private, engine);
            for threads in [1, 2] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let id = BenchmarkId::new(format!("{name}/{engine_name}"), threads);
                group.bench_with_input(id, &threads, |b, _| {
                    b.iter(|| {
                        pool.install(|| {
                            config
                                .train_from(
                                    model.as_ref(),
                                    init.clone(),
                                    black_box(x.view()),
                                    labels,
                                    &mut stream(8, &[]),
                                )
                                .unwrap()
                        })
                    })
                });
            }
        }
    }
    group.finish();
}

criterion_group!(benches, throughput);
criterion_main!(benches);
