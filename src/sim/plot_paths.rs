//! What a declared `[[plots]]` entry (src/sim/declarative.rs) may add to its curves beyond
//! aggregated points: points keyed `along` a column (a step) and joined in its order, at the
//! mean x of their rows; a path's start and end marked; x values held within bounds (a count
//! of 0 drawn at 1 on a log axis); a cross at each series' row where a column is lowest or
//! highest; a colour and marker for named series (the others take the palette's remaining
//! colours); and a zoomed second panel beside the whole.

use super::fields::Fields;
use super::plot::{self, Figure, Marker, Series, Style};
use crate::error::Result;
use std::path::{Path, PathBuf};

/// The additions of one plot (all off by default).
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Extras {
    /// Points are the groups of equal values of this column (not of equal x), at the mean x
    /// of their rows, joined in this column's order.
    pub along: Option<String>,
    /// Each series drawn as a path: a thin line, its first point ○ and its last ■.
    pub path: bool,
    /// x values clamped to [lo, hi].
    pub x_bounds: Option<(f64, f64)>,
    pub mark: Option<Mark>,
    /// (series value, its style).
    pub styles: Vec<(String, Style)>,
    pub zoom: Option<Zoom>,
}

/// A large cross at each series' row where `column` is lowest (`at = "min"`) or highest.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Mark {
    pub column: String,
    #[serde(default)]
    pub at: Extreme,
    /// Its legend entry: `{}` the series' entry, `{value}` the column's value there.
    pub label: String,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Extreme {
    #[default]
    Min,
    Max,
}

