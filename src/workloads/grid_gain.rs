//! A validation gain given by its values on a finite grid, with a declared GP prior: the
//! workload of spec 002's synthetic suite (§4.3), where Assumption 1 holds exactly because the
//! values are an exact GP draw on the grid, and neighbouring datasets are a correlated pair
//! f_V = h1, f_V′ = ρ·h1 + sqrt(1 − ρ²)·h2 with h1, h2 i.i.d. GP(0, s²·k2), so that
//! Cov(f_V, f_V′) = ρ·s²·k2.

use super::{GainPrior, Hyper, Oracle, Space, ValidationGain, Workload};
use crate::error::{Error, Result};
use crate::gp::{Kernel, Posterior};
use crate::rng::normal;
use ndarray::Array2;
use rand::RngCore;

/// f_V on a grid, observed with N(0, σ²) noise.
#[derive(Clone, Debug)]
pub struct GridGain {
    space: Space,
    values: Vec<f64>,
    prior: GainPrior,
    best: f64,
}

impl GridGain {
    /// `values[i]` = f_V(`grid[i]`).
    pub fn new(grid: Vec<Hyper>, values: Vec<f64>, prior: GainPrior) -> Result<Self> {
        if grid.is_empty() || grid.len() != values.len() {
            return Err(Error::invalid(
                "values",
                format!("{} values for {} grid points", values.len(), grid.len()),
                "one value per grid point, at least one point",
            ));
        }
        if let Some(v) = values.iter().find(|v| !v.is_finite()) {
            return Err(Error::invalid("values", v, "finite numbers"));
        }
        let best = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Ok(GridGain {
            space: Space::Finite(grid),
            values,
            prior,
            best,
        })
    }

    pub fn values(&self) -> &[f64] {
        &self.values
    }

    fn index(&self, h: &Hyper) -> usize {
        match &self.space {
            Space::Finite(grid) => grid
                .iter()
                .position(|g| g == h)
                .expect("tuners evaluate grid points only"),
            Space::UnitBox { .. } => unreachable!("a grid gain has a finite space"),
        }
    }
}

/// `n` equally spaced points on [0, 1] (n ≥ 2), as a one-dimensional grid.
pub fn line_grid(n: usize) -> Vec<Hyper> {
    (0..n).map(|i| vec![i as f64 / (n - 1) as f64]).collect()
}

/// The n × n grid on [0, 1]² (row-major, first coordinate slowest).
pub fn square_grid(n: usize) -> Vec<Hyper> {
    let line = line_grid(n);
    line.iter()
        .flat_map(|a| line.iter().map(move |b| vec![a[0], b[0]]))
        .collect()
}

/// An exact neighbouring pair (f_V, f_V′) of GP(0, s²·k2) draws on `grid` with correlation ρ
/// (spec 002 §4.3), from two independent prior samples.
pub fn neighbouring_pair(
    prior: &GainPrior,
    grid: &[Hyper],
    rng: &mut dyn RngCore,
) -> Result<(Vec<f64>, Vec<f64>)> {
    let dim = grid.first().map_or(0, Vec::len);
    let kernel = Kernel::isotropic(prior.kernel, dim, prior.lengthscale, 1.0)?;
    let flat: Vec<f64> = grid.iter().flatten().copied().collect();
    let x = Array2::from_shape_vec((grid.len(), dim), flat)
        .map_err(|e| Error::invalid("grid", e, "points of one dimension"))?;
    let gp = Posterior::prior(kernel, 0.0)?;
    let h1 = gp.sample(x.view(), rng)?;
    let h2 = gp.sample(x.view(), rng)?;
    let (rho, s) = (prior.rho, prior.scale);
    let other = (1.0 - rho * rho).sqrt();
    Ok((
        h1.iter().map(|a| s * a).collect(),
        h1.iter()
            .zip(&h2)
            .map(|(a, b)| s * (rho * a + other * b))
            .collect(),
    ))
}

impl ValidationGain for GridGain {
    fn prior(&self) -> &GainPrior {
        &self.prior
    }
    fn observe(&self, h: &Hyper, rng: &mut dyn RngCore) -> f64 {
        self.values[self.index(h)] + self.prior.noise_sd * normal(rng)
    }
}

impl Oracle for GridGain {
    fn utility(&self, h: &Hyper) -> f64 {
        self.values[self.index(h)]
    }
    fn best_utility(&self) -> f64 {
        self.best
    }
}

impl Workload for GridGain {
    fn name(&self) -> String {
        format!("grid-gain(N={})", self.values.len())
    }
    fn space(&self) -> &Space {
        &self.space
    }
    fn oracle(&self) -> &dyn Oracle {
        self
    }
    fn validation_gain(&self) -> Option<&dyn ValidationGain> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gp::KernelFamily;
    use crate::rng::stream;

    /// The pair has the declared covariance: Var f_V = s², Cov(f_V, f_V′) = ρs² at a point,
    /// and s²·k2 between points (checked on 4000 draws against 4 standard errors).
    #[test]
    fn pairs_have_the_declared_covariance() {
        let prior = GainPrior {
            kernel: KernelFamily::Matern52,
            lengthscale: 0.2,
            scale: 1.5,
            noise_sd: 0.1,
            rho: 0.6,
        };
        let grid = line_grid(5);
        let mut rng = stream(3, &[]);
        let n = 4000;
        let (mut vv, mut vw, mut v02) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..n {
            let (f, g) = neighbouring_pair(&prior, &grid, &mut rng).unwrap();
            vv.push(f[1] * f[1]);
            vw.push(f[1] * g[1]);
            v02.push(f[0] * f[2]);
        }
        let r = 0.5 / 0.2;
        for (xs, want) in [
            (vv, 2.25),
            (vw, 0.6 * 2.25),
            (v02, 2.25 * KernelFamily::Matern52.value(r)),
        ] {
            let mean = xs.iter().sum::<f64>() / n as f64;
            let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
            assert!(
                (mean - want).abs() < 4.0 * sd / (n as f64).sqrt(),
                "{mean} vs {want}"
            );
        }
    }

    #[test]
    fn grids_and_errors() {
        assert_eq!(line_grid(3), vec![vec![0.0], vec![0.5], vec![1.0]]);
        let sq = square_grid(20);
        assert_eq!(sq.len(), 400);
        assert_eq!(sq[21], vec![1.0 / 19.0, 1.0 / 19.0]);
        let prior = GainPrior {
            kernel: KernelFamily::Rbf,
            lengthscale: 0.1,
            scale: 1.0,
            noise_sd: 0.0,
            rho: 0.9,
        };
        assert!(GridGain::new(line_grid(3), vec![0.0; 2], prior.clone()).is_err());
        assert!(GridGain::new(line_grid(2), vec![0.0, f64::NAN], prior).is_err());
    }
}
