//! `dptune tune SEARCH.toml -- COMMAND [ARGS…]`: a private hyperparameter search over the
//! user's own training command (issue 39; the guide is `docs/tune.md`).
//!
//! The search file ([`file`]) declares the space, the tuner, the privacy of one run and of its
//! score, and the total budget; everything the guarantee rests on is known before the first
//! run. The tuner runs as an ask/tell session ([`crate::tuners::session`]): each asked run
//! executes COMMAND ([`command`]) in a fresh directory, and its score (noised by dptune when it
//! is a private one) is told back. The session's state, its random stream's position and every
//! finished run go to a journal after each step, so a killed search resumes with no finished run
//! redone. Runs go side by side (`--jobs`) where the tuner's choices do not depend on scores;
//! every draw (the tuner's, each run's seed, the score noise) comes from the file's seed and the
//! run's index, so the release does not depend on `--jobs`.

pub mod command;
pub mod file;
pub mod space;

use crate::error::{Error, Result};
use crate::numeric::{fmt_num, fmt_up_sig};
use crate::rng::{normal, stream};
use crate::tuners::session::{BestOf, Candidates, Evaluation, Next, Session, State, Told, Trial};
use crate::tuners::Outcome;
use crate::workloads::{Declarations, Space};
use command::Ended;
use file::{Goal, Plan, RunPrivacy, Selector};
use rand::RngCore;
use rand_chacha::ChaCha20Rng;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// What `dptune tune` was asked.
#[derive(Clone, Debug)]
pub struct Options {
    pub file: PathBuf,
    pub command: Vec<String>,
    pub out: PathBuf,
    pub jobs: usize,
    pub keep_all: bool,
    pub show_private: bool,
    pub quiet: bool,
    /// Say what the search would cost (the guarantee, what a budget calibrates, the number
    /// of runs) and run nothing.
    pub dry_run: bool,
    /// Testing aid: exit abruptly once this many runs are on record, as if killed.
    pub stop_after_runs: Option<u64>,
}

/// The stream paths of the file's seed.
const TUNER_STREAM: u64 = 0x7475_6e65; // "tune"
const RUN_SEED_STREAM: u64 = 0x7275_6e73; // "runs"
const SCORE_NOISE_STREAM: u64 = 0x6e6f_6973; // "nois"
const SHARD_SEED_STREAM: u64 = 0x7368_7264; // "shrd"
const POINT_SEED_STREAM: u64 = 0x706f_696e; // "poin"

/// One finished run, as the journal keeps it. Private: scores of runs not released.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Record {
    pub index: u64,
    pub point: Vec<f64>,
    pub seed: u64,
    /// The command's score, clipped to the declared range (None: the run failed).
    pub raw_score: Option<f64>,
    /// Why it failed.
    pub failure: Option<String>,
    /// What the tuner was told (the worst score for a failure; noise added to a private score),
    /// on the user's scale.
    pub released_score: f64,
    pub seconds: f64,
}

/// The journal: enough to resume, and the private record of every finished run.
#[derive(Serialize, Deserialize)]
struct Journal {
    about: String,
    /// The search file's text and the command: a journal of another search is never resumed.
    fingerprint: String,
    /// The seed of every draw (the file's, or a secret one).
    seed: u64,
    session: State,
    /// The tuner stream's position (words drawn), as text (a u128).
    stream_position: String,
    runs: Vec<Record>,
    /// Propose-test's shard runs.
    #[serde(default)]
    shard_runs: Vec<ShardRecord>,
    /// DP-GIBO's runs, one per point of a step.
    #[serde(default)]
    point_runs: Vec<PointRecord>,
    #[serde(default)]
    finished: bool,
}

/// One shard run of propose-test's shard utilities. Private, like a run's score.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ShardRecord {
    pub trial: u64,
    pub candidate: usize,
    pub shard: usize,
    pub raw_score: Option<f64>,
    pub failure: Option<String>,
    /// The score mapped to [0, 1] (0 for a failure): what the tests see.
    pub utility: f64,
    pub seconds: f64,
}

/// One run of DP-GIBO's step `trial`, at its point `point`. Private: every user's loss.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct PointRecord {
    pub trial: u64,
    pub point: usize,
    /// Every validation user's loss (None: the run failed).
    pub losses: Option<Vec<f64>>,
    pub failure: Option<String>,
    pub seconds: f64,
}

