//! Spec 001's DP-SGD tasks (src/workloads/dpsgd_tasks.rs) and their tuning workload
//! `dpsgd-task` (src/workloads/dpsgd_tuning.rs) on real data: the committed CI subsets under
//! `tests/fixtures/real_data/` (500 / 200 Adult rows, 400 / 100 Fashion-MNIST images), and,
//! when `just data` has filled the cache (or `DPTUNE_DATA` names one), the full data. Without
//! the cache the full-data tests print a line saying they were skipped and pass.

use dptune::accounting::{integer_orders_epsilon, DpSgd, Gaussian};
use dptune::data::{cached_file, TrainTest};
use dptune::rng::stream;
use dptune::sim::Profile;
use dptune::workloads::build;
use dptune::workloads::dpsgd_tasks::{Task, TaskData, TaskId, TASK_DELTA};
use dptune::workloads::dpsgd_tuning::DpsgdTuningSpec;
use std::io::Write;
use std::path::Path;

use crate::common;

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/real_data")
        .join(name)
        .display()
        .to_string()
}

const ADULT_FILES: [&str; 2] = ["adult-sample.data", "adult-sample.test"];
const FMNIST_FILES: [&str; 4] = [
    "fashion-mnist-sample-train-images-idx3-ubyte",
    "fashion-mnist-sample-train-labels-idx1-ubyte",
    "fashion-mnist-sample-t10k-images-idx3-ubyte",
    "fashion-mnist-sample-t10k-labels-idx1-ubyte",
];

fn sample(data: TaskData) -> TrainTest {
    let files: Vec<String> = match data {
        TaskData::Adult => ADULT_FILES.iter().map(|f| fixture(f)).collect(),
        TaskData::FashionMnist => FMNIST_FILES.iter().map(|f| fixture(f)).collect(),
    };
    data.from_files(&files).unwrap()
}

fn sample_task(id: TaskId) -> Task {
    Task::new(id, &sample(id.data())).unwrap()
}

/// The share of the most common class among `labels`.
fn majority(labels: &[usize]) -> f64 {
    let mut counts = vec![0usize; labels.iter().max().unwrap() + 1];
    labels.iter().for_each(|&l| counts[l] += 1);
    *counts.iter().max().unwrap() as f64 / labels.len() as f64
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

/// The three Adult tasks learn on the 500-row subset: every run beats predicting the majority
/// class (75% of the 200 test rows), and their mean by 3 points. ε is large at n = 500
/// (q = m/n is large): this checks learning, not a useful guarantee.
#[test]
fn adult_tasks_learn_above_the_majority_rate_on_the_ci_subset() {
    for (id, lambda) in [
        (TaskId::AdultLrSgd, [64.0, 32.0, 0.05, 1.0, 1.0]),
        (TaskId::AdultLrAdam, [16.0, 32.0, 0.01, 1.0, 1.0]),
        (TaskId::AdultSvmSgd, [64.0, 32.0, 0.05, 1.0, 1.0]),
    ] {
        let task = sample_task(id);
        assert_eq!((task.train_size(), task.test_size()), (500, 200));
        let base = majority(task.test_labels());
        assert_eq!(base, 0.75);
        let h = task.hyperparameters(lambda).unwrap();
        let accs: Vec<f64> = (0..3)
            .map(|seed| {
                let run = task.run(&h, &mut stream(seed, &[])).unwrap();
                assert!(!run.diverged);
                assert!(run.wall_secs >= 0.0 && run.wall_secs.is_finite());
                run.test_accuracy
            })
            .collect();
        let mean = accs.iter().sum::<f64>() / 3.0;
        assert!(
            accs.iter().all(|&a| a > base) && mean >= base + 0.03,
            "{}: {accs:?} vs majority {base}",
            id.name()
        );
    }
}

/// The MLPs learn on the 400-image subset: well above chance (10 classes, 0.1).
#[test]
fn fashion_mnist_mlps_learn_above_chance_on_the_ci_subset() {
    for (id, lambda, floor) in [
        (TaskId::FmnistMlp2Sgd, [4.0, 16.0, 0.1, 1.0, 1.0], 0.25),
        (TaskId::FmnistMlp1Sgd, [1.0, 16.0, 0.1, 1.0, 1.0], 0.18),
    ] {
        let task = sample_task(id);
        assert_eq!((task.train_size(), task.test_size()), (400, 100));
        let h = task.hyperparameters(lambda).unwrap();
        let run = task.run(&h, &mut stream(0, &[])).unwrap();
        assert!(!run.diverged);
        assert!(
            run.test_accuracy >= floor,
            "{}: {}",
            id.name(),
            run.test_accuracy
        );
    }
}

/// A run is a function of its seed alone: the same with 1 and 2 threads, bit for bit, and
/// different for another seed.
#[test]
fn runs_are_reproducible_per_seed_and_independent_of_the_thread_count() {
    for (id, lambda) in [
        (TaskId::AdultLrAdam, [4.0, 64.0, 0.01, 1.0, 1.0]),
        (TaskId::AdultSvmSgd, [4.0, 64.0, 0.05, 1.0, 1.0]),
        (TaskId::FmnistMlp2Sgd, [1.0, 32.0, 0.1, 1.0, 1.0]),
    ] {
        let task = sample_task(id);
        let h = task.hyperparameters(lambda).unwrap();
        let fit = |threads: usize, seed: u64| {
            pool(threads).install(|| task.fit(&h, &mut stream(seed, &[])).unwrap())
        };
        let (one, two, again) = (fit(1, 5), fit(2, 5), fit(2, 5));
        let bits = |p: &[f64]| p.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&one.params), bits(&two.params), "{}", id.name());
        assert_eq!(bits(&two.params), bits(&again.params));
        assert_eq!(one.test_accuracy, two.test_accuracy);
        assert_eq!(one.steps, two.steps);
        assert_ne!(one.params, fit(1, 6).params, "{}: seeds 5 and 6", id.name());
    }
}

