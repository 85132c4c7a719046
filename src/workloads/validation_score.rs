//! The private release shared by the real-data workloads ([`super::rbf_svm`],
//! [`super::gp_regression`]), and the helpers they share (log grids, per-seed caches).
//!
//! The release itself ([`ClippedMeanRelease`], [`ScoreClip`]) is a mechanism, so it lives in
//! [`crate::accounting::clipped_mean`] with its privacy model; it is re-exported here.

pub use crate::accounting::clipped_mean::{ClippedMeanRelease, ScoreClip};
use crate::error::{Error, Result};
use crate::params::OneOrMany;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, OnceLock};

/// `points` values from `lo` to `hi`, equally spaced in ln (both ends included); `name` is
/// the parameter of the range and `points_name` that of the count, for errors. A single point
/// needs lo = hi.
pub fn log_grid(
    name: &'static str,
    [lo, hi]: [f64; 2],
    points_name: &'static str,
    points: usize,
) -> Result<Vec<f64>> {
    if !(lo > 0.0 && hi.is_finite() && lo <= hi) {
        return Err(Error::invalid(
            name,
            format!("[{lo}, {hi}]"),
            "a range [low, high] with 0 < low <= high, finite",
        ));
    }
    match points {
        0 => Err(Error::invalid(points_name, 0, "an integer >= 1")),
        1 if lo == hi => Ok(vec![lo]),
        1 => Err(Error::invalid(
            points_name,
            1,
            format!("at least 2 to span {name} = [{lo}, {hi}] (or give low = high)"),
        )),
        _ if lo == hi => Err(Error::invalid(
            name,
            format!("[{lo}, {hi}]"),
            format!("a range with low < high ({points_name} = {points} points)"),
        )),
        _ => {
            let (a, b) = (libm::log(lo), libm::log(hi));
            let step = (b - a) / (points - 1) as f64;
            // The ends exactly as given, so a grid of [1e-2, 1e3] holds 1e-2 and 1e3.
            Ok((0..points)
                .map(|i| match i {
                    0 => lo,
                    _ if i == points - 1 => hi,
                    _ => libm::exp(a + i as f64 * step),
                })
                .collect())
        }
    }
}

/// The names given (one or a non-empty list of distinct names), or `default` when absent.
pub fn names(
    key: &'static str,
    given: Option<OneOrMany<String>>,
    default: &[&str],
) -> Result<Vec<String>> {
    let list = match given {
        None => default.iter().map(|s| s.to_string()).collect(),
        Some(g) => g.into_vec(),
    };
    if list.is_empty() {
        return Err(Error::invalid(
            key,
            "[]",
            "a name or a non-empty list of names",
        ));
    }
    if let Some((i, s)) = list
        .iter()
        .enumerate()
        .find(|(i, s)| list[..*i].contains(s))
    {
        return Err(Error::invalid(
            key,
            s,
            format!("distinct entries (entry {i} repeats it)"),
        ));
    }
    Ok(list)
}

/// Values computed once per key (e.g. per experiment seed) and shared by every instance the
/// harness asks for.
///
/// The harness runs cells on a rayon pool. A value is built on a fresh thread with its own
/// pool (of as many threads as the caller's), so the builder's parallel work never runs on a
/// harness worker: a worker waiting in a rayon join may pick up another cell's job, and that
/// job waiting on the same unfinished value from inside the builder would deadlock. Callers
/// asking for a value under construction wait for it; a failed build is kept and returned to
/// every caller (inputs are deterministic, so retrying would fail again).
pub struct PerKey<K, T> {
    cells: Mutex<HashMap<K, Arc<Slot<T>>>>,
}

/// A value being built or built (or the error its build gave).
type Slot<T> = OnceLock<Result<Arc<T>>>;

impl<K, T> Default for PerKey<K, T> {
    fn default() -> Self {
        PerKey {
            cells: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Eq + Hash, T: Send + Sync> PerKey<K, T> {
    /// The value for `key`, built by `build` the first time.
    pub fn get_or_build(&self, key: K, build: impl FnOnce() -> Result<T> + Send) -> Result<Arc<T>> {
        let cell = {
            let mut cells = self.cells.lock().unwrap_or_else(|e| e.into_inner());
            Arc::clone(cells.entry(key).or_default())
        };
        cell.get_or_init(|| {
            let threads = rayon::current_num_threads();
            std::thread::scope(|s| {
                s.spawn(move || {
                    let pool = rayon::ThreadPoolBuilder::new()
                        .num_threads(threads)
                        .build()
                        .map_err(|e| Error::thread_pool(&e))?;
                    pool.install(build).map(Arc::new)
                })
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
        })
        .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_grid_spans_the_range_with_exact_ends() {
        let g = log_grid("r", [1e-2, 1e3], "n", 6).unwrap();
        assert_eq!(g.len(), 6);
        assert_eq!((g[0], g[5]), (1e-2, 1e3));
        for (i, v) in g.iter().enumerate() {
            assert!((libm::log10(*v) - (-2.0 + i as f64)).abs() < 1e-12, "{g:?}");
        }
        assert_eq!(log_grid("r", [3.0, 3.0], "n", 1).unwrap(), vec![3.0]);
        for (range, n) in [
            ([1.0, 0.5], 3),
            ([0.0, 1.0], 3),
            ([1.0, 1.0], 3),
            ([1.0, 2.0], 1),
        ] {
            assert!(log_grid("r", range, "n", n).is_err(), "{range:?} {n}");
        }
        assert!(log_grid("r", [1.0, 2.0], "n", 0).is_err());
    }

    #[test]
    fn a_value_is_built_once_per_key() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let cache: PerKey<u64, usize> = PerKey::default();
        let builds = AtomicUsize::new(0);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(4)
            .build()
            .unwrap();
        use rayon::prelude::*;
        let got: Vec<usize> = pool.install(|| {
            (0..64u64)
                .into_par_iter()
                .map(|i| {
                    *cache
                        .get_or_build(i % 2, || {
                            builds.fetch_add(1, Ordering::SeqCst);
                            // Parallel work inside the build, as the workloads do.
                            Ok((0..1000usize).into_par_iter().sum::<usize>() + (i % 2) as usize)
                        })
                        .unwrap()
                })
                .collect()
        });
        assert_eq!(builds.load(Ordering::SeqCst), 2);
        for (i, g) in got.iter().enumerate() {
            assert_eq!(*g, 499_500 + i % 2);
        }
        let failing: PerKey<u8, u8> = PerKey::default();
        let e = failing.get_or_build(0, || Err(Error::Infeasible("no".into())));
        assert!(e.is_err());
        assert!(
            failing.get_or_build(0, || Ok(1)).is_err(),
            "a failure is kept"
        );
    }
}
