//! `dptune tune SEARCH.toml -- COMMAND [ARGS…]`: a private hyperparameter search over the
//! user's own training command (issue 39; the guide is `docs/tune.md`).
//!
//! The search file ([`file`]) declares the space, the tuner, the privacy of one run and of its
//! score, and the total budget; everything the guarantee rests on is known before the first
//! run. The tuner runs as an ask/tell session ([`crate::session`]): each asked run
//! executes COMMAND ([`command`]) in a fresh directory, and its score (noised by dptune when it
//! is a private one) is told back. Runs go side by side (`--jobs`) where the tuner's choices do
//! not depend on scores; every draw (the tuner's, each run's seed, the score noise) comes from
//! the file's seed and the run's index, so the release does not depend on `--jobs`.
//!
//! **What is published** is a [`Release`]: exactly what the tuner's theorem covers (the chosen
//! hyperparameters, the released score, the released run's own outputs, moved to
//! `OUT/released-run`), printed, written to `OUT/release.json`, and nothing else. Everything
//! else is private and lives under `OUT/private/`: the journal (every run's raw and told
//! scores, failures, timings, and for a tuner with a random number of runs that number), every
//! run's captured stdout and stderr (its raw score is there), the unreleased runs' outputs
//! with `--keep-all`. `--show-private` prints it, marked as not covered.
//!
//! **The journal cannot lie**: it keeps the session's state, the tuner stream's position and
//! the session's [`History`] (every ask and tell), each record checksummed. A resume
//! re-derives the session from the seed and the history and refuses a journal whose state,
//! position or records are not what that gives, so an edited or damaged journal cannot make
//! the search run more than its statement says.

pub mod command;
pub mod file;
pub mod space;

use crate::error::{fmt_num, Error, Result};
use crate::numeric::fmt_up_sig;
use crate::rng::{normal, stream};
use crate::session::{Evaluation, Next, Session, Told, Trial};
use crate::session::{History, Step};
use crate::tuners::runs::{BestOf, Candidates, State};
use crate::tuners::Outcome;
use crate::workloads::{Declarations, Space};
use command::Ended;
use file::{Goal, Plan, Selector};
use rand::RngCore;
use rand_chacha::ChaCha20Rng;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, VecDeque};
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

/// The published statement, in OUT.
const RELEASE: &str = "release.json";
/// The released run's output directory, in OUT (its name carries no index).
const RELEASED_RUN: &str = "released-run";
/// Everything private, in OUT.
const PRIVATE: &str = "private";
/// The journal, in OUT/private.
const JOURNAL: &str = "journal.json";
/// What a journal of an older dptune was called (in OUT itself).
const OLD_JOURNAL: &str = "journal.json";
/// The journal's format: 2 has checksums and the session's history.
const FORMAT: u32 = 2;
/// The largest journal read back (every user's loss of every DP-GIBO run is in it).
const JOURNAL_LIMIT: u64 = 1 << 30;
const PRIVATE_NOTE: &str = "PRIVATE: every run's raw and told score, failure and time, and the \
    number of runs: not covered by the privacy guarantee. Do not share this folder.";

/// One finished run, as the journal keeps it. Private: scores of runs not released.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Record {
    pub index: u64,
    pub point: Vec<f64>,
    pub seed: u64,
    /// Its output directory's name under `OUT/private/runs` (drawn at random, no index).
    pub dir: String,
    /// The command's score, clipped to the declared range (None: the run failed).
    pub raw_score: Option<f64>,
    /// The score as the command printed it (to find it in the released outputs).
    pub printed: Option<String>,
    /// Why it failed.
    pub failure: Option<String>,
    /// What the tuner was told (the worst score for a failure; noise added to a private score),
    /// on the user's scale.
    pub released_score: f64,
    pub seconds: f64,
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

/// What makes a search this search: a journal of another is never resumed.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
struct Fingerprint {
    /// SHA-256 of the search file's text.
    search_file: String,
    command: Vec<String>,
    /// SHA-256 of the script the command runs (`python3 train.py`), when it names one.
    script: Option<String>,
}

/// The journal, in memory.
struct Journal {
    fingerprint: Fingerprint,
    /// The seed of every draw (the file's, or a secret one).
    seed: u64,
    session: State,
    /// The tuner stream's position (words drawn).
    stream_position: u128,
    history: History,
    runs: Vec<Record>,
    /// Propose-test's shard runs.
    shard_runs: Vec<ShardRecord>,
    /// DP-GIBO's runs, one per point of a step.
    point_runs: Vec<PointRecord>,
    finished: bool,
}

/// A value and the SHA-256 of its JSON keyed by its journal (fingerprint and seed): a
/// damaged or edited record, or one moved from another journal, does not match.
#[derive(Serialize, Deserialize)]
struct Sealed<T> {
    record: T,
    sha256: String,
}

/// The session's part of the journal, sealed as one.
#[derive(Clone, Serialize, Deserialize)]
struct SessionPart {
    session: State,
    /// As text (a u128).
    stream_position: String,
    history: History,
    finished: bool,
}

