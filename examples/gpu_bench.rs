//! DP-SGD on the GPU: the throughput figures of issue 18, on the shapes of
//! `../shared/gpu.md`'s Opacus table (synthetic 60 000 × 784 data, 10 classes), full-batch
//! logistic regression against the card's memory bandwidth, and 100 candidate runs of the
//! Fashion-MNIST MLP 784-256-10 at once (10 epochs, batch 256, each with its own Poisson lots),
//! and single-run calls from several threads, each on its own handle (stream).
//!
//! `cargo run --release --features cuda --example gpu_bench` (`just test-gpu` runs it). Times are
//! wall-clock on the host around the whole training call (lots drawn on the host, upload of the
//! lots, every step, download), after one untimed warm-up call; the data upload is not timed.
//! Pass `quick` to run shorter.

use dptune::accounting::Accountant;
use dptune::data::fashion_mnist;
use dptune::learn::gpu::{GpuDevice, GpuRun, Noise};
use dptune::learn::{accuracy, Activation, DpSgdConfig, Length, Logistic, Mlp, Model, Sampling};
use dptune::rng::{normal, stream};
use ndarray::Array2;
use rand::RngCore;
use rayon::prelude::*;
use std::time::Instant;

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn synthetic(n: usize, d: usize, classes: usize) -> (Array2<f64>, Vec<usize>) {
    let mut rng = stream(7, &[n as u64, d as u64]);
    let x = Array2::from_shape_fn((n, d), |_| normal(&mut rng));
    let y = (0..n).map(|i| i % classes).collect();
    (x, y)
}

/// Seconds of one call training `runs` copies of `config` (after a warm-up call).
fn time_runs(
    dev: &GpuDevice,
    model: &dyn Model,
    data: &dptune::learn::gpu::GpuData,
    configs: &[DpSgdConfig],
) -> dptune::Result<(f64, Vec<Vec<f64>>)> {
    let call = || -> dptune::Result<(f64, Vec<Vec<f64>>)> {
        let mut rngs: Vec<_> = (0..configs.len() as u64)
            .map(|k| stream(11, &[k]))
            .collect();
        let runs = configs
            .iter()
            .zip(rngs.iter_mut())
            .map(|(c, rng)| GpuRun {
                config: c.clone(),
                init: model.init(rng),
                rng: rng as &mut dyn RngCore,
            })
            .collect();
        let t = Instant::now();
        let out = dev.train_many(model, data, runs, Noise::Device)?;
        let secs = t.elapsed().as_secs_f64();
        let params = out
            .into_iter()
            .map(|r| r.map(|t| t.params))
            .collect::<dptune::Result<Vec<_>>>()?;
        Ok((secs, params))
    };
    call()?;
    call()
}

fn run() -> dptune::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "quick");
    // Sections to run (all when none is named): throughput, full, candidates, streams.
    let named: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| *a != "quick")
        .collect();
    let wants = |s: &str| named.is_empty() || named.contains(&s);
    let t0 = Instant::now();
    let dev = GpuDevice::open()?;
    println!(
        "device: {} (opened, kernels compiled in {:.2} s)",
        dev.name(),
        t0.elapsed().as_secs_f64()
    );

    if wants("throughput") {
        throughput(&dev, quick)?;
    }
    if wants("full") {
        full_batch(&dev, quick)?;
    }
    if wants("candidates") {
        candidates(&dev, quick)?;
    }
    if wants("streams") {
        streams(&dev, quick)?;
    }
    Ok(())
}

