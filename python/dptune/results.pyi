from typing import Any

__all__ = ['experiments', 'tables', 'read', 'read_all']

def experiments(root: PathLike = 'results') -> list[str]:
    """The experiments under ``root`` (its sub-folders holding at least one table), sorted."""
def tables(folder: PathLike) -> list[str]:
    """The tables in a results folder (its ``*.parquet`` files, without the extension), sorted."""
def read(folder: PathLike, table: str, backend: str | None = None) -> Any:
    """Table ``table`` of ``folder`` as a frame: ``backend`` = 'pandas', 'polars' or 'dict'
    (column name → list); None: pandas if installed, else polars, else dict."""
def read_all(folder: PathLike, backend: str | None = None) -> dict[str, Any]:
    """Every table of ``folder``, by name."""
