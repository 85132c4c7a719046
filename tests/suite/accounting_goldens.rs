//! Spec 000 golden values and properties every accountant must have.

use dptune::accounting::convert::{gdp_epsilon, zcdp_epsilon};
use dptune::accounting::{
    calibrate_dpsgd_noise, Accountant, Conversion, DpSgd, Gaussian, Laplace, LotSampling, Orders,
    RandomizedResponse, RdpCurve,
};

fn grid() -> Accountant {
    Accountant::new(Orders::DpAccounting, Conversion::Cks)
}

fn mnist() -> DpSgd {
    DpSgd::new(256.0 / 60000.0, 1.1, 14063).unwrap()
}

#[test]
fn spec_000_dpsgd_mnist_base() {
    let curve = mnist().rdp();
    let b = grid().epsilon(&curve, 1e-5).unwrap();
    assert!((b.epsilon - 2.596656).abs() < 5e-7, "{}", b.epsilon);
    for (order, golden) in [(2.0, 0.329014798), (4.0, 0.668461534), (8.0, 1.382970352)] {
        let r = curve.eval(order).unwrap();
        assert!((r - golden).abs() < 1e-9, "order {order}: {r} vs {golden}");
    }
    let continuous = Accountant::default().epsilon(&curve, 1e-5).unwrap();
    assert!(
        continuous.epsilon <= b.epsilon,
        "{} > {}",
        continuous.epsilon,
        b.epsilon
    );
}

#[test]
fn spec_000_table_b_naive_composition() {
    let acc = Accountant::default();
    let base = RdpCurve::zcdp(0.1).unwrap();
    for (k, golden) in [
        (1, 2.141939),
        (10, 7.766217),
        (100, 32.221661),
        (1000, 172.177551),
    ] {
        let e = acc.epsilon(&base.self_compose(k), 1e-6).unwrap().epsilon;
        assert!((e - golden).abs() <= 2e-6, "k={k}: {e} vs {golden}");
    }
}

#[test]
fn epsilon_falls_as_delta_grows_and_rises_with_steps_and_rate() {
    for acc in [Accountant::default(), grid()] {
        let curve = DpSgd::new(0.01, 1.0, 1000).unwrap().rdp();
        let eps: Vec<f64> = [1e-10, 1e-8, 1e-6, 1e-4, 1e-2]
            .iter()
            .map(|&d| acc.epsilon(&curve, d).unwrap().epsilon)
            .collect();
        assert!(eps.windows(2).all(|w| w[0] > w[1]), "{eps:?}");
        let by_steps: Vec<f64> = [1, 10, 100, 1000, 10000]
            .iter()
            .map(|&t| {
                acc.epsilon(&DpSgd::new(0.01, 1.0, t).unwrap().rdp(), 1e-5)
                    .unwrap()
                    .epsilon
            })
            .collect();
        assert!(by_steps.windows(2).all(|w| w[0] < w[1]), "{by_steps:?}");
        let by_rate: Vec<f64> = [0.001, 0.01, 0.1, 0.5, 1.0]
            .iter()
            .map(|&q| {
                acc.epsilon(&DpSgd::new(q, 1.0, 100).unwrap().rdp(), 1e-5)
                    .unwrap()
                    .epsilon
            })
            .collect();
        assert!(by_rate.windows(2).all(|w| w[0] < w[1]), "{by_rate:?}");
    }
}

#[test]
fn epsilon_delta_round_trip() {
    let curves = [
        RdpCurve::zcdp(0.3).unwrap(),
        DpSgd::new(0.02, 0.9, 500).unwrap().rdp(),
        Laplace::new(1.0, 2.0).unwrap().rdp(),
    ];
    for acc in [Accountant::default(), grid()] {
        for c in &curves {
            for delta in [1e-9, 1e-5, 1e-3] {
                let e = acc.epsilon(c, delta).unwrap();
                let back = acc.delta(c, e.epsilon).unwrap();
                // The order that gave ε gives δ back, so the best δ is no larger, but for the
                // rounding allowance both directions carry (at the orders near 10⁹ that a
                // pure-DP curve's δ prefers, (λ−1)·ulp is about 1e-7 in ln δ).
                assert!(
                    back.delta <= delta * (1.0 + 1e-6),
                    "{c:?} δ={delta}: back {}",
                    back.delta
                );
                // And it is not much smaller (ε was the smallest for δ).
                assert!(
                    back.delta >= delta * 0.5,
                    "{c:?} δ={delta}: back {}",
                    back.delta
                );
            }
        }
    }
}

#[test]
fn cks_is_never_looser_than_mironov_and_exact_gdp_is_tightest() {
    for orders in [Orders::Continuous, Orders::DpAccounting] {
        let cks = Accountant::new(orders.clone(), Conversion::Cks);
        let mironov = Accountant::new(orders, Conversion::Mironov);
        for c in [
            RdpCurve::zcdp(0.05).unwrap(),
            DpSgd::new(0.01, 1.1, 1000).unwrap().rdp(),
            RandomizedResponse::new(1.0).unwrap().rdp(),
        ] {
            for delta in [1e-8, 1e-5, 1e-2] {
                let a = cks.epsilon(&c, delta).unwrap().epsilon;
                let b = mironov.epsilon(&c, delta).unwrap().epsilon;
                assert!(a <= b, "{c:?} δ={delta}: CKS {a} > Mironov {b}");
            }
        }
    }
    // The Gaussian mechanism is exactly (Δ/σ)-GDP: the exact curve beats any RDP conversion.
    let g = Gaussian::new(1.0, 3.0).unwrap();
    for delta in [1e-8, 1e-5] {
        let exact = gdp_epsilon(g.mu(), delta).unwrap().epsilon;
        let rdp = zcdp_epsilon(g.rho(), delta, &Accountant::default())
            .unwrap()
            .epsilon;
        assert!(
            exact <= rdp && exact > 0.5 * rdp,
            "exact {exact} vs RDP {rdp}"
        );
    }
}

