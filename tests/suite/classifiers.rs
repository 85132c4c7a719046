//! Our classifiers against scikit-learn on breast-cancer (fixture from
//! tools/make_classifier_fixture.py): the SMO kernel SVM (src/learn/smo.rs) against `SVC`, with
//! its KKT conditions, small cases solved by hand and its errors; logistic regression and the
//! linear SVM trained by (non-private) SGD against `LogisticRegression` and `LinearSVC`, within
//! 2 points of test accuracy (issue 6).

use dptune::data::{builtin, Standardiser};
use dptune::learn::smo::{fit, KernelSvm, SvmKernel, SvmParams, MAX_TRAIN_ROWS};
use dptune::learn::{
    accuracy, DpSgdConfig, Length, LinearSvm, Logistic, Model, Sampling, WeightPenalty,
};
use dptune::Error;
use ndarray::{array, Array2, ArrayView2};

struct Split {
    x_train: Array2<f64>,
    y_train: Vec<usize>,
    x_test: Array2<f64>,
    y_test: Vec<usize>,
}

fn fixture() -> serde_json::Value {
    let text = std::fs::read_to_string("tests/fixtures/classifiers_sklearn.json").unwrap();
    serde_json::from_str(&text).unwrap()
}

fn f64s(v: &serde_json::Value) -> Vec<f64> {
    serde_json::from_value(v.clone()).unwrap()
}

/// The fixture's split of the built-in breast-cancer set, standardised with the training mean
/// and population sd (which must equal the fixture's).
fn split(fx: &serde_json::Value) -> Split {
    let data = builtin("breast-cancer").unwrap();
    assert_eq!(data.len(), fx["n_rows"].as_u64().unwrap() as usize);
    assert_eq!(
        data.n_features(),
        fx["n_features"].as_u64().unwrap() as usize
    );
    let idx = |key: &str| serde_json::from_value::<Vec<usize>>(fx[key].clone()).unwrap();
    let (train, test) = (data.select(&idx("train")), data.select(&idx("test")));
    let s = Standardiser::fit(&train.x);
    for (j, (m, sd)) in f64s(&fx["mean"]).iter().zip(f64s(&fx["sd"])).enumerate() {
        assert!((s.mean[j] - m).abs() <= 1e-12 * m.abs().max(1.0));
        assert!((s.sd[j] - sd).abs() <= 1e-12 * sd);
    }
    Split {
        x_train: s.apply(&train.x),
        y_train: train.labels().unwrap().to_vec(),
        x_test: s.apply(&test.x),
        y_test: test.labels().unwrap().to_vec(),
    }
}

fn params_of(case: &serde_json::Value, tol: f64) -> SvmParams {
    let kernel = match case["kernel"].as_str().unwrap() {
        "rbf" => SvmKernel::Rbf {
            gamma: case["gamma"].as_f64().unwrap(),
        },
        "linear" => SvmKernel::Linear,
        other => panic!("unknown kernel {other}"),
    };
    SvmParams {
        tol,
        ..SvmParams::new(case["c"].as_f64().unwrap(), kernel).unwrap()
    }
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs().max(1e-300)
}

fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(u, v)| (u - v).abs())
        .fold(0.0, f64::max)
}

/// Every training example meets its KKT condition to `tol` (plus rounding), α lies in
/// [0, C] and Σ y_i α_i = 0.
fn assert_kkt(svm: &KernelSvm, x: ArrayView2<f64>, labels: &[usize], tol: f64, what: &str) {
    let n = labels.len();
    let c = svm.c();
    let mut alpha = vec![0.0; n];
    for (&i, &a) in svm.support_indices().iter().zip(svm.dual_coef()) {
        let y = if labels[i] == 1 { 1.0 } else { -1.0 };
        assert!(
            a * y > 0.0 && a * y <= c,
            "{what}: alpha_{i} = {} outside (0, C]",
            a * y
        );
        alpha[i] = a * y;
    }
    let balance: f64 = svm.dual_coef().sum();
    assert!(
        balance.abs() <= 1e-10 * c * n as f64,
        "{what}: sum y alpha = {balance}"
    );
    let f = svm.decision(x).unwrap();
    let slack = tol + 1e-9;
    for i in 0..n {
        let margin = if labels[i] == 1 { f[i] } else { -f[i] };
        let ok = if alpha[i] == 0.0 {
            margin >= 1.0 - slack
        } else if alpha[i] == c {
            margin <= 1.0 + slack
        } else {
            (margin - 1.0).abs() <= slack
        };
        assert!(
            ok,
            "{what}: KKT fails at {i}: alpha {} margin {margin}",
            alpha[i]
        );
    }
}

