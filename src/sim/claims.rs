//! Claims: what the findings assert about an experiment, declared in its file beside its
//! `[[plots]]` and `[[tables]]` and evaluated from its parquet, so that no comparison is typed
//! by hand and none can drift from the data.
//!
//! ```toml
//! [[claims]]
//! id = "naive-beats-poisson-d10"     # unique in the file; cited as <experiment>/<id>
//! says = "the whole grid beats PS Poisson at ε = 0.5 in d = 10"   # the sentence, for claims.md
//! table = "runs.parquet"             # default: the study's merged table
//! filter = { dim = 10, target_epsilon = 0.5 }   # rows both sides share
//! value = "regret"                   # the column compared
//! a = { label = "naive (all 100)" }  # side a: these rows (absent: every filtered row)
//! b = { label = "PS Poisson E[K]=10" }   # side b: rows, or a number (b = 0.5); or instead
//!                                    # versus = "bound": another column of a's own rows
//!                                    # (each row pairs with itself)
//! # above = 10 / below = 10          # optional: the value read as 1 above (below) it, else
//!                                    # 0 (a rate: "P[K < 10]" with clopper-pearson)
//! test = "paired-t"                  # see below
//! pair = "repetition"                # the columns that pair a row of a with one of b
//! assert = "a < b"                   # a > b, a < b, not resolved, tied within H,
//!                                    # a within [LO, HI]
//! ```
//!
//! The tests (every interval two-sided 95%, valid at its n):
//! * `student-t`: the mean of a against the number b (or alone, for `within`);
//! * `paired-t`: the mean of a − b over the pairs `pair` forms (each key once on each side);
//! * `welch`: mean(a) − mean(b) from two independent samples;
//! * `clopper-pearson`: a rate (a column of booleans or 0/1) against the number b, or alone;
//! * `sign`: the share of pairs (`pair`, or rows with `versus`) in which a > b, with its
//!   Clopper–Pearson interval
//!   (`assert = "a within [LO, HI]"`: "worse in 10 of 10" is within [0.69, 1]);
//! * `bootstrap-tables`: the mean of a (or of a − b over the pairs `pair` forms, which must
//!   name `block`), each row a search replayed on the bootstrap table its column `block`
//!   names: an interval that holds the table's own randomness as well as the searches'
//!   ([`crate::numeric::stats::blocked_t`]: the tabular benchmark's);
//! * `bootstrap`: a percentile bootstrap (4000 resamples, a seed fixed by the claim's id) of
//!   `statistic` = mean, median, quantile:Q, argmax or argmin (the level of column `over`
//!   whose mean `value` is largest or smallest), of a alone or of θ(a) − θ(b); with `pair` the
//!   units (the pair keys) are resampled, shared by both sides, else the rows of each side
//!   (within each level of `over`) independently.
//!
//! The verdict comes from the interval of the estimate (θ(a) − θ(b), or θ(a)): `a > b` when it
//! lies above 0, `a < b` below, `not resolved` when it holds 0; `tied within H` when it lies in
//! [−H, H]; `within` when θ(a)'s lies in [LO, HI]. At the paper profile a claim whose verdict
//! contradicts its assertion is an error located at the claim; at the smoke profile (fewer
//! repetitions, other cells) the verdicts are written and not checked.

use super::cells::{cells, filter, kept, Cell, Filter};
use super::fields::{fnv1a, Fields};
use super::report::{quantile, write_grid};
use super::study::Profile;
use super::table::{Grid, Table};
use crate::error::{Error, Range, Result};
use crate::numeric::stats::{blocked_t, clopper_pearson, one_sample_t, paired_t, welch_t, TTest};
use crate::params::OneOrMany;
use rand::RngCore;
use std::path::{Path, PathBuf};

/// The tests, for messages.
const TESTS: &str =
    "student-t, paired-t, welch, clopper-pearson, sign, bootstrap or bootstrap-tables";

/// Resamples of a bootstrap claim.
const RESAMPLES: usize = 4000;

/// One `[[claims]]` entry, parsed.
#[derive(Clone, Debug, PartialEq)]
pub struct Claim {
    pub id: String,
    says: Option<String>,
    table: Option<String>,
    filter: Filter,
    value: String,
    a: Filter,
    b: Against,
    test: Test,
    pair: Vec<String>,
    over: Option<String>,
    /// `block`: the column naming each row's bootstrap table (`bootstrap-tables`).
    block: Option<String>,
    /// `above` / `below`: the value read as 1 where it is above (below) the number, else 0.
    threshold: Option<(bool, f64)>,
    assert: Assertion,
    digits: usize,
}

