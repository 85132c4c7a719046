"""dptune.accounting against dp_accounting 0.6.0 on the same events."""

import math

import pytest

import dptune
from dptune import accounting as acc

dpa = pytest.importorskip("dp_accounting")
from dp_accounting import dp_event as E  # noqa: E402
from dp_accounting.pld import pld_privacy_accountant  # noqa: E402
from dp_accounting.rdp import rdp_privacy_accountant  # noqa: E402

REL_RDP = 1e-6
REL_PLD = 1e-3
ADD_REMOVE = dpa.NeighboringRelation.ADD_OR_REMOVE_ONE
REPLACE_ONE = dpa.NeighboringRelation.REPLACE_ONE

# (dp_accounting event, count, relation): the same event goes to both libraries through
# dptune.accounting.from_dp_accounting.
RDP_CASES = [
    (E.GaussianDpEvent(1.0), 1, ADD_REMOVE),
    (E.GaussianDpEvent(3.7), 20, ADD_REMOVE),
    (E.LaplaceDpEvent(2.0), 5, ADD_REMOVE),
    (E.ZCDpEvent(0.1), 10, ADD_REMOVE),
    (E.ZCDpEvent(0.05, 0.01), 3, ADD_REMOVE),
    (E.PoissonSampledDpEvent(256 / 60000, E.GaussianDpEvent(1.1)), 14063, ADD_REMOVE),
    (E.PoissonSampledDpEvent(0.01, E.GaussianDpEvent(0.8)), 1000, ADD_REMOVE),
    (E.PoissonSampledDpEvent(0.1, E.ComposedDpEvent([E.GaussianDpEvent(2.0), E.GaussianDpEvent(3.0)])), 50, ADD_REMOVE),
    (E.SelfComposedDpEvent(E.PoissonSampledDpEvent(0.02, E.GaussianDpEvent(1.5)), 300), 2, ADD_REMOVE),
    (E.ComposedDpEvent([E.GaussianDpEvent(5.0), E.LaplaceDpEvent(10.0), E.ZCDpEvent(0.01)]), 4, ADD_REMOVE),
    (E.RepeatAndSelectDpEvent(E.ZCDpEvent(0.1), 10.0, 0.0), 1, ADD_REMOVE),
    (E.RepeatAndSelectDpEvent(E.ZCDpEvent(0.05), 8.0, 1.0), 1, ADD_REMOVE),
    (E.RepeatAndSelectDpEvent(E.GaussianDpEvent(3.0), 20.0, 0.5), 1, ADD_REMOVE),
    (E.RepeatAndSelectDpEvent(E.SelfComposedDpEvent(E.PoissonSampledDpEvent(0.01, E.GaussianDpEvent(1.0)), 500), 5.0, 0.0), 1, ADD_REMOVE),
    (E.RandomizedResponseDpEvent(0.5, 2), 10, REPLACE_ONE),
    (E.RandomizedResponseDpEvent(0.3, 5), 3, REPLACE_ONE),
    (E.SampledWithoutReplacementDpEvent(60000, 256, E.GaussianDpEvent(1.1)), 2340, REPLACE_ONE),
]

DELTAS = [1e-5, 1e-8]


def _ids(cases):
    return [f"{type(c[0]).__name__}-{i}" for i, c in enumerate(cases)]


def _rel(r):
    return acc.NeighboringRelation(r.name.lower())


@pytest.mark.parametrize("event,count,relation", RDP_CASES, ids=_ids(RDP_CASES))
def test_rdp_matches_dp_accounting(event, count, relation):
    theirs = rdp_privacy_accountant.RdpAccountant(neighboring_relation=relation)
    theirs.compose(event, count)
    ours = acc.RdpAccountant(neighboring_relation=_rel(relation))
    ours.compose(acc.from_dp_accounting(event), count)
    for delta in DELTAS:
        want = theirs.get_epsilon(delta)
        got = ours.get_epsilon(delta)
        assert got == pytest.approx(want, rel=REL_RDP), (delta, got, want)
    for epsilon in [0.5, 2.0, 8.0]:
        want = theirs.get_delta(epsilon)
        got = ours.get_delta(epsilon)
        assert got == pytest.approx(want, rel=REL_RDP, abs=1e-300), (epsilon, got, want)


