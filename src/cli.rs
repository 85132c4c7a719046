//! The `dptune` command line. Every error is one line naming the parameter and its range.
#![cfg(feature = "harness")]

use crate::accounting::convert::{gdp_delta, gdp_epsilon};
use crate::accounting::event::{CountLaw, Kind, Neighbours};
use crate::accounting::pld::{calibrate_dpsgd_noise_pld, PldAccountant, DEFAULT_INTERVAL};
use crate::accounting::pld_events::Pld;
use crate::accounting::selection::bounds::bound_name;
use crate::accounting::selection::calibrate::{largest_mean, MAX_MEAN};
use crate::accounting::selection::{Base, CountFamily};
use crate::accounting::{
    calibrate_dpsgd_noise, rdp_events, steps_for_epochs, Accountant, Conversion, DpBound, DpSgd,
    Event, Gaussian, LotSampling, Orders, RdpCurve, DP_ACCOUNTING_ORDERS,
};
use crate::error::{fmt_num, Error, Range};
use crate::numeric::{fmt_up_decimals, fmt_up_sig};
use clap::{Args, Parser, Subcommand, ValueEnum};
use serde_json::{json, Value};

mod shards;
mod slurm;

#[derive(Parser, Debug)]
#[command(
    name = "dptune",
    version,
    about = "Differentially private hyperparameter tuning",
    arg_required_else_help = true
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Privacy accounting: (ε, δ) of a mechanism, or the noise that meets a target.
    #[command(subcommand)]
    Account(Account),
    /// The simulation harness: run experiment files, regenerate their plots and tables.
    #[command(subcommand)]
    Sim(Sim),
    /// Tune your own training command privately: runs COMMAND once per candidate the tuner
    /// asks for and prints the release with its privacy guarantee (docs/tune.md).
    Tune(Tune),
}

#[derive(Args, Debug)]
struct Tune {
    /// The search file: [space], [tuner], [privacy], [run], [score] (docs/tune.md).
    file: std::path::PathBuf,
    /// Where the journal, the release and the released run's output go (default:
    /// dptune-tune/<the search file's name>). A search resumes there; nothing else is
    /// overwritten.
    #[arg(long)]
    out: Option<std::path::PathBuf>,
    /// Runs at a time (where the tuner's choices do not depend on scores). The release does
    /// not depend on it.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true,
          value_parser = whole::<1, 256>)]
    jobs: u64,
    /// Keep every run's output directory, not only the released one's (they are not covered
    /// by the guarantee).
    #[arg(long)]
    keep_all: bool,
    /// Also print every run's score and failure (not covered by the guarantee).
    #[arg(long)]
    show_private: bool,
    /// No progress lines.
    #[arg(long)]
    quiet: bool,
    /// Say what the search would cost (its guarantee, what the budget calibrates, how many
    /// runs) and run nothing.
    #[arg(long)]
    dry_run: bool,
    /// Testing aid: exit abruptly once this many runs are on record, as if killed.
    #[arg(long, hide = true, allow_negative_numbers = true, value_parser = whole::<1, { u64::MAX }>)]
    stop_after_runs: Option<u64>,
    /// The training command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<String>,
}

#[derive(Subcommand, Debug)]
enum Sim {
    /// Run (or resume) experiment files; writes parquet, plots, tables and an index.
    Run {
        /// Experiment files (sims/*.toml).
        #[arg(required = true)]
        files: Vec<std::path::PathBuf>,
        /// `smoke`: the fast reduced run (CI); `paper`: the full one.
        #[arg(long, value_enum, default_value = "paper")]
        profile: ProfileArg,
        /// Worker threads (default: one per core). Results do not depend on it.
        #[arg(long, allow_negative_numbers = true, value_parser = whole::<1, 1024>)]
        threads: Option<u64>,
        /// Run only shard I of N (units i with i mod N = I - 1); results merge when all are done.
        #[arg(long, default_value = "1/1", allow_hyphen_values = true, value_parser = shard)]
        shard: crate::sim::Shard,
        /// Results folder; each experiment writes to OUT/<name>/.
        #[arg(long, default_value = "results")]
        out: std::path::PathBuf,
        /// No progress bar.
        #[arg(long)]
        quiet: bool,
        /// Regenerate complete results that were made by other code (stale ones are otherwise
        /// kept and listed); the old results move to the folder's superseded/.
        #[arg(long)]
        rerun_stale: bool,
        /// Compute (and merge) units only: no plots, tables or index; `sim merge` or `sim
        /// report` draws them (what the array tasks of `sim slurm` run).
        #[arg(long)]
        no_report: bool,
        /// Testing aid: exit abruptly after this many units, as if killed.
        #[arg(long, hide = true, alias = "stop-after-cells", allow_negative_numbers = true,
              value_parser = whole::<1, { u64::MAX }>)]
        stop_after_units: Option<u64>,
        /// Testing aid: exit abruptly after this many journal records (inside a unit).
        #[arg(long, hide = true, allow_negative_numbers = true,
              value_parser = whole::<1, { u64::MAX }>)]
        stop_after_records: Option<u64>,
    },
    /// Regenerate plots and tables from the parquet files only (no rerun).
    Report {
        /// Experiment files whose results to report.
        #[arg(required = true)]
        files: Vec<std::path::PathBuf>,
        /// The profile the results were made with.
        #[arg(long, value_enum, default_value = "paper")]
        profile: ProfileArg,
        #[arg(long, default_value = "results")]
        out: std::path::PathBuf,
    },
    /// Regenerate experiments from scratch into a scratch folder and compare them with the
    /// committed results (tables byte for byte, parquet value for value); resumable. Where
    /// every file matches, the committed manifest takes the regeneration's code and
    /// provenance (they are then that code's results).
    Verify {
        /// Experiment files (sims/*.toml).
        #[arg(required = true)]
        files: Vec<std::path::PathBuf>,
        #[arg(long, value_enum, default_value = "paper")]
        profile: ProfileArg,
        /// The committed results.
        #[arg(long, default_value = "results")]
        out: std::path::PathBuf,
        /// Where the regeneration goes (kept between calls: it resumes).
        #[arg(long, default_value = "target/sims-verify")]
        scratch: std::path::PathBuf,
        #[arg(long, allow_negative_numbers = true, value_parser = whole::<1, 1024>)]
        threads: Option<u64>,
        #[arg(long, default_value = "1/1", allow_hyphen_values = true, value_parser = shard)]
        shard: crate::sim::Shard,
        /// Write the summary of every file's verification so far here (markdown).
        #[arg(long)]
        doc: Option<std::path::PathBuf>,
        /// Hand-written explanations appended to the summary.
        #[arg(long)]
        notes: Option<std::path::PathBuf>,
        /// Only rewrite the summary (`--doc`) from the comparisons made so far; run nothing.
        #[arg(long, requires = "doc")]
        summary_only: bool,
        #[arg(long)]
        quiet: bool,
    },
    /// Where results stand: complete or not, fresh or stale (made by other code), made by
    /// which commit, on what machine, in how long. Runs nothing.
    Status {
        /// Experiment files (sims/*.toml).
        #[arg(required = true)]
        files: Vec<std::path::PathBuf>,
        #[arg(long, value_enum, default_value = "paper")]
        profile: ProfileArg,
        #[arg(long, default_value = "results")]
        out: std::path::PathBuf,
        /// Exit with status 2 unless every experiment is complete, listing every missing unit.
        #[arg(long)]
        require_complete: bool,
        /// With --require-complete: name the shard I/N (array task) that runs each missing unit.
        #[arg(long, requires = "require_complete", allow_negative_numbers = true,
              value_parser = whole::<1, { slurm::MAX_TASKS }>)]
        tasks: Option<u64>,
    },
    /// Merge finished shards: checks that every unit of every experiment is present, then
    /// writes the merged results, tables and plots; runs no unit. Where units are missing it
    /// lists them and exits with status 2, writing nothing (the merge job of `sim slurm`).
    Merge {
        /// Experiment files (sims/*.toml).
        #[arg(required = true)]
        files: Vec<std::path::PathBuf>,
        #[arg(long, value_enum, default_value = "paper")]
        profile: ProfileArg,
        #[arg(long, default_value = "results")]
        out: std::path::PathBuf,
        /// Name the shard I/N (array task) that runs each missing unit.
        #[arg(long, allow_negative_numbers = true, value_parser = whole::<1, { slurm::MAX_TASKS }>)]
        tasks: Option<u64>,
        /// Worker threads for the derived tables (default: one per core).
        #[arg(long, allow_negative_numbers = true, value_parser = whole::<1, 1024>)]
        threads: Option<u64>,
    },
    /// Run experiment files on a Slurm cluster: writes an array job (task I runs `sim run
    /// FILE… --shard I/N`) and a merge job after it under OUT/slurm/, and with --submit
    /// submits them. The same command again submits only the tasks with missing units
    /// (docs/cluster.md).
    Slurm(slurm::Request),
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ProfileArg {
    Smoke,
    Paper,
}