const JOURNAL: &str = "journal.json";
const RELEASE: &str = "release.json";
const PRIVATE_NOTE: &str = "PRIVATE: the scores here are of runs that were not released; \
    they are not covered by the privacy guarantee. Do not share this file.";

/// Runs (or resumes) the search; the text to print.
pub fn tune(opts: &Options) -> Result<String> {
    let text = read_search_file(&opts.file)?;
    let plan = file::plan(&opts.file.display().to_string(), &text)?;
    if opts.command.is_empty() {
        return Err(Error::Infeasible(
            "no command: give the training command after `--`, e.g. \
             `dptune tune search.toml -- python3 train.py`"
                .into(),
        ));
    }
    let program = command::resolve(&opts.command[0])?;
    command::check_script(&opts.command)?;
    let mut argv = opts.command.clone();
    argv[0] = program.display().to_string();
    if opts.dry_run {
        // The runs are those of the file's seed; a secret seed is not drawn yet.
        let planned = match plan.seed {
            Some(seed) => start(&plan, &mut stream(seed, &[TUNER_STREAM]))?.planned_runs(),
            None => None,
        };
        let mut lines = vec![format!(
            "dptune tune: {} over `{}`, a dry run: nothing was run.",
            plan.selector.label(),
            opts.command.join(" "),
        )];
        lines.extend(plan_words(&plan, planned));
        return Ok(lines.join("\n"));
    }
    let fingerprint = fingerprint(&text, &opts.command);
    std::fs::create_dir_all(&opts.out).map_err(|e| Error::io(&opts.out, e))?;
    // Absolute, so a command that changes directory still finds its output directory.
    let out = std::fs::canonicalize(&opts.out).map_err(|e| Error::io(&opts.out, e))?;
    let opts = &Options {
        out,
        ..opts.clone()
    };
    let journal_path = opts.out.join(JOURNAL);
    let mut journal = match std::fs::read_to_string(&journal_path) {
        Ok(saved) => {
            let j: Journal = serde_json::from_str(&saved).map_err(|e| Error::Results {
                path: journal_path.display().to_string(),
                reason: format!("not a journal of dptune tune ({e}); choose another --out"),
            })?;
            if j.fingerprint != fingerprint {
                return Err(Error::Results {
                    path: opts.out.display().to_string(),
                    reason: "holds a search with another search file or command; choose \
                             another --out (nothing there is overwritten)"
                        .into(),
                });
            }
            j
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let used = std::fs::read_dir(&opts.out)
                .map_err(|e| Error::io(&opts.out, e))?
                .next()
                .is_some();
            if used {
                return Err(Error::Results {
                    path: opts.out.display().to_string(),
                    reason: "exists and holds files dptune tune did not write; choose \
                             another --out (nothing there is overwritten)"
                        .into(),
                });
            }
            // A seed the file does not set is drawn from the operating system and kept only
            // here: the noise of a release must not be recomputable from a public file.
            let seed = plan.seed.unwrap_or_else(rand::random);
            let mut rng = stream(seed, &[TUNER_STREAM]);
            Journal {
                about: PRIVATE_NOTE.into(),
                fingerprint,
                seed,
                session: start(&plan, &mut rng)?,
                stream_position: rng.get_word_pos().to_string(),
                runs: Vec::new(),
                shard_runs: Vec::new(),
                point_runs: Vec::new(),
                finished: false,
            }
        }
        Err(e) => return Err(Error::io(&journal_path, e)),
    };
    let started = Instant::now();
    if !journal.finished {
        command::catch_interrupts();
        search(&plan, &argv, opts, &mut journal, &journal_path)?;
    }
    let outcome = journal.session.finish()?;
    let released = released_run(&journal, &outcome);
    if !journal.finished {
        // Only the released run's directory stays (the others' outputs are not covered).
        if !opts.keep_all {
            let runs = opts.out.join("runs");
            let entries = match std::fs::read_dir(&runs) {
                Ok(e) => e.collect::<std::io::Result<Vec<_>>>(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
                Err(e) => Err(e),
            }
            .map_err(|e| Error::io(&runs, e))?;
            let keep = released.map(|i| i.to_string());
            for entry in entries {
                if Some(entry.file_name().to_string_lossy().into_owned()) != keep {
                    let dir = entry.path();
                    std::fs::remove_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
                }
            }
        }
        journal.finished = true;
        save(&journal_path, &journal)?;
    }
    let report = Report {
        plan: &plan,
        journal: &journal,
        outcome: &outcome,
        released,
        command: &opts.command,
        out: &opts.out,
        seconds: started.elapsed().as_secs_f64(),
        keep_all: opts.keep_all,
    };
    let json = report.json();
    let release_path = opts.out.join(RELEASE);
    std::fs::write(
        &release_path,
        serde_json::to_string_pretty(&json).expect("plain values"),
    )
    .map_err(|e| Error::io(&release_path, e))?;
    let mut text = report.words();
    if opts.show_private {
        text.push_str(&private_table(&plan, &journal));
    }
    text.push_str(&format!("\nTook {:.0} s. As JSON:\n{json}", report.seconds));
    Ok(text)
}

fn read_search_file(path: &Path) -> Result<String> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    if !meta.is_file() || meta.len() > 1 << 20 {
        return Err(Error::io(
            path,
            "not a search file (a TOML file under 1 MiB)",
        ));
    }
    std::fs::read_to_string(path).map_err(|e| Error::io(path, e))
}

