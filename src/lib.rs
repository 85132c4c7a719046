#![doc = include_str!("../README.md")]

pub mod accounting;
pub mod audit;
pub mod cli;
pub mod data;
pub mod error;
pub mod fuzzing;
pub mod gibo;
pub mod gp;
pub mod gp_ucb;
pub mod learn;
pub mod numeric;
pub mod params;
pub mod pareto;
pub mod propose_test;
pub mod rng;
pub mod selection;
pub mod sim;
pub mod tuners;
pub mod workloads;

pub use error::{Error, Result};

/// The library guide's examples (`docs/library.md`), compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../docs/library.md")]
pub struct LibraryGuide;
