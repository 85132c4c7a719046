//! DP-SGD training as a tuning workload: a classifier (logistic regression or an MLP) trained
//! by DP-SGD on the private training part of a data set, at a learning rate chosen by the
//! tuner, releasing its validation accuracy with Gaussian noise.
//!
//! Privacy of one run (neighbours add or remove one record of the training part, or replace
//! one record of the validation part): the DP-SGD run is the Poisson-subsampled Gaussian
//! mechanism composed over its steps, and the released accuracy (sensitivity 1/m on m
//! validation records, noise sd z/m) is a Gaussian mechanism; the run's RDP curve is their sum,
//! an upper bound for either kind of neighbour. A diverged run (non-finite parameters, a
//! function of the DP-SGD output alone) scores 0.

use super::{Hyper, PrivateTraining};
use crate::accounting::{Event, Gaussian};
use crate::data::{Dataset, Standardiser};
use crate::error::{Error, Range, Result};
use crate::learn::{
    accuracy, Activation, Device, DpSgdConfig, Length, Logistic, Mlp, Model, Sampling,
};
use ndarray::Array2;
use rand::RngCore;

/// The classifier.
#[derive(Clone, Debug, PartialEq)]
pub enum Architecture {
    Logistic,
    /// An MLP with these hidden layer sizes (ReLU).
    Mlp(Vec<usize>),
}

impl Architecture {
    /// `logistic` or `mlp:H` / `mlp:H1-H2` (hidden sizes).
    pub fn parse(s: &str) -> Result<Self> {
        let bad = || Error::invalid("model", s, "`logistic` or `mlp:H` / `mlp:H1-H2`");
        match s {
            "logistic" => Ok(Architecture::Logistic),
            _ => {
                let sizes = s.strip_prefix("mlp:").ok_or_else(bad)?;
                let hidden = sizes
                    .split('-')
                    .map(|h| h.parse::<usize>().ok().filter(|&h| h > 0))
                    .collect::<Option<Vec<_>>>()
                    .filter(|v| (1..=2).contains(&v.len()))
                    .ok_or_else(bad)?;
                Ok(Architecture::Mlp(hidden))
            }
        }
    }

    pub fn name(&self) -> String {
        match self {
            Architecture::Logistic => "logistic".into(),
            Architecture::Mlp(h) => format!(
                "mlp:{}",
                h.iter().map(usize::to_string).collect::<Vec<_>>().join("-")
            ),
        }
    }

    fn build(&self, features: usize, classes: usize) -> Result<Box<dyn Model>> {
        Ok(match self {
            Architecture::Logistic => Box::new(Logistic::new(features, classes)?),
            Architecture::Mlp(hidden) => {
                let mut sizes = vec![features];
                sizes.extend(hidden);
                sizes.push(classes);
                Box::new(Mlp::new(&sizes, Activation::Relu)?)
            }
        })
    }
}

/// DP-SGD's settings other than the learning rate (the tuned hyperparameter).
#[derive(Clone, Debug, PartialEq)]
pub struct DpSgdSettings {
    pub batch_size: usize,
    pub epochs: u64,
    pub clip: f64,
    pub noise_multiplier: f64,
    /// z: the released validation accuracy gets Gaussian noise of sd z/m.
    pub score_noise: f64,
    /// Where the runs train (`device` in experiment files; the CPU by default).
    pub device: Device,
}

/// What one run produced. Only `released` is private; the accuracies are for reporting.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunResult {
    pub validation_accuracy: f64,
    pub test_accuracy: f64,
    pub released: f64,
}

/// A data set split and standardised (statistics of the training part), a model, and DP-SGD.
pub struct DpSgdTask {
    model: Box<dyn Model>,
    settings: DpSgdSettings,
    train: (Array2<f64>, Vec<usize>),
    validation: (Array2<f64>, Vec<usize>),
    test: (Array2<f64>, Vec<usize>),
    /// The score release: validation accuracy (sensitivity 1/m) plus N(0, (z/m)²).
    release: Gaussian,
    /// One run: its DP-SGD steps, then the score's release.
    run: Event,
}

fn parts(d: &Dataset, s: &Standardiser) -> Result<(Array2<f64>, Vec<usize>)> {
    let labels = d
        .labels()
        .ok_or_else(|| Error::invalid("data", &d.name, "a classification data set"))?;
    Ok((s.apply(&d.x), labels.to_vec()))
}