/// What side a is compared with.
#[derive(Clone, Debug, PartialEq)]
enum Against {
    /// Nothing: a `within` claim on a alone (or, for a sign test, on the share).
    Nothing,
    Number(f64),
    Rows(Filter),
    /// Another column of the same rows (`versus`): each row pairs with itself.
    Column(String),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Test {
    StudentT,
    PairedT,
    Welch,
    ClopperPearson,
    /// The share of pairs with a > b (Clopper–Pearson), for "worse in 10 of 10".
    Sign,
    /// The blocked t over bootstrap tables (`block`).
    BootstrapTables,
    Bootstrap(Statistic),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Statistic {
    Mean,
    Median,
    Quantile(f64),
    Argmax,
    Argmin,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Assertion {
    Greater,
    Less,
    NotResolved,
    TiedWithin(f64),
    Within(f64, f64),
}

impl Assertion {
    fn parse(s: &str) -> Option<Assertion> {
        let s = s.trim();
        Some(match s {
            "a > b" => Assertion::Greater,
            "a < b" => Assertion::Less,
            "not resolved" => Assertion::NotResolved,
            _ => {
                if let Some(h) = s.strip_prefix("tied within ") {
                    let h: f64 = h.trim().parse().ok()?;
                    (h.is_finite() && h > 0.0).then_some(Assertion::TiedWithin(h))?
                } else {
                    let range = s.strip_prefix("a within ")?.trim();
                    let inner = range.strip_prefix('[')?.strip_suffix(']')?;
                    let (lo, hi) = inner.split_once(',')?;
                    let (lo, hi): (f64, f64) = (lo.trim().parse().ok()?, hi.trim().parse().ok()?);
                    (lo.is_finite() && hi.is_finite() && lo <= hi)
                        .then_some(Assertion::Within(lo, hi))?
                }
            }
        })
    }

    fn text(&self) -> String {
        match *self {
            Assertion::Greater => "a > b".into(),
            Assertion::Less => "a < b".into(),
            Assertion::NotResolved => "not resolved".into(),
            Assertion::TiedWithin(h) => format!("tied within {h}"),
            Assertion::Within(lo, hi) => format!("a within [{lo}, {hi}]"),
        }
    }
}

impl Test {
    fn text(&self) -> String {
        match self {
            Test::StudentT => "Student t".into(),
            Test::PairedT => "paired t".into(),
            Test::Welch => "Welch t".into(),
            Test::ClopperPearson => "Clopper–Pearson".into(),
            Test::Sign => "sign test (Clopper–Pearson)".into(),
            Test::BootstrapTables => "t over bootstrap tables and searches".into(),
            Test::Bootstrap(s) => format!(
                "bootstrap of the {}",
                match s {
                    Statistic::Mean => "mean".to_string(),
                    Statistic::Median => "median".to_string(),
                    Statistic::Quantile(q) => format!("{q} quantile"),
                    Statistic::Argmax => "argmax".to_string(),
                    Statistic::Argmin => "argmin".to_string(),
                }
            ),
        }
    }
}

/// A `[[claims]]` entry as written.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ClaimEntry {
    id: Option<String>,
    says: Option<String>,
    table: Option<String>,
    filter: Option<toml::Table>,
    value: Option<String>,
    a: Option<toml::Table>,
    b: Option<toml::Value>,
    versus: Option<String>,
    above: Option<f64>,
    below: Option<f64>,
    test: Option<String>,
    statistic: Option<String>,
    pair: Option<OneOrMany<String>>,
    over: Option<String>,
    block: Option<String>,
    assert: Option<String>,
    digits: Option<f64>,
}

/// Parses the root `[[claims]]` array (absent: none).
pub(crate) fn parse(f: &Fields) -> Result<Vec<Claim>> {
    let mut out: Vec<Claim> = Vec::new();
    for c in f.array("claims", false)? {
        let e: ClaimEntry = c.read("a `[[claims]]` entry", &[])?;
        let id =
            e.id.ok_or_else(|| c.missing("id", "a name for the claim"))?;
        if id.is_empty()
            || id.len() > 100
            || !id
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || ch == '-' || ch == '_' || ch == '.')
        {
            return Err(c.bad("id", "1 to 100 letters, digits, -, _ and ."));
        }
        if out.iter().any(|o| o.id == id) {
            return Err(c.bad("id", &format!("`{id}` is used twice")));
        }
        let value = e
            .value
            .ok_or_else(|| c.missing("value", "the column compared"))?;
        let b = match e.b {
            None => Against::Nothing,
            Some(toml::Value::Integer(i)) => Against::Number(i as f64),
            Some(toml::Value::Float(x)) if x.is_finite() => Against::Number(x),
            Some(toml::Value::Table(t)) => Against::Rows(filter(&c, Some(t))?),
            Some(_) => return Err(c.bad("b", "a table of columns and values (rows), or a number")),
        };
        let b = match (b, e.versus) {
            (b, None) => b,
            (Against::Nothing, Some(col)) => Against::Column(col),
            (_, Some(_)) => {
                return Err(c.bad(
                    "versus",
                    "not with `b`: b is the rows or number, versus another column of a's rows",
                ))
            }
        };
        let threshold = match (e.above, e.below) {
            (None, None) => None,
            (Some(x), None) if x.is_finite() => Some((true, x)),
            (None, Some(x)) if x.is_finite() => Some((false, x)),
            (Some(_), Some(_)) => return Err(c.bad("below", "not with `above`: one threshold")),
            _ => {
                return Err(c.bad(
                    if e.above.is_some() { "above" } else { "below" },
                    "a finite number",
                ))
            }
        };
        if threshold.is_some() && matches!(b, Against::Column(_)) {
            return Err(c.bad(
                "versus",
                "not with `above`/`below` (which turn the value into 0/1)",
            ));
        }
        let pair: Vec<String> = e.pair.map(OneOrMany::into_vec).unwrap_or_default();
        let statistic = match e.statistic.as_deref() {
            None => None,
            Some("mean") => Some(Statistic::Mean),
            Some("median") => Some(Statistic::Median),
            Some("argmax") => Some(Statistic::Argmax),
            Some("argmin") => Some(Statistic::Argmin),
            Some(q) => Some(
                q.strip_prefix("quantile:")
                    .and_then(|q| q.parse::<f64>().ok())
                    .filter(|q| *q > 0.0 && *q <= 1.0)
                    .map(Statistic::Quantile)
                    .ok_or_else(|| {
                        c.bad(
                            "statistic",
                            "mean, median, quantile:Q (0 < Q <= 1), argmax or argmin",
                        )
                    })?,
            ),
        };
        let test = match e.test.as_deref() {
            Some("student-t") => Test::StudentT,
            Some("paired-t") => Test::PairedT,
            Some("welch") => Test::Welch,
            Some("clopper-pearson") => Test::ClopperPearson,
            Some("sign") => Test::Sign,
            Some("bootstrap") => Test::Bootstrap(statistic.unwrap_or(Statistic::Mean)),
            Some("bootstrap-tables") => Test::BootstrapTables,
            Some(_) => return Err(c.bad("test", TESTS)),
            None => return Err(c.missing("test", TESTS)),
        };
        match (&e.block, test) {
            (None, Test::BootstrapTables) => {
                return Err(c.missing("block", "the column naming each row's bootstrap table"))
            }
            (Some(_), t) if t != Test::BootstrapTables => {
                return Err(c.bad("block", "only with test = \"bootstrap-tables\""))
            }
            _ => {}
        }
        if statistic.is_some() && !matches!(test, Test::Bootstrap(_)) {
            return Err(c.bad(
                "statistic",
                "only with test = \"bootstrap\" (the t tests compare means)",
            ));
        }
        let over_needed = matches!(
            test,
            Test::Bootstrap(Statistic::Argmax) | Test::Bootstrap(Statistic::Argmin)
        );
        match (&e.over, over_needed) {
            (None, true) => {
                return Err(c.missing("over", "the column whose level maximises (argmax, argmin)"))
            }
            (Some(_), false) => {
                return Err(c.bad("over", "only with statistic = \"argmax\" or \"argmin\""))
            }
            _ => {}
        }
        let assert = e
            .assert
            .as_deref()
            .map(|s| {
                Assertion::parse(s).ok_or_else(|| {
                    c.bad(
                        "assert",
                        "a > b, a < b, not resolved, tied within H (H > 0), or a within [LO, HI]",
                    )
                })
            })
            .transpose()?
            .ok_or_else(|| c.missing("assert", "what the text says: a > b, a < b, not resolved, tied within H, a within [LO, HI]"))?;
        // Which comparisons each test makes.
        match (test, &b, assert) {
            (Test::Sign, Against::Rows(_) | Against::Column(_), Assertion::Within(..)) => {}
            (Test::StudentT | Test::Welch | Test::ClopperPearson, Against::Column(_), _) => {
                return Err(c.bad("versus", "only with paired-t, sign or bootstrap (a row pairs with itself)"))
            }
            (Test::Sign, _, _) => {
                return Err(c.bad("assert", "a sign test bounds the share of pairs with a > b: `a within [LO, HI]`, with b rows"))
            }
            (Test::BootstrapTables, Against::Rows(_), _)
                if !e.block.as_ref().is_some_and(|k| pair.contains(k)) =>
            {
                return Err(c.bad("pair", "the columns that pair a row of a with one of b, `block` among them (a pair is one search on one table)"))
            }
            (Test::PairedT | Test::Welch, Against::Nothing, _) => {
                return Err(c.missing("b", "the rows a is compared with: this test compares two samples"))
            }
            (_, Against::Nothing, Assertion::Within(..)) => {}
            (_, Against::Nothing, _) => {
                return Err(c.missing("b", "what a is compared with (rows or a number); only `a within [LO, HI]` needs none"))
            }
            (_, _, Assertion::Within(..)) => {
                return Err(c.bad("b", "not with `a within [LO, HI]` (which bounds a alone)"))
            }
            (Test::PairedT | Test::Welch, Against::Number(_), _) => {
                return Err(c.bad("b", "rows (a table of columns and values): this test compares two samples"))
            }
            (Test::StudentT | Test::ClopperPearson, Against::Rows(_), _) => {
                return Err(c.bad("b", "a number: this test bounds one sample (two samples: paired-t, welch or bootstrap)"))
            }
            _ => {}
        }
        if matches!(b, Against::Column(_)) && !pair.is_empty() {
            return Err(c.bad("pair", "not with `versus` (each row pairs with itself)"));
        }
        if matches!(test, Test::PairedT | Test::Sign)
            && pair.is_empty()
            && !matches!(b, Against::Column(_))
        {
            return Err(c.missing("pair", "the column(s) that pair a row of a with one of b"));
        }
        if !pair.is_empty()
            && !matches!(
                test,
                Test::PairedT | Test::Sign | Test::Bootstrap(_) | Test::BootstrapTables
            )
        {
            return Err(c.bad(
                "pair",
                "only with paired-t, sign, bootstrap or bootstrap-tables",
            ));
        }
        out.push(Claim {
            id,
            says: e.says,
            table: e.table,
            filter: filter(&c, e.filter)?,
            value,
            a: filter(&c, e.a)?,
            b,
            test,
            pair,
            over: e.over,
            block: e.block,
            threshold,
            assert,
            digits: c
                .in_range("digits", e.digits.unwrap_or(3.0), Range::NonNegative)?
                .min(12.0) as usize,
        });
    }
    Ok(out)
}

/// A claim evaluated: one row of `claims.parquet` and `claims.md`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Verdict {
    pub id: String,
    pub says: String,
    pub asserts: String,
    pub test: String,
    pub n_a: u64,
    pub n_b: u64,
    pub estimate: Option<f64>,
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    pub p: Option<f64>,
    pub verdict: String,
    /// What else the reader needs (an argmax's share of resamples, why nothing was evaluated).
    pub detail: String,
    pub holds: bool,
    pub digits: u64,
}

