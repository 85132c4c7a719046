//! The PLD accountant against dp-accounting 0.6.0's (tests/fixtures/pld_dp_accounting_0.6.0.json,
//! made by tools/make_pld_fixture.py): at the same discretisation, ε(δ) within 10⁻³ relative of
//! its pessimistic (connect-the-dots) estimate, and never below its optimistic one; then exact
//! answers (quadrature, Kairouz–Oh–Viswanath, Gaussian DP) and the without-replacement checks.

use dptune::accounting::pld::{
    Direction, DiscretePair, GaussianPair, LaplacePair, Pld, PoissonGaussianPair,
};

/// dp-accounting's default: P's mass beyond the discretised losses is below e^{−50} each side.
fn tail() -> f64 {
    libm::exp(-50f64)
}

fn fixture() -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string("tests/fixtures/pld_dp_accounting_0.6.0.json").unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    doc["cases"].as_array().unwrap().clone()
}

/// ε(δ) of a case's composition, the larger of both directions where they differ: as exact
/// arithmetic on the grid would give it (dp-accounting's reading), and as dptune reports it
/// (with its allowance for the FFTs' rounding).
fn epsilon(case: &serde_json::Value) -> Option<(f64, f64)> {
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
        "laplace" => vec![Pld::connect_dots(
            &LaplacePair::new(1.0, f("b")).unwrap(),
            h,
            tail(),
        )],
        "randomized-response" => vec![Pld::connect_dots(
            &DiscretePair::randomized_response(f("noise"), case["buckets"].as_u64().unwrap())
                .unwrap(),
            h,
            tail(),
        )],
        _ => return None,
    };
    let (mut exact, mut reported) = (0.0f64, 0.0f64);
    for p in plds {
        let p = p.unwrap().self_compose(count).unwrap();
        let allowance = p.rounding_allowance();
        // A sanity bound: the allowance stays a small part of δ on every case.
        assert!(
            allowance <= 0.05 * delta,
            "rounding allowance {allowance} at δ = {delta}"
        );
        exact = exact.max(p.epsilon(delta + allowance).unwrap());
        reported = reported.max(p.epsilon(delta).unwrap());
    }
    Some((exact, reported))
}

#[test]
fn epsilons_match_dp_accounting_and_never_go_below_its_optimistic_estimate() {
    let mut checked = 0;
    for case in fixture() {
        let Some((exact, ours)) = epsilon(&case) else {
            continue;
        };
        let pess = case["epsilon_pessimistic"].as_f64().unwrap();
        let opt = case["epsilon_optimistic"].as_f64().unwrap();
        assert!(
            ours >= opt && ours >= exact,
            "below dp-accounting's optimistic ε {opt}: {ours}\n{case}"
        );
        assert!(
            (exact - pess).abs() <= 1e-3 * pess,
            "ε {exact} vs dp-accounting's {pess} (rel {:.2e})\n{case}",
            (exact - pess).abs() / pess
        );
        checked += 1;
    }
    assert!(checked >= 52, "{checked} cases");
}

// ---- Exact answers -------------------------------------------------------------------------

use dptune::accounting::convert::gdp_epsilon;
use dptune::accounting::pld::{PldAccountant, PldMechanism};
use dptune::accounting::{Accountant, DpSgd, LotSampling};

fn phi(x: f64, mean: f64, sd: f64) -> f64 {
    let z = (x - mean) / sd;
    libm::exp(-0.5 * z * z) / (sd * (2.0 * std::f64::consts::PI).sqrt())
}

/// ∫ (p(x) − e^ε q(x))₊ dx by Simpson's rule on [lo, hi] with `n` (even) intervals.
fn hockey_stick(p: &dyn Fn(f64) -> f64, q: &dyn Fn(f64) -> f64, eps: f64, lo: f64, hi: f64) -> f64 {
    let n = 400_000;
    let h = (hi - lo) / n as f64;
    let f = |x: f64| (p(x) - libm::exp(eps) * q(x)).max(0.0);
    let mut sum = f(lo) + f(hi);
    for i in 1..n {
        sum += f(lo + i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 };
    }
    sum * h / 3.0
}

/// One run of a mechanism, its δ(ε) read off the PLD accountant.
fn pld_delta(m: PldMechanism, eps: f64) -> f64 {
    let mut a = PldAccountant::new(1e-4).unwrap();
    a.compose(m, 1).unwrap();
    a.delta(eps).unwrap().delta
}

