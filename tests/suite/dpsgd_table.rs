//! Issue 64: the tabular benchmark's table (`kind = "dpsgd-table"`) and its replay. A table
//! built in the test (the shipped file's smoke profile: both Adult tasks on the committed
//! 500-row sample, a 2 × 2 grid, 2 seeds, σ ∈ {1, 4}) holds exactly the live runs, and a trial
//! replayed from it releases what the live workload releases for that run.

use crate::common;

use dptune::session::{drive, Evaluation, Evaluator, Told, Trial};
use dptune::sim::studies::dpsgd_replay::{Cells, DpsgdReplay, Draw, Replay};
use dptune::sim::studies::dpsgd_table::{run_stream, DpsgdTable, TableRow};
use dptune::sim::table::Table;
use dptune::sim::{load, Profile};
use dptune::workloads::dpsgd_tasks::{Domain, Task, TaskData, TaskId};
use dptune::workloads::dpsgd_tuning::{DpsgdTuning, TuningSettings, CALIBRATED_SIGMA};
use dptune::workloads::{Declarations, PrivateTraining, Space, TrainingDeclaration};
use std::path::Path;
use std::sync::Arc;

/// The smoke profile's table, committed for the replay's smoke profile.
const FIXTURE: &str = "tests/fixtures/dpsgd-table-smoke.parquet";

const SAMPLE: [&str; 2] = [
    "tests/fixtures/real_data/adult-sample.data",
    "tests/fixtures/real_data/adult-sample.test",
];

/// The live workload of `id` at noise multiplier `sigma` with the table's settings.
fn live(id: TaskId, table: &DpsgdTable, sigma: f64) -> DpsgdTuning {
    let data = TaskData::Adult.from_files(&SAMPLE).unwrap();
    let task = Task::new(id, &data).unwrap();
    let domain = Domain {
        noise_multiplier: CALIBRATED_SIGMA,
        ..*task.domain()
    };
    let task = task.with_domain(domain);
    let d = *task.domain();
    let settings = TuningSettings {
        epochs: table.epochs,
        lot_size: table.lot_size,
        noise_multiplier: sigma,
        learning_rate: d.learning_rate,
        clip: d.clip,
        oracle_runs: 1,
        best_samples: 1,
    };
    DpsgdTuning::new(Arc::new(task), settings, 0, sigma, Arc::default()).unwrap()
}

