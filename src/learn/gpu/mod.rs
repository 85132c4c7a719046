//! DP-SGD on an NVIDIA GPU (feature `cuda`): many runs at once, each step a few cuBLAS
//! products and element-wise kernels ([`kernels.cu`](self), compiled by NVRTC when the device
//! is opened).
//!
//! The engine is the batched CPU engine's arithmetic in f32 on the device: per layer, one
//! strided-batched product for the forward pass, one for the back-propagated δ's, per-example
//! norms from ‖a_i‖ and ‖δ_i‖ (summed in double), clip factors, and one product for the
//! clipped weight-gradient sums. The R runs of a call share the model's architecture and the
//! data; each has its own hyperparameters (learning rate, lot size, clip, noise, optimiser,
//! sampling, length) and its own stream.
//!
//! **The same lots, drawn on the host.** Each run's lots come from its stream by the CPU
//! engine's own sampler ([`super::dpsgd::LotSampler`]), in the CPU engine's order (the lot,
//! then the step's noise key word), so a run sees exactly the lots it would see on the CPU.
//! The noise is drawn on the device from that key word by Philox4x32-10 and Box–Muller
//! ([`crate::rng::philox_normal`] is the host's copy), not by the CPU's ziggurat: the values
//! differ, the distribution is the same. [`Noise::Host`] (test mode) instead uploads the CPU
//! engine's exact noise, so that parameters after N steps can be compared with the CPU
//! engine's.
//!
//! **Privacy** is the run's [`DpSgdConfig::privacy`], the same object on both paths: the
//! engine only changes where the arithmetic runs. Per-example norms are summed in double and
//! inflated by [`CLIP_MARGIN`] before clipping, so that rounding never leaves a clipped
//! gradient longer than C.

use super::dpsgd::{DpSgdConfig, LotSampler, OnDivergence, Optimizer, Trained};
use super::mlp::Activation;
use super::model::{check_data, check_labels, Model};
use super::{Head, Network};
use crate::error::{Error, Result};
use cudarc::cublas::sys::cublasOperation_t;
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig, StridedBatchedConfig};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, DevicePtrMut,
    LaunchConfig, PushKernelArg,
};
use ndarray::ArrayView2;
use rand::RngCore;
use std::sync::Arc;

/// The CUDA source of the element-wise kernels.
const KERNELS: &str = include_str!("kernels.cu");
/// Rounding allowance on the per-example norm before clipping (f32 values, norms in double;
/// scaling a value by the clip factor in f32 moves its norm by at most 2⁻²⁴ relative).
pub const CLIP_MARGIN: f64 = 1e-6;
/// Steps whose lots are drawn and uploaded at once.
const CHUNK_STEPS: usize = 32;
/// Rows per block when the losses are summed.
const LOSS_ROWS: usize = 4096;

fn device_error(what: &str, e: impl std::fmt::Debug) -> Error {
    Error::Device(format!("{what}: {e:?}"))
}

/// Why no GPU can be used here, or None when the CUDA libraries are present (a device may
/// still be missing: [`GpuDevice::open`] says).
pub fn missing_library() -> Option<&'static str> {
    // SAFETY: these only try to load the shared libraries; nothing is called through them.
    unsafe {
        if !cudarc::driver::sys::is_culib_present() {
            return Some("the CUDA driver (libcuda) is not installed");
        }
        if !cudarc::nvrtc::sys::is_culib_present() {
            return Some("NVRTC (libnvrtc) is not installed");
        }
        if !cudarc::cublas::sys::is_culib_present() {
            return Some("cuBLAS (libcublas) is not installed");
        }
    }
    None
}

/// A handle on the GPU: its own stream and cuBLAS handle, and the compiled kernels. Work on
/// different handles of one device ([`GpuDevice::sibling`]) overlaps on the GPU: one DP-SGD run
/// at batch 256 fills a small part of an H100, so several threads each training on their own
/// handle go several times faster than one at a time, with the same numbers.
pub struct GpuDevice {
    stream: Arc<CudaStream>,
    blas: CudaBlas,
    kernels: Kernels,
    name: String,
}

#[derive(Clone)]
struct Kernels {
    _module: Arc<CudaModule>,
    normals: CudaFunction,
    gather: CudaFunction,
    bias_act: CudaFunction,
    head: CudaFunction,
    act_back: CudaFunction,
    norm_acc: CudaFunction,
    clip_rows: CudaFunction,
    loss_partial: CudaFunction,
    loss_total: CudaFunction,
    update: CudaFunction,
    revert: CudaFunction,
    deactivate: CudaFunction,
}

/// Where a run's noise comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Noise {
    /// Drawn on the device (Philox under the step's key word): the normal mode.
    Device,
    /// The CPU engine's exact values, drawn on the host and uploaded each step (test mode).
    Host,
}

/// The training data on the device: features (f32, row-major), their squared norms (double),
/// and labels. Uploaded once, used by every call.
pub struct GpuData {
    /// The stream of the handle that uploaded it: only that handle trains on it.
    stream: Arc<CudaStream>,
    x: CudaSlice<f32>,
    xn2: CudaSlice<f64>,
    labels: CudaSlice<i32>,
    /// The host copy of the labels, to check against a model's classes.
    host_labels: Vec<usize>,
    n: usize,
    d: usize,
}

