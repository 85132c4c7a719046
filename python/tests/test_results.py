"""dptune.results: the committed results' parquet tables as frames."""

import os

import pytest

from dptune import results

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "results")
EXP = os.path.join(ROOT, "dpsgd-equal-budget")


def test_tables_and_dict_backend():
    assert "dpsgd-equal-budget" in results.experiments(ROOT)
    # The merged table, the four the report derives from it (per cell, the front's reference
    # rows, outcomes, steps), and the evaluated claims.
    assert results.tables(EXP) == ["cells", "claims", "front", "outcomes", "runs", "steps"]
    claims = results.read(EXP, "claims", backend="dict")
    assert all(claims["holds"]) and len(claims["id"]) > 0
    cols = results.read(EXP, "runs", backend="dict")
    lengths = {len(v) for v in cols.values()}
    assert len(lengths) == 1 and lengths.pop() > 0
    assert all(isinstance(x, str) for x in cols["tuner"])


def test_pandas_and_polars_agree():
    pd = pytest.importorskip("pandas")
    pl = pytest.importorskip("polars")
    a = results.read(EXP, "runs", backend="pandas")
    b = results.read(EXP, "runs", backend="polars")
    assert isinstance(a, pd.DataFrame) and isinstance(b, pl.DataFrame)
    assert list(a.columns) == b.columns and len(a) == b.height
    # and polars' own parquet reader reads the same values
    c = pl.read_parquet(os.path.join(EXP, "runs.parquet"))
    assert c.columns == b.columns
    assert b.equals(c.select([pl.col(n).cast(b.schema[n]) for n in b.columns]))


def test_bad_inputs():
    with pytest.raises(ValueError, match="folder"):
        results.tables("/no/such/folder")
    with pytest.raises(ValueError, match="table"):
        results.read(EXP, "nope")
    with pytest.raises(ValueError, match="backend"):
        results.read(EXP, "runs", backend="arrow")
