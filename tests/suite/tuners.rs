//! Tuners: the registry, guarantees equal to the theory's numbers, and empirical behaviour on
//! cases with a known answer.

use dptune::accounting::{Accountant, Event, Gaussian, RdpCurve};
use dptune::gp::KernelFamily;
use dptune::rng::stream;
use dptune::selection::{CountFamily, CountLaw};
use dptune::tuners::{build, Tuner};
use dptune::workloads::synthetic_gp::{GpObjective, ScoreRelease, SyntheticGp};
use dptune::workloads::Declarations;
use dptune::workloads::{Hyper, Oracle, PrivateTraining, Space, Workload};
use rand::RngCore;

/// m candidates on a line; candidate 0 has utility 1, the others 0; scores carry tiny noise,
/// so "the good one was tried" is exactly "the good one was chosen".
struct OneGood {
    space: Space,
    run: Event,
}

impl OneGood {
    fn new(m: usize) -> Self {
        OneGood {
            space: Space::Finite((0..m).map(|i| vec![i as f64]).collect()),
            run: Event::zcdp(0.1).unwrap(),
        }
    }
}
impl PrivateTraining for OneGood {
    fn run_event(&self) -> &Event {
        &self.run
    }
    fn train(&self, h: &Hyper, rng: &mut dyn RngCore) -> f64 {
        self.utility(h) + 1e-9 * dptune::rng::normal(rng)
    }
}
impl Oracle for OneGood {
    fn utility(&self, h: &Hyper) -> f64 {
        if h[0] == 0.0 {
            1.0
        } else {
            0.0
        }
    }
    fn best_utility(&self) -> f64 {
        1.0
    }
}
impl Workload for OneGood {
    fn name(&self) -> String {
        "one-good".into()
    }
    fn space(&self) -> &Space {
        &self.space
    }
    fn oracle(&self) -> &dyn Oracle {
        self
    }
    fn private_training(&self) -> Option<&dyn PrivateTraining> {
        Some(self)
    }
}

fn tuner(name: &str, params: &str) -> Box<dyn Tuner> {
    build(name, &toml::from_str(params).unwrap()).unwrap()
}

fn success_rate(t: &dyn Tuner, w: &dyn Workload, n: u64) -> f64 {
    let hits = (0..n)
        .filter(|&i| {
            let out = t.tune(w, &mut stream(99, &[i])).unwrap();
            out.chosen.is_some_and(|h| w.oracle().utility(&h) == 1.0)
        })
        .count();
    hits as f64 / n as f64
}

#[test]
fn repeat_and_select_success_probability_matches_1_minus_f() {
    let m = 20;
    let w = OneGood::new(m);
    for (dist, params) in [
        ("logarithmic", "dist = \"logarithmic\"\nmean = 10"),
        ("poisson", "dist = \"poisson\"\nmean = 10"),
        ("tnb", "dist = \"tnb:0.5\"\nmean = 5"),
    ] {
        let t = tuner("papernot-steinke", params);
        let family = match dist {
            "logarithmic" => CountFamily::Tnb { eta: 0.0 },
            "poisson" => CountFamily::Poisson,
            _ => CountFamily::Tnb { eta: 0.5 },
        };
        let mean = if dist == "tnb" { 5.0 } else { 10.0 };
        let law = family.with_mean(mean, None).unwrap();
        let want = law.one_minus_pgf(1.0 - 1.0 / m as f64);
        let n = 20_000;
        let got = success_rate(t.as_ref(), &w, n);
        let se = (want * (1.0 - want) / n as f64).sqrt();
        assert!(
            (got - want).abs() < 4.0 * se,
            "{dist}: {got} vs 1 − f(1 − 1/m) = {want}"
        );
    }
    // Liu–Talwar best-of is the geometric law.
    let lt = tuner("liu-talwar", "mean = 10");
    let want = CountFamily::Tnb { eta: 1.0 }
        .with_mean(10.0, None)
        .unwrap()
        .one_minus_pgf(0.95);
    let got = success_rate(lt.as_ref(), &w, 20_000);
    assert!(
        (got - want).abs() < 4.0 * (want * (1.0 - want) / 20_000.0).sqrt(),
        "{got} vs {want}"
    );
}

