//! Declarative figures and tables over any study's tidy output, so that a new figure is
//! configuration, not code. Any experiment file may add
//!
//! ```toml
//! [[plots]]
//! name = "regret-by-budget"    # output stem: <name>.png/.svg (one per facet value: <name>-<value>)
//! x = "target_epsilon"         # columns of the table
//! y = "regret"                 # or several: y = ["upper", "exact"], named by y_names = [...]
//! series = "label"             # optional: one curve per value (in order of first appearance;
//!                              # a list of columns: per combination, "a, b")
//! series_label = "a = {}"      # optional: a series' legend entry, {} its value
//! facet = "variant"            # optional: one figure per value
//! filter = { dim = 2 }         # optional: rows whose columns equal these values (a list:
//!                              # any of them, e.g. { mean = [10, 100] }; "{key}" or
//!                              # "{key[i]}": the file's top-level value or list entry)
//! exclude = { src = "given" }  # optional: drop the rows where every column holds its value
//! diagonal = "y = Δ_f"         # optional: a dashed line y = x, this its legend entry
//! aggregate = "mean-ci"        # mean-ci (default: mean and 95% interval), geomean-ci (the
//!                              # geometric mean and the interval of the mean log: for a log
//!                              # axis, plots only), mean, median, sd, quantile:Q, or none
//!                              # (every row is a point)
//! x_scale = "log"              # linear (default) or log; y_scale likewise
//! x_range = [0, 8]             # optional axis limits; y_range likewise
//! lines = true                 # join the points (default: unless aggregate = "none")
//! y_bounds = [0, inf]          # optional: what the value cannot leave (a loss ≥ 0): intervals
//!                              # are clipped there and the y label says so
//! intervals = "bars"           # or "band": one style for every series (default: a band from
//!                              # 8 points on, bars below)
//! interval = ["lo", "hi"]      # with aggregate = "none": each row's interval from these
//!                              # columns (one a study computed, e.g. over bootstrap tables)
//! series_labels = { "log:1:10:20" = "λ from 1 to 10" }  # optional legend entry per value
//! reference = { value = 0.9, label = "…" }     # optional horizontal line; or computed: the
//!                              # largest mean of `column` over the groups of `by` (`table`
//!                              # default: the plot's; `{}` in the label: that group's value):
//!                              # { column = "acc", by = "rate", label = "best rate ({})" }
//! focus = true                 # fit the y axis to the bulk of the points (a linear axis
//!                              # without y_range; the title names the few it leaves off)
//! panels = "series"            # optional: one panel per series (the others grey behind it)
//! columns = 3                  # panels to a row (default 2)
//! table = "runs.parquet"       # default: the study's merged table
//! title = "…"                  # default: the experiment's title ({title} stands for it;
//!                              # {facet}, the facet's value, else appended: "… (value)";
//!                              # {key}, any top-level number, string or boolean of the file,
//!                              # as the profile sets it: "{seeds} walks" in titles, labels
//!                              # and captions)
//! x_label = "…"                # default: the column's name; y_label likewise
//! along = "t"                  # optional: points are the groups of equal t (not of equal x),
//!                              # at their rows' mean x, joined in t's order
//! path = true                  # with `along`: a thin line, first point ○, last ■
//! x_bounds = [1, inf]          # optional: x values held within (0 drawn at 1 on a log axis)
//! mark = { column = "loss", at = "min", label = "{}: lowest ({value})" }  # a cross per series
//! series_styles = { "worst" = { color = "red", marker = "triangle" } }  # the others avoid red
//! zoom = { x_range = [0, 8], y_range = [0, 0.1], title = "…", whole = "…" }  # a 2nd panel
//!                              # (src/sim/plot_paths.rs); `{column:NAME}` in a title as in
//!                              # a caption
//!
//! [[tables]]
//! name = "regret-table"        # <name>.md and <name>.tex
//! rows = "label"
//! columns = "target_epsilon"
//! value = "regret"
//! aggregate = "mean-ci"        # as above; digits = 3 by default
//! round = "up"                 # or "down": one value rounded that way (bounds: up)
//! row_label = "α"              # header of the rows' column (default: its column's name)
//! column_label = "ε"           # columns headed "ε=1", …; "" for the values alone
//!                              # (default: the column's name)
//! facet = "variant"            # optional (pivots and lists): one table per value,
//!                              # <name>-<value>; `{facet}` in the caption is its value
//! caption = "… from ε = {column:from}"   # `{column:NAME}`: the one value column NAME
//!                              # holds in the table's rows (several: an error)
//! # rows = ["method", "accountant"], columns = ["size", "eps"] with
//! # column_header = "|S| = {size}, ε = {eps}"; note = { column = "delta", label = "δ" }:
//! # " (δ v)" after a cell where v ≠ 0
//!
//! [[tables]]                   # or a list: one line per (filtered) row, these columns
//! name = "bounds"
//! list = [{ column = "order", label = "λ" },
//!         { column = "upper", label = "bound", digits = 4, round = "up",
//!           missing = "– (no instance)" }]   # no digits: the value as it is;
//!                                              # scientific = true: 1.23e-5;
//!                                              # interval = "upper_ci": "v ± h"
//!         # format = "{} ({rate:.4}; {share:%.0})": the cell as a template, {} the cell
//!         # as it shows without one, {NAME} another column's value as it is, {NAME:.4}
//!         # decimals (as `round` says), {NAME:.2e}, {NAME:%.0} a percentage, {NAME:s4}
//!         # significant digits, {NAME:.4±OTHER} value ± interval
//! ```
//!
//! Columns are checked against the table when the report is drawn (the table exists only then);
//! a missing column is an error naming the entry, the column and the columns there are. The
//! declarations are not part of the experiment's configuration: every run and report draws
//! them afresh, so editing one reruns nothing.

use super::cell_template::{
    percent_values, templated, Overlay, OverlayEntry, ReferenceRowsEntry, Template, TemplatePivot,
};
use super::cells::{cells, distinct, filter, kept, keys, matches, Cell, Filter};
use super::fields::Fields;
use super::plot::{self, Figure, Intervals, Scale, Series, Style};
use super::plot_paths;
use super::report::{pm, quantile, write_grid};
use super::table::{Grid, Table};
use crate::error::{fmt_num, Error, Range, Result};
use crate::numeric::round_up_decimals;
use crate::numeric::stats::{mean_interval, variance};
use crate::params::OneOrMany;
use std::path::{Path, PathBuf};

/// How the rows of one (facet, series, x) group become one value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Aggregate {
    MeanCi,
    /// The geometric mean with the 95% Student-t interval of the mean of the logs, mapped
    /// back (plots only: an interval in log space, for a log axis).
    GeoMeanCi,
    Mean,
    Median,
    /// The sample standard deviation (n − 1), a spread, not an interval.
    Sd,
    Quantile(f64),
    /// Every row is its own point (plots only).
    None,
}

impl Aggregate {
    fn parse(s: &str) -> Option<Aggregate> {
        Some(match s {
            "mean-ci" => Aggregate::MeanCi,
            "geomean-ci" => Aggregate::GeoMeanCi,
            "mean" => Aggregate::Mean,
            "median" => Aggregate::Median,
            "sd" => Aggregate::Sd,
            "none" => Aggregate::None,
            q => {
                let q: f64 = q.strip_prefix("quantile:")?.parse().ok()?;
                if !(q > 0.0 && q <= 1.0) {
                    return None;
                }
                Aggregate::Quantile(q)
            }
        })
    }

    /// A plot's point: the value and, for mean-ci and geomean-ci, its interval (lo, hi);
    /// None where geomean-ci meets a value that is not positive.
    fn point(&self, ys: &mut [f64]) -> Option<(f64, Option<(f64, f64)>)> {
        Some(match self {
            Aggregate::GeoMeanCi => {
                if ys.iter().any(|&y| y <= 0.0) {
                    return None;
                }
                let logs: Vec<f64> = ys.iter().map(|y| libm::log(*y)).collect();
                let (m, h) = mean_interval(&logs);
                (
                    libm::exp(m),
                    h.map(|h| (libm::exp(m - h), libm::exp(m + h))),
                )
            }
            a => {
                let (m, h) = a.apply(ys);
                (m, h.map(|h| (m - h, m + h)))
            }
        })
    }

    /// The value and, for mean-ci, the half-width.
    fn apply(&self, ys: &mut [f64]) -> (f64, Option<f64>) {
        match self {
            Aggregate::MeanCi => mean_interval(ys),
            Aggregate::GeoMeanCi => unreachable!("plots only: rejected for tables when parsed"),
            Aggregate::Mean => (mean_interval(ys).0, None),
            Aggregate::Median => (quantile(ys, 0.5), None),
            Aggregate::Sd => (variance(ys).map_or(f64::NAN, f64::sqrt), None),
            Aggregate::Quantile(q) => (quantile(ys, *q), None),
            Aggregate::None => (ys[0], None),
        }
    }
}

/// One `[[plots]]` entry.
#[derive(Clone, Debug, PartialEq)]
pub struct PlotSpec {
    name: String,
    table: Option<String>,
    filter: Filter,
    x: String,
    /// The y columns with their legend names (one: no name).
    y: Vec<(String, Option<String>)>,
    series: Option<String>,
    series_label: Option<String>,
    facet: Option<String>,
    aggregate: Aggregate,
    x_log: bool,
    y_log: bool,
    x_range: Option<(f64, f64)>,
    y_range: Option<(f64, f64)>,
    /// Markers only, no line.
    scatter: bool,
    title: Option<String>,
    x_label: Option<String>,
    y_label: Option<String>,
    /// The bounds a value cannot leave (a loss ≥ 0, an accuracy in [0, 1]): intervals are
    /// clipped there, and the y label says so.
    y_bounds: Option<(f64, f64)>,
    intervals: Intervals,
    /// `interval`: each row's own interval, from these two columns (aggregate none).
    interval: Option<(String, String)>,
    reference: Option<Reference>,
    /// Legend entries for series values (others: `series_label` or the value).
    series_labels: Vec<(String, String)>,
    /// One panel per series (the others grey behind it), this many to a row.
    panels: Option<usize>,
    /// The y axis fitted to the bulk of the points, the few far ones named in the title.
    focus: bool,
    /// Lines drawn as a staircase: each y held until the next x (a Pareto front).
    steps: bool,
    /// The markers' shape.
    marker: plot::Marker,
    /// Further series from other tables or rows, drawn in the same figure (`[[plots.layers]]`).
    layers: Vec<PlotSpec>,
    /// A heatmap of this column over the grid of (x, y) values, instead of curves.
    heat: Option<Heat>,
    /// Another table's curves on the same axes.
    overlay: Option<Overlay>,
    /// Rows dropped where every column holds one of its values (after `filter`).
    exclude: Filter,
    /// Further series columns: a series is a combination of values ("a, b").
    series_more: Vec<String>,
    /// A dashed line y = x across the points' x range, with this legend entry.
    diagonal: Option<String>,
    /// Points along a column, paths, x bounds, marks, series styles, a zoomed panel.
    extras: plot_paths::Extras,
}

/// A heatmap's colour: a column's value per (x, y) cell, on a log10 scale if asked.
#[derive(Clone, Debug, PartialEq)]
struct Heat {
    column: String,
    log: bool,
    label: Option<String>,
}

/// A horizontal reference line: a number, or the largest group mean of a column.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Reference {
    /// Its legend entry; `{}` stands for the value of `by` where the largest mean is.
    label: String,
    value: Option<f64>,
    /// Default: the plot's table.
    table: Option<String>,
    column: Option<String>,
    /// The groups whose means are compared (with `column`).
    by: Option<String>,
}

/// One `[[tables]]` entry.
#[derive(Clone, Debug, PartialEq)]
pub struct TableSpec {
    name: String,
    table: Option<String>,
    filter: Filter,
    /// One table per value of this column: `<name>-<value>`, `{facet}` in the caption its value.
    facet: Option<String>,
    caption: Option<String>,
    body: Body,
    /// Its rows appended to the previous `[[tables]]` entry's table (a list of as many columns):
    /// a table whose rows come from several tables or formats.
    append: bool,
    /// Rows dropped where every column holds one of its values (after `filter`).
    exclude: Filter,
}

/// What a table shows.
#[derive(Clone, Debug, PartialEq)]
enum Body {
    Pivot(Pivot),
    /// The kept rows as they are, these columns.
    List(Vec<ListColumn>),
    /// A pivot whose cells show one row each through a template.
    Template(TemplatePivot),
}

/// One value aggregated per (row, column) pair of two grouping columns.
#[derive(Clone, Debug, PartialEq)]
struct Pivot {
    rows: String,
    columns: String,
    value: String,
    aggregate: Aggregate,
    digits: usize,
    row_label: Option<String>,
    column_label: Option<String>,
    round: Rounding,
    /// Further row and column keys, a columns' header and a note per cell.
    more: Box<More>,
}

/// A pivot's further keys: `rows = ["a", "b"]` (each its own header column), `columns = [...]`
/// (headed by `column_header`, `{NAME}` standing for a key's value of column NAME), and a
/// note after each cell's value.
#[derive(Clone, Debug, Default, PartialEq)]
struct More {
    rows: Vec<String>,
    columns: Vec<String>,
    column_header: Option<String>,
    note: Option<Note>,
}

/// " (LABEL v)" after a cell's value, v the mean of `column` in the cell where it is not 0.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Note {
    column: String,
    label: String,
}

