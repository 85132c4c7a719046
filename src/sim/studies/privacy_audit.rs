//! Privacy audits by attack (`kind = "privacy-audit"`, [`crate::audit`]): every listed tuner runs
//! `calibration + trials` times on each side of the canary pair
//! ([`crate::workloads::canary`]); a threshold test on its released output, chosen on the
//! calibration runs, gives a Clopper–Pearson lower bound on ε at the file's δ. One unit and one
//! row per tuner (`audit.parquet`; `bounds.parquet` derived from it, over which the
//! table is declared). A lower bound above the tuner's guarantee is an error: the guarantee is wrong.

use super::tuning::{tuner_entries, TunerEntry};
use super::StudyKind;
use crate::accounting::Accountant;
use crate::audit::{audit, Audit, AuditSettings};
use crate::error::{fmt_num, Error, Range, Result};
use crate::params::Count;
use crate::sim::fields::Fields;
use crate::sim::study::Study;
use crate::sim::table::{Table, Values};
use crate::workloads::canary::{Canary, Side};

pub const KIND: StudyKind = StudyKind {
    source: file!(),
    name: "privacy-audit",
    about: "end-to-end attacks on each tuner: empirical lower bound on ε against its guarantee",
    parse: |f| Ok(Box::new(parse(f)?)),
};

/// A `privacy-audit` file.
pub struct PrivacyAudit {
    pub seed: u64,
    pub delta: f64,
    pub accountant: Accountant,
    /// The canary pair's run noise multiplier z, dimension, users and canary loss slope.
    pub noise: f64,
    pub dim: usize,
    pub users: usize,
    pub slope: f64,
    pub trials: usize,
    pub calibration: usize,
    pub confidence: f64,
    pub tuners: Vec<TunerEntry>,
}

/// A `privacy-audit` experiment file's parameters (its `[[tuners]]` aside).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    seed: Option<u64>,
    delta: Option<f64>,
    orders: Option<String>,
    conversion: Option<String>,
    noise: Option<f64>,
    dim: Option<Count>,
    users: Option<Count>,
    slope: Option<f64>,
    trials: Option<Count>,
    calibration: Option<Count>,
    confidence: Option<f64>,
}

fn parse(f: &Fields) -> Result<PrivacyAudit> {
    let p: Params = f.read("a `privacy-audit` experiment", &["tuners"])?;
    let count = |key, given, min, default| f.count_or(key, given, min, default).map(|c| c as usize);
    Ok(PrivacyAudit {
        seed: p.seed.unwrap_or(0),
        delta: f.in_range("delta", p.delta.unwrap_or(1e-5), Range::OpenUnit)?,
        accountant: f.accountant_of(p.orders.as_deref(), p.conversion.as_deref())?,
        noise: f.in_range("noise", p.noise.unwrap_or(1.0), Range::Positive)?,
        dim: count("dim", p.dim, 1, 2)?,
        users: count("users", p.users, 2, 10)?,
        slope: f.in_range("slope", p.slope.unwrap_or(100.0), Range::Positive)?,
        trials: count("trials", p.trials, 1, 100_000)?,
        calibration: count("calibration", p.calibration, 1, 20_000)?,
        confidence: f.in_range("confidence", p.confidence.unwrap_or(0.95), Range::OpenUnit)?,
        tuners: tuner_entries(f)?,
    })
}

impl PrivacyAudit {
    fn pair(&self) -> Result<[Canary; 2]> {
        let side = |s| Canary::new(s, self.dim, self.noise, self.users, self.slope);
        Ok([side(Side::Without)?, side(Side::With)?])
    }
}

/// The test in words: "released score > 3.228", or, for the infinite thresholds that only the
/// score has (−∞ when none is released), "released score released (any value)".
fn test_text(a: &Audit) -> String {
    if a.threshold.is_finite() {
        format!(
            "{} {} {}",
            a.statistic.name(),
            if a.high { ">" } else { "<" },
            crate::sim::plot::sig_label(a.threshold, 4)
        )
    } else {
        format!("{} released (any value)", a.statistic.name())
    }
}

/// One audited tuner: its claim, the attack's test and the ε its error rates prove.
#[derive(serde::Serialize)]
struct Row {
    tuner: String,
    method: String,
    params: String,
    theorem: String,
    claimed_epsilon: f64,
    claimed_delta: f64,
    lower_epsilon: f64,
    /// The attack's test in words ("released score > 3.228").
    statistic: String,
    threshold: f64,
    trials: u64,
    false_positive_rate: f64,
    false_negative_rate: f64,
}

