//! Algorithm 3's workload (spec 002 §4.3): the exact solver against scikit-learn, the smooth
//! hinge against finite differences, Theorem 7's ingredients on real data, and neighbours.

use dptune::data::{builtin, Standardiser};
use dptune::tuners::lipschitz_gain::LipschitzGain;
use dptune::workloads::regularised_erm::{
    fit_regularised, ramp, signed_labels, unit_ball_features, ErmLoss, RegularisedErm, SOLVER_TOL,
};
use dptune::workloads::{RegularisedGain, Workload};
use ndarray::{Array1, Array2};

#[derive(serde::Deserialize)]
struct Fixture {
    cases: Vec<Case>,
}

#[derive(serde::Deserialize)]
struct Case {
    x: Vec<Vec<f64>>,
    y: Vec<f64>,
    fits: Vec<Fit>,
}

#[derive(serde::Deserialize)]
struct Fit {
    lambda: f64,
    w: Vec<f64>,
    grad_norm: f64,
}

fn matrix(rows: &[Vec<f64>]) -> Array2<f64> {
    Array2::from_shape_fn((rows.len(), rows[0].len()), |(i, j)| rows[i][j])
}

/// The regularised logistic minimiser equals scikit-learn's (newton-cg, tol 1e-14).
#[test]
fn logistic_fit_matches_sklearn() {
    let text = std::fs::read_to_string("tests/fixtures/erm_sklearn.json").unwrap();
    let f: Fixture = serde_json::from_str(&text).unwrap();
    for case in &f.cases {
        let x = matrix(&case.x);
        for fit in &case.fits {
            let (w, grad) =
                fit_regularised(x.view(), &case.y, fit.lambda, ErmLoss::Logistic, SOLVER_TOL)
                    .unwrap();
            assert!(grad <= SOLVER_TOL);
            // λ-strong convexity: ‖ŵ − w*‖ ≤ ‖∇F(ŵ)‖/λ, for ours and for the reference.
            let err = &w - &Array1::from(fit.w.clone());
            let dist = err.dot(&err).sqrt();
            let bound = (grad + fit.grad_norm) / fit.lambda;
            assert!(
                dist <= bound * (1.0 + 1e-6) + 1e-15,
                "λ = {}: {dist} > {bound}",
                fit.lambda
            );
        }
    }
}

/// The smooth-hinge fit is a stationary point: central differences of the objective vanish.
#[test]
fn smooth_hinge_fit_is_stationary() {
    let text = std::fs::read_to_string("tests/fixtures/erm_sklearn.json").unwrap();
    let f: Fixture = serde_json::from_str(&text).unwrap();
    let (x, y) = (matrix(&f.cases[0].x), &f.cases[0].y);
    let lambda = 0.1;
    let objective = |w: &Array1<f64>| {
        let phi = |z: f64| {
            if z >= 1.0 {
                0.0
            } else if z > 0.0 {
                (1.0 - z).powi(2) / 2.0
            } else {
                0.5 - z
            }
        };
        let n = y.len() as f64;
        0.5 * lambda * w.dot(w)
            + x.rows()
                .into_iter()
                .zip(y)
                .map(|(r, &yi)| phi(yi * r.dot(w)))
                .sum::<f64>()
                / n
    };
    let (w, _) = fit_regularised(x.view(), y, lambda, ErmLoss::SmoothHinge, SOLVER_TOL).unwrap();
    let f0 = objective(&w);
    for j in 0..w.len() {
        let h = 1e-5;
        let mut e = Array1::zeros(w.len());
        e[j] = h;
        let d = (objective(&(&w + &e)) - objective(&(&w - &e))) / (2.0 * h);
        assert!(d.abs() < 1e-8, "coordinate {j}: {d}");
        // A minimum, not just a stationary point.
        assert!(objective(&(&w + &e)) >= f0 && objective(&(&w - &e)) >= f0);
    }
}

fn breast_cancer(
    loss: ErmLoss,
    lambdas: &[f64],
    range: (f64, f64),
) -> (RegularisedErm, Array2<f64>, Vec<f64>) {
    let data = builtin("breast-cancer").unwrap();
    let split = data.split(0.3, 0.2, 7).unwrap();
    let s = Standardiser::fit(&split.train.x);
    let y = |d: &dptune::data::Dataset| signed_labels(d.labels().unwrap()).unwrap();
    let train_x = unit_ball_features(&split.train.x, &s);
    let w = RegularisedErm::new(
        "breast-cancer",
        train_x.view(),
        &y(&split.train),
        unit_ball_features(&split.validation.x, &s),
        y(&split.validation),
        lambdas,
        range,
        loss,
    )
    .unwrap();
    (w, unit_ball_features(&split.test.x, &s), y(&split.test))
}

