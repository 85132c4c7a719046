//! Repeat-and-select in dp-accounting mode against dp-accounting 0.6.0's RepeatAndSelectDpEvent,
//! on the fixture made by tools/make_repeat_select_fixture.py.

use dptune::accounting::{
    Accountant, Conversion, DpSgd, Laplace, Orders, RdpCurve, DP_ACCOUNTING_ORDERS,
};
use dptune::selection::{repeat_select, Base, PoissonK, RunCount, Tnb};
use serde_json::Value;

const REL: f64 = 1e-6;

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::INFINITY) // null is +inf
}

#[test]
fn repeat_select_matches_dp_accounting() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/repeat_select_dp_accounting_0.6.0.json"
    );
    let fixture: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let cases = fixture["cases"].as_array().unwrap();
    assert!(cases.len() >= 50);
    let grid = Accountant::new(Orders::DpAccounting, Conversion::Cks);
    for (i, c) in cases.iter().enumerate() {
        let b = &c["base"];
        let curve = match b["kind"].as_str().unwrap() {
            "zcdp" => RdpCurve::zcdp(num(&b["rho"])).unwrap(),
            "laplace" => Laplace::new(1.0, num(&b["noise_multiplier"]))
                .unwrap()
                .rdp(),
            "dpsgd" => DpSgd::new(
                num(&b["sampling_rate"]),
                num(&b["noise_multiplier"]),
                b["steps"].as_u64().unwrap(),
            )
            .unwrap()
            .rdp(),
            other => panic!("unknown base {other}"),
        };
        let mean = num(&c["mean"]);
        let law = match &c["shape"] {
            Value::Null => RunCount::Poisson(PoissonK::new(mean).unwrap()),
            s => RunCount::Tnb(Tnb::from_mean(num(s), mean).unwrap()),
        };
        let label = format!(
            "case {i} ({} base, {}, mean {mean})",
            b["kind"],
            law.family()
        );
        let base = Base::symmetric(curve);
        let repeated = repeat_select(&base, &law, &Orders::DpAccounting).unwrap();
        // dp-accounting applies no envelope for Poisson; ours is the envelope, so compare the
        // resulting ε, and the curve itself pointwise only where dp-accounting is monotone.
        let theirs: Vec<f64> = c["rdp"].as_array().unwrap().iter().map(num).collect();
        let ours = repeated.grid().unwrap().1;
        assert_eq!(ours.len(), DP_ACCOUNTING_ORDERS.len());
        for (j, (&o, &t)) in ours.iter().zip(&theirs).enumerate() {
            if matches!(law, RunCount::Poisson(_)) {
                assert!(
                    o <= t * (1.0 + REL),
                    "{label}: order {}: ours {o} > {t}",
                    DP_ACCOUNTING_ORDERS[j]
                );
            } else {
                assert!(
                    (o - t).abs() <= REL * t.abs(),
                    "{label}: order {}: ours {o} vs {t}",
                    DP_ACCOUNTING_ORDERS[j]
                );
            }
        }
        let delta = num(&c["delta"]);
        let e = grid.epsilon(&repeated, delta).unwrap();
        let want = num(&c["epsilon"]);
        assert!(
            (e.epsilon - want).abs() <= REL * want,
            "{label}: ε {} vs {want}",
            e.epsilon
        );
        let base_eps = grid.epsilon(&base.forward, delta).unwrap().epsilon;
        assert!(
            (base_eps - num(&c["base_epsilon"])).abs() <= REL * base_eps,
            "{label}: base ε"
        );
        // The default (continuous) accountant is never looser.
        let cont = repeat_select(&base, &law, &Orders::Continuous).unwrap();
        let ce = Accountant::default().epsilon(&cont, delta).unwrap().epsilon;
        assert!(
            ce <= e.epsilon * (1.0 + 1e-9),
            "{label}: continuous {ce} above grid {}",
            e.epsilon
        );
    }
}