impl Study for PrivacyAudit {
    fn units(&self) -> Vec<String> {
        self.tuners.iter().map(|t| t.label.clone()).collect()
    }

    fn run_unit(&self, experiment: &str, i: usize) -> Result<Table> {
        let entry = &self.tuners[i];
        let [without, with] = self.pair()?;
        let settings = AuditSettings {
            trials: self.trials,
            calibration: self.calibration,
            confidence: self.confidence,
            delta: self.delta,
            seed: self.seed,
        };
        let a = audit(
            entry.tuner.as_ref(),
            [&without, &with],
            &settings,
            &self.accountant,
        )?;
        if a.breached() {
            return Err(Error::PrivacyBreach(format!(
                "privacy audit: tuner `{}` claims ε = {} at δ = {}, but an attack on its output \
                 proves ε ≥ {} (with {}% confidence): its guarantee is wrong",
                entry.label,
                fmt_num(a.claimed.epsilon),
                fmt_num(a.claimed.delta),
                fmt_num(a.lower),
                fmt_num(100.0 * self.confidence),
            )));
        }
        let n = a.trials as f64;
        Table::from_experiment_rows(
            experiment,
            &[Row {
                tuner: entry.label.clone(),
                method: entry.tuner.name().to_string(),
                params: entry.tuner.params(),
                theorem: a.claimed.theorem.clone(),
                claimed_epsilon: a.claimed.epsilon,
                claimed_delta: a.claimed.delta,
                lower_epsilon: a.lower,
                statistic: test_text(&a),
                threshold: a.threshold,
                trials: a.trials as u64,
                false_positive_rate: a.false_positives as f64 / n,
                false_negative_rate: a.false_negatives as f64 / n,
            }],
        )
    }

    fn output(&self) -> &'static str {
        "audit.parquet"
    }

    fn derive(&self, _experiment: &str, merged: &Table) -> Result<Vec<(&'static str, Table)>> {
        Ok(vec![("bounds.parquet", bounds(self, merged)?)])
    }

    fn derived(&self) -> Vec<&'static str> {
        vec!["bounds.parquet"]
    }
}

/// `bounds.parquet`, derived at every report: per tuner, what the audit table shows: the
/// claimed ε, the attack's lower bound and their ratio in percent (`lower_over_claimed`, none
/// where the claim is not positive), the test and its error rates, and the confidence of the
/// lower bound.
fn bounds(a: &PrivacyAudit, t: &Table) -> Result<Table> {
    let (claimed, lower) = (t.f64("claimed_epsilon")?, t.f64("lower_epsilon")?);
    let ratio = (0..t.height())
        .map(|i| match (lower[i], claimed[i]) {
            (Some(l), Some(c)) if c > 0.0 => Some(100.0 * l / c),
            _ => None,
        })
        .collect();
    Ok(Table::default()
        .with("tuner", Values::Str(t.str("tuner")?.to_vec()))
        .with("claimed_epsilon", Values::F64(claimed.to_vec()))
        .with("lower_epsilon", Values::F64(lower.to_vec()))
        .with("lower_over_claimed", Values::F64(ratio))
        .with("statistic", Values::Str(t.str("statistic")?.to_vec()))
        .with(
            "false_positive_rate",
            Values::F64(t.f64("false_positive_rate")?.to_vec()),
        )
        .with(
            "false_negative_rate",
            Values::F64(t.f64("false_negative_rate")?.to_vec()),
        )
        .with(
            "confidence",
            Values::F64(vec![Some(a.confidence); t.height()]),
        ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::Statistic;
    use crate::tuners::Guarantee;

    #[test]
    fn the_test_is_described_without_infinities() {
        let mut a = Audit {
            claimed: Guarantee {
                epsilon: 1.0,
                delta: 1e-5,
                theorem: String::new(),
            },
            lower: 0.5,
            statistic: Statistic::Score,
            high: true,
            threshold: 3.2281,
            trials: 10,
            false_positives: 0,
            false_negatives: 0,
        };
        assert_eq!(test_text(&a), "released score > 3.228");
        for t in [f64::NEG_INFINITY, f64::INFINITY] {
            a.threshold = t;
            assert_eq!(test_text(&a), "released score released (any value)");
        }
        a.high = false;
        a.threshold = 0.25;
        a.statistic = Statistic::ChosenCoordinate;
        assert_eq!(test_text(&a), "chosen θ₁ < 0.25");
    }
}
