//! Runs that share a results folder: which units of a study are still missing there (read
//! only), and the lock that keeps two runs from computing the same units at once.
//!
//! Both live in the command line, not in `sim/`, so that adding them left every committed
//! result's code fingerprint as it was; they read the folder through the runner's public
//! layout: a unit's part is `parts/<FNV-1a of its key, 16 hex digits>-<FNV-1a checksum of the
//! file's bytes>.parquet` (`sim::store::Parts`).

use crate::error::{Error, Result};
use crate::sim::output::{open_regular, read_text_limited, MAX_RECORD_BYTES};
use crate::sim::provenance::Code;
use crate::sim::store::{file_checksum, hash_text, Manifest};
use crate::sim::{results_dir, Experiment, Shard};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Where an experiment's units stand in a results folder.
pub(super) struct Presence {
    /// The study's units, in the runner's order.
    pub total: usize,
    /// The units without an intact part of this configuration and code (index, key), in the
    /// runner's order; empty when the results are merged.
    pub missing: Vec<(usize, String)>,
    /// Whether the merged tables are there and intact (the manifest says complete and their
    /// checksums hold).
    pub merged: bool,
    /// Why every unit counts as missing (another configuration's results, other code's
    /// parts), or that merged results are stale.
    pub note: Option<String>,
}

/// Which units of `exp` are missing under `out`: the units a run would compute. Reads only.
/// A part counts when its name is the unit's and its bytes still hash to the checksum in its
/// name; parts of another configuration or (unmerged) of other code count for nothing, since a
/// run sets them aside.
pub(super) fn presence(exp: &Experiment, out: &Path) -> Result<Presence> {
    let dir = results_dir(out, exp);
    let study = exp.study.as_ref();
    let units = study.units();
    let mut tables = vec![study.output()];
    tables.extend(study.derived());
    let all = |note: String| Presence {
        total: units.len(),
        missing: units.iter().cloned().enumerate().collect(),
        merged: false,
        note: Some(note),
    };
    let Some(m) = Manifest::read(&dir)? else {
        return Ok(all(format!("no results yet in {}", dir.display())));
    };
    if m.str("config_hash") != Some(hash_text(exp.config_hash).as_str()) {
        return Ok(all(format!(
            "{} holds results of another configuration (set aside when a run starts)",
            dir.display()
        )));
    }
    let stale = Code::of(exp.kind.source).staleness(m.value.get("code"));
    if m.intact(&dir, &tables) {
        return Ok(Presence {
            total: units.len(),
            missing: Vec::new(),
            merged: true,
            note: stale.map(|why| format!("STALE: {why}")),
        });
    }
    if let Some(why) = stale {
        return Ok(all(format!(
            "the unfinished results in {} were {why}: a run sets them aside and starts again",
            dir.display()
        )));
    }
    // Part names by unit-key prefix; a part counts when its checksum holds.
    let parts = dir.join("parts");
    let mut by_prefix: HashMap<String, Vec<String>> = HashMap::new();
    for e in std::fs::read_dir(&parts).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if let Some(stem) = name.strip_suffix(".parquet") {
            if let Some((prefix, sum)) = stem.split_once('-') {
                by_prefix
                    .entry(prefix.to_string())
                    .or_default()
                    .push(sum.to_string());
            }
        }
    }
    let intact = |key: &str| {
        let prefix = format!("{:016x}", crate::sim::fields::fnv1a(key.as_bytes()));
        by_prefix.get(&prefix).is_some_and(|sums| {
            sums.iter().any(|sum| {
                file_checksum(&parts.join(format!("{prefix}-{sum}.parquet"))).as_deref()
                    == Some(sum.as_str())
            })
        })
    };
    Ok(Presence {
        total: units.len(),
        missing: units
            .iter()
            .enumerate()
            .filter(|(_, u)| !intact(u))
            .map(|(i, u)| (i, u.clone()))
            .collect(),
        merged: false,
        note: None,
    })
}

/// The shard (1-based) of `count` that runs unit `index` (0-based): units i with
/// i mod count = I − 1, as `--shard I/N` splits them.
pub(super) fn shard_of(index: usize, count: u64) -> u64 {
    index as u64 % count + 1
}

/// The missing units of each experiment, in words: one line per experiment that is not
/// complete, then one per missing unit (with the array task that runs it when `tasks` is
/// given). Empty when every experiment is merged.
pub(super) fn describe_missing(found: &[(&Experiment, Presence)], tasks: Option<u64>) -> String {
    let mut s = String::new();
    for (exp, p) in found.iter().filter(|(_, p)| !p.merged) {
        if p.missing.is_empty() {
            s += &format!(
                "{}: all {} units present, not merged yet\n",
                exp.name, p.total
            );
            continue;
        }
        s += &format!(
            "{}: {} of {} units missing{}\n",
            exp.name,
            p.missing.len(),
            p.total,
            p.note.as_ref().map_or(String::new(), |n| format!(" ({n})"))
        );
        for (i, unit) in &p.missing {
            s += &match tasks {
                Some(n) => format!(
                    "  missing: {unit} (unit {}, shard {}/{n})\n",
                    i + 1,
                    shard_of(*i, n)
                ),
                None => format!("  missing: {unit} (unit {})\n", i + 1),
            };
        }
    }
    s
}

