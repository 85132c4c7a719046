//! The GPU engine (feature `cuda`) against the CPU engine. Run with `just test-gpu` on a machine
//! with a GPU. Where none can be opened each test says so and passes, unless
//! `DPTUNE_REQUIRE_GPU=1` (set by `just test-gpu`), which makes a missing GPU a failure.
#![cfg(feature = "cuda")]

use dptune::learn::gpu::{GpuDevice, GpuRun, Noise};
use dptune::learn::{
    accuracy, Activation, DpSgdConfig, Length, LinearSvm, Logistic, Mlp, Model, OnDivergence,
    Optimizer, Sampling, WeightPenalty,
};
use dptune::rng::{philox_normal, stream};
use ndarray::Array2;
use rand::RngCore;

fn gpu() -> Option<GpuDevice> {
    match GpuDevice::open() {
        Ok(d) => Some(d),
        Err(e) => {
            assert!(
                std::env::var("DPTUNE_REQUIRE_GPU").as_deref() != Ok("1"),
                "DPTUNE_REQUIRE_GPU=1 but no GPU: {e}"
            );
            eprintln!("GPU test not run: {e}");
            None
        }
    }
}

/// `n` rows of `d` features in three loose clusters (labels 0..classes).
fn data(n: usize, d: usize, classes: usize, seed: u64) -> (Array2<f64>, Vec<usize>) {
    let mut rng = stream(seed, &[1]);
    let labels: Vec<usize> = (0..n).map(|i| i % classes).collect();
    let x = Array2::from_shape_fn((n, d), |(i, j)| {
        let centre = if j % classes == labels[i] { 1.5 } else { 0.0 };
        centre + dptune::rng::normal(&mut rng)
    });
    (x, labels)
}

fn config(
    lr: f64,
    batch: usize,
    steps: u64,
    clip: Option<f64>,
    sigma: f64,
    s: Sampling,
) -> DpSgdConfig {
    DpSgdConfig::new(lr, batch, Length::Steps(steps), clip, sigma, s).unwrap()
}

/// Trains each (model config) on the CPU and, all at once, on the GPU with the CPU's noise;
/// the parameters agree to f32 accuracy.
fn assert_same_as_cpu(dev: &GpuDevice, model: &dyn Model, configs: &[DpSgdConfig], seed: u64) {
    let (x, y) = data(300, model.n_features(), model.n_classes(), seed);
    let gpu_data = dev.upload(x.view(), &y).unwrap();
    let mut cpu = Vec::new();
    let mut rngs: Vec<_> = (0..configs.len() as u64)
        .map(|k| stream(seed, &[2, k]))
        .collect();
    let mut inits = Vec::new();
    for (k, c) in configs.iter().enumerate() {
        let mut rng = stream(seed, &[2, k as u64]);
        let init = model.init(&mut rng);
        inits.push(init.clone());
        cpu.push(c.train_from(model, init, x.view(), &y, &mut rng).unwrap());
        model.init(&mut rngs[k]);
    }
    let runs = configs
        .iter()
        .zip(inits)
        .zip(rngs.iter_mut())
        .map(|((c, init), rng)| GpuRun {
            config: c.clone(),
            init,
            rng: rng as &mut dyn RngCore,
        })
        .collect();
    let out = dev.train_many(model, &gpu_data, runs, Noise::Host).unwrap();
    for (k, (cpu, gpu)) in cpu.iter().zip(out).enumerate() {
        let gpu = gpu.unwrap();
        let scale = cpu.params.iter().fold(1.0f64, |m, v| m.max(v.abs()));
        let worst = cpu
            .params
            .iter()
            .zip(&gpu.params)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(
            worst <= 2e-4 * scale,
            "run {k} ({:?}): max |cpu − gpu| = {worst:e} (scale {scale})",
            configs[k]
        );
        assert_eq!(cpu.loss_trace.len(), gpu.loss_trace.len());
        for (a, b) in cpu.loss_trace.iter().zip(&gpu.loss_trace) {
            assert!((a - b).abs() <= 1e-3 * (1.0 + a.abs()), "loss {a} vs {b}");
        }
    }
}

