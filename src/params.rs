//! Reading parameters from experiment-file tables (tuners, workloads, studies): [`read`] turns a
//! table into its typed form, a `#[derive(Deserialize)]` struct that refuses unknown keys (a typo
//! would otherwise be silently ignored), with errors that name the field's path and what it must
//! be; ranges are checked by the typed constructors the struct is handed to.

use crate::error::{Error, Result};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};

/// Reads `table` into the typed parameters `T` of `owner` (e.g. "tuner `naive`"): an unknown
/// key is an [`Error::UnknownKey`], any other mismatch an [`Error::Parameter`] at the field's
/// path within the table (`lengthscales[1]`).
pub fn read<T: DeserializeOwned>(owner: &str, table: &toml::Table) -> Result<T> {
    serde_path_to_error::deserialize(toml::Value::Table(table.clone())).map_err(|e| {
        let path = match e.path().to_string() {
            p if p == "." => String::new(),
            p => p,
        };
        // serde names Rust types ("expected u64"); a file's author reads words.
        let reason = [
            // The type says only "not negative"; the key's own least value (often 1) is checked
            // after, and said when a value is below it.
            ("expected u64", "expected a whole number (not negative)"),
            ("expected f64", "expected a number"),
            ("expected a sequence", "expected a list"),
            ("expected a borrowed string", "expected a string"),
        ]
        .iter()
        .fold(
            e.into_inner().message().trim().to_string(),
            |r, (from, to)| r.replace(from, to),
        );
        // serde words these two as "unknown field `k`, expected …" and "missing field `k`";
        // the path of a missing field stops at its table, so the key is taken from the words.
        let within = |key: &str| match path.as_str() {
            "" => key.to_string(),
            p if p == key || p.ends_with(&format!(".{key}")) => p.to_string(),
            p => format!("{p}.{key}"),
        };
        let named = |prefix: &str| {
            reason
                .strip_prefix(prefix)
                .and_then(|rest| rest.split('`').nth(1))
                .map(str::to_string)
        };
        if let Some(key) = named("unknown field") {
            let allowed = match reason.split_once(", expected ") {
                Some((_, list)) => list
                    .trim_start_matches("one of ")
                    .replace(" or ", ", ")
                    .replace('`', ""),
                None => "none".to_string(),
            };
            return Error::UnknownKey {
                owner: owner.to_string(),
                key: within(&key),
                allowed,
            };
        }
        if let Some(key) = named("missing field") {
            return Error::Parameter {
                owner: owner.to_string(),
                field: within(&key),
                reason: "missing (required)".into(),
            };
        }
        Error::Parameter {
            owner: owner.to_string(),
            field: path,
            reason,
        }
    })
}

/// Like [`read`], with the keys `aside` left out (other readers take them: a workload's
/// `kind`, an experiment's `[[tuners]]`); an unknown key's message lists them as allowed too.
pub fn read_except<T: DeserializeOwned>(
    owner: &str,
    table: &toml::Table,
    aside: &[&str],
) -> Result<T> {
    let mut rest = table.clone();
    for key in aside {
        rest.remove(*key);
    }
    read(owner, &rest).map_err(|e| match e {
        // A key of this table (not of a table inside it).
        Error::UnknownKey {
            owner,
            key,
            allowed,
        } if !key.contains(['.', '[']) && !aside.is_empty() => Error::UnknownKey {
            owner,
            key,
            allowed: format!("{allowed}, {}", aside.join(", ")),
        },
        other => other,
    })
}

/// A count read from a parameter file (candidates, evaluations, steps, users, …): an integer
/// from 0 to [`MAX_COUNT`], so a typo such as `candidates = 10000000000` fails when read
/// instead of allocating gigabytes. Lower bounds are the constructors'.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Count(pub u64);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let v = u64::deserialize(d)?;
        if v > MAX_COUNT {
            return Err(serde::de::Error::custom(format!(
                "at most {MAX_COUNT}: {v} is too large (sizes are bounded so a run fits in memory and time)"
            )));
        }
        Ok(Count(v))
    }
}

impl Count {
    /// The count, if at least `min` (a count of runs, points or users may need one or more).
    pub fn at_least(self, name: &'static str, min: u64) -> Result<u64> {
        if self.0 >= min {
            Ok(self.0)
        } else {
            Err(Error::invalid(name, self.0, format!("an integer >= {min}")))
        }
    }

