//! The `pareto-front` study end to end on a small SVT file: shared initial points, thread
//! independence, and derived tables recomputed here from the points table.

use dptune::pareto::{hv_lin, hv_log, Objectives, HV_REFERENCE};
use dptune::sim::table::Table;
use dptune::sim::Profile;
use std::path::Path;

mod common;

const FILE: &str = r#"
name = "pf"
title = "test"
kind = "pareto-front"
oracle = "svt"
orders = 5
seed = 7
seeds = 2

[[tuners]]
method = "dpareto"
label = "bo"
initial = 5
iterations = 3
candidates = 200
fit_restarts = 0

[[tuners]]
method = "random"
label = "rs"
count = 24

[[tuners]]
method = "grid"
label = "grid"
points = 3
"#;

fn points(t: &Table, tuner: &str, seed: u64) -> Vec<(Vec<f64>, Objectives)> {
    let (tu, s) = (t.str("tuner").unwrap(), t.u64("seed").unwrap());
    let (c, b) = (t.f64("cutoff").unwrap(), t.f64("b").unwrap());
    let (e, r) = (t.f64("epsilon").unwrap(), t.f64("error").unwrap());
    (0..t.height())
        .filter(|&i| tu[i] == tuner && s[i] == seed)
        .map(|i| {
            (
                vec![c[i].unwrap(), b[i].unwrap()],
                [e[i].unwrap(), r[i].unwrap()],
            )
        })
        .collect()
}

#[test]
fn svt_fronts_share_initial_points_and_derive_consistent_tables() {
    let dir = common::temp_dir("pareto-front");
    let file = dir.join("pf.toml");
    std::fs::write(&file, FILE).unwrap();
    let one = common::run_and_report(&file, Profile::Paper, &dir.join("one"), 1);
    let two = common::run_file(&file, Profile::Paper, &dir.join("two"), 2);
    assert_eq!(one.without_timing(), two.without_timing());
    // Grid once, the others per seed.
    assert_eq!(one.height(), 2 * (8 + 24) + 9);
    for seed in 0..2 {
        let bo = points(&one, "bo", seed);
        let rs = points(&one, "rs", seed);
        assert_eq!(bo.len(), 8);
        // DPareto's 5 initial points are random sampling's first 5, evaluations included.
        assert_eq!(bo[..5], rs[..5]);
        assert_ne!(bo[5..], rs[5..8]);
    }
    let out = dir.join("one").join("pf");
    let read = |name: &str| Table::read_parquet(&out.join(name)).unwrap();
    // hv_trace: the hypervolumes of each prefix, recomputed here.
    let trace = read("hv_trace.parquet");
    let (tu, s, n) = (
        trace.str("tuner").unwrap(),
        trace.u64("seed").unwrap(),
        trace.u64("n_evals").unwrap(),
    );
    let (lin, log) = (trace.f64("hv_lin").unwrap(), trace.f64("hv_log").unwrap());
    assert_eq!(trace.height(), one.height());
    for i in 0..trace.height() {
        let p: Vec<Objectives> = points(&one, &tu[i], s[i])
            .into_iter()
            .map(|x| x.1)
            .take(n[i] as usize)
            .collect();
        assert_eq!(lin[i].unwrap(), hv_lin(&p, HV_REFERENCE).unwrap());
        assert_eq!(log[i].unwrap(), hv_log(&p, HV_REFERENCE).unwrap());
        if i > 0 && tu[i] == tu[i - 1] && s[i] == s[i - 1] {
            assert!(lin[i] >= lin[i - 1], "hv fell at row {i}");
        }
    }
    // Table 2: 48 random points in chunks of 8 against each DPareto seed.
    let diff = read("hv_diff.parquet");
    assert_eq!(diff.height(), 3);
    assert_eq!(diff.u64("n_chunks").unwrap(), &[6, 6, 6]);
    let pool: Vec<Objectives> = (0..2)
        .flat_map(|s| points(&one, "rs", s).into_iter().map(|x| x.1))
        .collect();
    let chunk_mean = pool
        .chunks(8)
        .map(|c| hv_lin(c, HV_REFERENCE).unwrap())
        .sum::<f64>()
        / 6.0;
    for seed in 0..2u64 {
        let bo: Vec<Objectives> = points(&one, "bo", seed).into_iter().map(|x| x.1).collect();
        let want = hv_lin(&bo, HV_REFERENCE).unwrap() - chunk_mean;
        let got = diff.f64("mean_diff").unwrap()[seed as usize].unwrap();
        assert!((got - want).abs() < 1e-12, "seed {seed}: {got} vs {want}");
        let (lo, hi) = (
            diff.f64("ci_lo").unwrap()[seed as usize].unwrap(),
            diff.f64("ci_hi").unwrap()[seed as usize].unwrap(),
        );
        assert!(lo < got && got < hi);
    }
    // Fronts: every mean-front corner is an evaluated point that no other point dominates.
    let front = read("front.parquet");
    let (ft, fs, fv) = (
        front.str("tuner").unwrap(),
        front.u64("seed").unwrap(),
        front.str("variant").unwrap(),
    );
    let (fe, fr) = (front.f64("epsilon").unwrap(), front.f64("error").unwrap());
    for i in (0..front.height()).filter(|&i| fv[i] == "mean") {
        let p = points(&one, &ft[i], fs[i]);
        let c = [fe[i].unwrap(), fr[i].unwrap()];
        assert!(p.iter().any(|x| x.1 == c));
        assert!(!p
            .iter()
            .any(|x| x.1[0] <= c[0] && x.1[1] <= c[1] && x.1 != c));
    }
    for f in [
        "hv-svt.png",
        "fronts-svt.svg",
        "summary.md",
        "hv-diff.md",
        "efficiency.md",
    ] {
        assert!(Path::new(&out.join(f)).exists(), "{f}");
    }
}

