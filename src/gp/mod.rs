//! The one exact Gaussian process every GP-based tuner uses (private GP-UCB, DP-GIBO, DPareto):
//! kernels with derivatives, the Cholesky posterior, the gradient posterior, marginal
//! likelihood, and a non-private hyperparameter fit.

pub mod cholesky;
pub mod fit;
pub mod kernel;
pub mod posterior;

pub use cholesky::{cholesky_with_jitter, Jitter, NotPositiveDefinite};
pub use fit::{fit_hyperparameters, FitOptions, FitResult, HyperparameterBounds, Hyperparameters};
pub use kernel::{Kernel, KernelFamily};
pub use posterior::Posterior;