#[test]
fn a_replayed_run_is_the_live_run_of_its_seed() {
    let file = Path::new("sims/dpsgd-table-adult.toml");
    let out = common::temp_dir("dpsgd-table-replay");
    let merged = common::run_and_report(file, Profile::Smoke, &out, 2);
    let rows: Vec<TableRow> = merged.rows().unwrap();
    // The replay's committed smoke table is this table (timings aside).
    let fixture = Table::read_parquet(Path::new(FIXTURE)).unwrap();
    assert!(
        fixture.without_timing().identical(&merged.without_timing()),
        "{FIXTURE} is not the smoke profile's table: rebuild it with `dptune sim run \
         sims/dpsgd-table-adult.toml --profile smoke` and copy its table.parquet"
    );
    let exp = load(file, Profile::Smoke).unwrap();
    let table: &DpsgdTable = exp.study.as_any().downcast_ref().unwrap();
    assert_eq!(
        rows.len(),
        2 * 2 * 4 * 2,
        "tasks × rungs × grid points × seeds"
    );
    for id in [TaskId::AdultLrSgd, TaskId::AdultSvmSgd] {
        let cells = Arc::new(Cells::of(&rows, id.name()).unwrap());
        assert_eq!((cells.grid, cells.seeds), (2, 2));
        for (rung, &sigma) in cells.ladder.sigmas.iter().enumerate() {
            let w = live(id, table, sigma);
            // The run's privacy is the live workload's, event for event.
            assert_eq!(&cells.run_event(sigma).unwrap(), w.run_event());
            for row in rows
                .iter()
                .filter(|r| r.task == id.name() && r.sigma == sigma)
            {
                // The configuration is what the live workload trains at the row's u, and the
                // accuracy that of the live run from the row's stream, bit for bit.
                let u = vec![row.u_eta, row.u_clip];
                let h = w.hyperparameters(&u).unwrap();
                assert_eq!((h.learning_rate, h.clip), (row.learning_rate, row.clip));
                let mut rng = run_stream(table.seed, id, &h, row.seed);
                let again = w.test_accuracy(&u, &mut rng).unwrap();
                assert_eq!(again.to_bits(), row.test_accuracy.to_bits(), "{row:?}");
                assert_eq!(
                    cells
                        .accuracy(
                            rung,
                            row.i_eta as usize,
                            row.i_clip as usize,
                            row.seed as usize
                        )
                        .to_bits(),
                    row.test_accuracy.to_bits()
                );
            }
            // A trial replayed: the nearest grid point, a seed of its cell drawn from the
            // search's stream, then the live release's noise from the same stream.
            let replay = Replay::new(Arc::clone(&cells), None, sigma).unwrap();
            assert_eq!((replay.rung(), replay.release()), (Some(rung), w.release()));
            let trial = Trial {
                index: 0,
                hyper: vec![0.2, 0.9],
                evaluation: Evaluation::Train,
                stream: None,
                position: 0,
            };
            assert_eq!(replay.point(&trial.hyper), Some((0, 1)));
            let mut rng = dptune::rng::stream(7, &[1]);
            let mut copy = rng.clone();
            let Told::Score(score) = replay.evaluate(&trial, &mut rng).unwrap() else {
                panic!("a score")
            };
            let s = dptune::data::uniform_below(&mut copy, 2) as usize;
            let want = cells.accuracy(rung, 0, 1, s) + w.release().noise(&mut copy);
            assert_eq!(score.to_bits(), want.to_bits());
            // Outside the square: 0 plus the same noise, as the live workload releases.
            let outside = Trial {
                hyper: vec![1.5, 0.5],
                ..trial.clone()
            };
            let mut copy = rng.clone();
            let Told::Score(score) = replay.evaluate(&outside, &mut rng).unwrap() else {
                panic!("a score")
            };
            assert_eq!(score.to_bits(), w.release().noise(&mut copy).to_bits());
        }
        // Any tuner's session runs on the replay: naive over 3 random configurations.
        let sigma = cells.ladder.sigmas[1];
        let declared = Declarations {
            training: Some(TrainingDeclaration {
                run: cells.run_event(sigma).unwrap(),
            }),
            ..Declarations::of_space("replay", Space::UnitBox { dim: 2 })
        };
        let naive =
            dptune::tuners::build("naive", &toml::from_str("candidates = 3").unwrap()).unwrap();
        let mut rng = dptune::rng::stream(9, &[]);
        let mut session = naive.session(&declared, &mut rng).unwrap();
        let replay = Replay::new(Arc::clone(&cells), None, sigma).unwrap();
        let outcome = drive(&mut session, &replay, &mut rng).unwrap();
        assert_eq!(outcome.runs, 3);
        assert!(outcome.chosen.is_some() && outcome.released_score.is_some());
    }
}

/// A table with a missing run, or a run twice, cannot be replayed.
#[test]
fn an_incomplete_table_is_refused() {
    let row = |sigma: f64, seed: u64| TableRow {
        task: "adult-lr-sgd".into(),
        rung: 0,
        sigma,
        i_eta: 0,
        i_clip: 0,
        u_eta: 0.0,
        u_clip: 0.0,
        learning_rate: 5e-4,
        clip: 0.1,
        seed,
        epochs: 1,
        lot_size: 64,
        train_size: 500,
        test_size: 100,
        sampling_rate: 64.0 / 500.0,
        steps: 8,
        epsilon_rdp: 1.0,
        epsilon_pld: 1.0,
        delta: 1e-5,
        test_accuracy: 0.7,
        score_sensitivity: 0.01,
        initial_accuracy: 0.5,
        train_loss: None,
        diverged: false,
        steps_taken: 8,
        run_wall_s: 0.0,
    };
    assert!(Cells::of(&[row(1.0, 0)], "adult-lr-sgd").is_ok());
    assert!(Cells::of(&[row(1.0, 0)], "adult-svm-sgd").is_err());
    // Seed 1 of one cell without seed 0 of the other σ.
    let e = Cells::of(&[row(1.0, 0), row(1.0, 1), row(2.0, 1)], "adult-lr-sgd")
        .unwrap_err()
        .to_string();
    assert!(e.contains("3 rows where 2 σ"), "{e}");
    let e = Cells::of(&[row(1.0, 0), row(1.0, 0)], "adult-lr-sgd")
        .unwrap_err()
        .to_string();
    assert!(e.contains("rows where") || e.contains("twice"), "{e}");
}

