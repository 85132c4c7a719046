//! `dptune sim verify`: regenerate experiments from scratch into a scratch folder and compare
//! them with the committed results, file by file: tables (markdown, LaTeX) byte for byte,
//! parquet value for value (timing columns aside: they are wall-clock times), figures byte for
//! byte. Each experiment's comparison is kept as `<scratch>/<name>/verify.json`, so a long
//! verification runs in pieces (the runs resume) and the summary (`docs/reproducibility.md`)
//! is rebuilt from what is done so far.

use super::output::VERIFICATION as VERIFY;
use super::output::{read_limited, read_text_limited, MAX_DATA_BYTES, MAX_RECORD_BYTES};
use super::table::{is_timing, Table, Values};
use super::{provenance, Experiment};
use crate::error::{Error, Result};
use serde_json::{json, Value};
use std::path::Path;

/// Float cells at most this many units in the last place apart are "last-bit" differences
/// (what another BLAS kernel or summation order makes), reported as such.
pub const LAST_BITS_ULPS: u64 = 1 << 12;

/// How one file of the regenerated results compares with the committed one.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Identical,
    /// Parquet equal value for value except timing columns (which are wall-clock times).
    IdenticalButTiming,
    /// Every float within [`LAST_BITS_ULPS`], everything else equal.
    LastBits {
        max_ulps: u64,
        column: String,
    },
    Differs(String),
    /// A text table that differs only in the cells of these columns, where every parquet
    /// file of the experiment matches but for its timing columns: the table is drawn from
    /// the parquet, so those cells show wall-clock times (e.g. a tuner's overhead).
    TimingCells(Vec<String>),
    /// Only in the committed results.
    NotRegenerated,
    /// Only in the regenerated results.
    NotCommitted,
}

impl Outcome {
    pub fn matches(&self) -> bool {
        matches!(
            self,
            Outcome::Identical | Outcome::IdenticalButTiming | Outcome::TimingCells(_)
        )
    }

