//! Spec 000 golden values for the repeat-and-select bounds.

use dptune::accounting::{Accountant, Conversion, DpSgd, Orders, RdpCurve};
use dptune::selection::bounds::{
    conditional_sampling, fixed_k_lower_bound, liu_talwar_epsilon, liu_talwar_threshold_epsilon,
    poisson_approximate_dp_base, pure_repeat_epsilon, tnb_approximate_dp_base,
};
use dptune::selection::{repeat_select, Base, FixedK, PoissonK, RunCount, Tnb, TruncatedK};

fn zcdp(rho: f64) -> Base {
    Base::symmetric(RdpCurve::zcdp(rho).unwrap())
}
fn tnb(eta: f64, mean: f64) -> RunCount {
    RunCount::Tnb(Tnb::from_mean(eta, mean).unwrap())
}
fn poisson(mu: f64) -> RunCount {
    RunCount::Poisson(PoissonK::new(mu).unwrap())
}
fn eps(base: &Base, law: &RunCount, orders: Orders, conversion: Conversion, delta: f64) -> f64 {
    let curve = repeat_select(base, law, &orders).unwrap();
    Accountant::new(orders, conversion)
        .epsilon(&curve, delta)
        .unwrap()
        .epsilon
}

const MEANS: [f64; 3] = [10.0, 100.0, 1000.0];

#[test]
fn table_a_exact_mironov_and_grid() {
    type Row = (f64, [f64; 3], [f64; 3], Option<[f64; 3]>);
    let rows: [Row; 5] = [
        (
            -0.5,
            [3.065742, 3.517345, 3.898397],
            [3.356531, 3.793369, 4.162031],
            None,
        ),
        (
            0.0,
            [3.450841, 4.047730, 4.525260],
            [3.741630, 4.323754, 4.788894],
            Some([3.451878, 4.049188, 4.526788]),
        ),
        (
            0.5,
            [3.778013, 4.557501, 5.177127],
            [4.068803, 4.833525, 5.440760],
            Some([3.779081, 4.558951, 5.178630]),
        ),
        (
            1.0,
            [4.067762, 5.052888, 5.839998],
            [4.358552, 5.328912, 6.103632],
            Some([4.068797, 5.054325, 5.841504]),
        ),
        (
            5.0,
            [5.720744, 8.559695, 10.854337],
            [6.011534, 8.835719, 11.117971],
            Some([5.721798, 8.561160, 10.855866]),
        ),
    ];
    let base = zcdp(0.1);
    for (eta, exact, mironov, grid) in rows {
        for (i, mean) in MEANS.into_iter().enumerate() {
            let law = tnb(eta, mean);
            let e = eps(&base, &law, Orders::Continuous, Conversion::Cks, 1e-6);
            assert!(
                (e - exact[i]).abs() <= 2e-6,
                "η={eta} E={mean}: exact {e} vs {}",
                exact[i]
            );
            let m = eps(&base, &law, Orders::Continuous, Conversion::Mironov, 1e-6);
            assert!(
                (m - mironov[i]).abs() <= 2e-6,
                "η={eta} E={mean}: Mironov {m} vs {}",
                mironov[i]
            );
            if let Some(grid) = grid {
                let g = eps(&base, &law, Orders::DpAccounting, Conversion::Cks, 1e-6);
                assert!(
                    (g - grid[i]).abs() <= 1e-6,
                    "η={eta} E={mean}: grid {g} vs {}",
                    grid[i]
                );
                assert!(e <= g, "continuous {e} above grid {g}");
            }
        }
    }
}

#[test]
fn table_a_poisson() {
    let base = zcdp(0.1);
    let exact = [4.607373, 18.758751, 42.820560];
    let grid = [4.607412, 18.760367, 42.826779];
    for (i, mu) in MEANS.into_iter().enumerate() {
        let law = poisson(mu);
        let e = eps(&base, &law, Orders::Continuous, Conversion::Cks, 1e-6);
        assert!(
            (e - exact[i]).abs() <= 2e-6,
            "μ={mu}: exact {e} vs {}",
            exact[i]
        );
        let g = eps(&base, &law, Orders::DpAccounting, Conversion::Cks, 1e-6);
        assert!(
            (g - grid[i]).abs() <= 1e-6,
            "μ={mu}: grid {g} vs {}",
            grid[i]
        );
    }
}

