//! Tests of the DP-GIBO loop, DP-GD, the noise and the accounting (spec 004 §4.5).

use super::*;
use crate::accounting::convert::gdp_delta;
use crate::rng::{normal, stream};
use ndarray::Array2;

/// Per-user quadratics L_i(θ) = ½ Σ_j a_j (θ_j − c_ij)² (native units) plus N(0, σ²)
/// evaluation noise; the mean loss is minimised at the users' mean centre c̄.
struct Quadratic {
    centres: Array2<f64>,
    curvature: Vec<f64>,
    domain: Vec<(f64, f64)>,
    noise_sd: f64,
}

impl Quadratic {
    fn new(n: usize, d: usize, seed: u64, noise_sd: f64) -> Self {
        let mut rng = stream(seed, &[]);
        Quadratic {
            centres: Array2::from_shape_fn((n, d), |_| 0.5 + 0.3 * normal(&mut rng)),
            curvature: (0..d).map(|j| 1.0 - 0.5 * j as f64 / d as f64).collect(),
            domain: vec![(-2.0, 2.0); d],
            noise_sd,
        }
    }
    fn native(&self, u: &[f64]) -> Vec<f64> {
        u.iter()
            .zip(&self.domain)
            .map(|(u, (lo, hi))| lo + u * (hi - lo))
            .collect()
    }
    fn optimum(&self) -> Array1<f64> {
        self.centres.mean_axis(Axis(0)).unwrap()
    }
    /// F(θ) − F(θ*) for the mean loss.
    fn excess(&self, theta: &[f64]) -> f64 {
        let c = self.optimum();
        theta
            .iter()
            .zip(&c)
            .zip(&self.curvature)
            .map(|((t, c), a)| 0.5 * a * (t - c) * (t - c))
            .sum()
    }
}

impl PerUserLosses for Quadratic {
    fn n_users(&self) -> usize {
        self.centres.nrows()
    }
    fn domain(&self) -> &[(f64, f64)] {
        &self.domain
    }
    fn evaluation_sd(&self) -> f64 {
        self.noise_sd
    }
    fn user_losses(&self, points: &[Hyper], rng: &mut dyn RngCore) -> Result<Array2<f64>> {
        let mut out = Array2::zeros((self.n_users(), points.len()));
        for (m, u) in points.iter().enumerate() {
            let t = self.native(u);
            for (i, c) in self.centres.rows().into_iter().enumerate() {
                let l: f64 = (0..t.len())
                    .map(|j| 0.5 * self.curvature[j] * (t[j] - c[j]).powi(2))
                    .sum();
                out[[i, m]] = l + self.noise_sd * normal(rng);
            }
        }
        Ok(out)
    }
    fn user_gradients(&self, point: &Hyper) -> Option<Array2<f64>> {
        let t = self.native(point);
        let (n, d) = self.centres.dim();
        Some(Array2::from_shape_fn((d, n), |(j, i)| {
            self.curvature[j] * (t[j] - self.centres[[i, j]])
        }))
    }
}

/// The same losses without gradients.
struct NoGradients(Quadratic);

impl PerUserLosses for NoGradients {
    fn n_users(&self) -> usize {
        self.0.n_users()
    }
    fn domain(&self) -> &[(f64, f64)] {
        self.0.domain()
    }
    fn evaluation_sd(&self) -> f64 {
        0.0
    }
    fn user_losses(&self, points: &[Hyper], rng: &mut dyn RngCore) -> Result<Array2<f64>> {
        self.0.user_losses(points, rng)
    }
}

fn close(got: f64, want: f64, rel: f64) -> bool {
    (got - want).abs() <= rel * want.abs()
}

