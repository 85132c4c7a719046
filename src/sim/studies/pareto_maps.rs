//! Spec 001 Figs. 1–4 (`kind = "pareto-maps"`): DPareto's illustrative examples (§3.1). An
//! oracle on a G × G grid over its two hyperparameters (the "exact" front is the front of the
//! grid), k₀ random points, the two GPs DPareto fits to them, and the HVPoI on the same grid
//! ([`crate::pareto::maps`]).
//!
//! Oracles: `svt` (§3.1 B, synthetic: hp1 = total noise b, log; hp2 = cutoff C) and
//! `output-perturbation` (§3.1 A on Adult: hp1 = γ, hp2 = σ, both log). One unit: the maps
//! share the grid and the GPs.

use super::StudyKind;
use crate::data::TrainTest;
use crate::error::{Error, Result};
use crate::params::Count;
use crate::pareto::dpareto::{Dimension, Observation, Oracle};
use crate::pareto::maps::{maps, MapOptions, MapPoint};
use crate::pareto::oracles::SvtOracle;
use crate::pareto::output_perturbation::OutputPerturbationOracle;
use crate::pareto::{hv_lin, pareto_front, Objectives, Reference, StepFront, HV_REFERENCE};
use crate::sim::fields::Fields;
use crate::sim::study::Study;
use crate::sim::table::Table;
use crate::workloads::dpsgd_tasks::TaskData;
use rand::RngCore;

pub const KIND: StudyKind = StudyKind {
    source: file!(),
    name: "pareto-maps",
    about: "spec 001 Figs. 1–4: an oracle's ε and error on a grid, DPareto's GP means and HVPoI after k₀ random points",
    parse: |f| Ok(Box::new(parse(f)?)),
};

/// Where the output-perturbation oracle's data come from.
#[derive(Clone, Debug, PartialEq)]
pub enum MapData {
    /// Adult's a1a-sized split from the cache (`just data`).
    Cached,
    /// Two UCI-format Adult files, `[train, test]`.
    Files(Vec<String>),
}

/// Which oracle is mapped.
#[derive(Clone, Debug, PartialEq)]
pub enum MapOracle {
    Svt {
        orders: usize,
    },
    OutputPerturbation {
        runs: usize,
        epochs: usize,
        data: MapData,
    },
}

/// A `pareto-maps` file.
#[derive(Clone, Debug, PartialEq)]
pub struct ParetoMaps {
    pub oracle: MapOracle,
    pub seed: u64,
    pub grid: usize,
    pub initial: usize,
    pub fit_restarts: usize,
    /// The HVPoI's reference: the paper's (10, 0.999) or the library's automatic rule.
    pub reference: Reference,
}

/// The largest grid per axis (the grid is evaluated in full).
const MAX_GRID: u64 = 200;

/// A `pareto-maps` experiment file's parameters (`orders` are SVT's; `runs`, `epochs` and
/// `data` output perturbation's).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    oracle: Option<String>,
    orders: Option<Count>,
    runs: Option<Count>,
    epochs: Option<Count>,
    /// "cached" or two UCI-format files [train, test].
    data: Option<toml::Value>,
    seed: Option<u64>,
    grid: Option<Count>,
    initial: Option<Count>,
    fit_restarts: Option<Count>,
    reference: Option<String>,
}