impl From<ProfileArg> for crate::sim::Profile {
    fn from(p: ProfileArg) -> Self {
        match p {
            ProfileArg::Smoke => crate::sim::Profile::Smoke,
            ProfileArg::Paper => crate::sim::Profile::Paper,
        }
    }
}

fn shard(s: &str) -> Result<crate::sim::Shard, String> {
    crate::sim::Shard::parse(s).map_err(|e| e.to_string())
}

#[derive(Subcommand, Debug)]
enum Account {
    /// DP-SGD: subsampled Gaussian steps. Poisson sampling (the default; add/remove-one
    /// neighbours) or fixed-size lots drawn without replacement (replace-one neighbours;
    /// Wang–Balle–Kasiviswanathan 2019 Thm. 9, spec 001 §6.1).
    Dpsgd {
        #[command(flatten)]
        lots: DpsgdLots,
        /// Noise standard deviation divided by the ℓ2-sensitivity of the summed clipped
        /// gradients, > 0: the clipping norm C with Poisson sampling, 2C without replacement.
        #[arg(long, allow_hyphen_values = true, value_parser = positive)]
        noise_multiplier: f64,
        #[command(flatten)]
        target: Target,
        #[command(flatten)]
        rdp: RdpOptions,
        #[command(flatten)]
        which: WhichAccountant,
    },
    /// ρ-zCDP.
    Zcdp {
        /// ρ ≥ 0.
        #[arg(long, allow_hyphen_values = true, value_parser = non_negative)]
        rho: f64,
        #[command(flatten)]
        target: Target,
        #[command(flatten)]
        rdp: RdpOptions,
    },
    /// The Gaussian mechanism N(f(x), σ²) for a query of ℓ2-sensitivity Δ.
    Gaussian {
        /// ℓ2-sensitivity Δ > 0.
        #[arg(long, allow_hyphen_values = true, value_parser = positive)]
        sensitivity: f64,
        /// Noise standard deviation σ > 0.
        #[arg(long, allow_hyphen_values = true, value_parser = positive)]
        sigma: f64,
        #[command(flatten)]
        target: Target,
        #[command(flatten)]
        rdp: RdpOptions,
        #[command(flatten)]
        which: WhichAccountant,
    },
    /// μ-Gaussian DP, converted exactly (Dong–Roth–Su).
    Gdp {
        /// μ > 0.
        #[arg(long, allow_hyphen_values = true, value_parser = positive)]
        mu: f64,
        #[command(flatten)]
        target: Target,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Repeat-and-select: run a private procedure K times (K random) and keep the best output.
    RepeatSelect {
        /// One run: zcdp:RHO, pure:EPS, dpsgd:q=Q,sigma=S,steps=T, or rdp:FILE (a CSV with header
        /// order,epsilon).
        #[arg(long, value_parser = parse_base)]
        base: BaseRun,
        /// Law of K: logarithmic, geometric, tnb:ETA (ETA > -1), poisson or fixed.
        #[arg(long, value_parser = parse_family)]
        dist: CountFamily,
        /// E[K] (> 1 for the TNB family; an integer for fixed).
        #[arg(long, allow_hyphen_values = true, value_parser = positive, required_unless_present = "target_epsilon")]
        mean: Option<f64>,
        /// Never run more than N times (K conditioned on K <= N, Lemma 22).
        #[arg(long, allow_hyphen_values = true, value_parser = steps)]
        truncate: Option<u64>,
        /// δ in (0, 1).
        #[arg(long, allow_hyphen_values = true, value_parser = open_unit)]
        delta: f64,
        /// Instead of ε at --mean: the largest mean whose guarantee is at most this ε.
        #[arg(long, allow_hyphen_values = true, value_parser = positive, conflicts_with = "mean")]
        target_epsilon: Option<f64>,
        #[command(flatten)]
        rdp: RdpOptions,
    },
    /// The smallest DP-SGD noise multiplier that meets a target (ε, δ).
    CalibrateDpsgd {
        #[command(flatten)]
        lots: DpsgdLots,
        /// Target ε > 0.
        #[arg(long, allow_hyphen_values = true, value_parser = positive)]
        epsilon: f64,
        /// Target δ in (0, 1).
        #[arg(long, allow_hyphen_values = true, value_parser = open_unit)]
        delta: f64,
        #[command(flatten)]
        rdp: RdpOptions,
        #[command(flatten)]
        which: WhichAccountant,
    },
}

/// Which accountant bounds the mechanism: Rényi DP, the privacy-loss distribution, or the
/// smaller of the two (both are valid upper bounds).
#[derive(Args, Debug)]
struct WhichAccountant {
    /// rdp: Rényi DP (the options above); pld: the privacy-loss distribution (tighter in
    /// (ε, δ), slower); best: both, reporting the smaller bound.
    #[arg(long, value_enum, default_value_t = AccountantArg::Rdp)]
    accountant: AccountantArg,
    /// The PLD's loss-grid spacing (pld, best): its ε lies within about this much above the
    /// exact composition's. Smaller is tighter and slower.
    #[arg(long, allow_hyphen_values = true, value_parser = positive,
          default_value_t = DEFAULT_INTERVAL)]
    pld_interval: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum AccountantArg {
    Rdp,
    Pld,
    Best,
}

/// How a DP-SGD run draws its lots and how long it is: (q, steps) or (n, m, epochs).
#[derive(Args, Debug)]
struct DpsgdLots {
    /// How each step's lot is drawn.
    #[arg(long, value_enum, default_value_t = SamplingArg::Poisson)]
    sampling: SamplingArg,
    /// Sampling rate q, in (0, 1] (Poisson: each example's probability; without replacement:
    /// lot size / data size). Give it with --steps, or give --data-size, --lot-size and
    /// --epochs instead.
    #[arg(long, allow_hyphen_values = true, value_parser = unit_excluding_zero,
          required_unless_present = "data_size", conflicts_with = "data_size",
          requires = "steps")]
    sampling_rate: Option<f64>,
    /// Number of steps, ≥ 1 (with --sampling-rate).
    #[arg(long, allow_hyphen_values = true, value_parser = steps,
          conflicts_with = "data_size", requires = "sampling_rate")]
    steps: Option<u64>,
    /// Data size n ≥ 1 (with --lot-size and --epochs): q = m/n and epochs·round(n/m) steps,
    /// n/m rounded half up (spec 001 §3.2).
    #[arg(long, allow_hyphen_values = true, value_parser = steps,
          requires_all = ["lot_size", "epochs"])]
    data_size: Option<u64>,
    /// Lot size m, 1 ≤ m ≤ n (with --data-size).
    #[arg(long, allow_hyphen_values = true, value_parser = steps, requires = "data_size")]
    lot_size: Option<u64>,
    /// Epochs T ≥ 1 (with --data-size).
    #[arg(long, allow_hyphen_values = true, value_parser = steps, requires = "data_size")]
    epochs: Option<u64>,
}

