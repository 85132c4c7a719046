"""Privacy accounting in dp_accounting's vocabulary, computed by dptune's Rust library.

An event describes what a mechanism does, apart from any accountant
(``GaussianDpEvent(noise_multiplier=1.1)``, ``PoissonSampledDpEvent(q, event)``, ...); an
accountant composes events (``compose(event, count=1)``) and turns the composition into an
(ε, δ) guarantee (``get_epsilon(delta)``, ``get_delta(epsilon)``)::

    from dptune.accounting import GaussianDpEvent, PoissonSampledDpEvent, RdpAccountant
    step = PoissonSampledDpEvent(256 / 60000, GaussianDpEvent(1.1))
    eps = RdpAccountant().compose(step, 14063).get_epsilon(1e-5)     # 2.5967 (dp_accounting too)

``RdpAccountant()`` uses dp_accounting's default orders and conversion, so its numbers agree
with dp_accounting's ``RdpAccountant`` to about 1e-6 relative; ``RdpAccountant(orders=
"continuous")`` minimises over every order (dptune's default: never looser).
``PLDAccountant`` is the privacy-loss-distribution accountant (connect-the-dots, pessimistic).

Every invalid input raises ``ValueError`` naming the parameter and its allowed range; an event
an accountant cannot compose raises :class:`UnsupportedEventError` (a ``ValueError``).
"""

from __future__ import annotations

import enum
import math
import numbers
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple, Union

from . import _dptune

__all__ = [
    "DpEvent", "NoOpDpEvent", "NonPrivateDpEvent", "GaussianDpEvent", "LaplaceDpEvent",
    "RandomizedResponseDpEvent", "ZCDpEvent", "EpsilonDeltaDpEvent", "PoissonSampledDpEvent",
    "SampledWithoutReplacementDpEvent", "SelfComposedDpEvent", "ComposedDpEvent",
    "RepeatAndSelectDpEvent", "NeighboringRelation", "UnsupportedEventError",
    "PrivacyAccountant", "RdpAccountant", "PLDAccountant", "DEFAULT_RDP_ORDERS",
    "calibrate_dp_mechanism", "get_noise_multiplier", "get_epsilon", "from_dp_accounting",
]

#: dp_accounting 0.6.0's ``DEFAULT_RDP_ORDERS`` (what ``RdpAccountant()`` minimises over).
DEFAULT_RDP_ORDERS: List[float] = (
    [1 + x / 10.0 for x in range(1, 100)] + [float(x) for x in range(11, 64)] + [128.0, 256.0, 512.0, 1024.0]
)


class UnsupportedEventError(ValueError):
    """An event this accountant cannot compose (or not under its neighbouring relation)."""


class NeighboringRelation(enum.Enum):
    """Which data sets are neighbours: one record added or removed, or one replaced."""

    ADD_OR_REMOVE_ONE = "add_or_remove_one"
    REPLACE_ONE = "replace_one"

    def words(self) -> str:
        """The relation in words, for privacy statements."""
        return {
            NeighboringRelation.ADD_OR_REMOVE_ONE: "data sets that differ by adding or removing one record",
            NeighboringRelation.REPLACE_ONE: "data sets of the same size that differ in one record",
        }[self]


# ----------------------------------------------------------------------------------------------
# Checks: ValueError naming the parameter and what is allowed.

def _number(name: str, value, allowed: str, ok: Callable[[float], bool]) -> float:
    if type(value) is float:  # the common case, without the ABC checks below
        if value == value and ok(value):
            return value
        raise ValueError(f"invalid {name} = {value!r}: must be {allowed}")
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"invalid {name} = {value!r}: must be {allowed}")
    v = float(value)
    if math.isnan(v) or not ok(v):
        raise ValueError(f"invalid {name} = {value!r}: must be {allowed}")
    return v


def _integer(name: str, value, minimum: int) -> int:
    if type(value) is int and minimum <= value < 2**63:
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise ValueError(f"invalid {name} = {value!r}: must be an integer >= {minimum}")
    if int(value) < minimum or int(value) >= 2**63:
        raise ValueError(f"invalid {name} = {value!r}: must be an integer >= {minimum} (and < 2**63)")
    return int(value)


def _positive(name, v):
    return _number(name, v, "a finite number > 0", lambda x: 0 < x < math.inf)


