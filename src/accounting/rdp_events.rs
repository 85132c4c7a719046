//! The RDP accountant of events ([`Rdp`]): each event's Rényi curve built exactly as the
//! mechanism's own code builds it (`Gaussian::rdp`, `DpSgd::rdp`, `selection::repeat_select`,
//! …), curves composed by [`RdpCurve::compose`], and (ε, δ) by [`Accountant`]'s conversion: the
//! same ε to the bit as those code paths give.

use super::accountant::{finite, Ledger, PrivacyAccountant, Registered, Settings, Unsupported};
use super::convert::{Accountant, DpBound};
use super::event::{Event, Kind};
use super::mechanisms::{DpSgd, Gaussian, Laplace, LotSampling};
use super::rdp::{ClosedForm, RdpCurve, RdpFunction};
use std::sync::Arc;
use crate::error::Result;
use crate::accounting::selection::bounds::{bound_name, conditional_sampling, repeat_select, Base};

/// Rényi-DP accounting under [`Accountant`]'s orders and conversion.
#[derive(Clone, Debug)]
pub struct Rdp {
    settings: Accountant,
    curve: Option<RdpCurve>,
    ledger: Ledger,
    /// The theorems of the repeat-and-select events composed, for the statement.
    selections: Vec<String>,
}

impl Rdp {
    pub fn new(settings: Accountant) -> Self {
        Rdp {
            settings,
            curve: None,
            ledger: Ledger::default(),
            selections: Vec::new(),
        }
    }

    /// The composition's curve so far.
    pub fn curve(&self) -> Option<&RdpCurve> {
        self.curve.as_ref()
    }

    /// The noise multiplier of a sampled Gaussian of sensitivity 1 (its noise sd), or why the
    /// inner event is not one.
    fn sampled_gaussian(inner: &Event) -> std::result::Result<f64, Unsupported> {
        match inner.kind() {
            Kind::Gaussian {
                sensitivity,
                noise_sd,
            } if *sensitivity == 1.0 => Ok(*noise_sd),
            Kind::Gaussian { .. } => Err(Unsupported(
                "a sampled Gaussian is accounted with sensitivity 1 (state its noise as a \
                 multiplier of the sensitivity)"
                    .into(),
            )),
            _ => Err(Unsupported(format!(
                "a sampled {} event has no Rényi curve here (only the sampled Gaussian)",
                inner.kind_name()
            ))),
        }
    }

    /// The event's curve, as the mechanism's code builds it (an error where it has none:
    /// [`PrivacyAccountant::supports`] says why).
    pub fn curve_of(&self, event: &Event) -> Result<RdpCurve> {
        Ok(match event.kind() {
            Kind::Gaussian {
                sensitivity,
                noise_sd,
            } => Gaussian::new(*sensitivity, *noise_sd)?.rdp(),
            Kind::Laplace { sensitivity, scale } => Laplace::new(*sensitivity, *scale)?.rdp(),
            Kind::Zcdp { rho, xi } if *xi == 0.0 => RdpCurve::zcdp(*rho)?,
            Kind::Zcdp { rho, xi } => custom(ZcdpXi { rho: *rho, xi: *xi }),
            Kind::RandomizedResponse { noise, buckets } => custom(KaryRr {
                p: *noise,
                k: *buckets,
            }),
            Kind::PureDp { epsilon } => RdpCurve::pure_dp(*epsilon)?,
            // ε(λ) = λμ²/2 (ρ = μ²/2 zCDP), formed as DP-GIBO's results were.
            Kind::GaussianDp { mu } => RdpCurve::zcdp(mu * mu / 2.0)?,
            Kind::RenyiCurve { orders, epsilons } => {
                RdpCurve::on_grid(orders.clone(), epsilons.clone())?
            }
            // One step of DP-SGD, whose T-step curve is this one self-composed T times.
            Kind::PoissonSampled {
                sampling_rate,
                event,
            } => DpSgd::with_sampling(
                LotSampling::Poisson,
                *sampling_rate,
                Self::sampled_gaussian(event).map_err(unsupported)?,
                1,
            )?
            .rdp(),
            Kind::SampledWithoutReplacement {
                sampling_rate,
                event,
            } => DpSgd::with_sampling(
                LotSampling::WithoutReplacement,
                *sampling_rate,
                Self::sampled_gaussian(event).map_err(unsupported)?,
                1,
            )?
            .rdp(),
            Kind::SelfComposed { count, event } => self.curve_of(event)?.self_compose(*count),
            Kind::Composed { events } => {
                let mut parts = events.iter();
                let first = self.curve_of(parts.next().expect("at least one event"))?;
                parts.try_fold(first, |total, e| total.compose(&self.curve_of(e)?))?
            }
            Kind::RepeatAndSelect { law, event } => repeat_select(
                &Base::symmetric(self.curve_of(event)?),
                &law.run_count()?,
                &self.settings.orders,
            )?,
            // Mixing the run with a fixed ⊥ never increases its divergence, so the run's curve
            // bounds the halting run too.
            Kind::RunUntilThreshold {
                halt_probability,
                event,
            } => conditional_sampling(
                &Base::symmetric(self.curve_of(event)?),
                *halt_probability,
                &self.settings.orders,
            )?,
            Kind::ApproximateDp { .. } => {
                return Err(unsupported(
                    self.supports(event).expect_err("not supported"),
                ))
            }
        })
    }
}