/// The journal as written.
#[derive(Serialize, Deserialize)]
struct JournalFile {
    about: String,
    format: u32,
    fingerprint: Fingerprint,
    seed: u64,
    state: Sealed<SessionPart>,
    runs: Vec<Sealed<Record>>,
    shard_runs: Vec<Sealed<ShardRecord>>,
    point_runs: Vec<Sealed<PointRecord>>,
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn seal_key(fingerprint: &Fingerprint, seed: u64) -> String {
    format!("{}\0{seed}\0", canonical(fingerprint))
}

/// A record's JSON with its keys in order (a `serde_json::Value`'s), the text its checksum is of.
fn canonical<T: Serialize>(t: &T) -> String {
    serde_json::to_value(t)
        .and_then(|v| serde_json::to_string(&v))
        .expect("plain values")
}

fn seal<T: Serialize + Clone>(key: &str, t: &T) -> Sealed<T> {
    let json = canonical(t);
    Sealed {
        record: t.clone(),
        sha256: sha256_hex(format!("{key}{json}").as_bytes()),
    }
}

fn unseal<T: Serialize>(key: &str, s: Sealed<T>, what: &str) -> Result<T> {
    let json = canonical(&s.record);
    if sha256_hex(format!("{key}{json}").as_bytes()) != s.sha256 {
        return Err(Error::Infeasible(format!(
            "{what} is damaged or was edited (its checksum does not match)"
        )));
    }
    Ok(s.record)
}

/// Every record of a list unsealed, the n-th named `what record n` if it does not match.
fn unseal_all<T: Serialize>(key: &str, list: Vec<Sealed<T>>, what: &str) -> Result<Vec<T>> {
    list.into_iter()
        .enumerate()
        .map(|(i, s)| unseal(key, s, &format!("{what} record {i}")))
        .collect()
}

impl Journal {
    fn to_file(&self) -> JournalFile {
        let key = seal_key(&self.fingerprint, self.seed);
        JournalFile {
            about: PRIVATE_NOTE.into(),
            format: FORMAT,
            fingerprint: self.fingerprint.clone(),
            seed: self.seed,
            state: seal(
                &key,
                &SessionPart {
                    session: self.session.clone(),
                    stream_position: self.stream_position.to_string(),
                    history: self.history.clone(),
                    finished: self.finished,
                },
            ),
            runs: self.runs.iter().map(|r| seal(&key, r)).collect(),
            shard_runs: self.shard_runs.iter().map(|r| seal(&key, r)).collect(),
            point_runs: self.point_runs.iter().map(|r| seal(&key, r)).collect(),
        }
    }

    fn from_file(f: JournalFile) -> Result<Journal> {
        if f.format != FORMAT {
            return Err(Error::Infeasible(format!(
                "a journal of format {} (this dptune reads format {FORMAT})",
                f.format
            )));
        }
        let key = seal_key(&f.fingerprint, f.seed);
        let state = unseal(&key, f.state, "the session's state")?;
        let stream_position = state.stream_position.parse().map_err(|_| {
            Error::Infeasible(format!("bad stream position `{}`", state.stream_position))
        })?;
        Ok(Journal {
            fingerprint: f.fingerprint,
            seed: f.seed,
            session: state.session,
            stream_position,
            history: state.history,
            finished: state.finished,
            runs: unseal_all(&key, f.runs, "run")?,
            shard_runs: unseal_all(&key, f.shard_runs, "shard run")?,
            point_runs: unseal_all(&key, f.point_runs, "point run")?,
        })
    }
}

/// Where a search keeps what.
struct Layout {
    out: PathBuf,
}

impl Layout {
    fn private(&self) -> PathBuf {
        self.out.join(PRIVATE)
    }
    fn journal(&self) -> PathBuf {
        self.private().join(JOURNAL)
    }
    /// The runs' output directories.
    fn runs(&self) -> PathBuf {
        self.private().join("runs")
    }
    /// Each run's run file and captured stdout and stderr.
    fn logs(&self) -> PathBuf {
        self.private().join("logs")
    }
    fn released_run(&self) -> PathBuf {
        self.out.join(RELEASED_RUN)
    }
    fn release(&self) -> PathBuf {
        self.out.join(RELEASE)
    }
}

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
    let script = command::check_script(&opts.command)?;
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
        lines.extend(plan_words(&plan, public_count(&plan, planned)));
        if !count_is_public(&plan) && plan.guarantee.is_some() {
            lines.push(HIDDEN_COUNT.into());
            if let (true, Some(k)) = (opts.show_private, planned) {
                lines.push(format!(
                    "PRIVATE (--show-private): with this file's seed, {k} runs"
                ));
            }
        }
        return Ok(lines.join("\n"));
    }
    let fingerprint = Fingerprint {
        search_file: sha256_hex(text.as_bytes()),
        command: opts.command.clone(),
        script: match &script {
            Some(p) => Some(sha256_hex(&std::fs::read(p).map_err(|e| Error::io(p, e))?)),
            None => None,
        },
    };
    // (An --out that is a file is refused by the command line, before the search file.)
    std::fs::create_dir_all(&opts.out).map_err(|e| Error::io(&opts.out, e))?;
    // Absolute, so a command that changes directory still finds its output directory.
    let out = std::fs::canonicalize(&opts.out).map_err(|e| Error::io(&opts.out, e))?;
    let layout = Layout { out };
    let opts = &Options {
        out: layout.out.clone(),
        ..opts.clone()
    };
    let mut journal = open_journal(&plan, &layout, fingerprint)?;
    if !journal.finished {
        command::catch_interrupts();
        // What runs of this search a killed dptune left behind stop before anything runs.
        command::stop_leftovers(&layout.runs());
        let searched = search(&plan, &argv, opts, &layout, &mut journal);
        if searched.is_err() {
            command::stop_leftovers(&layout.runs());
        }
        searched?;
        // Nothing a run forked writes into the folders from here on.
        command::stop_leftovers(&layout.runs());
    }
    let outcome = journal.session.finish()?;
    let released = released_record(&journal, &outcome).cloned();
    if !journal.finished {
        keep_only_the_release(&layout, released.as_ref(), opts.keep_all)?;
        journal.finished = true;
        save(&layout.journal(), &journal)?;
    }
    let release = Release::of(&plan, &journal, &outcome, released.as_ref(), opts, &layout);
    let json = release.json();
    crate::sim::output::write_bytes(
        &layout.release(),
        serde_json::to_string_pretty(&json)
            .expect("plain values")
            .as_bytes(),
    )?;
    let mut text = release.words();
    if let Some(r) = &released {
        for f in files_with_the_raw_score(&layout.released_run(), r) {
            text.push_str(&format!(
                "\nWarning: {} contains the released run's raw score (the number your command \
                 printed, before dptune's noise), which the guarantee does not cover: remove it \
                 before you publish the output directory, and do not write the score into the \
                 run's outputs.",
                f.display()
            ));
        }
    }
    if opts.show_private {
        text.push_str(&private_table(&plan, &journal, released.as_ref()));
    } else if let Some(note) = failures_note(&journal, released.as_ref()) {
        // For the curator, on stderr: a search whose every run failed (a missing package)
        // would otherwise end in silence.
        eprintln!("{note}");
    }
    text.push_str(&format!("\nAs JSON:\n{json}"));
    Ok(text)
}