/// One column of a list table.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ListColumn {
    column: String,
    label: Option<String>,
    /// Decimals; none: the value as it is.
    digits: Option<usize>,
    #[serde(default)]
    round: Rounding,
    /// Shown as 1.23e-5 (with `digits`).
    #[serde(default)]
    scientific: bool,
    /// What an empty cell shows (default "–"); placeholders as in `format`.
    missing: Option<String>,
    /// The cell as a template over the row's columns: `{}` the cell as it would show without
    /// a format, `{name}` a column's value as it is, `{name:.4}` (rounded as `round` says),
    /// `{name:.2e}`, `{name:%.0}` (a percentage), `{name:s4}` (significant digits),
    /// `{name:.4±other}` (value ± interval); `{:SPEC}` the column's own value so.
    format: Option<String>,
    /// The row shown through a template (where `column` holds a value).
    cell: Option<String>,
    /// A column of half-widths: the cell shows "value ± half-width" (`digits`, default 3; no
    /// half-width: "value (one repetition)").
    interval: Option<String>,
}

/// How a table's values are rounded to their digits: bounds are printed rounded up (an upper
/// bound must stay one), values that must not be overstated rounded down.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
enum Rounding {
    #[default]
    Nearest,
    Up,
    Down,
}

impl Rounding {
    fn format(self, x: f64, digits: usize) -> String {
        let r = match self {
            Rounding::Nearest => x,
            Rounding::Up => round_up_decimals(x, digits as i32),
            Rounding::Down => -round_up_decimals(-x, digits as i32),
        };
        format!("{r:.digits$}")
    }
}

/// The declarative outputs of one experiment file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outputs {
    plots: Vec<PlotSpec>,
    tables: Vec<TableSpec>,
    /// `{key}` → the file's top-level value, for titles, labels and captions.
    values: Vec<(String, String)>,
}

impl Outputs {
    /// `text` with `{title}` and each `{key}` of the file's top-level values filled in; a
    /// `{key}` the file does not set (a default is not written there) is an error.
    fn fill(&self, text: &str, title: &str, what: &str) -> Result<String> {
        let mut out = text.replace("{title}", title);
        for (key, value) in &self.values {
            out = out.replace(&format!("{{{key}}}"), value);
        }
        let unfilled = out.split('{').skip(1).find_map(|rest| {
            let key = rest.split('}').next().filter(|k| rest.len() > k.len())?;
            placeholder(key).then(|| key.to_string())
        });
        match unfilled {
            Some(key) => Err(Error::Infeasible(format!(
                "{what}: `{{{key}}}` in \"{text}\": the file sets no top-level `{key}` (write it in \
                 the file, even where it is the default)"
            ))),
            None => Ok(out),
        }
    }
}

fn stem_name(f: &Fields, given: Option<&str>, used: &mut Vec<String>) -> Result<String> {
    let name = given.ok_or_else(|| f.missing("name", "the output file stem"))?;
    if name.is_empty()
        || name.len() > 100
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(f.bad("name", "1 to 100 letters, digits, - and _"));
    }
    if used.iter().any(|u| u == name) {
        return Err(f.bad("name", &format!("`{name}` is used twice")));
    }
    used.push(name.to_string());
    Ok(name.to_string())
}

fn column<T>(f: &Fields, key: &'static str, given: Option<T>) -> Result<T> {
    given.ok_or_else(|| f.missing(key, "a column of the table"))
}

fn aggregate(f: &Fields, given: Option<&str>) -> Result<Aggregate> {
    match given {
        None => Ok(Aggregate::MeanCi),
        Some(a) => Aggregate::parse(a).ok_or_else(|| {
            f.bad(
                "aggregate",
                "mean-ci, geomean-ci, mean, median, sd, quantile:Q (0 < Q <= 1) or none",
            )
        }),
    }
}

fn range(f: &Fields, key: &str, given: Option<[f64; 2]>) -> Result<Option<(f64, f64)>> {
    given
        .map(|r| f.interval(key, r).map(|[a, b]| (a, b)))
        .transpose()
}

/// A `[[plots]]` entry as written.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PlotEntry {
    name: Option<String>,
    table: Option<String>,
    filter: Option<toml::Table>,
    x: Option<String>,
    y: Option<OneOrMany<String>>,
    y_names: Option<Vec<String>>,
    series: Option<OneOrMany<String>>,
    series_label: Option<String>,
    facet: Option<String>,
    aggregate: Option<String>,
    #[serde(default)]
    x_scale: Scale,
    #[serde(default)]
    y_scale: Scale,
    x_range: Option<[f64; 2]>,
    y_range: Option<[f64; 2]>,
    lines: Option<bool>,
    title: Option<String>,
    x_label: Option<String>,
    y_label: Option<String>,
    y_bounds: Option<[f64; 2]>,
    #[serde(default)]
    intervals: Intervals,
    interval: Option<[String; 2]>,
    reference: Option<Reference>,
    series_labels: Option<toml::Table>,
    panels: Option<String>,
    columns: Option<f64>,
    #[serde(default)]
    focus: bool,
    #[serde(default)]
    steps: bool,
    marker: Option<String>,
    z: Option<String>,
    #[serde(default)]
    z_scale: Scale,
    z_label: Option<String>,
    overlay: Option<OverlayEntry>,
    exclude: Option<toml::Table>,
    diagonal: Option<String>,
    // src/sim/plot_paths.rs
    along: Option<String>,
    #[serde(default)]
    path: bool,
    x_bounds: Option<[f64; 2]>,
    mark: Option<plot_paths::Mark>,
    series_styles: Option<toml::Table>,
    zoom: Option<plot_paths::ZoomEntry>,
}

/// A `[[plots.layers]]` entry as written: further series in the plot's figure (and facet).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct LayerEntry {
    table: Option<String>,
    filter: Option<toml::Table>,
    x: Option<String>,
    y: Option<String>,
    series: Option<String>,
    series_label: Option<String>,
    series_labels: Option<toml::Table>,
    aggregate: Option<String>,
    lines: Option<bool>,
    #[serde(default)]
    steps: bool,
    marker: Option<String>,
}

fn marker(f: &Fields, given: Option<&str>) -> Result<plot::Marker> {
    Ok(match given {
        None | Some("circle") => plot::Marker::Circle,
        Some("triangle") => plot::Marker::Triangle,
        Some("square") => plot::Marker::Square,
        Some("cross") => plot::Marker::Cross,
        Some("star") => plot::Marker::Star,
        Some(_) => return Err(f.bad("marker", "circle, triangle, square, cross or star")),
    })
}

fn labels(f: &Fields, given: Option<toml::Table>) -> Result<Vec<(String, String)>> {
    given
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| match v {
            toml::Value::String(v) => Ok((k, v)),
            _ => Err(f.bad(&format!("series_labels.{k}"), "a string")),
        })
        .collect()
}

/// The plot's `[[plots.layers]]`: each a plot of its own rows drawn into the parent's figure.
fn layers(p: &Fields, parent: &PlotSpec) -> Result<Vec<PlotSpec>> {
    let mut out = Vec::new();
    for l in p.array("layers", false)? {
        let e: LayerEntry = l.read("a `[[plots.layers]]` entry", &[])?;
        let aggregate = match e.aggregate {
            None => parent.aggregate,
            given => aggregate(&l, given.as_deref())?,
        };
        out.push(PlotSpec {
            table: e.table.or_else(|| parent.table.clone()),
            filter: filter(&l, e.filter)?,
            x: e.x.unwrap_or_else(|| parent.x.clone()),
            y: vec![(e.y.unwrap_or_else(|| parent.y[0].0.clone()), None)],
            series: e.series,
            series_label: e.series_label,
            series_labels: labels(&l, e.series_labels)?,
            aggregate,
            scatter: !e.lines.unwrap_or(aggregate != Aggregate::None || e.steps),
            steps: e.steps,
            marker: marker(&l, e.marker.as_deref())?,
            layers: Vec::new(),
            heat: None,
            overlay: None,
            exclude: Filter(Vec::new()),
            series_more: Vec::new(),
            diagonal: None,
            extras: plot_paths::Extras::default(),
            ..parent.clone()
        });
    }
    Ok(out)
}

/// A `[[tables]]` entry as written.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TableEntry {
    name: Option<String>,
    table: Option<String>,
    filter: Option<toml::Table>,
    facet: Option<String>,
    rows: Option<OneOrMany<String>>,
    columns: Option<OneOrMany<String>>,
    value: Option<String>,
    aggregate: Option<String>,
    digits: Option<f64>,
    caption: Option<String>,
    row_label: Option<String>,
    column_label: Option<String>,
    #[serde(default)]
    round: Rounding,
    list: Option<Vec<ListColumn>>,
    #[serde(default)]
    append: bool,
    cell: Option<String>,
    reference_rows: Option<ReferenceRowsEntry>,
    exclude: Option<toml::Table>,
    column_header: Option<String>,
    note: Option<Note>,
}

