//! Tuners as ask/tell state machines (issue 39): the protocol every tuner's session speaks
//! and the one executor that drives it. A session asks for evaluations ([`Session::ask`];
//! several at once where its choices do not depend on their results), is told what each gave
//! ([`Session::tell`]) and ends with the release ([`Session::finish`]). Its state is plain
//! data (serde): a run can stop after any tell and resume from the saved state, not from
//! replayed draws.
//!
//! The guarantee is the tuner's, known before the first ask
//! ([`crate::tuners::Tuner::guarantee`]): a session only decides *which* evaluations happen,
//! every told result being a released one. The sessions themselves live with their algorithms
//! (`tuners::runs` for best-of and threshold runs, `gibo::session`, `gp_ucb::session`,
//! `propose_test::session`); this module sits below all of them.
//!
//! [`drive`] runs a session over an [`Evaluator`] with one random stream, drawn from in the
//! order the tuners' loops always drew (the session's draws for a run, then the run's own),
//! so tuning through a session gives the same draws and the same release.

use crate::error::{Error, Result};
use crate::rng::{stream_at, word_position};
use crate::workloads::{Hyper, PrivateTraining};
use rand::RngCore;
use serde::{Deserialize, Serialize};

/// The diagnostic a tuner reports as the number of tests it ran (the data-dependent
/// `passes_data_dependent` column of tuning results).
pub const PASSES: &str = "passes";
/// The diagnostic of a GDP tuner's μ (data-independent).
pub const MU: &str = "mu";
/// The diagnostic of the noise std of each of a tuner's own releases (data-independent).
pub const NOISE_STD: &str = "noise_std";

/// What one tuning run released.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outcome {
    /// The chosen hyperparameter (None when the tuner released its data-independent default,
    /// e.g. K = 0 or a halt).
    pub chosen: Option<Hyper>,
    /// The private score released with it.
    pub released_score: Option<f64>,
    /// Training runs performed (data-dependent for threshold variants: report only).
    pub runs: u64,
    /// Quantities a tuner reports about its run, by name (propose-test's data-dependent
    /// `passes`, DP-GIBO's `mu` and `noise_std`): report only, never part of a guarantee.
    pub diagnostics: Vec<(&'static str, f64)>,
    /// Whether the tuner fell back to a data-independent choice it still released in `chosen`.
    pub fallback: bool,
}

impl Outcome {
    /// The diagnostic called `name`, if the tuner reported one.
    pub fn diagnostic(&self, name: &str) -> Option<f64> {
        self.diagnostics
            .iter()
            .find_map(|&(n, v)| (n == name).then_some(v))
    }
}

/// One iteration of an iterative tuner, as a trace study sees it: the iterate (in the unit
/// box) and named values. A non-private diagnostic: nothing here is released by the tuner.
#[derive(Clone, Copy, Debug)]
pub struct TraceRow<'a> {
    pub point: &'a [f64],
    pub values: &'a [(&'static str, f64)],
}

impl TraceRow<'_> {
    /// The value called `name`, if the row has one.
    pub fn value(&self, name: &str) -> Option<f64> {
        self.values
            .iter()
            .find_map(|&(n, v)| (n == name).then_some(v))
    }
}

/// Receives the rows of [`crate::tuners::Tuner::tune_observed`]; any `FnMut(&TraceRow)` is one.
pub trait Observer {
    fn observe(&mut self, row: &TraceRow);
}

impl<F: FnMut(&TraceRow)> Observer for F {
    fn observe(&mut self, row: &TraceRow) {
        self(row)
    }
}

/// One evaluation a session asks for: its index (0, 1, … in asking order), what to evaluate,
/// and where its random draws come from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    pub index: u64,
    /// The candidate (for a private training run).
    pub hyper: Hyper,
    #[serde(default)]
    pub evaluation: Evaluation,
    /// `Some((seed, tag))`: the evaluation draws from `rng::stream(seed, &[tag])`, a stream of
    /// the tuner's own; `None`: from the stream that drives the session.
    #[serde(default)]
    pub stream: Option<(u64, u64)>,
    /// Where in its own stream the evaluation starts (words drawn before it): a tuner whose
    /// evaluations continue one stream (DP-GIBO's) is told where each left it
    /// ([`Session::stream_left_at`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub position: u64,
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}