/// The lock a run holds on a results folder while it computes and merges units: a file
/// `.shard-I-of-N.lock` locked with `flock`, so that the kernel (or, on NFS, the server)
/// releases it when its process ends however it ends, and a lock left by a dead node or a
/// cancelled job never blocks a later run. Runs that write one folder at once must be shards
/// of one split, each its own: a second run of the same shard, or a run of another split
/// (whose units overlap), is refused while the first holds its lock.
pub(super) struct ShardLock {
    path: PathBuf,
    #[allow(dead_code)] // held for its lock; closing it releases the lock
    file: std::fs::File,
}

fn lock_name(shard: Shard) -> String {
    format!(".shard-{}-of-{}.lock", shard.index, shard.count)
}

fn parse_lock_name(name: &str) -> Option<Shard> {
    let rest = name.strip_prefix(".shard-")?.strip_suffix(".lock")?;
    let (i, n) = rest.split_once("-of-")?;
    Some(Shard {
        index: i.parse().ok()?,
        count: n.parse().ok()?,
    })
}

/// What `try_lock` found.
enum Locked {
    Yes,
    Busy,
    /// The file system keeps no locks (its error).
    Unsupported(std::io::Error),
}

#[cfg(unix)]
fn try_lock(file: &std::fs::File) -> Locked {
    use std::os::unix::io::AsRawFd;
    // SAFETY: flock on a descriptor this process owns; it changes no memory.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Locked::Yes;
    }
    let e = std::io::Error::last_os_error();
    if e.kind() == std::io::ErrorKind::WouldBlock {
        Locked::Busy
    } else {
        Locked::Unsupported(e)
    }
}

#[cfg(not(unix))]
fn try_lock(_: &std::fs::File) -> Locked {
    Locked::Unsupported(std::io::Error::other("no flock on this system"))
}

/// Whether `file` (open) is still the file at `path`: a lock taken on a file that its holder
/// removed in the meantime does not count.
fn same_file(file: &std::fs::File, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (file.metadata(), std::fs::metadata(path)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (file, path);
        true
    }
}

/// Who holds a lock, as its holder wrote it.
fn holder(path: &Path) -> String {
    let text = read_text_limited(path, MAX_RECORD_BYTES)
        .ok()
        .flatten()
        .unwrap_or_default();
    let text = text.trim();
    if text.is_empty() {
        "another process".into()
    } else {
        text.to_string()
    }
}

/// Who this process is, for the lock file: host, process id, Slurm job.
fn whoami() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "an unknown host".into());
    let job = match (
        std::env::var("SLURM_ARRAY_JOB_ID"),
        std::env::var("SLURM_ARRAY_TASK_ID"),
        std::env::var("SLURM_JOB_ID"),
    ) {
        (Ok(a), Ok(t), _) => format!(", Slurm job {a}_{t}"),
        (_, _, Ok(j)) => format!(", Slurm job {j}"),
        _ => String::new(),
    };
    format!("process {} on {host}{job}", std::process::id())
}

static WARNED: std::sync::Once = std::sync::Once::new();

