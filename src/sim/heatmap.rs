//! Heatmaps of values on a grid (spec 001 Figs. 1–4: oracle, GP and acquisition maps), drawn to
//! a PNG and an SVG with the same code, like [`super::plot::draw`].
//!
//! Cells are centred on the grid values and meet halfway between neighbours (halfway in ln v on
//! a log axis); a missing value is a grey cell. Colours are viridis over the finite values'
//! range, with a colour bar; optional points are drawn as white dots and one star marks a
//! chosen cell (an argmax).
#![cfg_attr(not(feature = "harness"), allow(dead_code, unused_imports))]

use std::path::{Path, PathBuf};

#[cfg(feature = "harness")]
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
#[cfg(feature = "harness")]
use plotters::coord::Shift;
#[cfg(feature = "harness")]
use plotters::prelude::*;
#[cfg(feature = "harness")]
use plotters::style::text_anchor::{HPos, Pos, VPos};

#[cfg(feature = "harness")]
use super::plot::outputs;
use super::plot::{linear_ticks, log_ticks, sig_label, tick_digits, FONT};
use crate::error::{Error, Result};

/// A grid of values: `values[j * xs.len() + i]` sits at (xs[i], ys[j]).
#[derive(Clone, Debug, PartialEq)]
pub struct Heatmap {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// The colour bar's label.
    pub value_label: String,
    /// Cell centres, strictly increasing (positive on a log axis).
    pub xs: Vec<f64>,
    pub ys: Vec<f64>,
    pub x_log: bool,
    pub y_log: bool,
    pub values: Vec<Option<f64>>,
    /// Points drawn over the map (white dots), e.g. the sampled points.
    pub points: Vec<(f64, f64)>,
    /// A star, e.g. at the acquisition's argmax.
    pub star: Option<(f64, f64)>,
}

const SIZE: (u32, u32) = (900, 720);
const MARGIN: u32 = 16;
const TITLE_SIZE: f64 = 22.0;
const LABEL_SIZE: f64 = 17.0;
const BAR_WIDTH: u32 = 150;
/// matplotlib's viridis at nine evenly spaced stops.
const VIRIDIS: [(u8, u8, u8); 9] = [
    (68, 1, 84),
    (71, 44, 122),
    (59, 81, 139),
    (44, 113, 142),
    (33, 144, 141),
    (39, 173, 129),
    (92, 200, 99),
    (170, 220, 50),
    (253, 231, 37),
];
#[cfg(feature = "harness")]
const MISSING: RGBColor = RGBColor(200, 200, 200);

/// The viridis colour at t ∈ [0, 1] (clamped), linear between the stops.
#[cfg(feature = "harness")]
pub fn viridis(t: f64) -> RGBColor {
    let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) };
    let x = t * (VIRIDIS.len() - 1) as f64;
    let i = (x.floor() as usize).min(VIRIDIS.len() - 2);
    let f = x - i as f64;
    let mix = |a: u8, b: u8| (a as f64 + f * (b as f64 - a as f64)).round() as u8;
    let (a, b) = (VIRIDIS[i], VIRIDIS[i + 1]);
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

fn fail(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::io(path, format!("cannot draw the heatmap: {e}"))
}

/// An axis: cell edges (halfway in ln v on a log axis) and, on a log axis, its ticks.
#[cfg(feature = "harness")]
struct Axis {
    log: bool,
    edges: Vec<f64>,
    ticks: Vec<f64>,
    digits: usize,
}

