//! The IDX format of MNIST (<http://yann.lecun.com/exdb/mnist/>), uncompressed: a big-endian
//! magic number `00 00 tt dd` (element type `tt`, `dd` dimensions), `dd` big-endian u32
//! sizes, then the elements in row-major order. Only unsigned bytes (`tt` = 0x08) occur in
//! MNIST and only they are read: images `0x00000803` (count × rows × columns) and labels
//! `0x00000801` (count). Errors are [`Error::Data`] with line 0 and byte offsets in the reason.

use super::{Dataset, Target};
use crate::error::{Error, Result};
use ndarray::Array2;
use std::path::Path;

const UNSIGNED_BYTE: u8 = 0x08;
const IMAGE_DIMS: [&str; 3] = ["count", "rows", "columns"];
const LABEL_DIMS: [&str; 1] = ["count"];

/// Images, one row per image, pixels scaled from 0..=255 to [0, 1] (row-major pixels).
pub fn parse_idx_images(bytes: &[u8], source: &str) -> Result<Array2<f64>> {
    let (dims, payload) = parse(bytes, source, &IMAGE_DIMS, "unsigned-byte images")?;
    let pixels = payload.iter().map(|&p| f64::from(p) / 255.0).collect();
    Ok(Array2::from_shape_vec((dims[0], dims[1] * dims[2]), pixels).expect("checked length"))
}

/// Labels, one byte per example.
pub fn parse_idx_labels(bytes: &[u8], source: &str) -> Result<Vec<u8>> {
    let (_, payload) = parse(bytes, source, &LABEL_DIMS, "unsigned-byte labels")?;
    Ok(payload.to_vec())
}

/// An MNIST-style data set from an (uncompressed) image file and label file: classes "0".."9".
pub fn load_idx(images: &Path, labels: &Path, name: &str) -> Result<Dataset> {
    let digits: Vec<String> = (0..10).map(|d| d.to_string()).collect();
    load_idx_classes(images, labels, name, &digits, "a digit 0..9")
}

/// An IDX image file and label file whose labels index `classes` (`what` says what a label
/// must be, for the error: e.g. "a digit 0..9"). The counts must agree.
pub(crate) fn load_idx_classes(
    images: &Path,
    labels: &Path,
    name: &str,
    classes: &[String],
    what: &str,
) -> Result<Dataset> {
    let read = |path: &Path| std::fs::read(path).map_err(|e| Error::io(path, e));
    let labels_source = labels.display().to_string();
    let x = parse_idx_images(&read(images)?, &images.display().to_string())?;
    let raw = parse_idx_labels(&read(labels)?, &labels_source)?;
    let err = |reason: String| Error::Data {
        file: labels_source.clone(),
        line: 0,
        reason,
    };
    if raw.len() != x.nrows() {
        return Err(err(format!(
            "{} labels, but {} has {} images: the counts must agree",
            raw.len(),
            images.display(),
            x.nrows()
        )));
    }
    if let Some(i) = raw.iter().position(|&l| usize::from(l) >= classes.len()) {
        return Err(err(format!(
            "label {} of example {} (byte offset {}) is not {what}",
            raw[i],
            i + 1,
            8 + i
        )));
    }
    Ok(Dataset {
        name: name.to_string(),
        x,
        target: Target::Classes {
            labels: raw.into_iter().map(usize::from).collect(),
            names: classes.to_vec(),
        },
    })
}

/// Checks the header against the expected unsigned-byte layout and returns the sizes and the
/// payload (exactly the product of the sizes).
fn parse<'a>(
    bytes: &'a [u8],
    source: &str,
    dim_names: &[&str],
    what: &str,
) -> Result<(Vec<usize>, &'a [u8])> {
    let err = |reason: String| Error::Data {
        file: source.to_string(),
        line: 0,
        reason,
    };
    let nd = dim_names.len();
    let expected = u32::from_be_bytes([0, 0, UNSIGNED_BYTE, nd as u8]);
    let layout = format!("{what}: {}", dim_names.join(" × "));
    if bytes.starts_with(&[0x1f, 0x8b]) {
        return Err(err(
            "gzip-compressed: gunzip it first (the file starts with the gzip magic 1f 8b)".into(),
        ));
    }
    if bytes.len() < 4 {
        return Err(err(format!(
            "truncated: the file has {} bytes, an IDX file starts with a 4-byte magic number \
             ({expected:#010x} for {layout})",
            bytes.len()
        )));
    }
    let magic = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    if bytes[0] != 0 || bytes[1] != 0 {
        return Err(err(format!(
            "not an IDX file: the magic number (bytes 0..4) is {magic:#010x}, expected \
             {expected:#010x} ({layout})"
        )));
    }
    if bytes[2] != UNSIGNED_BYTE {
        return Err(err(format!(
            "unsupported element type {:#04x} ({}) at byte 2 (magic number {magic:#010x}): only \
             unsigned bytes (0x08) are read, expected {expected:#010x} ({layout})",
            bytes[2],
            type_name(bytes[2])
        )));
    }
    if bytes[3] as usize != nd {
        return Err(err(format!(
            "the magic number {magic:#010x} declares {} dimension(s), expected {expected:#010x} \
             ({layout}){}",
            bytes[3],
            if bytes[3] == 1 {
                ": is this a label file?"
            } else if bytes[3] == 3 {
                ": is this an image file?"
            } else {
                ""
            }
        )));
    }
    let header = 4 + 4 * nd;
    if bytes.len() < header {
        return Err(err(format!(
            "truncated: the file has {} bytes, the header ({layout}) needs {header}",
            bytes.len()
        )));
    }
    let dims: Vec<usize> = (0..nd)
        .map(|k| {
            let at = 4 + 4 * k;
            u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]) as usize
        })
        .collect();
    if let Some(k) = dims.iter().position(|&d| d == 0) {
        return Err(err(format!(
            "the {} (the size at byte {}) is 0: an IDX data file needs at least one element",
            dim_names[k],
            4 + 4 * k
        )));
    }
    let sizes = dims
        .iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(" × ");
    let n = dims
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| err(format!("the sizes {sizes} are too large to hold in memory")))?;
    let payload = &bytes[header..];
    if payload.len() != n {
        let kind = if payload.len() < n {
            "truncated"
        } else {
            "over-long"
        };
        return Err(err(format!(
            "{kind}: {} bytes follow the {header}-byte header, expected {sizes} = {n} (file size \
             {} bytes)",
            payload.len(),
            header + n
        )));
    }
    Ok((dims, payload))
}

fn type_name(code: u8) -> &'static str {
    match code {
        0x08 => "unsigned byte",
        0x09 => "signed byte",
        0x0B => "16-bit integer",
        0x0C => "32-bit integer",
        0x0D => "32-bit float",
        0x0E => "64-bit float",
        _ => "not an IDX type",
    }
}