#[test]
fn the_gpu_trains_as_the_cpu_does_given_the_same_noise() {
    let Some(dev) = gpu() else { return };
    use Sampling::{Poisson, WithoutReplacement as Wor};
    // Several runs per call with different lots, clips, noise, rates and lengths: padding,
    // strides and runs that finish early are exercised together.
    let mixed = [
        config(0.5, 32, 25, Some(0.5), 1.0, Poisson),
        config(0.2, 64, 20, Some(5.0), 0.5, Wor),
        config(0.1, 17, 30, None, 0.0, Poisson),
        config(1.0, 300, 10, Some(0.1), 2.0, Poisson),
    ];
    let softmax = Logistic::new(12, 3).unwrap();
    assert_same_as_cpu(&dev, &softmax, &mixed, 1);
    let relu = Mlp::new(&[12, 40, 3], Activation::Relu).unwrap();
    assert_same_as_cpu(&dev, &relu, &mixed, 2);
    let tanh = Mlp::new(&[12, 24, 6, 3], Activation::Tanh).unwrap();
    assert_same_as_cpu(&dev, &tanh, &mixed, 3);
    let binary = Logistic::binary(12).unwrap();
    assert_same_as_cpu(&dev, &binary, &mixed, 4);
    let svm = LinearSvm::new(12, 1.0, WeightPenalty::None).unwrap();
    assert_same_as_cpu(&dev, &svm, &mixed, 5);
    // Adam, and one run alone on the full batch (the data read in place).
    let adam = [config(0.01, 64, 20, Some(1.0), 1.0, Wor)
        .with_optimizer(Optimizer::ADAM)
        .unwrap()];
    assert_same_as_cpu(&dev, &relu, &adam, 6);
    let full = [config(0.5, 300, 15, Some(1.0), 1.0, Poisson)];
    assert_same_as_cpu(&dev, &softmax, &full, 7);
    assert_same_as_cpu(&dev, &relu, &full, 8);
}

#[test]
fn device_noise_is_the_host_philox_normal() {
    let Some(dev) = gpu() else { return };
    for key in [0u64, 0xdead_beef_0123_4567] {
        let z = dev.normals(key, 10_001).unwrap();
        for (j, &v) in z.iter().enumerate() {
            let want = philox_normal(key, j as u64);
            assert!(
                (f64::from(v) - want).abs() <= 1e-6 * (1.0 + want.abs()),
                "{j}: {v} vs {want}"
            );
        }
    }
}

/// One example per lot, no noise, learning rate 1: each step moves the parameters by exactly the
/// clipped gradient, whose norm must not exceed C (the sensitivity the noise is calibrated to).
#[test]
fn every_clipped_gradient_is_within_the_clip_norm() {
    let Some(dev) = gpu() else { return };
    let model = Mlp::new(&[12, 32, 3], Activation::Relu).unwrap();
    let (mut x, y) = data(64, 12, 3, 9);
    x *= 40.0; // large inputs: every gradient is clipped
    let gpu_data = dev.upload(x.view(), &y).unwrap();
    let clip = 0.25;
    let mut rngs: Vec<_> = (0..64u64).map(|k| stream(9, &[k])).collect();
    let runs: Vec<GpuRun> = rngs
        .iter_mut()
        .map(|rng| {
            let init = model.init(rng);
            GpuRun {
                config: config(1.0, 1, 1, Some(clip), 0.0, Sampling::WithoutReplacement),
                init,
                rng: rng as &mut dyn RngCore,
            }
        })
        .collect();
    let inits: Vec<Vec<f64>> = runs.iter().map(|r| r.init.clone()).collect();
    let out = dev
        .train_many(&model, &gpu_data, runs, Noise::Device)
        .unwrap();
    let mut clipped = 0;
    for (init, t) in inits.iter().zip(out) {
        let t = t.unwrap();
        // f32 parameters: the difference carries their rounding, not the gradient's.
        let step: f64 = init
            .iter()
            .zip(&t.params)
            .map(|(a, b)| (f64::from(*a as f32) - b).powi(2))
            .sum::<f64>()
            .sqrt();
        assert!(
            step <= clip * (1.0 + 1e-4),
            "a clipped step of norm {step} > C = {clip}"
        );
        clipped += usize::from(step >= 0.9 * clip);
    }
    assert!(
        clipped >= 32,
        "only {clipped} of 64 gradients were long enough to be clipped"
    );
}

