//! Real discrete Fourier transforms of power-of-two sizes, for the PLD accountant's
//! convolutions, in our own code so that every bit is the same on any machine: an FFT
//! library's twiddle factors come from the platform's `sin`/`cos` (glibc picks FMA or plain
//! variants by CPU, and they differ in the last bits) and its kernels from the CPU's vector
//! units. Here the twiddles are `libm`'s and the arithmetic is plain `f64` (Rust never fuses
//! a product into an add), so the result depends on the input alone.
//!
//! A real transform of N = 2M points packs x into z_n = x_{2n} + i·x_{2n+1}, transforms z by
//! a radix-2 decimation-in-time FFT of M points and unpacks the half spectrum X_0 … X_M;
//! the inverse runs the same steps backwards. [`RealFft::error`] bounds the rounding.

use num_complex::Complex64;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// u = 2⁻⁵³, the unit roundoff.
const U: f64 = f64::EPSILON / 2.0;
/// A bound on a twiddle factor's error |ŵ − w|: the angle fl(2π)·(r/n) (reduced to ≤ π/4, r/n
/// exact) errs by at most (0.36u + u)·π/4 < 1.07u (fl(2π) is 2π to 0.36u relative, the product
/// rounds once), `libm`'s sin and cos by less than an ulp (≤ u below 1), each component so by
/// < 2.07u and the complex value by < √2·2.07u < 3u.
const TWIDDLE: f64 = 3.0 * U;

/// The forward and inverse real transforms of one size, their twiddle factors computed once.
#[derive(Debug)]
pub struct RealFft {
    n: usize,
    /// The complex FFT's twiddles, stage after stage: the stage that merges transforms of h
    /// points into ones of 2h reads e^{−πij/h}, j < h, at [h − 1, 2h − 1).
    stages: Vec<Complex64>,
    /// The bit-reversal permutation of M points.
    reversed: Vec<usize>,
    /// The unpacking's twiddles e^{−2πik/N}, k < M.
    unpack: Vec<Complex64>,
}

impl RealFft {
    /// The transforms of `n` points (a power of two ≥ 2).
    pub fn new(n: usize) -> RealFft {
        assert!(
            n >= 2 && n.is_power_of_two(),
            "a real FFT of {n} points: need a power of two ≥ 2"
        );
        let m = n / 2;
        let mut stages = Vec::with_capacity(m.saturating_sub(1));
        let mut h = 1;
        while h < m {
            stages.extend((0..h).map(|j| twiddle(j, 2 * h)));
            h *= 2;
        }
        let bits = m.trailing_zeros();
        let reversed = (0..m)
            .map(|i| {
                if bits == 0 {
                    0
                } else {
                    i.reverse_bits() >> (usize::BITS - bits)
                }
            })
            .collect();
        let unpack = (0..m).map(|k| twiddle(k, n)).collect();
        RealFft {
            n,
            stages,
            reversed,
            unpack,
        }
    }

    /// The transforms of `n` points, kept per thread (their twiddles cost more than a
    /// transform).
    pub fn cached(n: usize) -> Rc<RealFft> {
        thread_local! {
            static PLANS: RefCell<HashMap<usize, Rc<RealFft>>> = RefCell::new(HashMap::new());
        }
        PLANS.with(|p| {
            p.borrow_mut()
                .entry(n)
                .or_insert_with(|| Rc::new(RealFft::new(n)))
                .clone()
        })
    }

    /// X_k = Σ_n x_n·e^{−2πikn/N} for k = 0 … N/2 (X_0 and X_{N/2} real), into `out`
    /// (N/2 + 1 values); `scratch` holds N/2.
    pub fn forward(&self, x: &[f64], out: &mut [Complex64], scratch: &mut Vec<Complex64>) {
        let m = self.n / 2;
        assert!(x.len() == self.n && out.len() == m + 1, "buffer sizes");
        scratch.clear();
        scratch.extend(
            self.reversed
                .iter()
                .map(|&r| Complex64::new(x[2 * r], x[2 * r + 1])),
        );
        self.butterflies(scratch);
        let z = &scratch[..];
        out[0] = Complex64::new(z[0].re + z[0].im, 0.0);
        out[m] = Complex64::new(z[0].re - z[0].im, 0.0);
        for k in 1..m {
            let (a, b) = (z[k], z[m - k].conj());
            // X_k = E_k + W_k·O_k, E_k = (Z_k + Z̄_{M−k})/2, O_k = −i(Z_k − Z̄_{M−k})/2.
            let even = a + b;
            let d = a - b;
            let odd = Complex64::new(d.im, -d.re);
            out[k] = (even + self.unpack[k] * odd) * 0.5;
        }
    }