/// A second panel beside the whole figure: the same curves within these limits.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Zoom {
    pub x_range: (f64, f64),
    pub y_range: (f64, f64),
    pub title: String,
    /// The whole panel's title (default none).
    pub whole: Option<String>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ZoomEntry {
    x_range: [f64; 2],
    y_range: [f64; 2],
    title: Option<String>,
    whole: Option<String>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct StyleEntry {
    color: Option<String>,
    marker: Option<String>,
    #[serde(default)]
    dashed: bool,
}

/// The palette's colours by name, in its order (`plot::COLORS`).
const COLOR_NAMES: [&str; 12] = [
    "blue", "orange", "green", "red", "purple", "brown", "pink", "grey", "olive", "cyan", "black",
    "maroon",
];

/// The additions as written in a `[[plots]]` entry.
pub(super) struct Written {
    pub along: Option<String>,
    pub path: bool,
    pub x_bounds: Option<[f64; 2]>,
    pub mark: Option<Mark>,
    pub series_styles: Option<toml::Table>,
    pub zoom: Option<ZoomEntry>,
}

pub(super) fn parse(p: &Fields, w: Written) -> Result<Extras> {
    if w.path && w.along.is_none() {
        return Err(p.bad(
            "path",
            "needs `along` (the column whose order joins the points)",
        ));
    }
    let x_bounds = match w.x_bounds {
        Some([lo, hi]) if lo < hi && !lo.is_nan() && !hi.is_nan() => Some((lo, hi)),
        Some(_) => return Err(p.bad("x_bounds", "[lo, hi] with lo < hi (inf allowed)")),
        None => None,
    };
    let mut styles = Vec::new();
    for (value, v) in w.series_styles.unwrap_or_default() {
        let key = format!("series_styles.{value}");
        let e: StyleEntry = v
            .try_into()
            .map_err(|_| p.bad(&key, "{ color = NAME, marker = NAME, dashed = BOOL }"))?;
        let color = match e.color.as_deref() {
            None => None,
            Some(c) => Some(match COLOR_NAMES.iter().position(|n| *n == c) {
                Some(k) => plot::COLORS[k],
                None => {
                    let names = COLOR_NAMES.join(", ");
                    return Err(p.bad(&format!("{key}.color"), &format!("one of {names}")));
                }
            }),
        };
        let marker = match e.marker.as_deref() {
            None | Some("circle") => Marker::Circle,
            Some("triangle") => Marker::Triangle,
            Some("square") => Marker::Square,
            Some("cross") => Marker::Cross,
            Some("star") => Marker::Star,
            Some(_) => {
                return Err(p.bad(
                    &format!("{key}.marker"),
                    "circle, triangle, square, cross or star",
                ))
            }
        };
        let style = Style {
            color,
            marker,
            dashed: e.dashed,
            ..Style::default()
        };
        styles.push((value, style));
    }
    let zoom = match w.zoom {
        None => None,
        Some(z) => {
            let [a, b] = p.interval("zoom.x_range", z.x_range)?;
            let [c, d] = p.interval("zoom.y_range", z.y_range)?;
            Some(Zoom {
                x_range: (a, b),
                y_range: (c, d),
                title: z.title.unwrap_or_default(),
                whole: z.whole,
            })
        }
    };
    Ok(Extras {
        along: w.along,
        path: w.path,
        x_bounds,
        mark: w.mark,
        styles,
        zoom,
    })
}

impl Extras {
    /// A point's x: the mean of its rows' (`along`) or its group's own, within the bounds.
    pub fn x(&self, key: f64, xs: &[f64]) -> f64 {
        let x = match self.along {
            Some(_) => xs.iter().sum::<f64>() / xs.len() as f64,
            None => key,
        };
        match self.x_bounds {
            Some((lo, hi)) => x.clamp(lo, hi),
            None => x,
        }
    }

    /// The row of `rows` (in their order) where the mark's column is lowest or highest, among
    /// those with a value there and a drawable (x, y): its point and value.
    pub fn marked(
        &self,
        rows: &[usize],
        point: impl Fn(usize) -> Option<(f64, f64)>,
        value: &[Option<f64>],
    ) -> Option<((f64, f64), f64)> {
        let m = self.mark.as_ref()?;
        let found = rows
            .iter()
            .filter_map(|&i| Some((point(i)?, value[i].filter(|v| v.is_finite())?)));
        match m.at {
            Extreme::Min => found.min_by(|a, b| a.1.total_cmp(&b.1)),
            Extreme::Max => found.max_by(|a, b| a.1.total_cmp(&b.1)),
        }
    }

    /// The curves styled: paths marked, named series in their style, and when a style gives a
    /// colour or a series is marked, every other series a palette colour no style takes (in
    /// order); then a cross per mark in its series' colour. `values` are the curves' series
    /// values, `marks` (curve, point, value).
    pub fn finish(
        &self,
        curves: &mut Vec<Series>,
        values: &[String],
        marks: Vec<(usize, (f64, f64), f64)>,
    ) {
        for c in curves.iter_mut().filter(|_| self.path) {
            c.scatter = false;
            c.style.path = true;
        }
        for (c, v) in curves.iter_mut().zip(values) {
            if let Some((_, s)) = self.styles.iter().find(|(k, _)| k == v) {
                c.style = Style {
                    path: c.style.path,
                    ..s.clone()
                };
            }
        }
        let taken: Vec<(u8, u8, u8)> = self.styles.iter().filter_map(|s| s.1.color).collect();
        if taken.is_empty() && marks.is_empty() {
            return;
        }
        let free: Vec<(u8, u8, u8)> = (plot::COLORS.iter())
            .filter(|c| !taken.contains(c))
            .copied()
            .collect();
        let mut next = free.iter().cycle();
        for c in curves.iter_mut().filter(|c| c.style.color.is_none()) {
            c.style.color = next.next().copied();
        }
        let label = self.mark.as_ref().map_or("", |m| m.label.as_str());
        for (k, at, v) in marks {
            let text =
                (label.replace("{value}", &plot::sig_label(v, 3))).replace("{}", &curves[k].label);
            let style = Style {
                color: curves[k].style.color,
                marker: Marker::Star,
                ..Style::default()
            };
            curves.push(Series::scatter(text, vec![at]).styled(style));
        }
    }
}

/// Draws `fig` with the zoomed panel `z` beside it (the zoom's curves without legend).
pub(super) fn draw_zoomed(fig: &Figure, z: &Zoom, stem: &Path) -> Result<Vec<PathBuf>> {
    let whole = Figure {
        title: z.whole.clone().unwrap_or_default(),
        ..fig.clone()
    };
    let near = Figure {
        title: z.title.clone(),
        x_range: Some(z.x_range),
        y_range: Some(z.y_range),
        series: (fig.series.iter())
            .map(|s| Series {
                label: String::new(),
                ..s.clone()
            })
            .collect(),
        ..fig.clone()
    };
    plot::draw_panels(&fig.title, &[whole, near], 2, stem)
}

#[cfg(test)]
mod tests {
    use super::super::declarative::{parse as outputs_of, render};
    use super::super::fields::Fields;
    use super::super::table::{Table, Values};
    use super::*;

    fn render_one(dir: &Path, extra: &str) -> Result<String> {
        let text = format!(
            "[[plots]]\nname = \"p\"\ntable = \"t.parquet\"\nx = \"x\"\ny = \"y\"\nseries = \"s\"\n{extra}"
        );
        let root: toml::Table = text.parse().unwrap();
        let o = outputs_of(&Fields::new("f.toml", "", &root))?;
        render(&o, dir, "t.parquet", "T")?;
        Ok(std::fs::read_to_string(dir.join("p.svg")).unwrap())
    }

    /// Two series, three steps each, two repetitions per step; x decreases along `t` for b.
    fn table(dir: &Path) {
        let strs = |v: &[&str]| Values::Str(v.iter().map(|s| s.to_string()).collect());
        let nums = |v: &[f64]| Values::F64(v.iter().map(|&x| Some(x)).collect());
        let t = Table::default()
            .with(
                "s",
                strs(&["a", "a", "a", "a", "b", "b", "b", "b", "b", "b"]),
            )
            .with("t", Values::U64(vec![0, 0, 1, 1, 0, 0, 1, 1, 2, 2]))
            .with(
                "x",
                nums(&[0.0, 0.0, 2.0, 4.0, 0.9, 0.9, 0.5, 0.5, 0.2, 0.2]),
            )
            .with(
                "y",
                nums(&[1.0, 3.0, 2.0, 2.0, 0.1, 0.3, 0.4, 0.6, 0.2, 0.2]),
            )
            .with(
                "loss",
                nums(&[5.0, 4.0, 1.0, 2.0, 9.0, 8.0, 3.0, 7.0, 6.0, 6.5]),
            )
            .with("n", Values::U64(vec![7; 10]));
        t.write_parquet(&dir.join("t.parquet")).unwrap();
    }

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("dptune-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn along_groups_by_the_step_at_the_mean_x_within_the_bounds() {
        let x = Extras {
            along: Some("t".into()),
            x_bounds: Some((1.0, f64::INFINITY)),
            ..Extras::default()
        };
        // Step 1 of series a: x 2 and 4 → 3; step 0: x 0 → held at 1.
        assert_eq!(x.x(1.0, &[2.0, 4.0]), 3.0);
        assert_eq!(x.x(0.0, &[0.0, 0.0]), 1.0);
        // Without `along` a group's x is its own.
        assert_eq!(Extras::default().x(2.5, &[2.0, 4.0]), 2.5);
        let dir = temp("along");
        table(&dir);
        let svg = render_one(
            &dir,
            "along = \"t\"\nx_bounds = [1, inf]\nx_scale = \"log\"\n",
        )
        .unwrap();
        assert!(svg.contains("\na\n") && svg.contains("\nb\n"), "legend");
        // A path needs the column whose order joins it.
        let e = render_one(&dir, "path = true\n").unwrap_err().to_string();
        assert!(e.contains("plots[0].path"), "{e}");
        let e = render_one(&dir, "x_bounds = [2, 1]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("plots[0].x_bounds"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn paths_are_joined_in_their_order_with_their_ends_and_marks() {
        let dir = temp("paths");
        table(&dir);
        let svg = render_one(
            &dir,
            "aggregate = \"none\"\nalong = \"t\"\npath = true\n\
             mark = { column = \"loss\", label = \"{}: lowest ({value})\" }\n",
        )
        .unwrap();
        // The legend says how a path's order is marked, and names each lowest point.
        assert!(svg.contains("(○ start, ■ end)"), "path legend");
        assert!(
            svg.contains("a: lowest (1)") && svg.contains("b: lowest (3)"),
            "marks"
        );
        // In path order, b's points are not sorted by x: the extras key them by t.
        let x = Extras {
            mark: Some(Mark {
                column: "loss".into(),
                at: Extreme::Max,
                label: String::new(),
            }),
            ..Extras::default()
        };
        let loss = [Some(1.0), Some(9.0), None, Some(9.0)];
        let at = x.marked(&[0, 1, 2, 3], |i| Some((i as f64, 0.0)), &loss);
        assert_eq!(at, Some(((3.0, 0.0), 9.0)), "the last of equal highest");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn series_styles_take_their_colour_from_the_others() {
        let dir = temp("styles");
        table(&dir);
        let svg = render_one(
            &dir,
            "series_styles = { b = { color = \"blue\", marker = \"triangle\" } }\n",
        )
        .unwrap();
        // b is the palette's blue; a, which would have been blue, takes the next free colour.
        assert!(
            svg.contains("#1F77B4") && svg.contains("#FF7F0E"),
            "colours"
        );
        for (extra, key) in [
            (
                "series_styles = { b = { color = \"mauve\" } }\n",
                "series_styles.b.color",
            ),
            (
                "series_styles = { b = { marker = \"moon\" } }\n",
                "series_styles.b.marker",
            ),
            ("series_styles = { b = 1 }\n", "series_styles.b"),
        ] {
            let e = render_one(&dir, extra).unwrap_err().to_string();
            assert!(e.contains(key), "{extra}: {e}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_zoom_is_a_second_panel_and_titles_read_a_column() {
        let dir = temp("zoom");
        table(&dir);
        let svg = render_one(
            &dir,
            "title = \"{column:n} walks\"\n\
             zoom = { x_range = [0, 1], y_range = [0, 0.5], title = \"near 0\", whole = \"all\" }\n",
        )
        .unwrap();
        assert!(svg.contains("7 walks") && svg.contains("near 0") && svg.contains("\nall\n"));
        // Two panels of 720 pixels side by side.
        assert!(svg.contains(r#"width="1440""#), "two panels");
        let e = render_one(&dir, "zoom = { x_range = [1, 0], y_range = [0, 1] }\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("zoom.x_range"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
