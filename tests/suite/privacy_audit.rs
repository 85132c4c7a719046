//! Issue 22: the privacy audit catches planted accounting bugs, and passes the honest tuners
//! they are planted in. Each bug is a wrapper around a registered tuner that changes one
//! thing: what it claims (drops the final run's cost) or what it releases (a data-dependent
//! value when K = 0).

use dptune::accounting::Accountant;
use dptune::audit::{audit, Audit, AuditSettings};
use dptune::error::Result;
use dptune::tuners::runs::State;
use dptune::tuners::{build, Guarantee, Outcome, Tuner};
use dptune::workloads::canary::{Canary, Side};
use dptune::workloads::{Declarations, Workload};
use rand::RngCore;

fn tuner(name: &str, params: &str) -> Box<dyn Tuner> {
    build(name, &params.parse::<toml::Table>().unwrap()).unwrap()
}

/// Runs the audit on the canary pair with run noise z = `noise`.
fn audited(t: &dyn Tuner, noise: f64) -> Audit {
    let pair = [Side::Without, Side::With].map(|s| Canary::new(s, 2, noise, 10, 100.0).unwrap());
    let settings = AuditSettings {
        trials: 40_000,
        calibration: 10_000,
        confidence: 0.95,
        delta: 1e-5,
        seed: 22,
    };
    audit(t, [&pair[0], &pair[1]], &settings, &Accountant::default()).unwrap()
}

/// Planted bug 1: propose-test whose guarantee leaves out the final training run (it claims
/// only the cost of its tests), while it still trains and releases that run.
struct DropsFinalRun(Box<dyn Tuner>);

impl Tuner for DropsFinalRun {
    fn name(&self) -> &'static str {
        "propose-test without its final run"
    }
    fn params(&self) -> String {
        self.0.params()
    }
    fn guarantee(&self, d: &Declarations, delta: f64, acc: &Accountant) -> Result<Guarantee> {
        let whole = self.0.guarantee(d, delta, acc)?;
        // The final run gets δ − δ′ = δ/2 (the tuner's default δ′).
        let run = acc.epsilon(
            &dptune::accounting::rdp_events::curve(&d.training.as_ref().unwrap().run, acc)?,
            delta / 2.0,
        )?;
        Ok(Guarantee {
            epsilon: whole.epsilon - run.epsilon,
            ..whole
        })
    }
    fn session(&self, d: &Declarations, rng: &mut dyn RngCore) -> Result<State> {
        self.0.session(d, rng)
    }
    fn check_workload(&self, w: &dyn Workload) -> Result<()> {
        self.0.check_workload(w)
    }
}

/// Planted bug 2: repeat-and-select that, when K = 0, releases the default candidate's score
/// computed on the private data without noise (as an earlier Fig. 7 study credited a search
/// with K = 0 with a trained run), under the honest tuner's guarantee.
struct LeaksAtKZero(Box<dyn Tuner>);

impl Tuner for LeaksAtKZero {
    fn name(&self) -> &'static str {
        "repeat-and-select releasing a score at K = 0"
    }
    fn params(&self) -> String {
        self.0.params()
    }
    fn guarantee(&self, d: &Declarations, delta: f64, acc: &Accountant) -> Result<Guarantee> {
        self.0.guarantee(d, delta, acc)
    }
    fn session(&self, d: &Declarations, rng: &mut dyn RngCore) -> Result<State> {
        self.0.session(d, rng)
    }
    fn tune(&self, w: &dyn Workload, rng: &mut dyn RngCore) -> Result<Outcome> {
        let mut out = self.0.tune(w, rng)?;
        if out.chosen.is_none() {
            let h = w.space().default_point();
            out.released_score = Some(w.oracle().utility(&h));
            out.chosen = Some(h);
        }
        Ok(out)
    }
}

#[test]
fn a_guarantee_without_the_final_run_is_caught_and_the_honest_one_passes() {
    let params = "grid = 3\nshards = 10\nu0 = 0.5\ngranularity = 0.05\neps0 = 0.1";
    let honest = audited(tuner("propose-test", params).as_ref(), 0.5);
    assert!(!honest.breached(), "{honest:?}");
    let bug = audited(&DropsFinalRun(tuner("propose-test", params)), 0.5);
    assert!(bug.breached(), "the planted bug was not caught: {bug:?}");
    // The same runs: only the claim differs.
    assert_eq!(bug.lower, honest.lower);
    assert!(bug.claimed.epsilon < honest.claimed.epsilon);
}

#[test]
fn a_data_dependent_release_at_k_zero_is_caught_and_the_honest_tuner_passes() {
    let params = "dist = \"poisson\"\nmean = 0.1";
    // Noisier runs (z = 2) make the honest guarantee small; the leak needs no run.
    let honest = audited(tuner("papernot-steinke", params).as_ref(), 2.0);
    assert!(!honest.breached(), "{honest:?}");
    let bug = audited(&LeaksAtKZero(tuner("papernot-steinke", params)), 2.0);
    assert!(bug.breached(), "the planted bug was not caught: {bug:?}");
}

#[test]
fn the_audit_is_reproducible_from_its_seed() {
    let t = tuner("naive", "candidates = 3");
    let (a, b) = (audited(t.as_ref(), 1.0), audited(t.as_ref(), 1.0));
    assert_eq!(a, b);
    assert!(a.lower > 0.0 && !a.breached(), "{a:?}");
}