    /// y_n = Σ_k Y_k·e^{2πikn/N} over the Hermitian spectrum whose half is `spectrum`
    /// (N/2 + 1 values; the imaginary parts of Y_0 and Y_{N/2} are taken as 0), unscaled,
    /// into `out` (N values); `scratch` holds N/2.
    pub fn inverse(&self, spectrum: &[Complex64], out: &mut [f64], scratch: &mut Vec<Complex64>) {
        let m = self.n / 2;
        assert!(
            spectrum.len() == m + 1 && out.len() == self.n,
            "buffer sizes"
        );
        // Z_k = (Y_k + Ȳ_{M−k}) + i·e^{2πik/N}·(Y_k − Ȳ_{M−k}); z = the unscaled inverse of Z
        // (the conjugate of the forward transform of Z̄) is y_{2n} + i·y_{2n+1}.
        let at = |k: usize| {
            if k == 0 || k == m {
                Complex64::new(spectrum[k].re, 0.0)
            } else {
                spectrum[k]
            }
        };
        scratch.clear();
        scratch.extend(self.reversed.iter().map(|&k| {
            let (a, b) = (at(k), at(m - k).conj());
            let sum = a + b;
            let d = (a - b) * self.unpack[k].conj();
            (sum + Complex64::new(-d.im, d.re)).conj()
        }));
        self.butterflies(scratch);
        for (n, z) in scratch.iter().enumerate() {
            out[2 * n] = z.re;
            out[2 * n + 1] = -z.im;
        }
    }

    /// The radix-2 stages of an in-place FFT of `z`, given in bit-reversed order: two stages a
    /// pass over the data where two are left (the same operations in the same order as one
    /// stage a pass, so the same bits, in half the passes over memory).
    fn butterflies(&self, z: &mut [Complex64]) {
        let m = z.len();
        let mut h = 1;
        while 4 * h <= m {
            let (w, w2) = (
                &self.stages[h - 1..2 * h - 1],
                &self.stages[2 * h - 1..4 * h - 1],
            );
            for block in z.chunks_exact_mut(4 * h) {
                let (first, second) = block.split_at_mut(2 * h);
                let (z0, z1) = first.split_at_mut(h);
                let (z2, z3) = second.split_at_mut(h);
                for j in 0..h {
                    // Stage h on (z0, z1) and on (z2, z3), then stage 2h on (z0, z2) and
                    // (z1, z3).
                    let (mut a0, mut a1, mut a2, mut a3) = (z0[j], z1[j], z2[j], z3[j]);
                    let t = w[j] * a1;
                    (a0, a1) = (a0 + t, a0 - t);
                    let t = w[j] * a3;
                    (a2, a3) = (a2 + t, a2 - t);
                    let t = w2[j] * a2;
                    (z0[j], z2[j]) = (a0 + t, a0 - t);
                    let t = w2[j + h] * a3;
                    (z1[j], z3[j]) = (a1 + t, a1 - t);
                }
            }
            h *= 4;
        }
        if 2 * h == m {
            let w = &self.stages[h - 1..2 * h - 1];
            let (lo, hi) = z.split_at_mut(h);
            for ((a, b), w) in lo.iter_mut().zip(hi.iter_mut()).zip(w) {
                let t = *w * *b;
                *b = *a - t;
                *a += t;
            }
        }
    }

