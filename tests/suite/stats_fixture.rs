//! Issue 38: every interval dptune prints matches scipy's (an independent implementation) at
//! n = 2, 3, 5, 10, 30 and 1000 (fixture by `tools/make_stats_fixture.py`).

use dptune::numeric::stats::{
    clopper_pearson, mean_interval, one_sample_t, paired_t, welch_t, TTest,
};
use serde_json::Value;

fn fixture() -> Value {
    let text = std::fs::read_to_string("tests/fixtures/stats/reference.json").unwrap();
    serde_json::from_str(&text).unwrap()
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn close(ours: f64, theirs: f64, what: &str) {
    assert!(
        (ours - theirs).abs() <= 1e-9 * theirs.abs().max(1e-3),
        "{what}: ours {ours} vs scipy {theirs}"
    );
}

/// The t-test's interval, statistic, df and p against scipy's.
fn check(r: &TTest, case: &Value, what: &str) {
    close(
        r.lo.unwrap(),
        case["lo"].as_f64().unwrap(),
        &format!("{what} lo"),
    );
    close(
        r.hi.unwrap(),
        case["hi"].as_f64().unwrap(),
        &format!("{what} hi"),
    );
    close(
        r.t.unwrap(),
        case["t"].as_f64().unwrap(),
        &format!("{what} t"),
    );
    close(r.df, case["df"].as_f64().unwrap(), &format!("{what} df"));
    let p = case["p"].as_f64().unwrap();
    // p-values far in the tail: relative agreement.
    assert!(
        (r.p.unwrap() - p).abs() <= 1e-7 * p.max(1e-300) + 1e-15,
        "{what} p: ours {} vs scipy {p}",
        r.p.unwrap()
    );
}

#[test]
fn mean_intervals_match_scipy() {
    let f = fixture();
    let cases = f["mean"].as_array().unwrap();
    assert_eq!(cases.len(), 6);
    for case in cases {
        let x = floats(&case["x"]);
        let what = format!("mean, n = {}", x.len());
        let (m, h) = mean_interval(&x);
        close(m, case["mean"].as_f64().unwrap(), &what);
        close(m - h.unwrap(), case["lo"].as_f64().unwrap(), &what);
        close(m + h.unwrap(), case["hi"].as_f64().unwrap(), &what);
        check(&one_sample_t(&x).unwrap(), case, &what);
    }
}

#[test]
fn paired_and_welch_intervals_match_scipy() {
    let f = fixture();
    for case in f["paired"].as_array().unwrap() {
        let (a, b) = (floats(&case["a"]), floats(&case["b"]));
        check(
            &paired_t(&a, &b).unwrap(),
            case,
            &format!("paired, n = {}", a.len()),
        );
    }
    for case in f["welch"].as_array().unwrap() {
        let (a, b) = (floats(&case["a"]), floats(&case["b"]));
        let what = format!("Welch, n = {} and {}", a.len(), b.len());
        check(&welch_t(&a, &b).unwrap().unwrap(), case, &what);
    }
}

#[test]
fn clopper_pearson_matches_scipy() {
    let f = fixture();
    let cases = f["clopper_pearson"].as_array().unwrap();
    assert!(cases.len() >= 25);
    for case in cases {
        let (k, n) = (
            case["k"].as_u64().unwrap() as usize,
            case["n"].as_u64().unwrap() as usize,
        );
        let (lo, hi) = clopper_pearson(k, n).unwrap();
        let (want_lo, want_hi) = (case["lo"].as_f64().unwrap(), case["hi"].as_f64().unwrap());
        // Ours are outward-rounded: never inside scipy's, and within 1e-9 of it.
        assert!(
            lo <= want_lo + 1e-12 && want_lo - lo <= 1e-9,
            "k = {k}, n = {n}: lower {lo} vs scipy {want_lo}"
        );
        assert!(
            hi >= want_hi - 1e-12 && hi - want_hi <= 1e-9,
            "k = {k}, n = {n}: upper {hi} vs scipy {want_hi}"
        );
    }
}
