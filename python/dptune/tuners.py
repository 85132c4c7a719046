"""Private hyperparameter tuners as ask/tell loops, from dptune's Rust library.

A tuner is made from keyword arguments: the privacy of *one* training run (a
:class:`dptune.accounting.DpEvent`), the search space and the tuner's own parameters. Its
guarantee is known at once, before any run; then it asks for runs and is told their released
scores, and ends with the release::

    from dptune.accounting import ZCDpEvent
    from dptune.tuners import papernot_steinke

    tuner = papernot_steinke(run=ZCDpEvent(0.05), space={"lr": (1e-4, 1e-1, "log")},
                             mean=8, dist="poisson", delta=1e-6)
    print(tuner.statement)                 # (ε, δ) before any run
    for trial in tuner:                    # K ~ Poisson(8) trials
        trial.report(train_and_score(**trial.params))
    release = tuner.release()              # the best trial's params and score, and the guarantee

or in Optuna's style: ``trial = tuner.ask()`` … ``tuner.tell(trial, score)``.

Each reported score must be *released privately* by your run (e.g. a validation accuracy plus
Gaussian noise), and the run's whole privacy must be what ``run`` declares: the guarantee is
for the release of the chosen candidate and its score. The tuner's own draws (the number of
runs K, the candidates) come from a fresh secret seed unless ``seed`` is given (a fixed seed is
for tests: K must stay secret).
"""

from __future__ import annotations

import itertools
import math
import secrets
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Union

from . import _dptune
from .accounting import DpEvent, _event, _integer, _number, _positive

__all__ = [
    "Guarantee", "Trial", "Release", "Tuner", "naive", "random_search", "grid_search",
    "liu_talwar", "liu_talwar_threshold", "papernot_steinke", "grid",
]


@dataclass(frozen=True)
class Guarantee:
    """A data-independent (ε, δ) guarantee of a tuner and the result it rests on."""

    epsilon: float
    delta: float
    theorem: str


@dataclass(frozen=True)
class Release:
    """What a tuning run released: the chosen candidate (None if the tuner released its
    data-independent default, e.g. K = 0), its released score, the number of runs, and the
    guarantee with its statement in words."""

    params: Optional[Dict[str, Any]]
    hyper: Optional[List[float]]
    score: Optional[float]
    runs: int
    guarantee: Guarantee
    statement: str


class _Axis:
    def __init__(self, name: str, spec):
        self.name = name
        if isinstance(spec, (list, tuple)) and len(spec) in (2, 3) and all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in spec[:2]) and (
                len(spec) == 2 or spec[2] in ("log", "linear", "int", "log-int")):
            lo, hi = float(spec[0]), float(spec[1])
            self.scale = spec[2] if len(spec) == 3 else "linear"
            if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
                raise ValueError(f"invalid space[{name!r}] = {spec!r}: must be (low, high) with low < high")
            if "log" in self.scale and lo <= 0:
                raise ValueError(f"invalid space[{name!r}] = {spec!r}: a log scale needs low > 0")
            self.lo, self.hi, self.choices = lo, hi, None
        elif isinstance(spec, (list, tuple)) and len(spec) >= 1:
            self.choices, self.scale = list(spec), "choice"
        else:
            raise ValueError(f"invalid space[{name!r}] = {spec!r}: must be (low, high), (low, high, 'log'|'int'|"
                             "'log-int') or a list of choices")

    def value(self, u: float):
        if self.choices is not None:
            return self.choices[min(int(u * len(self.choices)), len(self.choices) - 1)]
        if "log" in self.scale:
            x = math.exp(math.log(self.lo) + u * (math.log(self.hi) - math.log(self.lo)))
        else:
            x = self.lo + u * (self.hi - self.lo)
        if "int" in self.scale:
            return int(min(max(round(x), math.ceil(self.lo)), math.floor(self.hi)))
        return x


def grid(**axes: Sequence[Any]) -> List[Dict[str, Any]]:
    """Every combination of the given values, as a list of candidates for ``grid_search``:
    ``grid(lr=[0.01, 0.1], clip=[0.5, 1.0])``."""
    if not axes:
        raise ValueError("invalid grid: give at least one axis, e.g. grid(lr=[0.01, 0.1])")
    for k, v in axes.items():
        if isinstance(v, (str, bytes)) or not hasattr(v, "__iter__") or len(list(v)) == 0:
            raise ValueError(f"invalid grid axis {k} = {v!r}: must be a non-empty list of values")
    names = list(axes)
    return [dict(zip(names, combo)) for combo in itertools.product(*(list(axes[n]) for n in names))]


