//! Propose-test with doubling as an ask/tell session ([`crate::session`]): the shard
//! utilities of every candidate, the walk on their means, then the final private run. The
//! tuner adapter (`tuners/propose_test_doubling.rs`) starts it; `tuners::runs::State` saves it.

use super::{proxy_utilities, Fallback, ProposeTestDoubling};
use crate::data::uniform_below;
use crate::error::{Error, Result};
use crate::rng::stream;
use crate::session::{
    unfinished, Evaluation, Next, Outcome, Progress, Session, SessionKind, Told, Trial, PASSES,
};
use crate::workloads::Hyper;
use rand::RngCore;

/// Stream tags of one run's independent sub-streams.
const SHARD_STREAM: u64 = 0x7368_6172;
const TEST_STREAM: u64 = 0x7465_7374;
const FALLBACK_STREAM: u64 = 0x6661_6c6c;
const TRAIN_STREAM: u64 = 0x7472_6169;

/// Propose-test as a session: the shard utilities of every candidate (one evaluation), the
/// walk on their means (drawing from the run's own streams), then the final private run at
/// the candidate it selected (or the fallback).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ProposeTestSession {
    tuner: ProposeTestDoubling,
    candidates: Vec<Hyper>,
    eps0: f64,
    /// The key of the run's streams.
    base: u64,
    pub(crate) progress: Progress,
    stage: Stage,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
enum Stage {
    Utilities,
    /// The walk is over: train `chosen`.
    Final {
        chosen: usize,
        passes: usize,
        fallback: bool,
    },
    Released {
        chosen: usize,
        passes: usize,
        fallback: bool,
        score: f64,
    },
}

impl ProposeTestSession {
    /// The session of `tuner` over `candidates`, its tests at `eps0`, the run's streams keyed
    /// by `base`: it starts by asking for the shard utilities.
    pub fn new(tuner: ProposeTestDoubling, candidates: Vec<Hyper>, eps0: f64, base: u64) -> Self {
        ProposeTestSession {
            tuner,
            candidates,
            eps0,
            base,
            progress: Progress::default(),
            stage: Stage::Utilities,
        }
    }
}

impl SessionKind for ProposeTestSession {
    const KIND: &'static str = "propose-test";
    /// k runs per candidate, then the final one.
    fn planned_runs(&self) -> Option<u64> {
        Some((self.tuner.shards * self.candidates.len()) as u64 + 1)
    }
    fn pending(&self) -> &[Trial] {
        &self.progress.pending
    }
}

impl Session for ProposeTestSession {
    fn ask(&mut self, _rng: &mut dyn RngCore) -> Result<Next> {
        if !self.progress.pending.is_empty() {
            return Ok(Next::Wait);
        }
        Ok(match &self.stage {
            Stage::Utilities => self.progress.start_with(
                Vec::new(),
                Evaluation::ShardUtilities {
                    candidates: self.candidates.clone(),
                    shards: self.tuner.shards,
                },
                Some((self.base, SHARD_STREAM)),
            ),
            Stage::Final { chosen, .. } => self.progress.start_with(
                self.candidates[*chosen].clone(),
                Evaluation::Train,
                Some((self.base, TRAIN_STREAM)),
            ),
            Stage::Released { .. } => Next::Done,
        })
    }

    fn tell(&mut self, index: u64, told: Told) -> Result<()> {
        // The utilities are checked before the trial counts as answered: a table out of [0, 1]
        // is refused and leaves the session as it was (the trial still pending).
        let n = self.candidates.len();
        let utilities = match (&self.stage, &told) {
            (Stage::Utilities, Told::Utilities(a)) => {
                Some(proxy_utilities(a, n, self.tuner.shards)?)
            }
            _ => None,
        };
        let (_, told) = self.progress.told(index, told)?;
        self.stage = match (&self.stage, told, utilities) {
            (Stage::Utilities, Told::Utilities(_), Some(u)) => {
                let walk =
                    self.tuner
                        .walk_on(&u, self.eps0, &mut stream(self.base, &[TEST_STREAM]));
                let chosen = match (walk.selected, self.tuner.fallback) {
                    (Some(j), _) => j,
                    (None, Fallback::Index(i)) => i,
                    (None, Fallback::UniformRandom) => {
                        uniform_below(&mut stream(self.base, &[FALLBACK_STREAM]), n as u64) as usize
                    }
                };
                Stage::Final {
                    chosen,
                    passes: walk.passes.len(),
                    fallback: walk.selected.is_none(),
                }
            }
            (
                &Stage::Final {
                    chosen,
                    passes,
                    fallback,
                },
                Told::Score(score),
                _,
            ) => Stage::Released {
                chosen,
                passes,
                fallback,
                score,
            },
            _ => {
                return Err(Error::Infeasible(
                    "propose-test was told something it did not ask for".into(),
                ))
            }
        };
        Ok(())
    }

    fn finish(&self) -> Result<Outcome> {
        let Stage::Released {
            chosen,
            passes,
            fallback,
            score,
        } = self.stage
        else {
            return unfinished(&self.progress, true).map(|()| Outcome::default());
        };
        Ok(Outcome {
            chosen: Some(self.candidates[chosen].clone()),
            released_score: Some(score),
            runs: SessionKind::planned_runs(self).expect("fixed in advance"),
            diagnostics: vec![(PASSES, passes as f64)],
            fallback,
        })
    }
}
