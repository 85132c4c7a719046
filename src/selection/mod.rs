//! Repeat-and-select theory (Liu–Talwar 2019, Papernot–Steinke 2022; spec 000): run a private
//! procedure a random number K of times and keep the best output.
//!
//! * [`count`]: the laws of K (pmf, pgf, mean, exact samplers).

pub mod count;

pub use count::{CountLaw, FixedK, PoissonK, RunCount, Tnb, TruncatedK};
