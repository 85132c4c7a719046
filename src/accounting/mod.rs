//! How much privacy a computation costs: pure functions of parameters, no randomness, no data.
//!
//! * [`rdp`]: [`RdpCurve`], ε(λ) on a grid or in closed form, composition, max, envelope.
//! * [`convert`]: RDP → (ε, δ) (Canonne–Kamath–Steinke by default, Mironov), zCDP, GDP.
//! * [`mechanisms`]: Gaussian, Laplace, randomized response, DP-SGD (subsampled Gaussian, lots
//!   drawn by Poisson sampling or without replacement).
//! * [`divergence`]: their per-order Rényi divergences (a leaf: no import circle).
//! * [`subsampled_wor`]: the Gaussian on lots drawn without replacement (Wang–Balle–
//!   Kasiviswanathan 2019, Thm. 9; spec 001 §6.1) and the epochs → steps convention (a leaf).
//! * [`pld`]: privacy-loss distributions (connect-the-dots discretisation, composition by
//!   FFT), the tightest (ε, δ) of a composition (issue 40).
//! * [`composition`]: optimal composition of pure-DP mechanisms (Kairouz–Oh–Viswanath).
//! * [`calibrate`]: target (ε, δ) → noise multiplier.
//! * [`clipped_mean`]: clipped-mean Gaussian releases (validation scores, per-user gradients).
//! * [`exponential`], [`above_threshold`]: the selection mechanisms tuners draw from (exponential
//!   mechanism; AboveThreshold), with their noise.
//! * [`selection`]: repeat-and-select (Liu–Talwar, Papernot–Steinke): the laws of K, the
//!   bounds of the selection, calibration, utility (also at `dptune::selection`).
//! * [`event`]: [`Event`], what a computation releases in dp_accounting's vocabulary, validated
//!   when built, with the neighbouring relation it holds under.
//! * [`accountant`]: [`PrivacyAccountant`] (supports, compose, ε(δ), δ(ε), its statement), the
//!   registry [`ACCOUNTANTS`] and [`Tightest`], the smallest bound of several. Each registered
//!   accountant is one file ([`rdp_events`], [`pld_events`], …) and one line of `accountants!`.

pub mod above_threshold;
pub mod accountant;
pub mod calibrate;
pub mod clipped_mean;
pub mod composition;
pub mod convert;
pub mod divergence;
pub mod event;
pub mod exponential;
pub mod mechanisms;
pub mod pld;
pub mod rdp;
pub mod selection;
pub mod subsampled_wor;

/// Declares each accountant's module and registers it in [`ACCOUNTANTS`]: one line per
/// accountant, `module::Type` (the type implements [`accountant::Registered`]).
macro_rules! accountants {
    ($($module:ident :: $ty:ident),* $(,)?) => {
        $(pub mod $module;)*
        /// The registered accountants, by key, in the order [`Tightest`] breaks ties in.
        pub const ACCOUNTANTS: &[(&str, accountant::Builder)] = &[$((
            <$module::$ty as accountant::Registered>::KEY,
            accountant::boxed::<$module::$ty>,
        )),*];
    };
}

accountants! {
    rdp_events::Rdp,
    pld_events::Pld,
    gdp::Gdp,
    approximate::ApproxDp,
}

pub use accountant::{PrivacyAccountant, Tightest};
pub use calibrate::{calibrate_dpsgd_noise, smallest_meeting, smallest_run_noise, Calibrated};
pub use convert::{
    integer_orders_epsilon, Accountant, Conversion, DpBound, Orders, DP_ACCOUNTING_ORDERS,
    SPEC_001_MAX_ORDER,
};
pub use event::Event;
pub use mechanisms::{AdditiveNoise, DpSgd, Gaussian, Laplace, LotSampling, RandomizedResponse};
pub use rdp::{ClosedForm, RdpCurve, RdpFunction};
pub use subsampled_wor::{steps_for_epochs, WorSubsampledGaussian};