#[test]
fn threshold_variant_succeeds_before_halting_at_the_predicted_rate() {
    let m = 10.0;
    let p = 0.05;
    let w = OneGood::new(10);
    let t = tuner(
        "liu-talwar",
        "variant = \"threshold\"\nthreshold = 0.5\nhalt_probability = 0.05",
    );
    // Each round: halt with p, else succeed with 1/m.
    let want = (1.0 - p) / m / (p + (1.0 - p) / m);
    let n = 20_000;
    let got = success_rate(t.as_ref(), &w, n);
    assert!(
        (got - want).abs() < 4.0 * (want * (1.0 - want) / n as f64).sqrt(),
        "{got} vs {want}"
    );
}

#[test]
fn naive_tries_everything_and_guarantees_by_composition() {
    let w = OneGood::new(7);
    let t = tuner("naive", "");
    for i in 0..20 {
        let out = t.tune(&w, &mut stream(5, &[i])).unwrap();
        assert_eq!(out.chosen, Some(vec![0.0]));
        assert_eq!(out.runs, 7);
    }
    let acc = Accountant::default();
    let g = t.guarantee(&Declarations::of(&w), 1e-6, &acc).unwrap();
    let direct = acc
        .epsilon(&RdpCurve::zcdp(0.7).unwrap(), 1e-6)
        .unwrap()
        .epsilon;
    assert!(
        (g.epsilon - direct).abs() < 1e-12 * direct,
        "{} vs {direct}",
        g.epsilon
    );
}

#[test]
fn guarantees_match_the_theory_and_use_pure_dp_when_tighter() {
    let f = GpObjective::sample(2, KernelFamily::Rbf, 0.3, 1.0, 128, 1, 0).unwrap();
    let grid = Space::random_grid(2, 50, &mut stream(2, &[])).unwrap();
    // Gaussian score with ρ = Δ²/(2σ²) = 0.1.
    let sigma = 1.0 / 0.2f64.sqrt();
    assert!((Gaussian::new(1.0, sigma).unwrap().rho() - 0.1).abs() < 1e-15);
    let gauss = SyntheticGp::new(
        f.clone(),
        grid.clone(),
        ScoreRelease::Gaussian {
            sensitivity: 1.0,
            sigma,
        },
    )
    .unwrap();
    let acc = Accountant::default();
    let ps = tuner("papernot-steinke", "dist = \"logarithmic\"\nmean = 10");
    let g = ps.guarantee(&Declarations::of(&gauss), 1e-6, &acc).unwrap();
    assert!(
        (g.epsilon - 3.450841).abs() <= 2e-6,
        "spec 000 Table A: {}",
        g.epsilon
    );
    assert!(g.theorem.contains("Theorem 2"));
    // Pure runs: Liu–Talwar 3ε and the threshold variant's 2ε; naive uses KOV.
    let lap = SyntheticGp::new(
        f,
        grid,
        ScoreRelease::Laplace {
            sensitivity: 1.0,
            scale: 10.0,
        },
    )
    .unwrap();
    let lt = tuner("liu-talwar", "mean = 10")
        .guarantee(&Declarations::of(&lap), 1e-6, &acc)
        .unwrap();
    assert!(lt.epsilon <= 0.3 + 1e-12, "{lt:?}");
    let th = tuner(
        "liu-talwar",
        "variant = \"threshold\"\nthreshold = 0\nhalt_probability = 0.01",
    )
    .guarantee(&Declarations::of(&lap), 1e-6, &acc)
    .unwrap();
    assert!(th.epsilon <= 0.2 + 1e-12, "{th:?}");
    let naive = tuner("naive", "")
        .guarantee(&Declarations::of(&lap), 1e-6, &acc)
        .unwrap();
    let rdp_route = acc
        .epsilon(&crate::common::run_curve(&lap).self_compose(50), 1e-6)
        .unwrap()
        .epsilon;
    assert!(
        naive.epsilon <= rdp_route && naive.epsilon <= 5.0,
        "{naive:?} vs {rdp_route}"
    );
}

#[test]
fn tuning_is_reproducible_from_its_stream() {
    let f = GpObjective::sample(3, KernelFamily::Matern52, 0.3, 1.0, 128, 4, 0).unwrap();
    let w = SyntheticGp::new(
        f,
        Space::UnitBox { dim: 3 },
        ScoreRelease::Gaussian {
            sensitivity: 1.0,
            sigma: 0.5,
        },
    )
    .unwrap();
    let t = tuner("papernot-steinke", "dist = \"geometric\"\nmean = 20");
    let a = t.tune(&w, &mut stream(3, &[1])).unwrap();
    let b = t.tune(&w, &mut stream(3, &[1])).unwrap();
    assert_eq!(a, b);
    assert!(t.tune(&w, &mut stream(3, &[2])).unwrap() != a);
    assert!(
        tuner("naive", "")
            .guarantee(&Declarations::of(&w), 1e-6, &Accountant::default())
            .is_err(),
        "box needs candidates"
    );
    assert_eq!(
        tuner("naive", "candidates = 5")
            .tune(&w, &mut stream(1, &[]))
            .unwrap()
            .runs,
        5
    );
}