/// A single step of every continuous mechanism against the hockey-stick divergence of its
/// dominating pair by quadrature of the densities (at losses off the grid, where the
/// connect-the-dots PLD interpolates): never below it, and within the interpolation's error.
#[test]
fn one_step_of_each_mechanism_matches_its_hockey_stick_divergence_by_quadrature() {
    type Density = Box<dyn Fn(f64) -> f64>;
    /// (name, mechanism, its pair in each order, the integration range).
    type Case = (String, PldMechanism, Vec<(Density, Density)>, (f64, f64));
    let mixture = |q: f64, s: f64| -> Density {
        Box::new(move |x| (1.0 - q) * phi(x, 0.0, s) + q * phi(x, 1.0, s))
    };
    let normal = |m: f64, s: f64| -> Density { Box::new(move |x| phi(x, m, s)) };
    let laplace = |m: f64, b: f64| -> Density {
        Box::new(move |x| libm::exp(-(x - m).abs() / b) / (2.0 * b))
    };
    for eps in [0.0, 0.0123, 0.31415, 1.05, 2.5] {
        let mut cases: Vec<Case> = vec![];
        for (sens, sigma) in [(1.0, 0.7), (2.0, 3.0)] {
            cases.push((
                format!("gaussian Δ={sens} σ={sigma}"),
                PldMechanism::Gaussian {
                    sensitivity: sens,
                    sigma,
                },
                vec![
                    (normal(sens, sigma), normal(0.0, sigma)),
                    (normal(0.0, sigma), normal(sens, sigma)),
                ],
                (-40.0 * sigma, 40.0 * sigma + sens),
            ));
        }
        for (sens, b) in [(1.0, 0.5), (1.0, 4.0)] {
            cases.push((
                format!("laplace Δ={sens} b={b}"),
                PldMechanism::Laplace {
                    sensitivity: sens,
                    scale: b,
                },
                vec![
                    (laplace(0.0, b), laplace(sens, b)),
                    (laplace(sens, b), laplace(0.0, b)),
                ],
                (-80.0 * b, 80.0 * b + sens),
            ));
        }
        for (q, s) in [(0.01, 0.8), (0.2, 1.5), (0.5, 0.6)] {
            let both = vec![
                (mixture(q, s), normal(0.0, s)),
                (normal(0.0, s), mixture(q, s)),
            ];
            cases.push((
                format!("poisson q={q} σ={s}"),
                PldMechanism::PoissonGaussian {
                    sampling_rate: q,
                    noise_multiplier: s,
                },
                both,
                (-40.0 * s, 40.0 * s + 1.0),
            ));
            let both = vec![
                (mixture(q, s), normal(0.0, s)),
                (normal(0.0, s), mixture(q, s)),
            ];
            cases.push((
                format!("without replacement q={q} σ={s}"),
                PldMechanism::WorGaussian {
                    sampling_rate: q,
                    noise_multiplier: s,
                },
                both,
                (-40.0 * s, 40.0 * s + 1.0),
            ));
        }
        for (name, m, pairs, (lo, hi)) in cases {
            let exact = pairs
                .iter()
                .map(|(p, q)| hockey_stick(p.as_ref(), q.as_ref(), eps, lo, hi))
                .fold(0.0, f64::max);
            let ours = pld_delta(m, eps);
            // Simpson's rule errs by O(h²) where the integrand has a kink (where p = e^ε q,
            // and Laplace's densities at 0 and Δ): about 10⁻⁸ here.
            assert!(
                ours >= exact - 1e-7,
                "{name} ε={eps}: δ {ours} below the quadrature's {exact}"
            );
            assert!(
                ours <= exact + 1e-6 + 1e-3 * exact,
                "{name} ε={eps}: δ {ours} vs the quadrature's {exact}"
            );
        }
    }
}