fn fingerprint(text: &str, command: &[String]) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(text.as_bytes());
    for a in command {
        h.update([0u8]);
        h.update(a.as_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The tuner's session, its first draws (repeat-and-select's K) taken from `rng`.
fn start(plan: &Plan, rng: &mut ChaCha20Rng) -> Result<State> {
    let space = Space::UnitBox {
        dim: plan.space.dim(),
    };
    match &plan.selector {
        Selector::Private(t, _) => t
            .session(
                plan.declared
                    .as_ref()
                    .unwrap_or(&Declarations::of_space("the search", space)),
                rng,
            )?
            .ok_or_else(|| {
                Error::Infeasible(format!("tuner `{}` has no ask/tell session", t.name()))
            }),
        Selector::RandomSearch { candidates } => Ok(State::BestOf(BestOf::new(
            *candidates,
            Candidates::Drawn(space),
        )?)),
        Selector::GridSearch { points } => Ok(State::BestOf(BestOf::new(
            points.len() as u64,
            Candidates::Listed(points.clone()),
        )?)),
    }
}

fn run_dir(out: &Path, index: u64) -> PathBuf {
    out.join("runs").join(index.to_string())
}

/// Writes the journal whole and then renames it over the old one: a kill leaves one or the
/// other, never half of one.
fn save(path: &Path, journal: &Journal) -> Result<()> {
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_string(journal).expect("plain values"))
        .map_err(|e| Error::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
}

/// The tuner stream at the journal's position.
fn tuner_stream(seed: u64, position: &str) -> Result<ChaCha20Rng> {
    let mut rng = stream(seed, &[TUNER_STREAM]);
    let pos: u128 = position
        .parse()
        .map_err(|_| Error::Infeasible(format!("journal: bad stream position `{position}`")))?;
    rng.set_word_pos(pos);
    Ok(rng)
}

/// One command to run: a training run (trial `index`), or candidate `candidate`'s run on
/// shard `shard` of trial `index`'s shard utilities.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Job {
    Run {
        index: u64,
    },
    Shard {
        index: u64,
        candidate: usize,
        shard: usize,
    },
    /// DP-GIBO's step `index`, its point `point`.
    Point {
        index: u64,
        point: usize,
    },
}

struct Finished {
    job: Job,
    ended: Result<Ended>,
    seconds: f64,
}

/// The jobs of `trial` not yet on record.
fn jobs_of(trial: &Trial, journal: &Journal) -> Result<Vec<Job>> {
    Ok(match &trial.evaluation {
        Evaluation::Train => vec![Job::Run { index: trial.index }],
        Evaluation::ShardUtilities { candidates, shards } => (0..candidates.len())
            .flat_map(|j| (0..*shards).map(move |i| (j, i)))
            .filter(|&(j, i)| {
                !journal
                    .shard_runs
                    .iter()
                    .any(|r| r.trial == trial.index && r.candidate == j && r.shard == i)
            })
            .map(|(candidate, shard)| Job::Shard {
                index: trial.index,
                candidate,
                shard,
            })
            .collect(),
        Evaluation::UserLosses { points } => (0..points.len())
            .filter(|&j| {
                !journal
                    .point_runs
                    .iter()
                    .any(|r| r.trial == trial.index && r.point == j)
            })
            .map(|point| Job::Point {
                index: trial.index,
                point,
            })
            .collect(),
        other => {
            return Err(Error::Infeasible(format!(
                "a command cannot give {}",
                other.what()
            )))
        }
    })
}

