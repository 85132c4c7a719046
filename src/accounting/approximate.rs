//! The (ε, δ)-DP accountant of events ([`ApproxDp`]): the theorems that take a run's pure or
//! approximate DP guarantee, with no Rényi curve — Kairouz–Oh–Viswanath's optimal composition
//! of pure-DP runs, Papernot–Steinke's Corollary 3 (a TNB count over a pure-DP run) and
//! their approximate-DP bases (spec 000 §4, Corollary 21), Liu–Talwar's threshold (2ε), and
//! basic composition (ε and δ add) for everything else it supports.
//!
//! Where the composition is one event, a theorem with a δ of its own to spend (optimal
//! composition, a Poisson count over an approximate-DP base) spends the δ asked for; in a
//! composition of several, each part is bounded without one and the parts add. A bound holds
//! at δ = (what the parts spend) ≤ the δ asked, and is reported at the δ asked, as every
//! accountant's is.

use super::accountant::{Ledger, PrivacyAccountant, Registered, Settings, Unsupported};
use super::composition::kov_epsilon;
use super::convert::DpBound;
use super::event::{Event, Kind};
use crate::error::{Error, Result, fmt_num};
use crate::numeric::{add_up, count_up, mul_up};
use crate::accounting::selection::bounds::{poisson_approximate_dp_base, tnb_approximate_dp_base};
use crate::accounting::selection::RunCount;

/// (ε, δ)-DP by the pure- and approximate-DP theorems.
#[derive(Clone, Debug, Default)]
pub struct ApproxDp {
    events: Vec<Event>,
    ledger: Ledger,
    /// The theorem of each event's bound, in order (for the statement).
    theorems: Vec<&'static str>,
}

/// One event's bound: ε, the δ it spends, and the theorem it rests on.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    pub epsilon: f64,
    pub delta: f64,
    pub theorem: &'static str,
}

pub const KOV: &str = "Kairouz–Oh–Viswanath optimal composition";
pub const TNB_PURE: &str = "Papernot–Steinke Corollary 3 (pure DP)";
pub const TNB_APPROX: &str = "Papernot–Steinke, a TNB count over an approximate-DP base (spec 000 §4)";
pub const POISSON_APPROX: &str =
    "Papernot–Steinke Corollary 21 (a Poisson count over an approximate-DP base)";
pub const THRESHOLD_PURE: &str = "Liu–Talwar threshold (Corollary 16(1)), pure DP";
pub const BASIC: &str = "basic composition";
pub const PURE: &str = "pure DP";
pub const STATED: &str = "(ε, δ)-DP as stated";

impl ApproxDp {
    pub fn new() -> Self {
        Self::default()
    }

    /// `event`'s bound; `delta` is the δ a theorem with a δ of its own may spend (None: the
    /// event is a part of a composition, bounded without one).
    pub fn rule(event: &Event, delta: Option<f64>) -> Result<Rule> {
        let rule = |epsilon, delta, theorem| Ok(Rule {
            epsilon,
            delta,
            theorem,
        });
        match (event.kind(), delta) {
            (Kind::SelfComposed { count, event }, Some(delta)) => {
                if let Some(eps) = event.pure_epsilon() {
                    return rule(kov_epsilon(eps, *count, delta)?.epsilon, delta, KOV);
                }
            }
            (Kind::RepeatAndSelect { law, event }, _) => {
                let base = Self::rule(event, None)?;
                return match (law.run_count()?, base.delta == 0.0, delta) {
                    // Not rounded up: the bits every committed result was computed with.
                    (RunCount::Tnb(t), true, _) => rule((2.0 + t.eta()) * base.epsilon, 0.0, TNB_PURE),
                    (RunCount::Tnb(t), false, _) => {
                        let b = tnb_approximate_dp_base(base.epsilon, base.delta, &t)?;
                        rule(b.epsilon, b.delta, TNB_APPROX)
                    }
                    (RunCount::Poisson(p), false, Some(delta)) => {
                        let b = poisson_approximate_dp_base(base.epsilon, base.delta, p.mu())?
                            .to_dp(delta)?;
                        rule(b.epsilon, b.delta, POISSON_APPROX)
                    }
                    _ => Err(Error::Infeasible(Self::unsupported(event).0)),
                };
            }
            (Kind::RunUntilThreshold { event, .. }, _) => {
                return match event.pure_epsilon() {
                    Some(eps) => rule(2.0 * eps, 0.0, THRESHOLD_PURE),
                    None => Err(Error::Infeasible(Self::unsupported(event).0)),
                };
            }
            _ => {}
        }
        if let Some(eps) = event.pure_epsilon() {
            return rule(eps, 0.0, PURE);
        }
        match event.kind() {
            Kind::ApproximateDp { epsilon, delta } => rule(*epsilon, *delta, STATED),
            Kind::SelfComposed { count, event } => {
                let one = Self::rule(event, None)?;
                let k = count_up(*count);
                rule(mul_up(k, one.epsilon), mul_up(k, one.delta).min(1.0), BASIC)
            }
            Kind::Composed { events } => {
                let (mut epsilon, mut spent) = (0.0, 0.0);
                for e in events {
                    let part = Self::rule(e, None)?;
                    epsilon = add_up(epsilon, part.epsilon);
                    spent = add_up(spent, part.delta).min(1.0);
                }
                rule(epsilon, spent, BASIC)
            }
            _ => Err(Error::Infeasible(Self::unsupported(event).0)),
        }
    }

