//! Line plots of simulation results: one figure drawn to a PNG and an SVG with the same code.
//!
//! Only finite values (and, on log axes, positive ones) inside the axis limits are drawn; a curve
//! is broken where a point is skipped, so no line crosses a gap or leaves the plotting area.
//!
//! The title is wrapped at spaces to the figure's width (its font shrunk only when a single word
//! is wider than that); the legend sits in a column right of the chart, never over the data, its
//! labels wrapped and its font shrunk until every entry fits; every axis has at least 3 labelled
//! ticks (log axes shorter than a few decades get 1-2-5 or 1..9 multiples of powers of ten; a
//! log x axis over 3 to 8 distinct values is ticked at them). Intervals of a series of 8 points
//! or more are a translucent band, not bars at every point (unless the figure asks for one
//! style, [`Intervals`]); series that would be drawn on top of each other keep their legend
//! entries, say so and are drawn dashed with their own marker shapes; [`Figure::focus_on_the_bulk`]
//! fits the y axis to the bulk of the points (and the reference line) and names in the title the
//! few it leaves off. A series may be a path (its order's start and end marked) or a grey
//! context line; [`draw_panels`] draws several figures side by side on shared axes.
#![cfg_attr(not(feature = "harness"), allow(dead_code, unused_imports))]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

#[cfg(feature = "harness")]
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
#[cfg(feature = "harness")]
use plotters::coord::Shift;
#[cfg(feature = "harness")]
use plotters::prelude::*;
#[cfg(feature = "harness")]
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::error::{fmt_num, Error, Result};

/// One curve: points (x, y) in x order; optional error bars (lo, hi) per point, same length.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text.
    pub label: String,
    /// The curve's points, in x order.
    pub points: Vec<(f64, f64)>,
    /// Vertical error bar (lo, hi) for each point, or None for no bars.
    pub errors: Option<Vec<(f64, f64)>>,
    /// Markers only, no connecting line (a scatter of unordered points).
    pub scatter: bool,
    /// How it is drawn beyond its palette colour.
    pub style: Style,
}

/// A series' drawing beyond the defaults: its colour, the shape of its markers, a dashed line,
/// and for a path the order's ends.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Style {
    /// An RGB colour instead of the palette's next.
    pub color: Option<(u8, u8, u8)>,
    pub marker: Marker,
    pub dashed: bool,
    /// A path in its points' order: a thin line (thick joins spike where a path doubles back)
    /// with the first point a hollow circle and the last a filled square (the legend says so).
    pub path: bool,
    /// A thin grey context line, without markers, intervals or legend entry (the other series
    /// of a panel).
    pub context: bool,
}

/// The shape of a series' point markers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Marker {
    #[default]
    Circle,
    Triangle,
    Square,
    Cross,
    /// A large cross, for one marked point (an optimum).
    Star,
}

/// How intervals are drawn: a band from 8 points on and bars below (auto), or one
/// style for every series of the figure.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Intervals {
    #[default]
    Auto,
    Bars,
    Band,
}

impl Series {
    /// A curve through `points`, without intervals.
    pub fn line(label: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            label: label.into(),
            points,
            errors: None,
            scatter: false,
            style: Style::default(),
        }
    }

    /// Markers at `points`, unconnected.
    pub fn scatter(label: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            scatter: true,
            ..Series::line(label, points)
        }
    }

    /// The same with an interval (lo, hi) per point (None: no intervals).
    pub fn with_errors(self, errors: Option<Vec<(f64, f64)>>) -> Series {
        Series { errors, ..self }
    }

    /// The same drawn as a path in its points' order, start and end marked.
    pub fn path(self) -> Series {
        let style = Style {
            path: true,
            ..self.style
        };
        Series {
            scatter: false,
            style,
            ..self
        }
    }

    /// The same in `style`.
    pub fn styled(self, style: Style) -> Series {
        Series { style, ..self }
    }
}

/// How an axis maps values to positions (`linear`, the default, or `log` in a file).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scale {
    #[default]
    Linear,
    Log,
}

/// A titled figure with labelled axes, any number of curves and an optional reference line.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x_scale: Scale,
    pub y_scale: Scale,
    /// Axis limits; None = from the data (with a small margin; for log scale use only positive values).
    pub x_range: Option<(f64, f64)>,
    pub y_range: Option<(f64, f64)>,
    pub series: Vec<Series>,
    /// Optional horizontal reference line with its legend label (e.g. a non-private best).
    pub hline: Option<(f64, String)>,
    /// How the series' intervals are drawn.
    pub intervals: Intervals,
}

impl Figure {
    /// A figure on linear axes fitted to the data, without a reference line.
    pub fn new(
        title: impl Into<String>,
        x_label: impl Into<String>,
        y_label: impl Into<String>,
        series: Vec<Series>,
    ) -> Figure {
        Figure {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            x_scale: Scale::Linear,
            y_scale: Scale::Linear,
            x_range: None,
            y_range: None,
            series,
            hline: None,
            intervals: Intervals::Auto,
        }
    }

    /// Fits the y axis to the bulk of the points when a few lie far from the rest (one tuner
    /// that mostly releases nothing would squeeze nine others into a sliver): points beyond
    /// three interquartile ranges of the quartiles, if they are at most a quarter of all, are
    /// left off the axis, and the title names them (series, x values where not all, range).
    pub fn focus_on_the_bulk(&mut self) {
        if self.y_range.is_some() || self.y_scale != Scale::Linear {
            return;
        }
        let mut ys: Vec<f64> = (self.series.iter().flat_map(|s| s.points.iter()))
            .map(|p| p.1)
            .filter(|y| y.is_finite())
            .collect();
        if ys.len() < 8 {
            return;
        }
        ys.sort_by(f64::total_cmp);
        let (q1, q3) = (ys[ys.len() / 4], ys[3 * ys.len() / 4]);
        let (lo_fence, hi_fence) = (q1 - 3.0 * (q3 - q1), q3 + 3.0 * (q3 - q1));
        let far = |y: f64| y < lo_fence || y > hi_fence;
        let n_far = ys.iter().filter(|&&y| far(y)).count();
        if n_far == 0 || n_far * 4 > ys.len() || q3 <= q1 {
            return;
        }
        // The axis: every point within the fences, with its interval.
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for s in &self.series {
            let errs = s.errors.as_deref();
            for (k, &(_, y)) in s.points.iter().enumerate() {
                if y.is_finite() && !far(y) {
                    let (a, b) = errs.map_or((y, y), |e| (e[k].0.min(y), e[k].1.max(y)));
                    (lo, hi) = (lo.min(a), hi.max(b));
                }
            }
        }
        // The reference line stays in sight.
        if let Some((v, _)) = self.hline.as_ref().filter(|h| h.0.is_finite()) {
            (lo, hi) = (lo.min(*v), hi.max(*v));
        }
        if hi <= lo || hi.is_nan() || lo.is_nan() {
            return;
        }
        let pad = 0.06 * (hi - lo);
        let (lo, hi) = (lo - pad, hi + pad);
        // The points that axis leaves off (none: the figure stays as it was).
        let mut notes = Vec::new();
        for s in &self.series {
            let off: Vec<(f64, f64)> = (s.points.iter().copied())
                .filter(|&(_, y)| y.is_finite() && (y < lo || y > hi))
                .collect();
            if off.is_empty() {
                continue;
            }
            let (a, b) = off
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
                    (a.min(p.1), b.max(p.1))
                });
            let values = if a == b {
                sig_label(a, 3)
            } else {
                format!("{} to {}", sig_label(a, 3), sig_label(b, 3))
            };
            let finite = s.points.iter().filter(|p| p.1.is_finite()).count();
            notes.push(if off.len() == finite {
                format!("{} ({values})", s.label)
            } else {
                let xs: Vec<String> = off.iter().map(|p| sig_label(p.0, 3)).collect();
                format!("{} at x = {} ({values})", s.label, xs.join(", "))
            });
        }
        if notes.is_empty() {
            return;
        }
        self.y_range = Some((lo, hi));
        self.title = format!("{} — off the axis: {}", self.title, notes.join("; "));
    }
}

/// `fig` with each series that would be drawn on top of an earlier one (the same x values,
/// every y within 0.8% of the y axis's height (4 pixels, two line widths) of the other's, neither with intervals) kept
/// with its own legend entry that says so ("coincides with …"), drawn dashed and with its own
/// marker shape over the first, so no legend entry names a curve that cannot be told apart.
fn mark_coinciding(fig: &Figure, plan: &Plan) -> Figure {
    let at = |y: f64| match fig.y_scale {
        Scale::Linear => (y - plan.y.0) / (plan.y.1 - plan.y.0),
        Scale::Log => {
            (libm::log(y) - libm::log(plan.y.0)) / (libm::log(plan.y.1) - libm::log(plan.y.0))
        }
    };
    let close = |a: &Series, b: &Series| {
        a.errors.is_none()
            && b.errors.is_none()
            && a.scatter == b.scatter
            && !a.style.context
            && !b.style.context
            && a.points.len() == b.points.len()
            && a.points.iter().zip(&b.points).all(|(p, q)| {
                p.0 == q.0
                    && (p.1 == q.1
                        || (valid(p.1, fig.y_scale)
                            && valid(q.1, fig.y_scale)
                            && (at(p.1) - at(q.1)).abs() <= 0.008))
            })
    };
    const SHAPES: [Marker; 3] = [Marker::Triangle, Marker::Square, Marker::Cross];
    let mut out: Vec<Series> = Vec::new();
    // Per series, how many coincide with it, and whether it coincides with an earlier one.
    let mut followers: Vec<usize> = vec![0; fig.series.len()];
    let mut follows: Vec<bool> = Vec::new();
    for s in &fig.series {
        let mut s = s.clone();
        let leader = (0..out.len()).find(|&k| !follows[k] && close(&out[k], &s));
        follows.push(leader.is_some());
        if let Some(k) = leader {
            let n = followers[k];
            followers[k] += 1;
            s.label = format!("{} (coincides with {})", s.label, out[k].label);
            s.style.dashed = true;
            s.style.marker = SHAPES[n % SHAPES.len()];
        }
        out.push(s);
    }
    Figure {
        series: out,
        ..fig.clone()
    }
}

