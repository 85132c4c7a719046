//! The data module: the shipped data sets, CSV and IDX loaders (and their error messages),
//! seeded stratified splits, standardisation and row clipping.

use dptune::data::idx::{parse_idx_images, parse_idx_labels};
use dptune::data::{
    builtin, clip_rows, load_csv, load_idx, parse_csv, shuffled_indices, Dataset, Standardiser,
    Target, TargetKind, BUILTIN,
};
use dptune::Error;
use ndarray::{Array2, Axis};
use std::path::{Path, PathBuf};

use crate::common;

// ---------------------------------------------------------------------------------------------
// Helpers

/// Writes `contents` to a file `name` in a temporary folder of its own (one per test case),
/// removed with the folder when the returned guard is dropped.
fn temp_file(name: &str, contents: &[u8]) -> TempFile {
    let dir = common::temp_dir(&format!("data-{name}"));
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    TempFile { _dir: dir, path }
}

/// A file that lives as long as its guard; it derefs to its path.
struct TempFile {
    _dir: common::TempDir,
    path: PathBuf,
}

impl std::ops::Deref for TempFile {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

/// The (file, line, reason) of a data error; fails the test on any other outcome.
fn data_error<T: std::fmt::Debug>(r: dptune::Result<T>) -> (String, usize, String) {
    match r {
        Err(Error::Data { file, line, reason }) => (file, line, reason),
        other => panic!("expected Error::Data, got {other:?}"),
    }
}

fn bc_classes() -> TargetKind {
    TargetKind::Classes(vec!["malignant".into(), "benign".into()])
}

/// Loads `text` from a temp file `name` and checks the error's file, line and reason.
fn assert_csv_rejected(name: &str, text: &str, target: &TargetKind, line: usize, reason: &str) {
    let path = temp_file(name, text.as_bytes());
    let (file, got_line, got_reason) = data_error(load_csv(&path, "t", target));
    assert_eq!(file, path.display().to_string(), "{name}");
    assert_eq!(got_line, line, "{name}: {got_reason}");
    assert!(
        got_reason.contains(reason),
        "{name}: `{got_reason}` lacks `{reason}`"
    );
}

// ---------------------------------------------------------------------------------------------
// Shipped data sets

#[test]
fn breast_cancer_has_its_shape_counts_and_cells() {
    let d = builtin("breast-cancer").unwrap();
    assert_eq!(d.name, "breast-cancer");
    assert_eq!(d.x.dim(), (569, 30));
    assert_eq!(d.class_counts(), Some(vec![212, 357]));
    let Target::Classes { labels, names } = &d.target else {
        panic!("breast-cancer is a classification set")
    };
    assert_eq!(names, &["malignant", "benign"]);
    // Line 2 of the file: 17.99,10.38,122.8,1001,...,0.1189,malignant
    assert_eq!(
        (d.x[[0, 0]], d.x[[0, 1]], d.x[[0, 3]], d.x[[0, 29]]),
        (17.99, 10.38, 1001.0, 0.1189)
    );
    assert_eq!(labels[0], 0);
    // The last line: 7.76,24.54,47.92,181,...,benign
    assert_eq!(
        d.x.row(568).iter().take(4).copied().collect::<Vec<_>>(),
        [7.76, 24.54, 47.92, 181.0]
    );
    assert_eq!(labels[568], 1);
}

#[test]
fn digits_has_its_shape_counts_and_cells() {
    let d = builtin("digits").unwrap();
    assert_eq!(d.x.dim(), (1797, 64));
    assert_eq!(d.n_classes(), 10);
    assert_eq!(
        d.class_counts(),
        Some(vec![178, 182, 177, 183, 181, 182, 181, 179, 174, 180])
    );
    assert!(d
        .x
        .iter()
        .all(|&v| (0.0..=16.0).contains(&v) && v.fract() == 0.0));
    assert_eq!(d.x.iter().fold(0.0f64, |m, &v| m.max(v)), 16.0);
    // Line 2 starts 0,0,5,13,9,1,0,0 and is a 0; the last line starts 0,0,10,14,8,1,0,0, an 8.
    let start = |i: usize| d.x.row(i).iter().take(8).copied().collect::<Vec<_>>();
    assert_eq!(start(0), [0.0, 0.0, 5.0, 13.0, 9.0, 1.0, 0.0, 0.0]);
    assert_eq!(start(1796), [0.0, 0.0, 10.0, 14.0, 8.0, 1.0, 0.0, 0.0]);
    assert_eq!((d.labels().unwrap()[0], d.labels().unwrap()[1796]), (0, 8));
}

#[test]
fn diabetes_has_its_shape_targets_and_cells() {
    let d = builtin("diabetes").unwrap();
    assert_eq!(d.x.dim(), (442, 10));
    assert_eq!(d.n_classes(), 0);
    let y = d.values().unwrap();
    assert!(y.iter().all(|v| (25.0..=346.0).contains(v)));
    assert_eq!(y.iter().fold(f64::INFINITY, |m, &v| m.min(v)), 25.0);
    assert_eq!(y.iter().fold(0.0f64, |m, &v| m.max(v)), 346.0);
    // Line 2: 59,2,32.1,101,157,93.2,38,4,4.8598,87,151; the last: 36,1,19.6,...,4.5951,92,57
    assert_eq!(
        d.x.row(0).to_vec(),
        [59.0, 2.0, 32.1, 101.0, 157.0, 93.2, 38.0, 4.0, 4.8598, 87.0]
    );
    assert_eq!(
        d.x.row(441).to_vec(),
        [36.0, 1.0, 19.6, 71.0, 250.0, 133.2, 97.0, 3.0, 4.5951, 92.0]
    );
    assert_eq!((y[0], y[441]), (151.0, 57.0));
}

#[test]
fn the_embedded_files_equal_the_files_on_disk_and_unknown_names_are_rejected() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("data");
    let on_disk = load_csv(&root.join("diabetes.csv"), "diabetes", &TargetKind::Values).unwrap();
    assert_eq!(on_disk, builtin("diabetes").unwrap());
    assert_eq!(BUILTIN, ["breast-cancer", "digits", "diabetes"]);
    let msg = builtin("iris").unwrap_err().to_string();
    assert_eq!(
        msg,
        "invalid data set = iris: must be one of breast-cancer, digits, diabetes"
    );
}

