//! The math of DPareto (spec 001; Avent et al., "Automatic Discovery of Privacy–Utility Pareto
//! Fronts", PoPETs 2020): pure functions, no tuner loop.
//!
//! * [`front`]: Pareto fronts of (ε, error) points, their exact 2-D hypervolume, and the common
//!   yardstick of spec §5 (`hv_lin`, `hv_log`, `best_err_at_eps`).
//! * [`transform`]: the GPs' output transforms, log ε and logit of the clamped error.
//! * [`acquisition`]: HVPoI (DPareto's acquisition) and EHVI in closed form for two
//!   objectives; the reference point rules and the front source.
//! * [`space`]: the searched box ([`space::Dimension`]) and uniform points in it.
//! * [`designs`]: how random sampling draws points (uniform, or spec 001 Tables 3–4).
//! * [`oracles`]: the privacy oracles of the illustrative experiments (analytic Gaussian
//!   mechanism, sparse vector technique).
//! * [`output_perturbation`]: spec §3.1 A's oracle, output-perturbed logistic regression
//!   trained by bolt-on projected SGD.
//! * [`maps`]: Figs. 1–4's maps: an oracle on a grid, the GPs' means and HVPoI after k₀ points.

pub mod acquisition;
pub mod designs;
pub mod dpareto;
pub mod front;
pub mod maps;
pub mod oracles;
pub mod output_perturbation;
pub mod space;
pub mod transform;

pub use acquisition::{FrontSource, ImprovementCells, Reference, VARIANCE_FLOOR};
pub use front::{
    best_error_at, hv_lin, hv_log, hypervolume, pareto_front, Objectives, StepFront,
    BEST_ERROR_EPSILONS, HV_LOG_EPSILON_FLOOR, HV_REFERENCE,
};
pub use oracles::{
    analytic_gaussian_epsilon, output_perturbation_epsilon, output_perturbation_sensitivity,
    svt_epsilon, SvtNoise,
};
pub use transform::{from_model_space, log_epsilon, logit_error, to_model_space};
