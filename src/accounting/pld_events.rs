//! The PLD accountant of events ([`Pld`]): each event as the mechanisms
//! [`PldAccountant`] composes (each with its count: a self-composition multiplies the counts
//! inside it, as [`super::pld::repeated`] does), composed in the event's order: the same ε to
//! the bit as [`super::pld::composed_epsilon`] gives for those parts.

use super::accountant::{finite, Ledger, PrivacyAccountant, Registered, Settings, Unsupported};
use super::convert::DpBound;
use super::event::{Event, Kind};
use super::pld::{accountant_name, PldAccountant, PldMechanism, PldRun};
use crate::error::{Error, Result};

/// Privacy-loss distributions on a loss grid (connect-the-dots; composition by FFT).
#[derive(Clone, Debug)]
pub struct Pld {
    inner: PldAccountant,
    ledger: Ledger,
}

impl Pld {
    /// On the loss grid of spacing `interval` > 0.
    pub fn new(interval: f64) -> Result<Self> {
        Ok(Pld {
            inner: PldAccountant::new(interval)?,
            ledger: Ledger::default(),
        })
    }

    /// The mechanisms of `event` as the PLD accountant composes them, or None where it does
    /// not support the event (a zCDP guarantee, an RDP curve, repeat-and-select, …).
    pub fn run_of(event: &Event) -> Result<Option<PldRun>> {
        if Self::supported(event).is_err() {
            return Ok(None);
        }
        let mut run = Vec::new();
        Self::parts(event, 1, &mut run)?;
        Ok(Some(run))
    }

    /// [`PrivacyAccountant::supports`]: a function of the event alone (the grid's spacing
    /// bounds no kind).
    fn supported(event: &Event) -> std::result::Result<(), Unsupported> {
        if let Some(why) = Self::unsupported_kind(event) {
            return Err(why);
        }
        match event.kind() {
            Kind::PoissonSampled { event, .. } | Kind::SampledWithoutReplacement { event, .. } => {
                Self::sampled_gaussian(event)
            }
            Kind::SelfComposed { event, .. } => Self::supported(event),
            Kind::Composed { events } => events.iter().try_for_each(Self::supported),
            _ => Ok(()),
        }
    }

    /// The mechanisms of `event`, each run `times` times more, appended to `out`.
    pub fn parts(event: &Event, times: u64, out: &mut PldRun) -> Result<()> {
        let sampled = |q: f64, inner: &Event| -> Result<(f64, f64)> {
            match inner.kind() {
                Kind::Gaussian {
                    sensitivity,
                    noise_sd,
                } if *sensitivity == 1.0 => Ok((q, *noise_sd)),
                _ => Err(Error::Infeasible(
                    Self::sampled_gaussian(inner).expect_err("not one").0,
                )),
            }
        };
        let mechanism = match event.kind() {
            Kind::Gaussian {
                sensitivity,
                noise_sd,
            } => PldMechanism::Gaussian {
                sensitivity: *sensitivity,
                sigma: *noise_sd,
            },
            // μ-GDP is the Gaussian of sensitivity μ at unit noise.
            Kind::GaussianDp { mu } => PldMechanism::Gaussian {
                sensitivity: *mu,
                sigma: 1.0,
            },
            Kind::Laplace { sensitivity, scale } => PldMechanism::Laplace {
                sensitivity: *sensitivity,
                scale: *scale,
            },
            Kind::RandomizedResponse { noise, buckets } => PldMechanism::RandomizedResponse {
                noise: *noise,
                buckets: *buckets,
            },
            Kind::PureDp { epsilon } => PldMechanism::ApproximateDp {
                epsilon: *epsilon,
                delta: 0.0,
            },
            Kind::ApproximateDp { epsilon, delta } => PldMechanism::ApproximateDp {
                epsilon: *epsilon,
                delta: *delta,
            },
            Kind::PoissonSampled {
                sampling_rate,
                event,
            } => {
                let (sampling_rate, noise_multiplier) = sampled(*sampling_rate, event)?;
                PldMechanism::PoissonGaussian {
                    sampling_rate,
                    noise_multiplier,
                }
            }
            Kind::SampledWithoutReplacement {
                sampling_rate,
                event,
            } => {
                let (sampling_rate, noise_multiplier) = sampled(*sampling_rate, event)?;
                PldMechanism::WorGaussian {
                    sampling_rate,
                    noise_multiplier,
                }
            }
            Kind::SelfComposed { count, event } => {
                let times = times.checked_mul(*count).ok_or_else(|| {
                    Error::invalid("count", count, "fewer runs: the total count overflows")
                })?;
                return Self::parts(event, times, out);
            }
            Kind::Composed { events } => {
                return events.iter().try_for_each(|e| Self::parts(e, times, out))
            }
            Kind::Zcdp { .. }
            | Kind::RenyiCurve { .. }
            | Kind::RepeatAndSelect { .. }
            | Kind::RunUntilThreshold { .. } => {
                return Err(Error::Infeasible(
                    Self::unsupported_kind(event).expect("unsupported").0,
                ))
            }
        };
        out.push((mechanism, times));
        Ok(())
    }