/// 1. Examples per second, one run, fixed-size shapes of the Opacus table.
fn throughput(dev: &GpuDevice, quick: bool) -> dptune::Result<()> {
    let (x, y) = synthetic(60_000, 784, 10);
    let data = dev.upload(x.view(), &y)?;
    let models: Vec<(&str, Box<dyn Model>)> = vec![
        ("logistic 784→10", Box::new(Logistic::new(784, 10)?)),
        (
            "MLP 784-256-10",
            Box::new(Mlp::new(&[784, 256, 10], Activation::Relu)?),
        ),
    ];
    println!("\n| model | batch | DP-SGD examples/s | non-private examples/s |\n|---|---|---|---|");
    for (name, model) in &models {
        for batch in [256usize, 4096] {
            let steps = if quick {
                200
            } else if batch == 256 {
                3000
            } else {
                600
            };
            let mut rates = Vec::new();
            for private in [true, false] {
                let (clip, sigma) = if private {
                    (Some(1.0), 1.0)
                } else {
                    (None, 0.0)
                };
                let c = DpSgdConfig::new(
                    0.1,
                    batch,
                    Length::Steps(steps),
                    clip,
                    sigma,
                    Sampling::Poisson,
                )?;
                let (secs, _) = time_runs(dev, model.as_ref(), &data, &[c])?;
                rates.push(steps as f64 * batch as f64 / secs);
            }
            println!("| {name} | {batch} | {:.3e} | {:.3e} |", rates[0], rates[1]);
        }
    }

    Ok(())
}

/// 2. Full-batch logistic regression: bytes of X read per step (twice: logits and gradient).
fn full_batch(dev: &GpuDevice, quick: bool) -> dptune::Result<()> {
    println!("\n| full-batch logistic | steps | ms/step | examples/s | X read (GB/s) |\n|---|---|---|---|---|");
    let full: Vec<(&str, usize, usize, usize)> = vec![
        ("softmax 60 000 × 784 → 10", 60_000, 784, 10),
        ("binary 1 000 000 × 100", 1_000_000, 100, 2),
    ];
    for (name, n, d, classes) in full {
        let (x, y) = synthetic(n, d, classes);
        let data = dev.upload(x.view(), &y)?;
        let model: Box<dyn Model> = if classes == 2 {
            Box::new(Logistic::binary(d)?)
        } else {
            Box::new(Logistic::new(d, classes)?)
        };
        let steps = if quick { 20 } else { 200 };
        let c = DpSgdConfig::new(
            0.1,
            n,
            Length::Steps(steps),
            Some(1.0),
            1.0,
            Sampling::Poisson,
        )?;
        let (secs, _) = time_runs(dev, model.as_ref(), &data, &[c])?;
        let per_step = secs / steps as f64;
        println!(
            "| {name} | {steps} | {:.3} | {:.3e} | {:.0} |",
            1e3 * per_step,
            n as f64 / per_step,
            2.0 * (n * d * 4) as f64 / per_step / 1e9
        );
    }

    Ok(())
}

/// 3. 100 candidate runs of the Fashion-MNIST MLP at once.
fn candidates(dev: &GpuDevice, quick: bool) -> dptune::Result<()> {
    let (train, test, source) = match fashion_mnist() {
        Ok(d) => {
            let (tr, te) = (d.train, d.test);
            let (ytr, yte) = (
                tr.labels().expect("classes").to_vec(),
                te.labels().expect("classes").to_vec(),
            );
            ((tr.x, ytr), (te.x, yte), "Fashion-MNIST")
        }
        Err(e) => {
            println!("\n(Fashion-MNIST not found: {e}; synthetic data of its shape instead)");
            (
                synthetic(60_000, 784, 10),
                synthetic(10_000, 784, 10),
                "synthetic",
            )
        }
    };
    let model = Mlp::new(&[784, 256, 10], Activation::Relu)?;
    let n = train.1.len();
    let data = dev.upload(train.0.view(), &train.1)?;
    let candidates = if quick { 10 } else { 100 };
    let epochs = if quick { 1 } else { 10 };
    let configs: Vec<DpSgdConfig> = (0..candidates)
        .map(|k| {
            // Learning rates log-spaced over [0.01, 1], clips cycling over {0.5, 1, 2, 4}.
            let lr = 0.01 * libm::pow(100f64, k as f64 / (candidates.max(2) - 1) as f64);
            let clip = [0.5, 1.0, 2.0, 4.0][k % 4];
            DpSgdConfig::new(
                lr,
                256,
                Length::Epochs(epochs),
                Some(clip),
                1.1,
                Sampling::Poisson,
            )
        })
        .collect::<dptune::Result<_>>()?;
    let (secs, params) = time_runs(dev, &model, &data, &configs)?;
    let accs: Vec<f64> = params
        .par_iter()
        .map(|p| accuracy(&model, p, test.0.view(), &test.1))
        .collect::<dptune::Result<_>>()?;
    let eps: Vec<f64> = configs
        .iter()
        .map(|c| Ok(Accountant::default().epsilon(&c.privacy(n)?, 1e-5)?.epsilon))
        .collect::<dptune::Result<_>>()?;
    let best = accs.iter().cloned().fold(0.0, f64::max);
    let mean = accs.iter().sum::<f64>() / accs.len() as f64;
    println!(
        "\n{candidates} candidate DP-SGD runs, MLP 784-256-10 on {source} (n = {n}), batch 256 \
         Poisson, {epochs} epochs ({} steps each), σ = 1.1: {secs:.2} s wall for all; \
         ε at δ = 1e-5 from {:.3} to {:.3} per run; test accuracy best {best:.4}, mean {mean:.4}",
        configs[0].steps(n)?,
        eps.iter().cloned().fold(f64::INFINITY, f64::min),
        eps.iter().cloned().fold(0.0, f64::max),
    );
    Ok(())
}

