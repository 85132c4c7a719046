//! The CT-slices data (src/data/ct_slices.rs: loader, stand-in) and the `svr-ct-slices`
//! workload (src/workloads/svr_ct_slices.rs): schema and errors, the documented generator, the
//! split and standardisation, the unit-box mapping, per-user losses against fits redone here,
//! the release's law and privacy curve, the oracle, parameter errors, determinism, and a
//! tuning experiment through the harness.

use dptune::accounting::Gaussian;
use dptune::data::ct_slices::{
    ct_slices_csv, load_ct_slices, parse_ct_slices, synthetic_ct_slices, CT_FEATURES, STAND_IN_ROWS,
};
use dptune::learn::svr::{fit, ArdRbf, SvrParams};
use dptune::rng::{normal, stream};
use dptune::sim::Profile as SimProfile;
use dptune::workloads::svr_ct_slices::{Profile, SvrCtSlicesSpec};
use dptune::workloads::{build, Hyper, PerUserLosses, Space, Workload};
use dptune::Error;
use rand::Rng;
use std::path::Path;

use crate::common;

const SAMPLE: &str = "tests/fixtures/ct_slices_sample.csv";
const SEED: u64 = 20261124;

fn table(text: &str) -> toml::Table {
    text.parse().unwrap()
}

/// A small stand-in problem: 120 training and 200 validation rows, `features` features.
fn small_spec(extra: &str) -> SvrCtSlicesSpec {
    SvrCtSlicesSpec::from_params(&table(&format!(
        "n_train = 120\nn_validation = 200\nbest_samples = 4\n{extra}"
    )))
    .unwrap()
}

fn sample_cell(r: usize, j: usize) -> f64 {
    ((r + 1) * (j + 1) % 17) as f64 / 16.0 - 0.25
}

#[test]
fn the_loader_reads_the_schema() {
    let d = load_ct_slices(Path::new(SAMPLE)).unwrap();
    assert_eq!((d.len(), d.n_features()), (5, CT_FEATURES));
    for r in 0..5 {
        for j in 0..CT_FEATURES {
            assert_eq!(d.x[[r, j]], sample_cell(r, j), "row {r} value{j}");
        }
    }
    assert_eq!(d.values().unwrap(), &[0.25, 10.75, 21.25, 31.75, 42.25]);
    // CRLF line ends and a byte-order mark are accepted.
    let text = std::fs::read_to_string(SAMPLE).unwrap();
    let crlf = format!("\u{feff}{}\r\n\r\n", text.trim_end().replace('\n', "\r\n"));
    assert_eq!(parse_ct_slices(&crlf, "x.csv").unwrap(), d);
}

#[test]
fn the_loader_names_file_line_and_problem() {
    let text = std::fs::read_to_string(SAMPLE).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let with_line = |i: usize, line: &str| {
        let mut l: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
        l[i] = line.to_string();
        l.join("\n")
    };
    let msg = |t: &str| parse_ct_slices(t, "ct.csv").unwrap_err().to_string();
    // A row with a cell missing (line 4 = data row 3).
    let short = lines[3].rsplit_once(',').unwrap().0;
    assert_eq!(
        msg(&with_line(3, short)),
        "ct.csv:4: the row has 385 cells; the CT-slices schema has 386 columns: patientId, \
         value0 … value383, reference"
    );
    let long = format!("{},7", lines[2]);
    assert!(msg(&with_line(2, &long)).starts_with("ct.csv:3: the row has 387 cells"));
    // A non-numeric cell: column 10 is value8.
    let mut cells: Vec<&str> = lines[1].split(',').collect();
    cells[9] = "abc";
    assert_eq!(
        msg(&with_line(1, &cells.join(","))),
        "ct.csv:2: cell 10 (`value8`) is `abc`, not a number"
    );
    cells[9] = "";
    assert!(msg(&with_line(1, &cells.join(","))).contains("is empty, not a number"));
    cells[9] = "inf";
    assert!(msg(&with_line(1, &cells.join(","))).contains("not a finite number"));
    // Header problems.
    let header: Vec<&str> = lines[0].split(',').collect();
    assert!(msg(&with_line(0, &header[1..].join(",")))
        .starts_with("ct.csv:1: the header has 385 columns"));
    assert!(msg(&lines[1..].join("\n")).contains("must be the header row"));
    assert!(msg("").starts_with("ct.csv:1: the file is empty"));
    assert!(msg(lines[0]).contains("a header but no rows"));
    let e = load_ct_slices(Path::new("tests/fixtures/no-such-file.csv")).unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e:?}");
}