def test_without_replacement_is_never_tighter_than_dp_accounting():
    # dptune bounds a lot drawn without replacement by Wang–Balle–Kasiviswanathan's Thm. 9 as
    # spec 001 §6.1 states it (its e^{(j-1)ε(j)} terms; autodp's numbers), while dp_accounting
    # also takes the theorem's forward-difference term at orders >= 3, which is smaller at
    # large sampling rates: the two agree at q = 256/60000 (above) and dptune is looser here.
    event = E.SampledWithoutReplacementDpEvent(1000, 100, E.GaussianDpEvent(2.0))
    theirs = rdp_privacy_accountant.RdpAccountant(neighboring_relation=REPLACE_ONE).compose(event, 100)
    ours = acc.RdpAccountant(neighboring_relation="replace_one").compose(acc.from_dp_accounting(event), 100)
    want, got = theirs.get_epsilon(1e-5), ours.get_epsilon(1e-5)
    assert want * (1 - REL_RDP) <= got <= want * 1.15, (got, want)


def test_rdp_curve_matches_dp_accounting_pointwise():
    event = E.PoissonSampledDpEvent(0.01, E.GaussianDpEvent(1.0))
    theirs = rdp_privacy_accountant.RdpAccountant().compose(event, 100)
    ours = acc.RdpAccountant().compose(acc.from_dp_accounting(event), 100)
    got = ours.rdp(acc.DEFAULT_RDP_ORDERS)
    for o, g, t in zip(acc.DEFAULT_RDP_ORDERS, got, theirs._rdp):
        assert g == pytest.approx(t, rel=REL_RDP), o


def test_continuous_orders_are_never_looser():
    event = acc.PoissonSampledDpEvent(256 / 60000, acc.GaussianDpEvent(1.1))
    grid = acc.RdpAccountant().compose(event, 14063).get_epsilon(1e-5)
    cont = acc.RdpAccountant(orders="continuous").compose(event, 14063).get_epsilon(1e-5)
    assert grid == pytest.approx(2.596656, abs=1e-6)   # docs/library.md
    assert cont <= grid


PLD_CASES = [
    (E.GaussianDpEvent(1.0), 1, ADD_REMOVE),
    (E.GaussianDpEvent(2.0), 30, ADD_REMOVE),
    (E.LaplaceDpEvent(3.0), 10, ADD_REMOVE),
    (E.PoissonSampledDpEvent(0.01, E.GaussianDpEvent(1.0)), 1000, ADD_REMOVE),
    (E.PoissonSampledDpEvent(256 / 60000, E.GaussianDpEvent(1.1)), 2000, ADD_REMOVE),
    (E.ComposedDpEvent([E.GaussianDpEvent(4.0), E.LaplaceDpEvent(8.0)]), 5, ADD_REMOVE),
]


@pytest.mark.parametrize("event,count,relation", PLD_CASES, ids=_ids(PLD_CASES))
def test_pld_matches_dp_accounting(event, count, relation):
    theirs = pld_privacy_accountant.PLDAccountant(neighboring_relation=relation, value_discretization_interval=1e-4)
    theirs.compose(event, count)
    ours = acc.PLDAccountant(neighboring_relation=_rel(relation), value_discretization_interval=1e-4)
    ours.compose(acc.from_dp_accounting(event), count)
    for delta in DELTAS:
        want = theirs.get_epsilon(delta)
        got = ours.get_epsilon(delta)
        assert got == pytest.approx(want, rel=REL_PLD, abs=1e-3), (delta, got, want)
    for epsilon in [0.5, 2.0]:
        want = theirs.get_delta(epsilon)
        got = ours.get_delta(epsilon)
        # dptune adds a bound on the FFTs' rounding to every δ (dp_accounting adds none): up
        # to about 1e-10 after thousands of compositions, so tiny δs are compared to 1e-9.
        assert got == pytest.approx(want, rel=REL_PLD, abs=1e-9), (epsilon, got, want)
        assert got >= want * (1 - REL_PLD)


def test_pld_of_an_epsilon_delta_event():
    # (dp_accounting 0.6.0 has no EpsilonDeltaDpEvent.) One (ε, δ)-DP run is (ε, δ)-DP, and
    # not (ε', δ)-DP for any smaller ε' in general: the PLD gives ε back (to the grid's interval).
    a = acc.PLDAccountant().compose(acc.EpsilonDeltaDpEvent(0.3, 1e-7))
    assert a.get_delta(0.3) == pytest.approx(1e-7, rel=1e-3)
    assert a.get_epsilon(2e-7) == pytest.approx(0.3, abs=2e-4)
    assert math.isinf(a.get_epsilon(0.5e-7))  # δ below the mass at an infinite loss
    # k pure ε-DP runs: at most kε (basic composition), and less at δ > 0
    k = acc.PLDAccountant().compose(acc.EpsilonDeltaDpEvent(0.1), 50)
    assert k.get_epsilon(1e-6) < 5.0 and k.get_delta(5.0) <= 1e-9  # δ = 0 but for the rounding bound


