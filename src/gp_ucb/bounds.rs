//! Constants and bounds of private GP-UCB (Kusner et al. 2015; spec 002 §1.4, §1.5, §2, §4.3).
//!
//! Everything here is a pure function of public parameters: no randomness, no data, no GP
//! posterior. The tuner (`super`) runs GP-UCB and the release mechanisms draw the noise; this
//! module says how much noise, and what the theorems promise about the result.
//!
//! * [`GpUcbConfig`]: (N, T, ε, δ, ρ, σ, profile) with a validating constructor, and the
//!   shared constants of spec 002 §2 (β_t, c, q, C1, Ω_T/T, Δ_λ, Δ_v), the Laplace scale of
//!   Algorithm 1, Algorithm 2's constants (c2, Ω2, noise-free scale), and the utility bounds of
//!   Theorems 2, 4 and 6.
//! * [`lipschitz_delta_f`], [`thm8_bound`]: Algorithm 3 (no GP assumption, pure ε-DP).
//! * [`greedy_gamma_bound`], [`greedy_gamma_bound_matrix`]: a data-independent upper bound on
//!   the maximum information gain γ_T (spec 002 §4.3).
//!
//! All logarithms are natural (the paper follows Srinivas et al. 2010). Numbers are computed in
//! plain f64 with no deliberate rounding; sums under logarithms are formed in log space so that
//! extreme δ or T cannot overflow. Rounding *up* for display is the printer's job.
//!
//! Algorithms 1 and 2 are (ε, δ)-DP only under the GP prior assumption (spec 002 P1): their
//! "sensitivities" hold with probability ≥ 1 − δ over the prior and the observation noise.

use crate::error::{fmt_num, Error, Range, Result};
use std::f64::consts::{E, PI};

/// Which constants to use (spec 002 §4.1 and P3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum Profile {
    /// The paper's constants exactly (spec 002 §2): β_t = 2 ln(N t² π²/(3δ)),
    /// c = 2 sqrt((1 − ρ) ln(3N/δ)), q = σ sqrt(8 ln(3/δ)). The default.
    #[default]
    Paper,
    /// **[ext]** (spec 002 P3): δ split four ways, with a union bound over all 2T noise draws:
    /// β_t = 2 ln(2N t² π²/(3δ)), c = 2 sqrt((1 − ρ) ln(4N/δ)), q = σ sqrt(8 ln(8T/δ)).
    /// Everything else (C1, c2, Ω2, the first term of Theorem 4) is as in the paper. Outputs made
    /// with this profile must be labelled as an extension.
    Strict,
}

impl Profile {
    /// The profile's name in experiment files and result columns: `paper` or `strict`.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Paper => "paper",
            Profile::Strict => "strict",
        }
    }

    /// Parses `paper` or `strict` (as written by [`Profile::name`]).
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "paper" => Ok(Profile::Paper),
            "strict" => Ok(Profile::Strict),
            other => Err(Error::invalid("profile", other, "paper or strict")),
        }
    }
}

/// 1 − 1/e, the greedy approximation ratio for monotone submodular maximisation (Nemhauser).
const GREEDY_RATIO: f64 = 1.0 - 1.0 / E;

/// The public parameters of private GP-UCB (spec 002 §2), validated.
///
/// * `n`: grid size N = |Λ| ≥ 1 (Assumption 1 needs a finite Λ; P7);
/// * `t`: budget T ≥ 1 (number of GP-UCB evaluations);
/// * `epsilon` > 0, `delta` ∈ (0, 1): the privacy parameters of *one* release;
/// * `rho` = k1(V, V′) ∈ [0, 1], the set-kernel correlation of neighbouring datasets (§1.2);
/// * `sigma` ≥ 0: observation noise standard deviation (σ = 0 is the noise-free setting of
///   Algorithm 2, where C1, Ω_T and Δ_v are undefined);
/// * `profile`: [`Profile::Paper`] (default) or [`Profile::Strict`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpUcbConfig {
    n: usize,
    t: u64,
    epsilon: f64,
    delta: f64,
    rho: f64,
    sigma: f64,
    profile: Profile,
}

impl GpUcbConfig {
    /// Validates every parameter; an error names the first bad one and its allowed range.
    pub fn new(
        n: usize,
        t: u64,
        epsilon: f64,
        delta: f64,
        rho: f64,
        sigma: f64,
        profile: Profile,
    ) -> Result<Self> {
        if n == 0 {
            return Err(Error::invalid("n", n, "an integer >= 1 (the grid size N)"));
        }
        if t == 0 {
            return Err(Error::invalid("t", t, "an integer >= 1 (the budget T)"));
        }
        Range::Positive.check("epsilon", epsilon)?;
        Range::OpenUnit.check("delta", delta)?;
        if !(0.0..=1.0).contains(&rho) {
            return Err(Error::invalid("rho", fmt_num(rho), "a number in [0, 1]"));
        }
        Range::NonNegative.check("sigma", sigma)?;
        Ok(GpUcbConfig {
            n,
            t,
            epsilon,
            delta,
            rho,
            sigma,
            profile,
        })
    }

    /// Grid size N.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Budget T.
    pub fn t(&self) -> u64 {
        self.t
    }

    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    pub fn delta(&self) -> f64 {
        self.delta
    }

    pub fn rho(&self) -> f64 {
        self.rho
    }

    pub fn sigma(&self) -> f64 {
        self.sigma
    }

    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// ln N.
    fn ln_n(&self) -> f64 {
        libm::log(self.n as f64)
    }

    /// β at a real-valued step (t ≥ 1 assumed), in log space:
    /// 2 [ln k + ln N + 2 ln t + 2 ln π − ln 3 − ln δ], k = 1 (Paper) or 2 (Strict).
    fn beta_at(&self, t: f64) -> f64 {
        let ln_k = match self.profile {
            Profile::Paper => 0.0,
            Profile::Strict => libm::log(2f64),
        };
        2.0 * (ln_k + self.ln_n() + 2.0 * libm::log(t) + 2.0 * libm::log(PI)
            - libm::log(3f64)
            - libm::log(self.delta))
    }

