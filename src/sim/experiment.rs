//! Experiment files (`sims/*.toml`): parsing, profiles and validation. Every error names the
//! file, the field and the reason.
//!
//! A file has a `name`, a `title`, a `kind` (`tuning` or `curves`), the fields of that kind, and
//! optional `[profile.smoke]` / `[profile.paper]` tables whose keys override the file's own
//! (tables are merged key by key, so `[profile.smoke.workload] dims = [1, 2]` changes only the
//! dimensions). See `sims/README.md` for every field.

use crate::accounting::{Accountant, Conversion, Orders};
use crate::error::{Error, Range, Result};
use crate::selection::CountFamily;
use crate::tuners::Tuner;
use crate::workloads::WorkloadSpec;
use std::path::{Path, PathBuf};

/// The two profiles: a fast smoke run (CI) and the full paper run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    Smoke,
    Paper,
}

impl Profile {
    pub fn name(self) -> &'static str {
        match self {
            Profile::Smoke => "smoke",
            Profile::Paper => "paper",
        }
    }
}

/// A validated experiment.
pub struct Experiment {
    pub file: PathBuf,
    pub name: String,
    pub title: String,
    pub profile: Profile,
    /// A hash of the resolved file (profile applied): results of another configuration are
    /// never mixed with these.
    pub config_hash: u64,
    pub kind: Kind,
}

pub enum Kind {
    Tuning(Tuning),
    Curves(Curves),
    /// Spec 002's closed-form bounds (F1, F2 bounds).
    GpUcbBounds(super::gp_ucb::Bounds),
    /// Spec 002's synthetic GP suite (F2 errors, F3, F4).
    GpUcbSuite(super::gp_ucb::Suite),
    /// Spec 002 F5: Algorithm 3 on real data.
    LipschitzGainSuite(super::lipschitz::LipschitzSuite),
    /// Spec 000 Figure 1: the linear SVM's α sweep with and without outliers.
    SvmAlphaSweep(super::svm_alpha::AlphaSweep),
    /// Spec 000 Figure 7 style: a DP-SGD learning-rate search over a pool of runs.
    LrSearch(super::lr_search::LrSearch),
    /// Spec 003 Figures 1 and 2: the doubling walks on synthetic utilities.
    ProposeTestWalks(super::propose_test::Walks),
    /// Spec 003 Table 1 with numbers.
    ProposeTestBudgets(super::propose_test::Budgets),
    /// Spec 004: DP-GIBO's loss against evaluations, with DP-GD and random search.
    GiboPaths(super::gibo::GiboPaths),
}

impl Kind {
    /// The `kind` of the file.
    pub fn name(&self) -> &'static str {
        match self {
            Kind::Tuning(_) => "tuning",
            Kind::Curves(_) => "curves",
            Kind::GpUcbBounds(_) => "gp-ucb-bounds",
            Kind::GpUcbSuite(_) => "gp-ucb-suite",
            Kind::LipschitzGainSuite(_) => "lipschitz-gain-suite",
            Kind::SvmAlphaSweep(_) => "svm-alpha-sweep",
            Kind::LrSearch(_) => "lr-search",
            Kind::ProposeTestWalks(_) => "propose-test-walks",
            Kind::ProposeTestBudgets(_) => "propose-test-budgets",
            Kind::GiboPaths(_) => "gibo-paths",
        }
    }
}

const KINDS: &str =
    "`tuning`, `curves`, `gp-ucb-bounds`, `gp-ucb-suite`, `lipschitz-gain-suite`, `svm-alpha-sweep`, `lr-search`, `propose-test-walks`, `propose-test-budgets` or `gibo-paths`";

/// Tuners × workload variants × budgets × repetitions.
pub struct Tuning {
    pub seed: u64,
    pub seeds: u64,
    pub delta: f64,
    pub accountant: Accountant,
    /// Target ε per budget in equal-budget mode; `[None]` runs at the workload's own noise.
    pub budgets: Vec<Option<f64>>,
    pub workload: Box<dyn WorkloadSpec>,
    pub tuners: Vec<TunerEntry>,
}

