//! The exact μ-GDP accountant ([`Gdp`]) of compositions of unsubsampled Gaussians (full-batch
//! DP-GD, score releases), written through [`PrivacyAccountant`] alone.
//!
//! Dong, Roth and Su (2022): the Gaussian mechanism of sensitivity Δ and noise σ is exactly
//! (Δ/σ)-GDP (Thm. 2.7), and composing μᵢ-GDP mechanisms is exactly √(Σ μᵢ²)-GDP (Cor. 3.3),
//! so for these compositions the curve δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Cor. 2.13) is
//! the tightest there is. δ(ε) is [`gdp_delta`] (rounded up), ε(δ) [`gdp_epsilon`] (bisection,
//! rounded up). Anything subsampled (q < 1), Laplace, randomized response, zCDP, pure and
//! (ε, δ) guarantees, RDP curves and repeat-and-select are not Gaussian: not supported.

use super::accountant::{Ledger, PrivacyAccountant, Registered, Settings, Unsupported};
use super::convert::{gdp_delta, gdp_epsilon, DpBound};
use super::event::{Event, Kind};
use super::mechanisms::Gaussian;
use crate::error::{Result, fmt_num};
use crate::numeric::{add_up, count_up, mul_up};

/// Σ μᵢ² of what is composed, rounded up; μ = its square root, rounded up.
#[derive(Clone, Debug, Default)]
pub struct Gdp {
    mu_squared: f64,
    ledger: Ledger,
}

impl Gdp {
    pub fn new() -> Self {
        Gdp::default()
    }

    /// μ of the composition so far, rounded up.
    pub fn mu(&self) -> f64 {
        let r = self.mu_squared.sqrt();
        if r.mul_add(r, -self.mu_squared) < 0.0 {
            r.next_up()
        } else {
            r
        }
    }

    /// Σ μᵢ² of `event`, each run `times` times more, rounded up.
    fn mu_squared_of(event: &Event, times: f64) -> Result<f64> {
        Ok(match event.kind() {
            Kind::Gaussian {
                sensitivity,
                noise_sd,
            } => {
                let mu = Gaussian::new(*sensitivity, *noise_sd)?.mu();
                mul_up(times, mul_up(mu, mu))
            }
            Kind::GaussianDp { mu } => mul_up(times, mul_up(*mu, *mu)),
            // A full batch (q = 1) is the Gaussian itself.
            Kind::PoissonSampled { event, .. } | Kind::SampledWithoutReplacement { event, .. } => {
                Self::mu_squared_of(event, times)?
            }
            Kind::SelfComposed { count, event } => {
                Self::mu_squared_of(event, mul_up(times, count_up(*count)))?
            }
            Kind::Composed { events } => {
                let mut total = 0.0;
                for e in events {
                    total = add_up(total, Self::mu_squared_of(e, times)?);
                }
                total
            }
            _ => {
                let why =
                    PrivacyAccountant::supports(&Gdp::new(), event).expect_err("not Gaussian");
                return Err(crate::error::Error::Infeasible(why.0));
            }
        })
    }
}

impl PrivacyAccountant for Gdp {
    fn key(&self) -> &'static str {
        <Self as Registered>::KEY
    }

    fn name(&self) -> String {
        "gdp/exact".into()
    }

    fn statement(&self) -> String {
        format!(
            "exact μ-GDP (Dong–Roth–Su 2022: the Gaussian is (Δ/σ)-GDP, Thm. 2.7; compositions \
             compose as √Σμᵢ², Cor. 3.3; δ(ε) by Cor. 2.13), μ = {}",
            fmt_num(self.mu())
        )
    }

    fn supports(&self, event: &Event) -> std::result::Result<(), Unsupported> {
        match event.kind() {
            Kind::Gaussian { .. } | Kind::GaussianDp { .. } => Ok(()),
            Kind::PoissonSampled {
                sampling_rate,
                event,
            }
            | Kind::SampledWithoutReplacement {
                sampling_rate,
                event,
            } => {
                if *sampling_rate < 1.0 {
                    return Err(Unsupported(
                        "a subsampled mechanism is not exactly GDP (only full batches are)".into(),
                    ));
                }
                self.supports(event)
            }
            Kind::SelfComposed { event, .. } => self.supports(event),
            Kind::Composed { events } => events.iter().try_for_each(|e| self.supports(e)),
            _ => Err(Unsupported(format!(
                "a {} event is not a Gaussian mechanism",
                event.kind_name()
            ))),
        }
    }

    fn compose(&mut self, event: &Event) -> Result<()> {
        self.ledger.check(self, event)?;
        self.mu_squared = add_up(self.mu_squared, Self::mu_squared_of(event, 1.0)?);
        self.ledger.record(event);
        Ok(())
    }

    fn epsilon(&self, delta: f64) -> Result<DpBound> {
        self.ledger.require_composed()?;
        gdp_epsilon(self.mu(), delta)
    }

    fn delta(&self, epsilon: f64) -> Result<DpBound> {
        self.ledger.require_composed()?;
        Ok(DpBound {
            epsilon,
            delta: gdp_delta(self.mu(), epsilon)?,
            order: None,
        })
    }
}

