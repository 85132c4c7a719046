//! [`Event`]: what a computation releases, described once in dp_accounting's vocabulary
//! (`DpEvent`), apart from how it is accounted ([`super::accountant::PrivacyAccountant`]).
//!
//! An event is validated when it is built (one constructor per kind, each an error naming the
//! parameter and its range) and when it is read back (serde goes through the same checks), so
//! an accountant never meets an invalid one. Which accountants can bound an event is theirs to
//! say (`supports`); the vocabulary is wider than any one of them.
//!
//! # Neighbouring relation
//!
//! A base mechanism (Gaussian, Laplace, zCDP, pure, (ε, δ), an RDP curve) holds under the
//! relation its sensitivity or parameters are stated for, and composes with either. Sampling
//! fixes it ([`Event::neighbours`]): Poisson sampling protects adding or removing one record,
//! sampling without replacement and randomized response replacing one. A composition of
//! events that fix different relations is refused when it is built: no accountant here can
//! turn it into one guarantee.

use super::mechanisms::{AdditiveNoise, DpSgd, Gaussian, Laplace, LotSampling};
use super::rdp::RdpCurve;
use crate::accounting::selection::{CountFamily, RunCount};
use crate::error::{Error, Range, Result};
use crate::numeric::{add_up, count_up, mul_up};
use serde::{Deserialize, Serialize};

/// Which neighbouring data sets an event's guarantee compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Neighbours {
    /// One data set is the other with one record added or removed.
    AddOrRemoveOne,
    /// Data sets of the same size, one record replaced.
    ReplaceOne,
}

impl Neighbours {
    pub fn name(self) -> &'static str {
        match self {
            Neighbours::AddOrRemoveOne => "add-or-remove-one",
            Neighbours::ReplaceOne => "replace-one",
        }
    }
}

/// The law of the number of runs K of a repeat-and-select event (`selection`'s laws; a
/// truncated one conditions K on K ≤ `truncate`, Lemma 22).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "family", rename_all = "kebab-case", deny_unknown_fields)]
pub enum CountLaw {
    /// Papernot–Steinke's truncated negative binomial with shape η > −1 and mean E\[K\] > 1:
    /// η = 0 is the logarithmic law, η = 1 the geometric one (Liu–Talwar).
    TruncatedNegativeBinomial {
        eta: f64,
        mean: f64,
        truncate: Option<u64>,
    },
    /// K ~ Poisson(mean), mean > 0.
    Poisson { mean: f64, truncate: Option<u64> },
    /// K = count ≥ 1 always (a truncation at or above it changes nothing but the code path).
    Fixed {
        count: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        truncate: Option<u64>,
    },
}

impl CountLaw {
    /// The law as `selection` computes with it (the same construction as the CLI's and the
    /// tuners': [`CountFamily::with_mean`]).
    pub fn run_count(&self) -> Result<RunCount> {
        match *self {
            CountLaw::TruncatedNegativeBinomial {
                eta,
                mean,
                truncate,
            } => CountFamily::Tnb { eta }.with_mean(mean, truncate),
            CountLaw::Poisson { mean, truncate } => CountFamily::Poisson.with_mean(mean, truncate),
            CountLaw::Fixed { count, truncate } => {
                if count == 0 {
                    return Err(Error::invalid("count", 0, "an integer >= 1"));
                }
                CountFamily::Fixed.with_mean(count as f64, truncate)
            }
        }
    }

    /// The law of `family` with mean `mean`, truncated at `truncate` (as [`CountFamily::with_mean`]
    /// takes them: the law computed from it is that one, to the bit).
    pub fn of(family: CountFamily, mean: f64, truncate: Option<u64>) -> Result<CountLaw> {
        family.with_mean(mean, truncate)?;
        Ok(match family {
            CountFamily::Tnb { eta } => CountLaw::TruncatedNegativeBinomial {
                eta,
                mean,
                truncate,
            },
            CountFamily::Poisson => CountLaw::Poisson { mean, truncate },
            // An integer >= 1 (`with_mean` checked it).
            CountFamily::Fixed => CountLaw::Fixed {
                count: mean as u64,
                truncate,
            },
        })
    }
}

