//! UCI Adult ("Census Income": B. Becker, R. Kohavi, UCI Machine Learning Repository, 1996,
//! doi:10.24432/C5XW20, CC BY 4.0), encoded as LIBSVM's a1a–a9a encode it (J. Platt, "Fast
//! training of support vector machines using sequential minimal optimization", 1998): 123
//! binary one-hot features, target income > $50K (class 1, `>50K`; class 0 is `<=50K`).
//!
//! # The encoding (an approximation of a1a)
//!
//! Each of the 14 attributes becomes one group of indicator features, in the column order of
//! `adult.data`, so feature indices match a1a's (1-based there, 0-based here):
//!
//! | attribute | features | a1a indices | how |
//! |---|---|---|---|
//! | age | 5 | 1–5 | bins, edges 26, 34, 42, 51 |
//! | workclass | 8 | 6–13 | categories in `adult.names` order |
//! | fnlwgt | 5 | 14–18 | bins, edges 106670, 158662, 196342, 259882 |
//! | education | 16 | 19–34 | categories |
//! | education-num | 5 | 35–39 | bins, edges 9, 10, 11, 13 |
//! | marital-status | 7 | 40–46 | categories |
//! | occupation | 14 | 47–60 | categories |
//! | relationship | 6 | 61–66 | categories |
//! | race | 5 | 67–71 | categories |
//! | sex | 2 | 72–73 | categories |
//! | capital-gain | 2 | 74–75 | bins, edge 114 (zero / non-zero in both UCI files) |
//! | capital-loss | 2 | 76–77 | bins, edge 155 (zero / non-zero in both UCI files) |
//! | hours-per-week | 5 | 78–82 | bins, edges 36, 40, 41, 49 |
//! | native-country | 41 | 83–123 | categories |
//!
//! A row has exactly one 1 in each group, except that a missing value (`?`) gives a group of
//! zeros. A value x falls in bin b = the number of edges ≤ x (bins are [e_b, e_{b+1})).
//!
//! Platt's bin edges are not published. Ours are fixed constants, computed once from the 32,561
//! rows of `adult.data` by the rule of [`quantile_edges`]: edge k of B bins is the distinct
//! value v (other than the smallest) for which the fraction of rows below v is nearest to k/B
//! (ties to the smaller v), that is, quantile edges snapped to the boundaries between distinct
//! values, so heavy ties (40 hours a week is 47% of rows) never merge two bins.
//! `tests/suite/real_data.rs` recomputes them from the cached file. The encoding agrees with a1a's
//! first example (the first row of `adult.data`: features 3, 11, 14, 19, 39, 42, 55, 64, 67,
//! 73, 75, 76, 80, 83), but other rows may fall in a neighbouring bin of a quantised attribute:
//! results are comparable with a1a's, not identical. Because the edges are constants, a row's
//! encoding never depends on the other rows loaded (a subset encodes as in the full set).
//!
//! # Files and splits
//!
//! [`parse_adult`] reads the UCI format: 15 comma-separated cells per line (spaces around cells
//! ignored), lines starting with `|` skipped (`adult.test`'s first line is
//! `|1x3 Cross validator`), labels `<=50K` / `>50K` with an optional trailing `.` (as in
//! `adult.test`), blank lines at the end ignored. Errors name the file and the 1-based line.
//!
//! [`adult`] reads the cached files (`just data`). [`AdultSplit::A1a`] is the split the DPareto
//! release uses, by size: 30,956 training and 1,605 test rows (a1a.t and a1a), drawn from
//! `adult.data` by a seeded uniform holdout ([`holdout`]); the rows are not LIBSVM's (its
//! partition is not documented). [`AdultSplit::UciTest`] trains on all 32,561 rows of
//! `adult.data` and tests on the 16,281 of `adult.test`. A privacy guarantee depends on the
//! training size n, so say which split was used.

use super::cache::cached_file;
use super::{shuffled_indices, Dataset, Target, TrainTest};
use crate::error::{Error, Result};
use crate::rng::stream;
use ndarray::Array2;
use std::path::Path;