#[test]
fn registry_errors_name_the_field() {
    let err = |name: &str, params: &str| {
        build(name, &toml::from_str(params).unwrap())
            .err()
            .unwrap()
            .to_string()
    };
    assert!(err("grid-search", "").contains("naive, liu-talwar, papernot-steinke"));
    assert!(err("papernot-steinke", "mean = 10").contains("dist"));
    assert!(err("papernot-steinke", "dist = \"logarithmic\"").contains("mean"));
    assert!(err("papernot-steinke", "dist = \"logarithmic\"\nmean = 0.5").contains("mean"));
    assert!(err("papernot-steinke", "dist = \"weird\"\nmean = 5").contains("dist"));
    assert!(err(
        "papernot-steinke",
        "dist = \"logarithmic\"\nmean = 5\nmaen = 3"
    )
    .contains("maen"));
    assert!(
        err("liu-talwar", "variant = \"threshold\"\nthreshold = 1").contains("halt_probability")
    );
    assert!(err(
        "liu-talwar",
        "variant = \"threshold\"\nthreshold = 1\nhalt_probability = 0"
    )
    .contains("halt_probability"));
    assert!(err("naive", "candidates = 2.5").contains("candidates"));
    let law = CountFamily::Poisson.with_mean(3.0, None).unwrap();
    assert!((law.mean() - 3.0).abs() < 1e-15);
}

