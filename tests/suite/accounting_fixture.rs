//! dptune's accountant in dp-accounting mode against dp-accounting 0.6.0 itself, on the
//! committed fixture made by tools/make_dp_accounting_fixture.py (CI needs no Python).

use dptune::accounting::convert::{gdp_delta, gdp_epsilon};
use dptune::accounting::{
    calibrate_dpsgd_noise, Accountant, Conversion, DpSgd, Gaussian, Laplace, LotSampling, Orders,
    RandomizedResponse, RdpCurve, DP_ACCOUNTING_ORDERS,
};
use serde_json::Value;

const REL: f64 = 1e-6;

fn fixture() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/dp_accounting_0.6.0.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).expect("fixture present"))
        .expect("valid JSON")
}

fn cases(kind: &str) -> Vec<Value> {
    let all = fixture()["cases"].as_array().expect("cases").clone();
    let cases: Vec<Value> = all.into_iter().filter(|c| c["kind"] == kind).collect();
    assert!(!cases.is_empty(), "fixture has no {kind} cases");
    cases
}

fn num(v: &Value, key: &str) -> f64 {
    match &v[key] {
        Value::Null => f64::INFINITY, // the fixture writes +inf as null
        x => x
            .as_f64()
            .unwrap_or_else(|| panic!("{key} is not a number in {v}")),
    }
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    a == b || (a - b).abs() <= rel * a.abs().max(b.abs())
}

fn dp_accounting() -> Accountant {
    Accountant::new(Orders::DpAccounting, Conversion::Cks)
}

/// Checks RDP at every default order (where dp-accounting's value is finite), ε at the case's
/// δ (value and order) and, when present, δ at the query ε; and that the default continuous
/// accountant is never looser than dp-accounting.
/// `cap(λ)`, when given, is a valid bound ours may be clamped to (DP-SGD: the unsubsampled
/// Gaussian, steps·λ/(2σ²)); where dp-accounting's series exceeds it ours is tighter.
fn check_case(label: &str, case: &Value, curve: &RdpCurve, cap: Option<&dyn Fn(f64) -> f64>) {
    let theirs: Vec<f64> = case["rdp"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| match v {
            Value::Null => f64::INFINITY,
            x => x.as_f64().unwrap(),
        })
        .collect();
    assert_eq!(theirs.len(), DP_ACCOUNTING_ORDERS.len());
    let mut skipped_orders = 0;
    let steps = case["steps"].as_f64().unwrap_or(1.0);
    for (&order, &r) in DP_ACCOUNTING_ORDERS.iter().zip(&theirs) {
        let ours = curve.eval(order).unwrap();
        if r.is_infinite() {
            // dp-accounting gave up on this order (series did not settle in 1000 terms); ours
            // must still be a finite valid bound, which only makes our answer tighter.
            skipped_orders += 1;
            assert!(
                ours.is_finite(),
                "{label}: order {order} is inf in ours too"
            );
            continue;
        }
        if let Some(cap) = cap {
            if ours < r && close(ours, cap(order), 1e-12) {
                skipped_orders += 1;
                continue;
            }
        }
        // At fractional orders both series sum A_λ ≈ 1 + (a tiny ln A_λ), so each step's ln A_λ
        // is known to a few ulps of 1 only, in dp-accounting's value too; ours adds that much
        // (rounded up), which for a tiny RDP is more than REL of it.
        let allowance = steps * 16.0 * f64::EPSILON / (order - 1.0);
        assert!(
            close(ours, r, REL) || (ours >= r && ours - r <= allowance + REL * r),
            "{label}: RDP at order {order}: ours {ours} vs dp-accounting {r}"
        );
    }
    let delta = num(case, "delta");
    let ours = dp_accounting().epsilon(curve, delta).unwrap();
    let (eps, order) = (num(case, "epsilon"), num(case, "order"));
    if skipped_orders == 0 {
        assert!(
            close(ours.epsilon, eps, REL),
            "{label}: ε ours {} vs dp-accounting {eps}",
            ours.epsilon
        );
        assert!(
            ours.order == Some(order) || close(ours.epsilon, eps, 1e-12),
            "{label}: order {:?} vs {order}",
            ours.order
        );
    } else {
        assert!(
            ours.epsilon <= eps * (1.0 + REL),
            "{label}: ε ours {} > dp-accounting {eps}",
            ours.epsilon
        );
    }
    let continuous = Accountant::default().epsilon(curve, delta).unwrap();
    assert!(
        continuous.epsilon <= ours.epsilon + 1e-12,
        "{label}: continuous {} > grid {}",
        continuous.epsilon,
        ours.epsilon
    );

    if case.get("epsilon_for_delta_query").is_some() {
        let e = num(case, "epsilon_for_delta_query");
        let theirs_delta = num(case, "delta_at_epsilon");
        let ours_delta = dp_accounting().delta(curve, e).unwrap().delta;
        if skipped_orders == 0 {
            // Ours may be above by the rounding allowance of the RDP it reads: at ε near 0 the
            // tiny RDP of the lowest orders, known to a few ulps of 1 per step (see above),
            // up to about 1e-5 of δ.
            assert!(
                close(ours_delta, theirs_delta, REL)
                    || (ours_delta >= theirs_delta && close(ours_delta, theirs_delta, 1e-5)),
                "{label}: δ({e}) ours {ours_delta} vs {theirs_delta}"
            );
        } else {
            assert!(
                ours_delta <= theirs_delta * (1.0 + REL),
                "{label}: δ({e}) ours {ours_delta} > {theirs_delta}"
            );
        }
    }
}