/// What a trial evaluates.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Evaluation {
    /// One private training run at the trial's candidate: told the score it released.
    #[default]
    Train,
    /// The utility in [0, 1] of each candidate trained on each of `shards` disjoint shards
    /// (propose-test's subsample-and-aggregate): told a[j][i].
    ShardUtilities {
        candidates: Vec<Hyper>,
        shards: usize,
    },
    /// Every validation user's loss at each of `points` (unit box; the trial's `hyper` is
    /// the iterate they are chosen around): told an n × b matrix, a row per user (DP-GIBO).
    UserLosses { points: Vec<Hyper> },
    /// Every validation user's exact loss gradient at the trial's `hyper`: told an n × d
    /// matrix, a row per user, in the losses' native units (DP-GD).
    UserGradients,
    /// A noisy evaluation of the validation gain at the trial's grid point, under its
    /// declared GP prior (private GP-UCB): told as a score.
    ValidationGain,
    /// The exact validation gain of the regularised model at the trial's λ (Kusner et al.'s
    /// Algorithm 3): told as a score.
    RegularisedGain,
}

impl Evaluation {
    /// What the evaluation gives, in words.
    pub fn what(&self) -> &'static str {
        match self {
            Evaluation::Train => "a training run's score",
            Evaluation::ShardUtilities { .. } => "shard utilities",
            Evaluation::UserLosses { .. } => "per-user losses",
            Evaluation::UserGradients => "per-user gradients",
            Evaluation::ValidationGain | Evaluation::RegularisedGain => "a validation gain",
        }
    }
}

/// What an evaluation gave.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Told {
    Score(f64),
    Utilities(Vec<Vec<f64>>),
    /// Per-user losses (n × b) or gradients (n × d), a row per user.
    Matrix(Vec<Vec<f64>>),
}

impl Told {
    /// The score of a training run, or an error naming what was told instead.
    pub fn score(self) -> Result<f64> {
        match self {
            Told::Score(s) if s.is_finite() => Ok(s),
            Told::Score(s) => Err(Error::invalid(
                "score",
                s,
                "a finite number (a failed run is told its worst score, never dropped)",
            )),
            Told::Utilities(_) | Told::Matrix(_) => Err(Error::Infeasible(
                "told a table of values where a training run's score was asked for".into(),
            )),
        }
    }

    /// A matrix told as rows, checked: `rows` × `cols`, every value finite.
    pub fn matrix(self, what: &str, rows: usize, cols: usize) -> Result<ndarray::Array2<f64>> {
        let Told::Matrix(m) = self else {
            return Err(Error::Infeasible(format!(
                "told something else where {what} were asked for"
            )));
        };
        if m.len() != rows || m.iter().any(|r| r.len() != cols) {
            return Err(Error::Infeasible(format!(
                "{what} of the wrong shape: want {rows} × {cols}, told {} rows of lengths {:?}",
                m.len(),
                m.iter().map(Vec::len).collect::<Vec<_>>()
            )));
        }
        if m.iter().flatten().any(|v| !v.is_finite()) {
            return Err(Error::Numerical(format!("{what}: a value is not finite")));
        }
        Ok(ndarray::Array2::from_shape_fn((rows, cols), |(i, j)| {
            m[i][j]
        }))
    }
}

/// Evaluates what sessions ask for: a workload's capabilities in the harness, the user's
/// command in `dptune tune`.
pub trait Evaluator {
    fn evaluate(&self, trial: &Trial, rng: &mut dyn RngCore) -> Result<Told>;
    /// Every user's exact loss gradient at `point` (d × n), where the evaluator knows them: a
    /// non-private diagnostic for simulations (spec 004 §4.3), never told to a tuner.
    fn exact_user_gradients(&self, point: &Hyper) -> Option<ndarray::Array2<f64>> {
        let _ = point;
        None
    }
}

impl<T: PrivateTraining + ?Sized> Evaluator for T {
    fn evaluate(&self, trial: &Trial, rng: &mut dyn RngCore) -> Result<Told> {
        match trial.evaluation {
            Evaluation::Train => Ok(Told::Score(self.train(&trial.hyper, rng))),
            _ => Err(Error::Infeasible(
                "a private training run cannot give shard utilities".into(),
            )),
        }
    }
}

