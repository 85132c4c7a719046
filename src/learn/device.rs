//! Where DP-SGD runs: `device = "cpu" | "cuda" | "auto"` in experiment files and workloads.
//!
//! `cuda` needs a build with `--features cuda` and a GPU; `auto` takes the GPU when both are
//! there and otherwise the CPU, saying so once on stderr. The privacy accounting is the run's
//! [`DpSgdConfig::privacy`] on either device. The GPU computes in f32 and draws its noise by
//! Philox (see [`super::gpu`]), so its numbers are not the CPU's: a committed result records
//! the device it was made on, and the default is the CPU.

use super::dpsgd::{DpSgdConfig, Trained};
use super::model::Model;
use crate::error::{Error, Result};
use ndarray::ArrayView2;
use rand::RngCore;

/// The device setting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Device {
    #[default]
    Cpu,
    Cuda,
    Auto,
}

impl Device {
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "cpu" => Ok(Device::Cpu),
            "cuda" => Ok(Device::Cuda),
            "auto" => Ok(Device::Auto),
            other => Err(Error::invalid("device", other, "one of cpu, cuda, auto")),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Device::Cpu => "cpu",
            Device::Cuda => "cuda",
            Device::Auto => "auto",
        }
    }

    /// Whether runs on this setting go to the GPU here: `cuda` is an error where no GPU can be
    /// used (built without the feature, no library, no device); `auto` falls back to the CPU
    /// with one line on stderr.
    pub fn uses_gpu(self) -> Result<bool> {
        match self {
            Device::Cpu => Ok(false),
            Device::Cuda => gpu_available().map(|_| true),
            Device::Auto => match gpu_available() {
                Ok(()) => Ok(true),
                Err(e) => {
                    static SAID: std::sync::Once = std::sync::Once::new();
                    SAID.call_once(|| eprintln!("device = auto: training on the CPU ({e})"));
                    Ok(false)
                }
            },
        }
    }

    /// Trains one run as [`DpSgdConfig::train`] does, on this device.
    pub fn train(
        self,
        config: &DpSgdConfig,
        model: &dyn Model,
        x: ArrayView2<f64>,
        labels: &[usize],
        rng: &mut dyn RngCore,
    ) -> Result<Trained> {
        let init = model.init(rng);
        self.train_from(config, model, init, x, labels, rng)
    }

    /// Trains one run from `init` as [`DpSgdConfig::train_from`] does, on this device.
    pub fn train_from(
        self,
        config: &DpSgdConfig,
        model: &dyn Model,
        init: Vec<f64>,
        x: ArrayView2<f64>,
        labels: &[usize],
        rng: &mut dyn RngCore,
    ) -> Result<Trained> {
        let mut out = self.train_many(model, x, labels, vec![(config.clone(), init, rng)])?;
        out.pop().expect("one result per run")
    }

    /// Trains several runs (settings, initial parameters, stream) on this device, one result
    /// per run: on the GPU in one call (the runs side by side), on the CPU one after another,
    /// each as [`DpSgdConfig::train_from`] trains it.
    pub fn train_many(
        self,
        model: &dyn Model,
        x: ArrayView2<f64>,
        labels: &[usize],
        runs: Vec<(DpSgdConfig, Vec<f64>, &mut dyn RngCore)>,
    ) -> Result<Vec<Result<Trained>>> {
        if self.uses_gpu()? {
            return train_on_gpu(model, x, labels, runs);
        }
        Ok(runs
            .into_iter()
            .map(|(config, init, rng)| config.train_from(model, init, x, labels, rng))
            .collect())
    }
}

#[cfg(feature = "cuda")]
mod shared {
    use super::super::gpu::GpuDevice;
    use crate::error::{Error, Result};
    use std::sync::{Mutex, OnceLock, PoisonError};