/// Randomized response and the (ε, δ) pair against sums over their outcomes, written out.
#[test]
fn discrete_mechanisms_match_their_outcome_sums() {
    for (noise, k) in [(0.5, 2u64), (0.9, 7)] {
        let kf = k as f64;
        let (own, other) = (1.0 - noise + noise / kf, noise / kf);
        for eps in [0.0f64, 0.2, 1.3] {
            // Outcome a: (own, other); b: (other, own); the k − 2 others: equal.
            let exact =
                (own - libm::exp(eps) * other).max(0.0) + (other - libm::exp(eps) * own).max(0.0);
            let ours = pld_delta(PldMechanism::RandomizedResponse { noise, buckets: k }, eps);
            assert!(
                ours >= exact - 1e-12 && ours <= exact + 1e-4,
                "rr {noise} {k} ε={eps}: {ours} vs {exact}"
            );
        }
    }
    // Kairouz–Oh–Viswanath: k-fold composition of (ε₀, δ₀)-DP is exactly
    // (ε_i, 1 − (1 − δ₀)^k (1 − δ'_i)) at ε_i = (k − 2i)ε₀ with
    // δ'_i = Σ_{l<i} C(k, l)(e^{(k−l)ε₀} − e^{(k−2i+l)ε₀}) / (1 + e^{ε₀})^k.
    let (e0, d0, k) = (0.5, 1e-6, 10u64);
    let mut a = PldAccountant::new(1e-4).unwrap();
    a.compose(
        PldMechanism::ApproximateDp {
            epsilon: e0,
            delta: d0,
        },
        k,
    )
    .unwrap();
    let binom = |n: u64, r: u64| (0..r).fold(1.0, |acc, j| acc * (n - j) as f64 / (j + 1) as f64);
    for i in 0..(k / 2) {
        let eps_i = (k - 2 * i) as f64 * e0;
        let dprime: f64 = (0..i)
            .map(|l| {
                binom(k, l)
                    * (libm::exp((k - l) as f64 * e0)
                        - libm::exp((k as f64 - 2.0 * i as f64 + l as f64) * e0))
                    / (1.0 + libm::exp(e0)).powi(k as i32)
            })
            .sum();
        let exact = 1.0 - (1.0 - d0).powi(k as i32) * (1.0 - dprime);
        let ours = a.delta(eps_i).unwrap().delta;
        assert!(
            ours >= exact * (1.0 - 1e-9),
            "i={i} ε={eps_i}: {ours} below KOV's {exact}"
        );
        assert!(
            ours <= exact * 1.01 + 1e-9,
            "i={i} ε={eps_i}: {ours} vs KOV's {exact}"
        );
    }
}

/// Runs of different noise compose: Gaussians of σ₁ and σ₂ are GDP with μ² = 1/σ₁² + 1/σ₂²
/// (dptune's Dong–Roth–Su conversion, a separate code path).
#[test]
fn heterogeneous_gaussians_compose_to_the_gdp_closed_form() {
    for (s1, k1, s2, k2) in [(2.0, 3u64, 5.0, 40u64), (1.0, 1, 10.0, 300)] {
        let mut a = PldAccountant::new(1e-4).unwrap();
        a.compose(
            PldMechanism::Gaussian {
                sensitivity: 1.0,
                sigma: s1,
            },
            k1,
        )
        .unwrap();
        a.compose(
            PldMechanism::Gaussian {
                sensitivity: 1.0,
                sigma: s2,
            },
            k2,
        )
        .unwrap();
        let mu = (k1 as f64 / (s1 * s1) + k2 as f64 / (s2 * s2)).sqrt();
        for delta in [1e-3, 1e-6] {
            let exact = gdp_epsilon(mu, delta).unwrap().epsilon;
            let ours = a.epsilon(delta).unwrap().epsilon;
            assert!(ours >= exact * (1.0 - 1e-9), "{ours} < GDP's {exact}");
            assert!(ours <= exact * 1.002 + 1e-3, "{ours} ≫ GDP's {exact}");
        }
    }
}

// ---- Without replacement -------------------------------------------------------------------

/// The without-replacement PLD is never above the existing Wang–Balle–Kasiviswanathan RDP
/// bound for the same run.
#[test]
fn without_replacement_pld_is_never_above_the_wbk_rdp_bound() {
    for q in [0.01, 0.05, 0.2] {
        for sigma in [0.8, 1.5, 4.0] {
            for steps in [1u64, 100, 1000] {
                let run =
                    DpSgd::with_sampling(LotSampling::WithoutReplacement, q, sigma, steps).unwrap();
                let rdp = Accountant::default()
                    .epsilon(&run.rdp(), 1e-5)
                    .unwrap()
                    .epsilon;
                let (step, count) = PldMechanism::dpsgd(&run);
                let mut a = PldAccountant::new(1e-3).unwrap();
                a.compose(step, count).unwrap();
                let pld = a.epsilon(1e-5).unwrap().epsilon;
                assert!(
                    pld <= rdp,
                    "q={q} σ={sigma} T={steps}: PLD ε {pld} > WBK RDP ε {rdp}"
                );
            }
        }
    }
}