    fn sampled_gaussian(inner: &Event) -> std::result::Result<(), Unsupported> {
        match inner.kind() {
            Kind::Gaussian { sensitivity, .. } if *sensitivity == 1.0 => Ok(()),
            Kind::Gaussian { .. } => Err(Unsupported(
                "a sampled Gaussian is accounted with sensitivity 1 (state its noise as a \
                 multiplier of the sensitivity)"
                    .into(),
            )),
            _ => Err(Unsupported(format!(
                "a sampled {} event has no dominating pair here (only the sampled Gaussian)",
                inner.kind_name()
            ))),
        }
    }

    /// Why a kind with no privacy-loss distribution here is not supported.
    fn unsupported_kind(event: &Event) -> Option<Unsupported> {
        let why = match event.kind() {
            Kind::Zcdp { .. } => "a zCDP guarantee does not determine a privacy-loss distribution",
            Kind::RenyiCurve { .. } => {
                "an RDP curve does not determine a privacy-loss distribution"
            }
            Kind::RepeatAndSelect { .. } => {
                "repeat-and-select is bounded in Rényi DP (Papernot–Steinke); no PLD analogue \
                 of its theorems is known, and a PLD of the K runs would bound their \
                 composition, not the release of the best"
            }
            Kind::RunUntilThreshold { .. } => {
                "a run until a threshold is bounded in Rényi DP (Papernot–Steinke Corollary \
                 16) or in pure DP (Liu–Talwar); no PLD analogue is known"
            }
            _ => return None,
        };
        Some(Unsupported(why.into()))
    }
}

impl PrivacyAccountant for Pld {
    fn key(&self) -> &'static str {
        <Self as Registered>::KEY
    }

    fn name(&self) -> String {
        accountant_name(self.inner.interval())
    }

    fn statement(&self) -> String {
        format!(
            "privacy-loss distributions ({}): connect-the-dots discretisation (Doroshenko et \
             al. 2022), pessimistic and so an upper bound, composed by FFT; Poisson-sampled \
             steps in both directions of add/remove",
            self.name()
        )
    }

    fn supports(&self, event: &Event) -> std::result::Result<(), Unsupported> {
        Self::supported(event)
    }

    fn compose(&mut self, event: &Event) -> Result<()> {
        self.ledger.check(self, event)?;
        let mut parts = Vec::new();
        Self::parts(event, 1, &mut parts)?;
        for (mechanism, count) in parts {
            self.inner.compose(mechanism, count)?;
        }
        self.ledger.record(event);
        Ok(())
    }

    fn epsilon(&self, delta: f64) -> Result<DpBound> {
        self.ledger.require_composed()?;
        finite(self.inner.epsilon(delta)?, &self.name())
    }

    fn delta(&self, epsilon: f64) -> Result<DpBound> {
        self.ledger.require_composed()?;
        self.inner.delta(epsilon)
    }
}

