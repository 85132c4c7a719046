"""dptune.tuners' propose-test, DP-GIBO and private GP-UCB: guarantees against the Rust
library's and the specs' formulas, runs to a release on numpy objectives, bad inputs, and a
session resumed in another process."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import _resume_helpers as helpers
from dptune import accounting as acc
from dptune import tuners

HERE = os.path.dirname(os.path.abspath(__file__))
SPACE = {"lr": (1e-3, 1.0, "log"), "clip": (0.1, 10.0, "log")}


def rdp_epsilon(event, delta, count=1):
    return acc.RdpAccountant(orders="continuous").compose(event, count).get_epsilon(delta)


# ---------------------------------------------------------------------------------------------
# Propose-test (spec 003).

def test_propose_test_basic_guarantee_is_the_final_run_plus_t_max_passes():
    # M = ⌈(1 − 0)/0.1⌉ = 10 ticks, T_max = 2M − 1 = 19 passes at ε0 = 0.01 (spec 003 §2.3),
    # the final zCDP run at δ − δ′, δ′ = δ/2.
    run = acc.ZCDpEvent(0.05)
    t = tuners.propose_test(run=run, space=list(range(5)), shards=4, private_validation_records=None,
                            eps0=0.01, granularity=0.1, composition="basic", delta=1e-6, seed=1)
    assert t.epsilon == pytest.approx(rdp_epsilon(run, 0.5e-6) + 19 * 0.01, rel=1e-12)
    assert t.guarantee.delta == pytest.approx(0.5e-6, rel=1e-12)
    assert "T_max = 19" in t.guarantee.theorem and t.name == "propose-test"
    assert f"ε = {t.epsilon:.6g}" in t.statement and "final run" in t.statement


def test_propose_test_advanced_composition_is_the_spec_formula():
    # Spec 003 §2.3: ε_tune(δ′) = min{T·ε0, ε0·√(2T ln(1/δ′)) + T·ε0·(e^ε0 − 1)}, T = T_max.
    run, eps0, dp, delta = acc.ZCDpEvent(0.05), 0.002, 1e-7, 1e-6
    t = tuners.propose_test(run=run, space=list(range(3)), shards=2, private_validation_records=100,
                            eps0=eps0, composition="advanced", delta_prime=dp, delta=delta, seed=1)
    T = 2 * 100 - 1  # g = 0.01 by default: M = 100
    tune = min(T * eps0, eps0 * math.sqrt(2 * T * math.log(1 / dp)) + T * eps0 * math.expm1(eps0))
    assert tune < T * eps0  # the advanced branch, so δ′ is spent
    assert t.epsilon == pytest.approx(rdp_epsilon(run, delta - dp) + tune, rel=1e-9)
    assert t.guarantee.delta == pytest.approx(delta, rel=1e-12)


def test_propose_test_pure_final_run_and_a_tests_budget():
    # A pure-DP final run counts at its ε when that is tighter than its RDP bound; a tests'
    # budget ε_tune gives the largest ε0 that meets it.
    run = acc.LaplaceDpEvent(2.0)  # 0.5-DP
    t = tuners.propose_test(run=run, space=list(range(4)), shards=3, private_validation_records=None,
                            tune_epsilon=0.3, composition="basic", delta=1e-6, seed=2)
    final = min(0.5, rdp_epsilon(run, 0.5e-6))
    assert final + 0.3 - 1e-9 <= t.epsilon <= final + 0.3 + 1e-12


def test_propose_test_selects_the_clearly_best_candidate_and_releases_its_final_score():
    rng = np.random.default_rng(0)
    utility = np.array([0.1, 0.15, 0.9, 0.2, 0.1, 0.12])
    candidates = [{"lr": 10.0 ** -i} for i in range(6)]
    t = tuners.propose_test(run=acc.ZCDpEvent(0.05), space=candidates, shards=50,
                            private_validation_records=None, eps0=2.0, granularity=0.05, seed=5)
    assert t.planned_runs == 6 * 50 + 1
    kinds, final_score = [], None
    for trial in t:
        kinds.append(trial.kind)
        if trial.kind == "shard":
            assert 0 <= trial.shard < trial.shards == 50 and trial.params == candidates[trial.candidate]
            trial.report(float(np.clip(utility[trial.candidate] + 0.05 * rng.standard_normal(), 0, 1)))
        else:
            assert trial.kind == "final"
            final_score = 0.87 + 0.01 * rng.standard_normal()
            trial.report(final_score)
    assert kinds == ["shard"] * 300 + ["final"]
    r = t.release()
    assert r.params == candidates[2] and r.score == final_score and r.runs == 301
    assert r.guarantee == t.guarantee


def test_propose_test_over_a_grid_of_axes_asks_every_grid_point_on_every_shard():
    t = tuners.propose_test(run=acc.ZCDpEvent(0.05), space=SPACE, grid=3, shards=2,
                            private_validation_records=None, eps0=1.0, seed=3)
    seen = set()
    for trial in t:
        if trial.kind == "shard":
            seen.add((tuple(trial.hyper), trial.shard))
            trial.report(0.5)
        else:
            trial.report(0.5)
    assert len(seen) == 9 * 2 and {h for h, _ in seen} == {(a, b) for a in (0, .5, 1) for b in (0, .5, 1)}
    assert set(t.release().params) == {"lr", "clip"}


@pytest.mark.parametrize("kwargs,name", [
    (dict(shards=0), "shards"),
    (dict(shards=20, private_validation_records=10), "shards"),
    (dict(eps0=None), "eps0"),
    (dict(eps0=-1.0), "eps0"),
    (dict(tune_epsilon=1.0), "eps0"),
    (dict(granularity=1.5), "granularity"),
    (dict(u0=0.5, u_max=0.4), "u_max"),
    (dict(composition="fancy"), "composition"),
    (dict(delta_prime=2.0), "delta_prime"),
    (dict(fallback=7), "fallback"),
    (dict(fallback="first"), "fallback"),
    (dict(grid=3), "grid"),
    (dict(scan="random"), "scan"),
    (dict(delta=0.0), "delta"),
])
def test_propose_test_bad_inputs_name_the_parameter(kwargs, name):
    args = dict(run=acc.ZCDpEvent(0.05), space=list(range(4)), shards=2, private_validation_records=None, eps0=0.1)
    args.update(kwargs)
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        tuners.propose_test(**args)


def test_propose_test_bad_reports_raise_and_change_nothing():
    t = tuners.propose_test(run=acc.ZCDpEvent(0.05), space=[1, 2], shards=2, private_validation_records=None,
                            eps0=0.5, seed=1)
    trial = t.ask()
    for bad in (1.5, -0.1, float("nan"), "0.5"):
        with pytest.raises(ValueError, match=r"utility .*\[0, 1\]"):
            trial.report(bad)
    trial.report(1.0)
    with pytest.raises(ValueError, match="not a pending trial"):
        t.tell(trial, 1.0)
    with pytest.raises(ValueError, match="axes needs grid"):
        tuners.propose_test(run=acc.ZCDpEvent(0.05), space=SPACE, shards=2, private_validation_records=None, eps0=1)


# ---------------------------------------------------------------------------------------------
# DP-GIBO (spec 004).

def _phi(x):
    return 0.5 * math.erfc(-x / math.sqrt(2))


def gdp_epsilon(mu, delta):
    """ε of μ-GDP at δ by the exact curve δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (spec 004
    §1.6), by bisection."""
    lo, hi = 0.0, 100.0
    for _ in range(200):
        mid = (lo + hi) / 2
        d = _phi(-mid / mu + mu / 2) - math.exp(mid) * _phi(-mid / mu - mu / 2)
        lo, hi = (mid, hi) if d > delta else (lo, mid)
    return hi


def test_gdp_reference_matches_the_spec_table():
    for mu, eps in [(0.1, 0.3407), (0.5, 1.9931), (1.0, 4.3772), (2.0, 9.9973)]:
        assert gdp_epsilon(mu, 1e-5) == pytest.approx(eps, abs=1e-4)


@pytest.mark.parametrize("mu", [0.2, 1.0, 2.0])
def test_dp_gibo_guarantee_is_mu_gdp(mu):
    t = tuners.dp_gibo(space=2, users=100, mu=mu, steps=20, clip=1.0, delta=1e-5, seed=1)
    assert t.epsilon == pytest.approx(gdp_epsilon(mu, 1e-5), rel=1e-6)
    assert t.guarantee.delta == pytest.approx(1e-5)
    assert "validation users" in t.statement and "θ_T" in t.statement


def test_dp_gibo_with_private_training_runs_composes_them_in_rdp():
    # Fixed batches of d + 1 = 3 points: T·b + 1 = 31 runs, composed with ρ = μ²/2 zCDP.
    run = acc.ZCDpEvent(0.001)
    t = tuners.dp_gibo(space=SPACE, users=100, mu=1.0, steps=10, clip=1.0, run=run, delta=1e-6, seed=1)
    ref = acc.RdpAccountant(orders="continuous").compose(acc.ZCDpEvent(0.5)).compose(run, 31).get_epsilon(1e-6)
    assert t.epsilon == pytest.approx(ref, rel=1e-9)
    assert "31 private training runs" in t.guarantee.theorem and "training record" in t.statement


def test_dp_gibo_runs_to_a_release_on_per_user_losses():
    rng = np.random.default_rng(1)
    n, d = 40, 2
    centers = 0.75 + 0.05 * rng.standard_normal((n, d))

    def losses(x):
        return np.sum((np.asarray(x) - centers) ** 2, axis=1)

    t = tuners.dp_gibo(space=d, users=n, mu=50.0, steps=15, clip=2.0, batch=3, lengthscale=0.3,
                       theta0=[0.2, 0.2], step_rule="sgd", eta=0.1, seed=4)
    assert t.planned_runs == 15 * 3
    asked = 0
    while True:
        step = []
        trial = t.ask()
        if trial is None:
            break
        # A step's points do not depend on each other: ask them together, report in any order.
        step.append(trial)
        while len(step) < 3:
            step.append(t.ask())
        for tr in reversed(step):
            assert tr.kind == "losses" and set(tr.params) == {"x0", "x1"}
            tr.report(losses(tr.hyper))
        asked += len(step)
    r = t.release()
    assert asked == 45 and r.runs == 45 and r.score is None
    final = np.array(r.hyper)
    assert np.all((0 <= final) & (final <= 1))
    target = centers.mean(axis=0)
    assert np.linalg.norm(final - target) < 0.5 * np.linalg.norm(np.array([0.2, 0.2]) - target)


def test_dp_gibo_bad_inputs_and_reports():
    with pytest.raises(ValueError, match=r"space\['opt'\]"):
        tuners.dp_gibo(space={"lr": (0.1, 1.0), "opt": ["sgd", "adam"]}, users=5, mu=1, steps=3, clip=1)
    with pytest.raises(ValueError, match=r"space\['n'\]"):
        tuners.dp_gibo(space={"n": (1, 5, "int")}, users=5, mu=1, steps=3, clip=1)
    for kwargs, name in [(dict(users=0), "users"), (dict(mu=0.0), "mu"), (dict(mu=math.inf), "mu"),
                         (dict(steps=0), "steps"), (dict(clip=-1.0), "clip"), (dict(batch=0), "batch"),
                         (dict(batch=5000), "batch"), (dict(step_rule="adam"), "step_rule"),
                         (dict(evaluation_sd=-1.0), "evaluation_sd"), (dict(theta0=[2.0, 0.5]), "theta0"),
                         (dict(lengthscale=[0.1, 0.2, 0.3]), "lengthscale"), (dict(kernel="matern"), "kernel"),
                         (dict(history="some"), "history"), (dict(b_max=4), "b_max")]:
        args = dict(space=2, users=5, mu=1.0, steps=3, clip=1.0)
        args.update(kwargs)
        with pytest.raises(ValueError, match=rf"\b{name}\b"):
            tuners.dp_gibo(**args)
    t = tuners.dp_gibo(space=2, users=5, mu=1.0, steps=2, clip=1.0, seed=1)
    trial = t.ask()
    with pytest.raises(ValueError, match=r"losses.*must be 5"):
        trial.report([0.1] * 4)
    with pytest.raises(ValueError, match=r"losses\[\]"):
        trial.report([0.1, 0.2, float("inf"), 0.1, 0.1])
    with pytest.raises(ValueError, match="losses"):
        trial.report(0.3)
    trial.report(np.full(5, 0.3))  # a numpy array is a sequence


# ---------------------------------------------------------------------------------------------
# Private GP-UCB (spec 002).

PRIOR = tuners.GpPrior(kernel="rbf", lengthscale=0.3, scale=1.0, noise_sd=0.1, rho=0.9)


@pytest.mark.parametrize("release,k", [("hyperparameter", 1), ("gain", 1), ("both", 2)])
def test_gp_ucb_guarantee_is_k_releases_by_basic_composition(release, k):
    t = tuners.gp_ucb(space=SPACE, grid=5, prior=PRIOR, evaluations=10, epsilon=0.5, delta=1e-4,
                      release=release, seed=1)
    assert t.epsilon == pytest.approx(k * 0.5, rel=1e-15)
    assert t.guarantee.delta == pytest.approx(k * 1e-4, rel=1e-15)
    assert "Assumption 1" in t.guarantee.theorem
    assert "ONLY IF" in t.statement and "GP prior you declared" in t.statement and "rho = 0.9" in t.statement


def test_gp_ucb_runs_to_a_release_on_a_numpy_gain():
    rng = np.random.default_rng(2)

    def gain(x):
        return float(np.exp(-np.sum((np.asarray(x) - 0.6) ** 2) / 0.1) + 0.1 * rng.standard_normal())

    t = tuners.gp_ucb(space=2, grid=6, prior=PRIOR, evaluations=15, epsilon=2.0, delta=1e-3, release="both", seed=3)
    assert t.planned_runs == 15
    n = 0
    for trial in t:
        assert trial.kind == "gain"
        assert all(round(v * 5) == pytest.approx(v * 5) for v in trial.hyper)  # a grid point
        trial.report(gain(trial.hyper))
        n += 1
    r = t.release()
    assert n == 15 and r.runs == 15 and r.score is not None and math.isfinite(r.score)
    assert r.params is not None and all(round(v * 5) == pytest.approx(v * 5) for v in r.hyper)


def test_gp_ucb_needs_a_declared_prior_and_valid_inputs():
    with pytest.raises(ValueError, match=r"\bprior\b"):
        tuners.gp_ucb(space=2, grid=4, prior=None, evaluations=5, epsilon=1.0, delta=1e-3)
    with pytest.raises(TypeError):
        tuners.gp_ucb(space=2, grid=4, evaluations=5, epsilon=1.0, delta=1e-3)  # no default prior
    for kwargs, name in [(dict(rho=1.5), "prior.rho"), (dict(lengthscale=0.0), "prior.lengthscale"),
                         (dict(scale=-1.0), "prior.scale"), (dict(noise_sd=-0.1), "prior.noise_sd"),
                         (dict(kernel="linear"), "prior.kernel")]:
        p = dict(kernel="rbf", lengthscale=0.3, scale=1.0, noise_sd=0.1, rho=0.9)
        p.update(kwargs)
        with pytest.raises(ValueError, match=rf"\b{name}\b"):
            tuners.GpPrior(**p)
    for kwargs, name in [(dict(grid=1), "grid"), (dict(grid=1000), "grid"), (dict(evaluations=0), "evaluations"),
                         (dict(epsilon=0.0), "epsilon"), (dict(delta=1.0), "delta"), (dict(release="all"), "release"),
                         (dict(profile="loose"), "profile"), (dict(gamma=-1.0), "gamma"),
                         (dict(space=["a", "b"]), "space")]:
        args = dict(space=2, grid=4, prior=PRIOR, evaluations=5, epsilon=1.0, delta=1e-3)
        args.update(kwargs)
        with pytest.raises(ValueError, match=rf"\b{name}\b"):
            tuners.gp_ucb(**args)
    # Exact evaluations (noise_sd = 0) need Algorithm 2's constants to release a gain: the
    # Rust library's error, as a ValueError naming them.
    exact = tuners.GpPrior(kernel="rbf", lengthscale=0.3, scale=1.0, noise_sd=0.0, rho=0.9)
    with pytest.raises(ValueError, match="noise_free_a"):
        tuners.gp_ucb(space=2, grid=4, prior=exact, evaluations=5, epsilon=1.0, delta=1e-3, release="gain")


# ---------------------------------------------------------------------------------------------
# Resuming in another process.

TUNERS = ["papernot_steinke", "random_search", "liu_talwar_threshold", "propose_test", "dp_gibo", "gp_ucb"]


def _resume_elsewhere(state: str, tmp_path, how: str):
    path = tmp_path / "state.json"
    path.write_text(state)
    code = (
        "import json, sys\n"
        f"sys.path.insert(0, {HERE!r})\n"
        "import _resume_helpers as h\n"
        "from dptune import tuners\n"
        f"state = open({str(path)!r}).read()\n"
        f"tuner = tuners.Tuner.resume(state) if {how == 'resume'!r} else h.make(json.loads(state)['tuner']['constructor'], None).load(state)\n"
        "print(json.dumps(h.finish(tuner)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize("name", TUNERS)
@pytest.mark.parametrize("stop_after,pending", [(3, False), (5, True)])
def test_a_session_resumed_in_another_process_asks_and_releases_what_an_uninterrupted_one_does(
        name, stop_after, pending, tmp_path):
    seed = 20261128
    whole = json.loads(json.dumps(helpers.finish(helpers.make(name, seed))))
    assert len(whole["trials"]) > stop_after + 1, "the test needs trials after the save"

    tuner = helpers.make(name, seed)
    for _ in range(stop_after):
        trial = tuner.ask()
        trial.report(helpers.answer(trial))
    if pending:
        held = tuner.ask()  # asked, not reported when saved: asked again after the resume
    state = tuner.save()
    resumed = _resume_elsewhere(state, tmp_path, "resume" if stop_after == 3 else "load")
    assert resumed == whole
    if pending:
        assert held.number == stop_after and resumed["trials"][stop_after][0] == held.number


def test_a_resumed_stream_continues_where_it_was_not_from_its_start(tmp_path):
    # Random search draws each candidate from the session's stream as it is asked: a resume
    # that restarted the stream would ask the first candidates again.
    t = helpers.make("random_search", 7)
    first = [t.ask() for _ in range(3)]
    for tr in first:
        tr.report(0.5)
    resumed = _resume_elsewhere(t.save(), tmp_path, "resume")
    hypers = [tr[2] for tr in resumed["trials"]]
    assert hypers[:3] == [tr.hyper for tr in first]
    assert all(h not in hypers[:3] for h in hypers[3:])


def test_load_refuses_a_state_of_other_arguments_and_bad_text():
    t = helpers.make("papernot_steinke", 1)
    t.ask().report(0.5)
    state = t.save()
    other = tuners.papernot_steinke(run=acc.ZCDpEvent(0.02), space=helpers.SPACE, mean=12, dist="poisson")
    with pytest.raises(ValueError, match="other arguments"):
        other.load(state)
    started = helpers.make("papernot_steinke", 1)
    started.ask()
    with pytest.raises(ValueError, match="fresh tuner"):
        started.load(state)
    for bad in ("", "{}", "[1, 2]", json.dumps({"kind": "dptune.tuners state", "version": 99})):
        with pytest.raises(ValueError, match="invalid state"):
            tuners.Tuner.resume(bad)
    # A space of objects JSON cannot hold: saved, but only `load` can continue it.
    objs = [object(), object(), object()]
    t = tuners.naive(run=acc.ZCDpEvent(0.01), space=objs, seed=3)
    t.ask().report(0.1)
    state = t.save()
    with pytest.raises(ValueError, match="tuner.load"):
        tuners.Tuner.resume(state)
    again = tuners.naive(run=acc.ZCDpEvent(0.01), space=objs).load(state)
    assert [again.ask().number for _ in range(2)] == [1, 2]
