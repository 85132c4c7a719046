//! Every study kind, one file each, registered here with one line. A study parses its file's
//! fields into a [`Study`]; the runner and the reports never name a kind.

pub mod conditional_sampling;
pub mod curves;
pub mod dpsgd_replay;
pub mod dpsgd_table;
pub mod gibo;
pub mod gp_ucb;
pub mod lipschitz;
pub mod lr_search;
pub mod pareto_front;
pub mod pareto_maps;
pub mod privacy_audit;
pub mod propose_test_doubling;
pub mod svm_alpha;
pub mod tuning;

use super::fields::Fields;
use super::study::Study;
use crate::error::Result;

/// A registered study kind: the `kind` of an experiment file and its parser.
pub struct StudyKind {
    /// The file that defines the kind (`file!()`): its results depend on the code this file
    /// reaches (`sim::provenance::Code`).
    pub source: &'static str,
    pub name: &'static str,
    /// One line for `sims/README.md` and error messages.
    pub about: &'static str,
    pub(crate) parse: fn(&Fields) -> Result<Box<dyn Study>>,
}

/// The registry (the order of `sims/README.md`'s index).
pub const STUDIES: &[StudyKind] = &[
    tuning::KIND,
    curves::KIND,
    conditional_sampling::KIND,
    gp_ucb::BOUNDS,
    gp_ucb::SUITE,
    lipschitz::KIND,
    svm_alpha::KIND,
    lr_search::KIND,
    propose_test_doubling::WALKS,
    propose_test_doubling::BUDGETS,
    gibo::KIND,
    pareto_front::KIND,
    pareto_maps::KIND,
    privacy_audit::KIND,
    dpsgd_table::KIND,
    dpsgd_replay::KIND,
];

/// The kind called `name`.
pub fn find(name: &str) -> Option<&'static StudyKind> {
    STUDIES.iter().find(|k| k.name == name)
}

/// Every kind's name, for messages: "`tuning`, `curves`, … or `gibo-paths`".
pub fn names() -> String {
    let quoted: Vec<String> = STUDIES.iter().map(|k| format!("`{}`", k.name)).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => quoted.join(""),
    }
}
