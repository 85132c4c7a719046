"""A PyTorch + Opacus training loop tuned by Papernot–Steinke through dptune.

Opacus trains each run with DP-SGD (Poisson sampling, per-example clipping, Gaussian noise);
dptune's tuner asks for the runs and accounts the whole search: each run's DP-SGD steps plus
the Gaussian release of its validation accuracy, K ~ logarithmic runs, the best one released.
Needs `pip install torch opacus` (not part of dptune's tests: CI has no torch). Data: the
digits set shipped in data/digits.csv (8x8 images, 10 classes), a small MLP.
Usage: python examples/python/dpsgd_opacus.py [seed]
"""

import os
import sys

import numpy as np

try:
    import torch
    from opacus import PrivacyEngine
except ImportError:  # pragma: no cover
    sys.exit("this example needs torch and opacus: pip install torch opacus")

from dptune.accounting import (ComposedDpEvent, GaussianDpEvent, PoissonSampledDpEvent, RdpAccountant,
                               SelfComposedDpEvent)
from dptune.tuners import papernot_steinke

HERE = os.path.dirname(os.path.abspath(__file__))
LOT, EPOCHS, SIGMA, SCORE_SD = 64, 5, 1.2, 0.02


def load(seed):
    raw = np.loadtxt(os.path.join(HERE, "..", "..", "data", "digits.csv"), delimiter=",", skiprows=1)
    x, y = raw[:, :-1] / 16.0, raw[:, -1].astype(np.int64)
    idx = np.random.default_rng(seed).permutation(len(y))
    val, train = idx[:360], idx[360:]
    t = lambda a: torch.tensor(a, dtype=torch.float32)  # noqa: E731
    return (t(x[train]), torch.tensor(y[train])), (t(x[val]), torch.tensor(y[val]))


def train_once(train, val, lr, clip, seed):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(*train), batch_size=LOT)
    engine = PrivacyEngine(accountant="rdp")
    model, optimizer, loader = engine.make_private(module=model, optimizer=optimizer, data_loader=loader,
                                                   noise_multiplier=SIGMA, max_grad_norm=clip, poisson_sampling=True)
    for _ in range(EPOCHS):
        for xb, yb in loader:
            if len(yb) == 0:
                continue
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(xb), yb).backward()
            optimizer.step()
    with torch.no_grad():
        acc = (model(val[0]).argmax(1) == val[1]).float().mean().item()
    return acc, engine.get_epsilon(1e-5)


def main(seed=1):
    train, val = load(seed)
    n, n_val = len(train[1]), len(val[1])
    # Opacus's Poisson loader: ceil(n / LOT) lots an epoch, each record in a lot with
    # probability q = 1 / ceil(n / LOT).
    lots = -(-n // LOT)
    q, steps = 1.0 / lots, EPOCHS * lots
    run = ComposedDpEvent([SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(SIGMA)), steps),
                           GaussianDpEvent(SCORE_SD * n_val)])
    print("one run:", RdpAccountant().compose(run).statement(1e-5))
    tuner = papernot_steinke(run=run, space={"lr": (0.01, 2.0, "log"), "clip": (0.1, 5.0, "log")},
                             mean=5, dist="logarithmic", delta=1e-5, seed=seed)
    print("before any run:", tuner.statement)
    rng = np.random.default_rng([seed, 9])
    for trial in tuner:
        acc, opacus_eps = train_once(train, val, trial.params["lr"], trial.params["clip"], seed + trial.number)
        score = acc + rng.normal(0, SCORE_SD)
        # Only what is data-independent is printed (the tuner's draws, Opacus's ε): the guarantee
        # covers releasing the best run alone, not every run's accuracy.
        print(f"  trial {trial.number}: lr {trial.params['lr']:.3g} clip {trial.params['clip']:.3g}; "
              f"Opacus's ε of this run's training alone {opacus_eps:.3f}")
        trial.report(score)
    r = tuner.release()
    print("released:", r.params, r.score)  # not the number of runs: K must stay secret
    print("privacy:", r.statement)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