fn custom(f: impl RdpFunction + 'static) -> RdpCurve {
    RdpCurve::closed(ClosedForm::Custom(Arc::new(f)))
}

/// k-ary randomized response with noise p (dp_accounting's `RandomizedResponseDpEvent`): the
/// exact Rényi divergence of its two output laws, (1 − p + p/k, p/k, …) against the same with
/// the first two swapped.
#[derive(Debug)]
struct KaryRr {
    p: f64,
    k: u64,
}

impl RdpFunction for KaryRr {
    fn eval(&self, order: f64) -> f64 {
        let (p, k) = (self.p, self.k as f64);
        if p == 1.0 {
            return 0.0;
        }
        let l = libm::log(k / p - k + 1.0); // ln((1 − p + p/k)/(p/k))
        if order.is_infinite() {
            return l;
        }
        // ln(p/k·e^{αl} + (1 − p + p/k)·e^{−αl} + (1 − 2/k)·p), stably.
        let terms = [
            (libm::log(p / k) + order * l),
            (libm::log(1.0 - p + p / k) - order * l),
            if self.k > 2 {
                libm::log((1.0 - 2.0 / k) * p)
            } else {
                f64::NEG_INFINITY
            },
        ];
        let m = terms.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = terms.iter().map(|t| libm::exp(t - m)).sum();
        ((m + libm::log(s)) / (order - 1.0)).max(0.0)
    }
    fn is_cheap(&self) -> bool {
        true
    }
    fn is_monotone(&self) -> bool {
        true // a Rényi divergence of two fixed distributions is non-decreasing in the order
    }
}

/// (ξ, ρ)-zCDP: ε(λ) = ξ + ρλ.
#[derive(Debug)]
struct ZcdpXi {
    rho: f64,
    xi: f64,
}

impl RdpFunction for ZcdpXi {
    fn eval(&self, order: f64) -> f64 {
        self.xi + self.rho * order
    }
    fn is_cheap(&self) -> bool {
        true
    }
    fn is_monotone(&self) -> bool {
        true
    }
}

fn unsupported(u: Unsupported) -> crate::error::Error {
    crate::error::Error::Infeasible(u.0)
}

/// The Rényi curve of `event` under the orders of `settings` (repeat-and-select's curve is
/// computed at those orders; every other kind's is exact).
pub fn curve(event: &Event, settings: &Accountant) -> Result<RdpCurve> {
    Rdp::new(settings.clone()).curve_of(event)
}

