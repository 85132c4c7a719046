"""Helpers shared by the fixture generators in tools/ (developer-only; CI never runs them)."""

import json
import logging
import math
import os


# Counting dp-accounting's absl warnings (absl logs through the "absl" logger).
class _WarningCounter(logging.Handler):
    def __init__(self):
        super().__init__(level=logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


_COUNTER = _WarningCounter()
_absl_logger = logging.getLogger("absl")
_absl_logger.addHandler(_COUNTER)
_absl_logger.propagate = False  # keep stderr readable; we summarise instead


def _nonconvergence_count():
    return sum("failed to converge" in m for m in _COUNTER.messages)


def log_uniform(rng, lo, hi):
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def log_uniform_int(rng, lo, hi):
    """Integer in [lo, hi], log-uniform."""
    v = int(math.floor(math.exp(rng.uniform(math.log(lo), math.log(hi + 1)))))
    return min(max(v, lo), hi)


def num(x):
    """Python float for JSON; +inf -> None; NaN is an error."""
    x = float(x)
    if math.isnan(x):
        raise ValueError("NaN in fixture")
    if math.isinf(x):
        if x < 0:
            raise ValueError("-inf in fixture")
        return None
    return x


def num_list(xs):
    return [num(x) for x in xs]


def dump(doc, path):
    """One case per line; allow_nan=False guarantees no NaN/Infinity tokens."""
    head = [
        '  "generator": ' + json.dumps(doc["generator"]),
        '  "dp_accounting_version": ' + json.dumps(doc["dp_accounting_version"]),
        '  "default_orders": ' + json.dumps(doc["default_orders"], allow_nan=False),
    ]
    case_lines = ",\n".join("    " + json.dumps(c, allow_nan=False) for c in doc["cases"])
    text = "{\n" + ",\n".join(head) + ',\n  "cases": [\n' + case_lines + "\n  ]\n}\n"
    json.loads(text)  # must parse
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


def dump_sorted(doc, path):
    """Header first (the non-"cases" top-level keys, sorted, one per line), then "cases", one
    case per line with sorted keys; no NaN/Infinity tokens."""
    head = [f"  {json.dumps(k)}: {json.dumps(doc[k], sort_keys=True, allow_nan=False)}"
            for k in sorted(doc) if k != "cases"]
    case_lines = ",\n".join("    " + json.dumps(c, sort_keys=True, allow_nan=False)
                            for c in doc["cases"])
    text = "{\n" + ",\n".join(head) + ',\n  "cases": [\n' + case_lines + "\n  ]\n}\n"
    json.loads(text)  # must parse
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


def finite_num(v):
    """A finite float for JSON (num() maps +inf to null; these fixtures allow no infinities)."""
    out = num(v)
    if out is None:
        raise ValueError("infinity in fixture")
    return out


def require_sklearn(expected):
    """Exits unless the installed scikit-learn is exactly `expected`."""
    import sys
    import sklearn
    if sklearn.__version__ != expected:
        sys.exit(f"need scikit-learn=={expected}, found {sklearn.__version__}")


def require_dp_accounting(expected):
    """Exits unless the installed dp-accounting is exactly `expected`."""
    import sys
    try:
        from importlib.metadata import version
        v = version("dp-accounting")
    except Exception:  # pragma: no cover
        v = "unknown"
    if v != expected:
        sys.exit(f"need dp-accounting=={expected}, found {v}")


def read_fixture_text(path):
    """The fixture's text, checked to hold no NaN/Infinity token (JSON has none)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for tok in ("NaN", "Infinity"):
        assert tok not in text, f"{tok} token in fixture"
    return text


def print_warning_summary():
    print(f"  absl warnings total: {len(_COUNTER.messages)} "
          f"(non-convergence: {_nonconvergence_count()})")
    other = sorted({m.split(',')[0] for m in _COUNTER.messages if 'failed to converge' not in m})
    if other:
        print(f"  other absl warnings: {other}")
