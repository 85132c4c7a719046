//! Laws of K: spec 000 §3 identities and golden values, sum consistency, and the samplers
//! against their pmf (chi-square) and moments.

use dptune::selection::{CountLaw, FixedK, PoissonK, RunCount, Tnb, TruncatedK};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::Distribution;

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs().max(f64::MIN_POSITIVE)
}

#[test]
fn gamma_closed_forms() {
    for mean in [1.5, 10.0, 100.0, 1e4, 1e6] {
        assert!(rel(Tnb::from_mean(1.0, mean).unwrap().gamma(), 1.0 / mean) < 1e-12);
        let half = Tnb::from_mean(0.5, mean).unwrap().gamma();
        let sqrt_g = (1.0 + (1.0 + 8.0 * mean).sqrt()) / (4.0 * mean);
        assert!(rel(half, sqrt_g * sqrt_g) < 1e-12, "η=½ E={mean}");
        let neg = Tnb::from_mean(-0.5, mean).unwrap().gamma();
        assert!(
            rel(neg, 1.0 / (2.0 * mean - 1.0).powi(2)) < 1e-12,
            "η=−½ E={mean}"
        );
        let g2 = Tnb::from_mean(2.0, mean).unwrap().gamma();
        assert!(rel(g2 * (1.0 + g2), 2.0 / mean) < 1e-12, "η=2 E={mean}");
    }
}

#[test]
fn spec_000_table_a_gammas() {
    let table = [
        (0.0, [2.69182596007e-2, 1.54211507489e-3, 1.09659588025e-4]),
        (0.5, [6.25e-2, 5.36627429245e-3, 5.11306038637e-4]),
        (5.0, [0.334263242375, 4.76190587235e-2, 4.97512437812e-3]),
        (-0.5, [2.77008310249e-3, 2.52518875786e-5, 2.50250187625e-7]),
    ];
    for (eta, gammas) in table {
        for (mean, g) in [10.0, 100.0, 1000.0].into_iter().zip(gammas) {
            let t = Tnb::from_mean(eta, mean).unwrap();
            assert!(
                rel(t.gamma(), g) < 1e-10,
                "η={eta} E={mean}: {} vs {g}",
                t.gamma()
            );
            assert!(rel(t.mean(), mean) < 1e-12);
        }
    }
    // Table D: η = 0 and E[K] = 1e6 has γ = 6.0144913279e-8.
    assert!(rel(Tnb::logarithmic(1e6).unwrap().gamma(), 6.0144913279e-8) < 1e-10);
}

#[test]
fn spec_000_table_e_pmf_and_tails() {
    let p1 = [
        (-0.5, 10.0 / 19.0),
        (0.0, 0.269182596),
        (0.5, 0.15625),
        (1.0, 0.1),
        (2.0, 0.049844719),
        (5.0, 0.013948636),
    ];
    for (eta, golden) in p1 {
        let t = Tnb::from_mean(eta, 10.0).unwrap();
        assert!(
            (t.pmf(1) - golden).abs() < 1e-9,
            "η={eta}: P[K=1] = {}",
            t.pmf(1)
        );
    }
    assert!((PoissonK::new(10.0).unwrap().pmf(0) - 4.539993e-5).abs() < 1e-11);
    // P[K ≥ 100] = P[K > 99].
    let (p_log, _) = Tnb::logarithmic(10.0).unwrap().tail(99);
    assert!((p_log - 5.203236e-3).abs() < 1e-9, "{p_log}");
    let (p_geo, _) = Tnb::geometric(10.0).unwrap().tail(99);
    assert!(rel(p_geo, 0.9f64.powi(99)) < 1e-10, "{p_geo}");
    // Table F: η = 0, E[K] = 10, m = 100.
    let (p, t) = Tnb::logarithmic(10.0).unwrap().tail(100);
    assert!(
        rel(p, 5.022589104e-3) < 1e-9 && rel(t, 0.6530287806) < 1e-9,
        "{p} {t}"
    );
}