pub struct TunerEntry {
    /// A label unique in the file (defaults to the registry name and its parameters).
    pub label: String,
    pub tuner: Box<dyn Tuner>,
}

/// Privacy and utility of repeat-and-select, as curves over a swept parameter (spec 000
/// Figures 2–6): no randomness.
#[derive(Clone, Debug, PartialEq)]
pub struct Curves {
    /// The base run is `rho`-zCDP.
    pub rho: f64,
    pub delta: f64,
    pub accountant: Accountant,
    pub sweep: Sweep,
    /// Sweep values always included (table columns).
    pub table_at: Vec<f64>,
    pub series: Vec<SeriesSpec>,
    /// m of the success probability 1 − f(1 − 1/m).
    pub success_m: u64,
    pub plot: PlotSpec,
    pub tables: Vec<TableSpec>,
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
}

#[derive(Clone, Debug, PartialEq)]
pub struct SeriesSpec {
    pub label: String,
    pub family: CountFamily,
    pub mean: Option<f64>,
}

/// Which columns a curve plot shows.
#[derive(Clone, Debug, PartialEq)]
pub struct PlotSpec {
    pub x: String,
    pub y: String,
    pub x_log: bool,
    pub y_log: bool,
    pub x_range: Option<(f64, f64)>,
    pub y_range: Option<(f64, f64)>,
}

/// A table of one quantity: rows are series, columns the sweep values `at`.
#[derive(Clone, Debug, PartialEq)]
pub struct TableSpec {
    pub quantity: String,
    pub at: Vec<f64>,
    pub digits: u32,
}

/// The quantities a curve experiment records (columns of its parquet).
pub const CURVE_QUANTITIES: &[&str] = &["order", "mean", "rdp", "epsilon", "quantile", "success"];

/// Reads and validates `path` at `profile`.
pub fn load(path: &Path, profile: Profile) -> Result<Experiment> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let mut root: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| Error::Experiment {
            file: file.clone(),
            field: "(syntax)".into(),
            reason: e.message().to_string(),
        })?;
    let profiles = match root.remove("profile") {
        None => toml::Table::new(),
        Some(toml::Value::Table(t)) => t,
        Some(_) => return Err(fail(&file, "profile", "must be a table of profiles")),
    };
    for (name, table) in &profiles {
        if name != "smoke" && name != "paper" {
            return Err(fail(
                &file,
                &format!("profile.{name}"),
                "profiles are `smoke` and `paper`",
            ));
        }
        if !table.is_table() {
            return Err(fail(&file, &format!("profile.{name}"), "must be a table"));
        }
    }
    if let Some(toml::Value::Table(over)) = profiles.get(profile.name()) {
        merge(&mut root, over);
    }
    let config_hash = fnv1a(toml::to_string(&root).unwrap_or_default().as_bytes());
    let f = Fields::new(&file, "", &root);
    let name = f
        .string("name")?
        .ok_or_else(|| f.missing("name", "a short name (letters, digits, -)"))?;
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(f.bad(
            "name",
            "letters, digits, - and _ only (it names the results folder)",
        ));
    }
    let title = f.string("title")?.unwrap_or(name).to_string();
    let kind = match f.string("kind")? {
        Some("tuning") => Kind::Tuning(tuning(&f)?),
        Some("curves") => Kind::Curves(curves(&f)?),
        Some("gp-ucb-bounds") => Kind::GpUcbBounds(super::gp_ucb::bounds(&f)?),
        Some("gp-ucb-suite") => Kind::GpUcbSuite(super::gp_ucb::suite(&f)?),
        Some("lipschitz-gain-suite") => Kind::LipschitzGainSuite(super::lipschitz::suite(&f)?),
        Some("svm-alpha-sweep") => Kind::SvmAlphaSweep(super::svm_alpha::sweep(&f)?),
        Some("lr-search") => Kind::LrSearch(super::lr_search::lr_search(&f)?),
        Some("propose-test-walks") => Kind::ProposeTestWalks(super::propose_test::walks(&f)?),
        Some("gibo-paths") => Kind::GiboPaths(super::gibo::paths(&f)?),
        Some("propose-test-budgets") => Kind::ProposeTestBudgets(super::propose_test::budgets(&f)?),
        Some(other) => return Err(f.bad("kind", &format!("`{other}` is not one of {KINDS}"))),
        None => return Err(f.missing("kind", KINDS)),
    };
    Ok(Experiment {
        file: path.to_path_buf(),
        name: name.to_string(),
        title,
        profile,
        config_hash,
        kind,
    })
}

