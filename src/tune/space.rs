//! The search space of `dptune tune` (issue 39): named hyperparameters, each uniform,
//! log-uniform, integer or a choice, declared in a search file's `[space]` table:
//!
//! ```toml
//! [space]
//! learning_rate = { log-uniform = [1e-4, 0.1] }
//! clip = { uniform = [0.1, 5] }
//! epochs = { integer = [1, 20] }
//! optimizer = { choice = ["sgd", "adam"] }
//! ```
//!
//! Tuners search the unit box, one coordinate per hyperparameter in the names' alphabetical
//! order (a TOML table keeps no order); a point of the box maps to the user's values here, and
//! only here.

use crate::error::{Error, Result};
use serde::Serialize;

/// One hyperparameter's range.
#[derive(Clone, Debug, PartialEq)]
pub enum Range {
    Uniform(f64, f64),
    /// Uniform in the logarithm: both ends > 0.
    LogUniform(f64, f64),
    /// Every integer from the first to the second, inclusive, equally likely.
    Integer(i64, i64),
    Choice(Vec<String>),
}

/// A value given to the user's command.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Value {
    Number(f64),
    Integer(i64),
    Text(String),
}

/// The named ranges, in the names' alphabetical order.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchSpace(pub Vec<(String, Range)>);

fn bad(file: &str, key: &str, reason: &str) -> Error {
    Error::Experiment {
        file: file.into(),
        at: String::new(),
        field: format!("space.{key}"),
        reason: reason.into(),
    }
}

const FORMS: &str = "one of { uniform = [lo, hi] }, { log-uniform = [lo, hi] } (lo > 0), \
                     { integer = [lo, hi] } or { choice = [\"a\", \"b\", …] }";

impl SearchSpace {
    /// The `[space]` table of `file` (for errors): at least one hyperparameter, each in one of
    /// the four forms, with a range that is not empty.
    pub fn parse(file: &str, space: &toml::Table) -> Result<SearchSpace> {
        if space.is_empty() {
            return Err(Error::Experiment {
                file: file.into(),
                at: String::new(),
                field: "space".into(),
                reason: "empty: declare at least one hyperparameter".into(),
            });
        }
        let mut out = Vec::new();
        for (key, v) in space {
            // The name becomes an environment variable (DPTUNE_HP_<NAME>).
            let mut chars = key.chars();
            let named = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !named {
                return Err(bad(
                    file,
                    key,
                    "a name of letters, digits and _, starting with a letter (it becomes the \
                     environment variable DPTUNE_HP_<NAME>)",
                ));
            }
            let form = v
                .as_table()
                .filter(|t| t.len() == 1)
                .and_then(|t| t.iter().next())
                .ok_or_else(|| bad(file, key, FORMS))?;
            let pair = |what: &str| -> Result<[f64; 2]> {
                let list = form.1.as_array().filter(|l| l.len() == 2);
                let nums: Option<Vec<f64>> = list.map(|l| {
                    l.iter()
                        .filter_map(|x| x.as_float().or_else(|| x.as_integer().map(|i| i as f64)))
                        .collect()
                });
                match nums.as_deref() {
                    Some(&[lo, hi]) if lo.is_finite() && hi.is_finite() && lo < hi => Ok([lo, hi]),
                    _ => Err(bad(
                        file,
                        key,
                        &format!("{what} = [lo, hi]: two finite numbers with lo < hi"),
                    )),
                }
            };
            let range = match form.0.as_str() {
                "uniform" => {
                    let [lo, hi] = pair("uniform")?;
                    Range::Uniform(lo, hi)
                }
                "log-uniform" => {
                    let [lo, hi] = pair("log-uniform")?;
                    if lo <= 0.0 {
                        return Err(bad(
                            file,
                            key,
                            "log-uniform = [lo, hi] needs lo > 0 (its logarithm is searched): \
                             use uniform for a range through 0",
                        ));
                    }
                    Range::LogUniform(lo, hi)
                }
                "integer" => {
                    let [lo, hi] = pair("integer")?;
                    if lo.fract() != 0.0 || hi.fract() != 0.0 || lo.abs() > 1e15 || hi.abs() > 1e15
                    {
                        return Err(bad(file, key, "integer = [lo, hi]: two integers, lo < hi"));
                    }
                    Range::Integer(lo as i64, hi as i64)
                }
                "choice" => {
                    let list: Option<Vec<String>> = form.1.as_array().map(|l| {
                        l.iter()
                            .filter_map(|x| x.as_str().map(String::from))
                            .collect()
                    });
                    match list {
                        Some(l)
                            if !l.is_empty()
                                && Some(l.len()) == form.1.as_array().map(Vec::len) =>
                        {
                            Range::Choice(l)
                        }
                        _ => {
                            return Err(bad(
                                file,
                                key,
                                "choice = [\"a\", \"b\", …]: a non-empty list of strings",
                            ))
                        }
                    }
                }
                _ => return Err(bad(file, key, FORMS)),
            };
            out.push((key.clone(), range));
        }
        Ok(SearchSpace(out))
    }