def _event(name: str, e) -> "DpEvent":
    if not isinstance(e, DpEvent):
        try:
            return from_dp_accounting(e)
        except (TypeError, ValueError):
            raise ValueError(f"invalid {name} = {e!r}: must be a DpEvent") from None
    return e


# ----------------------------------------------------------------------------------------------
# Events.

class DpEvent:
    """A mechanism's description, apart from any accountant (dp_accounting's ``DpEvent``)."""

    def _encode(self) -> tuple:  # the tuple the extension module reads
        raise NotImplementedError

    def _relation(self) -> Optional[NeighboringRelation]:
        """The only neighbouring relation this event is stated for, if it has one."""
        return None

    def _words(self) -> str:
        return repr(self)


@dataclass(frozen=True)
class NoOpDpEvent(DpEvent):
    """Nothing private happens (costs nothing)."""

    def _encode(self):
        return ("noop",)

    def _words(self):
        return "nothing"


@dataclass(frozen=True)
class NonPrivateDpEvent(DpEvent):
    """A release with no privacy guarantee: any composition with it has ε = ∞."""

    def _encode(self):
        raise UnsupportedEventError("a NonPrivateDpEvent has no finite privacy loss")

    def _words(self):
        return "a non-private release"


@dataclass(frozen=True)
class GaussianDpEvent(DpEvent):
    """The Gaussian mechanism: a query of sensitivity 1 plus N(0, noise_multiplier²)."""

    noise_multiplier: float

    def __post_init__(self):
        object.__setattr__(self, "noise_multiplier", _positive("noise_multiplier", self.noise_multiplier))

    def _encode(self):
        return ("gaussian", self.noise_multiplier)

    def _words(self):
        return f"a Gaussian mechanism with noise multiplier {self.noise_multiplier:g}"


@dataclass(frozen=True)
class LaplaceDpEvent(DpEvent):
    """The Laplace mechanism: a query of ℓ1-sensitivity 1 plus Laplace(noise_multiplier)."""

    noise_multiplier: float

    def __post_init__(self):
        object.__setattr__(self, "noise_multiplier", _positive("noise_multiplier", self.noise_multiplier))

    def _encode(self):
        return ("laplace", self.noise_multiplier)

    def _words(self):
        return f"a Laplace mechanism with scale {self.noise_multiplier:g}"


@dataclass(frozen=True)
class RandomizedResponseDpEvent(DpEvent):
    """k-ary randomized response: the true bucket with probability 1 − noise_parameter, else a
    uniform one of ``num_buckets`` (replace-one neighbours)."""

    noise_parameter: float
    num_buckets: int

    def __post_init__(self):
        object.__setattr__(self, "noise_parameter", _number("noise_parameter", self.noise_parameter, "in [0, 1]", lambda x: 0 <= x <= 1))
        object.__setattr__(self, "num_buckets", _integer("num_buckets", self.num_buckets, 1))

    def _encode(self):
        return ("rr", self.noise_parameter, self.num_buckets)

    def _relation(self):
        return NeighboringRelation.REPLACE_ONE

    def _words(self):
        return f"randomized response over {self.num_buckets} buckets with noise {self.noise_parameter:g}"


@dataclass(frozen=True)
class ZCDpEvent(DpEvent):
    """A (ξ, ρ)-zCDP mechanism: (α, ξ + ρα)-RDP at every order α > 1."""

    rho: float
    xi: float = 0.0

    def __post_init__(self):
        object.__setattr__(self, "rho", _number("rho", self.rho, "a finite number >= 0", lambda x: 0 <= x < math.inf))
        object.__setattr__(self, "xi", _number("xi", self.xi, "a finite number >= 0", lambda x: 0 <= x < math.inf))

    def _encode(self):
        return ("zcdp", self.rho, self.xi)

    def _words(self):
        return f"a {self.rho:g}-zCDP mechanism" + (f" (xi = {self.xi:g})" if self.xi else "")


@dataclass(frozen=True)
class EpsilonDeltaDpEvent(DpEvent):
    """Any (ε, δ)-DP mechanism (δ = 0: pure ε-DP)."""

    epsilon: float
    delta: float = 0.0

    def __post_init__(self):
        object.__setattr__(self, "epsilon", _number("epsilon", self.epsilon, "a finite number >= 0", lambda x: 0 <= x < math.inf))
        object.__setattr__(self, "delta", _number("delta", self.delta, "in [0, 1)", lambda x: 0 <= x < 1))

    def _encode(self):
        return ("eps_delta", self.epsilon, self.delta)

    def _words(self):
        return f"an ({self.epsilon:g}, {self.delta:g})-DP mechanism"


