//! Accounting speed. Targets (issue 2): one DP-SGD accounting (q = 0.01, σ = 1.1, 1000 steps,
//! δ = 1e-5, 156 orders) ≤ 200 µs; one RDP → ε conversion on 156 orders ≤ 5 µs.
//! `python3 tools/time_dp_accounting.py` times dp-accounting 0.6.0 on the same two cases.
//! The PLD accountant (issue 40) on DP-SGD's two cases at dp-accounting's default grid of 10⁻⁴;
//! `python3 tools/bench_pld.py` runs it beside dp-accounting's and prv_accountant's.

use criterion::{criterion_group, criterion_main, Criterion};
use dptune::accounting::pld::{PldAccountant, PldMechanism};
use dptune::accounting::{Accountant, Conversion, DpSgd, Orders, DP_ACCOUNTING_ORDERS};
use std::hint::black_box;

fn dpsgd_accounting(c: &mut Criterion) {
    let grid = Accountant::new(Orders::DpAccounting, Conversion::Cks);
    c.bench_function("dpsgd_epsilon_dp_accounting_orders", |b| {
        b.iter(|| {
            let m = DpSgd::new(black_box(0.01), black_box(1.1), black_box(1000)).unwrap();
            grid.epsilon(&m.rdp(), black_box(1e-5)).unwrap()
        })
    });
    let continuous = Accountant::default();
    c.bench_function("dpsgd_epsilon_continuous", |b| {
        b.iter(|| {
            let m = DpSgd::new(black_box(0.01), black_box(1.1), black_box(1000)).unwrap();
            continuous.epsilon(&m.rdp(), black_box(1e-5)).unwrap()
        })
    });
}

fn conversion(c: &mut Criterion) {
    let sampled = DpSgd::new(0.01, 1.1, 1000)
        .unwrap()
        .rdp()
        .on_orders(&DP_ACCOUNTING_ORDERS)
        .unwrap();
    let acc = Accountant::default();
    c.bench_function("rdp_to_epsilon_156_orders", |b| {
        b.iter(|| acc.epsilon(black_box(&sampled), black_box(1e-5)).unwrap())
    });
}

fn pld(c: &mut Criterion) {
    let mut group = c.benchmark_group("pld_dpsgd_epsilon");
    group.sample_size(10);
    for (name, q, steps) in [
        ("q0.01_T1000", 0.01, 1000),
        ("mnist_T14063", 256.0 / 60000.0, 14063),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let (step, count) = PldMechanism::dpsgd(&DpSgd::new(q, 1.1, steps).unwrap());
                let mut pld = PldAccountant::new(1e-4).unwrap();
                pld.compose(step, black_box(count)).unwrap();
                pld.epsilon(black_box(1e-5)).unwrap()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, dpsgd_accounting, conversion, pld);
criterion_main!(benches);