fn tuning(f: &Fields) -> Result<Tuning> {
    let seed = f.integer("seed", 0)?.unwrap_or(0);
    let seeds = f
        .integer("seeds", 1)?
        .ok_or_else(|| f.missing("seeds", "the number of repetitions, >= 1"))?;
    let delta = f.number("delta", Range::OpenUnit)?.unwrap_or(1e-6);
    let accountant = accountant(f)?;
    let budgets = match f.table("budget")? {
        None => vec![None],
        Some(b) => {
            let eps = b
                .numbers("epsilons", Range::Positive)?
                .ok_or_else(|| b.missing("epsilons", "a list of target ε > 0"))?;
            b.finish(&["epsilons"])?;
            eps.into_iter().map(Some).collect()
        }
    };
    let (workload, w) = workload(f)?;
    if budgets == [None] && workload.default_noise().is_none() {
        return Err(w.missing(
            "noise",
            "the noise of each private run (or give a [budget] to calibrate it)",
        ));
    }
    let mut tuners: Vec<TunerEntry> = Vec::new();
    for tf in f.array("tuners", true)? {
        let table = tf.table;
        let name = tf
            .string("tuner")?
            .ok_or_else(|| tf.missing("tuner", "a registry name such as `papernot-steinke`"))?;
        let label = tf.string("label")?.map(str::to_string);
        let mut params = table.clone();
        params.remove("tuner");
        params.remove("label");
        let tuner = crate::tuners::build(name, &params).map_err(|e| tf.wrap(e))?;
        let label = label.unwrap_or_else(|| format!("{name} ({})", tuner.params()));
        if tuners.iter().any(|t| t.label == label) {
            return Err(tf.bad(
                "label",
                &format!("`{label}` is used twice; give each tuner a distinct label"),
            ));
        }
        tuners.push(TunerEntry { label, tuner });
    }
    f.finish_some(&[
        "seed",
        "seeds",
        "delta",
        "orders",
        "conversion",
        "budget",
        "workload",
        "tuners",
    ])?;
    Ok(Tuning {
        seed,
        seeds,
        delta,
        accountant,
        budgets,
        workload,
        tuners,
    })
}

/// The `[workload]` table's workload family, and the table (for messages).
pub(super) fn workload<'a>(f: &Fields<'a>) -> Result<(Box<dyn WorkloadSpec>, Fields<'a>)> {
    let w = f
        .table("workload")?
        .ok_or_else(|| f.missing("workload", "a [workload] table"))?;
    let kind = w
        .string("kind")?
        .ok_or_else(|| w.missing("kind", "a workload kind such as `synthetic-gp`"))?;
    let spec = crate::workloads::build(kind, w.table).map_err(|e| w.wrap(e))?;
    Ok((spec, w))
}