/// What a session wants next.
#[derive(Clone, Debug, PartialEq)]
pub enum Next {
    /// Run this trial and tell its score.
    Run(Trial),
    /// Tell the scores of the pending runs first: what comes next depends on them.
    Wait,
    /// The tuner has decided: [`Session::finish`] gives the release.
    Done,
}

/// A tuning run as a state machine.
pub trait Session {
    /// The next run, if the tuner can say it before the pending runs are told (a best-of
    /// session can: its candidates do not depend on scores, so its runs may go side by side;
    /// a threshold session cannot). Draws what the tuner draws before the run (a candidate, a
    /// halting coin) from `rng`, so the draws follow the asking order, whoever runs them.
    fn ask(&mut self, rng: &mut dyn RngCore) -> Result<Next>;
    /// What the pending evaluation `index` gave (pending ones may be told in any order).
    fn tell(&mut self, index: u64, told: Told) -> Result<()>;
    /// The release, once [`Session::ask`] has said [`Next::Done`].
    fn finish(&self) -> Result<Outcome>;
    /// Where the evaluation of pending trial `index`, which drew from its own stream from
    /// [`Trial::position`] on, left that stream; called before its tell. A tuner whose
    /// evaluations continue one stream keeps the position for the next trial.
    fn stream_left_at(&mut self, index: u64, position: u64) {
        let _ = (index, position);
    }
    /// Reports what the last tell did (an iteration's non-private diagnostics) to
    /// `observer`, if the tuner reports anything; `evaluator` may add diagnostics of its own
    /// ([`Evaluator::exact_user_gradients`]). Observing never changes the run.
    fn observe_last(&self, evaluator: &dyn Evaluator, observer: &mut dyn Observer) {
        let _ = (evaluator, observer);
    }
}

/// A kind of session that can be saved and resumed: plain data (serde) under its kind's name.
/// A tuner's session type implements it, and its tuner's registry line lists it
/// (`tuners::REGISTRY`), which is how a saved state is read back: no other list names it.
pub trait SessionKind:
    Session + Clone + Serialize + serde::de::DeserializeOwned + Send + Sync + 'static
{
    /// The key it is saved under (`{"best-of": {…}}`).
    const KIND: &'static str;
    /// The number of runs, when it is known before any data is seen (a best-of session's
    /// K, propose-test's shard runs and final run); None where it depends on the scores.
    fn planned_runs(&self) -> Option<u64>;
    /// The runs asked for and not yet told.
    fn pending(&self) -> &[Trial];
    /// Whether its tells check what they are told before changing anything (a refused tell
    /// leaves it as it was); where not, a caller that must survive a refused tell tells a copy.
    fn tells_atomically(&self) -> bool {
        false
    }
}

/// A session of any saved kind, behind one type ([`SessionKind`] made object-safe).
pub trait SavedSession: Session + Send + Sync {
    fn kind(&self) -> &'static str;
    fn to_json(&self) -> serde_json::Result<serde_json::Value>;
    fn boxed_clone(&self) -> Box<dyn SavedSession>;
    fn planned_runs(&self) -> Option<u64>;
    fn pending(&self) -> &[Trial];
    fn tells_atomically(&self) -> bool;
}

impl<T: SessionKind> SavedSession for T {
    fn kind(&self) -> &'static str {
        T::KIND
    }
    fn to_json(&self) -> serde_json::Result<serde_json::Value> {
        serde_json::to_value(self)
    }
    fn boxed_clone(&self) -> Box<dyn SavedSession> {
        Box::new(self.clone())
    }
    fn planned_runs(&self) -> Option<u64> {
        SessionKind::planned_runs(self)
    }
    fn pending(&self) -> &[Trial] {
        SessionKind::pending(self)
    }
    fn tells_atomically(&self) -> bool {
        SessionKind::tells_atomically(self)
    }
}

/// How the saved state of one kind of session is read back.
#[derive(Clone, Copy)]
pub struct Restorer {
    pub kind: &'static str,
    pub restore: fn(serde_json::Value) -> serde_json::Result<Box<dyn SavedSession>>,
}

/// The [`Restorer`] of session kind `T`.
pub const fn restorer<T: SessionKind>() -> Restorer {
    Restorer {
        kind: T::KIND,
        restore: restore::<T>,
    }
}

fn restore<T: SessionKind>(json: serde_json::Value) -> serde_json::Result<Box<dyn SavedSession>> {
    Ok(Box::new(serde_json::from_value::<T>(json)?))
}

