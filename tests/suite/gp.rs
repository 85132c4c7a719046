//! The exact GP: derivatives against finite differences, incremental updates against refits,
//! near-singular inputs, and (with a fixture from tools/make_gp_sklearn_fixture.py)
//! scikit-learn's GaussianProcessRegressor.

use dptune::gp::{Kernel, KernelFamily, Posterior};
use dptune::rng::{normal, stream};
use ndarray::{array, Array1, Array2};
use rand::Rng;

const FAMILIES: [KernelFamily; 3] = [
    KernelFamily::Rbf,
    KernelFamily::Matern32,
    KernelFamily::Matern52,
];

fn data(n: usize, d: usize, seed: u64) -> (Array2<f64>, Array1<f64>) {
    let mut rng = stream(seed, &[]);
    let x = Array2::from_shape_fn((n, d), |_| rng.random::<f64>());
    let y = Array1::from_shape_fn(n, |i| {
        libm::sin(3.0 * x.row(i).sum()) + 0.1 * normal(&mut rng)
    });
    (x, y)
}

fn kernel(f: KernelFamily) -> Kernel {
    Kernel::new(f, vec![0.4, 0.8], 1.3).unwrap()
}

#[test]
fn lml_gradient_matches_finite_differences() {
    let (x, y) = data(25, 2, 1);
    for f in FAMILIES {
        let k = kernel(f);
        let noise = 0.05;
        let p = Posterior::fit(k.clone(), noise, x.clone(), y.clone()).unwrap();
        let g = p.lml_gradient().unwrap();
        let mut theta = k.log_params();
        theta.push(libm::log(noise));
        let lml = |t: &[f64]| {
            let k = k.with_log_params(&t[..3]).unwrap();
            Posterior::fit(k, libm::exp(t[3]), x.clone(), y.clone())
                .unwrap()
                .log_marginal_likelihood()
        };
        for i in 0..4 {
            let h = 1e-5;
            let (mut tp, mut tm) = (theta.clone(), theta.clone());
            tp[i] += h;
            tm[i] -= h;
            let fd = (lml(&tp) - lml(&tm)) / (2.0 * h);
            assert!(
                (fd - g[i]).abs() < 1e-5 * (1.0 + fd.abs()),
                "{f:?} θ{i}: {fd} vs {}",
                g[i]
            );
        }
    }
}

/// The gradient posterior equals the posterior of central differences as h → 0.
#[test]
fn gradient_posterior_matches_finite_differences() {
    let (x, y) = data(15, 2, 2);
    let at = array![0.37, 0.61];
    // Matérn 3/2 paths are once differentiable: the difference quotient converges like O(h).
    let h = 1e-5;
    for f in FAMILIES {
        let p = Posterior::fit(kernel(f), 0.01, x.clone(), y.clone()).unwrap();
        let (gm, gc) = p.gradient(at.view()).unwrap();
        // Points x + h e_0, x − h e_0, x + h e_1, x − h e_1.
        let pts = Array2::from_shape_fn((4, 2), |(r, c)| {
            at[c]
                + if c == r / 2 {
                    if r % 2 == 0 {
                        h
                    } else {
                        -h
                    }
                } else {
                    0.0
                }
        });
        let (m, c) = p.predict_cov(pts.view()).unwrap();
        for i in 0..2 {
            let fd = (m[2 * i] - m[2 * i + 1]) / (2.0 * h);
            assert!(
                (fd - gm[i]).abs() < 1e-5 * (1.0 + fd.abs()),
                "{f:?} mean {i}: {fd} vs {}",
                gm[i]
            );
            for j in 0..2 {
                let cov = (c[[2 * i, 2 * j]] - c[[2 * i, 2 * j + 1]] - c[[2 * i + 1, 2 * j]]
                    + c[[2 * i + 1, 2 * j + 1]])
                    / (4.0 * h * h);
                assert!(
                    (cov - gc[[i, j]]).abs() < 1e-3 * (1.0 + cov.abs()),
                    "{f:?} cov {i}{j}: {cov} vs {}",
                    gc[[i, j]]
                );
            }
        }
    }
}

#[test]
fn adding_observations_equals_refitting() {
    let (x, y) = data(30, 2, 3);
    for f in FAMILIES {
        let mut inc = Posterior::prior(kernel(f), 0.02).unwrap();
        for i in 0..30 {
            inc.add(x.row(i), y[i]).unwrap();
        }
        let full = Posterior::fit(kernel(f), 0.02, x.clone(), y.clone()).unwrap();
        let (t, _) = data(9, 2, 4);
        let (m1, v1) = inc.predict(t.view()).unwrap();
        let (m2, v2) = full.predict(t.view()).unwrap();
        for i in 0..9 {
            assert!(
                (m1[i] - m2[i]).abs() < 1e-10 && (v1[i] - v2[i]).abs() < 1e-10,
                "{f:?}"
            );
        }
        assert!((inc.log_marginal_likelihood() - full.log_marginal_likelihood()).abs() < 1e-9);
    }
}

