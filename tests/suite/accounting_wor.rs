//! DP-SGD with lots drawn without replacement (Wang–Balle–Kasiviswanathan 2019, Thm. 9): the
//! spec 001 §6.1 test vectors and properties, and autodp 0.2.3.1 on the committed fixture made
//! by tools/make_wor_fixture.py (CI needs no Python).

use dptune::accounting::subsampled_wor::wor_subsampled_gaussian_rdp;
use dptune::accounting::{
    integer_orders_epsilon, steps_for_epochs, Accountant, Conversion, DpSgd, Gaussian, LotSampling,
    Orders, WorSubsampledGaussian, SPEC_001_MAX_ORDER,
};
use dptune::error::Error;
use serde_json::Value;

const DELTA: f64 = 1e-5;

/// Spec 001 §6.1: (n, m, T, σ, k, ε as printed).
const VECTORS: [(u64, u64, u64, f64, u64, &str); 8] = [
    (30956, 256, 10, 1.0, 1210, "3.684"),
    (30956, 64, 4, 4.0, 1936, "0.2748"),
    (30956, 512, 64, 0.8, 3840, "21.52"),
    (30956, 8, 1, 16.0, 3870, "0.0288"),
    (60000, 600, 100, 4.0, 10000, "2.857"),
    (60000, 256, 10, 1.1, 2340, "2.300"),
    (60000, 4000, 400, 16.0, 6000, "8.180"),
    (60000, 16, 1, 0.5, 3750, "4.262"),
];

fn spec_epsilon(n: u64, m: u64, t: u64, sigma: f64) -> (f64, f64) {
    let sgd = DpSgd::without_replacement(n, m, sigma, t).unwrap();
    let b = integer_orders_epsilon(&sgd.rdp(), DELTA, SPEC_001_MAX_ORDER).unwrap();
    (b.epsilon, b.order.unwrap())
}

/// `x` rounded half up to the decimals of `printed`, as text.
fn rounded_like(x: f64, printed: &str) -> String {
    let decimals = printed.split_once('.').map_or(0, |(_, d)| d.len());
    format!("{x:.decimals$}")
}

#[test]
fn spec_001_vectors() {
    for (n, m, t, sigma, k, printed) in VECTORS {
        assert_eq!(steps_for_epochs(n, m, t).unwrap(), k);
        let sgd = DpSgd::without_replacement(n, m, sigma, t).unwrap();
        assert_eq!(sgd.steps(), k);
        assert_eq!(sgd.sampling(), LotSampling::WithoutReplacement);
        assert_eq!(sgd.sampling_rate(), m as f64 / n as f64);
        let (eps, order) = spec_epsilon(n, m, t, sigma);
        eprintln!("n={n} m={m} T={t} σ={sigma}: ε = {eps:.7} at α = {order} (spec {printed})");
        assert_eq!(
            rounded_like(eps, printed),
            printed,
            "n={n} m={m} T={t} σ={sigma}: {eps}"
        );
        // The crate's default accountant (CKS, every real order) is never looser.
        let cks = Accountant::default().epsilon(&sgd.rdp(), DELTA).unwrap();
        assert!(cks.epsilon <= eps, "{} > {eps}", cks.epsilon);
        // The same plain conversion through the Accountant over the integer orders 2..=4096.
        let all = (2..=SPEC_001_MAX_ORDER).map(|o| o as f64).collect();
        let acc = Accountant::new(Orders::List(all), Conversion::Mironov);
        let listed = acc.epsilon(&sgd.rdp(), DELTA).unwrap();
        assert_eq!((listed.epsilon, listed.order), (eps, Some(order)));
    }
}

#[test]
fn the_small_noise_vector_needs_high_orders() {
    // σ = 16, m = 8: the best order is in the hundreds, found only by doubling α_max.
    let (_, order) = spec_epsilon(30956, 8, 1, 16.0);
    assert!(order > 512.0 && order <= 1024.0, "{order}");
    let sgd = DpSgd::without_replacement(30956, 8, 16.0, 1).unwrap();
    let capped = integer_orders_epsilon(&sgd.rdp(), DELTA, 64).unwrap();
    assert_eq!(capped.order, Some(64.0));
    assert!(capped.epsilon > spec_epsilon(30956, 8, 1, 16.0).0);
}