impl GpuData {
    pub fn rows(&self) -> usize {
        self.n
    }
}

/// One run of a [`GpuDevice::train_many`] call: its settings, its initial parameters and its
/// stream (positioned where the CPU engine's `train_from` would start).
pub struct GpuRun<'a> {
    pub config: DpSgdConfig,
    pub init: Vec<f64>,
    pub rng: &'a mut dyn RngCore,
}

fn launch_cfg(threads: usize) -> LaunchConfig {
    LaunchConfig::for_num_elems(threads.max(1) as u32)
}

impl GpuDevice {
    /// Opens GPU 0 and compiles the kernels; an error (never a panic) when a library or the
    /// device is missing.
    pub fn open() -> Result<Self> {
        if let Some(why) = missing_library() {
            return Err(Error::Device(why.to_string()));
        }
        let ctx = CudaContext::new(0).map_err(|e| device_error("no usable GPU", e))?;
        let name = ctx.name().unwrap_or_else(|_| "an unnamed GPU".to_string());
        // Every buffer is used on the stream of the handle that made it (data uploaded by
        // one handle is refused by another: `train_many` checks), so cudarc's cross-stream
        // event tracking, an event recorded per buffer per launch, is not needed.
        // SAFETY: set before any buffer of this context object exists.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx
            .new_stream()
            .map_err(|e| device_error("opening a stream", e))?;
        let ptx = cudarc::nvrtc::compile_ptx(KERNELS)
            .map_err(|e| device_error("compiling the kernels", e))?;
        let module = ctx
            .load_module(ptx)
            .map_err(|e| device_error("loading the kernels", e))?;
        let f = |name: &str| {
            module
                .load_function(name)
                .map_err(|e| device_error(&format!("kernel {name}"), e))
        };
        let kernels = Kernels {
            normals: f("normals")?,
            gather: f("gather")?,
            bias_act: f("bias_act")?,
            head: f("head")?,
            act_back: f("act_back")?,
            norm_acc: f("norm_acc")?,
            clip_rows: f("clip_rows")?,
            loss_partial: f("loss_partial")?,
            loss_total: f("loss_total")?,
            update: f("update")?,
            revert: f("revert")?,
            deactivate: f("deactivate")?,
            _module: module,
        };
        let blas = CudaBlas::new(stream.clone()).map_err(|e| device_error("cuBLAS", e))?;
        Ok(GpuDevice {
            stream,
            blas,
            kernels,
            name,
        })
    }

    /// Another handle on the same GPU: a new stream and cuBLAS handle, the same kernels.
    pub fn sibling(&self) -> Result<Self> {
        let stream = self
            .stream
            .context()
            .new_stream()
            .map_err(|e| device_error("opening a stream", e))?;
        let blas = CudaBlas::new(stream.clone()).map_err(|e| device_error("cuBLAS", e))?;
        Ok(GpuDevice {
            stream,
            blas,
            kernels: self.kernels.clone(),
            name: self.name.clone(),
        })
    }

    /// The device's name, e.g. "NVIDIA H100 80GB HBM3".
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Uploads the rows of `x` (as f32) with their labels.
    pub fn upload(&self, x: ArrayView2<f64>, labels: &[usize]) -> Result<GpuData> {
        if x.nrows() == 0 || labels.len() != x.nrows() {
            return Err(Error::invalid(
                "labels",
                format!("{} labels for {} rows", labels.len(), x.nrows()),
                "one label per row of x, at least one row",
            ));
        }
        if labels.iter().any(|&l| l > i32::MAX as usize) || x.nrows() > i32::MAX as usize {
            return Err(Error::invalid(
                "x",
                format!("{} rows", x.nrows()),
                "fewer than 2^31 rows and labels",
            ));
        }
        let xs: Vec<f32> = x.iter().map(|&v| v as f32).collect();
        // The squared norms of the f32 values the device holds, summed in double.
        let xn2: Vec<f64> = xs
            .chunks(x.ncols().max(1))
            .map(|row| row.iter().map(|&v| f64::from(v) * f64::from(v)).sum())
            .collect();
        let ls: Vec<i32> = labels.iter().map(|&l| l as i32).collect();
        let s = &self.stream;
        Ok(GpuData {
            stream: s.clone(),
            x: s.clone_htod(&xs).map_err(|e| device_error("upload", e))?,
            xn2: s.clone_htod(&xn2).map_err(|e| device_error("upload", e))?,
            labels: s.clone_htod(&ls).map_err(|e| device_error("upload", e))?,
            host_labels: labels.to_vec(),
            n: x.nrows(),
            d: x.ncols(),
        })
    }

    /// `count` standard normals under `key`, as the update kernel draws them (for tests).
    pub fn normals(&self, key: u64, count: usize) -> Result<Vec<f32>> {
        let s = &self.stream;
        let mut out = s
            .alloc_zeros::<f32>(count.max(1))
            .map_err(|e| device_error("alloc", e))?;
        let n = count as i64;
        let mut b = s.launch_builder(&self.kernels.normals);
        b.arg(&key).arg(&n).arg(&mut out);
        unsafe { b.launch(launch_cfg(count)) }.map_err(|e| device_error("normals", e))?;
        let mut v = s
            .clone_dtoh(&out)
            .map_err(|e| device_error("download", e))?;
        v.truncate(count);
        Ok(v)
    }