impl PrivacyAccountant for Rdp {
    fn key(&self) -> &'static str {
        <Self as Registered>::KEY
    }

    fn name(&self) -> String {
        self.settings.name()
    }

    fn statement(&self) -> String {
        let conversion = match self.settings.conversion {
            super::Conversion::Cks => "Canonne–Kamath–Steinke 2020 (with the KL route)",
            super::Conversion::Mironov => "Mironov 2017, Prop. 3",
        };
        let mut s = format!(
            "Rényi DP ({}): composition adds the curves; (ε, δ) by {conversion}, minimised \
             over the orders",
            self.settings.name()
        );
        for theorem in &self.selections {
            s.push_str("; repeat-and-select by ");
            s.push_str(theorem);
        }
        s
    }

    fn supports(&self, event: &Event) -> std::result::Result<(), Unsupported> {
        match event.kind() {
            Kind::Gaussian { .. }
            | Kind::Laplace { .. }
            | Kind::RandomizedResponse { .. }
            | Kind::Zcdp { .. }
            | Kind::PureDp { .. }
            | Kind::GaussianDp { .. }
            | Kind::RenyiCurve { .. } => Ok(()),
            Kind::ApproximateDp { .. } => Err(Unsupported(
                "an (ε, δ) guarantee with δ > 0 has no Rényi curve".into(),
            )),
            Kind::PoissonSampled { event, .. } | Kind::SampledWithoutReplacement { event, .. } => {
                Self::sampled_gaussian(event).map(|_| ())
            }
            Kind::SelfComposed { event, .. }
            | Kind::RepeatAndSelect { event, .. }
            | Kind::RunUntilThreshold { event, .. } => self.supports(event),
            Kind::Composed { events } => events.iter().try_for_each(|e| self.supports(e)),
        }
    }

    fn compose(&mut self, event: &Event) -> Result<()> {
        self.ledger.check(self, event)?;
        let curve = self.curve_of(event)?;
        self.curve = Some(match &self.curve {
            Some(total) => total.compose(&curve)?,
            None => curve,
        });
        collect_selections(event, &mut self.selections);
        self.ledger.record(event);
        Ok(())
    }

    fn epsilon(&self, delta: f64) -> Result<DpBound> {
        self.ledger.require_composed()?;
        let curve = self.curve.as_ref().expect("composed");
        finite(self.settings.epsilon(curve, delta)?, &self.name())
    }

    fn delta(&self, epsilon: f64) -> Result<DpBound> {
        self.ledger.require_composed()?;
        let curve = self.curve.as_ref().expect("composed");
        self.settings.delta(curve, epsilon)
    }
}

/// The theorem of each repeat-and-select in `event` (once each).
fn collect_selections(event: &Event, out: &mut Vec<String>) {
    match event.kind() {
        Kind::RepeatAndSelect { law, event } => {
            if let Ok(law) = law.run_count() {
                let name = bound_name(&law);
                if !out.contains(&name) {
                    out.push(name);
                }
            }
            collect_selections(event, out);
        }
        Kind::RunUntilThreshold { event, .. } => {
            let name = "Papernot–Steinke Corollary 16(2)".to_string();
            if !out.contains(&name) {
                out.push(name);
            }
            collect_selections(event, out);
        }
        Kind::PoissonSampled { event, .. }
        | Kind::SampledWithoutReplacement { event, .. }
        | Kind::SelfComposed { event, .. } => collect_selections(event, out),
        Kind::Composed { events } => events.iter().for_each(|e| collect_selections(e, out)),
        _ => {}
    }
}