    /// The same stages one a pass (the reference the paired passes are tested against).
    #[cfg(test)]
    fn butterflies_one_a_pass(&self, z: &mut [Complex64]) {
        let m = z.len();
        let mut h = 1;
        while h < m {
            let w = &self.stages[h - 1..2 * h - 1];
            for block in z.chunks_exact_mut(2 * h) {
                let (lo, hi) = block.split_at_mut(h);
                for ((a, b), w) in lo.iter_mut().zip(hi.iter_mut()).zip(w) {
                    let t = *w * *b;
                    *b = *a - t;
                    *a += t;
                }
            }
            h *= 2;
        }
    }

    /// τ with, for these transforms as computed (u = 2⁻⁵³, L = log₂N, μ = 3u the twiddles'
    /// error, c = u + √5u(1 + μ) + μ < 6.25u): (i) each forward bin errs by at most τ·‖x‖₁;
    /// (ii) the forward spectrum (Hermitian-extended) by at most τ·‖X‖₂ in the 2-norm; (iii)
    /// the inverse by at most τ·‖y‖₂. Why: a butterfly a ± ŵb errs by at most u|a ± ŵb| +
    /// (√5u(1 + μ) + μ)|b| (Brent, Percival and Zimmermann's √5u for a complex product), so
    /// each of the L − 1 stages of the M-point FFT adds at most c·S to a value whose inputs have
    /// l1 norm S (componentwise) and c times the 2-norm (normwise; a stage is √2 times
    /// unitary), to first order, 1.01 covering the rest. Unpacking maps Z's errors to X's with
    /// |1 − iW| + |1 + iW| ≤ 2√2 (hence √2 per bin) and Z ↦ X (extended) is √2 times an
    /// isometry (hence √2 relative), and rounds by less than 10.25u relative (its two sums
    /// and a product, at most 7.25u·‖x‖₁ per bin); packing the inverse's input the same.
    pub fn error(&self) -> f64 {
        let levels = (self.n.trailing_zeros() - 1) as f64;
        let c = U + 5f64.sqrt() * U * (1.0 + TWIDDLE) + TWIDDLE;
        (2f64.sqrt() * levels * c * 1.01 + 10.25 * U) * 1.01
    }
}