#[test]
fn matches_sklearn_svc_on_breast_cancer() {
    let fx = fixture();
    let s = split(&fx);
    let cases = fx["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 13);
    let (mut worst_acc, mut worst_nsv, mut worst_dual, mut worst_dec) = (0.0, 0.0, 0.0, 0.0f64);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let params = params_of(case, case["tol"].as_f64().unwrap());
        assert_eq!(params.tol, SvmParams::DEFAULT_TOL);
        let svm = fit(s.x_train.view(), &s.y_train, &params).unwrap();

        let test_acc = svm.accuracy(s.x_test.view(), &s.y_test).unwrap();
        let train_acc = svm.accuracy(s.x_train.view(), &s.y_train).unwrap();
        let d_acc = (test_acc - case["test_accuracy"].as_f64().unwrap()).abs();
        let d_train = (train_acc - case["train_accuracy"].as_f64().unwrap()).abs();
        assert!(
            d_acc <= 0.01 + 1e-12,
            "{name}: test accuracy {test_acc} vs sklearn"
        );
        assert!(
            d_train <= 0.01 + 1e-12,
            "{name}: train accuracy {train_acc} vs sklearn"
        );

        let nsv_ref = case["n_support"].as_u64().unwrap() as f64;
        let d_nsv = rel(svm.n_support() as f64, nsv_ref);
        assert!(
            d_nsv <= 0.03,
            "{name}: {} support vectors vs {nsv_ref}",
            svm.n_support()
        );

        let d_dual = rel(
            svm.dual_objective(),
            case["dual_objective"].as_f64().unwrap(),
        );
        assert!(
            d_dual <= 1e-3,
            "{name}: dual {} (rel err {d_dual})",
            svm.dual_objective()
        );

        let reference = f64s(&case["decision_test20"]);
        let ours = svm.decision(s.x_test.view()).unwrap();
        let d_dec = max_abs_diff(&ours.as_slice().unwrap()[..reference.len()], &reference);
        assert!(d_dec <= 1e-2, "{name}: decision values differ by {d_dec}");

        assert_kkt(&svm, s.x_train.view(), &s.y_train, params.tol, name);
        // Second-order working sets: about as many updates as LIBSVM (which also shrinks).
        let sk_iter = case["n_iter"].as_u64().unwrap() as usize;
        assert!(
            svm.iterations() <= 2 * sk_iter,
            "{name}: {} iterations",
            svm.iterations()
        );
        eprintln!(
            "{name:22} acc {test_acc:.4} d_acc {d_acc:.4} nSV {} ({nsv_ref}) dual rel {d_dual:.1e} \
             dec {d_dec:.1e} iters {} (sklearn {})",
            svm.n_support(),
            svm.iterations(),
            case["n_iter"]
        );
        worst_acc = f64::max(worst_acc, d_acc);
        worst_nsv = f64::max(worst_nsv, d_nsv);
        worst_dual = f64::max(worst_dual, d_dual);
        worst_dec = worst_dec.max(d_dec);
    }
    eprintln!(
        "worst: test accuracy {worst_acc}, n_support rel {worst_nsv:.3}, dual rel \
         {worst_dual:.1e}, decision abs {worst_dec:.1e}"
    );
}