#[test]
fn epsilon_rises_with_epochs_and_lot_size_and_falls_with_noise() {
    let n = 30956;
    let eps = |m: u64, t: u64, sigma: f64| spec_epsilon(n, m, t, sigma).0;
    for &(m, sigma) in &[(64, 1.0), (256, 4.0), (8, 0.7)] {
        let by_t: Vec<f64> = [1, 2, 4, 16, 64]
            .iter()
            .map(|&t| eps(m, t, sigma))
            .collect();
        assert!(by_t.windows(2).all(|w| w[0] < w[1]), "T: {by_t:?}");
    }
    for &(t, sigma) in &[(4, 1.0), (10, 4.0)] {
        let by_m: Vec<f64> = [8, 32, 128, 512]
            .iter()
            .map(|&m| eps(m, t, sigma))
            .collect();
        assert!(by_m.windows(2).all(|w| w[0] < w[1]), "m: {by_m:?}");
    }
    let by_sigma: Vec<f64> = [0.5, 0.8, 1.0, 2.0, 4.0, 16.0]
        .iter()
        .map(|&s| eps(256, 10, s))
        .collect();
    assert!(by_sigma.windows(2).all(|w| w[0] > w[1]), "σ: {by_sigma:?}");
}

#[test]
fn never_above_the_unsubsampled_gaussian_and_exactly_it_at_q_1() {
    for &q in &[1e-4, 0.01, 0.3, 0.9, 0.999] {
        for &sigma in &[0.1, 0.5, 1.0, 4.0, 16.0] {
            for &order in &[1.2, 2.0, 3.0, 7.5, 64.0, 1000.0, 4096.0] {
                let r = wor_subsampled_gaussian_rdp(q, sigma, order);
                let gaussian = order / (2.0 * sigma * sigma);
                assert!(
                    r >= 0.0 && r <= gaussian * (1.0 + 1e-15),
                    "{q} {sigma} {order}"
                );
            }
        }
    }
    for &sigma in &[0.3, 1.0, 5.0] {
        let step = WorSubsampledGaussian::new(1.0, sigma).unwrap();
        let full = Gaussian::new(1.0, sigma).unwrap().rdp();
        for order in [2.0, 3.0, 10.0, 4096.0] {
            // Both rounded up (λ/(2σ²) in one, ρ = 1/(2σ²) then ρ·λ in the other): never
            // below the exact λ/(2σ²), and within a few ulps of each other.
            let (a, b) = (step.rdp(order).unwrap(), full.eval(order).unwrap());
            assert!(
                a >= order / (2.0 * sigma * sigma) && (a - b).abs() <= 4.0 * f64::EPSILON * a,
                "{a} vs {b}"
            );
        }
        let all = DpSgd::with_sampling(LotSampling::WithoutReplacement, 1.0, sigma, 7).unwrap();
        let (a, b) = (
            all.rdp().eval(5.5).unwrap(),
            7.0 * 5.5 / (2.0 * sigma * sigma),
        );
        assert!((a - b).abs() <= 1e-15 * b, "{a} vs {b}");
    }
}

#[test]
fn log_space_never_overflows() {
    for &q in &[1e-6, 0.01, 0.5, 0.99] {
        for &sigma in &[0.1, 0.2, 1.0] {
            for order in [2.0, 100.0, 1024.0, 4095.0, 4096.0, 4095.5] {
                let r = wor_subsampled_gaussian_rdp(q, sigma, order);
                assert!(r.is_finite() && r >= 0.0, "q={q} σ={sigma} α={order}: {r}");
            }
        }
    }
    // Even σ tiny enough that e^{ε(2)} overflows a double.
    let r = wor_subsampled_gaussian_rdp(0.01, 0.01, 2.0);
    assert!(r.is_finite() && r > 0.0, "{r}");
    let sgd = DpSgd::with_sampling(LotSampling::WithoutReplacement, 0.5, 0.1, 1000).unwrap();
    let b = integer_orders_epsilon(&sgd.rdp(), DELTA, SPEC_001_MAX_ORDER).unwrap();
    assert!(b.epsilon.is_finite() && b.epsilon > 0.0);
    let c = Accountant::default().epsilon(&sgd.rdp(), DELTA).unwrap();
    assert!(c.epsilon.is_finite() && c.epsilon <= b.epsilon);
}

#[test]
fn invalid_parameters_are_named() {
    fn name<T: std::fmt::Debug>(r: Result<T, Error>) -> &'static str {
        match r {
            Err(Error::InvalidParameter { name, .. }) => name,
            other => panic!("expected an invalid parameter, got {other:?}"),
        }
    }
    assert_eq!(name(WorSubsampledGaussian::new(0.0, 1.0)), "sampling_rate");
    assert_eq!(name(WorSubsampledGaussian::new(1.5, 1.0)), "sampling_rate");
    assert_eq!(
        name(WorSubsampledGaussian::new(f64::NAN, 1.0)),
        "sampling_rate"
    );
    assert_eq!(
        name(WorSubsampledGaussian::new(0.1, 0.0)),
        "noise_multiplier"
    );
    assert_eq!(
        name(WorSubsampledGaussian::new(0.1, -2.0)),
        "noise_multiplier"
    );
    assert_eq!(
        name(WorSubsampledGaussian::from_sizes(10, 11, 1.0)),
        "lot_size"
    );
    assert_eq!(
        name(WorSubsampledGaussian::from_sizes(10, 0, 1.0)),
        "lot_size"
    );
    let step = WorSubsampledGaussian::new(0.1, 1.0).unwrap();
    for bad in [1.0, 1.5, 2.5, 0.0, -3.0, f64::NAN, f64::INFINITY] {
        assert_eq!(name(step.rdp(bad)), "order", "{bad}");
    }
    assert_eq!(name(step.rdp_bound(1.0)), "order");
    assert!(step.rdp_bound(1.5).unwrap() <= step.rdp(2.0).unwrap());
    assert_eq!(
        name(DpSgd::without_replacement(100, 200, 1.0, 1)),
        "lot_size"
    );
    assert_eq!(
        name(DpSgd::without_replacement(100, 20, 0.0, 1)),
        "noise_multiplier"
    );
    assert_eq!(name(DpSgd::without_replacement(100, 20, 1.0, 0)), "epochs");
    let sgd = DpSgd::without_replacement(100, 20, 1.0, 1).unwrap();
    assert_eq!(name(integer_orders_epsilon(&sgd.rdp(), 0.0, 64)), "delta");
    assert_eq!(
        name(integer_orders_epsilon(&sgd.rdp(), 1e-5, 1)),
        "max_order"
    );
}