def _effective_sigma(name: str, event: DpEvent) -> float:
    """σ of the one Gaussian equivalent to a composition of Gaussians (dp_accounting's rule)."""
    def inv_sq(e, count):
        if isinstance(e, GaussianDpEvent):
            return count / e.noise_multiplier**2
        if isinstance(e, SelfComposedDpEvent):
            return inv_sq(e.event, count * e.count)
        if isinstance(e, ComposedDpEvent):
            return sum(inv_sq(x, count) for x in e.events)
        raise UnsupportedEventError(
            f"invalid {name} = {e!r}: the sampled event must be a GaussianDpEvent (or compositions of them)"
        )
    total = inv_sq(event, 1)
    if total <= 0:
        raise UnsupportedEventError(f"invalid {name}: the sampled event adds no Gaussian")
    return total ** -0.5


@dataclass(frozen=True)
class PoissonSampledDpEvent(DpEvent):
    """``event`` run on a Poisson sample (each record kept with ``sampling_probability``):
    add/remove-one neighbours. The event must be Gaussian (one DP-SGD step)."""

    sampling_probability: float
    event: DpEvent

    def __post_init__(self):
        object.__setattr__(self, "sampling_probability", _number("sampling_probability", self.sampling_probability, "in (0, 1]", lambda x: 0 < x <= 1))
        object.__setattr__(self, "event", _event("event", self.event))
        _effective_sigma("event", self.event)

    def _encode(self):
        return ("poisson_gaussian", self.sampling_probability, _effective_sigma("event", self.event))

    def _relation(self):
        return NeighboringRelation.ADD_OR_REMOVE_ONE

    def _words(self):
        return f"{self.event._words()} on a Poisson sample at rate {self.sampling_probability:g}"


@dataclass(frozen=True)
class SampledWithoutReplacementDpEvent(DpEvent):
    """``event`` run on ``sample_size`` records drawn without replacement from
    ``source_dataset_size``: replace-one neighbours (Wang–Balle–Kasiviswanathan)."""

    source_dataset_size: int
    sample_size: int
    event: DpEvent

    def __post_init__(self):
        n = _integer("source_dataset_size", self.source_dataset_size, 1)
        m = _integer("sample_size", self.sample_size, 1)
        if m > n:
            raise ValueError(f"invalid sample_size = {m}: must be at most source_dataset_size = {n}")
        object.__setattr__(self, "source_dataset_size", n)
        object.__setattr__(self, "sample_size", m)
        object.__setattr__(self, "event", _event("event", self.event))
        _effective_sigma("event", self.event)

    def _encode(self):
        return ("wor_gaussian", self.source_dataset_size, self.sample_size, _effective_sigma("event", self.event))

    def _relation(self):
        return NeighboringRelation.REPLACE_ONE

    def _words(self):
        return f"{self.event._words()} on {self.sample_size} of {self.source_dataset_size} records drawn without replacement"


@dataclass(frozen=True)
class SelfComposedDpEvent(DpEvent):
    """``event`` run ``count`` times."""

    event: DpEvent
    count: int

    def __post_init__(self):
        object.__setattr__(self, "event", _event("event", self.event))
        object.__setattr__(self, "count", _integer("count", self.count, 0))

    def _encode(self):
        return ("self", self.event._encode(), self.count)

    def _relation(self):
        return self.event._relation()

    def _words(self):
        return f"{self.count} × ({self.event._words()})"


@dataclass(frozen=True)
class ComposedDpEvent(DpEvent):
    """Each of ``events`` run once (any order, any adaptivity)."""

    events: Sequence[DpEvent]

    def __post_init__(self):
        if isinstance(self.events, (str, bytes)) or not hasattr(self.events, "__iter__"):
            raise ValueError(f"invalid events = {self.events!r}: must be a list of DpEvent")
        object.__setattr__(self, "events", tuple(_event("events[]", e) for e in self.events))
        _joint_relation(self.events)

    def _encode(self):
        return ("composed", [e._encode() for e in self.events])

    def _relation(self):
        return _joint_relation(self.events)

    def _words(self):
        return "; ".join(e._words() for e in self.events) or "nothing"