/// Converged tightly (tol 1e-9 here, 1e-10 in sklearn), both solvers reach the same optimum.
#[test]
fn tight_tolerance_reaches_sklearn_optimum() {
    let fx = fixture();
    let s = split(&fx);
    let (mut worst_dual, mut worst_dec, mut worst_b) = (0.0f64, 0.0f64, 0.0f64);
    for case in fx["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let tight = &case["tight"];
        let params = params_of(case, 1e-9);
        let svm = fit(s.x_train.view(), &s.y_train, &params).unwrap();
        let d_dual = rel(
            svm.dual_objective(),
            tight["dual_objective"].as_f64().unwrap(),
        );
        let reference = f64s(&tight["decision_test20"]);
        let ours = svm.decision(s.x_test.view()).unwrap();
        let d_dec = max_abs_diff(&ours.as_slice().unwrap()[..reference.len()], &reference);
        let d_b = (svm.bias() - tight["intercept"].as_f64().unwrap()).abs();
        // sklearn keeps kernel values in f32: its optimum moves by ~1e-7 relative, times the
        // size of α (≤ C) and of k (up to ~30 for the linear kernel) in the decision values.
        let dec_tol = 1e-5 * params.c.max(1.0);
        assert!(d_dual <= 1e-9, "{name}: tight dual rel err {d_dual}");
        assert!(
            d_dec <= dec_tol,
            "{name}: tight decision values differ by {d_dec}"
        );
        assert!(d_b <= dec_tol, "{name}: tight bias differs by {d_b}");
        let acc = svm.accuracy(s.x_test.view(), &s.y_test).unwrap();
        let acc_ref = tight["test_accuracy"].as_f64().unwrap();
        assert!(
            (acc - acc_ref).abs() <= 1e-12,
            "{name}: test accuracy {acc} vs {acc_ref}"
        );
        assert_kkt(&svm, s.x_train.view(), &s.y_train, params.tol, name);
        eprintln!(
            "{name:22} tight: dual rel {d_dual:.1e} dec {d_dec:.1e} bias {d_b:.1e} iters {}",
            svm.iterations()
        );
        worst_dual = worst_dual.max(d_dual);
        worst_dec = worst_dec.max(d_dec);
        worst_b = worst_b.max(d_b);
    }
    eprintln!(
        "tight worst: dual rel {worst_dual:.1e}, decision {worst_dec:.1e}, bias {worst_b:.1e}"
    );
}

/// Two points on a line: the max-margin solution is w = (x₊ − x₋)·2/‖x₊ − x₋‖², with
/// α = 2/‖x₊ − x₋‖² on both.
#[test]
fn two_points_hard_margin_exact() {
    let x = array![[3.0, 0.0], [1.0, 0.0]];
    let params = SvmParams {
        tol: 1e-12,
        ..SvmParams::new(10.0, SvmKernel::Linear).unwrap()
    };
    let svm = fit(x.view(), &[1, 0], &params).unwrap();
    // ‖x₊ − x₋‖² = 4: α = ½, w = (1, 0), b = −2 (the margin passes through both points).
    assert_eq!(svm.support_indices(), &[0, 1]);
    assert_eq!(svm.dual_coef().to_vec(), vec![0.5, -0.5]);
    assert_eq!(svm.bias(), -2.0);
    assert_eq!(svm.dual_objective(), 0.5);
    assert_eq!(svm.iterations(), 1);
    assert_eq!(svm.decision(x.view()).unwrap().to_vec(), vec![1.0, -1.0]);
}

/// The same two points with C = ¼ < ½: both α sit at C, w = (½, 0), and with no free vector
/// b is the midpoint of the feasible interval: y_i f(x_i) ≤ 1 gives 1.5 + b ≤ 1 and
/// −(0.5 + b) ≤ 1, so b ∈ [−1.5, −0.5] and b = −1.
#[test]
fn two_points_box_bound_midpoint_bias() {
    let x = array![[3.0, 0.0], [1.0, 0.0]];
    let svm = fit(
        x.view(),
        &[1, 0],
        &SvmParams::new(0.25, SvmKernel::Linear).unwrap(),
    )
    .unwrap();
    assert_eq!(svm.dual_coef().to_vec(), vec![0.25, -0.25]);
    assert_eq!(svm.bias(), -1.0);
    // W = 0.5 − ½ ‖w‖² = 0.5 − 0.125.
    assert_eq!(svm.dual_objective(), 0.375);
    assert_eq!(svm.decision(x.view()).unwrap().to_vec(), vec![0.5, -0.5]);
}

