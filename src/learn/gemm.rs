//! The one matrix product the batched engine needs: C ← C + A·B, f64, where A and B are each
//! given either row-major or as the row-major storage of their transpose ([`Operand`]).
//!
//! Each element is accumulated in one fixed order, c_ij + a_i0·b_0j + a_i1·b_1j + … (a
//! multiply, then an add: Rust never fuses them). Blocking over k stores the partial sum in C
//! and reloads it, which rounds nothing, and the vector width and padding only change how many
//! elements are done at once. So the result is bit-for-bit the same with or without AVX2, on
//! any x86-64 machine, with any thread count: unlike a BLAS, which picks kernels per CPU.
//! The output is split into fixed blocks of rows (not one per thread) for rayon.
//!
//! Layout: each block of rows of C is computed from packed copies of A (MR rows interleaved)
//! and of B (NR columns, zero-padded at the right edge), so the inner kernel reads both
//! contiguously and the edges run through the same vector kernel as the interior.

use rayon::prelude::*;
use std::cell::Cell;

/// Rows held in registers at once.
const MR: usize = 4;
/// Columns held in registers at once (two AVX2 vectors of four doubles).
const NR: usize = 8;
/// Typical depth of one packed block: an NR-column panel of B (16 KiB) stays in L1. k is cut
/// into round(k / KC) equal blocks (at most 1.5·KC deep), so a batch a little over KC (Poisson
/// batches vary) does not cost a second pass over C for a few rows.
const KC: usize = 256;
/// Rows of C per parallel task: a fixed size, so the work split never depends on the number of
/// threads (and each task's rows are one contiguous piece of C).
const TILE_ROWS: usize = 16;
/// Below this many multiply-adds the product runs on the calling thread.
const PARALLEL_MIN: usize = 1 << 19;

/// How a matrix operand is stored.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Operand<'a> {
    /// The rows × cols matrix itself, row-major.
    Rows(&'a [f64]),
    /// Its transpose (cols × rows), row-major: the matrix's columns are contiguous.
    Transposed(&'a [f64]),
}

impl Operand<'_> {
    fn len(&self) -> usize {
        match self {
            Operand::Rows(a) | Operand::Transposed(a) => a.len(),
        }
    }
}

/// C (m × n, row-major) ← C + A (m × k) · B (k × n).
pub(crate) fn gemm_acc(m: usize, n: usize, k: usize, a: Operand, b: Operand, c: &mut [f64]) {
    assert!(a.len() >= m * k && b.len() >= k * n && c.len() >= m * n);
    if m == 0 || n == 0 || k == 0 {
        return;
    }
    let c = &mut c[..m * n];
    let parallel = m * n * k >= PARALLEL_MIN && m > TILE_ROWS;
    let panel_len = |kc: usize| NR * kc;
    let panels = n.div_ceil(NR);
    // Taken, not borrowed: a product started while this thread waits in a parallel loop
    // (rayon lets it run other work) finds an empty buffer and allocates its own.
    let mut b_pack = PACKED_B.with(Cell::take);
    let depth = k.div_ceil(((k + KC / 2) / KC).max(1));
    b_pack.resize(panels * panel_len(depth.min(k)), 0.0);
    for k0 in (0..k).step_by(depth) {
        let kc = depth.min(k - k0);
        let b_pack = &mut b_pack[..panels * panel_len(kc)];
        // B's rows k0..k0 + kc, packed once and shared by every block of rows of C.
        let pack = |(panel, out): (usize, &mut [f64])| pack_b(b, k, n, k0, kc, panel * NR, out);
        if parallel {
            b_pack
                .par_chunks_mut(panel_len(kc))
                .enumerate()
                .for_each(pack);
        } else {
            b_pack.chunks_mut(panel_len(kc)).enumerate().for_each(pack);
        }
        let b_pack = &*b_pack;
        let tile = |(t, c): (usize, &mut [f64])| {
            let rows = c.len() / n;
            rows_block(t * TILE_ROWS, rows, n, m, k, k0, kc, a, b_pack, c);
        };
        if parallel {
            c.par_chunks_mut(TILE_ROWS * n).enumerate().for_each(tile);
        } else {
            c.chunks_mut(TILE_ROWS * n).enumerate().for_each(tile);
        }
    }
    PACKED_B.with(|cell| cell.set(b_pack));
}