/// Runs `session` to its end, one evaluation at a time, each drawing from its own stream or
/// from `rng` after the session's own draws for it.
pub fn drive(
    session: &mut dyn Session,
    evaluator: &dyn Evaluator,
    rng: &mut dyn RngCore,
) -> Result<Outcome> {
    drive_observed(session, evaluator, rng, &mut |_: &TraceRow| {})
}

/// [`drive`], reporting to `observer` what each tell did ([`Session::observe_last`]): the one
/// executor of every tuner's session, observed or not.
pub fn drive_observed(
    session: &mut dyn Session,
    evaluator: &dyn Evaluator,
    rng: &mut dyn RngCore,
    observer: &mut dyn Observer,
) -> Result<Outcome> {
    drive_each(session, evaluator, rng, &mut |s, e| {
        s.observe_last(e, observer)
    })
}

/// [`drive`], calling `each` with the session and the evaluator after every tell.
pub fn drive_each<S: Session + ?Sized>(
    session: &mut S,
    evaluator: &dyn Evaluator,
    rng: &mut dyn RngCore,
    each: &mut dyn FnMut(&S, &dyn Evaluator),
) -> Result<Outcome> {
    loop {
        match session.ask(rng)? {
            Next::Run(trial) => {
                let told = match trial.stream {
                    Some((seed, tag)) => {
                        let mut own = stream_at(seed, tag, trial.position);
                        let told = evaluator.evaluate(&trial, &mut own)?;
                        session.stream_left_at(trial.index, word_position(&own)?);
                        told
                    }
                    None => evaluator.evaluate(&trial, rng)?,
                };
                session.tell(trial.index, told)?;
                each(session, evaluator);
            }
            Next::Done => return session.finish(),
            Next::Wait => {
                return Err(Error::Infeasible(
                    "a session waited with no run pending".into(),
                ))
            }
        }
    }
}

/// The runs asked for so far, the ones told, and the ones pending.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Progress {
    pub(crate) asked: u64,
    pub(crate) told: u64,
    pub(crate) pending: Vec<Trial>,
}

impl Progress {
    pub(crate) fn start(&mut self, hyper: Hyper) -> Next {
        self.start_with(hyper, Evaluation::Train, None)
    }

    pub(crate) fn start_with(
        &mut self,
        hyper: Hyper,
        evaluation: Evaluation,
        stream: Option<(u64, u64)>,
    ) -> Next {
        self.start_at(hyper, evaluation, stream, 0)
    }

    /// A trial whose evaluation draws from its own `stream` from word `position` on.
    pub(crate) fn start_at(
        &mut self,
        hyper: Hyper,
        evaluation: Evaluation,
        stream: Option<(u64, u64)>,
        position: u64,
    ) -> Next {
        let trial = Trial {
            index: self.asked,
            hyper,
            evaluation,
            stream,
            position,
        };
        self.asked += 1;
        self.pending.push(trial.clone());
        Next::Run(trial)
    }

    /// The pending trial `index`, now told (removed from the pending ones only when `told`
    /// is a valid answer to it).
    pub(crate) fn told(&mut self, index: u64, told: Told) -> Result<(Trial, Told)> {
        let at = self.position(index)?;
        let told = match (&self.pending[at].evaluation, told) {
            (Evaluation::Train, t) => Told::Score(t.score()?),
            (Evaluation::ShardUtilities { candidates, shards }, Told::Utilities(a)) => {
                if a.len() != candidates.len() || a.iter().any(|row| row.len() != *shards) {
                    return Err(Error::Infeasible(format!(
                        "shard utilities of the wrong shape (want {} × {shards})",
                        candidates.len()
                    )));
                }
                Told::Utilities(a)
            }
            (Evaluation::UserLosses { .. } | Evaluation::UserGradients, m @ Told::Matrix(_)) => m,
            (Evaluation::ValidationGain | Evaluation::RegularisedGain, t @ Told::Score(_)) => {
                Told::Score(t.score()?)
            }
            (evaluation, _) => {
                return Err(Error::Infeasible(format!(
                    "told something else where {} were asked for",
                    evaluation.what()
                )))
            }
        };
        self.told += 1;
        Ok((self.pending.remove(at), told))
    }

