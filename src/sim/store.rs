//! A results folder `<out>/<experiment>/` and what keeps it safe: checksummed parts, the
//! manifest, the lock, and moving an earlier configuration's results aside.
//!
//! * A part is `parts/<unit hash>-<checksum>.parquet`, written atomically (a hidden temporary
//!   file, then a rename). On resume a part counts only when its bytes still hash to the
//!   checksum in its name; a damaged part is set aside (`.damaged`) and its unit recomputed.
//! * A unit that journals its progress keeps `parts/<unit hash>-journal.jsonl` (one record a
//!   line, appended as made) until its part is written; it moves with the parts.
//! * `manifest.json` records the experiment, its profile, the configuration hash, whether the
//!   run is complete, the checksums of the merged tables and every file dptune wrote here.
//! * `.lock.<host>.<pid>` files: any number of runs of one configuration (shards) may share a
//!   folder; a run of another configuration is refused while one is alive.
//! * When the configuration changes, the files the manifest lists (all entries, for a manifest
//!   of an older dptune) move to `superseded/<profile>-<hash>/`; they come back if that
//!   configuration runs again. Nothing is deleted; a file dptune did not write stays put, and
//!   one that has an output's name (a link included) moves to `superseded/user-files/` before
//!   the output is written ([`keep_user_file`]), said on stderr.

use super::fields::fnv1a;
use super::output::{
    append, hostname, is_dead_temporary, pid_alive, read_limited, read_text_limited, write_text,
    MAX_DATA_BYTES, MAX_RECORD_BYTES,
};
use super::provenance::{self, Code};
use crate::error::{Error, Result};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

pub use super::output::SUPERSEDED;
use super::output::{rename_free, set_aside_user_file, MANIFEST};
const PARTS: &str = "parts";

/// 64-bit FNV-1a of a file's bytes, as 16 hex digits.
fn checksum_of(bytes: &[u8]) -> String {
    format!("{:016x}", fnv1a(bytes))
}

/// The checksum of the file at `path`, or None when it cannot be read (none there, a link, or
/// larger than any table dptune reads).
pub fn file_checksum(path: &Path) -> Option<String> {
    read_limited(path, MAX_DATA_BYTES)
        .ok()
        .flatten()
        .map(|b| checksum_of(&b))
}

/// The part files of the unit with key `key`.
pub struct Parts {
    dir: PathBuf,
}

impl Parts {
    pub fn open(results: &Path) -> Result<Parts> {
        let dir = results.join(PARTS);
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        remove_stale_temporaries(&dir);
        Ok(Parts { dir })
    }

    /// How many of `keys` have a part in `results` (by name; nothing is read or changed).
    pub fn count_present(results: &Path, keys: &[String]) -> usize {
        let names: Vec<String> = std::fs::read_dir(results.join(PARTS))
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().to_string())
                    .filter(|n| n.ends_with(".parquet"))
                    .collect()
            })
            .unwrap_or_default();
        keys.iter()
            .filter(|k| names.iter().any(|n| n.starts_with(&Self::prefix(k))))
            .count()
    }

    fn prefix(key: &str) -> String {
        format!("{:016x}-", fnv1a(key.as_bytes()))
    }

    /// The verified part of `key`, if any. A part whose bytes no longer match its checksum is
    /// renamed `<name>.damaged` (and reported), so the unit runs again.
    pub fn find(&self, key: &str) -> Option<PathBuf> {
        let prefix = Self::prefix(key);
        let entries = std::fs::read_dir(&self.dir).ok()?;
        let mut found = None;
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            let Some(sum) = name
                .strip_prefix(&prefix)
                .and_then(|r| r.strip_suffix(".parquet"))
            else {
                continue;
            };
            if file_checksum(&e.path()).as_deref() == Some(sum) {
                found = Some(e.path());
            } else {
                let aside = self.dir.join(format!("{name}.damaged"));
                eprintln!(
                    "{}: damaged (checksum mismatch): set aside as {}, its unit runs again",
                    e.path().display(),
                    aside.display()
                );
                let _ = std::fs::rename(e.path(), aside);
            }
        }
        found
    }

    /// Writes the part of `key` atomically; its name carries the checksum of its bytes.
    pub fn write(&self, key: &str, table: &super::table::Table) -> Result<()> {
        let stem = self.dir.join(format!("{}.parquet", Self::prefix(key)));
        let bytes = table.parquet_bytes(&stem)?;
        let path = self.dir.join(format!(
            "{}{}.parquet",
            Self::prefix(key),
            checksum_of(&bytes)
        ));
        super::output::write_bytes(&path, &bytes)
    }
}