impl DpSgdTask {
    /// Splits `data` (`validation` and `test` fractions, `seed`) and fixes the model and the
    /// DP-SGD settings; the run's privacy is known from here on.
    pub fn new(
        data: &Dataset,
        (validation, test): (f64, f64),
        seed: u64,
        architecture: &Architecture,
        settings: DpSgdSettings,
    ) -> Result<Self> {
        Range::Positive.check("clip", settings.clip)?;
        Range::Positive.check("noise_multiplier", settings.noise_multiplier)?;
        Range::Positive.check("score_noise", settings.score_noise)?;
        let split = data.split(validation, test, seed)?;
        let standard = Standardiser::fit(&split.train.x);
        let train = parts(&split.train, &standard)?;
        let validation = parts(&split.validation, &standard)?;
        let test = parts(&split.test, &standard)?;
        if validation.1.is_empty() || test.1.is_empty() {
            return Err(Error::invalid(
                "validation",
                "an empty part",
                "fractions leaving at least one validation and one test record",
            ));
        }
        let model = architecture.build(data.n_features(), data.n_classes())?;
        let config = Self::config_for(&settings, 1.0)?;
        let m = validation.1.len() as f64;
        let release = Gaussian::new(1.0 / m, settings.score_noise / m)?;
        let sgd = config.mechanism(train.1.len())?;
        let run = Event::composed(vec![Event::dpsgd(&sgd)?, Event::of_gaussian(&release)])?;
        Ok(DpSgdTask {
            model,
            settings,
            train,
            validation,
            test,
            release,
            run,
        })
    }

    fn config_for(s: &DpSgdSettings, learning_rate: f64) -> Result<DpSgdConfig> {
        DpSgdConfig::new(
            learning_rate,
            s.batch_size,
            Length::Epochs(s.epochs),
            Some(s.clip),
            s.noise_multiplier,
            Sampling::Poisson,
        )
    }

    pub fn settings(&self) -> &DpSgdSettings {
        &self.settings
    }

    /// (training, validation, test) sizes.
    pub fn sizes(&self) -> (usize, usize, usize) {
        (
            self.train.1.len(),
            self.validation.1.len(),
            self.test.1.len(),
        )
    }

    /// One private run at `learning_rate`.
    /// The test accuracy of the model at its initial parameters (drawn from `rng`, never
    /// trained): what a search that tries nothing (K = 0) can output without touching the
    /// private data. Reported, not released.
    pub fn untrained_test_accuracy(&self, rng: &mut dyn RngCore) -> Result<f64> {
        let params = self.model.init(rng);
        accuracy(
            self.model.as_ref(),
            &params,
            self.test.0.view(),
            &self.test.1,
        )
    }

    pub fn run(&self, learning_rate: f64, mut rng: &mut dyn RngCore) -> Result<RunResult> {
        let mut out = self.run_many(learning_rate, std::slice::from_mut(&mut rng))?;
        Ok(out.pop().expect("one result per stream"))
    }

    /// One run per stream at `learning_rate`, trained together on the settings' device (one
    /// GPU call for all of them; the CPU trains them in turn): each as [`DpSgdTask::run`]
    /// produces it from that stream.
    pub fn run_many<R: RngCore>(
        &self,
        learning_rate: f64,
        rngs: &mut [R],
    ) -> Result<Vec<RunResult>> {
        let config = Self::config_for(&self.settings, learning_rate)?;
        let model = self.model.as_ref();
        let score = |params: &[f64], (x, y): &(Array2<f64>, Vec<usize>)| {
            accuracy(model, params, x.view(), y)
        };
        let runs = rngs
            .iter_mut()
            .map(|rng| {
                let init = model.init(rng);
                (config.clone(), init, rng as &mut dyn RngCore)
            })
            .collect();
        let trained =
            self.settings
                .device
                .train_many(model, self.train.0.view(), &self.train.1, runs)?;
        trained
            .into_iter()
            .zip(rngs.iter_mut())
            .map(|(t, rng)| {
                let (val, test) = match t {
                    Ok(t) => (
                        score(&t.params, &self.validation)?,
                        score(&t.params, &self.test)?,
                    ),
                    Err(Error::Numerical(_)) => (0.0, 0.0),
                    Err(e) => return Err(e),
                };
                Ok(RunResult {
                    validation_accuracy: val,
                    test_accuracy: test,
                    released: val + self.release.noise(rng),
                })
            })
            .collect()
    }
}