/// Asks, runs and tells until the session is done, `opts.jobs` commands at a time.
fn search(
    plan: &Plan,
    argv: &[String],
    opts: &Options,
    journal: &mut Journal,
    journal_path: &Path,
) -> Result<()> {
    let seed = journal.seed;
    let mut rng = tuner_stream(seed, &journal.stream_position)?;
    // Evaluations asked before a kill and never told run again (what of them is on record,
    // shard runs, is kept).
    let mut queue: VecDeque<Job> = VecDeque::new();
    for t in journal.session.pending().to_vec() {
        queue.extend(jobs_of(&t, journal)?);
        tell_if_complete(plan, journal, &t)?;
    }
    let total = journal.session.planned_runs();
    let done_runs = on_record(journal);
    // Runs done of how many (fixed before any data was seen); a run's end says nothing of
    // its score.
    let progress = crate::sim::progress::Progress::counting(
        "dptune tune",
        "runs",
        total.map_or(0, |t| t.saturating_sub(done_runs)),
        !opts.quiet && total.is_some(),
    );
    let (sender, receiver) = mpsc::channel::<Finished>();
    let mut running = 0usize;
    std::thread::scope(|scope| -> Result<()> {
        loop {
            // Start commands while there are free jobs and the session can say what to run
            // (asking a session that waits or is done draws nothing).
            while running < opts.jobs.max(1) && !command::interrupted() {
                let job = match queue.pop_front() {
                    Some(j) => j,
                    None => match journal.session.ask(&mut rng)? {
                        Next::Run(t) => {
                            journal.stream_position = rng.get_word_pos().to_string();
                            save(journal_path, journal)?;
                            queue.extend(jobs_of(&t, journal)?);
                            continue;
                        }
                        Next::Wait | Next::Done => break,
                    },
                };
                let trial = journal
                    .session
                    .pending()
                    .iter()
                    .find(|t| t.index == job_index(job))
                    .cloned()
                    .ok_or_else(|| Error::Infeasible("a job of no pending trial".into()))?;
                let (point, dir, seed, shard) = match (job, &trial.evaluation) {
                    (Job::Run { index }, _) => (
                        trial.hyper.clone(),
                        run_dir(&opts.out, index),
                        run_seed(seed, index),
                        None,
                    ),
                    (
                        Job::Shard {
                            index,
                            candidate,
                            shard,
                        },
                        Evaluation::ShardUtilities { candidates, shards },
                    ) => (
                        candidates[candidate].clone(),
                        opts.out
                            .join("runs")
                            .join(format!("{index}-shards/{candidate}-{shard}")),
                        shard_seed(seed, index, candidate, shard),
                        Some((shard, *shards)),
                    ),
                    (Job::Point { index, point }, Evaluation::UserLosses { points }) => (
                        points[point].clone(),
                        opts.out
                            .join("runs")
                            .join(format!("{index}-points/{point}")),
                        point_seed(seed, index, point),
                        None,
                    ),
                    _ => return Err(Error::Infeasible("a job of another kind of trial".into())),
                };
                let values = plan.space.values(&point)?;
                if dir.exists() {
                    // What a killed attempt left: it never finished, so nothing was used.
                    std::fs::remove_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
                }
                let sender = sender.clone();
                let argv = argv.to_vec();
                let run = plan.run.clone();
                let users = plan.users.as_ref().map(|u| u.count);
                let timeout = plan.timeout_s.map(Duration::from_secs_f64);
                scope.spawn(move || {
                    let t0 = Instant::now();
                    let req = command::Request {
                        index: job_index(job),
                        seed,
                        dir,
                        values: &values,
                        run: run.as_ref(),
                        shard,
                        users,
                        timeout,
                    };
                    let ended = command::run(&argv, &req);
                    let _ = sender.send(Finished {
                        job,
                        ended,
                        seconds: t0.elapsed().as_secs_f64(),
                    });
                });
                running += 1;
            }
            if running == 0 {
                if command::interrupted() {
                    return Err(Error::Infeasible(format!(
                        "interrupted: the {} finished run(s) are in {}; run the same command \
                         again to resume",
                        on_record(journal),
                        journal_path.display()
                    )));
                }
                return Ok(());
            }
            let f = receiver
                .recv()
                .map_err(|_| Error::Infeasible("a run's thread stopped".into()))?;
            running -= 1;
            // A command that cannot start stops the search; an interrupted run is no result
            // (it runs again on resuming).
            let ended = match f.ended? {
                Ended::Score(x) => Ok(Ended::Score(x)),
                Ended::Losses(l) => Ok(Ended::Losses(l)),
                Ended::Failed(why) => Err(why),
                Ended::Interrupted => continue,
            };
            let trial = journal
                .session
                .pending()
                .iter()
                .find(|t| t.index == job_index(f.job))
                .cloned()
                .ok_or_else(|| Error::Infeasible("a finished job of no pending trial".into()))?;
            let score = |e: std::result::Result<Ended, String>| match e {
                Ok(Ended::Score(x)) => Ok(x),
                Ok(_) => Err("it reported something else than a score".to_string()),
                Err(why) => Err(why),
            };
            match f.job {
                Job::Run { index } => {
                    let record = tell(plan, journal, index, trial.hyper, score(ended), f.seconds)?;
                    journal.runs.push(record);
                    journal.runs.sort_by_key(|r| r.index);
                }
                Job::Shard {
                    index,
                    candidate,
                    shard,
                } => {
                    journal.shard_runs.push(shard_record(
                        plan.score()?,
                        index,
                        candidate,
                        shard,
                        score(ended),
                        f.seconds,
                    ));
                    tell_if_complete(plan, journal, &trial)?;
                }
                Job::Point { index, point } => {
                    let (losses, failure) = match ended {
                        Ok(Ended::Losses(l)) => (Some(l), None),
                        Ok(_) => (None, Some("it reported something else than losses".into())),
                        Err(why) => (None, Some(why)),
                    };
                    journal.point_runs.push(PointRecord {
                        trial: index,
                        point,
                        losses,
                        failure,
                        seconds: f.seconds,
                    });
                    tell_if_complete(plan, journal, &trial)?;
                }
            }
            save(journal_path, journal)?;
            progress.tick();
            let on_record = on_record(journal);
            if opts.stop_after_runs == Some(on_record) {
                std::process::exit(3);
            }
        }
    })
}

