//! Line plots of simulation results: one figure drawn to a PNG and an SVG with the same code.
//!
//! Only finite values (and, on log axes, positive ones) inside the axis limits are drawn; a curve
//! is broken where a point is skipped, so no line crosses a gap or leaves the plotting area.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::error::{Error, Result};
use crate::numeric::fmt_num;

/// One curve: points (x, y) in x order; optional error bars (lo, hi) per point, same length.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text.
    pub label: String,
    /// The curve's points, in x order.
    pub points: Vec<(f64, f64)>,
    /// Vertical error bar (lo, hi) for each point, or None for no bars.
    pub errors: Option<Vec<(f64, f64)>>,
}

/// How an axis maps values to positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
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
}

/// Size of both outputs in pixels.
const SIZE: (u32, u32) = (1024, 640);
const FONT: &str = "sans-serif";
/// matplotlib's "tab10" colours, cycled over the series.
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// Draws `fig` to `<stem>.png` (1024×640) and `<stem>.svg`; returns both paths.
///
/// `<stem>` gets the extension appended (`runs/fig.v1` → `runs/fig.v1.png`); the parent directory
/// is created if missing. Fails, naming the file, when the figure has no drawable point, an axis
/// limit is unusable, error bars and points differ in number, or a file cannot be written.
pub fn draw(fig: &Figure, stem: &Path) -> Result<Vec<PathBuf>> {
    let plan = Plan::new(fig, stem)?;
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
    let (png, svg) = (with_ext(".png"), with_ext(".svg"));
    render(
        BitMapBackend::new(&png, SIZE).into_drawing_area(),
        fig,
        &plan,
    )
    .map_err(|e| fail(&png, e))?;
    render(SVGBackend::new(&svg, SIZE).into_drawing_area(), fig, &plan)
        .map_err(|e| fail(&svg, e))?;
    Ok(vec![png, svg])
}

fn fail(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Infeasible(format!("plot {}: {e}", path.display()))
}

/// With the `ab_glyph` text backend there are no system fonts: register the embedded one once.
fn register_font(stem: &Path) -> Result<()> {
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

/// Position of `v` on an axis as a fraction of its length.
fn frac(v: f64, (lo, hi): (f64, f64), scale: Scale) -> f64 {
    match scale {
        Scale::Linear => (v - lo) / (hi - lo),
        Scale::Log => (v.ln() - lo.ln()) / (hi.ln() - lo.ln()),
    }
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
            let (l, h) = (lo.ln(), hi.ln());
            let pad = if h > l {
                0.05 * (h - l)
            } else {
                std::f64::consts::LN_2
            };
            ((l - pad).exp(), (h + pad).exp())
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

/// Everything decided before drawing: axis limits and the legend's corner.
struct Plan {
    x: (f64, f64),
    y: (f64, f64),
    legend: SeriesLabelPosition,
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
        let drawn: Vec<(f64, f64)> = all()
            .filter(|&(px, py)| in_x((px, py)) && inside(py, y))
            .map(|(px, py)| (frac(px, x, xs), frac(py, y, ys)))
            .collect();
        if drawn.is_empty() {
            return Err(empty());
        }
        // The legend goes to the first corner (upper left preferred) covering the fewest points.
        let corners = [
            (SeriesLabelPosition::UpperLeft, false, true),
            (SeriesLabelPosition::UpperRight, true, true),
            (SeriesLabelPosition::LowerLeft, false, false),
            (SeriesLabelPosition::LowerRight, true, false),
        ];
        let covered = |right: bool, upper: bool| {
            let hit = |&&(fx, fy): &&(f64, f64)| {
                (if right { fx > 0.55 } else { fx < 0.45 })
                    && (if upper { fy > 0.6 } else { fy < 0.4 })
            };
            drawn.iter().filter(hit).count()
        };
        let (legend, _, _) = corners
            .into_iter()
            .min_by_key(|&(_, right, upper)| covered(right, upper))
            .expect("four corners");
        Ok(Plan { x, y, legend })
    }
}

/// A log-axis tick label with at most 3 significant digits: 0.6, 20, 1000, 2e-5.
fn log_tick(v: &f64) -> String {
    let trim = |s: String| match s.contains('.') {
        true => s.trim_end_matches('0').trim_end_matches('.').to_string(),
        false => s,
    };
    let a = v.abs();
    if a == 0.0 || !a.is_finite() {
        return format!("{v}");
    }
    if (1e-3..1e5).contains(&a) {
        let decimals = (2 - a.log10().floor() as i32).max(0) as usize;
        trim(format!("{v:.decimals$}"))
    } else {
        let s = format!("{v:.2e}");
        let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
        format!("{}e{exp}", trim(mantissa.to_string()))
    }
}

/// Fills the area, draws the chart with the figure's axis scales and writes the file.
fn render<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    fig: &Figure,
    plan: &Plan,
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let ((x0, x1), (y0, y1)) = (plan.x, plan.y);
    match (fig.x_scale, fig.y_scale) {
        (Scale::Linear, Scale::Linear) => chart(&root, fig, plan, x0..x1, y0..y1),
        (Scale::Linear, Scale::Log) => chart(&root, fig, plan, x0..x1, (y0..y1).log_scale()),
        (Scale::Log, Scale::Linear) => chart(&root, fig, plan, (x0..x1).log_scale(), y0..y1),
        (Scale::Log, Scale::Log) => {
            chart(&root, fig, plan, (x0..x1).log_scale(), (y0..y1).log_scale())
        }
    }?;
    root.present()
}

