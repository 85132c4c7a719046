//! Every integration test, in one test binary: each file below was a binary of its own, and
//! compiling and linking ~40 binaries against the library and its dependencies was a large
//! part of CI's build. Each file keeps its own doc comment; `common` holds what they share.
//! (`tests/gpu_engine.rs` stays apart: it needs the `cuda` feature.)

mod common;

mod accounting_fixture;
mod accounting_goldens;
mod accounting_wor;
mod classifiers;
mod cli;
mod conditional_sampling;
mod data;
mod docs;
mod dpsgd_benchmark;
mod dpsgd_table;
mod dpsgd_tasks;
mod findings;
mod fuzz_corpus;
mod gibo_sims;
mod gp;
mod gp_fit;
mod kusner;
mod learn_sims;
mod pareto_front;
mod per_user_workloads;
mod pld;
mod precision;
mod privacy_audit;
mod propose_test;
mod provenance;
mod real_data;
mod real_workloads;
mod regenerate_committed;
mod regularised_erm;
mod selection_audit;
mod selection_bounds;
mod selection_count;
mod selection_fixture;
mod selection_properties;
mod sim;
mod sim_kinds;
mod sim_safety;
mod slurm;
mod smoke_sims;
mod stats_fixture;
mod svr;
mod svr_ct_slices;
mod tune;
mod tuners;
