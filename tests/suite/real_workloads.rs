//! The real-data workloads `rbf-svm` and `gp-regression` (src/workloads/rbf_svm.rs,
//! gp_regression.rs) and their shared release (validation_score.rs): the released score's law,
//! its privacy curve, oracles and predictions against fits redone here, parameter errors,
//! determinism, and whole tuning experiments through the harness.

use dptune::accounting::Gaussian;
use dptune::data::{builtin, Dataset, Standardiser};
use dptune::gp::{Kernel, KernelFamily, Posterior};
use dptune::learn::smo::{fit, SvmKernel, SvmParams};
use dptune::rng::stream;
use dptune::sim::table::Table;
use dptune::sim::Profile;
use dptune::workloads::gp_regression::{GpRegression, GpRegressionSpec};
use dptune::workloads::rbf_svm::{RbfSvm, RbfSvmSpec};
use dptune::workloads::validation_score::{ClippedMeanRelease, ScoreClip};
use dptune::workloads::{Hyper, Space, Workload, WorkloadSpec};
use ndarray::Array1;

use crate::common;

fn temp_dir(tag: &str) -> common::TempDir {
    common::temp_dir(&format!("real-{tag}"))
}

const SEED: u64 = 20261122;

fn table(text: &str) -> toml::Table {
    text.parse().unwrap()
}

/// A 3 × 3 grid around the good region, to keep the fits quick.
fn svm_spec() -> RbfSvmSpec {
    RbfSvmSpec::from_params(&table(
        "c_range = [0.1, 10]\nc_points = 3\ngamma_range = [1e-3, 1e-1]\ngamma_points = 3",
    ))
    .unwrap()
}

/// GP regression on a small synthetic set (and diabetes as variant 1) on a 4 × 4 grid.
fn gp_spec(extra: &str) -> GpRegressionSpec {
    GpRegressionSpec::from_params(&table(&format!(
        "data = [\"synthetic\", \"diabetes\"]\nlengthscale_points = 4\nnoise_variance_points = 4\n\
         synthetic = {{ n = 120, dim = 2 }}\n{extra}"
    )))
    .unwrap()
}

fn grid(w: &dyn Workload) -> Vec<Hyper> {
    match w.space() {
        Space::Finite(points) => points.clone(),
        Space::UnitBox { .. } => panic!("a finite grid"),
    }
}

/// Mean and sd of `n` released scores at `h`.
fn release_moments(w: &dyn Workload, h: &Hyper, n: usize) -> (f64, f64) {
    let training = w.private_training().unwrap();
    let mut rng = stream(5, &[n as u64]);
    let xs: Vec<f64> = (0..n).map(|_| training.train(h, &mut rng)).collect();
    let mean = xs.iter().sum::<f64>() / n as f64;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    (mean, var.sqrt())
}

/// The released score is the clipped validation mean plus N(0, (z·(hi − lo)/m)²): its mean
/// within 5 standard errors, its sd within 2.5% (5 standard errors of a sample sd at n = 20000),
/// for an accuracy (range 1) and a clipped squared error (range 4) at z ≠ 1.
#[test]
fn released_scores_are_the_clipped_mean_plus_the_declared_noise() {
    let n = 20_000;
    let svm = svm_spec().workload(0, SEED, 2.5).unwrap();
    let h = grid(&svm)[4].clone();
    let m = svm.release().records() as f64;
    assert_eq!(m, svm.validation_scores(&h).unwrap().len() as f64);
    let (mean, sd) = release_moments(&svm, &h, n);
    let want_sd = 2.5 * 1.0 / m;
    assert!((sd / want_sd - 1.0).abs() < 0.025, "sd {sd} vs {want_sd}");
    let want_mean = svm.validation_accuracy(&h).unwrap();
    assert!(
        (mean - want_mean).abs() < 5.0 * want_sd / (n as f64).sqrt(),
        "{mean} vs {want_mean}"
    );
    let correct = svm.validation_scores(&h).unwrap();
    assert!(correct.iter().all(|&c| c == 0.0 || c == 1.0));
    assert_eq!(want_mean, correct.iter().sum::<f64>() / m);

    let gp = gp_spec("").workload(0, SEED, 0.7).unwrap();
    let h = grid(&gp)[6].clone();
    let m = gp.release().records() as f64;
    let (mean, sd) = release_moments(&gp, &h, n);
    let want_sd = 0.7 * 4.0 / m;
    assert!((sd / want_sd - 1.0).abs() < 0.025, "sd {sd} vs {want_sd}");
    let want_mean = gp.evaluate(&h).unwrap().validation;
    assert!(
        (mean - want_mean).abs() < 5.0 * want_sd / (n as f64).sqrt(),
        "{mean} vs {want_mean}"
    );
}

