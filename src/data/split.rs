//! Seeded train / validation / test splits. The shuffle is our own Fisher–Yates over a
//! ChaCha20 stream, so a split never changes when a dependency changes its sampling code.

use super::{Dataset, Target};
use crate::error::{fmt_num, Error, Result};
use crate::rng::stream;
use rand::{Rng, RngCore};

/// The stream tag for splits ("splt"), so a split seed never reuses another purpose's stream.
const SPLIT_TAG: u64 = 0x7370_6c74;

/// Three disjoint parts of a data set that together cover it.
#[derive(Clone, Debug, PartialEq)]
pub struct Split {
    pub train: Dataset,
    pub validation: Dataset,
    pub test: Dataset,
}

impl Dataset {
    /// Splits off a `validation` and a `test` fraction (each in [0, 1), together < 1); train
    /// gets the rest.
    ///
    /// Classification sets are stratified: each class's rows are shuffled, validation takes
    /// round(validation · n_c) of them, test min(round(test · n_c), what is left), so every
    /// class keeps its proportion in every part to within one example. Regression sets are
    /// cut the same way as one group. Classes are shuffled in class order from the stream
    /// `rng::stream(seed, [0x7370_6c74])` ("splt"). Rows keep their original relative order
    /// inside each part, so a part depends on the seed only through which rows it holds.
    pub fn split(&self, validation: f64, test: f64, seed: u64) -> Result<Split> {
        for (name, f) in [("validation", validation), ("test", test)] {
            if !(0.0..1.0).contains(&f) {
                return Err(Error::invalid(name, fmt_num(f), "a fraction in [0, 1)"));
            }
        }
        if validation + test >= 1.0 {
            return Err(Error::invalid(
                "validation + test",
                fmt_num(validation + test),
                "less than 1 (the training part gets the rest)",
            ));
        }
        let groups: Vec<Vec<usize>> = match &self.target {
            Target::Classes { labels, names } => {
                let mut groups = vec![Vec::new(); names.len()];
                for (i, &c) in labels.iter().enumerate() {
                    groups[c].push(i);
                }
                groups
            }
            Target::Values(_) => vec![(0..self.len()).collect()],
        };
        let mut rng = stream(seed, &[SPLIT_TAG]);
        let (mut train, mut val, mut tst) = (Vec::new(), Vec::new(), Vec::new());
        for mut rows in groups {
            shuffle(&mut rows, &mut rng);
            let n = rows.len() as f64;
            let n_val = (validation * n).round() as usize;
            let n_test = ((test * n).round() as usize).min(rows.len() - n_val);
            val.extend_from_slice(&rows[..n_val]);
            tst.extend_from_slice(&rows[n_val..n_val + n_test]);
            train.extend_from_slice(&rows[n_val + n_test..]);
        }
        if train.is_empty() {
            return Err(Error::Infeasible(format!(
                "splitting {} examples of `{}` with validation = {validation} and test = \
                 {test} leaves no training examples",
                self.len(),
                self.name
            )));
        }
        for part in [&mut train, &mut val, &mut tst] {
            part.sort_unstable();
        }
        Ok(Split {
            train: self.select(&train),
            validation: self.select(&val),
            test: self.select(&tst),
        })
    }
}

/// 0..n in a uniformly random order.
pub fn shuffled_indices(n: usize, rng: &mut dyn RngCore) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..n).collect();
    shuffle(&mut idx, rng);
    idx
}

/// Fisher–Yates (Durstenfeld): every permutation equally likely.
pub fn shuffle<T>(items: &mut [T], rng: &mut dyn RngCore) {
    for i in (1..items.len()).rev() {
        let j = uniform_below(rng, i as u64 + 1) as usize;
        items.swap(i, j);
    }
}

/// A uniform integer in [0, bound) by rejection: draws below 2^64 mod bound are redrawn, so
/// the accepted range is a whole number of copies of [0, bound).
pub fn uniform_below(rng: &mut dyn RngCore, bound: u64) -> u64 {
    debug_assert!(bound > 0);
    let reject_below = bound.wrapping_neg() % bound;
    loop {
        let r = rng.next_u64();
        if r >= reject_below {
            return r % bound;
        }
    }
}

