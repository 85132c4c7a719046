//! DP-SGD throughput against non-private training of the same model and batch, interleaved:
//! each round trains once privately (Poisson lots of expected size 256, clip 1, σ = 1) and once
//! non-privately (shuffled batches of 256), and the best of 7 rounds is kept for each. On a
//! shared machine whose speed drifts this ratio is steadier than two separate criterion runs
//! (`benches/dpsgd.rs` has the absolute numbers and the per-example engine).
//!
//!     cargo run --release --example dpsgd_ratio [-- name-filter]

use dptune::data::{builtin, Standardiser};
use dptune::learn::{Activation, DpSgdConfig, Length, Logistic, Mlp, Model, Sampling};
use dptune::rng::stream;
use ndarray::Array2;
use rand::Rng;
use std::time::Instant;

fn main() -> dptune::Result<()> {
    let filter = std::env::args().nth(1).unwrap_or_default();
    let d = builtin("digits")?;
    let digits = (
        Standardiser::fit(&d.x).apply(&d.x),
        d.labels().unwrap().to_vec(),
    );
    let mut rng = stream(3, &[]);
    let pixels = Array2::from_shape_fn((4096, 784), |_| rng.random::<f64>());
    let pixels = (pixels, (0..4096).map(|i| i % 10).collect::<Vec<_>>());
    // Adult's shape: 14 one-hot groups, 123 binary features, 30 956 rows.
    let mut adult = Array2::<f64>::zeros((30_956, 123));
    for mut row in adult.rows_mut() {
        let mut start = 0;
        for g in [5, 8, 16, 7, 14, 6, 5, 2, 3, 3, 3, 5, 41, 5] {
            row[start + rng.random_range(0..g)] = 1.0;
            start += g;
        }
    }
    let adult_labels = (0..30_956)
        .map(|_| usize::from(rng.random::<f64>() < 0.24))
        .collect();
    let adult = (adult, adult_labels);
    type Case<'a> = (&'a str, Box<dyn Model>, &'a (Array2<f64>, Vec<usize>), u64);
    let cases: Vec<Case> = vec![
        (
            "logistic 64→10",
            Box::new(Logistic::new(64, 10)?),
            &digits,
            400,
        ),
        (
            "logistic Adult 123→1",
            Box::new(Logistic::binary(123)?),
            &adult,
            400,
        ),
        (
            "MLP 64-128-10",
            Box::new(Mlp::new(&[64, 128, 10], Activation::Relu)?),
            &digits,
            200,
        ),
        (
            "logistic 784→10",
            Box::new(Logistic::new(784, 10)?),
            &pixels,
            100,
        ),
        (
            "MLP 784-128-64-10",
            Box::new(Mlp::new(&[784, 128, 64, 10], Activation::Relu)?),
            &pixels,
            40,
        ),
        (
            "MLP 784-1000-10",
            Box::new(Mlp::new(&[784, 1000, 10], Activation::Relu)?),
            &pixels,
            8,
        ),
    ];
    for (name, model, (x, labels), steps) in cases {
        if !name.contains(filter.as_str()) {
            continue;
        }
        let init = model.init(&mut stream(7, &[]));
        let private = DpSgdConfig::new(
            0.05,
            256,
            Length::Steps(steps),
            Some(1.0),
            1.0,
            Sampling::Poisson,
        )?;
        let plain = DpSgdConfig::new(
            0.05,
            256,
            Length::Steps(steps),
            None,
            0.0,
            Sampling::Shuffle,
        )?;
        let mut best = [f64::MAX; 2];
        for _ in 0..7 {
            for (b, config) in best.iter_mut().zip([&private, &plain]) {
                let t = Instant::now();
                config.train_from(
                    model.as_ref(),
                    init.clone(),
                    x.view(),
                    labels,
                    &mut stream(8, &[]),
                )?;
                *b = b.min(t.elapsed().as_secs_f64());
            }
        }
        let examples = (steps * 256) as f64;
        println!(
            "{name:22} DP-SGD {:>9.0} ex/s   non-private {:>9.0} ex/s   ratio {:.2}",
            examples / best[0],
            examples / best[1],
            best[1] / best[0]
        );
    }
    Ok(())
}