/// Parses the root `[[plots]]` and `[[tables]]` arrays (absent: none).
pub(crate) fn parse(f: &Fields) -> Result<Outputs> {
    // A plot and a table may share a stem (.png/.svg beside .md/.tex), two plots or two
    // tables may not.
    let (mut plot_names, mut table_names) = (Vec::new(), Vec::new());
    let mut out = Outputs::default();
    for (key, value) in f.table {
        let shown = match value {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(x) => fmt_num(*x),
            toml::Value::Boolean(b) => b.to_string(),
            toml::Value::Array(list) => {
                out.values.extend(list_entries(key, list));
                continue;
            }
            _ => continue,
        };
        out.values.push((key.clone(), shown));
    }
    for p in f.array("plots", false)? {
        let e: PlotEntry = p.read("a `[[plots]]` entry", &["layers"])?;
        let aggregate = aggregate(&p, e.aggregate.as_deref())?;
        let ys =
            e.y.ok_or_else(|| p.missing("y", "a column of the table, or a list of them"))?
                .into_vec();
        let y = match e.y_names {
            None if ys.len() == 1 => ys.into_iter().map(|y| (y, None)).collect(),
            Some(names) if names.len() == ys.len() => {
                ys.into_iter().zip(names.into_iter().map(Some)).collect()
            }
            _ => return Err(p.bad("y_names", "one legend name per y column (none for one)")),
        };
        let y_bounds = match e.y_bounds {
            Some([lo, hi]) if lo < hi && !lo.is_nan() && !hi.is_nan() => Some((lo, hi)),
            Some(_) => return Err(p.bad("y_bounds", "[lo, hi] with lo < hi (inf allowed)")),
            None => None,
        };
        if let Some(r) = &e.reference {
            let computed = (r.column.is_some(), r.by.is_some());
            match (r.value, computed) {
                (Some(v), (false, false)) if v.is_finite() => {}
                (None, (true, true)) => {}
                _ => {
                    return Err(p.bad(
                        "reference",
                        "{ value = a finite number, label } or { column, by, label, table? }",
                    ))
                }
            }
            if r.value.is_some() && r.table.is_some() {
                return Err(p.bad("reference.table", "only with `column` and `by`"));
            }
        }
        let series_labels = e
            .series_labels
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| match v {
                toml::Value::String(v) => Ok((k, v)),
                _ => Err(p.bad(&format!("series_labels.{k}"), "a string")),
            })
            .collect::<Result<Vec<_>>>()?;
        let panels = match (e.panels.as_deref(), e.columns) {
            (None, None) => None,
            (Some("series"), c) => {
                if e.series.is_none() {
                    return Err(p.bad("panels", "needs `series` (one panel per series)"));
                }
                Some(
                    p.in_range("columns", c.unwrap_or(2.0), Range::Positive)?
                        .min(6.0) as usize,
                )
            }
            (Some(_), _) => return Err(p.bad("panels", "\"series\": one panel per series")),
            (None, Some(_)) => return Err(p.bad("columns", "only with `panels`")),
        };
        let mut series_more = e.series.map(OneOrMany::into_vec).unwrap_or_default();
        let series = (!series_more.is_empty()).then(|| series_more.remove(0));
        out.plots.push(PlotSpec {
            name: stem_name(&p, e.name.as_deref(), &mut plot_names)?,
            table: e.table,
            filter: fill_filter(f.table, &p, filter(&p, e.filter)?)?,
            x: column(&p, "x", e.x)?,
            y,
            series,
            series_label: e.series_label,
            facet: e.facet,
            aggregate,
            x_log: e.x_scale == Scale::Log,
            y_log: e.y_scale == Scale::Log,
            x_range: range(&p, "x_range", e.x_range)?,
            y_range: range(&p, "y_range", e.y_range)?,
            // A staircase is a line.
            scatter: !e.lines.unwrap_or(aggregate != Aggregate::None || e.steps),
            title: e.title,
            x_label: e.x_label,
            y_label: e.y_label,
            y_bounds,
            intervals: e.intervals,
            interval: match (e.interval, aggregate) {
                (None, _) => None,
                (Some([lo, hi]), Aggregate::None) => Some((lo, hi)),
                (Some(_), _) => {
                    return Err(p.bad(
                        "interval",
                        "only with aggregate = \"none\" (each row's own interval)",
                    ))
                }
            },
            reference: e.reference,
            series_labels,
            panels,
            focus: e.focus,
            steps: e.steps,
            marker: marker(&p, e.marker.as_deref())?,
            layers: Vec::new(),
            heat: e.z.map(|column| Heat {
                column,
                log: e.z_scale == Scale::Log,
                label: e.z_label,
            }),
            overlay: e.overlay.map(|o| Overlay::parse(o, &p)).transpose()?,
            exclude: fill_filter(f.table, &p, filter(&p, e.exclude)?)?,
            series_more,
            diagonal: e.diagonal,
            extras: plot_paths::parse(
                &p,
                plot_paths::Written {
                    along: e.along,
                    path: e.path,
                    x_bounds: e.x_bounds,
                    mark: e.mark,
                    series_styles: e.series_styles,
                    zoom: e.zoom,
                },
            )?,
        });
        let spec = out.plots.last_mut().expect("just pushed");
        spec.layers = layers(&p, spec)?;
    }
    for t in f.array("tables", false)? {
        let e: TableEntry = t.read("a `[[tables]]` entry", &[])?;
        if e.append {
            let previous = out
                .tables
                .last()
                .map(|p| (&p.body, p.facet.is_some(), &p.name));
            let (Some((Body::List(before), false, name)), Some(list)) = (previous, &e.list) else {
                return Err(t.bad(
                    "append",
                    "rows for the previous [[tables]] entry: a list table without a facet, and a `list` here",
                ));
            };
            let given = [e.name.is_some(), e.caption.is_some(), e.facet.is_some()];
            if list.len() != before.len() || given.iter().any(|g| *g) {
                return Err(t.bad(
                    "append",
                    &format!("a list of {} columns (the previous table's), without name, caption or facet", before.len()),
                ));
            }
            out.tables.push(TableSpec {
                name: name.clone(),
                table: e.table,
                filter: fill_filter(f.table, &t, filter(&t, e.filter)?)?,
                facet: None,
                caption: None,
                body: Body::List(list.clone()),
                append: true,
                exclude: fill_filter(f.table, &t, filter(&t, e.exclude)?)?,
            });
            continue;
        }
        let name = stem_name(&t, e.name.as_deref(), &mut table_names)?;
        if let Some(list) = e.list {
            let pivot_key = [
                ("rows", e.rows.is_some()),
                ("columns", e.columns.is_some()),
                ("value", e.value.is_some()),
                ("aggregate", e.aggregate.is_some()),
                ("digits", e.digits.is_some()),
                ("row_label", e.row_label.is_some()),
                ("column_label", e.column_label.is_some()),
                ("round", e.round != Rounding::Nearest),
                ("column_header", e.column_header.is_some()),
                ("note", e.note.is_some()),
            ]
            .into_iter()
            .find(|(_, given)| *given);
            if let Some((key, _)) = pivot_key {
                return Err(t.bad(key, "not with `list` (a list table shows rows as they are)"));
            }
            if list.is_empty() {
                return Err(t.bad("list", "at least one column"));
            }
            for (i, c) in list.iter().enumerate() {
                if let Some(Err(e)) = c.cell.as_deref().map(Template::parse) {
                    return Err(t.bad(&format!("list[{i}].cell"), &e));
                }
            }
            out.tables.push(TableSpec {
                name,
                table: e.table,
                filter: fill_filter(f.table, &t, filter(&t, e.filter)?)?,
                facet: e.facet,
                caption: e.caption,
                body: Body::List(list),
                append: false,
                exclude: fill_filter(f.table, &t, filter(&t, e.exclude)?)?,
            });
            continue;
        }
        if let Some(cell) = &e.cell {
            if let Some(key) = (e.value.as_ref().map(|_| "value"))
                .or(e.aggregate.as_ref().map(|_| "aggregate"))
                .or(e.digits.map(|_| "digits"))
            {
                return Err(t.bad(key, "not with `cell` (a template shows one row per cell)"));
            }
            // A template pivot has one row column and one column column.
            let one = |key: &'static str, given: Option<OneOrMany<String>>| match given {
                Some(OneOrMany::Many(_)) => Err(t.bad(key, "one column with `cell`")),
                Some(OneOrMany::One(c)) => Ok(Some(c)),
                None => Ok(None),
            };
            let body = TemplatePivot::parse(
                &t,
                one("rows", e.rows)?,
                one("columns", e.columns)?,
                cell,
                (e.row_label, e.column_label),
                e.reference_rows,
            )?;
            out.tables.push(TableSpec {
                name,
                table: e.table,
                filter: fill_filter(f.table, &t, filter(&t, e.filter)?)?,
                facet: e.facet,
                caption: e.caption,
                body: Body::Template(body),
                append: false,
                exclude: fill_filter(f.table, &t, filter(&t, e.exclude)?)?,
            });
            continue;
        }
        if e.reference_rows.is_some() {
            return Err(t.bad("reference_rows", "only with `cell`"));
        }
        let aggregate = aggregate(&t, e.aggregate.as_deref())?;
        if aggregate == Aggregate::None {
            return Err(t.bad("aggregate", "a table cell needs one value: not `none`"));
        }
        if aggregate == Aggregate::GeoMeanCi {
            return Err(t.bad(
                "aggregate",
                "geomean-ci is for plots (a table prints mean ± h)",
            ));
        }
        if aggregate == Aggregate::MeanCi && e.round != Rounding::Nearest {
            return Err(t.bad(
                "round",
                "rounds one value (mean, median, sd, a quantile), not a mean ± interval",
            ));
        }
        let many = |key, given: Option<OneOrMany<String>>| -> Result<(String, Vec<String>)> {
            let mut all = column(&t, key, given.map(OneOrMany::into_vec))?.into_iter();
            let first = all
                .next()
                .ok_or_else(|| t.bad(key, "at least one column"))?;
            Ok((first, all.collect()))
        };
        let ((rows, more_rows), (columns, more_columns)) =
            (many("rows", e.rows)?, many("columns", e.columns)?);
        if !more_columns.is_empty() && e.column_header.is_none() {
            return Err(t.bad("column_header", "needs to be given with several `columns`"));
        }
        let body = Body::Pivot(Pivot {
            rows,
            columns,
            value: column(&t, "value", e.value)?,
            aggregate,
            digits: t
                .in_range("digits", e.digits.unwrap_or(3.0), Range::NonNegative)?
                .min(12.0) as usize,
            row_label: e.row_label,
            column_label: e.column_label,
            round: e.round,
            more: Box::new(More {
                rows: more_rows,
                columns: more_columns,
                column_header: e.column_header,
                note: e.note,
            }),
        });
        out.tables.push(TableSpec {
            name,
            table: e.table,
            filter: fill_filter(f.table, &t, filter(&t, e.filter)?)?,
            facet: e.facet,
            caption: e.caption,
            body,
            append: false,
            exclude: fill_filter(f.table, &t, filter(&t, e.exclude)?)?,
        });
    }
    Ok(out)
}

/// The kept `rows` split by the values of column `facet` (in order of first appearance), each
/// with its value; without a facet, one group of them all.
fn facet_groups(
    t: &Table,
    facet: Option<&str>,
    filter: &Filter,
    rows: &[usize],
    what: &str,
    file: &str,
) -> Result<Vec<(Option<Cell>, Vec<usize>)>> {
    let Some(name) = facet else {
        return Ok(vec![(None, rows.to_vec())]);
    };
    let f = keys(t, name, filter, what, file)?;
    Ok(distinct(&f, rows)
        .into_iter()
        .map(|v| {
            let here = rows.iter().copied().filter(|&i| f[i] == v).collect();
            (Some(v), here)
        })
        .collect())
}

/// A facet value as a file name's part: ASCII letters, digits, - and ., a few Greek letters
/// spelled out ("d=15, σ=0.03" → "d15sigma0.03"), the rest dropped.
fn slug(s: &str) -> String {
    const GREEK: [(char, &str); 6] = [
        ('σ', "sigma"),
        ('μ', "mu"),
        ('ε', "eps"),
        ('δ', "delta"),
        ('λ', "lambda"),
        ('η', "eta"),
    ];
    s.chars()
        .map(|c| match GREEK.iter().find(|g| g.0 == c) {
            Some(g) => g.1.to_string(),
            None if c.is_ascii_alphanumeric() || c == '-' || c == '.' => c.to_string(),
            None => String::new(),
        })
        .collect()
}