/// Poisson subsampling: appends each of the rows 0..n to `out` independently with probability
/// `rate`, in row order. The gaps between chosen rows are geometric, drawn by inversion:
/// G = ⌊ln U / ln(1 − rate)⌋ with U uniform on (0, 1] has P(G ≥ g) = (1 − rate)^g, the chance
/// that the next g rows are all left out. So a step costs one uniform per chosen row (plus
/// one), not one per row, which matters when n is many times the batch.
pub fn poisson_subsample(n: usize, rate: f64, rng: &mut dyn RngCore, out: &mut Vec<usize>) {
    if rate >= 1.0 {
        out.extend(0..n);
        return;
    }
    if rate.is_nan() || rate <= 0.0 {
        return;
    }
    let log_keep = libm::log1p(-rate); // ln(1 − rate) < 0, accurate for small rates
    let mut next = 0usize;
    while next < n {
        let u = 1.0 - rng.random::<f64>(); // (0, 1]
        let gap = (libm::log(u) / log_keep).floor(); // ≥ 0; +∞ when the rate underflows
        if gap >= (n - next) as f64 {
            return;
        }
        next += gap as usize;
        out.push(next);
        next += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisson_subsample_includes_each_row_independently_with_the_rate() {
        let (n, rate, trials) = (12, 0.3, 40_000);
        let mut rng = stream(5, &[]);
        let mut single = [0usize; 12];
        let mut adjacent = [0usize; 11];
        let mut apart = 0usize;
        let (mut sum, mut sum_sq) = (0.0, 0.0);
        let mut out = Vec::new();
        for _ in 0..trials {
            out.clear();
            poisson_subsample(n, rate, &mut rng, &mut out);
            assert!(out.windows(2).all(|w| w[0] < w[1]) && out.iter().all(|&i| i < n));
            let mut chosen = [false; 12];
            out.iter().for_each(|&i| chosen[i] = true);
            (0..n).for_each(|i| single[i] += chosen[i] as usize);
            (0..n - 1).for_each(|i| adjacent[i] += (chosen[i] && chosen[i + 1]) as usize);
            apart += (chosen[0] && chosen[n - 1]) as usize;
            sum += out.len() as f64;
            sum_sq += (out.len() * out.len()) as f64;
        }
        let t = trials as f64;
        // Binomial counts within five standard deviations of their means.
        let near =
            |count: usize, p: f64| (count as f64 - t * p).abs() < 5.0 * (t * p * (1.0 - p)).sqrt();
        assert!(single.iter().all(|&c| near(c, rate)), "{single:?}");
        assert!(
            adjacent.iter().all(|&c| near(c, rate * rate)),
            "{adjacent:?}"
        );
        assert!(near(apart, rate * rate));
        // The batch size is Binomial(n, rate): mean 3.6, variance 2.52.
        let (mean, var) = (sum / t, sum_sq / t - (sum / t).powi(2));
        assert!(
            (mean - 3.6).abs() < 0.05 && (var - 2.52).abs() < 0.1,
            "{mean} {var}"
        );
    }

    #[test]
    fn poisson_subsample_edges() {
        let mut rng = stream(6, &[]);
        let mut out = vec![99];
        poisson_subsample(5, 1.0, &mut rng, &mut out);
        assert_eq!(out, vec![99, 0, 1, 2, 3, 4]);
        for rate in [0.0, -1.0, f64::NAN, 1e-300] {
            let mut out = Vec::new();
            poisson_subsample(1000, rate, &mut rng, &mut out);
            assert!(out.is_empty(), "{rate}");
        }
        let mut out = Vec::new();
        poisson_subsample(0, 0.5, &mut rng, &mut out);
        assert!(out.is_empty());
        // A large population at a small rate: the size is near its mean 100.
        poisson_subsample(1_000_000, 1e-4, &mut rng, &mut out);
        assert!((60..140).contains(&out.len()), "{}", out.len());
    }

    #[test]
    fn uniform_below_is_uniform_and_in_range() {
        let mut rng = stream(3, &[]);
        let mut counts = [0usize; 7];
        let n = 70_000;
        for _ in 0..n {
            counts[uniform_below(&mut rng, 7) as usize] += 1;
        }
        // Each count is Binomial(70000, 1/7): sd ≈ 92.6; 5 sd is far outside chance.
        for c in counts {
            assert!((c as f64 - 10_000.0).abs() < 463.0, "{counts:?}");
        }
        assert_eq!(uniform_below(&mut rng, 1), 0);
    }

    #[test]
    fn every_permutation_of_three_is_equally_likely() {
        let mut rng = stream(4, &[]);
        let mut counts = std::collections::HashMap::new();
        let n = 60_000;
        for _ in 0..n {
            *counts
                .entry(shuffled_indices(3, &mut rng))
                .or_insert(0usize) += 1;
        }
        assert_eq!(counts.len(), 6);
        // Each count is Binomial(60000, 1/6): sd ≈ 91.3.
        for (p, c) in &counts {
            assert!((*c as f64 - 10_000.0).abs() < 460.0, "{p:?}: {c}");
        }
    }
}