/// Size of both outputs in pixels.
const SIZE: (u32, u32) = (1024, 640);
pub(crate) const FONT: &str = "sans-serif";
/// matplotlib's "tab10" colours and two more (black, maroon), so that up to 12 series (the
/// DP-SGD benchmark draws ten tuners and a reference) never share a colour; cycled beyond.
pub const COLORS: [(u8, u8, u8); 12] = [
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
    (188, 189, 34),
    (23, 190, 207),
    (0, 0, 0),
    (128, 0, 0),
];
/// The palette's red, for what a paper draws in red.
pub const RED: (u8, u8, u8) = COLORS[3];
#[cfg(feature = "harness")]
const PALETTE: [RGBColor; 12] = {
    let mut out = [RGBColor(0, 0, 0); 12];
    let mut i = 0;
    while i < 12 {
        out[i] = RGBColor(COLORS[i].0, COLORS[i].1, COLORS[i].2);
        i += 1;
    }
    out
};

/// Without the `harness` feature dptune draws no figure: asking for one is an error that says so.
#[cfg(not(feature = "harness"))]
pub fn draw(_fig: &Figure, stem: &Path) -> Result<Vec<PathBuf>> {
    Err(fail(
        stem,
        "this dptune was built without its `harness` feature",
    ))
}

/// Draws `fig` to `<stem>.png` (1024×640) and `<stem>.svg`; returns both paths.
///
/// `<stem>` gets the extension appended (`runs/fig.v1` → `runs/fig.v1.png`); the parent directory
/// is created if missing. Fails, naming the file, when the figure has no drawable point, an axis
/// limit is unusable, error bars and points differ in number, or a file cannot be written.
#[cfg(feature = "harness")]
pub fn draw(fig: &Figure, stem: &Path) -> Result<Vec<PathBuf>> {
    let plan = Plan::new(fig, stem)?;
    let marked = mark_coinciding(fig, &plan);
    let fig = &marked;
    let (png, svg) = outputs(stem)?;
    let layout = Layout::new(fig, &plan, SIZE).map_err(|e| fail(stem, e))?;
    write_both(
        &png,
        &svg,
        SIZE,
        |area| render(area, fig, &plan, &layout),
        |area| render(area, fig, &plan, &layout),
    )?;
    Ok(vec![png, svg])
}

/// The panels of `fig`, one per series: it in its palette colour with its intervals, the
/// others thin and grey behind it, titled by it (no legend: the figure's title says so).
pub fn panel_per_series(fig: &Figure) -> Vec<Figure> {
    (0..fig.series.len())
        .map(|k| {
            // Each series keeps its place, so its palette colour is the same in every panel.
            let series = (fig.series.iter().enumerate())
                .map(|(i, s)| match i == k {
                    true => Series {
                        label: String::new(),
                        ..s.clone()
                    },
                    false => Series {
                        label: String::new(),
                        errors: None,
                        style: Style {
                            context: true,
                            ..Style::default()
                        },
                        ..s.clone()
                    },
                })
                .collect();
            Figure {
                title: fig.series[k].label.clone(),
                series,
                ..fig.clone()
            }
        })
        .collect()
}

/// Size of one panel of a multi-panel figure, in pixels.
const PANEL: (u32, u32) = (720, 450);

/// Draws `panels` side by side, `columns` to a row, under one `title`, to `<stem>.png` and
/// `<stem>.svg` (each panel 720 × 450 pixels, a figure of its own with its title, axes and
/// legend); the panels share the axes' limits (those of all their points) unless one sets
/// its own. Fails as [`draw`] does.
#[cfg(feature = "harness")]
pub fn draw_panels(
    title: &str,
    panels: &[Figure],
    columns: usize,
    stem: &Path,
) -> Result<Vec<PathBuf>> {
    let Some(first) = panels.first() else {
        return Err(fail(stem, "nothing to draw: no panel"));
    };
    let columns = columns.clamp(1, panels.len());
    let rows = panels.len().div_ceil(columns);
    let all = Figure {
        series: panels.iter().flat_map(|p| p.series.clone()).collect(),
        hline: panels.iter().find_map(|p| p.hline.clone()),
        ..first.clone()
    };
    let (png, svg) = outputs(stem)?;
    let shared = Plan::new(&all, stem)?;
    let mut planned = Vec::new();
    for p in panels {
        let p = Figure {
            x_range: p.x_range.or(Some(shared.x)),
            y_range: p.y_range.or(Some(shared.y)),
            ..p.clone()
        };
        let plan = Plan::new(&p, stem)?;
        let p = mark_coinciding(&p, &plan);
        let layout = Layout::new(&p, &plan, PANEL).map_err(|e| fail(stem, e))?;
        planned.push((p, plan, layout));
    }
    let width = PANEL.0 * columns as u32;
    let words: Vec<&str> = title.split_whitespace().collect();
    let title_size = largest_size(TITLE_SIZE, |size| {
        let mut widths = words.iter().map(|word| text_width(word, size));
        widths.try_fold(true, |ok, w| Ok(ok && w? <= width - 2 * MARGIN))
    })
    .map_err(|e| fail(stem, e))?;
    let lines = wrap(title, title_size, width - 2 * MARGIN).map_err(|e| fail(stem, e))?;
    let title_h = MARGIN + lines.len() as u32 * line_height(title_size) as u32 + 6;
    let size = (width, title_h + PANEL.1 * rows as u32);
    let heading = (lines.as_slice(), title_size, title_h);
    write_both(
        &png,
        &svg,
        size,
        |a| render_panels(a, heading, &planned, (rows, columns)),
        |a| render_panels(a, heading, &planned, (rows, columns)),
    )?;
    Ok(vec![png, svg])
}

/// Draws a multi-panel figure: the title's lines, font size and band height, then the
/// panels in a grid of (rows, columns).
#[cfg(feature = "harness")]
fn render_panels<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    (lines, title_size, title_h): (&[String], f64, u32),
    panels: &[(Figure, Plan, Layout)],
    grid: (usize, usize),
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let (head, body) = root.split_vertically(title_h);
    let style = TextStyle::from(font(title_size))
        .pos(Pos::new(HPos::Center, VPos::Top))
        .color(&BLACK);
    let centre = head.dim_in_pixel().0 as i32 / 2;
    for (i, line) in lines.iter().enumerate() {
        let at = (centre, MARGIN as i32 + i as i32 * line_height(title_size));
        head.draw(&Text::new(line.as_str(), at, style.clone()))?;
    }
    let cells = body.split_evenly(grid);
    for ((p, plan, layout), cell) in panels.iter().zip(&cells) {
        render_into(cell, p, plan, layout)?;
    }
    root.present()
}

/// Without the `harness` feature dptune draws no figure.
#[cfg(not(feature = "harness"))]
pub fn draw_panels(_: &str, _: &[Figure], _: usize, stem: &Path) -> Result<Vec<PathBuf>> {
    draw(&Figure::new("", "", "", vec![]), stem)
}

