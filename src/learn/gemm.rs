//! The one matrix product the batched engine needs: C ← C + A·B, row-major, f64.
//!
//! Each element is accumulated in one fixed order, c_ij + a_i0·b_0j + a_i1·b_1j + … (a
//! multiply, then an add: Rust never fuses them), and the vector width only changes how many
//! columns are done at once. So the result is bit-for-bit the same with or without AVX2, on
//! any x86-64 machine, with any thread count: unlike a BLAS, which picks kernels per CPU.
//! The output is split into fixed blocks of rows (not one per thread) for rayon.

use rayon::prelude::*;

/// Rows held in registers at once.
const MR: usize = 4;
/// Columns held in registers at once (two AVX2 vectors of four doubles).
const NR: usize = 8;
/// Rows of C per parallel task: a fixed size, so the work split never depends on the number of
/// threads (and each task's rows are one contiguous piece of C).
const TILE_ROWS: usize = 32;
/// Below this many multiply-adds the product runs on the calling thread.
const PARALLEL_MIN: usize = 1 << 16;

/// C (m × n) ← C + A (m × k) · B (k × n), all row-major and contiguous.
pub(crate) fn gemm_acc(m: usize, n: usize, k: usize, a: &[f64], b: &[f64], c: &mut [f64]) {
    assert!(a.len() >= m * k && b.len() >= k * n && c.len() >= m * n);
    if m == 0 || n == 0 {
        return;
    }
    let c = &mut c[..m * n];
    if m * n * k < PARALLEL_MIN || m <= TILE_ROWS {
        rows_block(m, n, k, a, b, c);
        return;
    }
    c.par_chunks_mut(TILE_ROWS * n)
        .enumerate()
        .for_each(|(t, c)| {
            let rows = c.len() / n;
            let a = &a[t * TILE_ROWS * k..(t * TILE_ROWS + rows) * k];
            rows_block(rows, n, k, a, b, c);
        });
}

/// C (m × n) ← C + A·B for one block of rows (or the whole product).
fn rows_block(m: usize, n: usize, k: usize, a: &[f64], b: &[f64], c: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2. The body is the same code; only the vector width differs.
        unsafe { rows_block_avx2(m, n, k, a, b, c) };
        return;
    }
    rows_block_body(m, n, k, a, b, c);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn rows_block_avx2(m: usize, n: usize, k: usize, a: &[f64], b: &[f64], c: &mut [f64]) {
    rows_block_body(m, n, k, a, b, c);
}

#[inline(always)]
fn rows_block_body(m: usize, n: usize, k: usize, a: &[f64], b: &[f64], c: &mut [f64]) {
    let mut j = 0;
    while j + NR <= n {
        let mut i = 0;
        while i + MR <= m {
            block_full(n, k, a, b, c, i, j);
            i += MR;
        }
        for i in i..m {
            row_block(n, k, a, b, c, i, j, NR);
        }
        j += NR;
    }
    if j < n {
        for i in 0..m {
            row_block(n, k, a, b, c, i, j, n - j);
        }
    }
}

/// The MR × NR block at (i, j), accumulated in registers over the whole of k.
#[inline(always)]
fn block_full(n: usize, k: usize, a: &[f64], b: &[f64], c: &mut [f64], i: usize, j: usize) {
    let mut acc = [[0.0; NR]; MR];
    for (r, acc) in acc.iter_mut().enumerate() {
        acc.copy_from_slice(&c[(i + r) * n + j..(i + r) * n + j + NR]);
    }
    let rows: [&[f64]; MR] = std::array::from_fn(|r| &a[(i + r) * k..(i + r + 1) * k]);
    for p in 0..k {
        let bp: &[f64; NR] = b[p * n + j..p * n + j + NR].try_into().expect("NR columns");
        for r in 0..MR {
            let x = rows[r][p];
            for q in 0..NR {
                acc[r][q] += x * bp[q];
            }
        }
    }
    for (r, acc) in acc.iter().enumerate() {
        c[(i + r) * n + j..(i + r) * n + j + NR].copy_from_slice(acc);
    }
}

/// One row, `width` ≤ NR columns at j: the edges, in the same per-element order.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn row_block(
    n: usize,
    k: usize,
    a: &[f64],
    b: &[f64],
    c: &mut [f64],
    i: usize,
    j: usize,
    width: usize,
) {
    let mut acc = [0.0; NR];
    acc[..width].copy_from_slice(&c[i * n + j..i * n + j + width]);
    let row = &a[i * k..(i + 1) * k];
    for (p, &x) in row.iter().enumerate() {
        let bp = &b[p * n + j..p * n + j + width];
        for q in 0..width {
            acc[q] += x * bp[q];
        }
    }
    c[i * n + j..i * n + j + width].copy_from_slice(&acc[..width]);
}

/// `a` (rows × cols, row-major) transposed into `out` (cols × rows).
pub(crate) fn transpose(rows: usize, cols: usize, a: &[f64], out: &mut Vec<f64>) {
    out.clear();
    out.resize(rows * cols, 0.0);
    const T: usize = 16;
    for i0 in (0..rows).step_by(T) {
        for j0 in (0..cols).step_by(T) {
            for i in i0..(i0 + T).min(rows) {
                for j in j0..(j0 + T).min(cols) {
                    out[j * rows + i] = a[i * cols + j];
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{normal, stream};

    /// The textbook triple loop in the same per-element order: the reference.
    fn naive(m: usize, n: usize, k: usize, a: &[f64], b: &[f64], c: &mut [f64]) {
        for i in 0..m {
            for j in 0..n {
                let mut s = c[i * n + j];
                for p in 0..k {
                    s += a[i * k + p] * b[p * n + j];
                }
                c[i * n + j] = s;
            }
        }
    }

    fn random(len: usize, seed: u64) -> Vec<f64> {
        let mut rng = stream(seed, &[]);
        (0..len).map(|_| normal(&mut rng)).collect()
    }

    #[test]
    fn equals_the_triple_loop_bit_for_bit_at_every_shape() {
        for &(m, n, k) in &[
            (1, 1, 1),
            (3, 5, 7),
            (4, 8, 1),
            (5, 9, 17),
            (17, 70, 33),
            (64, 130, 64),
            (256, 10, 128),
            (33, 200, 300),
        ] {
            let (a, b) = (random(m * k, 1), random(k * n, 2));
            let mut got = random(m * n, 3);
            let mut want = got.clone();
            gemm_acc(m, n, k, &a, &b, &mut got);
            naive(m, n, k, &a, &b, &mut want);
            assert_eq!(got, want, "{m}×{n}×{k}");
        }
    }

    #[test]
    fn same_bits_with_one_thread_or_many() {
        let (m, n, k) = (96, 300, 200);
        let (a, b) = (random(m * k, 4), random(k * n, 5));
        let run = |threads| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut c = vec![0.0; m * n];
            pool.install(|| gemm_acc(m, n, k, &a, &b, &mut c));
            c
        };
        assert_eq!(run(1), run(4));
    }

    #[test]
    fn transposes() {
        let a: Vec<f64> = (0..6).map(f64::from).collect();
        let mut t = Vec::new();
        transpose(2, 3, &a, &mut t);
        assert_eq!(t, vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    }
}
