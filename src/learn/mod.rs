//! Models and how they are trained: per-example gradients, DP-SGD, SVMs. Workloads wrap
//! these into tuning problems.

pub mod smo;
mod smo_solver;
pub mod svr;

mod dense;
pub mod dpsgd;
pub mod linear_svm;
pub mod logistic;
pub mod mlp;
pub mod model;

pub use dpsgd::{add_clipped_gradient, DpSgdConfig, Length, Sampling, Trained};
pub use linear_svm::{LinearSvm, WeightPenalty};
pub use logistic::Logistic;
pub use mlp::{Activation, Mlp};
pub use model::{accuracy, mean_loss, objective, ExampleGradient, Model};