// ---------------------------------------------------------------------------------------------
// CSV

#[test]
fn csv_accepts_crlf_and_a_trailing_newline() {
    let lf = "a,b,target\n1,2,benign\n3.5,-4e-3,malignant\n";
    let crlf = lf.replace('\n', "\r\n");
    let a = parse_csv(lf, "lf.csv", "t", &bc_classes()).unwrap();
    let b = parse_csv(&crlf, "crlf.csv", "t", &bc_classes()).unwrap();
    let c = parse_csv(lf.trim_end(), "none.csv", "t", &bc_classes()).unwrap();
    assert_eq!(a, b);
    assert_eq!(a, c);
    assert_eq!(a.x, ndarray::array![[1.0, 2.0], [3.5, -0.004]]);
    assert_eq!(a.labels(), Some(&[1, 0][..]));
}

#[test]
fn csv_rejects_ragged_rows() {
    let text = "a,b,target\n1,2,benign\n1,2,3,benign\n";
    assert_csv_rejected(
        "ragged.csv",
        text,
        &bc_classes(),
        3,
        "row has 4 cells, the header has 3",
    );
    let short = "a,b,target\n1,2,benign\n\n1,benign\n";
    assert_csv_rejected("blank.csv", short, &bc_classes(), 3, "the line is empty");
    // The full message, as a user sees it.
    let e = parse_csv("a,target\n1,2,3\n", "f.csv", "f", &TargetKind::Values).unwrap_err();
    assert_eq!(e.to_string(), "f.csv:2: row has 3 cells, the header has 2");
}