fn laws() -> Vec<RunCount> {
    let mut v: Vec<RunCount> = [-0.5, 0.0, 0.5, 1.0, 2.0, 5.0]
        .iter()
        .map(|&eta| RunCount::Tnb(Tnb::from_mean(eta, 10.0).unwrap()))
        .collect();
    v.push(RunCount::Poisson(PoissonK::new(10.0).unwrap()));
    v.push(RunCount::Fixed(FixedK::new(10).unwrap()));
    let log = RunCount::Tnb(Tnb::logarithmic(10.0).unwrap());
    v.push(RunCount::Truncated(TruncatedK::new(log, 30).unwrap()));
    v
}

#[test]
fn pmf_pgf_and_mean_agree() {
    for law in laws() {
        // Heavy tails (η = −½) need many terms; sum far enough for 1e-9.
        let n = 2_000_000u64;
        let (mut s, mut sk) = (0.0, 0.0);
        let xs: [f64; 3] = [0.3, 0.9, 0.99];
        let mut sx = [0.0; 3];
        for k in 0..n {
            let p = law.pmf(k);
            s += p;
            sk += k as f64 * p;
            for (acc, x) in sx.iter_mut().zip(xs) {
                *acc += p * libm::pow(x, k as f64);
            }
        }
        let name = law.family();
        assert!((s - 1.0).abs() < 1e-9, "{name}: Σpmf = {s}");
        if !name.contains("-0.5") {
            assert!(
                rel(sk, law.mean()) < 1e-9,
                "{name}: Σk·pmf = {sk} vs {}",
                law.mean()
            );
        }
        for (acc, x) in sx.iter().zip(xs) {
            assert!(
                (acc - law.pgf(x)).abs() < 1e-9,
                "{name}: f({x}) = {} vs Σ {acc}",
                law.pgf(x)
            );
            let h = 1e-6;
            let fd = (law.pgf(x + h) - law.pgf(x - h)) / (2.0 * h);
            assert!(
                rel(law.pgf_deriv(x), fd) < 1e-6,
                "{name}: f′({x}) = {} vs {fd}",
                law.pgf_deriv(x)
            );
        }
        assert!(
            (law.pgf(1.0) - 1.0).abs() < 1e-12,
            "{name}: f(1) = {}",
            law.pgf(1.0)
        );
    }
}

#[test]
fn constructors_reject_bad_parameters() {
    assert!(Tnb::new(-1.0, 0.5).is_err());
    assert!(Tnb::new(0.5, 1.0).is_err() && Tnb::new(0.5, 0.0).is_err());
    assert!(Tnb::new(f64::NAN, 0.5).is_err());
    assert!(Tnb::from_mean(0.0, 1.0).is_err() && Tnb::from_mean(0.0, 0.5).is_err());
    assert!(Tnb::from_mean(0.0, f64::INFINITY).is_err());
    assert!(PoissonK::new(0.0).is_err() && FixedK::new(0).is_err());
    let log = RunCount::Tnb(Tnb::logarithmic(10.0).unwrap());
    assert!(TruncatedK::new(log.clone(), 0).is_err());
    let t = RunCount::Truncated(TruncatedK::new(log, 5).unwrap());
    assert!(TruncatedK::new(t, 3).is_err());
    let msg = Tnb::new(-2.0, 0.5).unwrap_err().to_string();
    assert!(msg.contains("eta") && msg.contains("> -1"), "{msg}");
}

/// χ² over cells k = lo..=20 plus a tail cell; 2e5 draws with a fixed seed.
#[test]
fn samplers_match_their_pmf() {
    for (i, law) in laws().into_iter().enumerate() {
        let mut rng = ChaCha8Rng::seed_from_u64(1000 + i as u64);
        let n = 200_000usize;
        let mut counts = [0usize; 22];
        let mut sum = 0.0;
        for _ in 0..n {
            let k = law.sample(&mut rng);
            sum += k as f64;
            counts[(k as usize).min(21)] += 1;
        }
        let mut expected: Vec<f64> = (0..21).map(|k| law.pmf(k) * n as f64).collect();
        expected.push(n as f64 - expected.iter().sum::<f64>());
        let (mut chi2, mut df) = (0.0, 0usize);
        for (o, e) in counts.iter().zip(&expected) {
            if *e >= 5.0 {
                chi2 += (*o as f64 - e).powi(2) / e;
                df += 1;
            } else {
                assert!(
                    (*o as f64) < 5.0 + 10.0 * e.max(1.0),
                    "{}: cell with e={e} got {o}",
                    law.family()
                );
            }
        }
        // 99.99th percentile of χ² with ≤ 21 degrees of freedom is below 57.
        assert!(chi2 < 57.0, "{}: χ² = {chi2} over {df} cells", law.family());
        if !law.family().contains("-0.5") {
            let m = sum / n as f64;
            let var_bound = 4.0 * (law.mean() * 30.0 / n as f64).sqrt();
            assert!(
                (m - law.mean()).abs() < var_bound.max(0.05),
                "{}: mean {m} vs {}",
                law.family(),
                law.mean()
            );
        }
    }
}