fn job_index(job: Job) -> u64 {
    match job {
        Job::Run { index } | Job::Shard { index, .. } | Job::Point { index, .. } => index,
    }
}

/// The runs on record, of every kind.
fn on_record(journal: &Journal) -> u64 {
    (journal.runs.len() + journal.shard_runs.len() + journal.point_runs.len()) as u64
}

/// One shard run's utility: its score on [0, 1] (1 the best end of the range), 0 for a
/// failure (the worst, never dropped).
fn shard_record(
    s: &file::ScorePlan,
    trial: u64,
    candidate: usize,
    shard: usize,
    ended: std::result::Result<f64, String>,
    seconds: f64,
) -> ShardRecord {
    let (raw, failure) = match ended {
        Ok(x) => (Some(x.clamp(s.lo, s.hi)), None),
        Err(why) => (None, Some(why)),
    };
    let utility = raw.map_or(0.0, |x| match s.goal {
        Goal::Maximize => (x - s.lo) / (s.hi - s.lo),
        Goal::Minimize => (s.hi - x) / (s.hi - s.lo),
    });
    ShardRecord {
        trial,
        candidate,
        shard,
        raw_score: raw,
        failure,
        utility: utility.clamp(0.0, 1.0),
        seconds,
    }
}

/// Tells `trial` its shard utilities, or its users' losses, once every run of it is on record.
fn tell_if_complete(plan: &Plan, journal: &mut Journal, trial: &Trial) -> Result<()> {
    if let (Evaluation::UserLosses { points }, Some(users)) = (&trial.evaluation, &plan.users) {
        // n × b, a row per user; a failed run gives every user the declared loss.
        let mut m = vec![vec![f64::NAN; points.len()]; users.count];
        let mut told = vec![false; points.len()];
        for r in journal.point_runs.iter().filter(|r| r.trial == trial.index) {
            let Some(t) = told.get_mut(r.point) else {
                return Err(Error::Infeasible(format!(
                    "journal: step {} has no point {}",
                    r.trial, r.point
                )));
            };
            *t = true;
            for (i, row) in m.iter_mut().enumerate() {
                row[r.point] = r
                    .losses
                    .as_ref()
                    .and_then(|l| l.get(i).copied())
                    .unwrap_or(users.failed_loss);
            }
        }
        if told.iter().all(|&t| t) {
            journal.session.tell(trial.index, Told::Matrix(m))?;
        }
        return Ok(());
    }
    let Evaluation::ShardUtilities { candidates, shards } = &trial.evaluation else {
        return Ok(());
    };
    let mut a = vec![vec![f64::NAN; *shards]; candidates.len()];
    for r in journal.shard_runs.iter().filter(|r| r.trial == trial.index) {
        a[r.candidate][r.shard] = r.utility;
    }
    if a.iter().flatten().any(|x| x.is_nan()) {
        return Ok(());
    }
    journal.session.tell(trial.index, Told::Utilities(a))
}