/// The number of encoded features.
pub const ADULT_FEATURES: usize = 123;
/// Rows of `adult.data`.
pub const ADULT_DATA_ROWS: usize = 32_561;
/// Rows of `adult.test` (its first, comment, line not counted).
pub const ADULT_TEST_ROWS: usize = 16_281;
/// Training rows of the a1a-sized split (the size of LIBSVM's a1a.t).
pub const A1A_TRAIN: usize = 30_956;
/// Test rows of the a1a-sized split (the size of LIBSVM's a1a).
pub const A1A_TEST: usize = 1_605;
/// The seed of the a1a-sized split that experiments use unless they say otherwise.
pub const ADULT_SPLIT_SEED: u64 = 1998;
/// The class names: label 0 is income ≤ $50K, label 1 is > $50K.
pub const ADULT_CLASSES: [&str; 2] = ["<=50K", ">50K"];

/// The stream tag of [`holdout`] ("hold").
const HOLDOUT_TAG: u64 = 0x686f_6c64;

/// One of the 14 attributes: how it is encoded.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Attribute {
    /// A number, one-hot over the bins cut at `edges` (edges.len() + 1 features).
    Binned {
        name: &'static str,
        edges: &'static [f64],
    },
    /// A category, one-hot over `values` (in `adult.names` order).
    Categorical {
        name: &'static str,
        values: &'static [&'static str],
    },
}

impl Attribute {
    pub fn name(&self) -> &'static str {
        match self {
            Attribute::Binned { name, .. } | Attribute::Categorical { name, .. } => name,
        }
    }

    /// The number of indicator features of the group.
    pub fn width(&self) -> usize {
        match self {
            Attribute::Binned { edges, .. } => edges.len() + 1,
            Attribute::Categorical { values, .. } => values.len(),
        }
    }
}

/// The 14 attributes in the column order of `adult.data` (the 15th column is the label),
/// with the bin edges and category orders of the encoding (see the module documentation).
pub const ADULT_ATTRIBUTES: [Attribute; 14] = [
    Attribute::Binned {
        name: "age",
        edges: &[26.0, 34.0, 42.0, 51.0],
    },
    Attribute::Categorical {
        name: "workclass",
        values: &[
            "Private",
            "Self-emp-not-inc",
            "Self-emp-inc",
            "Federal-gov",
            "Local-gov",
            "State-gov",
            "Without-pay",
            "Never-worked",
        ],
    },
    Attribute::Binned {
        name: "fnlwgt",
        edges: &[106_670.0, 158_662.0, 196_342.0, 259_882.0],
    },
    Attribute::Categorical {
        name: "education",
        values: &[
            "Bachelors",
            "Some-college",
            "11th",
            "HS-grad",
            "Prof-school",
            "Assoc-acdm",
            "Assoc-voc",
            "9th",
            "7th-8th",
            "12th",
            "Masters",
            "1st-4th",
            "10th",
            "Doctorate",
            "5th-6th",
            "Preschool",
        ],
    },
    Attribute::Binned {
        name: "education-num",
        edges: &[9.0, 10.0, 11.0, 13.0],
    },
    Attribute::Categorical {
        name: "marital-status",
        values: &[
            "Married-civ-spouse",
            "Divorced",
            "Never-married",
            "Separated",
            "Widowed",
            "Married-spouse-absent",
            "Married-AF-spouse",
        ],
    },
    Attribute::Categorical {
        name: "occupation",
        values: &[
            "Tech-support",
            "Craft-repair",
            "Other-service",
            "Sales",
            "Exec-managerial",
            "Prof-specialty",
            "Handlers-cleaners",
            "Machine-op-inspct",
            "Adm-clerical",
            "Farming-fishing",
            "Transport-moving",
            "Priv-house-serv",
            "Protective-serv",
            "Armed-Forces",
        ],
    },
    Attribute::Categorical {
        name: "relationship",
        values: &[
            "Wife",
            "Own-child",
            "Husband",
            "Not-in-family",
            "Other-relative",
            "Unmarried",
        ],
    },
    Attribute::Categorical {
        name: "race",
        values: &[
            "White",
            "Asian-Pac-Islander",
            "Amer-Indian-Eskimo",
            "Other",
            "Black",
        ],
    },
    Attribute::Categorical {
        name: "sex",
        values: &["Female", "Male"],
    },
    Attribute::Binned {
        name: "capital-gain",
        edges: &[114.0],
    },
    Attribute::Binned {
        name: "capital-loss",
        edges: &[155.0],
    },
    Attribute::Binned {
        name: "hours-per-week",
        edges: &[36.0, 40.0, 41.0, 49.0],
    },
    Attribute::Categorical {
        name: "native-country",
        values: &[
            "United-States",
            "Cambodia",
            "England",
            "Puerto-Rico",
            "Canada",
            "Germany",
            "Outlying-US(Guam-USVI-etc)",
            "India",
            "Japan",
            "Greece",
            "South",
            "China",
            "Cuba",
            "Iran",
            "Honduras",
            "Philippines",
            "Italy",
            "Poland",
            "Jamaica",
            "Vietnam",
            "Mexico",
            "Portugal",
            "Ireland",
            "France",
            "Dominican-Republic",
            "Laos",
            "Ecuador",
            "Taiwan",
            "Haiti",
            "Columbia",
            "Hungary",
            "Guatemala",
            "Nicaragua",
            "Scotland",
            "Thailand",
            "Yugoslavia",
            "El-Salvador",
            "Trinadad&Tobago",
            "Peru",
            "Hong",
            "Holand-Netherlands",
        ],
    },
];

