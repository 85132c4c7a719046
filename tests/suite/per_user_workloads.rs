//! The per-user objectives of spec 004 (src/workloads/per_user/) through the experiment
//! harness: every kind runs a small equal-budget random-search experiment, with the same
//! results on 1 and 2 threads, guarantees within the budget, and (where the optimum is exact)
//! no negative regret.

use dptune::sim::Profile;
use dptune::workloads::build;
use dptune::workloads::per_user::rff::{PerUserRff, RffConfig};
use dptune::workloads::per_user::UserObjective;

use crate::common;

fn experiment(kind: &str, workload: &str) -> String {
    format!(
        r#"
name = "{kind}"
kind = "tuning"
seed = 11
seeds = 2
delta = 1e-6
[budget]
epsilons = [1, 4]
[workload]
kind = "{kind}"
{workload}
[[tuners]]
tuner = "naive"
candidates = 6
"#
    )
}

/// Runs the experiment of `kind` on 1 and 2 threads and checks the rows.
fn run_kind(kind: &str, workload: &str, exact_best: bool) {
    let dir = common::temp_dir(kind);
    let path = dir.join(format!("{kind}.toml"));
    std::fs::write(&path, experiment(kind, workload)).unwrap();
    let one = common::run_file(&path, Profile::Paper, &dir.join("t1"), 1).without_timing();
    let two = common::run_file(&path, Profile::Paper, &dir.join("t2"), 2).without_timing();
    assert_eq!(one, two, "{kind}: results depend on the thread count");
    let eps = one.f64("epsilon").unwrap();
    let target = one.f64("target_epsilon").unwrap();
    assert!(eps
        .iter()
        .zip(target)
        .all(|(e, t)| e.unwrap() <= t.unwrap()));
    let regret = one.f64("regret").unwrap();
    assert!(regret.iter().all(|r| r.is_some()), "{kind}: {regret:?}");
    if exact_best {
        assert!(
            regret.iter().all(|r| r.unwrap() >= -1e-12),
            "{kind}: {regret:?}"
        );
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn per_user_gp_runs_through_the_harness() {
    run_kind(
        "per-user-gp",
        "dims = [3]\nfeatures = 64\nusers = 20\noracle_points = 256",
        false,
    );
}

#[test]
fn gp_lengthscales_runs_through_the_harness() {
    run_kind(
        "gp-lengthscales",
        "dims = [2]\ntrain = 40\nusers = 20\noracle_points = 4",
        false,
    );
}

#[test]
fn normal_location_runs_through_the_harness() {
    run_kind("normal-location", "evaluation_sd = 0.1", true);
}

#[test]
fn robust_regression_runs_through_the_harness() {
    run_kind("robust-regression", "users = 60", true);
}

/// An instance of `per-user-gp` evaluates the objective `PerUserRff::sample(config, seed, rep)`
/// (public API), and the harness's noise knob is the release's noise multiplier.
#[test]
fn instances_are_the_documented_objectives() {
    let params: toml::Table = "dims = [4]\nfeatures = 32\nusers = 9\nrho = 0.5\nclip = 2"
        .parse()
        .unwrap();
    let spec = build("per-user-gp", &params).unwrap();
    let w = spec.instance(0, 5, 3, 0.7).unwrap();
    let f = PerUserRff::sample(&RffConfig::new(4, 32, 9, 0.5, 1.0, None).unwrap(), 5, 3);
    let h = vec![0.3, 0.1, 0.9, 0.5];
    assert_eq!(w.oracle().utility(&h), -f.mean_loss(&h).unwrap());
    let users = w.per_user_losses().unwrap();
    let exact = users
        .user_losses(std::slice::from_ref(&h), &mut dptune::rng::stream(0, &[]))
        .unwrap();
    assert_eq!(exact.column(0), f.losses(&h).unwrap());
    assert_eq!(users.user_gradients(&h).unwrap(), f.gradients(&h).unwrap());
    // Losses clipped to [−2, 2]: Δ = 4/9, σ = 0.7·Δ, ρ = 1/(2·0.49).
    let curve = crate::common::run_curve(w.private_training().unwrap());
    assert!((curve.eval(2.0).unwrap() - 2.0 / (2.0 * 0.49)).abs() < 1e-12);
    assert!(w.name().contains("per-user-gp"));
}