/// Spec 004 §4.5: every noise std s = 2B√T/(nμ) listed there.
#[test]
fn noise_std_values() {
    for (b, t, n, mu, want) in [
        (3.0, 25, 1000, 1.0, 0.03),
        (3.0, 25, 1000, 0.2, 0.15),
        (3.0, 25, 700, 1.0, 0.0428571),
        (1.0, 45, 1000, 0.1, 0.1341641),
        (1.0, 10, 9000, 1.0, 7.027284e-4),
        (0.5, 30, 9000, 0.2, 3.042903e-3),
        (1.0, 150, 50, 0.5, 0.9797959),
        (1.0, 150, 50, 2.0, 0.2449490),
        (1.0, 100, 100, 1.0, 0.2),
    ] {
        let s = noise_std(b, t, n, mu);
        // The listed values are rounded to 6 or 7 significant digits.
        assert!(close(s, want, 2e-6), "({b}, {t}, {n}, {mu}): {s} vs {want}");
    }
    // The ones that are exact.
    assert!(close(noise_std(3.0, 25, 1000, 1.0), 0.03, 1e-12));
    assert!(close(noise_std(3.0, 25, 1000, 0.2), 0.15, 1e-12));
    assert!(close(noise_std(3.0, 25, 700, 1.0), 3.0 / 70.0, 1e-12));
    assert!(close(noise_std(1.0, 100, 100, 1.0), 0.2, 1e-12));
    assert_eq!(noise_std(3.0, 25, 1000, f64::INFINITY), 0.0);
}

/// Spec 004 §4.5: exact GDP ε at δ, δ at ε = 1, and the looser zCDP route.
#[test]
fn gdp_values() {
    for (mu, delta, want) in [
        (0.1, 1e-5, 0.3407),
        (0.2, 1e-5, 0.7255),
        (0.5, 1e-5, 1.9931),
        (1.0, 1e-5, 4.3772),
        (2.0, 1e-5, 9.9973),
        (1.0, 1e-6, 4.8866),
    ] {
        let r = gdp_report(mu, delta).unwrap();
        assert!(
            (r.epsilon - want).abs() < 1e-4,
            "μ={mu} δ={delta}: {}",
            r.epsilon
        );
        assert_eq!(r.rho, mu * mu / 2.0);
        assert!(r.zcdp_epsilon > r.epsilon);
    }
    for (mu, want) in [(0.5, 6.8296e-3), (1.0, 0.126937), (2.0, 0.509862)] {
        let d = gdp_delta(mu, 1.0).unwrap();
        assert!(close(d, want, 1e-4), "μ={mu}: δ(1) = {d}");
    }
    for (mu, want) in [(1.0, 5.2985), (0.2, 0.9797)] {
        let r = gdp_report(mu, 1e-5).unwrap();
        assert!(
            (r.zcdp_epsilon - want).abs() < 1e-4,
            "μ={mu}: {}",
            r.zcdp_epsilon
        );
    }
}

/// T steps whose noise is s = 2B√T/(nμ) for sensitivity 2B/n are each (μ/√T)-GDP, and
/// √(Σ μ_t²) = μ (property over random T, μ, B, n).
#[test]
fn composition_gives_mu() {
    let mut rng = stream(11, &[]);
    for _ in 0..500 {
        let t = rng.random_range(1..2000usize);
        let mu = 0.01 + 10.0 * rng.random::<f64>();
        let b = 0.01 + 5.0 * rng.random::<f64>();
        let n = rng.random_range(1..100_000usize);
        let per_step = (2.0 * b / n as f64) / noise_std(b, t, n, mu);
        assert!(close(per_step, mu / (t as f64).sqrt(), 1e-12));
        let composed = (t as f64 * per_step * per_step).sqrt();
        assert!(close(composed, mu, 1e-12), "T={t} μ={mu}: {composed}");
    }
}

/// The planner's μ meets the target and is the largest that does (to 1e-9).
#[test]
fn mu_for_budget_is_tight_and_safe() {
    for (eps, delta) in [
        (1.0, 1e-5),
        (4.3772, 1e-5),
        (0.1, 1e-6),
        (20.0, 1e-3),
        (0.01, 0.5),
    ] {
        let mu = mu_for_budget(eps, delta).unwrap();
        let got = gdp_report(mu, delta).unwrap().epsilon;
        assert!(got <= eps, "({eps}, {delta}): μ = {mu} gives {got}");
        let above = gdp_report(mu * (1.0 + 1e-9), delta).unwrap().epsilon;
        assert!(
            above > eps - 1e-9 * eps,
            "({eps}, {delta}): μ = {mu} is not the largest"
        );
    }
    // ε = 4.3772 at δ = 1e-5 is μ ≈ 1.
    assert!((mu_for_budget(4.3772, 1e-5).unwrap() - 1.0).abs() < 1e-4);
    assert!(mu_for_budget(0.0, 1e-5).is_err() && mu_for_budget(1.0, 1.0).is_err());
}

