//! The `dptune` binary: JSON output, the statement in words, and one-line errors for bad input.

use std::process::Command;

/// `dptune ARGS` (split at spaces): its exit code, stdout and stderr (other modules use it too).
pub(crate) fn dptune(args: &str) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_dptune"))
        .args(args.split_whitespace())
        .output()
        .expect("binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json(args: &str) -> serde_json::Value {
    let (code, stdout, stderr) = dptune(args);
    assert_eq!(code, 0, "{args}: {stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{args}: not JSON ({e}): {stdout}"))
}

const MNIST: &str = "account dpsgd --sampling-rate 0.004266666666666667 --noise-multiplier 1.1 --steps 14063 --delta 1e-5";

#[test]
fn dpsgd_json_reproduces_the_spec_golden_on_dp_accounting_orders() {
    let v = json(&format!("{MNIST} --orders dp-accounting --json"));
    assert!(
        (v["epsilon"].as_f64().unwrap() - 2.596656).abs() < 5e-7,
        "{v}"
    );
    assert_eq!(v["order"].as_f64(), Some(8.1));
    assert_eq!(v["delta"].as_f64(), Some(1e-5));
    assert_eq!(v["accountant"], "rdp/cks/dp-accounting-0.6.0-orders");
    let default = json(&format!("{MNIST} --json"));
    assert!(default["epsilon"].as_f64().unwrap() <= v["epsilon"].as_f64().unwrap());
    assert_eq!(default["accountant"], "rdp/cks/continuous");
}

/// Issue 40: the MNIST run's ε by PLD is below RDP's 2.597, within 10⁻³ of dp-accounting
/// 0.6.0's connect-the-dots 2.3818 at the same grid (tests/fixtures/pld_dp_accounting_0.6.0.json)
/// and never below it; `best` reports the smaller bound and names its accountant; a PLD
/// calibration meets its target with less noise than the RDP one.
#[test]
fn pld_accountant_beats_rdp_on_mnist_and_best_takes_the_smaller() {
    let rdp = json(&format!("{MNIST} --json"))["epsilon"]
        .as_f64()
        .unwrap();
    let pld = json(&format!("{MNIST} --accountant pld --json"));
    let eps = pld["epsilon"].as_f64().unwrap();
    assert!(eps < rdp - 0.2, "{pld}");
    assert!(
        (2.381_778_813_576_892..2.381_778_813_576_892 * 1.001).contains(&eps),
        "{pld}"
    );
    assert_eq!(pld["accountant"], "pld/connect-dots/1e-4");
    assert!(pld["order"].is_null());
    let best = json(&format!("{MNIST} --accountant best --json"));
    assert_eq!(best["epsilon"].as_f64(), Some(eps));
    // Where RDP is the smaller bound (a single Gaussian at large ε), best reports it.
    let (code, text, _) =
        dptune("account gaussian --sensitivity 1 --sigma 0.5 --delta 1e-5 --accountant best");
    assert_eq!(code, 0);
    assert!(text.contains("smaller of two bounds"), "{text}");
    let calibrate =
        "account calibrate-dpsgd --sampling-rate 0.01 --steps 1000 --epsilon 2 --delta 1e-5";
    let by_rdp = json(&format!("{calibrate} --json"))["noise_multiplier"]
        .as_f64()
        .unwrap();
    let by_pld = json(&format!("{calibrate} --accountant pld --json"));
    assert!(
        by_pld["noise_multiplier"].as_f64().unwrap() < by_rdp,
        "{by_pld}"
    );
    assert!(by_pld["epsilon"].as_f64().unwrap() <= 2.0, "{by_pld}");
    let (code, _, err) = dptune(&format!("{MNIST} --accountant pld --pld-interval 0"));
    assert_ne!(code, 0);
    assert!(err.contains("pld-interval"), "{err}");
}