/// A privacy event: a mechanism, or how mechanisms are sampled, repeated and composed.
/// Built by its constructors (or read by serde, through the same checks); read by [`Event::kind`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Kind", into = "Kind")]
pub struct Event {
    kind: Kind,
}

/// The kinds of event and their parameters, as serde writes and reads them:
/// `{"kind": "gaussian", "sensitivity": 1.0, "noise_sd": 2.0}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Kind {
    /// N(g(x), σ²I) for a query of ℓ2-sensitivity Δ: noise multiplier σ/Δ. Kept as (Δ, σ), as
    /// [`Gaussian`] is, so each accountant computes exactly what the mechanism's own code does.
    Gaussian { sensitivity: f64, noise_sd: f64 },
    /// g(x) + Lap(b) for a query of ℓ1-sensitivity Δ: pure (Δ/b)-DP.
    Laplace { sensitivity: f64, scale: f64 },
    /// The true answer of `buckets` with probability 1 − noise, else one drawn uniformly
    /// (dp_accounting's `RandomizedResponseDpEvent`; replace-one).
    RandomizedResponse { noise: f64, buckets: u64 },
    /// (ξ, ρ)-zCDP: ε(λ) ≤ ξ + ρλ at every order (ξ = 0, the default: ρ-zCDP).
    Zcdp {
        rho: f64,
        #[serde(default, skip_serializing_if = "is_zero")]
        xi: f64,
    },
    /// Pure ε-DP.
    PureDp { epsilon: f64 },
    /// μ-Gaussian DP (Dong–Roth–Su): as hard to tell apart as N(0, 1) from N(μ, 1), the
    /// Gaussian mechanism of sensitivity μ at unit noise.
    GaussianDp { mu: f64 },
    /// (ε, δ)-DP, δ > 0 (δ = 0 is [`Kind::PureDp`]).
    ApproximateDp { epsilon: f64, delta: f64 },
    /// A mechanism known only by an upper bound on its Rényi divergences at these orders.
    RenyiCurve {
        orders: Vec<f64>,
        epsilons: Vec<f64>,
    },
    /// `event` run on a subsample holding each record with probability `sampling_rate`
    /// (add-or-remove-one; the inner event's sensitivity is under that relation).
    PoissonSampled {
        sampling_rate: f64,
        event: Box<Event>,
    },
    /// `event` run on a subsample of fixed size `sampling_rate`·n drawn uniformly without
    /// replacement (replace-one; the inner event's sensitivity is the replace-one one).
    SampledWithoutReplacement {
        sampling_rate: f64,
        event: Box<Event>,
    },
    /// `event` run `count` ≥ 1 times.
    SelfComposed { count: u64, event: Box<Event> },
    /// Each of `events` run once (at least one).
    Composed { events: Vec<Event> },
    /// K ~ `law` runs of `event`, the best of them released (Papernot–Steinke; Liu–Talwar).
    RepeatAndSelect { law: CountLaw, event: Box<Event> },
    /// Runs of `event` until one's score reaches a threshold, halting with probability
    /// `halt_probability` ∈ (0, 1] before each run; the passing run released, or nothing
    /// (Liu–Talwar's threshold variant; Papernot–Steinke Corollary 16).
    RunUntilThreshold {
        halt_probability: f64,
        event: Box<Event>,
    },
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl TryFrom<Kind> for Event {
    type Error = Error;
    fn try_from(kind: Kind) -> Result<Event> {
        Event::validated(kind)
    }
}

impl From<Event> for Kind {
    fn from(e: Event) -> Kind {
        e.kind
    }
}

