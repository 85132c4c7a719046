//! Curve experiments (spec 000 Figures 2–6): the privacy and utility of repeat-and-select over a
//! swept order λ or mean E[K], for a ρ-zCDP base. Deterministic; computed in parallel, stored in
//! sweep order.

use super::experiment::{Curves, SweepParam};
use super::table::{finite, Table, Values};
use crate::accounting::{Orders, RdpCurve};
use crate::error::{Error, Result};
use crate::selection::utility::{expected_quantile, success_probability};
use crate::selection::{repeat_select, Base, CountFamily, CountLaw};
use rayon::prelude::*;

/// The sweep's points (linear or log spaced) plus the table points, sorted, without repeats.
pub fn sweep_values(c: &Curves) -> Vec<f64> {
    let s = &c.sweep;
    let n = s.points.max(2);
    let mut v: Vec<f64> = (0..n)
        .map(|i| {
            let t = i as f64 / (n - 1) as f64;
            if s.log {
                (s.from.ln() + t * (s.to.ln() - s.from.ln())).exp()
            } else {
                s.from + t * (s.to - s.from)
            }
        })
        .chain(c.table_at.iter().copied())
        .collect();
    v.sort_by(f64::total_cmp);
    v.dedup_by(|a, b| (*a - *b).abs() <= 1e-12 * b.abs());
    v
}

struct Point {
    series: usize,
    value: f64,
}

/// Every (series, sweep value) row of the experiment.
pub fn run(experiment: &str, c: &Curves) -> Result<Table> {
    let values = sweep_values(c);
    let mut points = Vec::new();
    for (i, s) in c.series.iter().enumerate() {
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
    let n = rows.len();
    let col = |f: fn(&Row) -> Option<f64>| Values::F64(rows.iter().map(f).collect());
    Ok(Table::default()
        .with("experiment", Values::Str(vec![experiment.to_string(); n]))
        .with(
            "series",
            Values::Str(
                points
                    .iter()
                    .map(|p| c.series[p.series].label.clone())
                    .collect(),
            ),
        )
        .with(
            "dist",
            Values::Str(
                points
                    .iter()
                    .map(|p| c.series[p.series].family.name())
                    .collect(),
            ),
        )
        .with("mean", col(|r| r.mean))
        .with("order", col(|r| r.order))
        .with("rdp", col(|r| r.rdp))
        .with("epsilon", col(|r| r.epsilon))
        .with("delta", Values::F64(vec![Some(c.delta); n]))
        .with("quantile", col(|r| r.quantile))
        .with("success", col(|r| r.success)))
}

#[derive(Default)]
struct Row {
    mean: Option<f64>,
    order: Option<f64>,
    rdp: Option<f64>,
    epsilon: Option<f64>,
    quantile: Option<f64>,
    success: Option<f64>,
}

fn row(c: &Curves, base: &Base, p: &Point) -> Result<Row> {
    let s = &c.series[p.series];
    let at = |e: Error| Error::Infeasible(format!("series `{}` at {}: {e}", s.label, p.value));
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
                ..Row::default()
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
                ..Row::default()
            })
        }
    }
}
