//! The `pareto-front` study end to end on a small SVT file: shared initial points, thread
//! independence, and derived tables recomputed here from the points table.

use dptune::pareto::{hv_lin, hv_log, Objectives, HV_REFERENCE};
use dptune::sim::store;
use dptune::sim::table::Table;
use dptune::sim::Profile;
use std::path::Path;

use crate::common;

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

[[plots]]
name = "hv"
table = "hv_trace.parquet"
facet = "task"
filter = { method = ["dpareto", "random"] }
x = "n_evals"
y = "hv_lin"
series = "tuner"

[[plots.layers]]
table = "summary.parquet"
filter = { method = "grid" }
x = "evals"
series = "tuner"
aggregate = "none"

[[plots]]
name = "fronts"
table = "mean_front.parquet"
facet = "task"
filter = { variant = "mean" }
x = "epsilon"
y = "error"
x_scale = "log"
series = "tuner"
aggregate = "none"
steps = true

[[tables]]
name = "summary"
table = "summary.parquet"
list = [{ column = "tuner" }, { column = "hv_lin", format = "{hv_lin:.4±hv_lin_ci}" }]
"#;

/// The declarations of `FILE` for a file with `reevaluate`.
const REEVALUATED: &str = r#"
[[plots]]
name = "fronts-reevaluated"
table = "mean_front.parquet"
facet = "task"
filter = { variant = "reevaluated" }
x = "epsilon"
y = "error"
x_scale = "log"
series = "tuner"
steps = true