/// The pure ε of k-ary randomized response with noise p: ln((1 − p + p/k)/(p/k)) =
/// ln(k/p − k + 1), rounded up (0 at p = 1: the answer is uniform whatever the data).
pub fn randomized_response_epsilon(noise: f64, buckets: u64) -> f64 {
    if noise == 1.0 {
        return 0.0;
    }
    let k = buckets as f64;
    libm::log(k / noise - k + 1.0).next_up()
}

/// The checked rate of a sampling that fixes `outer`, and its inner event, which must hold
/// under `outer` or fix no relation.
fn sampled(sampling_rate: f64, event: Event, outer: Neighbours) -> Result<(f64, Box<Event>)> {
    let q = Range::UnitExcludingZero.check("sampling_rate", sampling_rate)?;
    match event.neighbours() {
        Some(inner) if inner != outer => Err(Error::invalid(
            "event",
            event.kind_name(),
            format!(
                "an event that holds under {} neighbours, as the sampling does (this one \
                 holds under {})",
                outer.name(),
                inner.name()
            ),
        )),
        _ => Ok((q, Box::new(event))),
    }
}

impl Event {
    /// Checks `kind`'s own parameters (its inner events are events, so already checked).
    fn validated(kind: Kind) -> Result<Event> {
        let kind = match kind {
            Kind::Gaussian {
                sensitivity,
                noise_sd,
            } => {
                Range::Positive.check("sensitivity", sensitivity)?;
                Range::Positive.check("noise_sd", noise_sd)?;
                kind
            }
            Kind::Laplace { sensitivity, scale } => {
                Range::Positive.check("sensitivity", sensitivity)?;
                Range::Positive.check("scale", scale)?;
                kind
            }
            Kind::RandomizedResponse { noise, buckets } => {
                Range::UnitExcludingZero.check("noise", noise)?;
                if buckets < 2 {
                    return Err(Error::invalid("buckets", buckets, "at least 2 answers"));
                }
                kind
            }
            Kind::Zcdp { rho, xi } => {
                Range::NonNegative.check("rho", rho)?;
                Range::NonNegative.check("xi", xi)?;
                kind
            }
            Kind::PureDp { epsilon } => {
                Range::NonNegative.check("epsilon", epsilon)?;
                kind
            }
            Kind::GaussianDp { mu } => {
                Range::Positive.check("mu", mu)?;
                kind
            }
            Kind::ApproximateDp { epsilon, delta } => {
                Range::NonNegative.check("epsilon", epsilon)?;
                Range::OpenUnit.check("delta", delta)?;
                kind
            }
            Kind::RenyiCurve { orders, epsilons } => {
                // Kept as the curve keeps them (sorted by order).
                let curve = RdpCurve::on_grid(orders, epsilons)?;
                let (orders, epsilons) = curve.grid().expect("a grid");
                Kind::RenyiCurve {
                    orders: orders.to_vec(),
                    epsilons: epsilons.to_vec(),
                }
            }
            Kind::PoissonSampled {
                sampling_rate,
                event,
            } => {
                let (sampling_rate, event) =
                    sampled(sampling_rate, *event, Neighbours::AddOrRemoveOne)?;
                Kind::PoissonSampled {
                    sampling_rate,
                    event,
                }
            }
            Kind::SampledWithoutReplacement {
                sampling_rate,
                event,
            } => {
                let (sampling_rate, event) =
                    sampled(sampling_rate, *event, Neighbours::ReplaceOne)?;
                Kind::SampledWithoutReplacement {
                    sampling_rate,
                    event,
                }
            }
            Kind::SelfComposed { count, .. } => {
                if count == 0 {
                    return Err(Error::invalid(
                        "count",
                        0,
                        "an integer >= 1 (an event run no times releases nothing: leave it out)",
                    ));
                }
                kind
            }
            Kind::Composed { ref events } => {
                if events.is_empty() {
                    return Err(Error::invalid(
                        "events",
                        "[]",
                        "at least one event (an empty composition releases nothing)",
                    ));
                }
                relation_of(events)?;
                kind
            }
            Kind::RepeatAndSelect { ref law, .. } => {
                law.run_count()?;
                kind
            }
            Kind::RunUntilThreshold {
                halt_probability, ..
            } => {
                Range::UnitExcludingZero.check("halt_probability", halt_probability)?;
                kind
            }
        };
        Ok(Event { kind })
    }