#[test]
fn table_c_pure_dp() {
    for (eta, golden) in [(-0.5, 1.5), (0.0, 2.0), (0.5, 2.5), (1.0, 3.0), (5.0, 7.0)] {
        assert_eq!(pure_repeat_epsilon(1.0, eta).unwrap(), golden);
    }
    assert_eq!(liu_talwar_epsilon(1.0).unwrap(), 3.0);
    assert_eq!(liu_talwar_threshold_epsilon(1.0).unwrap(), 2.0);
    // The RDP route agrees: a pure base with a TNB is never worse than (2+η)ε at any δ.
    let base = Base::symmetric(RdpCurve::pure_dp(1.0).unwrap());
    for eta in [0.0, 1.0] {
        let e = eps(
            &base,
            &tnb(eta, 10.0),
            Orders::Continuous,
            Conversion::Cks,
            1e-6,
        );
        assert!(e <= 2.0 + eta + 1e-6, "η={eta}: {e}");
    }
}

#[test]
fn table_d_rdp_curves() {
    let base = zcdp(0.1);
    let at = |law: &RunCount, order: f64| {
        repeat_select(&base, law, &Orders::Continuous)
            .unwrap()
            .eval(order)
            .unwrap()
    };
    let flat = |law: &RunCount, order: f64| {
        repeat_select(&base, law, &Orders::Continuous)
            .unwrap()
            .envelope()
            .eval(order)
            .unwrap()
    };
    let log10 = tnb(0.0, 10.0);
    assert!(
        (flat(&log10, 3.0) - 2.162194339).abs() < 1e-8,
        "{}",
        flat(&log10, 3.0)
    );
    for (l, v) in [
        (10.0, 2.358331944),
        (20.0, 3.223677845),
        (30.0, 4.181888642),
    ] {
        assert!((at(&log10, l) - v).abs() < 1e-8, "λ={l}: {}", at(&log10, l));
        assert!((flat(&log10, l) - v).abs() < 1e-8);
    }
    let log1e6 = tnb(0.0, 1e6);
    assert!((flat(&log1e6, 5.0) - 4.92966442).abs() < 1e-7);
    for (l, v) in [(20.0, 5.206008554), (30.0, 5.955273335)] {
        assert!(
            (at(&log1e6, l) - v).abs() < 1e-8,
            "λ={l}: {}",
            at(&log1e6, l)
        );
    }
    let geo = tnb(1.0, 10.0);
    assert!((flat(&geo, 2.0) - 2.779115547).abs() < 1e-8);
    for (l, v) in [
        (10.0, 2.975253153),
        (30.0, 4.798809851),
        (50.0, 6.766401897),
    ] {
        assert!((at(&geo, l) - v).abs() < 1e-8, "λ={l}: {}", at(&geo, l));
    }
    let eta5 = tnb(5.0, 10.0);
    assert!((flat(&eta5, 2.0) - 4.432097512).abs() < 1e-8);
    assert!((at(&eta5, 30.0) - 6.451791815).abs() < 1e-8);
    // Spec values are Theorem 6 as stated; ours adds back P[K = 0] = e^{−μ} (see
    // bounds::repeat_select): ln(e^{−μ} + e^{(λ−1)v})/(λ−1), 2.5e-6 more at λ = 2.
    let p = poisson(10.0);
    for (l, v) in [
        (2.0f64, 2.880703626f64),
        (5.0, 2.763092081),
        (10.0, 3.442034644),
        (30.0, 5.589521535),
    ] {
        let corrected = libm::log(libm::exp(-10.0f64) + libm::exp((l - 1.0) * v)) / (l - 1.0);
        assert!(
            (at(&p, l) - corrected).abs() < 1e-8,
            "Poisson λ={l}: {} vs {corrected}",
            at(&p, l)
        );
        assert!(
            at(&p, l) >= v - 1e-9,
            "the correction never lowers the bound"
        );
    }
    assert!((flat(&p, 1.5) - 2.486453).abs() < 1e-6, "{}", flat(&p, 1.5));
}

#[test]
fn table_f_truncation() {
    let law = RunCount::Truncated(TruncatedK::new(tnb(0.0, 10.0), 100).unwrap());
    let e = eps(&zcdp(0.1), &law, Orders::Continuous, Conversion::Cks, 1e-6);
    assert!((e - 3.518806).abs() <= 2e-6, "{e}");
}