/// Replacing one user by an adversarial one moves the clipped mean of the surrogate gradients
/// by at most 2B/n (property over random designs, losses and users).
#[test]
fn one_user_moves_the_clipped_mean_by_at_most_2b_over_n() {
    let mut rng = stream(12, &[]);
    for case in 0..50 {
        let d = rng.random_range(1..6usize);
        let n = rng.random_range(1..40usize);
        let big_n = rng.random_range(1..12usize);
        let clip = 0.1 + 3.0 * rng.random::<f64>();
        let kernel = SurrogateKernel::rbf(vec![0.5 + rng.random::<f64>(); d], 1.0).unwrap();
        let x = Array2::from_shape_fn((big_n, d), |_| normal(&mut rng));
        let theta = Array1::from_shape_fn(d, |_| normal(&mut rng));
        let post = GradientPosterior::new(&kernel, theta.view(), x.view(), 1e-3).unwrap();
        let losses = Array2::from_shape_fn((n, big_n), |_| normal(&mut rng));
        let (g, _) = clipped_mean(post.user_gradients(losses.view()).view(), clip);
        let mut other = losses.clone();
        let i = rng.random_range(0..n);
        let scale = libm::pow(10f64, 6.0 * rng.random::<f64>() - 2.0);
        other.row_mut(i).mapv_inplace(|_| scale * normal(&mut rng));
        let (g2, _) = clipped_mean(post.user_gradients(other.view()).view(), clip);
        let moved = (&g - &g2).mapv(|v| v * v).sum().sqrt();
        let bound = 2.0 * clip / n as f64;
        assert!(
            moved <= bound * (1.0 + 1e-12),
            "case {case}: {moved} > {bound}"
        );
    }
}

#[test]
fn clipping_projects_on_the_ball() {
    let g = ndarray::array![[3.0, 4.0], [0.0, 0.0], [0.3, 0.4]];
    let (mean, frac) = clipped_mean(g.view(), 1.0);
    assert!((mean[0] - (0.6 + 0.3) / 3.0).abs() < 1e-15);
    assert!((mean[1] - (0.8 + 0.4) / 3.0).abs() < 1e-15);
    assert!((frac - 1.0 / 3.0).abs() < 1e-15);
}

/// Lemma A.5: q(15, 25, 0.05) = 22.54295, and max_t ‖w_t‖ exceeds q in at most a fraction δ
/// of 10⁴ draws.
#[test]
fn lemma_a5_noise_bound() {
    let q = noise_norm_bound(15, 25, 0.05);
    assert!((q - 22.54295).abs() < 1e-5, "{q}");
    let mut rng = stream(13, &[]);
    let draws = 10_000;
    let exceed = (0..draws)
        .filter(|_| {
            (0..25).any(|_| {
                (0..15)
                    .map(|_| normal(&mut rng).powi(2))
                    .sum::<f64>()
                    .sqrt()
                    > q
            })
        })
        .count();
    assert!(exceed as f64 <= 0.05 * draws as f64, "{exceed}");
    // The bound is not vacuous: a much smaller radius is exceeded often.
    let small = noise_norm_bound(15, 25, 0.05) / 4.5;
    let mut rng = stream(14, &[]);
    let exceed_small = (0..1000)
        .filter(|_| {
            (0..25).any(|_| {
                (0..15)
                    .map(|_| normal(&mut rng).powi(2))
                    .sum::<f64>()
                    .sqrt()
                    > small
            })
        })
        .count();
    assert!(exceed_small > 500, "{exceed_small}");
}

fn gibo_config(kernel: SurrogateKernel, mu: f64, steps: usize) -> DpGiboConfig {
    let d = kernel.dim();
    let mut cfg = DpGiboConfig::new(mu, steps, 100.0, kernel, 0.0);
    cfg.batch = BatchMode::Fixed { b: d + 1 };
    cfg.step_rule = StepRule::Sgd { eta: 0.5 };
    cfg.points.steps = 300;
    cfg.theta0 = Some(vec![-1.5; d]);
    cfg
}