/// One side's rows: the pair key (empty without `pair`), the level of `over` (0 without) and
/// the value.
type Rows = Vec<(String, f64, f64)>;

impl Claim {
    /// The rows of one side: the filter's and the side's, the values of `column`.
    fn rows(&self, t: &Table, side: &Filter, column: &str, what: &str, file: &str) -> Result<Rows> {
        let mut both = self.filter.clone();
        both.0.extend(side.0.iter().cloned());
        let kept = kept(t, &both, what, file)?;
        let values = cells(t, column, what, file)?;
        let by_row = matches!(self.b, Against::Column(_));
        let keys = self
            .pair
            .iter()
            .map(|c| cells(t, c, what, file))
            .collect::<Result<Vec<_>>>()?;
        // The level: `over`'s (an argmax's) or `block`'s (a bootstrap table's).
        let level_column = self.over.as_ref().or(self.block.as_ref());
        let over = level_column.map(|c| cells(t, c, what, file)).transpose()?;
        let mut rows = Vec::new();
        for i in kept {
            let v = match &values[i] {
                Cell::Num(x) => *x,
                Cell::Str(s) if s == "true" => 1.0,
                Cell::Str(s) if s == "false" => 0.0,
                Cell::Missing => continue,
                Cell::Str(s) => {
                    return Err(Error::Infeasible(format!(
                        "{what}: `{column}` holds \"{s}\", not a number or a boolean"
                    )))
                }
            };
            let v = match self.threshold {
                Some((above, x)) => f64::from(u8::from(if above { v > x } else { v < x })),
                None => v,
            };
            let key: Vec<String> = match by_row {
                true => vec![format!("row {i}")],
                false => keys.iter().map(|k| k[i].label()).collect(),
            };
            let level = match &over {
                Some(o) => o[i].num().ok_or_else(|| {
                    Error::Infeasible(format!(
                        "{what}: column `{}` holds \"{}\", not a number",
                        level_column.map_or("", |c| c.as_str()),
                        o[i].label()
                    ))
                })?,
                None => 0.0,
            };
            rows.push((key.join(" · "), level, v));
        }
        Ok(rows)
    }