    /// What the event is, with its parameters.
    pub fn kind(&self) -> &Kind {
        &self.kind
    }

    /// The Gaussian mechanism of ℓ2-sensitivity Δ > 0 and noise standard deviation σ > 0.
    pub fn gaussian(sensitivity: f64, noise_sd: f64) -> Result<Event> {
        Event::validated(Kind::Gaussian {
            sensitivity,
            noise_sd,
        })
    }

    /// The mechanism `g` (already validated).
    pub fn of_gaussian(g: &Gaussian) -> Event {
        Event {
            kind: Kind::Gaussian {
                sensitivity: g.sensitivity(),
                noise_sd: g.sigma(),
            },
        }
    }

    /// The zCDP guarantee ρ = Δ²/(2σ²) of `g` (rounded up, as [`Gaussian::rho`]): what the
    /// score releases declare. It is weaker than [`Event::of_gaussian`] (the PLD and μ-GDP
    /// accountants do not support it, RDP gives the same curve), and it is what their runs were
    /// accounted as before events: declaring the Gaussian itself would tighten compositions
    /// of them and move committed numbers, a change of its own.
    pub fn zcdp_of(g: &Gaussian) -> Event {
        Event {
            kind: Kind::Zcdp {
                rho: g.rho(),
                xi: 0.0,
            },
        }
    }

    /// A score release's noise as it declares it: [`Event::zcdp_of`] a Gaussian (as before
    /// events), the Laplace mechanism itself.
    pub fn of_noise(noise: &AdditiveNoise) -> Event {
        match noise {
            AdditiveNoise::Gaussian(g) => Event::zcdp_of(g),
            AdditiveNoise::Laplace(l) => Event::of_laplace(l),
        }
    }

    /// The mechanism `l` (already validated).
    pub fn of_laplace(l: &Laplace) -> Event {
        Event {
            kind: Kind::Laplace {
                sensitivity: l.sensitivity(),
                scale: l.scale(),
            },
        }
    }

    /// The Laplace mechanism of ℓ1-sensitivity Δ > 0 and scale b > 0.
    pub fn laplace(sensitivity: f64, scale: f64) -> Result<Event> {
        Event::validated(Kind::Laplace { sensitivity, scale })
    }

    /// Randomized response on `buckets` ≥ 2 answers with noise p in (0, 1].
    pub fn randomized_response(noise: f64, buckets: u64) -> Result<Event> {
        Event::validated(Kind::RandomizedResponse { noise, buckets })
    }

    /// ρ-zCDP, ρ ≥ 0.
    pub fn zcdp(rho: f64) -> Result<Event> {
        Event::zcdp_xi(rho, 0.0)
    }

    /// (ξ, ρ)-zCDP, ρ, ξ ≥ 0.
    pub fn zcdp_xi(rho: f64, xi: f64) -> Result<Event> {
        Event::validated(Kind::Zcdp { rho, xi })
    }

    /// Pure ε-DP, ε ≥ 0.
    pub fn pure_dp(epsilon: f64) -> Result<Event> {
        Event::validated(Kind::PureDp { epsilon })
    }

    /// μ-Gaussian DP, μ > 0 finite.
    pub fn gaussian_dp(mu: f64) -> Result<Event> {
        Event::validated(Kind::GaussianDp { mu })
    }

    /// (ε, δ)-DP with ε ≥ 0 and δ in (0, 1).
    pub fn approximate_dp(epsilon: f64, delta: f64) -> Result<Event> {
        Event::validated(Kind::ApproximateDp { epsilon, delta })
    }

    /// A mechanism known by its RDP curve at `orders` (each finite and > 1, distinct), ε ≥ 0
    /// (+∞ allowed: no bound at that order).
    pub fn renyi_curve(orders: Vec<f64>, epsilons: Vec<f64>) -> Result<Event> {
        Event::validated(Kind::RenyiCurve { orders, epsilons })
    }