/// The seed handed to candidate `candidate`'s run on shard `shard`.
fn shard_seed(seed: u64, trial: u64, candidate: usize, shard: usize) -> u64 {
    stream(
        seed,
        &[SHARD_SEED_STREAM, trial, candidate as u64, shard as u64],
    )
    .next_u64()
}

/// The seed handed to DP-GIBO's run at point `point` of step `trial`.
fn point_seed(seed: u64, trial: u64, point: usize) -> u64 {
    stream(seed, &[POINT_SEED_STREAM, trial, point as u64]).next_u64()
}

/// The seed handed to run `index`.
fn run_seed(seed: u64, index: u64) -> u64 {
    stream(seed, &[RUN_SEED_STREAM, index]).next_u64()
}

/// Tells the session what run `index` released: its score clipped to the range (the worst
/// end for a failure), oriented so larger is better, with the private score's noise.
fn tell(
    plan: &Plan,
    journal: &mut Journal,
    index: u64,
    point: Vec<f64>,
    ended: std::result::Result<f64, String>,
    seconds: f64,
) -> Result<Record> {
    let s = plan.score()?;
    let (raw, failure) = match ended {
        Ok(x) => (Some(x.clamp(s.lo, s.hi)), None),
        Err(why) => (None, Some(why)),
    };
    let clipped = raw.unwrap_or_else(|| s.worst());
    let noise = match s.noise_sd() {
        Some(sd) => sd * normal(&mut stream(journal.seed, &[SCORE_NOISE_STREAM, index])),
        None => 0.0,
    };
    let released = clipped + noise;
    let told = match s.goal {
        Goal::Maximize => released,
        Goal::Minimize => -released,
    };
    journal.session.tell(index, Told::Score(told))?;
    Ok(Record {
        index,
        point,
        seed: run_seed(journal.seed, index),
        raw_score: raw,
        failure,
        released_score: released,
        seconds,
    })
}

/// The index of the run the outcome released (of equal ones, the first).
fn released_run(journal: &Journal, outcome: &Outcome) -> Option<u64> {
    let chosen = outcome.chosen.as_ref()?;
    journal
        .runs
        .iter()
        .find(|r| &r.point == chosen)
        .map(|r| r.index)
}

/// What the search released and under what guarantee.
struct Report<'a> {
    plan: &'a Plan,
    journal: &'a Journal,
    outcome: &'a Outcome,
    released: Option<u64>,
    command: &'a [String],
    out: &'a Path,
    seconds: f64,
    keep_all: bool,
}