#[test]
fn samplers_are_fast_paths_for_large_means_and_exact_for_each_eta() {
    // E[K] = 1e6 must sample (quickly) and have the right order of magnitude.
    for eta in [-0.5, 0.0, 0.5, 1.0, 3.0] {
        let t = Tnb::from_mean(eta, 1e6).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let draws: Vec<u64> = (0..2000).map(|_| t.sample(&mut rng)).collect();
        assert!(draws.iter().all(|&k| k >= 1));
        if eta > 0.0 {
            let m = draws.iter().sum::<u64>() as f64 / 2000.0;
            assert!(m > 5e5 && m < 2e6, "η={eta}: mean {m}");
        }
    }
}

mod utility {
    use super::*;
    use dptune::selection::utility::{
        expected_best, expected_quantile, success_probability, tail_bound,
    };

    /// Spec 000 Table E (E[K] = 10, m = 100).
    #[test]
    fn table_e() {
        let rows: [(RunCount, f64, f64); 8] = [
            (
                RunCount::Tnb(Tnb::from_mean(-0.5, 10.0).unwrap()),
                0.65,
                0.063597837,
            ),
            (
                RunCount::Tnb(Tnb::from_mean(0.0, 10.0).unwrap()),
                0.751033930,
                0.085363105,
            ),
            (
                RunCount::Tnb(Tnb::from_mean(0.5, 10.0).unwrap()),
                0.8,
                0.089993589,
            ),
            (
                RunCount::Tnb(Tnb::from_mean(1.0, 10.0).unwrap()),
                0.826841347,
                0.091743119,
            ),
            (
                RunCount::Tnb(Tnb::from_mean(2.0, 10.0).unwrap()),
                0.854101966,
                0.093163076,
            ),
            (
                RunCount::Tnb(Tnb::from_mean(5.0, 10.0).unwrap()),
                0.879714240,
                0.094292029,
            ),
            (
                RunCount::Poisson(PoissonK::new(10.0).unwrap()),
                0.900004540,
                0.095162582,
            ),
            (
                RunCount::Fixed(FixedK::new(10).unwrap()),
                0.909090909,
                0.095617925,
            ),
        ];
        for (law, quantile, beta) in rows {
            let q = expected_quantile(&law);
            assert!(
                (q - quantile).abs() < 1e-9,
                "{}: quantile {q} vs {quantile}",
                law.family()
            );
            // Independent route: 1 − ∫₀¹ f(x) dx by Simpson.
            let n = 200_000;
            let h = 1.0 / n as f64;
            let integral: f64 = (0..=n)
                .map(|i| {
                    let w = if i == 0 || i == n {
                        1.0
                    } else if i % 2 == 1 {
                        4.0
                    } else {
                        2.0
                    };
                    w * law.pgf(i as f64 * h)
                })
                .sum::<f64>()
                * h
                / 3.0;
            assert!(
                (1.0 - integral - q).abs() < 1e-8,
                "{}: ∫f gives {}",
                law.family(),
                1.0 - integral
            );
            let b = success_probability(&law, 100).unwrap();
            assert!((b - beta).abs() < 1e-9, "{}: β {b} vs {beta}", law.family());
        }
        let trunc = RunCount::Truncated(
            TruncatedK::new(RunCount::Fixed(FixedK::new(3).unwrap()), 5).unwrap(),
        );
        assert!((expected_quantile(&trunc) - 0.75).abs() < 1e-15);
    }