/// ε is the without-replacement accountant's at the subset's n (never the full data's larger
/// n, which would understate it), by spec 001 §6.1's conversion.
#[test]
fn epsilon_is_the_accountant_at_the_subset_size() {
    let task = sample_task(TaskId::AdultLrSgd);
    let h = task.hyperparameters([4.0, 256.0, 0.05, 2.0, 1.0]).unwrap();
    let direct = |n: u64| {
        let curve = DpSgd::without_replacement(n, 256, 2.0, 4).unwrap().rdp();
        integer_orders_epsilon(&curve, 1e-5, 4096).unwrap().epsilon
    };
    let eps = task.epsilon(&h).unwrap();
    assert_eq!(eps, direct(500));
    assert!(eps > direct(30_956));
}

/// Data errors name the file; a task on the other data set's files is refused by shape.
#[test]
fn files_of_the_wrong_kind_are_refused() {
    let adult = sample(TaskData::Adult);
    let msg = Task::new(TaskId::FmnistMlp2Sgd, &adult)
        .unwrap_err()
        .to_string();
    assert!(msg.starts_with("invalid train"), "{msg}");
    let files = [fixture(ADULT_FILES[0]), fixture(FMNIST_FILES[3])];
    let msg = TaskData::Adult.from_files(&files).unwrap_err().to_string();
    assert!(msg.contains("fashion-mnist-sample-t10k-labels"), "{msg}");
}

fn adult_params(extra: &str) -> toml::Table {
    format!(
        "kind = \"dpsgd-task\"\ntask = \"adult-lr-sgd\"\nadult = [\"{}\", \"{}\"]\n{extra}",
        fixture(ADULT_FILES[0]),
        fixture(ADULT_FILES[1])
    )
    .parse()
    .unwrap()
}