impl Report<'_> {
    fn chosen_values(&self) -> Option<Vec<(String, space::Value)>> {
        self.outcome
            .chosen
            .as_ref()
            .and_then(|c| self.plan.space.values(c).ok())
    }

    fn released_record(&self) -> Option<&Record> {
        self.released
            .and_then(|i| self.journal.runs.iter().find(|r| r.index == i))
    }

    fn released_score(&self) -> Option<f64> {
        self.released_record().map(|r| r.released_score)
    }

    /// Why the released run failed. Its output directory is released, and with it whether
    /// it failed, so saying so costs nothing more.
    fn released_failure(&self) -> Option<&str> {
        self.released_record().and_then(|r| r.failure.as_deref())
    }

    fn words(&self) -> String {
        let p = self.plan;
        let seed = match p.seed {
            Some(s) => format!(
                "seed {s}, set in the search file: whoever knows it can recompute the noise, so \
                 leave it out for a release you share"
            ),
            None => "a secret seed, kept in the journal".into(),
        };
        let mut lines = vec![format!(
            "dptune tune: {} over `{}` ({seed}).",
            p.selector.label(),
            self.command.join(" "),
        )];
        match (self.chosen_values(), self.released) {
            (Some(values), Some(i)) => {
                lines.push(format!("Released: run {i}, with"));
                for (name, v) in values {
                    lines.push(format!("  {name} = {}", value_text(&v)));
                }
                if let Some(s) = self.released_score() {
                    let noised = if p.score.as_ref().is_some_and(|s| s.private.is_some()) {
                        ", with dptune's noise"
                    } else {
                        ""
                    };
                    lines.push(format!("  score = {}{noised}", fmt_num(s)));
                }
                if let Some(why) = self.released_failure() {
                    lines.push(format!(
                        "  Warning: this run FAILED ({why}), so it was scored as the worst \
                         score. If every run fails the same way (a missing package or file), fix \
                         the command and start a new search: this one resumes as it is from {} \
                         (delete it or pass another --out), and the new search's cost comes on \
                         top of this one's.",
                        self.out.display()
                    ));
                }
                if !self.keep_all {
                    lines.push(format!(
                        "  its output directory: {}",
                        run_dir(self.out, i).display()
                    ));
                }
            }
            (Some(values), None) if p.users.is_some() => {
                lines.push(
                    "Released: DP-GIBO's last iterate θ_T (no run trained there: train your \
                     final model at it), with"
                        .into(),
                );
                for (name, v) in values {
                    lines.push(format!("  {name} = {}", value_text(&v)));
                }
            }
            _ => lines.push(
                "Released: nothing (the tuner's data-independent outcome: it drew no run, \
                 or halted)"
                    .into(),
            ),
        }
        lines.extend(plan_words(p, self.journal.session.planned_runs()));
        lines.push(if p.users.is_some() && !self.keep_all {
            "Every run's output was deleted (DP-GIBO releases θ_T, no run's output); the \
             users' losses are in the journal, private, never printed (--show-private prints \
             a summary of them: what it prints is not covered)."
                .to_string()
        } else if self.keep_all {
            "Warning: --keep-all kept every run's output directory; the unreleased ones \
             are not covered by the guarantee."
                .to_string()
        } else {
            "The other runs' outputs were deleted; their scores (and any failures) are in the \
             journal, private, never printed (--show-private prints them: what it prints is not \
             covered)."
                .to_string()
        });
        lines.join("\n")
    }

    fn json(&self) -> serde_json::Value {
        let p = self.plan;
        let chosen = self.chosen_values().map(|vals| {
            vals.into_iter()
                .map(|(k, v)| (k, serde_json::to_value(v).expect("plain values")))
                .collect::<serde_json::Map<_, _>>()
        });
        serde_json::json!({
            "released": {
                "run": self.released,
                "hyperparameters": chosen,
                "score": self.released_score(),
                "failure": self.released_failure(),
                "output_dir": self.released.filter(|_| !self.keep_all).map(|i| run_dir(self.out, i)),
            },
            "privacy": p.guarantee.as_ref().map(|g| serde_json::json!({
                "epsilon": g.epsilon,
                "delta": g.delta,
                "theorem": g.theorem,
                "neighbours": p.relation,
                "calibrated": p.calibrated.map(|(f, v)| serde_json::json!({"field": f, "value": v})),
            })),
            "tuner": p.selector.label(),
            "runs": self.journal.session.planned_runs(),
            // A secret seed stays in the journal.
            "seed": p.seed,
        })
    }
}

/// `x` rounded up to four significant digits, in plain notation where it is short.
fn up4(x: f64) -> String {
    // A number that is already short (the δ a file asks for) is printed as it is: its text
    // reads back as the same double.
    let exact = fmt_num(x);
    let digits = exact
        .split(['e', 'E'])
        .next()
        .unwrap_or("")
        .chars()
        .filter(char::is_ascii_digit)
        .collect::<String>();
    if digits.trim_start_matches('0').len() <= 4 && exact.parse::<f64>() == Ok(x) {
        return exact;
    }
    let up = fmt_up_sig(x, 4);
    up.parse::<f64>().map_or(up, fmt_num)
}

/// The guarantee of `p` in words: the (ε, δ), its theorem, the neighbours, one run, what was
/// calibrated and the number of runs when it is fixed in advance.
fn plan_words(p: &Plan, planned_runs: Option<u64>) -> Vec<String> {
    let mut lines = Vec::new();
    match &p.guarantee {
        Some(g) => {
            lines.push(format!(
                "Privacy: ({}, {})-DP for the whole search (every run, and what it \
                 released), by {}.",
                up4(g.epsilon),
                up4(g.delta),
                g.theorem
            ));
            lines.push(format!("  neighbours: {}", p.relation));
            lines.push(format!("  one run: {}", run_words(p)));
            if let Some((field, v)) = p.calibrated {
                lines.push(format!(
                    "  {field} = {} was calibrated to meet the budget",
                    fmt_num(v)
                ));
            }
            if let Some(k) = planned_runs {
                lines.push(format!("  runs: {k} (fixed before any data was seen)"));
            }
        }
        None => lines.push(
            "Privacy: none claimed (a non-private baseline: its runs and release are not \
             differentially private)."
                .into(),
        ),
    }
    lines
}

