//! Plots (PNG and SVG) and tables (markdown and LaTeX) made from an experiment's parquet only,
//! and the index `<out>/README.md`. The experiment file supplies the layout (which columns to
//! plot, which tables), never the numbers.

use super::experiment::{Curves, Experiment, Kind, SweepParam, Tuning};
use super::plot::{self, Figure, Scale, Series};
use super::table::{write_text, Grid, Table};
use crate::error::{Error, Result};
use crate::numeric::{fmt_num, round_up_decimals};
use std::path::{Path, PathBuf};

/// Writes the plots and tables of `exp` from the results in `dir`; returns the files written.
pub fn report(exp: &Experiment, dir: &Path) -> Result<Vec<PathBuf>> {
    match &exp.kind {
        Kind::Curves(c) => {
            let t = Table::read_parquet(&dir.join("curves.parquet"))?;
            report_curves(exp, c, &t, dir)
        }
        Kind::Tuning(tu) => {
            let t = Table::read_parquet(&dir.join("runs.parquet"))?;
            report_tuning(exp, tu, &t, dir)
        }
        Kind::GpUcbBounds(b) => {
            let t = Table::read_parquet(&dir.join("bounds.parquet"))?;
            super::gp_ucb::report_bounds(exp, b, &t, dir)
        }
        Kind::GpUcbSuite(su) => {
            let t = Table::read_parquet(&dir.join("suite.parquet"))?;
            super::gp_ucb::report_suite(exp, su, &t, dir)
        }
        Kind::LipschitzGainSuite(su) => {
            let t = Table::read_parquet(&dir.join("suite.parquet"))?;
            super::lipschitz::report(exp, su, &t, dir)
        }
        Kind::SvmAlphaSweep(sw) => {
            let t = Table::read_parquet(&dir.join("sweep.parquet"))?;
            super::svm_alpha::report(exp, sw, &t, dir)
        }
        Kind::LrSearch(l) => super::lr_search::report(exp, l, dir),
        Kind::ProposeTestWalks(w) => {
            let t = Table::read_parquet(&dir.join("walks.parquet"))?;
            super::propose_test::report_walks(exp, w, &t, dir)
        }
        Kind::GiboPaths(p) => {
            let t = Table::read_parquet(&dir.join("iterations.parquet"))?;
            super::gibo::report_paths(exp, p, &t, dir)
        }
        Kind::ProposeTestBudgets(b) => {
            let t = Table::read_parquet(&dir.join("budgets.parquet"))?;
            super::propose_test::report_budgets(exp, b, &t, dir)
        }
    }
}

/// A privacy bound shown with `digits` decimals is rounded up; other quantities to nearest.
fn format_quantity(quantity: &str, x: Option<f64>, digits: u32) -> String {
    match x {
        None => "–".into(),
        Some(v) if quantity == "epsilon" || quantity == "rdp" => {
            format!(
                "{:.*}",
                digits as usize,
                round_up_decimals(v, digits as i32)
            )
        }
        Some(v) => format!("{v:.*}", digits as usize),
    }
}

pub(super) fn write_grid(grid: &Grid, stem: &Path, files: &mut Vec<PathBuf>) -> Result<()> {
    for (ext, text) in [("md", grid.markdown()), ("tex", grid.latex())] {
        let p = stem.with_extension(ext);
        write_text(&p, &text)?;
        files.push(p);
    }
    Ok(())
}