/// What failed, in words for the curator (private: never on stdout without --show-private).
fn failures_note(journal: &Journal, released: Option<&Record>) -> Option<String> {
    let failed = journal.runs.iter().filter(|r| r.failure.is_some()).count()
        + journal
            .shard_runs
            .iter()
            .filter(|r| r.failure.is_some())
            .count()
        + journal
            .point_runs
            .iter()
            .filter(|r| r.failure.is_some())
            .count();
    (failed > 0).then(|| {
        format!(
            "dptune tune: PRIVATE, for you, not for publication: {failed} of the {} runs \
             failed{}; --show-private says which and why. If they failed the same way (a \
             missing package or file), fix the command and start a new search in another \
             --out (its cost comes on top of this one's).",
            on_record(journal),
            if released.is_some_and(|r| r.failure.is_some()) {
                ", the released one among them (it was scored as the worst score)"
            } else {
                ""
            }
        )
    })
}

/// Whether the number of runs may be published: it may when the search file fixes it
/// (naive's k, propose-test's shard and final runs, DP-GIBO's steps, the baselines); a
/// repeat-and-select count drawn at random (Liu–Talwar, Papernot–Steinke) may not (their
/// theorems cover the best of K runs with K hidden: given K = k the release is a best of k,
/// whose loss grows with k), nor a threshold tuner's (it depends on the scores).
fn count_is_public(plan: &Plan) -> bool {
    match &plan.selector {
        Selector::Private(t, _) => !matches!(t.name(), "liu-talwar" | "papernot-steinke"),
        Selector::RandomSearch { .. } | Selector::GridSearch { .. } => true,
    }
}

/// What the statement says of a number of runs that must stay secret.
const HIDDEN_COUNT: &str = "  runs: not published (the tuner's number of runs must stay secret \
    for its theorem to hold)";

fn public_count(plan: &Plan, planned: Option<u64>) -> Option<u64> {
    planned.filter(|_| count_is_public(plan))
}

/// The journal of the search in `layout`: a new one when the folder is new (or empty), the
/// saved one when it is this search's and checks out, else an error that says why and
/// changes nothing.
fn open_journal(plan: &Plan, layout: &Layout, fingerprint: Fingerprint) -> Result<Journal> {
    let path = layout.journal();
    let refuse = |reason: String| Error::Results {
        path: path.display().to_string(),
        reason,
    };
    // Bounded, and never through a link (a regular file or nothing).
    let saved = crate::sim::output::read_text_limited(&path, JOURNAL_LIMIT)?;
    let Some(saved) = saved else {
        if layout.out.join(OLD_JOURNAL).exists() {
            return Err(Error::Results {
                path: layout.out.display().to_string(),
                reason: "holds a search of an older dptune, whose journal has no checksums and \
                         cannot be checked; choose another --out (nothing there is overwritten)"
                    .into(),
            });
        }
        let used = std::fs::read_dir(&layout.out)
            .map_err(|e| Error::io(&layout.out, e))?
            .next()
            .is_some();
        if used {
            return Err(Error::Results {
                path: layout.out.display().to_string(),
                reason: "exists and holds files dptune tune did not write; choose another \
                         --out (nothing there is overwritten)"
                    .into(),
            });
        }
        // A seed the file does not set is drawn from the operating system and kept only in
        // the journal: the noise of a release must not be recomputable from a public file.
        let seed = plan.seed.unwrap_or_else(rand::random);
        let mut rng = stream(seed, &[TUNER_STREAM]);
        let journal = Journal {
            fingerprint,
            seed,
            session: start(plan, &mut rng)?,
            stream_position: rng.get_word_pos(),
            history: History::default(),
            runs: Vec::new(),
            shard_runs: Vec::new(),
            point_runs: Vec::new(),
            finished: false,
        };
        for dir in [layout.private(), layout.runs(), layout.logs()] {
            std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        }
        save(&path, &journal)?;
        return Ok(journal);
    };
    let file: JournalFile = serde_json::from_str(&saved).map_err(|e| {
        refuse(format!(
            "not a journal of dptune tune ({e}); choose another --out"
        ))
    })?;
    if file.fingerprint != fingerprint {
        let what = if file.fingerprint.search_file != fingerprint.search_file {
            "another search file"
        } else if file.fingerprint.command != fingerprint.command {
            "another command"
        } else {
            "another version of the command's script (it changed since the search began)"
        };
        return Err(Error::Results {
            path: layout.out.display().to_string(),
            reason: format!(
                "holds a search with {what}; choose another --out (nothing there is \
                 overwritten; a new search spends its own budget)"
            ),
        });
    }
    let journal = Journal::from_file(file).map_err(|e| {
        refuse(format!(
            "{e}: the search cannot be resumed from it (nothing was run; a new search in \
             another --out spends its own budget)"
        ))
    })?;
    check_journal(plan, &journal).map_err(|e| {
        refuse(format!(
            "the journal is not what its own records give ({e}): it was damaged or edited, \
             and the search cannot be resumed from it (nothing was run)"
        ))
    })?;
    Ok(journal)
}

