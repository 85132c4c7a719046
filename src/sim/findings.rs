//! The findings (`results/FINDINGS.md`), rendered from a template: the markdown parts of
//! `sims/findings/` (read in name order), prose whose every number and comparison is a
//! reference to a claim (`sim::claims`) or a cell of a committed table:
//!
//! * `{{claim EXP/ID}}`: "(Δ = −0.459 [−0.552, −0.366], paired t, n = 200)", the claim's
//!   estimate, 95% interval, test and n; `{{claim EXP/ID estimate}}` (or `interval`,
//!   `verdict`, `n`) one of them. A cited claim must hold: one that does not is an error.
//! * `{{cell EXP/TABLE | ROW | COLUMN}}`: the cell of `results/EXP/TABLE.md` in the row whose
//!   first cell is ROW (`A & B`: whose first two cells are A and B, for tables whose first
//!   column repeats), under the header COLUMN.
//! * `{{table EXP/TABLE}}`: the whole table with its caption; `{{rows EXP/TABLE | ROW | …}}`
//!   its header and these rows.
//!
//! `dptune sim report` renders it after the experiments' reports (paper profile), so the text
//! can never say what the data do not; `tests/suite/findings.rs` renders it from the committed
//! results and requires the committed file to equal it.

use super::claims::{self, Verdict};
use super::output::{read_text_limited, MAX_DATA_BYTES};
use super::table::write_text;
use crate::error::{Error, Result};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The first line of the rendered findings: a file without it was not rendered by dptune and
/// is never overwritten.
pub const MARK: &str = "<!-- rendered by `dptune sim report` from sims/findings/*.md (claims and \
                        table cells of results/): edit the template, not this file -->";

/// What rendering gives: the text, or the first cited experiment whose results are absent
/// (reporting into a scratch folder that holds only some).
#[derive(Debug)]
pub enum Rendered {
    Text(String),
    Missing(String),
}

/// The template parts of `template` (its `*.md` files, in name order) with their text.
fn parts(template: &Path) -> Result<Vec<(PathBuf, String)>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(template)
        .map_err(|e| Error::io(template, e))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(Error::io(template, "holds no *.md template part"));
    }
    paths
        .into_iter()
        .map(|p| {
            let text = read_text_limited(&p, MAX_DATA_BYTES)?
                .ok_or_else(|| Error::io(&p, "vanished while read"))?;
            Ok((p, text))
        })
        .collect()
}

/// A markdown table as dptune writes it: the caption line, the header and the rows.
struct MdTable {
    text: String,
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    /// The header and separator lines, and each row's line, as written.
    header_lines: String,
    row_lines: Vec<String>,
}

fn split_row(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|');
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let mut cells = vec![String::new()];
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cells.last_mut().expect("one cell").push('|');
                chars.next();
            }
            '|' => cells.push(String::new()),
            c => cells.last_mut().expect("one cell").push(c),
        }
    }
    cells.into_iter().map(|c| c.trim().to_string()).collect()
}

fn md_table(path: &Path) -> Result<MdTable> {
    let text =
        read_text_limited(path, MAX_DATA_BYTES)?.ok_or_else(|| Error::io(path, "no such table"))?;
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with('|')).collect();
    if lines.len() < 2 {
        return Err(Error::io(path, "holds no markdown table"));
    }
    Ok(MdTable {
        header: split_row(lines[0]),
        rows: lines[2..].iter().map(|l| split_row(l)).collect(),
        header_lines: format!("{}\n{}\n", lines[0], lines[1]),
        row_lines: lines[2..].iter().map(|l| format!("{l}\n")).collect(),
        text: text.trim_end().to_string(),
    })
}

impl MdTable {
    /// The first row whose first cells are `spec`'s parts (`A & B & …`).
    fn find(&self, spec: &str) -> Option<usize> {
        let parts: Vec<&str> = spec.split(" & ").map(str::trim).collect();
        self.rows
            .iter()
            .position(|r| r.len() >= parts.len() && r.iter().zip(&parts).all(|(c, p)| c == p))
    }
}