/// δ(ε) of T steps without replacement against a Monte Carlo estimate from sampled privacy
/// losses of the composed pair (each direction; the PLD accounts for the larger): δ_PLD is at
/// least the estimate's lower confidence bound (empirical Bernstein, Maurer–Pontil 2009, at
/// confidence 1 − 10⁻⁶) on every case.
#[test]
fn without_replacement_delta_is_above_a_monte_carlo_lower_confidence_bound() {
    let mut rng = dptune::rng::stream(20261128, &[40]);
    for (q, sigma, steps) in [(0.1, 1.0, 20u64), (0.02, 0.7, 50), (0.3, 2.0, 10)] {
        let mut a = PldAccountant::new(1e-4).unwrap();
        a.compose(
            PldMechanism::WorGaussian {
                sampling_rate: q,
                noise_multiplier: sigma,
            },
            steps,
        )
        .unwrap();
        let mix_loss =
            |x: f64| libm::log((1.0 - q) + q * libm::exp((2.0 * x - 1.0) / (2.0 * sigma * sigma)));
        let n = 100_000;
        for remove in [true, false] {
            let losses: Vec<f64> = (0..n)
                .map(|_| {
                    (0..steps)
                        .map(|_| {
                            let z = sigma * dptune::rng::normal(&mut rng);
                            if remove {
                                // x ~ P′ = q N(1, σ²) + (1 − q) N(0, σ²); L = ln P′/Q.
                                let u: f64 = rand::Rng::random(&mut rng);
                                mix_loss(z + if u < q { 1.0 } else { 0.0 })
                            } else {
                                // x ~ Q; L = ln Q/P′.
                                -mix_loss(z)
                            }
                        })
                        .sum()
                })
                .collect();
            for eps in [0.25, 0.5, 1.0] {
                let v: Vec<f64> = losses
                    .iter()
                    .map(|&l| (-libm::expm1(eps - l)).max(0.0))
                    .collect();
                let mean = v.iter().sum::<f64>() / n as f64;
                let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
                let ln = libm::log(2.0 / 1e-6f64);
                let lcb =
                    mean - (2.0 * var * ln / n as f64).sqrt() - 7.0 * ln / (3.0 * (n - 1) as f64);
                let ours = a.delta(eps).unwrap().delta;
                assert!(
                    ours >= lcb,
                    "q={q} σ={sigma} T={steps} ε={eps} (remove={remove}): δ {ours} < MC LCB {lcb} (mean {mean})"
                );
            }
        }
    }
}

/// Poisson and without-replacement lots protect different relations: not composed together.
#[test]
fn lots_of_both_samplings_are_not_composed_together() {
    let mut a = PldAccountant::new(1e-3).unwrap();
    a.compose(
        PldMechanism::PoissonGaussian {
            sampling_rate: 0.1,
            noise_multiplier: 1.0,
        },
        5,
    )
    .unwrap();
    let e = a
        .compose(
            PldMechanism::WorGaussian {
                sampling_rate: 0.1,
                noise_multiplier: 1.0,
            },
            5,
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("neighbouring relations"), "{e}");
    assert!(PldAccountant::new(0.0).is_err());
    assert!(PldAccountant::new(1e-3).unwrap().epsilon(1e-5).is_err());
}

// ---------------------------------------------------------------------------------------------
// Tuners whose guarantee composes runs take the tighter of their RDP and PLD bounds.

use dptune::tuners::Tuner;
use dptune::workloads::{Declarations, PartitionedDeclaration, Space, TrainingDeclaration};

const ADULT_N: u64 = 30956;

/// A DP-SGD run on Adult (lots of 128 of 30,956 without replacement, 8 epochs, σ) and the
/// release of a test accuracy over 16,281 records at noise multiplier σ: the run of
/// sims/dpsgd-equal-budget.toml, built here from its parts.
fn adult_run(sigma: f64) -> (DpSgd, Gaussian) {
    let sgd = DpSgd::without_replacement(ADULT_N, 128, sigma, 8).unwrap();
    let t = 16281.0;
    (sgd, Gaussian::new(1.0 / t, sigma / t).unwrap())
}

/// The run as its workload declares it: DP-SGD and the Gaussian release (`with_pld`), or the
/// release by its zCDP guarantee, which the PLD accountant does not support (the same RDP
/// curve, no PLD).
fn declared_run(sigma: f64, with_pld: bool) -> Declarations {
    let (sgd, release) = adult_run(sigma);
    let release = if with_pld {
        Event::of_gaussian(&release)
    } else {
        Event::zcdp_of(&release)
    };
    Declarations {
        training: Some(TrainingDeclaration {
            run: Event::composed(vec![Event::dpsgd(&sgd).unwrap(), release]).unwrap(),
        }),
        partitioned: Some(PartitionedDeclaration {
            private_validation_records: Some(16281),
        }),
        ..Declarations::of_space("adult", Space::UnitBox { dim: 2 })
    }
}

