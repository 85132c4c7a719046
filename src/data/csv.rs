//! Plain CSV data files: a header row (feature names, then `target`), one example per row,
//! cells separated by commas (no quoting: names and numbers never contain commas). Every
//! rejection names the file, the 1-based line and what to fix.

use super::{Dataset, Target};
use crate::error::{Error, Result};
use ndarray::Array2;
use std::collections::HashMap;
use std::path::Path;

/// How the `target` column is read.
#[derive(Clone, Debug, PartialEq)]
pub enum TargetKind {
    /// Class names; a row's label index is the position of its name in this list.
    Classes(Vec<String>),
    /// Finite real numbers (regression).
    Values,
}

/// Reads the CSV file at `path` (see [`parse_csv`]).
pub fn load_csv(path: &Path, name: &str, target: &TargetKind) -> Result<Dataset> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    parse_csv(&text, &path.display().to_string(), name, target)
}

/// Parses CSV `text`; `source` names it in errors (a file path), `name` names the data set.
/// Accepts `\n` or `\r\n` line ends, a trailing newline and a UTF-8 byte-order mark.
pub fn parse_csv(text: &str, source: &str, name: &str, target: &TargetKind) -> Result<Dataset> {
    let err = |line: usize, reason: String| Error::Data {
        file: source.to_string(),
        line,
        reason,
    };
    let class_index = class_index(target)?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines: Vec<&str> = text.lines().collect();
    // Blank lines at the end are an editor's trailing newlines, not missing examples.
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    let Some(header) = lines.first() else {
        return Err(err(
            1,
            "the file is empty: expected a header row (feature names, then `target`) and one \
             example per row"
                .into(),
        ));
    };
    let columns = parse_header(header).map_err(|reason| err(1, reason))?;
    let n_features = columns.len() - 1;
    if lines.len() == 1 {
        return Err(err(
            1,
            "the file has a header but no examples (one example per row after the header)".into(),
        ));
    }

    let n = lines.len() - 1;
    let mut x = Vec::with_capacity(n * n_features);
    let mut labels = Vec::new();
    let mut values = Vec::new();
    for (i, line) in lines[1..].iter().enumerate() {
        let line_no = i + 2;
        if line.trim().is_empty() {
            return Err(err(
                line_no,
                format!(
                    "the line is empty: expected {} cells (remove blank lines)",
                    columns.len()
                ),
            ));
        }
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        if cells.len() != columns.len() {
            return Err(err(
                line_no,
                format!(
                    "row has {} cells, the header has {}",
                    cells.len(),
                    columns.len()
                ),
            ));
        }
        for (j, cell) in cells[..n_features].iter().enumerate() {
            let v = parse_number(cell).map_err(|what| {
                err(
                    line_no,
                    format!("cell {} (`{}`) is {what}", j + 1, columns[j]),
                )
            })?;
            x.push(v);
        }
        let t = cells[n_features];
        match (&class_index, target) {
            (Some(index), TargetKind::Classes(names)) => match index.get(t) {
                Some(&k) => labels.push(k),
                None => {
                    return Err(err(
                        line_no,
                        format!("label `{t}` is not one of {}", names.join(", ")),
                    ))
                }
            },
            _ => {
                let v = parse_number(t)
                    .map_err(|what| err(line_no, format!("the target is {what}")))?;
                values.push(v);
            }
        }
    }

    let x = Array2::from_shape_vec((n, n_features), x).expect("n rows of n_features cells");
    let target = match target {
        TargetKind::Classes(names) => Target::Classes {
            labels,
            names: names.clone(),
        },
        TargetKind::Values => Target::Values(values),
    };
    Ok(Dataset {
        name: name.to_string(),
        x,
        target,
    })
}

