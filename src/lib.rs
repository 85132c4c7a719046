//! dptune: differentially private hyperparameter tuning.
//!
//! Layers, bottom up: [`accounting`] (how much privacy a computation costs), then selection
//! theory, tuners, workloads and the simulation harness (see `docs/architecture.md`).

pub mod accounting;
pub mod error;
pub mod numeric;

pub use error::{Error, Result};