/// Removes the PNG temporaries of `name` left in `dir` by killed processes of this host (never
/// a live one's nor another host's). The store's cleanup does not see them: their name ends in
/// `.png`, which the bitmap backend needs, not `.tmp`.
#[cfg(feature = "harness")]
fn remove_dead_png_temporaries(dir: &Path, name: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let prefix = format!(".{name}.");
    for e in entries.flatten() {
        let file_name = e.file_name().to_string_lossy().into_owned();
        if let Some(temporary) = file_name.strip_suffix(".png") {
            if temporary.starts_with(&prefix) && super::output::is_dead_temporary(temporary) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

/// Draws one figure to `png` and `svg` without writing through whatever is at those paths:
/// the SVG is drawn into a string and the PNG into a temporary file beside it, and each then
/// replaces its path by a rename (atomic; a link of that name is replaced, never followed).
#[cfg(feature = "harness")]
pub(crate) fn write_both<E1: std::fmt::Display, E2: std::fmt::Display>(
    png: &Path,
    svg: &Path,
    size: (u32, u32),
    bitmap: impl FnOnce(DrawingArea<BitMapBackend<'_>, Shift>) -> std::result::Result<(), E1>,
    vector: impl FnOnce(DrawingArea<SVGBackend<'_>, Shift>) -> std::result::Result<(), E2>,
) -> Result<()> {
    let dir = png.parent().unwrap_or(Path::new("."));
    let name = png.file_name().unwrap_or_default().to_string_lossy();
    // Named by host and process, as every temporary of a run is (folders may be shared by the
    // nodes of a cluster); the extension stays last: the bitmap backend picks its encoder by it.
    let tmp = dir.join(format!(
        ".{name}.{}~{}.tmp.png",
        super::output::hostname(),
        std::process::id()
    ));
    remove_dead_png_temporaries(dir, &name);
    let _ = std::fs::remove_file(&tmp);
    let drawn = bitmap(BitMapBackend::new(&tmp, size).into_drawing_area())
        .map_err(|e| fail(png, e))
        .and_then(|()| super::output::keep_user_file(png))
        .and_then(|()| std::fs::rename(&tmp, png).map_err(|e| fail(png, e)));
    if drawn.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    drawn?;
    let mut text = String::new();
    vector(SVGBackend::with_string(&mut text, size).into_drawing_area())
        .map_err(|e| fail(svg, e))?;
    super::output::write_text(svg, &text)
}

/// `<stem>.png` and `<stem>.svg`, with the font registered and the folder created.
#[cfg(feature = "harness")]
pub(crate) fn outputs(stem: &Path) -> Result<(PathBuf, PathBuf)> {
    register_font(stem)?;
    if let Some(dir) = stem.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| fail(dir, format!("cannot create directory: {e}")))?;
    }
    let with_ext = |ext: &str| {
        let mut name = stem.as_os_str().to_owned();
        name.push(ext);
        PathBuf::from(name)
    };
    Ok((with_ext(".png"), with_ext(".svg")))
}

fn fail(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::io(path, format!("cannot draw the plot: {e}"))
}

/// With the `ab_glyph` text backend there are no system fonts: register the embedded one once.
#[cfg(feature = "harness")]
pub(crate) fn register_font(stem: &Path) -> Result<()> {
    static OK: OnceLock<bool> = OnceLock::new();
    let ok = *OK.get_or_init(|| {
        plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular()).is_ok()
    });
    ok.then_some(())
        .ok_or_else(|| fail(stem, "the embedded DejaVu Sans font could not be loaded"))
}

fn valid(v: f64, scale: Scale) -> bool {
    v.is_finite() && (scale == Scale::Linear || v > 0.0)
}

fn inside(v: f64, (lo, hi): (f64, f64)) -> bool {
    v >= lo && v <= hi
}

/// Whether plotters can lay out an axis over (lo, hi): an infinite span (or, on a log axis, an
/// infinite ratio hi/lo) sends its tick search into an endless loop.
fn usable(lo: f64, hi: f64, scale: Scale) -> bool {
    let span = match scale {
        Scale::Linear => hi - lo,
        Scale::Log => hi / lo,
    };
    valid(lo, scale) && valid(hi, scale) && lo < hi && span.is_finite()
}

/// Axis limits: the given ones, checked, or the data's extent plus a 5% margin (None: no data).
fn limits(
    given: Option<(f64, f64)>,
    scale: Scale,
    values: impl Iterator<Item = f64>,
    axis: &str,
    stem: &Path,
) -> Result<Option<(f64, f64)>> {
    if let Some((lo, hi)) = given {
        if usable(lo, hi, scale) {
            return Ok(Some((lo, hi)));
        }
        let need = match scale {
            Scale::Log => "0 < lo < hi, finite, hi/lo finite",
            Scale::Linear => "lo < hi, finite, hi - lo finite",
        };
        let (lo, hi) = (fmt_num(lo), fmt_num(hi));
        let msg = format!("{axis} range ({lo}, {hi}) is invalid: must be {need}");
        return Err(fail(stem, msg));
    }
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|&v| valid(v, scale)) {
        (lo, hi) = (lo.min(v), hi.max(v));
    }
    if lo > hi {
        return Ok(None);
    }
    let padded = match scale {
        Scale::Linear => {
            let pad = match hi - lo {
                span if span > 0.0 => 0.05 * span,
                _ if lo == 0.0 => 1.0,
                _ => 0.1 * lo.abs(),
            };
            (lo - pad, hi + pad)
        }
        Scale::Log => {
            let (l, h) = (libm::log(lo), libm::log(hi));
            let pad = if h > l {
                0.05 * (h - l)
            } else {
                std::f64::consts::LN_2
            };
            (libm::exp(l - pad), libm::exp(h + pad))
        }
    };
    match [padded, (lo, hi)]
        .into_iter()
        .find(|&(a, b)| usable(a, b, scale))
    {
        Some(r) => Ok(Some(r)),
        None => Err(fail(
            stem,
            format!(
                "{axis} values from {} to {} cannot be scaled to an axis",
                fmt_num(lo),
                fmt_num(hi)
            ),
        )),
    }
}

/// The axis limits, decided before drawing.
struct Plan {
    x: (f64, f64),
    y: (f64, f64),
}

impl Plan {
    fn new(fig: &Figure, stem: &Path) -> Result<Plan> {
        let (xs, ys) = (fig.x_scale, fig.y_scale);
        for s in &fig.series {
            if let Some(e) = s.errors.as_ref().filter(|e| e.len() != s.points.len()) {
                let (n, m) = (e.len(), s.points.len());
                return Err(fail(
                    stem,
                    format!("series '{}' has {n} error bars for {m} points", s.label),
                ));
            }
        }
        let all = || fig.series.iter().flat_map(|s| s.points.iter().copied());
        let usable = |(x, y): (f64, f64)| valid(x, xs) && valid(y, ys);
        let y_ok = |y: f64| fig.y_range.is_none_or(|r| inside(y, r));
        let x = limits(
            fig.x_range,
            xs,
            all().filter(|&p| usable(p) && y_ok(p.1)).map(|p| p.0),
            "x",
            stem,
        )?;
        let empty = || {
            fail(
                stem,
                "nothing to draw: no finite point inside the axis limits",
            )
        };
        let x = x.ok_or_else(empty)?;
        let in_x = |(px, py): (f64, f64)| usable((px, py)) && inside(px, x);
        let bars = fig.series.iter().flat_map(|s| {
            let errs = s.errors.iter().flatten().copied();
            s.points
                .iter()
                .zip(errs)
                .filter(|&(&p, (lo, hi))| in_x(p) && valid(lo, ys) && valid(hi, ys))
                .flat_map(|(_, (lo, hi))| [lo, hi])
        });
        let extra = fig.hline.iter().map(|h| h.0);
        let ys_data = all().filter(|&p| in_x(p)).map(|p| p.1);
        let y = limits(fig.y_range, ys, ys_data.chain(bars).chain(extra), "y", stem)?
            .ok_or_else(empty)?;
        if !all().any(|(px, py)| in_x((px, py)) && inside(py, y)) {
            return Err(empty());
        }
        Ok(Plan { x, y })
    }
}

/// Margin around the whole figure, in pixels.
const MARGIN: u32 = 18;
/// Largest and smallest font sizes (plotters' pixel size) of the title, legend and axis labels.
const TITLE_SIZE: f64 = 26.0;
const LEGEND_SIZE: f64 = 15.0;
const DESC_SIZE: f64 = 18.0;
const MIN_SIZE: f64 = 9.0;
/// Pixel sizes around the chart: space above the plotting area, right of it (for the last x tick
/// label), below it (x tick labels and the x label) and left of it (y tick labels and the y label).
const CHART_TOP: u32 = 8;
const CHART_RIGHT: u32 = 22;
const X_LABEL_AREA: u32 = 56;
const Y_LABEL_AREA: u32 = 80;
/// Legend column: at most this fraction of the figure's width; gap to the chart, inner padding,
/// length of a line sample and the gap between the sample and the label.
const LEGEND_MAX_FRAC: f64 = 0.3;
const LEGEND_GAP: i32 = 10;
const LEGEND_PAD: i32 = 10;
const SAMPLE: i32 = 26;
const SAMPLE_GAP: i32 = 8;
/// Space between legend entries, in pixels.
const ENTRY_GAP: i32 = 4;

/// How a legend entry shows its curve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mark {
    /// A line with a marker (an ordinary series).
    Line,
    /// A marker alone (a scatter series).
    Dot,
    /// A black dashed line (the reference line).
    Dashed,
}

/// The colour of series `i`: its own, grey for a context line, else the palette's.
#[cfg(feature = "harness")]
fn color_of(s: &Series, i: usize) -> RGBColor {
    match (s.style.color, s.style.context) {
        (Some((r, g, b)), _) => RGBColor(r, g, b),
        (None, true) => RGBColor(175, 175, 175),
        (None, false) => PALETTE[i % PALETTE.len()],
    }
}

/// One legend entry: its label wrapped into lines, its mark and colour.
#[cfg(feature = "harness")]
struct Entry {
    lines: Vec<String>,
    mark: Mark,
    color: RGBColor,
    marker: Marker,
    dashed: bool,
}

/// Text placement decided before drawing, the same for the PNG and the SVG: the title wrapped to
/// the figure's width, the legend column right of the chart and the axis labels' font size.
#[cfg(feature = "harness")]
struct Layout {
    title: Vec<String>,
    title_size: f64,
    /// Height of the title band (0 without a title).
    title_h: u32,
    entries: Vec<Entry>,
    legend_size: f64,
    /// Width of the legend column, gap to the chart included (0 without entries).
    legend_w: u32,
    desc_size: f64,
}

#[cfg(feature = "harness")]
fn font(size: f64) -> FontDesc<'static> {
    FontDesc::new(FontFamily::Name(FONT), size, FontStyle::Normal)
}

/// Height of one line of text at font size `size`.
#[cfg(feature = "harness")]
fn line_height(size: f64) -> i32 {
    (size * 1.25).ceil() as i32
}

/// Rendered width of `text` at font size `size`, in pixels, as the PNG draws it. The SVG gets
/// `font-size` size / 1.24 (an em), the PNG's glyphs are size / 1.16 em (DejaVu's ascent plus
/// descent is 1.16 em), so with the same font the SVG's text is about 6% narrower still.
#[cfg(feature = "harness")]
fn text_width(text: &str, size: f64) -> std::result::Result<u32, String> {
    font(size)
        .box_size(text)
        .map(|(w, _)| w)
        .map_err(|e| format!("cannot measure text {text:?}: {e}"))
}