/// The first feature of each attribute's group (0-based), then [`ADULT_FEATURES`].
pub fn group_offsets() -> [usize; 15] {
    let mut offsets = [0; 15];
    for (k, a) in ADULT_ATTRIBUTES.iter().enumerate() {
        offsets[k + 1] = offsets[k] + a.width();
    }
    offsets
}

/// A name for each of the 123 features: `age < 26`, `26 <= age < 34`, …, `age >= 51`,
/// `workclass = Private`, ….
pub fn adult_feature_names() -> Vec<String> {
    let mut names = Vec::with_capacity(ADULT_FEATURES);
    for a in &ADULT_ATTRIBUTES {
        match a {
            Attribute::Binned { name, edges } => {
                for b in 0..=edges.len() {
                    names.push(match (b.checked_sub(1).map(|i| edges[i]), edges.get(b)) {
                        (None, Some(hi)) => format!("{name} < {hi}"),
                        (Some(lo), Some(hi)) => format!("{lo} <= {name} < {hi}"),
                        (Some(lo), None) => format!("{name} >= {lo}"),
                        (None, None) => name.to_string(),
                    });
                }
            }
            Attribute::Categorical { name, values } => {
                names.extend(values.iter().map(|v| format!("{name} = {v}")))
            }
        }
    }
    names
}

/// Which train / test parts [`adult`] returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdultSplit {
    /// `adult.data` split by [`holdout`] into 30,956 training and 1,605 test rows (the sizes of
    /// LIBSVM's a1a.t and a1a, which the DPareto release trains and tests on).
    A1a { seed: u64 },
    /// All 32,561 rows of `adult.data` for training, the 16,281 of `adult.test` for testing.
    UciTest,
}

/// The cached Adult data (`just data`), encoded and split. A missing file is an error that
/// says to run `just data`; a file with another number of rows is rejected.
pub fn adult(split: AdultSplit) -> Result<TrainTest> {
    let data = load_cached("adult/adult.data", ADULT_DATA_ROWS)?;
    match split {
        AdultSplit::A1a { seed } => holdout(&data, A1A_TEST, seed),
        AdultSplit::UciTest => Ok(TrainTest {
            train: data,
            test: load_cached("adult/adult.test", ADULT_TEST_ROWS)?,
        }),
    }
}

fn load_cached(relative: &str, rows: usize) -> Result<Dataset> {
    let path = cached_file(relative)?;
    let d = load_adult(&path)?;
    if d.len() != rows {
        return Err(Error::Data {
            file: path.display().to_string(),
            line: 0,
            reason: format!(
                "{} rows, the UCI file has {rows}: the cache is not the pinned release (run \
                 `just data` to check and replace it)",
                d.len()
            ),
        });
    }
    Ok(d)
}

