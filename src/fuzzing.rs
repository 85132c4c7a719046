//! The fuzz targets' bodies (issue 22): every reader of user input, fed arbitrary bytes. Each
//! function must return, never panic, hang or allocate without bound, whatever `data` holds;
//! a reader's error is a correct answer. `fuzz/` (cargo-fuzz, `just fuzz`) drives them with
//! libFuzzer; `tests/suite/fuzz_corpus.rs` replays the committed corpora and every crash found
//! (`fuzz/regressions/`) on the stable toolchain, so a fixed crash stays fixed.
#![cfg(feature = "harness")]

use crate::accounting::RdpCurve;
use crate::data::{parse_csv, TargetKind};
use crate::sim::Profile;
use std::path::Path;

/// A target's body.
pub type Target = fn(&[u8]);

/// The targets by name, as `fuzz/fuzz_targets/<name>.rs` and the corpus folders name them.
pub const TARGETS: [(&str, Target); 8] = [
    ("experiment_file", experiment_file),
    ("csv", csv),
    ("adult_csv", adult_csv),
    ("ct_slices_csv", ct_slices_csv),
    ("idx", idx),
    ("rdp_curve", rdp_curve),
    ("cli_args", cli_args),
    ("search_file", search_file),
];

fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}

/// An experiment file (TOML), parsed and validated at both profiles. The study's own check
/// (`sim run`'s preflight) is left out: it builds the first workload instance, which for some
/// kinds trains models for seconds (svm-random-search: about 20 s), too slow to fuzz.
pub fn experiment_file(data: &[u8]) {
    if let Some(t) = text(data) {
        let _ = crate::sim::experiment::load_text(Path::new("fuzz.toml"), t, Profile::Smoke);
    }
}

/// A search file of `dptune tune` (TOML): read into its plan, calibration included.
pub fn search_file(data: &[u8]) {
    if let Some(t) = text(data) {
        let _ = crate::tune::file::plan("fuzz.toml", t);
    }
}

/// The generic CSV reader, with class and value targets.
pub fn csv(data: &[u8]) {
    if let Some(t) = text(data) {
        let classes = TargetKind::Classes(vec!["a".into(), "b".into()]);
        let _ = parse_csv(t, "fuzz.csv", "fuzz", &classes);
        let _ = parse_csv(t, "fuzz.csv", "fuzz", &TargetKind::Values);
    }
}

/// The UCI Adult reader and its quantile bins.
pub fn adult_csv(data: &[u8]) {
    if let Some(t) = text(data) {
        let _ = crate::data::adult::parse_adult(t, "fuzz.csv");
        let _ = crate::data::adult::adult_bin_edges(t, "fuzz.csv");
    }
}

/// The CT-slices reader.
pub fn ct_slices_csv(data: &[u8]) {
    if let Some(t) = text(data) {
        let _ = crate::data::ct_slices::parse_ct_slices(t, "fuzz.csv");
    }
}

/// IDX images and labels (the same bytes read as both).
pub fn idx(data: &[u8]) {
    let _ = crate::data::idx::parse_idx_images(data, "fuzz.idx");
    let _ = crate::data::idx::parse_idx_labels(data, "fuzz.idx");
}

/// An `order,epsilon` RDP curve, and the conversion every caller makes of it.
pub fn rdp_curve(data: &[u8]) {
    if let Some(t) = text(data) {
        if let Ok(curve) = RdpCurve::from_csv(t, "fuzz.csv") {
            let _ = crate::accounting::Accountant::default().epsilon(&curve, 1e-5);
        }
    }
}

/// A command line: arguments separated by NUL bytes after `dptune`. `account` commands run
/// (pure computations, their answer printed); `sim` commands are only parsed, since running
/// them writes results.
pub fn cli_args(data: &[u8]) {
    let Some(t) = text(data) else { return };
    let args: Vec<&str> = std::iter::once("dptune").chain(t.split('\0')).collect();
    if args.get(1) == Some(&"account") {
        let _ = crate::cli::run(args);
    } else {
        let _ = crate::cli::parses(args);
    }
}
