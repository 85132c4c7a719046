//! Reproducible randomness: one ChaCha20 stream per (seed, purpose, index), so a result never
//! depends on the thread count, the order cells run in, or how a run is sharded. Normal, gamma
//! and Poisson variates use our own samplers (Box–Muller, Marsaglia–Tsang, inversion and
//! Hörmann's PTRS) so values do not change when a dependency changes its algorithms or tables;
//! `tests/suite/selection_count.rs` pins sampled values.

use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::{ChaCha20Rng, ChaCha8Rng};

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
    ChaCha20Rng::seed_from_u64(stream_key(seed, path))
}

/// Like [`stream`], with ChaCha8 (8 rounds, about twice the words per second here and still
/// beyond every statistical test): for bulk draws, DP-SGD's noise.
pub fn bulk_stream(seed: u64, path: &[u64]) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(stream_key(seed, path))
}

fn stream_key(seed: u64, path: &[u64]) -> u64 {
    path.iter()
        .fold(splitmix64(seed), |acc, &p| splitmix64(acc ^ splitmix64(p)))
}

/// A standard normal variate by Box–Muller (one of the pair; simple and table-free).
pub fn normal<R: RngCore + ?Sized>(rng: &mut R) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>(); // (0, 1]
    let u2: f64 = rng.random();
    (-2.0 * libm::log(u1)).sqrt() * libm::cos(std::f64::consts::TAU * u2)
}

