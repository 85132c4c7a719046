"""Tuners and deterministic answers shared by the resume tests and their subprocesses."""

import math

from dptune import accounting as acc
from dptune import tuners

SPACE = {"lr": (1e-3, 1.0, "log"), "clip": (0.1, 10.0, "log")}
USERS = 12
CENTERS = [(0.2 + 0.05 * (u % 5), 0.7 - 0.04 * (u % 4)) for u in range(USERS)]


def make(name, seed):
    """The tuner `name` on the seed `seed` (the same arguments in every process)."""
    if name == "papernot_steinke":
        return tuners.papernot_steinke(run=acc.ZCDpEvent(0.01), space=SPACE, mean=12, dist="poisson", seed=seed)
    if name == "random_search":
        return tuners.random_search(run=acc.ZCDpEvent(0.01), space=SPACE, candidates=9, seed=seed)
    if name == "liu_talwar_threshold":
        return tuners.liu_talwar_threshold(run=acc.ZCDpEvent(0.01), space=SPACE, threshold=2.0,
                                           halt_probability=0.02, seed=seed)
    if name == "propose_test":
        return tuners.propose_test(run=acc.ZCDpEvent(0.05), space=SPACE, grid=3, shards=4,
                                   private_validation_records=None, eps0=0.5, granularity=0.1, seed=seed)
    if name == "dp_gibo":
        return tuners.dp_gibo(space=SPACE, users=USERS, mu=2.0, steps=4, clip=1.0, batch=2, lengthscale=0.3,
                              seed=seed)
    if name == "gp_ucb":
        prior = tuners.GpPrior(kernel="rbf", lengthscale=0.3, scale=1.0, noise_sd=0.1, rho=0.9)
        return tuners.gp_ucb(space=SPACE, grid=4, prior=prior, evaluations=9, epsilon=1.0, delta=1e-3,
                             release="both", seed=seed)
    raise ValueError(name)


def quality(params):
    return 1.0 - 0.1 * (math.log10(params["lr"]) + 1.5) ** 2 - 0.1 * math.log10(params["clip"]) ** 2


def answer(trial):
    """What a trial reports: a deterministic function of what it asks for."""
    p = trial.params
    if trial.kind == "shard":
        return min(1.0, max(0.0, quality(p) - 0.02 * trial.shard))
    if trial.kind == "losses":
        x, y = trial.hyper
        return [(x - cx) ** 2 + (y - cy) ** 2 for cx, cy in CENTERS]
    return quality(p)


def record(tuner):
    """Every asked trial and the release, as plain data."""
    r = tuner.release()
    return {
        "trials": [[t.number, t.kind, t.hyper, t.candidate, t.shard, t.value] for t in tuner.trials],
        "release": [r.params, r.hyper, r.score, r.runs, r.statement],
    }


def finish(tuner):
    for trial in tuner:
        trial.report(answer(trial))
    return record(tuner)
