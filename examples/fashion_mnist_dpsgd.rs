//! One DP-SGD run on Fashion-MNIST: the MLP 784-128-64-10 (spec 001's second MNIST model), lots
//! of 256 drawn without replacement, clip 1, σ = 1.1, δ = 1e-5. Prints the guarantee, the test
//! accuracy and the wall time.
//!
//!     just data                                      # once: fetches and checks the data
//!     cargo run --release --example fashion_mnist_dpsgd -- [epochs] [learning rate] [seed]

use dptune::accounting::Accountant;
use dptune::data::fashion_mnist;
use dptune::learn::{accuracy, Activation, DpSgdConfig, Length, Mlp, Model, Sampling};
use dptune::rng::stream;
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
    let (epochs, lr, seed) = (arg(1, 10u64)?, arg(2, 0.5f64)?, arg(3, 1u64)?);
    let data = fashion_mnist()?;
    let (train, test) = (&data.train, &data.test);
    let labels = train.labels().expect("classes");
    let model = Mlp::new(&[784, 128, 64, 10], Activation::Relu)?;
    let config = DpSgdConfig::new(
        lr,
        256,
        Length::Epochs(epochs),
        Some(1.0),
        1.1,
        Sampling::WithoutReplacement,
    )?;
    let n = labels.len();
    let eps = Accountant::default().epsilon(&config.privacy(n)?, 1e-5)?;
    println!(
        "DP-SGD, MLP 784-128-64-10, n = {n}, lots of 256 without replacement, {} steps, \
         clip 1, σ = 1.1, lr = {lr}: ({:.3}, 1e-5)-DP (replace-one)",
        config.steps(n)?,
        eps.epsilon
    );
    let start = Instant::now();
    let trained = config.train(&model, train.x.view(), labels, &mut stream(seed, &[]))?;
    let wall = start.elapsed().as_secs_f64();
    let acc = accuracy(
        &model,
        &trained.params,
        test.x.view(),
        test.labels().expect("classes"),
    )?;
    println!(
        "test accuracy {:.4} on {} images; training {wall:.1} s ({:.0} examples/s, {} threads, \
         {} parameters)",
        acc,
        test.len(),
        (config.steps(n)? * 256) as f64 / wall,
        rayon::current_num_threads(),
        model.n_params()
    );
    Ok(())
}
