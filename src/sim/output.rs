//! Writing the files of a results folder: atomically (a temporary sibling, then a rename, so a
//! reader or a resumed run never sees half a file; never through a link) and without
//! overwriting a file of the user's: in a folder whose manifest lists what dptune wrote, a file
//! it does not list that has an output's name moves to `superseded/user-files/` first. The
//! lowest layer of the harness's files: tables, plots and the store write through it. Every file
//! read or appended to here is opened by [`open_regular`]: a regular file only (never through a
//! link, never a device or a pipe) and, when read, of a bounded size.

use crate::error::{Error, Result};
use serde_json::Value;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex};

/// Where earlier configurations' results are kept.
pub const SUPERSEDED: &str = "superseded";
/// Where files of the user's that had an output's name are kept (under `superseded/`).
const USER_FILES: &str = "user-files";
/// Where outputs go that an earlier report made and the present one no longer makes.
const NO_LONGER_MADE: &str = "no-longer-made";
/// A results folder's manifest.
pub(crate) const MANIFEST: &str = "manifest.json";
/// A regenerated folder's comparison with the committed one (`dptune sim verify`): dptune's,
/// though no manifest lists it (it is written after the manifest is complete).
pub(crate) const VERIFICATION: &str = "verify.json";

/// The files a manifest lists as dptune's (names relative to its folder); None for a manifest
/// of an older dptune, which lists none.
pub(crate) fn listed_files(manifest: &Value) -> Option<Vec<String>> {
    manifest["files"].as_array().map(|a| {
        a.iter()
            .filter_map(|v| v.as_str().map(String::from))
            .collect()
    })
}

/// This host's name as file names carry it (letters, digits and `-` only; empty when unknown).
pub(crate) fn hostname() -> String {
    super::provenance::host()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect()
}

/// The name of this process's temporary for `name`: `.<name>.<host>~<pid>.tmp`. The host is
/// in it so that a run on one node of a cluster never takes another node's live temporary in a
/// shared folder for a dead process's ([`is_dead_temporary`]).
fn temporary_name(name: &str) -> String {
    format!(".{name}.{}~{}.tmp", hostname(), std::process::id())
}

/// Whether `file_name` is a temporary left by a process of this host that is gone. Another
/// host's is never judged (its pid means nothing here); an older temporary without a host
/// (`.<name>.<pid>.tmp`) is judged by its pid alone, as it always was.
pub(crate) fn is_dead_temporary(file_name: &str) -> bool {
    let Some(rest) = file_name.strip_suffix(".tmp") else {
        return false;
    };
    let last = rest.rsplit('.').next().unwrap_or("");
    let pid = match last.rsplit_once('~') {
        Some((host, pid)) if host == hostname() => pid,
        Some(_) => return false,
        None => last,
    };
    !pid_alive(pid)
}

/// Whether `pid` names a live process on this host (false for anything but digits).
pub(crate) fn pid_alive(pid: &str) -> bool {
    !pid.is_empty()
        && pid.chars().all(|c| c.is_ascii_digit())
        && Path::new("/proc").join(pid).exists()
}

/// The largest JSON or text record dptune reads from a results folder (a manifest, a
/// verification record, a lock, the run and timing lines): theirs are kilobytes.
pub const MAX_RECORD_BYTES: u64 = 64 << 20;
/// The largest data file dptune reads from a results folder (a parquet table or part, a unit's
/// journal, a table or figure `sim verify` compares): the committed ones are a few megabytes.
pub const MAX_DATA_BYTES: u64 = 1 << 30;

/// Opens `path` with `options`, never through a symbolic link (at its last component: a link
/// there is refused, not followed) and never blocking on a pipe; anything but a regular file is
/// refused. None when nothing is there (and `options` does not create).
pub(crate) fn open_regular(
    path: &Path,
    options: &mut std::fs::OpenOptions,
) -> Result<Option<std::fs::File>> {
    use std::os::unix::fs::OpenOptionsExt;
    options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    let not_regular = || {
        Error::results(
            path,
            "is not a regular file (a symbolic link, folder, device or pipe): dptune reads and \
             writes a results folder's files only as regular files, never through a link; \
             replace it by a regular file, or move it away",
        )
    };
    let file = match options.open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        // O_NOFOLLOW's answer to a link.
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(not_regular()),
        Err(e) => return Err(Error::io(path, e)),
    };
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    if !meta.is_file() {
        return Err(not_regular());
    }
    Ok(Some(file))
}

/// Why a file over `limit` bytes is not read.
fn too_large(path: &Path, limit: u64) -> Error {
    Error::results(
        path,
        format!(
            "is larger than {limit} bytes, more than dptune reads for a file of this kind (its \
             own are far smaller): move it away"
        ),
    )
}

/// The regular file `path` opened for reading (see [`open_regular`]), or None when there is
/// none; a file over `limit` bytes is refused.
pub fn open_limited(path: &Path, limit: u64) -> Result<Option<std::fs::File>> {
    let Some(file) = open_regular(path, std::fs::OpenOptions::new().read(true))? else {
        return Ok(None);
    };
    if file.metadata().map_err(|e| Error::io(path, e))?.len() > limit {
        return Err(too_large(path, limit));
    }
    Ok(Some(file))
}

/// The bytes of the regular file `path` (see [`open_limited`]), or None when there is none.
pub fn read_limited(path: &Path, limit: u64) -> Result<Option<Vec<u8>>> {
    use std::io::Read;
    let Some(file) = open_limited(path, limit)? else {
        return Ok(None);
    };
    let mut bytes = Vec::new();
    // Bounded again while reading: the file may grow after its size was taken.
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, e))?;
    if bytes.len() as u64 > limit {
        return Err(too_large(path, limit));
    }
    Ok(Some(bytes))
}