class _Space:
    """A search space: the unit box (an int d), named axes (a dict), or a list of candidates."""

    def __init__(self, space):
        self.axes: Optional[List[_Axis]] = None
        self.candidates: Optional[List[Any]] = None
        if isinstance(space, bool):
            raise ValueError(f"invalid space = {space!r}")
        if isinstance(space, int):
            if space < 1:
                raise ValueError(f"invalid space = {space}: a dimension must be an integer >= 1")
            self.encoded: Any = space
        elif isinstance(space, Mapping):
            if not space:
                raise ValueError("invalid space = {}: give at least one axis")
            self.axes = [_Axis(str(k), v) for k, v in space.items()]
            self.encoded = len(self.axes)
        elif isinstance(space, (list, tuple)):
            if not space:
                raise ValueError("invalid space = []: give at least one candidate")
            self.candidates = list(space)
            # The Rust side sees candidate i as the point [i]; the user sees the candidate itself.
            self.encoded = [[float(i)] for i in range(len(space))]
        else:
            raise ValueError(f"invalid space = {space!r}: must be a dimension (int), a dict of axes, or a "
                             "list of candidates")
        self.finite = self.candidates is not None

    def params(self, hyper: List[float]):
        if self.candidates is not None:
            c = self.candidates[int(hyper[0])]
            return c if isinstance(c, dict) else {"candidate": c}
        if self.axes is not None:
            return {a.name: a.value(u) for a, u in zip(self.axes, hyper)}
        return {f"x{i}": u for i, u in enumerate(hyper)}


class Trial:
    """One run the tuner asks for: ``params`` (named values), ``hyper`` (the point in the unit
    box, or the candidate's index), ``number``. Tell its released score with :meth:`report`."""

    def __init__(self, tuner: "Tuner", number: int, hyper: List[float]):
        self._tuner = tuner
        self.number = number
        self.hyper = hyper
        self.params = tuner._space.params(hyper)
        self.score: Optional[float] = None

    def report(self, score: float) -> None:
        """Tells the tuner this run's released (private) score; higher is better."""
        self._tuner.tell(self, score)

    def __repr__(self):
        return f"Trial(number={self.number}, params={self.params!r})"


class Tuner:
    """A private tuner with its guarantee and an ask/tell session. Made by :func:`naive`,
    :func:`random_search`, :func:`grid_search`, :func:`liu_talwar`, :func:`liu_talwar_threshold`
    or :func:`papernot_steinke`."""

    def __init__(self, spec: tuple, run: DpEvent, space, delta: float, seed: Optional[int],
                 orders: Union[None, str, Sequence[float]] = None):
        self._spec = spec
        self.run = _event("run", run)
        self._space = _Space(space)
        self.delta = _number("delta", delta, "in (0, 1)", lambda x: 0 < x < 1)
        if seed is None:
            seed = secrets.randbits(64)
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
            raise ValueError(f"invalid seed = {seed!r}: must be an integer in [0, 2**64)")
        self._seed = seed
        if orders is not None and orders != "continuous":
            orders = [float(o) for o in orders]
        eps, d, theorem, name, params = _dptune.tuner_guarantee(
            spec, self._space.encoded, self.run._encode(), self.delta, orders)
        self.name: str = name
        self.params: str = params
        self.guarantee = Guarantee(eps, d, theorem)
        self._handle = None
        self._pending: Dict[int, Trial] = {}
        self.trials: List[Trial] = []
        self._done = False

    # -- the guarantee -------------------------------------------------------------------
    @property
    def epsilon(self) -> float:
        """ε of the guarantee (at the tuner's δ), known before any run."""
        return self.guarantee.epsilon

    @property
    def statement(self) -> str:
        """The guarantee in words."""
        g = self.guarantee
        return (f"({'no finite ε' if math.isinf(g.epsilon) else f'ε = {g.epsilon:.6g}'}, δ = {g.delta:g})-differential "
                f"privacy for the release of the chosen hyperparameters and their score, by tuner `{self.name}` "
                f"({self.params}): {g.theorem}; each run being {self.run._words()}.")

    # -- ask/tell ------------------------------------------------------------------------
    def _session(self):
        if self._handle is None:
            self._handle = _dptune.session_new(self._spec, self._space.encoded, self.run._encode(), self._seed)
        return self._handle

    def ask(self) -> Optional[Trial]:
        """The next run, or None when the tuner has decided (then call :meth:`release`).
        Raises ValueError if the next run depends on pending runs' scores (tell them first)."""
        if self._done:
            return None
        nxt = _dptune.session_ask(self._session())
        if nxt[0] == "done":
            self._done = True
            return None
        if nxt[0] == "wait":
            raise ValueError(f"tell the pending trials {sorted(self._pending)} first: what comes next depends "
                             "on their scores")
        _, index, hyper, _what = nxt
        t = Trial(self, index, hyper)
        self._pending[index] = t
        self.trials.append(t)
        return t

    def tell(self, trial: Union[Trial, int], score: float) -> None:
        """Tells the released score of ``trial`` (a Trial or its number); any pending order."""
        number = trial.number if isinstance(trial, Trial) else _integer("trial", trial, 0)
        if number not in self._pending:
            raise ValueError(f"invalid trial = {number}: not a pending trial (pending: {sorted(self._pending)})")
        s = _number("score", score, "a finite number (tell a failed run its worst score, never drop it)",
                    math.isfinite)
        _dptune.session_tell(self._session(), number, s)
        t = self._pending.pop(number)
        t.score = s

    def __iter__(self) -> Iterator[Trial]:
        """Trials one at a time; each must be reported before the next is asked for."""
        while True:
            t = self.ask()
            if t is None:
                return
            yield t
            if t.number in self._pending:
                raise ValueError(f"trial {t.number} was not reported: call trial.report(score) in the loop")

    @property
    def planned_runs(self) -> Optional[int]:
        """The number of runs once drawn (repeat-and-select's K is secret: for your logs only
        if you treat it as private), or None where it depends on the scores."""
        return _dptune.session_info(self._session())[0]

    def state_json(self) -> str:
        """The session's state as JSON (what the Rust library saves to resume a search)."""
        return _dptune.session_info(self._session())[2]

    def release(self) -> Release:
        """The release, once :meth:`ask` has returned None: the chosen candidate and its score."""
        chosen, score, runs, _fallback = _dptune.session_finish(self._session())
        return Release(
            params=None if chosen is None else self._space.params(chosen),
            hyper=chosen, score=score, runs=runs, guarantee=self.guarantee, statement=self.statement)

    def __repr__(self):
        return f"Tuner({self.name}, {self.params}, epsilon={self.epsilon:.6g}, delta={self.delta:g})"


