//! Accounting speed. Targets (issue 2): one DP-SGD accounting (q = 0.01, σ = 1.1, 1000 steps,
//! δ = 1e-5, 156 orders) ≤ 200 µs; one RDP → ε conversion on 156 orders ≤ 5 µs.
//! `python3 tools/time_dp_accounting.py` times dp-accounting 0.6.0 on the same two cases.

use criterion::{criterion_group, criterion_main, Criterion};
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

criterion_group!(benches, dpsgd_accounting, conversion);
criterion_main!(benches);