/// Spec 001 §6.1's first vector: n = 30956, m = 256, T = 10, σ = 1, δ = 1e-5 → k = 1210,
/// ε = 3.684 with the plain conversion over the integer orders 2..4096.
const WOR: &str = "account dpsgd --sampling without-replacement --data-size 30956 --lot-size 256 --epochs 10 --noise-multiplier 1 --delta 1e-5";

#[test]
fn dpsgd_without_replacement_reproduces_a_spec_001_vector() {
    let v = json(&format!(
        "{WOR} --conversion mironov --orders 2..4096 --json"
    ));
    let eps = v["epsilon"].as_f64().unwrap();
    assert_eq!(format!("{eps:.3}"), "3.684", "{v}");
    assert_eq!(v["steps"].as_u64(), Some(1210));
    assert_eq!(v["order"].as_f64(), Some(7.0));
    assert_eq!(v["sampling"], "without-replacement");
    assert_eq!(v["sampling_rate"].as_f64(), Some(256.0 / 30956.0));
    assert_eq!(
        (
            v["data_size"].as_u64(),
            v["lot_size"].as_u64(),
            v["epochs"].as_u64()
        ),
        (Some(30956), Some(256), Some(10))
    );
    assert!(v["protects"].as_str().unwrap().contains("replacing one"));
    // The text rounds ε up; the default accountant (CKS, all orders) is never looser.
    let (code, text, _) = dptune(&format!("{WOR} --conversion mironov --orders 2..4096"));
    assert_eq!(code, 0);
    assert!(text.contains("(ε = 3.684238, δ = 1e-5)"), "{text}");
    assert!(text.contains("1210 steps (10 epochs"), "{text}");
    let default = json(&format!("{WOR} --json"));
    assert!(default["epsilon"].as_f64().unwrap() <= eps);
    // The same run given as a sampling rate and a step count.
    let same = json(&format!(
        "account dpsgd --sampling without-replacement --sampling-rate {} --steps 1210 --noise-multiplier 1 --delta 1e-5 --json",
        256.0 / 30956.0
    ));
    assert_eq!(same["epsilon"], default["epsilon"]);
    // Poisson stays the default, and is a different (add/remove) guarantee.
    let poisson = json(&format!("{MNIST} --json"));
    assert_eq!(poisson["sampling"], "poisson");
    assert!(poisson["protects"]
        .as_str()
        .unwrap()
        .contains("adding or removing"));
}

#[test]
fn every_account_command_answers() {
    let z = json("account zcdp --rho 0.1 --delta 1e-6 --json");
    assert!((z["epsilon"].as_f64().unwrap() - 2.141939).abs() < 2e-6);
    let g = json("account gaussian --sensitivity 2 --sigma 4 --delta 1e-6 --json");
    // Δ/σ = 1/2 is 0.125-zCDP: same as --rho 0.125.
    let same = json("account zcdp --rho 0.125 --delta 1e-6 --json");
    assert_eq!(g["epsilon"], same["epsilon"]);
    let d = json("account gdp --mu 1 --delta 1e-6 --json");
    assert!(d["order"].is_null() && d["epsilon"].as_f64().unwrap() > 0.0);
    let listed = json("account zcdp --rho 0.1 --delta 1e-6 --orders 2,4,8,16 --json");
    assert_eq!(listed["order"].as_f64(), Some(16.0));
    let delta = json("account zcdp --rho 0.1 --epsilon 1 --json");
    assert!((delta["delta"].as_f64().unwrap() / 8.93324577e-3 - 1.0).abs() < 1e-7);
    let c = json(
        "account calibrate-dpsgd --sampling-rate 0.01 --steps 1000 --epsilon 2 --delta 1e-5 --json",
    );
    assert!(c["epsilon"].as_f64().unwrap() <= 2.0 && c["noise_multiplier"].as_f64().unwrap() > 0.5);
    // Without replacement, given as data, lot and epochs: the σ it reports is the one the
    // `dpsgd` command accounts at the target.
    let w = json(
        "account calibrate-dpsgd --sampling without-replacement --data-size 60000 --lot-size 256 \
         --epochs 250 --epsilon 1 --delta 1e-5 --json",
    );
    assert_eq!(w["sampling"], "without-replacement");
    assert_eq!(
        (w["steps"].as_u64(), w["lot_size"].as_u64()),
        (Some(58_500), Some(256))
    );
    let sigma = w["noise_multiplier"].as_f64().unwrap();
    let back = json(&format!(
        "account dpsgd --sampling without-replacement --data-size 60000 --lot-size 256 \
         --epochs 250 --noise-multiplier {sigma} --delta 1e-5 --json"
    ));
    assert_eq!(back["epsilon"].as_f64(), w["epsilon"].as_f64());
    assert!(w["epsilon"].as_f64().unwrap() <= 1.0);
}