/// Four points: the hulls of {(2,0), (3,1)} and {(0,0), (−1,1)} are closest at (2,0) and
/// (0,0), so w = (1, 0), b = −1, α = ½ on those two and 0 on the others.
#[test]
fn four_points_hard_margin_exact() {
    let x = array![[3.0, 1.0], [0.0, 0.0], [2.0, 0.0], [-1.0, 1.0]];
    let labels = [1, 0, 1, 0];
    let params = SvmParams {
        tol: 1e-12,
        ..SvmParams::new(100.0, SvmKernel::Linear).unwrap()
    };
    let svm = fit(x.view(), &labels, &params).unwrap();
    assert_eq!(svm.support_indices(), &[1, 2]);
    let coef = svm.dual_coef();
    assert!(
        (coef[0] + 0.5).abs() <= 1e-12 && (coef[1] - 0.5).abs() <= 1e-12,
        "{coef}"
    );
    // w = Σ y_s α_s x_s.
    let w = coef[0] * &x.row(1) + coef[1] * &x.row(2);
    assert!((w[0] - 1.0).abs() <= 1e-12 && w[1].abs() <= 1e-12, "{w}");
    assert!((svm.bias() + 1.0).abs() <= 1e-12, "{}", svm.bias());
    assert!((svm.dual_objective() - 0.5).abs() <= 1e-12);
    let f = svm.decision(x.view()).unwrap();
    for (fi, want) in f.iter().zip([2.0, -1.0, 1.0, -2.0]) {
        assert!((fi - want).abs() <= 1e-12, "{f}");
    }
    assert_eq!(svm.predict(x.view()).unwrap(), labels.to_vec());
    assert_eq!(svm.accuracy(x.view(), &labels).unwrap(), 1.0);
}

/// The RBF kernel on two points: K = [[1, κ], [κ, 1]] with κ = exp(−γ d²), and
/// W(α) = 2α − α²(1 − κ) is maximised at α = 1/(1 − κ) (when ≤ C), b = 0 by symmetry.
#[test]
fn two_points_rbf_closed_form() {
    let x = array![[0.5, 1.0], [0.5, -1.0]];
    let gamma = 0.3;
    let kappa = libm::exp(-gamma * 4.0f64);
    let params = SvmParams {
        tol: 1e-12,
        ..SvmParams::new(10.0, SvmKernel::Rbf { gamma }).unwrap()
    };
    let svm = fit(x.view(), &[0, 1], &params).unwrap();
    let alpha = 1.0 / (1.0 - kappa);
    let coef = svm.dual_coef();
    assert!((coef[0] + alpha).abs() <= 1e-12 * alpha && (coef[1] - alpha).abs() <= 1e-12 * alpha);
    assert!(svm.bias().abs() <= 1e-12);
    assert!((svm.dual_objective() - alpha).abs() <= 1e-12 * alpha);
    let f = svm.decision(x.view()).unwrap();
    assert!(
        (f[0] + 1.0).abs() <= 1e-12 && (f[1] - 1.0).abs() <= 1e-12,
        "{f}"
    );
}