    /// The pending trial `index`, or an error naming the pending ones.
    pub(crate) fn pending_trial(&self, index: u64) -> Result<&Trial> {
        Ok(&self.pending[self.position(index)?])
    }

    fn position(&self, index: u64) -> Result<usize> {
        let Some(at) = self.pending.iter().position(|t| t.index == index) else {
            let waiting: Vec<String> = self.pending.iter().map(|t| t.index.to_string()).collect();
            return Err(Error::Infeasible(format!(
                "told run {index}, but the runs waiting for their scores are: {}",
                if waiting.is_empty() {
                    "none".into()
                } else {
                    waiting.join(", ")
                }
            )));
        };
        Ok(at)
    }

    pub(crate) fn done_or_wait(&self) -> Next {
        if self.pending.is_empty() {
            Next::Done
        } else {
            Next::Wait
        }
    }
}

pub(crate) fn unfinished(progress: &Progress, more: bool) -> Result<()> {
    if !progress.pending.is_empty() || more {
        return Err(Error::Infeasible(format!(
            "the tuning run is not over ({} run(s) told): ask until it says it is done",
            progress.told
        )));
    }
    Ok(())
}

/// One step of a session's [`History`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Step {
    /// An ask that returned trial `index`.
    Asked(u64),
    /// An ask that said the tuner is done (a threshold tuner's halting coin is drawn there).
    Done,
    /// An ask that waited after drawing from the stream.
    Waited,
    /// Trial `index`'s evaluation left its own stream at `position` (before its tell).
    LeftAt { index: u64, position: u64 },
    /// What trial `index` was told, as the session accepted it.
    Told { index: u64, told: Told },
}

/// Everything a session was asked and told, in order: what a saved session is re-derived
/// from. A state read back from a file is only believed when the session started afresh and
/// replayed through its history equals it ([`History::check`]), so an edited or damaged state
/// cannot claim a number of runs, a best run or a stream position that its recorded results
/// do not give.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct History {
    pub steps: Vec<Step>,
}

impl History {
    /// `session.ask(rng)`, recorded (an ask that waits without drawing changes nothing and is
    /// not recorded: a caller may ask as often as it likes).
    pub fn ask<S: Session + ?Sized>(
        &mut self,
        session: &mut S,
        rng: &mut rand_chacha::ChaCha20Rng,
    ) -> Result<Next> {
        let before = rng.get_word_pos();
        let next = session.ask(rng)?;
        match &next {
            Next::Run(t) => self.steps.push(Step::Asked(t.index)),
            Next::Done => self.steps.push(Step::Done),
            Next::Wait if rng.get_word_pos() != before => self.steps.push(Step::Waited),
            Next::Wait => {}
        }
        Ok(next)
    }

    /// `session.tell(index, told)`, recorded once the session accepts it.
    pub fn tell<S: Session + ?Sized>(
        &mut self,
        session: &mut S,
        index: u64,
        told: Told,
    ) -> Result<()> {
        session.tell(index, told.clone())?;
        self.steps.push(Step::Told { index, told });
        Ok(())
    }

    /// `session.stream_left_at(index, position)`, recorded.
    pub fn left_at<S: Session + ?Sized>(&mut self, session: &mut S, index: u64, position: u64) {
        session.stream_left_at(index, position);
        self.steps.push(Step::LeftAt { index, position });
    }

    /// The session `start` (as it was before its first ask) taken through every step, its
    /// asks drawing from `rng` (the stream it started with, at its start).
    pub fn replay<S: Session>(&self, start: S, rng: &mut rand_chacha::ChaCha20Rng) -> Result<S> {
        let mut s = start;
        for (k, step) in self.steps.iter().enumerate() {
            let differs =
                |what: String| Error::Infeasible(format!("step {k} of the history: {what}"));
            match step {
                Step::Asked(i) => match s.ask(rng)? {
                    Next::Run(t) if t.index == *i => {}
                    other => {
                        return Err(differs(format!(
                            "recorded as asking run {i}, but the session {}",
                            said(&other)
                        )))
                    }
                },
                Step::Done => match s.ask(rng)? {
                    Next::Done => {}
                    other => {
                        return Err(differs(format!(
                            "recorded as the end, but the session {}",
                            said(&other)
                        )))
                    }
                },
                Step::Waited => match s.ask(rng)? {
                    Next::Wait => {}
                    other => {
                        return Err(differs(format!(
                            "recorded as a wait, but the session {}",
                            said(&other)
                        )))
                    }
                },
                Step::LeftAt { index, position } => s.stream_left_at(*index, *position),
                Step::Told { index, told } => s
                    .tell(*index, told.clone())
                    .map_err(|e| differs(format!("telling run {index} failed: {e}")))?,
            }
        }
        Ok(s)
    }