#[test]
fn statement_in_words_names_unit_guarantee_and_conversion() {
    let (code, out, _) = dptune(MNIST);
    assert_eq!(code, 0);
    assert!(out.contains("is (ε = 2.5966"), "{out}");
    assert!(
        out.contains("adding or removing one training example"),
        "{out}"
    );
    assert!(out.contains("Canonne–Kamath–Steinke"), "{out}");
    let (_, out, _) = dptune(&format!("{MNIST} --conversion mironov"));
    assert!(out.contains("Mironov"), "{out}");
}

#[test]
fn printed_epsilon_is_rounded_up() {
    let (_, text, _) = dptune(&format!("{MNIST} --orders dp-accounting"));
    let exact = json(&format!("{MNIST} --orders dp-accounting --json"))["epsilon"]
        .as_f64()
        .unwrap();
    let shown: f64 = text
        .split("ε = ")
        .nth(1)
        .unwrap()
        .split(',')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        shown >= exact && shown - exact < 1e-6,
        "shown {shown} vs {exact}"
    );
}

#[test]
fn bad_input_fails_with_one_line_naming_the_parameter() {
    let cases = [
        ("account zcdp --rho 0.1 --delta 0", "--delta"),
        ("account zcdp --rho 0.1 --delta 1", "--delta"),
        ("account zcdp --rho 0.1 --delta -0.5", "--delta"),
        ("account zcdp --rho NaN --delta 1e-5", "--rho"),
        ("account zcdp --rho inf --delta 1e-5", "--rho"),
        (
            "account gaussian --sensitivity 1 --sigma 0 --delta 1e-5",
            "--sigma",
        ),
        (
            "account gaussian --sensitivity 1 --sigma -2 --delta 1e-5",
            "--sigma",
        ),
        (
            "account dpsgd --sampling-rate 0 --noise-multiplier 1 --steps 5 --delta 1e-5",
            "--sampling-rate",
        ),
        (
            "account dpsgd --sampling-rate 1.5 --noise-multiplier 1 --steps 5 --delta 1e-5",
            "--sampling-rate",
        ),
        (
            "account dpsgd --sampling-rate 0.1 --noise-multiplier 0 --steps 5 --delta 1e-5",
            "--noise-multiplier",
        ),
        (
            "account dpsgd --sampling-rate 0.1 --noise-multiplier 1 --steps 0 --delta 1e-5",
            "--steps",
        ),
        (
            "account dpsgd --sampling-rate 0.1 --noise-multiplier 1 --steps 2.5 --delta 1e-5",
            "--steps",
        ),
        (
            "account dpsgd --sampling-rate 0.1 --noise-multiplier NaN --steps 5 --delta 1e-5",
            "--noise-multiplier",
        ),
        (
            "account dpsgd --sampling without-replacement --data-size 100 --lot-size 101 --epochs 1 --noise-multiplier 1 --delta 1e-5",
            "lot_size",
        ),
        (
            "account dpsgd --sampling without-replacement --data-size 100 --lot-size 0 --epochs 1 --noise-multiplier 1 --delta 1e-5",
            "--lot-size",
        ),
        (
            "account dpsgd --sampling without-replacement --data-size 100 --lot-size 10 --noise-multiplier 1 --delta 1e-5",
            "--epochs",
        ),
        (
            "account dpsgd --sampling-rate 0.1 --steps 5 --data-size 100 --lot-size 10 --epochs 1 --noise-multiplier 1 --delta 1e-5",
            "--data-size",
        ),
        (
            "account dpsgd --sampling sometimes --sampling-rate 0.1 --steps 5 --noise-multiplier 1 --delta 1e-5",
            "--sampling",
        ),
        (
            "account zcdp --rho 0.1 --delta 1e-5 --orders 1..8",
            "--orders",
        ),
        ("account gdp --mu 0 --delta 1e-5", "--mu"),
        (
            "account calibrate-dpsgd --sampling-rate 0.1 --steps 10 --epsilon 0 --delta 1e-5",
            "--epsilon",
        ),
        (
            "account calibrate-dpsgd --sampling-rate 0.1 --data-size 100 --lot-size 10 --epochs 1 --epsilon 1 --delta 1e-5",
            "--data-size",
        ),
        (
            "account calibrate-dpsgd --sampling without-replacement --data-size 100 --lot-size 200 --epochs 1 --epsilon 1 --delta 1e-5",
            "lot",
        ),
        (
            "account zcdp --rho 0.1 --delta 1e-5 --orders 1,2",
            "--orders",
        ),
        (
            "account zcdp --rho 0.1 --delta 1e-5 --conversion magic",
            "--conversion",
        ),
        ("account zcdp --rho 0.1 --delta 1e-5 --bogus", "--bogus"),
        ("account zcdp --rho 0.1", "--delta"),
    ];
    for (args, parameter) in cases {
        let (code, stdout, stderr) = dptune(args);
        assert_ne!(code, 0, "{args} succeeded: {stdout}");
        assert!(stdout.is_empty(), "{args} printed a result: {stdout}");
        assert_eq!(
            stderr.trim_end().lines().count(),
            1,
            "{args}: not one line: {stderr}"
        );
        assert!(
            stderr.contains(parameter),
            "{args}: does not name {parameter}: {stderr}"
        );
        assert!(
            !stderr.contains("panicked") && !stderr.to_lowercase().contains("nan as"),
            "{args}: {stderr}"
        );
    }
}