#[test]
fn invalid_parameters_are_named() {
    let msg = |e: Error| e.to_string();
    let e = msg(SvmParams::new(0.0, SvmKernel::Linear).unwrap_err());
    assert!(e.starts_with("invalid C = 0"), "{e}");
    let e = msg(SvmParams::new(f64::NAN, SvmKernel::Linear).unwrap_err());
    assert!(e.starts_with("invalid C"), "{e}");
    let e = msg(SvmParams::new(1.0, SvmKernel::Rbf { gamma: -1.0 }).unwrap_err());
    assert!(e.starts_with("invalid gamma = -1"), "{e}");
    assert!(e.contains("> 0"), "{e}");
    let e = msg(SvmParams::new(
        1.0,
        SvmKernel::Rbf {
            gamma: f64::INFINITY,
        },
    )
    .unwrap_err());
    assert!(e.starts_with("invalid gamma"), "{e}");
    let bad_tol = SvmParams {
        tol: 0.0,
        ..SvmParams::new(1.0, SvmKernel::Linear).unwrap()
    };
    let x = array![[1.0], [-1.0]];
    let e = msg(fit(x.view(), &[1, 0], &bad_tol).unwrap_err());
    assert!(e.starts_with("invalid tol = 0"), "{e}");
    let no_iter = SvmParams {
        max_iter: 0,
        ..SvmParams::new(1.0, SvmKernel::Linear).unwrap()
    };
    let e = msg(fit(x.view(), &[1, 0], &no_iter).unwrap_err());
    assert!(e.starts_with("invalid max_iter = 0"), "{e}");
}

#[test]
fn invalid_data_is_rejected() {
    let p = SvmParams::new(1.0, SvmKernel::Linear).unwrap();
    let x = array![[1.0, 0.0], [2.0, 0.0], [3.0, 1.0]];
    let e = fit(x.view(), &[1, 1, 1], &p).unwrap_err().to_string();
    assert!(
        e.contains("no example of class 0") && e.contains("both classes"),
        "{e}"
    );
    let e = fit(x.view(), &[0, 0, 0], &p).unwrap_err().to_string();
    assert!(e.contains("no example of class 1"), "{e}");
    let e = fit(x.view(), &[0, 1, 2], &p).unwrap_err().to_string();
    assert!(e.starts_with("invalid label = 2"), "{e}");
    let e = fit(x.view(), &[0, 1], &p).unwrap_err().to_string();
    assert!(e.contains("2 labels") && e.contains("3 labels"), "{e}");
    let nan = array![[1.0, f64::NAN], [2.0, 0.0]];
    let e = fit(nan.view(), &[0, 1], &p).unwrap_err().to_string();
    assert!(e.starts_with("invalid features = NaN"), "{e}");
    let huge = array![[1e200, 0.0], [-1e200, 0.0]];
    let e = fit(huge.view(), &[0, 1], &p).unwrap_err().to_string();
    assert!(e.contains("kernel value of inf"), "{e}");
    let big = Array2::<f64>::zeros((MAX_TRAIN_ROWS + 1, 1));
    let labels: Vec<usize> = (0..=MAX_TRAIN_ROWS).map(|i| i % 2).collect();
    let e = fit(big.view(), &labels, &p).unwrap_err().to_string();
    assert!(e.contains("at most 5000"), "{e}");

    let svm = fit(x.view(), &[0, 1, 1], &p).unwrap();
    let e = svm.decision(array![[1.0]].view()).unwrap_err().to_string();
    assert!(e.contains("1 columns") && e.contains("2 columns"), "{e}");
    let e = svm.accuracy(x.view(), &[0]).unwrap_err().to_string();
    assert!(e.contains("1 labels"), "{e}");
}

/// The same point with both labels: the curvature along that pair is 0 (τ is used), both α go
/// to C, and everything stays finite.
#[test]
fn duplicate_point_with_opposite_labels_is_finite() {
    for kernel in [SvmKernel::Linear, SvmKernel::Rbf { gamma: 0.5 }] {
        let x = array![[1.0, 1.0], [1.0, 1.0], [3.0, 0.0], [-2.0, 0.5]];
        let labels = [1, 0, 1, 0];
        let params = SvmParams::new(2.0, kernel).unwrap();
        let svm = fit(x.view(), &labels, &params).unwrap();
        assert!(
            svm.iterations() < 100,
            "{kernel:?}: {} iterations",
            svm.iterations()
        );
        assert!(svm.bias().is_finite() && svm.dual_objective().is_finite());
        assert!(svm.dual_coef().iter().all(|v| v.is_finite()));
        let f = svm.decision(x.view()).unwrap();
        assert!(f.iter().all(|v| v.is_finite()), "{f}");
        // One of the two copies is misclassified, so it pays the full C.
        let f0 = f[0];
        let misclassified = if f0 > 0.0 { 1 } else { 0 };
        assert!(svm.support_indices().contains(&misclassified));
        assert_kkt(&svm, x.view(), &labels, params.tol, "duplicate");
    }
    // Only the two copies: a zero Gram-difference pair and nothing else.
    let x = array![[0.5, -0.5], [0.5, -0.5]];
    let svm = fit(
        x.view(),
        &[0, 1],
        &SvmParams::new(1.0, SvmKernel::Linear).unwrap(),
    )
    .unwrap();
    assert_eq!(svm.dual_coef().to_vec(), vec![-1.0, 1.0]);
    assert_eq!(svm.decision(x.view()).unwrap().to_vec(), vec![0.0, 0.0]);
}