    /// Trains every run of `runs` on `data` at once; one result per run, in order, each what
    /// [`DpSgdConfig::train_from`] returns (a diverged run is an error, or with
    /// [`OnDivergence::Stop`] stops at its last finite parameters). The call fails as a whole
    /// only for what concerns every run (the model, the data, the device).
    pub fn train_many(
        &self,
        model: &dyn Model,
        data: &GpuData,
        runs: Vec<GpuRun<'_>>,
        noise: Noise,
    ) -> Result<Vec<Result<Trained>>> {
        let net = model.network().ok_or_else(|| {
            Error::Infeasible(
                "the GPU engine trains dense-layer models (logistic, linear SVM, MLP): use \
                 device = \"cpu\" for this model"
                    .into(),
            )
        })?;
        if model.has_regulariser() {
            return Err(Error::Infeasible(
                "the GPU engine trains models without a regulariser (a weight penalty): use \
                 device = \"cpu\" or penalty = none"
                    .into(),
            ));
        }
        if net.layers[0].inputs != data.d {
            return Err(Error::invalid(
                "x",
                format!("{} columns", data.d),
                format!("{} columns (the model's inputs)", net.layers[0].inputs),
            ));
        }
        check_labels(model.n_classes(), &data.host_labels)?;
        if !Arc::ptr_eq(&data.stream, &self.stream) {
            return Err(Error::invalid(
                "data",
                "data uploaded by another GPU handle",
                "data uploaded by this handle (GpuDevice::upload)",
            ));
        }
        if runs.is_empty() {
            return Ok(Vec::new());
        }
        // Checks each run's parameters as the CPU engine does (one row stands for the data,
        // which was checked at upload).
        let probe = ndarray::Array2::<f64>::zeros((1, data.d));
        let mut plans = Vec::with_capacity(runs.len());
        for run in runs {
            check_data(model, &run.init, probe.view(), &[0])?;
            if run.config.on_divergence() == OnDivergence::Stop
                && run.init.iter().any(|v| !v.is_finite())
            {
                return Err(Error::invalid(
                    "params",
                    "a non-finite initial value",
                    "finite initial parameters",
                ));
            }
            plans.push(Plan {
                steps: run.config.steps(data.n)?,
                lots: LotSampler::new(&run.config, data.n)?,
                noise_sd: run.config.noise_sd(),
                config: run.config,
                init: run.init,
                rng: run.rng,
            });
        }
        Training::new(self, &net, data, plans, noise)?.run()
    }

    /// C = op(A)·op(B) for each of `batch` runs (column-major, as cuBLAS), run r's operands
    /// `stride_*` values after run r − 1's.
    #[allow(clippy::too_many_arguments)]
    fn gemm<A: DevicePtr<f32>, B: DevicePtr<f32>, C: DevicePtrMut<f32>>(
        &self,
        (ta, tb): (bool, bool),
        (m, n, k): (usize, usize, usize),
        (a, lda, stride_a): (&A, usize, usize),
        (b, ldb, stride_b): (&B, usize, usize),
        (c, ldc, stride_c): (&mut C, usize, usize),
        batch: usize,
    ) -> Result<()> {
        let op = |t: bool| {
            if t {
                cublasOperation_t::CUBLAS_OP_T
            } else {
                cublasOperation_t::CUBLAS_OP_N
            }
        };
        let cfg = StridedBatchedConfig {
            gemm: GemmConfig {
                transa: op(ta),
                transb: op(tb),
                m: m as i32,
                n: n as i32,
                k: k as i32,
                alpha: 1.0f32,
                lda: lda as i32,
                ldb: ldb as i32,
                beta: 0.0f32,
                ldc: ldc as i32,
            },
            batch_size: batch as i32,
            stride_a: stride_a as i64,
            stride_b: stride_b as i64,
            stride_c: stride_c as i64,
        };
        unsafe { self.blas.gemm_strided_batched(cfg, a, b, c) }
            .map_err(|e| device_error("cuBLAS gemm", e))
    }
}

/// A run as the training loop holds it.
struct Plan<'a> {
    config: DpSgdConfig,
    init: Vec<f64>,
    rng: &'a mut dyn RngCore,
    steps: u64,
    lots: LotSampler,
    noise_sd: f64,
}

/// Device buffers sized for `cap` rows per run.
struct Work {
    cap: usize,
    /// Per layer, its input for each run's rows (the first is the gathered lot).
    inputs: Vec<CudaSlice<f32>>,
    /// Per layer, ∂ℓ/∂(its output) for each run's rows (the last starts as the outputs).
    deltas: Vec<CudaSlice<f32>>,
    xn2: CudaSlice<f64>,
    labels: CudaSlice<i32>,
    norms: CudaSlice<f64>,
    losses: CudaSlice<f32>,
    ones: CudaSlice<f32>,
    /// Per run and block of rows, the block's summed loss.
    loss_parts: CudaSlice<f64>,
}