/// Per-unit wall times (`parts/timings.jsonl`: each unit's span from start to end, which
/// includes any other units' work its thread ran while waiting on the unit's own parallel
/// parts, so spans overlap and do not add up) and one record per process that ran units
/// (`parts/runs.jsonl`): appended line by line, so shards sharing the folder never overwrite
/// each other; summarised into the manifest when the run completes.
const TIMINGS: &str = "timings.jsonl";
const RUNS: &str = "runs.jsonl";

impl Parts {
    /// Records that unit `key` took `secs` seconds.
    pub fn record_time(&self, key: &str, secs: f64) -> Result<()> {
        append_line(
            &self.dir.join(TIMINGS),
            &json!({"unit": key, "wall_s": provenance::round_ms(secs)}),
        )
    }

    /// Records one process's run (`provenance::run_record`).
    pub fn record_run(&self, record: &Value) -> Result<()> {
        append_line(&self.dir.join(RUNS), record)
    }

    /// The manifest's `provenance`: every run, their wall times, and the number of units with
    /// the longest unit span (the last time of each unit counts, for a unit that ran again).
    pub fn provenance(&self) -> Value {
        let lines = |name: &str| -> Vec<Value> {
            // Lines this process and its shards appended; an unreadable file records nothing.
            read_text_limited(&self.dir.join(name), MAX_RECORD_BYTES)
                .ok()
                .flatten()
                .unwrap_or_default()
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect()
        };
        let runs = lines(RUNS);
        let mut units: std::collections::BTreeMap<String, f64> = Default::default();
        for t in lines(TIMINGS) {
            if let (Some(u), Some(s)) = (t["unit"].as_str(), t["wall_s"].as_f64()) {
                units.insert(u.to_string(), s);
            }
        }
        let longest = units
            .iter()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .map(|(u, s)| json!({"unit": u, "wall_s": s}));
        let r = provenance::round_ms;
        json!({
            "wall_s": r(runs.iter().filter_map(|x| x["wall_s"].as_f64()).sum()),
            "unit_wall_s": {
                "units": units.len(),
                "longest_span": longest,
            },
            "runs": runs,
        })
    }
}

fn append_line(path: &Path, record: &Value) -> Result<()> {
    append(path, format!("{record}\n").as_bytes())
}

impl Parts {
    /// The journal of unit `key` (see [`Journal`]), with the records an earlier attempt left.
    /// `stop_after`: the testing aid that exits the process, as a kill would, once it has
    /// written that many records.
    pub fn journal(&self, key: &str, stop_after: Option<u64>) -> Result<Journal> {
        let path = self.dir.join(format!("{}journal.jsonl", Self::prefix(key)));
        Journal::open(path, stop_after)
    }
}

/// Journal records this process has written (for the `stop_after` testing aid).
static JOURNALED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// What a long unit has computed so far, one JSON record per line, kept beside the parts (and
/// moved with them when its configuration is superseded), so that a unit cut short by a time
/// limit or a kill resumes from its last record instead of from nothing. A record is written
/// whole with one append (a killed process leaves it in the system's file cache; after a
/// machine crash the last ones may be lost, and a torn line is dropped when the journal is
/// opened); the journal is removed once its unit's part is written.
pub struct Journal {
    /// None: a unit run outside the harness, which records nothing.
    path: Option<PathBuf>,
    records: Vec<serde_json::Value>,
    stop_after: Option<u64>,
}

/// A journal line: the record's FNV-1a checksum (16 hex digits), a space, the record's JSON.
/// FNV-1a changes with any one changed byte (each step is a bijection), so a flipped bit in a
/// record is always caught.
pub fn checked_line(record: &Value) -> String {
    let json = record.to_string();
    format!("{:016x} {json}\n", fnv1a(json.as_bytes()))
}

/// The record of a journal line (without its newline) whose checksum holds (written exactly
/// as [`checked_line`] writes it: 16 lower-case hex digits).
pub fn checked_record(line: &str) -> Option<Value> {
    let (sum, json) = line.split_once(' ')?;
    (sum == format!("{:016x}", fnv1a(json.as_bytes())))
        .then(|| serde_json::from_str(json).ok())
        .flatten()
}

impl Journal {
    /// A journal that keeps nothing.
    pub fn none() -> Journal {
        Journal {
            path: None,
            records: Vec::new(),
            stop_after: None,
        }
    }