/// μ = ∞, σ = 0, no clipping in effect: the iterates converge to the optimum of a quadratic
/// mean loss (F_0 − F* ≈ 3), with the polynomial surrogate (exact up to the jitter) and the RBF one
/// (not exact: d + 1 fresh points per step leave a bias floor, which the history lowers).
#[test]
fn non_private_gibo_converges_on_a_quadratic() {
    let d = 2;
    let obj = Quadratic::new(30, d, 1, 0.0);
    let rbf = SurrogateKernel::rbf(vec![1.0; d], 1.0).unwrap();
    let poly = SurrogateKernel::polynomial(d).unwrap();
    for (kernel, history, tol) in [
        (rbf.clone(), History::All, 1e-6),
        (rbf, History::None, 1e-4),
        (poly.clone(), History::All, 1e-12),
        // Nine nearby points: the mean jitter 1e-9 regularises a rank-6 kernel matrix.
        (poly, History::Closest(6), 1e-7),
    ] {
        let mut cfg = gibo_config(kernel.clone(), f64::INFINITY, 30);
        cfg.history = history;
        let mut traces = Vec::new();
        let path = run(&obj, &cfg, &mut stream(2, &[]), &mut |it| {
            traces.push(it.posterior_trace)
        })
        .unwrap();
        let last = path.thetas.last().unwrap();
        let excess = obj.excess(last);
        assert!(
            excess < tol,
            "{} {history:?}: F − F* = {excess} at {last:?} (optimum {})",
            kernel.name(),
            obj.optimum()
        );
        assert_eq!(path.noise_std, 0.0);
        assert_eq!(path.evaluations, 30 * 3);
        assert_eq!(traces.len(), 30);
    }
}

/// Spec 004 §4.5: noiseless, no clipping, μ = ∞, exact gradients, η = 1/L:
/// F_t − F* ≤ (1 − ητ)^t (F_0 − F*).
#[test]
fn gradient_descent_contracts_geometrically() {
    let d = 3;
    let obj = Quadratic::new(20, d, 3, 0.0);
    let (l, tau) = (1.0, obj.curvature[d - 1]);
    let cfg = DpGdConfig {
        mu: f64::INFINITY,
        steps: 40,
        clip: 1e6,
        step_rule: StepRule::Sgd { eta: 1.0 / l },
        theta0: Some(vec![-1.8, 1.9, -0.5]),
    };
    let mut clipped = 0.0;
    let path = run_gd(&obj, &cfg, &mut stream(4, &[]), &mut |it| {
        clipped += it.frac_clipped
    })
    .unwrap();
    assert_eq!(clipped, 0.0);
    let f0 = obj.excess(&path.thetas[0]);
    for (t, theta) in path.thetas.iter().enumerate() {
        let bound = (1.0 - tau / l).powi(t as i32) * f0;
        assert!(obj.excess(theta) <= bound * (1.0 + 1e-12) + 1e-300, "t={t}");
    }
    assert!(obj.excess(path.thetas.last().unwrap()) < 1e-12);
}

