//! ε of one DP-SGD run by the PLD accountant, timed inside the process (as
//! `tools/bench_pld.py` times dp-accounting and prv_accountant inside theirs), the first time
//! and again: prints `{"seconds": …, "again": …, "epsilon": …}`. Arguments: q σ steps δ
//! interval.
//!
//!     cargo run --release --example pld_time -- 0.01 1.1 1000 1e-5 1e-4

use dptune::accounting::pld::{PldAccountant, PldMechanism};
use dptune::accounting::DpSgd;
use std::time::Instant;

fn main() -> dptune::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |i: usize, name: &str| -> f64 {
        match args.get(i).and_then(|s| s.parse().ok()) {
            Some(x) => x,
            None => {
                eprintln!("argument {} ({name}) missing or not a number; usage: q sigma steps delta interval", i + 1);
                std::process::exit(2)
            }
        }
    };
    let (q, sigma, steps) = (
        number(0, "q"),
        number(1, "sigma"),
        number(2, "steps") as u64,
    );
    let (delta, interval) = (number(3, "delta"), number(4, "interval"));
    let compute = || -> dptune::Result<(f64, f64)> {
        let start = Instant::now();
        let (step, count) = PldMechanism::dpsgd(&DpSgd::new(q, sigma, steps)?);
        let mut pld = PldAccountant::new(interval)?;
        pld.compose(step, count)?;
        let epsilon = pld.epsilon(delta)?.epsilon;
        Ok((start.elapsed().as_secs_f64(), epsilon))
    };
    // The first computation in a fresh process, then the same again (FFT plans kept, memory
    // mapped: what a calibration's later steps meet).
    let (seconds, epsilon) = compute()?;
    let (again, _) = compute()?;
    println!("{{\"seconds\": {seconds}, \"again\": {again}, \"epsilon\": {epsilon}}}");
    Ok(())
}
