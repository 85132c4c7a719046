"""A saved tuner state is believed only as its history re-derives it (issue 61): every edit of
what a resume would continue from (K, the best run, a told score, the counters, the stream
position, the history itself) is refused with a message naming it, and a state that does not
match its checksum, or that an older dptune saved without a history, is refused too."""

import hashlib
import json
import math
import sys
from pathlib import Path

import pytest

HERE = str(Path(__file__).resolve().parent)
sys.path.insert(0, HERE)

import _resume_helpers as helpers  # noqa: E402
from dptune import tuners  # noqa: E402


def _saved(name="papernot_steinke", reports=3, seed=20261128):
    t = helpers.make(name, seed)
    for _ in range(reports):
        trial = t.ask()
        trial.report(helpers.answer(trial))
    return t.save()


def _forged(state: str, edit) -> str:
    """`state` after `edit(d)` on its dict, its checksum recomputed as a forger would (the
    documented canonical form): what is left to refuse it is the replay of its history."""
    d = json.loads(state)
    edit(d)
    body = {k: v for k, v in d.items() if k != "checksum"}
    d["checksum"] = "sha256:" + hashlib.sha256(
        json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    return json.dumps(d)


def _edit_session(edit):
    def on(d):
        s = json.loads(d["session"])
        edit(s)
        d["session"] = json.dumps(s)
    return on


def _edit_history(edit):
    def on(d):
        h = json.loads(d["history"])
        edit(h["steps"])
        d["history"] = json.dumps(h)
    return on


def _refused(state: str, match: str):
    with pytest.raises(ValueError, match=match):
        tuners.Tuner.resume(state)
    # `load` (the other way in) checks the same.
    with pytest.raises(ValueError, match=match):
        helpers.make("papernot_steinke", None).load(state)


def _ulp(x: float) -> float:
    return math.nextafter(x, math.inf)


def _told_steps(steps):
    return [s["told"] for s in steps if isinstance(s, dict) and "told" in s]


def test_an_untouched_state_resumes_and_a_resumed_one_saves_what_it_was():
    state = _saved()
    t = tuners.Tuner.resume(state)
    assert json.loads(t.save()) == json.loads(state)
    release = helpers.finish(t)["release"]
    assert release == helpers.finish(helpers.make("papernot_steinke", 20261128))["release"]


def test_an_edited_k_is_refused_naming_it():
    state = _saved()
    k = json.loads(json.loads(state)["session"])["best-of"]["k"]
    forged = _forged(state, _edit_session(lambda s: s["best-of"].__setitem__("k", 40)))
    _refused(forged, rf"best-of\.k: saved 40, where the history gives {k}\b")


def test_an_edited_best_score_is_refused():
    state = _saved()
    forged = _forged(state, _edit_session(lambda s: s["best-of"]["best"].__setitem__(2, 0.999)))
    _refused(forged, r"best-of\.best\[2\]: saved 0\.999, where the history gives ")
    # One ulp is a difference too.
    one_ulp = _forged(state, _edit_session(lambda s: s["best-of"]["best"].__setitem__(2, _ulp(s["best-of"]["best"][2]))))
    _refused(one_ulp, r"best-of\.best\[2\]: saved ")


def test_a_told_score_changed_by_one_ulp_is_refused():
    state = _saved()
    best_index, _, best = json.loads(json.loads(state)["session"])["best-of"]["best"]

    def bump(steps):
        (told,) = [t for t in _told_steps(steps) if t["index"] == best_index]
        assert told["told"]["score"] == best
        told["told"]["score"] = _ulp(best)
    forged = _forged(state, _edit_history(bump))
    _refused(forged, rf"best-of\.best\[2\]: saved {best!r}, where the history gives {_ulp(best)!r}")


def test_a_removed_told_result_is_refused():
    state = _saved()

    def remove_last_tell(steps):
        last = max(i for i, s in enumerate(steps) if isinstance(s, dict) and "told" in s)
        del steps[last]
    _refused(_forged(state, _edit_history(remove_last_tell)), "not what its recorded history gives")


def test_a_duplicated_told_result_is_refused():
    state = _saved()

    def duplicate_first_tell(steps):
        first = next(i for i, s in enumerate(steps) if isinstance(s, dict) and "told" in s)
        steps.insert(first + 1, steps[first])
    _refused(_forged(state, _edit_history(duplicate_first_tell)),
             r"step \d+ of the history: telling run 0 failed: told run 0, but the runs waiting")


def test_reset_counters_are_refused():
    state = _saved()
    forged = _forged(state, _edit_session(lambda s: s["best-of"]["progress"].update(asked=0, told=0)))
    _refused(forged, r"best-of\.progress\.asked: saved 0, where the history gives 3")


def test_an_edited_stream_position_is_refused():
    state = _saved("random_search")
    position = json.loads(state)["stream"]["position"]
    forged = _forged(state, lambda d: d["stream"].__setitem__("position", position - 4))
    with pytest.raises(ValueError, match=rf"saved stream position {position - 4} is not what its recorded "
                                         rf"history gives \({position}\)"):
        tuners.Tuner.resume(forged)


@pytest.mark.parametrize("name", ["papernot_steinke", "random_search", "liu_talwar_threshold", "propose_test",
                                  "dp_gibo", "gp_ucb"])
def test_every_tuners_edited_counter_is_refused(name):
    def progress(x):
        if isinstance(x, dict):
            if "asked" in x and "told" in x:
                return x
            for v in x.values():
                if (p := progress(v)) is not None:
                    return p
        return None

    # Reported until the session has been told an evaluation (propose-test's first is every
    # candidate on every shard).
    t = helpers.make(name, 20261128)
    while progress(json.loads(t.state_json()))["told"] == 0:
        trial = t.ask()
        trial.report(helpers.answer(trial))
    state = t.save()

    def reset(s):
        progress(s)["told"] -= 1
    forged = _forged(state, _edit_session(reset))
    with pytest.raises(ValueError, match=r"progress\.told: saved \d+, where the history gives \d+"):
        tuners.Tuner.resume(forged)


def test_a_state_not_matching_its_checksum_is_refused():
    state = _saved()
    d = json.loads(state)
    d["trials"][0]["value"] = _ulp(d["trials"][0]["value"])  # edited, the checksum left as it was
    _refused(json.dumps(d), "damaged or edited: checksum mismatch")
    d = json.loads(state)
    d["checksum"] = d["checksum"][:-1] + ("0" if d["checksum"][-1] != "0" else "1")
    _refused(json.dumps(d), "damaged or edited: checksum mismatch")
    del d["checksum"]
    _refused(json.dumps(d), "damaged or edited: checksum mismatch")


def test_a_state_an_older_dptune_saved_is_refused_as_unchecked():
    d = json.loads(_saved())
    for field in ("history", "checksum"):
        del d[field]
    d["version"] = 1
    _refused(json.dumps(d), "saved by an older dptune .* cannot be checked")


def test_a_pending_trial_saved_with_other_params_is_refused():
    # Saved with one trial asked and not reported: after the resume the user is asked to run
    # the session's own candidate, never one the file names instead.
    t = helpers.make("papernot_steinke", 20261128)
    t.ask().report(0.5)
    held = t.ask()
    state = t.save()
    again = tuners.Tuner.resume(state).ask()
    assert (again.number, again.hyper) == (held.number, held.hyper)

    def move(d):
        d["trials"][held.number]["hyper"] = [0.5, 0.5]
        (e,) = d["evaluations"]
        e["hyper"] = [0.5, 0.5]
    _refused(_forged(state, move), "evaluation 1 is saved as asking for other runs than the session's history gives")
    _refused(_forged(state, lambda d: d["trials"][held.number].__setitem__("hyper", [0.5, 0.5])),
             "trial 1 is saved with other params than the session's history gives")
    _refused(_forged(state, lambda d: d.__setitem__("evaluations", [])),
             r"evaluations \[\] saved as pending, where the session's history gives \[1\]")