fn naive(params: &str) -> dptune::Result<Box<dyn Tuner>> {
    dptune::tuners::build("naive", &params.parse::<toml::Table>().unwrap())
}

use dptune::accounting::{Event, Gaussian};

#[test]
fn naive_composition_takes_the_tighter_of_its_rdp_and_pld_bounds() {
    let (sigma, delta, k) = (2.0, 1e-5, 10u64);
    let declared = declared_run(sigma, true);
    let acc = Accountant::default();
    let (sgd, release) = adult_run(sigma);

    // RDP: the run's curve composed k times, converted (independently of the tuner).
    let rdp = acc
        .epsilon(
            &sgd.rdp().compose(&release.rdp()).unwrap().self_compose(k),
            delta,
        )
        .unwrap()
        .epsilon;
    let by_rdp = naive("candidates = 10\naccountant = \"rdp\"").unwrap();
    let g = by_rdp.guarantee(&declared, delta, &acc).unwrap();
    assert_eq!(g.epsilon, rdp);
    assert!(
        g.theorem.starts_with("RDP composition of 10 runs"),
        "{}",
        g.theorem
    );

    // PLD: k·steps WOR steps and k releases, composed by the accountant directly.
    let mut pld = PldAccountant::new(1e-4).unwrap();
    pld.compose(
        PldMechanism::WorGaussian {
            sampling_rate: 128.0 / ADULT_N as f64,
            noise_multiplier: sigma,
        },
        k * 8 * 242,
    )
    .unwrap()
    .compose(
        PldMechanism::Gaussian {
            sensitivity: 1.0,
            sigma,
        },
        k,
    )
    .unwrap();
    let want = pld.epsilon(delta).unwrap().epsilon;
    let by_pld = naive("candidates = 10\naccountant = \"pld\"").unwrap();
    let g = by_pld.guarantee(&declared, delta, &acc).unwrap();
    assert!(
        (g.epsilon - want).abs() <= 1e-9 * want,
        "{} vs {want}",
        g.epsilon
    );
    assert_eq!(
        g.theorem,
        "PLD composition of 10 runs; pld/connect-dots/1e-4"
    );
    // Here the PLD is much tighter, and the default (best) takes it.
    assert!(want < 0.9 * rdp, "PLD {want} vs RDP {rdp}");
    let best = naive("candidates = 10").unwrap();
    assert_eq!(
        best.guarantee(&declared, delta, &acc).unwrap().epsilon,
        g.epsilon
    );
    assert_eq!(best.params(), "candidates=10");
    assert_eq!(by_pld.params(), "candidates=10, accountant=pld");

    // A workload that declares no PLD: best is RDP, pld is refused by name.
    let rdp_only = declared_run(sigma, false);
    assert_eq!(best.guarantee(&rdp_only, delta, &acc).unwrap().epsilon, rdp);
    let err = by_pld
        .guarantee(&rdp_only, delta, &acc)
        .unwrap_err()
        .to_string();
    assert!(err.contains("accountant") && err.contains("PLD"), "{err}");
    let err = naive("candidates = 10\naccountant = \"prv\"")
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("accountant"), "{err}");
}