fn parse(f: &Fields) -> Result<ParetoMaps> {
    let p: Params = f.read("a `pareto-maps` experiment", &[])?;
    let count = |key, given, min, default| f.count_or(key, given, min, default).map(|v| v as usize);
    let name = p
        .oracle
        .as_deref()
        .ok_or_else(|| f.missing("oracle", "`svt` or `output-perturbation`"))?;
    let oracle =
        match name {
            "svt" => MapOracle::Svt {
                orders: count("orders", p.orders, 1, 50)?,
            },
            "output-perturbation" => MapOracle::OutputPerturbation {
                runs: count("runs", p.runs, 1, 50)?,
                epochs: count("epochs", p.epochs, 1, 10)?,
                data: match &p.data {
                    None => MapData::Cached,
                    Some(toml::Value::String(s)) if s == "cached" => MapData::Cached,
                    Some(toml::Value::Array(a))
                        if a.len() == 2
                            && a.iter().all(|v| v.as_str().is_some_and(|s| !s.is_empty())) =>
                    {
                        MapData::Files(
                            a.iter()
                                .filter_map(|v| v.as_str())
                                .map(String::from)
                                .collect(),
                        )
                    }
                    Some(_) => return Err(f.bad(
                        "data",
                        "`cached` (Adult from `just data`) or two UCI-format files [train, test]",
                    )),
                },
            },
            _ => return Err(f.bad("oracle", "`svt` or `output-perturbation`")),
        };
    // Fields of the other oracle are typos here, not silently ignored settings.
    let given = [
        ("orders", p.orders.is_some()),
        ("runs", p.runs.is_some()),
        ("epochs", p.epochs.is_some()),
        ("data", p.data.is_some()),
    ];
    let own: &[&str] = match oracle {
        MapOracle::Svt { .. } => &["orders"],
        MapOracle::OutputPerturbation { .. } => &["runs", "epochs", "data"],
    };
    if let Some((other, _)) = given.iter().find(|(k, g)| *g && !own.contains(k)) {
        return Err(f.bad(other, &format!("not a field of oracle `{name}`")));
    }
    let grid = count("grid", p.grid, 2, 40)? as u64;
    if grid > MAX_GRID {
        return Err(f.bad(
            "grid",
            &format!("{grid} is too large: at most {MAX_GRID} points per axis"),
        ));
    }
    let reference = match p.reference.as_deref() {
        None | Some("paper") => Reference::paper(),
        Some("auto") => Reference::Auto,
        Some(_) => {
            return Err(f.bad(
                "reference",
                "`paper` ((10, 0.999), spec §2) or `auto` (the library's rule)",
            ))
        }
    };
    Ok(ParetoMaps {
        reference,
        oracle,
        seed: p.seed.unwrap_or(0),
        grid: grid as usize,
        initial: count("initial", p.initial, 2, 250)?,
        fit_restarts: count("fit_restarts", p.fit_restarts, 0, 2)?,
    })
}

/// SVT with λ = (b, C): spec Fig. 2's axes (x = b, y = C) as hp1, hp2.
#[derive(Clone, Copy, Debug)]
struct SvtByNoise(SvtOracle);

impl Oracle for SvtByNoise {
    fn evaluate(&mut self, lambda: &[f64], rng: &mut dyn RngCore) -> Result<Observation> {
        self.0.evaluate(&swap(lambda)?, rng)
    }

    fn epsilon(&self, lambda: &[f64]) -> Option<Result<f64>> {
        match swap(lambda) {
            Ok(l) => self.0.epsilon(&l),
            Err(e) => Some(Err(e)),
        }
    }
}

fn swap(lambda: &[f64]) -> Result<[f64; 2]> {
    match lambda {
        [b, c] => Ok([*c, *b]),
        _ => Err(Error::invalid(
            "lambda",
            format!("{} values", lambda.len()),
            "2 values (total noise b, cutoff C)",
        )),
    }
}

impl ParetoMaps {
    fn oracle_name(&self) -> &'static str {
        match self.oracle {
            MapOracle::Svt { .. } => "svt",
            MapOracle::OutputPerturbation { .. } => "output-perturbation",
        }
    }

    fn options(&self) -> MapOptions {
        MapOptions {
            grid: self.grid,
            initial: self.initial,
            fit_restarts: self.fit_restarts,
            reference: self.reference,
        }
    }

    fn compute(&self) -> Result<crate::pareto::maps::Maps> {
        match &self.oracle {
            MapOracle::Svt { orders } => {
                let svt = SvtByNoise(SvtOracle {
                    orders: *orders,
                    ..SvtOracle::PAPER
                });
                let mut dims: Vec<Dimension> = SvtOracle::dimensions()?;
                dims.reverse();
                maps(&svt, &dims, &self.options(), self.seed)
            }
            MapOracle::OutputPerturbation { runs, epochs, data } => {
                let data: TrainTest = match data {
                    MapData::Cached => TaskData::Adult.cached()?,
                    MapData::Files(files) => TaskData::Adult.from_files(files)?,
                };
                let o = OutputPerturbationOracle::from_data(&data, *runs, *epochs)?;
                maps(
                    &o,
                    &OutputPerturbationOracle::dimensions()?,
                    &self.options(),
                    self.seed,
                )
            }
        }
    }
}

/// One point of a map: the oracle's and the GPs' objectives and the HVPoI there.
#[derive(serde::Serialize)]
struct MapRow<'a> {
    oracle: &'a str,
    set: &'a str,
    hp1: f64,
    hp2: f64,
    epsilon: f64,
    error: f64,
    gp_epsilon: f64,
    gp_error: f64,
    hvpoi: f64,
}