    /// Evaluates the claim from `t` (read from `file`); data errors are errors.
    fn evaluate(&self, t: &Table, file: &str, experiment: &str) -> Result<Verdict> {
        let what = format!("claim `{}`", self.id);
        let a = self.rows(t, &self.a, &self.value, &what, file)?;
        let b = match &self.b {
            Against::Rows(f) => Some(self.rows(t, f, &self.value, &what, file)?),
            Against::Column(col) => Some(self.rows(t, &self.a, col, &what, file)?),
            _ => None,
        };
        let number = match self.b {
            Against::Number(x) => x,
            _ => 0.0,
        };
        // n: rows, or for a bootstrap over units (and a sign test) the units.
        let units = |r: &Rows| {
            let mut keys: Vec<&str> = r.iter().map(|x| x.0.as_str()).collect();
            keys.sort_unstable();
            keys.dedup();
            keys.len() as u64
        };
        let count = |r: &Rows| {
            if self.pair.is_empty()
                || matches!(
                    self.test,
                    Test::PairedT | Test::Sign | Test::BootstrapTables
                )
            {
                r.len() as u64
            } else {
                units(r)
            }
        };
        let (n_a, n_b) = (count(&a), b.as_ref().map_or(0, count));
        let few = |n: usize, side: &str| {
            Error::Infeasible(format!(
                "{what}: side {side} has {n} value(s): an interval needs at least two"
            ))
        };
        let values = |r: &Rows| r.iter().map(|x| x.2).collect::<Vec<f64>>();
        let from_t = |t: TTest| match (t.lo, t.hi) {
            (Some(lo), Some(hi)) => (t.estimate, lo, hi, t.p, String::new()),
            // No spread: every difference equal, the interval is that value.
            _ => (
                t.estimate,
                t.estimate,
                t.estimate,
                None,
                "every value equal: the interval is the value".to_string(),
            ),
        };
        let (estimate, lo, hi, p, detail) = match self.test {
            Test::StudentT => {
                if a.len() < 2 {
                    return Err(few(a.len(), "a"));
                }
                let d: Vec<f64> = a.iter().map(|x| x.2 - number).collect();
                from_t(one_sample_t(&d)?)
            }
            Test::PairedT => {
                let b = b.as_ref().expect("checked at parse");
                let (x, y, _) = paired(&a, b, &what)?;
                if x.len() < 2 {
                    return Err(few(x.len(), "a (pairs)"));
                }
                from_t(paired_t(&x, &y)?)
            }
            Test::Welch => {
                let b = b.as_ref().expect("checked at parse");
                match welch_t(&values(&a), &values(b))? {
                    Some(t) => from_t(t),
                    None => return Err(few(a.len().min(b.len()), "a or b")),
                }
            }
            Test::ClopperPearson => {
                if a.is_empty() {
                    return Err(few(0, "a"));
                }
                let k = a.iter().filter(|x| x.2 == 1.0).count();
                if a.iter().any(|x| x.2 != 0.0 && x.2 != 1.0) {
                    return Err(Error::Infeasible(format!(
                        "{what}: Clopper–Pearson needs a column of booleans or 0/1 values; `{}` holds others",
                        self.value
                    )));
                }
                let (l, h) = clopper_pearson(k, a.len())?;
                let rate = k as f64 / a.len() as f64;
                (
                    rate - number,
                    l - number,
                    h - number,
                    None,
                    format!("{k} of {}", a.len()),
                )
            }
            Test::Sign => {
                let b = b.as_ref().expect("checked at parse");
                let (x, y, _) = paired(&a, b, &what)?;
                if x.is_empty() {
                    return Err(few(0, "a (pairs)"));
                }
                let k = x.iter().zip(&y).filter(|(p, q)| p > q).count();
                let (l, h) = clopper_pearson(k, x.len())?;
                (
                    k as f64 / x.len() as f64,
                    l,
                    h,
                    None,
                    format!("a > b in {k} of {} pairs", x.len()),
                )
            }
            Test::BootstrapTables => {
                // Each row's block is its table's level; a pair's is a's (`pair` names it).
                let by_block: Vec<(u64, f64)> = match &b {
                    Some(b) => {
                        let (x, y, blocks) = paired(&a, b, &what)?;
                        blocks
                            .iter()
                            .zip(x.iter().zip(&y))
                            .map(|(&k, (p, q))| (k as u64, p - q))
                            .collect()
                    }
                    None => a.iter().map(|r| (r.1 as u64, r.2 - number)).collect(),
                };
                from_t(blocked_t(&by_block).map_err(|e| e.context(&what))?)
            }
            Test::Bootstrap(stat) => {
                let seed = fnv1a(format!("{experiment}/{}", self.id).as_bytes());
                let by_unit = !self.pair.is_empty() || matches!(self.b, Against::Column(_));
                let how = Resampling {
                    by_unit,
                    seed,
                    digits: self.digits,
                };
                bootstrap(stat, &a, b.as_ref(), number, how, &what)?
            }
        };
        let (verdict, holds) = judge(self.assert, lo, hi);
        Ok(Verdict {
            id: self.id.clone(),
            says: self.says.clone().unwrap_or_default(),
            asserts: self.assert.text(),
            test: self.test.text(),
            n_a,
            n_b,
            estimate: Some(estimate),
            lo: Some(lo),
            hi: Some(hi),
            p,
            verdict,
            detail,
            holds,
            digits: self.digits as u64,
        })
    }
}

/// The verdict of an interval [lo, hi] and whether `assert` holds by it.
fn judge(assert: Assertion, lo: f64, hi: f64) -> (String, bool) {
    match assert {
        Assertion::Within(l, h) => {
            let ok = lo >= l && hi <= h;
            (if ok { "within" } else { "not within" }.to_string(), ok)
        }
        Assertion::TiedWithin(h) => {
            let ok = lo >= -h && hi <= h;
            (
                if ok {
                    format!("tied within {h}")
                } else {
                    format!("not tied within {h}")
                },
                ok,
            )
        }
        _ => {
            let verdict = if lo > 0.0 {
                Assertion::Greater
            } else if hi < 0.0 {
                Assertion::Less
            } else {
                Assertion::NotResolved
            };
            (verdict.text(), verdict == assert)
        }
    }
}

/// The pairs (a's value, b's value) in a's order, with a's levels; every key once on each side
/// and on both.
#[allow(clippy::type_complexity)]
fn paired(a: &Rows, b: &Rows, what: &str) -> Result<(Vec<f64>, Vec<f64>, Vec<f64>)> {
    let mut by_key = std::collections::HashMap::new();
    for (side, rows) in [("a", a), ("b", b)] {
        let mut seen = std::collections::HashSet::new();
        for (k, _, _) in rows {
            if !seen.insert(k) {
                return Err(Error::Infeasible(format!(
                    "{what}: pair key \"{k}\" appears twice on side {side}: pair by more columns, \
                     or filter the rows"
                )));
            }
        }
    }
    for (k, _, v) in b {
        by_key.insert(k.as_str(), *v);
    }
    let (mut x, mut y, mut levels) = (Vec::new(), Vec::new(), Vec::new());
    for (k, level, v) in a {
        match by_key.remove(k.as_str()) {
            Some(w) => {
                x.push(*v);
                y.push(w);
                levels.push(*level);
            }
            None => {
                return Err(Error::Infeasible(format!(
                    "{what}: pair key \"{k}\" is on side a only (a paired design has every key on both)"
                )))
            }
        }
    }
    if let Some(k) = by_key.keys().next() {
        return Err(Error::Infeasible(format!(
            "{what}: pair key \"{k}\" is on side b only (a paired design has every key on both)"
        )));
    }
    Ok((x, y, levels))
}

/// A uniform index below `n` (n ≥ 1), unbiased (rejection), from our own stream.
fn below(rng: &mut impl RngCore, n: usize) -> usize {
    let n = n as u64;
    let zone = u64::MAX - u64::MAX % n;
    loop {
        let w = rng.next_u64();
        if w < zone {
            return (w % n) as usize;
        }
    }
}

/// θ of one side's rows (each row counted `weight[i]` times).
fn statistic(stat: Statistic, rows: &[(f64, f64)]) -> Option<f64> {
    if rows.is_empty() {
        return None;
    }
    let mut values: Vec<f64> = rows.iter().map(|r| r.1).collect();
    match stat {
        Statistic::Mean => Some(values.iter().sum::<f64>() / values.len() as f64),
        Statistic::Median => Some(quantile(&mut values, 0.5)),
        Statistic::Quantile(q) => Some(quantile(&mut values, q)),
        Statistic::Argmax | Statistic::Argmin => {
            // The level whose mean is largest (smallest); the first such level on a tie.
            let mut levels: Vec<(f64, f64, f64)> = Vec::new();
            for &(level, v) in rows {
                match levels.iter_mut().find(|l| l.0 == level) {
                    Some(l) => {
                        l.1 += v;
                        l.2 += 1.0;
                    }
                    None => levels.push((level, v, 1.0)),
                }
            }
            levels.sort_by(|x, y| x.0.total_cmp(&y.0));
            let better = |m: f64, best: f64| {
                if stat == Statistic::Argmax {
                    m > best
                } else {
                    m < best
                }
            };
            let mut best: Option<(f64, f64)> = None;
            for (level, sum, n) in levels {
                let m = sum / n;
                if best.is_none_or(|(_, b)| better(m, b)) {
                    best = Some((level, m));
                }
            }
            best.map(|b| b.0)
        }
    }
}