/// A seeded uniform holdout: `n_test` rows, drawn without replacement from the stream
/// `rng::stream(seed, [0x686f_6c64])` ("hold"; the first `n_test` of a Fisher–Yates
/// permutation), form the test part and the rest the training part; both keep the original
/// row order. Not stratified (LIBSVM's a1a is not either).
pub fn holdout(data: &Dataset, n_test: usize, seed: u64) -> Result<TrainTest> {
    if n_test == 0 || n_test >= data.len() {
        return Err(Error::invalid(
            "test rows",
            n_test.to_string(),
            format!(
                "between 1 and {} (the data set `{}` has {} rows)",
                data.len().saturating_sub(1),
                data.name,
                data.len()
            ),
        ));
    }
    let perm = shuffled_indices(data.len(), &mut stream(seed, &[HOLDOUT_TAG]));
    let (mut test, mut train) = (perm[..n_test].to_vec(), perm[n_test..].to_vec());
    test.sort_unstable();
    train.sort_unstable();
    Ok(TrainTest {
        train: data.select(&train),
        test: data.select(&test),
    })
}

/// Reads a UCI Adult file (`adult.data` or `adult.test`) and encodes it (see [`parse_adult`]).
pub fn load_adult(path: &Path) -> Result<Dataset> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    parse_adult(&text, &path.display().to_string())
}

/// Encodes the UCI Adult text `text` (`source` names it in errors) into the 123 one-hot
/// features; the data set is named `adult`. See the module documentation for the format.
pub fn parse_adult(text: &str, source: &str) -> Result<Dataset> {
    let err = |line: usize, reason: String| Error::Data {
        file: source.to_string(),
        line,
        reason,
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines: Vec<&str> = text.lines().collect();
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    let offsets = group_offsets();
    let mut x = Vec::new();
    let mut labels = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let line_no = i + 1;
        if line.starts_with('|') {
            continue;
        }
        let row = encode_line(line, &offsets).map_err(|reason| err(line_no, reason))?;
        x.extend_from_slice(&row.0);
        labels.push(row.1);
    }
    if labels.is_empty() {
        return Err(err(
            lines.len().max(1),
            "no examples: expected lines of 15 comma-separated cells (14 attributes, then \
             `<=50K` or `>50K`)"
                .into(),
        ));
    }
    let x = Array2::from_shape_vec((labels.len(), ADULT_FEATURES), x)
        .expect("one row of ADULT_FEATURES per label");
    Ok(Dataset {
        name: "adult".into(),
        x,
        target: Target::Classes {
            labels,
            names: ADULT_CLASSES.iter().map(|s| s.to_string()).collect(),
        },
    })
}

/// One line's 123 features and its label, or what is wrong with it.
fn encode_line(
    line: &str,
    offsets: &[usize; 15],
) -> std::result::Result<([f64; ADULT_FEATURES], usize), String> {
    if line.trim().is_empty() {
        return Err(
            "the line is empty: expected 15 comma-separated cells (remove blank lines)".into(),
        );
    }
    let cells: Vec<&str> = line.split(',').map(str::trim).collect();
    if cells.len() != 15 {
        return Err(format!(
            "row has {} cells, expected 15 (the 14 attributes age, workclass, …, \
             native-country, then the income label)",
            cells.len()
        ));
    }
    let mut row = [0.0; ADULT_FEATURES];
    for (k, (a, cell)) in ADULT_ATTRIBUTES.iter().zip(&cells).enumerate() {
        if *cell == "?" {
            continue; // missing: the group stays all zeros
        }
        let at = |what: String| format!("cell {} ({}) `{cell}` {what}", k + 1, a.name());
        let j = match a {
            Attribute::Binned { edges, .. } => {
                let v: f64 = cell
                    .parse()
                    .ok()
                    .filter(|v: &f64| v.is_finite())
                    .ok_or_else(|| at("is not a finite number (or `?` for missing)".into()))?;
                edges.iter().filter(|&&e| e <= v).count()
            }
            Attribute::Categorical { values, .. } => {
                values.iter().position(|v| v == cell).ok_or_else(|| {
                    at(format!(
                        "is not one of {} (or `?` for missing)",
                        values.join(", ")
                    ))
                })?
            }
        };
        row[offsets[k] + j] = 1.0;
    }
    let label = match cells[14].strip_suffix('.').unwrap_or(cells[14]) {
        "<=50K" => 0,
        ">50K" => 1,
        other => {
            return Err(format!(
                "cell 15 (income) `{other}` is not `<=50K` or `>50K` (a trailing `.` is allowed)"
            ))
        }
    };
    Ok((row, label))
}