/// Issue 38: the typed constructors build the same tuners as the registry (same parameters,
/// same guarantee) and refuse what the registry refuses.
#[test]
fn typed_constructors_match_the_registry() {
    use dptune::tuners::{liu_talwar::LiuTalwar, naive::Naive, papernot_steinke::PapernotSteinke};
    let pairs: Vec<(Box<dyn Tuner>, Box<dyn Tuner>)> = vec![
        (Box::new(Naive::every_candidate()), tuner("naive", "")),
        (
            Box::new(Naive::random(7).unwrap()),
            tuner("naive", "candidates = 7"),
        ),
        (
            Box::new(LiuTalwar::best_of(10.0).unwrap()),
            tuner("liu-talwar", "mean = 10"),
        ),
        (
            Box::new(LiuTalwar::threshold(0.5, 0.05).unwrap()),
            tuner(
                "liu-talwar",
                "variant = \"threshold\"\nthreshold = 0.5\nhalt_probability = 0.05",
            ),
        ),
        (
            Box::new(PapernotSteinke::logarithmic(10.0).unwrap()),
            tuner("papernot-steinke", "dist = \"logarithmic\"\nmean = 10"),
        ),
        (
            Box::new(PapernotSteinke::tnb(0.5, 10.0).unwrap()),
            tuner("papernot-steinke", "dist = \"tnb:0.5\"\nmean = 10"),
        ),
        (
            Box::new(PapernotSteinke::poisson(10.0).unwrap()),
            tuner("papernot-steinke", "dist = \"poisson\"\nmean = 10"),
        ),
        (
            Box::new(PapernotSteinke::new(CountFamily::Poisson, 10.0, Some(20)).unwrap()),
            tuner(
                "papernot-steinke",
                "dist = \"poisson\"\nmean = 10\ntruncate = 20",
            ),
        ),
    ];
    let w = OneGood::new(10);
    let acc = Accountant::default();
    for (typed, registry) in &pairs {
        assert_eq!(typed.params(), registry.params());
        let (a, b) = (
            typed.guarantee(&Declarations::of(&w), 1e-6, &acc).unwrap(),
            registry
                .guarantee(&Declarations::of(&w), 1e-6, &acc)
                .unwrap(),
        );
        assert_eq!(
            (a.epsilon, a.delta),
            (b.epsilon, b.delta),
            "{}",
            typed.params()
        );
    }
    // Private GP-UCB: the registry's tuner and the typed one describe themselves alike.
    use dptune::gp_ucb::{GpUcb, Release};
    let typed = GpUcb::new(50, 1.0, 0.05, Release::Both)
        .unwrap()
        .with_gamma(12.0)
        .unwrap();
    let registry = tuner(
        "gp-ucb",
        "evaluations = 50\nepsilon = 1\ndelta = 0.05\nrelease = \"both\"\ngamma = 12",
    );
    assert_eq!(typed.params(), registry.params());
    assert!(GpUcb::new(0, 1.0, 0.05, Release::Both).is_err());
    assert!(GpUcb::new(5, 0.0, 0.05, Release::Both).is_err());
    assert!(GpUcb::new(5, 1.0, 1.5, Release::Both).is_err());
    assert!(typed.clone().with_gamma(-1.0).is_err());
    assert!(typed.with_noise_free(0.0, 1.0, false).is_err());
    assert!(Naive::random(0).is_err());
    assert!(LiuTalwar::best_of(0.5).is_err());
    assert!(LiuTalwar::threshold(f64::INFINITY, 0.1).is_err());
    assert!(LiuTalwar::threshold(0.5, 0.0).is_err());
    assert!(PapernotSteinke::tnb(-1.5, 10.0).is_err());
    assert!(PapernotSteinke::new(CountFamily::Poisson, 10.0, Some(0)).is_err());

    // Propose-test, DP-GIBO, DP-GD and Lipschitz gain: the typed tuner equals the one the
    // experiment file's parameters build, field for field.
    use dptune::gibo::{History, StepRule};
    use dptune::propose_test::{Composition, Fallback, PassBudget, ProposeTestDoubling, Ticks};
    use dptune::tuners::{dp_gd::DpGd, dp_gibo::DpGibo, lipschitz_gain::LipschitzGain};
    let table = |text: &str| toml::from_str::<toml::Table>(text).unwrap();
    let typed = ProposeTestDoubling::new(
        4,
        PassBudget::Tuning(0.5),
        Ticks::new(0.1, 0.05, 0.9).unwrap(),
        Composition::Advanced,
        Some(1e-7),
    )
    .unwrap()
    .with_fallback(Fallback::Index(2))
    .with_grid(5)
    .unwrap();
    let text = "shards = 4\ntune_epsilon = 0.5\nu0 = 0.1\ngranularity = 0.05\nu_max = 0.9\n\
                composition = \"advanced\"\ndelta_prime = 1e-7\nfallback = 2\ngrid = 5";
    assert_eq!(
        ProposeTestDoubling::from_params(&table(text)).unwrap(),
        typed
    );
    assert_eq!(tuner("propose-test", text).params(), Tuner::params(&typed));
    let typed = DpGibo::new(1.0, 25, 3.0)
        .unwrap()
        .with_adaptive_batch(0.5, Some(12))
        .unwrap()
        .with_rbf(vec![0.3, 0.4], 2.0)
        .unwrap()
        .with_history(History::Closest(5))
        .with_step_rule(StepRule::Sgd { eta: 0.2 })
        .with_theta0(vec![0.5, 0.5]);
    let text = "mu = 1\nsteps = 25\nclip = 3\neps_bias = 0.5\nb_max = 12\nlengthscale = [0.3, 0.4]\n\
                signal_variance = 2\nhistory = 5\nstep_rule = \"sgd\"\neta = 0.2\ntheta0 = [0.5, 0.5]";
    assert_eq!(DpGibo::from_params(&table(text)).unwrap(), typed);
    assert_eq!(tuner("dp-gibo", text).params(), Tuner::params(&typed));
    assert!(DpGibo::new(1.0, 25, 3.0)
        .unwrap()
        .with_fixed_batch(2001)
        .is_err());
    assert!(DpGibo::new(1.0, 25, 3.0)
        .unwrap()
        .with_rbf(vec![0.0], 1.0)
        .is_err());
    let typed = DpGd::new(f64::INFINITY, 7, 0.5).unwrap();
    let text = "mu = \"inf\"\nsteps = 7\nclip = 0.5";
    assert_eq!(DpGd::from_params(&table(text)).unwrap(), typed);
    assert_eq!(tuner("dp-gd", text).params(), Tuner::params(&typed));
    assert!(DpGd::new(0.0, 7, 0.5).is_err());
    assert!(DpGd::new(1.0, 7, -0.5).is_err());
    let typed = LipschitzGain::new(12, 0.5)
        .unwrap()
        .with_lengthscale(0.3)
        .unwrap();
    let text = "evaluations = 12\nepsilon = 0.5\nlengthscale = 0.3";
    assert_eq!(
        tuner("lipschitz-gain", text).params(),
        Tuner::params(&typed)
    );
    assert!(LipschitzGain::new(12, 0.5)
        .unwrap()
        .with_beta(-1.0)
        .is_err());
}