    fn unsupported(event: &Event) -> Unsupported {
        Unsupported(format!(
            "a {} event has no pure or approximate DP guarantee here (state its RDP curve, or \
             use the RDP accountant)",
            event.kind_name()
        ))
    }

    /// The composition's bound with `delta` to spend where it is one event.
    fn total(&self, delta: Option<f64>) -> Result<Rule> {
        self.ledger.require_composed()?;
        if let [one] = self.events.as_slice() {
            return Self::rule(one, delta);
        }
        let (mut epsilon, mut spent) = (0.0, 0.0);
        for e in &self.events {
            let part = Self::rule(e, None)?;
            epsilon = add_up(epsilon, part.epsilon);
            spent = add_up(spent, part.delta).min(1.0);
        }
        Ok(Rule {
            epsilon,
            delta: spent,
            theorem: BASIC,
        })
    }

    /// The theorem the composition's bound at `delta` rests on.
    pub fn theorem(&self, delta: f64) -> Result<&'static str> {
        Ok(self.total(Some(delta))?.theorem)
    }
}

impl PrivacyAccountant for ApproxDp {
    fn key(&self) -> &'static str {
        <Self as Registered>::KEY
    }

    fn name(&self) -> String {
        "approx-dp".into()
    }

    fn statement(&self) -> String {
        let mut s = "(ε, δ)-DP from each event's pure or approximate guarantee".to_string();
        for t in &self.theorems {
            s.push_str("; ");
            s.push_str(t);
        }
        s
    }

    fn supports(&self, event: &Event) -> std::result::Result<(), Unsupported> {
        match Self::rule(event, None) {
            Ok(_) => Ok(()),
            // A Poisson count over an (ε, δ) base needs a δ of its own: supported alone.
            Err(_) if matches!(event.kind(), Kind::RepeatAndSelect { .. })
                && Self::rule(event, Some(0.5)).is_ok() =>
            {
                Ok(())
            }
            Err(e) => Err(Unsupported(e.to_string())),
        }
    }

    fn compose(&mut self, event: &Event) -> Result<()> {
        self.ledger.check(self, event)?;
        self.events.push(event.clone());
        self.ledger.record(event);
        let theorem = Self::rule(event, Some(0.5)).map_or(BASIC, |r| r.theorem);
        if !self.theorems.contains(&theorem) {
            self.theorems.push(theorem);
        }
        Ok(())
    }

    fn epsilon(&self, delta: f64) -> Result<DpBound> {
        let delta = crate::error::Range::OpenUnit.check("delta", delta)?;
        let total = self.total(Some(delta))?;
        if total.delta > delta {
            return Err(Error::Infeasible(format!(
                "the composition spends δ = {} by {}, more than the δ = {} asked",
                fmt_num(total.delta),
                total.theorem,
                fmt_num(delta)
            )));
        }
        Ok(DpBound {
            epsilon: total.epsilon,
            delta,
            order: None,
        })
    }

    fn delta(&self, epsilon: f64) -> Result<DpBound> {
        let epsilon = crate::error::Range::NonNegative.check("epsilon", epsilon)?;
        let total = self.total(None)?;
        if epsilon < total.epsilon {
            return Err(Error::Infeasible(format!(
                "the approx-dp accountant proves ε = {} for this composition, more than the ε = \
                 {} asked",
                fmt_num(total.epsilon),
                fmt_num(epsilon)
            )));
        }
        Ok(DpBound {
            epsilon,
            delta: total.delta,
            order: None,
        })
    }
}