/// One call's state on the device.
struct Training<'d, 'a> {
    dev: &'d GpuDevice,
    net: Network,
    data: &'d GpuData,
    plans: Vec<Plan<'a>>,
    noise: Noise,
    p: usize,
    /// The longest run's steps.
    steps: u64,
    params: CudaSlice<f32>,
    prev: CudaSlice<f32>,
    grad: CudaSlice<f32>,
    adam_m: CudaSlice<f32>,
    adam_v: CudaSlice<f32>,
    host_noise: CudaSlice<f32>,
    // Per run, fixed for the call.
    lr: CudaSlice<f32>,
    noise_sd: CudaSlice<f32>,
    clip: CudaSlice<f32>,
    adam: CudaSlice<i32>,
    beta1: CudaSlice<f32>,
    beta2: CudaSlice<f32>,
    kappa: CudaSlice<f32>,
    active: CudaSlice<i32>,
    bad: CudaSlice<i32>,
    stopped: CudaSlice<i32>,
    /// Per step and run: the lot's rows (padded), its size (−1: no step), divisor, noise key.
    lots: CudaSlice<i32>,
    sizes: CudaSlice<i32>,
    divisors: CudaSlice<f32>,
    keys: CudaSlice<u64>,
    /// Per step and run: Σℓ/divisor.
    loss_trace: CudaSlice<f32>,
    work: Option<Work>,
}

/// A chunk of steps drawn on the host.
struct Chunk {
    first: u64,
    count: usize,
    /// Rows per run and step in `lots` (the chunk's largest lot).
    stride: usize,
    lots: Vec<i32>,
    sizes: Vec<i32>,
    divisors: Vec<f32>,
    keys: Vec<u64>,
    /// Per step, the largest lot over the runs (at least 1).
    widest: Vec<usize>,
    /// Test mode: per step, every run's unit noise (run after run, p values each).
    noise: Vec<Vec<f32>>,
}

impl<'d, 'a> Training<'d, 'a> {
    fn new(
        dev: &'d GpuDevice,
        net: &Network,
        data: &'d GpuData,
        plans: Vec<Plan<'a>>,
        noise: Noise,
    ) -> Result<Self> {
        let s = &dev.stream;
        let r = plans.len();
        let p = plans[0].init.len();
        let alloc_f = |len: usize| {
            s.alloc_zeros::<f32>(len.max(1))
                .map_err(|e| device_error("alloc", e))
        };
        let up_f = |v: Vec<f32>| s.clone_htod(&v).map_err(|e| device_error("upload", e));
        let up_i = |v: Vec<i32>| s.clone_htod(&v).map_err(|e| device_error("upload", e));
        let init: Vec<f32> = plans
            .iter()
            .flat_map(|pl| pl.init.iter().map(|&v| v as f32))
            .collect();
        let (mut adam, mut b1, mut b2, mut kap) = (vec![], vec![], vec![], vec![]);
        for pl in &plans {
            match pl.config.optimizer() {
                Optimizer::Sgd => {
                    adam.push(0);
                    b1.push(0.0);
                    b2.push(0.0);
                    kap.push(0.0);
                }
                Optimizer::Adam {
                    beta1,
                    beta2,
                    kappa,
                } => {
                    adam.push(1);
                    b1.push(beta1 as f32);
                    b2.push(beta2 as f32);
                    kap.push(kappa as f32);
                }
            }
        }
        let steps = plans.iter().map(|pl| pl.steps).max().unwrap_or(0);
        let trace_len = (steps as usize).saturating_mul(r);
        Ok(Training {
            dev,
            net: net.clone(),
            data,
            noise,
            p,
            steps,
            params: s.clone_htod(&init).map_err(|e| device_error("upload", e))?,
            prev: alloc_f(r * p)?,
            grad: alloc_f(r * p)?,
            adam_m: alloc_f(r * p)?,
            adam_v: alloc_f(r * p)?,
            host_noise: alloc_f(if noise == Noise::Host { r * p } else { 1 })?,
            lr: up_f(
                plans
                    .iter()
                    .map(|pl| pl.config.learning_rate() as f32)
                    .collect(),
            )?,
            noise_sd: up_f(plans.iter().map(|pl| pl.noise_sd as f32).collect())?,
            clip: up_f(
                plans
                    .iter()
                    .map(|pl| pl.config.clip().map_or(f32::INFINITY, |c| c as f32))
                    .collect(),
            )?,
            adam: up_i(adam)?,
            beta1: up_f(b1)?,
            beta2: up_f(b2)?,
            kappa: up_f(kap)?,
            active: up_i(vec![1; r])?,
            bad: up_i(vec![0; r])?,
            stopped: up_i(vec![-1; r])?,
            lots: s.alloc_zeros(1).map_err(|e| device_error("alloc", e))?,
            sizes: up_i(vec![0; CHUNK_STEPS * r])?,
            divisors: alloc_f(CHUNK_STEPS * r)?,
            keys: s
                .alloc_zeros(CHUNK_STEPS * r)
                .map_err(|e| device_error("alloc", e))?,
            loss_trace: alloc_f(trace_len)?,
            work: None,
            plans,
        })
    }