impl Registered for Gdp {
    const KEY: &'static str = "gdp";
    fn build(_: &Settings) -> Result<Self> {
        Ok(Gdp::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounting::accountant::Tightest;
    use crate::accounting::event::CountLaw;
    use crate::accounting::pld_events::Pld;
    use crate::accounting::rdp_events::Rdp;
    use crate::accounting::Accountant;

    /// Dong–Roth–Su's closed form evaluated directly, Φ by libm's erfc (a reference apart from
    /// `convert`'s log-space evaluation).
    fn gdp_delta_naive(mu: f64, epsilon: f64) -> f64 {
        let phi = |x: f64| 0.5 * libm::erfc(-x / std::f64::consts::SQRT_2);
        phi(-epsilon / mu + mu / 2.0) - libm::exp(epsilon) * phi(-epsilon / mu - mu / 2.0)
    }

    /// A composition's parts: (Δ, σ, count).
    type Parts = Vec<(f64, f64, u64)>;

    /// Full-batch Gaussian compositions, as parts and as events.
    fn compositions() -> Vec<(Parts, Event)> {
        let parts: Vec<Parts> = vec![
            vec![(1.0, 1.0, 1)],
            vec![(1.0, 10.0, 100)],
            vec![(0.5, 1.0, 1), (1.0, 3.0, 10)],
            vec![(2.0, 7.0, 3), (1.0 / 300.0, 2.0 / 300.0, 2)],
        ];
        parts
            .into_iter()
            .map(|p| {
                let events = p
                    .iter()
                    .map(|&(d, s, k)| {
                        Event::self_composed(k, Event::gaussian(d, s).unwrap()).unwrap()
                    })
                    .collect();
                (p, Event::composed(events).unwrap())
            })
            .collect()
    }

    fn gdp_of(event: &Event) -> Gdp {
        let mut g = Gdp::new();
        g.compose(event).unwrap();
        g
    }

    /// μ = √Σ k(Δ/σ)², δ(ε) the closed form and ε(δ) its inverse, each to 1e-12, never below.
    #[test]
    fn matches_the_closed_form() {
        for (parts, event) in compositions() {
            let mu: f64 = parts
                .iter()
                .map(|&(d, s, k)| k as f64 * (d / s) * (d / s))
                .sum::<f64>()
                .sqrt();
            let g = gdp_of(&event);
            assert!(
                g.mu() >= mu && g.mu() - mu <= 1e-14 * mu,
                "{} vs {mu}",
                g.mu()
            );
            for epsilon in [0.1, 0.5, 1.0, 2.0] {
                let exact = gdp_delta_naive(mu, epsilon);
                let got = g.delta(epsilon).unwrap().delta;
                assert!(
                    got >= exact * (1.0 - 1e-12) && (got - exact).abs() <= 1e-12 * exact,
                    "μ={mu} ε={epsilon}: {got} vs {exact}"
                );
            }
            for delta in [1e-3, 1e-5, 1e-8] {
                let eps = g.epsilon(delta).unwrap().epsilon;
                // The closed form's own inverse, by bisection on it alone.
                let (mut lo, mut hi) = (0.0_f64, 200.0_f64);
                for _ in 0..200 {
                    let mid = 0.5 * (lo + hi);
                    if gdp_delta_naive(mu, mid) > delta {
                        lo = mid
                    } else {
                        hi = mid
                    }
                }
                assert!(
                    eps >= hi - 1e-12 && eps - hi <= 1e-12 * hi.max(1.0),
                    "μ={mu} δ={delta}: {eps} vs {hi}"
                );
            }
        }
    }

    /// The PLD accountant's connect-the-dots PLD is pessimistic: GDP (exact) lies below it,
    /// within its discretisation error (a few grid intervals); and below RDP.
    #[test]
    fn lies_below_pld_within_its_discretisation_and_below_rdp() {
        let interval = 1e-4;
        for (_, event) in compositions() {
            let g = gdp_of(&event);
            let mut pld = Pld::new(interval).unwrap();
            pld.compose(&event).unwrap();
            let mut rdp = Rdp::new(Accountant::default());
            rdp.compose(&event).unwrap();
            for delta in [1e-5, 1e-8] {
                let (a, b) = (
                    g.epsilon(delta).unwrap().epsilon,
                    pld.epsilon(delta).unwrap().epsilon,
                );
                assert!(
                    a <= b && b - a <= 20.0 * interval,
                    "δ={delta}: gdp {a}, pld {b}"
                );
                assert!(a <= rdp.epsilon(delta).unwrap().epsilon);
            }
        }
    }

    /// Full batches (q = 1) are Gaussians; subsampling and every non-Gaussian kind are not
    /// supported, and the registered accountants name GDP where it is the tightest.
    #[test]
    fn supports_only_unsubsampled_gaussians() {
        let g = Gdp::new();
        let step = Event::gaussian(1.0, 2.0).unwrap();
        let full =
            Event::self_composed(10, Event::poisson_sampled(1.0, step.clone()).unwrap()).unwrap();
        assert!(g.supports(&full).is_ok());
        let full_gd = gdp_of(&full);
        assert_eq!(
            full_gd.mu(),
            gdp_of(&Event::self_composed(10, step.clone()).unwrap()).mu()
        );
        for event in [
            Event::poisson_sampled(0.5, step.clone()).unwrap(),
            Event::sampled_without_replacement(0.99, step.clone()).unwrap(),
            Event::laplace(1.0, 1.0).unwrap(),
            Event::zcdp(0.1).unwrap(),
            Event::pure_dp(1.0).unwrap(),
            Event::approximate_dp(1.0, 1e-6).unwrap(),
            Event::randomized_response(0.5, 2).unwrap(),
            Event::renyi_curve(vec![2.0], vec![0.1]).unwrap(),
            Event::repeat_and_select(CountLaw::Fixed { count: 2, truncate: None }, step.clone()).unwrap(),
            Event::composed(vec![step.clone(), Event::laplace(1.0, 1.0).unwrap()]).unwrap(),
        ] {
            assert!(g.supports(&event).is_err(), "{event:?}");
            assert!(Gdp::new().compose(&event).is_err());
        }
        let mut all = Tightest::registered(&Settings::default()).unwrap();
        all.compose(&full).unwrap();
        assert_eq!(all.epsilon_won(1e-6).unwrap().accountant, "gdp/exact");
    }
}