/// One run's RDP curve is the Gaussian mechanism's with Δ = (hi − lo)/m and σ = z·Δ, i.e.
/// ε(α) = α/(2z²).
#[test]
fn a_run_is_the_gaussian_mechanism_on_the_clipped_mean() {
    let z = 1.7;
    let svm = svm_spec().workload(0, SEED, z).unwrap();
    let gp = gp_spec("").workload(1, SEED, z).unwrap();
    let releases = [
        (svm.release(), 1.0, svm.private_training().unwrap()),
        (gp.release(), 4.0, gp.private_training().unwrap()),
    ];
    for (release, width, training) in releases {
        let m = release.records() as f64;
        assert_eq!(release.sensitivity(), width / m);
        assert!((release.sigma() - z * width / m).abs() < 1e-15);
        let gaussian = Gaussian::new(width / m, z * width / m).unwrap().rdp();
        for order in [1.5, 2.0, 10.0, 64.0] {
            let got = crate::common::run_curve(training).eval(order).unwrap();
            assert_eq!(got, gaussian.eval(order).unwrap());
            assert!((got - order / (2.0 * z * z)).abs() < 1e-12 * got, "{order}");
        }
    }
}

/// Clipping and averaging by hand, NaN counted as the worst score.
#[test]
fn the_clipped_mean_of_a_tiny_case() {
    let clip = ScoreClip::new("clip", -4.0, 0.0).unwrap();
    // −1 stays, −5 → −4, 0.5 → 0, −2 stays, NaN → −4: (−1 − 4 + 0 − 2 − 4)/5.
    let scores = [-1.0, -5.0, 0.5, -2.0, f64::NAN];
    assert_eq!(clip.mean(&scores), -11.0 / 5.0);
    let release = ClippedMeanRelease::new(clip, 5, 2.0).unwrap();
    assert_eq!(release.clipped_mean(&scores), -2.2);
    assert_eq!(release.sensitivity(), 0.8);
    assert_eq!(release.sigma(), 1.6);
    assert!(ScoreClip::new("clip", 0.0, 0.0).is_err());
    assert!(ClippedMeanRelease::new(clip, 0, 1.0).is_err());
    assert!(ClippedMeanRelease::new(clip, 5, 0.0).is_err());
}

/// The split of seed s standardised by its training statistics, as the workloads document.
fn standardised_split(data: &Dataset, seed: u64) -> dptune::data::Split {
    let split = data.split(0.25, 0.25, seed).unwrap();
    let s = Standardiser::fit(&split.train.x);
    dptune::data::Split {
        train: split.train.standardised(&s),
        validation: split.validation.standardised(&s),
        test: split.test.standardised(&s),
    }
}

/// The SVM's oracle (test accuracy) and released mean (validation accuracy) at a grid point
/// equal an SMO fit redone here on the documented split, and the grid is (ln C, ln γ).
#[test]
fn the_svm_oracle_is_a_refit_test_accuracy() {
    let svm: RbfSvm = svm_spec().workload(0, SEED, 1.0).unwrap();
    let points = grid(&svm);
    assert_eq!(points.len(), 9);
    assert_eq!(svm.points()[0], (0.1, 1e-3));
    assert_eq!(svm.points()[8], (10.0, 1e-1));
    assert!((svm.points()[4].0 - 1.0).abs() < 1e-12 && (svm.points()[4].1 - 1e-2).abs() < 1e-14);
    for (h, &(c, g)) in points.iter().zip(svm.points()) {
        assert_eq!(h, &vec![libm::log(c), libm::log(g)]);
    }
    let split = standardised_split(&builtin("breast-cancer").unwrap(), SEED);
    let mut best = f64::NEG_INFINITY;
    for (i, h) in points.iter().enumerate() {
        let (c, gamma) = svm.points()[i];
        let model = fit(
            split.train.x.view(),
            split.train.labels().unwrap(),
            &SvmParams::new(c, SvmKernel::Rbf { gamma }).unwrap(),
        )
        .unwrap();
        let test = model
            .accuracy(split.test.x.view(), split.test.labels().unwrap())
            .unwrap();
        let validation = model
            .accuracy(
                split.validation.x.view(),
                split.validation.labels().unwrap(),
            )
            .unwrap();
        assert_eq!(svm.oracle().utility(h), test, "C = {c}, γ = {gamma}");
        assert_eq!(svm.validation_accuracy(h), Some(validation));
        best = best.max(test);
    }
    assert_eq!(svm.oracle().best_utility(), best);
    assert!(best > 0.9, "breast-cancer is easy: {best}");
}

