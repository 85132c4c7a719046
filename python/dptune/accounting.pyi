import enum
from _typeshed import Incomplete
from dataclasses import dataclass
from typing import Callable, Sequence

__all__ = ['DEFAULT_RDP_ORDERS', 'UnsupportedEventError', 'NeighboringRelation', 'DpEvent', 'NoOpDpEvent', 'NonPrivateDpEvent', 'GaussianDpEvent', 'LaplaceDpEvent', 'RandomizedResponseDpEvent', 'ZCDpEvent', 'EpsilonDeltaDpEvent', 'PoissonSampledDpEvent', 'SampledWithoutReplacementDpEvent', 'SelfComposedDpEvent', 'ComposedDpEvent', 'RepeatAndSelectDpEvent', 'from_dp_accounting', 'PrivacyAccountant', 'RdpAccountant', 'PLDAccountant', 'calibrate_dp_mechanism', 'get_noise_multiplier', 'get_epsilon']

DEFAULT_RDP_ORDERS: list[float]

class UnsupportedEventError(ValueError):
    """An event this accountant cannot compose (or not under its neighbouring relation)."""

class NeighboringRelation(enum.Enum):
    """Which data sets are neighbours: one record added or removed, or one replaced."""
    ADD_OR_REMOVE_ONE = 'add_or_remove_one'
    REPLACE_ONE = 'replace_one'
    def words(self) -> str:
        """The relation in words, for privacy statements."""

class DpEvent:
    """A mechanism's description, apart from any accountant (dp_accounting's ``DpEvent``)."""
@dataclass(frozen=True)
class NoOpDpEvent(DpEvent):
    """Nothing private happens (costs nothing)."""
@dataclass(frozen=True)
class NonPrivateDpEvent(DpEvent):
    """A release with no privacy guarantee: any composition with it has ε = ∞."""

@dataclass(frozen=True)
class GaussianDpEvent(DpEvent):
    """The Gaussian mechanism: a query of sensitivity 1 plus N(0, noise_multiplier²)."""
    noise_multiplier: float
    def __post_init__(self) -> None: ...

@dataclass(frozen=True)
class LaplaceDpEvent(DpEvent):
    """The Laplace mechanism: a query of ℓ1-sensitivity 1 plus Laplace(noise_multiplier)."""
    noise_multiplier: float
    def __post_init__(self) -> None: ...

@dataclass(frozen=True)
class RandomizedResponseDpEvent(DpEvent):
    """k-ary randomized response: the true bucket with probability 1 − noise_parameter, else a
    uniform one of ``num_buckets`` (replace-one neighbours)."""
    noise_parameter: float
    num_buckets: int
    def __post_init__(self): ...

@dataclass(frozen=True)
class ZCDpEvent(DpEvent):
    """A (ξ, ρ)-zCDP mechanism: (α, ξ + ρα)-RDP at every order α > 1."""
    rho: float
    xi: float = ...
    def __post_init__(self): ...

@dataclass(frozen=True)
class EpsilonDeltaDpEvent(DpEvent):
    """Any (ε, δ)-DP mechanism (δ = 0: pure ε-DP)."""
    epsilon: float
    delta: float = ...
    def __post_init__(self): ...

@dataclass(frozen=True)
class PoissonSampledDpEvent(DpEvent):
    """``event`` run on a Poisson sample (each record kept with ``sampling_probability``):
    add/remove-one neighbours. The event must be Gaussian (one DP-SGD step)."""
    sampling_probability: float
    event: DpEvent
    def __post_init__(self): ...

@dataclass(frozen=True)
class SampledWithoutReplacementDpEvent(DpEvent):
    """``event`` run on ``sample_size`` records drawn without replacement from
    ``source_dataset_size``: replace-one neighbours (Wang–Balle–Kasiviswanathan)."""
    source_dataset_size: int
    sample_size: int
    event: DpEvent
    def __post_init__(self) -> None: ...

@dataclass(frozen=True)
class SelfComposedDpEvent(DpEvent):
    """``event`` run ``count`` times."""
    event: DpEvent
    count: int
    def __post_init__(self) -> None: ...

@dataclass(frozen=True)
class ComposedDpEvent(DpEvent):
    """Each of ``events`` run once (any order, any adaptivity)."""
    events: Sequence[DpEvent]
    def __post_init__(self) -> None: ...

@dataclass(frozen=True)
class RepeatAndSelectDpEvent(DpEvent):
    """Run ``event`` a random number K of times and release the best (Papernot–Steinke).
    dp_accounting's convention: E[K] = ``mean``; ``shape`` = ∞: Poisson, 1: geometric,
    0: logarithmic, otherwise the truncated negative binomial of that shape (η > −1)."""
    event: DpEvent
    mean: float
    shape: float
    def __post_init__(self): ...

