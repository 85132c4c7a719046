//! The `Study` trait: what every experiment kind implements and the one runner drives.
//!
//! A study lists its units (each named by a content key), computes a tidy table per unit, and
//! reports from the merged parquet. The runner (`sim::run`) gives every study the same
//! machinery: one atomic, checksummed part per unit, resume, `--shard`, a canonical merge, a
//! checked manifest and a lock. Three shapes cover the kinds so far:
//! * a closed-form sweep over a product of lists (one unit, or one per list entry);
//! * replicated Monte Carlo: one unit per configuration (its repetitions inside), or per
//!   (configuration, repetition) when one repetition is expensive;
//! * a per-iteration trace: one unit per (variant, series, repetition), one row per iteration.

use super::table::Table;
use crate::error::Result;
use std::any::Any;

/// The two profiles: a fast smoke run (CI) and the full paper run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    Smoke,
    Paper,
}

impl Profile {
    pub const ALL: [Profile; 2] = [Profile::Smoke, Profile::Paper];

    pub fn name(self) -> &'static str {
        match self {
            Profile::Smoke => "smoke",
            Profile::Paper => "paper",
        }
    }
}

/// The most units one experiment may plan (each is a part file and a task for the runner).
pub const MAX_UNITS: u64 = 1_000_000;

/// The parsed configuration as `Any`, for tests and tools that need a known kind's
/// (every study has it).
pub trait AsAny {
    fn as_any(&self) -> &dyn Any;
}

// For studies only: a `Box<dyn Study>` must reach its study's `as_any`, not its own.
impl<T: Study + 'static> AsAny for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// One experiment kind, parsed from its file.
pub trait Study: Send + Sync + AsAny {
    /// The units in canonical order (the order their rows are merged in). Each key names what
    /// the unit computes, not its position, and is unique in the study: a part file is found by
    /// its key's hash, so an edit that changes a unit never reuses another unit's rows.
    fn units(&self) -> Vec<String>;

    /// How many units [`Study::units`] lists, computed from the study's counts without listing
    /// them where they are a product (repetitions × series × variants …): each count is bounded
    /// on its own, and the harness refuses a product above [`MAX_UNITS`] before anything is
    /// allocated. Saturates instead of overflowing.
    fn unit_count(&self) -> u64 {
        self.units().len() as u64
    }

    /// The rows of unit `i`. Deterministic: identical for any thread count, shard or order in
    /// which units run (each unit draws from its own streams).
    fn run_unit(&self, experiment: &str, i: usize) -> Result<Table>;

    /// [`Study::run_unit`] as the harness calls it, with the unit's journal: a study whose
    /// units are long records its progress there as it goes and, finding records of an
    /// earlier attempt, resumes from them with the same rows as an uninterrupted run. The
    /// default ignores the journal.
    fn run_unit_journaled(
        &self,
        experiment: &str,
        i: usize,
        _journal: &mut super::store::Journal,
    ) -> Result<Table> {
        self.run_unit(experiment, i)
    }

    /// The file name (under the results folder) of the merged table.
    fn output(&self) -> &'static str;

    /// Further tables computed from the merged one (cheap, deterministic), written beside it.
    fn derive(&self, _experiment: &str, _merged: &Table) -> Result<Vec<(&'static str, Table)>> {
        Ok(Vec::new())
    }

    /// The names of the derived tables (known before running: they are moved aside with the
    /// rest when the configuration changes).
    fn derived(&self) -> Vec<&'static str> {
        Vec::new()
    }

    /// Checks what parsing cannot (e.g. that the workload offers each tuner's capability) before
    /// anything runs; on failure, the field to blame (`tuners[1]`) and the reason.
    fn check(&self) -> std::result::Result<(), (String, crate::error::Error)> {
        Ok(())
    }
}