#[test]
fn csv_rejects_non_numeric_and_non_finite_cells() {
    let head = "mean_radius,mean_area,target\n1,2,benign\n";
    for (i, (cell, what)) in [
        ("abc", "is `abc`, not a number"),
        ("NaN", "is `NaN`, not a finite number"),
        ("inf", "is `inf`, not a finite number"),
        ("-infinity", "is `-infinity`, not a finite number"),
        ("1e999", "is `1e999`, not a finite number"),
        ("", "is empty, not a number"),
    ]
    .into_iter()
    .enumerate()
    {
        let text = format!("{head}3,4,malignant\n5,{cell},benign\n");
        let reason = format!("cell 2 (`mean_area`) {what}");
        assert_csv_rejected(&format!("cell{i}.csv"), &text, &bc_classes(), 4, &reason);
    }
    let values = "a,target\n1,2\n3,nan\n";
    assert_csv_rejected(
        "target.csv",
        values,
        &TargetKind::Values,
        3,
        "the target is `nan`, not a finite number",
    );
}

#[test]
fn csv_rejects_a_label_outside_its_set() {
    let text = "a,target\n1,benign\n2,malignant\n3,maybe\n";
    assert_csv_rejected(
        "label.csv",
        text,
        &bc_classes(),
        4,
        "label `maybe` is not one of malignant, benign",
    );
    // Class labels are names, not numbers: a digit set does not accept "10".
    let digits = TargetKind::Classes((0..10).map(|d| d.to_string()).collect());
    assert_csv_rejected(
        "digit.csv",
        "a,target\n1,9\n2,10\n",
        &digits,
        3,
        "label `10` is not one of 0, 1",
    );
}

#[test]
fn csv_rejects_empty_files_bare_headers_and_bad_headers() {
    let v = TargetKind::Values;
    assert_csv_rejected("empty.csv", "", &v, 1, "the file is empty");
    assert_csv_rejected("newline.csv", "\n\n", &v, 1, "the file is empty");
    assert_csv_rejected("header.csv", "a,b,target\n", &v, 1, "no examples");
    assert_csv_rejected(
        "notarget.csv",
        "a,b,c\n1,2,3\n",
        &v,
        1,
        "the last column is `c`, expected `target`",
    );
    assert_csv_rejected(
        "dup.csv",
        "a,b,a,target\n1,2,3,4\n",
        &v,
        1,
        "column 3 has the same name `a` as column 1",
    );
    assert_csv_rejected("onlytarget.csv", "target\n1\n", &v, 1, "no feature columns");
}

