//! Typed access to an experiment file's TOML tables: every error names the file, the field's
//! full path (`tuners[2].mean`) and the reason.

use crate::accounting::{Accountant, Conversion, Orders};
use crate::error::{Error, Range, Result};
use crate::params::{Count, OneOrMany};
use crate::workloads::WorkloadSpec;

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
            // Located at the unknown key itself (a path within this table), not at its table.
            Error::UnknownKey { ref key, .. } => fail(self.file, &self.path(key), &e.to_string()),
            Error::Parameter {
                owner,
                field,
                reason,
            } if !field.is_empty() => self.bad(&field, &format!("{owner}: {reason}")),
            other => fail(self.file, &self.prefix, &other.to_string()),
        }
    }

    /// Reads this table into its typed parameters `T` (a `#[derive(Deserialize)]` struct with
    /// `#[serde(deny_unknown_fields)]`; `owner` names it in messages, e.g. "a `curves`
    /// experiment"), leaving aside the keys `elsewhere` that other readers take (`[workload]`,
    /// `[[tuners]]`) and, in the root table, the keys every experiment has. Errors are located
    /// at the field.
    pub(crate) fn read<T: serde::de::DeserializeOwned>(
        &self,
        owner: &str,
        elsewhere: &[&str],
    ) -> Result<T> {
        let mut aside: Vec<&str> = elsewhere.to_vec();
        if self.prefix.is_empty() {
            aside.extend(ROOT_KEYS);
        }
        crate::params::read_except(owner, self.table, &aside).map_err(|e| self.wrap(e))
    }

    /// Each of `values` if it lies in `range`, else an error located at `key`.
    pub(crate) fn all_in_range(
        &self,
        key: &str,
        values: OneOrMany<f64>,
        range: Range,
    ) -> Result<Vec<f64>> {
        values
            .into_vec()
            .into_iter()
            .map(|x| self.in_range(key, x, range))
            .collect()
    }

    /// A required list of numbers (one number: a list of one), each in `range`.
    pub(crate) fn numbers_in(
        &self,
        key: &'static str,
        given: Option<OneOrMany<f64>>,
        range: Range,
    ) -> Result<Vec<f64>> {
        let given = given.ok_or_else(|| self.missing(key, "a non-empty list of numbers"))?;
        self.all_in_range(key, given, range)
    }

    /// A count at least `min`, or `default` when absent.
    pub(crate) fn count_or(
        &self,
        key: &str,
        given: Option<Count>,
        min: u64,
        default: u64,
    ) -> Result<u64> {
        given.map_or(Ok(default), |c| self.count(key, c, min))
    }

    /// A `[low, high]` pair as read, checked: both finite, low < high.
    pub(crate) fn interval(&self, key: &str, pair: [f64; 2]) -> Result<[f64; 2]> {
        if pair.iter().all(|x| x.is_finite()) && pair[0] < pair[1] {
            Ok(pair)
        } else {
            Err(self.bad(key, "a pair [low, high] with low < high"))
        }
    }

    /// The repetitions `seeds`, from 1 to [`MAX_SEEDS`], located.
    pub(crate) fn seeds(&self, given: Count) -> Result<u64> {
        match given.0 {
            1..=MAX_SEEDS => Ok(given.0),
            n => Err(self.bad(
                "seeds",
                &format!(
                    "{n} is invalid: must be a whole number from 1 to {MAX_SEEDS} (repetitions \
                     are bounded so that a run fits in memory and time)"
                ),
            )),
        }
    }

    /// A count as read, if at least `min`, located at `key`.
    pub(crate) fn count(&self, key: &str, given: Count, min: u64) -> Result<u64> {
        if given.0 >= min {
            Ok(given.0)
        } else {
            Err(self.bad(
                key,
                &format!("{} is invalid: must be an integer >= {min}", given.0),
            ))
        }
    }

    /// `value` if it lies in `range`, else an error located at `key` (a path within this
    /// table, such as `noise_free.a`).
    pub(crate) fn in_range(&self, key: &str, value: f64, range: Range) -> Result<f64> {
        if range.contains(value) {
            Ok(value)
        } else {
            Err(self.bad(
                key,
                &format!(
                    "{} is invalid: must be {range}",
                    crate::error::fmt_num(value)
                ),
            ))
        }
    }

    /// The accountant of the `orders` and `conversion` fields as read (defaults: continuous,
    /// cks).
    pub(crate) fn accountant_of(
        &self,
        orders: Option<&str>,
        conversion: Option<&str>,
    ) -> Result<Accountant> {
        let orders = match orders {
            None => Orders::Continuous,
            Some(o) => Orders::parse(o).map_err(|e| self.wrap(e))?,
        };
        let conversion = match conversion {
            None | Some("cks") => Conversion::Cks,
            Some("mironov") => Conversion::Mironov,
            Some(_) => return Err(self.bad("conversion", "`cks` or `mironov`")),
        };
        Ok(Accountant::new(orders, conversion))
    }

    pub(crate) fn string(&self, key: &'static str) -> Result<Option<&'a str>> {
        crate::params::string(self.table, key).map_err(|e| self.wrap(e))
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
}

/// The keys of every experiment file's root table, read by `load`: not a study's parameters.
/// The most repetitions (`seeds`) an experiment may ask for: docs/cli.md and
/// docs/architecture.md give this number (tests/suite/sim.rs holds them to it).
pub const MAX_SEEDS: u64 = 100_000;

const ROOT_KEYS: [&str; 7] = [
    "name",
    "title",
    "kind",
    "description",
    "plots",
    "tables",
    "claims",
];