#[test]
fn poisson_is_unchanged_and_wor_is_a_different_curve() {
    let poisson = DpSgd::new(0.01, 1.1, 1000).unwrap();
    assert_eq!(poisson.sampling(), LotSampling::Poisson);
    assert_eq!(
        poisson,
        DpSgd::with_sampling(LotSampling::Poisson, 0.01, 1.1, 1000).unwrap()
    );
    let wor = DpSgd::with_sampling(LotSampling::WithoutReplacement, 0.01, 1.1, 1000).unwrap();
    assert_ne!(poisson.rdp(), wor.rdp());
    // Replace-one WOR at q is no tighter than add/remove Poisson at q (WBK's bound carries the
    // factor 2 of a replacement being a removal plus an addition).
    for order in [2.0, 8.0, 32.0] {
        assert!(wor.rdp().eval(order).unwrap() >= poisson.rdp().eval(order).unwrap());
    }
}

fn fixture() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/wor_autodp_0.2.3.1.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).expect("fixture present"))
        .expect("valid JSON")
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn autodp_rdp_values() {
    let fx = fixture();
    let cases = fx["rdp_cases"].as_array().unwrap();
    assert!(cases.len() >= 10);
    let mut checked = 0;
    for case in cases {
        let (q, sigma) = (f(&case["sampling_rate"]), f(&case["noise_multiplier"]));
        let step = WorSubsampledGaussian::new(q, sigma).unwrap();
        let orders = case["orders"].as_array().unwrap();
        for (o, theirs) in orders.iter().zip(case["rdp"].as_array().unwrap()) {
            let (order, theirs) = (f(o), f(theirs));
            let ours = step.rdp_bound(order).unwrap();
            // autodp sums ln(1 + tiny) without log1p: ~1e-16 absolute error in ln S.
            let tol = 1e-9 * theirs + 1e-15;
            if order.fract() == 0.0 {
                assert_eq!(step.rdp(order).unwrap(), ours);
                assert!(
                    (ours - theirs).abs() <= tol,
                    "q={q} σ={sigma} α={order}: ours {ours} vs autodp {theirs}"
                );
            } else {
                // Ours adds the next-integer bound to autodp's interpolation (and, below order
                // 2, the Gaussian's): equal, or lower where one of those is.
                assert!(
                    ours <= theirs + tol,
                    "q={q} σ={sigma} α={order}: ours {ours} vs autodp {theirs}"
                );
                let ceil = step.rdp(order.ceil().max(2.0)).unwrap();
                let gaussian = order / (2.0 * sigma * sigma);
                assert!(
                    (ours - theirs).abs() <= tol
                        || ours == ceil
                        || (ours - gaussian).abs() <= 1e-15 * gaussian,
                    "q={q} σ={sigma} α={order}: ours {ours} vs autodp {theirs}"
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 300, "{checked}");
}

#[test]
fn autodp_epsilons_of_the_spec_vectors() {
    let fx = fixture();
    for case in fx["epsilon_cases"].as_array().unwrap() {
        let int = |k: &str| case[k].as_u64().unwrap();
        let (n, m, t) = (int("data_size"), int("lot_size"), int("epochs"));
        let sigma = f(&case["noise_multiplier"]);
        assert_eq!(steps_for_epochs(n, m, t).unwrap(), int("steps"));
        let theirs = f(&case["epsilon"]);
        let (ours, _) = spec_epsilon(n, m, t, sigma);
        // autodp refines the best integer order over the interpolated curve; its sums lose
        // ~1e-7 relative in ln(1 + tiny). Agreement to 1e-6 relative.
        assert!(
            (ours - theirs).abs() <= 1e-6 * theirs,
            "n={n} m={m} T={t} σ={sigma}: ours {ours} vs autodp {theirs}"
        );
    }
}