@dataclass(frozen=True)
class RepeatAndSelectDpEvent(DpEvent):
    """Run ``event`` a random number K of times and release the best (Papernot–Steinke).
    dp_accounting's convention: E[K] = ``mean``; ``shape`` = ∞: Poisson, 1: geometric,
    0: logarithmic, otherwise the truncated negative binomial of that shape (η > −1)."""

    event: DpEvent
    mean: float
    shape: float

    def __post_init__(self):
        object.__setattr__(self, "event", _event("event", self.event))
        object.__setattr__(self, "mean", _number("mean", self.mean, "a finite number > 0", lambda x: 0 < x < math.inf))
        object.__setattr__(self, "shape", _number("shape", self.shape, "a number > -1 (math.inf: Poisson)", lambda x: x > -1))

    def _encode(self):
        return ("repeat_select", self.event._encode(), self.mean, self.shape)

    def _relation(self):
        return self.event._relation()

    def _words(self):
        law = {math.inf: "Poisson", 1.0: "geometric", 0.0: "logarithmic"}.get(self.shape, f"TNB(shape {self.shape:g})")
        return f"the best of K ~ {law} (mean {self.mean:g}) runs of ({self.event._words()})"


def _joint_relation(events) -> Optional[NeighboringRelation]:
    rel = None
    for e in events:
        r = e._relation()
        if r is not None and rel is not None and r != rel:
            raise UnsupportedEventError(
                "invalid events: they are stated for different neighbouring relations "
                f"({rel.words()}; {r.words()}) and cannot be composed into one guarantee"
            )
        rel = rel or r
    return rel


def from_dp_accounting(event) -> DpEvent:
    """The dptune event equal to a ``dp_accounting.dp_event`` event (by class name and fields)."""
    if isinstance(event, DpEvent):
        return event
    name = type(event).__name__
    f = lambda a: getattr(event, a)  # noqa: E731
    table = {
        "NoOpDpEvent": lambda: NoOpDpEvent(),
        "NonPrivateDpEvent": lambda: NonPrivateDpEvent(),
        "GaussianDpEvent": lambda: GaussianDpEvent(f("noise_multiplier")),
        "LaplaceDpEvent": lambda: LaplaceDpEvent(f("noise_multiplier")),
        "RandomizedResponseDpEvent": lambda: RandomizedResponseDpEvent(f("noise_parameter"), f("num_buckets")),
        "ZCDpEvent": lambda: ZCDpEvent(f("rho"), f("xi")),
        "EpsilonDeltaDpEvent": lambda: EpsilonDeltaDpEvent(f("epsilon"), f("delta")),
        "PoissonSampledDpEvent": lambda: PoissonSampledDpEvent(f("sampling_probability"), from_dp_accounting(f("event"))),
        "SampledWithoutReplacementDpEvent": lambda: SampledWithoutReplacementDpEvent(
            f("source_dataset_size"), f("sample_size"), from_dp_accounting(f("event"))),
        "SelfComposedDpEvent": lambda: SelfComposedDpEvent(from_dp_accounting(f("event")), f("count")),
        "ComposedDpEvent": lambda: ComposedDpEvent([from_dp_accounting(e) for e in f("events")]),
        "RepeatAndSelectDpEvent": lambda: RepeatAndSelectDpEvent(from_dp_accounting(f("event")), f("mean"), f("shape")),
    }
    if name not in table:
        raise UnsupportedEventError(f"invalid event = {event!r}: dptune has no counterpart of {name}")
    return table[name]()


# ----------------------------------------------------------------------------------------------
# Accountants.