/// Theorem 7's two ingredients hold on real data: ‖w_λ − w_λ′‖ ≤ 1/λ − 1/λ′ (strong
/// convexity, here through the gains: |f(w_λ) − f(w_λ′)| ≤ L(1/λ − 1/λ′)), and replacing one
/// validation record moves every gain by at most min(g*, L/λ_min)/m.
#[test]
fn theorem_7_ingredients_hold_on_breast_cancer() {
    let lambdas: Vec<f64> = (0..10)
        .map(|i| 0.1 * libm::pow(100f64, i as f64 / 9.0))
        .collect();
    for loss in [ErmLoss::Logistic, ErmLoss::SmoothHinge] {
        let (w, pool_x, pool_y) = breast_cancer(loss, &lambdas, (0.1, 10.0));
        let g = w.gains();
        assert!(g.iter().all(|v| (-1.0..=0.0).contains(v)));
        for a in 0..lambdas.len() {
            for b in a + 1..lambdas.len() {
                let bound = 1.0 / lambdas[a] - 1.0 / lambdas[b];
                assert!((g[a] - g[b]).abs() <= bound + 1e-9);
            }
        }
        let m = w.assumption().validation_size as f64;
        let (vx, vy) = w.validation();
        let (vx, vy) = (vx.to_owned(), vy.to_vec());
        let mut largest = 0.0f64;
        for i in (0..vy.len()).step_by(7) {
            for (x, y) in [
                (vx.row(i), -vy[i]),
                (pool_x.row(i % pool_y.len()), pool_y[i % pool_y.len()]),
            ] {
                let v = w.replaced(i, x, y).unwrap();
                for (a, b) in g.iter().zip(v.gains()) {
                    largest = largest.max((a - b).abs());
                }
            }
        }
        assert!(largest <= 1.0 / m + 1e-12, "{largest} > 1/m");
        assert!(largest > 0.0, "no substitution changed any gain");
    }
}

/// A neighbour's gains equal a workload built from scratch on the substituted validation set.
#[test]
fn replaced_equals_rebuilt() {
    let lambdas = [0.5, 1.0, 2.0];
    let data = builtin("breast-cancer").unwrap();
    let split = data.split(0.3, 0.2, 3).unwrap();
    let s = Standardiser::fit(&split.train.x);
    let y = |d: &dptune::data::Dataset| signed_labels(d.labels().unwrap()).unwrap();
    let train_x = unit_ball_features(&split.train.x, &s);
    let mut val_x = unit_ball_features(&split.validation.x, &s);
    let mut val_y = y(&split.validation);
    let build = |vx: Array2<f64>, vy: Vec<f64>| {
        RegularisedErm::new(
            "b",
            train_x.view(),
            &y(&split.train),
            vx,
            vy,
            &lambdas,
            (0.5, 2.0),
            ErmLoss::Logistic,
        )
        .unwrap()
    };
    let w = build(val_x.clone(), val_y.clone());
    let pool = unit_ball_features(&split.test.x, &s);
    let v = w.replaced(4, pool.row(0), -1.0).unwrap();
    val_x.row_mut(4).assign(&pool.row(0));
    val_y[4] = -1.0;
    let rebuilt = build(val_x, val_y);
    for (a, b) in v.gains().iter().zip(rebuilt.gains()) {
        assert!((a - b).abs() < 1e-15);
    }
    assert!(w.replaced(10_000, pool.row(0), 1.0).is_err());
}

/// The tuner runs on the workload: Δ_f is Theorem 7's plus twice the declared solver error,
/// and every grid λ outside the declared range is refused at construction.
#[test]
fn tuner_runs_on_real_data() {
    let lambdas: Vec<f64> = (0..5).map(|i| 1.0 + 9.0 * i as f64 / 4.0).collect();
    let (w, _, _) = breast_cancer(ErmLoss::Logistic, &lambdas, (1.0, 10.0));
    let t = LipschitzGain {
        evaluations: 5,
        epsilon: 1.0,
        lengthscale: 0.2,
        beta: 4.0,
    };
    let m = w.assumption().validation_size as f64;
    let expected = (1.0 / m) + 9.0 / 10.0 + 2.0 * SOLVER_TOL / 1.0;
    assert!((t.sensitivity(w.assumption()).unwrap() - expected).abs() < 1e-15);
    let grid: Vec<Vec<f64>> = lambdas.iter().map(|&l| vec![l]).collect();
    let (best, _) = t.run(&w, &grid, &mut dptune::rng::stream(1, &[])).unwrap();
    assert_eq!(best, w.oracle().best_utility(), "T = N evaluates every λ");
    let data = builtin("breast-cancer").unwrap();
    let x = unit_ball_features(&data.x, &Standardiser::fit(&data.x));
    let y = signed_labels(data.labels().unwrap()).unwrap();
    let e = RegularisedErm::new(
        "b",
        x.view(),
        &y,
        x.clone(),
        y.clone(),
        &[0.05],
        (0.1, 1.0),
        ErmLoss::Logistic,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("lambda_min"), "{e}");
    // Rows outside the unit ball break the Lipschitz constants: refused.
    let e = RegularisedErm::new(
        "b",
        data.x.view(),
        &y,
        x,
        y.clone(),
        &[0.5],
        (0.1, 1.0),
        ErmLoss::Logistic,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("norm <= 1"), "{e}");
    assert_eq!(ramp(2.0), 0.0);
    assert_eq!(ramp(-3.0), 1.0);
    assert_eq!(ramp(0.25), 0.75);
}