/// The registry builds the workload from a `[workload]` table; its run curve is DP-SGD's WOR
/// curve at the subset's n plus the score release's Gaussian; errors name the parameter.
#[test]
fn the_registry_entry_reads_its_table() {
    let params = adult_params("epochs = 2\nlot_size = 64\nnoise_multiplier = 3\nnoise = 2");
    let spec = build("dpsgd-task", &params).unwrap();
    assert_eq!(spec.kind(), "dpsgd-task");
    assert_eq!(spec.default_noise(), Some(2.0));
    let variants = spec.variants();
    assert_eq!(
        (variants.len(), variants[0].label.as_str()),
        (1, "adult-lr-sgd")
    );
    assert!(spec.params().contains("n=500"), "{}", spec.params());
    let w = spec.instance(0, 3, 0, 2.0).unwrap();
    assert_eq!(w.name(), "dpsgd-task(adult-lr-sgd)");
    let sgd = DpSgd::without_replacement(500, 64, 3.0, 2).unwrap().rdp();
    let release = Gaussian::new(1.0 / 200.0, 2.0 / 200.0).unwrap().rdp();
    let curve = crate::common::run_curve(w.private_training().unwrap());
    for order in [2.0, 5.0, 32.0] {
        let want = sgd.eval(order).unwrap() + release.eval(order).unwrap();
        let got = curve.eval(order).unwrap();
        assert!(
            (got - want).abs() <= 1e-12 * want,
            "{order}: {got} vs {want}"
        );
    }
    // The defaults: T = 4, m = 256, σ = 2 for Adult, the whole Table-1 ranges.
    let spec = DpsgdTuningSpec::from_params(&adult_params("")).unwrap();
    let w = spec.workload(0, 1, 1.0).unwrap();
    let s = w.settings();
    assert_eq!((s.epochs, s.lot_size, s.noise_multiplier), (4, 256, 2.0));
    assert_eq!((s.learning_rate, s.clip), ((5e-4, 5e-2), (0.1, 4.0)));
    assert_eq!(w.task().id(), TaskId::AdultLrSgd);
    for (extra, words) in [
        ("epochs = 0.2", "invalid epochs = 0.2"),
        ("lot_size = 600", "invalid lot_size = 600"),
        ("noise_multiplier = -1", "invalid noise_multiplier = -1"),
        ("clip_range = [0.01, 1]", "invalid clip_range"),
        (
            "learning_rate_range = [0.001]",
            "`learning_rate_range`: invalid length 1, expected an array of length 2",
        ),
        ("noise = 0", "invalid noise = 0"),
        ("oracle_runs = 0", "invalid oracle_runs"),
        ("task = \"adult-lr-sgb\"", "invalid task = adult-lr-sgb"),
        ("epoch = 3", "has no parameter `epoch`"),
    ] {
        let mut params = adult_params("");
        params.extend(extra.parse::<toml::Table>().unwrap());
        let msg = build("dpsgd-task", &params).err().unwrap().to_string();
        assert!(msg.contains(words), "{extra:?}: {msg}");
    }
    let msg = build(
        "dpsgd-task",
        &"task = \"adult-lr-sgd\"\nadult = [\"/nonexistent/a.data\", \"/nonexistent/a.test\"]"
            .parse()
            .unwrap(),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(msg.contains("/nonexistent/a.data"), "{msg}");
}

/// A whole tuning experiment through the harness on the Adult subset: two tuners at equal
/// budgets, every row within its budget, utilities (test accuracies) in [0, 1].
#[test]
fn a_tuning_experiment_runs_on_the_adult_subset() {
    let dir = common::temp_dir("dpsgd-task");
    let path = dir.join("exp.toml");
    std::fs::write(
        &path,
        format!(
            "name = \"dpsgd-task\"\nkind = \"tuning\"\nseed = 11\nseeds = 2\ndelta = 1e-5\n\
             [budget]\nepsilons = [8, 16]\n\
             [workload]\nkind = \"dpsgd-task\"\ntask = \"adult-lr-sgd\"\n\
             adult = [\"{}\", \"{}\"]\nepochs = 2\nlot_size = 64\nnoise_multiplier = 4\n\
             oracle_runs = 1\nbest_samples = 3\n\
             [[tuners]]\ntuner = \"naive\"\ncandidates = 3\n\
             [[tuners]]\ntuner = \"papernot-steinke\"\ndist = \"logarithmic\"\nmean = 3\n",
            fixture(ADULT_FILES[0]),
            fixture(ADULT_FILES[1])
        ),
    )
    .unwrap();
    let t = common::run_file(&path, Profile::Smoke, &dir.join("out"), 2);
    assert_eq!(t.height(), 2 * 2 * 2);
    let (eps, target) = (t.f64("epsilon").unwrap(), t.f64("target_epsilon").unwrap());
    let (utility, best) = (t.f64("utility").unwrap(), t.f64("best_utility").unwrap());
    for i in 0..t.height() {
        assert!(eps[i].unwrap() <= target[i].unwrap() + 1e-12);
        assert!((0.0..=1.0).contains(&utility[i].unwrap()));
        assert!((0.0..=1.0).contains(&best[i].unwrap()));
    }
    assert!(t.str("workload").unwrap().iter().all(|k| k == "dpsgd-task"));
    assert!(t
        .str("variant")
        .unwrap()
        .iter()
        .all(|k| k == "adult-lr-sgd"));
}

// ---------------------------------------------------------------------------------------------
// Full data (skipped, with a printed line, when the cache is absent)

fn full(test: &str, relative: &[&str]) -> bool {
    let Some(e) = relative.iter().find_map(|r| cached_file(r).err()) else {
        return true;
    };
    let line = format!("\ndpsgd_tasks::{test}: SKIPPED (needs the full data): {e}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
    false
}

/// The faithful Adult split: n = 30,956, 1,605 test rows, spec 001 §6.1's first vector, and
/// one run at the tuning defaults (T = 4, m = 256, σ = 2, η = 0.05, L = 1) beats the majority
/// class.
#[test]
fn full_adult_is_the_faithful_split_and_learns() {
    if !full(
        "full_adult_is_the_faithful_split_and_learns",
        &["adult/adult.data"],
    ) {
        return;
    }
    let task = Task::load(TaskId::AdultLrSgd).unwrap();
    assert_eq!((task.train_size(), task.test_size()), (30_956, 1_605));
    let vector = task.hyperparameters([10.0, 256.0, 0.01, 1.0, 1.0]).unwrap();
    assert_eq!(format!("{:.3}", task.epsilon(&vector).unwrap()), "3.684");
    let h = task.hyperparameters([4.0, 256.0, 0.05, 2.0, 1.0]).unwrap();
    let run = task.run(&h, &mut stream(1, &[])).unwrap();
    let base = majority(task.test_labels());
    assert!(run.test_accuracy > base, "{} vs {base}", run.test_accuracy);
    assert_eq!(run.delta, TASK_DELTA);
    assert!(!run.diverged);
}

/// Fashion-MNIST's full sizes and spec 001 §6.1's n = 60,000 vectors.
#[test]
fn full_fashion_mnist_sizes_and_the_spec_vectors() {
    let files = [
        "fashion-mnist/train-images-idx3-ubyte",
        "fashion-mnist/t10k-images-idx3-ubyte",
    ];
    if !full("full_fashion_mnist_sizes_and_the_spec_vectors", &files) {
        return;
    }
    let task = Task::load(TaskId::FmnistMlp2Sgd).unwrap();
    assert_eq!((task.train_size(), task.test_size()), (60_000, 10_000));
    for (lambda, printed) in [
        ([100.0, 600.0, 0.1, 4.0, 1.0], "2.857"),
        ([10.0, 256.0, 0.1, 1.1, 1.0], "2.300"),
    ] {
        let h = task.hyperparameters(lambda).unwrap();
        assert_eq!(format!("{:.3}", task.epsilon(&h).unwrap()), printed);
    }
}

/// DPareto over a task's Table-1 box: each point's ε is the accountant's at its rounded λ, its
/// error the mean over the replicates, and exact-ε DPareto proposes only new points.
#[test]
fn dpareto_searches_a_task_through_its_oracle() {
    use dptune::pareto::dpareto::{dpareto, DparetoOptions, Oracle, PrivacyModel};
    use dptune::workloads::dpsgd_tasks::TaskOracle;
    let task = sample_task(TaskId::AdultLrSgd);
    let mut oracle = TaskOracle {
        task: &task,
        replicates: 2,
    };
    let dims = oracle.dimensions().unwrap();
    assert_eq!(dims.len(), 5);
    let options = DparetoOptions {
        initial: 3,
        iterations: 2,
        candidates: 200,
        privacy: PrivacyModel::Exact,
        fit_restarts: 0,
        ..DparetoOptions::default()
    };
    let run = dpareto(&mut oracle, &dims, &options, &mut stream(21, &[])).unwrap();
    assert_eq!(run.len(), 5);
    for e in &run {
        let h = task
            .domain()
            .point(e.lambda.clone().try_into().unwrap())
            .unwrap();
        assert_eq!(e.objectives[0], task.epsilon(&h).unwrap());
        assert_eq!(oracle.epsilon(&e.lambda).unwrap().unwrap(), e.objectives[0]);
        assert!((0.0..=1.0).contains(&e.objectives[1]));
        assert_eq!(e.lambda[0].fract(), 0.0);
        assert_eq!(e.lambda[1].fract(), 0.0);
    }
    let bad = oracle.evaluate(&[1.0, 2.0], &mut stream(0, &[]));
    assert!(bad.unwrap_err().to_string().contains("5 values"));
}

/// Replicates trained together are the runs `fit` trains one at a time from the same streams.
#[test]
fn fit_many_is_fit_for_each_stream() {
    let task = sample_task(TaskId::AdultLrSgd);
    let h = task.domain().point([2.0, 64.0, 0.02, 1.1, 1.0]).unwrap();
    let mut streams: Vec<_> = (0..3u64).map(|k| stream(31, &[k])).collect();
    let together = task
        .fit_many(
            &h,
            streams
                .iter_mut()
                .map(|r| r as &mut dyn rand::RngCore)
                .collect(),
        )
        .unwrap();
    assert_eq!(together.len(), 3);
    for (k, fit) in together.iter().enumerate() {
        let alone = task.fit(&h, &mut stream(31, &[k as u64])).unwrap();
        assert_eq!(fit.params, alone.params);
        assert_eq!(fit.test_accuracy, alone.test_accuracy);
    }
    assert_ne!(together[0].params, together[1].params);
}
