//! How much privacy a computation costs: pure functions of parameters, no randomness, no data.
//!
//! * [`rdp`]: [`RdpCurve`], ε(λ) on a grid or in closed form, composition, max, envelope.
//! * [`convert`]: RDP → (ε, δ) (Canonne–Kamath–Steinke by default, Mironov), zCDP, GDP.
//! * [`mechanisms`]: Gaussian, Laplace, randomized response, DP-SGD (subsampled Gaussian).
//! * [`divergence`]: their per-order Rényi divergences (a leaf: no import circle).
//! * [`composition`]: optimal composition of pure-DP mechanisms (Kairouz–Oh–Viswanath).
//! * [`calibrate`]: target (ε, δ) → noise multiplier.
//! * [`clipped_mean`]: clipped-mean Gaussian releases (validation scores, per-user gradients).
//! * [`exponential`], [`above_threshold`]: the selection mechanisms tuners draw from (exponential
//!   mechanism; AboveThreshold), with their noise.

pub mod above_threshold;
pub mod calibrate;
pub mod clipped_mean;
pub mod composition;
pub mod convert;
pub mod divergence;
pub mod exponential;
pub mod mechanisms;
pub mod rdp;

pub use calibrate::{calibrate_dpsgd_noise, smallest_meeting, Calibrated};
pub use convert::{Accountant, Conversion, DpBound, Orders, DP_ACCOUNTING_ORDERS};
pub use mechanisms::{AdditiveNoise, DpSgd, Gaussian, Laplace, RandomizedResponse};
pub use rdp::{ClosedForm, RdpCurve, RdpFunction};
