//! # dptune: differentially private hyperparameter tuning
//!
//! Choosing hyperparameters on private data leaks privacy through the choice. dptune implements
//! the tuners of the literature that bound that leak behind one [`tuners::Tuner`] trait, with
//! the accountant their guarantees are computed by, the workloads they are compared on and the
//! harness that regenerates every committed table and figure. (The project's README is the
//! guide for the command line; `docs/library.md` is this crate's guide, every example in it a
//! doc test.)
//!
//! ## A tour
//!
//! - [`accounting`]: Rényi DP curves and their composition, conversion to (ε, δ), zCDP, pure
//!   DP, the Gaussian, Laplace and subsampled Gaussian mechanisms (DP-SGD with Poisson lots or
//!   lots drawn without replacement), and calibration (the smallest σ for a target ε).
//! - [`selection`] (in `accounting`): repeat-and-select (Papernot–Steinke): the RDP of running a mechanism a
//!   random number of times and releasing the best, for every count distribution.
//! - [`tuners`]: every tuner (naive composition, Liu–Talwar, Papernot–Steinke, propose-test,
//!   private GP-UCB, DP-GIBO, DP-GD, Kusner's Lipschitz gain), each with a typed constructor
//!   that checks its parameters, a guarantee known before any data is touched, and `tune`.
//!   [`pareto`] holds DPareto, [`gp_ucb`], [`gibo`] and [`propose_test`] the algorithms'
//!   cores.
//! - [`session`]: the ask/tell protocol every tuner's session speaks and the executor that
//!   drives it over the harness's workloads or a user's command (`dptune tune`).
//! - [`workloads`]: what a tuner tunes: synthetic GP objectives, SVMs, GP regression, DP-SGD
//!   on real data ([`learn`] trains the models, [`data`] fetches the data sets).
//! - [`sim`]: the experiment harness behind `dptune sim`: experiment files, parallel and
//!   resumable runs, tidy parquet, declared figures and tables, provenance.
//! - [`audit`] checks a tuner's claim by attack; [`numeric`], [`gp`], [`rng`] (our own
//!   samplers: every draw reproducible from one seed) support the rest.
//!
//! ## A first example
//!
//! The ε of DP-SGD, and of ten 0.1-zCDP runs of which the best is released by Liu–Talwar:
//!
//! ```
//! use dptune::accounting::{Accountant, DpSgd};
//! use dptune::tuners::liu_talwar::LiuTalwar;
//!
//! let dpsgd = DpSgd::new(256.0 / 60000.0, 1.1, 14063)?; // q, σ, steps
//! let eps = Accountant::default().epsilon(&dpsgd.rdp(), 1e-5)?.epsilon;
//! assert!(eps > 2.0 && eps < 2.6);
//! assert!(LiuTalwar::best_of(0.5).is_err()); // a geometric count needs a mean above 1
//! # Ok::<(), dptune::Error>(())
//! ```

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
/// Repeat-and-select theory, part of the accounting (`accounting::selection`), at its
/// long-standing path.
pub use accounting::selection;
pub mod session;
pub mod sim;
pub mod tune;
pub mod tuners;
pub mod workloads;

pub use error::{Error, Result};

/// The README's example, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct Readme;

/// The library guide's examples (`docs/library.md`), compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../docs/library.md")]
pub struct LibraryGuide;
