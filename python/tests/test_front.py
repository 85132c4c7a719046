"""dptune.tuners' front searches (DPareto and its baselines): the points they ask for, the
front they return, resuming, bad inputs."""

import math

import numpy as np
import pytest

from dptune import accounting as acc
from dptune import tuners

SPACE = {"lr": (1e-3, 1.0, "log"), "sigma": (0.5, 8.0, "log"), "epochs": (1, 8, "int")}


def evaluate(params):
    """A numpy stand-in for training: ε of DP-SGD at the point (q = 0.01, 100 steps an epoch)
    and a smooth error in [0, 1] that falls with the noise and the epochs."""
    eps = acc.get_epsilon(noise_multiplier=params["sigma"], sample_rate=0.01, steps=100 * params["epochs"],
                          delta=1e-5)
    err = 0.1 + 0.15 * abs(math.log10(params["lr"]) + 1.5) + 0.2 / (params["sigma"] * math.sqrt(params["epochs"]))
    return eps, min(1.0, err)


def run(search, stop=None):
    for t in search:
        t.report(*evaluate(t.params))
        if stop is not None and len(search.evaluations) == stop:
            break
    return search


def test_grid_search_asks_for_the_grid_in_order():
    s = tuners.front_grid_search(space={"lr": (1e-3, 1.0, "log"), "clip": (0.1, 2.0)}, points=3)
    for t in s:
        t.report(1.0 / t.params["clip"], 0.5)
    got = [(e["params"]["lr"], e["params"]["clip"]) for e in s.evaluations]
    want = [(lr, c) for lr in np.geomspace(1e-3, 1.0, 3) for c in np.linspace(0.1, 2.0, 3)]
    assert len(got) == 9
    for g, w in zip(got, want):
        assert g == pytest.approx(w, rel=1e-12)
    assert all(not e["proposed"] for e in s.evaluations)


def test_random_sampling_stays_in_the_box_and_follows_its_seed():
    a = run(tuners.front_random_sampling(space=SPACE, count=40, seed=5))
    b = run(tuners.front_random_sampling(space=SPACE, count=40, seed=5))
    c = run(tuners.front_random_sampling(space=SPACE, count=40, seed=6))
    assert a.evaluations == b.evaluations and a.evaluations != c.evaluations
    for e in a.evaluations:
        p = e["params"]
        assert 1e-3 <= p["lr"] <= 1.0 and 0.5 <= p["sigma"] <= 8.0
        assert isinstance(p["epochs"], int) and 1 <= p["epochs"] <= 8
    # Log-uniform on a log axis: about half the draws below the geometric midpoint.
    below = sum(e["params"]["lr"] < math.sqrt(1e-3) for e in a.evaluations)
    assert 8 <= below <= 32


def test_dpareto_proposes_after_its_random_points_and_returns_the_front():
    s = run(tuners.dpareto(space=SPACE, initial=4, iterations=5, candidates=300, seed=3))
    ev = s.evaluations
    assert len(ev) == 9
    assert [e["proposed"] for e in ev] == [False] * 4 + [True] * 5
    assert all(e["acquisition"] is None for e in ev[:4])
    assert all(math.isfinite(e["acquisition"]) for e in ev[4:])
    front = s.front()
    dominated = lambda a, b: b["epsilon"] <= a["epsilon"] and b["error"] <= a["error"] and (
        b["epsilon"], b["error"]) != (a["epsilon"], a["error"])
    # Nothing on the front is dominated; everything off it is dominated by a point on it.
    assert all(not dominated(f, e) for f in front for e in ev)
    on = [(f["epsilon"], f["error"]) for f in front]
    assert all(any(dominated(e, f) for f in front) for e in ev if (e["epsilon"], e["error"]) not in on)
    assert [f["epsilon"] for f in front] == sorted(f["epsilon"] for f in front)


def test_dpareto_resumes_with_the_draws_of_an_uninterrupted_run():
    whole = run(tuners.dpareto(space=SPACE, initial=3, iterations=4, candidates=200, seed=11))
    part = run(tuners.dpareto(space=SPACE, initial=3, iterations=4, candidates=200, seed=11), stop=5)
    state = part.save()
    rest = run(tuners.FrontSearch.resume(state))
    assert rest.evaluations == whole.evaluations


def test_optuna_style_and_replicates():
    s = tuners.dpareto(space=SPACE, initial=2, iterations=1, candidates=100, seed=1)
    while (t := s.ask()) is not None:
        eps, err = evaluate(t.params)
        s.tell(t, eps, errors=[err, err / 2])
    assert [e["errors"][1] * 2 for e in s.evaluations] == pytest.approx([e["errors"][0] for e in s.evaluations])
    assert all(e["error"] == pytest.approx(0.75 * e["errors"][0]) for e in s.evaluations)


def test_bad_inputs_are_value_errors_that_change_nothing():
    with pytest.raises(ValueError, match="numeric axes"):
        tuners.dpareto(space={"opt": ["sgd", "adam"]}, seed=1)
    with pytest.raises(ValueError, match="dict of numeric axes"):
        tuners.dpareto(space=2, seed=1)
    with pytest.raises(ValueError, match="acquisition"):
        tuners.dpareto(space=SPACE, acquisition="ucb", seed=1)
    with pytest.raises(ValueError, match="low > 0"):
        tuners.front_grid_search(space={"lr": (0.0, 1.0, "log")}, points=3)
    s = tuners.dpareto(space=SPACE, initial=2, iterations=1, candidates=100, seed=1)
    t = s.ask()
    with pytest.raises(ValueError, match="not reported yet"):
        s.ask()
    for eps, kw in [(0.0, {"error": 0.2}), (math.nan, {"error": 0.2}), (1.0, {"error": 1.5}),
                    (1.0, {}), (1.0, {"error": 0.2, "errors": [0.2]}), (1.0, {"errors": []})]:
        with pytest.raises(ValueError):
            s.tell(t, eps, **kw)
    with pytest.raises(ValueError, match="not reported yet"):
        s.save()
    t.report(1.0, 0.3)  # still pending after the refused tells
    with pytest.raises(ValueError, match="not the point"):
        s.tell(t, 1.0, 0.3)
    with pytest.raises(ValueError, match="invalid state"):
        tuners.FrontSearch.resume("{}")
