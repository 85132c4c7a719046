"""dptune.tuners: guarantees equal to the Rust library's, the ask/tell loop, bad inputs."""

import math

import numpy as np
import pytest

from dptune import accounting as acc
from dptune import tuners


def objective(params, rng, sigma):
    """A numpy stand-in for training: a smooth score of the hyperparameters, released with
    Gaussian noise of std sigma (the run's declared privacy)."""
    x = np.array([params["lr"], params["clip"]])
    return float(1.0 - np.sum((np.log10(x) - np.log10([0.01, 1.0])) ** 2) + sigma * rng.standard_normal())


SPACE = {"lr": (1e-4, 1.0, "log"), "clip": (0.1, 10.0, "log")}
# One run: a score in [0, 1] over 10 private records (sensitivity 0.1) plus N(0, σ²): ρ = Δ²/(2σ²).
SIGMA = 0.1 / math.sqrt(2 * 0.05)
RUN = acc.GaussianDpEvent(SIGMA / 0.1)  # the Gaussian of sensitivity 1, noise σ/Δ: 0.05-zCDP


def test_papernot_steinke_guarantee_is_the_rust_librarys():
    # docs/library.md (a doc test of the Rust library, spec 000 Table A): a 0.1-zCDP run,
    # K ~ logarithmic with mean 10, delta 1e-6: epsilon 3.450841.
    t = tuners.papernot_steinke(run=acc.ZCDpEvent(0.1), space=2, mean=10, dist="logarithmic", delta=1e-6, seed=1)
    assert t.epsilon == pytest.approx(3.450841, abs=2e-6)
    # The same bound through the accountant (repeat_select directly, not through the tuner).
    same = acc.RdpAccountant(orders="continuous").compose(acc.RepeatAndSelectDpEvent(acc.ZCDpEvent(0.1), 10, 0))
    assert t.epsilon == pytest.approx(same.get_epsilon(1e-6), rel=1e-12)
    assert "ε = 3.45084" in t.statement and "δ = 1e-06" in t.statement


@pytest.mark.parametrize("dist,shape", [("poisson", math.inf), ("geometric", 1.0), ("tnb", 0.5)])
def test_papernot_steinke_families(dist, shape):
    t = tuners.papernot_steinke(run=RUN, space=SPACE, mean=8, dist=dist, eta=0.5 if dist == "tnb" else None,
                                delta=1e-6, seed=3)
    same = acc.RdpAccountant(orders="continuous").compose(acc.RepeatAndSelectDpEvent(RUN, 8, shape))
    assert t.epsilon == pytest.approx(same.get_epsilon(1e-6), rel=1e-9)


def test_naive_guarantee_is_the_composition_of_its_runs():
    t = tuners.random_search(run=RUN, space=SPACE, candidates=20, delta=1e-6, accountant="rdp")
    rdp = acc.RdpAccountant(orders="continuous").compose(RUN, 20).get_epsilon(1e-6)
    assert t.epsilon == pytest.approx(rdp, rel=1e-12)
    best = tuners.random_search(run=RUN, space=SPACE, candidates=20, delta=1e-6)  # min(RDP, PLD)
    pld = acc.PLDAccountant().compose(RUN, 20).get_epsilon(1e-6)
    assert best.epsilon == pytest.approx(min(rdp, pld), rel=1e-12)
    # Pure-DP runs: Kairouz–Oh–Viswanath when smaller.
    lap = tuners.random_search(run=acc.LaplaceDpEvent(10.0), space=1, candidates=5, delta=1e-6, accountant="rdp")
    assert lap.epsilon <= 5 * 0.1 + 1e-12


def test_liu_talwar_guarantee():
    t = tuners.liu_talwar(run=acc.ZCDpEvent(0.05), space=2, mean=10, delta=1e-6)
    same = acc.RdpAccountant(orders="continuous").compose(acc.RepeatAndSelectDpEvent(acc.ZCDpEvent(0.05), 10, 1.0))
    assert t.epsilon == pytest.approx(same.get_epsilon(1e-6), rel=1e-9)


