//! Cell templates and overlays of the declared `[[tables]]` and `[[plots]]`
//! ([`super::declarative`]): what a hand-written report did with a per-cell summary, said in
//! the file.
//!
//! * A template (`cell = "{epsilon:3up} / σ={noise:4} / {runs:1}"`) shows one row: each
//!   `{COLUMN}` is the row's value (text as it is, a number as `fmt_num` writes it, missing:
//!   "–"); `{COLUMN:SPEC}` formats a number, SPEC = an optional `+` (the sign always), the
//!   decimals and an optional `up` or `down` (the direction of rounding); `{A±B:SPEC}` is
//!   "a ± b", or "a (one repetition)" where B is missing.
//! * A pivot whose cells are a template (`cell` instead of `value`) reads one row per cell (a
//!   per-cell table a study derives; several distinct values in one cell are an error), and
//!   may put `reference_rows` from another table above its rows.
//! * A list column may show its row through a template (`cell`).
//! * A plot's `overlay` draws another table's rows as further curves on the same axes.
//! * `{percent:NAME}` in a caption: 100 × the one value column NAME holds in the rows.

use super::cells::{cells, distinct, keys, Cell, Filter};
use super::fields::Fields;
use super::plot::{Series, Style};
use super::report::pm;
use super::table::Table;
use crate::error::{fmt_num, Error, Result};
use crate::numeric::round_up_decimals;
use std::path::Path;

/// A parsed cell template.
#[derive(Clone, Debug, PartialEq)]
pub struct Template {
    pub(super) text: String,
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq)]
enum Part {
    Text(String),
    Value(Placeholder),
}

#[derive(Clone, Debug, PartialEq)]
struct Placeholder {
    column: String,
    /// `{A±B}`: the half-width column.
    interval: Option<String>,
    digits: Option<usize>,
    sign: bool,
    /// `Some(true)`: up, `Some(false)`: down, None: to nearest.
    up: Option<bool>,
}

fn word(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_')
}

impl Template {
    /// Parses `text`; the error says what is wrong (the caller names the field).
    pub fn parse(text: &str) -> std::result::Result<Template, String> {
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(start) = rest.find('{') {
            if start > 0 {
                parts.push(Part::Text(rest[..start].to_string()));
            }
            let Some(len) = rest[start..].find('}') else {
                return Err(format!("an unclosed `{{` in \"{text}\""));
            };
            let inner = &rest[start + 1..start + len];
            let (names, spec) = inner.split_once(':').unwrap_or((inner, ""));
            let (column, interval) = match names.split_once('±') {
                Some((a, b)) => (a, Some(b.to_string())),
                None => (names, None),
            };
            if !word(column) || interval.as_deref().is_some_and(|b| !word(b)) {
                return Err(format!(
                    "`{{{inner}}}` in \"{text}\": a placeholder is {{COLUMN}}, {{COLUMN:SPEC}} or \
                     {{A±B:SPEC}}"
                ));
            }
            let sign = spec.starts_with('+');
            let spec = spec.trim_start_matches('+');
            let end = spec
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(spec.len());
            let digits = match &spec[..end] {
                "" => None,
                d => Some(d.parse::<usize>().map_err(|e| e.to_string())?.min(12)),
            };
            let up = match &spec[end..] {
                "" => None,
                "up" => Some(true),
                "down" => Some(false),
                other => {
                    return Err(format!(
                        "`{{{inner}}}` in \"{text}\": `{other}` is not a format (SPEC: an \
                         optional +, the decimals, an optional up or down)"
                    ))
                }
            };
            if digits.is_none() && (sign || up.is_some()) {
                return Err(format!(
                    "`{{{inner}}}` in \"{text}\": a sign or a rounding needs the decimals"
                ));
            }
            parts.push(Part::Value(Placeholder {
                column: column.to_string(),
                interval,
                digits,
                sign,
                up,
            }));
            rest = &rest[start + len + 1..];
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_string()));
        }
        Ok(Template {
            text: text.to_string(),
            parts,
        })
    }

    /// The template bound to the columns of `t` (a missing column is an error naming it).
    fn bind(&self, t: &Table, what: &str, file: &str) -> Result<Bound<'_>> {
        let mut columns: Vec<(String, Vec<Cell>)> = Vec::new();
        for p in &self.parts {
            if let Part::Value(v) = p {
                for name in std::iter::once(&v.column).chain(&v.interval) {
                    if !columns.iter().any(|(n, _)| n == name) {
                        columns.push((name.clone(), cells(t, name, what, file)?));
                    }
                }
            }
        }
        Ok(Bound {
            template: self,
            columns,
            what: what.to_string(),
        })
    }
}