/// Exactly one of --delta (then ε is computed) or --epsilon (then δ is computed).
#[derive(Args, Debug)]
#[group(required = true, multiple = false)]
struct Target {
    /// δ in (0, 1): report the smallest ε.
    #[arg(long, allow_hyphen_values = true, value_parser = open_unit)]
    delta: Option<f64>,
    /// ε ≥ 0: report the smallest δ.
    #[arg(long, allow_hyphen_values = true, value_parser = non_negative)]
    epsilon: Option<f64>,
}

#[derive(Args, Debug)]
struct RdpOptions {
    /// Orders to optimise over: continuous, dp-accounting (its 156 default orders and rules), a
    /// comma-separated list, or an integer range A..B (with --conversion mironov, 2..4096 is
    /// spec 001 §6.1's plain conversion).
    #[arg(long, default_value = "continuous", allow_hyphen_values = true, value_parser = orders)]
    orders: Orders,
    /// RDP → (ε, δ) conversion.
    #[arg(long, value_enum, default_value_t = ConversionArg::Cks)]
    conversion: ConversionArg,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum SamplingArg {
    /// Each example independently with probability q (add/remove-one neighbours).
    Poisson,
    /// A lot of exactly m examples drawn uniformly without replacement (replace-one
    /// neighbours).
    WithoutReplacement,
}

impl From<SamplingArg> for LotSampling {
    fn from(s: SamplingArg) -> Self {
        match s {
            SamplingArg::Poisson => LotSampling::Poisson,
            SamplingArg::WithoutReplacement => LotSampling::WithoutReplacement,
        }
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ConversionArg {
    /// Canonne–Kamath–Steinke 2020 (tighter).
    Cks,
    /// Mironov 2017.
    Mironov,
}

impl RdpOptions {
    fn accountant(&self) -> Accountant {
        let conversion = match self.conversion {
            ConversionArg::Cks => Conversion::Cks,
            ConversionArg::Mironov => Conversion::Mironov,
        };
        Accountant::new(self.orders.clone(), conversion)
    }
}

/// A base run given on the command line: its privacy event, and the file its Rényi curve was
/// read from (rdp:FILE), which the event cannot say.
#[derive(Clone, Debug)]
struct BaseRun {
    event: Event,
    curve_file: Option<String>,
}

impl BaseRun {
    /// The run in words, from its event's kind and parameters.
    fn description(&self) -> String {
        if let Some(file) = &self.curve_file {
            return format!("a run whose RDP curve is in {file}");
        }
        // DP-SGD as `Event::dpsgd` builds it: T steps of a Poisson-sampled Gaussian.
        let dpsgd = || {
            let Kind::SelfComposed { count, event: lot } = self.event.kind() else {
                return None;
            };
            let Kind::PoissonSampled {
                sampling_rate,
                event: step,
            } = lot.kind()
            else {
                return None;
            };
            let Kind::Gaussian { noise_sd, .. } = step.kind() else {
                return None;
            };
            Some(format!(
                "a DP-SGD training run (sampling rate {}, noise multiplier {}, {count} steps)",
                fmt_num(*sampling_rate),
                fmt_num(*noise_sd)
            ))
        };
        match self.event.kind() {
            Kind::Zcdp { rho, .. } => format!("a {}-zCDP run", fmt_num(*rho)),
            Kind::PureDp { epsilon } => format!("a {}-DP run", fmt_num(*epsilon)),
            _ => dpsgd().unwrap_or_else(|| format!("a {} run", self.event.kind_name())),
        }
    }

    /// What the guarantee protects: the event's neighbouring relation, in words.
    fn protects(&self) -> &'static str {
        match self.event.neighbours() {
            Some(Neighbours::AddOrRemoveOne) => LotSampling::Poisson.protects(),
            Some(Neighbours::ReplaceOne) => LotSampling::WithoutReplacement.protects(),
            None => {
                "one change of the data under the neighbouring relation the base is private for"
            }
        }
    }
}

fn parse_base(s: &str) -> Result<BaseRun, String> {
    let allowed = "zcdp:RHO, pure:EPS, dpsgd:q=Q,sigma=S,steps=T or rdp:FILE";
    let (kind, rest) = s
        .split_once(':')
        .ok_or_else(|| format!("must be one of {allowed}"))?;
    let number =
        |name: &str, v: &str, range: Range| parse_in(v, range).map_err(|m| format!("{name} {m}"));
    let message = |e: Error| e.to_string();
    let event = match kind {
        "zcdp" => Event::zcdp(number("RHO", rest, Range::NonNegative)?).map_err(message)?,
        "pure" => Event::pure_dp(number("EPS", rest, Range::NonNegative)?).map_err(message)?,
        "dpsgd" => {
            let (mut q, mut sigma, mut t) = (None, None, None);
            for part in rest.split(',') {
                match part.split_once('=') {
                    Some(("q", v)) => q = Some(number("q", v, Range::UnitExcludingZero)?),
                    Some(("sigma", v)) => sigma = Some(number("sigma", v, Range::Positive)?),
                    Some(("steps", v)) => t = Some(steps(v).map_err(|m| format!("steps {m}"))?),
                    _ => {
                        return Err(format!(
                            "dpsgd takes q=Q,sigma=S,steps=T; `{part}` is not one of them"
                        ))
                    }
                }
            }
            let (q, sigma, t) = match (q, sigma, t) {
                (Some(q), Some(s), Some(t)) => (q, s, t),
                _ => return Err("dpsgd needs all of q=Q,sigma=S,steps=T".into()),
            };
            Event::dpsgd(&DpSgd::new(q, sigma, t).map_err(message)?).map_err(message)?
        }
        "rdp" => {
            let curve = RdpCurve::from_csv_file(std::path::Path::new(rest)).map_err(message)?;
            let (orders, epsilons) = curve.grid().expect("a curve read from a file is sampled");
            let event = Event::renyi_curve(orders.to_vec(), epsilons.to_vec()).map_err(message)?;
            return Ok(BaseRun {
                event,
                curve_file: Some(rest.to_string()),
            });
        }
        _ => return Err(format!("must be one of {allowed}")),
    };
    Ok(BaseRun {
        event,
        curve_file: None,
    })
}

fn parse_family(s: &str) -> Result<CountFamily, String> {
    CountFamily::parse(s).map_err(|e| match e {
        Error::InvalidParameter { allowed, .. } => format!("must be {allowed}"),
        other => other.to_string(),
    })
}

fn parse_in(s: &str, range: Range) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if range.contains(v) => Ok(v),
        _ => Err(format!("must be {range}")),
    }
}
fn open_unit(s: &str) -> Result<f64, String> {
    parse_in(s, Range::OpenUnit)
}
fn unit_excluding_zero(s: &str) -> Result<f64, String> {
    parse_in(s, Range::UnitExcludingZero)
}
fn positive(s: &str) -> Result<f64, String> {
    parse_in(s, Range::Positive)
}
fn non_negative(s: &str) -> Result<f64, String> {
    parse_in(s, Range::NonNegative)
}
fn steps(s: &str) -> Result<u64, String> {
    whole::<1, { u64::MAX }>(s)
}

