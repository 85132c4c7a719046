//! The sessions of the tuners that only choose among training runs (best of k runs,
//! Liu–Talwar's threshold variant), the saved [`State`] of every tuner's session, and a
//! workload's evaluations ([`WorkloadRuns`]). The protocol and its executor are
//! [`crate::session`].

use crate::session::{
    unfinished, Evaluation, Evaluator, Next, Observer, Outcome, Progress, SavedSession, Session,
    SessionKind, Told, Trial,
};

use crate::error::{Error, Result};
use crate::workloads::{Hyper, Space};
use rand::{Rng, RngCore};
use serde::{Deserialize, Serialize};

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

/// A session of any tuner that has one, as saved and resumed (`{"best-of": {…}}`): its kind
/// ([`SessionKind::KIND`]) is read back by the restorer its tuner's registry line lists
/// ([`super::REGISTRY`]).
pub struct State(Box<dyn SavedSession>);

impl State {
    pub fn new<T: SessionKind>(session: T) -> State {
        State(Box::new(session))
    }

    /// Its kind's name.
    pub fn kind(&self) -> &'static str {
        self.0.kind()
    }

    /// The number of runs, when it is known before any data is seen; None where it depends
    /// on the scores.
    pub fn planned_runs(&self) -> Option<u64> {
        self.0.planned_runs()
    }

    /// The runs asked for and not yet told.
    pub fn pending(&self) -> &[Trial] {
        self.0.pending()
    }

    /// Whether a refused tell leaves it as it was ([`SessionKind::tells_atomically`]).
    pub fn tells_atomically(&self) -> bool {
        self.0.tells_atomically()
    }

    fn json(&self) -> serde_json::Result<serde_json::Value> {
        self.0.to_json()
    }
}

impl Clone for State {
    fn clone(&self) -> Self {
        State(self.0.boxed_clone())
    }
}

/// Compared as saved (kind and JSON).
impl PartialEq for State {
    fn eq(&self, other: &Self) -> bool {
        self.kind() == other.kind()
            && matches!((self.json(), other.json()), (Ok(a), Ok(b)) if a == b)
    }
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.json() {
            Ok(json) => write!(f, "State({}: {json})", self.kind()),
            Err(_) => write!(f, "State({})", self.kind()),
        }
    }
}

impl Serialize for State {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::{Error as _, SerializeMap};
        let json = self.json().map_err(S::Error::custom)?;
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry(self.kind(), &json)?;
        map.end()
    }
}

impl<'de> Deserialize<'de> for State {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        use serde::de::Error as _;
        let json = serde_json::Value::deserialize(deserializer)?;
        let serde_json::Value::Object(map) = json else {
            return Err(D::Error::custom(
                "a saved session is an object {\"KIND\": {…}}",
            ));
        };
        let mut entries = map.into_iter();
        let (Some((kind, state)), None) = (entries.next(), entries.next()) else {
            return Err(D::Error::custom(
                "a saved session is an object with one key, its kind",
            ));
        };
        let restorer = super::session_kinds()
            .find(|r| r.kind == kind)
            .ok_or_else(|| {
                let known: Vec<&str> = super::session_kinds().map(|r| r.kind).collect();
                D::Error::custom(format!(
                    "unknown session kind `{kind}`: expected one of {}",
                    known.join(", ")
                ))
            })?;
        (restorer.restore)(state)
            .map(State)
            .map_err(|e| D::Error::custom(format!("a saved `{kind}` session: {e}")))
    }
}

impl Session for State {
    fn ask(&mut self, rng: &mut dyn RngCore) -> Result<Next> {
        self.0.ask(rng)
    }
    fn tell(&mut self, index: u64, told: Told) -> Result<()> {
        self.0.tell(index, told)
    }
    fn finish(&self) -> Result<Outcome> {
        self.0.finish()
    }
    fn stream_left_at(&mut self, index: u64, position: u64) {
        self.0.stream_left_at(index, position)
    }
    fn observe_last(&self, evaluator: &dyn Evaluator, observer: &mut dyn Observer) {
        self.0.observe_last(evaluator, observer)
    }
}

impl SessionKind for BestOf {
    const KIND: &'static str = "best-of";
    fn planned_runs(&self) -> Option<u64> {
        Some(self.k)
    }
    fn pending(&self) -> &[Trial] {
        &self.progress.pending
    }
    /// Its tells check the score before changing anything.
    fn tells_atomically(&self) -> bool {
        true
    }
}

impl SessionKind for Threshold {
    const KIND: &'static str = "threshold";
    fn planned_runs(&self) -> Option<u64> {
        None
    }
    fn pending(&self) -> &[Trial] {
        &self.progress.pending
    }
    fn tells_atomically(&self) -> bool {
        true
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
    use crate::accounting::Event;
    use crate::rng::stream;
    use crate::session::drive;
    use crate::workloads::PrivateTraining;

    /// Scores the first coordinate, with noise from the run's own draws.
    struct Noisy(Event);
    impl PrivateTraining for Noisy {
        fn run_event(&self) -> &Event {
            &self.0
        }
        fn train(&self, h: &Hyper, rng: &mut dyn RngCore) -> f64 {
            h[0] + 0.1 * rng.random::<f64>()
        }
    }

    fn training() -> Noisy {
        Noisy(Event::zcdp(0.1).unwrap())
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
            let mut s = tuner.session(&declared, &mut rng).unwrap();
            let whole = drive(&mut s, &training(), &mut rng).unwrap();
            let mut rng = stream(9, &[2]);
            let s = tuner.session(&declared, &mut rng).unwrap();
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