#[test]
fn max_iter_guard_gives_an_error() {
    let fx = fixture();
    let s = split(&fx);
    let params = SvmParams {
        max_iter: 5,
        ..SvmParams::new(100.0, SvmKernel::Rbf { gamma: 0.01 }).unwrap()
    };
    let e = fit(s.x_train.view(), &s.y_train, &params).unwrap_err();
    assert!(matches!(e, Error::Numerical(_)), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains("max_iter = 5") && msg.contains("tol"), "{msg}");
}

/// The same model twice, and with 1 or 4 rayon threads.
#[test]
fn fitting_is_deterministic() {
    let fx = fixture();
    let s = split(&fx);
    let params = SvmParams::new(10.0, SvmKernel::Rbf { gamma: 0.01 }).unwrap();
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let svm = fit(s.x_train.view(), &s.y_train, &params).unwrap();
            let f = svm.decision(s.x_test.view()).unwrap();
            (svm.dual_coef().to_owned(), svm.bias(), f)
        })
    };
    let one = run(1);
    assert_eq!(one, run(1));
    assert_eq!(one, run(4));
}

/// Test accuracy of `model` trained by plain minibatch SGD (no clipping, no noise) on the
/// fixture's split.
fn sgd_test_accuracy<M: Model>(model: &M, lr: f64, epochs: u64, batch: usize) -> f64 {
    let sp = split(&fixture());
    let config = DpSgdConfig::new(
        lr,
        batch,
        Length::Epochs(epochs),
        None,
        0.0,
        Sampling::Shuffle,
    )
    .unwrap();
    let mut rng = dptune::rng::stream(20261122, &[1]);
    let trained = config
        .train(model, sp.x_train.view(), &sp.y_train, &mut rng)
        .unwrap();
    accuracy(model, &trained.params, sp.x_test.view(), &sp.y_test).unwrap()
}

#[test]
fn logistic_regression_within_two_points_of_sklearn() {
    let reference = fixture()["linear_models"]["logistic_regression"]["test_accuracy"]
        .as_f64()
        .unwrap();
    let acc = sgd_test_accuracy(&Logistic::new(30, 2).unwrap(), 0.05, 50, 16);
    assert!(
        (acc - reference).abs() <= 0.02,
        "ours {acc}, scikit-learn {reference}"
    );
}

/// The linear SVM's objective ½‖w‖² + (α/n)·Σ hinge with an unpenalised bias is SVC's
/// (kernel = linear) ½‖w‖² + C·Σ hinge with α = C·n; SGD must land within 2 points of it.
#[test]
fn linear_svm_within_two_points_of_sklearn() {
    let fx = fixture();
    let case = fx["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["kernel"] == "linear")
        .unwrap();
    let reference = case["test_accuracy"].as_f64().unwrap();
    let n = split(&fx).y_train.len() as f64;
    let svm = LinearSvm::new(
        30,
        case["c"].as_f64().unwrap() * n,
        WeightPenalty::HalfSquaredNorm,
    )
    .unwrap();
    let acc = sgd_test_accuracy(&svm, 1e-4, 100, 1);
    assert!(
        (acc - reference).abs() <= 0.02,
        "ours {acc}, scikit-learn {reference}"
    );
}
