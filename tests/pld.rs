//! The PLD accountant against dp-accounting 0.6.0's (tests/fixtures/pld_dp_accounting_0.6.0.json,
//! made by tools/make_pld_fixture.py): at the same discretisation, ε(δ) within 10⁻³ relative of
//! its pessimistic (connect-the-dots) estimate, and never below its optimistic one.

use dptune::accounting::pld::{Direction, GaussianPair, Pld, PoissonGaussianPair};

/// dp-accounting's default: P's mass beyond the discretised losses is below e^{−50} each side.
fn tail() -> f64 {
    (-50f64).exp()
}

fn fixture() -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string("tests/fixtures/pld_dp_accounting_0.6.0.json").unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    doc["cases"].as_array().unwrap().clone()
}

/// ε(δ) of a case's composition, the larger of both directions where they differ.
fn epsilon(case: &serde_json::Value) -> Option<f64> {
    let f = |k: &str| case[k].as_f64().unwrap();
    let (h, count, delta) = (f("interval"), case["count"].as_u64().unwrap(), f("delta"));
    let plds = match case["kind"].as_str().unwrap() {
        "gaussian" => vec![Pld::connect_dots(
            &GaussianPair::new(1.0, f("sigma")).unwrap(),
            h,
            tail(),
        )],
        "poisson-gaussian" => [Direction::Remove, Direction::Add]
            .into_iter()
            .map(|d| {
                let pair = PoissonGaussianPair::new(f("q"), f("sigma"), d).unwrap();
                Pld::connect_dots(&pair, h, tail())
            })
            .collect(),
        _ => return None,
    };
    let eps = plds
        .into_iter()
        .map(|p| {
            p.unwrap()
                .self_compose(count)
                .unwrap()
                .epsilon(delta)
                .unwrap()
        })
        .fold(0.0, f64::max);
    Some(eps)
}

#[test]
fn epsilons_match_dp_accounting_and_never_go_below_its_optimistic_estimate() {
    let mut checked = 0;
    for case in fixture() {
        let Some(ours) = epsilon(&case) else { continue };
        let pess = case["epsilon_pessimistic"].as_f64().unwrap();
        let opt = case["epsilon_optimistic"].as_f64().unwrap();
        assert!(
            ours >= opt,
            "below dp-accounting's optimistic ε {opt}: {ours}\n{case}"
        );
        assert!(
            (ours - pess).abs() <= 1e-3 * pess,
            "ε {ours} vs dp-accounting's {pess} (rel {:.2e})\n{case}",
            (ours - pess).abs() / pess
        );
        checked += 1;
    }
    assert!(checked >= 20, "{checked} cases");
}