    #[test]
    fn tails_and_best_scores() {
        let log = RunCount::Tnb(Tnb::logarithmic(10.0).unwrap());
        let chernoff = tail_bound(&log, 100).unwrap();
        assert!((chernoff - 0.1364796).abs() < 1e-6, "{chernoff}");
        assert!(chernoff >= log.tail(99).0);
        let p = RunCount::Poisson(PoissonK::new(10.0).unwrap());
        let k = 30.0f64;
        let closed = libm::exp(k - 10.0 - k * libm::log(k / 10.0));
        assert!((tail_bound(&p, 30).unwrap() - closed).abs() < 1e-9 * closed.max(1e-300));
        // Best of exactly 2 uniform draws from {1, 2}: P[best = 2] = 3/4.
        let two = RunCount::Fixed(FixedK::new(2).unwrap());
        assert!((expected_best(&two, &[2.0, 1.0], 0.0).unwrap() - 1.75).abs() < 1e-15);
        // Poisson: K = 0 with probability e^{-μ} returns the default.
        let p1 = RunCount::Poisson(PoissonK::new(1.0).unwrap());
        let e = expected_best(&p1, &[5.0], -1.0).unwrap();
        assert!((e - (5.0 * (1.0 - libm::exp(-1f64)) - libm::exp(-1f64))).abs() < 1e-12);
        assert!(
            expected_best(&two, &[], 0.0).is_err()
                && expected_best(&two, &[f64::NAN], 0.0).is_err()
        );
        assert!(success_probability(&two, 0).is_err() && tail_bound(&two, 0).is_err());
    }
}

#[test]
fn one_minus_pgf_is_accurate_near_one() {
    // mpmath, 40 digits: 1 − f(0.99) for η = −½, E[K] = 10.
    let t = Tnb::from_mean(-0.5, 10.0).unwrap();
    assert!(
        rel(t.one_minus_pgf(0.99), 0.063_597_836_608_484_54) < 1e-12,
        "{}",
        t.one_minus_pgf(0.99)
    );
    for law in laws() {
        for x in [0.0, 0.5, 0.9, 0.999] {
            let direct = 1.0 - law.pgf(x);
            assert!(
                (law.one_minus_pgf(x) - direct).abs() < 1e-12,
                "{} at {x}",
                law.family()
            );
        }
        // Near 1: 1 − f(1 − h) ≈ h·E[K].
        let h = 1e-10;
        assert!(
            rel(law.one_minus_pgf(1.0 - h), h * law.mean()) < 1e-3,
            "{}",
            law.family()
        );
    }
}

/// The laws whose draws are pinned: every family, small and large means (inversion and PTRS
/// for Poisson; each TNB sampler path).
fn pinned_laws() -> Vec<(&'static str, RunCount)> {
    vec![
        (
            "logarithmic 10",
            RunCount::Tnb(Tnb::logarithmic(10.0).unwrap()),
        ),
        (
            "geometric 10",
            RunCount::Tnb(Tnb::from_mean(1.0, 10.0).unwrap()),
        ),
        (
            "tnb:0.5 10",
            RunCount::Tnb(Tnb::from_mean(0.5, 10.0).unwrap()),
        ),
        (
            "tnb:-0.5 10",
            RunCount::Tnb(Tnb::from_mean(-0.5, 10.0).unwrap()),
        ),
        (
            "tnb:3 1e4",
            RunCount::Tnb(Tnb::from_mean(3.0, 1e4).unwrap()),
        ),
        (
            "poisson 3.5",
            RunCount::Poisson(PoissonK::new(3.5).unwrap()),
        ),
        (
            "poisson 50",
            RunCount::Poisson(PoissonK::new(50.0).unwrap()),
        ),
        (
            "poisson 1e6",
            RunCount::Poisson(PoissonK::new(1e6).unwrap()),
        ),
    ]
}

fn first_draws(law: &RunCount) -> Vec<u64> {
    let mut rng = dptune::rng::stream(2026, &[11]);
    (0..8).map(|_| law.sample(&mut rng)).collect()
}