/// `text` split at spaces into lines no wider than `max_w` at font size `size`; a word wider than
/// a line is itself broken between characters.
#[cfg(feature = "harness")]
fn wrap(text: &str, size: f64, max_w: u32) -> std::result::Result<Vec<String>, String> {
    let fits = |s: &str| text_width(s, size).map(|w| w <= max_w);
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let mut pieces = Vec::new();
        if fits(word)? {
            pieces.push(word.to_string());
        } else {
            let mut piece = String::new();
            for c in word.chars() {
                piece.push(c);
                if piece.chars().count() > 1 && !fits(&piece)? {
                    piece.pop();
                    pieces.push(std::mem::take(&mut piece));
                    piece.push(c);
                }
            }
            pieces.push(piece);
        }
        for piece in pieces {
            if line.is_empty() {
                line = piece;
            } else if fits(&format!("{line} {piece}"))? {
                line = format!("{line} {piece}");
            } else {
                lines.push(std::mem::replace(&mut line, piece));
            }
        }
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    Ok(lines)
}

/// Largest font size from `start` down to `MIN_SIZE` (in steps of 1) at which `ok` holds, else
/// `MIN_SIZE`.
#[cfg(feature = "harness")]
fn largest_size(
    start: f64,
    mut ok: impl FnMut(f64) -> std::result::Result<bool, String>,
) -> std::result::Result<f64, String> {
    let mut size = start;
    while size > MIN_SIZE {
        if ok(size)? {
            return Ok(size);
        }
        size -= 1.0;
    }
    Ok(MIN_SIZE)
}

#[cfg(feature = "harness")]
impl Layout {
    fn new(fig: &Figure, plan: &Plan, size: (u32, u32)) -> std::result::Result<Layout, String> {
        let (w, h) = (size.0 as f64, size.1 as f64);
        let inner_w = size.0 - 2 * MARGIN;
        // Title: the largest size (up to TITLE_SIZE) at which every word fits on a line, wrapped.
        let words: Vec<&str> = fig.title.split_whitespace().collect();
        let title_size = largest_size(TITLE_SIZE, |size| {
            let mut widths = words.iter().map(|word| text_width(word, size));
            widths.try_fold(true, |ok, w| Ok(ok && w? <= inner_w))
        })?;
        let title = match words.is_empty() {
            true => vec![],
            false => wrap(&fig.title, title_size, inner_w)?,
        };
        let title_h = match title.len() {
            0 => 0,
            n => n as u32 * line_height(title_size) as u32 + 6,
        };

        // A path's entry says how its order is marked.
        let labels: Vec<String> = (fig.series.iter())
            .map(|s| match s.style.path {
                true => format!("{} (○ start, ■ end)", s.label),
                false => s.label.clone(),
            })
            .collect();
        let mut entries: Vec<(&str, Mark, RGBColor, Marker, bool)> = (fig.series.iter())
            .enumerate()
            .filter(|(_, s)| !s.style.context && !s.label.is_empty())
            .map(|(i, s)| {
                let mark = if s.scatter { Mark::Dot } else { Mark::Line };
                let style = (s.style.marker, s.style.dashed);
                (labels[i].as_str(), mark, color_of(s, i), style.0, style.1)
            })
            .collect();
        if let Some((_, label)) = drawn_hline(fig, plan) {
            entries.push((label.as_str(), Mark::Dashed, BLACK, Marker::Circle, true));
        }
        // Legend: labels wrapped to the column's width limit, the font shrunk until all entries
        // fit the column's height.
        let fixed = LEGEND_GAP + 2 * LEGEND_PAD + SAMPLE + SAMPLE_GAP + 2;
        let max_label_w = ((LEGEND_MAX_FRAC * w) as i32 - fixed).max(40) as u32;
        let avail_h = h as i32 - 2 * MARGIN as i32 - title_h as i32 - CHART_TOP as i32;
        let lay_out = |size: f64| -> std::result::Result<(Vec<Entry>, i32, u32), String> {
            let mut natural = 0;
            for (label, ..) in &entries {
                natural = natural.max(text_width(label, size)?);
            }
            let label_w = natural.min(max_label_w);
            let mut wrapped = Vec::new();
            for &(label, mark, color, marker, dashed) in &entries {
                let lines = wrap(label, size, label_w)?;
                wrapped.push(Entry {
                    lines,
                    mark,
                    color,
                    marker,
                    dashed,
                });
            }
            let widest = (wrapped.iter().flat_map(|e| &e.lines))
                .map(|l| text_width(l, size))
                .try_fold(0, |m, w| w.map(|w| w.max(m)))?;
            let height = legend_height(&wrapped, size);
            Ok((wrapped, height, widest))
        };
        let legend_size = largest_size(LEGEND_SIZE, |size| Ok(lay_out(size)?.1 <= avail_h))?;
        let (entries, _, widest) = lay_out(legend_size)?;
        let legend_w = match entries.is_empty() {
            true => 0,
            false => (fixed as u32 + widest).min((LEGEND_MAX_FRAC * w) as u32),
        };

        // Axis labels: shrunk (never below MIN_SIZE) until each fits along its axis.
        let plot_w = (size.0 - 2 * MARGIN - legend_w - CHART_RIGHT - Y_LABEL_AREA) as i32;
        let plot_h = avail_h - X_LABEL_AREA as i32;
        let desc_size = largest_size(DESC_SIZE, |size| {
            let x_ok = text_width(&fig.x_label, size)? as i32 <= plot_w;
            Ok(x_ok && text_width(&fig.y_label, size)? as i32 <= plot_h)
        })?;
        Ok(Layout {
            title,
            title_size,
            title_h,
            entries,
            legend_size,
            legend_w,
            desc_size,
        })
    }
}

/// Height of a legend box holding `entries` at font size `size`.
#[cfg(feature = "harness")]
fn legend_height(entries: &[Entry], size: f64) -> i32 {
    let lines: usize = entries.iter().map(|e| e.lines.len()).sum();
    let gaps = entries.len().saturating_sub(1) as i32 * ENTRY_GAP;
    2 * LEGEND_PAD + lines as i32 * line_height(size) + gaps
}

/// The reference line, if it is valid and inside the y limits.
fn drawn_hline<'f>(fig: &'f Figure, plan: &Plan) -> Option<&'f (f64, String)> {
    (fig.hline.as_ref()).filter(|(v, _)| valid(*v, fig.y_scale) && inside(*v, plan.y))
}

/// `v` rounded to `digits` significant digits, without trailing zeros: 0.6, 20, 1000, 2e-5.
pub(crate) fn sig_label(v: f64, digits: usize) -> String {
    let trim = |s: String| match s.contains('.') {
        true => s.trim_end_matches('0').trim_end_matches('.').to_string(),
        false => s,
    };
    let a = v.abs();
    if a == 0.0 || !a.is_finite() {
        return format!("{v}");
    }
    let digits = digits.max(1);
    if (1e-3..1e5).contains(&a) {
        let decimals = (digits as i32 - 1 - libm::log10(a).floor() as i32).max(0) as usize;
        trim(format!("{v:.decimals$}"))
    } else {
        let s = format!("{v:.prec$e}", prec = digits - 1);
        let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
        format!("{}e{exp}", trim(mantissa.to_string()))
    }
}

/// `v`, or 0 where it is within 1e-9 of the axis span `(lo, hi)` from zero (float noise).
fn snap_zero(v: f64, (lo, hi): (f64, f64)) -> f64 {
    match v.abs() <= 1e-9 * (hi - lo).abs() {
        true => 0.0,
        false => v,
    }
}

/// The fewest significant digits (at least 1, at most 15) with which every tick's label reads
/// back as the tick and no two labels are equal.
pub(crate) fn tick_digits(ticks: &[f64]) -> usize {
    (1..=15)
        .find(|&d| {
            let labels: Vec<String> = ticks.iter().map(|&t| sig_label(t, d)).collect();
            let exact = ticks.iter().zip(&labels).all(|(&t, l)| {
                l.parse::<f64>()
                    .is_ok_and(|v| (v - t).abs() <= 1e-9 * t.abs())
            });
            exact && labels.windows(2).all(|w| w[0] != w[1])
        })
        .unwrap_or(15)
}

/// Tick values for a log axis over (lo, hi): powers of ten (every few decades on a long axis),
/// else their 1-2-5 multiples, else their 1..9 multiples, whichever first gives 3 ticks or more;
/// on an axis too short for those (hi/lo below about 1.3), evenly spaced round values.
pub(crate) fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let (e0, e1) = (
        libm::log10(lo).floor() as i32,
        libm::log10(hi).ceil() as i32,
    );
    let step = ((e1 - e0) as u32).div_ceil(8).max(1) as i32;
    let in_range = |v: &f64| *v >= lo * (1.0 - 1e-12) && *v <= hi * (1.0 + 1e-12);
    let sets: [(&[u32], i32); 3] = [
        (&[1], step),
        (&[1, 2, 5], 1),
        (&[1, 2, 3, 4, 5, 6, 7, 8, 9], 1),
    ];
    for (mantissas, step) in sets {
        let ticks: Vec<f64> = (e0..=e1)
            .filter(|e| e.rem_euclid(step) == 0)
            .flat_map(|e| mantissas.iter().map(move |m| format!("{m}e{e}")))
            .filter_map(|s| s.parse::<f64>().ok())
            .filter(in_range)
            .collect();
        if ticks.len() >= 3 {
            return ticks;
        }
    }
    linear_ticks(lo, hi)
}

/// At least 3 evenly spaced round values (multiples of 1, 2 or 5 times a power of ten) in
/// [lo, hi], lo < hi: the widest such spacing.
pub(crate) fn linear_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let k = libm::log10(hi - lo).floor() as i32;
    for e in [k, k - 1, k - 2] {
        for m in [5.0, 2.0, 1.0] {
            let step = m * 10f64.powi(e);
            let (first, last) = ((lo / step).ceil(), (hi / step).floor());
            if last - first >= 2.0 && last - first < 1000.0 {
                let mut ticks: Vec<f64> = (0..=(last - first) as usize)
                    .map(|i| (first + i as f64) * step)
                    .filter(|v| *v >= lo && *v <= hi)
                    .collect();
                ticks.dedup();
                if ticks.len() >= 3 {
                    return ticks;
                }
            }
        }
    }
    vec![lo, hi]
}