#[test]
fn propose_test_and_dp_gibo_take_the_pld_bound_where_it_is_tighter() {
    let acc = Accountant::default();
    let delta = 1e-5;
    // Propose-test's final run.
    let params: toml::Table = "grid = 3\nshards = 10\nu0 = 0.5\ngranularity = 0.05\neps0 = 0.1"
        .parse()
        .unwrap();
    let pt = dptune::tuners::build("propose-test", &params).unwrap();
    let with = pt.guarantee(&declared_run(2.0, true), delta, &acc).unwrap();
    let without = pt
        .guarantee(&declared_run(2.0, false), delta, &acc)
        .unwrap();
    assert!(with.epsilon < without.epsilon, "{with:?} vs {without:?}");
    assert!(
        with.theorem.contains("pld/connect-dots"),
        "{}",
        with.theorem
    );

    // DP-GIBO's evaluations: μ-GDP composed with T·b + 1 DP-SGD runs.
    use dptune::workloads::PerUserDeclaration;
    let (sgd, _) = adult_run(4.0);
    let per_user = |pld: bool| Declarations {
        per_user: Some(PerUserDeclaration {
            n_users: 100,
            domain: vec![(0.0, 1.0); 2],
            evaluation_sd: 0.0,
            prior_lengthscales: None,
            // Without PLD: the same run known only by its curve on a grid of orders.
            evaluation: Some(if pld {
                Event::dpsgd(&sgd).unwrap()
            } else {
                let orders: Vec<f64> = (2..=64).map(f64::from).collect();
                let curve = sgd.rdp();
                let eps = orders.iter().map(|&o| curve.eval(o).unwrap()).collect();
                Event::renyi_curve(orders, eps).unwrap()
            }),
        }),
        ..Declarations::of_space("losses", Space::UnitBox { dim: 2 })
    };
    let params: toml::Table = "mu = 1\nsteps = 4\nbatch = 2\nclip = 1\nlengthscale = 0.3"
        .parse()
        .unwrap();
    let gibo = dptune::tuners::build("dp-gibo", &params).unwrap();
    let with = gibo.guarantee(&per_user(true), delta, &acc).unwrap();
    let without = gibo.guarantee(&per_user(false), delta, &acc).unwrap();
    assert!(with.epsilon < without.epsilon, "{with:?} vs {without:?}");
    // Independently: the GDP part as a Gaussian of sensitivity μ, and 9 runs of the steps.
    let mut pld = PldAccountant::new(1e-4).unwrap();
    let (step, steps) = PldMechanism::dpsgd(&sgd);
    pld.compose(step, 9 * steps)
        .unwrap()
        .compose(
            PldMechanism::Gaussian {
                sensitivity: 1.0,
                sigma: 1.0,
            },
            1,
        )
        .unwrap();
    let want = pld.epsilon(delta).unwrap().epsilon;
    assert!(
        (with.epsilon - want).abs() <= 1e-9 * want,
        "{} vs {want}",
        with.epsilon
    );
}

// ---- Edge cases (issue 61) -----------------------------------------------------------------

use crate::cli::dptune as dptune_cli;

/// A coarser grid is a looser bound, never a smaller one: for dp-accounting's case q = 0.01,
/// σ = 1.1, 1000 steps, every interval up to 10⁶ gives an ε at least dp-accounting's
/// optimistic estimate at 10⁻⁴ (below the exact ε) and a δ at its query ε at least its
/// optimistic δ (losses past 709 once overflowed e^ε to a lost mass: ε = 0).
#[test]
fn a_coarse_grid_never_gives_a_smaller_epsilon_or_delta() {
    let case = fixture()
        .into_iter()
        .find(|c| c["kind"] == "poisson-gaussian" && c["count"] == 1000 && c["interval"] == 1e-4)
        .unwrap();
    let f = |k: &str| case[k].as_f64().unwrap();
    let step = PldMechanism::PoissonGaussian {
        sampling_rate: f("q"),
        noise_multiplier: f("sigma"),
    };
    for h in [1e-3, 0.1, 1.0, 10.0, 100.0, 709.0, 710.0, 1000.0, 1e4, 1e6] {
        let mut a = PldAccountant::new(h).unwrap();
        a.compose(step, 1000).unwrap();
        let eps = a.epsilon(f("delta")).unwrap().epsilon;
        assert!(
            eps.is_finite() && eps >= f("epsilon_optimistic"),
            "h = {h}: ε {eps}"
        );
        let delta = a.delta(f("epsilon_query")).unwrap().delta;
        assert!(delta >= f("delta_optimistic"), "h = {h}: δ {delta}");
    }
    // The command line and `best` with them.
    let run = "account dpsgd --sampling-rate 0.01 --noise-multiplier 1 --steps 100 --delta 1e-5";
    let (code, out, err) = dptune_cli(&format!(
        "{run} --accountant pld --pld-interval 1000 --json"
    ));
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    // The exact ε is about 0.718 (the default grid's, a bound within 10⁻⁴ above it).
    assert!(v["epsilon"].as_f64().unwrap() >= 0.71, "{v}");
    let (_, best, _) = dptune_cli(&format!(
        "{run} --accountant best --pld-interval 1000 --json"
    ));
    let b: serde_json::Value = serde_json::from_str(&best).unwrap();
    assert!(b["epsilon"].as_f64().unwrap() >= 0.71, "{b}");
}