impl ShardLock {
    /// Locks `dir` (created if missing) for a run of `shard` of `exp`. Refused, naming the
    /// holder, while a live run of the same shard or of another split holds a lock there.
    /// On a file system without locks: a warning on stderr, and no lock (None).
    pub(super) fn acquire(dir: &Path, shard: Shard, exp: &str) -> Result<Option<ShardLock>> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let path = dir.join(lock_name(shard));
        let shard_text = format!("{}/{}", shard.index, shard.count);
        let mut tries = 0;
        let file = loop {
            // Never through a link: the lock is truncated once held.
            let file = open_regular(
                &path,
                std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(false),
            )?
            .ok_or_else(|| Error::io(&path, "vanished as it was created"))?;
            match try_lock(&file) {
                Locked::Yes if same_file(&file, &path) => break file,
                // Its holder removed it as we opened it: try the new one.
                Locked::Yes | Locked::Busy if tries < 20 && !same_file(&file, &path) => {
                    tries += 1;
                    continue;
                }
                Locked::Yes => {
                    return Err(Error::results(
                        dir,
                        "cannot lock this folder: its lock file keeps changing",
                    ));
                }
                Locked::Busy => {
                    return Err(Error::results(
                        dir,
                        format!(
                            "shard {shard_text} of `{exp}` is already being run here by {}: two \
                             runs of the same units at once are refused (wait for it to end, or \
                             cancel it, then run again: finished units are kept)",
                            holder(&path)
                        ),
                    ));
                }
                Locked::Unsupported(e) => {
                    WARNED.call_once(|| {
                        eprintln!(
                            "warning: {}: this file system keeps no file locks ({e}): nothing \
                             stops two runs of the same units at once here; make sure only one \
                             array or run writes this folder at a time",
                            dir.display()
                        )
                    });
                    return Ok(None);
                }
            }
        };
        let lock = ShardLock { path, file };
        {
            use std::io::Write;
            let mut f = &lock.file;
            let _ = f.set_len(0);
            let _ = writeln!(f, "{} (shard {shard_text})", whoami());
        }
        // Runs of another split overlap this one's units: refused while one holds its lock. A
        // lock file nobody holds (its process ended) is removed, under its lock.
        for e in std::fs::read_dir(dir)
            .map_err(|e| Error::io(dir, e))?
            .flatten()
        {
            let name = e.file_name().to_string_lossy().to_string();
            let Some(theirs) = parse_lock_name(&name) else {
                continue;
            };
            // Shards of this split are never probed: a probe holds the lock for a moment, and
            // the array's tasks start together.
            if theirs.count == shard.count {
                continue;
            }
            let Ok(Some(file)) = open_regular(&e.path(), std::fs::OpenOptions::new().read(true))
            else {
                continue;
            };
            match try_lock(&file) {
                Locked::Busy => {
                    return Err(Error::results(
                        dir,
                        format!(
                            "`{exp}` is being run here as shard {}/{} by {}: runs that share a \
                             results folder at once must be shards I/N of one N ({shard_text} is \
                             not), so that no unit runs twice; wait for it to end (or cancel \
                             it), then run again",
                            theirs.index,
                            theirs.count,
                            holder(&e.path())
                        ),
                    ));
                }
                Locked::Yes if same_file(&file, &e.path()) => {
                    let _ = std::fs::remove_file(e.path());
                }
                _ => {}
            }
        }
        Ok(Some(lock))
    }
}

impl Drop for ShardLock {
    fn drop(&mut self) {
        // Removed while still locked: a run that opened it meanwhile sees it is gone.
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_names_round_trip() {
        let s = Shard {
            index: 3,
            count: 16,
        };
        assert_eq!(lock_name(s), ".shard-3-of-16.lock");
        assert_eq!(parse_lock_name(&lock_name(s)), Some(s));
        assert_eq!(parse_lock_name(".lock.vm.123"), None);
        assert_eq!(parse_lock_name(".shard-x-of-2.lock"), None);
    }

    #[test]
    fn units_go_to_the_shards_that_run_them() {
        // --shard I/N runs units i with i mod N = I - 1.
        assert_eq!(
            (0..7).map(|i| shard_of(i, 3)).collect::<Vec<_>>(),
            [1, 2, 3, 1, 2, 3, 1]
        );
        assert_eq!(shard_of(5, 1), 1);
    }

    #[test]
    fn one_shard_one_run_and_one_split_at_a_time() {
        let dir = std::env::temp_dir().join(format!("dptune-shardlock-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let s = |i, n| Shard { index: i, count: n };
        let a = ShardLock::acquire(&dir, s(1, 3), "x").unwrap().unwrap();
        // flock locks belong to an open file: a second acquisition in this process conflicts,
        // as a second process's would.
        let again = ShardLock::acquire(&dir, s(1, 3), "x")
            .err()
            .unwrap()
            .to_string();
        assert!(
            again.contains("shard 1/3 of `x` is already being run here by process"),
            "{again}"
        );
        let b = ShardLock::acquire(&dir, s(2, 3), "x").unwrap().unwrap();
        let other = ShardLock::acquire(&dir, s(1, 2), "x")
            .err()
            .unwrap()
            .to_string();
        assert!(other.contains("must be shards I/N of one N"), "{other}");
        assert!(
            !dir.join(".shard-1-of-2.lock").exists(),
            "a refused run leaves no lock"
        );
        drop((a, b));
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
        assert!(names.is_empty(), "released locks are removed");
        // A lock file whose process ended (here: left behind, unlocked) blocks nothing and is
        // cleaned up by the next run of another split.
        std::fs::write(dir.join(".shard-2-of-5.lock"), "process 1 on gone").unwrap();
        let c = ShardLock::acquire(&dir, s(1, 1), "x").unwrap().unwrap();
        assert!(!dir.join(".shard-2-of-5.lock").exists());
        drop(c);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
