//! The UCI data set "Relative location of CT slices on axial axis" (F. Graf, H.-P. Kriegel,
//! M. Schubert, S. Pölsterl, A. Cavallaro, 2011; UCI Machine Learning Repository, data set 206):
//! its CSV schema, a loader, and a synthetic stand-in with the same schema for runs and tests
//! without the file (which is not shipped; see `data/README.md`).
//!
//! # Schema
//!
//! The UCI file `slice_localization_data.csv` (53,500 rows) has a header row, then one row per
//! CT slice of [`CT_COLUMNS`] = 386 comma-separated numbers: the patient id (`patientId`),
//! [`CT_FEATURES`] = 384 features (`value0` … `value383`, histograms of bone and air
//! structures) and the target (`reference`, the slice's relative position on the axial axis,
//! 0–100). The loader requires exactly that many columns, a header of names (not numbers) and a
//! finite number in every cell, and returns the 384 features and the target as a regression
//! [`Dataset`]; the patient id is checked, then dropped.
//!
//! # Synthetic stand-in
//!
//! [`synthetic_ct_slices`] draws, from the stream `rng::stream(seed, [0x6374_736c])` ("ctsl"),
//! a data set of the same schema in which lengthscales matter: six latent factors per row, 288
//! features that are noisy copies of one factor each, 96 pure-noise features, and a smooth
//! nonlinear target of five of the factors. In order:
//!
//! 1. per feature j = 0…383, its noise sd s_j = 0.1 + 0.9·U_j (U_j uniform on [0, 1));
//! 2. per row i, in row order: six latent factors z_i ~ N(0, I₆); then per feature j, with
//!    m = j mod 8, x_ij = z_{i,m} + s_j·e_ij when m < 6 and x_ij = s_j·e_ij otherwise
//!    (e_ij ~ N(0, 1)); then the target
//!    y_i = 50 + 15·(sin(1.5 z₁) + 0.5 z₂z₃ + 0.3 z₄² − tanh(2 z₅)) + 2·e_i
//!    (z₁…z₆ = z_{i,0}…z_{i,5}; z₆ drives 48 features but not the target).
//!
//! Normals are [`crate::rng::normal`] draws. The stand-in is not a model of CT images; it only
//! has the file's shape, so that the SVR objective built on it has informative, redundant and
//! irrelevant features. Patient ids of its CSV form ([`ct_slices_csv`]) are ⌊97·i/rows⌋.

use super::csv::parse_number;
use super::{Dataset, Target};
use crate::error::{Error, Result};
use crate::rng::{normal, stream};
use ndarray::Array2;
use rand::Rng;
use std::fmt::Write;
use std::path::Path;

/// Features per row.
pub const CT_FEATURES: usize = 384;
/// Columns per row: the patient id, the features and the target.
pub const CT_COLUMNS: usize = CT_FEATURES + 2;
/// Rows of the synthetic stand-in (the UCI file has 53,500).
pub const STAND_IN_ROWS: usize = 10_000;
/// Patients in the UCI file (ids 0…96); the stand-in's CSV form spreads its rows over as many.
const PATIENTS: usize = 97;
/// Stream tag of the stand-in ("ctsl").
const STAND_IN_TAG: u64 = 0x6374_736c;
/// Latent factors of the stand-in.
const FACTORS: usize = 6;

/// Reads the CT-slices CSV file at `path` (see [`parse_ct_slices`]).
pub fn load_ct_slices(path: &Path) -> Result<Dataset> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    parse_ct_slices(&text, &path.display().to_string())
}