/// ε(δ) by the closed form of Gaussian DP (bisection on Balle–Wang's δ(ε)).
fn gaussian_epsilon(mu: f64, delta: f64) -> f64 {
    use dptune::accounting::pld::DominatingPair;
    let exact = GaussianPair::new(mu, 1.0).unwrap();
    let (mut lo, mut hi) = (0.0, 1e5);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if exact.delta(mid) > delta {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

/// Losses far above 709 are read off without underflow (e^{−ε_j} once made ε = +∞): one
/// Gaussian of μ = 50 and 100 of μ = 5 (together 50-GDP), against Gaussian DP's closed form.
#[test]
fn epsilons_of_hundreds_are_read_off_as_the_closed_form_gives_them() {
    for (sigma, k) in [(0.02, 1u64), (0.2, 100)] {
        let mut a = PldAccountant::new(1e-3).unwrap();
        a.compose(
            PldMechanism::Gaussian {
                sensitivity: 1.0,
                sigma,
            },
            k,
        )
        .unwrap();
        let exact = gaussian_epsilon((k as f64).sqrt() / sigma, 1e-5);
        let eps = a.epsilon(1e-5).unwrap().epsilon;
        assert!(exact > 1000.0, "{exact}");
        assert!(
            eps >= exact && eps <= exact + 0.01,
            "σ = {sigma}, k = {k}: {eps} vs {exact}"
        );
    }
}

/// A δ below what the PLD resolves (its cut tails and rounding allowance) is said so, never
/// ε = +∞ ("no finite ε"); `best` (the command line and the tuners) then takes Rényi DP's
/// finite bound, and `pld` alone is refused with the reason.
#[test]
fn a_delta_below_the_pld_resolution_is_said_so_and_best_falls_back_to_rdp() {
    let mut a = PldAccountant::new(1e-4).unwrap();
    a.compose(
        PldMechanism::PoissonGaussian {
            sampling_rate: 0.01,
            noise_multiplier: 1.0,
        },
        100,
    )
    .unwrap();
    let e = a.epsilon(1e-100).unwrap_err().to_string();
    assert!(
        e.contains("cannot resolve") && e.contains("Rényi DP"),
        "{e}"
    );
    assert!(a.epsilon(1e-5).unwrap().epsilon.is_finite());
    // Where the mechanism's own infinite loss reaches δ, no ε is finite: +∞, as dp-accounting.
    let mut own = PldAccountant::new(1e-4).unwrap();
    own.compose(
        PldMechanism::ApproximateDp {
            epsilon: 0.3,
            delta: 1e-7,
        },
        1,
    )
    .unwrap();
    assert!(own.epsilon(0.5e-7).unwrap().epsilon.is_infinite());

    let run = "account dpsgd --sampling-rate 0.01 --noise-multiplier 1 --steps 100 --delta 1e-100";
    let (_, rdp, _) = dptune_cli(&format!("{run} --json"));
    let rdp: serde_json::Value = serde_json::from_str(&rdp).unwrap();
    let (code, best, err) = dptune_cli(&format!("{run} --accountant best"));
    assert_eq!(code, 0, "{err}");
    assert!(
        best.contains(&format!("ε = {:.6}", rdp["epsilon"].as_f64().unwrap()))
            && best.contains("cannot resolve")
            && !best.contains("= inf"),
        "{best}"
    );
    let (code, _, err) = dptune_cli(&format!("{run} --accountant pld"));
    assert!(
        code == 2 && err.contains("cannot resolve") && !err.contains("no finite"),
        "{err}"
    );
    // Calibration: best takes Rényi DP's noise; pld says why it has none.
    let cal = "account calibrate-dpsgd --sampling-rate 0.01 --steps 100 --epsilon 1 --delta 1e-100";
    let (code, out, err) = dptune_cli(&format!("{cal} --accountant best"));
    assert!(code == 0 && out.contains("cannot resolve"), "{out}{err}");
    let (code, _, err) = dptune_cli(&format!("{cal} --accountant pld"));
    assert!(code == 2 && err.contains("cannot resolve"), "{err}");

    // The tuners: naive's `pld` is refused with the reason, `best` is RDP's.
    let declared = declared_run(2.0, true);
    let acc = Accountant::default();
    let e = naive("candidates = 10\naccountant = \"pld\"")
        .unwrap()
        .guarantee(&declared, 1e-100, &acc)
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot resolve"), "{e}");
    let best = naive("candidates = 10")
        .unwrap()
        .guarantee(&declared, 1e-100, &acc)
        .unwrap();
    let rdp = naive("candidates = 10\naccountant = \"rdp\"")
        .unwrap()
        .guarantee(&declared, 1e-100, &acc)
        .unwrap();
    assert!(
        best.epsilon.is_finite() && best == rdp,
        "{best:?} vs {rdp:?}"
    );
}

/// A composition whose window would pass the PLD's memory bound (2²³ losses) is refused before
/// any transform, naming the interval and the coarsest one that fits; `best` takes Rényi DP's
/// bound; and at the interval named the PLD's bound is finite and below Rényi DP's (q = 0.3,
/// σ = 0.76, 9,859 steps: its losses near 1,000 once read off as ε = +∞).
#[test]
fn a_window_beyond_the_memory_bound_is_refused_and_best_falls_back_to_rdp() {
    let big = "account dpsgd --sampling-rate 1 --noise-multiplier 10 --steps 10000000 --delta 1e-5";
    let (code, _, err) = dptune_cli(&format!("{big} --accountant pld"));
    assert!(
        code == 2
            && err.contains("value_discretization_interval")
            && err.contains("memory bound")
            && err.contains("at least 6.3e-4"),
        "{err}"
    );
    let (code, out, err) = dptune_cli(&format!("{big} --accountant best --json"));
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["accountant"].as_str().unwrap().starts_with("rdp"), "{v}");

    let run = "account dpsgd --sampling-rate 0.3 --noise-multiplier 0.76 --steps 9859 --delta 1e-5";
    let (code, _, err) = dptune_cli(&format!("{run} --accountant pld"));
    assert!(code == 2 && err.contains("at least 1.1e-4"), "{err}");
    let (_, rdp, _) = dptune_cli(&format!("{run} --json"));
    let rdp: serde_json::Value = serde_json::from_str(&rdp).unwrap();
    let (code, pld, err) = dptune_cli(&format!(
        "{run} --accountant pld --pld-interval 1.1e-4 --json"
    ));
    assert_eq!(code, 0, "{err}");
    let pld: serde_json::Value = serde_json::from_str(&pld).unwrap();
    let (p, r) = (
        pld["epsilon"].as_f64().unwrap(),
        rdp["epsilon"].as_f64().unwrap(),
    );
    assert!(p.is_finite() && p < r, "PLD {p} vs RDP {r}");
}

/// The Gaussian's δ(ε) is positive at every ε: read off past the grid's last loss (or on a grid
/// so coarse that its top δ underflows) it is the smallest positive double, never 0.
#[test]
fn a_tiny_delta_is_the_smallest_positive_double_never_zero() {
    for h in [1e-4, 1000.0] {
        let mut a = PldAccountant::new(h).unwrap();
        a.compose(
            PldMechanism::Gaussian {
                sensitivity: 1.0,
                sigma: 1.0,
            },
            1,
        )
        .unwrap();
        let d = a.delta(1e6).unwrap().delta;
        assert!(d >= f64::from_bits(1), "h = {h}: δ = {d}");
    }
    let (code, out, err) = dptune_cli(
        "account gaussian --sensitivity 1 --sigma 1 --epsilon 1e6 --accountant pld --pld-interval 1000 --json",
    );
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["delta"].as_f64(), Some(f64::from_bits(1)), "{v}");
    // Laplace's δ is exactly 0 beyond its largest loss: it stays 0.
    let mut a = PldAccountant::new(1e-4).unwrap();
    a.compose(
        PldMechanism::Laplace {
            sensitivity: 1.0,
            scale: 1.0,
        },
        1,
    )
    .unwrap();
    assert_eq!(a.delta(2.0).unwrap().delta, 0.0);
}