/// Label name → index, after checking the declared names (none for regression).
fn class_index(target: &TargetKind) -> Result<Option<HashMap<&str, usize>>> {
    let TargetKind::Classes(names) = target else {
        return Ok(None);
    };
    if names.len() < 2 {
        return Err(Error::invalid(
            "class names",
            format!("[{}]", names.join(", ")),
            "at least two names",
        ));
    }
    let mut index = HashMap::new();
    for (k, name) in names.iter().enumerate() {
        if name.is_empty() || name.contains(',') || name.trim() != name {
            return Err(Error::invalid(
                "class name",
                format!("`{name}`"),
                "a non-empty name without commas or surrounding spaces",
            ));
        }
        if index.insert(name.as_str(), k).is_some() {
            return Err(Error::invalid(
                "class names",
                format!("[{}]", names.join(", ")),
                "distinct names",
            ));
        }
    }
    Ok(Some(index))
}

/// The column names; the last is `target`, at least one feature, no blanks or duplicates.
fn parse_header(header: &str) -> std::result::Result<Vec<&str>, String> {
    let columns: Vec<&str> = header.split(',').map(str::trim).collect();
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (j, &c) in columns.iter().enumerate() {
        if c.is_empty() {
            return Err(format!(
                "column {} of the header has no name (the header lists feature names, then \
                 `target`)",
                j + 1
            ));
        }
        if let Some(first) = seen.insert(c, j) {
            return Err(format!(
                "column {} has the same name `{c}` as column {}: column names must be distinct",
                j + 1,
                first + 1
            ));
        }
    }
    let last = columns[columns.len() - 1];
    if last != "target" {
        let hint = match seen.get("target") {
            Some(&j) => format!("; `target` is column {}, move it to the end", j + 1),
            None => String::new(),
        };
        return Err(format!(
            "the last column is `{last}`, expected `target` (the header lists feature names, \
             then `target`){hint}"
        ));
    }
    if columns.len() < 2 {
        return Err("the header has no feature columns before `target`".into());
    }
    Ok(columns)
}

/// A finite number, or what the cell is instead (for the error message).
pub(super) fn parse_number(cell: &str) -> std::result::Result<f64, String> {
    if cell.is_empty() {
        return Err("empty, not a number".into());
    }
    match cell.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        Ok(_) => Err(format!("`{cell}`, not a finite number")),
        Err(_) => Err(format!("`{cell}`, not a number")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classes() -> TargetKind {
        TargetKind::Classes(vec!["no".into(), "yes".into()])
    }

    #[test]
    fn parses_a_small_file_with_crlf_and_trailing_newlines() {
        let text = "\u{feff}a,b,target\r\n1,2.5,yes\r\n-3e2, 4 ,no\r\n\r\n";
        let d = parse_csv(text, "t.csv", "t", &classes()).unwrap();
        assert_eq!(d.name, "t");
        assert_eq!(d.x, ndarray::array![[1.0, 2.5], [-300.0, 4.0]]);
        assert_eq!(d.labels(), Some(&[1, 0][..]));
        let r = parse_csv("a,target\n1,0.5\n2,-7\n", "r.csv", "r", &TargetKind::Values).unwrap();
        assert_eq!(r.values(), Some(&[0.5, -7.0][..]));
    }

    #[test]
    fn rejects_bad_class_declarations_and_headers() {
        let one = TargetKind::Classes(vec!["a".into()]);
        assert!(parse_csv("x,target\n1,a\n", "f", "f", &one).is_err());
        let dup = TargetKind::Classes(vec!["a".into(), "a".into()]);
        assert!(parse_csv("x,target\n1,a\n", "f", "f", &dup).is_err());
        let msg = |t: &str| {
            parse_csv(t, "f.csv", "f", &TargetKind::Values)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            msg("target\n1\n"),
            "f.csv:1: the header has no feature columns before `target`"
        );
        assert!(msg("a,,target\n1,2,3\n").contains("column 2 of the header has no name"));
        assert!(msg("target,a\n1,2\n").contains("`target` is column 1, move it to the end"));
        assert!(msg("a,b\n1,2\n\n3,4\n").contains("the last column is `b`"));
        assert_eq!(
            msg("a,target\n1,2\n\n3,4\n"),
            "f.csv:3: the line is empty: expected 2 cells (remove blank lines)"
        );
        assert_eq!(
            msg("a,target\n1,\n"),
            "f.csv:2: the target is empty, not a number"
        );
    }
}