/// Minus the clipped per-record scores of a GP fitted here.
fn refit_losses(
    split: &dptune::workloads::gp_regression::RegressionSplit,
    kernel: Kernel,
    noise_variance: f64,
    loss: impl Fn(f64, f64, f64) -> f64,
) -> Vec<f64> {
    let gp = Posterior::fit(
        kernel,
        noise_variance,
        split.train_x.clone(),
        split.train_y.clone(),
    )
    .unwrap();
    let (mean, var) = gp.predict(split.validation_x.view()).unwrap();
    (0..mean.len())
        .map(|i| loss(split.validation_y[i], mean[i], var[i] + noise_variance))
        .collect()
}

fn assert_close_all(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        assert!(
            (a - b).abs() <= 1e-10 * b.abs().max(1.0),
            "{what}[{i}]: {a} vs {b}"
        );
    }
}

/// Diabetes: the workload's split is the documented one (features and target standardised by
/// the training part's mean and population sd), and its per-record losses at a grid point and
/// off the grid are those of a Posterior fitted here: the squared error clipped to [0, c].
#[test]
fn gp_losses_are_those_of_a_posterior_fitted_here() {
    let w: GpRegression = gp_spec("clip = 2.5").workload(1, SEED, 1.0).unwrap();
    let data = builtin("diabetes").unwrap();
    let split = data.split(0.25, 0.25, SEED).unwrap();
    let s = Standardiser::fit(&split.train.x);
    let ys = split.train.values().unwrap();
    let n = ys.len() as f64;
    let mean = ys.iter().sum::<f64>() / n;
    let sd = (ys.iter().map(|y| (y - mean).powi(2)).sum::<f64>() / n).sqrt();
    let y = |d: &Dataset| Array1::from_iter(d.values().unwrap().iter().map(|v| (v - mean) / sd));
    let got = w.split();
    assert_close_all(
        got.train_x.as_slice().unwrap(),
        s.apply(&split.train.x).as_slice().unwrap(),
        "train x",
    );
    assert_close_all(
        got.validation_x.as_slice().unwrap(),
        s.apply(&split.validation.x).as_slice().unwrap(),
        "validation x",
    );
    assert_close_all(
        got.train_y.as_slice().unwrap(),
        y(&split.train).as_slice().unwrap(),
        "y",
    );
    assert_close_all(
        got.validation_y.as_slice().unwrap(),
        y(&split.validation).as_slice().unwrap(),
        "validation y",
    );
    assert_close_all(
        got.test_y.as_slice().unwrap(),
        y(&split.test).as_slice().unwrap(),
        "test y",
    );
    let squared = |y: f64, mu: f64, _v: f64| ((y - mu) * (y - mu)).min(2.5);
    let on_grid = grid(&w)[9].clone();
    for h in [on_grid, vec![libm::log(3.0f64), libm::log(0.3f64)]] {
        let kernel = Kernel::isotropic(KernelFamily::Rbf, 10, libm::exp(h[0]), 1.0).unwrap();
        let want = refit_losses(got, kernel, libm::exp(h[1]), squared);
        let losses = w.validation_losses(&h).unwrap();
        assert_close_all(&losses, &want, "losses");
        assert_eq!(losses.len(), w.release().records());
        assert!(losses.iter().all(|&l| (0.0..=2.5).contains(&l)));
        assert!(losses.contains(&2.5), "some record is clipped");
        let score = w.evaluate(&h).unwrap().validation;
        let mean_loss = losses.iter().sum::<f64>() / losses.len() as f64;
        assert!((mean_loss + score).abs() < 1e-12, "{mean_loss} vs −{score}");
    }
}

