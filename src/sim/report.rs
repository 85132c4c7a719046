//! What every study's report shares: tables (markdown and LaTeX), confidence intervals,
//! row selection, rounded-up bounds, figure defaults, and the index `<out>/README.md`. Plots
//! and tables are made from parquet only; the experiment file supplies the layout, never the
//! numbers.

use super::output::{read_text_limited, MAX_DATA_BYTES, MAX_RECORD_BYTES};
use super::table::{write_text, Grid, Table};
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

pub(crate) fn write_grid(grid: &Grid, stem: &Path, files: &mut Vec<PathBuf>) -> Result<()> {
    for (ext, text) in [("md", grid.markdown()), ("tex", grid.latex())] {
        let p = stem.with_extension(ext);
        write_text(&p, &text)?;
        files.push(p);
    }
    Ok(())
}

/// "mean ± half-width" with `digits` decimals, or the mean alone when there is no interval.
pub(crate) fn pm((m, h): (f64, Option<f64>), digits: usize) -> String {
    match h {
        Some(h) => format!("{m:.digits$} ± {h:.digits$}"),
        None => format!("{m:.digits$} (one repetition)"),
    }
}

/// The best value known on each objective. Rows with the same `objective` key were measured
/// on one objective; its best known value is the better (the larger with `higher_is_better`,
/// else the smaller) of the workload's references for those rows (exact, or the best of a
/// seeded sample, which a tuner can beat) and every value any row `reached`. Every value in it
/// was reached, so the distance to it never exceeds the distance to the true optimum, and it is
/// never negative. None where a row has neither.
pub(crate) fn best_known<K: std::hash::Hash + Eq>(
    objective: &[K],
    reference: &[Option<f64>],
    reached: &[Option<f64>],
    higher_is_better: bool,
) -> Vec<Option<f64>> {
    let better = |a: f64, b: f64| if higher_is_better { a.max(b) } else { a.min(b) };
    let mut best: std::collections::HashMap<&K, f64> = std::collections::HashMap::new();
    for (i, key) in objective.iter().enumerate() {
        for v in [reference[i], reached[i]].into_iter().flatten() {
            best.entry(key)
                .and_modify(|b| *b = better(*b, v))
                .or_insert(v);
        }
    }
    objective.iter().map(|k| best.get(k).copied()).collect()
}

/// The first line of every index dptune writes; an index without it was not written by dptune
/// (older dptune indexes start with the second form).
pub const INDEX_MARK: &str =
    "<!-- written by `dptune sim`: regenerated on every run; edits are lost -->";
const OLD_INDEX_START: &str = "# Results\n\nWritten by `dptune sim`";

/// Refuses to overwrite `<out>/README.md` unless dptune wrote it.
pub fn check_index(out: &Path) -> Result<()> {
    let path = out.join("README.md");
    match read_text_limited(&path, MAX_RECORD_BYTES) {
        Ok(None) => Ok(()),
        Ok(Some(text)) if text.starts_with(INDEX_MARK) || text.starts_with(OLD_INDEX_START) => {
            Ok(())
        }
        _ => Err(Error::results(
            &path,
            "exists and was not written by dptune; the results index would overwrite it: \
             choose another --out (e.g. --out results)",
        )),
    }
}

/// Writes `<out>/README.md`: every experiment under `out` with its tables (inline) and figures.
pub fn write_index(out: &Path) -> Result<PathBuf> {
    check_index(out)?;
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(out)
        .map_err(|e| Error::io(out, e))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("manifest.json").exists())
        .collect();
    dirs.sort();
    let mut s = format!("{INDEX_MARK}\n");
    s.push_str(
        "# Results\n\nWritten by `dptune sim` (`just sims`); regenerate the plots and tables from the parquet \
         files alone with `dptune sim report sims/*.toml`. Each folder holds `manifest.json` (the \
         experiment file, profile and configuration hash), the tidy parquet (`runs.parquet`: one row per \
         tuning run; `curves.parquet`: one row per curve point), PNG and SVG figures, and markdown and \
         LaTeX tables.\n\n",
    );
    for d in &dirs {
        let m = super::store::Manifest::read(d)?
            .map(|m| m.value)
            .unwrap_or_default();
        let name = d
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        s += &format!(
            "## {}\n\n`{}` · profile `{}` · from `{}`\n\n",
            m["title"].as_str().unwrap_or(&name),
            name,
            m["profile"].as_str().unwrap_or("?"),
            m["file"].as_str().unwrap_or("?")
        );
        let mut entries: Vec<String> = std::fs::read_dir(d)
            .map_err(|e| Error::io(d, e))?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().to_string())
            .collect();
        entries.sort_by_key(|e| natural_key(e));
        for e in entries.iter().filter(|e| e.ends_with(".png")) {
            s += &format!(
                "![{e}]({name}/{e}) ([SVG]({name}/{}))\n\n",
                e.trim_end_matches(".png").to_string() + ".svg"
            );
        }
        for e in entries.iter().filter(|e| e.ends_with(".md")) {
            let text = read_text_limited(&d.join(e), MAX_DATA_BYTES)?.unwrap_or_default();
            s += &format!(
                "{text}\n([markdown]({name}/{e}), [LaTeX]({name}/{}))\n\n",
                e.trim_end_matches(".md").to_string() + ".tex"
            );
        }
    }
    let path = out.join("README.md");
    write_text(&path, &s)?;
    Ok(path)
}