    fn open(path: PathBuf, stop_after: Option<u64>) -> Result<Journal> {
        let text = read_text_limited(&path, MAX_DATA_BYTES)?.unwrap_or_default();
        let mut records = Vec::new();
        let mut clean = 0;
        for line in text.split_inclusive('\n') {
            match line.strip_suffix('\n').and_then(checked_record) {
                Some(v) => {
                    records.push(v);
                    clean += line.len();
                }
                None => break,
            }
        }
        if clean < text.len() {
            let lines = text.lines().count();
            if records.len() + 1 < lines {
                // Not just a torn last line: a record was damaged after it was written.
                eprintln!(
                    "{}: record {} of {lines} fails its checksum or does not parse; it and the \
                     {} after it are dropped and recomputed",
                    path.display(),
                    records.len() + 1,
                    lines - records.len() - 1
                );
            }
        }
        let mut journal = Journal {
            path: Some(path),
            records,
            stop_after,
        };
        if clean < text.len() {
            // A torn, damaged or unreadable tail: keep the records before it, so appends start
            // clean.
            journal.truncate(journal.records.len())?;
        }
        Ok(journal)
    }

    /// The records so far, oldest first.
    pub fn records(&self) -> &[serde_json::Value] {
        &self.records
    }

    /// Appends a record (one write of the whole line).
    pub fn append(&mut self, record: serde_json::Value) -> Result<()> {
        if let Some(path) = &self.path {
            append(path, checked_line(&record).as_bytes())?;
            let n = JOURNALED.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            if self.stop_after.is_some_and(|stop| n >= stop) {
                std::process::exit(137);
            }
        }
        self.records.push(record);
        Ok(())
    }

    /// Keeps the first `keep` records only (a resumed unit that went another way from there).
    pub fn truncate(&mut self, keep: usize) -> Result<()> {
        self.records.truncate(keep);
        if let Some(path) = &self.path {
            let text: String = self.records.iter().map(checked_line).collect();
            write_text(path, &text)?;
        }
        Ok(())
    }