/// Draws the declared plots and tables from the parquet in `dir`; `default_table` is the
/// study's merged table and `title` the experiment's.
pub fn render(o: &Outputs, dir: &Path, default_table: &str, title: &str) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let read = |name: &Option<String>| -> Result<(Table, String)> {
        let file = name.clone().unwrap_or_else(|| default_table.to_string());
        Ok((Table::read_parquet(&dir.join(&file))?, file))
    };
    for (k, p) in o.plots.iter().enumerate() {
        let what = format!("plots[{k}] ({})", p.name);
        let (t, file) = read(&p.table)?;
        let rows = kept(&t, &p.filter, &what, &file)?;
        let rows = without(&t, &p.exclude, rows, &what, &file)?;
        let x = keys(&t, &p.x, &p.filter, &what, &file)?;
        let ys =
            p.y.iter()
                .map(|(col, name)| Ok((cells(&t, col, &what, &file)?, name.clone())))
                .collect::<Result<Vec<_>>>()?;
        let series = series_cells(&t, p, &what, &file)?;
        let (x_, t_) = (&p.extras, &t);
        let along = (x_.along.as_ref())
            .map(|c| keys(&t, c, &p.filter, &what, &file))
            .transpose()?;
        let marked: Option<Vec<Option<f64>>> = (x_.mark.as_ref())
            .map(|m| {
                Ok::<_, Error>(
                    cells(&t, &m.column, &what, &file)?
                        .iter()
                        .map(Cell::num)
                        .collect(),
                )
            })
            .transpose()?;
        let interval = (p.interval.as_ref())
            .map(|(lo, hi)| {
                Ok::<_, Error>((cells(&t, lo, &what, &file)?, cells(&t, hi, &what, &file)?))
            })
            .transpose()?;
        for (fv, here) in facet_groups(&t, p.facet.as_deref(), &p.filter, &rows, &what, &file)? {
            let drawn = match p.heat {
                None => {
                    let columns = Columns {
                        x: &x,
                        ys: &ys,
                        series: &series,
                        along: along.as_deref(),
                        marked: marked.as_deref(),
                        interval: interval.as_ref().map(|(l, h)| (l.as_slice(), h.as_slice())),
                    };
                    curves(p, &columns, &here, &what, &file)?
                }
                Some(_) => PlotCurves::default(),
            };
            let PlotCurves {
                mut curves,
                values,
                marks,
            } = drawn;
            for layer in &p.layers {
                curves.extend(layer_curves(
                    layer,
                    fv.as_ref(),
                    p,
                    dir,
                    default_table,
                    &what,
                )?);
            }
            for c in &mut curves {
                c.label = o.fill(&c.label, title, &what)?;
            }
            if let Some(ov) = &p.overlay {
                let facet = p.facet.as_deref().zip(fv.as_ref());
                curves.extend(super::cell_template::overlay(
                    ov,
                    facet,
                    dir,
                    default_table,
                    &what,
                )?);
            }
            if let Some(label) = &p.diagonal {
                curves.extend(diagonal(o.fill(label, title, &what)?, &curves));
            }
            x_.finish(&mut curves, &values, marks);
            // `{facet}` in the title places the facet's value (else it follows the title).
            let placed = p.title.as_ref().is_some_and(|t| t.contains("{facet}"));
            let value = fv.as_ref().map(Cell::label).unwrap_or_default();
            let base = p.title.as_ref().map_or_else(
                || Ok(title.to_string()),
                |t| {
                    let t = column_values(&t.replace("{facet}", &value), t_, &here, &what, &file)?;
                    o.fill(&t, title, &what)
                },
            )?;
            let (fig_title, stem) = match &fv {
                Some(_) if placed => (base, format!("{}-{}", p.name, slug(&value))),
                Some(v) => (
                    format!("{base} ({})", v.label()),
                    format!("{}-{}", p.name, slug(&v.label())),
                ),
                None => (base, p.name.clone()),
            };
            if let Some(h) = &p.heat {
                let labels = (
                    o.fill(p.x_label.as_deref().unwrap_or(&p.x), title, &what)?,
                    o.fill(p.y_label.as_deref().unwrap_or(&p.y[0].0), title, &what)?,
                );
                let map = heat_map(p, h, &t, &here, fig_title, labels, &curves, &what, &file)?;
                let drawn = super::heatmap::draw(&map, &dir.join(&stem));
                files.extend(drawn.map_err(|e| Error::Infeasible(format!("{what}: {e}")))?);
                continue;
            }
            let agg_name = match p.aggregate {
                Aggregate::MeanCi => " (mean, 95% t-interval)".to_string(),
                Aggregate::GeoMeanCi => {
                    " (geometric mean, 95% t-interval of the mean log)".to_string()
                }
                Aggregate::Mean => " (mean)".into(),
                Aggregate::Median => " (median)".into(),
                Aggregate::Sd => " (standard deviation)".into(),
                Aggregate::Quantile(_) | Aggregate::None => "".into(),
            };
            let clipped = match p.y_bounds {
                Some((lo, hi)) if matches!(p.aggregate, Aggregate::MeanCi) => {
                    let bound = |v: f64| match v.is_finite() {
                        true => fmt_num(v),
                        false => format!("{}∞", if v < 0.0 { "−" } else { "" }),
                    };
                    format!(", clipped to [{}, {}]", bound(lo), bound(hi))
                }
                _ => String::new(),
            };
            let agg_name = match clipped.is_empty() {
                true => agg_name,
                false => format!("{}{clipped})", agg_name.trim_end_matches(')')),
            };
            let hline = match &p.reference {
                None => None,
                Some(r) => Some(reference(r, p, dir, default_table, &what, o, title)?),
            };
            let mut fig = Figure {
                x_scale: if p.x_log { Scale::Log } else { Scale::Linear },
                y_scale: if p.y_log { Scale::Log } else { Scale::Linear },
                x_range: p.x_range,
                y_range: p.y_range,
                hline,
                intervals: p.intervals,
                ..Figure::new(
                    fig_title,
                    o.fill(p.x_label.as_deref().unwrap_or(&p.x), title, &what)?,
                    format!(
                        "{}{agg_name}",
                        o.fill(p.y_label.as_deref().unwrap_or(&p.y[0].0), title, &what)?
                    ),
                    curves,
                )
            };
            if p.focus {
                fig.focus_on_the_bulk();
            }
            let drawn = match p.panels {
                None => match &x_.zoom {
                    Some(z) => plot_paths::draw_zoomed(&fig, z, &dir.join(&stem)),
                    None => plot::draw(&fig, &dir.join(&stem)),
                },
                Some(columns) => {
                    let panels = plot::panel_per_series(&fig);
                    let title = format!("{} — one panel per series, the others in grey", fig.title);
                    plot::draw_panels(&title, &panels, columns, &dir.join(&stem))
                }
            };
            files.extend(drawn.map_err(|e| Error::Infeasible(format!("{what}: {e}")))?);
        }
    }
    // Tables are written once every entry appending rows to them has.
    let mut pending: Vec<(String, Grid)> = Vec::new();
    for (k, s) in o.tables.iter().enumerate() {
        let what = format!("tables[{k}] ({})", s.name);
        let (t, file) = read(&s.table)?;
        let all = kept(&t, &s.filter, &what, &file)?;
        let all = without(&t, &s.exclude, all, &what, &file)?;
        for (fv, rows) in facet_groups(&t, s.facet.as_deref(), &s.filter, &all, &what, &file)? {
            let (header, body, default_caption) = match &s.body {
                Body::Pivot(p) => pivot(p, &s.filter, &t, &rows, &what, &file)?,
                Body::Template(p) => {
                    let facet = s.facet.as_deref().zip(fv.as_ref());
                    let (filter, at) = (&s.filter, (dir, default_table));
                    let drawn = (&t, rows.as_slice(), facet);
                    super::cell_template::pivot(p, filter, drawn, at, &what, &file)?
                }
                Body::List(list) => {
                    let columns = list
                        .iter()
                        .map(|c| match &c.cell {
                            None => cells(&t, &c.column, &what, &file),
                            Some(cell) => templated(cell, &c.column, &t, &rows, &what, &file),
                        })
                        .collect::<Result<Vec<_>>>()?;
                    let halves = (list.iter())
                        .map(|c| {
                            c.interval
                                .as_ref()
                                .map(|h| cells(&t, h, &what, &file))
                                .transpose()
                        })
                        .collect::<Result<Vec<_>>>()?;
                    let body = rows
                        .iter()
                        .map(|&i| {
                            list.iter()
                                .zip(&columns)
                                .zip(&halves)
                                .map(|((c, v), h)| {
                                    let own = match (&v[i], c.digits) {
                                        (Cell::Num(x), d) if h.is_some() => {
                                            let h = h.as_ref().and_then(|h| h[i].num());
                                            pm((*x, h), d.unwrap_or(3).min(12))
                                        }
                                        (Cell::Missing, _) => {
                                            return match &c.missing {
                                                Some(m) => row_text(m, "–", c, &t, i, &what, &file),
                                                None => Ok("–".into()),
                                            }
                                        }
                                        (Cell::Num(x), Some(d)) if c.scientific => {
                                            format!("{x:.*e}", d.min(12))
                                        }
                                        (Cell::Num(x), Some(d)) => c.round.format(*x, d.min(12)),
                                        (cell, _) => cell.label(),
                                    };
                                    match &c.format {
                                        Some(f) => row_text(f, &own, c, &t, i, &what, &file),
                                        None => Ok(own),
                                    }
                                })
                                .collect::<Result<Vec<_>>>()
                        })
                        .collect::<Result<Vec<_>>>()?;
                    let header = list
                        .iter()
                        .map(|c| c.label.clone().unwrap_or_else(|| c.column.clone()))
                        .collect();
                    (header, body, format!("{title}: {file}"))
                }
            };
            let (default_caption, stem, value) = match &fv {
                Some(v) => (
                    default_caption.replacen("{title}", "{title} ({facet})", 1),
                    format!("{}-{}", s.name, slug(&v.label())),
                    v.label(),
                ),
                None => (default_caption, s.name.clone(), String::new()),
            };
            let caption = match &s.caption {
                None => default_caption
                    .replace("{facet}", &value)
                    .replace("{title}", title),
                // The facet's value and the columns' first: `fill` refuses a `{key}` the
                // file does not set.
                Some(c) => {
                    let c = match fv {
                        Some(_) => c.replace("{facet}", &value),
                        None => c.clone(),
                    };
                    let c = percent_values(&c, &t, &rows, &what, &file)?;
                    o.fill(&column_values(&c, &t, &rows, &what, &file)?, title, &what)?
                }
            };
            let grid = Grid {
                caption,
                header,
                rows: body,
            };
            match pending.last_mut() {
                Some((_, last)) if s.append => last.rows.extend(grid.rows),
                _ => pending.push((stem, grid)),
            }
        }
    }
    for (stem, grid) in pending {
        write_grid(&grid, &dir.join(&stem), &mut files)?;
    }
    Ok(files)
}

/// The columns a plot's curves are drawn from, each cell per row of its table.
struct Columns<'a> {
    x: &'a [Cell],
    ys: &'a [(Vec<Cell>, Option<String>)],
    /// Each row's series ([`series_cells`]).
    series: &'a [Cell],
    /// `along`: the points are the groups of equal values of this column.
    along: Option<&'a [Cell]>,
    /// The column a `mark` is placed by.
    marked: Option<&'a [Option<f64>]>,
    /// `interval`: each row's (lo, hi).
    interval: Option<(&'a [Cell], &'a [Cell])>,
}

/// A plot's curves, with each one's series value (for `series_styles`) and the marks to add
/// (the curve's index, the point and the marked value), as [`plot_paths::Extras::finish`]
/// takes them.
#[derive(Default)]
struct PlotCurves {
    curves: Vec<Series>,
    values: Vec<String>,
    marks: Vec<(usize, (f64, f64), f64)>,
}

/// The curves of plot `p` over its rows `here`: one per series value and y column.
fn curves(p: &PlotSpec, c: &Columns, here: &[usize], what: &str, file: &str) -> Result<PlotCurves> {
    let (x, series, x_) = (c.x, c.series, &p.extras);
    let mut out = PlotCurves::default();
    // Each series value, then each y column within it.
    let lines = distinct(series, here)
        .into_iter()
        .flat_map(|s| (c.ys.iter()).map(move |(y, name)| (s.clone(), y, name.as_deref())));
    for (s, y, y_name) in lines {
        let mut mine: Vec<usize> = here.iter().copied().filter(|&i| series[i] == s).collect();
        // Grouped by x, or by the `along` column (its order, the mean x).
        let key = |i: usize| match c.along {
            Some(a) => a[i].num(),
            None => x[i].num(),
        };
        let mut groups: Vec<(f64, Vec<f64>, Vec<f64>, usize)> = Vec::new();
        for &i in &mine {
            let (Some(ki), Some(xi), Some(yi)) = (key(i), x[i].num(), y[i].num()) else {
                continue;
            };
            match groups
                .iter_mut()
                .find(|g| g.0 == ki && p.aggregate != Aggregate::None)
            {
                Some(g) => {
                    g.1.push(yi);
                    g.2.push(xi)
                }
                None => groups.push((ki, vec![yi], vec![xi], i)),
            }
        }
        groups.sort_by(|a, b| a.0.total_cmp(&b.0));
        if let Some(m) = c.marked {
            mine.sort_by(|&a, &b| {
                key(a)
                    .unwrap_or(f64::NAN)
                    .total_cmp(&key(b).unwrap_or(f64::NAN))
            });
            let point = |i: usize| Some((x_.x(x[i].num()?, &[x[i].num()?]), y[i].num()?));
            if let Some((at, v)) = x_.marked(&mine, point, m) {
                out.marks.push((out.curves.len(), at, v));
            }
        }
        let mut agg = Vec::new();
        for (xi, mut ys, xs, row) in groups {
            let xi = x_.x(xi, &xs);
            let Some(point) = p.aggregate.point(&mut ys) else {
                return Err(Error::Infeasible(format!(
                    "{what}: geomean-ci needs positive values; `{}` has one that is not \
                     at x = {} in {file} (use mean-ci)",
                    y_name.unwrap_or(&p.y[0].0),
                    fmt_num(xi)
                )));
            };
            // A row's own interval (aggregate none: one row a group).
            let point = match c.interval {
                Some((lo, hi)) => (point.0, lo[row].num().zip(hi[row].num())),
                None => point,
            };
            if point.0.is_finite() {
                agg.push((xi, point));
            }
        }
        // The labels are filled with the file's values by the caller.
        let value = match (p.series_labels.iter()).find(|(k, _)| *k == s.label()) {
            Some((_, l)) => l.clone(),
            None => match &p.series_label {
                Some(l) => l.replace("{}", &s.label()),
                None => s.label(),
            },
        };
        let (lo, hi) = p.y_bounds.unwrap_or((f64::NEG_INFINITY, f64::INFINITY));
        let errors: Option<Vec<(f64, f64)>> = agg
            .iter()
            .map(|(_, (_, e))| e.map(|(a, b)| (a.max(lo), b.min(hi))))
            .collect();
        out.values.push(s.label());
        out.curves.push(Series {
            label: match y_name {
                Some(n) if p.series.is_some() => format!("{n}, {value}"),
                Some(n) => n.to_string(),
                None => value,
            },
            points: agg.iter().map(|(xi, (m, _))| (*xi, *m)).collect(),
            errors: errors.filter(|_| {
                matches!(p.aggregate, Aggregate::MeanCi | Aggregate::GeoMeanCi)
                    || c.interval.is_some()
            }),
            scatter: p.scatter,
            style: Style {
                marker: p.marker,
                ..Style::default()
            },
        });
    }
    if p.steps {
        for c in &mut out.curves {
            *c = staircase(std::mem::replace(c, Series::line("", Vec::new())));
        }
    }
    Ok(out)
}

/// `s` as a staircase: each point's y held until the next point's x (a Pareto front through
/// its corners); intervals are dropped (they belong to the corners, not to the steps).
fn staircase(s: Series) -> Series {
    let mut points = Vec::with_capacity(2 * s.points.len());
    for (k, &(x, y)) in s.points.iter().enumerate() {
        if k > 0 {
            points.push((x, s.points[k - 1].1));
        }
        points.push((x, y));
    }
    Series {
        points,
        errors: None,
        ..s
    }
}

/// The curves of a `[[plots.layers]]` entry: its table's rows kept by its filter and, where the
/// plot has a facet, holding the facet's value `fv`.
fn layer_curves(
    l: &PlotSpec,
    fv: Option<&Cell>,
    parent: &PlotSpec,
    dir: &Path,
    default_table: &str,
    what: &str,
) -> Result<Vec<Series>> {
    let what = format!("{what}: layer");
    let file = l.table.clone().unwrap_or_else(|| default_table.to_string());
    let t = Table::read_parquet(&dir.join(&file))?;
    let rows = kept(&t, &l.filter, &what, &file)?;
    let here = match (parent.facet.as_deref(), fv) {
        (Some(name), Some(v)) => {
            let f = keys(&t, name, &l.filter, &what, &file)?;
            rows.into_iter().filter(|&i| f[i] == *v).collect()
        }
        _ => rows,
    };
    let x = keys(&t, &l.x, &l.filter, &what, &file)?;
    let ys = vec![(cells(&t, &l.y[0].0, &what, &file)?, None)];
    let series = series_cells(&t, l, &what, &file)?;
    let columns = Columns {
        x: &x,
        ys: &ys,
        series: &series,
        along: None,
        marked: None,
        interval: None,
    };
    Ok(curves(l, &columns, &here, &what, &file)?.curves)
}

/// A heatmap of column `h` over the distinct (x, y) values of rows `here`: the layers' points
/// drawn as dots, a star-marked layer's first point as the star.
#[allow(clippy::too_many_arguments)]
fn heat_map(
    p: &PlotSpec,
    h: &Heat,
    t: &Table,
    here: &[usize],
    title: String,
    (x_label, y_label): (String, String),
    layers: &[Series],
    what: &str,
    file: &str,
) -> Result<super::heatmap::Heatmap> {
    let (x, y, z) = (
        cells(t, &p.x, what, file)?,
        cells(t, &p.y[0].0, what, file)?,
        cells(t, &h.column, what, file)?,
    );
    let axis = |c: &[Cell]| {
        let mut v: Vec<f64> = here.iter().filter_map(|&i| c[i].num()).collect();
        v.sort_by(f64::total_cmp);
        v.dedup();
        v
    };
    let (xs, ys) = (axis(&x), axis(&y));
    let mut values = vec![None; xs.len() * ys.len()];
    for &i in here {
        let (Some(xi), Some(yi)) = (x[i].num(), y[i].num()) else {
            continue;
        };
        let at = |v: &[f64], w: f64| v.binary_search_by(|a| a.total_cmp(&w)).ok();
        let (Some(a), Some(b)) = (at(&xs, xi), at(&ys, yi)) else {
            continue;
        };
        let v = z[i].num().filter(|v| v.is_finite());
        values[b * xs.len() + a] = match h.log {
            true => v.filter(|v| *v > 0.0).map(libm::log10),
            false => v,
        };
    }
    let label = h.label.clone().unwrap_or_else(|| h.column.clone());
    let is_star = |s: &&Series| s.style.marker == plot::Marker::Star;
    Ok(super::heatmap::Heatmap {
        title,
        x_label,
        y_label,
        value_label: match h.log {
            true => format!("log10 {label}"),
            false => label,
        },
        xs,
        ys,
        x_log: p.x_log,
        y_log: p.y_log,
        values,
        points: (layers.iter().filter(|s| !is_star(s)))
            .flat_map(|s| s.points.iter().copied())
            .collect(),
        star: layers
            .iter()
            .find(is_star)
            .and_then(|s| s.points.first().copied()),
    })
}

