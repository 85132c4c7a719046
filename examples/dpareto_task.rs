//! DPareto against random sampling on one of spec 001's DP-SGD tasks, on the same budget and
//! the same first points (spec 001 Fig. 5 at a chosen scale): the hypervolume of each tuner's
//! front after every evaluation, the final fronts, and DPareto's overhead (time outside the
//! training runs).
//!
//! `cargo run --release --example dpareto_task -- [task] [initial] [iterations] [replicates]
//! [device] [privacy] [seed] [grid]`, defaults `adult-lr-sgd 16 48 2 cpu gp 1 0`; `device` is
//! cpu, cuda (build with `--features cuda`) or auto, `privacy` gp (the paper's) or exact, and
//! `grid` > 0 also runs grid search with that many values per dimension (3: 243 points, as in
//! spec 001 Fig. 6). Needs `just data`.

use dptune::learn::Device;
use dptune::pareto::dpareto::{
    dpareto, grid_search, random_sampling, DparetoOptions, Evaluation, Observation, Oracle,
    PrivacyModel,
};
use dptune::pareto::{hv_lin, hv_log, pareto_front, Objectives, HV_REFERENCE};
use dptune::rng::stream;
use dptune::workloads::dpsgd_tasks::{Task, TaskId, TaskOracle};
use rand::RngCore;
use std::time::{Duration, Instant};

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

/// The oracle, timed.
struct Timed<'a> {
    inner: TaskOracle<'a>,
    spent: Duration,
    name: &'static str,
    count: usize,
}

impl Oracle for Timed<'_> {
    fn evaluate(&mut self, lambda: &[f64], rng: &mut dyn RngCore) -> dptune::Result<Observation> {
        let t = Instant::now();
        let v = self.inner.evaluate(lambda, rng);
        self.spent += t.elapsed();
        self.count += 1;
        // Progress, one line per point, so a cut-off run still says what it did.
        if let Some([eps, err]) = v.as_ref().ok().and_then(|o| o.objectives().ok()) {
            eprintln!(
                "{} #{}: ε {eps:.3}, error {err:.4} at λ = {lambda:.4?} ({:.1} s)",
                self.name,
                self.count,
                t.elapsed().as_secs_f64()
            );
        }
        v
    }
    fn epsilon(&self, lambda: &[f64]) -> Option<dptune::Result<f64>> {
        self.inner.epsilon(lambda)
    }
}

fn arg(i: usize, default: &str) -> String {
    std::env::args()
        .nth(i)
        .unwrap_or_else(|| default.to_string())
}

fn number<T: std::str::FromStr>(i: usize, default: &str) -> dptune::Result<T> {
    let s = arg(i, default);
    s.parse()
        .map_err(|_| dptune::Error::invalid("argument", s, "a number"))
}

/// (hv_lin, hv_log) of the first `k` evaluations.
fn hv_after(run: &[Evaluation], k: usize) -> dptune::Result<(f64, f64)> {
    let points: Vec<Objectives> = run[..k].iter().map(|e| e.objectives).collect();
    Ok((
        hv_lin(&points, HV_REFERENCE)?,
        hv_log(&points, HV_REFERENCE)?,
    ))
}

fn run() -> dptune::Result<()> {
    let id = TaskId::parse(&arg(1, "adult-lr-sgd"))?;
    let (initial, iterations, replicates): (usize, usize, usize) =
        (number(2, "16")?, number(3, "48")?, number(4, "2")?);
    let device = Device::parse(&arg(5, "cpu"))?;
    let privacy = match arg(6, "gp").as_str() {
        "gp" => PrivacyModel::Gp,
        "exact" => PrivacyModel::Exact,
        other => return Err(dptune::Error::invalid("privacy", other, "gp or exact")),
    };
    let seed: u64 = number(7, "1")?;
    let grid: usize = number(8, "0")?;
    let task = Task::load(id)?.with_device(device);
    let total = initial + iterations;
    let mut results = Vec::new();
    let tuners: &[&str] = if grid > 0 {
        &["DPareto", "random", "grid"]
    } else {
        &["DPareto", "random"]
    };
    for &tuner in tuners {
        let mut oracle = Timed {
            inner: TaskOracle {
                task: &task,
                replicates,
            },
            spent: Duration::ZERO,
            name: tuner,
            count: 0,
        };
        let dims = oracle.inner.dimensions()?;
        let t = Instant::now();
        // The same stream: random sampling's first `initial` points are DPareto's initial ones.
        let mut rng = stream(seed, &[id as u64]);
        let run = match tuner {
            "DPareto" => {
                let options = DparetoOptions {
                    initial,
                    iterations,
                    privacy,
                    ..DparetoOptions::default()
                };
                dpareto(&mut oracle, &dims, &options, &mut rng)?
            }
            "random" => random_sampling(&mut oracle, &dims, total, &mut rng)?,
            _ => grid_search(&mut oracle, &dims, grid, &mut rng)?,
        };
        let wall = t.elapsed().as_secs_f64();
        let overhead = wall - oracle.spent.as_secs_f64();
        results.push((tuner, run, wall, overhead));
    }
    println!(
        "{} on {} ({} training rows), {} + {} points, {} replicates per point, device {}, \
         privacy model {:?}, seed {seed}",
        id.name(),
        id.data().name(),
        task.train_size(),
        initial,
        iterations,
        replicates,
        device.name(),
        privacy
    );
    println!("\n| evaluations | DPareto hv_lin | random hv_lin | DPareto hv_log | random hv_log |");
    println!("|---|---|---|---|---|");
    let mut k = initial;
    loop {
        let (bl, bg) = hv_after(&results[0].1, k)?;
        let (rl, rg) = hv_after(&results[1].1, k)?;
        println!("| {k} | {bl:.4} | {rl:.4} | {bg:.4} | {rg:.4} |");
        if k == total {
            break;
        }
        k = (k + 8).min(total);
    }
    if let Some((_, run, _, _)) = results.get(2) {
        let (gl, gg) = hv_after(run, run.len())?;
        println!(
            "\ngrid ({} points): hv_lin {gl:.4}, hv_log {gg:.4}",
            run.len()
        );
    }
    for (name, run, wall, overhead) in &results {
        println!(
            "\n{name}: {wall:.1} s wall, of which {overhead:.1} s outside training (GP fits and \
             proposals); front (ε, error) with λ = (T, m, η, σ, L):"
        );
        let points: Vec<Objectives> = run.iter().map(|e| e.objectives).collect();
        for i in pareto_front(&points)? {
            let e = &run[i];
            println!(
                "  ({:.3}, {:.4})  λ = ({}, {}, {:.4}, {:.3}, {:.3})",
                e.objectives[0],
                e.objectives[1],
                e.lambda[0],
                e.lambda[1],
                e.lambda[2],
                e.lambda[3],
                e.lambda[4]
            );
        }
    }
    Ok(())
}
