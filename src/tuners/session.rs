//! Tuners as ask/tell state machines (issue 39). A session asks for private training runs
//! ([`Session::ask`]; several at once where its choices do not depend on their scores), is told
//! the score each run released ([`Session::tell`]) and ends with the release
//! ([`Session::finish`]). Its state is plain data (serde): a run can stop after
//! any tell and resume from the saved state, not from replayed draws.
//!
//! The guarantee is the tuner's, known before the first ask ([`super::Tuner::guarantee`]): a
//! session only decides *which* runs happen, every told score being a released one.
//!
//! [`drive`] runs a session over a workload's private training with one random stream, drawn
//! from in the order the tuners' loops always drew (the session's draws for a run, then the
//! run's own), so tuning through a session gives the same draws and the same release.

use super::{Observer, Outcome, TraceRow};
use crate::error::{Error, Result};
use crate::rng::{stream_at, word_position};
use crate::workloads::{Hyper, PrivateTraining, Space};
use rand::{Rng, RngCore};
use serde::{Deserialize, Serialize};

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
#[derive(Clone, Debug, PartialEq)]
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

/// A workload's private training runs (and, when it has them, shard utilities), for `tuner`.
pub struct WorkloadRuns<'a> {
    pub tuner: &'a str,
    pub workload: &'a dyn crate::workloads::Workload,
}

impl Evaluator for WorkloadRuns<'_> {
    fn evaluate(&self, trial: &Trial, rng: &mut dyn RngCore) -> Result<Told> {
        use crate::workloads::{
            require_partitioned_utility, require_per_user_losses, require_private_training,
            require_regularised_gain, require_validation_gain,
        };
        Ok(match &trial.evaluation {
            Evaluation::Train => Told::Score(
                require_private_training(self.tuner, self.workload)?.train(&trial.hyper, rng),
            ),
            Evaluation::ShardUtilities { candidates, shards } => Told::Utilities(
                require_partitioned_utility(self.tuner, self.workload)?
                    .shard_utilities(candidates, *shards, rng)?,
            ),
            Evaluation::UserLosses { points } => Told::Matrix(rows(
                require_per_user_losses(self.tuner, self.workload)?.user_losses(points, rng)?,
            )),
            Evaluation::ValidationGain => Told::Score(
                require_validation_gain(self.tuner, self.workload)?.observe(&trial.hyper, rng),
            ),
            Evaluation::RegularisedGain => {
                Told::Score(require_regularised_gain(self.tuner, self.workload)?.gain(&trial.hyper))
            }
            Evaluation::UserGradients => Told::Matrix(rows(
                require_per_user_losses(self.tuner, self.workload)?
                    .user_gradients(&trial.hyper)
                    .ok_or_else(|| {
                        Error::missing_capability(
                            format!("tuner `{}`", self.tuner),
                            "exact per-user gradients",
                            self.workload.name(),
                        )
                    })?
                    .reversed_axes(),
            )),
        })
    }

    fn exact_user_gradients(&self, point: &Hyper) -> Option<ndarray::Array2<f64>> {
        self.workload.per_user_losses()?.user_gradients(point)
    }
}

/// A matrix as its rows.
fn rows(m: ndarray::Array2<f64>) -> Vec<Vec<f64>> {
    m.rows().into_iter().map(|r| r.to_vec()).collect()
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

/// A session of any tuner that has one, as saved and resumed (`{"best-of": {…}}`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    BestOf(BestOf),
    Threshold(Threshold),
    ProposeTest(Box<super::propose_test::ProposeTestSession>),
    /// DP-GIBO or DP-GD.
    Gibo(Box<crate::gibo::GiboSession>),
    /// Private GP-UCB or Algorithm 3's BO over a grid.
    Ucb(Box<crate::gp_ucb::session::UcbSession>),
}

impl State {
    fn inner(&mut self) -> &mut dyn Session {
        match self {
            State::BestOf(s) => s,
            State::Threshold(s) => s,
            State::ProposeTest(s) => s.as_mut(),
            State::Gibo(s) => s.as_mut(),
            State::Ucb(s) => s.as_mut(),
        }
    }

    /// The number of runs, when it is known before any data is seen (a best-of session's K,
    /// propose-test's shard runs and final run); None where it depends on the scores.
    pub fn planned_runs(&self) -> Option<u64> {
        match self {
            State::BestOf(s) => Some(s.runs()),
            State::Threshold(_) => None,
            State::ProposeTest(s) => Some(s.planned_runs()),
            State::Gibo(s) => s.planned_evaluations(),
            State::Ucb(s) => Some(s.planned_runs()),
        }
    }