/// The same bits on any machine (docs/architecture.md): ε of two DP-SGD compositions pinned to
/// the bit as this code computes them. dptune's transcendentals are `libm`'s and its FFTs its
/// own, so neither the CPU (glibc's FMA/AVX2 variants, an FFT library's run-time kernels) nor
/// the thread count may move them; a change of the arithmetic itself must re-pin them and
/// regenerate what the PLD accountant made (docs/reproducibility-notes.md).
#[test]
fn dpsgd_pld_epsilons_are_the_same_bits_on_any_machine() {
    use dptune::accounting::pld::{PldAccountant, PldMechanism};
    use dptune::accounting::DpSgd;
    for (q, steps, pinned) in [
        (0.01, 1000, 1.5153709223125675),
        (256.0 / 60000.0, 14063, 2.381792492617091),
    ] {
        let (step, count) = PldMechanism::dpsgd(&DpSgd::new(q, 1.1, steps).unwrap());
        let mut pld = PldAccountant::new(1e-4).unwrap();
        pld.compose(step, count).unwrap();
        let epsilon = pld.epsilon(1e-5).unwrap().epsilon;
        assert_eq!(
            epsilon.to_bits(),
            f64::to_bits(pinned),
            "q = {q}, {steps} steps: ε = {epsilon:?}, pinned {pinned:?}"
        );
    }
}