/// One row of `points`: a point tagged by the set it belongs to.
#[derive(serde::Serialize)]
struct PointRow<'a> {
    set: &'a str,
    hp1: f64,
    hp2: f64,
    epsilon: f64,
    error: f64,
    gp_epsilon: Option<f64>,
    gp_error: Option<f64>,
    hvpoi: Option<f64>,
}

/// The rows of the maps: the grid (`set = grid`, first hyperparameter slowest) then the k₀
/// sampled points (`set = sampled`, in draw order).
fn rows(experiment: &str, oracle: &str, grid: &[MapPoint], sampled: &[MapPoint]) -> Result<Table> {
    let all: Vec<MapRow> = (grid.iter().map(|p| ("grid", p)))
        .chain(sampled.iter().map(|p| ("sampled", p)))
        .map(|(set, p)| MapRow {
            oracle,
            set,
            hp1: p.lambda[0],
            hp2: p.lambda[1],
            epsilon: p.epsilon,
            error: p.error,
            gp_epsilon: p.gp_epsilon,
            gp_error: p.gp_error,
            hvpoi: p.hvpoi,
        })
        .collect();
    Table::from_experiment_rows(experiment, &all)
}

/// One row of the merged table, read back.
#[derive(Clone, Debug, PartialEq)]
struct Row {
    set: String,
    hp: [f64; 2],
    objectives: Objectives,
    gp: [Option<f64>; 2],
    hvpoi: Option<f64>,
}

fn read_rows(t: &Table) -> Result<Vec<Row>> {
    let set = t.str("set")?;
    let cols: Vec<&[Option<f64>]> = [
        "hp1",
        "hp2",
        "epsilon",
        "error",
        "gp_epsilon",
        "gp_error",
        "hvpoi",
    ]
    .iter()
    .map(|c| t.f64(c))
    .collect::<Result<_>>()?;
    (0..t.height())
        .map(|i| {
            let need = |k: usize, name: &str| {
                cols[k][i]
                    .ok_or_else(|| Error::Infeasible(format!("row {i} of the maps has no {name}")))
            };
            Ok(Row {
                set: set[i].clone(),
                hp: [need(0, "hp1")?, need(1, "hp2")?],
                objectives: [need(2, "epsilon")?, need(3, "error")?],
                gp: [cols[4][i], cols[5][i]],
                hvpoi: cols[6][i],
            })
        })
        .collect()
}

/// The front of `rows` (indices into it, ε ascending).
fn front_of(rows: &[&Row]) -> Result<Vec<usize>> {
    pareto_front(&rows.iter().map(|r| r.objectives).collect::<Vec<_>>())
}

/// The HVPoI argmax among the grid rows (the first among ties, as the maps choose it).
fn argmax(grid: &[&Row]) -> Option<usize> {
    (0..grid.len())
        .filter(|&i| grid[i].hvpoi.is_some())
        .fold(None, |best: Option<usize>, i| match best {
            Some(b) if grid[b].hvpoi >= grid[i].hvpoi => Some(b),
            _ => Some(i),
        })
}

/// `points`: the sampled points, the grid's exact front, the sampled points' front and the
/// HVPoI argmax, each row tagged by `set`.
fn points(experiment: &str, merged: &Table) -> Result<Table> {
    let rows = read_rows(merged)?;
    let grid: Vec<&Row> = rows.iter().filter(|r| r.set == "grid").collect();
    let sampled: Vec<&Row> = rows.iter().filter(|r| r.set == "sampled").collect();
    let mut out: Vec<(&str, &Row)> = sampled.iter().map(|r| ("sampled", *r)).collect();
    out.extend(
        front_of(&grid)?
            .into_iter()
            .map(|i| ("exact-front", grid[i])),
    );
    out.extend(
        front_of(&sampled)?
            .into_iter()
            .map(|i| ("empirical-front", sampled[i])),
    );
    out.extend(argmax(&grid).map(|i| ("hvpoi-argmax", grid[i])));
    let rows: Vec<PointRow> = out
        .iter()
        .map(|(set, r)| PointRow {
            set,
            hp1: r.hp[0],
            hp2: r.hp[1],
            epsilon: r.objectives[0],
            error: r.objectives[1],
            gp_epsilon: r.gp[0],
            gp_error: r.gp[1],
            hvpoi: r.hvpoi,
        })
        .collect();
    Table::from_experiment_rows(experiment, &rows)
}

/// The distinct values of one hyperparameter over the grid rows, ascending.
fn axis_values(grid: &[&Row], k: usize) -> Vec<f64> {
    let mut v: Vec<f64> = grid.iter().map(|r| r.hp[k]).collect();
    v.sort_by(f64::total_cmp);
    v.dedup();
    v
}