fn curves(f: &Fields) -> Result<Curves> {
    let base = f
        .table("base")?
        .ok_or_else(|| f.missing("base", "the base run, e.g. base = { zcdp = 0.1 }"))?;
    let rho = base
        .number("zcdp", Range::Positive)?
        .ok_or_else(|| base.missing("zcdp", "ρ > 0 of the base run"))?;
    base.finish(&["zcdp"])?;
    let delta = f.number("delta", Range::OpenUnit)?.unwrap_or(1e-6);
    let accountant = accountant(f)?;
    let s = f
        .table("sweep")?
        .ok_or_else(|| f.missing("sweep", "a [sweep] table"))?;
    let param = match s.string("param")? {
        Some("order") => SweepParam::Order,
        Some("mean") => SweepParam::Mean,
        _ => return Err(s.bad("param", "`order` or `mean`")),
    };
    let [from, to] = s
        .pair("range")?
        .ok_or_else(|| s.missing("range", "[from, to]"))?;
    let low = if param == SweepParam::Order {
        1.0
    } else {
        1.0 - 1e-12
    };
    if !(from > low && to > from && to.is_finite()) {
        return Err(s.bad(
            "range",
            &format!("needs {low} < from < to (got [{from}, {to}])"),
        ));
    }
    let points = s
        .integer("points", 2)?
        .ok_or_else(|| s.missing("points", "an integer >= 2"))?;
    let log = s.log_scale("scale")?;
    s.finish(&["param", "range", "points", "scale"])?;
    let success_m = f.integer("success_m", 1)?.unwrap_or(100);
    let mut series = Vec::new();
    for sf in f.array("series", true)? {
        let dist = sf.string("dist")?.ok_or_else(|| {
            sf.missing("dist", "logarithmic, geometric, tnb:ETA, poisson or fixed")
        })?;
        let family = CountFamily::parse(dist).map_err(|e| sf.wrap(e))?;
        let mean = sf.number("mean", Range::Positive)?;
        if param == SweepParam::Order && mean.is_none() {
            return Err(sf.missing("mean", "E[K] (the sweep is over the order)"));
        }
        if let Some(m) = mean {
            family.with_mean(m, None).map_err(|e| sf.wrap(e))?;
        }
        let label = match sf.string("label")? {
            Some(l) => l.to_string(),
            None => match mean {
                Some(m) => format!("{} E[K]={}", family.name(), crate::numeric::fmt_num(m)),
                None => family.name(),
            },
        };
        sf.finish(&["dist", "mean", "label"])?;
        series.push(SeriesSpec {
            label,
            family,
            mean,
        });
    }
    let p = f
        .table("plot")?
        .ok_or_else(|| f.missing("plot", "a [plot] table with x and y"))?;
    let plot = PlotSpec {
        x: p.quantity("x")?,
        y: p.quantity("y")?,
        x_log: p.log_scale("x_scale")?,
        y_log: p.log_scale("y_scale")?,
        x_range: p.pair("x_range")?.map(|[a, b]| (a, b)),
        y_range: p.pair("y_range")?.map(|[a, b]| (a, b)),
    };
    p.finish(&["x", "y", "x_scale", "y_scale", "x_range", "y_range"])?;
    let mut tables = Vec::new();
    let mut table_at = Vec::new();
    for tf in f.array("tables", false)? {
        let quantity = tf.quantity("quantity")?;
        let at = tf
            .numbers("at", Range::Positive)?
            .ok_or_else(|| tf.missing("at", "sweep values"))?;
        if let Some(x) = at.iter().find(|&&x| x < from || x > to) {
            return Err(tf.bad(
                "at",
                &format!("{x} is outside the sweep range [{from}, {to}]"),
            ));
        }
        let digits = tf.integer("digits", 0)?.unwrap_or(6) as u32;
        tf.finish(&["quantity", "at", "digits"])?;
        table_at.extend(&at);
        tables.push(TableSpec {
            quantity,
            at,
            digits,
        });
    }
    f.finish_some(&[
        "base",
        "delta",
        "orders",
        "conversion",
        "sweep",
        "success_m",
        "series",
        "plot",
        "tables",
    ])?;
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
        },
        table_at,
        series,
        success_m,
        plot,
        tables,
    })
}