/// The replay study on the smoke table: every tuner's searches at its calibrated σ, each
/// replayed at the rung above it on bootstrap table `seed mod B`, the oracle and the price per
/// search, and one summary per (task, tuner, budget) whose interval holds its mean.
#[test]
fn the_replay_study_runs_every_tuner_on_its_bootstrap_tables() {
    let file = Path::new("sims/dpsgd-replay-adult.toml");
    let out = common::temp_dir("dpsgd-replay-smoke");
    let runs = common::run_and_report(file, Profile::Smoke, &out, 2);
    let exp = load(file, Profile::Smoke).unwrap();
    let replay: &DpsgdReplay = exp.study.as_any().downcast_ref().unwrap();
    let (tuners, searches) = (replay.tuning.tuners.len(), replay.tuning.seeds as usize);
    let tasks = replay.loaded().unwrap().cells.len();
    assert_eq!(
        runs.height(),
        tasks * tuners * searches,
        "tasks × tuners × searches"
    );
    let f = |c: &str| runs.f64(c).unwrap().to_vec();
    let (noise, rung, eps) = (f("noise"), f("replayed_sigma"), f("epsilon"));
    let (utility, oracle, price) = (f("utility"), f("oracle"), f("price"));
    let seeds = runs.u64("seed").unwrap();
    let draws = runs.u64("table_draw").unwrap();
    for r in 0..runs.height() {
        // Noisier than calibrated, never less; within the budget; on table seed mod B.
        assert!(rung[r].unwrap() >= noise[r].unwrap(), "row {r}");
        assert!(eps[r].unwrap() <= 8.0, "row {r}");
        assert_eq!(draws[r], seeds[r] % replay.tables);
        let u = utility[r].unwrap();
        assert!((0.0..=1.0).contains(&u));
        assert_eq!(price[r].unwrap(), oracle[r].unwrap() - u);
    }
    let bench = Table::read_parquet(&out.join("dpsgd-replay-adult/bench.parquet")).unwrap();
    assert_eq!(bench.height(), tasks * tuners);
    let (m, lo, hi) = (
        bench.f64("utility").unwrap(),
        bench.f64("utility_lo").unwrap(),
        bench.f64("utility_hi").unwrap(),
    );
    for r in 0..bench.height() {
        assert!(lo[r].unwrap() <= m[r].unwrap() && m[r].unwrap() <= hi[r].unwrap());
    }
    let oracle = Table::read_parquet(&out.join("dpsgd-replay-adult/oracle.parquet")).unwrap();
    assert_eq!(oracle.height(), tasks);
    // A bootstrap table is a function of the file's seed, the task and its index.
    let cells = &replay.loaded().unwrap().cells[0];
    assert_eq!(Draw::new(cells, 1, 0), Draw::new(cells, 1, 0));
    assert_ne!(Draw::new(cells, 1, 0), Draw::new(cells, 1, 1));
}

/// A budget whose σ lies above the ladder's top rung cannot be replayed: the unit says so
/// (the table would have to replay a run less noisy than its calibration).
#[test]
fn a_budget_above_the_ladder_is_refused() {
    let text = std::fs::read_to_string("sims/dpsgd-replay-adult.toml")
        .unwrap()
        .replace(
            "budget = { epsilons = [8] }",
            "budget = { epsilons = [0.05] }",
        );
    let dir = common::temp_dir("dpsgd-replay-above");
    let file = dir.join("replay.toml");
    std::fs::write(&file, text).unwrap();
    let exp = load(&file, Profile::Smoke).unwrap();
    let e = exp.study.check().unwrap_err();
    assert!(
        e.1.to_string().contains("above the table's top rung"),
        "{e:?}"
    );
    let e = exp.study.run_unit("x", 1).unwrap_err().to_string();
    assert!(e.contains("above the table's top rung"), "{e}");
}
