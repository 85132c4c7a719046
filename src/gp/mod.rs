//! The one exact Gaussian process every GP-based tuner uses (private GP-UCB, DP-GIBO, DPareto):
//! * `kernel`: stationary kernels (RBF, Matérn) with derivatives in the inputs and the log
//!   hyperparameters;
//! * `surrogate`: the fixed-hyperparameter kernels of gradient posteriors (that RBF, and the
//!   polynomial kernel) with DP-GIBO's batched derivative blocks;
//! * `cholesky`: every Cholesky factorisation and triangular solve, and the one jitter policy;
//! * `posterior`: the Cholesky posterior (mean, covariance, marginal likelihood, sampling);
//! * `gradient`: the posterior of ∇f, batched over users (DP-GIBO) and for one user
//!   ([`Posterior::gradient`]);
//! * `fit`: a non-private hyperparameter fit (L-BFGS from `numeric`).

pub mod cholesky;
pub mod fit;
pub mod gradient;
pub mod kernel;
pub mod posterior;
pub mod surrogate;
pub mod ucb_bo;

pub use cholesky::{cholesky_with_jitter, Jitter, NotPositiveDefinite};
pub use fit::{fit_hyperparameters, FitOptions, FitResult, HyperparameterBounds, Hyperparameters};
pub use gradient::GradientPosterior;
pub use kernel::{Kernel, KernelFamily};
pub use posterior::Posterior;
pub use surrogate::SurrogateKernel;
