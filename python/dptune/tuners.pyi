from .accounting import DpEvent
from _typeshed import Incomplete
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

__all__ = ['Guarantee', 'Release', 'grid', 'Trial', 'Tuner', 'naive', 'random_search', 'grid_search', 'liu_talwar', 'liu_talwar_threshold', 'papernot_steinke', 'propose_test', 'dp_gibo', 'gp_ucb', 'GpPrior', 'FrontSearch', 'FrontTrial', 'dpareto', 'front_random_sampling', 'front_grid_search']

@dataclass(frozen=True)
class Guarantee:
    """A data-independent (ε, δ) guarantee of a tuner and the result it rests on."""
    epsilon: float
    delta: float
    theorem: str

@dataclass(frozen=True)
class Release:
    """What a tuning run released: the chosen candidate (None if the tuner released its
    data-independent default, e.g. K = 0), its released score, the number of runs where the
    tuner fixes it in advance (None for Liu–Talwar, Papernot–Steinke and the threshold
    variant, whose count must stay secret), and the guarantee with its statement in words."""
    params: dict[str, Any] | None
    hyper: list[float] | None
    score: float | None
    runs: int | None
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
    number: int
    hyper: list[float]
    kind: str
    candidate: int | None
    shard: int | None
    shards: int | None
    params: dict[str, Any]
    score: float | None
    value: Any
    def __init__(self, tuner: Tuner, number: int, hyper: list[float], kind: str = 'train', candidate: int | None = None, shard: int | None = None, shards: int | None = None) -> None: ...
    def report(self, value) -> None:
        """Tells the tuner what this evaluation gave (see the class for each ``kind``); higher
        scores are better."""

class Tuner:
    """A private tuner with its guarantee and an ask/tell session. Made by :func:`naive`,
    :func:`random_search`, :func:`grid_search`, :func:`liu_talwar`, :func:`liu_talwar_threshold`,
    :func:`papernot_steinke`, :func:`propose_test`, :func:`dp_gibo` or :func:`gp_ucb`."""
    run: DpEvent | None
    delta: float
    name: str
    params: str
    guarantee: Guarantee
    trials: list[Trial]
    def __init__(self, spec: tuple, run: DpEvent | None, space, delta: float, seed: int | None, orders: None | str | Sequence[float] = None, declarations: dict | None = None, encoded_space=None, train_kind: str = 'train') -> None: ...
    @property
    def epsilon(self) -> float:
        """ε of the guarantee (at the tuner's δ), known before any run."""
    @property
    def statement(self) -> str:
        """The guarantee in words."""
    def ask(self) -> Trial | None:
        """The next trial, or None when the tuner has decided (then call :meth:`release`).
        Raises ValueError if the next trial depends on pending trials' values (tell them
        first). After :meth:`load`, the trials that were pending when the state was saved are
        asked again first (same numbers, same params)."""
    def tell(self, trial: Trial | int, value) -> None:
        """Tells what ``trial`` (a Trial or its number) gave; pending trials in any order."""
    def __iter__(self) -> Iterator[Trial]:
        """Trials one at a time; each must be reported before the next is asked for."""
    @property
    def planned_runs(self) -> int | None:
        """The number of runs once drawn (repeat-and-select's K is secret: for your logs only
        if you treat it as private), or None where it depends on the scores."""
    def state_json(self) -> str:
        """The Rust session's state as JSON (what the Rust library saves; :meth:`save` is the
        whole tuner's state, its random stream included)."""
    def save(self) -> str:
        """The tuner's state as JSON text: the session, its random stream (seed, stream, word
        position) and every trial asked so far with what was reported. :meth:`load` or
        :meth:`resume` continue from it, in this process or another, with exactly the draws an
        uninterrupted run makes. It also holds the history of every ask and tell and a checksum:
        a resume re-derives the session from the seed and the history and refuses a state they
        do not give. **The state is private**: it holds the seed (whoever knows it can
        recompute the tuner's draws) and every reported value."""
    def load(self, state: str) -> Tuner:
        """Continues from ``state`` (:meth:`save`'s text) on this tuner, which must be fresh
        (nothing asked yet) and made with the same arguments (its seed is replaced by the
        saved one). Trials pending at the save are asked again first. Returns the tuner.
        Raises ValueError, naming the first difference, unless the session started afresh and
        taken through the saved history is the saved session (its K, best run, counters and
        stream position)."""
    @classmethod
    def resume(cls, state: str) -> Tuner:
        """The tuner saved in ``state`` (:meth:`save`'s text), made again from the arguments it
        was made with (stored in the state; tuples come back as lists) and continued: in
        another process, the same draws as an uninterrupted run. A tuner whose arguments are
        not JSON (a space of arbitrary objects) cannot be made again this way: make it with
        the same arguments and call :meth:`load`."""
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
def propose_test(*, run: DpEvent, space, shards: int, private_validation_records: int | None, eps0: float | None=None, tune_epsilon: float | None=None, grid: int | None=None, granularity: float=0.01, u0: float=0.0, u_max: float=1.0, composition: str='smallest', delta_prime: float | None=None, scan: str='shuffle', fallback: str | int='uniform', delta: float=1e-06, seed: int | None=None) -> Tuner:
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
def dp_gibo(*, space, users: int, mu: float, steps: int, clip: float, run: DpEvent | None=None, evaluation_sd: float=0.0, batch: int | None=None, eps_bias: float | None=None, b_max: int | None=None, kernel: str='rbf', lengthscale: float | Sequence[float] | None=None, signal_variance: float | None=None, noise_sd: float | None=None, step_rule: str | None=None, eta: float | None=None, theta0: Sequence[float] | None=None, history: str | int | None=None, local_box: float | None=None, select_steps: int | None=None, select_lr: float | None=None, delta: float=1e-06, seed: int | None=None) -> Tuner:
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
def gp_ucb(*, space, grid: int, prior: GpPrior, evaluations: int, epsilon: float, delta: float, release: str='hyperparameter', gamma: float | None=None, profile: str='paper', noise_free_a: float | None=None, noise_free_tau: float | None=None, noise_free_gain: str | None=None, seed: int | None=None) -> Tuner:
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