    /// The count, if in [`min`, `max`]; `why` says what the upper bound protects (memory or
    /// time), for counts whose cost grows faster than [`MAX_COUNT`] allows.
    pub fn within(self, name: &'static str, min: u64, max: u64, why: &str) -> Result<u64> {
        if (min..=max).contains(&self.0) {
            Ok(self.0)
        } else {
            Err(Error::invalid(
                name,
                self.0,
                format!("an integer from {min} to {max} ({why})"),
            ))
        }
    }
}

/// A parameter given as one value or a list of them (`task = "a"` or `task = ["a", "b"]`).
#[derive(Clone, Debug, PartialEq)]
pub enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

/// Read by hand, not `#[serde(untagged)]`, whose only message is "data did not match any
/// variant of untagged enum OneOrMany": this one says what the value, or which list item, is
/// not (the field's path and line are [`read`]'s).
impl<'de, T: DeserializeOwned> Deserialize<'de> for OneOrMany<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use serde::de::Error as _;
        match toml::Value::deserialize(d)? {
            toml::Value::Array(items) => items
                .into_iter()
                .enumerate()
                .map(|(i, item)| {
                    T::deserialize(item).map_err(|e| {
                        D::Error::custom(format!("item {i}: {}", e.to_string().trim_end()))
                    })
                })
                .collect::<std::result::Result<_, _>>()
                .map(OneOrMany::Many),
            one => T::deserialize(one).map(OneOrMany::One).map_err(|e| {
                let e = e.to_string();
                D::Error::custom(format!("{} (or a list of such values)", e.trim_end()))
            }),
        }
    }
}

impl<T> OneOrMany<T> {
    pub fn into_vec(self) -> Vec<T> {
        match self {
            OneOrMany::One(x) => vec![x],
            OneOrMany::Many(v) => v,
        }
    }
}

/// A registry entry's constructor from experiment-file parameters.
pub type Builder<T> = fn(&toml::Table) -> Result<T>;

/// The entry `name` of a registry (tuners, workloads) built from `params`, or an error naming
/// `field` and listing the registered names.
pub fn from_registry<T>(
    registry: &[(&str, Builder<T>)],
    field: &'static str,
    name: &str,
    params: &toml::Table,
) -> Result<T> {
    match registry.iter().find(|(n, _)| *n == name) {
        Some((_, build)) => build(params),
        None => {
            let known: Vec<&str> = registry.iter().map(|(n, _)| *n).collect();
            Err(Error::invalid(
                field,
                name,
                format!("one of {}", known.join(", ")),
            ))
        }
    }
}

/// An optional parameter that the choices made so far require (`mean` for a best-of run).
pub fn given<T>(name: &'static str, value: Option<T>, what: &str) -> Result<T> {
    value.ok_or_else(|| Error::invalid(name, "missing", format!("{what} (required)")))
}

/// The largest count (candidates, grid or sweep points, users, steps, …) a parameter may ask
/// for: larger values are refused up front, before anything is allocated.
pub const MAX_COUNT: u64 = 1_000_000;

/// A string parameter, or None when absent.
pub fn string<'a>(params: &'a toml::Table, key: &'static str) -> Result<Option<&'a str>> {
    match params.get(key) {
        None => Ok(None),
        Some(toml::Value::String(s)) => Ok(Some(s.as_str())),
        Some(other) => Err(Error::invalid(key, other, "a string")),
    }
}

/// The value `v` of parameter `key` as a non-empty list of numbers (one number: a list of one).
pub fn numbers_of(key: &'static str, v: &toml::Value) -> Result<Vec<f64>> {
    let one = |v: &toml::Value| match v {
        toml::Value::Float(x) => Ok(*x),
        toml::Value::Integer(i) => Ok(*i as f64),
        other => Err(Error::invalid(key, other, "a number or a list of numbers")),
    };
    match v {
        toml::Value::Array(a) if !a.is_empty() => a.iter().map(one).collect(),
        toml::Value::Array(_) => Err(Error::invalid(key, "[]", "a non-empty list")),
        v => Ok(vec![one(v)?]),
    }
}

/// A canonical text of a parameter table, for stream keys: keys sorted, numbers in one form
/// (an integer and the float of equal value give the same text, `1e-5` and `0.00001` too),
/// strings quoted. Display text (labels, `params()`) never enters a key, so rewording it
/// leaves results unchanged.
pub fn canonical(table: &toml::Table) -> String {
    let mut keys: Vec<&String> = table.keys().collect();
    keys.sort();
    let fields: Vec<String> = keys
        .into_iter()
        .map(|k| format!("{k:?}={}", canonical_value(&table[k])))
        .collect();
    format!("{{{}}}", fields.join(","))
}