/// Parses CT-slices CSV `text` (module docs); `source` names it in errors. Accepts `\n` or
/// `\r\n` line ends, trailing blank lines and a UTF-8 byte-order mark.
pub fn parse_ct_slices(text: &str, source: &str) -> Result<Dataset> {
    let err = |line: usize, reason: String| Error::Data {
        file: source.to_string(),
        line,
        reason,
    };
    let schema = format!(
        "the CT-slices schema has {CT_COLUMNS} columns: patientId, value0 … value383, reference"
    );
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines: Vec<&str> = text.lines().collect();
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    let Some(header) = lines.first() else {
        return Err(err(1, format!("the file is empty; {schema}")));
    };
    let names: Vec<&str> = header.split(',').map(str::trim).collect();
    if names.len() != CT_COLUMNS {
        return Err(err(
            1,
            format!("the header has {} columns; {schema}", names.len()),
        ));
    }
    if let Some(j) = names.iter().position(|n| parse_number(n).is_ok()) {
        return Err(err(
            1,
            format!(
                "column {} of the first line is the number `{}`: the first line must be the \
                 header row of column names",
                j + 1,
                names[j]
            ),
        ));
    }
    if lines.len() == 1 {
        return Err(err(1, "the file has a header but no rows".into()));
    }
    let n = lines.len() - 1;
    let mut x = Vec::with_capacity(n * CT_FEATURES);
    let mut y = Vec::with_capacity(n);
    for (i, line) in lines[1..].iter().enumerate() {
        let line_no = i + 2;
        let mut count = 0;
        for (j, cell) in line.split(',').map(str::trim).enumerate() {
            count += 1;
            if j >= CT_COLUMNS {
                continue;
            }
            let v = parse_number(cell).map_err(|what| {
                err(
                    line_no,
                    format!("cell {} (`{}`) is {what}", j + 1, names[j]),
                )
            })?;
            match j {
                0 => {}
                _ if j == CT_COLUMNS - 1 => y.push(v),
                _ => x.push(v),
            }
        }
        if count != CT_COLUMNS {
            return Err(err(line_no, format!("the row has {count} cells; {schema}")));
        }
    }
    Ok(Dataset {
        name: "ct-slices".into(),
        x: Array2::from_shape_vec((n, CT_FEATURES), x).expect("n rows of CT_FEATURES cells"),
        target: Target::Values(y),
    })
}

/// The synthetic stand-in of `rows` rows for `seed` (module docs).
pub fn synthetic_ct_slices(seed: u64, rows: usize) -> Dataset {
    let mut rng = stream(seed, &[STAND_IN_TAG]);
    let noise_sd: Vec<f64> = (0..CT_FEATURES)
        .map(|_| 0.1 + 0.9 * rng.random::<f64>())
        .collect();
    let mut x = Array2::zeros((rows, CT_FEATURES));
    let mut y = Vec::with_capacity(rows);
    for mut row in x.rows_mut() {
        let z: [f64; FACTORS] = std::array::from_fn(|_| normal(&mut rng));
        for (j, (v, &s)) in row.iter_mut().zip(&noise_sd).enumerate() {
            let factor = z.get(j % 8).copied().unwrap_or(0.0);
            *v = factor + s * normal(&mut rng);
        }
        let signal =
            libm::sin(1.5 * z[0]) + 0.5 * z[1] * z[2] + 0.3 * z[3] * z[3] - libm::tanh(2.0 * z[4]);
        y.push(50.0 + 15.0 * signal + 2.0 * normal(&mut rng));
    }
    Dataset {
        name: "ct-slices-stand-in".into(),
        x,
        target: Target::Values(y),
    }
}

/// `data` (384 features and values) in the CT-slices CSV schema, with patient ids
/// ⌊97·i/rows⌋ and numbers written exactly (shortest round-trip form).
pub fn ct_slices_csv(data: &Dataset) -> Result<String> {
    let Some(values) = data.values() else {
        return Err(Error::invalid(
            "data",
            &data.name,
            "a regression data set (the CT-slices target is a number)",
        ));
    };
    if data.n_features() != CT_FEATURES {
        return Err(Error::invalid(
            "data",
            format!("{} features", data.n_features()),
            format!("{CT_FEATURES} features (the CT-slices schema)"),
        ));
    }
    let mut out = String::from("patientId");
    for j in 0..CT_FEATURES {
        write!(out, ",value{j}").expect("writing to a String");
    }
    out.push_str(",reference\n");
    let rows = data.len();
    for (i, (row, y)) in data.x.rows().into_iter().zip(values).enumerate() {
        write!(out, "{}", PATIENTS * i / rows).expect("writing to a String");
        for v in row {
            write!(out, ",{v:?}").expect("writing to a String");
        }
        writeln!(out, ",{y:?}").expect("writing to a String");
    }
    Ok(out)
}