def naive(*, run: DpEvent, space, candidates: Optional[int] = None, accountant: str = "best",
          delta: float = 1e-6, seed: Optional[int] = None) -> Tuner:
    """Naive composition: every candidate of a finite ``space`` once (a grid), or ``candidates``
    uniform draws from any space; releases the best. Privacy: the composition of the runs (RDP,
    PLD where the run has one: ``accountant`` 'best' | 'rdp' | 'pld'; Kairouz–Oh–Viswanath for
    pure-DP runs)."""
    if candidates is not None:
        candidates = _integer("candidates", candidates, 1)
    return Tuner(("naive", candidates, str(accountant)), run, space, delta, seed)


def random_search(*, run: DpEvent, space, candidates: int, accountant: str = "best",
                  delta: float = 1e-6, seed: Optional[int] = None) -> Tuner:
    """Random search: ``candidates`` uniform draws from ``space``, each trained once (naive
    composition)."""
    return naive(run=run, space=space, candidates=_integer("candidates", candidates, 1),
                 accountant=accountant, delta=delta, seed=seed)


def grid_search(*, run: DpEvent, grid: Sequence[Any], accountant: str = "best",
                delta: float = 1e-6, seed: Optional[int] = None) -> Tuner:
    """Grid search: every candidate of ``grid`` (a list, e.g. from :func:`grid`) once, in order."""
    if isinstance(grid, Mapping) or not isinstance(grid, (list, tuple)):
        raise ValueError(f"invalid grid = {grid!r}: must be a list of candidates (see dptune.tuners.grid)")
    return naive(run=run, space=list(grid), accountant=accountant, delta=delta, seed=seed)


def liu_talwar(*, run: DpEvent, space, mean: float, delta: float = 1e-6,
               seed: Optional[int] = None) -> Tuner:
    """Liu–Talwar: K ~ geometric with E[K] = ``mean`` runs of uniformly drawn candidates, release
    the best (3ε-DP for ε-DP runs; RDP via Papernot–Steinke's bound for the geometric law)."""
    return Tuner(("liu-talwar", _positive("mean", mean)), run, space, delta, seed)


def liu_talwar_threshold(*, run: DpEvent, space, threshold: float, halt_probability: float,
                         delta: float = 1e-6, seed: Optional[int] = None) -> Tuner:
    """Liu–Talwar's threshold variant: before each run halt with ``halt_probability``; release
    the first candidate whose score reaches ``threshold``."""
    return Tuner(("liu-talwar-threshold", _number("threshold", threshold, "a finite number", math.isfinite),
                  _number("halt_probability", halt_probability, "in (0, 1]", lambda x: 0 < x <= 1)),
                 run, space, delta, seed)


def papernot_steinke(*, run: DpEvent, space, mean: float, dist: str = "logarithmic",
                     eta: Optional[float] = None, truncate: Optional[int] = None,
                     delta: float = 1e-6, seed: Optional[int] = None) -> Tuner:
    """Papernot–Steinke repeat-and-select: K random runs with E[K] = ``mean``, K drawn from
    ``dist`` = 'logarithmic' | 'geometric' | 'poisson' | 'tnb' (then ``eta`` > −1), truncated at
    ``truncate`` if given; releases the best. Guarantee: their Theorems 2 and 6 (RDP)."""
    if dist == "tnb":
        if eta is None:
            raise ValueError("invalid eta = None: dist='tnb' needs eta > -1")
        d = f"tnb:{_number('eta', eta, 'a finite number > -1', lambda x: -1 < x < math.inf)!r}"
    elif dist in ("logarithmic", "geometric", "poisson"):
        if eta is not None:
            raise ValueError(f"invalid eta = {eta!r}: only dist='tnb' takes eta")
        d = dist
    else:
        raise ValueError(f"invalid dist = {dist!r}: must be 'logarithmic', 'geometric', 'poisson' or 'tnb'")
    if truncate is not None:
        truncate = _integer("truncate", truncate, 1)
    return Tuner(("papernot-steinke", d, _positive("mean", mean), truncate), run, space, delta, seed)