    /// β_t = 2 ln(N t² π² / (3δ)), the GP-UCB width at step t ≥ 1 (spec 002 §1.4; Srinivas et
    /// al.'s finite-domain schedule with δ/2). Strict (P3): β_t = 2 ln(2N t² π² / (3δ)).
    /// Errors when t = 0.
    pub fn beta(&self, t: u64) -> Result<f64> {
        if t == 0 {
            return Err(Error::invalid("t", t, "an integer >= 1 (a GP-UCB step)"));
        }
        Ok(self.beta_at(t as f64))
    }

    /// β_T, the width in the regret term Ω_T (Theorem 3; spec 002 P4).
    pub fn beta_budget(&self) -> f64 {
        self.beta_at(self.t as f64)
    }

    /// β_{T+1}, the width that pairs with the final posterior mean μ_T (Theorem 1; P4).
    pub fn beta_after_budget(&self) -> f64 {
        self.beta_at(self.t as f64 + 1.0)
    }

    /// c = 2 sqrt((1 − ρ) ln(3N/δ)) = σ1 sqrt(2 ln(3N/δ)), σ1 = sqrt(2(1 − ρ)): with probability
    /// ≥ 1 − δ/3, sup_λ |f_V(λ) − f_V′(λ)| ≤ c (proof of Theorem 1; spec 002 §2, P11).
    /// Strict (P3): c = 2 sqrt((1 − ρ) ln(4N/δ)).
    pub fn c(&self) -> f64 {
        let k: f64 = match self.profile {
            Profile::Paper => 3.0,
            Profile::Strict => 4.0,
        };
        2.0 * ((1.0 - self.rho) * (libm::log(k) + self.ln_n() - libm::log(self.delta))).sqrt()
    }

    /// q = σ sqrt(8 ln(3/δ)), the bound on 2·|noise at the argmax| (proof of Theorem 3; spec
    /// 002 §2). Strict (P3), a union bound over all 2T noise draws: q = σ sqrt(8 ln(8T/δ)).
    pub fn q(&self) -> f64 {
        let ln_arg = match self.profile {
            Profile::Paper => libm::log(3f64) - libm::log(self.delta),
            Profile::Strict => libm::log(8.0 * self.t as f64) - libm::log(self.delta),
        };
        self.sigma * (8.0 * ln_arg).sqrt()
    }

    /// C1 = 8 / ln(1 + σ^{-2}), Srinivas et al.'s regret constant (spec 002 §1.4). Errors when
    /// σ = 0 (noise-free: use Algorithm 2's constants instead).
    pub fn c1(&self) -> Result<f64> {
        if self.sigma == 0.0 {
            return Err(Error::invalid(
                "sigma",
                0,
                "a finite number > 0 for C1, Ω_T and Δ_v (noise-free runs use Algorithm 2)",
            ));
        }
        Ok(8.0 / libm::log1p(self.sigma.powi(-2)))
    }

    /// Ω_T / T = sqrt(C1 β_T γ_T / T), the average-regret bound (Srinivas Thm 1; spec 002 §1.4,
    /// §2). `gamma_t` is the maximum information gain γ_T (or a data-independent upper bound
    /// on it, e.g. [`greedy_gamma_bound`]), a finite number ≥ 0. Errors when σ = 0.
    pub fn omega_over_t(&self, gamma_t: f64) -> Result<f64> {
        Range::NonNegative.check("gamma_t", gamma_t)?;
        let c1 = self.c1()?;
        Ok((c1 * self.beta_budget() * gamma_t / self.t as f64).sqrt())
    }

    /// Δ_λ = 2 sqrt(β_{T+1}) + c, the high-probability sensitivity of μ_T (Theorem 1): the
    /// exponential mechanism's Δ in Algorithm 1 (a) and, with the same value, in the
    /// noise-free case (spec 002 §2.2).
    pub fn delta_lambda(&self) -> f64 {
        2.0 * self.beta_after_budget().sqrt() + self.c()
    }

    /// Δ_v = Ω_T/T + c + q, the high-probability sensitivity of max_t v_t (Theorem 3).
    /// Errors when σ = 0 or `gamma_t` is not a finite number ≥ 0.
    pub fn delta_v(&self, gamma_t: f64) -> Result<f64> {
        Ok(self.omega_over_t(gamma_t)? + self.c() + self.q())
    }

    /// The Laplace scale of ṽ in Algorithm 1 (b): Δ_v / ε = (Ω_T/T + c + q)/ε (Corollary 2).
    pub fn laplace_scale_v(&self, gamma_t: f64) -> Result<f64> {
        Ok(self.delta_v(gamma_t)? / self.epsilon)
    }

    /// Theorem 2 (utility of λ̃): with probability ≥ 1 − (δ + e^{−a}),
    /// max_λ μ_T(λ) − μ_T(λ̃) ≤ (2Δ_λ/ε)(ln N + a). Relative to max μ_T, not f(λ*).
    /// `a` > 0 (a = ln 20 is a 5% tail).
    pub fn thm2_bound(&self, a: f64) -> Result<f64> {
        Range::Positive.check("a", a)?;
        Ok(2.0 * self.delta_lambda() / self.epsilon * (self.ln_n() + a))
    }

    /// Theorem 4 (utility of ṽ): with probability ≥ 1 − (δ + e^{−a}),
    /// |ṽ − f(λ*)| ≤ σ sqrt(8 ln(1/δ)) + Ω_T/T + a·Δ_v/ε. The first term uses ln(1/δ), not
    /// ln(3/δ) (a one-sided tail at δ/2 in the paper's proof; P11), in both profiles.
    pub fn thm4_bound(&self, gamma_t: f64, a: f64) -> Result<f64> {
        Range::Positive.check("a", a)?;
        let omega = self.omega_over_t(gamma_t)?;
        let noise = self.sigma * (-8.0 * libm::log(self.delta)).sqrt();
        Ok(noise + omega + a * self.laplace_scale_v(gamma_t)?)
    }