/// A whole-number flag in [MIN, MAX]; every one takes `allow_negative_numbers`, so that `-1`
/// reaches this parser (which says the range) instead of clap's "unexpected argument".
fn whole<const MIN: u64, const MAX: u64>(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(v) if (MIN..=MAX).contains(&v) => Ok(v),
        _ if MAX == u64::MAX => Err(format!("must be a whole number ≥ {MIN}")),
        _ => Err(format!("must be a whole number from {MIN} to {MAX}")),
    }
}
fn orders(s: &str) -> Result<Orders, String> {
    Orders::parse(s).map_err(|e| match e {
        Error::InvalidParameter { allowed, .. } => format!("must be {allowed}"),
        other => other.to_string(),
    })
}

/// Whether `args` parse as a command line; nothing runs (the fuzz target of `sim`, whose
/// commands write files).
pub fn parses<I, T>(args: I) -> bool
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    Cli::try_parse_from(args).is_ok()
}

/// Runs the CLI on `args`; returns the process exit code. Output goes to stdout, the one-line
/// error to stderr.
pub fn run<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind::{
                DisplayHelp, DisplayHelpOnMissingArgumentOrSubcommand, DisplayVersion,
            };
            return match e.kind() {
                DisplayHelp | DisplayVersion => write_out(&e.to_string(), false),
                // A bare `dptune` (or `dptune account`): the usage, as a user error.
                DisplayHelpOnMissingArgumentOrSubcommand => {
                    write_err(&e.to_string());
                    2
                }
                _ => {
                    write_err(&one_line(&e.to_string()));
                    2
                }
            };
        }
    };
    match execute(cli) {
        Ok(text) => write_out(&text, true),
        Err(e) => {
            write_err(&format!("error: {}", one_line(&e.to_string())));
            exit_code(&e)
        }
    }
}

/// Writes the result to stdout; the exit code. A reader that went away (`dptune … | head`) is
/// not an error of ours (exit 0, nothing more written); a full disk or another write failure is
/// one line on stderr and exit 1. Never a panic.
fn write_out(text: &str, newline: bool) -> i32 {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let written = out
        .write_all(text.as_bytes())
        .and_then(|()| {
            if newline {
                out.write_all(b"\n")
            } else {
                Ok(())
            }
        })
        .and_then(|()| out.flush());
    match written {
        Ok(()) => 0,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => 0,
        Err(e) => {
            write_err(&format!("error: cannot write the output: {e}"));
            1
        }
    }
}

/// A line on stderr; a closed stderr is ignored (there is nowhere left to say it).
fn write_err(line: &str) {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    let _ = err
        .write_all(line.trim_end().as_bytes())
        .and_then(|()| err.write_all(b"\n"));
}

/// 2 for every user error: bad input, a request no parameter can meet, a capability the
/// workload lacks, a results folder that cannot be used as asked. 1 when a valid request
/// failed: an I/O failure, a numerical one, or an audit that proved a guarantee wrong.
fn exit_code(e: &Error) -> i32 {
    match e {
        Error::InvalidParameter { .. }
        | Error::Infeasible(_)
        | Error::MissingCapability { .. }
        | Error::UnknownKey { .. }
        | Error::Parameter { .. }
        | Error::Experiment { .. }
        | Error::Data { .. }
        | Error::Results { .. } => 2,
        Error::Numerical(_) | Error::Io { .. } | Error::Device(_) | Error::PrivacyBreach(_) => 1,
    }
}