fn run_words(p: &Plan) -> String {
    let run = match &p.run {
        Some(RunPrivacy::DpSgd(d)) => format!(
            "DP-SGD with {} lots, sampling rate {}, {} steps, noise multiplier {}",
            d.sampling,
            up4(d.sampling_rate),
            d.steps,
            fmt_num(d.noise_multiplier)
        ),
        Some(RunPrivacy::Rdp { orders, .. }) => {
            format!("the declared RDP curve ({} orders)", orders.len())
        }
        Some(RunPrivacy::Zcdp(rho)) => format!("{}-zCDP", fmt_num(*rho)),
        Some(RunPrivacy::PureDp(e)) => format!("{}-DP (pure)", fmt_num(*e)),
        Some(RunPrivacy::ApproxDp(e, d)) => format!("({}, {})-DP", fmt_num(*e), fmt_num(*d)),
        None if p.users.is_some() => "training on data declared public".into(),
        None => "no privacy declared".into(),
    };
    let Some(score) = &p.score else {
        let n = p.users.as_ref().map_or(0, |u| u.count);
        return format!(
            "{run}; it reports the losses of the {n} validation users at one point, which \
             DP-GIBO turns into clipped, noised gradient steps"
        );
    };
    match (score.private, score.noise_sd()) {
        (Some((m, z)), Some(sd)) => format!(
            "{run}; its score, a mean over {m} private records in [{}, {}], released with \
             N(0, {}²) noise (noise multiplier {})",
            fmt_num(score.lo),
            fmt_num(score.hi),
            up4(sd),
            fmt_num(z)
        ),
        _ => format!("{run}; its score computed on public data"),
    }
}

fn value_text(v: &space::Value) -> String {
    match v {
        space::Value::Number(x) => fmt_num(*x),
        space::Value::Integer(i) => i.to_string(),
        space::Value::Text(t) => t.clone(),
    }
}

/// How a run ended, for the private table: its score or why it failed.
fn ended_text(raw_score: Option<f64>, failure: Option<&str>) -> String {
    match (raw_score, failure) {
        (Some(x), _) => format!("score {}", fmt_num(x)),
        (None, Some(why)) => format!("FAILED: {why}"),
        (None, None) => "?".into(),
    }
}

/// Every run's score and failure: only with `--show-private`.
fn private_table(plan: &Plan, journal: &Journal) -> String {
    let mut lines = vec![
        String::new(),
        "PRIVATE (--show-private): every run, released or not. What follows is not covered by \
         the privacy guarantee."
            .to_string(),
    ];
    for r in &journal.runs {
        let values = plan
            .space
            .values(&r.point)
            .map(|v| {
                v.iter()
                    .map(|(k, v)| format!("{k}={}", value_text(v)))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default();
        let how = ended_text(r.raw_score, r.failure.as_deref());
        lines.push(format!(
            "  run {}: {values}: {how}; told {} ({:.1} s)",
            r.index,
            fmt_num(r.released_score),
            r.seconds
        ));
    }
    for r in &journal.shard_runs {
        let how = ended_text(r.raw_score, r.failure.as_deref());
        lines.push(format!(
            "  shard run {}/{} of candidate {}: {how}; utility {} ({:.1} s)",
            r.shard,
            r.trial,
            r.candidate,
            fmt_num(r.utility),
            r.seconds
        ));
    }
    for r in &journal.point_runs {
        let how = match (&r.losses, &r.failure) {
            (Some(l), _) => format!(
                "mean loss {} over {} users",
                fmt_num(l.iter().sum::<f64>() / l.len().max(1) as f64),
                l.len()
            ),
            (None, why) => format!("FAILED: {}", why.as_deref().unwrap_or("?")),
        };
        lines.push(format!(
            "  step {} point {}: {how} ({:.1} s)",
            r.trial, r.point, r.seconds
        ));
    }
    lines.join("\n")
}
