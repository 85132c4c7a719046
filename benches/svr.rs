//! SVR speed (spec 004 §4.2(d)): one evaluation of the `svr-ct-slices` objective at d = 103 on
//! the synthetic stand-in (fit an ε-SVR on 1000 training rows × 100 features by SMO, then
//! predict the 9000 validation rows), at the centre of the box and at the slow corner (longest
//! lengthscales, smallest ε and γ, largest C: a smooth, ill-conditioned kernel and the most
//! support vectors); and the fit alone at the centre. A DP-GIBO run at T = 10, b = 104 makes
//! 1040 such evaluations.

use criterion::{criterion_group, criterion_main, Criterion};
use dptune::data::ct_slices::{synthetic_ct_slices, STAND_IN_ROWS};
use dptune::workloads::svr_ct_slices::{Profile, SvrConfig, SvrProblem};
use std::hint::black_box;

fn svr_evaluation(c: &mut Criterion) {
    let data = synthetic_ct_slices(1, STAND_IN_ROWS);
    let config = SvrConfig {
        best_samples: 1,
        ..SvrConfig::new(Profile::Paper)
    };
    let problem = SvrProblem::new(&data, &config, 1).unwrap();
    let d = problem.dim();
    assert_eq!(d, 103);
    let centre = vec![0.5; d];
    let mut corner = vec![1.0; d];
    corner[d - 3] = 0.0; // ε = 0.01
    corner[d - 1] = 0.0; // γ = 0.01
    for (name, u) in [("centre", &centre), ("slow_corner", &corner)] {
        let svr = problem.fit(u).unwrap();
        eprintln!(
            "{name}: {} support vectors, {} SMO iterations",
            svr.n_support(),
            svr.iterations()
        );
    }
    let mut group = c.benchmark_group("svr_ct_slices_d103");
    group.sample_size(10);
    group.bench_function("fit_and_predict_centre", |b| {
        b.iter(|| problem.validation_losses(black_box(&centre)).unwrap())
    });
    group.bench_function("fit_and_predict_slow_corner", |b| {
        b.iter(|| problem.validation_losses(black_box(&corner)).unwrap())
    });
    group.bench_function("fit_centre", |b| {
        b.iter(|| problem.fit(black_box(&centre)).unwrap())
    });
    group.finish();
}

criterion_group!(benches, svr_evaluation);
criterion_main!(benches);