/// Fills the area, lays out title, chart and legend, draws them and writes the file.
#[cfg(feature = "harness")]
fn render<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    fig: &Figure,
    plan: &Plan,
    layout: &Layout,
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    render_into(&root, fig, plan, layout)?;
    root.present()
}

/// Draws title, chart and legend of `fig` into `root` (the whole figure or one panel).
#[cfg(feature = "harness")]
fn render_into<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    fig: &Figure,
    plan: &Plan,
    layout: &Layout,
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let inner = root.margin(MARGIN, MARGIN, MARGIN, MARGIN);
    let (title_area, body) = inner.split_vertically(layout.title_h);
    let title_style = TextStyle::from(font(layout.title_size))
        .pos(Pos::new(HPos::Center, VPos::Top))
        .color(&BLACK);
    let centre = title_area.dim_in_pixel().0 as i32 / 2;
    for (i, line) in layout.title.iter().enumerate() {
        let y = i as i32 * line_height(layout.title_size);
        title_area.draw(&Text::new(line.as_str(), (centre, y), title_style.clone()))?;
    }
    let width = body.dim_in_pixel().0;
    let (chart_area, legend_area) = body.split_horizontally(width - layout.legend_w);

    let ((x0, x1), (y0, y1)) = (plan.x, plan.y);
    let log_ticks = |(lo, hi), scale| match scale {
        Scale::Log => log_ticks(lo, hi),
        Scale::Linear => vec![],
    };
    // A log x axis over a few distinct values (budgets 1, 2, 4, 8) is ticked at those values.
    let xt = match few_x_values(fig, plan) {
        Some(values) if fig.x_scale == Scale::Log => values,
        _ => log_ticks(plan.x, fig.x_scale),
    };
    let yt = log_ticks(plan.y, fig.y_scale);
    let ticks = Ticks {
        x: (fig.x_scale == Scale::Log).then(|| tick_digits(&xt)),
        y: (fig.y_scale == Scale::Log).then(|| tick_digits(&yt)),
    };
    let (x_log, y_log) = (
        (x0..x1).log_scale().with_key_points(xt),
        (y0..y1).log_scale().with_key_points(yt),
    );
    let area = &chart_area;
    match (fig.x_scale, fig.y_scale) {
        (Scale::Linear, Scale::Linear) => chart(area, fig, plan, layout, ticks, x0..x1, y0..y1),
        (Scale::Linear, Scale::Log) => chart(area, fig, plan, layout, ticks, x0..x1, y_log),
        (Scale::Log, Scale::Linear) => chart(area, fig, plan, layout, ticks, x_log, y0..y1),
        (Scale::Log, Scale::Log) => chart(area, fig, plan, layout, ticks, x_log, y_log),
    }?;
    legend(&legend_area, layout)?;
    Ok(())
}

/// The distinct x values of the drawn points when there are 3 to [`FEW_X`] of them (in order).
fn few_x_values(fig: &Figure, plan: &Plan) -> Option<Vec<f64>> {
    let mut xs: Vec<f64> = (fig.series.iter().flat_map(|s| s.points.iter()))
        .filter(|&&(x, y)| {
            valid(x, fig.x_scale) && valid(y, fig.y_scale) && inside(x, plan.x) && inside(y, plan.y)
        })
        .map(|p| p.0)
        .collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    (3..=FEW_X).contains(&xs.len()).then_some(xs)
}

/// At most this many distinct x values are ticked at the values themselves.
const FEW_X: usize = 8;
/// From this many points on, a series' intervals are drawn as a band, not as bars at every
/// point (which hide the curves); from MARKERLESS on, its points without markers.
const BAND_MIN: usize = 8;
const MARKERLESS: usize = 16;

/// Significant digits of the tick labels on each log axis (None: a linear axis).
#[derive(Clone, Copy)]
struct Ticks {
    x: Option<usize>,
    y: Option<usize>,
}

#[allow(clippy::too_many_arguments)]
#[cfg(feature = "harness")]
fn chart<DB, X, Y>(
    area: &DrawingArea<DB, Shift>,
    fig: &Figure,
    plan: &Plan,
    layout: &Layout,
    ticks: Ticks,
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
    let mut chart = ChartBuilder::on(area)
        .margin_top(CHART_TOP)
        .margin_right(CHART_RIGHT)
        .x_label_area_size(X_LABEL_AREA)
        .y_label_area_size(Y_LABEL_AREA)
        .build_cartesian_2d(x_spec, y_spec)?;
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(fig.x_label.as_str())
        .y_desc(fig.y_label.as_str())
        .label_style((FONT, 15))
        .axis_desc_style(font(layout.desc_size))
        .bold_line_style(RGBColor(215, 215, 215))
        .light_line_style(RGBColor(242, 242, 242));
    // Log axes get their own ticks (plotters' miss spans under a decade) with short labels
    // (plotters prints `{:?}`, 0.6000000000000001) and no light lines.
    // Linear axes keep plotters' ticks, labelled without float noise or a trailing ".0"
    // (20, 0.3, not 20.0, 0.30000000000000004).
    // plotters steps its linear ticks in floating point, so the tick at zero can come out as
    // -5.5e-17: a tick within 1e-9 of the axis's span from zero is zero.
    let x_fmt = |v: &f64| match ticks.x {
        Some(digits) => sig_label(*v, digits),
        None => sig_label(snap_zero(*v, plan.x), 6),
    };
    let y_fmt = |v: &f64| match ticks.y {
        Some(digits) => sig_label(*v, digits),
        None => sig_label(snap_zero(*v, plan.y), 6),
    };
    mesh.x_label_formatter(&x_fmt).y_label_formatter(&y_fmt);
    if ticks.x.is_some() {
        mesh.x_max_light_lines(0);
    }
    if ticks.y.is_some() {
        mesh.y_max_light_lines(0);
    }
    mesh.draw()?;

    // Markers of a shape and size (pixels) at points.
    macro_rules! markers {
        ($points:expr, $shape:expr, $size:expr, $color:expr) => {{
            let (points, size, color): (Vec<(f64, f64)>, i32, RGBColor) =
                ($points.collect(), $size, $color);
            let at = |p| EmptyElement::at(p);
            match $shape {
                Marker::Circle => chart.draw_series(
                    points
                        .into_iter()
                        .map(|p| at(p) + Circle::new((0, 0), size, color.filled())),
                ),
                Marker::Triangle => chart.draw_series(
                    points
                        .into_iter()
                        .map(|p| at(p) + TriangleMarker::new((0, 0), size, color.filled())),
                ),
                Marker::Square => chart.draw_series(points.into_iter().map(|p| {
                    let r = size - 1;
                    at(p) + Rectangle::new([(-r, -r), (r, r)], color.filled())
                })),
                Marker::Cross | Marker::Star => chart.draw_series(
                    points
                        .into_iter()
                        .map(|p| at(p) + Cross::new((0, 0), size, color.stroke_width(2))),
                ),
            }?;
        }};
    }
    let (xs, ys) = (fig.x_scale, fig.y_scale);
    let drawable =
        |x: f64, y: f64| valid(x, xs) && valid(y, ys) && inside(x, plan.x) && inside(y, plan.y);
    // Context lines first, under the others.
    let mut order: Vec<usize> = (0..fig.series.len()).collect();
    order.sort_by_key(|&i| !fig.series[i].style.context);
    for i in order {
        let s = &fig.series[i];
        let color = color_of(s, i);
        let st = &s.style;
        if s.scatter {
            let size = if st.marker == Marker::Star { 9 } else { 3 };
            let dots = (s.points.iter().copied()).filter(|&(x, y)| drawable(x, y));
            markers!(dots, st.marker, size, color);
        } else {
            let band = match fig.intervals {
                Intervals::Auto => s.points.len() >= BAND_MIN,
                Intervals::Band => true,
                Intervals::Bars => false,
            };
            let marker: u32 = if s.points.len() >= MARKERLESS || st.context {
                0
            } else {
                3
            };
            let width = if st.path || st.context { 1 } else { 2 };
            // Contiguous runs of drawable points: a skipped point breaks the line.
            for run in s.points.split(|&(x, y)| !drawable(x, y)) {
                if run.is_empty() {
                    continue;
                }
                let stroke = color.stroke_width(width);
                if *st == Style::default() || (st.marker == Marker::Circle && st.context) {
                    // Plotters' own markers (the SVG as it has always been written).
                    let line =
                        LineSeries::new(run.iter().copied(), color.filled().stroke_width(width));
                    chart.draw_series(line.point_size(marker))?;
                    continue;
                }
                if st.dashed {
                    chart.draw_series(DashedLineSeries::new(run.iter().copied(), 7, 5, stroke))?;
                } else {
                    chart.draw_series(LineSeries::new(run.iter().copied(), stroke))?;
                }
                if marker > 0 {
                    let size = if st.marker == Marker::Circle {
                        marker
                    } else {
                        marker + 2
                    } as i32;
                    markers!(run.iter().copied(), st.marker, size, color);
                }
            }
            if st.path {
                let first = s.points.first().filter(|p| drawable(p.0, p.1));
                let last = s.points.last().filter(|p| drawable(p.0, p.1));
                let style = color.stroke_width(2);
                chart.draw_series(first.map(|&p| Circle::new(p, 7, style)))?;
                markers!(last.into_iter().copied(), Marker::Square, 6, color);
            }
            if st.context {
                continue;
            }
            if let Some(errors) = s.errors.as_ref().filter(|_| band) {
                // A translucent band over each contiguous run of drawable intervals.
                let clamp = |v: f64| v.clamp(plan.y.0, plan.y.1);
                let ok = |&(&(x, y), &(lo, hi)): &(&(f64, f64), &(f64, f64))| {
                    drawable(x, y) && valid(lo, ys) && valid(hi, ys)
                };
                let pairs: Vec<_> = s.points.iter().zip(errors).collect();
                for run in pairs.split(|p| !ok(p)) {
                    if run.len() < 2 {
                        continue;
                    }
                    let upper = run
                        .iter()
                        .map(|(&(x, _), &(lo, hi))| (x, clamp(lo.max(hi))));
                    let lower = run
                        .iter()
                        .rev()
                        .map(|(&(x, _), &(lo, hi))| (x, clamp(lo.min(hi))));
                    let outline: Vec<(f64, f64)> = upper.chain(lower).collect();
                    chart.draw_series(std::iter::once(Polygon::new(outline, color.mix(0.18))))?;
                }
                continue;
            }
        }
        if let Some(errors) = s.errors.as_ref().filter(|_| !st.context) {
            let bars = s
                .points
                .iter()
                .zip(errors)
                .filter_map(|(&(x, y), &(lo, hi))| {
                    let ok = drawable(x, y) && valid(lo, ys) && valid(hi, ys);
                    let (lo, hi) = (
                        lo.min(hi).clamp(plan.y.0, plan.y.1),
                        lo.max(hi).clamp(plan.y.0, plan.y.1),
                    );
                    ok.then(|| ErrorBar::new_vertical(x, lo, y, hi, color.stroke_width(1), 6))
                });
            chart.draw_series(bars)?;
        }
    }
    if let Some((v, _)) = drawn_hline(fig, plan) {
        chart.draw_series(DashedLineSeries::new(
            [(plan.x.0, *v), (plan.x.1, *v)],
            8,
            5,
            BLACK.stroke_width(1),
        ))?;
    }
    Ok(())
}

