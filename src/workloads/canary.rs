//! The canary workload of the privacy audit ([`crate::audit`]): two neighbouring datasets built
//! to be as far apart as every capability's declared sensitivity allows, so that a tuner run on
//! each shows how distinguishable its output is.
//!
//! - Private training: one run releases its score plus N(0, z²) and is declared the Gaussian
//!   mechanism of sensitivity 1, (1/(2z²))-zCDP. The score is 0 at every candidate on the
//!   `Without` side and 1 on the `With` side: the canary record moves every run's score by the
//!   full sensitivity, in the same direction.
//! - Per-shard utilities (propose-test): all 0, except shard 0 on the `With` side, where the
//!   canary lives: 1 for every candidate (one shard moved by 1, the declared adjacency).
//! - Per-user losses (DP-GIBO, DP-GD): `users` users with loss 0 everywhere but user 0, whose loss is
//!   `slope`·(1 − θ₁) on the `Without` side and `slope`·θ₁ on the `With` side (native box
//!   [0, 1]^d): a steep gradient that any clip bound caps, pointing one way on one side and the
//!   opposite way on the other (replacing one user moves a clipped sum by twice the clip).
//!
//! The space is the unit box (public); nothing here depends on data beyond the side.

use super::{Hyper, Oracle, PartitionedUtility, PerUserLosses, PrivateTraining, Space, Workload};
use crate::accounting::Event;
use crate::error::{Error, Range, Result};
use crate::rng::normal;
use ndarray::Array2;
use rand::RngCore;

/// Which of the two neighbouring datasets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Without the canary record.
    Without,
    /// With it.
    With,
}

/// One side of the canary pair.
pub struct Canary {
    side: Side,
    noise: f64,
    /// The Gaussian mechanism of score sensitivity 1 and noise sd z.
    run: Event,
    space: Space,
    domain: Vec<(f64, f64)>,
    users: usize,
    slope: f64,
}

impl Canary {
    /// The canary pair's `side` in dimension `dim`: runs with noise multiplier `noise`,
    /// `users` users whose canary has loss slope `slope`.
    pub fn new(side: Side, dim: usize, noise: f64, users: usize, slope: f64) -> Result<Self> {
        if dim == 0 {
            return Err(Error::invalid("dim", dim, "an integer >= 1"));
        }
        if users < 2 {
            return Err(Error::invalid("users", users, "an integer >= 2"));
        }
        let noise = Range::Positive.check("noise", noise)?;
        Ok(Canary {
            side,
            noise,
            run: Event::gaussian(1.0, noise)?,
            space: Space::UnitBox { dim },
            domain: vec![(0.0, 1.0); dim],
            users,
            slope: Range::Positive.check("slope", slope)?,
        })
    }

    /// 1 on the `With` side, 0 on the other: the canary's contribution.
    fn canary(&self) -> f64 {
        match self.side {
            Side::Without => 0.0,
            Side::With => 1.0,
        }
    }
}

impl Oracle for Canary {
    /// The noise-free score on this side's data (every candidate alike): reporting only, as
    /// every oracle; a tuner that released it would leak the canary outright.
    fn utility(&self, _h: &Hyper) -> f64 {
        self.canary()
    }
    fn best_utility(&self) -> f64 {
        self.canary()
    }
}

impl PrivateTraining for Canary {
    fn run_event(&self) -> &Event {
        &self.run
    }
    fn train(&self, _h: &Hyper, rng: &mut dyn RngCore) -> f64 {
        self.canary() + self.noise * normal(rng)
    }
}

impl PartitionedUtility for Canary {
    fn shard_utilities(
        &self,
        candidates: &[Hyper],
        k: usize,
        _rng: &mut dyn RngCore,
    ) -> Result<Vec<Vec<f64>>> {
        Ok(candidates
            .iter()
            .map(|_| {
                (0..k)
                    .map(|i| if i == 0 { self.canary() } else { 0.0 })
                    .collect()
            })
            .collect())
    }
    fn private_validation_records(&self) -> Option<usize> {
        None
    }
}

