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
for tests).

What may be published is what the tuner's theorem covers: the chosen candidate, its released
score and that run's own outputs. Liu–Talwar's and Papernot–Steinke's theorems bound the
privacy of the best of K runs *with K hidden*: K is drawn independently of the data, but given
K = k the release is a best of k, whose loss grows with k, so K must stay secret (and so must
which run was released, which tells about K); the threshold variant's count depends on the
scores. So :class:`Release` carries the number of runs only where the tuner fixes it in
advance (naive, random and grid search, propose-test, DP-GIBO); ``Tuner.planned_runs`` has it
for your logs, private (the same rule as ``dptune tune``: docs/tune.md).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import json
import math
import secrets
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Union

from . import _dptune
from .accounting import DpEvent, _event, _integer, _number, _positive

__all__ = [
    "Guarantee", "Trial", "Release", "Tuner", "naive", "random_search", "grid_search",
    "liu_talwar", "liu_talwar_threshold", "papernot_steinke", "propose_test", "dp_gibo", "gp_ucb",
    "GpPrior", "grid", "FrontSearch", "FrontTrial", "dpareto", "front_random_sampling", "front_grid_search",
]


@dataclass(frozen=True)
class Guarantee:
    """A data-independent (ε, δ) guarantee of a tuner and the result it rests on."""

    epsilon: float
    delta: float
    theorem: str


#: The tuners whose number of runs is random or data-dependent: never in a :class:`Release`.
_SECRET_COUNT = frozenset({"liu-talwar", "liu-talwar-threshold", "papernot-steinke"})


@dataclass(frozen=True)
class Release:
    """What a tuning run released: the chosen candidate (None if the tuner released its
    data-independent default, e.g. K = 0), its released score, the number of runs where the
    tuner fixes it in advance (None for Liu–Talwar, Papernot–Steinke and the threshold
    variant, whose count must stay secret), and the guarantee with its statement in words."""

    params: Optional[Dict[str, Any]]
    hyper: Optional[List[float]]
    score: Optional[float]
    runs: Optional[int]
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
    """One evaluation the tuner asks for: ``params`` (named values), ``hyper`` (the point in the
    unit box, or the candidate's index), ``number``, and ``kind``, what to report:

    - ``"train"``: one private training run at ``params``; report its privately released score;
    - ``"final"``: propose-test's final run, the full private training at the selected
      candidate; report its privately released score (the score that tuner releases);
    - ``"shard"``: propose-test's run of candidate ``candidate`` trained on shard ``shard`` of
      ``shards`` disjoint parts of the training data; report its utility in [0, 1] (its score
      mapped to [0, 1], 1 the best end; a failed run 0);
    - ``"losses"``: DP-GIBO's evaluation at ``params``: report every validation user's loss
      there, one finite number per user in the users' fixed order;
    - ``"gain"``: private GP-UCB's evaluation of the validation gain at ``params``.

    Report with :meth:`report`; ``value`` is what was reported (``score`` too when a number)."""

    def __init__(self, tuner: "Tuner", number: int, hyper: List[float], kind: str = "train",
                 candidate: Optional[int] = None, shard: Optional[int] = None, shards: Optional[int] = None):
        self._tuner = tuner
        self.number = number
        self.hyper = hyper
        self.kind = kind
        self.candidate = candidate
        self.shard = shard
        self.shards = shards
        self.params = tuner._space.params(hyper)
        self.score: Optional[float] = None
        self.value: Any = None

    def report(self, value) -> None:
        """Tells the tuner what this evaluation gave (see the class for each ``kind``); higher
        scores are better."""
        self._tuner.tell(self, value)

    def __repr__(self):
        where = f", candidate={self.candidate}, shard={self.shard}" if self.kind == "shard" else ""
        return f"Trial(number={self.number}, kind={self.kind!r}, params={self.params!r}{where})"


class _Evaluation:
    """One evaluation the Rust session asked for, split into the trials the user runs (one per
    shard run, one per DP-GIBO point): told to the session once every trial is reported."""

    def __init__(self, index: int, kind: str, hyper: List[float], payload):
        self.index = index
        self.kind = kind
        self.hyper = hyper
        self.payload = payload
        if kind == "shards":
            candidates, shards = payload
            self.subs = [(list(candidates[j]), {"candidate": j, "shard": i, "shards": shards})
                         for j in range(len(candidates)) for i in range(shards)]
        elif kind == "losses":
            self.subs = [(list(p), {}) for p in payload]
        else:
            self.subs = [(hyper, {})]
        self.asked = 0
        self.values: Dict[int, Any] = {}

    def told(self):
        """What the session is told, once every trial is reported."""
        if self.kind == "shards":
            candidates, shards = self.payload
            return [[self.values[j * shards + i] for i in range(shards)] for j in range(len(candidates))], "utilities"
        if self.kind == "losses":
            b = len(self.subs)
            n = len(self.values[0])
            return [[self.values[p][u] for p in range(b)] for u in range(n)], "matrix"
        return self.values[0], "score"


_STATE_KIND = "dptune.tuners state"
_STATE_VERSION = 2  # 2: with the session's history and a checksum