#[test]
fn bad_tuners_are_named() {
    let dir = common::temp_dir("pareto-front-bad");
    for (edit, want) in [
        (
            ("method = \"grid\"", "method = \"lattice\""),
            "tuners[2].method",
        ),
        (
            ("count = 24", "count = 24\ndesign = \"table9\""),
            "tuners[1].design",
        ),
        (
            ("iterations = 3", "iterations = 3\nprivacy = \"dp\""),
            "tuners[0].privacy",
        ),
        (
            ("label = \"grid\"", "label = \"rs\""),
            "two tuners are labelled `rs`",
        ),
        (("oracle = \"svt\"", "oracle = \"svm\""), "oracle"),
    ] {
        let file = dir.join("bad.toml");
        std::fs::write(&file, FILE.replace(edit.0, edit.1)).unwrap();
        let e = match dptune::sim::load(&file, Profile::Paper) {
            Ok(_) => panic!("{want}: accepted"),
            Err(e) => e.to_string(),
        };
        assert!(e.contains(want), "{want}: {e}");
    }
}

/// The DP-SGD task oracle on the committed Adult sample: `rows` keeps the first rows (ε uses
/// that n), more rows than the data have is an error naming `rows`, and `max_epochs` caps T.
#[test]
fn task_oracle_rows_and_epoch_cap() {
    let dir = common::temp_dir("pareto-front-rows");
    let file = dir.join("rows.toml");
    let text = |rows: &str| {
        format!(
            r#"
name = "rows"
title = "test"
kind = "pareto-front"
oracle = "dpsgd-task"
tasks = ["adult-lr-sgd"]
adult = ["tests/fixtures/real_data/adult-sample.data", "tests/fixtures/real_data/adult-sample.test"]
rows = {rows}
max_epochs = 3
replicates = 2
seed = 3

[[tuners]]
method = "random"
design = "table4-adult"
count = 6
"#
        )
    };
    std::fs::write(&file, text("[200, 50]")).unwrap();
    let t = common::run_file(&file, Profile::Paper, &dir.join("ok"), 1);
    assert_eq!(t.height(), 6);
    let epochs = t.f64("epochs").unwrap();
    let lots = t.f64("lot_size").unwrap();
    for i in 0..6 {
        assert!((1.0..=3.0).contains(&epochs[i].unwrap()));
        assert!((8.0..=200.0).contains(&lots[i].unwrap()));
    }
    assert!(t.u64("n_rep").unwrap().iter().all(|&n| n == 2));
    std::fs::write(&file, text("[600, 50]")).unwrap();
    let exp = dptune::sim::load(&file, Profile::Paper).unwrap_or_else(|e| panic!("{e}"));
    let e = dptune::sim::run(
        &exp,
        &common::options(
            Profile::Paper,
            &dir.join("bad"),
            1,
            dptune::sim::Shard::parse("1/1").unwrap(),
        ),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("rows") && e.contains("500"), "{e}");
}
