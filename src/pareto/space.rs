//! The searched box: one [`Dimension`] per hyperparameter, and uniform points in it. A leaf
//! module: the DPareto loop and the random designs both build on it.

use crate::error::{Error, Result};
use rand::{Rng, RngCore};

/// One searched hyperparameter: its box, whether it is an integer, and whether it is searched
/// on a log scale (drawn log-uniformly, and seen by the GPs as its logarithm).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Dimension {
    pub name: String,
    pub low: f64,
    pub high: f64,
    pub integer: bool,
    pub log: bool,
}

impl Dimension {
    pub fn new(name: &str, low: f64, high: f64, integer: bool) -> Result<Self> {
        if !(low.is_finite() && high.is_finite() && low < high) {
            return Err(Error::invalid(
                "dimension",
                format!("{name} in [{low}, {high}]"),
                "finite bounds with low < high",
            ));
        }
        Ok(Dimension {
            name: name.to_string(),
            low,
            high,
            integer,
            log: false,
        })
    }

    /// A continuous hyperparameter searched on a log scale (0 < low < high).
    pub fn log(name: &str, low: f64, high: f64) -> Result<Self> {
        if low.is_nan() || low <= 0.0 {
            return Err(Error::invalid(
                "dimension",
                format!("{name} in [{low}, {high}] on a log scale"),
                "0 < low < high",
            ));
        }
        Ok(Dimension {
            log: true,
            ..Dimension::new(name, low, high, false)?
        })
    }

    /// The coordinate random points, grids and the GPs work in: ln v on a log scale.
    pub(crate) fn internal(&self, v: f64) -> f64 {
        if self.log {
            libm::log(v)
        } else {
            v
        }
    }

    /// The value at internal coordinate `z`, inside the box and rounded.
    pub(crate) fn value_at(&self, z: f64) -> f64 {
        self.round(if self.log { libm::exp(z) } else { z })
    }

    /// `points` values evenly spaced in the internal coordinate from low to high (one value:
    /// the midpoint), rounded: a grid's axis.
    pub fn grid(&self, points: usize) -> Vec<f64> {
        let (lo, hi) = self.internal_bounds();
        (0..points)
            .map(|i| {
                let t = if points == 1 {
                    0.5
                } else {
                    i as f64 / (points - 1) as f64
                };
                self.value_at(lo + t * (hi - lo))
            })
            .collect()
    }

    pub(crate) fn internal_bounds(&self) -> (f64, f64) {
        (self.internal(self.low), self.internal(self.high))
    }

    fn round(&self, v: f64) -> f64 {
        let v = v.clamp(self.low, self.high);
        if self.integer {
            v.round().clamp(self.low.ceil(), self.high.floor())
        } else {
            v
        }
    }
}

/// A uniform point of the box (log-uniform on log dimensions), integers rounded.
pub(crate) fn random_point(dims: &[Dimension], rng: &mut dyn RngCore) -> Vec<f64> {
    dims.iter()
        .map(|d| {
            let (lo, hi) = d.internal_bounds();
            d.value_at(lo + (hi - lo) * rng.random::<f64>())
        })
        .collect()
}