/// How a bootstrap resamples: units (the pair keys) or rows, from which seed; the digits its
/// detail line shows.
#[derive(Clone, Copy)]
struct Resampling {
    by_unit: bool,
    seed: u64,
    digits: usize,
}

/// A percentile bootstrap of θ(a) − θ(b) (θ(a) − number without b): the estimate, the 2.5% and
/// 97.5% percentiles of the resampled differences, and a detail line.
fn bootstrap(
    stat: Statistic,
    a: &Rows,
    b: Option<&Rows>,
    number: f64,
    how: Resampling,
    what: &str,
) -> Result<(f64, f64, f64, Option<f64>, String)> {
    let Resampling {
        by_unit,
        seed,
        digits,
    } = how;
    let plain = |r: &Rows| r.iter().map(|x| (x.1, x.2)).collect::<Vec<(f64, f64)>>();
    let diff = |ta: Option<f64>, tb: Option<f64>| -> Option<f64> {
        Some(ta? - if b.is_some() { tb? } else { number })
    };
    let estimate = diff(
        statistic(stat, &plain(a)),
        b.and_then(|b| statistic(stat, &plain(b))),
    )
    .ok_or_else(|| Error::Infeasible(format!("{what}: a side has no rows")))?;
    let mut rng = crate::rng::stream(seed, &[]);
    let mut draws = Vec::with_capacity(RESAMPLES);
    if by_unit {
        // Units: the pair keys, in order of first appearance over both sides.
        let mut units: Vec<&str> = Vec::new();
        for (k, _, _) in a.iter().chain(b.into_iter().flatten()) {
            if !units.contains(&k.as_str()) {
                units.push(k);
            }
        }
        if units.len() < 2 {
            return Err(Error::Infeasible(format!(
                "{what}: {} unit(s) to resample: a bootstrap needs at least two",
                units.len()
            )));
        }
        let index: std::collections::HashMap<&str, usize> =
            units.iter().enumerate().map(|(i, u)| (*u, i)).collect();
        let of = |r: &Rows| -> Vec<Vec<(f64, f64)>> {
            let mut by = vec![Vec::new(); units.len()];
            for (k, l, v) in r {
                by[index[k.as_str()]].push((*l, *v));
            }
            by
        };
        let (ua, ub) = (of(a), b.map(of));
        for _ in 0..RESAMPLES {
            let picks: Vec<usize> = (0..units.len())
                .map(|_| below(&mut rng, units.len()))
                .collect();
            let gather = |by: &Vec<Vec<(f64, f64)>>| -> Vec<(f64, f64)> {
                picks.iter().flat_map(|&u| by[u].iter().copied()).collect()
            };
            let tb = ub.as_ref().and_then(|ub| statistic(stat, &gather(ub)));
            if let Some(d) = diff(statistic(stat, &gather(&ua)), tb) {
                draws.push(d);
            }
        }
    } else {
        // Rows of each side resampled within each level (strata of `over`).
        let strata = |r: &Rows| -> Vec<Vec<(f64, f64)>> {
            let mut out: Vec<Vec<(f64, f64)>> = Vec::new();
            let mut levels: Vec<f64> = Vec::new();
            for (_, l, v) in r {
                match levels.iter().position(|x| x == l) {
                    Some(i) => out[i].push((*l, *v)),
                    None => {
                        levels.push(*l);
                        out.push(vec![(*l, *v)]);
                    }
                }
            }
            out
        };
        let (sa, sb) = (strata(a), b.map(strata));
        if sa.iter().chain(sb.iter().flatten()).any(|s| s.len() < 2) {
            return Err(Error::Infeasible(format!(
                "{what}: a level with fewer than two rows cannot be resampled"
            )));
        }
        for _ in 0..RESAMPLES {
            let mut resample = |s: &Vec<Vec<(f64, f64)>>| -> Vec<(f64, f64)> {
                s.iter()
                    .flat_map(|rows| {
                        (0..rows.len())
                            .map(|_| rows[below(&mut rng, rows.len())])
                            .collect::<Vec<_>>()
                    })
                    .collect()
            };
            let ra = resample(&sa);
            let tb = match &sb {
                Some(sb) => statistic(stat, &resample(sb)),
                None => None,
            };
            if let Some(d) = diff(statistic(stat, &ra), tb) {
                draws.push(d);
            }
        }
    }
    if draws.is_empty() {
        // Every resample left a side without rows (its rows sit on too few units).
        return Err(Error::Infeasible(format!(
            "{what}: no resample has rows on both sides: pair by other columns"
        )));
    }
    draws.sort_by(f64::total_cmp);
    let at = |q: f64| draws[((q * draws.len() as f64).ceil() as usize).clamp(1, draws.len()) - 1];
    let (lo, hi) = (at(0.025), at(0.975));
    let detail = match stat {
        Statistic::Argmax | Statistic::Argmin if b.is_none() => {
            let share =
                draws.iter().filter(|d| **d == estimate).count() as f64 / draws.len() as f64;
            // The level at the claim's digits, without trailing zeros (levels are grid values).
            let level = format!("{:.digits$}", estimate + number);
            let level = match level.contains('.') {
                true => level
                    .trim_end_matches('0')
                    .trim_end_matches('.')
                    .to_string(),
                false => level,
            };
            format!(
                "at {level} in {:.0}% of {RESAMPLES} resamples",
                100.0 * share
            )
        }
        _ => format!("{RESAMPLES} resamples"),
    };
    Ok((estimate, lo, hi, None, detail))
}

/// The claims that fail (cannot be evaluated, or contradict their assertion): index and why.
pub type Failures = Vec<(usize, String)>;

/// Every claim of an experiment evaluated from the parquet in `dir`, with those that fail.
pub fn evaluate_all(
    claims: &[Claim],
    dir: &Path,
    default_table: &str,
    experiment: &str,
) -> Result<(Vec<Verdict>, Failures)> {
    let mut verdicts = Vec::new();
    let mut failures: Failures = Vec::new();
    let mut tables: Vec<(String, Table)> = Vec::new();
    for (i, c) in claims.iter().enumerate() {
        let name = c.table.clone().unwrap_or_else(|| default_table.to_string());
        if !tables.iter().any(|(n, _)| *n == name) {
            let t = Table::read_parquet(&dir.join(&name))?;
            tables.push((name.clone(), t));
        }
        let t = &tables
            .iter()
            .find(|(n, _)| *n == name)
            .expect("read above")
            .1;
        let v = match c.evaluate(t, &name, experiment) {
            Ok(v) => v,
            Err(e) => {
                let reason = match e {
                    Error::Infeasible(s) => s,
                    e => e.to_string(),
                };
                failures.push((i, reason.clone()));
                Verdict {
                    id: c.id.clone(),
                    says: c.says.clone().unwrap_or_default(),
                    asserts: c.assert.text(),
                    test: c.test.text(),
                    n_a: 0,
                    n_b: 0,
                    estimate: None,
                    lo: None,
                    hi: None,
                    p: None,
                    verdict: "not evaluated".into(),
                    detail: reason,
                    holds: false,
                    digits: c.digits as u64,
                }
            }
        };
        if !v.holds && !failures.iter().any(|f| f.0 == i) {
            failures.push((
                i,
                format!(
                    "claim `{}` asserts {} but its verdict is {} (estimate {}, 95% interval {}, {}): \
                     correct the text and the assertion, or the claim",
                    c.id,
                    v.asserts,
                    v.verdict,
                    show(v.estimate, c.digits),
                    interval(&v),
                    v.test
                ),
            ));
        }
        verdicts.push(v);
    }
    Ok((verdicts, failures))
}