impl PrivateTraining for DpSgdTask {
    fn run_event(&self) -> &Event {
        &self.run
    }
    /// The released validation accuracy at learning rate `h[0]`; a failed run releases 0.
    fn train(&self, h: &Hyper, rng: &mut dyn RngCore) -> f64 {
        h.first()
            .and_then(|&lr| self.run(lr, rng).ok())
            .map_or(0.0, |r| r.released)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounting::DpSgd;
    use crate::data::builtin;
    use crate::rng::stream;

    fn settings() -> DpSgdSettings {
        DpSgdSettings {
            batch_size: 64,
            epochs: 2,
            clip: 1.0,
            noise_multiplier: 1.5,
            score_noise: 2.0,
            device: Device::Cpu,
        }
    }

    fn task() -> DpSgdTask {
        let data = builtin("digits").unwrap();
        DpSgdTask::new(&data, (0.2, 0.2), 3, &Architecture::Logistic, settings()).unwrap()
    }

    /// One run's curve is DP-SGD's (q = batch/n, ⌈n/batch⌉·epochs steps) plus the score
    /// release's Gaussian ρ = 1/(2z²), at every order.
    #[test]
    fn run_event_is_dp_sgd_plus_the_score_release() {
        let t = task();
        let (n, _, _) = t.sizes();
        let steps = 2 * n.div_ceil(64) as u64;
        let sgd = DpSgd::new(64.0 / n as f64, 1.5, steps).unwrap().rdp();
        for order in [1.5, 2.0, 8.0, 64.0] {
            let want = sgd.eval(order).unwrap() + order / (2.0 * 2.0 * 2.0);
            let got = crate::workloads::run_curve(&t).eval(order).unwrap();
            assert!(
                (got - want).abs() <= 1e-12 * want,
                "order {order}: {got} vs {want}"
            );
        }
    }

    /// Runs are reproducible from the stream; the released score is the validation accuracy
    /// plus noise of sd z/m (checked on the spread of repeated releases of one run's score).
    #[test]
    fn runs_are_reproducible_and_learn() {
        let t = task();
        let a = t.run(0.5, &mut stream(1, &[])).unwrap();
        let b = t.run(0.5, &mut stream(1, &[])).unwrap();
        assert_eq!(a, b);
        assert!(a.test_accuracy > 0.8, "{a:?}");
        let m = t.sizes().1 as f64;
        assert!((a.released - a.validation_accuracy).abs() < 6.0 * 2.0 / m);
        assert_eq!(t.train(&vec![0.5], &mut stream(1, &[])), a.released);
        // An invalid learning rate releases a data-independent 0.
        assert_eq!(t.train(&vec![-1.0], &mut stream(1, &[])), 0.0);
    }

    #[test]
    fn bad_settings_and_models_are_named() {
        let data = builtin("digits").unwrap();
        for (s, name) in [
            (
                DpSgdSettings {
                    clip: 0.0,
                    ..settings()
                },
                "clip",
            ),
            (
                DpSgdSettings {
                    noise_multiplier: 0.0,
                    ..settings()
                },
                "noise_multiplier",
            ),
            (
                DpSgdSettings {
                    score_noise: -1.0,
                    ..settings()
                },
                "score_noise",
            ),
        ] {
            let e = DpSgdTask::new(&data, (0.2, 0.2), 1, &Architecture::Logistic, s)
                .err()
                .unwrap()
                .to_string();
            assert!(e.contains(name), "{e}");
        }
        let diabetes = builtin("diabetes").unwrap();
        assert!(DpSgdTask::new(
            &diabetes,
            (0.2, 0.2),
            1,
            &Architecture::Logistic,
            settings()
        )
        .is_err());
        assert_eq!(
            Architecture::parse("mlp:128").unwrap(),
            Architecture::Mlp(vec![128])
        );
        assert_eq!(
            Architecture::parse("mlp:64-32").unwrap().name(),
            "mlp:64-32"
        );
        for bad in ["mlp", "mlp:", "mlp:0", "mlp:1-2-3", "svm"] {
            assert!(Architecture::parse(bad).is_err(), "{bad}");
        }
    }
}