/// `x` to `n` significant digits: fixed with up to 6 decimals, scientific when smaller, no
/// decimals up to 1e6, scientific beyond.
fn significant(x: f64, n: usize) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let decimals = n as i32 - 1 - libm::log10(x.abs()).floor() as i32;
    if (0..=6).contains(&decimals) {
        format!("{x:.*}", decimals as usize)
    } else if decimals < 0 && x.abs() < 1e6 {
        format!("{x:.0}")
    } else {
        format!("{x:.*e}", n - 1)
    }
}

/// A list cell's template (its `format`, or `missing`) filled from row `i` of `t`: `{}` is
/// `own` (the cell as it shows without a format), `{name}` the column's value as it is,
/// `{name:.N}` N decimals (rounded as the list column's `round` says), `{name:.Ne}`
/// scientific, `{name:%.N}` a percentage with N decimals (rounded so too), `{name:.N±other}`
/// the value ± column `other` (no interval: "(one repetition)"), `{name:sN}` N significant
/// digits; `{:SPEC}` is the list column's own value with SPEC; an empty value is "–".
fn row_text(
    template: &str,
    own: &str,
    c: &ListColumn,
    t: &Table,
    i: usize,
    what: &str,
    file: &str,
) -> Result<String> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        let Some(len) = rest[start..].find('}') else {
            break;
        };
        out.push_str(&rest[..start]);
        let inner = &rest[start + 1..start + len];
        rest = &rest[start + len + 1..];
        let (name, spec) = inner.split_once(':').unwrap_or((inner, ""));
        if inner.is_empty() {
            out.push_str(own);
            continue;
        }
        let name = if name.is_empty() { &c.column } else { name };
        let cell = cells(t, name, what, file)?.swap_remove(i);
        let bad = || {
            Error::Infeasible(format!(
                "{what}: `{{{inner}}}`: a format is .N, .Ne, %.N, .N±column or sN"
            ))
        };
        let digits = |d: &str| d.parse::<usize>().map(|d| d.min(12)).map_err(|_| bad());
        out.push_str(&match (cell.num(), spec) {
            (_, "") => cell.label(),
            (None, _) => "–".into(),
            (Some(x), s) if s.starts_with('%') => {
                let d = digits(s.trim_start_matches("%."))?;
                format!("{}%", c.round.format(100.0 * x, d))
            }
            (Some(x), s) if s.starts_with('s') => significant(x, digits(&s[1..])?.max(1)),
            (Some(x), s) => {
                let s = s.strip_prefix('.').ok_or_else(bad)?;
                match s.split_once('±') {
                    Some((d, other)) => {
                        let h = cells(t, other, what, file)?.swap_remove(i).num();
                        pm((x, h), digits(d)?)
                    }
                    None if s.ends_with('e') => format!("{x:.*e}", digits(&s[..s.len() - 1])?),
                    None => c.round.format(x, digits(s)?),
                }
            }
        });
    }
    out.push_str(rest);
    Ok(out)
}

/// `text` with each `{column:NAME}` replaced by the one value column `NAME` holds in `rows`
/// (several values, or none: an error).
fn column_values(text: &str, t: &Table, rows: &[usize], what: &str, file: &str) -> Result<String> {
    let mut out = text.to_string();
    while let Some(start) = out.find("{column:") {
        let Some(len) = out[start..].find('}') else {
            break;
        };
        let name = out[start + "{column:".len()..start + len].to_string();
        // `{column:NAME:D}`: the value with D decimals.
        let (name, digits) = match name.split_once(':') {
            Some((n, d)) => (n.to_string(), d.parse::<usize>().ok()),
            None => (name, None),
        };
        let values = distinct(&cells(t, &name, what, file)?, rows);
        let [one] = values.as_slice() else {
            return Err(Error::Infeasible(format!(
                "{what}: `{{column:{name}}}` in the caption: `{name}` holds {} values in the \
                 table's rows of {file}, not one",
                values.len()
            )));
        };
        let shown = match (one.num(), digits) {
            (Some(x), Some(d)) => format!("{x:.*}", d.min(12)),
            _ => one.label(),
        };
        out.replace_range(start..=start + len, &shown);
    }
    Ok(out)
}

/// The reference line of a plot: its number, or the largest mean of `column` over the
/// groups of `by` (the label's `{}` the group's value), with the label filled in.
fn reference(
    r: &Reference,
    p: &PlotSpec,
    dir: &Path,
    default_table: &str,
    what: &str,
    o: &Outputs,
    title: &str,
) -> Result<(f64, String)> {
    let label = o.fill(&r.label, title, what)?;
    let (Some(column), Some(by)) = (&r.column, &r.by) else {
        let v = r.value.expect("checked when parsed: a value or a column");
        return Ok((v, label));
    };
    let file = (r.table.as_ref().or(p.table.as_ref()))
        .cloned()
        .unwrap_or_else(|| default_table.to_string());
    let t = Table::read_parquet(&dir.join(&file))?;
    let what = format!("{what}: reference");
    let (groups, values) = (
        cells(&t, by, &what, &file)?,
        cells(&t, column, &what, &file)?,
    );
    let all: Vec<usize> = (0..t.height()).collect();
    let best = distinct(&groups, &all)
        .into_iter()
        .filter_map(|g| {
            let ys: Vec<f64> = (all.iter())
                .filter(|&&i| groups[i] == g)
                .filter_map(|&i| values[i].num())
                .collect();
            let m = mean_interval(&ys).0;
            m.is_finite().then_some((g, m))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1));
    let Some((g, m)) = best else {
        return Err(Error::Infeasible(format!(
            "{what}: `{column}` has no finite value in {file}"
        )));
    };
    let shown = match g.num() {
        Some(v) => plot::sig_label(v, 3),
        None => g.label(),
    };
    Ok((m, label.replace("{}", &shown)))
}

/// A pivot table's header, body and default caption.
type Drawn = (Vec<String>, Vec<Vec<String>>, String);

fn pivot(
    p: &Pivot,
    filter: &Filter,
    t: &Table,
    rows: &[usize],
    what: &str,
    file: &str,
) -> Result<Drawn> {
    let Pivot {
        rows: row_col,
        columns,
        value,
        aggregate,
        digits,
        row_label,
        column_label,
        round,
        more,
    } = p;
    let row_names: Vec<String> = std::iter::once(row_col)
        .chain(&more.rows)
        .cloned()
        .collect();
    let col_names: Vec<String> = std::iter::once(columns)
        .chain(&more.columns)
        .cloned()
        .collect();
    let (r, c, v) = (
        composite(t, &row_names, filter, what, file)?,
        composite(t, &col_names, filter, what, file)?,
        cells(t, value, what, file)?,
    );
    let note = (more.note.as_ref())
        .map(|n| Ok::<_, Error>((cells(t, &n.column, what, file)?, &n.label)))
        .transpose()?;
    let (row_keys, col_keys) = (distinct(&r, rows), distinct(&c, rows));
    let mut header = vec![row_label.clone().unwrap_or_else(|| row_col.clone())];
    header.extend(more.rows.iter().cloned());
    header.extend(
        col_keys
            .iter()
            .map(|k| match (&more.column_header, column_label.as_deref()) {
                (Some(h), _) => (col_names.iter().zip(parts(k))).fold(h.clone(), |h, (name, v)| {
                    h.replace(&format!("{{{name}}}"), &v)
                }),
                (None, None) => format!("{columns}={}", k.label()),
                (None, Some("")) => k.label(),
                (None, Some(l)) => format!("{l}={}", k.label()),
            }),
    );
    let body = row_keys
        .iter()
        .map(|rk| {
            parts(rk)
                .into_iter()
                .chain(col_keys.iter().map(|ck| {
                    let mut ys: Vec<f64> = rows
                        .iter()
                        .filter(|&&i| r[i] == *rk && c[i] == *ck)
                        .filter_map(|&i| v[i].num())
                        .collect();
                    if ys.is_empty() {
                        return "–".into();
                    }
                    let a = aggregate.apply(&mut ys);
                    if !a.0.is_finite() {
                        // An sd of one value: there is none to show.
                        return "–".into();
                    }
                    let shown = if *aggregate == Aggregate::MeanCi {
                        pm(a, *digits)
                    } else {
                        round.format(a.0, *digits)
                    };
                    let Some((n, label)) = &note else {
                        return shown;
                    };
                    let ns: Vec<f64> = (rows.iter())
                        .filter(|&&i| r[i] == *rk && c[i] == *ck)
                        .filter_map(|&i| n[i].num())
                        .collect();
                    match mean_interval(&ns).0 {
                        m if m.is_finite() && m != 0.0 => {
                            format!("{shown} ({label} {})", fmt_num(m))
                        }
                        _ => shown,
                    }
                }))
                .collect()
        })
        .collect();
    let agg = match aggregate {
        Aggregate::MeanCi => "mean ± 95% Student-t interval".to_string(),
        Aggregate::GeoMeanCi => unreachable!("rejected for tables when parsed"),
        Aggregate::Mean => "mean".into(),
        Aggregate::Median => "median".into(),
        Aggregate::Sd => "sample standard deviation".into(),
        Aggregate::Quantile(q) => format!("{q}-quantile"),
        Aggregate::None => unreachable!("rejected when parsed"),
    };
    let caption = format!(
        "{{title}}: {value} ({agg}) by {} and {}",
        row_names.join(", "),
        col_names.join(", ")
    );
    Ok((header, body, caption))
}

/// Whether `key` (between braces) names a top-level value: a word, or a word with an index
/// into its list (`epsilons[0]`).
fn placeholder(key: &str) -> bool {
    let word = |k: &str| !k.is_empty() && k.chars().all(|c| c.is_alphanumeric() || c == '_');
    let indexed = key
        .strip_suffix(']')
        .and_then(|k| k.split_once('['))
        .is_some_and(|(k, i)| word(k) && !i.is_empty() && i.chars().all(|c| c.is_ascii_digit()));
    word(key) || indexed
}

/// A scalar TOML value as a filter's cell (as `filter` reads it).
fn toml_cell(v: &toml::Value) -> Option<Cell> {
    match v {
        toml::Value::String(s) => Some(Cell::Str(s.clone())),
        toml::Value::Integer(i) => Some(Cell::Num(*i as f64)),
        toml::Value::Float(x) if x.is_finite() => Some(Cell::Num(*x)),
        toml::Value::Boolean(b) => Some(Cell::Str(b.to_string())),
        _ => None,
    }
}

/// `key[i]` → the shown entry i of a top-level list (scalars only), for `{key[i]}`.
fn list_entries(key: &str, list: &[toml::Value]) -> Vec<(String, String)> {
    list.iter()
        .enumerate()
        .filter_map(|(i, v)| {
            let shown = match toml_cell(v)? {
                Cell::Num(x) => fmt_num(x),
                c => c.label(),
            };
            Some((format!("{key}[{i}]"), shown))
        })
        .collect()
}

/// A filter with each value written `"{key}"` replaced by the file's top-level value `key`
/// (as the profile sets it; a list: any of its entries) and `"{key[i]}"` by entry i of that
/// list, so that a figure follows the file's first ε whatever the profile.
fn fill_filter(root: &toml::Table, at: &Fields, flt: Filter) -> Result<Filter> {
    let mut out = Vec::new();
    for (col, values) in flt.0 {
        let mut filled = Vec::new();
        for v in values {
            let key = match &v {
                Cell::Str(s) => s.strip_prefix('{').and_then(|s| s.strip_suffix('}')),
                _ => None,
            };
            let Some(key) = key.filter(|k| placeholder(k)) else {
                filled.push(v);
                continue;
            };
            let bad = |why: &str| at.bad(&format!("filter.{col}"), &format!("`{{{key}}}`: {why}"));
            let (name, index) = match key.split_once('[') {
                Some((n, i)) => (n, i.trim_end_matches(']').parse::<usize>().ok()),
                None => (key, None),
            };
            let value = root
                .get(name)
                .ok_or_else(|| bad(&format!("the file sets no top-level `{name}`")))?;
            let picked: Vec<&toml::Value> = match (value, index) {
                (toml::Value::Array(list), Some(i)) => {
                    vec![list.get(i).ok_or_else(|| bad("the list is shorter"))?]
                }
                (toml::Value::Array(list), None) => list.iter().collect(),
                (_, Some(_)) => return Err(bad("not a list")),
                (v, None) => vec![v],
            };
            for v in picked {
                filled.push(toml_cell(v).ok_or_else(|| bad("not a string, number or boolean"))?);
            }
        }
        out.push((col, filled));
    }
    Ok(Filter(out))
}

