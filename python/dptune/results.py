"""A results folder's tables (``results/<experiment>/<table>.parquet``) as data frames.

The parquet files are read by dptune's own reader (Rust), so no parquet library is needed;
pandas or polars (whichever is asked for, or installed) only builds the frame::

    from dptune import results
    results.tables("results/dpsgd-equal-budget")            # ['runs']
    df = results.read("results/dpsgd-equal-budget", "runs")  # pandas if installed, else polars

Columns keep their types: text, unsigned integers, booleans, and floats where a missing
value (not applicable, or not finite) is None in a dict, NaN in pandas and null in polars.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Union

from . import _dptune

__all__ = ["experiments", "tables", "read", "read_all"]

PathLike = Union[str, "os.PathLike[str]"]


def _folder(folder: PathLike) -> str:
    path = os.fspath(folder)
    if not os.path.isdir(path):
        raise ValueError(f"invalid folder = {path!r}: not a directory")
    return path


def experiments(root: PathLike = "results") -> List[str]:
    """The experiments under ``root`` (its sub-folders holding at least one table), sorted."""
    root = _folder(root)
    return sorted(d for d in os.listdir(root)
                  if os.path.isdir(os.path.join(root, d)) and tables(os.path.join(root, d)))


def tables(folder: PathLike) -> List[str]:
    """The tables in a results folder (its ``*.parquet`` files, without the extension), sorted."""
    folder = _folder(folder)
    return sorted(f[: -len(".parquet")] for f in os.listdir(folder) if f.endswith(".parquet"))


def _columns(folder: PathLike, table: str):
    folder = _folder(folder)
    if not isinstance(table, str) or not table:
        raise ValueError(f"invalid table = {table!r}: must be one of {tables(folder)}")
    name = table[: -len(".parquet")] if table.endswith(".parquet") else table
    path = os.path.join(folder, name + ".parquet")
    if not os.path.isfile(path):
        raise ValueError(f"invalid table = {table!r}: must be one of {tables(folder)}")
    return _dptune.read_table(path)


def read(folder: PathLike, table: str, backend: Optional[str] = None) -> Any:
    """Table ``table`` of ``folder`` as a frame: ``backend`` = 'pandas', 'polars' or 'dict'
    (column name → list); None: pandas if installed, else polars, else dict."""
    cols = _columns(folder, table)
    if backend is None:
        for candidate in ("pandas", "polars"):
            try:
                __import__(candidate)
                backend = candidate
                break
            except ImportError:
                pass
        else:
            backend = "dict"
    if backend == "dict":
        return {name: values for name, _kind, values in cols}
    if backend == "pandas":
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("backend='pandas' needs pandas: pip install pandas") from None
        data = {}
        for name, kind, values in cols:
            if kind == "f64":
                data[name] = pd.array([float("nan") if v is None else v for v in values], dtype="float64")
            elif kind == "u64":
                data[name] = pd.array(values, dtype="uint64")
            elif kind == "bool":
                data[name] = pd.array(values, dtype="bool")
            else:
                data[name] = pd.array(values, dtype="object")
        return pd.DataFrame(data)
    if backend == "polars":
        try:
            import polars as pl
        except ImportError:
            raise ImportError("backend='polars' needs polars: pip install polars") from None
        dtypes = {"f64": pl.Float64, "u64": pl.UInt64, "bool": pl.Boolean, "str": pl.Utf8}
        return pl.DataFrame([pl.Series(name, values, dtype=dtypes[kind]) for name, kind, values in cols])
    raise ValueError(f"invalid backend = {backend!r}: must be 'pandas', 'polars', 'dict' or None")


def read_all(folder: PathLike, backend: Optional[str] = None) -> Dict[str, Any]:
    """Every table of ``folder``, by name."""
    return {t: read(folder, t, backend) for t in tables(folder)}