/// The uniform on [0, 1) that `rng.random::<f64>()` makes of the word `bits`: its 53 high bits
/// times 2⁻⁵³.
fn unit_from_bits(bits: u64) -> f64 {
    (bits >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Layers of the [`Ziggurat`]: the layer is the low 8 bits of one word.
const ZIGGURAT_LAYERS: usize = 256;
/// The right edge of the base layer for 256 layers (Marsaglia & Tsang 2000).
const ZIGGURAT_R: f64 = 3.654_152_885_361_009;

/// Standard normal variates by Marsaglia & Tsang's ziggurat ("The Ziggurat Method for
/// Generating Random Variables", J. Stat. Softw. 5(8), 2000), with the layer, the sign and the
/// uniform taken from disjoint bits of one word (Doornik 2005's remedy for their dependence).
/// 255 rectangles of equal area v under e^{−x²/2} and a base layer (rectangle plus tail) of
/// area v: a layer is picked uniformly, a point in it uniformly, and it is kept when under the
/// curve. That is exact rejection sampling; about 99% of variates cost one word, a product and
/// a comparison, against a log, a root and a cosine for [`normal`]. DP-SGD's noise uses it.
pub struct Ziggurat {
    /// x[0] = v/f(r) (the base layer's width as a rectangle), x[1] = r > x[2] > … > x[256] = 0.
    x: [f64; ZIGGURAT_LAYERS + 1],
    /// f(x[i]) = e^{−x[i]²/2}.
    f: [f64; ZIGGURAT_LAYERS + 1],
}

/// The tables, computed once.
pub static ZIGGURAT: std::sync::LazyLock<Ziggurat> = std::sync::LazyLock::new(Ziggurat::new);

impl Ziggurat {
    fn new() -> Self {
        let density = |x: f64| libm::exp(-0.5 * x * x);
        let r = ZIGGURAT_R;
        // The common area: the base rectangle plus the tail ∫_r^∞ f = √(π/2)·erfc(r/√2).
        let v = r * density(r)
            + (std::f64::consts::PI / 2.0).sqrt() * libm::erfc(r / std::f64::consts::SQRT_2);
        let mut x = [0.0; ZIGGURAT_LAYERS + 1];
        x[0] = v / density(r);
        x[1] = r;
        for i in 1..ZIGGURAT_LAYERS - 1 {
            // Layer i is [0, x[i]] × [f(x[i]), f(x[i+1])], of area v.
            x[i + 1] = (-2.0 * libm::log(density(x[i]) + v / x[i])).sqrt();
        }
        x[ZIGGURAT_LAYERS] = 0.0;
        let f = x.map(density);
        Ziggurat { x, f }
    }

    /// One standard normal variate.
    #[inline]
    pub fn sample<R: RngCore + ?Sized>(&self, rng: &mut R) -> f64 {
        loop {
            let bits = rng.next_u64();
            let i = (bits as usize) & (ZIGGURAT_LAYERS - 1);
            // Bit 8 becomes the sign bit (no branch: it is a coin flip).
            let sign = (bits >> 8 & 1) << 63;
            // Bits 11..64 (disjoint from the layer's and the sign's).
            let x = unit_from_bits(bits) * self.x[i];
            let magnitude = if x < self.x[i + 1] {
                // Inside the part of the layer that lies wholly under the curve.
                x
            } else if i == 0 {
                self.tail(rng)
            } else {
                // The wedge: a uniform height in the layer, kept when under the curve.
                let y = self.f[i] + rng.random::<f64>() * (self.f[i + 1] - self.f[i]);
                if y >= libm::exp(-0.5 * x * x) {
                    continue;
                }
                x
            };
            return f64::from_bits(magnitude.to_bits() ^ sign);
        }
    }

    /// The normal tail beyond r, by Marsaglia (1964): r + a with a = −ln(U₁)/r, kept when
    /// −2 ln(U₂) > a².
    #[cold]
    fn tail<R: RngCore + ?Sized>(&self, rng: &mut R) -> f64 {
        let r = self.x[1];
        loop {
            let a = -libm::log(1.0 - rng.random::<f64>()) / r;
            let b = -libm::log(1.0 - rng.random::<f64>());
            if b + b > a * a {
                return r + a;
            }
        }
    }
}

/// A Laplace(0, `scale`) variate by the inverse CDF (spec 002 P8). Floating-point attacks on
/// the Laplace mechanism (Mironov 2012) are out of scope, as in the papers we implement.
pub fn laplace(rng: &mut dyn RngCore, scale: f64) -> f64 {
    // u ∈ (−½, ½): the one value of [−½, ½) with an infinite inverse is moved inwards.
    let u: f64 = (rng.random::<f64>() - 0.5).max(-0.5 + f64::EPSILON);
    -scale * u.signum() * libm::log1p(-2.0 * u.abs())
}

/// A Gamma(shape, 1) variate by Marsaglia–Tsang (shape < 1 by the boost U^{1/shape}).
pub fn gamma<R: RngCore + ?Sized>(rng: &mut R, shape: f64) -> f64 {
    if shape < 1.0 {
        let u: f64 = 1.0 - rng.random::<f64>();
        return gamma(rng, shape + 1.0) * libm::pow(u, 1.0 / shape);
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
        if libm::log(u) < 0.5 * x * x + d - d * v + d * libm::log(v) {
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
        let (mut k, mut p) = (0u64, libm::exp(-mean));
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
    let ln_mean = libm::log(mean);
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
        let log_hat = libm::log(v * inv_alpha / (a / (us * us) + b));
        if log_hat <= -mean + k * ln_mean - libm::lgamma(k + 1.0) {
            return k as u64;
        }
    }
}

/// Philox4x32-10 (Salmon, Moraes, Dror and Shaw 2011): a counter-based generator, the bijection
/// of `counter` under `key`. The GPU engine draws DP-SGD noise with it (each coordinate from its
/// own counter, so any thread order gives the same values); this is the host's copy of the
/// device function, checked against the authors' known-answer vectors.
pub fn philox4x32(counter: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let (mut c, mut k) = (counter, key);
    for _ in 0..10 {
        let p0 = u64::from(0xD251_1F53u32) * u64::from(c[0]);
        let p1 = u64::from(0xCD9E_8D57u32) * u64::from(c[2]);
        let (hi0, lo0) = ((p0 >> 32) as u32, p0 as u32);
        let (hi1, lo1) = ((p1 >> 32) as u32, p1 as u32);
        c = [hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0];
        k = [
            k[0].wrapping_add(0x9E37_79B9),
            k[1].wrapping_add(0xBB67_AE85),
        ];
    }
    c
}

/// Coordinate `j`'s standard normal under `key`, as the GPU engine draws it: Box–Muller on two
/// 53-bit uniforms from Philox block j/2 (the cosine for even j, the sine for odd j).
pub fn philox_normal(key: u64, j: u64) -> f64 {
    let block = j >> 1;
    let c = philox4x32(
        [block as u32, (block >> 32) as u32, 0, 0],
        [key as u32, (key >> 32) as u32],
    );
    let a = (u64::from(c[0]) << 21) ^ u64::from(c[1] >> 11);
    let b = (u64::from(c[2]) << 21) ^ u64::from(c[3] >> 11);
    let u = (a as f64 + 0.5) * f64::EPSILON / 2.0;
    let v = b as f64 * f64::EPSILON / 2.0;
    let radius = (-2.0 * libm::log(u)).sqrt();
    let angle = 2.0 * std::f64::consts::PI * v;
    radius
        * if j & 1 == 1 {
            libm::sin(angle)
        } else {
            libm::cos(angle)
        }
}

/// A ChaCha20 stream's position in words (what a saved state keeps to resume it).
pub fn word_position(rng: &ChaCha20Rng) -> crate::error::Result<u64> {
    u64::try_from(rng.get_word_pos())
        .map_err(|_| crate::error::Error::Infeasible("a random stream ran past 2^64 words".into()))
}

/// [`stream`]`(seed, &[tag])` at word `position`.
pub fn stream_at(seed: u64, tag: u64, position: u64) -> ChaCha20Rng {
    let mut rng = stream(seed, &[tag]);
    rng.set_word_pos(u128::from(position));
    rng
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream set to a saved word position goes on as the stream that was saved.
    #[test]
    fn a_stream_at_its_saved_position_goes_on_as_the_saved_one() {
        let mut direct = stream(5, &[1]);
        let mut buf = [0u8; 13];
        direct.next_u64();
        direct.fill_bytes(&mut buf);
        direct.next_u32();
        let _ = normal(&mut direct) + gamma(&mut direct, 0.7);
        let mut resumed = stream_at(5, 1, word_position(&direct).unwrap());
        assert_eq!(resumed.next_u64(), direct.next_u64());
        assert_eq!(resumed.next_u32(), direct.next_u32());
    }

    /// Random123's known-answer vectors for philox4x32_10 (kat_vectors).
    #[test]
    fn philox_matches_known_answers() {
        assert_eq!(
            philox4x32([0; 4], [0; 2]),
            [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]
        );
        assert_eq!(
            philox4x32([u32::MAX; 4], [u32::MAX; 2]),
            [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd]
        );
        assert_eq!(
            philox4x32(
                [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344],
                [0xa409_3822, 0x299f_31d0]
            ),
            [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1]
        );
    }

    #[test]
    fn philox_normals_have_unit_moments() {
        let n = 200_000u64;
        let (mut s1, mut s2, mut s4) = (0.0, 0.0, 0.0);
        for j in 0..n {
            let z = philox_normal(0x1234_5678_9abc_def0, j);
            s1 += z;
            s2 += z * z;
            s4 += z * z * z * z;
        }
        let nf = n as f64;
        assert!((s1 / nf).abs() < 0.01, "mean {}", s1 / nf);
        assert!((s2 / nf - 1.0).abs() < 0.02, "variance {}", s2 / nf);
        assert!((s4 / nf - 3.0).abs() < 0.1, "fourth moment {}", s4 / nf);
        // Another key gives other values.
        assert_ne!(philox_normal(1, 0), philox_normal(2, 0));
    }

    #[test]
    fn dpsgd_noise_is_the_same_with_any_thread_count_and_standard_normal() {
        let run = |threads| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut g = vec![1.0; 100_001];
            pool.install(|| crate::accounting::DpSgd::add_noise(&mut g, 0.5, &mut stream(9, &[])));
            g
        };
        let one = run(1);
        assert_eq!(one, run(3));
        let z: Vec<f64> = one.iter().map(|g| (g - 1.0) / 0.5).collect();
        assert_standard_normal(&z, "DP-SGD noise");
        // Consecutive steps (one key word each) get different noise.
        let mut rng = stream(9, &[]);
        let (mut a, mut b) = (vec![0.0; 10], vec![0.0; 10]);
        crate::accounting::DpSgd::add_noise(&mut a, 1.0, &mut rng);
        crate::accounting::DpSgd::add_noise(&mut b, 1.0, &mut rng);
        assert_ne!(a, b);
    }

    /// Kolmogorov–Smirnov against Φ (the 0.1% critical value 1.95/√n) and the first four
    /// moments against 0, 1, 0, 3 within five standard errors.
    fn assert_standard_normal(z: &[f64], what: &str) {
        let n = z.len() as f64;
        let mut sorted = z.to_vec();
        sorted.sort_by(f64::total_cmp);
        let ks = sorted
            .iter()
            .enumerate()
            .map(|(i, &x)| {
                let f = crate::numeric::ndtr(x);
                (f - i as f64 / n).abs().max(((i + 1) as f64 / n - f).abs())
            })
            .fold(0.0, f64::max);
        assert!(ks < 1.95 / n.sqrt(), "{what}: KS distance {ks}");
        let moment = |k: i32| z.iter().map(|x| x.powi(k)).sum::<f64>() / n;
        // Standard errors: √(1/n), √(2/n), √(15/n), √(96/n).
        for (k, want, var) in [(1, 0.0, 1.0), (2, 1.0, 2.0), (3, 0.0, 15.0), (4, 3.0, 96.0)] {
            let got = moment(k);
            assert!(
                (got - want).abs() < 5.0 * (var / n).sqrt(),
                "{what}: moment {k} = {got}"
            );
        }
    }

    #[test]
    fn normal_samplers_pass_ks_and_moment_checks() {
        let mut rng = stream(21, &[]);
        let z: Vec<f64> = (0..100_000).map(|_| normal(&mut rng)).collect();
        assert_standard_normal(&z, "Box–Muller");
        let z: Vec<f64> = (0..400_000).map(|_| ZIGGURAT.sample(&mut rng)).collect();
        assert_standard_normal(&z, "ziggurat");
        // The tails, where a wrong wedge or tail sampler would show: counts beyond 2, 3 and r
        // (the base layer's edge) within five standard deviations of n·P(|Z| > t).
        let n = z.len() as f64;
        for t in [1.0, 2.0, 3.0, ZIGGURAT_R, 4.0] {
            let p = 2.0 * crate::numeric::ndtr(-t);
            let count = z.iter().filter(|v| v.abs() > t).count() as f64;
            let sd = (n * p * (1.0 - p)).sqrt();
            assert!(
                (count - n * p).abs() < 5.0 * sd,
                "ziggurat beyond {t}: {count} vs {}",
                n * p
            );
        }
        // Successive variates are uncorrelated.
        let r = z.windows(2).map(|p| p[0] * p[1]).sum::<f64>() / n;
        assert!(r.abs() < 5.0 / n.sqrt(), "ziggurat lag-1 correlation {r}");
    }

    #[test]
    fn ziggurat_layers_have_equal_areas_and_close_at_zero() {
        let z = &*ZIGGURAT;
        let r = ZIGGURAT_R;
        let v = z.x[0] * z.f[1];
        for i in 1..ZIGGURAT_LAYERS {
            let area = z.x[i] * (z.f[i + 1] - z.f[i]);
            assert!(
                (area / v - 1.0).abs() < 1e-9,
                "layer {i}: area {area} vs {v}"
            );
        }
        assert!(
            z.x.windows(2).skip(1).all(|w| w[0] > w[1]),
            "edges decrease"
        );
        // The base layer: rectangle r·f(r) plus the tail (√(π/2)·erfc(r/√2) ≈ 3.2e-4).
        assert!(
            (v - 4.928_673_233_99e-3).abs() < 1e-12,
            "v = {v} (Marsaglia–Tsang's value)"
        );
        assert_eq!(z.x[1], r);
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