    fn runs(&self) -> usize {
        self.plans.len()
    }

    /// Draws steps `first..first + count` of every run on the host, in the CPU engine's order.
    fn draw(&mut self, first: u64, count: usize) -> Chunk {
        let (r, p, host) = (self.runs(), self.p, self.noise == Noise::Host);
        let mut per_run: Vec<Vec<Vec<usize>>> = Vec::with_capacity(r);
        let mut sizes = vec![-1i32; count * r];
        let mut divisors = vec![1.0f32; count * r];
        let mut keys = vec![0u64; count * r];
        let mut noise = if host {
            vec![vec![0.0f32; r * p]; count]
        } else {
            Vec::new()
        };
        let mut unit = vec![0.0f64; if host { p } else { 0 }];
        for (run, pl) in self.plans.iter_mut().enumerate() {
            let mut lots = Vec::with_capacity(count);
            for s in 0..count {
                let step = first + s as u64;
                if step >= pl.steps {
                    lots.push(Vec::new());
                    continue;
                }
                // A lot of every row (full-batch steps) is not copied: the kernels read
                // row i as row i. Poisson sampling at rate 1 draws nothing from the stream.
                let n = self.data.n;
                let divisor = if pl.lots.takes_every_row() {
                    lots.push(Vec::new());
                    pl.config.batch_size() as f64
                } else {
                    let (lot, divisor) = pl.lots.next(step, &mut *pl.rng);
                    lots.push(if lot.len() == n {
                        Vec::new()
                    } else {
                        lot.to_vec()
                    });
                    if lot.len() != n {
                        sizes[s * r + run] = lot.len() as i32;
                    }
                    divisor
                };
                if sizes[s * r + run] < 0 {
                    sizes[s * r + run] = n as i32;
                }
                divisors[s * r + run] = divisor as f32;
                if pl.noise_sd > 0.0 {
                    // The word `DpSgd::add_noise` would take from the stream.
                    let key = pl.rng.next_u64();
                    keys[s * r + run] = key;
                    if host {
                        unit.fill(0.0);
                        crate::accounting::DpSgd::add_noise(&mut unit, 1.0, &mut Replay(key));
                        for (o, &z) in noise[s][run * p..(run + 1) * p].iter_mut().zip(&unit) {
                            *o = z as f32;
                        }
                    }
                }
            }
            per_run.push(lots);
        }
        let widest: Vec<usize> = (0..count)
            .map(|s| {
                (0..r)
                    .map(|run| sizes[s * r + run].max(0) as usize)
                    .max()
                    .unwrap_or(0)
                    .max(1)
            })
            .collect();
        // Stored lots only (full ones are not).
        let stride = per_run
            .iter()
            .flat_map(|l| l.iter().map(Vec::len))
            .max()
            .unwrap_or(0)
            .max(1);
        let mut lots = vec![0i32; count * r * stride];
        for (run, l) in per_run.iter().enumerate() {
            for (s, lot) in l.iter().enumerate() {
                let at = (s * r + run) * stride;
                for (o, &i) in lots[at..at + lot.len()].iter_mut().zip(lot) {
                    *o = i as i32;
                }
            }
        }
        Chunk {
            first,
            count,
            stride,
            lots,
            sizes,
            divisors,
            keys,
            widest,
            noise,
        }
    }

    /// Buffers for lots of up to `rows` rows (grown, never shrunk).
    fn ensure_work(&mut self, rows: usize) -> Result<()> {
        if self.work.as_ref().is_some_and(|w| w.cap >= rows) {
            return Ok(());
        }
        // Headroom, so that Poisson lots a little larger than any seen do not reallocate.
        let cap = (rows + rows / 8 + 8).min(self.data.n.max(rows));
        let (s, r) = (&self.dev.stream, self.runs());
        let alloc = |len: usize| {
            s.alloc_zeros::<f32>(len.max(1))
                .map_err(|e| device_error("alloc (lower the number of runs per call)", e))
        };
        let mut inputs = Vec::new();
        let mut deltas = Vec::new();
        for layer in &self.net.layers {
            inputs.push(alloc(r * cap * layer.inputs)?);
            deltas.push(alloc(r * cap * layer.outputs)?);
        }
        let e = |e| device_error("alloc", e);
        self.work = Some(Work {
            cap,
            inputs,
            deltas,
            xn2: s.alloc_zeros(r * cap).map_err(e)?,
            labels: s.alloc_zeros(r * cap).map_err(e)?,
            norms: s.alloc_zeros(r * cap).map_err(e)?,
            losses: alloc(r * cap)?,
            ones: s
                .clone_htod(&vec![1.0f32; cap])
                .map_err(|e| device_error("upload", e))?,
            loss_parts: s.alloc_zeros(1).map_err(e)?,
        });
        Ok(())
    }

