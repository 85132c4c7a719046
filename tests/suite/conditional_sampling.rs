//! Spec 000 Fig. 8: the three-outcome example and Corollary 16(2) against an independent
//! reference (`tools/ps_fig8_reference.py`: scipy's fsolve for (s, t), the conditional
//! divergence computed from the conditional distributions, the bound by hand), committed as
//! `tests/fixtures/ps_fig8_three_point.csv`.

use dptune::accounting::{Orders, RdpCurve};
use dptune::selection::bounds::{conditional_sampling, Base};
use dptune::selection::three_point::ThreePoint;

#[test]
fn three_point_example_and_bound_match_the_scipy_reference() {
    let text = include_str!("../fixtures/ps_fig8_three_point.csv");
    let base = Base::symmetric(RdpCurve::zcdp(0.1).unwrap());
    let mut checked = 0;
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let (a, order): (f64, f64) = (f[0].parse().unwrap(), f[1].parse().unwrap());
        if f[2].is_empty() {
            continue; // the reference found no instance here
        }
        let want: Vec<f64> = f[2..].iter().map(|v| v.parse().unwrap()).collect();
        let x = ThreePoint::solve(order, 0.1, a)
            .unwrap()
            .unwrap_or_else(|| panic!("no instance at a = {a}, λ = {order}"));
        let upper = conditional_sampling(&base, x.q_of_s(), &Orders::Continuous)
            .unwrap()
            .eval(order)
            .unwrap();
        let got = [x.s, x.t, x.q_of_s(), upper, x.conditional_divergence(order)];
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-7 * w.abs().max(1.0),
                "a = {a}, λ = {order}, column {k}: {g} vs {w}"
            );
        }
        assert!(
            got[4] < got[3],
            "the example exceeds the bound at a = {a}, λ = {order}"
        );
        checked += 1;
    }
    assert_eq!(checked, 14);
}
