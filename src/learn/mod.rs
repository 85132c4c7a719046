//! Models and how they are trained: per-example gradients, DP-SGD, SVMs. Workloads wrap
//! these into tuning problems.

pub mod smo;
