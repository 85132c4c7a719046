//! Repeat-and-select theory (Liu–Talwar 2019, Papernot–Steinke 2022; spec 000): run a private
//! procedure a random number K of times and keep the best output.
//!
//! * [`count`]: the laws of K (pmf, pgf, mean, exact samplers).
//! * [`bounds`]: the RDP curve of the repeated mechanism (Theorems 2 and 6, Corollaries 3, 4,
//!   16 and 21, Lemma 22, Liu–Talwar), and Lemma 7 numerically for any law of K.
//! * [`calibrate`]: the largest mean, or smallest noise, that meets a target (ε, δ).
//! * [`utility`]: success probability, expected quantile and best score, tails of K.

pub mod bounds;
pub mod calibrate;
pub mod count;
pub mod three_point;
pub mod utility;

pub use bounds::{repeat_select, Base, Lemma7};
pub use count::{CountFamily, CountLaw, FixedK, PoissonK, RunCount, Tnb, TruncatedK};