class PrivacyAccountant:
    """Composes events; gives (ε, δ). Subclasses: :class:`RdpAccountant`, :class:`PLDAccountant`."""

    _name = "accountant"

    def __init__(self, neighboring_relation: NeighboringRelation = NeighboringRelation.ADD_OR_REMOVE_ONE):
        if isinstance(neighboring_relation, str):
            try:
                neighboring_relation = NeighboringRelation(neighboring_relation.lower())
            except ValueError:
                raise ValueError(f"invalid neighboring_relation = {neighboring_relation!r}: must be "
                                 "'add_or_remove_one' or 'replace_one'") from None
        if not isinstance(neighboring_relation, NeighboringRelation):
            raise ValueError(f"invalid neighboring_relation = {neighboring_relation!r}: must be a NeighboringRelation")
        self.neighboring_relation = neighboring_relation
        self._ledger: List[Tuple[DpEvent, int]] = []
        self._nonprivate = False

    @property
    def ledger(self) -> List[Tuple[DpEvent, int]]:
        """What has been composed, as (event, count) in order."""
        return list(self._ledger)

    def supports(self, event: DpEvent) -> bool:
        """Whether :meth:`compose` would accept ``event``."""
        try:
            self._check(_event("event", event))
            return True
        except ValueError:
            return False

    def _check(self, event: DpEvent) -> None:
        if isinstance(event, NonPrivateDpEvent):
            return
        r = event._relation()
        if r is not None and r != self.neighboring_relation:
            raise UnsupportedEventError(
                f"{type(event).__name__} is stated for {r.words()}, but this accountant's "
                f"neighboring_relation is {self.neighboring_relation.name}: make the accountant with "
                f"neighboring_relation=NeighboringRelation.{r.name}")
        event._encode()

    def compose(self, event: DpEvent, count: int = 1) -> "PrivacyAccountant":
        """Adds ``count`` runs of ``event`` to what is accounted; returns the accountant."""
        event = _event("event", event)
        count = _integer("count", count, 0)
        self._check(event)
        if isinstance(event, NonPrivateDpEvent):
            if count > 0:
                self._nonprivate = True
            return self
        self._compose(event, count)
        self._ledger.append((event, count))
        return self

    def _compose(self, event: DpEvent, count: int) -> None:
        raise NotImplementedError

    def _bound(self, delta: float) -> Tuple[float, float, Optional[float]]:
        raise NotImplementedError

    def get_epsilon(self, target_delta: float) -> float:
        """The smallest ε this accountant proves at δ = ``target_delta`` (∞ if none)."""
        return self.get_epsilon_and_optimal_order(target_delta)[0]

    def get_epsilon_and_optimal_order(self, target_delta: float) -> Tuple[float, Optional[float]]:
        """(ε, the Rényi order that gave it; None where no order is used)."""
        delta = _number("target_delta", target_delta, "in (0, 1)", lambda x: 0 < x < 1)
        if self._nonprivate:
            return math.inf, None
        eps, _, order = self._bound(delta)
        return eps, order

    def get_delta(self, target_epsilon: float) -> float:
        """The smallest δ this accountant proves at ε = ``target_epsilon``."""
        eps = _number("target_epsilon", target_epsilon, "a finite number >= 0", lambda x: 0 <= x < math.inf)
        if self._nonprivate:
            return 1.0
        return self._delta(eps)

    def _delta(self, eps: float) -> float:
        raise NotImplementedError

    def statement(self, delta: float) -> str:
        """The guarantee in words: (ε, δ)-DP, for which neighbours, by which accountant, of what."""
        eps, order = self.get_epsilon_and_optimal_order(delta)
        what = "; ".join(f"{c} × ({e._words()})" if c != 1 else e._words() for e, c in self._ledger) or "nothing"
        eps_words = "no finite ε" if math.isinf(eps) else f"ε = {eps:.6g}"
        at = f", at Rényi order {order:g}" if order is not None else ""
        return (f"({eps_words}, δ = {delta:g})-differential privacy for {self.neighboring_relation.words()}, "
                f"by the {self._name}{at}, for: {what}.")