impl Registered for ApproxDp {
    const KEY: &'static str = "approx-dp";
    fn build(_settings: &Settings) -> Result<Self> {
        Ok(ApproxDp::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounting::event::CountLaw;
    use crate::accounting::Laplace;

    fn laplace(eps: f64) -> Event {
        Event::laplace(1.0, 1.0 / eps).unwrap()
    }

    #[test]
    fn optimal_composition_of_pure_runs_is_kov_at_the_delta_asked() {
        let e = Event::self_composed(10, laplace(0.5)).unwrap();
        let mut a = ApproxDp::new();
        a.compose(&e).unwrap();
        let eps = Laplace::new(1.0, 2.0).unwrap().epsilon();
        assert_eq!(
            a.epsilon(1e-6).unwrap().epsilon,
            kov_epsilon(eps, 10, 1e-6).unwrap().epsilon
        );
        assert_eq!(a.theorem(1e-6).unwrap(), KOV);
        // Below basic composition, as optimal composition is.
        assert!(a.epsilon(1e-6).unwrap().epsilon <= 10.0 * eps);
    }

    #[test]
    fn selections_over_pure_and_approximate_runs() {
        let mean = 10.0;
        let tnb = |eta| CountLaw::TruncatedNegativeBinomial {
            eta,
            mean,
            truncate: None,
        };
        let pure = Event::repeat_and_select(tnb(0.5), Event::pure_dp(0.3).unwrap()).unwrap();
        let r = ApproxDp::rule(&pure, Some(1e-6)).unwrap();
        assert_eq!((r.epsilon, r.delta, r.theorem), (2.5 * 0.3, 0.0, TNB_PURE));
        let approx =
            Event::repeat_and_select(tnb(1.0), Event::approximate_dp(0.3, 1e-8).unwrap()).unwrap();
        let r = ApproxDp::rule(&approx, Some(1e-6)).unwrap();
        let t = crate::accounting::selection::Tnb::geometric(mean).unwrap();
        assert_eq!(r.epsilon, 3.0 * 0.3);
        assert_eq!(r.delta, tnb_approximate_dp_base(0.3, 1e-8, &t).unwrap().delta);
        let poisson = Event::repeat_and_select(
            CountLaw::Poisson {
                mean,
                truncate: None,
            },
            Event::approximate_dp(0.3, 1e-9).unwrap(),
        )
        .unwrap();
        let mut a = ApproxDp::new();
        a.compose(&poisson).unwrap();
        let b = poisson_approximate_dp_base(0.3, 1e-9, mean).unwrap().to_dp(1e-6).unwrap();
        assert_eq!(a.epsilon(1e-6).unwrap().epsilon, b.epsilon);
        let threshold = Event::run_until_threshold(0.1, laplace(0.4)).unwrap();
        let r = ApproxDp::rule(&threshold, None).unwrap();
        assert_eq!(r.theorem, THRESHOLD_PURE);
        assert_eq!(r.epsilon, 2.0 * laplace(0.4).pure_epsilon().unwrap());
    }

    #[test]
    fn basic_composition_adds_and_refuses_more_delta_than_asked() {
        let run = Event::approximate_dp(0.5, 1e-7).unwrap();
        let mut a = ApproxDp::new();
        a.compose(&Event::self_composed(4, run.clone()).unwrap()).unwrap();
        let b = a.epsilon(1e-6).unwrap();
        assert_eq!(b.epsilon, 2.0);
        assert_eq!(a.delta(2.0).unwrap().delta, mul_up(4.0, 1e-7));
        assert!(a.delta(1.9).is_err());
        a.compose(&Event::self_composed(20, run).unwrap()).unwrap();
        let e = a.epsilon(1e-6).unwrap_err().to_string();
        assert!(e.contains("more than the δ"), "{e}");
    }

    #[test]
    fn events_without_a_dp_guarantee_are_refused_with_a_reason() {
        let a = ApproxDp::new();
        for e in [
            Event::gaussian(1.0, 2.0).unwrap(),
            Event::zcdp(0.1).unwrap(),
            Event::run_until_threshold(0.5, Event::zcdp(0.1).unwrap()).unwrap(),
        ] {
            let why = a.supports(&e).unwrap_err().0;
            assert!(why.contains("no pure or approximate DP guarantee"), "{why}");
        }
        assert!(a.epsilon(1e-6).is_err(), "nothing composed");
    }
}