#[test]
fn help_and_version_succeed() {
    let (code, out, _) = dptune("--help");
    assert_eq!(code, 0);
    assert!(out.contains("account"));
    let (code, out, _) = dptune("account dpsgd --help");
    assert_eq!(code, 0);
    assert!(out.contains("--noise-multiplier"));
}

#[test]
fn repeat_select_json_matches_the_spec_and_the_library() {
    let v = json(
        "account repeat-select --base zcdp:0.1 --dist logarithmic --mean 10 --delta 1e-6 --json",
    );
    assert!(
        (v["epsilon"].as_f64().unwrap() - 3.450841).abs() <= 2e-6,
        "{v}"
    );
    assert!((v["base_epsilon"].as_f64().unwrap() - 2.141939).abs() <= 2e-6);
    let rdp = v["rdp"].as_array().unwrap();
    assert_eq!(
        rdp.len(),
        156,
        "continuous mode shows the curve on dp-accounting's orders"
    );
    assert!(rdp
        .iter()
        .all(|p| p["order"].is_f64() && p["epsilon"].is_f64()));
    let g = json("account repeat-select --base zcdp:0.1 --dist poisson --mean 100 --delta 1e-6 --orders dp-accounting --json");
    let e = g["epsilon"].as_f64().unwrap();
    assert!(e >= 18.760366 && e - 18.760367 <= 1e-6, "{g}");
    let listed = json("account repeat-select --base zcdp:0.1 --dist tnb:0.5 --mean 10 --delta 1e-6 --orders 2,8,16 --json");
    let orders: Vec<f64> = listed["rdp"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["order"].as_f64().unwrap())
        .collect();
    assert_eq!(orders, vec![2.0, 8.0, 16.0]);
    let mnist = json("account repeat-select --base dpsgd:q=0.004266666666666667,sigma=1.1,steps=14063 --dist geometric --mean 100 --delta 1e-5 --orders dp-accounting --json");
    // JSON carries the printed ε, rounded up to 6 decimals: the golden's 6.373923… becomes
    // 6.373924.
    let e = mnist["epsilon"].as_f64().unwrap();
    assert!(e >= 6.373923 && e - 6.373923 <= 1.5e-6, "{mnist}");
}

