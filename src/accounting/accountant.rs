//! [`PrivacyAccountant`]: how an [`Event`] is accounted, apart from what it is (dp_accounting's
//! `PrivacyAccountant`: `supports`, `compose`, `get_epsilon`, `get_delta`).
//!
//! The trait is named `PrivacyAccountant`, as dp_accounting names it, because
//! [`super::Accountant`] is already the RDP accountant's settings (its orders and conversion),
//! used across the crate: renaming that struct would touch dozens of files for no gain, and
//! the two names read differently at a glance (the settings, the trait).
//!
//! An accountant is a ledger: [`PrivacyAccountant::compose`] adds an event to what it has
//! composed so far, and `epsilon`/`delta` bound the whole. Its bounds are upper bounds, finite
//! and rounded up; one it cannot give is an error, never NaN or +∞. The registered accountants
//! are listed once, in `accounting/mod.rs` ([`super::ACCOUNTANTS`]), in the order
//! [`Tightest`] breaks ties in.

use super::convert::{Accountant, DpBound};
use super::event::{Event, Neighbours};
use crate::error::{fmt_num, Error, Result};

/// Why an accountant cannot bound an event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unsupported(pub String);

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// An accountant of privacy events.
pub trait PrivacyAccountant: Send + Sync {
    /// Its registry key (`rdp`, `pld`, …; `tightest` for several).
    fn key(&self) -> &'static str;
    /// A short machine-readable name, as results record it (`rdp/cks/continuous`).
    fn name(&self) -> String;
    /// The accountant and the theorems its bounds rest on, in words (docs, `dptune account`).
    fn statement(&self) -> String;
    /// Whether [`Self::compose`] accepts `event`, or why not. A function of the event and the
    /// accountant's settings, never of what it has composed.
    fn supports(&self, event: &Event) -> std::result::Result<(), Unsupported>;
    /// Composes `event` with what is composed so far. An error where it is not supported,
    /// where it fixes a neighbouring relation other than the composition's, or where the
    /// accountant's own limits are reached (after an error the ledger is not to be used).
    fn compose(&mut self, event: &Event) -> Result<()>;
    /// The smallest ε it proves at δ in (0, 1) for the composition: finite and rounded up.
    fn epsilon(&self, delta: f64) -> Result<DpBound>;
    /// The smallest δ it proves at ε ≥ 0 for the composition, rounded up.
    fn delta(&self, epsilon: f64) -> Result<DpBound>;
}

/// An accountant in [`super::ACCOUNTANTS`]: a key and how it is built from the settings.
pub trait Registered: PrivacyAccountant + Sized + 'static {
    /// Its key, as `accountant = "…"` would name it.
    const KEY: &'static str;
    fn build(settings: &Settings) -> Result<Self>;
}

/// What the registered accountants are built from.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// The RDP accountant's orders and conversion.
    pub rdp: Accountant,
    /// The PLD accountant's loss-grid spacing.
    pub pld_interval: f64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            rdp: Accountant::default(),
            pld_interval: super::pld::DEFAULT_INTERVAL,
        }
    }
}

/// How [`super::ACCOUNTANTS`] builds an accountant.
pub type Builder = fn(&Settings) -> Result<Box<dyn PrivacyAccountant>>;

/// The builder of `A`, boxed.
pub fn boxed<A: Registered>(settings: &Settings) -> Result<Box<dyn PrivacyAccountant>> {
    Ok(Box::new(A::build(settings)?))
}

