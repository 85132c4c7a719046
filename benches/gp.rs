//! GP speed (issue 5). Targets: at n = 500, d = 10, factorising and predicting 1000 points
//! ≤ 15 ms and ≥ 3× faster than scikit-learn's GaussianProcessRegressor on the same workload
//! (timed by tools/time_gp_sklearn.py); adding one observation to an n = 500 posterior ≤ 1 ms.
//! `gp_lml_gradient` times the marginal-likelihood gradient that hyperparameter fits call at
//! every L-BFGS step (over half of DPareto's time, issue 36's profile).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use dptune::gp::{Kernel, KernelFamily, Posterior};
use dptune::rng::stream;
use ndarray::{Array1, Array2};
use rand::Rng;
use std::hint::black_box;

fn data(n: usize, d: usize) -> (Array2<f64>, Array1<f64>) {
    let mut rng = stream(1, &[n as u64, d as u64]);
    let x = Array2::from_shape_fn((n, d), |_| rng.random::<f64>());
    let y = Array1::from_shape_fn(n, |i| libm::sin(3.0 * x.row(i).sum()));
    (x, y)
}

fn fit_predict(c: &mut Criterion) {
    let mut group = c.benchmark_group("gp_fit_predict_1000");
    group.sample_size(10);
    for d in [2, 10] {
        let kernel = Kernel::isotropic(KernelFamily::Matern52, d, 0.5, 1.0).unwrap();
        let (xs, _) = data(1000, d);
        for n in [100, 500, 2000] {
            let (x, y) = data(n, d);
            group.bench_with_input(BenchmarkId::new(format!("d{d}"), n), &n, |b, _| {
                b.iter(|| {
                    let p = Posterior::fit(kernel.clone(), 0.01, x.clone(), y.clone()).unwrap();
                    p.predict(black_box(xs.view())).unwrap()
                })
            });
        }
    }
    group.finish();
}

fn add_one(c: &mut Criterion) {
    let kernel = Kernel::isotropic(KernelFamily::Matern52, 10, 0.5, 1.0).unwrap();
    let (x, y) = data(501, 10);
    let base = Posterior::fit(
        kernel,
        0.01,
        x.slice(ndarray::s![..500, ..]).to_owned(),
        y.slice(ndarray::s![..500]).to_owned(),
    )
    .unwrap();
    c.bench_function("gp_add_one_observation_n500_d10", |b| {
        b.iter_batched(
            || base.clone(),
            |mut p| p.add(x.row(500), y[500]).unwrap(),
            criterion::BatchSize::LargeInput,
        )
    });
}

fn lml_gradient(c: &mut Criterion) {
    let mut group = c.benchmark_group("gp_lml_gradient_d4");
    group.sample_size(20);
    let kernel = Kernel::new(KernelFamily::Matern52, vec![0.3, 0.5, 0.7, 0.9], 1.3).unwrap();
    for n in [64, 256] {
        let (x, y) = data(n, 4);
        let p = Posterior::fit(kernel.clone(), 0.01, x, y).unwrap();
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| black_box(&p).lml_gradient().unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, fit_predict, add_one, lml_gradient);
criterion_main!(benches);