/// The verdicts as `claims.md`'s table.
pub fn grid(verdicts: &[Verdict], experiment: &str, profile: Profile) -> Grid {
    Grid {
        caption: format!(
            "Claims of {experiment} ({}), evaluated from its parquet by `dptune sim report`: each \
             interval two-sided 95%, valid at its n (the test says how it was made); a > b: the \
             interval of θ(a) − θ(b) lies above 0",
            profile.name()
        ),
        header: [
            "claim",
            "says",
            "asserts",
            "test",
            "n",
            "estimate",
            "95% interval",
            "p",
            "verdict",
            "holds",
        ]
        .map(String::from)
        .to_vec(),
        rows: verdicts
            .iter()
            .map(|v| {
                let d = v.digits as usize;
                vec![
                    format!("`{}`", v.id),
                    v.says.clone(),
                    v.asserts.clone(),
                    v.test.clone(),
                    if v.n_b > 0 {
                        format!("{} / {}", v.n_a, v.n_b)
                    } else {
                        v.n_a.to_string()
                    },
                    show(v.estimate, d),
                    interval(v),
                    v.p.map_or("–".into(), |p| format!("{p:.2e}")),
                    if v.detail.is_empty() {
                        v.verdict.clone()
                    } else {
                        format!("{} ({})", v.verdict, v.detail)
                    },
                    if v.holds { "yes" } else { "NO" }.to_string(),
                ]
            })
            .collect(),
    }
}

/// Evaluates every claim of an experiment from the parquet in `dir` and writes `claims.md`,
/// `claims.tex` and `claims.parquet` there. At the paper profile, a claim that cannot be
/// evaluated or whose verdict contradicts its assertion is the error returned beside the
/// files, located at `claims[i]` (the first; the message names the others): the files are
/// written all the same, to be read.
pub fn render(
    claims: &[Claim],
    dir: &Path,
    default_table: &str,
    experiment: &str,
    file: &str,
    profile: Profile,
) -> Result<(Vec<PathBuf>, Option<Error>)> {
    if claims.is_empty() {
        return Ok((Vec::new(), None));
    }
    let (verdicts, failures) = evaluate_all(claims, dir, default_table, experiment)?;
    let mut files = Vec::new();
    let path = dir.join("claims.parquet");
    Table::from_rows(&verdicts)?.write_parquet_if_changed(&path)?;
    files.push(path);
    write_grid(
        &grid(&verdicts, experiment, profile),
        &dir.join("claims"),
        &mut files,
    )?;
    match failures.first() {
        Some((i, reason)) if profile == Profile::Paper => {
            let others = if failures.len() > 1 {
                let ids: Vec<&str> = failures[1..]
                    .iter()
                    .map(|(j, _)| claims[*j].id.as_str())
                    .collect();
                format!(" ({} more fail: {})", ids.len(), ids.join(", "))
            } else {
                String::new()
            };
            let e = Error::Experiment {
                file: file.to_string(),
                at: String::new(),
                field: format!("claims[{i}]"),
                reason: format!("{reason}{others}; see {}", dir.join("claims.md").display()),
            };
            Ok((files, Some(e)))
        }
        _ => Ok((files, None)),
    }
}

/// A number at `digits` decimals, "–" for none.
pub fn show(x: Option<f64>, digits: usize) -> String {
    x.map_or("–".into(), |x| format!("{x:.digits$}"))
}

/// "[lo, hi]" of a verdict at its digits.
pub fn interval(v: &Verdict) -> String {
    let d = v.digits as usize;
    match (v.lo, v.hi) {
        (Some(lo), Some(hi)) => format!("[{lo:.d$}, {hi:.d$}]"),
        _ => "–".into(),
    }
}