/// The registered accountant `key`, built from `settings`.
pub fn build(key: &str, settings: &Settings) -> Result<Box<dyn PrivacyAccountant>> {
    match super::ACCOUNTANTS.iter().find(|(k, _)| *k == key) {
        Some((_, b)) => b(settings),
        None => Err(Error::invalid(
            "accountant",
            key,
            format!(
                "one of {}",
                super::ACCOUNTANTS
                    .iter()
                    .map(|(k, _)| *k)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}

/// The bookkeeping every accountant shares: whether anything is composed, and the
/// neighbouring relation the composition fixes.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Ledger {
    composed: bool,
    relation: Option<Neighbours>,
}

impl Ledger {
    /// Refuses `event` where `accountant` does not support it or where it fixes a relation
    /// other than the one composed so far.
    pub fn check(&self, accountant: &dyn PrivacyAccountant, event: &Event) -> Result<()> {
        if let Err(why) = accountant.supports(event) {
            return Err(Error::Infeasible(format!(
                "the {} accountant cannot account this {} event: {why}",
                accountant.name(),
                event.kind_name()
            )));
        }
        match (self.relation, event.neighbours()) {
            (Some(a), Some(b)) if a != b => Err(Error::Infeasible(format!(
                "this {} event holds under {} neighbours, what is composed under {}: the two \
                 cannot be composed into one guarantee",
                event.kind_name(),
                b.name(),
                a.name()
            ))),
            _ => Ok(()),
        }
    }

    /// Records that `event` is composed.
    pub fn record(&mut self, event: &Event) {
        self.composed = true;
        self.relation = self.relation.or(event.neighbours());
    }

    /// An error where nothing is composed.
    pub fn require_composed(&self) -> Result<()> {
        if self.composed {
            Ok(())
        } else {
            Err(Error::Infeasible(
                "nothing is composed yet: an empty composition has no privacy loss to account"
                    .into(),
            ))
        }
    }
}

/// `bound`, or an error where its ε is not finite (no finite ε holds at its δ).
pub fn finite(bound: DpBound, accountant: &str) -> Result<DpBound> {
    if bound.epsilon.is_finite() && bound.delta.is_finite() {
        Ok(bound)
    } else {
        Err(Error::Infeasible(format!(
            "the {accountant} accountant proves no finite epsilon at delta = {}",
            fmt_num(bound.delta)
        )))
    }
}

/// A bound and the accountant that gave it.
#[derive(Clone, Debug, PartialEq)]
pub struct Won {
    pub bound: DpBound,
    /// The winner's [`PrivacyAccountant::key`].
    pub key: &'static str,
    /// The winner's [`PrivacyAccountant::name`].
    pub accountant: String,
    /// The winner's [`PrivacyAccountant::statement`].
    pub statement: String,
}

struct Member {
    accountant: Box<dyn PrivacyAccountant>,
    /// Why it no longer bounds the composition (an event it does not support, or its limits).
    dropped: Option<String>,
}

/// Several accountants on one composition: each event is composed into every accountant that
/// supports it (one that does not is dropped: it cannot bound the whole), and a query returns
/// the smallest bound any still gives, naming it; every bound is valid, so the smallest is.
/// Ties go to the first in the given order ([`super::ACCOUNTANTS`]'s for [`Tightest::registered`]).
pub struct Tightest {
    members: Vec<Member>,
    ledger: Ledger,
}

impl Tightest {
    /// Over `accountants` (at least one), each with nothing composed.
    pub fn new(accountants: Vec<Box<dyn PrivacyAccountant>>) -> Result<Self> {
        if accountants.is_empty() {
            return Err(Error::invalid(
                "accountants",
                "[]",
                "at least one accountant",
            ));
        }
        Ok(Tightest {
            members: accountants
                .into_iter()
                .map(|accountant| Member {
                    accountant,
                    dropped: None,
                })
                .collect(),
            ledger: Ledger::default(),
        })
    }

    /// Over every registered accountant, in the registry's order.
    pub fn registered(settings: &Settings) -> Result<Self> {
        let all = super::ACCOUNTANTS
            .iter()
            .map(|(_, b)| b(settings))
            .collect::<Result<Vec<_>>>()?;
        Tightest::new(all)
    }

    fn live(&self) -> impl Iterator<Item = &dyn PrivacyAccountant> {
        self.members
            .iter()
            .filter(|m| m.dropped.is_none())
            .map(|m| m.accountant.as_ref())
    }

    /// Each member's name and why it was dropped, for messages.
    fn why_none(&self, failures: &[(String, String)]) -> String {
        self.members
            .iter()
            .filter_map(|m| {
                m.dropped
                    .as_ref()
                    .map(|why| (m.accountant.name(), why.clone()))
            })
            .chain(failures.iter().cloned())
            .map(|(name, why)| format!("{name}: {why}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// The smallest ε any member proves at `delta`, and which.
    pub fn epsilon_won(&self, delta: f64) -> Result<Won> {
        self.best(|a| a.epsilon(delta), |b| b.epsilon, None)
    }

    /// [`Tightest::epsilon_won`], where a failure of the member keyed `required` (or its
    /// being dropped) is the error: one asked for by name is not passed over in silence.
    pub fn epsilon_won_requiring(&self, delta: f64, required: &str) -> Result<Won> {
        let dropped = self
            .members
            .iter()
            .find(|m| m.accountant.key() == required)
            .and_then(|m| m.dropped.clone());
        if let Some(why) = dropped {
            return Err(Error::Infeasible(why));
        }
        self.best(|a| a.epsilon(delta), |b| b.epsilon, Some(required))
    }

    /// The smallest δ any member proves at `epsilon`, and which.
    pub fn delta_won(&self, epsilon: f64) -> Result<Won> {
        self.best(|a| a.delta(epsilon), |b| b.delta, None)
    }

    fn best(
        &self,
        query: impl Fn(&dyn PrivacyAccountant) -> Result<DpBound>,
        size: impl Fn(&DpBound) -> f64,
        required: Option<&str>,
    ) -> Result<Won> {
        let mut best: Option<(DpBound, &dyn PrivacyAccountant)> = None;
        let mut failures = Vec::new();
        for a in self.live() {
            match query(a) {
                // Strictly smaller: ties stay with the earlier accountant.
                Ok(b) if best.as_ref().is_none_or(|(w, _)| size(&b) < size(w)) => {
                    best = Some((b, a))
                }
                Ok(_) => {}
                Err(e @ Error::InvalidParameter { .. }) => return Err(e),
                Err(e) if required == Some(a.key()) => return Err(e),
                Err(e) => failures.push((a.name(), e.to_string())),
            }
        }
        best.map(|(bound, a)| Won {
            bound,
            key: a.key(),
            accountant: a.name(),
            statement: a.statement(),
        })
        .ok_or_else(|| {
            Error::Infeasible(format!(
                "no accountant bounds this composition ({})",
                self.why_none(&failures)
            ))
        })
    }
}

impl PrivacyAccountant for Tightest {
    fn key(&self) -> &'static str {
        "tightest"
    }
    fn name(&self) -> String {
        let names: Vec<String> = self.members.iter().map(|m| m.accountant.name()).collect();
        format!("tightest({})", names.join(", "))
    }

    fn statement(&self) -> String {
        let each: Vec<String> = self
            .members
            .iter()
            .map(|m| m.accountant.statement())
            .collect();
        format!("the smallest of the valid bounds of: {}", each.join("; "))
    }

    fn supports(&self, event: &Event) -> std::result::Result<(), Unsupported> {
        let mut why = Vec::new();
        for a in self.live() {
            match a.supports(event) {
                Ok(()) => return Ok(()),
                Err(u) => why.push(format!("{}: {u}", a.name())),
            }
        }
        Err(Unsupported(if why.is_empty() {
            "every accountant was dropped".into()
        } else {
            why.join("; ")
        }))
    }

    /// Where no member still in the composition supports `event`, or it fixes another
    /// neighbouring relation, an error and nothing changes; otherwise the members that do not
    /// support it (or fail to compose it) are dropped.
    fn compose(&mut self, event: &Event) -> Result<()> {
        self.ledger.check(self, event)?;
        for m in self.members.iter_mut().filter(|m| m.dropped.is_none()) {
            m.dropped = match m.accountant.supports(event) {
                Err(why) => Some(format!(
                    "does not support a {} event: {why}",
                    event.kind_name()
                )),
                Ok(()) => m.accountant.compose(event).err().map(|e| e.to_string()),
            };
        }
        if self.live().next().is_none() {
            return Err(Error::Infeasible(format!(
                "every accountant failed on this {} event ({})",
                event.kind_name(),
                self.why_none(&[])
            )));
        }
        self.ledger.record(event);
        Ok(())
    }

    fn epsilon(&self, delta: f64) -> Result<DpBound> {
        Ok(self.epsilon_won(delta)?.bound)
    }

    fn delta(&self, epsilon: f64) -> Result<DpBound> {
        Ok(self.delta_won(epsilon)?.bound)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounting::pld_events::Pld;
    use crate::accounting::rdp_events::Rdp;
    use crate::accounting::DpSgd;

    /// A toy accountant: a fixed ε for whatever Gaussian it is given, or an error.
    struct Toy {
        name: &'static str,
        epsilon: Option<f64>,
        ledger: Ledger,
    }

    fn toy(name: &'static str, epsilon: Option<f64>) -> Box<dyn PrivacyAccountant> {
        Box::new(Toy {
            name,
            epsilon,
            ledger: Ledger::default(),
        })
    }

    impl PrivacyAccountant for Toy {
        fn key(&self) -> &'static str {
            self.name
        }
        fn name(&self) -> String {
            self.name.into()
        }
        fn statement(&self) -> String {
            format!("toy {}", self.name)
        }
        fn supports(&self, event: &Event) -> std::result::Result<(), Unsupported> {
            match event.kind() {
                crate::accounting::event::Kind::Gaussian { .. } => Ok(()),
                _ => Err(Unsupported("toys take Gaussians".into())),
            }
        }
        fn compose(&mut self, event: &Event) -> Result<()> {
            self.ledger.check(self, event)?;
            self.ledger.record(event);
            Ok(())
        }
        fn epsilon(&self, delta: f64) -> Result<DpBound> {
            self.ledger.require_composed()?;
            crate::error::Range::OpenUnit.check("delta", delta)?;
            let epsilon = self
                .epsilon
                .ok_or_else(|| Error::Numerical("toy failure".into()))?;
            Ok(DpBound {
                epsilon,
                delta,
                order: None,
            })
        }
        fn delta(&self, epsilon: f64) -> Result<DpBound> {
            Ok(DpBound {
                epsilon,
                delta: self.epsilon.map_or(1.0, |e| e * 1e-6),
                order: None,
            })
        }
    }

    fn gaussian() -> Event {
        Event::gaussian(1.0, 2.0).unwrap()
    }

    /// The smallest bound wins; ties go to the first listed; one that fails at the query is
    /// passed over, an invalid δ is an error whoever is asked.
    #[test]
    fn the_smallest_wins_and_ties_go_to_the_first() {
        let cases = [
            (vec![toy("a", Some(1.0)), toy("b", Some(1.0))], "a"),
            (
                vec![
                    toy("a", Some(1.0)),
                    toy("b", Some(0.5)),
                    toy("c", Some(0.5)),
                ],
                "b",
            ),
            (vec![toy("a", None), toy("b", Some(2.0))], "b"),
        ];
        for (members, winner) in cases {
            let mut t = Tightest::new(members).unwrap();
            t.compose(&gaussian()).unwrap();
            let won = t.epsilon_won(1e-5).unwrap();
            assert_eq!(won.accountant, winner);
            assert_eq!(won.statement, format!("toy {winner}"));
            assert_eq!(t.delta_won(1.0).unwrap().accountant, winner);
            assert!(matches!(
                t.epsilon_won(0.0),
                Err(Error::InvalidParameter { .. })
            ));
        }
        let mut broken = Tightest::new(vec![toy("a", None)]).unwrap();
        broken.compose(&gaussian()).unwrap();
        let e = broken.epsilon(1e-5).unwrap_err().to_string();
        assert!(e.contains("a: ") && e.contains("toy failure"), "{e}");
        assert!(Tightest::new(vec![]).is_err());
    }

    /// RDP and PLD together: the smaller of their bounds, each as computed alone; an event one
    /// does not support drops it for good; one neither supports is an error that changes
    /// nothing.
    #[test]
    fn composes_into_each_supporting_accountant_and_drops_the_others() {
        let settings = Settings {
            pld_interval: 1e-3,
            ..Settings::default()
        };
        let both = || -> Vec<Box<dyn PrivacyAccountant>> {
            vec![
                Box::new(Rdp::new(settings.rdp.clone())),
                Box::new(Pld::new(settings.pld_interval).unwrap()),
            ]
        };
        let run = Event::dpsgd(&DpSgd::new(0.02, 1.0, 200).unwrap()).unwrap();
        let mut t = Tightest::new(both()).unwrap();
        t.compose(&run).unwrap();
        let alone: Vec<(String, f64)> = both()
            .into_iter()
            .map(|mut a| {
                a.compose(&run).unwrap();
                (a.name(), a.epsilon(1e-6).unwrap().epsilon)
            })
            .collect();
        let won = t.epsilon_won(1e-6).unwrap();
        let best = alone.iter().min_by(|x, y| x.1.total_cmp(&y.1)).unwrap();
        assert_eq!(
            (won.accountant.as_str(), won.bound.epsilon),
            (best.0.as_str(), best.1)
        );
        // zCDP: the PLD is dropped, RDP bounds the whole.
        t.compose(&Event::zcdp(0.01).unwrap()).unwrap();
        assert!(t.epsilon_won(1e-6).unwrap().accountant.starts_with("rdp/"));
        // (ε, δ): only the PLD could, and it is gone: an error, and RDP still answers.
        let before = t.epsilon(1e-6).unwrap();
        let e = t
            .compose(&Event::approximate_dp(0.1, 1e-9).unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("approximate-dp") && e.contains("rdp/"), "{e}");
        assert_eq!(t.epsilon(1e-6).unwrap(), before);
        // Another neighbouring relation: refused before any member sees it.
        let wor = Event::sampled_without_replacement(0.5, gaussian()).unwrap();
        let e = t.compose(&wor).unwrap_err().to_string();
        assert!(e.contains("replace-one"), "{e}");
        assert_eq!(t.epsilon(1e-6).unwrap(), before);
        assert!(t.name().starts_with("tightest(rdp/") && t.statement().contains("Rényi"));
    }

    /// The registry: unique keys, each builds, an unknown key is refused with the list.
    #[test]
    fn the_registry_builds_every_accountant_by_key() {
        let keys: Vec<&str> = crate::accounting::ACCOUNTANTS
            .iter()
            .map(|(k, _)| *k)
            .collect();
        assert_eq!(&keys[..2], &["rdp", "pld"]);
        let mut unique = keys.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), keys.len());
        for k in &keys {
            let mut a = build(k, &Settings::default()).unwrap();
            assert_eq!(a.key(), *k);
            assert!(a.epsilon(1e-5).is_err(), "{k}: nothing composed");
            // Every accountant takes a Gaussian or a Laplace mechanism.
            let event = match a.supports(&gaussian()) {
                Ok(()) => gaussian(),
                Err(_) => Event::laplace(1.0, 2.0).unwrap(),
            };
            a.compose(&event).unwrap();
            assert!(a.epsilon(1e-5).unwrap().epsilon.is_finite(), "{k}");
        }
        let e = build("moments", &Settings::default())
            .err()
            .expect("unknown")
            .to_string();
        assert!(e.contains("rdp, pld"), "{e}");
    }
}
