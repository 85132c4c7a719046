//! A table's values as cells, and filters over them: what the declarations, their templates
//! and the claims read rows by (below all three).

use super::fields::Fields;
use super::table::{Table, Values};
use crate::error::{fmt_num, Error, Result};

/// Rows kept: every column must hold one of its values.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Filter(pub(super) Vec<(String, Vec<Cell>)>);

/// A `filter = { column = value or [values], … }` as written.
pub(super) fn filter(f: &Fields, given: Option<toml::Table>) -> Result<Filter> {
    let bad = |k: &str| {
        f.bad(
            &format!("filter.{k}"),
            "a string, a finite number, a boolean or a non-empty list of them",
        )
    };
    let cell = |k: &str, v: toml::Value| match v {
        toml::Value::String(s) => Ok(Cell::Str(s)),
        toml::Value::Integer(i) => Ok(Cell::Num(i as f64)),
        toml::Value::Float(x) if x.is_finite() => Ok(Cell::Num(x)),
        toml::Value::Boolean(b) => Ok(Cell::Str(b.to_string())),
        _ => Err(bad(k)),
    };
    given
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| {
            let values = match v {
                toml::Value::Array(list) if list.is_empty() => return Err(bad(&k)),
                toml::Value::Array(list) => list
                    .into_iter()
                    .map(|v| cell(&k, v))
                    .collect::<Result<_>>()?,
                v => vec![cell(&k, v)?],
            };
            Ok((k, values))
        })
        .collect::<Result<_>>()
        .map(Filter)
}

/// One cell of any column, for grouping and filtering.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Cell {
    Str(String),
    Num(f64),
    Missing,
}

impl Cell {
    pub(super) fn label(&self) -> String {
        match self {
            Cell::Str(s) => s.clone(),
            Cell::Num(x) => fmt_num(*x),
            Cell::Missing => "–".into(),
        }
    }
    pub(super) fn num(&self) -> Option<f64> {
        match self {
            Cell::Num(x) => Some(*x),
            _ => None,
        }
    }
}

pub(super) fn cells(t: &Table, name: &str, what: &str, file: &str) -> Result<Vec<Cell>> {
    let Some((_, values)) = t.columns.iter().find(|(n, _)| n == name) else {
        let names: Vec<&str> = t.columns.iter().map(|(n, _)| n.as_str()).collect();
        return Err(Error::Infeasible(format!(
            "{what}: no column `{name}` in {file} (its columns: {})",
            names.join(", ")
        )));
    };
    Ok(match values {
        Values::Str(v) => v.iter().map(|s| Cell::Str(s.clone())).collect(),
        Values::U64(v) => v.iter().map(|&x| Cell::Num(x as f64)).collect(),
        Values::F64(v) => v
            .iter()
            .map(|x| x.map_or(Cell::Missing, Cell::Num))
            .collect(),
        Values::Bool(v) => v.iter().map(|b| Cell::Str(b.to_string())).collect(),
    })
}

/// Distinct values in order of first appearance.
pub(super) fn distinct(v: &[Cell], rows: &[usize]) -> Vec<Cell> {
    let mut out: Vec<Cell> = Vec::new();
    for &i in rows {
        if !out.contains(&v[i]) {
            out.push(v[i].clone());
        }
    }
    out
}

/// The cells of a column that groups rows (x, series, facet, table rows and columns), each
/// number that a filter value matches taken as that value: rows kept as "E[K] = 10" group
/// and read as 10, though each holds its own 10 ± a few ulps.
pub(super) fn keys(
    t: &Table,
    name: &str,
    filter: &Filter,
    what: &str,
    file: &str,
) -> Result<Vec<Cell>> {
    let mut c = cells(t, name, what, file)?;
    for (_, want) in filter.0.iter().filter(|(col, _)| col == name) {
        for cell in c.iter_mut() {
            if let Some(w) = want.iter().find(|w| matches(cell, w)) {
                *cell = w.clone();
            }
        }
    }
    Ok(c)
}

/// Whether a cell holds a filter's value (numbers to 1e-12 relative).
pub(super) fn matches(cell: &Cell, want: &Cell) -> bool {
    match (cell, want) {
        (Cell::Num(a), Cell::Num(b)) => (a - b).abs() <= 1e-12 * b.abs().max(1.0),
        (a, b) => a == b,
    }
}

pub(super) fn kept(t: &Table, filter: &Filter, what: &str, file: &str) -> Result<Vec<usize>> {
    let mut rows: Vec<usize> = (0..t.height()).collect();
    for (col, want) in &filter.0 {
        let c = cells(t, col, what, file)?;
        rows.retain(|&i| want.iter().any(|w| matches(&c[i], w)));
    }
    if rows.is_empty() && !filter.0.is_empty() {
        let wanted: Vec<String> = filter
            .0
            .iter()
            .map(|(c, v)| {
                let v: Vec<String> = v.iter().map(Cell::label).collect();
                format!("{c} = {}", v.join(" or "))
            })
            .collect();
        return Err(Error::Infeasible(format!(
            "{what}: no row of {file} has {} (the figure or table would be empty): check the \
             filter's values against the table",
            wanted.join(" and ")
        )));
    }
    Ok(rows)
}