    /// Deletes the journal (its unit's part is written).
    pub fn remove(self) {
        if let Some(path) = self.path {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Removes temporary files left by killed processes of this host, never a live one's nor
/// another host's.
fn remove_stale_temporaries(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if is_dead_temporary(&e.file_name().to_string_lossy()) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// A lock held while a run writes a results folder (released on drop).
pub struct Lock {
    path: PathBuf,
}

impl Lock {
    /// Takes a lock on `dir` for configuration `hash`. Refused while a live run of another
    /// configuration holds one; a lock of a dead process on this host is removed.
    pub fn acquire(dir: &Path, hash: &str) -> Result<Lock> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let host = hostname();
        let mine = dir.join(format!(".lock.{host}.{}", std::process::id()));
        write_text(&mine, hash)?;
        let lock = Lock { path: mine };
        // Checked after writing our own, so two runs starting together see each other.
        for e in std::fs::read_dir(dir)
            .map_err(|e| Error::io(dir, e))?
            .flatten()
        {
            let name = e.file_name().to_string_lossy().to_string();
            if e.path() == lock.path {
                continue;
            }
            let Some(rest) = name.strip_prefix(".lock.") else {
                continue;
            };
            let (their_host, pid) = rest.rsplit_once('.').unwrap_or((rest, ""));
            if their_host == host && !pid_alive(pid) {
                let _ = std::fs::remove_file(e.path());
                continue;
            }
            let theirs = read_text_limited(&e.path(), MAX_RECORD_BYTES)
                .ok()
                .flatten()
                .unwrap_or_default();
            if theirs.trim() != hash {
                return Err(Error::results(
                    dir,
                    format!(
                        "another dptune run (process {pid} on {}) is writing results of a \
                         different configuration here; wait for it to finish, or use another \
                         --out (if that run is gone, delete {})",
                        if their_host.is_empty() {
                            "an unknown host"
                        } else {
                            their_host
                        },
                        e.path().display()
                    ),
                ));
            }
        }
        Ok(lock)
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The manifest of a results folder.
#[derive(Clone, Debug, Default)]
pub struct Manifest {
    pub value: Value,
}

impl Manifest {
    /// The manifest of `dir`, None when there is none. One that cannot be dptune's (empty, not
    /// JSON, not an object, a link, too large) is an error naming the file: dptune writes it
    /// whole, so it was changed since, and it is never taken for "no results".
    pub fn read(dir: &Path) -> Result<Option<Manifest>> {
        let path = dir.join(MANIFEST);
        let Some(text) = read_text_limited(&path, MAX_RECORD_BYTES)? else {
            return Ok(None);
        };
        let what = match serde_json::from_str::<Value>(&text) {
            Ok(value) if value.is_object() => return Ok(Some(Manifest { value })),
            _ if text.trim().is_empty() => "it is empty".to_string(),
            Ok(_) => "it is JSON but not an object".to_string(),
            Err(e) => format!("it is not JSON ({e})"),
        };
        Err(Error::results(
            &path,
            format!(
                "damaged: {what}; dptune writes its manifests whole, so this one was changed \
                 since (restore it, e.g. with git, or move it away: a run then sets these results \
                 aside and starts again)"
            ),
        ))
    }

    pub fn new(experiment: &super::Experiment, code: &Code) -> Manifest {
        Manifest {
            value: json!({
                "experiment": experiment.name,
                "title": experiment.title,
                "file": experiment.file.display().to_string(),
                "profile": experiment.profile.name(),
                "kind": experiment.kind.name,
                "config_hash": hash_text(experiment.config_hash),
                "dptune": env!("CARGO_PKG_VERSION"),
                "code": code.record(),
                "complete": false,
                "tables": {},
                "files": [],
            }),
        }
    }

    /// Writes the manifest, unless the file already says exactly this (a report that drew
    /// the same files leaves it untouched).
    pub fn write(&self, dir: &Path) -> Result<()> {
        let text = format!(
            "{}\n",
            serde_json::to_string_pretty(&self.value).unwrap_or_default()
        );
        let path = dir.join(MANIFEST);
        if read_text_limited(&path, MAX_RECORD_BYTES).is_ok_and(|t| t.as_deref() == Some(&text)) {
            return Ok(());
        }
        write_text(&path, &text)
    }

    /// Where these results go when set aside: `superseded/<profile>-<hash>-<code>/`.
    fn aside(&self, dir: &Path) -> PathBuf {
        dir.join(SUPERSEDED).join(format!(
            "{}-{}-{}",
            self.str("profile").unwrap_or("unknown"),
            self.str("config_hash").unwrap_or("unknown"),
            self.value["code"]["fingerprint"]
                .as_str()
                .unwrap_or("unknown")
        ))
    }

    pub fn str(&self, key: &str) -> Option<&str> {
        self.value[key].as_str()
    }

    /// Written by a dptune before the runner recorded completion and checksums.
    pub fn is_legacy(&self) -> bool {
        self.value.get("complete").is_none()
    }

    /// Written by a dptune that lists what it wrote (older manifests do not).
    fn lists_files(&self) -> bool {
        self.value["files"].is_array()
    }

    pub fn files(&self) -> Vec<String> {
        super::output::listed_files(&self.value).unwrap_or_default()
    }

    /// Sets aside the listed report outputs (tables and figures, not the merged `tables`) that
    /// the report which just wrote `made` no longer makes, and drops them from the list.
    pub fn retire_unmade(&mut self, dir: &Path, made: &[PathBuf], tables: &[&str]) -> Result<()> {
        let made: Vec<String> = made
            .iter()
            .map(|f| f.strip_prefix(dir).unwrap_or(f).display().to_string())
            .collect();
        let mut kept = Vec::new();
        for f in self.files() {
            let report_output = [".md", ".tex", ".png", ".svg"]
                .iter()
                .any(|ext| f.ends_with(ext));
            if !report_output || made.contains(&f) || tables.contains(&f.as_str()) {
                kept.push(f);
                continue;
            }
            let path = dir.join(&f);
            if path.symlink_metadata().is_ok() {
                super::output::set_aside_unmade_output(dir, &path)?;
            }
        }
        self.value["files"] = json!(kept);
        Ok(())
    }

    /// Records files written in the folder (names relative to it).
    pub fn add_files(&mut self, dir: &Path, files: &[PathBuf]) {
        let mut all = self.files();
        for f in files {
            let rel = f.strip_prefix(dir).unwrap_or(f).display().to_string();
            if !all.contains(&rel) {
                all.push(rel);
            }
        }
        all.sort();
        self.value["files"] = json!(all);
    }

    /// Marks the run complete, with the checksum of each merged table.
    pub fn complete(&mut self, dir: &Path, tables: &[&str]) {
        self.value["complete"] = json!(true);
        for t in tables {
            self.value["tables"][*t] = json!(file_checksum(&dir.join(t)));
        }
        let names: Vec<PathBuf> = tables.iter().map(|t| dir.join(t)).collect();
        self.add_files(dir, &names);
    }

    /// Whether the run is complete and every merged table is intact. A manifest of an older
    /// dptune (no checksums) counts as complete when the tables exist.
    pub fn intact(&self, dir: &Path, tables: &[&str]) -> bool {
        if self.is_legacy() {
            return tables.iter().all(|t| dir.join(t).is_file());
        }
        self.value["complete"] == json!(true)
            && tables.iter().all(|t| {
                self.value["tables"][*t].as_str().is_some()
                    && self.value["tables"][*t].as_str().map(String::from)
                        == file_checksum(&dir.join(t))
            })
    }
}

pub fn hash_text(hash: u64) -> String {
    format!("{hash:016x}")
}

/// What [`prepare`] found: the manifest to continue with and, when complete results made by
/// other code are kept (no `--rerun-stale`), why they are stale.
pub struct Prepared {
    pub manifest: Manifest,
    pub stale: Option<String>,
}

/// Makes `dir` hold results of `experiment`, made by `code`, only. Results of another
/// configuration move to `superseded/<profile>-<hash>-<code>/` (said on stderr); results of
/// this configuration and code set aside earlier come back. Results of this configuration
/// made by other code (or by a dptune that did not record its code) are kept when complete,
/// and reported stale, unless `rerun_stale`; unfinished ones are always moved aside, so parts
/// of two codes are never merged.
pub fn prepare(
    dir: &Path,
    experiment: &super::Experiment,
    code: &Code,
    tables: &[&str],
    rerun_stale: bool,
) -> Result<Prepared> {
    let hash = hash_text(experiment.config_hash);
    // A manifest dptune cannot read (damaged, a link) is taken for a file of the user's: set
    // aside below, with what it held.
    if let Some(m) = Manifest::read(dir).unwrap_or(None) {
        let same_config = m.str("config_hash") == Some(hash.as_str());
        let stale = code.staleness(m.value.get("code"));
        match (same_config, stale) {
            (true, None) => {
                return Ok(Prepared {
                    manifest: m,
                    stale: None,
                })
            }
            (true, Some(why)) if !rerun_stale && m.intact(dir, tables) => {
                return Ok(Prepared {
                    manifest: m,
                    stale: Some(why),
                })
            }
            (true, Some(why)) => {
                let aside = m.aside(dir);
                move_results(dir, &aside, &m)?;
                eprintln!(
                    "{}: these results were {why}: moved to {}; regenerating",
                    dir.display(),
                    aside.display()
                );
            }
            (false, _) => {
                let aside = m.aside(dir);
                move_results(dir, &aside, &m)?;
                eprintln!(
                    "{}: these results are of another configuration (profile {}, an edited \
                     file, or another experiment): moved to {}",
                    dir.display(),
                    m.str("profile").unwrap_or("?"),
                    aside.display()
                );
            }
        }
    } else {
        // A manifest.json that is not one of dptune's is the user's file.
        if dir.join(MANIFEST).symlink_metadata().is_ok() {
            set_aside_user_file(dir, &dir.join(MANIFEST))?;
        }
        if dir.join(PARTS).exists() {
            // Parts without a manifest cannot be attributed: set aside, never mixed in.
            let aside = dir.join(SUPERSEDED).join("unknown");
            std::fs::create_dir_all(&aside).map_err(|e| Error::io(&aside, e))?;
            rename_free(&dir.join(PARTS), &aside.join(PARTS))?;
        }
    }
    let earlier = dir.join(SUPERSEDED).join(format!(
        "{}-{hash}-{}",
        experiment.profile.name(),
        code.fingerprint
    ));
    if let Some(m) = Manifest::read(&earlier)? {
        move_results(&earlier, dir, &m)?;
        let _ = std::fs::remove_dir(&earlier);
        eprintln!(
            "{}: restored this configuration's earlier results from {}",
            dir.display(),
            earlier.display()
        );
        return Ok(Prepared {
            manifest: m,
            stale: None,
        });
    }
    let m = Manifest::new(experiment, code);
    m.write(dir)?;
    Ok(Prepared {
        manifest: m,
        stale: None,
    })
}

/// Moves what `m` says dptune wrote in `from` (every entry but `superseded/` and locks, for an
/// older manifest), the parts and the manifest itself, into `to`.
fn move_results(from: &Path, to: &Path, m: &Manifest) -> Result<()> {
    std::fs::create_dir_all(to).map_err(|e| Error::io(to, e))?;
    let names: Vec<String> = if m.lists_files() {
        let mut n = m.files();
        n.push(PARTS.into());
        n.push(MANIFEST.into());
        n
    } else {
        std::fs::read_dir(from)
            .map_err(|e| Error::io(from, e))?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().to_string())
            .filter(|n| n != SUPERSEDED && !n.starts_with(".lock."))
            .collect()
    };
    for n in names {
        let src = from.join(&n);
        if src.exists() {
            let dst = to.join(&n);
            if let Some(parent) = dst.parent() {
                std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
            }
            rename_free(&src, &dst)?;
        }
    }
    Ok(())
}
