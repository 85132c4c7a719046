//! Properties every repeat-and-select bound must have, and calibration for tuning.

use dptune::accounting::DpSgd;
use dptune::accounting::{Accountant, Orders, RdpCurve};
use dptune::selection::calibrate::{largest_mean, repeat_select_epsilon, tuning_noise_multiplier};
use dptune::selection::{repeat_select, Base, CountFamily};

fn dpsgd_base(q: f64, sigma: f64, steps: u64) -> Base {
    Base::symmetric(DpSgd::new(q, sigma, steps).unwrap().rdp())
}

fn families() -> Vec<CountFamily> {
    vec![
        CountFamily::Tnb { eta: -0.5 },
        CountFamily::Tnb { eta: 0.0 },
        CountFamily::Tnb { eta: 0.5 },
        CountFamily::Tnb { eta: 1.0 },
        CountFamily::Tnb { eta: 3.0 },
        CountFamily::Poisson,
    ]
}

fn bases() -> Vec<Base> {
    vec![
        Base::symmetric(RdpCurve::zcdp(0.05).unwrap()),
        Base::symmetric(RdpCurve::pure_dp(0.5).unwrap()),
        dpsgd_base(0.01, 1.2, 500),
    ]
}

const DELTA: f64 = 1e-6;

#[test]
fn bound_is_at_least_a_single_run_and_below_naive_composition_from_mean_3() {
    for base in bases() {
        for orders in [Orders::Continuous, Orders::DpAccounting] {
            let acc = Accountant::new(orders.clone(), Default::default());
            let single = acc.epsilon(&base.forward, DELTA).unwrap().epsilon;
            for family in families() {
                for mean in [1.5, 3.0, 10.0, 300.0] {
                    let e = repeat_select_epsilon(&base, family, mean, None, DELTA, &orders)
                        .unwrap()
                        .epsilon;
                    assert!(
                        e >= single - 1e-9,
                        "{family:?} mean {mean}: {e} below one run {single}"
                    );
                    // Holds for η ≤ ½ from E[K] = 3 and for η ≤ 1 from E[K] = 10. Not in
                    // general: geometric K at E[K] = 3 ties with 3-fold composition (3ε for
                    // a pure base, Liu–Talwar) and can exceed it slightly after conversion;
                    // η = 3 at E[K] = 3 over 0.05-zCDP gives 2.740 vs 2.673; Poisson is
                    // like large η.
                    let beats_naive = match family {
                        CountFamily::Tnb { eta } => {
                            (eta <= 0.5 && mean >= 3.0) || (eta <= 1.0 && mean >= 10.0)
                        }
                        _ => false,
                    };
                    if beats_naive {
                        let naive = acc
                            .epsilon(&base.forward.self_compose(mean.ceil() as u64), DELTA)
                            .unwrap()
                            .epsilon;
                        assert!(
                            e <= naive,
                            "{family:?} mean {mean}: {e} above naive {naive}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn bound_grows_with_the_mean_and_with_eta() {
    let base = Base::symmetric(RdpCurve::zcdp(0.1).unwrap());
    for orders in [Orders::Continuous, Orders::DpAccounting] {
        for family in families() {
            let e: Vec<f64> = [1.5, 3.0, 10.0, 100.0, 1e4]
                .iter()
                .map(|&m| {
                    repeat_select_epsilon(&base, family, m, None, DELTA, &orders)
                        .unwrap()
                        .epsilon
                })
                .collect();
            assert!(e.windows(2).all(|w| w[0] < w[1]), "{family:?}: {e:?}");
        }
        let by_eta: Vec<f64> = [-0.5, 0.0, 0.5, 1.0, 2.0, 5.0]
            .iter()
            .map(|&eta| {
                repeat_select_epsilon(&base, CountFamily::Tnb { eta }, 10.0, None, DELTA, &orders)
                    .unwrap()
                    .epsilon
            })
            .collect();
        assert!(by_eta.windows(2).all(|w| w[0] < w[1]), "{by_eta:?}");
    }
}

#[test]
fn one_fixed_run_is_the_base_itself() {
    for base in bases() {
        let law = CountFamily::Fixed.with_mean(1.0, None).unwrap();
        let curve = repeat_select(&base, &law, &Orders::Continuous).unwrap();
        for l in [1.5, 2.0, 10.0, 100.0] {
            assert_eq!(curve.eval(l).unwrap(), base.forward.eval(l).unwrap());
        }
    }
}

#[test]
fn truncation_costs_a_little_and_the_limit_is_the_untruncated_bound() {
    let base = Base::symmetric(RdpCurve::zcdp(0.1).unwrap());
    let family = CountFamily::Tnb { eta: 0.0 };
    let plain = repeat_select_epsilon(&base, family, 10.0, None, DELTA, &Orders::Continuous)
        .unwrap()
        .epsilon;
    let mut last = f64::INFINITY;
    for m in [50, 100, 1000, 10_000] {
        let e = repeat_select_epsilon(&base, family, 10.0, Some(m), DELTA, &Orders::Continuous)
            .unwrap()
            .epsilon;
        assert!(e >= plain && e <= last, "m={m}: {e}");
        last = e;
    }
    assert!(last - plain < 1e-3);
}

#[test]
fn calibrations_meet_their_targets() {
    let base = Base::symmetric(RdpCurve::zcdp(0.1).unwrap());
    for orders in [Orders::Continuous, Orders::DpAccounting] {
        for family in [
            CountFamily::Tnb { eta: 0.0 },
            CountFamily::Tnb { eta: 1.0 },
            CountFamily::Poisson,
            CountFamily::Fixed,
        ] {
            let c = largest_mean(&base, family, None, 5.0, DELTA, &orders).unwrap();
            assert!(c.bound.epsilon <= 5.0, "{family:?}: {}", c.bound.epsilon);
            let step = if family == CountFamily::Fixed {
                1.0
            } else {
                c.value * 1e-6
            };
            let above =
                repeat_select_epsilon(&base, family, c.value + step, None, DELTA, &orders).unwrap();
            assert!(
                above.epsilon > 5.0,
                "{family:?}: mean {} is not the largest",
                c.value
            );
        }
    }
    let s = tuning_noise_multiplier(
        0.01,
        1000,
        CountFamily::Tnb { eta: 0.0 },
        10.0,
        None,
        4.0,
        1e-5,
        &Orders::Continuous,
    )
    .unwrap();
    assert!(s.bound.epsilon <= 4.0);
    let tighter = repeat_select_epsilon(
        &dpsgd_base(0.01, s.value * (1.0 - 1e-5), 1000),
        CountFamily::Tnb { eta: 0.0 },
        10.0,
        None,
        1e-5,
        &Orders::Continuous,
    )
    .unwrap();
    assert!(tighter.epsilon > 4.0, "σ = {} is not the smallest", s.value);
    // One run of 0.1-zCDP already costs 2.14 at δ = 1e-6: no law with K ≥ 1 meets ε = 1 ...
    let cont = Orders::Continuous;
    assert!(largest_mean(
        &base,
        CountFamily::Tnb { eta: 0.0 },
        None,
        1.0,
        DELTA,
        &cont
    )
    .is_err());
    assert!(largest_mean(&base, CountFamily::Fixed, None, 1.0, DELTA, &cont).is_err());
    // ... but a Poisson K with a small enough mean (mostly K = 0) does.
    let small = largest_mean(&base, CountFamily::Poisson, None, 1.0, DELTA, &cont).unwrap();
    assert!(small.value < 1.0 && small.bound.epsilon <= 1.0, "{small:?}");
}