/// A template with its table's columns.
struct Bound<'a> {
    template: &'a Template,
    columns: Vec<(String, Vec<Cell>)>,
    what: String,
}

impl Bound<'_> {
    /// The one value column `name` holds in `rows` (Missing where none).
    fn one(&self, name: &str, rows: &[usize]) -> Result<Cell> {
        let (_, v) = (self.columns.iter())
            .find(|(n, _)| n == name)
            .expect("bound");
        let values = distinct(v, rows);
        match values.as_slice() {
            [] => Ok(Cell::Missing),
            [one] => Ok(one.clone()),
            _ => Err(Error::Infeasible(format!(
                "{}: `{name}` holds {} values in one cell of the template \"{}\": a template \
                 shows one row (a per-cell table)",
                self.what,
                values.len(),
                self.template.text
            ))),
        }
    }

    /// The template filled from `rows` (one row, or rows that agree).
    fn show(&self, rows: &[usize]) -> Result<String> {
        let mut out = String::new();
        for p in &self.template.parts {
            match p {
                Part::Text(s) => out.push_str(s),
                Part::Value(v) => {
                    let value = self.one(&v.column, rows)?;
                    let shown = match (&value, &v.interval) {
                        (Cell::Num(m), Some(h)) => {
                            let h = self.one(h, rows)?.num();
                            pm((*m, h), v.digits.unwrap_or(3))
                        }
                        (Cell::Num(x), None) => number(*x, v),
                        (cell, _) => cell.label(),
                    };
                    out.push_str(&shown);
                }
            }
        }
        Ok(out)
    }
}

fn number(x: f64, v: &Placeholder) -> String {
    let Some(d) = v.digits else {
        return fmt_num(x);
    };
    let r = match v.up {
        None => x,
        Some(true) => round_up_decimals(x, d as i32),
        Some(false) => -round_up_decimals(-x, d as i32),
    };
    if v.sign {
        format!("{r:+.d$}")
    } else {
        format!("{r:.d$}")
    }
}

/// A list column shown through `template`: each of `rows` where `column` holds a value, its row
/// filled in (as text); missing where it holds none.
pub(super) fn templated(
    template: &str,
    column: &str,
    t: &Table,
    rows: &[usize],
    what: &str,
    file: &str,
) -> Result<Vec<Cell>> {
    let template = Template::parse(template).map_err(Error::Infeasible)?;
    let bound = template.bind(t, what, file)?;
    let mut out = cells(t, column, what, file)?;
    for &i in rows {
        if out[i] != Cell::Missing {
            out[i] = Cell::Str(bound.show(&[i])?);
        }
    }
    Ok(out)
}

/// Rows from another table above a template pivot's: one per value of `rows` there, each cell
/// its row whose pivot column holds the cell's column value.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReferenceRowsEntry {
    table: Option<String>,
    rows: String,
    cell: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ReferenceRows {
    table: Option<String>,
    rows: String,
    cell: Template,
}

/// A pivot whose cells are a template over one row per cell.
#[derive(Clone, Debug, PartialEq)]
pub struct TemplatePivot {
    pub(super) rows: String,
    pub(super) columns: String,
    pub(super) cell: Template,
    pub(super) row_label: Option<String>,
    pub(super) column_label: Option<String>,
    pub(super) reference_rows: Option<ReferenceRows>,
}

impl TemplatePivot {
    /// From a `[[tables]]` entry's fields (`f`, to name a bad one).
    pub(super) fn parse(
        f: &Fields,
        rows: Option<String>,
        columns: Option<String>,
        cell: &str,
        labels: (Option<String>, Option<String>),
        reference_rows: Option<ReferenceRowsEntry>,
    ) -> Result<TemplatePivot> {
        let need = |key: &'static str, v: Option<String>| {
            v.ok_or_else(|| f.missing(key, "a column of the table (with `cell`)"))
        };
        let template = |key: &str, text: &str| Template::parse(text).map_err(|e| f.bad(key, &e));
        let reference_rows = match reference_rows {
            None => None,
            Some(r) => Some(ReferenceRows {
                cell: template("reference_rows.cell", &r.cell)?,
                table: r.table,
                rows: r.rows,
            }),
        };
        Ok(TemplatePivot {
            rows: need("rows", rows)?,
            columns: need("columns", columns)?,
            cell: template("cell", cell)?,
            row_label: labels.0,
            column_label: labels.1,
            reference_rows,
        })
    }
}

