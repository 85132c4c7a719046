//! The `gibo-paths` experiments (spec 004 figures): reproducible for any thread count, with the
//! exact GDP ε in every private row and the iterates' losses recorded per evaluation.

use crate::common;

use dptune::accounting::convert::gdp_epsilon;
use dptune::sim::Profile;
use std::path::Path;

#[test]
fn gibo_paths_are_thread_independent_and_account_exactly() {
    let file = Path::new("sims/gibo-fig4-robust-regression.toml");
    let one = common::run_file(file, Profile::Smoke, &common::temp_dir("gibo-1"), 1);
    let out = common::temp_dir("gibo-2");
    let two = common::run_and_report(file, Profile::Smoke, &out, 2);
    assert_eq!(one, two);
    let (series, eps, mu) = (
        two.str("series").unwrap(),
        two.f64("epsilon").unwrap(),
        two.f64("mu").unwrap(),
    );
    let want = gdp_epsilon(1.0, 1e-5).unwrap().epsilon;
    for i in 0..two.height() {
        assert_eq!(mu[i], Some(1.0), "{}", series[i]);
        assert_eq!(eps[i], Some(want));
    }
    assert!(series.iter().any(|s| s.starts_with("DP-GD")));
    let (loss, evals) = (
        two.f64("oracle_loss").unwrap(),
        two.u64("evaluations").unwrap(),
    );
    assert!(loss.iter().all(|l| l.is_some_and(f64::is_finite)));
    // DP-GIBO spends b = 2 evaluations per step.
    let gibo: Vec<u64> = (0..two.height())
        .filter(|&i| series[i].starts_with("DP-GIBO"))
        .map(|i| evals[i])
        .collect();
    assert_eq!(gibo, vec![0, 2, 4, 6, 8]);
    assert!(out
        .join("gibo-fig4-robust-regression/final-loss.md")
        .exists());
    // The path panel of the private series' iterates (coordinates 1 and 2).
    let paths: Vec<_> = std::fs::read_dir(out.join("gibo-fig4-robust-regression"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("path-"))
        .collect();
    assert!(!paths.is_empty());
}

/// Non-private series say so: μ and ε are null, never printed as a number.
#[test]
fn non_private_series_have_no_epsilon() {
    let file = Path::new("sims/gibo-fig1-dims.toml");
    let t = common::run_file(file, Profile::Smoke, &common::temp_dir("gibo-np"), 2);
    let (series, eps) = (t.str("series").unwrap(), t.f64("epsilon").unwrap());
    for i in 0..t.height() {
        let private = !series[i].contains("non-private");
        assert_eq!(eps[i].is_some(), private, "{}", series[i]);
    }
    // UCB-BO (global GP-UCB) spends T·(d + 1) evaluations, one row each, and its best loss so
    // far never rises.
    let (dim, step, loss) = (
        t.u64("dim").unwrap(),
        t.u64("t").unwrap(),
        t.f64("oracle_loss").unwrap(),
    );
    for d in [2, 5] {
        let rows: Vec<usize> = (0..t.height())
            .filter(|&i| series[i].starts_with("UCB-BO") && dim[i] == d)
            .collect();
        assert_eq!(rows.len() as u64, 3 * (d + 1));
        assert!(rows.windows(2).all(|w| step[w[1]] == step[w[0]] + 1));
        assert!(rows
            .windows(2)
            .all(|w| loss[w[1]].unwrap() <= loss[w[0]].unwrap()));
    }
}