/// The stand-in follows its documented recipe exactly (recomputed here), has the schema (its
/// CSV form loads back unchanged), and is a function of the seed.
#[test]
fn the_stand_in_is_the_documented_generator() {
    let rows = 3;
    let d = synthetic_ct_slices(7, rows);
    let mut rng = stream(7, &[0x6374_736c]);
    let sd: Vec<f64> = (0..CT_FEATURES)
        .map(|_| 0.1 + 0.9 * rng.random::<f64>())
        .collect();
    for i in 0..rows {
        let z: Vec<f64> = (0..6).map(|_| normal(&mut rng)).collect();
        for j in 0..CT_FEATURES {
            let base = if j % 8 < 6 { z[j % 8] } else { 0.0 };
            assert_eq!(d.x[[i, j]], base + sd[j] * normal(&mut rng), "{i} {j}");
        }
        let g =
            libm::sin(1.5 * z[0]) + 0.5 * z[1] * z[2] + 0.3 * z[3] * z[3] - libm::tanh(2.0 * z[4]);
        assert_eq!(
            d.values().unwrap()[i],
            50.0 + 15.0 * g + 2.0 * normal(&mut rng)
        );
    }

    let full = synthetic_ct_slices(SEED, STAND_IN_ROWS);
    assert_eq!((full.len(), full.n_features()), (10_000, CT_FEATURES));
    assert!(full
        .x
        .iter()
        .chain(full.values().unwrap())
        .all(|v| v.is_finite()));
    assert_eq!(full, synthetic_ct_slices(SEED, STAND_IN_ROWS));
    assert_ne!(full.x.row(0), synthetic_ct_slices(SEED + 1, 1).x.row(0));
    let head = full.select(&(0..50).collect::<Vec<_>>());
    let csv = ct_slices_csv(&head).unwrap();
    assert!(csv.starts_with("patientId,value0,value1,"));
    assert!(csv.lines().next().unwrap().ends_with(",value383,reference"));
    let back = parse_ct_slices(&csv, "stand-in.csv").unwrap();
    assert_eq!((back.x, back.target), (head.x.clone(), head.target.clone()));
}

/// The split, feature subset and standardisation of a seed (module docs).
#[test]
fn each_seed_has_its_split_features_and_training_statistics() {
    let spec = small_spec("features = 10");
    let w = spec.workload(SEED, 1.0).unwrap();
    let s = w.problem().split();
    assert_eq!((s.train_rows.len(), s.validation_rows.len()), (120, 200));
    let mut all: Vec<usize> = s
        .train_rows
        .iter()
        .chain(&s.validation_rows)
        .copied()
        .collect();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), 320, "train and validation are disjoint");
    assert!(s.train_rows.windows(2).all(|w| w[0] < w[1]));
    assert!(s.features.windows(2).all(|w| w[0] < w[1]) && s.features.len() == 10);
    assert!(*s.features.last().unwrap() < CT_FEATURES);
    assert_ne!(s.features, (0..10).collect::<Vec<_>>());
    let other = spec.workload(SEED + 1, 1.0).unwrap();
    assert_ne!(other.problem().split().features, s.features);
    assert_ne!(other.problem().split().train_rows, s.train_rows);
    // The code profile takes the first columns.
    let code = small_spec("profile = \"code\"")
        .workload(SEED, 1.0)
        .unwrap();
    assert_eq!(code.problem().split().features, (0..19).collect::<Vec<_>>());

    // Training statistics: training columns have mean 0 and sd 1; validation values use them.
    let data = synthetic_ct_slices(SEED, STAND_IN_ROWS);
    for (j, &f) in s.features.iter().enumerate() {
        let col = s.train_x.column(j);
        let m = col.mean().unwrap();
        let sd = (col.mapv(|v| (v - m).powi(2)).mean().unwrap()).sqrt();
        assert!(m.abs() < 1e-12 && (sd - 1.0).abs() < 1e-12, "{j}: {m} {sd}");
        let raw: Vec<f64> = s.train_rows.iter().map(|&r| data.x[[r, f]]).collect();
        let rm = raw.iter().sum::<f64>() / 120.0;
        let rsd = (raw.iter().map(|v| (v - rm).powi(2)).sum::<f64>() / 120.0).sqrt();
        let v = s.validation_rows[3];
        assert!((s.validation_x[[3, j]] - (data.x[[v, f]] - rm) / rsd).abs() < 1e-12);
    }
    let y = data.values().unwrap();
    let raw: Vec<f64> = s.train_rows.iter().map(|&r| y[r]).collect();
    let rm = raw.iter().sum::<f64>() / 120.0;
    let rsd = (raw.iter().map(|v| (v - rm).powi(2)).sum::<f64>() / 120.0).sqrt();
    for (i, &r) in s.validation_rows.iter().enumerate() {
        assert!((s.validation_y[i] - (y[r] - rm) / rsd).abs() < 1e-12);
    }
    assert!(s.train_y.mean().unwrap().abs() < 1e-12);
}

