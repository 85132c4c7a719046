//! One error type for the whole crate: it says which parameter is wrong and what was allowed.

use std::fmt;

/// The crate's result type.
pub type Result<T> = std::result::Result<T, Error>;

/// Everything that can go wrong in dptune, in words a user can act on.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// A parameter is outside its allowed range (or NaN).
    #[error("invalid {name} = {value}: must be {allowed}")]
    InvalidParameter {
        name: &'static str,
        value: String,
        allowed: String,
    },
    /// The inputs are individually valid but the request cannot be met.
    #[error("{0}")]
    Infeasible(String),
    /// A data or curve file is unreadable or malformed: which file, which line, what is wrong.
    #[error("{file}:{line}: {reason}")]
    Data {
        file: String,
        line: usize,
        reason: String,
    },
    /// An experiment file is malformed: which file (and where in it, `:line:column`, when the
    /// field is found), which field, what is wrong.
    #[error("{file}{at}: {field}: {reason}")]
    Experiment {
        file: String,
        at: String,
        field: String,
        reason: String,
    },
    /// A results folder cannot be used as asked (another run holds it, it holds results of
    /// another configuration or profile, a file there was not written by dptune): which folder
    /// or file, and what to do.
    #[error("{path}: {reason}")]
    Results { path: String, reason: String },
    /// A file could not be read or written.
    #[error("{path}: {reason}")]
    Io { path: String, reason: String },
}

impl Error {
    /// An I/O failure on `path`.
    pub fn io(path: &std::path::Path, reason: impl fmt::Display) -> Self {
        Error::Io {
            path: path.display().to_string(),
            reason: reason.to_string(),
        }
    }

    /// A results folder or file that cannot be used as asked.
    pub fn results(path: &std::path::Path, reason: impl fmt::Display) -> Self {
        Error::Results {
            path: path.display().to_string(),
            reason: reason.to_string(),
        }
    }

    pub fn invalid(
        name: &'static str,
        value: impl fmt::Display,
        allowed: impl Into<String>,
    ) -> Self {
        Error::InvalidParameter {
            name,
            value: value.to_string(),
            allowed: allowed.into(),
        }
    }
}

/// The ranges parameters are checked against. NaN is outside every range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Range {
    /// (0, 1)
    OpenUnit,
    /// (0, 1]
    UnitExcludingZero,
    /// (0, ∞), finite
    Positive,
    /// [0, ∞), finite
    NonNegative,
    /// (1, ∞), finite: a Rényi order
    Order,
    /// Any finite number (a coordinate).
    Finite,
}

impl Range {
    pub fn contains(self, v: f64) -> bool {
        match self {
            Range::OpenUnit => v > 0.0 && v < 1.0,
            Range::UnitExcludingZero => v > 0.0 && v <= 1.0,
            Range::Positive => v > 0.0 && v.is_finite(),
            Range::NonNegative => v >= 0.0 && v.is_finite(),
            Range::Order => v > 1.0 && v.is_finite(),
            Range::Finite => v.is_finite(),
        }
    }

    /// Returns `v` when it lies in the range, otherwise an error naming the parameter.
    pub fn check(self, name: &'static str, v: f64) -> Result<f64> {
        if self.contains(v) {
            Ok(v)
        } else {
            Err(Error::invalid(
                name,
                crate::numeric::fmt_num(v),
                self.to_string(),
            ))
        }
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Range::OpenUnit => "a number in (0, 1)",
            Range::UnitExcludingZero => "a number in (0, 1]",
            Range::Positive => "a finite number > 0",
            Range::NonNegative => "a finite number >= 0",
            Range::Order => "a finite Rényi order > 1",
            Range::Finite => "a finite number",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_reject_nan_and_bounds() {
        for r in [
            Range::OpenUnit,
            Range::UnitExcludingZero,
            Range::Positive,
            Range::NonNegative,
            Range::Order,
            Range::Finite,
        ] {
            assert!(!r.contains(f64::NAN), "{r:?} accepted NaN");
            assert!(!r.contains(f64::INFINITY), "{r:?} accepted inf");
        }
        assert!(!Range::OpenUnit.contains(0.0) && !Range::OpenUnit.contains(1.0));
        assert!(Range::UnitExcludingZero.contains(1.0));
        assert!(Range::NonNegative.contains(0.0) && !Range::Positive.contains(0.0));
        assert!(!Range::Order.contains(1.0));
        let msg = Range::OpenUnit.check("delta", 2.0).unwrap_err().to_string();
        assert_eq!(msg, "invalid delta = 2: must be a number in (0, 1)");
    }
}
