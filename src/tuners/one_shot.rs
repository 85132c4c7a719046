//! `one-shot`: no tuning. One run at the first listed candidate (a finite space) or at one
//! uniform draw (a box), released with its score: the cost and the quality of not tuning, the
//! baseline every tuner is to beat at its budget. Privacy: the one run's, by any accountant
//! that supports the workload's run event.
//!
//! It is also the smallest tuner with a session of its own: this file and one line of
//! [`super::REGISTRY`] make it drivable by the harness, by `dptune tune` over a command and from
//! Python (docs/extending.md walks through it).

use crate::session::{unfinished, Next, Progress, Session, SessionKind, Told, Trial};
use super::runs::State;
use super::{account, guarantee_of, read, Guarantee, SearchAccountant, Tuner};
use crate::accounting::accountant::Registered;
use crate::accounting::approximate::ApproxDp;
use crate::accounting::Accountant;
use crate::error::Result;
use crate::workloads::{require_private_training, Declarations, Hyper, Space, Workload};
use rand::RngCore;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq)]
pub struct OneShot;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {}

pub fn build(params: &toml::Table) -> Result<Box<dyn Tuner>> {
    let Params {} = read("one-shot", params)?;
    Ok(Box::new(OneShot))
}

impl Tuner for OneShot {
    fn name(&self) -> &'static str {
        "one-shot"
    }
    fn params(&self) -> String {
        "one run".into()
    }
    fn guarantee(
        &self,
        declared: &Declarations,
        delta: f64,
        accountant: &Accountant,
    ) -> Result<Guarantee> {
        let training = declared.require_training(self.name())?;
        let won = account(
            &training.run,
            delta,
            accountant,
            SearchAccountant::Best,
            &declared.name,
        )?;
        Ok(guarantee_of(won, |key, name| match key {
            ApproxDp::KEY => "one run (pure or approximate DP)".into(),
            _ => format!("one run; {name}"),
        }))
    }
    fn check_workload(&self, workload: &dyn Workload) -> Result<()> {
        require_private_training(self.name(), workload).map(|_| ())
    }
    fn session(&self, declared: &Declarations, _rng: &mut dyn RngCore) -> Result<State> {
        Ok(State::new(OneShotSession {
            space: declared.space.clone(),
            progress: Progress::default(),
            released: None,
        }))
    }
}

/// The one run and, once told, its release.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OneShotSession {
    space: Space,
    progress: Progress,
    released: Option<(Hyper, f64)>,
}

impl Session for OneShotSession {
    fn ask(&mut self, rng: &mut dyn RngCore) -> Result<Next> {
        if self.progress.asked == 1 {
            return Ok(self.progress.done_or_wait());
        }
        let hyper = match &self.space {
            Space::Finite(list) => list[0].clone(),
            Space::UnitBox { .. } => self.space.draw(rng),
        };
        Ok(self.progress.start(hyper))
    }

    fn tell(&mut self, index: u64, told: Told) -> Result<()> {
        let (trial, told) = self.progress.told(index, told)?;
        self.released = Some((trial.hyper, told.score()?));
        Ok(())
    }

    fn finish(&self) -> Result<super::Outcome> {
        unfinished(&self.progress, self.released.is_none())?;
        Ok(super::Outcome {
            released_score: self.released.as_ref().map(|r| r.1),
            chosen: self.released.as_ref().map(|r| r.0.clone()),
            runs: self.progress.told,
            ..super::Outcome::default()
        })
    }
}

impl SessionKind for OneShotSession {
    const KIND: &'static str = "one-shot";
    fn planned_runs(&self) -> Option<u64> {
        Some(1)
    }
    fn pending(&self) -> &[Trial] {
        &self.progress.pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounting::Event;
    use crate::rng::stream;
    use crate::workloads::{PrivateTraining, TrainingDeclaration};

    struct First(Event);
    impl PrivateTraining for First {
        fn run_event(&self) -> &Event {
            &self.0
        }
        fn train(&self, h: &Hyper, _rng: &mut dyn RngCore) -> f64 {
            h[0]
        }
    }

    #[test]
    fn one_run_at_the_first_candidate_with_the_runs_own_guarantee() {
        let run = Event::zcdp(0.05).unwrap();
        let space = Space::Finite(vec![vec![0.25], vec![0.75]]);
        let declared = Declarations {
            training: Some(TrainingDeclaration { run: run.clone() }),
            ..Declarations::of_space("first", space)
        };
        let acc = Accountant::default();
        let g = OneShot.guarantee(&declared, 1e-6, &acc).unwrap();
        let alone = acc
            .epsilon(&crate::accounting::rdp_events::curve(&run, &acc).unwrap(), 1e-6)
            .unwrap();
        assert_eq!(g.epsilon, alone.epsilon);
        assert_eq!(g.theorem, format!("one run; {}", acc.name()));
        let mut rng = stream(1, &[2]);
        let mut s = OneShot.session(&declared, &mut rng).unwrap();
        let o = crate::session::drive(&mut s, &First(run), &mut rng).unwrap();
        assert_eq!((o.chosen, o.released_score, o.runs), (Some(vec![0.25]), Some(0.25), 1));
        // Saved and read back through the registry line, as a journal is.
        let json = serde_json::to_string(&s).unwrap();
        assert!(json.starts_with("{\"one-shot\":"), "{json}");
        assert_eq!(serde_json::from_str::<State>(&json).unwrap(), s);
    }
}