    /// The process's GPU: handles lent to callers, one more opened whenever every handle is in
    /// use, so that each thread trains on its own stream and the runs of several threads
    /// overlap on the device (a handle's numbers do not depend on which handle it is).
    struct Pool {
        /// The first handle, kept to open the others.
        base: GpuDevice,
        idle: Mutex<Vec<GpuDevice>>,
    }

    fn pool() -> Result<&'static Pool> {
        static POOL: OnceLock<std::result::Result<Pool, String>> = OnceLock::new();
        POOL.get_or_init(|| {
            GpuDevice::open()
                .map(|base| Pool {
                    base,
                    idle: Mutex::new(Vec::new()),
                })
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| Error::Device(e.trim_start_matches("GPU: ").to_string()))
    }

    /// A handle lent to one caller; it goes back to the pool when dropped.
    pub(super) struct Lease(Option<GpuDevice>);

    impl std::ops::Deref for Lease {
        type Target = GpuDevice;
        fn deref(&self) -> &GpuDevice {
            self.0
                .as_ref()
                .expect("a lease holds its handle until dropped")
        }
    }

    impl Drop for Lease {
        fn drop(&mut self) {
            if let (Some(dev), Ok(pool)) = (self.0.take(), pool()) {
                pool.idle
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(dev);
            }
        }
    }

    pub(super) fn available() -> Result<()> {
        pool().map(|_| ())
    }

    /// A handle of its own for the caller: an idle one, or a new one.
    pub(super) fn lease() -> Result<Lease> {
        let pool = pool()?;
        let idle = pool
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let dev = match idle {
            Some(dev) => dev,
            None => pool.base.sibling()?,
        };
        Ok(Lease(Some(dev)))
    }
}

#[cfg(feature = "cuda")]
fn gpu_available() -> Result<()> {
    shared::available()
}

#[cfg(not(feature = "cuda"))]
fn gpu_available() -> Result<()> {
    Err(Error::Device(
        "this dptune was built without the `cuda` feature (cargo build --features cuda)".into(),
    ))
}

/// Trains every run (settings, initial parameters, stream after the initialisation) on the
/// GPU at once; one result per run.
#[cfg(feature = "cuda")]
pub fn train_on_gpu(
    model: &dyn Model,
    x: ArrayView2<f64>,
    labels: &[usize],
    runs: Vec<(DpSgdConfig, Vec<f64>, &mut dyn RngCore)>,
) -> Result<Vec<Result<Trained>>> {
    use super::gpu::{GpuRun, Noise};
    let gpu = shared::lease()?;
    let data = gpu.upload(x, labels)?;
    let runs = runs
        .into_iter()
        .map(|(config, init, rng)| GpuRun { config, init, rng })
        .collect();
    gpu.train_many(model, &data, runs, Noise::Device)
}

#[cfg(not(feature = "cuda"))]
pub fn train_on_gpu(
    _model: &dyn Model,
    _x: ArrayView2<f64>,
    _labels: &[usize],
    _runs: Vec<(DpSgdConfig, Vec<f64>, &mut dyn RngCore)>,
) -> Result<Vec<Result<Trained>>> {
    Err(gpu_available().expect_err("no GPU without the feature"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_three_settings_and_names_the_bad_one() {
        for d in [Device::Cpu, Device::Cuda, Device::Auto] {
            assert_eq!(Device::parse(d.name()).unwrap(), d);
        }
        let e = Device::parse("gpu").unwrap_err().to_string();
        assert!(e.contains("device") && e.contains("cpu, cuda, auto"), "{e}");
    }

    /// Without the feature (or without a GPU) `cuda` is a clear error and `auto` the CPU.
    #[cfg(not(feature = "cuda"))]
    #[test]
    fn without_the_feature_cuda_is_an_error_and_auto_is_the_cpu() {
        let e = Device::Cuda.uses_gpu().unwrap_err().to_string();
        assert!(e.contains("--features cuda"), "{e}");
        assert!(!Device::Auto.uses_gpu().unwrap());
        assert!(!Device::Cpu.uses_gpu().unwrap());
    }
}