def test_a_tuner_added_to_the_library_is_driven_by_its_registry_name():
    # `one-shot` (src/tuners/one_shot.rs) is one file and one registry line of the Rust library;
    # tests/suite/tune.rs drives it through the harness and `dptune tune`.
    run = acc.ZCDpEvent(0.1)
    t = tuners.registered(name="one-shot", run=run, space=SPACE, delta=1e-6, seed=5)
    same = acc.RdpAccountant(orders="continuous").compose(run)
    assert t.epsilon == pytest.approx(same.get_epsilon(1e-6), rel=1e-12)
    assert t.name == "one-shot" and "one run" in t.guarantee.theorem
    rng = np.random.default_rng(1)
    told = []
    for trial in t:
        s = objective(trial.params, rng, SIGMA)
        trial.report(s)
        told.append((s, trial.params))
    release = t.release()
    assert len(told) == 1 and release.score == told[0][0] and release.params == told[0][1]
    # The same seed draws the same candidate.
    again = tuners.registered(name="one-shot", run=run, space=SPACE, delta=1e-6, seed=5)
    params = []
    for trial in again:
        params.append(trial.params)
        trial.report(0.0)
    assert params == [told[0][1]]
    with pytest.raises(ValueError, match="tuner"):
        tuners.registered(name="no-such-tuner", run=run, space=SPACE, delta=1e-6)
    with pytest.raises(ValueError, match="mean"):
        tuners.registered(name="one-shot", params={"mean": 3}, run=run, space=SPACE, delta=1e-6)
    # A tuner whose evaluations must be exact in a way nothing outside the library can check.
    with pytest.raises(ValueError, match="exact loss gradient"):
        tuners.registered(name="dp-gd", params={"mu": 1.0, "steps": 3, "clip": 1.0, "eta": 0.1}, space=2,
                          delta=1e-6)


def test_ask_tell_loop_on_a_numpy_objective():
    tuner = tuners.papernot_steinke(run=RUN, space=SPACE, mean=8, dist="poisson", delta=1e-6, seed=11)
    rng = np.random.default_rng(0)
    told = []
    for trial in tuner:
        assert set(trial.params) == {"lr", "clip"}
        assert 1e-4 <= trial.params["lr"] <= 1.0 and 0.1 <= trial.params["clip"] <= 10.0
        s = objective(trial.params, rng, SIGMA)
        trial.report(s)
        told.append((s, trial.params))
    release = tuner.release()
    # K is private: not in the release; the tuner has it for the curator's logs.
    assert release.runs is None and len(told) == tuner.planned_runs
    if told:
        best = max(told, key=lambda st: st[0])
        assert release.score == best[0] and release.params == best[1]
    else:
        assert release.params is None and release.score is None
    assert release.guarantee.epsilon == tuner.epsilon and release.statement == tuner.statement
    # The same seed draws the same K and candidates.
    again = tuners.papernot_steinke(run=RUN, space=SPACE, mean=8, dist="poisson", delta=1e-6, seed=11)
    params = []
    for trial in again:
        params.append(trial.params)
        trial.report(0.0)
    assert params == [p for _, p in told]


def test_optuna_style_ask_all_then_tell_out_of_order():
    def run_once(order):
        tuner = tuners.random_search(run=RUN, space=SPACE, candidates=6, seed=5)
        trials = []
        while (t := tuner.ask()) is not None:
            trials.append(t)
            if len(trials) == 6:
                break
        rng = np.random.default_rng(1)
        scores = {t.number: objective(t.params, rng, SIGMA) for t in trials}
        for i in order:
            tuner.tell(trials[i], scores[i])
        assert tuner.ask() is None
        return tuner.release()
    a, b = run_once(range(6)), run_once([5, 3, 1, 0, 2, 4])
    assert a == b and a.runs == 6


