//! Models and how they are trained: per-example gradients, DP-SGD, SVMs. Workloads wrap
//! these into tuning problems.

pub mod smo;
mod smo_solver;
pub mod svr;

pub mod batched;
mod dense;
mod device;
pub mod dpsgd;
mod gemm;
#[cfg(feature = "cuda")]
pub mod gpu;
pub mod init;
pub mod linear_svm;
pub mod logistic;
pub mod mlp;
pub mod model;

pub use batched::{Head, Network};
pub use device::{train_on_gpu, Device};
pub use dpsgd::{
    add_clipped_gradient, DpSgdConfig, Engine, Length, OnDivergence, Optimizer, Sampling, Trained,
};
pub use init::Init;
pub use linear_svm::{LinearSvm, WeightPenalty};
pub use logistic::Logistic;
pub use mlp::{Activation, Mlp};
pub use model::{accuracy, mean_loss, objective, ExampleGradient, Model};