#[test]
fn an_unreadable_csv_is_an_io_error() {
    let missing = std::env::temp_dir().join("dptune-tests-data-no-such-file.csv");
    match load_csv(&missing, "t", &TargetKind::Values) {
        Err(Error::Io { path, .. }) => assert_eq!(path, missing.display().to_string()),
        other => panic!("expected Error::Io, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// IDX

/// An IDX file: magic, big-endian sizes, payload.
fn idx_bytes(magic: u32, dims: &[u32], payload: &[u8]) -> Vec<u8> {
    let mut out = magic.to_be_bytes().to_vec();
    for d in dims {
        out.extend_from_slice(&d.to_be_bytes());
    }
    out.extend_from_slice(payload);
    out
}

/// Four 3×2 images whose pixels include 0 and 255.
fn pixels() -> Vec<u8> {
    (0..24u32).map(|i| (i * 37 % 256) as u8).collect()
}

fn images_file(name: &str) -> TempFile {
    let mut p = pixels();
    p[5] = 255;
    temp_file(name, &idx_bytes(0x803, &[4, 3, 2], &p))
}

#[test]
fn idx_round_trips_exactly() {
    let images = images_file("rt-images.idx");
    let labels = temp_file("rt-labels.idx", &idx_bytes(0x801, &[4], &[3, 0, 9, 1]));
    let d = load_idx(&images, &labels, "tiny").unwrap();
    assert_eq!(d.name, "tiny");
    assert_eq!(d.x.dim(), (4, 6));
    assert_eq!(d.labels(), Some(&[3, 0, 9, 1][..]));
    assert_eq!(d.n_classes(), 10);
    let mut expected = pixels();
    expected[5] = 255;
    // Image i, row r, column c is byte 16 + 6i + 2r + c of the file.
    for i in 0..4 {
        for k in 0..6 {
            let v = d.x[[i, k]];
            assert!((0.0..=1.0).contains(&v));
            assert_eq!(
                (v * 255.0).round() as u8,
                expected[6 * i + k],
                "image {i} pixel {k}"
            );
        }
    }
    assert_eq!(d.x[[0, 5]], 1.0);
    assert_eq!(d.x[[0, 0]], 0.0);
    assert_eq!(d.x[[1, 1]], f64::from(expected[7]) / 255.0);
}

#[test]
fn idx_rejects_wrong_magic_gzip_and_unsupported_types() {
    let reason = |bytes: Vec<u8>| data_error(parse_idx_images(&bytes, "img.idx"));
    let (file, line, r) = reason(idx_bytes(0x1234_5678, &[1, 1, 1], &[0]));
    assert_eq!((file.as_str(), line), ("img.idx", 0));
    assert!(r.contains("is 0x12345678, expected 0x00000803"), "{r}");
    // A label file passed as images.
    let (_, _, r) = reason(idx_bytes(0x801, &[1], &[0]));
    assert!(
        r.contains("declares 1 dimension(s), expected 0x00000803"),
        "{r}"
    );
    // gzip magic 1f 8b, then deflate method 8.
    let (_, _, r) = reason(vec![0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0]);
    assert!(r.contains("gzip-compressed: gunzip it first"), "{r}");
    // 32-bit floats (type 0x0d).
    let (_, _, r) = reason(idx_bytes(0xD03, &[1, 1, 1], &[0, 0, 0, 0]));
    assert!(
        r.contains("unsupported element type 0x0d (32-bit float)"),
        "{r}"
    );
    let (_, _, r) = data_error(parse_idx_labels(&idx_bytes(0x803, &[1, 1, 1], &[0]), "l"));
    assert!(r.contains("expected 0x00000801"), "{r}");
}

#[test]
fn idx_rejects_truncated_over_long_and_empty_files() {
    let p = pixels();
    let reason = |bytes: Vec<u8>| data_error(parse_idx_images(&bytes, "img.idx")).2;
    let r = reason(idx_bytes(0x803, &[4, 3, 2], &p[..23]));
    assert!(
        r.starts_with("truncated: 23 bytes follow the 16-byte header, expected 4 × 3 × 2 = 24"),
        "{r}"
    );
    let mut long = p.clone();
    long.push(0);
    let r = reason(idx_bytes(0x803, &[4, 3, 2], &long));
    assert!(r.starts_with("over-long: 25 bytes follow"), "{r}");
    let r = reason(idx_bytes(0x803, &[4, 3], &[]));
    assert!(
        r.contains("truncated: the file has 12 bytes, the header"),
        "{r}"
    );
    assert!(r.contains("needs 16"), "{r}");
    let r = reason(vec![0, 0]);
    assert!(r.contains("truncated: the file has 2 bytes"), "{r}");
    let r = reason(idx_bytes(0x803, &[4, 0, 2], &[]));
    assert!(r.contains("the rows (the size at byte 8) is 0"), "{r}");
    let r = data_error(parse_idx_labels(&idx_bytes(0x801, &[3], &[1, 2]), "l")).2;
    assert!(r.contains("expected 3 = 3"), "{r}");
    assert_eq!(
        parse_idx_labels(&idx_bytes(0x801, &[3], &[1, 2, 3]), "l").unwrap(),
        [1, 2, 3]
    );
}

#[test]
fn load_idx_rejects_count_mismatches_and_labels_above_nine() {
    let images = images_file("cm-images.idx");
    let three = temp_file("cm-labels3.idx", &idx_bytes(0x801, &[3], &[1, 2, 3]));
    let (file, line, r) = data_error(load_idx(&images, &three, "m"));
    assert_eq!((file, line), (three.display().to_string(), 0));
    assert!(
        r.contains("3 labels, but") && r.contains("has 4 images"),
        "{r}"
    );
    let twelve = temp_file("cm-labels12.idx", &idx_bytes(0x801, &[4], &[1, 12, 3, 4]));
    let (file, _, r) = data_error(load_idx(&images, &twelve, "m"));
    assert_eq!(file, twelve.display().to_string());
    assert!(
        r.contains("label 12 of example 2 (byte offset 9) is not a digit 0..9"),
        "{r}"
    );
    let gz = temp_file("cm-images.gz", &[0x1f, 0x8b, 8, 0, 0, 0]);
    let (file, _, r) = data_error(load_idx(&gz, &three, "m"));
    assert_eq!(file, gz.display().to_string());
    assert!(r.contains("gunzip"), "{r}");
    let missing = images.with_file_name("cm-missing.idx");
    assert!(matches!(
        load_idx(&missing, &three, "m"),
        Err(Error::Io { .. })
    ));
}

// ---------------------------------------------------------------------------------------------
// Splits

/// `base`'s targets with feature 0 = the row's index, so each part says which rows it holds.
fn indexed(base: &Dataset) -> Dataset {
    let n = base.len();
    Dataset {
        name: base.name.clone(),
        x: Array2::from_shape_fn((n, 1), |(i, _)| i as f64),
        target: base.target.clone(),
    }
}

fn rows_of(d: &Dataset) -> Vec<usize> {
    d.x.column(0).iter().map(|&v| v as usize).collect()
}

fn round(f: f64, n: usize) -> usize {
    (f * n as f64).round() as usize
}

#[test]
fn stratified_splits_are_disjoint_covering_sorted_and_keep_proportions() {
    for name in ["breast-cancer", "digits"] {
        let base = builtin(name).unwrap();
        let d = indexed(&base);
        let counts = base.class_counts().unwrap();
        let labels = base.labels().unwrap();
        let (v, t) = (0.2, 0.15);
        let s = d.split(v, t, 42).unwrap();
        let mut all = Vec::new();
        for (part, frac) in [(&s.train, 1.0 - v - t), (&s.validation, v), (&s.test, t)] {
            let rows = rows_of(part);
            assert!(rows.windows(2).all(|w| w[0] < w[1]), "{name}: not in order");
            // The targets travelled with their rows.
            let part_labels = part.labels().unwrap();
            assert!(rows.iter().zip(part_labels).all(|(&i, &l)| labels[i] == l));
            let part_counts = part.class_counts().unwrap();
            for (c, (&got, &n_c)) in part_counts.iter().zip(&counts).enumerate() {
                let want = frac * n_c as f64;
                assert!(
                    (got as f64 - want).abs() <= 1.0,
                    "{name} class {c}: {got} of {n_c}, want ≈ {want}"
                );
            }
            all.extend(rows);
        }
        all.sort_unstable();
        assert_eq!(
            all,
            (0..d.len()).collect::<Vec<_>>(),
            "{name}: not a partition"
        );
        // Sizes as documented: round(fraction · n_c) per class, train the rest.
        let val_counts = s.validation.class_counts().unwrap();
        let test_counts = s.test.class_counts().unwrap();
        let train_counts = s.train.class_counts().unwrap();
        for c in 0..counts.len() {
            assert_eq!(val_counts[c], round(v, counts[c]));
            assert_eq!(test_counts[c], round(t, counts[c]));
            assert_eq!(train_counts[c], counts[c] - val_counts[c] - test_counts[c]);
        }
    }
    // breast-cancer by hand: validation round(0.2·212) + round(0.2·357) = 42 + 71.
    let s = builtin("breast-cancer")
        .unwrap()
        .split(0.2, 0.15, 1)
        .unwrap();
    assert_eq!(
        (s.validation.len(), s.test.len(), s.train.len()),
        (113, 86, 370)
    );
}

#[test]
fn regression_splits_are_a_plain_shuffle() {
    let d = indexed(&builtin("diabetes").unwrap());
    let s = d.split(0.25, 0.1, 7).unwrap();
    assert_eq!((s.validation.len(), s.test.len()), (111, 44)); // round(110.5), round(44.2)
    assert_eq!(s.train.len(), 442 - 111 - 44);
    let mut all: Vec<usize> = [&s.train, &s.validation, &s.test]
        .iter()
        .flat_map(|p| rows_of(p))
        .collect();
    all.sort_unstable();
    assert_eq!(all, (0..442).collect::<Vec<_>>());
    let y = d.values().unwrap();
    for part in [&s.train, &s.validation, &s.test] {
        let rows = rows_of(part);
        assert!(rows.windows(2).all(|w| w[0] < w[1]));
        assert!(rows
            .iter()
            .zip(part.values().unwrap())
            .all(|(&i, &v)| y[i] == v));
    }
    // No fractions: everything is training data.
    let all_train = d.split(0.0, 0.0, 7).unwrap();
    assert_eq!(
        (all_train.train, all_train.validation.len()),
        (d.clone(), 0)
    );
}

#[test]
fn splits_are_deterministic_for_a_seed_and_differ_between_seeds() {
    let d = indexed(&builtin("digits").unwrap());
    let a = d.split(0.2, 0.2, 5).unwrap();
    assert_eq!(a, d.split(0.2, 0.2, 5).unwrap());
    let b = d.split(0.2, 0.2, 6).unwrap();
    assert_ne!(rows_of(&a.test), rows_of(&b.test));
    assert_eq!(a.test.len(), b.test.len());
    // Over many seeds each row lands in the test part about 20% of the time.
    let r = indexed(&builtin("diabetes").unwrap());
    let mut hits = vec![0usize; r.len()];
    let seeds = 400;
    for seed in 0..seeds {
        for i in rows_of(&r.split(0.0, 0.2, seed).unwrap().test) {
            hits[i] += 1;
        }
    }
    // Binomial(400, 88/442): mean 79.6, sd 8.0; the extremes of 442 rows stay within 5 sd.
    let p = 88.0 / 442.0 * seeds as f64;
    assert!(
        hits.iter().all(|&h| (h as f64 - p).abs() < 40.0),
        "{hits:?}"
    );
}

#[test]
fn bad_fractions_are_rejected() {
    let d = builtin("diabetes").unwrap();
    for (v, t, name) in [
        (1.0, 0.0, "validation"),
        (-0.1, 0.0, "validation"),
        (f64::NAN, 0.0, "validation"),
        (0.0, 1.5, "test"),
        (0.6, 0.4, "validation + test"),
    ] {
        match d.split(v, t, 0) {
            Err(Error::InvalidParameter { name: got, .. }) => assert_eq!(got, name),
            other => panic!("({v}, {t}): {other:?}"),
        }
    }
    let tiny = d.select(&[0, 1]);
    assert!(matches!(
        tiny.split(0.5, 0.45, 0),
        Err(Error::Infeasible(_))
    ));
}

#[test]
fn shuffled_indices_is_a_permutation() {
    let mut rng = dptune::rng::stream(9, &[]);
    let mut p = shuffled_indices(100, &mut rng);
    assert_ne!(p, (0..100).collect::<Vec<_>>());
    p.sort_unstable();
    assert_eq!(p, (0..100).collect::<Vec<_>>());
    assert!(shuffled_indices(0, &mut rng).is_empty());
}

// ---------------------------------------------------------------------------------------------
// Preprocessing

#[test]
fn standardiser_matches_numpy_and_centres_the_training_part() {
    let d = builtin("breast-cancer").unwrap();
    let all = Standardiser::fit(&d.x);
    // numpy: x[:, 0].mean(), x[:, 0].std() (population), and the same for column 3.
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs();
    assert!(close(all.mean[0], 14.127291739894552), "{}", all.mean[0]);
    assert!(close(all.sd[0], 3.520950760711062), "{}", all.sd[0]);
    assert!(close(all.mean[3], 654.8891036906855), "{}", all.mean[3]);
    assert!(close(all.sd[3], 351.60475406323), "{}", all.sd[3]);

    let s = d.split(0.2, 0.2, 3).unwrap();
    let fit = Standardiser::fit(&s.train.x);
    let train = s.train.standardised(&fit);
    assert_eq!(train.target, s.train.target);
    let n = train.len() as f64;
    for col in train.x.axis_iter(Axis(1)) {
        let m = col.sum() / n;
        let var = col.iter().map(|v| (v - m).powi(2)).sum::<f64>() / n;
        assert!(m.abs() < 1e-12 && (var - 1.0).abs() < 1e-12, "{m} {var}");
    }
    // The test part is mapped with the training statistics, not its own.
    let test = s.test.standardised(&fit);
    let expect = (s.test.x[[0, 0]] - fit.mean[0]) / fit.sd[0];
    assert_eq!(test.x[[0, 0]], expect);
    assert_ne!(fit, Standardiser::fit(&s.test.x));
}

#[test]
fn a_zero_variance_column_maps_to_zero() {
    // 0.1 · 3 / 3 ≠ 0.1 in floating point: a computed mean would leave a residue.
    let x = ndarray::array![[0.1, 1.0], [0.1, 2.0], [0.1, 4.0]];
    let s = Standardiser::fit(&x);
    assert_eq!(s.sd[0], 1.0);
    let z = s.apply(&x);
    assert!(z.column(0).iter().all(|&v| v == 0.0), "{z}");
    assert!(z.iter().all(|v| v.is_finite()));
    // A new value in that column moves by its distance from the constant.
    let other = s.apply(&ndarray::array![[0.6, 1.0]]);
    assert_eq!(other[[0, 0]], 0.5);
}

#[test]
fn clip_rows_bounds_every_norm_and_keeps_short_rows() {
    let mut rng = dptune::rng::stream(11, &[]);
    let n = 200;
    let x = Array2::from_shape_fn((n, 5), |(i, _)| {
        dptune::rng::normal(&mut rng) * (i as f64 / 40.0)
    });
    let norm = |r: ndarray::ArrayView1<f64>| r.iter().map(|v| v * v).sum::<f64>().sqrt();
    for max_norm in [1.0, 0.3, 2.5] {
        let mut c = x.clone();
        clip_rows(&mut c, max_norm);
        let mut clipped = 0;
        for (before, after) in x.axis_iter(Axis(0)).zip(c.axis_iter(Axis(0))) {
            let (nb, na) = (norm(before), norm(after));
            assert!(
                na <= max_norm * (1.0 + 4.0 * f64::EPSILON),
                "{na} > {max_norm}"
            );
            if nb <= max_norm {
                assert_eq!(before, after, "a short row changed");
            } else {
                clipped += 1;
                // Same direction, length max_norm.
                assert!((na - max_norm).abs() <= 1e-14 * max_norm, "{na}");
                let k = max_norm / nb;
                for (b, a) in before.iter().zip(after) {
                    assert!((b * k - a).abs() <= 1e-14 * max_norm, "{b} {a}");
                }
            }
        }
        assert!(clipped > 10 && clipped < n, "{clipped} rows clipped");
    }
    // A row exactly on the bound stays as it is.
    let mut x = ndarray::array![[0.6, 0.8], [3.0, 4.0]];
    clip_rows(&mut x, 1.0);
    assert_eq!(x.row(0).to_vec(), [0.6, 0.8]);
    assert!((x[[1, 0]] - 0.6).abs() < 1e-15 && (x[[1, 1]] - 0.8).abs() < 1e-15);
}