/// Duplicated points without noise and a lengthscale far below the spacing: a result (with
/// jitter) or a clear error, never NaN.
#[test]
fn near_singular_inputs_give_results_or_errors_never_nan() {
    let x = array![[0.5, 0.5], [0.5, 0.5], [0.5, 0.5], [0.2, 0.9]];
    let y = array![1.0, 1.0, 1.0, -0.5];
    let t = array![[0.5, 0.5], [0.3, 0.3]];
    for f in FAMILIES {
        for (ls, noise) in [(0.4, 0.0), (1e-6, 0.0), (50.0, 0.0)] {
            let k = Kernel::new(f, vec![ls, ls], 1.0).unwrap();
            match Posterior::fit(k.clone(), noise, x.clone(), y.clone()) {
                Ok(p) => {
                    let (m, v) = p.predict(t.view()).unwrap();
                    assert!(
                        m.iter().chain(v.iter()).all(|a| a.is_finite()),
                        "{f:?} ℓ={ls}"
                    );
                    assert!(v.iter().all(|&a| a >= 0.0));
                    assert!(p.log_marginal_likelihood().is_finite());
                    assert!(p.jitter() > 0.0, "duplicates need jitter");
                }
                Err(e) => assert!(e.to_string().contains("not positive definite"), "{e}"),
            }
            let mut inc = Posterior::prior(k, noise).unwrap();
            for i in 0..4 {
                if inc.add(x.row(i), y[i]).is_err() {
                    break;
                }
            }
            let (m, v) = inc.predict(t.view()).unwrap();
            assert!(m.iter().chain(v.iter()).all(|a| a.is_finite()));
        }
    }
    let k = Kernel::new(KernelFamily::Rbf, vec![0.3, 0.3], 1.0).unwrap();
    assert!(Posterior::fit(k.clone(), 0.1, array![[f64::NAN, 0.0]], array![1.0]).is_err());
    assert!(Posterior::fit(k.clone(), -0.1, array![[0.0, 0.0]], array![1.0]).is_err());
    assert!(Posterior::fit(k, 0.1, array![[0.0, 0.0, 0.0]], array![1.0]).is_err());
}

/// Prior samples have the kernel's covariance (a check on `sample` against the kernel itself).
#[test]
fn prior_samples_have_the_kernel_covariance() {
    let k = Kernel::new(KernelFamily::Matern52, vec![0.3], 2.0).unwrap();
    let p = Posterior::prior(k.clone(), 0.0).unwrap();
    let xs = array![[0.1], [0.3]];
    let mut rng = stream(9, &[]);
    let n = 20000;
    let (mut s01, mut s00) = (0.0, 0.0);
    for _ in 0..n {
        let f = p.sample(xs.view(), &mut rng).unwrap();
        s01 += f[0] * f[1];
        s00 += f[0] * f[0];
    }
    let want = k.eval(xs.row(0), xs.row(1));
    assert!(
        (s01 / n as f64 - want).abs() < 0.08,
        "{} vs {want}",
        s01 / n as f64
    );
    assert!((s00 / n as f64 - 2.0).abs() < 0.08);
}

/// scikit-learn 1.9.1's GaussianProcessRegressor with a fixed kernel (alpha = σ², no
/// optimiser) on 18 random cases: kernel matrix, posterior mean, variance, covariance and log
/// marginal likelihood to 1e-8 relative (with a 1e-12·s² floor for entries that are 0).
#[test]
fn posterior_matches_scikit_learn() {
    let text = std::fs::read_to_string("tests/fixtures/gp_sklearn.json").unwrap();
    let fx: serde_json::Value = serde_json::from_str(&text).unwrap();
    let matrix = |v: &serde_json::Value| {
        let rows: Vec<Vec<f64>> = serde_json::from_value(v.clone()).unwrap();
        Array2::from_shape_fn((rows.len(), rows[0].len()), |(i, j)| rows[i][j])
    };
    let vector = |v: &serde_json::Value| {
        Array1::from(serde_json::from_value::<Vec<f64>>(v.clone()).unwrap())
    };
    let cases = fx["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 18);
    for c in cases {
        let name = c["name"].as_str().unwrap();
        let family = KernelFamily::parse(c["kernel"].as_str().unwrap()).unwrap();
        let s2 = c["signal_variance"].as_f64().unwrap();
        let ls: Vec<f64> = serde_json::from_value(c["lengthscales"].clone()).unwrap();
        let k = Kernel::new(family, ls, s2).unwrap();
        let (x, y, xs) = (matrix(&c["x"]), vector(&c["y"]), matrix(&c["xs"]));
        let close = |got: f64, want: f64, what: &str| {
            assert!(
                (got - want).abs() <= 1e-8 * want.abs() + 1e-12 * s2,
                "{name} {what}: {got} vs {want}"
            );
        };
        let kx = k.matrix(x.view(), xs.view());
        for (g, w) in kx.iter().zip(matrix(&c["k_x_xs"]).iter()) {
            close(*g, *w, "k(x, xs)");
        }
        let p = Posterior::fit(k, c["noise_variance"].as_f64().unwrap(), x, y).unwrap();
        assert_eq!(p.jitter(), 0.0, "{name}: no jitter needed with noise");
        let (mean, cov) = p.predict_cov(xs.view()).unwrap();
        let (_, var) = p.predict(xs.view()).unwrap();
        for i in 0..mean.len() {
            close(mean[i], vector(&c["mean"])[i], "mean");
            close(var[i], vector(&c["variance"])[i], "variance");
        }
        for (g, w) in cov.iter().zip(matrix(&c["cov"]).iter()) {
            close(*g, *w, "cov");
        }
        close(
            p.log_marginal_likelihood(),
            c["lml"].as_f64().unwrap(),
            "lml",
        );
    }
}