/// The saved journal re-derived: the session started from the seed and replayed through its
/// history must be the saved session at the saved stream position, and every told result
/// must be what the records give (each recomputed as at its tell: its noise from the seed),
/// each record belonging to one asked trial, none twice.
fn check_journal(plan: &Plan, j: &Journal) -> Result<()> {
    let mut rng = stream(j.seed, &[TUNER_STREAM]);
    let fresh = start(plan, &mut rng)?;
    let replayed = j.history.check(fresh, rng, &j.session, j.stream_position)?;
    let pending: BTreeSet<u64> = replayed.pending().iter().map(|t| t.index).collect();
    let mut told = BTreeSet::new();
    for step in &j.history.steps {
        let Step::Told { index, told: t } = step else {
            continue;
        };
        told.insert(*index);
        let derived = told_of(plan, j, *index)?;
        if derived.as_ref() != Some(t) {
            return Err(Error::Infeasible(format!(
                "run {index} was told a result its records do not give"
            )));
        }
    }
    let mut seen = BTreeSet::new();
    for r in &j.runs {
        if !seen.insert(r.index) {
            return Err(Error::Infeasible(format!(
                "run {} is on record twice",
                r.index
            )));
        }
        if !told.contains(&r.index) {
            return Err(Error::Infeasible(format!(
                "run {} is on record but was never told",
                r.index
            )));
        }
        if r.seed != run_seed(j.seed, r.index) {
            return Err(Error::Infeasible(format!(
                "run {}'s seed is not the search's",
                r.index
            )));
        }
    }
    let mut seen = BTreeSet::new();
    for r in &j.shard_runs {
        if !seen.insert((r.trial, r.candidate, r.shard)) {
            return Err(Error::Infeasible(format!(
                "shard run {}/{} of candidate {} is on record twice",
                r.shard, r.trial, r.candidate
            )));
        }
        if !told.contains(&r.trial) && !pending.contains(&r.trial) {
            return Err(Error::Infeasible(format!(
                "shard run {}/{} belongs to no trial asked",
                r.shard, r.trial
            )));
        }
    }
    let mut seen = BTreeSet::new();
    for r in &j.point_runs {
        if !seen.insert((r.trial, r.point)) {
            return Err(Error::Infeasible(format!(
                "point {} of step {} is on record twice",
                r.point, r.trial
            )));
        }
        if !told.contains(&r.trial) && !pending.contains(&r.trial) {
            return Err(Error::Infeasible(format!(
                "point {} of step {} belongs to no step asked",
                r.point, r.trial
            )));
        }
    }
    Ok(())
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

/// The tuner's session, its first draws (repeat-and-select's K) taken from `rng`.
fn start(plan: &Plan, rng: &mut ChaCha20Rng) -> Result<State> {
    let space = Space::UnitBox {
        dim: plan.space.dim(),
    };
    match &plan.selector {
        Selector::Private(t, _) => t.session(
            plan.declared
                .as_ref()
                .unwrap_or(&Declarations::of_space("the search", space)),
            rng,
        ),
        Selector::RandomSearch { candidates } => Ok(State::new(BestOf::new(
            *candidates,
            Candidates::Drawn(space),
        )?)),
        Selector::GridSearch { points } => Ok(State::new(BestOf::new(
            points.len() as u64,
            Candidates::Listed(points.clone()),
        )?)),
    }
}

/// Writes the journal whole, through a fresh temporary renamed over the old one: a kill leaves
/// one or the other, and a link there is replaced, never followed.
fn save(path: &Path, journal: &Journal) -> Result<()> {
    crate::sim::output::write_bytes(
        path,
        serde_json::to_string(&journal.to_file())
            .expect("plain values")
            .as_bytes(),
    )
}

/// A fresh name for a run's directory: random, so it says nothing of the run's index.
fn fresh_name() -> String {
    format!("{:016x}", rand::random::<u64>())
}

/// The released run's output directory moved to `OUT/released-run`; every other run's
/// output deleted (or, with `keep_all`, left in the private folder).
fn keep_only_the_release(layout: &Layout, released: Option<&Record>, keep_all: bool) -> Result<()> {
    if let Some(r) = released {
        let from = layout.runs().join(&r.dir);
        let to = layout.released_run();
        // Moved before a kill that stopped the end: nothing to move again.
        if from.is_dir() && std::fs::symlink_metadata(&to).is_err() {
            std::fs::rename(&from, &to).map_err(|e| Error::io(&to, e))?;
        }
    }
    if keep_all {
        return Ok(());
    }
    let runs = layout.runs();
    let entries = match std::fs::read_dir(&runs) {
        Ok(e) => e.collect::<std::io::Result<Vec<_>>>(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e),
    }
    .map_err(|e| Error::io(&runs, e))?;
    for entry in entries {
        let dir = entry.path();
        let removed = if entry.file_type().is_ok_and(|t| t.is_dir()) {
            std::fs::remove_dir_all(&dir)
        } else {
            std::fs::remove_file(&dir)
        };
        removed.map_err(|e| Error::io(&dir, e))?;
    }
    Ok(())
}

/// The files under `dir` (of at most 64 MiB each, 256 MiB in all, links not followed) whose
/// bytes contain the run's raw score as printed, or rounded to 4, 5 or 6 decimals.
fn files_with_the_raw_score(dir: &Path, r: &Record) -> Vec<PathBuf> {
    let Some(x) = r.raw_score else {
        return Vec::new();
    };
    let mut needles: Vec<String> = r.printed.iter().cloned().collect();
    needles.push(x.to_string());
    for d in 4..=6 {
        let t = format!("{x:.d$}");
        // Short texts (0.5000) are everywhere: only those with three digits that are not 0.
        if t.chars()
            .filter(|c| c.is_ascii_digit() && *c != '0')
            .count()
            >= 3
        {
            needles.push(t);
        }
    }
    needles.retain(|n| n.chars().filter(char::is_ascii_digit).count() >= 3);
    needles.sort();
    needles.dedup();
    let mut found = Vec::new();
    let mut budget: u64 = 256 << 20;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let Ok(t) = e.file_type() else { continue };
            if t.is_dir() {
                stack.push(e.path());
            } else if t.is_file() {
                let len = e.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
                if len > 64 << 20 || len > budget {
                    continue;
                }
                budget -= len;
                let Ok(bytes) = std::fs::read(e.path()) else {
                    continue;
                };
                if needles
                    .iter()
                    .any(|n| bytes.windows(n.len()).any(|w| w == n.as_bytes()))
                {
                    found.push(e.path());
                }
            }
        }
    }
    found
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
    dir: String,
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