#[cfg(feature = "harness")]
impl Axis {
    fn new(values: &[f64], log: bool, what: &str) -> std::result::Result<Self, String> {
        let ok = values.iter().all(|v| v.is_finite() && (!log || *v > 0.0))
            && values.windows(2).all(|w| w[0] < w[1]);
        if values.is_empty() || !ok {
            return Err(format!(
                "{what} values must be finite, strictly increasing{}",
                if log { " and positive (log axis)" } else { "" }
            ));
        }
        let c: Vec<f64> = values
            .iter()
            .map(|&v| if log { libm::log(v) } else { v })
            .collect();
        let half = if c.len() > 1 {
            (c[1] - c[0]) / 2.0
        } else {
            c[0].abs().max(1.0) * 0.05
        };
        let last_half = if c.len() > 1 {
            (c[c.len() - 1] - c[c.len() - 2]) / 2.0
        } else {
            half
        };
        let mut edges = vec![c[0] - half];
        edges.extend(c.windows(2).map(|w| (w[0] + w[1]) / 2.0));
        edges.push(c[c.len() - 1] + last_half);
        if log {
            edges.iter_mut().for_each(|e| *e = libm::exp(*e));
        }
        let (lo, hi) = (edges[0], edges[edges.len() - 1]);
        let (ticks, digits) = if log {
            let t = log_ticks(lo, hi);
            let d = tick_digits(&t);
            (t, d)
        } else {
            (Vec::new(), 3)
        };
        Ok(Axis {
            log,
            edges,
            ticks,
            digits,
        })
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.edges[0]..self.edges[self.edges.len() - 1]
    }

    fn at(&self, v: f64) -> Option<f64> {
        (v.is_finite() && self.range().contains(&v)).then_some(v)
    }
}

/// Without the `harness` feature dptune draws no figure: asking for one is an error that says so.
#[cfg(not(feature = "harness"))]
pub fn draw(_map: &Heatmap, stem: &Path) -> Result<Vec<PathBuf>> {
    Err(fail(
        stem,
        "this dptune was built without its `harness` feature",
    ))
}

/// Draws `map` to `<stem>.png` and `<stem>.svg`; returns both paths. Fails, naming the file,
/// when the axes are not increasing, the values do not fill the grid, no value is finite, or a
/// file cannot be written.
#[cfg(feature = "harness")]
pub fn draw(map: &Heatmap, stem: &Path) -> Result<Vec<PathBuf>> {
    let x = Axis::new(&map.xs, map.x_log, "x").map_err(|e| fail(stem, e))?;
    let y = Axis::new(&map.ys, map.y_log, "y").map_err(|e| fail(stem, e))?;
    if map.values.len() != map.xs.len() * map.ys.len() {
        return Err(fail(
            stem,
            format!(
                "{} values for a {} × {} grid",
                map.values.len(),
                map.xs.len(),
                map.ys.len()
            ),
        ));
    }
    let finite = map.values.iter().flatten().filter(|v| v.is_finite());
    let (lo, hi) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
        (a.min(v), b.max(v))
    });
    if lo > hi {
        return Err(fail(stem, "no finite value to colour"));
    }
    // A constant map still gets a bar of positive length.
    let (lo, hi) = if hi - lo > 1e-12 * hi.abs().max(lo.abs()).max(1e-300) {
        (lo, hi)
    } else {
        (lo - 0.5 * lo.abs().max(1.0), hi + 0.5 * hi.abs().max(1.0))
    };
    let (png, svg) = outputs(stem)?;
    let plan = Plan { map, x, y, lo, hi };
    super::plot::write_both(
        &png,
        &svg,
        SIZE,
        |area| render(area, &plan),
        |area| render(area, &plan),
    )?;
    Ok(vec![png, svg])
}

#[cfg(feature = "harness")]
struct Plan<'a> {
    map: &'a Heatmap,
    x: Axis,
    y: Axis,
    lo: f64,
    hi: f64,
}

#[cfg(feature = "harness")]
fn font(size: f64) -> FontDesc<'static> {
    FontDesc::new(FontFamily::Name(FONT), size, FontStyle::Normal)
}