/// θ = lo + u(hi − lo) onto the spec's boxes, and the per-user losses at u are those of the
/// SVR fitted here with exp(θ).
#[test]
fn unit_box_points_map_to_the_native_box_and_to_the_fit() {
    let w = small_spec("features = 10").workload(SEED, 1.0).unwrap();
    let p = w.problem();
    assert_eq!(w.space(), &Space::UnitBox { dim: 13 });
    let (ln_eps, ln_c, ln_gamma) = (
        (libm::log(0.01f64), 0.0),
        (libm::log(0.1f64), libm::log(3.0f64)),
        (libm::log(0.01f64), libm::log(5.0f64)),
    );
    let mut want = vec![(-2.0, 2.0); 10];
    want.extend([ln_eps, ln_c, ln_gamma]);
    assert_eq!(PerUserLosses::domain(&w), &want[..]);
    for (end, pick) in [(0.0, 0), (1.0, 1)] {
        for (t, b) in p.theta(&[end; 13]).unwrap().iter().zip(&want) {
            let want = if pick == 0 { b.0 } else { b.1 };
            assert!((t - want).abs() <= 1e-15, "{t} vs {want}");
        }
    }
    let code = small_spec("profile = \"code\"")
        .workload(SEED, 1.0)
        .unwrap();
    assert_eq!(code.space().dim(), 22);
    assert_eq!(PerUserLosses::domain(&code)[0], (-3.0, 3.0));
    assert_eq!(PerUserLosses::domain(&code)[21], ln_gamma);

    let mut rng = stream(3, &[]);
    let points: Vec<Hyper> = (0..3)
        .map(|_| (0..13).map(|_| rng.random::<f64>()).collect())
        .collect();
    let losses = w.user_losses(&points, &mut rng).unwrap();
    assert_eq!(losses.dim(), (200, 3));
    assert_eq!(w.n_users(), 200);
    assert_eq!(w.evaluation_sd(), 0.0);
    let s = p.split();
    for (k, u) in points.iter().enumerate() {
        let theta: Vec<f64> = u
            .iter()
            .zip(&want)
            .map(|(v, (lo, hi))| lo + v * (hi - lo))
            .collect();
        let kernel = ArdRbf::new(
            libm::exp(theta[12]),
            theta[..10].iter().map(|t| libm::exp(*t)).collect(),
        )
        .unwrap();
        let params = SvrParams::new(libm::exp(theta[11]), libm::exp(theta[10])).unwrap();
        let svr = fit(s.train_x.view(), s.train_y.view(), &kernel, &params).unwrap();
        let f = svr.predict(s.validation_x.view()).unwrap();
        for i in 0..200 {
            let r = s.validation_y[i] - f[i];
            assert!(
                (losses[[i, k]] - 0.5 * r * r).abs() <= 1e-12 * (1.0 + r * r),
                "{i} {k}"
            );
        }
        let mean = losses.column(k).mean().unwrap();
        assert!((w.oracle().utility(u) + mean).abs() <= 1e-12 * mean);
    }
    // Hyperparameters change the fit: the objective is not flat.
    let means: Vec<f64> = (0..3).map(|k| losses.column(k).mean().unwrap()).collect();
    assert!(means[0] != means[1] && means[1] != means[2], "{means:?}");
}

/// On the stand-in, short lengthscales on the informative columns and long ones on the
/// pure-noise columns (6, 7, 14, 15 of the first 19) fit better than the reverse.
#[test]
fn lengthscales_matter_on_the_stand_in() {
    let spec = SvrCtSlicesSpec::from_params(&table(
        "profile = \"code\"\nn_train = 300\nn_validation = 200\nbest_samples = 1",
    ))
    .unwrap();
    let w = spec.workload(SEED, 1.0).unwrap();
    let noise = [6, 7, 14, 15];
    let point = |informative: f64, irrelevant: f64| -> Hyper {
        let mut u: Vec<f64> = (0..19)
            .map(|j| {
                if noise.contains(&j) {
                    irrelevant
                } else {
                    informative
                }
            })
            .collect();
        u.extend([0.5, 0.8, 0.3]);
        u
    };
    let good = -w.oracle().utility(&point(0.6, 1.0));
    let bad = -w.oracle().utility(&point(1.0, 0.2));
    eprintln!("mean loss: informative short {good:.4}, reversed {bad:.4}");
    assert!(good < 0.8 * bad, "good {good} bad {bad}");
}