/// Draws the legend box at the top left of `area` (the column right of the chart).
#[cfg(feature = "harness")]
fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    layout: &Layout,
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    if layout.entries.is_empty() {
        return Ok(());
    }
    let size = layout.legend_size;
    let (left, top) = (LEGEND_GAP, CHART_TOP as i32);
    let right = area.dim_in_pixel().0 as i32 - 1;
    let bottom = top + legend_height(&layout.entries, size);
    area.draw(&Rectangle::new(
        [(left, top), (right, bottom)],
        WHITE.filled(),
    ))?;
    let border = RGBColor(120, 120, 120).stroke_width(1);
    area.draw(&Rectangle::new([(left, top), (right, bottom)], border))?;
    let text_style = TextStyle::from(font(size))
        .pos(Pos::new(HPos::Left, VPos::Center))
        .color(&BLACK);
    let line_h = line_height(size);
    let (x, text_x) = (left + LEGEND_PAD, left + LEGEND_PAD + SAMPLE + SAMPLE_GAP);
    let mut y = top + LEGEND_PAD + line_h / 2;
    for entry in &layout.entries {
        let color = entry.color;
        let mid = x + SAMPLE / 2;
        match entry.mark {
            Mark::Line => {
                let pieces: &[(i32, i32)] = match entry.dashed {
                    true => &[(0, 8), (13, SAMPLE)],
                    false => &[(0, SAMPLE)],
                };
                for &(a, b) in pieces {
                    let piece = vec![(x + a, y), (x + b, y)];
                    area.draw(&PathElement::new(piece, color.stroke_width(2)))?;
                }
                legend_marker(area, (mid, y), entry.marker, color)?;
            }
            Mark::Dot => legend_marker(area, (mid, y), entry.marker, color)?,
            Mark::Dashed => {
                let style = color.stroke_width(1);
                for (a, b) in [(0, 7), (10, 16), (19, SAMPLE)] {
                    area.draw(&PathElement::new(vec![(x + a, y), (x + b, y)], style))?;
                }
            }
        }
        for line in &entry.lines {
            area.draw(&Text::new(line.as_str(), (text_x, y), text_style.clone()))?;
            y += line_h;
        }
        y += ENTRY_GAP;
    }
    Ok(())
}