fn canonical_value(v: &toml::Value) -> String {
    match v {
        // Every integer below 2^53 is exactly a double: written as that double.
        toml::Value::Integer(i) if i.unsigned_abs() < 1 << 53 => format!("{:e}", *i as f64),
        toml::Value::Integer(i) => i.to_string(),
        // −0 and 0 are the same parameter.
        toml::Value::Float(x) if *x == 0.0 => "0e0".to_string(),
        toml::Value::Float(x) => format!("{x:e}"),
        toml::Value::String(s) => format!("{s:?}"),
        toml::Value::Boolean(b) => b.to_string(),
        toml::Value::Datetime(d) => format!("{:?}", d.to_string()),
        toml::Value::Array(a) => {
            let items: Vec<String> = a.iter().map(canonical_value).collect();
            format!("[{}]", items.join(","))
        }
        toml::Value::Table(t) => canonical(t),
    }
}

#[cfg(test)]
mod tests {
    use super::{canonical, read, Count};
    use crate::error::{Error, Result};

    #[derive(serde::Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Inner {
        lengthscales: Vec<f64>,
    }

    #[derive(serde::Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Example {
        mean: f64,
        runs: Option<Count>,
        inner: Option<Inner>,
    }

    fn err(text: &str) -> Error {
        read::<Example>("tuner `x`", &toml::from_str(text).unwrap()).unwrap_err()
    }

    #[test]
    fn typed_reading_names_the_field_and_what_it_must_be() {
        let ok: Example =
            read("tuner `x`", &toml::from_str("mean = 3\nruns = 4").unwrap()).unwrap();
        assert_eq!((ok.mean, ok.runs), (3.0, Some(Count(4))));
        assert_eq!(
            err("mean = 3\nmaen = 4").to_string(),
            "tuner `x` has no parameter `maen` (it takes: mean, runs, inner)"
        );
        assert_eq!(
            err("runs = 2").to_string(),
            "tuner `x`: `mean`: missing (required)"
        );
        let typed = err("mean = \"big\"").to_string();
        assert!(
            typed.starts_with("tuner `x`: `mean`: invalid type: string"),
            "{typed}"
        );
        let nested = err("mean = 1\ninner = { lengthscales = [1, \"a\"] }").to_string();
        assert!(
            nested.starts_with("tuner `x`: `inner.lengthscales[1]`: "),
            "{nested}"
        );
        let huge = err("mean = 1\nruns = 10000000000").to_string();
        assert!(huge.contains("`runs`: at most 1000000"), "{huge}");
        let aside: Result<Example> = super::read_except(
            "tuner `x`",
            &toml::from_str("mean = 1\ntuner = \"x\"\nmaen = 2").unwrap(),
            &["tuner"],
        );
        assert_eq!(
            aside.unwrap_err().to_string(),
            "tuner `x` has no parameter `maen` (it takes: mean, runs, inner, tuner)"
        );
        let negative = err("mean = 1\nruns = -1").to_string();
        assert!(
            negative.ends_with(
                "`runs`: invalid value: integer `-1`, expected a whole number (not negative)"
            ),
            "{negative}"
        );
    }

    fn c(text: &str) -> String {
        canonical(&toml::from_str::<toml::Table>(text).unwrap())
    }

    #[test]
    fn canonical_text_ignores_order_and_number_spelling() {
        assert_eq!(
            c("mean = 10\ndist = \"poisson\""),
            c("dist = 'poisson'\nmean = 10.0")
        );
        assert_eq!(c("eta = 1e-5"), c("eta = 0.00001"));
        assert_eq!(c("x = -0.0"), c("x = 0"));
        assert_eq!(
            c("l = [1, 2.5]\nt = { b = 1, a = 2 }"),
            c("t = { a = 2.0, b = 1 }\nl = [1.0, 2.5]")
        );
        assert_eq!(
            c("mean = 10\ndist = \"poisson\""),
            r#"{"dist"="poisson","mean"=1e1}"#
        );
    }

    #[test]
    fn canonical_text_tells_different_parameters_apart() {
        for (a, b) in [
            ("mean = 10", "mean = 10.000000000000002"),
            ("mean = 10", "mean = \"10\""),
            ("a = 1", "b = 1"),
            ("l = [1, 2]", "l = [2, 1]"),
            ("big = 9007199254740993", "big = 9007199254740992"),
            ("s = \"a,b\"", "s = \"a\"\nt = \"b\""),
        ] {
            assert_ne!(c(a), c(b), "{a} vs {b}");
        }
    }
}