/// Synthetic data with per-dimension Matérn-3/2 lengthscales and the log-likelihood score:
/// the per-record log densities ln N(y; μ, v_f + σ²) of a Posterior fitted here, clipped; the
/// oracle's utility is the unclipped mean test log density; the data are inputs in [0, 1]^d.
#[test]
fn gp_loglik_with_per_dimension_lengthscales() {
    let w = GpRegressionSpec::from_params(&table(
        "data = \"synthetic\"\nsynthetic = { n = 120, dim = 2 }\nkernel = \"matern32\"\n\
         lengthscales = \"per-dimension\"\nscore = \"loglik\"\nloglik_range = [-3, 1]\n\
         lengthscale_points = 3\nnoise_variance_points = 2",
    ))
    .unwrap()
    .workload(0, SEED, 1.0)
    .unwrap();
    let points = grid(&w);
    assert_eq!(points.len(), 3 * 3 * 2);
    assert_eq!(points[1].len(), 3);
    // σ² fastest, then ℓ_2, then ℓ_1.
    assert_eq!((points[1][0], points[1][1]), (points[0][0], points[0][1]));
    assert_eq!(points[2][0], points[0][0]);
    assert_ne!(points[2][1], points[0][1]);
    let log_density = |y: f64, mu: f64, v: f64| {
        -0.5 * libm::log(2.0 * std::f64::consts::PI * v) - (y - mu).powi(2) / (2.0 * v)
    };
    let split = w.split();
    assert_eq!(split.train_x.ncols(), 2);
    for h in [points[7].clone(), vec![0.1, -0.4, -2.0]] {
        let kernel = Kernel::new(
            KernelFamily::Matern32,
            vec![libm::exp(h[0]), libm::exp(h[1])],
            1.0,
        )
        .unwrap();
        let raw = refit_losses(split, kernel.clone(), libm::exp(h[2]), log_density);
        let want: Vec<f64> = raw.iter().map(|s| -s.clamp(-3.0, 1.0)).collect();
        assert_close_all(&w.validation_losses(&h).unwrap(), &want, "losses");
        let gp = Posterior::fit(
            kernel,
            libm::exp(h[2]),
            split.train_x.clone(),
            split.train_y.clone(),
        )
        .unwrap();
        let (mu, var) = gp.predict(split.test_x.view()).unwrap();
        let test = (0..mu.len())
            .map(|i| log_density(split.test_y[i], mu[i], var[i] + libm::exp(h[2])))
            .sum::<f64>()
            / mu.len() as f64;
        assert!((w.oracle().utility(&h) - test).abs() < 1e-10 * test.abs().max(1.0));
    }
    assert!(
        w.validation_losses(&vec![0.0, 0.0]).is_err(),
        "wrong dimension"
    );
}

/// The synthetic data: a seeded draw in [0, 1]^d, the same for a seed, another for another.
#[test]
fn synthetic_data_are_a_seeded_draw() {
    let spec = GpRegressionSpec::from_params(&table(
        "data = \"synthetic\"\nsynthetic = { n = 60, dim = 3, noise_sd = 0.0 }",
    ))
    .unwrap();
    let a = dptune::workloads::gp_regression::SyntheticData {
        n: 60,
        dim: 3,
        kernel: KernelFamily::Matern52,
        lengthscale: 0.3,
        noise_sd: 0.0,
        features: 512,
    };
    let d1 = a.draw(1).unwrap();
    assert_eq!(d1, a.draw(1).unwrap());
    assert_ne!(d1.x, a.draw(2).unwrap().x);
    assert!(d1.x.iter().all(|&v| (0.0..1.0).contains(&v)));
    let ys = d1.values().unwrap();
    assert!(ys.iter().all(|y| y.is_finite()) && ys.iter().any(|&y| y != ys[0]));
    // The same inputs and path with noise: the differences are N(0, 0.5²) (sd within 5%, about
    // 3 standard errors at n = 2000).
    let big = |noise_sd: f64| {
        let d = dptune::workloads::gp_regression::SyntheticData {
            n: 2000,
            noise_sd,
            ..a.clone()
        };
        d.draw(1).unwrap()
    };
    let (clean, noisy) = (big(0.0), big(0.5));
    assert_eq!(clean.x, noisy.x);
    let diffs: Vec<f64> = (clean.values().unwrap().iter())
        .zip(noisy.values().unwrap())
        .map(|(c, n)| n - c)
        .collect();
    let sd = (diffs.iter().map(|d| d * d).sum::<f64>() / diffs.len() as f64).sqrt();
    assert!((sd / 0.5 - 1.0).abs() < 0.05, "noise sd {sd}");
    // The workload of seed 1 splits exactly that data set.
    let w = spec.workload(0, 1, 1.0).unwrap();
    let split = d1.split(0.25, 0.25, 1).unwrap();
    let s = Standardiser::fit(&split.train.x);
    assert_close_all(
        w.split().train_x.as_slice().unwrap(),
        s.apply(&split.train.x).as_slice().unwrap(),
        "synthetic train x",
    );
}