/// Section 4: single-run calls (how a tuner trains its candidates, one at a time) from several
/// threads, each on its own handle, against the same calls one after another on one handle: the
/// speed-up of the process's handle pool, and a check that the parameters are the same.
fn streams(dev: &GpuDevice, quick: bool) -> dptune::Result<()> {
    let (x, y) = synthetic(60_000, 784, 10);
    let model = Mlp::new(&[784, 256, 10], Activation::Relu)?;
    let steps = if quick { 100 } else { 1000 };
    println!("\n| single-run calls, MLP 784-256-10, batch 256, {steps} steps | threads | wall (s) | runs/s | speed-up | same parameters |\n|---|---|---|---|---|---|");
    let config = |k: usize| {
        DpSgdConfig::new(
            0.05 + 0.01 * k as f64,
            256,
            Length::Steps(steps),
            Some(1.0),
            1.1,
            Sampling::Poisson,
        )
    };
    let one = |h: &GpuDevice, data: &dptune::learn::gpu::GpuData, k: usize| {
        let mut rng = stream(13, &[k as u64]);
        let run = GpuRun {
            config: config(k)?,
            init: model.init(&mut rng),
            rng: &mut rng,
        };
        dptune::Result::Ok(
            h.train_many(&model, data, vec![run], Noise::Device)?
                .pop()
                .expect("one")?
                .params,
        )
    };
    let data = dev.upload(x.view(), &y)?;
    one(dev, &data, 0)?; // warm-up
    for threads in [4usize, 8, 16] {
        let t = Instant::now();
        let serial = (0..threads)
            .map(|k| one(dev, &data, k))
            .collect::<dptune::Result<Vec<_>>>()?;
        let serial_s = t.elapsed().as_secs_f64();
        let handles = (0..threads)
            .map(|_| {
                let h = dev.sibling()?;
                let d = h.upload(x.view(), &y)?;
                dptune::Result::Ok((h, d))
            })
            .collect::<dptune::Result<Vec<_>>>()?;
        let t = Instant::now();
        let parallel = std::thread::scope(|s| {
            let jobs: Vec<_> = handles
                .iter()
                .enumerate()
                .map(|(k, (h, d))| s.spawn(move || one(h, d, k)))
                .collect();
            jobs.into_iter()
                .map(|j| j.join().expect("no panic"))
                .collect::<dptune::Result<Vec<_>>>()
        })?;
        let parallel_s = t.elapsed().as_secs_f64();
        println!(
            "| 1 handle | 1 | {serial_s:.2} | {:.2} | | |",
            threads as f64 / serial_s
        );
        println!(
            "| {threads} handles | {threads} | {parallel_s:.2} | {:.2} | {:.1}× | {} |",
            threads as f64 / parallel_s,
            serial_s / parallel_s,
            if serial == parallel { "yes" } else { "NO" }
        );
    }
    Ok(())
}