/// The runs are reproducible from the caller's stream; θ_0 is shared by runs at different μ,
/// and the released path moves with the noise.
#[test]
fn runs_are_reproducible_and_noise_is_used() {
    let d = 2;
    let obj = Quadratic::new(50, d, 5, 0.01);
    let kernel = SurrogateKernel::rbf(vec![1.0; d], 1.0).unwrap();
    let mut cfg = gibo_config(kernel, 1.0, 4);
    cfg.theta0 = None;
    cfg.clip = 0.5;
    cfg.noise_sd = 0.01;
    cfg.batch = BatchMode::adaptive(0.5, d);
    let go = |cfg: &DpGiboConfig, seed: u64| {
        let mut its = Vec::new();
        let p = run(&obj, cfg, &mut stream(seed, &[]), &mut |it| {
            its.push(it.clone())
        })
        .unwrap();
        (p, its)
    };
    let (a, its) = go(&cfg, 7);
    let (b, _) = go(&cfg, 7);
    assert_eq!(a, b);
    assert!((a.noise_std - 2.0 * 0.5 * 2.0 / 50.0).abs() < 1e-15);
    assert!(its
        .iter()
        .all(|it| it.noise_norm > 0.0 && it.batch_size >= 1));
    let total: usize = its.iter().map(|it| it.batch_size).sum();
    assert_eq!(total as u64, a.evaluations);
    assert_eq!(its.last().unwrap().evaluations, a.evaluations);
    for it in &its {
        assert!(it.frac_clipped >= 0.0 && it.frac_clipped <= 1.0);
        assert!((it.g_norm - it.g.iter().map(|v| v * v).sum::<f64>().sqrt()).abs() < 1e-15);
        assert!(it.g_norm <= cfg.clip * (1.0 + 1e-12));
    }
    let mut private = cfg.clone();
    private.mu = f64::INFINITY;
    let (c, its_c) = go(&private, 7);
    assert_eq!(a.thetas[0], c.thetas[0]);
    assert_ne!(a.thetas[1], c.thetas[1]);
    assert!(its_c.iter().all(|it| it.noise_norm == 0.0));
    let (e, _) = go(&cfg, 8);
    assert_ne!(a.thetas[0], e.thetas[0]);
    // The unit-box output matches the native path.
    let last = a.thetas.last().unwrap();
    for ((u, t), (lo, hi)) in a.final_unit.iter().zip(last).zip(obj.domain()) {
        assert!((lo + u * (hi - lo) - t).abs() < 1e-12);
    }
}

#[test]
fn bad_configurations_and_workloads_are_rejected() {
    let d = 2;
    let obj = Quadratic::new(5, d, 6, 0.0);
    let kernel = SurrogateKernel::rbf(vec![1.0; d], 1.0).unwrap();
    let good = gibo_config(kernel, 1.0, 2);
    let fails = |cfg: DpGiboConfig, field: &str| {
        let e = run(&obj, &cfg, &mut stream(1, &[]), &mut |_| {}).unwrap_err();
        assert!(e.to_string().contains(field), "{field}: {e}");
    };
    fails(
        DpGiboConfig {
            mu: 0.0,
            ..good.clone()
        },
        "mu",
    );
    fails(
        DpGiboConfig {
            mu: f64::NAN,
            ..good.clone()
        },
        "mu",
    );
    fails(
        DpGiboConfig {
            steps: 0,
            ..good.clone()
        },
        "steps",
    );
    fails(
        DpGiboConfig {
            clip: -1.0,
            ..good.clone()
        },
        "clip",
    );
    fails(
        DpGiboConfig {
            theta0: Some(vec![3.0, 0.0]),
            ..good.clone()
        },
        "theta0",
    );
    fails(
        DpGiboConfig {
            kernel: SurrogateKernel::rbf(vec![1.0; 3], 1.0).unwrap(),
            ..good.clone()
        },
        "lengthscale",
    );
    fails(
        DpGiboConfig {
            batch: BatchMode::Fixed { b: 0 },
            ..good.clone()
        },
        "batch",
    );
    let gd = DpGdConfig {
        mu: 1.0,
        steps: 2,
        clip: 1.0,
        step_rule: StepRule::AdaGrad { eta: 0.3 },
        theta0: None,
    };
    let e = run_gd(&NoGradients(obj), &gd, &mut stream(1, &[]), &mut |_| {}).unwrap_err();
    assert!(e.to_string().contains("per-user gradients"), "{e}");
    assert!(StepRule::parse("adam", 0.1).is_err() && StepRule::parse("sgd", 0.0).is_err());
}