fn same(a: &Cell, b: &Cell) -> bool {
    match (a, b) {
        (Cell::Num(x), Cell::Num(y)) => (x - y).abs() <= 1e-12 * y.abs().max(1.0),
        (a, b) => a == b,
    }
}

/// The header, body and default caption of a template pivot over `rows` of `t`; `facet` the
/// column and value of a faceted table (the reference rows keep that value's rows).
pub(super) fn pivot(
    p: &TemplatePivot,
    filter: &Filter,
    (t, rows, facet): (&Table, &[usize], Option<(&str, &Cell)>),
    (dir, default_table): (&Path, &str),
    what: &str,
    file: &str,
) -> Result<(Vec<String>, Vec<Vec<String>>, String)> {
    let (r, c) = (
        keys(t, &p.rows, filter, what, file)?,
        keys(t, &p.columns, filter, what, file)?,
    );
    let (row_keys, col_keys) = (distinct(&r, rows), distinct(&c, rows));
    let mut header = vec![p.row_label.clone().unwrap_or_else(|| p.rows.clone())];
    header.extend(col_keys.iter().map(|k| match p.column_label.as_deref() {
        None => format!("{}={}", p.columns, k.label()),
        Some("") => k.label(),
        Some(l) => format!("{l}={}", k.label()),
    }));
    let mut body = Vec::new();
    if let Some(rr) = &p.reference_rows {
        let file = rr
            .table
            .clone()
            .unwrap_or_else(|| default_table.to_string());
        let what = format!("{what}: reference_rows");
        let rt = Table::read_parquet(&dir.join(&file))?;
        let mut here: Vec<usize> = (0..rt.height()).collect();
        if let Some((name, value)) = facet {
            let f = cells(&rt, name, &what, &file)?;
            here.retain(|&i| same(&f[i], value));
        }
        let (labels, at) = (
            cells(&rt, &rr.rows, &what, &file)?,
            cells(&rt, &p.columns, &what, &file)?,
        );
        let bound = rr.cell.bind(&rt, &what, &file)?;
        for label in distinct(&labels, &here) {
            let mut row = vec![label.label()];
            for ck in &col_keys {
                let mine: Vec<usize> = (here.iter().copied())
                    .filter(|&i| labels[i] == label && same(&at[i], ck))
                    .collect();
                row.push(match mine.is_empty() {
                    true => "–".to_string(),
                    false => bound.show(&mine)?,
                });
            }
            body.push(row);
        }
    }
    let bound = p.cell.bind(t, what, file)?;
    for rk in &row_keys {
        let mut row = vec![rk.label()];
        for ck in &col_keys {
            let mine: Vec<usize> = (rows.iter().copied())
                .filter(|&i| r[i] == *rk && c[i] == *ck)
                .collect();
            row.push(match mine.is_empty() {
                true => "–".to_string(),
                false => bound.show(&mine)?,
            });
        }
        body.push(row);
    }
    let caption = format!("{{title}}: {} by {} and {}", p.cell.text, p.rows, p.columns);
    Ok((header, body, caption))
}

/// A plot's `overlay` as written.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OverlayEntry {
    table: Option<String>,
    x: String,
    y: String,
    series: Option<String>,
    label: Option<String>,
    filter: Option<toml::Table>,
}

/// Another table's rows drawn as further curves on a plot's axes.
#[derive(Clone, Debug, PartialEq)]
pub struct Overlay {
    table: Option<String>,
    x: String,
    y: String,
    series: Option<String>,
    label: Option<String>,
    filter: Filter,
}

impl Overlay {
    /// From a plot's `overlay` (`f`: the plot's fields, to name a bad one).
    pub(super) fn parse(e: OverlayEntry, f: &Fields) -> Result<Overlay> {
        if e.series.is_some() == e.label.is_some() {
            return Err(f.bad(
                "overlay",
                "`series` (a curve per value) or `label` (one curve), not both",
            ));
        }
        Ok(Overlay {
            filter: super::cells::filter(f, e.filter)?,
            table: e.table,
            x: e.x,
            y: e.y,
            series: e.series,
            label: e.label,
        })
    }
}

