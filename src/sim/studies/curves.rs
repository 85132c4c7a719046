//! Curve experiments (spec 000 Figures 2–6): the privacy and utility of repeat-and-select over a
//! swept order λ or mean E[K], for a ρ-zCDP base. Deterministic; computed in parallel, stored in
//! sweep order.

use super::StudyKind;
use crate::accounting::selection::utility::{expected_quantile, success_probability};
use crate::accounting::selection::{repeat_select, Base, CountFamily, CountLaw};
use crate::accounting::{Accountant, Orders, RdpCurve};
use crate::error::{Error, Range, Result};
use crate::params::{Count, OneOrMany};
use crate::sim::fields::Fields;
use crate::sim::plot::Scale;
use crate::sim::study::Study;
use crate::sim::table::{finite, Table};
use rayon::prelude::*;

/// The most points on a curve's axis: 10,000 took 136 s on two cores (spec 000 Fig. 4).
const MAX_POINTS: u64 = 10_000;

pub const KIND: StudyKind = StudyKind {
    source: file!(),
    name: "curves",
    about: "privacy and utility of repeat-and-select over a swept order or mean (closed form)",
    parse: |f| Ok(Box::new(parse(f)?)),
};

/// Privacy and utility of repeat-and-select, as curves over a swept parameter (spec 000
/// Figures 2–6): no randomness.
#[derive(Clone, Debug, PartialEq)]
pub struct Curves {
    /// The base run is `rho`-zCDP.
    pub rho: f64,
    pub delta: f64,
    pub accountant: Accountant,
    pub sweep: Sweep,
    pub series: Vec<SeriesSpec>,
    /// m of the success probability 1 − f(1 − 1/m).
    pub success_m: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub enum SweepParam {
    /// The Rényi order λ (each series has a fixed mean).
    Order,
    /// The mean number of runs E[K].
    Mean,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Sweep {
    pub param: SweepParam,
    pub from: f64,
    pub to: f64,
    pub points: u64,
    pub log: bool,
    /// Sweep values always included, exactly (where tables read the curves).
    pub at: Vec<f64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SeriesSpec {
    pub label: String,
    pub family: CountFamily,
    pub mean: Option<f64>,
}

/// A `curves` experiment file's parameters.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    base: Option<BaseParams>,
    delta: Option<f64>,
    orders: Option<String>,
    conversion: Option<String>,
    sweep: Option<SweepParams>,
    success_m: Option<Count>,
    series: Option<Vec<SeriesParams>>,
}

/// The base run: ρ-zCDP.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct BaseParams {
    zcdp: Option<f64>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SweepParams {
    param: Option<String>,
    range: Option<[f64; 2]>,
    points: Option<Count>,
    #[serde(default)]
    scale: Scale,
    at: Option<OneOrMany<f64>>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SeriesParams {
    dist: Option<String>,
    mean: Option<f64>,
    label: Option<String>,
}

fn parse(f: &Fields) -> Result<Curves> {
    let p: Params = f.read("a `curves` experiment", &[])?;
    let base = p
        .base
        .ok_or_else(|| f.missing("base", "the base run, e.g. base = { zcdp = 0.1 }"))?;
    let rho = f.in_range(
        "base.zcdp",
        base.zcdp
            .ok_or_else(|| f.missing("base.zcdp", "ρ > 0 of the base run"))?,
        Range::Positive,
    )?;
    let delta = f.in_range("delta", p.delta.unwrap_or(1e-6), Range::OpenUnit)?;
    let accountant = f.accountant_of(p.orders.as_deref(), p.conversion.as_deref())?;
    let s = p
        .sweep
        .ok_or_else(|| f.missing("sweep", "a [sweep] table"))?;
    let param = match s.param.as_deref() {
        Some("order") => SweepParam::Order,
        Some("mean") => SweepParam::Mean,
        _ => return Err(f.bad("sweep.param", "`order` or `mean`")),
    };
    let [from, to] = s
        .range
        .ok_or_else(|| f.missing("sweep.range", "[from, to]"))?;
    let low = if param == SweepParam::Order {
        1.0
    } else {
        1.0 - 1e-12
    };
    if !(from > low && to > from && to.is_finite()) {
        return Err(f.bad(
            "sweep.range",
            &format!("needs {low} < from < to (got [{from}, {to}])"),
        ));
    }
    let points = s
        .points
        .ok_or_else(|| f.missing("sweep.points", "an integer >= 2"))?
        .within(
            "points",
            2,
            MAX_POINTS,
            "each point accounts every series afresh",
        )
        .map_err(|e| match f.table("sweep") {
            Ok(Some(s)) => s.wrap(e),
            _ => f.wrap(e),
        })?;
    let log = s.scale == Scale::Log;
    let success_m = match p.success_m {
        Some(m) => f.count("success_m", m, 1)?,
        None => 100,
    };
    let mut series = Vec::new();
    let given = p
        .series
        .filter(|s| !s.is_empty())
        .ok_or_else(|| f.missing("series", "at least one [[series]] table"))?;
    for (i, sp) in given.into_iter().enumerate() {
        let at = |key: &str| format!("series[{i}].{key}");
        let dist = sp.dist.ok_or_else(|| {
            f.missing(
                &at("dist"),
                "logarithmic, geometric, tnb:ETA, poisson or fixed",
            )
        })?;
        let family = CountFamily::parse(&dist).map_err(|e| f.bad(&at("dist"), &e.to_string()))?;
        let mean = sp
            .mean
            .map(|m| f.in_range(&at("mean"), m, Range::Positive))
            .transpose()?;
        if param == SweepParam::Order && mean.is_none() {
            return Err(f.missing(&at("mean"), "E[K] (the sweep is over the order)"));
        }
        if let Some(m) = mean {
            family
                .with_mean(m, None)
                .map_err(|e| f.bad(&at("mean"), &e.to_string()))?;
        }
        let label = match sp.label {
            Some(l) => l,
            None => match mean {
                Some(m) => format!("{} E[K]={}", family.name(), crate::error::fmt_num(m)),
                None => family.name(),
            },
        };
        if series.iter().any(|s: &SeriesSpec| s.label == label) {
            return Err(f.bad(
                &at("label"),
                &format!("`{label}` is used twice; give each series a distinct label"),
            ));
        }
        series.push(SeriesSpec {
            label,
            family,
            mean,
        });
    }
    let at = match s.at {
        Some(at) => f.all_in_range("sweep.at", at, Range::Positive)?,
        None => Vec::new(),
    };
    if let Some(x) = at.iter().find(|&&x| x < from || x > to) {
        return Err(f.bad(
            "sweep.at",
            &format!("{x} is outside the sweep range [{from}, {to}]"),
        ));
    }
    Ok(Curves {
        rho,
        delta,
        accountant,
        sweep: Sweep {
            param,
            from,
            to,
            points,
            log,
            at,
        },
        series,
        success_m,
    })
}

/// The sweep's points (linear or log spaced) plus the table points, sorted, without repeats.
pub fn sweep_values(c: &Curves) -> Vec<f64> {
    let s = &c.sweep;
    let n = s.points.max(2);
    let mut v: Vec<f64> = (0..n)
        .map(|i| {
            let t = i as f64 / (n - 1) as f64;
            if s.log {
                libm::exp(libm::log(s.from) + t * (libm::log(s.to) - libm::log(s.from)))
            } else {
                s.from + t * (s.to - s.from)
            }
        })
        .chain(c.sweep.at.iter().copied())
        .collect();
    v.sort_by(f64::total_cmp);
    v.dedup_by(|a, b| (*a - *b).abs() <= 1e-12 * b.abs());
    v
}

struct Point {
    series: usize,
    value: f64,
}

/// The (series, sweep value) rows of the experiment: every series, or series `only`.
pub fn run(experiment: &str, c: &Curves, only: Option<usize>) -> Result<Table> {
    let values = sweep_values(c);
    let mut points = Vec::new();
    for (i, s) in c.series.iter().enumerate() {
        if only.is_some_and(|o| o != i) {
            continue;
        }
        let mut vs: Vec<f64> = match (&c.sweep.param, s.family) {
            // A fixed K is an integer: round the swept means and drop repeats.
            (SweepParam::Mean, CountFamily::Fixed) => {
                values.iter().map(|v| v.round().max(1.0)).collect()
            }
            _ => values.clone(),
        };
        vs.dedup();
        points.extend(vs.into_iter().map(|value| Point { series: i, value }));
    }
    let base = Base::symmetric(RdpCurve::zcdp(c.rho)?);
    let rows = points
        .par_iter()
        .map(|p| row(c, &base, p))
        .collect::<Result<Vec<Row>>>()?;
    Table::from_experiment_rows(experiment, &rows)
}

/// One point of one series (the sweep's quantities; the others none).
#[derive(Default, serde::Serialize)]
struct Row {
    series: String,
    dist: String,
    mean: Option<f64>,
    order: Option<f64>,
    rdp: Option<f64>,
    epsilon: Option<f64>,
    delta: f64,
    quantile: Option<f64>,
    success: Option<f64>,
}

fn row(c: &Curves, base: &Base, p: &Point) -> Result<Row> {
    let s = &c.series[p.series];
    let blank = || Row {
        series: s.label.clone(),
        dist: s.family.name(),
        delta: c.delta,
        ..Row::default()
    };
    let at = |e: Error| e.context(&format!("series `{}` at {}", s.label, p.value));
    match c.sweep.param {
        SweepParam::Order => {
            let mean = s
                .mean
                .expect("validated: order sweeps have a mean per series");
            let law = s.family.with_mean(mean, None).map_err(at)?;
            // The monotone envelope, as spec 000 §6 asks for every figure.
            let curve = repeat_select(base, &law, &Orders::Continuous)
                .map_err(at)?
                .envelope();
            Ok(Row {
                mean: finite(law.mean()),
                order: Some(p.value),
                rdp: finite(curve.eval(p.value).map_err(at)?),
                ..blank()
            })
        }
        SweepParam::Mean => {
            let law = s.family.with_mean(p.value, None).map_err(at)?;
            let curve = repeat_select(base, &law, &c.accountant.orders).map_err(at)?;
            Ok(Row {
                mean: finite(law.mean()),
                epsilon: finite(c.accountant.epsilon(&curve, c.delta).map_err(at)?.epsilon),
                quantile: finite(expected_quantile(&law)),
                success: finite(success_probability(&law, c.success_m).map_err(at)?),
                ..blank()
            })
        }
    }
}

/// A privacy bound shown with `digits` decimals is rounded up; other quantities to nearest.
/// One unit per series/// One unit per series (each series' points are closed-form and cheap).
impl Study for Curves {
    fn units(&self) -> Vec<String> {
        self.series.iter().map(|s| s.label.clone()).collect()
    }

    fn run_unit(&self, experiment: &str, i: usize) -> Result<Table> {
        run(experiment, self, Some(i))
    }

    fn output(&self) -> &'static str {
        "curves.parquet"
    }
}