    /// c2 = 2 sqrt((1 − ρ) ln(2N/δ)), Algorithm 2's bound on |f − f′| (Theorem 5; note 2N, not
    /// 3N; P11). The same in both profiles.
    pub fn c2(&self) -> f64 {
        2.0 * ((1.0 - self.rho) * (libm::log(2f64) + self.ln_n() - libm::log(self.delta))).sqrt()
    }

    /// Ω2 = A · exp(−τ T / (ln T)^{d/4}), de Freitas, Smola & Zoghi (2012)'s simple-regret bound
    /// used by Algorithm 2 (spec 002 §2.2). `a_const` = A > 0 and `tau` = τ > 0 come from that
    /// paper and cannot be validated (P9); `d` = dim Λ ≥ 1. Errors when T < 2 (ln 1 = 0; P9).
    pub fn omega2(&self, a_const: f64, tau: f64, d: usize) -> Result<f64> {
        Range::Positive.check("a_const", a_const)?;
        Range::Positive.check("tau", tau)?;
        if d == 0 {
            return Err(Error::invalid(
                "d",
                d,
                "an integer >= 1 (the dimension of Λ)",
            ));
        }
        if self.t < 2 {
            return Err(Error::invalid(
                "t",
                self.t,
                "an integer >= 2 for Algorithm 2 (Ω2 is undefined at T = 1, ln 1 = 0)",
            ));
        }
        let t = self.t as f64;
        let exponent = -tau * t / libm::pow(libm::log(t), d as f64 / 4.0);
        Ok(a_const * libm::exp(exponent))
    }

    /// The Laplace scale of f̃ in Algorithm 2: (Ω2 + c2)/ε (Theorem 5, Corollary 3).
    pub fn noise_free_scale(&self, a_const: f64, tau: f64, d: usize) -> Result<f64> {
        Ok((self.omega2(a_const, tau, d)? + self.c2()) / self.epsilon)
    }

    /// Theorem 6 (utility of f̃): with probability ≥ 1 − (δ + e^{−a}),
    /// |f̃ − f(λ*)| ≤ Ω2 + a(Ω2 + c2)/ε.
    pub fn thm6_bound(&self, a_const: f64, tau: f64, d: usize, a: f64) -> Result<f64> {
        Range::Positive.check("a", a)?;
        let omega2 = self.omega2(a_const, tau, d)?;
        Ok(omega2 + a * self.noise_free_scale(a_const, tau, d)?)
    }
}

/// Algorithm 3's sensitivity (Theorem 7, Definition 5; spec 002 §2.3):
/// Δ_f = min{g*/m, L/(m λ_min)} + L(λ_max − λ_min)/(λ_max λ_min).
///
/// `g_star` = g* > 0 bounds the validation loss g ∈ [0, g*]; `l` = L > 0 is g's Lipschitz
/// constant in w; `m_val` = m = |V| ≥ 1 (the paper's m, not its n); the L2 regularisation λ lies
/// in [λ_min, λ_max] with 0 < λ_min ≤ λ_max < ∞. Holds for every pair of neighbours (no GP
/// assumption), so the Laplace release with scale Δ_f/ε is pure ε-DP (Corollary 4). Vacuous for
/// small λ_min (P6); clamping to g* is not done here.
pub fn lipschitz_delta_f(
    g_star: f64,
    l: f64,
    m_val: usize,
    lambda_min: f64,
    lambda_max: f64,
) -> Result<f64> {
    Range::Positive.check("g_star", g_star)?;
    Range::Positive.check("l", l)?;
    if m_val == 0 {
        return Err(Error::invalid(
            "m_val",
            m_val,
            "an integer >= 1 (the validation set size m)",
        ));
    }
    Range::Positive.check("lambda_min", lambda_min)?;
    if !(lambda_max.is_finite() && lambda_max >= lambda_min) {
        return Err(Error::invalid(
            "lambda_max",
            fmt_num(lambda_max),
            format!("a finite number >= lambda_min = {}", fmt_num(lambda_min)),
        ));
    }
    let m = m_val as f64;
    let fixed = (g_star / m).min(l / (m * lambda_min));
    // 1/λ_min − 1/λ_max, the largest ‖w_λ − w_λ′‖ (strong convexity).
    let path = l * (lambda_max - lambda_min) / (lambda_max * lambda_min);
    Ok(fixed + path)
}

/// Theorem 8 (utility of f̃_L): with probability ≥ 1 − e^{−a}, |f̃_L − f_BO| ≤ a·Δ_f/ε, with
/// Δ_f from [`lipschitz_delta_f`]. Needs Δ_f ≥ 0 finite, ε > 0, a > 0.
pub fn thm8_bound(delta_f: f64, epsilon: f64, a: f64) -> Result<f64> {
    Range::NonNegative.check("delta_f", delta_f)?;
    Range::Positive.check("epsilon", epsilon)?;
    Range::Positive.check("a", a)?;
    Ok(a * delta_f / epsilon)
}

/// The Laplace mechanism's scale Δ/ε (spec 002 §1.5): P[|Z| ≤ a·b] = 1 − e^{−a}.
/// For Algorithm 3 pass Δ_f (Corollary 4).
pub fn laplace_scale(sensitivity: f64, epsilon: f64) -> Result<f64> {
    Range::NonNegative.check("sensitivity", sensitivity)?;
    Range::Positive.check("epsilon", epsilon)?;
    Ok(sensitivity / epsilon)
}