impl PerUserLosses for Canary {
    fn n_users(&self) -> usize {
        self.users
    }
    fn domain(&self) -> &[(f64, f64)] {
        &self.domain
    }
    fn evaluation_sd(&self) -> f64 {
        0.0
    }
    fn user_losses(&self, points: &[Hyper], _rng: &mut dyn RngCore) -> Result<Array2<f64>> {
        let mut out = Array2::zeros((self.users, points.len()));
        for (j, p) in points.iter().enumerate() {
            out[[0, j]] = self.slope
                * match self.side {
                    Side::Without => 1.0 - p[0],
                    Side::With => p[0],
                };
        }
        Ok(out)
    }
    /// The exact gradients (DP-GD): user 0's is ∓`slope` along θ₁, every other user's 0.
    fn user_gradients(&self, _point: &Hyper) -> Option<Array2<f64>> {
        let mut g = Array2::zeros((self.domain.len(), self.users));
        g[[0, 0]] = match self.side {
            Side::Without => -self.slope,
            Side::With => self.slope,
        };
        Some(g)
    }
}

impl Workload for Canary {
    fn name(&self) -> String {
        format!("canary ({:?})", self.side)
    }
    fn space(&self) -> &Space {
        &self.space
    }
    fn oracle(&self) -> &dyn Oracle {
        self
    }
    fn private_training(&self) -> Option<&dyn PrivateTraining> {
        Some(self)
    }
    fn partitioned_utility(&self) -> Option<&dyn PartitionedUtility> {
        Some(self)
    }
    fn per_user_losses(&self) -> Option<&dyn PerUserLosses> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounting::RdpCurve;
    use crate::rng::stream;

    #[test]
    fn the_sides_differ_by_the_declared_sensitivity_and_nothing_more() {
        let (a, b) = (
            Canary::new(Side::Without, 2, 0.5, 4, 50.0).unwrap(),
            Canary::new(Side::With, 2, 0.5, 4, 50.0).unwrap(),
        );
        // Same stream: the scores differ by exactly 1 (the sensitivity).
        let h = vec![0.3, 0.7];
        let d = b.train(&h, &mut stream(1, &[])) - a.train(&h, &mut stream(1, &[]));
        assert!((d - 1.0).abs() < 1e-12, "{d}");
        // One shard moves, by 1.
        let c = vec![h.clone(), vec![0.1, 0.1]];
        let (ua, ub) = (
            a.shard_utilities(&c, 3, &mut stream(1, &[])).unwrap(),
            b.shard_utilities(&c, 3, &mut stream(1, &[])).unwrap(),
        );
        for (ra, rb) in ua.iter().zip(&ub) {
            assert_eq!(
                (rb[0] - ra[0], &rb[1..], &ra[1..]),
                (1.0, &[0.0, 0.0][..], &[0.0, 0.0][..])
            );
        }
        // One user is replaced; the others are unchanged.
        let (la, lb) = (
            a.user_losses(&c, &mut stream(1, &[])).unwrap(),
            b.user_losses(&c, &mut stream(1, &[])).unwrap(),
        );
        assert_eq!(la.row(1), lb.row(1));
        assert_eq!(lb[[0, 0]], 50.0 * 0.3);
        assert_eq!(la[[0, 0]], 50.0 * 0.7);
        assert!(la.row(2).iter().chain(lb.row(3)).all(|&l| l == 0.0));
        // The exact gradients agree with the losses (finite differences along θ₁).
        let (ga, gb) = (a.user_gradients(&h).unwrap(), b.user_gradients(&h).unwrap());
        assert_eq!(
            (ga[[0, 0]], gb[[0, 0]], ga[[1, 0]], gb[[0, 1]]),
            (-50.0, 50.0, 0.0, 0.0)
        );
        // The declared run: (1/(2z²))-zCDP with z = 0.5.
        assert_eq!(
            crate::workloads::run_curve(&a),
            RdpCurve::zcdp(2.0).unwrap()
        );
    }

    #[test]
    fn bad_settings_are_named() {
        for (r, what) in [
            (Canary::new(Side::With, 0, 1.0, 4, 1.0), "dim"),
            (Canary::new(Side::With, 1, 0.0, 4, 1.0), "noise"),
            (Canary::new(Side::With, 1, 1.0, 1, 1.0), "users"),
            (Canary::new(Side::With, 1, 1.0, 4, f64::NAN), "slope"),
        ] {
            let e = r.err().expect("an error").to_string();
            assert!(e.contains(what), "{e}");
        }
    }
}