    /// `event` on a Poisson subsample at rate q in (0, 1].
    pub fn poisson_sampled(sampling_rate: f64, event: Event) -> Result<Event> {
        Event::validated(Kind::PoissonSampled {
            sampling_rate,
            event: Box::new(event),
        })
    }

    /// `event` on a subsample drawn without replacement at rate q = m/n in (0, 1].
    pub fn sampled_without_replacement(sampling_rate: f64, event: Event) -> Result<Event> {
        Event::validated(Kind::SampledWithoutReplacement {
            sampling_rate,
            event: Box::new(event),
        })
    }

    /// `event` on `lot_size` = m of `data_size` = n records drawn without replacement
    /// (1 ≤ m ≤ n): q = m/n, as [`super::WorSubsampledGaussian::from_sizes`] computes it.
    pub fn sampled_without_replacement_of(
        data_size: u64,
        lot_size: u64,
        event: Event,
    ) -> Result<Event> {
        let q = super::WorSubsampledGaussian::from_sizes(data_size, lot_size, 1.0)?;
        Event::sampled_without_replacement(q.sampling_rate(), event)
    }

    /// `event` run `count` ≥ 1 times.
    pub fn self_composed(count: u64, event: Event) -> Result<Event> {
        Event::validated(Kind::SelfComposed {
            count,
            event: Box::new(event),
        })
    }

    /// Each of `events` (at least one) run once.
    pub fn composed(events: Vec<Event>) -> Result<Event> {
        Event::validated(Kind::Composed { events })
    }

    /// K ~ `law` runs of `event`, the best released.
    pub fn repeat_and_select(law: CountLaw, event: Event) -> Result<Event> {
        Event::validated(Kind::RepeatAndSelect {
            law,
            event: Box::new(event),
        })
    }

    /// Runs of `event` until one passes a threshold, halting with probability
    /// `halt_probability` ∈ (0, 1] before each.
    pub fn run_until_threshold(halt_probability: f64, event: Event) -> Result<Event> {
        Event::validated(Kind::RunUntilThreshold {
            halt_probability,
            event: Box::new(event),
        })
    }

    /// The inner event of a sampled, repeated or selected event (None for a mechanism or a
    /// composition of several).
    pub fn inner(&self) -> Option<&Event> {
        match &self.kind {
            Kind::PoissonSampled { event, .. }
            | Kind::SampledWithoutReplacement { event, .. }
            | Kind::SelfComposed { event, .. }
            | Kind::RepeatAndSelect { event, .. }
            | Kind::RunUntilThreshold { event, .. } => Some(event),
            _ => None,
        }
    }

    /// A DP-SGD run: its steps, each the Gaussian of noise multiplier σ (sensitivity 1: the
    /// clipping norm, or the replace-one 2C without replacement) on a lot drawn as `run` says.
    pub fn dpsgd(run: &DpSgd) -> Result<Event> {
        let step = Event::gaussian(1.0, run.noise_multiplier())?;
        let lot = match run.sampling() {
            LotSampling::Poisson => Event::poisson_sampled(run.sampling_rate(), step)?,
            LotSampling::WithoutReplacement => {
                Event::sampled_without_replacement(run.sampling_rate(), step)?
            }
        };
        Event::self_composed(run.steps(), lot)
    }

    /// The pure-DP ε of an event that is pure DP in every part, rounded up (Laplace Δ/b, as
    /// [`Laplace::epsilon`]; a stated pure ε; randomized response ln(k/p − k + 1); counts and
    /// compositions add), for the pure-DP theorems that take one run's ε (Kairouz–Oh–
    /// Viswanath, Papernot–Steinke Corollary 3, Liu–Talwar's threshold); None where a part is
    /// not pure DP, or where the ε is 0 (a release that costs nothing needs no theorem).
    pub fn pure_epsilon(&self) -> Option<f64> {
        self.pure_part().filter(|e| e.is_finite() && *e > 0.0)
    }