/// The overlay's curves in the figure of `facet`'s value: its rows (x, y) as they are, in x
/// order, one curve per value of `series` (or one, `label`).
pub(super) fn overlay(
    o: &Overlay,
    facet: Option<(&str, &Cell)>,
    dir: &Path,
    default_table: &str,
    what: &str,
) -> Result<Vec<Series>> {
    let file = o.table.clone().unwrap_or_else(|| default_table.to_string());
    let what = format!("{what}: overlay");
    let t = Table::read_parquet(&dir.join(&file))?;
    let mut rows = super::cells::kept(&t, &o.filter, &what, &file)?;
    if let Some((name, value)) = facet {
        let f = cells(&t, name, &what, &file)?;
        rows.retain(|&i| same(&f[i], value));
    }
    let (x, y) = (
        cells(&t, &o.x, &what, &file)?,
        cells(&t, &o.y, &what, &file)?,
    );
    let series = match &o.series {
        Some(s) => cells(&t, s, &what, &file)?,
        None => vec![Cell::Str(o.label.clone().unwrap_or_default()); t.height()],
    };
    Ok(distinct(&series, &rows)
        .into_iter()
        .map(|s| {
            let mut points: Vec<(f64, f64)> = (rows.iter())
                .filter(|&&i| series[i] == s)
                .filter_map(|&i| Some((x[i].num()?, y[i].num()?)))
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series {
                style: Style::default(),
                ..Series::line(s.label(), points)
            }
        })
        .collect())
}

