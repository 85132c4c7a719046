//! One run of one of spec 001's DP-SGD tasks on the cached data: prints λ, the guarantee
//! (ε at δ = 1e-5, the without-replacement accountant), the test accuracy (and the majority
//! class's share of the test part, for scale), whether it diverged and the wall time of the run.
//!
//!     just data                                      # once: fetches and checks the data
//!     cargo run --release --example dpsgd_task -- [task] [T] [m] [η] [σ] [L] [seed]
//!
//! Defaults: adult-lr-sgd, T = 4, m = 256, η = 0.05, σ = 2, L = 1, seed 1. Tasks:
//! adult-lr-sgd, adult-lr-adam, adult-svm-sgd, fmnist-mlp1-sgd, fmnist-mlp2-sgd.

use dptune::rng::stream;
use dptune::workloads::dpsgd_tasks::{Task, TaskId};
use std::time::Instant;

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn arg<T: std::str::FromStr>(i: usize, default: T) -> dptune::Result<T> {
    match std::env::args().nth(i) {
        None => Ok(default),
        Some(s) => s
            .parse()
            .map_err(|_| dptune::Error::invalid("argument", s, "a number")),
    }
}

fn run() -> dptune::Result<()> {
    let id = TaskId::parse(&std::env::args().nth(1).unwrap_or("adult-lr-sgd".into()))?;
    let lambda = [
        arg(2, 4.0)?,
        arg(3, 256.0)?,
        arg(4, 0.05)?,
        arg(5, 2.0)?,
        arg(6, 1.0)?,
    ];
    let seed = arg(7, 1u64)?;
    let start = Instant::now();
    let task = Task::load(id)?;
    let load = start.elapsed().as_secs_f64();
    let h = task.hyperparameters(lambda)?;
    let run = task.run(&h, &mut stream(seed, &[]))?;
    println!(
        "{}: n = {}, test = {}, T = {}, m = {}, η = {}, σ = {}, L = {}, seed {seed}",
        id.name(),
        task.train_size(),
        task.test_size(),
        h.epochs,
        h.lot_size,
        h.learning_rate,
        h.noise_multiplier,
        h.clip
    );
    let labels = task.test_labels();
    let mut counts = vec![0usize; task.model().n_classes()];
    labels.iter().for_each(|&l| counts[l] += 1);
    let majority = *counts.iter().max().unwrap_or(&0) as f64 / labels.len() as f64;
    println!(
        "({:.4}, {})-DP; test accuracy {:.4} (majority class {majority:.4}); diverged {}; \
         run {:.3} s (data loaded in {load:.2} s)",
        run.epsilon, run.delta, run.test_accuracy, run.diverged, run.wall_secs
    );
    Ok(())
}