    fn pure_part(&self) -> Option<f64> {
        match &self.kind {
            Kind::Laplace { sensitivity, scale } => {
                Laplace::new(*sensitivity, *scale).ok().map(|l| l.epsilon())
            }
            Kind::PureDp { epsilon } => Some(*epsilon),
            Kind::RandomizedResponse { noise, buckets } => {
                Some(randomized_response_epsilon(*noise, *buckets))
            }
            Kind::SelfComposed { count, event } => {
                event.pure_part().map(|e| mul_up(count_up(*count), e))
            }
            Kind::Composed { events } => events
                .iter()
                .try_fold(0.0, |sum, e| e.pure_part().map(|x| add_up(sum, x))),
            _ => None,
        }
    }

    /// The relation the event fixes, or None where it holds under whichever relation its
    /// parameters are stated for.
    pub fn neighbours(&self) -> Option<Neighbours> {
        match &self.kind {
            Kind::RandomizedResponse { .. } => Some(Neighbours::ReplaceOne),
            Kind::PoissonSampled { .. } => Some(Neighbours::AddOrRemoveOne),
            Kind::SampledWithoutReplacement { .. } => Some(Neighbours::ReplaceOne),
            Kind::SelfComposed { event, .. }
            | Kind::RepeatAndSelect { event, .. }
            | Kind::RunUntilThreshold { event, .. } => event.neighbours(),
            Kind::Composed { events } => relation_of(events).expect("checked when built"),
            Kind::Gaussian { .. }
            | Kind::Laplace { .. }
            | Kind::Zcdp { .. }
            | Kind::PureDp { .. }
            | Kind::GaussianDp { .. }
            | Kind::ApproximateDp { .. }
            | Kind::RenyiCurve { .. } => None,
        }
    }

    /// The kind's name, as serde writes it (for messages).
    pub fn kind_name(&self) -> &'static str {
        match &self.kind {
            Kind::Gaussian { .. } => "gaussian",
            Kind::Laplace { .. } => "laplace",
            Kind::RandomizedResponse { .. } => "randomized-response",
            Kind::Zcdp { .. } => "zcdp",
            Kind::PureDp { .. } => "pure-dp",
            Kind::GaussianDp { .. } => "gaussian-dp",
            Kind::ApproximateDp { .. } => "approximate-dp",
            Kind::RenyiCurve { .. } => "renyi-curve",
            Kind::PoissonSampled { .. } => "poisson-sampled",
            Kind::SampledWithoutReplacement { .. } => "sampled-without-replacement",
            Kind::SelfComposed { .. } => "self-composed",
            Kind::Composed { .. } => "composed",
            Kind::RepeatAndSelect { .. } => "repeat-and-select",
            Kind::RunUntilThreshold { .. } => "run-until-threshold",
        }
    }
}