/// Value stability: K is drawn by dptune's own samplers (no dependency's algorithm), so these
/// draws, and every committed result that rests on them, never move with a dependency upgrade.
/// A change here is a change of science: regenerate the results and say so.
#[test]
fn sampled_values_are_pinned_per_law() {
    let pinned: &[&[u64]] = &[
        &[28, 4, 4, 79, 13, 3, 5, 13],
        &[15, 16, 2, 33, 3, 20, 31, 24],
        &[1, 1, 5, 14, 2, 3, 2, 3],
        &[5, 6, 1, 60, 1, 12, 49, 21],
        &[13143, 24701, 6582, 11497, 20262, 7103, 8191, 9331],
        &[5, 5, 1, 7, 2, 6, 7, 6],
        &[56, 43, 56, 50, 54, 57, 57, 54],
        &[
            1000893, 998554, 999020, 1000770, 1000039, 1000625, 1001020, 1000990,
        ],
    ];
    let got: Vec<Vec<u64>> = pinned_laws().iter().map(|(_, l)| first_draws(l)).collect();
    assert_eq!(pinned.len(), got.len());
    for ((name, _), (want, got)) in pinned_laws().iter().zip(pinned.iter().zip(&got)) {
        assert_eq!(&got[..], *want, "{name}");
    }
}

/// χ² of the Poisson sampler at means where it uses transformed rejection (PTRS), over the
/// cells with at least 5 expected draws plus the two tails.
#[test]
fn poisson_rejection_sampler_matches_its_pmf() {
    for (i, mean) in [10.0, 37.5, 400.0].into_iter().enumerate() {
        let law = PoissonK::new(mean).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(77 + i as u64);
        let n = 200_000usize;
        let sd = mean.sqrt();
        let lo = (mean - 4.0 * sd).max(0.0).floor() as u64;
        let hi = (mean + 4.0 * sd).ceil() as u64;
        let mut counts = vec![0usize; (hi - lo + 3) as usize];
        for _ in 0..n {
            let k = law.sample(&mut rng);
            let cell = if k < lo {
                0
            } else if k > hi {
                counts.len() - 1
            } else {
                (k - lo + 1) as usize
            };
            counts[cell] += 1;
        }
        let below: f64 = (0..lo).map(|k| law.pmf(k)).sum();
        let inside: Vec<f64> = (lo..=hi).map(|k| law.pmf(k)).collect();
        let above = 1.0 - below - inside.iter().sum::<f64>();
        let mut expected = vec![below];
        expected.extend(inside);
        expected.push(above.max(0.0));
        let (mut chi2, mut df) = (0.0, 0usize);
        let (mut o_pool, mut e_pool) = (0.0, 0.0);
        for (o, p) in counts.iter().zip(&expected) {
            let e = p * n as f64;
            if e >= 5.0 {
                chi2 += (*o as f64 - e).powi(2) / e;
                df += 1;
            } else {
                o_pool += *o as f64;
                e_pool += e;
            }
        }
        if e_pool > 0.0 {
            chi2 += (o_pool - e_pool).powi(2) / e_pool.max(1.0);
            df += 1;
        }
        // Mean + 5 sd of χ²_df, a 1-in-a-million bound for these df.
        let bound = df as f64 + 5.0 * (2.0 * df as f64).sqrt();
        assert!(
            chi2 < bound,
            "poisson {mean}: χ² = {chi2} over {df} cells (bound {bound})"
        );
    }
}

/// However large the mean, a draw is a number of runs in the law's support {1, 2, …} (never
/// 0 from an overflow); the tuners refuse a law whose draws a u64 cannot hold, naming the
/// largest mean they take for it (which they take).
#[test]
fn draws_stay_in_the_support_and_tuners_refuse_means_they_cannot_draw() {
    use dptune::selection::CountFamily;
    use dptune::tuners::liu_talwar::LiuTalwar;
    use dptune::tuners::papernot_steinke::PapernotSteinke;
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for eta in [0.0, 1.0] {
        let t = Tnb::from_mean(eta, 1e300).unwrap();
        assert!((0..200).all(|_| t.sample(&mut rng) >= 1), "η = {eta}");
    }
    for (eta, largest) in [(1.0, 9.007e15), (0.0, 2.451e14)] {
        let family = CountFamily::Tnb { eta };
        let e = PapernotSteinke::new(family, 1e300, None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("mean") && e.contains(&format!("at most {largest:e}")),
            "{e}"
        );
        assert!(PapernotSteinke::new(family, largest, None).is_ok());
    }
    assert!(LiuTalwar::best_of(1e300).is_err() && LiuTalwar::best_of(9e15).is_ok());
}