/// With the device's own noise, test accuracies over seeds match the CPU engine's.
#[test]
fn accuracy_over_seeds_matches_the_cpu() {
    let Some(dev) = gpu() else { return };
    let model = Logistic::new(20, 3).unwrap();
    let (x, y) = data(2000, 20, 3, 11);
    let (xt, yt) = data(1000, 20, 3, 12);
    let gpu_data = dev.upload(x.view(), &y).unwrap();
    let c = DpSgdConfig::new(
        0.5,
        100,
        Length::Epochs(2),
        Some(1.0),
        2.0,
        Sampling::Poisson,
    )
    .unwrap();
    let seeds = 24u64;
    let cpu: Vec<f64> = (0..seeds)
        .map(|s| {
            let t = c.train(&model, x.view(), &y, &mut stream(s, &[3])).unwrap();
            accuracy(&model, &t.params, xt.view(), &yt).unwrap()
        })
        .collect();
    let mut rngs: Vec<_> = (0..seeds).map(|s| stream(1000 + s, &[3])).collect();
    let runs = rngs
        .iter_mut()
        .map(|rng| {
            let init = model.init(rng);
            GpuRun {
                config: c.clone(),
                init,
                rng: rng as &mut dyn RngCore,
            }
        })
        .collect();
    let gpu: Vec<f64> = dev
        .train_many(&model, &gpu_data, runs, Noise::Device)
        .unwrap()
        .into_iter()
        .map(|t| accuracy(&model, &t.unwrap().params, xt.view(), &yt).unwrap())
        .collect();
    let stats = |v: &[f64]| {
        let m = v.iter().sum::<f64>() / v.len() as f64;
        let var = v.iter().map(|a| (a - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64;
        (m, var)
    };
    let ((mc, vc), (mg, vg)) = (stats(&cpu), stats(&gpu));
    let se = ((vc + vg) / seeds as f64).sqrt();
    assert!(
        (mc - mg).abs() <= 4.0 * se + 0.005,
        "mean accuracy cpu {mc:.4} vs gpu {mg:.4} (se {se:.4})"
    );
    assert!(
        vg <= 4.0 * vc + 1e-4 && vc <= 4.0 * vg + 1e-4,
        "variances {vc:e} vs {vg:e}"
    );
}

#[test]
fn a_diverging_run_stops_or_fails_as_on_the_cpu() {
    let Some(dev) = gpu() else { return };
    let model = Mlp::new(&[12, 16, 3], Activation::Relu).unwrap();
    let (x, y) = data(200, 12, 3, 13);
    let gpu_data = dev.upload(x.view(), &y).unwrap();
    let wild = config(1e30, 50, 20, None, 0.0, Sampling::Poisson);
    let calm = config(0.1, 50, 20, Some(1.0), 1.0, Sampling::Poisson);
    let mut rngs: Vec<_> = (0..3u64).map(|k| stream(13, &[k])).collect();
    let cfgs = [wild.clone().with_divergence(OnDivergence::Stop), wild, calm];
    let runs = cfgs
        .iter()
        .zip(rngs.iter_mut())
        .map(|(c, rng)| GpuRun {
            config: c.clone(),
            init: model.init(rng),
            rng: rng as &mut dyn RngCore,
        })
        .collect();
    let mut out = dev
        .train_many(&model, &gpu_data, runs, Noise::Device)
        .unwrap()
        .into_iter();
    let stopped = out.next().unwrap().unwrap();
    assert!(stopped.diverged && stopped.params.iter().all(|v| v.is_finite()));
    assert!(stopped.loss_trace.len() < 20);
    let failed = out.next().unwrap().unwrap_err().to_string();
    assert!(failed.contains("diverged"), "{failed}");
    let calm = out.next().unwrap().unwrap();
    assert!(!calm.diverged && calm.loss_trace.len() == 20);
}

#[test]
fn models_the_gpu_cannot_train_are_refused_clearly() {
    let Some(dev) = gpu() else { return };
    let model = LinearSvm::new(12, 1.0, WeightPenalty::HalfSquaredNorm).unwrap();
    let (x, y) = data(50, 12, 2, 14);
    let gpu_data = dev.upload(x.view(), &y).unwrap();
    let mut rng = stream(14, &[]);
    let run = GpuRun {
        config: config(0.1, 10, 5, Some(1.0), 1.0, Sampling::Poisson),
        init: model.init(&mut rng),
        rng: &mut rng,
    };
    let e = dev
        .train_many(&model, &gpu_data, vec![run], Noise::Device)
        .expect_err("refused")
        .to_string();
    assert!(e.contains("regulariser") && e.contains("cpu"), "{e}");
}

/// The `device` setting of the workloads: `cuda` and `auto` train on the GPU here.
#[test]
fn the_device_setting_trains_on_the_gpu() {
    use dptune::learn::Device;
    if gpu().is_none() {
        return;
    }
    assert!(Device::Cuda.uses_gpu().unwrap() && Device::Auto.uses_gpu().unwrap());
    let model = Logistic::new(12, 3).unwrap();
    let (x, y) = data(300, 12, 3, 15);
    let c = config(0.5, 32, 40, Some(1.0), 1.0, Sampling::Poisson);
    let t = Device::Cuda
        .train(&c, &model, x.view(), &y, &mut stream(15, &[]))
        .unwrap();
    assert_eq!(t.loss_trace.len(), 40);
    // f32 parameters: a GPU run's values are f32 values.
    assert!(t.params.iter().all(|&v| f64::from(v as f32) == v));
    assert!(accuracy(&model, &t.params, x.view(), &y).unwrap() > 0.6);
}

/// Runs trained together in one GPU call are the runs trained one call each (the same lots and
/// noise; only the products' blocking may differ).
#[test]
fn runs_trained_together_match_runs_trained_alone() {
    use dptune::learn::Device;
    if gpu().is_none() {
        return;
    }
    let model = Mlp::new(&[12, 40, 3], Activation::Relu).unwrap();
    let (x, y) = data(300, 12, 3, 16);
    let configs = [
        config(0.3, 32, 30, Some(1.0), 1.0, Sampling::Poisson),
        config(0.1, 64, 20, Some(0.5), 2.0, Sampling::WithoutReplacement),
        config(0.5, 16, 40, Some(2.0), 0.5, Sampling::Poisson),
    ];
    let mut rngs: Vec<_> = (0..3u64).map(|k| stream(16, &[k])).collect();
    let runs = configs
        .iter()
        .zip(rngs.iter_mut())
        .map(|(c, rng)| {
            let init = model.init(rng);
            (c.clone(), init, rng as &mut dyn RngCore)
        })
        .collect();
    let together = Device::Cuda.train_many(&model, x.view(), &y, runs).unwrap();
    for (k, (c, t)) in configs.iter().zip(together).enumerate() {
        let t = t.unwrap();
        let alone = Device::Cuda
            .train(c, &model, x.view(), &y, &mut stream(16, &[k as u64]))
            .unwrap();
        let scale = alone.params.iter().fold(1.0f64, |m, v| m.max(v.abs()));
        let worst = alone
            .params
            .iter()
            .zip(&t.params)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(worst <= 1e-4 * scale, "run {k}: {worst:e}");
    }
}

/// One run on one handle, as a single-run call: its parameters.
fn train_alone(
    dev: &GpuDevice,
    model: &dyn Model,
    x: &Array2<f64>,
    y: &[usize],
    c: &DpSgdConfig,
    key: u64,
) -> Vec<f64> {
    let data = dev.upload(x.view(), y).unwrap();
    let mut rng = stream(17, &[key]);
    let init = model.init(&mut rng);
    let run = GpuRun {
        config: c.clone(),
        init,
        rng: &mut rng,
    };
    let mut out = dev
        .train_many(model, &data, vec![run], Noise::Device)
        .unwrap();
    out.pop().unwrap().unwrap().params
}

/// Handles on several threads at once (each its own stream) give, to the last bit, the
/// parameters one handle gives training the same runs one after another: the result of a
/// study does not depend on its thread count.
#[test]
fn handles_on_several_threads_give_the_numbers_of_one_handle() {
    let Some(dev) = gpu() else { return };
    let model = Mlp::new(&[12, 40, 3], Activation::Relu).unwrap();
    let (x, y) = data(3000, 12, 3, 17);
    let configs: Vec<DpSgdConfig> = (0..6)
        .map(|k| {
            config(
                0.1 + 0.1 * k as f64,
                64,
                200,
                Some(1.0),
                1.0,
                Sampling::Poisson,
            )
        })
        .collect();
    let serial: Vec<Vec<f64>> = configs
        .iter()
        .enumerate()
        .map(|(k, c)| train_alone(&dev, &model, &x, &y, c, k as u64))
        .collect();
    let handles: Vec<GpuDevice> = (0..configs.len()).map(|_| dev.sibling().unwrap()).collect();
    let parallel: Vec<Vec<f64>> = std::thread::scope(|s| {
        let jobs: Vec<_> = handles
            .iter()
            .zip(&configs)
            .enumerate()
            .map(|(k, (h, c))| {
                let (model, x, y) = (&model, &x, &y);
                s.spawn(move || train_alone(h, model, x, y, c, k as u64))
            })
            .collect();
        jobs.into_iter().map(|j| j.join().unwrap()).collect()
    });
    for (k, (a, b)) in serial.iter().zip(&parallel).enumerate() {
        assert!(
            a == b,
            "run {k}: the parallel handles changed the parameters"
        );
    }
}

/// Data uploaded by one handle is refused by another (its buffers live on the other stream).
#[test]
fn data_of_another_handle_is_refused() {
    let Some(dev) = gpu() else { return };
    let other = dev.sibling().unwrap();
    let model = Logistic::new(12, 3).unwrap();
    let (x, y) = data(100, 12, 3, 18);
    let data = other.upload(x.view(), &y).unwrap();
    let mut rng = stream(18, &[]);
    let init = model.init(&mut rng);
    let c = config(0.1, 16, 5, Some(1.0), 1.0, Sampling::Poisson);
    let run = GpuRun {
        config: c,
        init,
        rng: &mut rng,
    };
    let e = match dev.train_many(&model, &data, vec![run], Noise::Device) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("data of another handle was accepted"),
    };
    assert!(e.contains("another GPU handle"), "{e}");
}

/// `device = "cuda"` from several threads (the process's pool lends each its own handle):
/// the same numbers as from one thread.
#[test]
fn the_device_setting_from_several_threads_gives_the_numbers_of_one() {
    use dptune::learn::Device;
    if gpu().is_none() {
        return;
    }
    let model = Mlp::new(&[12, 40, 3], Activation::Relu).unwrap();
    let (x, y) = data(2000, 12, 3, 19);
    let configs: Vec<DpSgdConfig> = (0..8)
        .map(|k| {
            config(
                0.05 + 0.05 * k as f64,
                32,
                150,
                Some(1.0),
                1.0,
                Sampling::WithoutReplacement,
            )
        })
        .collect();
    let train = |k: usize| {
        Device::Cuda
            .train(
                &configs[k],
                &model,
                x.view(),
                &y,
                &mut stream(19, &[k as u64]),
            )
            .unwrap()
            .params
    };
    let serial: Vec<Vec<f64>> = (0..configs.len()).map(train).collect();
    let parallel: Vec<Vec<f64>> = std::thread::scope(|s| {
        let jobs: Vec<_> = (0..configs.len())
            .map(|k| s.spawn(move || train(k)))
            .collect();
        jobs.into_iter().map(|j| j.join().unwrap()).collect()
    });
    assert!(
        serial == parallel,
        "training from several threads changed the parameters"
    );
}