/// Asks, runs and tells until the session is done, `opts.jobs` commands at a time. On an
/// error, the runs in flight are stopped, not waited for.
fn search(
    plan: &Plan,
    argv: &[String],
    opts: &Options,
    layout: &Layout,
    journal: &mut Journal,
) -> Result<()> {
    let journal_path = layout.journal();
    let seed = journal.seed;
    let mut rng = stream(seed, &[TUNER_STREAM]);
    rng.set_word_pos(journal.stream_position);
    // Evaluations asked before a kill and never told run again (what of them is on record,
    // shard runs, is kept).
    let mut queue: VecDeque<Job> = VecDeque::new();
    for t in journal.session.pending().to_vec() {
        queue.extend(jobs_of(&t, journal)?);
        tell_if_complete(plan, journal, t.index)?;
    }
    let total = journal.session.planned_runs();
    let done_runs = on_record(journal);
    // Runs done of how many, where the count may be shown (fixed before any data was seen;
    // a random count is private: shown only with --show-private); a run's end says nothing
    // of its score.
    let shown = total.filter(|_| count_is_public(plan) || opts.show_private);
    if total.is_some() && shown.is_none() && !opts.quiet {
        eprintln!(
            "dptune tune: running (no progress count: the number of runs is private; \
             --show-private shows it)"
        );
    }
    let progress = crate::sim::progress::Progress::counting(
        "dptune tune",
        "runs",
        shown.map_or(0, |t| t.saturating_sub(done_runs)),
        !opts.quiet && shown.is_some(),
    );
    let (sender, receiver) = mpsc::channel::<Finished>();
    let mut running = 0usize;
    std::thread::scope(|scope| -> Result<()> {
        let mut body = || -> Result<()> {
            loop {
                // Start commands while there are free jobs and the session can say what to
                // run (asking a session that waits or is done draws nothing).
                while running < opts.jobs.max(1) && !command::interrupted() {
                    let job = match queue.pop_front() {
                        Some(j) => j,
                        None => match journal.history.ask(&mut journal.session, &mut rng)? {
                            Next::Run(t) => {
                                journal.stream_position = rng.get_word_pos();
                                save(&journal_path, journal)?;
                                queue.extend(jobs_of(&t, journal)?);
                                continue;
                            }
                            Next::Done => {
                                journal.stream_position = rng.get_word_pos();
                                save(&journal_path, journal)?;
                                break;
                            }
                            Next::Wait => break,
                        },
                    };
                    let trial = journal
                        .session
                        .pending()
                        .iter()
                        .find(|t| t.index == job_index(job))
                        .cloned()
                        .ok_or_else(|| Error::Infeasible("a job of no pending trial".into()))?;
                    let (point, seed, shard) = match (job, &trial.evaluation) {
                        (Job::Run { index }, _) => {
                            (trial.hyper.clone(), run_seed(seed, index), None)
                        }
                        (
                            Job::Shard {
                                index,
                                candidate,
                                shard,
                            },
                            Evaluation::ShardUtilities { candidates, shards },
                        ) => (
                            candidates[candidate].clone(),
                            shard_seed(seed, index, candidate, shard),
                            Some((shard, *shards)),
                        ),
                        (Job::Point { index, point }, Evaluation::UserLosses { points }) => {
                            (points[point].clone(), point_seed(seed, index, point), None)
                        }
                        _ => {
                            return Err(Error::Infeasible("a job of another kind of trial".into()))
                        }
                    };
                    let values = plan.space.values(&point)?;
                    // A fresh directory for every attempt: one a killed attempt left (whose
                    // processes were stopped) is never reused.
                    let name = loop {
                        let n = fresh_name();
                        if std::fs::symlink_metadata(layout.runs().join(&n)).is_err() {
                            break n;
                        }
                    };
                    let sender = sender.clone();
                    let argv = argv.to_vec();
                    let dp_sgd = plan.dp_sgd.clone();
                    let users = plan.users.as_ref().map(|u| u.count);
                    let timeout = plan.timeout_s.map(Duration::from_secs_f64);
                    let (dir, private) = (layout.runs().join(&name), layout.logs().join(&name));
                    scope.spawn(move || {
                        let t0 = Instant::now();
                        let req = command::Request {
                            seed,
                            dir,
                            private,
                            values: &values,
                            dp_sgd: dp_sgd.as_ref(),
                            shard,
                            users,
                            timeout,
                        };
                        let ended = command::run(&argv, &req);
                        let _ = sender.send(Finished {
                            job,
                            dir: name,
                            ended,
                            seconds: t0.elapsed().as_secs_f64(),
                        });
                    });
                    running += 1;
                }
                if running == 0 {
                    if command::interrupted() {
                        return Err(Error::Infeasible(format!(
                            "interrupted: the {} finished run(s) are in {}; run the same \
                             command again to resume",
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
                // A command that cannot start stops the search; an interrupted run is no
                // result (it runs again on resuming).
                let ended = match f.ended? {
                    Ended::Interrupted => continue,
                    Ended::Failed(why) => Err(why),
                    e => Ok(e),
                };
                let trial = journal
                    .session
                    .pending()
                    .iter()
                    .find(|t| t.index == job_index(f.job))
                    .cloned()
                    .ok_or_else(|| {
                        Error::Infeasible("a finished job of no pending trial".into())
                    })?;
                let score = |e: std::result::Result<Ended, String>| match e {
                    Ok(Ended::Score(x, text)) => Ok((x, text)),
                    Ok(_) => Err("it reported something else than a score".to_string()),
                    Err(why) => Err(why),
                };
                match f.job {
                    Job::Run { index } => {
                        let record = run_record(
                            plan,
                            journal,
                            index,
                            trial.hyper,
                            f.dir,
                            score(ended),
                            f.seconds,
                        )?;
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
                            score(ended).map(|s| s.0),
                            f.seconds,
                        ));
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
                    }
                }
                tell_if_complete(plan, journal, trial.index)?;
                save(&journal_path, journal)?;
                progress.tick();
                let on_record = on_record(journal);
                if opts.stop_after_runs == Some(on_record) {
                    std::process::exit(3);
                }
            }
        };
        let r = body();
        if r.is_err() {
            // The scope waits for every run's thread: stop their runs rather than wait.
            command::stop_runs();
        }
        r
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
    ShardRecord {
        trial,
        candidate,
        shard,
        raw_score: raw,
        failure,
        utility: utility(s, raw),
        seconds,
    }
}

/// A shard run's clipped score mapped to [0, 1] (0 for a failure).
fn utility(s: &file::ScorePlan, raw: Option<f64>) -> f64 {
    raw.map_or(0.0, |x| match s.goal {
        Goal::Maximize => (x - s.lo) / (s.hi - s.lo),
        Goal::Minimize => (s.hi - x) / (s.hi - s.lo),
    })
    .clamp(0.0, 1.0)
}

/// Tells trial `index` what its records give, once every run of it is on record.
fn tell_if_complete(plan: &Plan, journal: &mut Journal, index: u64) -> Result<()> {
    if let Some(told) = told_of(plan, journal, index)? {
        journal.history.tell(&mut journal.session, index, told)?;
    }
    Ok(())
}

/// What trial `index` is told, from its records: a run's released score (oriented so larger
/// is better), the shard utilities, or the users' losses (n × b, a row per user; a failed
/// run gives every user the declared loss); None while a run of it is missing. The one place
/// a told result is made, at the tell and when a resumed journal is checked.
fn told_of(plan: &Plan, journal: &Journal, index: u64) -> Result<Option<Told>> {
    if let Some(r) = journal.runs.iter().find(|r| r.index == index) {
        let s = plan.score()?;
        let released = released_score(plan, journal.seed, index, r.raw_score)?;
        if released.to_bits() != r.released_score.to_bits()
            || r.raw_score.is_some_and(|x| x != x.clamp(s.lo, s.hi))
            || r.raw_score.is_some() == r.failure.is_some()
        {
            return Err(Error::Infeasible(format!(
                "run {index}'s record does not agree with itself"
            )));
        }
        return Ok(Some(Told::Score(match s.goal {
            Goal::Maximize => released,
            Goal::Minimize => -released,
        })));
    }
    let trial = journal.session.pending().iter().find(|t| t.index == index);
    let shards: Vec<&ShardRecord> = journal
        .shard_runs
        .iter()
        .filter(|r| r.trial == index)
        .collect();
    let points: Vec<&PointRecord> = journal
        .point_runs
        .iter()
        .filter(|r| r.trial == index)
        .collect();
    // A trial told already (when checking a journal): its shape from its records alone.
    let shape = match trial.map(|t| &t.evaluation) {
        Some(Evaluation::ShardUtilities { candidates, shards }) => {
            Some((candidates.len(), *shards))
        }
        Some(Evaluation::UserLosses { points }) => Some((points.len(), 0)),
        _ => None,
    };
    if !shards.is_empty() {
        let s = plan.score()?;
        let (c, k) = match shape {
            Some(ck) => ck,
            None => (
                shards.iter().map(|r| r.candidate + 1).max().unwrap_or(0),
                shards.iter().map(|r| r.shard + 1).max().unwrap_or(0),
            ),
        };
        let mut a = vec![vec![f64::NAN; k]; c];
        for r in &shards {
            let cell = a
                .get_mut(r.candidate)
                .and_then(|row| row.get_mut(r.shard))
                .ok_or_else(|| {
                    Error::Infeasible(format!(
                        "trial {index} has no shard run {}/{}",
                        r.candidate, r.shard
                    ))
                })?;
            if r.utility.to_bits() != utility(s, r.raw_score).to_bits() {
                return Err(Error::Infeasible(format!(
                    "shard run {}/{index} of candidate {}: its utility is not its score's",
                    r.shard, r.candidate
                )));
            }
            *cell = r.utility;
        }
        if a.iter().flatten().any(|x| x.is_nan()) {
            return Ok(None);
        }
        return Ok(Some(Told::Utilities(a)));
    }
    if !points.is_empty() {
        let users = plan.users.as_ref().ok_or_else(|| {
            Error::Infeasible("point runs in a search without validation users".into())
        })?;
        let b = match shape {
            Some((b, _)) => b,
            None => points.iter().map(|r| r.point + 1).max().unwrap_or(0),
        };
        let mut m = vec![vec![f64::NAN; b]; users.count];
        let mut told = vec![false; b];
        for r in &points {
            let Some(t) = told.get_mut(r.point) else {
                return Err(Error::Infeasible(format!(
                    "step {index} has no point {}",
                    r.point
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
        if !told.iter().all(|&t| t) {
            return Ok(None);
        }
        return Ok(Some(Told::Matrix(m)));
    }
    Ok(None)
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

/// What run `index` releases: its clipped score (the worst end for a failure) with the
/// private score's noise, on the user's scale.
fn released_score(plan: &Plan, seed: u64, index: u64, clipped: Option<f64>) -> Result<f64> {
    let s = plan.score()?;
    let noise = match s.noise_sd() {
        Some(sd) => sd * normal(&mut stream(seed, &[SCORE_NOISE_STREAM, index])),
        None => 0.0,
    };
    Ok(clipped.unwrap_or_else(|| s.worst()) + noise)
}

/// The record of run `index`: its score clipped to the range, or why it failed, and what it
/// released.
fn run_record(
    plan: &Plan,
    journal: &Journal,
    index: u64,
    point: Vec<f64>,
    dir: String,
    ended: std::result::Result<(f64, String), String>,
    seconds: f64,
) -> Result<Record> {
    let s = plan.score()?;
    let (raw, printed, failure) = match ended {
        Ok((x, text)) => (Some(x.clamp(s.lo, s.hi)), Some(text), None),
        Err(why) => (None, None, Some(why)),
    };
    Ok(Record {
        index,
        point,
        seed: run_seed(journal.seed, index),
        dir,
        raw_score: raw,
        printed,
        failure,
        released_score: released_score(plan, journal.seed, index, raw)?,
        seconds,
    })
}

/// The record of the run the outcome released: the first run told the released score at the
/// chosen point.
fn released_record<'a>(journal: &'a Journal, outcome: &Outcome) -> Option<&'a Record> {
    let chosen = outcome.chosen.as_ref()?;
    let score = outcome.released_score?;
    journal
        .runs
        .iter()
        .find(|r| &r.point == chosen && (r.released_score == score || -r.released_score == score))
}

/// What a search publishes, and nothing more: the tuner's theorem covers the chosen
/// hyperparameters, the released score and the released run's own outputs. Never the number
/// of runs of a tuner whose count is random or data-dependent, never a run's index, never a
/// time, never a raw or unreleased score.
struct Release<'a> {
    plan: &'a Plan,
    command: &'a [String],
    what: Released,
    /// The number of runs, where the search file fixed it (see [`count_is_public`]).
    runs: Option<u64>,
    keep_all: bool,
    /// Where the private things are.
    private: PathBuf,
}

/// What was released.
enum Released {
    /// A run: its hyperparameters, its score with dptune's noise (as the user reads it), and
    /// its output directory.
    Run {
        values: Vec<(String, space::Value)>,
        score: f64,
        output_dir: PathBuf,
    },
    /// DP-GIBO's last iterate θ_T, where no run trained.
    Iterate { values: Vec<(String, space::Value)> },
    /// The tuner's data-independent outcome: nothing.
    Nothing,
}

impl<'a> Release<'a> {
    fn of(
        plan: &'a Plan,
        journal: &Journal,
        outcome: &Outcome,
        released: Option<&Record>,
        opts: &'a Options,
        layout: &Layout,
    ) -> Release<'a> {
        let values = outcome
            .chosen
            .as_ref()
            .and_then(|c| plan.space.values(c).ok());
        let what = match (values, released) {
            (Some(values), Some(r)) => Released::Run {
                values,
                score: r.released_score,
                output_dir: layout.released_run(),
            },
            (Some(values), None) if plan.users.is_some() => Released::Iterate { values },
            _ => Released::Nothing,
        };
        Release {
            plan,
            command: &opts.command,
            what,
            runs: public_count(plan, journal.session.planned_runs()),
            keep_all: opts.keep_all,
            private: layout.private(),
        }
    }

    fn words(&self) -> String {
        let p = self.plan;
        let seed = p
            .seed_words()
            .unwrap_or_else(|| "a secret seed, kept in the private journal".into());
        let mut lines = vec![format!(
            "dptune tune: {} over `{}` ({seed}).",
            p.selector.label(),
            self.command.join(" "),
        )];
        let hyper = |lines: &mut Vec<String>, values: &[(String, space::Value)]| {
            for (name, v) in values {
                lines.push(format!("  {name} = {}", value_text(v)));
            }
        };
        match &self.what {
            Released::Run {
                values,
                score,
                output_dir,
            } => {
                lines.push("Released: the chosen run's hyperparameters,".into());
                hyper(&mut lines, values);
                let noised = if p.score.as_ref().is_some_and(|s| s.private.is_some()) {
                    ", with dptune's noise"
                } else {
                    ""
                };
                lines.push(format!("  score = {}{noised}", fmt_num(*score)));
                lines.push(format!("  its output directory: {}", output_dir.display()));
            }
            Released::Iterate { values } => {
                lines.push(
                    "Released: DP-GIBO's last iterate θ_T (no run trained there: train your \
                     final model at it), with"
                        .into(),
                );
                hyper(&mut lines, values);
            }
            Released::Nothing => lines.push(
                "Released: nothing (the tuner's data-independent outcome: it drew no run, \
                 or halted)"
                    .into(),
            ),
        }
        lines.extend(plan_words(p, self.runs));
        if p.guarantee.is_some() && !count_is_public(p) {
            lines.push(HIDDEN_COUNT.into());
        }
        lines.push(if p.users.is_some() && !self.keep_all {
            "Every run's output was deleted (DP-GIBO releases θ_T, no run's output).".to_string()
        } else if self.keep_all {
            "Warning: --keep-all kept the other runs' output directories, in the private \
             folder's runs/: they are not covered by the guarantee."
                .to_string()
        } else {
            "The other runs' outputs were deleted.".to_string()
        });
        lines.push(format!(
            "Everything else (the number of runs, every run's score, failure, log and time) \
             is private, in {}: not covered by the guarantee, never printed (--show-private \
             prints it, for you, not for publication).",
            self.private.display()
        ));
        lines.join("\n")
    }

    fn json(&self) -> serde_json::Value {
        let p = self.plan;
        let map = |values: &[(String, space::Value)]| {
            values
                .iter()
                .map(|(k, v)| (k.clone(), serde_json::to_value(v).expect("plain values")))
                .collect::<serde_json::Map<_, _>>()
        };
        let released = match &self.what {
            Released::Run {
                values,
                score,
                output_dir,
            } => serde_json::json!({
                "kind": "run",
                "hyperparameters": map(values),
                "score": score,
                "output_dir": output_dir,
            }),
            Released::Iterate { values } => serde_json::json!({
                "kind": "iterate",
                "hyperparameters": map(values),
            }),
            Released::Nothing => serde_json::json!({ "kind": "nothing" }),
        };
        serde_json::json!({
            "released": released,
            "privacy": p.guarantee.as_ref().map(|g| serde_json::json!({
                "epsilon": g.epsilon,
                "delta": g.delta,
                "theorem": g.theorem,
                "neighbours": p.relation,
                "calibrated": p.calibrated.map(|(f, v)| serde_json::json!({"field": f, "value": v})),
            })),
            "tuner": p.selector.label(),
            "runs": self.runs,
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
    use crate::accounting::event::Kind;
    let run = match (&p.dp_sgd, p.run.as_ref().map(|e| e.kind())) {
        (Some(d), _) => format!(
            "DP-SGD with {} lots, sampling rate {}, {} steps, noise multiplier {}",
            d.sampling,
            up4(d.sampling_rate),
            d.steps,
            fmt_num(d.noise_multiplier)
        ),
        (None, Some(Kind::RenyiCurve { orders, .. })) => {
            format!("the declared RDP curve ({} orders)", orders.len())
        }
        (None, Some(Kind::Zcdp { rho, .. })) => format!("{}-zCDP", fmt_num(*rho)),
        (None, Some(Kind::PureDp { epsilon })) => format!("{}-DP (pure)", fmt_num(*epsilon)),
        (None, Some(Kind::ApproximateDp { epsilon, delta })) => {
            format!("({}, {})-DP", fmt_num(*epsilon), fmt_num(*delta))
        }
        (None, Some(_)) => "the declared run".into(),
        (None, None) if p.users.is_some() => "training on data declared public".into(),
        (None, None) => "no privacy declared".into(),
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

/// Everything private: only with `--show-private`.
fn private_table(plan: &Plan, journal: &Journal, released: Option<&Record>) -> String {
    let mut lines = vec![
        String::new(),
        "PRIVATE (--show-private): for you, not for publication; nothing below is covered by \
         the privacy guarantee."
            .to_string(),
    ];
    if let Some(k) = journal.session.planned_runs() {
        lines.push(format!("  runs: {k}"));
    }
    if let Some(r) = released {
        lines.push(format!("  released: run {}", r.index));
        if let Some(why) = &r.failure {
            lines.push(format!(
                "  Warning: the released run FAILED ({why}), so it was scored as the worst \
                 score. If every run fails the same way (a missing package or file), fix the \
                 command and start a new search in another --out: the new search's cost comes \
                 on top of this one's."
            ));
        }
    }
    let seconds: f64 = journal.runs.iter().map(|r| r.seconds).sum::<f64>()
        + journal.shard_runs.iter().map(|r| r.seconds).sum::<f64>()
        + journal.point_runs.iter().map(|r| r.seconds).sum::<f64>();
    lines.push(format!("  time in runs: {seconds:.1} s"));
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