/// Splits `text` at spaces into lines of at most `chars` characters.
fn wrap(text: &str, chars: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(l) if l.chars().count() + 1 + word.chars().count() <= chars => {
                l.push(' ');
                l.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

#[cfg(feature = "harness")]
fn render<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    plan: &Plan,
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let inner = root.margin(MARGIN, MARGIN, MARGIN, MARGIN);
    let title = wrap(&plan.map.title, 72);
    let line_h = (TITLE_SIZE * 1.25).ceil() as u32;
    let (title_area, body) = inner.split_vertically(line_h * title.len() as u32 + 8);
    let style = TextStyle::from(font(TITLE_SIZE))
        .pos(Pos::new(HPos::Center, VPos::Top))
        .color(&BLACK);
    let centre = title_area.dim_in_pixel().0 as i32 / 2;
    for (i, line) in title.iter().enumerate() {
        title_area.draw(&Text::new(
            line.as_str(),
            (centre, (i as u32 * line_h) as i32),
            style.clone(),
        ))?;
    }
    let width = body.dim_in_pixel().0;
    let (chart_area, bar_area) = body.split_horizontally(width - BAR_WIDTH);
    map_chart(&chart_area, plan)?;
    colour_bar(&bar_area, plan)?;
    root.present()
}

#[cfg(feature = "harness")]
fn map_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    plan: &Plan,
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let (x, y) = (&plan.x, &plan.y);
    let log = |a: &Axis| a.range().log_scale().with_key_points(a.ticks.clone());
    match (x.log, y.log) {
        (false, false) => cells(area, plan, x.range(), y.range()),
        (false, true) => cells(area, plan, x.range(), log(y)),
        (true, false) => cells(area, plan, log(x), y.range()),
        (true, true) => cells(area, plan, log(x), log(y)),
    }
}

/// The map's chart on coordinates `x_spec` × `y_spec` (linear, or log with its own ticks).
#[cfg(feature = "harness")]
fn cells<DB, X, Y>(
    area: &DrawingArea<DB, Shift>,
    plan: &Plan,
    x_spec: X,
    y_spec: Y,
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>>
where
    DB: DrawingBackend,
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let (x, y, map) = (&plan.x, &plan.y, plan.map);
    let mut chart = ChartBuilder::on(area)
        .margin_top(8)
        .margin_right(12)
        .x_label_area_size(56)
        .y_label_area_size(80)
        .build_cartesian_2d(x_spec, y_spec)?;
    let x_fmt = |v: &f64| sig_label(*v, x.digits);
    let y_fmt = |v: &f64| sig_label(*v, y.digits);
    let mut mesh = chart.configure_mesh();
    mesh.disable_mesh()
        .x_desc(map.x_label.as_str())
        .y_desc(map.y_label.as_str())
        .label_style((FONT, 15))
        .axis_desc_style(font(LABEL_SIZE))
        .x_max_light_lines(0)
        .y_max_light_lines(0);
    if x.log {
        mesh.x_label_formatter(&x_fmt);
    }
    if y.log {
        mesh.y_label_formatter(&y_fmt);
    }
    mesh.draw()?;
    let nx = map.xs.len();
    let cells = map.values.iter().enumerate().map(|(k, v)| {
        let (i, j) = (k % nx, k / nx);
        let colour = match v {
            Some(v) if v.is_finite() => viridis((v - plan.lo) / (plan.hi - plan.lo)),
            _ => MISSING,
        };
        Rectangle::new(
            [(x.edges[i], y.edges[j]), (x.edges[i + 1], y.edges[j + 1])],
            colour.filled(),
        )
    });
    chart.draw_series(cells)?;
    let dots = (map.points.iter())
        .filter_map(|&(u, v)| Some((x.at(u)?, y.at(v)?)))
        .map(|p| {
            EmptyElement::at(p)
                + Circle::new((0, 0), 3, WHITE.filled())
                + Circle::new((0, 0), 3, BLACK.stroke_width(1))
        });
    chart.draw_series(dots)?;
    if let Some(p) = map.star.and_then(|(u, v)| Some((x.at(u)?, y.at(v)?))) {
        let star: Vec<(i32, i32)> = (0..10)
            .map(|k| {
                let r = if k % 2 == 0 { 14.0 } else { 6.0 };
                let a = std::f64::consts::PI * (k as f64 / 5.0 - 0.5);
                (
                    (r * libm::cos(a)).round() as i32,
                    (r * libm::sin(a)).round() as i32,
                )
            })
            .collect();
        let mut outline = star.clone();
        outline.push(star[0]);
        chart.draw_series(std::iter::once(
            EmptyElement::at(p)
                + Polygon::new(star, RGBColor(230, 30, 30).filled())
                + PathElement::new(outline, BLACK.stroke_width(1)),
        ))?;
    }
    Ok(())
}