/// One run releases the clipped mean plus N(0, (zR/n)²) and is the Gaussian mechanism with
/// Δ = R/n, σ = zΔ: ε(α) = α/(2z²).
#[test]
fn a_run_is_the_gaussian_mechanism_on_the_clipped_mean() {
    let z = 1.7;
    let w = small_spec("features = 6\nclip = 0.5")
        .workload(SEED, z)
        .unwrap();
    let training = w.private_training().unwrap();
    let release = w.release();
    assert_eq!(release.records(), 200);
    assert_eq!(release.sensitivity(), 0.5 / 200.0);
    assert!((release.sigma() - z * 0.5 / 200.0).abs() < 1e-15);
    let gaussian = Gaussian::new(0.5 / 200.0, z * 0.5 / 200.0).unwrap().rdp();
    for order in [1.5, 2.0, 10.0, 64.0] {
        let got = crate::common::run_curve(training).eval(order).unwrap();
        assert_eq!(got, gaussian.eval(order).unwrap());
        assert!((got - order / (2.0 * z * z)).abs() < 1e-12 * got, "{order}");
    }
    let u = vec![0.3; 9];
    let losses = w.problem().validation_losses(&u).unwrap();
    let clipped = -losses.iter().map(|l| l.min(0.5)).sum::<f64>() / 200.0;
    assert_eq!(w.problem().clipped_score(&u).unwrap(), clipped);
    assert!(
        losses.iter().any(|&l| l > 0.5),
        "R = 0.5 must clip some losses"
    );
    let n = 20_000;
    let mut rng = stream(5, &[]);
    let xs: Vec<f64> = (0..n).map(|_| training.train(&u, &mut rng)).collect();
    let mean = xs.iter().sum::<f64>() / n as f64;
    let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
    let want_sd = release.sigma();
    assert!((sd / want_sd - 1.0).abs() < 0.025, "sd {sd} vs {want_sd}");
    assert!((mean - clipped).abs() < 5.0 * want_sd / (n as f64).sqrt());
}

/// The best utility is the best over the documented seeded sample; points off the box give no
/// model (NaN utility, an error for per-user losses) and a data-independent release.
#[test]
fn oracle_and_points_off_the_box() {
    let w = small_spec("features = 4").workload(SEED, 2.0).unwrap();
    let mut rng = stream(SEED, &[0x7376_7263, 1]);
    let sample: Vec<Hyper> = (0..4)
        .map(|_| (0..7).map(|_| rng.random::<f64>()).collect())
        .collect();
    let best = sample
        .iter()
        .map(|u| w.oracle().utility(u))
        .fold(f64::NEG_INFINITY, f64::max);
    assert_eq!(w.oracle().best_utility(), best);
    assert!(best < 0.0);

    for off in [vec![0.5; 6], vec![1.5; 7], vec![f64::NAN; 7], vec![-0.1; 7]] {
        assert!(w.oracle().utility(&off).is_nan(), "{off:?}");
        let e = w
            .user_losses(&[vec![0.5; 7], off.clone()], &mut rng)
            .unwrap_err();
        assert!(e.to_string().contains("7 numbers in [0, 1]"), "{e}");
    }
    let training = w.private_training().unwrap();
    let n = 4000;
    let mean = (0..n)
        .map(|_| training.train(&vec![2.0; 7], &mut rng))
        .sum::<f64>()
        / n as f64;
    let sd = w.release().sigma();
    assert!((mean + 2.0).abs() < 5.0 * sd / (n as f64).sqrt(), "{mean}");
}