impl Registered for Rdp {
    const KEY: &'static str = "rdp";
    fn build(settings: &Settings) -> Result<Self> {
        Ok(Rdp::new(settings.rdp.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounting::event::CountLaw;
    use crate::accounting::{Conversion, Orders};
    use crate::accounting::selection::CountFamily;

    fn settings() -> Vec<Accountant> {
        vec![
            Accountant::default(),
            Accountant::new(Orders::DpAccounting, Conversion::Cks),
            Accountant::new(Orders::List(vec![1.5, 2.0, 8.0, 32.0]), Conversion::Mironov),
        ]
    }

    /// ε and δ of `event` by [`Rdp`] and of `curve` (the current code path) by the same
    /// settings: equal to the bit, at several δ and ε.
    fn same_bits(event: &Event, curve: &RdpCurve, what: &str) {
        for acc in settings() {
            let mut rdp = Rdp::new(acc.clone());
            rdp.compose(event).unwrap();
            for delta in [1e-5, 1e-9] {
                let (a, b) = (
                    rdp.epsilon(delta).unwrap(),
                    acc.epsilon(curve, delta).unwrap(),
                );
                assert_eq!(
                    a.epsilon.to_bits(),
                    b.epsilon.to_bits(),
                    "{what} {acc:?} δ={delta}"
                );
                assert_eq!(a.order, b.order, "{what}");
            }
            for epsilon in [0.5, 3.0] {
                let (a, b) = (
                    rdp.delta(epsilon).unwrap(),
                    acc.delta(curve, epsilon).unwrap(),
                );
                assert_eq!(
                    a.delta.to_bits(),
                    b.delta.to_bits(),
                    "{what} {acc:?} ε={epsilon}"
                );
            }
        }
    }

    /// Every kind the RDP accountant supports, against the curve today's code builds for it
    /// (mechanisms, DP-SGD runs of both lot samplings, a workload's run of DP-SGD plus its
    /// score release, k runs of it, repeat-and-select of each law).
    #[test]
    fn every_supported_kind_matches_the_current_code_path_to_the_bit() {
        let release = Gaussian::new(1.0 / 300.0, 2.0 / 300.0).unwrap();
        let poisson = DpSgd::new(0.01, 1.1, 500).unwrap();
        let wor = DpSgd::without_replacement(400, 50, 1.5, 2).unwrap();
        let full = DpSgd::new(1.0, 3.0, 20).unwrap();
        let run = Event::composed(vec![
            Event::dpsgd(&poisson).unwrap(),
            Event::of_gaussian(&release),
        ])
        .unwrap();
        let run_curve = poisson.rdp().compose(&release.rdp()).unwrap();
        let grid = (vec![2.0, 4.0, 16.0], vec![0.1, 0.3, 2.0]);
        let mut cases: Vec<(Event, RdpCurve, String)> = vec![
            (
                Event::gaussian(0.5, 1.3).unwrap(),
                Gaussian::new(0.5, 1.3).unwrap().rdp(),
                "gaussian".into(),
            ),
            (
                Event::laplace(1.0, 2.5).unwrap(),
                Laplace::new(1.0, 2.5).unwrap().rdp(),
                "laplace".into(),
            ),
            (
                Event::zcdp(0.1).unwrap(),
                RdpCurve::zcdp(0.1).unwrap(),
                "zcdp".into(),
            ),
            (
                Event::pure_dp(0.7).unwrap(),
                RdpCurve::pure_dp(0.7).unwrap(),
                "pure".into(),
            ),
            (
                Event::renyi_curve(grid.0.clone(), grid.1.clone()).unwrap(),
                RdpCurve::on_grid(grid.0, grid.1).unwrap(),
                "grid".into(),
            ),
            (
                Event::dpsgd(&poisson).unwrap(),
                poisson.rdp(),
                "poisson dp-sgd".into(),
            ),
            (Event::dpsgd(&wor).unwrap(), wor.rdp(), "wor dp-sgd".into()),
            (
                Event::dpsgd(&full).unwrap(),
                full.rdp(),
                "full-batch dp-sgd".into(),
            ),
            (run.clone(), run_curve.clone(), "dp-sgd + release".into()),
            (
                Event::self_composed(7, run.clone()).unwrap(),
                run_curve.self_compose(7),
                "7 runs".into(),
            ),
        ];
        let laws = [
            CountLaw::TruncatedNegativeBinomial {
                eta: 0.0,
                mean: 10.0,
                truncate: None,
            },
            CountLaw::TruncatedNegativeBinomial {
                eta: 1.0,
                mean: 5.0,
                truncate: Some(50),
            },
            CountLaw::TruncatedNegativeBinomial {
                eta: -0.5,
                mean: 20.0,
                truncate: None,
            },
            CountLaw::Poisson {
                mean: 8.0,
                truncate: None,
            },
            CountLaw::Fixed { count: 6, truncate: None },
        ];
        let base = Event::gaussian(1.0, 4.0).unwrap();
        let base_curve = Gaussian::new(1.0, 4.0).unwrap().rdp();
        let families = [
            (CountFamily::Tnb { eta: 0.0 }, 10.0, None),
            (CountFamily::Tnb { eta: 1.0 }, 5.0, Some(50)),
            (CountFamily::Tnb { eta: -0.5 }, 20.0, None),
            (CountFamily::Poisson, 8.0, None),
            (CountFamily::Fixed, 6.0, None),
        ];
        for (law, (family, mean, truncate)) in laws.into_iter().zip(families) {
            let want = family.with_mean(mean, truncate).unwrap();
            assert_eq!(law.run_count().unwrap(), want);
            // repeat_select depends on the order policy: the expected curve per settings.
            for acc in settings() {
                let curve = repeat_select(&Base::symmetric(base_curve.clone()), &want, &acc.orders)
                    .unwrap();
                let event = Event::repeat_and_select(law.clone(), base.clone()).unwrap();
                let mut rdp = Rdp::new(acc.clone());
                rdp.compose(&event).unwrap();
                let (a, b) = (
                    rdp.epsilon(1e-6).unwrap(),
                    acc.epsilon(&curve, 1e-6).unwrap(),
                );
                assert_eq!(a.epsilon.to_bits(), b.epsilon.to_bits(), "{law:?} {acc:?}");
                assert!(rdp.statement().contains(&bound_name(&want)));
            }
        }
        // Composing two events one after the other is composing them in one event.
        cases.push((
            Event::composed(vec![
                Event::zcdp(0.05).unwrap(),
                Event::pure_dp(0.2).unwrap(),
            ])
            .unwrap(),
            RdpCurve::zcdp(0.05)
                .unwrap()
                .compose(&RdpCurve::pure_dp(0.2).unwrap())
                .unwrap(),
            "composed".into(),
        ));
        for (event, curve, what) in &cases {
            same_bits(event, curve, what);
        }
        let mut twice = Rdp::new(Accountant::default());
        twice.compose(&Event::zcdp(0.05).unwrap()).unwrap();
        twice.compose(&Event::pure_dp(0.2).unwrap()).unwrap();
        let (a, b) = (&cases.last().unwrap().1, twice.curve().unwrap());
        assert_eq!(
            Accountant::default().epsilon(a, 1e-6).unwrap(),
            twice.epsilon(1e-6).unwrap(),
            "{b:?}"
        );
    }

    /// k-ary randomized response at k = 2 is binary randomized response with e^ε = 2/p − 1
    /// (the library's closed form, an independent formula); its curve rises to the pure ε; a
    /// (ξ, ρ)-zCDP event is ξ + ρλ at every order.
    #[test]
    fn randomized_response_and_zcdp_with_xi_have_their_curves() {
        for p in [0.1, 0.5, 0.9] {
            let event = Event::randomized_response(p, 2).unwrap();
            let got = curve(&event, &Accountant::default()).unwrap();
            let binary = RdpCurve::closed(ClosedForm::RandomizedResponse {
                epsilon: libm::log(2.0 / p - 1.0),
            });
            for order in [1.5, 2.0, 8.0, 64.0] {
                let (a, b) = (got.eval(order).unwrap(), binary.eval(order).unwrap());
                assert!((a - b).abs() <= 1e-12 * b.max(1e-300), "p = {p}, λ = {order}: {a} vs {b}");
            }
        }
        let k5 = curve(&Event::randomized_response(0.3, 5).unwrap(), &Accountant::default()).unwrap();
        let pure = Event::randomized_response(0.3, 5).unwrap().pure_epsilon().unwrap();
        let high = k5.eval(1e6).unwrap();
        assert!(high <= pure && high > 0.99 * pure, "{high} vs {pure}");
        let xi = curve(&Event::zcdp_xi(0.1, 0.05).unwrap(), &Accountant::default()).unwrap();
        assert_eq!(xi.eval(3.0).unwrap(), 0.05 + 0.1 * 3.0);
    }

    /// Not supported: (ε, δ) with δ > 0, a sampled Laplace, a sampled
    /// Gaussian not stated with sensitivity 1, and anything holding one; compose refuses them
    /// by name, and nothing composed is an error, not a bound.
    #[test]
    fn unsupported_events_are_refused_with_a_reason() {
        let rdp = Rdp::new(Accountant::default());
        let lap = Event::laplace(1.0, 1.0).unwrap();
        for event in [
            Event::approximate_dp(1.0, 1e-6).unwrap(),
            Event::poisson_sampled(0.1, lap.clone()).unwrap(),
            Event::poisson_sampled(0.1, Event::gaussian(2.0, 2.0).unwrap()).unwrap(),
            Event::composed(vec![lap, Event::approximate_dp(1.0, 1e-6).unwrap()]).unwrap(),
        ] {
            let why = rdp.supports(&event).unwrap_err();
            let mut fresh = rdp.clone();
            let e = fresh.compose(&event).unwrap_err().to_string();
            assert!(e.contains(&why.0) && e.contains("rdp/"), "{e}");
        }
        assert!(rdp.epsilon(1e-5).is_err() && rdp.delta(1.0).is_err());
        // An infinite RDP everywhere proves no finite ε: an error, not +∞.
        let mut inf = rdp.clone();
        inf.compose(&Event::renyi_curve(vec![2.0], vec![f64::INFINITY]).unwrap())
            .unwrap();
        assert!(inf.epsilon(1e-5).is_err());
        // Relations composed one event at a time are checked as in one event.
        let mut mixed = rdp.clone();
        let step = Event::gaussian(1.0, 1.0).unwrap();
        mixed
            .compose(&Event::poisson_sampled(0.1, step.clone()).unwrap())
            .unwrap();
        let e = mixed
            .compose(&Event::sampled_without_replacement(0.1, step).unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("replace-one"), "{e}");
    }
}