/// A row of `gp_fit`: how well the GP means fit the oracle in one quadrant of the box (split
/// at the middle grid value of each hyperparameter).
#[derive(serde::Serialize)]
struct FitRow {
    hp1_side: &'static str,
    hp2_side: &'static str,
    /// The mean |Δ log10 ε| and |Δ error| between the GP means and the oracle.
    abs_dlog10_epsilon: Option<f64>,
    abs_derror: Option<f64>,
}

/// A row of `front_gap`: the mean vertical gap between the empirical and the exact step fronts
/// at the exact front's corners on one side of ε = 0.01, and the corners left of every
/// sampled ε (no gap there).
#[derive(serde::Serialize)]
struct GapRow {
    epsilon_range: &'static str,
    mean_gap: Option<f64>,
    corners: u64,
    uncovered: u64,
}

/// The row of `hypervolume`: the exact and the empirical fronts' hv_lin (reference (10, 1)).
#[derive(serde::Serialize)]
struct HvRow {
    exact_hv_lin: f64,
    empirical_hv_lin: f64,
}

/// The numbers behind §3.1's claims: `gp_fit`, `front_gap` and `hypervolume`.
fn summaries(experiment: &str, merged: &Table) -> Result<Vec<(&'static str, Table)>> {
    let rows = read_rows(merged)?;
    let grid: Vec<&Row> = rows.iter().filter(|r| r.set == "grid").collect();
    let sampled: Vec<&Row> = rows.iter().filter(|r| r.set == "sampled").collect();
    let (xs, ys) = (axis_values(&grid, 0), axis_values(&grid, 1));
    let mid = |v: &[f64]| v.get(v.len() / 2).copied().unwrap_or(f64::NAN);
    let (mx, my) = (mid(&xs), mid(&ys));
    let side = |high: bool| if high { "high" } else { "low" };
    let mut fit = Vec::new();
    for (qx, qy) in [(false, false), (false, true), (true, false), (true, true)] {
        let cell: Vec<&&Row> = (grid.iter())
            .filter(|r| (r.hp[0] >= mx) == qx && (r.hp[1] >= my) == qy)
            .collect();
        let mean = |f: &dyn Fn(&Row) -> Option<f64>| {
            let v: Vec<f64> = cell.iter().filter_map(|r| f(r)).collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        };
        fit.push(FitRow {
            hp1_side: side(qx),
            hp2_side: side(qy),
            abs_dlog10_epsilon: mean(&|r| {
                let e = r.gp[0]?;
                (e > 0.0 && r.objectives[0] > 0.0)
                    .then(|| (libm::log10(e) - libm::log10(r.objectives[0])).abs())
            }),
            abs_derror: mean(&|r| Some((r.gp[1]? - r.objectives[1]).abs())),
        });
    }
    let exact: Vec<Objectives> = grid.iter().map(|r| r.objectives).collect();
    let empirical: Vec<Objectives> = sampled.iter().map(|r| r.objectives).collect();
    let (exact_front, empirical_front) = (StepFront::new(&exact)?, StepFront::new(&empirical)?);
    let gap = |low: bool, range| {
        let corners: Vec<&Objectives> = (exact_front.corners().iter())
            .filter(|p| (p[0] < 0.01) == low)
            .collect();
        let v: Vec<f64> = (corners.iter())
            .filter_map(|p| Some(empirical_front.best_at(p[0])? - p[1]))
            .collect();
        GapRow {
            epsilon_range: range,
            mean_gap: (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64),
            corners: corners.len() as u64,
            uncovered: (corners.len() - v.len()) as u64,
        }
    };
    let hv = HvRow {
        exact_hv_lin: hv_lin(&exact, HV_REFERENCE)?,
        empirical_hv_lin: hv_lin(&empirical, HV_REFERENCE)?,
    };
    Ok(vec![
        (
            "gp_fit.parquet",
            Table::from_experiment_rows(experiment, &fit)?,
        ),
        (
            "front_gap.parquet",
            Table::from_experiment_rows(
                experiment,
                &[gap(true, "ε < 0.01"), gap(false, "ε ≥ 0.01")],
            )?,
        ),
        (
            "hypervolume.parquet",
            Table::from_experiment_rows(experiment, &[hv])?,
        ),
    ])
}

/// One unit: the grid, the k₀ points and the GPs belong together.
impl Study for ParetoMaps {
    fn units(&self) -> Vec<String> {
        vec![format!(
            "{} maps {}x{} k0 {}",
            self.oracle_name(),
            self.grid,
            self.grid,
            self.initial
        )]
    }