#[test]
fn bad_parameters_are_named() {
    let msg = |extra: &str| match SvrCtSlicesSpec::from_params(&table(extra)) {
        Ok(_) => panic!("accepted {extra}"),
        Err(e) => e.to_string(),
    };
    assert_eq!(
        msg("profile = \"fast\""),
        "invalid profile = fast: must be \"paper\" or \"code\""
    );
    assert!(msg("n_train = 0").starts_with("invalid n_train = 0: must be an integer in [1, 5000]"));
    assert!(msg("n_train = 5001").starts_with("invalid n_train = 5001"));
    let negative = msg("n_train = -3");
    assert!(
        negative.contains("`n_train`: invalid value: integer `-3`"),
        "{negative}"
    );
    assert!(msg("n_validation = 0").starts_with("invalid n_validation = 0"));
    assert_eq!(
        msg("n_train = 2000\nn_validation = 9000"),
        "invalid n_train + n_validation = 11000: must be at most the 10000 rows of the data"
    );
    assert!(msg("features = 0").starts_with("invalid features = 0: must be an integer in [1, 384]"));
    assert!(msg("features = 385").starts_with("invalid features = 385"));
    assert!(msg("clip = 0").starts_with("invalid clip = 0"));
    assert!(msg("clip = -1").starts_with("invalid clip = -1"));
    assert!(msg("best_samples = 0").starts_with("invalid best_samples = 0"));
    assert!(msg("noise = 0").starts_with("invalid noise = 0"));
    assert!(msg("n_features = 3").contains("has no parameter `n_features`"));
    assert!(msg("path = \"tests/fixtures/none.csv\"").starts_with("tests/fixtures/none.csv:"));
    let e = msg(&format!("path = \"{SAMPLE}\""));
    assert!(e.contains("at most the 5 rows of the data"), "{e}");
    // A real-schema file with enough rows works.
    let spec = SvrCtSlicesSpec::from_params(&table(&format!(
        "path = \"{SAMPLE}\"\nn_train = 2\nn_validation = 3\nfeatures = 5\nbest_samples = 1"
    )))
    .unwrap();
    let w = spec.workload(1, 1.0).unwrap();
    assert_eq!(w.name(), "svr-ct-slices(ct-slices)");
    assert_eq!(w.n_users(), 3);
    assert!(w.oracle().best_utility().is_finite());
    // Registered under its kind.
    let spec = build("svr-ct-slices", &table("n_train = 20\nn_validation = 30")).unwrap();
    assert_eq!(spec.kind(), "svr-ct-slices");
    let v = spec.variants();
    assert_eq!(
        (v.len(), v[0].label.as_str(), v[0].dim),
        (1, "stand-in", 103)
    );
    assert_eq!(Profile::parse("code").unwrap().default_features(), 19);
}

/// The same per-user losses with 1 or 4 threads and from two specs, bit for bit.
#[test]
fn evaluations_are_deterministic() {
    let points: Vec<Hyper> = vec![vec![0.2; 9], vec![0.7; 9], vec![0.45; 9]];
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let w = small_spec("features = 6").workload(SEED, 1.0).unwrap();
            let losses = w.user_losses(&points, &mut stream(0, &[])).unwrap();
            (losses, w.oracle().best_utility())
        })
    };
    let one = run(1);
    assert_eq!(one, run(4));
}

/// Naive random search on the workload through the harness at equal budgets.
#[test]
fn a_tuning_experiment_runs_on_the_svr() {
    let dir = common::temp_dir("svr-ct");
    let path = dir.join("exp.toml");
    std::fs::write(
        &path,
        "name = \"svr\"\nkind = \"tuning\"\nseed = 11\nseeds = 2\ndelta = 1e-6\n\
         [budget]\nepsilons = [1, 4]\n[workload]\nkind = \"svr-ct-slices\"\nn_train = 60\n\
         n_validation = 100\nfeatures = 5\nbest_samples = 3\n\
         [[tuners]]\ntuner = \"naive\"\ncandidates = 3\n",
    )
    .unwrap();
    let t = common::run_file(&path, SimProfile::Smoke, &dir.join("out"), 2);
    std::fs::remove_dir_all(dir).unwrap();
    assert_eq!(t.height(), 2 * 2);
    let (utility, best) = (t.f64("utility").unwrap(), t.f64("best_utility").unwrap());
    let (eps, target) = (t.f64("epsilon").unwrap(), t.f64("target_epsilon").unwrap());
    for i in 0..t.height() {
        assert!(utility[i].unwrap() < 0.0 && best[i].unwrap() < 0.0);
        assert!(eps[i].unwrap() <= target[i].unwrap() + 1e-12);
    }
    assert!(t.u64("dim").unwrap().iter().all(|&d| d == 8));
    assert!(t
        .str("workload")
        .unwrap()
        .iter()
        .all(|k| k == "svr-ct-slices"));
}