fn accountant(f: &Fields) -> Result<Accountant> {
    let orders = match f.string("orders")? {
        None => Orders::Continuous,
        Some(o) => Orders::parse(o).map_err(|e| f.wrap(e))?,
    };
    let conversion = match f.string("conversion")? {
        None | Some("cks") => Conversion::Cks,
        Some("mironov") => Conversion::Mironov,
        Some(_) => return Err(f.bad("conversion", "`cks` or `mironov`")),
    };
    Ok(Accountant::new(orders, conversion))
}

/// Overrides `base` with `over`, merging tables key by key.
fn merge(base: &mut toml::Table, over: &toml::Table) {
    for (k, v) in over {
        match (base.get_mut(k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            _ => {
                base.insert(k.clone(), v.clone());
            }
        }
    }
}

/// FNV-1a, 64 bit: a stable hash (unlike std's) for file names and stream ids.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

fn fail(file: &str, field: &str, reason: &str) -> Error {
    Error::Experiment {
        file: file.to_string(),
        field: field.to_string(),
        reason: reason.to_string(),
    }
}

/// Typed access to one table of the file, with errors that carry the field's full path.
pub(super) struct Fields<'a> {
    file: &'a str,
    prefix: String,
    pub(super) table: &'a toml::Table,
}

impl<'a> Fields<'a> {
    pub(super) fn new(file: &'a str, prefix: &str, table: &'a toml::Table) -> Self {
        Fields {
            file,
            prefix: prefix.to_string(),
            table,
        }
    }

