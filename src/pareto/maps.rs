//! Spec 001 Figs. 1–4 (§3.1, §4.3 items 1–2): what DPareto sees on a two-dimensional box.
//!
//! * The oracle on a G × G grid (log-spaced along log dimensions, as [`grid_search`] spaces
//!   them): exact ε and the mean error; the "exact" front is the front of these points.
//! * k₀ random points ([`random_sampling`]), the two GPs fitted to them exactly as [`dpareto`]
//!   fits them before its first proposal (same input scaling, transforms, centring, noise
//!   rules, restarts and seeds: with the same rng the surfaces are the same), their posterior
//!   means back-transformed (ε = e^m, error = logistic(m)) and the HVPoI under the front of the
//!   k₀ observations, all on the same grid.
//!
//! Every grid point draws from its own stream (seed, [`GRID_STREAM`], index), so the maps are
//! identical for any thread count; the k₀ points and the GP fits draw from (seed,
//! [`SAMPLE_STREAM`]) in [`dpareto`]'s order.
//!
//! [`grid_search`]: super::dpareto::grid_search
//! [`dpareto`]: super::dpareto::dpareto

use super::acquisition::{ImprovementCells, Reference};
use super::dpareto::{
    input_scale, random_sampling, Dimension, DparetoOptions, Evaluation, Oracle, Surrogate,
};
use super::front::Objectives;
use super::transform::{from_model_space, to_model_space};
use crate::error::{Error, Result};
use crate::rng::stream;
use ndarray::Array2;
use rand::RngCore;
use rayon::prelude::*;

/// Stream tag of the grid's evaluations.
pub const GRID_STREAM: u64 = 0x4d41_5047;
/// Stream tag of the k₀ random points and the GP fits.
pub const SAMPLE_STREAM: u64 = 0x4d41_5053;

/// The maps' settings.
#[derive(Clone, Debug, PartialEq)]
pub struct MapOptions {
    /// Points per axis (≥ 2).
    pub grid: usize,
    /// k₀, the random points the GPs are fitted to (≥ 2; spec: 250).
    pub initial: usize,
    /// The HVPoI's reference point (the paper's by default).
    pub reference: Reference,
    /// Random restarts of each hyperparameter fit (as [`DparetoOptions::fit_restarts`]).
    pub fit_restarts: usize,
}

impl MapOptions {
    /// Spec §3.1: k₀ = 250, the paper's reference, DPareto's default restarts.
    pub fn paper(grid: usize) -> Self {
        let d = DparetoOptions::default();
        MapOptions {
            grid,
            initial: 250,
            reference: d.reference,
            fit_restarts: d.fit_restarts,
        }
    }
}

/// One point of a map: the oracle's (ε, mean error) there and the GPs' view of it.
#[derive(Clone, Debug, PartialEq)]
pub struct MapPoint {
    pub lambda: [f64; 2],
    /// The oracle's ε and mean error (for a sampled point: what the GPs were fitted to).
    pub epsilon: f64,
    pub error: f64,
    /// The GPs' posterior means, back-transformed.
    pub gp_epsilon: f64,
    pub gp_error: f64,
    /// HVPoI under the front of the k₀ observations.
    pub hvpoi: f64,
}

/// The grid (first dimension slowest) and the k₀ sampled points in draw order.
#[derive(Clone, Debug, PartialEq)]
pub struct Maps {
    pub grid: Vec<MapPoint>,
    pub sampled: Vec<MapPoint>,
    /// The grid point of largest HVPoI (the first among ties).
    pub argmax: usize,
}

/// The two GPs after k₀ points and the acquisition's cells, as [`super::dpareto::dpareto`]
/// builds them before its first proposal.
pub struct Surface {
    dims: Vec<Dimension>,
    scale: Vec<f64>,
    privacy: Surrogate,
    error: Surrogate,
    cells: ImprovementCells,
}

/// A prediction: model-space means and standard deviations ([log ε, logit error]) and HVPoI.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prediction {
    pub mean: Objectives,
    pub sd: Objectives,
    pub hvpoi: f64,
}