    fn upload_chunk(&mut self, c: &Chunk) -> Result<()> {
        let s = &self.dev.stream;
        let e = |e| device_error("upload", e);
        if self.lots.len() < c.lots.len() {
            self.lots = s.alloc_zeros(c.lots.len()).map_err(e)?;
        }
        s.memcpy_htod(&c.lots, &mut self.lots).map_err(e)?;
        s.memcpy_htod(&c.sizes, &mut self.sizes).map_err(e)?;
        s.memcpy_htod(&c.divisors, &mut self.divisors).map_err(e)?;
        s.memcpy_htod(&c.keys, &mut self.keys).map_err(e)?;
        Ok(())
    }

    fn run(mut self) -> Result<Vec<Result<Trained>>> {
        let mut first = 0u64;
        while first < self.steps {
            let count = ((self.steps - first) as usize).min(CHUNK_STEPS);
            let chunk = self.draw(first, count);
            // Full-batch steps of a single run read the data in place (no gather).
            let direct = self.runs() == 1 && chunk.sizes.iter().all(|&s| s == self.data.n as i32);
            let widest = chunk.widest.iter().copied().max().unwrap_or(1);
            self.ensure_work(if direct { self.data.n } else { widest })?;
            self.upload_chunk(&chunk)?;
            for s in 0..chunk.count {
                if self.noise == Noise::Host {
                    let st = &self.dev.stream;
                    st.memcpy_htod(&chunk.noise[s], &mut self.host_noise)
                        .map_err(|e| device_error("upload", e))?;
                }
                self.step(&chunk, s, direct)?;
            }
            first += count as u64;
        }
        self.finish()
    }