fn error_of<T>(r: dptune::Result<T>) -> String {
    match r {
        Err(e) => e.to_string(),
        Ok(_) => panic!("accepted"),
    }
}

/// Bad parameters fail with an error naming the parameter.
#[test]
fn bad_parameters_name_the_parameter() {
    let svm = |t: &str| error_of(RbfSvmSpec::from_params(&table(t)));
    for (text, want) in [
        ("c_range = [10, 1]", "invalid c_range"),
        ("gamma_range = [1e-3, 1e-3]", "invalid gamma_range"),
        ("c_points = 0", "invalid c_points"),
        ("data = \"diabetes\"", "invalid data = diabetes"),
        ("data = \"digits\"", "invalid data = digits"),
        ("data = \"iris\"", "invalid data set = iris"),
        (
            "data = [\"breast-cancer\", \"breast-cancer\"]",
            "invalid data",
        ),
        ("validation = 0", "invalid validation"),
        ("noise = -1", "invalid noise"),
        ("gamma = 1", "has no parameter `gamma`"),
    ] {
        let e = svm(text);
        assert!(e.contains(want), "{text}: `{e}` lacks `{want}`");
    }
    let gp = |t: &str| error_of(GpRegressionSpec::from_params(&table(t)));
    for (text, want) in [
        ("clip = 0", "invalid clip = 0"),
        ("clip = -1", "invalid clip"),
        ("kernel = \"cosine\"", "invalid kernel = cosine"),
        ("lengthscale_range = [1, 0.5]", "invalid lengthscale_range"),
        (
            "noise_variance_range = [0, 1]",
            "invalid noise_variance_range",
        ),
        ("noise_variance_points = 0", "invalid noise_variance_points"),
        ("score = \"rmse\"", "invalid score = rmse"),
        (
            "score = \"loglik\"\nloglik_range = [1, -1]",
            "invalid loglik_range",
        ),
        ("score = \"loglik\"\nclip = 3", "invalid clip"),
        ("loglik_range = [-5, 1]", "invalid loglik_range"),
        ("data = \"breast-cancer\"", "invalid data = breast-cancer"),
        ("lengthscales = \"ard\"", "invalid lengthscales = ard"),
        (
            "lengthscales = \"per-dimension\"",
            "invalid lengthscale_points",
        ),
        ("synthetic = { dim = 0 }", "invalid dim"),
        ("synthetic = { sd = 1 }", "has no parameter `synthetic.sd`"),
    ] {
        let e = gp(text);
        assert!(e.contains(want), "{text}: `{e}` lacks `{want}`");
    }
    // Fractions that leave no training data fail when the split is made.
    let spec = RbfSvmSpec::from_params(&table("validation = 0.6\ntest = 0.5")).unwrap();
    assert!(error_of(spec.workload(0, 1, 1.0)).contains("validation + test"));
    assert!(error_of(svm_spec().workload(3, 1, 1.0)).contains("invalid variant"));
    assert!(error_of(svm_spec().workload(0, 1, 0.0)).contains("invalid noise"));
}