    /// The runs asked for and not yet told.
    pub fn pending(&self) -> &[Trial] {
        match self {
            State::BestOf(s) => &s.progress.pending,
            State::Threshold(s) => &s.progress.pending,
            State::ProposeTest(s) => &s.progress.pending,
            State::Gibo(s) => s.pending(),
            State::Ucb(s) => s.pending(),
        }
    }
}

impl Session for State {
    fn ask(&mut self, rng: &mut dyn RngCore) -> Result<Next> {
        self.inner().ask(rng)
    }
    fn tell(&mut self, index: u64, told: Told) -> Result<()> {
        self.inner().tell(index, told)
    }
    fn finish(&self) -> Result<Outcome> {
        match self {
            State::BestOf(s) => s.finish(),
            State::Threshold(s) => s.finish(),
            State::ProposeTest(s) => s.finish(),
            State::Gibo(s) => s.finish(),
            State::Ucb(s) => s.finish(),
        }
    }
    fn stream_left_at(&mut self, index: u64, position: u64) {
        self.inner().stream_left_at(index, position)
    }
    fn observe_last(&self, evaluator: &dyn Evaluator, observer: &mut dyn Observer) {
        match self {
            State::BestOf(s) => s.observe_last(evaluator, observer),
            State::Threshold(s) => s.observe_last(evaluator, observer),
            State::ProposeTest(s) => s.observe_last(evaluator, observer),
            State::Gibo(s) => s.observe_last(evaluator, observer),
            State::Ucb(s) => s.observe_last(evaluator, observer),
        }
    }
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
    fn start(&mut self, hyper: Hyper) -> Next {
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

    fn done_or_wait(&self) -> Next {
        if self.pending.is_empty() {
            Next::Done
        } else {
            Next::Wait
        }
    }
}

/// Where a best-of session's candidates come from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Candidates {
    /// Each drawn uniformly from the space, independently.
    Drawn(Space),
    /// These, in order (naive composition over a finite list).
    Listed(Vec<Hyper>),
}

/// Best of k runs (naive composition, random search, and repeat-and-select once its count K
/// is drawn): releases the candidate with the highest released score and that score (of equal
/// ones, the first asked, whatever order they were told in), or nothing when k = 0. Its
/// candidates do not depend on scores, so every run may be asked for at once.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BestOf {
    k: u64,
    candidates: Candidates,
    progress: Progress,
    /// (index, candidate, score) of the best run told.
    best: Option<(u64, Hyper, f64)>,
}

impl BestOf {
    pub fn new(k: u64, candidates: Candidates) -> Result<BestOf> {
        if let Candidates::Listed(list) = &candidates {
            if (list.len() as u64) < k {
                return Err(Error::invalid(
                    "k",
                    k,
                    format!("at most the {} listed candidates", list.len()),
                ));
            }
        }
        Ok(BestOf {
            k,
            candidates,
            progress: Progress::default(),
            best: None,
        })
    }

    /// The number of runs, K.
    pub fn runs(&self) -> u64 {
        self.k
    }
}

impl Session for BestOf {
    fn ask(&mut self, rng: &mut dyn RngCore) -> Result<Next> {
        if self.progress.asked >= self.k {
            return Ok(self.progress.done_or_wait());
        }
        let hyper = match &self.candidates {
            Candidates::Drawn(space) => space.draw(rng),
            Candidates::Listed(list) => list[self.progress.asked as usize].clone(),
        };
        Ok(self.progress.start(hyper))
    }

    fn tell(&mut self, index: u64, told: Told) -> Result<()> {
        let (trial, told) = self.progress.told(index, told)?;
        let (hyper, score) = (trial.hyper, told.score()?);
        let better = |(i, _, b): &(u64, Hyper, f64)| score > *b || (score == *b && index < *i);
        if self.best.as_ref().is_none_or(better) {
            self.best = Some((index, hyper, score));
        }
        Ok(())
    }

    fn finish(&self) -> Result<Outcome> {
        unfinished(&self.progress, self.progress.told < self.k)?;
        Ok(Outcome {
            released_score: self.best.as_ref().map(|b| b.2),
            chosen: self.best.as_ref().map(|b| b.1.clone()),
            runs: self.k,
            ..Outcome::default()
        })
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

/// Liu–Talwar's threshold variant: before each run, halt with probability `halt` (releasing
/// nothing); else run a drawn candidate and release it with its score if the score reaches the
/// threshold. Each run waits for the score before it: one run at a time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Threshold {
    space: Space,
    threshold: f64,
    halt: f64,
    progress: Progress,
    halted: bool,
    released: Option<(Hyper, f64)>,
}

impl Threshold {
    pub fn new(space: Space, threshold: f64, halt: f64) -> Threshold {
        Threshold {
            space,
            threshold,
            halt,
            progress: Progress::default(),
            halted: false,
            released: None,
        }
    }
}

impl Session for Threshold {
    fn ask(&mut self, rng: &mut dyn RngCore) -> Result<Next> {
        if !self.progress.pending.is_empty() {
            return Ok(Next::Wait);
        }
        if self.halted || self.released.is_some() {
            return Ok(Next::Done);
        }
        if rng.random::<f64>() < self.halt {
            self.halted = true;
            return Ok(Next::Done);
        }
        let hyper = self.space.draw(rng);
        Ok(self.progress.start(hyper))
    }