/// The quantile edges of the encoding's rule for `bins` bins of `values`: edge k (k = 1 …
/// bins − 1) is the distinct value v, other than the smallest, for which the fraction of
/// `values` below v is nearest to k/bins (ties to the smaller v). Bin b then holds the values
/// with exactly b edges ≤ them. An error when `values` has fewer than `bins` distinct finite
/// values, or when two edges coincide (some bin would be empty).
pub fn quantile_edges(values: &[f64], bins: usize) -> Result<Vec<f64>> {
    if bins < 2 {
        return Err(Error::invalid("bins", bins.to_string(), "at least 2"));
    }
    if let Some(v) = values.iter().find(|v| !v.is_finite()) {
        return Err(Error::invalid("value", v.to_string(), "finite"));
    }
    let mut sorted = values.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    // (v, the number of values below v) for each distinct v but the smallest.
    let candidates: Vec<(f64, usize)> = (1..sorted.len())
        .filter(|&i| sorted[i] != sorted[i - 1])
        .map(|i| (sorted[i], i))
        .collect();
    let n = sorted.len() as u128;
    let b = bins as u128;
    let mut edges: Vec<f64> = Vec::with_capacity(bins - 1);
    for k in 1..b {
        // |below/n − k/b| compared exactly as |below·b − k·n|; the first minimum is the
        // smallest v.
        let Some(&(v, _)) = candidates
            .iter()
            .min_by_key(|&&(_, below)| (below as u128 * b).abs_diff(k * n))
        else {
            return Err(Error::Infeasible(format!(
                "{} values with {} distinct: {bins} bins need at least {bins} distinct values",
                values.len(),
                candidates.len() + usize::from(!sorted.is_empty())
            )));
        };
        if edges.last().is_some_and(|&last| last >= v) {
            return Err(Error::Infeasible(format!(
                "edges {k} and {} of {bins} bins both fall at {v}: some bin would be empty",
                k - 1
            )));
        }
        edges.push(v);
    }
    Ok(edges)
}

