//! `dptune sim status`: where each experiment's results stand (complete, fresh or stale, made
//! by which commit, on what machine, in how long). Reads, never writes; no study kind depends
//! on this file, so its wording can change without making results stale.

use super::provenance::{self, Code};
use super::store::{self, Manifest, Parts};
use super::{results_dir, Experiment};
use crate::error::Result;
use std::path::Path;

/// Where the results of `exp` under `out` stand, in words (one line per experiment, a second
/// with the provenance); reads, never writes.
/// A manifest that cannot be read is an error naming it, never "no results".
pub fn status(exp: &Experiment, out: &Path) -> Result<String> {
    let dir = results_dir(out, exp);
    let name = &exp.name;
    let Some(m) = Manifest::read(&dir)? else {
        return Ok(format!("{name}: no results in {}", dir.display()));
    };
    if m.str("config_hash") != Some(store::hash_text(exp.config_hash).as_str()) {
        return Ok(format!(
            "{name}: {} holds results of another configuration (profile {}, or {} was edited since)",
            dir.display(),
            m.str("profile").unwrap_or("?"),
            exp.file.display()
        ));
    }
    let study = exp.study.as_ref();
    let mut tables = vec![study.output()];
    tables.extend(study.derived());
    let state = if m.intact(&dir, &tables) {
        "complete".to_string()
    } else {
        let units = study.units();
        format!(
            "incomplete ({} of {} units done)",
            Parts::count_present(&dir, &units),
            units.len()
        )
    };
    let code = Code::of(exp.kind.source);
    let freshness = match code.staleness(m.value.get("code")) {
        None => "fresh (made by this code)".to_string(),
        Some(why) => format!("STALE: {why}"),
    };
    let p = &m.value["provenance"];
    let runs = p["runs"].as_array().cloned().unwrap_or_default();
    let made = if runs.is_empty() && m.value["code"].is_object() {
        "  no run has finished yet (each process records itself when its units are done)"
            .to_string()
    } else if runs.is_empty() {
        "  no provenance recorded (made before dptune recorded it)".to_string()
    } else {
        let all = |key: &str| {
            let mut v: Vec<String> = runs
                .iter()
                .map(|r| match &r[key] {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect();
            v.dedup();
            v.join(", ")
        };
        let commits: Vec<String> = runs
            .iter()
            .map(|r| {
                let c = r["commit"].as_str().unwrap_or("unknown");
                let dirty = if r["dirty"] == serde_json::json!(true) {
                    " (modified)"
                } else {
                    ""
                };
                format!("{}{dirty}", provenance::short(c))
            })
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        // Older manifests call the longest span `slowest`.
        let longest = match &p["unit_wall_s"]["longest_span"] {
            serde_json::Value::Null => &p["unit_wall_s"]["slowest"],
            span => span,
        };
        // A process that was stopped never recorded its time (its units were resumed).
        let (at_least, stopped) = match super::verify::wall_time(p) {
            (_, true) => ("", ""),
            (_, false) => (
                "at least ",
                " (and a process that was stopped before it recorded its time)",
            ),
        };
        format!(
            "  made by commit {} with {} on {} ({} kernels), {} thread(s), shard(s) {}, \
             {} → {}: {at_least}{} s of wall time in {} run(s){stopped} of {} unit(s); the \
             longest unit span `{}` {} s (a span counts the other units' work its thread ran \
             while waiting on its own parallel parts)",
            commits.join(", "),
            all("rustc"),
            all("cpu"),
            all("openblas_core"),
            all("threads"),
            all("shard"),
            runs.first()
                .and_then(|r| r["started"].as_str())
                .unwrap_or("?"),
            runs.last()
                .and_then(|r| r["finished"].as_str())
                .unwrap_or("?"),
            p["wall_s"],
            runs.len(),
            p["unit_wall_s"]["units"],
            longest["unit"].as_str().unwrap_or("?"),
            longest["wall_s"],
        )
    };
    Ok(format!("{name}: {state}, {freshness}\n{made}"))
}
