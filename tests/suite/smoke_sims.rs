//! The smoke run of every shipped experiment file (`sims/*.toml` and the GPU-sized
//! `sims/gpu/*.toml`, whose smoke profiles run on the CPU), one test per file so that they run
//! side by side, through the `dptune` binary the tests already built (`just sims-smoke` runs
//! the same from the command line).

use crate::common;

use std::path::Path;
use std::process::Command;

fn smoke(file: &str) {
    let name = Path::new(file)
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .to_string();
    let out = common::temp_dir(&format!("smoke-{name}"));
    let o = Command::new(env!("CARGO_BIN_EXE_dptune"))
        .args(["sim", "run", file, "--profile", "smoke", "--quiet", "--out"])
        .arg(&*out)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{file}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        out.join(&name).join("manifest.json").is_file(),
        "{file}: no results written"
    );
    // DP-SGD tuned at equal budgets calibrates σ per tuner: no reference is common to the
    // tuners, so no regret is drawn and the utility table says why.
    if name.starts_with("dpsgd-equal-budget") {
        let folder = out.join(&name);
        let names: Vec<String> = std::fs::read_dir(&folder)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .collect();
        assert!(!names.iter().any(|n| n.starts_with("regret-")), "{names:?}");
        let utility = names
            .iter()
            .find(|n| n.starts_with("utility-") && n.ends_with(".md"));
        let text = std::fs::read_to_string(folder.join(utility.expect("a utility table"))).unwrap();
        assert!(text.contains("no regret is reported"), "{text}");
    }
}

macro_rules! smoke_tests {
    ($($test:ident: $file:literal),* $(,)?) => {
        /// Every shipped file has its smoke test below.
        #[test]
        fn every_shipped_file_has_a_smoke_test() {
            let mut listed: Vec<&str> = vec![$($file),*];
            listed.sort();
            let shipped: Vec<String> = common::shipped_experiment_files()
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            assert_eq!(shipped, listed, "add the new file to tests/suite/smoke_sims.rs");
        }
        $(
            #[test]
            fn $test() {
                smoke($file);
            }
        )*
    };
}

smoke_tests! {
    dpareto_fig1_lr_maps: "sims/dpareto-fig1-lr-maps.toml",
    dpareto_fig2_svt_maps: "sims/dpareto-fig2-svt-maps.toml",
    dpareto_fig5_adult: "sims/dpareto-fig5-adult.toml",
    dpareto_fig6_adult_grids: "sims/dpareto-fig6-adult-grids.toml",
    dpareto_svt_fronts: "sims/dpareto-svt-fronts.toml",
    dpsgd_equal_budget: "sims/dpsgd-equal-budget.toml",
    dpsgd_replay_adult: "sims/dpsgd-replay-adult.toml",
    dpsgd_table_adult: "sims/dpsgd-table-adult.toml",
    dw_table1_budgets: "sims/dw-table1-budgets.toml",
    dw_walks_low_noise: "sims/dw-walks-low-noise.toml",
    dw_walks: "sims/dw-walks.toml",
    gibo_equal_budget: "sims/gibo-equal-budget.toml",
    gibo_fig1_dims: "sims/gibo-fig1-dims.toml",
    gibo_fig2_gp_lengthscales: "sims/gibo-fig2-gp-lengthscales.toml",
    gibo_fig2_noise_sweep: "sims/gibo-fig2-noise-sweep.toml",
    gibo_fig2_svr: "sims/gibo-fig2-svr.toml",
    gibo_fig3_normal_location: "sims/gibo-fig3-normal-location.toml",
    gibo_fig4_robust_regression: "sims/gibo-fig4-robust-regression.toml",
    gibo_fig5_misspecified: "sims/gibo-fig5-misspecified.toml",
    gp_random_search: "sims/gp-random-search.toml",
    gp_regression_random_search: "sims/gp-regression-random-search.toml",
    kusner_bounds: "sims/kusner-bounds.toml",
    kusner_lipschitz: "sims/kusner-lipschitz.toml",
    kusner_suite: "sims/kusner-suite.toml",
    privacy_audit: "sims/privacy-audit.toml",
    ps_fig1_svm_alpha: "sims/ps-fig1-svm-alpha.toml",
    ps_fig2_rdp_by_order: "sims/ps-fig2-rdp-by-order.toml",
    ps_fig3_rdp_by_distribution: "sims/ps-fig3-rdp-by-distribution.toml",
    ps_fig4_mean_vs_epsilon: "sims/ps-fig4-mean-vs-epsilon.toml",
    ps_fig5_quantile_vs_epsilon: "sims/ps-fig5-quantile-vs-epsilon.toml",
    ps_fig6_success_vs_epsilon: "sims/ps-fig6-success-vs-epsilon.toml",
    ps_fig7_lr_search: "sims/ps-fig7-lr-search.toml",
    ps_fig8_conditional_sampling: "sims/ps-fig8-conditional-sampling.toml",
    svm_random_search: "sims/svm-random-search.toml",
    dpareto_fig5_fmnist: "sims/gpu/dpareto-fig5-fmnist.toml",
    dpsgd_equal_budget_fmnist: "sims/gpu/dpsgd-equal-budget-fmnist.toml",
    ps_fig7_fmnist_mlp: "sims/gpu/ps-fig7-fmnist-mlp.toml",
}