#[test]
fn step_rules_and_history() {
    let domain = vec![(-1.0, 1.0); 2];
    let g = ndarray::array![0.3, -0.4];
    let theta = ndarray::array![0.0, 0.0];
    let mut sgd = Stepper::new(StepRule::Sgd { eta: 2.0 }, &[1.0, 1.0]);
    assert_eq!(sgd.step(&theta, &g, &domain), ndarray::array![-0.6, 0.8]);
    let mut ada = Stepper::new(StepRule::AdaGrad { eta: 0.3 }, &[1.0, 1.0]);
    let first = ada.step(&theta, &g, &domain);
    assert!((first[0] + 0.3).abs() < 1e-7 && (first[1] - 0.3).abs() < 1e-7);
    let second = ada.step(&theta, &g, &domain);
    assert!((second[0] + 0.3 / 2f64.sqrt()).abs() < 1e-7);
    let mut norm = Stepper::new(StepRule::GiboNormalized { eta: 0.5 }, &[2.0, 1.0]);
    let s = norm.step(&theta, &g, &domain);
    assert!((s[0] + 0.5 * 2.0 * 0.6).abs() < 1e-12 && (s[1] - 0.5 * 0.8).abs() < 1e-12);
    // Projection on the box.
    let mut big = Stepper::new(StepRule::Sgd { eta: 10.0 }, &[1.0, 1.0]);
    assert_eq!(big.step(&theta, &g, &domain), ndarray::array![-1.0, 1.0]);
    let x = ndarray::array![[0.0, 0.0], [3.0, 0.0], [0.1, 0.0], [0.1, 0.0]];
    let t = ndarray::array![0.2, 0.0];
    assert_eq!(History::Closest(2).select(x.view(), t.view()), vec![2, 3]);
    assert_eq!(
        History::Closest(9).select(x.view(), t.view()),
        vec![2, 3, 0, 1]
    );
    assert_eq!(History::All.select(x.view(), t.view()), vec![0, 1, 2, 3]);
    assert!(History::None.select(x.view(), t.view()).is_empty());
}

/// The gradient check by hand: users' gradients (3, 4) and (0, 1) (d × n columns), B = 1:
/// clipped mean ((0.6, 0.8) + (0, 1))/2 = (0.3, 0.9), mean (1.5, 2.5).
#[test]
fn gradient_check_by_hand() {
    let exact = ndarray::array![[3.0, 0.0], [4.0, 1.0]];
    let g = ndarray::array![0.3, 0.5];
    let c = GradientCheck::of(&g, &exact, 1.0);
    assert!((c.bias_norm - 0.4).abs() < 1e-15);
    assert!((c.clip_bias_norm - (1.2f64.powi(2) + 1.6f64.powi(2)).sqrt()).abs() < 1e-15);
    assert!((c.grad_true_norm - (1.5f64.powi(2) + 2.5f64.powi(2)).sqrt()).abs() < 1e-15);
}

/// Issue 39: a DP-GIBO or DP-GD session saved as JSON after every tell and resumed from the
/// text alone draws what an uninterrupted run draws (the evaluations' noise continues one
/// stream across steps, from the position the state keeps) and releases the same path.
#[test]
fn a_session_resumed_from_json_after_every_tell_releases_the_same_path() {
    use crate::rng::stream_at;
    use crate::session::{Evaluator, Next, Session};
    let obj = Quadratic::new(40, 2, 7, 0.05);
    let kernel = SurrogateKernel::rbf(vec![1.0, 1.0], 1.0).unwrap();
    let mut cfg = DpGiboConfig::new(1.0, 6, 2.0, kernel, 0.05);
    cfg.points.steps = 50;
    let gd = DpGdConfig {
        mu: 1.0,
        steps: 6,
        clip: 2.0,
        step_rule: StepRule::AdaGrad { eta: 0.3 },
        theta0: None,
    };
    let whole = [
        run(&obj, &cfg, &mut stream(3, &[]), &mut |_| {}).unwrap(),
        run_gd(&obj, &gd, &mut stream(3, &[]), &mut |_| {}).unwrap(),
    ];
    let sessions = [
        GiboSession::gibo(cfg, &obj.domain, 40, &mut stream(3, &[])).unwrap(),
        GiboSession::gd(gd, &obj.domain, 40, &mut stream(3, &[])).unwrap(),
    ];
    let evaluator = session::PerUser(&obj);
    for (mut s, whole) in sessions.into_iter().zip(whole) {
        let mut told = 0;
        // The driver's stream is never drawn from after the seed: a fresh one will do.
        while let Next::Run(t) = s.ask(&mut stream(99, &[])).unwrap() {
            let answer = match t.stream {
                Some((seed, tag)) => {
                    let mut own = stream_at(seed, tag, t.position);
                    let a = evaluator.evaluate(&t, &mut own).unwrap();
                    s.stream_left_at(t.index, own.get_word_pos() as u64);
                    a
                }
                None => evaluator.evaluate(&t, &mut stream(99, &[])).unwrap(),
            };
            s.tell(t.index, answer).unwrap();
            told += 1;
            s = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        }
        assert_eq!(told, 6);
        assert_eq!(s.path(), whole);
        let out = s.finish().unwrap();
        assert_eq!(out.chosen, Some(whole.final_unit));
    }
}