class FrontTrial:
    """One point a front search asks to be evaluated: ``params`` (named values; integers on
    integer axes), ``values`` (the same, in axis order) and ``number``. Report its ε and its
    error(s): ``trial.report(epsilon, error)`` or ``trial.report(epsilon, errors=[...])``
    (several replicates; their mean is the objective)."""
    number: int
    values: list[float]
    params: dict[str, Any]
    epsilon: float | None
    errors: list[float] | None
    def __init__(self, search: FrontSearch, number: int, values: list[float]) -> None: ...
    def report(self, epsilon: float, error: float | None = None, *, errors: Sequence[float] | None = None) -> None: ...

class FrontSearch:
    """A search for the privacy–utility Pareto front: DPareto (spec 001; Avent et al. 2020:
    random points, then the proposals of GPs on log ε and logit error through HVPoI or EHVI),
    or its baselines, uniform random sampling and a grid. Each evaluation trains one model at
    the asked hyperparameters and reports its ε (the training's privacy cost) and its error in
    [0, 1].

    **Not a private tuner**: the errors it is told, the points it proposes from them and the
    front it returns are computed from the evaluation data without any privacy cost (the ε of
    each point is that point's training alone)."""
    def __init__(self, plan: tuple, space, seed: int | None, rebuild: dict) -> None: ...
    @property
    def evaluations(self) -> list[dict[str, Any]]:
        """Every evaluation so far, in order: ``params``, ``epsilon``, ``error`` (the mean),
        ``errors``, ``proposed`` and ``acquisition``."""
    def front(self) -> list[dict[str, Any]]:
        """The evaluations no other evaluation beats in both ε and error, by increasing ε."""
    def ask(self) -> FrontTrial | None:
        """The next point to evaluate, or None when the search is over."""
    def tell(self, trial: FrontTrial, epsilon: float, error: float | None = None, *, errors: Sequence[float] | None = None) -> None:
        """What training at ``trial`` gave: its ε (> 0, finite) and its error in [0, 1] (or
        several replicates' errors)."""
    def __iter__(self) -> Iterator[FrontTrial]: ...
    def save(self) -> str:
        """The search's state as JSON text (evaluations, the GPs' last fits, the stream)."""
    @classmethod
    def resume(cls, state: str) -> FrontSearch:
        """The search saved in ``state``, continued with the draws of an uninterrupted run."""

def dpareto(*, space, initial: int = 16, iterations: int = 256, candidates: int = 5000, acquisition: str = 'hvpoi', seed: int | None = None) -> FrontSearch:
    """DPareto (spec 001 §4's defaults): a :class:`FrontSearch`, **not a private tuner**."""
def front_random_sampling(*, space, count: int, seed: int | None = None) -> FrontSearch:
    """DPareto's baseline: ``count`` uniform (log-uniform on log axes) points; not private."""
def front_grid_search(*, space, points: int) -> FrontSearch:
    """DPareto's other baseline: ``points`` values per axis, every combination; not private."""
