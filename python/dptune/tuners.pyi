from .accounting import DpEvent
from _typeshed import Incomplete
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

__all__ = ['Guarantee', 'Release', 'grid', 'Trial', 'Tuner', 'naive', 'random_search', 'grid_search', 'liu_talwar', 'liu_talwar_threshold', 'papernot_steinke']

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
    params: dict[str, Any] | None
    hyper: list[float] | None
    score: float | None
    runs: int
    guarantee: Guarantee
    statement: str

class _Axis:
    name: Incomplete
    scale: Incomplete
    def __init__(self, name: str, spec) -> None: ...
    def value(self, u: float): ...

def grid(**axes: Sequence[Any]) -> list[dict[str, Any]]:
    """Every combination of the given values, as a list of candidates for ``grid_search``:
    ``grid(lr=[0.01, 0.1], clip=[0.5, 1.0])``."""

class _Space:
    """A search space: the unit box (an int d), named axes (a dict), or a list of candidates."""
    axes: list[_Axis] | None
    candidates: list[Any] | None
    encoded: Any
    finite: Incomplete
    def __init__(self, space) -> None: ...
    def params(self, hyper: list[float]): ...

class Trial:
    """One run the tuner asks for: ``params`` (named values), ``hyper`` (the point in the unit
    box, or the candidate's index), ``number``. Tell its released score with :meth:`report`."""
    number: Incomplete
    hyper: Incomplete
    params: Incomplete
    score: float | None
    def __init__(self, tuner: Tuner, number: int, hyper: list[float]) -> None: ...
    def report(self, score: float) -> None:
        """Tells the tuner this run's released (private) score; higher is better."""

class Tuner:
    """A private tuner with its guarantee and an ask/tell session. Made by :func:`naive`,
    :func:`random_search`, :func:`grid_search`, :func:`liu_talwar`, :func:`liu_talwar_threshold`
    or :func:`papernot_steinke`."""
    run: Incomplete
    delta: Incomplete
    name: str
    params: str
    guarantee: Incomplete
    trials: list[Trial]
    def __init__(self, spec: tuple, run: DpEvent, space, delta: float, seed: int | None, orders: None | str | Sequence[float] = None) -> None: ...
    @property
    def epsilon(self) -> float:
        """ε of the guarantee (at the tuner's δ), known before any run."""
    @property
    def statement(self) -> str:
        """The guarantee in words."""
    def ask(self) -> Trial | None:
        """The next run, or None when the tuner has decided (then call :meth:`release`).
        Raises ValueError if the next run depends on pending runs' scores (tell them first)."""
    def tell(self, trial: Trial | int, score: float) -> None:
        """Tells the released score of ``trial`` (a Trial or its number); any pending order."""
    def __iter__(self) -> Iterator[Trial]:
        """Trials one at a time; each must be reported before the next is asked for."""
    @property
    def planned_runs(self) -> int | None:
        """The number of runs once drawn (repeat-and-select's K is secret: for your logs only
        if you treat it as private), or None where it depends on the scores."""
    def state_json(self) -> str:
        """The session's state as JSON (what the Rust library saves to resume a search)."""
    def release(self) -> Release:
        """The release, once :meth:`ask` has returned None: the chosen candidate and its score."""

def naive(*, run: DpEvent, space, candidates: int | None = None, accountant: str = 'best', delta: float = 1e-06, seed: int | None = None) -> Tuner:
    """Naive composition: every candidate of a finite ``space`` once (a grid), or ``candidates``
    uniform draws from any space; releases the best. Privacy: the composition of the runs (RDP,
    PLD where the run has one: ``accountant`` 'best' | 'rdp' | 'pld'; Kairouz–Oh–Viswanath for
    pure-DP runs)."""
def random_search(*, run: DpEvent, space, candidates: int, accountant: str = 'best', delta: float = 1e-06, seed: int | None = None) -> Tuner:
    """Random search: ``candidates`` uniform draws from ``space``, each trained once (naive
    composition)."""
def grid_search(*, run: DpEvent, grid: Sequence[Any], accountant: str = 'best', delta: float = 1e-06, seed: int | None = None) -> Tuner:
    """Grid search: every candidate of ``grid`` (a list, e.g. from :func:`grid`) once, in order."""
def liu_talwar(*, run: DpEvent, space, mean: float, delta: float = 1e-06, seed: int | None = None) -> Tuner:
    """Liu–Talwar: K ~ geometric with E[K] = ``mean`` runs of uniformly drawn candidates, release
    the best (3ε-DP for ε-DP runs; RDP via Papernot–Steinke's bound for the geometric law)."""
def liu_talwar_threshold(*, run: DpEvent, space, threshold: float, halt_probability: float, delta: float = 1e-06, seed: int | None = None) -> Tuner:
    """Liu–Talwar's threshold variant: before each run halt with ``halt_probability``; release
    the first candidate whose score reaches ``threshold``."""
def papernot_steinke(*, run: DpEvent, space, mean: float, dist: str = 'logarithmic', eta: float | None = None, truncate: int | None = None, delta: float = 1e-06, seed: int | None = None) -> Tuner:
    """Papernot–Steinke repeat-and-select: K random runs with E[K] = ``mean``, K drawn from
    ``dist`` = 'logarithmic' | 'geometric' | 'poisson' | 'tnb' (then ``eta`` > −1), truncated at
    ``truncate`` if given; releases the best. Guarantee: their Theorems 2 and 6 (RDP)."""