/// `rows` less those where every column of `exclude` holds one of its values.
fn without(
    t: &Table,
    exclude: &Filter,
    rows: Vec<usize>,
    what: &str,
    file: &str,
) -> Result<Vec<usize>> {
    let columns = (exclude.0.iter())
        .map(|(c, want)| Ok((cells(t, c, what, file)?, want)))
        .collect::<Result<Vec<_>>>()?;
    if columns.is_empty() {
        return Ok(rows);
    }
    let dropped =
        |i: usize| (columns.iter()).all(|(c, want)| want.iter().any(|w| matches(&c[i], w)));
    Ok(rows.into_iter().filter(|&i| !dropped(i)).collect())
}

/// Each row's series: the value of `series`, joined with those of the further series
/// columns ("a, b"); without a series, the y column's name.
fn series_cells(t: &Table, p: &PlotSpec, what: &str, file: &str) -> Result<Vec<Cell>> {
    let Some(first) = &p.series else {
        return Ok(vec![Cell::Str(p.y[0].0.clone()); t.height()]);
    };
    let mut out = keys(t, first, &p.filter, what, file)?;
    for more in &p.series_more {
        let next = keys(t, more, &p.filter, what, file)?;
        for (a, b) in out.iter_mut().zip(next) {
            *a = Cell::Str(format!("{}, {}", a.label(), b.label()));
        }
    }
    Ok(out)
}

/// The dashed line y = x from the smallest to the largest x of the curves' points (none
/// without a finite point).
fn diagonal(label: String, curves: &[Series]) -> Option<Series> {
    let xs = curves.iter().flat_map(|c| c.points.iter().map(|p| p.0));
    let (lo, hi) = xs
        .filter(|x| x.is_finite())
        .fold(None, |r: Option<(f64, f64)>, x| {
            Some(r.map_or((x, x), |(lo, hi)| (lo.min(x), hi.max(x))))
        })?;
    Some(Series {
        label,
        points: vec![(lo, lo), (hi, hi)],
        errors: None,
        scatter: false,
        style: Style {
            dashed: true,
            ..Style::default()
        },
    })
}

/// The unit separator between the parts of a key of several columns.
const PART: char = '\u{1f}';

/// The grouping cells of `names`: one column's [`keys`], or for several one string per row
/// of their labels (split again by [`parts`]).
fn composite(
    t: &Table,
    names: &[String],
    filter: &Filter,
    what: &str,
    file: &str,
) -> Result<Vec<Cell>> {
    let columns = (names.iter())
        .map(|n| keys(t, n, filter, what, file))
        .collect::<Result<Vec<_>>>()?;
    let [one] = columns.as_slice() else {
        let joined = |i: usize| columns.iter().map(|c| c[i].label()).collect::<Vec<_>>();
        return Ok((0..t.height())
            .map(|i| Cell::Str(joined(i).join(&PART.to_string())))
            .collect());
    };
    Ok(one.clone())
}