/// Told answers of the wrong shape or kind, or out of turn, are errors, never panics, and
/// leave the session as it was.
#[test]
fn a_session_refuses_wrong_answers() {
    use crate::session::{Next, Session, Told};
    let obj = Quadratic::new(5, 2, 7, 0.0);
    let kernel = SurrogateKernel::rbf(vec![1.0, 1.0], 1.0).unwrap();
    let mut cfg = DpGiboConfig::new(1.0, 2, 2.0, kernel, 0.0);
    cfg.points.steps = 20;
    let mut s = GiboSession::gibo(cfg, &obj.domain, 5, &mut stream(3, &[])).unwrap();
    let mut rng = stream(1, &[]);
    assert!(s.finish().is_err());
    let Next::Run(t) = s.ask(&mut rng).unwrap() else {
        panic!("a first step")
    };
    assert_eq!(s.ask(&mut rng).unwrap(), Next::Wait);
    let b = match &t.evaluation {
        crate::session::Evaluation::UserLosses { points } => points.len(),
        other => panic!("{other:?}"),
    };
    for wrong in [
        Told::Score(1.0),
        Told::Matrix(vec![vec![0.0; b]; 4]),
        Told::Matrix(vec![vec![0.0; b + 1]; 5]),
        Told::Matrix(vec![vec![f64::NAN; b]; 5]),
    ] {
        assert!(s.tell(t.index, wrong.clone()).is_err(), "{wrong:?}");
    }
    assert!(s
        .tell(t.index + 1, Told::Matrix(vec![vec![0.0; b]; 5]))
        .is_err());
    s.tell(t.index, Told::Matrix(vec![vec![0.0; b]; 5]))
        .unwrap();
    assert!(matches!(s.ask(&mut rng).unwrap(), Next::Run(_)));
}

/// One user's loss, however large (finite), never aborts a step: a gradient beyond the doubles
/// is replaced by its clipped value (its direction at norm B), and a declared loss range clamps
/// every loss first, so a user told 1e308 moves each step as one told the range's end.
#[test]
fn a_huge_finite_loss_never_aborts_a_step() {
    use crate::session::{Evaluation, Next, Session, Told};
    let obj = Quadratic::new(5, 2, 7, 0.0);
    let kernel = SurrogateKernel::rbf(vec![1.0, 1.0], 1.0).unwrap();
    // The released path when user 0 reports `huge` at every point, the others 0.5.
    let path = |range: Option<(f64, f64)>, huge: f64| -> Result<Vec<Vec<f64>>> {
        let mut cfg = DpGiboConfig::new(1.0, 3, 2.0, kernel.clone(), 0.0);
        cfg.points.steps = 20;
        cfg.loss_range = range;
        let mut s = GiboSession::gibo(cfg, &obj.domain, 5, &mut stream(3, &[]))?;
        let mut rng = stream(1, &[]);
        while let Next::Run(t) = s.ask(&mut rng)? {
            let Evaluation::UserLosses { points } = &t.evaluation else {
                panic!("{:?}", t.evaluation)
            };
            let mut losses = vec![vec![0.5; points.len()]; 5];
            losses[0] = vec![huge; points.len()];
            s.tell(t.index, Told::Matrix(losses))?;
        }
        Ok(s.path().thetas)
    };
    let huge = path(None, 1e308).unwrap();
    assert_eq!(huge.len(), 4, "every step released");
    assert_eq!(
        path(None, 1e300).unwrap(),
        huge,
        "the clipped direction only"
    );
    assert_eq!(
        path(Some((0.0, 10.0)), 1e308).unwrap(),
        path(Some((0.0, 10.0)), 10.0).unwrap()
    );
}