def from_dp_accounting(event) -> DpEvent:
    """The dptune event equal to a ``dp_accounting.dp_event`` event (by class name and fields)."""

class PrivacyAccountant:
    """Composes events; gives (ε, δ). Subclasses: :class:`RdpAccountant`, :class:`PLDAccountant`."""
    neighboring_relation: Incomplete
    def __init__(self, neighboring_relation: NeighboringRelation = ...) -> None: ...
    @property
    def ledger(self) -> list[tuple[DpEvent, int]]:
        """What has been composed, as (event, count) in order."""
    def supports(self, event: DpEvent) -> bool:
        """Whether :meth:`compose` would accept ``event``."""
    def compose(self, event: DpEvent, count: int = 1) -> PrivacyAccountant:
        """Adds ``count`` runs of ``event`` to what is accounted; returns the accountant."""
    def get_epsilon(self, target_delta: float) -> float:
        """The smallest ε this accountant proves at δ = ``target_delta`` (∞ if none)."""
    def get_epsilon_and_optimal_order(self, target_delta: float) -> tuple[float, float | None]:
        """(ε, the Rényi order that gave it; None where no order is used)."""
    def get_delta(self, target_epsilon: float) -> float:
        """The smallest δ this accountant proves at ε = ``target_epsilon``."""
    def statement(self, delta: float) -> str:
        """The guarantee in words: (ε, δ)-DP, for which neighbours, by which accountant, of what."""

class RdpAccountant(PrivacyAccountant):
    '''Rényi-DP accountant.

    ``orders=None``: dp_accounting\'s default orders and guards (numbers agree with
    ``dp_accounting.rdp.RdpAccountant`` to about 1e-6 relative); ``"continuous"``: every order
    λ > 1 (dptune\'s default, never looser); or a list of orders > 1. The conversion to (ε, δ)
    is Canonne–Kamath–Steinke\'s.
    '''
    def __init__(self, orders: None | str | Sequence[float] = None, neighboring_relation: NeighboringRelation = ...) -> None: ...
    def rdp(self, orders: Sequence[float]) -> list[float]:
        """The composition's Rényi DP at each of ``orders`` (a list of numbers > 1)."""

class PLDAccountant(PrivacyAccountant):
    """Privacy-loss-distribution accountant: connect-the-dots discretisation on a loss grid of
    spacing ``value_discretization_interval`` (ε within about that of the exact composition,
    always above it), composition by FFT; the tightest of dptune's accountants."""
    value_discretization_interval: Incomplete
    def __init__(self, neighboring_relation: NeighboringRelation = ..., value_discretization_interval: float = 0.0001) -> None: ...

def calibrate_dp_mechanism(make_fresh_accountant: Callable[[], PrivacyAccountant], make_event_from_param: Callable[[float], DpEvent], target_epsilon: float, target_delta: float, bracket: tuple[float, float] | None = None, discrete: bool = False, tol: float = 1e-06) -> float:
    """The smallest parameter (a noise scale: ε must fall as it grows) whose event meets
    (``target_epsilon``, ``target_delta``) under a fresh accountant; dp_accounting's
    ``calibrate_dp_mechanism``. ``bracket`` (lo, hi) is searched, or found by doubling from 1;
    ``discrete``: integer parameters. The value returned was checked to meet the target."""
def get_noise_multiplier(*, target_epsilon: float, target_delta: float, sample_rate: float, epochs: float | None = None, steps: int | None = None, accountant: str = 'rdp', sampling: str = 'poisson', orders: None | str | Sequence[float] = None) -> float:
    """Opacus's ``get_noise_multiplier``: the smallest σ (to 1e-6 relative, checked) such that
    DP-SGD at ``sample_rate`` for ``steps`` (or ``epochs``: int(epochs/sample_rate) steps) is
    (``target_epsilon``, ``target_delta``)-DP. ``accountant``: 'rdp' (``orders`` as in
    :class:`RdpAccountant`) or 'pld'."""
def get_epsilon(*, noise_multiplier: float, sample_rate: float, delta: float, epochs: float | None = None, steps: int | None = None, accountant: str = 'rdp', sampling: str = 'poisson', orders: None | str | Sequence[float] = None) -> float:
    """ε of DP-SGD (noise multiplier σ, ``sample_rate`` q, ``steps`` or ``epochs``) at
    ``delta``, by the RDP ('rdp') or PLD ('pld') accountant: one call into Rust."""