impl Surface {
    /// Fits both GPs to `initial` and builds the cells of their observed front; draws the fit
    /// seed from `rng` as DPareto's first iteration does.
    pub fn fit(
        dims: &[Dimension],
        initial: &[Evaluation],
        reference: &Reference,
        fit_restarts: usize,
        rng: &mut dyn RngCore,
    ) -> Result<Self> {
        if initial.len() < 2 {
            return Err(Error::invalid(
                "initial",
                initial.len(),
                "at least 2 points before the GPs are fitted",
            ));
        }
        let scale = input_scale(dims, initial);
        let x = Array2::from_shape_fn((initial.len(), dims.len()), |(i, j)| {
            dims[j].internal(initial[i].lambda[j]) / scale[j]
        });
        let model: Vec<Objectives> = initial
            .iter()
            .map(|e| to_model_space(e.objectives))
            .collect::<Result<_>>()?;
        let seed = rng.next_u64();
        let column = |k: usize| model.iter().map(|v| v[k]).collect::<Vec<f64>>();
        let privacy = Surrogate::fit(&x, &column(0), true, None, fit_restarts, seed)?;
        let error = Surrogate::fit(&x, &column(1), false, None, fit_restarts, seed ^ 1)?;
        let cells = ImprovementCells::new(&model, reference.resolve(&model)?)?;
        Ok(Surface {
            dims: dims.to_vec(),
            scale,
            privacy,
            error,
            cells,
        })
    }

    /// The predictions at the hyperparameter values `lambdas`.
    pub fn predict(&self, lambdas: &[Vec<f64>]) -> Result<Vec<Prediction>> {
        let d = self.dims.len();
        if let Some(l) = lambdas.iter().find(|l| l.len() != d) {
            return Err(Error::invalid(
                "lambda",
                format!("{} values", l.len()),
                format!("{d} values, one per dimension"),
            ));
        }
        let z = Array2::from_shape_fn((lambdas.len(), d), |(i, j)| {
            self.dims[j].internal(lambdas[i][j]) / self.scale[j]
        });
        let (mp, sp) = self.privacy.predict(&z)?;
        let (me, se) = self.error.predict(&z)?;
        (0..lambdas.len())
            .map(|i| {
                let (mean, sd) = ([mp[i], me[i]], [sp[i], se[i]]);
                Ok(Prediction {
                    mean,
                    sd,
                    hvpoi: self.cells.hvpoi(mean, sd)?,
                })
            })
            .collect()
    }
}