/// The greedy information gain on a finite grid and the γ_T bound it implies (spec 002 §4.3).
///
/// Greedy maximum-variance selection: at step t = 1..T pick x_t = argmax_x σ²_{t−1}(x) (ties →
/// lowest index), where σ²_{t−1} is the GP posterior variance after noisy observations (noise
/// variance σ²) at x_1..x_{t−1}; I_g = ½ Σ_t ln(1 + σ^{-2} σ²_{t−1}(x_t)). The information gain
/// is monotone submodular, so greedy reaches at least (1 − 1/e) of the optimum (Nemhauser et
/// al. 1978) and γ_T ≤ I_g / (1 − 1/e). Uses only the kernel, grid, σ² and T, never data, so the
/// bound is public.
///
/// Returns `(I_g, I_g / (1 − 1/e))`.
///
/// `kernel(i, j)` is the prior covariance k2 between grid points i and j (i, j < `n`; symmetric,
/// positive semi-definite; unit diagonal under Assumption 1 but not required here). The posterior
/// variance is updated by rank-one downdates, k_t(x, y) = k_{t−1}(x, y) − u_t(x) u_t(y) with
/// u_t = k_{t−1}(·, x_t) / sqrt(σ²_{t−1}(x_t) + σ²) (the columns of an incremental Cholesky
/// factor): O(T·N·T) time, O(T·N) memory, T·N kernel calls. Variances are clamped ≥ 0. A point
/// may be picked more than once (T > N is allowed).
///
/// Errors: n = 0, t = 0, `noise_var` not finite and > 0, or a non-finite kernel value.
pub fn greedy_gamma_bound(
    n: usize,
    kernel: impl Fn(usize, usize) -> f64,
    noise_var: f64,
    t: u64,
) -> Result<(f64, f64)> {
    let (gains, _) = greedy_selection(n, kernel, noise_var, t)?;
    let gain = gains.last().copied().unwrap_or(0.0);
    Ok((gain, gain / GREEDY_RATIO))
}

/// [`greedy_gamma_bound`] for every budget 1..=`t` at once (greedy choices do not depend on
/// T, so the bound for T is a prefix sum): element T−1 is the γ_T bound.
pub fn greedy_gamma_bounds(
    n: usize,
    kernel: impl Fn(usize, usize) -> f64,
    noise_var: f64,
    t: u64,
) -> Result<Vec<f64>> {
    let (gains, _) = greedy_selection(n, kernel, noise_var, t)?;
    Ok(gains.into_iter().map(|g| g / GREEDY_RATIO).collect())
}

/// [`greedy_gamma_bound`] on an explicit N × N kernel matrix, `k[i][j]` = k2(x_i, x_j).
/// Errors when the matrix is empty or not square.
pub fn greedy_gamma_bound_matrix(k: &[Vec<f64>], noise_var: f64, t: u64) -> Result<(f64, f64)> {
    let n = k.len();
    if let Some((i, row)) = k.iter().enumerate().find(|(_, row)| row.len() != n) {
        return Err(Error::invalid(
            "kernel",
            format!("row {i} of length {} in a {n}-row matrix", row.len()),
            "a square N x N matrix of kernel values",
        ));
    }
    greedy_gamma_bound(n, |i, j| k[i][j], noise_var, t)
}