class RdpAccountant(PrivacyAccountant):
    """Rényi-DP accountant.

    ``orders=None``: dp_accounting's default orders and guards (numbers agree with
    ``dp_accounting.rdp.RdpAccountant`` to about 1e-6 relative); ``"continuous"``: every order
    λ > 1 (dptune's default, never looser); or a list of orders > 1. The conversion to (ε, δ)
    is Canonne–Kamath–Steinke's.
    """

    def __init__(self, orders: Union[None, str, Sequence[float]] = None,
                 neighboring_relation: NeighboringRelation = NeighboringRelation.ADD_OR_REMOVE_ONE):
        super().__init__(neighboring_relation)
        if orders is None or orders == "continuous":
            self._orders = orders
        elif isinstance(orders, str):
            raise ValueError(f"invalid orders = {orders!r}: must be None (dp_accounting's default orders), "
                             "'continuous', or a list of orders > 1")
        else:
            try:
                lst = [float(o) for o in orders]
            except (TypeError, ValueError):
                raise ValueError(f"invalid orders = {orders!r}: must be a list of numbers > 1") from None
            if not lst or any(not (1 < o < math.inf) for o in lst):
                raise ValueError(f"invalid orders = {orders!r}: must be a non-empty list of finite numbers > 1")
            self._orders = lst
        self._events: List[tuple] = []
        self._name = "RDP accountant (" + (
            "dp_accounting's default orders" if self._orders is None else
            "every order > 1" if self._orders == "continuous" else f"{len(self._orders)} orders"
        ) + ", Canonne–Kamath–Steinke conversion)"

    def _compose(self, event, count):
        encoded = event._encode()
        # Checked now (a bad event is refused here, not at get_epsilon): its curve is built and
        # evaluated at one order.
        _dptune.rdp_curve([(encoded, 1)], [2.0])
        self._events.append((encoded, count))

    def _bound(self, delta):
        return _dptune.rdp_epsilon(self._events, self._orders, delta)

    def _delta(self, eps):
        return _dptune.rdp_delta(self._events, self._orders, eps)[1]

    def rdp(self, orders: Sequence[float]) -> List[float]:
        """The composition's Rényi DP at each of ``orders`` (a list of numbers > 1)."""
        return _dptune.rdp_curve(self._events, [float(o) for o in orders])


class PLDAccountant(PrivacyAccountant):
    """Privacy-loss-distribution accountant: connect-the-dots discretisation on a loss grid of
    spacing ``value_discretization_interval`` (ε within about that of the exact composition,
    always above it), composition by FFT; the tightest of dptune's accountants."""

    def __init__(self, neighboring_relation: NeighboringRelation = NeighboringRelation.ADD_OR_REMOVE_ONE,
                 value_discretization_interval: float = 1e-4):
        super().__init__(neighboring_relation)
        h = _number("value_discretization_interval", value_discretization_interval, "a finite number > 0",
                    lambda x: 0 < x < math.inf)
        self.value_discretization_interval = h
        self._handle = _dptune.pld_new(h)
        self._empty = True
        self._name = f"PLD accountant (connect-the-dots, loss interval {h:g})"

    def _check(self, event):
        super()._check(event)

        def walk(e):
            if isinstance(e, (ZCDpEvent, RepeatAndSelectDpEvent)):
                raise UnsupportedEventError(
                    f"the PLD accountant cannot compose a {type(e).__name__} (it has no privacy-loss "
                    "distribution here): use RdpAccountant")
            for child in ([e.event] if hasattr(e, "event") else list(getattr(e, "events", []))):
                walk(child)
        walk(event)

    def _compose(self, event, count):
        encoded = event._encode()
        if count > 0 and not isinstance(event, NoOpDpEvent):
            _dptune.pld_compose(self._handle, encoded, count)
            self._empty = False

    def _bound(self, delta):
        if self._empty:
            return 0.0, delta, None
        return _dptune.pld_epsilon(self._handle, delta)

    def _delta(self, eps):
        if self._empty:
            return 0.0
        return _dptune.pld_delta(self._handle, eps)[1]


# ----------------------------------------------------------------------------------------------
# Calibration.

