//! Reproducible randomness: one ChaCha20 stream per (seed, purpose, index), so a result never
//! depends on the thread count, the order cells run in, or how a run is sharded. Normal, gamma
//! and Poisson variates use our own samplers (Box–Muller, Marsaglia–Tsang, inversion and
//! Hörmann's PTRS) so values do not change when a dependency changes its algorithms or tables;
//! `tests/selection_count.rs` pins sampled values.

use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// SplitMix64: mixes structured inputs (seed, index, …) into a well-spread 64-bit value.
pub fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The stream for `seed` and a path of indices (e.g. [cell, repetition, purpose]).
pub fn stream(seed: u64, path: &[u64]) -> ChaCha20Rng {
    let key = path
        .iter()
        .fold(splitmix64(seed), |acc, &p| splitmix64(acc ^ splitmix64(p)));
    ChaCha20Rng::seed_from_u64(key)
}

/// A standard normal variate by Box–Muller (one of the pair; simple and table-free).
pub fn normal<R: RngCore + ?Sized>(rng: &mut R) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>(); // (0, 1]
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// The uniform on [0, 1) that `rng.random::<f64>()` makes of the word `bits`: its 53 high bits
/// times 2⁻⁵³ (pinned by a test against rand's own conversion).
pub fn unit_from_bits(bits: u64) -> f64 {
    (bits >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// [`normal`] from the two words it would draw, in order: lets a caller draw the words
/// sequentially and transform them in parallel, with the same values.
pub fn normal_from_bits(first: u64, second: u64) -> f64 {
    let u1 = 1.0 - unit_from_bits(first);
    let u2 = unit_from_bits(second);
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// A Laplace(0, `scale`) variate by the inverse CDF (spec 002 P8). Floating-point attacks on
/// the Laplace mechanism (Mironov 2012) are out of scope, as in the papers we implement.
pub fn laplace(rng: &mut dyn RngCore, scale: f64) -> f64 {
    // u ∈ (−½, ½): the one value of [−½, ½) with an infinite inverse is moved inwards.
    let u: f64 = (rng.random::<f64>() - 0.5).max(-0.5 + f64::EPSILON);
    -scale * u.signum() * (-2.0 * u.abs()).ln_1p()
}

/// A Gamma(shape, 1) variate by Marsaglia–Tsang (shape < 1 by the boost U^{1/shape}).
pub fn gamma<R: RngCore + ?Sized>(rng: &mut R, shape: f64) -> f64 {
    if shape < 1.0 {
        let u: f64 = 1.0 - rng.random::<f64>();
        return gamma(rng, shape + 1.0) * u.powf(1.0 / shape);
    }
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = normal(rng);
        let v = (1.0 + c * x).powi(3);
        if v <= 0.0 {
            continue;
        }
        let u: f64 = 1.0 - rng.random::<f64>();
        if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
            return d * v;
        }
    }
}

/// Means from which [`poisson`] uses transformed rejection instead of inversion.
const PTRS_FROM: f64 = 10.0;

/// The largest Poisson mean sampled exactly: beyond it `ln Γ(k + 1)` (about k ln k) loses the
/// absolute precision the acceptance test needs, so a normal approximation (relative error of
/// order 1e-6 in the spread) is used instead.
pub const POISSON_EXACT_MAX: f64 = 1e12;

/// A Poisson(`mean`) variate: inversion by sequential search below mean 10; from 10 on,
/// Hörmann's transformed rejection with squeeze (PTRS; W. Hörmann, "The transformed rejection
/// method for generating Poisson random variables", Insurance: Math. and Econ. 12, 1993),
/// which is exact and takes O(1) uniforms at any mean. A mean ≤ 0 (or NaN) gives 0.
pub fn poisson<R: RngCore + ?Sized>(rng: &mut R, mean: f64) -> u64 {
    if mean.is_nan() || mean <= 0.0 {
        return 0;
    }
    if mean < PTRS_FROM {
        // K = the smallest k with u ≤ F(k).
        let u: f64 = rng.random();
        let (mut k, mut p) = (0u64, (-mean).exp());
        let mut c = p;
        while u > c && p > 0.0 {
            k += 1;
            p *= mean / k as f64;
            c += p;
        }
        return k;
    }
    if mean > POISSON_EXACT_MAX {
        return (mean + mean.sqrt() * normal(rng)).round().max(0.0) as u64;
    }
    let sqrt_mean = mean.sqrt();
    let ln_mean = mean.ln();
    let b = 0.931 + 2.53 * sqrt_mean;
    let a = -0.059 + 0.02483 * b;
    let inv_alpha = 1.1239 + 1.1328 / (b - 3.4);
    let v_r = 0.9277 - 3.6224 / (b - 2.0);
    loop {
        let u: f64 = rng.random::<f64>() - 0.5;
        let v: f64 = rng.random();
        let us = 0.5 - u.abs();
        let k = ((2.0 * a / us + b) * u + mean + 0.43).floor();
        // The squeeze: accepted without evaluating the pmf.
        if us >= 0.07 && v <= v_r {
            return k as u64;
        }
        if k < 0.0 || (us < 0.013 && v > us) {
            continue;
        }
        let log_hat = (v * inv_alpha / (a / (us * us) + b)).ln();
        if log_hat <= -mean + k * ln_mean - libm::lgamma(k + 1.0) {
            return k as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_give_the_same_uniforms_and_normals_as_the_samplers() {
        let (mut a, mut b) = (stream(5, &[1]), stream(5, &[1]));
        for _ in 0..20_000 {
            assert_eq!(
                a.random::<f64>().to_bits(),
                unit_from_bits(b.next_u64()).to_bits()
            );
        }
        for _ in 0..20_000 {
            let want = normal(&mut a);
            let (x, y) = (b.next_u64(), b.next_u64());
            assert_eq!(want.to_bits(), normal_from_bits(x, y).to_bits());
        }
        // DP-SGD's noise (drawn as words, transformed in parallel) is one `normal` per
        // coordinate, in order, whatever the thread count.
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut g = vec![1.0; 10_001];
            pool.install(|| crate::accounting::DpSgd::add_noise(&mut g, 0.5, &mut stream(9, &[])));
            let mut r = stream(9, &[]);
            for v in &g {
                assert_eq!(v.to_bits(), (1.0 + 0.5 * normal(&mut r)).to_bits());
            }
        }
    }

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let a: u64 = stream(1, &[2, 3]).next_u64();
        assert_eq!(a, stream(1, &[2, 3]).next_u64());
        assert_ne!(a, stream(1, &[3, 2]).next_u64());
        assert_ne!(a, stream(2, &[2, 3]).next_u64());
    }

    #[test]
    fn samplers_have_the_right_moments() {
        let mut rng = stream(7, &[]);
        let n = 200_000;
        let xs: Vec<f64> = (0..n).map(|_| normal(&mut rng)).collect();
        let m = xs.iter().sum::<f64>() / n as f64;
        let v = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n as f64;
        assert!(m.abs() < 0.01 && (v - 1.0).abs() < 0.01, "normal: {m} {v}");
        for shape in [0.5, 1.5, 4.0] {
            let gs: Vec<f64> = (0..n).map(|_| gamma(&mut rng, shape)).collect();
            let m = gs.iter().sum::<f64>() / n as f64;
            let v = gs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n as f64;
            assert!(
                (m / shape - 1.0).abs() < 0.02 && (v / shape - 1.0).abs() < 0.04,
                "gamma({shape}): {m} {v}"
            );
        }
    }
}