thread_local! {
    /// The packed panels of B, kept between products so large ones do not fault in fresh
    /// pages each time.
    static PACKED_B: Cell<Vec<f64>> = const { Cell::new(Vec::new()) };
}

/// Rows `i0..i0 + rows` of C (given as `c`) gain A[rows, k0..k0 + kc]·B[k0..k0 + kc, ..],
/// B given as its packed panels.
#[allow(clippy::too_many_arguments)]
fn rows_block(
    i0: usize,
    rows: usize,
    n: usize,
    m: usize,
    k: usize,
    k0: usize,
    kc: usize,
    a: Operand,
    b_pack: &[f64],
    c: &mut [f64],
) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2. The body is the same code; only the vector width differs.
        unsafe { rows_block_avx2(i0, rows, n, m, k, k0, kc, a, b_pack, c) };
        return;
    }
    rows_block_body(i0, rows, n, m, k, k0, kc, a, b_pack, c);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(clippy::too_many_arguments)]
unsafe fn rows_block_avx2(
    i0: usize,
    rows: usize,
    n: usize,
    m: usize,
    k: usize,
    k0: usize,
    kc: usize,
    a: Operand,
    b_pack: &[f64],
    c: &mut [f64],
) {
    rows_block_body(i0, rows, n, m, k, k0, kc, a, b_pack, c);
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn rows_block_body(
    i0: usize,
    rows: usize,
    n: usize,
    m: usize,
    k: usize,
    k0: usize,
    kc: usize,
    a: Operand,
    b_pack: &[f64],
    c: &mut [f64],
) {
    let groups = rows.div_ceil(MR);
    let mut a_pack = vec![0.0; groups * MR * kc];
    pack_a(a, m, k, i0, rows, k0, kc, &mut a_pack);
    for (panel, b_panel) in b_pack.chunks_exact(NR * kc).enumerate() {
        let j0 = panel * NR;
        let width = NR.min(n - j0);
        for (g, a_group) in a_pack.chunks_exact(MR * kc).enumerate() {
            let height = MR.min(rows - g * MR);
            let mut acc = [[0.0; NR]; MR];
            for (r, acc) in acc.iter_mut().enumerate().take(height) {
                let at = (g * MR + r) * n + j0;
                copy_cols(&mut acc[..], &c[at..], width);
            }
            kernel(a_group, b_panel, &mut acc);
            for (r, acc) in acc.iter().enumerate().take(height) {
                let at = (g * MR + r) * n + j0;
                copy_cols(&mut c[at..], &acc[..], width);
            }
        }
    }
}

/// dst[..width] ← src[..width], width ≤ NR; a full NR is a fixed-size copy the compiler
/// inlines (a call to memmove per 64 bytes would cost as much as the arithmetic).
#[inline(always)]
fn copy_cols(dst: &mut [f64], src: &[f64], width: usize) {
    if width == NR {
        dst[..NR].copy_from_slice(&src[..NR]);
    } else {
        for (d, s) in dst[..width].iter_mut().zip(&src[..width]) {
            *d = *s;
        }
    }
}

/// acc ← acc + (MR × kc panel of A)·(kc × NR panel of B), one p at a time. Written with
/// `while` loops over fixed-size rows: the tests' build (opt-level 1) does not inline range
/// iterators into this AVX2 function, and a call per multiply-add made DP-SGD ~60× slower there
/// than in release. The order of the operations, and so every bit, is the same.
#[inline(always)]
fn kernel(a: &[f64], b: &[f64], acc: &mut [[f64; NR]; MR]) {
    let depth = (a.len() / MR).min(b.len() / NR);
    let mut p = 0;
    while p < depth {
        let ap: &[f64; MR] = a[p * MR..(p + 1) * MR].try_into().unwrap();
        let bp: &[f64; NR] = b[p * NR..(p + 1) * NR].try_into().unwrap();
        let mut r = 0;
        while r < MR {
            let x = ap[r];
            let row = &mut acc[r];
            let mut q = 0;
            while q < NR {
                row[q] += x * bp[q];
                q += 1;
            }
            r += 1;
        }
        p += 1;
    }
}

/// Rows `i0..i0 + rows`, columns `k0..k0 + kc` of A (m × k), as groups of MR rows stored
/// p-major (`out[g][p][r]`), the missing rows of the last group as zeros.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn pack_a(
    a: Operand,
    m: usize,
    k: usize,
    i0: usize,
    rows: usize,
    k0: usize,
    kc: usize,
    out: &mut [f64],
) {
    let groups = rows.div_ceil(MR);
    let out = &mut out[..groups * MR * kc];
    for (g, group) in out.chunks_exact_mut(MR * kc).enumerate() {
        let height = MR.min(rows - g * MR);
        if height < MR {
            group.fill(0.0);
        }
        for r in 0..height {
            let i = i0 + g * MR + r;
            match a {
                Operand::Rows(a) => {
                    let row = &a[i * k + k0..i * k + k0 + kc];
                    for (p, &v) in row.iter().enumerate() {
                        group[p * MR + r] = v;
                    }
                }
                Operand::Transposed(at) => {
                    for p in 0..kc {
                        group[p * MR + r] = at[(k0 + p) * m + i];
                    }
                }
            }
        }
    }
}