    /// The number of coordinates of the unit box searched.
    pub fn dim(&self) -> usize {
        self.0.len()
    }

    /// The user's values at point `u` of the unit box (coordinates outside [0, 1] are
    /// clamped; a wrong length is an error).
    pub fn values(&self, u: &[f64]) -> Result<Vec<(String, Value)>> {
        if u.len() != self.dim() {
            return Err(Error::invalid(
                "point",
                u.len(),
                format!("{} coordinates, one per hyperparameter", self.dim()),
            ));
        }
        Ok(self
            .0
            .iter()
            .zip(u)
            .map(|((name, range), &x)| {
                let x = if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) };
                // The last bin takes x = 1 too.
                let bin = |n: usize| ((x * n as f64) as usize).min(n - 1);
                let v = match range {
                    Range::Uniform(lo, hi) => Value::Number(lo + x * (hi - lo)),
                    // The top end exactly (exp(ln hi) may round below it).
                    Range::LogUniform(_, hi) if x == 1.0 => Value::Number(*hi),
                    Range::LogUniform(lo, hi) => Value::Number(
                        libm::exp(libm::log(*lo) + x * (libm::log(*hi) - libm::log(*lo)))
                            .clamp(*lo, *hi),
                    ),
                    Range::Integer(lo, hi) => {
                        Value::Integer(lo + bin((hi - lo + 1) as usize) as i64)
                    }
                    Range::Choice(list) => Value::Text(list[bin(list.len())].clone()),
                };
                (name.clone(), v)
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn space(text: &str) -> Result<SearchSpace> {
        SearchSpace::parse("s.toml", &text.parse::<toml::Table>().unwrap())
    }

    #[test]
    fn points_of_the_unit_box_map_to_the_declared_values() {
        let s = space(
            "lr = { log-uniform = [1e-4, 1e-2] }\nclip = { uniform = [0, 2] }\n\
             epochs = { integer = [1, 4] }\nopt = { choice = [\"sgd\", \"adam\"] }",
        )
        .unwrap();
        let names: Vec<&str> = s.0.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["clip", "epochs", "lr", "opt"]);
        let v = s.values(&[0.25, 0.5, 0.5, 0.49]).unwrap();
        assert_eq!(v[0].1, Value::Number(0.5));
        assert_eq!(v[1].1, Value::Integer(3)); // bins 1 | 2 | 3 | 4 of width 1/4
        let Value::Number(lr) = v[2].1 else { panic!() };
        assert!((lr - 1e-3).abs() < 1e-15, "{lr}");
        assert_eq!(v[3].1, Value::Text("sgd".into()));
        // The ends are reached and kept inside; each integer is equally likely.
        let ends = s.values(&[1.0, 1.0, 1.0, 1.0]).unwrap();
        assert_eq!(ends[1].1, Value::Integer(4));
        assert_eq!(ends[2].1, Value::Number(1e-2));
        assert_eq!(ends[3].1, Value::Text("adam".into()));
        let mut counts = [0; 4];
        for i in 0..400 {
            let u = (i as f64 + 0.5) / 400.0;
            if let Value::Integer(k) = s.values(&[0.0, u, 0.0, 0.0]).unwrap()[1].1 {
                counts[(k - 1) as usize] += 1;
            }
        }
        assert_eq!(counts, [100; 4]);
        assert!(s.values(&[0.5]).is_err());
        let json = serde_json::to_string(&v.iter().map(|(_, v)| v).collect::<Vec<_>>()).unwrap();
        assert!(
            json.starts_with("[0.5,3,") && json.ends_with(",\"sgd\"]"),
            "{json}"
        );
    }

    #[test]
    fn bad_ranges_name_the_key_and_the_form() {
        for (text, key, says) in [
            ("", "space", "empty"),
            ("lr = { log-uniform = [0, 1] }", "space.lr", "lo > 0"),
            ("lr = { uniform = [1, 1] }", "space.lr", "lo < hi"),
            ("lr = { uniform = [1] }", "space.lr", "two finite numbers"),
            ("n = { integer = [1.5, 3] }", "space.n", "two integers"),
            ("o = { choice = [] }", "space.o", "non-empty"),
            ("o = { choice = [\"a\", 1] }", "space.o", "strings"),
            ("o = { normal = [0, 1] }", "space.o", "log-uniform"),
            ("o = 3", "space.o", "uniform"),
            (
                "\"learning-rate\" = { uniform = [0, 1] }",
                "space.learning-rate",
                "letters",
            ),
            (
                "_x = { uniform = [0, 1] }",
                "space._x",
                "starting with a letter",
            ),
        ] {
            let e = space(text).unwrap_err().to_string();
            assert!(e.contains(key) && e.contains(says), "{text}: {e}");
        }
    }
}