fn report_curves(exp: &Experiment, c: &Curves, t: &Table, dir: &Path) -> Result<Vec<PathBuf>> {
    let series = t.str("series")?;
    let x = t.f64(&c.plot.x)?;
    let y = t.f64(&c.plot.y)?;
    let sweep = t.f64(match c.sweep.param {
        SweepParam::Order => "order",
        SweepParam::Mean => "mean",
    })?;
    let mut files = Vec::new();
    let mut fig = Figure {
        title: exp.title.clone(),
        x_label: axis_label(&c.plot.x, c),
        y_label: axis_label(&c.plot.y, c),
        x_scale: if c.plot.x_log {
            Scale::Log
        } else {
            Scale::Linear
        },
        y_scale: if c.plot.y_log {
            Scale::Log
        } else {
            Scale::Linear
        },
        x_range: c.plot.x_range,
        y_range: c.plot.y_range,
        series: Vec::new(),
        hline: None,
    };
    for s in &c.series {
        let mut points: Vec<(f64, f64)> = (0..t.height())
            .filter(|&i| series[i] == s.label)
            .filter_map(|i| Some((x[i]?, y[i]?)))
            .collect();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        fig.series.push(Series {
            label: s.label.clone(),
            points,
            errors: None,
        });
    }
    files.extend(plot::draw(&fig, &dir.join(&exp.name))?);
    for (k, spec) in c.tables.iter().enumerate() {
        let q = t.f64(&spec.quantity)?;
        let param = match c.sweep.param {
            SweepParam::Order => "λ",
            SweepParam::Mean => "E[K]",
        };
        let mut header = vec!["series".to_string()];
        header.extend(spec.at.iter().map(|a| format!("{param}={}", fmt_num(*a))));
        let rows = c
            .series
            .iter()
            .map(|s| {
                let mut row = vec![s.label.clone()];
                for &a in &spec.at {
                    let hit = (0..t.height()).find(|&i| {
                        series[i] == s.label
                            && sweep[i].is_some_and(|v| (v - a).abs() <= 1e-9 * a.abs().max(1.0))
                    });
                    row.push(format_quantity(
                        &spec.quantity,
                        hit.and_then(|i| q[i]),
                        spec.digits,
                    ));
                }
                row
            })
            .collect();
        let caption = format!(
            "{}: {} (δ = {}, ρ = {} base)",
            exp.title,
            quantity_name(&spec.quantity, c),
            fmt_num(c.delta),
            fmt_num(c.rho)
        );
        let grid = Grid {
            caption,
            header,
            rows,
        };
        write_grid(
            &grid,
            &dir.join(format!("table{}-{}", k + 1, spec.quantity)),
            &mut files,
        )?;
    }
    Ok(files)
}

fn quantity_name(q: &str, c: &Curves) -> String {
    match q {
        "order" => "Rényi order λ".into(),
        "mean" => "mean number of runs E[K]".into(),
        "rdp" => "RDP bound ε′(λ)".into(),
        "epsilon" => format!("ε of (ε, {})-DP", fmt_num(c.delta)),
        "quantile" => "expected quantile 1 − E[1/(K+1)]".into(),
        "success" => format!("success probability 1 − f(1 − 1/{})", c.success_m),
        other => other.into(),
    }
}

fn axis_label(q: &str, c: &Curves) -> String {
    quantity_name(q, c)
}

/// Per (variant, budget, tuner): mean and 95% normal confidence half-width over repetitions.
struct Summary {
    variant: String,
    budget: Option<f64>,
    label: String,
    n: usize,
    regret: (f64, f64),
    utility: (f64, f64),
    epsilon: Option<f64>,
    noise: Option<f64>,
    runs: f64,
}

pub(super) fn mean_ci(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    if xs.len() < 2 {
        return (m, 0.0);
    }
    let var = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
    (m, 1.96 * (var / n).sqrt())
}

fn summarise(t: &Table) -> Result<Vec<Summary>> {
    let (variant, label, budget) = (t.str("variant")?, t.str("label")?, t.f64("target_epsilon")?);
    let (regret, utility, eps, noise, runs) = (
        t.f64("regret")?,
        t.f64("utility")?,
        t.f64("epsilon")?,
        t.f64("noise")?,
        t.u64("runs")?,
    );
    let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
    for i in 0..t.height() {
        let same =
            |j: usize| variant[j] == variant[i] && label[j] == label[i] && budget[j] == budget[i];
        match groups.iter_mut().find(|(first, _)| same(*first)) {
            Some((_, rows)) => rows.push(i),
            None => groups.push((i, vec![i])),
        }
    }
    Ok(groups
        .into_iter()
        .map(|(first, rows)| {
            let col = |c: &[Option<f64>]| rows.iter().filter_map(|&i| c[i]).collect::<Vec<_>>();
            Summary {
                variant: variant[first].clone(),
                budget: budget[first],
                label: label[first].clone(),
                n: rows.len(),
                regret: mean_ci(&col(regret)),
                utility: mean_ci(&col(utility)),
                epsilon: eps[first],
                noise: noise[first],
                runs: rows.iter().map(|&i| runs[i] as f64).sum::<f64>() / rows.len() as f64,
            }
        })
        .collect())
}

fn slug(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect()
}