/// `text` with each `{percent:NAME}` replaced by 100 × the one value column `NAME` holds in
/// `rows` (several values, none or a text: an error).
pub(super) fn percent_values(
    text: &str,
    t: &Table,
    rows: &[usize],
    what: &str,
    file: &str,
) -> Result<String> {
    let mut out = text.to_string();
    while let Some(start) = out.find("{percent:") {
        let Some(len) = out[start..].find('}') else {
            break;
        };
        let name = out[start + "{percent:".len()..start + len].to_string();
        let values = distinct(&cells(t, &name, what, file)?, rows);
        let [Cell::Num(v)] = values.as_slice() else {
            return Err(Error::Infeasible(format!(
                "{what}: `{{percent:{name}}}` in the caption: `{name}` holds {} values in the \
                 table's rows of {file}, not one number",
                values.len()
            )));
        };
        out.replace_range(start..=start + len, &fmt_num(100.0 * v));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::table::Values;
    use super::*;

    fn table() -> Table {
        Table::default()
            .with("l", Values::Str(["a", "b"].map(String::from).to_vec()))
            .with("e", Values::F64(vec![Some(0.49999), Some(1.0)]))
            .with("m", Values::F64(vec![Some(0.8061), Some(0.5)]))
            .with("h", Values::F64(vec![Some(0.0031), None]))
            .with("g", Values::F64(vec![Some(0.0344), None]))
            .with("n", Values::U64(vec![64, 10]))
    }

    /// Placeholders format numbers (decimals, sign, direction), pair a mean with its
    /// half-width, show text as it is and a missing value as "–".
    #[test]
    fn templates_format_one_row() {
        let t = table();
        let show = |text: &str, row: usize| -> Result<String> {
            let bound = Template::parse(text).unwrap();
            let shown = bound.bind(&t, "w", "f")?.show(&[row]);
            shown
        };
        assert_eq!(
            show("{e:3up} / σ={g:4} / {n:1}", 0).unwrap(),
            "0.500 / σ=0.0344 / 64.0"
        );
        assert_eq!(show("{e:3down}|{e}|{l}", 0).unwrap(), "0.499|0.49999|a");
        assert_eq!(
            show("{m±h:3} ({g:+3})", 0).unwrap(),
            "0.806 ± 0.003 (+0.034)"
        );
        assert_eq!(
            show("{m±h:3} ({g:+3})", 1).unwrap(),
            "0.500 (one repetition) (–)"
        );
        let e = show("{x}", 0).unwrap_err().to_string();
        assert!(e.contains("no column `x`"), "{e}");
        for bad in ["{e", "{e:3sideways}", "{e:+}", "{a b}"] {
            assert!(Template::parse(bad).is_err(), "{bad}");
        }
        // Rows that disagree are not one cell.
        let b = Template::parse("{l}").unwrap();
        let e = b
            .bind(&t, "w", "f")
            .unwrap()
            .show(&[0, 1])
            .unwrap_err()
            .to_string();
        assert!(e.contains("`l` holds 2 values"), "{e}");
        assert_eq!(
            percent_values("{percent:e} of {percent:n}", &t, &[1], "w", "f").unwrap(),
            "100 of 1000"
        );
        assert!(percent_values("{percent:l}", &t, &[0], "w", "f").is_err());
    }

    /// A template pivot with reference rows from another table (kept to the facet's value), a
    /// list column through a template, `{percent:NAME}` in a caption and a plot's overlay.
    #[test]
    fn template_pivots_reference_rows_list_cells_and_overlays_render() {
        use super::super::declarative::{parse, render};
        let dir = std::env::temp_dir().join(format!("dptune-template-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let strs = |v: &[&str]| Values::Str(v.iter().map(|s| s.to_string()).collect());
        Table::default()
            .with("v", strs(&["x", "x", "y"]))
            .with("l", strs(&["a", "a", "a"]))
            .with("e", Values::F64(vec![Some(1.0), Some(2.0), Some(1.0)]))
            .with("m", Values::F64(vec![Some(0.81), Some(0.82), Some(0.7)]))
            .with("h", Values::F64(vec![Some(0.01), None, Some(0.02)]))
            .with("c", Values::F64(vec![Some(0.95); 3]))
            .write_parquet(&dir.join("cells.parquet"))
            .unwrap();
        Table::default()
            .with("v", strs(&["x", "x", "y"]))
            .with("r", strs(&["front", "front", "front"]))
            .with("e", Values::F64(vec![Some(1.0), Some(2.0), Some(1.0)]))
            .with("acc", Values::F64(vec![Some(0.9), None, Some(0.8)]))
            .write_parquet(&dir.join("front.parquet"))
            .unwrap();
        let text = "[[tables]]\nname = \"g\"\ntable = \"cells.parquet\"\nfacet = \"v\"\nrows = \"l\"\n\
                    columns = \"e\"\ncell = \"{m±h:2}\"\ncolumn_label = \"ε\"\n\
                    reference_rows = { table = \"front.parquet\", rows = \"r\", cell = \"{acc:1}\" }\n\
                    caption = \"{title} ({facet}) at {percent:c}%\"\n\
                    [[tables]]\nname = \"l\"\ntable = \"cells.parquet\"\nfilter = { v = \"x\" }\n\
                    list = [{ column = \"e\" }, { column = \"h\", cell = \"{m:1} ± {h:3}\", missing = \"none\" }]\n\
                    [[plots]]\nname = \"p\"\ntable = \"cells.parquet\"\nfacet = \"v\"\nx = \"e\"\ny = \"m\"\n\
                    series = \"l\"\noverlay = { table = \"front.parquet\", x = \"e\", y = \"acc\", series = \"r\" }\n";
        let root: toml::Table = text.parse().unwrap();
        let o = parse(&Fields::new("f.toml", "", &root)).unwrap();
        render(&o, &dir, "cells.parquet", "T").unwrap();
        let md = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
        let g = md("g-x.md");
        assert!(g.starts_with("**T (x) at 95%**"), "{g}");
        assert!(g.contains("| l | ε=1 | ε=2 |"), "{g}");
        assert!(
            g.contains("| front | 0.9 | – |\n| a | 0.81 ± 0.01 | 0.82 (one repetition) |"),
            "{g}"
        );
        assert!(md("g-y.md").contains("| front | 0.8 |\n| a | 0.70 ± 0.02 |"));
        let l = md("l.md");
        assert!(
            l.contains("| 1 | 0.8 ± 0.010 |") && l.contains("| 2 | none |"),
            "{l}"
        );
        assert!(md("p-x.svg").contains("front"));
        // Bad templates and misplaced fields are named when parsed.
        for (extra, field) in [
            ("cell = \"{m:x}\"\n", "tables[0].cell"),
            ("cell = \"{m}\"\nvalue = \"m\"\n", "tables[0].value"),
            (
                "value = \"m\"\nreference_rows = { rows = \"r\", cell = \"{a}\" }\n",
                "tables[0].reference_rows",
            ),
            (
                "list = [{ column = \"m\", cell = \"{m\" }]\n",
                "tables[0].list[0].cell",
            ),
        ] {
            let text = format!("[[tables]]\nname = \"t\"\nrows = \"l\"\ncolumns = \"e\"\n{extra}");
            let text = text.replace("rows = \"l\"\ncolumns = \"e\"\nlist", "list");
            let root: toml::Table = text.parse().unwrap();
            let e = parse(&Fields::new("f.toml", "", &root))
                .unwrap_err()
                .to_string();
            assert!(e.contains(field), "{extra}: {e}");
        }
        let bad =
            "[[plots]]\nname = \"p\"\nx = \"e\"\ny = \"m\"\noverlay = { x = \"e\", y = \"a\" }\n";
        let root: toml::Table = bad.parse().unwrap();
        let e = parse(&Fields::new("f.toml", "", &root))
            .unwrap_err()
            .to_string();
        assert!(e.contains("plots[0].overlay"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