    fn run_unit(&self, experiment: &str, _i: usize) -> Result<Table> {
        let m = self.compute()?;
        rows(experiment, self.oracle_name(), &m.grid, &m.sampled)
    }

    fn output(&self) -> &'static str {
        "oracle_grid.parquet"
    }

    fn derive(&self, experiment: &str, merged: &Table) -> Result<Vec<(&'static str, Table)>> {
        let mut out = vec![("points.parquet", points(experiment, merged)?)];
        out.extend(summaries(experiment, merged)?);
        Ok(out)
    }

    fn derived(&self) -> Vec<&'static str> {
        vec![
            "points.parquet",
            "gp_fit.parquet",
            "front_gap.parquet",
            "hypervolume.parquet",
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(text: &str) -> Result<ParetoMaps> {
        let table: toml::Table = toml::from_str(text).unwrap();
        parse(&Fields::new("test.toml", "", &table))
    }

    #[test]
    fn fields_parse_and_errors_name_the_field() {
        let s =
            parse_str("oracle = \"svt\"\ngrid = 8\ninitial = 10\norders = 3\nseed = 5").unwrap();
        assert_eq!(s.oracle, MapOracle::Svt { orders: 3 });
        assert_eq!((s.grid, s.initial, s.seed, s.fit_restarts), (8, 10, 5, 2));
        let s = parse_str("oracle = \"output-perturbation\"\ndata = [\"a\", \"b\"]").unwrap();
        assert_eq!(
            s.oracle,
            MapOracle::OutputPerturbation {
                runs: 50,
                epochs: 10,
                data: MapData::Files(vec!["a".into(), "b".into()])
            }
        );
        for (text, field) in [
            ("oracle = \"lr\"", "oracle"),
            ("grid = 8", "oracle"),
            ("oracle = \"svt\"\nruns = 3", "runs"),
            ("oracle = \"output-perturbation\"\norders = 3", "orders"),
            ("oracle = \"output-perturbation\"\ndata = \"x\"", "data"),
            ("oracle = \"output-perturbation\"\ndata = [\"x\"]", "data"),
            ("oracle = \"svt\"\ngrid = 1", "grid"),
            ("oracle = \"svt\"\ngrid = 1000", "grid"),
            ("oracle = \"svt\"\ninitial = 1", "initial"),
            ("oracle = \"svt\"\ngird = 3", "gird"),
            ("oracle = \"svt\"\nreference = \"x\"", "reference"),
        ] {
            let e = parse_str(text).unwrap_err().to_string();
            assert!(e.contains(field), "{text}: {e}");
        }
    }

    /// A small SVT run end to end: the table's shape, the derived sets and summaries.
    #[test]
    fn svt_unit_points_and_summaries() {
        let s = parse_str("oracle = \"svt\"\ngrid = 6\ninitial = 12\norders = 4\nfit_restarts = 0")
            .unwrap();
        let t = s.run_unit("x", 0).unwrap();
        assert_eq!(t.height(), 36 + 12);
        let hp1 = t.f64("hp1").unwrap();
        // hp1 = b, log-spaced over [0.01, 100], slowest.
        assert!((hp1[0].unwrap() - 0.01).abs() < 1e-12 && (hp1[35].unwrap() - 100.0).abs() < 1e-9);
        let p = points("x", &t).unwrap();
        let sets = p.str("set").unwrap();
        assert_eq!(sets.iter().filter(|s| *s == "sampled").count(), 12);
        assert_eq!(sets.iter().filter(|s| *s == "hvpoi-argmax").count(), 1);
        assert!(
            sets.iter().any(|s| s == "exact-front") && sets.iter().any(|s| s == "empirical-front")
        );
        let derived = summaries("x", &t).unwrap();
        let names: Vec<&str> = derived.iter().map(|d| d.0).collect();
        assert_eq!(
            names,
            ["gp_fit.parquet", "front_gap.parquet", "hypervolume.parquet"]
        );
        assert_eq!(derived[0].1.height(), 4);
        let gap = &derived[1].1;
        let (corners, uncovered) = (gap.u64("corners").unwrap(), gap.u64("uncovered").unwrap());
        assert!(corners.iter().zip(uncovered).all(|(c, u)| u <= c));
        let hv = &derived[2].1;
        let (exact, empirical) = (
            hv.f64("exact_hv_lin").unwrap()[0],
            hv.f64("empirical_hv_lin").unwrap()[0],
        );
        assert!(exact.unwrap() > 0.0 && empirical.unwrap() > 0.0);
    }
}