fn report_tuning(exp: &Experiment, tu: &Tuning, t: &Table, dir: &Path) -> Result<Vec<PathBuf>> {
    if t.height() == 0 {
        return Err(Error::Infeasible(format!(
            "{}: no runs to report",
            exp.name
        )));
    }
    let sums = summarise(t)?;
    let mut files = Vec::new();
    let labels: Vec<&str> = tu.tuners.iter().map(|e| e.label.as_str()).collect();
    let budget_name =
        |b: Option<f64>| b.map_or("own noise".to_string(), |e| format!("ε={}", fmt_num(e)));
    for variant in tu.workload.variants() {
        let here: Vec<&Summary> = sums.iter().filter(|s| s.variant == variant.label).collect();
        let x_of = |s: &Summary| s.budget.or(s.epsilon).unwrap_or(f64::NAN);
        let series = labels
            .iter()
            .map(|l| {
                let mine: Vec<&&Summary> = here.iter().filter(|s| s.label == *l).collect();
                Series {
                    label: l.to_string(),
                    points: mine.iter().map(|s| (x_of(s), s.regret.0)).collect(),
                    errors: Some(
                        mine.iter()
                            .map(|s| (s.regret.0 - s.regret.1, s.regret.0 + s.regret.1))
                            .collect(),
                    ),
                }
            })
            .collect();
        let fig = Figure {
            title: format!("{} ({})", exp.title, variant.label),
            x_label: format!(
                "ε of (ε, {})-DP for the whole tuning run",
                fmt_num(tu.delta)
            ),
            y_label: "regret: best utility − utility of the chosen candidate".into(),
            x_scale: Scale::Log,
            y_scale: Scale::Linear,
            x_range: None,
            y_range: None,
            series,
            hline: None,
        };
        let stem = dir.join(format!("regret-{}", slug(&variant.label)));
        files.extend(plot::draw(&fig, &stem)?);
        let budgets: Vec<Option<f64>> = tu.budgets.clone();
        let mut header = vec!["tuner".to_string()];
        header.extend(budgets.iter().map(|b| budget_name(*b)));
        let cell = |l: &str, b: Option<f64>, f: &dyn Fn(&Summary) -> String| {
            here.iter()
                .find(|s| s.label == l && s.budget == b)
                .map_or("–".into(), |s| f(s))
        };
        let make = |what: &str, f: &dyn Fn(&Summary) -> String| Grid {
            caption: format!(
                "{} ({}): {what}; {} repetitions per cell",
                exp.title, variant.label, tu.seeds
            ),
            header: header.clone(),
            rows: labels
                .iter()
                .map(|l| {
                    std::iter::once(l.to_string())
                        .chain(budgets.iter().map(|b| cell(l, *b, f)))
                        .collect()
                })
                .collect(),
        };
        let pm = |(m, h): (f64, f64)| format!("{m:.3} ± {h:.3}");
        write_grid(
            &make("mean regret ± 95% CI", &|s| pm(s.regret)),
            &dir.join(format!("regret-{}", slug(&variant.label))),
            &mut files,
        )?;
        write_grid(
            &make("mean utility ± 95% CI", &|s| pm(s.utility)),
            &dir.join(format!("utility-{}", slug(&variant.label))),
            &mut files,
        )?;
        write_grid(
            &make(
                "guarantee ε (rounded up), noise σ of each run, mean runs",
                &|s| {
                    format!(
                        "{} / σ={} / {:.1}",
                        format_quantity("epsilon", s.epsilon, 3),
                        s.noise.map_or("–".into(), |n| format!("{n:.4}")),
                        s.runs
                    )
                },
            ),
            &dir.join(format!("privacy-{}", slug(&variant.label))),
            &mut files,
        )?;
        debug_assert!(here.iter().all(|s| s.n as u64 == tu.seeds));
    }
    Ok(files)
}

/// Writes `<out>/README.md`: every experiment under `out` with its tables (inline) and figures.
pub fn write_index(out: &Path) -> Result<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(out)
        .map_err(|e| Error::io(out, e))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("manifest.json").exists())
        .collect();
    dirs.sort();
    let mut s = String::from(
        "# Results\n\nWritten by `dptune sim` (`just sims`); regenerate the plots and tables from the parquet \
         files alone with `dptune sim report sims/*.toml`. Each folder holds `manifest.json` (the \
         experiment file, profile and configuration hash), the tidy parquet (`runs.parquet`: one row per \
         tuning run; `curves.parquet`: one row per curve point), PNG and SVG figures, and markdown and \
         LaTeX tables.\n\n",
    );
    for d in &dirs {
        let m: serde_json::Value = std::fs::read_to_string(d.join("manifest.json"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        let name = d
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        s += &format!(
            "## {}\n\n`{}` · profile `{}` · from `{}`\n\n",
            m["title"].as_str().unwrap_or(&name),
            name,
            m["profile"].as_str().unwrap_or("?"),
            m["file"].as_str().unwrap_or("?")
        );
        let mut entries: Vec<String> = std::fs::read_dir(d)
            .map_err(|e| Error::io(d, e))?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().to_string())
            .collect();
        entries.sort_by_key(|e| natural_key(e));
        for e in entries.iter().filter(|e| e.ends_with(".png")) {
            s += &format!(
                "![{e}]({name}/{e}) ([SVG]({name}/{}))\n\n",
                e.trim_end_matches(".png").to_string() + ".svg"
            );
        }
        for e in entries.iter().filter(|e| e.ends_with(".md")) {
            let text =
                std::fs::read_to_string(d.join(e)).map_err(|err| Error::io(&d.join(e), err))?;
            s += &format!(
                "{text}\n([markdown]({name}/{e}), [LaTeX]({name}/{}))\n\n",
                e.trim_end_matches(".md").to_string() + ".tex"
            );
        }
    }
    let path = out.join("README.md");
    write_text(&path, &s)?;
    Ok(path)
}