/// Caches of what the references read.
struct Sources<'a> {
    results: &'a Path,
    claims: HashMap<String, Vec<Verdict>>,
    tables: HashMap<String, MdTable>,
}

/// Why a reference cannot be rendered: the experiment is absent (skip), or an error.
enum Failure {
    Missing(String),
    Error(String),
}

impl Sources<'_> {
    fn experiment(&self, target: &str) -> std::result::Result<(String, String), Failure> {
        let (exp, rest) = target
            .split_once('/')
            .ok_or_else(|| Failure::Error(format!("`{target}` is not EXPERIMENT/NAME")))?;
        if !self.results.join(exp).join("manifest.json").exists() {
            return Err(Failure::Missing(exp.to_string()));
        }
        Ok((exp.to_string(), rest.to_string()))
    }

    fn claim(&mut self, target: &str) -> std::result::Result<Verdict, Failure> {
        let (exp, id) = self.experiment(target)?;
        if !self.claims.contains_key(&exp) {
            let dir = self.results.join(&exp);
            let verdicts = claims::read(&dir)
                .map_err(|e| Failure::Error(e.to_string()))?
                .ok_or_else(|| {
                    Failure::Error(format!(
                        "{} has no claims.parquet: declare the claim in sims/{exp}.toml and run \
                         `dptune sim report sims/{exp}.toml`",
                        dir.display()
                    ))
                })?;
            self.claims.insert(exp.clone(), verdicts);
        }
        let v = self.claims[&exp].iter().find(|v| v.id == id).cloned();
        let v = v.ok_or_else(|| {
            Failure::Error(format!(
                "no claim `{id}` in results/{exp}/claims.parquet (its claims: {})",
                self.claims[&exp]
                    .iter()
                    .map(|v| v.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        if !v.holds {
            return Err(Failure::Error(format!(
                "claim {target} does not hold: it asserts {} and its verdict is {}",
                v.asserts, v.verdict
            )));
        }
        Ok(v)
    }

    fn table(&mut self, target: &str) -> std::result::Result<&MdTable, Failure> {
        let (exp, name) = self.experiment(target)?;
        if !self.tables.contains_key(target) {
            let path = self.results.join(&exp).join(format!("{name}.md"));
            let t = md_table(&path).map_err(|e| Failure::Error(e.to_string()))?;
            self.tables.insert(target.to_string(), t);
        }
        Ok(&self.tables[target])
    }

    /// The text of one reference (the inside of `{{…}}`).
    fn reference(&mut self, inner: &str) -> std::result::Result<String, Failure> {
        let inner = inner.trim();
        let (kind, rest) = inner.split_once(' ').unwrap_or((inner, ""));
        let mut args = rest.split(" | ").map(str::trim);
        let target = args.next().unwrap_or("");
        match kind {
            "claim" => {
                let (target, field) = target.split_once(' ').unwrap_or((target, ""));
                let v = self.claim(target)?;
                let d = v.digits as usize;
                let n = if v.n_b > 0 && v.n_b != v.n_a {
                    format!("n = {}, {}", v.n_a, v.n_b)
                } else {
                    format!("n = {}", v.n_a)
                };
                Ok(match field.trim() {
                    "estimate" => claims::show(v.estimate, d),
                    "interval" => claims::interval(&v),
                    "verdict" => v.verdict.clone(),
                    "n" => n,
                    "" => {
                        let difference = !v.asserts.starts_with("a within");
                        // A bootstrap's resample count is in the introduction; an argmax's
                        // share, a rate's count and "every value equal" are said here.
                        let plain =
                            v.detail.ends_with(" resamples") && !v.detail.starts_with("at ");
                        let detail = match v.detail.is_empty() || plain {
                            true => String::new(),
                            false => format!("; {}", v.detail),
                        };
                        format!(
                            "({}{} {}, {}, {n}{detail})",
                            if difference { "Δ = " } else { "" },
                            claims::show(v.estimate, d),
                            claims::interval(&v),
                            v.test
                        )
                    }
                    other => {
                        return Err(Failure::Error(format!(
                            "`{other}`: a claim reference shows estimate, interval, verdict or n \
                             (or, with none, all of them)"
                        )))
                    }
                })
            }
            "cell" => {
                let (row, column) = match (args.next(), args.next(), args.next()) {
                    (Some(r), Some(c), None) => (r, c),
                    _ => {
                        return Err(Failure::Error(
                            "a cell reference is {{cell EXP/TABLE | ROW | COLUMN}}".into(),
                        ))
                    }
                };
                let t = self.table(target)?;
                let c = t.header.iter().position(|h| h == column).ok_or_else(|| {
                    Failure::Error(format!(
                        "no column \"{column}\" in {target} (its columns: {})",
                        t.header.join(", ")
                    ))
                })?;
                let r = t.find(row).map(|i| &t.rows[i]);
                let r = r.ok_or_else(|| {
                    Failure::Error(format!(
                        "no row \"{row}\" in {target} (its rows: {})",
                        t.rows
                            .iter()
                            .filter_map(|r| r.first().cloned())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })?;
                Ok(r.get(c).cloned().unwrap_or_default())
            }
            "table" => Ok(self.table(target)?.text.clone()),
            "rows" => {
                let wanted: Vec<&str> = args.collect();
                let t = self.table(target)?;
                let mut s = t.header_lines.clone();
                for w in wanted {
                    let i = t
                        .find(w)
                        .ok_or_else(|| Failure::Error(format!("no row \"{w}\" in {target}")))?;
                    s += &t.row_lines[i];
                }
                Ok(s.trim_end().to_string())
            }
            other => Err(Failure::Error(format!(
                "`{other}`: a reference is claim, cell, table or rows"
            ))),
        }
    }
}

/// Renders the template `template` from the results under `results`.
pub fn render_text(template: &Path, results: &Path) -> Result<Rendered> {
    let mut sources = Sources {
        results,
        claims: HashMap::new(),
        tables: HashMap::new(),
    };
    let mut out = format!("{MARK}\n");
    for (path, text) in parts(template)? {
        let mut rest = text.as_str();
        while let Some(start) = rest.find("{{") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let line = text[..text.len() - rest.len() + start]
                .matches('\n')
                .count()
                + 1;
            let at = |reason: String| Error::io(&path, format!("line {line}: {reason}"));
            let end = after
                .find("}}")
                .ok_or_else(|| at("`{{` without its `}}`".into()))?;
            match sources.reference(&after[..end]) {
                Ok(s) => out.push_str(&s),
                Err(Failure::Missing(exp)) => return Ok(Rendered::Missing(exp)),
                Err(Failure::Error(reason)) => return Err(at(reason)),
            }
            rest = &after[end + 2..];
        }
        out.push_str(rest);
    }
    Ok(Rendered::Text(out))
}

/// Renders the template into `<results>/FINDINGS.md`; None (and nothing written) when a cited
/// experiment has no results there. A FINDINGS.md that dptune did not render is never
/// overwritten.
pub fn render(template: &Path, results: &Path) -> Result<std::result::Result<PathBuf, String>> {
    let path = results.join("FINDINGS.md");
    if let Some(old) = read_text_limited(&path, MAX_DATA_BYTES)? {
        if !old.starts_with(MARK) {
            return Err(Error::results(
                &path,
                format!(
                    "exists and was not rendered from {}: move it away (its text belongs in the \
                     template) and report again",
                    template.display()
                ),
            ));
        }
    }
    match render_text(template, results)? {
        Rendered::Text(text) => {
            write_text(&path, &text)?;
            Ok(Ok(path))
        }
        Rendered::Missing(exp) => Ok(Err(format!(
            "{} not rendered: it cites {exp}, which has no results under {}",
            path.display(),
            results.display()
        ))),
    }
}