fn chart<DB, X, Y>(
    root: &DrawingArea<DB, Shift>,
    fig: &Figure,
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
    let mut builder = ChartBuilder::on(root);
    builder
        .margin(18)
        .x_label_area_size(56)
        .y_label_area_size(80);
    if !fig.title.is_empty() {
        builder.caption(&fig.title, (FONT, 26));
    }
    let mut chart = builder.build_cartesian_2d(x_spec, y_spec)?;
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(fig.x_label.as_str())
        .y_desc(fig.y_label.as_str())
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 18))
        .bold_line_style(RGBColor(215, 215, 215))
        .light_line_style(RGBColor(242, 242, 242));
    // plotters' log ticks print as `{:?}` (0.6000000000000001) and its light lines crowd
    // towards each power of ten: use short labels and no light lines on log axes.
    if fig.x_scale == Scale::Log {
        mesh.x_label_formatter(&log_tick).x_max_light_lines(0);
    }
    if fig.y_scale == Scale::Log {
        mesh.y_label_formatter(&log_tick).y_max_light_lines(0);
    }
    mesh.draw()?;

    let (xs, ys) = (fig.x_scale, fig.y_scale);
    let drawable =
        |x: f64, y: f64| valid(x, xs) && valid(y, ys) && inside(x, plan.x) && inside(y, plan.y);
    for (i, s) in fig.series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        // Contiguous runs of drawable points: a skipped point breaks the line.
        for run in s.points.split(|&(x, y)| !drawable(x, y)) {
            if !run.is_empty() {
                let line = LineSeries::new(run.iter().copied(), color.filled().stroke_width(2));
                chart.draw_series(line.point_size(3))?;
            }
        }
        if let Some(errors) = &s.errors {
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
        chart
            .draw_series(std::iter::empty::<PathElement<(f64, f64)>>())?
            .label(s.label.as_str())
            .legend(move |(x, y)| {
                EmptyElement::at((x, y))
                    + PathElement::new(vec![(-10, 0), (10, 0)], color.stroke_width(2))
                    + Circle::new((0, 0), 3, color.filled())
            });
    }
    if let Some((v, label)) = fig
        .hline
        .as_ref()
        .filter(|(v, _)| valid(*v, ys) && inside(*v, plan.y))
    {
        let style = BLACK.stroke_width(1);
        chart
            .draw_series(DashedLineSeries::new(
                [(plan.x.0, *v), (plan.x.1, *v)],
                8,
                5,
                style,
            ))?
            .label(label.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x - 10, y), (x + 10, y)], style));
    }
    chart
        .configure_series_labels()
        .position(plan.legend.clone())
        .margin(12)
        .label_font((FONT, 15))
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(120, 120, 120))
        .draw()
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
                })
                .collect(),
            hline: Some((0.05, "non-private best".into())),
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