    /// `saved` (a session state read back, with its stream at word `position`) checked
    /// against this history replayed from `start` and `rng`: the replayed session when they
    /// agree, else an error naming the first difference. Compared as saved (their JSON): what
    /// a session does not save (DP-GIBO's and GP-UCB's last-step diagnostics) is no part of
    /// its state, so a replayed session that holds it still equals the state read back.
    pub fn check<S: Session + Serialize>(
        &self,
        start: S,
        mut rng: rand_chacha::ChaCha20Rng,
        saved: &S,
        position: u128,
    ) -> Result<S> {
        let replayed = self.replay(start, &mut rng)?;
        let json = |s: &S| {
            serde_json::to_value(s)
                .map_err(|e| Error::Infeasible(format!("a session state as JSON: {e}")))
        };
        let (saved_json, replayed_json) = (json(saved)?, json(&replayed)?);
        if saved_json != replayed_json {
            return Err(Error::Infeasible(format!(
                "the saved state is not what its recorded history gives: {}",
                first_difference("", &saved_json, &replayed_json)
            )));
        }
        if rng.get_word_pos() != position {
            return Err(Error::Infeasible(format!(
                "the saved stream position {position} is not what its recorded history gives \
                 ({})",
                rng.get_word_pos()
            )));
        }
        Ok(replayed)
    }
}

fn said(next: &Next) -> String {
    match next {
        Next::Run(t) => format!("asked run {}", t.index),
        Next::Wait => "waited".into(),
        Next::Done => "said it is done".into(),
    }
}

/// Where two JSON values first differ, as `path: saved … where the history gives …`.
fn first_difference(path: &str, saved: &serde_json::Value, derived: &serde_json::Value) -> String {
    use serde_json::Value;
    let at = |p: &str| {
        if p.is_empty() {
            "the state".to_string()
        } else {
            p.to_string()
        }
    };
    match (saved, derived) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, va) in a {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match b.get(k) {
                    Some(vb) if va == vb => {}
                    Some(vb) => return first_difference(&p, va, vb),
                    None => return format!("{p}: saved, but the history gives no such field"),
                }
            }
            match b.keys().find(|k| !a.contains_key(*k)) {
                Some(k) => format!(
                    "{}: missing from the saved state",
                    if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    }
                ),
                None => format!("{}: differs", at(path)),
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .find(|(_, (x, y))| x != y)
            .map(|(i, (x, y))| first_difference(&format!("{path}[{i}]"), x, y))
            .unwrap_or_else(|| format!("{}: differs", at(path))),
        _ => {
            let clip = |v: &Value| {
                let t = v.to_string();
                if t.chars().count() > 80 {
                    format!("{}…", t.chars().take(80).collect::<String>())
                } else {
                    t
                }
            };
            format!(
                "{}: saved {}, where the history gives {}",
                at(path),
                clip(saved),
                clip(derived)
            )
        }
    }
}

#[cfg(test)]
mod history_tests {
    use super::*;
    use crate::rng::stream;
    use crate::tuners::runs::{BestOf, Candidates, State, Threshold};
    use crate::workloads::Space;

    fn best_of(k: u64) -> State {
        State::new(BestOf::new(k, Candidates::Drawn(Space::UnitBox { dim: 2 })).unwrap())
    }

    /// Asks two, tells one, asks one more, tells both: the history replays to the same state.
    fn run(history: &mut History, s: &mut State, rng: &mut rand_chacha::ChaCha20Rng) {
        for _ in 0..2 {
            history.ask(s, rng).unwrap();
        }
        history.tell(s, 1, Told::Score(0.25)).unwrap();
        history.ask(s, rng).unwrap();
        history.tell(s, 0, Told::Score(0.5)).unwrap();
        history.tell(s, 2, Told::Score(0.125)).unwrap();
    }