/// The verdicts committed beside an experiment's results (`claims.parquet`); None when the
/// experiment has none.
pub fn read(dir: &Path) -> Result<Option<Vec<Verdict>>> {
    let path = dir.join("claims.parquet");
    if !path.exists() {
        return Ok(None);
    }
    Table::read_parquet(&path)?.rows().map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numeric::stats::{clopper_pearson, paired_t, welch_t};

    #[derive(serde::Serialize)]
    struct Row {
        tuner: String,
        seed: u64,
        level: f64,
        regret: f64,
        hit: bool,
    }

    fn row(tuner: &str, seed: u64, level: f64, regret: f64) -> Row {
        Row {
            tuner: tuner.into(),
            seed,
            level,
            regret,
            hit: regret < 0.5,
        }
    }

    /// Two tuners over seeds 0..10 (b's rows in reverse order), b worse by 0.1 + a little.
    fn two_tuners() -> Table {
        let mut rows: Vec<Row> = (0..10)
            .map(|s| row("a", s, 0.0, 0.3 + 0.05 * libm::sin(s as f64)))
            .collect();
        rows.extend((0..10).rev().map(|s| {
            row(
                "b",
                s,
                0.0,
                0.4 + 0.05 * libm::sin(s as f64) + 0.01 * (s % 3) as f64,
            )
        }));
        Table::from_rows(&rows).unwrap()
    }

    fn claims_of(text: &str) -> Result<Vec<Claim>> {
        let root: toml::Table = text.parse().unwrap();
        parse(&Fields::new("f.toml", "", &root))
    }

    fn one(text: &str, t: &Table) -> Result<Verdict> {
        claims_of(text)?[0].evaluate(t, "runs.parquet", "exp")
    }

    const PAIRED: &str = "[[claims]]\nid = \"x\"\nvalue = \"regret\"\na = { tuner = \"a\" }\n\
                          b = { tuner = \"b\" }\ntest = \"paired-t\"\npair = \"seed\"\n";

    #[test]
    fn paired_t_pairs_rows_by_key_not_by_order() {
        let t = two_tuners();
        let v = one(&format!("{PAIRED}assert = \"a < b\""), &t).unwrap();
        let a: Vec<f64> = (0..10).map(|s| 0.3 + 0.05 * libm::sin(s as f64)).collect();
        let b: Vec<f64> = (0..10)
            .map(|s| 0.4 + 0.05 * libm::sin(s as f64) + 0.01 * (s % 3) as f64)
            .collect();
        let want = paired_t(&a, &b).unwrap();
        assert_eq!(
            (v.estimate, v.lo, v.hi),
            (Some(want.estimate), want.lo, want.hi)
        );
        assert!(v.holds && v.verdict == "a < b", "{v:?}");
        // The same rows unpaired (Welch) give a wider interval: the seeds' shared part stays.
        let w = one(
            &format!(
                "{}assert = \"a < b\"",
                PAIRED
                    .replace("paired-t", "welch")
                    .replace("pair = \"seed\"\n", "")
            ),
            &t,
        )
        .unwrap();
        // Welch reads each side in its rows' order (b's reversed).
        let b_rows: Vec<f64> = b.iter().rev().copied().collect();
        let want = welch_t(&a, &b_rows).unwrap().unwrap();
        assert_eq!((w.lo, w.hi), (want.lo, want.hi));
        assert!(w.hi.unwrap() - w.lo.unwrap() > v.hi.unwrap() - v.lo.unwrap());
    }

    /// `bootstrap-tables` reads each row's table from `block` (here the `level` column) and
    /// is the blocked t of a − b over the pairs, or of a against a number; the pairs must name
    /// the block, and the block is required with this test and refused with another.
    #[test]
    fn bootstrap_tables_block_by_their_column() {
        // Seeds 0..10 on tables 0..5 (two searches a table).
        let mut rows: Vec<Row> = Vec::new();
        for tuner in ["a", "b"] {
            for s in 0..10u64 {
                let level = (s % 5) as f64;
                let shift = if tuner == "b" { 0.1 } else { 0.0 };
                rows.push(row(
                    tuner,
                    s,
                    level,
                    0.3 + shift + 0.05 * libm::sin(s as f64 * 1.7) + 0.02 * level,
                ));
            }
        }
        let t = Table::from_rows(&rows).unwrap();
        let text = "[[claims]]\nid = \"x\"\nvalue = \"regret\"\na = { tuner = \"a\" }\n\
                    b = { tuner = \"b\" }\ntest = \"bootstrap-tables\"\nblock = \"level\"\n\
                    pair = [\"level\", \"seed\"]\nassert = \"a < b\"";
        let v = one(text, &t).unwrap();
        let d: Vec<(u64, f64)> = (0..10)
            .map(|s| {
                (
                    s % 5,
                    rows[s as usize].regret - rows[10 + s as usize].regret,
                )
            })
            .collect();
        let want = blocked_t(&d).unwrap();
        assert_eq!(
            (v.estimate, v.lo, v.hi),
            (Some(want.estimate), want.lo, want.hi)
        );
        assert_eq!((v.n_a, v.n_b), (10, 10));
        // Against a number: a's values less it, blocked the same way.
        let number = text
            .replace("b = { tuner = \"b\" }", "b = 0.25")
            .replace("pair = [\"level\", \"seed\"]\n", "");
        let v = one(&number.replace("a < b", "a > b"), &t).unwrap();
        let a: Vec<(u64, f64)> = (0..10)
            .map(|s| (s % 5, rows[s as usize].regret - 0.25))
            .collect();
        assert_eq!(v.lo, blocked_t(&a).unwrap().lo);
        // Pairs that do not name the block, no block, a block with another test.
        let e = claims_of(&text.replace("[\"level\", \"seed\"]", "\"seed\""))
            .unwrap_err()
            .to_string();
        assert!(e.contains("pair") && e.contains("block"), "{e}");
        let e = claims_of(&text.replace("block = \"level\"\n", ""))
            .unwrap_err()
            .to_string();
        assert!(e.contains("block"), "{e}");
        let e = claims_of(&text.replace("bootstrap-tables", "paired-t"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("block"), "{e}");
    }

    #[test]
    fn a_contradicted_assertion_does_not_hold() {
        let t = two_tuners();
        for (assert, holds) in [
            ("a < b", true),
            ("a > b", false),
            ("not resolved", false),
            ("tied within 0.01", false),
            ("tied within 1", true),
        ] {
            let v = one(&format!("{PAIRED}assert = \"{assert}\""), &t).unwrap();
            assert_eq!(v.holds, holds, "{assert}: {v:?}");
        }
        assert_eq!(
            judge(Assertion::NotResolved, -0.1, 0.2),
            ("not resolved".into(), true)
        );
        assert!(!judge(Assertion::Greater, 0.0, 0.2).1, "0 is in [0, 0.2]");
        assert!(judge(Assertion::Within(0.0, 1.0), 0.0, 1.0).1);
        assert!(!judge(Assertion::Within(0.0, 1.0), -1e-9, 1.0).1);
    }

    #[test]
    fn unpaired_or_duplicate_keys_are_errors() {
        let mut rows: Vec<Row> = (0..5).map(|s| row("a", s, 0.0, 0.1 * s as f64)).collect();
        rows.extend((1..6).map(|s| row("b", s, 0.0, 0.2 * s as f64)));
        let t = Table::from_rows(&rows).unwrap();
        let e = one(&format!("{PAIRED}assert = \"a < b\""), &t)
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"0\" is on side a only"), "{e}");
        rows.push(row("b", 3, 0.0, 1.0));
        let t = Table::from_rows(&rows).unwrap();
        let e = one(&format!("{PAIRED}assert = \"a < b\""), &t)
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"3\" appears twice on side b"), "{e}");
    }

    #[test]
    fn clopper_pearson_bounds_a_rate() {
        // 0 hits in 30: the rate is at most 0.1157 (the exact 97.5% bound).
        let rows: Vec<Row> = (0..30).map(|s| row("a", s, 0.0, 0.9)).collect();
        let t = Table::from_rows(&rows).unwrap();
        let text = "[[claims]]\nid = \"r\"\nvalue = \"hit\"\ntest = \"clopper-pearson\"\n\
                    assert = \"a within [0, 0.12]\"";
        let v = one(text, &t).unwrap();
        let (lo, hi) = clopper_pearson(0, 30).unwrap();
        assert_eq!((v.lo, v.hi), (Some(lo), Some(hi)));
        assert!(v.holds && (hi - 0.1157).abs() < 1e-4, "{v:?}");
        assert!(!one(&text.replace("0.12", "0.1"), &t).unwrap().holds);
    }

    #[test]
    fn bootstrap_finds_a_clear_argmax_and_not_a_tied_one() {
        // Levels 1, 2, 3 over 20 units; level 2 is best by far.
        let mut rows = Vec::new();
        for s in 0..20 {
            for (level, m) in [(1.0, 0.2), (2.0, 0.8), (3.0, 0.3)] {
                rows.push(row(
                    "a",
                    s,
                    level,
                    m + 0.05 * libm::sin((s * 7 + level as u64) as f64),
                ));
            }
        }
        let t = Table::from_rows(&rows).unwrap();
        let text = "[[claims]]\nid = \"peak\"\nvalue = \"regret\"\ntest = \"bootstrap\"\n\
                    statistic = \"argmax\"\nover = \"level\"\npair = \"seed\"\n\
                    assert = \"a within [2, 2]\"";
        let v = one(text, &t).unwrap();
        assert!(v.holds, "{v:?}");
        assert_eq!(v.detail, "at 2 in 100% of 4000 resamples");
        // The same claim is deterministic (its seed is the claim's id).
        assert_eq!(one(text, &t).unwrap(), v);
        // Levels 2 and 3 equal but for noise: the argmax is not resolved.
        let rows: Vec<Row> = rows
            .into_iter()
            .map(|mut r| {
                if r.level == 3.0 {
                    r.regret += 0.5;
                }
                r
            })
            .collect();
        let t = Table::from_rows(&rows).unwrap();
        let v = one(text, &t).unwrap();
        assert!(!v.holds && v.lo != v.hi, "{v:?}");
    }

    #[test]
    fn a_sign_test_counts_the_pairs_where_a_is_larger() {
        // b − a = 0.1 + 0.01·(s mod 3) > 0 in every pair: a > b in 0 of 10.
        let t = two_tuners();
        let text = PAIRED.replace("paired-t", "sign") + "assert = \"a within [0, 0.31]\"";
        let v = one(&text, &t).unwrap();
        let (lo, hi) = clopper_pearson(0, 10).unwrap();
        assert_eq!((v.estimate, v.lo, v.hi), (Some(0.0), Some(lo), Some(hi)));
        assert!(v.holds && v.detail == "a > b in 0 of 10 pairs", "{v:?}");
        let bad = PAIRED.replace("paired-t", "sign") + "assert = \"a < b\"";
        assert!(claims_of(&bad)
            .unwrap_err()
            .to_string()
            .contains("share of pairs"));
    }

    #[test]
    fn versus_pairs_each_row_with_itself_and_a_threshold_makes_a_rate() {
        // `level` is regret + 1 on a's rows: regret − level = −1 in every row.
        let rows: Vec<Row> = (0..8)
            .map(|s| row("a", s, 1.0 + 0.1 * s as f64, 0.1 * s as f64))
            .collect();
        let t = Table::from_rows(&rows).unwrap();
        let text = "[[claims]]\nid = \"v\"\nvalue = \"regret\"\nversus = \"level\"\n\
                    test = \"sign\"\nassert = \"a within [0, 0.4]\"";
        let v = one(text, &t).unwrap();
        assert!(v.holds && v.detail == "a > b in 0 of 8 pairs", "{v:?}");
        let v = one(
            &text
                .replace("sign", "paired-t")
                .replace("a within [0, 0.4]", "a < b"),
            &t,
        )
        .unwrap();
        assert_eq!(v.estimate.map(|e| (e * 1e9).round()), Some(-1e9));
        // Regrets below 0.25: 0, 0.1 and 0.2 of 8.
        let text = "[[claims]]\nid = \"r\"\nvalue = \"regret\"\nbelow = 0.25\n\
                    test = \"clopper-pearson\"\nassert = \"a within [0, 1]\"";
        let v = one(text, &t).unwrap();
        assert_eq!((v.estimate, v.detail.as_str()), (Some(3.0 / 8.0), "3 of 8"));
        for bad in [
            "versus = \"level\"\ntest = \"welch\"\nassert = \"a < b\"",
            "versus = \"level\"\nb = 1\ntest = \"sign\"\nassert = \"a within [0, 1]\"",
            "versus = \"level\"\npair = \"seed\"\ntest = \"paired-t\"\nassert = \"a < b\"",
        ] {
            let e = claims_of(&format!(
                "[[claims]]\nid = \"x\"\nvalue = \"regret\"\n{bad}"
            ));
            assert!(e.is_err(), "{bad}");
        }
    }

    #[test]
    fn a_bootstrap_difference_of_medians() {
        let t = two_tuners();
        let text =
            PAIRED.replace("paired-t", "bootstrap") + "statistic = \"median\"\nassert = \"a < b\"";
        let v = one(&text, &t).unwrap();
        assert!(v.holds && v.estimate.unwrap() < 0.0, "{v:?}");
    }

    #[test]
    fn entries_are_checked_where_written() {
        let bad = [
            ("value = \"regret\"\nb = 1\ntest = \"paired-t\"\npair = \"seed\"\nassert = \"a > b\"", "claims[0].b"),
            ("value = \"regret\"\nb = 1\nassert = \"a > b\"", "claims[0].test"),
            ("value = \"regret\"\nb = 1\ntest = \"student-t\"\nstatistic = \"median\"\nassert = \"a > b\"", "claims[0].statistic"),
            ("value = \"regret\"\ntest = \"welch\"\nassert = \"a within [0, 1]\"", "claims[0].b"),
            ("value = \"regret\"\ntest = \"student-t\"\nassert = \"a > b\"", "claims[0].b"),
            ("value = \"regret\"\nb = { t = 1 }\ntest = \"paired-t\"\nassert = \"a > b\"", "claims[0].pair"),
            ("value = \"regret\"\nb = 1\ntest = \"bootstrap\"\nstatistic = \"argmax\"\nassert = \"a > b\"", "claims[0].over"),
            ("value = \"regret\"\nb = 1\ntest = \"student-t\"\nassert = \"a >> b\"", "claims[0].assert"),
            ("value = \"regret\"\nb = 1\ntest = \"student-t\"\nassert = \"tied within -1\"", "claims[0].assert"),
            ("value = \"regret\"\nb = 1\ntest = \"student-t\"\nassert = \"a > b\"\nwhat = 1", "claims[0].what"),
        ];
        for (body, field) in bad {
            let e = claims_of(&format!("[[claims]]\nid = \"x\"\n{body}")).unwrap_err();
            let Error::Experiment { field: f, .. } = &e else {
                panic!("{e}")
            };
            assert_eq!(f, field, "{body}: {e}");
        }
        let twice = "[[claims]]\nid = \"x\"\nvalue = \"v\"\nb = 1\ntest = \"student-t\"\nassert = \"a > b\"\n";
        assert!(claims_of(&twice.repeat(2))
            .unwrap_err()
            .to_string()
            .contains("used twice"));
    }

    #[test]
    fn a_failing_claim_is_an_error_at_its_line_at_the_paper_profile_only() {
        let dir = std::env::temp_dir().join(format!("dptune-claims-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        two_tuners()
            .write_parquet(&dir.join("runs.parquet"))
            .unwrap();
        let text = format!(
            "name = \"x\"\n\n{PAIRED}assert = \"a < b\"\n\n{}assert = \"a > b\"\n",
            PAIRED.replace("\"x\"", "\"wrong\"")
        );
        let claims = claims_of(&text).unwrap();
        let (files, failed) = render(
            &claims,
            &dir,
            "runs.parquet",
            "exp",
            "f.toml",
            Profile::Paper,
        )
        .unwrap();
        assert_eq!(
            files.len(),
            3,
            "claims.parquet, .md and .tex are written all the same"
        );
        let e = crate::sim::experiment::locate_in_text(failed.unwrap(), &text).to_string();
        assert!(e.starts_with("f.toml:12:"), "{e}");
        assert!(
            e.contains("`wrong` asserts a > b but its verdict is a < b"),
            "{e}"
        );
        let md = std::fs::read_to_string(dir.join("claims.md")).unwrap();
        assert!(md.contains("| `wrong` |") && md.contains("| NO |"), "{md}");
        let (_, failed) = render(
            &claims,
            &dir,
            "runs.parquet",
            "exp",
            "f.toml",
            Profile::Smoke,
        )
        .unwrap();
        assert!(
            failed.is_none(),
            "the smoke profile writes verdicts without checking them"
        );
        assert_eq!(read(&dir).unwrap().unwrap().len(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