    pub fn describe(&self) -> String {
        match self {
            Outcome::Identical => "identical".into(),
            Outcome::IdenticalButTiming => {
                "identical value for value (timing columns are wall-clock times)".into()
            }
            Outcome::LastBits { max_ulps, column } => {
                format!("last-bit differences only (at most {max_ulps} ulps, in `{column}`)")
            }
            Outcome::Differs(why) => format!("differs: {why}"),
            Outcome::TimingCells(columns) => format!(
                "identical but for the wall-clock cells of {} (drawn from the parquet's timing \
                 columns; every parquet file matches)",
                columns
                    .iter()
                    .map(|c| format!("`{c}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Outcome::NotRegenerated => "committed, not written by the regeneration".into(),
            Outcome::NotCommitted => "written by the regeneration, not committed".into(),
        }
    }
}

/// Distance in units in the last place between two finite doubles.
pub fn ulps(a: f64, b: f64) -> u64 {
    let key = |x: f64| {
        let bits = x.to_bits() as i64;
        if bits < 0 {
            i64::MIN - bits
        } else {
            bits
        }
    };
    key(a).abs_diff(key(b))
}

/// Compares two parquet tables value for value.
pub fn compare_tables(committed: &Table, fresh: &Table) -> Outcome {
    let names = |t: &Table| -> Vec<String> { t.names().iter().map(|s| s.to_string()).collect() };
    if names(committed) != names(fresh) {
        // Compare what the two have in common, and name the rest.
        let (a, b) = (names(committed), names(fresh));
        let only = |x: &[String], y: &[String]| -> Vec<String> {
            x.iter().filter(|n| !y.contains(n)).cloned().collect()
        };
        let common = |t: &Table, keep: &[String]| Table {
            columns: keep
                .iter()
                .filter_map(|n| t.columns.iter().find(|(m, _)| m == n).cloned())
                .collect(),
        };
        let shared: Vec<String> = a.iter().filter(|n| b.contains(n)).cloned().collect();
        let inner = compare_tables(&common(committed, &shared), &common(fresh, &shared));
        return Outcome::Differs(format!(
            "columns only committed {:?}, only regenerated {:?}; the {} common columns: {}",
            only(&a, &b),
            only(&b, &a),
            shared.len(),
            inner.describe()
        ));
    }
    if committed.height() != fresh.height() {
        return Outcome::Differs(format!("{} rows vs {}", committed.height(), fresh.height()));
    }
    let mut timing_differs = false;
    let mut worst: Option<(u64, String)> = None;
    let mut differs = Vec::new();
    for ((name, a), (_, b)) in committed.columns.iter().zip(&fresh.columns) {
        if a == b {
            continue;
        }
        if is_timing(name) {
            timing_differs = true;
            continue;
        }
        match (a, b) {
            (Values::F64(x), Values::F64(y)) => {
                let mut cells = 0;
                let (mut max_ulps, mut max_abs, mut max_rel) = (0u64, 0f64, 0f64);
                let mut null_mismatch = 0;
                for (p, q) in x.iter().zip(y) {
                    match (p, q) {
                        (Some(p), Some(q)) if p != q => {
                            cells += 1;
                            max_ulps = max_ulps.max(ulps(*p, *q));
                            max_abs = max_abs.max((p - q).abs());
                            max_rel = max_rel.max((p - q).abs() / p.abs().max(q.abs()));
                        }
                        (Some(_), None) | (None, Some(_)) => null_mismatch += 1,
                        _ => {}
                    }
                }
                if null_mismatch == 0 && max_ulps <= LAST_BITS_ULPS {
                    if worst.as_ref().is_none_or(|(u, _)| max_ulps > *u) {
                        worst = Some((max_ulps, name.clone()));
                    }
                } else {
                    differs.push(format!(
                        "`{name}`: {cells} of {} cells, max |Δ| {max_abs:.3e} (relative \
                         {max_rel:.3e}){}",
                        x.len(),
                        if null_mismatch > 0 {
                            format!(", {null_mismatch} empty on one side only")
                        } else {
                            String::new()
                        }
                    ));
                }
            }
            _ => {
                let n = (0..committed.height())
                    .filter(|&i| cell(a, i) != cell(b, i))
                    .count();
                let first = (0..committed.height())
                    .find(|&i| cell(a, i) != cell(b, i))
                    .map(|i| format!(" (first at row {i}: {} vs {})", cell(a, i), cell(b, i)))
                    .unwrap_or_default();
                differs.push(format!("`{name}`: {n} cells{first}"));
            }
        }
    }
    if !differs.is_empty() {
        Outcome::Differs(differs.join("; "))
    } else if let Some((max_ulps, column)) = worst {
        Outcome::LastBits { max_ulps, column }
    } else if timing_differs {
        Outcome::IdenticalButTiming
    } else {
        Outcome::Identical
    }
}

fn cell(v: &Values, i: usize) -> String {
    match v {
        Values::Str(x) => x[i].clone(),
        Values::U64(x) => x[i].to_string(),
        Values::F64(x) => format!("{:?}", x[i]),
        Values::Bool(x) => x[i].to_string(),
    }
}

/// Compares the committed text file with the regenerated one, line by line.
fn compare_text(committed: &[u8], fresh: &[u8]) -> Outcome {
    if committed == fresh {
        return Outcome::Identical;
    }
    let (a, b) = (
        String::from_utf8_lossy(committed),
        String::from_utf8_lossy(fresh),
    );
    let (la, lb): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    let n = la.len().max(lb.len());
    let diff: Vec<usize> = (0..n).filter(|&i| la.get(i) != lb.get(i)).collect();
    let Some(&first) = diff.first() else {
        return Outcome::Differs("same lines, other line endings or final newline".into());
    };
    let clip = |s: Option<&&str>| {
        let s = s.copied().unwrap_or("(none)");
        s.chars().take(160).collect::<String>()
    };
    Outcome::Differs(format!(
        "{} of {n} lines; first, line {}: `{}` vs `{}`",
        diff.len(),
        first + 1,
        clip(la.get(first)),
        clip(lb.get(first))
    ))
}

/// The header cells of the columns in which two text tables (markdown `|`, LaTeX `&`)
/// differ, or None when they differ in anything else (lines, cell counts, the header).
fn differing_columns(committed: &[u8], fresh: &[u8]) -> Option<Vec<String>> {
    let (a, b) = (
        String::from_utf8_lossy(committed),
        String::from_utf8_lossy(fresh),
    );
    let (la, lb): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    if la.len() != lb.len() {
        return None;
    }
    let cells = |line: &str| -> Option<Vec<String>> {
        let sep = if line.trim_start().starts_with('|') {
            '|'
        } else if line.contains('&') {
            '&'
        } else {
            return None;
        };
        Some(
            line.trim_end()
                .trim_end_matches("\\\\")
                .split(sep)
                .map(|c| c.trim().to_string())
                .collect(),
        )
    };
    let header = la.iter().find_map(|l| cells(l))?;
    let mut columns = Vec::new();
    for (x, y) in la.iter().zip(&lb) {
        if x == y {
            continue;
        }
        let (cx, cy) = (cells(x)?, cells(y)?);
        if cx.len() != cy.len() || cx.len() != header.len() || cells(x).as_ref() == Some(&header) {
            return None;
        }
        for (i, (p, q)) in cx.iter().zip(&cy).enumerate() {
            if p != q && !columns.contains(&header[i]) {
                columns.push(header[i].clone());
            }
        }
    }
    (!columns.is_empty()).then_some(columns)
}

/// Files a results folder holds that belong to its results (not the manifest, the parts, the
/// set-aside results, locks or the verification record itself).
fn result_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter(|e| e.path().is_file())
                .map(|e| e.file_name().to_string_lossy().to_string())
                .filter(|n| {
                    n != "manifest.json"
                        && n != VERIFY
                        && !n.starts_with('.')
                        && !n.ends_with(".tmp")
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// A result file's bytes (bounded, never through a link).
fn read(path: &Path) -> Result<Vec<u8>> {
    read_limited(path, MAX_DATA_BYTES)?.ok_or_else(|| Error::io(path, "no such file"))
}

/// Compares the committed results folder with the regenerated one, file by file.
pub fn compare(committed: &Path, fresh: &Path) -> Result<Vec<(String, Outcome)>> {
    let (ours, theirs) = (result_files(committed), result_files(fresh));
    let mut all: Vec<String> = ours.iter().chain(&theirs).cloned().collect();
    all.sort();
    all.dedup();
    let mut out = Vec::new();
    for name in all {
        let (a, b) = (committed.join(&name), fresh.join(&name));
        let outcome = match (a.is_file(), b.is_file()) {
            (true, false) => Outcome::NotRegenerated,
            (false, true) => Outcome::NotCommitted,
            _ if name.ends_with(".parquet") => {
                compare_tables(&Table::read_parquet(&a)?, &Table::read_parquet(&b)?)
            }
            _ => {
                let (x, y) = (read(&a)?, read(&b)?);
                if name.ends_with(".png") {
                    if x == y {
                        Outcome::Identical
                    } else {
                        Outcome::Differs("the images' bytes differ".into())
                    }
                } else {
                    compare_text(&x, &y)
                }
            }
        };
        out.push((name, outcome));
    }
    // Tables are drawn from the parquet by the same code (the committed ones are redrawn byte
    // for byte by tests/suite/regenerate_committed.rs): where every parquet file matches but for
    // timing columns, a text table that differs only in some columns' cells differs by them.
    let parquet_match = out
        .iter()
        .filter(|(n, _)| n.ends_with(".parquet"))
        .all(|(_, o)| o.matches());
    let timing_differs = out
        .iter()
        .any(|(n, o)| n.ends_with(".parquet") && *o == Outcome::IdenticalButTiming);
    if parquet_match && timing_differs {
        for (name, outcome) in &mut out {
            if !(name.ends_with(".md") || name.ends_with(".tex"))
                || !matches!(outcome, Outcome::Differs(_))
            {
                continue;
            }
            let (x, y) = (read(&committed.join(&*name))?, read(&fresh.join(&*name))?);
            if let Some(columns) = differing_columns(&x, &y) {
                *outcome = Outcome::TimingCells(columns);
            }
        }
    }
    Ok(out)
}

/// Regenerates `exp` into `scratch` (resuming what an earlier call left), reports it, compares
/// it with `committed/<name>/` and keeps the comparison as `<scratch>/<name>/verify.json`.
/// Returns None while the regeneration is unfinished (another shard, or cut short).
pub fn verify(
    exp: &Experiment,
    committed: &Path,
    opts: &super::RunOptions,
) -> Result<Option<Value>> {
    let scratch = &opts.out;
    if let super::RunStatus::Partial { .. } = super::run(exp, opts)? {
        return Ok(None);
    }
    super::report(exp, scratch)?;
    let fresh_dir = super::results_dir(scratch, exp);
    let committed_dir = super::results_dir(committed, exp);
    let files = compare(&committed_dir, &fresh_dir)?;
    let manifest = super::store::Manifest::read(&fresh_dir)?
        .map(|m| m.value)
        .unwrap_or_default();
    let record = json!({
        "experiment": exp.name,
        "file": exp.file.display().to_string(),
        "profile": exp.profile.name(),
        "compared": provenance::utc(provenance::now()),
        "committed_exists": committed_dir.join("manifest.json").is_file(),
        "all_match": files.iter().all(|(_, o)| o.matches()),
        "provenance": manifest["provenance"],
        "code": {"fingerprint": manifest["code"]["fingerprint"], "commit": manifest["code"]["commit"], "dirty": manifest["code"]["dirty"]},
        "files": files
            .iter()
            .map(|(f, o)| json!({"file": f, "matches": o.matches(), "outcome": o.describe()}))
            .collect::<Vec<_>>(),
    });
    super::table::write_text(
        &fresh_dir.join(VERIFY),
        &format!(
            "{}\n",
            serde_json::to_string_pretty(&record).unwrap_or_default()
        ),
    )?;
    Ok(Some(record))
}

/// Gives the committed manifest of `exp` under `committed` the code, configuration and
/// provenance of its regeneration under `scratch` (call only when every file matched: the committed results are
/// then exactly what this code makes).
pub fn adopt_provenance(exp: &Experiment, committed: &Path, scratch: &Path) -> Result<()> {
    let (ours, fresh) = (
        super::results_dir(committed, exp),
        super::results_dir(scratch, exp),
    );
    let (Some(mut m), Some(f)) = (
        super::store::Manifest::read(&ours)?,
        super::store::Manifest::read(&fresh)?,
    ) else {
        return Err(Error::results(&ours, "no manifest to update"));
    };
    // Every file matched: the committed results are also what this configuration makes (an
    // edit that changed no result, such as a parameter only the report read).
    for key in [
        "code",
        "provenance",
        "dptune",
        "files",
        "config_hash",
        "title",
    ] {
        m.value[key] = f.value[key].clone();
    }
    // The checksums of the committed tables (a timing column may differ from the fresh ones).
    let study = exp.study.as_ref();
    let mut tables = vec![study.output()];
    tables.extend(study.derived());
    m.complete(&ours, &tables);
    m.value["verified"] = serde_json::json!({
        "how": "regenerated from scratch by `dptune sim verify` and compared file by file",
        "compared": provenance::utc(provenance::now()),
    });
    m.write(&ours)
}

/// The verification record of `exp` kept under `scratch`, if it has been verified; a record
/// that cannot be read (a link, too large) is an error, one that does not parse counts as none
/// (it is redone).
pub fn record(exp: &Experiment, scratch: &Path) -> Result<Option<Value>> {
    let path = super::results_dir(scratch, exp).join(VERIFY);
    Ok(read_text_limited(&path, MAX_RECORD_BYTES)?.and_then(|t| serde_json::from_str(&t).ok()))
}

/// The verification record of `exp` as its committed manifest keeps it, when an earlier
/// `sim verify` stamped it (every file matched; its scratch folder may be gone).
fn stamped_record(exp: &Experiment, committed: &Path) -> Result<Option<Value>> {
    let Some(m) = super::store::Manifest::read(&super::results_dir(committed, exp))? else {
        return Ok(None);
    };
    let Some(compared) = m.value["verified"]["compared"].as_str().map(String::from) else {
        return Ok(None);
    };
    let files: Vec<Value> = m
        .files()
        .iter()
        .map(|f| json!({"file": f, "matches": true, "outcome": "identical"}))
        .collect();
    Ok(Some(json!({
        "experiment": exp.name,
        "compared": compared,
        "committed_exists": true,
        "provenance": m.value["provenance"],
        "code": m.value["code"],
        "files": files,
    })))
}

/// Whether a verification `record` was made by this dptune's code for `exp` (one made by
/// other code says nothing about this code's results).
/// The wall time a run's provenance records, and whether it covers every unit: a process
/// that is stopped never records its time, and the process that resumes its work records only
/// its own units, so the sum then understates the time the whole run took.
pub(crate) fn wall_time(provenance: &Value) -> (Option<f64>, bool) {
    let recorded: u64 = provenance["runs"].as_array().map_or(0, |runs| {
        runs.iter().filter_map(|r| r["units"].as_u64()).sum()
    });
    let whole = match provenance["unit_wall_s"]["units"].as_u64() {
        Some(all) => recorded >= all,
        None => true,
    };
    (provenance["wall_s"].as_f64(), whole)
}

fn by_this_code(exp: &Experiment, record: &Value) -> bool {
    provenance::Code::of(exp.kind.source)
        .staleness(record.get("code"))
        .is_none()
}

/// The summary of the verification of `experiments` (markdown): per experiment the
/// from-scratch wall time, the outcome and every file that does not match. Only
/// verifications by this dptune's code count.
pub fn summary(
    experiments: &[Experiment],
    scratch: &Path,
    committed: &Path,
    notes: &str,
) -> Result<String> {
    let mut rows = String::new();
    let mut details = String::new();
    let (mut done, mut matched, mut total_s) = (0, 0, 0.0);
    let mut every_time_whole = true;
    let mut machines = std::collections::BTreeSet::new();
    let mut commits = std::collections::BTreeSet::new();
    for exp in experiments {
        let Some(r) = [record(exp, scratch)?, stamped_record(exp, committed)?]
            .into_iter()
            .flatten()
            .find(|r| by_this_code(exp, r))
        else {
            rows += &format!(
                "| `{}` | not yet regenerated by this code | | |\n",
                exp.name
            );
            continue;
        };
        done += 1;
        let (wall, whole) = wall_time(&r["provenance"]);
        total_s += wall.unwrap_or(0.0);
        every_time_whole &= whole;
        let runs = r["provenance"]["runs"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for run in &runs {
            machines.insert(format!(
                "{} ({} kernels), {} thread(s)",
                run["cpu"].as_str().unwrap_or("?"),
                run["openblas_core"].as_str().unwrap_or("?"),
                run["threads"]
            ));
            commits.insert(format!(
                "{}{}",
                provenance::short(run["commit"].as_str().unwrap_or("?")),
                if run["dirty"] == json!(true) {
                    " (modified)"
                } else {
                    ""
                }
            ));
        }
        let files = r["files"].as_array().cloned().unwrap_or_default();
        let bad: Vec<&Value> = files
            .iter()
            .filter(|f| f["matches"] != json!(true))
            .collect();
        let outcome = if !r["committed_exists"].as_bool().unwrap_or(false) {
            "nothing committed to compare with".to_string()
        } else if bad.is_empty() {
            matched += 1;
            format!("all {} files match", files.len())
        } else {
            format!("{} of {} files differ", bad.len(), files.len())
        };
        rows += &format!(
            "| `{}` | {} | {} | {} |\n",
            exp.name,
            outcome,
            match (wall, whole) {
                (None, _) => "not recorded".to_string(),
                (Some(w), true) => format!("{w:.1}"),
                (Some(w), false) => format!("≥ {w:.1} ¹"),
            },
            r["compared"].as_str().unwrap_or("?")
        );
        if !bad.is_empty() {
            details += &format!("### `{}`\n\n", exp.name);
            for f in bad {
                details += &format!(
                    "- `{}`: {}\n",
                    f["file"].as_str().unwrap_or("?"),
                    f["outcome"].as_str().unwrap_or("?")
                );
            }
            details.push('\n');
        }
    }
    let mut s = String::from(
        "# Reproducibility: every CPU experiment regenerated from scratch\n\n\
         Written by `just sims-verify` (`dptune sim verify`), which reruns each experiment of \
         the paper profile from nothing into a scratch folder and compares it with what is \
         committed under `results/`: markdown and LaTeX tables byte for byte, parquet value for \
         value (the timing columns, wall-clock times, aside), figures byte for byte. Times are \
         the from-scratch wall time of each experiment on the machine named below.\n\n",
    );
    s += &format!(
        "{done} of {} experiments regenerated so far; {matched} match their committed results \
         in every file; {}{:.0} s ({:.1} min) of wall time for those regenerated.\n\n",
        experiments.len(),
        if every_time_whole { "" } else { "at least " },
        total_s,
        total_s / 60.0
    );
    if !machines.is_empty() {
        s += &format!(
            "Regenerated on: {}; by commit(s) {}.\n\n",
            machines.into_iter().collect::<Vec<_>>().join("; "),
            commits.into_iter().collect::<Vec<_>>().join(", ")
        );
    }
    s += "| experiment | outcome | from-scratch wall time (s) | compared |\n|---|---|---:|---|\n";
    s += &rows;
    if !every_time_whole {
        s += "\n¹ Part of its units were run by a process that was stopped (at a session's end \
              or by hand) before it could record its time; the time shown is that of the \
              processes that recorded theirs, which resumed the rest.\n";
    }
    if !details.is_empty() {
        s += "\n## Files that differ\n\n";
        s += &details;
    }
    if !notes.is_empty() {
        s += "\n## Notes\n\n";
        s += notes;
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wall_time_is_whole_only_when_its_runs_ran_every_unit() {
        let provenance = |units: &[u64]| {
            json!({
                "wall_s": 5.0,
                "unit_wall_s": {"units": 200},
                "runs": units.iter().map(|u| json!({"units": u})).collect::<Vec<_>>(),
            })
        };
        assert_eq!(wall_time(&provenance(&[200])), (Some(5.0), true));
        assert_eq!(wall_time(&provenance(&[120, 80])), (Some(5.0), true));
        // Resumed after a process that was stopped before recording its 192 units.
        assert_eq!(wall_time(&provenance(&[8])), (Some(5.0), false));
        assert_eq!(wall_time(&provenance(&[])), (Some(5.0), false));
        // Older manifests without unit counts are taken as they say.
        assert_eq!(wall_time(&json!({"wall_s": 5.0})), (Some(5.0), true));
    }

    #[test]
    fn ulps_count_representable_doubles_between() {
        assert_eq!(ulps(1.0, 1.0), 0);
        assert_eq!(ulps(1.0, f64::from_bits(1.0f64.to_bits() + 3)), 3);
        assert_eq!(ulps(-0.0, 0.0), 0);
        assert_eq!(ulps(f64::from_bits(1), -f64::from_bits(1)), 2);
    }

    #[test]
    fn tables_are_compared_value_for_value_timing_aside() {
        let t = |x: f64, ms: f64, s: &str| {
            Table::default()
                .with("x", Values::F64(vec![Some(x), Some(2.0)]))
                .with("wall_ms", Values::F64(vec![Some(ms), Some(ms)]))
                .with("label", Values::Str(vec![s.into(), "b".into()]))
        };
        assert_eq!(
            compare_tables(&t(1.0, 5.0, "a"), &t(1.0, 5.0, "a")),
            Outcome::Identical
        );
        assert_eq!(
            compare_tables(&t(1.0, 5.0, "a"), &t(1.0, 7.0, "a")),
            Outcome::IdenticalButTiming
        );
        let near = f64::from_bits(1.0f64.to_bits() + 2);
        assert_eq!(
            compare_tables(&t(1.0, 5.0, "a"), &t(near, 5.0, "a")),
            Outcome::LastBits {
                max_ulps: 2,
                column: "x".into()
            }
        );
        let Outcome::Differs(why) = compare_tables(&t(1.0, 5.0, "a"), &t(1.5, 5.0, "c")) else {
            panic!("not a difference")
        };
        assert!(
            why.contains("`x`: 1 of 2 cells") && why.contains("`label`"),
            "{why}"
        );
    }

    #[test]
    fn text_tables_differing_in_timing_cells_match_only_when_the_parquet_does() {
        let md = |t: &str, v: &str| {
            format!(
                "caption\n\n| tuner | hv | tuner / oracle s |\n|---|---|---|\n| a | {v} | {t} |\n"
            )
        };
        let tex = |t: &str| format!("tuner & hv & s \\\\\na & 0.5 & {t} \\\\\n");
        assert_eq!(
            differing_columns(md("1.0", "0.5").as_bytes(), md("2.0", "0.5").as_bytes()),
            Some(vec!["tuner / oracle s".to_string()])
        );
        assert_eq!(
            differing_columns(md("1.0", "0.5").as_bytes(), md("2.0", "0.6").as_bytes()),
            Some(vec!["hv".to_string(), "tuner / oracle s".to_string()])
        );
        assert_eq!(differing_columns(b"a\n", b"a\nb\n"), None);
        assert!(differing_columns(tex("1.0").as_bytes(), tex("2.0").as_bytes()).is_some());
        let dir = std::env::temp_dir().join(format!("dptune-verify-{}", std::process::id()));
        let (c, f) = (dir.join("c"), dir.join("f"));
        let timed = |ms: f64| {
            Table::default()
                .with("hv", Values::F64(vec![Some(0.5)]))
                .with("tuner_wall_ms", Values::F64(vec![Some(ms)]))
        };
        for (d, t) in [(&c, "1.0"), (&f, "2.0")] {
            std::fs::create_dir_all(d).unwrap();
            std::fs::write(d.join("summary.md"), md(t, "0.5")).unwrap();
        }
        timed(1.0).write_parquet(&c.join("points.parquet")).unwrap();
        timed(2.0).write_parquet(&f.join("points.parquet")).unwrap();
        let out = compare(&c, &f).unwrap();
        assert_eq!(
            out[1],
            (
                "summary.md".to_string(),
                Outcome::TimingCells(vec!["tuner / oracle s".into()])
            )
        );
        assert!(out[1].1.matches());
        // The same table difference where a parquet value differs is a difference.
        Table::default()
            .with("hv", Values::F64(vec![Some(0.7)]))
            .with("tuner_wall_ms", Values::F64(vec![Some(2.0)]))
            .write_parquet(&f.join("points.parquet"))
            .unwrap();
        let out = compare(&c, &f).unwrap();
        assert!(!out[1].1.matches(), "{:?}", out[1]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn text_differences_name_the_first_line() {
        let Outcome::Differs(why) = compare_text(b"a\nb\nc\n", b"a\nB\nc\n") else {
            panic!()
        };
        assert!(
            why.starts_with("1 of 3 lines; first, line 2: `b` vs `B`"),
            "{why}"
        );
    }
}