#[test]
fn dpsgd_matches_dp_accounting() {
    let cases = cases("dpsgd");
    assert!(cases.len() >= 40);
    for (i, c) in cases.iter().enumerate() {
        let m = DpSgd::new(
            num(c, "sampling_rate"),
            num(c, "noise_multiplier"),
            c["steps"].as_u64().unwrap(),
        )
        .unwrap();
        let full_gaussian =
            |order: f64| m.steps() as f64 * order / (2.0 * m.noise_multiplier().powi(2));
        check_case(
            &format!("dpsgd case {i}"),
            c,
            &m.rdp(),
            Some(&full_gaussian),
        );
    }
}

#[test]
fn gaussian_matches_dp_accounting() {
    for (i, c) in cases("gaussian").iter().enumerate() {
        let m = Gaussian::new(num(c, "sensitivity"), num(c, "sigma")).unwrap();
        check_case(&format!("gaussian case {i}"), c, &m.rdp(), None);
    }
}

#[test]
fn zcdp_matches_dp_accounting() {
    for (i, c) in cases("zcdp").iter().enumerate() {
        check_case(
            &format!("zcdp case {i}"),
            c,
            &RdpCurve::zcdp(num(c, "rho")).unwrap(),
            None,
        );
    }
}

#[test]
fn laplace_matches_dp_accounting() {
    for (i, c) in cases("laplace").iter().enumerate() {
        let m = Laplace::new(1.0, num(c, "noise_multiplier")).unwrap();
        check_case(&format!("laplace case {i}"), c, &m.rdp(), None);
    }
}

#[test]
fn randomized_response_matches_dp_accounting() {
    for (i, c) in cases("randomized_response").iter().enumerate() {
        let m = RandomizedResponse::new(num(c, "epsilon_pure")).unwrap();
        check_case(&format!("rr case {i}"), c, &m.rdp(), None);
    }
}

#[test]
fn gdp_matches_an_independent_scipy_computation() {
    for (i, c) in cases("gdp_exact").iter().enumerate() {
        let mu = num(c, "mu");
        let d = gdp_delta(mu, num(c, "epsilon")).unwrap();
        let reference = num(c, "delta_at_epsilon");
        assert!(
            close(d, reference, 1e-10) || (d - reference).abs() < 1e-300,
            "gdp case {i}: δ {d} vs {reference}"
        );
        let e = gdp_epsilon(mu, num(c, "delta")).unwrap().epsilon;
        let reference = num(c, "epsilon_at_delta");
        assert!(
            e >= reference - 1e-12 && e - reference < 1e-9,
            "gdp case {i}: ε {e} vs {reference}"
        );
    }
}

#[test]
fn calibration_agrees_with_dp_accounting_and_meets_its_target() {
    for (i, c) in cases("calibrate_dpsgd").iter().enumerate() {
        let (q, steps) = (num(c, "sampling_rate"), c["steps"].as_u64().unwrap());
        let (target, delta) = (num(c, "target_epsilon"), num(c, "target_delta"));
        let ours = calibrate_dpsgd_noise(
            LotSampling::Poisson,
            q,
            steps,
            target,
            delta,
            &dp_accounting(),
        )
        .unwrap();
        let theirs = num(c, "noise_multiplier");
        assert!(
            ours.bound.epsilon <= target,
            "case {i}: calibrated ε {} > target {target}",
            ours.bound.epsilon
        );
        assert!(
            close(ours.value, theirs, 1e-5),
            "case {i}: σ ours {} vs dp-accounting {theirs}",
            ours.value
        );
        // Independent re-check of the returned σ.
        let recheck = dp_accounting()
            .epsilon(&DpSgd::new(q, ours.value, steps).unwrap().rdp(), delta)
            .unwrap();
        assert!(recheck.epsilon <= target);
    }
}