def test_pld_is_tighter_than_rdp_for_dpsgd():
    step = acc.PoissonSampledDpEvent(0.01, acc.GaussianDpEvent(1.0))
    pld = acc.PLDAccountant().compose(step, 1000).get_epsilon(1e-5)
    rdp = acc.RdpAccountant().compose(step, 1000).get_epsilon(1e-5)
    assert pld < rdp


def test_opacus_helpers_round_trip():
    sigma = acc.get_noise_multiplier(target_epsilon=2.0, target_delta=1e-5, sample_rate=0.01, steps=1000)
    eps = acc.get_epsilon(noise_multiplier=sigma, sample_rate=0.01, steps=1000, delta=1e-5)
    assert eps <= 2.0 and eps == pytest.approx(2.0, rel=1e-4)
    # and it is dp_accounting's epsilon for that sigma
    theirs = rdp_privacy_accountant.RdpAccountant().compose(
        E.PoissonSampledDpEvent(0.01, E.GaussianDpEvent(sigma)), 1000).get_epsilon(1e-5)
    assert eps == pytest.approx(theirs, rel=REL_RDP)
    # epochs: int(epochs / q) steps, as Opacus counts them
    assert acc.get_epsilon(noise_multiplier=1.0, sample_rate=0.01, epochs=10, delta=1e-5) == \
        acc.get_epsilon(noise_multiplier=1.0, sample_rate=0.01, steps=1000, delta=1e-5)
    # PLD (fewer steps: each of the search's ~40 evaluations composes a PLD)
    sigma_rdp = acc.get_noise_multiplier(target_epsilon=1.0, target_delta=1e-5, sample_rate=0.05, steps=100)
    sigma_pld = acc.get_noise_multiplier(target_epsilon=1.0, target_delta=1e-5, sample_rate=0.05, steps=100,
                                         accountant="pld")
    assert sigma_pld < sigma_rdp
    eps_pld = acc.get_epsilon(noise_multiplier=sigma_pld, sample_rate=0.05, steps=100, delta=1e-5, accountant="pld")
    assert eps_pld <= 1.0 and eps_pld == pytest.approx(1.0, rel=1e-3)
    theirs = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4).compose(
        E.PoissonSampledDpEvent(0.05, E.GaussianDpEvent(sigma_pld)), 100).get_epsilon(1e-5)
    assert eps_pld == pytest.approx(theirs, rel=REL_PLD)


def test_calibrate_dp_mechanism_meets_the_target():
    sigma = acc.calibrate_dp_mechanism(acc.PLDAccountant, lambda s: acc.SelfComposedDpEvent(acc.GaussianDpEvent(s), 10),
                                       target_epsilon=1.0, target_delta=1e-6)
    assert acc.PLDAccountant().compose(acc.GaussianDpEvent(sigma), 10).get_epsilon(1e-6) <= 1.0
    assert acc.PLDAccountant().compose(acc.GaussianDpEvent(sigma * 0.99), 10).get_epsilon(1e-6) > 1.0
    k = acc.calibrate_dp_mechanism(acc.RdpAccountant, lambda s: acc.LaplaceDpEvent(s), 0.5, 1e-6, discrete=True)
    assert isinstance(k, int) and acc.RdpAccountant().compose(acc.LaplaceDpEvent(k)).get_epsilon(1e-6) <= 0.5


def test_statement_in_words():
    a = acc.RdpAccountant().compose(acc.PoissonSampledDpEvent(0.01, acc.GaussianDpEvent(1.0)), 1000)
    s = a.statement(1e-5)
    eps = a.get_epsilon(1e-5)
    assert f"ε = {eps:.6g}" in s and "δ = 1e-05" in s and "adding or removing one record" in s
    assert "1000 × (a Gaussian mechanism with noise multiplier 1 on a Poisson sample at rate 0.01)" in s


def test_empty_and_non_private():
    assert acc.RdpAccountant().get_epsilon(1e-5) == 0.0
    assert acc.PLDAccountant().get_epsilon(1e-5) == 0.0
    a = acc.RdpAccountant().compose(acc.GaussianDpEvent(1.0)).compose(acc.NonPrivateDpEvent())
    assert math.isinf(a.get_epsilon(1e-5))
    assert a.get_delta(1.0) == 1.0


