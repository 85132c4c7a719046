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
    /// The inputs are individually valid but the request cannot be met (a target no parameter
    /// meets, a split that leaves no training data).
    #[error("{0}")]
    Infeasible(String),
    /// A tuner (or study) needs a capability the workload does not offer.
    #[error("{component} needs {needs}, which {} does not offer", workload_phrase(.workload))]
    MissingCapability {
        /// E.g. "tuner `gp-ucb`".
        component: String,
        /// E.g. "a finite grid of candidates".
        needs: String,
        /// The workload's name; empty where the caller does not know it (it fills it in).
        workload: String,
    },
    /// A parameter table holds a key its owner does not read (a typo would be ignored).
    #[error("{owner} has no parameter `{key}` (it takes: {allowed})")]
    UnknownKey {
        /// E.g. "tuner `naive`".
        owner: String,
        key: String,
        allowed: String,
    },
    /// A parameter table could not be read into its typed form: whose table, which field
    /// (its path within the table, empty for the table itself) and why.
    #[error("{owner}: {}{reason}", field_phrase(.field))]
    Parameter {
        /// E.g. "tuner `naive`".
        owner: String,
        field: String,
        reason: String,
    },
    /// A computation failed numerically: no convergence, a matrix not positive definite, a
    /// non-finite value where a finite one is required.
    #[error("{0}")]
    Numerical(String),
    /// An attack on a tuner's output proved more privacy loss than its guarantee allows
    /// ([`crate::audit`]): the guarantee is wrong.
    #[error("{0}")]
    PrivacyBreach(String),
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
    /// The GPU (feature `cuda`) cannot be used or failed: a missing library or device, an
    /// allocation or a launch that failed.
    #[error("GPU: {0}")]
    Device(String),
    /// A file could not be read or written.
    #[error("{path}: {reason}")]
    Io { path: String, reason: String },
}

fn workload_phrase(workload: &str) -> String {
    if workload.is_empty() {
        "the workload".to_string()
    } else {
        format!("workload `{workload}`")
    }
}

impl Error {
    /// `component` needs `needs`, which `workload` (its name; may be empty) does not offer.
    pub fn missing_capability(
        component: impl Into<String>,
        needs: impl Into<String>,
        workload: impl Into<String>,
    ) -> Self {
        Error::MissingCapability {
            component: component.into(),
            needs: needs.into(),
            workload: workload.into(),
        }
    }

    /// A thread pool that could not be started (a resource failure, like I/O).
    pub fn thread_pool(e: &dyn fmt::Display) -> Self {
        Error::Io {
            path: "(thread pool)".into(),
            reason: e.to_string(),
        }
    }

    /// The same error, its message prefixed with `context` (where it happened). The kind is
    /// kept where it decides the exit code: a numerical or I/O failure stays one; a user error
    /// of any kind stays a user error.
    pub fn context(self, context: &str) -> Self {
        match self {
            Error::Numerical(m) => Error::Numerical(format!("{context}: {m}")),
            Error::Io { path, reason } => Error::Io {
                path: format!("{context}: {path}"),
                reason,
            },
            other => Error::Infeasible(format!("{context}: {other}")),
        }
    }

    /// Fills in the workload's name of a capability error that lacked it.
    pub fn in_workload(self, name: impl Into<String>) -> Self {
        match self {
            Error::MissingCapability {
                component,
                needs,
                workload,
            } if workload.is_empty() => Error::MissingCapability {
                component,
                needs,
                workload: name.into(),
            },
            other => other,
        }
    }

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

fn field_phrase(field: &str) -> String {
    if field.is_empty() {
        String::new()
    } else {
        format!("`{field}`: ")
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
            Err(Error::invalid(name, fmt_num(v), self.to_string()))
        }
    }
}

/// A number for messages: plain in [1e-4, 1e6), scientific outside, so 1e300 is not 301 digits.
pub fn fmt_num(x: f64) -> String {
    if x == 0.0 || !x.is_finite() || (1e-4..1e6).contains(&x.abs()) {
        format!("{x}")
    } else {
        format!("{x:e}")
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
    fn numbers_for_messages_are_plain_or_scientific() {
        assert_eq!(fmt_num(1e300), "1e300");
        assert_eq!(fmt_num(0.25), "0.25");
        assert_eq!(fmt_num(-3e-9), "-3e-9");
    }

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