#[test]
fn repeat_select_reads_rdp_files_and_solves_for_the_mean() {
    let dir = std::env::temp_dir().join(format!("dptune-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("curve.csv");
    std::fs::write(
        &file,
        "order,epsilon\n2,0.2\n4,0.4\n8,0.8\n16,1.6\n32,3.2\n",
    )
    .unwrap();
    let v = json(&format!(
        "account repeat-select --base rdp:{} --dist fixed --mean 3 --delta 1e-5 --json",
        file.display()
    ));
    assert_eq!(v["rdp"].as_array().unwrap().len(), 5);
    assert!((v["rdp"][0]["epsilon"].as_f64().unwrap() - 0.6).abs() < 1e-12);
    std::fs::write(&file, "order,epsilon\n2,0.2\n4,oops\n").unwrap();
    let (code, _, err) = dptune(&format!(
        "account repeat-select --base rdp:{} --dist fixed --mean 3 --delta 1e-5",
        file.display()
    ));
    assert_ne!(code, 0);
    assert!(err.contains("curve.csv:3") && err.contains("oops"), "{err}");
    let t = json("account repeat-select --base zcdp:0.1 --dist logarithmic --delta 1e-6 --target-epsilon 4.047730 --json");
    let mean = t["mean"].as_f64().unwrap();
    assert!((mean - 100.0).abs() < 0.01, "{t}"); // Table A: E[K] = 100 gives 4.047730
    assert!(t["epsilon"].as_f64().unwrap() <= 4.047730);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn repeat_select_rejects_bad_input_in_one_line() {
    for (args, name) in [
        (
            "--base zcdp:x --dist logarithmic --mean 10 --delta 1e-6",
            "--base",
        ),
        (
            "--base dpsgd:q=2,sigma=1,steps=3 --dist logarithmic --mean 10 --delta 1e-6",
            "--base",
        ),
        (
            "--base zcdp:0.1 --dist tnb:-1 --mean 10 --delta 1e-6",
            "--dist",
        ),
        (
            "--base zcdp:0.1 --dist logarithmic --mean 1 --delta 1e-6",
            "mean",
        ),
        (
            "--base zcdp:0.1 --dist fixed --mean 2.5 --delta 1e-6",
            "mean",
        ),
        (
            "--base zcdp:0.1 --dist logarithmic --mean 10 --delta 1e-6 --truncate 0",
            "--truncate",
        ),
        (
            "--base zcdp:0.1 --dist logarithmic --mean 10 --delta 2",
            "--delta",
        ),
        ("--base zcdp:0.1 --dist logarithmic --delta 1e-6", "--mean"),
    ] {
        let (code, out, err) = dptune(&format!("account repeat-select {args}"));
        assert_ne!(code, 0, "{args}: {out}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args}: {err}");
        assert!(err.contains(name), "{args}: {err}");
    }
}

/// Issue 16, case 1: no NaN or inf is ever printed as a result. A δ that underflows is the
/// smallest positive double (an upper bound), in words and in JSON; a huge ε is scientific.
#[test]
fn tails_print_finite_upper_bounds_never_nan_or_inf() {
    for args in [
        "account dpsgd --sampling-rate 0.01 --noise-multiplier 1.1 --steps 1000 --epsilon 100",
        "account zcdp --rho 0.1 --epsilon 1000",
        "account gaussian --sensitivity 1 --sigma 1 --epsilon 1000",
        "account dpsgd --sampling-rate 0.01 --noise-multiplier 1.1 --steps 1000 --epsilon 1e305",
        "account gdp --mu 1 --epsilon 1e305",
        "account gdp --mu 0.001 --epsilon 100",
        "account zcdp --rho 1e300 --delta 1e-6",
    ] {
        let (code, out, err) = dptune(args);
        assert_eq!(code, 0, "{args}: {err}");
        let lower = out.to_lowercase();
        assert!(
            !lower.contains("nan") && !lower.contains("inf") && !out.contains("-0"),
            "{args}: {out}"
        );
        let value = json(&format!("{args} --json"));
        let delta = value["delta"].as_f64().expect("a number");
        let epsilon = value["epsilon"].as_f64().expect("a number");
        assert!(
            delta > 0.0 && delta <= 1.0 && epsilon.is_finite(),
            "{args}: {value}"
        );
        // The words say the same δ, rounded up.
        let printed = out
            .split("δ = ")
            .nth(1)
            .and_then(|s| s.split(')').next())
            .unwrap();
        assert!(
            printed.parse::<f64>().unwrap() >= delta,
            "{args}: {printed}"
        );
    }
    // A 301-digit ε is written as 1.000001e300 (7 significant digits, rounded up), not in
    // full; its best order is just above 1 and says so.
    let (_, out, _) = dptune("account zcdp --rho 1e300 --delta 1e-6");
    assert!(out.contains("ε = 1.000001e300,"), "{out}");
    assert!(out.contains("(best order λ = 1 + "), "{out}");
}

/// Issue 16, case 2: a closed or full stdout is not a panic.
#[test]
fn a_closed_or_full_stdout_is_not_a_panic() {
    let bin = env!("CARGO_BIN_EXE_dptune");
    // `true` exits at once, so the write after the pause meets a closed pipe.
    let out = Command::new("sh")
        .args([
            "-c",
            r#"{ sleep 0.3; "$0" --help; echo "rc=$?" >&2; } | true"#,
            bin,
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("rc=0") && !err.contains("panicked"), "{err}");
    if std::path::Path::new("/dev/full").exists() {
        let out = Command::new(bin)
            .args("account zcdp --rho 0.1 --delta 1e-6".split(' '))
            .stdout(std::fs::File::create("/dev/full").unwrap())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("cannot write the output"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// Issue 16, case 3: a curve file is read up to a bound, never whole.
#[test]
fn an_endless_curve_file_is_refused_after_a_bounded_read() {
    let dir = std::env::temp_dir().join(format!("dptune-cli-big-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let big = dir.join("big.csv");
    let mut text = String::from("order,epsilon\n");
    while text.len() <= 1 << 20 {
        text.push_str("2,0.1\n");
    }
    std::fs::write(&big, text).unwrap();
    let (code, _, err) = dptune(&format!(
        "account repeat-select --base rdp:{} --dist logarithmic --mean 10 --delta 1e-6",
        big.display()
    ));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("larger than 1048576 bytes"), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// Issue 16, case 4: the search cap is reported as a cap, not as the optimum.
#[test]
fn the_mean_search_cap_is_reported_as_such() {
    let args = "account repeat-select --base zcdp:0.1 --dist logarithmic --delta 1e-6 --target-epsilon 1e6";
    let (code, out, err) = dptune(args);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("at least 1e7") && out.contains("cap"), "{out}");
    assert_eq!(json(&format!("{args} --json"))["capped"], true);
    let below = json("account repeat-select --base zcdp:0.1 --dist logarithmic --delta 1e-6 --target-epsilon 5 --json");
    assert_eq!(below["capped"], false);
    assert!(below["mean"].as_f64().unwrap() < 1e7);
}

/// Issue 16, case 5: a negative value names its flag; a bare command prints its usage; every
/// user error exits 2 (an impossible request included); δ of exact GDP is never 0.
#[test]
fn user_errors_exit_2_with_their_flag_and_usage() {
    let (code, _, err) = dptune("account zcdp --rho 0.1 --delta -1e-5");
    assert_eq!(code, 2);
    assert!(err.contains("--delta") && err.contains("(0, 1)"), "{err}");
    for bare in ["", "account"] {
        let (code, out, err) = dptune(bare);
        assert_eq!(code, 2, "`dptune {bare}`");
        assert!(out.is_empty() && err.contains("Usage: dptune"), "{err}");
    }
    for args in [
        // No finite ε at all.
        "account gaussian --sensitivity 1e300 --sigma 1e-300 --delta 1e-5",
        // One run already exceeds the target.
        "account repeat-select --base zcdp:10 --dist logarithmic --delta 1e-6 --target-epsilon 0.01",
    ] {
        let (code, _, err) = dptune(args);
        assert_eq!(code, 2, "{args}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args}: {err}");
    }
    let gdp = json("account gdp --mu 0.001 --epsilon 100 --json");
    assert!(gdp["delta"].as_f64().unwrap() > 0.0, "{gdp}");
}

/// Issue 37: requests whose accounting would run for hours are refused at once, naming the
/// option and the limit: a Poisson K over a grid of more than 1024 orders (its bound costs the
/// square of their number), and a calibration over orders above 4096.
#[test]
fn accounting_requests_are_bounded_in_time() {
    let dir = std::env::temp_dir().join(format!("dptune-cli-orders-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("big.csv");
    let rows: String = (0..1025)
        .map(|i| format!("{},{}\n", 2.0 + i as f64, 0.05 * (2.0 + i as f64)))
        .collect();
    std::fs::write(&file, format!("order,epsilon\n{rows}")).unwrap();
    let start = std::time::Instant::now();
    let (code, _, err) = dptune(&format!(
        "account repeat-select --base rdp:{} --dist poisson --mean 10 --delta 1e-6",
        file.display()
    ));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("orders") && err.contains("1024"), "{err}");
    let (code, _, err) = dptune(
        "account calibrate-dpsgd --sampling-rate 0.01 --steps 1000 --epsilon 2 --delta 1e-5 --orders 2..65536",
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("orders") && err.contains("4096"), "{err}");
    let (code, _, err) = dptune(
        "account repeat-select --base dpsgd:q=0.01,sigma=1,steps=100 --dist geometric --target-epsilon 5 --delta 1e-6 --orders 2..8000",
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("4096"), "{err}");
    // Refused, not computed: well under the minutes the computations would take.
    assert!(start.elapsed().as_secs() < 60);
    std::fs::remove_dir_all(dir).unwrap();
}

/// Issue 37: a huge best order prints in scientific notation (not 150 digits), and `--out`
/// naming a file says so instead of "Not a directory".
#[test]
fn huge_orders_and_file_outputs_read_well() {
    let (_, out, _) = dptune("account zcdp --rho 1e-300 --delta 1e-300");
    assert!(out.contains("(best order λ = 1.8506e151)"), "{out}");
    let file = std::env::temp_dir().join(format!("dptune-out-file-{}", std::process::id()));
    std::fs::write(&file, "mine").unwrap();
    let (code, _, err) = dptune(&format!(
        "sim run sims/dw-table1-budgets.toml --profile smoke --out {}",
        file.display()
    ));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is a file, not a folder"), "{err}");
    assert_eq!(std::fs::read(&file).unwrap(), b"mine");
    std::fs::remove_file(file).unwrap();
}

/// Issue 61: a negative count reaches its flag's parser and is refused with the flag's range,
/// never "unexpected argument '-1' found"; every folder flag naming a file says so.
#[test]
fn negative_counts_and_file_folders_are_refused_in_words() {
    let sims = "sim run sims/dw-table1-budgets.toml --profile smoke";
    for (args, says) in [
        ("tune x.toml --jobs -1 -- true".into(), "'--jobs <JOBS>': must be a whole number from 1 to 256"),
        (format!("{sims} --threads -1"), "'--threads <THREADS>': must be a whole number from 1 to 1024"),
        (format!("{sims} --shard -1/2"), "'--shard <SHARD>': invalid shard = -1/2"),
        (format!("{sims} --stop-after-units -1"), "must be a whole number ≥ 1"),
        (
            "sim merge sims/dw-table1-budgets.toml --tasks -1".into(),
            "'--tasks <TASKS>': must be a whole number from 1 to 100000",
        ),
        (
            "sim status sims/dw-table1-budgets.toml --require-complete --tasks -2".into(),
            "'--tasks <TASKS>': must be a whole number from 1 to 100000",
        ),
        (
            "sim verify sims/dw-table1-budgets.toml --threads -1".into(),
            "'--threads <THREADS>': must be a whole number from 1 to 1024",
        ),
        (
            "sim slurm sims/dw-table1-budgets.toml --tasks -1".into(),
            "'--tasks <TASKS>': must be a whole number from 1 to 100000",
        ),
        (
            "sim slurm sims/dw-table1-budgets.toml --tasks 2 --gpus -1".into(),
            "'--gpus <GPUS>': must be a whole number from 1 to 64",
        ),
        (
            "account repeat-select --base zcdp:0.1 --dist poisson --mean 3 --delta 1e-5 --truncate -1".into(),
            "'--truncate <TRUNCATE>': must be a whole number ≥ 1",
        ),
        (
            "account zcdp --rho 0.1 --delta 1e-5 --orders -1,2".into(),
            "'--orders <ORDERS>'",
        ),
        (
            "account dpsgd --sampling-rate 0.01 --steps -5 --noise-multiplier 1 --delta 1e-5".into(),
            "'--steps <STEPS>': must be a whole number ≥ 1",
        ),
    ] {
        let (code, _, err) = dptune(&args);
        assert_eq!(code, 2, "{args}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args}: {err}");
        assert!(err.contains(says), "{args}: `{err}` lacks `{says}`");
        assert!(!err.contains("unexpected argument"), "{args}: {err}");
    }
    let file = std::env::temp_dir().join(format!("dptune-folder-file-{}", std::process::id()));
    std::fs::write(&file, "mine").unwrap();
    let f = file.display();
    for (args, flag) in [
        (
            format!("sim status sims/dw-table1-budgets.toml --out {f}"),
            "--out",
        ),
        (
            format!("sim verify sims/dw-table1-budgets.toml --profile smoke --out {f}"),
            "--out",
        ),
        (
            format!("sim verify sims/dw-table1-budgets.toml --profile smoke --scratch {f}"),
            "--scratch",
        ),
        (
            format!("sim verify sims/dw-table1-budgets.toml --profile smoke --scratch {f}/inner"),
            "--scratch",
        ),
        (
            format!("sim report sims/dw-table1-budgets.toml --out {f}"),
            "--out",
        ),
        (
            format!("sim merge sims/dw-table1-budgets.toml --out {f}"),
            "--out",
        ),
        (
            format!("sim slurm sims/dw-table1-budgets.toml --tasks 2 --out {f}"),
            "--out",
        ),
        (
            format!("tune sims/dw-table1-budgets.toml --out {f} -- true"),
            "--out",
        ),
    ] {
        let (code, _, err) = dptune(&args);
        assert_eq!(code, 2, "{args}: {err}");
        assert!(
            err.contains(&format!("{flag} {f}")) && err.contains("is a file"),
            "{args}: {err}"
        );
        assert_eq!(std::fs::read(&file).unwrap(), b"mine");
    }
    std::fs::remove_file(file).unwrap();
}