/// Sort key that orders embedded numbers by value (`d2` before `d10`).
fn natural_key(s: &str) -> Vec<(String, u64)> {
    let mut key = Vec::new();
    let mut text = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            let mut n = c.to_digit(10).unwrap_or(0) as u64;
            while let Some(d) = chars.peek().and_then(|d| d.to_digit(10)) {
                n = n.saturating_mul(10).saturating_add(d as u64);
                chars.next();
            }
            key.push((std::mem::take(&mut text), n));
        } else {
            text.push(c);
        }
    }
    key.push((text, 0));
    key
}

/// Rows of `t` where every (column, value) in `keys` matches (strings or numbers).
pub(crate) fn select(t: &Table, keys: &[(&str, Key)]) -> Result<Vec<usize>> {
    let mut rows: Vec<usize> = (0..t.height()).collect();
    for (col, key) in keys {
        rows = match key {
            Key::Str(s) => {
                let c = t.str(col)?;
                rows.into_iter().filter(|&i| c[i] == *s).collect()
            }
            Key::Num(x) => {
                let c = t.f64(col)?;
                rows.into_iter()
                    .filter(|&i| c[i].is_some_and(|v| (v - x).abs() <= 1e-12 * x.abs().max(1.0)))
                    .collect()
            }
            Key::Int(x) => {
                let c = t.u64(col)?;
                rows.into_iter().filter(|&i| c[i] == *x).collect()
            }
        };
    }
    Ok(rows)
}

pub(crate) enum Key {
    Str(String),
    Num(f64),
    Int(u64),
}

/// The q-quantile of `xs` (nearest rank; xs non-empty).
pub(crate) fn quantile(xs: &mut [f64], q: f64) -> f64 {
    xs.sort_by(f64::total_cmp);
    let k = ((q * xs.len() as f64).ceil() as usize).clamp(1, xs.len());
    xs[k - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_order_and_formats() {
        let mut v = vec![
            "regret-d10.md",
            "regret-d2.md",
            "privacy-d1.md",
            "regret-d1.md",
        ];
        v.sort_by_key(|e| natural_key(e));
        assert_eq!(
            v,
            [
                "privacy-d1.md",
                "regret-d1.md",
                "regret-d2.md",
                "regret-d10.md"
            ]
        );
        assert_eq!(pm((1.23456, Some(0.5)), 3), "1.235 ± 0.500");
        assert_eq!(pm((1.23456, None), 3), "1.235 (one repetition)");
    }

    /// By hand: objective a's sampled best 0.8 is beaten by a row's 0.9; objective b's exact
    /// best 1.0 stands; for losses the smaller wins.
    #[test]
    fn the_best_known_is_the_better_of_the_reference_and_every_value_reached() {
        let key = ["a", "a", "b", "b", "c"];
        let reference = [Some(0.8), Some(0.8), Some(1.0), Some(1.0), None];
        let reached = [Some(0.5), Some(0.9), Some(0.7), None, None];
        assert_eq!(
            best_known(&key, &reference, &reached, true),
            [Some(0.9), Some(0.9), Some(1.0), Some(1.0), None]
        );
        assert_eq!(
            best_known(&key, &reference, &reached, false),
            [Some(0.5), Some(0.5), Some(0.7), Some(0.7), None]
        );
    }
}
