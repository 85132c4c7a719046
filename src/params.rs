//! Reading parameters from experiment-file tables (tuners, workloads): typed getters whose
//! errors name the parameter and what it must be, and a check that rejects unknown keys (a typo
//! would otherwise be silently ignored).

use crate::error::{Error, Result};

/// Rejects keys of `params` not in `allowed`; `owner` names the table, e.g. "tuner `naive`".
pub fn check_keys(owner: &str, params: &toml::Table, allowed: &[&str]) -> Result<()> {
    match params.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(Error::UnknownKey {
            owner: owner.to_string(),
            key: k.clone(),
            allowed: if allowed.is_empty() {
                "none".to_string()
            } else {
                allowed.join(", ")
            },
        }),
        None => Ok(()),
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

/// A numeric parameter (integers accepted), or None when absent.
pub fn number(params: &toml::Table, key: &'static str) -> Result<Option<f64>> {
    match params.get(key) {
        None => Ok(None),
        Some(toml::Value::Float(x)) => Ok(Some(*x)),
        Some(toml::Value::Integer(i)) => Ok(Some(*i as f64)),
        Some(other) => Err(Error::invalid(key, other, "a number")),
    }
}

/// A required numeric parameter.
pub fn required(params: &toml::Table, key: &'static str) -> Result<f64> {
    number(params, key)?.ok_or_else(|| Error::invalid(key, "missing", "a number (required)"))
}

/// An integer parameter ≥ `min`, or None when absent.
pub fn integer(params: &toml::Table, key: &'static str, min: u64) -> Result<Option<u64>> {
    match params.get(key) {
        None => Ok(None),
        Some(toml::Value::Integer(i)) if *i >= min as i64 => Ok(Some(*i as u64)),
        Some(other) => Err(Error::invalid(key, other, format!("an integer >= {min}"))),
    }
}

/// An integer in [`min`, `max`], or None when absent; `why` says what the upper bound protects.
pub fn integer_in(
    params: &toml::Table,
    key: &'static str,
    min: u64,
    max: u64,
    why: &str,
) -> Result<Option<u64>> {
    match integer(params, key, min)? {
        Some(v) if v > max => Err(Error::invalid(
            key,
            v,
            format!("an integer from {min} to {max} ({why})"),
        )),
        v => Ok(v),
    }
}

/// A string parameter, or None when absent.
pub fn string<'a>(params: &'a toml::Table, key: &'static str) -> Result<Option<&'a str>> {
    match params.get(key) {
        None => Ok(None),
        Some(toml::Value::String(s)) => Ok(Some(s.as_str())),
        Some(other) => Err(Error::invalid(key, other, "a string")),
    }
}

/// A list of numbers, or a single number as a one-element list; None when absent.
pub fn numbers(params: &toml::Table, key: &'static str) -> Result<Option<Vec<f64>>> {
    let one = |v: &toml::Value| match v {
        toml::Value::Float(x) => Ok(*x),
        toml::Value::Integer(i) => Ok(*i as f64),
        other => Err(Error::invalid(key, other, "a number or a list of numbers")),
    };
    match params.get(key) {
        None => Ok(None),
        Some(toml::Value::Array(a)) if !a.is_empty() => {
            Ok(Some(a.iter().map(one).collect::<Result<_>>()?))
        }
        Some(toml::Value::Array(_)) => Err(Error::invalid(key, "[]", "a non-empty list")),
        Some(v) => Ok(Some(vec![one(v)?])),
    }
}
