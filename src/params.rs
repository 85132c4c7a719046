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
    // Sizes are bounded up front (a typo such as `candidates = 10000000000` fails here instead
    // of allocating gigabytes); a random seed is any non-negative 64-bit integer.
    let max = match key {
        "seed" => u64::MAX,
        "seeds" => MAX_REPETITIONS,
        _ => MAX_COUNT,
    };
    match params.get(key) {
        None => Ok(None),
        Some(toml::Value::Integer(i)) if *i >= min as i64 && *i as u64 <= max => {
            Ok(Some(*i as u64))
        }
        Some(toml::Value::Integer(i)) if *i >= min as i64 => Err(Error::invalid(
            key,
            i,
            format!("at most {max}: {i} is too large (sizes are bounded so a run fits in memory and time)"),
        )),
        Some(other) => Err(Error::invalid(key, other, format!("an integer >= {min}"))),
    }
}

/// The largest count (candidates, grid or sweep points, users, steps, …) a parameter may ask
/// for: larger values are refused up front, before anything is allocated.
pub const MAX_COUNT: u64 = 1_000_000;
/// The largest number of repetitions (`seeds`) per configuration.
pub const MAX_REPETITIONS: u64 = 100_000;

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
    use super::canonical;

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