[[tables]]
name = "reevaluated"
table = "summary.parquet"
list = [{ column = "tuner" }, { column = "hv_lin_reeval", digits = 4 }]
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
    // Mean fronts over the seeds: per tuner and variant, ε rising and the error falling; the
    // grid's (one run) is its run's front.
    let mean = read("mean_front.parquet");
    let (mt, mv) = (mean.str("tuner").unwrap(), mean.str("variant").unwrap());
    let (me, mr) = (mean.f64("epsilon").unwrap(), mean.f64("error").unwrap());
    for i in 1..mean.height() {
        if mt[i] == mt[i - 1] && mv[i] == mv[i - 1] {
            assert!(me[i] > me[i - 1] && mr[i] < mr[i - 1], "row {i}");
        }
    }
    let corners = |t: &Table, tv: &[String], vv: &[String], e: &[Option<f64>]| -> Vec<f64> {
        (0..t.height())
            .filter(|&i| tv[i] == "grid" && vv[i] == "mean")
            .map(|i| e[i].unwrap())
            .collect()
    };
    assert_eq!(corners(&mean, mt, mv, me), corners(&front, ft, fv, fe));
    // The file's declared figures and tables over the derived tables.
    for f in ["hv-svt.png", "fronts-svt.svg", "summary.md"] {
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

/// The journal files a killed run left under `out`.
fn journals(out: &Path) -> Vec<std::path::PathBuf> {
    let parts = out.join("pf").join("parts");
    let mut v: Vec<_> = std::fs::read_dir(&parts)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.retain(|p| p.to_string_lossy().ends_with("journal.jsonl"));
    v
}

/// Runs the dptune binary on `file` into `out` with one thread and `extra` arguments.
fn dptune(file: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_dptune"))
        .args([
            "sim",
            "run",
            &file.display().to_string(),
            "--quiet",
            "--threads",
            "1",
        ])
        .args(["--out", &out.display().to_string()])
        .args(extra)
        .output()
        .unwrap()
}

/// A unit killed in the middle resumes from its journal: the same points as an uninterrupted
/// run; the evaluations on record are restored, not redone (their recorded wall times come
/// back); a line torn by the kill is dropped; a record that is not a search's step (an older
/// dptune's, which replayed draws) is recomputed from there; the journals are gone once the
/// units are written.
#[test]
fn a_unit_killed_midway_resumes_from_its_journal() {
    let dir = common::temp_dir("pareto-journal");
    let file = dir.join("pf.toml");
    std::fs::write(&file, FILE).unwrap();
    let whole = common::run_file(&file, Profile::Paper, &dir.join("whole"), 1);
    let whole_points = whole.without_timing();
    for (case, tamper) in ["torn tail", "older record"].into_iter().enumerate() {
        let out = dir.join(format!("killed{case}"));
        // 8 evaluations per DPareto unit, 24 per random one: 11 records are a unit or two in.
        let o = dptune(&file, &out, &["--stop-after-records", "11"]);
        assert_eq!(o.status.code(), Some(137), "{tamper}: not cut short");
        // Units can interleave (rayon runs another while one waits inside): take the
        // longest journal.
        let texts: Vec<(std::path::PathBuf, String)> = journals(&out)
            .into_iter()
            .map(|p| (p.clone(), std::fs::read_to_string(&p).unwrap()))
            .collect();
        let (path, text) = texts
            .iter()
            .max_by_key(|(_, t)| t.lines().count())
            .expect("a journal of the unit cut short");
        let js = [path.clone()];
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.len() >= 2, "{tamper}: {} records", lines.len());
        let record = |l: &str| store::checked_record(l).expect("a checked journal record");
        let recorded: Vec<f64> = lines
            .iter()
            .map(|l| record(l)["oracle_ms"].as_f64().unwrap())
            .collect();
        let replayed = match tamper {
            "torn tail" => {
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&js[0])
                    .unwrap();
                std::io::Write::write_all(&mut f, b"{\"lambda\":[46").unwrap();
                lines.len()
            }
            _ => {
                // Record 1 as an older dptune wrote it (its draws instead of the stream's
                // position and the fits; a checksum that holds, so the journal's reader passes
                // it on): records 1.. are evaluated again.
                let mut r = record(lines[1]);
                let o = r.as_object_mut().unwrap();
                for key in ["objectives", "proposal", "warm", "position", "tuner_ms"] {
                    assert!(o.remove(key).is_some(), "a step record has `{key}`");
                }
                o.insert("draws".into(), serde_json::json!([[1, 8, 3]]));
                let mut text = format!("{}\n{}", lines[0], store::checked_line(&r));
                for l in &lines[2..] {
                    text += &format!("{l}\n");
                }
                std::fs::write(&js[0], text).unwrap();
                1
            }
        };
        let o = dptune(&file, &out, &[]);
        assert!(
            o.status.success(),
            "{tamper}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(journals(&out).is_empty(), "{tamper}: journal left behind");
        let resumed = Table::read_parquet(&out.join("pf").join("points.parquet")).unwrap();
        assert_eq!(
            resumed.without_timing(),
            whole_points,
            "{tamper}: other points"
        );
        // The records kept were answered from the journal: their wall times are the recorded
        // ones, from the first trial of the unit whose first ε is the record's. (Times alone
        // can coincide: they are whole nanoseconds, and the oracle takes microseconds.)
        let wall: Vec<f64> = resumed
            .f64("wall_ms")
            .unwrap()
            .iter()
            .map(|v| v.unwrap())
            .collect();
        let (trial, eps) = (
            resumed.u64("trial").unwrap(),
            resumed.f64("epsilon").unwrap(),
        );
        let first_eps = f64::from_bits(record(lines[0])["objectives"][0].as_u64().unwrap());
        let hits = (0..wall.len())
            .filter(|&i| trial[i] == 0 && eps[i] == Some(first_eps))
            .filter(|&i| wall[i..].starts_with(&recorded[..replayed]))
            .count();
        assert_eq!(hits, 1, "{tamper}: the recorded evaluations were redone");
        if tamper == "older record" {
            let again = (0..wall.len())
                .filter(|&i| wall[i..].starts_with(&recorded[..2]))
                .count();
            assert_eq!(again, 0, "{tamper}: an older record was used");
        }
    }
}