#[test]
fn table_f_approximate_dp_bases() {
    let a = poisson_approximate_dp_base(1.0, 1e-8, 10.0).unwrap();
    assert!((a.max_order - 1.581977).abs() < 1e-6);
    assert!((a.epsilon - 4.956490).abs() < 1e-6);
    assert!((a.delta / 9.9999995e-8 - 1.0).abs() < 1e-9);
    for (eta, e, d) in [(0.0, 2.0, 9.999998e-8), (1.0, 3.0, 9.999999e-8)] {
        let b = tnb_approximate_dp_base(1.0, 1e-8, &Tnb::from_mean(eta, 10.0).unwrap()).unwrap();
        assert_eq!(b.epsilon, e);
        assert!(
            b.delta >= d * (1.0 - 1e-9) && (b.delta / d - 1.0).abs() < 1e-6,
            "η={eta}: δ {}",
            b.delta
        );
    }
    assert!(
        a.to_dp(1e-8).is_err(),
        "a total δ below δ′ must be rejected"
    );
    assert!(a.to_dp(1e-6).unwrap().epsilon > a.epsilon);
}

#[test]
fn table_f_conditional_sampling() {
    let curve = conditional_sampling(&zcdp(0.1), 0.01, &Orders::Continuous).unwrap();
    let (mut best, mut at) = (f64::INFINITY, 0.0);
    for i in 0..200_000 {
        let l = 2.0 + i as f64 * 1e-4;
        let v = curve.eval(l).unwrap();
        if v < best {
            (best, at) = (v, l);
        }
    }
    assert!(
        (best - 2.714456).abs() < 1e-6 && (at - 7.786).abs() < 2e-3,
        "{best} at {at}"
    );
    let b = Accountant::default().epsilon(&curve, 1e-6).unwrap();
    assert!((b.epsilon - 3.967011).abs() <= 2e-6, "{}", b.epsilon);
    assert!((b.order.unwrap() - 11.152).abs() < 2e-3, "{:?}", b.order);
}

#[test]
fn table_f_fixed_k_lower_bound() {
    assert!((fixed_k_lower_bound(1.0, 10, 2.0) - 6.867383).abs() < 1e-6);
    assert!((fixed_k_lower_bound(1.0, 10, 10.0) - 9.651931).abs() < 1e-6);
    assert_eq!(fixed_k_lower_bound(1.0, 10, f64::INFINITY), 10.0);
    // The fixed-K bound (composition) sits above the lower bound.
    let rr = Base::symmetric(
        dptune::accounting::RandomizedResponse::new(1.0)
            .unwrap()
            .rdp(),
    );
    let k10 = repeat_select(
        &rr,
        &RunCount::Fixed(FixedK::new(10).unwrap()),
        &Orders::Continuous,
    )
    .unwrap();
    for l in [2.0, 10.0, 100.0] {
        assert!(k10.eval(l).unwrap() >= fixed_k_lower_bound(1.0, 10, l) - 1e-12);
    }
}

#[test]
fn table_f_dpsgd_mnist_repeated() {
    let base = Base::symmetric(DpSgd::new(256.0 / 60000.0, 1.1, 14063).unwrap().rdp());
    let rows = [
        (tnb(0.0, 10.0), 4.294510),
        (tnb(0.0, 100.0), 5.113852),
        (tnb(0.5, 10.0), 4.695845),
        (tnb(0.5, 100.0), 5.752975),
        (tnb(1.0, 10.0), 5.049005),
        (tnb(1.0, 100.0), 6.373923),
        (poisson(10.0), 5.748903),
        (poisson(100.0), 24.094852),
    ];
    for (law, golden) in rows {
        let g = eps(&base, &law, Orders::DpAccounting, Conversion::Cks, 1e-5);
        assert!(
            (g - golden).abs() <= 1e-6,
            "{}: {g} vs {golden}",
            law.family()
        );
        let c = eps(&base, &law, Orders::Continuous, Conversion::Cks, 1e-5);
        assert!(
            c <= g + 1e-9,
            "{}: continuous {c} above grid {g}",
            law.family()
        );
    }
}