/// The greedy loop behind [`greedy_gamma_bound`]: (I_g after each step, the chosen indices in
/// order).
fn greedy_selection(
    n: usize,
    kernel: impl Fn(usize, usize) -> f64,
    noise_var: f64,
    t: u64,
) -> Result<(Vec<f64>, Vec<usize>)> {
    if n == 0 {
        return Err(Error::invalid("n", n, "an integer >= 1 (the grid size N)"));
    }
    if t == 0 {
        return Err(Error::invalid("t", t, "an integer >= 1 (the budget T)"));
    }
    Range::Positive.check("noise_var", noise_var)?;
    let k = |i: usize, j: usize| -> Result<f64> {
        let v = kernel(i, j);
        if v.is_finite() {
            Ok(v)
        } else {
            Err(Error::invalid(
                "kernel",
                format!("k({i}, {j}) = {v}"),
                "finite kernel values",
            ))
        }
    };
    let mut var = (0..n)
        .map(|i| k(i, i).map(|v| v.max(0.0)))
        .collect::<Result<Vec<f64>>>()?;
    let steps = usize::try_from(t).unwrap_or(usize::MAX);
    // u_j for each past step j, each a column over the grid.
    let mut columns: Vec<Vec<f64>> = Vec::with_capacity(steps.min(1 << 16));
    let mut chosen = Vec::with_capacity(steps.min(1 << 16));
    let mut gain = 0.0;
    let mut gains = Vec::with_capacity(steps.min(1 << 16));
    for _ in 0..steps {
        // argmax of the posterior variance, ties to the lowest index (strict comparison).
        let mut best = 0;
        for (x, &v) in var.iter().enumerate().skip(1) {
            if v > var[best] {
                best = x;
            }
        }
        let v_best = var[best];
        gain += 0.5 * libm::log1p(v_best / noise_var);
        gains.push(gain);
        chosen.push(best);
        // u(x) = (k(x, b) − Σ_j u_j(x) u_j(b)) / sqrt(σ²_{t−1}(b) + σ²).
        let mut u = (0..n).map(|x| k(x, best)).collect::<Result<Vec<f64>>>()?;
        for col in &columns {
            let w = col[best];
            if w != 0.0 {
                for (ux, cx) in u.iter_mut().zip(col) {
                    *ux -= cx * w;
                }
            }
        }
        let scale = (v_best + noise_var).sqrt();
        for ux in u.iter_mut() {
            *ux /= scale;
        }
        for (vx, ux) in var.iter_mut().zip(&u) {
            *vx = (*vx - ux * ux).max(0.0);
        }
        columns.push(u);
    }
    Ok((gains, chosen))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounting::exponential::exp_mech_log_weights;

    /// |got − want| ≤ tol·|want|, with a message naming the quantity.
    fn close(name: &str, got: f64, want: f64, tol: f64) {
        assert!(
            (got - want).abs() <= tol * want.abs(),
            "{name}: got {got}, want {want} (relative tolerance {tol})"
        );
    }

    fn config_a(profile: Profile) -> GpUcbConfig {
        GpUcbConfig::new(100, 50, 1.0, 0.05, 0.99, 0.1, profile).unwrap()
    }

    fn config_b() -> GpUcbConfig {
        GpUcbConfig::new(1000, 100, 0.5, 0.01, 0.999, 0.05, Profile::Paper).unwrap()
    }

    fn a20() -> f64 {
        libm::log(20f64)
    }

    /// The parameter name of an InvalidParameter error.
    fn bad_name<T: std::fmt::Debug>(r: Result<T>) -> &'static str {
        match r {
            Err(Error::InvalidParameter { name, .. }) => name,
            other => panic!("expected an invalid-parameter error, got {other:?}"),
        }
    }

    #[test]
    fn config_a_matches_spec_002_section_4_4() {
        let c = config_a(Profile::Paper);
        let tol = 1e-6;
        close("beta_1", c.beta(1).unwrap(), 17.583500, tol);
        close("beta_50", c.beta(50).unwrap(), 33.231592, tol);
        close("beta_51", c.beta(51).unwrap(), 33.310802, tol);
        close("beta_T", c.beta_budget(), 33.231592, tol);
        close("beta_T+1", c.beta_after_budget(), 33.310802, tol);
        close("c", c.c(), 0.589899, tol);
        close("delta_lambda", c.delta_lambda(), 12.133001, tol);
        close("q", c.q(), 0.572318, tol);
        close("C1", c.c1().unwrap(), 1.733433, tol);
        close("omega/T", c.omega_over_t(10.0).unwrap(), 3.394252, tol);
        close(
            "laplace scale",
            c.laplace_scale_v(10.0).unwrap(),
            4.556468,
            tol,
        );
        close("delta_v", c.delta_v(10.0).unwrap(), 4.556468, tol); // ε = 1
        close("thm4", c.thm4_bound(10.0, a20()).unwrap(), 17.533760, tol);
        close("thm2", c.thm2_bound(a20()).unwrap(), 184.443515, tol);
        close("c2", c.c2(), 0.575988, tol);
        close("omega2", c.omega2(1.0, 0.5, 1).unwrap(), 1.904941e-08, tol);
        close(
            "noise-free scale",
            c.noise_free_scale(1.0, 0.5, 1).unwrap(),
            0.575988,
            tol,
        );
        // Not in the spec; recomputed independently (python3, math only):
        // Ω2 + ln 20 · (Ω2 + c2)/ε.
        close(
            "thm6",
            c.thm6_bound(1.0, 0.5, 1, a20()).unwrap(),
            1.7255054213939223,
            1e-9,
        );
        // γ_T from the greedy bound.
        close(
            "omega/T (greedy)",
            c.omega_over_t(51.504524).unwrap(),
            7.703121,
            tol,
        );
        close(
            "laplace (greedy)",
            c.laplace_scale_v(51.504524).unwrap(),
            8.865338,
            tol,
        );
    }

    #[test]
    fn config_b_matches_spec_002_section_4_4() {
        let c = config_b();
        let tol = 1e-6;
        close("beta_100", c.beta(100).unwrap(), 43.828227, tol);
        close("beta_101", c.beta(101).unwrap(), 43.868028, tol);
        close("c", c.c(), 0.224602, tol);
        close("delta_lambda", c.delta_lambda(), 13.471191, tol);
        close("q", c.q(), 0.337751, tol);
        close("C1", c.c1().unwrap(), 1.334677, tol);
        close("omega/T", c.omega_over_t(20.0).unwrap(), 3.420424, tol);
        close(
            "laplace scale",
            c.laplace_scale_v(20.0).unwrap(),
            7.965555,
            tol,
        );
    }

    #[test]
    fn strict_profile_matches_spec_002_p3() {
        let c = config_a(Profile::Strict);
        let tol = 1e-6;
        close("beta_50", c.beta(50).unwrap(), 34.617886, tol);
        close("beta_51", c.beta(51).unwrap(), 34.697097, tol);
        close("c", c.c(), 0.599573, tol);
        close("delta_lambda", c.delta_lambda(), 12.380421, tol);
        close("q", c.q(), 0.847924, tol);
        // Unchanged by the profile.
        let p = config_a(Profile::Paper);
        assert_eq!(c.c1().unwrap(), p.c1().unwrap());
        assert_eq!(c.c2(), p.c2());
        // Strict is never smaller than the paper's constants.
        assert!(c.delta_lambda() > p.delta_lambda());
        assert!(c.laplace_scale_v(10.0).unwrap() > p.laplace_scale_v(10.0).unwrap());
        assert_eq!(Profile::default(), Profile::Paper);
        for prof in [Profile::Paper, Profile::Strict] {
            assert_eq!(Profile::parse(prof.name()).unwrap(), prof);
        }
        assert_eq!(bad_name(Profile::parse("loose")), "profile");
    }

    #[test]
    fn algorithm_3_matches_spec_002_section_4_4() {
        let d = lipschitz_delta_f(1.0, 1.0, 1000, 0.1, 1.0).unwrap();
        close("delta_f case 1", d, 9.001, 1e-6);
        close("scale case 1", laplace_scale(d, 1.0).unwrap(), 9.001, 1e-6);
        let d = lipschitz_delta_f(1.0, 1.0, 1000, 1e-3, 1.0).unwrap();
        close("delta_f case 2", d, 999.001, 1e-6);
        close(
            "scale case 2",
            laplace_scale(d, 1.0).unwrap(),
            999.001,
            1e-6,
        );
        let d = lipschitz_delta_f(1.0, 0.25, 500, 0.01, 10.0).unwrap();
        close("delta_f case 3", d, 24.977, 1e-6);
        close(
            "scale case 3",
            laplace_scale(d, 0.1).unwrap(),
            249.770,
            1e-6,
        );
        close(
            "thm8",
            thm8_bound(d, 0.1, a20()).unwrap(),
            249.77 * a20(),
            1e-6,
        );
        // The min picks L/(mλ_min) when it is smaller than g*/m.
        let d = lipschitz_delta_f(1.0, 1.0, 100, 10.0, 10.0).unwrap();
        close("delta_f min branch", d, 1e-3, 1e-12);
        assert_eq!(bad_name(lipschitz_delta_f(1.0, 1.0, 0, 0.1, 1.0)), "m_val");
        assert_eq!(
            bad_name(lipschitz_delta_f(1.0, 1.0, 10, 0.0, 1.0)),
            "lambda_min"
        );
        assert_eq!(
            bad_name(lipschitz_delta_f(1.0, 1.0, 10, 1.0, 0.5)),
            "lambda_max"
        );
        assert_eq!(
            bad_name(lipschitz_delta_f(f64::NAN, 1.0, 10, 0.1, 1.0)),
            "g_star"
        );
        assert_eq!(bad_name(lipschitz_delta_f(1.0, -1.0, 10, 0.1, 1.0)), "l");
        assert_eq!(bad_name(thm8_bound(1.0, 0.0, 1.0)), "epsilon");
    }

    #[test]
    fn exponential_mechanism_matches_spec_002_section_4_4() {
        let c = config_a(Profile::Paper);
        let dl = c.delta_lambda();
        let lw = exp_mech_log_weights(&[0.0, 1.0], c.epsilon(), dl).unwrap();
        let p: Vec<f64> = lw.iter().map(|l| libm::exp(*l)).collect();
        close("p0", p[0], 0.489699, 1e-6);
        close("p1", p[1], 0.510301, 1e-6);
        close("ratio", libm::exp(lw[1] - lw[0]), 1.042070834, 1e-9);
        close("sum", p.iter().sum::<f64>(), 1.0, 1e-15);
        // Shift invariance and huge scores.
        let big = exp_mech_log_weights(&[1e300, 1e300 + 1e285], 1.0, dl).unwrap();
        assert!(big.iter().all(|l| l.is_finite()));
        let shifted = exp_mech_log_weights(&[5.0, 6.0], 1.0, dl).unwrap();
        close("shift", shifted[1], lw[1], 1e-12);
        // ε → ∞: the argmax (lowest index among ties gets half); ε → 0: uniform.
        let sharp = exp_mech_log_weights(&[0.3, 0.9, 0.1, 0.9], 1e300, 1e-10).unwrap();
        assert_eq!(sharp[0], f64::NEG_INFINITY);
        assert_eq!(sharp[2], f64::NEG_INFINITY);
        close("argmax tie", libm::exp(sharp[1]), 0.5, 1e-15);
        let flat = exp_mech_log_weights(&[0.3, 0.9, 0.1, 0.9], 1e-300, 1.0).unwrap();
        for l in flat {
            close("uniform", libm::exp(l), 0.25, 1e-12);
        }
        // Scores spanning more than f64's range: no NaN.
        let wide = exp_mech_log_weights(&[-1.5e308, 1.5e308], 1.0, 1.0).unwrap();
        // (−3e308)·ε/(2Δ) = −1.5e308, computed without forming −3e308.
        assert_eq!(wide, vec![-1.5e308, 0.0]);
        // Bad input.
        let err = exp_mech_log_weights(&[0.0, f64::NAN], 1.0, 1.0).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid scores = NaN at index 1: must be finite numbers (one score per candidate)"
        );
        assert_eq!(
            bad_name(exp_mech_log_weights(&[f64::INFINITY], 1.0, 1.0)),
            "scores"
        );
        assert_eq!(bad_name(exp_mech_log_weights(&[], 1.0, 1.0)), "scores");
        assert_eq!(bad_name(exp_mech_log_weights(&[0.0], 0.0, 1.0)), "epsilon");
        assert_eq!(
            bad_name(exp_mech_log_weights(&[0.0], 1.0, f64::NAN)),
            "sensitivity"
        );
    }

    /// 100 equally spaced points on [0, 1], both ends included.
    fn grid_1d() -> Vec<f64> {
        (0..100).map(|i| i as f64 / 99.0).collect()
    }

    fn matrix(xs: &[f64], k: impl Fn(f64) -> f64) -> Vec<Vec<f64>> {
        xs.iter()
            .map(|a| xs.iter().map(|b| k((a - b).abs())).collect())
            .collect()
    }

    fn se(r: f64) -> f64 {
        let l = 0.1;
        libm::exp(-r * r / (2.0 * l * l))
    }

    fn matern52(r: f64) -> f64 {
        let s = 5f64.sqrt() * r / 0.1;
        (1.0 + s + s * s / 3.0) * libm::exp(-s)
    }

    #[test]
    fn greedy_gamma_matches_spec_002_section_4_4() {
        let xs = grid_1d();
        let k_se = matrix(&xs, se);
        let (ig, bound) = greedy_gamma_bound_matrix(&k_se, 0.01, 50).unwrap();
        close("I_g SE (spec)", ig, 32.5571, 1e-3);
        close("bound SE (spec)", bound, 51.5045, 1e-3);
        // Independent reference (python3, math only, same rank-one downdates in pure Python).
        close("I_g SE (reference)", ig, 32.55706844573633, 1e-9);
        close("bound SE (reference)", bound, 51.50452392510522, 1e-9);
        close("ratio", bound * (1.0 - libm::exp(-1f64)), ig, 1e-14);

        let k_m = matrix(&xs, matern52);
        let (ig, bound) = greedy_gamma_bound_matrix(&k_m, 0.01, 50).unwrap();
        close("I_g Matérn (spec)", ig, 44.8289, 1e-3);
        close("I_g Matérn (reference)", ig, 44.82885518401744, 1e-9);
        close("bound Matérn (reference)", bound, 70.91820469673385, 1e-9);

        // The closure form agrees with the matrix form bit for bit.
        let by_closure = greedy_gamma_bound(100, |i, j| se((xs[i] - xs[j]).abs()), 0.01, 50);
        assert_eq!(
            by_closure.unwrap(),
            greedy_gamma_bound_matrix(&k_se, 0.01, 50).unwrap()
        );
    }

    /// Posterior variance at every grid point by a direct solve (Gaussian elimination) on
    /// K_t + σ²I, for checking the rank-one downdates.
    fn direct_variances(k: &[Vec<f64>], picked: &[usize], s2: f64) -> Vec<f64> {
        let t = picked.len();
        (0..k.len())
            .map(|x| {
                let mut a: Vec<Vec<f64>> = (0..t)
                    .map(|i| {
                        let mut row: Vec<f64> = (0..t).map(|j| k[picked[i]][picked[j]]).collect();
                        row[i] += s2;
                        row.push(k[picked[i]][x]);
                        row
                    })
                    .collect();
                for p in 0..t {
                    let pivot = a[p].clone();
                    for row in a.iter_mut().skip(p + 1) {
                        let f = row[p] / pivot[p];
                        for (rc, pc) in row.iter_mut().zip(&pivot).skip(p) {
                            *rc -= f * pc;
                        }
                    }
                }
                let mut sol = vec![0.0; t];
                for p in (0..t).rev() {
                    let s: f64 = (p + 1..t).map(|c| a[p][c] * sol[c]).sum();
                    sol[p] = (a[p][t] - s) / a[p][p];
                }
                let quad: f64 = (0..t).map(|i| k[x][picked[i]] * sol[i]).sum();
                (k[x][x] - quad).max(0.0)
            })
            .collect()
    }

    #[test]
    fn greedy_picks_the_max_variance_point_with_ties_to_the_lowest_index() {
        let xs: Vec<f64> = (0..12).map(|i| i as f64 / 11.0).collect();
        let k = matrix(&xs, |r| libm::exp(-r * r / (2.0 * 0.15 * 0.15)));
        let s2 = 0.05;
        let (gains, picked) = greedy_selection(12, |i, j| k[i][j], s2, 8).unwrap();
        let gain = gains[7];
        // Step 1: every variance is 1, so index 0 wins.
        assert_eq!(picked[0], 0);
        let mut want_gain = 0.0;
        for t in 0..picked.len() {
            let var = direct_variances(&k, &picked[..t], s2);
            let max = var.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            close("picked variance", var[picked[t]], max, 1e-9);
            want_gain += 0.5 * libm::log1p(var[picked[t]] / s2);
            // The bound for every budget is the prefix up to it.
            let bounds = greedy_gamma_bounds(12, |i, j| k[i][j], s2, 8).unwrap();
            close(
                "prefix bound",
                bounds[t],
                want_gain / (1.0 - libm::exp(-1f64)),
                1e-10,
            );
        }
        close("gain", gain, want_gain, 1e-10);
        // T = 1: one point with prior variance 1.
        let (g1, b1) = greedy_gamma_bound(5, |_, _| 1.0, 0.01, 1).unwrap();
        close("T = 1", g1, 0.5 * libm::log(101f64), 1e-14);
        close(
            "T = 1 bound",
            b1,
            0.5 * libm::log(101f64) / (1.0 - libm::exp(-1f64)),
            1e-14,
        );
        // T > N repeats points and stays finite (σ² > 0).
        let (gains, picked) = greedy_selection(3, |i, j| k[i][j], s2, 10).unwrap();
        assert_eq!(picked.len(), 10);
        assert!(gains[9].is_finite() && gains[9] > 0.0);
        // A perfectly correlated kernel: after each pick every variance is the same number, so
        // ties go to index 0 again.
        let (_, picked) = greedy_selection(4, |_, _| 1.0, 0.5, 3).unwrap();
        assert_eq!(picked, vec![0, 0, 0]);
        // Bad input.
        assert_eq!(bad_name(greedy_gamma_bound(0, |_, _| 1.0, 0.01, 5)), "n");
        assert_eq!(bad_name(greedy_gamma_bound(3, |_, _| 1.0, 0.01, 0)), "t");
        assert_eq!(
            bad_name(greedy_gamma_bound(3, |_, _| 1.0, 0.0, 5)),
            "noise_var"
        );
        assert_eq!(
            bad_name(greedy_gamma_bound(3, |_, _| f64::NAN, 0.01, 5)),
            "kernel"
        );
        let ragged = vec![vec![1.0, 0.5], vec![0.5]];
        assert_eq!(
            bad_name(greedy_gamma_bound_matrix(&ragged, 0.01, 5)),
            "kernel"
        );
    }

    #[test]
    fn delta_lambda_is_non_decreasing_in_t_n_and_one_over_delta() {
        let dl = |n: usize, t: u64, delta: f64| {
            GpUcbConfig::new(n, t, 1.0, delta, 0.99, 0.1, Profile::Paper)
                .unwrap()
                .delta_lambda()
        };
        for profile in [Profile::Paper, Profile::Strict] {
            let at = |t| {
                GpUcbConfig::new(100, t, 1.0, 0.05, 0.99, 0.1, profile)
                    .unwrap()
                    .delta_lambda()
            };
            let mut prev = at(1);
            for t in 2..=5000 {
                let next = at(t);
                assert!(
                    next >= prev,
                    "{profile:?}: Δ_λ fell from T = {} to {t}",
                    t - 1
                );
                prev = next;
            }
        }
        let mut prev = dl(1, 50, 0.05);
        for n in 2..=20000 {
            let next = dl(n, 50, 0.05);
            assert!(next >= prev, "Δ_λ fell from N = {} to {n}", n - 1);
            prev = next;
        }
        let mut prev = dl(100, 50, 0.999);
        for k in 1..=300 {
            let delta = 0.999 * 0.9f64.powi(k);
            let next = dl(100, 50, delta);
            assert!(next >= prev, "Δ_λ fell at δ = {delta}");
            prev = next;
        }
    }

    #[test]
    fn omega_over_t_peaks_at_7_then_decreases_strictly() {
        let at = |t: u64| {
            let gamma = libm::log((t as f64) + 1.0).powi(2);
            GpUcbConfig::new(100, t, 1.0, 0.05, 0.99, 0.1, Profile::Paper)
                .unwrap()
                .omega_over_t(gamma)
                .unwrap()
        };
        let values: Vec<f64> = (1..=20000).map(at).collect();
        let peak = values
            .iter()
            .enumerate()
            .fold(0, |best, (i, v)| if *v > values[best] { i } else { best });
        assert_eq!(peak + 1, 7, "Ω/T peaks at T = {}", peak + 1);
        // Not monotone for small T: it rises first.
        assert!(values[0] < values[6]);
        for i in 6..values.len() - 1 {
            assert!(
                values[i + 1] < values[i],
                "Ω/T did not decrease from T = {} to {}",
                i + 1,
                i + 2
            );
        }
    }

    #[test]
    fn invalid_parameters_are_named() {
        let new = |n, t, eps, delta, rho, sigma| {
            GpUcbConfig::new(n, t, eps, delta, rho, sigma, Profile::Paper)
        };
        assert_eq!(bad_name(new(100, 50, 1.0, 0.0, 0.99, 0.1)), "delta");
        assert_eq!(bad_name(new(100, 50, 1.0, 1.0, 0.99, 0.1)), "delta");
        assert_eq!(bad_name(new(100, 50, 1.0, 0.05, 1.5, 0.1)), "rho");
        assert_eq!(bad_name(new(100, 50, 1.0, 0.05, -0.1, 0.1)), "rho");
        assert_eq!(bad_name(new(100, 50, 1.0, 0.05, f64::NAN, 0.1)), "rho");
        assert_eq!(bad_name(new(0, 50, 1.0, 0.05, 0.99, 0.1)), "n");
        assert_eq!(bad_name(new(100, 0, 1.0, 0.05, 0.99, 0.1)), "t");
        assert_eq!(bad_name(new(100, 50, 1.0, 0.05, 0.99, f64::NAN)), "sigma");
        assert_eq!(bad_name(new(100, 50, 1.0, 0.05, 0.99, -1.0)), "sigma");
        assert_eq!(bad_name(new(100, 50, 0.0, 0.05, 0.99, 0.1)), "epsilon");
        assert_eq!(
            bad_name(new(100, 50, f64::INFINITY, 0.05, 0.99, 0.1)),
            "epsilon"
        );
        let msg = new(100, 50, 1.0, 0.05, 1.5, 0.1).unwrap_err().to_string();
        assert_eq!(msg, "invalid rho = 1.5: must be a number in [0, 1]");
        let msg = new(100, 50, 1.0, 0.0, 0.99, 0.1).unwrap_err().to_string();
        assert_eq!(msg, "invalid delta = 0: must be a number in (0, 1)");
        // ρ = 0 and ρ = 1 are allowed; ρ = 1 makes c = c2 = 0.
        let one = new(100, 50, 1.0, 0.05, 1.0, 0.1).unwrap();
        assert_eq!((one.c(), one.c2()), (0.0, 0.0));
        assert!(new(100, 50, 1.0, 0.05, 0.0, 0.1).is_ok());

        // Algorithm 2 at T = 1 (P9) and its other inputs.
        let t1 = new(100, 1, 1.0, 0.05, 0.99, 0.0).unwrap();
        assert_eq!(bad_name(t1.omega2(1.0, 0.5, 1)), "t");
        assert_eq!(bad_name(t1.noise_free_scale(1.0, 0.5, 1)), "t");
        let a = config_a(Profile::Paper);
        assert_eq!(bad_name(a.omega2(0.0, 0.5, 1)), "a_const");
        assert_eq!(bad_name(a.omega2(1.0, f64::NAN, 1)), "tau");
        assert_eq!(bad_name(a.omega2(1.0, 0.5, 0)), "d");
        assert_eq!(bad_name(a.beta(0)), "t");
        assert_eq!(bad_name(a.thm2_bound(-1.0)), "a");
        assert_eq!(bad_name(a.thm4_bound(10.0, f64::NAN)), "a");
        assert_eq!(bad_name(a.omega_over_t(-1.0)), "gamma_t");
        assert_eq!(bad_name(a.omega_over_t(f64::INFINITY)), "gamma_t");

        // σ = 0: C1, Ω_T, Δ_v undefined; Δ_λ, c2 and Algorithm 2 still work.
        let nf = new(100, 50, 1.0, 0.05, 0.99, 0.0).unwrap();
        assert_eq!(bad_name(nf.c1()), "sigma");
        assert_eq!(bad_name(nf.laplace_scale_v(10.0)), "sigma");
        assert_eq!(nf.q(), 0.0);
        assert_eq!(nf.delta_lambda(), a.delta_lambda());
        close(
            "noise-free scale",
            nf.noise_free_scale(1.0, 0.5, 1).unwrap(),
            0.575988,
            1e-6,
        );
    }

    #[test]
    fn extreme_parameters_stay_finite() {
        let c = GpUcbConfig::new(
            usize::MAX,
            u64::MAX,
            1e-300,
            1e-300,
            0.0,
            1e-150,
            Profile::Strict,
        )
        .unwrap();
        assert!(c.beta(u64::MAX).unwrap().is_finite());
        assert!(c.delta_lambda().is_finite() && c.q().is_finite());
        assert!(c.c1().unwrap().is_finite());
        assert!(c.omega2(1.0, 0.5, 3).unwrap() >= 0.0);
    }
}