    #[test]
    fn a_state_is_believed_only_when_its_history_gives_it() {
        let (mut s, mut rng, mut h) = (best_of(5), stream(7, &[1]), History::default());
        run(&mut h, &mut s, &mut rng);
        let pos = rng.get_word_pos();
        let replayed = h.check(best_of(5), stream(7, &[1]), &s, pos).unwrap();
        assert_eq!(replayed, s);
        // A history read back from JSON replays the same.
        let h2: History = serde_json::from_str(&serde_json::to_string(&h).unwrap()).unwrap();
        assert_eq!(h2, h);

        // An edited count (K = 5 → 40), named.
        let mut json = serde_json::to_value(&s).unwrap();
        json["best-of"]["k"] = 40.into();
        let forged: State = serde_json::from_value(json).unwrap();
        let e = h
            .check(best_of(5), stream(7, &[1]), &forged, pos)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("best-of.k") && e.contains("saved 40") && e.contains('5'),
            "{e}"
        );
        // A moved stream position.
        let e = h
            .check(best_of(5), stream(7, &[1]), &s, pos - 2)
            .unwrap_err()
            .to_string();
        assert!(e.contains("stream position"), "{e}");
        // A score changed by one ulp in the history: the best run's score differs.
        let mut edited = h.clone();
        for st in &mut edited.steps {
            if let Step::Told { index: 0, told } = st {
                *told = Told::Score(f64::from_bits(0.5f64.to_bits() + 1));
            }
        }
        let e = edited
            .check(best_of(5), stream(7, &[1]), &s, pos)
            .unwrap_err()
            .to_string();
        assert!(e.contains("best-of.best"), "{e}");
        // A duplicated tell, a removed ask: refused at their step.
        let mut dup = h.clone();
        dup.steps.push(dup.steps.last().unwrap().clone());
        let e = dup
            .replay(best_of(5), &mut stream(7, &[1]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("step 6") && e.contains("telling run 2"), "{e}");
        let mut cut = h.clone();
        cut.steps.remove(0);
        assert!(cut.replay(best_of(5), &mut stream(7, &[1])).is_err());
    }

    #[test]
    fn a_state_is_compared_as_saved() {
        // DP-GD keeps its last step's diagnostics unsaved: the replayed session holds them, the
        // state read back does not, and it is still the state its history gives.
        use crate::gibo::{DpGdConfig, GiboSession, StepRule};
        let cfg = DpGdConfig {
            mu: 1.0,
            steps: 3,
            clip: 1.0,
            step_rule: StepRule::Sgd { eta: 0.1 },
            theta0: None,
        };
        let domain = [(0.0, 1.0), (0.0, 1.0)];
        let gd = GiboSession::gd(cfg, &domain, 4, &mut stream(5, &[])).unwrap();
        // The session type itself (a saved `State` is compared as saved, so it would not show
        // the difference).
        let start = gd;
        let (mut s, mut rng, mut h) = (start.clone(), stream(6, &[]), History::default());
        let Next::Run(t) = h.ask(&mut s, &mut rng).unwrap() else {
            panic!("DP-GD asks for its first gradients")
        };
        h.tell(&mut s, t.index, Told::Matrix(vec![vec![0.1, -0.2]; 4]))
            .unwrap();
        let read: GiboSession = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_ne!(read, s, "the test needs a session with unsaved fields");
        let pos = rng.get_word_pos();
        assert_eq!(h.check(start, stream(6, &[]), &read, pos).unwrap(), s);
        // As a `State`, the two are equal: compared as saved.
        assert_eq!(State::new(read), State::new(s));
    }

    #[test]
    fn a_threshold_tuners_halt_is_a_step() {
        // Halts at once with probability 1: the coin is drawn and the ask says Done.
        let start = State::new(Threshold::new(Space::UnitBox { dim: 1 }, 0.5, 1.0));
        let (mut s, mut rng, mut h) = (start.clone(), stream(3, &[]), History::default());
        assert_eq!(h.ask(&mut s, &mut rng).unwrap(), Next::Done);
        assert_eq!(h.steps, vec![Step::Done]);
        let pos = rng.get_word_pos();
        assert_eq!(h.check(start.clone(), stream(3, &[]), &s, pos).unwrap(), s);
        // Without the step the saved (halted) state is not what the history gives.
        let e = History::default()
            .check(start, stream(3, &[]), &s, pos)
            .unwrap_err()
            .to_string();
        assert!(e.contains("threshold.halted"), "{e}");
    }
}
