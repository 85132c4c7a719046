//! Repeat-and-select speed. Targets (issue 3): one bound with a zCDP base and continuous λ
//! ≤ 30 µs; one with a DP-SGD base on the 156-order grid ≤ 300 µs; ≥ 10⁷ samples of K per
//! second at E[K] = 100. `python3 tools/time_dp_accounting.py` times dp-accounting on the same.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use dptune::accounting::{Accountant, Conversion, DpSgd, Orders, RdpCurve};
use dptune::selection::{repeat_select, Base, PoissonK, RunCount, Tnb};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::Distribution;
use std::hint::black_box;

fn bounds(c: &mut Criterion) {
    let zcdp = Base::symmetric(RdpCurve::zcdp(0.1).unwrap());
    let acc = Accountant::default();
    c.bench_function("repeat_select_zcdp_continuous", |b| {
        b.iter(|| {
            let law = RunCount::Tnb(Tnb::logarithmic(black_box(100.0)).unwrap());
            let curve = repeat_select(&zcdp, &law, &Orders::Continuous).unwrap();
            acc.epsilon(&curve, black_box(1e-6)).unwrap()
        })
    });
    let grid = Accountant::new(Orders::DpAccounting, Conversion::Cks);
    c.bench_function("repeat_select_dpsgd_dp_accounting_orders", |b| {
        b.iter(|| {
            let base = Base::symmetric(DpSgd::new(black_box(0.01), 1.1, 1000).unwrap().rdp());
            let law = RunCount::Tnb(Tnb::geometric(black_box(100.0)).unwrap());
            let curve = repeat_select(&base, &law, &Orders::DpAccounting).unwrap();
            grid.epsilon(&curve, black_box(1e-5)).unwrap()
        })
    });
}

fn sampling(c: &mut Criterion) {
    let mut group = c.benchmark_group("sample_k_1e6_mean_100");
    group.throughput(Throughput::Elements(1_000_000));
    let laws = [
        (
            "logarithmic",
            RunCount::Tnb(Tnb::logarithmic(100.0).unwrap()),
        ),
        ("geometric", RunCount::Tnb(Tnb::geometric(100.0).unwrap())),
        (
            "tnb_eta_0.5",
            RunCount::Tnb(Tnb::from_mean(0.5, 100.0).unwrap()),
        ),
        (
            "tnb_eta_-0.5",
            RunCount::Tnb(Tnb::from_mean(-0.5, 100.0).unwrap()),
        ),
        ("poisson", RunCount::Poisson(PoissonK::new(100.0).unwrap())),
    ];
    for (name, law) in laws {
        group.bench_function(name, |b| {
            let mut rng = ChaCha8Rng::seed_from_u64(1);
            b.iter(|| (0..1_000_000).map(|_| law.sample(&mut rng)).sum::<u64>())
        });
    }
    group.finish();
}

criterion_group!(benches, bounds, sampling);
criterion_main!(benches);