/// Rows `k0..k0 + kc`, columns `j0..j0 + NR` of B (k × n) as a kc × NR panel, the columns
/// past n as zeros.
fn pack_b(b: Operand, k: usize, n: usize, k0: usize, kc: usize, j0: usize, out: &mut [f64]) {
    let width = NR.min(n - j0);
    if width < NR {
        out.fill(0.0);
    }
    match b {
        Operand::Rows(b) => {
            for (p, panel) in out.chunks_exact_mut(NR).enumerate() {
                let at = (k0 + p) * n + j0;
                copy_cols(panel, &b[at..], width);
            }
        }
        Operand::Transposed(bt) => {
            for q in 0..width {
                let column = &bt[(j0 + q) * k + k0..(j0 + q) * k + k0 + kc];
                for (p, &v) in column.iter().enumerate() {
                    out[p * NR + q] = v;
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

    /// `a` (rows × cols, row-major) transposed.
    fn transposed(rows: usize, cols: usize, a: &[f64]) -> Vec<f64> {
        let mut out = vec![0.0; rows * cols];
        for i in 0..rows {
            for j in 0..cols {
                out[j * rows + i] = a[i * cols + j];
            }
        }
        out
    }

    #[test]
    fn equals_the_triple_loop_bit_for_bit_at_every_shape_and_layout() {
        for &(m, n, k) in &[
            (1, 1, 1),
            (3, 5, 7),
            (4, 8, 1),
            (5, 9, 17),
            (17, 70, 33),
            (64, 130, 64),
            (256, 10, 128),
            (33, 200, 300),
            (70, 11, 600),
        ] {
            let (a, b) = (random(m * k, 1), random(k * n, 2));
            let (at, bt) = (transposed(m, k, &a), transposed(k, n, &b));
            let start = random(m * n, 3);
            let mut want = start.clone();
            naive(m, n, k, &a, &b, &mut want);
            for (a_op, b_op) in [
                (Operand::Rows(&a), Operand::Rows(&b)),
                (Operand::Transposed(&at), Operand::Rows(&b)),
                (Operand::Rows(&a), Operand::Transposed(&bt)),
                (Operand::Transposed(&at), Operand::Transposed(&bt)),
            ] {
                let mut got = start.clone();
                gemm_acc(m, n, k, a_op, b_op, &mut got);
                assert_eq!(got, want, "{m}×{n}×{k} {a_op:?} {b_op:?}");
            }
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
            pool.install(|| gemm_acc(m, n, k, Operand::Rows(&a), Operand::Rows(&b), &mut c));
            c
        };
        assert_eq!(run(1), run(4));
    }
}