/// The maps of `oracle` over a two-dimensional box (module docs).
pub fn maps<O>(oracle: &O, dims: &[Dimension], options: &MapOptions, seed: u64) -> Result<Maps>
where
    O: Oracle + Clone + Send + Sync,
{
    if dims.len() != 2 {
        return Err(Error::invalid(
            "dimensions",
            dims.len(),
            "2 hyperparameters (a map is two-dimensional)",
        ));
    }
    if options.grid < 2 {
        return Err(Error::invalid(
            "grid",
            options.grid,
            "at least 2 points per axis",
        ));
    }
    if options.initial < 2 {
        return Err(Error::invalid(
            "initial",
            options.initial,
            "at least 2 random points before the GPs are fitted",
        ));
    }
    let (a, b) = (dims[0].grid(options.grid), dims[1].grid(options.grid));
    let lambdas: Vec<Vec<f64>> = a
        .iter()
        .flat_map(|&u| b.iter().map(move |&v| vec![u, v]))
        .collect();
    let observed: Vec<Objectives> = lambdas
        .par_iter()
        .enumerate()
        .map(|(i, l)| {
            let mut o = oracle.clone();
            o.evaluate(l, &mut stream(seed, &[GRID_STREAM, i as u64]))?
                .objectives()
        })
        .collect::<Result<_>>()?;
    let mut rng = stream(seed, &[SAMPLE_STREAM]);
    let mut o = oracle.clone();
    let sampled = random_sampling(&mut o, dims, options.initial, &mut rng)?;
    let surface = Surface::fit(
        dims,
        &sampled,
        &options.reference,
        options.fit_restarts,
        &mut rng,
    )?;
    let point = |lambda: &[f64], obs: Objectives, p: &Prediction| -> Result<MapPoint> {
        let [gp_epsilon, gp_error] = from_model_space(p.mean)?;
        Ok(MapPoint {
            lambda: [lambda[0], lambda[1]],
            epsilon: obs[0],
            error: obs[1],
            gp_epsilon,
            gp_error,
            hvpoi: p.hvpoi,
        })
    };
    let on_grid = surface.predict(&lambdas)?;
    let grid: Vec<MapPoint> = (0..lambdas.len())
        .map(|i| point(&lambdas[i], observed[i], &on_grid[i]))
        .collect::<Result<_>>()?;
    let sampled_lambdas: Vec<Vec<f64>> = sampled.iter().map(|e| e.lambda.clone()).collect();
    let at_sampled = surface.predict(&sampled_lambdas)?;
    let sampled: Vec<MapPoint> = (0..sampled.len())
        .map(|i| point(&sampled[i].lambda, sampled[i].objectives, &at_sampled[i]))
        .collect::<Result<_>>()?;
    let argmax = (0..grid.len()).fold(0, |best, i| {
        if grid[i].hvpoi > grid[best].hvpoi {
            i
        } else {
            best
        }
    });
    Ok(Maps {
        grid,
        sampled,
        argmax,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pareto::dpareto::{dpareto, grid_search, Observation};
    use crate::pareto::oracles::SvtOracle;

    /// A smooth trade-off with a known front: ε = s/a, error = 0.05 + 0.9·a/(a + s).
    #[derive(Clone)]
    struct TradeOff;

    impl Oracle for TradeOff {
        fn evaluate(&mut self, l: &[f64], _rng: &mut dyn RngCore) -> Result<Observation> {
            Ok(Observation::single(
                l[1] / l[0],
                0.05 + 0.9 * l[0] / (l[0] + l[1]),
            ))
        }
    }

    fn dims() -> Vec<Dimension> {
        vec![
            Dimension::log("noise", 0.1, 10.0).unwrap(),
            Dimension::new("steps", 1.0, 20.0, false).unwrap(),
        ]
    }

    fn options(grid: usize, initial: usize) -> MapOptions {
        MapOptions {
            grid,
            initial,
            reference: Reference::paper(),
            fit_restarts: 1,
        }
    }

    /// The grid is grid_search's grid, in its order, with the oracle's values.
    #[test]
    fn the_grid_is_grid_search_and_exact() {
        let m = maps(&TradeOff, &dims(), &options(5, 8), 1).unwrap();
        let g = grid_search(&mut TradeOff, &dims(), 5, &mut stream(0, &[])).unwrap();
        assert_eq!(m.grid.len(), 25);
        for (p, e) in m.grid.iter().zip(&g) {
            assert_eq!(p.lambda.to_vec(), e.lambda);
            assert_eq!([p.epsilon, p.error], e.objectives);
        }
        assert_eq!(m.sampled.len(), 8);
        let best = m.grid.iter().map(|p| p.hvpoi).fold(0.0, f64::max);
        assert_eq!(m.grid[m.argmax].hvpoi, best);
        assert!(m.grid.iter().all(|p| p.hvpoi >= 0.0 && p.gp_epsilon > 0.0));
    }

    /// With the same rng, the surface is DPareto's: its prediction and HVPoI at DPareto's first
    /// proposal are the ones DPareto recorded.
    #[test]
    fn the_surface_is_dparetos_before_its_first_proposal() {
        let opts = DparetoOptions {
            initial: 12,
            iterations: 1,
            candidates: 300,
            fit_restarts: 1,
            ..DparetoOptions::default()
        };
        let run = dpareto(&mut TradeOff, &dims(), &opts, &mut stream(7, &[])).unwrap();
        let mut rng = stream(7, &[]);
        let sampled = random_sampling(&mut TradeOff, &dims(), 12, &mut rng).unwrap();
        assert_eq!(sampled[..], run[..12]);
        let s = Surface::fit(&dims(), &sampled, &opts.reference, 1, &mut rng).unwrap();
        let proposal = &run[12];
        let p = s.predict(std::slice::from_ref(&proposal.lambda)).unwrap()[0];
        let (mean, sd) = proposal.prediction.unwrap();
        for k in 0..2 {
            assert!((p.mean[k] - mean[k]).abs() < 1e-6, "{p:?} vs {mean:?}");
            assert!((p.sd[k] - sd[k]).abs() < 1e-6, "{p:?} vs {sd:?}");
        }
        let value = proposal.acquisition.unwrap();
        assert!(
            (p.hvpoi - value).abs() <= 1e-6 * value.max(1.0),
            "{p:?} vs {value}"
        );
    }

    /// Any thread count gives the same maps; SVT's GPs fit its exact ε closely at the sampled
    /// points (ε is noise-free; spec §3.1 B: "both GPs fit well").
    #[test]
    fn deterministic_and_the_privacy_gp_interpolates() {
        let svt = SvtOracle {
            orders: 5,
            ..SvtOracle::PAPER
        };
        let dims = SvtOracle::dimensions().unwrap();
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(|| maps(&svt, &dims, &options(6, 20), 3).unwrap());
        let two = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap()
            .install(|| maps(&svt, &dims, &options(6, 20), 3).unwrap());
        assert_eq!(one, two);
        for p in &one.sampled {
            assert!(
                libm::log(p.gp_epsilon / p.epsilon).abs() < 0.05,
                "{} vs {}",
                p.gp_epsilon,
                p.epsilon
            );
        }
    }

    #[test]
    fn bad_settings_are_named() {
        let e = maps(&TradeOff, &dims()[..1], &options(5, 8), 0).unwrap_err();
        assert!(e.to_string().contains("dimensions"), "{e}");
        let e = maps(&TradeOff, &dims(), &options(1, 8), 0).unwrap_err();
        assert!(e.to_string().contains("grid"), "{e}");
        let e = maps(&TradeOff, &dims(), &options(4, 1), 0).unwrap_err();
        assert!(e.to_string().contains("initial"), "{e}");
    }
}