/// clap's message up to its first blank line, folded onto one line.
fn one_line(message: &str) -> String {
    let head = message.split("\n\n").next().unwrap_or(message);
    head.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What was accounted, for the statement and the JSON.
struct Subject {
    description: String,
    protects: &'static str,
    parameters: Value,
}

fn execute(cli: Cli) -> Result<String, Error> {
    match cli.command {
        Command::Account(account) => execute_account(account),
        Command::Sim(sim) => execute_sim(sim),
        Command::Tune(t) => {
            let out = t.out.unwrap_or_else(|| {
                let stem = t
                    .file
                    .file_stem()
                    .map_or("search".into(), |s| s.to_string_lossy().into_owned());
                std::path::Path::new("dptune-tune").join(stem)
            });
            check_folder("--out", &out, "the search's journal and release")?;
            crate::tune::tune(&crate::tune::Options {
                file: t.file,
                command: t.command,
                out,
                jobs: t.jobs as usize,
                keep_all: t.keep_all,
                show_private: t.show_private,
                quiet: t.quiet,
                dry_run: t.dry_run,
                stop_after_runs: t.stop_after_runs,
            })
        }
    }
}

fn execute_account(account: Account) -> Result<String, Error> {
    match account {
        Account::Dpsgd {
            lots,
            noise_multiplier,
            target,
            rdp,
            which,
        } => {
            let (sampling, shape) = (LotSampling::from(lots.sampling), DpsgdShape::new(&lots)?);
            let m = DpSgd::with_sampling(sampling, shape.q, noise_multiplier, shape.steps)?;
            let (q, k, sizes) = (shape.q, shape.steps, shape.sizes);
            let (lots, length) = shape.describe(sampling);
            let mut parameters = json!({"mechanism": "dpsgd", "sampling": sampling.name(),
                "sampling_rate": q, "noise_multiplier": noise_multiplier, "steps": k});
            if let Some((n, lot, t)) = sizes {
                let p = parameters.as_object_mut().expect("an object");
                p.insert("data_size".into(), json!(n));
                p.insert("lot_size".into(), json!(lot));
                p.insert("epochs".into(), json!(t));
            }
            let subject = Subject {
                description: format!(
                    "DP-SGD with {lots}, noise multiplier {} and {length}",
                    fmt_num(noise_multiplier)
                ),
                protects: sampling.protects(),
                parameters,
            };
            account_by(&Event::dpsgd(&m)?, &subject, &target, &rdp, &which)
        }
        Account::Zcdp { rho, target, rdp } => {
            let subject = Subject {
                description: format!("A {}-zCDP mechanism", fmt_num(rho)),
                protects: "one change of the neighbouring relation under which it is zCDP",
                parameters: json!({"mechanism": "zcdp", "rho": rho}),
            };
            account_rdp(&Event::zcdp(rho)?, &subject, &target, &rdp)
        }
        Account::Gaussian {
            sensitivity,
            sigma,
            target,
            rdp,
            which,
        } => {
            let m = Gaussian::new(sensitivity, sigma)?;
            let subject = Subject {
                description: format!(
                    "The Gaussian mechanism with ℓ2-sensitivity {} and noise σ = {} ({}-zCDP)",
                    fmt_num(sensitivity),
                    fmt_num(sigma),
                    fmt_num(m.rho())
                ),
                protects: "one change of the data that moves the query by at most its sensitivity",
                parameters: json!({"mechanism": "gaussian", "sensitivity": sensitivity, "sigma": sigma}),
            };
            let event = Event::gaussian(sensitivity, sigma)?;
            account_by(&event, &subject, &target, &rdp, &which)
        }
        Account::Gdp { mu, target, json } => {
            let subject = Subject {
                description: format!("A {}-GDP mechanism", fmt_num(mu)),
                protects: "one change of the neighbouring relation under which it is GDP",
                parameters: json!({"mechanism": "gdp", "mu": mu}),
            };
            let bound = match (target.delta, target.epsilon) {
                (Some(delta), _) => gdp_epsilon(mu, delta)?,
                (None, Some(epsilon)) => DpBound {
                    epsilon,
                    delta: gdp_delta(mu, epsilon)?,
                    order: None,
                },
                (None, None) => unreachable!("clap requires one target"),
            };
            let how = "the exact (ε, δ) curve of Gaussian DP (Dong–Roth–Su 2019)";
            report(
                &subject,
                &bound,
                "gdp/exact",
                how,
                target.delta.is_none(),
                json,
            )
        }
        Account::RepeatSelect {
            base,
            dist,
            mean,
            truncate,
            delta,
            target_epsilon,
            rdp,
        } => repeat_select_command(&base, dist, mean, truncate, delta, target_epsilon, &rdp),
        Account::CalibrateDpsgd {
            lots,
            epsilon,
            delta,
            rdp,
            which,
        } => {
            let (sampling, shape) = (LotSampling::from(lots.sampling), DpsgdShape::new(&lots)?);
            let accountant = rdp.accountant();
            let by_rdp = || {
                calibrate_dpsgd_noise(sampling, shape.q, shape.steps, epsilon, delta, &accountant)
            };
            let by_pld = || {
                calibrate_dpsgd_noise_pld(
                    sampling,
                    shape.q,
                    shape.steps,
                    epsilon,
                    delta,
                    which.pld_interval,
                )
            };
            let (c, name, how) = match which.accountant {
                AccountantArg::Rdp => (
                    by_rdp()?,
                    accountant.name(),
                    describe_accountant(&accountant),
                ),
                AccountantArg::Pld => (
                    by_pld()?,
                    crate::accounting::pld::accountant_name(which.pld_interval),
                    describe_pld(which.pld_interval),
                ),
                AccountantArg::Best => match (by_rdp()?, by_pld()) {
                    // Where the PLD finds no noise (a δ below its resolution), Rényi DP's.
                    (r, Err(e)) => (
                        r,
                        accountant.name(),
                        format!("{}; no PLD bound: {e}", describe_accountant(&accountant)),
                    ),
                    (r, Ok(p)) => {
                        if p.value < r.value {
                            (
                                p,
                                crate::accounting::pld::accountant_name(which.pld_interval),
                                format!(
                                    "{} (smaller than Rényi DP's {})",
                                    describe_pld(which.pld_interval),
                                    r.value
                                ),
                            )
                        } else {
                            (
                                r,
                                accountant.name(),
                                format!(
                                    "{} (smaller than the PLD's {})",
                                    describe_accountant(&accountant),
                                    p.value
                                ),
                            )
                        }
                    }
                },
            };
            let sigma = c.value;
            if rdp.json {
                let mut out = json!({"noise_multiplier": sigma, "epsilon": epsilon_up(c.bound.epsilon),
                    "delta": delta, "order": c.bound.order, "accountant": name,
                    "target_epsilon": epsilon, "sampling": sampling.name(),
                    "sampling_rate": shape.q, "steps": shape.steps});
                if let Some((n, lot, t)) = shape.sizes {
                    let p = out.as_object_mut().expect("an object");
                    p.insert("data_size".into(), json!(n));
                    p.insert("lot_size".into(), json!(lot));
                    p.insert("epochs".into(), json!(t));
                }
                return Ok(out.to_string());
            }
            let (lots, length) = shape.describe(sampling);
            Ok(format!(
                "Noise multiplier {sigma} is the smallest (to 1e-6 relative) for which DP-SGD with {lots} and {length} is (ε = {}, δ = {})-DP, within the target ε = {}.\n  protects: {}\n  accountant: {how}{}",
                fmt_epsilon(c.bound.epsilon),
                fmt_num(delta),
                fmt_num(epsilon),
                sampling.protects(),
                match c.bound.order {
                    Some(o) => format!(" (best order λ = {})", fmt_order(Some(o))),
                    None => String::new(),
                },
            ))
        }
    }
}

/// A DP-SGD run's sampling rate and length, given as (q, steps) or as (n, m, epochs).
struct DpsgdShape {
    q: f64,
    steps: u64,
    /// (data size, lot size, epochs) when given that way.
    sizes: Option<(u64, u64, u64)>,
}

impl DpsgdShape {
    fn new(lots: &DpsgdLots) -> Result<Self, Error> {
        match (
            lots.sampling_rate,
            lots.steps,
            lots.data_size,
            lots.lot_size,
            lots.epochs,
        ) {
            (Some(q), Some(k), None, None, None) => Ok(DpsgdShape {
                q,
                steps: k,
                sizes: None,
            }),
            (None, None, Some(n), Some(lot), Some(t)) => Ok(DpsgdShape {
                q: lot as f64 / n as f64,
                steps: steps_for_epochs(n, lot, t)?,
                sizes: Some((n, lot, t)),
            }),
            _ => Err(Error::invalid(
                "sampling_rate",
                "a mix of the two forms",
                "given with --steps, or replaced by --data-size, --lot-size and --epochs",
            )),
        }
    }

    /// How the lots are drawn and how long the run is, in words.
    fn describe(&self, sampling: LotSampling) -> (String, String) {
        let (q, k) = (self.q, self.steps);
        let lots = match (sampling, self.sizes) {
            (LotSampling::Poisson, None) => format!("Poisson sampling rate {}", fmt_num(q)),
            (LotSampling::Poisson, Some((n, lot, _))) => format!(
                "Poisson sampling rate {} (expected lot {lot} of {n} examples)",
                fmt_num(q)
            ),
            (LotSampling::WithoutReplacement, None) => format!(
                "lots drawn without replacement at sampling rate {}",
                fmt_num(q)
            ),
            (LotSampling::WithoutReplacement, Some((n, lot, _))) => format!(
                "lots of {lot} of {n} examples drawn without replacement (sampling rate {})",
                fmt_num(q)
            ),
        };
        let length = match self.sizes {
            Some((_, _, t)) => format!("{k} steps ({t} epochs of round(n/m) steps)"),
            None => format!("{k} steps"),
        };
        (lots, length)
    }
}

/// `account repeat-select`: the base run's curve and the repeat-and-select event's are the
/// Rényi accountant's (under the command's orders and conversion); `--target-epsilon` searches
/// the mean over the base's curve.
fn repeat_select_command(
    run: &BaseRun,
    family: CountFamily,
    mean: Option<f64>,
    truncate: Option<u64>,
    delta: f64,
    target_epsilon: Option<f64>,
    options: &RdpOptions,
) -> Result<String, Error> {
    let accountant = options.accountant();
    let orders = &accountant.orders;
    let (description, protects) = (run.description(), run.protects());
    let base_curve = rdp_events::curve(&run.event, &accountant)?;
    let base = Base::symmetric(base_curve.clone());
    let base_bound = accountant.epsilon(&base_curve, delta)?;
    let mean = match target_epsilon {
        Some(target) => {
            let c = largest_mean(&base, family, truncate, target, delta, orders)?;
            // At the search's cap the target does not bind: say so, never call it the optimum.
            let capped = c.value >= MAX_MEAN;
            if options.json {
                let out = json!({"mean": c.value, "epsilon": epsilon_up(c.bound.epsilon), "delta": delta,
                    "order": c.bound.order, "accountant": accountant.name(), "target_epsilon": target,
                    "dist": family.name(), "truncate": truncate, "base_epsilon": epsilon_up(base_bound.epsilon),
                    "capped": capped});
                return Ok(out.to_string());
            }
            let answer = if capped {
                format!(
                    "at least {}: the search stops at that cap, and even a mean of {} stays within the target",
                    fmt_num(MAX_MEAN),
                    fmt_num(MAX_MEAN)
                )
            } else {
                fmt_num(c.value)
            };
            return Ok(format!(
                "The largest mean number of runs with K ~ {} over {} that stays within (ε = {}, δ = {}) is {} (ε = {}).\n  protects: {}\n  accountant: {} (best order λ = {})",
                family.name(),
                description,
                fmt_num(target),
                fmt_num(delta),
                answer,
                fmt_epsilon(c.bound.epsilon),
                protects,
                describe_accountant(&accountant),
                fmt_order(c.bound.order),
            ));
        }
        None => mean.expect("clap requires --mean without --target-epsilon"),
    };
    let count = CountLaw::of(family, mean, truncate)?;
    let law = count.run_count()?;
    let selected = Event::repeat_and_select(count, run.event.clone())?;
    let curve = rdp_events::curve(&selected, &accountant)?;
    let bound = accountant.epsilon(&curve, delta)?;
    if !bound.epsilon.is_finite() {
        return Err(Error::Infeasible(format!(
            "repeat-and-select over {} has no finite ε at δ = {}",
            description,
            fmt_num(delta)
        )));
    }
    let theorem = bound_name(&law);
    if options.json {
        // The curve on the grid used: the base's own orders, the --orders list, or (continuous,
        // closed-form base) dp-accounting's 156 orders.
        let shown = match (orders, curve.grid()) {
            (_, Some(_)) => curve.clone(),
            (Orders::List(list), None) => curve.on_orders(list)?,
            (_, None) => curve.on_orders(&DP_ACCOUNTING_ORDERS)?,
        };
        let (o, e) = shown.grid().expect("sampled");
        let rdp: Vec<Value> = o
            .iter()
            .zip(e)
            .map(|(o, e)| json!({"order": o, "epsilon": finite_or_null(*e)}))
            .collect();
        let out = json!({"epsilon": epsilon_up(bound.epsilon), "delta": delta, "order": bound.order,
            "accountant": accountant.name(), "base_epsilon": epsilon_up(base_bound.epsilon), "mean": mean,
            "dist": law.family(), "truncate": truncate, "bound": theorem, "protects": protects, "rdp": rdp});
        return Ok(out.to_string());
    }
    Ok(format!(
        "Repeat-and-select with K ~ {} (mean {}) over {} is (ε = {}, δ = {})-DP; one run alone is (ε = {}, δ = {})-DP.\n  protects: {}\n  bound: {}\n  accountant: {} (best order λ = {})",
        law.family(),
        fmt_num(mean),
        description,
        fmt_epsilon(bound.epsilon),
        fmt_num(delta),
        fmt_epsilon(base_bound.epsilon),
        fmt_num(delta),
        protects,
        theorem,
        describe_accountant(&accountant),
        fmt_order(bound.order),
    ))
}

/// JSON has no infinity: an infinite RDP value (no bound at that order) is written as null.
fn finite_or_null(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else {
        Value::Null
    }
}

fn rdp_bound(accountant: &Accountant, curve: &RdpCurve, target: &Target) -> Result<DpBound, Error> {
    match (target.delta, target.epsilon) {
        (Some(delta), _) => accountant.epsilon(curve, delta),
        (None, Some(epsilon)) => accountant.delta(curve, epsilon),
        (None, None) => unreachable!("clap requires one target"),
    }
}

/// A mechanism's event, by the accountant asked for: its Rényi curve, its privacy-loss
/// distribution (the mechanisms the PLD accountant composes for it), or the smaller bound.
fn account_by(
    event: &Event,
    subject: &Subject,
    target: &Target,
    options: &RdpOptions,
    which: &WhichAccountant,
) -> Result<String, Error> {
    if which.accountant == AccountantArg::Rdp {
        return account_rdp(event, subject, target, options);
    }
    let by_pld = (|| {
        let mut pld = PldAccountant::new(which.pld_interval)?;
        let runs = Pld::run_of(event)?.ok_or_else(|| {
            Error::Infeasible(format!("a {} event has no PLD here", event.kind_name()))
        })?;
        for (m, count) in runs {
            pld.compose(m, count)?;
        }
        match (target.delta, target.epsilon) {
            (Some(delta), _) => pld.epsilon(delta),
            (None, Some(epsilon)) => pld.delta(epsilon),
            (None, None) => unreachable!("clap requires one target"),
        }
    })();
    let pld_how = describe_pld(which.pld_interval);
    let pld_name = crate::accounting::pld::accountant_name(which.pld_interval);
    let (bound, name, how) = if which.accountant == AccountantArg::Best {
        let accountant = options.accountant();
        let curve = rdp_events::curve(event, &accountant)?;
        let by_rdp = rdp_bound(&accountant, &curve, target)?;
        let rdp_how = describe_accountant(&accountant);
        // The smaller of two valid upper bounds: ε at the asked δ, or δ at the asked ε; where
        // the PLD gives none (its memory bound, a δ below its resolution), Rényi DP's.
        let value = |b: &DpBound| match target.delta {
            Some(_) if b.epsilon.is_finite() => format!("ε = {}", fmt_epsilon(b.epsilon)),
            Some(_) => "no finite ε".to_string(),
            None => format!("δ = {}", fmt_up_sig(b.delta, 7)),
        };
        match by_pld {
            Err(e) => (
                by_rdp,
                accountant.name(),
                format!("{rdp_how}; no PLD bound: {e}"),
            ),
            Ok(by_pld) => {
                let rdp_wins = match target.delta {
                    Some(_) => by_rdp.epsilon < by_pld.epsilon,
                    None => by_rdp.delta < by_pld.delta,
                };
                if rdp_wins {
                    let how = format!(
                        "{rdp_how}; the smaller of two bounds (the PLD gives {})",
                        value(&by_pld)
                    );
                    (by_rdp, accountant.name(), how)
                } else {
                    let how = format!(
                        "{pld_how}; the smaller of two bounds (Rényi DP gives {})",
                        value(&by_rdp)
                    );
                    (by_pld, pld_name, how)
                }
            }
        }
    } else {
        (by_pld?, pld_name, pld_how)
    };
    report(
        subject,
        &bound,
        &name,
        &how,
        target.delta.is_none(),
        options.json,
    )
}

fn describe_pld(interval: f64) -> String {
    format!(
        "privacy-loss distribution (connect the dots, losses on a grid of {})",
        fmt_num(interval)
    )
}

/// A mechanism's event, by its Rényi curve.
fn account_rdp(
    event: &Event,
    subject: &Subject,
    target: &Target,
    options: &RdpOptions,
) -> Result<String, Error> {
    let accountant = options.accountant();
    let curve = rdp_events::curve(event, &accountant)?;
    let bound = rdp_bound(&accountant, &curve, target)?;
    let how = describe_accountant(&accountant);
    let asked_delta = target.delta.is_none();
    report(
        subject,
        &bound,
        &accountant.name(),
        &how,
        asked_delta,
        options.json,
    )
}

fn report(
    subject: &Subject,
    bound: &DpBound,
    accountant: &str,
    how: &str,
    delta_was_computed: bool,
    json: bool,
) -> Result<String, Error> {
    if !bound.epsilon.is_finite() || bound.delta.is_nan() {
        return Err(Error::Infeasible(format!(
            "{} has no finite ε at δ = {}: it gives no useful privacy guarantee",
            subject.description,
            fmt_num(bound.delta)
        )));
    }
    // JSON carries the numbers the text prints: ε rounded up, a computed δ rounded up.
    let delta_value = if delta_was_computed {
        delta_up(bound.delta)
    } else {
        bound.delta
    };
    if json {
        let mut out = json!({"epsilon": epsilon_up(bound.epsilon), "delta": delta_value,
            "order": bound.order, "accountant": accountant, "protects": subject.protects});
        let params = subject
            .parameters
            .as_object()
            .expect("parameters are an object");
        out.as_object_mut().expect("object").extend(params.clone());
        return Ok(out.to_string());
    }
    let delta = if delta_was_computed {
        fmt_up_sig(bound.delta, 7)
    } else {
        fmt_num(bound.delta)
    };
    let order = match bound.order {
        Some(o) => format!(" (best order λ = {})", fmt_order(Some(o))),
        None => String::new(),
    };
    Ok(format!(
        "{} is (ε = {}, δ = {delta})-DP.\n  protects: {}\n  accountant: {how}{order}",
        subject.description,
        fmt_epsilon(bound.epsilon),
        subject.protects
    ))
}

/// ε for people, rounded up (never down): to 6 decimals, or to 7 significant digits from 1e6 on
/// (so 1e300 is not 301 digits, and nothing overflows to inf).
fn fmt_epsilon(epsilon: f64) -> String {
    if epsilon < 1e6 {
        fmt_up_decimals(epsilon, 6)
    } else {
        fmt_up_sig(epsilon, 7)
    }
}

/// The ε the text prints, as a number: what `--json` reports, so both say the same.
fn epsilon_up(epsilon: f64) -> f64 {
    fmt_epsilon(epsilon).parse().unwrap_or(epsilon)
}

/// A computed δ as printed (7 significant digits, rounded up), as a number for `--json`.
fn delta_up(delta: f64) -> f64 {
    fmt_up_sig(delta, 7).parse().unwrap_or(delta)
}

/// A Rényi order to 4 decimals, as 1 + (λ − 1) where that would print 1, in scientific
/// notation from 10⁶ on.
fn fmt_order(order: Option<f64>) -> String {
    match order {
        None => "n/a".into(),
        Some(o) if o - 1.0 < 5e-5 => format!("1 + {:.2e}", o - 1.0),
        Some(o) if o >= 1e6 => format!("{o:.4e}"),
        Some(o) => format!("{}", (o * 1e4).round() / 1e4),
    }
}

fn describe_accountant(accountant: &Accountant) -> String {
    let conversion = match accountant.conversion {
        Conversion::Cks => "Canonne–Kamath–Steinke conversion",
        Conversion::Mironov => "Mironov conversion",
    };
    let orders = match &accountant.orders {
        Orders::Continuous => "optimised over all orders λ > 1".to_string(),
        Orders::DpAccounting => {
            "over dp-accounting 0.6.0's 156 default orders and rules".to_string()
        }
        Orders::List(l) => format!("over the {} orders given", l.len()),
    };
    format!("Rényi DP {orders}, {conversion}")
}

fn verify_files(
    files: &[std::path::PathBuf],
    opts: &crate::sim::RunOptions,
    committed: &std::path::Path,
    doc: Option<&std::path::Path>,
    notes: Option<&std::path::Path>,
    summary_only: bool,
) -> Result<String, Error> {
    use crate::sim::{self, verify};
    let experiments = files
        .iter()
        .map(|f| sim::load(f, opts.profile))
        .collect::<Result<Vec<_>, Error>>()?;
    if !summary_only {
        for exp in &experiments {
            sim::experiment::check(exp)?;
        }
    }
    let mut lines = Vec::new();
    let mut differing = 0;
    for exp in experiments.iter().filter(|_| !summary_only) {
        let Some(record) = verify::verify(exp, committed, opts)? else {
            lines.push(format!(
                "{}: regeneration unfinished (other shards, or resume)",
                exp.name
            ));
            continue;
        };
        let bad: Vec<String> = record["files"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|f| f["matches"] != json!(true))
            .map(|f| {
                format!(
                    "  {}: {}",
                    f["file"].as_str().unwrap_or("?"),
                    f["outcome"].as_str().unwrap_or("?")
                )
            })
            .collect();
        if bad.is_empty() && record["committed_exists"] == json!(true) {
            verify::adopt_provenance(exp, committed, &opts.out)?;
            lines.push(format!(
                "{}: every file matches; its manifest now records this code and run",
                exp.name
            ));
        } else {
            differing += 1;
            let why = if record["committed_exists"] == json!(true) {
                format!("{} file(s) differ", bad.len())
            } else {
                "nothing committed to compare with".into()
            };
            lines.push(format!("{}: {why}\n{}", exp.name, bad.join("\n")));
        }
    }
    if let Some(doc) = doc {
        let notes = match notes {
            Some(p) => std::fs::read_to_string(p).map_err(|e| Error::io(p, e))?,
            None => String::new(),
        };
        crate::sim::table::write_text(
            doc,
            &verify::summary(&experiments, &opts.out, committed, &notes)?,
        )?;
        lines.push(format!("summary: {}", doc.display()));
    }
    if differing == 0 {
        return Ok(lines.join("\n"));
    }
    // A regression check: any difference fails it, after the report and the summary are
    // written.
    write_out(&lines.join("\n"), true);
    Err(Error::results(
        committed,
        format!(
            "{differing} of {} experiment(s) do not match their committed results (listed \
             above; each comparison is in {}/<name>/verify.json)",
            experiments.len(),
            opts.out.display()
        ),
    ))
}

/// Loads every file at `profile` (each validated at both profiles) before anything runs, so
/// that a typo in the last one fails fast; two experiments must not share a results folder.
fn load_experiments(
    files: &[std::path::PathBuf],
    profile: ProfileArg,
) -> Result<Vec<crate::sim::Experiment>, Error> {
    let experiments = files
        .iter()
        .map(|f| crate::sim::load(f, profile.into()))
        .collect::<Result<Vec<_>, Error>>()?;
    for (i, exp) in experiments.iter().enumerate() {
        if let Some(other) = experiments[..i].iter().find(|e| e.name == exp.name) {
            return Err(Error::Experiment {
                file: exp.file.display().to_string(),
                at: String::new(),
                field: "name".into(),
                reason: format!(
                    "`{}` is also the name of {}: each experiment needs its own results folder",
                    exp.name,
                    other.file.display()
                ),
            });
        }
    }
    Ok(experiments)
}

/// Refuses a folder flag (`--out`, `--scratch`) that names a file, or a folder inside one,
/// before anything runs (creating it would fail with "File exists" or "Not a directory").
fn check_folder(flag: &str, folder: &std::path::Path, holds: &str) -> Result<(), Error> {
    // The nearest part of the path that exists must be a folder (a link to one is).
    let Some(existing) = folder.ancestors().find(|a| a.symlink_metadata().is_ok()) else {
        return Ok(());
    };
    if existing.is_dir() {
        return Ok(());
    }
    let what = if existing == folder {
        "is a file, not a folder".to_string()
    } else {
        format!("cannot be a folder: {} is a file", existing.display())
    };
    Err(Error::results(
        folder,
        format!(
            "{flag} {} {what}; {flag} names the folder that holds {holds}",
            folder.display()
        ),
    ))
}

fn check_out_folder(out: &std::path::Path) -> Result<(), Error> {
    check_folder("--out", out, "the results (e.g. --out results)")
}

/// `sim status`; with `require_complete`, an error (after the status and the list of missing
/// units on stdout) unless every experiment is complete.
fn status_files(
    files: &[std::path::PathBuf],
    profile: ProfileArg,
    out: &std::path::Path,
    require_complete: bool,
    tasks: Option<u64>,
) -> Result<String, Error> {
    let experiments = files
        .iter()
        .map(|f| crate::sim::load(f, profile.into()))
        .collect::<Result<Vec<_>, Error>>()?;
    let text = experiments
        .iter()
        .map(|exp| crate::sim::status::status(exp, out))
        .collect::<Result<Vec<_>, Error>>()?
        .join("\n");
    if !require_complete {
        return Ok(text);
    }
    let found: Vec<_> = experiments
        .iter()
        .map(|e| shards::presence(e, out).map(|p| (e, p)))
        .collect::<Result<_, Error>>()?;
    let incomplete = found.iter().filter(|(_, p)| !p.merged).count();
    if incomplete == 0 {
        return Ok(text);
    }
    let missing: usize = found.iter().map(|(_, p)| p.missing.len()).sum();
    write_out(
        &format!(
            "{text}\n{}",
            shards::describe_missing(&found, tasks).trim_end()
        ),
        true,
    );
    Err(Error::results(
        out,
        format!(
            "{incomplete} of {} experiment(s) not complete: {missing} unit(s) missing (listed above)",
            experiments.len()
        ),
    ))
}

fn execute_sim(sim: Sim) -> Result<String, Error> {
    use crate::sim::{self, RunOptions, RunStatus, Shard};
    // Before anything touches BLAS (the checks below build workload instances).
    sim::single_threaded_blas();
    let mut lines = Vec::new();
    // `merge`: Some(the array's task count, if given) for `sim merge`.
    let mut draw = true;
    let (files, profile, out, run, merge) = match sim {
        Sim::Run {
            files,
            profile,
            threads,
            shard,
            out,
            quiet,
            rerun_stale,
            no_report,
            stop_after_units,
            stop_after_records,
        } => {
            draw = !no_report;
            let opts = RunOptions {
                profile: profile.into(),
                threads: threads.map(|t| t as usize),
                shard,
                out: out.clone(),
                progress: !quiet,
                rerun_stale,
                stop_after_units,
                stop_after_records,
            };
            (files, profile, out, Some(opts), None)
        }
        Sim::Merge {
            files,
            profile,
            out,
            tasks,
            threads,
        } => {
            let opts = RunOptions {
                profile: profile.into(),
                threads: threads.map(|t| t as usize),
                shard: Shard::ALL,
                out: out.clone(),
                progress: false,
                rerun_stale: false,
                stop_after_units: None,
                stop_after_records: None,
            };
            (files, profile, out, Some(opts), Some(tasks))
        }
        Sim::Report {
            files,
            profile,
            out,
        } => (files, profile, out, None, None),
        Sim::Verify {
            files,
            profile,
            out,
            scratch,
            threads,
            shard,
            doc,
            notes,
            summary_only,
            quiet,
        } => {
            check_out_folder(&out)?;
            check_folder("--scratch", &scratch, "the regeneration")?;
            let opts = RunOptions {
                profile: profile.into(),
                threads: threads.map(|t| t as usize),
                shard,
                out: scratch.clone(),
                progress: !quiet,
                rerun_stale: true,
                stop_after_units: None,
                stop_after_records: None,
            };
            return verify_files(
                &files,
                &opts,
                &out,
                doc.as_deref(),
                notes.as_deref(),
                summary_only,
            );
        }
        Sim::Status {
            files,
            profile,
            out,
            require_complete,
            tasks,
        } => {
            check_out_folder(&out)?;
            return status_files(&files, profile, &out, require_complete, tasks);
        }
        Sim::Slurm(request) => {
            check_out_folder(&request.out)?;
            let experiments = load_experiments(&request.files, request.profile)?;
            for exp in &experiments {
                sim::experiment::check(exp)?;
            }
            return slurm::slurm(&request, &experiments);
        }
    };
    check_out_folder(&out)?;
    let experiments = load_experiments(&files, profile)?;
    sim::report::check_index(&out)?;
    if run.is_some() {
        for exp in &experiments {
            sim::experiment::check(exp)?;
        }
    }
    // A run that computes or merges units holds its shard's lock on each experiment's folder
    // (`sim merge`: the whole split's) until it is done: a second run of the same units at
    // once is refused, never run beside it (a report only reads).
    let _locks = match &run {
        Some(opts) => experiments
            .iter()
            .map(|e| shards::ShardLock::acquire(&sim::results_dir(&out, e), opts.shard, &e.name))
            .collect::<Result<Vec<_>, Error>>()?,
        None => Vec::new(),
    };
    if let Some(tasks) = merge {
        let found: Vec<_> = experiments
            .iter()
            .map(|e| shards::presence(e, &out).map(|p| (e, p)))
            .collect::<Result<_, Error>>()?;
        let missing: usize = found.iter().map(|(_, p)| p.missing.len()).sum();
        if missing > 0 {
            let short = found.iter().filter(|(_, p)| !p.missing.is_empty()).count();
            write_out(shards::describe_missing(&found, tasks).trim_end(), true);
            return Err(Error::results(
                &out,
                format!(
                    "{missing} unit(s) of {short} experiment(s) missing (listed above): nothing \
                     merged; run them (`dptune sim slurm … --submit` again, or `dptune sim run`), \
                     then merge"
                ),
            ));
        }
    }
    let mut stale_ones = Vec::new();
    for exp in &experiments {
        if let Some(opts) = &run {
            match sim::run(exp, opts)? {
                RunStatus::Partial { present, total } => {
                    let then = if draw {
                        "merges and reports"
                    } else {
                        "merges; `sim merge` reports"
                    };
                    lines.push(format!("{}: shard done; {present} of {total} units present (the run that completes the last unit {then})", exp.name));
                    continue;
                }
                RunStatus::Complete {
                    results,
                    rows,
                    stale,
                    ..
                } => {
                    lines.push(format!(
                        "{}: {rows} rows in {}",
                        exp.name,
                        results.display()
                    ));
                    if let Some(why) = stale {
                        let line = format!("STALE {}: {why}", exp.name);
                        eprintln!("{line}; kept (regenerate with --rerun-stale)");
                        stale_ones.push(line);
                    }
                }
            }
        }
        if !draw {
            continue;
        }
        let files = sim::report(exp, &out)?;
        lines.push(format!(
            "{}: {} plot and table files in {}",
            exp.name,
            files.len(),
            sim::results_dir(&out, exp).display()
        ));
    }
    if draw {
        let index = sim::report::write_index(&out)?;
        lines.push(format!("index: {}", index.display()));
        // The findings cite paper-profile results: rendered from the template beside the
        // experiment files (sims/findings/), when there is one.
        let template = files
            .first()
            .and_then(|f| f.parent())
            .map(|d| d.join("findings"));
        if let Some(template) =
            template.filter(|t| t.is_dir() && matches!(profile, ProfileArg::Paper))
        {
            match sim::findings::render(&template, &out)? {
                Ok(path) => lines.push(format!("findings: {}", path.display())),
                Err(why) => lines.push(why),
            }
        }
    }
    if !stale_ones.is_empty() {
        lines.push(format!(
            "{} of these results were made by other code than this dptune's and were kept as \
             they are:\n  {}\nRegenerate them with `dptune sim run FILE… --rerun-stale` \
             (`just sims --rerun-stale`); the old results move to superseded/.",
            stale_ones.len(),
            stale_ones.join("\n  ")
        ));
    }
    Ok(lines.join("\n"))
}