    /// One step of every run: forward, head, backward, norms, clipping, gradient sums, update.
    fn step(&mut self, c: &Chunk, s: usize, direct: bool) -> Result<()> {
        let (r, p, bs) = (self.runs(), self.p, c.widest[s]);
        let step = c.first + s as u64;
        let dev = self.dev;
        let k = &dev.kernels;
        let st = &dev.stream;
        let e = |what: &'static str| move |err| device_error(what, err);
        let work = self.work.as_mut().expect("buffers allocated before a step");
        let cap = if direct { self.data.n } else { work.cap };
        let depth = self.net.layers.len();
        let sizes = self.sizes.slice(s * r..(s + 1) * r);
        let divisors = self.divisors.slice(s * r..(s + 1) * r);
        let keys = self.keys.slice(s * r..(s + 1) * r);
        if !direct {
            let lots = self.lots.slice(s * r * c.stride..(s + 1) * r * c.stride);
            let (stride, bs_i, cap_i, d) =
                (c.stride as i32, bs as i32, cap as i32, self.data.d as i32);
            let n = self.data.n as i32;
            let mut b = st.launch_builder(&k.gather);
            b.arg(&self.data.x)
                .arg(&self.data.xn2)
                .arg(&self.data.labels)
                .arg(&lots)
                .arg(&sizes)
                .arg(&n)
                .arg(&stride)
                .arg(&bs_i)
                .arg(&cap_i)
                .arg(&d)
                .arg(&mut work.inputs[0])
                .arg(&mut work.xn2)
                .arg(&mut work.labels);
            let cfg = LaunchConfig {
                grid_dim: ((r * bs) as u32, 1, 1),
                block_dim: (128, 1, 1),
                shared_mem_bytes: 0,
            };
            unsafe { b.launch(cfg) }.map_err(e("gather"))?;
        }
        let (bs_i, cap_i, r_i, p_i) = (bs as i32, cap as i32, r as i32, p as i64);
        let act = match self.net.activation {
            Activation::Relu => 1i32,
            Activation::Tanh => 2i32,
        };
        // Forward: Z_l (rows × out, row-major) = A_l · W_l; column-major Z_lᵀ = W_lᵀ A_lᵀ,
        // and the input-major W_l is the column-major out × in matrix W_lᵀ.
        for l in 0..depth {
            let layer = self.net.layers[l];
            let (inp, out) = (layer.inputs, layer.outputs);
            let w = self.params.slice(layer.offset..);
            let (before, after) = work.inputs.split_at_mut(l + 1);
            let z = match after.first_mut() {
                Some(next) => next,
                None => &mut work.deltas[depth - 1],
            };
            let input: &CudaSlice<f32> = if l == 0 && direct {
                &self.data.x
            } else {
                &before[l]
            };
            if out == 1 {
                // One output: z = A·w as cuBLAS's matrix–vector form (A transposed), which
                // streams A at nearly the card's bandwidth.
                dev.gemm(
                    (true, false),
                    (bs, 1, inp),
                    (input, inp, cap * inp),
                    (&w, inp, p),
                    (&mut *z, cap, cap),
                    r,
                )?;
            } else {
                dev.gemm(
                    (false, false),
                    (out, bs, inp),
                    (&w, out, p),
                    (input, inp, cap * inp),
                    (&mut *z, out, cap * out),
                    r,
                )?;
            }
            let bias_at = (layer.offset + inp * out) as i64;
            let (out_i, a) = (out as i32, if l + 1 < depth { act } else { 0 });
            let mut b = st.launch_builder(&k.bias_act);
            b.arg(&mut *z)
                .arg(&self.params)
                .arg(&p_i)
                .arg(&bias_at)
                .arg(&out_i)
                .arg(&bs_i)
                .arg(&cap_i)
                .arg(&r_i)
                .arg(&a);
            unsafe { b.launch(launch_cfg(r * bs * out)) }.map_err(e("bias_act"))?;
        }
        // The head: outputs → ∂ℓ/∂outputs, and each row's loss; a one-layer model's clipping
        // is done there too (its norm needs only ‖x_i‖ and δ_i).
        let fuse = (depth == 1) as i32;
        {
            let width = self.net.layers[depth - 1].outputs as i32;
            let (kind, alpha) = match self.net.head {
                Head::Softmax => (0i32, 0.0f32),
                Head::Sigmoid => (1, 0.0),
                Head::Hinge { alpha } => (2, alpha as f32),
            };
            let labels = if direct {
                &self.data.labels
            } else {
                &work.labels
            };
            let an2 = if direct { &self.data.xn2 } else { &work.xn2 };
            let mut b = st.launch_builder(&k.head);
            b.arg(&mut work.deltas[depth - 1])
                .arg(labels)
                .arg(&width)
                .arg(&bs_i)
                .arg(&cap_i)
                .arg(&r_i)
                .arg(&kind)
                .arg(&alpha)
                .arg(&mut work.losses)
                .arg(&fuse)
                .arg(an2)
                .arg(&self.clip)
                .arg(&CLIP_MARGIN);
            unsafe { b.launch(launch_cfg(r * bs)) }.map_err(e("head"))?;
        }
        // Backward: δ_{l−1} = (δ_l W_lᵀ) ⊙ activation′; column-major δ_{l−1}ᵀ = W_l δ_lᵀ.
        for l in (1..depth).rev() {
            let layer = self.net.layers[l];
            let (inp, out) = (layer.inputs, layer.outputs);
            let w = self.params.slice(layer.offset..);
            let (lower, upper) = work.deltas.split_at_mut(l);
            dev.gemm(
                (true, false),
                (inp, bs, out),
                (&w, out, p),
                (&upper[0], out, cap * out),
                (&mut lower[l - 1], inp, cap * inp),
                r,
            )?;
            let width = inp as i32;
            let mut b = st.launch_builder(&k.act_back);
            b.arg(&mut lower[l - 1])
                .arg(&work.inputs[l])
                .arg(&width)
                .arg(&bs_i)
                .arg(&cap_i)
                .arg(&r_i)
                .arg(&act);
            unsafe { b.launch(launch_cfg(r * bs * inp)) }.map_err(e("act_back"))?;
        }
        // ‖∇ℓ_i‖² = Σ_l (‖a_i‖² + 1)·‖δ_i‖², then δ ← c_i·δ.
        for l in (0..depth).filter(|_| fuse == 0) {
            let layer = self.net.layers[l];
            let (in_i, out_i, first) = (layer.inputs as i32, layer.outputs as i32, (l == 0) as i32);
            let use_an2 = (l == 0) as i32;
            let an2 = if direct { &self.data.xn2 } else { &work.xn2 };
            let a = if l == 0 && direct {
                &self.data.x
            } else {
                &work.inputs[l]
            };
            let mut b = st.launch_builder(&k.norm_acc);
            b.arg(a)
                .arg(an2)
                .arg(&use_an2)
                .arg(&work.deltas[l])
                .arg(&in_i)
                .arg(&out_i)
                .arg(&bs_i)
                .arg(&cap_i)
                .arg(&r_i)
                .arg(&first)
                .arg(&mut work.norms);
            unsafe { b.launch(launch_cfg(32 * r * bs)) }.map_err(e("norm_acc"))?;
        }
        for l in (0..depth).filter(|_| fuse == 0) {
            let out = self.net.layers[l].outputs;
            let out_i = out as i32;
            let mut b = st.launch_builder(&k.clip_rows);
            b.arg(&mut work.deltas[l])
                .arg(&work.norms)
                .arg(&self.clip)
                .arg(&CLIP_MARGIN)
                .arg(&out_i)
                .arg(&bs_i)
                .arg(&cap_i)
                .arg(&r_i);
            unsafe { b.launch(launch_cfg(r * bs * out)) }.map_err(e("clip_rows"))?;
        }
        // Gradient sums: column-major ∂W_lᵀ (out × in) = δ_lᵀ A_l; ∂b_l = δ_lᵀ·1.
        for l in 0..depth {
            let layer = self.net.layers[l];
            let (inp, out) = (layer.inputs, layer.outputs);
            let input: &CudaSlice<f32> = if l == 0 && direct {
                &self.data.x
            } else {
                &work.inputs[l]
            };
            let mut gw = self.grad.slice_mut(layer.offset..);
            if out == 1 {
                // ∂w = Aᵀδ, again as a matrix–vector product.
                dev.gemm(
                    (false, false),
                    (inp, 1, bs),
                    (input, inp, cap * inp),
                    (&work.deltas[l], cap, cap),
                    (&mut gw, inp, p),
                    r,
                )?;
            } else {
                dev.gemm(
                    (false, true),
                    (out, inp, bs),
                    (&work.deltas[l], out, cap * out),
                    (input, inp, cap * inp),
                    (&mut gw, out, p),
                    r,
                )?;
            }
            let mut gb = self.grad.slice_mut(layer.offset + inp * out..);
            dev.gemm(
                (false, false),
                (out, 1, bs),
                (&work.deltas[l], out, cap * out),
                (&work.ones, bs.max(1), 0),
                (&mut gb, out, p),
                r,
            )?;
        }
        // Σℓ/divisor per run, into the loss trace: blocks of LOSS_ROWS rows, then their sums.
        {
            let blocks = bs.div_ceil(LOSS_ROWS);
            if work.loss_parts.len() < r * blocks {
                work.loss_parts = st
                    .alloc_zeros(r * blocks)
                    .map_err(|err| device_error("alloc", err))?;
            }
            let rows_i = LOSS_ROWS as i32;
            let mut b = st.launch_builder(&k.loss_partial);
            b.arg(&work.losses)
                .arg(&bs_i)
                .arg(&cap_i)
                .arg(&rows_i)
                .arg(&mut work.loss_parts);
            let cfg = LaunchConfig {
                grid_dim: (blocks as u32, r as u32, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            };
            unsafe { b.launch(cfg) }.map_err(e("loss_partial"))?;
            let mut trace = self
                .loss_trace
                .slice_mut(step as usize * r..(step as usize + 1) * r);
            let blocks_i = blocks as i32;
            let mut b = st.launch_builder(&k.loss_total);
            b.arg(&work.loss_parts)
                .arg(&blocks_i)
                .arg(&divisors)
                .arg(&r_i)
                .arg(&mut trace);
            unsafe { b.launch(launch_cfg(r)) }.map_err(e("loss_total"))?;
        }
        // The update, then runs that overflowed get their previous parameters back and stop.
        let t = (step + 1).min(i32::MAX as u64) as i32;
        let use_host = (self.noise == Noise::Host) as i32;
        {
            let mut b = st.launch_builder(&k.update);
            b.arg(&mut self.params)
                .arg(&mut self.prev)
                .arg(&self.grad)
                .arg(&self.host_noise)
                .arg(&use_host)
                .arg(&keys)
                .arg(&sizes)
                .arg(&divisors)
                .arg(&self.noise_sd)
                .arg(&self.lr)
                .arg(&self.adam)
                .arg(&self.beta1)
                .arg(&self.beta2)
                .arg(&self.kappa)
                .arg(&mut self.adam_m)
                .arg(&mut self.adam_v)
                .arg(&t)
                .arg(&self.active)
                .arg(&mut self.bad)
                .arg(&p_i)
                .arg(&r_i);
            unsafe { b.launch(launch_cfg(r * p)) }.map_err(e("update"))?;
        }
        {
            let mut b = st.launch_builder(&k.revert);
            b.arg(&mut self.params)
                .arg(&self.prev)
                .arg(&self.active)
                .arg(&self.bad)
                .arg(&p_i)
                .arg(&r_i);
            unsafe { b.launch(launch_cfg(r * p)) }.map_err(e("revert"))?;
        }
        let step_i = step.min(i32::MAX as u64) as i32;
        let mut b = st.launch_builder(&k.deactivate);
        b.arg(&mut self.active)
            .arg(&mut self.bad)
            .arg(&mut self.stopped)
            .arg(&step_i)
            .arg(&r_i);
        unsafe { b.launch(launch_cfg(r)) }.map_err(e("deactivate"))?;
        Ok(())
    }

    /// Downloads every run's parameters, loss trace and stop.
    fn finish(self) -> Result<Vec<Result<Trained>>> {
        let st = &self.dev.stream;
        let e = |e| device_error("download", e);
        let params = st.clone_dtoh(&self.params).map_err(e)?;
        let trace = st.clone_dtoh(&self.loss_trace).map_err(e)?;
        let stopped = st.clone_dtoh(&self.stopped).map_err(e)?;
        let (r, p) = (self.runs(), self.p);
        Ok(self
            .plans
            .iter()
            .enumerate()
            .map(|(run, pl)| {
                let diverged = stopped[run] >= 0;
                let len = if diverged {
                    stopped[run] as usize + 1
                } else {
                    pl.steps as usize
                };
                if diverged && pl.config.on_divergence() == OnDivergence::Fail {
                    return Err(Error::Numerical(format!(
                        "DP-SGD diverged at step {} (non-finite parameters): lower the \
                         learning_rate",
                        stopped[run]
                    )));
                }
                Ok(Trained {
                    params: params[run * p..(run + 1) * p]
                        .iter()
                        .map(|&v| f64::from(v))
                        .collect(),
                    loss_trace: (0..len).map(|s| f64::from(trace[s * r + run])).collect(),
                    diverged,
                })
            })
            .collect())
    }
}

/// Hands a drawn key word to [`crate::accounting::DpSgd::add_noise`], which takes exactly one.
struct Replay(u64);

impl RngCore for Replay {
    fn next_u32(&mut self) -> u32 {
        self.0 as u32
    }
    fn next_u64(&mut self) -> u64 {
        self.0
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        for (d, s) in dest.iter_mut().zip(self.0.to_le_bytes().iter().cycle()) {
            *d = *s;
        }
    }
}
