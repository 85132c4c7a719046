//! Spec 000 Figure 8 (Appendix C; `kind = "conditional-sampling"`): how tight Corollary 16(2)
//! is. For a ρ-zCDP base and each order λ, the upper bound on D_λ of conditional sampling
//! (run Q until its output lands in S) against the exact D_λ of the three-outcome example of
//! Appendix D.2 with s, t solved so that it meets the corollary's hypotheses at λ
//! ([`crate::accounting::selection::three_point`]); the bound is read with the example's own Q(S). The
//! spec leaves a and Q(S) unstated: `a` is a list (one unit and one pair of curves each), and
//! the figure is approximate (the example meets the two divergences at λ, not at every order).
//! Its figure and table are declared in its experiment file.

use super::StudyKind;
use crate::accounting::selection::bounds::{conditional_sampling, Base};
use crate::accounting::selection::three_point::ThreePoint;
use crate::accounting::{Orders, RdpCurve};
use crate::error::{fmt_num, Range, Result};
use crate::params::{Count, OneOrMany};
use crate::sim::fields::Fields;
use crate::sim::study::Study;
use crate::sim::table::Table;

pub const KIND: StudyKind = StudyKind {
    source: file!(),
    name: "conditional-sampling",
    about: "spec 000 Figure 8: Corollary 16(2) against the exact three-outcome example",
    parse: |f| Ok(Box::new(parse(f)?)),
};

/// A `conditional-sampling` file.
#[derive(Clone, Debug, PartialEq)]
pub struct ConditionalSampling {
    /// The base is ρ-zCDP: D_λ = ρλ in both directions.
    pub rho: f64,
    /// The example's a ∈ (0, ¼], one series pair each.
    pub a: Vec<f64>,
    /// [lowest, highest] order and the number of evenly spaced orders.
    pub orders: ([f64; 2], usize),
    /// Orders always included (the table's rows).
    pub table_at: Vec<f64>,
}

/// A `conditional-sampling` experiment file's parameters.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    rho: Option<f64>,
    a: Option<OneOrMany<f64>>,
    orders: Option<[f64; 2]>,
    points: Option<Count>,
    table_at: Option<OneOrMany<f64>>,
}

fn parse(f: &Fields) -> Result<ConditionalSampling> {
    let p: Params = f.read("a `conditional-sampling` experiment", &[])?;
    let orders = f.interval(
        "orders",
        p.orders
            .ok_or_else(|| f.missing("orders", "[lowest, highest] order λ > 1"))?,
    )?;
    if orders[0] <= 1.0 {
        return Err(f.bad("orders", "orders λ > 1"));
    }
    let a = f.numbers_in("a", p.a, Range::Positive)?;
    if a.iter().any(|&x| x > 0.25) {
        return Err(f.bad("a", "numbers in (0, 1/4] (Appendix D.2)"));
    }
    let points = p
        .points
        .ok_or_else(|| f.missing("points", "the number of orders, >= 2"))?
        .within("points", 2, 10_000, "each order's bound is computed afresh")
        .map_err(|e| f.wrap(e))?;
    let s = ConditionalSampling {
        rho: f.in_range("rho", p.rho.unwrap_or(0.1), Range::Positive)?,
        a,
        orders: (orders, points as usize),
        table_at: match p.table_at {
            Some(t) => f.all_in_range("table_at", t, Range::Finite)?,
            None => Vec::new(),
        },
    };
    if let Some(x) = s.table_at.iter().find(|&&x| x < orders[0] || x > orders[1]) {
        return Err(f.bad(
            "table_at",
            &format!("orders inside `orders` ({} is not)", fmt_num(*x)),
        ));
    }
    Ok(s)
}

impl ConditionalSampling {
    /// The swept orders, evenly spaced, with the table's orders merged in.
    pub fn order_grid(&self) -> Vec<f64> {
        let ([lo, hi], n) = self.orders;
        let mut v: Vec<f64> = (0..n)
            .map(|i| lo + (hi - lo) * i as f64 / (n - 1) as f64)
            .chain(self.table_at.iter().copied())
            .collect();
        v.sort_by(f64::total_cmp);
        v.dedup();
        v
    }
}

/// One order of one `a`: the example's three-point solution (s, t, q(s); none where it has
/// none), the conditional-sampling bound and the example's exact divergence.
#[derive(serde::Serialize)]
struct Row {
    a: f64,
    rho: f64,
    order: f64,
    s: Option<f64>,
    t: Option<f64>,
    q_s: Option<f64>,
    upper: Option<f64>,
    exact_example: Option<f64>,
    gap: Option<f64>,
}

/// One unit: every order for one `a`.
fn unit(s: &ConditionalSampling, experiment: &str, a: f64) -> Result<Table> {
    let base = Base::symmetric(RdpCurve::zcdp(s.rho)?);
    let mut rows = Vec::new();
    for order in s.order_grid() {
        let mut row = Row {
            a,
            rho: s.rho,
            order,
            s: None,
            t: None,
            q_s: None,
            upper: None,
            exact_example: None,
            gap: None,
        };
        if let Some(x) = ThreePoint::solve(order, s.rho, a)? {
            let upper =
                conditional_sampling(&base, x.q_of_s(), &Orders::Continuous)?.eval(order)?;
            let exact = x.conditional_divergence(order);
            row = Row {
                s: Some(x.s),
                t: Some(x.t),
                q_s: Some(x.q_of_s()),
                upper: Some(upper),
                exact_example: Some(exact),
                gap: Some(upper - exact),
                ..row
            };
        }
        rows.push(row);
    }
    Table::from_experiment_rows(experiment, &rows)
}

impl Study for ConditionalSampling {
    fn units(&self) -> Vec<String> {
        self.a
            .iter()
            .map(|a| format!("a={}", fmt_num(*a)))
            .collect()
    }
    fn run_unit(&self, experiment: &str, i: usize) -> Result<Table> {
        unit(self, experiment, self.a[i])
    }
    fn output(&self) -> &'static str {
        "bounds.parquet"
    }
}