/// A legend entry's marker at pixel `p`.
#[cfg(feature = "harness")]
fn legend_marker<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    p: (i32, i32),
    shape: Marker,
    color: RGBColor,
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let size = if shape == Marker::Circle { 3 } else { 5 };
    match shape {
        Marker::Circle => area.draw(&Circle::new(p, size, color.filled())),
        Marker::Triangle => area.draw(&TriangleMarker::new(p, size, color.filled())),
        Marker::Square => area.draw(&Rectangle::new(
            [(p.0 - 4, p.1 - 4), (p.0 + 4, p.1 + 4)],
            color.filled(),
        )),
        Marker::Cross | Marker::Star => area.draw(&Cross::new(p, size, color.stroke_width(2))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory per test, so parallel tests never share files.
    fn temp_dir(name: &str) -> PathBuf {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let pid = std::process::id();
        std::env::temp_dir().join(format!("dptune-plot-{name}-{pid}-{nanos}"))
    }

    /// A curve as (label, points, error bars).
    type Curve<'a> = (&'a str, Vec<(f64, f64)>, Option<Vec<(f64, f64)>>);

    fn figure(series: Vec<Curve>) -> Figure {
        Figure {
            title: "Test figure".into(),
            x_label: "epsilon".into(),
            y_label: "loss".into(),
            x_scale: Scale::Linear,
            y_scale: Scale::Log,
            x_range: None,
            y_range: None,
            series: (series.into_iter())
                .map(|(label, points, errors)| Series {
                    label: label.into(),
                    points,
                    errors,
                    scatter: false,
                    style: Style::default(),
                })
                .collect(),
            hline: Some((0.05, "non-private best".into())),
            intervals: Intervals::Auto,
        }
    }

    /// Filled point markers of palette colour `i` in an SVG (the legend adds one).
    fn markers(svg: &str, i: usize) -> usize {
        let RGBColor(r, g, b) = PALETTE[i];
        svg.matches(&format!(
            r##"r="3" opacity="1" fill="#{r:02X}{g:02X}{b:02X}""##
        ))
        .count()
    }

    /// Line pieces (2 px polylines) of palette colour `i` in an SVG (the legend adds one).
    fn lines(svg: &str, i: usize) -> usize {
        let RGBColor(r, g, b) = PALETTE[i];
        let pat = format!(r##"stroke="#{r:02X}{g:02X}{b:02X}" stroke-width="2" points"##);
        svg.matches(&pat).count()
    }

    /// A text element of an SVG: position, anchor, font size (as written) and content.
    #[derive(Debug)]
    struct SvgText {
        x: f64,
        y: f64,
        anchor: String,
        size: f64,
        text: String,
    }

    /// The value of attribute `name` in an element's attribute list.
    fn attr<'a>(attrs: &'a str, name: &str) -> &'a str {
        let key = format!(" {name}=\"");
        let start = attrs.find(&key).expect("attribute present") + key.len();
        let len = attrs[start..].find('"').expect("closing quote");
        &attrs[start..start + len]
    }

    /// All text elements of an SVG, in drawing order.
    fn texts(svg: &str) -> Vec<SvgText> {
        svg.split("<text")
            .skip(1)
            .map(|chunk| {
                let (attrs, rest) = chunk.split_once('>').expect("text tag closes");
                let attrs = format!(" {attrs}");
                let num = |name: &str| attr(&attrs, name).parse::<f64>().unwrap();
                let (text, _) = rest.split_once("</text>").expect("text element closes");
                SvgText {
                    x: num("x"),
                    y: num("y"),
                    anchor: attr(&attrs, "text-anchor").to_string(),
                    size: num("font-size"),
                    text: text.trim().to_string(),
                }
            })
            .collect()
    }

    /// Largest x of the points of the 2 px polylines of palette colour `i` with more than 2
    /// points (the data's curves; the legend's sample has 2).
    fn curve_right_edge(svg: &str, i: usize) -> f64 {
        let RGBColor(r, g, b) = PALETTE[i];
        let pat = format!(r##"stroke="#{r:02X}{g:02X}{b:02X}" stroke-width="2" points=""##);
        svg.split(&pat)
            .skip(1)
            .map(|rest| rest.split('"').next().unwrap())
            .filter(|pts| pts.split_whitespace().count() > 2)
            .flat_map(|pts| pts.split_whitespace())
            .map(|p| p.split(',').next().unwrap().parse::<f64>().unwrap())
            .fold(f64::NEG_INFINITY, f64::max)
    }

    /// Width in pixels of an SVG text as the PNG draws it (SVG font sizes are plotters' / 1.24).
    fn drawn_width(t: &SvgText) -> f64 {
        register_font(Path::new("test")).unwrap();
        text_width(&t.text, t.size * 1.24).unwrap() as f64
    }

    #[test]
    fn drawing_removes_only_this_hosts_dead_png_temporaries_of_its_figure() {
        let dir = temp_dir("temporaries");
        std::fs::create_dir_all(&dir).unwrap();
        let host = crate::sim::output::hostname();
        // No process has a pid this large (Linux caps pids at 2^22); pid 1 is always alive.
        let dead = format!(".fig.png.{host}~999999999.tmp.png");
        let live = format!(".fig.png.{host}~1.tmp.png");
        let other_host = format!(".fig.png.{host}x~999999999.tmp.png");
        let other_figure = format!(".other.png.{host}~999999999.tmp.png");
        for name in [&dead, &live, &other_host, &other_figure] {
            std::fs::write(dir.join(name), b"left over").unwrap();
        }
        let fig = figure(vec![("curve", vec![(1.0, 0.5), (2.0, 0.25)], None)]);
        draw(&fig, &dir.join("fig")).expect("draws");
        assert!(!dir.join(&dead).exists());
        for kept in [&live, &other_host, &other_figure] {
            assert!(dir.join(kept).exists(), "{kept} was removed");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn scatter_series_draws_markers_without_lines() {
        let dir = temp_dir("scatter");
        let cloud = vec![(3.0, 0.2), (1.0, 0.9), (4.0, 0.1), (2.0, 0.5), (2.5, 0.3)];
        let errs = cloud.iter().map(|&(_, y)| (0.5 * y, 1.5 * y)).collect();
        let line = (1..=4).map(|i| (i as f64, 0.1 * i as f64)).collect();
        let mut fig = figure(vec![("cloud", cloud, Some(errs)), ("curve", line, None)]);
        fig.series[0].scatter = true;
        let paths = draw(&fig, &dir.join("scatter")).expect("draws");
        let svg = std::fs::read_to_string(&paths[1]).unwrap();
        // 5 markers plus the legend's, and no line at all in the scatter's colour, not even in
        // the legend; the line series keeps its one polyline plus the legend's sample.
        assert_eq!((markers(&svg, 0), lines(&svg, 0)), (6, 0));
        assert!(!svg.contains(r##"stroke="#1F77B4" stroke-width="2""##));
        assert_eq!((markers(&svg, 1), lines(&svg, 1)), (5, 2));
        // Error bars are still drawn: 3 one-pixel lines (bar and two caps) per point.
        let bar_lines = svg
            .matches(r##"stroke="#1F77B4" stroke-width="1" x1="##)
            .count();
        assert_eq!(bar_lines, 15);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_linear_tick_at_zero_is_labelled_zero() {
        // The Fashion-MNIST utility figure's y range: plotters stepped to -5.5112e-17.
        let dir = temp_dir("zero-tick");
        let points = vec![(1.0, 0.656), (2.0, 0.711), (4.0, 0.763), (8.0, 0.573)];
        let half = [0.027, 0.065, 0.015, 1.017];
        let bars = points.iter().zip(half).map(|(&(_, y), h)| (y - h, y + h));
        let errors = Some(bars.collect());
        let mut fig = figure(vec![("a", points, errors)]);
        fig.y_scale = Scale::Linear;
        fig.hline = None;
        let paths = draw(&fig, &dir.join("z")).expect("draws");
        let svg = std::fs::read_to_string(&paths[1]).unwrap();
        let labels: Vec<String> = texts(&svg).into_iter().map(|t| t.text).collect();
        assert!(labels.iter().any(|l| l == "0"), "{labels:?}");
        assert!(!labels.iter().any(|l| l.contains("e-1")), "{labels:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn long_title_is_wrapped_inside_the_figure() {
        let dir = temp_dir("title");
        let long = "Random-search tuners and private GP-UCB on synthetic GP objectives at \
                    equal (ε, 1e-6) budgets (d=10)";
        // A word too long for a line even at the smallest font size.
        let word = "x".repeat(300);
        for (k, title) in [long.to_string(), format!("A {word} title")]
            .iter()
            .enumerate()
        {
            let mut fig = figure(vec![("a", vec![(1.0, 1.0), (2.0, 2.0)], None)]);
            fig.title = title.clone();
            let paths = draw(&fig, &dir.join(format!("t{k}"))).expect("draws");
            let svg = std::fs::read_to_string(&paths[1]).unwrap();
            assert!(!svg.contains(&format!("\n{title}\n")), "title not wrapped");
            // The title's lines are the first texts drawn; together they are the whole title.
            let all = texts(&svg);
            let n = (1..=all.len())
                .find(|&n| {
                    let joined: Vec<&str> = all[..n].iter().map(|t| t.text.as_str()).collect();
                    joined.concat().replace(' ', "") == title.replace(' ', "")
                })
                .expect("the title's words, in order, at the start of the SVG");
            assert!(n >= 2, "one line for {title:?}");
            for t in &all[..n] {
                let w = drawn_width(t);
                assert_eq!(t.anchor, "middle");
                assert!(
                    t.x - w / 2.0 >= 0.0 && t.x + w / 2.0 <= 1024.0,
                    "{t:?} is {w} wide"
                );
                assert!(t.y >= 0.0 && t.y + t.size * 1.24 < 120.0, "{t:?}");
            }
            if k == 0 {
                // Every word fits a line: wrapped at the full size, not shrunk.
                assert!(all[..n].iter().all(|t| t.size == TITLE_SIZE / 1.24));
                assert!(all[..n].iter().all(|t| !t.text.contains("e-6) b")));
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn legend_is_right_of_the_plotting_area() {
        let dir = temp_dir("legend");
        // Curves over the whole plotting area, each reaching its right edge.
        let curve = |k: usize| {
            (0..=20)
                .map(|i| (i as f64 / 2.0, (1 + k) as f64 * (1.0 + i as f64)))
                .collect::<Vec<_>>()
        };
        for (k, n) in [2usize, 15].into_iter().enumerate() {
            let names: Vec<String> = (0..n)
                .map(|i| match i % 3 {
                    0 => format!("tuner {i}"),
                    1 => format!("private GP-UCB with a rather long description, variant {i}"),
                    _ => format!("Lipschitz-{i}-{}", "z".repeat(60)),
                })
                .collect();
            let curves = (0..n)
                .map(|i| (names[i].as_str(), curve(i), None))
                .collect();
            let mut fig = figure(curves);
            fig.x_range = Some((0.0, 10.0));
            // Linear: on a log axis tuners 13 and 14 would be drawn within 4 pixels (and
            // say they coincide).
            fig.y_scale = Scale::Linear;
            let paths = draw(&fig, &dir.join(format!("l{k}"))).expect("draws");
            let svg = std::fs::read_to_string(&paths[1]).unwrap();
            let right_edge = (0..n.min(PALETTE.len()))
                .map(|i| curve_right_edge(&svg, i))
                .fold(f64::NEG_INFINITY, f64::max);
            assert!(
                right_edge > 500.0,
                "curves found, reaching right: {right_edge}"
            );
            let all = texts(&svg);
            let labels: Vec<&SvgText> = all
                .iter()
                .filter(|t| t.anchor == "start" && t.size == all.last().unwrap().size)
                .collect();
            let squeeze = |s: String| s.split_whitespace().collect::<String>();
            let shown = labels.iter().map(|t| t.text.as_str()).collect::<Vec<_>>();
            let wanted = [names.clone(), vec!["non-private best".into()]].concat();
            assert_eq!(squeeze(shown.join(" ")), squeeze(wanted.join(" ")));
            if k == 1 {
                assert!(shown.len() > n + 1, "long labels are wrapped: {shown:?}");
            }
            for t in &labels {
                let w = drawn_width(t);
                assert!(t.x > right_edge + 10.0, "{t:?} is not right of the curves");
                assert!(
                    t.x + w <= 1024.0 - 18.0,
                    "{t:?} ({w} wide) leaves the figure"
                );
                assert!(t.y > 0.0 && t.y < 640.0 - 18.0, "{t:?} leaves the figure");
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_few_far_points_are_left_off_the_axis_and_named() {
        let near = |k: f64| vec![(1.0, 0.80 + k), (2.0, 0.81 + k), (4.0, 0.82 + k)];
        let mut fig = figure(vec![
            ("a", near(0.0), None),
            ("b", near(0.005), None),
            ("c", near(0.01), None),
            ("far", vec![(1.0, 0.25), (2.0, 0.3), (4.0, 0.81)], None),
        ]);
        fig.y_scale = Scale::Linear;
        // A reference line stays in sight: here it would keep the far points on the axis.
        let mut with_line = fig.clone();
        with_line.focus_on_the_bulk();
        assert_eq!(with_line.y_range, None);
        fig.hline = None;
        fig.focus_on_the_bulk();
        let (lo, hi) = fig.y_range.expect("focused");
        assert!(lo > 0.3 && lo < 0.8 && hi > 0.83, "{lo} {hi}");
        assert!(
            fig.title
                .ends_with("off the axis: far at x = 1, 2 (0.25 to 0.3)"),
            "{}",
            fig.title
        );
        // Nothing far: the figure is left as it was.
        let mut even = figure(vec![
            ("a", near(0.0), None),
            ("b", near(0.1), None),
            ("c", near(0.2), None),
        ]);
        even.y_scale = Scale::Linear;
        even.focus_on_the_bulk();
        assert_eq!((even.y_range, even.title.as_str()), (None, "Test figure"));
    }

    #[test]
    fn coinciding_series_keep_their_entries_and_say_so() {
        let pts = vec![(1.0, 2.0), (2.0, 3.0)];
        let mut fig = figure(vec![
            ("mean", pts.clone(), None),
            ("median", pts.clone(), None),
            ("q99", vec![(1.0, 2.001), (2.0, 3.0)], None),
            ("max", vec![(1.0, 4.0), (2.0, 5.0)], None),
        ]);
        fig.y_scale = Scale::Linear;
        let plan = Plan {
            x: (1.0, 2.0),
            y: (0.0, 10.0),
        };
        let marked = mark_coinciding(&fig, &plan);
        let labels: Vec<&str> = marked.series.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "mean",
                "median (coincides with mean)",
                "q99 (coincides with mean)",
                "max"
            ]
        );
        // Each follower dashed, with a marker shape of its own; the others as they were.
        let styles: Vec<(bool, Marker)> = (marked.series.iter())
            .map(|s| (s.style.dashed, s.style.marker))
            .collect();
        assert_eq!(
            styles,
            [
                (false, Marker::Circle),
                (true, Marker::Triangle),
                (true, Marker::Square),
                (false, Marker::Circle)
            ]
        );
        // 0.8% of the axis's height is the tolerance: 0.1 apart on a span of 10 is not close.
        let far = figure(vec![
            ("a", pts.clone(), None),
            ("b", vec![(1.0, 2.1), (2.0, 3.0)], None),
        ]);
        let far = Figure {
            y_scale: Scale::Linear,
            ..far
        };
        let labels: Vec<String> = (mark_coinciding(&far, &plan).series.into_iter())
            .map(|s| s.label)
            .collect();
        assert_eq!(labels, ["a", "b"]);
    }

    #[test]
    fn panels_share_axes_and_paths_mark_their_ends() {
        let dir = temp_dir("panels");
        let a = figure(vec![("a", vec![(1.0, 1.0), (2.0, 2.0)], None)]);
        let mut b = figure(vec![("b", vec![(1.0, 1.0), (3.0, 9.0)], None)]);
        b.series[0] = b.series[0].clone().path();
        let files = draw_panels("Two panels", &[a, b], 2, &dir.join("p")).expect("draws");
        let svg = std::fs::read_to_string(&files[1]).unwrap();
        assert!(
            svg.contains(r#"width="1440""#),
            "two panels of 720 px side by side"
        );
        assert!(
            svg.contains("b (○ start, ■ end)"),
            "a path's entry names its markers"
        );
        assert!(svg.contains("Two panels"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn many_intervals_are_a_band_and_few_are_bars() {
        let dir = temp_dir("bands");
        let pts = |n: usize| {
            (1..=n)
                .map(|i| (i as f64, 1.0 + i as f64))
                .collect::<Vec<_>>()
        };
        let bars = |n: usize| Some((1..=n).map(|i| (0.5 + i as f64, 1.5 + i as f64)).collect());
        for (n, band) in [(4, false), (12, true)] {
            let fig = figure(vec![("a", pts(n), bars(n))]);
            let paths = draw(&fig, &dir.join(format!("b{n}"))).expect("draws");
            let svg = std::fs::read_to_string(&paths[1]).unwrap();
            assert_eq!(svg.contains("<polygon"), band, "{n} points");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn short_log_axes_get_at_least_three_tick_labels() {
        let dir = temp_dir("ticks");
        let mut fig = figure(vec![("a", vec![(2.5, 0.35), (7.0, 0.8)], None)]);
        fig.x_scale = Scale::Log;
        fig.x_range = Some((2.0, 8.0));
        fig.y_range = Some((0.3, 0.9));
        fig.hline = None;
        let paths = draw(&fig, &dir.join("ticks")).expect("draws");
        let svg = std::fs::read_to_string(&paths[1]).unwrap();
        let numbers: Vec<f64> = texts(&svg)
            .iter()
            .filter_map(|t| t.text.parse::<f64>().ok())
            .collect();
        let count = |lo: f64, hi: f64| numbers.iter().filter(|&&v| v >= lo && v <= hi).count();
        assert!(count(0.3, 0.9) >= 3, "y ticks: {numbers:?}");
        assert!(count(2.0, 8.0) >= 3, "x ticks: {numbers:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn log_ticks_cover_every_span() {
        let spans = [
            (0.3, 0.9),
            (2.0, 8.0),
            (0.31, 0.35),
            (1.0, 1.0001),
            (7e-9, 7.3e-9),
            (0.9, 11.0),
            (0.5, 50.0),
            (1e-6, 1e3),
            (3e-200, 1e250),
            (f64::MIN_POSITIVE, f64::MAX),
        ];
        for (lo, hi) in spans {
            let ticks = log_ticks(lo, hi);
            assert!((3..=20).contains(&ticks.len()), "{lo}..{hi}: {ticks:?}");
            assert!(ticks
                .iter()
                .all(|&t| t >= lo * (1.0 - 1e-12) && t <= hi * (1.0 + 1e-12)));
            assert!(ticks.windows(2).all(|w| w[0] < w[1]), "{ticks:?}");
            let d = tick_digits(&ticks);
            let labels: Vec<String> = ticks.iter().map(|&t| sig_label(t, d)).collect();
            assert!(labels.windows(2).all(|w| w[0] != w[1]), "{labels:?}");
            assert!(labels.iter().all(|l| l.len() <= 10), "{labels:?}");
        }
        let labels = |lo, hi| {
            let ticks = log_ticks(lo, hi);
            let d = tick_digits(&ticks);
            ticks.iter().map(|&t| sig_label(t, d)).collect::<Vec<_>>()
        };
        assert_eq!(
            labels(0.3, 0.9),
            ["0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9"]
        );
        assert_eq!(labels(0.5, 50.0), ["0.5", "1", "2", "5", "10", "20", "50"]);
        assert_eq!(labels(1e-6, 1e-3), ["1e-6", "1e-5", "1e-4", "0.001"]);
    }

    #[test]
    fn draws_png_and_svg_with_error_bars_on_log_axis() {
        let dir = temp_dir("basic");
        let pts = |k: f64| {
            (1..=8)
                .map(|i| (i as f64, k / i as f64))
                .collect::<Vec<_>>()
        };
        let errs = pts(1.0).iter().map(|&(_, y)| (0.8 * y, 1.2 * y)).collect();
        let fig = figure(vec![
            ("alpha-tuner", pts(1.0), Some(errs)),
            ("beta-tuner", pts(3.0), None),
        ]);
        let paths = draw(&fig, &dir.join("nested/fig")).expect("draws");
        assert_eq!(
            paths,
            vec![dir.join("nested/fig.png"), dir.join("nested/fig.svg")]
        );
        let png = std::fs::read(&paths[0]).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!(&png[12..16], b"IHDR");
        let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
        let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
        assert_eq!((width, height), (1024, 640));
        let svg = std::fs::read_to_string(&paths[1]).unwrap();
        for text in [
            "alpha-tuner",
            "beta-tuner",
            "non-private best",
            "Test figure",
            "epsilon",
        ] {
            assert!(svg.contains(&format!("\n{text}\n")), "SVG lacks {text:?}");
        }
        assert_eq!((markers(&svg, 0), lines(&svg, 0)), (9, 2));
        assert_eq!((markers(&svg, 1), lines(&svg, 1)), (9, 2));
        // Same input, same bytes.
        let again = draw(&fig, &dir.join("again")).unwrap();
        assert_eq!(std::fs::read(&again[0]).unwrap(), png);
        assert_eq!(std::fs::read_to_string(&again[1]).unwrap(), svg);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn skips_non_finite_and_non_positive_on_log() {
        let dir = temp_dir("skip");
        let (nan, inf) = (f64::NAN, f64::INFINITY);
        let pts = vec![
            (1.0, 0.5),
            (2.0, 0.4),
            (2.5, nan),
            (inf, 0.3),
            (3.0, -0.2),
            (4.0, 0.0),
        ];
        let pts = [pts, vec![(5.0, 0.1), (6.0, 0.09), (7.0, -inf), (8.0, 0.08)]].concat();
        let errs = vec![(nan, 1.0), (0.1, inf), (-1.0, 0.5), (0.0, 0.1), (0.2, 0.1)];
        let errs = Some([errs.clone(), errs].concat());
        let mut fig = figure(vec![
            ("noisy", pts, errs),
            ("all-bad", vec![(nan, 1.0)], None),
        ]);
        fig.hline = Some((-1.0, "negative reference".into()));
        let paths = draw(&fig, &dir.join("skip")).expect("bad points are skipped, not fatal");
        let svg = std::fs::read_to_string(&paths[1]).unwrap();
        assert!(std::fs::read(&paths[0]).unwrap().starts_with(b"\x89PNG"));
        // 5 good points in 3 runs (plus the legend's marker and line); "all-bad" only in the legend.
        assert_eq!((markers(&svg, 0), lines(&svg, 0)), (6, 4));
        assert_eq!((markers(&svg, 1), lines(&svg, 1)), (1, 1));
        assert!(svg.contains("\nall-bad\n") && !svg.contains("negative reference"));
        // Given limits clip: only (1, 0.5) and (2, 0.4) remain, in one run.
        fig.x_range = Some((0.0, 4.5));
        fig.y_range = Some((0.2, 1.0));
        let paths = draw(&fig, &dir.join("clipped")).expect("clipped points are dropped");
        let svg = std::fs::read_to_string(&paths[1]).unwrap();
        assert_eq!((markers(&svg, 0), lines(&svg, 0)), (3, 2));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn nothing_drawable_is_an_error() {
        let stem = temp_dir("empty").join("empty");
        let nan = f64::NAN;
        let fig = figure(vec![(
            "nan",
            vec![(nan, nan), (1.0, nan), (nan, 2.0)],
            None,
        )]);
        let err = draw(&fig, &stem).unwrap_err().to_string();
        assert!(err.contains(&stem.display().to_string()), "{err}");
        let log = figure(vec![("neg", vec![(1.0, -1.0), (2.0, 0.0)], None)]);
        assert!(draw(&log, &stem).is_err());
        let mut outside = figure(vec![("far", vec![(1.0, 1.0)], None)]);
        outside.x_range = Some((2.0, 3.0));
        assert!(draw(&outside, &stem).is_err());
        let mut bad_range = figure(vec![("ok", vec![(1.0, 1.0)], None)]);
        bad_range.y_range = Some((0.0, 1.0));
        assert!(draw(&bad_range, &stem).is_err());
        let huge = figure(vec![(
            "huge",
            vec![(-f64::MAX, 1.0), (f64::MAX, 1.0)],
            None,
        )]);
        assert!(
            draw(&huge, &stem).is_err(),
            "an infinite axis span must not hang plotters"
        );
        let mismatched = figure(vec![("e", vec![(1.0, 1.0)], Some(vec![]))]);
        assert!(draw(&mismatched, &stem).is_err());
        assert!(!stem.parent().unwrap().exists());
    }
}