/// `instance` for the same seed gives the same workload whichever spec object, thread count or
/// repetition builds it; another seed gives another split.
#[test]
fn instances_are_deterministic() {
    let pool = |n: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .unwrap()
    };
    let svm_one = pool(1).install(|| svm_spec().workload(0, 3, 1.0).unwrap());
    let svm_four = pool(4).install(|| svm_spec().workload(0, 3, 1.0).unwrap());
    let spec = svm_spec();
    let svm_other = spec.workload(0, 4, 1.0).unwrap();
    let a = spec.instance(0, 3, 0, 1.0).unwrap();
    let b = spec.instance(0, 3, 7, 1.0).unwrap();
    let mut differs = false;
    for h in grid(&svm_one) {
        assert_eq!(
            svm_one.validation_scores(&h),
            svm_four.validation_scores(&h)
        );
        assert_eq!(svm_one.oracle().utility(&h), svm_four.oracle().utility(&h));
        assert_eq!(svm_one.oracle().utility(&h), a.oracle().utility(&h));
        assert_eq!(a.oracle().utility(&h), b.oracle().utility(&h));
        differs |= svm_one.validation_scores(&h) != svm_other.validation_scores(&h);
    }
    assert!(differs, "seed 4 splits differently");

    let gp_one = pool(1).install(|| gp_spec("").workload(0, 3, 1.0).unwrap());
    let gp_four = pool(4).install(|| gp_spec("").workload(0, 3, 1.0).unwrap());
    let gp_other = gp_spec("").workload(0, 4, 1.0).unwrap();
    let h = grid(&gp_one)[5].clone();
    assert_eq!(gp_one.evaluate(&h).unwrap(), gp_four.evaluate(&h).unwrap());
    assert_ne!(
        gp_one.evaluate(&h).unwrap().validation,
        gp_other.evaluate(&h).unwrap().validation
    );
    assert_eq!(
        gp_one.oracle().best_utility(),
        gp_four.oracle().best_utility()
    );
}

/// Runs a tuning experiment with `workload` (a `[workload]` body) through the harness at the
/// smoke profile: naive and Papernot–Steinke at equal budgets ε ∈ {1, 4}, 4 repetitions.
fn run_experiment(tag: &str, workload: &str) -> Table {
    let dir = temp_dir(tag);
    let path = dir.join("exp.toml");
    std::fs::write(
        &path,
        format!(
            "name = \"{tag}\"\nkind = \"tuning\"\nseed = 11\nseeds = 4\ndelta = 1e-6\n\
             [budget]\nepsilons = [1, 4]\n[workload]\n{workload}\n\
             [[tuners]]\ntuner = \"naive\"\n\
             [[tuners]]\ntuner = \"papernot-steinke\"\ndist = \"logarithmic\"\nmean = 5\n"
        ),
    )
    .unwrap();
    let t = common::run_file(&path, Profile::Smoke, &dir.join("out"), 2);
    std::fs::remove_dir_all(dir).unwrap();
    t
}

/// Every run meets its budget, its utility is the oracle's at some grid point, regret ≥ 0,
/// and tuners at the same budget differ in the noise multiplier they can afford.
fn check_runs(t: &Table, variants: usize, utilities: &dyn Fn(usize) -> Vec<f64>) {
    assert_eq!(t.height(), variants * 2 * 2 * 4);
    let (eps, target) = (t.f64("epsilon").unwrap(), t.f64("target_epsilon").unwrap());
    let (utility, best, regret) = (
        t.f64("utility").unwrap(),
        t.f64("best_utility").unwrap(),
        t.f64("regret").unwrap(),
    );
    let (variant, noise, tuner) = (
        t.str("variant").unwrap(),
        t.f64("noise").unwrap(),
        t.str("tuner").unwrap(),
    );
    let labels: Vec<String> = {
        let mut v = variant.to_vec();
        v.dedup();
        v
    };
    assert_eq!(labels.len(), variants);
    for i in 0..t.height() {
        assert!(eps[i].unwrap() <= target[i].unwrap() + 1e-12);
        assert!(regret[i].unwrap() >= 0.0);
        let v = labels.iter().position(|l| *l == variant[i]).unwrap();
        let all = utilities(v);
        assert!(all.contains(&utility[i].unwrap()), "row {i}");
        assert_eq!(
            best[i].unwrap(),
            all.iter().copied().fold(f64::MIN, f64::max)
        );
    }
    let z = |name: &str, e: f64| {
        (0..t.height())
            .find(|&i| tuner[i] == name && target[i] == Some(e))
            .and_then(|i| noise[i])
            .unwrap()
    };
    // 3 × 3 = 9 naive runs vs E[K] = 5 truncated-logarithmic runs: naive needs more noise.
    for e in [1.0, 4.0] {
        assert!(z("naive", e) > z("papernot-steinke", e), "ε = {e}");
        assert!(z("naive", 1.0) > z("naive", 4.0));
    }
}