    pub(super) fn path(&self, key: &str) -> String {
        if self.prefix.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.prefix)
        }
    }

    pub(super) fn bad(&self, key: &str, reason: &str) -> Error {
        fail(self.file, &self.path(key), reason)
    }

    pub(super) fn missing(&self, key: &str, what: &str) -> Error {
        self.bad(key, &format!("missing: {what}"))
    }

    /// A library error (e.g. from a tuner's constructor) located in this table.
    pub(super) fn wrap(&self, e: Error) -> Error {
        match e {
            Error::InvalidParameter {
                name,
                value,
                allowed,
            } => self.bad(name, &format!("{value} is invalid: must be {allowed}")),
            other => fail(self.file, &self.prefix, &other.to_string()),
        }
    }

    pub(super) fn get(&self, key: &str) -> Option<&'a toml::Value> {
        self.table.get(key)
    }

    pub(super) fn string(&self, key: &'static str) -> Result<Option<&'a str>> {
        crate::params::string(self.table, key).map_err(|e| self.wrap(e))
    }

    pub(super) fn integer(&self, key: &'static str, min: u64) -> Result<Option<u64>> {
        crate::params::integer(self.table, key, min).map_err(|e| self.wrap(e))
    }

    pub(super) fn number(&self, key: &'static str, range: Range) -> Result<Option<f64>> {
        match crate::params::number(self.table, key).map_err(|e| self.wrap(e))? {
            Some(x) => range.check(key, x).map(Some).map_err(|e| self.wrap(e)),
            None => Ok(None),
        }
    }

    pub(super) fn numbers(&self, key: &'static str, range: Range) -> Result<Option<Vec<f64>>> {
        match crate::params::numbers(self.table, key).map_err(|e| self.wrap(e))? {
            Some(v) => v
                .into_iter()
                .map(|x| range.check(key, x).map_err(|e| self.wrap(e)))
                .collect::<Result<Vec<_>>>()
                .map(Some),
            None => Ok(None),
        }
    }

    pub(super) fn pair(&self, key: &'static str) -> Result<Option<[f64; 2]>> {
        match crate::params::numbers(self.table, key).map_err(|e| self.wrap(e))? {
            Some(v) if v.len() == 2 && v.iter().all(|x| x.is_finite()) && v[0] < v[1] => {
                Ok(Some([v[0], v[1]]))
            }
            Some(_) => Err(self.bad(key, "a pair [low, high] with low < high")),
            None => Ok(None),
        }
    }

    /// The tables of an array of tables (`[[key]]`), each located as `key[i]`; an error when
    /// `key` is something else, or when it is absent or empty and `required`.
    pub(super) fn array(&self, key: &'static str, required: bool) -> Result<Vec<Fields<'a>>> {
        let list = match self.table.get(key) {
            Some(toml::Value::Array(a)) if !a.is_empty() || !required => a,
            None if !required => return Ok(Vec::new()),
            None => return Err(self.missing(key, &format!("at least one [[{key}]] table"))),
            Some(_) => {
                return Err(self.bad(
                    key,
                    &format!("must be a non-empty array of [[{key}]] tables"),
                ))
            }
        };
        list.iter()
            .enumerate()
            .map(|(i, v)| {
                let prefix = self.path(&format!("{key}[{i}]"));
                match v.as_table() {
                    Some(t) => Ok(Fields {
                        file: self.file,
                        prefix,
                        table: t,
                    }),
                    None => Err(fail(self.file, &prefix, "must be a table")),
                }
            })
            .collect()
    }

    /// `linear` (the default) or `log`: true for log.
    pub(super) fn log_scale(&self, key: &'static str) -> Result<bool> {
        match self.string(key)? {
            None | Some("linear") => Ok(false),
            Some("log") => Ok(true),
            Some(_) => Err(self.bad(key, "`linear` or `log`")),
        }
    }

    /// One of the curve quantities (a column of `curves.parquet`).
    pub(super) fn quantity(&self, key: &'static str) -> Result<String> {
        match self.string(key)? {
            Some(c) if CURVE_QUANTITIES.contains(&c) => Ok(c.to_string()),
            _ => Err(self.bad(key, &format!("one of {}", CURVE_QUANTITIES.join(", ")))),
        }
    }

    pub(super) fn table(&self, key: &'static str) -> Result<Option<Fields<'a>>> {
        match self.table.get(key) {
            None => Ok(None),
            Some(toml::Value::Table(t)) => Ok(Some(Fields {
                file: self.file,
                prefix: self.path(key),
                table: t,
            })),
            Some(_) => Err(self.bad(key, "must be a table")),
        }
    }

    /// A required non-empty list of numbers in `range`.
    pub(super) fn required_numbers(&self, key: &'static str, range: Range) -> Result<Vec<f64>> {
        match self.numbers(key, range)? {
            Some(v) if !v.is_empty() => Ok(v),
            _ => Err(self.missing(key, "a non-empty list of numbers")),
        }
    }

    /// A required non-empty list of integers >= `min`.
    pub(super) fn integers(&self, key: &'static str, min: f64) -> Result<Vec<u64>> {
        self.required_numbers(key, Range::NonNegative)?
            .into_iter()
            .map(|x| {
                if x.fract() == 0.0 && x >= min {
                    Ok(x as u64)
                } else {
                    Err(self.bad(key, &format!("integers >= {min}")))
                }
            })
            .collect()
    }

    /// A required non-empty list of strings.
    pub(super) fn strings(&self, key: &'static str) -> Result<Vec<&'a str>> {
        match self.get(key) {
            Some(toml::Value::Array(a)) if !a.is_empty() => a
                .iter()
                .map(|v| v.as_str().ok_or_else(|| self.bad(key, "a list of strings")))
                .collect(),
            None => Err(self.missing(key, "a non-empty list of strings")),
            Some(_) => Err(self.bad(key, "a non-empty list of strings")),
        }
    }

    /// Rejects keys not in `allowed` (a typo would otherwise be ignored).
    pub(super) fn finish(&self, allowed: &[&str]) -> Result<()> {
        match self.table.keys().find(|k| !allowed.contains(&k.as_str())) {
            Some(k) => Err(self.bad(
                k,
                &format!("unknown field (expected one of: {})", allowed.join(", ")),
            )),
            None => Ok(()),
        }
    }

    /// Like `finish`, for the root table, whose common keys are checked by `load`.
    pub(super) fn finish_some(&self, allowed: &[&str]) -> Result<()> {
        let mut all = vec!["name", "title", "kind", "description"];
        all.extend_from_slice(allowed);
        self.finish(&all)
    }
}