    fn tell(&mut self, index: u64, told: Told) -> Result<()> {
        let (trial, told) = self.progress.told(index, told)?;
        let (hyper, score) = (trial.hyper, told.score()?);
        if score >= self.threshold {
            self.released = Some((hyper, score));
        }
        Ok(())
    }

    fn finish(&self) -> Result<Outcome> {
        unfinished(&self.progress, !self.halted && self.released.is_none())?;
        Ok(Outcome {
            released_score: self.released.as_ref().map(|r| r.1),
            chosen: self.released.as_ref().map(|r| r.0.clone()),
            runs: self.progress.told,
            ..Outcome::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounting::RdpCurve;
    use crate::rng::stream;

    /// Scores the first coordinate, with noise from the run's own draws.
    struct Noisy(RdpCurve);
    impl PrivateTraining for Noisy {
        fn run_privacy(&self) -> &RdpCurve {
            &self.0
        }
        fn train(&self, h: &Hyper, rng: &mut dyn RngCore) -> f64 {
            h[0] + 0.1 * rng.random::<f64>()
        }
    }

    fn training() -> Noisy {
        Noisy(RdpCurve::zcdp(0.1).unwrap())
    }

    /// A session saved as JSON after every tell and resumed from the text (with the stream's
    /// position) ends with the release of the uninterrupted run.
    fn resumed<S: Session + Serialize + serde::de::DeserializeOwned>(s: S) -> Outcome {
        resumed_from(s, stream(3, &[1]))
    }

    fn resumed_from<S: Session + Serialize + serde::de::DeserializeOwned>(
        mut s: S,
        mut rng: rand_chacha::ChaCha20Rng,
    ) -> Outcome {
        while let Next::Run(t) = s.ask(&mut rng).unwrap() {
            let score = training().train(&t.hyper, &mut rng);
            s.tell(t.index, Told::Score(score)).unwrap();
            let (text, pos) = (serde_json::to_string(&s).unwrap(), rng.get_word_pos());
            s = serde_json::from_str(&text).unwrap();
            // A restart: the stream rebuilt from its seed, at the saved position.
            let (seed, id) = (rng.get_seed(), rng.get_stream());
            rng = rand::SeedableRng::from_seed(seed);
            rng.set_stream(id);
            rng.set_word_pos(pos);
        }
        s.finish().unwrap()
    }

    #[test]
    fn best_of_releases_the_best_told_score_and_resumes_from_its_state() {
        let space = Space::UnitBox { dim: 2 };
        let mut s = BestOf::new(5, Candidates::Drawn(space.clone())).unwrap();
        let whole = drive(&mut s, &training(), &mut stream(3, &[1])).unwrap();
        assert_eq!(whole.runs, 5);
        // The loop it replaces, drawn by hand: a candidate, then its run, five times.
        let mut rng = stream(3, &[1]);
        let mut best: Option<(Hyper, f64)> = None;
        for _ in 0..5 {
            let h = space.draw(&mut rng);
            let score = training().train(&h, &mut rng);
            if best.as_ref().is_none_or(|b| score > b.1) {
                best = Some((h, score));
            }
        }
        assert_eq!(whole.chosen, best.as_ref().map(|b| b.0.clone()));
        assert_eq!(whole.released_score, best.map(|b| b.1));
        let again = BestOf::new(5, Candidates::Drawn(space)).unwrap();
        assert_eq!(resumed(again), whole);
        // K = 0 releases nothing.
        let mut none = BestOf::new(0, Candidates::Listed(vec![])).unwrap();
        let out = drive(&mut none, &training(), &mut stream(3, &[1])).unwrap();
        assert_eq!((out.chosen, out.runs), (None, 0));
    }

    #[test]
    fn threshold_halts_or_releases_the_first_score_over_it_and_resumes() {
        let space = Space::UnitBox { dim: 1 };
        for seed in 0..20 {
            let mut s = Threshold::new(space.clone(), 0.8, 0.1);
            let out = drive(&mut s, &training(), &mut stream(seed, &[])).unwrap();
            match out.released_score {
                Some(score) => assert!(score >= 0.8 && out.chosen.is_some()),
                None => assert!(out.chosen.is_none()),
            }
        }
        let whole = drive(
            &mut Threshold::new(space.clone(), 0.8, 0.1),
            &training(),
            &mut stream(3, &[1]),
        )
        .unwrap();
        assert_eq!(resumed(Threshold::new(space, 0.8, 0.1)), whole);
    }

    #[test]
    fn a_tuners_session_resumes_from_json_to_its_release() {
        use crate::tuners::{liu_talwar::LiuTalwar, papernot_steinke::PapernotSteinke, Tuner};
        let space = Space::UnitBox { dim: 2 };
        let tuners: Vec<Box<dyn Tuner>> = vec![
            Box::new(PapernotSteinke::poisson(4.0).unwrap()),
            Box::new(LiuTalwar::best_of(3.0).unwrap()),
        ];
        for tuner in &tuners {
            let mut rng = stream(9, &[2]);
            let declared = crate::workloads::Declarations::of_space("w", space.clone());
            let mut s = tuner.session(&declared, &mut rng).unwrap().unwrap();
            let whole = drive(&mut s, &training(), &mut rng).unwrap();
            let mut rng = stream(9, &[2]);
            let s = tuner.session(&declared, &mut rng).unwrap().unwrap();
            let text = serde_json::to_string(&s).unwrap();
            assert!(text.starts_with("{\"best-of\""), "{text}");
            let state: State = serde_json::from_str(&text).unwrap();
            assert_eq!(resumed_from(state, rng), whole, "{}", tuner.name());
        }
    }

    #[test]
    fn out_of_turn_calls_are_errors_not_panics() {
        let mut s = BestOf::new(2, Candidates::Listed(vec![vec![0.1], vec![0.9]])).unwrap();
        let mut rng = stream(1, &[]);
        assert!(s.finish().is_err(), "finished before any run");
        let Next::Run(t) = s.ask(&mut rng).unwrap() else {
            panic!("a first run")
        };
        assert_eq!(
            (t.index, t.hyper, t.evaluation),
            (0, vec![0.1], Evaluation::Train)
        );
        assert!(
            s.tell(1, Told::Score(0.5)).is_err(),
            "told a run never asked for"
        );
        assert!(s.tell(0, Told::Score(f64::NAN)).is_err(), "told NaN");
        assert!(
            s.tell(0, Told::Utilities(vec![])).is_err(),
            "told utilities"
        );
        s.tell(0, Told::Score(0.5)).unwrap();
        assert!(s.tell(0, Told::Score(0.5)).is_err(), "told twice");
        let Next::Run(t) = s.ask(&mut rng).unwrap() else {
            panic!("a second run")
        };
        assert!(s.finish().is_err(), "finished with a run pending");
        s.tell(t.index, Told::Score(0.7)).unwrap();
        assert_eq!(s.ask(&mut rng).unwrap(), Next::Done);
        let out = s.finish().unwrap();
        assert_eq!(
            (out.chosen, out.released_score),
            (Some(vec![0.9]), Some(0.7))
        );
        assert!(BestOf::new(3, Candidates::Listed(vec![vec![0.1]])).is_err());
    }

    /// Best-of runs may be asked for together and told in any order: the release is the
    /// one of telling them in order (ties go to the first asked).
    #[test]
    fn best_of_runs_told_out_of_order_release_the_same() {
        let list = vec![vec![0.1], vec![0.2], vec![0.3], vec![0.4]];
        let scores = [0.5, 0.9, 0.9, 0.2];
        let release = |order: &[usize]| {
            let mut s = BestOf::new(4, Candidates::Listed(list.clone())).unwrap();
            let mut rng = stream(1, &[]);
            let asked: Vec<Trial> = (0..4)
                .map(|_| match s.ask(&mut rng).unwrap() {
                    Next::Run(t) => t,
                    other => panic!("{other:?}"),
                })
                .collect();
            assert_eq!(s.ask(&mut rng).unwrap(), Next::Wait);
            for &i in order {
                s.tell(asked[i].index, Told::Score(scores[i])).unwrap();
            }
            assert_eq!(s.ask(&mut rng).unwrap(), Next::Done);
            s.finish().unwrap()
        };
        let in_order = release(&[0, 1, 2, 3]);
        assert_eq!(in_order.chosen, Some(vec![0.2]));
        assert_eq!(release(&[3, 2, 1, 0]), in_order);
        assert_eq!(release(&[2, 0, 3, 1]), in_order);
        // A threshold session runs one at a time.
        let mut t = Threshold::new(Space::UnitBox { dim: 1 }, 2.0, 1e-9);
        let mut rng = stream(1, &[]);
        assert!(matches!(t.ask(&mut rng).unwrap(), Next::Run(_)));
        assert_eq!(t.ask(&mut rng).unwrap(), Next::Wait);
    }
}