#[cfg(feature = "harness")]
fn colour_bar<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    plan: &Plan,
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let (lo, hi) = (plan.lo, plan.hi);
    let mut chart = ChartBuilder::on(area)
        .margin_top(8)
        .margin_bottom(56)
        .margin_left(12)
        .y_label_area_size(0)
        .right_y_label_area_size(70)
        .build_cartesian_2d(0.0..1.0, lo..hi)?;
    let fmt = |v: &f64| sig_label(*v, 3);
    chart
        .configure_mesh()
        .disable_mesh()
        .disable_x_axis()
        .label_style((FONT, 14))
        .y_labels(linear_ticks(lo, hi).len().max(3))
        .y_label_formatter(&fmt)
        .y_max_light_lines(0)
        .draw()?;
    let steps = 128;
    chart.draw_series((0..steps).map(|k| {
        let (a, b) = (k as f64 / steps as f64, (k + 1) as f64 / steps as f64);
        Rectangle::new(
            [(0.0, lo + a * (hi - lo)), (1.0, lo + b * (hi - lo))],
            viridis((a + b) / 2.0).filled(),
        )
    }))?;
    chart.draw_series(std::iter::once(Rectangle::new(
        [(0.0, lo), (1.0, hi)],
        BLACK.stroke_width(1),
    )))?;
    let label = TextStyle::from(font(14.0))
        .pos(Pos::new(HPos::Left, VPos::Top))
        .color(&BLACK);
    let (_, h) = area.dim_in_pixel();
    for (i, line) in wrap(&plan.map.value_label, 16).iter().enumerate() {
        area.draw(&Text::new(
            line.as_str(),
            (12, h as i32 - 50 + 16 * i as i32),
            label.clone(),
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map() -> Heatmap {
        let xs: Vec<f64> = (0..6)
            .map(|i| libm::pow(10f64, -2.0 + 0.8 * i as f64))
            .collect();
        let ys: Vec<f64> = (1..=5).map(|j| j as f64 * 6.0).collect();
        let values = (0..30)
            .map(|k| (k != 7).then_some((k % 6) as f64 - (k / 6) as f64 * 0.3))
            .collect();
        Heatmap {
            title: "a test map with a title long enough to be wrapped onto a second line of text"
                .into(),
            x_label: "b".into(),
            y_label: "C".into(),
            value_label: "log10 ε (oracle)".into(),
            xs,
            ys,
            x_log: true,
            y_log: false,
            values,
            points: vec![(0.1, 10.0), (5.0, 29.0), (1e9, 1.0)],
            star: Some((1.0, 12.0)),
        }
    }

    #[test]
    fn draws_both_files() {
        let dir = std::env::temp_dir().join(format!("dptune-heatmap-{}", std::process::id()));
        let files = draw(&map(), &dir.join("m")).unwrap();
        assert_eq!(files.len(), 2);
        for f in &files {
            assert!(std::fs::metadata(f).unwrap().len() > 1000, "{f:?}");
        }
        let svg = std::fs::read_to_string(&files[1]).unwrap();
        assert!(svg.contains("log10"), "the colour bar is labelled");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn bad_maps_are_refused_with_the_reason() {
        let dir = std::env::temp_dir().join("dptune-heatmap-bad");
        let mut m = map();
        m.values.pop();
        assert!(draw(&m, &dir.join("m"))
            .unwrap_err()
            .to_string()
            .contains("29 values"));
        let mut m = map();
        m.xs[1] = m.xs[0];
        assert!(draw(&m, &dir.join("m"))
            .unwrap_err()
            .to_string()
            .contains("increasing"));
        let mut m = map();
        m.values = vec![None; 30];
        assert!(draw(&m, &dir.join("m"))
            .unwrap_err()
            .to_string()
            .contains("finite"));
    }

    #[test]
    fn viridis_ends_and_clamps() {
        assert_eq!(viridis(0.0), RGBColor(68, 1, 84));
        assert_eq!(viridis(1.0), RGBColor(253, 231, 37));
        assert_eq!(viridis(2.0), viridis(1.0));
        assert_eq!(viridis(f64::NAN), viridis(0.0));
    }
}