/// The labels of a key's parts (one for a key of one column).
fn parts(key: &Cell) -> Vec<String> {
    key.label().split(PART).map(String::from).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::table::Values;

    fn outputs(text: &str) -> Result<Outputs> {
        let root: toml::Table = text.parse().unwrap();
        parse(&Fields::new("f.toml", "", &root))
    }

    #[test]
    fn declared_plots_and_tables_aggregate_the_tidy_table() {
        let dir = std::env::temp_dir().join(format!("dptune-declarative-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let t = Table::default()
            .with(
                "label",
                Values::Str(["a", "a", "a", "b", "b", "b"].map(String::from).to_vec()),
            )
            .with(
                "eps",
                Values::F64(vec![
                    Some(1.0),
                    Some(1.0),
                    Some(2.0),
                    Some(1.0),
                    Some(2.0),
                    Some(2.0),
                ]),
            )
            .with(
                "regret",
                Values::F64(vec![
                    Some(1.0),
                    Some(3.0),
                    Some(5.0),
                    Some(7.0),
                    Some(8.0),
                    Some(10.0),
                ]),
            )
            .with("dim", Values::U64(vec![1, 1, 1, 2, 2, 2]));
        t.write_parquet(&dir.join("runs.parquet")).unwrap();
        let o = outputs(
            "[[plots]]\nname = \"p\"\nx = \"eps\"\ny = \"regret\"\nseries = \"label\"\nfacet = \"dim\"\n\
             [[tables]]\nname = \"t\"\nrows = \"label\"\ncolumns = \"eps\"\nvalue = \"regret\"\naggregate = \"median\"\ndigits = 1\n\
             [[tables]]\nname = \"u\"\nrows = \"label\"\ncolumns = \"eps\"\nvalue = \"regret\"\nfilter = { dim = 1 }\n",
        )
        .unwrap();
        let files = render(&o, &dir, "runs.parquet", "T").unwrap();
        let names: Vec<String> = files
            .iter()
            .map(|f| f.file_name().unwrap().to_string_lossy().to_string())
            .collect();
        for want in ["p-1.png", "p-2.svg", "t.md", "u.tex"] {
            assert!(names.contains(&want.to_string()), "{want} in {names:?}");
        }
        // Medians: a at ε=1 of {1, 3} (nearest rank: 1), at 2: 5; b at 1: 7, at 2 of {8, 10}: 8.
        let md = std::fs::read_to_string(dir.join("t.md")).unwrap();
        assert!(md.contains("| a | 1.0 | 5.0 |"), "{md}");
        assert!(md.contains("| b | 7.0 | 8.0 |"), "{md}");
        // Mean ± t-interval, filtered to dim = 1: a at ε=1 of {1, 3} is 2 ± t(1)·1 = 12.706;
        // one value has no interval.
        let md = std::fs::read_to_string(dir.join("u.md")).unwrap();
        assert!(
            md.contains("| a | 2.000 ± 12.706 | 5.000 (one repetition) |"),
            "{md}"
        );
        assert!(!md.contains("| b |"), "{md}");
        // Sample sd (n − 1) with the headers given: a at ε=1 of {1, 3} is √2; one value has
        // no spread ("–", never NaN).
        let sd = "[[tables]]\nname = \"v\"\nrows = \"label\"\ncolumns = \"eps\"\nvalue = \"regret\"\n\
                  aggregate = \"sd\"\nfilter = { dim = 1 }\nrow_label = \"tuner\"\ncolumn_label = \"\"\n";
        render(&outputs(sd).unwrap(), &dir, "runs.parquet", "T").unwrap();
        let md = std::fs::read_to_string(dir.join("v.md")).unwrap();
        assert!(md.contains("| tuner | 1 | 2 |"), "{md}");
        assert!(md.contains("| a | 1.414 | – |"), "{md}");
        // A list filter keeps rows holding any value and groups them as the listed value;
        // one value is rounded in the direction asked (√2 = 1.41421…); `{title}` is the title.
        for (round, shown) in [("up", "1.42"), ("down", "1.41")] {
            let w = format!(
                "[[tables]]\nname = \"w\"\nrows = \"label\"\ncolumns = \"eps\"\nvalue = \"regret\"\n\
                 aggregate = \"sd\"\ndigits = 2\nround = \"{round}\"\nfilter = {{ eps = [1.0000000000001, 2] }}\n\
                 column_label = \"ε\"\ncaption = \"{{title}}: sd\"\n"
            );
            render(&outputs(&w).unwrap(), &dir, "runs.parquet", "T").unwrap();
            let md = std::fs::read_to_string(dir.join("w.md")).unwrap();
            assert!(md.starts_with("**T: sd**"), "{md}");
            assert!(md.contains("| label | ε=1.0000000000001 | ε=2 |"), "{md}");
            assert!(md.contains(&format!("| a | {shown} | – |")), "{md}");
            assert!(md.contains(&format!("| b | – | {shown} |")), "{md}");
        }
        // A list table shows the kept rows as they are: numbers with digits rounded as asked,
        // without digits as they are, a label per column; a plot may draw several y columns.
        let list = "[[tables]]\nname = \"l\"\nfilter = { label = \"b\" }\nlist = [{ column = \"label\" }, \
                    { column = \"eps\", label = \"ε\" }, { column = \"regret\", digits = 1, round = \"down\" }]\n\
                    [[plots]]\nname = \"m\"\nx = \"eps\"\ny = [\"regret\", \"dim\"]\ny_names = [\"r\", \"d\"]\n\
                    series = \"label\"\nseries_label = \"tuner {}\"\naggregate = \"none\"\n";
        let files = render(&outputs(list).unwrap(), &dir, "runs.parquet", "T").unwrap();
        assert_eq!(files.len(), 4);
        let md = std::fs::read_to_string(dir.join("l.md")).unwrap();
        assert!(md.starts_with("**T: runs.parquet**"), "{md}");
        assert!(md.contains("| label | ε | regret |"), "{md}");
        for row in ["| b | 1 | 7.0 |", "| b | 2 | 8.0 |", "| b | 2 | 10.0 |"] {
            assert!(md.contains(row), "{row} in {md}");
        }
        let svg = std::fs::read_to_string(dir.join("m.svg")).unwrap();
        for entry in ["r, tuner a", "d, tuner a", "r, tuner b", "d, tuner b"] {
            assert!(svg.contains(entry), "{entry}");
        }
        // A missing column is named, with the columns there are.
        let bad = outputs("[[plots]]\nname = \"q\"\nx = \"eps\"\ny = \"regrett\"\n").unwrap();
        let e = render(&bad, &dir, "runs.parquet", "T")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("plots[0] (q): no column `regrett`") && e.contains("label, eps"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A faceted table is one table per value, its caption filled with the value and with
    /// a column's one value in those rows; a column holding several values there is an error.
    #[test]
    fn faceted_tables_fill_the_facet_and_a_columns_value() {
        let dir = std::env::temp_dir().join(format!("dptune-facet-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let strs = |v: [&str; 4]| Values::Str(v.map(String::from).to_vec());
        let t = Table::default()
            .with("v", strs(["d=1", "d=1", "d=2", "d=2"]))
            .with("l", strs(["a", "a", "a", "a"]))
            .with(
                "e",
                Values::F64(vec![Some(1.0), Some(2.0), Some(1.0), Some(2.0)]),
            )
            .with(
                "from",
                Values::F64(vec![Some(0.5), Some(0.5), Some(1.0), Some(1.0)]),
            )
            .with(
                "y",
                Values::F64(vec![Some(0.25), Some(0.5), Some(1.0), None]),
            );
        t.write_parquet(&dir.join("t.parquet")).unwrap();
        let o = outputs(
            "seeds = 3
[[tables]]
name = \"g\"
table = \"t.parquet\"
facet = \"v\"
\
             rows = \"l\"
columns = \"e\"
value = \"y\"
aggregate = \"mean\"
\
             column_label = \"ε\"
caption = \"{title} ({facet}): from {column:from}; {seeds}\"
",
        )
        .unwrap();
        render(&o, &dir, "t.parquet", "T").unwrap();
        let md = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
        assert!(md("g-d1.md").starts_with("**T (d=1): from 0.5; 3**"));
        assert!(md("g-d1.md").contains("| a | 0.250 | 0.500 |"));
        assert!(md("g-d2.md").starts_with("**T (d=2): from 1; 3**"));
        assert!(md("g-d2.md").contains("| a | 1.000 | – |"));
        // `{facet}` placed in a faceted figure's title.
        let op = outputs(
            "seeds = 3\n[[plots]]\nname = \"p\"\ntable = \"t.parquet\"\nfacet = \"v\"\nx = \"e\"\n\
             y = \"y\"\ntitle = \"{title} ({facet}; n = {seeds})\"\n",
        )
        .unwrap();
        render(&op, &dir, "t.parquet", "T").unwrap();
        assert!(md("p-d1.svg").contains("T (d=1; n = 3)"));
        let o = outputs(
            "[[tables]]
name = \"g\"
table = \"t.parquet\"
rows = \"l\"
columns = \"e\"
\
             value = \"y\"
caption = \"{column:from}\"
",
        )
        .unwrap();
        let e = render(&o, &dir, "t.parquet", "T").unwrap_err().to_string();
        assert!(e.contains("`from` holds 2 values"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn log_intervals_bounds_references_labels_and_panels_are_declared() {
        let dir = std::env::temp_dir().join(format!("dptune-declared-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let t = Table::default()
            .with(
                "s",
                Values::Str(["a", "a", "b", "b"].map(String::from).to_vec()),
            )
            .with("x", Values::F64(vec![Some(1.0); 4]))
            .with(
                "y",
                Values::F64(vec![Some(1.0), Some(100.0), Some(0.1), Some(0.3)]),
            );
        t.write_parquet(&dir.join("t.parquet")).unwrap();
        let spec = |extra: &str| {
            outputs(&format!(
                "[[plots]]\nname = \"p\"\ntable = \"t.parquet\"\nx = \"x\"\ny = \"y\"\nseries = \"s\"\n{extra}"
            ))
        };
        // The geometric mean of 1 and 100 is 10, its interval that of the mean log mapped back.
        let o = spec("aggregate = \"geomean-ci\"\n").unwrap();
        let mut ys = vec![1.0, 100.0];
        let (m, e) = o.plots[0].aggregate.point(&mut ys).unwrap();
        let (lo, hi) = e.unwrap();
        assert!((m - 10.0).abs() < 1e-9 && lo > 0.0 && (lo * hi - 100.0).abs() < 1e-6);
        assert_eq!(Aggregate::GeoMeanCi.point(&mut [0.0, 1.0]), None);
        // Clipped at the bound, said in the label; labels per value; a computed reference.
        let o = spec(
            "y_bounds = [0, inf]\nintervals = \"bars\"\nseries_labels = { a = \"first\" }\n\
             reference = { column = \"y\", by = \"s\", label = \"best ({})\" }\n",
        )
        .unwrap();
        render(&o, &dir, "t.parquet", "T").unwrap();
        let svg = std::fs::read_to_string(dir.join("p.svg")).unwrap();
        for want in ["first", "best (a)", "clipped to [0, ∞]"] {
            assert!(svg.contains(want), "{want}");
        }
        // One panel per series, side by side.
        let o = spec("panels = \"series\"\ncolumns = 2\n").unwrap();
        render(&o, &dir, "t.parquet", "T").unwrap();
        let svg = std::fs::read_to_string(dir.join("p.svg")).unwrap();
        assert!(svg.contains("one panel per series") && svg.contains(r#"width="1440""#));
        for (extra, key) in [
            ("y_bounds = [1, 0]\n", "plots[0].y_bounds"),
            ("reference = { label = \"r\" }\n", "plots[0].reference"),
            ("panels = \"facet\"\n", "plots[0].panels"),
            ("columns = 2\n", "plots[0].columns"),
            ("series_labels = { a = 1 }\n", "plots[0].series_labels.a"),
        ] {
            let e = spec(extra).unwrap_err().to_string();
            assert!(e.contains(key), "{extra}: {e}");
        }
        let e = outputs("[[tables]]\nname = \"t\"\nrows = \"s\"\ncolumns = \"x\"\nvalue = \"y\"\naggregate = \"geomean-ci\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("tables[0].aggregate"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn titles_and_captions_read_the_files_values() {
        let o = outputs("seeds = 12\neps0 = 0.1\nscan = \"as-given\"\nshuffle = false\n").unwrap();
        assert_eq!(
            o.fill(
                "{title}: {seeds} walks, ε0 = {eps0}, {scan}, {shuffle}; {} stays",
                "T",
                "w"
            )
            .unwrap(),
            "T: 12 walks, ε0 = 0.1, as-given, false; {} stays"
        );
        // A key the file does not set is an error naming it, never left in the text.
        let e = o
            .fill("{seeds} of {runs}", "T", "tables[0] (w)")
            .unwrap_err()
            .to_string();
        assert!(e.contains("tables[0] (w): `{runs}`"), "{e}");
    }

    #[test]
    fn bounds_round_up_and_other_values_to_nearest() {
        assert_eq!(Rounding::Up.format(3.4508401, 6), "3.450841");
        assert_eq!(Rounding::Up.format(2.5, 6), "2.500000");
        assert_eq!(Rounding::Nearest.format(0.7510339, 6), "0.751034");
        assert_eq!(Rounding::Down.format(0.7510339, 6), "0.751033");
        assert_eq!(Rounding::Down.format(-0.5, 0), "-1");
    }

    #[test]
    fn bad_entries_are_rejected_when_parsed() {
        for (text, field) in [
            ("[[plots]]\nname = \"p\"\nx = \"a\"\n", "plots[0].y"),
            ("[[plots]]\nname = \"p\"\nx = \"a\"\ny = \"b\"\naggregate = \"mode\"\n", "plots[0].aggregate"),
            ("[[plots]]\nname = \"p\"\nx = \"a\"\ny = \"b\"\nz = 1\n", "plots[0].z"),
            ("[[tables]]\nname = \"p\"\nrows = \"a\"\ncolumns = \"b\"\nvalue = \"c\"\naggregate = \"none\"\n", "tables[0].aggregate"),
            ("[[tables]]\nname = \"p\"\nrows = \"a\"\ncolumns = \"b\"\nvalue = \"c\"\n[[tables]]\nname = \"p\"\nrows = \"a\"\ncolumns = \"b\"\nvalue = \"d\"\n", "tables[1].name"),
            ("[[plots]]\nname = \"../p\"\nx = \"a\"\ny = \"b\"\n", "plots[0].name"),
            ("[[tables]]\nname = \"p\"\nrows = \"a\"\ncolumns = \"b\"\nvalue = \"c\"\nround = \"up\"\n", "tables[0].round"),
            ("[[plots]]\nname = \"p\"\nx = \"a\"\ny = \"b\"\nx_range = [2, 1]\n", "plots[0].x_range"),
            ("[[plots]]\nname = \"p\"\nx = \"a\"\ny = \"b\"\nfilter = { a = [] }\n", "plots[0].filter.a"),
            ("[[plots]]\nname = \"p\"\nx = \"a\"\ny = [\"b\", \"c\"]\n", "plots[0].y_names"),
            ("[[tables]]\nname = \"p\"\nvalue = \"c\"\nlist = [{ column = \"a\" }]\n", "tables[0].value"),
            ("[[tables]]\nname = \"p\"\nlist = []\n", "tables[0].list"),
        ] {
            let e = outputs(text).unwrap_err().to_string();
            assert!(e.contains(field), "{text}: {e}");
        }
        // A plot and a table may share a stem: their files differ (.png/.svg, .md/.tex).
        let shared = "[[plots]]\nname = \"p\"\nx = \"a\"\ny = \"b\"\n[[tables]]\nname = \"p\"\nrows = \"a\"\ncolumns = \"b\"\nvalue = \"c\"\n";
        assert!(outputs(shared).is_ok());
    }

    fn temp(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("dptune-decl-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A list cell's `format` fills placeholders from its row (decimals, scientific, percent,
    /// significant digits, value ± interval, "–" for an empty value), `missing` too; an
    /// `append` entry adds its rows, from another table, to the previous table.
    #[test]
    fn list_cells_fill_templates_and_tables_append_rows() {
        let dir = temp("templates");
        let t = Table::default()
            .with("task", Values::Str(vec!["a".into(), "b".into()]))
            .with("m", Values::F64(vec![Some(8.39401), Some(1.5)]))
            .with("h", Values::F64(vec![Some(0.02789), None]))
            .with("share", Values::F64(vec![Some(0.514), None]))
            .with("p", Values::F64(vec![Some(1.5432e-4), Some(0.5)]))
            .with("n", Values::U64(vec![5, 1]))
            .with("run", Values::U64(vec![128, 64]));
        t.write_parquet(&dir.join("runs.parquet")).unwrap();
        let u = Table::default().with("x", Values::F64(vec![Some(1.3442e-5)]));
        u.write_parquet(&dir.join("other.parquet")).unwrap();
        let o = outputs(
            "[[tables]]\nname = \"t\"\ncaption = \"c\"\nlist = [{ column = \"task\" }, \
             { column = \"m\", format = \"{m:.4±h} ({n} × {run})\" }, \
             { column = \"share\", format = \"{share:%.0} / {p:.2e}\", missing = \"> {run}\" }]\n\
             [[tables]]\nappend = true\ntable = \"other.parquet\"\nlist = [{ column = \"x\", format = \"argmax\" }, \
             { column = \"x\", format = \"ε {x:s4}\" }, { column = \"x\", format = \"\" }]\n",
        )
        .unwrap();
        render(&o, &dir, "runs.parquet", "T").unwrap();
        let md = std::fs::read_to_string(dir.join("t.md")).unwrap();
        for row in [
            "| a | 8.3940 ± 0.0279 (5 × 128) | 51% / 1.54e-4 |",
            "| b | 1.5000 (one repetition) (1 × 64) | > 64 |",
            "| argmax | ε 1.344e-5 |  |",
        ] {
            assert!(md.contains(row), "{row} in {md}");
        }
        assert_eq!(significant(10.0, 4), "10.00");
        assert_eq!(significant(1.2019, 4), "1.202");
        assert_eq!(significant(12345.6, 4), "12346");
        // An empty value in a template is "–"; a bad format is named.
        let o = outputs(
            "[[tables]]\nname = \"u\"\nlist = [{ column = \"task\", format = \"{h:.2}\" }]\n",
        )
        .unwrap();
        render(&o, &dir, "runs.parquet", "T").unwrap();
        assert!(std::fs::read_to_string(dir.join("u.md"))
            .unwrap()
            .contains("| – |"));
        let o = outputs(
            "[[tables]]\nname = \"v\"\nlist = [{ column = \"task\", format = \"{m:4}\" }]\n",
        )
        .unwrap();
        let e = render(&o, &dir, "runs.parquet", "T")
            .unwrap_err()
            .to_string();
        assert!(e.contains("`{m:4}`"), "{e}");
        // `append` needs a previous list of as many columns, and no name of its own.
        for text in [
            "[[tables]]\nappend = true\nlist = [{ column = \"a\" }]\n",
            "[[tables]]\nname = \"t\"\nlist = [{ column = \"a\" }]\n[[tables]]\nappend = true\nlist = [{ column = \"a\" }, { column = \"b\" }]\n",
            "[[tables]]\nname = \"t\"\nlist = [{ column = \"a\" }]\n[[tables]]\nappend = true\nname = \"u\"\nlist = [{ column = \"a\" }]\n",
        ] {
            let e = outputs(text).unwrap_err().to_string();
            assert!(e.contains("append"), "{text}: {e}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `steps` draws a series as a staircase; `[[plots.layers]]` add series from other tables
    /// (in the figure's facet), with their own filter, columns, labels and markers.
    #[test]
    fn steps_and_layers_draw_into_one_figure() {
        let dir = temp("layers");
        let front = Table::default()
            .with(
                "task",
                Values::Str(["a", "a", "a", "b"].map(String::from).to_vec()),
            )
            .with(
                "eps",
                Values::F64(vec![Some(0.1), Some(1.0), Some(4.0), Some(1.0)]),
            )
            .with(
                "err",
                Values::F64(vec![Some(0.5), Some(0.3), Some(0.1), Some(0.2)]),
            );
        front.write_parquet(&dir.join("front.parquet")).unwrap();
        let points = Table::default()
            .with("task", Values::Str(["a", "b"].map(String::from).to_vec()))
            .with("epsilon", Values::F64(vec![Some(2.0), Some(3.0)]))
            .with("error", Values::F64(vec![Some(0.6), Some(0.7)]));
        points.write_parquet(&dir.join("points.parquet")).unwrap();
        let o = outputs(
            "seeds = 3\n[[plots]]\nname = \"f\"\ntable = \"front.parquet\"\nfacet = \"task\"\nx = \"eps\"\ny = \"err\"\n\
             aggregate = \"none\"\nsteps = true\nseries_label = \"front ({seeds} seeds)\"\n\
             [[plots.layers]]\ntable = \"points.parquet\"\nx = \"epsilon\"\ny = \"error\"\nseries_label = \"points\"\nmarker = \"star\"\n",
        )
        .unwrap();
        assert_eq!(o.plots[0].layers.len(), 1);
        assert!(o.plots[0].layers[0].scatter && !o.plots[0].scatter);
        let files = render(&o, &dir, "front.parquet", "T").unwrap();
        assert_eq!(files.len(), 4);
        let svg = std::fs::read_to_string(dir.join("f-a.svg")).unwrap();
        assert!(
            svg.contains("front (3 seeds)") && svg.contains("points"),
            "legend"
        );
        // The staircase through (0.1, 0.5), (1, 0.3), (4, 0.1).
        let p = &o.plots[0];
        let t = Table::read_parquet(&dir.join("front.parquet")).unwrap();
        let (x, y) = (
            cells(&t, "eps", "", "").unwrap(),
            cells(&t, "err", "", "").unwrap(),
        );
        let series = vec![Cell::Str("err".into()); 4];
        let ys = [(y, None)];
        let columns = Columns {
            x: &x,
            ys: &ys,
            series: &series,
            along: None,
            marked: None,
            interval: None,
        };
        let c = curves(p, &columns, &[0, 1, 2], "", "").unwrap().curves;
        assert_eq!(
            c[0].points,
            [(0.1, 0.5), (1.0, 0.5), (1.0, 0.3), (4.0, 0.3), (4.0, 0.1)]
        );
        // A layer keeps its plot's facet: facet b's figure has b's point only.
        let l = layer_curves(
            &p.layers[0],
            Some(&Cell::Str("b".into())),
            p,
            &dir,
            "front.parquet",
            "",
        )
        .unwrap();
        assert_eq!(l[0].points, [(3.0, 0.7)]);
        assert_eq!(l[0].style.marker, plot::Marker::Star);
        let bad =
            "[[plots]]\nname = \"p\"\nx = \"a\"\ny = \"b\"\n[[plots.layers]]\nmarker = \"blob\"\n";
        let e = outputs(bad).unwrap_err().to_string();
        assert!(e.contains("plots[0].layers[0].marker"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `z` draws a heatmap of a column over the (x, y) grid, log10 with `z_scale = "log"`
    /// (a value ≤ 0 missing), the layers' points as dots and a star layer's point as the star.
    #[test]
    fn heatmaps_colour_a_column_over_the_grid() {
        let dir = temp("heat");
        let t = Table::default()
            .with(
                "a",
                Values::F64(vec![Some(1.0), Some(2.0), Some(1.0), Some(2.0)]),
            )
            .with(
                "b",
                Values::F64(vec![Some(5.0), Some(5.0), Some(7.0), Some(7.0)]),
            )
            .with(
                "v",
                Values::F64(vec![Some(10.0), Some(100.0), Some(0.0), Some(1.0)]),
            )
            .with(
                "set",
                Values::Str(["g", "g", "g", "best"].map(String::from).to_vec()),
            );
        t.write_parquet(&dir.join("grid.parquet")).unwrap();
        let o = outputs(
            "[[plots]]\nname = \"h\"\nx = \"a\"\ny = \"b\"\nz = \"v\"\nz_scale = \"log\"\nz_label = \"value\"\n\
             [[plots.layers]]\nfilter = { set = \"best\" }\naggregate = \"none\"\nmarker = \"star\"\n\
             [[plots.layers]]\nfilter = { set = \"g\" }\naggregate = \"none\"\n",
        )
        .unwrap();
        let files = render(&o, &dir, "grid.parquet", "T").unwrap();
        assert_eq!(files.len(), 2);
        let p = &o.plots[0];
        let layers = [Series::scatter("s", vec![(2.0, 7.0)]).styled(Style {
            marker: plot::Marker::Star,
            ..Style::default()
        })];
        let here: Vec<usize> = (0..4).collect();
        let labels = ("a".to_string(), "b".to_string());
        let h = p.heat.as_ref().unwrap();
        let m = heat_map(p, h, &t, &here, "T".into(), labels, &layers, "", "").unwrap();
        assert_eq!(
            (m.xs.clone(), m.ys.clone()),
            (vec![1.0, 2.0], vec![5.0, 7.0])
        );
        assert_eq!(m.values, [Some(1.0), Some(2.0), None, Some(0.0)]);
        assert_eq!(
            (m.star, m.value_label.as_str()),
            (Some((2.0, 7.0)), "log10 value")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A small table of two configurations (a, b) over three x, written as runs.parquet in a
    /// fresh folder.
    fn configurations(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("dptune-decl-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let t = Table::default()
            .with(
                "kind",
                Values::Str(["a", "a", "a", "b", "b", "b"].map(String::from).to_vec()),
            )
            .with(
                "src",
                Values::Str(["u", "v", "u", "v", "u", "v"].map(String::from).to_vec()),
            )
            .with(
                "x",
                Values::F64([1.0, 2.0, 3.0, 1.0, 2.0, 3.0].map(Some).to_vec()),
            )
            .with(
                "y",
                Values::F64([0.5, 1.5, 2.5, 4.0, 6.0, 9.0].map(Some).to_vec()),
            )
            .with(
                "rate",
                Values::F64([0.25, 0.125, 0.0, 0.5, 0.75, 1.0].map(Some).to_vec()),
            )
            .with("k", Values::U64(vec![0, 3, 7, 1, 2, 3]));
        t.write_parquet(&dir.join("runs.parquet")).unwrap();
        dir
    }

    fn read(dir: &Path, name: &str) -> String {
        std::fs::read_to_string(dir.join(name)).unwrap()
    }

    /// `"{key}"` and `"{key[i]}"` in a filter stand for the file's top-level value and a
    /// list's entry (a list: any entry); `{key[i]}` fills titles and captions too.
    #[test]
    fn filters_and_titles_read_the_files_values_and_list_entries() {
        let dir = configurations("keys");
        let o = outputs(
            "kinds = [\"b\", \"a\"]\nxs = [2, 3]\nname = \"n\"\n\
             [[tables]]\nname = \"t\"\nfilter = { kind = \"{kinds[0]}\", x = \"{xs}\" }\n\
             list = [{ column = \"kind\" }, { column = \"x\" }]\ncaption = \"{kinds[0]} at {xs[1]}\"\n",
        )
        .unwrap();
        render(&o, &dir, "runs.parquet", "T").unwrap();
        let md = read(&dir, "t.md");
        assert!(md.starts_with("**b at 3**"), "{md}");
        assert!(md.contains("| b | 2 |") && md.contains("| b | 3 |"), "{md}");
        assert!(!md.contains("| a |") && !md.contains("| b | 1 |"), "{md}");
        // A key the file does not set, an index past the list, or a scalar indexed: errors.
        for (filter, want) in [
            ("{ kind = \"{kindz}\" }", "no top-level `kindz`"),
            ("{ kind = \"{kinds[2]}\" }", "shorter"),
            ("{ kind = \"{name[0]}\" }", "not a list"),
        ] {
            let text = format!(
                "kinds = [\"b\", \"a\"]\nname = \"n\"\n[[tables]]\nname = \"t\"\nfilter = {filter}\n\
                 list = [{{ column = \"kind\" }}]\n"
            );
            let e = outputs(&text).unwrap_err().to_string();
            assert!(e.contains("filter.kind") && e.contains(want), "{e}");
        }
        // An index past a caption's list is a key the file does not set.
        let o = outputs("kinds = [\"b\"]\n[[tables]]\nname = \"t\"\nlist = [{ column = \"kind\" }]\ncaption = \"{kinds[1]}\"\n").unwrap();
        let e = render(&o, &dir, "runs.parquet", "T")
            .unwrap_err()
            .to_string();
        assert!(e.contains("`{kinds[1]}`"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `exclude` drops the rows where every listed column holds one of its values.
    #[test]
    fn exclude_drops_rows_matching_every_column() {
        let dir = configurations("exclude");
        let o = outputs(
            "[[tables]]\nname = \"t\"\nexclude = { kind = \"a\", src = \"u\" }\n\
             list = [{ column = \"kind\" }, { column = \"src\" }, { column = \"x\" }]\n",
        )
        .unwrap();
        render(&o, &dir, "runs.parquet", "T").unwrap();
        let md = read(&dir, "t.md");
        assert!(md.contains("| a | v | 2 |"), "{md}");
        assert!(!md.contains("| a | u |"), "{md}");
        assert_eq!(md.matches("| b |").count(), 3, "{md}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `series = [a, b]`: one curve per combination of values, its legend "a, b" (and
    /// `series_labels` keyed so, filled with the file's values).
    #[test]
    fn series_of_several_columns_combine_their_values() {
        let dir = configurations("series");
        let o = outputs(
            "g = 7\n[[plots]]\nname = \"p\"\nx = \"x\"\ny = \"y\"\nseries = [\"kind\", \"src\"]\n\
             aggregate = \"none\"\nseries_labels = { \"b, v\" = \"b from v (g = {g})\" }\n",
        )
        .unwrap();
        render(&o, &dir, "runs.parquet", "T").unwrap();
        let svg = read(&dir, "p.svg");
        for entry in ["a, u", "a, v", "b, u", "b from v (g = 7)"] {
            assert!(svg.contains(entry), "{entry}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `diagonal`: a dashed line y = x over the points' x range, with its legend entry.
    #[test]
    fn a_diagonal_spans_the_points() {
        let curves = vec![Series::scatter(
            "s",
            vec![(2.0, 0.1), (0.5, 0.2), (f64::NAN, 1.0)],
        )];
        let d = diagonal("y = x".into(), &curves).unwrap();
        assert_eq!(d.points, vec![(0.5, 0.5), (2.0, 2.0)]);
        assert!(d.style.dashed && !d.scatter && d.label == "y = x");
        assert!(diagonal("y = x".into(), &[]).is_none());
        let dir = configurations("diagonal");
        let o = outputs("[[plots]]\nname = \"p\"\nx = \"x\"\ny = \"y\"\naggregate = \"none\"\ndiagonal = \"y equals x\"\n").unwrap();
        render(&o, &dir, "runs.parquet", "T").unwrap();
        assert!(read(&dir, "p.svg").contains("y equals x"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A list column's `format`: `{}` its own cell, `{NAME}` another column's value as it is,
    /// `{NAME:.D}` with D decimals (rounded as the column's `round` says), `{:.D}` its own
    /// value so; `{column:NAME:D}` in a caption with D decimals.
    #[test]
    fn list_columns_format_several_columns_into_one_cell() {
        let dir = configurations("format");
        let o = outputs(
            "[[tables]]\nname = \"t\"\nfilter = { kind = \"a\" }\n\
             list = [{ column = \"k\", label = \"k (rate; x)\", format = \"{} ({rate:.3}; ≤ {x})\" }]\n\
             caption = \"first {column:kind}, y {column:y:2}\"\n",
        )
        .unwrap();
        let e = render(&o, &dir, "runs.parquet", "T")
            .unwrap_err()
            .to_string();
        assert!(e.contains("`y` holds 3 values"), "{e}");
        let o = outputs(
            "[[tables]]\nname = \"t\"\nfilter = { kind = \"a\", x = 1 }\n\
             list = [{ column = \"k\", label = \"k (rate; x)\", format = \"{} ({rate:.3}; ≤ {x})\" }, \
             { column = \"rate\", round = \"up\", format = \"{:.1} / {k:.1} / {rate:%.0}\" }]\n\
             caption = \"first {column:kind}, y {column:y:2}\"\n",
        )
        .unwrap();
        render(&o, &dir, "runs.parquet", "T").unwrap();
        let md = read(&dir, "t.md");
        assert!(md.starts_with("**first a, y 0.50**"), "{md}");
        assert!(md.contains("| 0 (0.250; ≤ 1) | 0.3 / 0.0 / 25% |"), "{md}");
        let bad = outputs(
            "[[tables]]\nname = \"t\"\nlist = [{ column = \"k\", format = \"{rate:x}\" }]\n",
        )
        .unwrap();
        let e = render(&bad, &dir, "runs.parquet", "T")
            .unwrap_err()
            .to_string();
        assert!(e.contains("`{rate:x}`: a format is"), "{e}");
        // The grammar before the merge of the two `format`s: `{NAME:D}` is no format.
        let bad = outputs(
            "[[tables]]\nname = \"t\"\nlist = [{ column = \"k\", format = \"{rate:3}\" }]\n",
        )
        .unwrap();
        let e = render(&bad, &dir, "runs.parquet", "T")
            .unwrap_err()
            .to_string();
        assert!(e.contains("`{rate:3}`"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A pivot over several row and column keys, headed by a template, with a note per cell;
    /// a list cell with its half-width; a facet value's Greek letters spelled out.
    #[test]
    fn pivots_take_several_keys_and_notes_and_lists_intervals() {
        let dir = std::env::temp_dir().join(format!("dptune-keys-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let strs = |v: [&str; 4]| Values::Str(v.map(String::from).to_vec());
        let nums = |v: [Option<f64>; 4]| Values::F64(v.to_vec());
        let t = Table::default()
            .with("m", strs(["a", "a", "a", "b"]))
            .with("acc", strs(["x", "x", "y", "x"]))
            .with("size", Values::U64(vec![10, 100, 10, 10]))
            .with("eps", nums([Some(0.5); 4]))
            .with(
                "total",
                nums([Some(1.23441), Some(2.0), Some(3.0), Some(4.0)]),
            )
            .with("delta", nums([Some(1e-5), Some(0.0), None, Some(0.0)]))
            .with("h", nums([Some(0.5), None, Some(0.25), Some(0.0)]));
        t.write_parquet(&dir.join("t.parquet")).unwrap();
        let o = outputs(
            "[[tables]]\nname = \"k\"\ntable = \"t.parquet\"\nrows = [\"m\", \"acc\"]\n\
             columns = [\"size\", \"eps\"]\ncolumn_header = \"|S| = {size}, ε = {eps}\"\nvalue = \"total\"\n\
             aggregate = \"mean\"\ndigits = 3\nround = \"up\"\nnote = { column = \"delta\", label = \"δ\" }\n\
             [[tables]]\nname = \"l\"\ntable = \"t.parquet\"\n\
             list = [{ column = \"m\" }, { column = \"total\", digits = 2, interval = \"h\" }]\n",
        )
        .unwrap();
        render(&o, &dir, "t.parquet", "T").unwrap();
        let md = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
        let k = md("k.md");
        assert!(
            k.contains("| m | acc | \\|S\\| = 10, ε = 0.5 | \\|S\\| = 100, ε = 0.5 |"),
            "{k}"
        );
        // Rounded up, δ where it is not 0; a missing (row, column) pair is "–".
        assert!(k.contains("| a | x | 1.235 (δ 1e-5) | 2.000 |"), "{k}");
        assert!(k.contains("| a | y | 3.000 | – |"), "{k}");
        assert!(k.contains("| b | x | 4.000 | – |"), "{k}");
        assert!(
            k.contains("by m, acc and size, eps") || k.starts_with("**T"),
            "{k}"
        );
        let l = md("l.md");
        for row in [
            "| a | 1.23 ± 0.50 |",
            "| a | 2.00 (one repetition) |",
            "| b | 4.00 ± 0.00 |",
        ] {
            assert!(l.contains(row), "{row} in {l}");
        }
        // Several columns need their header; a list takes no pivot keys.
        for (text, field) in [
            ("[[tables]]\nname = \"p\"\nrows = \"a\"\ncolumns = [\"b\", \"c\"]\nvalue = \"d\"\n", "tables[0].column_header"),
            ("[[tables]]\nname = \"p\"\nnote = { column = \"d\", label = \"δ\" }\nlist = [{ column = \"a\" }]\n", "tables[0].note"),
        ] {
            let e = outputs(text).unwrap_err().to_string();
            assert!(e.contains(field), "{text}: {e}");
        }
        assert_eq!(slug("d=15, σ=0.03"), "d15sigma0.03");
        assert_eq!(slug("μ=0.5, ε=1"), "mu0.5eps1");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