/// `reevaluate = 2`: the search is unchanged (the points table less the new columns is the
/// plain run's); exactly the points of each run's front inside the reference box are
/// re-evaluated, each twice on the fresh streams keyed by task and λ (recomputed here from the
/// oracle); the derived `reevaluated` front and `hv_lin_reeval` are those of the fresh values;
/// a unit killed during its re-evaluations resumes to the same table.
#[test]
fn front_points_are_reevaluated_on_fresh_streams() {
    use dptune::pareto::dpareto::Oracle;
    use dptune::pareto::oracles::SvtOracle;
    use dptune::sim::fields::fnv1a;
    let dir = common::temp_dir("pareto-reeval");
    let file = dir.join("pf.toml");
    std::fs::write(&file, FILE).unwrap();
    let plain = common::run_and_report(&file, Profile::Paper, &dir.join("plain"), 1);
    let with = FILE.replace("seeds = 2\n", "seeds = 2\nreevaluate = 2\n") + REEVALUATED;
    std::fs::write(&file, &with).unwrap();
    let t = common::run_and_report(&file, Profile::Paper, &dir.join("re"), 2);
    let stripped = t.without("reeval_error").without("reeval_n_rep");
    assert_eq!(stripped.without_timing(), plain.without_timing());
    let (tu, s) = (t.str("tuner").unwrap(), t.u64("seed").unwrap());
    let (fresh, n_rep) = (
        t.f64("reeval_error").unwrap(),
        t.u64("reeval_n_rep").unwrap(),
    );
    let summary = Table::read_parquet(&dir.join("re/pf/summary.parquet")).unwrap();
    let mut reevaluated = 0;
    for (tuner, seeds) in [("bo", 2), ("rs", 2), ("grid", 1)] {
        let mut hv = Vec::new();
        for seed in 0..seeds {
            let rows: Vec<usize> = (0..t.height())
                .filter(|&i| tu[i] == tuner && s[i] == seed)
                .collect();
            let p = points(&t, tuner, seed);
            let mut fresh_points = Vec::new();
            for (k, &i) in rows.iter().enumerate() {
                let (lambda, o) = &p[k];
                let dominated = p
                    .iter()
                    .any(|x| x.1[0] <= o[0] && x.1[1] <= o[1] && x.1 != *o);
                let inside = o[0] < HV_REFERENCE[0] && o[1] < HV_REFERENCE[1];
                if dominated || !inside {
                    assert_eq!((n_rep[i], fresh[i]), (0, None), "{tuner} {seed} trial {k}");
                    continue;
                }
                reevaluated += 1;
                assert_eq!(n_rep[i], 2);
                let bytes: Vec<u8> = lambda
                    .iter()
                    .flat_map(|v| v.to_bits().to_le_bytes())
                    .collect();
                let mut svt = SvtOracle {
                    queries: 100,
                    true_queries: 10,
                    orders: 5,
                };
                let errors: Vec<f64> = (0..2u64)
                    .map(|r| {
                        let path = [0x7266_7273, fnv1a(b"svt"), fnv1a(&bytes), r];
                        let mut rng = dptune::rng::stream(7, &path);
                        svt.evaluate(lambda, &mut rng).unwrap().errors[0]
                    })
                    .collect();
                assert_eq!(fresh[i].unwrap(), (errors[0] + errors[1]) / 2.0);
                fresh_points.push([o[0], fresh[i].unwrap()]);
            }
            hv.push(hv_lin(&fresh_points, HV_REFERENCE).unwrap());
        }
        let row = summary
            .str("tuner")
            .unwrap()
            .iter()
            .position(|x| x == tuner)
            .unwrap();
        let got = summary.f64("hv_lin_reeval").unwrap()[row].unwrap();
        let want = hv.iter().sum::<f64>() / hv.len() as f64;
        assert!((got - want).abs() < 1e-12, "{tuner}: {got} vs {want}");
    }
    assert!(reevaluated >= 10, "{reevaluated} points re-evaluated");
    let front = Table::read_parquet(&dir.join("re/pf/front.parquet")).unwrap();
    assert!(front
        .str("variant")
        .unwrap()
        .iter()
        .any(|v| v == "reevaluated"));
    for f in ["reevaluated.md", "fronts-reevaluated-svt.png"] {
        assert!(dir.join("re/pf").join(f).exists(), "{f}");
    }
    assert!(!dir.join("plain/pf/fronts-reevaluated-svt.png").exists());
    // Killed after 10 records, 2 of them re-evaluations of the first DPareto unit (8 points).
    let out = dir.join("killed");
    let o = dptune(&file, &out, &["--stop-after-records", "10"]);
    assert_eq!(o.status.code(), Some(137), "not cut short");
    let o = dptune(&file, &out, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let resumed = Table::read_parquet(&out.join("pf").join("points.parquet")).unwrap();
    assert_eq!(resumed.without_timing(), t.without_timing());
}