def test_grid_search_runs_every_candidate_in_order():
    g = tuners.grid(lr=[0.001, 0.01, 0.1], clip=[0.5, 1.0])
    tuner = tuners.grid_search(run=RUN, grid=g, delta=1e-6)
    seen = []
    for trial in tuner:
        seen.append(trial.params)
        trial.report(-abs(math.log10(trial.params["lr"]) + 2) - abs(trial.params["clip"] - 1))
    assert seen == g
    assert tuner.release().params == {"lr": 0.01, "clip": 1.0}
    assert tuner.epsilon == pytest.approx(
        tuners.naive(run=RUN, space=6, candidates=6, delta=1e-6).epsilon, rel=1e-12)


def test_threshold_variant_waits_for_each_score():
    tuner = tuners.liu_talwar_threshold(run=RUN, space=1, threshold=0.9, halt_probability=0.1, seed=2)
    t = tuner.ask()
    if t is not None:
        with pytest.raises(ValueError, match="pending"):
            tuner.ask()
        t.report(0.95)  # reaches the threshold: released
        assert tuner.ask() is None
        r = tuner.release()
        assert r.score == 0.95 and r.runs is None  # the threshold variant's count is private


BAD = [
    (lambda: tuners.papernot_steinke(run=RUN, space=2, mean=-1), "mean"),
    (lambda: tuners.papernot_steinke(run=RUN, space=2, mean=5, dist="uniform"), "dist"),
    (lambda: tuners.papernot_steinke(run=RUN, space=2, mean=5, dist="tnb"), "eta"),
    (lambda: tuners.papernot_steinke(run=RUN, space=2, mean=5, dist="tnb", eta=-2), "eta"),
    (lambda: tuners.papernot_steinke(run=RUN, space=2, mean=5, truncate=0), "truncate"),
    (lambda: tuners.papernot_steinke(run=RUN, space=2, mean=5, delta=0), "delta"),
    (lambda: tuners.papernot_steinke(run="gaussian", space=2, mean=5), "run"),
    (lambda: tuners.papernot_steinke(run=RUN, space=0, mean=5), "space"),
    (lambda: tuners.papernot_steinke(run=RUN, space={"lr": (1, 0)}, mean=5), "space"),
    (lambda: tuners.papernot_steinke(run=RUN, space={"lr": (0, 1, "log")}, mean=5), "space"),
    (lambda: tuners.random_search(run=RUN, space=2, candidates=0), "candidates"),
    (lambda: tuners.naive(run=RUN, space=2), "candidates"),
    (lambda: tuners.naive(run=RUN, space=2, candidates=3, accountant="prv"), "accountant"),
    (lambda: tuners.naive(run=acc.ZCDpEvent(0.1), space=2, candidates=3, accountant="pld"), "accountant"),
    (lambda: tuners.liu_talwar(run=RUN, space=2, mean=0), "mean"),
    (lambda: tuners.liu_talwar_threshold(run=RUN, space=2, threshold=0.5, halt_probability=0), "halt_probability"),
    (lambda: tuners.grid_search(run=RUN, grid={"lr": [1, 2]}), "grid"),
    (lambda: tuners.grid(lr=[]), "grid"),
]


@pytest.mark.parametrize("make,name", BAD, ids=[b[1] + str(i) for i, b in enumerate(BAD)])
def test_bad_inputs_raise_value_error(make, name):
    with pytest.raises(ValueError) as e:
        make()
    assert name in str(e.value)


def test_bad_tells():
    tuner = tuners.random_search(run=RUN, space=2, candidates=2, seed=1)
    t = tuner.ask()
    with pytest.raises(ValueError, match="score"):
        t.report(float("nan"))
    with pytest.raises(ValueError, match="trial"):
        tuner.tell(7, 0.5)
    t.report(0.5)
    with pytest.raises(ValueError, match="trial"):
        t.report(0.6)  # told twice
    with pytest.raises(ValueError):
        tuner.release()  # one run still to go