/// [`read_limited`] as UTF-8 text.
pub fn read_text_limited(path: &Path, limit: u64) -> Result<Option<String>> {
    read_limited(path, limit)?
        .map(|b| String::from_utf8(b).map_err(|_| Error::results(path, "is not UTF-8 text")))
        .transpose()
}

/// Appends `bytes` to the regular file `path` (created if missing) with one write, never
/// through a link (see [`open_regular`]).
pub fn append(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let mut file = open_regular(path, std::fs::OpenOptions::new().create(true).append(true))?
        .ok_or_else(|| Error::io(path, "vanished as it was created"))?;
    file.write_all(bytes).map_err(|e| Error::io(path, e))
}

/// Writes `path` through a temporary sibling (see [`temporary_name`]) and a rename.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut std::fs::File) -> std::result::Result<(), String>,
) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let name = path
        .file_name()
        .ok_or_else(|| Error::io(path, "not a file path"))?
        .to_string_lossy();
    let tmp = dir.join(temporary_name(&name));
    let result = (|| {
        // A fresh file (never through a link or file left at the temporary name).
        let _ = std::fs::remove_file(&tmp);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| e.to_string())?;
        write(&mut file)?;
        file.sync_all().map_err(|e| e.to_string())
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::io(path, e));
    }
    keep_user_file(path)?;
    std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
}

/// Writes a text file atomically.
pub fn write_text(path: &Path, text: &str) -> Result<()> {
    write_bytes(path, text.as_bytes())
}

/// Writes a file atomically.
pub fn write_bytes(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    write_atomically(path, |f| f.write_all(bytes).map_err(|e| e.to_string()))
}

/// Renames `src` to `dst`; an existing `dst` is kept by giving the new one a free name (the
/// name used is returned).
pub(crate) fn rename_free(src: &Path, dst: &Path) -> Result<PathBuf> {
    let mut target = dst.to_path_buf();
    let mut k = 1;
    while target.exists() {
        target = dst.with_file_name(format!(
            "{}.{k}",
            dst.file_name().unwrap_or_default().to_string_lossy()
        ));
        k += 1;
    }
    std::fs::rename(src, &target).map_err(|e| Error::io(src, e))?;
    Ok(target)
}

/// The output paths this process has written: dptune's own, whatever the manifest lists yet.
static WRITTEN: LazyLock<Mutex<HashSet<PathBuf>>> = LazyLock::new(Default::default);

/// Called before an output replaces `path`. In a results folder (one whose manifest lists what
/// dptune wrote there), a file at `path` that the manifest does not list and this process has
/// not written is the user's: it moves to `superseded/user-files/` (said on stderr) instead of
/// being overwritten. A link counts as a file: it is moved, never written through.
pub(crate) fn keep_user_file(path: &Path) -> Result<()> {
    let first = WRITTEN
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(path.to_path_buf());
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Ok(());
    };
    if !first || name == MANIFEST || name == VERIFICATION || path.symlink_metadata().is_err() {
        return Ok(());
    }
    let listed = read_text_limited(&dir.join(MANIFEST), MAX_RECORD_BYTES)?
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .and_then(|manifest| listed_files(&manifest));
    let Some(listed) = listed else {
        return Ok(());
    };
    if listed.iter().any(|f| f.as_str() == name.to_string_lossy()) {
        return Ok(());
    }
    set_aside_user_file(dir, path)
}

/// Moves the user's file `path` (in results folder `dir`) to `superseded/user-files/`.
pub(crate) fn set_aside_user_file(dir: &Path, path: &Path) -> Result<()> {
    set_aside(
        dir,
        path,
        USER_FILES,
        "not written by dptune, but an output has its name",
    )
}

/// Moves dptune's output `path` (in results folder `dir`), which the present report no longer
/// makes, to `superseded/no-longer-made/`: the folder then holds what this code makes, and
/// nothing is deleted.
pub(crate) fn set_aside_unmade_output(dir: &Path, path: &Path) -> Result<()> {
    set_aside(
        dir,
        path,
        NO_LONGER_MADE,
        "no longer made by this dptune's report",
    )
}

/// Moves `path` to `dir/superseded/<folder>/` under a free name, saying `why` on stderr.
fn set_aside(dir: &Path, path: &Path, folder: &str, why: &str) -> Result<()> {
    let aside = dir.join(SUPERSEDED).join(folder);
    std::fs::create_dir_all(&aside).map_err(|e| Error::io(&aside, e))?;
    let to = rename_free(path, &aside.join(path.file_name().unwrap_or_default()))?;
    eprintln!("{}: {why}: moved to {}", path.display(), to.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_this_hosts_dead_temporaries_are_taken_for_dead() {
        let host = hostname();
        let me = std::process::id();
        // A pid above any kernel's pid_max is never alive.
        let dead = 4_999_999_999u64;
        assert!(temporary_name("a.parquet").ends_with(&format!(".{host}~{me}.tmp")));
        assert!(!is_dead_temporary(&temporary_name("a.parquet")));
        assert!(is_dead_temporary(&format!(".a.parquet.{host}~{dead}.tmp")));
        assert!(!is_dead_temporary(&format!(
            ".a.parquet.{host}x~{dead}.tmp"
        )));
        assert!(is_dead_temporary(&format!(".a.parquet.{dead}.tmp")));
        assert!(!is_dead_temporary(&format!(".a.parquet.{me}.tmp")));
        assert!(!is_dead_temporary("a.parquet"));
    }
}
