//! A small typed column table: what the harness computes, what it stores as parquet (polars), and
//! what reports read back. Non-finite numbers are stored as nulls, so no NaN ever reaches a
//! result file or a printed table.

use crate::error::{Error, Result};
use polars::prelude::*;
use std::path::Path;

/// One typed column.
#[derive(Clone, Debug, PartialEq)]
pub enum Values {
    Str(Vec<String>),
    U64(Vec<u64>),
    /// Nullable floats (None = not applicable, or not finite).
    F64(Vec<Option<f64>>),
    Bool(Vec<bool>),
}

impl Values {
    fn len(&self) -> usize {
        match self {
            Values::Str(v) => v.len(),
            Values::U64(v) => v.len(),
            Values::F64(v) => v.len(),
            Values::Bool(v) => v.len(),
        }
    }

    fn extend(&mut self, other: &Values) -> bool {
        match (self, other) {
            (Values::Str(a), Values::Str(b)) => a.extend_from_slice(b),
            (Values::U64(a), Values::U64(b)) => a.extend_from_slice(b),
            (Values::F64(a), Values::F64(b)) => a.extend_from_slice(b),
            (Values::Bool(a), Values::Bool(b)) => a.extend_from_slice(b),
            _ => return false,
        }
        true
    }
}

/// Whether column `name` holds wall-clock times (they differ between runs).
pub fn is_timing(name: &str) -> bool {
    name == "wall_ms" || name.ends_with("_wall_ms")
}

/// Named columns of equal length, in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    pub columns: Vec<(String, Values)>,
}

/// A float cell: finite values only.
pub fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

/// The field names of one serialised row, in field order (serde_json's maps sort their keys;
/// the text keeps the order).
struct FieldOrder(Vec<String>);

impl<'de> serde::Deserialize<'de> for FieldOrder {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = FieldOrder;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a row (a struct of cells)")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<FieldOrder, A::Error> {
                let mut names = Vec::new();
                while let Some((name, _)) = map.next_entry::<String, serde::de::IgnoredAny>()? {
                    names.push(name);
                }
                Ok(FieldOrder(names))
            }
        }
        d.deserialize_map(Visit)
    }
}

impl Table {
    /// The table of `rows`, a `#[derive(Serialize)]` struct per row: one column per field, in
    /// field order; strings, unsigned integers (`u64`, `usize`), booleans, and floats (`f64`
    /// or `Option<f64>`; `None` and non-finite values are nulls). Every row has the same
    /// fields; an empty slice is the empty table.
    pub fn from_rows<T: serde::Serialize>(rows: &[T]) -> Result<Table> {
        use serde_json::Value;
        let mut table = Table::default();
        for (r, row) in rows.iter().enumerate() {
            let fail = |e: serde_json::Error| Error::Numerical(format!("row {r}: {e}"));
            // The values exactly (no text round trip), the order from the text.
            let Value::Object(mut values) = serde_json::to_value(row).map_err(fail)? else {
                return Err(Error::Numerical(format!("row {r} is not a struct")));
            };
            let text = serde_json::to_string(row).map_err(fail)?;
            let order: FieldOrder = serde_json::from_str(&text).map_err(fail)?;
            let cells: Vec<(String, Value)> = order
                .0
                .into_iter()
                .map(|name| {
                    let cell = values.remove(&name).unwrap_or(Value::Null);
                    (name, cell)
                })
                .collect();
            if r > 0 && cells.len() != table.columns.len() {
                return Err(Error::Numerical(format!(
                    "row {r} has {} cells, the first {}",
                    cells.len(),
                    table.columns.len()
                )));
            }
            for (c, (name, cell)) in cells.into_iter().enumerate() {
                let value = match cell {
                    Value::String(s) => Values::Str(vec![s]),
                    Value::Bool(b) => Values::Bool(vec![b]),
                    Value::Number(n) if n.is_u64() => Values::U64(vec![n.as_u64().unwrap_or(0)]),
                    Value::Number(n) if n.is_f64() => Values::F64(vec![n.as_f64().and_then(finite)]),
                    Value::Null => Values::F64(vec![None]),
                    other => {
                        return Err(Error::Numerical(format!(
                            "column `{name}`: {other} is not a cell (string, unsigned integer, number or boolean)"
                        )))
                    }
                };
                if r == 0 {
                    table.columns.push((name, value));
                } else if table.columns[c].0 != name || !table.columns[c].1.extend(&value) {
                    return Err(Error::Numerical(format!(
                        "row {r}: column `{name}` does not match the first row's `{}`",
                        table.columns[c].0
                    )));
                }
            }
        }
        Ok(table)
    }