/// e^{−2πik/n}, its angle reduced to an octant first (exact swaps and signs), so the angle
/// libm sees is at most π/4 and k/n is exact (n a power of two).
fn twiddle(k: usize, n: usize) -> Complex64 {
    let k = k % n;
    // e^{−iθ} for θ = 2πk/n: the quarter turn q and the remainder r < n/4.
    let (q, r) = if n >= 4 {
        (k / (n / 4), k % (n / 4))
    } else {
        // n = 1 or 2: the angle is 0 or π.
        return Complex64::new(if 2 * k == n { -1.0 } else { 1.0 }, 0.0);
    };
    // (cos φ, sin φ) for φ = 2πr/n ∈ [0, π/2), from an angle ≤ π/4.
    let (c, s) = if 8 * r <= n {
        let phi = std::f64::consts::TAU * (r as f64 / n as f64);
        let (s, c) = libm::sincos(phi);
        (c, s)
    } else {
        let phi = std::f64::consts::TAU * ((n / 4 - r) as f64 / n as f64);
        let (s, c) = libm::sincos(phi);
        (s, c)
    };
    // e^{iθ} = i^q·(c + is); the forward twiddle is its conjugate.
    let (re, im) = match q {
        0 => (c, s),
        1 => (-s, c),
        2 => (-c, -s),
        _ => (s, -c),
    };
    Complex64::new(re, -im)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The DFT by its definition, its angles reduced exactly (k·j mod n): accurate to a few
    /// ulps of ‖x‖₁ per bin.
    fn direct(x: &[f64]) -> Vec<Complex64> {
        let n = x.len();
        (0..=n / 2)
            .map(|k| {
                x.iter()
                    .enumerate()
                    .map(|(j, &v)| twiddle(k * j % n, n) * v)
                    .sum()
            })
            .collect()
    }

    fn signal(n: usize, seed: u64) -> Vec<f64> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 11) as f64 / (1u64 << 53) as f64) - 0.25
            })
            .collect()
    }

    #[test]
    fn twiddles_are_the_roots_of_unity() {
        for n in [1usize, 2, 4, 8, 16, 1024] {
            for k in 0..n {
                let w = twiddle(k, n);
                let theta = -std::f64::consts::TAU * k as f64 / n as f64;
                assert!((w.re - libm::cos(theta)).abs() <= 8.0 * U, "n={n} k={k}");
                assert!((w.im - libm::sin(theta)).abs() <= 8.0 * U, "n={n} k={k}");
            }
        }
        // Exact at the quarter turns.
        assert_eq!(twiddle(4, 16), Complex64::new(0.0, -1.0));
        assert_eq!(twiddle(8, 16), Complex64::new(-1.0, 0.0));
    }

    /// Forward against the definition, within the stated per-bin bound; inverse ∘ forward is
    /// N times the identity, within the stated 2-norm bound.
    #[test]
    fn forward_and_inverse_match_the_definition_within_their_bounds() {
        for (i, n) in [2usize, 4, 8, 16, 64, 256, 4096].into_iter().enumerate() {
            let x = signal(n, i as u64 + 1);
            let fft = RealFft::new(n);
            let mut scratch = Vec::new();
            let mut spectrum = vec![Complex64::new(0.0, 0.0); n / 2 + 1];
            fft.forward(&x, &mut spectrum, &mut scratch);
            let exact = direct(&x);
            let l1: f64 = x.iter().map(|v| v.abs()).sum();
            for (k, (a, b)) in spectrum.iter().zip(&exact).enumerate() {
                // The reference's own error: n terms of a few ulps each.
                let slack = 2.0 * fft.error() * l1 + 20.0 * U * l1;
                assert!((a - b).norm() <= slack, "n={n} bin {k}: {a} vs {b}");
            }
            let mut back = vec![0.0; n];
            fft.inverse(&spectrum, &mut back, &mut scratch);
            let err: f64 = back
                .iter()
                .zip(&x)
                .map(|(b, v)| (b / n as f64 - v).powi(2))
                .sum::<f64>()
                .sqrt();
            let norm: f64 = x.iter().map(|v| v * v).sum::<f64>().sqrt();
            assert!(err <= 2.5 * fft.error() * norm, "n={n}: {err} vs {norm}");
        }
    }

    /// Two stages a pass give the bits of one a pass (odd and even numbers of stages).
    #[test]
    fn paired_stages_are_bit_identical_to_single_ones() {
        for n in [2usize, 4, 8, 16, 32, 1024, 2048] {
            let fft = RealFft::new(n);
            let x = signal(n / 2 * 2, n as u64);
            let z: Vec<Complex64> = x
                .chunks_exact(2)
                .map(|p| Complex64::new(p[0], p[1]))
                .collect();
            let (mut a, mut b) = (z.clone(), z);
            fft.butterflies(&mut a);
            fft.butterflies_one_a_pass(&mut b);
            let bits = |v: &[Complex64]| -> Vec<(u64, u64)> {
                v.iter().map(|c| (c.re.to_bits(), c.im.to_bits())).collect()
            };
            assert_eq!(bits(&a), bits(&b), "n={n}");
        }
    }

    /// A convolution by transforms equals the direct one (small integers: exact sums).
    #[test]
    fn a_product_of_spectra_is_a_cyclic_convolution() {
        let n = 32;
        let a: Vec<f64> = (0..n).map(|i| ((i * 7) % 5) as f64).collect();
        let b: Vec<f64> = (0..n).map(|i| ((i * 3) % 4) as f64).collect();
        let fft = RealFft::new(n);
        let mut scratch = Vec::new();
        let (mut fa, mut fb) = (
            vec![Complex64::new(0.0, 0.0); n / 2 + 1],
            vec![Complex64::new(0.0, 0.0); n / 2 + 1],
        );
        fft.forward(&a, &mut fa, &mut scratch);
        fft.forward(&b, &mut fb, &mut scratch);
        let product: Vec<_> = fa.iter().zip(&fb).map(|(x, y)| x * y).collect();
        let mut out = vec![0.0; n];
        fft.inverse(&product, &mut out, &mut scratch);
        for k in 0..n {
            let exact: f64 = (0..n).map(|j| a[j] * b[(n + k - j) % n]).sum();
            assert!((out[k] / n as f64 - exact).abs() < 1e-9, "{k}");
        }
    }
}