#[test]
fn a_tuning_experiment_runs_on_the_svm() {
    let body = "kind = \"rbf-svm\"\nc_range = [0.1, 10]\nc_points = 3\n\
                gamma_range = [1e-3, 1e-1]\ngamma_points = 3";
    let t = run_experiment("svm", body);
    let spec = RbfSvmSpec::from_params(&table(body)).unwrap();
    let w = spec.workload(0, 11, 1.0).unwrap();
    let utilities = |_| grid(&w).iter().map(|h| w.oracle().utility(h)).collect();
    check_runs(&t, 1, &utilities);
    assert!(t.str("workload").unwrap().iter().all(|k| k == "rbf-svm"));
}

#[test]
fn a_tuning_experiment_runs_on_gp_regression() {
    let body = "kind = \"gp-regression\"\ndata = [\"diabetes\", \"synthetic\"]\n\
                lengthscale_points = 3\nnoise_variance_points = 3\n\
                synthetic = { n = 100, dim = 2 }";
    let t = run_experiment("gp", body);
    let spec = GpRegressionSpec::from_params(&table(body)).unwrap();
    let ws = [
        spec.workload(0, 11, 1.0).unwrap(),
        spec.workload(1, 11, 1.0).unwrap(),
    ];
    let utilities = |v: usize| {
        grid(&ws[v])
            .iter()
            .map(|h| ws[v].oracle().utility(h))
            .collect()
    };
    check_runs(&t, 2, &utilities);
    let dims = t.u64("dim").unwrap();
    assert!(dims.iter().all(|&d| d == 2));
}

/// A point off the SVM's grid was never trained: a run releases the lowest score plus the same
/// noise (data-independent) and the oracle has no utility (NaN, stored as missing); nothing
/// panics.
#[test]
fn off_grid_points_release_a_data_independent_score() {
    let svm = svm_spec().workload(0, SEED, 2.5).unwrap();
    let off = vec![0.123, -4.567];
    assert!(svm.validation_accuracy(&off).is_none());
    let (mean, _) = release_moments(&svm, &off, 2000);
    let sd = svm.release().sigma();
    assert!(mean.abs() < 5.0 * sd / (2000f64).sqrt(), "{mean}");
    assert!(svm.oracle().utility(&off).is_nan());
}

/// Propose-test's shard utilities: with one shard the fit is the grid's own, so a[j][0] is the
/// validation accuracy a run releases the mean of; with k shards the shape and range hold and
/// the private validation set is declared (its size bounds k).
#[test]
fn svm_shard_utilities_are_shard_fits_scored_on_validation() {
    let w = svm_spec().workload(0, 7, 1.0).unwrap();
    let pu = w.partitioned_utility().unwrap();
    let one = pu
        .shard_utilities(&grid(&w), 1, &mut stream(1, &[]))
        .unwrap();
    for (h, a) in grid(&w).iter().zip(&one) {
        assert_eq!(a, &vec![w.validation_accuracy(h).unwrap()]);
    }
    let five = pu
        .shard_utilities(&grid(&w), 5, &mut stream(1, &[]))
        .unwrap();
    assert_eq!(five.len(), grid(&w).len());
    assert!(five.iter().flatten().all(|a| (0.0..=1.0).contains(a)));
    assert!(five.iter().all(|r| r.len() == 5));
    assert_ne!(
        five,
        pu.shard_utilities(&grid(&w), 5, &mut stream(2, &[]))
            .unwrap()
    );
    assert_eq!(
        pu.private_validation_records(),
        Some(w.validation_scores(&grid(&w)[0]).unwrap().len())
    );
}