/// The edges [`quantile_edges`] computes for each binned attribute from the rows of a UCI
/// Adult file (`?` cells left out); with `adult.data` they are the encoding's constants.
pub fn adult_bin_edges(text: &str, source: &str) -> Result<Vec<(&'static str, Vec<f64>)>> {
    // Parsing first validates every line, so the cells below are known to be well formed.
    parse_adult(text, source)?;
    let rows: Vec<Vec<&str>> = text
        .lines()
        .filter(|l| !l.starts_with('|') && !l.trim().is_empty())
        .map(|l| l.split(',').map(str::trim).collect())
        .collect();
    let mut out = Vec::new();
    for (k, a) in ADULT_ATTRIBUTES.iter().enumerate() {
        if let Attribute::Binned { name, edges } = a {
            let values: Vec<f64> = rows
                .iter()
                .filter(|r| r[k] != "?")
                .map(|r| r[k].parse().expect("validated by parse_adult"))
                .collect();
            let computed = quantile_edges(&values, edges.len() + 1)
                .map_err(|e| e.context(&format!("{source}: {name}")))?;
            out.push((*name, computed));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIRST_ROW: &str = "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, \
                             Not-in-family, White, Male, 2174, 0, 40, United-States, <=50K";

    #[test]
    fn the_groups_add_up_to_123_features() {
        let widths: Vec<usize> = ADULT_ATTRIBUTES.iter().map(Attribute::width).collect();
        assert_eq!(widths, [5, 8, 5, 16, 5, 7, 14, 6, 5, 2, 2, 2, 5, 41]);
        assert_eq!(group_offsets()[14], ADULT_FEATURES);
        let names = adult_feature_names();
        assert_eq!(names.len(), ADULT_FEATURES);
        assert_eq!(names[0], "age < 26");
        assert_eq!(names[1], "26 <= age < 34");
        assert_eq!(names[4], "age >= 51");
        assert_eq!(names[5], "workclass = Private");
        assert_eq!(names[122], "native-country = Holand-Netherlands");
    }

    /// The first example of LIBSVM's a1a (label −1) is the first row of `adult.data`; its
    /// 1-based feature indices check the category orders and four of the six binnings.
    #[test]
    fn the_first_row_encodes_as_a1a_first_example() {
        let d = parse_adult(FIRST_ROW, "row").unwrap();
        let active: Vec<usize> = (0..ADULT_FEATURES)
            .filter(|&j| d.x[[0, j]] == 1.0)
            .map(|j| j + 1)
            .collect();
        assert_eq!(
            active,
            [3, 11, 14, 19, 39, 42, 55, 64, 67, 73, 75, 76, 80, 83]
        );
        assert_eq!(d.labels(), Some(&[0][..]));
        assert_eq!(d.x.sum(), 14.0);
    }

    #[test]
    fn missing_values_leave_their_group_empty() {
        let row = FIRST_ROW
            .replace("State-gov", "?")
            .replace("77516", "?")
            .replace("<=50K", ">50K.");
        let d = parse_adult(&row, "row").unwrap();
        let o = group_offsets();
        assert_eq!(d.x.slice(ndarray::s![0, o[1]..o[3]]).sum(), 0.0);
        assert_eq!(d.x.sum(), 12.0);
        assert_eq!(d.labels(), Some(&[1][..]));
    }

    #[test]
    fn edges_snap_quantiles_to_distinct_values() {
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(quantile_edges(&v, 5).unwrap(), [3.0, 5.0, 7.0, 9.0]);
        assert_eq!(quantile_edges(&v, 2).unwrap(), [6.0]);
        // 40% of the mass at 2: the boundary below 2 (10%) or above it (50%).
        let tied = [1.0, 2.0, 2.0, 2.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0];
        assert_eq!(quantile_edges(&tied, 3).unwrap(), [3.0, 5.0]);
        assert_eq!(quantile_edges(&tied, 5).unwrap(), [2.0, 3.0, 4.0, 6.0]);
        // Mostly zeros: the edge is the smallest positive value.
        let zeros = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 3.0, 8.0];
        assert_eq!(quantile_edges(&zeros, 2).unwrap(), [3.0]);
        assert!(matches!(
            quantile_edges(&[1.0, 1.0, 2.0], 3),
            Err(Error::Infeasible(_))
        ));
        assert!(quantile_edges(&[1.0, 1.0], 2).is_err());
        assert!(quantile_edges(&v, 1).is_err());
        assert!(quantile_edges(&[1.0, f64::NAN], 2).is_err());
    }

    #[test]
    fn holdout_is_seeded_disjoint_and_ordered() {
        let mut d = parse_adult(&vec![FIRST_ROW; 20].join("\n"), "rows").unwrap();
        for i in 0..20 {
            d.x[[i, 0]] = i as f64; // tag each row with its index
        }
        let a = holdout(&d, 5, 7).unwrap();
        let b = holdout(&d, 5, 7).unwrap();
        assert_eq!(a, b);
        assert_eq!((a.train.len(), a.test.len()), (15, 5));
        let mut rows: Vec<usize> = a
            .train
            .x
            .column(0)
            .iter()
            .chain(a.test.x.column(0).iter())
            .map(|&v| v as usize)
            .collect();
        let test_rows = a.test.x.column(0).to_vec();
        assert!(test_rows.windows(2).all(|w| w[0] < w[1]));
        rows.sort_unstable();
        assert_eq!(rows, (0..20).collect::<Vec<_>>());
        assert_ne!(holdout(&d, 5, 8).unwrap().test, a.test);
        assert!(holdout(&d, 0, 7).is_err());
        assert!(holdout(&d, 20, 7).is_err());
    }
}