/// Sort key that orders embedded numbers by value (`d2` before `d10`).
fn natural_key(s: &str) -> Vec<(String, u64)> {
    let mut key = Vec::new();
    let mut text = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            let mut n = c.to_digit(10).unwrap_or(0) as u64;
            while let Some(d) = chars.peek().and_then(|d| d.to_digit(10)) {
                n = n.saturating_mul(10).saturating_add(d as u64);
                chars.next();
            }
            key.push((std::mem::take(&mut text), n));
        } else {
            text.push(c);
        }
    }
    key.push((text, 0));
    key
}

/// Rows of `t` where every (column, value) in `keys` matches (strings or numbers).
pub(super) fn select(t: &Table, keys: &[(&str, Key)]) -> Result<Vec<usize>> {
    let mut rows: Vec<usize> = (0..t.height()).collect();
    for (col, key) in keys {
        rows = match key {
            Key::Str(s) => {
                let c = t.str(col)?;
                rows.into_iter().filter(|&i| c[i] == *s).collect()
            }
            Key::Num(x) => {
                let c = t.f64(col)?;
                rows.into_iter()
                    .filter(|&i| c[i].is_some_and(|v| (v - x).abs() <= 1e-12 * x.abs().max(1.0)))
                    .collect()
            }
            Key::Int(x) => {
                let c = t.u64(col)?;
                rows.into_iter().filter(|&i| c[i] == *x).collect()
            }
        };
    }
    Ok(rows)
}

pub(super) enum Key {
    Str(String),
    Num(f64),
    Int(u64),
}

/// A bound shown with `digits` decimals, rounded up (these are sensitivities, noise scales and
/// utility bounds: a displayed value must never be smaller than the computed one).
pub(super) fn up(x: Option<f64>, digits: u32) -> String {
    x.map_or("–".into(), |v| {
        format!(
            "{:.*}",
            digits as usize,
            round_up_decimals(v, digits as i32)
        )
    })
}

pub(super) fn figure(
    title: String,
    x_label: &str,
    y_label: &str,
    series: Vec<Series>,
    hline: Option<(f64, String)>,
    y_log: bool,
) -> Figure {
    Figure {
        title,
        x_label: x_label.into(),
        y_label: y_label.into(),
        x_scale: Scale::Log,
        y_scale: if y_log { Scale::Log } else { Scale::Linear },
        x_range: None,
        y_range: None,
        series,
        hline,
    }
}

/// The q-quantile of `xs` (nearest rank; xs non-empty).
pub(super) fn quantile(xs: &mut [f64], q: f64) -> f64 {
    xs.sort_by(f64::total_cmp);
    let k = ((q * xs.len() as f64).ceil() as usize).clamp(1, xs.len());
    xs[k - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_order_and_formats() {
        let mut v = vec![
            "regret-d10.md",
            "regret-d2.md",
            "privacy-d1.md",
            "regret-d1.md",
        ];
        v.sort_by_key(|e| natural_key(e));
        assert_eq!(
            v,
            [
                "privacy-d1.md",
                "regret-d1.md",
                "regret-d2.md",
                "regret-d10.md"
            ]
        );
        // Privacy bounds round up; everything else to nearest; missing values show a dash.
        assert_eq!(format_quantity("epsilon", Some(3.4508401), 6), "3.450841");
        assert_eq!(format_quantity("quantile", Some(0.7510339), 6), "0.751034");
        assert_eq!(format_quantity("rdp", None, 6), "–");
        assert_eq!(mean_ci(&[1.0, 3.0]), (2.0, 1.96));
    }
}