BAD = [
    (lambda: acc.GaussianDpEvent(-1.0), "noise_multiplier"),
    (lambda: acc.GaussianDpEvent(float("nan")), "noise_multiplier"),
    (lambda: acc.GaussianDpEvent("1"), "noise_multiplier"),
    (lambda: acc.LaplaceDpEvent(0), "noise_multiplier"),
    (lambda: acc.PoissonSampledDpEvent(1.5, acc.GaussianDpEvent(1)), "sampling_probability"),
    (lambda: acc.PoissonSampledDpEvent(0.1, acc.LaplaceDpEvent(1)), "event"),
    (lambda: acc.SampledWithoutReplacementDpEvent(10, 20, acc.GaussianDpEvent(1)), "sample_size"),
    (lambda: acc.RandomizedResponseDpEvent(1.5, 2), "noise_parameter"),
    (lambda: acc.RandomizedResponseDpEvent(0.5, 0), "num_buckets"),
    (lambda: acc.SelfComposedDpEvent(acc.GaussianDpEvent(1), -2), "count"),
    (lambda: acc.RepeatAndSelectDpEvent(acc.ZCDpEvent(0.1), -1, 0), "mean"),
    (lambda: acc.RepeatAndSelectDpEvent(acc.ZCDpEvent(0.1), 5, -2), "shape"),
    (lambda: acc.ZCDpEvent(-0.1), "rho"),
    (lambda: acc.EpsilonDeltaDpEvent(1.0, 1.0), "delta"),
    (lambda: acc.RdpAccountant().get_epsilon(0), "target_delta"),
    (lambda: acc.RdpAccountant().get_epsilon(1.5), "target_delta"),
    (lambda: acc.RdpAccountant().get_delta(-1), "target_epsilon"),
    (lambda: acc.RdpAccountant(orders=[0.5, 2]), "orders"),
    (lambda: acc.RdpAccountant(orders="fractional"), "orders"),
    (lambda: acc.PLDAccountant(value_discretization_interval=0), "value_discretization_interval"),
    (lambda: acc.RdpAccountant().compose(acc.GaussianDpEvent(1), 1.5), "count"),
    (lambda: acc.RdpAccountant().compose("gaussian"), "event"),
    (lambda: acc.RdpAccountant().compose(acc.RandomizedResponseDpEvent(0.5, 2)), "neighboring_relation"),
    (lambda: acc.RdpAccountant(neighboring_relation="replace_one").compose(
        acc.PoissonSampledDpEvent(0.1, acc.GaussianDpEvent(1))), "neighboring_relation"),
    (lambda: acc.RdpAccountant(neighboring_relation="swap"), "neighboring_relation"),
    (lambda: acc.RdpAccountant().compose(acc.EpsilonDeltaDpEvent(1.0, 1e-6)), "PLDAccountant"),
    (lambda: acc.PLDAccountant().compose(acc.ZCDpEvent(0.1)), "RdpAccountant"),
    (lambda: acc.PLDAccountant().compose(acc.RepeatAndSelectDpEvent(acc.ZCDpEvent(0.1), 5, 0)), "RdpAccountant"),
    (lambda: acc.get_noise_multiplier(target_epsilon=-1, target_delta=1e-5, sample_rate=0.01, steps=10), "target_epsilon"),
    (lambda: acc.get_noise_multiplier(target_epsilon=1, target_delta=1e-5, sample_rate=0.01), "steps"),
    (lambda: acc.get_noise_multiplier(target_epsilon=1, target_delta=1e-5, sample_rate=0.01, steps=10, epochs=1), "steps"),
    (lambda: acc.get_epsilon(noise_multiplier=1, sample_rate=0, steps=10, delta=1e-5), "sample_rate"),
    (lambda: acc.get_epsilon(noise_multiplier=1, sample_rate=0.1, steps=0, delta=1e-5), "steps"),
    (lambda: acc.get_epsilon(noise_multiplier=1, sample_rate=0.1, steps=10, delta=1e-5, accountant="prv"), "accountant"),
    (lambda: acc.get_epsilon(noise_multiplier=1, sample_rate=0.1, steps=10, delta=1e-5, sampling="shuffle"), "sampling"),
]


@pytest.mark.parametrize("make,name", BAD, ids=[b[1] + str(i) for i, b in enumerate(BAD)])
def test_bad_inputs_raise_value_error_naming_the_parameter(make, name):
    with pytest.raises(ValueError) as e:
        make()
    assert name in str(e.value)


def test_rust_side_errors_are_value_errors_not_panics():
    # A target no noise multiplier meets without replacement (the bound levels off).
    with pytest.raises(ValueError, match="epsilon"):
        acc.get_noise_multiplier(target_epsilon=1e-4, target_delta=1e-5, sample_rate=0.5, steps=10**6,
                                 sampling="without_replacement")
    with pytest.raises(ValueError):
        dptune._dptune.rdp_epsilon([(("gaussian", -1.0), 1)], None, 1e-5)
    with pytest.raises(ValueError, match="unknown event"):
        dptune._dptune.rdp_epsilon([(("nonsense",), 1)], None, 1e-5)
    with pytest.raises(ValueError, match="handle"):
        dptune._dptune.pld_epsilon(object(), 1e-5)
