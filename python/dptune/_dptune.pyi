"""The extension module (Rust): plain functions on plain data; use dptune.accounting,
dptune.tuners and dptune.results instead. An event is a tuple (see src/lib.rs)."""

from typing import Any, List, Optional, Sequence, Tuple, Union

__version__: str
DEFAULT_PLD_INTERVAL: float

Event = Tuple[Any, ...]
Orders = Union[None, str, Sequence[float]]
Bound = Tuple[float, float, Optional[float]]

def rdp_epsilon(events: Sequence[Tuple[Event, int]], orders: Orders, delta: float) -> Bound:
    """(ε, δ, order) of the composition of (event, count) pairs, by the RDP accountant."""
def rdp_delta(events: Sequence[Tuple[Event, int]], orders: Orders, epsilon: float) -> Bound:
    """(ε, δ, order): the smallest δ at ε of the composition, by the RDP accountant."""
def rdp_curve(events: Sequence[Tuple[Event, int]], orders: Sequence[float]) -> List[float]:
    """The composition's Rényi DP at each order."""
def dpsgd_epsilon(q: float, sigma: float, steps: int, delta: float, sampling: str, accountant: str,
                  orders: Orders) -> Bound:
    """ε of DP-SGD ('poisson' or 'without_replacement' lots; 'rdp' or 'pld')."""
def calibrate_dpsgd(q: float, steps: int, target_epsilon: float, delta: float, sampling: str,
                    accountant: str, orders: Orders) -> Tuple[float, float, float, Optional[float]]:
    """(σ, ε, δ, order): the smallest noise multiplier meeting the target, checked."""
def pld_new(interval: float) -> Any:
    """A PLD accountant's handle on the loss grid of spacing `interval`."""
def pld_compose(handle: Any, event: Event, count: int) -> None:
    """Composes `count` runs of `event` (unchanged if it fails)."""
def pld_epsilon(handle: Any, delta: float) -> Bound:
    """(ε, δ, None) of what the handle has composed."""
def pld_delta(handle: Any, epsilon: float) -> Bound:
    """(ε, δ, None): δ at ε of what the handle has composed."""
def tuner_guarantee(tuner: Tuple[Any, ...], space: Any, run: Optional[Event], delta: float,
                    orders: Orders, declarations: Optional[dict] = None) -> Tuple[float, float, str, str, str]:
    """(ε, δ, theorem, tuner name, parameters) before any run. `tuner` is ('naive', …), …, or
    ('registry', 'propose-test' | 'dp-gibo' | 'gp-ucb', {param: value}); `declarations` adds
    'partitioned' (private validation records or None), 'per_user' ((n, evaluation_sd, run or
    None)), 'gain_prior' ((kernel, lengthscale, scale, noise_sd, rho))."""
def session_new(tuner: Tuple[Any, ...], space: Any, run: Optional[Event], seed: int,
                declarations: Optional[dict] = None) -> Any:
    """A tuning session's handle (its draws from the stream of `seed`)."""
def session_ask(handle: Any) -> Tuple[Any, ...]:
    """('run', index, hyper, what, kind, payload) | ('wait',) | ('done',); kind 'train' | 'gain'
    (payload None), 'shards' ((candidates, shards)), 'losses' (points)."""
def session_tell(handle: Any, index: int, value: Any, kind: str = 'score') -> None:
    """Tells pending evaluation `index` its value: kind 'score' (a number), 'utilities'
    (candidates × shards), 'matrix' (users × points); a failed tell changes nothing."""
def session_pending(handle: Any) -> List[Tuple[Any, ...]]:
    """The evaluations asked and not yet told, each as `session_ask` gives it."""
def session_save(handle: Any) -> Tuple[str, str, int, int]:
    """(the state as JSON, the history of its asks and tells as JSON, the seed, the stream's
    word position)."""
def session_load(tuner: Tuple[Any, ...], space: Any, run: Optional[Event], seed: int,
                 declarations: Optional[dict], state: str, history: str, position: int) -> Any:
    """A session's handle from a saved state, its stream at `position` of the stream of `seed`;
    ValueError (naming the first difference) unless the session `session_new` makes from the
    same arguments, taken through `history`, is `state` with its stream at `position`."""
def session_finish(handle: Any) -> Tuple[Optional[List[float]], Optional[float], int, bool]:
    """(chosen, released score, runs, fallback) once the session is done."""
def session_info(handle: Any) -> Tuple[Optional[int], List[int], str]:
    """(planned runs, pending indices, the state as JSON)."""
def read_table(path: str) -> List[Tuple[str, str, list]]:
    """A parquet table written by dptune as (column, kind, values): kind str, u64, f64, bool."""
def front_new(plan: tuple, dims: List[Tuple[str, float, float, bool, bool]], seed: int) -> Any:
    """A front search's handle; plan ('random', count) | ('grid', points) | ('dpareto', initial,
    iterations, candidates, acquisition); dims (name, low, high, integer, log)."""
def front_ask(handle: Any) -> Optional[List[float]]:
    """The next point (one value per dimension), or None when the search is over."""
def front_tell(handle: Any, epsilon: float, errors: List[float]) -> None:
    """The evaluation of the point asked for."""
def front_evaluations(handle: Any) -> Tuple[List[Tuple[List[float], float, float, List[float], bool, Optional[float]]], List[int]]:
    """(values, ε, mean error, errors, proposed, acquisition) per evaluation, and the indices on the front."""
def front_save(handle: Any) -> Tuple[str, int, int]:
    """(the search's state as JSON, seed, stream position in words)."""
def front_load(state: str, seed: int, position: int) -> Any:
    """A front search's handle from a saved state."""