/// The one relation `events` fix between them (None: none fixes one), or an error where two
/// fix different ones.
fn relation_of(events: &[Event]) -> Result<Option<Neighbours>> {
    let mut fixed: Option<Neighbours> = None;
    for e in events {
        match (fixed, e.neighbours()) {
            (Some(a), Some(b)) if a != b => {
                return Err(Error::invalid(
                    "events",
                    format!("{} and {} neighbours", a.name(), b.name()),
                    "events that hold under one neighbouring relation: a composition of \
                     add-or-remove-one and replace-one guarantees is no guarantee of either",
                ))
            }
            (None, b) => fixed = b,
            _ => {}
        }
    }
    Ok(fixed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step() -> Event {
        Event::gaussian(1.0, 1.1).unwrap()
    }

    /// One of every kind, nested, through JSON and back: equal, and equally valid.
    #[test]
    fn serde_round_trip() {
        let all = Event::composed(vec![
            Event::self_composed(100, Event::poisson_sampled(0.01, step()).unwrap()).unwrap(),
            Event::laplace(0.5, 2.0).unwrap(),
            Event::zcdp(0.1).unwrap(),
            Event::zcdp_xi(0.1, 0.02).unwrap(),
            Event::pure_dp(1.0).unwrap(),
            Event::approximate_dp(1.0, 1e-6).unwrap(),
            Event::renyi_curve(vec![8.0, 2.0], vec![1.0, 0.25]).unwrap(),
            Event::repeat_and_select(
                CountLaw::TruncatedNegativeBinomial {
                    eta: 0.5,
                    mean: 10.0,
                    truncate: Some(100),
                },
                Event::of_gaussian(&Gaussian::new(0.1, 0.3).unwrap()),
            )
            .unwrap(),
            Event::repeat_and_select(
                CountLaw::Poisson {
                    mean: 3.0,
                    truncate: None,
                },
                step(),
            )
            .unwrap(),
            Event::repeat_and_select(
                CountLaw::Fixed {
                    count: 4,
                    truncate: None,
                },
                step(),
            )
            .unwrap(),
        ])
        .unwrap();
        let text = serde_json::to_string(&all).unwrap();
        let back: Event = serde_json::from_str(&text).unwrap();
        assert_eq!(back, all);
        // The curve was sorted once, when built; ξ = 0 is left out (ρ-zCDP as before ξ).
        assert!(text.contains(r#""orders":[2.0,8.0]"#), "{text}");
        assert!(text.contains(r#"{"kind":"zcdp","rho":0.1}"#), "{text}");
        assert!(text.contains(r#""xi":0.02"#), "{text}");
        let wor = Event::sampled_without_replacement_of(400, 50, step()).unwrap();
        let rr = Event::randomized_response(0.5, 4).unwrap();
        let both = Event::composed(vec![wor, rr]).unwrap();
        let back: Event = serde_json::from_str(&serde_json::to_string(&both).unwrap()).unwrap();
        assert_eq!(back, both);
        assert_eq!(back.neighbours(), Some(Neighbours::ReplaceOne));
    }

    /// The pure ε of what is pure DP in every part: Laplace Δ/b, randomized response
    /// ln(k/p − k + 1), counts and compositions summed (each rounded up); None where a part is
    /// not pure, or where it costs nothing.
    #[test]
    fn pure_epsilon_of_pure_parts() {
        let lap = Event::laplace(1.0, 0.5).unwrap();
        assert_eq!(lap.pure_epsilon(), Some(2.0));
        let rr = Event::randomized_response(0.5, 4).unwrap();
        let want = libm::log(4.0f64 / 0.5 - 4.0 + 1.0);
        let got = rr.pure_epsilon().unwrap();
        assert!(got >= want && got <= want.next_up(), "{got} vs {want}");
        let three = Event::self_composed(3, lap.clone()).unwrap();
        assert_eq!(three.pure_epsilon(), Some(6.0));
        let both = Event::composed(vec![lap.clone(), Event::pure_dp(0.25).unwrap()]).unwrap();
        assert_eq!(both.pure_epsilon(), Some(2.25));
        let mixed = Event::composed(vec![lap, Event::zcdp(0.1).unwrap()]).unwrap();
        assert_eq!(mixed.pure_epsilon(), None);
        assert_eq!(Event::gaussian(1.0, 1.0).unwrap().pure_epsilon(), None);
        assert_eq!(Event::pure_dp(0.0).unwrap().pure_epsilon(), None);
        assert_eq!(
            Event::randomized_response(1.0, 3).unwrap().pure_epsilon(),
            None
        );
    }

    /// What the constructors refuse, serde refuses too, naming the parameter.
    #[test]
    fn invalid_parameters_are_refused_by_name() {
        let cases: Vec<(Result<Event>, &str)> = vec![
            (Event::gaussian(0.0, 1.0), "sensitivity"),
            (Event::gaussian(1.0, f64::NAN), "noise_sd"),
            (Event::laplace(1.0, -1.0), "scale"),
            (Event::randomized_response(0.0, 2), "noise"),
            (Event::randomized_response(0.5, 1), "buckets"),
            (Event::zcdp(-0.1), "rho"),
            (Event::pure_dp(f64::INFINITY), "epsilon"),
            (Event::approximate_dp(1.0, 0.0), "delta"),
            (Event::renyi_curve(vec![1.0], vec![0.1]), "order"),
            (Event::renyi_curve(vec![2.0], vec![-0.1]), "epsilon"),
            (Event::poisson_sampled(0.0, step()), "sampling_rate"),
            (
                Event::sampled_without_replacement(1.5, step()),
                "sampling_rate",
            ),
            (Event::sampled_without_replacement_of(10, 11, step()), "lot"),
            (Event::self_composed(0, step()), "count"),
            (Event::composed(vec![]), "events"),
            (
                Event::repeat_and_select(
                    CountLaw::TruncatedNegativeBinomial {
                        eta: -1.0,
                        mean: 10.0,
                        truncate: None,
                    },
                    step(),
                ),
                "eta",
            ),
            (
                Event::repeat_and_select(
                    CountLaw::Poisson {
                        mean: 3.0,
                        truncate: Some(0),
                    },
                    step(),
                ),
                "truncate",
            ),
            (
                Event::repeat_and_select(
                    CountLaw::Fixed {
                        count: 0,
                        truncate: None,
                    },
                    step(),
                ),
                "count",
            ),
        ];
        for (got, name) in cases {
            let e = got.expect_err(name).to_string();
            assert!(e.contains(name), "{name}: {e}");
        }
        for text in [
            r#"{"kind":"gaussian","sensitivity":1.0,"noise_sd":0.0}"#,
            r#"{"kind":"gaussian","sensitivity":1.0,"noise_sd":1.0,"extra":1}"#,
            r#"{"kind":"self-composed","count":0,"event":{"kind":"zcdp","rho":0.1}}"#,
            r#"{"kind":"poisson-sampled","sampling_rate":0.1,"event":{"kind":"gaussian","sensitivity":1.0,"noise_sd":-1.0}}"#,
            r#"{"kind":"composed","events":[]}"#,
        ] {
            assert!(serde_json::from_str::<Event>(text).is_err(), "{text}");
        }
    }

    /// Sampling fixes the relation; composing two that fix different ones is refused, as is
    /// sampling an event under the other relation.
    #[test]
    fn the_neighbouring_relation_is_carried_and_checked() {
        let poisson = Event::poisson_sampled(0.1, step()).unwrap();
        let wor = Event::sampled_without_replacement(0.1, step()).unwrap();
        assert_eq!(poisson.neighbours(), Some(Neighbours::AddOrRemoveOne));
        assert_eq!(wor.neighbours(), Some(Neighbours::ReplaceOne));
        assert_eq!(step().neighbours(), None);
        let run = Event::composed(vec![
            step(),
            Event::self_composed(3, poisson.clone()).unwrap(),
        ])
        .unwrap();
        assert_eq!(run.neighbours(), Some(Neighbours::AddOrRemoveOne));
        let e = Event::composed(vec![run, wor.clone()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("events") && e.contains("replace-one"), "{e}");
        assert!(Event::poisson_sampled(0.5, wor).is_err());
        assert!(Event::sampled_without_replacement(0.5, poisson).is_err());
        let rr = Event::randomized_response(0.5, 2).unwrap();
        assert!(Event::poisson_sampled(0.5, rr).is_err());
    }

    /// A DP-SGD run is its steps: the sampled Gaussian of noise multiplier σ, T times.
    #[test]
    fn a_dpsgd_run_is_its_steps() {
        let run = DpSgd::with_sampling(LotSampling::WithoutReplacement, 0.125, 1.5, 16).unwrap();
        let want = Event::self_composed(
            16,
            Event::sampled_without_replacement(0.125, Event::gaussian(1.0, 1.5).unwrap()).unwrap(),
        )
        .unwrap();
        assert_eq!(Event::dpsgd(&run).unwrap(), want);
    }
}
