//! Where results come from: the code a study kind depends on (its fingerprint, made by
//! `build.rs`), the commit and toolchain dptune was built with, the machine and the run.
//!
//! A kind's fingerprint hashes every source file its results can depend on (what its file
//! reaches through module paths, transitively; see `build.rs`) and `Cargo.lock`. Results
//! whose manifest carries another fingerprint, or none, are *stale*: `sim run` says so and
//! keeps them, `sim run --rerun-stale` regenerates them, `sim status` lists them.

use serde_json::{json, Value};
use std::time::{SystemTime, UNIX_EPOCH};

include!(concat!(env!("OUT_DIR"), "/code_fingerprints.rs"));

/// The commit dptune was built from ("unknown" outside a git checkout).
pub const COMMIT: &str = env!("DPTUNE_GIT_COMMIT");
/// Whether the built sources differed from that commit.
pub const DIRTY: &str = env!("DPTUNE_GIT_DIRTY");
pub const RUSTC: &str = env!("DPTUNE_RUSTC_VERSION");

/// The code a study kind's results depend on.
#[derive(Clone, Copy, Debug)]
pub struct Code {
    pub fingerprint: &'static str,
    /// Each source file with its hash.
    pub files: &'static [(&'static str, &'static str)],
}

impl Code {
    /// The code of the kind defined in `source` (its `file!()`), or of the whole harness for
    /// a kind defined outside `src/sim/` (the strictest choice: any harness change).
    pub fn of(source: &str) -> Code {
        let source = source.replace('\\', "/");
        let find = |f: &str| FINGERPRINTS.iter().find(|(s, _, _)| *s == f);
        let (_, fingerprint, files) = find(&source)
            .or_else(|| find("src/sim/studies/mod.rs"))
            .expect("build.rs fingerprints the study registry");
        Code { fingerprint, files }
    }

    /// The manifest's record of this code.
    pub fn record(&self) -> Value {
        let files: serde_json::Map<String, Value> = self
            .files
            .iter()
            .map(|(f, h)| (f.to_string(), json!(h)))
            .collect();
        json!({
            "fingerprint": self.fingerprint,
            "dptune": env!("CARGO_PKG_VERSION"),
            "commit": COMMIT,
            "dirty": DIRTY == "true",
            "files": files,
        })
    }

    /// How results recorded with `recorded` (a manifest's `code`) differ from this code: None
    /// when they were made by the same code, else the reason, naming the files that changed.
    pub fn staleness(&self, recorded: Option<&Value>) -> Option<String> {
        let Some(rec) = recorded.filter(|r| r["fingerprint"].is_string()) else {
            return Some("made before dptune recorded the code behind its results".into());
        };
        if rec["fingerprint"].as_str() == Some(self.fingerprint) {
            return None;
        }
        let theirs = rec["files"].as_object();
        let mut changed = Vec::new();
        for (f, h) in self.files {
            match theirs.and_then(|t| t.get(*f)).and_then(Value::as_str) {
                Some(old) if old == *h => {}
                Some(_) => changed.push(format!("{f} changed")),
                None => changed.push(format!("{f} is new to it")),
            }
        }
        if let Some(t) = theirs {
            for f in t.keys() {
                if !self.files.iter().any(|(g, _)| g == f) {
                    changed.push(format!("{f} no longer used"));
                }
            }
        }
        let shown = changed.len().min(4);
        let more = match changed.len() - shown {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        Some(format!(
            "made by other code (commit {}{}): {}{more}",
            short(rec["commit"].as_str().unwrap_or("unknown")),
            if rec["dirty"] == json!(true) {
                ", modified"
            } else {
                ""
            },
            if changed.is_empty() {
                "its files hash differently".to_string()
            } else {
                changed[..shown].join(", ")
            }
        ))
    }
}

/// The first 10 hex digits of a commit.
pub fn short(commit: &str) -> &str {
    &commit[..commit.len().min(10)]
}

/// The CPU's model name (Linux), or "unknown".
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// The OpenBLAS kernels in use (`openblas_get_corename`: Haswell, SkylakeX, Zen, …).
pub fn openblas_core() -> String {
    extern "C" {
        fn openblas_get_corename() -> *const std::os::raw::c_char;
    }
    // SAFETY: OpenBLAS returns a pointer to a static NUL-terminated string.
    unsafe {
        let p = openblas_get_corename();
        if p.is_null() {
            return "unknown".into();
        }
        std::ffi::CStr::from_ptr(p)
            .to_string_lossy()
            .trim()
            .to_string()
    }
}

/// The machine's host name ("" when it cannot be read).
pub fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

/// Seconds since the Unix epoch.
pub fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// `secs` since the epoch as UTC, `2026-11-26T20:14:41Z`.
pub fn utc(secs: f64) -> String {
    let s = secs.max(0.0) as i64;
    let (days, rem) = (s.div_euclid(86_400), s.rem_euclid(86_400));
    // Howard Hinnant's civil-from-days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// One process's share of a run: who ran which units, where, how, and for how long.
pub fn run_record(threads: usize, shard: &str, started: f64, units: usize) -> Value {
    let finished = now();
    json!({
        "commit": COMMIT,
        "dirty": DIRTY == "true",
        "rustc": RUSTC,
        "host": host(),
        "cpu": cpu_model(),
        "openblas_core": openblas_core(),
        "threads": threads,
        "shard": shard,
        "started": utc(started),
        "finished": utc(finished),
        "wall_s": round_ms(finished - started),
        "units": units,
    })
}

/// Seconds to the millisecond (timings are reported, never compared).
pub fn round_ms(s: f64) -> f64 {
    (s * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_matches_known_dates() {
        assert_eq!(utc(0.0), "1970-01-01T00:00:00Z");
        // date -u -d @1795724081
        assert_eq!(utc(1_795_724_081.0), "2026-11-26T20:14:41Z");
        // A leap day: date -u -d @951782400
        assert_eq!(utc(951_782_400.0), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn every_study_kind_has_a_fingerprint_of_its_own_files() {
        for kind in super::super::studies::STUDIES {
            let code = Code::of(kind.source);
            assert!(
                code.files.iter().any(|(f, _)| *f == kind.source),
                "{}: its own file {} is not hashed",
                kind.name,
                kind.source
            );
            assert!(code.files.iter().any(|(f, _)| *f == "Cargo.lock"));
        }
        // The tuning study reaches every tuner through the registry.
        let tuning = Code::of(super::super::studies::tuning::KIND.source);
        assert!(tuning
            .files
            .iter()
            .any(|(f, _)| *f == "src/tuners/naive.rs"));
        // Drawing-only files and the commands around the runner are part of no fingerprint.
        for kind in super::super::studies::STUDIES {
            let code = Code::of(kind.source);
            for outside in [
                "src/sim/plot.rs",
                "src/sim/status.rs",
                "src/sim/verify.rs",
                "src/cli.rs",
            ] {
                assert!(
                    !code.files.iter().any(|(f, _)| *f == outside),
                    "{} reaches {outside}",
                    kind.name
                );
            }
        }
    }

    #[test]
    fn staleness_names_the_changed_files() {
        let code = Code::of(super::super::studies::tuning::KIND.source);
        assert_eq!(code.staleness(Some(&code.record())), None);
        assert!(code
            .staleness(None)
            .unwrap()
            .contains("before dptune recorded"));
        let mut old = code.record();
        old["fingerprint"] = json!("0000000000000000");
        old["files"]["src/tuners/naive.rs"] = json!("0000000000000000");
        let why = code.staleness(Some(&old)).unwrap();
        assert!(why.contains("src/tuners/naive.rs changed"), "{why}");
    }
}