def _json_of(x):
    """The JSON form of a constructor argument (events and priors by class and fields)."""
    from . import accounting
    if isinstance(x, accounting.DpEvent):
        return {"__event__": type(x).__name__,
                "fields": {f.name: _json_of(getattr(x, f.name)) for f in dataclasses.fields(x)}}
    if isinstance(x, GpPrior):
        return {"__gp_prior__": dataclasses.asdict(x)}
    if isinstance(x, Mapping):
        if not all(isinstance(k, str) for k in x):
            raise TypeError("keys must be strings")
        return {k: _json_of(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_of(v) for v in x]
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    raise TypeError(f"{type(x).__name__} is not JSON")


def _checksum(d: dict) -> str:
    """SHA-256 of a saved state's fields (all but the checksum), in one canonical JSON text: a
    float reads back as the float it was, so the text, and the sum, are the same on reading."""
    body = {k: v for k, v in d.items() if k != "checksum"}
    return "sha256:" + hashlib.sha256(
        json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _sealed(d: dict) -> str:
    """A state's JSON text, with its checksum."""
    return json.dumps({**d, "checksum": _checksum(d)})


def _read_state(state: str, kind: str, saver: str, version: int = 1) -> dict:
    """The dict of a saved state of ``kind``; a clear error for any other text. From version 2
    on a state carries its checksum: one that does not match is refused, and so is an older
    state, which has none (and no history to check it by)."""
    try:
        d = json.loads(state)
    except (TypeError, ValueError):
        raise ValueError(f"invalid state: must be the JSON text {saver} returned") from None
    if not isinstance(d, dict) or d.get("kind") != kind:
        raise ValueError(f"invalid state: must be the JSON text {saver} returned (version {version})")
    saved = d.get("version")
    if version > 1 and isinstance(saved, int) and not isinstance(saved, bool) and 1 <= saved < version:
        raise ValueError(f"invalid state: saved by an older dptune (version {saved}, without the history of "
                         "its asks and tells or a checksum), so it cannot be checked and is not resumed; a new "
                         "tuning adds its privacy cost to that of the runs already made")
    if saved != version:
        raise ValueError(f"invalid state: must be the JSON text {saver} returned (version {version})")
    if version > 1 and d.get("checksum") != _checksum(d):
        raise ValueError("invalid state: damaged or edited: checksum mismatch")
    return d


def _from_json(x):
    from . import accounting
    if isinstance(x, dict):
        if "__event__" in x:
            cls = getattr(accounting, x["__event__"])
            if not (isinstance(cls, type) and issubclass(cls, accounting.DpEvent)):
                raise ValueError(f"invalid state: unknown event {x['__event__']!r}")
            return cls(**{k: _from_json(v) for k, v in x["fields"].items()})
        if "__gp_prior__" in x:
            return GpPrior(**x["__gp_prior__"])
        return {k: _from_json(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_from_json(v) for v in x]
    return x


def _resumable(make):
    """Records the constructor and its arguments on the tuner it makes, so that
    :meth:`Tuner.resume` can make it again in another process."""
    @functools.wraps(make)
    def wrapper(**kwargs):
        tuner = make(**kwargs)
        try:
            args = {k: _json_of(v) for k, v in kwargs.items() if k != "seed"}
            json.dumps(args)
            tuner._rebuild = {"constructor": make.__name__, "kwargs": args}
        except (TypeError, ValueError):
            tuner._rebuild = None  # not JSON: Tuner.load on a tuner made with the same arguments
        return tuner
    return wrapper


class Tuner:
    """A private tuner with its guarantee and an ask/tell session. Made by :func:`naive`,
    :func:`random_search`, :func:`grid_search`, :func:`liu_talwar`, :func:`liu_talwar_threshold`,
    :func:`papernot_steinke`, :func:`propose_test`, :func:`dp_gibo`, :func:`gp_ucb` or
    :func:`registered` (any tuner of the library's registry)."""

    def __init__(self, spec: tuple, run: Optional[DpEvent], space, delta: float, seed: Optional[int],
                 orders: Union[None, str, Sequence[float]] = None, declarations: Optional[dict] = None,
                 encoded_space=None, train_kind: str = "train"):
        self._spec = spec
        self.run = None if run is None else _event("run", run)
        self._space = _Space(space)
        if encoded_space is not None:
            self._space.encoded = encoded_space
        self.delta = _number("delta", delta, "in (0, 1)", lambda x: 0 < x < 1)
        if seed is None:
            seed = secrets.randbits(64)
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
            raise ValueError(f"invalid seed = {seed!r}: must be an integer in [0, 2**64)")
        self._seed = seed
        if orders is not None and orders != "continuous":
            orders = [float(o) for o in orders]
        self._declarations = declarations
        self._run_encoded = None if self.run is None else self.run._encode()
        eps, d, theorem, name, params = _dptune.tuner_guarantee(
            spec, self._space.encoded, self._run_encoded, self.delta, orders, declarations)
        self.name: str = name
        self.params: str = params
        self.guarantee = Guarantee(eps, d, theorem)
        self._train_kind = train_kind
        self._released = "the chosen hyperparameters and their score"
        self._conditions = "" if self.run is None else f"; each run being {self.run._words()}"
        self._fingerprint = hashlib.sha256(repr(
            (_STATE_KIND, spec, self._space.encoded, self._run_encoded, self.delta, orders, declarations)
        ).encode()).hexdigest()
        self._rebuild = None
        self._handle = None
        self._pending: Dict[int, Trial] = {}
        self._where: Dict[int, tuple] = {}
        self._evaluations: Dict[int, _Evaluation] = {}
        self._again: List[Trial] = []
        self._next_number = 0
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
                f"privacy for the release of {self._released}, by tuner `{self.name}` "
                f"({self.params}): {g.theorem}{self._conditions}.")

    # -- ask/tell ------------------------------------------------------------------------
    def _session(self):
        if self._handle is None:
            self._handle = _dptune.session_new(self._spec, self._space.encoded, self._run_encoded, self._seed,
                                               self._declarations)
        return self._handle

    def _sub_trial(self, ev: _Evaluation, sub: int, number: int) -> Trial:
        hyper, extra = ev.subs[sub]
        kind = {"train": self._train_kind, "shards": "shard", "losses": "losses", "gain": "gain"}[ev.kind]
        return Trial(self, number, hyper, kind, **extra)

    def _trial(self, ev: _Evaluation) -> Trial:
        sub = ev.asked
        ev.asked += 1
        t = self._sub_trial(ev, sub, self._next_number)
        self._next_number += 1
        self._pending[t.number] = t
        self._where[t.number] = (ev.index, sub)
        self.trials.append(t)
        return t

    def ask(self) -> Optional[Trial]:
        """The next trial, or None when the tuner has decided (then call :meth:`release`).
        Raises ValueError if the next trial depends on pending trials' values (tell them
        first). After :meth:`load`, the trials that were pending when the state was saved are
        asked again first (same numbers, same params)."""
        if self._again:
            return self._again.pop(0)
        if self._done:
            return None
        for ev in self._evaluations.values():
            if ev.asked < len(ev.subs):
                return self._trial(ev)
        nxt = _dptune.session_ask(self._session())
        if nxt[0] == "done":
            self._done = True
            return None
        if nxt[0] == "wait":
            raise ValueError(f"tell the pending trials {sorted(self._pending)} first: what comes next depends "
                             "on their values")
        _, index, hyper, _what, kind, payload = nxt
        ev = _Evaluation(index, kind, hyper, payload)
        self._evaluations[index] = ev
        return self._trial(ev)

    def _check(self, t: Trial, value):
        if t.kind == "shard":
            return _number("utility", value, "a number in [0, 1] (the shard run's score mapped to [0, 1], 1 the "
                           "best end; a failed run 0)", lambda x: 0 <= x <= 1)
        if t.kind == "losses":
            n = self._users
            if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__iter__"):
                raise ValueError(f"invalid losses = {value!r}: must be a sequence of {n} finite numbers (one per "
                                 "validation user, in their fixed order)")
            vals = [_number("losses[]", x, "a finite number (a failed run: every user's declared failed loss)",
                            math.isfinite) for x in value]
            if len(vals) != n:
                raise ValueError(f"invalid losses: {len(vals)} values, must be {n} (one per validation user, "
                                 "in their fixed order)")
            return vals
        what = "gain" if t.kind == "gain" else "score"
        return _number(what, value, "a finite number (tell a failed run its worst score, never drop it)",
                       math.isfinite)

    def tell(self, trial: Union[Trial, int], value) -> None:
        """Tells what ``trial`` (a Trial or its number) gave; pending trials in any order."""
        number = trial.number if isinstance(trial, Trial) else _integer("trial", trial, 0)
        if number not in self._pending:
            raise ValueError(f"invalid trial = {number}: not a pending trial (pending: {sorted(self._pending)})")
        t = self._pending[number]
        v = self._check(t, value)
        index, sub = self._where[number]
        ev = self._evaluations[index]
        ev.values[sub] = v
        if len(ev.values) == len(ev.subs):
            told, kind = ev.told()
            try:
                _dptune.session_tell(self._session(), index, told, kind)
            except BaseException:
                del ev.values[sub]
                raise
            del self._evaluations[index]
        self._pending.pop(number)
        if t in self._again:
            self._again.remove(t)
        t.value = v
        if not isinstance(v, list):
            t.score = v

    def __iter__(self) -> Iterator[Trial]:
        """Trials one at a time; each must be reported before the next is asked for."""
        while True:
            t = self.ask()
            if t is None:
                return
            yield t
            if t.number in self._pending:
                raise ValueError(f"trial {t.number} was not reported: call trial.report(value) in the loop")

    @property
    def planned_runs(self) -> Optional[int]:
        """The number of runs once drawn, or None where it depends on the scores. Private for
        Liu–Talwar and Papernot–Steinke (their K must stay secret): for your logs only."""
        return _dptune.session_info(self._session())[0]

    def state_json(self) -> str:
        """The Rust session's state as JSON (what the Rust library saves; :meth:`save` is the
        whole tuner's state, its random stream included)."""
        return _dptune.session_info(self._session())[2]

    # -- saving and resuming ---------------------------------------------------------------
    def save(self) -> str:
        """The tuner's state as JSON text: the session, its random stream (seed, stream, word
        position) and every trial asked so far with what was reported. :meth:`load` or
        :meth:`resume` continue from it, in this process or another, with exactly the draws an
        uninterrupted run makes. It also holds the history of every ask and tell and a checksum:
        a resume re-derives the session from the seed and the history and refuses a state they
        do not give. **The state is private**: it holds the seed (whoever knows it can
        recompute the tuner's draws) and every reported value."""
        session, history, seed, position = _dptune.session_save(self._session())
        trials = [{"number": t.number, "kind": t.kind, "hyper": t.hyper, "candidate": t.candidate,
                   "shard": t.shard, "shards": t.shards, "index": self._where[t.number][0],
                   "sub": self._where[t.number][1], "told": t.number not in self._pending, "value": t.value}
                  for t in self.trials]
        evaluations = [{"index": ev.index, "kind": ev.kind, "hyper": ev.hyper, "payload": ev.payload,
                        "asked": ev.asked, "values": [[k, v] for k, v in sorted(ev.values.items())]}
                       for ev in self._evaluations.values()]
        return _sealed({
            "kind": _STATE_KIND, "version": _STATE_VERSION, "fingerprint": self._fingerprint,
            "tuner": self._rebuild, "session": session, "history": history,
            "stream": {"seed": seed, "path": [], "position": position},
            "next_number": self._next_number, "done": self._done,
            "evaluations": evaluations, "trials": trials,
        })

    @staticmethod
    def _read(state: str) -> dict:
        return _read_state(state, _STATE_KIND, "Tuner.save()", _STATE_VERSION)

    def load(self, state: str) -> "Tuner":
        """Continues from ``state`` (:meth:`save`'s text) on this tuner, which must be fresh
        (nothing asked yet) and made with the same arguments (its seed is replaced by the
        saved one). Trials pending at the save are asked again first. Returns the tuner.
        Raises ValueError, naming the first difference, unless the session started afresh and
        taken through the saved history is the saved session (its K, best run, counters and
        stream position)."""
        d = self._read(state)
        if d["fingerprint"] != self._fingerprint:
            raise ValueError("invalid state: saved by a tuner made with other arguments (tuner, space, run, "
                             "delta or declarations differ)")
        if self.trials or self._handle is not None:
            raise ValueError("invalid state: load into a fresh tuner (this one has started its session)")
        stream = d["stream"]
        handle = _dptune.session_load(self._spec, self._space.encoded, self._run_encoded, stream["seed"],
                                      self._declarations, d["session"], d["history"], stream["position"])
        # The runs still to be made are the checked session's, each split into its trials as
        # when first asked: a saved evaluation or trial that differs is refused.
        evaluations = {p[1]: _Evaluation(p[1], p[4], p[2], p[5]) for p in _dptune.session_pending(handle)}
        saved = {e["index"]: e for e in d["evaluations"]}
        if sorted(saved) != sorted(evaluations):
            raise ValueError(f"invalid state: evaluations {sorted(saved)} saved as pending, where the session's "
                             f"history gives {sorted(evaluations)}")
        for index, ev in evaluations.items():
            e = saved[index]
            if json.dumps([e["kind"], e["hyper"], e["payload"]]) != json.dumps([ev.kind, ev.hyper, ev.payload]):
                raise ValueError(f"invalid state: evaluation {index} is saved as asking for other runs than the "
                                 "session's history gives")
            ev.asked = e["asked"]
            ev.values = {k: v for k, v in e["values"]}
        if [r["number"] for r in d["trials"]] != list(range(d["next_number"])):
            raise ValueError("invalid state: the saved trials are not numbered 0, 1, … in order")
        trials = []
        for r in d["trials"]:
            fields = [r["hyper"], r["kind"], r["candidate"], r["shard"], r["shards"]]
            if not r["told"]:
                ev = evaluations.get(r["index"])
                if ev is None or not 0 <= r["sub"] < ev.asked or r["sub"] in ev.values:
                    raise ValueError(f"invalid state: trial {r['number']} is saved as pending, but its evaluation "
                                     "is not")
                t = self._sub_trial(ev, r["sub"], r["number"])
                if [t.hyper, t.kind, t.candidate, t.shard, t.shards] != fields:
                    raise ValueError(f"invalid state: trial {r['number']} is saved with other params than the "
                                     "session's history gives")
            else:
                t = Trial(self, r["number"], *fields)
                t.value = r["value"]
                if not isinstance(t.value, list):
                    t.score = t.value
            trials.append((t, r))
        self._handle = handle
        self._seed = stream["seed"]
        self._next_number = d["next_number"]
        self._done = d["done"]
        self._evaluations = evaluations
        for t, r in trials:
            self.trials.append(t)
            self._where[t.number] = (r["index"], r["sub"])
            if not r["told"]:
                self._pending[t.number] = t
                self._again.append(t)
        return self

    @classmethod
    def resume(cls, state: str) -> "Tuner":
        """The tuner saved in ``state`` (:meth:`save`'s text), made again from the arguments it
        was made with (stored in the state; tuples come back as lists) and continued: in
        another process, the same draws as an uninterrupted run. A tuner whose arguments are
        not JSON (a space of arbitrary objects) cannot be made again this way: make it with
        the same arguments and call :meth:`load`."""
        d = cls._read(state)
        rebuild = d.get("tuner")
        if not rebuild:
            raise ValueError("invalid state: its tuner's arguments were not JSON; make the tuner with the same "
                             "arguments and call tuner.load(state)")
        make = _CONSTRUCTORS.get(rebuild["constructor"])
        if make is None:
            raise ValueError(f"invalid state: unknown constructor {rebuild['constructor']!r}")
        kwargs = {k: _from_json(v) for k, v in rebuild["kwargs"].items()}
        return make(seed=d["stream"]["seed"], **kwargs).load(state)

    def release(self) -> Release:
        """The release, once :meth:`ask` has returned None: the chosen candidate and its score."""
        chosen, score, runs, _fallback = _dptune.session_finish(self._session())
        return Release(
            params=None if chosen is None else self._space.params(chosen),
            hyper=chosen, score=score, runs=None if self.name in _SECRET_COUNT else runs,
            guarantee=self.guarantee, statement=self.statement)

    def __repr__(self):
        return f"Tuner({self.name}, {self.params}, epsilon={self.epsilon:.6g}, delta={self.delta:g})"


@_resumable
def naive(*, run: DpEvent, space, candidates: Optional[int] = None, accountant: str = "best",
          delta: float = 1e-6, seed: Optional[int] = None) -> Tuner:
    """Naive composition: every candidate of a finite ``space`` once (a grid), or ``candidates``
    uniform draws from any space; releases the best. Privacy: the composition of the runs (RDP,
    PLD where the run has one: ``accountant`` 'best' | 'rdp' | 'pld'; Kairouz–Oh–Viswanath for
    pure-DP runs)."""
    if candidates is not None:
        candidates = _integer("candidates", candidates, 1)
    return Tuner(("naive", candidates, str(accountant)), run, space, delta, seed)


@_resumable
def random_search(*, run: DpEvent, space, candidates: int, accountant: str = "best",
                  delta: float = 1e-6, seed: Optional[int] = None) -> Tuner:
    """Random search: ``candidates`` uniform draws from ``space``, each trained once (naive
    composition)."""
    return naive(run=run, space=space, candidates=_integer("candidates", candidates, 1),
                 accountant=accountant, delta=delta, seed=seed)


@_resumable
def grid_search(*, run: DpEvent, grid: Sequence[Any], accountant: str = "best",
                delta: float = 1e-6, seed: Optional[int] = None) -> Tuner:
    """Grid search: every candidate of ``grid`` (a list, e.g. from :func:`grid`) once, in order."""
    if isinstance(grid, Mapping) or not isinstance(grid, (list, tuple)):
        raise ValueError(f"invalid grid = {grid!r}: must be a list of candidates (see dptune.tuners.grid)")
    return naive(run=run, space=list(grid), accountant=accountant, delta=delta, seed=seed)


@_resumable
def liu_talwar(*, run: DpEvent, space, mean: float, delta: float = 1e-6,
               seed: Optional[int] = None) -> Tuner:
    """Liu–Talwar: K ~ geometric with E[K] = ``mean`` runs of uniformly drawn candidates, release
    the best (3ε-DP for ε-DP runs; RDP via Papernot–Steinke's bound for the geometric law)."""
    return Tuner(("liu-talwar", _positive("mean", mean)), run, space, delta, seed)


@_resumable
def liu_talwar_threshold(*, run: DpEvent, space, threshold: float, halt_probability: float,
                         delta: float = 1e-6, seed: Optional[int] = None) -> Tuner:
    """Liu–Talwar's threshold variant: before each run halt with ``halt_probability``; release
    the first candidate whose score reaches ``threshold``."""
    return Tuner(("liu-talwar-threshold", _number("threshold", threshold, "a finite number", math.isfinite),
                  _number("halt_probability", halt_probability, "in (0, 1]", lambda x: 0 < x <= 1)),
                 run, space, delta, seed)


@_resumable
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


# ----------------------------------------------------------------------------------------------
# Tuners whose evaluations are not one training run's score.

def _choice(name: str, value, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise ValueError(f"invalid {name} = {value!r}: must be one of {', '.join(map(repr, allowed))}")
    return value


def _box_grid(dim: int, n: int) -> List[List[float]]:
    """The public grid of n points per axis over [0, 1]^dim, last axis fastest (the Rust
    library's order)."""
    axis = [i / (n - 1) for i in range(n)]
    return [list(p) for p in itertools.product(axis, repeat=dim)]


def _continuous_box(space, tuner: str) -> _Space:
    sp = _Space(space)
    if sp.candidates is not None:
        raise ValueError(f"invalid space: {tuner} searches a box, not a list of candidates: give a dict of axes "
                         "((low, high) or (low, high, 'log')) or a dimension d")
    return sp


@_resumable
def propose_test(*, run: DpEvent, space, shards: int, private_validation_records: Optional[int],
                 eps0: Optional[float] = None, tune_epsilon: Optional[float] = None, grid: Optional[int] = None,
                 granularity: float = 0.01, u0: float = 0.0, u_max: float = 1.0, composition: str = "smallest",
                 delta_prime: Optional[float] = None, scan: str = "shuffle", fallback: Union[str, int] = "uniform",
                 delta: float = 1e-6, seed: Optional[int] = None) -> Tuner:
    """Propose-test with doubling (spec 003, after Ding–Wu): subsample-and-aggregate over a
    public, finite list of candidates, then one full private run at the selected one.

    First every candidate is trained on each of ``shards`` = k disjoint parts of the training
    data (trials of kind ``"shard"``: candidate ``trial.candidate`` on shard ``trial.shard``, e.g.
    the records with index mod k = shard); each reports its *utility in [0, 1]* (its score
    mapped to [0, 1], 1 the best end, a failed run 0), which need not be private: the tuner sees
    the shard means only through noisy tests (AboveThreshold passes at ``eps0`` each, or the
    largest ε0 whose certified cost meets ``tune_epsilon``) walking a utility scale of
    ``granularity`` g from ``u0`` to ``u_max``. Then one trial of kind ``"final"``: the full
    private training of the selected candidate (or the data-independent ``fallback``, "uniform"
    or a candidate index, when no pass succeeds), which reports its privately released score,
    the score the tuner releases. A search of C candidates on k shards runs C·k + 1 trials.

    ``space``: a list of candidates, or axes (a dict, or a dimension d) with ``grid`` = N points
    per axis (the public grid). ``run``: the privacy of the final run, its score's release
    included. ``private_validation_records``: m when the shard utilities are computed on m
    private validation records (then k ≤ m: the shard mean has sensitivity 1/k only then), or
    None when the validation data is public; it must be given.

    Guarantee (from the Rust library): the certified cost of the tests, T_max = 2M − 1 passes
    (M = ⌈(u_max − u0)/g⌉) composed by ``composition`` ('smallest' | 'basic' | 'advanced' |
    'kov' | 'pure-refined') with δ′ = ``delta_prime`` (default δ/2), plus the final run's
    (ε, δ − δ′), by basic composition."""
    k = _integer("shards", shards, 1)
    if private_validation_records is not None:
        private_validation_records = _integer("private_validation_records", private_validation_records, 1)
    if (eps0 is None) == (tune_epsilon is None):
        raise ValueError(f"invalid eps0 = {eps0!r}, tune_epsilon = {tune_epsilon!r}: give exactly one (ε0 of "
                         "each pass, or the tests' total ε)")
    sp = _Space(space)
    if sp.candidates is not None:
        if grid is not None:
            raise ValueError(f"invalid grid = {grid!r}: only for a space of axes (a list of candidates is "
                             "searched as it is)")
    elif grid is None:
        raise ValueError("invalid grid = None: a space of axes needs grid = N >= 2 points per axis (propose-test "
                         "searches a public, finite list of candidates)")
    else:
        grid = _integer("grid", grid, 2)
    if isinstance(fallback, str):
        _choice("fallback", fallback, ["uniform"])
    else:
        fallback = _integer("fallback", fallback, 0)
    params = {
        "shards": k,
        "eps0": None if eps0 is None else _positive("eps0", eps0),
        "tune_epsilon": None if tune_epsilon is None else _positive("tune_epsilon", tune_epsilon),
        "grid": grid,
        "granularity": _number("granularity", granularity, "a number in (0, 1)", lambda x: 0 < x < 1),
        "u0": _number("u0", u0, "a number in [0, 1)", lambda x: 0 <= x < 1),
        "u_max": _number("u_max", u_max, f"a number in ({u0}, 1]", lambda x: u0 < x <= 1),
        "composition": _choice("composition", composition, ["smallest", "basic", "advanced", "kov", "pure-refined"]),
        "delta_prime": None if delta_prime is None else _number("delta_prime", delta_prime, "in (0, 1)",
                                                                lambda x: 0 < x < 1),
        "scan": _choice("scan", scan, ["shuffle", "as-given"]),
        "fallback": fallback,
    }
    t = Tuner(("registry", "propose-test", params), run, space, delta, seed,
              declarations={"partitioned": private_validation_records}, train_kind="final")
    t._released = "the selected candidate and its final run's score"
    m = ("" if private_validation_records is None else
         f"; or validation sets that differ in one of the {private_validation_records} private validation "
         "records (each shard utility a mean over them)")
    t._conditions = (f"; the final run being {t.run._words()}; each shard run moving only its own shard's "
                     f"utilities (disjoint shards){m}")
    return t


@_resumable
def dp_gibo(*, space, users: int, mu: float, steps: int, clip: float, run: Optional[DpEvent] = None,
            evaluation_sd: float = 0.0, batch: Optional[int] = None, eps_bias: Optional[float] = None,
            b_max: Optional[int] = None, kernel: str = "rbf", lengthscale: Union[None, float, Sequence[float]] = None,
            signal_variance: Optional[float] = None, noise_sd: Optional[float] = None,
            step_rule: Optional[str] = None, eta: Optional[float] = None, theta0: Optional[Sequence[float]] = None,
            history: Union[None, str, int] = None, local_box: Optional[float] = None,
            select_steps: Optional[int] = None, select_lr: Optional[float] = None,
            delta: float = 1e-6, seed: Optional[int] = None) -> Tuner:
    """DP-GIBO (spec 004): private gradient-informed Bayesian optimisation, protecting the
    **validation users**. Each step asks for b points around the iterate θ_t (trials of kind
    ``"losses"``, which may run side by side): train at ``trial.params`` and report every
    validation user's loss there, ``users`` = n finite numbers in the users' fixed order (a
    failed run: a fixed loss for every user, never dropped). A user's loss must depend only on
    that user's record and the trained model. DP-GIBO fits a surrogate gradient per user, clips
    each to norm ``clip`` B, averages, adds Gaussian noise and steps; after ``steps`` T steps it
    releases θ_T (where no trial trained: train your final model there).

    ``space``: continuous axes (a dict of (low, high) or (low, high, 'log')) or a dimension d;
    ``lengthscale`` of the RBF surrogate is in units of the unit box (0.2 = a fifth of each
    range), ``theta0`` a point of the unit box. Batches: ``batch`` b points (default d + 1), or
    adaptive to ``eps_bias`` with at most ``b_max``. ``evaluation_sd``: the noise of a loss
    evaluation (the model's noise σ). ``run``: None when the training data is public; else the
    privacy of one training run (each of the T·b_max runs and the final model's run are then
    counted in RDP beside μ). The other keywords are the Rust tuner's (``step_rule`` 'adagrad'
    | 'sgd' | 'gibo-normalized' with ``eta``, ``history`` 'all' | 'none' | C, ``local_box``,
    ``select_steps``, ``select_lr``, ``noise_sd``, ``signal_variance``, ``kernel`` 'rbf' |
    'polynomial').

    Guarantee (from the Rust library): μ-GDP for validation sets that replace one user (spec 004
    Theorem 3.1), converted to (ε, δ) exactly; with ``run``, composed with the runs in RDP."""
    sp = _continuous_box(space, "DP-GIBO")
    for a in sp.axes or []:
        if a.scale not in ("linear", "log"):
            raise ValueError(f"invalid space[{a.name!r}]: DP-GIBO follows a gradient: every axis must be continuous "
                             "((low, high) or (low, high, 'log'))")
    n = _integer("users", users, 1)
    f = lambda name, v, allowed="a finite number > 0": None if v is None else _number(  # noqa: E731
        name, v, allowed, lambda x: 0 < x < math.inf)
    if isinstance(lengthscale, (list, tuple)):
        lengthscale = [f("lengthscale", x) for x in lengthscale]
    else:
        lengthscale = f("lengthscale", lengthscale)
    if isinstance(history, str):
        _choice("history", history, ["all", "none"])
    elif history is not None:
        history = _integer("history", history, 0)
    params = {
        "mu": _positive("mu", mu),
        "steps": _integer("steps", steps, 1),
        "clip": _positive("clip", clip),
        "batch": None if batch is None else _integer("batch", batch, 1),
        "eps_bias": None if eps_bias is None else _number("eps_bias", eps_bias, "a finite number >= 0",
                                                          lambda x: 0 <= x < math.inf),
        "b_max": None if b_max is None else _integer("b_max", b_max, 1),
        "kernel": _choice("kernel", kernel, ["rbf", "polynomial"]),
        "lengthscale": lengthscale,
        "signal_variance": f("signal_variance", signal_variance),
        "noise_sd": None if noise_sd is None else _number("noise_sd", noise_sd, "a finite number >= 0",
                                                          lambda x: 0 <= x < math.inf),
        "step_rule": None if step_rule is None else _choice("step_rule", step_rule, ["adagrad", "sgd", "gibo-normalized"]),
        "eta": f("eta", eta),
        "theta0": None if theta0 is None else [_number("theta0[]", x, "in [0, 1] (a point of the unit box)",
                                                       lambda x: 0 <= x <= 1) for x in theta0],
        "history": history,
        "local_box": f("local_box", local_box),
        "select_steps": None if select_steps is None else _integer("select_steps", select_steps, 1),
        "select_lr": f("select_lr", select_lr),
    }
    sd = _number("evaluation_sd", evaluation_sd, "a finite number >= 0", lambda x: 0 <= x < math.inf)
    run_event = None if run is None else _event("run", run)
    dim = sp.encoded
    t = Tuner(("registry", "dp-gibo", params), None, space, delta, seed, encoded_space=dim,
              declarations={"per_user": (n, sd, None if run_event is None else run_event._encode())})
    t._users = n
    t.run = run_event
    t._released = "θ_T, the last iterate"
    training = ("the training data being public" if run_event is None else
                f"or data sets that differ in one training record, each training run being {run_event._words()}")
    t._conditions = (f"; for validation sets that differ by replacing one of the {n} validation users (each "
                     f"user's surrogate gradient clipped to norm {params['clip']:g}), {training}")
    return t


@dataclass(frozen=True)
class GpPrior:
    """The GP prior of the validation gain that private GP-UCB's guarantee rests on (spec 002
    Assumption 1), declared by you before any data is seen: f_V ~ GP(0, scale²·k) with k the
    ``kernel`` ('rbf' | 'matern32' | 'matern52') of ``lengthscale`` (in units of the unit box),
    observations f_V(λ) + N(0, ``noise_sd``²), and ``rho`` ∈ [0, 1] the prior correlation of
    the gains of two neighbouring validation sets. Nothing checks that your gain follows it."""

    kernel: str
    lengthscale: float
    scale: float
    noise_sd: float
    rho: float

    def __post_init__(self):
        _choice("prior.kernel", self.kernel, ["rbf", "matern32", "matern52"])
        object.__setattr__(self, "lengthscale", _positive("prior.lengthscale", self.lengthscale))
        object.__setattr__(self, "scale", _positive("prior.scale", self.scale))
        object.__setattr__(self, "noise_sd", _number("prior.noise_sd", self.noise_sd, "a finite number >= 0",
                                                     lambda x: 0 <= x < math.inf))
        object.__setattr__(self, "rho", _number("prior.rho", self.rho, "a number in [0, 1]", lambda x: 0 <= x <= 1))


@_resumable
def gp_ucb(*, space, grid: int, prior: GpPrior, evaluations: int, epsilon: float, delta: float,
           release: str = "hyperparameter", gamma: Optional[float] = None, profile: str = "paper",
           noise_free_a: Optional[float] = None, noise_free_tau: Optional[float] = None,
           noise_free_gain: Optional[str] = None, seed: Optional[int] = None) -> Tuner:
    """Private GP-UCB (Kusner et al. 2015, spec 002) over the public grid of ``grid`` points per
    axis of ``space`` (axes or a dimension): ``evaluations`` T trials of kind ``"gain"``, each
    reporting a noisy evaluation of the validation gain at ``trial.params`` (not private by
    itself), then the release of ``release`` = 'hyperparameter' (exponential mechanism on the
    final posterior mean, Corollary 1), 'gain' (the best observed gain plus Laplace noise,
    Corollary 2; with exact evaluations, noise_sd = 0, Corollary 3 and its assumed constants
    ``noise_free_a``, ``noise_free_tau``) or 'both'; each release (``epsilon``, ``delta``)-DP.

    **The guarantee holds only under the GP prior you declare** (``prior``, a :class:`GpPrior`,
    required: there is no default): its sensitivities are high-probability bounds over the
    prior draw of the validation gain, not worst-case over data sets, and nothing can check that
    your model's gain follows that prior. This is why ``dptune tune`` refuses this tuner; here it
    is yours to declare, and the statement says so.

    Guarantee (from the Rust library): (kε, kδ) for the k releases, by basic composition."""
    if not isinstance(prior, GpPrior):
        raise ValueError(f"invalid prior = {prior!r}: must be a GpPrior(kernel=, lengthscale=, scale=, noise_sd=, rho=) "
                         "you declare (the guarantee holds only under it)")
    sp = _continuous_box(space, "GP-UCB")
    n = _integer("grid", grid, 2)
    dim = sp.encoded
    if n ** dim > 100_000:
        raise ValueError(f"invalid grid = {n}: at most 100000 points in all ({n}^{dim} here)")
    if noise_free_gain is not None:
        _choice("noise_free_gain", noise_free_gain, ["last", "best"])
    params = {
        "evaluations": _integer("evaluations", evaluations, 1),
        "epsilon": _positive("epsilon", epsilon),
        "delta": _number("delta", delta, "in (0, 1)", lambda x: 0 < x < 1),
        "release": _choice("release", release, ["hyperparameter", "gain", "both"]),
        "gamma": None if gamma is None else _number("gamma", gamma, "a finite number >= 0", lambda x: 0 <= x < math.inf),
        "profile": _choice("profile", profile, ["paper", "strict"]),
        "noise_free_a": None if noise_free_a is None else _positive("noise_free_a", noise_free_a),
        "noise_free_tau": None if noise_free_tau is None else _positive("noise_free_tau", noise_free_tau),
        "noise_free_gain": noise_free_gain,
    }
    t = Tuner(("registry", "gp-ucb", params), None, space, delta, seed, encoded_space=_box_grid(dim, n),
              declarations={"gain_prior": (prior.kernel, prior.lengthscale, prior.scale, prior.noise_sd, prior.rho)})
    t.prior = prior
    t._released = {"hyperparameter": "the chosen hyperparameters", "gain": "the best observed gain",
                   "both": "the chosen hyperparameters and the best observed gain"}[release]
    t._conditions = (f"; ONLY IF the validation gain follows the GP prior you declared ({prior.kernel} kernel, "
                     f"lengthscale {prior.lengthscale:g} in units of the box, scale {prior.scale:g}, observation "
                     f"noise sd {prior.noise_sd:g}, neighbour correlation rho = {prior.rho:g}), which nothing "
                     "checks: a high-probability bound over the prior, not a worst case over data sets")
    return t


@_resumable
def registered(*, name: str, space, delta: float, params: Optional[dict] = None, run: Optional[DpEvent] = None,
               seed: Optional[int] = None, orders: Union[None, str, Sequence[float]] = None) -> Tuner:
    """Any tuner of the library's registry by its name (``"one-shot"``, ``"naive"``, …), with the
    parameters an experiment file's ``[[tuners]]`` entry would give it (a dict of numbers, strings
    and booleans; the library checks them): a tuner added to the Rust library (one file and one
    registry line) is driven from Python with no edit here. Its runs are told a score
    (``trial.report``); ``run`` is what one run costs, as for :func:`naive`."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"invalid name = {name!r}: a registered tuner's name")
    if params is not None and not isinstance(params, dict):
        raise ValueError(f"invalid params = {params!r}: a dict of the tuner's parameters")
    return Tuner(("registry", name, dict(params or {})), run, space, delta, seed, orders=orders)


_CONSTRUCTORS = {f.__name__: f for f in (naive, random_search, grid_search, liu_talwar, liu_talwar_threshold,
                                         papernot_steinke, propose_test, dp_gibo, gp_ucb, registered)}


# -- front searches (DPareto and its baselines): not private tuners ------------------------------

_FRONT_STATE_KIND = "dptune.FrontSearch"


class FrontTrial:
    """One point a front search asks to be evaluated: ``params`` (named values; integers on
    integer axes), ``values`` (the same, in axis order) and ``number``. Report its ε and its
    error(s): ``trial.report(epsilon, error)`` or ``trial.report(epsilon, errors=[...])``
    (several replicates; their mean is the objective)."""

    def __init__(self, search: "FrontSearch", number: int, values: List[float]):
        self._search = search
        self.number = number
        self.values = values
        self.params = {a.name: (int(v) if "int" in a.scale else v) for a, v in zip(search._axes, values)}
        self.epsilon: Optional[float] = None
        self.errors: Optional[List[float]] = None

    def report(self, epsilon: float, error: Optional[float] = None, *,
               errors: Optional[Sequence[float]] = None) -> None:
        self._search.tell(self, epsilon, error, errors=errors)

    def __repr__(self):
        return f"FrontTrial({self.number}, {self.params})"


class FrontSearch:
    """A search for the privacy–utility Pareto front: DPareto (spec 001; Avent et al. 2020:
    random points, then the proposals of GPs on log ε and logit error through HVPoI or EHVI),
    or its baselines, uniform random sampling and a grid. Each evaluation trains one model at
    the asked hyperparameters and reports its ε (the training's privacy cost, computed from the
    hyperparameters, e.g. by :func:`dptune.accounting.get_epsilon`) and its error in [0, 1].

    **Not a private tuner**: the errors it is told, the points it proposes from them and the
    front it returns are computed from the evaluation data without any privacy cost (the ε of
    each point is that point's training alone). It maps the trade-off for a study or for
    choosing a budget on public or already-released data; to *release* a choice made on
    private data, use a private tuner (:func:`papernot_steinke`, :func:`liu_talwar`, …).

    Use it as the tuners are: ``for trial in search: trial.report(eps, err)``, or
    ``search.ask()`` / ``search.tell(trial, eps, err)``; then :meth:`front` and
    :attr:`evaluations`. :meth:`save` / :meth:`resume` continue in another process with the
    same draws."""

    def __init__(self, plan: tuple, space, seed: Optional[int], rebuild: dict):
        if not isinstance(space, Mapping) or not space:
            raise ValueError(f"invalid space = {space!r}: a front search needs a dict of numeric axes, e.g. "
                             "{'lr': (1e-4, 1.0, 'log'), 'sigma': (0.5, 8.0, 'log')}")
        self._axes = [_Axis(str(k), v) for k, v in space.items()]
        for a in self._axes:
            if a.choices is not None:
                raise ValueError(f"invalid space[{a.name!r}]: a front search needs numeric axes (low, high[, scale]), "
                                 "not a list of choices (its GPs need coordinates)")
        self._dims = [(a.name, a.lo, a.hi, "int" in a.scale, "log" in a.scale) for a in self._axes]
        self._seed = secrets.randbits(63) if seed is None else _integer("seed", seed, 0)
        self._handle = _dptune.front_new(plan, self._dims, self._seed)
        self._pending: Optional[FrontTrial] = None
        self._rebuild = rebuild

    @property
    def evaluations(self) -> List[Dict[str, Any]]:
        """Every evaluation so far, in order: ``params``, ``epsilon``, ``error`` (the mean),
        ``errors``, ``proposed`` (by the acquisition, not drawn at random) and ``acquisition``
        (its value there, None for random points)."""
        rows, _front = _dptune.front_evaluations(self._handle)
        return [self._row(r) for r in rows]

    def _row(self, r) -> Dict[str, Any]:
        values, eps, err, errors, proposed, acq = r
        params = {a.name: (int(v) if "int" in a.scale else v) for a, v in zip(self._axes, values)}
        return {"params": params, "epsilon": eps, "error": err, "errors": list(errors),
                "proposed": proposed, "acquisition": acq}

    def front(self) -> List[Dict[str, Any]]:
        """The evaluations no other evaluation beats in both ε and error (the Pareto front),
        by increasing ε."""
        rows, front = _dptune.front_evaluations(self._handle)
        return sorted((self._row(rows[i]) for i in front), key=lambda r: (r["epsilon"], r["error"]))

    def ask(self) -> Optional[FrontTrial]:
        """The next point to evaluate, or None when the search is over. One point at a time:
        tell it before asking again."""
        if self._pending is not None:
            raise ValueError(f"trial {self._pending.number} is not reported yet: tell it before asking again")
        values = _dptune.front_ask(self._handle)
        if values is None:
            return None
        self._pending = FrontTrial(self, len(self.evaluations), list(values))
        return self._pending

    def tell(self, trial: FrontTrial, epsilon: float, error: Optional[float] = None, *,
             errors: Optional[Sequence[float]] = None) -> None:
        """What training at ``trial`` gave: its ε (> 0, finite) and its error in [0, 1] (or
        several replicates' errors)."""
        if trial is not self._pending:
            raise ValueError(f"{trial!r} is not the point this search asked for")
        eps = _number("epsilon", epsilon, "a finite number > 0", lambda x: 0 < x < math.inf)
        if (error is None) == (errors is None):
            raise ValueError("give the error (error=...) or the replicates' errors (errors=[...]), not both")
        values = [error] if errors is None else list(errors)
        if not values:
            raise ValueError("invalid errors = []: give at least one replicate's error")
        values = [_number("error", e, "in [0, 1]", lambda x: 0 <= x <= 1) for e in values]
        _dptune.front_tell(self._handle, eps, values)
        trial.epsilon, trial.errors = eps, values
        self._pending = None

    def __iter__(self) -> Iterator[FrontTrial]:
        while (t := self.ask()) is not None:
            yield t
            if self._pending is t:
                raise ValueError(f"{t!r} was not reported: call trial.report(epsilon, error) in the loop")

    def save(self) -> str:
        """The search's state as JSON text (its evaluations, the GPs' last fits, its random
        stream): :meth:`resume` continues from it with exactly the draws of an uninterrupted
        run. A point asked and not yet told is asked again after resuming."""
        if self._pending is not None:
            raise ValueError(f"trial {self._pending.number} is not reported yet: tell it before saving")
        search, seed, position = _dptune.front_save(self._handle)
        return json.dumps({"kind": _FRONT_STATE_KIND, "version": 1, "search": search,
                           "stream": {"seed": seed, "position": position}, "rebuild": self._rebuild})

    @classmethod
    def resume(cls, state: str) -> "FrontSearch":
        """The search saved in ``state`` (:meth:`save`'s text), continued."""
        d = _read_state(state, _FRONT_STATE_KIND, "FrontSearch.save()")
        r = d["rebuild"]
        made = _FRONT_CONSTRUCTORS[r["constructor"]](seed=d["stream"]["seed"], **r["kwargs"])
        made._handle = _dptune.front_load(d["search"], d["stream"]["seed"], d["stream"]["position"])
        return made

    def __repr__(self):
        return f"FrontSearch({self._rebuild['constructor']}, {len(self.evaluations)} evaluations)"


def _space_json(space):
    return {str(k): list(v) if isinstance(v, tuple) else v for k, v in space.items()} \
        if isinstance(space, Mapping) else space


def dpareto(*, space, initial: int = 16, iterations: int = 256, candidates: int = 5000,
            acquisition: str = "hvpoi", seed: Optional[int] = None) -> FrontSearch:
    """DPareto (spec 001 §4's defaults: 16 random points, 256 proposals, 5000 candidates per
    proposal, HVPoI): a :class:`FrontSearch`, **not a private tuner** (see there)."""
    plan = ("dpareto", _integer("initial", initial, 1), _integer("iterations", iterations, 0),
            _integer("candidates", candidates, 1), _choice("acquisition", acquisition, ("hvpoi", "ehvi")))
    return FrontSearch(plan, space, seed, {"constructor": "dpareto", "kwargs": {
        "space": _space_json(space), "initial": initial, "iterations": iterations, "candidates": candidates,
        "acquisition": acquisition}})


def front_random_sampling(*, space, count: int, seed: Optional[int] = None) -> FrontSearch:
    """DPareto's baseline: ``count`` points drawn uniformly (log-uniformly on log axes); a
    :class:`FrontSearch`, not a private tuner."""
    return FrontSearch(("random", _integer("count", count, 1)), space, seed,
                       {"constructor": "front_random_sampling", "kwargs": {"space": _space_json(space), "count": count}})


def front_grid_search(*, space, points: int) -> FrontSearch:
    """DPareto's other baseline: ``points`` values per axis (log-spaced on log axes), every
    combination in order; a :class:`FrontSearch`, not a private tuner."""
    return FrontSearch(("grid", _integer("points", points, 1)), space, 0,
                       {"constructor": "front_grid_search", "kwargs": {"space": _space_json(space), "points": points}})


_FRONT_CONSTRUCTORS = {
    "dpareto": lambda seed, **kw: dpareto(seed=seed, **kw),
    "front_random_sampling": lambda seed, **kw: front_random_sampling(seed=seed, **kw),
    "front_grid_search": lambda seed, **kw: front_grid_search(**kw),
}
