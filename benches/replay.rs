//! The tabular benchmark's speed (issue 64), side by side in one run: a trial replayed from a
//! table (`Replay::train`: the nearest grid point, a seed of the cell, the release's noise)
//! against one live DP-SGD run of the same task (`DpsgdTuning::train`: 1 epoch of lots of 64
//! on the committed 500-row Adult sample, far cheaper than the table's 8 epochs on 30,956
//! rows), in trials per second on one core; and one replayed search (naive, 10 random
//! configurations, its session driven to the end).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use dptune::session::drive;
use dptune::sim::studies::dpsgd_replay::{Cells, Replay};
use dptune::sim::studies::dpsgd_table::TableRow;
use dptune::sim::table::Table;
use dptune::workloads::dpsgd_tasks::{Domain, Task, TaskData, TaskId};
use dptune::workloads::dpsgd_tuning::{DpsgdTuning, TuningSettings, CALIBRATED_SIGMA};
use dptune::workloads::{Declarations, PrivateTraining};
use rand::Rng;
use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;

const SAMPLE: [&str; 2] = [
    "tests/fixtures/real_data/adult-sample.data",
    "tests/fixtures/real_data/adult-sample.test",
];

fn bench(c: &mut Criterion) {
    let rows: Vec<TableRow> =
        Table::read_parquet(Path::new("tests/fixtures/dpsgd-table-smoke.parquet"))
            .and_then(|t| t.rows())
            .expect("the smoke table");
    let cells = Arc::new(Cells::of(&rows, "adult-lr-sgd").expect("its cells"));
    let sigma = cells.ladder.sigmas[1];
    let replay = Replay::new(Arc::clone(&cells), None, sigma).expect("a replay");
    let mut g = c.benchmark_group("trial");
    g.throughput(Throughput::Elements(1));
    let mut rng = dptune::rng::stream(1, &[]);
    g.bench_function("replayed", |b| {
        b.iter(|| {
            let u = vec![rng.random::<f64>(), rng.random::<f64>()];
            black_box(replay.train(&u, &mut rng))
        })
    });
    let data = TaskData::Adult.from_files(&SAMPLE).expect("the sample");
    let task = Task::new(TaskId::AdultLrSgd, &data).expect("the task");
    let domain = Domain {
        noise_multiplier: CALIBRATED_SIGMA,
        ..*task.domain()
    };
    let task = task.with_domain(domain);
    let d = *task.domain();
    let settings = TuningSettings {
        epochs: 1,
        lot_size: 64,
        noise_multiplier: sigma,
        learning_rate: d.learning_rate,
        clip: d.clip,
        oracle_runs: 1,
        best_samples: 1,
    };
    let live = DpsgdTuning::new(Arc::new(task), settings, 0, sigma, Arc::default()).expect("live");
    g.bench_function("live", |b| {
        b.iter(|| {
            let u = vec![rng.random::<f64>(), rng.random::<f64>()];
            black_box(live.train(&u, &mut rng))
        })
    });
    g.finish();
    let naive =
        dptune::tuners::build("naive", &toml::from_str("candidates = 10").unwrap()).expect("naive");
    let declared = Declarations::of(&replay as &dyn dptune::workloads::Workload);
    let mut g = c.benchmark_group("search");
    g.throughput(Throughput::Elements(10));
    g.bench_function("replayed naive, 10 runs", |b| {
        b.iter(|| {
            let mut s = naive.session(&declared, &mut rng).expect("a session");
            black_box(drive(&mut s, &replay, &mut rng).expect("a search"))
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
