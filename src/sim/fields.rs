//! Typed access to an experiment file's TOML tables: every error names the file, the field's
//! full path (`tuners[2].mean`) and the reason.

use crate::accounting::{Accountant, Conversion, Orders};
use crate::error::{Error, Range, Result};
use crate::workloads::WorkloadSpec;

pub use crate::params::{MAX_COUNT, MAX_REPETITIONS};

pub use super::code_graph::fnv1a;

pub(crate) fn fail(file: &str, field: &str, reason: &str) -> Error {
    Error::Experiment {
        file: file.to_string(),
        at: String::new(),
        field: field.to_string(),
        reason: reason.to_string(),
    }
}

/// Typed access to one table of the file, with errors that carry the field's full path.
pub(crate) struct Fields<'a> {
    file: &'a str,
    prefix: String,
    pub(crate) table: &'a toml::Table,
}

impl<'a> Fields<'a> {
    pub(crate) fn new(file: &'a str, prefix: &str, table: &'a toml::Table) -> Self {
        Fields {
            file,
            prefix: prefix.to_string(),
            table,
        }
    }

    pub(crate) fn path(&self, key: &str) -> String {
        if self.prefix.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.prefix)
        }
    }

    pub(crate) fn bad(&self, key: &str, reason: &str) -> Error {
        fail(self.file, &self.path(key), reason)
    }

    pub(crate) fn missing(&self, key: &str, what: &str) -> Error {
        self.bad(key, &format!("missing: {what}"))
    }

    /// A library error (e.g. from a tuner's constructor) located in this table.
    pub(crate) fn wrap(&self, e: Error) -> Error {
        match e {
            Error::InvalidParameter {
                name,
                value,
                allowed,
            } => self.bad(name, &format!("{value} is invalid: must be {allowed}")),
            // Located at the unknown key itself, not at its table.
            Error::UnknownKey { ref key, .. } if self.table.contains_key(key.as_str()) => {
                fail(self.file, &self.path(key), &e.to_string())
            }
            Error::Parameter {
                owner,
                field,
                reason,
            } if !field.is_empty() => self.bad(&field, &format!("{owner}: {reason}")),
            other => fail(self.file, &self.prefix, &other.to_string()),
        }
    }

    pub(crate) fn get(&self, key: &str) -> Option<&'a toml::Value> {
        self.table.get(key)
    }

    pub(crate) fn string(&self, key: &'static str) -> Result<Option<&'a str>> {
        crate::params::string(self.table, key).map_err(|e| self.wrap(e))
    }

    /// An integer >= `min`, bounded as [`crate::params::integer`] bounds sizes.
    pub(crate) fn integer(&self, key: &'static str, min: u64) -> Result<Option<u64>> {
        crate::params::integer(self.table, key, min).map_err(|e| self.wrap(e))
    }

    /// An integer in [`min`, `max`], `why` saying what the upper bound protects (memory or
    /// time), for counts whose cost grows faster than the global size bound allows.
    pub(crate) fn integer_in(
        &self,
        key: &'static str,
        min: u64,
        max: u64,
        why: &str,
    ) -> Result<Option<u64>> {
        crate::params::integer_in(self.table, key, min, max, why).map_err(|e| self.wrap(e))
    }

    pub(crate) fn number(&self, key: &'static str, range: Range) -> Result<Option<f64>> {
        match crate::params::number(self.table, key).map_err(|e| self.wrap(e))? {
            Some(x) => range.check(key, x).map(Some).map_err(|e| self.wrap(e)),
            None => Ok(None),
        }
    }

    pub(crate) fn numbers(&self, key: &'static str, range: Range) -> Result<Option<Vec<f64>>> {
        match crate::params::numbers(self.table, key).map_err(|e| self.wrap(e))? {
            Some(v) => v
                .into_iter()
                .map(|x| range.check(key, x).map_err(|e| self.wrap(e)))
                .collect::<Result<Vec<_>>>()
                .map(Some),
            None => Ok(None),
        }
    }

    pub(crate) fn pair(&self, key: &'static str) -> Result<Option<[f64; 2]>> {
        match crate::params::numbers(self.table, key).map_err(|e| self.wrap(e))? {
            Some(v) if v.len() == 2 && v.iter().all(|x| x.is_finite()) && v[0] < v[1] => {
                Ok(Some([v[0], v[1]]))
            }
            Some(_) => Err(self.bad(key, "a pair [low, high] with low < high")),
            None => Ok(None),
        }
    }

    /// The tables of an array of tables (`[[key]]`), each located as `key[i]`; an error when
    /// `key` is something else, or when it is absent or empty and `required`.
    pub(crate) fn array(&self, key: &'static str, required: bool) -> Result<Vec<Fields<'a>>> {
        let list = match self.table.get(key) {
            Some(toml::Value::Array(a)) if !a.is_empty() || !required => a,
            None if !required => return Ok(Vec::new()),
            None => return Err(self.missing(key, &format!("at least one [[{key}]] table"))),
            Some(_) => {
                return Err(self.bad(
                    key,
                    &format!("must be a non-empty array of [[{key}]] tables"),
                ))
            }
        };
        list.iter()
            .enumerate()
            .map(|(i, v)| {
                let prefix = self.path(&format!("{key}[{i}]"));
                match v.as_table() {
                    Some(t) => Ok(Fields {
                        file: self.file,
                        prefix,
                        table: t,
                    }),
                    None => Err(fail(self.file, &prefix, "must be a table")),
                }
            })
            .collect()
    }

    /// `linear` (the default) or `log`: true for log.
    pub(crate) fn log_scale(&self, key: &'static str) -> Result<bool> {
        match self.string(key)? {
            None | Some("linear") => Ok(false),
            Some("log") => Ok(true),
            Some(_) => Err(self.bad(key, "`linear` or `log`")),
        }
    }

    pub(crate) fn table(&self, key: &'static str) -> Result<Option<Fields<'a>>> {
        match self.table.get(key) {
            None => Ok(None),
            Some(toml::Value::Table(t)) => Ok(Some(Fields {
                file: self.file,
                prefix: self.path(key),
                table: t,
            })),
            Some(_) => Err(self.bad(key, "must be a table")),
        }
    }

    /// A required non-empty list of numbers in `range`.
    pub(crate) fn required_numbers(&self, key: &'static str, range: Range) -> Result<Vec<f64>> {
        match self.numbers(key, range)? {
            Some(v) if !v.is_empty() => Ok(v),
            _ => Err(self.missing(key, "a non-empty list of numbers")),
        }
    }

    /// A required non-empty list of integers >= `min`.
    pub(crate) fn integers(&self, key: &'static str, min: f64) -> Result<Vec<u64>> {
        self.required_numbers(key, Range::NonNegative)?
            .into_iter()
            .map(|x| {
                if x.fract() == 0.0 && x >= min && x <= MAX_COUNT as f64 {
                    Ok(x as u64)
                } else {
                    Err(self.bad(key, &format!("integers >= {min} and <= {MAX_COUNT}")))
                }
            })
            .collect()
    }

    /// A required non-empty list of strings.
    pub(crate) fn strings(&self, key: &'static str) -> Result<Vec<&'a str>> {
        match self.get(key) {
            Some(toml::Value::Array(a)) if !a.is_empty() => a
                .iter()
                .map(|v| v.as_str().ok_or_else(|| self.bad(key, "a list of strings")))
                .collect(),
            None => Err(self.missing(key, "a non-empty list of strings")),
            Some(_) => Err(self.bad(key, "a non-empty list of strings")),
        }
    }

    /// The `[workload]` table's workload family, and the table (for messages).
    pub(crate) fn workload(&self) -> Result<(Box<dyn WorkloadSpec>, Fields<'a>)> {
        let w = self
            .table("workload")?
            .ok_or_else(|| self.missing("workload", "a [workload] table"))?;
        let kind = w
            .string("kind")?
            .ok_or_else(|| w.missing("kind", "a workload kind such as `synthetic-gp`"))?;
        let spec = crate::workloads::build(kind, w.table).map_err(|e| w.wrap(e))?;
        Ok((spec, w))
    }

    /// The accountant of the `orders` and `conversion` fields (defaults: continuous, cks).
    pub(crate) fn accountant(&self) -> Result<Accountant> {
        let orders = match self.string("orders")? {
            None => Orders::Continuous,
            Some(o) => Orders::parse(o).map_err(|e| self.wrap(e))?,
        };
        let conversion = match self.string("conversion")? {
            None | Some("cks") => Conversion::Cks,
            Some("mironov") => Conversion::Mironov,
            Some(_) => return Err(self.bad("conversion", "`cks` or `mironov`")),
        };
        Ok(Accountant::new(orders, conversion))
    }

    /// Rejects keys not in `allowed` (a typo would otherwise be ignored).
    pub(crate) fn finish(&self, allowed: &[&str]) -> Result<()> {
        match self.table.keys().find(|k| !allowed.contains(&k.as_str())) {
            Some(k) => Err(self.bad(
                k,
                &format!("unknown field (expected one of: {})", allowed.join(", ")),
            )),
            None => Ok(()),
        }
    }

    /// Like `finish`, for the root table, whose common keys are checked by `load`.
    pub(crate) fn finish_some(&self, allowed: &[&str]) -> Result<()> {
        let mut all = vec!["name", "title", "kind", "description", "plots", "tables"];
        all.extend_from_slice(allowed);
        self.finish(&all)
    }
}
