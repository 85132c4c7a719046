//! Fashion-MNIST (H. Xiao, K. Rasul, R. Vollgraf, "Fashion-MNIST: a Novel Image Dataset for
//! Benchmarking Machine Learning Algorithms", arXiv:1708.07747, 2017; MIT licence, © 2017
//! Zalando SE): 28×28 grey-scale images of clothing in 10 classes, 60,000 for training and
//! 10,000 for testing (6,000 and 1,000 per class). The files are MNIST's IDX format, so the
//! IDX parser reads them; pixels are divided by 255 into [0, 1] and each image is one row of
//! 784 features (row-major pixels).
//!
//! [`fashion_mnist`] reads the cached copy that `just data` fetches (see [`super::cache`]);
//! [`load_fashion_mnist`] reads any (uncompressed) pair of IDX files with these classes.
//! MNIST itself has no route through a package registry: it stays data a user supplies to
//! [`super::load_idx`].

use super::cache::cached_file;
use super::idx::load_idx_classes;
use super::{Dataset, TrainTest};
use crate::error::{Error, Result};
use std::path::Path;

/// The class names, in label order (label 0 is "T-shirt/top").
pub const FASHION_MNIST_CLASSES: [&str; 10] = [
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
];

/// Pixels per image (28 × 28).
pub const FASHION_MNIST_PIXELS: usize = 784;
/// Images in the training file.
pub const FASHION_MNIST_TRAIN: usize = 60_000;
/// Images in the test file.
pub const FASHION_MNIST_TEST: usize = 10_000;

/// The cached Fashion-MNIST: train (60,000 × 784) and test (10,000 × 784), pixels in [0, 1].
/// A missing file is an error that says to run `just data`; a file with another number of
/// images is rejected (the cache is not the pinned release).
pub fn fashion_mnist() -> Result<TrainTest> {
    let part = |prefix: &str, n: usize| -> Result<Dataset> {
        let images = cached_file(&format!("fashion-mnist/{prefix}-images-idx3-ubyte"))?;
        let labels = cached_file(&format!("fashion-mnist/{prefix}-labels-idx1-ubyte"))?;
        let d = load_fashion_mnist(&images, &labels)?;
        if d.len() != n {
            return Err(Error::Data {
                file: images.display().to_string(),
                line: 0,
                reason: format!(
                    "{} images, the Fashion-MNIST file has {n}: the cache is not the pinned \
                     release (run `just data` to check and replace it)",
                    d.len()
                ),
            });
        }
        Ok(d)
    };
    Ok(TrainTest {
        train: part("train", FASHION_MNIST_TRAIN)?,
        test: part("t10k", FASHION_MNIST_TEST)?,
    })
}

/// Fashion-MNIST images and labels from an uncompressed IDX image file (28 × 28 images) and
/// label file (labels 0..9, named by [`FASHION_MNIST_CLASSES`]). Errors name the file; IDX
/// errors give byte offsets (line 0).
pub fn load_fashion_mnist(images: &Path, labels: &Path) -> Result<Dataset> {
    let classes: Vec<String> = FASHION_MNIST_CLASSES
        .iter()
        .map(|s| s.to_string())
        .collect();
    let d = load_idx_classes(
        images,
        labels,
        "fashion-mnist",
        &classes,
        "a Fashion-MNIST class 0..9",
    )?;
    if d.n_features() != FASHION_MNIST_PIXELS {
        return Err(Error::Data {
            file: images.display().to_string(),
            line: 0,
            reason: format!(
                "images of {} pixels, Fashion-MNIST's are 28 × 28 = {FASHION_MNIST_PIXELS}",
                d.n_features()
            ),
        });
    }
    Ok(d)
}