def calibrate_dp_mechanism(
    make_fresh_accountant: Callable[[], PrivacyAccountant],
    make_event_from_param: Callable[[float], DpEvent],
    target_epsilon: float,
    target_delta: float,
    bracket: Optional[Tuple[float, float]] = None,
    discrete: bool = False,
    tol: float = 1e-6,
) -> float:
    """The smallest parameter (a noise scale: ε must fall as it grows) whose event meets
    (``target_epsilon``, ``target_delta``) under a fresh accountant; dp_accounting's
    ``calibrate_dp_mechanism``. ``bracket`` (lo, hi) is searched, or found by doubling from 1;
    ``discrete``: integer parameters. The value returned was checked to meet the target."""
    target_epsilon = _positive("target_epsilon", target_epsilon)
    target_delta = _number("target_delta", target_delta, "in (0, 1)", lambda x: 0 < x < 1)
    tol = _positive("tol", tol)

    def eps(p):
        return make_fresh_accountant().compose(make_event_from_param(p)).get_epsilon(target_delta)

    if bracket is None:
        hi = 1.0
        while eps(hi) > target_epsilon:
            hi *= 2
            if hi > 1e12:
                raise ValueError(f"invalid target_epsilon = {target_epsilon:g}: no parameter up to 1e12 meets it")
        lo = hi / 2
        while lo > 1e-12 and eps(lo) <= target_epsilon:
            hi, lo = lo, lo / 2
    else:
        lo, hi = float(bracket[0]), float(bracket[1])
        if not (0 < lo < hi < math.inf):
            raise ValueError(f"invalid bracket = {bracket!r}: must be (lo, hi) with 0 < lo < hi")
        if eps(hi) > target_epsilon:
            raise ValueError(f"invalid bracket = {bracket!r}: its upper end does not meet epsilon <= {target_epsilon:g}")
    if discrete:
        lo, hi = math.floor(lo), math.ceil(hi)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if mid > 0 and eps(mid) <= target_epsilon:
                hi = mid
            else:
                lo = mid
        return int(hi)
    while hi - lo > tol * hi:
        mid = 0.5 * (lo + hi)
        if eps(mid) <= target_epsilon:
            hi = mid
        else:
            lo = mid
    assert eps(hi) <= target_epsilon
    return hi


def _steps(sample_rate: float, steps, epochs) -> int:
    if (steps is None) == (epochs is None):
        raise ValueError("give exactly one of steps and epochs")
    if steps is not None:
        return _integer("steps", steps, 1)
    epochs = _positive("epochs", epochs)
    n = int(epochs / sample_rate)  # Opacus's convention
    if n < 1:
        raise ValueError(f"invalid epochs = {epochs!r}: fewer than one step at sample_rate = {sample_rate:g}")
    return n


def _dpsgd_accountant(accountant: str) -> str:
    if accountant not in ("rdp", "pld"):
        raise ValueError(f"invalid accountant = {accountant!r}: must be 'rdp' or 'pld'")
    return accountant


def _sampling(sampling: str) -> str:
    if sampling not in ("poisson", "without_replacement"):
        raise ValueError(f"invalid sampling = {sampling!r}: must be 'poisson' or 'without_replacement'")
    return sampling


def get_noise_multiplier(*, target_epsilon: float, target_delta: float, sample_rate: float,
                         epochs: Optional[float] = None, steps: Optional[int] = None,
                         accountant: str = "rdp", sampling: str = "poisson",
                         orders: Union[None, str, Sequence[float]] = None) -> float:
    """Opacus's ``get_noise_multiplier``: the smallest σ (to 1e-6 relative, checked) such that
    DP-SGD at ``sample_rate`` for ``steps`` (or ``epochs``: int(epochs/sample_rate) steps) is
    (``target_epsilon``, ``target_delta``)-DP. ``accountant``: 'rdp' (``orders`` as in
    :class:`RdpAccountant`) or 'pld'."""
    q = _number("sample_rate", sample_rate, "in (0, 1]", lambda x: 0 < x <= 1)
    n = _steps(q, steps, epochs)
    eps = _positive("target_epsilon", target_epsilon)
    delta = _number("target_delta", target_delta, "in (0, 1)", lambda x: 0 < x < 1)
    return _dptune.calibrate_dpsgd(q, n, eps, delta, _sampling(sampling), _dpsgd_accountant(accountant), orders)[0]


def get_epsilon(*, noise_multiplier: float, sample_rate: float, delta: float,
                epochs: Optional[float] = None, steps: Optional[int] = None,
                accountant: str = "rdp", sampling: str = "poisson",
                orders: Union[None, str, Sequence[float]] = None) -> float:
    """ε of DP-SGD (noise multiplier σ, ``sample_rate`` q, ``steps`` or ``epochs``) at
    ``delta``, by the RDP ('rdp') or PLD ('pld') accountant: one call into Rust."""
    q = _number("sample_rate", sample_rate, "in (0, 1]", lambda x: 0 < x <= 1)
    n = _steps(q, steps, epochs)
    sigma = _positive("noise_multiplier", noise_multiplier)
    d = _number("delta", delta, "in (0, 1)", lambda x: 0 < x < 1)
    return _dptune.dpsgd_epsilon(q, sigma, n, d, _sampling(sampling), _dpsgd_accountant(accountant), orders)[0]