    /// [`Table::from_rows`] with the experiment's name in front: the first column of every
    /// study's table.
    pub fn from_experiment_rows<T: serde::Serialize>(
        experiment: &str,
        rows: &[T],
    ) -> Result<Table> {
        #[derive(serde::Serialize)]
        struct Tagged<'a, T> {
            experiment: &'a str,
            #[serde(flatten)]
            row: &'a T,
        }
        let tagged: Vec<Tagged<T>> = rows.iter().map(|row| Tagged { experiment, row }).collect();
        Table::from_rows(&tagged)
    }

    /// The rows as `#[derive(Deserialize)]` structs, by column name (the inverse of
    /// [`Table::from_rows`]; columns the struct does not name are passed over). A null
    /// meets only an `Option`; an error names the row and the column.
    pub fn rows<T: serde::de::DeserializeOwned>(&self) -> Result<Vec<T>> {
        use serde_json::Value;
        (0..self.height())
            .map(|i| {
                let row: serde_json::Map<String, Value> = self
                    .columns
                    .iter()
                    .map(|(name, values)| {
                        let cell = match values {
                            Values::Str(v) => Value::from(v[i].as_str()),
                            Values::U64(v) => Value::from(v[i]),
                            Values::F64(v) => v[i].map_or(Value::Null, Value::from),
                            Values::Bool(v) => Value::from(v[i]),
                        };
                        (name.clone(), cell)
                    })
                    .collect();
                serde_path_to_error::deserialize(Value::Object(row))
                    .map_err(|e| Error::Numerical(format!("row {i}: {}: {}", e.path(), e.inner())))
            })
            .collect()
    }

    /// Adds a column (builder style).
    pub fn with(mut self, name: &str, values: Values) -> Self {
        self.columns.push((name.to_string(), values));
        self
    }

    pub fn height(&self) -> usize {
        self.columns.first().map_or(0, |(_, v)| v.len())
    }

    pub fn names(&self) -> Vec<&str> {
        self.columns.iter().map(|(n, _)| n.as_str()).collect()
    }

    fn column(&self, name: &str) -> Result<&Values> {
        self.columns
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
            .ok_or_else(|| Error::Infeasible(format!("result table has no column `{name}`")))
    }

    pub fn str(&self, name: &str) -> Result<&[String]> {
        match self.column(name)? {
            Values::Str(v) => Ok(v),
            _ => Err(Error::Infeasible(format!("column `{name}` is not text"))),
        }
    }

    pub fn f64(&self, name: &str) -> Result<&[Option<f64>]> {
        match self.column(name)? {
            Values::F64(v) => Ok(v),
            _ => Err(Error::Infeasible(format!("column `{name}` is not a float"))),
        }
    }

    /// A float column that older tables may lack (None when absent).
    pub fn f64_if_any(&self, name: &str) -> Result<Option<&[Option<f64>]>> {
        match self.names().contains(&name) {
            true => self.f64(name).map(Some),
            false => Ok(None),
        }
    }

    pub fn u64(&self, name: &str) -> Result<&[u64]> {
        match self.column(name)? {
            Values::U64(v) => Ok(v),
            _ => Err(Error::Infeasible(format!(
                "column `{name}` is not an integer"
            ))),
        }
    }

    pub fn bool(&self, name: &str) -> Result<&[bool]> {
        match self.column(name)? {
            Values::Bool(v) => Ok(v),
            _ => Err(Error::Infeasible(format!(
                "column `{name}` is not a boolean"
            ))),
        }
    }

    /// Appends the rows of `other` (same columns in the same order).
    pub fn append(&mut self, other: &Table) -> Result<()> {
        if self.columns.is_empty() {
            *self = other.clone();
            return Ok(());
        }
        if self.names() != other.names() {
            return Err(Error::Infeasible(format!(
                "cannot append tables with different columns ({:?} vs {:?})",
                self.names(),
                other.names()
            )));
        }
        for ((name, a), (_, b)) in self.columns.iter_mut().zip(&other.columns) {
            if !a.extend(b) {
                return Err(Error::Infeasible(format!("column `{name}` changed type")));
            }
        }
        Ok(())
    }

    /// The table without its timing columns (`wall_ms` and every `…_wall_ms`): what must be
    /// identical between two runs of one configuration.
    pub fn without_timing(&self) -> Table {
        Table {
            columns: self
                .columns
                .iter()
                .filter(|(n, _)| !is_timing(n))
                .cloned()
                .collect(),
        }
    }

    /// The table without column `name` (e.g. wall time, before comparing two runs).
    pub fn without(&self, name: &str) -> Table {
        Table {
            columns: self
                .columns
                .iter()
                .filter(|(n, _)| n != name)
                .cloned()
                .collect(),
        }
    }

    fn to_frame(&self) -> Result<DataFrame> {
        let height = self.height();
        let columns = self
            .columns
            .iter()
            .map(|(name, v)| {
                if v.len() != height {
                    return Err(Error::Infeasible(format!(
                        "column `{name}` has a ragged length"
                    )));
                }
                let name = PlSmallStr::from(name.as_str());
                Ok(match v {
                    Values::Str(v) => Column::new(name, v),
                    Values::U64(v) => Column::new(name, v),
                    Values::F64(v) => Column::new(name, v),
                    Values::Bool(v) => Column::new(name, v),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        DataFrame::new(height, columns).map_err(|e| Error::Infeasible(e.to_string()))
    }

    fn from_frame(df: &DataFrame, path: &Path) -> Result<Table> {
        let bad = |e: PolarsError| Error::io(path, e);
        let mut columns = Vec::new();
        for col in df.columns() {
            let s = col.as_materialized_series();
            let values = match s.dtype() {
                DataType::String => Values::Str(
                    s.str()
                        .map_err(bad)?
                        .iter()
                        .map(|x| x.unwrap_or_default().to_string())
                        .collect(),
                ),
                DataType::UInt64 => Values::U64(
                    s.u64()
                        .map_err(bad)?
                        .iter()
                        .map(|x| x.unwrap_or(0))
                        .collect(),
                ),
                DataType::Float64 => Values::F64(s.f64().map_err(bad)?.iter().collect()),
                DataType::Boolean => Values::Bool(
                    s.bool()
                        .map_err(bad)?
                        .iter()
                        .map(|x| x.unwrap_or(false))
                        .collect(),
                ),
                other => {
                    return Err(Error::io(
                        path,
                        format!("column `{}` has unsupported type {other}", s.name()),
                    ))
                }
            };
            columns.push((s.name().to_string(), values));
        }
        Ok(Table { columns })
    }

    /// Writes parquet atomically: a hidden temporary file in the same directory, then a rename,
    /// so a reader (or a resumed run) never sees a half-written file.
    pub fn write_parquet(&self, path: &Path) -> Result<()> {
        let bytes = self.parquet_bytes(path)?;
        write_bytes(path, &bytes)
    }

    /// The parquet encoding of the table (`path` names it in errors).
    pub fn parquet_bytes(&self, path: &Path) -> Result<Vec<u8>> {
        let mut df = self.to_frame()?;
        let mut bytes = Vec::new();
        ParquetWriter::new(&mut bytes)
            .finish(&mut df)
            .map_err(|e| Error::io(path, e))?;
        Ok(bytes)
    }

    pub fn read_parquet(path: &Path) -> Result<Table> {
        let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        let df = ParquetReader::new(file)
            .finish()
            .map_err(|e| Error::io(path, e))?;
        Table::from_frame(&df, path)
    }
}

pub use super::output::{write_atomically, write_bytes, write_text};

/// A rendered table: a header and rows of already formatted cells.
#[derive(Clone, Debug, PartialEq)]
pub struct Grid {
    pub caption: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Grid {
    pub fn markdown(&self) -> String {
        let mut s = format!("**{}**\n\n", self.caption);
        // A literal `|` inside a cell would split it.
        let row = |cells: &[String]| {
            let cells: Vec<String> = cells.iter().map(|c| c.replace('|', "\\|")).collect();
            format!("| {} |\n", cells.join(" | "))
        };
        s += &row(&self.header);
        s += &format!("|{}\n", "---|".repeat(self.header.len()));
        for r in &self.rows {
            s += &row(r);
        }
        s
    }

    pub fn latex(&self) -> String {
        let esc = |t: &str| {
            t.replace('\\', "\\textbackslash{}")
                .replace('&', "\\&")
                .replace('%', "\\%")
                .replace('_', "\\_")
                .replace('#', "\\#")
                .replace('$', "\\$")
                .replace('±', "$\\pm$")
                .replace('|', "$|$")
                .replace('η', "$\\eta$")
                .replace('ε', "$\\varepsilon$")
                .replace('λ', "$\\lambda$")
                .replace('μ', "$\\mu$")
                .replace('≤', "$\\le$")
        };
        let mut s = String::from("\\begin{table}[ht]\n\\centering\n");
        s += &format!(
            "\\begin{{tabular}}{{l{}}}\n\\toprule\n",
            "r".repeat(self.header.len().saturating_sub(1))
        );
        s += &format!(
            "{} \\\\\n\\midrule\n",
            self.header
                .iter()
                .map(|h| esc(h))
                .collect::<Vec<_>>()
                .join(" & ")
        );
        for r in &self.rows {
            s += &format!(
                "{} \\\\\n",
                r.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" & ")
            );
        }
        s += &format!(
            "\\bottomrule\n\\end{{tabular}}\n\\caption{{{}}}\n\\end{{table}}\n",
            esc(&self.caption)
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize)]
    struct Row {
        name: String,
        runs: usize,
        seed: u64,
        epsilon: f64,
        score: Option<f64>,
        released: bool,
    }

    #[test]
    fn typed_rows_make_the_same_table_as_columns() {
        let tiny = f64::from_bits(1); // the smallest subnormal: exact, not through text
        let rows = [
            Row {
                name: "a".into(),
                runs: 3,
                seed: u64::MAX,
                epsilon: 0.1 + 0.2,
                score: None,
                released: true,
            },
            Row {
                name: "b".into(),
                runs: 0,
                seed: 7,
                epsilon: f64::NAN,
                score: Some(tiny),
                released: false,
            },
        ];
        let expected = Table::default()
            .with("name", Values::Str(vec!["a".into(), "b".into()]))
            .with("runs", Values::U64(vec![3, 0]))
            .with("seed", Values::U64(vec![u64::MAX, 7]))
            .with("epsilon", Values::F64(vec![Some(0.1 + 0.2), None]))
            .with("score", Values::F64(vec![None, Some(tiny)]))
            .with("released", Values::Bool(vec![true, false]));
        assert_eq!(Table::from_rows(&rows).unwrap(), expected);
        assert_eq!(Table::from_rows::<Row>(&[]).unwrap(), Table::default());
        // A negative integer is no cell type of the harness's tables.
        #[derive(serde::Serialize)]
        struct Bad {
            delta: i64,
        }
        let e = Table::from_rows(&[Bad { delta: -1 }])
            .unwrap_err()
            .to_string();
        assert!(e.contains("column `delta`"), "{e}");
    }

    /// `rows` reads back what `from_rows` wrote, exactly, by name (a column the struct does
    /// not name is passed over); a null meets only an `Option` and the error names where.
    #[test]
    fn typed_rows_read_back_exactly_by_name() {
        #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
        struct Back {
            seed: u64,
            score: Option<f64>,
            name: String,
            released: bool,
        }
        let rows = [
            Back {
                seed: u64::MAX,
                score: Some(f64::from_bits(1)),
                name: "a".into(),
                released: true,
            },
            Back {
                seed: 0,
                score: None,
                name: "b".into(),
                released: false,
            },
        ];
        let t = Table::from_rows(&rows)
            .unwrap()
            .with("extra", Values::F64(vec![Some(0.1 + 0.2), None]));
        assert_eq!(t.rows::<Back>().unwrap(), rows);
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct Strict {
            extra: f64,
        }
        let e = t.rows::<Strict>().unwrap_err().to_string();
        assert!(e.contains("row 1") && e.contains("extra"), "{e}");
    }

    #[test]
    fn parquet_round_trip_keeps_types_and_nulls() {
        let t = Table::default()
            .with("name", Values::Str(vec!["a".into(), "b".into()]))
            .with("n", Values::U64(vec![1, u64::MAX]))
            .with("x", Values::F64(vec![Some(0.1), None]))
            .with("ok", Values::Bool(vec![true, false]));
        let dir = std::env::temp_dir().join(format!("dptune-table-{}", std::process::id()));
        let path = dir.join("t.parquet");
        t.write_parquet(&path).unwrap();
        assert_eq!(Table::read_parquet(&path).unwrap(), t);
        let leftovers: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(".tmp")
            })
            .collect();
        assert!(leftovers.is_empty());
        let mut u = t.clone();
        u.append(&t).unwrap();
        assert_eq!(u.height(), 4);
        assert!(u.append(&t.without("x")).is_err());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn latex_escapes_and_markdown_aligns() {
        let g = Grid {
            caption: "ε at 5% & more".into(),
            header: vec!["dist".into(), "E[K]=10".into()],
            rows: vec![vec!["tnb_η".into(), "1 ± 2".into()]],
        };
        assert!(g.markdown().contains("| tnb_η | 1 ± 2 |"));
        let l = g.latex();
        assert!(l.contains("5\\% \\& more") && l.contains("tnb\\_$\\eta$") && l.contains("$\\pm$"));
    }
}