impl Registered for Pld {
    const KEY: &'static str = "pld";
    fn build(settings: &Settings) -> Result<Self> {
        Pld::new(settings.pld_interval)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounting::pld::{composed_epsilon, repeated};
    use crate::accounting::{DpSgd, Gaussian, LotSampling};

    /// A coarse grid keeps these compositions fast; both paths use the same one.
    const INTERVAL: f64 = 1e-3;

    fn same_bits(event: &Event, parts: &[(PldMechanism, u64)], what: &str) {
        let mut pld = Pld::new(INTERVAL).unwrap();
        pld.compose(event).unwrap();
        let mut theirs = PldAccountant::new(INTERVAL).unwrap();
        for &(m, c) in parts {
            theirs.compose(m, c).unwrap();
        }
        for delta in [1e-5, 1e-8] {
            let b = composed_epsilon(parts, delta, INTERVAL).unwrap();
            if b.epsilon.is_finite() {
                let a = pld.epsilon(delta).unwrap();
                assert_eq!(a.epsilon.to_bits(), b.epsilon.to_bits(), "{what} δ={delta}");
            } else {
                // Where the composition's own δ exceeds the target no ε is finite: an error
                // here, never +∞.
                let e = pld.epsilon(delta).unwrap_err().to_string();
                assert!(e.contains("no finite epsilon"), "{what}: {e}");
            }
        }
        for epsilon in [0.5, 2.0] {
            let (a, b) = (pld.delta(epsilon).unwrap(), theirs.delta(epsilon).unwrap());
            assert_eq!(a.delta.to_bits(), b.delta.to_bits(), "{what} ε={epsilon}");
        }
    }

    /// Every kind the PLD accountant supports, against the parts today's code builds
    /// (`PldMechanism::gaussian`, `PldMechanism::dpsgd`, a workload's run, `repeated`).
    #[test]
    fn every_supported_kind_matches_the_current_code_path_to_the_bit() {
        let release = Gaussian::new(1.0 / 300.0, 2.0 / 300.0).unwrap();
        let poisson = DpSgd::new(0.02, 1.1, 50).unwrap();
        let wor = DpSgd::with_sampling(LotSampling::WithoutReplacement, 0.125, 1.5, 16).unwrap();
        let run = Event::composed(vec![
            Event::dpsgd(&poisson).unwrap(),
            Event::of_gaussian(&release),
        ])
        .unwrap();
        let run_parts = vec![
            PldMechanism::dpsgd(&poisson),
            (PldMechanism::gaussian(&release), 1),
        ];
        let cases: Vec<(Event, PldRun, &str)> = vec![
            (
                Event::of_gaussian(&release),
                vec![(PldMechanism::gaussian(&release), 1)],
                "gaussian",
            ),
            (
                Event::laplace(1.0, 2.0).unwrap(),
                vec![(
                    PldMechanism::Laplace {
                        sensitivity: 1.0,
                        scale: 2.0,
                    },
                    1,
                )],
                "laplace",
            ),
            (
                Event::self_composed(3, Event::randomized_response(0.4, 3).unwrap()).unwrap(),
                vec![(
                    PldMechanism::RandomizedResponse {
                        noise: 0.4,
                        buckets: 3,
                    },
                    3,
                )],
                "rr",
            ),
            (
                Event::self_composed(2, Event::approximate_dp(0.5, 1e-7).unwrap()).unwrap(),
                vec![(
                    PldMechanism::ApproximateDp {
                        epsilon: 0.5,
                        delta: 1e-7,
                    },
                    2,
                )],
                "approximate",
            ),
            (
                Event::pure_dp(0.3).unwrap(),
                vec![(
                    PldMechanism::ApproximateDp {
                        epsilon: 0.3,
                        delta: 0.0,
                    },
                    1,
                )],
                "pure",
            ),
            (
                Event::dpsgd(&poisson).unwrap(),
                vec![PldMechanism::dpsgd(&poisson)],
                "poisson dp-sgd",
            ),
            (
                Event::dpsgd(&wor).unwrap(),
                vec![PldMechanism::dpsgd(&wor)],
                "wor dp-sgd",
            ),
            (run.clone(), run_parts.clone(), "dp-sgd + release"),
            (
                Event::self_composed(4, run).unwrap(),
                repeated(&run_parts, 4).unwrap(),
                "4 runs",
            ),
        ];
        for (event, parts, what) in &cases {
            same_bits(event, parts, what);
        }
    }

    #[test]
    fn unsupported_events_are_refused_with_a_reason() {
        let pld = Pld::new(INTERVAL).unwrap();
        let g = Event::gaussian(1.0, 2.0).unwrap();
        for event in [
            Event::zcdp(0.1).unwrap(),
            Event::renyi_curve(vec![2.0], vec![0.1]).unwrap(),
            Event::repeat_and_select(
                crate::accounting::event::CountLaw::Fixed { count: 2, truncate: None },
                g.clone(),
            )
            .unwrap(),
            Event::poisson_sampled(0.1, Event::laplace(1.0, 1.0).unwrap()).unwrap(),
            Event::sampled_without_replacement(0.1, Event::gaussian(0.5, 1.0).unwrap()).unwrap(),
            Event::self_composed(
                2,
                Event::composed(vec![g, Event::zcdp(0.1).unwrap()]).unwrap(),
            )
            .unwrap(),
        ] {
            let why = pld.supports(&event).unwrap_err();
            let e = pld.clone().compose(&event).unwrap_err().to_string();
            assert!(e.contains(&why.0) && e.contains("pld/"), "{e}");
        }
        assert!(pld.epsilon(1e-5).is_err());
        let huge = Event::self_composed(
            u64::MAX,
            Event::self_composed(2, Event::pure_dp(1.0).unwrap()).unwrap(),
        )
        .unwrap();
        assert!(pld
            .clone()
            .compose(&huge)
            .unwrap_err()
            .to_string()
            .contains("overflow"));
    }
}