#[test]
fn exact_curves_are_below_the_generic_pure_dp_curve() {
    let pure = RdpCurve::pure_dp(1.0).unwrap();
    let lap = Laplace::new(1.0, 1.0).unwrap().rdp();
    let rr = RandomizedResponse::new(1.0).unwrap().rdp();
    for order in [1.01, 1.5, 2.0, 10.0, 1000.0] {
        let p = pure.eval(order).unwrap();
        assert!(
            lap.eval(order).unwrap() <= p && rr.eval(order).unwrap() <= p,
            "order {order}"
        );
    }
}

#[test]
fn calibration_meets_its_target_and_is_the_smallest() {
    use LotSampling::{Poisson, WithoutReplacement};
    for acc in [Accountant::default(), grid()] {
        for &(sampling, q, steps, target, delta) in &[
            (Poisson, 0.01, 1000, 1.0, 1e-5),
            (Poisson, 0.1, 50, 4.0, 1e-6),
            (Poisson, 1.0, 10, 2.0, 1e-5),
            (WithoutReplacement, 0.01, 1000, 1.0, 1e-5),
            (WithoutReplacement, 256.0 / 60000.0, 58_500, 1.0, 1e-5),
            // Below the bound's plateau (about 0.86 for σ from 100 to 1000): only the
            // unamplified Gaussian bound, at σ near 1850, meets it.
            (WithoutReplacement, 256.0 / 60000.0, 58_500, 0.5, 1e-5),
        ] {
            let c = calibrate_dpsgd_noise(sampling, q, steps, target, delta, &acc).unwrap();
            let at = |sigma: f64| {
                let m = DpSgd::with_sampling(sampling, q, sigma, steps).unwrap();
                acc.epsilon(&m.rdp(), delta).unwrap().epsilon
            };
            assert!(
                at(c.value) <= target,
                "σ={} gives {} > {target}",
                c.value,
                at(c.value)
            );
            assert!(
                at(c.value * (1.0 - 1e-5)) > target,
                "σ={} is not the smallest",
                c.value
            );
        }
    }
    assert!(calibrate_dpsgd_noise(
        LotSampling::Poisson,
        0.0,
        10,
        1.0,
        1e-5,
        &Accountant::default()
    )
    .is_err());
    assert!(calibrate_dpsgd_noise(
        LotSampling::Poisson,
        0.1,
        0,
        1.0,
        1e-5,
        &Accountant::default()
    )
    .is_err());
    assert!(calibrate_dpsgd_noise(
        LotSampling::Poisson,
        0.1,
        10,
        f64::NAN,
        1e-5,
        &Accountant::default()
    )
    .is_err());
}

#[test]
fn grid_mode_restricts_grids_and_rejects_disjoint_ones() {
    let sampled = RdpCurve::on_grid(vec![2.0, 3.0, 100.0], vec![0.2, 0.3, 10.0]).unwrap();
    assert_eq!(grid().epsilon(&sampled, 1e-5).unwrap().order, Some(3.0));
    let odd = RdpCurve::on_grid(vec![2.05], vec![0.2]).unwrap();
    assert!(grid().epsilon(&odd, 1e-5).is_err());
    assert!(Accountant::default().epsilon(&odd, 1e-5).is_ok());
}

#[test]
fn results_do_not_depend_on_the_thread_count() {
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let curve = DpSgd::new(0.02, 0.8, 3000).unwrap().rdp();
            let a = Accountant::default().epsilon(&curve, 1e-6).unwrap();
            let b = grid().epsilon(&curve, 1e-6).unwrap();
            let c = calibrate_dpsgd_noise(
                LotSampling::Poisson,
                0.05,
                200,
                3.0,
                1e-5,
                &Accountant::default(),
            )
            .unwrap();
            (
                a.epsilon.to_bits(),
                a.order,
                b.epsilon.to_bits(),
                c.value.to_bits(),
            )
        })
    };
    assert_eq!(run(1), run(4));
}

#[test]
fn delta_underflow_is_reported_as_the_smallest_positive_double_not_zero() {
    let acc = Accountant::default();
    let dpsgd = DpSgd::new(0.01, 1.0, 10).unwrap().rdp();
    let d = acc.delta(&dpsgd, 1e300).unwrap().delta;
    assert!(d > 0.0, "a positive δ was rounded down to {d}");
    // Only a mechanism with no privacy loss at all has δ exactly 0.
    assert_eq!(
        acc.delta(&RdpCurve::zcdp(0.0).unwrap(), 1.0).unwrap().delta,
        0.0
    );
}
