//! Private GP-UCB (Kusner et al. 2015, spec 002).

pub mod bounds;
